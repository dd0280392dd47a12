#!/usr/bin/env python3
"""Checks critbench's confidence sequence against its authors' reference implementation (confseq).

Usage: python3 tests/python/check_sequential.py SEQUENCES_JSON

SEQUENCES_JSON is written by crates/stats/tests/stats/sequential_reference.rs: fixtures, each with a confidence
level, the per-task paired differences in [-1, 1] in the order they were seen (independent draws), and the
bounds critbench's `ConfidenceSequence` gave after each one.

For each fixture the bounds are recomputed with `confseq.betting.hedged_cs` — the hedged-capital betting
confidence sequence of Waudby-Smith & Ramdas (2023) with predictable plug-in empirical-Bernstein bets, for
independent draws (no `N`) — on the values mapped to [0, 1] ((d + 1) / 2), with
alpha = 1 - confidence, `breaks=1000`, `running_intersection=True`, and its other defaults (theta = 1/2,
truncation at 1/2, one pseudo-observation at mean 1/2 and variance 1/4); the bounds are mapped back
(2 b - 1). critbench follows the same construction in the same order of operations, so every bound must
be equal to 1e-12: that is, the same grid point at every step.

Prints one line per fixture and exits 0, or prints every disagreement and exits 1 (2 for bad usage).
Requirements: tests/python/requirements.txt and confseq (tests/python/requirements-no-build-isolation.txt).
"""

import json
import sys

import numpy as np

# confseq 0.0.11 annotates with `np.float_`, which NumPy 2 removed (it was an alias of float64); the
# annotation is evaluated when confseq.misc is imported.
if not hasattr(np, "float_"):
    np.float_ = np.float64

from confseq.betting import hedged_cs  # noqa: E402

TOLERANCE = 1e-12
BREAKS = 1000


def check(fixture):
    values = np.array(fixture["values"], dtype=float)
    alpha = 1 - fixture["confidence"]
    x = (values + 1) / 2
    lower, upper = hedged_cs(x, alpha=alpha, breaks=BREAKS, running_intersection=True)
    expected = (2 * lower - 1, 2 * upper - 1)
    got = (np.array(fixture["lower"]), np.array(fixture["upper"]))
    problems = []
    for side, want, have in zip(("lower", "upper"), expected, got):
        if len(want) != len(have):
            problems.append(f"{side}: {len(have)} bounds for {len(want)} values")
            continue
        differ = np.flatnonzero(np.abs(want - have) > TOLERANCE)
        for t in differ[:5]:
            problems.append(f"{side} bound after {t + 1} values: critbench {float(have[t])!r}, confseq {float(want[t])!r}")
        if len(differ) > 5:
            problems.append(f"{side}: {len(differ) - 5} more bounds differ")
    final = f"final interval [{expected[0][-1]:+.4f}, {expected[1][-1]:+.4f}] after {len(values)} values"
    return problems, final


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as file:
        fixtures = json.load(file)["fixtures"]
    if not fixtures:
        print("no fixtures to check", file=sys.stderr)
        return 1
    failed = False
    for fixture in fixtures:
        problems, final = check(fixture)
        if problems:
            failed = True
            print(f"{fixture['name']}: {len(problems)} disagreement(s)")
            for problem in problems:
                print(f"  {problem}")
        else:
            bounds = 2 * len(fixture["values"])
            print(f"{fixture['name']}: every bound equal ({bounds} bounds; {final})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
