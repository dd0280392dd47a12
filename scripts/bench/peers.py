#!/usr/bin/env python3
"""The benchmark's critique→revise loop written the way a Python user would: a LangGraph
StateGraph, or a plain loop. Both run critbench's scripted loop exactly:

- generator: round 0's draft is `drafts[0]`; reviser: round k's draft is `drafts[min(k, len-1)]`
  (the `scripted` backend, crates/engine/src/run/backend.rs); the feedback arm hands the critique to
  the reviser, the no-feedback arm does not (the scripted reviser ignores it either way);
- critic: round k gets `critiques[min(k, len-1)]` (plugins/scripted), validated as the host does
  (crates/core/src/critique.rs): the score, or the mean of the dimensions when there is none, must
  lie in the critic's range 0–10; an invalid critique is retried (3 attempts in all) and then
  recorded as a failure scoring 0 with the issue "critique unavailable";
- the decision rule of docs/REFERENCE.md (crates/core/src/policy.rs) with pass_score 8, max_revisions 3,
  stall on, plateau off; its best-draft rule (crates/core/src/best.rs).

Each loop writes one row per critique to trajectories.parquet and one row to outcomes.parquet with
pyarrow, in batches, ZSTD level 3 as critbench writes them.

    python peers.py {plain,langgraph} TASKS.jsonl OUT_DIR [--limit N]

It prints one line: `N loops, M critiques (rounds) in S s (R rounds/s)`, the clock running from
before the file is opened to after both Parquet files are closed.
"""

import argparse
import json
import operator
import os
import sys
import time
from typing import Annotated, Any, Optional, TypedDict

import pyarrow as pa
import pyarrow.parquet as pq

ARMS = ("feedback", "no-feedback")
PASS_SCORE = 8.0
MAX_REVISIONS = 3
STALL = True
PLATEAU_EPS = 0.0
SCORE_MIN, SCORE_MAX = 0.0, 10.0
CRITIC_ATTEMPTS = 3
CONFIG_ID = "p8-r3-stall-e0"
CRITIC = "scripted"
UNAVAILABLE = "critique unavailable"
BATCH_ROWS = 65_536

TRAJECTORY_SCHEMA = pa.schema(
    [
        ("config_id", pa.string()),
        ("arm", pa.string()),
        ("critic", pa.string()),
        ("task_id", pa.string()),
        ("kind", pa.string()),
        ("epoch", pa.int32()),
        ("round", pa.int32()),
        ("revisions", pa.int32()),
        ("score", pa.float64()),
        ("issues", pa.list_(pa.string())),
        ("fatal_issues", pa.list_(pa.string())),
        ("rationale", pa.string()),
        ("critic_passed", pa.bool_()),
        ("passed", pa.bool_()),
        ("decision", pa.string()),
        ("exit_reason", pa.string()),
        ("is_best", pa.bool_()),
        ("best_score", pa.float64()),
        ("draft_chars", pa.int64()),
        ("gen_ms", pa.float64()),
        ("critic_ms", pa.float64()),
        ("critic_attempts", pa.int32()),
        ("critic_error", pa.string()),
    ]
)

OUTCOME_SCHEMA = pa.schema(
    [
        ("config_id", pa.string()),
        ("arm", pa.string()),
        ("critic", pa.string()),
        ("task_id", pa.string()),
        ("kind", pa.string()),
        ("epoch", pa.int32()),
        ("pass_score", pa.float64()),
        ("max_revisions", pa.int32()),
        ("rounds", pa.int32()),
        ("revisions", pa.int32()),
        ("exit_reason", pa.string()),
        ("passed", pa.bool_()),
        ("first_score", pa.float64()),
        ("last_score", pa.float64()),
        ("final_score", pa.float64()),
        ("best_score", pa.float64()),
        ("best_round", pa.int32()),
        ("critic_errors", pa.int32()),
        ("wall_ms", pa.float64()),
    ]
)


# ------------------------------------------------------------------------------------------------
# The loop's parts, shared by both peers


def generate(task):
    drafts = task.get("drafts") or []
    if not drafts:
        raise ValueError(f"task {task.get('id')!r}: field `drafts`: the scripted backend needs at least one draft")
    return drafts[0]


def revise(task, draft, critique, round_):
    drafts = task["drafts"]
    return drafts[min(round_, len(drafts) - 1)]


def critique_of(task, round_):
    """The scripted critic's answer for this round, validated as the host validates a critique.
    Returns (score, fatal, failed, critique fields, attempts, error)."""
    critiques = task.get("critiques") or []
    error = None
    for attempt in range(1, CRITIC_ATTEMPTS + 1):
        if not critiques:
            error = f"task {task.get('id')!r} has no `critiques` for the scripted critic"
            continue
        raw = critiques[min(round_, len(critiques) - 1)]
        if not isinstance(raw, dict):
            error = f"critiques[{min(round_, len(critiques) - 1)}] is not a JSON object"
            continue
        dims = raw.get("dimensions") or {}
        bad = [k for k, v in dims.items() if not (SCORE_MIN <= v <= SCORE_MAX)]
        score = raw.get("score")
        if score is None:
            score = sum(dims.values()) / len(dims) if dims else None
        if bad:
            error = f"dimension `{bad[0]}` is outside the critic's range"
        elif score is None:
            error = "critique has neither `score` nor `dimensions`"
        elif not (SCORE_MIN <= score <= SCORE_MAX):
            error = f"score {score} is outside the critic's range"
        else:
            fatal = list(raw.get("fatal_issues") or [])
            return score, bool(fatal), False, raw, attempt, None
    return SCORE_MIN, False, True, {"issues": [UNAVAILABLE]}, CRITIC_ATTEMPTS, error


def passes(score, fatal, failed):
    return not failed and not fatal and score >= PASS_SCORE


def decide(scores):
    """The decision rule (docs/REFERENCE.md) on the rounds so far: `scores` is [(score, fatal, failed)]. Returns None to revise,
    else the exit reason."""
    score, fatal, failed = scores[-1]
    round_ = len(scores) - 1
    budget_left = round_ < MAX_REVISIONS
    if passes(score, fatal, failed):
        return "pass"
    if fatal:
        return None if budget_left else "budget"
    if STALL and round_ >= 1 and score < scores[round_ - 1][0]:
        return "stall"
    if PLATEAU_EPS > 0 and round_ >= 2:
        if score - scores[round_ - 1][0] < PLATEAU_EPS and scores[round_ - 1][0] - scores[round_ - 2][0] < PLATEAU_EPS:
            return "plateau"
    return None if budget_left else "budget"


def better(best, score, fatal):
    """The best draft (docs/REFERENCE.md, The decision rule): a draft without fatal issues beats one with; else the higher score;
    the earliest on ties."""
    best_score, best_fatal = best
    if best_fatal and not fatal:
        return True
    if fatal and not best_fatal:
        return False
    return score > best_score


# ------------------------------------------------------------------------------------------------
# Parquet output, in batches


class Sink:
    def __init__(self, path, schema):
        self.schema = schema
        self.names = schema.names
        self.columns = {name: [] for name in self.names}
        self.rows = 0
        self.writer = pq.ParquetWriter(path, schema, compression="zstd", compression_level=3)

    def add(self, row):
        columns = self.columns
        for name, value in zip(self.names, row):
            columns[name].append(value)
        self.rows += 1
        if len(columns[self.names[0]]) >= BATCH_ROWS:
            self.flush()

    def flush(self):
        if self.columns[self.names[0]]:
            batch = pa.RecordBatch.from_pydict(self.columns, schema=self.schema)
            self.writer.write_batch(batch)
            self.columns = {name: [] for name in self.names}

    def close(self):
        self.flush()
        self.writer.close()


def trajectory_row(task, arm, round_, score, fatal, failed, critique, attempts, error, decision, exit_reason,
                   is_best, best_score, draft, gen_ms, critic_ms):
    return (
        CONFIG_ID, arm, CRITIC, task["id"], task.get("kind"), 0, round_, round_, score,
        list(critique.get("issues") or []), list(critique.get("fatal_issues") or []), critique.get("rationale"),
        critique.get("passed"), passes(score, fatal, failed), decision, exit_reason, is_best, best_score,
        len(draft), gen_ms, critic_ms, attempts, error,
    )


def outcome_row(task, arm, scores, exit_reason, best_round, best_score, errors, wall_ms):
    rounds = len(scores)
    return (
        CONFIG_ID, arm, CRITIC, task["id"], task.get("kind"), 0, PASS_SCORE, MAX_REVISIONS, rounds, rounds - 1,
        exit_reason, exit_reason == "pass", scores[0][0], scores[-1][0], best_score, best_score, best_round,
        errors, wall_ms,
    )


def read_tasks(path, limit):
    with open(path, encoding="utf-8") as lines:
        for n, line in enumerate(lines):
            if limit is not None and n >= limit:
                return
            if line.strip():
                yield json.loads(line)


# ------------------------------------------------------------------------------------------------
# Peer 1: a plain Python loop


def plain_loop(task, arm, trajectories, outcomes):
    clock = time.perf_counter
    t0 = clock()
    draft = generate(task)
    t1 = clock()
    scores = []
    best = None
    best_round = 0
    errors = 0
    gen_ms = (t1 - t0) * 1e3
    wall_ms = 0.0
    while True:
        round_ = len(scores)
        c0 = clock()
        score, fatal, failed, critique, attempts, error = critique_of(task, round_)
        c1 = clock()
        critic_ms = (c1 - c0) * 1e3
        wall_ms += gen_ms + critic_ms
        errors += failed
        scores.append((score, fatal, failed))
        is_best = best is None or better(best, score, fatal)
        if is_best:
            best, best_round = (score, fatal), round_
        exit_reason = decide(scores)
        trajectories.add(trajectory_row(
            task, arm, round_, score, fatal, failed, critique, attempts, error,
            "revise" if exit_reason is None else "stop", exit_reason, is_best, best[0], draft, gen_ms, critic_ms,
        ))
        if exit_reason is not None:
            outcomes.add(outcome_row(task, arm, scores, exit_reason, best_round, best[0], errors, wall_ms))
            return len(scores)
        g0 = clock()
        draft = revise(task, draft, critique if arm == "feedback" else None, round_ + 1)
        gen_ms = (clock() - g0) * 1e3


def run_plain(tasks, trajectories, outcomes):
    loops = critiques = 0
    for task in tasks:
        for arm in ARMS:
            critiques += plain_loop(task, arm, trajectories, outcomes)
            loops += 1
    return loops, critiques


# ------------------------------------------------------------------------------------------------
# Peer 2: a LangGraph StateGraph — generator → critic → (conditional edge) → reviser → critic


class LoopState(TypedDict):
    task: dict
    arm: str
    round: int
    draft: str
    gen_ms: float
    critique: Optional[dict]
    scores: list
    best: Optional[tuple]
    best_round: int
    exit_reason: Optional[str]
    critic_errors: int
    wall_ms: float
    trajectory: Annotated[list, operator.add]


def build_graph():
    from langgraph.graph import END, START, StateGraph

    clock = time.perf_counter

    def generator(state: LoopState) -> dict[str, Any]:
        t0 = clock()
        draft = generate(state["task"])
        return {"draft": draft, "round": 0, "gen_ms": (clock() - t0) * 1e3}

    def critic(state: LoopState) -> dict[str, Any]:
        task, round_ = state["task"], state["round"]
        c0 = clock()
        score, fatal, failed, critique, attempts, error = critique_of(task, round_)
        critic_ms = (clock() - c0) * 1e3
        scores = state["scores"] + [(score, fatal, failed)]
        best, best_round = state["best"], state["best_round"]
        is_best = best is None or better(best, score, fatal)
        if is_best:
            best, best_round = (score, fatal), round_
        exit_reason = decide(scores)
        row = trajectory_row(
            task, state["arm"], round_, score, fatal, failed, critique, attempts, error,
            "revise" if exit_reason is None else "stop", exit_reason, is_best, best[0], state["draft"],
            state["gen_ms"], critic_ms,
        )
        return {
            "critique": critique,
            "scores": scores,
            "best": best,
            "best_round": best_round,
            "exit_reason": exit_reason,
            "critic_errors": state["critic_errors"] + failed,
            "wall_ms": state["wall_ms"] + state["gen_ms"] + critic_ms,
            "trajectory": [row],
        }

    def reviser(state: LoopState) -> dict[str, Any]:
        g0 = clock()
        feedback = state["critique"] if state["arm"] == "feedback" else None
        draft = revise(state["task"], state["draft"], feedback, state["round"] + 1)
        return {"draft": draft, "round": state["round"] + 1, "gen_ms": (clock() - g0) * 1e3}

    def route(state: LoopState) -> str:
        return "stop" if state["exit_reason"] is not None else "revise"

    graph = StateGraph(LoopState)
    graph.add_node("generator", generator)
    graph.add_node("critic", critic)
    graph.add_node("reviser", reviser)
    graph.add_edge(START, "generator")
    graph.add_edge("generator", "critic")
    graph.add_conditional_edges("critic", route, {"revise": "reviser", "stop": END})
    graph.add_edge("reviser", "critic")
    return graph.compile()


def run_langgraph(tasks, trajectories, outcomes):
    app = build_graph()
    loops = critiques = 0
    for task in tasks:
        for arm in ARMS:
            state = app.invoke({
                "task": task, "arm": arm, "round": 0, "draft": "", "gen_ms": 0.0, "critique": None, "scores": [],
                "best": None, "best_round": 0, "exit_reason": None, "critic_errors": 0, "wall_ms": 0.0,
                "trajectory": [],
            })
            for row in state["trajectory"]:
                trajectories.add(row)
            scores = state["scores"]
            outcomes.add(outcome_row(
                task, arm, scores, state["exit_reason"], state["best_round"], state["best"][0],
                state["critic_errors"], state["wall_ms"],
            ))
            loops += 1
            critiques += len(scores)
    return loops, critiques


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("peer", choices=["plain", "langgraph"])
    parser.add_argument("tasks")
    parser.add_argument("out")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    trajectories = Sink(os.path.join(args.out, "trajectories.parquet"), TRAJECTORY_SCHEMA)
    outcomes = Sink(os.path.join(args.out, "outcomes.parquet"), OUTCOME_SCHEMA)
    run = run_plain if args.peer == "plain" else run_langgraph
    try:
        loops, critiques = run(read_tasks(args.tasks, args.limit), trajectories, outcomes)
    except (ValueError, KeyError, json.JSONDecodeError) as error:
        print(f"{args.tasks}: {error}", file=sys.stderr)
        return 2
    trajectories.close()
    outcomes.close()
    elapsed = time.perf_counter() - started
    print(f"{loops} loops, {critiques} critiques in {elapsed:.2f} s ({critiques / elapsed:.0f} rounds/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
