//! A run's durable progress, in `RUN/in-progress/`: what the run is (`run.json`, checked before
//! a resume) and what it has committed (`journal.jsonl`, one line per committed part).
//!
//! The sink writes rows into part files (`trajectories-NNNNN.parquet`, `outcomes-NNNNN.parquet`,
//! written as `*.tmp` and renamed once complete and on disk) and commits a pair every couple of
//! seconds by appending a line to the journal. A part is the run's only when the journal names it:
//! a kill at any moment leaves every committed part readable and the journal naming exactly them.
//! Chunks are written in source order, so the journal's `next_chunk` says where to resume.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::EngineError;
use crate::error::RunDirError;
use crate::plan::Plan;

/// The folder of a run's progress; removed when the run finishes.
pub const PROGRESS_DIR: &str = "in-progress";

/// What must not change between a run and its resumption.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub run_id: String,
    pub critbench_version: String,
    /// The resolved experiment, without what may differ between two invocations of one run
    /// (`jobs`, and where the files were given from).
    pub experiment: serde_json::Value,
    /// Each critic's plugin file and its SHA-256.
    pub plugins: Vec<PluginStamp>,
    /// Each dataset file's size and modification time, as the run found them.
    pub datasets: Vec<DatasetStamp>,
    /// Tasks per chunk: chunk numbers in the journal count these.
    pub chunk_tasks: usize,
    /// The shard this run is, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<critbench_storage::shards::Shard>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PluginStamp {
    pub critic: String,
    pub sha256: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetStamp {
    pub path: PathBuf,
    pub bytes: u64,
    pub modified_ns: u128,
}

impl Fingerprint {
    pub fn of(
        plan: &Plan<'_>,
        run_id: &str,
        chunk_tasks: usize,
        shard: Option<critbench_storage::shards::Shard>,
    ) -> Result<Fingerprint, EngineError> {
        let experiment = plan.experiment;
        let mut resolved = serde_json::to_value(experiment).expect("the experiment serializes");
        if let Some(object) = resolved.as_object_mut() {
            object.remove("jobs");
            object.remove("path");
            object.remove("out");
        }
        let mut datasets = Vec::new();
        for path in &experiment.datasets {
            let metadata = std::fs::metadata(path)
                .map_err(|source| EngineError::Io { context: format!("cannot read {}", path.display()), source })?;
            let modified_ns = metadata
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            datasets.push(DatasetStamp { path: absolute(path), bytes: metadata.len(), modified_ns });
        }
        Ok(Fingerprint {
            run_id: run_id.to_string(),
            critbench_version: env!("CARGO_PKG_VERSION").to_string(),
            experiment: resolved,
            plugins: plan
                .plugins
                .iter()
                .map(|p| PluginStamp { critic: p.critic.clone(), sha256: p.library.sha256.clone() })
                .collect(),
            datasets,
            chunk_tasks,
            shard,
        })
    }

    /// Why `now` cannot resume the run recorded as `self`, if it cannot.
    pub fn differences(&self, now: &Fingerprint) -> Vec<String> {
        let mut changed = Vec::new();
        if self.critbench_version != now.critbench_version {
            changed.push(format!(
                "critbench is {} but the run was started by {}",
                now.critbench_version, self.critbench_version
            ));
        }
        if self.experiment != now.experiment {
            changed.push(format!("the experiment changed ({})", changed_keys(&self.experiment, &now.experiment)));
        }
        for (before, after) in self.plugins.iter().zip(&now.plugins) {
            if before != after {
                changed.push(format!(
                    "critic `{}`'s plugin changed (sha256 {} then, {} now)",
                    after.critic,
                    short(&before.sha256),
                    short(&after.sha256)
                ));
            }
        }
        for (before, after) in self.datasets.iter().zip(&now.datasets) {
            if before != after {
                changed.push(format!(
                    "dataset {} changed ({} bytes then, {} now; or its modification time)",
                    after.path.display(),
                    before.bytes,
                    after.bytes
                ));
            }
        }
        if self.plugins.len() != now.plugins.len() || self.datasets.len() != now.datasets.len() {
            changed.push("the critics or datasets are not the same list".into());
        }
        if self.shard != now.shard {
            let name = |shard: Option<critbench_storage::shards::Shard>| {
                shard.map_or_else(|| "the whole run".to_string(), |s| format!("shard {s}"))
            };
            changed.push(format!("the run was {} and is now {}", name(self.shard), name(now.shard)));
        }
        if self.chunk_tasks != now.chunk_tasks && changed.is_empty() {
            changed.push(format!("tasks per chunk were {} and are now {}", self.chunk_tasks, now.chunk_tasks));
        }
        changed
    }
}

/// The first 12 characters of a hash, for messages.
pub(crate) fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// The top-level keys two JSON objects do not agree on, sorted, each in backticks.
pub(crate) fn changed_keys(before: &serde_json::Value, after: &serde_json::Value) -> String {
    let (Some(before), Some(after)) = (before.as_object(), after.as_object()) else { return String::new() };
    let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// One committed part: the counts of everything written up to and including it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Commit {
    pub part: u32,
    /// Chunks written so far: a resumed run starts at this one.
    pub next_chunk: u64,
    #[serde(flatten)]
    pub counts: Counts,
    /// Failed loops described, those of this part only.
    pub failed: Vec<String>,
}

/// The part files of number `part`: trajectories, then outcomes.
pub fn part_paths(dir: &Path, part: u32) -> [PathBuf; 2] {
    [dir.join(format!("trajectories-{part:05}.parquet")), dir.join(format!("outcomes-{part:05}.parquet"))]
}

/// Appends commits to `journal.jsonl`, each on disk before the call returns.
pub struct Journal {
    file: std::fs::File,
    path: PathBuf,
}

impl Journal {
    /// Starts a run's progress: `run.json` and an empty journal.
    pub fn create(dir: &Path, fingerprint: &Fingerprint) -> Result<Journal, EngineError> {
        std::fs::create_dir_all(dir).map_err(|source| io(dir, source))?;
        write_atomically(
            &dir.join("run.json"),
            &(serde_json::to_string_pretty(fingerprint).expect("serializes") + "\n"),
        )?;
        Journal::open(dir)
    }

    /// Opens the journal empty: a resumed run writes its commits back first.
    fn open(dir: &Path) -> Result<Journal, EngineError> {
        let path = dir.join("journal.jsonl");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|source| io(&path, source))?;
        Ok(Journal { file, path })
    }

    pub fn append(&mut self, commit: &Commit) -> Result<(), EngineError> {
        let line = serde_json::to_string(commit).expect("a commit serializes") + "\n";
        self.file.write_all(line.as_bytes()).map_err(|source| io(&self.path, source))?;
        self.file.sync_data().map_err(|source| io(&self.path, source))
    }
}

/// What an earlier run of this directory left: its fingerprint and its commits.
pub struct SavedProgress {
    pub fingerprint: Fingerprint,
    pub commits: Vec<Commit>,
}

impl SavedProgress {
    /// Reads `dir`; `None` when there is no progress to resume.
    pub fn read(dir: &Path) -> Result<Option<SavedProgress>, EngineError> {
        let run = dir.join("run.json");
        let text = match std::fs::read_to_string(&run) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(io(&run, source)),
        };
        let fingerprint: Fingerprint =
            serde_json::from_str(&text).map_err(|source| RunDirError::NotProgress { path: run.clone(), source })?;
        let journal = dir.join("journal.jsonl");
        let text = std::fs::read_to_string(&journal).unwrap_or_default();
        let mut commits = Vec::new();
        for line in text.lines() {
            // A line cut short by a kill was never committed.
            match serde_json::from_str::<Commit>(line) {
                Ok(commit) if commit.part as usize == commits.len() => commits.push(commit),
                _ => break,
            }
        }
        Ok(Some(SavedProgress { fingerprint, commits }))
    }

    /// Reopens the journal for more commits, dropping a torn last line and stray part files.
    pub fn reopen(&self, dir: &Path) -> Result<Journal, EngineError> {
        let mut journal = Journal::open(dir)?;
        for commit in &self.commits {
            journal.append(commit)?;
        }
        let committed = self.commits.len() as u32;
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let stray = name.ends_with(".tmp")
                    || (name.ends_with(".parquet")
                        && name
                            .rsplit_once('-')
                            .and_then(|(_, n)| n.trim_end_matches(".parquet").parse::<u32>().ok())
                            .is_some_and(|part| part >= committed));
                if stray {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        Ok(journal)
    }
}

/// `path.tmp`: where a file is written before it is renamed into place.
pub(crate) fn temporary(path: PathBuf) -> PathBuf {
    let mut name = path.into_os_string();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Writes `text` to `path` by way of a temporary file and a rename, so that `path` is always
/// either the old file or the new one.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), EngineError> {
    let temporary = temporary(path.to_path_buf());
    let mut file = std::fs::File::create(&temporary).map_err(|source| io(&temporary, source))?;
    file.write_all(text.as_bytes()).map_err(|source| io(&temporary, source))?;
    file.sync_all().map_err(|source| io(&temporary, source))?;
    std::fs::rename(&temporary, path).map_err(|source| io(path, source))
}

/// Makes renames in `dir` durable.
pub fn sync_dir(dir: &Path) {
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
}

fn io(path: &Path, source: std::io::Error) -> EngineError {
    EngineError::Io { context: format!("cannot write {}", path.display()), source }
}

/// The run's progress folder.
pub fn progress_dir(out: &Path) -> PathBuf {
    out.join(PROGRESS_DIR)
}
/// The sink's running totals, as the journal records them at each commit.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Output loops: one per config a recording serves.
    pub loops: u64,
    /// Output rounds (rows of `trajectories.parquet`).
    pub critiques: u64,
    pub passed: u64,
    /// Rounds actually recorded: one generator call and one critique each.
    pub recorded_rounds: u64,
    /// Loops that failed outright; their rows are missing.
    pub failed_count: u64,
    /// Loops with at least one critique that failed every attempt.
    pub loops_with_critic_errors: u64,
    /// Per critic: critiques recorded, and those that failed every attempt.
    #[serde(default)]
    pub critiques_by_critic: BTreeMap<String, CritiqueCounts>,
}

use critbench_storage::manifest::CritiqueCounts;
