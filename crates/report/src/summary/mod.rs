//! The summary section: a row per config × critic × arm (`summary.csv`), the paired comparisons of
//! its arms (`comparisons.csv`), the same per task kind, and the notes the reports give beside
//! them, folded from the outcomes in one pass ([`fold`]).

mod fold;
mod notes;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::Path;

use critbench_core::Arm;
use critbench_storage::manifest::Manifest;
use serde::Serialize;

pub(crate) use fold::{summarize_files, summarize_judged, summarize_rows};

use crate::ReportError;
use crate::csv_files::write_csv;
use crate::power::PowerRow;
use crate::rows::{ADJUDICATED_SUFFIX, ComparisonRow, SummaryRow};

/// What the summary files say of the run: who it is, how far it ran, its rows and comparisons,
/// and what a reader should know beside them. Serialized, it is `summary.json` but for a
/// sequential run's record ([`crate::Report`] adds it).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// The run's id (the manifest's, else the smallest in the rows).
    pub run_id: Option<String>,
    /// The experiment's name, from the manifest.
    pub name: Option<String>,
    /// The currency of every cost (the experiment's `[pricing]`), when the run was priced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Why the numbers cover only some of the run's tasks, when they do: reports say so first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial: Option<Partial>,
    /// One row per config × arm × critic (`summary.csv`).
    #[serde(rename = "summary")]
    pub rows: Vec<SummaryRow>,
    /// One row per pair of arms (`comparisons.csv`).
    pub comparisons: Vec<ComparisonRow>,
    /// What a reader should know beside the tables (from the manifest): a token cap that stopped
    /// the run, loops that failed, the models and their calls, critics that failed or disagreed.
    pub notes: Vec<String>,
    /// How the run spent its time waiting on the model server (latency percentiles, waiting
    /// against the workers' time), for `report.md` and `report.html`; not in `summary.json`,
    /// since it is a measurement of time, not of the data.
    #[serde(skip)]
    pub timing: Option<String>,
    /// The same rows over the tasks of each kind, when the run has tasks of two kinds or more
    /// (for the reports; not written to `summary.json`).
    #[serde(skip)]
    pub by_kind: Vec<KindReport>,
    /// A rescoring's censored loops per config, critic and arm (in the rows' order; groups with
    /// none left out): they are in no row's `n`, and the terminal's table says so beside the rate.
    #[serde(skip)]
    pub censored: Vec<((String, String, String), u64)>,
    /// Pass rate against spend per arm, and arms compared at equal spend (`cost_curves.csv`,
    /// `cost_comparisons.csv`; not in `summary.json`).
    #[serde(skip)]
    pub spend: crate::spend::Spend,
}

/// One judge's reading of the run: the summary's rows, comparisons and cost curves, and the power
/// rows of its comparisons, every row's `judge` set.
#[derive(Clone, Debug, Default)]
pub struct Judged {
    /// `critic`, or a held-out evaluator's name.
    pub judge: String,
    /// The rows as this judge reads them (notes, timing and the run's identity are the critic's
    /// summary's alone).
    pub summary: Summary,
    /// `power.csv`'s rows of this judge's comparisons.
    pub power: Vec<PowerRow>,
}

impl Judged {
    /// Names `judge` on every row of `summary` and `power`.
    pub(crate) fn new(judge: &str, mut summary: Summary, mut power: Vec<PowerRow>) -> Judged {
        let name = || judge.to_string();
        summary.rows.iter_mut().for_each(|r| r.judge = name());
        summary.comparisons.iter_mut().for_each(|r| r.judge = name());
        summary.spend.curves.iter_mut().for_each(|r| r.judge = name());
        summary.spend.comparisons.iter_mut().for_each(|r| r.judge = name());
        for kind in &mut summary.by_kind {
            kind.summary.iter_mut().for_each(|r| r.judge = name());
            kind.comparisons.iter_mut().for_each(|r| r.judge = name());
        }
        power.iter_mut().for_each(|r| r.judge = name());
        Judged { judge: name(), summary, power }
    }
}

/// A run that did not run all its tasks, as its reports say at the top.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Partial {
    /// How the run ended: the manifest's `status` (`interrupted`), or `budget` for a run its
    /// `[budget]` stopped.
    pub status: String,
    /// Tasks whose loops are in the tables.
    pub tasks_run: usize,
    /// The sentence the reports open with.
    pub message: String,
}

impl Partial {
    /// What `manifest` says of a run that stopped early; `None` for a finished one.
    pub fn of(manifest: &Manifest) -> Option<Partial> {
        use critbench_storage::manifest::RunStatus;
        if manifest.status == RunStatus::Finished {
            return None;
        }
        let tasks = manifest.tasks_run;
        let plural = if tasks == 1 { "" } else { "s" };
        let over = format!(
            "{tasks} task{plural} ran and the rest of the datasets did not, so every number here is over those {tasks} \
             task{plural} only."
        );
        let budget = manifest.openai.as_ref().and_then(|o| o.pointer("/budget/stopped_by")).filter(|b| b.is_object());
        let (status, message) = match budget {
            Some(stop) => {
                let currency =
                    manifest.experiment.rest.get("pricing").and_then(|p| p["currency"].as_str()).unwrap_or("");
                let number = |key: &str| stop[key].as_f64().unwrap_or(f64::NAN);
                (
                    "budget",
                    format!(
                        "Partial results: the run was stopped by its budget ([budget] {} = {} {currency}, {} spent) \
                         before it finished. {over} Raise the budget and run the same command with \
                         --resume to finish the run.",
                        stop["budget"].as_str().unwrap_or("?"),
                        number("limit"),
                        crate::format::money(number("spent"), Some(currency)),
                    ),
                )
            }
            None => (
                "interrupted",
                format!(
                    "Partial results: the run was interrupted before it finished. {over} Run the same command with \
                     --resume to finish the run."
                ),
            ),
        };
        Some(Partial { status: status.to_string(), tasks_run: tasks, message })
    }
}

/// The summary and comparison rows of one task kind: the same statistics as the whole run's,
/// over that kind's tasks only.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KindReport {
    /// `None` for tasks whose dataset row gave no kind.
    pub kind: Option<String>,
    /// The kind's summary rows.
    pub summary: Vec<SummaryRow>,
    /// The kind's comparison rows.
    pub comparisons: Vec<ComparisonRow>,
}

/// Sort position of each name in the manifest's list (unknown names sort last, then by name).
fn order_of<'m>(names: impl Iterator<Item = &'m str>) -> HashMap<String, usize> {
    let mut order = HashMap::new();
    for (index, name) in names.enumerate() {
        order.entry(name.to_string()).or_insert(index);
    }
    order
}

/// Arms in reading order: the memory arm first (it is compared with plain feedback), then
/// feedback, no-feedback, placebo, resample, single and the oracle (a bound, not a loop to ship),
/// each followed by its adjudicated twin; unknown names last. Each comparison reads A − B with A
/// the arm that reads first, so feedback is A against every arm but memory, and feedback against
/// no-feedback is the first comparison when both ran.
fn arm_rank(arm: &str) -> usize {
    match Arm::parse(arm.strip_suffix(ADJUDICATED_SUFFIX).unwrap_or(arm)) {
        Some(Arm::FeedbackMemory) => 0,
        Some(Arm::Feedback) => 1,
        Some(Arm::NoFeedback) => 2,
        Some(Arm::Placebo) => 3,
        Some(Arm::Resample) => 4,
        Some(Arm::Single) => 5,
        Some(Arm::Oracle) => 6,
        None => usize::MAX,
    }
}

/// The key that puts arms in reading order ([`arm_rank`], then by name).
fn arm_order(arm: &str) -> (usize, String) {
    (arm_rank(arm), arm.to_string())
}

/// The arms of the first comparison between arms that ran, as the summary of a run of `manifest`
/// will nearly always find it: its first two arms in reading order. A guess, for reading that
/// comparison's pairs beside the summary; the summary's own comparison decides.
pub(crate) fn first_compared_arms(manifest: Option<&Manifest>) -> Option<(String, String)> {
    let mut arms: Vec<&String> = manifest?.experiment.arms.iter().collect();
    arms.sort_by_cached_key(|arm| arm_order(arm));
    match arms[..] {
        [a, b, ..] if a != b => Some((a.clone(), b.clone())),
        _ => None,
    }
}

/// Writes `summary.csv`, `comparisons.csv`, `cost_curves.csv` and `cost_comparisons.csv`: the
/// steering critic's rows, then each held-out judge's.
pub(crate) fn write_files(run_dir: &Path, summary: &Summary, held_out: &[Judged]) -> Result<(), ReportError> {
    let summaries: Vec<&Summary> = std::iter::once(summary).chain(held_out.iter().map(|j| &j.summary)).collect();
    write_csv(&run_dir.join(crate::outputs::SUMMARY_CSV), &all_rows(&summaries, |s| &s.rows))?;
    write_csv(&run_dir.join(crate::outputs::COMPARISONS_CSV), &all_rows(&summaries, |s| &s.comparisons))?;
    write_csv(&run_dir.join(crate::outputs::COST_CURVES_CSV), &all_rows(&summaries, |s| &s.spend.curves))?;
    write_csv(&run_dir.join(crate::outputs::COST_COMPARISONS_CSV), &all_rows(&summaries, |s| &s.spend.comparisons))
}

/// The rows `rows` picks from each summary, one after the other.
fn all_rows<'a, T: Clone + 'a>(summaries: &[&'a Summary], rows: impl Fn(&'a Summary) -> &'a Vec<T>) -> Vec<T> {
    summaries.iter().flat_map(|s| rows(s).iter().cloned()).collect()
}
