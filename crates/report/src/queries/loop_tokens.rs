//! Every model token a loop spent, writer's and critic's, read from `trajectories.parquet`: the
//! spend `cost_curves.csv` measures in tokens. `outcomes.parquet` counts the writer's tokens only.
//!
//! A trajectory file has a row per critique under each config, so a config's loop is the sum of
//! its own rows. The scan decodes the nine columns it needs, a batch at a time; the result holds
//! one number per loop that counted tokens (none for an offline run).

use std::collections::HashMap;
use std::path::PathBuf;

use arrow_array::{Array, Int64Array};
use critbench_storage::TableError;
use critbench_storage::scan::{Scan, ScanBatch};
use critbench_storage::tables::{RowDecision, StorageError, TrajectoryColumns, TrajectoryRow};

const T: TrajectoryColumns = TrajectoryRow::COLUMNS;
const DECISION: &str = RowDecision::COLUMNS.decision;
const EXIT_REASON: &str = RowDecision::COLUMNS.exit_reason;

/// The columns the scan decodes.
const COLUMNS: [&str; 11] = [
    T.config_id,
    T.arm,
    T.critic,
    T.task_id,
    T.epoch,
    T.tokens_in,
    T.tokens_out,
    T.critic_tokens_in,
    T.critic_tokens_out,
    DECISION,
    EXIT_REASON,
];

/// A loop's key for [`LoopTokens`]: its config, arm (as the file spells it), critic, task and epoch.
pub fn loop_key(config_id: &str, arm: &str, critic: &str, task_id: &str, epoch: u32) -> u128 {
    let mut key = String::with_capacity(config_id.len() + arm.len() + critic.len() + task_id.len() + 16);
    for part in [config_id, arm, critic, task_id] {
        key.push_str(part);
        key.push('\u{1f}');
    }
    key.push_str(&epoch.to_string());
    critbench_storage::hash128(&key)
}

/// Each loop's tokens (writer's and critic's, in and out), by [`loop_key`]; a loop whose rounds
/// counted none is absent.
pub type LoopTokens = HashMap<u128, u64>;

fn add_batch(tokens: &mut LoopTokens, scanned: &ScanBatch<'_>) -> Result<(), TableError> {
    let c = scanned.columns();
    let (config_id, arm, critic, task_id) =
        (c.text_array(T.config_id)?, c.text_array(T.arm)?, c.text_array(T.critic)?, c.text_array(T.task_id)?);
    let epoch = c.int32_array(T.epoch)?;
    let counted: [&Int64Array; 4] = [
        c.int64_array(T.tokens_in)?,
        c.int64_array(T.tokens_out)?,
        c.int64_array(T.critic_tokens_in)?,
        c.int64_array(T.critic_tokens_out)?,
    ];
    let (decision, exit_reason) = (c.text_array(DECISION)?, c.nullable_text_array(EXIT_REASON)?);
    for row in 0..scanned.num_rows() {
        // The adjudicator's call is not one of the loop's rounds.
        let exit = exit_reason.is_valid(row).then(|| exit_reason.value(row));
        if RowDecision::parse(decision.value(row), exit, scanned.row(row))? == RowDecision::Adjudicate {
            continue;
        }
        if counted.iter().all(|column| column.is_null(row)) {
            continue;
        }
        let spent: u64 = counted.iter().filter(|c| c.is_valid(row)).map(|c| c.value(row).max(0) as u64).sum();
        let epoch = u32::try_from(epoch.value(row)).unwrap_or(0);
        let key = loop_key(config_id.value(row), arm.value(row), critic.value(row), task_id.value(row), epoch);
        *tokens.entry(key).or_default() += spent;
    }
    Ok(())
}

/// The tokens of every loop of the table kept in `files` (one file, or a sharded run's
/// partitions).
pub fn read_loop_tokens(files: &[PathBuf]) -> Result<LoopTokens, StorageError> {
    let mut tokens = LoopTokens::new();
    Scan::columns(&COLUMNS, &[]).for_each(files, |scanned| add_batch(&mut tokens, scanned))?;
    Ok(tokens)
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
