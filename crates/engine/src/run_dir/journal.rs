//! A run's durable progress, in `RUN/in-progress/`: what the run is (`run.json`, checked before
//! a resume) and what it has committed (`journal.jsonl`, one line per committed part).
//!
//! The sink writes rows into part files (`trajectories-NNNNN.parquet`, `outcomes-NNNNN.parquet`,
//! written as `*.tmp` and renamed once complete and on disk) and commits a pair every couple of
//! seconds by appending a line to the journal. A part is the run's only when the journal names it:
//! a kill at any moment leaves every committed part readable and the journal naming exactly them.
//! Chunks are written in source order, so the journal's `next_chunk` says where to resume.
//!
//! Nothing read back is trusted unchecked. Each journal line carries the SHA-256 of its own
//! commit, and each commit the size and SHA-256 of its part files; and since a checksum can be
//! made again, each line's counts are checked against its part's own rows. A resumed run checks
//! every line and every part: the first that fails its check (a line edited or cut short, a part
//! truncated, damaged or missing, counts its part does not hold) ends what is kept, and that part
//! and every one after it are recomputed, so the run still ends equal to an uninterrupted one.

use std::collections::BTreeMap;
use std::io::Write;

use std::path::{Path, PathBuf};

use critbench_storage::shards::ALL_TABLES;
use serde::{Deserialize, Serialize};

use crate::run_dir::RunDirError;

/// The folder of a run's progress; removed when the run finishes.
pub const PROGRESS_DIR: &str = "in-progress";

/// What a pass is, in its progress folder: what a resume checks before it trusts the journal.
pub const RUN_JSON: &str = "run.json";

/// The journal, one line per committed part.
pub const JOURNAL_FILE: &str = "journal.jsonl";

/// Failed loops a run lists (each commit's `failed`, the manifest's `failed_loops`); the count is
/// always exact.
pub const MAX_LISTED_FAILURES: usize = 1000;

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
    /// Each dataset file's size and content hash, as the run found them.
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
    /// Made canonical, so that a file named another way is the same file.
    pub path: PathBuf,
    pub bytes: u64,
    pub sha256: String,
}

impl Fingerprint {
    /// Checks that a pass over the datasets (`read`, in the run's order) read the bytes hashed
    /// here before the run began; the error names the first file that differs. A pass that
    /// stopped early has no hash for the file it stopped in: that file is not compared.
    pub fn check_read(
        &self,
        read: &[critbench_storage::manifest::DatasetRecord],
    ) -> Result<(), critbench_storage::dataset::DatasetError> {
        for (stamp, record) in self.datasets.iter().zip(read) {
            if !record.sha256.is_empty() && record.sha256 != stamp.sha256 {
                return Err(critbench_storage::dataset::DatasetError::changed_while_read(
                    &record.path,
                    &stamp.sha256,
                    &record.sha256,
                ));
            }
        }
        Ok(())
    }

    /// Why `now` cannot resume the run recorded as `self`, if it cannot.
    pub fn differences(&self, now: &Fingerprint) -> Vec<String> {
        let mut changed = Vec::new();
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
            if before.path != after.path {
                changed.push(format!(
                    "the datasets are not the same files ({} then, {} now)",
                    before.path.display(),
                    after.path.display()
                ));
            } else if before != after {
                changed.push(format!(
                    "dataset {} changed ({} bytes, sha256 {} then; {} bytes, sha256 {} now)",
                    after.path.display(),
                    before.bytes,
                    short(&before.sha256),
                    after.bytes,
                    short(&after.sha256)
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

/// `critic` (a critic's or evaluator's settings, as JSON) without its `isolation`, which changes
/// how its critiques are computed (in process or in child processes), not what they are: not part
/// of what a resumed run or rescoring must find unchanged.
pub(crate) fn without_isolation(critic: &mut serde_json::Value) {
    if let Some(critic) = critic.as_object_mut() {
        critic.remove("isolation");
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

/// A file of the progress folder: `run.json`, `journal.jsonl`, a part, or one being written.
pub(crate) fn is_progress_file(name: &str) -> bool {
    let name = name.strip_suffix(".tmp").unwrap_or(name);
    if name == RUN_JSON || name == JOURNAL_FILE {
        return true;
    }
    let Some(stem) = name.strip_suffix(".parquet") else { return false };
    let Some((table, number)) = stem.rsplit_once('-') else { return false };
    ALL_TABLES.contains(&table) && !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())
}

/// The name of `table`'s file in part number `part`.
pub(crate) fn part_file(table: &str, part: u32) -> String {
    format!("{table}-{part:05}.parquet")
}

/// A file's size and SHA-256.
pub(crate) fn file_stamp(path: &Path) -> std::io::Result<(u64, String)> {
    critbench_storage::files::stamp(path)
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
    /// The part's files as they were committed, in the order of its tables.
    pub files: Vec<PartFile>,
    /// A sequential run's paired differences of this part's tasks, in order: what a resumed run
    /// replays into its monitor. Absent in a plain run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sequential: Vec<TaskValues>,
}

/// One task's paired difference for one comparison of a sequential run, as its commit records it: Σ (A passed − B passed) over the epochs both
/// arms ran, and how many epochs that is. Whole numbers, so that a resumed run replays exactly
/// what the interrupted one saw. Written as `[difference, pairs]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Paired(pub i64, pub u32);

impl Paired {
    /// The task's value for the confidence sequence: the mean difference over its pairs.
    pub fn value(self) -> f64 {
        self.0 as f64 / f64::from(self.1)
    }
}

/// A task's value for each comparison, in the follower's order; `None` where its critic does not
/// take the task or no pair of loops ran.
pub type TaskValues = Vec<Option<Paired>>;

/// A committed part file: its name in the progress folder, its size and its SHA-256.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PartFile {
    pub name: String,
    pub bytes: u64,
    pub sha256: String,
}

impl PartFile {
    /// The file at `path` as it is on disk now.
    pub fn of(path: &Path) -> std::io::Result<PartFile> {
        let (bytes, sha256) = file_stamp(path)?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(PartFile { name, bytes, sha256 })
    }

    /// Why the file in `dir` is not the one committed, if it is not.
    fn mismatch(&self, dir: &Path) -> Option<LineProblem> {
        match PartFile::of(&dir.join(&self.name)) {
            Err(source) => Some(LineProblem::Unreadable { name: self.name.clone(), source }),
            Ok(now) if now.bytes != self.bytes => {
                Some(LineProblem::Size { name: self.name.clone(), now: now.bytes, committed: self.bytes })
            }
            Ok(now) if now.sha256 != self.sha256 => Some(LineProblem::Content {
                name: self.name.clone(),
                then: short(&self.sha256).to_string(),
                now: short(&now.sha256).to_string(),
            }),
            Ok(_) => None,
        }
    }
}

/// Why a journal line is not a commit to resume from: the line itself, or the part files it names.
#[derive(Debug, thiserror::Error)]
enum LineProblem {
    #[error("it is not a journal line ({0})")]
    NotALine(#[source] serde_json::Error),
    #[error("it does not match its own checksum (edited, or damaged)")]
    Checksum,
    #[error("its commit does not read back ({0})")]
    Commit(#[source] serde_json::Error),
    #[error("it commits part {found} where part {expected} was due")]
    Part { found: u32, expected: u32 },
    #[error("its chunk count goes back")]
    ChunkCountBack,
    #[error("it names {found} part files where {expected} were due")]
    FileCount { found: usize, expected: usize },
    #[error("{name} cannot be read ({source})")]
    Unreadable { name: String, source: std::io::Error },
    #[error("{name} is {now} bytes, but {committed} were committed")]
    Size { name: String, now: u64, committed: u64 },
    #[error("{name}'s content changed since it was committed (sha256 {then} then, {now} now)")]
    Content { name: String, then: String, now: String },
    #[error("its counts go back")]
    CountsBack,
    #[error(
        "{name} holds {rows} loop(s) of {tasks} task(s), but the line counts {loops} loop(s) of {counted} task(s) \
         ({failed} failed) since the part before"
    )]
    Counts { name: String, rows: u64, tasks: u64, loops: u64, counted: u64, failed: u64 },
}

/// A journal line: the commit as JSON, and the SHA-256 of exactly those bytes.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    commit: &'a serde_json::value::RawValue,
    sha256: String,
}

/// The journal line of `commit`.
fn journal_line(commit: &Commit) -> String {
    let body = serde_json::to_string(commit).expect("a commit serializes");
    let sha256 = critbench_storage::sha256_hex(body.as_bytes());
    format!("{{\"commit\":{body},\"sha256\":\"{sha256}\"}}\n")
}

/// The commit a journal line holds, checked against its own hash and its place in the journal
/// (`part` numbers count up from 0; `next_chunk` never goes back).
fn read_line(line: &str, expected_part: u32, previous: Option<&Commit>) -> Result<Commit, LineProblem> {
    let parsed: Line<'_> = serde_json::from_str(line).map_err(LineProblem::NotALine)?;
    if critbench_storage::sha256_hex(parsed.commit.get().as_bytes()) != parsed.sha256 {
        return Err(LineProblem::Checksum);
    }
    let commit: Commit = serde_json::from_str(parsed.commit.get()).map_err(LineProblem::Commit)?;
    if commit.part != expected_part {
        return Err(LineProblem::Part { found: commit.part, expected: expected_part });
    }
    if previous.is_some_and(|p| commit.next_chunk < p.next_chunk) {
        return Err(LineProblem::ChunkCountBack);
    }
    Ok(commit)
}

/// Appends commits to `journal.jsonl`, each on disk before the call returns.
pub struct Journal {
    file: std::fs::File,
    path: PathBuf,
}

impl Journal {
    /// Starts a run's (or a rescoring's) progress: `run.json` and an empty journal.
    pub fn create(dir: &Path, fingerprint: &impl Serialize) -> Result<Journal, RunDirError> {
        std::fs::create_dir_all(dir).map_err(|source| io(dir, source))?;
        write_atomically(
            &dir.join(RUN_JSON),
            &(serde_json::to_string_pretty(fingerprint).expect("serializes") + "\n"),
        )?;
        Journal::open(dir, &[])
    }

    /// Opens the journal holding `commits` and nothing else: written aside and renamed into
    /// place, so that a kill while a resumed run rewrites it leaves the old journal or the new.
    fn open(dir: &Path, commits: &[Commit]) -> Result<Journal, RunDirError> {
        let path = dir.join(JOURNAL_FILE);
        let text: String = commits.iter().map(journal_line).collect();
        critbench_storage::files::write_atomically(&path, text.as_bytes()).map_err(|source| io(&path, source))?;
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|source| io(&path, source))?;
        Ok(Journal { file, path })
    }

    pub fn append(&mut self, commit: &Commit) -> Result<(), RunDirError> {
        self.file.write_all(journal_line(commit).as_bytes()).map_err(|source| io(&self.path, source))?;
        self.file.sync_data().map_err(|source| io(&self.path, source))
    }
}

/// What an earlier pass (a run, a rescoring) left in its progress folder: its fingerprint and
/// its commits.
pub struct SavedProgress<F> {
    pub fingerprint: F,
    /// The commits that passed every check, in order.
    pub commits: Vec<Commit>,
    /// Why the journal's later lines, if any, are not kept: the first check that failed. A line
    /// cut short by a kill is not a failure (it was never committed).
    pub dropped: Option<String>,
}

/// The one field of `run.json` read before the rest: who wrote it.
#[derive(Deserialize)]
struct WrittenBy {
    critbench_version: String,
}

impl<F: serde::de::DeserializeOwned> SavedProgress<F> {
    /// Reads the progress folder `dir`, whose parts hold `files_per_part` files each; `None` when
    /// there is no progress to resume. Progress another critbench wrote is refused, naming it: a
    /// progress folder is read only by the critbench that wrote it.
    pub fn read(dir: &Path, files_per_part: usize) -> Result<Option<SavedProgress<F>>, RunDirError> {
        let run = dir.join(RUN_JSON);
        let text = match std::fs::read_to_string(&run) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(io(&run, source)),
        };
        let not_progress = |source| RunDirError::NotProgress { path: run.clone(), source };
        let written_by: WrittenBy = serde_json::from_str(&text).map_err(not_progress)?;
        if written_by.critbench_version != env!("CARGO_PKG_VERSION") {
            return Err(RunDirError::OtherCritbench { path: run, version: written_by.critbench_version });
        }
        let fingerprint: F = serde_json::from_str(&text).map_err(not_progress)?;
        let (commits, dropped) = read_journal(dir, files_per_part);
        Ok(Some(SavedProgress { fingerprint, commits, dropped }))
    }
}

/// Whether `dir` holds a run's progress (not a rescoring's), whichever critbench wrote it: a
/// `run.json` that says which critbench wrote it and names no rescoring.
pub fn progress_of_a_run(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join(RUN_JSON)) else { return false };
    serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|value| {
        value.get("critbench_version").is_some_and(serde_json::Value::is_string) && value.get("rescore").is_none()
    })
}

/// The commits of `dir/journal.jsonl` that pass every check, in order, and why the later lines,
/// if any, are not kept: the first check that failed (a line cut short by a kill is not a
/// failure: it was never committed).
fn read_journal(dir: &Path, files_per_part: usize) -> (Vec<Commit>, Option<String>) {
    let journal = dir.join(JOURNAL_FILE);
    let text = std::fs::read_to_string(&journal).unwrap_or_default();
    let mut commits: Vec<Commit> = Vec::new();
    let mut dropped = None;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (index, line) in lines.iter().enumerate() {
        // A last line without its newline was cut short by a kill: never committed.
        if !line.ends_with('\n') && index + 1 == lines.len() {
            break;
        }
        let checked =
            read_line(line.trim_end(), commits.len() as u32, commits.last()).and_then(|commit| {
                match commit.files.iter().find_map(|file| file.mismatch(dir)) {
                    Some(problem) => Err(problem),
                    None if commit.files.len() != files_per_part => {
                        Err(LineProblem::FileCount { found: commit.files.len(), expected: files_per_part })
                    }
                    None => check_counts(dir, &commit, commits.last()).map(|()| commit),
                }
            });
        match checked {
            Ok(commit) => commits.push(commit),
            Err(problem) => {
                dropped = Some(format!("journal line {} (part {}): {problem}", index + 1, commits.len()));
                break;
            }
        }
    }
    (commits, dropped)
}

/// Checks a commit's counts against its part, which its checksum cannot vouch for (a line can be
/// edited and its checksum made again): the part's outcome file holds one row per loop the line
/// counts since the commit before, of as many tasks — fewer only by tasks whose loops all failed.
fn check_counts(dir: &Path, commit: &Commit, previous: Option<&Commit>) -> Result<(), LineProblem> {
    let before = previous.map(|p| p.counts.clone()).unwrap_or_default();
    let since = |now: u64, then: u64| now.checked_sub(then).ok_or(LineProblem::CountsBack);
    let loops = since(commit.counts.loops, before.loops)?;
    let counted = since(commit.counts.tasks, before.tasks)?;
    let failed = since(commit.counts.failed_count, before.failed_count)?;
    let prefix = format!("{}-", critbench_storage::shards::OUTCOMES);
    let Some(file) = commit.files.iter().find(|file| file.name.starts_with(&prefix)) else { return Ok(()) };
    let path = dir.join(&file.name);
    let unreadable = |error: String| LineProblem::Unreadable {
        name: file.name.clone(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, error),
    };
    let (rows, tasks) = loops_and_tasks(&path).map_err(|error| unreadable(error.to_string()))?;
    if rows != loops || tasks > counted || counted > tasks + failed {
        return Err(LineProblem::Counts { name: file.name.clone(), rows, tasks, loops, counted, failed });
    }
    Ok(())
}

/// The rows of an outcome file and the tasks they are of.
fn loops_and_tasks(path: &Path) -> Result<(u64, u64), critbench_storage::tables::StorageError> {
    let (mut rows, mut tasks) = (0u64, std::collections::HashSet::new());
    let task_id = critbench_storage::tables::OutcomeRow::COLUMNS.task_id;
    critbench_storage::scan::Scan::columns(&[task_id], &[]).for_each(&[path], |batch| {
        for task in batch.columns().text(task_id)?.into_iter().flatten() {
            tasks.insert(critbench_storage::hash128(&task));
        }
        rows += batch.num_rows() as u64;
        Ok(())
    })?;
    Ok((rows, tasks.len() as u64))
}

/// Reopens the journal of `dir` holding `commits` only, removing every part file they do not name.
pub(crate) fn reopen_journal(dir: &Path, commits: &[Commit]) -> Result<Journal, RunDirError> {
    let journal = Journal::open(dir, commits)?;
    let committed = commits.len() as u32;
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

/// Writes `text` to `path` by way of a temporary file and a rename, so that `path` is always
/// either the old file or the new one.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), RunDirError> {
    critbench_storage::files::write_atomically(path, text.as_bytes()).map_err(|source| io(path, source))
}

pub use critbench_storage::files::sync_dir;

fn io(path: &Path, source: std::io::Error) -> RunDirError {
    RunDirError::Io { context: format!("cannot write {}", path.display()), source }
}

/// The run's progress folder.
pub fn progress_dir(out: &Path) -> PathBuf {
    out.join(PROGRESS_DIR)
}
/// The sink's running totals, as the journal records them at each commit.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Tasks whose loops are written.
    pub tasks: u64,
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
    /// Loops that ended because the writer program wrote no draft the policy asked for.
    #[serde(default)]
    pub loops_with_writer_errors: u64,
    /// Per critic: critiques recorded, and those that failed every attempt.
    pub critiques_by_critic: BTreeMap<String, CritiqueCounts>,
    /// Per held-out evaluator: its critiques, and those that failed every attempt.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evaluations_by_evaluator: BTreeMap<String, CritiqueCounts>,
    /// Per critic: the keys of its answers critbench does not read, with the critiques that
    /// carried each.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unread_critique_keys: BTreeMap<String, BTreeMap<String, u64>>,
}

use critbench_storage::manifest::CritiqueCounts;

impl Counts {
    /// Adds `more` (a chunk's counts) to these.
    pub fn add(&mut self, more: &Counts) {
        self.tasks += more.tasks;
        self.loops += more.loops;
        self.critiques += more.critiques;
        self.passed += more.passed;
        self.recorded_rounds += more.recorded_rounds;
        self.failed_count += more.failed_count;
        self.loops_with_critic_errors += more.loops_with_critic_errors;
        self.loops_with_writer_errors += more.loops_with_writer_errors;
        CritiqueCounts::add_all(&mut self.critiques_by_critic, &more.critiques_by_critic);
        CritiqueCounts::add_all(&mut self.evaluations_by_evaluator, &more.evaluations_by_evaluator);
        critbench_storage::manifest::add_unread_keys(&mut self.unread_critique_keys, &more.unread_critique_keys);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paired_difference_is_written_as_two_numbers_and_read_back_exactly() {
        let values: TaskValues = vec![Some(Paired(-2, 3)), None];
        let text = serde_json::to_string(&values).unwrap();
        assert_eq!(text, "[[-2,3],null]");
        assert_eq!(serde_json::from_str::<TaskValues>(&text).unwrap(), values);
        assert_eq!(Paired(-2, 3).value(), -2.0 / 3.0);
    }

    #[test]
    fn progress_another_critbench_wrote_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let read = || SavedProgress::<serde_json::Value>::read(dir.path(), 2);
        assert!(read().unwrap().is_none(), "no run.json: nothing to resume");
        std::fs::write(dir.path().join(RUN_JSON), r#"{"critbench_version": "0.0.0-earlier", "run_id": "r"}"#).unwrap();
        let refused = read().err().unwrap().to_string();
        let path = dir.path().join(RUN_JSON);
        assert!(
            refused.starts_with(&format!(
                "{} was written by critbench 0.0.0-earlier, and this is critbench {}",
                path.display(),
                env!("CARGO_PKG_VERSION")
            )),
            "{refused}"
        );
        std::fs::write(dir.path().join(RUN_JSON), r#"{"run_id": "r"}"#).unwrap();
        let refused = read().err().unwrap().to_string();
        assert!(refused.contains("not a run's progress (missing field `critbench_version`"), "{refused}");
        let ours = serde_json::json!({ "critbench_version": env!("CARGO_PKG_VERSION"), "run_id": "r" });
        std::fs::write(dir.path().join(RUN_JSON), ours.to_string()).unwrap();
        let saved = read().unwrap().expect("this critbench's progress");
        assert_eq!(saved.fingerprint, ours);
        assert!(saved.commits.is_empty());
        assert!(progress_of_a_run(dir.path()));
    }
}
