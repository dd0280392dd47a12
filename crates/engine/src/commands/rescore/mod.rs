//! `critbench rescore`: every stored draft of a finished run critiqued again by another critic,
//! calling no model, and the run's policy grid replayed on the new scores.
//!
//! Writes `RUN/rescored/NAME/` (docs/FORMAT.md): `trajectories.parquet`, the run's trajectory
//! rows with the same keys and the new critique; `outcomes.parquet`, each config of the run's
//! grid replayed on the new scores wherever the recorded rounds reach, a loop `censored` where
//! the new scores would have its policy revise after the last recorded round; `censored.csv`;
//! `manifest.json`; and the summaries and reports of `critbench report`, over the loops with an
//! outcome. The run's no-feedback drafts do not depend on the critique, so their replay is what
//! that arm would have scored under the new critic; the feedback arm's drafts answer the old
//! critic's critiques, so its replay is how the new critic judges drafts steered by the old one.
//!
//! Stages as in a run, on the run's one pipeline: the run's loops stream from its table with their
//! tasks from its datasets (`input`), workers re-critique them (`rows`), and the rows go in order
//! to part files committed by the run's checksummed journal (`sink`, a consumer of the pipeline
//! like the run's), so a killed rescoring resumes to the uninterrupted result, and a signal stops
//! it as it stops a run.

mod censored;
mod critic;
mod error;
mod input;
mod rows;
mod sink;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use critbench_core::{FinalDraft, Policy};
use critbench_storage::manifest::{
    Calls, MANIFEST_FILE, MANIFEST_VERSION, Manifest, PluginRecord, RescoreRecord, RescoredRun,
};
use critbench_storage::shards::{OUTCOMES, TRAJECTORIES, table_file};

pub use censored::CensoredRow;
pub use critic::CriticChoice;

use crate::EngineError;
use crate::run::pipeline::{self, Intake, Names, Pass, Progress, Stopped, panic_text};
use crate::run::round::Critic;
use crate::run_dir::RunDirError;
use crate::run_dir::journal::{DatasetStamp, PROGRESS_DIR, RUN_JSON};
use crate::run_dir::layout::RESCORED_DIR;
use crate::run_dir::{Claim, Layout};
use crate::stop::Interrupt;
pub use error::RescoreError;
use input::{Chunk, InputReport};
use rows::{Grid, Rescored};
use sink::{Fingerprint, Sink};

/// What the command line asks of a rescoring.
#[derive(Clone, Debug)]
pub struct RescoreOptions {
    /// The rescoring's name: its folder `RUN/rescored/NAME`, and the run's critic it reuses when
    /// `critic` is [`CriticChoice::Run`].
    pub name: String,
    /// Which critic re-critiques the drafts.
    pub critic: CriticChoice,
    /// Replaces the critic's config.
    pub config: Option<serde_json::Value>,
    /// Replaces the critic's kinds: only loops of tasks of these kinds are rescored.
    pub kinds: Option<Vec<String>>,
    /// `--plugin-dir`: where to look for plugins, before the run's own `plugin_dirs`.
    pub plugin_dirs: Vec<PathBuf>,
    /// Run the critic in child processes.
    pub isolate_plugins: bool,
    /// The run's dataset files where they are now, in the run's order, when not where its
    /// manifest says.
    pub datasets: Vec<PathBuf>,
    /// Worker threads; 0 means every core.
    pub jobs: usize,
    /// Replace an earlier rescoring of this name.
    pub overwrite: bool,
    /// Finish an interrupted rescoring of this name.
    pub resume: bool,
    /// Print no progress.
    pub quiet: bool,
    /// The caller's signal handling: when its flag is raised the rescoring commits what is done
    /// and ends with [`RescoreError::Interrupted`].
    pub interrupt: Option<Interrupt>,
}

/// What a rescoring wrote.
#[derive(Debug)]
pub struct RescoreSummary {
    /// The rescoring's folder.
    pub out_dir: PathBuf,
    /// Recorded loops re-critiqued.
    pub loops_rescored: u64,
    /// Recorded loops of tasks the critic does not take.
    pub loops_not_taken: u64,
    /// Critiques made (a resumed rescoring's include those made before it was interrupted).
    pub critiques: u64,
    /// Critiques that failed every attempt.
    pub failed_critiques: u64,
    /// Of `critiques`, those made before the interruption this rescoring resumed from.
    pub resumed_critiques: u64,
    /// Replayed loops (one per config and recorded loop).
    pub loops: u64,
    /// Replayed loops censored.
    pub censored: u64,
    /// Each config × arm × critic's censoring (`censored.csv`).
    pub censored_rows: Vec<CensoredRow>,
    /// Wall time of the rescoring.
    pub elapsed: Duration,
    /// The rescoring's report.
    pub report: critbench_report::Report,
}

/// Rescores the finished run in `run_dir` as `options` say, into `run_dir/rescored/NAME/`.
pub fn rescore_run(run_dir: &Path, options: &RescoreOptions) -> Result<RescoreSummary, RescoreError> {
    let started = Instant::now();
    let (started_at, _) = critbench_storage::clock::utc_stamps(SystemTime::now());
    let name = &options.name;
    if name.is_empty() || name.contains(['/', '\\']) || name == "." || name == ".." {
        return Err(RescoreError::BadName(name.clone()));
    }
    if let Some(problem) = crate::experiment::name_problem(name) {
        return Err(RescoreError::UnprintableName { name: name.clone(), problem });
    }
    let run = read_run(run_dir)?;
    let tables = critbench_storage::shards::table_files(run_dir, TRAJECTORIES);
    let policies = grid_of(&run)?;
    let attempts = run
        .experiment
        .rest
        .get("critic_attempts")
        .and_then(serde_json::Value::as_u64)
        .map_or(critbench_plugin_host::DEFAULT_ATTEMPTS, |a| a.clamp(1, u64::from(u32::MAX)) as u32);
    let jobs = if options.jobs > 0 { options.jobs } else { crate::experiment::available_cores() };
    let settings = critic::Settings {
        name,
        choice: &options.critic,
        config: options.config.as_ref(),
        kinds: options.kinds.as_deref(),
        plugin_dirs: &options.plugin_dirs,
        isolate_plugins: options.isolate_plugins,
        jobs,
    };
    let opened = critic::open(&run, &settings, &policies)?;
    check_kinds(run_dir, &opened.spec)?;
    let datasets = datasets_of(&run, &options.datasets)?;

    let out = run_dir.join(RESCORED_DIR).join(name);
    let layout = Layout::new(&out, None);
    let lock = crate::run_dir::claim(
        &layout,
        Claim::Rescore { run: run_dir, overwrite: options.overwrite, resume: options.resume },
    )?;
    let set_up = SetUp {
        run_dir,
        options,
        started,
        started_at,
        run,
        tables,
        policies,
        attempts,
        jobs,
        opened,
        datasets,
        out: out.clone(),
        layout: layout.clone(),
        resume: lock.resumes(),
    };
    let rescored = rescore_claimed(set_up);
    // A rescoring refused by its input (exit status 2) leaves nothing behind that would block the
    // corrected command; an interrupted or failed one keeps what it committed, to resume.
    if rescored.as_ref().is_err_and(|error| error.is_usage() && !lock.resumes()) {
        crate::run_dir::discard_rescoring(&out);
    }
    rescored
}

/// What a rescoring has set up by the time it holds its folder: what its pass and its summary use.
struct SetUp<'a> {
    run_dir: &'a Path,
    options: &'a RescoreOptions,
    started: Instant,
    started_at: String,
    /// The run's manifest.
    run: Manifest,
    /// The run's trajectory tables.
    tables: Vec<PathBuf>,
    policies: Vec<Policy>,
    attempts: u32,
    jobs: usize,
    opened: critic::Opened,
    datasets: Vec<(PathBuf, DatasetStamp)>,
    /// The rescoring's folder.
    out: PathBuf,
    layout: Layout,
    /// Whether the claim found an interrupted rescoring to finish.
    resume: bool,
}

/// The rescoring's pass, in the folder it holds, and its summary.
fn rescore_claimed(set_up: SetUp<'_>) -> Result<RescoreSummary, RescoreError> {
    let SetUp {
        run_dir,
        options,
        started,
        started_at,
        run,
        tables,
        policies,
        attempts,
        jobs,
        opened,
        datasets,
        out,
        layout,
        resume,
    } = set_up;
    let name = &options.name;
    let fingerprint = Fingerprint {
        rescore: name.clone(),
        run_id: format!("{}-rescored-{name}", run.run_id),
        critbench_version: env!("CARGO_PKG_VERSION").to_string(),
        source_run_id: run.run_id.clone(),
        source_tables: run.tables.clone(),
        // Isolation changes how a critique is computed, not what it is: a rescoring that crashed
        // in process resumes with its critic in child processes.
        critic: {
            let mut critic = serde_json::to_value(&opened.spec).expect("a critic serializes");
            crate::run_dir::journal::without_isolation(&mut critic);
            critic
        },
        plugin_sha256: opened.plugin.sha256.clone(),
        critic_attempts: attempts,
        datasets: datasets.iter().map(|(_, stamp)| stamp.clone()).collect(),
        chunk_critiques: input::CHUNK_CRITIQUES,
    };
    // A replayed config costs what the run paid for its rounds' drafts; the critic calls no model.
    let prices = crate::run::cost::RolePrices::recorded(run.experiment.rest.get("openai"));
    let grid = Grid::new(policies, prices);
    let label = run_dir.join(critbench_storage::shards::table_label(run_dir, TRAJECTORIES));
    let (mut sink, first_chunk, resumed) = if resume {
        let (sink, point) = Sink::resume(&out, &fingerprint, &grid, &label)?;
        if !options.quiet {
            note!("resuming {}: {} loop(s) already replayed", fingerprint.run_id, point.loops);
        }
        (sink, point.next_chunk, point.critiques)
    } else {
        (Sink::create(&out, &fingerprint, &grid, &label)?, 0, 0)
    };
    let critic = Critic { instance: &opened.instance, weights: opened.spec.weights.as_ref(), attempts };
    let work = Work {
        critic: &critic,
        tables: &tables,
        datasets: &datasets,
        takes: &|kind| opened.spec.takes(kind),
        first_chunk,
        label: &label,
        in_dataset_order: run.sequential.is_none(),
    };
    let progress = Progress::new(options.quiet, "the run's rows", "rescoring", || {
        tables.iter().filter_map(|t| critbench_storage::tables::parquet_rows(t).ok()).sum::<usize>() as u64
    });
    let driven = drive(&work, jobs, &mut sink, &progress, options.interrupt.as_ref());
    progress.finish();
    let (input, sink) = settle(driven, sink, &out)?;
    // One outcome per config of every loop taken, those of a resumed journal's parts included: a
    // journal edited to skip chunks, its checksum made again, is caught here.
    let expected = input.loops_taken * grid.policies.len() as u64;
    if sink.counts.loops != expected {
        let written = sink.counts.loops;
        sink.abandon();
        let journal = out.join(PROGRESS_DIR).join(crate::run_dir::journal::JOURNAL_FILE);
        return Err(RunDirError::Skipped { journal, what: "loops", written, expected }.into());
    }
    let counts = sink.close()?;

    let censored_rows = censored::tally(&out.join(table_file(OUTCOMES)), &run)?;
    censored::write(&out, &censored_rows)?;
    let censored: u64 = censored_rows.iter().map(|row| row.censored).sum();
    let by_critic = counts.critiques_by_critic.get(name).copied().unwrap_or_default();
    let (finished_at, _) = critbench_storage::clock::utc_stamps(SystemTime::now());
    let record = RescoreRecord {
        name: name.clone(),
        critic: serde_json::to_value(&opened.spec).expect("a critic serializes"),
        // The critic's children stopped after a failure, as the rescoring ends.
        plugin: PluginRecord {
            process: opened.instance.child_trouble().map(|c| crate::run::plan::process_trouble(c)),
            ..opened.plugin.clone()
        },
        run_critic_sha256: opened.run_sha256.clone(),
        critic_attempts: attempts,
        source: RescoredRun { dir: run_dir.to_path_buf(), run_id: run.run_id.clone(), tables: run.tables.clone() },
        loops_rescored: input.loops_taken,
        loops_not_taken: input.loops_not_taken,
        loops: counts.loops,
        censored,
    };
    let manifest = Manifest {
        manifest_version: MANIFEST_VERSION,
        schema_version: critbench_storage::SCHEMA_VERSION,
        critbench_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: fingerprint.run_id.clone(),
        experiment: run.experiment.clone(),
        source_run_id: Some(run.run_id.clone()),
        datasets: run.datasets.clone(),
        plugins: run.plugins.clone(),
        started_at,
        finished_at,
        wall_seconds: started.elapsed().as_secs_f64(),
        jobs,
        tasks_run: counts.tasks as usize,
        loops: counts.loops,
        critiques: counts.critiques,
        sweep: run.sweep.clone(),
        calls: Calls {
            generator: 0,
            critic: counts.recorded_rounds,
            direct_equivalent: counts.critiques,
            saved: counts.critiques.saturating_sub(counts.recorded_rounds),
            ratio: counts.critiques as f64 / counts.recorded_rounds.max(1) as f64,
        },
        loops_with_critic_errors: counts.loops_with_critic_errors,
        critiques_by_critic: counts.critiques_by_critic.clone(),
        // The run's failed loops have no rows here either: the summaries' notes say so.
        unread_critique_keys: Default::default(),
        failed_loop_count: run.failed_loop_count,
        failed_loops: run.failed_loops.clone(),
        rows_skipped: run.rows_skipped,
        tasks_unrouted: run.tasks_unrouted,
        tables: crate::run_dir::layout::table_records(&layout)?,
        rescore: Some(record),
        warnings: opened.warnings.clone(),
        ..Manifest::default()
    };
    manifest.write(&out).map_err(|source| EngineError::Io {
        context: format!("cannot write {}", out.join(MANIFEST_FILE).display()),
        source,
    })?;
    let report = critbench_report::write_reports_trusted(&out)?;
    // What makes it resumable goes first, as a run's does.
    let progress_dir = out.join(PROGRESS_DIR);
    let _ = std::fs::remove_file(progress_dir.join(RUN_JSON));
    crate::run_dir::remove_progress(&progress_dir);
    Ok(RescoreSummary {
        out_dir: out,
        loops_rescored: input.loops_taken,
        loops_not_taken: input.loops_not_taken,
        critiques: by_critic.recorded,
        failed_critiques: by_critic.failed,
        resumed_critiques: resumed,
        loops: counts.loops,
        censored,
        censored_rows,
        elapsed: started.elapsed(),
        report,
    })
}

/// The manifest of the finished run in `run_dir`, once it is checked to be one a rescoring can
/// read: in one piece or merged, finished, its tables the ones it wrote, with stored drafts,
/// critics whose critiques do not depend on the policy, and no adjudicated arm.
fn read_run(run_dir: &Path) -> Result<Manifest, RescoreError> {
    let not_a_run = |reason: String| RescoreError::NotARun { dir: run_dir.to_path_buf(), reason };
    if !run_dir.is_dir() {
        return Err(not_a_run("no such directory".into()));
    }
    if let Some(reason) = critbench_storage::manifest::unmerged(run_dir) {
        return Err(not_a_run(reason));
    }
    let manifest = match critbench_storage::manifest::Manifest::read(run_dir) {
        Ok(Some(manifest)) => manifest,
        Ok(None) => return Err(not_a_run("it has no manifest.json".into())),
        Err(error) => return Err(not_a_run(error.to_string())),
    };
    if manifest.rescore.is_some() {
        return Err(not_a_run("it is itself a rescoring; rescore the run it was made from".into()));
    }
    if manifest.shard.is_some() {
        return Err(not_a_run("it is one shard's folder; rescore the run directory once it is merged".into()));
    }
    if manifest.status != critbench_storage::manifest::RunStatus::Finished {
        return Err(RunDirError::NotFinished { run: run_dir.to_path_buf() }.into());
    }
    critbench_report::check_tables(run_dir)?;
    if critbench_storage::shards::table_files(run_dir, TRAJECTORIES).is_empty() {
        return Err(not_a_run("trajectories.parquet is missing".into()));
    }
    if manifest.datasets.is_empty() {
        return Err(not_a_run("manifest.json lists no dataset: the tasks a critic is shown are unknown".into()));
    }
    if manifest.experiment.rest.get("store_drafts").and_then(serde_json::Value::as_bool) != Some(true) {
        return Err(RescoreError::NoDrafts { dir: run_dir.to_path_buf() });
    }
    let dependent: Vec<String> =
        manifest.plugins.iter().filter(|p| p.policy_dependent).map(|p| p.critic.clone()).collect();
    if !dependent.is_empty() {
        return Err(RescoreError::RunPolicyDependent { dir: run_dir.to_path_buf(), critics: dependent });
    }
    if !manifest.experiment.adjudicate.is_empty() {
        let arms = manifest.experiment.adjudicate.clone();
        return Err(RescoreError::Adjudicated { dir: run_dir.to_path_buf(), arms });
    }
    Ok(manifest)
}

/// The run's policy grid, read back from its manifest (each config's id must be its settings').
fn grid_of(manifest: &Manifest) -> Result<Vec<Policy>, RescoreError> {
    let mut policies = Vec::new();
    for record in &manifest.experiment.policies {
        let problem = |problem: String| RescoreError::Policy { config_id: record.config_id.clone(), problem };
        let rest = &record.rest;
        let final_draft = match rest.get("final").and_then(serde_json::Value::as_str) {
            None | Some("best") => FinalDraft::Best,
            Some("last") => FinalDraft::Last,
            Some(other) => return Err(problem(format!("`final` is `{other}`, not \"best\" or \"last\""))),
        };
        let policy = Policy {
            pass_score: record.pass_score,
            max_revisions: record.max_revisions,
            stall: rest.get("stall").and_then(serde_json::Value::as_bool).unwrap_or(true),
            plateau_eps: rest.get("plateau_eps").and_then(serde_json::Value::as_f64).unwrap_or(0.0),
            dim_target: rest.get("dim_target").and_then(serde_json::Value::as_f64),
            final_draft,
        };
        if policy.config_id() != record.config_id {
            return Err(problem(format!("its settings are those of config `{}`", policy.config_id())));
        }
        policies.push(policy);
    }
    if policies.is_empty() {
        return Err(RescoreError::Policy {
            config_id: "(none)".into(),
            problem: "manifest.json lists no config".into(),
        });
    }
    Ok(policies)
}

/// Refuses a critic that takes none of the run's loops, before anything is written.
fn check_kinds(run_dir: &Path, spec: &critbench_plugin_host::CriticSpec) -> Result<(), RescoreError> {
    let Some(takes) = &spec.kinds else { return Ok(()) };
    let mut kinds = std::collections::BTreeSet::new();
    for path in critbench_storage::shards::table_files(run_dir, OUTCOMES) {
        let read = critbench_storage::tables::outcome_kinds(&path);
        kinds.extend(read.map_err(|e| RescoreError::NotARun { dir: run_dir.to_path_buf(), reason: e.to_string() })?);
    }
    if kinds.iter().any(|kind| spec.takes(kind.as_deref())) {
        return Ok(());
    }
    Err(RescoreError::NothingTaken {
        critic: spec.name.clone(),
        takes: takes.clone(),
        kinds: kinds.into_iter().map(|kind| kind.unwrap_or_else(|| "(none)".into())).collect(),
    })
}

/// The run's dataset files (where `given` says, else where its manifest does), each checked to
/// be the file the run read (its SHA-256), with its stamp for the fingerprint.
fn datasets_of(manifest: &Manifest, given: &[PathBuf]) -> Result<Vec<(PathBuf, DatasetStamp)>, RescoreError> {
    let recorded = &manifest.datasets;
    if !given.is_empty() && given.len() != recorded.len() {
        return Err(RescoreError::DatasetCount { recorded: recorded.len(), given: given.len() });
    }
    let mut datasets = Vec::new();
    for (index, record) in recorded.iter().enumerate() {
        let path = given.get(index).unwrap_or(&record.path);
        critbench_storage::dataset::check_regular(path)?;
        let (bytes, sha256) = critbench_storage::files::stamp(path).map_err(|e| RescoreError::DatasetMissing {
            path: path.clone(),
            recorded: record.path.clone(),
            problem: e,
        })?;
        if sha256 != record.sha256 {
            return Err(RescoreError::DatasetChanged {
                path: path.clone(),
                recorded: record.sha256.clone(),
                now: sha256,
            });
        }
        let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
        datasets.push((path.clone(), DatasetStamp { path: canonical, bytes, sha256 }));
    }
    Ok(datasets)
}

/// What the workers and the reader share.
struct Work<'a> {
    critic: &'a Critic<'a>,
    tables: &'a [PathBuf],
    /// The run's datasets where they are now, each with its stamp (its SHA-256 the manifest's).
    datasets: &'a [(PathBuf, DatasetStamp)],
    takes: &'a (dyn Fn(Option<&str>) -> bool + Sync),
    first_chunk: u64,
    /// The run's table, as messages name it.
    label: &'a Path,
    /// Whether the run wrote its tasks in dataset order (a sequential run writes them in its own).
    in_dataset_order: bool,
}

/// How the rescoring's pass ended, with the sink it wrote to: on a failure what can still be
/// committed is, and the failure returned; after a signal every chunk taken is committed (those
/// the workers finished within the grace period too) and the rescoring ends interrupted, to be
/// resumed; otherwise what the reader saw, and the sink to close.
fn settle<'g, R>(
    driven: Result<(R, Option<Stopped>), RescoreError>,
    mut sink: Sink<'g>,
    out: &Path,
) -> Result<(R, Sink<'g>), RescoreError> {
    let (read, stopped) = match driven {
        Ok(done) => done,
        Err(error) => {
            sink.abandon();
            return Err(error);
        }
    };
    let Some(stopped) = stopped else { return Ok((read, sink)) };
    let Stopped::Signal(signal) = stopped else { unreachable!("a rescoring calls no model: no budget stops it") };
    sink.commit()?;
    let tasks = sink.counts.tasks;
    Err(RescoreError::Interrupted { signal, tasks, progress: out.join(PROGRESS_DIR) })
}

/// Re-critiques a chunk, leaving it unfinished once `stop` is raised.
fn rescore_chunk(work: &Work<'_>, chunk: Chunk, stop: &AtomicBool) -> Rescored {
    let (seq, position, tasks) = (chunk.seq, chunk.position, chunk.tasks);
    let mut loops = Vec::with_capacity(chunk.loops.len());
    for input in chunk.loops {
        if stop.load(Ordering::Relaxed) {
            return Rescored { seq, position, tasks, complete: false, loops: Ok(loops) };
        }
        let rescored = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rows::rescore_loop(work.critic, input, work.label)
        }))
        .unwrap_or_else(|payload| Err(EngineError::Panicked(panic_text(payload)).into()));
        match rescored {
            Ok(done) => loops.push(done),
            Err(error) => return Rescored { seq, position, tasks, complete: true, loops: Err(error) },
        }
    }
    Rescored { seq, position, tasks, complete: true, loops: Ok(loops) }
}

/// What a rescoring's pass calls its threads and its work.
const NAMES: Names = Names {
    reader: "critbench-rescore-reader",
    reader_is: "the rescoring's reader thread",
    workers: "critbench-rescore",
    done: "re-critiqued",
    finishes: "the rescoring",
};

/// The rescoring's pass on the run's pipeline: the reader on its own thread, `jobs` workers
/// re-critiquing chunks, and `sink` taking them in order on this thread; with what the reader saw
/// and what stopped the pass early, if anything did.
fn drive(
    work: &Work<'_>,
    jobs: usize,
    sink: &mut Sink<'_>,
    progress: &Progress,
    interrupt: Option<&Interrupt>,
) -> Result<(InputReport, Option<Stopped>), RescoreError> {
    let pass = Pass {
        workers: jobs,
        window: 2 * jobs + 2,
        first_chunk: work.first_chunk,
        progress,
        interrupt,
        budget: None,
        names: &NAMES,
    };
    let read = |admit: &mut dyn FnMut(Chunk) -> bool, _: &AtomicBool| {
        input::read(work.tables, work.datasets, work.in_dataset_order, work.takes, work.first_chunk, admit)
    };
    let rescore = |intake: &Intake<'_, Chunk>, deliver: &mut dyn FnMut(Rescored) -> bool| {
        while let Some(chunk) = intake.next() {
            if !deliver(rescore_chunk(work, chunk, intake.stop())) {
                break;
            }
        }
    };
    pipeline::drive(&pass, read, rescore, sink)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use critbench_storage::shards::TABLES;

    use super::*;
    use crate::run::pipeline::testing::signal_while_two_chunks_are_in_flight;
    use crate::run_dir::journal::SavedProgress;

    /// After a signal a rescoring takes and commits the chunks its workers finish within the
    /// grace period, up to the first one they left unfinished, as a run does (its test in
    /// `run::sink`); `--resume` then goes on from there.
    #[test]
    fn after_a_signal_the_chunks_finished_within_the_grace_period_are_committed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("rescored").join("x");
        let fingerprint = Fingerprint {
            rescore: "x".into(),
            run_id: "r-rescored-x".into(),
            critbench_version: env!("CARGO_PKG_VERSION").into(),
            source_run_id: "r".into(),
            source_tables: BTreeMap::new(),
            critic: serde_json::json!({}),
            plugin_sha256: String::new(),
            critic_attempts: 1,
            datasets: Vec::new(),
            chunk_critiques: input::CHUNK_CRITIQUES,
        };
        let grid = Grid::new(vec![Policy::default()], Default::default());
        let mut sink = Sink::create(&out, &fingerprint, &grid, Path::new("trajectories.parquet")).unwrap();
        let stopped = signal_while_two_chunks_are_in_flight(&mut sink, |seq, complete| Rescored {
            seq,
            position: seq,
            // No task, as no loop: a journal's counts are checked against its parts.
            tasks: 0,
            complete,
            loops: Ok(Vec::new()),
        });
        // What the rescoring does after its pass.
        let error = settle(Ok(((), stopped)), sink, &out).err().expect("an interrupted rescoring");
        let RescoreError::Interrupted { .. } = &error else { panic!("{error}") };
        let saved = SavedProgress::<Fingerprint>::read(&out.join(PROGRESS_DIR), TABLES.len()).unwrap();
        let last = saved.expect("the rescoring's progress").commits.last().cloned().expect("committed parts");
        assert_eq!(last.next_chunk, 3, "chunks 0, 1 and 2 (finished after the signal) committed; 3 left unfinished");
    }
}
