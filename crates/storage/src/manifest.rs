//! `manifest.json`, typed: what was run, on what, with which plugins, when, and what it did.
//! Written by `run` and `replay`, read by `report`, `replay`, `compare` and `run --resume`; a
//! manifest that does not parse is the same error everywhere. Never any secret.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::dataset::SkippedRow;

/// The manifest's own format version; bump it when a field changes meaning.
pub const MANIFEST_VERSION: u32 = 1;

/// The `manifest_version` and `schema_version` a manifest of this critbench holds, the only ones it
/// reads.
const VERSIONS: (u32, u32) = (MANIFEST_VERSION, crate::SCHEMA_VERSION);

/// The file's name in a run directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// How a run ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Every loop ran.
    #[default]
    Finished,
    /// A signal stopped it; the tables hold the loops finished before.
    Interrupted,
}

/// A run's `manifest.json` (docs/FORMAT.md): what ran, on what, with which plugins, and what it
/// wrote. A default manifest is of this critbench's versions.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Manifest {
    /// The manifest's format version ([`MANIFEST_VERSION`] when written).
    pub manifest_version: u32,
    /// The tables' schema version ([`crate::SCHEMA_VERSION`] when written).
    pub schema_version: u32,
    /// The critbench that wrote the run.
    pub critbench_version: String,
    /// The run's id, in every row of its tables.
    pub run_id: String,
    /// Whether every loop ran.
    #[serde(default)]
    pub status: RunStatus,
    /// The shard this manifest's run is, for a shard's own manifest (`RUN/shards/I/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::shards::Shard>,
    /// The number of shards merged, for the manifest `critbench merge` writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<u32>,
    /// The resolved experiment.
    pub experiment: ExperimentRecord,
    /// A replayed run: the run it was replayed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed_from: Option<PathBuf>,
    /// A replayed run: the run id of the run it was replayed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_run_id: Option<String>,
    /// The dataset files as the run read them.
    #[serde(default)]
    pub datasets: Vec<DatasetRecord>,
    /// The critics' plugins as loaded.
    #[serde(default)]
    pub plugins: Vec<PluginRecord>,
    /// The held-out evaluators' plugins, as `plugins` records the critics'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evaluators: Vec<PluginRecord>,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// When it ended (RFC 3339, UTC).
    pub finished_at: String,
    /// How long it took.
    pub wall_seconds: f64,
    /// Loops run at once.
    #[serde(default)]
    pub jobs: usize,
    /// Tasks whose loops ran.
    #[serde(default)]
    pub tasks_run: usize,
    /// Tasks no critic takes (by kind), so no loop of theirs ran.
    #[serde(default)]
    pub tasks_unrouted: usize,
    /// The learning phase of strategy memory, when the experiment has the memory arm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Value>,
    /// Dataset rows skipped as bad (`on_bad_row = "skip"`), over every dataset.
    #[serde(default)]
    pub rows_skipped: usize,
    /// Rows of `outcomes.parquet`.
    pub loops: u64,
    /// Rows of `trajectories.parquet`.
    pub critiques: u64,
    /// How the policy grid was run: `replay` or `direct`.
    pub sweep: String,
    /// Generator and critic calls made.
    #[serde(default)]
    pub calls: Calls,
    /// Loops with at least one critique that failed every attempt.
    #[serde(default)]
    pub loops_with_critic_errors: u64,
    /// Loops that ended because the writer program wrote no draft the policy asked for
    /// (`exit_reason` `writer_error`); absent when none did.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub loops_with_writer_errors: u64,
    /// Per critic: critiques asked and critiques that failed every attempt.
    #[serde(default)]
    pub critiques_by_critic: BTreeMap<String, CritiqueCounts>,
    /// Per held-out evaluator: critiques asked and critiques that failed every attempt.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evaluations_by_evaluator: BTreeMap<String, CritiqueCounts>,
    /// Per critic: the keys of its critique answers critbench does not read (what they carried
    /// was dropped), each with the critiques that carried it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unread_critique_keys: BTreeMap<String, BTreeMap<String, u64>>,
    /// Loops that failed (their task's error is in `failed_loops`).
    #[serde(default)]
    pub failed_loop_count: u64,
    /// The first failed loops, described.
    #[serde(default)]
    pub failed_loops: Vec<String>,
    /// What the user was warned of when the run started (a threshold outside a critic's score
    /// range), for whoever reads the run later.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What the model client did (`[openai]` experiments only). Never the API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openai: Option<Value>,
    /// The run's table files as it wrote them, by path relative to the run directory
    /// (`outcomes.parquet`, or `outcomes/shard=0/part-0.parquet` in a sharded run): what readers
    /// check the files against before they trust them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tables: BTreeMap<String, TableRecord>,
    /// A rescoring's manifest (`RUN/rescored/NAME/`): what was re-critiqued, with which critic,
    /// from which run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rescore: Option<RescoreRecord>,
    /// A sequential run (`[sequential]`): its rule, every look, what it decided and what it spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialRecord>,
    /// The writer programs of `backend = "command"`, as started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writers: Vec<WriterRecord>,
}

/// A writer program as started (docs/FORMAT.md, `writers`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriterRecord {
    /// What it writes: `generate and revise`, `generate` or `revise`.
    pub role: String,
    /// The name its hello gives.
    pub name: String,
    /// The version its hello gives.
    pub version: String,
    /// The command line as the experiment gives it.
    pub command: Vec<String>,
    /// The SHA-256 of the command's script (its first argument that names a file), else of its
    /// program, hex.
    pub sha256: String,
    /// Its processes stopped after a failure, by cause (the whole run's), each replaced by a
    /// fresh one; the draft it failed on failed its loop.
    pub process: ProcessTrouble,
}

/// What a sequential run followed and decided (docs/FORMAT.md, `sequential`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SequentialRecord {
    /// The confidence sequence, by name.
    pub method: String,
    /// The stopping rule.
    pub rule: SequentialRule,
    /// Tasks the run draws from (admitted, and taken by a critic), and the most it may run.
    pub task_set: u64,
    /// The most tasks the run may run.
    pub budget: u64,
    /// The comparisons followed, in the order of each look's `comparisons`.
    pub comparisons: Vec<SequentialComparison>,
    /// Every look the run made, in order.
    pub looks: Vec<SequentialLook>,
    /// The look that stopped the run; absent while none has (an interrupted run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<SequentialLook>,
    /// Tasks whose loops ran: those of the deciding look and the next look's, admitted before it
    /// was decided.
    pub tasks_run: u64,
    /// Each comparison over every task that ran.
    pub over_tasks_run: Vec<SequentialStatus>,
    /// What the run spent against what the whole set would have.
    pub cost: SequentialCost,
}

/// The stopping rule of a sequential run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SequentialRule {
    /// The arm whose pass rate comes first in `A − B`.
    pub arm_a: String,
    /// The arm subtracted.
    pub arm_b: String,
    /// The confidence the intervals hold together at, and each comparison's own (its Bonferroni
    /// share when every comparison must settle).
    pub confidence: f64,
    /// Each comparison's own confidence.
    pub sequence_confidence: f64,
    /// The equivalence margin, when the rule may settle on "equivalent".
    pub margin: Option<f64>,
    /// Tasks before the first look.
    pub min_tasks: u64,
    /// Tasks between looks.
    pub check_every: u64,
    /// The most tasks the rule runs, when capped.
    pub max_tasks: Option<u64>,
    /// `all` (every comparison must settle) or `one` (the comparison marked `decides`).
    pub settle: String,
}

/// One comparison a sequential run follows: A − B within a config × critic.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SequentialComparison {
    /// The config compared within.
    pub config_id: String,
    /// The critic compared under.
    pub critic: String,
    /// The arm that comes first in `A − B`.
    pub arm_a: String,
    /// The arm subtracted.
    pub arm_b: String,
    /// The tasks of the set this critic takes (a count for the record: the sequence treats tasks
    /// as independent draws, whatever the set's size).
    pub population: u64,
    /// This comparison's verdict stops the run (the others are followed for the record).
    pub decides: bool,
}

/// A look of a sequential run: each comparison after `tasks` tasks, and what the rule decided.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SequentialLook {
    /// The look's number, from 1.
    pub look: u64,
    /// Tasks admitted so far.
    pub tasks: u64,
    /// `continue`, `settled` or `budget`.
    pub decision: String,
    /// Each comparison at this look, in the order of the record's `comparisons`.
    pub comparisons: Vec<SequentialStatus>,
}

/// One comparison at a look: its estimate and confidence-sequence interval, and their verdict.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SequentialStatus {
    /// Tasks that gave it a value (its critic took them and a pair of loops ran).
    pub tasks: u64,
    /// The difference in pass rate, when any task gave a value.
    pub estimate: Option<f64>,
    /// The interval's lower end.
    pub lower: f64,
    /// The interval's upper end.
    pub upper: f64,
    /// `open`, `a_better`, `b_better` or `equivalent`.
    pub verdict: String,
}

/// Tasks, loops, calls and tokens a sequential run spent, each against the whole set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SequentialCost {
    /// Tasks run.
    pub tasks: Spent,
    /// Loops run.
    pub loops: Spent,
    /// Generator calls: one per recorded round (each round is also one critique).
    pub calls: Spent,
    /// Model tokens, when the run had a model client and was not resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Spent>,
}

/// What was spent, and what the whole set would have cost at this run's mean per task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spent {
    /// What the run spent.
    pub used: u64,
    /// What the whole set would have.
    pub full: u64,
    /// `used / full`.
    pub share: f64,
}

/// What a rescoring re-critiqued, with which critic, and from which run (docs/FORMAT.md).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RescoreRecord {
    /// The rescoring's name: its folder `RUN/rescored/NAME`.
    pub name: String,
    /// The critic as it was opened: plugin or command, config, kinds, weights, isolation,
    /// timeout_s, memory_mb.
    pub critic: Value,
    /// Its plugin (or command) as loaded, with its SHA-256.
    pub plugin: PluginRecord,
    /// The run's critic of the same name whose table was taken, when the rescoring reused one;
    /// its plugin's SHA-256 then, which `plugin.sha256` equals unless the plugin changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_critic_sha256: Option<String>,
    /// The attempts per critique, the run's `critic_attempts`.
    pub critic_attempts: u32,
    /// The run rescored: its directory, run id and tables as its manifest records them.
    pub source: RescoredRun,
    /// Recorded loops re-critiqued, and those left out because the critic does not take their
    /// task's kind.
    pub loops_rescored: u64,
    /// Recorded loops left out: the critic does not take their task's kind.
    pub loops_not_taken: u64,
    /// Replayed loops (one per config of the grid and recorded loop), and those censored: the
    /// new critic's scores would have the policy revise after the last recorded round.
    pub loops: u64,
    /// Replayed loops censored.
    pub censored: u64,
}

/// The run a rescoring re-critiqued.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RescoredRun {
    /// Its directory.
    pub dir: PathBuf,
    /// Its run id.
    pub run_id: String,
    /// Its table files, as its manifest records them.
    pub tables: BTreeMap<String, TableRecord>,
}

/// A table file as a run wrote it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableRecord {
    /// Its size.
    pub bytes: u64,
    /// Its rows, from its footer.
    pub rows: u64,
    /// Its bytes' SHA-256, hex.
    pub sha256: String,
}

impl TableRecord {
    /// The Parquet file at `path` as it is on disk now.
    pub fn of(path: &Path) -> Result<TableRecord, std::io::Error> {
        let (bytes, sha256) = crate::files::stamp(path)?;
        let rows = crate::tables::parquet_rows(path).map_err(std::io::Error::other)? as u64;
        Ok(TableRecord { bytes, rows, sha256 })
    }
}

/// A table file that is not what the run wrote.
#[derive(Debug, thiserror::Error)]
#[error(
    "{} {problem}: it is not the file the run wrote (manifest.json recorded {} bytes, sha256 {}), so nothing read \
     from it can be trusted\n  hint: restore the file, or run the experiment again with --overwrite",
    path.display(),
    recorded.bytes,
    &recorded.sha256[..recorded.sha256.len().min(12)]
)]
pub struct TableMismatch {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it: "is 12 bytes", "is missing", …
    pub problem: String,
    /// What the manifest recorded of it.
    pub recorded: TableRecord,
}

impl Default for Manifest {
    fn default() -> Manifest {
        Manifest {
            manifest_version: MANIFEST_VERSION,
            schema_version: crate::SCHEMA_VERSION,
            critbench_version: String::new(),
            run_id: String::new(),
            status: RunStatus::default(),
            shard: None,
            shards: None,
            experiment: ExperimentRecord::default(),
            replayed_from: None,
            source_run_id: None,
            datasets: Vec::new(),
            plugins: Vec::new(),
            evaluators: Vec::new(),
            started_at: String::new(),
            finished_at: String::new(),
            wall_seconds: 0.0,
            jobs: 0,
            tasks_run: 0,
            tasks_unrouted: 0,
            memory: None,
            rows_skipped: 0,
            loops: 0,
            critiques: 0,
            sweep: String::new(),
            calls: Calls::default(),
            loops_with_critic_errors: 0,
            loops_with_writer_errors: 0,
            critiques_by_critic: BTreeMap::new(),
            evaluations_by_evaluator: BTreeMap::new(),
            unread_critique_keys: BTreeMap::new(),
            failed_loop_count: 0,
            failed_loops: Vec::new(),
            warnings: Vec::new(),
            openai: None,
            tables: BTreeMap::new(),
            rescore: None,
            sequential: None,
            writers: Vec::new(),
        }
    }
}

/// The resolved experiment: the fields readers use, typed; the rest as written.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ExperimentRecord {
    /// The experiment's name.
    pub name: String,
    /// Epochs per task, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epochs: Option<u32>,
    /// The arms run, as the output spells them.
    #[serde(default)]
    pub arms: Vec<String>,
    /// The policy grid, one config each.
    #[serde(default)]
    pub policies: Vec<PolicyRecord>,
    /// The critics, in order.
    #[serde(default)]
    pub critics: Vec<CriticRecord>,
    /// The arms whose loops end with the adjudicator's pass; summaries show each
    /// as a second arm `ARM+adjudicate` paired with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adjudicate: Vec<String>,
    /// Every other key, as written.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl ExperimentRecord {
    /// The held-out evaluators' entries (`evaluators`, as the experiment resolved them), and for
    /// each whether it judged every recorded draft (`all_rounds`), not only first drafts and final
    /// answers.
    pub fn evaluators(&self) -> impl Iterator<Item = (&Value, bool)> {
        self.rest
            .get("evaluators")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|entry| (entry, entry.get("all_rounds").and_then(Value::as_bool) == Some(true)))
    }
}

/// One config of the policy grid.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PolicyRecord {
    /// Its id, as the tables' `config_id`.
    pub config_id: String,
    /// The score a draft must reach to pass.
    pub pass_score: f64,
    /// Revisions allowed after the first draft.
    pub max_revisions: u32,
    /// Every other key, as written.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// One critic of the experiment.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CriticRecord {
    /// Its name, as the tables' `critic`.
    pub name: String,
    /// Every other key, as written.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// One dataset file as the run read it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DatasetRecord {
    /// The file.
    pub path: PathBuf,
    /// Its bytes' SHA-256, hex.
    pub sha256: String,
    /// Tasks admitted (after `--limit`, bad rows and the memory split's other side).
    pub tasks: usize,
    /// Rows skipped as bad.
    pub rows_skipped: usize,
    /// The first skipped rows; `rows_skipped` counts them all.
    pub skipped: Vec<SkippedRow>,
}

/// A critic's plugin as loaded.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PluginRecord {
    /// The critic (or evaluator) it serves.
    pub critic: String,
    /// The library (or command) loaded.
    pub path: PathBuf,
    /// The name the plugin declares.
    pub name: String,
    /// The version it declares.
    pub version: String,
    /// The file's SHA-256, hex.
    pub sha256: String,
    /// The lowest and highest score it gives.
    pub score_range: [f64; 2],
    /// Whether one instance may critique from several threads at once.
    pub thread_safe: bool,
    /// Whether its critique depends on the policy (so a replayed sweep cannot share one).
    pub policy_dependent: bool,
    /// Compiled into critbench: `path` is then the executable and `sha256` of the critic's sources.
    pub builtin: bool,
    /// A critic in child processes: the children it stopped after a failure, by cause (the whole
    /// run's, every session of a resumed run and every shard of a merged one); `None` for a critic
    /// in critbench's own process.
    pub process: Option<ProcessTrouble>,
    /// Every other key, as written.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A critic's child processes stopped after a failure, by cause: each was restarted, and the
/// critique it failed on retried (docs/FORMAT.md, `plugins[].process`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessTrouble {
    /// Children stopped after a failure, each replaced by a fresh one.
    pub restarts: u64,
    /// Of those, the ones that broke the protocol (a line that is not protocol JSON, a late or
    /// second answer, an answer to another request).
    pub protocol_errors: u64,
    /// Of those, the ones that gave no answer within `timeout_s`.
    pub timeouts: u64,
    /// Of those, the ones that died (exited, were killed, closed their output).
    pub exits: u64,
}

impl ProcessTrouble {
    /// `self` and `other` added up (a resumed run's sessions, a sharded run's shards).
    pub fn plus(self, other: ProcessTrouble) -> ProcessTrouble {
        ProcessTrouble {
            restarts: self.restarts + other.restarts,
            protocol_errors: self.protocol_errors + other.protocol_errors,
            timeouts: self.timeouts + other.timeouts,
            exits: self.exits + other.exits,
        }
    }

    /// Whether anything went wrong.
    pub fn any(&self) -> bool {
        self.restarts > 0
    }
}

/// Generator and critic calls: every output round is one of each, and a replayed sweep serves
/// every config from one recording.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Calls {
    /// Generator calls made.
    pub generator: u64,
    /// Critic calls made.
    pub critic: u64,
    /// The calls a direct sweep of every config would have made.
    pub direct_equivalent: u64,
    /// `direct_equivalent` less what was made.
    #[serde(default)]
    pub saved: u64,
    /// `direct_equivalent` over what was made.
    #[serde(default)]
    pub ratio: f64,
}

/// Critiques of one critic: how many were asked, how many were retried, how many failed every
/// attempt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CritiqueCounts {
    /// Critiques asked.
    pub recorded: u64,
    /// Critiques asked more than once: an attempt failed (the critic's error, an invalid critique,
    /// a crash, a timeout, a protocol error) and was retried, whether a later one answered or not.
    pub retried: u64,
    /// Critiques that failed every attempt.
    pub failed: u64,
}

impl CritiqueCounts {
    /// Adds every name's counts of `more` to `into`'s (the run's totals from a chunk's, or a
    /// sharded run's from each shard's).
    pub fn add_all(into: &mut BTreeMap<String, CritiqueCounts>, more: &BTreeMap<String, CritiqueCounts>) {
        for (name, counts) in more {
            // Looked up before inserting: a name is cloned once per run, not once per chunk.
            match into.get_mut(name) {
                Some(total) => {
                    total.recorded += counts.recorded;
                    total.retried += counts.retried;
                    total.failed += counts.failed;
                }
                None => {
                    into.insert(name.clone(), *counts);
                }
            }
        }
    }
}

/// Adds `more`'s counts of unread critique keys (per critic, per key) to `into`'s.
pub fn add_unread_keys(
    into: &mut BTreeMap<String, BTreeMap<String, u64>>,
    more: &BTreeMap<String, BTreeMap<String, u64>>,
) {
    for (critic, keys) in more {
        let total = into.entry(critic.clone()).or_default();
        for (key, count) in keys {
            *total.entry(key.clone()).or_default() += count;
        }
    }
}

/// A manifest that cannot be read: not JSON of a manifest's shape, or of another manifest or table
/// schema version than this critbench's (fields a manifest of this version lacks, as one written
/// by hand may, read as empty).
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file exists and cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is not JSON of a manifest's shape.
    #[error("{} is not a critbench manifest: {source}\n  hint: it is written by `critbench run`; run the experiment again (with --overwrite) to rebuild it", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What the JSON parser said.
        source: serde_json::Error,
    },
    /// A manifest of other versions than this critbench's: an earlier development build's, or a
    /// later critbench's.
    #[error(
        "{} was written by {}, manifest version {}, table schema version {}; this critbench reads manifest version \
         {MANIFEST_VERSION} with table schema version {} only\n  hint: run the experiment again with this critbench \
         (with --overwrite), or read the run with the critbench that wrote it; docs/FORMAT.md's changelog says what \
         changed",
        path.display(),
        critbench_version.as_deref().map_or_else(|| "a critbench that did not say its version".to_string(), |v| format!("critbench {v}")),
        shown(*manifest_version),
        shown(*schema_version),
        crate::SCHEMA_VERSION
    )]
    OtherVersion {
        /// The file.
        path: PathBuf,
        /// The critbench that wrote it, as it says (`critbench_version`).
        critbench_version: Option<String>,
        /// Its `manifest_version`, when it has one.
        manifest_version: Option<u64>,
        /// Its `schema_version`, when it has one.
        schema_version: Option<u64>,
    },
}

impl Manifest {
    /// Reads `dir/manifest.json`; `None` when the directory has none.
    pub fn read(dir: &Path) -> Result<Option<Manifest>, ManifestError> {
        let path = dir.join(MANIFEST_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(ManifestError::Io { path, source }),
        };
        let corrupt = |source| ManifestError::Corrupt { path: path.clone(), source };
        let value: Value = serde_json::from_str(&text).map_err(corrupt)?;
        let version = |key: &str| value.get(key).and_then(Value::as_u64);
        let (manifest_version, schema_version) = (version("manifest_version"), version("schema_version"));
        if (manifest_version, schema_version) != (Some(u64::from(VERSIONS.0)), Some(u64::from(VERSIONS.1))) {
            let critbench_version = value.get("critbench_version").and_then(Value::as_str).map(str::to_string);
            return Err(ManifestError::OtherVersion { path, critbench_version, manifest_version, schema_version });
        }
        serde_json::from_value(value).map(Some).map_err(corrupt)
    }

    /// Checks the table files of the run in `dir` against the ones it recorded, size and
    /// SHA-256 (a manifest written by hand may record none, and has none to check). A recorded table that is missing, or a
    /// table file of the run it did not record, is a mismatch too.
    pub fn check_tables(&self, dir: &Path) -> Result<(), TableMismatch> {
        if self.tables.is_empty() {
            return Ok(());
        }
        for (name, recorded) in &self.tables {
            let path = dir.join(name);
            let mismatch = |problem: String| TableMismatch { path: path.clone(), problem, recorded: recorded.clone() };
            let bytes = std::fs::metadata(&path).map_err(|e| mismatch(format!("cannot be read ({e})")))?.len();
            if bytes != recorded.bytes {
                return Err(mismatch(format!("is {bytes} bytes")));
            }
            let (_, sha256) = crate::files::stamp(&path).map_err(|e| mismatch(format!("cannot be read ({e})")))?;
            if sha256 != recorded.sha256 {
                return Err(mismatch(format!("has changed (sha256 {} now)", &sha256[..12])));
            }
        }
        // A shard's manifest records its own partitions; the others are other shards'.
        let whole_run = self.shard.is_none();
        for table in crate::shards::ALL_TABLES.into_iter().filter(|_| whole_run) {
            for path in crate::shards::table_files(dir, table) {
                let name = path.strip_prefix(dir).unwrap_or(&path).to_string_lossy().into_owned();
                if !self.tables.contains_key(&name) {
                    return Err(TableMismatch {
                        path,
                        problem: "was not written by the run".into(),
                        recorded: TableRecord { bytes: 0, rows: 0, sha256: "none".into() },
                    });
                }
            }
        }
        Ok(())
    }

    /// Writes `dir/manifest.json` aside and renames it into place.
    pub fn write(&self, dir: &Path) -> Result<(), std::io::Error> {
        let text = serde_json::to_string_pretty(self).expect("a manifest serializes") + "\n";
        crate::files::write_atomically(&dir.join(MANIFEST_FILE), text.as_bytes())
    }
}

/// A version as a refusal names it: `none` when the manifest has none.
fn shown(version: Option<u64>) -> String {
    version.map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// Why the run in `run_dir` cannot be read yet, when it is a sharded run not merged: its
/// summaries and run-level `manifest.json` are written by `critbench merge`.
pub fn unmerged(run_dir: &Path) -> Option<String> {
    (crate::shards::is_sharded(run_dir) && !run_dir.join(MANIFEST_FILE).is_file()).then(|| {
        format!(
            "it is a sharded run that is not merged yet (no manifest.json); run `critbench merge {}` once every \
             shard has finished",
            run_dir.display()
        )
    })
}

/// Whether a count is 0 (the manifest leaves such a count out).
fn is_zero(count: &u64) -> bool {
    *count == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_round_trips_and_keeps_unknown_experiment_fields() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = Manifest {
            run_id: "r".into(),
            status: RunStatus::Interrupted,
            experiment: ExperimentRecord {
                name: "demo".into(),
                epochs: Some(3),
                rest: [("seed".to_string(), Value::from(7))].into_iter().collect(),
                ..ExperimentRecord::default()
            },
            ..Manifest::default()
        };
        manifest.write(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(MANIFEST_FILE)).unwrap();
        assert!(text.contains("\"status\": \"interrupted\"") && text.contains("\"seed\": 7"), "{text}");
        let back = Manifest::read(dir.path()).unwrap().unwrap();
        assert_eq!(back.status, RunStatus::Interrupted);
        assert_eq!(back.experiment.epochs, Some(3));
        assert_eq!(back.experiment.rest["seed"], 7);
    }

    #[test]
    fn a_corrupt_manifest_is_one_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Manifest::read(dir.path()).unwrap().is_none());
        std::fs::write(dir.path().join(MANIFEST_FILE), "{\"run_id\": 3").unwrap();
        let error = Manifest::read(dir.path()).unwrap_err().to_string();
        assert!(error.contains("is not a critbench manifest") && error.contains("hint:"), "{error}");
        let wrong_shape = serde_json::json!({"manifest_version": 1, "schema_version": 10, "run_id": 3});
        std::fs::write(dir.path().join(MANIFEST_FILE), wrong_shape.to_string()).unwrap();
        let error = Manifest::read(dir.path()).unwrap_err();
        assert!(matches!(error, ManifestError::Corrupt { .. }), "{error:?}");
    }

    /// A manifest of an earlier development build (an older table schema, or written before
    /// `manifest_version` existed) or of a later critbench is refused, naming the critbench that
    /// wrote it and both versions, and saying to run the experiment again with this critbench.
    #[test]
    fn a_manifest_of_other_versions_is_refused_naming_what_wrote_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST_FILE);
        let written = |versions: serde_json::Value| {
            let mut manifest = serde_json::to_value(Manifest { run_id: "r".into(), ..Manifest::default() }).unwrap();
            manifest["critbench_version"] = "0.0.7".into();
            let object = manifest.as_object_mut().unwrap();
            object.remove("manifest_version");
            object.remove("schema_version");
            object.extend(versions.as_object().unwrap().clone());
            std::fs::write(&path, manifest.to_string()).unwrap();
            Manifest::read(dir.path())
        };
        assert_eq!(
            written(serde_json::json!({"manifest_version": 1, "schema_version": 10})).unwrap().unwrap().run_id,
            "r"
        );
        for (versions, shown) in [
            (
                serde_json::json!({"manifest_version": 1, "schema_version": 6}),
                "manifest version 1, table schema version 6",
            ),
            (serde_json::json!({"schema_version": 3}), "manifest version none, table schema version 3"),
            (
                serde_json::json!({"manifest_version": 1, "schema_version": 8}),
                "manifest version 1, table schema version 8",
            ),
            (
                serde_json::json!({"manifest_version": 2, "schema_version": 10}),
                "manifest version 2, table schema version 10",
            ),
        ] {
            let error = written(versions).unwrap_err();
            assert!(matches!(error, ManifestError::OtherVersion { .. }), "{error:?}");
            assert_eq!(
                error.to_string(),
                format!(
                    "{} was written by critbench 0.0.7, {shown}; this critbench reads manifest version 1 with table \
                     schema version 10 only\n  hint: run the experiment again with this critbench (with --overwrite), \
                     or read the run with the critbench that wrote it; docs/FORMAT.md's changelog says what changed",
                    path.display()
                )
            );
        }
        std::fs::write(&path, serde_json::json!({"schema_version": 2}).to_string()).unwrap();
        let error = Manifest::read(dir.path()).unwrap_err().to_string();
        assert!(
            error.contains("was written by a critbench that did not say its version, manifest version none"),
            "{error}"
        );
    }

    #[test]
    fn a_default_manifest_is_of_this_critbench_s_versions() {
        let manifest = Manifest::default();
        assert_eq!((manifest.manifest_version, manifest.schema_version), VERSIONS);
    }
}
