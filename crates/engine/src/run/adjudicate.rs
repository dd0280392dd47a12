//! The adjudicator: whatever ends a loop (pass, stall, plateau or budget), a third model
//! rewrites the loop's final draft once — contradictions introduced across rounds resolved,
//! conversational residue stripped, the output clean-up applied — and the critic scores the
//! result once more. The loop's own outcome is untouched; the adjudicated draft's score and pass
//! are recorded beside it (`adjudicated_score`, `adjudicated_passed`) and as one more trajectory
//! row with `decision = "adjudicate"`.
//!
//! The adjudicator sees the final draft and the critique of that draft, and is seeded by the
//! draft's round, never by where the policy stopped: so one recording serves every config of a
//! replayed grid exactly. Configs whose final draft is the same share one adjudication.

use std::time::Instant;

use critbench_core::{Critique, Drafting, FinalDraft, Policy, RoundScore, Task, best_round, stop_point_or_writer};
use critbench_plugin_host::request::TaskJson;
use critbench_storage::recorded::RecordedRound;
use critbench_storage::tables::{RowDecision, TrajectoryRow};

use crate::run::plan::{Plan, Unit};
use crate::run::round::{critique_draft, ms, recorded_round};
use critbench_core::author::DraftKey;

/// The adjudicated final draft of a loop: which round's draft it rewrote, and the critique of
/// the rewrite (its draft, times and the adjudicator's tokens in the author's columns).
#[derive(Clone, Debug)]
pub struct Adjudication {
    /// The round whose draft the adjudicator rewrote.
    pub final_round: usize,
    /// The rewrite, recorded as a round.
    pub round: RecordedRound,
    /// The rewrite's critique, scored.
    pub score: RoundScore,
}

/// The draft a policy returns on this recording of `drafting`'s rounds: `(final round, stop round)`,
/// or `None` when the recording ends before the policy stops.
pub fn final_round(
    scores: &[RoundScore],
    policy: &Policy,
    drafting: Drafting,
    writer_ended: bool,
) -> Option<(usize, usize)> {
    let (stop, _) = stop_point_or_writer(scores, policy, drafting, writer_ended)?;
    let chosen = match policy.final_draft {
        FinalDraft::Best => best_round(&scores[..=stop]).expect("a stopped loop has a round").round,
        FinalDraft::Last => stop,
    };
    Some((chosen, stop))
}

/// Adjudicates the final draft of every policy the unit serves (once per distinct final draft).
/// `texts[k]` is the draft critiqued in round `k`.
#[allow(clippy::too_many_arguments)]
pub fn adjudicate_loop(
    plan: &Plan<'_>,
    task: &Task,
    task_json: &TaskJson,
    unit: Unit,
    policies: &[Policy],
    scores: &[RoundScore],
    rounds: &[RecordedRound],
    texts: &[String],
) -> Result<Vec<Adjudication>, AdjudicateError> {
    let experiment = plan.experiment;
    let mut finals: Vec<usize> = policies
        .iter()
        .filter_map(|policy| final_round(scores, policy, unit.arm.drafting(), false))
        .map(|(chosen, _)| chosen)
        .collect();
    finals.sort_unstable();
    finals.dedup();
    let mut adjudications = Vec::with_capacity(finals.len());
    for chosen in finals {
        let key = DraftKey { seed: experiment.seed, task_id: &task.id, epoch: unit.epoch, round: chosen as u32 };
        let started = Instant::now();
        let concerns = Critique::from(&rounds[chosen].critique);
        let draft = plan
            .author
            .adjudicate(task, &texts[chosen], Some(&concerns), &key)
            .ok_or(AdjudicateError::NoAdjudicator)??;
        let gen_ms = ms(started);
        // Asked with the adjudicated draft's round, so that the critique depends on the draft alone.
        let (call, scope, critic_ms) = critique_draft(plan, unit, &task.id, task_json, &draft.text, chosen as u32);
        let score = call.critique.round_score(call.failed());
        let round = recorded_round(call, draft, experiment.store_drafts, (gen_ms, critic_ms), &scope, None);
        adjudications.push(Adjudication { final_round: chosen, round, score });
    }
    Ok(adjudications)
}

/// The trajectory row of an adjudication: one past the loop's stop round, with the loop's
/// revisions; `passed` is the adjudicated draft's pass under `policy`; never the best draft.
pub fn trajectory_row<'a>(
    base: TrajectoryRow<'a>,
    adjudication: &'a Adjudication,
    policy: &Policy,
    stop: usize,
) -> TrajectoryRow<'a> {
    let round = &adjudication.round;
    TrajectoryRow {
        round: stop as u32 + 1,
        revisions: stop as u32,
        critique: std::borrow::Cow::Borrowed(&round.critique),
        passed: adjudication.score.meets_pass_rule(policy),
        decision: RowDecision::Adjudicate,
        is_best: false,
        draft_chars: round.draft_chars,
        draft: round.draft.as_deref(),
        gen_ms: round.gen_ms,
        critic_ms: round.critic_ms,
        critic_attempts: round.critic_attempts,
        critic_error: round.critic_error.as_deref(),
        tokens_in: round.tokens_in,
        tokens_out: round.tokens_out,
        critic_tokens_in: round.critic_tokens_in,
        critic_tokens_out: round.critic_tokens_out,
        // The adjudicator's call is not priced, nor is it one of the loop's rounds.
        cost: None,
        acted_on_critique: None,
        draft_truncated: round.draft_truncated,
        critic_truncated: round.critic_truncated,
        ..base
    }
}

/// Why a loop's final draft has no adjudication; the loop then fails (its text is in the
/// manifest's `failed_loops`).
#[derive(Debug, thiserror::Error)]
pub enum AdjudicateError {
    /// The adjudicator wrote no draft.
    #[error(transparent)]
    Author(#[from] critbench_core::author::AuthorError),
    /// The experiment adjudicates but the author has no adjudicator.
    #[error("the author has no adjudicator")]
    NoAdjudicator,
}

#[cfg(test)]
mod tests {
    use super::*;
    use critbench_core::author::Author;

    use crate::experiment::{Experiment, Overrides};
    use crate::run::backend::SimAuthor;
    use critbench_core::Arm;

    fn load(text: &str) -> Result<Experiment, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        std::fs::write(&path, text).unwrap();
        Experiment::load(&path, &Overrides::default()).map_err(|e| e.to_string())
    }

    const CRITIC: &str = "[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n";

    #[test]
    fn adjudicate_names_every_arm_some_arms_or_none() {
        let with = |line: &str| {
            load(&format!("name = \"t\"\ndataset = \"d.jsonl\"\narms = [\"feedback\", \"single\"]\n{line}\n{CRITIC}"))
        };
        assert_eq!(with("adjudicate = true").unwrap().adjudicate, [Arm::Feedback, Arm::Single]);
        assert_eq!(with("adjudicate = [\"single\", \"feedback\"]").unwrap().adjudicate, [Arm::Feedback, Arm::Single]);
        assert!(with("adjudicate = false").unwrap().adjudicate.is_empty());
        assert!(with("").unwrap().adjudicate.is_empty());
        assert!(with("adjudicate = [\"single\", \"single\"]").unwrap_err().contains("listed twice"));
        assert!(with("adjudicate = \"yes\"").unwrap_err().contains("give true (every arm)"));
    }

    #[test]
    fn the_openai_backend_needs_an_adjudicator_model_and_the_model_needs_an_arm() {
        let openai = "[openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodels = { generator = \"g\", judge = \"j\" }\n";
        let text = |top: &str, extra: &str| {
            format!("name = \"t\"\ndataset = \"d.jsonl\"\nbackend = \"openai\"\n{top}\n{CRITIC}{openai}{extra}")
        };
        let missing = load(&text("adjudicate = true", "")).unwrap_err();
        assert!(missing.contains("needs an adjudicator model"), "{missing}");
        let unused = load(&text("", "[openai.adjudicator]\nmodel = \"a\"\n")).unwrap_err();
        assert!(unused.contains("no arm adjudicates"), "{unused}");
        let both = load(&text("adjudicate = [\"feedback\"]", "[openai.adjudicator]\nmodel = \"a\"\n")).unwrap();
        assert_eq!(both.adjudicate, [Arm::Feedback]);
    }

    #[test]
    fn the_sim_adjudicator_answers_without_its_chat_after_the_clean_up() {
        let task = Task {
            id: "t".into(),
            prompt: "Write a short research paper on tide pools.".into(),
            kind: Some("paper".into()),
            ..Task::default()
        };
        let draft = "# Tide Pools\n\nOriginality: high\n\n## Introduction\n\nTide pools matter.\n";
        let mut wrapped = 0;
        for round in 0..100 {
            let key = DraftKey { seed: 7, task_id: "t", epoch: 0, round };
            let raw = critbench_sim::adjudicate(&task, draft, None, &mut key.rng("adjudicate"));
            wrapped += usize::from(!raw.starts_with("# "));
            let text = SimAuthor.adjudicate(&task, draft, None, &key).unwrap().unwrap().text;
            assert!(text.starts_with("# Tide Pools") && text.trim_end().ends_with("Tide pools matter."), "{text:?}");
        }
        assert!(wrapped > 20, "the residue is there to strip ({wrapped} of 100)");
    }

    #[test]
    fn a_policy_s_final_draft_is_its_best_or_its_last() {
        let scores: Vec<RoundScore> = [6.0, 7.5, 7.0].map(RoundScore::new).to_vec();
        let best = Policy { stall: false, max_revisions: 2, ..Policy::default() };
        assert_eq!(final_round(&scores, &best, Drafting::Revisions, false), Some((1, 2)));
        let last = Policy { final_draft: FinalDraft::Last, ..best.clone() };
        assert_eq!(final_round(&scores, &last, Drafting::Revisions, false), Some((2, 2)));
        let longer = Policy { max_revisions: 5, ..best };
        assert_eq!(final_round(&scores, &longer, Drafting::Revisions, false), None);
    }
}
