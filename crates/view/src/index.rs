//! Every loop of a run as a few integers, for the lists that filter: its keys interned, the
//! critic's verdict, each held-out evaluator's verdict on its answer, and the interesting sets it
//! belongs to, read once from the tables by three column-projected scans.
//!
//! A loop is 24 bytes whatever its drafts, so a million loops hold about 24 MB, with their task
//! ids beside them; the drafts, critiques and verdicts of every round stay in the Parquet files
//! and are read for one task at a time by its page.

use std::collections::HashMap;
use std::path::PathBuf;

use arrow_array::Array;
use critbench_core::{Arm, ExitReason};
use critbench_report::queries::revision_sizes::NEAR_EMPTY;
use critbench_report::queries::round_spend::loop_key;
use critbench_storage::evaluations::{Answer, for_each_verdict};
use critbench_storage::scan::Scan;
use critbench_storage::tables::{StorageError, TrajectoryColumns, TrajectoryRow, for_each_outcome_stats_in};

const T: TrajectoryColumns = TrajectoryRow::COLUMNS;

/// The most held-out evaluators whose verdicts a loop keeps (two bits each); verdicts of any
/// beyond them are not listed.
pub const MAX_EVALUATORS: usize = 16;

/// The steering critic passed the loop's answer.
pub const CRITIC_PASSED: u16 = 1;
/// A round's critique failed every attempt.
pub const CRITIC_ERROR: u16 = 1 << 1;
/// The writer wrote no next draft when one was asked for (exit `writer_error`).
pub const WRITER_ERROR: u16 = 1 << 2;
/// A revision changed almost nothing (edit share below [`NEAR_EMPTY`]).
pub const NEAR_EMPTY_REVISION: u16 = 1 << 3;
/// An evaluator failed a draft and passed the next one it judged: fixed by a revision.
pub const FIXED: u16 = 1 << 4;
/// An evaluator passed a draft and failed the next one it judged: broken by a revision.
pub const BROKEN: u16 = 1 << 5;

/// An evaluator's verdict on a loop's answer, as two bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It did not judge the loop.
    None = 0,
    /// It passed the answer.
    Pass = 1,
    /// It failed the answer.
    Fail = 2,
    /// It failed on the first draft or the answer (every attempt): no verdict, and the loop is
    /// left out of its numbers, as the report leaves it out.
    Error = 3,
}

impl Verdict {
    fn from_bits(bits: u32) -> Verdict {
        match bits & 3 {
            1 => Verdict::Pass,
            2 => Verdict::Fail,
            3 => Verdict::Error,
            _ => Verdict::None,
        }
    }

    /// How a list shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::None => "",
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
        }
    }
}

/// One loop.
#[derive(Clone, Copy, Debug)]
pub struct Loop {
    /// Index into [`LoopIndex::tasks`].
    pub task: u32,
    /// The epoch.
    pub epoch: u32,
    /// Index into [`LoopIndex::configs`].
    pub config: u16,
    /// Index into [`LoopIndex::critics`].
    pub critic: u16,
    /// Index into [`Arm::ALL`].
    pub arm: u8,
    /// Index into [`ExitReason::ALL`]; `u8::MAX` for a censored loop.
    pub exit: u8,
    /// Rounds it ran.
    pub rounds: u16,
    /// [`CRITIC_PASSED`] and the sets it is in.
    pub flags: u16,
    /// Two bits per evaluator ([`Verdict`]), evaluator `i` at bits `2i`.
    pub verdicts: u32,
}

impl Loop {
    /// The arm.
    pub fn arm(&self) -> Arm {
        Arm::ALL[usize::from(self.arm)]
    }

    /// Why it stopped, when it did.
    pub fn exit(&self) -> Option<ExitReason> {
        ExitReason::ALL.get(usize::from(self.exit)).copied()
    }

    /// Evaluator `index`'s verdict on its answer.
    pub fn verdict(&self, index: usize) -> Verdict {
        if index >= MAX_EVALUATORS {
            return Verdict::None;
        }
        Verdict::from_bits(self.verdicts >> (2 * index))
    }

    /// Whether it has every flag of `flags`.
    pub fn has(&self, flags: u16) -> bool {
        self.flags & flags == flags
    }
}

/// Every loop of a run, in the order of `outcomes.parquet`.
#[derive(Debug, Default)]
pub struct LoopIndex {
    /// The configs, in order of first appearance.
    pub configs: Vec<String>,
    /// The steering critics, in order of first appearance.
    pub critics: Vec<String>,
    /// The task ids.
    pub tasks: Vec<String>,
    /// The held-out evaluators, in order of first appearance in `evaluations.parquet`.
    pub evaluators: Vec<String>,
    /// The loops.
    pub loops: Vec<Loop>,
}

/// Where the index reads from: each table's files (one, or a sharded run's partitions).
pub struct Tables {
    /// `outcomes.parquet`.
    pub outcomes: Vec<PathBuf>,
    /// `trajectories.parquet`.
    pub trajectories: Vec<PathBuf>,
    /// `evaluations.parquet` (none when the run has no evaluators).
    pub evaluations: Vec<PathBuf>,
}

fn intern(names: &mut Vec<String>, name: &str) -> usize {
    match names.iter().position(|n| n == name) {
        Some(i) => i,
        None => {
            names.push(name.to_string());
            names.len() - 1
        }
    }
}

impl LoopIndex {
    /// Reads the index from the run's tables: the outcomes (keys, verdict, exit, errors), the
    /// evaluations (each evaluator's verdicts, every round's when it judged every round) and the
    /// trajectories' edit shares (near-empty revisions), each a projection of a few columns read
    /// a batch at a time.
    pub fn build(tables: &Tables) -> Result<LoopIndex, StorageError> {
        let mut index = LoopIndex::default();
        let mut tasks: HashMap<String, u32> = HashMap::new();
        let mut by_key: HashMap<u128, u32> = HashMap::new();
        for_each_outcome_stats_in::<std::convert::Infallible>(&tables.outcomes, |row| {
            let task = match tasks.get(row.task_id) {
                Some(&task) => task,
                None => {
                    let task = index.tasks.len() as u32;
                    index.tasks.push(row.task_id.to_string());
                    tasks.insert(row.task_id.to_string(), task);
                    task
                }
            };
            let Some(arm) = Arm::parse(row.arm) else { return Ok(()) };
            let exit = row.exit_reason.and_then(|e| ExitReason::ALL.iter().position(|x| *x == e));
            let mut flags = 0;
            if row.passed {
                flags |= CRITIC_PASSED;
            }
            if row.critic_errors > 0 {
                flags |= CRITIC_ERROR;
            }
            if row.exit_reason == Some(ExitReason::WriterError) {
                flags |= WRITER_ERROR;
            }
            let entry = Loop {
                task,
                epoch: row.epoch,
                config: intern(&mut index.configs, row.config_id) as u16,
                critic: intern(&mut index.critics, row.critic) as u16,
                arm: Arm::ALL.iter().position(|a| *a == arm).unwrap_or(0) as u8,
                exit: exit.map_or(u8::MAX, |e| e as u8),
                rounds: u16::try_from(row.rounds).unwrap_or(u16::MAX),
                flags,
                verdicts: 0,
            };
            by_key
                .insert(loop_key(row.config_id, row.arm, row.critic, row.task_id, row.epoch), index.loops.len() as u32);
            index.loops.push(entry);
            Ok(())
        })?;
        drop(tasks);
        index.read_verdicts(&tables.evaluations, &by_key)?;
        index.read_revisions(&tables.trajectories, &by_key)?;
        Ok(index)
    }

    /// Each evaluator's verdict on each loop's answer, and the flips between the drafts it judged
    /// one after the other.
    fn read_verdicts(&mut self, files: &[PathBuf], by_key: &HashMap<u128, u32>) -> Result<(), StorageError> {
        // Per loop and evaluator: the rounds judged and the rounds passed, one bit a round.
        let mut rounds: Vec<Vec<(u64, u64)>> = Vec::new();
        for path in files {
            for_each_verdict::<std::convert::Infallible>(path, |v| {
                let Some(&at) = by_key.get(&loop_key(v.config_id, v.arm, v.critic, v.task_id, v.epoch)) else {
                    return Ok(());
                };
                let evaluator = intern(&mut self.evaluators, v.evaluator);
                if evaluator >= MAX_EVALUATORS {
                    return Ok(());
                }
                if rounds.len() <= evaluator {
                    rounds.resize_with(evaluator + 1, || vec![(0, 0); self.loops.len()]);
                }
                let entry = &mut self.loops[at as usize];
                let shift = 2 * evaluator;
                let current = Verdict::from_bits(entry.verdicts >> shift);
                let set = |entry: &mut Loop, verdict: Verdict| {
                    entry.verdicts = (entry.verdicts & !(3 << shift)) | ((verdict as u32) << shift);
                };
                match (v.answer, v.passed) {
                    (Answer::Round, _) => {}
                    (_, None) => set(entry, Verdict::Error),
                    (Answer::First, Some(_)) => {}
                    (_, Some(passed)) if current != Verdict::Error => {
                        set(entry, if passed { Verdict::Pass } else { Verdict::Fail })
                    }
                    _ => {}
                }
                if let (Some(passed), true) = (v.passed, v.round < 64) {
                    let bits = &mut rounds[evaluator][at as usize];
                    bits.0 |= 1 << v.round;
                    if passed {
                        bits.1 |= 1 << v.round;
                    }
                }
                Ok(())
            })?;
        }
        for per_loop in &rounds {
            for (entry, &(judged, passed)) in self.loops.iter_mut().zip(per_loop) {
                let mut previous: Option<bool> = None;
                for round in 0..64 {
                    if judged & (1 << round) == 0 {
                        continue;
                    }
                    let now = passed & (1 << round) != 0;
                    match previous {
                        Some(false) if now => entry.flags |= FIXED,
                        Some(true) if !now => entry.flags |= BROKEN,
                        _ => {}
                    }
                    previous = Some(now);
                }
            }
        }
        Ok(())
    }

    /// Marks the loops with a revision that changed almost nothing.
    fn read_revisions(&mut self, files: &[PathBuf], by_key: &HashMap<u128, u32>) -> Result<(), StorageError> {
        const COLUMNS: [&str; 7] = [T.config_id, T.arm, T.critic, T.task_id, T.epoch, T.round, T.edit_share];
        let loops = &mut self.loops;
        Scan::columns(&COLUMNS, &[]).for_each(files, |scanned| {
            let c = scanned.columns();
            let (round, share) = (c.int32_array(T.round)?, c.nullable_float_array(T.edit_share)?);
            let (config, arm, critic, task) =
                (c.text_array(T.config_id)?, c.text_array(T.arm)?, c.text_array(T.critic)?, c.text_array(T.task_id)?);
            let epoch = c.int32_array(T.epoch)?;
            for i in 0..scanned.num_rows() {
                if round.value(i) == 0 || !share.is_valid(i) || share.value(i) >= NEAR_EMPTY {
                    continue;
                }
                let epoch = u32::try_from(epoch.value(i)).unwrap_or(0);
                let key = loop_key(config.value(i), arm.value(i), critic.value(i), task.value(i), epoch);
                if let Some(&at) = by_key.get(&key) {
                    loops[at as usize].flags |= NEAR_EMPTY_REVISION;
                }
            }
            Ok(())
        })?;
        Ok(())
    }
}
