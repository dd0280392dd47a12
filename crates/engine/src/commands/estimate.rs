//! `critbench estimate`: know before you pay. A seeded sample of the experiment's tasks (the
//! pilot) runs as a run of its own — through the response cache the real run reads, so the
//! pilot's calls are not paid for twice, and into a scratch run directory claimed like any other
//! (never the experiment's `out`) — and the whole run is projected from it: loops, critiques and
//! recorded rounds, and for a model backend each role's model calls, tokens and cost, and the wall
//! time at the configured concurrency, each with a 95% range.
//!
//! The projection treats the tasks as a sample without replacement from the run's tasks: a total
//! is N × the pilot's mean per task, its range Student's t interval with the finite-population
//! correction, never below what the pilot's own tasks already count (they are part of the run).
//! With every task in the pilot the projection is exact.

use std::collections::{BTreeMap, BinaryHeap};
use std::path::{Path, PathBuf};

use critbench_core::Task;
use critbench_storage::dataset::{DatasetStream, OnBadRow};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use super::error::EstimateError;
use crate::EngineError;
use crate::experiment::{BackendKind, Experiment};
use crate::run::{RunOptions, run_experiment};
use critbench_storage::shards::{OUTCOMES, TRAJECTORIES, table_file};

/// The format version of `estimate.json`.
pub const ESTIMATE_VERSION: u32 = 1;

/// The file a pilot's directory holds beside its run.
pub use crate::run_dir::layout::ESTIMATE_FILE;

/// Tasks in a pilot unless `--pilot` says otherwise.
pub const DEFAULT_PILOT_TASKS: usize = 10;

/// The confidence of every range.
pub const CONFIDENCE: f64 = 0.95;

/// Where `critbench estimate` writes its pilot unless told: beside the run, `OUT-estimate`; and
/// where `critbench run` looks for an estimate to check its budget against.
pub fn default_dir(experiment: &Experiment) -> PathBuf {
    let mut name = experiment.out.file_name().map(|n| n.to_os_string()).unwrap_or_else(|| "run".into());
    name.push("-estimate");
    experiment.out.with_file_name(name)
}

/// How to run the pilot.
#[derive(Clone, Debug, Default)]
pub struct EstimateOptions {
    /// Tasks the pilot runs.
    pub pilot: usize,
    /// Where `estimate.json` is written.
    pub out: PathBuf,
    /// Replace an estimate already there.
    pub overwrite: bool,
    /// Print no progress.
    pub quiet: bool,
    /// The caller's signal handling, passed to the pilot run.
    pub interrupt: Option<crate::stop::Interrupt>,
}

/// One projected total: the pilot's mean per task times the run's tasks, with its range.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    /// The projection itself.
    pub point: f64,
    /// The low end of its range.
    pub lo: f64,
    /// The high end of its range.
    pub hi: f64,
    /// What the pilot's own tasks counted.
    pub pilot: f64,
}

impl Projection {
    /// Whether `actual` is within the range.
    pub fn brackets(&self, actual: f64) -> bool {
        self.lo - 1e-9 * self.lo.abs().max(1.0) <= actual && actual <= self.hi + 1e-9 * self.hi.abs().max(1.0)
    }
}

/// One role's projected model calls (the distinct requests a run with an empty cache sends),
/// tokens and cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoleProjection {
    /// The role's model.
    pub model: String,
    /// Distinct requests.
    pub model_calls: Projection,
    /// Prompt tokens.
    pub tokens_in: Projection,
    /// Completion tokens.
    pub tokens_out: Projection,
    /// `None` when the role's model has no price.
    pub cost: Option<Projection>,
}

/// The estimate, as `estimate.json` holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The version of this file's shape.
    pub estimate_version: u32,
    /// The experiment's name.
    pub experiment: String,
    /// The SHA-256 of the resolved experiment (without `jobs`, `out` and `budget`) and its
    /// datasets' sizes: `critbench run` trusts an estimate of this very experiment only.
    pub fingerprint: String,
    /// The experiment's backend.
    pub backend: String,
    /// The tasks the whole run would run.
    pub tasks: u64,
    /// The pilot's tasks.
    pub pilot_tasks: u64,
    /// The pilot's task ids, in dataset order.
    pub pilot_ids: Vec<String>,
    /// The experiment's seed.
    pub seed: u64,
    /// The confidence level of the ranges.
    pub confidence: f64,
    /// Loops in the outputs.
    pub loops: Projection,
    /// Critiques in the outputs (every config's rounds).
    pub critiques: Projection,
    /// Rounds generated and critiqued (a replayed grid records fewer than it outputs).
    pub recorded_rounds: Projection,
    /// Each role's projection, by role.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub roles: BTreeMap<String, RoleProjection>,
    /// Distinct requests of every role together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_calls: Option<Projection>,
    /// The whole run's cost, when every role is priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Projection>,
    /// The currency of the costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// With a model server only (the offline backends' time is their writer's, not a model's):
    /// the loops' own time over the workers, or the model's over the requests the server takes
    /// at once, whichever is longer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_seconds: Option<Projection>,
    /// The budgets whose limit the projected cost exceeds (`max_cost`, `roles.ROLE`): `critbench
    /// run` refuses to start this experiment while there is one, unless `--force`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exceeds_budget: Vec<String>,
    /// The pilot run's directory.
    pub pilot_dir: PathBuf,
}

/// Runs the pilot of `experiment` into `options.out` and projects the whole run.
pub fn estimate(experiment: &Experiment, options: &EstimateOptions) -> Result<Estimate, EstimateError> {
    if options.pilot < 2 {
        return Err(EstimateError::PilotTooSmall { pilot: options.pilot });
    }
    if same_dir(&options.out, &experiment.out) {
        return Err(EstimateError::OwnRunDirectory { out: options.out.clone(), default: default_dir(experiment) });
    }
    let sample = sample_tasks(experiment, options.pilot)?;
    let scratch = ScratchFile::write(&sample.tasks)?;
    let mut pilot = experiment.clone();
    pilot.datasets = vec![scratch.path.clone()];
    pilot.out = options.out.clone();
    pilot.limit = None;
    // The pilot is what the user asked to pay for; the run's budget is checked against its projection.
    pilot.budget = None;
    if let Some(openai) = pilot.openai.as_mut() {
        openai.track_tasks = true;
    }
    let run = RunOptions {
        quiet: options.quiet,
        overwrite: options.overwrite,
        resume: false,
        interrupt: options.interrupt.clone(),
        shard: None,
    };
    let summary = run_experiment(&pilot, &run)?;
    drop(scratch);
    let ids: Vec<String> = sample.tasks.iter().map(|t| t.id.clone()).collect();
    let per_task = PilotTasks::read(&options.out, &ids, summary.openai.as_ref())?;
    let estimate = project(experiment, &sample, &per_task, &options.out);
    // The pilot's run released its directory: estimate.json is written under a claim of its own.
    let _lock =
        crate::run_dir::claim(&crate::run_dir::Layout::new(&options.out, None), crate::run_dir::Claim::Rebuild)?;
    let path = options.out.join(ESTIMATE_FILE);
    let json = serde_json::to_string_pretty(&estimate).expect("an estimate serializes") + "\n";
    critbench_storage::files::write_atomically(&path, json.as_bytes())
        .map_err(|source| EngineError::Io { context: format!("cannot write {}", path.display()), source })?;
    Ok(estimate)
}

/// Refuses a run whose own estimate (in [`default_dir`]) already exceeds its budget, before any
/// call; an estimate of another experiment, or none, says nothing.
pub fn check_budget(experiment: &Experiment) -> Result<(), EstimateError> {
    if experiment.budget.is_none() {
        return Ok(());
    }
    let path = default_dir(experiment).join(ESTIMATE_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(()) };
    let Ok(estimate) = serde_json::from_str::<Estimate>(&text) else { return Ok(()) };
    if estimate.fingerprint != fingerprint(experiment) {
        return Ok(());
    }
    let budget = experiment.budget.as_ref().expect("checked above");
    let exceeds = exceeded(&estimate, budget);
    if exceeds.is_empty() {
        return Ok(());
    }
    Err(EstimateError::OverBudget { estimate: path, exceeds })
}

/// Each budget the estimate's projected cost exceeds, described.
fn exceeded(estimate: &Estimate, budget: &critbench_openai::Budget) -> Vec<String> {
    let currency = estimate.currency.as_deref().unwrap_or("");
    let mut exceeds = Vec::new();
    let over = |name: String, limit: f64, cost: &Projection| {
        (cost.point > limit).then(|| {
            let money = |value: f64| critbench_report::format_money(value, None);
            format!(
                "{name} = {limit} {currency} against a projected {} {currency} ({} to {})",
                money(cost.point),
                money(cost.lo),
                money(cost.hi)
            )
        })
    };
    if let (Some(limit), Some(cost)) = (budget.max_cost, &estimate.cost) {
        exceeds.extend(over("max_cost".into(), limit, cost));
    }
    for (role, limit) in &budget.roles {
        if let Some(cost) = estimate.roles.get(role.as_str()).and_then(|r| r.cost.as_ref()) {
            exceeds.extend(over(format!("roles.{role}"), *limit, cost));
        }
    }
    exceeds
}

fn same_dir(a: &Path, b: &Path) -> bool {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    crate::experiment::normalize_path(&absolute(a)) == crate::experiment::normalize_path(&absolute(b))
}

/// What must be the same for an estimate to speak of a run: the resolved experiment without
/// what may change between the two commands, and each dataset's size.
pub fn fingerprint(experiment: &Experiment) -> String {
    let mut resolved = serde_json::to_value(experiment).expect("the experiment serializes");
    if let Some(object) = resolved.as_object_mut() {
        for key in ["jobs", "path", "out", "budget"] {
            object.remove(key);
        }
    }
    let mut hasher = Sha256::new();
    hasher.update(resolved.to_string().as_bytes());
    for path in &experiment.datasets {
        hasher.update(std::fs::metadata(path).map_or(0, |m| m.len()).to_le_bytes());
    }
    critbench_core::hex(&hasher.finalize())
}

/// The pilot's tasks (in dataset order) and how many tasks the whole run has.
struct Sample {
    tasks: Vec<Task>,
    total: u64,
}

/// The `n` tasks with the smallest hash of (seed, id) among those a critic takes: a uniform
/// sample that depends on the seed and the ids alone. Every row is read and parsed.
fn sample_tasks(experiment: &Experiment, n: usize) -> Result<Sample, EstimateError> {
    // Largest rank on top, so the heap keeps the `n` smallest.
    let mut heap: BinaryHeap<(u64, usize, usize, String)> = BinaryHeap::new();
    let mut kept: BTreeMap<(usize, usize), Task> = BTreeMap::new();
    let mut total = 0u64;
    for (file, path) in experiment.datasets.iter().enumerate() {
        let mut stream = DatasetStream::open(path)?;
        let mut admitted = 0usize;
        'rows: while let Some(block) = stream.next_block(1024)? {
            for (row, parsed) in block.parse() {
                if experiment.limit.is_some_and(|limit| admitted >= limit) {
                    break 'rows;
                }
                let task = match parsed {
                    Ok(task) => task,
                    Err(_) if experiment.on_bad_row == OnBadRow::Skip => continue,
                    Err(error) => return Err(stream.row_error(row, error).into()),
                };
                admitted += 1;
                if !experiment.critics.iter().any(|c| c.takes(task.kind.as_deref())) {
                    continue;
                }
                total += 1;
                let rank = rank(experiment.seed, &task.id);
                if heap.len() < n || heap.peek().is_some_and(|top| rank < top.0) {
                    kept.insert((file, row), task.clone());
                    heap.push((rank, file, row, task.id));
                    if heap.len() > n
                        && let Some((_, file, row, _)) = heap.pop()
                    {
                        kept.remove(&(file, row));
                    }
                }
            }
        }
    }
    if total == 0 {
        return Err(EstimateError::NothingToEstimate);
    }
    Ok(Sample { tasks: kept.into_values().collect(), total })
}

fn rank(seed: u64, id: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(seed.to_le_bytes());
    hasher.update([0]);
    hasher.update(id.as_bytes());
    let digest = hasher.finalize();
    u64::from_le_bytes(digest[..8].try_into().expect("eight bytes"))
}

/// The pilot's tasks as a JSONL dataset in the system's temporary directory, removed when dropped.
struct ScratchFile {
    path: PathBuf,
}

impl ScratchFile {
    fn write(tasks: &[Task]) -> Result<ScratchFile, EngineError> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!("critbench-pilot-{}-{nanos}.jsonl", std::process::id()));
        let mut text = String::new();
        for task in tasks {
            text.push_str(&serde_json::to_string(task).expect("a task serializes"));
            text.push('\n');
        }
        critbench_storage::files::write_new(&path, text.as_bytes())
            .map_err(|source| EngineError::Io { context: format!("cannot write {}", path.display()), source })?;
        Ok(ScratchFile { path })
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What each pilot task counted, in the order of the pilot's ids.
#[derive(Default)]
struct PilotTasks {
    loops: Vec<f64>,
    critiques: Vec<f64>,
    recorded: Vec<f64>,
    /// Seconds the loop workers spent on the task's recorded rounds.
    busy: Vec<f64>,
    /// Per role: (requests, tokens in, tokens out, cost (None: unpriced), server seconds, timed requests).
    roles: BTreeMap<String, Vec<[Option<f64>; 6]>>,
}

impl PilotTasks {
    fn read(
        dir: &Path,
        ids: &[String],
        openai: Option<&critbench_openai::usage::UsageReport>,
    ) -> Result<PilotTasks, EngineError> {
        let index: BTreeMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (id.as_str(), i)).collect();
        let mut tasks = PilotTasks {
            loops: vec![0.0; ids.len()],
            critiques: vec![0.0; ids.len()],
            recorded: vec![0.0; ids.len()],
            busy: vec![0.0; ids.len()],
            ..PilotTasks::default()
        };
        for outcome in critbench_storage::tables::read_outcomes(&dir.join(table_file(OUTCOMES)))? {
            if let Some(&i) = index.get(outcome.task_id.as_str()) {
                tasks.loops[i] += 1.0;
                tasks.critiques[i] += f64::from(outcome.rounds);
            }
        }
        critbench_storage::recorded::for_each_recorded_loop::<std::convert::Infallible>(
            &dir.join(table_file(TRAJECTORIES)),
            |recorded| {
                if let Some(&i) = index.get(recorded.task_id.as_str()) {
                    tasks.recorded[i] += recorded.rounds.len() as f64;
                    tasks.busy[i] += recorded.rounds.iter().map(|r| r.gen_ms + r.critic_ms).sum::<f64>() / 1000.0;
                }
                Ok(())
            },
        )?;
        let by_task = openai.and_then(|o| o.by_task.as_ref());
        for role in openai.into_iter().flat_map(|o| o.models.keys()) {
            let values = ids
                .iter()
                .map(|id| match by_task.and_then(|t| t.get(id)).and_then(|t| t.get(role)) {
                    // A role the task never asked cost nothing, priced or not.
                    None => [Some(0.0); 6],
                    Some(u) => [
                        Some(u.requests as f64),
                        Some(u.tokens_in as f64),
                        Some(u.tokens_out as f64),
                        u.cost,
                        Some(u.server_s),
                        Some(u.timed as f64),
                    ],
                })
                .collect();
            tasks.roles.insert(role.clone(), values);
        }
        Ok(tasks)
    }
}

/// The whole run projected from the pilot.
fn project(experiment: &Experiment, sample: &Sample, tasks: &PilotTasks, dir: &Path) -> Estimate {
    let total = sample.total as f64;
    let projection = |values: &[f64]| projection(values, total);
    let mut roles = BTreeMap::new();
    let mut calls: Vec<f64> = vec![0.0; tasks.loops.len()];
    let mut costs: Option<Vec<f64>> = Some(vec![0.0; tasks.loops.len()]);
    let mut model_seconds: Vec<f64> = vec![0.0; tasks.loops.len()];
    // Requests answered from the cache were not timed: they take the pilot's mean request time.
    let (timed_seconds, timed): (f64, f64) =
        tasks.roles.values().flatten().fold((0.0, 0.0), |(s, n), v| (s + v[4].unwrap_or(0.0), n + v[5].unwrap_or(0.0)));
    let mean_request = (timed > 0.0).then(|| timed_seconds / timed);
    let models = experiment.openai.as_ref().map(|o| &o.roles);
    for (role, values) in &tasks.roles {
        let column = |k: usize| values.iter().map(|v| v[k].unwrap_or(0.0)).collect::<Vec<f64>>();
        let role_costs: Option<Vec<f64>> = values.iter().map(|v| v[3]).collect();
        for (i, v) in values.iter().enumerate() {
            calls[i] += v[0].unwrap_or(0.0);
            let untimed = v[0].unwrap_or(0.0) - v[5].unwrap_or(0.0);
            model_seconds[i] += v[4].unwrap_or(0.0) + untimed * mean_request.unwrap_or(0.0);
        }
        costs = match (costs, &role_costs) {
            (Some(mut all), Some(role)) => {
                all.iter_mut().zip(role).for_each(|(a, r)| *a += r);
                Some(all)
            }
            _ => None,
        };
        let model = models
            .and_then(|m| critbench_openai::Role::parse(role).and_then(|r| m.get(&r)))
            .map_or_else(String::new, |s| s.model.clone());
        roles.insert(
            role.clone(),
            RoleProjection {
                model,
                model_calls: projection(&column(0)),
                tokens_in: projection(&column(1)),
                tokens_out: projection(&column(2)),
                cost: role_costs.as_deref().map(projection),
            },
        );
    }
    let openai = experiment.backend == BackendKind::Openai || experiment.openai.is_some();
    let jobs = experiment.blocking_jobs() as f64;
    // The run is bounded by its workers or by the requests the server takes at once.
    let busy = projection(&tasks.busy.iter().map(|b| b / jobs).collect::<Vec<_>>());
    let wall = match (experiment.openai.as_ref(), mean_request) {
        (Some(settings), Some(_)) => {
            let concurrency = f64::from(settings.concurrency().max(1));
            let served = projection(&model_seconds.iter().map(|s| s / concurrency).collect::<Vec<_>>());
            Some(Projection {
                point: busy.point.max(served.point),
                lo: busy.lo.max(served.lo),
                hi: busy.hi.max(served.hi),
                pilot: busy.pilot.max(served.pilot),
            })
        }
        _ => None,
    };
    let mut estimate = Estimate {
        estimate_version: ESTIMATE_VERSION,
        experiment: experiment.name.clone(),
        fingerprint: fingerprint(experiment),
        backend: serde_json::to_value(experiment.backend)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default(),
        tasks: sample.total,
        pilot_tasks: sample.tasks.len() as u64,
        pilot_ids: sample.tasks.iter().map(|t| t.id.clone()).collect(),
        seed: experiment.seed,
        confidence: CONFIDENCE,
        loops: projection(&tasks.loops),
        critiques: projection(&tasks.critiques),
        recorded_rounds: projection(&tasks.recorded),
        model_calls: openai.then(|| projection(&calls)),
        cost: costs.filter(|_| experiment.pricing.is_some() && !roles.is_empty()).as_deref().map(projection),
        currency: experiment.pricing.as_ref().map(|p| p.currency.clone()),
        roles,
        wall_seconds: wall,
        exceeds_budget: Vec::new(),
        pilot_dir: dir.to_path_buf(),
    };
    if let Some(budget) = &experiment.budget {
        estimate.exceeds_budget = exceeded(&estimate, budget);
    }
    estimate
}

/// The total over `population` tasks of a quantity the pilot measured per task (`values`).
pub fn projection(values: &[f64], population: f64) -> Projection {
    let n = values.len() as f64;
    let sum: f64 = values.iter().sum();
    if n == 0.0 {
        return Projection { point: 0.0, lo: 0.0, hi: f64::INFINITY, pilot: 0.0 };
    }
    let mean = sum / n;
    let point = population * mean;
    if n >= population || n < 2.0 {
        let exact = n >= population;
        return Projection {
            point,
            lo: if exact { point } else { sum },
            hi: if exact { point } else { f64::INFINITY },
            pilot: sum,
        };
    }
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let finite = ((population - n) / (population - 1.0)).max(0.0);
    let spread =
        t_quantile(0.5 + CONFIDENCE / 2.0, values.len() as u64 - 1) * population * (variance / n * finite).sqrt();
    Projection { point, lo: (point - spread).max(sum), hi: point + spread, pilot: sum }
}

/// Student's t quantile with `df` (whole) degrees of freedom, to 1e-9: the root of the
/// distribution function in the closed form for whole degrees of freedom (Abramowitz and Stegun
/// 26.7.3 and 26.7.4), found by bisection.
pub fn t_quantile(p: f64, df: u64) -> f64 {
    // P(|T| <= t) for `df` degrees of freedom.
    let central = |t: f64| {
        let theta = (t / (df as f64).sqrt()).atan();
        let (sin, cos) = theta.sin_cos();
        let c2 = cos * cos;
        let (mut term, mut sum) = (1.0, 1.0);
        if df % 2 == 1 {
            let mut k = 2;
            while k + 1 < df {
                term *= k as f64 / (k + 1) as f64 * c2;
                sum += term;
                k += 2;
            }
            let series = if df > 1 { sin * cos * sum } else { 0.0 };
            std::f64::consts::FRAC_2_PI * (theta + series)
        } else {
            let mut k = 1;
            while k + 1 < df {
                term *= k as f64 / (k + 1) as f64 * c2;
                sum += term;
                k += 2;
            }
            sin * sum
        }
    };
    let target = 2.0 * p - 1.0;
    let (mut lo, mut hi) = (0.0f64, 1e4f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if central(mid) < target {
            lo = mid
        } else {
            hi = mid
        }
        if hi - lo < 1e-12 {
            break;
        }
    }
    if p < 0.5 { -0.5 * (lo + hi) } else { 0.5 * (lo + hi) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        // scipy.stats.t.ppf(0.975, df)
        for (df, expected) in [
            (1, 12.706_204_736),
            (2, 4.302_652_730),
            (3, 3.182_446_305),
            (4, 2.776_445_105),
            (9, 2.262_157_163),
            (29, 2.045_229_642),
            (200, 1.971_896_224),
        ] {
            let got = t_quantile(0.975, df);
            assert!((got - expected).abs() < 1e-6, "df {df}: {got} against {expected}");
        }
        assert!((t_quantile(0.95, 9) - 1.833_112_933).abs() < 1e-6);
    }

    #[test]
    fn a_projection_scales_the_pilot_and_its_range_follows_the_spread() {
        // Every task alike: the projection is exact whatever the sample.
        let same = projection(&[81.0; 10], 480.0);
        assert_eq!((same.point, same.lo, same.hi, same.pilot), (81.0 * 480.0, 81.0 * 480.0, 81.0 * 480.0, 810.0));
        let varied = projection(&[1.0, 3.0, 2.0, 6.0], 100.0);
        assert_eq!(varied.point, 300.0);
        assert!(varied.lo < 300.0 && varied.hi > 300.0 && varied.lo >= 12.0, "{varied:?}");
        // More spread, wider; the whole population, exact.
        let wider = projection(&[0.0, 6.0, 0.0, 6.0], 100.0);
        assert!(wider.hi - wider.lo > varied.hi - varied.lo);
        let all = projection(&[1.0, 3.0, 2.0, 6.0], 4.0);
        assert_eq!((all.lo, all.point, all.hi), (12.0, 12.0, 12.0));
        // Never below what the pilot's own tasks counted.
        let skewed = projection(&[0.0, 0.0, 0.0, 100.0], 5.0);
        assert!(skewed.lo >= 100.0, "{skewed:?}");
        assert!(varied.brackets(300.0) && !varied.brackets(varied.hi + 1.0));
    }

    #[test]
    fn the_sample_depends_on_the_seed_and_the_ids_alone() {
        let ranks: Vec<u64> = ["a", "b", "c"].iter().map(|id| rank(7, id)).collect();
        assert_eq!(ranks, ["a", "b", "c"].iter().map(|id| rank(7, id)).collect::<Vec<_>>());
        assert_ne!(rank(7, "a"), rank(8, "a"));
    }
}
