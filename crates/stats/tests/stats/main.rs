//! The statistics' integration tests: coverage and validity by simulation, and reference checks, one module each.
//!
//! One binary for the whole crate: linking one test executable instead of one per file is
//! most of what building the tests costs on a small machine.

#[path = "../common/mod.rs"]
mod common;

mod interval_coverage;
mod interval_reference;
mod ppi_coverage;
mod sequential_reference;
mod sequential_validity;
