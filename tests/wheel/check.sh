#!/usr/bin/env bash
# The wheel works when installed: builds it (scripts/wheel.sh; dev profile unless --release is
# given), installs it into a fresh virtualenv, and from an empty directory runs `critbench init`
# and `critbench run` with the built-in plugins found beside the installed binary. Fails, naming
# what is missing, when any step does not do its job.
#
#   bash tests/wheel/check.sh [--release]      # needs python3 (with venv) and maturin on PATH
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

fail() { echo "wheel check: $*" >&2; exit 1; }
command -v maturin >/dev/null || fail "maturin is not on PATH (pip install maturin)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$SECONDS
bash scripts/wheel.sh "$@" "$work/dist"
built=$SECONDS
wheels=("$work"/dist/critbench-*.whl)
[[ ${#wheels[@]} -eq 1 && -f "${wheels[0]}" ]] || fail "expected one wheel in $work/dist"

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-index "${wheels[0]}"
exe="$work/venv/bin/critbench"
[[ -x "$exe" ]] || fail "the wheel installed no $exe"
for name in rubric evidence scripted llm_judge; do
    [[ -f "$work/venv/share/critbench/plugins/libcritbench_$name.so" ]] || fail "the wheel installed no $name plugin"
done

# From an empty directory, with nothing of the repository or of cargo's target in reach: no
# plugin dir in the environment, HOME and XDG_DATA_HOME pointing at empty places.
mkdir "$work/empty" "$work/home"
cd "$work/empty"
export HOME="$work/home" XDG_DATA_HOME="$work/home/data"
unset CRITBENCH_PLUGIN_DIR CARGO_TARGET_DIR
listed=$("$exe" plugins list)
for name in rubric evidence scripted llm-judge; do
    grep -q "^$name .*$work/venv/share/critbench/plugins/" <<<"$listed" || fail "plugins list does not show $name:
$listed"
done
"$exe" init starter
# A second init refuses to overwrite, with exit 2.
set +e; "$exe" init starter 2>/dev/null; code=$?; set -e
[[ $code -eq 2 ]] || fail "a second critbench init exited $code, not 2"
"$exe" run starter/experiment.toml --quiet
for file in outcomes.parquet trajectories.parquet summary.csv comparisons.csv report.md report.html manifest.json; do
    [[ -s starter/reports/starter/$file ]] || fail "critbench run wrote no starter/reports/starter/$file"
done
grep -q ',rubric,' starter/reports/starter/summary.csv || fail "summary.csv has no rubric row"
grep -q ',evidence,' starter/reports/starter/summary.csv || fail "summary.csv has no evidence row"
cd "$repo"
echo "wheel check: passed (wheel built in $((built - start)) s, installed and run in $((SECONDS - built)) s)"
