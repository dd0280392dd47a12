//! How many tasks each paired comparison of a run needs: `power.csv` and the reports' section.
//!
//! For every comparison of two arms (the rows of `comparisons.csv`), each task's epochs paired
//! on both arms give its differences d = A passed − B passed; their split into a task part and an
//! epoch part ([`critbench_stats::power`]) gives the minimum difference this run could detect, the
//! tasks needed for a stated difference, and whether more tasks or more epochs buy precision.
//!
//! The summary's pass over `outcomes.parquet` gathers them: when a (config, critic, task) has all
//! its loops, each comparison's pairs of it are folded into that comparison's histogram of per-task
//! (pairs, Σ d, Σ d²), so the rows depend only on the outcomes, never on their order.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use critbench_stats::power::{TaskDifferences, Test, VarianceSplit};
use serde::Serialize;

use crate::ReportError;

/// The differences `power.csv` gives the tasks needed for: 5 and 10 percentage points.
pub const STATED_DIFFERENCES: [f64; 2] = [0.05, 0.10];

/// One paired comparison's power: what it could detect, what a stated difference would need, and
/// where its variance comes from. Columns are documented in `docs/FORMAT.md`.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct PowerRow {
    /// The config (policy).
    pub config_id: String,
    /// The critic.
    pub critic: String,
    /// Whose verdict the pass rates read: `critic` (the steering critic, the judge the loop
    /// optimizes), or a held-out evaluator by name (`sim-truth` among them).
    pub judge: String,
    /// The first arm compared (A).
    pub arm_a: String,
    /// The second arm compared (B).
    pub arm_b: String,
    /// Tasks with at least one pair, and their epochs (the harmonic mean of pairs per task).
    pub n_tasks: u64,
    /// Epochs per task (the harmonic mean of pairs per task).
    pub epochs: f64,
    /// The mean over tasks of each task's mean difference A − B.
    pub diff: f64,
    /// Its standard error over tasks.
    pub se: f64,
    /// The test the MDE and tasks are for: two-sided at `confidence`, with probability `power`.
    pub confidence: f64,
    /// The probability of detecting the MDE.
    pub power: f64,
    /// The minimum detectable difference over this run's tasks and epochs, never below what a
    /// difference's own noise allows (m²/(n·k + m²) on n tasks × k epochs): never 0.
    pub mde: f64,
    /// The variance split: between tasks, and between a task's epochs (empty with one epoch).
    pub task_variance: Option<f64>,
    /// Variance between a task's epochs.
    pub epoch_variance: Option<f64>,
    /// The epochs' share of the estimate's variance.
    pub epoch_share: Option<f64>,
    /// The MDE with twice the tasks, twice the epochs, and unlimited epochs (the task part alone).
    pub mde_twice_tasks: f64,
    /// The MDE with twice the epochs.
    pub mde_twice_epochs: Option<f64>,
    /// The MDE with unlimited epochs (the task part alone, which has no floor); empty with one
    /// epoch, and when the task part is estimated as 0.
    pub mde_unlimited_epochs: Option<f64>,
    /// Tasks needed for 5 and 10 percentage points, with this run's epochs (each difference's own
    /// noise counted, so never fewer than it needs).
    pub tasks_for_5pp: Option<u64>,
    /// Tasks needed for 10 percentage points.
    pub tasks_for_10pp: Option<u64>,
    /// `more tasks`, `more epochs`, `more tasks; 2+ epochs would split the variance`, `no variation`.
    pub advice: String,
}

/// (pairs, Σ d, Σ d²) of a task → how many tasks had it: the summary keeps one per comparison.
pub(crate) type Histogram = BTreeMap<(u64, i64, u64), u64>;

/// The row of the comparison of `label_a` and `label_b` in `config_id` × `critic`, from its
/// tasks' differences; `None` with fewer than two tasks (nothing to estimate a variance from).
pub(crate) fn power_row(
    config_id: &str,
    critic: &str,
    label_a: &str,
    label_b: &str,
    histogram: &Histogram,
) -> Option<PowerRow> {
    let tasks = histogram.iter().map(|(&(pairs, sum, squares), &count)| {
        (TaskDifferences { pairs, sum: sum as f64, sum_of_squares: squares as f64 }, count)
    });
    let split = &VarianceSplit::of(tasks)?;
    let test = Test::default();
    let (tasks, epochs) = (split.tasks as f64, split.epochs);
    let mde = |tasks: f64, epochs: f64| test.minimum_detectable(split, tasks, epochs);
    let [five, ten] = STATED_DIFFERENCES.map(|difference| test.tasks_to_detect(split, difference, epochs));
    Some(PowerRow {
        judge: crate::rows::CRITIC_JUDGE.to_string(),
        config_id: config_id.to_string(),
        critic: critic.to_string(),
        arm_a: label_a.to_string(),
        arm_b: label_b.to_string(),
        n_tasks: split.tasks,
        epochs,
        diff: split.mean,
        se: split.standard_error(),
        confidence: test.confidence,
        power: test.power,
        mde: mde(tasks, epochs).expect("the run's own design is always known"),
        task_variance: split.parts.map(|p| p.task),
        epoch_variance: split.parts.map(|p| p.epoch),
        epoch_share: split.epoch_share(),
        mde_twice_tasks: mde(2.0 * tasks, epochs).expect("the run's own epochs are always known"),
        mde_twice_epochs: mde(tasks, 2.0 * epochs),
        // The task part alone has no floor: when it is estimated as 0 the figure says nothing.
        mde_unlimited_epochs: split.parts.map(|p| test.multiplier() * (p.task / tasks).sqrt()).filter(|&m| m > 0.0),
        tasks_for_5pp: five,
        tasks_for_10pp: ten,
        advice: split.advice().as_str().to_string(),
    })
}

/// Writes `power.csv` into the run directory, atomically (a header alone when nothing was
/// compared).
pub(crate) fn write_file(run_dir: &Path, rows: &[&PowerRow]) -> Result<(), ReportError> {
    let path = run_dir.join(crate::outputs::POWER_CSV);
    let default = [&PowerRow::default()];
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in if rows.is_empty() { &default[..] } else { rows } {
        writer.serialize(row).expect("a row serializes to memory");
    }
    let mut bytes = writer.into_inner().expect("writing to memory cannot fail");
    if rows.is_empty() {
        // The header the default row was written under, without the row.
        let header = bytes.iter().position(|&b| b == b'\n').map_or(bytes.len(), |end| end + 1);
        bytes.truncate(header);
    }
    critbench_storage::files::write_atomically(&path, &bytes).map_err(|source| ReportError::Write { path, source })
}

/// What the section says of itself, in report.md and report.html.
pub(crate) const SENTENCE: &str = "For each paired comparison: the smallest difference this run could detect (MDE: a two-sided \
     test at 95% with 80% power, over its tasks × epochs), the tasks it would take to detect 5 and 10 percentage points \
     with the same epochs, and the paired difference's variance split into a task part (tasks on which the arms differ \
     by different amounts) and an epoch part (the loops' own sampling noise), as in \"Measuring all the noises of LLM \
     evals\" (Wang 2025). More tasks shrink both parts; more epochs only the epoch part, so they pay when it is the \
     larger share or the dataset has no more tasks. `power.csv` has every column, with the MDE for twice the tasks, \
     twice the epochs and unlimited epochs.";

pub(crate) fn points(value: f64) -> String {
    format!("{:.1} pp", 100.0 * value)
}

pub(crate) fn tasks_cell(needed: Option<u64>) -> String {
    needed.map_or_else(|| "–".to_string(), |n| n.to_string())
}

pub(crate) fn split_cell(row: &PowerRow) -> String {
    match (row.task_variance, row.epoch_variance) {
        (Some(task), Some(epoch)) => format!("{task:.4} / {epoch:.4}"),
        _ => "–".to_string(),
    }
}

pub(crate) fn share_cell(row: &PowerRow) -> String {
    row.epoch_share.map_or_else(|| "–".to_string(), |share| format!("{:.0}%", 100.0 * share))
}

/// The `## How many tasks a question needs` section of report.md; empty without comparisons.
pub(crate) fn markdown_section(rows: &[PowerRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## How many tasks a question needs\n\n");
    out.push_str(SENTENCE);
    out.push_str(
        "\n\n| config | critic | A vs B | tasks × epochs | A − B | MDE | tasks for 5 pp / 10 pp | variance: task / epoch | \
         epoch share | advice |\n|---|---|---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for row in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} vs {} | {} × {} | {:+.1} pp | {} | {} / {} | {} | {} | {} |",
            row.config_id,
            row.critic,
            row.arm_a,
            row.arm_b,
            row.n_tasks,
            epochs_label(row.epochs),
            100.0 * row.diff,
            points(row.mde),
            tasks_cell(row.tasks_for_5pp),
            tasks_cell(row.tasks_for_10pp),
            split_cell(row),
            share_cell(row),
            row.advice,
        );
    }
    out
}

/// Epochs per task as a reader counts them: whole when every task ran alike.
pub(crate) fn epochs_label(epochs: f64) -> String {
    if epochs.fract() == 0.0 { format!("{epochs:.0}") } else { format!("{epochs:.2}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use critbench_storage::tables::{OutcomeRow, OutcomeWriter};

    /// Writes `rows` as an outcomes file in `dir`, summarizes it, and returns the power rows.
    fn power_of(dir: &Path, rows: &[OutcomeRow]) -> Vec<PowerRow> {
        let path = dir.join("outcomes.parquet");
        let mut writer = OutcomeWriter::create(&path).unwrap();
        for row in rows {
            writer.push(row.clone()).unwrap();
        }
        writer.close().unwrap();
        crate::summarize_file(&path, None).unwrap().power
    }

    fn loop_row(task: &str, arm: &str, epoch: u32, passed: bool) -> OutcomeRow {
        OutcomeRow { epoch, ..OutcomeRow::bare(task, arm, passed, 1) }
    }

    #[test]
    fn each_comparison_gets_its_split_from_the_epochs_both_arms_ran() {
        let dir = tempfile::tempdir().unwrap();
        let mut rows = Vec::new();
        // Three tasks × two epochs, as the stats crate's worked example: differences (1, 1),
        // (1, −1), (0, −1); the third task's B also ran an epoch A did not, which is not a pair.
        for (task, epochs) in [
            ("a", [(true, false), (true, false)]),
            ("b", [(true, false), (false, true)]),
            ("c", [(false, false), (false, true)]),
        ] {
            for (epoch, (a, b)) in epochs.into_iter().enumerate() {
                rows.push(loop_row(task, "feedback", epoch as u32, a));
                rows.push(loop_row(task, "no-feedback", epoch as u32, b));
            }
        }
        rows.push(loop_row("c", "no-feedback", 2, true));
        let power = power_of(dir.path(), &rows);
        assert_eq!(power.len(), 1);
        let row = &power[0];
        assert_eq!(
            (row.arm_a.as_str(), row.arm_b.as_str(), row.n_tasks, row.epochs),
            ("feedback", "no-feedback", 3, 2.0)
        );
        assert!((row.diff - 1.0 / 6.0).abs() < 1e-15);
        assert!((row.epoch_variance.unwrap() - 2.5 / 3.0).abs() < 1e-15);
        assert!((row.task_variance.unwrap() - (7.0 / 12.0 - 2.5 / 6.0)).abs() < 1e-15);
        let test = Test::default();
        assert!((row.mde - test.multiplier() * row.se).abs() < 1e-15);
        assert!(row.mde_twice_tasks < row.mde && row.mde_twice_epochs.unwrap() < row.mde);
        assert!(row.mde_unlimited_epochs.unwrap() < row.mde_twice_epochs.unwrap());
        assert!(row.tasks_for_5pp.unwrap() > row.tasks_for_10pp.unwrap());
        assert_eq!(row.advice, "more epochs");
    }

    #[test]
    fn one_epoch_gives_no_split_and_one_task_no_row() {
        let dir = tempfile::tempdir().unwrap();
        let rows: Vec<OutcomeRow> = (0..10)
            .flat_map(|t| {
                let task = format!("t{t}");
                [loop_row(&task, "feedback", 0, t % 2 == 0), loop_row(&task, "no-feedback", 0, t % 5 == 0)]
            })
            .collect();
        let power = power_of(dir.path(), &rows);
        let row = &power[0];
        assert_eq!((row.n_tasks, row.epochs, row.task_variance, row.epoch_share), (10, 1.0, None, None));
        assert_eq!(
            (row.mde_twice_epochs, row.advice.as_str()),
            (None, "more tasks; 2+ epochs would split the variance")
        );
        // Without a split the MDE rests on the tasks' means alone.
        let means: Vec<f64> =
            (0..10).map(|t| f64::from(u8::from(t % 2 == 0)) - f64::from(u8::from(t % 5 == 0))).collect();
        let mean = means.iter().sum::<f64>() / 10.0;
        let variance = means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / 9.0;
        assert!((row.se - (variance / 10.0).sqrt()).abs() < 1e-15);
        let dir = tempfile::tempdir().unwrap();
        assert!(power_of(dir.path(), &rows[..2]).is_empty(), "one task: nothing to estimate a variance from");
        // Then power.csv is its header alone, the same columns as with rows.
        write_file(dir.path(), &[]).unwrap();
        let empty = std::fs::read_to_string(dir.path().join("power.csv")).unwrap();
        write_file(dir.path(), &power.iter().collect::<Vec<_>>()).unwrap();
        let full = std::fs::read_to_string(dir.path().join("power.csv")).unwrap();
        assert_eq!(empty.lines().collect::<Vec<_>>(), [full.lines().next().unwrap()]);
        assert!(
            empty.starts_with("config_id,critic,judge,arm_a,arm_b,n_tasks,epochs,diff,se,")
                && empty.ends_with(",advice\n")
        );
    }

    #[test]
    fn the_section_lists_every_comparison_with_its_advice() {
        let row = PowerRow {
            config_id: "p8".into(),
            critic: "rubric".into(),
            arm_a: "feedback".into(),
            arm_b: "no-feedback".into(),
            n_tasks: 240,
            epochs: 3.0,
            diff: 0.301,
            mde: 0.0523,
            task_variance: Some(0.0),
            epoch_variance: Some(0.2514),
            epoch_share: Some(1.0),
            tasks_for_5pp: Some(264),
            tasks_for_10pp: Some(66),
            advice: "more epochs".into(),
            ..PowerRow::default()
        };
        let section = markdown_section(std::slice::from_ref(&row));
        assert!(section.starts_with("\n## How many tasks a question needs\n\n"), "{section}");
        assert!(
            section.ends_with(
                "| p8 | rubric | feedback vs no-feedback | 240 × 3 | +30.1 pp | 5.2 pp | 264 / 66 | 0.0000 / 0.2514 | 100% | more epochs |\n"
            ),
            "{section}"
        );
        assert_eq!(markdown_section(&[]), "");
        let mut html = String::new();
        crate::html::power::section(&mut html, &[&PowerRow { config_id: "<p8>".into(), epochs: 2.5, ..row }]);
        assert!(html.contains("<td>&lt;p8&gt;</td>") && html.contains("240 × 2.50"), "{html}");
    }
}
