//! Statistics for critbench that stand on their own: pure functions of numbers, no I/O, no
//! knowledge of runs or tables. The report and the engine call them; each is checked against a
//! reference implementation in `tests/python/`.
#![warn(missing_docs)]

pub mod ppi;
