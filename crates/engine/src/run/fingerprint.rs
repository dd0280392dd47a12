//! What a resumed run must find unchanged ([`Fingerprint`], the journal's `run.json`), taken from
//! the run's plan before any pass over the datasets.

use std::path::{Path, PathBuf};

use crate::EngineError;
use crate::run::plan::Plan;
use crate::run_dir::journal::{DatasetStamp, Fingerprint, PluginStamp, file_stamp, without_isolation};

/// What a resume of the run of `plan` must find unchanged: the resolved experiment (without what
/// may differ between two invocations of one run: `jobs`, where its files were named from, the
/// budget, the critics' isolation), each critic's and evaluator's plugin, each dataset's size and
/// content hash, the chunk size and the shard.
pub(crate) fn fingerprint(
    plan: &Plan<'_>,
    run_id: &str,
    chunk_tasks: usize,
    shard: Option<critbench_storage::shards::Shard>,
) -> Result<Fingerprint, EngineError> {
    let experiment = plan.experiment;
    let mut resolved = serde_json::to_value(experiment).expect("the experiment serializes");
    if let Some(object) = resolved.as_object_mut() {
        object.remove("jobs");
        object.remove("path");
        object.remove("out");
        // A run stopped by its budget resumes with a larger one.
        object.remove("budget");
        // Isolation (`--isolate-plugins`) changes how a critique is computed, not what it is: a
        // run that crashed in process resumes with its critics in child processes.
        for key in ["critics", "evaluators"] {
            object
                .get_mut(key)
                .and_then(serde_json::Value::as_array_mut)
                .into_iter()
                .flatten()
                .for_each(without_isolation);
        }
        canonical_paths(object);
    }
    let mut datasets = Vec::new();
    for path in &experiment.datasets {
        let (bytes, sha256) = file_stamp(path)
            .map_err(|source| EngineError::Io { context: format!("cannot read {}", path.display()), source })?;
        datasets.push(DatasetStamp { path: canonical(path), bytes, sha256 });
    }
    Ok(Fingerprint {
        run_id: run_id.to_string(),
        critbench_version: env!("CARGO_PKG_VERSION").to_string(),
        experiment: resolved,
        // Evaluators' files count as the critics' do: a changed one is another run.
        plugins: plan
            .plugins
            .iter()
            .chain(&plan.evaluator_plugins)
            .map(|p| PluginStamp { critic: p.critic.clone(), sha256: p.library.sha256.clone() })
            // A writer program's script is part of the experiment, as a command critic's is.
            .chain(
                plan.writers.iter().map(|w| PluginStamp {
                    critic: format!("writer ({})", w.info.role),
                    sha256: w.info.sha256.clone(),
                }),
            )
            .collect(),
        datasets,
        chunk_tasks,
        shard,
    })
}

/// `path` absolute with its links resolved; as given, made absolute, when it cannot be.
fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}

/// The paths of the resolved experiment made canonical, so that one experiment named from another
/// directory or by another path resolves to the same record.
fn canonical_paths(experiment: &mut serde_json::Map<String, serde_json::Value>) {
    use serde_json::Value;
    fn each_path(value: &mut Value) {
        match value {
            Value::String(text) => *text = canonical(Path::new(text.as_str())).display().to_string(),
            Value::Array(items) => items.iter_mut().for_each(each_path),
            _ => {}
        }
    }
    for key in ["datasets", "plugin_dirs"] {
        experiment.get_mut(key).into_iter().for_each(each_path);
    }
    if let Some(judge) = experiment.get_mut("judge").and_then(Value::as_object_mut) {
        for key in ["datasets", "out"] {
            judge.get_mut(key).into_iter().for_each(each_path);
        }
    }
    // A plugin given by path (a built-in is named without a `/`).
    for critic in experiment.get_mut("critics").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(plugin) = critic.get_mut("plugin").filter(|p| p.as_str().is_some_and(|p| p.contains('/'))) {
            each_path(plugin);
        }
    }
    if let Some(cache) = experiment.get_mut("openai").and_then(|openai| openai.pointer_mut("/cache/path")) {
        each_path(cache);
    }
}
