//! The "Corrected by gold labels" section of `report.md`, and the cells and sentences the page's
//! (`html/corrected.rs`) shares with it.

use std::fmt::Write;

use super::{Corrected, CorrectedComparison, CorrectedRow};

pub(crate) fn percent(value: f64) -> String {
    format!("{:.1}%", 100.0 * value)
}

pub(crate) fn points(value: f64) -> String {
    format!("{:+.1} pp", 100.0 * value)
}

/// What the section says before its tables (markdown; the page drops the backticks' meaning).
pub(crate) fn introduction(corrected: &Corrected) -> String {
    format!(
        "{} answers (standing for {} loops) of {} tasks were labelled by hand: `{}`, the sample `critbench sample` drew \
         with seed {}. The critic's pass rate is what the critic that steered the loops passed. The corrected rate is \
         the prediction-powered estimate (PPI++) of the share gold passes: the critic's verdicts on every task, \
         corrected by how far they are from gold on the labelled ones, with a 95% interval that does not trust the \
         critic (tasks are the units, so epochs count once). That interval is valid on many labelled tasks: with 30 \
         or fewer, or fewer than 10 on a side (labels all true, or arms that differ on fewer than 10 labelled \
         tasks), the corrected figure is the labels' own, with the small-sample interval of the summary tables \
         (`method` in corrected.csv). A false pass is an answer gold fails that the critic passed (the share is of \
         the answers gold fails); a false fail one gold passes that it failed.",
        corrected.answers,
        corrected.loops,
        corrected.tasks,
        // The file's name alone: the report must not depend on where it was run from.
        corrected
            .labels_file
            .file_name()
            .map_or_else(|| corrected.labels_file.display().to_string(), |n| n.to_string_lossy().into_owned()),
        corrected.seed
    )
}

/// "–" for a value that could not be computed.
pub(crate) fn or_dash(value: Option<String>) -> String {
    value.unwrap_or_else(|| "–".to_string())
}

fn corrected_cell(row: &CorrectedRow) -> Option<String> {
    Some(format!(
        "{} ({} to {})",
        percent(row.pass_rate_corrected?),
        percent(row.corrected_lo?),
        percent(row.corrected_hi?)
    ))
}

pub(crate) fn error_cell(rate: Option<f64>, lo: Option<f64>, hi: Option<f64>, count: u64, of: u64) -> Option<String> {
    Some(format!("{} ({}–{}; {count} of {of})", percent(rate?), percent(lo?), percent(hi?)))
}

pub(crate) fn difference_cell(row: &CorrectedComparison) -> Option<String> {
    Some(format!("{} ({} to {})", points(row.diff_corrected?), points(row.diff_lo?), points(row.diff_hi?)))
}

/// The rows whose correction is missing, said once.
pub(crate) fn too_few(corrected: &Corrected) -> bool {
    corrected.rows.iter().any(|r| r.pass_rate_corrected.is_none())
        || corrected.comparisons.iter().any(|c| c.diff_corrected.is_none())
}

pub(crate) const TOO_FEW: &str = "A dash: no labelled task in that row, nothing to say how far the critic is off; \
                       sample more tasks.";

/// The section of `report.md`.
pub(crate) fn markdown_section(corrected: &Corrected) -> String {
    let mut out = String::from("\n## Corrected by gold labels\n\n");
    out.push_str(&introduction(corrected));
    out.push_str("\n\n");
    out.push_str(
        "| config | critic | arm | labelled | critic pass rate | gold, labelled | corrected (95% CI) | false pass | \
         false fail |\n|---|---|---|---:|---:|---:|---|---|---|\n",
    );
    for row in &corrected.rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} of {} tasks | {} | {} | {} | {} | {} |",
            row.config_id,
            row.critic,
            row.arm,
            row.n_tasks_labelled,
            row.n_tasks,
            percent(row.pass_rate),
            or_dash(row.gold_pass_rate.map(percent)),
            or_dash(corrected_cell(row)),
            or_dash(error_cell(
                row.false_pass_rate,
                row.false_pass_rate_lo,
                row.false_pass_rate_hi,
                row.false_pass,
                row.gold_fail
            )),
            or_dash(error_cell(
                row.false_fail_rate,
                row.false_fail_rate_lo,
                row.false_fail_rate_hi,
                row.false_fail,
                row.gold_pass
            )),
        );
    }
    if !corrected.comparisons.is_empty() {
        out.push_str(
            "\nThe paired differences, corrected the same way (each task's mean difference over the epochs both arms \
             ran):\n\n| config | critic | A − B | labelled | critic's difference | gold, labelled | corrected (95% CI) \
             |\n|---|---|---|---:|---:|---:|---|\n",
        );
        for row in &corrected.comparisons {
            let _ = writeln!(
                out,
                "| {} | {} | {} − {} | {} of {} tasks | {} | {} | {} |",
                row.config_id,
                row.critic,
                row.arm_a,
                row.arm_b,
                row.n_tasks_labelled,
                row.n_tasks,
                points(row.diff),
                or_dash(row.gold_diff.map(points)),
                or_dash(difference_cell(row)),
            );
        }
    }
    if too_few(corrected) {
        let _ = writeln!(out, "\n{TOO_FEW}");
    }
    out
}
