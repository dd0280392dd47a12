//! The plugin host's integration tests: critique parsing, child processes and the protocol, one module each.
//!
//! One binary for the whole crate: linking one test executable instead of one per file is
//! most of what building the tests costs on a small machine.

mod critique_parser;
mod process;
mod protocol_fuzz;
mod tasks;
