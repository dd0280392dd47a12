//! `report.md` and the table printed after a run.

use std::fmt::Write;

use crate::{ComparisonRow, Report};

fn percent(value: f64) -> String {
    format!("{:.1}%", 100.0 * value)
}

/// One line per config × critic: each arm's pass rate, and the headline comparison. What a
/// terminal shows after a run.
pub fn glance_table(report: &Report) -> String {
    let mut arms: Vec<&str> = Vec::new();
    for row in &report.summary {
        if !arms.contains(&row.arm.as_str()) {
            arms.push(&row.arm);
        }
    }
    let mut out = String::from("| config | critic |");
    for arm in &arms {
        let _ = write!(out, " {arm} |");
    }
    out.push_str(" paired difference (95% CI) | McNemar p |\n|---|---|");
    out.push_str(&"---:|".repeat(arms.len()));
    out.push_str("---|---:|\n");
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for row in &report.summary {
        if !groups.contains(&(row.config_id.as_str(), row.critic.as_str())) {
            groups.push((&row.config_id, &row.critic));
        }
    }
    for (config, critic) in groups {
        let _ = write!(out, "| {config} | {critic} |");
        for arm in &arms {
            match report.summary.iter().find(|r| r.config_id == config && r.critic == critic && r.arm == *arm) {
                Some(row) => {
                    let _ = write!(out, " {} |", percent(row.pass_rate));
                }
                None => out.push_str(" – |"),
            }
        }
        let comparisons: Vec<_> =
            report.comparisons.iter().filter(|c| c.config_id == config && c.critic == critic).collect();
        // Memory against plain feedback when the run has the memory arm, else feedback against
        // the next arm; pairs come in reading order, so the first match is the one.
        let chosen =
            comparisons.iter().find(|c| c.arm_a == "feedback+memory" || c.arm_a == "feedback").or(comparisons.first());
        match chosen {
            Some(c) => {
                let _ = writeln!(
                    out,
                    " {} − {}: {:+.1} pp ({:+.1} to {:+.1}) | {} |",
                    c.arm_a,
                    c.arm_b,
                    100.0 * c.diff,
                    100.0 * c.diff_lo,
                    100.0 * c.diff_hi,
                    format_p(c.mcnemar_p)
                );
            }
            None => out.push_str(" – | – |\n"),
        }
    }
    out
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
    if !report.notes.is_empty() {
        out.push_str("\n## Notes\n\n");
        for note in &report.notes {
            let _ = writeln!(out, "- {note}");
        }
    }
    out
}
