//! A sequential run's two halves around the pipeline (`crate::sequential` has what they share
//! with the stages):
//!
//! - [`Order`]: a first pass over the datasets admits every row exactly as a plain run does (bad
//!   rows, `--limit`, duplicate ids) and keeps, per task to run, only its key and where to read it
//!   again; the source then hands on chunks in the key's order, none straddling a look, each once
//!   the gate admits it.
//! - [`Follower`]: at the sink, in source order, each task's paired difference per config ×
//!   critic goes to the monitor, which looks at `min_tasks`, every `check_every` tasks, and at the
//!   budget; each look's decision goes to the gate; at the end, the manifest's record.

mod follow;
mod order;

pub(crate) use follow::Follower;
pub(crate) use order::Order;
