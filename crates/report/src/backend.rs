//! What a run's backend can and cannot measure, said beside the tables.
//!
//! - `scripted`: every arm is given the dataset's drafts, so arms differ only in where the critic
//!   and the policy stop them: an arm comparison measures the critic and the policy, not feedback.
//! - the offline writer (`sim`) says, revision by revision, whether it acted on the critique it
//!   was shown (`acted_on_critique` in `trajectories.parquet`). When it could act on little or
//!   none of a critic's feedback, the feedback arm revised as blindly as the no-feedback arm, and
//!   their comparison says nothing about that critic: the reports say so instead of giving a
//!   verdict.

use std::path::Path;

use critbench_core::Arm;
use critbench_storage::manifest::Manifest;

use crate::ReportError;
use crate::queries::feedback_use::{self, FeedbackCount};
use crate::queries::revision_sizes::{self, RevisionSizes};
use critbench_storage::scan::Scan;

/// From this share of a critic's feedback ignored in an arm, the comparisons of that arm say
/// nothing about the critic: the terminal table gives the warning instead of the difference.
pub const IGNORED_WARNING_SHARE: f64 = 0.5;

/// From this share, the terminal says how much was ignored (the reports say it from any share).
pub const IGNORED_NOTE_SHARE: f64 = 0.05;

/// One critic and arm: the revisions written after seeing its critique, and how many of those
/// critiques the writer could not act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeedbackUse {
    /// The critic whose critiques were shown.
    pub critic: String,
    /// The arm.
    pub arm: Arm,
    /// Rows of revisions whose author said whether it acted on the critique (every config's).
    pub revisions: u64,
    /// Of those, the ones it did not act on.
    pub ignored: u64,
    /// Revisions written after a critique that failed, so shown none (not among `revisions`).
    pub after_errors: u64,
}

impl From<FeedbackCount> for FeedbackUse {
    fn from(count: FeedbackCount) -> FeedbackUse {
        let FeedbackCount { critic, arm, revisions, ignored, after_errors } = count;
        FeedbackUse { critic, arm, revisions, ignored, after_errors }
    }
}

impl FeedbackUse {
    /// The share of the critiques the writer could not act on.
    pub fn share(&self) -> f64 {
        if self.revisions == 0 { 0.0 } else { self.ignored as f64 / self.revisions as f64 }
    }

    /// Whether the arm's comparisons say nothing about the critic.
    pub fn says_nothing(&self) -> bool {
        self.revisions > 0 && self.share() >= IGNORED_WARNING_SHARE
    }

    /// The sentence the terminal and the reports give.
    pub fn sentence(&self) -> String {
        if self.says_nothing() {
            format!(
                "the simulated writer ignored {} of critic `{}`'s feedback in arm `{}` ({} of {} revisions: the \
                 critiques asked for nothing it could act on, no issue, issue type or suggestion, so it revised \
                 blindly): this comparison says nothing about `{}`",
                percent(self.share()),
                self.critic,
                self.arm,
                self.ignored,
                self.revisions,
                self.critic
            )
        } else {
            format!(
                "the simulated writer could not act on {} of critic `{}`'s feedback in arm `{}` ({} of {} revisions); \
                 it revised those drafts blindly",
                percent(self.share()),
                self.critic,
                self.arm,
                self.ignored,
                self.revisions
            )
        }
    }
}

/// A share as the notices print it: whole percents, but never "0%" or "100%" for a share that
/// is neither.
fn percent(share: f64) -> String {
    let whole = (100.0 * share).round();
    if share > 0.0 && whole == 0.0 {
        "under 1%".to_string()
    } else if share < 1.0 && whole == 100.0 {
        "over 99%".to_string()
    } else {
        format!("{whole:.0}%")
    }
}

/// What the reports say about the run's backend.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Backend {
    /// The experiment's `backend` (`sim`, `scripted`, `openai`), when the manifest records it.
    pub name: Option<String>,
    /// Per critic and arm (in order of first appearance), for the arms whose writer said.
    pub feedback_use: Vec<FeedbackUse>,
    /// How much each config × critic × arm's revisions changed their drafts.
    pub revision_sizes: Vec<crate::queries::revision_sizes::RevisionSize>,
}

/// The backend whose arms all get the dataset's drafts.
pub const SCRIPTED: &str = "scripted";

/// The simulated writer's backend.
pub const SIM: &str = "sim";

/// Which arms' loops the run's backend makes the same by construction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SameByConstruction {
    /// Nothing beyond what the arms' design shares.
    #[default]
    Nothing,
    /// Every arm's drafts: the scripted backend gives each the dataset's (but `resample`, which
    /// draws the dataset's `samples`).
    AllDrafts,
    /// The placebo arm's and the no-feedback arm's: the simulated writer revises a critique with
    /// nothing to act on as it revises blind, draw for draw.
    PlaceboAndBlind,
}

/// What the run's backend, as `manifest` records it, makes the same by construction.
pub(crate) fn same_by_construction(manifest: Option<&Manifest>) -> SameByConstruction {
    match manifest.and_then(|m| m.experiment.rest.get("backend")).and_then(|b| b.as_str()) {
        Some(SCRIPTED) => SameByConstruction::AllDrafts,
        Some(SIM) => SameByConstruction::PlaceboAndBlind,
        _ => SameByConstruction::Nothing,
    }
}

/// What the label of an arm comparison of the scripted backend says.
pub const SHARED_DRAFTS: &str = "critic and policy only: arms share drafts";

impl Backend {
    /// The backend of the run in `run_dir` (from `manifest`) and what its writer did with the
    /// critiques (from `trajectories.parquet`, when the run has one).
    pub fn read(run_dir: &Path, manifest: Option<&Manifest>) -> Result<Backend, ReportError> {
        let name = manifest.and_then(|m| m.experiment.rest.get("backend")).and_then(|b| b.as_str()).map(String::from);
        let files = critbench_storage::shards::table_files(run_dir, "trajectories");
        // One pass over the trajectories answers both questions of the writer.
        let (mut feedback, mut sizes) = (feedback_use::FeedbackUse::default(), RevisionSizes::default());
        let mut columns: Vec<&str> = feedback_use::COLUMNS.to_vec();
        columns.extend(revision_sizes::COLUMNS.iter().filter(|c| !feedback_use::COLUMNS.contains(c)));
        Scan::columns(&columns, &[]).for_each(&files, |scanned| {
            feedback.add_batch(scanned)?;
            sizes.add_batch(scanned)
        })?;
        let feedback_use = feedback.counts.into_iter().map(FeedbackUse::from).collect();
        Ok(Backend { name, feedback_use, revision_sizes: sizes.finish() })
    }

    /// Whether the arms share their drafts, so that comparing them measures the critic and the
    /// policy only.
    pub fn arms_share_drafts(&self) -> bool {
        self.name.as_deref() == Some(SCRIPTED)
    }

    /// The feedback the writer mostly ignored: of `critic` in `arm` (as the output spells it: a
    /// summary's label), when it says nothing.
    pub fn ignored(&self, critic: &str, arm: &str) -> Option<&FeedbackUse> {
        self.feedback_use.iter().find(|u| u.critic == critic && u.arm.as_str() == arm && u.says_nothing())
    }

    /// What a reader must know before reading an arm comparison: the scripted backend's shared
    /// drafts, and every critic and arm whose feedback the writer ignored at least `share` of.
    pub fn notices(&self, share: f64) -> Vec<String> {
        let mut notices = Vec::new();
        if self.arms_share_drafts() {
            notices.push(
                "backend \"scripted\": every arm is given the dataset's drafts (`resample` its `samples`), so arms \
                 differ only in where the critic and the policy stop them; the arm comparisons measure the critic and \
                 the policy, not feedback"
                    .to_string(),
            );
        }
        for using in &self.feedback_use {
            if using.ignored > 0 && using.share() >= share {
                notices.push(using.sentence());
            }
        }
        notices
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn using(revisions: u64, ignored: u64) -> FeedbackUse {
        FeedbackUse { critic: "because".into(), arm: Arm::Feedback, revisions, ignored, after_errors: 0 }
    }

    #[test]
    fn a_critic_whose_feedback_was_mostly_ignored_gets_a_warning_not_a_verdict() {
        let ignored = using(120, 113);
        assert!(ignored.says_nothing());
        assert_eq!(
            ignored.sentence(),
            "the simulated writer ignored 94% of critic `because`'s feedback in arm `feedback` (113 of 120 revisions: \
             the critiques asked for nothing it could act on, no issue, issue type or suggestion, so it revised \
             blindly): this comparison says nothing about `because`"
        );
        let backend =
            Backend { name: Some("sim".into()), feedback_use: vec![ignored, using(10, 0)], ..Backend::default() };
        assert!(backend.ignored("because", "feedback").is_some());
        assert!(backend.ignored("because", "no-feedback").is_none());
        assert_eq!(backend.notices(IGNORED_NOTE_SHARE).len(), 1, "nothing ignored, nothing said");
        let rare = using(9425, 3);
        assert!(!rare.says_nothing());
        assert!(rare.sentence().contains("could not act on under 1% of critic `because`'s feedback"));
        assert!(Backend { feedback_use: vec![rare], ..Backend::default() }.notices(IGNORED_NOTE_SHARE).is_empty());
    }

    #[test]
    fn the_scripted_backend_says_its_arms_share_drafts() {
        let scripted = Backend { name: Some(SCRIPTED.into()), ..Backend::default() };
        assert!(scripted.arms_share_drafts());
        assert!(scripted.notices(1.0)[0].contains("measure the critic and the policy, not feedback"));
        assert!(Backend::default().notices(0.0).is_empty());
    }
}
