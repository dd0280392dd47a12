//! Each round's spend and score, read from `trajectories.parquet`: its model tokens (the writer's
//! and the critic's, in and out) and its cost, which `cost_curves.csv` cuts loops by, and the
//! critic's score, which says what a loop capped there answers. `outcomes.parquet` has only each
//! loop's sums.
//!
//! A trajectory file has a row per critique under each config, so a config's loop is its own
//! rows. The scan decodes the columns it needs, a batch at a time; the result holds each round of
//! the loops that counted tokens (none for an offline run), or of every loop when asked.

use std::collections::HashMap;
use std::path::PathBuf;

use arrow_array::{Array, Float64Array, Int64Array};
use critbench_storage::TableError;
use critbench_storage::scan::{Scan, ScanBatch};
use critbench_storage::tables::{RowDecision, StorageError, TrajectoryColumns, TrajectoryRow};

const T: TrajectoryColumns = TrajectoryRow::COLUMNS;
const DECISION: &str = RowDecision::COLUMNS.decision;
const EXIT_REASON: &str = RowDecision::COLUMNS.exit_reason;

/// The columns the scan decodes.
const COLUMNS: [&str; 15] = [
    T.config_id,
    T.arm,
    T.critic,
    T.task_id,
    T.epoch,
    T.round,
    T.tokens_in,
    T.tokens_out,
    T.critic_tokens_in,
    T.critic_tokens_out,
    T.cost,
    critbench_storage::critique_columns::CritiqueColumns::COLUMNS.score,
    critbench_storage::critique_columns::CritiqueColumns::COLUMNS.fatal_issues,
    DECISION,
    EXIT_REASON,
];

/// A loop's key for [`RoundSpends`]: its config, arm (as the file spells it), critic, task and epoch.
pub fn loop_key(config_id: &str, arm: &str, critic: &str, task_id: &str, epoch: u32) -> u128 {
    let mut key = String::with_capacity(config_id.len() + arm.len() + critic.len() + task_id.len() + 16);
    for part in [config_id, arm, critic, task_id] {
        key.push_str(part);
        key.push('\u{1f}');
    }
    key.push_str(&epoch.to_string());
    critbench_storage::hash128(&key)
}

/// What one round spent: its tokens, writer's and critic's, in and out, when it counted any; its
/// cost, when it was priced; and how its critic scored it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spent {
    /// Its tokens, writer's and critic's, in and out.
    pub tokens: Option<u64>,
    /// Its `cost`.
    pub cost: Option<f64>,
    /// The critic's score and whether it named a fatal issue: what picks a loop's best draft.
    pub score: critbench_core::RoundScore,
}

impl Default for Spent {
    /// A round the table has no row for: nothing spent, scored 0.
    fn default() -> Spent {
        Spent { tokens: None, cost: None, score: critbench_core::RoundScore::new(0.0) }
    }
}

/// Each loop's rounds, in order, by [`loop_key`]; unless every loop is asked for, a loop none of
/// whose rounds counted tokens is absent.
pub type RoundSpends = HashMap<u128, Vec<Spent>>;

fn add_batch(spends: &mut RoundSpends, scanned: &ScanBatch<'_>, every_loop: bool) -> Result<(), TableError> {
    let c = scanned.columns();
    let (config_id, arm, critic, task_id) =
        (c.text_array(T.config_id)?, c.text_array(T.arm)?, c.text_array(T.critic)?, c.text_array(T.task_id)?);
    let (epoch, round) = (c.int32_array(T.epoch)?, c.int32_array(T.round)?);
    let counted: [&Int64Array; 4] = [
        c.int64_array(T.tokens_in)?,
        c.int64_array(T.tokens_out)?,
        c.int64_array(T.critic_tokens_in)?,
        c.int64_array(T.critic_tokens_out)?,
    ];
    let cost: &Float64Array = c.nullable_float_array(T.cost)?;
    let score = c.float_array(critbench_storage::critique_columns::CritiqueColumns::COLUMNS.score)?;
    let fatal = c.list_lengths(critbench_storage::critique_columns::CritiqueColumns::COLUMNS.fatal_issues)?;
    let (decision, exit_reason) = (c.text_array(DECISION)?, c.nullable_text_array(EXIT_REASON)?);
    for (row, &fatal) in fatal.iter().enumerate() {
        // The adjudicator's call is not one of the loop's rounds.
        let exit = exit_reason.is_valid(row).then(|| exit_reason.value(row));
        if RowDecision::parse(decision.value(row), exit, scanned.row(row))? == RowDecision::Adjudicate {
            continue;
        }
        let untokened = counted.iter().all(|column| column.is_null(row));
        if untokened && !every_loop {
            continue;
        }
        let tokens: u64 = counted.iter().filter(|c| c.is_valid(row)).map(|c| c.value(row).max(0) as u64).sum();
        let score =
            critbench_core::RoundScore { fatal: fatal > 0, ..critbench_core::RoundScore::new(score.value(row)) };
        let spent =
            Spent { tokens: (!untokened).then_some(tokens), cost: cost.is_valid(row).then(|| cost.value(row)), score };
        let epoch = u32::try_from(epoch.value(row)).unwrap_or(0);
        let key = loop_key(config_id.value(row), arm.value(row), critic.value(row), task_id.value(row), epoch);
        let rounds = spends.entry(key).or_default();
        let round = usize::try_from(round.value(row)).unwrap_or(0);
        if rounds.len() <= round {
            rounds.resize(round + 1, Spent::default());
        }
        rounds[round] = spent;
    }
    Ok(())
}

/// Each round's spend and score of the loops of the table kept in `files` (one file, or a sharded
/// run's partitions): those that counted tokens, or every loop with `every_loop`.
pub fn read_round_spends(files: &[PathBuf], every_loop: bool) -> Result<RoundSpends, StorageError> {
    let mut spends = RoundSpends::new();
    Scan::columns(&COLUMNS, &[]).for_each(files, |scanned| add_batch(&mut spends, scanned, every_loop))?;
    Ok(spends)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_read_is_a_declared_trajectory_column() {
        let schema = critbench_storage::tables::trajectory_schema();
        for name in COLUMNS {
            assert!(schema.index_of(name).is_ok(), "`{name}` is not a column of trajectories.parquet");
        }
    }

    #[test]
    fn a_key_names_one_loop() {
        let key = loop_key("p8", "feedback", "judge", "t1", 0);
        assert_eq!(key, loop_key("p8", "feedback", "judge", "t1", 0));
        assert_ne!(key, loop_key("p8", "feedback", "judge", "t1", 1));
        assert_ne!(key, loop_key("p8", "feedback", "judget", "1", 0), "the parts are kept apart");
    }
}
