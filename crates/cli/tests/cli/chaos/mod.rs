//! The chaos suite: the real binary against hostile inputs and damaged files, one test per way a
//! command could lose data, misattribute it or trust what it should check. Each module holds one
//! family; docs/runs.md ("Run directories and interrupted runs") states the guarantees these tests hold the code to.

mod accounting;
mod directories;
mod guarded;
mod input;
mod integrity;
mod numbers;
mod opened_tasks;
mod protocol;
mod rescore;
