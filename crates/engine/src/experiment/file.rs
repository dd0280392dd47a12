//! The experiment file as written: TOML tables, before validation and resolution.

use super::*;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ExperimentFile {
    pub(super) name: String,
    #[serde(default)]
    pub(super) dataset: Option<OneOrMany<String>>,
    #[serde(default = "default_backend")]
    pub(super) backend: String,
    #[serde(default)]
    pub(super) arms: Option<Vec<String>>,
    /// `true`, `false` or a list of arms: see `resolve::adjudicated_arms`.
    #[serde(default)]
    pub(super) adjudicate: Option<toml::Value>,
    #[serde(default = "one")]
    pub(super) epochs: u32,
    #[serde(default)]
    pub(super) seed: u64,
    #[serde(default)]
    pub(super) out: Option<String>,
    #[serde(default = "default_attempts")]
    pub(super) critic_attempts: u32,
    #[serde(default)]
    pub(super) store_drafts: bool,
    #[serde(default)]
    pub(super) plugin_dirs: Vec<String>,
    #[serde(default)]
    pub(super) on_bad_row: Option<String>,
    pub(super) critics: Vec<CriticEntry>,
    #[serde(default)]
    pub(super) evaluators: Vec<EvaluatorEntry>,
    #[serde(default)]
    pub(super) policy: toml::Table,
    #[serde(default)]
    pub(super) sweep: Option<String>,
    #[serde(default)]
    pub(super) memory: Option<MemorySection>,
    #[serde(default)]
    pub(super) openai: Option<critbench_openai::OpenAiTable>,
    #[serde(default)]
    pub(super) prompts: Option<critbench_openai::prompts::Prompts>,
    #[serde(default)]
    pub(super) judge: Option<JudgeSection>,
    #[serde(default)]
    pub(super) sequential: Option<SequentialSection>,
    /// `currency` and one `[pricing."MODEL"]` table per model: see `pricing`.
    #[serde(default)]
    pub(super) pricing: Option<toml::Table>,
    #[serde(default)]
    pub(super) budget: Option<BudgetSection>,
    #[serde(default)]
    pub(super) writer: Option<WriterSection>,
    #[serde(default)]
    pub(super) sim_truth: Option<bool>,
    /// The evaluator that plays the `oracle` arm's oracle: see `resolve::oracle_evaluator`.
    #[serde(default)]
    pub(super) oracle: Option<String>,
}

/// `[writer]`: the programs of `backend = "command"` (see `resolve::writer_spec`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WriterSection {
    #[serde(default)]
    pub(super) command: Option<Vec<String>>,
    #[serde(default)]
    pub(super) generator: Option<Vec<String>>,
    #[serde(default)]
    pub(super) reviser: Option<Vec<String>>,
    #[serde(default)]
    pub(super) processes: Option<usize>,
    #[serde(default)]
    pub(super) timeout_s: Option<f64>,
    #[serde(default)]
    pub(super) memory_mb: Option<u64>,
    #[serde(default)]
    pub(super) in_flight: Option<usize>,
    #[serde(default)]
    pub(super) config: Option<toml::Value>,
    #[serde(default)]
    pub(super) env: Vec<String>,
}

/// `[sequential]`: see `super::sequential`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SequentialSection {
    pub(super) arms: Vec<String>,
    #[serde(default)]
    pub(super) confidence: Option<f64>,
    #[serde(default)]
    pub(super) margin: Option<f64>,
    #[serde(default)]
    pub(super) min_tasks: Option<u64>,
    #[serde(default)]
    pub(super) check_every: Option<u64>,
    #[serde(default)]
    pub(super) max_tasks: Option<u64>,
    #[serde(default)]
    pub(super) decides: Option<DecidesSection>,
}

/// `[sequential.decides]`: the one comparison whose verdict stops the run.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DecidesSection {
    #[serde(default)]
    pub(super) config: Option<String>,
    #[serde(default)]
    pub(super) critic: Option<String>,
}

/// `[budget]`: what the run may spend, in all and per role.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BudgetSection {
    #[serde(default)]
    pub(super) max_cost: Option<f64>,
    #[serde(default)]
    pub(super) roles: BTreeMap<String, f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct JudgeSection {
    #[serde(default = "one")]
    pub(super) repeats: u32,
    #[serde(default)]
    pub(super) dataset: Option<OneOrMany<String>>,
    #[serde(default)]
    pub(super) out: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MemorySection {
    #[serde(default)]
    pub(super) learn_fraction: Option<f64>,
    #[serde(default)]
    pub(super) min_count: Option<u32>,
    #[serde(default)]
    pub(super) hints: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CriticEntry {
    pub(super) name: String,
    #[serde(default)]
    pub(super) plugin: Option<String>,
    #[serde(default)]
    pub(super) command: Option<Vec<String>>,
    #[serde(default)]
    pub(super) isolation: Option<String>,
    #[serde(default)]
    pub(super) timeout_s: Option<f64>,
    #[serde(default)]
    pub(super) memory_mb: Option<u64>,
    #[serde(default)]
    pub(super) kinds: Option<Vec<String>>,
    #[serde(default)]
    pub(super) config: Option<toml::Value>,
    #[serde(default)]
    pub(super) weights: Option<BTreeMap<String, f64>>,
    #[serde(default)]
    pub(super) env: Vec<String>,
}

/// An `[[evaluators]]` table: a critic's keys, and the pass rule its verdicts are read with (a
/// critic's pass rule is the `[policy]`'s).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EvaluatorEntry {
    pub(super) name: String,
    #[serde(default)]
    pub(super) plugin: Option<String>,
    #[serde(default)]
    pub(super) command: Option<Vec<String>>,
    #[serde(default)]
    pub(super) isolation: Option<String>,
    #[serde(default)]
    pub(super) timeout_s: Option<f64>,
    #[serde(default)]
    pub(super) memory_mb: Option<u64>,
    #[serde(default)]
    pub(super) kinds: Option<Vec<String>>,
    #[serde(default)]
    pub(super) config: Option<toml::Value>,
    #[serde(default)]
    pub(super) weights: Option<BTreeMap<String, f64>>,
    #[serde(default)]
    pub(super) pass_score: Option<f64>,
    #[serde(default)]
    pub(super) dim_target: Option<f64>,
    #[serde(default)]
    pub(super) rounds: Option<String>,
    #[serde(default)]
    pub(super) env: Vec<String>,
}

impl EvaluatorEntry {
    /// The critic it is, and its pass rule (the entry's `rounds` is read before).
    pub(super) fn split(self) -> (CriticEntry, Option<f64>, Option<f64>) {
        let critic = CriticEntry {
            name: self.name,
            plugin: self.plugin,
            command: self.command,
            isolation: self.isolation,
            timeout_s: self.timeout_s,
            memory_mb: self.memory_mb,
            kinds: self.kinds,
            config: self.config,
            weights: self.weights,
            env: self.env,
        };
        (critic, self.pass_score, self.dim_target)
    }
}

pub(super) fn default_backend() -> String {
    "sim".into()
}
pub(super) fn one() -> u32 {
    1
}
pub(super) fn default_attempts() -> u32 {
    critbench_plugin_host::DEFAULT_ATTEMPTS
}
