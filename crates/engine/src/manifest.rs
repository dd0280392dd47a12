//! `manifest.json`: what was run, on what, with which plugins, and when. Never any secret.

use std::sync::Arc;

use critbench_plugin_host::CriticInfo;
use critbench_storage::dataset::Dataset;
use serde_json::json;

use crate::EngineError;
use crate::experiment::Experiment;
use crate::run::RunSummary;

pub struct LoadedPlugin {
    pub critic: String,
    /// What the critic said it is when opened (library or command).
    pub library: Arc<CriticInfo>,
}

pub struct ManifestInput<'a> {
    pub experiment: &'a Experiment,
    pub run_id: &'a str,
    pub datasets: &'a [Dataset],
    pub plugins: &'a [LoadedPlugin],
    pub started_at: &'a str,
    pub finished_at: &'a str,
    pub summary: &'a RunSummary,
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
        "experiment": input.experiment,
        "datasets": input.datasets.iter().map(|d| json!({
            "path": d.path,
            "sha256": d.sha256,
            "tasks": d.tasks.len(),
            "rows_skipped": d.skipped.len(),
            "skipped": d.skipped,
        })).collect::<Vec<_>>(),
        "plugins": input.plugins.iter().map(|p| json!({
            "critic": p.critic,
            "path": p.library.path,
            "name": p.library.name,
            "version": p.library.version,
            "sha256": p.library.sha256,
            "score_range": [p.library.range.min, p.library.range.max],
            "thread_safe": p.library.thread_safe,
            "policy_dependent": p.library.policy_dependent,
            "isolation": p.library.isolation,
            "command": p.library.command,
        })).collect::<Vec<_>>(),
        "started_at": input.started_at,
        "finished_at": input.finished_at,
        "wall_seconds": input.summary.elapsed.as_secs_f64(),
        "jobs": input.jobs,
        "tasks_run": input.tasks_run,
        "tasks_unrouted": input.tasks_unrouted,
        "memory": input.memory,
        "rows_skipped": input.summary.rows_skipped,
        "loops": input.summary.loops,
        "critiques": input.summary.critiques,
        "sweep": input.summary.sweep,
        // Every output round is one generator call (write or revise) and one critique. A replayed
        // sweep derives all configs from one recording per loop, so it makes fewer of each.
        "calls": {
            "generator": input.summary.recorded_rounds,
            "critic": input.summary.recorded_rounds,
            "direct_equivalent": input.summary.critiques,
            "saved": input.summary.critiques.saturating_sub(input.summary.recorded_rounds),
            "ratio": input.summary.critiques as f64 / input.summary.recorded_rounds.max(1) as f64,
        },
        "failed_loops": input.summary.failed_loops,
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
