//! The simulator's integration tests: one module per property of the simulated author.
//!
//! One binary for the whole crate: linking one test executable instead of one per file is
//! most of what building the tests costs on a small machine.

#[path = "../common/mod.rs"]
mod common;

mod any_critic;
mod determinism;
mod papers;
mod rag;
mod reviser;
mod shapes;
