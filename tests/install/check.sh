#!/usr/bin/env bash
# Every way of installing critbench gives a binary that works on its own: `pip install .` into a
# fresh virtualenv, the wheel `maturin build` makes, and `cargo install --path crates/cli` into a
# temporary prefix. Each installed `critbench`, run from an empty directory with an empty HOME and
# nothing of the repository or of cargo's target in reach, lists its built-in critics, refuses a
# second `init` with exit 2, and runs its starter experiment; from `pip install .`, the `critbench`
# Python module runs a critic and a writer written with it and reads the run back, and so does the
# module installed alone (`pip install ./python`, pure Python) with the binary `cargo install` put
# on PATH. Fails, naming what is missing.
#
#   bash tests/install/check.sh [--release]     # needs python3 (with venv), maturin on PATH, cargo
#   bash tests/install/check.sh --module        # the module alone, with a dev build of the binary
#
# Without --release every build uses the dev profile, which reuses a `cargo build --workspace`
# already done (CI); a user's install builds release. --module checks `pip install ./python` alone,
# against the binary `cargo build -p critbench` leaves in $CARGO_TARGET_DIR/debug (no maturin).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

case "${1:-}" in
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    "" | --release | --module) ;;
    *) echo "install check: unknown option $1 (see --help)" >&2; exit 2 ;;
esac

fail() { echo "install check: $*" >&2; exit 1; }
[[ "${1:-}" == --module ]] || command -v maturin >/dev/null || fail "maturin is not on PATH (pip install maturin)"

# pip's build (maturin's PEP 517 backend) is release unless told otherwise.
profile=dev; cargo_profile=(--debug); maturin_profile=(--profile dev); pip_settings=(--config-settings=build-args="--profile dev")
if [[ "${1:-}" == "--release" ]]; then profile=release; cargo_profile=(); maturin_profile=(--release); pip_settings=(); fi
# The builds share the repository's target directory; the toolchain and crate cache stay where they
# are, so that only the *installed* binary meets an empty HOME.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/home"

# Runs an installed critbench ($1) from a fresh empty directory, with HOME and XDG_DATA_HOME empty.
check() {
    local how=$1 exe=$2 dir
    [[ -x "$exe" ]] || fail "$how installed no $exe"
    dir=$(mktemp -d "$work/empty.XXXX")
    (
        cd "$dir"
        export HOME="$work/home" XDG_DATA_HOME="$work/home/data"
        unset CRITBENCH_PLUGIN_DIR CARGO_TARGET_DIR
        listed=$("$exe" plugins list)
        for name in rubric evidence scripted llm-judge; do
            grep -q "^$name .* built in$" <<<"$listed" || fail "$how: plugins list does not show $name built in:
$listed"
        done
        "$exe" init starter >/dev/null
        set +e; "$exe" init starter 2>/dev/null; code=$?; set -e
        [[ $code -eq 2 ]] || fail "$how: a second critbench init exited $code, not 2"
        "$exe" run starter/experiment.toml --quiet >/dev/null
        for file in outcomes.parquet trajectories.parquet summary.csv comparisons.csv report.md report.html manifest.json; do
            [[ -s starter/reports/starter/$file ]] || fail "$how: critbench run wrote no starter/reports/starter/$file"
        done
        grep -q ',rubric,' starter/reports/starter/summary.csv || fail "$how: summary.csv has no rubric row"
        grep -q ',evidence,' starter/reports/starter/summary.csv || fail "$how: summary.csv has no evidence row"
    )
    echo "install check: $how: passed"
}

# The module in the environment of $2 (its python), with the binary $3 it must find: a critic and
# a writer written with it run in a run `critbench.run` starts, and `open_run` hands the tables to
# pandas and polars (installed for this check only). $4, when given, is put first on PATH.
module_check() {
    local how=$1 python=$2 expected=$3 path=${4:-} module
    "$(dirname "$python")/pip" install --quiet --disable-pip-version-check pandas polars pyarrow
    module=$(mktemp -d "$work/module.XXXX")
    cat >"$module/critic.py" <<'PY'
import critbench

def critique(task, draft, round):
    words = len(draft.split())
    return {"score": min(10, words / 5), "issues": [] if words >= 40 else ["write at least 40 words"]}

if __name__ == "__main__":
    critbench.serve_critic(critique, name="length")
PY
    cat >"$module/writer.py" <<'PY'
import critbench

def generate(task, seed, model):
    return "A first answer to " + task["prompt"]

def revise(task, draft, critique, seed, model):
    # The critique is None when the arm keeps it from the reviser.
    if critique is None:
        return draft + " Said again, at more length."
    return draft + " " + " ".join("More: " + issue + "." for issue in critique["issues"]) * 3

if __name__ == "__main__":
    critbench.serve_writer(generate, revise, name="words")
PY
    printf '{"id": "t%d", "prompt": "Explain topic %d."}\n' 1 1 2 2 3 3 >"$module/tasks.jsonl"
    printf 'name = "module"\ndataset = "tasks.jsonl"\nbackend = "command"\n[writer]\ncommand = ["%s", "writer.py"]\n[[critics]]\nname = "length"\ncommand = ["%s", "critic.py"]\n' \
        "$python" "$python" >"$module/experiment.toml"
    (
        cd "$module"
        export HOME="$work/home" EXPECTED="$expected"
        [[ -z "$path" ]] || export PATH="$path:$PATH"
        unset CRITBENCH_BINARY PYTHONPATH
        "$python" - <<'PY' || fail "$how: the critbench module does not run a critic and read its run"
import os
import critbench, polars

assert critbench.binary() == os.environ["EXPECTED"], critbench.binary()
run = critbench.run("experiment.toml", out="run")
frame, table = run.outcomes.to_pandas(), polars.from_arrow(run.trajectories)
assert len(frame) == run.manifest["loops"] == 9, len(frame)
assert table.height == run.manifest["critiques"] and table["critic_error"].null_count() == table.height
assert run.manifest["writers"][0]["name"] == "words" and run.manifest["failed_loop_count"] == 0, run.manifest
run.verify()
PY
    )
    echo "install check: $how: the critbench module: passed"
}

# The module installed alone from python/ (pure Python, no Rust build) into a fresh virtualenv;
# it finds the binary $1 through PATH.
pure_module_check() {
    local exe=$1 began=$SECONDS
    python3 -m venv "$work/pure"
    "$work/pure/bin/pip" install --quiet --disable-pip-version-check "$repo/python"
    [[ ! -e "$work/pure/bin/critbench" ]] || fail "pip install ./python installed a binary"
    echo "install check: pip install ./python: installed in $((SECONDS - began)) s"
    module_check "pip install ./python" "$work/pure/bin/python" "$exe" "$(dirname "$exe")"
}

start=$SECONDS
if [[ "${1:-}" == --module ]]; then
    cargo build --quiet --locked -p critbench
    pure_module_check "$CARGO_TARGET_DIR/debug/critbench"
    echo "install check: passed (the module alone, $((SECONDS - start)) s)"
    exit 0
fi

python3 -m venv "$work/pip"
"$work/pip/bin/pip" install --quiet --disable-pip-version-check "${pip_settings[@]}" "$repo"
check "pip install ." "$work/pip/bin/critbench"
module_check "pip install ." "$work/pip/bin/python" "$work/pip/bin/critbench"

maturin build --locked --quiet "${maturin_profile[@]}" --out "$work/dist" >/dev/null
wheels=("$work"/dist/critbench-*.whl)
[[ ${#wheels[@]} -eq 1 && -f "${wheels[0]}" ]] || fail "expected one wheel in $work/dist"
python3 -m venv "$work/wheel"
"$work/wheel/bin/pip" install --quiet --disable-pip-version-check --no-index "${wheels[0]}"
check "the wheel" "$work/wheel/bin/critbench"

cargo install --quiet --locked "${cargo_profile[@]}" --path crates/cli --root "$work/prefix"
check "cargo install --path crates/cli" "$work/prefix/bin/critbench"
pure_module_check "$work/prefix/bin/critbench"
echo "install check: passed ($profile profile, $((SECONDS - start)) s)"
