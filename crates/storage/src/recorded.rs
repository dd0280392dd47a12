//! Loops as recorded, independent of any policy: what replay needs to judge a new policy on a
//! finished run without calling a model or a critic.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use arrow_array::RecordBatch;
use critbench_core::Arm;

use crate::columns::{BoxError, Columns, TableError};
use crate::critique_columns::CritiqueColumns;
use crate::parquet_sink::StorageError;
use crate::tables::{RowDecision, TrajectoryRow};

pub use crate::tables::DECISION_ADJUDICATE;

/// One critiqued round of a loop.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RecordedRound {
    /// The critic's critique of the round's draft.
    pub critique: CritiqueColumns,
    /// Critic calls made for this critique (1 unless some failed).
    pub critic_attempts: u32,
    /// Set when every attempt failed; the critique is then the conservative stand-in.
    pub critic_error: Option<String>,
    /// Set on a loop's last recorded round when the writer program wrote no next draft (it
    /// answered with an error or broke down): a policy that would revise after this round stops
    /// here with `writer_error`.
    pub writer_error: Option<String>,
    /// The draft's length in characters.
    pub draft_chars: u64,
    /// The draft's text, when the run stored drafts.
    pub draft: Option<String>,
    /// Time spent writing the draft.
    pub gen_ms: f64,
    /// Time spent critiquing it.
    pub critic_ms: f64,
    /// The writer's prompt tokens, when its backend counts them.
    pub tokens_in: Option<u64>,
    /// The writer's completion tokens, when its backend counts them.
    pub tokens_out: Option<u64>,
    /// Model tokens the critic spent on this round (a model judge), when known.
    pub critic_tokens_in: Option<u64>,
    /// The critic's completion tokens, when known.
    pub critic_tokens_out: Option<u64>,
    /// Whether the writer of this round's draft acted on the critique it was shown, when the
    /// author says (the offline writer does); `None` for a first draft or a blind revision.
    pub acted_on_critique: Option<bool>,
    /// Whether the model's draft was cut at its `max_tokens`; `None` without a model.
    pub draft_truncated: Option<bool>,
    /// The critic's model answers for this critique cut at their `max_tokens` (all attempts), when
    /// the critic asked a model.
    pub critic_truncated: Option<u64>,
    /// How much the draft changed the one before it (`critbench_core::edit_share`); `None` for a
    /// first draft and a fresh draft of the `resample` arm.
    pub edit_share: Option<f64>,
}

impl RecordedRound {
    /// Whether `other` is this round as another config's row recorded it: the same in everything
    /// but `writer_error`, which only the row of a config that asked for the next draft carries.
    fn same_critique(&self, other: &RecordedRound) -> bool {
        if self.writer_error == other.writer_error {
            return self == other;
        }
        let bare = |round: &RecordedRound| RecordedRound { writer_error: None, ..round.clone() };
        bare(self) == bare(other)
    }
}

/// One loop (task × arm × critic × epoch) as far as it was recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedLoop {
    /// The loop's critic.
    pub critic: String,
    /// Its arm (a label that is not an arm is refused when the file is read, with its row).
    pub arm: Arm,
    /// Its task.
    pub task_id: String,
    /// The task's kind, when its dataset row gave one.
    pub kind: Option<String>,
    /// Its epoch.
    pub epoch: u32,
    /// Its rounds, from round 0.
    pub rounds: Vec<RecordedRound>,
    /// The file holds an adjudicated final draft of this loop (a `decision = "adjudicate"` row).
    pub adjudicated: bool,
}

/// One row a file holds for a loop, in file order: a config's round and what the run's policy
/// did there.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopRow {
    /// The config whose row it is.
    pub config_id: String,
    /// The round.
    pub round: u32,
    /// Revisions made before it.
    pub revisions: u32,
    /// What the run's policy decided there (never [`RowDecision::Adjudicate`]: that row is not a
    /// round of the loop).
    pub decision: RowDecision,
    /// The row's own round when it is not the recording's at `round` (a config recorded on its
    /// own, in a direct sweep, whose writer or critic answered differently); `None` when it is.
    pub own: Option<RecordedRound>,
}

/// A recorded loop with every row the file holds for it (every config's), in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopWithRows {
    /// The loop as recorded.
    pub recorded: RecordedLoop,
    /// Its rows, every config's, in file order.
    pub rows: Vec<LoopRow>,
}

/// A loop's critic, arm, task and epoch.
type LoopKey = (String, Arm, String, u32);

/// Reads `trajectories.parquet` back into recorded loops (all of them, in file order). See
/// [`for_each_recorded_loop`] to stream them instead.
pub fn read_recorded_loops(path: &Path) -> Result<Vec<RecordedLoop>, StorageError> {
    let mut recorded = Vec::new();
    for_each_recorded_loop(path, |one| {
        recorded.push(one);
        Ok::<_, std::convert::Infallible>(())
    })?;
    Ok(recorded)
}

/// Streams `trajectories.parquet` loop by loop: a loop's rows (every config's, every round's)
/// are contiguous in the file, so only the loop being read is held, plus a 16-byte hash of each
/// finished loop to catch a file whose loops are not contiguous. Every config of a loop shares
/// the same recorded rounds up to its own stop, so the longest config's rows are the whole
/// recording. An error from `each` is reported with the file.
pub fn for_each_recorded_loop<E: Into<BoxError>>(
    path: &Path,
    mut each: impl FnMut(RecordedLoop) -> Result<(), E>,
) -> Result<(), StorageError> {
    stream_loops(path, false, |one| each(one.recorded).map_err(Into::into))
}

/// [`for_each_recorded_loop`] with each loop's rows as the file holds them, for a reader that
/// writes one row per row of the run (`critbench rescore`).
pub fn for_each_loop_with_rows<E: Into<BoxError>>(
    path: &Path,
    mut each: impl FnMut(LoopWithRows) -> Result<(), E>,
) -> Result<(), StorageError> {
    stream_loops(path, true, |one| each(one).map_err(Into::into))
}

fn stream_loops(
    path: &Path,
    with_rows: bool,
    mut each: impl FnMut(LoopWithRows) -> Result<(), BoxError>,
) -> Result<(), StorageError> {
    let mut current: Option<Current> = None;
    let mut finished: HashSet<u128> = HashSet::new();
    let mut first_row = 0;
    crate::scan::Scan::all().for_each(&[path], |scanned| {
        let batch = scanned.batch;
        let rows = batch.num_rows();
        read_batch(batch, first_row, &mut |key, kind, config_id, round, recorded, head| {
            if current.as_ref().is_none_or(|c| c.key != *key) {
                if let Some(done) = current.take() {
                    finished.insert(crate::hash128(&done.key));
                    each(done.finish()?).map_err(TableError::RefusedLoop)?;
                }
                if finished.contains(&crate::hash128(key)) {
                    return Err(TableError::NotContiguous {
                        task_id: key.2.clone(),
                        arm: key.1.as_str().to_string(),
                        critic: key.0.clone(),
                        epoch: key.3,
                    });
                }
                current = Some(Current {
                    key: key.clone(),
                    kind,
                    configs: HashMap::new(),
                    rows: Vec::new(),
                    adjudicated: false,
                });
            }
            let loop_rows = current.as_mut().expect("set above");
            if head.decision == RowDecision::Adjudicate {
                loop_rows.adjudicated = true;
                return Ok(());
            }
            if with_rows {
                loop_rows.rows.push(RowHead {
                    config_id: config_id.to_string(),
                    round,
                    revisions: head.revisions,
                    decision: head.decision,
                });
            }
            match loop_rows.configs.get_mut(config_id) {
                Some(rounds) => rounds.insert(round, recorded),
                None => loop_rows.configs.entry(config_id.to_string()).or_default().insert(round, recorded),
            };
            Ok(())
        })?;
        first_row += rows;
        Ok(())
    })?;
    if let Some(done) = current.take() {
        let done = done.finish().map_err(|source| StorageError::table(path, source))?;
        each(done).map_err(|source| StorageError::table(path, TableError::RefusedLoop(source)))?;
    }
    Ok(())
}

/// A row's place in its loop, kept until the loop is whole.
struct RowHead {
    config_id: String,
    round: u32,
    revisions: u32,
    decision: RowDecision,
}

/// The loop being read: config → round → recorded round.
struct Current {
    key: LoopKey,
    kind: Option<String>,
    configs: HashMap<String, BTreeMap<u32, RecordedRound>>,
    /// The loop's rows in file order, when they are wanted.
    rows: Vec<RowHead>,
    adjudicated: bool,
}

impl Current {
    fn finish(self) -> Result<LoopWithRows, TableError> {
        let key = self.key;
        let mut configs = self.configs;
        let longest = configs
            .iter()
            .max_by(|(a_id, a), (b_id, b)| a.len().cmp(&b.len()).then_with(|| b_id.cmp(a_id)))
            .map(|(id, _)| id.clone())
            .expect("a loop has at least one config");
        let rounds = configs.remove(&longest).expect("the longest config is a config");
        if rounds.keys().copied().ne(0..rounds.len() as u32) {
            return Err(TableError::RoundGaps {
                task_id: key.2,
                arm: key.1.as_str().to_string(),
                critic: key.0,
                epoch: key.3,
                rounds: rounds.into_keys().collect(),
            });
        }
        let mut rounds: Vec<RecordedRound> = rounds.into_values().collect();
        // A writer's error is on the row of the config that asked for the draft it did not write:
        // the recording carries it, whichever config's rows it was read from.
        let last = rounds.len() as u32 - 1;
        if let Some(error) = configs.values().find_map(|c| c.get(&last).and_then(|r| r.writer_error.clone())) {
            rounds.last_mut().expect("a loop has a round").writer_error.get_or_insert(error);
        }
        let rows = self
            .rows
            .into_iter()
            .map(|head| {
                let own = match head.config_id == longest {
                    true => None,
                    false => configs
                        .get_mut(&head.config_id)
                        .and_then(|own| own.remove(&head.round))
                        .filter(|own| rounds.get(head.round as usize).is_none_or(|round| !round.same_critique(own))),
                };
                LoopRow {
                    config_id: head.config_id,
                    round: head.round,
                    revisions: head.revisions,
                    decision: head.decision,
                    own,
                }
            })
            .collect();
        let recorded = RecordedLoop {
            critic: key.0,
            arm: key.1,
            task_id: key.2,
            kind: self.kind,
            epoch: key.3,
            rounds,
            adjudicated: self.adjudicated,
        };
        Ok(LoopWithRows { recorded, rows })
    }
}

/// What a row says of the policy: its revisions and decision (an adjudication row's is
/// [`RowDecision::Adjudicate`]).
struct PolicyColumns {
    revisions: u32,
    decision: RowDecision,
}

/// Receives one trajectory row: its loop key, kind, config, round, the recorded round and what
/// the policy did there.
type RowSink<'a> =
    dyn FnMut(&LoopKey, Option<String>, &str, u32, RecordedRound, PolicyColumns) -> Result<(), TableError> + 'a;

/// Decodes one batch (rows `first_row..` of its file) and hands each row to `row` with its loop
/// key, kind, config and round.
fn read_batch(batch: &RecordBatch, first_row: usize, row: &mut RowSink<'_>) -> Result<(), TableError> {
    let mut key: Option<LoopKey> = None;
    for one in TrajectoryRow::read_batch(&Columns(batch), first_row)? {
        // Reuse the key's strings: most rows belong to the loop of the row before.
        let same = key.as_ref().is_some_and(|key| {
            (key.0.as_str(), key.1, key.2.as_str(), key.3) == (one.critic, one.arm, one.task_id, one.epoch)
        });
        if !same {
            key = Some((one.critic.to_string(), one.arm, one.task_id.to_string(), one.epoch));
        }
        let key = key.as_ref().expect("set above");
        let recorded = RecordedRound {
            critique: one.critique.into_owned(),
            critic_attempts: one.critic_attempts,
            critic_error: one.critic_error.map(str::to_string),
            writer_error: one.writer_error.map(str::to_string),
            draft_chars: one.draft_chars,
            draft: one.draft.map(str::to_string),
            gen_ms: one.gen_ms,
            critic_ms: one.critic_ms,
            tokens_in: one.tokens_in,
            tokens_out: one.tokens_out,
            critic_tokens_in: one.critic_tokens_in,
            critic_tokens_out: one.critic_tokens_out,
            acted_on_critique: one.acted_on_critique,
            draft_truncated: one.draft_truncated,
            critic_truncated: one.critic_truncated,
            edit_share: one.edit_share,
        };
        let policy = PolicyColumns { revisions: one.revisions, decision: one.decision };
        row(key, one.kind.map(str::to_string), one.config_id, one.round, recorded, policy)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::TrajectoryWriter;
    use critbench_core::{Decision, ExitReason};

    fn write(path: &Path, loops: &[(&str, u32, &str, u32)]) {
        let mut writer = TrajectoryWriter::create(path).unwrap();
        for &(task_id, epoch, config_id, round) in loops {
            let critique = CritiqueColumns::scored(f64::from(round));
            writer
                .push(&TrajectoryRow {
                    config_id,
                    epoch,
                    best_score: 0.0,
                    ..TrajectoryRow::bare(task_id, round, &critique)
                })
                .unwrap();
        }
        writer.close().unwrap();
    }

    #[test]
    fn loops_stream_one_at_a_time_with_their_longest_config() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectories.parquet");
        let mut rows = Vec::new();
        // 6,000 loops (several batches); config c1 stopped after 2 rounds, c2 after 3.
        let ids: Vec<String> = (0..3000).map(|t| format!("t{t}")).collect();
        for id in &ids {
            for epoch in 0..2 {
                rows.extend([(id.as_str(), epoch, "c1", 0), (id.as_str(), epoch, "c1", 1)]);
                rows.extend([
                    (id.as_str(), epoch, "c2", 0),
                    (id.as_str(), epoch, "c2", 1),
                    (id.as_str(), epoch, "c2", 2),
                ]);
            }
        }
        write(&path, &rows);
        let mut seen = 0;
        for_each_recorded_loop::<std::convert::Infallible>(&path, |one| {
            assert_eq!(one.task_id, ids[seen / 2]);
            assert_eq!(one.epoch, (seen % 2) as u32);
            assert_eq!(one.rounds.iter().map(|r| r.critique.score).collect::<Vec<_>>(), [0.0, 1.0, 2.0]);
            seen += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, 6000);
    }

    #[test]
    fn a_loop_comes_with_its_rows_in_file_order_and_a_row_that_differs_keeps_its_own_round() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectories.parquet");
        let mut writer = TrajectoryWriter::create(&path).unwrap();
        // c1 stopped at round 1, c2 at round 2; c2's round 1 was critiqued differently.
        let (revise, stop) =
            (RowDecision::Policy(Decision::Revise), RowDecision::Policy(Decision::Stop(ExitReason::Budget)));
        let scores = [("c1", 0, 3.0, revise), ("c1", 1, 6.0, stop), ("c2", 0, 3.0, revise)];
        let more = [("c2", 1, 6.5, revise), ("c2", 2, 9.0, stop)];
        for (config_id, round, score, decision) in scores.into_iter().chain(more) {
            let critique = CritiqueColumns::scored(score);
            writer
                .push(&TrajectoryRow {
                    config_id,
                    decision,
                    best_score: 0.0,
                    ..TrajectoryRow::bare("t", round, &critique)
                })
                .unwrap();
        }
        writer.close().unwrap();
        let mut loops = Vec::new();
        for_each_loop_with_rows(&path, |one| {
            loops.push(one);
            Ok::<_, std::convert::Infallible>(())
        })
        .unwrap();
        let [one] = &loops[..] else { panic!("one loop: {loops:?}") };
        assert_eq!(one.recorded.rounds.iter().map(|r| r.critique.score).collect::<Vec<_>>(), [3.0, 6.5, 9.0]);
        let rows: Vec<(&str, u32, RowDecision)> =
            one.rows.iter().map(|r| (r.config_id.as_str(), r.round, r.decision)).collect();
        assert_eq!(rows, [("c1", 0, revise), ("c1", 1, stop), ("c2", 0, revise), ("c2", 1, revise), ("c2", 2, stop)]);
        let own: Vec<Option<f64>> = one.rows.iter().map(|r| r.own.as_ref().map(|o| o.critique.score)).collect();
        assert_eq!(own, [None, Some(6.0), None, None, None], "only c1's round 1 is not the recording's");
        // Without the rows, the same recording.
        assert_eq!(read_recorded_loops(&path).unwrap(), std::slice::from_ref(&one.recorded));
    }

    #[test]
    fn an_arm_that_is_not_core_s_is_refused_when_the_loops_are_read_with_its_file_row_and_column() {
        use arrow_array::cast::AsArray;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectories.parquet");
        write(&path, &[("a", 0, "c1", 0), ("a", 0, "c1", 1), ("a", 0, "c1", 2)]);
        let mut batches = Vec::new();
        crate::scan::Scan::all()
            .for_each(&[&path], |scanned| {
                batches.push(scanned.batch.clone());
                Ok(())
            })
            .unwrap();
        let [batch] = &batches[..] else { panic!("one batch") };
        let index = batch.schema().index_of("arm").unwrap();
        let mut arms: Vec<String> = batch.column(index).as_string::<i32>().iter().map(|v| v.unwrap().into()).collect();
        arms[2] = "feedbak".into();
        let mut columns = batch.columns().to_vec();
        columns[index] = std::sync::Arc::new(arrow_array::StringArray::from(arms));
        let mut sink = crate::parquet_sink::ParquetSink::create(
            &path,
            batch.schema(),
            "trajectories",
            crate::tables::DICTIONARY_COLUMNS,
        )
        .unwrap();
        sink.write(columns).unwrap();
        sink.close().unwrap();

        let expected = format!(
            "{}: row 2: column `arm` holds `feedbak`, which is not an arm (feedback, no-feedback, single, \
             feedback+memory, placebo, resample, oracle)",
            path.display()
        );
        // Replay's reader and rescore's (with the rows) both refuse it before handing over a loop.
        let error = read_recorded_loops(&path).unwrap_err().to_string();
        assert_eq!(error, expected);
        let mut handed = 0;
        let error = for_each_loop_with_rows(&path, |_| {
            handed += 1;
            Ok::<_, std::convert::Infallible>(())
        })
        .unwrap_err()
        .to_string();
        assert_eq!((error, handed), (expected, 0));
    }

    #[test]
    fn a_loop_split_across_the_file_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectories.parquet");
        write(&path, &[("a", 0, "c1", 0), ("b", 0, "c1", 0), ("a", 0, "c1", 1)]);
        let error = read_recorded_loops(&path).unwrap_err().to_string();
        assert!(
            error.contains("trajectories.parquet")
                && error.contains("loop a × feedback × rubric × epoch 0 are not contiguous"),
            "{error}"
        );
        write(&path, &[("a", 0, "c1", 0), ("a", 0, "c1", 2)]);
        let error = read_recorded_loops(&path).unwrap_err().to_string();
        assert!(error.contains("has rounds [0, 2]"), "{error}");
    }
}
