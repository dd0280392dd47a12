//! `manifest.json` of a run, built from what the stages learned (the typed
//! [`critbench_storage::manifest::Manifest`]). Never any secret.

use critbench_storage::manifest::{
    Calls, DatasetRecord, ExperimentRecord, MANIFEST_VERSION, Manifest, PluginRecord, RunStatus,
};

use crate::EngineError;
use crate::experiment::{Experiment, Sweep};
use crate::run::plan::LoadedPlugin;
use crate::run::sink::Written;

pub struct ManifestInput<'a> {
    pub experiment: &'a Experiment,
    /// The folder the manifest goes in: the run directory, or a shard's folder.
    pub dir: &'a std::path::Path,
    pub shard: Option<critbench_storage::shards::Shard>,
    pub run_id: &'a str,
    pub datasets: &'a [DatasetRecord],
    pub plugins: &'a [LoadedPlugin],
    pub evaluators: &'a [LoadedPlugin],
    /// What the user was warned of when the run started.
    pub warnings: &'a [String],
    pub started_at: &'a str,
    pub finished_at: &'a str,
    pub wall_seconds: f64,
    pub status: RunStatus,
    pub written: &'a Written,
    pub sweep: Sweep,
    pub tasks_run: usize,
    /// The learning phase of strategy memory, when the experiment has the memory arm.
    pub memory: Option<&'a serde_json::Value>,
    pub tasks_unrouted: usize,
    pub jobs: usize,
    /// The model client's report (`[openai]` experiments only): calls, cache, tokens, the
    /// concurrency limit's history. Never the API key.
    pub openai: Option<&'a critbench_openai::usage::UsageReport>,
    /// The table files the run wrote, by path relative to the run directory.
    pub tables: std::collections::BTreeMap<String, critbench_storage::manifest::TableRecord>,
    /// A sequential run's record.
    pub sequential: Option<&'a critbench_storage::manifest::SequentialRecord>,
    /// The writer programs of `backend = "command"`.
    pub writers: &'a [crate::run::plan::LoadedWriter],
}

/// The resolved experiment as the manifest records it.
pub fn experiment_record(experiment: &Experiment) -> ExperimentRecord {
    serde_json::from_value(serde_json::to_value(experiment).expect("the experiment serializes"))
        .expect("a resolved experiment has the fields of a manifest's")
}

/// Gives each critic and evaluator of `plan` what an interrupted run's manifest (`earlier`)
/// counted of its children stopped after a failure, so that the resumed run reports the whole
/// run's.
pub fn carry_trouble(plan: &mut crate::run::plan::Plan<'_>, earlier: Option<&Manifest>) {
    let Some(earlier) = earlier else { return };
    let carry = |loaded: &mut [LoadedPlugin], recorded: &[PluginRecord]| {
        for plugin in loaded {
            let found = recorded.iter().find(|r| r.critic == plugin.critic).and_then(|r| r.process);
            plugin.carried = found.unwrap_or_default();
        }
    };
    carry(&mut plan.plugins, &earlier.plugins);
    carry(&mut plan.evaluator_plugins, &earlier.evaluators);
    for writer in &mut plan.writers {
        let found = earlier.writers.iter().find(|r| r.role == writer.info.role).map(|r| r.process);
        writer.carried = found.unwrap_or_default();
    }
}

pub fn plugin_record(plugin: &LoadedPlugin) -> PluginRecord {
    let library = &plugin.library;
    PluginRecord {
        critic: plugin.critic.clone(),
        path: library.path.clone(),
        name: library.name.clone(),
        version: library.version.clone(),
        sha256: library.sha256.clone(),
        score_range: [library.range.min, library.range.max],
        thread_safe: library.thread_safe,
        policy_dependent: library.policy_dependent,
        builtin: library.builtin,
        process: plugin.process_trouble(),
        rest: [
            ("isolation".to_string(), serde_json::to_value(library.isolation).expect("serializes")),
            ("command".to_string(), serde_json::to_value(&library.command).expect("serializes")),
        ]
        .into_iter()
        .collect(),
    }
}

pub fn write(input: &ManifestInput<'_>) -> Result<(), EngineError> {
    let written = input.written;
    let manifest = Manifest {
        manifest_version: MANIFEST_VERSION,
        schema_version: critbench_storage::SCHEMA_VERSION,
        critbench_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: input.run_id.to_string(),
        status: input.status,
        shard: input.shard,
        shards: None,
        experiment: experiment_record(input.experiment),
        replayed_from: None,
        source_run_id: None,
        datasets: input.datasets.to_vec(),
        plugins: input.plugins.iter().map(plugin_record).collect(),
        evaluators: input.evaluators.iter().map(plugin_record).collect(),
        started_at: input.started_at.to_string(),
        finished_at: input.finished_at.to_string(),
        wall_seconds: input.wall_seconds,
        jobs: input.jobs,
        tasks_run: input.tasks_run,
        tasks_unrouted: input.tasks_unrouted,
        memory: input.memory.cloned(),
        rows_skipped: input.datasets.iter().map(|d| d.rows_skipped).sum(),
        loops: written.counts.loops,
        critiques: written.counts.critiques,
        sweep: input.sweep.as_str().to_string(),
        // Every output round is one generator call (write or revise) and one critique. A replayed
        // sweep derives all configs from one recording per loop, so it makes fewer of each.
        calls: Calls {
            generator: written.counts.recorded_rounds,
            critic: written.counts.recorded_rounds,
            direct_equivalent: written.counts.critiques,
            saved: written.counts.critiques.saturating_sub(written.counts.recorded_rounds),
            ratio: written.counts.critiques as f64 / written.counts.recorded_rounds.max(1) as f64,
        },
        loops_with_critic_errors: written.counts.loops_with_critic_errors,
        loops_with_writer_errors: written.counts.loops_with_writer_errors,
        critiques_by_critic: written.counts.critiques_by_critic.clone(),
        evaluations_by_evaluator: written.counts.evaluations_by_evaluator.clone(),
        unread_critique_keys: written.counts.unread_critique_keys.clone(),
        failed_loop_count: written.counts.failed_count,
        failed_loops: written.failed.clone(),
        warnings: input.warnings.to_vec(),
        openai: input.openai.map(critbench_openai::usage::UsageReport::to_value),
        tables: input.tables.clone(),
        rescore: None,
        sequential: input.sequential.cloned(),
        writers: input.writers.iter().map(crate::run::plan::LoadedWriter::record).collect(),
    };
    manifest.write(input.dir).map_err(|source| EngineError::Io {
        context: format!("cannot write {}", input.dir.join(critbench_storage::manifest::MANIFEST_FILE).display()),
        source,
    })
}
