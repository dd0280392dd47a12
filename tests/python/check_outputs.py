#!/usr/bin/env python3
"""Checks that a critbench run directory reads cleanly in the tools notebooks use.

Usage: python3 tests/python/check_outputs.py RUN_DIR

Reads RUN_DIR/trajectories.parquet and RUN_DIR/outcomes.parquet with pandas (pyarrow), polars and
duckdb, and RUN_DIR/summary.csv, and checks them against the output contract (docs/FORMAT.md) and the
loop's invariants (docs/REFERENCE.md, The decision rule):

- every column the contract names exists, and nested columns are typed as notebooks expect in each
  library (dims a map of string to float64, issues and fatal_issues lists of strings);
- decision is "revise", "stop" or "adjudicate" (an adjudicated loop's one extra row, one round past
  its stop row, whose score and pass are the outcome's adjudicated_score and adjudicated_passed);
  the loop rules below hold for the other rows; exit_reason is null except on stop rows, where it is one of
  pass / stall / plateau / budget; each loop has exactly one stop row, on its last round;
  revisions == round; a row passes exactly when it stops with "pass";
- outcomes has one row per stop row, with the same exit and revisions, and passed == (exit "pass");
- the three libraries agree on row counts, pass counts and the number of nested values;
- summary.csv has the contract's columns and its counts (loops, passes, critic errors, rounds) match outcomes;
  critic_error_rate is critic_errors / rounds_total; an interval named `wilson` is Wilson's and one named
  `clopper-pearson` Clopper-Pearson's over the loops (statsmodels), the clustered ones (`task-cluster
  bootstrap`, `clopper-pearson, effective sample size`, checked against references in check_stats.py)
  bracket their rate inside [0, 1].

Prints a short summary and exits 0, or prints every failure and exits 1 (2 for bad usage).
Requirements: tests/python/requirements.txt.
"""

import math
import sys
from pathlib import Path

LOOP_KEY = ["run_id", "config_id", "arm", "critic", "task_id", "epoch"]
GROUP_KEY = ["config_id", "arm", "critic"]
EXIT_REASONS = ("pass", "stall", "plateau", "budget")
DECISIONS = ("revise", "stop", "adjudicate")
ADJUDICATED_SUFFIX = "+adjudicate"

# Column → kind of value (docs/FORMAT.md). "number" accepts integers or floats.
TRAJECTORY_COLUMNS = {
    "run_id": "str",
    "config_id": "str",
    "arm": "str",
    "critic": "str",
    "task_id": "str",
    "epoch": "int",
    "round": "int",
    "revisions": "int",
    "score": "float",
    "dims": "map",
    "issues": "list_str",
    "fatal_issues": "list_str",
    "critic_passed": "bool",
    "passed": "bool",
    "decision": "str",
    "exit_reason": "str",
    "is_best": "bool",
    "best_score": "float",
    "draft_chars": "int",
    "draft": "str",
    "gen_ms": "number",
    "critic_ms": "number",
    "critic_attempts": "int",
    "critic_error": "str",
    "tokens_in": "int",
    "tokens_out": "int",
}
OUTCOME_COLUMNS = {
    "run_id": "str",
    "config_id": "str",
    "arm": "str",
    "critic": "str",
    "task_id": "str",
    "epoch": "int",
    "pass_score": "number",
    "max_revisions": "int",
    "stall": "bool",
    "plateau_eps": "number",
    "dim_target": "number",
    "rounds": "int",
    "revisions": "int",
    "exit_reason": "str",
    "passed": "bool",
    "first_score": "float",
    "last_score": "float",
    "final_score": "float",
    "best_score": "float",
    "best_round": "int",
    "tokens_in": "int",
    "tokens_out": "int",
    "wall_ms": "number",
}
SUMMARY_COLUMNS = [
    "config_id",
    "arm",
    "critic",
    "n",
    "passed",
    "pass_rate",
    "pass_rate_lo",
    "pass_rate_hi",
    "mean_rounds",
    "exit_pass",
    "exit_stall",
    "exit_plateau",
    "exit_budget",
    "mean_first_score",
    "mean_best_score",
    "critic_errors",
    "n_tasks",
    "interval",
    "rounds_total",
    "critic_error_rate",
    "critic_error_loops",
    "mean_rounds_passed",
    "tokens_in_per_loop",
    "tokens_out_per_loop",
    "tokens_in_per_pass",
    "tokens_out_per_pass",
]
# summary.csv may round its rates; a Wilson bound off by more than this is wrong, not rounded.
RATE_TOLERANCE = 0.005
EXAMPLES = 3
KIND_NAMES = {
    "str": "string",
    "int": "integer",
    "float": "floating point",
    "number": "number",
    "bool": "boolean",
    "map": "map<string, float64>",
    "list_str": "list<string>",
}


class Check:
    """Collects failures so that one run reports all of them."""

    def __init__(self):
        self.failures = []

    def fail(self, message):
        self.failures.append(message)

    def expect(self, ok, message):
        if not ok:
            self.fail(message)
        return ok


def examples(frame, columns):
    """A few offending rows, named by the given columns, for a failure message."""
    rows = frame[columns].head(EXAMPLES).to_dict("records")
    shown = "; ".join(", ".join(f"{k}={v}" for k, v in row.items()) for row in rows)
    more = f" (and {len(frame) - EXAMPLES} more)" if len(frame) > EXAMPLES else ""
    return f"e.g. {shown}{more}"


# ---- column types in each library ---------------------------------------------------------------


def arrow_kind_ok(dtype, kind):
    import pyarrow as pa

    t = pa.types

    def is_str(d):
        if t.is_dictionary(d):
            return is_str(d.value_type)
        return t.is_string(d) or t.is_large_string(d) or t.is_string_view(d)

    if kind == "str":
        return is_str(dtype)
    if kind == "int":
        return t.is_integer(dtype)
    if kind == "float":
        return t.is_floating(dtype)
    if kind == "number":
        return t.is_integer(dtype) or t.is_floating(dtype)
    if kind == "bool":
        return t.is_boolean(dtype)
    if kind == "map":
        return t.is_map(dtype) and is_str(dtype.key_type) and t.is_float64(dtype.item_type)
    if kind == "list_str":
        lists = t.is_list(dtype) or t.is_large_list(dtype) or t.is_list_view(dtype) or t.is_large_list_view(dtype)
        return lists and is_str(dtype.value_type)
    raise ValueError(kind)


def polars_kind_ok(dtype, kind):
    import polars as pl

    def is_str(d):
        return d == pl.String or isinstance(d, (pl.Categorical, pl.Enum))

    if kind == "str":
        return is_str(dtype)
    if kind == "int":
        return dtype.is_integer()
    if kind == "float":
        return dtype.is_float()
    if kind == "number":
        return dtype.is_integer() or dtype.is_float()
    if kind == "bool":
        return dtype == pl.Boolean
    if kind == "map":
        # Newer polars reads a Parquet map as Map; older ones as a list of key/value structs.
        if getattr(pl, "Map", None) is not None and isinstance(dtype, pl.Map):
            return is_str(dtype.key) and dtype.value == pl.Float64
        if isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct):
            fields = dtype.inner.fields
            return len(fields) == 2 and is_str(fields[0].dtype) and fields[1].dtype == pl.Float64
        return False
    if kind == "list_str":
        return isinstance(dtype, pl.List) and is_str(dtype.inner)
    raise ValueError(kind)


DUCKDB_INTEGERS = {
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
}
DUCKDB_FLOATS = {"FLOAT", "DOUBLE"}


def duckdb_kind_ok(type_name, kind):
    if kind == "str":
        return type_name == "VARCHAR" or type_name.startswith("ENUM(")
    if kind == "int":
        return type_name in DUCKDB_INTEGERS
    if kind == "float":
        return type_name in DUCKDB_FLOATS
    if kind == "number":
        return type_name in DUCKDB_INTEGERS or type_name in DUCKDB_FLOATS
    if kind == "bool":
        return type_name == "BOOLEAN"
    if kind == "map":
        return type_name == "MAP(VARCHAR, DOUBLE)"
    if kind == "list_str":
        return type_name == "VARCHAR[]"
    raise ValueError(kind)


def check_columns(check, library, name, found, expected, kind_ok):
    """`found`: column → the library's type for it."""
    missing = [column for column in expected if column not in found]
    check.expect(not missing, f"{name} ({library}): missing columns {missing}")
    for column, kind in expected.items():
        if column in found and not kind_ok(found[column], kind):
            check.fail(f"{name} ({library}): column {column} has type {found[column]}, expected {KIND_NAMES[kind]}")


# ---- reading with each library ------------------------------------------------------------------


def is_missing(value):
    return value is None or (isinstance(value, float) and math.isnan(value))


def pandas_nested_counts(check, frame, name):
    """Counts nested values in a default pandas read, checking that each one is usable."""
    counts = {}
    if "dims" in frame.columns:
        total, bad = 0, 0
        for value in frame["dims"]:
            if is_missing(value):
                continue
            # pandas gives a map as a list of (key, value) pairs, or a dict with maps_as_pydicts.
            pairs = list(value.items()) if isinstance(value, dict) else list(value)
            if all(
                isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], float)
                for p in pairs
            ):
                total += len(pairs)
            else:
                bad += 1
        check.expect(bad == 0, f"{name} (pandas): {bad} dims values are not (str, float) pairs")
        counts["dimension scores"] = total
    for column in ("issues", "fatal_issues"):
        if column not in frame.columns:
            continue
        total, bad = 0, 0
        for value in frame[column]:
            if is_missing(value):
                continue
            items = list(value)
            if all(isinstance(item, str) for item in items):
                total += len(items)
            else:
                bad += 1
        check.expect(bad == 0, f"{name} (pandas): {bad} {column} values are not lists of strings")
        counts[column.replace("_", " ")] = total
    return counts


def read_with_pandas(check, trajectories_path, outcomes_path):
    import pandas as pd
    import pyarrow as pa

    frames, counts = {}, {}
    for name, path, expected in (
        ("trajectories.parquet", trajectories_path, TRAJECTORY_COLUMNS),
        ("outcomes.parquet", outcomes_path, OUTCOME_COLUMNS),
    ):
        # The pyarrow-backed read shows the exact Arrow types; the default read is what most
        # notebooks do, and its nested values must be usable too.
        typed = pd.read_parquet(path, engine="pyarrow", dtype_backend="pyarrow")
        found = {c: getattr(typed[c].dtype, "pyarrow_dtype", typed[c].dtype) for c in typed.columns}
        check_columns(
            check, "pandas", name, found, expected, lambda d, k: isinstance(d, pa.DataType) and arrow_kind_ok(d, k)
        )
        frames[name] = pd.read_parquet(path, engine="pyarrow")
    traj, outcomes = frames["trajectories.parquet"], frames["outcomes.parquet"]
    counts["trajectory rows"] = len(traj)
    counts["outcome rows"] = len(outcomes)
    if "decision" in traj.columns:
        counts["stop rows"] = int(traj["decision"].eq("stop").sum())
    if "passed" in outcomes.columns:
        counts["passes"] = int(outcomes["passed"].eq(True).sum())
    counts.update(pandas_nested_counts(check, traj, "trajectories.parquet"))
    return traj, outcomes, counts


def read_with_polars(check, trajectories_path, outcomes_path):
    import polars as pl

    traj = pl.read_parquet(trajectories_path)
    outcomes = pl.read_parquet(outcomes_path)
    check_columns(check, "polars", "trajectories.parquet", dict(traj.schema), TRAJECTORY_COLUMNS, polars_kind_ok)
    check_columns(check, "polars", "outcomes.parquet", dict(outcomes.schema), OUTCOME_COLUMNS, polars_kind_ok)
    counts = {"trajectory rows": traj.height, "outcome rows": outcomes.height}
    if "decision" in traj.columns:
        counts["stop rows"] = traj.filter(pl.col("decision").cast(pl.String) == "stop").height
    if "passed" in outcomes.columns and outcomes.schema["passed"] == pl.Boolean:
        counts["passes"] = outcomes.filter(pl.col("passed")).height
    if "dims" in traj.columns and polars_kind_ok(traj.schema["dims"], "map"):
        dims = pl.col("dims")
        length = dims.list.len() if isinstance(traj.schema["dims"], pl.List) else dims.map.len()
        counts["dimension scores"] = int(traj.select(length.sum()).item() or 0)
    for column in ("issues", "fatal_issues"):
        if column in traj.columns and polars_kind_ok(traj.schema[column], "list_str"):
            counts[column.replace("_", " ")] = int(traj.select(pl.col(column).list.len().sum()).item() or 0)
    return counts


def read_with_duckdb(check, trajectories_path, outcomes_path):
    import duckdb

    connection = duckdb.connect()

    def source(path):
        return "read_parquet('" + str(path).replace("'", "''") + "')"

    counts = {}
    found = {}
    for name, path, expected in (
        ("trajectories.parquet", trajectories_path, TRAJECTORY_COLUMNS),
        ("outcomes.parquet", outcomes_path, OUTCOME_COLUMNS),
    ):
        described = connection.execute(f"DESCRIBE SELECT * FROM {source(path)}").fetchall()
        found[name] = {row[0]: row[1] for row in described}
        check_columns(check, "duckdb", name, found[name], expected, duckdb_kind_ok)
    traj_types, outcome_types = found["trajectories.parquet"], found["outcomes.parquet"]
    traj, outcomes = source(trajectories_path), source(outcomes_path)
    counts["trajectory rows"] = connection.execute(f"SELECT count(*) FROM {traj}").fetchone()[0]
    counts["outcome rows"] = connection.execute(f"SELECT count(*) FROM {outcomes}").fetchone()[0]
    if "decision" in traj_types:
        counts["stop rows"] = connection.execute(f"SELECT count(*) FROM {traj} WHERE decision = 'stop'").fetchone()[0]
    if outcome_types.get("passed") == "BOOLEAN":
        counts["passes"] = connection.execute(f"SELECT count(*) FROM {outcomes} WHERE passed").fetchone()[0]
    if traj_types.get("dims", "").startswith("MAP("):
        query = f"SELECT coalesce(sum(cardinality(dims)), 0) FROM {traj}"
        counts["dimension scores"] = connection.execute(query).fetchone()[0]
    for column in ("issues", "fatal_issues"):
        if traj_types.get(column, "").endswith("[]"):
            query = f"SELECT coalesce(sum(len({column})), 0) FROM {traj}"
            counts[column.replace("_", " ")] = connection.execute(query).fetchone()[0]
    connection.close()
    return {key: int(value) for key, value in counts.items()}


# ---- the contract's invariants ------------------------------------------------------------------


def check_trajectories(check, traj):
    name = "trajectories.parquet"
    needed = LOOP_KEY + ["round", "revisions", "score", "decision", "exit_reason", "passed"]
    if not check.expect(
        all(c in traj.columns for c in needed), f"{name}: cannot check the loop rules without {needed}"
    ):
        return None
    if not check.expect(len(traj) > 0, f"{name}: no rows; the run recorded no critiques"):
        return None
    for column in needed:
        if column == "exit_reason":
            continue
        nulls = traj[traj[column].isna()]
        check.expect(
            nulls.empty, f"{name}: {len(nulls)} rows have a null {column}, {examples(nulls, LOOP_KEY + ['round'])}"
        )
    traj = traj.dropna(subset=[c for c in needed if c != "exit_reason"])

    bad = traj[~traj["decision"].isin(DECISIONS)]
    check.expect(
        bad.empty,
        f"{name}: decision must be one of {DECISIONS}; {len(bad)} rows are not, {examples(bad, LOOP_KEY + ['round', 'decision'])}",
    )
    adjudicated = traj[traj["decision"].eq("adjudicate")]
    traj = traj[~traj["decision"].eq("adjudicate")]
    stop = traj["decision"].eq("stop")
    bad = traj[~stop & traj["exit_reason"].notna()]
    check.expect(
        bad.empty,
        f"{name}: exit_reason must be null on revise rows; {len(bad)} are not, {examples(bad, LOOP_KEY + ['round', 'exit_reason'])}",
    )
    bad = traj[stop & ~traj["exit_reason"].isin(EXIT_REASONS)]
    check.expect(
        bad.empty,
        f"{name}: exit_reason on a stop row must be one of {EXIT_REASONS}; {len(bad)} are not, {examples(bad, LOOP_KEY + ['round', 'exit_reason'])}",
    )
    bad = traj[traj["revisions"] != traj["round"]]
    check.expect(
        bad.empty,
        f"{name}: revisions must equal round; {len(bad)} rows differ, {examples(bad, LOOP_KEY + ['round', 'revisions'])}",
    )
    passes = traj["exit_reason"].eq("pass") & stop
    bad = traj[traj["passed"].astype(bool) != passes]
    check.expect(
        bad.empty,
        f"{name}: a row is passed exactly when it stops with exit_reason 'pass'; {len(bad)} rows disagree, {examples(bad, LOOP_KEY + ['round', 'passed', 'exit_reason'])}",
    )

    loops = (
        traj.assign(is_stop=stop)
        .groupby(LOOP_KEY, observed=True, sort=False)
        .agg(
            rounds=("round", "size"),
            distinct=("round", "nunique"),
            first=("round", "min"),
            last=("round", "max"),
            stops=("is_stop", "sum"),
        )
        .reset_index()
    )
    bad = loops[loops["stops"] != 1]
    check.expect(
        bad.empty,
        f"{name}: every loop needs exactly one stop row; {len(bad)} loops do not, {examples(bad, LOOP_KEY + ['stops'])}",
    )
    bad = loops[(loops["first"] != 0) | (loops["distinct"] != loops["rounds"]) | (loops["last"] != loops["rounds"] - 1)]
    check.expect(
        bad.empty,
        f"{name}: every loop's rounds must run 0, 1, 2, ... without gaps or repeats; {len(bad)} do not, {examples(bad, LOOP_KEY + ['rounds', 'last'])}",
    )
    stops = traj[stop].merge(loops[LOOP_KEY + ["last"]], on=LOOP_KEY)
    bad = stops[stops["round"] != stops["last"]]
    check.expect(
        bad.empty,
        f"{name}: the stop row must be a loop's last round; {len(bad)} are not, {examples(bad, LOOP_KEY + ['round', 'last'])}",
    )
    repeated = adjudicated[adjudicated.duplicated(LOOP_KEY, keep=False)]
    check.expect(
        repeated.empty,
        f"{name}: a loop has at most one adjudicate row; {len(repeated)} rows repeat a loop, {examples(repeated, LOOP_KEY)}",
    )
    placed = adjudicated.merge(loops[LOOP_KEY + ["last"]], on=LOOP_KEY, how="left")
    bad = placed[(placed["round"] != placed["last"] + 1) | (placed["revisions"] != placed["last"])]
    check.expect(
        bad.empty,
        f"{name}: an adjudicate row comes one round past its loop's stop, with the loop's revisions; {len(bad)} do not, {examples(bad, LOOP_KEY + ['round', 'last'])}",
    )
    return traj[stop], adjudicated


def check_outcomes(check, outcomes, stops, adjudicated=None):
    name = "outcomes.parquet"
    needed = LOOP_KEY + ["rounds", "revisions", "exit_reason", "passed"]
    if not check.expect(all(c in outcomes.columns for c in needed), f"{name}: cannot check outcomes without {needed}"):
        return
    for column in needed:
        nulls = outcomes[outcomes[column].isna()]
        check.expect(nulls.empty, f"{name}: {len(nulls)} rows have a null {column}, {examples(nulls, LOOP_KEY)}")
    outcomes = outcomes.dropna(subset=needed)
    bad = outcomes[~outcomes["exit_reason"].isin(EXIT_REASONS)]
    check.expect(
        bad.empty,
        f"{name}: exit_reason must be one of {EXIT_REASONS}; {len(bad)} rows are not, {examples(bad, LOOP_KEY + ['exit_reason'])}",
    )
    bad = outcomes[outcomes["passed"].astype(bool) != outcomes["exit_reason"].eq("pass")]
    check.expect(
        bad.empty,
        f"{name}: passed must equal (exit_reason == 'pass'); {len(bad)} rows differ, {examples(bad, LOOP_KEY + ['passed', 'exit_reason'])}",
    )
    bad = outcomes[outcomes["rounds"] != outcomes["revisions"] + 1]
    check.expect(
        bad.empty,
        f"{name}: rounds must be revisions + 1 (round 0 is the first draft); {len(bad)} rows differ, {examples(bad, LOOP_KEY + ['rounds', 'revisions'])}",
    )
    duplicated = outcomes[outcomes.duplicated(LOOP_KEY, keep=False)]
    check.expect(
        duplicated.empty,
        f"{name}: one row per task × config × arm × critic × epoch; {len(duplicated)} rows repeat a key, {examples(duplicated, LOOP_KEY)}",
    )
    if stops is None:
        return
    check.expect(
        len(outcomes) == len(stops),
        f"{name}: {len(outcomes)} outcomes but {len(stops)} stop rows in trajectories.parquet; there must be one outcome per loop",
    )
    joined = outcomes.merge(stops, on=LOOP_KEY, how="outer", suffixes=("", "_trajectory"), indicator=True)
    only = joined[joined["_merge"] == "left_only"]
    check.expect(
        only.empty, f"{name}: {len(only)} outcomes have no loop in trajectories.parquet, {examples(only, LOOP_KEY)}"
    )
    only = joined[joined["_merge"] == "right_only"]
    check.expect(
        only.empty, f"{name}: {len(only)} loops in trajectories.parquet have no outcome, {examples(only, LOOP_KEY)}"
    )
    both = joined[joined["_merge"] == "both"]
    bad = both[both["exit_reason"] != both["exit_reason_trajectory"]]
    check.expect(
        bad.empty,
        f"{name}: exit_reason differs from the loop's stop row in {len(bad)} outcomes, {examples(bad, LOOP_KEY + ['exit_reason', 'exit_reason_trajectory'])}",
    )
    bad = both[both["revisions"] != both["revisions_trajectory"]]
    check.expect(
        bad.empty,
        f"{name}: revisions differs from the loop's stop row in {len(bad)} outcomes, {examples(bad, LOOP_KEY + ['revisions', 'revisions_trajectory'])}",
    )
    if adjudicated is None or "adjudicated_passed" not in outcomes.columns:
        return
    with_pass = outcomes[outcomes["adjudicated_passed"].notna()]
    check.expect(
        len(with_pass) == len(adjudicated),
        f"{name}: {len(with_pass)} outcomes have adjudicated_passed but trajectories.parquet has {len(adjudicated)} adjudicate rows",
    )
    joined = with_pass.merge(adjudicated, on=LOOP_KEY, suffixes=("", "_trajectory"))
    bad = joined[
        (joined["adjudicated_passed"].astype(bool) != joined["passed_trajectory"].astype(bool))
        | (joined["adjudicated_score"] != joined["score"])
    ]
    check.expect(
        bad.empty and len(joined) == len(with_pass),
        f"{name}: adjudicated_score/adjudicated_passed differ from the loop's adjudicate row in {len(bad)} outcomes, {examples(bad, LOOP_KEY)}",
    )


def clopper_pearson(passed, n, alpha=0.05):
    """Clopper-Pearson's exact interval of `passed` of `n` (scipy's beta quantiles)."""
    from scipy.stats import beta

    lo = 0.0 if passed == 0 else float(beta.ppf(alpha / 2, passed, n - passed + 1))
    hi = 1.0 if passed == n else float(beta.ppf(1 - alpha / 2, passed + 1, n - passed))
    return lo, hi


def wilson(passed, n, z=1.959963984540054):
    rate = passed / n
    denominator = 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / denominator
    return centre - half, centre + half


def check_summary(check, path, outcomes):
    import pandas as pd

    name = "summary.csv"
    summary = pd.read_csv(path)
    missing = [c for c in SUMMARY_COLUMNS if c not in summary.columns]
    if not check.expect(not missing, f"{name}: missing columns {missing}"):
        return summary
    if not check.expect(len(summary) > 0, f"{name}: no rows"):
        return summary
    # Each judge has a full set of rows; the steering critic's are the ones outcomes.parquet counts.
    if not check.expect("judge" in summary.columns, f"{name}: no column judge"):
        return summary
    summary = summary[summary["judge"] == "critic"]
    # An adjudicated arm's twin (ARM+adjudicate) counts the same loops again, with their
    # adjudicated pass: checked against adjudicated_passed, left out of the totals below.
    twins = summary[summary["arm"].astype(str).str.endswith(ADJUDICATED_SUFFIX)]
    summary = summary[~summary["arm"].astype(str).str.endswith(ADJUDICATED_SUFFIX)]
    if len(twins) and "adjudicated_passed" in outcomes.columns:
        adjudicated = outcomes[outcomes["adjudicated_passed"].notna()]
        check.expect(
            int(twins["n"].sum()) == len(adjudicated)
            and int(twins["passed"].sum()) == int(adjudicated["adjudicated_passed"].astype(bool).sum()),
            f"{name}: the +adjudicate rows count {int(twins['n'].sum())} loops and {int(twins['passed'].sum())} passes, "
            f"but outcomes.parquet has {len(adjudicated)} adjudicated loops and "
            f"{int(adjudicated['adjudicated_passed'].astype(bool).sum())} adjudicated passes",
        )
    counts = ["n", "passed", "exit_pass", "exit_stall", "exit_plateau", "exit_budget"]
    rates = ["pass_rate", "pass_rate_lo", "pass_rate_hi"]
    for column in counts + rates:
        if not check.expect(
            pd.api.types.is_numeric_dtype(summary[column]) and summary[column].notna().all(),
            f"{name}: column {column} must be numbers without blanks",
        ):
            return summary
    total = int(outcomes["passed"].eq(True).sum()) if "passed" in outcomes.columns else None
    check.expect(
        total is None or int(summary["passed"].sum()) == total,
        f"{name}: passed adds up to {int(summary['passed'].sum())}, but outcomes.parquet has {total} passes",
    )
    check.expect(
        int(summary["n"].sum()) == len(outcomes),
        f"{name}: n adds up to {int(summary['n'].sum())}, but outcomes.parquet has {len(outcomes)} rows",
    )
    for column, total in (("critic_errors", "critic_errors"), ("rounds_total", "rounds")):
        if total in outcomes.columns:
            check.expect(
                int(summary[column].sum()) == int(outcomes[total].sum()),
                f"{name}: {column} adds up to {int(summary[column].sum())}, but outcomes.parquet's {total} "
                f"sum to {int(outcomes[total].sum())}",
            )
    expected_rate = summary["critic_errors"] / summary["rounds_total"]
    bad = summary[(summary["critic_error_rate"] - expected_rate).abs() > 1e-9]
    check.expect(
        bad.empty,
        f"{name}: critic_error_rate must be critic_errors / rounds_total; {len(bad)} rows differ, "
        f"{examples(bad, GROUP_KEY + ['critic_errors', 'rounds_total', 'critic_error_rate'])}",
    )
    exits = summary[["exit_pass", "exit_stall", "exit_plateau", "exit_budget"]].sum(axis=1)
    bad = summary[exits != summary["n"]]
    check.expect(
        bad.empty,
        f"{name}: exit_pass + exit_stall + exit_plateau + exit_budget must equal n; {len(bad)} rows differ, {examples(bad, GROUP_KEY + ['n'])}",
    )
    bad = summary[summary["exit_pass"] != summary["passed"]]
    check.expect(
        bad.empty,
        f"{name}: exit_pass must equal passed; {len(bad)} rows differ, {examples(bad, GROUP_KEY + ['passed', 'exit_pass'])}",
    )
    for row in summary.itertuples(index=False):
        if row.n <= 0:
            check.fail(f"{name}: n must be positive, got {row.n} for {row.config_id} / {row.arm} / {row.critic}")
            continue
        interval = getattr(row, "interval", "wilson")
        if interval not in ("wilson", "clopper-pearson"):
            # Several epochs per task: a task-cluster bootstrap, or Clopper-Pearson on the effective
            # sample size (checked against references in check_stats.py); here it must bracket the
            # rate inside [0, 1].
            check.expect(
                0.0 <= row.pass_rate_lo <= row.pass_rate + RATE_TOLERANCE
                and row.pass_rate - RATE_TOLERANCE <= row.pass_rate_hi <= 1.0
                and interval in ("task-cluster bootstrap", "clopper-pearson, effective sample size"),
                f"{name}: {row.config_id} / {row.arm} / {row.critic}: interval {interval!r} "
                f"[{row.pass_rate_lo}, {row.pass_rate_hi}] does not bracket pass_rate {row.pass_rate} inside [0, 1]",
            )
            continue
        lo, hi = wilson(row.passed, row.n) if interval == "wilson" else clopper_pearson(row.passed, row.n)
        near = all(
            abs(a - b) <= RATE_TOLERANCE
            for a, b in ((row.pass_rate, row.passed / row.n), (row.pass_rate_lo, lo), (row.pass_rate_hi, hi))
        )
        check.expect(
            near,
            f"{name}: {row.config_id} / {row.arm} / {row.critic}: {row.passed}/{row.n} should give pass_rate {row.passed / row.n:.4f} "
            f"with {interval} 95% bounds [{lo:.4f}, {hi:.4f}], got {row.pass_rate} [{row.pass_rate_lo}, {row.pass_rate_hi}]",
        )
    if all(c in outcomes.columns for c in GROUP_KEY + ["passed"]):
        expected = (
            outcomes.assign(passed=outcomes["passed"].eq(True))
            .groupby(GROUP_KEY, observed=True)
            .agg(n=("passed", "size"), passed=("passed", "sum"))
            .reset_index()
        )
        expected[GROUP_KEY] = expected[GROUP_KEY].astype(str)
        given = summary[GROUP_KEY + ["n", "passed"]].astype({c: str for c in GROUP_KEY})
        joined = expected.merge(given, on=GROUP_KEY, how="outer", suffixes=("_outcomes", "_summary"), indicator=True)
        bad = joined[
            (joined["_merge"] != "both")
            | (joined["n_outcomes"] != joined["n_summary"])
            | (joined["passed_outcomes"] != joined["passed_summary"])
        ]
        check.expect(
            bad.empty,
            f"{name}: n and passed per config × arm × critic must match outcomes.parquet; {len(bad)} groups differ, {examples(bad, GROUP_KEY + ['n_outcomes', 'n_summary', 'passed_outcomes', 'passed_summary'])}",
        )
    if all(c in outcomes.columns for c in GROUP_KEY + ["passed", "rounds"]):
        check_cost_per_pass(check, name, summary, outcomes)
    return summary


def check_cost_per_pass(check, name, summary, outcomes):
    """mean_rounds_passed and the token columns, recomputed from outcomes.parquet."""
    import pandas as pd

    frame = outcomes.assign(passed=outcomes["passed"].eq(True))
    has_tokens = {c: c in frame.columns for c in ("tokens_in", "tokens_out")}
    rows = []
    for key, group in frame.groupby(GROUP_KEY, observed=True):
        passed = group[group["passed"]]
        row = dict(zip(GROUP_KEY, map(str, key)))
        row["mean_rounds_passed_expected"] = float(passed["rounds"].mean()) if len(passed) else 0.0
        counted = group
        if all(has_tokens.values()):
            counted = group[group["tokens_in"].notna() | group["tokens_out"].notna()]
        else:
            counted = group.iloc[0:0]
        counted_passed = counted[counted["passed"]]
        for side in ("in", "out"):
            column = f"tokens_{side}"
            per_loop = counted[column].fillna(0).mean() if len(counted) else float("nan")
            per_pass = counted_passed[column].fillna(0).mean() if len(counted_passed) else float("nan")
            row[f"{column}_per_loop_expected"] = float(per_loop)
            row[f"{column}_per_pass_expected"] = float(per_pass)
        rows.append(row)
    expected = pd.DataFrame(rows)
    given = summary.astype({c: str for c in GROUP_KEY})
    joined = expected.merge(given, on=GROUP_KEY, how="inner")
    columns = ["mean_rounds_passed"] + [f"tokens_{s}_per_{p}" for s in ("in", "out") for p in ("loop", "pass")]
    for column in columns:
        want, got = joined[f"{column}_expected"], pd.to_numeric(joined[column], errors="coerce")
        both_blank = want.isna() & got.isna()
        close = (want - got).abs() <= 1e-9 * want.abs().clip(lower=1.0)
        bad = joined[~(both_blank | close)]
        check.expect(
            bad.empty,
            f"{name}: {column} must be recomputable from outcomes.parquet (blank when no loop counts tokens); "
            f"{len(bad)} rows differ, {examples(bad, GROUP_KEY + [column, column + '_expected'])}",
        )


# ---- main -----------------------------------------------------------------------------------------


def run(run_dir):
    check = Check()
    paths = {name: run_dir / name for name in ("trajectories.parquet", "outcomes.parquet", "summary.csv")}
    missing = [name for name, path in paths.items() if not path.is_file()]
    if missing:
        check.fail(f"{run_dir}: missing {', '.join(missing)}")
        return check, None
    trajectories_path, outcomes_path = paths["trajectories.parquet"], paths["outcomes.parquet"]

    counts = {}
    frames = None
    for library, reader in (("pandas", read_with_pandas), ("polars", read_with_polars), ("duckdb", read_with_duckdb)):
        try:
            result = reader(check, trajectories_path, outcomes_path)
        except Exception as error:  # any failure to read is the finding, whatever its type
            check.fail(f"{library} cannot read the Parquet files: {type(error).__name__}: {error}")
            continue
        if library == "pandas":
            frames, counts[library] = result[:2], result[2]
        else:
            counts[library] = result
    if frames is None:
        return check, None
    traj, outcomes = frames

    # Compare what every library could count; a count one of them lacks was reported above.
    keys = [k for k in counts.get("pandas", {}) if all(k in c for c in counts.values())]
    for key in keys:
        values = {library: c[key] for library, c in counts.items()}
        check.expect(
            len(set(values.values())) == 1,
            f"the libraries disagree on {key}: " + ", ".join(f"{lib} {v}" for lib, v in values.items()),
        )

    stops, adjudicated = check_trajectories(check, traj) or (None, None)
    check_outcomes(check, outcomes, stops, adjudicated)
    summary = None
    try:
        summary = check_summary(check, paths["summary.csv"], outcomes)
    except Exception as error:  # a CSV that pandas cannot parse is the finding
        check.fail(f"summary.csv cannot be read: {type(error).__name__}: {error}")

    facts = {
        "trajectory rows": len(traj),
        "loops": None if stops is None else len(stops),
        "outcomes": len(outcomes),
        "summary rows": None if summary is None else len(summary),
        "agreed": keys,
        "counts": counts.get("pandas", {}),
        "libraries": list(counts),
    }
    if "exit_reason" in outcomes.columns:
        facts["exits"] = {reason: int(outcomes["exit_reason"].eq(reason).sum()) for reason in EXIT_REASONS}
    return check, facts


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print("usage: check_outputs.py RUN_DIR", file=sys.stderr)
        return 2
    try:
        import duckdb  # noqa: F401
        import pandas  # noqa: F401
        import polars  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as error:
        print(f"check_outputs: FAILED: {error}; install tests/python/requirements.txt", file=sys.stderr)
        return 1
    run_dir = Path(argv[1])
    check, facts = run(run_dir)
    print(f"check_outputs: {run_dir}")
    if facts is not None:
        c = facts["counts"]
        print(
            f"  {facts['trajectory rows']} trajectory rows, {facts['loops']} loops, {facts['outcomes']} outcomes, "
            f"{facts['summary rows']} summary rows"
        )
        if "exits" in facts:
            exits = facts["exits"]
            passes = exits["pass"]
            share = f" ({100 * passes / facts['outcomes']:.1f}%)" if facts["outcomes"] else ""
            print(
                f"  passed {passes}/{facts['outcomes']}{share}; exits: "
                + ", ".join(f"{k} {v}" for k, v in exits.items())
            )
        nested = ", ".join(f"{c[k]} {k}" for k in ("issues", "fatal issues", "dimension scores") if k in c)
        print(
            f"  read with {', '.join(facts['libraries'])}; they agree on {', '.join(facts['agreed'])}"
            + (f" ({nested})" if nested else "")
        )
    if check.failures:
        print(f"FAILED: {len(check.failures)} problem(s):", file=sys.stderr)
        for failure in check.failures:
            print(f"  - {failure}", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
