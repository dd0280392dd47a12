//! The loop workers of a run: how many, how many loops each keeps in flight, how many tasks go to
//! a chunk, and what each does with the chunks of a pass ([`pass`], on the one pipeline).
//!
//! When the loops await a model server or a writer program (`Plan::awaits_author`), each worker
//! drives many chunks at once ([`work_together`]), so that `concurrency` requests are in flight on
//! `jobs` threads; so it does when they await a critic of the pipelined form (`Plan::awaits_critics`),
//! [`IN_FLIGHT`] loops a worker. Otherwise a loop blocks its worker while it waits, and there are as
//! many workers as requests in flight ([`Experiment::blocking_jobs`]). What needs no order is done on the workers, so that
//! `--jobs` spreads it: a chunk's tasks are serialized for the critics before its first loop, and
//! once it is recorded the consumer's preparation runs there too.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::experiment::Experiment;
use crate::run::error::RunError;
use crate::run::loops::{ChunkResult, IN_FLIGHT, run_chunk, work_together};
use crate::run::pipeline::{self, Consumer, Intake, Names, Pass, Prepare, Progress, Stopped};
use crate::run::plan::{Plan, Scope};
use crate::run::sequential::Gate;
use crate::run::source::{Source, SourceReport, Sourced};
use crate::stop::Interrupt;

/// What a run's passes call their threads and their work.
const NAMES: Names = Names {
    reader: "critbench-source",
    reader_is: "the dataset reader thread",
    workers: "critbench-loops",
    done: "finished",
    finishes: "the run",
};

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

/// The loop workers of a run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Workers {
    pub(crate) threads: usize,
    /// When the loops await their answers: how many each worker keeps in flight at most, and, when
    /// they await their author, the requests it takes in flight at once (the model server's
    /// `concurrency`, a pipelined writer's `in_flight`).
    awaiting: Option<(usize, Option<u32>)>,
}

impl Workers {
    pub(crate) fn of(experiment: &Experiment, plan: &Plan<'_>) -> Workers {
        let concurrency = match (&experiment.writer, &experiment.openai) {
            _ if !plan.awaits_author() => None,
            (Some(writer), _) => Some(u32::try_from(writer.in_flight).unwrap_or(u32::MAX)),
            (None, Some(openai)) => Some(openai.concurrency()),
            (None, None) => None,
        };
        match concurrency {
            Some(concurrency) => {
                let threads = if experiment.jobs > 0 { experiment.jobs } else { crate::experiment::available_cores() };
                let loops = loops_in_flight(concurrency);
                Workers { threads, awaiting: Some((loops.div_ceil(threads).max(1), Some(concurrency))) }
            }
            None if plan.awaits_critics() => {
                Workers { threads: experiment.blocking_jobs(), awaiting: Some((IN_FLIGHT, None)) }
            }
            None => Workers { threads: experiment.blocking_jobs(), awaiting: None },
        }
    }

    /// Tasks per chunk: loops on a thread each that wait on a model server go a task at a time,
    /// so that every thread has one; long loops go fewer tasks at a time, so that the chunks in
    /// flight stay small.
    pub(crate) fn chunk_tasks(self, experiment: &Experiment) -> usize {
        match (self.awaiting, &experiment.openai) {
            (Some((_, Some(concurrency))), _) => awaiting_chunk_tasks(experiment, concurrency),
            (_, Some(_)) => 1,
            (_, None) => experiment.task_shape().tasks_per_chunk(OFFLINE_CHUNK_TASKS),
        }
    }

    /// Chunks between the source and the sink, at most: every chunk the workers may hold, as
    /// many again finished and waiting for the chunks before them, and a few on their way.
    fn window(self) -> usize {
        match self.awaiting {
            Some((loops, Some(_))) => 2 * self.threads * (loops + 1) + 2,
            // A worker holds up to two chunks of its room's loops: one ending, the next starting.
            Some((_, None)) => 4 * self.threads + 2,
            None => 2 * self.threads + 2,
        }
    }
}

/// Open files a run needs beside its model connections: datasets, part files, plugins' pipes,
/// the response cache.
const OPEN_FILES_BESIDE_CONNECTIONS: u64 = 256;

/// Raises the soft open-file limit to what `concurrency` connections need (toward the hard
/// limit), or says which limit to raise when the hard limit is too low.
pub(crate) fn raise_open_files(concurrency: u32) -> Result<(), RunError> {
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
    let refused = || RunError::OpenFiles {
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

/// One pass over the datasets on the pipeline: the source on its own thread (each chunk waiting
/// at `gate`, a sequential run's, before it is handed on), `workers` recording the loops of
/// `scope`, and `consumer` taking the recorded chunks in source order. `budget` is raised by the
/// model client once a budget is reached.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pass<C>(
    plan: &Plan<'_>,
    source: Source,
    gate: Option<Arc<Gate>>,
    scope: Scope,
    workers: Workers,
    consumer: &mut C,
    progress: &Progress,
    interrupt: Option<&Interrupt>,
    budget: Option<&Arc<AtomicBool>>,
) -> Result<(SourceReport, Option<Stopped>), RunError>
where
    C: Consumer<Error = RunError>,
    C::Prepare: Prepare<Recorded = ChunkResult>,
{
    let driven = Pass {
        workers: workers.threads,
        window: workers.window(),
        first_chunk: source.first_chunk(),
        progress,
        interrupt,
        budget,
        names: &NAMES,
    };
    let read = move |admit: &mut dyn FnMut(Sourced) -> bool, stop: &AtomicBool| {
        source.run(plan, scope, |chunk| gate.as_ref().is_none_or(|gate| gate.wait(chunk.look, stop)) && admit(chunk))
    };
    let work = |intake: &Intake<'_, Sourced>, deliver: &mut dyn FnMut(ChunkResult) -> bool| match workers.awaiting {
        Some((loops_each, _)) => work_together(
            plan,
            scope,
            intake.stop(),
            loops_each,
            |wait| intake.take(wait).map(Sourced::serialize),
            deliver,
        ),
        None => {
            while let Some(chunk) = intake.next() {
                if !deliver(run_chunk(plan, chunk.serialize(), scope, intake.stop())) {
                    break;
                }
            }
        }
    };
    pipeline::drive(&driven, read, work, consumer)
}

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
