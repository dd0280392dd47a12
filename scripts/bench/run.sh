#!/usr/bin/env bash
# The benchmark in one command: builds the release binaries, makes the bench's venv
# with the pinned peers (scripts/bench/requirements.txt), and runs scripts/bench/bench.py, which
# writes docs/benchmarks.md and docs/benchmarks.json (about 10 minutes on 2 cores).
#
#   bash scripts/bench/run.sh            # the full bench, results in docs/
#   bash scripts/bench/run.sh --quick    # every step on small sizes, results in a temporary directory
#   bash scripts/bench/run.sh --runs 5   # other options are passed to bench.py (see its --help)
#
# CARGO_TARGET_DIR is honoured; BENCH_VENV moves the venv; BENCH_NO_BUILD=1 skips the build.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="${BENCH_VENV:-$HOME/.cache/critbench/bench-venv}"

if [[ "${BENCH_NO_BUILD:-0}" != 1 ]]; then
    echo "[bench] cargo build --release --workspace" >&2
    cargo build --release --workspace --quiet
fi
for bin in critbench critbench-bench-server; do
    [[ -x "$target/release/$bin" ]] || { echo "missing $target/release/$bin: build with cargo build --release --workspace" >&2; exit 2; }
done

requirements="$root/scripts/bench/requirements.txt"
if [[ ! -x "$venv/bin/python" ]] || ! cmp -s "$requirements" "$venv/requirements.txt"; then
    echo "[bench] installing the peers into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$venv/requirements.txt"
fi

md="$root/docs/benchmarks.md"
json="$root/docs/benchmarks.json"
args=()
for arg in "$@"; do
    if [[ "$arg" == --quick ]]; then
        quick="$(mktemp -d)"
        md="$quick/benchmarks.md"
        json="$quick/benchmarks.json"
        args+=(--runs 1 --tasks 4000 --langgraph-tasks 1000 --check-tasks 500 --sim-tasks 2000 --rss-small 2000 --rss-large 20000
               --server-tasks 300 --isolation-tasks 2000 --writer-tasks 1000 --metered-tasks 3000 --sweep-tasks-per-slot 1
               --view-tasks 2000)
    else
        args+=("$arg")
    fi
done
"$venv/bin/python" "$root/scripts/bench/bench.py" \
    --critbench "$target/release/critbench" --server "$target/release/critbench-bench-server" \
    --md "$md" --json "$json" "${args[@]}"

