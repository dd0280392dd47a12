//! A run's (or a judge's) set of critics: what each one is, as the experiment file describes it,
//! and opening them all. `critbench run` and `critbench judge` open their critics here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::info::{CriticSource, Isolation, IsolationMode};
use crate::services::Host;
use crate::{CriticInstance, PluginError, SearchPath, open_critic};

/// One critic of an experiment: a label, a plugin (or a command) and its config.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CriticSpec {
    /// The label in the outputs.
    pub name: String,
    /// A built-in plugin name or a path (already resolved against the experiment file); empty for
    /// a command critic.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub plugin: String,
    /// A critic speaking the JSON-lines protocol: program and arguments, run in the experiment
    /// file's directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Where the critic runs: in-process (plugins only) or in child processes.
    pub isolation: IsolationMode,
    /// The longest one critique may take.
    pub timeout_s: f64,
    /// The address-space limit of each child process, in MiB (process isolation only).
    pub memory_mb: u64,
    /// Only tasks of these kinds; every task when `None`.
    pub kinds: Option<Vec<String>>,
    /// JSON handed to the plugin's `create`.
    pub config: serde_json::Value,
    /// Weights for the mean of dimensions when a critique has no score.
    pub weights: Option<BTreeMap<String, f64>>,
    /// The variables of critbench's environment a command critic is given besides
    /// [`BASE_ENV`](crate::BASE_ENV): names, never values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
}

/// A critic that could not be opened, and why.
#[derive(Debug, thiserror::Error)]
#[error("critic `{critic}`: {source}")]
pub struct OpenCriticError {
    /// The critic's name in the experiment.
    pub critic: String,
    /// Why it did not open.
    #[source]
    pub source: PluginError,
}

impl CriticSpec {
    /// An in-process plugin critic with an empty config, taking every task.
    pub fn plugin(name: &str, plugin: &str) -> CriticSpec {
        CriticSpec {
            name: name.into(),
            plugin: plugin.into(),
            command: None,
            isolation: IsolationMode::InProcess,
            timeout_s: crate::DEFAULT_TIMEOUT.as_secs_f64(),
            memory_mb: crate::DEFAULT_MEMORY_MB,
            kinds: None,
            config: serde_json::json!({}),
            weights: None,
            env: Vec::new(),
        }
    }

    /// The plugin or command this critic runs.
    pub fn source(&self) -> CriticSource {
        match &self.command {
            Some(command) => CriticSource::Command(command.clone()),
            None => CriticSource::Plugin(self.plugin.clone()),
        }
    }

    /// How to run this critic when the run has `jobs` worker threads (0: one per core).
    pub fn isolation(&self, jobs: usize) -> Isolation {
        Isolation {
            mode: self.isolation,
            timeout: Duration::from_secs_f64(self.timeout_s),
            memory_mb: Some(self.memory_mb),
            children: if jobs == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { jobs },
            worker: None,
            env: self.env.clone(),
        }
    }

    /// Whether this critic takes a task of `kind`.
    pub fn takes(&self, kind: Option<&str>) -> bool {
        match &self.kinds {
            None => true,
            Some(kinds) => kind.is_some_and(|k| kinds.iter().any(|wanted| wanted == k)),
        }
    }
}

/// Opens every critic in order: plugin names are looked up in `plugin_dirs` and the default
/// places, relative paths against `base_dir` (the experiment file's directory); `jobs` bounds the
/// child processes of a process-isolated critic. Every instance gets the services of `host`; a
/// critic that requires a service the host does not offer is refused.
pub fn open_critics(
    specs: &[CriticSpec],
    plugin_dirs: &[PathBuf],
    base_dir: Option<&Path>,
    jobs: usize,
    host: &Arc<Host>,
) -> Result<Vec<CriticInstance>, OpenCriticError> {
    let search = SearchPath::default_for_current_exe(plugin_dirs);
    specs
        .iter()
        .map(|spec| {
            open_critic(&spec.source(), &spec.config.to_string(), &search, base_dir, &spec.isolation(jobs), host)
                .map_err(|source| OpenCriticError { critic: spec.name.clone(), source })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_critic_takes_the_kinds_it_lists() {
        let any = CriticSpec::plugin("r", "rubric");
        assert!(any.takes(None) && any.takes(Some("paper")));
        let papers = CriticSpec { kinds: Some(vec!["paper".into()]), ..any };
        assert!(papers.takes(Some("paper")) && !papers.takes(Some("rag")) && !papers.takes(None));
    }

    #[test]
    fn an_unknown_plugin_names_its_critic() {
        let spec = CriticSpec::plugin("mine", "no-such-plugin-anywhere");
        let error = open_critics(&[spec], &[], None, 1, &Default::default()).err().expect("no such plugin");
        assert_eq!(error.critic, "mine");
        assert!(matches!(error.source, PluginError::NotFound { .. }), "{error}");
    }
}
