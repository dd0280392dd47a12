//! The `[sequential]` table: a run that stops admitting tasks once its comparison is settled
//! (docs/REFERENCE.md, Sequential runs). Resolved here against the experiment's arms, configs and
//! critics; the run itself is `crate::run::sequential`.

use critbench_stats::sequential::{Monitor, MonitorError, Rule, Settle};

use super::file::SequentialSection;
use super::*;

/// The `[sequential]` table resolved: the pair compared, the stopping rule, and the comparison
/// that decides (or every one).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SequentialSettings {
    /// A then B: the comparison is A − B.
    #[serde(serialize_with = "arm_names")]
    pub arms: Vec<Arm>,
    /// The level the intervals hold at, at every look at once.
    pub confidence: f64,
    /// Stop for equivalence once the interval lies within ±margin; `None`: never.
    pub margin: Option<f64>,
    /// Tasks written before the first look.
    pub min_tasks: u64,
    /// Tasks written between looks.
    pub check_every: u64,
    /// The budget in tasks; `None`: the whole set.
    pub max_tasks: Option<u64>,
    /// The one comparison that decides; `None`: every config × critic must be settled.
    pub decides: Option<Decides>,
}

/// The comparison that alone decides when a sequential run stops.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Decides {
    /// The config id whose comparison decides.
    pub config: String,
    /// The critic whose verdicts it reads.
    pub critic: String,
}

impl SequentialSettings {
    /// Arm A and arm B.
    pub fn pair(&self) -> (Arm, Arm) {
        (self.arms[0], self.arms[1])
    }

    /// The rule the monitor applies, deciding by the comparison at `decider` when one decides.
    pub fn rule(&self, decider: Option<usize>) -> Rule {
        Rule {
            confidence: self.confidence,
            margin: self.margin,
            min_tasks: self.min_tasks,
            check_every: self.check_every,
            max_tasks: self.max_tasks,
            settle: decider.map_or(Settle::All, Settle::One),
        }
    }
}

/// A `[sequential]` table that does not fit the experiment it belongs to; every message names the key.
#[derive(Debug, thiserror::Error)]
pub enum SequentialError {
    /// `arms` does not name exactly two arms.
    #[error(
        "[sequential]: `arms` names {0} arm(s); give two, A then B (the run follows A − B), such as [\"feedback\", \
         \"no-feedback\"]"
    )]
    ArmCount(usize),
    /// An arm of `arms` that the experiment does not run.
    #[error("[sequential]: `arms`: \"{0}\" is not one of the experiment's `arms`")]
    UnknownArm(String),
    /// The same arm twice in `arms`.
    #[error("[sequential]: `arms`: \"{0}\" is listed twice; compare two different arms")]
    RepeatedArm(String),
    /// `min_tasks` = 0.
    #[error("[sequential]: `min_tasks` must be at least 1 (the first look comes after that many tasks)")]
    NoMinTasks,
    /// `[sequential.decides] config` names no config of the grid.
    #[error(
        "[sequential.decides]: `config` = \"{config}\" is not a config of the [policy] grid ({})",
        configs.join(", ")
    )]
    UnknownConfig {
        /// The config named.
        config: String,
        /// The grid's config ids.
        configs: Vec<String>,
    },
    /// No `[sequential.decides] config` although the grid has several.
    #[error(
        "[sequential.decides]: `config` is missing; the grid has {} configs, so name the one that decides ({})",
        configs.len(),
        configs.join(", ")
    )]
    NoConfig {
        /// The grid's config ids.
        configs: Vec<String>,
    },
    /// `[sequential.decides] critic` names no critic of the experiment.
    #[error(
        "[sequential.decides]: `critic` = \"{critic}\" is not one of the experiment's critics ({})",
        critics.join(", ")
    )]
    UnknownCritic {
        /// The critic named.
        critic: String,
        /// The experiment's critics.
        critics: Vec<String>,
    },
    /// No `[sequential.decides] critic` although the experiment has several.
    #[error(
        "[sequential.decides]: `critic` is missing; the experiment has {} critics, so name the one that decides ({})",
        critics.len(),
        critics.join(", ")
    )]
    NoCritic {
        /// The experiment's critics.
        critics: Vec<String>,
    },
    /// A rule the monitor refuses (confidence, margin, check_every, the budget against the first
    /// look); its message names the key.
    #[error("[sequential]: {0}")]
    Rule(#[source] MonitorError),
}

/// Checks `[sequential]` against the experiment it belongs to; every message names the key.
pub(super) fn resolve(
    section: SequentialSection,
    arms: &[Arm],
    policies: &[Policy],
    critics: &[CriticSpec],
) -> Result<SequentialSettings, SequentialError> {
    if section.arms.len() != 2 {
        return Err(SequentialError::ArmCount(section.arms.len()));
    }
    let mut pair = Vec::new();
    for name in &section.arms {
        let arm = Arm::parse(name)
            .filter(|arm| arms.contains(arm))
            .ok_or_else(|| SequentialError::UnknownArm(name.clone()))?;
        if pair.contains(&arm) {
            return Err(SequentialError::RepeatedArm(name.clone()));
        }
        pair.push(arm);
    }
    let defaults = Rule::default();
    let min_tasks = section.min_tasks.unwrap_or(defaults.min_tasks);
    if min_tasks == 0 {
        return Err(SequentialError::NoMinTasks);
    }
    let decides = match section.decides {
        None => None,
        Some(decides) => {
            let config_ids: Vec<String> = policies.iter().map(Policy::config_id).collect();
            let config = match decides.config {
                Some(config) if config_ids.contains(&config) => config,
                Some(config) => {
                    return Err(SequentialError::UnknownConfig { config, configs: config_ids });
                }
                None if config_ids.len() == 1 => config_ids[0].clone(),
                None => {
                    return Err(SequentialError::NoConfig { configs: config_ids });
                }
            };
            let names: Vec<&str> = critics.iter().map(|c| c.name.as_str()).collect();
            let critic = match decides.critic {
                Some(critic) if names.contains(&critic.as_str()) => critic,
                Some(critic) => {
                    let critics = names.iter().map(|n| n.to_string()).collect();
                    return Err(SequentialError::UnknownCritic { critic, critics });
                }
                None if names.len() == 1 => names[0].to_string(),
                None => {
                    return Err(SequentialError::NoCritic { critics: names.iter().map(|n| n.to_string()).collect() });
                }
            };
            Some(Decides { config, critic })
        }
    };
    let settings = SequentialSettings {
        arms: pair,
        confidence: section.confidence.unwrap_or(defaults.confidence),
        margin: section.margin,
        min_tasks,
        check_every: section.check_every.unwrap_or(defaults.check_every),
        max_tasks: section.max_tasks,
        decides,
    };
    // The monitor's own checks of the rule (confidence, margin, check_every, the budget against
    // the first look), with its messages, which name the keys.
    let comparisons = policies.len() * critics.len();
    let decider = settings.decides.is_some().then_some(0);
    Monitor::new(settings.rule(decider), None, comparisons.max(1)).map_err(SequentialError::Rule)?;
    Ok(settings)
}
