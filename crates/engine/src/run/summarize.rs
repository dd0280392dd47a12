//! Stage 5 of a run: the manifest and the summaries, once every row is written.

use std::path::PathBuf;
use std::time::Duration;

use critbench_storage::manifest::RunStatus;

use crate::EngineError;
use crate::experiment::Sweep;
use crate::run::manifest::{self, ManifestInput};
use crate::run::pipeline::Stopped;
use crate::run::plan::Plan;
use crate::run::sink::Written;
use crate::run::source::SourceReport;

/// What a finished run reports back.
#[derive(Debug)]
pub struct RunSummary {
    /// The run's id.
    pub run_id: String,
    /// The run directory.
    pub out_dir: PathBuf,
    /// Loops in the outputs.
    pub loops: u64,
    /// Critiques in the outputs.
    pub critiques: u64,
    /// Loops that passed.
    pub passed: u64,
    /// Loops that failed outright (a backend error or a bug); their rows are missing, every
    /// other loop's rows are written. At most `MAX_LISTED_FAILURES` (the sink's) are listed.
    pub failed_loops: Vec<String>,
    /// How many loops failed.
    pub failed_count: u64,
    /// Output loops that ended because the writer program wrote no draft the policy asked for.
    pub writer_errors: u64,
    /// Bad dataset rows skipped.
    pub rows_skipped: usize,
    /// How the policy grid was run.
    pub sweep: Sweep,
    /// Rounds actually generated and critiqued; `critiques` counts the rounds in the outputs,
    /// which a replayed sweep serves from fewer recorded rounds.
    pub recorded_rounds: u64,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Of `recorded_rounds`, those the interrupted run had recorded before this one resumed it
    /// (`elapsed` is this process's time only).
    pub resumed_rounds: u64,
    /// Critics whose every critique failed (after retries): their numbers measure nothing.
    pub critics_that_never_answered: Vec<(String, u64)>,
    /// The summaries written into the run directory.
    pub report: Option<critbench_report::Report>,
    /// What the model client did (calls, cache hits, tokens, the concurrency limit), when the
    /// experiment has an `[openai]` table; the same as `openai` in `manifest.json`.
    pub openai: Option<critbench_openai::usage::UsageReport>,
    /// A sequential run's record: what it decided, at which look, and what it spent.
    pub sequential: Option<critbench_storage::manifest::SequentialRecord>,
}

impl RunSummary {
    /// What the model client did, typed, when the experiment has an `[openai]` table.
    pub fn model_usage(&self) -> Option<&critbench_openai::usage::UsageReport> {
        self.openai.as_ref()
    }
}

/// Everything the run learned on its way, for the manifest and the summary.
pub struct Finished<'r> {
    /// Where the run (or the shard) writes.
    pub layout: &'r crate::run_dir::Layout,
    pub run_id: &'r str,
    pub started_at: &'r str,
    pub elapsed: Duration,
    pub written: Written,
    pub source: SourceReport,
    pub memory: Option<serde_json::Value>,
    pub jobs: usize,
    pub openai: Option<critbench_openai::usage::UsageReport>,
    /// What stopped the run early (a signal, its budget), if anything did.
    pub interrupted: Option<Stopped>,
    /// Rounds a resumed run found already recorded.
    pub resumed_rounds: u64,
    /// A sequential run's rule, looks and decision.
    pub sequential: Option<critbench_storage::manifest::SequentialRecord>,
}

/// Writes `manifest.json` and every summary file, and returns the run's summary. A shard writes
/// its own manifest only: the summaries are `critbench merge`'s, over every shard.
pub fn summarize(plan: &Plan<'_>, finished: Finished<'_>) -> Result<RunSummary, EngineError> {
    let experiment = plan.experiment;
    let (finished_at, _) = critbench_storage::clock::utc_stamps(std::time::SystemTime::now());
    let rows_skipped = finished.source.datasets.iter().map(|d| d.rows_skipped).sum();
    let layout = finished.layout;
    manifest::write(&ManifestInput {
        experiment,
        dir: &layout.own_dir(),
        shard: layout.shard,
        run_id: finished.run_id,
        datasets: &finished.source.datasets,
        plugins: &plan.plugins,
        evaluators: &plan.evaluator_plugins,
        warnings: &plan.warnings,
        started_at: finished.started_at,
        finished_at: &finished_at,
        wall_seconds: finished.elapsed.as_secs_f64(),
        status: if finished.interrupted.is_some() { RunStatus::Interrupted } else { RunStatus::Finished },
        written: &finished.written,
        sweep: plan.sweep(),
        // An interrupted run wrote the loops of a prefix of the tasks the source admitted.
        tasks_run: match finished.interrupted {
            Some(_) => finished.written.counts.tasks as usize,
            None => finished.source.tasks_run,
        },
        memory: finished.memory.as_ref(),
        tasks_unrouted: finished.source.unrouted,
        jobs: finished.jobs,
        openai: finished.openai.as_ref(),
        tables: crate::run_dir::layout::table_records(layout)?,
        sequential: finished.sequential.as_ref(),
        writers: &plan.writers,
    })?;
    let report = match layout.shard {
        Some(_) => None,
        None => Some(critbench_report::write_reports_trusted(&experiment.out)?),
    };
    let written = finished.written;
    Ok(RunSummary {
        run_id: finished.run_id.to_string(),
        out_dir: experiment.out.clone(),
        loops: written.counts.loops,
        critiques: written.counts.critiques,
        passed: written.counts.passed,
        failed_loops: written.failed,
        failed_count: written.counts.failed_count,
        writer_errors: written.counts.loops_with_writer_errors,
        rows_skipped,
        sweep: plan.sweep(),
        recorded_rounds: written.counts.recorded_rounds,
        resumed_rounds: finished.resumed_rounds,
        critics_that_never_answered: written
            .counts
            .critiques_by_critic
            .iter()
            .filter(|(_, counts)| counts.recorded > 0 && counts.failed == counts.recorded)
            .map(|(critic, counts)| (critic.clone(), counts.recorded))
            .collect(),
        elapsed: finished.elapsed,
        report,
        openai: finished.openai,
        sequential: finished.sequential,
    })
}
