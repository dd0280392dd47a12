//! The report's integration tests: large grids and the order of rows, one module each.
//!
//! One binary for the whole crate: linking one test executable instead of one per file is
//! most of what building the tests costs on a small machine.

mod large_grid;
mod order;
