//! `critbench merge RUN`: one result from the shards of a sharded run.
//!
//! Every shard 0..N-1 must be there and finished, and all must be the same run: the same
//! critbench version, experiment, datasets (by SHA-256) and plugins (by SHA-256). Then the
//! run-level `manifest.json` (the shards' counts added up), `memory.json` (with the memory arm,
//! the same in every shard) and the summaries are written over all shards' partitions, streamed
//! from where the shards wrote them: no table is copied.

use std::path::{Path, PathBuf};

use critbench_storage::manifest::{CritiqueCounts, MANIFEST_FILE, Manifest, RunStatus};
use critbench_storage::shards::{SHARDS_DIR, TABLES, shard_dir, shard_indices};
use serde_json::Value;

pub use super::error::{ForeignRow, MergeProblem, ShardProblem};
use crate::EngineError;
use crate::run_dir::journal::MAX_LISTED_FAILURES;
use crate::run_dir::journal::{changed_keys, short};
use crate::run_dir::layout::{LOCK_FILE, MEMORY_FILE};

/// What a merge wrote.
#[derive(Debug)]
pub struct MergeSummary {
    /// The merged run's directory.
    pub out_dir: PathBuf,
    /// Shards merged.
    pub shards: u32,
    /// Loops in the merged run.
    pub loops: u64,
    /// The merged run's report.
    pub report: critbench_report::Report,
}

/// Experiment fields that may differ between the machines running the shards of one run: where
/// the files were given from, and the number of worker threads.
const LOCAL_FIELDS: [&str; 5] = ["path", "out", "datasets", "plugin_dirs", "jobs"];

/// Checks the shards of the run in `run_dir` and writes its manifest and summaries.
pub fn merge_run(run_dir: &Path) -> Result<MergeSummary, MergeError> {
    let usage = |problem: MergeProblem| MergeError::Refused { dir: run_dir.to_path_buf(), problem: Box::new(problem) };
    if !run_dir.is_dir() {
        return Err(usage(MergeProblem::NoSuchDirectory));
    }
    let found = shard_indices(run_dir);
    if found.is_empty() {
        return Err(usage(MergeProblem::NoShards));
    }
    let mut manifests: Vec<(u32, Manifest)> = Vec::new();
    for &index in &found {
        let dir = shard_dir(run_dir, index);
        if dir.join(LOCK_FILE).exists() {
            return Err(usage(MergeProblem::StillRunning { index, lock: dir.join(LOCK_FILE) }));
        }
        let manifest = Manifest::read(&dir).map_err(|source| usage(MergeProblem::Manifest { index, source }))?;
        let Some(manifest) = manifest else {
            return Err(usage(MergeProblem::Unfinished { index, manifest: dir.join(MANIFEST_FILE) }));
        };
        if manifest.status != RunStatus::Finished {
            return Err(usage(MergeProblem::Interrupted { index, manifest: dir.join(MANIFEST_FILE) }));
        }
        let Some(shard) = manifest.shard else {
            return Err(usage(MergeProblem::NotAShard { dir }));
        };
        if shard.index != index {
            return Err(usage(MergeProblem::OtherIndex { dir, says: shard, index }));
        }
        manifests.push((index, manifest));
    }
    let count = manifests[0].1.shard.map_or(0, |s| s.count);
    if let Some((index, other)) = manifests.iter().find(|(_, m)| m.shard.is_some_and(|s| s.count != count)) {
        return Err(usage(MergeProblem::CountsDisagree {
            first: manifests[0].0,
            count,
            index: *index,
            other: other.shard.map_or(0, |s| s.count),
        }));
    }
    let missing: Vec<u32> = (0..count).filter(|i| !found.contains(i)).collect();
    if let Some(first_missing) = missing.first() {
        let manifest = run_dir.join(SHARDS_DIR).join(first_missing.to_string()).join(MANIFEST_FILE);
        return Err(usage(MergeProblem::Missing { missing, count, manifest }));
    }
    for (index, _) in &manifests {
        for table in TABLES {
            let path = critbench_storage::shards::Shard { index: *index, count }.table_path(run_dir, table);
            if !path.is_file() {
                return Err(usage(MergeProblem::TableMissing { index: *index, table, path }));
            }
        }
    }
    for (index, manifest) in &manifests {
        check_shard_tables(run_dir, *index, count, manifest)
            .map_err(|source| usage(MergeProblem::Tables { index: *index, source }))?;
        // The reports are added up as JSON below: each must first be the model client's.
        if let Some(openai) = &manifest.openai {
            critbench_openai::usage::UsageReport::from_manifest(openai)
                .map_err(|source| usage(MergeProblem::ModelReport { index: *index, source }))?;
        }
    }
    let (first_index, first) = &manifests[0];
    for (index, manifest) in &manifests[1..] {
        if let Some(difference) = difference(first, manifest) {
            return Err(usage(MergeProblem::NotTheSameRun { index: *index, first: *first_index, difference }));
        }
    }
    let _lock = crate::run_dir::claim(&crate::run_dir::Layout::new(run_dir, None), crate::run_dir::Claim::Rebuild)?;
    // Strategy memory: every shard learns from the same learning tasks, so the same hints.
    let memory = |index: u32| std::fs::read(shard_dir(run_dir, index).join(MEMORY_FILE)).ok();
    let first_memory = memory(*first_index);
    if let Some((index, _)) = manifests[1..].iter().find(|(index, _)| memory(*index) != first_memory) {
        let difference = "its strategy memory (memory.json) differs".to_string();
        return Err(usage(MergeProblem::NotTheSameRun { index: *index, first: *first_index, difference }));
    }
    if let Some(bytes) = &first_memory {
        let path = run_dir.join(MEMORY_FILE);
        critbench_storage::files::write_atomically(&path, bytes)
            .map_err(|source| EngineError::Io { context: format!("cannot write {}", path.display()), source })?;
    }

    let merged = merged_manifest(manifests.into_iter().map(|(_, m)| m).collect(), count);
    merged.write(run_dir).map_err(|source| EngineError::Io {
        context: format!("cannot write {}", run_dir.join(MANIFEST_FILE).display()),
        source,
    })?;
    let report = critbench_report::write_reports_trusted(run_dir)?;
    Ok(MergeSummary { out_dir: run_dir.to_path_buf(), shards: count, loops: merged.loops, report })
}

/// Checks shard `index`'s tables before they are merged: they are the files the shard wrote (its
/// manifest's sizes and hashes), its outcomes hold its own tasks only (the split of task ids), no
/// loop twice, and verdicts their rows earn under their configs' policies.
fn check_shard_tables(run_dir: &Path, index: u32, count: u32, manifest: &Manifest) -> Result<(), ShardProblem> {
    if manifest.tables.is_empty() {
        return Err(ShardProblem::NoTables);
    }
    manifest.check_tables(run_dir)?;
    let outcomes =
        critbench_storage::shards::Shard { index, count }.table_path(run_dir, critbench_storage::shards::OUTCOMES);
    let mut seen = std::collections::HashSet::new();
    let mut rows = 0u64;
    critbench_storage::tables::for_each_outcome_stats(&outcomes, |row| {
        rows += 1;
        let owner = critbench_storage::shards::shard_of(row.task_id, count);
        if owner != index {
            return Err(ForeignRow::OtherShards { task_id: row.task_id.to_string(), owner });
        }
        let key = critbench_storage::hash128(&(row.config_id, row.arm, row.critic, row.task_id, row.epoch));
        if !seen.insert(key) {
            return Err(ForeignRow::Twice {
                config_id: row.config_id.to_string(),
                arm: row.arm.to_string(),
                critic: row.critic.to_string(),
                task_id: row.task_id.to_string(),
                epoch: row.epoch,
            });
        }
        Ok(())
    })
    .map_err(|source| ShardProblem::Outcomes { path: outcomes.clone(), source })?;
    if rows != manifest.loops {
        return Err(ShardProblem::LoopCount { path: outcomes, rows, recorded: manifest.loops });
    }
    // Checksums can be made again; a verdict its own row does not earn cannot.
    crate::run_dir::verdicts::check_verdicts(&[outcomes], Some(&manifest.experiment.policies))?;
    Ok(())
}

/// How shard manifest `b` differs from `a` in what must be the same run, if it does.
fn difference(a: &Manifest, b: &Manifest) -> Option<String> {
    if a.critbench_version != b.critbench_version {
        return Some(format!("critbench {} ran it, critbench {} the other", b.critbench_version, a.critbench_version));
    }
    if a.schema_version != b.schema_version {
        return Some(format!("table schema version {} against {}", b.schema_version, a.schema_version));
    }
    let shared = |m: &Manifest| {
        let mut value = serde_json::to_value(&m.experiment).expect("an experiment record serializes");
        if let Some(object) = value.as_object_mut() {
            for field in LOCAL_FIELDS {
                object.remove(field);
            }
        }
        value
    };
    let (before, after) = (shared(a), shared(b));
    if before != after {
        return Some(format!("the experiment differs ({})", changed_keys(&before, &after)));
    }
    let evaluators =
        |m: &Manifest| m.evaluators.iter().map(|p| (p.critic.clone(), p.sha256.clone())).collect::<Vec<_>>();
    if evaluators(a) != evaluators(b) {
        return Some("the held-out evaluators or their plugins differ".into());
    }
    let writers = |m: &Manifest| m.writers.iter().map(|w| (w.role.clone(), w.sha256.clone())).collect::<Vec<_>>();
    if writers(a) != writers(b) {
        return Some("the writer programs differ".into());
    }
    if a.plugins.len() != b.plugins.len() {
        return Some("the critics are not the same list".into());
    }
    for (x, y) in a.plugins.iter().zip(&b.plugins) {
        if x.critic != y.critic || x.sha256 != y.sha256 {
            return Some(format!(
                "critic `{}`'s plugin differs (sha256 {} against {})",
                y.critic,
                short(&y.sha256),
                short(&x.sha256)
            ));
        }
    }
    if a.datasets.len() != b.datasets.len() {
        return Some("the datasets are not the same list".into());
    }
    for (x, y) in a.datasets.iter().zip(&b.datasets) {
        if x.sha256 != y.sha256 {
            return Some(format!(
                "dataset {} differs (sha256 {} against {})",
                y.path.display(),
                short(&y.sha256),
                short(&x.sha256)
            ));
        }
    }
    None
}

/// The run's manifest from its shards': what every shard read and learned is the first's (each
/// reads and checks every row), what each shard ran is added up.
fn merged_manifest(manifests: Vec<Manifest>, count: u32) -> Manifest {
    let mut merged = manifests[0].clone();
    merged.shard = None;
    merged.shards = Some(count);
    merged.status = RunStatus::Finished;
    let rest = &manifests[1..];
    for m in rest {
        merged.loops += m.loops;
        merged.critiques += m.critiques;
        merged.tasks_run += m.tasks_run;
        merged.jobs += m.jobs;
        merged.loops_with_critic_errors += m.loops_with_critic_errors;
        merged.loops_with_writer_errors += m.loops_with_writer_errors;
        merged.failed_loop_count += m.failed_loop_count;
        critbench_storage::manifest::add_unread_keys(&mut merged.unread_critique_keys, &m.unread_critique_keys);
        for failure in &m.failed_loops {
            if merged.failed_loops.len() < MAX_LISTED_FAILURES {
                merged.failed_loops.push(failure.clone());
            }
        }
        merged.calls.generator += m.calls.generator;
        merged.calls.critic += m.calls.critic;
        merged.calls.direct_equivalent += m.calls.direct_equivalent;
        merged.calls.saved += m.calls.saved;
        CritiqueCounts::add_all(&mut merged.evaluations_by_evaluator, &m.evaluations_by_evaluator);
        CritiqueCounts::add_all(&mut merged.critiques_by_critic, &m.critiques_by_critic);
        // Each shard's critics stopped children of their own.
        for (into, records) in [(&mut merged.plugins, &m.plugins), (&mut merged.evaluators, &m.evaluators)] {
            for plugin in into.iter_mut() {
                let theirs = records.iter().find(|r| r.critic == plugin.critic).and_then(|r| r.process);
                if let (Some(mine), Some(theirs)) = (&mut plugin.process, theirs) {
                    *mine = mine.plus(theirs);
                }
            }
        }
        // Each shard started writer processes of its own.
        for writer in merged.writers.iter_mut() {
            if let Some(theirs) = m.writers.iter().find(|r| r.role == writer.role) {
                writer.process = writer.process.plus(theirs.process);
            }
        }
        if m.started_at < merged.started_at {
            merged.started_at.clone_from(&m.started_at);
        }
        if m.finished_at > merged.finished_at {
            merged.finished_at.clone_from(&m.finished_at);
        }
        merged.wall_seconds = merged.wall_seconds.max(m.wall_seconds);
        merged.tables.extend(m.tables.iter().map(|(name, record)| (name.clone(), record.clone())));
        merged.openai = match (merged.openai.take(), &m.openai) {
            (Some(a), Some(b)) => Some(add_counts(a, b)),
            (a, b) => a.or_else(|| b.clone()),
        };
    }
    merged.calls.ratio = merged.calls.direct_equivalent as f64 / merged.calls.generator.max(1) as f64;
    merged
}

/// The model clients' reports of two shards as one: whole numbers added up, anything else the
/// first shard's.
fn add_counts(a: Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Object(mut x), Value::Object(y)) => {
            for (key, value) in y {
                let merged = match x.remove(key) {
                    Some(mine) => add_counts(mine, value),
                    None => value.clone(),
                };
                x.insert(key.clone(), merged);
            }
            Value::Object(x)
        }
        (Value::Number(x), Value::Number(y)) => match (x.as_u64(), y.as_u64()) {
            (Some(x), Some(y)) => Value::from(x + y),
            _ => Value::Number(x),
        },
        (a, _) => a,
    }
}

/// Why `critbench merge` refused a run's shards, or failed.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Refused (exit status 2): the run's directory and which shard is missing, unfinished or
    /// different, and how.
    #[error("cannot merge {}: {problem}", dir.display())]
    Refused {
        /// The merged run's directory.
        dir: PathBuf,
        /// Which shard is missing, unfinished or different, and how.
        #[source]
        problem: Box<MergeProblem>,
    },
    /// What any command can fail with.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

from_common_failures!(MergeError);

impl MergeError {
    /// Whether the user can fix this by changing their input (exit status 2).
    pub fn is_usage(&self) -> bool {
        match self {
            MergeError::Refused { .. } => true,
            MergeError::Engine(error) => error.is_usage(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_says_what_it_said_and_keeps_its_cause_typed() {
        let dir = tempfile::tempdir().unwrap();
        let none = dir.path().join("none");
        let error = merge_run(&none).unwrap_err();
        assert_eq!(error.to_string(), format!("cannot merge {}: no such directory", none.display()));
        assert!(error.is_usage());

        let shard = dir.path().join(SHARDS_DIR).join("0");
        std::fs::create_dir_all(&shard).unwrap();
        std::fs::write(shard.join("manifest.json"), "{").unwrap();
        let error = merge_run(dir.path()).unwrap_err();
        let MergeError::Refused { problem, .. } = &error else { panic!("{error:?}") };
        let MergeProblem::Manifest { index: 0, source } = &**problem else { panic!("{problem:?}") };
        assert_eq!(error.to_string(), format!("cannot merge {}: shard 0: {source}", dir.path().display()));
        let problem = std::error::Error::source(&error).expect("the problem is the error's source");
        let manifest = problem.source().expect("the manifest's error is the problem's source");
        assert!(manifest.downcast_ref::<critbench_storage::manifest::ManifestError>().is_some(), "{manifest:?}");
    }

    #[test]
    fn model_reports_add_their_counts() {
        let a = serde_json::json!({"calls": {"total": 3}, "endpoint": "http://a", "tokens": {"cap_reached": false}});
        let b = serde_json::json!({"calls": {"total": 4, "failures": 1}, "endpoint": "http://b"});
        let merged = add_counts(a, &b);
        assert_eq!(merged["calls"]["total"], 7);
        assert_eq!(merged["calls"]["failures"], 1);
        assert_eq!(merged["endpoint"], "http://a");
        assert_eq!(merged["tokens"]["cap_reached"], false);
    }
}
