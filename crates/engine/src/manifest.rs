//! `manifest.json`: what was run, on what, with which plugins, and when. Never any secret.

use serde_json::json;

use crate::EngineError;
use crate::experiment::{Experiment, Sweep};
use crate::plan::LoadedPlugin;
use crate::sink::Written;
use crate::source::DatasetReport;

pub struct ManifestInput<'a> {
    pub experiment: &'a Experiment,
    pub run_id: &'a str,
    pub datasets: &'a [DatasetReport],
    pub plugins: &'a [LoadedPlugin],
    pub started_at: &'a str,
    pub finished_at: &'a str,
    pub wall_seconds: f64,
    /// `finished`, or `interrupted` when a signal stopped the run.
    pub status: &'a str,
    pub written: &'a Written,
    pub sweep: Sweep,
    pub rows_skipped: usize,
    pub tasks_run: usize,
    /// The learning phase of strategy memory, when the experiment has the memory arm.
    pub memory: Option<&'a serde_json::Value>,
    pub tasks_unrouted: usize,
    pub jobs: usize,
    /// The model client's report (`[openai]` experiments only): calls, cache, tokens, the
    /// concurrency limit's history. Never the API key.
    pub openai: Option<&'a serde_json::Value>,
}

pub fn write(input: &ManifestInput<'_>) -> Result<(), EngineError> {
    let manifest = json!({
        "schema_version": critbench_storage::SCHEMA_VERSION,
        "critbench_version": env!("CARGO_PKG_VERSION"),
        "run_id": input.run_id,
        "status": input.status,
        "experiment": input.experiment,
        "datasets": input.datasets,
        "plugins": input.plugins.iter().map(|p| json!({
            "critic": p.critic,
            "path": p.library.path,
            "name": p.library.name,
            "version": p.library.version,
            "sha256": p.library.sha256,
            "score_range": [p.library.range.min, p.library.range.max],
            "thread_safe": p.library.thread_safe,
            "policy_dependent": p.library.policy_dependent,
        })).collect::<Vec<_>>(),
        "started_at": input.started_at,
        "finished_at": input.finished_at,
        "wall_seconds": input.wall_seconds,
        "jobs": input.jobs,
        "tasks_run": input.tasks_run,
        "tasks_unrouted": input.tasks_unrouted,
        "memory": input.memory,
        "rows_skipped": input.rows_skipped,
        "loops": input.written.loops,
        "critiques": input.written.critiques,
        "sweep": input.sweep,
        // Every output round is one generator call (write or revise) and one critique. A replayed
        // sweep derives all configs from one recording per loop, so it makes fewer of each.
        "calls": {
            "generator": input.written.recorded_rounds,
            "critic": input.written.recorded_rounds,
            "direct_equivalent": input.written.critiques,
            "saved": input.written.critiques.saturating_sub(input.written.recorded_rounds),
            "ratio": input.written.critiques as f64 / input.written.recorded_rounds.max(1) as f64,
        },
        "loops_with_critic_errors": input.written.loops_with_critic_errors,
        "critiques_by_critic": input.written.critiques_by_critic,
        "failed_loop_count": input.written.failed_count,
        "failed_loops": input.written.failed,
    });
    let mut manifest = manifest;
    if let Some(openai) = input.openai {
        manifest["openai"] = openai.clone();
    }
    let path = input.experiment.out.join("manifest.json");
    let text = serde_json::to_string_pretty(&manifest).expect("the manifest serializes");
    std::fs::write(&path, text + "\n")
        .map_err(|source| EngineError::Io { context: format!("cannot write {}", path.display()), source })
}
