#!/usr/bin/env python3
"""Checks critbench's report statistics against reference implementations (statsmodels, scipy, numpy).

Usage: python3 tests/python/check_stats.py CRITBENCH_BINARY [--schema-from OUTCOMES_PARQUET]

For each fixture below it writes an `outcomes.parquet` with pyarrow (the schema of `outcome_schema()`
in crates/storage/src/tables.rs: same columns, types and nullability), runs `critbench report DIR`,
and compares `summary.json` with values computed here from the same rows:

- counts, pass rates, mean rounds, mean first / best / final scores, exit counts, tasks, and critic errors
  (count, rounds, rate per round, loops with an error and their rate), exactly or to 1e-9;
- per-arm intervals of the pass rate and the first-draft pass rate, by the method valid at their number
  of tasks (`interval`, `first_round_interval`), recomputed by tests/python/check_intervals.py's `rate`:
  Wilson (statsmodels) or the exact task-cluster bootstrap (numpy convolution) with more than 30 tasks and
  at least 10 on each side, else Clopper–Pearson (scipy) on the effective sample size, all to 1e-9; where
  tasks have unequal sizes the bootstrap is resampled, and is checked against a numpy task-cluster
  percentile bootstrap (tasks resampled with all their loops) within Monte-Carlo tolerance (below);
- paired comparisons on (task_id, epoch): pair counts, a_only / b_only, rates and their difference, mean
  rounds and mean best score per arm and their differences, tasks and tasks where each arm did better;
- McNemar's exact test on the pairs as if independent (`mcnemar_p`, a reference column): statsmodels
  `mcnemar(exact=True)` and scipy `binomtest`, to 1e-9;
- the paired difference's interval, its test and their names (`diff_lo`, `diff_hi`, `p_value`, `test`,
  `interval`), recomputed by check_intervals.py's `difference`: the exact bootstrap and its p-value, or
  the exact sign-flip test of the tasks' differences (McNemar's exact test, statsmodels, with one epoch)
  and the interval of the shifts it does not reject, widened to the bounded interval, to 1e-9; resampled
  bootstraps (tasks of unequal size) against a numpy task-cluster percentile bootstrap within 0.03, or a
  quarter of the bootstrap standard error when that is smaller (plus one lattice step, 1/n, for n < 100
  tasks), their p-value below 0.05 exactly when the interval excludes 0; the same for the first-draft
  difference, which is `identical by design` (no interval) when every pair's first drafts agree, the arms
  starting from the same first draft;
- in the "clustered epochs" fixture, where a task's epochs agree, the task-cluster interval must also be
  clearly wider than a bootstrap that resamples pairs as if they were independent;
- rows in another order: the same fixture written reversed gives byte-identical summary.csv,
  summary.json and comparisons.csv.

With --schema-from, the fixture schema is first checked against a real outcomes.parquet written by
critbench, so the fixtures cannot drift from what the binary writes.

Prints one line per fixture and exits 0, or prints every disagreement and exits 1 (2 for bad usage).
Requirements: tests/python/requirements.txt.
"""

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_intervals as reference  # noqa: E402  the intervals' reference implementations
import pyarrow.parquet as pq
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar

TOLERANCE = 1e-9
BOOTSTRAP_TOLERANCE = 0.03
BOOTSTRAP_RESAMPLES = 20_000  # more than critbench's 2,000, so the reference itself is steady
ARM_ORDER = ["feedback", "no-feedback", "single"]  # critbench's arm order (core::Arm)

# outcome_schema() in crates/storage/src/tables.rs, column for column.
SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("config_id", pa.string(), nullable=False),
        pa.field("arm", pa.string(), nullable=False),
        pa.field("critic", pa.string(), nullable=False),
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=True),
        pa.field("epoch", pa.int32(), nullable=False),
        pa.field("pass_score", pa.float64(), nullable=False),
        pa.field("max_revisions", pa.int32(), nullable=False),
        pa.field("stall", pa.bool_(), nullable=False),
        pa.field("plateau_eps", pa.float64(), nullable=False),
        pa.field("dim_target", pa.float64(), nullable=True),
        pa.field("final", pa.string(), nullable=False),
        pa.field("rounds", pa.int32(), nullable=False),
        pa.field("revisions", pa.int32(), nullable=False),
        pa.field("exit_reason", pa.string(), nullable=False),
        pa.field("passed", pa.bool_(), nullable=False),
        pa.field("first_score", pa.float64(), nullable=False),
        pa.field("last_score", pa.float64(), nullable=False),
        pa.field("final_score", pa.float64(), nullable=False),
        pa.field("best_score", pa.float64(), nullable=False),
        pa.field("best_round", pa.int32(), nullable=False),
        pa.field("critic_errors", pa.int32(), nullable=False),
        pa.field("critic_disagreements", pa.int32(), nullable=False),
        pa.field("tokens_in", pa.int64(), nullable=True),
        pa.field("tokens_out", pa.int64(), nullable=True),
        pa.field("wall_ms", pa.float64(), nullable=False),
        pa.field("meta", pa.string(), nullable=True),
        pa.field("adjudicated_score", pa.float64(), nullable=True),
        pa.field("adjudicated_passed", pa.bool_(), nullable=True),
        pa.field("cost", pa.float64(), nullable=True),
        pa.field("critic_tokens_in", pa.int64(), nullable=True),
        pa.field("critic_tokens_out", pa.int64(), nullable=True),
    ],
    # The footer of a table critbench writes: which table, and its schema version (readers refuse
    # a table of another version).
    metadata={"critbench.table": "outcomes", "critbench.schema_version": "10"},
)


# ---- fixtures -------------------------------------------------------------------------------------


def loop(config_id, critic, arm, task_id, epoch, passed, rounds, first, best):
    """One outcome row; fields the statistics do not read get plausible constants. A passed loop's
    last score reaches the pass score (8), as critbench checks every row it reads."""
    if passed:
        best = max(best, 8.0 + first / 10)
        exit_reason = "pass"
    else:
        # Vary the failing exits so exit counts are checked too; `single` can only run out of budget.
        exit_reason = "budget" if arm == "single" else ("stall", "plateau", "budget")[(rounds + len(task_id)) % 3]
    return {
        "run_id": "fixture",
        "config_id": config_id,
        "arm": arm,
        "critic": critic,
        "task_id": task_id,
        "kind": None,
        "epoch": epoch,
        "pass_score": 8.0,
        "max_revisions": 3,
        "stall": True,
        "plateau_eps": 0.0,
        "dim_target": None,
        "final": "best",
        "rounds": rounds,
        "revisions": rounds - 1,
        "exit_reason": exit_reason,
        "passed": passed,
        "first_score": first,
        "last_score": best if passed else best - 0.25,
        "final_score": best,
        "best_score": best,
        "best_round": rounds - 1,
        "critic_errors": 0,
        "critic_disagreements": 0,
        "tokens_in": None,
        "tokens_out": None,
        "wall_ms": 1.0,
        "meta": None,
        "adjudicated_score": None,
        "adjudicated_passed": None,
        "cost": None,
        "critic_tokens_in": None,
        "critic_tokens_out": None,
    }


def paired(config_id, critic, pattern, epochs=1, rng=None):
    """Rows for arms feedback and no-feedback from (passed_a, passed_b) pairs, one task per pair."""
    rng = rng or np.random.default_rng(0)
    rows = []
    for index, (a, b) in enumerate(pattern):
        for epoch in range(epochs):
            task = f"t{index:05d}"
            first = float(rng.integers(20, 80)) / 10
            rows.append(
                loop(config_id, critic, "feedback", task, epoch, a, 1 + int(rng.integers(0, 4)), first, first + 2.5 * a)
            )
            rows.append(
                loop(config_id, critic, "no-feedback", task, epoch, b, 1 + int(rng.integers(0, 4)), first, first + b)
            )
    return rows


def counts(both, a_only, b_only, neither):
    return [(True, True)] * both + [(True, False)] * a_only + [(False, True)] * b_only + [(False, False)] * neither


def mixed_fixture():
    """Two configs × two critics × three arms, two epochs, with tasks some arms never ran."""
    rng = np.random.default_rng(42)
    rows = []
    rates = {"feedback": 0.75, "no-feedback": 0.35, "single": 0.2}
    for config_id, critic in itertools.product(["p7-r1", "p8-r3"], ["rubric", "evidence"]):
        for arm, rate in rates.items():
            for task in range(40):
                # Unmatched tasks: single skips every fifth task, no-feedback every seventh; the
                # evidence critic's feedback arm also ran extra tasks no other arm has.
                if (arm == "single" and task % 5 == 0) or (arm == "no-feedback" and task % 7 == 3):
                    continue
                for epoch in range(2):
                    passed = bool(rng.random() < rate)
                    rounds = 1 if arm == "single" else 1 + int(rng.integers(0, 4))
                    first = float(rng.integers(20, 80)) / 10
                    best = first + (float(rng.integers(0, 30)) / 10 if arm != "single" else 0.0)
                    row = loop(config_id, critic, arm, f"task-{task}", epoch, passed, rounds, first, best)
                    # The evidence critic fails now and then, so error counts and rates are checked.
                    if critic == "evidence" and rng.random() < 0.2:
                        row["critic_errors"] = 1 + int(rng.integers(0, rounds))
                    rows.append(row)
            if critic == "evidence" and arm == "feedback":
                for task in range(5):
                    rows.append(loop(config_id, critic, arm, f"extra-{task}", 0, True, 2, 5.0, 8.5))
    return rows


def clustered_fixture():
    """Five epochs per task whose epochs mostly agree: each task either nearly always or nearly never
    passes under each arm, as with a real model at low temperature."""
    rng = np.random.default_rng(11)
    rows = []
    for task in range(60):
        chances = {
            "feedback": 0.95 if rng.random() < 0.7 else 0.05,
            "no-feedback": 0.95 if rng.random() < 0.4 else 0.05,
        }
        for epoch in range(5):
            for arm, chance in chances.items():
                passed = bool(rng.random() < chance)
                rounds = 1 + int(rng.integers(0, 4))
                first = float(rng.integers(20, 80)) / 10
                rows.append(loop("p8-r3", "rubric", arm, f"t{task:03d}", epoch, passed, rounds, first, first + passed))
    return rows


def fixtures():
    rng = np.random.default_rng(7)
    large = counts(900, 1000, 1100, 400)  # 2,100 discordant pairs, 3,400 in all
    rng.shuffle(large)
    return {
        "small n": paired("p8-r3", "rubric", counts(1, 3, 1, 2)),
        "all pass": paired("p8-r3", "rubric", counts(15, 0, 0, 0)),
        "none pass": paired("p8-r3", "rubric", counts(0, 0, 0, 12)),
        "all pass over 3 epochs": paired("p8-r3", "rubric", counts(15, 0, 0, 0), epochs=3),
        "no discordant pairs": paired("p8-r3", "rubric", counts(9, 0, 0, 11), epochs=2),
        "one-sided discordance": paired("p8-r3", "rubric", counts(20, 0, 14, 6)),
        "large discordant counts": paired("p8-r3", "rubric", large, rng=rng),
        "configs × critics × arms, unmatched tasks": mixed_fixture(),
        "clustered epochs": clustered_fixture(),
    }


# ---- reference values -----------------------------------------------------------------------------


def reference_summary(rows):
    """config × arm × critic → the summary fields, computed here."""
    groups = {}
    for row in rows:
        groups.setdefault((row["config_id"], row["arm"], row["critic"]), []).append(row)
    expected = {}
    for key, group in groups.items():
        n = len(group)
        passed = sum(r["passed"] for r in group)
        first = sum(r["passed"] and r["revisions"] == 0 for r in group)
        tasks = {}
        for r in group:
            tasks.setdefault(r["task_id"], []).append(r)
        rounds = sum(r["rounds"] for r in group)
        errors = sum(r["critic_errors"] for r in group)
        error_loops = sum(r["critic_errors"] > 0 for r in group)
        facts = {
            "n_tasks": len(tasks),
            "first_round_passed": first,
            "rounds_total": rounds,
            "critic_errors": errors,
            "critic_error_rate": errors / rounds,
            "critic_error_loops": error_loops,
            "critic_error_loop_rate": error_loops / n,
        }
        # Per task: loops, passes, first-draft passes.
        per_task = [
            (len(loops), sum(r["passed"] for r in loops), sum(r["passed"] and r["revisions"] == 0 for r in loops))
            for loops in tasks.values()
        ]
        resampled = []
        bounds = []
        for column, names in (
            (1, ("pass_rate_lo", "pass_rate_hi", "interval")),
            (2, ("first_round_pass_rate_lo", "first_round_pass_rate_hi", "first_round_interval")),
        ):
            method, interval = rate_reference([(t[0], t[column], 1) for t in per_task])
            facts[names[2]] = method
            if interval is None:
                # Tasks of unequal size: a resampled bootstrap, checked against numpy's below.
                bootstrap = numpy_cluster_bootstrap([t[0] for t in per_task], [[t[column]] for t in per_task], n + column)
                resampled.append((names[:2], bootstrap[0]))
                bounds.append((np.nan, np.nan))
            else:
                bounds.append(interval)
        (lo, hi), (first_lo, first_hi) = bounds
        facts["first_round_pass_rate_lo"], facts["first_round_pass_rate_hi"] = first_lo, first_hi
        facts["resampled"] = resampled
        expected[key] = {
            "n": n,
            "passed": passed,
            "pass_rate": passed / n,
            "pass_rate_lo": float(lo),
            "pass_rate_hi": float(hi),
            **facts,
            "mean_rounds": float(np.mean([r["rounds"] for r in group])),
            "exit_pass": sum(r["exit_reason"] == "pass" for r in group),
            "exit_stall": sum(r["exit_reason"] == "stall" for r in group),
            "exit_plateau": sum(r["exit_reason"] == "plateau" for r in group),
            "exit_budget": sum(r["exit_reason"] == "budget" for r in group),
            "mean_first_score": float(np.mean([r["first_score"] for r in group])),
            "mean_best_score": float(np.mean([r["best_score"] for r in group])),
            "mean_final_score": float(np.mean([r["final_score"] for r in group])),
        }
    return expected


def equal_sizes(tasks):
    return len({size for size, _, _ in tasks}) == 1


def rate_reference(tasks):
    """(method, (lo, hi)) of a rate over tasks (loops, passes, count); (method, None) where critbench
    resamples (a bootstrap over tasks of unequal size), which is checked against numpy instead."""
    tasks = [task for task in tasks if task[0] > 0]
    n = sum(c for _, _, c in tasks)
    with_pass = sum(c for _, p, c in tasks if p > 0)
    with_fail = sum(c for l, p, c in tasks if p < l)
    large = n > reference.SMALL and min(with_pass, with_fail) >= reference.EACH_SIDE
    if large and not all(l == 1 for l, _, _ in tasks) and not equal_sizes(tasks):
        return "task-cluster bootstrap", None
    _, interval, method = reference.rate(tasks)
    return method, interval


def difference_reference(tasks):
    """(method, (lo, hi), p, test) of a paired difference over tasks (pairs, net, count); the interval and
    p are None where critbench resamples."""
    tasks = [task for task in tasks if task[0] > 0]
    n = sum(c for _, _, c in tasks)
    untied = sum(c for _, d, c in tasks if d != 0)
    if n > reference.SMALL and untied >= reference.EACH_SIDE and not equal_sizes(tasks):
        return "task-cluster bootstrap", None, None, "task-cluster bootstrap"
    _, interval, method, p, test = reference.difference(tasks)
    return method, interval, p, test


def numpy_bootstrap(a, b, seed):
    """Percentile bootstrap of mean(a) − mean(b), resampling pairs as if independent (the old method)."""
    rng = np.random.default_rng(seed)
    differences = a.astype(float) - b.astype(float)
    picks = rng.integers(0, len(differences), size=(BOOTSTRAP_RESAMPLES, len(differences)))
    means = differences[picks].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5)), float(means.std())


def numpy_cluster_bootstrap(denominators, numerators, seed):
    """Task-cluster percentile bootstrap of Σ numerator / Σ denominator for each numerator column.

    Each row is a task; a resample draws as many tasks as there are, with replacement, and keeps each
    drawn task's loops together. Returns one (lo, hi, standard error) per numerator column.
    """
    rng = np.random.default_rng(seed)
    denominators = np.asarray(denominators, dtype=float)
    numerators = np.asarray(numerators, dtype=float).reshape(len(denominators), -1)
    picks = rng.integers(0, len(denominators), size=(BOOTSTRAP_RESAMPLES, len(denominators)))
    totals = denominators[picks].sum(axis=1)
    result = []
    for column in range(numerators.shape[1]):
        ratios = numerators[:, column][picks].sum(axis=1) / totals
        result.append((float(np.percentile(ratios, 2.5)), float(np.percentile(ratios, 97.5)), float(ratios.std())))
    return result


def reference_comparisons(rows):
    """(config, critic, arm_a, arm_b) → the comparison fields, for arm pairs sharing a task × epoch."""
    by_group = {}
    for row in rows:
        arms = by_group.setdefault((row["config_id"], row["critic"]), {})
        arms.setdefault(row["arm"], {})[(row["task_id"], row["epoch"])] = row
    expected = {}
    for (config_id, critic), arms in by_group.items():
        names = sorted(arms, key=ARM_ORDER.index)
        for arm_a, arm_b in itertools.combinations(names, 2):
            keys = sorted(set(arms[arm_a]) & set(arms[arm_b]))
            if not keys:
                continue
            left = [arms[arm_a][k] for k in keys]
            right = [arms[arm_b][k] for k in keys]
            a = np.array([r["passed"] for r in left])
            b = np.array([r["passed"] for r in right])
            first_a = np.array([r["passed"] and r["revisions"] == 0 for r in left])
            first_b = np.array([r["passed"] and r["revisions"] == 0 for r in right])
            # Per task: pairs, A's passes − B's, and the same for first drafts.
            tasks = {}
            for index, (task, _) in enumerate(keys):
                counts_of = tasks.setdefault(task, [0, 0, 0])
                counts_of[0] += 1
                counts_of[1] += int(a[index]) - int(b[index])
                counts_of[2] += int(first_a[index]) - int(first_b[index])
            per_task = np.array(list(tasks.values()))
            a_better = int(np.sum(per_task[:, 1] > 0))
            b_better = int(np.sum(per_task[:, 1] < 0))
            a_only = int(np.sum(a & ~b))
            b_only = int(np.sum(~a & b))
            table = [[int(np.sum(a & b)), a_only], [b_only, int(np.sum(~a & ~b))]]
            p_statsmodels = float(mcnemar(table, exact=True).pvalue)
            p_scipy = float(binomtest(a_only, a_only + b_only, 0.5).pvalue) if a_only + b_only else 1.0
            rounds_a = float(np.mean([r["rounds"] for r in left]))
            rounds_b = float(np.mean([r["rounds"] for r in right]))
            best_a = float(np.mean([r["best_score"] for r in left]))
            best_b = float(np.mean([r["best_score"] for r in right]))
            expected[(config_id, critic, arm_a, arm_b)] = {
                "n_pairs": len(keys),
                "pass_rate_a": float(a.mean()),
                "pass_rate_b": float(b.mean()),
                "diff": float(a.mean() - b.mean()),
                "a_only": a_only,
                "b_only": b_only,
                "mcnemar_p": p_statsmodels,
                "mcnemar_p_scipy": p_scipy,
                "mean_rounds_a": rounds_a,
                "mean_rounds_b": rounds_b,
                "diff_mean_rounds": rounds_a - rounds_b,
                "mean_best_score_a": best_a,
                "mean_best_score_b": best_b,
                "diff_mean_best_score": best_a - best_b,
                "first_round_diff": float(first_a.mean() - first_b.mean()),
                "n_tasks": len(tasks),
                "tasks_a_better": a_better,
                "tasks_b_better": b_better,
                "bootstrap": numpy_cluster_bootstrap(per_task[:, 0], per_task[:, 1:], seed=len(keys)),
                "unclustered": numpy_bootstrap(a, b, seed=len(keys) + 1),
            }
            fields = expected[(config_id, critic, arm_a, arm_b)]
            method, interval, p, test = difference_reference([(int(t[0]), int(t[1]), 1) for t in per_task])
            fields.update({"interval": method, "test": test})
            if interval is not None:
                fields.update({"diff_lo": interval[0], "diff_hi": interval[1], "p_value": p})
            if bool(np.all(first_a == first_b)):
                # The arms start from the same first draft, and every pair's first verdicts agree.
                fields.update({"first_round_interval": "identical by design", "first_round_diff_lo": None})
            else:
                method, interval, _, _ = difference_reference([(int(t[0]), int(t[2]), 1) for t in per_task])
                fields["first_round_interval"] = method
                if interval is not None:
                    fields.update({"first_round_diff_lo": interval[0], "first_round_diff_hi": interval[1]})
    return expected


# ---- comparing ------------------------------------------------------------------------------------


def agree(failures, where, field, got, want, tolerance=TOLERANCE):
    if want is None:
        if got is not None:
            failures.append(f"{where}: {field} = {got!r}, expected null")
    elif got is None:
        failures.append(f"{where}: {field} is missing or null (expected {want!r})")
    elif isinstance(want, str):
        if got != want:
            failures.append(f"{where}: {field} = {got!r}, expected {want!r}")
    elif isinstance(want, (int, np.integer)) and not isinstance(want, bool):
        if got != want:
            failures.append(f"{where}: {field} = {got!r}, expected {want!r}")
    elif not abs(float(got) - float(want)) <= tolerance:
        failures.append(f"{where}: {field} = {got!r}, reference {want!r} (off by {abs(float(got) - float(want)):.3g})")


def bootstrap_tolerance(spread, clusters):
    """Two seeded bootstraps differ by Monte Carlo noise of a few hundredths of the spread of the
    resampled statistic (2,000 resamples); a quarter of the spread still catches a wrong percentile
    (5% instead of 2.5% moves a bound by a third of it) once n is large. Few clusters: one lattice step."""
    return min(BOOTSTRAP_TOLERANCE, 0.25 * spread) + (1 / clusters if clusters < 100 else 0.0)


def check_interval(failures, where, names, row, reference, clusters):
    """`row[names]` (lo, hi) against a numpy bootstrap's (lo, hi, spread); returns the largest gap."""
    reference_lo, reference_hi, spread = reference
    tolerance = bootstrap_tolerance(spread, clusters)
    widest = 0.0
    for bound, want in zip(names, (reference_lo, reference_hi)):
        value = row.get(bound)
        agree(failures, where, f"{bound} (numpy task-cluster bootstrap)", value, want, tolerance)
        if value is not None:
            widest = max(widest, abs(value - want))
    return widest


def run_report(binary, run, rows):
    run.mkdir(parents=True)
    # zstd, as critbench writes: pyarrow's default (snappy) is not compiled into critbench's reader.
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), run / "outcomes.parquet", compression="zstd")
    return subprocess.run([str(binary), "report", str(run)], capture_output=True, text=True)


def check_fixture(binary, name, rows, work):
    """Writes the fixture, runs `critbench report`, returns (failures, facts)."""
    run = work / name.replace(" ", "-").replace("×", "x").replace(",", "")
    result = run_report(binary, run, rows)
    if result.returncode != 0:
        return [f"{name}: `critbench report` exited {result.returncode}:\n{result.stderr}"], {}
    report = json.loads((run / "summary.json").read_text())
    failures = []
    widest = 0.0

    expected = reference_summary(rows)
    got = {(r["config_id"], r["arm"], r["critic"]): r for r in report["summary"]}
    if set(got) != set(expected):
        failures.append(f"{name}: summary groups {sorted(got)} differ from {sorted(expected)}")
    for key in sorted(set(got) & set(expected)):
        where = f"{name}: summary {'/'.join(key)}"
        want = expected[key]
        for field, value in want.items():
            if field == "resampled" or (isinstance(value, float) and np.isnan(value)):
                continue
            agree(failures, where, field, got[key].get(field), value)
        for names, bootstrap in want["resampled"]:
            widest = max(widest, check_interval(failures, where, names, got[key], bootstrap, want["n_tasks"]))

    expected = reference_comparisons(rows)
    got = {(r["config_id"], r["critic"], r["arm_a"], r["arm_b"]): r for r in report["comparisons"]}
    if set(got) != set(expected):
        failures.append(f"{name}: comparisons {sorted(got)} differ from {sorted(expected)}")
    width_ratios = []
    for key in sorted(set(got) & set(expected)):
        row, want = got[key], expected[key]
        where = f"{name}: comparison {key[0]}/{key[1]} {key[2]} vs {key[3]}"
        for field, value in want.items():
            if field in ("bootstrap", "unclustered"):
                continue
            # scipy's two-sided binomial test and statsmodels' exact McNemar must both agree.
            agree(failures, where, field, row.get("mcnemar_p" if field == "mcnemar_p_scipy" else field), value)
        lo, hi = row.get("diff_lo"), row.get("diff_hi")
        if lo is None or hi is None:
            failures.append(f"{where}: diff_lo / diff_hi missing")
            continue
        if not lo - TOLERANCE <= row["diff"] <= hi + TOLERANCE:
            failures.append(f"{where}: interval [{lo}, {hi}] does not bracket diff {row['diff']}")
        if (lo > 0 or hi < 0) != (row["p_value"] < 0.05):
            failures.append(f"{where}: interval [{lo}, {hi}] and p = {row['p_value']} disagree about 0")
        diff_reference, first_reference = want["bootstrap"]
        if "diff_lo" not in want:
            widest = max(widest, check_interval(failures, where, ("diff_lo", "diff_hi"), row, diff_reference, want["n_tasks"]))
        if want["first_round_interval"] == "task-cluster bootstrap" and "first_round_diff_lo" not in want:
            widest = max(
                widest,
                check_interval(
                    failures, where, ("first_round_diff_lo", "first_round_diff_hi"), row, first_reference, want["n_tasks"]
                ),
            )
        unclustered = want["unclustered"][1] - want["unclustered"][0]
        if unclustered > 0:
            width_ratios.append((hi - lo) / unclustered)
    if name == "clustered epochs" and not (width_ratios and min(width_ratios) > 1.3):
        failures.append(
            f"{name}: the task-cluster interval should be clearly wider than one resampling independent pairs "
            f"when a task's epochs agree; width ratios {width_ratios}"
        )
    if not (run / "report.html").is_file():
        failures.append(f"{name}: `critbench report` wrote no report.html")

    # The same rows in reverse order: the same bytes.
    reversed_run = run.with_name(run.name + "-reversed")
    result = run_report(binary, reversed_run, rows[::-1])
    if result.returncode != 0:
        failures.append(f"{name}: `critbench report` on reversed rows exited {result.returncode}:\n{result.stderr}")
    else:
        for file in ("summary.csv", "summary.json", "comparisons.csv"):
            if (run / file).read_bytes() != (reversed_run / file).read_bytes():
                failures.append(f"{name}: {file} differs when the rows are written in reverse order")

    facts = {"rows": len(rows), "summary": len(report["summary"]), "comparisons": len(report["comparisons"])}
    facts["bootstrap"] = widest
    facts["ratio"] = float(np.median(width_ratios)) if width_ratios else None
    return failures, facts


def check_schema(template):
    """The fixtures' schema must be the one critbench writes (names, types, nullability, order)."""
    real = pq.read_schema(template)
    ours = [(f.name, str(f.type), f.nullable) for f in SCHEMA]
    theirs = [(f.name, str(f.type), f.nullable) for f in real]
    footer = {k: v for k, v in pq.ParquetFile(template).metadata.metadata.items() if k.startswith(b"critbench.")}
    if footer != SCHEMA.metadata:
        return [f"check_stats.py's SCHEMA.metadata {SCHEMA.metadata} differs from {template}'s footer {footer}"]
    if ours == theirs:
        return []
    diff = [f"  {o} != {t}" for o, t in itertools.zip_longest(ours, theirs) if o != t]
    return [
        f"check_stats.py's SCHEMA differs from {template} (update it to match outcome_schema()):\n" + "\n".join(diff)
    ]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", type=Path, help="the critbench binary")
    parser.add_argument("--schema-from", type=Path, help="an outcomes.parquet written by critbench")
    args = parser.parse_args(argv[1:])
    if not args.binary.is_file():
        print(f"check_stats: {args.binary} is not a file", file=sys.stderr)
        return 2

    failures = check_schema(args.schema_from) if args.schema_from else []
    with tempfile.TemporaryDirectory(prefix="check_stats_") as work:
        for name, rows in fixtures().items():
            fixture_failures, facts = check_fixture(args.binary, name, rows, Path(work))
            failures += fixture_failures
            if facts:
                ratio = f"; median width / pair bootstrap {facts['ratio']:.2f}" if facts["ratio"] else ""
                print(
                    f"check_stats: {name}: {facts['rows']} outcomes, {facts['summary']} summary rows, "
                    f"{facts['comparisons']} comparisons; resampled bounds within {facts['bootstrap']:.4f} of numpy"
                    f"{ratio}; same bytes in reverse order"
                )
    if failures:
        print(f"FAILED: {len(failures)} disagreement(s):", file=sys.stderr)
        for failure in failures:
            print(f"  - {failure}", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
