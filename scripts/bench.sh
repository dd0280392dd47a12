#!/usr/bin/env bash
# Kept for old habits: the benchmark is scripts/bench/run.sh (see its header).
exec bash "$(dirname "$0")/bench/run.sh" "$@"
