//! The experiment file (docs/REFERENCE.md), validated and resolved against command-line overrides:
//! the resolved [`Experiment`] here, the file as written in `file`, read in `load`, its resolution
//! in `resolve`, the `[policy]` grid in `grid`. Every path inside the file is relative to the file;
//! every path on the command line is relative to the current directory. Unknown keys are errors.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use critbench_core::{Arm, FinalDraft, Policy, PolicyGrid};
use critbench_plugin_host::IsolationMode;
use critbench_storage::dataset::OnBadRow;
use serde::{Deserialize, Serialize};

/// The experiment run when `critbench run` is given none.
pub const DEFAULT_EXPERIMENT: &str = "experiments/demo.toml";

/// Where the model side of the loop comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// The built-in deterministic simulated author.
    Sim,
    /// Drafts from each task's `drafts` field.
    Scripted,
    /// An OpenAI-compatible server.
    Openai,
    /// The user's own writer programs (`[writer]`).
    Command,
}

/// How a policy grid is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Sweep {
    /// Record each loop once, until every config has stopped, and derive every config's rows
    /// from that recording (exact, because the author never sees the policy).
    Replay,
    /// Run every config's loops separately.
    Direct,
}

impl Sweep {
    /// The name in experiment files and the manifest.
    pub fn as_str(self) -> &'static str {
        match self {
            Sweep::Replay => "replay",
            Sweep::Direct => "direct",
        }
    }
}

pub use critbench_plugin_host::CriticSpec;
pub use critbench_plugin_host::writer::WriterSpec;

/// A fully resolved experiment: what `run` executes and the manifest records.
#[derive(Clone, Debug, Serialize)]
pub struct Experiment {
    /// The experiment's `name`.
    pub name: String,
    /// The experiment file, if the experiment came from one.
    pub path: Option<PathBuf>,
    /// The dataset files, read in this order.
    pub datasets: Vec<PathBuf>,
    /// Who writes the drafts: the simulator, the dataset's scripts or a model server.
    pub backend: BackendKind,
    /// The writer programs of `backend = "command"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writer: Option<WriterSpec>,
    /// The arms compared, in the order the reports list them.
    #[serde(serialize_with = "arm_names")]
    pub arms: Vec<Arm>,
    /// The arms whose loops end with the adjudicator's pass, in `arms` order.
    #[serde(serialize_with = "arm_names", skip_serializing_if = "Vec::is_empty")]
    pub adjudicate: Vec<Arm>,
    /// Times each task's loops are repeated.
    pub epochs: u32,
    /// The seed every draw of the run derives from.
    pub seed: u64,
    /// The run folder.
    pub out: PathBuf,
    /// The critics that steer loops (`[[critics]]`).
    pub critics: Vec<CriticSpec>,
    /// Held-out evaluators: critics that score a loop's first draft and final answer with the
    /// task's gold labels in view, and never steer it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evaluators: Vec<EvaluatorSpec>,
    /// The held-out evaluator that plays the `oracle` arm's oracle (`oracle = "NAME"`, one of
    /// `evaluators`, taking every task a critic takes); `None` without that arm, or on the
    /// simulator, whose hidden truth then plays it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oracle: Option<String>,
    /// The thresholds and caps swept.
    pub sweep: Sweep,
    /// Strategy memory, for the `feedback+memory` arm.
    pub memory: MemoryConfig,
    /// The policy grid: one entry per config, in a stable order.
    #[serde(serialize_with = "policy_tables")]
    pub policies: Vec<Policy>,
    /// Attempts per critique before the conservative failure (docs/REFERENCE.md, Critique).
    pub critic_attempts: u32,
    /// Keep each draft's text in `trajectories.parquet`.
    pub store_drafts: bool,
    /// Folders searched for plugin libraries before the user's plugin folder.
    pub plugin_dirs: Vec<PathBuf>,
    /// What a dataset row that cannot be read does to the run.
    #[serde(serialize_with = "bad_row_name")]
    pub on_bad_row: OnBadRow,
    /// Only the first N tasks of each dataset file.
    pub limit: Option<usize>,
    /// Worker threads; 0 means every core.
    pub jobs: usize,
    /// `critbench judge` settings (the `[judge]` table).
    pub judge: JudgeSettings,
    /// The `[openai]` table resolved: endpoint, roles, limits, cache. Holds the *name* of the
    /// API key's environment variable, never the key.
    pub openai: Option<critbench_openai::ClientSettings>,
    /// What the model roles are told (the `[prompts]` table over the defaults).
    pub prompts: critbench_openai::prompts::Prompts,
    /// The `[sequential]` table: stop admitting tasks once the comparison is settled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialSettings>,
    /// What the models cost (`[pricing]`, and `--pricing FILE` over it); each priced role's
    /// price is also in `openai`'s role settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Pricing>,
    /// What the run may spend (`[budget]`). Not part of what a resumed run must match: a run
    /// stopped by its budget resumes with a larger one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<critbench_openai::Budget>,
}

/// The `[judge]` table: how `critbench judge` benchmarks the critics on labeled drafts.
/// An `[[evaluators]]` table: a critic, and the pass rule its verdicts are read with.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EvaluatorSpec {
    /// The critic.
    #[serde(flatten)]
    pub spec: CriticSpec,
    /// The score its verdict passes at.
    pub pass_score: f64,
    /// The score every dimension must reach as well, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dim_target: Option<f64>,
    /// Whether it judges every recorded draft (`rounds = "all"`), not only the first draft and
    /// the final answers.
    #[serde(skip_serializing_if = "std::ops::Not::not", rename = "all_rounds")]
    pub all_rounds: bool,
    /// For the `sim-truth` evaluator: every defect the simulated writer documents, the issue types
    /// a critic can name that the truth can hold (what a critic's precision is counted over).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub defect_types: Vec<String>,
}

impl EvaluatorSpec {
    /// The policy whose pass test the evaluator's verdicts are read with.
    pub fn pass_rule(&self) -> Policy {
        Policy { pass_score: self.pass_score, dim_target: self.dim_target, ..Policy::default() }
    }
}

/// The `[judge]` table: how `critbench judge` benchmarks the critics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JudgeSettings {
    /// Critiques of each labeled draft by each critic (more than 1 for critics that are not
    /// deterministic, to measure their self-consistency).
    pub repeats: u32,
    /// Labeled datasets to judge on instead of the experiment's `dataset`.
    pub datasets: Option<Vec<PathBuf>>,
    /// Where `critbench judge` writes, instead of the experiment's `out`.
    pub out: Option<PathBuf>,
}

fn arm_names<S: serde::Serializer>(arms: &[Arm], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(arms.iter().map(|a| a.as_str()))
}

fn bad_row_name<S: serde::Serializer>(mode: &OnBadRow, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match mode {
        OnBadRow::Error => "error",
        OnBadRow::Skip => "skip",
    })
}

/// A policy as it appears in the manifest and `summary.json`.
pub fn policy_json(policy: &Policy) -> serde_json::Value {
    serde_json::json!({
        "config_id": policy.config_id(),
        "pass_score": policy.pass_score,
        "max_revisions": policy.max_revisions,
        "stall": policy.stall,
        "plateau_eps": policy.plateau_eps,
        "dim_target": policy.dim_target,
        "final": policy.final_draft.as_str(),
    })
}

fn policy_tables<S: serde::Serializer>(policies: &[Policy], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(policies.iter().map(policy_json))
}

/// Command-line flags that override the file.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--out DIR`.
    pub out: Option<PathBuf>,
    /// `--jobs N`.
    pub jobs: Option<usize>,
    /// `--dataset FILE`, each one given.
    pub datasets: Vec<PathBuf>,
    /// `--limit N`.
    pub limit: Option<usize>,
    /// `--on-bad-row`.
    pub on_bad_row: Option<OnBadRow>,
    /// `--store-drafts`.
    pub store_drafts: bool,
    /// `--plugin-dir DIR`, each one given.
    pub plugin_dirs: Vec<PathBuf>,
    /// `--sweep`, over the file's `[sweep]`.
    pub sweep: Option<Sweep>,
    /// `--no-cache`: neither read nor write the response cache file (identical requests within
    /// the run are still answered once, so arms stay paired).
    pub no_cache: bool,
    /// `--isolate-plugins`: run every critic without an `isolation` key in child processes.
    pub isolate_plugins: bool,
    /// `--pricing FILE`: a price list shaped like `[pricing]`, over the experiment's.
    pub pricing: Option<PathBuf>,
}

/// What in `name` (a critic's or a held-out evaluator's) would break a line of the reports, if
/// anything: a control character (a line break, a tab, an escape) ends or garbles the line it is
/// printed on, and a `|` splits a cell of report.md's tables. The name labels rows, tables and
/// report lines, so such a name is refused wherever it is given (the experiment file,
/// `rescore --critic`).
pub fn name_problem(name: &str) -> Option<String> {
    name.chars().find_map(|c| match c {
        '\n' | '\r' => Some(format!("a line break (U+{:04X})", u32::from(c))),
        '|' => Some("`|`, which splits a cell of report.md's tables".to_string()),
        c if c.is_control() => Some(format!("a control character (U+{:04X})", u32::from(c))),
        _ => None,
    })
}

/// Bounds of a critic's `timeout_s` and `memory_mb`.
pub const MAX_TIMEOUT_S: f64 = 86_400.0;
/// The smallest `memory_mb` a critic may have.
pub const MIN_MEMORY_MB: u64 = 16;
/// The largest `memory_mb` a critic may have.
pub const MAX_MEMORY_MB: u64 = 1 << 20;

/// Defaults of the `[openai]` table.
pub use critbench_openai::{DEFAULT_CONCURRENCY, DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BASE_MS, DEFAULT_TIMEOUT_S};
/// The cache file's name beside the run directory, unless `[openai] cache` names another.
pub const CACHE_FILE: &str = ".critbench-cache.sqlite";

mod file;
mod grid;
pub mod limits;
mod load;
mod memory;
mod pricing;
mod resolve;
mod sequential;

pub use memory::MemoryConfig;
pub use sequential::{Decides, SequentialError, SequentialSettings};

pub use grid::PolicyError;
pub use pricing::{DEFAULT_CURRENCY, Pricing, PricingError};
pub use resolve::{
    AdjudicateError, CriticProblem, ExperimentError, ExperimentProblem, OracleKinds, ResolveError, SIM_TRUTH,
};

pub use crate::experiment::limits::MAX_JUDGE_REPEATS;

impl Experiment {
    /// What each task's loops are made of, for the bounds of [`crate::experiment::limits`].
    pub fn task_shape(&self) -> crate::experiment::limits::TaskShape<'_> {
        crate::experiment::limits::TaskShape {
            critics: self.critics.len(),
            epochs: self.epochs,
            arms: &self.arms,
            adjudicate: &self.adjudicate,
            policies: &self.policies,
            replay: self.sweep == Sweep::Replay && self.policies.len() > 1,
        }
    }

    /// Worker threads when each blocks on the model while it waits (the plugins' `chat` service,
    /// `critbench judge`): `--jobs`, else every core, and with an `[openai]` table at least its
    /// `concurrency`, so that that many requests can be in flight.
    pub fn blocking_jobs(&self) -> usize {
        if self.jobs > 0 {
            return self.jobs;
        }
        let cores = available_cores();
        self.openai.as_ref().map_or(cores, |openai| (openai.concurrency() as usize).max(cores))
    }
}

/// The cores this process may use (1 when the system does not say).
pub(crate) fn available_cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

pub(crate) use resolve::normalize as normalize_path;

/// What the user is told before a priced run: each role whose model has no price, whose loops
/// will have no cost.
pub fn pricing_warnings(experiment: &Experiment) -> Vec<String> {
    let (Some(_), Some(openai)) = (&experiment.pricing, &experiment.openai) else { return Vec::new() };
    openai
        .roles
        .iter()
        .filter(|(_, settings)| settings.price.is_none())
        .map(|(role, settings)| {
            format!(
                "[pricing] has no price for the {role} model `{}`: the `cost` of every loop that uses it stays empty \
                 (price a local server at 0 to count it)",
                settings.model
            )
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
