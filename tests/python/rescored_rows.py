"""Checks that a rescoring with the run's own critic reproduces the run: `rescored_rows.py RUN NAME
CRITIC` compares RUN/rescored/NAME's tables with RUN's rows of the critic CRITIC, row for row in
file order, every column but those that name the run or measure time, and checks that no loop is
censored. Exit 1 with the first differences on a mismatch."""

import sys

import pyarrow.parquet as pq

IGNORED = {"run_id", "wall_ms", "critic_ms"}


def rows(path, critic=None):
    data = pq.read_table(path).to_pylist()
    if critic is not None:
        data = [row for row in data if row["critic"] == critic]
    for row in data:
        for column in IGNORED:
            row.pop(column, None)
    return data


def main():
    if len(sys.argv) != 4:
        print("usage: rescored_rows.py RUN NAME CRITIC", file=sys.stderr)
        return 2
    run, name, critic = sys.argv[1:]
    rescored = f"{run}/rescored/{name}"
    failed = False
    for table in ("trajectories", "outcomes"):
        original, again = rows(f"{run}/{table}.parquet", critic), rows(f"{rescored}/{table}.parquet")
        if table == "outcomes":
            censored = [row for row in again if row.pop("censored")]
            if censored:
                print(f"outcomes: {len(censored)} censored loops; first: {censored[0]}")
                failed = True
        if len(original) != len(again) or not original:
            print(f"{table}: {len(original)} rows of the run's critic {critic} vs {len(again)} rescored rows")
            failed = True
            continue
        differences = [(i, x, y) for i, (x, y) in enumerate(zip(original, again)) if x != y]
        if differences:
            failed = True
            i, x, y = differences[0]
            print(f"{table}: {len(differences)} of {len(original)} rows differ; first, row {i}:")
            for column in x:
                if x[column] != y.get(column):
                    print(f"  {column}: {x[column]!r} vs {y.get(column)!r}")
        else:
            print(f"{table}: {len(original)} rows, identical")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
