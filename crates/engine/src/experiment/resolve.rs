//! An experiment file validated and resolved against the command line into an [`Experiment`].

use super::file::{ExperimentFile, OneOrMany};
use super::grid::PolicyError;
use super::grid::policy_grid;
use super::pricing::PricingError;
use super::sequential::SequentialError;
use super::*;
use crate::experiment::limits::{self, LimitError};

/// An evaluator's `rounds` by default: the first draft and the final answers.
const FIRST_AND_FINAL: &str = "first and final";

/// Valid TOML whose settings do not fit together: each message names the key at fault and says
/// what to give instead.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// `name` is empty.
    #[error("`name` must not be empty")]
    EmptyName,
    /// `name` is not one path component.
    #[error(
        "`name` = {0:?} must not contain a path separator or be `.` or `..` (the run is written to reports/NAME \
         unless `out` says otherwise; set `out` to write elsewhere)"
    )]
    NameIsAPath(String),
    /// `dataset = []`.
    #[error("`dataset` is an empty list; give at least one path")]
    NoDatasets,
    /// No `dataset` and no `--dataset`.
    #[error("`dataset` is missing; give a path (or pass --dataset PATH)")]
    MissingDataset,
    /// A `backend` that is not one.
    #[error("`backend` = \"{0}\" is not known; use \"sim\", \"scripted\", \"openai\" or \"command\"")]
    UnknownBackend(String),
    /// `backend = "openai"` without an `[openai]` table.
    #[error("`backend` = \"openai\" needs an [openai] section with `base_url`")]
    OpenaiWithoutTable,
    /// `backend = "command"` without a `[writer]` table.
    #[error(
        "`backend` = \"command\" needs a [writer] section: `command` = [\"python3\", \"writer.py\"] (one program for \
         first drafts and revisions), or `generator` and `reviser`"
    )]
    CommandWithoutWriter,
    /// `sim_truth = true`, or the `sim-truth` plugin, with a backend other than the simulator.
    #[error(
        "{at}: the `sim-truth` evaluator judges the simulated writer's hidden truth, which only `backend` = \"sim\" \
         keeps; remove it, or run on the simulator"
    )]
    SimTruthBackend {
        /// `sim_truth` or `evaluators[N]`.
        at: String,
    },
    /// The `sim-truth` plugin as a critic that steers loops.
    #[error(
        "{at}: `sim-truth` is a held-out evaluator, not a critic: it reads the simulator's hidden truth, which no \
         critic may see; list it under [[evaluators]] (a `sim` run has it there unless `sim_truth` = false)"
    )]
    SimTruthAsCritic {
        /// `critics[N]`.
        at: String,
    },
    /// The name the default `sim-truth` evaluator takes is a critic's or evaluator's already.
    #[error(
        "the name \"sim-truth\" is taken by another critic or evaluator, and a `sim` run adds the `sim-truth` \
         evaluator under it; rename yours, or set `sim_truth` = false"
    )]
    SimTruthName,
    /// A `[writer]` table with another backend.
    #[error("a [writer] section is read only with `backend` = \"command\"; set it, or remove [writer]")]
    WriterWithoutCommand,
    /// A `[writer]` table that is wrong.
    #[error("[writer]: {0}")]
    Writer(#[from] WriterProblem),
    /// `arms = []`.
    #[error("`arms` is empty; use any of \"feedback\", \"no-feedback\", \"single\"")]
    NoArms,
    /// An evaluator's `rounds` that is neither value.
    #[error("{at}: `rounds` = \"{value}\"; use \"all\" (every recorded draft) or \"first and final\" (the default)")]
    EvaluatedRounds {
        /// `evaluators[N]`.
        at: String,
        /// What the file says.
        value: String,
    },
    /// An entry of `arms` that is not an arm.
    #[error(
        "`arms`: \"{0}\" is not an arm; use \"feedback\", \"no-feedback\", \"single\", \"feedback+memory\", \
         \"placebo\", \"resample\" or \"oracle\""
    )]
    UnknownArm(String),
    /// The `oracle` arm where nothing knows the answer: no simulator truth and no `oracle` key.
    #[error(
        "`arms`: \"oracle\" needs an oracle, a critic that knows the answer, and `backend` = \"{0}\" keeps no hidden \
         truth to play it; set `oracle` = \"NAME\" to the name of the [[evaluators]] table that plays it, or remove \
         \"oracle\" from `arms`"
    )]
    NoOracle(&'static str),
    /// `oracle = "NAME"` naming no evaluator.
    #[error("`oracle` = {name:?} names no [[evaluators]] table; give the `name` of one: {known}")]
    UnknownOracle {
        /// The name given.
        name: String,
        /// The evaluators' names, for the message (or that there is none).
        known: String,
    },
    /// `oracle = "NAME"` without the `oracle` arm.
    #[error("`oracle` = {0:?} is unused: `arms` has no \"oracle\"; add \"oracle\" to `arms`, or remove `oracle`")]
    UnusedOracle(String),
    /// An oracle evaluator whose `kinds` leave out tasks a critic takes.
    #[error(transparent)]
    OracleKinds(Box<OracleKinds>),

    /// An arm twice in `arms`.
    #[error("`arms`: \"{0}\" is listed twice")]
    RepeatedArm(String),
    /// `epochs = 0`.
    #[error("`epochs` must be at least 1")]
    NoEpochs,
    /// `critic_attempts = 0`.
    #[error("`critic_attempts` must be at least 1")]
    NoCriticAttempts,
    /// No `[[critics]]` table.
    #[error("no critics: add at least one [[critics]] table with `name` and `plugin`")]
    NoCritics,
    /// A `[[critics]]` or `[[evaluators]]` table that does not make a critic.
    #[error("{at}: {problem}")]
    Critic {
        /// `critics[i]` or `evaluators[i]`.
        at: String,
        /// What is wrong with it.
        #[source]
        problem: CriticProblem,
    },
    /// An evaluator's pass rule that is not finite.
    #[error("{at}: `pass_score` and `dim_target` must be finite numbers, not {value}")]
    PassRule {
        /// `evaluators[i]`.
        at: String,
        /// The value given.
        value: f64,
    },
    /// `[judge] repeats` out of range.
    #[error("[judge]: `repeats` must be from 1 to {max}", max = MAX_JUDGE_REPEATS)]
    JudgeRepeats,
    /// `[judge] dataset = []`.
    #[error("[judge]: `dataset` is an empty list; give at least one path")]
    NoJudgeDatasets,
    /// `[memory] learn_fraction` outside (0, 1).
    #[error("[memory]: `learn_fraction` = {0} must be between 0 and 1 (exclusive)")]
    LearnFraction(f64),
    /// `[memory] min_count = 0`.
    #[error("[memory]: `min_count` must be at least 1")]
    NoMinCount,
    /// A `sweep` that is not one.
    #[error("`sweep` = \"{0}\"; use \"replay\" or \"direct\"")]
    UnknownSweep(String),
    /// An `on_bad_row` that is not one.
    #[error("`on_bad_row` = \"{0}\"; use \"error\" or \"skip\"")]
    UnknownOnBadRow(String),
    /// An `adjudicate` that is not `true`, `false` or a list of arms.
    #[error(transparent)]
    Adjudicate(#[from] AdjudicateError),
    /// Past a bound on what one task's loops may hold (`limits`).
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// The `[policy]` table.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The `[openai]` table.
    #[error(transparent)]
    Openai(#[from] critbench_openai::SettingsError),
    /// The `[prompts]` table.
    #[error(transparent)]
    Prompts(#[from] critbench_openai::prompts::PromptError),
    /// `[pricing]`, `--pricing FILE` or `[budget]`.
    #[error(transparent)]
    Pricing(#[from] PricingError),
    /// The `[sequential]` table.
    #[error(transparent)]
    Sequential(#[from] SequentialError),
}

/// The evaluator `oracle` names takes only some kinds of task, and a critic takes others: the
/// `oracle` arm's drafts of those would have no oracle.
#[derive(Debug, thiserror::Error)]
#[error(
    "`oracle` = {name:?}: the evaluator takes only `kinds` = [{kinds}], but critic `{critic}` takes {takes}; the \
     oracle critiques every draft of the `oracle` arm, so give it every kind the critics take (or no `kinds`)"
)]
pub struct OracleKinds {
    /// The evaluator's name.
    pub name: String,
    /// The kinds it takes.
    pub kinds: String,
    /// A critic that takes a task it does not.
    pub critic: String,
    /// What that critic takes: `(any)` or its kinds.
    pub takes: String,
}

/// What is wrong with one `[[critics]]` or `[[evaluators]]` table (its place is the
/// [`ResolveError::Critic`] around it).
#[derive(Debug, thiserror::Error)]
pub enum CriticProblem {
    /// An empty `name`.
    #[error("`name` must not be empty")]
    EmptyName,
    /// A name that would break a line of the reports ([`super::name_problem`]).
    #[error(
        "`name` = {name:?} holds {problem}; the name labels rows, tables and report lines: give one without control \
         characters or `|`"
    )]
    BadName {
        /// The name given.
        name: String,
        /// What in it would break a report line.
        problem: String,
    },
    /// A name given to another critic or evaluator.
    #[error("the name \"{0}\" is used twice (critics and evaluators share names); names label the outputs")]
    NameTwice(String),
    /// Both `plugin` and `command`.
    #[error("give either `plugin` or `command`, not both")]
    PluginAndCommand,
    /// Neither `plugin` nor `command`.
    #[error(
        "give `plugin` (a built-in name or a shared library) or `command` (an executable speaking the JSON-lines \
         protocol)"
    )]
    NoPlugin,
    /// An empty `plugin`.
    #[error("`plugin` must not be empty")]
    EmptyPlugin,
    /// A `command` without a program.
    #[error("`command` must start with a program, e.g. [\"python3\", \"critic.py\"]")]
    NoProgram,
    /// An `isolation` that is not one.
    #[error("`isolation` = \"{0}\" is not known; use \"in-process\" or \"process\"")]
    UnknownIsolation(String),
    /// A `command` critic asked to run in-process.
    #[error("a `command` critic runs in its own process; remove `isolation` = \"in-process\"")]
    CommandInProcess,
    /// A `timeout_s` out of range.
    #[error("`timeout_s` = {0} must be more than 0 and at most {max}", max = MAX_TIMEOUT_S)]
    Timeout(f64),
    /// A weight that is negative or not finite.
    #[error("`weights`: {dimension} = {weight} must be a finite number ≥ 0")]
    Weight {
        /// The dimension weighted.
        dimension: String,
        /// The weight given.
        weight: f64,
    },
    /// A `memory_mb` out of range.
    #[error("`memory_mb` = {0} must be from {min} to {max}", min = MIN_MEMORY_MB, max = MAX_MEMORY_MB)]
    Memory(u64),
    /// `kinds = []`.
    #[error("`kinds` is empty, so no task would reach this critic; remove it to take every task")]
    NoKinds,
    /// A `config` that has no JSON form.
    #[error("`config`: {0}")]
    Config(#[source] serde_json::Error),
    /// An `env` entry that is no variable name.
    #[error("{0}")]
    Env(EnvNameProblem),
}

/// An `env` entry that is not the name of an environment variable.
#[derive(Debug, thiserror::Error)]
#[error(
    "`env`: {0:?} is not a variable name (letters, digits and `_`, not starting with a digit); `env` lists the \
     names of critbench's environment variables the program is given"
)]
pub struct EnvNameProblem(pub String);

/// `env` checked: every entry a variable name.
fn env_names(env: Vec<String>) -> Result<Vec<String>, EnvNameProblem> {
    let valid = |name: &str| {
        name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    match env.iter().find(|name| !valid(name)) {
        Some(name) => Err(EnvNameProblem(name.clone())),
        None => Ok(env),
    }
}

/// What is wrong with a `[writer]` table.
#[derive(Debug, thiserror::Error)]
pub enum WriterProblem {
    /// Neither `command` nor `generator`, or both.
    #[error(
        "give `command` (one program writes first drafts and revisions) or `generator` and `reviser` (a program \
         each), not both"
    )]
    Programs,
    /// `generator` without `reviser`, or the reverse.
    #[error("give `generator` and `reviser` together, or `command` for one program that does both")]
    HalfPair,
    /// A command without a program.
    #[error("`{0}` must start with a program, e.g. [\"python3\", \"writer.py\"]")]
    NoProgram(&'static str),
    /// `processes = 0`.
    #[error("`processes` = 0: give at least 1, or leave it out for one per worker thread")]
    NoProcesses,
    /// A `timeout_s` out of range.
    #[error("`timeout_s` = {0} must be more than 0 and at most {max}", max = MAX_TIMEOUT_S)]
    Timeout(f64),
    /// A `memory_mb` out of range.
    #[error("`memory_mb` = {0} must be from {min} to {max}", min = MIN_MEMORY_MB, max = MAX_MEMORY_MB)]
    Memory(u64),
    /// A `config` that has no JSON form.
    #[error("`config`: {0}")]
    Config(#[source] serde_json::Error),
    /// An `in_flight` out of range.
    #[error("`in_flight` = {0} must be from 1 to {max}", max = MAX_WRITER_IN_FLIGHT)]
    InFlight(usize),
    /// An `env` entry that is no variable name.
    #[error("{0}")]
    Env(EnvNameProblem),
}

/// The most requests a pipelined writer may have in flight at once.
const MAX_WRITER_IN_FLIGHT: usize = 65_536;

/// The `[writer]` table checked. Its commands stay as written: like a command critic's, they are
/// resolved against the experiment file's folder when the run starts them.
fn writer_spec(section: super::file::WriterSection) -> Result<WriterSpec, WriterProblem> {
    let (generator, reviser) = match (section.command, section.generator, section.reviser) {
        (Some(command), None, None) => (("command", command), None),
        (None, Some(generator), Some(reviser)) => (("generator", generator), Some(("reviser", reviser))),
        (None, Some(_), None) | (None, None, Some(_)) => return Err(WriterProblem::HalfPair),
        _ => return Err(WriterProblem::Programs),
    };
    for (key, command) in std::iter::once(&generator).chain(&reviser) {
        if command.first().is_none_or(|p| p.trim().is_empty()) {
            return Err(WriterProblem::NoProgram(key));
        }
    }
    if section.processes == Some(0) {
        return Err(WriterProblem::NoProcesses);
    }
    let timeout_s = section.timeout_s.unwrap_or(critbench_plugin_host::DEFAULT_TIMEOUT.as_secs_f64());
    if !(timeout_s.is_finite() && timeout_s > 0.0 && timeout_s <= MAX_TIMEOUT_S) {
        return Err(WriterProblem::Timeout(timeout_s));
    }
    let memory_mb = section.memory_mb.unwrap_or(critbench_plugin_host::DEFAULT_MEMORY_MB);
    if !(MIN_MEMORY_MB..=MAX_MEMORY_MB).contains(&memory_mb) {
        return Err(WriterProblem::Memory(memory_mb));
    }
    let in_flight = section.in_flight.unwrap_or(critbench_plugin_host::writer::DEFAULT_IN_FLIGHT);
    if !(1..=MAX_WRITER_IN_FLIGHT).contains(&in_flight) {
        return Err(WriterProblem::InFlight(in_flight));
    }
    let config = match section.config {
        None => serde_json::json!({}),
        Some(value) => serde_json::to_value(value).map_err(WriterProblem::Config)?,
    };
    let env = env_names(section.env).map_err(WriterProblem::Env)?;
    Ok(WriterSpec {
        generator: generator.1,
        reviser: reviser.map(|(_, command)| command),
        processes: section.processes,
        timeout_s,
        memory_mb,
        in_flight,
        config,
        env,
    })
}

/// An `adjudicate` key that names arms wrongly, or asks for an adjudicator that does not exist.
#[derive(Debug, thiserror::Error)]
pub enum AdjudicateError {
    /// A list entry that is not a string.
    #[error("`adjudicate`: {0} is not an arm name; give true, false or a list of arms")]
    NotAName(toml::Value),
    /// An arm the experiment does not run.
    #[error("`adjudicate`: \"{0}\" is not one of the experiment's `arms`")]
    UnknownArm(String),
    /// An arm twice.
    #[error("`adjudicate`: \"{0}\" is listed twice")]
    RepeatedArm(String),
    /// A value that is neither a boolean nor a list.
    #[error("`adjudicate` = {0}; give true (every arm), false, or a list of arms such as [\"feedback\"]")]
    NotArms(toml::Value),
    /// Adjudication on the scripted backend.
    #[error(
        "`adjudicate`: the scripted backend has no adjudicator model (it only replays the dataset's `drafts`); use \
         the sim or openai backend"
    )]
    Scripted,
    /// Adjudication on the openai backend without an adjudicator model.
    #[error(
        "`adjudicate` needs an adjudicator model: set [openai.adjudicator] model = \"...\" (or `adjudicator` in \
         [openai] models)"
    )]
    NoModel,
    /// An adjudicator model that no arm uses.
    #[error(
        "[openai]: an adjudicator model is set but no arm adjudicates; set `adjudicate = true` (or a list of arms), \
         or remove the adjudicator model"
    )]
    Unused,
}

/// Why an experiment file cannot be loaded ([`Experiment::load`]): the file, and what is wrong
/// with it. The user's to fix (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct ExperimentError {
    /// The experiment file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: ExperimentProblem,
}

impl ExperimentError {
    /// Whether the user can fix this by changing their input (exit status 2): always, the file is
    /// theirs.
    pub fn is_usage(&self) -> bool {
        true
    }
}

/// What is wrong with an experiment file.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentProblem {
    /// The file cannot be read.
    #[error("cannot read the experiment file: {0}")]
    Unreadable(#[source] std::io::Error),
    /// Not TOML, or a key or value the file format does not allow; `line` is 1-based.
    #[error("{}", error.to_string().trim_end())]
    Toml {
        /// Where the parser stopped, when it says.
        line: Option<usize>,
        /// The parser's error.
        error: Box<toml::de::Error>,
    },
    /// Valid TOML whose settings do not fit together.
    #[error(transparent)]
    Invalid(#[from] ResolveError),
}

impl ExperimentProblem {
    /// The line of the file at fault, when known.
    pub fn line(&self) -> Option<usize> {
        match self {
            ExperimentProblem::Toml { line, .. } => *line,
            _ => None,
        }
    }
}

impl Experiment {
    pub(super) fn resolve(
        file: ExperimentFile,
        base: &Path,
        overrides: &Overrides,
    ) -> Result<Experiment, ResolveError> {
        let relative = |p: &str| -> PathBuf {
            let path = PathBuf::from(p);
            if path.is_absolute() { path } else { normalize(&base.join(path)) }
        };
        if file.name.trim().is_empty() {
            return Err(ResolveError::EmptyName);
        }
        // The name is a directory under reports/ (and labels the run): one path component.
        if file.name.contains(['/', '\\']) || file.name == "." || file.name == ".." {
            return Err(ResolveError::NameIsAPath(file.name));
        }
        let datasets: Vec<PathBuf> = if !overrides.datasets.is_empty() {
            overrides.datasets.clone()
        } else {
            match file.dataset {
                Some(OneOrMany::One(p)) => vec![relative(&p)],
                Some(OneOrMany::Many(ps)) if !ps.is_empty() => ps.iter().map(|p| relative(p)).collect(),
                Some(OneOrMany::Many(_)) => return Err(ResolveError::NoDatasets),
                None => return Err(ResolveError::MissingDataset),
            }
        };
        let backend = match file.backend.as_str() {
            "sim" => BackendKind::Sim,
            "scripted" => BackendKind::Scripted,
            "openai" => BackendKind::Openai,
            "command" => BackendKind::Command,
            other => return Err(ResolveError::UnknownBackend(other.to_string())),
        };
        if backend == BackendKind::Openai && file.openai.is_none() {
            return Err(ResolveError::OpenaiWithoutTable);
        }
        let writer = match (backend, file.writer) {
            (BackendKind::Command, Some(section)) => Some(writer_spec(section)?),
            (BackendKind::Command, None) => return Err(ResolveError::CommandWithoutWriter),
            (_, Some(_)) => return Err(ResolveError::WriterWithoutCommand),
            (_, None) => None,
        };
        let arm_names = file.arms.unwrap_or_else(|| Arm::DEFAULT.iter().map(|a| a.as_str().to_string()).collect());
        if arm_names.is_empty() {
            return Err(ResolveError::NoArms);
        }
        let mut arms = Vec::new();
        for name in &arm_names {
            let arm = Arm::parse(name).ok_or_else(|| ResolveError::UnknownArm(name.clone()))?;
            if arms.contains(&arm) {
                return Err(ResolveError::RepeatedArm(name.clone()));
            }
            arms.push(arm);
        }
        if file.epochs == 0 {
            return Err(ResolveError::NoEpochs);
        }
        if file.epochs > limits::MAX_EPOCHS {
            return Err(LimitError::Epochs(file.epochs.into()).into());
        }
        if file.critic_attempts == 0 {
            return Err(ResolveError::NoCriticAttempts);
        }
        if file.critics.is_empty() {
            return Err(ResolveError::NoCritics);
        }
        let mut labels = BTreeSet::new();
        let mut critics = Vec::new();
        for (index, entry) in file.critics.into_iter().enumerate() {
            let at = format!("critics[{index}]");
            let spec = critic_spec(entry, &mut labels, overrides.isolate_plugins, &relative)
                .map_err(|problem| ResolveError::Critic { at: at.clone(), problem })?;
            if spec.plugin == SIM_TRUTH {
                return Err(ResolveError::SimTruthAsCritic { at });
            }
            critics.push(spec);
        }
        let mut evaluators = Vec::new();
        for (index, entry) in file.evaluators.into_iter().enumerate() {
            let at = format!("evaluators[{index}]");
            let all_rounds = match entry.rounds.as_deref() {
                None | Some(FIRST_AND_FINAL) => false,
                Some("all") => true,
                Some(other) => return Err(ResolveError::EvaluatedRounds { at, value: other.to_string() }),
            };
            let (entry, pass_score, dim_target) = entry.split();
            let pass_score = pass_score.unwrap_or(Policy::default().pass_score);
            if let Some(value) = std::iter::once(pass_score).chain(dim_target).find(|v| !v.is_finite()) {
                return Err(ResolveError::PassRule { at, value });
            }
            let spec = critic_spec(entry, &mut labels, overrides.isolate_plugins, &relative)
                .map_err(|problem| ResolveError::Critic { at: at.clone(), problem })?;
            if spec.plugin == SIM_TRUTH && backend != BackendKind::Sim {
                return Err(ResolveError::SimTruthBackend { at });
            }
            let defect_types = if spec.plugin == SIM_TRUTH { documented_defects() } else { Vec::new() };
            evaluators.push(EvaluatorSpec { spec, pass_score, dim_target, all_rounds, defect_types });
        }
        let sim_truth = file.sim_truth.unwrap_or(backend == BackendKind::Sim);
        if sim_truth && backend != BackendKind::Sim {
            return Err(ResolveError::SimTruthBackend { at: "`sim_truth` = true".into() });
        }
        if sim_truth && !evaluators.iter().any(|e| e.spec.plugin == SIM_TRUTH) {
            if !labels.insert(SIM_TRUTH.to_string()) {
                return Err(ResolveError::SimTruthName);
            }
            evaluators.push(sim_truth_evaluator());
        }
        let oracle = oracle_evaluator(file.oracle, &arms, backend, &critics, &evaluators)?;
        let policies = policy_grid(&file.policy)?;
        let judge = match file.judge {
            None => JudgeSettings { repeats: 1, datasets: None, out: None },
            Some(section) => {
                if !(1..=MAX_JUDGE_REPEATS).contains(&section.repeats) {
                    return Err(ResolveError::JudgeRepeats);
                }
                let datasets = match section.dataset {
                    None => None,
                    Some(OneOrMany::One(p)) => Some(vec![relative(&p)]),
                    Some(OneOrMany::Many(ps)) if !ps.is_empty() => Some(ps.iter().map(|p| relative(p)).collect()),
                    Some(OneOrMany::Many(_)) => {
                        return Err(ResolveError::NoJudgeDatasets);
                    }
                };
                JudgeSettings { repeats: section.repeats, datasets, out: section.out.as_deref().map(relative) }
            }
        };
        let mut memory = MemoryConfig::default();
        if let Some(section) = file.memory {
            if let Some(fraction) = section.learn_fraction {
                if !(fraction > 0.0 && fraction < 1.0) {
                    return Err(ResolveError::LearnFraction(fraction));
                }
                memory.learn_fraction = fraction;
            }
            if let Some(min_count) = section.min_count {
                if min_count == 0 {
                    return Err(ResolveError::NoMinCount);
                }
                memory.min_count = min_count;
            }
            memory.hints = section.hints;
        }
        let sweep = match file.sweep.as_deref() {
            _ if overrides.sweep.is_some() => overrides.sweep.expect("checked just above"),
            None | Some("replay") => Sweep::Replay,
            Some("direct") => Sweep::Direct,
            Some(other) => return Err(ResolveError::UnknownSweep(other.to_string())),
        };
        let on_bad_row = match (overrides.on_bad_row, file.on_bad_row.as_deref()) {
            (Some(mode), _) => mode,
            (None, None | Some("error")) => OnBadRow::Error,
            (None, Some("skip")) => OnBadRow::Skip,
            (None, Some(other)) => return Err(ResolveError::UnknownOnBadRow(other.to_string())),
        };
        let out = match (&overrides.out, &file.out) {
            (Some(out), _) => out.clone(),
            (None, Some(out)) => relative(out),
            (None, None) => PathBuf::from("reports").join(&file.name),
        };
        let mut plugin_dirs = overrides.plugin_dirs.clone();
        plugin_dirs.extend(file.plugin_dirs.iter().map(|d| relative(d)));
        let mut openai = match file.openai {
            None => None,
            Some(section) => {
                let cache = if overrides.no_cache {
                    critbench_openai::CacheMode::Memory
                } else {
                    let path = match section.cache() {
                        Some(path) => relative(path),
                        None => out.parent().map(|p| p.join(CACHE_FILE)).unwrap_or_else(|| PathBuf::from(CACHE_FILE)),
                    };
                    critbench_openai::CacheMode::Disk { path }
                };
                let needs = critbench_openai::Requirements {
                    generator: backend == BackendKind::Openai,
                    seed: file.seed,
                    cache,
                };
                Some(section.resolve(needs)?)
            }
        };
        let pricing =
            super::pricing::resolve_pricing(file.pricing.as_ref(), overrides.pricing.as_deref(), openai.as_mut())?;
        let budget = super::pricing::resolve_budget(file.budget, openai.as_ref())?;
        let prompts = file.prompts.unwrap_or_default();
        prompts.check()?;
        let sequential = file
            .sequential
            .map(|section| super::sequential::resolve(section, &arms, &policies, &critics))
            .transpose()?;
        let mut adjudicate = adjudicated_arms(file.adjudicate.as_ref(), &arms, backend, openai.as_ref())?;
        adjudicate.sort_by_key(|arm| arms.iter().position(|a| a == arm));
        let experiment = Experiment {
            name: file.name,
            path: None,
            datasets,
            backend,
            writer,
            arms,
            adjudicate,
            epochs: file.epochs,
            seed: file.seed,
            out,
            critics,
            evaluators,
            oracle,
            sweep,
            memory,
            policies,
            critic_attempts: file.critic_attempts,
            store_drafts: file.store_drafts || overrides.store_drafts,
            plugin_dirs,
            on_bad_row,
            limit: overrides.limit,
            // 0: decided by the run (every core, or `Experiment::blocking_jobs` when its loops
            // block on the model).
            jobs: overrides.jobs.unwrap_or(0),
            judge,
            openai,
            prompts,
            sequential,
            pricing,
            budget,
        };
        experiment.task_shape().check()?;
        Ok(experiment)
    }
}

/// One `[[critics]]` or `[[evaluators]]` table, checked (the caller names it in messages);
/// `labels` holds the names given so far (a name labels the outputs, so it is given once).
fn critic_spec(
    entry: super::file::CriticEntry,
    labels: &mut BTreeSet<String>,
    isolate_plugins: bool,
    relative: &impl Fn(&str) -> PathBuf,
) -> Result<CriticSpec, CriticProblem> {
    if entry.name.trim().is_empty() {
        return Err(CriticProblem::EmptyName);
    }
    if let Some(problem) = super::name_problem(&entry.name) {
        return Err(CriticProblem::BadName { name: entry.name, problem });
    }
    if !labels.insert(entry.name.clone()) {
        return Err(CriticProblem::NameTwice(entry.name));
    }
    let (plugin, command) = match (entry.plugin, entry.command) {
        (Some(_), Some(_)) => {
            return Err(CriticProblem::PluginAndCommand);
        }
        (None, None) => {
            return Err(CriticProblem::NoPlugin);
        }
        (Some(plugin), None) if plugin.trim().is_empty() => {
            return Err(CriticProblem::EmptyPlugin);
        }
        (Some(plugin), None) => (plugin, None),
        (None, Some(command)) if command.first().is_none_or(|p| p.trim().is_empty()) => {
            return Err(CriticProblem::NoProgram);
        }
        (None, Some(command)) => (String::new(), Some(command)),
    };
    let isolation = match entry.isolation.as_deref() {
        None if command.is_some() || isolate_plugins => IsolationMode::Process,
        None => IsolationMode::InProcess,
        Some(text) => IsolationMode::parse(text).ok_or_else(|| CriticProblem::UnknownIsolation(text.to_string()))?,
    };
    if command.is_some() && isolation == IsolationMode::InProcess {
        return Err(CriticProblem::CommandInProcess);
    }
    let timeout_s = entry.timeout_s.unwrap_or(critbench_plugin_host::DEFAULT_TIMEOUT.as_secs_f64());
    if !(timeout_s.is_finite() && timeout_s > 0.0 && timeout_s <= MAX_TIMEOUT_S) {
        return Err(CriticProblem::Timeout(timeout_s));
    }
    if let Some((name, weight)) = entry.weights.iter().flatten().find(|(_, w)| !(w.is_finite() && **w >= 0.0)) {
        return Err(CriticProblem::Weight { dimension: name.clone(), weight: *weight });
    }
    let memory_mb = entry.memory_mb.unwrap_or(critbench_plugin_host::DEFAULT_MEMORY_MB);
    if !(MIN_MEMORY_MB..=MAX_MEMORY_MB).contains(&memory_mb) {
        return Err(CriticProblem::Memory(memory_mb));
    }
    if entry.kinds.as_ref().is_some_and(Vec::is_empty) {
        return Err(CriticProblem::NoKinds);
    }
    // Resolved here, once, against the file's folder, and made absolute: whoever opens it later
    // (the run, `judge`, a rescoring from another directory) takes it as it is.
    let plugin = if critbench_plugin_host::SearchPath::is_path(&plugin) {
        let path = relative(&plugin);
        std::path::absolute(&path).unwrap_or(path).display().to_string()
    } else {
        plugin
    };
    let config = match entry.config {
        None => serde_json::json!({}),
        Some(value) => serde_json::to_value(value).map_err(CriticProblem::Config)?,
    };
    let env = env_names(entry.env).map_err(CriticProblem::Env)?;
    Ok(CriticSpec {
        name: entry.name,
        plugin,
        command,
        isolation,
        timeout_s,
        memory_mb,
        kinds: entry.kinds,
        config,
        weights: entry.weights,
        env,
    })
}

/// Removes `.` and `name/..` pairs without touching the file system, so the manifest records
/// `datasets/x.jsonl` rather than `experiments/../datasets/x.jsonl`.
pub(crate) fn normalize(path: &Path) -> PathBuf {
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

/// The arms `adjudicate` names: `true` every arm, `false` none, or a list of arms (each one of
/// `arms`). Refused where no adjudicator exists: the scripted backend has none, and the openai
/// backend needs an adjudicator model — which, conversely, is refused when no arm would use it.
fn adjudicated_arms(
    value: Option<&toml::Value>,
    arms: &[Arm],
    backend: BackendKind,
    openai: Option<&critbench_openai::ClientSettings>,
) -> Result<Vec<Arm>, AdjudicateError> {
    let chosen: Vec<Arm> = match value {
        None | Some(toml::Value::Boolean(false)) => Vec::new(),
        Some(toml::Value::Boolean(true)) => arms.to_vec(),
        Some(toml::Value::Array(items)) => {
            let mut chosen = Vec::new();
            for item in items {
                let name = item.as_str().ok_or_else(|| AdjudicateError::NotAName(item.clone()))?;
                let arm = Arm::parse(name)
                    .filter(|arm| arms.contains(arm))
                    .ok_or_else(|| AdjudicateError::UnknownArm(name.to_string()))?;
                if chosen.contains(&arm) {
                    return Err(AdjudicateError::RepeatedArm(name.to_string()));
                }
                chosen.push(arm);
            }
            chosen
        }
        Some(other) => return Err(AdjudicateError::NotArms(other.clone())),
    };
    let has_model = openai.is_some_and(|settings| settings.roles.contains_key(&critbench_openai::Role::Adjudicator));
    match backend {
        BackendKind::Scripted if !chosen.is_empty() => Err(AdjudicateError::Scripted),
        BackendKind::Openai if !chosen.is_empty() && !has_model => Err(AdjudicateError::NoModel),
        _ if chosen.is_empty() && has_model => Err(AdjudicateError::Unused),
        _ => Ok(chosen),
    }
}

/// The evaluator `oracle = "NAME"` names, checked: the key is given exactly when the `oracle` arm
/// runs without the simulator's hidden truth to play the oracle (on the simulator it may be given,
/// and the evaluator then plays it instead); it names one of `evaluators`, and that evaluator takes
/// every task a critic takes, so that every draft of the arm has its oracle's critique.
fn oracle_evaluator(
    name: Option<String>,
    arms: &[Arm],
    backend: BackendKind,
    critics: &[CriticSpec],
    evaluators: &[EvaluatorSpec],
) -> Result<Option<String>, ResolveError> {
    let Some(name) = name else {
        return match backend {
            BackendKind::Sim => Ok(None),
            _ if !arms.contains(&Arm::Oracle) => Ok(None),
            BackendKind::Scripted => Err(ResolveError::NoOracle("scripted")),
            BackendKind::Openai => Err(ResolveError::NoOracle("openai")),
            BackendKind::Command => Err(ResolveError::NoOracle("command")),
        };
    };
    if !arms.contains(&Arm::Oracle) {
        return Err(ResolveError::UnusedOracle(name));
    }
    let Some(evaluator) = evaluators.iter().find(|e| e.spec.name == name) else {
        let names: Vec<String> = evaluators.iter().map(|e| format!("{:?}", e.spec.name)).collect();
        let known = if names.is_empty() { "the experiment has none".to_string() } else { names.join(", ") };
        return Err(ResolveError::UnknownOracle { name, known });
    };
    if let Some(kinds) = &evaluator.spec.kinds {
        let uncovered = critics.iter().find(|critic| match &critic.kinds {
            None => true,
            Some(taken) => taken.iter().any(|kind| !kinds.contains(kind)),
        });
        if let Some(critic) = uncovered {
            let takes = critic.kinds.as_ref().map_or("(any)".to_string(), |k| format!("[{}]", k.join(", ")));
            let kinds = kinds.join(", ");
            let uncovered = OracleKinds { name, kinds, critic: critic.name.clone(), takes };
            return Err(ResolveError::OracleKinds(Box::new(uncovered)));
        }
    }
    Ok(Some(name))
}

/// The built-in evaluator of the simulator's hidden truth, by its plugin name and the name a
/// `sim` run gives it.
pub const SIM_TRUTH: &str = "sim-truth";

/// The `sim-truth` evaluator a `sim` run has unless `sim_truth` = false: every recorded draft
/// judged, passing with no defect (score 10).
fn sim_truth_evaluator() -> EvaluatorSpec {
    EvaluatorSpec {
        spec: CriticSpec::plugin(SIM_TRUTH, SIM_TRUTH),
        pass_score: 10.0,
        dim_target: None,
        all_rounds: true,
        defect_types: documented_defects(),
    }
}

/// The defects the simulated writer documents, as the `sim-truth` evaluator's manifest entry
/// names them.
fn documented_defects() -> Vec<String> {
    critbench_sim::truth::documented_defects().into_iter().map(str::to_string).collect()
}
