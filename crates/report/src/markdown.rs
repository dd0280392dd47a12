//! `report.md` and the table printed after a run.

use std::fmt::Write;

use crate::{ComparisonRow, Report};

fn percent(value: f64) -> String {
    format!("{:.1}%", 100.0 * value)
}

/// The per-arm table: pass rate with its interval, rounds, exits.
pub fn summary_table(report: &Report) -> String {
    let mut out = String::new();
    out.push_str("| config | critic | arm | n | pass rate (95% CI) | mean rounds | pass | stall | plateau | budget | first → best score |\n");
    out.push_str("|---|---|---|---:|---|---:|---:|---:|---:|---:|---|\n");
    for row in &report.summary {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} ({}–{}) | {:.2} | {} | {} | {} | {} | {:.2} → {:.2} |",
            row.config_id,
            row.critic,
            row.arm,
            row.n,
            percent(row.pass_rate),
            percent(row.pass_rate_lo),
            percent(row.pass_rate_hi),
            row.mean_rounds,
            row.exit_pass,
            row.exit_stall,
            row.exit_plateau,
            row.exit_budget,
            row.mean_first_score,
            row.mean_best_score,
        );
    }
    out
}

fn comparison_table(report: &Report) -> String {
    let mut out = String::new();
    out.push_str(
        "| config | critic | A vs B | pairs | pass A | pass B | A − B (95% CI) | A only | B only | McNemar p | rounds A / B | best score A / B |\n",
    );
    out.push_str("|---|---|---|---:|---:|---:|---|---:|---:|---:|---|---|\n");
    for row in &report.comparisons {
        out.push_str(&comparison_line(row));
    }
    out
}

/// One row of a comparison table.
pub(crate) fn comparison_line(row: &ComparisonRow) -> String {
    format!(
        "| {} | {} | {} vs {} | {} | {} | {} | {:+.1} pp ({:+.1} to {:+.1}) | {} | {} | {} | {:.2} / {:.2} | {:.2} / {:.2} |\n",
        row.config_id,
        row.critic,
        row.arm_a,
        row.arm_b,
        row.n_pairs,
        percent(row.pass_rate_a),
        percent(row.pass_rate_b),
        100.0 * row.diff,
        100.0 * row.diff_lo,
        100.0 * row.diff_hi,
        row.a_only,
        row.b_only,
        format_p(row.mcnemar_p),
        row.mean_rounds_a,
        row.mean_rounds_b,
        row.mean_best_score_a,
        row.mean_best_score_b,
    )
}

fn format_p(p: f64) -> String {
    if p < 0.0001 { "< 0.0001".to_string() } else { format!("{p:.4}") }
}

/// The whole `report.md`.
pub fn render_markdown(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# critbench report: {}\n", report.name.as_deref().unwrap_or("run"));
    if let Some(run_id) = &report.run_id {
        let _ = writeln!(out, "Run `{run_id}`.\n");
    }
    out.push_str("## Pass rate, rounds and exits per arm\n\n");
    out.push_str("A loop passes when its exit is `pass`. Intervals are Wilson 95%. Rounds count critiques ");
    out.push_str("(round 0 is the first draft).\n\n");
    out.push_str(&summary_table(report));
    out.push_str("\n## Paired comparisons\n\n");
    out.push_str("Arms compared on the same task × epoch. The interval of the difference is a paired ");
    out.push_str("bootstrap (2,000 resamples); the p-value is McNemar's exact test on the pairs where ");
    out.push_str("only one arm passed.\n\n");
    if report.comparisons.is_empty() {
        out.push_str("(Only one arm ran: nothing to compare.)\n");
    } else {
        out.push_str(&comparison_table(report));
    }
    out
}
