//! Why a directory cannot take what a command would write into it ([`RunDirError`]), and why a
//! sharded run's shards cannot be merged ([`MergeProblem`], refused in
//! [`MergeError`](crate::run_dir::merge::MergeError)).

use std::path::PathBuf;

/// Why a run directory cannot take a run (exit status 2, but for a lock race lost twice and a file
/// operation that failed): each says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// Both `--overwrite` and `--resume` were given.
    #[error("--overwrite and --resume contradict each other; choose one")]
    OverwriteAndResume,
    /// A sharded run and a run in one piece never share a directory.
    #[error("{} already holds {holds} ({}); {this} cannot be written beside it: choose another --out", dir.display(), found.join(", "))]
    OtherLayout {
        /// The directory.
        dir: PathBuf,
        /// The layout it holds: "a sharded run" or "a run in one piece".
        holds: &'static str,
        /// What this run would write.
        this: String,
        /// The entries that show its layout.
        found: Vec<String>,
    },
    /// An earlier run's files are there and neither `--overwrite` nor `--resume` was given.
    #[error(
        "{} already holds {what} ({}); {}pass --overwrite to replace it (its files are removed first), or --out DIR \
         to write this run somewhere new",
        dir.display(),
        files.join(", "),
        if *resumable { "pass --resume to finish it, " } else { "" }
    )]
    HoldsARun {
        /// The directory.
        dir: PathBuf,
        /// What it holds: a finished or unfinished run (of which shard).
        what: String,
        /// The run's files found there.
        files: Vec<String>,
        /// Whether `--resume` could finish it.
        resumable: bool,
    },
    /// Another live run holds the directory's lock.
    #[error(
        "{} is in use by another critbench run (pid {} on {host}); wait for it to end or choose another --out (if \
         that run is gone, delete {})",
        dir.display(),
        pid.map_or_else(|| "unknown".to_string(), |p| p.to_string()),
        lock.display()
    )]
    InUse {
        /// The directory.
        dir: PathBuf,
        /// The other run's process id, when the lock says.
        pid: Option<u64>,
        /// The host the other run is on.
        host: String,
        /// The lock file.
        lock: PathBuf,
    },
    /// `--resume` on a run whose progress is gone (a manifest or tables, no journal).
    #[error(
        "{} holds a run that cannot be resumed (no {}); pass --overwrite instead of --resume to run it again",
        dir.display(),
        progress.display()
    )]
    NothingToResume {
        /// The directory.
        dir: PathBuf,
        /// The file a resumable run has, relative to `dir`.
        progress: PathBuf,
    },
    /// `--resume` on a run (or rescoring) that finished: nothing is left to do. Not a failure: the
    /// command line says so and exits 0 (a job requeued after it finished must not fail).
    #[error(
        "{} holds {what}: there is nothing to resume (pass --overwrite instead of --resume to run it again)",
        dir.display()
    )]
    Finished {
        /// The run's (or shard's, or rescoring's) own folder.
        dir: PathBuf,
        /// What finished, with its run id.
        what: String,
    },
    /// `--resume` on a run whose experiment, datasets or critics changed.
    #[error("cannot resume the run in {}: {}; start it again with --overwrite", dir.display(), changed.join("; "))]
    Changed {
        /// The run directory.
        dir: PathBuf,
        /// What changed, one sentence each.
        changed: Vec<String>,
    },
    /// The run's progress file does not read back.
    #[error("{}: not a run's progress ({source}); start again with --overwrite", path.display())]
    NotProgress {
        /// The progress file.
        path: PathBuf,
        /// Why it does not parse.
        source: serde_json::Error,
    },
    /// The run's progress was written by another critbench, whose progress this one does not read.
    #[error(
        "{} was written by critbench {version}, and this is critbench {}, which reads only the progress it writes \
         itself: finish the run with critbench {version}, or start it again with --overwrite",
        path.display(),
        env!("CARGO_PKG_VERSION")
    )]
    OtherCritbench {
        /// The progress file.
        path: PathBuf,
        /// The critbench version that wrote it.
        version: String,
    },
    /// `--out` names a file.
    #[error("{} is a file, not a directory; choose a directory for --out", path.display())]
    NotADirectory {
        /// The file.
        path: PathBuf,
    },
    /// A folder that holds something, none of it a run: a user's folder, left alone.
    #[error(
        "{} is not empty and holds no critbench run ({}); critbench writes only into a new or empty directory or one \
         holding a run it wrote, and never removes files it did not write: choose another --out",
        dir.display(),
        found.join(", ")
    )]
    NotARun {
        /// The directory.
        dir: PathBuf,
        /// Some of the entries it holds.
        found: Vec<String>,
    },
    /// A path critbench would write through is a symbolic link.
    #[error(
        "{} is a symbolic link (to {}); critbench never writes through links: remove the link or choose another --out",
        path.display(),
        target.display()
    )]
    Link {
        /// The link.
        path: PathBuf,
        /// Where it points.
        target: PathBuf,
    },
    /// A replay's `--out` is the replayed run, or inside or around it.
    #[error(
        "--out {} is the run being replayed ({}), or inside it or around it; a replay writes a new run: choose a \
         directory outside it",
        out.display(),
        replayed.display()
    )]
    OwnSource {
        /// The `--out` given.
        out: PathBuf,
        /// The run being replayed.
        replayed: PathBuf,
    },
    /// A file of the user's (`sample --out`) that names a folder.
    #[error("{} is a folder; --out names the file to write", path.display())]
    FileIsAFolder {
        /// The folder.
        path: PathBuf,
    },
    /// A file of the user's (`sample --out`) where critbench's output is.
    #[error(
        "{} {} {} ({holds}); critbench writes your file beside its output, never over it or into its folders: choose \
         another --out",
        path.display(),
        if *inside { "lies inside" } else { "is a file critbench writes in" },
        holder.display()
    )]
    RunsFile {
        /// The file given.
        path: PathBuf,
        /// The folder holding critbench's output.
        holder: PathBuf,
        /// What it holds, in words.
        holds: &'static str,
        /// Whether the file lies in a folder below `holder` rather than in it.
        inside: bool,
    },
    /// The directory is inside another run's directory.
    #[error("{} is inside the run directory {}; choose a directory outside it", dir.display(), run.display())]
    InsideRun {
        /// The directory given.
        dir: PathBuf,
        /// The run directory around it.
        run: PathBuf,
    },
    /// `critbench rescore` writes `RUN/rescored/NAME/` and no other folder.
    #[error(
        "{} is not a rescoring's folder of the run {} (RUN/rescored/NAME); a rescoring writes only there",
        dir.display(),
        run.display()
    )]
    NotARescoring {
        /// The folder given.
        dir: PathBuf,
        /// The run being rescored.
        run: PathBuf,
    },
    /// A rescoring of a run that is not finished.
    #[error(
        "{} is not a finished run: a rescoring re-critiques the drafts of a finished run (finish it first with \
         `critbench run … --resume`; a sharded run's rescorings are written after `critbench merge`)",
        run.display()
    )]
    NotFinished {
        /// The run directory.
        run: PathBuf,
    },
    /// A rescoring's folder is a file.
    #[error(
        "{} is a file, not a rescoring's folder; critbench never replaces files it did not write: move it, or rescore \
         under another --critic name",
        path.display()
    )]
    NotARescoringFolder {
        /// The file.
        path: PathBuf,
    },
    /// A folder that holds something, none of it a rescoring: a user's folder, left alone.
    #[error(
        "{} is not empty and holds no rescoring ({}); critbench writes a rescoring only into a new or empty folder or \
         one holding a rescoring it wrote, and never removes files it did not write: move them, or rescore under \
         another --critic name",
        dir.display(),
        found.join(", ")
    )]
    HoldsNoRescoring {
        /// The folder.
        dir: PathBuf,
        /// Some of the entries it holds.
        found: Vec<String>,
    },
    /// An earlier rescoring is there and neither `--overwrite` nor `--resume` was given.
    #[error(
        "{} already holds {what} ({}); {}pass --overwrite to replace it (its files are removed first), or rescore \
         under another --critic name",
        dir.display(),
        files.join(", "),
        if *resumable { "pass --resume to finish it, " } else { "" }
    )]
    HoldsARescoring {
        /// The rescoring's folder.
        dir: PathBuf,
        /// What it holds (a finished or an unfinished rescoring).
        what: &'static str,
        /// The rescoring's files found there.
        files: Vec<String>,
        /// Whether `--resume` could finish it.
        resumable: bool,
    },
    /// `--resume` on a folder with no rescoring in progress.
    #[error(
        "{} holds a rescoring that cannot be resumed (no in-progress/run.json); pass --overwrite instead of --resume \
         to rescore again",
        dir.display()
    )]
    NoRescoringToResume {
        /// The folder.
        dir: PathBuf,
    },
    /// `--out` names one shard's own folder instead of the sharded run.
    #[error(
        "{} is one shard's own folder of a sharded run (its manifest.json names the shard); write a shard with \
         --out RUN --shard I/N, where RUN is the run directory that holds shards/",
        dir.display()
    )]
    ShardFolder {
        /// The shard's folder.
        dir: PathBuf,
    },
    /// A folder of the run holds something the run did not write; nothing was removed.
    #[error(
        "{} holds files critbench did not write ({}); --overwrite removes only a run's own files, and nothing was \
         removed: move them out of it first",
        dir.display(),
        entries.join(", ")
    )]
    UnknownEntries {
        /// The folder.
        dir: PathBuf,
        /// The entries the run did not write.
        entries: Vec<String>,
    },
    /// A finished pass wrote fewer loops than its input holds: its journal skipped some (a line
    /// edited, its checksum made again).
    #[error(
        "{}: the pass ended with {written} {what} written where {expected} were due: its journal skips work it \
         never committed (a line was edited), so this is not the result of the run; start it again with \
         --overwrite",
        journal.display()
    )]
    Skipped {
        /// The journal.
        journal: PathBuf,
        /// What was counted: "tasks" or "loops".
        what: &'static str,
        /// How many the pass wrote, the journal's parts included.
        written: u64,
        /// How many its input held.
        expected: u64,
    },
    /// An outcome row that contradicts itself or its config's policy.
    #[error(transparent)]
    Verdict(#[from] crate::run_dir::verdicts::VerdictError),
    /// The lock file exists and does not, though no other run holds it: a race lost twice.
    #[error("cannot take {}", path.display())]
    LockNotTaken {
        /// The lock file.
        path: PathBuf,
    },
    /// A file or folder of the directory could not be read, written or removed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, and on which path.
        context: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// An earlier critic benchmark is there and `--overwrite` was not given.
    #[error(
        "{} already holds a critic benchmark ({}); pass --overwrite to replace it (its files are removed first), or \
         --out DIR to write this one somewhere new",
        dir.display(),
        files.join(", ")
    )]
    HoldsAJudgeResult {
        /// The directory.
        dir: PathBuf,
        /// Its files found there.
        files: Vec<String>,
    },
}

impl RunDirError {
    /// Whether the user can fix this (exit status 2): all but a lock race lost twice and a file
    /// operation that failed.
    pub fn is_usage(&self) -> bool {
        !matches!(self, RunDirError::LockNotTaken { .. } | RunDirError::Io { .. })
    }
}

/// Why `critbench merge` refuses a run's shards (exit status 2): each says which shard and what
/// to do.
#[derive(Debug, thiserror::Error)]
pub enum MergeProblem {
    /// The run directory is not there.
    #[error("no such directory")]
    NoSuchDirectory,
    /// The directory holds no shards.
    #[error(
        "it holds no shards ({}/ is missing or empty); merge is for runs made with --shard I/N",
        critbench_storage::shards::SHARDS_DIR
    )]
    NoShards,
    /// A shard's lock file is there: it runs, or was killed.
    #[error(
        "shard {index} is still running or was killed ({} exists); wait for it, or run it again with --resume",
        lock.display()
    )]
    StillRunning {
        /// The shard.
        index: u32,
        /// Its lock file.
        lock: PathBuf,
    },
    /// A shard's manifest does not read.
    #[error("shard {index}: {source}")]
    Manifest {
        /// The shard.
        index: u32,
        /// Why its manifest does not read.
        source: critbench_storage::manifest::ManifestError,
    },
    /// A shard wrote no manifest yet.
    #[error("shard {index} has not finished (no {}); run it again with --resume", manifest.display())]
    Unfinished {
        /// The shard.
        index: u32,
        /// The manifest it has not written.
        manifest: PathBuf,
    },
    /// A shard's manifest says it was interrupted.
    #[error(
        "shard {index} was interrupted before it finished ({} says status \"interrupted\"); run it again with \
         --resume",
        manifest.display()
    )]
    Interrupted {
        /// The shard.
        index: u32,
        /// Its manifest.
        manifest: PathBuf,
    },
    /// A manifest under `shards/` that is not a shard's.
    #[error("{} is not a shard's manifest (it has no `shard`)", dir.display())]
    NotAShard {
        /// The shard's directory.
        dir: PathBuf,
    },
    /// A shard's manifest names another shard than its directory.
    #[error("{} says it is shard {says}, not shard {index}", dir.display())]
    OtherIndex {
        /// The shard's directory.
        dir: PathBuf,
        /// The shard its manifest says it is.
        says: critbench_storage::shards::Shard,
        /// The shard its directory says it is.
        index: u32,
    },
    /// Two shards disagree on the number of shards.
    #[error("the shards disagree on how many there are: shard {first} is one of {count}, shard {index} one of {other}")]
    CountsDisagree {
        /// The first shard.
        first: u32,
        /// Its number of shards.
        count: u32,
        /// A shard that disagrees.
        index: u32,
        /// Its number of shards.
        other: u32,
    },
    /// Shards of the run are not there.
    #[error(
        "shard(s) {} of {count} missing (no {}); run them with --shard I/{count} into this directory",
        missing.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
        manifest.display()
    )]
    Missing {
        /// The shards missing.
        missing: Vec<u32>,
        /// The run's number of shards.
        count: u32,
        /// The first missing shard's manifest.
        manifest: PathBuf,
    },
    /// A shard's table is not there.
    #[error("shard {index}'s {table} table is missing ({})", path.display())]
    TableMissing {
        /// The shard.
        index: u32,
        /// The table.
        table: &'static str,
        /// Where it should be.
        path: PathBuf,
    },
    /// A shard's tables are not the ones it wrote, or not its own.
    #[error("shard {index}: {source}")]
    Tables {
        /// The shard.
        index: u32,
        /// What is wrong with them.
        source: ShardProblem,
    },
    /// A shard's model client report does not read back.
    #[error("shard {index}: {source}")]
    ModelReport {
        /// The shard.
        index: u32,
        /// Why it does not.
        source: critbench_openai::usage::UsageReportError,
    },
    /// A shard is not the same run as the first.
    #[error("shard {index} is not the same run as shard {first}: {difference}")]
    NotTheSameRun {
        /// The shard.
        index: u32,
        /// The first shard.
        first: u32,
        /// How it differs, one sentence.
        difference: String,
    },
}

/// Why a shard's tables cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum ShardProblem {
    /// Its manifest has no record of its tables.
    #[error("its manifest records no tables (written by an older critbench); run the shard again")]
    NoTables,
    /// A table is not the file the shard wrote.
    #[error(transparent)]
    Tables(#[from] critbench_storage::manifest::TableMismatch),
    /// Its outcomes do not read, or hold another shard's task or a loop twice.
    #[error("{}: {source}", path.display())]
    Outcomes {
        /// The outcomes table.
        path: PathBuf,
        /// Why it does not read, or the row that is not the shard's ([`ForeignRow`]).
        source: critbench_storage::tables::StorageError,
    },
    /// An outcome row contradicts itself or its config's policy.
    #[error(transparent)]
    Verdicts(#[from] crate::run_dir::verdicts::VerdictError),
    /// Its outcomes hold another number of loops than its manifest counts.
    #[error("{} has {rows} loops, but its manifest says {recorded}", path.display())]
    LoopCount {
        /// The outcomes table.
        path: PathBuf,
        /// Its rows.
        rows: u64,
        /// The loops its manifest counts.
        recorded: u64,
    },
}

/// An outcome row a shard's table must not hold.
#[derive(Debug, thiserror::Error)]
pub enum ForeignRow {
    /// A task the split of task ids gives another shard.
    #[error("it holds task `{task_id}`, which is shard {owner}'s: the table is not this shard's")]
    OtherShards {
        /// The task.
        task_id: String,
        /// The shard it belongs to.
        owner: u32,
    },
    /// A loop a second time.
    #[error("it holds the loop {config_id} × {arm} × {critic} × task `{task_id}` × epoch {epoch} twice")]
    Twice {
        /// The loop's config.
        config_id: String,
        /// Its arm.
        arm: String,
        /// Its critic.
        critic: String,
        /// Its task.
        task_id: String,
        /// Its epoch.
        epoch: u32,
    },
}
