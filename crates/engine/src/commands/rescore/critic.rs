//! The critic a rescoring asks: one of the run's, as the run opened it, or a new one; opened as
//! the run opens its critics (the plugin search path, isolation, the host's services).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use critbench_core::Policy;
use critbench_plugin_host::services::Host;
use critbench_plugin_host::{CriticInstance, CriticSpec, IsolationMode, SearchPath, open_critic};
use critbench_storage::manifest::{Manifest, PluginRecord};
use serde::Deserialize;

use super::error::RescoreError;
use crate::EngineError;
use crate::run::plan::{LoadedPlugin, POLICY_KEYS, threshold_warnings};

/// Which critic rescores the run.
#[derive(Clone, Debug, PartialEq)]
pub enum CriticChoice {
    /// The run's critic of the rescoring's name, with its table as the run resolved it.
    Run,
    /// A plugin: a name looked up on the search path, or a path to a shared library.
    Plugin(String),
    /// A program and its arguments speaking docs/PROTOCOL.md.
    Command(Vec<String>),
}

/// What the command line says of the critic beside its choice.
pub(super) struct Settings<'a> {
    pub name: &'a str,
    pub choice: &'a CriticChoice,
    /// Replaces the critic's config.
    pub config: Option<&'a serde_json::Value>,
    /// Replaces the critic's kinds.
    pub kinds: Option<&'a [String]>,
    pub plugin_dirs: &'a [PathBuf],
    pub isolate_plugins: bool,
    pub jobs: usize,
}

/// The critic, opened.
pub(super) struct Opened {
    pub spec: CriticSpec,
    pub instance: CriticInstance,
    /// As the manifest records it.
    pub plugin: PluginRecord,
    /// The plugin's SHA-256 in the run, when the critic is the run's.
    pub run_sha256: Option<String>,
    /// The run's thresholds outside this critic's score range, as a run warns of them.
    pub warnings: Vec<String>,
}

/// A critic's table as the run's manifest records it (`experiment.critics[]`).
#[derive(Deserialize)]
struct RecordedCritic {
    #[serde(default)]
    plugin: String,
    #[serde(default)]
    command: Option<Vec<String>>,
    #[serde(default)]
    isolation: Option<String>,
    #[serde(default)]
    timeout_s: Option<f64>,
    #[serde(default)]
    memory_mb: Option<u64>,
    #[serde(default)]
    kinds: Option<Vec<String>>,
    #[serde(default)]
    config: Option<serde_json::Value>,
    #[serde(default)]
    weights: Option<BTreeMap<String, f64>>,
    /// The variables of the environment the run gave it besides the base.
    #[serde(default)]
    env: Vec<String>,
}

/// The critic `settings` name, opened with no host service (a rescoring calls no model), and
/// checked against the run's grid: a critic whose critiques depend on the policy, or whose score
/// range does not hold every `pass_score` of `policies`, is refused.
pub(super) fn open(manifest: &Manifest, settings: &Settings<'_>, policies: &[Policy]) -> Result<Opened, RescoreError> {
    let experiment = &manifest.experiment;
    // A command critic of the run runs in the experiment file's directory, as in the run.
    let experiment_dir = experiment.rest.get("path").and_then(|p| p.as_str()).and_then(|p| Path::new(p).parent());
    let (mut spec, base_dir, run_sha256) = match settings.choice {
        CriticChoice::Run => {
            let Some(record) = experiment.critics.iter().find(|c| c.name == settings.name) else {
                return Err(RescoreError::UnknownCritic {
                    name: settings.name.to_string(),
                    critics: experiment.critics.iter().map(|c| c.name.clone()).collect(),
                });
            };
            let recorded: RecordedCritic = serde_json::from_value(serde_json::Value::Object(record.rest.clone()))
                .map_err(|e| RescoreError::NotARun {
                    dir: PathBuf::from("manifest.json"),
                    reason: format!("critic `{}` does not read back: {e}", record.name),
                })?;
            let loaded = manifest.plugins.iter().find(|p| p.critic == settings.name);
            // The library the run loaded, where it still is; else the plugin as the run named it
            // (always so for a built-in critic, whose recorded path is the executable that ran it).
            let plugin = match loaded.filter(|p| recorded.command.is_none() && !p.builtin && p.path.is_file()) {
                Some(loaded) => loaded.path.display().to_string(),
                None => recorded.plugin,
            };
            let spec = CriticSpec {
                name: settings.name.to_string(),
                plugin,
                command: recorded.command,
                isolation: recorded.isolation.as_deref().and_then(IsolationMode::parse).unwrap_or_default(),
                timeout_s: recorded.timeout_s.unwrap_or(critbench_plugin_host::DEFAULT_TIMEOUT.as_secs_f64()),
                memory_mb: recorded.memory_mb.unwrap_or(critbench_plugin_host::DEFAULT_MEMORY_MB),
                kinds: recorded.kinds,
                config: recorded.config.unwrap_or_else(|| serde_json::json!({})),
                weights: recorded.weights,
                env: recorded.env,
            };
            (spec, experiment_dir.map(Path::to_path_buf), loaded.map(|p| p.sha256.clone()))
        }
        CriticChoice::Plugin(plugin) => (CriticSpec::plugin(settings.name, plugin), None, None),
        CriticChoice::Command(command) => {
            let spec = CriticSpec {
                command: Some(command.clone()),
                plugin: String::new(),
                isolation: IsolationMode::Process,
                ..CriticSpec::plugin(settings.name, "")
            };
            (spec, None, None)
        }
    };
    if let Some(config) = settings.config {
        spec.config = config.clone();
    }
    if let Some(kinds) = settings.kinds {
        spec.kinds = Some(kinds.to_vec());
    }
    if settings.isolate_plugins || spec.command.is_some() {
        spec.isolation = IsolationMode::Process;
    }
    let mut plugin_dirs = settings.plugin_dirs.to_vec();
    let run_dirs = experiment.rest.get("plugin_dirs").and_then(|d| d.as_array());
    plugin_dirs.extend(run_dirs.into_iter().flatten().filter_map(|d| d.as_str()).map(PathBuf::from));
    let search = SearchPath::default_for_current_exe(&plugin_dirs);
    let host = Arc::new(Host::new().withhold(
        crate::run::chat::CHAT_SERVICE,
        "`critbench rescore` calls no model, so it offers no `chat` service; rescore with a critic that needs none",
    ));
    let instance = open_critic(
        &spec.source(),
        &spec.config.to_string(),
        &search,
        base_dir.as_deref(),
        &spec.isolation(settings.jobs),
        &host,
    )
    .map_err(|source| EngineError::Plugin { critic: spec.name.clone(), source })?;
    let info = Arc::clone(instance.info());
    if info.policy_dependent {
        return Err(RescoreError::PolicyDependent { critic: spec.name.clone(), plugin: info.name.clone() });
    }
    if info.name == crate::experiment::SIM_TRUTH {
        return Err(RescoreError::SimTruth { critic: spec.name.clone() });
    }
    // The same rule as a run's: a threshold outside the critic's range is replayed, with a warning.
    let warnings = threshold_warnings(&spec.name, info.range, policies, &POLICY_KEYS);
    for warning in &warnings {
        note!("warning: {warning}");
    }
    if let Some(then) = run_sha256.as_ref().filter(|then| **then != info.sha256) {
        note!(
            "warning: critic `{}`'s plugin {} has changed since the run (sha256 {} then, {} now): its critiques may \
             differ from the run's",
            spec.name,
            info.path.display(),
            crate::run_dir::journal::short(then),
            crate::run_dir::journal::short(&info.sha256)
        );
    }
    let plugin = crate::run::manifest::plugin_record(&LoadedPlugin {
        critic: spec.name.clone(),
        library: info,
        trouble: None,
        carried: Default::default(),
    });
    Ok(Opened { spec, instance, plugin, run_sha256, warnings })
}
