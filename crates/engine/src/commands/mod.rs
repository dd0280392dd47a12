//! The commands beside `critbench run`: `rescore` and `replay` (a finished run's recordings under
//! another critic or another policy grid), `estimate` (a pilot run and its projection) and `judge`
//! (a critic benchmark set up from an experiment file).

mod error;
pub mod estimate;
pub mod judge;
pub mod replay;
pub mod rescore;

/// What a table reader's callback returns to stop the reading when the caller keeps the reason
/// aside (its own failure, or the pass stopping): the reader hands it back wrapped in its own
/// error, and the caller returns what it kept instead.
#[derive(Debug, thiserror::Error)]
#[error("the reading was stopped by its caller")]
pub(crate) struct KeptAside;
