"""Checks that two run directories hold the same rows, row for row, apart from what names the run
or measures time: `same_rows.py RUN_A RUN_B`. Used to prove that a replayed policy sweep equals
the direct one, and that a sharded run equals the run in one piece (a sharded run's tables are
the Hive-partitioned folders `outcomes/shard=I/`; the `shard` column they add is left out). With
`--tasks-of-a`, RUN_B's rows are first cut to the tasks RUN_A has: a sequential run against the
full run of the same experiment. Exit 1 with the first differences on a mismatch."""

import os
import sys

import pyarrow.parquet as pq

IGNORED = {"run_id", "wall_ms", "gen_ms", "critic_ms"}
KEYS = ["critic", "task_id", "arm", "epoch", "config_id"]


def rows(run_dir, table):
    single = f"{run_dir}/{table}.parquet"
    data = pq.read_table(single if os.path.isfile(single) else f"{run_dir}/{table}").to_pylist()
    for row in data:
        for column in IGNORED | {"shard"}:
            row.pop(column, None)
    order = KEYS + (["round"] if table == "trajectories" else [])
    return sorted(data, key=lambda r: tuple(r[k] for k in order))


def main():
    args = sys.argv[1:]
    subset = "--tasks-of-a" in args
    args = [a for a in args if a != "--tasks-of-a"]
    if len(args) != 2:
        print("usage: same_rows.py RUN_A RUN_B [--tasks-of-a]", file=sys.stderr)
        return 2
    a_dir, b_dir = args
    failed = False
    for table in ("outcomes", "trajectories"):
        a, b = rows(a_dir, table), rows(b_dir, table)
        if subset:
            tasks = {row["task_id"] for row in a}
            b = [row for row in b if row["task_id"] in tasks]
        if len(a) != len(b):
            print(f"{table}: {len(a)} rows vs {len(b)} rows")
            failed = True
            continue
        differences = [(x, y) for x, y in zip(a, b) if x != y]
        if differences:
            failed = True
            print(f"{table}: {len(differences)} of {len(a)} rows differ; first:")
            x, y = differences[0]
            for column in x:
                if x[column] != y.get(column):
                    print(f"  {column}: {x[column]!r} vs {y.get(column)!r}")
        else:
            print(f"{table}: {len(a)} rows, identical")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
