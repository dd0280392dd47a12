//! The stop/revise decision rule (docs/REFERENCE.md, The decision rule), as a pure function of the recorded rounds.

use std::collections::BTreeMap;
use std::fmt;

/// Why a loop stopped. These five strings are part of the output contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExitReason {
    /// The critique met the pass rule.
    Pass,
    /// The score dropped below the previous round's score (a loop of revisions only, see [`Drafting`]).
    Stall,
    /// Two consecutive improvements were both smaller than `plateau_eps` (a loop of revisions only).
    Plateau,
    /// The revision cap was reached.
    Budget,
    /// The policy asked for another draft and the writer program wrote none (it answered with an
    /// error or broke down): the loop ends on the drafts it has.
    WriterError,
}

impl ExitReason {
    /// Every exit reason, in the order of the output contract.
    pub const ALL: [ExitReason; 5] = [Self::Pass, Self::Stall, Self::Plateau, Self::Budget, Self::WriterError];

    /// The reason as the output writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Stall => "stall",
            Self::Plateau => "plateau",
            Self::Budget => "budget",
            Self::WriterError => "writer_error",
        }
    }

    /// Reads a reason as the output writes it.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|reason| reason.as_str() == text)
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the policy says after a critique.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Write another draft.
    Revise,
    /// Stop the loop, for this reason.
    Stop(ExitReason),
}

impl Decision {
    /// `revise` or `stop`, as the trajectory records it.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Revise => "revise",
            Decision::Stop(_) => "stop",
        }
    }

    /// Why the loop stopped, if it did.
    pub fn exit_reason(self) -> Option<ExitReason> {
        match self {
            Decision::Revise => None,
            Decision::Stop(reason) => Some(reason),
        }
    }
}

/// Which draft a loop returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FinalDraft {
    /// The best draft (docs/REFERENCE.md, The decision rule: the best draft).
    #[default]
    Best,
    /// The draft of the last round.
    Last,
}

impl FinalDraft {
    /// `best` or `last`, as the experiment file spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            FinalDraft::Best => "best",
            FinalDraft::Last => "last",
        }
    }
}

/// The knobs of the decision rule. One value of each; grids are built by the engine.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// The score a draft must reach to pass.
    pub pass_score: f64,
    /// How many revisions a loop may make after the first draft.
    pub max_revisions: u32,
    /// Stop when the score drops below the previous round's (in a loop of [`Drafting::Revisions`]).
    pub stall: bool,
    /// Plateau detection is off when this is 0 (and in a loop of [`Drafting::IndependentDraws`]).
    pub plateau_eps: f64,
    /// When set, every dimension must also reach this value to pass.
    pub dim_target: Option<f64>,
    /// Which draft the loop returns.
    pub final_draft: FinalDraft,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            pass_score: 8.0,
            max_revisions: 3,
            stall: true,
            plateau_eps: 0.0,
            dim_target: None,
            final_draft: FinalDraft::Best,
        }
    }
}

impl Policy {
    /// A short, stable, readable name for this combination, e.g. `p8-r3-stall-e0`.
    pub fn config_id(&self) -> String {
        let mut id = format!(
            "p{}-r{}-{}-e{}",
            compact(self.pass_score),
            self.max_revisions,
            if self.stall { "stall" } else { "nostall" },
            compact(self.plateau_eps)
        );
        if let Some(target) = self.dim_target {
            id.push_str(&format!("-d{}", compact(target)));
        }
        if self.final_draft == FinalDraft::Last {
            id.push_str("-last");
        }
        id
    }
}

/// A policy grid: a list of values per policy field, swept as their cross product.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyGrid {
    /// Values of [`Policy::pass_score`].
    pub pass_score: Vec<f64>,
    /// Values of [`Policy::max_revisions`].
    pub max_revisions: Vec<u32>,
    /// Values of [`Policy::stall`].
    pub stall: Vec<bool>,
    /// Values of [`Policy::plateau_eps`].
    pub plateau_eps: Vec<f64>,
    /// Values of [`Policy::dim_target`].
    pub dim_target: Vec<Option<f64>>,
    /// Values of [`Policy::final_draft`].
    pub final_draft: Vec<FinalDraft>,
}

/// Two combinations of a [`PolicyGrid`] are the same config: a value list repeats a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepeatedConfig {
    /// The config id both combinations have.
    pub config_id: String,
}

impl fmt::Display for RepeatedConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "config {} is in the grid twice", self.config_id)
    }
}

impl std::error::Error for RepeatedConfig {}

impl PolicyGrid {
    /// The grid of the one default policy.
    pub fn single(policy: &Policy) -> PolicyGrid {
        PolicyGrid {
            pass_score: vec![policy.pass_score],
            max_revisions: vec![policy.max_revisions],
            stall: vec![policy.stall],
            plateau_eps: vec![policy.plateau_eps],
            dim_target: vec![policy.dim_target],
            final_draft: vec![policy.final_draft],
        }
    }

    /// Every combination, in a stable order: `pass_score` varies slowest, then `max_revisions`,
    /// `stall`, `plateau_eps`, `dim_target`, and `final_draft` fastest.
    pub fn policies(&self) -> Result<Vec<Policy>, RepeatedConfig> {
        let mut grid = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for &pass_score in &self.pass_score {
            for &max_revisions in &self.max_revisions {
                for &stall in &self.stall {
                    for &plateau_eps in &self.plateau_eps {
                        for &dim_target in &self.dim_target {
                            for &final_draft in &self.final_draft {
                                let policy =
                                    Policy { pass_score, max_revisions, stall, plateau_eps, dim_target, final_draft };
                                let config_id = policy.config_id();
                                if !seen.insert(config_id.clone()) {
                                    return Err(RepeatedConfig { config_id });
                                }
                                grid.push(policy);
                            }
                        }
                    }
                }
            }
        }
        Ok(grid)
    }
}

/// `8.0` → `8`, `0.25` → `0.25`: the shortest text that reads back as the same number.
fn compact(value: f64) -> String {
    format!("{value}")
}

/// What the policy needs to know about one critiqued round.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoundScore {
    /// The critique's score.
    pub score: f64,
    /// The critique has at least one fatal issue.
    pub fatal: bool,
    /// The critic call failed after every attempt (the score is the range minimum).
    pub failed: bool,
    /// The lowest dimension score, if the critique had dimensions.
    pub min_dimension: Option<f64>,
}

impl RoundScore {
    /// A round with this score, no fatal issue, no failure and no dimensions.
    pub fn new(score: f64) -> Self {
        RoundScore { score, fatal: false, failed: false, min_dimension: None }
    }

    /// What the policy reads of a critique, whether fresh or read back from a table: its score,
    /// its lowest dimension, whether it has a fatal issue, and whether the critic call failed.
    pub fn of(score: f64, dimensions: &BTreeMap<String, f64>, fatal_issues: &[String], failed: bool) -> Self {
        RoundScore {
            score,
            fatal: !fatal_issues.is_empty(),
            failed,
            min_dimension: dimensions.values().copied().reduce(f64::min),
        }
    }

    /// Marks the critique as having a fatal issue.
    pub fn fatal(mut self) -> Self {
        self.fatal = true;
        self
    }

    /// Marks the critic call as failed.
    pub fn failed(mut self) -> Self {
        self.failed = true;
        self
    }

    /// Sets the lowest dimension score.
    pub fn with_min_dimension(mut self, min: f64) -> Self {
        self.min_dimension = Some(min);
        self
    }

    /// The pass rule alone (docs/REFERENCE.md, The decision rule, step 1), without the loop's history.
    pub fn meets_pass_rule(&self, policy: &Policy) -> bool {
        let dimensions_ok = match (policy.dim_target, self.min_dimension) {
            (Some(target), Some(min)) => min >= target,
            // A critique without dimensions has no dimension below the target.
            _ => true,
        };
        !self.failed && !self.fatal && self.score >= policy.pass_score && dimensions_ok
    }
}

/// How a loop's rounds follow one another, which decides whether the rules that read the scores'
/// trend (stall and plateau) apply (docs/REFERENCE.md, The decision rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drafting {
    /// Each round after the first revises the draft before it (every arm but `resample`): a lower
    /// score than the round before's is a revision that made the draft worse.
    Revisions,
    /// Each round is a fresh draw, independent of the rounds before (the `resample` arm): one
    /// draw scoring below another is chance, not a step back, so a loop ends only on a pass or
    /// at its cap.
    IndependentDraws,
}

/// Decides, after the last round of `rounds`, whether to revise or stop and why (docs/REFERENCE.md, The decision rule).
///
/// `rounds[k]` is the critique of round `k`; round 0 is the first draft, so the number of
/// revisions made so far is `rounds.len() - 1`. The rules apply in order: pass, fatal issues,
/// stall, plateau, budget; with [`Drafting::IndependentDraws`], pass and budget alone.
///
/// # Panics
/// If `rounds` is empty: there is nothing to decide before the first critique.
pub fn decide(rounds: &[RoundScore], policy: &Policy, drafting: Drafting) -> Decision {
    let current = rounds.last().expect("decide needs at least one critiqued round");
    let round = rounds.len() - 1;
    let revisions = round as u64;
    let budget_left = revisions < u64::from(policy.max_revisions);

    if current.meets_pass_rule(policy) {
        return Decision::Stop(ExitReason::Pass);
    }
    if current.fatal {
        // A fatal issue must be fixed: skip stall and plateau, stop only at the cap.
        return if budget_left { Decision::Revise } else { Decision::Stop(ExitReason::Budget) };
    }
    if drafting == Drafting::IndependentDraws {
        // Stall and plateau read a trend in revisions; the scores of independent draws have none
        // (a drop is one draw's luck against another's), so only the cap stops the loop.
        return if budget_left { Decision::Revise } else { Decision::Stop(ExitReason::Budget) };
    }
    if policy.stall && round >= 1 && current.score < rounds[round - 1].score {
        return Decision::Stop(ExitReason::Stall);
    }
    if policy.plateau_eps > 0.0 && round >= 2 {
        let last_gain = current.score - rounds[round - 1].score;
        let previous_gain = rounds[round - 1].score - rounds[round - 2].score;
        if last_gain < policy.plateau_eps && previous_gain < policy.plateau_eps {
            return Decision::Stop(ExitReason::Plateau);
        }
    }
    if !budget_left {
        return Decision::Stop(ExitReason::Budget);
    }
    Decision::Revise
}

/// Where `policy` stops on a recorded trajectory: the first round whose decision is a stop, and
/// why. `None` when the recording ends before the policy would stop (it was recorded under a
/// smaller cap or stopped earlier under every policy it was recorded for).
///
/// Because the writer never sees the policy, a loop recorded without stopping holds the answer for
/// every policy: this is what makes replaying a policy grid exact.
pub fn stop_point(rounds: &[RoundScore], policy: &Policy, drafting: Drafting) -> Option<(usize, ExitReason)> {
    (1..=rounds.len()).find_map(|len| match decide(&rounds[..len], policy, drafting) {
        Decision::Stop(reason) => Some((len - 1, reason)),
        Decision::Revise => None,
    })
}

/// [`stop_point`], or — when the recording ended because the writer wrote no next draft
/// (`writer_ended`) and the rule would revise after its last round — that round, with
/// [`ExitReason::WriterError`].
pub fn stop_point_or_writer(
    rounds: &[RoundScore],
    policy: &Policy,
    drafting: Drafting,
    writer_ended: bool,
) -> Option<(usize, ExitReason)> {
    stop_point(rounds, policy, drafting).or_else(|| {
        let last = rounds.len().checked_sub(1).filter(|_| writer_ended)?;
        Some((last, ExitReason::WriterError))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_is_the_cross_product_with_the_last_field_fastest() {
        let grid = PolicyGrid {
            pass_score: vec![7.0, 8.0],
            max_revisions: vec![1, 3],
            final_draft: vec![FinalDraft::Best, FinalDraft::Last],
            ..PolicyGrid::single(&Policy::default())
        };
        let ids: Vec<String> = grid.policies().unwrap().iter().map(Policy::config_id).collect();
        assert_eq!(ids.len(), 8);
        assert_eq!(ids[..3], ["p7-r1-stall-e0", "p7-r1-stall-e0-last", "p7-r3-stall-e0"]);
        let repeated = PolicyGrid { pass_score: vec![8.0, 8.0], ..grid };
        assert_eq!(repeated.policies().unwrap_err().config_id, "p8-r1-stall-e0");
    }

    fn policy() -> Policy {
        Policy::default()
    }

    fn scores(values: &[f64]) -> Vec<RoundScore> {
        values.iter().copied().map(RoundScore::new).collect()
    }

    /// The decision after `values` in a loop of revisions.
    fn run(values: &[f64], policy: &Policy) -> Decision {
        decide(&scores(values), policy, Drafting::Revisions)
    }

    /// The decision after `values` in a loop of independent draws (the `resample` arm).
    fn draw(values: &[f64], policy: &Policy) -> Decision {
        decide(&scores(values), policy, Drafting::IndependentDraws)
    }

    #[test]
    fn pass_at_threshold_stops_with_pass() {
        assert_eq!(run(&[8.0], &policy()), Decision::Stop(ExitReason::Pass));
        assert_eq!(run(&[7.999], &policy()), Decision::Revise);
    }

    #[test]
    fn pass_wins_over_every_other_rule() {
        // Last round is the cap, below the previous score and on a plateau: still a pass.
        let p = Policy { plateau_eps: 5.0, max_revisions: 2, pass_score: 5.0, ..policy() };
        assert_eq!(run(&[9.0, 9.5, 9.0], &p), Decision::Stop(ExitReason::Pass));
    }

    #[test]
    fn fatal_issue_blocks_pass_even_with_top_score() {
        let rounds = [RoundScore::new(10.0).fatal()];
        assert_eq!(decide(&rounds, &policy(), Drafting::Revisions), Decision::Revise);
    }

    #[test]
    fn failed_critique_never_passes() {
        let p = Policy { pass_score: 0.0, ..policy() };
        let rounds = [RoundScore::new(0.0).failed()];
        assert_eq!(decide(&rounds, &p, Drafting::Revisions), Decision::Revise);
        assert!(!rounds[0].meets_pass_rule(&p));
    }

    #[test]
    fn fatal_issues_skip_stall_and_plateau() {
        let p = Policy { plateau_eps: 1.0, ..policy() };
        let rounds = [RoundScore::new(6.0), RoundScore::new(5.0), RoundScore::new(4.0).fatal()];
        assert_eq!(decide(&rounds, &p, Drafting::Revisions), Decision::Revise);
    }

    #[test]
    fn fatal_issues_do_not_override_the_budget() {
        let p = Policy { max_revisions: 1, ..policy() };
        let rounds = [RoundScore::new(6.0).fatal(), RoundScore::new(7.0).fatal()];
        assert_eq!(decide(&rounds, &p, Drafting::Revisions), Decision::Stop(ExitReason::Budget));
    }

    #[test]
    fn score_drop_is_a_stall() {
        assert_eq!(run(&[6.0, 5.9], &policy()), Decision::Stop(ExitReason::Stall));
    }

    #[test]
    fn a_tie_is_not_a_stall() {
        assert_eq!(run(&[6.0, 6.0], &policy()), Decision::Revise);
    }

    #[test]
    fn stall_off_keeps_revising_after_a_drop() {
        let p = Policy { stall: false, ..policy() };
        assert_eq!(run(&[6.0, 5.0], &p), Decision::Revise);
    }

    #[test]
    fn plateau_needs_two_consecutive_small_improvements() {
        let p = Policy { plateau_eps: 0.5, max_revisions: 10, ..policy() };
        // One small gain is noise.
        assert_eq!(run(&[5.0, 5.1], &p), Decision::Revise);
        // A big gain then a small one: not yet.
        assert_eq!(run(&[5.0, 6.0, 6.1], &p), Decision::Revise);
        // Two small gains in a row.
        assert_eq!(run(&[5.0, 6.0, 6.1, 6.2], &p), Decision::Stop(ExitReason::Plateau));
        // Two ties in a row are two gains of zero.
        assert_eq!(run(&[5.0, 5.0, 5.0], &p), Decision::Stop(ExitReason::Plateau));
        // A gain of exactly eps is not small.
        assert_eq!(run(&[5.0, 5.5, 6.0], &p), Decision::Revise);
    }

    #[test]
    fn plateau_off_when_eps_is_zero() {
        let p = Policy { plateau_eps: 0.0, max_revisions: 10, ..policy() };
        assert_eq!(run(&[5.0, 5.0, 5.0, 5.0], &p), Decision::Revise);
    }

    #[test]
    fn stall_is_checked_before_plateau() {
        let p = Policy { plateau_eps: 1.0, max_revisions: 10, ..policy() };
        assert_eq!(run(&[5.0, 5.1, 5.0], &p), Decision::Stop(ExitReason::Stall));
    }

    #[test]
    fn plateau_is_checked_before_budget() {
        let p = Policy { plateau_eps: 1.0, max_revisions: 2, ..policy() };
        assert_eq!(run(&[5.0, 5.1, 5.2], &p), Decision::Stop(ExitReason::Plateau));
    }

    #[test]
    fn independent_draws_never_stall() {
        // A drop between two fresh draws is one draw's luck against another's, not a step back.
        assert_eq!(draw(&[6.0, 5.0], &policy()), Decision::Revise);
        assert_eq!(draw(&[7.9, 1.0, 0.0], &policy()), Decision::Revise);
    }

    #[test]
    fn independent_draws_never_plateau() {
        let p = Policy { plateau_eps: 1.0, max_revisions: 10, ..policy() };
        assert_eq!(draw(&[5.0, 5.0, 5.0], &p), Decision::Revise);
        assert_eq!(draw(&[5.0, 5.1, 5.2, 5.3], &p), Decision::Revise);
    }

    #[test]
    fn independent_draws_stop_on_a_pass_or_at_the_cap() {
        let p = Policy { plateau_eps: 1.0, max_revisions: 3, ..policy() };
        assert_eq!(draw(&[6.0, 5.0, 9.0], &p), Decision::Stop(ExitReason::Pass));
        assert_eq!(draw(&[6.0, 5.0, 4.0, 3.0], &p), Decision::Stop(ExitReason::Budget));
        // A fatal issue blocks a pass in a draw as in a revision.
        let fatal = [RoundScore::new(6.0), RoundScore::new(9.0).fatal()];
        assert_eq!(decide(&fatal, &p, Drafting::IndependentDraws), Decision::Revise);
        let single = Policy { max_revisions: 0, ..p };
        assert_eq!(draw(&[3.0], &single), Decision::Stop(ExitReason::Budget));
    }

    #[test]
    fn a_recording_of_draws_stops_where_a_pass_or_the_cap_stops_it() {
        let recording = scores(&[6.0, 5.0, 7.0, 4.0]);
        assert_eq!(stop_point(&recording, &policy(), Drafting::Revisions), Some((1, ExitReason::Stall)));
        assert_eq!(stop_point(&recording, &policy(), Drafting::IndependentDraws), Some((3, ExitReason::Budget)));
        let long = Policy { max_revisions: 5, ..policy() };
        assert_eq!(stop_point(&recording, &long, Drafting::IndependentDraws), None);
        assert_eq!(
            stop_point_or_writer(&recording, &long, Drafting::IndependentDraws, true),
            Some((3, ExitReason::WriterError))
        );
    }

    #[test]
    fn budget_stops_at_the_revision_cap() {
        let p = Policy { max_revisions: 3, ..policy() };
        assert_eq!(run(&[1.0, 2.0, 3.0], &p), Decision::Revise);
        assert_eq!(run(&[1.0, 2.0, 3.0, 4.0], &p), Decision::Stop(ExitReason::Budget));
    }

    #[test]
    fn zero_revisions_is_the_single_arm() {
        let p = Policy { max_revisions: 0, ..policy() };
        assert_eq!(run(&[3.0], &p), Decision::Stop(ExitReason::Budget));
        assert_eq!(run(&[9.0], &p), Decision::Stop(ExitReason::Pass));
        assert_eq!(
            decide(&[RoundScore::new(3.0).fatal()], &p, Drafting::Revisions),
            Decision::Stop(ExitReason::Budget)
        );
    }

    #[test]
    fn pass_score_above_the_range_leaves_only_the_other_exits() {
        // "Forced" mode: a 0-10 critic never reaches 11, so loops end by stall, plateau or budget.
        let p = Policy { pass_score: 11.0, plateau_eps: 0.1, max_revisions: 4, ..policy() };
        assert_eq!(run(&[10.0], &p), Decision::Revise);
        assert_eq!(run(&[10.0, 9.0], &p), Decision::Stop(ExitReason::Stall));
        assert_eq!(run(&[10.0, 10.0, 10.0], &p), Decision::Stop(ExitReason::Plateau));
        let no_plateau = Policy { plateau_eps: 0.0, ..p };
        assert_eq!(run(&[10.0; 5], &no_plateau), Decision::Stop(ExitReason::Budget));
    }

    #[test]
    fn dim_target_requires_every_dimension() {
        let p = Policy { dim_target: Some(8.0), ..policy() };
        let weak = [RoundScore::new(9.0).with_min_dimension(7.5)];
        assert_eq!(decide(&weak, &p, Drafting::Revisions), Decision::Revise);
        let strong = [RoundScore::new(9.0).with_min_dimension(8.0)];
        assert_eq!(decide(&strong, &p, Drafting::Revisions), Decision::Stop(ExitReason::Pass));
        // Without a target, a weak dimension does not block a pass.
        assert_eq!(decide(&weak, &policy(), Drafting::Revisions), Decision::Stop(ExitReason::Pass));
    }

    #[test]
    fn config_ids_are_readable_and_distinct() {
        assert_eq!(policy().config_id(), "p8-r3-stall-e0");
        let p = Policy {
            pass_score: 7.5,
            max_revisions: 5,
            stall: false,
            plateau_eps: 0.1,
            dim_target: Some(8.0),
            final_draft: FinalDraft::Last,
        };
        assert_eq!(p.config_id(), "p7.5-r5-nostall-e0.1-d8-last");
    }

    #[test]
    fn stop_point_finds_the_first_stop_on_a_recording() {
        let recording = scores(&[5.0, 6.0, 8.5, 7.0]);
        assert_eq!(stop_point(&recording, &policy(), Drafting::Revisions), Some((2, ExitReason::Pass)));
        let strict = Policy { pass_score: 9.0, ..policy() };
        assert_eq!(stop_point(&recording, &strict, Drafting::Revisions), Some((3, ExitReason::Stall)));
        let one = Policy { max_revisions: 1, ..policy() };
        assert_eq!(stop_point(&recording, &one, Drafting::Revisions), Some((1, ExitReason::Budget)));
        let long = Policy { pass_score: 9.0, stall: false, max_revisions: 5, ..policy() };
        assert_eq!(stop_point(&recording, &long, Drafting::Revisions), None);
        // A writer that wrote no next draft stops the policy that would revise, and no other.
        assert_eq!(
            stop_point_or_writer(&recording, &long, Drafting::Revisions, true),
            Some((3, ExitReason::WriterError))
        );
        assert_eq!(stop_point_or_writer(&recording, &long, Drafting::Revisions, false), None);
        assert_eq!(stop_point_or_writer(&recording, &one, Drafting::Revisions, true), Some((1, ExitReason::Budget)));
    }

    #[test]
    fn exit_reasons_round_trip_through_text() {
        for reason in ExitReason::ALL {
            assert_eq!(ExitReason::parse(reason.as_str()), Some(reason));
        }
        assert_eq!(ExitReason::parse("done"), None);
    }

    /// Every sequence of scores on a small grid, checked against the rule written out longhand.
    #[test]
    fn exhaustive_small_grid_matches_the_spec_table() {
        let values = [4.0, 5.0, 5.05, 8.0];
        let policies = [
            Policy::default(),
            Policy { stall: false, ..Policy::default() },
            Policy { plateau_eps: 0.1, max_revisions: 4, ..Policy::default() },
            Policy { max_revisions: 0, ..Policy::default() },
        ];
        let mut checked = 0;
        for (p, drafting) in policies.iter().flat_map(|p| [(p, Drafting::Revisions), (p, Drafting::IndependentDraws)]) {
            for len in 1..=4usize {
                for code in 0..(values.len() * 2).pow(len as u32) {
                    let mut c = code;
                    let rounds: Vec<RoundScore> = (0..len)
                        .map(|_| {
                            let pick = c % (values.len() * 2);
                            c /= values.len() * 2;
                            let r = RoundScore::new(values[pick / 2]);
                            if pick % 2 == 1 { r.fatal() } else { r }
                        })
                        .collect();
                    assert_eq!(
                        decide(&rounds, p, drafting),
                        longhand(&rounds, p, drafting),
                        "{rounds:?} {p:?} {drafting:?}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000);
    }

    fn longhand(rounds: &[RoundScore], p: &Policy, drafting: Drafting) -> Decision {
        let r = rounds.len() - 1;
        let s = |i: usize| rounds[i].score;
        let last = rounds[r];
        let revisions = drafting == Drafting::Revisions;
        if !last.fatal && last.score >= p.pass_score {
            Decision::Stop(ExitReason::Pass)
        } else if last.fatal && (r as u32) < p.max_revisions {
            Decision::Revise
        } else if last.fatal {
            Decision::Stop(ExitReason::Budget)
        } else if revisions && p.stall && r >= 1 && s(r) < s(r - 1) {
            Decision::Stop(ExitReason::Stall)
        } else if revisions
            && p.plateau_eps > 0.0
            && r >= 2
            && s(r) - s(r - 1) < p.plateau_eps
            && s(r - 1) - s(r - 2) < p.plateau_eps
        {
            Decision::Stop(ExitReason::Plateau)
        } else if r as u32 >= p.max_revisions {
            Decision::Stop(ExitReason::Budget)
        } else {
            Decision::Revise
        }
    }
}
