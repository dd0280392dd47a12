//! The answer of a run, first and on one screen: per critic, at the best config by the lead judge
//! (the most independent one the run has, [`crate::judges::lead`]), whether feedback beats blind
//! revision, whether it is ahead of resampling at equal cost, where the gain comes from (the
//! ladder of arms, [`crate::ladder`]), where the steering critic and the judge disagree, what one passed answer costs in each arm, and which config to ship; then every
//! config by that judge. The terminal prints it; `report.md` opens with it.

use std::fmt::Write as _;

use critbench_core::Arm;

use crate::Report;
use crate::format::{difference_cell, format_p};
use crate::headline::{Headline, critic_errors_of, error_rate, headline_cells};
use crate::judges::{CRITIC, Reading, describe};
use crate::rows::SummaryRow;
use crate::spend::CostComparisonRow;

/// The most config × critic rows the terminal's table lists, shared among the critics; each
/// critic's best configs by the lead judge's first arm are shown.
pub(crate) const TABLE_ROWS: usize = 10;

/// The arms of `critic`'s rows in `reading`, in reading order (adjudicated twins left out).
fn arms_of<'a>(reading: Reading<'a>, critic: &str) -> Vec<&'a str> {
    let mut arms: Vec<&str> = Vec::new();
    for row in reading.summary.rows.iter().filter(|r| r.critic == critic) {
        if !arms.contains(&row.arm.as_str()) && Arm::parse(&row.arm).is_some() {
            arms.push(&row.arm);
        }
    }
    arms
}

/// The config to ship for `critic` by `reading`: the row of the config × arm whose pass rate is
/// highest, the fewer mean rounds on a tie. Not an `oracle` row: that arm's reviser reads a critique
/// by one who knows the answer, which nothing shipped has.
fn best<'a>(reading: Reading<'a>, critic: &str) -> Option<&'a SummaryRow> {
    let shippable = |arm: &str| Arm::parse(arm).is_some_and(|arm| arm != Arm::Oracle);
    reading
        .summary
        .rows
        .iter()
        .filter(|r| r.critic == critic && shippable(&r.arm) && r.n > 0)
        .max_by(|a, b| a.pass_rate.total_cmp(&b.pass_rate).then(b.mean_rounds.total_cmp(&a.mean_rounds)))
}

/// The critics of the run, in the summary's order.
fn critics(report: &Report) -> Vec<&str> {
    crate::format::unique(report.summary.rows.iter().map(|r| r.critic.as_str()))
}

/// The answer's lines: a heading sentence, then per critic its lines (each indented), then the
/// table of every config by the lead judge. Every line is plain text of at most 160 characters.
pub fn lines(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    let critics = critics(report);
    let leads: Vec<Reading> = critics.iter().map(|c| Reading::lead(report, c)).collect();
    let judges = crate::format::unique(leads.iter().map(|r| r.judge));
    let named = judges.iter().map(|j| describe(j)).collect::<Vec<_>>().join("; ");
    out.push(format!(
        "The answer, by {named}. \"by the critic\" is the steering critic's verdict on the same answers."
    ));
    for (critic, reading) in critics.iter().zip(&leads) {
        out.push(String::new());
        critic_lines(&mut out, report, critic, *reading);
    }
    out.push(String::new());
    table_lines(&mut out, report, &critics, &leads);
    out
}

/// What is said of one critic's loops: its best config by the lead judge and the answer there.
fn critic_lines(out: &mut Vec<String>, report: &Report, critic: &str, reading: Reading<'_>) {
    let critic_reading = Reading::critic(report);
    let Some(best) = best(reading, critic) else {
        out.push(format!("{critic}: no loop was judged by {}", reading.short()));
        return;
    };
    let config = best.config_id.as_str();
    let epochs = if best.n_tasks > 0 { best.n as f64 / best.n_tasks as f64 } else { 0.0 };
    out.push(format!(
        "{critic} ({} tasks × {} epochs): ship {config} with {} ({} by {}, {:.1} rounds a loop)",
        best.n_tasks,
        trim_number(epochs),
        best.arm,
        percent(best.pass_rate),
        reading.short(),
        best.mean_rounds
    ));
    let arms = arms_of(reading, critic);
    let rates: Vec<String> = arms
        .iter()
        .filter_map(|arm| reading.row(config, critic, arm).map(|r| format!("{arm} {}", percent(r.pass_rate))))
        .collect();
    out.push(format!("  {config}, pass rate by {}: {}", reading.short(), rates.join(" · ")));
    let (feedback, no_feedback, resample) = (Arm::Feedback.as_str(), Arm::NoFeedback.as_str(), Arm::Resample.as_str());
    let measured = match critic_reading.comparison(config, critic, feedback, no_feedback) {
        Some(c) => match headline_cells(report, c) {
            Headline::Measured { shared } => Some(shared),
            Headline::NotMeasured(why) => {
                out.push(format!("  feedback − no-feedback {why}"));
                None
            }
        },
        None => Some(String::new()),
    };
    if let (Some(shared), Some(c)) = (&measured, reading.comparison(config, critic, feedback, no_feedback)) {
        let mut line =
            format!("  feedback − no-feedback {}{shared}", comparison_text(c.diff, c.diff_lo, c.diff_hi, c.p_value));
        if c.p_value.is_some() {
            let _ = write!(line, " ({})", c.test);
        }
        if reading.judge != CRITIC
            && let Some(by_critic) = critic_reading.comparison(config, critic, feedback, no_feedback)
        {
            let _ = write!(line, "; by the critic {:+.1} pp", 100.0 * by_critic.diff);
        }
        out.push(line);
    }
    if let (Some(_), Some(c)) = (&measured, equal_cost(reading, config, critic, feedback, resample)) {
        let currency = report.summary.currency.as_deref();
        out.push(format!(
            "  feedback − resample at equal spend: {}; per loop {}",
            comparison_text(c.diff, c.diff_lo, c.diff_hi, c.p_value),
            crate::spend::spends_text(c, currency)
        ));
    }
    let steps: Vec<crate::ladder::LadderRow> = crate::ladder::of_summary(reading.summary)
        .into_iter()
        .filter(|s| s.config_id == config && s.critic == critic)
        .collect();
    // With single, no-feedback and feedback alone the lines above already say each step.
    let beyond = steps.iter().any(|s| [Arm::Placebo.as_str(), Arm::Oracle.as_str()].contains(&s.to_arm.as_str()));
    if let Some(first) = steps.first().filter(|_| beyond) {
        let mut line = format!("  where the gain comes from (pp, {}): {}", reading.short(), first.from_arm);
        for step in &steps {
            // Rounded before it is signed: `+0.0`, never `-0.0`.
            let _ = write!(line, " → {} {:+.1}", step.to_arm, (1000.0 * step.diff).round() / 10.0 + 0.0);
            match step.p_value {
                None => line.push_str(" (by design)"),
                Some(p) if p >= 0.05 => {
                    let _ = write!(line, " (p = {})", format_p(p));
                }
                Some(_) => {}
            }
        }
        line.push_str("; p < 0.05 unless shown");
        out.push(line);
    }
    if reading.judge != CRITIC {
        let inflation: Vec<String> = arms
            .iter()
            .filter_map(|arm| {
                let (judged, by_critic) = (reading.row(config, critic, arm)?, critic_reading.row(config, critic, arm)?);
                Some(format!("{arm} {:+.1}", 100.0 * (by_critic.pass_rate - judged.pass_rate)))
            })
            .collect();
        let head = format!("  critic − {} pass rate, pp: ", reading.short());
        let mut line = crate::format::fit_line(&head, &inflation);
        let pleasing = report
            .evaluators
            .as_ref()
            .map(|evaluated| crate::evaluators::pleasing_answer(evaluated, config, critic, reading.judge));
        if let Some((suffix, _)) = &pleasing {
            // On a line of its own when the two do not fit on one.
            if line.chars().count() + suffix.chars().count() <= crate::format::LINE_WIDTH {
                line.push_str(suffix);
            } else {
                out.push(std::mem::replace(&mut line, format!("  {}", suffix.trim_start_matches("; "))));
            }
        }
        out.push(line);
        // The pleasing gaps significant at this config, flagged or not.
        out.extend(pleasing.and_then(|(_, gaps)| gaps));
    }
    if let Some(line) =
        report.evaluators.as_ref().and_then(|evaluated| crate::evaluators::names_line(evaluated, config, critic))
    {
        out.push(line);
    }
    if let Some(evaluated) = report.evaluators.as_ref().filter(|_| reading.judge != CRITIC) {
        let of_group = |r: &&crate::evaluators::EvaluatorRow| {
            r.config_id == config && r.critic == critic && r.evaluator == reading.judge
        };
        let (errors, loops) = evaluated
            .rows
            .iter()
            .filter(of_group)
            .fold((0, 0), |(e, n), r| (e + r.evaluator_errors, n + r.n + r.evaluator_errors));
        if errors > 0 {
            out.push(format!(
                "  {} failed on {errors} of {loops} loops' answers (errors, not verdicts: left out of its rates)",
                reading.judge
            ));
        }
    }
    let rows: Vec<(&str, &SummaryRow)> =
        arms.iter().filter_map(|arm| Some((*arm, reading.row(config, critic, arm)?))).collect();
    // In money when every arm's loops were priced, else in rounds; the unit said once.
    let priced = rows.iter().all(|(_, row)| row.cost_total.is_some());
    let unit = if priced { report.summary.currency.as_deref().unwrap_or("money") } else { "rounds" };
    let costs: Vec<String> = rows.iter().map(|(arm, row)| format!("{arm} {}", cost_per_pass(row, priced))).collect();
    out.push(crate::format::fit_line(&format!("  spend per answer {} passes, {unit}: ", reading.short()), &costs));
}

/// What a passed answer costs in an arm: its spend over the answers the judge passed, in money
/// (`priced`) or rounds; `none passed` when the judge passed none.
fn cost_per_pass(row: &SummaryRow, priced: bool) -> String {
    if row.passed == 0 {
        return "none passed".to_string();
    }
    match row.cost_total.filter(|_| priced) {
        Some(total) => crate::format::money(total / row.passed as f64, None),
        None => format!("{:.1}", row.rounds_total as f64 / row.passed as f64),
    }
}

/// The comparison of `a` and `b` at the mean spend per loop of the one cheaper uncut, in money,
/// else tokens, else rounds.
fn equal_cost<'a>(reading: Reading<'a>, config: &str, critic: &str, a: &str, b: &str) -> Option<&'a CostComparisonRow> {
    let rows = reading.summary.spend.comparisons.iter().filter(|c| {
        c.config_id == config && c.critic == critic && c.arm_a == a && c.arm_b == b && crate::spend::is_uncut(c)
    });
    rows.min_by_key(|c| crate::spend::preference(&c.unit))
}

/// "+41.9 pp (+38.1 to +45.8), p < 0.0001".
fn comparison_text(diff: f64, lo: Option<f64>, hi: Option<f64>, p: Option<f64>) -> String {
    let mut text = difference_cell(diff, lo, hi);
    if let Some(p) = p {
        let p = format_p(p);
        let _ = write!(text, ", p {}", if p.starts_with('<') { p } else { format!("= {p}") });
    }
    text
}

/// Every config by the lead judges: each arm's pass rate and feedback − no-feedback with its
/// interval, the steering critic's difference beside it. A larger grid shows its best and worst
/// rows by the first arm's pass rate.
fn table_lines(out: &mut Vec<String>, report: &Report, critics: &[&str], leads: &[Reading<'_>]) {
    let mut arms: Vec<&str> = Vec::new();
    for (critic, reading) in critics.iter().zip(leads) {
        for arm in arms_of(*reading, critic) {
            if !arms.contains(&arm) {
                arms.push(arm);
            }
        }
    }
    let (feedback, no_feedback) = (Arm::Feedback.as_str(), Arm::NoFeedback.as_str());
    let compared = arms.contains(&feedback) && arms.contains(&no_feedback);
    let judges = crate::format::unique(leads.iter().map(|r| r.short()));
    out.push(format!("Every config by {}:", judges.join(" and ")));
    let mut header = String::from("| config | critic |");
    for arm in &arms {
        let _ = write!(header, " {arm} |");
    }
    if compared {
        header.push_str(" feedback − no-feedback (95% CI), p | by the critic |");
    }
    let errors = report.summary.rows.iter().any(|r| r.critic_errors > 0);
    if errors {
        header.push_str(" critic errors |");
    }
    out.push(header);
    out.push(format!(
        "|---|---|{}{}{}",
        "---:|".repeat(arms.len()),
        if compared { "---|---:|" } else { "" },
        if errors { "---:|" } else { "" }
    ));
    let mut groups: Vec<(&str, &str, Reading)> = Vec::new();
    for row in &report.summary.rows {
        let Some(index) = critics.iter().position(|c| *c == row.critic) else { continue };
        if !groups.iter().any(|(config, critic, _)| *config == row.config_id && *critic == row.critic) {
            groups.push((&row.config_id, &row.critic, leads[index]));
        }
    }
    let rate = |(config, critic, reading): &(&str, &str, Reading)| {
        arms.first().and_then(|arm| reading.row(config, critic, arm)).map_or(f64::NEG_INFINITY, |r| r.pass_rate)
    };
    // Per critic, its configs best first by the first arm's pass rate, as many as fit.
    let per_critic = (TABLE_ROWS / critics.len().max(1)).max(2);
    let mut shown: Vec<((&str, &str, Reading), usize)> = Vec::new();
    for critic in critics {
        let mut of_critic: Vec<usize> = (0..groups.len()).filter(|&i| groups[i].1 == *critic).collect();
        of_critic.sort_by(|&a, &b| rate(&groups[b]).total_cmp(&rate(&groups[a])).then(a.cmp(&b)));
        let left_out = of_critic.len().saturating_sub(per_critic);
        of_critic.truncate(per_critic);
        let last = of_critic.len().saturating_sub(1);
        shown.extend(of_critic.iter().enumerate().map(|(k, &i)| (groups[i], if k == last { left_out } else { 0 })));
    }
    for ((config, critic, reading), left_out) in shown {
        let mut line = format!("| {config} | {critic} |");
        for arm in &arms {
            match reading.row(config, critic, arm) {
                Some(row) => {
                    let _ = write!(line, " {} |", percent(row.pass_rate));
                }
                None => line.push_str(" – |"),
            }
        }
        if compared {
            let by_critic = Reading::critic(report).comparison(config, critic, feedback, no_feedback);
            let headline = by_critic.map(|c| headline_cells(report, c));
            match (reading.comparison(config, critic, feedback, no_feedback), headline) {
                (_, Some(Headline::NotMeasured(why))) => {
                    let _ = write!(line, " {why} | – |");
                }
                (Some(c), headline) => {
                    let shared = match headline {
                        Some(Headline::Measured { shared }) => shared,
                        _ => String::new(),
                    };
                    let by_critic = by_critic.map_or("–".to_string(), |c| format!("{:+.1} pp", 100.0 * c.diff));
                    let measured = comparison_text(c.diff, c.diff_lo, c.diff_hi, c.p_value);
                    let _ = write!(line, " {measured}{shared} | {by_critic} |");
                }
                (None, _) => line.push_str(" – | – |"),
            }
        }
        if errors {
            let (failed, rounds) = critic_errors_of(report, config, critic);
            let _ = write!(line, " {} |", error_rate(failed, rounds));
        }
        out.push(line);
        if left_out > 0 {
            out.push(format!(
                "| … | {critic}: {left_out} more config{} below these by {}; summary.csv has every judge's rows |",
                if left_out == 1 { "" } else { "s" },
                arms.first().copied().unwrap_or("")
            ));
        }
    }
}

fn percent(value: f64) -> String {
    format!("{:.1}%", 100.0 * value)
}

/// A whole number without its decimals, else one decimal.
fn trim_number(value: f64) -> String {
    if value.fract() == 0.0 { format!("{value:.0}") } else { format!("{value:.1}") }
}

/// The answer as `report.md` opens with it: [`lines`] under a heading, each critic's lines a list.
pub fn markdown(report: &Report) -> String {
    let mut out = String::from("## The answer\n\n");
    for line in lines(report) {
        if let Some(item) = line.strip_prefix("  ") {
            let _ = writeln!(out, "- {item}");
        } else if line.is_empty() {
            if !out.ends_with("\n\n") {
                out.push('\n');
            }
        } else if line.starts_with('|') {
            let _ = writeln!(out, "{line}");
        } else {
            let _ = writeln!(out, "{line}\n");
        }
    }
    out.push_str(
        "\nThe evidence follows: every arm by the steering critic, then what each held-out judge says of the same \
         answers; `summary.csv`, `comparisons.csv`, `cost_curves.csv`, `cost_comparisons.csv`, `power.csv` and \
         `config_comparisons.csv` hold every judge's rows (column `judge`).\n\n",
    );
    out
}
