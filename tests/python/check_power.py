#!/usr/bin/env python3
"""Checks power.csv (how many tasks a paired comparison needs) against a numpy recomputation.

Usage: python3 tests/python/check_power.py CRITBENCH_BINARY RUN_DIR [RUN_DIR ...]

For each run directory (a finished `critbench run`), every row of power.csv is recomputed from
outcomes.parquet alone:

- the paired differences d = A passed - B passed on each (task, epoch) both arms ran (an arm
  `ARM+adjudicate` is ARM's loops answered with `adjudicated_passed`);
- per task: its pairs k, mean and unbiased variance over its epochs;
- the split (a one-way random-effects analysis): the epoch part is the within-task variance pooled
  over the tasks' k - 1 degrees of freedom; the task part is the sample variance of the tasks' means
  (n - 1) less epoch / K, floored at 0, with K the harmonic mean of k (scipy.stats.hmean);
- the standard error sqrt((task + epoch / K) / n) (the tasks' means' variance over n with one epoch);
- the MDE m x SE with m = z_0.975 + z_0.8 (scipy.stats.norm), never below the floor a difference's own
  noise sets, m^2 / (n k + m^2) on n tasks x k epochs, and with twice the tasks and twice the epochs (each
  with its own floor) and unlimited epochs (the task part alone, no floor: empty when it is 0); the
  tasks needed for 5 and 10 points, max(2, ceil(m^2 max(task + epoch / K, delta (1 - delta) / K) /
  delta^2)); the epochs' share of the variance and the advice (`more epochs` from a share of 1/2).

Floats must agree to 1e-9, counts exactly; power.csv must have a row for every comparison of
comparisons.csv with two tasks or more, and no other.

Then a variant of each run with tasks of unequal epochs: its outcomes without epoch 0 of every third
task (so those tasks pair fewer epochs), reported with `critbench report`, and checked the same way.

Prints one line per run checked and exits 0, or prints every disagreement and exits 1 (2 for bad usage).
Requirements: tests/python/requirements.txt.
"""

import hashlib
import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from scipy.stats import hmean, norm

TOLERANCE = 1e-9
CONFIDENCE = 0.95
POWER = 0.8
STATED = {"tasks_for_5pp": 0.05, "tasks_for_10pp": 0.10}
SUFFIX = "+adjudicate"


def loops_of(outcomes, arm):
    """(task_id, epoch) -> passed of one arm of a config x critic's outcomes."""
    base = arm[: -len(SUFFIX)] if arm.endswith(SUFFIX) else arm
    rows = outcomes[outcomes["arm"] == base]
    passed = rows["adjudicated_passed"] if arm.endswith(SUFFIX) else rows["passed"]
    return pd.Series(passed.astype(int).to_numpy(), index=pd.MultiIndex.from_frame(rows[["task_id", "epoch"]]))


def expected_row(outcomes, arm_a, arm_b):
    a, b = loops_of(outcomes, arm_a), loops_of(outcomes, arm_b)
    pairs = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner")
    d = (pairs["a"] - pairs["b"]).astype(float)
    by_task = d.groupby(level="task_id")
    k = by_task.size().to_numpy()
    means = by_task.mean().to_numpy()
    n = len(means)
    if n < 2:
        return None
    z = norm.ppf(1 - (1 - CONFIDENCE) / 2) + norm.ppf(POWER)
    task_means = means.var(ddof=1)
    K = float(hmean(k))
    freedom = int((k - 1).sum())
    row = {"n_tasks": n, "epochs": K, "diff": means.mean()}
    def floor(tasks, epochs):
        return z * z / (tasks * epochs + z * z)

    if freedom > 0:
        within = by_task.var(ddof=1).fillna(0.0).to_numpy()
        epoch = float(((k - 1) * within).sum() / freedom)
        task = max(0.0, task_means - epoch / K)
        variance = task + epoch / K
        unlimited = z * math.sqrt(task / n)
        row.update(
            task_variance=task,
            epoch_variance=epoch,
            epoch_share=(epoch / K) / variance if variance > 0 else None,
            mde_twice_epochs=max(z * math.sqrt((task + epoch / (2 * K)) / n), floor(n, 2 * K)),
            mde_unlimited_epochs=unlimited if unlimited > 0 else None,
        )
    else:
        variance = task_means
        row.update(task_variance=None, epoch_variance=None, epoch_share=None, mde_twice_epochs=None,
                   mde_unlimited_epochs=None)
    row.update(
        se=math.sqrt(variance / n),
        confidence=CONFIDENCE,
        power=POWER,
        mde=max(z * math.sqrt(variance / n), floor(n, K)),
        mde_twice_tasks=max(z * math.sqrt(variance / (2 * n)), floor(2 * n, K)),
    )
    for column, delta in STATED.items():
        row[column] = max(2, math.ceil(z * z * max(variance, delta * (1 - delta) / K) / delta**2))
    if variance <= 0:
        row["advice"] = "no variation"
    elif row["epoch_share"] is None:
        row["advice"] = "more tasks; 2+ epochs would split the variance"
    else:
        row["advice"] = "more epochs" if row["epoch_share"] >= 0.5 else "more tasks"
    return row


def same(want, have):
    if want is None or (isinstance(want, float) and math.isnan(want)):
        return have is None or (isinstance(have, float) and math.isnan(have))
    if isinstance(want, str):
        return want == have
    if have is None or (isinstance(have, float) and math.isnan(have)):
        return False
    if isinstance(want, (int, np.integer)) and not isinstance(want, bool):
        return int(have) == int(want)
    return abs(float(have) - float(want)) <= TOLERANCE


def check_run(run_dir):
    """Every disagreement between power.csv and the recomputation, and how many rows were checked."""
    outcomes = pq.read_table(run_dir / "outcomes.parquet").to_pandas()
    power = pd.read_csv(run_dir / "power.csv", keep_default_na=False, na_values=[""])
    comparisons = pd.read_csv(run_dir / "comparisons.csv", keep_default_na=False)
    # The steering critic's rows are the ones outcomes.parquet's `passed` gives; a held-out judge's
    # rows come from the same computation over its verdicts (tests/python/check_judges.py).
    power = power[power["judge"] == "critic"]
    comparisons = comparisons[comparisons["judge"] == "critic"]
    problems = []
    keys = ["config_id", "critic", "arm_a", "arm_b"]
    listed = set(map(tuple, power[keys].to_numpy()))
    for _, comparison in comparisons.iterrows():
        key = tuple(comparison[keys])
        group = outcomes[(outcomes["config_id"] == key[0]) & (outcomes["critic"] == key[1])]
        want = expected_row(group, key[2], key[3])
        if want is None:
            if key in listed:
                problems.append(f"{key}: a row for a comparison with fewer than two tasks")
            continue
        rows = power[(power[keys] == pd.Series(key, index=keys)).all(axis=1)]
        if len(rows) != 1:
            problems.append(f"{key}: {len(rows)} rows in power.csv, expected 1")
            continue
        have = rows.iloc[0]
        for column, value in want.items():
            got = have[column]
            got = None if isinstance(got, float) and math.isnan(got) else got
            if not same(value, got):
                problems.append(f"{key} {column}: power.csv {got!r}, numpy {value!r}")
    extra = listed - set(map(tuple, comparisons[keys].to_numpy()))
    problems.extend(f"{key}: in power.csv but not a comparison" for key in sorted(extra))
    return problems, len(power)


def unequal_epochs(binary, run_dir, work):
    """A copy of the run without epoch 0 of every third task, reported again."""
    copy = work / f"{run_dir.name}-unequal"
    copy.mkdir()
    table = pq.read_table(run_dir / "outcomes.parquet")
    frame = table.to_pandas()
    tasks = sorted(frame["task_id"].unique())
    dropped = set(tasks[::3])
    keep = ~(frame["task_id"].isin(dropped) & (frame["epoch"] == 0))
    kept = table.filter(keep.to_numpy())
    # The copy's footer says which table it is and its schema version, as the run's does (readers
    # refuse a table of another version).
    footer = pq.ParquetFile(run_dir / "outcomes.parquet").metadata.metadata
    kept = kept.replace_schema_metadata({k: v for k, v in footer.items() if k.startswith(b"critbench.")})
    pq.write_table(kept, copy / "outcomes.parquet")
    # The copy is a run of its own: its manifest records the table it holds, as a run's does
    # (readers refuse a table that is not the one its manifest records).
    manifest = json.loads((run_dir / "manifest.json").read_text())
    written = (copy / "outcomes.parquet").read_bytes()
    manifest["tables"] = {
        "outcomes.parquet": {"bytes": len(written), "rows": kept.num_rows, "sha256": hashlib.sha256(written).hexdigest()}
    }
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2))
    subprocess.run([binary, "report", str(copy)], check=True, capture_output=True)
    return copy


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    binary, runs = sys.argv[1], [Path(p) for p in sys.argv[2:]]
    failed = False
    with tempfile.TemporaryDirectory() as work:
        for run_dir in runs:
            for label, directory in (("", run_dir), (" with unequal epochs", unequal_epochs(binary, run_dir, Path(work)))):
                problems, rows = check_run(directory)
                name = f"{run_dir.name}{label}"
                if problems:
                    failed = True
                    print(f"{name}: {len(problems)} disagreement(s)")
                    for problem in problems[:40]:
                        print(f"  {problem}")
                elif rows == 0:
                    failed = True
                    print(f"{name}: power.csv has no rows to check")
                else:
                    print(f"{name}: {rows} rows of power.csv agree with numpy")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
