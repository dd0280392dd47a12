//! Every experiment file the repository ships loads: the bench, the README and the tests run them,
//! and a key or a limit that changed under one would otherwise surface only when that one runs.

use std::path::{Path, PathBuf};

use critbench_engine::experiment::{Experiment, Overrides};

fn shipped() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments").canonicalize().expect("experiments/");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_shipped_experiment_loads_and_names_datasets_that_exist() {
    let files = shipped();
    assert!(files.len() >= 10, "expected the repository's experiments, found {files:?}");
    let mut problems = Vec::new();
    for path in &files {
        match Experiment::load(path, &Overrides::default()) {
            Ok(experiment) => {
                assert!(!experiment.datasets.is_empty(), "{}: no dataset", path.display());
                for dataset in experiment.datasets.iter().filter(|dataset| !dataset.is_file()) {
                    problems.push(format!("{}: dataset {} does not exist", path.display(), dataset.display()));
                }
            }
            Err(error) => problems.push(error.to_string()),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn an_experiment_over_a_limit_is_refused_by_the_same_load() {
    // The check above can fail: the load refuses what a run would.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("over.toml");
    let shipped = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/essays.toml"))
        .unwrap()
        .replace(
            "../datasets/",
            &format!("{}/", Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets").display()),
        );
    assert!(shipped.contains("\nepochs = 1\n"), "essays.toml sets `epochs = 1`");
    std::fs::write(&path, shipped.replace("\nepochs = 1\n", "\nepochs = 2000\n")).unwrap();
    let error = Experiment::load(&path, &Overrides::default()).expect_err("2,000 epochs are refused");
    assert!(error.to_string().contains("`epochs` = 2000 is more than 1000"), "{error}");
}
