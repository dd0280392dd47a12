#!/usr/bin/env bash
# Builds the critbench wheel: the built-in critic plugins are built and staged in
# target/wheel-data/data/share/critbench/plugins (installed to PREFIX/share/critbench/plugins,
# where PREFIX/bin/critbench looks), then maturin builds the binary and packs both.
#
#   bash scripts/wheel.sh [--release] [OUT_DIR]     # OUT_DIR defaults to target/wheels
#
# Needs maturin on PATH (pip install maturin). Without --release it builds the dev profile,
# which reuses a `cargo build --workspace` already done.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=dev; dir=debug; release=()
if [[ "${1:-}" == "--release" ]]; then profile=release; dir=release; release=(--release --strip); shift; fi
out="${1:-target/wheels}"
target="${CARGO_TARGET_DIR:-target}"
plugins=(rubric evidence scripted llm-judge)

packages=()
for name in "${plugins[@]}"; do packages+=(-p "critbench-$name"); done
cargo build --locked --profile "$profile" "${packages[@]}"
stage=target/wheel-data/data/share/critbench/plugins
rm -rf target/wheel-data && mkdir -p "$stage"
for name in "${plugins[@]}"; do
    cp "$target/$dir/libcritbench_${name//-/_}.so" "$stage/"
done
maturin build --locked "${release[@]}" --out "$out"
