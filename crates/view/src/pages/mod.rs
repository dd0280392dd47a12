//! The pages, one module each: the run's answer (`answer`), the loops that filter (`loops`), a
//! task's loops round by round (`task`) and the labelling page (`labels`).

pub mod answer;
pub mod labels;
pub mod loops;
pub mod task;
