//! `judge.md`, and the tables `critbench judge` prints.

use std::fmt::Write;

use crate::JudgeReport;
use crate::metrics::{CriticMetrics, FlawRow, THRESHOLD_STEP};

pub(crate) fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_string(), |v| format!("{:.1}%", 100.0 * v))
}

fn with_interval(value: Option<f64>, lo: Option<f64>, hi: Option<f64>, show: fn(f64) -> String) -> String {
    match (value, lo, hi) {
        (None, _, _) => "—".to_string(),
        // A dash between signed numbers ("-0.23–0.01") misreads; say "to".
        (Some(v), Some(lo), Some(hi)) if lo < 0.0 => format!("{} ({} to {})", show(v), show(lo), show(hi)),
        (Some(v), Some(lo), Some(hi)) => format!("{} ({}–{})", show(v), show(lo), show(hi)),
        (Some(v), _, _) => show(v),
    }
}

fn pct(v: f64) -> String {
    format!("{:.1}%", 100.0 * v)
}

fn two(v: f64) -> String {
    format!("{v:.2}")
}

fn short(v: f64) -> String {
    // Thresholds and score bands: `8`, `7.5`.
    format!("{v}")
}

fn p_value(p: f64) -> String {
    if p < 0.0001 { "< 0.0001".to_string() } else { format!("{p:.4}") }
}

/// The metrics of every critic, one column per critic: rows are metrics, false passes first.
pub fn side_by_side(report: &JudgeReport) -> String {
    let critics = &report.critics;
    let mut out = String::new();
    let _ = write!(out, "| metric |");
    for c in critics {
        let _ = write!(out, " {} |", c.critic);
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(critics.len()));
    out.push('\n');
    type Cell = fn(&CriticMetrics) -> String;
    let rows: [(&str, Cell); 18] = [
        ("plugin (score range)", |c| format!("{} {} ({}–{})", c.plugin, c.plugin_version, c.score_min, c.score_max)),
        ("drafts (judgments)", |c| format!("{} ({})", c.drafts, c.judgments)),
        ("gold pass / gold fail", |c| format!("{} / {}", c.gold_pass, c.gold_fail)),
        ("**false-pass rate** (gold fail judged pass)", |c| {
            format!(
                "**{}** · {} of {}",
                with_interval(c.false_pass_rate, c.false_pass_rate_lo, c.false_pass_rate_hi, pct),
                c.false_pass,
                c.gold_fail
            )
        }),
        ("false-fail rate (gold pass judged fail)", |c| {
            format!(
                "{} · {} of {}",
                with_interval(c.false_fail_rate, c.false_fail_rate_lo, c.false_fail_rate_hi, pct),
                c.false_fail,
                c.gold_pass
            )
        }),
        ("accuracy", |c| with_interval(c.accuracy, c.accuracy_lo, c.accuracy_hi, pct)),
        ("precision of pass", |c| with_interval(c.precision, c.precision_lo, c.precision_hi, pct)),
        ("recall of pass", |c| with_interval(c.recall, c.recall_lo, c.recall_hi, pct)),
        ("Cohen's κ", |c| with_interval(c.kappa, c.kappa_lo, c.kappa_hi, two)),
        ("Spearman ρ with gold score", |c| with_interval(c.spearman, c.spearman_lo, c.spearman_hi, two)),
        ("Kendall τ-b with gold score", |c| with_interval(c.kendall, c.kendall_lo, c.kendall_hi, two)),
        ("fatal-issue recall (gold fatal flagged fatal)", |c| {
            format!(
                "{} · {} of {}",
                with_interval(c.fatal_recall, c.fatal_recall_lo, c.fatal_recall_hi, pct),
                c.fatal_flagged,
                c.gold_fatal
            )
        }),
        ("fatal-issue precision", |c| percent(c.fatal_precision)),
        ("score spread across repeats (mean SD · max range)", |c| match (c.score_sd_mean, c.score_range_max) {
            (Some(sd), Some(range)) => format!("{sd:.2} · {range:.2}"),
            _ => format!("— ({} repeat)", c.repeats),
        }),
        ("verdict flips across repeats", |c| match c.verdict_flip_rate {
            Some(rate) => pct(rate),
            None => format!("— ({} repeat)", c.repeats),
        }),
        ("critique errors (no verdict: left out of every rate)", |c| {
            format!(
                "{} · {} of {} · {} of {} drafts left out",
                with_interval(c.critic_error_rate, c.critic_error_rate_lo, c.critic_error_rate_hi, pct),
                c.critic_errors,
                c.judgments,
                c.error_drafts,
                c.drafts
            )
        }),
        ("mean attempts per critique", |c| c.mean_attempts.map_or("—".into(), two)),
        ("latency p50 / p90 / p99", |c| {
            let ms = |v: Option<f64>| v.map_or("—".into(), |v| format!("{v:.3}"));
            format!("{} / {} / {} ms", ms(c.latency_p50_ms), ms(c.latency_p90_ms), ms(c.latency_p99_ms))
        }),
    ];
    for (label, cell) in rows {
        let _ = write!(out, "| {label} |");
        for c in critics {
            let _ = write!(out, " {} |", cell(c));
        }
        out.push('\n');
    }
    out
}

/// Critics compared on the drafts both judged.
pub fn pair_table(report: &JudgeReport) -> String {
    let mut out = String::new();
    out.push_str(
        "| A vs B | drafts | accuracy A | accuracy B | A − B (95% CI) | only A right | only B right | p (test) | false-pass A / B |\n",
    );
    out.push_str("|---|---:|---:|---:|---|---:|---:|---:|---|\n");
    for p in &report.pairs {
        let _ = writeln!(
            out,
            "| {} vs {} | {} | {} | {} | {:+.1} pp ({:+.1} to {:+.1}) | {} | {} | {} ({}) | {} / {} |",
            p.critic_a,
            p.critic_b,
            p.n_pairs,
            pct(p.accuracy_a),
            pct(p.accuracy_b),
            100.0 * p.diff,
            100.0 * p.diff_lo,
            100.0 * p.diff_hi,
            p.a_only,
            p.b_only,
            p_value(p.p_value),
            p.test,
            percent(p.false_pass_rate_a),
            percent(p.false_pass_rate_b),
        );
    }
    out
}

fn kind_of_error(row: &FlawRow) -> &'static str {
    if row.gold_pass { "false fail" } else { "false pass" }
}

/// Per critic × kind × flaw: how many drafts were misjudged.
pub(crate) fn flaw_table(report: &JudgeReport) -> String {
    let mut out = String::new();
    out.push_str(
        "| critic | kind | flaw | gold | drafts | judged pass (judgments) | misjudged drafts | rate (95% CI) |\n",
    );
    out.push_str("|---|---|---|---|---:|---:|---|---|\n");
    for f in &report.flaws {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} of {} | {} {} | {} ({}–{}) |",
            f.critic,
            f.kind,
            f.flaw,
            if f.gold_pass { "pass" } else { "fail" },
            f.drafts,
            f.judged_pass,
            f.judgments,
            f.misjudged,
            kind_of_error(f),
            pct(f.misjudged_rate),
            pct(f.misjudged_lo),
            pct(f.misjudged_hi),
        );
    }
    out
}

/// The sentences a reader should not miss, per critic: the critiques it failed on (left out of
/// its numbers), the kinds of gold-fail draft it never passed (with how sure that is), those it
/// did pass, and the gold-pass drafts it failed.
pub fn findings(report: &JudgeReport) -> Vec<String> {
    let mut lines = Vec::new();
    for critic in &report.critics {
        if critic.critic_errors > 0 {
            lines.push(errors_left_out(critic));
        }
        let rows: Vec<&FlawRow> = report.flaws.iter().filter(|f| f.critic == critic.critic).collect();
        let several_kinds = rows.iter().any(|f| f.kind != rows[0].kind);
        let name = |f: &FlawRow| {
            if several_kinds { format!("`{}` ({})", f.flaw, f.kind) } else { format!("`{}`", f.flaw) }
        };
        let never: Vec<String> = rows
            .iter()
            .filter(|f| !f.gold_pass && f.misjudged == 0)
            .map(|f| format!("{} (0 of {}; 95% CI 0.0–{:.1}%)", name(f), f.drafts, 100.0 * f.misjudged_hi))
            .collect();
        if !never.is_empty() {
            lines.push(format!(
                "`{}` passed none of these gold-fail drafts, false-pass rate 0: {}.",
                critic.critic,
                never.join(", ")
            ));
        }
        let mut wrong: Vec<&&FlawRow> = rows.iter().filter(|f| f.misjudged > 0).collect();
        wrong.sort_by(|a, b| a.gold_pass.cmp(&b.gold_pass).then(b.misjudged_rate.total_cmp(&a.misjudged_rate)));
        for (gold_pass, verb) in [(false, "passed gold-fail drafts"), (true, "failed gold-pass drafts")] {
            let listed: Vec<String> = wrong
                .iter()
                .filter(|f| f.gold_pass == gold_pass)
                .map(|f| format!("{} {} of {} ({:.1}%)", name(f), f.misjudged, f.drafts, 100.0 * f.misjudged_rate))
                .collect();
            if !listed.is_empty() {
                lines.push(format!("`{}` {verb}: {}.", critic.critic, listed.join(", ")));
            }
        }
    }
    lines
}

/// What a critic's failed critiques did to its numbers: nothing, as they are no verdicts.
fn errors_left_out(critic: &CriticMetrics) -> String {
    let partly = critic.drafts - critic.error_drafts;
    format!(
        "`{}` failed on {} of its {} critiques ({} of {} drafts got no verdict at all): an error is no verdict, so \
         they are left out of its rates, which are over the {} drafts it judged (`critic_errors` and `error_drafts` \
         in judge.csv; `critic_error` in judgments.parquet says why).",
        critic.critic, critic.critic_errors, critic.judgments, critic.error_drafts, critic.drafts, partly
    )
}

fn threshold_table(report: &JudgeReport) -> String {
    let mut thresholds: Vec<f64> = report.thresholds.iter().map(|t| t.pass_score).collect();
    thresholds.sort_by(f64::total_cmp);
    thresholds.dedup();
    let mut out = String::from("| pass_score |");
    for c in &report.critics {
        let _ = write!(out, " {} false pass · false fail |", c.critic);
    }
    out.push_str("\n|---:|");
    out.push_str(&"---|".repeat(report.critics.len()));
    out.push('\n');
    for t in thresholds {
        let current = report.thresholds.iter().any(|r| r.pass_score == t && r.current);
        let label = if current { format!("**{}** (current)", short(t)) } else { short(t) };
        let _ = write!(out, "| {label} |");
        for c in &report.critics {
            match report.thresholds.iter().find(|r| r.critic == c.critic && r.pass_score == t) {
                Some(r) => {
                    let _ = write!(out, " {} · {} |", percent(r.false_pass_rate), percent(r.false_fail_rate));
                }
                None => out.push_str(" |"),
            }
        }
        out.push('\n');
    }
    out
}

fn calibration_table(report: &JudgeReport) -> String {
    let mut out = String::from("| critic | score band | judgments | gold pass share | mean score |\n");
    out.push_str("|---|---|---:|---:|---:|\n");
    for b in report.calibration.iter().filter(|b| b.judgments > 0) {
        let _ = writeln!(
            out,
            "| {} | [{}, {}{} | {} | {} | {} |",
            b.critic,
            two(b.score_lo),
            two(b.score_hi),
            if b.bin + 1 == crate::metrics::CALIBRATION_BINS { "]" } else { ")" },
            b.judgments,
            percent(b.gold_pass_rate),
            b.mean_score.map_or("—".into(), two),
        );
    }
    out
}

/// The whole `judge.md`.
pub(crate) fn render(report: &JudgeReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# critbench judge: {}\n", report.name);
    let drafts: usize = report.datasets.iter().map(|d| d.labeled_drafts).sum();
    let files: Vec<String> = report.datasets.iter().map(|d| format!("`{}`", d.path.display())).collect();
    let _ = writeln!(
        out,
        "Run `{}`: {} labeled drafts from {}, {} repeat(s) per critic and draft. Verdicts follow the pass \
         rule of config `{}` (pass_score {}{}): no fatal issue, score ≥ pass_score — the host decides, not the \
         critic. A failed critique is no verdict (in judgments.parquet it is the fail a loop would take): it is left \
         out of every rate and table below but the critique errors, where it is counted. Rates count judgments \
         with a verdict; intervals are 95% bootstrap intervals over drafts ({} resamples) — for a rate of \
         exactly 0 or 1, Wilson's over drafts (Clopper–Pearson's exact one on 30 drafts or fewer) — unless \
         noted.\n",
        report.run_id,
        drafts,
        files.join(", "),
        report.repeats,
        report.policy.config_id,
        report.policy.pass_score,
        report.policy.dim_target.map(|d| format!(", dim_target {d}")).unwrap_or_default(),
        report.bootstrap_resamples,
    );
    if !report.notes.is_empty() {
        out.push_str("Notes:\n\n");
        for note in &report.notes {
            let _ = writeln!(out, "- {note}");
        }
        out.push('\n');
    }
    out.push_str("## Findings\n\n");
    for line in findings(report) {
        let _ = writeln!(out, "- {line}");
    }
    out.push_str("\n## Critics side by side\n\n");
    out.push_str(&side_by_side(report));
    out.push_str("\n## Critic vs critic\n\n");
    out.push_str(
        "Each pair on the drafts both critics judged, first repeat of each: accuracy, the 95% interval of the \
         difference valid at the number of drafts (a bootstrap over drafts with more than 30 and at least 10 judged \
         right by one critic only, an exact interval with fewer), and its dual test (McNemar's exact test on the \
         drafts only one critic judged right, when they are fewer than 10).\n\n",
    );
    if report.pairs.is_empty() {
        out.push_str("(No two critics judged the same draft.)\n");
    } else {
        out.push_str(&pair_table(report));
    }
    out.push_str("\n## By kind of draft\n\n");
    out.push_str(
        "Drafts grouped by task kind and the label's `flaw`. A draft counts as misjudged when any of its \
         repeats got the wrong verdict — a false pass for a gold fail, a false fail for a gold pass. \
         Intervals are 95% over drafts: Wilson's, or Clopper–Pearson's exact one on 30 drafts or fewer.\n\n",
    );
    out.push_str(&flaw_table(report));
    out.push_str("\n## Threshold sweep\n\n");
    let _ = writeln!(
        out,
        "False-pass and false-fail rates had the critic been run under another `pass_score` (steps of {}), \
         same rule otherwise. Pick the threshold from this table.\n",
        THRESHOLD_STEP
    );
    out.push_str(&threshold_table(report));
    out.push_str("\n## Calibration\n\n");
    out.push_str("Share of gold passes among the judgments with a verdict whose critic score fell in each band.\n\n");
    out.push_str(&calibration_table(report));
    out
}
