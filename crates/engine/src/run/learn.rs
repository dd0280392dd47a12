//! The learning pass of strategy memory, a first pass over the datasets before the
//! run proper: the feedback loop (first config, epoch 0) on the learning tasks; the issue types
//! each loop that passed after revision had fixed are counted per critic and task kind, frozen
//! into hints and written to `memory.json`. Learning loops write no rows.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use critbench_core::{Arm, ExitReason};

use crate::EngineError;
use crate::run::emit::effective_policy;
use crate::run::error::RunError;
use crate::run::loops::ChunkResult;
use crate::run::memory::{Namespace, fixed_types, freeze};
use crate::run::pipeline::{AsRecorded, Consumer};
use crate::run::plan::Plan;
use crate::run::source::SourceReport;
use crate::run_dir::layout::MEMORY_FILE;
use critbench_core::author::Hint;

/// Strategy hints per (critic, task kind).
pub type Hints = HashMap<(usize, Option<String>), Vec<Hint>>;

/// Counts what the learning loops fixed.
pub struct LearnSink<'p, 'a> {
    plan: &'p Plan<'a>,
    namespaces: BTreeMap<(usize, Option<String>), Namespace>,
    loops: u64,
    passed: u64,
    failures: Vec<String>,
}

impl<'p, 'a> LearnSink<'p, 'a> {
    pub fn new(plan: &'p Plan<'a>) -> Self {
        LearnSink { plan, namespaces: BTreeMap::new(), loops: 0, passed: 0, failures: Vec::new() }
    }

    /// Freezes the hints, writes `memory.json` into `out` and returns what the manifest records
    /// with the hints per (critic, task kind).
    pub fn finish(self, learning: &SourceReport, out: &Path) -> Result<(serde_json::Value, Hints), RunError> {
        let experiment = self.plan.experiment;
        if let Some(first) = self.failures.first() {
            return Err(RunError::LearningFailed { count: self.failures.len(), first: first.clone() });
        }
        if learning.other_split == 0 {
            return Err(RunError::NoEvaluationTasks);
        }
        let mut namespaces = self.namespaces;
        for ((critic, _), namespace) in namespaces.iter_mut() {
            namespace.learned_from.sort();
            freeze(namespace, &experiment.memory, &self.plan.plugins[*critic].library.declared);
        }
        let memory = serde_json::json!({
            "memory_version": 1,
            "learned_under": experiment.policies[0].config_id(),
            "learning_tasks": learning.tasks_run,
            "evaluation_tasks": learning.other_split,
            "namespaces": namespaces.values().collect::<Vec<_>>(),
        });
        let path = out.join(MEMORY_FILE);
        let text = serde_json::to_string_pretty(&memory).expect("memory serializes") + "\n";
        critbench_storage::files::write_atomically(&path, text.as_bytes())
            .map_err(|source| EngineError::Io { context: format!("cannot write {}", path.display()), source })?;
        let hints = namespaces.into_iter().map(|(key, namespace)| (key, namespace.hints)).collect();
        let record = serde_json::json!({
            "file": MEMORY_FILE,
            "learning_tasks": learning.tasks_run,
            "evaluation_tasks": learning.other_split,
            "learned_under": experiment.policies[0].config_id(),
        });
        Ok((record, hints))
    }
}

impl Consumer for LearnSink<'_, '_> {
    type Prepare = AsRecorded<ChunkResult>;
    type Error = RunError;

    fn preparer(&self) -> AsRecorded<ChunkResult> {
        AsRecorded::new()
    }

    fn accept(&mut self, chunk: ChunkResult) -> Result<(), RunError> {
        let plan = self.plan;
        let policy = effective_policy(&plan.experiment.policies[0], Arm::Feedback);
        for task in chunk.tasks {
            for (unit, result) in task.loops {
                self.loops += 1;
                let fixed = result.and_then(|result| {
                    let (stop, exit) =
                        crate::run::emit::stop_of(&result.rounds, &result.scores, &policy, Arm::Feedback.drafting())
                            .ok_or(crate::run::loops::LoopError::Unfinished)?;
                    let passed = exit == ExitReason::Pass;
                    self.passed += u64::from(passed);
                    Ok(fixed_types(&result.rounds, &result.scores, stop, passed))
                });
                let fixed = match fixed {
                    Ok(fixed) => fixed,
                    Err(error) => {
                        self.failures.push(format!("task `{}`: {error}", task.task.id));
                        continue;
                    }
                };
                let plugin = &plan.plugins[unit.critic];
                let namespace =
                    self.namespaces.entry((unit.critic, task.task.kind.clone())).or_insert_with(|| Namespace {
                        critic: plugin.critic.clone(),
                        plugin: plugin.library.name.clone(),
                        plugin_version: plugin.library.version.clone(),
                        kind: task.task.kind.clone(),
                        ..Namespace::default()
                    });
                if !fixed.is_empty() {
                    namespace.learned_from.push(task.task.id.clone());
                }
                for issue_type in fixed {
                    *namespace.fixed.entry(issue_type).or_default() += 1;
                }
            }
        }
        Ok(())
    }

    fn counts(&self) -> (u64, u64) {
        (self.loops, self.passed)
    }
}
