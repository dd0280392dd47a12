//! The commands beside `critbench run`: `rescore` and `replay` (a finished run's recordings under
//! another critic or another policy grid), `estimate` (a pilot run and its projection) and `judge`
//! (a critic benchmark set up from an experiment file).

mod error;
pub mod estimate;
pub mod judge;
pub mod replay;
pub mod rescore;
