# critbench recipes. Every recipe is plain cargo underneath; see README.md.

# Build everything (CLI and plugins) and run the demo experiment.
demo:
    cargo build --workspace
    cargo run -q -p critbench -- run

# The test suite CI runs (needs the Python packages in tests/python/requirements.txt).
test:
    cargo build --workspace
    cargo test --workspace

# Build the built-in plugins and list them.
plugins:
    cargo build --workspace
    cargo run -q -p critbench -- plugins list

# Throughput of the host loop (scripted backend + scripted critic, one thread, Parquet written);
# appends the measurement to docs/benchmarks.md.
bench:
    cargo build --release --workspace
    bash scripts/bench.sh target/release/critbench

# Build the C example critic into reports/plugins/, where experiments/judge-demo.toml looks for it
# (on macOS name it liblength.dylib).
c-plugin:
    mkdir -p reports/plugins
    cc -std=c11 -Wall -Wextra -pedantic -shared -fPIC -O2 -I crates/abi/include plugins/c-example/length_critic.c -o reports/plugins/liblength.so

# Benchmark the critics themselves — rubric, evidence and the C example — on datasets/judge.jsonl.
judge-demo: c-plugin
    cargo build --workspace
    cargo run -q -p critbench -- judge experiments/judge-demo.toml
