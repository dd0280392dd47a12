//! The parallel runner: every loop of an experiment, streamed to the run directory.

use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};
use std::time::{Duration, Instant, SystemTime};

use critbench_core::{Arm, Decision, Policy, RoundScore, Task, decide};
use critbench_plugin_host::{CriticInstance, SearchPath, critique_with_retry, open_critic};
use critbench_storage::dataset::{Dataset, read_dataset};
use critbench_storage::recorded::RecordedRound;
use critbench_storage::tables::{OutcomeWriter, TrajectoryWriter};
use rayon::prelude::*;

use crate::EngineError;
use crate::backend::{DraftKey, Hint, Writer, writer_for};
use crate::emit::{LoopLabels, effective_policy, emit_loop};
use crate::experiment::{BackendKind, CriticSpec, Experiment, Sweep};
use crate::manifest::{self, LoadedPlugin};
use crate::memory::{Namespace, Split, fixed_types, freeze, split_of};
use crate::openai_writer::{OpenAiSession, OpenAiWriter};
use critbench_plugin_host::request::{TaskJson, critique_request};
use critbench_plugin_host::services::{CallScope, with_scope};
use critbench_storage::clock;

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
    /// How the policy grid was run.
    pub sweep: Sweep,
    /// Rounds actually generated and critiqued; `critiques` counts the rounds in the outputs,
    /// which a replayed sweep serves from fewer recorded rounds.
    pub recorded_rounds: u64,
    pub elapsed: Duration,
    /// The summaries written into the run directory.
    pub report: Option<critbench_report::Report>,
    /// What the model client did (calls, cache hits, tokens, the concurrency limit), when the
    /// experiment has an `[openai]` table; the same as `openai` in `manifest.json`.
    pub openai: Option<serde_json::Value>,
}

/// Loops a worker runs before handing their rows to the writer.
const BATCH_LOOPS: usize = 32;

/// One loop to record: indices into the run's critics, tasks and arms, and the policies it must
/// serve — one config (a direct sweep) or every config of the grid (a replayed sweep).
#[derive(Clone, Copy, Debug)]
struct Unit {
    critic: usize,
    task: usize,
    epoch: u32,
    arm: Arm,
    /// `Some(config)` for a direct sweep, `None` for every config.
    policy: Option<usize>,
}

impl Unit {
    fn policies(&self, count: usize) -> std::ops::Range<usize> {
        match self.policy {
            Some(index) => index..index + 1,
            None => 0..count,
        }
    }
}

/// A recorded loop: every round until each of the unit's policies has stopped.
struct LoopResult {
    unit: Unit,
    rounds: Vec<RecordedRound>,
    scores: Vec<RoundScore>,
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
    writer: &'a dyn Writer,
    /// Strategy hints per (critic, task kind), for the `feedback+memory` arm.
    hints: HashMap<(usize, Option<String>), Vec<Hint>>,
}

/// Runs the whole experiment with the writer its `backend` names and writes the run directory
/// (SPEC §7).
pub fn run_experiment(experiment: &Experiment, options: &RunOptions) -> Result<RunSummary, EngineError> {
    let session = start_session(experiment)?;
    match (experiment.backend, &session) {
        (BackendKind::Openai, Some(session)) => {
            let writer = OpenAiWriter::new(Arc::clone(&session.client), experiment.prompts.clone());
            run_inner(experiment, &writer, Some(session), options)
        }
        (kind, _) => {
            let writer = writer_for(kind).map_err(EngineError::Usage)?;
            run_inner(experiment, writer.as_ref(), session.as_ref(), options)
        }
    }
}

/// Runs the whole experiment with `writer` as the model side and writes the run directory. An
/// `[openai]` table still serves plugins (the `llm-judge` critic) through the `chat` service.
pub fn run_experiment_with(
    experiment: &Experiment,
    writer: &dyn Writer,
    options: &RunOptions,
) -> Result<RunSummary, EngineError> {
    let session = start_session(experiment)?;
    run_inner(experiment, writer, session.as_ref(), options)
}

/// The model client of an experiment with an `[openai]` table, offered to plugins as `chat`.
/// Started before any plugin is created, withdrawn when dropped.
fn start_session(experiment: &Experiment) -> Result<Option<OpenAiSession>, EngineError> {
    let Some(settings) = &experiment.openai else { return Ok(None) };
    OpenAiSession::start(settings).map(Some).map_err(|error| match error {
        critbench_openai::ClientError::Http(message) => {
            EngineError::Internal(format!("cannot start the model client: {message}"))
        }
        usage => EngineError::Usage(usage.to_string()),
    })
}

fn run_inner(
    experiment: &Experiment,
    writer: &dyn Writer,
    session: Option<&OpenAiSession>,
    options: &RunOptions,
) -> Result<RunSummary, EngineError> {
    let started = Instant::now();
    let started_at = SystemTime::now();
    let (started_iso, started_compact) = clock::utc_stamps(started_at);
    let run_id = format!("{}-{started_compact}", experiment.name);

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
        let isolation = spec.isolation(experiment.jobs);
        let instance = open_critic(&spec.source(), &spec.config.to_string(), &search, base_dir, &isolation)
            .map_err(plugin_error)?;
        spec.check_pass_scores(instance.info().range, &experiment.policies).map_err(EngineError::Usage)?;
        plugins.push(LoadedPlugin { critic: spec.name.clone(), library: Arc::clone(instance.info()) });
        critics.push(instance);
    }

    // Route tasks to critics by kind and check the backend can serve each routed task.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let mut unrouted = 0usize;
    for (task_index, task) in tasks.iter().enumerate() {
        let mut routed = false;
        for (critic_index, spec) in experiment.critics.iter().enumerate() {
            if spec.takes(task.kind.as_deref()) {
                writer.check_task(task).map_err(|e| EngineError::Usage(format!("task `{}`: {e}", task.id)))?;
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
    let mut shared = Shared {
        experiment,
        task_json: tasks.iter().map(TaskJson::new).collect(),
        tasks,
        critics,
        writer,
        hints: HashMap::new(),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(experiment.jobs)
        .build()
        .map_err(|e| EngineError::Internal(format!("cannot start worker threads: {e}")))?;
    // The memory arm learns first, on its learning tasks; every arm then runs on the rest.
    let memory = if experiment.arms.contains(&Arm::FeedbackMemory) {
        Some(learn(&mut shared, &mut pairs, &plugins, &pool)?)
    } else {
        None
    };
    let mut trajectories = TrajectoryWriter::create(&experiment.out.join("trajectories.parquet"))?;
    let mut outcomes = OutcomeWriter::create(&experiment.out.join("outcomes.parquet"))?;

    let arms = &experiment.arms;
    let replay = experiment.sweep == Sweep::Replay && experiment.policies.len() > 1;
    if replay && let Some(plugin) = plugins.iter().find(|p| p.library.policy_dependent) {
        return Err(EngineError::Usage(format!(
            "critic `{}` ({}) says its critiques depend on the loop policy, so one recording cannot serve \
             every config; set sweep = \"direct\" in the experiment",
            plugin.critic, plugin.library.name
        )));
    }
    let configs_per_unit = if replay { 1 } else { experiment.policies.len() };
    let per_pair = experiment.epochs as usize * arms.len() * configs_per_unit;
    let total = pairs.len() * per_pair;
    let total_loops = pairs.len() * experiment.epochs as usize * arms.len() * experiment.policies.len();
    // Tasks vary fastest, so the progress bar's pass rate is a fair sample from the start.
    let unit_at = |index: usize| -> Unit {
        let (critic, task) = pairs[index % pairs.len()];
        let rest = index / pairs.len();
        let per_epoch = arms.len() * configs_per_unit;
        Unit {
            critic,
            task,
            epoch: (rest / per_epoch) as u32,
            arm: arms[rest % per_epoch / configs_per_unit],
            policy: (!replay).then_some(rest % configs_per_unit),
        }
    };

    let progress = progress_bar(total_loops as u64, options.quiet);
    let (sender, receiver) = sync_channel::<Vec<Message>>(64);

    let written = std::thread::scope(|scope| {
        let writer =
            scope.spawn(|| write_results(&shared, &run_id, receiver, &mut trajectories, &mut outcomes, &progress));
        pool.install(|| {
            // Loops travel to the writer in batches: one channel hand-off per batch rather than
            // per loop keeps the workers from waking the writer thousands of times a second.
            // Loops that wait on a model server go one by one, so that every worker has one.
            let batch_loops = if experiment.openai.is_some() { 1 } else { BATCH_LOOPS };
            let batches = total.div_ceil(batch_loops);
            (0..batches).into_par_iter().for_each_with(sender, |sender, batch| {
                let end = ((batch + 1) * batch_loops).min(total);
                let messages: Vec<Message> = (batch * batch_loops..end)
                    .map(|index| {
                        let unit = unit_at(index);
                        match catch_unwind(AssertUnwindSafe(|| record_loop(&shared, unit))) {
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
        sweep: if replay { Sweep::Replay } else { Sweep::Direct },
        recorded_rounds: written.recorded_rounds,
        elapsed: started.elapsed(),
        report: None,
        openai: session.map(|s| s.client.report()),
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
        memory: memory.as_ref(),
        tasks_unrouted: unrouted,
        jobs: pool.current_num_threads(),
        openai: summary.openai.as_ref(),
    })?;
    summary.report = Some(critbench_report::write_reports(&experiment.out)?);
    Ok(summary)
}

/// The learning phase of strategy memory: runs the feedback loop (first config, epoch 0) on the
/// learning tasks, counts the issue types each loop that passed after revision had fixed,
/// freezes them into hints per critic and task kind, writes `memory.json`, and leaves only the
/// evaluation tasks in `pairs`. Returns what the manifest records.
fn learn(
    shared: &mut Shared<'_>,
    pairs: &mut Vec<(usize, usize)>,
    plugins: &[LoadedPlugin],
    pool: &rayon::ThreadPool,
) -> Result<serde_json::Value, EngineError> {
    let experiment = shared.experiment;
    let (mut learning, mut evaluation) = (Vec::new(), Vec::new());
    for &(critic, task) in pairs.iter() {
        match split_of(&shared.tasks[task], experiment.seed, experiment.memory.learn_fraction)
            .map_err(EngineError::Usage)?
        {
            Split::Learn => learning.push((critic, task)),
            Split::Eval => evaluation.push((critic, task)),
        }
    }
    if evaluation.is_empty() {
        return Err(EngineError::Usage(
            "the memory split left no evaluation tasks; lower [memory] learn_fraction or mark some tasks meta.split = \"eval\"".into(),
        ));
    }
    let policy = effective_policy(&experiment.policies[0], Arm::Feedback);
    let view: &Shared<'_> = shared;
    // Each learning loop's (critic, task) and the issue types it fixed.
    type Learned = Result<((usize, usize), Vec<String>), String>;
    let learned: Vec<Learned> = pool.install(|| {
        learning
            .par_iter()
            .map(|&(critic, task)| {
                let unit = Unit { critic, task, epoch: 0, arm: Arm::Feedback, policy: Some(0) };
                let result =
                    catch_unwind(AssertUnwindSafe(|| record_loop(view, unit))).map_err(panic_text).and_then(|r| r)?;
                let (stop, exit) = critbench_core::stop_point(&result.scores, &policy)
                    .ok_or_else(|| "the learning loop ended before its policy stopped".to_string())?;
                let passed = exit == critbench_core::ExitReason::Pass;
                Ok(((critic, task), fixed_types(&result.rounds, &result.scores, stop, passed)))
            })
            .collect()
    });
    let mut namespaces: BTreeMap<(usize, Option<String>), Namespace> = BTreeMap::new();
    let mut failures = Vec::new();
    for outcome in learned {
        let ((critic, task), fixed) = match outcome {
            Ok(learned) => learned,
            Err(error) => {
                failures.push(error);
                continue;
            }
        };
        let task = &view.tasks[task];
        let namespace = namespaces.entry((critic, task.kind.clone())).or_insert_with(|| Namespace {
            critic: experiment.critics[critic].name.clone(),
            plugin: plugins[critic].library.name.clone(),
            plugin_version: plugins[critic].library.version.clone(),
            kind: task.kind.clone(),
            ..Namespace::default()
        });
        if !fixed.is_empty() {
            namespace.learned_from.push(task.id.clone());
        }
        for issue_type in fixed {
            *namespace.fixed.entry(issue_type).or_default() += 1;
        }
    }
    if !failures.is_empty() {
        return Err(EngineError::Internal(format!(
            "{} learning loop(s) failed; first: {}",
            failures.len(),
            failures[0]
        )));
    }
    for namespace in namespaces.values_mut() {
        namespace.learned_from.sort();
        freeze(namespace, &experiment.memory);
    }
    let memory = serde_json::json!({
        "memory_version": 1,
        "learned_under": experiment.policies[0].config_id(),
        "learning_tasks": learning.len(),
        "evaluation_tasks": evaluation.len(),
        "namespaces": namespaces.values().collect::<Vec<_>>(),
    });
    let path = experiment.out.join("memory.json");
    std::fs::write(&path, serde_json::to_string_pretty(&memory).expect("memory serializes") + "\n")
        .map_err(|source| EngineError::Io { context: format!("cannot write {}", path.display()), source })?;
    shared.hints = namespaces.into_iter().map(|(key, namespace)| (key, namespace.hints)).collect();
    *pairs = evaluation;
    Ok(serde_json::json!({
        "file": "memory.json",
        "learning_tasks": learning.len(),
        "evaluation_tasks": pairs.len(),
        "learned_under": experiment.policies[0].config_id(),
    }))
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

/// Records one loop: generate, then critique → revise until every policy the unit serves has
/// stopped. The writer never sees the policy, so the recording is the same for all of them.
fn record_loop(shared: &Shared<'_>, unit: Unit) -> Result<LoopResult, String> {
    let experiment = shared.experiment;
    let task = &shared.tasks[unit.task];
    let critic = &shared.critics[unit.critic];
    let weights = experiment.critics[unit.critic].weights.as_ref();
    let policies: Vec<Policy> = unit
        .policies(experiment.policies.len())
        .map(|index| effective_policy(&experiment.policies[index], unit.arm))
        .collect();
    let longest = policies.iter().map(|p| p.max_revisions).max().unwrap_or(0) as usize + 1;
    let key = |round: u32| DraftKey { seed: experiment.seed, task_id: &task.id, epoch: unit.epoch, round };

    let generated = Instant::now();
    let hints: &[Hint] = if unit.arm.uses_memory() {
        shared.hints.get(&(unit.critic, task.kind.clone())).map(Vec::as_slice).unwrap_or(&[])
    } else {
        &[]
    };
    let mut draft = shared.writer.generate(task, hints, &key(0))?;
    let mut gen_ms = ms(generated);
    let mut running = vec![true; policies.len()];
    let mut scores: Vec<RoundScore> = Vec::with_capacity(longest);
    let mut rounds: Vec<RecordedRound> = Vec::with_capacity(longest);
    loop {
        let round = rounds.len() as u32;
        let critiqued = Instant::now();
        let request = critique_request(&shared.task_json[unit.task], &draft.text, round);
        // Host services (the judge model's cache) key their answers by this critique's identity.
        let scope = CallScope::new(&task.id, unit.epoch, round);
        let (call, scope) =
            with_scope(scope, || critique_with_retry(critic, &request, weights, experiment.critic_attempts));
        let critic_ms = ms(critiqued);
        let failed = call.failed();
        let critique = call.critique;
        let score = RoundScore {
            score: critique.score,
            fatal: !critique.fatal_issues.is_empty(),
            failed,
            min_dimension: critique.min_dimension(),
        };
        scores.push(score);
        for (policy, running) in policies.iter().zip(running.iter_mut()) {
            if *running && decide(&scores, policy) != Decision::Revise {
                *running = false;
            }
        }
        let draft_text = std::mem::take(&mut draft.text);
        let next = if running.contains(&true) {
            let revised = Instant::now();
            let shown = unit.arm.shows_critique().then_some(&critique);
            let next = shared.writer.revise(task, &draft_text, shown, &key(round + 1))?;
            Some((next, ms(revised)))
        } else {
            None
        };
        rounds.push(RecordedRound {
            score: critique.score,
            suggestions: critique.suggestions_json(),
            dims: critique.dimensions,
            issues: critique.issues,
            fatal_issues: critique.fatal_issues,
            issue_types: critique.issue_types,
            rationale: critique.rationale,
            critic_passed: critique.critic_passed,
            critic_attempts: call.attempts,
            critic_error: call.error,
            draft_chars: draft_text.chars().count() as u64,
            draft: experiment.store_drafts.then_some(draft_text),
            gen_ms,
            critic_ms,
            tokens_in: draft.tokens_in,
            tokens_out: draft.tokens_out,
            critic_tokens_in: scope.tokens_in,
            critic_tokens_out: scope.tokens_out,
        });
        match next {
            Some((next, next_ms)) => {
                draft = next;
                gen_ms = next_ms;
            }
            None => break,
        }
    }
    Ok(LoopResult { unit, rounds, scores })
}

struct Written {
    loops: u64,
    critiques: u64,
    passed: u64,
    /// Rounds actually recorded: one generator call and one critique each.
    recorded_rounds: u64,
    failed: Vec<String>,
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
    let metas: Vec<Option<String>> = shared.tasks.iter().map(|t| t.meta.as_ref().map(|m| m.to_string())).collect();
    let mut written = Written { loops: 0, critiques: 0, passed: 0, recorded_rounds: 0, failed: Vec::new() };
    for message in receiver.into_iter().flatten() {
        let result = match message {
            Message::Done(result) => result,
            Message::Failed { unit, error } => {
                let task = &shared.tasks[unit.task];
                let configs: Vec<&str> =
                    unit.policies(config_ids.len()).map(|index| config_ids[index].as_str()).collect();
                let failure = format!(
                    "task `{}` × {} × {} × epoch {} × {}: {error}",
                    task.id,
                    configs.join(","),
                    unit.arm,
                    unit.epoch,
                    experiment.critics[unit.critic].name
                );
                eprintln!("error: {failure}");
                written.failed.push(failure);
                progress.inc(configs.len() as u64);
                continue;
            }
        };
        let unit = result.unit;
        let task = &shared.tasks[unit.task];
        let labels = LoopLabels {
            run_id,
            critic: &experiment.critics[unit.critic].name,
            arm: unit.arm,
            task_id: &task.id,
            kind: task.kind.as_deref(),
            epoch: unit.epoch,
            meta: metas[unit.task].clone(),
        };
        written.recorded_rounds += result.rounds.len() as u64;
        for index in unit.policies(config_ids.len()) {
            let emitted = emit_loop(
                &labels,
                &result.rounds,
                &result.scores,
                &experiment.policies[index],
                &config_ids[index],
                trajectories,
                outcomes,
            )?;
            let (passed, rounds) = emitted.ok_or_else(|| {
                EngineError::Internal(format!(
                    "the recording of task `{}` ended before config {} stopped",
                    task.id, config_ids[index]
                ))
            })?;
            written.loops += 1;
            written.critiques += rounds as u64;
            written.passed += u64::from(passed);
            progress.inc(1);
        }
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
