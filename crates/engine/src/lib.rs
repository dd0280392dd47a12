//! Runs experiments: reads the experiment file, loads the critics, and runs every loop
//! (task × config × arm × critic × epoch) in parallel, streaming each round to the storage writers.
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

pub mod backend;
mod emit;
mod error;
pub mod experiment;
mod manifest;
pub mod memory;
pub mod openai_writer;
pub mod prompts;
pub mod replay;
pub mod run;

pub use error::EngineError;
