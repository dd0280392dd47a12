//! Runs experiments: reads the experiment file, loads the critics, and runs every loop
//! (task × config × arm × critic × epoch) in parallel, streaming tasks from the datasets and
//! rows to the storage writers at constant memory.
//!
//! A run is a pipeline of stages, one module each: `plan` (critics, grid, units) → `source`
//! (datasets, admission) → `loops` (workers) → `sink` (rows in order) → `summarize` (manifest,
//! reports); `learn` is strategy memory's first pass over the same pipeline.
//!
//! The loop itself is small: generate, critique (with retries), ask the pure policy of
//! `critbench-core` whether to revise, revise. Everything random is seeded from
//! (seed, task, epoch, round, purpose), so results do not depend on `--jobs`.
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
