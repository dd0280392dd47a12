//! Runs experiments: reads the experiment file, loads the critics, and runs every loop
//! (task × config × arm × critic × epoch) in parallel, streaming tasks from the datasets and rows
//! to the storage writers at constant memory; and the commands that work on what a run wrote.
//!
//! The loop itself is small: generate, critique (with retries), ask the pure policy of
//! `critbench-core` whether to revise, revise. Everything random is seeded from
//! (seed, task, epoch, round, purpose), so results do not depend on `--jobs`.
//!
//! # The map
//!
//! Four rooms, a folder each, and a small module; each imports only those listed before it:
//!
//! - [`experiment`]: the experiment file, as written (`file`) and resolved against the command
//!   line (`resolve`: the policy grid, `[openai]`, `[pricing]` and `[budget]`, `[sequential]`,
//!   `[memory]`), and [`experiment::limits`], the bounds on what one task's loops may hold.
//! - [`stop`]: how a caller stops a run or a rescoring: the signal, and the flag its handler
//!   raises.
//! - [`run_dir`]: the run directory. Its [`layout`](run_dir::layout) names every file a run
//!   writes, once (the tables by storage, the report's files by the report, the engine's own
//!   there); every writing command [`claim`](run_dir::claim())s its directory first (what it holds,
//!   the lock, what `--overwrite` removes); a run's progress is a journal of committed part files
//!   (`journal`, `parts`: the one part writer, a run's and a rescoring's); and
//!   [`merge`](run_dir::merge) joins a sharded run's shards.
//! - [`run`]: a run, stage by stage: `plan` (critics, grid, the loops of a task) → `source`
//!   (datasets streamed and admitted in file order) → `loops` on the `workers` (each round's
//!   critique in `round`, the loop's end in [`adjudicate`](run::adjudicate) and
//!   [`evaluate`](run::evaluate)) → `sink` (rows built on the workers by `emit`, written in order,
//!   committed to the journal) → `summarize` (`manifest.json`, the reports). Strategy memory
//!   learns first (`learn`, [`memory`](run::memory)); a `sequential` run admits tasks in its own
//!   order, one look ahead of its stopping rule. Every pass over the datasets is driven by the one
//!   `pipeline` (a reader thread, workers, the reorder window, the grace period after a signal,
//!   the join), which a rescoring drives too. Beside the stages: the offline authors
//!   ([`backend`](run::backend)), the model client offered to plugins as `chat`
//!   ([`chat`](run::chat)), and what a loop's model calls cost ([`cost`](run::cost)).
//! - [`commands`]: the commands beside `run`, on what a run wrote or will write:
//!   [`rescore`](commands::rescore) (a finished run's drafts critiqued again, on the run's
//!   pipeline), [`replay`](commands::replay) (other policies on the recordings),
//!   [`estimate`](commands::estimate) (a pilot run and its projection) and
//!   [`judge`](commands::judge) (a critic benchmark set up from an experiment).
//!
//! [`EngineError`] is what a run, or any command, fails with: the run-wide cases, and each
//! operation's own refusals, a type kept beside the operation, wrapped.
//!
//! ```no_run
//! use critbench_engine::{experiment::{Experiment, Overrides}, run::run_experiment};
//!
//! let experiment = Experiment::load("experiments/demo.toml".as_ref(), &Overrides::default()).unwrap();
//! let summary = run_experiment(&experiment, &Default::default()).unwrap();
//! println!("{} loops written to {}", summary.loops, summary.out_dir.display());
//! ```

#![warn(missing_docs)]

pub mod commands;
mod error;
pub mod experiment;
pub mod run;
pub mod run_dir;
pub mod stop;

pub use error::EngineError;
pub use experiment::ExperimentProblem;
