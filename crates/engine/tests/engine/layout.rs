//! Every file a run writes is one the run directory's layout names: the tables (storage's list),
//! the report's files (the report's list), the engine's own (`manifest.json`, `memory.json`), and
//! in a rescoring's folder `censored.csv`. A file written but not named would be left behind by
//! `--overwrite` or refused as someone else's.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use critbench_engine::commands::rescore::{CriticChoice, RescoreOptions, rescore_run};
use critbench_engine::experiment::{Experiment, Overrides};
use critbench_engine::run::{RunOptions, run_experiment};
use critbench_engine::run_dir::layout::{DERIVED_FILES, RESCORED_DIR, rescore_files, run_files};

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments").join(name)
}

/// Runs the shipped experiment `name` on the first `limit` tasks of each file into `out`.
fn run(name: &str, limit: usize, out: &Path) {
    let overrides =
        Overrides { out: Some(out.to_path_buf()), limit: Some(limit), store_drafts: true, ..Overrides::default() };
    let experiment = Experiment::load(&shipped(name), &overrides).unwrap();
    run_experiment(&experiment, &RunOptions { quiet: true, ..RunOptions::default() }).unwrap();
}

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

#[test]
fn every_file_a_run_or_a_rescoring_writes_is_named_by_the_layout() {
    let dir = tempfile::tempdir().unwrap();
    let named: BTreeSet<String> = run_files().into_iter().chain(DERIVED_FILES.iter().map(|f| f.to_string())).collect();
    let mut written = BTreeSet::new();
    for (experiment, limit) in [("demo.toml", 3), ("memory.toml", 12), ("sequential.toml", 40)] {
        let out = dir.path().join(experiment);
        run(experiment, limit, &out);
        let files = names(&out);
        let unnamed: Vec<&String> = files.iter().filter(|name| !named.contains(*name)).collect();
        assert!(unnamed.is_empty(), "{experiment}: {unnamed:?} written but not named by the layout");
        written.extend(files);
    }
    for file in ["evaluations.parquet", "memory.json", "sequential.csv", "evaluators.csv"] {
        assert!(written.contains(file), "{file} was written by one of the runs: {written:?}");
    }

    let run_dir = dir.path().join("demo.toml");
    let options = RescoreOptions {
        name: "rubric".into(),
        critic: CriticChoice::Run,
        config: None,
        kinds: None,
        plugin_dirs: Vec::new(),
        isolate_plugins: false,
        datasets: Vec::new(),
        jobs: 2,
        overwrite: false,
        resume: false,
        quiet: true,
        interrupt: None,
    };
    rescore_run(&run_dir, &options).unwrap();
    let named: BTreeSet<String> =
        rescore_files().into_iter().chain(DERIVED_FILES.iter().map(|f| f.to_string())).collect();
    let files = names(&run_dir.join(RESCORED_DIR).join("rubric"));
    assert!(files.contains("censored.csv"), "{files:?}");
    let unnamed: Vec<&String> = files.iter().filter(|name| !named.contains(*name)).collect();
    assert!(unnamed.is_empty(), "the rescoring wrote {unnamed:?}, not named by the layout");
}
