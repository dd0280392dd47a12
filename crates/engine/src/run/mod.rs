//! A run, stage by stage (the engine's private modules of those names): `plan` what runs, stream
//! tasks from the `source`, record their `loops` on worker threads, write rows in order through
//! the `sink`, then `summarize`.
//!
//! Memory is bounded by the chunks in flight, never by the number of tasks: the source admits a
//! chunk only when fewer than a window of chunks are between it and the sink.
//!
//! Threads: one source thread (reads, hashes, parses, admits), `jobs` loop workers, and the
//! calling thread as the sink. What needs no order is done on the workers, so that `--jobs`
//! spreads it: a chunk's tasks are serialized for the critics before its first loop, and once it
//! is recorded its rows are built as Arrow batches and its tasks freed (the consumer's
//! `Prepare`); the sink appends the batches in order and the Parquet writer encodes them. A
//! failed write raises a stop flag: the source stops reading, the workers abandon their chunks,
//! and the run ends with the error within a chunk's time.
//!
//! When the loops await a model server (`Plan::awaits_author`), each worker drives many chunks
//! at once (`work_together`), so that `concurrency` requests are in flight on `jobs` threads;
//! otherwise a loop blocks its worker while it waits, and there are as many workers as requests
//! in flight ([`Experiment::blocking_jobs`]).

pub mod adjudicate;
pub mod backend;
pub mod chat;
pub mod cost;
pub(crate) mod emit;
pub mod evaluate;
mod fingerprint;
mod learn;
pub(crate) mod loops;
pub(crate) mod manifest;
pub mod memory;
pub(crate) mod plan;
pub(crate) mod round;
pub(crate) mod sequential;
pub(crate) mod sink;
pub(crate) mod source;
mod summarize;

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Instant, SystemTime};

use critbench_storage::clock;
use critbench_storage::shards::Shard;

use crate::EngineError;
use crate::experiment::{BackendKind, Experiment};
use crate::run::chat::{OpenAiSession, plugin_host};
use crate::run::learn::LearnSink;
use crate::run::loops::{CriticBatches, Intake, panic_text, run_chunk, work_together};
use crate::run::plan::{Plan, Scope, describe_kinds, offline_author};
use crate::run::sink::{Consumer, Prepare, Progress, RowSink};
use crate::run::source::{Source, SourceReport, Sourced};
use crate::run::summarize::{Finished, summarize};
use crate::run_dir;
use crate::run_dir::journal::progress_dir;
use crate::stop::Interrupt;
use critbench_core::author::Author;
use critbench_openai::author::OpenAiAuthor;

pub use crate::run::summarize::{RunSummary, Stopped};

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
    /// loops already finished and ends with [`EngineError::Interrupted`].
    pub interrupt: Option<Interrupt>,
    /// Run only this shard's tasks, into the shard's files of the run directory.
    pub shard: Option<Shard>,
}

/// Tasks per chunk on the offline backends: enough that a hand-off costs nothing next to the
/// loops, few enough that a chunk's rows are a few hundred kilobytes.
const OFFLINE_CHUNK_TASKS: usize = 256;

/// Tasks per chunk at most when a worker's loops are futures awaiting a model server: the
/// worker's room for loops in flight is counted by loop, not chunk ([`crate::run::loops::Room`]), so a
/// chunk may hold several tasks, and a chunk's rows (built and handed to the sink at once) cost
/// less per loop.
const AWAITING_CHUNK_TASKS: usize = 8;

/// Workers whose room a chunk fits in whole, at least: see [`awaiting_chunk_tasks`].
const AWAITING_CHUNK_FITS_WORKERS: usize = 8;

/// Tasks per chunk for loops that await a model server: up to [`AWAITING_CHUNK_TASKS`], few enough
/// that a chunk's loops all start at once in the room of one of up to
/// [`AWAITING_CHUNK_FITS_WORKERS`] workers. A run that stops (a signal, a budget) records a chunk
/// only whole, and a chunk whose loops all started ends them all; it does not leave the
/// requests already answered unrecorded. From `concurrency` alone, not `--jobs`: a resumed run
/// counts chunks as the run it resumes did, whatever its `--jobs`.
fn awaiting_chunk_tasks(experiment: &Experiment, concurrency: u32) -> usize {
    let shape = experiment.task_shape();
    let (loops_per_task, _) = shape.load();
    let room = loops_in_flight(concurrency) / AWAITING_CHUNK_FITS_WORKERS;
    let fit = (room as u128 / loops_per_task.max(1)).clamp(1, AWAITING_CHUNK_TASKS as u128) as usize;
    shape.tasks_per_chunk(fit)
}

/// Loops in flight across the workers when their author awaits a model server at `concurrency`:
/// a little more than `concurrency`, because a loop between two requests (its critique) or sharing
/// its first draft's request with the other arms holds no slot.
fn loops_in_flight(concurrency: u32) -> usize {
    concurrency as usize * 5 / 4
}

/// Runs the whole experiment with the author its `backend` names and writes the run directory
/// (docs/FORMAT.md).
pub fn run_experiment(experiment: &Experiment, options: &RunOptions) -> Result<RunSummary, EngineError> {
    let session = start_session(experiment)?;
    match (experiment.backend, &session) {
        (BackendKind::Openai, Some(session)) => {
            let author = OpenAiAuthor::new(Arc::clone(&session.client), experiment.prompts.clone());
            run_inner(experiment, &author, Some(session), options)
        }
        (kind, _) => {
            let author = offline_author(kind).ok_or(EngineError::NoModelClient)?;
            run_inner(experiment, author.as_ref(), session.as_ref(), options)
        }
    }
}

/// Runs the whole experiment with `author` as the model side and writes the run directory. An
/// `[openai]` table naming a judge model still serves plugins through the `chat` service.
pub fn run_experiment_with(
    experiment: &Experiment,
    author: &dyn Author,
    options: &RunOptions,
) -> Result<RunSummary, EngineError> {
    let session = start_session(experiment)?;
    run_inner(experiment, author, session.as_ref(), options)
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
) -> Result<RunSummary, EngineError> {
    if experiment.sequential.is_some() && options.shard.is_some() {
        return Err(crate::run::sequential::SequentialError::Sharded.into());
    }
    let started = Instant::now();
    let (started_at, started_compact) = clock::utc_stamps(SystemTime::now());
    let run_id = format!("{}-{started_compact}", experiment.name);
    let mut plan = Plan::load(experiment, author, &plugin_host(session))?;
    for warning in &plan.warnings {
        eprintln!("warning: {warning}");
    }
    if let Some(openai) = &experiment.openai {
        raise_open_files(openai.concurrency())?;
    }
    let workers = Workers::of(experiment, &plan);
    let jobs = workers.threads;
    // Loops on a thread each that wait on a model server go a task at a time, so that every
    // thread has one; long loops go fewer tasks at a time, so that the chunks in flight stay small.
    let chunk_tasks = match (&experiment.openai, workers.loops_each) {
        (Some(_), None) => 1,
        (Some(openai), Some(_)) => awaiting_chunk_tasks(experiment, openai.concurrency()),
        (None, _) => experiment.task_shape().tasks_per_chunk(OFFLINE_CHUNK_TASKS),
    };
    // Every file is opened (format, header, schema checked) before anything runs or is written.
    let mut source = Source::open(&plan, chunk_tasks)?.shard(options.shard);
    let total_bytes = source.total_bytes();
    let layout = run_dir::Layout::new(&experiment.out, options.shard);
    let _lock = run_dir::claim(&layout, run_dir::Claim::Run { overwrite: options.overwrite, resume: options.resume })?;
    let interrupt = options.interrupt.as_ref();
    // A budget counts what the whole run spent, before an interruption too.
    let budget = match session.filter(|_| experiment.budget.is_some()) {
        Some(s) => {
            if options.resume {
                s.client.carry_spend(&crate::run::cost::spent_before(&layout.own_dir())?);
            }
            Some(s.client.budget_flag())
        }
        None => None,
    };
    let stopped_error = |stopped: Stopped, loops: u64, out: &std::path::Path| match stopped {
        Stopped::Signal(signal) => EngineError::Interrupted { signal, loops, out: out.to_path_buf() },
        Stopped::Budget => {
            let reached = session.and_then(|s| s.client.budget_stop());
            let currency = experiment.pricing.as_ref().map_or_else(String::new, |p| p.currency.clone());
            EngineError::BudgetReached { reached, currency, loops, out: out.to_path_buf() }
        }
    };

    // Hashed before any pass over the datasets, for a resume to check against; every pass hashes
    // what it reads too, and each must have read these same bytes.
    let fingerprint = fingerprint::fingerprint(&plan, &run_id, chunk_tasks, options.shard)?;

    // The memory arm learns first, on its learning tasks; every arm then runs on the rest.
    let memory = if experiment.arms.iter().any(|a| a.uses_memory()) {
        let progress = Progress::new(total_bytes, options.quiet, "learning (strategy memory)");
        let mut learner = LearnSink::new(&plan);
        let learned =
            drive(&plan, source, None, Scope::Learn, workers, &mut learner, &progress, interrupt, budget.as_ref());
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
    let (mut sink, first_chunk, run_id, resumed_rounds, replayed) = if options.resume {
        let (sink, point) = RowSink::resume(&plan, &layout, &fingerprint)?;
        if !options.quiet {
            eprintln!("resuming {}: {} loop(s) already written", point.run_id, point.loops);
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
    let progress = Progress::new(total_bytes, options.quiet, "running");
    let source = source.skip(first_chunk);
    let budget = budget.as_ref();
    let streamed = match &mut follower {
        Some(follower) => drive(
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
        None => drive(&plan, source, None, Scope::Evaluate, workers, &mut sink, &progress, interrupt, budget),
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
    let written = sink.close()?;
    if interrupted.is_none() {
        check_routed(experiment, &report)?;
    }
    if report.unrouted > 0 {
        eprintln!(
            "warning: {} task(s) match no critic's `kinds` and are not run (counted in manifest.json)",
            report.unrouted
        );
    }
    let openai = session.map(|s| s.client.report());
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
        let _ = std::fs::remove_file(progress.join("run.json"));
        run_dir::remove_progress(&progress);
    }
    match interrupted {
        Some(stopped) => Err(stopped_error(stopped, summary.loops, &summary.out_dir)),
        None => Ok(summary),
    }
}

/// A pass in which no admitted task reached a critic is a mistake in the experiment.
fn check_routed(experiment: &Experiment, report: &SourceReport) -> Result<(), EngineError> {
    if report.tasks_run + report.other_split + report.other_shards > 0 {
        return Ok(());
    }
    Err(EngineError::NoTaskForAnyCritic {
        critic_kinds: describe_kinds(&experiment.critics),
        task_kinds: report.kinds.iter().cloned().collect(),
    })
}

/// The loop workers of a run.
#[derive(Clone, Copy, Debug)]
struct Workers {
    threads: usize,
    /// When the loops await their author: how many each worker keeps in flight at most.
    loops_each: Option<usize>,
}

impl Workers {
    fn of(experiment: &Experiment, plan: &Plan<'_>) -> Workers {
        match &experiment.openai {
            Some(openai) if plan.awaits_author() => {
                let threads = if experiment.jobs > 0 { experiment.jobs } else { crate::experiment::available_cores() };
                let loops = loops_in_flight(openai.concurrency());
                Workers { threads, loops_each: Some(loops.div_ceil(threads).max(1)) }
            }
            _ => Workers { threads: experiment.blocking_jobs(), loops_each: None },
        }
    }

    /// Chunks between the source and the sink, at most: every chunk the workers may hold, as
    /// many again finished and waiting for the chunks before them, and a few on their way.
    fn window(self) -> usize {
        match self.loops_each {
            Some(loops) => 2 * self.threads * (loops + 1) + 2,
            None => 2 * self.threads + 2,
        }
    }
}

/// Open files a run needs beside its model connections: datasets, part files, plugins' pipes,
/// the response cache.
const OPEN_FILES_BESIDE_CONNECTIONS: u64 = 256;

/// Raises the soft open-file limit to what `concurrency` connections need (toward the hard
/// limit), or says which limit to raise when the hard limit is too low.
fn raise_open_files(concurrency: u32) -> Result<(), EngineError> {
    let needed = u64::from(concurrency) + OPEN_FILES_BESIDE_CONNECTIONS;
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given and nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        // Unknown: the connections will say so if there are too few.
        return Ok(());
    }
    let (soft, hard) = (limit.rlim_cur, limit.rlim_max);
    let unlimited = limit.rlim_max == libc::RLIM_INFINITY;
    if soft >= needed || limit.rlim_cur == libc::RLIM_INFINITY {
        return Ok(());
    }
    let refused = || EngineError::OpenFiles {
        concurrency: u64::from(concurrency),
        needed,
        hard,
        fits: hard.saturating_sub(OPEN_FILES_BESIDE_CONNECTIONS).max(1),
    };
    if !unlimited && hard < needed {
        return Err(refused());
    }
    let raised = libc::rlimit { rlim_cur: needed, rlim_max: limit.rlim_max };
    // SAFETY: setrlimit reads the struct it is given; a soft limit within the hard one is allowed.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Err(refused());
    }
    Ok(())
}

/// The next chunk for a worker that drives many: waits for one only when `wait` (it has none in
/// flight), and never waits for another worker that is waiting. Chunks that arrive once the run
/// is stopping are handed back.
fn take_chunk(chunks: &Mutex<Receiver<Sourced>>, window: &Window, wait: bool) -> Intake {
    loop {
        let received = if wait {
            chunks.lock().unwrap_or_else(|e| e.into_inner()).recv().map_err(|_| TryRecvError::Disconnected)
        } else {
            match chunks.try_lock() {
                Ok(chunks) => chunks.try_recv(),
                Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner().try_recv(),
                Err(std::sync::TryLockError::WouldBlock) => return Intake::Empty,
            }
        };
        match received {
            Ok(_) if window.stopped() => window.release(),
            Ok(chunk) => return Intake::Chunk(chunk.serialize()),
            Err(TryRecvError::Empty) => return Intake::Empty,
            Err(TryRecvError::Disconnected) => return Intake::Closed,
        }
    }
}

/// Chunks between the source and the sink, at most: the source waits for a permit before it
/// hands a chunk on, and the sink returns the permit once the chunk is written.
pub(crate) struct Window {
    free: Mutex<usize>,
    changed: Condvar,
    /// The workers look at it before every loop; a budget's flag when the run has one, so that
    /// no loop starts once the model client has seen the budget reached.
    stop: Arc<AtomicBool>,
}

impl Window {
    pub(crate) fn new(size: usize) -> Window {
        Window::stopped_by(size, None)
    }

    /// A window whose `stop` is `flag` when given: a budget's, raised by the model client.
    fn stopped_by(size: usize, flag: Option<&Arc<AtomicBool>>) -> Window {
        let stop = flag.cloned().unwrap_or_default();
        Window { free: Mutex::new(size), changed: Condvar::new(), stop }
    }

    /// Waits for a permit; `false` once the run is stopping.
    pub(crate) fn acquire(&self) -> bool {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 && !self.stopped() {
            free = self.changed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        if self.stopped() {
            return false;
        }
        *free -= 1;
        true
    }

    pub(crate) fn release(&self) {
        *self.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.changed.notify_one();
    }

    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _guard = self.free.lock().unwrap_or_else(|e| e.into_inner());
        self.changed.notify_all();
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// One pass over the datasets: the source on its own thread, `workers` recording loops,
/// and `consumer` taking the recorded chunks in source order on this thread. `budget` is raised
/// by the model client once a budget is reached: the pass then stops as on a signal, but waits
/// for the loops in flight however long they take.
#[allow(clippy::too_many_arguments)]
fn drive<C: Consumer>(
    plan: &Plan<'_>,
    source: Source,
    gate: Option<Arc<crate::run::sequential::Gate>>,
    scope: Scope,
    workers: Workers,
    consumer: &mut C,
    progress: &Progress,
    interrupt: Option<&Interrupt>,
    budget: Option<&Arc<AtomicBool>>,
) -> Result<(SourceReport, Option<Stopped>), EngineError> {
    let jobs = workers.threads;
    let window = Window::stopped_by(workers.window(), budget);
    let (chunk_sender, chunk_receiver) = sync_channel(jobs + 1);
    let chunk_receiver = Mutex::new(chunk_receiver);
    // As many as the window holds: a worker driving many chunks never waits to hand one on.
    let (result_sender, result_receiver) = sync_channel(workers.window());
    let first_chunk = source.first_chunk();
    let preparer = consumer.preparer();
    std::thread::scope(|scope_| {
        let window = &window;
        let preparer = &preparer;
        let source_thread = std::thread::Builder::new()
            .name("critbench-source".into())
            .spawn_scoped(scope_, move || {
                let sender = chunk_sender;
                source.run(plan, scope, |chunk| {
                    gate.as_ref().is_none_or(|gate| gate.wait(chunk.look, &window.stop))
                        && window.acquire()
                        && sender.send(chunk).is_ok()
                })
            })
            .map_err(|source| EngineError::Threads { what: "the dataset reader thread", source })?;
        let workers: Result<Vec<_>, EngineError> = (0..jobs)
            .map(|index| {
                let results = result_sender.clone();
                let chunks = &chunk_receiver;
                std::thread::Builder::new().name(format!("critbench-loops-{index}")).spawn_scoped(scope_, move || {
                    if let Some(loops_each) = workers.loops_each {
                        let intake = |wait| take_chunk(chunks, window, wait);
                        work_together(plan, scope, &window.stop, loops_each, intake, |result| {
                            results.send(prepared(preparer, result)).is_ok()
                        });
                        return;
                    }
                    let batches = CriticBatches::start(scope_, &plan.critics);
                    loop {
                        let next = chunks.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        let Ok(chunk) = next else { break };
                        if window.stopped() {
                            window.release();
                            continue;
                        }
                        let chunk = chunk.serialize();
                        let result = prepared(preparer, run_chunk(plan, chunk, scope, &window.stop, batches.as_ref()));
                        if results.send(result).is_err() {
                            break;
                        }
                    }
                })
            })
            .collect::<Result<_, _>>()
            .map_err(|source| EngineError::Threads { what: "worker threads", source });
        let workers: Vec<_> = match workers {
            Ok(workers) => workers,
            Err(error) => {
                // The source stops at its next chunk; nothing has been written yet.
                window.stop();
                let _ = source_thread.join();
                return Err(error);
            }
        };
        drop(result_sender);

        // The sink: chunks in source order, whatever order they finish in.
        let mut waiting = BTreeMap::new();
        let mut next = first_chunk;
        let mut failure: Option<EngineError> = None;
        let mut interrupted: Option<Stopped> = None;
        // After an interruption, rows stop before the first chunk the workers left unfinished, so
        // that what is written is every loop of a prefix of the tasks, in whole chunks.
        let mut closed = false;
        let mut interrupted_at: Option<Instant> = None;
        loop {
            let received = result_receiver.recv_timeout(std::time::Duration::from_millis(100));
            if check_budget(budget, &mut interrupted, window) {
                if let Err(error) = consumer.commit() {
                    failure.get_or_insert(error);
                }
                progress.note(
                    "critbench: stopping: the run's budget is reached; the loops finished so far are committed, no new \
                     loop starts, and the loops in flight finish",
                );
            }
            if check_interrupt(interrupt, &mut interrupted, window) {
                // What is finished becomes durable now, whatever the loops in flight do.
                if let Err(error) = consumer.commit() {
                    failure.get_or_insert(error);
                }
                interrupted_at = Some(Instant::now());
                let signal = match interrupted {
                    Some(Stopped::Signal(signal)) => signal.name(),
                    _ => "a signal",
                };
                progress.note(&format!(
                    "critbench: stopping on {signal}: the loops finished so far are committed; waiting up to {} s for \
                     the loops in flight (a second signal stops at once)",
                    INTERRUPT_GRACE.as_secs()
                ));
            }
            if let (Some(at), Some(Stopped::Signal(signal)), Some(abandon)) =
                (interrupted_at, interrupted, interrupt.and_then(|i| i.abandon))
                && at.elapsed() > INTERRUPT_GRACE
            {
                // A loop stuck in a critic or a model call cannot be cancelled from here: commit
                // what arrived meanwhile and let the caller end the process; the run stays
                // resumable.
                let _ = consumer.commit();
                progress.finish();
                eprintln!(
                    "critbench: loops still in flight after {} s were abandoned; the finished ones are kept: run the \
                     same command with --resume to finish the run",
                    INTERRUPT_GRACE.as_secs()
                );
                abandon(signal);
            }
            let result = match received {
                Ok(result) => result,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            };
            if failure.is_some() || closed {
                window.release();
                continue;
            }
            waiting.insert(result.seq, result);
            while let Some(chunk) = waiting.remove(&next) {
                next += 1;
                let position = chunk.progress;
                if !chunk.complete {
                    // A chunk the workers left unfinished is not written at all: the journal
                    // counts whole chunks, so a resumed run runs all of it again.
                    closed = true;
                    window.release();
                    for _ in waiting.values() {
                        window.release();
                    }
                    waiting.clear();
                    break;
                }
                let accepted = match chunk.ready {
                    Ok(ready) => consumer.accept(ready.expect("a complete chunk is prepared")),
                    Err(panic) => Err(EngineError::Panicked(panic)),
                };
                if let Err(error) = accepted {
                    failure = Some(error);
                    window.stop();
                    waiting.clear();
                    break;
                }
                let (loops, passed) = consumer.counts();
                progress.update(position, loops, passed);
                window.release();
            }
        }
        let mut worker_panic = None;
        for worker in workers {
            if let Err(payload) = worker.join() {
                worker_panic = Some(panic_text(payload));
            }
        }
        let sourced = source_thread.join().unwrap_or_else(|payload| Err(EngineError::Panicked(panic_text(payload))));
        if let Some(error) = failure {
            return Err(error);
        }
        if let Some(panic) = worker_panic {
            return Err(EngineError::Panicked(panic));
        }
        if interrupted.is_some() {
            // Chunks the workers dropped leave gaps after `next`: what was written stands.
            return sourced.map(|report| (report, interrupted));
        }
        if !waiting.is_empty() {
            return Err(EngineError::LostChunk);
        }
        sourced.map(|report| (report, None))
    })
}

/// A recorded chunk as its loop worker hands it to the sink.
struct Recorded<R> {
    seq: u64,
    progress: u64,
    complete: bool,
    /// The consumer's preparation of a complete chunk (an unfinished one is never written), or
    /// the panic that stopped it.
    ready: Result<Option<R>, String>,
}

/// `chunk` prepared by `preparer`, on the loop worker that recorded it.
fn prepared<P: Prepare>(preparer: &P, chunk: crate::run::loops::ChunkResult) -> Recorded<P::Ready> {
    let (seq, progress, complete) = (chunk.seq, chunk.progress, chunk.complete);
    // A panic here must still reach the sink, which waits for every chunk in order.
    let ready = catch_unwind(AssertUnwindSafe(|| complete.then(|| preparer.prepare(chunk)))).map_err(panic_text);
    Recorded { seq, progress, complete, ready }
}

/// Stops the pass at the first sight of a raised interrupt flag; `true` that once. A signal
/// after a budget stop still ends the wait for the loops in flight.
fn check_interrupt(interrupt: Option<&Interrupt>, interrupted: &mut Option<Stopped>, window: &Window) -> bool {
    if !matches!(interrupted, Some(Stopped::Signal(_)))
        && let Some(signal) = interrupt.and_then(Interrupt::signal)
    {
        *interrupted = Some(Stopped::Signal(signal));
        window.stop();
        return true;
    }
    false
}

/// Stops the pass at the first sight of the budget's raised flag; `true` that once.
fn check_budget(budget: Option<&Arc<AtomicBool>>, interrupted: &mut Option<Stopped>, window: &Window) -> bool {
    if interrupted.is_none() && budget.is_some_and(|flag| flag.load(Ordering::SeqCst)) {
        *interrupted = Some(Stopped::Budget);
        window.stop();
        return true;
    }
    false
}

/// How long an interrupted run waits for the loops in flight before it ends without them.
pub(crate) const INTERRUPT_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    fn experiment(arms: &str, epochs: u32, concurrency: u32) -> Experiment {
        crate::experiment::tests::load(&format!(
            "name = \"t\"\ndataset = \"d.jsonl\"\nbackend = \"openai\"\narms = {arms}\nepochs = {epochs}\n\
             [[critics]]\nname = \"r\"\nplugin = \"rubric\"\n\
             [openai]\nbase_url = \"http://127.0.0.1:1/v1\"\nconcurrency = {concurrency}\nmodels = {{ generator = \"m\" }}\n"
        ))
        .unwrap()
    }

    /// A chunk's loops fit whole in the room of each of eight workers: 1,280 loops in flight at
    /// 1,024 are 160 a worker, so eight tasks of two loops; at 64 in flight, 10 a worker, so five.
    #[test]
    fn a_chunk_of_loops_awaiting_a_server_fits_a_workers_room() {
        let tasks = |arms: &str, epochs: u32, concurrency: u32| {
            awaiting_chunk_tasks(&experiment(arms, epochs, concurrency), concurrency)
        };
        assert_eq!(tasks("[\"feedback\", \"no-feedback\"]", 1, 1024), AWAITING_CHUNK_TASKS);
        assert_eq!(tasks("[\"feedback\", \"no-feedback\"]", 1, 64), 5);
        assert_eq!(tasks("[\"feedback\", \"no-feedback\"]", 1, 16), 1);
        assert_eq!(tasks("[\"feedback\", \"no-feedback\"]", 1, 1), 1);
        // Three arms and two epochs: six loops a task, 10 a worker at 64 in flight.
        assert_eq!(tasks("[\"feedback\", \"no-feedback\", \"single\"]", 2, 64), 1);
        assert_eq!(tasks("[\"feedback\", \"no-feedback\", \"single\"]", 2, 1024), 8);
        for concurrency in [1, 7, 64, 100, 1024, 4096] {
            let experiment = experiment("[\"feedback\", \"no-feedback\"]", 1, concurrency);
            let chunk_loops = awaiting_chunk_tasks(&experiment, concurrency) * 2;
            let room = loops_in_flight(concurrency).div_ceil(AWAITING_CHUNK_FITS_WORKERS).max(1);
            assert!(chunk_loops <= room.max(2), "{concurrency}: {chunk_loops} loops a chunk, {room} a worker");
        }
    }
}
