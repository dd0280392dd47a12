#!/usr/bin/env python3
"""critbench against its peers on real-sized task sets, in one run.

Run it through `bash scripts/bench/run.sh` (or `just bench`), which builds the release binaries,
makes the bench's own Python venv from scripts/bench/requirements.txt and calls this file with it.
By hand:

    python bench.py --critbench target/release/critbench \
        --server target/release/critbench-bench-server --md docs/benchmarks.md --json docs/benchmarks.json

It generates the task sets (scripts/bench/make_tasks.py) in a temporary directory, checks that
critbench, the plain Python loop and the LangGraph StateGraph (scripts/bench/peers.py) give every
task the same rounds, exit and scores, fails loudly if not, then times whole processes (start to
exit, summaries included) with /usr/bin/time: wall, user+sys CPU and peak RSS. Every figure is the
median of --runs runs unless the table says otherwise; every "met" is computed from the targets
below. The temporary directory (the 1M-task file is about 1 GB) is deleted at the end.
"""

import argparse
import importlib.metadata
import json
import os
import platform
from pathlib import Path
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
EXPERIMENTS = os.path.join(ROOT, "experiments")

# The targets: key, what (formatted with the bench's settings), unit, comparison, threshold.
TARGETS = [
    ("critiques_per_s_jobs1", "{tasks:,} distinct tasks, `--jobs 1`, whole process", "critiques/s", ">=", 300_000),
    ("vs_langgraph", "critbench `--jobs 1` vs LangGraph (rounds/s, whole process)", "×", ">=", 300),
    ("vs_plain_python", "critbench `--jobs 1` vs the plain Python loop (rounds/s, whole process)", "×", ">=", 4),
    ("jobs2_vs_jobs1", "`--jobs 2` vs `--jobs 1` (critiques/s, whole process)", "×", ">=", 1.7),
    ("rss_large_mb", "peak RSS at {rss_large:,} tasks", "MB", "<", 300),
    ("rss_large_vs_small", "peak RSS at {rss_large:,} tasks vs at {rss_small:,}", "×", "<=", 1.5),
    ("server_fraction_of_ideal",
     "model server, {concurrency} in flight: steady requests/s vs ideal {concurrency} / {latency_ms} ms",
     "% of ideal", ">=", 90),
    # Isolated and command critics.
    ("isolated_vs_in_process",
     "`--isolate-plugins` vs in-process, scripted critic, {isolation_tasks:,} tasks, `--jobs 1` (critiques/s)",
     "% of in-process", ">=", 33.3),
    ("command_critiques_per_s",
     "a Python `command` critic (the pipelined form), {isolation_tasks:,} tasks, `--jobs 1`",
     "critiques/s", ">=", 50_000),
    # Writer programs.
    ("writer_pipelined_vs_scripted",
     "a trivial Python writer program in the pipelined form vs the scripted backend in process, {writer_tasks:,} tasks,"
     " `--jobs 1` (critiques/s; the better `in_flight` of {writer_in_flight})", "% of scripted", ">=", 33.3),
    # The metered endpoint.
    ("metered_fraction_of_ideal",
     "writer programs through the metered endpoint, {metered_in_flight:,} in flight at {metered_latency_ms} ms:"
     " steady requests/s vs ideal", "% of ideal", ">=", 85),
    ("metered_rss_mb", "the metered endpoint, {metered_in_flight:,} in flight: peak RSS of critbench", "MB", "<", 300),
    # The concurrency sweep.
    ("sweep_1024_fraction_of_ideal",
     "model server, 1,024 in flight at {sweep_latency_ms} ms: steady requests/s vs ideal", "% of ideal", ">=", 90),
    ("sweep_1024_rss_mb", "model server, 1,024 in flight: peak RSS of critbench", "MB", "<", 300),
    ("sweep_1024_cpu_ms_per_request", "model server, 1,024 in flight: client CPU per request", "ms", "<=", 0.1),
    ("sweep_4096_runs", "model server, 4,096 in flight: the run finishes (1 = yes)", "runs", ">=", 1),
    # critbench view.
    ("view_front_page_s", "`critbench view`, {view_tasks:,} tasks × 2 arms with drafts: the front page, slowest answer", "s",
     "<", 2),
    ("view_task_page_s", "`critbench view`, {view_tasks:,} tasks × 2 arms with drafts: a task's page, slowest answer", "s",
     "<", 1),
    ("view_rss_mb", "`critbench view`, {view_tasks:,} tasks × 2 arms with drafts: peak RSS", "MB", "<", 300),
]

STARTED = time.monotonic()
# The whole bench must stay under this on a 2-core machine.
BUDGET_S = 15 * 60


def progress(message):
    elapsed = time.monotonic() - STARTED
    print(f"[bench {int(elapsed) // 60:02d}:{int(elapsed) % 60:02d}] {message}", file=sys.stderr, flush=True)


class BenchError(Exception):
    """The bench cannot go on: a process failed or the three loops disagree."""


# ------------------------------------------------------------------------------------------------
# Running and timing one process


def timed(command, label, env=None):
    """Runs `command` under /usr/bin/time; returns wall s, user s, sys s, peak RSS MB and stdout.
    The wall clock is taken here around the whole process, from spawn to exit."""
    with tempfile.NamedTemporaryFile("r", suffix=".time", delete=False) as handle:
        time_file = handle.name
    try:
        load = os.getloadavg()[0]
        machine_before = machine_cpu()
        started = time.perf_counter()
        with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
            process = subprocess.Popen(["/usr/bin/time", "-f", "%U %S %M", "-o", time_file, *command],
                                       stdout=stdout, stderr=stderr, text=True, env=env)
            threads = ThreadClock(process.pid)
            while process.poll() is None:
                threads.sample()
                time.sleep(THREAD_SAMPLE_S)
            wall = time.perf_counter() - started
            stdout.seek(0)
            stderr.seek(0)
            done = subprocess.CompletedProcess(process.args, process.returncode, stdout.read(), stderr.read())
        machine_after = machine_cpu()
        with open(time_file, encoding="utf-8") as handle:
            lines = [line for line in handle.read().splitlines() if line.strip()]
    finally:
        os.unlink(time_file)
    if done.returncode != 0:
        raise BenchError(
            f"{label} failed with exit {done.returncode}: {' '.join(command)}\n--- stdout\n{done.stdout[-3000:]}"
            f"\n--- stderr\n{done.stderr[-3000:]}"
        )
    user, system, rss_kb = lines[-1].split()
    busy = None
    if machine_before and machine_after:
        spent = [after - before for before, after in zip(machine_before, machine_after)]
        busy = 100 * spent[0] / spent[1] if spent[1] > 0 else None
    cpu_s = float(user) + float(system)
    return {
        # Every core of the machine, busy with anything (this process included), during the run.
        "machine_busy_pct": busy,
        "threads": threads.by_stage(cpu_s),
        # Sampled from /proc/PID/status (VmHWM); peak_rss_mb (GNU time) is the larger of critbench's
        # own and that of the children it waited for.
        "process_peak_rss_mb": threads.peaks(),
        "wall_s": wall,
        "user_s": float(user),
        "sys_s": float(system),
        "cpu_s": cpu_s,
        "peak_rss_mb": int(rss_kb) / 1024,
        "load_average_before": load,
        "stdout": done.stdout,
    }


# How often the CPU time of each thread of a timed process is read (from /proc).
THREAD_SAMPLE_S = 0.05

# A thread's stage, by the name critbench gives it (the kernel keeps 15 bytes of it); the main
# thread is the sink (rows to Parquet) and, after the loops, the summaries and reports.
# The stage of the timed critbench's child processes (critics, writers).
CHILDREN = "child processes (critics, writers)"
STAGES = [("critbench-sourc", "dataset reader"), ("critbench-loops", "loop workers"),
          ("critbench-http", "model client (tokio)"), ("critbench-criti", "critic pipes"),
          ("critbench-write", "writer pipes"), ("critbench-rescore", "rescore")]


class ThreadClock:
    """The CPU time of every thread of a process tree, read from /proc/PID/task/TID/stat while it
    runs: the last reading of each thread is kept, so a thread that ends between two readings
    loses at most THREAD_SAMPLE_S of its time (the main thread gets the rest of the process's
    exact total). Child processes (a critic's) are counted apart. Empty where /proc is not."""

    def __init__(self, root):
        self.root = root
        self.seen = {}  # (pid, tid) -> (process name, thread name, cpu s, is the tree's critbench)
        self.hwm = {}  # pid -> (is the tree's critbench, process name, peak RSS MB so far: VmHWM)
        self.ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def descendants(self):
        found, todo = [], [self.root]
        while todo:
            pid = todo.pop()
            children = []
            try:
                # Each thread's own children: a critic is started by a thread of its own.
                for tid in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{tid}/children", encoding="utf-8") as handle:
                        children += [int(c) for c in handle.read().split()]
            except OSError:
                pass
            found += children
            todo += children
        return found

    def sample(self):
        pids = self.descendants()
        for pid in pids:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            self.read_hwm(pid, pid == pids[0])
            for tid in tids:
                try:
                    with open(f"/proc/{pid}/task/{tid}/stat", encoding="utf-8") as handle:
                        stat = handle.read()
                except OSError:
                    continue
                name = stat[stat.index("(") + 1:stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2:].split()
                cpu = (int(fields[11]) + int(fields[12])) / self.ticks
                self.seen[(pid, int(tid))] = (pid == pids[0], name, cpu, int(tid) == pid)

    def read_hwm(self, pid, is_critbench):
        try:
            with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
                status = handle.read()
        except OSError:
            return
        name = re.search(r"^Name:\s*(.*)$", status, re.M)
        peak = re.search(r"^VmHWM:\s*(\d+) kB", status, re.M)
        if peak:
            self.hwm[pid] = (is_critbench, name.group(1) if name else "?", int(peak.group(1)) / 1024)

    def peaks(self):
        """The peak RSS (MB) of the timed critbench and of its child processes (the largest), as
        last read while they ran: a peak reached in a process's last THREAD_SAMPLE_S is missed."""
        critbench = max((mb for own, _, mb in self.hwm.values() if own), default=None)
        children = max((mb for own, _, mb in self.hwm.values() if not own), default=None)
        return {"critbench": critbench, "children": children}

    def by_stage(self, total_cpu_s):
        """CPU s per stage of the timed critbench (its main thread gets what the others did not),
        and its child processes together."""
        if not self.seen:
            return {}
        stages, children = {}, 0.0
        for (is_critbench, name, cpu, is_main) in self.seen.values():
            if not is_critbench:
                children += cpu
                continue
            if is_main:
                continue
            if cpu == 0:
                continue
            stage = next((label for prefix, label in STAGES if name.startswith(prefix)), "other threads")
            stages[stage] = stages.get(stage, 0.0) + cpu
        stages["main thread (sink, summaries)"] = max(total_cpu_s - children - sum(stages.values()), 0.0)
        if children:
            stages[CHILDREN] = children
        return stages


def machine_cpu():
    """(busy, total) CPU time of the whole machine so far, from /proc/stat; None elsewhere."""
    try:
        with open("/proc/stat", encoding="utf-8") as handle:
            fields = [int(v) for v in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


RUN_LINE = re.compile(r"^(\d+) loops, (\d+) critiques in ([0-9.]+) s", re.M)
HTTP_LINE = re.compile(r"\((\d+) HTTP requests, (\d+) retries\)")


def critbench_run(args, experiment, dataset, out, label, jobs=None, limit=None, extra=()):
    command = [args.critbench, "run", experiment, "--quiet", "--out", out]
    if dataset:
        command += ["--dataset", dataset]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    if limit is not None:
        command += ["--limit", str(limit)]
    command += list(extra)
    result = timed(command, label)
    match = RUN_LINE.search(result["stdout"])
    if not match:
        raise BenchError(f"{label}: no `N loops, M critiques` line in critbench's output:\n{result['stdout'][-2000:]}")
    result["loops"], result["critiques"] = int(match.group(1)), int(match.group(2))
    result["run_clock_s"] = float(match.group(3))
    rows = pq.ParquetFile(os.path.join(out, "trajectories.parquet")).metadata.num_rows
    if rows != result["critiques"]:
        raise BenchError(f"{label}: critbench printed {result['critiques']} critiques but trajectories.parquet has {rows} rows")
    result["rate"] = result["critiques"] / result["wall_s"]
    result["cpu_rate"] = result["critiques"] / max(result["cpu_s"], 1e-9)
    return result


def peer_run(args, peer, dataset, out, label, limit=None):
    command = [sys.executable, os.path.join(HERE, "peers.py"), peer, dataset, out]
    if limit is not None:
        command += ["--limit", str(limit)]
    result = timed(command, label)
    match = RUN_LINE.search(result["stdout"])
    if not match:
        raise BenchError(f"{label}: no `N loops, M critiques` line in the output:\n{result['stdout'][-2000:]}")
    result["loops"], result["critiques"] = int(match.group(1)), int(match.group(2))
    rows = pq.ParquetFile(os.path.join(out, "trajectories.parquet")).metadata.num_rows
    if rows != result["critiques"]:
        raise BenchError(f"{label}: printed {result['critiques']} rounds but trajectories.parquet has {rows} rows")
    result["rate"] = result["critiques"] / result["wall_s"]
    result["cpu_rate"] = result["critiques"] / max(result["cpu_s"], 1e-9)
    return result


# ------------------------------------------------------------------------------------------------
# The agreement check


OUTCOME_KEYS = ["task_id", "arm"]
OUTCOME_CHECKED = ["rounds", "exit_reason", "passed", "first_score", "last_score", "best_score", "best_round"]


def outcomes_of(run_dir, limit_ids=None):
    table = pq.read_table(os.path.join(run_dir, "outcomes.parquet"), columns=OUTCOME_KEYS + OUTCOME_CHECKED)
    if limit_ids is not None:
        table = table.filter(pc.is_in(table["task_id"], value_set=limit_ids))
    return table.sort_by([(key, "ascending") for key in OUTCOME_KEYS])


def check_agreement(reference_dir, other_dir, label, reference_label="critbench"):
    """Every (task, arm) of `other_dir` has the same rounds, exit, pass and scores as in
    `reference_dir`, and both have exactly the same loops. Raises BenchError naming the first
    disagreements."""
    other = outcomes_of(other_dir)
    reference = outcomes_of(reference_dir, other["task_id"].unique() if other.num_rows else None)
    if reference.num_rows != other.num_rows:
        raise BenchError(
            f"{label}: {other.num_rows} loops in {other_dir} but {reference.num_rows} for the same tasks in "
            f"{reference_label}'s {reference_dir}"
        )
    for column in OUTCOME_KEYS + OUTCOME_CHECKED:
        a, b = reference[column], other[column]
        if a.type != b.type:
            b = b.cast(a.type)
        if column.endswith("_score"):
            same = pc.less_equal(pc.abs(pc.subtract(a, b)), 1e-9)
        else:
            same = pc.equal(a, b)
        if not pc.all(same).as_py():
            bad = [i for i, ok in enumerate(same.to_pylist()) if not ok][:5]
            rows = "\n".join(
                f"  task {reference['task_id'][i]} arm {reference['arm'][i]}: {column} = "
                f"{a[i].as_py()!r} ({reference_label}) vs {b[i].as_py()!r} ({label})"
                for i in bad
            )
            raise BenchError(f"{label} disagrees with {reference_label} on `{column}`:\n{rows}")
    return other.num_rows


# ------------------------------------------------------------------------------------------------
# Machine information


def command_output(command):
    try:
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine_info(args):
    cpu = "unknown"
    with open("/proc/cpuinfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory_gb = 0.0
    with open("/proc/meminfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                memory_gb = int(line.split()[1]) / 1024 / 1024
    commit = command_output(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    dirty = command_output(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
    packages = {}
    for name in ("langgraph", "langchain-core", "langgraph-checkpoint", "pyarrow"):
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = "not installed"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(memory_gb, 1),
        "kernel": platform.release(),
        "os": command_output(["sh", "-c", ". /etc/os-release && echo \"$PRETTY_NAME\""]),
        "rustc": command_output(["rustc", "--version"]),
        "python": platform.python_version(),
        "packages": packages,
        "critbench": command_output([args.critbench, "--version"]),
        "git_commit": commit + (" (with uncommitted changes)" if dirty and dirty != "unknown" else ""),
        "load_average_at_start": os.getloadavg()[0],
    }


# ------------------------------------------------------------------------------------------------
# The measurements


def median_of(runs, key):
    return statistics.median(run[key] for run in runs)


def summarize(runs, keys=("wall_s", "cpu_s", "user_s", "sys_s", "peak_rss_mb", "rate", "cpu_rate")):
    summary = {f"median_{key}": median_of(runs, key) for key in keys if key in runs[0]}
    summary["runs"] = [{key: run[key] for key in run if key != "stdout"} for run in runs]
    return summary


def slice_file(source, target, lines):
    with open(source, "rb") as src, open(target, "wb") as dst:
        for n, line in enumerate(src):
            if n >= lines:
                break
            dst.write(line)


def make_tasks(kind, count, path, seed):
    progress(f"generating {count:,} {kind} tasks → {path}")
    subprocess.run([sys.executable, os.path.join(HERE, "make_tasks.py"), kind, str(count), path, "--seed", str(seed)],
                   check=True, stdout=subprocess.DEVNULL)
    return os.path.getsize(path)


def fresh(work, name):
    path = os.path.join(work, name)
    shutil.rmtree(path, ignore_errors=True)
    return path


def repeated_runs(args, work, name, experiment, dataset, label, count, describe=None):
    """Runs `experiment` `count` times (`--jobs 1`), each into a fresh directory removed after it;
    reports each run with `describe(result)` when given. Returns the results."""
    runs = []
    for run in range(1, count + 1):
        out = fresh(work, f"{name}-{run}")
        runs.append(critbench_run(args, experiment, dataset, out, f"{label} run {run}", jobs=1))
        shutil.rmtree(out)
        if describe:
            progress(f"  run {run}: {describe(runs[-1])}")
    return runs


def exits_of(run_dir):
    exits = pq.read_table(os.path.join(run_dir, "outcomes.parquet"), columns=["exit_reason"])
    return {row["values"]: row["counts"] for row in pc.value_counts(exits["exit_reason"]).to_pylist()}


def bench_distinct(args, work, tasks_file, results):
    """Measure 1 and 2: critbench --jobs 1/2, plain Python and LangGraph on the same tasks."""
    experiment = os.path.join(EXPERIMENTS, "bench-distinct.toml")
    lg_limit = min(args.langgraph_tasks, args.tasks)
    check_limit = min(args.check_tasks, lg_limit)

    # A first check on a few tasks, so that a disagreement stops the bench before any timing; every
    # timed run is then checked too: critbench and plain Python on every task, LangGraph on its share.
    progress(f"agreement check on the first {check_limit:,} tasks: critbench, plain Python, LangGraph")
    check_cb = critbench_run(args, experiment, tasks_file, fresh(work, "check-critbench"), "critbench check",
                             jobs=1, limit=check_limit)
    check_plain = peer_run(args, "plain", tasks_file, fresh(work, "check-plain"), "plain check", limit=check_limit)
    check_lg = peer_run(args, "langgraph", tasks_file, fresh(work, "check-langgraph"), "langgraph check",
                        limit=check_limit)
    loops = check_agreement(os.path.join(work, "check-critbench"), os.path.join(work, "check-plain"), "plain Python")
    check_agreement(os.path.join(work, "check-critbench"), os.path.join(work, "check-langgraph"), "LangGraph")
    if not (check_cb["critiques"] == check_plain["critiques"] == check_lg["critiques"]):
        raise BenchError(
            f"round counts differ: critbench {check_cb['critiques']}, plain {check_plain['critiques']}, "
            f"LangGraph {check_lg['critiques']}"
        )
    exit_counts = exits_of(os.path.join(work, "check-critbench"))
    progress(f"  agree: {loops:,} loops, {check_cb['critiques']:,} rounds, exits {exit_counts}")
    for name in ("check-critbench", "check-plain", "check-langgraph"):
        shutil.rmtree(os.path.join(work, name))
    results["agreement"] = {
        "tasks": check_limit,
        "loops": loops,
        "rounds": check_cb["critiques"],
        "exits": exit_counts,
        "checked": OUTCOME_CHECKED,
    }

    jobs1, jobs2, plain, langgraph = [], [], [], []
    reference = None
    for run in range(1, args.runs + 1):
        out = fresh(work, f"critbench-j1-{run}")
        jobs1.append(critbench_run(args, experiment, tasks_file, out, f"critbench --jobs 1 run {run}", jobs=1))
        progress(f"  run {run}: critbench --jobs 1: {jobs1[-1]['critiques']:,} critiques, "
                 f"{jobs1[-1]['wall_s']:.2f} s whole process ({jobs1[-1]['rate']:,.0f}/s), "
                 f"RSS {jobs1[-1]['peak_rss_mb']:.0f} MB")
        if reference is None:
            reference = out
        else:
            check_agreement(reference, out, f"critbench --jobs 1 run {run}", "critbench run 1")
            shutil.rmtree(out)

        out = fresh(work, f"critbench-j2-{run}")
        jobs2.append(critbench_run(args, experiment, tasks_file, out, f"critbench --jobs 2 run {run}", jobs=2))
        check_agreement(reference, out, f"critbench --jobs 2 run {run}", "critbench --jobs 1")
        shutil.rmtree(out)
        progress(f"  run {run}: critbench --jobs 2: {jobs2[-1]['wall_s']:.2f} s ({jobs2[-1]['rate']:,.0f}/s)")

        out = fresh(work, f"plain-{run}")
        plain.append(peer_run(args, "plain", tasks_file, out, f"plain Python run {run}"))
        check_agreement(reference, out, f"plain Python run {run}")
        shutil.rmtree(out)
        progress(f"  run {run}: plain Python: {plain[-1]['wall_s']:.2f} s ({plain[-1]['rate']:,.0f} rounds/s)")

        out = fresh(work, f"langgraph-{run}")
        langgraph.append(peer_run(args, "langgraph", tasks_file, out, f"LangGraph run {run}", limit=lg_limit))
        check_agreement(reference, out, f"LangGraph run {run}")
        shutil.rmtree(out)
        progress(f"  run {run}: LangGraph ({lg_limit:,} tasks): {langgraph[-1]['wall_s']:.2f} s "
                 f"({langgraph[-1]['rate']:,.0f} rounds/s)")
    exit_counts = exits_of(reference)
    shutil.rmtree(reference)
    results["distinct"] = {
        "tasks": args.tasks,
        "exits": exit_counts,
        "dataset_bytes": os.path.getsize(tasks_file),
        "loops": jobs1[0]["loops"],
        "critiques": jobs1[0]["critiques"],
        "critbench_jobs1": summarize(jobs1),
        "critbench_jobs2": summarize(jobs2),
        "plain_python": summarize(plain),
        "langgraph": {"tasks": lg_limit, "loops": langgraph[0]["loops"], "rounds": langgraph[0]["critiques"],
                      **summarize(langgraph)},
    }
    results["distinct"]["critbench_jobs1"]["median_run_clock_s"] = median_of(jobs1, "run_clock_s")
    results["distinct"]["critbench_jobs2"]["median_run_clock_s"] = median_of(jobs2, "run_clock_s")


def bench_sim(args, work, results):
    """Measure 3: sim backend + rubric critic on distinct paper tasks."""
    tasks_file = os.path.join(work, f"papers-{args.sim_tasks}.jsonl")
    make_tasks("papers", args.sim_tasks, tasks_file, args.seed)
    experiment = os.path.join(EXPERIMENTS, "bench-sim.toml")
    runs = repeated_runs(args, work, "sim", experiment, tasks_file, "sim + rubric", args.runs,
                         lambda r: f"sim + rubric --jobs 1: {r['critiques']:,} critiques, {r['wall_s']:.2f} s "
                                   f"({r['rate']:,.0f}/s)")
    os.unlink(tasks_file)
    results["sim_rubric"] = {"tasks": args.sim_tasks, "loops": runs[0]["loops"], "critiques": runs[0]["critiques"],
                             **summarize(runs)}


def bench_memory(args, work, tasks_file, results):
    """Measure 4: peak RSS at the small and the large task count, --jobs 1."""
    experiment = os.path.join(EXPERIMENTS, "bench-distinct.toml")
    small_file = os.path.join(work, f"scripted-{args.rss_small}.jsonl")
    if args.rss_small <= args.tasks:
        slice_file(tasks_file, small_file, args.rss_small)
    else:
        make_tasks("scripted", args.rss_small, small_file, args.seed)
    small = repeated_runs(args, work, "rss-small", experiment, small_file, f"RSS at {args.rss_small}", args.runs,
                          lambda r: f"{args.rss_small:,} tasks: peak RSS {r['peak_rss_mb']:.0f} MB, {r['wall_s']:.2f} s")
    os.unlink(small_file)

    free_gb = shutil.disk_usage(work).free / 1e9
    need_gb = args.rss_large * 1.2e3 / 1e9 * 2.5  # the JSONL, plus the run's Parquet files
    if free_gb < need_gb:
        raise BenchError(f"{work}: {free_gb:.1f} GB free, the {args.rss_large:,}-task run needs about {need_gb:.1f} GB")
    large_file = os.path.join(work, f"scripted-{args.rss_large}.jsonl")
    size = make_tasks("scripted", args.rss_large, large_file, args.seed)
    large = repeated_runs(args, work, "rss-large", experiment, large_file, f"RSS at {args.rss_large}",
                          args.rss_large_runs,
                          lambda r: f"{args.rss_large:,} tasks ({size / 1e9:.2f} GB): peak RSS "
                                    f"{r['peak_rss_mb']:.0f} MB, {r['wall_s']:.2f} s ({r['rate']:,.0f}/s)")
    os.unlink(large_file)
    results["memory"] = {
        "small": {"tasks": args.rss_small, **summarize(small)},
        "large": {"tasks": args.rss_large, "dataset_bytes": size, **summarize(large)},
    }


def bench_server(args, work, tasks_file, results):
    """Measure 5: the openai backend against the fixed-latency server, 64 in flight."""
    template = os.path.join(EXPERIMENTS, "bench-server.toml")
    runs = []
    for run in range(1, args.runs + 1):
        server = subprocess.Popen([args.server, "--port", "0", "--latency-ms", str(args.latency_ms)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            line = server.stdout.readline().strip()
            match = re.fullmatch(r"listening on (127\.0\.0\.1:\d+)", line)
            if not match:
                raise BenchError(f"the bench server said {line!r} instead of `listening on 127.0.0.1:PORT`")
            address = match.group(1)
            with open(template, encoding="utf-8") as handle:
                text = handle.read()
            text, replaced = re.subn(r'(?m)^base_url = "[^"]*"', f'base_url = "http://{address}/v1"', text)
            if replaced != 1:
                raise BenchError(f"{template}: expected one `base_url = ...` line")
            experiment = os.path.join(work, "bench-server.toml")
            with open(experiment, "w", encoding="utf-8") as handle:
                handle.write(text)
            out = fresh(work, f"server-{run}")
            result = critbench_run(args, experiment, tasks_file, out, f"model-server run {run}",
                                   limit=args.server_tasks, extra=["--no-cache"])
            with urllib.request.urlopen(f"http://{address}/stats", timeout=10) as answer:
                stats = json.load(answer)
        finally:
            server.terminate()
            server.wait(timeout=10)
        http = HTTP_LINE.search(result["stdout"])
        if not http:
            raise BenchError(f"model-server run {run}: no `models:` line in critbench's output:\n{result['stdout'][-2000:]}")
        client_requests, retries = int(http.group(1)), int(http.group(2))
        if client_requests != stats["requests"] or retries:
            raise BenchError(f"model-server run {run}: critbench sent {client_requests} requests ({retries} retries), "
                             f"the server answered {stats['requests']}")
        with open(os.path.join(out, "manifest.json"), encoding="utf-8") as handle:
            manifest = json.load(handle)
        shutil.rmtree(out)
        result.update(
            requests=stats["requests"],
            max_in_flight=stats["max_in_flight"],
            mean_in_flight=stats["mean_in_flight"],
            connections=stats["connections"],
            window_s=stats["window_s"],
            steady_rate=stats["steady_rate"],
            server_rate=stats["requests"] / stats["window_s"],
            whole_rate=stats["requests"] / result["wall_s"],
            cpu_ms_per_request=result["cpu_s"] * 1e3 / stats["requests"],
            jobs=manifest.get("jobs"),
        )
        runs.append(result)
        progress(f"  run {run}: {result['requests']:,} requests, {result['max_in_flight']} in flight at most, "
                 f"{result['mean_in_flight']:.1f} on average: {result['steady_rate']:,.0f}/s steady, "
                 f"{result['server_rate']:,.0f}/s first to last, {result['whole_rate']:,.0f}/s whole process, "
                 f"{result['cpu_ms_per_request']:.3f} ms client CPU per request")
    ideal = args.concurrency / (args.latency_ms / 1e3)
    summary = summarize(runs, keys=("wall_s", "cpu_s", "peak_rss_mb", "steady_rate", "server_rate", "whole_rate",
                                    "cpu_ms_per_request", "requests", "max_in_flight", "mean_in_flight",
                                    "window_s"))
    results["server"] = {"tasks": args.server_tasks, "latency_ms": args.latency_ms, "concurrency": args.concurrency,
                         "ideal_rate": ideal, **summary}


def start_bench_server(args, latency_ms):
    """The bench server on a free port: (process, "127.0.0.1:PORT")."""
    server = subprocess.Popen([args.server, "--port", "0", "--latency-ms", str(latency_ms)],
                              stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline().strip()
    match = re.fullmatch(r"listening on (127\.0\.0\.1:\d+)", line)
    if not match:
        server.terminate()
        raise BenchError(f"the bench server said {line!r} instead of `listening on 127.0.0.1:PORT`")
    return server, match.group(1)


def bench_sweep(args, work, tasks_file, results):
    """The openai backend at 64, 256, 1,024 and 4,096 requests in flight
    against the bench server at --sweep-latency-ms, each run with about --sweep-tasks-per-slot tasks
    per slot so that every figure has a steady state of a few seconds. Each run reads a file of
    exactly its tasks, as a user's run reads its dataset: `--limit` on section 1's file would charge
    the hashing of every task the run leaves out to its requests. The concurrency whose CPU per
    request is a target (1,024) runs --sweep-runs times and its median run (by CPU per request) is
    the one reported; one run's CPU varies by a fifth on a shared machine."""
    template = os.path.join(EXPERIMENTS, "bench-server.toml")
    with open(template, encoding="utf-8") as handle:
        template_text = handle.read()
    rows = []
    for concurrency in [int(c) for c in args.sweep.split(",")]:
        tasks = min(args.tasks, concurrency * args.sweep_tasks_per_slot)
        sweep_file = os.path.join(work, f"sweep-{tasks}.jsonl")
        slice_file(tasks_file, sweep_file, tasks)
        runs = [sweep_run(args, work, template, template_text, sweep_file, concurrency, tasks)
                for _ in range(args.sweep_runs if concurrency == 1024 else 1)]
        os.unlink(sweep_file)
        runs.sort(key=lambda run: run["cpu_ms_per_request"])
        result = runs[len(runs) // 2]
        result["cpu_ms_per_request_runs"] = [run["cpu_ms_per_request"] for run in runs]
        rows.append(result)
    results["sweep"] = {"latency_ms": args.sweep_latency_ms, "tasks_per_slot": args.sweep_tasks_per_slot,
                        "runs_at_1024": args.sweep_runs, "runs": rows}


def sweep_run(args, work, template, template_text, tasks_file, concurrency, tasks):
    """One run of the sweep: `tasks` tasks at `concurrency` requests in flight against a fresh bench server."""
    server, address = start_bench_server(args, args.sweep_latency_ms)
    try:
        text, urls = re.subn(r'(?m)^base_url = "[^"]*"', f'base_url = "http://{address}/v1"', template_text)
        text, limits = re.subn(r"(?m)^concurrency = \d+", f"concurrency = {concurrency}", text)
        if urls != 1 or limits != 1:
            raise BenchError(f"{template}: expected one `base_url = ...` and one `concurrency = ...` line")
        experiment = os.path.join(work, f"sweep-{concurrency}.toml")
        with open(experiment, "w", encoding="utf-8") as handle:
            handle.write(text)
        out = fresh(work, f"sweep-{concurrency}")
        result = critbench_run(args, experiment, tasks_file, out, f"sweep at {concurrency}", extra=["--no-cache"])
        with urllib.request.urlopen(f"http://{address}/stats", timeout=10) as answer:
            stats = json.load(answer)
    finally:
        server.terminate()
        server.wait(timeout=30)
    with open(os.path.join(out, "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    shutil.rmtree(out)
    ideal = concurrency / (args.sweep_latency_ms / 1e3)
    result.pop("stdout", None)
    result.update(
        concurrency=concurrency, tasks=tasks, ideal_rate=ideal, requests=stats["requests"],
        max_in_flight=stats["max_in_flight"], mean_in_flight=stats["mean_in_flight"],
        steady_rate=stats["steady_rate"], fraction_of_ideal=100 * stats["steady_rate"] / ideal,
        cpu_ms_per_request=result["cpu_s"] * 1e3 / max(stats["requests"], 1), jobs=manifest.get("jobs"),
        load_average_after=os.getloadavg()[0],
    )
    progress(f"  {concurrency} in flight: {result['requests']:,} requests, {result['max_in_flight']} in flight at"
             f" most: {result['steady_rate']:,.0f}/s steady ({result['fraction_of_ideal']:.0f}% of"
             f" {ideal:,.0f}), {result['peak_rss_mb']:,.0f} MB, {result['cpu_ms_per_request']:.3f} ms CPU per"
             f" request, machine {result['machine_busy_pct'] or 0:.0f}% busy")
    return result


def bench_isolation(args, work, tasks_file, results):
    """The scripted critic in-process, isolated (`critbench plugin-worker`, the pipelined form)
    and as a Python command critic (scripts/bench/scripted_critic.py, the pipelined form: each task
    sent once for all its loops; at `--jobs 1` and `--jobs 2`; and the same critic speaking the
    simple form, one request per pipe round trip); a trivial Python critic
    (scripts/bench/trivial_critic.py), whose critiques differ; with --baseline-critbench, that
    binary isolated as well (the before figure). Every other run's outcomes must equal the
    in-process run's."""
    experiment = os.path.join(EXPERIMENTS, "bench-distinct.toml")
    with open(experiment, encoding="utf-8") as handle:
        text = handle.read().replace("../datasets/", os.path.join(ROOT, "datasets") + "/")

    def command_experiment(name, command):
        path = os.path.join(work, f"{name}.toml")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text.replace('plugin = "scripted"', f"command = {json.dumps([sys.executable, *command])}"))
        return path

    critic = os.path.join(HERE, "scripted_critic.py")
    pipelined = command_experiment("command-pipelined", [critic])
    simple = command_experiment("command-simple", [critic, "--simple"])
    trivial = command_experiment("command-trivial", [os.path.join(HERE, "trivial_critic.py")])
    # key, label, binary, experiment, extra flags, --jobs, whether its outcomes are the in-process run's
    modes = [
        ("in_process", "scripted, in-process (C ABI)", args.critbench, experiment, (), 1, True),
        ("isolated", "scripted, `--isolate-plugins` (plugin-worker, the pipelined form)", args.critbench,
         experiment, ("--isolate-plugins",), 1, True),
        ("command_pipelined", "Python command critic, the pipelined form (each task sent once for its loops)",
         args.critbench, pipelined, (), 1, True),
        ("command_pipelined_jobs2", "the same, `--jobs 2` (the default here: `--jobs` is every core)",
         args.critbench, pipelined, (), 2, True),
        ("command_trivial", "a trivial Python command critic, the pipelined form (its own critiques: other loops)",
         args.critbench, trivial, (), 1, False),
        # The slowest row, not a target: one run, to stay in the bench's budget.
        ("command_simple", "Python command critic, the simple form (one request per round trip; one run)",
         args.critbench, simple, (), 1, True),
    ]
    if args.baseline_critbench:
        modes.append(("baseline_isolated", f"`--isolate-plugins` with {args.baseline_critbench} (before)",
                      args.baseline_critbench, experiment, ("--isolate-plugins",), 1, True))
    section = {"tasks": args.isolation_tasks, "modes": {}}
    reference = None
    for key, label, binary, exp, extra, jobs, same in modes:
        runs = []
        for run in range(1, (1 if key == "command_simple" else args.runs) + 1):
            out = fresh(work, f"isolation-{key}-{run}")
            runs.append(critbench_run(argparse.Namespace(critbench=binary), exp, tasks_file, out, f"{label} run {run}",
                                      jobs=jobs, limit=args.isolation_tasks, extra=extra))
            outcomes = pq.read_table(os.path.join(out, "outcomes.parquet"))
            outcomes = outcomes.select([c for c in outcomes.column_names if c not in ("run_id", "wall_ms")])
            if reference is None:
                reference = outcomes
            elif same and not outcomes.equals(reference):
                raise BenchError(f"{label} run {run}: outcomes differ from the in-process run's")
            shutil.rmtree(out)
        section["modes"][key] = {"label": label, "jobs": jobs, "loops": runs[0]["loops"],
                                 "critiques": runs[0]["critiques"], **summarize(runs)}
        progress(f"  {label}: {section['modes'][key]['median_rate']:,.0f} critiques/s whole process")
    results["isolation"] = section


def bench_writer(args, work, tasks_file, results):
    """The same loops with the drafts from the scripted backend in process and from trivial Python
    writer programs: scripts/bench/trivial_writer.py (the simple form: one request per pipe round
    trip) and scripts/bench/pipelined_writer.py (the pipelined form, one process, at each
    `in_flight` of --writer-in-flight; and once more with `--lazy`, which leaves the task unparsed).
    Their drafts differ from the scripted backend's, but the scripted critic answers each round
    from the task, so the loops stop at the same rounds. The runs alternate mode by mode, so that
    the ratios compare runs of the same minutes; every run's outcomes must agree on every loop's
    rounds and verdict."""
    experiment = os.path.join(EXPERIMENTS, "bench-distinct.toml")
    with open(experiment, encoding="utf-8") as handle:
        text = handle.read().replace("../datasets/", os.path.join(ROOT, "datasets") + "/")

    def writer_experiment(name, script, extra=(), table=""):
        path = os.path.join(work, f"{name}.toml")
        command = json.dumps([sys.executable, os.path.join(HERE, script), *extra])
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text.replace('backend = "scripted"', 'backend = "command"')
                         + f"\n[writer]\ncommand = {command}\n{table}")
        return path

    in_flights = [int(n) for n in str(args.writer_in_flight).split(",")]
    modes = [
        ("scripted", "scripted backend, in process", experiment, args.runs),
        ("writer_simple", "a trivial Python writer program, the simple form (one request per round trip; one run)",
         writer_experiment("writer-simple", "trivial_writer.py"), 1),
    ]
    for in_flight in in_flights:
        modes.append((f"writer_pipelined_{in_flight}",
                      f"a trivial Python writer program, the pipelined form, `in_flight = {in_flight}`, one process",
                      writer_experiment(f"writer-pipelined-{in_flight}", "pipelined_writer.py",
                                        table=f"in_flight = {in_flight}\nprocesses = 1\n"), args.runs))
    modes.append(("writer_pipelined_lazy",
                  f"the same, `--lazy` (each line read only in part: not a writer's figure), `in_flight = {in_flights[0]}`",
                  writer_experiment("writer-pipelined-lazy", "pipelined_writer.py", extra=["--lazy"],
                                    table=f"in_flight = {in_flights[0]}\nprocesses = 1\n"), args.runs))
    section = {"tasks": args.writer_tasks, "in_flight": in_flights, "modes": {}}
    runs = {key: [] for key, *_ in modes}
    reference = None
    for run in range(1, args.runs + 1):
        for key, label, exp, count in modes:
            if run > count:
                continue
            out = fresh(work, f"writer-{key}-{run}")
            runs[key].append(critbench_run(args, exp, tasks_file, out, f"{label} run {run}", jobs=1,
                                           limit=args.writer_tasks))
            outcomes = pq.read_table(os.path.join(out, "outcomes.parquet"))
            outcomes = outcomes.select(["task_id", "arm", "rounds", "exit_reason", "passed", "final_score"])
            if reference is None:
                reference = outcomes
            elif not outcomes.equals(reference):
                raise BenchError(f"{label} run {run}: the loops' rounds and verdicts differ from the scripted run's")
            shutil.rmtree(out)
            result = runs[key][-1]
            progress(f"  run {run}: {label}: {result['rate']:,.0f} critiques/s, {result['wall_s']:.2f} s, CPU"
                     f" {result['cpu_s']:.2f} s (children {result['threads'].get(CHILDREN, 0.0):.2f} s)")
    for key, label, _, _ in modes:
        section["modes"][key] = {"label": label, "loops": runs[key][0]["loops"], "critiques": runs[key][0]["critiques"],
                                 **summarize(runs[key])}
        progress(f"  {label}: {section['modes'][key]['median_rate']:,.0f} critiques/s whole process (median)")
    pipelined = [f"writer_pipelined_{n}" for n in in_flights]
    section["best_pipelined"] = max(pipelined, key=lambda key: section["modes"][key]["median_rate"])
    results["writer"] = section


def process_cpu_s(pid):
    """User + sys CPU seconds of process `pid` so far, from /proc; None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_metered(args, work, tasks_file, results):
    """Writer programs through the metered endpoint: experiments/bench-metered.toml, whose writer
    (scripts/bench/metered_writer.py, the pipelined form) makes one chat call per request to the
    run's metered endpoint, which forwards it through critbench's client to the bench server at
    --metered-latency-ms; `[writer] in_flight` and `[openai] concurrency` both --metered-in-flight.
    The run reads a file of exactly its tasks; the server's count, critbench's HTTP requests and the
    endpoint's calls must agree, with nothing refused or failed."""
    template = os.path.join(EXPERIMENTS, "bench-metered.toml")
    with open(template, encoding="utf-8") as handle:
        template_text = handle.read()
    tasks = min(args.tasks, args.metered_tasks)
    metered_file = os.path.join(work, f"metered-{tasks}.jsonl")
    slice_file(tasks_file, metered_file, tasks)
    in_flight = args.metered_in_flight
    writer = json.dumps([sys.executable, os.path.join(HERE, "metered_writer.py"), "--connections", str(in_flight)])
    rows = []
    for run in range(1, args.metered_runs + 1):
        server, address = start_bench_server(args, args.metered_latency_ms)
        try:
            server_cpu_before = process_cpu_s(server.pid)
            text, urls = re.subn(r'(?m)^base_url = "[^"]*"', f'base_url = "http://{address}/v1"', template_text)
            text, limits = re.subn(r"(?m)^concurrency = \d+", f"concurrency = {in_flight}", text)
            text, flights = re.subn(r"(?m)^in_flight = \d+", f"in_flight = {in_flight}", text)
            text, commands = re.subn(r"(?m)^command = \[.*\]$", lambda _: f"command = {writer}", text)
            text = text.replace("../datasets/", os.path.join(ROOT, "datasets") + "/")
            if (urls, limits, flights, commands) != (1, 1, 1, 1):
                raise BenchError(f"{template}: expected one `base_url = ...`, `concurrency = ...`, `in_flight = ...`"
                                 " and `command = [...]` line")
            experiment = os.path.join(work, "bench-metered.toml")
            with open(experiment, "w", encoding="utf-8") as handle:
                handle.write(text)
            out = fresh(work, f"metered-{run}")
            result = critbench_run(args, experiment, metered_file, out, f"metered run {run}", extra=["--no-cache"])
            with urllib.request.urlopen(f"http://{address}/stats", timeout=10) as answer:
                stats = json.load(answer)
            server_cpu_after = process_cpu_s(server.pid)
        finally:
            server.terminate()
            server.wait(timeout=30)
        with open(os.path.join(out, "manifest.json"), encoding="utf-8") as handle:
            manifest = json.load(handle)
        shutil.rmtree(out)
        openai = manifest.get("openai") or {}
        metered = openai.get("metered") or {}
        http = HTTP_LINE.search(result["stdout"])
        client_requests = int(http.group(1)) if http else None
        trouble = [f"{key} {metered.get(key)}" for key in ("refused_keys", "refused_requests", "failed", "late")
                   if metered.get(key)]
        if manifest.get("failed_loop_count"):
            trouble.append(f"{manifest['failed_loop_count']} failed loops ({manifest['failed_loops'][:1]})")
        if not (metered.get("calls") == client_requests == stats["requests"]) or trouble:
            raise BenchError(f"metered run {run}: the endpoint answered {metered.get('calls')} calls, critbench sent"
                             f" {client_requests} HTTP requests, the server answered {stats['requests']}"
                             + (f"; {', '.join(trouble)}" if trouble else ""))
        ideal = in_flight / (args.metered_latency_ms / 1e3)
        peaks = result.get("process_peak_rss_mb") or {}
        writer_rss = peaks.get("children")
        # GNU time's peak is the larger of critbench's and its writer's: it is critbench's own
        # unless the writer's (sampled) peak reaches it; the sampled one otherwise.
        critbench_rss = result["peak_rss_mb"]
        if writer_rss is not None and writer_rss >= critbench_rss - 1:
            critbench_rss = peaks.get("critbench") or critbench_rss
        threads = result.get("threads", {})
        result.pop("stdout", None)
        result.update(
            in_flight=in_flight, tasks=tasks, ideal_rate=ideal, requests=stats["requests"],
            max_in_flight=stats["max_in_flight"], mean_in_flight=stats["mean_in_flight"],
            connections=stats["connections"], window_s=stats["window_s"], steady_rate=stats["steady_rate"],
            server_rate=stats["requests"] / stats["window_s"],
            fraction_of_ideal=100 * stats["steady_rate"] / ideal, metered=metered,
            critbench_peak_rss_mb=critbench_rss, writer_peak_rss_mb=writer_rss,
            writer_cpu_s=threads.get(CHILDREN, 0.0),
            critbench_cpu_s=result["cpu_s"] - threads.get(CHILDREN, 0.0),
            server_cpu_s=(server_cpu_after - server_cpu_before
                          if server_cpu_before is not None and server_cpu_after is not None else None),
            client_latency_ms={role: {k: v for k, v in figures.items() if k != "requests"}
                               for role, figures in (openai.get("latency") or {}).items()},
            concurrency_lowest=(openai.get("concurrency") or {}).get("lowest"),
            jobs=manifest.get("jobs"), load_average_after=os.getloadavg()[0],
        )
        rows.append(result)
        per = 1e6 / max(result["requests"], 1)
        progress(f"  run {run}: {result['requests']:,} requests, {result['max_in_flight']:,} in flight at most,"
                 f" {result['mean_in_flight']:.0f} on average: {result['steady_rate']:,.0f}/s steady"
                 f" ({result['fraction_of_ideal']:.0f}% of {ideal:,.0f}); CPU per request: critbench"
                 f" {result['critbench_cpu_s'] * per:.0f} µs, writer {result['writer_cpu_s'] * per:.0f} µs, server"
                 f" {(result['server_cpu_s'] or 0) * per:.0f} µs; peak RSS critbench {critbench_rss:,.0f} MB, writer"
                 f" {writer_rss or 0:,.0f} MB; machine {result['machine_busy_pct'] or 0:.0f}% busy")
    os.unlink(metered_file)
    rows.sort(key=lambda row: row["steady_rate"])
    results["metered"] = {"latency_ms": args.metered_latency_ms, "in_flight": in_flight, "tasks": tasks,
                          "ideal_rate": in_flight / (args.metered_latency_ms / 1e3),
                          "median_run": len(rows) // 2, "runs": rows}


def bench_repeated(args, work, results):
    """The earlier benchmark (36 tasks × 1,000 epochs), kept for continuity with its history."""
    experiment = os.path.join(EXPERIMENTS, "bench-scripted.toml")
    runs = repeated_runs(args, work, "repeated", experiment, None, "bench-scripted", args.runs)
    results["repeated"] = {"loops": runs[0]["loops"], "critiques": runs[0]["critiques"], **summarize(runs)}
    results["repeated"]["median_run_clock_s"] = median_of(runs, "run_clock_s")
    progress(f"  36 tasks × 1,000 epochs: {results['repeated']['median_rate']:,.0f} critiques/s whole process")


def http_get(url, timeout=300):
    """GETs `url`: status, body and seconds from the request to the last byte."""
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    return status, body.decode("utf-8", "replace"), time.perf_counter() - started


def peak_rss_mb(pid):
    """The peak resident set size of a running process (VmHWM), in MB."""
    with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise BenchError(f"/proc/{pid}/status has no VmHWM")


def bench_view(args, work, results):
    """8: `critbench view` on a run of `--view-tasks` scripted tasks × 2 arms with drafts stored: the
    front page, task pages and lists answered over HTTP, and the viewer's peak RSS."""
    tasks_file = os.path.join(work, f"scripted-view-{args.view_tasks}.jsonl")
    size = make_tasks("scripted", args.view_tasks, tasks_file, args.seed)
    out = fresh(work, "view-run")
    run = critbench_run(args, os.path.join(EXPERIMENTS, "bench-distinct.toml"), tasks_file, out, "view run",
                        extra=("--store-drafts",))
    os.unlink(tasks_file)
    progress(f"  the run: {run['loops']:,} loops, {run['critiques']:,} rounds with drafts in {run['wall_s']:.1f} s")
    run_bytes = sum(os.path.getsize(os.path.join(out, name)) for name in os.listdir(out)
                    if os.path.isfile(os.path.join(out, name)))
    trajectories = pq.ParquetFile(os.path.join(out, "trajectories.parquet"))
    draft_chars = pq.read_table(os.path.join(out, "trajectories.parquet"), columns=["draft_chars"]).column(0)
    mean_draft_chars = pc.mean(draft_chars).as_py()
    ids = pq.read_table(os.path.join(out, "outcomes.parquet"), columns=["task_id"]).column(0).to_pylist()
    distinct = sorted(set(ids))
    step = max(1, len(distinct) // 20)
    tasks = distinct[step // 2::step][:20]
    process = subprocess.Popen([args.critbench, "view", out, "--port", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        started = time.perf_counter()
        line = process.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+/", line)
        if not match:
            raise BenchError(f"critbench view printed no URL: {line!r} {process.stderr.read()[-2000:]}")
        url = match.group(0)
        listening_s = time.perf_counter() - started
        # The front page at once (the loop index may still be building), then the index awaited.
        front = [http_get(url)]
        while True:
            status, _, _ = http_get(url + "loops")
            if status != 503:
                break
            time.sleep(0.05)
        index_s = time.perf_counter() - started
        front += [http_get(url) for _ in range(4)]
        task_pages = [http_get(f"{url}task/{urllib.parse.quote(task)}") for task in tasks]
        lists = {query: http_get(f"{url}loops?{query}") for query in
                 ["", "set=near-empty", "set=critic-passed-evaluator-failed", "arm=feedback&exit=budget&page=100"]}
        for status, body, _ in front + task_pages + list(lists.values()):
            if status != 200:
                raise BenchError(f"critbench view answered {status}: {body[:500]}")
        if not all('class="loop"' in body for _, body, _ in task_pages):
            raise BenchError("a task page shows no loop")
        if not any("<ins>" in body for _, body, _ in task_pages):
            raise BenchError("no task page shows a revision's word changes")
        rss = peak_rss_mb(process.pid)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
    shutil.rmtree(out)
    results["view"] = {
        "tasks": args.view_tasks, "dataset_bytes": size, "loops": run["loops"], "rounds": run["critiques"],
        "run_wall_s": run["wall_s"], "run_bytes": run_bytes, "row_groups": trajectories.metadata.num_row_groups,
        "mean_draft_chars": mean_draft_chars,
        "listening_s": listening_s, "index_s": index_s, "front_page_s": [t for _, _, t in front],
        "task_page_s": [t for _, _, t in task_pages], "list_page_s": {q: t for q, (_, _, t) in lists.items()},
        "peak_rss_mb": rss,
    }
    progress(f"  front page {max(results['view']['front_page_s']):.3f} s (slowest), task page "
             f"{max(results['view']['task_page_s']):.3f} s (slowest of {len(tasks)}), peak RSS {rss:.0f} MB")


def view_section(results):
    """The markdown of section 8, `critbench view`."""
    view = results.get("view")
    if not view:
        return []
    front, task = view["front_page_s"], view["task_page_s"]
    lists = view["list_page_s"]
    return [
        "",
        f"## 8. `critbench view` on {view['loops']:,} loops",
        "",
        f"`experiments/bench-distinct.toml` with `--store-drafts` on {view['tasks']:,} generated scripted tasks"
        f" ({view['dataset_bytes'] / 1e6:,.0f} MB of JSONL, deleted once run): {view['loops']:,} loops,"
        f" {view['rounds']:,} rounds with their drafts (of {view.get('mean_draft_chars', 0):,.0f} characters on"
        " average, drawn from a few per task, so they compress well), written in"
        f" {view['run_wall_s']:.1f} s ({view['run_bytes'] / 1e6:,.0f} MB of run directory, `trajectories.parquet`"
        f" in {view['row_groups']:,} row groups). Then `critbench view RUN --port 0`, asked over HTTP on 127.0.0.1 by the bench (urllib, one"
        " request at a time, each timed from the request to the last byte): the front page at once, while the"
        " loop index is still being read, and four times after; the pages of 20 tasks spread over the run; and"
        " four lists. Peak RSS is critbench's VmHWM after every request."
        + (f" Measured {view['measured']['at']} on commit `{view['measured']['commit']}`, apart from the sections"
           " above." if view.get("measured") else ""),
        "",
        "| | |",
        "|---|---:|",
        f"| listening (the URL printed) | {view['listening_s']:.2f} s |",
        f"| the front page, first answer (index still building) | {front[0]:.3f} s |",
        f"| the front page, slowest of {len(front)} | {max(front):.3f} s |",
        f"| the loop index read (the lists answer) | {view['index_s']:.1f} s after start |",
        f"| a task's page, median of {len(task)} | {statistics.median(task):.3f} s |",
        f"| a task's page, slowest of {len(task)} | {max(task):.3f} s |",
        *[f"| `/loops{'?' + q if q else ''}` | {t:.3f} s |" for q, t in lists.items()],
        f"| peak RSS of critbench | {view['peak_rss_mb']:.0f} MB |",
    ]


# ------------------------------------------------------------------------------------------------
# Targets and the report


def all_runs(node):
    """Every timed run recorded anywhere in the results."""
    if isinstance(node, dict):
        if "runs" in node and isinstance(node["runs"], list):
            yield from node["runs"]
        for key, value in node.items():
            if key != "runs":
                yield from all_runs(value)


def measured_targets(results, args):
    d = results.get("distinct")
    values = {}
    if d:
        jobs1 = d["critbench_jobs1"]["median_rate"]
        values["critiques_per_s_jobs1"] = jobs1
        values["vs_langgraph"] = jobs1 / d["langgraph"]["median_rate"]
        values["vs_plain_python"] = jobs1 / d["plain_python"]["median_rate"]
        values["jobs2_vs_jobs1"] = d["critbench_jobs2"]["median_rate"] / jobs1
    m = results.get("memory")
    if m:
        values["rss_large_mb"] = m["large"]["median_peak_rss_mb"]
        values["rss_large_vs_small"] = m["large"]["median_peak_rss_mb"] / m["small"]["median_peak_rss_mb"]
    i = results.get("isolation")
    if i:
        modes = i["modes"]
        values["isolated_vs_in_process"] = 100 * modes["isolated"]["median_rate"] / modes["in_process"]["median_rate"]
        # Runs before the two forms named the pipelined form's row after its version, 5.
        command = modes.get("command_pipelined") or modes.get("command_v5")
        if command:
            values["command_critiques_per_s"] = command["median_rate"]
    w = results.get("writer")
    if w and w.get("best_pipelined"):
        values["writer_pipelined_vs_scripted"] = (100 * w["modes"][w["best_pipelined"]]["median_rate"]
                                                  / w["modes"]["scripted"]["median_rate"])
    metered = results.get("metered")
    if metered and metered.get("runs"):
        row = metered["runs"][metered["median_run"]]
        values["metered_fraction_of_ideal"] = row["fraction_of_ideal"]
        values["metered_rss_mb"] = row["critbench_peak_rss_mb"]
    s = results.get("server")
    if s:
        values["server_fraction_of_ideal"] = 100 * s["median_steady_rate"] / s["ideal_rate"]
    sweep = {run["concurrency"]: run for run in results.get("sweep", {}).get("runs", [])}
    if 1024 in sweep:
        values["sweep_1024_fraction_of_ideal"] = sweep[1024]["fraction_of_ideal"]
        values["sweep_1024_rss_mb"] = sweep[1024]["peak_rss_mb"]
        values["sweep_1024_cpu_ms_per_request"] = sweep[1024]["cpu_ms_per_request"]
    if results.get("sweep"):
        values["sweep_4096_runs"] = 1 if 4096 in sweep else 0
    view = results.get("view")
    if view:
        values["view_front_page_s"] = max(view["front_page_s"])
        values["view_task_page_s"] = max(view["task_page_s"])
        values["view_rss_mb"] = view["peak_rss_mb"]
    table = []
    for key, what, unit, op, threshold in TARGETS:
        value = values.get(key)
        met = None
        if value is not None:
            met = {">=": value >= threshold, "<": value < threshold, "<=": value <= threshold}[op]
        table.append({"key": key, "what": what.format(**vars(args)), "unit": unit, "op": op, "target": threshold, "value": value,
                      "met": met})
    return table


def number(value, digits=0):
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def median_stages(runs):
    """Each stage's median CPU s over `runs` (a stage missing from a run counts 0 there)."""
    stages = []
    for run in runs:
        stages += [stage for stage in run.get("threads", {}) if stage not in stages]
    return {stage: statistics.median(run.get("threads", {}).get(stage, 0.0) for run in runs) for stage in stages}


def cpu_by_stage(results):
    """Section 7: where each timed critbench's CPU went, thread by thread: what a second core
    can take (the loop workers) and what stays serial (the reader, the sink on the main thread)."""
    rows = []
    d = results.get("distinct")
    if d:
        rows += [(f"section 1, `--jobs {jobs}`", d[f"critbench_jobs{jobs}"]["runs"], d["critiques"], "critique")
                 for jobs in (1, 2)]
    for mode in results.get("isolation", {}).get("modes", {}).values():
        rows.append((f"section 6, {mode['label']}", mode["runs"], mode["critiques"], "critique"))
    for mode in results.get("writer", {}).get("modes", {}).values():
        rows.append((f"section 6b, {mode['label']}", mode["runs"], mode["critiques"], "critique"))
    for run in results.get("sweep", {}).get("runs", []):
        rows.append((f"section 5b, {run['concurrency']:,} in flight", [run], run["requests"], "request"))
    metered = results.get("metered")
    if metered and metered.get("runs"):
        run = metered["runs"][metered["median_run"]]
        rows.append((f"section 6c, the metered endpoint, {run['in_flight']:,} in flight", [run], run["requests"],
                     "request"))
    rows = [row for row in rows if any(run.get("threads") for run in row[1])]
    if not rows:
        return []
    stages = []
    for _, runs, _, _ in rows:
        stages += [stage for stage in median_stages(runs) if stage not in stages]
    lines = [
        "",
        "## 7. Where the CPU goes",
        "",
        "Each timed critbench's CPU (user + sys) by thread, read from `/proc/PID/task/*/stat` every"
        f" {THREAD_SAMPLE_S * 1000:.0f} ms while it ran (medians over the runs, CPU s, then µs per critique or per"
        " request). critbench names its threads: the dataset reader, the loop workers (`--jobs` of them: the"
        " loops, critiques and policy), the model client's tokio threads, the critic pipes (their readers, and the"
        " drivers, which write the requests queued for a critic's process and hand out its"
        " answers); the main thread is the sink (rows into Parquet columns, encoding, writing) and, after the loops, the summaries"
        " and reports; child processes are the critics and writers run apart. Only the loop workers' share is split by"
        " `--jobs`: the rest bounds what a second core can gain.",
        "",
        "| run | " + " | ".join(stages) + " | µs per unit |",
        "|---|" + "---:|" * (len(stages) + 1),
    ]
    for label, runs, units, unit in rows:
        median = median_stages(runs)
        cells = [f"{median[stage]:.2f}" if stage in median else "—" for stage in stages]
        total = sum(median.values())
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {total * 1e6 / max(units, 1):,.1f} per {unit} |")
    return lines


def unmet_bounds(results):
    """For each target not met, what the same runs measured of its bound: the CPU the target would
    need against what the process spent, thread by thread (section 7). Which functions that CPU
    goes to is a profile's to say: docs/performance.md gives the last ones."""
    unmet = {row["key"]: row for row in results["targets"] if row["met"] is False}
    cores = results["machine"]["cores"]
    lines = []
    # The targets given a paragraph of their own; the others get a line saying there is none.
    explained = set()
    d = results.get("distinct")
    engine = [key for key in ("critiques_per_s_jobs1", "vs_langgraph", "vs_plain_python", "jobs2_vs_jobs1") if key in unmet]
    if d and engine:
        one, two = d["critbench_jobs1"], d["critbench_jobs2"]
        threads = median_stages(one["runs"])
        split = ", ".join(f"{stage} {cpu:.2f} s" for stage, cpu in threads.items())
        per = one["median_cpu_s"] * 1e6 / d["critiques"]
        floor = one["median_cpu_s"] / cores
        text = (f"**{'; '.join(unmet[key]['what'] for key in engine)}.** critbench `--jobs 1` spent"
                f" {one['median_cpu_s']:.2f} CPU s ({per:.1f} µs per critique: {split}) in {one['median_wall_s']:.2f} s,"
                f" so its threads already kept {one['median_cpu_s'] / one['median_wall_s']:.1f} cores busy, and"
                f" {cores} cores cannot run that CPU in less than {floor:.2f} s.")
        needs = []
        for key, peer in (("vs_langgraph", "LangGraph"), ("vs_plain_python", "the plain Python loop")):
            if key in unmet:
                row = unmet[key]
                needs.append(f"{row['target']:g}× {peer} would need {one['median_wall_s'] * row['value'] / row['target']:.2f} s")
        if "jobs2_vs_jobs1" in unmet:
            row = unmet["jobs2_vs_jobs1"]
            needs.append(f"{row['target']:g}× `--jobs 1` would need `--jobs 2` to take"
                         f" {two['median_wall_s'] * row['value'] / row['target']:.2f} s, and it spent"
                         f" {two['median_cpu_s']:.2f} CPU s (no less than {two['median_cpu_s'] / cores:.2f} s on {cores}"
                         f" cores; it took {two['median_wall_s']:.2f} s)")
        if needs:
            text += " " + "; ".join(needs) + "."
        lines += ["", text + " What bounds these is the CPU per critique, not where it runs."]
        explained.update(engine)
    sweep = {run["concurrency"]: run for run in results.get("sweep", {}).get("runs", [])}
    if "sweep_1024_cpu_ms_per_request" in unmet and 1024 in sweep:
        run = sweep[1024]
        threads = run.get("threads", {})
        split = ", ".join(f"{stage} {cpu * 1e6 / run['requests']:.0f} µs" for stage, cpu in threads.items())
        unseen = run["cpu_ms_per_request"] * 1000 - sum(threads.values()) * 1e6 / run["requests"]
        lines += ["", f"**{unmet['sweep_1024_cpu_ms_per_request']['what']}.** {run['cpu_ms_per_request'] * 1000:.0f} µs"
                      f" per request, by thread: {split}"
                      + (f", and {unseen:.0f} µs in threads too short-lived for the sampler" if unseen >= 1 else "")
                      + f"; the target is {unmet['sweep_1024_cpu_ms_per_request']['target'] * 1000:g} µs."]
        explained.add("sweep_1024_cpu_ms_per_request")
    modes = results.get("isolation", {}).get("modes", {})
    for key, mode in (("isolated_vs_in_process", "isolated"), ("command_critiques_per_s", "command_pipelined")):
        if key not in unmet or mode not in modes:
            continue
        run, row = modes[mode], unmet[key]
        threads = median_stages(run["runs"])
        split = ", ".join(f"{stage} {cpu * 1e6 / run['critiques']:.1f} µs" for stage, cpu in threads.items())
        busy = statistics.median(r.get("machine_busy_pct", 0.0) for r in run["runs"])
        text = (f"**{row['what']}.** {run['label']}: {run['median_cpu_s']:.2f} CPU s in {run['median_wall_s']:.2f} s"
                f" ({run['median_cpu_s'] * 1e6 / run['critiques']:.1f} µs per critique, of it"
                f" {run['median_sys_s'] * 1e6 / run['critiques']:.1f} µs in the kernel: {split}); the machine was"
                f" {busy:.0f}% busy over the run.")
        if mode == "isolated" and "in_process" in modes:
            base = modes["in_process"]
            text += (f" The in-process run spent {base['median_cpu_s'] * 1e6 / base['critiques']:.1f} µs per critique"
                     f" ({base['median_sys_s'] * 1e6 / base['critiques']:.1f} µs in the kernel).")
        lines += ["", text]
        explained.add(key)
    writer = results.get("writer", {})
    if "writer_pipelined_vs_scripted" in unmet and writer.get("best_pipelined"):
        row = unmet["writer_pipelined_vs_scripted"]
        best, base = writer["modes"][writer["best_pipelined"]], writer["modes"]["scripted"]
        threads = median_stages(best["runs"])
        child = threads.get(CHILDREN, 0.0)
        split = ", ".join(f"{stage} {cpu * 1e6 / best['critiques']:.1f} µs" for stage, cpu in threads.items())
        need = base["median_wall_s"] * 100 / row["target"]
        own = best["median_cpu_s"] - child
        text = (f"**{row['what']}.** {best['label']}: {best['median_wall_s']:.2f} s against the scripted backend's"
                f" {base['median_wall_s']:.2f} s, so the target needs {need:.2f} s. It spent {best['median_cpu_s']:.2f}"
                f" CPU s ({best['median_cpu_s'] * 1e6 / best['critiques']:.1f} µs a request: {split}), which {cores}"
                f" cores cannot run in less than {best['median_cpu_s'] / cores:.2f} s; the writer alone spent"
                f" {child:.2f} s on its one core ({child * 1e6 / best['critiques']:.1f} µs a request), and critbench"
                f" {own * 1e6 / best['critiques']:.1f} µs a request against the scripted run's"
                f" {base['median_cpu_s'] * 1e6 / base['critiques']:.1f} µs.")
        lazy = writer["modes"].get("writer_pipelined_lazy")
        if lazy:
            lazy_child = median_stages(lazy["runs"]).get(CHILDREN, 0.0)
            text += (f" Leaving the task unparsed (`--lazy`) takes the writer to {lazy_child:.2f} s and the run to"
                     f" {lazy['median_wall_s']:.2f} s ({100 * lazy['median_rate'] / base['median_rate']:.0f}% of"
                     " scripted).")
        lines += ["", text]
        explained.add("writer_pipelined_vs_scripted")
    metered = results.get("metered")
    keys = [key for key in ("metered_fraction_of_ideal", "metered_rss_mb") if key in unmet]
    if keys and metered and metered.get("runs"):
        run = metered["runs"][metered["median_run"]]
        per = 1e6 / max(run["requests"], 1)
        threads = run.get("threads", {})
        split = ", ".join(f"{stage} {cpu * per:.0f} µs" for stage, cpu in threads.items())
        server = run.get("server_cpu_s") or 0.0
        total = run["cpu_s"] + server
        need = total * run["ideal_rate"] * 0.85 / max(run["requests"], 1)
        lines += ["", f"**{'; '.join(unmet[key]['what'] for key in keys)}.** {run['steady_rate']:,.0f} requests/s"
                      f" steady, {run['mean_in_flight']:,.0f} in flight on average of {run['max_in_flight']:,} at most;"
                      f" per request, by thread: {split}; the bench server {server * per:.0f} µs. At"
                      f" {0.85 * run['ideal_rate']:,.0f} requests/s those {total * per:.0f} µs are {need:.2f} cores"
                      f" of {cores}; the machine was {run['machine_busy_pct'] or 0:.0f}% busy over the run."]
        explained.update(keys)
    for key, row in unmet.items():
        if key not in explained:
            lines += ["", f"**{row['what']}.** This bench measures no bound for it beyond the figures of its section."]
    if not lines:
        return []
    return ["", "## What bounds the targets not met", "",
            "From the runs above; docs/performance.md names the functions the last profiles found."] + lines


def markdown(results, args):
    m = results["machine"]
    lines = [
        "# Benchmarks",
        "",
        "Written by `just bench` (or `bash scripts/bench/run.sh`): `scripts/bench/bench.py` — do not edit by hand;",
        "`docs/benchmarks.json` holds the same figures and every run. Each figure is the median of "
        f"{args.runs} run(s) unless it says otherwise; every time is a **whole process**, from spawn to exit"
        " (dataset reading, every loop, Parquet written, summaries and reports included), measured with"
        " `/usr/bin/time` (CPU = user + sys, peak RSS = max resident set size).",
        "",
        f"Run {results['finished_at']} on commit `{m['git_commit']}`; the whole bench took "
        f"**{results['bench_seconds'] / 60:.1f} minutes**"
        + (" (within its 15-minute budget)." if results["bench_seconds"] <= BUDGET_S else
           " — **over its 15-minute budget**."),
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
        f"| CPU | {m['cpu']}, {m['cores']} cores |",
        f"| memory | {m['memory_gb']} GB |",
        f"| OS, kernel | {m['os']}, {m['kernel']} |",
        f"| load average (1 min) | {m['load_average_at_start']:.2f} at the start; {results['load_range'][0]:.2f} to"
        f" {results['load_range'][1]:.2f} before the timed processes (the machine is shared) |",
        f"| Rust | {m['rustc']}; {m['critbench']} (release build) |",
        f"| Python | {m['python']}; " + ", ".join(f"{k} {v}" for k, v in m["packages"].items()) + " |",
        "",
        "## Targets",
        "",
        "| target | wanted | measured (median) | met |",
        "|---|---|---:|---|",
    ]
    for row in results["targets"]:
        unit = row["unit"]
        digits = 2 if unit == "×" and row["value"] is not None and row["value"] < 10 else 0
        if row["key"] == "rss_large_vs_small" or unit == "ms":
            digits = 2
        if unit == "s":
            digits = 3
        wanted = f"{row['op'].replace('>=', '≥').replace('<=', '≤')} {row['target']:,} {unit}"
        measured = f"{number(row['value'], digits)} {unit}" if row["value"] is not None else "not measured"
        met = "—" if row["met"] is None else ("**met**" if row["met"] else "not met")
        lines.append(f"| {row['what']} | {wanted} | {measured} | {met} |")
    lines += [
        "",
        "Outputs that must not change with speed (the same outcomes and trajectories whatever `--jobs`, the",
        "concurrency or the isolation mode) are held by the test suite (e.g. `crates/cli/tests/cli/same_outputs.rs`), not here.",
    ]
    for failure in results["failures"]:
        lines += ["", f"**The `{failure['section']}` section failed**, so its figures are missing:", "", "```",
                  failure["error"][-2000:], "```"]

    d = results.get("distinct")
    if d:
        a = results["agreement"]
        lg = d["langgraph"]
        lines += [
            "",
            f"## 1–2. {d['tasks']:,} distinct scripted tasks: critbench and its peers",
            "",
            f"{d['tasks']:,} tasks of about {d['dataset_bytes'] / d['tasks']:,.0f} bytes each "
            f"({d['dataset_bytes'] / 1e6:,.0f} MB of JSONL; `scripts/bench/make_tasks.py scripted`, seed {args.seed}),"
            " each with its own drafts and critiques; `experiments/bench-distinct.toml`: scripted backend, scripted"
            " critic through the C ABI, arms feedback and no-feedback, 1 epoch, pass_score 8, max_revisions 3."
            f" {d['loops']:,} loops, {d['critiques']:,} critiques (= rounds); exits "
            + ", ".join(f"{k} {v:,}" for k, v in sorted(d["exits"].items())) + ".",
            "",
            "The peers (`scripts/bench/peers.py`, one process each) run the same loop: drafts from the task's"
            " `drafts`, the critique from its `critiques` validated as critbench's host validates it, the decision"
            " rule of docs/REFERENCE.md and its best-draft rule; they read the same JSONL with `json` and write one row per"
            " critique and one per loop to Parquet with pyarrow (ZSTD level 3, as critbench), in batches. The"
            " LangGraph version is a `StateGraph`: generator → critic → conditional edge → reviser → critic, the"
            " trajectory kept in the state under an `operator.add` reducer, one `invoke` per loop.",
            "",
            f"Before timing, the bench checked that critbench, the plain Python loop and the LangGraph graph give"
            f" each of the first {a['tasks']:,} tasks' {a['loops']:,} loops the same rounds, exit reason, pass,"
            f" first/last/best score and best round ({a['rounds']:,} rounds; exits "
            + ", ".join(f"{k} {v:,}" for k, v in sorted(a["exits"].items()))
            + "); then every timed run's outcomes were checked the same way against critbench's first run: every"
            f" task for critbench and the plain loop, the first {lg['tasks']:,} for LangGraph.",
            "",
            "| | tasks | wall s | CPU s (user + sys) | peak RSS MB | rounds/s (whole process) | critbench `--jobs 1` ÷ this"
            " | rounds per CPU s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        jobs1 = d["critbench_jobs1"]["median_rate"]
        for label, key, tasks in [
            ("critbench `--jobs 1`", "critbench_jobs1", d["tasks"]),
            ("critbench `--jobs 2`", "critbench_jobs2", d["tasks"]),
            ("plain Python loop (1 process)", "plain_python", d["tasks"]),
            ("LangGraph StateGraph (1 process)", "langgraph", lg["tasks"]),
        ]:
            s = d[key]
            ratio = "" if key == "critbench_jobs1" else f"{jobs1 / s['median_rate']:,.2f}×"
            lines.append(
                f"| {label} | {tasks:,} | {s['median_wall_s']:.2f} | {s['median_cpu_s']:.2f} "
                f"({s['median_user_s']:.2f} + {s['median_sys_s']:.2f}) | {s['median_peak_rss_mb']:,.0f} | "
                f"{s['median_rate']:,.0f} | {ratio} | {s['median_cpu_rate']:,.0f} |"
            )
        lines += [
            "",
            f"LangGraph runs {lg['tasks']:,} tasks ({lg['loops']:,} loops, {lg['rounds']:,} rounds), the first of the"
            " same file, because it is too slow for the whole set within the bench's time; its rate is rounds per"
            " second of its whole process, as for the others. Rounds per CPU second (user + sys) are less"
            " sensitive to what else runs on the machine than wall-clock rates, and show what `--jobs 2` costs."
            " critbench's own run clock (start to both Parquet files"
            f" closed, without summaries): {d['critbench_jobs1']['median_run_clock_s']:.2f} s with `--jobs 1`,"
            f" {d['critbench_jobs2']['median_run_clock_s']:.2f} s with `--jobs 2`.",
        ]

    s = results.get("sim_rubric")
    if s:
        lines += [
            "",
            f"## 3. `sim` backend + `rubric` critic, {s['tasks']:,} distinct paper tasks",
            "",
            "`experiments/bench-sim.toml` (arms feedback and no-feedback, 1 epoch, pass_score 8, max_revisions 3,"
            " `--jobs 1`) on tasks built like `datasets/papers.jsonl` (`scripts/bench/make_tasks.py papers`):"
            f" {s['loops']:,} loops, {s['critiques']:,} critiques in {s['median_wall_s']:.2f} s whole process:"
            f" **{s['median_rate']:,.0f} critiques/s**, CPU {s['median_cpu_s']:.2f} s, peak RSS"
            f" {s['median_peak_rss_mb']:,.0f} MB.",
        ]

    mem = results.get("memory")
    if mem:
        small, large = mem["small"], mem["large"]
        lines += [
            "",
            "## 4. Peak memory",
            "",
            "| tasks | JSONL | peak RSS MB | wall s | critiques/s | runs |",
            "|---:|---:|---:|---:|---:|---:|",
            f"| {small['tasks']:,} | {small['tasks'] * d['dataset_bytes'] / d['tasks'] / 1e6 if d else 0:,.0f} MB |"
            f" {small['median_peak_rss_mb']:,.0f} | {small['median_wall_s']:.2f} | {small['median_rate']:,.0f} |"
            f" {len(small['runs'])} |",
            f"| {large['tasks']:,} | {large['dataset_bytes'] / 1e6:,.0f} MB | {large['median_peak_rss_mb']:,.0f} |"
            f" {large['median_wall_s']:.2f} | {large['median_rate']:,.0f} | {len(large['runs'])} |",
            "",
            f"Same experiment as section 1, `--jobs 1`. The {large['tasks']:,}-task file is generated for the"
            " measurement and deleted after it"
            + (" (one run: it is the longest step of the bench)." if len(large["runs"]) == 1 else "."),
        ]

    srv = results.get("server")
    if srv:
        lines += [
            "",
            "## 5. Model-server mode",
            "",
            f"`crates/bench-server` answers every chat request after a fixed {srv['latency_ms']} ms on 127.0.0.1"
            f" (keep-alive, one thread per connection). `experiments/bench-server.toml`: the `openai` backend at"
            f" `concurrency = {srv['concurrency']}` (the loops are futures on a worker per core), the scripted critic,"
            f" `--no-cache`, the first {srv['tasks']:,} tasks of section 1's file, arms feedback and no-feedback.",
            "",
            "| | median |",
            "|---|---:|",
            f"| requests (server count = critbench's count, no retries) | {srv['median_requests']:,.0f} |",
            f"| in flight at once (server): most, time-weighted mean | {srv['median_max_in_flight']:.0f},"
            f" {srv['median_mean_in_flight']:.1f} |",
            f"| requests/s, steady state (middle 80% of the answers) | **{srv['median_steady_rate']:,.0f}**"
            f" of {srv['ideal_rate']:,.0f} ideal ({100 * srv['median_steady_rate'] / srv['ideal_rate']:.0f}%) |",
            f"| requests/s, first request to last answer | {srv['median_server_rate']:,.0f} |",
            f"| requests/s over the whole process (start-up and summaries included) | {srv['median_whole_rate']:,.0f} |",
            f"| client CPU per request (user + sys of critbench / requests) | {srv['median_cpu_ms_per_request']:.3f} ms |",
            f"| wall s, peak RSS | {srv['median_wall_s']:.2f} s, {srv['median_peak_rss_mb']:,.0f} MB |",
            "",
            "The target uses the steady state: the first and last tenth of the answers are left out, where fewer"
            " than 64 loops can be in flight (the ramp-up, and the last loops draining). Identical requests within"
            " a run are answered once even with `--no-cache` (so the arms' shared first drafts are one request):"
            " the request count is what reached the server.",
        ]

    sweep = results.get("sweep")
    if sweep:
        lines += [
            "",
            "## 5b. Concurrency sweep",
            "",
            f"The same experiment at each `concurrency`, the server answering after {sweep['latency_ms']} ms,"
            f" {sweep['tasks_per_slot']} tasks per slot (capped at section 1's file). The loops are futures: a"
            " worker per core drives every loop of its chunks, so a request in flight costs a future, not a thread."
            " Each run reads a file of exactly its tasks. One run each, but"
            f" {sweep.get('runs_at_1024', 1)} at 1,024 in flight (whose CPU per request is a target): the median"
            " run by CPU per request is the row, the runs' range in brackets."
            " Steady state: the middle 80% of the answers. CPU: user + sys of critbench over the"
            " requests the server answered. Machine busy: every core, busy with anything (the server, other"
            " users, critbench), over the run, from /proc/stat; the load average is the 1-minute one before and"
            " after.",
            "",
            "| in flight | tasks | requests | most in flight (server) | steady req/s | ideal | % of ideal |"
            " peak RSS MB | CPU ms/request | threads (`jobs`) | machine busy | load before → after |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        def cpu_runs(run):
            runs = run.get("cpu_ms_per_request_runs", [])
            spread = f" ({min(runs):.3f}–{max(runs):.3f})" if len(runs) > 1 else ""
            return f"{run['cpu_ms_per_request']:.3f}{spread}"

        for run in sweep["runs"]:
            busy = "—" if run["machine_busy_pct"] is None else f"{run['machine_busy_pct']:.0f}%"
            lines.append(
                f"| {run['concurrency']:,} | {run['tasks']:,} | {run['requests']:,} | {run['max_in_flight']:,} |"
                f" {run['steady_rate']:,.0f} | {run['ideal_rate']:,.0f} | {run['fraction_of_ideal']:.0f}% |"
                f" {run['peak_rss_mb']:,.0f} | {cpu_runs(run)} | {run['jobs']} | {busy} |"
                f" {run['load_average_before']:.1f} → {run['load_average_after']:.1f} |"
            )

    iso = results.get("isolation")
    if iso:
        lines += [
            "",
            "## 6. Isolated and command critics",
            "",
            f"The first {iso['tasks']:,} tasks of section 1's file, `experiments/bench-distinct.toml`, `--jobs 1`,"
            " the scripted critic run these ways: in-process through the C ABI; `--isolate-plugins` (`critbench"
            " plugin-worker`, the pipelined form: a worker advances its loops in two groups of up to 256, one group's"
            " requests out to the child in one write while the other's loops advance, the next group's written as soon"
            " as it is built, and each task is sent once for its loops in flight); as a"
            " Python command critic computing the same critique (`scripts/bench/scripted_critic.py`, the pipelined"
            " form: each task sent once for its two arms' loops, the rounds written behind the open), at `--jobs 1` and"
            " `--jobs 2`, and the same critic speaking the simple form (one request per pipe round trip). Every one of"
            " those runs' outcomes equal the"
            " in-process run's. A trivial Python critic (`scripts/bench/trivial_critic.py`: `json.loads` of every"
            " message, `json.dumps` of every answer, the score from the draft's length) runs its own loops. CPU counts"
            " critbench and its children. The load average is the 1-minute load before each run: the machine is"
            " shared, so compare rates per CPU second too.",
            "",
            "| | wall s | CPU s (user + sys) | peak RSS MB | critiques/s | % of in-process | critiques per CPU s |"
            " load before |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        base = iso["modes"]["in_process"]["median_rate"]
        for mode in iso["modes"].values():
            loads = [run["load_average_before"] for run in mode["runs"]]
            lines.append(
                f"| {mode['label']} | {mode['median_wall_s']:.2f} | {mode['median_cpu_s']:.2f}"
                f" ({mode['median_user_s']:.2f} + {mode['median_sys_s']:.2f}) | {mode['median_peak_rss_mb']:,.0f} |"
                f" {mode['median_rate']:,.0f} | {100 * mode['median_rate'] / base:.0f}% | {mode['median_cpu_rate']:,.0f} |"
                f" {min(loads):.1f}–{max(loads):.1f} |"
            )

    wr = results.get("writer")
    if wr:
        pipelined = wr.get("best_pipelined")
        lines += [
            "",
            "## 6b. Writer programs",
            "",
            f"The first {wr['tasks']:,} tasks of section 1's file, `experiments/bench-distinct.toml`, `--jobs 1`, the"
            " scripted critic in process; the drafts from the scripted backend in process, then from trivial Python"
            " writer programs: `scripts/bench/trivial_writer.py` in the simple form (`json.loads` of every request,"
            " `json.dumps` of every answer; one process, one request per pipe round trip), and"
            " `scripts/bench/pipelined_writer.py` in the pipelined form (the same drafts; it reads whatever input is"
            " waiting, parses each request with `json.loads`, and writes the answers to it in one write), one process"
            " (`processes = 1`) at each `in_flight`. The `--lazy` row is the same program reading only the id, the"
            " draft and the task's id of each line: a real writer reads the task's prompt, so it is not a writer's"
            " figure, it shows what parsing the rest of each line costs (critbench sends each task once per process, opened under a key its requests name). The scripted critic answers"
            " each round from the task, so every run's loops stop at the same rounds (checked). The runs alternate"
            " mode by mode. CPU counts critbench and its writer; the writer's own CPU (from /proc, per request"
            " written) is its column.",
            "",
            "| | wall s | CPU s (user + sys) | of it the writer's | peak RSS MB | critiques/s | % of scripted |"
            " critiques per CPU s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        base = wr["modes"]["scripted"]["median_rate"]
        for key, mode in wr["modes"].items():
            writer = median_stages(mode["runs"]).get(CHILDREN) or median_stages(mode["runs"]).get(
                "child processes (critics)")
            writer = (f"{writer:.2f} s ({writer * 1e6 / mode['critiques']:.1f} µs a request)" if writer else "—")
            best = " (the target's row)" if key == pipelined else ""
            lines.append(
                f"| {mode['label']}{best} | {mode['median_wall_s']:.2f} | {mode['median_cpu_s']:.2f}"
                f" ({mode['median_user_s']:.2f} + {mode['median_sys_s']:.2f}) | {writer} |"
                f" {mode['median_peak_rss_mb']:,.0f} | {mode['median_rate']:,.0f} | {100 * mode['median_rate'] / base:.0f}% |"
                f" {mode['median_cpu_rate']:,.0f} |"
            )
        if not pipelined:
            lines += ["", "The pipelined form was not measured in this run: its target row above says not measured."]

    met = results.get("metered")
    if met and met.get("runs"):
        row = met["runs"][met["median_run"]]
        per = 1e6 / max(row["requests"], 1)
        latency = row.get("client_latency_ms") or {}
        waits = "; ".join(f"{role} p50 {figures.get('p50_ms', 0):,.0f} ms, p95 {figures.get('p95_ms', 0):,.0f} ms"
                          for role, figures in sorted(latency.items()))
        runs_note = ("one run" if len(met["runs"]) == 1 else
                     f"{len(met['runs'])} runs, the median by steady rate shown")
        m_ = row.get("metered") or {}
        lines += [
            "",
            "## 6c. The metered endpoint",
            "",
            f"`experiments/bench-metered.toml` on the first {row['tasks']:,} tasks of section 1's file (a file of"
            " exactly those), one arm (feedback), the scripted critic in process, `--no-cache`, `--jobs` every core:"
            " the drafts come from a writer program of the pipelined form (`scripts/bench/metered_writer.py`: one"
            " asyncio event loop, standard library only, HTTP/1.1 keep-alive written and parsed by hand, one"
            " connection per call in flight) that makes one chat call per request to the request's"
            " `model.base_url` with its `model.api_key`; critbench's metered endpoint forwards each call through the"
            f" run's client to `crates/bench-server`, which answers after {met['latency_ms']} ms."
            f" `[writer] in_flight` and `[openai] concurrency` are both {met['in_flight']:,} (the client's AIMD"
            " limit starts at `concurrency` and only falls on 429/503)."
            f" {runs_note[0].upper() + runs_note[1:]}. The server's count, critbench's HTTP requests and the endpoint's calls agree, with"
            " nothing refused, failed or late (checked). Steady state: the middle 80% of the answers.",
            "",
            "| | |",
            "|---|---:|",
            f"| requests (server = critbench's HTTP requests = `openai.metered.calls`) | {row['requests']:,} |",
            f"| `openai.metered` | calls {m_.get('calls', 0):,}, refused_keys {m_.get('refused_keys', 0)},"
            f" refused_requests {m_.get('refused_requests', 0)}, failed {m_.get('failed', 0)}, late {m_.get('late', 0)} |",
            f"| in flight at once (server): most, time-weighted mean | {row['max_in_flight']:,},"
            f" {row['mean_in_flight']:,.1f} |",
            f"| requests/s, steady state | **{row['steady_rate']:,.0f}** of {row['ideal_rate']:,.0f} ideal"
            f" ({row['fraction_of_ideal']:.0f}%) |",
            f"| requests/s, first request to last answer | {row['server_rate']:,.0f} |",
            f"| latency as critbench's client saw it (slot wait + server) | {waits or '—'} |",
            f"| CPU per request: critbench (user + sys) | {row['critbench_cpu_s'] * per:,.0f} µs |",
            "| of it, by thread | " + ", ".join(f"{stage} {cpu * per:,.0f} µs" for stage, cpu in
                                             (row.get("threads") or {}).items() if stage != CHILDREN) + " |",
            f"| CPU per request: the writer (Python) | {row['writer_cpu_s'] * per:,.0f} µs |",
            f"| CPU per request: the bench server | "
            + (f"{row['server_cpu_s'] * per:,.0f} µs |" if row.get("server_cpu_s") is not None else "— |"),
            f"| peak RSS: critbench, the writer | **{row['critbench_peak_rss_mb']:,.0f} MB**,"
            f" {row['writer_peak_rss_mb'] or 0:,.0f} MB |",
            f"| wall s (whole process), machine busy, load before → after | {row['wall_s']:.2f} s,"
            f" {row['machine_busy_pct'] or 0:.0f}%, {row['load_average_before']:.1f} → {row['load_average_after']:.1f} |",
            "",
            "critbench's peak RSS is its own: GNU time's figure is the larger of critbench's and its writer's, so"
            " it is taken from `/proc/PID/status` (VmHWM, read every"
            f" {THREAD_SAMPLE_S * 1000:.0f} ms) when the writer's is as large. The model client's tokio threads"
            " serve the metered endpoint too (each call's HTTP from the writer, its key looked up, its body parsed"
            " and the completion written back) besides the client's own request to the server; \"other threads\" are"
            " the writer's driver thread (requests written to the pipe, answers read). The machine busy figure is"
            " every core over the run, the bench server's and the writer's work included.",
        ]

    lines += cpu_by_stage(results)
    lines += view_section(results)
    lines += unmet_bounds(results)

    r = results.get("repeated")
    if r:
        lines += [
            "",
            "## The earlier benchmark: 36 tasks × 1,000 epochs",
            "",
            f"`experiments/bench-scripted.toml`, `--jobs 1`: {r['loops']:,} loops, {r['critiques']:,} critiques;"
            f" run clock {r['median_run_clock_s']:.2f} s, whole process {r['median_wall_s']:.2f} s"
            f" ({r['median_rate']:,.0f} critiques/s), peak RSS {r['median_peak_rss_mb']:,.0f} MB.",
        ]

    history = Path(__file__).with_name("history.md")
    if history.is_file():
        lines += ["", history.read_text().rstrip("\n")]

    lines += [
        "",
        "## Reproduce",
        "",
        "```sh",
        "just bench                 # or, where just is not installed:",
        "bash scripts/bench/run.sh  # builds the release binaries, makes ~/.cache/critbench/bench-venv, runs the bench",
        "```",
        "",
        "`bash scripts/bench/run.sh --quick` runs every step on small sizes (a minute) and writes to a temporary"
        " directory instead of docs/.",
        "",
    ]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--critbench", required=True, help="the release critbench binary")
    parser.add_argument("--server", required=True, help="the critbench-bench-server binary")
    parser.add_argument("--md", required=True, help="markdown file to write")
    parser.add_argument("--json", required=True, help="JSON file to write")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=200_000)
    parser.add_argument("--langgraph-tasks", type=int, default=5_000)
    parser.add_argument("--check-tasks", type=int, default=2_000,
                        help="tasks of the agreement check run before any timing")
    parser.add_argument("--sim-tasks", type=int, default=100_000)
    parser.add_argument("--rss-small", type=int, default=100_000)
    parser.add_argument("--rss-large", type=int, default=1_000_000)
    parser.add_argument("--rss-large-runs", type=int, default=1)
    parser.add_argument("--server-tasks", type=int, default=1_500)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=64,
                        help="must match `concurrency` in experiments/bench-server.toml")
    parser.add_argument("--isolation-tasks", type=int, default=50_000)
    parser.add_argument("--writer-tasks", type=int, default=50_000)
    parser.add_argument("--writer-in-flight", default="256,1024",
                        help="`[writer] in_flight` of the pipelined writer's rows, comma-separated")
    parser.add_argument("--metered-tasks", type=int, default=40_000,
                        help="tasks of the metered endpoint's run (one arm: about 3 requests a task)")
    parser.add_argument("--metered-in-flight", type=int, default=1024,
                        help="`[writer] in_flight` and `[openai] concurrency` of the metered endpoint's run")
    parser.add_argument("--metered-latency-ms", type=int, default=200)
    parser.add_argument("--metered-runs", type=int, default=1)
    parser.add_argument("--sweep", default="64,256,1024,4096", help="concurrencies of the sweep, comma-separated")
    parser.add_argument("--sweep-latency-ms", type=int, default=200)
    parser.add_argument("--sweep-tasks-per-slot", type=int, default=6)
    parser.add_argument("--sweep-runs", type=int, default=3,
                        help="runs at 1,024 in flight, whose CPU per request is a target; the median is reported")
    parser.add_argument("--baseline-critbench", default=None,
                        help="another critbench binary (e.g. a build of main) timed isolated beside this one")
    parser.add_argument("--view-tasks", type=int, default=500_000,
                        help="scripted tasks of the run `critbench view` serves (two arms: twice as many loops)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", default="distinct,sim,server,sweep,isolation,writer,metered,repeated,memory,view",
                        help="comma-separated sections to run (default: all): distinct, sim, server, sweep, isolation,"
                             " writer, metered, repeated, memory, view")
    parser.add_argument("--merge-into", default=None, metavar="JSON",
                        help="keep the results of an earlier run (its --json) and replace only the sections run now;"
                             " writes --json and --md from the merged results")
    parser.add_argument("--render", default=None, metavar="JSON",
                        help="write --md again from the results of an earlier run (its --json), measuring nothing")
    parser.add_argument("--work", default=None, help="directory for the generated files (default: a new temporary one)")
    args = parser.parse_args()
    args.critbench = os.path.abspath(args.critbench)
    args.server = os.path.abspath(args.server)

    if args.render:
        with open(args.render, encoding="utf-8") as handle:
            results = json.load(handle)
        settings = argparse.Namespace(**results["settings"])
        with open(args.md, "w", encoding="utf-8") as handle:
            handle.write(markdown(results, settings))
        return 0
    for path, what in [(args.critbench, "--critbench"), (args.server, "--server"), ("/usr/bin/time", "GNU time")]:
        if not os.access(path, os.X_OK):
            print(f"{what}: {path} is not an executable file", file=sys.stderr)
            return 2
    work = tempfile.mkdtemp(prefix="critbench-bench-", dir=args.work)
    results = {"machine": machine_info(args), "failures": [], "settings": {k: v for k, v in vars(args).items()
                                                            if k not in ("md", "json", "work")}}
    progress(f"machine: {results['machine']['cpu']}, {results['machine']['cores']} cores; work dir {work}")
    try:
        sections = set(args.only.split(","))
        unknown = sections - {"distinct", "sim", "server", "sweep", "isolation", "writer", "metered", "repeated",
                              "memory", "view"}
        if unknown:
            raise BenchError(f"--only: unknown section(s) {', '.join(sorted(unknown))}")
        tasks_file = os.path.join(work, f"scripted-{args.tasks}.jsonl")
        if sections & {"distinct", "server", "sweep", "isolation", "writer", "metered", "memory"}:
            make_tasks("scripted", args.tasks, tasks_file, args.seed)
        if "distinct" in sections:
            # A disagreement between the three loops ends the bench: nothing after it would mean much.
            progress("1-2. distinct scripted tasks: critbench, plain Python, LangGraph")
            bench_distinct(args, work, tasks_file, results)
        # A later section that fails is reported in the results, and the others still run.
        for section, title, step in [
            ("sim", "3. sim + rubric", lambda: bench_sim(args, work, results)),
            ("server", "5. model-server mode", lambda: bench_server(args, work, tasks_file, results)),
            ("sweep", "5b. concurrency sweep", lambda: bench_sweep(args, work, tasks_file, results)),
            ("isolation", "6. isolated and command critics", lambda: bench_isolation(args, work, tasks_file, results)),
            ("writer", "6b. writer programs", lambda: bench_writer(args, work, tasks_file, results)),
            ("metered", "6c. the metered endpoint", lambda: bench_metered(args, work, tasks_file, results)),
            ("repeated", "the earlier benchmark (36 tasks × 1,000 epochs)", lambda: bench_repeated(args, work, results)),
            ("memory", "4. peak memory", lambda: bench_memory(args, work, tasks_file, results)),
            ("view", "8. critbench view", lambda: bench_view(args, work, results)),
        ]:
            if section in sections:
                progress(title)
                try:
                    step()
                except BenchError as error:
                    progress(f"FAILED ({section}): {error}")
                    results["failures"].append({"section": section, "error": str(error)})
    except BenchError as error:
        progress(f"FAILED: {error}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.merge_into:
        # An earlier run's figures, the sections measured now in their place; its date, commit and
        # duration stay those of the earlier run, and each section measured now says when it was.
        with open(args.merge_into, encoding="utf-8") as handle:
            earlier = json.load(handle)
        for section in sections:
            if section in results:
                results[section]["measured"] = {"at": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
                                                "commit": results["machine"]["git_commit"]}
                earlier[section] = results[section]
        earlier["settings"].update({k: v for k, v in results["settings"].items() if k not in earlier["settings"]})
        earlier["failures"] = [f for f in earlier.get("failures", []) if f["section"] not in sections] + results["failures"]
        args = argparse.Namespace(**{**earlier["settings"], **{k: getattr(args, k) for k in ("md", "json")}})
        results = earlier
        results["targets"] = measured_targets(results, args)
    else:
        results["bench_seconds"] = time.monotonic() - STARTED
        results["finished_at"] = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    results["targets"] = measured_targets(results, args)
    loads = [run["load_average_before"] for run in all_runs(results)]
    results["load_range"] = [min(loads), max(loads)] if loads else [0.0, 0.0]
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=2)
        handle.write("\n")
    text = markdown(results, args)
    with open(args.md, "w", encoding="utf-8") as handle:
        handle.write(text)
    progress(f"wrote {args.md} and {args.json} in {results['bench_seconds'] / 60:.1f} minutes")
    for row in results["targets"]:
        status = "—" if row["met"] is None else ("met" if row["met"] else "NOT MET")
        value = "not measured" if row["value"] is None else f"{row['value']:,.2f} {row['unit']}"
        print(f"{status:>8}  {row['what']}: {value} (wanted {row['op']} {row['target']:,})")
    if results["failures"]:
        for failure in results["failures"]:
            print(f"  FAILED  {failure['section']}: {failure['error'].splitlines()[0]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
