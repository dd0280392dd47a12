//! Statistics for critbench that stand on their own: pure functions of numbers, no I/O, no
//! knowledge of runs or tables. The report and the engine call them; each is checked against a
//! reference implementation in `tests/python/`.
//!
//! - [`sequential`]: anytime-valid confidence sequences for a paired comparison run task by task,
//!   and the [`sequential::Monitor`] that decides when a sequential run may stop;
//! - [`power`]: how many tasks a paired comparison needs, from the split of its variance into a
//!   task part and an epoch part.
#![warn(missing_docs)]

pub mod power;
pub mod ppi;
pub mod sequential;
