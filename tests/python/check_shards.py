"""Reads a merged sharded run's partitioned tables the three ways docs/runs.md ("Running at scale")
documents, and checks each against the merged summary: `check_shards.py RUN`.

- pandas: `pd.read_parquet(RUN / "outcomes")` (pyarrow reads the folder, `shard` from the paths);
- Polars: `pl.scan_parquet(RUN / "outcomes/**/*.parquet", hive_partitioning=True)`;
- DuckDB: `read_parquet('RUN/outcomes/*/*.parquet', hive_partitioning = true)`.

Every reader must see every loop once (the summary's `n`, per config × critic × arm, and its
`passed`), and the `shard` column must be the shard the task id hashes to (FNV-1a 64 of the id's
UTF-8 bytes, mod the number of shards). Exit 1 naming the first mismatch."""

import json
import sys
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl

KEYS = ["config_id", "critic", "arm"]


def fnv1a64(data: bytes) -> int:
    value = 0xCBF29CE484222325
    for byte in data:
        value ^= byte
        value = (value * 0x100000001B3) % (1 << 64)
    return value


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check_shards.py RUN", file=sys.stderr)
        return 2
    run = Path(sys.argv[1])
    shards = json.loads((run / "manifest.json").read_text())["shards"]
    summary = pd.read_csv(run / "summary.csv")
    summary = summary[summary["judge"] == "critic"]
    expected = summary.set_index(KEYS)[["n", "passed"]].sort_index()

    by_pandas = pd.read_parquet(run / "outcomes")
    by_polars = (
        pl.scan_parquet(run / "outcomes/**/*.parquet", hive_partitioning=True)
        .select(KEYS + ["task_id", "passed", "shard"])
        .collect()
        .to_pandas()
    )
    by_duckdb = duckdb.sql(
        f"SELECT {', '.join(KEYS)}, task_id, passed, shard "
        f"FROM read_parquet('{run}/outcomes/*/*.parquet', hive_partitioning = true)"
    ).df()

    failed = False
    for name, frame in [("pandas", by_pandas), ("polars", by_polars), ("duckdb", by_duckdb)]:
        counts = (
            frame.assign(passed=frame["passed"].astype(int))
            .groupby(KEYS)
            .agg(n=("passed", "size"), passed=("passed", "sum"))
            .sort_index()
        )
        if len(frame) != int(summary["n"].sum()):
            print(f"{name}: {len(frame)} rows, the summary counts {int(summary['n'].sum())} loops")
            failed = True
        elif not counts.astype(int).equals(expected.astype(int)):
            print(f"{name}: counts per config × critic × arm differ from summary.csv")
            failed = True
        shard = frame["shard"].astype(int)
        home = frame["task_id"].map(lambda task: fnv1a64(task.encode("utf-8")) % shards)
        if not (shard == home).all():
            wrong = frame[shard != home].iloc[0]
            print(f"{name}: task {wrong['task_id']} is in shard {wrong['shard']}, not {home[shard != home].iloc[0]}")
            failed = True
        if sorted(shard.unique()) != list(range(shards)):
            print(f"{name}: shards {sorted(shard.unique())}, expected 0..{shards - 1}")
            failed = True
    if failed:
        return 1
    print(f"pandas, polars and duckdb read {len(by_pandas)} loops in {shards} shards, as summary.csv counts them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
