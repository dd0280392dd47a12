//! Bounds that keep a typo from eating the machine. A worker records every loop of a task (each
//! critic × epoch × arm, and each config of a direct sweep) before the task's rows go to the
//! sink, so the product of those counts and the rounds of each loop is what one task holds in
//! memory; a chunk of tasks holds that many times over. The bounds sit far above any experiment
//! we know of and far below what the machine can hold (docs/REFERENCE.md gives the figures).

use critbench_core::{Arm, Policy};

/// The most `epochs`: every epoch repeats every loop of every task.
pub const MAX_EPOCHS: u32 = 1000;
/// The most `max_revisions`: a loop holds up to this plus one rounds.
pub const MAX_REVISIONS: u32 = 1000;
/// The most configs a `[policy]` grid (or `critbench replay`'s flags) may make.
pub const MAX_CONFIGS: usize = 10_000;
/// The largest `[judge] repeats` (and `critbench judge --repeats`).
pub const MAX_JUDGE_REPEATS: u32 = 1000;
/// The most critiqued rounds the loops of one task may record: they are held in memory together.
/// A task at the bound peaked at 129 MB resident (331 MB with its drafts stored), measured on the
/// simulator with the rubric critic (docs/REFERENCE.md, Limits).
pub const MAX_ROUNDS_PER_TASK: u64 = 50_000;
/// The rounds a chunk of tasks may hold at most (a chunk of one task may hold that task's): about
/// what a chunk of the demo's 256 tasks holds. The run keeps `2 × jobs + 2` chunks in flight.
pub const MAX_ROUNDS_PER_CHUNK: u64 = 20_000;

/// A bound broken, with what to lower. The message names the key (or flag) and the bound.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// More epochs than [`MAX_EPOCHS`] (the number given).
    #[error(
        "`epochs` = {0} is more than {MAX_EPOCHS}: every epoch repeats every loop of every task, and a task's \
         loops are held in memory together; give at most {MAX_EPOCHS}"
    )]
    Epochs(u64),
    /// A `max_revisions` past [`MAX_REVISIONS`].
    #[error(
        "{what} = {value} is more than {MAX_REVISIONS}: a loop holds every round in memory until its task is \
         written; give at most {MAX_REVISIONS}"
    )]
    Revisions {
        /// The key or flag that gives it.
        what: &'static str,
        /// The value given.
        value: u64,
    },
    /// A policy grid of more than [`MAX_CONFIGS`] configs.
    #[error(
        "{what}: the value lists make {configs} configs (their product), more than {MAX_CONFIGS}; give fewer values"
    )]
    Configs {
        /// The table or flags that make the grid (`[policy]`, the replay flags).
        what: &'static str,
        /// The configs the lists make.
        configs: u64,
    },
    /// A task's loops would hold more than [`MAX_ROUNDS_PER_TASK`] rounds.
    #[error(
        "each task's loops would record up to {rounds} rounds ({loops} loop(s): {critics} critic(s) × {epochs} \
         epoch(s) × {arms} arm(s){direct}, up to {longest} round(s) each), and a task's loops are held in memory \
         together; the most is {MAX_ROUNDS_PER_TASK}: lower `epochs` or `max_revisions`, or run fewer arms, \
         critics or configs{replay}",
        direct = if *direct > 1 { format!(" × {direct} configs swept directly") } else { String::new() },
        replay = if *direct > 1 { " (sweep = \"replay\" records each loop once for every config)" } else { "" }
    )]
    TaskRounds {
        /// The rounds they could record.
        rounds: u64,
        /// A task's loops.
        loops: u64,
        /// The critics each loop is run under.
        critics: usize,
        /// The experiment's `epochs`.
        epochs: u32,
        /// The arms run.
        arms: usize,
        /// Configs swept directly (1 for a replayed sweep).
        direct: usize,
        /// The most rounds one loop may record.
        longest: u64,
    },
}

/// The configs of a grid with lists of these lengths, refused past [`MAX_CONFIGS`] before the
/// grid is built.
pub fn check_configs(what: &'static str, lengths: &[usize]) -> Result<(), LimitError> {
    let configs = lengths.iter().fold(1u64, |product, &n| product.saturating_mul(n as u64));
    if configs > MAX_CONFIGS as u64 {
        return Err(LimitError::Configs { what, configs });
    }
    Ok(())
}

/// Every `max_revisions` of a grid, at most [`MAX_REVISIONS`].
pub fn check_revisions(what: &'static str, caps: impl IntoIterator<Item = u64>) -> Result<(), LimitError> {
    match caps.into_iter().find(|&cap| cap > u64::from(MAX_REVISIONS)) {
        Some(value) => Err(LimitError::Revisions { what, value }),
        None => Ok(()),
    }
}

/// What one task's loops are made of: every unit of `plan::Plan::units` under every critic.
#[derive(Clone, Copy, Debug)]
pub struct TaskShape<'a> {
    /// The critics each loop is run under.
    pub critics: usize,
    /// The experiment's `epochs`.
    pub epochs: u32,
    /// The arms run.
    pub arms: &'a [Arm],
    /// The arms whose loops end with the adjudicator's pass.
    pub adjudicate: &'a [Arm],
    /// The configs of the policy grid.
    pub policies: &'a [Policy],
    /// One recording serves every config (a replayed sweep of a grid).
    pub replay: bool,
}

impl TaskShape<'_> {
    /// The loops of one task and the most rounds they record together: each loop up to its
    /// longest config's cap plus one round (one round for `single`), plus one adjudicated draft
    /// per config for an adjudicated arm.
    pub fn load(&self) -> (u128, u128) {
        let policies = self.policies;
        let recordings: Vec<(u128, u128)> = if self.replay {
            // (rounds of the longest config, configs served)
            vec![(policies.iter().map(|p| u128::from(p.max_revisions) + 1).max().unwrap_or(1), policies.len() as u128)]
        } else {
            policies.iter().map(|p| (u128::from(p.max_revisions) + 1, 1)).collect()
        };
        let mut loops = 0u128;
        let mut rounds = 0u128;
        for arm in self.arms {
            for &(longest, served) in &recordings {
                let longest = if *arm == Arm::Single { 1 } else { longest };
                // One adjudication per distinct final draft: no more than the configs or the rounds.
                let adjudicated = if self.adjudicate.contains(arm) { served.min(longest) } else { 0 };
                loops += 1;
                rounds += longest + adjudicated;
            }
        }
        let repeats = self.critics as u128 * u128::from(self.epochs);
        (loops * repeats, rounds * repeats)
    }

    /// Refuses tasks that would each hold more than [`MAX_ROUNDS_PER_TASK`] rounds.
    pub fn check(&self) -> Result<(), LimitError> {
        let (loops, rounds) = self.load();
        if rounds <= u128::from(MAX_ROUNDS_PER_TASK) {
            return Ok(());
        }
        let saturated = |n: u128| u64::try_from(n).unwrap_or(u64::MAX);
        Err(LimitError::TaskRounds {
            rounds: saturated(rounds),
            loops: saturated(loops),
            critics: self.critics,
            epochs: self.epochs,
            arms: self.arms.len(),
            direct: if self.replay { 1 } else { self.policies.len() },
            longest: self.policies.iter().map(|p| u64::from(p.max_revisions) + 1).max().unwrap_or(1),
        })
    }

    /// Tasks per chunk: `most`, fewer when a task's loops are long, so that a chunk holds at most
    /// [`MAX_ROUNDS_PER_CHUNK`] rounds (or one task's).
    pub fn tasks_per_chunk(&self, most: usize) -> usize {
        let (_, rounds) = self.load();
        let fit = u128::from(MAX_ROUNDS_PER_CHUNK) / rounds.max(1);
        (fit.min(most as u128) as usize).max(1)
    }
}
