//! The experiment file (SPEC §9), validated and resolved against command-line overrides.
//!
//! Every path inside the file is relative to the file; every path on the command line is
//! relative to the current directory. Unknown keys are errors.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use critbench_core::{Arm, FinalDraft, Policy, PolicyGrid};
use critbench_plugin_host::IsolationMode;
use critbench_storage::dataset::OnBadRow;
use serde::{Deserialize, Serialize};

use crate::EngineError;
use crate::error::ExperimentProblem;

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

/// A fully resolved experiment: what `run` executes and the manifest records.
#[derive(Clone, Debug, Serialize)]
pub struct Experiment {
    pub name: String,
    /// The experiment file, if the experiment came from one.
    pub path: Option<PathBuf>,
    pub datasets: Vec<PathBuf>,
    pub backend: BackendKind,
    #[serde(serialize_with = "arm_names")]
    pub arms: Vec<Arm>,
    pub epochs: u32,
    pub seed: u64,
    pub out: PathBuf,
    pub critics: Vec<CriticSpec>,
    pub sweep: Sweep,
    /// Strategy memory, for the `feedback+memory` arm.
    pub memory: crate::memory::MemoryConfig,
    /// The policy grid: one entry per config, in a stable order.
    #[serde(serialize_with = "policy_tables")]
    pub policies: Vec<Policy>,
    /// Attempts per critique before the conservative failure (SPEC §4).
    pub critic_attempts: u32,
    /// Keep each draft's text in `trajectories.parquet`.
    pub store_drafts: bool,
    pub plugin_dirs: Vec<PathBuf>,
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
    pub prompts: crate::prompts::Prompts,
}

/// The `[judge]` table: how `critbench judge` benchmarks the critics on labeled drafts.
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

/// The largest `[judge] repeats`: beyond this a typo is likelier than a plan.
pub const MAX_JUDGE_REPEATS: u32 = 1000;

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
    pub out: Option<PathBuf>,
    pub jobs: Option<usize>,
    pub datasets: Vec<PathBuf>,
    pub limit: Option<usize>,
    pub on_bad_row: Option<OnBadRow>,
    pub store_drafts: bool,
    pub plugin_dirs: Vec<PathBuf>,
    pub sweep: Option<Sweep>,
    /// `--no-cache`: neither read nor write the response cache file (identical requests within
    /// the run are still answered once, so arms stay paired).
    pub no_cache: bool,
    /// `--isolate-plugins`: run every critic without an `isolation` key in child processes.
    pub isolate_plugins: bool,
}

/// Bounds of a critic's `timeout_s` and `memory_mb`.
pub const MAX_TIMEOUT_S: f64 = 86_400.0;
pub const MIN_MEMORY_MB: u64 = 16;
pub const MAX_MEMORY_MB: u64 = 1 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExperimentFile {
    name: String,
    #[serde(default)]
    dataset: Option<OneOrMany<String>>,
    #[serde(default = "default_backend")]
    backend: String,
    #[serde(default)]
    arms: Option<Vec<String>>,
    #[serde(default = "one")]
    epochs: u32,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    out: Option<String>,
    #[serde(default = "default_attempts")]
    critic_attempts: u32,
    #[serde(default)]
    store_drafts: bool,
    #[serde(default)]
    plugin_dirs: Vec<String>,
    #[serde(default)]
    on_bad_row: Option<String>,
    critics: Vec<CriticEntry>,
    #[serde(default)]
    policy: toml::Table,
    #[serde(default)]
    sweep: Option<String>,
    #[serde(default)]
    memory: Option<MemorySection>,
    #[serde(default)]
    openai: Option<OpenAiSection>,
    #[serde(default)]
    prompts: Option<crate::prompts::Prompts>,
    #[serde(default)]
    judge: Option<JudgeSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JudgeSection {
    #[serde(default = "one")]
    repeats: u32,
    #[serde(default)]
    dataset: Option<OneOrMany<String>>,
    #[serde(default)]
    out: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemorySection {
    #[serde(default)]
    learn_fraction: Option<f64>,
    #[serde(default)]
    min_count: Option<u32>,
    #[serde(default)]
    hints: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CriticEntry {
    name: String,
    #[serde(default)]
    plugin: Option<String>,
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
    config: Option<toml::Value>,
    #[serde(default)]
    weights: Option<BTreeMap<String, f64>>,
}

/// The `[openai]` table (SPEC §9, extended): an OpenAI-compatible endpoint and the model of each
/// role. `models = { role = "name" }` is shorthand for `[openai.role] model = "name"`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenAiSection {
    base_url: String,
    #[serde(default)]
    api_key_env: Option<String>,
    #[serde(default)]
    concurrency: Option<u32>,
    #[serde(default)]
    models: BTreeMap<String, String>,
    #[serde(default)]
    timeout_s: Option<f64>,
    #[serde(default)]
    max_retries: Option<u32>,
    #[serde(default)]
    retry_base_ms: Option<u64>,
    #[serde(default)]
    max_tokens_total: Option<u64>,
    /// Every role's `max_tokens` unless the role sets its own.
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    cache: Option<String>,
    #[serde(default)]
    generator: Option<RoleSection>,
    #[serde(default)]
    reviser: Option<RoleSection>,
    #[serde(default)]
    judge: Option<RoleSection>,
    #[serde(default)]
    adjudicator: Option<RoleSection>,
}

#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleSection {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    seed: Option<u64>,
}

/// Defaults of the `[openai]` table.
pub const DEFAULT_CONCURRENCY: u32 = 4;
pub const DEFAULT_TIMEOUT_S: f64 = 120.0;
pub const DEFAULT_MAX_RETRIES: u32 = 4;
pub const DEFAULT_RETRY_BASE_MS: u64 = 500;
/// The cache file's name beside the run directory, unless `[openai] cache` names another.
pub const CACHE_FILE: &str = ".critbench-cache.sqlite";

fn default_backend() -> String {
    "sim".into()
}
fn one() -> u32 {
    1
}
fn default_attempts() -> u32 {
    critbench_plugin_host::DEFAULT_ATTEMPTS
}

const POLICY_KEYS: [&str; 6] = ["pass_score", "max_revisions", "stall", "plateau_eps", "dim_target", "final"];

impl Experiment {
    /// Reads, validates and resolves an experiment file.
    pub fn load(path: &Path, overrides: &Overrides) -> Result<Experiment, EngineError> {
        let fail = |problem: ExperimentProblem| EngineError::Experiment { path: path.to_path_buf(), problem };
        let text = std::fs::read_to_string(path).map_err(|e| fail(ExperimentProblem::Unreadable(e)))?;
        let file: ExperimentFile = toml::from_str(&text).map_err(|error| {
            let line = error.span().map(|span| text[..span.start].lines().count().max(1));
            fail(ExperimentProblem::Toml { line, error: Box::new(error) })
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::resolve(file, &base, overrides)
            .map(|mut experiment| {
                experiment.path = Some(path.to_path_buf());
                experiment
            })
            .map_err(|message| fail(ExperimentProblem::Invalid(message)))
    }

    fn resolve(file: ExperimentFile, base: &Path, overrides: &Overrides) -> Result<Experiment, String> {
        let relative = |p: &str| -> PathBuf {
            let path = PathBuf::from(p);
            if path.is_absolute() { path } else { normalize(&base.join(path)) }
        };
        if file.name.trim().is_empty() {
            return Err("`name` must not be empty".into());
        }
        // The name is a directory under reports/ (and labels the run): one path component.
        if file.name.contains(['/', '\\']) || file.name == "." || file.name == ".." {
            return Err(format!(
                "`name` = {:?} must not contain a path separator or be `.` or `..` (the run is written to \
                 reports/NAME unless `out` says otherwise; set `out` to write elsewhere)",
                file.name
            ));
        }
        let datasets: Vec<PathBuf> = if !overrides.datasets.is_empty() {
            overrides.datasets.clone()
        } else {
            match file.dataset {
                Some(OneOrMany::One(p)) => vec![relative(&p)],
                Some(OneOrMany::Many(ps)) if !ps.is_empty() => ps.iter().map(|p| relative(p)).collect(),
                Some(OneOrMany::Many(_)) => return Err("`dataset` is an empty list; give at least one path".into()),
                None => return Err("`dataset` is missing; give a path (or pass --dataset PATH)".into()),
            }
        };
        let backend = match file.backend.as_str() {
            "sim" => BackendKind::Sim,
            "scripted" => BackendKind::Scripted,
            "openai" => BackendKind::Openai,
            other => {
                return Err(format!("`backend` = \"{other}\" is not known; use \"sim\", \"scripted\" or \"openai\""));
            }
        };
        if backend == BackendKind::Openai && file.openai.is_none() {
            return Err("`backend` = \"openai\" needs an [openai] section with `base_url`".into());
        }
        let arm_names = file.arms.unwrap_or_else(|| Arm::DEFAULT.iter().map(|a| a.as_str().to_string()).collect());
        if arm_names.is_empty() {
            return Err("`arms` is empty; use any of \"feedback\", \"no-feedback\", \"single\"".into());
        }
        let mut arms = Vec::new();
        for name in &arm_names {
            let arm = Arm::parse(name).ok_or_else(|| {
                format!("`arms`: \"{name}\" is not an arm; use \"feedback\", \"no-feedback\", \"single\" or \"feedback+memory\"")
            })?;
            if arms.contains(&arm) {
                return Err(format!("`arms`: \"{name}\" is listed twice"));
            }
            arms.push(arm);
        }
        if file.epochs == 0 {
            return Err("`epochs` must be at least 1".into());
        }
        if file.critic_attempts == 0 {
            return Err("`critic_attempts` must be at least 1".into());
        }
        if file.critics.is_empty() {
            return Err("no critics: add at least one [[critics]] table with `name` and `plugin`".into());
        }
        let mut labels = BTreeSet::new();
        let mut critics = Vec::new();
        for (index, entry) in file.critics.into_iter().enumerate() {
            let at = format!("critics[{index}]");
            if entry.name.trim().is_empty() {
                return Err(format!("{at}: `name` must not be empty"));
            }
            if !labels.insert(entry.name.clone()) {
                return Err(format!("{at}: the critic name \"{}\" is used twice; names label the outputs", entry.name));
            }
            let (plugin, command) = match (entry.plugin, entry.command) {
                (Some(_), Some(_)) => {
                    return Err(format!("{at}: give either `plugin` or `command`, not both"));
                }
                (None, None) => {
                    return Err(format!(
                        "{at}: give `plugin` (a built-in name or a shared library) or `command` \
                         (an executable speaking the JSON-lines protocol)"
                    ));
                }
                (Some(plugin), None) if plugin.trim().is_empty() => {
                    return Err(format!("{at}: `plugin` must not be empty"));
                }
                (Some(plugin), None) => (plugin, None),
                (None, Some(command)) if command.first().is_none_or(|p| p.trim().is_empty()) => {
                    return Err(format!(
                        "{at}: `command` must start with a program, e.g. [\"python3\", \"critic.py\"]"
                    ));
                }
                (None, Some(command)) => (String::new(), Some(command)),
            };
            let isolation = match entry.isolation.as_deref() {
                None if command.is_some() || overrides.isolate_plugins => IsolationMode::Process,
                None => IsolationMode::InProcess,
                Some(text) => IsolationMode::parse(text).ok_or_else(|| {
                    format!("{at}: `isolation` = \"{text}\" is not known; use \"in-process\" or \"process\"")
                })?,
            };
            if command.is_some() && isolation == IsolationMode::InProcess {
                return Err(format!(
                    "{at}: a `command` critic runs in its own process; remove `isolation` = \"in-process\""
                ));
            }
            let timeout_s = entry.timeout_s.unwrap_or(critbench_plugin_host::DEFAULT_TIMEOUT.as_secs_f64());
            if !(timeout_s.is_finite() && timeout_s > 0.0 && timeout_s <= MAX_TIMEOUT_S) {
                return Err(format!("{at}: `timeout_s` = {timeout_s} must be more than 0 and at most {MAX_TIMEOUT_S}"));
            }
            if let Some((name, weight)) = entry.weights.iter().flatten().find(|(_, w)| !(w.is_finite() && **w >= 0.0)) {
                return Err(format!("{at}: `weights`: {name} = {weight} must be a finite number ≥ 0"));
            }
            let memory_mb = entry.memory_mb.unwrap_or(critbench_plugin_host::DEFAULT_MEMORY_MB);
            if !(MIN_MEMORY_MB..=MAX_MEMORY_MB).contains(&memory_mb) {
                return Err(format!("{at}: `memory_mb` = {memory_mb} must be from {MIN_MEMORY_MB} to {MAX_MEMORY_MB}"));
            }
            if entry.kinds.as_ref().is_some_and(Vec::is_empty) {
                return Err(format!(
                    "{at}: `kinds` is empty, so no task would reach this critic; remove it to take every task"
                ));
            }
            let plugin = if critbench_plugin_host::SearchPath::is_path(&plugin) {
                relative(&plugin).display().to_string()
            } else {
                plugin
            };
            let config = match entry.config {
                None => serde_json::json!({}),
                Some(value) => serde_json::to_value(value).map_err(|e| format!("{at}: `config`: {e}"))?,
            };
            critics.push(CriticSpec {
                name: entry.name,
                plugin,
                command,
                isolation,
                timeout_s,
                memory_mb,
                kinds: entry.kinds,
                config,
                weights: entry.weights,
            });
        }
        let policies = policy_grid(&file.policy)?;
        let judge = match file.judge {
            None => JudgeSettings { repeats: 1, datasets: None, out: None },
            Some(section) => {
                if !(1..=MAX_JUDGE_REPEATS).contains(&section.repeats) {
                    return Err(format!("[judge]: `repeats` must be from 1 to {MAX_JUDGE_REPEATS}"));
                }
                let datasets = match section.dataset {
                    None => None,
                    Some(OneOrMany::One(p)) => Some(vec![relative(&p)]),
                    Some(OneOrMany::Many(ps)) if !ps.is_empty() => Some(ps.iter().map(|p| relative(p)).collect()),
                    Some(OneOrMany::Many(_)) => {
                        return Err("[judge]: `dataset` is an empty list; give at least one path".into());
                    }
                };
                JudgeSettings { repeats: section.repeats, datasets, out: section.out.as_deref().map(relative) }
            }
        };
        let mut memory = crate::memory::MemoryConfig::default();
        if let Some(section) = file.memory {
            if let Some(fraction) = section.learn_fraction {
                if !(fraction > 0.0 && fraction < 1.0) {
                    return Err(format!("[memory]: `learn_fraction` = {fraction} must be between 0 and 1 (exclusive)"));
                }
                memory.learn_fraction = fraction;
            }
            if let Some(min_count) = section.min_count {
                if min_count == 0 {
                    return Err("[memory]: `min_count` must be at least 1".into());
                }
                memory.min_count = min_count;
            }
            memory.hints = section.hints;
        }
        let sweep = match file.sweep.as_deref() {
            _ if overrides.sweep.is_some() => overrides.sweep.expect("checked just above"),
            None | Some("replay") => Sweep::Replay,
            Some("direct") => Sweep::Direct,
            Some(other) => return Err(format!("`sweep` = \"{other}\"; use \"replay\" or \"direct\"")),
        };
        let on_bad_row = match (overrides.on_bad_row, file.on_bad_row.as_deref()) {
            (Some(mode), _) => mode,
            (None, None | Some("error")) => OnBadRow::Error,
            (None, Some("skip")) => OnBadRow::Skip,
            (None, Some(other)) => return Err(format!("`on_bad_row` = \"{other}\"; use \"error\" or \"skip\"")),
        };
        let out = match (&overrides.out, &file.out) {
            (Some(out), _) => out.clone(),
            (None, Some(out)) => relative(out),
            (None, None) => PathBuf::from("reports").join(&file.name),
        };
        let mut plugin_dirs = overrides.plugin_dirs.clone();
        plugin_dirs.extend(file.plugin_dirs.iter().map(|d| relative(d)));
        let openai = match file.openai {
            None => None,
            Some(section) => {
                let cache = if overrides.no_cache {
                    critbench_openai::CacheMode::Memory
                } else {
                    let path = match &section.cache {
                        Some(path) => relative(path),
                        None => out.parent().map(|p| p.join(CACHE_FILE)).unwrap_or_else(|| PathBuf::from(CACHE_FILE)),
                    };
                    critbench_openai::CacheMode::Disk { path }
                };
                Some(resolve_openai(section, backend, file.seed, &critics, cache)?)
            }
        };
        let prompts = file.prompts.unwrap_or_default();
        prompts.check()?;
        Ok(Experiment {
            name: file.name,
            path: None,
            datasets,
            backend,
            arms,
            epochs: file.epochs,
            seed: file.seed,
            out,
            critics,
            sweep,
            memory,
            policies,
            critic_attempts: file.critic_attempts,
            store_drafts: file.store_drafts || overrides.store_drafts,
            plugin_dirs,
            on_bad_row,
            limit: overrides.limit,
            // Workers mostly wait on the network with a model server: enough of them to keep
            // `concurrency` requests in flight.
            jobs: overrides
                .jobs
                .unwrap_or_else(|| openai.as_ref().map_or(0, |o| o.concurrency.max(available_cores() as u32) as usize)),
            judge,
            openai,
            prompts,
        })
    }
}

fn available_cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Resolves the `[openai]` table: every role's model and sampling, the limits, the cache.
fn resolve_openai(
    section: OpenAiSection,
    backend: BackendKind,
    seed: u64,
    critics: &[CriticSpec],
    cache: critbench_openai::CacheMode,
) -> Result<critbench_openai::ClientSettings, String> {
    use critbench_openai::{ClientSettings, Role, RoleSettings};
    let base_url = section.base_url.trim().to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(format!("[openai] base_url = \"{base_url}\" must start with http:// or https://"));
    }
    let authority = base_url.split_once("://").map_or("", |(_, rest)| rest.split('/').next().unwrap_or(""));
    if authority.contains('@') {
        // It would be recorded in the manifest: credentials belong in the environment.
        return Err("[openai] base_url must not carry credentials (user:password@); put the key in the \
                    environment variable api_key_env names"
            .into());
    }
    if let Some(name) = &section.api_key_env {
        // Never echo the value: it may be a key pasted in the wrong place.
        let valid = !name.is_empty()
            && name.len() <= 64
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err("[openai] api_key_env must be the *name* of an environment variable (letters, digits and \
                        `_`, like OPENAI_API_KEY), not the key itself; the key never goes in a file"
                .into());
        }
    }
    let concurrency = section.concurrency.unwrap_or(DEFAULT_CONCURRENCY);
    if !(1..=1024).contains(&concurrency) {
        return Err(format!("[openai] concurrency = {concurrency} must be from 1 to 1024"));
    }
    let timeout_s = section.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
    if !(timeout_s.is_finite() && timeout_s > 0.0 && timeout_s <= 86_400.0) {
        return Err(format!("[openai] timeout_s = {timeout_s} must be a positive number of seconds"));
    }
    let max_retries = section.max_retries.unwrap_or(DEFAULT_MAX_RETRIES);
    if max_retries > 100 {
        return Err(format!("[openai] max_retries = {max_retries} is more than 100"));
    }
    if section.max_tokens_total == Some(0) || section.max_tokens == Some(0) {
        return Err("[openai] max_tokens and max_tokens_total must be at least 1 (leave them out for no limit)".into());
    }
    for name in section.models.keys() {
        if Role::parse(name).is_none() {
            return Err(format!(
                "[openai] models: unknown role `{name}`; the roles are generator, reviser, judge, adjudicator"
            ));
        }
    }
    let tables = [
        (Role::Generator, section.generator),
        (Role::Reviser, section.reviser),
        (Role::Judge, section.judge),
        (Role::Adjudicator, section.adjudicator),
    ];
    let mut roles = BTreeMap::new();
    for (role, table) in tables {
        let table = table.unwrap_or_default();
        let model = match (table.model, section.models.get(role.as_str())) {
            (Some(a), Some(b)) if a != *b => {
                return Err(format!(
                    "[openai] the {role} model is given twice, as \"{b}\" in `models` and \"{a}\" in [openai.{role}]"
                ));
            }
            (Some(model), _) => Some(model),
            (None, model) => model.cloned(),
        };
        let model = match model {
            Some(model) => model,
            // The reviser is the generator unless told otherwise.
            None if role == Role::Reviser => match roles.get(&Role::Generator) {
                Some(RoleSettings { model, .. }) => model.clone(),
                None => continue,
            },
            None => {
                if table.temperature.is_some() || table.max_tokens.is_some() || table.seed.is_some() {
                    return Err(format!("[openai.{role}] has settings but no `model`"));
                }
                continue;
            }
        };
        if model.trim().is_empty() {
            return Err(format!("[openai] the {role} model name is empty"));
        }
        let temperature = table.temperature.unwrap_or(role.default_temperature());
        if !(temperature.is_finite() && (0.0..=2.0).contains(&temperature)) {
            return Err(format!("[openai.{role}] temperature = {temperature} must be from 0 to 2"));
        }
        if table.max_tokens == Some(0) {
            return Err(format!("[openai.{role}] max_tokens must be at least 1"));
        }
        let max_tokens = table.max_tokens.or(section.max_tokens);
        roles.insert(role, RoleSettings { model, temperature, max_tokens, seed: table.seed.unwrap_or(seed) });
    }
    if backend == BackendKind::Openai && !roles.contains_key(&Role::Generator) {
        return Err("backend = \"openai\" needs a generator model: [openai] models = { generator = \"...\" }".into());
    }
    if !roles.contains_key(&Role::Judge)
        && let Some(critic) = critics.iter().find(|c| c.plugin == "llm-judge")
    {
        return Err(format!(
            "critic `{}` uses the llm-judge plugin, which needs a judge model: [openai] models = {{ judge = \"...\" }}",
            critic.name
        ));
    }
    Ok(ClientSettings {
        base_url,
        api_key_env: section.api_key_env,
        concurrency,
        roles,
        timeout: std::time::Duration::from_secs_f64(timeout_s),
        max_retries,
        retry_base: std::time::Duration::from_millis(section.retry_base_ms.unwrap_or(DEFAULT_RETRY_BASE_MS)),
        max_tokens_total: section.max_tokens_total,
        cache,
    })
}

/// Removes `.` and `name/..` pairs without touching the file system, so the manifest records
/// `datasets/x.jsonl` rather than `experiments/../datasets/x.jsonl`.
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    if out.is_empty() { PathBuf::from(".") } else { out.iter().collect() }
}

/// The cross product of every `[policy]` field, each a value or a list of values.
fn policy_grid(table: &toml::Table) -> Result<Vec<Policy>, String> {
    for key in table.keys() {
        if !POLICY_KEYS.contains(&key.as_str()) {
            return Err(format!("[policy]: unknown key `{key}`; expected one of: {}", POLICY_KEYS.join(", ")));
        }
    }
    let defaults = Policy::default();
    let list = |key: &str| -> Result<Option<Vec<toml::Value>>, String> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::Array(items)) if items.is_empty() => {
                Err(format!("[policy]: `{key}` is an empty list; give at least one value"))
            }
            Some(toml::Value::Array(items)) => Ok(Some(items.clone())),
            Some(value) => Ok(Some(vec![value.clone()])),
        }
    };
    let number = |key: &str, value: &toml::Value| -> Result<f64, String> {
        let n = match value {
            toml::Value::Integer(i) => *i as f64,
            toml::Value::Float(f) => *f,
            other => return Err(format!("[policy]: `{key}` must be a number, found {}", other.type_str())),
        };
        if n.is_finite() { Ok(n) } else { Err(format!("[policy]: `{key}` must be finite")) }
    };
    let numbers = |key: &str, default: f64| -> Result<Vec<f64>, String> {
        match list(key)? {
            None => Ok(vec![default]),
            Some(values) => values.iter().map(|v| number(key, v)).collect(),
        }
    };
    let pass_scores = numbers("pass_score", defaults.pass_score)?;
    let plateau = numbers("plateau_eps", defaults.plateau_eps)?;
    if let Some(eps) = plateau.iter().find(|e| **e < 0.0) {
        return Err(format!("[policy]: `plateau_eps` = {eps} must be ≥ 0 (0 turns plateau detection off)"));
    }
    let caps: Vec<u32> = match list("max_revisions")? {
        None => vec![defaults.max_revisions],
        Some(values) => values
            .iter()
            .map(|v| match v {
                toml::Value::Integer(i) if (0..=1000).contains(i) => Ok(*i as u32),
                other => Err(format!("[policy]: `max_revisions` must be a whole number from 0 to 1000, found {other}")),
            })
            .collect::<Result<_, _>>()?,
    };
    let stalls: Vec<bool> = match list("stall")? {
        None => vec![defaults.stall],
        Some(values) => values
            .iter()
            .map(|v| v.as_bool().ok_or_else(|| format!("[policy]: `stall` must be true or false, found {v}")))
            .collect::<Result<_, _>>()?,
    };
    let targets: Vec<Option<f64>> = match list("dim_target")? {
        None => vec![None],
        Some(values) => values.iter().map(|v| number("dim_target", v).map(Some)).collect::<Result<_, _>>()?,
    };
    let finals: Vec<FinalDraft> = match list("final")? {
        None => vec![FinalDraft::Best],
        Some(values) => values
            .iter()
            .map(|v| match v.as_str() {
                Some("best") => Ok(FinalDraft::Best),
                Some("last") => Ok(FinalDraft::Last),
                _ => Err(format!("[policy]: `final` must be \"best\" or \"last\", found {v}")),
            })
            .collect::<Result<_, _>>()?,
    };
    let grid = PolicyGrid {
        pass_score: pass_scores,
        max_revisions: caps,
        stall: stalls,
        plateau_eps: plateau,
        dim_target: targets,
        final_draft: finals,
    };
    grid.policies()
        .map_err(|repeated| format!("[policy]: the value list repeats a value (config {} twice)", repeated.config_id))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use critbench_core::ScoreRange;
    use critbench_plugin_host::CriticSource;

    use super::*;

    fn load(text: &str) -> Result<Experiment, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        std::fs::write(&path, text).unwrap();
        Experiment::load(&path, &Overrides::default())
            .map_err(|e| e.to_string().replace(&dir.path().display().to_string(), "DIR"))
    }

    const MINIMAL: &str = "name = \"t\"\ndataset = \"d.jsonl\"\n[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n";

    #[test]
    fn defaults_follow_the_spec() {
        let e = load(MINIMAL).unwrap();
        assert_eq!(e.backend, BackendKind::Sim);
        assert_eq!(e.arms, Arm::DEFAULT);
        assert_eq!(e.policies, [Policy::default()]);
        assert_eq!(e.critic_attempts, 3);
        assert!(e.datasets[0].ends_with("d.jsonl") && e.datasets[0].is_absolute());
    }

    #[test]
    fn a_name_with_a_path_separator_is_refused() {
        for name in ["../../x", "a/b", "a\\b", "..", "."] {
            let error = load(&MINIMAL.replace("name = \"t\"", &format!("name = {name:?}"))).unwrap_err();
            assert!(error.contains("must not contain a path separator"), "{name}: {error}");
        }
        assert_eq!(load(&MINIMAL.replace("name = \"t\"", "name = \"a.b-c\"")).unwrap().name, "a.b-c");
    }

    #[test]
    fn paths_are_normalized_lexically() {
        assert_eq!(normalize(Path::new("experiments/../datasets/x.jsonl")), Path::new("datasets/x.jsonl"));
        assert_eq!(normalize(Path::new("./a/./b")), Path::new("a/b"));
        assert_eq!(normalize(Path::new("../x")), Path::new("../x"));
        assert_eq!(normalize(Path::new("a/..")), Path::new("."));
    }

    #[test]
    fn policy_lists_make_a_grid() {
        let e = load(&format!("{MINIMAL}[policy]\npass_score = [7, 8.5]\nmax_revisions = [1, 3, 5]\nstall = false\n"))
            .unwrap();
        let ids: Vec<String> = e.policies.iter().map(Policy::config_id).collect();
        assert_eq!(ids.len(), 6);
        assert_eq!(ids[0], "p7-r1-nostall-e0");
        assert_eq!(ids[5], "p8.5-r5-nostall-e0");
    }

    #[test]
    fn judge_table_is_optional_and_checked() {
        let e = load(MINIMAL).unwrap();
        assert_eq!(e.judge, JudgeSettings { repeats: 1, datasets: None, out: None });
        let e = load(&format!("{MINIMAL}[judge]\nrepeats = 3\ndataset = \"labeled.jsonl\"\nout = \"j\"\n")).unwrap();
        assert_eq!(e.judge.repeats, 3);
        assert!(e.judge.datasets.unwrap()[0].ends_with("labeled.jsonl"));
        assert!(e.judge.out.unwrap().is_absolute());
        assert!(load(&format!("{MINIMAL}[judge]\nrepeats = 0\n")).unwrap_err().contains("[judge]: `repeats` must be"));
        assert!(load(&format!("{MINIMAL}[judge]\nrepeat = 2\n")).unwrap_err().contains("unknown field `repeat`"));
        assert!(
            load(&format!("{MINIMAL}[judge]\ndataset = []\n")).unwrap_err().contains("[judge]: `dataset` is an empty")
        );
    }

    const OPENAI: &str = "backend = \"openai\"\nname = \"t\"\ndataset = \"d.jsonl\"\nout = \"runs/x\"\n\
        [[critics]]\nname = \"j\"\nplugin = \"llm-judge\"\n\
        [openai]\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodels = { generator = \"g\", judge = \"j\" }\n";

    #[test]
    fn openai_table_resolves_roles_limits_and_cache() {
        use critbench_openai::{CacheMode, Role};
        let e = load(OPENAI).unwrap();
        let openai = e.openai.as_ref().unwrap();
        assert_eq!(openai.concurrency, DEFAULT_CONCURRENCY);
        assert_eq!(openai.max_retries, DEFAULT_MAX_RETRIES);
        assert_eq!(openai.roles[&Role::Generator].temperature, 0.7);
        assert_eq!(openai.roles[&Role::Reviser].model, "g", "the reviser defaults to the generator's model");
        assert_eq!(openai.roles[&Role::Judge].temperature, 0.0);
        assert!(!openai.roles.contains_key(&Role::Adjudicator));
        match &openai.cache {
            CacheMode::Disk { path } => assert!(path.ends_with("runs/.critbench-cache.sqlite"), "{path:?}"),
            other => panic!("{other:?}"),
        }
        assert!(e.jobs >= DEFAULT_CONCURRENCY as usize, "workers enough to keep the requests in flight");
        let e = load(&format!(
            "{OPENAI}max_tokens = 100\ncache = \"c.sqlite\"\n[openai.judge]\ntemperature = 0.3\nseed = 9\n\
             [openai.reviser]\nmodel = \"r\"\nmax_tokens = 50\n"
        ))
        .unwrap();
        let openai = e.openai.unwrap();
        assert_eq!((openai.roles[&Role::Judge].temperature, openai.roles[&Role::Judge].seed), (0.3, 9));
        assert_eq!(openai.roles[&Role::Generator].max_tokens, Some(100));
        assert_eq!(
            (openai.roles[&Role::Reviser].model.as_str(), openai.roles[&Role::Reviser].max_tokens),
            ("r", Some(50))
        );
        assert!(matches!(&openai.cache, CacheMode::Disk { path } if path.is_absolute() && path.ends_with("c.sqlite")));

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        std::fs::write(&path, OPENAI).unwrap();
        let e = Experiment::load(&path, &Overrides { no_cache: true, ..Overrides::default() }).unwrap();
        assert_eq!(e.openai.unwrap().cache, CacheMode::Memory);
    }

    #[test]
    fn openai_mistakes_name_the_key() {
        let error = |extra: &str| load(&format!("{OPENAI}{extra}")).unwrap_err();
        assert!(error("api_key = \"x\"\n").contains("unknown field `api_key`"));
        assert!(error("api_key_env = \"sk-abc123-def\"\n").contains("not the key itself"));
        assert!(!error("api_key_env = \"sk-abc123-def\"\n").contains("sk-abc123"), "a pasted key is not echoed");
        assert!(error("concurrency = 0\n").contains("concurrency = 0 must be from 1 to 1024"));
        assert!(error("timeout_s = -1\n").contains("timeout_s"));
        assert!(error("[openai.critic]\nmodel = \"m\"\n").contains("unknown field `critic`"));
        assert!(error("[openai.judge]\nmodel = \"other\"\n").contains("the judge model is given twice"));
        assert!(error("[openai.judge]\ntemperature = 3\n").contains("temperature = 3 must be from 0 to 2"));
        assert!(error("[openai.adjudicator]\ntemperature = 0.1\n").contains("has settings but no `model`"));
        assert!(error("[openai.generator]\ntopp = 1\n").contains("unknown field `topp`"));
        let e = load(&OPENAI.replace("models = { generator = \"g\", judge = \"j\" }", "models = { generatr = \"g\" }"))
            .unwrap_err();
        assert!(e.contains("unknown role `generatr`"), "{e}");
        let e = load(&OPENAI.replace(", judge = \"j\"", "")).unwrap_err();
        assert!(e.contains("critic `j` uses the llm-judge plugin, which needs a judge model"), "{e}");
        let e = load(&OPENAI.replace("generator = \"g\", ", "")).unwrap_err();
        assert!(e.contains("needs a generator model"), "{e}");
        let e = load(&OPENAI.replace("http://127", "http://me:secret@127")).unwrap_err();
        assert!(e.contains("must not carry credentials") && !e.contains("secret"), "{e}");
        let e = load(&OPENAI.replace("http://127", "ftp://127")).unwrap_err();
        assert!(e.contains("must start with http:// or https://"), "{e}");
    }

    #[test]
    fn prompts_table_overrides_and_is_checked() {
        let e = load(&format!("{MINIMAL}[prompts]\ngenerator = \"Do: {{prompt}}\"\n")).unwrap();
        assert_eq!(e.prompts.generator, "Do: {prompt}");
        assert_eq!(e.prompts.reviser_blind, crate::prompts::Prompts::default().reviser_blind);
        assert!(load(&format!("{MINIMAL}[prompts]\ncritic = \"x\"\n")).unwrap_err().contains("unknown field `critic`"));
        assert!(
            load(&format!("{MINIMAL}[prompts]\nreviser_feedback = \"{{draft}} {{critique}}\"\n"))
                .unwrap_err()
                .contains("[prompts] reviser_feedback: unknown placeholder {critique}")
        );
    }

    #[test]
    fn critics_run_in_process_unless_told_otherwise() {
        let e = load(MINIMAL).unwrap();
        let critic = &e.critics[0];
        assert_eq!(critic.isolation, IsolationMode::InProcess);
        assert_eq!((critic.timeout_s, critic.memory_mb), (60.0, 4096));
        assert_eq!(critic.source(), CriticSource::Plugin("rubric".into()));
        let isolation = critic.isolation(3);
        assert_eq!(
            (isolation.children, isolation.timeout, isolation.memory_mb),
            (3, Duration::from_secs(60), Some(4096))
        );

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        let text = format!(
            "{MINIMAL}[[critics]]\nname = \"kept\"\nplugin = \"rubric\"\nisolation = \"in-process\"\n\
             [[critics]]\nname = \"py\"\ncommand = [\"python3\", \"c.py\"]\ntimeout_s = 2.5\nmemory_mb = 128\n"
        );
        std::fs::write(&path, text).unwrap();
        let flagged = Experiment::load(&path, &Overrides { isolate_plugins: true, ..Overrides::default() }).unwrap();
        let modes: Vec<IsolationMode> = flagged.critics.iter().map(|c| c.isolation).collect();
        assert_eq!(modes, [IsolationMode::Process, IsolationMode::InProcess, IsolationMode::Process]);
        let py = &flagged.critics[2];
        assert_eq!(py.source(), CriticSource::Command(vec!["python3".into(), "c.py".into()]));
        assert_eq!((py.timeout_s, py.memory_mb, py.plugin.as_str()), (2.5, 128, ""));
    }

    #[test]
    fn critic_isolation_mistakes_name_the_key() {
        let critic =
            |extra: &str| load(&format!("name = \"t\"\ndataset = \"d\"\n[[critics]]\nname = \"c\"\n{extra}\n"));
        for (extra, expected) in [
            ("plugin = \"rubric\"\nisolation = \"thread\"", "critics[0]: `isolation` = \"thread\" is not known"),
            ("plugin = \"rubric\"\ntimeout_s = 0", "critics[0]: `timeout_s` = 0 must be more than 0"),
            ("plugin = \"rubric\"\ntimeout_s = nan", "critics[0]: `timeout_s` = NaN must be more than 0"),
            ("plugin = \"rubric\"\nmemory_mb = 1", "critics[0]: `memory_mb` = 1 must be from 16 to 1048576"),
            ("command = []", "critics[0]: `command` must start with a program"),
            ("", "critics[0]: give `plugin` (a built-in name or a shared library) or `command`"),
        ] {
            let e = critic(extra).unwrap_err();
            assert!(e.contains(expected), "{extra}: {e}");
        }
    }

    #[test]
    fn pass_scores_outside_a_critics_range_are_refused() {
        let e = load(&format!("{MINIMAL}[policy]\npass_score = [8, 10, 10.5]\n")).unwrap();
        let range = ScoreRange { min: 0.0, max: 10.0 };
        assert_eq!(
            e.critics[0].check_pass_scores(range, &e.policies).unwrap_err().to_string(),
            "critic `r`: [policy] pass_score = 10.5 is outside the critic's score range 0–10; give a pass_score from 0 to 10"
        );
        assert!(e.critics[0].check_pass_scores(ScoreRange { min: 0.0, max: 11.0 }, &e.policies).is_ok());
    }

    #[test]
    fn bad_files_name_the_key() {
        assert!(load(&format!("colour = 3\n{MINIMAL}")).unwrap_err().contains("unknown field `colour`"));
        assert!(
            load(&format!("{MINIMAL}[policy]\nthreshold = 3\n"))
                .unwrap_err()
                .contains("[policy]: unknown key `threshold`")
        );
        assert!(
            load(&format!("{MINIMAL}[policy]\npass_score = []\n"))
                .unwrap_err()
                .contains("`pass_score` is an empty list")
        );
        assert!(
            load(&format!("{MINIMAL}[policy]\nmax_revisions = -1\n"))
                .unwrap_err()
                .contains("`max_revisions` must be a whole number")
        );
        assert!(
            load(&format!("arms = [\"feedback\", \"blind\"]\n{MINIMAL}"))
                .unwrap_err()
                .contains("\"blind\" is not an arm")
        );
        assert!(
            load(&format!("backend = \"gpt\"\n{MINIMAL}")).unwrap_err().contains("`backend` = \"gpt\" is not known")
        );
        assert!(load("name = \"t\"\ndataset = \"d\"\ncritics = []\n").unwrap_err().contains("no critics"));
        let e = load("name = \"t\"\n[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n").unwrap_err();
        assert!(e.starts_with("DIR/x.toml: `dataset` is missing"), "{e}");
        assert!(load(&format!("epochs = \"two\"\n{MINIMAL}")).unwrap_err().contains("line 1"));
    }
}
