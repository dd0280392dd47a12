#!/usr/bin/env python3
"""Recomputes a held-out judge's rows of a critbench run from evaluations.parquet alone.

Usage: python3 tests/python/check_judges.py RUN_DIR JUDGE

Every rate and comparison file of a run has a `judge` column with a full set of rows per judge
(docs/REFERENCE.md, Judges). For JUDGE (a held-out evaluator, such as `sim-truth`) this script
recomputes, with pandas, from the evaluator's verdicts on each loop's final answer in
evaluations.parquet (and each loop's rounds in outcomes.parquet):

- comparisons.csv: per config × critic × pair of arms, the units (task × epoch) both arms have a
  verdict on, each arm's pass rate over them, the difference and the discordant counts;
- config_comparisons.csv: per pair of configs × arm × critic, the same over the units both configs
  have;
- cost_comparisons.csv, in rounds, at the points where both arms are held to one whole cap: a loop
  capped at k rounds answers with its final answer when it used at most k rounds, else with the
  draft its `final` rule picks among its first k (the best-scored, a draft with no fatal issue
  first and the earliest on ties; or the k-th), and passes when the judge passed that draft (its
  verdicts on every round); an arm with a loop the judge did not read so has no rows;
- ladder.csv: each step from one arm to the next, the later arm's pass rate minus the earlier's
  over the units both have, and the tasks compared;
- summary.csv: each arm's loops and passes;
- evaluators.csv: `pleasing_gap`, per loop the steering critic's change from first draft to final
  answer (its verdict on the first draft from evaluations.parquet's `steering_passed`, on the final
  answer whether the loop passed in outcomes.parquet) less the judge's, over the loops.

A loop whose evaluator failed (no verdict) is in no unit. Prints what it checked and exits 0, or
prints every mismatch and exits 1 (2 for bad usage). Requirements: tests/python/requirements.txt.
"""

import sys
from pathlib import Path

import pandas as pd

TOLERANCE = 1e-9


def verdicts(run: Path, judge: str) -> pd.DataFrame:
    """One row per judged loop: its key, the judge's final verdict and the loop's rounds."""
    evaluations = pd.read_parquet(run / "evaluations.parquet")
    evaluations = evaluations[evaluations["evaluator"] == judge]
    errored = evaluations[evaluations["passed"].isna() & evaluations["answer"].isin(["first", "final"])]
    keys = ["config_id", "arm", "critic", "task_id", "epoch"]
    final = evaluations[evaluations["answer"] == "final"][keys + ["passed"]]
    final = final.merge(errored[keys].drop_duplicates(), on=keys, how="left", indicator=True)
    final = final[final["_merge"] == "left_only"].drop(columns="_merge")
    final["passed"] = final["passed"].astype(bool)
    outcomes = pd.read_parquet(run / "outcomes.parquet")[keys + ["rounds", "final"]]
    outcomes["arm"] = outcomes["arm"].astype(str)
    final["arm"] = final["arm"].astype(str)
    return final.merge(outcomes, on=keys, how="inner")


UNIT = ["task_id", "epoch"]
KEYS = ["config_id", "arm", "critic", "task_id", "epoch"]


def capped_answers(run: Path, judge: str, loops: pd.DataFrame) -> dict:
    """Per loop key, the judge's verdict on what the loop answers capped at k, for k = 1 ..
    rounds − 1 (None where it has no verdict on that draft)."""
    evaluations = pd.read_parquet(run / "evaluations.parquet")
    evaluations = evaluations[evaluations["evaluator"] == judge]
    by_round = {}
    for row in evaluations.itertuples(index=False):
        key = (row.config_id, str(row.arm), row.critic, row.task_id, row.epoch, row.round)
        if not pd.isna(row.passed):
            by_round[key] = bool(row.passed)
    trajectories = pd.read_parquet(
        run / "trajectories.parquet", columns=KEYS + ["round", "score", "fatal_issues", "decision"]
    )
    trajectories = trajectories[trajectories["decision"] != "adjudicate"]
    scores = {}
    for row in trajectories.itertuples(index=False):
        key = (row.config_id, str(row.arm), row.critic, row.task_id, row.epoch)
        scores.setdefault(key, {})[row.round] = (len(row.fatal_issues) > 0, row.score)
    answers = {}
    for row in loops.itertuples(index=False):
        key = (row.config_id, row.arm, row.critic, row.task_id, row.epoch)
        capped = []
        for cap in range(1, row.rounds):
            if row.final == "last":
                answer = cap - 1
            else:
                answer = 0
                for r in range(1, cap):
                    (fatal, score), (best_fatal, best_score) = scores[key][r], scores[key][answer]
                    if (best_fatal and not fatal) or (fatal == best_fatal and score > best_score):
                        answer = r
            capped.append(by_round.get(key + (answer,)))
        answers[key] = capped
    return answers


def pleasing_gaps(run: Path, judge: str) -> pd.DataFrame:
    """One row per loop the judge gave both verdicts: (critic final − first) − (judge final − first)."""
    evaluations = pd.read_parquet(run / "evaluations.parquet")
    evaluations = evaluations[evaluations["evaluator"] == judge]
    keys = ["config_id", "arm", "critic", "task_id", "epoch"]
    first = evaluations[evaluations["answer"] == "first"][keys + ["passed", "steering_passed"]]
    final = evaluations[evaluations["answer"] == "final"][keys + ["passed"]]
    loops = first.merge(final, on=keys, suffixes=("_first", "_final"))
    loops = loops[loops["passed_first"].notna() & loops["passed_final"].notna()]
    outcomes = pd.read_parquet(run / "outcomes.parquet")[keys + ["passed"]]
    outcomes["arm"] = outcomes["arm"].astype(str)
    loops["arm"] = loops["arm"].astype(str)
    loops = loops.merge(outcomes.rename(columns={"passed": "critic_final"}), on=keys, how="inner")
    as_int = lambda column: loops[column].astype(bool).astype(int)
    critic = as_int("critic_final") - as_int("steering_passed")
    loops["gap"] = critic - (as_int("passed_final") - as_int("passed_first"))
    return loops


def paired(left: pd.DataFrame, right: pd.DataFrame) -> dict:
    """Two sides' loops paired on the units both have: counts, rates and their difference."""
    both = left[UNIT + ["passed"]].merge(right[UNIT + ["passed"]], on=UNIT, suffixes=("_a", "_b"))
    a, b = both["passed_a"], both["passed_b"]
    return {
        "n_pairs": len(both),
        "pass_rate_a": a.mean(),
        "pass_rate_b": b.mean(),
        "diff": a.mean() - b.mean(),
        "a_only": int((a & ~b).sum()),
        "b_only": int((b & ~a).sum()),
    }


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    run, judge = Path(sys.argv[1]), sys.argv[2]
    loops = verdicts(run, judge)
    failures = []
    checked = {}

    def expect(where: str, column: str, computed, written) -> None:
        written = float(written)
        if abs(float(computed) - written) > TOLERANCE:
            failures.append(f"{where}: {column} is {written} in the file, {computed} from evaluations.parquet")

    summary = pd.read_csv(run / "summary.csv")
    summary = summary[summary["judge"] == judge]
    for _, row in summary.iterrows():
        if str(row["arm"]).endswith("+adjudicate"):
            failures.append(f"summary.csv: {judge} has an adjudicated row; an adjudicated draft is the critic's alone")
            continue
        of = loops[(loops.config_id == row.config_id) & (loops.critic == row.critic) & (loops.arm == row.arm)]
        where = f"summary.csv {row.config_id} {row.critic} {row.arm}"
        expect(where, "n", len(of), row["n"])
        expect(where, "passed", int(of["passed"].sum()), row["passed"])
    checked["summary.csv"] = len(summary)

    def expect_pairs(where: str, computed: dict, row, columns=None) -> None:
        for column in columns or computed:
            expect(where, column, computed[column], row[column])

    comparisons = pd.read_csv(run / "comparisons.csv")
    comparisons = comparisons[comparisons["judge"] == judge]
    for _, row in comparisons.iterrows():
        group = loops[(loops.config_id == row.config_id) & (loops.critic == row.critic)]
        computed = paired(group[group.arm == row.arm_a], group[group.arm == row.arm_b])
        expect_pairs(f"comparisons.csv {row.config_id} {row.critic} {row.arm_a} − {row.arm_b}", computed, row)
    checked["comparisons.csv"] = len(comparisons)

    configs = pd.read_csv(run / "config_comparisons.csv")
    configs = configs[configs["judge"] == judge]
    for _, row in configs.iterrows():
        group = loops[(loops.arm == row.arm) & (loops.critic == row.critic)]
        computed = paired(group[group.config_id == row.config_a], group[group.config_id == row.config_b])
        expect_pairs(f"config_comparisons.csv {row.config_a} vs {row.config_b} {row.arm} {row.critic}", computed, row)
    checked["config_comparisons.csv"] = len(configs)

    costs = pd.read_csv(run / "cost_comparisons.csv")
    costs = costs[(costs["judge"] == judge) & (costs["unit"] == "rounds")]
    answers = capped_answers(run, judge, loops)

    def capped(group: pd.DataFrame, cap: int) -> pd.DataFrame:
        group = group.copy()
        verdicts = []
        for row in group.itertuples(index=False):
            if cap >= row.rounds:
                verdicts.append(row.passed)
            else:
                verdicts.append(answers[(row.config_id, row.arm, row.critic, row.task_id, row.epoch)][cap - 1])
        group["passed"] = verdicts
        return group

    whole = costs[(costs.cap_a % 1 == 0) & (costs.cap_b % 1 == 0)]
    for _, row in whole.iterrows():
        group = loops[(loops.config_id == row.config_id) & (loops.critic == row.critic)]
        a = capped(group[group.arm == row.arm_a], int(row.cap_a))
        b = capped(group[group.arm == row.arm_b], int(row.cap_b))
        where = f"cost_comparisons.csv {row.config_id} {row.critic} {row.arm_a} − {row.arm_b} at {row.matched_to}"
        if a["passed"].isna().any() or b["passed"].isna().any():
            failures.append(f"{where}: the judge has no verdict on some capped answer, yet the row is there")
            continue
        a["passed"], b["passed"] = a["passed"].astype(bool), b["passed"].astype(bool)
        expect_pairs(where, paired(a, b), row, ["diff"])
    checked["cost_comparisons.csv"] = len(whole)

    gaps = pleasing_gaps(run, judge)
    evaluators = pd.read_csv(run / "evaluators.csv")
    evaluators = evaluators[evaluators["evaluator"] == judge]
    for _, row in evaluators.iterrows():
        of = gaps[(gaps.config_id == row.config_id) & (gaps.critic == row.critic) & (gaps.arm == row.arm)]
        where = f"evaluators.csv {row.config_id} {row.critic} {row.arm}"
        expect(where, "n", len(of), row["n"])
        expect(where, "pleasing_gap", of["gap"].mean(), row["pleasing_gap"])
    checked["evaluators.csv"] = len(evaluators)

    ladder = pd.read_csv(run / "ladder.csv")
    ladder = ladder[ladder["judge"] == judge]
    for _, row in ladder.iterrows():
        group = loops[(loops.config_id == row.config_id) & (loops.critic == row.critic)]
        to, from_ = group[group.arm == row.to_arm], group[group.arm == row.from_arm]
        computed = paired(to, from_)
        where = f"ladder.csv {row.config_id} {row.critic} {row.from_arm} → {row.to_arm}"
        expect(where, "diff", computed["diff"], row["diff"])
        tasks = to[UNIT].merge(from_[UNIT], on=UNIT)["task_id"].nunique()
        expect(where, "n_tasks", tasks, row["n_tasks"])
    checked["ladder.csv"] = len(ladder)

    # A run of one config has no config comparisons to check.
    if loops["config_id"].nunique() < 2:
        checked.pop("config_comparisons.csv")
    empty = [name for name, count in checked.items() if count == 0]
    if empty:
        failures.append(f"no {judge} rows in {', '.join(empty)}")
    if failures:
        print("\n".join(failures))
        return 1
    print(f"{judge}: " + ", ".join(f"{count} rows of {name}" for name, count in checked.items()) + " recomputed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
