//! Loading labeled drafts and critics, and critiquing every draft: critic × task × draft × repeat,
//! in parallel, with the rows in a fixed order whatever the thread count.

use std::path::PathBuf;
use std::time::Instant;

use critbench_core::Task;
use critbench_plugin_host::services::CallScope;
use critbench_plugin_host::{CriticInstance, critique_with_retry, open_critics};
use critbench_storage::critique_columns::CritiqueColumns;
use critbench_storage::dataset::{OnBadRow, read_datasets};
use critbench_storage::judgments::JudgmentRow;
use rayon::prelude::*;
use serde::Serialize;

use crate::labels::{GoldLabel, Labeled, gold_labels};
use crate::{JudgeError, JudgeSpec};
use critbench_plugin_host::request::{TaskJson, critique_request};

/// A task with drafts and one gold label per draft.
pub(crate) struct LabeledTask {
    pub task: Task,
    pub labels: Vec<GoldLabel>,
    json: TaskJson,
}

/// A task left out because its labels were bad and `on_bad_row = "skip"`.
#[derive(Clone, Debug, Serialize)]
pub struct SkippedTask {
    /// The task's id.
    pub task: String,
    /// Why its labels were refused.
    pub reason: String,
}

/// What one dataset file held, for the record in `judge.json`.
#[derive(Clone, Debug, Serialize)]
pub struct DatasetSummary {
    /// The dataset file.
    pub path: PathBuf,
    /// SHA-256 of its bytes.
    pub sha256: String,
    /// Tasks it held.
    pub tasks: usize,
    /// Tasks with drafts and labels: what was judged.
    pub labeled_tasks: usize,
    /// Drafts of those tasks, each with its label.
    pub labeled_drafts: usize,
    /// Tasks without drafts (their `labels`, if any, are not critic labels and are ignored).
    pub tasks_without_drafts: usize,
    /// Tasks with drafts but no labels: nothing to judge a verdict against.
    pub tasks_without_labels: usize,
    /// Rows the reader skipped (`on_bad_row = "skip"`).
    pub rows_skipped: usize,
    /// Tasks whose labels were bad, skipped under `on_bad_row = "skip"`.
    pub tasks_skipped: Vec<SkippedTask>,
}

/// Reads every dataset and keeps the tasks with labeled drafts.
pub(crate) fn load_labeled(spec: &JudgeSpec) -> Result<(Vec<LabeledTask>, Vec<DatasetSummary>), JudgeError> {
    let mut labeled = Vec::new();
    let mut summaries = Vec::new();
    for dataset in read_datasets(&spec.datasets, spec.on_bad_row)? {
        let path = &dataset.path;
        let mut summary = DatasetSummary {
            path: path.clone(),
            sha256: dataset.sha256.clone(),
            tasks: dataset.tasks.len(),
            labeled_tasks: 0,
            labeled_drafts: 0,
            tasks_without_drafts: 0,
            tasks_without_labels: 0,
            rows_skipped: dataset.skipped.len(),
            tasks_skipped: Vec::new(),
        };
        for task in dataset.tasks {
            match gold_labels(&task) {
                Ok(Labeled::NoDrafts) => summary.tasks_without_drafts += 1,
                Ok(Labeled::Unlabeled) => summary.tasks_without_labels += 1,
                Ok(Labeled::Labels(labels)) => {
                    summary.labeled_tasks += 1;
                    summary.labeled_drafts += labels.len();
                    labeled.push(LabeledTask { json: TaskJson::new(&task), task, labels });
                }
                Err(error) if spec.on_bad_row == OnBadRow::Skip => {
                    summary.tasks_skipped.push(SkippedTask { task: task.id.clone(), reason: error.to_string() });
                }
                Err(source) => return Err(JudgeError::Labels { path: path.clone(), task: task.id, source }),
            }
        }
        summaries.push(summary);
    }
    if labeled.is_empty() {
        return Err(JudgeError::NoLabeledDrafts { files: spec.datasets.clone() });
    }
    Ok((labeled, summaries))
}

/// Opens every critic of the spec as a run opens it: a plugin in this process or in child
/// processes (`isolation = "process"`), a command critic as its program.
pub(crate) fn load_critics(spec: &JudgeSpec) -> Result<Vec<CriticInstance>, JudgeError> {
    let base_dir = spec.experiment_path.as_ref().and_then(|p| p.parent());
    Ok(open_critics(&spec.critics, &spec.plugin_dirs, base_dir, spec.jobs, &spec.host)?)
}

/// One critique to make: indices into the critics and labeled tasks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Unit {
    pub critic: usize,
    pub task: usize,
    pub draft: usize,
    pub repeat: u32,
}

/// Every critique, critics in experiment order, then tasks in dataset order, drafts, repeats.
pub(crate) fn units(spec: &JudgeSpec, tasks: &[LabeledTask]) -> Vec<Unit> {
    let mut units = Vec::new();
    for (critic, setup) in spec.critics.iter().enumerate() {
        for (task, labeled) in tasks.iter().enumerate() {
            if !setup.takes(labeled.task.kind.as_deref()) {
                continue;
            }
            for draft in 0..labeled.task.drafts.len() {
                for repeat in 0..spec.repeats {
                    units.push(Unit { critic, task, draft, repeat });
                }
            }
        }
    }
    units
}

/// What the metrics read of a judgment: the row without its issue texts, suggestions, rationale
/// and meta (its fatal issues cut to the first: the metrics only ask whether there is one).
pub(crate) fn for_metrics(row: &JudgmentRow) -> JudgmentRow {
    JudgmentRow {
        run_id: String::new(),
        critic: row.critic.clone(),
        task_id: row.task_id.clone(),
        kind: row.kind.clone(),
        draft_index: row.draft_index,
        repeat: row.repeat,
        critique: CritiqueColumns {
            score: row.critique.score,
            dims: row.critique.dims.clone(),
            fatal_issues: row.critique.fatal_issues.iter().take(1).cloned().collect(),
            critic_passed: row.critique.critic_passed,
            ..CritiqueColumns::default()
        },
        passed: row.passed,
        pass_score: row.pass_score,
        dim_target: row.dim_target,
        gold_pass: row.gold_pass,
        gold_score: row.gold_score,
        gold_fatal: row.gold_fatal,
        flaw: row.flaw.clone(),
        draft_chars: row.draft_chars,
        critic_ms: row.critic_ms,
        critic_attempts: row.critic_attempts,
        critic_error: row.critic_error.clone(),
        meta: None,
        critic_truncated: row.critic_truncated,
    }
}

/// Critiques every unit on `jobs` threads. The result is in the order of `units`.
pub(crate) fn critique_all(
    spec: &JudgeSpec,
    run_id: &str,
    tasks: &[LabeledTask],
    critics: &[CriticInstance],
    units: &[Unit],
    pool: &rayon::ThreadPool,
) -> Vec<JudgmentRow> {
    pool.install(|| units.par_iter().map(|unit| critique_one(spec, run_id, tasks, critics, *unit)).collect())
}

fn critique_one(
    spec: &JudgeSpec,
    run_id: &str,
    tasks: &[LabeledTask],
    critics: &[CriticInstance],
    unit: Unit,
) -> JudgmentRow {
    let labeled = &tasks[unit.task];
    let setup = &spec.critics[unit.critic];
    let draft = &labeled.task.drafts[unit.draft];
    let gold = &labeled.labels[unit.draft];
    // Round k is draft k, as in a scripted loop, so a scripted critic's `critiques[k]` is its
    // critique of `drafts[k]`.
    let request = critique_request(&labeled.json, draft, unit.draft as u32);
    let started = Instant::now();
    // Host services (the judge model's cache) key their answers by this critique's identity:
    // each repeat is an epoch of its own, so a model judge resamples it.
    let mut scope = CallScope::new(&labeled.task.id, unit.repeat, unit.draft as u32);
    let call = critique_with_retry(&critics[unit.critic], &request, setup.weights.as_ref(), spec.attempts, &mut scope);
    let critic_ms = started.elapsed().as_secs_f64() * 1000.0;
    // The host decides, never the critic: the same rule that stops a loop with `pass`.
    let verdict = call.critique.round_score(call.failed()).meets_pass_rule(&spec.policy);
    JudgmentRow {
        run_id: run_id.to_string(),
        critic: setup.name.clone(),
        task_id: labeled.task.id.clone(),
        kind: labeled.task.kind.clone(),
        draft_index: unit.draft as u32,
        repeat: unit.repeat,
        critique: call.critique.into(),
        passed: verdict,
        pass_score: spec.policy.pass_score,
        dim_target: spec.policy.dim_target,
        gold_pass: gold.pass,
        gold_score: gold.score,
        gold_fatal: gold.fatal,
        flaw: gold.flaw.clone(),
        draft_chars: draft.chars().count() as u64,
        critic_ms,
        critic_attempts: call.attempts,
        critic_error: call.error,
        meta: labeled.task.meta.as_ref().map(|m| m.to_string()),
        critic_truncated: scope.truncated,
    }
}
