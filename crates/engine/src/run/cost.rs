//! What a loop's model calls cost: each round's writer tokens (the generator's for round 0, the
//! reviser's after; the generator's throughout in the `resample` arm) and its critic's judge
//! tokens at their roles' prices (`[pricing]`; docs/FORMAT.md, `outcomes.parquet`'s `cost`). Computed from the recorded tokens alone, so a
//! replayed config costs what its rounds cost when they were recorded.

use critbench_core::Arm;
use critbench_openai::{ClientSettings, Price, Role};
use critbench_storage::recorded::RecordedRound;

/// Each role's price, for the loops' `cost`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RolePrices {
    /// The generator model's price, when it has one.
    pub generator: Option<Price>,
    /// The reviser model's price.
    pub reviser: Option<Price>,
    /// The judge model's price.
    pub judge: Option<Price>,
}

impl RolePrices {
    /// The prices of a run's `[openai]` roles.
    pub fn of(openai: Option<&ClientSettings>) -> RolePrices {
        let price = |role: Role| openai.and_then(|o| o.roles.get(&role)).and_then(|r| r.price);
        RolePrices { generator: price(Role::Generator), reviser: price(Role::Reviser), judge: price(Role::Judge) }
    }

    /// A recorded run's prices, from its manifest's resolved `[openai]` table
    /// (`experiment.openai.roles.ROLE.price`).
    pub fn recorded(openai: Option<&serde_json::Value>) -> RolePrices {
        let price = |role: Role| {
            let value = openai?.get("roles")?.get(role.as_str())?.get("price")?;
            serde_json::from_value::<Price>(value.clone()).ok()
        };
        RolePrices { generator: price(Role::Generator), reviser: price(Role::Reviser), judge: price(Role::Judge) }
    }

    /// What round `index` of a loop of `arm` cost (trajectories.parquet's `cost`): `Ok(None)` when
    /// it asked no model, `Err(Unpriced)` when it spent tokens of a role without a price.
    pub fn round_cost(&self, index: usize, round: &RecordedRound, arm: Arm) -> Result<Option<f64>, Unpriced> {
        let writer = if index == 0 || arm.resamples() { self.generator } else { self.reviser };
        let spends = [
            (round.tokens_in, round.tokens_out, writer),
            (round.critic_tokens_in, round.critic_tokens_out, self.judge),
        ];
        let mut cost = None;
        for (tokens_in, tokens_out, price) in spends {
            if tokens_in.is_none() && tokens_out.is_none() {
                continue;
            }
            let spent = price.ok_or(Unpriced)?.cost(tokens_in.unwrap_or(0), 0, tokens_out.unwrap_or(0));
            cost = Some(cost.unwrap_or(0.0) + spent);
        }
        Ok(cost)
    }

    /// The cost of `rounds` of a loop of `arm`, in order: the sum of their [`round_cost`]s;
    /// `None` when a round spent tokens of a role without a price (never a cost that leaves them
    /// out), or when no round spent any (no model was asked).
    ///
    /// [`round_cost`]: RolePrices::round_cost
    pub fn loop_cost(&self, rounds: &[RecordedRound], arm: Arm) -> Option<f64> {
        let mut total = None;
        for (index, round) in rounds.iter().enumerate() {
            if let Some(cost) = self.round_cost(index, round, arm).ok()? {
                total = Some(total.unwrap_or(0.0) + cost);
            }
        }
        total
    }
}

/// A round spent tokens of a role that has no price, so it has no cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unpriced;

/// What the interrupted run whose manifest is `manifest` had spent, per role (its
/// `openai.cost.by_role.ROLE.spent`, which counts what it carried over itself): nothing when it
/// left no manifest (a run killed outright), whose calls then count again only if they are not
/// in the response cache. A manifest whose report lacks a key is an error naming it.
pub fn spent_before(
    manifest: Option<&critbench_storage::manifest::Manifest>,
) -> Result<std::collections::BTreeMap<Role, f64>, critbench_openai::usage::UsageReportError> {
    let Some(openai) = manifest.and_then(|m| m.openai.as_ref()) else { return Ok(Default::default()) };
    let report = critbench_openai::usage::UsageReport::from_manifest(openai)?;
    Ok(report.cost.by_role.iter().filter_map(|(role, cost)| Some((Role::parse(role)?, cost.spent?))).collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A recorded round whose writer and critic counted these tokens (in, out).
    pub(crate) fn round(writer: Option<(u64, u64)>, critic: Option<(u64, u64)>) -> RecordedRound {
        RecordedRound {
            tokens_in: writer.map(|w| w.0),
            tokens_out: writer.map(|w| w.1),
            critic_tokens_in: critic.map(|c| c.0),
            critic_tokens_out: critic.map(|c| c.1),
            ..RecordedRound::default()
        }
    }

    fn price(input: f64, output: f64) -> Option<Price> {
        Some(Price { input_per_mtok: input, cached_input_per_mtok: None, output_per_mtok: output })
    }

    #[test]
    fn each_round_is_paid_at_its_writers_and_its_judges_price() {
        let prices = RolePrices { generator: price(1e6, 0.0), reviser: price(0.0, 2e6), judge: price(3e6, 3e6) };
        // Round 0: 2 generator tokens in (2.0) and a judge of 1 + 1 (6.0); round 1: 4 reviser
        // tokens out (8.0), judged the same.
        let rounds = [round(Some((2, 5)), Some((1, 1))), round(Some((9, 4)), Some((1, 1)))];
        assert_eq!(prices.loop_cost(&rounds, Arm::Feedback), Some(2.0 + 6.0 + 8.0 + 6.0));
        assert_eq!(
            prices.loop_cost(&rounds[..1], Arm::Feedback),
            Some(8.0),
            "a config that stopped at round 0 paid round 0"
        );
        // A resampled round 1 is a first draft: 9 generator tokens in (9.0), none out at its price.
        assert_eq!(prices.loop_cost(&rounds, Arm::Resample), Some(2.0 + 6.0 + 9.0 + 6.0));
    }

    #[test]
    fn a_loops_cost_is_the_sum_of_its_rounds_costs() {
        let prices = RolePrices { generator: price(1e6, 0.0), reviser: price(0.0, 2e6), judge: price(3e6, 3e6) };
        let rounds = [round(Some((2, 5)), Some((1, 1))), round(Some((9, 4)), None), round(None, None)];
        let each: Vec<Option<f64>> =
            rounds.iter().enumerate().map(|(i, r)| prices.round_cost(i, r, Arm::Feedback).unwrap()).collect();
        assert_eq!(each, [Some(2.0 + 6.0), Some(8.0), None], "a round that asked no model cost nothing");
        assert_eq!(prices.loop_cost(&rounds, Arm::Feedback), Some(16.0));
        let unpriced = RolePrices { judge: None, ..prices };
        assert_eq!(unpriced.round_cost(0, &rounds[0], Arm::Feedback), Err(Unpriced));
        assert_eq!(unpriced.round_cost(1, &rounds[1], Arm::Feedback), Ok(Some(8.0)));
    }

    #[test]
    fn a_missing_price_leaves_the_cost_empty_never_zero() {
        let rounds = [round(Some((2, 5)), Some((1, 1)))];
        let unpriced_judge = RolePrices { generator: price(1.0, 1.0), reviser: price(1.0, 1.0), judge: None };
        assert_eq!(unpriced_judge.loop_cost(&rounds, Arm::Feedback), None);
        // The simulated writer spends no tokens: only the judge's are counted, and nothing at all
        // without a model.
        assert_eq!(unpriced_judge.loop_cost(&[round(None, None)], Arm::Feedback), None);
        let judged = RolePrices { judge: price(0.0, 0.0), ..RolePrices::default() };
        assert_eq!(
            judged.loop_cost(&[round(None, Some((7, 7)))], Arm::Feedback),
            Some(0.0),
            "a local judge priced at zero"
        );
    }

    #[test]
    fn a_recorded_runs_prices_come_from_its_manifest() {
        let openai = serde_json::json!({"roles": {
            "generator": {"model": "g", "price": {"input_per_mtok": 1.5, "output_per_mtok": 2.0}},
            "judge": {"model": "j"},
        }});
        let prices = RolePrices::recorded(Some(&openai));
        assert_eq!(prices.generator, price(1.5, 2.0));
        assert_eq!((prices.reviser, prices.judge), (None, None));
        assert_eq!(RolePrices::recorded(None), RolePrices::default());
    }
}
