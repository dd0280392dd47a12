use std::path::PathBuf;

use crate::experiment::ExperimentProblem;

/// Everything that can stop a run. [`EngineError::is_usage`] tells the user's mistakes (exit 2)
/// from internal failures (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The experiment file cannot be read or its settings do not fit together.
    #[error("{}: {problem}", path.display())]
    Experiment {
        /// The experiment file.
        path: PathBuf,
        /// What is wrong with it.
        problem: ExperimentProblem,
    },
    /// A dataset file cannot be read or holds a bad task.
    #[error(transparent)]
    Dataset(#[from] critbench_storage::dataset::DatasetError),
    /// A critic's plugin could not be loaded or instantiated.
    #[error("critic `{critic}`: {source}")]
    Plugin {
        /// The critic's name in the experiment.
        critic: String,
        /// Why the plugin host refused it.
        source: critbench_plugin_host::PluginError,
    },
    /// The run directory cannot take this run: see [`RunDirError`].
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// `--limit 0`: no task would run.
    #[error("--limit 0 leaves no task to run; give a positive number of tasks per file")]
    LimitZero,
    /// `critbench merge` refused: a shard missing, unfinished or different.
    #[error("cannot merge {}: {problem}", dir.display())]
    Merge {
        /// The merged run's directory.
        dir: PathBuf,
        /// Which shard is missing, unfinished or different, and how.
        #[source]
        problem: Box<MergeProblem>,
    },
    /// Writing a table of the run directory failed.
    #[error(
        "writing the run directory failed: {0}\n  hint: every loop committed before this is kept; fix the cause (disk space, permissions) and run the same command with --resume"
    )]
    Storage(#[from] critbench_storage::tables::StorageError),
    /// A file or directory operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, and on which path.
        context: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The reports could not be computed or written.
    #[error(transparent)]
    Report(#[from] critbench_report::ReportError),
    /// `critbench judge` could not benchmark the critic.
    #[error(transparent)]
    Judge(#[from] critbench_critic_benchmark::JudgeError),
    /// `critbench replay` cannot run.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// `critbench rescore` cannot run, or stopped.
    #[error(transparent)]
    Rescore(#[from] RescoreError),
    /// The model client could not be made from the `[openai]` table.
    #[error(transparent)]
    ModelClient(#[from] critbench_openai::ClientError),
    /// No task's kind is one a critic takes, so no loop would run.
    #[error("no task reaches any critic: the critics take kinds {critic_kinds} but the dataset's tasks have kinds [{}]", task_kinds.join(", "))]
    NoTaskForAnyCritic {
        /// The kinds the critics take, listed.
        critic_kinds: String,
        /// The kinds of the dataset's tasks.
        task_kinds: Vec<String>,
    },
    /// A recorded sweep with a critic whose critiques depend on the policy.
    #[error(
        "critic `{critic}` ({plugin}) says its critiques depend on the loop policy, so one recording cannot serve \
         every config; set sweep = \"direct\" in the experiment"
    )]
    PolicyDependentSweep {
        /// The critic's name in the experiment.
        critic: String,
        /// The plugin that says so.
        plugin: String,
    },
    /// Strategy memory's split left every task to learning.
    #[error(
        "the memory split left no evaluation tasks; lower [memory] learn_fraction or mark some tasks meta.split = \"eval\""
    )]
    NoEvaluationTasks,
    /// Loops of strategy memory's learning pass failed.
    #[error("{count} learning loop(s) failed; first: {first}")]
    LearningFailed {
        /// How many failed.
        count: usize,
        /// The first failure's message.
        first: String,
    },
    /// `--repeats` out of range.
    #[error("--repeats must be from 1 to {max}")]
    JudgeRepeats {
        /// The largest number allowed.
        max: u32,
    },
    /// `critbench judge` was given a `command` critic, which it cannot run.
    #[error(
        "critic `{critic}` is a `command` critic; `critbench judge` runs plugin libraries in-process only \
         (use `critbench run` for command critics)"
    )]
    CommandCriticInJudge {
        /// The critic's name.
        critic: String,
    },
    /// The model client's report (`manifest.json`'s `openai`) did not read back: a key missing,
    /// renamed or of the wrong type.
    #[error(transparent)]
    ModelReport(#[from] critbench_openai::usage::UsageReportError),
    /// The openai backend was asked for outside `run_experiment`, which makes its client.
    #[error("the openai backend is made from the experiment's [openai] table; run the experiment with run_experiment")]
    NoModelClient,
    /// A thread of the run panicked; the payload's text.
    #[error("{0}")]
    Panicked(String),
    /// A chunk of loops was lost between the workers and the writer (a bug).
    #[error("a chunk of loops never reached the writer")]
    LostChunk,
    /// The open-file limit is below what `concurrency` connections need, and cannot be raised.
    #[error(
        "[openai] concurrency = {concurrency} needs about {needed} open files, but this process may open at most \
         {hard} (RLIMIT_NOFILE, hard limit): lower concurrency to at most {fits}, or raise the hard limit \
         (`ulimit -Hn {needed}` as root, `nofile` in /etc/security/limits.conf, `LimitNOFILE=` for a systemd unit)"
    )]
    OpenFiles {
        /// The `[openai] concurrency` asked for.
        concurrency: u64,
        /// The open files it needs.
        needed: u64,
        /// The process's hard limit.
        hard: u64,
        /// The largest concurrency that fits the limit.
        fits: u64,
    },
    /// The operating system refused a thread the run needs.
    #[error("cannot start {what}: {source}")]
    Threads {
        /// The thread or pool that did not start.
        what: &'static str,
        /// What the system said.
        source: std::io::Error,
    },
    /// The lock file exists and does not, though no other run holds it: a race lost twice.
    #[error("cannot take {}", path.display())]
    LockNotTaken {
        /// The lock file.
        path: PathBuf,
    },
    /// A recorded loop ended before a config of the grid stopped: a bug in the loop recorder.
    #[error("the recording of task `{task_id}` ended before config {config_id} stopped")]
    RecordingEndedEarly {
        /// The task whose recording ended.
        task_id: String,
        /// The config that had not stopped.
        config_id: String,
    },
    /// A sequential run that cannot start or go on.
    #[error(transparent)]
    Sequential(#[from] crate::run::sequential::SequentialError),
    /// A signal stopped the run; the loops finished before it are written.
    #[error("interrupted by {signal}: the rows of the {loops} loop(s) finished before it are in {} (readable; manifest.json says status \"interrupted\"); run the same command with --resume to finish the run", out.display())]
    Interrupted {
        /// The signal received.
        signal: crate::stop::StopSignal,
        /// Loops finished and written before it.
        loops: u64,
        /// The run directory.
        out: PathBuf,
    },
    /// The run's `[budget]` was reached: no loop started after it; the loops finished are written.
    #[error(
        "stopped by its budget: {}; the rows of the {loops} loop(s) finished by then are in {} (readable; \
         manifest.json's openai.budget says which budget); raise [budget] and run the same command with --resume to \
         finish the run (answers already paid for come from the response cache)",
        reached.as_ref().map_or_else(
            || "a budget was reached".to_string(),
            |r| format!("[budget] {} = {} {currency} was reached ({:.6} {currency} spent)", r.budget, r.limit, r.spent)
        ),
        out.display()
    )]
    BudgetReached {
        /// Which budget was reached and what was spent, when the client says.
        reached: Option<critbench_openai::BudgetStop>,
        /// The currency of the budget.
        currency: String,
        /// Loops finished and written by then.
        loops: u64,
        /// The run directory.
        out: PathBuf,
    },
    /// `critbench estimate` cannot run its pilot or read it back.
    #[error("{0}")]
    Estimate(String),
    /// The experiment's own estimate already exceeds its budget: refused before any call.
    #[error(
        "the estimate in {} already exceeds the budget: {}; raise [budget], or pass --force to run anyway (the \
         budget still stops the run when it is reached)",
        estimate.display(),
        exceeds.join("; ")
    )]
    EstimateOverBudget {
        /// The estimate file.
        estimate: PathBuf,
        /// Each budget it exceeds, as a sentence.
        exceeds: Vec<String>,
    },
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

/// Why a run directory cannot take a run (exit status 2): each says what to do instead.
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
    /// `--resume` on a directory that holds no run in progress.
    #[error("{} holds no run to resume (no {}); run without --resume", dir.display(), progress.display())]
    NothingToResume {
        /// The directory.
        dir: PathBuf,
        /// The file a resumable run has, relative to `dir`.
        progress: PathBuf,
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
    #[error("{} holds no rescoring to resume (no in-progress/run.json); rescore without --resume", dir.display())]
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

/// Why a replay cannot run. Every one is the user's to fix (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A negative or not-a-number `--plateau-eps`.
    #[error("--plateau-eps {0}: must be a number ≥ 0")]
    PlateauEps(f64),
    /// A `--pass-score` or `--dim-target` that is infinite or not a number.
    #[error("{0} is not a finite number")]
    NotFinite(f64),
    /// Two configs of the replayed grid are the same.
    #[error("config {} is listed twice", .0.config_id)]
    Repeated(critbench_core::RepeatedConfig),
    /// A flag past the bounds the experiment file has too.
    #[error(transparent)]
    Limit(#[from] crate::experiment::limits::LimitError),
    /// The directory is not a run that can be replayed.
    #[error(
        "{} is not a run directory that can be replayed: {reason}\n  hint: pass a directory written by `critbench run`",
        dir.display()
    )]
    NotARun {
        /// The directory given.
        dir: PathBuf,
        /// What is missing or wrong in it.
        reason: NotARun,
    },
    /// The run's `manifest.json` cannot be read.
    #[error(transparent)]
    Manifest(#[from] critbench_storage::manifest::ManifestError),
    /// The run's critics' critiques depend on the policy, so its rounds cannot be replayed.
    #[error(
        "cannot replay {}: critic(s) {} say their critiques depend on the loop policy, so the recorded \
         rounds would not be what another policy sees; run the experiment again with the new policy",
        dir.display(),
        critics.join(", ")
    )]
    PolicyDependent {
        /// The run directory.
        dir: PathBuf,
        /// The critics that say so.
        critics: Vec<String>,
    },
    /// The run's loops end with an adjudicator's pass, which replay cannot redo.
    #[error(
        "cannot replay {}: its {arm} loops end with the adjudicator's pass (`adjudicate` in the experiment), \
         and replay calls no model to adjudicate the final draft a new policy would return; run the \
         experiment again with the new policy grid in [policy] (a grid in one run is replayed exactly, \
         adjudication included)",
        dir.display()
    )]
    Adjudicated {
        /// The run directory.
        dir: PathBuf,
        /// An adjudicated arm.
        arm: critbench_core::Arm,
    },
    /// A replayed policy would revise past the rounds the run recorded.
    #[error(
        "config {config_id} goes beyond what the run recorded: task `{task_id}` ({arm} × {critic} × epoch {epoch}) \
         was recorded for {rounds} round(s) only, and this policy would still revise after the last of them. \
         Replay evaluates policies that stop within the recording{}; run the experiment with a larger \
         max_revisions to record more",
        recorded_cap.map(|cap| format!(" (the run's configs go up to max_revisions = {cap})")).unwrap_or_default()
    )]
    BeyondRecording {
        /// The replayed config.
        config_id: String,
        /// The loop's task.
        task_id: String,
        /// The loop's arm.
        arm: critbench_core::Arm,
        /// The loop's critic.
        critic: String,
        /// The loop's epoch.
        epoch: u32,
        /// How many rounds were recorded.
        rounds: usize,
        /// The largest `max_revisions` of the recorded run's grid, when its manifest says.
        recorded_cap: Option<u32>,
    },
}

/// Why a rescoring cannot run, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum RescoreError {
    /// A `--critic` name that cannot be a folder's name.
    #[error(
        "--critic `{0}` cannot name a folder: give a name without `/` or `\\`, not empty, `.` or `..` (it is the \
         folder RUN/rescored/NAME)"
    )]
    BadName(String),
    /// The directory is not a finished run that can be rescored.
    #[error(
        "{} is not a finished run that can be rescored: {reason}\n  hint: pass a directory written by `critbench run` \
         (a sharded run once `critbench merge` has joined it)",
        dir.display()
    )]
    NotARun {
        /// The directory given.
        dir: PathBuf,
        /// What is missing or wrong in it.
        reason: String,
    },
    /// The run stored no drafts to re-critique.
    #[error(
        "{} was run without stored drafts, so there is no draft to re-critique: run the experiment again with \
         --store-drafts (or store_drafts = true in it), then rescore that run",
        dir.display()
    )]
    NoDrafts {
        /// The run directory.
        dir: PathBuf,
    },
    /// A round of the run has no stored draft.
    #[error(
        "{}: round {round} of the loop of task `{task_id}` ({arm} × {critic} × epoch {epoch}) has no stored draft; \
         only a run with store_drafts = true can be rescored",
        table.display()
    )]
    MissingDraft {
        /// The table the round is in.
        table: PathBuf,
        /// The loop's task.
        task_id: String,
        /// The loop's arm.
        arm: critbench_core::Arm,
        /// The loop's critic.
        critic: String,
        /// The loop's epoch.
        epoch: u32,
        /// The round without a draft.
        round: u32,
    },
    /// `--critic` names no critic of the run, and no plugin or command was given.
    #[error(
        "the run has no critic `{name}` (its critics: {}); name one of them to rescore with it as the run opened it, \
         or give --plugin or --command for another critic",
        critics.join(", ")
    )]
    UnknownCritic {
        /// The name given.
        name: String,
        /// The run's critics.
        critics: Vec<String>,
    },
    /// `--config` is not a JSON object.
    #[error(
        "--config {text}: not a JSON object ({problem}); give the critic's config as JSON, e.g. '{{\"target_words\": 5}}'"
    )]
    Config {
        /// The text given.
        text: String,
        /// Why it does not parse as one.
        problem: String,
    },
    /// The new critic's critiques depend on the policy.
    #[error(
        "critic `{critic}` ({plugin}) says its critiques depend on the loop policy, so a recorded draft has no one \
         critique to replay every config with; rescore with a critic that does not"
    )]
    PolicyDependent {
        /// The critic's name.
        critic: String,
        /// The plugin that says so.
        plugin: String,
    },
    /// The run's own critics' critiques depend on the policy.
    #[error(
        "cannot rescore {}: critic(s) {} of the run say their critiques depend on the loop policy, so its configs' \
         loops are not one recording to replay",
        dir.display(),
        critics.join(", ")
    )]
    RunPolicyDependent {
        /// The run directory.
        dir: PathBuf,
        /// The critics that say so.
        critics: Vec<String>,
    },
    /// The run's loops end with an adjudicator's pass, which a rescoring cannot redo.
    #[error(
        "cannot rescore {}: its {} loops end with the adjudicator's pass, and a rescoring calls no model to \
         adjudicate the final draft a config would return under the new critic; rescore a run without `adjudicate`",
        dir.display(),
        arms.join(", ")
    )]
    Adjudicated {
        /// The run directory.
        dir: PathBuf,
        /// The adjudicated arms.
        arms: Vec<String>,
    },
    /// `--dataset` given a number of times other than the run's dataset files.
    #[error(
        "the run read {recorded} dataset file(s) but --dataset gives {given}; give one --dataset per file of the run, \
         in its order (manifest.json lists them)"
    )]
    DatasetCount {
        /// Dataset files the run read.
        recorded: usize,
        /// `--dataset` flags given.
        given: usize,
    },
    /// A dataset of the run cannot be read.
    #[error(
        "dataset {} cannot be read ({problem}); the run read it as {}\n  hint: the paths in manifest.json are relative \
         to where the run was started; run from there, or give --dataset PATH once per file of the run, in its order",
        path.display(),
        recorded.display()
    )]
    DatasetMissing {
        /// The path tried.
        path: PathBuf,
        /// The path in `manifest.json`.
        recorded: PathBuf,
        /// Why it cannot be read.
        #[source]
        problem: std::io::Error,
    },
    /// A dataset's hash differs from the one the run recorded.
    #[error(
        "dataset {} is not the file the run read: sha256 {} now, {} in manifest.json; a rescoring must see the \
         run's tasks\n  hint: give --dataset PATH (once per file, in the run's order) to name the file the run read",
        path.display(),
        &now[..now.len().min(12)],
        &recorded[..recorded.len().min(12)]
    )]
    DatasetChanged {
        /// The dataset file.
        path: PathBuf,
        /// Its sha256 in `manifest.json`.
        recorded: String,
        /// Its sha256 now.
        now: String,
    },
    /// A dataset changed while the rescoring read it: the bytes it read are not the run's.
    #[error(
        "dataset {} changed while the rescoring read it (sha256 {} in manifest.json, {} over the bytes it read), so \
         its tasks may come from either version; leave the file as it is while a rescoring reads it, and rescore \
         again with --overwrite",
        path.display(),
        &recorded[..recorded.len().min(12)],
        &read[..read.len().min(12)]
    )]
    DatasetChangedWhileRead {
        /// The dataset file.
        path: PathBuf,
        /// Its sha256 in `manifest.json`.
        recorded: String,
        /// The sha256 of the bytes the rescoring read.
        read: String,
    },
    /// A loop's task is not among the datasets' tasks where the table's order says.
    #[error(
        "{}: task `{task_id}` (loop {arm} × {critic} × epoch {epoch}) is not among the run's tasks that follow in its \
         datasets; the datasets must be the run's, and its table the one it wrote",
        table.display()
    )]
    TaskNotFound {
        /// The run's table.
        table: PathBuf,
        /// The loop's task.
        task_id: String,
        /// The loop's arm.
        arm: critbench_core::Arm,
        /// The loop's critic.
        critic: String,
        /// The loop's epoch.
        epoch: u32,
    },
    /// A loop's config is not one of the run's.
    #[error(
        "{}: config `{config_id}` of the loop of task `{task_id}` is not one of the configs manifest.json lists",
        table.display()
    )]
    UnknownConfig {
        /// The run's table.
        table: PathBuf,
        /// The config as written.
        config_id: String,
        /// The loop's task.
        task_id: String,
    },
    /// A config of `manifest.json` does not read back as a policy.
    #[error("manifest.json: the run's config `{config_id}` does not read back as a policy: {problem}")]
    Policy {
        /// The config.
        config_id: String,
        /// Why it does not.
        problem: String,
    },
    /// The new critic takes no kind of the run's loops.
    #[error(
        "critic `{critic}` takes no loop of the run: it takes kinds [{}] and the run's loops are of kinds [{}]; give \
         --kinds to say which tasks it scores",
        takes.join(", "),
        kinds.join(", ")
    )]
    NothingTaken {
        /// The critic's name.
        critic: String,
        /// The kinds it takes.
        takes: Vec<String>,
        /// The kinds of the run's loops.
        kinds: Vec<String>,
    },
    /// `--resume` on a rescoring whose critic or inputs changed.
    #[error("cannot resume the rescoring in {}: {}; start it again with --overwrite", dir.display(), changed.join("; "))]
    Changed {
        /// The rescoring's folder.
        dir: PathBuf,
        /// What changed, one sentence each.
        changed: Vec<String>,
    },
    /// A signal stopped the rescoring; what it committed is kept.
    #[error(
        "interrupted by {signal}: the loops of the {tasks} task(s) re-critiqued before it are committed in {}; run the \
         same command with --resume to finish the rescoring",
        progress.display()
    )]
    Interrupted {
        /// The signal received.
        signal: crate::stop::StopSignal,
        /// Tasks re-critiqued and committed before it.
        tasks: u64,
        /// The folder of the rescoring's progress.
        progress: PathBuf,
    },
}

impl RescoreError {
    /// Whether the user can fix this by changing their input (exit status 2).
    pub fn is_usage(&self) -> bool {
        !matches!(self, RescoreError::Interrupted { .. })
    }
}

/// What is wrong with a directory given to replay.
#[derive(Debug, thiserror::Error)]
pub enum NotARun {
    /// A file of the run is missing (its name).
    #[error("{0} is missing")]
    Missing(String),
    /// A sharded run whose shards are not merged yet: the text says what to run.
    #[error("{0}")]
    Unmerged(String),
    /// A table of the run cannot be read.
    #[error(transparent)]
    Unreadable(#[from] critbench_storage::tables::StorageError),
}

impl From<critbench_plugin_host::OpenCriticError> for EngineError {
    fn from(error: critbench_plugin_host::OpenCriticError) -> EngineError {
        EngineError::Plugin { critic: error.critic, source: error.source }
    }
}

impl EngineError {
    /// Whether the user can fix this by changing their input (exit status 2).
    pub fn is_usage(&self) -> bool {
        match self {
            EngineError::Experiment { .. }
            | EngineError::Dataset(_)
            | EngineError::Plugin { .. }
            | EngineError::RunDir(_)
            | EngineError::LimitZero
            | EngineError::Merge { .. }
            | EngineError::OpenFiles { .. } => true,
            EngineError::Report(error) => error.is_usage(),
            EngineError::Rescore(error) => error.is_usage(),
            EngineError::Judge(error) => error.is_usage(),
            EngineError::Sequential(error) => error.is_usage(),
            EngineError::Replay(_)
            | EngineError::NoTaskForAnyCritic { .. }
            | EngineError::PolicyDependentSweep { .. }
            | EngineError::NoEvaluationTasks
            | EngineError::JudgeRepeats { .. }
            | EngineError::CommandCriticInJudge { .. }
            | EngineError::Estimate(_)
            | EngineError::EstimateOverBudget { .. } => true,
            EngineError::LearningFailed { .. }
            | EngineError::ModelReport(_)
            | EngineError::NoModelClient
            | EngineError::Panicked(_)
            | EngineError::LostChunk => false,
            // Bad settings or a missing key are the user's; an HTTP stack that will not start is not.
            EngineError::ModelClient(error) => !matches!(error, critbench_openai::ClientError::Http(_)),
            EngineError::Threads { .. } => false,
            EngineError::Storage(_)
            | EngineError::Io { .. }
            | EngineError::LockNotTaken { .. }
            | EngineError::RecordingEndedEarly { .. }
            | EngineError::Interrupted { .. }
            | EngineError::BudgetReached { .. } => false,
        }
    }
}

/// Why a loop has no rows. Its text is recorded in `failed_loops` (`manifest.json`), after
/// the loop it names.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// The author wrote no draft.
    #[error(transparent)]
    Author(#[from] critbench_core::author::AuthorError),
    /// The experiment adjudicates but the author has no adjudicator.
    #[error("the author has no adjudicator")]
    NoAdjudicator,
    /// Strategy memory's learning loop ended before its policy stopped (a bug).
    #[error("the learning loop ended before its policy stopped")]
    Unfinished,
    /// A loop panicked: the panic's message, for a bug report.
    #[error("{0}")]
    Panicked(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Experiment, Overrides};

    #[test]
    fn a_toml_error_keeps_its_line_and_cause() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        std::fs::write(&path, "name = \"x\"\n\nbackend = = \"sim\"\n").unwrap();
        let error = Experiment::load(&path, &Overrides::default()).unwrap_err();
        let EngineError::Experiment { problem, .. } = &error else { panic!("{error}") };
        assert_eq!(problem.line(), Some(3), "{error}");
        assert!(matches!(problem, ExperimentProblem::Toml { .. }));
        assert!(error.to_string().contains("line 3"), "{error}");
        let missing = Experiment::load(&dir.path().join("none.toml"), &Overrides::default()).unwrap_err();
        let EngineError::Experiment { problem, .. } = &missing else { panic!("{missing}") };
        assert!(std::error::Error::source(problem).is_some(), "the io::Error is kept");
    }
}
