#!/usr/bin/env python3
"""Checks `critbench sample` and `critbench report --labels` against ppi-python (ppi_py.ppi_mean_ci).

Usage: python3 tests/python/check_ppi.py CRITBENCH_BINARY DATASET_JSONL RUN_DIR [RUN_DIR ...]

Each RUN_DIR is a finished run of the RAG tasks in DATASET_JSONL with stored drafts. For each, this
script draws a sample of a third of the run's tasks (`critbench sample --seed 11`), labels every
answer by a rule it knows (gold passes an answer that cites at least one of its task's
`labels.relevant` evidence ids), runs `critbench report RUN --labels FILE`, and checks:

- the sample: its loops are exactly every loop of the sampled tasks in outcomes.parquet; each line's
  answer is the draft of its loops' final round in trajectories.parquet (`best_round`, or the last
  round with `final = "last"`); one line per distinct (task, answer); the header's counts;
- corrected.csv, per config × critic × arm: n, tasks, labelled loops and tasks, the critic's pass
  rate (also against summary.csv), the gold pass rate on the labelled loops; with more than 30
  labelled tasks and at least 10 with a loop gold passes and 10 with one it fails, the corrected pass
  rate and its interval equal `ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=0.05)` (and the point
  estimate `ppi_mean_pointestimate`), clipped to [0, 1], to 1e-9, where a unit is a task (its loops'
  mean: with one epoch, the loop itself) and the unlabelled units are the tasks not sampled, and
  `lambda` gives the same estimate when passed to ppi_py as `lam`; with fewer, the labelled tasks' own
  gold rate with check_intervals.py's small-sample interval (Clopper–Pearson, scipy), `lambda` empty;
  `method` names which; the false-pass and false-fail counts, and with one epoch their rates'
  intervals: statsmodels' Wilson interval with more than 30 tasks and 10 on each side, else
  Clopper–Pearson's (statsmodels `method="beta"`), to 1e-9, named in `false_pass_interval` and
  `false_fail_interval`;
- corrected_comparisons.csv, per compared pair of arms: pair counts, the critic's and the gold
  differences, and the corrected difference and its interval: with more than 30 labelled tasks and
  at least 10 whose gold differences are not 0, ppi_mean_ci on per-task mean differences over the
  epochs both arms ran, clipped to [-1, 1]; else the labelled tasks' own gold difference with
  check_intervals.py's small-sample interval; to 1e-9.

Prints one line per run and exits 0, or prints every disagreement and exits 1 (2 for bad usage).
Requirements: tests/python/requirements.txt (ppi-python among them).
"""

import csv
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from statsmodels.stats.proportion import proportion_confint

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_intervals as reference  # noqa: E402  the small-sample intervals' reference

TOLERANCE = 1e-9
ALPHA = 0.05
SEED = 11
failures = []


def fail(message):
    failures.append(message)
    print(f"FAIL {message}")


def expect(where, name, got, want):
    if want is None or (isinstance(want, float) and np.isnan(want)):
        if got is not None:
            fail(f"{where}: {name} = {got}, expected empty")
        return
    if got is None:
        fail(f"{where}: {name} is empty, expected {want}")
    elif abs(float(got) - float(want)) > TOLERANCE:
        fail(f"{where}: {name} = {got}, expected {want}")


def number(cell):
    return None if cell == "" else float(cell)


def read_csv(path):
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def cited_ids(answer):
    """The evidence ids an answer cites: `evidence_ids` of a JSON answer, else `[dN]` markers."""
    try:
        parsed = json.loads(answer)
        if isinstance(parsed, dict) and isinstance(parsed.get("evidence_ids"), list):
            return set(parsed["evidence_ids"])
    except json.JSONDecodeError:
        pass
    return set(re.findall(r"\[(d\d+)\]", answer))


def label(sample_path, labelled_path, relevant):
    lines = sample_path.read_text().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        answer = json.loads(line)
        answer["gold"] = bool(cited_ids(answer["answer"]) & relevant[answer["task_id"]])
        out.append(json.dumps(answer))
    labelled_path.write_text("\n".join(out) + "\n")


def run(binary, *args):
    result = subprocess.run([binary, *args], capture_output=True, text=True)
    if result.returncode != 0:
        print(f"critbench {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
        sys.exit(1)
    return result.stdout


def check_sample(where, sample_path, outcomes, trajectories):
    lines = sample_path.read_text().splitlines()
    header = json.loads(lines[0])
    answers = [json.loads(line) for line in lines[1:]]
    tasks = {a["task_id"] for a in answers}
    expect(where, "header tasks", header["tasks"], len(tasks))
    expect(where, "header answers", header["answers"], len(answers))
    listed = [(a["task_id"], l["config_id"], l["arm"], l["critic"], l["epoch"]) for a in answers for l in a["loops"]]
    expect(where, "header loops", header["loops"], len(listed))
    sampled = outcomes[outcomes.task_id.isin(tasks)]
    want = sorted(zip(sampled.task_id, sampled.config_id, sampled.arm, sampled.critic, sampled.epoch))
    if sorted(listed) != want:
        fail(f"{where}: the sample's loops are not every loop of its {len(tasks)} tasks")
    keys = ["task_id", "config_id", "arm", "critic", "epoch"]
    final_round = np.where(sampled["final"] == "best", sampled.best_round, sampled.rounds - 1)
    finals = sampled.assign(round=final_round)[keys + ["round"]]
    drafts = trajectories[trajectories.decision != "adjudicate"].merge(finals, on=keys + ["round"])
    draft_of = {tuple(values[:-1]): values[-1] for values in zip(*(drafts[k] for k in keys), drafts.draft)}
    seen = set()
    for a in answers:
        if (a["task_id"], a["answer"]) in seen:
            fail(f"{where}: answer {a['answer_id']} of task {a['task_id']} is on two lines")
        seen.add((a["task_id"], a["answer"]))
        for l in a["loops"]:
            key = (a["task_id"], l["config_id"], l["arm"], l["critic"], l["epoch"])
            if draft_of.get(key) != a["answer"]:
                fail(f"{where}: the loop {key} returned another draft than line {a['answer_id']}'s answer")
    return answers


def ppi(gold, predicted, unlabelled, low, high):
    """ppi_py's estimate and interval, clipped as critbench clips them, and whether the interval has
    width (a standard error above 0)."""
    y, f, fu = (np.asarray(v, dtype=float) for v in (gold, predicted, unlabelled))
    lo, hi = ppi_mean_ci(y, f, fu, alpha=ALPHA)
    estimate = ppi_mean_pointestimate(y, f, fu)
    wide = float(np.ravel(hi)[0]) > float(np.ravel(lo)[0])
    return [float(np.clip(np.ravel(v)[0], low, high)) for v in (estimate, lo, hi)] + [wide]


LABELS_ALONE = {
    "clopper-pearson": "labels alone, clopper-pearson",
    "clopper-pearson, effective sample size": "labels alone, clopper-pearson, effective sample size",
    "exact sign-flip test inverted": "labels alone, exact sign-flip test inverted",
}
PPI = "prediction-powered (PPI++)"


def error_interval(tasks):
    """A false-pass or false-fail rate's interval over labelled tasks (count, of), one answer per task:
    Wilson with more than 30 tasks and 10 on each side, else Clopper–Pearson; and its method's name."""
    tasks = [(c, o) for c, o in tasks if o > 0]
    count, of = sum(c for c, _ in tasks), sum(o for _, o in tasks)
    with_, without = sum(c > 0 for c, _ in tasks), sum(c < o for c, o in tasks)
    if len(tasks) > reference.SMALL and min(with_, without) >= reference.EACH_SIDE:
        lo, hi = proportion_confint(count, of, alpha=ALPHA, method="wilson")
        return (max(lo, 0.0), min(hi, 1.0)), "wilson, effective sample size"
    lo, hi = proportion_confint(count, of, alpha=ALPHA, method="beta")
    return (float(lo), float(hi)), "clopper-pearson"


def check_corrected(where, directory, outcomes, gold_of, tasks, epochs):
    rows = read_csv(directory / "corrected.csv")
    summary = {(r["config_id"], r["critic"], r["arm"]): r for r in read_csv(directory / "summary.csv") if r["judge"] == "critic"}
    if not rows:
        fail(f"{where}: corrected.csv has no rows")
    for row in rows:
        group = (row["config_id"], row["critic"], row["arm"])
        at = f"{where} {'/'.join(group)}"
        loops = outcomes[
            (outcomes.config_id == group[0]) & (outcomes.critic == group[1]) & (outcomes.arm == group[2])
        ].copy()
        loops["gold"] = [gold_of.get(k) for k in zip(loops.task_id, loops.config_id, loops.arm, loops.critic, loops.epoch)]
        labelled = loops[loops.task_id.isin(tasks)]
        expect(at, "n", number(row["n"]), len(loops))
        expect(at, "n_tasks", number(row["n_tasks"]), loops.task_id.nunique())
        expect(at, "n_labelled", number(row["n_labelled"]), len(labelled))
        expect(at, "n_tasks_labelled", number(row["n_tasks_labelled"]), labelled.task_id.nunique())
        expect(at, "pass_rate", number(row["pass_rate"]), loops.passed.mean())
        expect(at, "pass_rate (summary.csv)", number(row["pass_rate"]), float(summary[group]["pass_rate"]))
        expect(at, "pass_rate_labelled", number(row["pass_rate_labelled"]), labelled.passed.mean())
        expect(at, "gold_pass_rate", number(row["gold_pass_rate"]), labelled.gold.astype(float).mean())
        # A task is one unit: its loops' mean (with one epoch, the loop itself).
        per_task = loops.assign(gold=loops.gold.astype(float)).groupby("task_id")[["passed", "gold"]].mean()
        unit_labelled = per_task[per_task.index.isin(tasks)].sort_index()
        unit_rest = per_task[~per_task.index.isin(tasks)]
        # Per labelled task: loops, and those gold passes.
        gold_tasks = labelled.groupby("task_id").gold.agg(["size", "sum"])
        counts = [(int(size), int(passed), 1) for size, passed in zip(gold_tasks["size"], gold_tasks["sum"])]
        passing = sum(p > 0 for _, p, _ in counts)
        failing = sum(p < l for l, p, _ in counts)
        estimate, lo, hi, wide = ppi(unit_labelled.gold, unit_labelled.passed, unit_rest.passed, 0.0, 1.0)
        if len(counts) > reference.SMALL and min(passing, failing) >= reference.EACH_SIDE and wide:
            method = PPI
            tuned = ppi_mean_pointestimate(
                unit_labelled.gold.to_numpy(float),
                unit_labelled.passed.to_numpy(float),
                unit_rest.passed.to_numpy(float),
                lam=number(row["lambda"]),
            )
            expect(at, "estimate at critbench's lambda", number(row["pass_rate_corrected"]), float(np.clip(np.ravel(tuned)[0], 0, 1)))
        else:
            estimate, (lo, hi), alone = reference.rate(counts)
            method = LABELS_ALONE[alone]
            expect(at, "lambda", number(row["lambda"]), None)
        if row["method"] != method:
            fail(f"{at}: method {row['method']!r}, expected {method!r}")
        expect(at, "pass_rate_corrected", number(row["pass_rate_corrected"]), estimate)
        expect(at, "corrected_lo", number(row["corrected_lo"]), lo)
        expect(at, "corrected_hi", number(row["corrected_hi"]), hi)
        gold_fail = labelled[~labelled.gold.astype(bool)]
        gold_pass = labelled[labelled.gold.astype(bool)]
        for name, of, count in [
            ("false_pass", gold_fail, int(gold_fail.passed.sum())),
            ("false_fail", gold_pass, int((~gold_pass.passed).sum())),
        ]:
            expect(at, name, number(row[name]), count)
            if len(of) == 0:
                expect(at, f"{name}_rate", number(row[f"{name}_rate"]), None)
                continue
            expect(at, f"{name}_rate", number(row[f"{name}_rate"]), count / len(of))
            if epochs == 1:
                wrong = of.passed if name == "false_pass" else ~of.passed
                (lo, hi), method = error_interval([(int(w), 1) for w in wrong])
                expect(at, f"{name}_rate_lo", number(row[f"{name}_rate_lo"]), lo)
                expect(at, f"{name}_rate_hi", number(row[f"{name}_rate_hi"]), hi)
                if row[f"{name}_interval"] != method:
                    fail(f"{at}: {name}_interval {row[name + '_interval']!r}, expected {method!r}")
    return len(rows)


def check_comparisons(where, directory, outcomes, gold_of, tasks):
    rows = read_csv(directory / "corrected_comparisons.csv")
    if not rows:
        fail(f"{where}: corrected_comparisons.csv has no rows")
    outcomes = outcomes.copy()
    outcomes["gold"] = [
        gold_of.get(k) for k in zip(outcomes.task_id, outcomes.config_id, outcomes.arm, outcomes.critic, outcomes.epoch)
    ]
    for row in rows:
        at = f"{where} {row['config_id']}/{row['critic']} {row['arm_a']} − {row['arm_b']}"
        group = outcomes[(outcomes.config_id == row["config_id"]) & (outcomes.critic == row["critic"])]
        a = group[group.arm == row["arm_a"]][["task_id", "epoch", "passed", "gold"]]
        b = group[group.arm == row["arm_b"]][["task_id", "epoch", "passed", "gold"]]
        pairs = a.merge(b, on=["task_id", "epoch"], suffixes=("_a", "_b"))
        pairs["d_passed"] = pairs.passed_a.astype(float) - pairs.passed_b.astype(float)
        labelled = pairs[pairs.task_id.isin(tasks)].copy()
        labelled["d_gold"] = labelled.gold_a.astype(float) - labelled.gold_b.astype(float)
        expect(at, "n_pairs", number(row["n_pairs"]), len(pairs))
        expect(at, "n_pairs_labelled", number(row["n_pairs_labelled"]), len(labelled))
        expect(at, "diff", number(row["diff"]), pairs.d_passed.mean())
        expect(at, "diff_labelled", number(row["diff_labelled"]), labelled.d_passed.mean())
        expect(at, "gold_diff", number(row["gold_diff"]), labelled.d_gold.mean())
        per_task = pairs.groupby("task_id").d_passed.mean()
        gold_task = labelled.groupby("task_id").d_gold.mean().sort_index()
        predicted_task = per_task[per_task.index.isin(tasks)].sort_index()
        estimate, lo, hi, wide = ppi(gold_task, predicted_task, per_task[~per_task.index.isin(tasks)], -1.0, 1.0)
        # Per labelled task: pairs, and gold's A − B over them.
        net = labelled.groupby("task_id").d_gold.agg(["size", "sum"])
        counts = [(int(size), int(round(d)), 1) for size, d in zip(net["size"], net["sum"])]
        untied = sum(d != 0 for _, d, _ in counts)
        if len(counts) > reference.SMALL and untied >= reference.EACH_SIDE and wide:
            method = PPI
        else:
            estimate, (lo, hi), alone, _, _ = reference.difference(counts)
            method = LABELS_ALONE[alone]
            expect(at, "lambda", number(row["lambda"]), None)
        if row["method"] != method:
            fail(f"{at}: method {row['method']!r}, expected {method!r}")
        expect(at, "diff_corrected", number(row["diff_corrected"]), estimate)
        expect(at, "diff_lo", number(row["diff_lo"]), lo)
        expect(at, "diff_hi", number(row["diff_hi"]), hi)
    return len(rows)


def check_run(binary, relevant, directory, scratch):
    where = directory.name
    failed_before = len(failures)
    outcomes = pq.read_table(directory / "outcomes.parquet").to_pandas()
    trajectories = pq.read_table(
        directory / "trajectories.parquet",
        columns=["task_id", "config_id", "arm", "critic", "epoch", "round", "decision", "draft"],
    ).to_pandas()
    epochs = int(outcomes.epoch.max()) + 1
    tasks_in_run = outcomes.task_id.nunique()
    sample_path, labelled_path = scratch / f"{where}-sample.jsonl", scratch / f"{where}-labels.jsonl"
    run(binary, "sample", str(directory), "--tasks", str(tasks_in_run // 3), "--seed", str(SEED), "--out", str(sample_path))
    answers = check_sample(where, sample_path, outcomes, trajectories)
    label(sample_path, labelled_path, relevant)
    run(binary, "report", str(directory), "--labels", str(labelled_path))
    gold_of = {}
    for line in labelled_path.read_text().splitlines()[1:]:
        answer = json.loads(line)
        for l in answer["loops"]:
            gold_of[(answer["task_id"], l["config_id"], l["arm"], l["critic"], l["epoch"])] = answer["gold"]
    tasks = {a["task_id"] for a in answers}
    rows = check_corrected(where, directory, outcomes, gold_of, tasks, epochs)
    comparisons = check_comparisons(where, directory, outcomes, gold_of, tasks)
    verdict = "agree with" if len(failures) == failed_before else "DISAGREE with"
    print(
        f"{where}: {epochs} epoch(s), {len(tasks)} of {tasks_in_run} tasks labelled ({len(answers)} answers for "
        f"{len(gold_of)} loops): {rows} corrected rows and {comparisons} corrected comparisons {verdict} ppi_mean_ci"
    )


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        sys.exit(2)
    binary, dataset = sys.argv[1], Path(sys.argv[2])
    relevant = {}
    for line in dataset.read_text().splitlines():
        task = json.loads(line)
        relevant[task["id"]] = set(task.get("labels", {}).get("relevant", []))
    with tempfile.TemporaryDirectory() as scratch:
        for directory in sys.argv[3:]:
            check_run(binary, relevant, Path(directory), Path(scratch))
    if failures:
        print(f"{len(failures)} disagreement(s)")
        sys.exit(1)


if __name__ == "__main__":
    main()
