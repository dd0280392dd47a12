//! The pure heart of critbench: tasks, critiques, the stop/revise policy, best-draft tracking and
//! how much a revision changed.
//!
//! Nothing here touches files, clocks, threads or global randomness, so every function can be
//! replayed, swept and unit-tested exhaustively. Everything that performs I/O (plugins, model
//! backends, datasets, Parquet) lives in other crates and depends on this one.
//!
//! ```
//! use critbench_core::{decide, Decision, Drafting, ExitReason, Policy, RoundScore};
//!
//! let policy = Policy::default(); // pass_score 8, max_revisions 3, stall on
//! let rounds = [RoundScore::new(6.0), RoundScore::new(5.5)];
//! assert_eq!(decide(&rounds, &policy, Drafting::Revisions), Decision::Stop(ExitReason::Stall));
//! // Two independent draws (the `resample` arm) have no trend to stall on.
//! assert_eq!(decide(&rounds, &policy, Drafting::IndependentDraws), Decision::Revise);
//! ```
#![warn(missing_docs)]

pub mod author;
mod best;
mod critique;
mod edit;
mod hex;
mod policy;
mod seed;
mod task;

pub use best::{BestDraft, best_round};
pub use critique::{
    CRITIQUE_KEYS, CRITIQUE_UNAVAILABLE, CRITIQUE_VERSION, Critique, CritiqueError, PLACEBO_INSTRUCTION, ScoreRange,
    Suggestion, unread_key_hint,
};
pub use edit::edit_share;
pub use hex::hex;
pub use policy::{
    Decision, Drafting, ExitReason, FinalDraft, Policy, PolicyGrid, RepeatedConfig, RoundScore, decide, stop_point,
    stop_point_or_writer,
};
pub use seed::{Rng, SeedKey, derive_seed};
pub use task::{Arm, JsonText, Shown, Task};
