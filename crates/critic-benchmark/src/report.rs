//! The judge report: every table, built from the judgment rows.

use std::path::PathBuf;
use std::sync::Arc;

use critbench_plugin_host::CriticInfo;
use critbench_storage::judgments::JudgmentRow;
use rayon::prelude::*;
use serde::Serialize;

use crate::JudgeSpec;
use crate::judging::DatasetSummary;
use crate::metrics::{
    self, BOOTSTRAP_RESAMPLES, CalibrationBin, CriticMetrics, CriticRows, FlawRow, PairRow, ThresholdRow,
};

/// The version of `judge.json`'s layout and `judgments.parquet`'s columns; see `docs/FORMAT.md`.
pub const JUDGE_FORMAT_VERSION: u32 = 1;

/// The pass rule the verdicts were made under.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyRecord {
    /// The config whose pass rule it is.
    pub config_id: String,
    /// Its pass threshold.
    pub pass_score: f64,
    /// Its per-dimension target, if any.
    pub dim_target: Option<f64>,
    /// Configs in the experiment's policy grid; verdicts use the first.
    pub grid_size: usize,
}

/// One critic's plugin, as loaded.
#[derive(Clone, Debug, Serialize)]
pub struct PluginRecord {
    /// The critic.
    pub critic: String,
    /// The task kinds it judges (all when `None`).
    pub kinds: Option<Vec<String>>,
    /// Its `config` table.
    pub config: serde_json::Value,
    /// The library loaded.
    pub path: PathBuf,
    /// The plugin's name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// SHA-256 of the library.
    pub sha256: String,
    /// Its score range.
    pub score_range: [f64; 2],
    /// Whether it may be called from several threads at once.
    pub thread_safe: bool,
    /// Compiled into critbench: `path` is then the executable and `sha256` of the critic's sources.
    pub builtin: bool,
    /// A command critic's whole command line (`path` is its program, `sha256` of its script).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// How it ran: `in-process` or `process` (child processes).
    pub isolation: critbench_plugin_host::IsolationMode,
}

/// Everything `judge.json` holds.
#[derive(Clone, Debug, Serialize)]
pub struct JudgeReport {
    /// The version of this file's layout.
    pub format_version: u32,
    /// The critbench that wrote it.
    pub critbench_version: &'static str,
    /// The experiment's name.
    pub name: String,
    /// The run's id.
    pub run_id: String,
    /// The experiment file, if any.
    pub experiment: Option<PathBuf>,
    /// The pass rule of the verdicts.
    pub policy: PolicyRecord,
    /// Critiques of each draft by each critic.
    pub repeats: u32,
    /// Attempts per critique.
    pub critic_attempts: u32,
    /// The seed of the bootstrap intervals.
    pub seed: u64,
    /// Bootstrap resamples per interval.
    pub bootstrap_resamples: usize,
    /// What each dataset held.
    pub datasets: Vec<DatasetSummary>,
    /// Each critic's plugin.
    pub plugins: Vec<PluginRecord>,
    /// One entry per critic that judged at least one draft, in experiment order.
    pub critics: Vec<CriticMetrics>,
    /// Critic-vs-critic comparisons.
    pub pairs: Vec<PairRow>,
    /// The per-flaw breakdown.
    pub flaws: Vec<FlawRow>,
    /// The threshold sweep.
    pub thresholds: Vec<ThresholdRow>,
    /// Calibration bins.
    pub calibration: Vec<CalibrationBin>,
    /// What was left out or needs a reader's attention; also printed as warnings.
    pub notes: Vec<String>,
    /// When judging started (RFC 3339).
    pub started_at: String,
    /// When it finished (RFC 3339).
    pub finished_at: String,
    /// Time to load the datasets and plugins and make every critique.
    pub judging_seconds: f64,
    /// Worker threads used.
    pub jobs: usize,
}

pub(crate) struct Context<'a> {
    pub spec: &'a JudgeSpec,
    pub run_id: &'a str,
    pub datasets: Vec<DatasetSummary>,
    pub libraries: &'a [Arc<CriticInfo>],
    pub notes: Vec<String>,
    pub started_at: String,
    pub finished_at: String,
    pub wall_seconds: f64,
    pub jobs: usize,
}

/// Computes every table from the rows. Critics are independent, so they are computed in parallel
/// (each with its own seed, so the result does not depend on the thread count).
pub(crate) fn build(rows: &[JudgmentRow], context: Context<'_>) -> JudgeReport {
    let spec = context.spec;
    let inputs: Vec<CriticRows<'_>> = spec
        .critics
        .iter()
        .zip(context.libraries)
        .map(|(setup, library)| CriticRows {
            critic: &setup.name,
            plugin: &library.name,
            plugin_version: &library.version,
            range: library.range,
            rows: rows.iter().filter(|r| r.critic == setup.name).collect(),
        })
        .filter(|input| !input.rows.is_empty())
        .collect();
    type PerCritic = (CriticMetrics, Vec<ThresholdRow>, Vec<CalibrationBin>, Vec<FlawRow>);
    let per_critic: Vec<PerCritic> = inputs
        .par_iter()
        .map(|input| {
            (
                metrics::critic_metrics(input, &spec.policy, spec.repeats, spec.seed),
                metrics::threshold_sweep(input, &spec.policy),
                metrics::calibration(input),
                metrics::flaw_breakdown(input),
            )
        })
        .collect();
    let mut pairs = Vec::new();
    for (i, a) in inputs.iter().enumerate() {
        for b in &inputs[i + 1..] {
            pairs.extend(metrics::compare(a, b, spec.seed));
        }
    }
    let mut report = JudgeReport {
        format_version: JUDGE_FORMAT_VERSION,
        critbench_version: env!("CARGO_PKG_VERSION"),
        name: spec.name.clone(),
        run_id: context.run_id.to_string(),
        experiment: spec.experiment_path.clone(),
        policy: PolicyRecord {
            config_id: spec.policy.config_id(),
            pass_score: spec.policy.pass_score,
            dim_target: spec.policy.dim_target,
            grid_size: spec.grid_size,
        },
        repeats: spec.repeats,
        critic_attempts: spec.attempts,
        seed: spec.seed,
        bootstrap_resamples: BOOTSTRAP_RESAMPLES,
        datasets: context.datasets,
        plugins: spec
            .critics
            .iter()
            .zip(context.libraries)
            .map(|(setup, library)| PluginRecord {
                critic: setup.name.clone(),
                kinds: setup.kinds.clone(),
                config: setup.config.clone(),
                path: library.path.clone(),
                name: library.name.clone(),
                version: library.version.clone(),
                sha256: library.sha256.clone(),
                score_range: [library.range.min, library.range.max],
                thread_safe: library.thread_safe,
                builtin: library.builtin,
                command: library.command.clone(),
                isolation: library.isolation,
            })
            .collect(),
        critics: Vec::new(),
        pairs,
        flaws: Vec::new(),
        thresholds: Vec::new(),
        calibration: Vec::new(),
        notes: context.notes,
        started_at: context.started_at,
        finished_at: context.finished_at,
        judging_seconds: context.wall_seconds,
        jobs: context.jobs,
    };
    for (critic, thresholds, calibration, flaws) in per_critic {
        report.critics.push(critic);
        report.thresholds.extend(thresholds);
        report.calibration.extend(calibration);
        report.flaws.extend(flaws);
    }
    report
}
