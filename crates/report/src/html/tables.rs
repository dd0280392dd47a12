//! The tables under the charts: the Pareto front, the summary per arm, the paired comparisons, the
//! headline per task kind and the discordant pairs.

use std::fmt::Write;

use super::charts::{Spent, front_rows, unique};
use super::svg::{escape, percent};
use crate::Report;
use crate::markdown::{AdjudicationRow, headline_comparison};
use crate::rows::{ComparisonRow, SummaryRow};
use crate::show::{LISTED_PAIRS, ListedPairs, show_command};

/// Configs on the Pareto front of each critic and arm, fewest rounds first, with what a pass costs.
pub(crate) fn pareto_table(out: &mut String, report: &Report, arms: &[(String, &'static str)]) {
    let front = front_rows(report);
    let spent = Spent::of(report);
    let tokens = report.summary.rows.iter().any(|r| r.tokens_in_per_pass.is_some());
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"table-pareto\"><thead><tr><th>critic</th><th>arm</th><th>config</th>\
         <th class=\"num\">pass rate</th><th class=\"num\">95% CI</th><th class=\"num\">mean rounds</th>\
         <th class=\"num\">rounds per passed loop</th>",
    );
    if tokens {
        out.push_str("<th class=\"num\">tokens in / out per passed loop</th>");
    }
    let money = spent == Spent::Money;
    if money {
        out.push_str("<th class=\"num\">cost per loop</th><th class=\"num\">cost per pass</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    for critic in unique(report.summary.rows.iter().map(|r| r.critic.as_str())) {
        for (arm, _) in arms {
            let mut rows: Vec<&SummaryRow> = report
                .summary
                .rows
                .iter()
                .filter(|r| r.critic == critic && &r.arm == arm && front.contains(&(&r.config_id, critic, arm)))
                .collect();
            rows.sort_by(|a, b| spent.value(a).total_cmp(&spent.value(b)).then(a.pass_rate.total_cmp(&b.pass_rate)));
            for row in rows {
                let money_cells = if money { money_cells(report, row) } else { String::new() };
                let tokens_cell = if tokens {
                    match (row.tokens_in_per_pass, row.tokens_out_per_pass) {
                        (Some(i), Some(o)) => format!("<td class=\"num\">{i:.0} / {o:.0}</td>"),
                        _ => "<td class=\"num\">–</td>".to_string(),
                    }
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}–{}</td>\
                     <td class=\"num\">{:.2}</td><td class=\"num\">{}</td>{tokens_cell}{money_cells}</tr>",
                    escape(critic),
                    escape(arm),
                    escape(&row.config_id),
                    percent(row.pass_rate),
                    percent(row.pass_rate_lo),
                    percent(row.pass_rate_hi),
                    row.mean_rounds,
                    if row.passed > 0 { format!("{:.2}", row.mean_rounds_passed) } else { "–".to_string() },
                );
            }
        }
    }
    out.push_str("</tbody></table></div>\n");
}

/// A row's cost per loop and per pass, as two cells.
fn money_cells(report: &Report, row: &SummaryRow) -> String {
    let cell = |value: Option<f64>| match value {
        Some(value) => {
            format!(
                "<td class=\"num\">{}</td>",
                escape(&crate::format::money(value, report.summary.currency.as_deref()))
            )
        }
        None => "<td class=\"num\">–</td>".to_string(),
    };
    cell(row.cost_per_loop) + &cell(row.cost_per_pass)
}

/// "What a pass costs": money per loop and per pass of every row, and the paired cost of a
/// passed loop (`table-money`, `table-money-comparisons`).
/// "At equal cost": arms compared with their loops cut at the same budget, who is ahead at which
/// spend; nothing when no comparison was measured.
pub(crate) fn equal_cost_section(out: &mut String, report: &Report) {
    let rows = crate::spend::table_rows(&report.summary.spend, report.summary.currency.as_deref());
    if rows.is_empty() {
        return;
    }
    out.push_str("<section>\n<h2 id=\"equal-cost\">At equal cost</h2>\n");
    let _ = writeln!(out, "<p>{}</p>", super::svg::with_code_spans(crate::spend::SENTENCE));
    cells_table(out, "table-equal-cost", &crate::spend::TABLE_HEADER, &rows, |i| i == 3 || i == 5);
    out.push_str("</section>\n");
}

/// "How much revisions changed": each config × critic × arm's revisions, their mean edit share
/// and how many changed almost nothing; nothing when no loop revised.
pub(crate) fn revisions_section(out: &mut String, report: &Report) {
    let rows = crate::markdown::revision_rows(report);
    if rows.is_empty() {
        return;
    }
    out.push_str("<section>\n<h2 id=\"revisions\">How much revisions changed</h2>\n");
    let _ = writeln!(out, "<p>{}</p>", super::svg::with_code_spans(crate::markdown::REVISIONS_SENTENCE));
    cells_table(out, "table-revisions", &crate::markdown::REVISIONS_HEADER, &rows, |i| i >= 3);
    out.push_str("</section>\n");
}

/// A table (`id`) of text cells under `header`, escaped; the columns `numeric` names right-aligned.
pub(crate) fn cells_table<const N: usize>(
    out: &mut String,
    id: &str,
    header: &[&str; N],
    rows: &[[String; N]],
    numeric: impl Fn(usize) -> bool,
) {
    let class = |i: usize| if numeric(i) { " class=\"num\"" } else { "" };
    let _ = write!(out, "<div class=\"table-wrap\"><table id=\"{id}\"><thead><tr>");
    for (i, name) in header.iter().enumerate() {
        let _ = write!(out, "<th{}>{}</th>", class(i), escape(name));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let _ = write!(out, "<td{}>{}</td>", class(i), escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

pub(crate) fn money_section(out: &mut String, report: &Report) {
    out.push_str("<section>\n<h2 id=\"money\">What a pass costs</h2>\n");
    let _ = writeln!(out, "<p>{}</p>", super::svg::with_code_spans(crate::markdown::MONEY_SENTENCE));
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"table-money\"><thead><tr><th>config</th><th>critic</th><th>arm</th>\
         <th class=\"num\">n</th><th class=\"num\">pass rate</th><th class=\"num\">cost per loop</th>\
         <th class=\"num\">cost per pass</th><th class=\"num\">cost in all</th></tr></thead><tbody>\n",
    );
    let cell = |value: Option<f64>| {
        value.map_or_else(|| "–".to_string(), |v| crate::format::money(v, report.summary.currency.as_deref()))
    };
    for row in &report.summary.rows {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&row.config_id),
            escape(&row.critic),
            escape(&row.arm),
            row.n,
            percent(row.pass_rate),
            escape(&cell(row.cost_per_loop)),
            escape(&cell(row.cost_per_pass)),
            escape(&cell(row.cost_total)),
        );
    }
    out.push_str("</tbody></table></div>\n");
    let paired: Vec<&ComparisonRow> =
        report.summary.comparisons.iter().filter(|c| c.diff_mean_cost_passed.is_some()).collect();
    if !paired.is_empty() {
        out.push_str(
            "<div class=\"table-wrap\"><table id=\"table-money-comparisons\"><thead><tr><th>config</th><th>critic</th>\
             <th>A vs B</th><th class=\"num\">both passed</th><th class=\"num\">cost of a pass A</th>\
             <th class=\"num\">cost of a pass B</th><th class=\"num\">A − B</th></tr></thead><tbody>\n",
        );
        for row in paired {
            let diff = row.diff_mean_cost_passed.unwrap_or(0.0);
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{} vs {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}{}</td></tr>",
                escape(&row.config_id),
                escape(&row.critic),
                escape(&row.arm_a),
                escape(&row.arm_b),
                row.both_passed,
                escape(&cell(row.mean_cost_passed_a)),
                escape(&cell(row.mean_cost_passed_b)),
                if diff >= 0.0 { "+" } else { "−" },
                escape(&cell(Some(diff.abs()))),
            );
        }
        out.push_str("</tbody></table></div>\n");
    }
    out.push_str("</section>\n");
}

fn format_p(p: f64) -> String {
    if p < 0.0001 { "&lt; 0.0001".to_string() } else { format!("{p:.4}") }
}

pub(crate) fn summary_table(out: &mut String, report: &Report) {
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"table-summary\"><thead><tr><th>config</th><th>critic</th>\
         <th>arm</th><th class=\"num\">n</th><th class=\"num\">pass rate</th><th class=\"num\">95% CI</th>\
         <th class=\"num\">mean rounds</th><th class=\"num\">rounds per passed loop</th><th class=\"num\">pass</th>\
         <th class=\"num\">stall</th><th class=\"num\">plateau</th><th class=\"num\">budget</th>\
         <th class=\"num\">first → best score</th>",
    );
    let tokens = report.summary.rows.iter().any(|r| r.tokens_in_per_loop.is_some());
    if tokens {
        out.push_str("<th class=\"num\">tokens in / out per loop</th><th class=\"num\">per passed loop</th>");
    }
    let money = report.summary.rows.iter().any(|r| r.cost_per_loop.is_some());
    if money {
        out.push_str("<th class=\"num\">cost per loop</th><th class=\"num\">cost per pass</th>");
    }
    let writer = report.summary.rows.iter().any(|r| r.exit_writer_error > 0);
    if writer {
        out.push_str("<th class=\"num\">writer error</th>");
    }
    let errors = report.summary.rows.iter().any(|r| r.critic_errors > 0);
    if errors {
        out.push_str("<th class=\"num\">critic errors</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in &report.summary.rows {
        let errors_cell = if errors {
            format!(
                "<td class=\"num\">{} <span class=\"ci\">({} of {})</span></td>",
                percent(row.critic_error_rate),
                row.critic_errors,
                row.rounds_total
            )
        } else {
            String::new()
        };
        let pair = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("<td class=\"num\">{a:.0} / {b:.0}</td>"),
            _ => "<td class=\"num\">–</td>".to_string(),
        };
        let tokens_cells = if tokens {
            pair(row.tokens_in_per_loop, row.tokens_out_per_loop)
                + &pair(row.tokens_in_per_pass, row.tokens_out_per_pass)
        } else {
            String::new()
        };
        let per_pass = if row.passed > 0 { format!("{:.2}", row.mean_rounds_passed) } else { "–".to_string() };
        let money_cells = if money { money_cells(report, row) } else { String::new() };
        let writer_cell =
            if writer { format!("<td class=\"num\">{}</td>", row.exit_writer_error) } else { String::new() };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}–{}</td><td class=\"num\">{:.2}</td><td class=\"num\">{per_pass}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{:.2} → {:.2}</td>{tokens_cells}{money_cells}{writer_cell}{errors_cell}</tr>",
            escape(&row.config_id),
            escape(&row.critic),
            escape(&row.arm),
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
    out.push_str("</tbody></table></div>\n");
}

/// A paired difference's cell: the difference over its interval, or over "identical by design".
pub(crate) fn difference_cell(diff: f64, low: Option<f64>, high: Option<f64>) -> String {
    let under = match (low, high) {
        (Some(low), Some(high)) => format!("({:+.1} to {:+.1})", 100.0 * low, 100.0 * high),
        _ => format!("({})", crate::rows::IDENTICAL_BY_DESIGN),
    };
    format!("{:+.1} pp<br><span class=\"ci\">{under}</span>", 100.0 * diff)
}

/// A test's cell: the p-value over the test's name, or "–" over "identical by design".
pub(crate) fn test_cell(p_value: Option<f64>, test: &str) -> String {
    let p = p_value.map_or_else(|| "–".to_string(), format_p);
    format!("{p}<br><span class=\"ci\">{}</span>", escape(test))
}

/// The class of a row whose test rejects at 5%.
pub(crate) fn significant(p_value: Option<f64>) -> &'static str {
    if p_value.is_some_and(|p| p < 0.05) { " class=\"significant\"" } else { "" }
}

fn comparison_row(out: &mut String, row: &ComparisonRow) {
    // Significance is marked, not hidden: the interval and the p-value are both shown.
    let class = significant(row.p_value);
    let _ = writeln!(
        out,
        "<tr{class}><td>{}</td><td>{}</td><td>{} vs {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
         <td class=\"num\">{}</td><td class=\"num\">{}</td>\
         <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num p\">{}</td><td class=\"num\">{:.2} / {:.2}</td>\
         <td class=\"num\">{:.2} / {:.2}</td></tr>",
        escape(&row.config_id),
        escape(&row.critic),
        escape(&row.arm_a),
        escape(&row.arm_b),
        row.n_pairs,
        percent(row.pass_rate_a),
        percent(row.pass_rate_b),
        difference_cell(row.diff, row.diff_lo, row.diff_hi),
        row.a_only,
        row.b_only,
        test_cell(row.p_value, &row.test),
        row.mean_rounds_a,
        row.mean_rounds_b,
        row.mean_best_score_a,
        row.mean_best_score_b,
    );
}

pub(crate) fn comparison_table(out: &mut String, report: &Report) {
    if report.summary.comparisons.is_empty() {
        out.push_str("<p>Only one arm ran: nothing to compare.</p>\n");
        return;
    }
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"table-comparisons\"><thead><tr><th>config</th><th>critic</th>\
         <th>A vs B</th><th class=\"num\">pairs</th><th class=\"num\">pass A</th><th class=\"num\">pass B</th>\
         <th class=\"num\">A − B (95% CI)</th><th class=\"num\">A only</th><th class=\"num\">B only</th>\
         <th class=\"num\">p (test)</th><th class=\"num\">rounds A / B</th><th class=\"num\">best score A / B</th>\
         </tr></thead><tbody>\n",
    );
    for row in &report.summary.comparisons {
        comparison_row(out, row);
    }
    out.push_str("</tbody></table></div>\n");
}

/// The adjudicator's effect per adjudicated arm: its loops before and after the final pass,
/// paired; empty rows mean no arm adjudicated.
pub(crate) fn adjudication_table(out: &mut String, rows: &[AdjudicationRow<'_>]) {
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"table-adjudication\"><thead><tr><th>config</th><th>critic</th>\
         <th>arm</th><th class=\"num\">pairs</th><th class=\"num\">pass before</th><th class=\"num\">pass after</th>\
         <th class=\"num\">after − before (95% CI)</th><th class=\"num\">pass → fail</th>\
         <th class=\"num\">fail → pass</th><th class=\"num\">p</th><th class=\"num\">mean final score</th>\
         </tr></thead><tbody>\n",
    );
    let score = |s: Option<f64>| s.map_or_else(|| "–".to_string(), |s| format!("{s:.2}"));
    for row in rows {
        let class = significant(row.p_value);
        let _ = writeln!(
            out,
            "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num p\">{}</td><td class=\"num\">{} → {}</td></tr>",
            escape(row.config_id),
            escape(row.critic),
            escape(row.arm),
            row.pairs,
            percent(row.pass_before),
            percent(row.pass_after),
            difference_cell(row.diff.0, row.diff.1, row.diff.2),
            row.lost,
            row.won,
            row.p_value.map_or_else(|| "–".to_string(), format_p),
            score(row.mean_final_before),
            score(row.mean_final_after),
        );
    }
    out.push_str("</tbody></table></div>\n");
}

/// The headline of each task kind: per config × critic, each arm's pass rate with its interval,
/// and the headline comparison over that kind's tasks.
pub(crate) fn kinds_table(out: &mut String, report: &Report, arms: &[(String, &'static str)]) {
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"table-kinds\"><thead><tr><th>kind</th><th class=\"num\">tasks</th>\
         <th>config</th><th>critic</th>",
    );
    for (arm, _) in arms {
        let _ = write!(out, "<th class=\"num\">{} pass rate (95% CI)</th>", escape(arm));
    }
    // When every row compares the same two arms, the header names them once.
    let mut compared: Vec<(&str, &str)> = Vec::new();
    for kind in &report.summary.by_kind {
        for (config, critic) in
            crate::format::unique(kind.summary.iter().map(|r| (r.config_id.as_str(), r.critic.as_str())))
        {
            if let Some(c) = headline_comparison(&kind.comparisons, config, critic)
                && !compared.contains(&(c.arm_a.as_str(), c.arm_b.as_str()))
            {
                compared.push((&c.arm_a, &c.arm_b));
            }
        }
    }
    let one_pair = match compared[..] {
        [(a, b)] => Some((a, b)),
        _ => None,
    };
    match one_pair {
        Some((a, b)) => {
            let _ = write!(out, "<th class=\"num\">{} − {} (95% CI)</th>", escape(a), escape(b));
        }
        None => out.push_str("<th>A vs B</th><th class=\"num\">A − B (95% CI)</th>"),
    }
    out.push_str("<th class=\"num p\">p (test)</th></tr></thead><tbody>\n");
    for kind in &report.summary.by_kind {
        let label = match &kind.kind {
            Some(kind) => format!("<code>{}</code>", escape(kind)),
            None => "<span class=\"note\">none</span>".to_string(),
        };
        let groups = crate::format::unique(kind.summary.iter().map(|r| (r.config_id.as_str(), r.critic.as_str())));
        for (config, critic) in groups {
            let rows: Vec<&SummaryRow> =
                kind.summary.iter().filter(|r| r.config_id == config && r.critic == critic).collect();
            let tasks = rows.iter().map(|r| r.n_tasks).max().unwrap_or(0);
            let comparison = headline_comparison(&kind.comparisons, config, critic);
            let class = comparison.map_or("", |c| significant(c.p_value));
            let _ = write!(
                out,
                "<tr{class}><td>{label}</td><td class=\"num\">{tasks}</td><td>{}</td><td>{}</td>",
                escape(config),
                escape(critic)
            );
            for (arm, _) in arms {
                match rows.iter().find(|r| &r.arm == arm) {
                    Some(row) => {
                        let _ = write!(
                            out,
                            "<td class=\"num\">{}<br><span class=\"ci\">({}–{}) n = {}</span></td>",
                            percent(row.pass_rate),
                            percent(row.pass_rate_lo),
                            percent(row.pass_rate_hi),
                            row.n
                        );
                    }
                    None => out.push_str("<td class=\"num\">–</td>"),
                }
            }
            match comparison {
                Some(c) => {
                    if one_pair.is_none() {
                        let _ = write!(out, "<td>{} vs {}</td>", escape(&c.arm_a), escape(&c.arm_b));
                    }
                    let _ = writeln!(
                        out,
                        "<td class=\"num\">{}</td><td class=\"num p\">{}</td></tr>",
                        difference_cell(c.diff, c.diff_lo, c.diff_hi),
                        test_cell(c.p_value, &c.test)
                    );
                }
                None => {
                    if one_pair.is_none() {
                        out.push_str("<td>–</td>");
                    }
                    out.push_str("<td class=\"num\">–</td><td class=\"num\">–</td></tr>\n");
                }
            }
        }
    }
    out.push_str("</tbody></table></div>\n");
}

/// The discordant pairs of the compared arms: their counts, then the first pairs, each with the
/// `critbench show` command that opens the loop that did not pass.
pub(crate) fn pairs_table(out: &mut String, pairs: &ListedPairs) {
    let (units, a_only, b_only) = pairs.totals();
    let (a, b) = (escape(&pairs.arm_a), escape(&pairs.arm_b));
    let _ = writeln!(out, "<h2 id=\"discordant-pairs\">Discordant pairs of {a} and {b}</h2>");
    let _ = writeln!(
        out,
        "<p>{} of {units} task × epoch units had one arm pass and the other not: only {a} passed {a_only}, only {b} \
         passed {b_only}. These are the pairs behind the paired test; open one to see why the arms parted.{} \
         The commands run in this report's folder, where <code>critbench view .</code> shows each task's loops \
         side by side, round by round.</p>",
        a_only + b_only,
        if a_only + b_only > LISTED_PAIRS {
            format!(
                " The first {LISTED_PAIRS} are listed; <code>critbench show . --pairs {},{}</code> lists them all.",
                escape(&pairs.arm_a),
                escape(&pairs.arm_b)
            )
        } else {
            String::new()
        }
    );
    if a_only + b_only == 0 {
        return;
    }
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"table-discordant-pairs\"><thead><tr><th>config</th><th>critic</th>\
         <th>task</th><th class=\"num\">epoch</th><th>passed</th><th>open the loop that did not pass</th></tr>\
         </thead><tbody>\n",
    );
    for (group, pair, lost) in pairs.listed() {
        let won = if pair.a_passed { &pairs.arm_a } else { &pairs.arm_b };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td></tr>",
            escape(&group.config),
            escape(&group.critic),
            escape(&pair.task_id),
            pair.epoch,
            escape(won),
            escape(&show_command(".", group, pair, lost))
        );
    }
    out.push_str("</tbody></table></div>\n");
}
