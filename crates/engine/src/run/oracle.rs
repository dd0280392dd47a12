//! The `oracle` arm's critique: the oracle the plan names ([`Oracle`]) critiques the arm's drafts
//! knowing what is really wrong with them, and the arm's reviser is shown that critique in place of
//! the steering critic's (docs/REFERENCE.md, Arms).
//!
//! The steering critic still critiques every round and the policy still stops the loop on its
//! scores, as in `feedback`: the oracle changes only what the reviser reads. Its critique is not
//! recorded (the round's critique is the steering critic's), and nothing after the loop needs it:
//! a replay stops the recorded rounds under other policies and writes no draft.

use critbench_core::author::Draft;
use critbench_core::{Critique, Task};
use critbench_plugin_host::critique_with_retry;
use critbench_plugin_host::request::{TaskJson, evaluation_request};
use critbench_plugin_host::services::CallScope;

use crate::run::plan::{Oracle, Plan, Unit};

/// Why the oracle gave no critique: the loop fails with it (its text is what `failed_loops`
/// records), since revising without the oracle's critique would not be the arm's loop.
#[derive(Debug, thiserror::Error)]
pub enum OracleError {
    /// The simulator's truth plays the oracle, and the draft carries none (an author that keeps
    /// no truth).
    #[error(
        "round {round}: the oracle arm's draft carries no hidden truth for the oracle to read; set `oracle` = \
         \"NAME\" to a held-out evaluator"
    )]
    NoTruth {
        /// The round of the draft.
        round: u32,
    },
    /// The evaluator that plays the oracle does not take the task (its `kinds`).
    #[error("round {round}: the oracle, evaluator `{evaluator}`, does not take this task's kind")]
    NotTaken {
        /// The round of the draft.
        round: u32,
        /// The evaluator's name.
        evaluator: String,
    },
    /// Every attempt of the evaluator that plays the oracle failed.
    #[error("round {round}: the oracle, evaluator `{evaluator}`, failed: {error}")]
    Failed {
        /// The round of the draft.
        round: u32,
        /// The evaluator's name.
        evaluator: String,
        /// Its last attempt's error.
        error: String,
    },
}

/// The oracle's critique of `draft`, the draft critiqued in round `round` of a loop of `unit` on
/// `task`; `labelled` is the task with its gold labels, present whenever an evaluator takes it
/// (the experiment file makes sure the oracle's takes every task a critic takes).
pub fn oracle_critique(
    plan: &Plan<'_>,
    task: &Task,
    labelled: Option<&TaskJson>,
    unit: Unit,
    draft: &Draft,
    round: u32,
) -> Result<Critique, OracleError> {
    match plan.oracle {
        Oracle::Truth => match &draft.truth {
            Some(truth) => Ok(critbench_sim::truth::oracle_critique(task, truth, &draft.text)),
            None => Err(OracleError::NoTruth { round }),
        },
        Oracle::Evaluator(index) => {
            let spec = &plan.experiment.evaluators[index];
            let evaluator = spec.spec.name.clone();
            let labelled = labelled
                .filter(|_| spec.spec.takes(task.kind.as_deref()))
                .ok_or_else(|| OracleError::NotTaken { round, evaluator: evaluator.clone() })?;
            let request = evaluation_request(labelled, &draft.text, round, draft.truth.as_ref());
            let mut scope = CallScope::new(&task.id, unit.epoch, round);
            let call = critique_with_retry(
                &plan.evaluators[index],
                &request,
                spec.spec.weights.as_ref(),
                plan.experiment.critic_attempts,
                &mut scope,
            );
            match call.error {
                Some(error) => Err(OracleError::Failed { round, evaluator, error }),
                None => Ok(call.critique),
            }
        }
    }
}
