//! The engine's integration tests: whole runs through the library, one module per concern.
//!
//! One binary for the whole crate: linking one test executable instead of one per file is
//! most of what building the tests costs on a small machine.

mod experiments;
mod layout;
mod seed001;
