//! Best-draft tracking (docs/REFERENCE.md, The decision rule): the highest score among drafts
//! without fatal issues, earliest on
//! ties, or the highest score overall when every draft had a fatal issue.

use crate::RoundScore;

/// The best draft seen so far, updated one round at a time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BestDraft {
    /// The round of the best draft.
    pub round: usize,
    /// Its score.
    pub score: f64,
    /// Whether it has a fatal issue.
    pub fatal: bool,
}

impl BestDraft {
    /// Starts with round 0.
    pub fn first(score: &RoundScore) -> Self {
        BestDraft { round: 0, score: score.score, fatal: score.fatal }
    }

    /// Takes round `round` into account; returns true when it became the best.
    pub fn observe(&mut self, round: usize, score: &RoundScore) -> bool {
        let better = match (self.fatal, score.fatal) {
            (true, false) => true,
            (false, true) => false,
            _ => score.score > self.score,
        };
        if better {
            *self = BestDraft { round, score: score.score, fatal: score.fatal };
        }
        better
    }
}

/// The best round of a whole trajectory, or `None` if it is empty.
pub fn best_round(rounds: &[RoundScore]) -> Option<BestDraft> {
    let (first, rest) = rounds.split_first()?;
    let mut best = BestDraft::first(first);
    for (offset, score) in rest.iter().enumerate() {
        best.observe(offset + 1, score);
    }
    Some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highest_score_wins_and_ties_keep_the_earliest() {
        let rounds = [RoundScore::new(5.0), RoundScore::new(7.0), RoundScore::new(7.0)];
        assert_eq!(best_round(&rounds).unwrap().round, 1);
    }

    #[test]
    fn a_draft_without_fatal_issues_beats_a_higher_fatal_one() {
        let rounds = [RoundScore::new(9.0).fatal(), RoundScore::new(4.0), RoundScore::new(9.5).fatal()];
        let best = best_round(&rounds).unwrap();
        assert_eq!((best.round, best.score), (1, 4.0));
    }

    #[test]
    fn all_fatal_takes_the_highest_overall() {
        let rounds = [RoundScore::new(3.0).fatal(), RoundScore::new(6.0).fatal(), RoundScore::new(5.0).fatal()];
        assert_eq!(best_round(&rounds).unwrap().round, 1);
    }

    #[test]
    fn empty_has_no_best() {
        assert_eq!(best_round(&[]), None);
    }
}
