//! The parallel runner: every loop of an experiment, streamed to the run directory.

use std::io::IsTerminal;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};
use std::time::{Duration, Instant, SystemTime};

use critbench_core::{Arm, BestDraft, Critique, Decision, FinalDraft, Policy, RoundScore, Task, decide};
use critbench_plugin_host::{CriticInstance, PluginLibrary, SearchPath, critique_with_retry};
use critbench_storage::dataset::{Dataset, read_dataset};
use critbench_storage::tables::{OutcomeRow, OutcomeWriter, TrajectoryRow, TrajectoryWriter};
use rayon::prelude::*;

use crate::backend::{Backend, DraftKey};
use crate::experiment::{CriticSpec, Experiment};
use crate::manifest::{self, LoadedPlugin};
use crate::request::{TaskJson, critique_request};
use crate::{EngineError, clock};

/// How a run reports while it works.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Never draw a progress bar (it is drawn only on a terminal anyway).
    pub quiet: bool,
}

/// What a finished run reports back.
#[derive(Debug)]
pub struct RunSummary {
    pub run_id: String,
    pub out_dir: PathBuf,
    pub loops: u64,
    pub critiques: u64,
    pub passed: u64,
    /// Loops that failed outright (a backend error or a bug); their rows are missing, every
    /// other loop's rows are written.
    pub failed_loops: Vec<String>,
    pub rows_skipped: usize,
    pub elapsed: Duration,
    /// The summaries written into the run directory.
    pub report: Option<critbench_report::Report>,
}

/// Loops a worker runs before handing their rows to the writer.
const BATCH_LOOPS: usize = 32;

/// One loop to run: indices into the run's critics, tasks, arms and policies.
#[derive(Clone, Copy, Debug)]
struct Unit {
    critic: usize,
    task: usize,
    epoch: u32,
    arm: Arm,
    policy: usize,
}

/// One critiqued round, waiting for its loop to finish (to know which draft was best).
struct Round {
    critique: Critique,
    attempts: u32,
    error: Option<String>,
    passed: bool,
    decision: Decision,
    best_score: f64,
    draft_chars: u64,
    draft: Option<String>,
    gen_ms: f64,
    critic_ms: f64,
    tokens_in: Option<u64>,
    tokens_out: Option<u64>,
}

struct LoopResult {
    unit: Unit,
    rounds: Vec<Round>,
    best: BestDraft,
    wall_ms: f64,
}

enum Message {
    Done(LoopResult),
    Failed { unit: Unit, error: String },
}

/// Everything the workers share.
struct Shared<'a> {
    experiment: &'a Experiment,
    tasks: Vec<Task>,
    task_json: Vec<TaskJson>,
    critics: Vec<CriticInstance>,
    backend: Backend,
}

/// Runs the whole experiment and writes the run directory (SPEC §7).
pub fn run_experiment(experiment: &Experiment, options: &RunOptions) -> Result<RunSummary, EngineError> {
    let started = Instant::now();
    let started_at = SystemTime::now();
    let (started_iso, started_compact) = clock::utc_stamps(started_at);
    let run_id = format!("{}-{started_compact}", experiment.name);

    let backend = Backend::new(experiment.backend).map_err(EngineError::Usage)?;
    let datasets = load_datasets(experiment)?;
    check_unique_ids(&datasets)?;
    let per_file = experiment.limit.unwrap_or(usize::MAX);
    let tasks: Vec<Task> = datasets.iter().flat_map(|d| d.tasks.iter().take(per_file).cloned()).collect();
    let search = SearchPath::default_for_current_exe(&experiment.plugin_dirs);
    let base_dir = experiment.path.as_ref().and_then(|p| p.parent());
    let mut plugins = Vec::new();
    let mut critics = Vec::new();
    for spec in &experiment.critics {
        let plugin_error = |source| EngineError::Plugin { critic: spec.name.clone(), source };
        let library = PluginLibrary::resolve(&spec.plugin, &search, base_dir).map_err(plugin_error)?;
        let instance = library.instantiate(&spec.config.to_string()).map_err(plugin_error)?;
        plugins.push(LoadedPlugin { critic: spec.name.clone(), library: Arc::clone(&library) });
        critics.push(instance);
    }

    // Route tasks to critics by kind and check the backend can serve each routed task.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let mut unrouted = 0usize;
    for (task_index, task) in tasks.iter().enumerate() {
        let mut routed = false;
        for (critic_index, spec) in experiment.critics.iter().enumerate() {
            if spec.takes(task.kind.as_deref()) {
                backend.check_task(task).map_err(|e| EngineError::Usage(format!("task `{}`: {e}", task.id)))?;
                pairs.push((critic_index, task_index));
                routed = true;
            }
        }
        unrouted += usize::from(!routed);
    }
    if pairs.is_empty() {
        return Err(EngineError::Usage(format!(
            "no task reaches any critic: the critics take kinds {} but the dataset's tasks have kinds {}",
            describe_kinds(&experiment.critics),
            describe_task_kinds(&tasks)
        )));
    }
    if unrouted > 0 {
        eprintln!("warning: {unrouted} task(s) match no critic's `kinds` and are not run (counted in manifest.json)");
    }

    std::fs::create_dir_all(&experiment.out).map_err(|source| EngineError::Io {
        context: format!("cannot create the run directory {}", experiment.out.display()),
        source,
    })?;
    let mut trajectories = TrajectoryWriter::create(&experiment.out.join("trajectories.parquet"))?;
    let mut outcomes = OutcomeWriter::create(&experiment.out.join("outcomes.parquet"))?;

    let arms = &experiment.arms;
    let per_pair = experiment.epochs as usize * arms.len() * experiment.policies.len();
    let total = pairs.len() * per_pair;
    // Tasks vary fastest, so the progress bar's pass rate is a fair sample from the start.
    let unit_at = |index: usize| -> Unit {
        let (critic, task) = pairs[index % pairs.len()];
        let rest = index / pairs.len();
        let per_epoch = arms.len() * experiment.policies.len();
        Unit {
            critic,
            task,
            epoch: (rest / per_epoch) as u32,
            arm: arms[rest % per_epoch / experiment.policies.len()],
            policy: rest % experiment.policies.len(),
        }
    };

    let shared = Shared { experiment, task_json: tasks.iter().map(TaskJson::new).collect(), tasks, critics, backend };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(experiment.jobs)
        .build()
        .map_err(|e| EngineError::Internal(format!("cannot start worker threads: {e}")))?;
    let progress = progress_bar(total as u64, options.quiet);
    let (sender, receiver) = sync_channel::<Vec<Message>>(64);

    let written = std::thread::scope(|scope| {
        let writer =
            scope.spawn(|| write_results(&shared, &run_id, receiver, &mut trajectories, &mut outcomes, &progress));
        pool.install(|| {
            // Loops travel to the writer in batches: one channel hand-off per batch rather than
            // per loop keeps the workers from waking the writer thousands of times a second.
            let batches = total.div_ceil(BATCH_LOOPS);
            (0..batches).into_par_iter().for_each_with(sender, |sender, batch| {
                let end = ((batch + 1) * BATCH_LOOPS).min(total);
                let messages: Vec<Message> = (batch * BATCH_LOOPS..end)
                    .map(|index| {
                        let unit = unit_at(index);
                        match catch_unwind(AssertUnwindSafe(|| run_loop(&shared, unit))) {
                            Ok(Ok(result)) => Message::Done(result),
                            Ok(Err(error)) => Message::Failed { unit, error },
                            Err(payload) => Message::Failed { unit, error: panic_text(payload) },
                        }
                    })
                    .collect();
                // The writer only stops early on a storage error, which is reported below.
                let _ = sender.send(messages);
            });
        });
        writer.join().unwrap_or_else(|payload| Err(EngineError::Internal(panic_text(payload))))
    })?;
    progress.finish_and_clear();
    trajectories.close()?;
    outcomes.close()?;

    let (finished_iso, _) = clock::utc_stamps(SystemTime::now());
    let rows_skipped: usize = datasets.iter().map(|d| d.skipped.len()).sum();
    let mut summary = RunSummary {
        run_id: run_id.clone(),
        out_dir: experiment.out.clone(),
        loops: written.loops,
        critiques: written.critiques,
        passed: written.passed,
        failed_loops: written.failed,
        rows_skipped,
        elapsed: started.elapsed(),
        report: None,
    };
    manifest::write(&manifest::ManifestInput {
        experiment,
        run_id: &run_id,
        datasets: &datasets,
        plugins: &plugins,
        started_at: &started_iso,
        finished_at: &finished_iso,
        summary: &summary,
        tasks_run: shared.tasks.len(),
        tasks_unrouted: unrouted,
        jobs: pool.current_num_threads(),
    })?;
    summary.report = Some(critbench_report::write_reports(&experiment.out)?);
    Ok(summary)
}

fn load_datasets(experiment: &Experiment) -> Result<Vec<Dataset>, EngineError> {
    let mut datasets = Vec::new();
    for path in &experiment.datasets {
        let dataset = read_dataset(path, experiment.on_bad_row)?;
        if !dataset.skipped.is_empty() {
            eprintln!("warning: skipped {} bad row(s) in {}", dataset.skipped.len(), path.display());
        }
        datasets.push(dataset);
    }
    Ok(datasets)
}

fn check_unique_ids(datasets: &[Dataset]) -> Result<(), EngineError> {
    let mut seen = std::collections::HashMap::new();
    for dataset in datasets {
        for task in &dataset.tasks {
            if let Some(first) = seen.insert(task.id.as_str(), &dataset.path)
                && first != &dataset.path
            {
                return Err(EngineError::Usage(format!(
                    "{}: field `id`: duplicate id `{}` (also in {}); ids must be unique across datasets",
                    dataset.path.display(),
                    task.id,
                    first.display()
                )));
            }
        }
    }
    Ok(())
}

fn describe_kinds(critics: &[CriticSpec]) -> String {
    let kinds: Vec<String> = critics
        .iter()
        .map(|c| c.kinds.as_ref().map(|k| format!("[{}]", k.join(", "))).unwrap_or_else(|| "(any)".into()))
        .collect();
    kinds.join(" / ")
}

fn describe_task_kinds(tasks: &[Task]) -> String {
    let kinds: std::collections::BTreeSet<&str> = tasks.iter().map(|t| t.kind.as_deref().unwrap_or("(none)")).collect();
    format!("[{}]", kinds.into_iter().collect::<Vec<_>>().join(", "))
}

fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    let detail = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("internal error (please report): {detail}")
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// Runs one loop: generate, then critique → decide → revise until the policy stops it.
fn run_loop(shared: &Shared<'_>, unit: Unit) -> Result<LoopResult, String> {
    let started = Instant::now();
    let experiment = shared.experiment;
    let task = &shared.tasks[unit.task];
    let critic = &shared.critics[unit.critic];
    let weights = experiment.critics[unit.critic].weights.as_ref();
    let grid_policy = &experiment.policies[unit.policy];
    let single = Policy { max_revisions: 0, ..grid_policy.clone() };
    let policy = if unit.arm == Arm::Single { &single } else { grid_policy };
    let key = |round: u32| DraftKey { seed: experiment.seed, task_id: &task.id, epoch: unit.epoch, round };

    let generated = Instant::now();
    let mut draft = shared.backend.generate(task, &key(0))?;
    let mut gen_ms = ms(generated);
    let mut scores: Vec<RoundScore> = Vec::with_capacity(policy.max_revisions as usize + 1);
    let mut rounds: Vec<Round> = Vec::with_capacity(policy.max_revisions as usize + 1);
    let mut best: Option<BestDraft> = None;
    loop {
        let round = rounds.len() as u32;
        let critiqued = Instant::now();
        let request = critique_request(&shared.task_json[unit.task], &draft.text, round);
        let call = critique_with_retry(critic, &request, weights, experiment.critic_attempts);
        let critic_ms = ms(critiqued);
        let score = RoundScore {
            score: call.critique.score,
            fatal: !call.critique.fatal_issues.is_empty(),
            failed: call.failed(),
            min_dimension: call.critique.min_dimension(),
        };
        scores.push(score);
        match &mut best {
            None => best = Some(BestDraft::first(&score)),
            Some(best) => {
                best.observe(round as usize, &score);
            }
        }
        let decision = decide(&scores, policy);
        let draft_text = std::mem::take(&mut draft.text);
        let draft_chars = draft_text.chars().count() as u64;
        let next = if decision == Decision::Revise {
            let revised = Instant::now();
            let shown = unit.arm.shows_critique().then_some(&call.critique);
            let next = shared.backend.revise(task, &draft_text, shown, &key(round + 1))?;
            Some((next, ms(revised)))
        } else {
            None
        };
        rounds.push(Round {
            passed: score.meets_pass_rule(policy),
            best_score: best.map(|b| b.score).unwrap_or(score.score),
            critique: call.critique,
            attempts: call.attempts,
            error: call.error,
            decision,
            draft_chars,
            draft: experiment.store_drafts.then_some(draft_text),
            gen_ms,
            critic_ms,
            tokens_in: draft.tokens_in,
            tokens_out: draft.tokens_out,
        });
        match next {
            Some((next, next_ms)) => {
                draft = next;
                gen_ms = next_ms;
            }
            None => break,
        }
    }
    Ok(LoopResult { unit, rounds, best: best.expect("a loop has at least one round"), wall_ms: ms(started) })
}

struct Written {
    loops: u64,
    critiques: u64,
    passed: u64,
    failed: Vec<String>,
}

fn sum_tokens(values: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    values.fold(None, |total, value| match (total, value) {
        (None, v) => v,
        (Some(t), Some(v)) => Some(t + v),
        (t, None) => t,
    })
}

/// The single consumer: writes every finished loop's rows and keeps the progress bar.
fn write_results(
    shared: &Shared<'_>,
    run_id: &str,
    receiver: Receiver<Vec<Message>>,
    trajectories: &mut TrajectoryWriter,
    outcomes: &mut OutcomeWriter,
    progress: &indicatif::ProgressBar,
) -> Result<Written, EngineError> {
    let experiment = shared.experiment;
    let config_ids: Vec<String> = experiment.policies.iter().map(Policy::config_id).collect();
    let mut written = Written { loops: 0, critiques: 0, passed: 0, failed: Vec::new() };
    for message in receiver.into_iter().flatten() {
        let result = match message {
            Message::Done(result) => result,
            Message::Failed { unit, error } => {
                let task = &shared.tasks[unit.task];
                let failure = format!(
                    "task `{}` × {} × {} × epoch {} × {}: {error}",
                    task.id, config_ids[unit.policy], unit.arm, unit.epoch, experiment.critics[unit.critic].name
                );
                eprintln!("error: {failure}");
                written.failed.push(failure);
                progress.inc(1);
                continue;
            }
        };
        let unit = result.unit;
        let task = &shared.tasks[unit.task];
        let critic = &experiment.critics[unit.critic].name;
        let config_id = &config_ids[unit.policy];
        let grid_policy = &experiment.policies[unit.policy];
        let max_revisions = if unit.arm == Arm::Single { 0 } else { grid_policy.max_revisions };
        let last_index = result.rounds.len() - 1;
        for (index, round) in result.rounds.iter().enumerate() {
            let suggestions = (!round.critique.suggestions.is_empty())
                .then(|| serde_json::to_string(&round.critique.suggestions).expect("suggestions serialize"));
            let exit_reason = round.decision.exit_reason().map(|r| r.as_str());
            trajectories.push(&TrajectoryRow {
                run_id,
                config_id,
                arm: unit.arm.as_str(),
                critic,
                task_id: &task.id,
                kind: task.kind.as_deref(),
                epoch: unit.epoch,
                round: index as u32,
                revisions: index as u32,
                score: round.critique.score,
                dims: &round.critique.dimensions,
                issues: &round.critique.issues,
                fatal_issues: &round.critique.fatal_issues,
                suggestions: suggestions.as_deref(),
                rationale: round.critique.rationale.as_deref(),
                critic_passed: round.critique.critic_passed,
                passed: round.passed,
                decision: round.decision.as_str(),
                exit_reason,
                is_best: index == result.best.round,
                best_score: round.best_score,
                draft_chars: round.draft_chars,
                draft: round.draft.as_deref(),
                gen_ms: round.gen_ms,
                critic_ms: round.critic_ms,
                critic_attempts: round.attempts,
                critic_error: round.error.as_deref(),
                tokens_in: round.tokens_in,
                tokens_out: round.tokens_out,
            })?;
        }
        let last = &result.rounds[last_index];
        let exit = last.decision.exit_reason().expect("the last round of a loop stops it");
        let final_round = match grid_policy.final_draft {
            FinalDraft::Best => result.best.round,
            FinalDraft::Last => last_index,
        };
        let passed = exit == critbench_core::ExitReason::Pass;
        outcomes.push(OutcomeRow {
            run_id: run_id.to_string(),
            config_id: config_id.clone(),
            arm: unit.arm.as_str().to_string(),
            critic: critic.clone(),
            task_id: task.id.clone(),
            kind: task.kind.clone(),
            epoch: unit.epoch,
            pass_score: grid_policy.pass_score,
            max_revisions,
            stall: grid_policy.stall,
            plateau_eps: grid_policy.plateau_eps,
            dim_target: grid_policy.dim_target,
            final_draft: grid_policy.final_draft.as_str().to_string(),
            rounds: result.rounds.len() as u32,
            revisions: last_index as u32,
            exit_reason: exit.as_str().to_string(),
            passed,
            first_score: result.rounds[0].critique.score,
            last_score: last.critique.score,
            final_score: result.rounds[final_round].critique.score,
            best_score: result.best.score,
            best_round: result.best.round as u32,
            critic_errors: result.rounds.iter().filter(|r| r.error.is_some()).count() as u32,
            tokens_in: sum_tokens(result.rounds.iter().map(|r| r.tokens_in)),
            tokens_out: sum_tokens(result.rounds.iter().map(|r| r.tokens_out)),
            wall_ms: result.wall_ms,
            meta: task.meta.as_ref().map(|m| m.to_string()),
        })?;
        written.loops += 1;
        written.critiques += result.rounds.len() as u64;
        written.passed += u64::from(passed);
        progress.inc(1);
        if written.loops.is_multiple_of(64) {
            progress.set_message(format!("pass rate {:.1}%", 100.0 * written.passed as f64 / written.loops as f64));
        }
    }
    Ok(written)
}

fn progress_bar(total: u64, quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} loops · {rate} · {msg} · ETA {eta}")
            .expect("the template is valid")
            .with_key("rate", |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{:.0} loops/s", state.per_sec());
            }),
    );
    bar.set_message("pass rate –");
    bar
}
