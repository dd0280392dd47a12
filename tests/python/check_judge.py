#!/usr/bin/env python3
"""Recomputes every metric of a `critbench judge` directory from judgments.parquet with reference
implementations (scikit-learn, scipy, statsmodels, numpy) and compares them with judge.json.

Usage: python3 tests/python/check_judge.py JUDGE_DIR

Run it from the directory `critbench judge` ran in (the repository root for the demo): judge.json
names the datasets as the run was given them.

Checks, for every critic in judge.json:

- coverage: every labeled draft of the datasets named in judge.json (JSONL files) appears once per
  critic that takes its kind and per repeat, with the dataset's gold label -- nothing dropped;
- the verdict: `passed` is the pass rule of docs/REFERENCE.md's decision rule, step 1 (no failed critique, no fatal issue,
  score >= pass_score, every dimension >= dim_target when set), recomputed here;
- a failed critique (`critic_error` set) is no verdict: every agreement number below is over the
  judgments with a verdict only, the failures counted apart (`critic_errors`, `error_drafts`, the
  critique error rate over every critique made);
- counts and point estimates, to 1e-9: the confusion table (sklearn confusion_matrix), false-pass and
  false-fail rates, accuracy, precision and recall of "pass" (sklearn), Cohen's kappa
  (sklearn cohen_kappa_score), Spearman and Kendall tau-b with gold scores (scipy spearmanr,
  kendalltau), fatal-issue recall and precision (sklearn), spread across repeats (pandas std,
  ddof=1), verdict flips, critique error rate, mean attempts and score, latency percentiles
  (numpy.percentile);
- intervals: each brackets its point estimate and stays in the metric's range; a rate of exactly 0
  or 1 has the interval over the drafts of its denominator (statsmodels: Wilson's, Clopper-Pearson's
  on 30 drafts or fewer); the other rates and kappa agree with a numpy cluster bootstrap over drafts
  within a tolerance;
- the threshold sweep (every pass_score in the critic's range, step 0.5), calibration bins, the
  per-flaw breakdown (over drafts as above, statsmodels) and the critic-vs-critic pairs (accuracy on
  shared drafts; the interval and test of tests/python/check_intervals.py's `difference`, each draft
  one pair: McNemar's exact test with at most 30 drafts or fewer than 10 only one critic judged
  right, to 1e-9;
  the exact bootstrap's interval and p-value with more than 30 drafts);
- judge.csv holds the same numbers as judge.json.

Prints one line per critic and exits 0, or prints every disagreement and exits 1 (2 for bad usage).
Requirements: tests/python/requirements.txt.
"""

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest, kendalltau, spearmanr
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    precision_score,
    recall_score,
)
from statsmodels.stats.proportion import proportion_confint

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_intervals as reference  # noqa: E402  the paired interval's reference

TOLERANCE = 1e-9
RESAMPLES = 4000
STEP = 0.5
BINS = 10

failures = []


def fail(message):
    failures.append(message)


def same(a, b):
    """Equal within TOLERANCE, with None and NaN meaning "undefined" on either side."""
    a_missing = a is None or (isinstance(a, float) and math.isnan(a))
    b_missing = b is None or (isinstance(b, float) and math.isnan(b))
    if a_missing or b_missing:
        return a_missing and b_missing
    return abs(float(a) - float(b)) <= TOLERANCE


def expect(where, name, got, want):
    if not same(got, want):
        fail(f"{where}: {name} = {got}, expected {want}")


def wilson(k, n):
    """The interval of k of n drafts: Wilson's, or Clopper-Pearson's exact one on 30 drafts or fewer."""
    lo, hi = proportion_confint(k, n, alpha=0.05, method="beta" if n <= 30 else "wilson")
    return float(lo), float(hi)


def undefined_to_none(value):
    value = float(value)
    return None if math.isnan(value) else value


def verdicts(frame, pass_score, dim_target):
    """The host's pass rule (docs/REFERENCE.md, The decision rule, step 1) on every row."""
    ok = frame["critic_error"].isna() & (frame["fatal_issues"].map(len) == 0) & (frame["score"] >= pass_score)
    if dim_target is not None and not math.isnan(dim_target):
        dims_ok = frame["dims"].map(lambda d: len(d) == 0 or min(v for _, v in d) >= dim_target)
        ok &= dims_ok
    return ok


def check_coverage(report, rows, kinds_of):
    repeats = report["repeats"]
    seen = rows.groupby(["critic", "task_id", "draft_index"]).size().to_dict()
    for dataset in report["datasets"]:
        path = Path(dataset["path"])
        if path.suffix != ".jsonl":
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            task = json.loads(line)
            drafts, labels = task.get("drafts") or [], task.get("labels")
            if not drafts or not isinstance(labels, list):
                continue
            for critic, kinds in kinds_of.items():
                if kinds is not None and task.get("kind") not in kinds:
                    continue
                for i, gold in enumerate(labels):
                    n = seen.get((critic, task["id"], i), 0)
                    if n != repeats:
                        fail(f"{critic}: task {task['id']} draft {i} judged {n} times, expected {repeats}")
    for (critic, task_id, draft), group in rows.groupby(["critic", "task_id", "draft_index"]):
        if sorted(group["repeat"]) != list(range(repeats)):
            fail(f"{critic}: {task_id} draft {draft}: repeats {sorted(group['repeat'])}")


def cluster_bootstrap(per_draft, numerator, denominator, rng):
    """Percentile 95% interval of sum(numerator)/sum(denominator) over drafts drawn with replacement."""
    n = len(per_draft)
    draws = rng.integers(0, n, size=(RESAMPLES, n))
    num = per_draft[numerator].to_numpy()[draws].sum(axis=1)
    den = per_draft[denominator].to_numpy()[draws].sum(axis=1)
    values = num[den > 0] / den[den > 0]
    return np.percentile(values, [2.5, 97.5])


def check_critic(report, metrics, rows, rng):
    name = metrics["critic"]
    where = name
    every = rows[rows["critic"] == name]
    policy = report["policy"]
    recomputed = verdicts(every, policy["pass_score"], policy["dim_target"]).to_numpy()
    if not (recomputed == every["passed"].to_numpy(dtype=bool)).all():
        fail(f"{where}: `passed` differs from the pass rule on {(recomputed != every['passed']).sum()} rows")

    # An error is no verdict: the agreement numbers are over the rest.
    errors = every["critic_error"].notna()
    frame = every[~errors]
    gold = frame["gold_pass"].to_numpy(dtype=bool)
    judged = frame["passed"].to_numpy(dtype=bool)

    tn, fp, fn, tp = confusion_matrix(gold, judged, labels=[False, True]).ravel()
    drafts = frame.groupby(["task_id", "draft_index"])
    every_draft = every.groupby(["task_id", "draft_index"])
    for key, want in [
        ("judgments", len(every)),
        ("drafts", every_draft.ngroups),
        ("error_drafts", every_draft.ngroups - drafts.ngroups),
        ("true_pass", tp),
        ("false_pass", fp),
        ("false_fail", fn),
        ("true_fail", tn),
        ("gold_pass", tp + fn),
        ("gold_fail", fp + tn),
    ]:
        if metrics[key] != int(want):
            fail(f"{where}: {key} = {metrics[key]}, expected {want}")

    expect(where, "false_pass_rate", metrics["false_pass_rate"], fp / (fp + tn) if fp + tn else None)
    expect(where, "false_fail_rate", metrics["false_fail_rate"], fn / (fn + tp) if fn + tp else None)
    expect(where, "accuracy", metrics["accuracy"], accuracy_score(gold, judged))
    expect(where, "precision", metrics["precision"], precision_score(gold, judged, zero_division=np.nan))
    expect(where, "recall", metrics["recall"], recall_score(gold, judged, zero_division=np.nan))
    with np.errstate(all="ignore"):
        kappa = cohen_kappa_score(gold, judged)
    expect(where, "kappa", metrics["kappa"], undefined_to_none(kappa))

    scored = frame[frame["gold_score"].notna()]
    if metrics["scored"] != len(scored):
        fail(f"{where}: scored = {metrics['scored']}, expected {len(scored)}")
    constant = len(scored) < 2 or scored["gold_score"].nunique() < 2 or scored["score"].nunique() < 2
    rho = None if constant else spearmanr(scored["gold_score"], scored["score"]).statistic
    tau = None if constant else kendalltau(scored["gold_score"], scored["score"]).statistic
    expect(where, "spearman", metrics["spearman"], rho)
    expect(where, "kendall", metrics["kendall"], tau)

    flagged = frame["fatal_issues"].map(len) > 0
    known = frame["gold_fatal"].notna()
    gold_fatal = frame.loc[known, "gold_fatal"].astype(bool).to_numpy()
    flagged_known = flagged[known].to_numpy()
    expect(where, "fatal_recall", metrics["fatal_recall"], recall_score(gold_fatal, flagged_known, zero_division=np.nan))
    expect(
        where, "fatal_precision", metrics["fatal_precision"], precision_score(gold_fatal, flagged_known, zero_division=np.nan)
    )
    if metrics["gold_fatal"] != int(gold_fatal.sum()) or metrics["fatal_flagged"] != int((gold_fatal & flagged_known).sum()):
        fail(f"{where}: gold_fatal / fatal_flagged = {metrics['gold_fatal']} / {metrics['fatal_flagged']}")

    repeated = drafts.filter(lambda g: len(g) >= 2).groupby(["task_id", "draft_index"])
    if repeated.ngroups:
        expect(where, "score_sd_mean", metrics["score_sd_mean"], repeated["score"].std(ddof=1).mean())
        expect(where, "score_range_max", metrics["score_range_max"], (repeated["score"].max() - repeated["score"].min()).max())
        expect(where, "verdict_flip_rate", metrics["verdict_flip_rate"], (repeated["passed"].nunique() > 1).mean())
    else:
        for key in ["score_sd_mean", "score_range_max", "verdict_flip_rate"]:
            expect(where, key, metrics[key], None)

    if metrics["critic_errors"] != int(errors.sum()):
        fail(f"{where}: critic_errors = {metrics['critic_errors']}, expected {errors.sum()}")
    expect(where, "critic_error_rate", metrics["critic_error_rate"], errors.mean())
    # What every critique cost, failed or not.
    expect(where, "mean_attempts", metrics["mean_attempts"], every["critic_attempts"].mean())
    expect(where, "mean_score", metrics["mean_score"], frame["score"].mean() if len(frame) else None)
    p50, p90, p99 = np.percentile(every["critic_ms"], [50, 90, 99])
    expect(where, "latency_p50_ms", metrics["latency_p50_ms"], p50)
    expect(where, "latency_p90_ms", metrics["latency_p90_ms"], p90)
    expect(where, "latency_p99_ms", metrics["latency_p99_ms"], p99)
    expect(where, "latency_max_ms", metrics["latency_max_ms"], every["critic_ms"].max())

    # Intervals. Per draft: the counts each rate is made of, so a cluster bootstrap is a few sums.
    per_draft = (
        frame.assign(
            tp=(frame["gold_pass"] & frame["passed"]).astype(int),
            fp=(~frame["gold_pass"] & frame["passed"]).astype(int),
            fn=(frame["gold_pass"] & ~frame["passed"]).astype(int),
            tn=(~frame["gold_pass"] & ~frame["passed"]).astype(int),
            fatal_gold=(frame["gold_fatal"] == True).astype(int),  # noqa: E712  (nullable column)
            fatal_caught=((frame["gold_fatal"] == True) & flagged).astype(int),  # noqa: E712
            one=1,
        )
        .assign(
            gold_f=lambda d: d.fp + d.tn,
            gold_p=lambda d: d.tp + d.fn,
            right=lambda d: d.tp + d.tn,
            judged_p=lambda d: d.tp + d.fp,
        )
        .groupby(["task_id", "draft_index"])[
            ["tp", "fp", "fn", "tn", "fatal_gold", "fatal_caught", "one", "gold_f", "gold_p", "right", "judged_p"]
        ]
        .sum()
    )
    # The error rate's sample is every critique made, over every draft critiqued.
    per_draft_every = (
        every.assign(err=errors.astype(int), one=1).groupby(["task_id", "draft_index"])[["err", "one"]].sum()
    )
    rates = {
        # metric: (per-draft table, numerator, denominator)
        "false_pass_rate": (per_draft, "fp", "gold_f"),
        "false_fail_rate": (per_draft, "fn", "gold_p"),
        "accuracy": (per_draft, "right", "one"),
        "precision": (per_draft, "tp", "judged_p"),
        "recall": (per_draft, "tp", "gold_p"),
        "fatal_recall": (per_draft, "fatal_caught", "fatal_gold"),
        "critic_error_rate": (per_draft_every, "err", "one"),
    }
    for key, (table, numerator, denominator) in rates.items():
        tolerance = max(0.04, 2.5 / max(len(table), 1))
        value, lo, hi = metrics[key], metrics[f"{key}_lo"], metrics[f"{key}_hi"]
        if value is None:
            if lo is not None or hi is not None:
                fail(f"{where}: {key} is undefined but has an interval")
            continue
        if lo is None or hi is None or not (0.0 <= lo <= value + 1e-12 and value - 1e-12 <= hi <= 1.0):
            fail(f"{where}: {key} interval ({lo}, {hi}) does not bracket {value} within [0, 1]")
            continue
        if value in (0.0, 1.0):
            # Every judgment agrees: Wilson over the drafts of the denominator.
            n = int((table[denominator] > 0).sum())
            want = wilson(n if value == 1.0 else 0, n)
            if not (same(lo, want[0]) and same(hi, want[1])):
                fail(f"{where}: {key} = {value}: interval ({lo}, {hi}), expected Wilson over {n} drafts {want}")
        else:
            ref = cluster_bootstrap(table, numerator, denominator, rng)
            if abs(lo - ref[0]) > tolerance or abs(hi - ref[1]) > tolerance:
                fail(f"{where}: {key} interval ({lo:.4f}, {hi:.4f}) vs numpy bootstrap ({ref[0]:.4f}, {ref[1]:.4f})")
    for key, low in [("kappa", -1.0), ("spearman", -1.0), ("kendall", -1.0)]:
        value, lo, hi = metrics[key], metrics[f"{key}_lo"], metrics[f"{key}_hi"]
        if value is None or lo is None:
            continue
        if not (low <= lo <= value + 1e-12 and value - 1e-12 <= hi <= 1.0):
            fail(f"{where}: {key} interval ({lo}, {hi}) does not bracket {value}")
        # On a handful of drafts a weak correlation's interval can span most of [-1, 1].
        if hi - lo > 1.5 and len(per_draft) > 30:
            fail(f"{where}: {key} interval ({lo}, {hi}) is unreasonably wide for {len(per_draft)} drafts")

    check_thresholds(report, metrics, frame, gold)
    check_calibration(report, metrics, frame)
    check_flaws(report, name, frame)


def check_thresholds(report, metrics, frame, gold):
    name = metrics["critic"]
    rows = [t for t in report["thresholds"] if t["critic"] == name]
    lo, hi = metrics["score_min"], metrics["score_max"]
    steps = [lo + STEP * k for k in range(int(math.floor((hi - lo) / STEP + 1e-9)) + 1)]
    pass_score = report["policy"]["pass_score"]
    if lo <= pass_score <= hi and not any(abs(s - pass_score) < 1e-9 for s in steps):
        steps = sorted(steps + [pass_score])
    if [t["pass_score"] for t in rows] != steps:
        fail(f"{name}: thresholds {[t['pass_score'] for t in rows]}, expected {steps}")
        return
    current = [t["pass_score"] for t in rows if t["current"]]
    if current != [pass_score]:
        fail(f"{name}: the current threshold is {current}, expected [{pass_score}]")
    for t in rows:
        judged = verdicts(frame, t["pass_score"], report["policy"]["dim_target"]).to_numpy()
        fp, tn = int((judged & ~gold).sum()), int((~judged & ~gold).sum())
        fn, tp = int((~judged & gold).sum()), int((judged & gold).sum())
        where = f"{name} at pass_score {t['pass_score']}"
        if t["judged_pass"] != int(judged.sum()):
            fail(f"{where}: judged_pass = {t['judged_pass']}, expected {judged.sum()}")
        expect(where, "false_pass_rate", t["false_pass_rate"], fp / (fp + tn) if fp + tn else None)
        expect(where, "false_fail_rate", t["false_fail_rate"], fn / (fn + tp) if fn + tp else None)
        expect(where, "accuracy", t["accuracy"], accuracy_score(gold, judged))


def check_calibration(report, metrics, frame):
    name = metrics["critic"]
    bins = [b for b in report["calibration"] if b["critic"] == name]
    lo, hi = metrics["score_min"], metrics["score_max"]
    width = (hi - lo) / BINS
    index = np.minimum(np.floor(np.maximum((frame["score"].to_numpy() - lo) / width, 0.0)), BINS - 1).astype(int)
    if len(bins) != BINS:
        fail(f"{name}: {len(bins)} calibration bins, expected {BINS}")
        return
    for b in bins:
        members = frame[index == b["bin"]]
        where = f"{name} calibration bin {b['bin']}"
        if b["judgments"] != len(members) or b["gold_pass"] != int(members["gold_pass"].sum()):
            fail(f"{where}: {b['judgments']} judgments / {b['gold_pass']} gold pass, expected {len(members)} / {members['gold_pass'].sum()}")
        expect(where, "score_lo", b["score_lo"], lo + b["bin"] * width)
        expect(where, "gold_pass_rate", b["gold_pass_rate"], members["gold_pass"].mean() if len(members) else None)
        expect(where, "mean_score", b["mean_score"], members["score"].mean() if len(members) else None)


def check_flaws(report, name, frame):
    rows = [f for f in report["flaws"] if f["critic"] == name]
    frame = frame.assign(
        kind_key=frame["kind"].fillna("(none)"),
        flaw_key=frame["flaw"].fillna("(unnamed)"),
        wrong=frame["passed"] != frame["gold_pass"],
    )
    groups = frame.groupby(["kind_key", "gold_pass", "flaw_key"])
    if len(rows) != groups.ngroups:
        fail(f"{name}: {len(rows)} flaw rows, expected {groups.ngroups}")
    for row in rows:
        key = (row["kind"], row["gold_pass"], row["flaw"])
        if key not in groups.groups:
            fail(f"{name}: unexpected flaw row {key}")
            continue
        group = groups.get_group(key)
        per_draft = group.groupby(["task_id", "draft_index"])
        drafts, misjudged = per_draft.ngroups, int(per_draft["wrong"].any().sum())
        where = f"{name} {key}"
        want = {"drafts": drafts, "judgments": len(group), "judged_pass": int(group["passed"].sum()), "misjudged": misjudged}
        for field, value in want.items():
            if row[field] != value:
                fail(f"{where}: {field} = {row[field]}, expected {value}")
        expect(where, "misjudged_rate", row["misjudged_rate"], misjudged / drafts)
        lo, hi = wilson(misjudged, drafts)
        expect(where, "misjudged_lo", row["misjudged_lo"], lo)
        expect(where, "misjudged_hi", row["misjudged_hi"], hi)


def check_pairs(report, rows):
    names = [c["critic"] for c in report["critics"]]
    expected_pairs = []
    # A draft either critic failed on has no verdict to pair.
    first = rows[(rows["repeat"] == 0) & rows["critic_error"].isna()]
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            left = first[first["critic"] == a][["task_id", "draft_index", "passed", "gold_pass"]]
            right = first[first["critic"] == b][["task_id", "draft_index", "passed"]]
            shared = left.merge(right, on=["task_id", "draft_index"], suffixes=("_a", "_b"))
            if len(shared):
                expected_pairs.append((a, b, shared))
    if len(report["pairs"]) != len(expected_pairs):
        fail(f"pairs: {len(report['pairs'])} in judge.json, expected {len(expected_pairs)}")
        return
    for pair, (a, b, shared) in zip(report["pairs"], expected_pairs):
        where = f"pair {a} vs {b}"
        if (pair["critic_a"], pair["critic_b"]) != (a, b):
            fail(f"{where}: found {pair['critic_a']} vs {pair['critic_b']}")
            continue
        right_a = shared["passed_a"] == shared["gold_pass"]
        right_b = shared["passed_b"] == shared["gold_pass"]
        a_only, b_only = int((right_a & ~right_b).sum()), int((~right_a & right_b).sum())
        for field, value in [("n_pairs", len(shared)), ("a_only", a_only), ("b_only", b_only)]:
            if pair[field] != value:
                fail(f"{where}: {field} = {pair[field]}, expected {value}")
        expect(where, "accuracy_a", pair["accuracy_a"], right_a.mean())
        expect(where, "accuracy_b", pair["accuracy_b"], right_b.mean())
        expect(where, "diff", pair["diff"], right_a.mean() - right_b.mean())
        n = len(shared)
        _, (lo, hi), _, p, test = reference.difference([(1, 1, a_only), (1, -1, b_only), (1, 0, n - a_only - b_only)])
        if pair["test"] != test:
            fail(f"{where}: test {pair['test']!r}, expected {test!r}")
        if test == "exact McNemar":
            expect(where, "p_value (scipy binomtest)", pair["p_value"], binomtest(a_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0)
        expect(where, "p_value", pair["p_value"], p)
        expect(where, "diff_lo", pair["diff_lo"], lo)
        expect(where, "diff_hi", pair["diff_hi"], hi)
        if not (pair["diff_lo"] - 1e-12 <= pair["diff"] <= pair["diff_hi"] + 1e-12):
            fail(f"{where}: interval ({pair['diff_lo']}, {pair['diff_hi']}) does not bracket {pair['diff']}")
        gold_fail = ~shared["gold_pass"]
        expect(where, "false_pass_rate_a", pair["false_pass_rate_a"], shared.loc[gold_fail, "passed_a"].mean() if gold_fail.any() else None)
        expect(where, "false_pass_rate_b", pair["false_pass_rate_b"], shared.loc[gold_fail, "passed_b"].mean() if gold_fail.any() else None)


def check_csv(report, directory):
    table = pd.read_csv(directory / "judge.csv")
    if list(table["critic"]) != [c["critic"] for c in report["critics"]]:
        fail(f"judge.csv critics {list(table['critic'])}")
        return
    for metrics, (_, row) in zip(report["critics"], table.iterrows()):
        for key, value in metrics.items():
            if key not in table.columns:
                fail(f"judge.csv lacks column {key}")
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                if not same(row[key], value):
                    fail(f"judge.csv {metrics['critic']}.{key} = {row[key]}, judge.json has {value}")
            elif value is None and not pd.isna(row[key]):
                fail(f"judge.csv {metrics['critic']}.{key} = {row[key]}, judge.json has null")


def main():
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    directory = Path(sys.argv[1])
    report = json.loads((directory / "judge.json").read_text(encoding="utf-8"))
    rows = pd.read_parquet(directory / "judgments.parquet")
    rows["gold_pass"] = rows["gold_pass"].astype(bool)
    rows["passed"] = rows["passed"].astype(bool)
    rng = np.random.default_rng(20261130)
    kinds_of = {p["critic"]: p["kinds"] for p in report["plugins"]}
    check_coverage(report, rows, kinds_of)
    judged_critics = {c["critic"] for c in report["critics"]}
    if set(rows["critic"]) != judged_critics:
        fail(f"critics in judgments.parquet {sorted(set(rows['critic']))} vs judge.json {sorted(judged_critics)}")
    for metrics in report["critics"]:
        before = len(failures)
        check_critic(report, metrics, rows, rng)
        status = "ok" if len(failures) == before else f"{len(failures) - before} problem(s)"
        print(
            f"{metrics['critic']}: {metrics['judgments']} judgments of {metrics['drafts']} drafts, "
            f"false-pass rate {metrics['false_pass_rate']}, kappa {metrics['kappa']}: {status}"
        )
    check_pairs(report, rows)
    check_csv(report, directory)
    if failures:
        print(f"{len(failures)} disagreement(s):")
        for message in failures:
            print(f"  - {message}")
        sys.exit(1)
    print(f"judge.json agrees with the reference computations ({len(report['pairs'])} pair(s) checked)")


if __name__ == "__main__":
    main()
