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
