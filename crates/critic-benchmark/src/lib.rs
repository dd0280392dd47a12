//! Benchmarks the critics themselves (`critbench judge`): each critic critiques every labeled draft
//! of a dataset — no loop, `repeats` times — and its verdicts, under the experiment's pass rule,
//! are compared with the drafts' gold labels.
//!
//! A loop is only as good as its critic: one that passes a draft with a fabricated citation, or
//! scores the same draft 9 and then 2, ruins every number downstream. This crate measures that:
//! the false-pass rate first (a gold fail judged pass — the costly error), then false fails,
//! accuracy, precision and recall of "pass", Cohen's kappa, rank correlation with gold scores,
//! fatal-issue recall, spread across repeats, critique errors and latency; a threshold sweep,
//! calibration bins, a per-flaw breakdown, and paired comparisons of critics on shared drafts.
//! A critique that failed is no verdict: it is left out of every agreement number and counted
//! apart (see [`metrics`]).
//!
//! It writes `judgments.parquet` (one row per critic × task × draft × repeat), `judge.json`,
//! `judge.csv`, `judge.md` and `judge.html` into the output directory.
//!
//! ```no_run
//! use critbench_critic_benchmark::{CriticSpec, JudgeSpec, judge};
//!
//! let spec = JudgeSpec {
//!     critics: vec![CriticSpec::plugin("evidence", "evidence")],
//!     datasets: vec!["datasets/judge.jsonl".into()],
//!     out: "reports/judge".into(),
//!     ..JudgeSpec::default()
//! };
//! let outcome = judge(&spec).unwrap();
//! for critic in &outcome.report.critics {
//!     println!("{}: false-pass rate {:?}", critic.critic, critic.false_pass_rate);
//! }
//! ```

#![warn(missing_docs)]

mod error;
mod files;
mod html;
mod judging;
pub mod labels;
mod markdown;
pub mod metrics;
mod report;
mod spec;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use critbench_storage::judgments::JudgmentWriter;

pub use critbench_plugin_host::CriticSpec;
pub use error::JudgeError;
pub use files::{JUDGE_JSON, OUTPUT_FILES};
pub use judging::{DatasetSummary, SkippedTask};
pub use markdown::{findings, pair_table, side_by_side};
pub use report::{JudgeReport, PluginRecord, PolicyRecord};
pub use spec::JudgeSpec;

/// What a finished `judge` reports back.
#[derive(Debug)]
pub struct JudgeOutcome {
    /// What `judge.json` holds.
    pub report: JudgeReport,
    /// Where the files were written.
    pub out_dir: PathBuf,
    /// Judgments written.
    pub judgments: usize,
    /// Wall time of the whole command.
    pub elapsed: Duration,
}

/// Units critiqued before their judgments are written: bounds the judgments held in memory.
const JUDGE_CHUNK: usize = 4096;

/// Runs every critic on every labeled draft and writes the judgments and reports.
pub fn judge(spec: &JudgeSpec) -> Result<JudgeOutcome, JudgeError> {
    let started = Instant::now();
    let (started_at, stamp) = critbench_storage::clock::utc_stamps(SystemTime::now());
    let run_id = format!("{}-judge-{stamp}", spec.name);
    if spec.critics.is_empty() {
        return Err(JudgeError::NoCritics);
    }
    if spec.repeats == 0 {
        return Err(JudgeError::NoRepeats);
    }
    let (tasks, datasets) = judging::load_labeled(spec)?;
    let critics = judging::load_critics(spec)?;
    let units = judging::units(spec, &tasks);
    if units.is_empty() {
        let mut kinds: Vec<String> =
            tasks.iter().map(|t| t.task.kind.as_deref().unwrap_or("(none)").to_string()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        return Err(JudgeError::NoDraftForAnyCritic { kinds });
    }
    let mut notes = Vec::new();
    let unrouted = tasks.iter().filter(|t| !spec.critics.iter().any(|c| c.takes(t.task.kind.as_deref()))).count();
    if unrouted > 0 {
        notes.push(format!("{unrouted} labeled task(s) match no critic's `kinds` and were not judged"));
    }
    for (index, setup) in spec.critics.iter().enumerate() {
        if !units.iter().any(|u| u.critic == index) {
            notes.push(format!("critic `{}` takes no labeled draft (check its `kinds`); it is left out", setup.name));
        }
    }
    for dataset in &datasets {
        let path = dataset.path.display();
        if dataset.tasks_without_labels > 0 {
            notes.push(format!(
                "{path}: {} task(s) have drafts but no `labels` and were not judged",
                dataset.tasks_without_labels
            ));
        }
        if dataset.rows_skipped > 0 {
            notes.push(format!("{path}: {} bad row(s) skipped by the reader", dataset.rows_skipped));
        }
        for skipped in &dataset.tasks_skipped {
            notes.push(format!("{path}: task `{}` skipped: field `labels`: {}", skipped.task, skipped.reason));
        }
    }
    if spec.grid_size > 1 {
        notes.push(format!(
            "the experiment's policy grid has {} configs; verdicts use the first, {} (the threshold sweep shows the others' pass scores)",
            spec.grid_size,
            spec.policy.config_id()
        ));
    }

    std::fs::create_dir_all(&spec.out).map_err(|source| JudgeError::Io {
        context: format!("cannot create the output directory {}", spec.out.display()),
        source,
    })?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(spec.jobs).build().map_err(JudgeError::Threads)?;
    // Judgments reach Parquet a chunk of units at a time, in unit order, as they are made; the
    // metrics keep only the fields they read (no issue texts, rationales or metas).
    let mut writer = JudgmentWriter::create(&spec.out.join(files::JUDGMENTS_PARQUET))?;
    let mut rows = Vec::with_capacity(units.len());
    for chunk in units.chunks(JUDGE_CHUNK) {
        for row in judging::critique_all(spec, &run_id, &tasks, &critics, chunk, &pool) {
            rows.push(judging::for_metrics(&row));
            writer.push(row)?;
        }
    }
    writer.close()?;

    let libraries: Vec<_> = critics.iter().map(|c| Arc::clone(c.info())).collect();
    let (finished_at, _) = critbench_storage::clock::utc_stamps(SystemTime::now());
    let context = report::Context {
        spec,
        run_id: &run_id,
        datasets,
        libraries: &libraries,
        notes,
        started_at,
        finished_at,
        wall_seconds: started.elapsed().as_secs_f64(),
        jobs: pool.current_num_threads(),
    };
    let report = pool.install(|| report::build(&rows, context));
    files::write_files(&spec.out, &report)?;
    Ok(JudgeOutcome { report, out_dir: spec.out.clone(), judgments: rows.len(), elapsed: started.elapsed() })
}
