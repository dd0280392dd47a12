#!/usr/bin/env bash
# Measures critiques per second of the host loop on one thread and appends the figure to
# docs/benchmarks.md. Usage: scripts/bench.sh PATH_TO_CRITBENCH
set -euo pipefail
bin="${1:?usage: scripts/bench.sh PATH_TO_CRITBENCH}"
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
line=""
for attempt in 1 2 3; do
    start=$(date +%s.%N)
    result="$("$bin" run experiments/bench-scripted.toml --jobs 1 --quiet --out "$out/run" | tail -n 1)"
    whole=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    result="${result%%; wrote*} (whole command with summaries: ${whole} s)"
    echo "run $attempt: $result"
    line="$line\n  - run $attempt: $result"
done
{
    printf '\n## %s · %s · %s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(nproc) cores"
    printf 'experiments/bench-scripted.toml, --jobs 1, release build:'
    printf "$line\n"
} >> docs/benchmarks.md
echo "appended to docs/benchmarks.md"
