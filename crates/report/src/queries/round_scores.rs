//! Mean critic score by round, per config × critic × arm, read from `trajectories.parquet`: the
//! score trajectory the reports draw.
//!
//! A trajectory file has a row per critique and can be far larger than memory, so the scan decodes
//! only the seven columns needed (the other columns, drafts included, are never decompressed) and
//! each batch is folded into running sums as it goes. Memory is one batch plus one accumulator per
//! (config, critic, arm, round).
//!
//! ```no_run
//! let files = [std::path::PathBuf::from("reports/demo/trajectories.parquet")];
//! let rounds = critbench_report::queries::round_scores::read_round_scores(&files)?;
//! for r in &rounds {
//!     println!("{} {} {} round {}: {:.2} over {} loops", r.config_id, r.critic, r.arm, r.round, r.mean_score, r.count);
//! }
//! # Ok::<(), critbench_storage::tables::StorageError>(())
//! ```

use std::collections::HashMap;
use std::path::PathBuf;

use arrow_array::Array;
use critbench_core::Arm;
use critbench_storage::TableError;
use critbench_storage::critique_columns::CritiqueColumns;
use critbench_storage::scan::{Scan, ScanBatch};
use critbench_storage::tables::{RowDecision, StorageError, TrajectoryColumns, TrajectoryRow, parse_label};

const T: TrajectoryColumns = TrajectoryRow::COLUMNS;
const SCORE: &str = CritiqueColumns::COLUMNS.score;
const DECISION: &str = RowDecision::COLUMNS.decision;
const EXIT_REASON: &str = RowDecision::COLUMNS.exit_reason;

/// The columns the scan decodes.
const COLUMNS: [&str; 7] = [T.config_id, T.critic, T.arm, T.round, SCORE, DECISION, EXIT_REASON];

/// The critiques of one round of one config × critic × arm, averaged.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundMean {
    /// The config.
    pub config_id: String,
    /// The critic.
    pub critic: String,
    /// The arm.
    pub arm: Arm,
    /// The round, from 0.
    pub round: u32,
    /// Mean critic score over the loops that reached this round. Loops that stopped earlier are
    /// not in it, so later rounds average the harder tasks.
    pub mean_score: f64,
    /// How many loops reached this round (critiques averaged).
    pub count: u64,
}

/// Running sums for one (config, critic, arm): index = round.
#[derive(Default)]
struct Series {
    sums: Vec<f64>,
    counts: Vec<u64>,
}

impl Series {
    fn add(&mut self, round: usize, score: f64) {
        if self.sums.len() <= round {
            self.sums.resize(round + 1, 0.0);
            self.counts.resize(round + 1, 0);
        }
        self.sums[round] += score;
        self.counts[round] += 1;
    }
}

/// Accumulators keyed config → critic → arm, so a row's strings are looked up by reference and a
/// key is allocated only the first time it is seen.
#[derive(Default)]
struct Accumulator {
    index: HashMap<String, HashMap<String, HashMap<String, usize>>>,
    keys: Vec<(String, String, Arm)>,
    series: Vec<Series>,
}

impl Accumulator {
    /// The slot of a key; a key seen for the first time has its arm parsed, so an arm that is not
    /// core's is refused naming `row`, the file's row it is first seen in.
    fn slot(&mut self, config_id: &str, critic: &str, arm: &str, row: usize) -> Result<usize, TableError> {
        if let Some(&slot) = self.index.get(config_id).and_then(|c| c.get(critic)).and_then(|a| a.get(arm)) {
            return Ok(slot);
        }
        let parsed: Arm = parse_label(arm, T.arm, row)?;
        let slot = self.series.len();
        self.keys.push((config_id.to_string(), critic.to_string(), parsed));
        self.series.push(Series::default());
        self.index
            .entry(config_id.to_string())
            .or_default()
            .entry(critic.to_string())
            .or_default()
            .insert(arm.to_string(), slot);
        Ok(slot)
    }

    /// Adds a batch of the scan.
    fn add_batch(&mut self, scanned: &ScanBatch<'_>) -> Result<(), TableError> {
        let c = scanned.columns();
        let (config_id, critic, arm) = (c.text_array(T.config_id)?, c.text_array(T.critic)?, c.text_array(T.arm)?);
        // The adjudicated final draft is not a round of the loop's trajectory.
        let (decision, exit_reason) = (c.text_array(DECISION)?, c.nullable_text_array(EXIT_REASON)?);
        let (round, score) = (c.int32_array(T.round)?, c.float_array(SCORE)?);
        // Rows arrive loop by loop, so consecutive rows nearly always share their key: remember
        // the last one instead of hashing three strings per row.
        let mut last: Option<(usize, usize)> = None; // (row it was looked up for, slot)
        for row in 0..scanned.num_rows() {
            let exit = exit_reason.is_valid(row).then(|| exit_reason.value(row));
            if RowDecision::parse(decision.value(row), exit, scanned.row(row))? == RowDecision::Adjudicate {
                continue;
            }
            let same_key = |previous: usize| {
                config_id.value(previous) == config_id.value(row)
                    && critic.value(previous) == critic.value(row)
                    && arm.value(previous) == arm.value(row)
            };
            let slot = match last {
                Some((previous, slot)) if same_key(previous) => slot,
                _ => self.slot(config_id.value(row), critic.value(row), arm.value(row), scanned.row(row))?,
            };
            last = Some((row, slot));
            let round_number =
                usize::try_from(round.value(row)).map_err(|_| TableError::NegativeRound(round.value(row)))?;
            self.series[slot].add(round_number, score.value(row));
        }
        Ok(())
    }

    fn finish(self) -> Vec<RoundMean> {
        let mut rows: Vec<RoundMean> = self
            .keys
            .into_iter()
            .zip(self.series)
            .flat_map(|((config_id, critic, arm), series)| {
                series.sums.into_iter().zip(series.counts).enumerate().filter(|(_, (_, count))| *count > 0).map(
                    move |(round, (sum, count))| RoundMean {
                        config_id: config_id.clone(),
                        critic: critic.clone(),
                        arm,
                        round: round as u32,
                        mean_score: sum / count as f64,
                        count,
                    },
                )
            })
            .collect();
        // By the arm as the output spells it, as the reports list it.
        rows.sort_by(|a, b| {
            (&a.config_id, &a.critic, a.arm.as_str(), a.round).cmp(&(&b.config_id, &b.critic, b.arm.as_str(), b.round))
        });
        rows
    }
}

/// The mean score and count per (config_id, critic, arm, round) of one table kept in `files` (one
/// file, or a sharded run's partitions), sorted by those keys. Streams: only the seven columns it
/// needs are decoded, a batch at a time.
pub fn read_round_scores(files: &[PathBuf]) -> Result<Vec<RoundMean>, StorageError> {
    let mut accumulator = Accumulator::default();
    Scan::columns(&COLUMNS, &[]).for_each(files, |scanned| accumulator.add_batch(scanned))?;
    Ok(accumulator.finish())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use critbench_storage::tables::TrajectoryWriter;

    use super::*;

    fn row<'a>(
        config_id: &'a str,
        arm: &'a str,
        task_id: &'a str,
        round: u32,
        critique: &'a CritiqueColumns,
    ) -> TrajectoryRow<'a> {
        TrajectoryRow {
            config_id,
            arm: critbench_core::Arm::parse(arm).expect("an arm as the output spells it"),
            draft: Some("a stored draft the reader must not need"),
            ..TrajectoryRow::bare(task_id, round, critique)
        }
    }

    #[test]
    fn every_column_read_is_a_declared_trajectory_column() {
        let schema = critbench_storage::tables::trajectory_schema();
        for name in COLUMNS {
            assert!(schema.index_of(name).is_ok(), "`{name}` is not a column of trajectories.parquet");
        }
    }

    #[test]
    fn averages_each_round_of_each_arm_across_batches() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectories.parquet");
        let mut writer = TrajectoryWriter::create(&path).unwrap();
        // 30,000 loops span several writer and reader batches; arms interleave so the reader's
        // last-key shortcut is exercised on key changes as well as runs.
        let mut expected: BTreeMap<(&str, &str, u32), (f64, u64)> = BTreeMap::new();
        for task in 0..30_000u32 {
            let task_id = format!("t{task}");
            for (arm, config) in [("feedback", "c1"), ("no-feedback", "c1"), ("feedback", "c2")] {
                let rounds = 1 + task % 3;
                for round in 0..rounds {
                    let score = f64::from((task + round) % 11);
                    let critique = CritiqueColumns::scored(score);
                    writer.push(&row(config, arm, &task_id, round, &critique)).unwrap();
                    let entry = expected.entry((config, arm, round)).or_default();
                    entry.0 += score;
                    entry.1 += 1;
                }
            }
        }
        writer.close().unwrap();

        let scores = read_round_scores(std::slice::from_ref(&path)).unwrap();
        assert_eq!(scores.len(), expected.len());
        for score in &scores {
            let (sum, count) = expected[&(score.config_id.as_str(), score.arm.as_str(), score.round)];
            assert_eq!(score.critic, "rubric");
            assert_eq!(score.count, count, "{score:?}");
            assert!((score.mean_score - sum / count as f64).abs() < 1e-9, "{score:?}");
        }
        // Sorted by config, critic, arm, round; later rounds have fewer loops.
        assert_eq!((scores[0].config_id.as_str(), scores[0].arm.as_str(), scores[0].round), ("c1", "feedback", 0));
        assert_eq!(scores[0].count, 30_000);
        assert_eq!(scores[2].count, 10_000);
    }

    #[test]
    fn a_file_without_the_columns_is_corrupt_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outcomes.parquet");
        let writer = critbench_storage::tables::OutcomeWriter::create(&path).unwrap();
        writer.close().unwrap();
        let error = read_round_scores(std::slice::from_ref(&path)).unwrap_err().to_string();
        assert!(error.contains("outcomes.parquet") && error.contains("missing column `round`"), "{error}");
        let error = read_round_scores(&[dir.path().join("none.parquet")]).unwrap_err().to_string();
        assert!(error.contains("none.parquet"), "{error}");
    }
}
