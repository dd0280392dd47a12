//! A run, stage by stage (this room's modules of those names): `plan` what runs, stream tasks from
//! the `source`, record their `loops` on the `workers` (each loop's critiques in `round`, the
//! `oracle` arm's reviser's in `oracle`, its end in `adjudicate` and `evaluate`), build and write rows in order through the `sink` (`emit`, one
//! recorded loop's rows for every config it serves), then `summarize` (the `manifest`, the
//! reports). Every pass over the datasets — strategy memory's learning pass (`learn`, `memory`),
//! then the run proper, in a `sequential` run's own order when it has one — is driven by the one
//! `pipeline`, which a rescoring drives too.
//!
//! Memory is bounded by the chunks in flight, never by the number of tasks: the source admits a
//! chunk only when fewer than a window of chunks are between it and the sink.
//!
//! Threads: one source thread (reads, hashes, parses, admits), `jobs` loop workers, and the
//! calling thread as the sink, which appends the rows the workers built in order and commits
//! them to the run directory's journal every couple of seconds.

pub mod adjudicate;
pub mod backend;
pub mod chat;
pub mod cost;
pub(crate) mod emit;
mod error;
pub mod evaluate;
mod fingerprint;
mod learn;
pub(crate) mod loops;
pub(crate) mod manifest;
pub mod memory;
pub(crate) mod oracle;
pub(crate) mod pipeline;
pub(crate) mod plan;
pub(crate) mod round;
pub(crate) mod sequential;
pub(crate) mod sink;
pub(crate) mod source;
mod summarize;
mod workers;

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use critbench_storage::clock;
use critbench_storage::shards::Shard;

use crate::EngineError;
use crate::experiment::{BackendKind, Experiment};
use crate::run::chat::{OpenAiSession, plugin_host};
use crate::run::learn::LearnSink;
use crate::run::pipeline::{Progress, Stopped};
use crate::run::plan::LoadedWriter;
use crate::run::plan::{Plan, Scope, describe_kinds, offline_author};
use crate::run::sink::RowSink;
use crate::run::source::{Source, SourceReport};
use crate::run::summarize::{Finished, summarize};
use crate::run::workers::{Workers, pass, raise_open_files};
use crate::run_dir;
use crate::run_dir::journal::{RUN_JSON, progress_dir};
use crate::stop::Interrupt;
use critbench_core::author::Author;
use critbench_openai::author::OpenAiAuthor;
use critbench_plugin_host::writer::ProgramWriter;

pub use crate::run::error::RunError;
pub use crate::run::summarize::RunSummary;

/// How a run reports while it works.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Never draw a progress bar (it is drawn only on a terminal anyway).
    pub quiet: bool,
    /// Replace the run already in the output directory (its files are removed first).
    pub overwrite: bool,
    /// Finish the interrupted run in the output directory: loops it committed are kept, the
    /// rest are run, and the tables end as an uninterrupted run's.
    pub resume: bool,
    /// The caller's signal handling: when its flag is raised the run stops new work, writes the
    /// loops already finished and ends with [`RunError::Interrupted`].
    pub interrupt: Option<Interrupt>,
    /// Run only this shard's tasks, into the shard's files of the run directory.
    pub shard: Option<Shard>,
}

/// Runs the whole experiment with the author its `backend` names and writes the run directory
/// (docs/FORMAT.md).
pub fn run_experiment(experiment: &Experiment, options: &RunOptions) -> Result<RunSummary, RunError> {
    let session = start_session(experiment)?;
    match (experiment.backend, &session) {
        (BackendKind::Openai, Some(session)) => {
            let author = OpenAiAuthor::new(Arc::clone(&session.client), experiment.prompts.clone());
            run_inner(experiment, &author, Some(session), options, Vec::new())
        }
        (BackendKind::Command, _) => {
            let spec = experiment.writer.as_ref().expect("a command backend has its [writer] (resolve checks)");
            let base_dir = experiment.path.as_ref().and_then(|p| p.parent());
            let threads = if experiment.jobs == 0 { crate::experiment::available_cores() } else { experiment.jobs };
            let mut writer = ProgramWriter::open(spec, base_dir, threads)?;
            if let Some(session) = &session {
                writer = writer.with_model(session.model_access()?);
            }
            let writers =
                writer.programs().into_iter().map(|(info, trouble)| LoadedWriter::of(info, trouble)).collect();
            run_inner(experiment, &writer, session.as_ref(), options, writers)
        }
        _ => {
            let author = offline_author(experiment).ok_or(RunError::NoModelClient)?;
            run_inner(experiment, author.as_ref(), session.as_ref(), options, Vec::new())
        }
    }
}

/// Runs the whole experiment with `author` as the model side and writes the run directory. An
/// `[openai]` table naming a judge model still serves plugins through the `chat` service.
pub fn run_experiment_with(
    experiment: &Experiment,
    author: &dyn Author,
    options: &RunOptions,
) -> Result<RunSummary, RunError> {
    let session = start_session(experiment)?;
    run_inner(experiment, author, session.as_ref(), options, Vec::new())
}

/// The model client of an experiment with an `[openai]` table, offered to plugins as `chat`
/// (see [`plugin_host`]). Started before any plugin is created.
pub(crate) fn start_session(experiment: &Experiment) -> Result<Option<OpenAiSession>, EngineError> {
    let Some(settings) = &experiment.openai else { return Ok(None) };
    Ok(Some(OpenAiSession::start(settings, experiment.budget.as_ref())?))
}

fn run_inner(
    experiment: &Experiment,
    author: &dyn Author,
    session: Option<&OpenAiSession>,
    options: &RunOptions,
    writers: Vec<LoadedWriter>,
) -> Result<RunSummary, RunError> {
    if experiment.sequential.is_some() && options.shard.is_some() {
        return Err(crate::run::sequential::SequentialError::Sharded.into());
    }
    let started = Instant::now();
    let (started_at, started_compact) = clock::utc_stamps(SystemTime::now());
    let run_id = format!("{}-{started_compact}", experiment.name);
    let mut plan = Plan::load(experiment, author, &plugin_host(session)?)?;
    plan.writers = writers;
    for warning in &plan.warnings {
        note!("warning: {warning}");
    }
    if let Some(openai) = &experiment.openai {
        raise_open_files(openai.concurrency())?;
    }
    let workers = Workers::of(experiment, &plan);
    let jobs = workers.threads;
    let chunk_tasks = workers.chunk_tasks(experiment);
    // Every file is opened (format, header, schema checked) before anything runs or is written.
    let source = Source::open(&plan, chunk_tasks)?.shard(options.shard);
    let total_bytes = source.total_bytes();
    let layout = run_dir::Layout::new(&experiment.out, options.shard);
    let lock = run_dir::claim(&layout, run_dir::Claim::Run { overwrite: options.overwrite, resume: options.resume })?;
    // `--resume` where nothing was committed starts the run.
    let resume = lock.resumes();
    let set_up = SetUp {
        experiment,
        session,
        options,
        layout: layout.clone(),
        plan,
        source,
        workers,
        jobs,
        chunk_tasks,
        total_bytes,
        run_id,
        started,
        started_at,
        resume,
        earlier: lock.manifest(),
    };
    let ran = run_claimed(set_up);
    // A pass refused by its input (exit status 2) leaves nothing behind that would block the
    // corrected command; an interrupted or failed one keeps what it committed, to resume.
    if ran.as_ref().is_err_and(|error| error.is_usage() && !resume) {
        run_dir::discard_run(&layout);
    }
    ran
}

/// What a run has set up by the time it holds its directory: what its passes and its summary use.
struct SetUp<'a, 's> {
    experiment: &'a Experiment,
    session: Option<&'s OpenAiSession>,
    options: &'s RunOptions,
    layout: run_dir::Layout,
    plan: Plan<'a>,
    source: Source,
    workers: Workers,
    jobs: usize,
    chunk_tasks: usize,
    total_bytes: u64,
    run_id: String,
    started: Instant,
    started_at: String,
    /// Whether the claim found an interrupted run to finish.
    resume: bool,
    /// The manifest of that run, as the claim read it (the run holds the lock since).
    earlier: Option<&'s critbench_storage::manifest::Manifest>,
}

/// The run's passes over the datasets, in the directory it holds, and its summary.
fn run_claimed(set_up: SetUp<'_, '_>) -> Result<RunSummary, RunError> {
    let SetUp {
        experiment,
        session,
        options,
        layout,
        mut plan,
        mut source,
        workers,
        jobs,
        chunk_tasks,
        total_bytes,
        run_id,
        started,
        started_at,
        resume,
        earlier,
    } = set_up;
    let interrupt = options.interrupt.as_ref();
    if options.resume {
        // The critics' children stopped before the interruption count with this session's.
        crate::run::manifest::carry_trouble(&mut plan, earlier);
    }
    // A budget counts what the whole run spent, before an interruption too.
    let budget = match session.filter(|_| experiment.budget.is_some()) {
        Some(s) => {
            if resume {
                s.client.carry_spend(&crate::run::cost::spent_before(earlier)?);
            }
            Some(s.client.budget_flag())
        }
        None => None,
    };
    let stopped_error = |stopped: Stopped, loops: u64, out: &std::path::Path| match stopped {
        Stopped::Signal(signal) => RunError::Interrupted { signal, loops, out: out.to_path_buf() },
        Stopped::Budget => {
            let reached = session.and_then(|s| s.client.budget_stop());
            let currency = experiment.pricing.as_ref().map_or_else(String::new, |p| p.currency.clone());
            RunError::BudgetReached { reached, currency, loops, out: out.to_path_buf() }
        }
    };

    // Hashed before any pass over the datasets, for a resume to check against; every pass hashes
    // what it reads too, and each must have read these same bytes.
    let fingerprint = fingerprint::fingerprint(&plan, &run_id, chunk_tasks, options.shard)?;

    // The memory arm learns first, on its learning tasks; every arm then runs on the rest.
    let memory = if experiment.arms.iter().any(|a| a.uses_memory()) {
        let progress = Progress::new(options.quiet, "the datasets", "learning (strategy memory)", || total_bytes);
        let mut learner = LearnSink::new(&plan);
        let learned =
            pass(&plan, source, None, Scope::Learn, workers, &mut learner, &progress, interrupt, budget.as_ref());
        progress.finish();
        let (learned, interrupted) = learned?;
        if let Some(stopped) = interrupted {
            return Err(stopped_error(stopped, 0, &experiment.out));
        }
        fingerprint.check_read(&learned.datasets)?;
        check_routed(experiment, &learned)?;
        let (record, hints) = learner.finish(&learned, &layout.own_dir())?;
        plan.hints = hints;
        // The run proper reads the datasets again.
        source = Source::open(&plan, chunk_tasks)?.shard(options.shard);
        Some(record)
    } else {
        None
    };

    // A sequential run reads every task first, to admit them in its seeded random order.
    let order = match &experiment.sequential {
        Some(settings) => {
            let order =
                crate::run::sequential::Order::read(&plan, Source::open(&plan, chunk_tasks)?, settings, chunk_tasks)?;
            fingerprint.check_read(&order.report().datasets)?;
            check_routed(experiment, order.report())?;
            Some(order)
        }
        None => None,
    };
    let (mut sink, first_chunk, run_id, resumed_rounds, replayed) = if resume {
        let (sink, point) = RowSink::resume(&plan, &layout, &fingerprint)?;
        if !options.quiet {
            note!("resuming {}: {} loop(s) already written", point.run_id, point.loops);
        }
        (sink, point.next_chunk, point.run_id, point.recorded_rounds, point.sequential)
    } else {
        (RowSink::create(&plan, &layout, &fingerprint)?, 0, run_id, 0, Vec::new())
    };
    let mut follower = None;
    if let (Some(order), Some(settings)) = (order, &experiment.sequential) {
        let written = sink.written.counts.tasks;
        let followed = crate::run::sequential::Follower::new(&plan, settings, &order, &replayed, written)?;
        source = source.in_order(order.with_gate(followed.gate()));
        follower = Some(followed);
    }
    let progress = Progress::new(options.quiet, "the datasets", "running", || total_bytes);
    let source = source.skip(first_chunk);
    let budget = budget.as_ref();
    let streamed = match &mut follower {
        Some(follower) => pass(
            &plan,
            source,
            Some(follower.gate()),
            Scope::Evaluate,
            workers,
            &mut follower.following(&mut sink),
            &progress,
            interrupt,
            budget,
        ),
        None => pass(&plan, source, None, Scope::Evaluate, workers, &mut sink, &progress, interrupt, budget),
    };
    progress.finish();
    let (report, interrupted) = match streamed.and_then(|(report, interrupted)| {
        fingerprint.check_read(&report.datasets)?;
        Ok((report, interrupted))
    }) {
        Ok(report) => report,
        Err(error) => {
            sink.abandon();
            return Err(error);
        }
    };
    // Every task the source handed out (or skipped as written before a resume) is written: a
    // journal edited to skip chunks, its checksum made again, is caught here.
    let written_tasks = sink.written.counts.tasks;
    if interrupted.is_none() && written_tasks != report.tasks_run as u64 {
        sink.abandon();
        let journal = progress_dir(&layout.own_dir()).join(run_dir::journal::JOURNAL_FILE);
        let (what, expected) = ("tasks", report.tasks_run as u64);
        return Err(run_dir::RunDirError::Skipped { journal, what, written: written_tasks, expected }.into());
    }
    let written = sink.close()?;
    if interrupted.is_none() {
        check_routed(experiment, &report)?;
    }
    if report.unrouted > 0 {
        note!(
            "warning: {} task(s) match no critic's `kinds` and are not run (counted in manifest.json)",
            report.unrouted
        );
    }
    let openai = session.map(OpenAiSession::report);
    let sequential = follower.map(|f| f.record(&written, openai.as_ref(), resumed_rounds > 0));
    let finished = Finished {
        layout: &layout,
        run_id: &run_id,
        started_at: &started_at,
        elapsed: started.elapsed(),
        written,
        source: report,
        memory,
        jobs,
        openai,
        interrupted,
        resumed_rounds,
        sequential,
    };
    let summary = summarize(&plan, finished)?;
    if interrupted.is_none() {
        // Finished: the committed parts are in the tables now.
        // What makes it resumable goes first: a kill while the folder is being removed must not
        // leave a journal naming part files that are gone.
        let progress = progress_dir(&layout.own_dir());
        let _ = std::fs::remove_file(progress.join(RUN_JSON));
        run_dir::remove_progress(&progress);
    }
    match interrupted {
        Some(stopped) => Err(stopped_error(stopped, summary.loops, &summary.out_dir)),
        None => Ok(summary),
    }
}

/// A pass in which no admitted task reached a critic is a mistake in the experiment.
fn check_routed(experiment: &Experiment, report: &SourceReport) -> Result<(), RunError> {
    if report.tasks_run + report.other_split + report.other_shards > 0 {
        return Ok(());
    }
    Err(RunError::NoTaskForAnyCritic {
        critic_kinds: describe_kinds(&experiment.critics),
        task_kinds: report.kinds.iter().cloned().collect(),
    })
}
