//! Stage 1 of a run: what will run. Loads the critics, decides how the policy grid is swept, and
//! lays out the loops of each task. Nothing here reads a dataset or writes a file.
//!
//! A *unit* is one recorded loop: a task under one critic, epoch and arm, recorded for one
//! config (a direct sweep) or for every config of the grid at once (a replayed sweep, where one
//! recording serves every config because the reviser never sees the policy).

use std::collections::HashMap;
use std::sync::Arc;

use critbench_core::{Arm, Policy, ScoreRange, Task};
use critbench_plugin_host::services::Host;
use critbench_plugin_host::{ChildCounters, CriticInfo, CriticInstance, open_critics};
use critbench_storage::manifest::ProcessTrouble;

use crate::experiment::{BackendKind, CriticSpec, Experiment, Sweep};
use crate::run::backend::{ScriptedAuthor, SimAuthor};
use crate::run::error::RunError;
use critbench_core::author::Author;
use critbench_core::author::Hint;

/// A critic as opened, for the manifest.
pub struct LoadedPlugin {
    pub critic: String,
    /// What the critic said it is when opened (library or command).
    pub library: Arc<CriticInfo>,
    /// A critic in child processes: the children stopped after a failure so far.
    pub trouble: Option<Arc<ChildCounters>>,
    /// What earlier sessions of a resumed run counted of the same (from their manifest).
    pub carried: ProcessTrouble,
}

impl LoadedPlugin {
    /// The critic `critic` as `instance` opened it.
    pub fn of(critic: &str, instance: &CriticInstance) -> LoadedPlugin {
        LoadedPlugin {
            critic: critic.to_string(),
            library: Arc::clone(instance.info()),
            trouble: instance.child_trouble().cloned(),
            carried: ProcessTrouble::default(),
        }
    }

    /// The children stopped after a failure, this session's and the earlier ones' together;
    /// `None` for a critic in critbench's own process.
    pub fn process_trouble(&self) -> Option<ProcessTrouble> {
        Some(process_trouble(self.trouble.as_ref()?).plus(self.carried))
    }
}

/// What `counters` counted so far, as the manifest records it.
pub fn process_trouble(counters: &ChildCounters) -> ProcessTrouble {
    let now = counters.snapshot();
    ProcessTrouble {
        restarts: now.restarts,
        protocol_errors: now.protocol_errors,
        timeouts: now.timeouts,
        exits: now.exits,
    }
}

/// A writer program as started, for the manifest.
pub struct LoadedWriter {
    pub info: critbench_plugin_host::writer::WriterInfo,
    /// Its processes stopped after a failure so far.
    pub trouble: Arc<ChildCounters>,
    /// What earlier sessions of a resumed run counted of the same (from their manifest).
    pub carried: ProcessTrouble,
}

impl LoadedWriter {
    /// The program `info` describes, whose processes `trouble` counts.
    pub fn of(info: &critbench_plugin_host::writer::WriterInfo, trouble: &Arc<ChildCounters>) -> LoadedWriter {
        LoadedWriter { info: info.clone(), trouble: Arc::clone(trouble), carried: ProcessTrouble::default() }
    }

    /// The manifest's record: this session's counts and the earlier ones' together.
    pub fn record(&self) -> critbench_storage::manifest::WriterRecord {
        critbench_storage::manifest::WriterRecord {
            role: self.info.role.to_string(),
            name: self.info.name.clone(),
            version: self.info.version.clone(),
            command: self.info.command.clone(),
            sha256: self.info.sha256.clone(),
            process: process_trouble(&self.trouble).plus(self.carried),
        }
    }
}

/// One loop to record for a task: indices into the plan's critics and arms, and the policies it
/// serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    pub critic: usize,
    pub epoch: u32,
    pub arm: Arm,
    /// `Some(config)` for a direct sweep, `None` for every config.
    pub policy: Option<usize>,
}

impl Unit {
    /// The configs this unit's recording serves.
    pub fn policies(&self, count: usize) -> std::ops::Range<usize> {
        match self.policy {
            Some(index) => index..index + 1,
            None => 0..count,
        }
    }
}

/// Which loops of a task a pass over the datasets records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Strategy memory's learning pass: the feedback loop, first config, epoch 0.
    Learn,
    /// Every loop of the experiment.
    Evaluate,
}

/// Everything the loop workers share: the experiment, the author, the critics, the grid.
pub struct Plan<'a> {
    pub experiment: &'a Experiment,
    pub author: &'a dyn Author,
    pub critics: Vec<CriticInstance>,
    pub plugins: Vec<LoadedPlugin>,
    /// The held-out evaluators, opened as critics are, in the order of the experiment's.
    pub evaluators: Vec<CriticInstance>,
    pub evaluator_plugins: Vec<LoadedPlugin>,
    /// One recording per loop serves every config.
    pub replay: bool,
    pub config_ids: Vec<String>,
    /// Strategy hints per (critic, task kind), for the `feedback+memory` arm; filled by the
    /// learning pass.
    pub hints: HashMap<(usize, Option<String>), Vec<Hint>>,
    /// What the user is told before the run and the manifest keeps: thresholds outside a
    /// critic's score range.
    pub warnings: Vec<String>,
    /// The writer programs of `backend = "command"` (set by the run that started them).
    pub writers: Vec<LoadedWriter>,
    /// Who plays the `oracle` arm's oracle.
    pub oracle: Oracle,
}

impl<'a> Plan<'a> {
    /// Loads every critic's plugin and creates its instance with the run's `host` (a critic that
    /// requires a service the host does not offer is refused), and checks the sweep can be
    /// replayed.
    pub fn load(experiment: &'a Experiment, author: &'a dyn Author, host: &Arc<Host>) -> Result<Plan<'a>, RunError> {
        let base_dir = experiment.path.as_ref().and_then(|p| p.parent());
        let critics = open_critics(&experiment.critics, &experiment.plugin_dirs, base_dir, experiment.jobs, host)?;
        let mut plugins = Vec::new();
        let mut warnings = crate::experiment::pricing_warnings(experiment);
        for (spec, instance) in experiment.critics.iter().zip(&critics) {
            warnings.extend(threshold_warnings(&spec.name, instance.info().range, &experiment.policies, &POLICY_KEYS));
            plugins.push(LoadedPlugin::of(&spec.name, instance));
        }
        let evaluator_specs: Vec<CriticSpec> = experiment.evaluators.iter().map(|e| e.spec.clone()).collect();
        let evaluators = open_critics(&evaluator_specs, &experiment.plugin_dirs, base_dir, experiment.jobs, host)?;
        let mut evaluator_plugins = Vec::new();
        for (evaluator, instance) in experiment.evaluators.iter().zip(&evaluators) {
            let names = ThresholdNames { pass_score: "pass_score", dim_target: "dim_target" };
            let rule = [evaluator.pass_rule()];
            let who = ("evaluator", evaluator.spec.name.as_str());
            warnings.extend(threshold_warnings_of(who, instance.info().range, &rule, &names));
            evaluator_plugins.push(LoadedPlugin::of(&evaluator.spec.name, instance));
        }
        let replay = experiment.sweep == Sweep::Replay && experiment.policies.len() > 1;
        if replay && let Some(plugin) = plugins.iter().find(|p| p.library.policy_dependent) {
            return Err(RunError::PolicyDependentSweep {
                critic: plugin.critic.clone(),
                plugin: plugin.library.name.clone(),
            });
        }
        Ok(Plan {
            experiment,
            author,
            critics,
            plugins,
            evaluators,
            evaluator_plugins,
            replay,
            config_ids: experiment.policies.iter().map(Policy::config_id).collect(),
            hints: HashMap::new(),
            warnings,
            writers: Vec::new(),
            oracle: Oracle::of(experiment),
        })
    }

    /// How the grid was swept.
    pub fn sweep(&self) -> Sweep {
        if self.replay { Sweep::Replay } else { Sweep::Direct }
    }

    /// Whether the loops are driven as futures, many to a worker thread
    /// ([`crate::run::loops::work_together`]): their author awaits a model server, and nothing else in
    /// a loop waits on one (no critic or evaluator requires a host service such as `chat`, no arm
    /// adjudicates), so that a worker thread never blocks on the network.
    pub fn awaits_author(&self) -> bool {
        self.author.awaits()
            && self.experiment.adjudicate.is_empty()
            && self.critics.iter().chain(&self.evaluators).all(|critic| critic.info().declared.requires.is_empty())
    }

    /// Whether the loops' critiques are awaited, many loops to a worker thread: a critic takes many
    /// requests at once (a child process of the pipelined form).
    pub fn awaits_critics(&self) -> bool {
        self.critics.iter().any(|critic| critic.pipelined())
    }

    /// The critics that take a task of `kind`, by index.
    pub fn critics_for<'k>(&'k self, kind: Option<&'k str>) -> impl Iterator<Item = usize> + 'k {
        self.experiment.critics.iter().enumerate().filter(move |(_, spec)| spec.takes(kind)).map(|(index, _)| index)
    }

    /// The evaluators that take a task of `kind`, by index.
    pub fn evaluators_for<'k>(&'k self, kind: Option<&'k str>) -> impl Iterator<Item = usize> + 'k {
        self.experiment.evaluators.iter().enumerate().filter(move |(_, e)| e.spec.takes(kind)).map(|(index, _)| index)
    }

    /// The units of one task under one critic, in output order: epoch, then arm, then config.
    pub fn units(&self, critic: usize, scope: Scope) -> Vec<Unit> {
        match scope {
            Scope::Learn => vec![Unit { critic, epoch: 0, arm: Arm::Feedback, policy: Some(0) }],
            Scope::Evaluate => {
                let experiment = self.experiment;
                let configs: Vec<Option<usize>> =
                    if self.replay { vec![None] } else { (0..experiment.policies.len()).map(Some).collect() };
                let mut units = Vec::with_capacity(experiment.epochs as usize * experiment.arms.len() * configs.len());
                for epoch in 0..experiment.epochs {
                    for &arm in &experiment.arms {
                        for &policy in &configs {
                            units.push(Unit { critic, epoch, arm, policy });
                        }
                    }
                }
                units
            }
        }
    }

    /// Whether the author can serve `task` (the scripted backend needs drafts).
    pub fn check_task(&self, task: &Task) -> Result<(), critbench_core::author::AuthorError> {
        self.author.check_task(task)
    }
}

/// The author an offline experiment's `backend` names; `None` for the openai author, which the
/// run makes from the experiment's `[openai]` table.
pub fn offline_author(experiment: &Experiment) -> Option<Box<dyn Author>> {
    match experiment.backend {
        BackendKind::Sim => Some(Box::new(SimAuthor)),
        BackendKind::Scripted => {
            let samples_needed = if experiment.arms.contains(&critbench_core::Arm::Resample) {
                experiment.policies.iter().map(|p| p.max_revisions).max().unwrap_or(0)
            } else {
                0
            };
            Some(Box::new(ScriptedAuthor { samples_needed }))
        }
        BackendKind::Openai | BackendKind::Command => None,
    }
}

/// `[a, b] / (any)`: the kinds each critic takes, for messages.
pub fn describe_kinds(critics: &[CriticSpec]) -> String {
    let kinds: Vec<String> = critics
        .iter()
        .map(|c| c.kinds.as_ref().map(|k| format!("[{}]", k.join(", "))).unwrap_or_else(|| "(any)".into()))
        .collect();
    kinds.join(" / ")
}

/// How the thresholds are named in a warning: experiment keys for a run, flags for a replay.
pub struct ThresholdNames {
    pub pass_score: &'static str,
    pub dim_target: &'static str,
}

/// The experiment file's names.
pub const POLICY_KEYS: ThresholdNames =
    ThresholdNames { pass_score: "[policy] pass_score", dim_target: "[policy] dim_target" };

/// A warning for every distinct `pass_score` and `dim_target` of `policies` outside the score
/// range the critic declared, saying what the loops will do. Such thresholds run (a budget test
/// sets one on purpose so that every loop runs to its cap); non-finite ones never get here.
pub fn threshold_warnings(critic: &str, range: ScoreRange, policies: &[Policy], names: &ThresholdNames) -> Vec<String> {
    threshold_warnings_of(("critic", critic), range, policies, names)
}

/// [`threshold_warnings`] of a critic or an evaluator: `(role, name)`.
pub fn threshold_warnings_of(
    (role, who): (&str, &str),
    range: ScoreRange,
    policies: &[Policy],
    names: &ThresholdNames,
) -> Vec<String> {
    let mut seen: Vec<(bool, u64)> = Vec::new();
    let mut warnings = Vec::new();
    let thresholds = policies
        .iter()
        .flat_map(|p| std::iter::once((false, p.pass_score)).chain(p.dim_target.map(|target| (true, target))));
    for (is_target, value) in thresholds {
        if range.contains(value) || seen.contains(&(is_target, value.to_bits())) {
            continue;
        }
        seen.push((is_target, value.to_bits()));
        let above = value > range.max;
        let what = match (is_target, above) {
            (false, true) => "no draft can pass, so every loop will end by stall, plateau or budget",
            (false, false) => {
                "every draft passes at its first critique (unless the critique fails, has fatal issues or misses \
                 dim_target)"
            }
            (true, true) => {
                "no draft whose critique has dimensions can pass, so such loops will end by stall, plateau or budget"
            }
            (true, false) => "every dimension meets it, so it changes no verdict",
        };
        let name = if is_target { names.dim_target } else { names.pass_score };
        let side = if above { "above" } else { "below" };
        warnings.push(format!("{role} `{who}`: {name} = {value} is {side} the {role}'s score range {range}: {what}"));
    }
    warnings
}

/// Who plays the oracle of a run's `oracle` arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Oracle {
    /// The simulated writer's hidden truth ([`critbench_sim::truth::oracle_critique`]).
    Truth,
    /// The held-out evaluator of this index into the experiment's `evaluators`
    /// (`oracle = "NAME"`), asked as when it evaluates: the task with its labels, and the
    /// draft's truth when it has one.
    Evaluator(usize),
}

impl Oracle {
    /// The oracle of `experiment`'s `oracle` arm: the evaluator `oracle = "NAME"` names, else the
    /// simulator's truth (the experiment file refuses the arm where neither exists).
    pub fn of(experiment: &Experiment) -> Oracle {
        let named = experiment
            .oracle
            .as_ref()
            .and_then(|name| experiment.evaluators.iter().position(|evaluator| &evaluator.spec.name == name));
        named.map_or(Oracle::Truth, Oracle::Evaluator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::tests::load;

    #[test]
    fn the_truth_plays_the_oracle_unless_the_experiment_names_an_evaluator() {
        let base = "name = \"t\"\ndataset = \"d.jsonl\"\narms = [\"feedback\", \"oracle\"]\n";
        let critic =
            "[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n[[evaluators]]\nname = \"gold\"\nplugin = \"rubric\"\n";
        assert_eq!(Oracle::of(&load(&format!("{base}{critic}")).unwrap()), Oracle::Truth);
        // The evaluators in order: `gold`, then the `sim-truth` a sim run adds.
        let named = |name: &str| Oracle::of(&load(&format!("{base}oracle = \"{name}\"\n{critic}")).unwrap());
        assert_eq!((named("gold"), named("sim-truth")), (Oracle::Evaluator(0), Oracle::Evaluator(1)));
    }
}
