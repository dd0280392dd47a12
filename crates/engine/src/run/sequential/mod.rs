//! A sequential run (`[sequential]`, docs/REFERENCE.md): tasks are admitted in a seeded random
//! order, whole tasks at a time, and the run stops admitting them once the comparison it follows
//! is settled by an anytime-valid confidence sequence ([`critbench_stats::sequential`]).
//!
//! It is built on the run's stages (the source hands on chunks in its order, the follower wraps the
//! sink), and the stages name none of it: the one thing they keep of a sequential run, each task's
//! paired differences committed with its rows, is the journal's ([`Paired`], [`TaskValues`]), a
//! level below both; the gate is applied where the run drives its passes.
//! - [`order_key`]: a task's place in the admission order, a hash of the seed and the task id;
//!   sorted by key, the tasks are a permutation that depends on neither the datasets' order nor
//!   threads, the same on resume. [`look_of`]: the look whose tasks the k-th task is among.
//! - [`Gate`]: the source admits at most one look ahead: a chunk of look L + 2 waits until look
//!   L is decided, and once a look stops the run, nothing past the next look is admitted. The
//!   tasks a run ends with are therefore those through the look after the deciding one, whatever
//!   `--jobs` is and however fast the loops finish.
//! - [`Order`]: a first pass over the datasets admits every row exactly as a plain run does (bad
//!   rows, `--limit`, duplicate ids) and keeps, per task to run, only its key and where to read it
//!   again; the source then hands on chunks in the key's order, none straddling a look, each once
//!   the gate admits it.
//! - [`Follower`]: at the sink, in source order, each task's paired difference per config ×
//!   critic ([`Paired`], [`TaskValues`]) goes to the monitor, which looks at `min_tasks`, every
//!   `check_every` tasks, and at the budget; each look's decision goes to the gate; the values are
//!   committed with the task's rows (the journal's `sequential`), so a resumed run replays them
//!   into a monitor that continues the same sequence; at the end, the manifest's record.
//! - [`SequentialError`]: why a sequential run cannot start or go on.

mod follow;
mod gate;
mod order;

pub(crate) use follow::Follower;
pub(crate) use gate::Gate;
pub(crate) use order::Order;

pub(crate) use crate::run_dir::journal::{Paired, TaskValues};

use std::path::PathBuf;

use critbench_core::{SeedKey, derive_seed};

/// What a task's place in the order is drawn from, so the order is its own random choice.
const PURPOSE: &str = "sequential-order";

/// A task's key in the admission order: 128 bits of (seed, task id), from the seeding every random
/// choice of a run uses ([`derive_seed`]), stable across machines and versions.
pub fn order_key(seed: u64, task_id: &str) -> u128 {
    let half = |round| u128::from(derive_seed(&SeedKey { seed, task_id, epoch: 0, round, purpose: PURPOSE }));
    (half(0) << 64) | half(1)
}

/// The look whose tasks the `k`-th admitted task (from 1) is among: the first look comes at
/// `min_tasks`, then one every `check_every` tasks, and one at the budget.
pub fn look_of(k: u64, min_tasks: u64, check_every: u64) -> u64 {
    if k <= min_tasks { 1 } else { 1 + (k - min_tasks).div_ceil(check_every) }
}

/// Why a sequential run cannot start or go on.
#[derive(Debug, thiserror::Error)]
pub enum SequentialError {
    /// A sequential run asked to run as a shard.
    #[error(
        "[sequential] runs in one piece and cannot run as a shard (--shard, or a Slurm or Kubernetes array task): \
         each shard would stop on the evidence of its own tasks alone, and the shards together would not be the run \
         the rule decided; run it without shards, or remove [sequential] to shard it"
    )]
    Sharded,
    /// The deciding comparison's critic takes none of the run's tasks.
    #[error(
        "[sequential.decides]: critic `{critic}` takes none of the {tasks} task(s) the run admits, so the comparison \
         that decides can never be followed; give it tasks of its `kinds`, or let another comparison decide"
    )]
    NoTasks {
        /// The critic.
        critic: String,
        /// Tasks the run admits.
        tasks: u64,
    },
    /// A dataset changed while the run read it.
    #[error(
        "{}: {row_label} {row} no longer holds the task the run read there when it started (the file changed while \
         the run read it); run again on a file that does not change",
        path.display()
    )]
    Changed {
        /// The dataset file.
        path: PathBuf,
        /// The row (or line) that changed.
        row: u64,
        /// What a row is called in that file ("row" or "line").
        row_label: &'static str,
    },
    /// The sequential monitor refused a task (a bug).
    #[error("the sequential monitor refused a task (please report): {0}")]
    Monitor(#[from] critbench_stats::sequential::MonitorError),
    /// The journal's sequential record and the rows written disagree (a bug).
    #[error(
        "the journal's sequential record holds {recorded} task(s) but {written} were written (please report); start \
         again with --overwrite"
    )]
    Journal {
        /// Tasks the record holds.
        recorded: u64,
        /// Tasks written.
        written: u64,
    },
}

impl SequentialError {
    /// Whether the user can fix this (exit status 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, SequentialError::Sharded | SequentialError::NoTasks { .. } | SequentialError::Changed { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_split_the_order_at_min_tasks_then_every_check_every() {
        let looks: Vec<u64> = (1..=45).map(|k| look_of(k, 20, 10)).collect();
        assert!(looks[..20].iter().all(|&l| l == 1));
        assert!(looks[20..30].iter().all(|&l| l == 2));
        assert_eq!((looks[30], looks[39], looks[40], looks[44]), (3, 3, 4, 4));
        // Every look of the monitor's schedule ends its run of tasks.
        let rule = critbench_stats::sequential::Rule { min_tasks: 20, check_every: 10, ..Default::default() };
        let mut monitor = critbench_stats::sequential::Monitor::new(rule, Some(45), 1).unwrap();
        for k in 1..=45u64 {
            if let Some(look) = monitor.add_task(&[Some(0.0)]).unwrap() {
                assert_eq!(look_of(k, 20, 10), look.look);
                assert!(k == 45 || look_of(k + 1, 20, 10) == look.look + 1, "look {} ends at task {k}", look.look);
            }
        }
    }

    #[test]
    fn the_order_key_depends_on_the_seed_and_the_id_only() {
        assert_eq!(order_key(7, "paper-001"), order_key(7, "paper-001"));
        assert_ne!(order_key(7, "paper-001"), order_key(8, "paper-001"));
        assert_ne!(order_key(7, "paper-001"), order_key(7, "paper-002"));
        // Pinned: a resumed run, another machine or another build must draw the same order.
        assert_eq!(format!("{:032x}", order_key(0, "t")), "9ff955075f44fce4d3455aae05bce272");
        // A sorted list of ids comes out shuffled.
        let mut ids: Vec<String> = (0..100).map(|i| format!("t{i:03}")).collect();
        ids.sort_by_key(|id| order_key(1, id));
        let in_place = ids.iter().enumerate().filter(|(i, id)| **id == format!("t{i:03}")).count();
        assert!(in_place < 10, "{in_place} of 100 ids kept their place");
    }
}
