//! The sink's side of a sequential run: each written task's paired differences into the monitor,
//! each look's decision to the gate, and at the end the manifest's record.

use std::collections::HashMap;
use std::sync::Arc;

use critbench_core::{Arm, ExitReason, Policy};
use critbench_stats::sequential::{Decision, Look, Monitor, Status};
use critbench_storage::manifest::{
    SequentialComparison, SequentialCost, SequentialLook, SequentialRecord, SequentialRule, SequentialStatus, Spent,
};

use super::Order;
use crate::experiment::SequentialSettings;
use crate::run::emit::effective_policy;
use crate::run::error::RunError;
use crate::run::loops::{ChunkResult, TaskLoops};
use crate::run::pipeline::{Consumer, Prepare};
use crate::run::plan::Plan;
use crate::run::sequential::{Gate, Paired, SequentialError, TaskValues};
use crate::run::sink::{ChunkRows, RowBuilder, RowSink, Written};

/// One comparison followed: arm A against arm B within a config × critic.
struct Compared {
    config: usize,
    critic: usize,
}

/// Follows every config × critic comparison of a sequential run, task by task in admission order.
pub(crate) struct Follower {
    settings: SequentialSettings,
    policies: Vec<Policy>,
    config_ids: Vec<String>,
    critic_names: Vec<String>,
    /// Config-major, then critic: the order of the reports' rows.
    compared: Vec<Compared>,
    /// (config, critic) → its comparison.
    index: HashMap<(usize, usize), usize>,
    decider: Option<usize>,
    populations: Vec<u64>,
    task_set: u64,
    budget: u64,
    monitor: Monitor,
    looks: Vec<Look>,
    gate: Arc<Gate>,
}

impl Follower {
    /// A follower of `plan`'s comparisons over the tasks of `order`, continuing from `replayed`: the
    /// values an interrupted run committed for its first `written` tasks.
    pub(crate) fn new(
        plan: &Plan<'_>,
        settings: &SequentialSettings,
        order: &Order,
        replayed: &[TaskValues],
        written: u64,
    ) -> Result<Follower, RunError> {
        let experiment = plan.experiment;
        let critic_names: Vec<String> = experiment.critics.iter().map(|c| c.name.clone()).collect();
        let decides = settings.decides.as_ref().map(|decides| {
            let config =
                plan.config_ids.iter().position(|id| *id == decides.config).expect("resolved against the grid");
            let critic =
                critic_names.iter().position(|name| *name == decides.critic).expect("resolved against critics");
            (config, critic)
        });
        // A critic that takes none of the set's tasks has no comparison to follow, as it has no row
        // in comparisons.csv; unless it is the one that decides.
        if let Some((_, critic)) = decides.filter(|&(_, critic)| order.population(critic) == 0) {
            return Err(
                SequentialError::NoTasks { critic: critic_names[critic].clone(), tasks: order.task_set() }.into()
            );
        }
        let mut compared = Vec::new();
        let mut index = HashMap::new();
        for config in 0..experiment.policies.len() {
            for critic in (0..experiment.critics.len()).filter(|&critic| order.population(critic) > 0) {
                index.insert((config, critic), compared.len());
                compared.push(Compared { config, critic });
            }
        }
        let decider = decides.map(|key| index[&key]);
        let populations: Vec<u64> = compared.iter().map(|c| order.population(c.critic)).collect();
        let budget = settings.max_tasks.map_or(order.task_set(), |max| max.min(order.task_set()));
        let monitor = Monitor::new(settings.rule(decider), Some(order.task_set()), compared.len())
            .map_err(SequentialError::from)?;
        let mut follower = Follower {
            settings: settings.clone(),
            policies: experiment.policies.clone(),
            config_ids: plan.config_ids.clone(),
            critic_names,
            compared,
            index,
            decider,
            populations,
            task_set: order.task_set(),
            budget,
            monitor,
            looks: Vec::new(),
            gate: Arc::new(Gate::new()),
        };
        if replayed.len() as u64 != written {
            return Err(SequentialError::Journal { recorded: replayed.len() as u64, written }.into());
        }
        for values in replayed {
            follower.take(values)?;
        }
        Ok(follower)
    }

    /// The gate the source's chunks wait at, decided as this follower looks.
    pub(crate) fn gate(&self) -> Arc<Gate> {
        Arc::clone(&self.gate)
    }

    /// Wraps `sink`: what it is given is written, committed with its tasks' values, and followed.
    pub(crate) fn following<'f, 's, 'p, 'a>(&'f mut self, sink: &'s mut RowSink<'p, 'a>) -> Followed<'f, 's, 'p, 'a> {
        Followed { follower: self, sink }
    }

    /// What [`Pairing::values`] needs of this follower, for the loop workers.
    fn pairing(&self) -> Pairing {
        Pairing {
            pair: self.settings.pair(),
            policies: self.policies.clone(),
            index: self.index.clone(),
            comparisons: self.compared.len(),
        }
    }

    /// The next task in admission order.
    fn take(&mut self, values: &TaskValues) -> Result<(), RunError> {
        let values: Vec<Option<f64>> = values.iter().map(|v| v.map(Paired::value)).collect();
        if let Some(look) = self.monitor.add_task(&values).map_err(SequentialError::from)? {
            self.gate.decide(look.look, look.decision != Decision::Continue);
            self.looks.push(look);
        }
        Ok(())
    }

    /// The manifest's record, once the run has written what it will: `openai` is the model client's
    /// report (its tokens are the run's only when it was not resumed).
    pub(crate) fn record(
        &self,
        written: &Written,
        openai: Option<&critbench_openai::usage::UsageReport>,
        resumed: bool,
    ) -> SequentialRecord {
        let (a, b) = self.settings.pair();
        let tasks_run = self.monitor.tasks();
        let spent = |used: u64| {
            let full = if tasks_run == 0 { 0.0 } else { used as f64 * self.task_set as f64 / tasks_run as f64 };
            Spent { used, full: full.round() as u64, share: if full > 0.0 { used as f64 / full } else { 0.0 } }
        };
        let tokens = openai.filter(|_| !resumed).map(|usage| spent(usage.tokens.tokens_in + usage.tokens.tokens_out));
        SequentialRecord {
            method: self.monitor.method().to_string(),
            rule: SequentialRule {
                arm_a: a.as_str().to_string(),
                arm_b: b.as_str().to_string(),
                confidence: self.settings.confidence,
                sequence_confidence: self.monitor.sequence_confidence(),
                margin: self.settings.margin,
                min_tasks: self.settings.min_tasks,
                check_every: self.settings.check_every,
                max_tasks: self.settings.max_tasks,
                settle: if self.decider.is_some() { "one" } else { "all" }.to_string(),
            },
            task_set: self.task_set,
            budget: self.budget,
            comparisons: self
                .compared
                .iter()
                .enumerate()
                .map(|(index, c)| SequentialComparison {
                    config_id: self.config_ids[c.config].clone(),
                    critic: self.critic_names[c.critic].clone(),
                    arm_a: a.as_str().to_string(),
                    arm_b: b.as_str().to_string(),
                    population: self.populations[index],
                    decides: self.decider.is_none_or(|decider| decider == index),
                })
                .collect(),
            looks: self.looks.iter().map(look_record).collect(),
            decision: self.monitor.stopped().map(look_record),
            tasks_run,
            over_tasks_run: self.monitor.status().iter().map(status_record).collect(),
            cost: SequentialCost {
                tasks: spent(tasks_run),
                loops: spent(written.counts.loops),
                calls: spent(written.counts.recorded_rounds),
                tokens,
            },
        }
    }
}

fn look_record(look: &Look) -> SequentialLook {
    SequentialLook {
        look: look.look,
        tasks: look.tasks,
        decision: look.decision.as_str().to_string(),
        comparisons: look.comparisons.iter().map(status_record).collect(),
    }
}

/// A task's paired differences, worked out by the loop worker that recorded it.
pub(crate) struct Pairing {
    pair: (Arm, Arm),
    policies: Vec<Policy>,
    /// (config, critic) → its comparison.
    index: HashMap<(usize, usize), usize>,
    comparisons: usize,
}

impl Pairing {
    /// Each comparison's paired difference on one task: per epoch both arms ran, whether A's loop
    /// passed under the config minus whether B's did.
    fn values(&self, task: &TaskLoops) -> TaskValues {
        let (a, b) = self.pair;
        // (comparison, epoch) → (A passed, B passed), for the loops that ran.
        let mut sides: HashMap<(usize, u32), [Option<bool>; 2]> = HashMap::new();
        for (unit, result) in &task.loops {
            let side = match unit.arm {
                arm if arm == a => 0,
                arm if arm == b => 1,
                _ => continue,
            };
            let Ok(result) = result else { continue };
            for config in unit.policies(self.policies.len()) {
                let policy = effective_policy(&self.policies[config], unit.arm);
                // A recording that ended before the config stopped is refused by the sink.
                let Some((_, exit)) =
                    crate::run::emit::stop_of(&result.rounds, &result.scores, &policy, unit.arm.drafting())
                else {
                    continue;
                };
                let Some(&comparison) = self.index.get(&(config, unit.critic)) else { continue };
                sides.entry((comparison, unit.epoch)).or_default()[side] = Some(exit == ExitReason::Pass);
            }
        }
        let mut values: TaskValues = vec![None; self.comparisons];
        for ((comparison, _), [passed_a, passed_b]) in sides {
            if let (Some(passed_a), Some(passed_b)) = (passed_a, passed_b) {
                let Paired(difference, pairs) = values[comparison].get_or_insert(Paired(0, 0));
                *difference += i64::from(passed_a) - i64::from(passed_b);
                *pairs += 1;
            }
        }
        values
    }
}

/// The row sink's preparation, with each task's paired differences beside its rows.
pub(crate) struct FollowedRows<'p, 'a> {
    pairing: Pairing,
    rows: RowBuilder<'p, 'a>,
}

impl Prepare for FollowedRows<'_, '_> {
    type Recorded = ChunkResult;
    type Ready = (Vec<TaskValues>, ChunkRows);

    fn prepare(&self, chunk: ChunkResult) -> (Vec<TaskValues>, ChunkRows) {
        let values = chunk.tasks.iter().map(|task| self.pairing.values(task)).collect();
        (values, self.rows.prepare(chunk))
    }
}

fn status_record(status: &Status) -> SequentialStatus {
    SequentialStatus {
        tasks: status.tasks,
        estimate: status.estimate,
        lower: status.lower,
        upper: status.upper,
        verdict: status.verdict.as_str().to_string(),
    }
}

/// The row sink, followed: see [`Follower::following`].
pub(crate) struct Followed<'f, 's, 'p, 'a> {
    follower: &'f mut Follower,
    sink: &'s mut RowSink<'p, 'a>,
}

impl<'p, 'a> Consumer for Followed<'_, '_, 'p, 'a> {
    type Prepare = FollowedRows<'p, 'a>;
    type Error = RunError;

    fn preparer(&self) -> FollowedRows<'p, 'a> {
        FollowedRows { pairing: self.follower.pairing(), rows: self.sink.preparer() }
    }

    fn accept(&mut self, (values, chunk): (Vec<TaskValues>, ChunkRows)) -> Result<(), RunError> {
        // Committed with the rows, so that a resumed run replays exactly the tasks it keeps.
        self.sink.record_sequential(values.iter().cloned());
        self.sink.accept(chunk)?;
        for task in &values {
            self.follower.take(task)?;
        }
        Ok(())
    }

    fn counts(&self) -> (u64, u64) {
        self.sink.counts()
    }

    fn commit(&mut self) -> Result<(), RunError> {
        Consumer::commit(self.sink)
    }
}
