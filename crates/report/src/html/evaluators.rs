//! The section of report.html on the held-out evaluators (`table-evaluators`): each arm's steering
//! pass rate beside the evaluator's of the same final answers and their gap, what the loops fixed
//! and broke, the critic-pleasing gaps, the arms compared under each evaluator, and the answers
//! the critic passed and the evaluator failed.

use std::fmt::Write;

use super::svg::escape;
use crate::evaluators::EvaluatorReport;

fn percent(value: f64) -> String {
    format!("{:.1}%", 100.0 * value)
}

fn points(value: f64) -> String {
    format!("{:+.1} pp", 100.0 * value)
}

/// An interval in percentage points, or "identical by design" without one.
fn range(low: Option<f64>, high: Option<f64>) -> String {
    match (low, high) {
        (Some(low), Some(high)) => format!("{} to {}", points(low), points(high)),
        _ => crate::rows::IDENTICAL_BY_DESIGN.to_string(),
    }
}

/// The section, placed beside the headline chart.
pub(crate) fn section(out: &mut String, report: &EvaluatorReport) {
    out.push_str("<section>\n<h2 id=\"evaluators\">What a held-out evaluator says of the same answers</h2>\n");
    out.push_str(
        "<p>An evaluator scores the loops' first drafts and final answers with the task's gold labels in view and \
         never steers a loop. <strong>Gap</strong> is the steering critic's pass rate minus the evaluator's, on the \
         same final answers (paired by loop): a large gap means the loop satisfied its critic without satisfying the \
         evaluator. <strong>Lift</strong> is the evaluator's pass rate of the final answers minus that of the first \
         drafts; it is 0 by construction for loops that never revise (their answer is their first draft), and \
         said so. Intervals are 95%, each by the method valid at the number of tasks it rests on, as in the summary \
         tables (<code>evaluators.csv</code> names them). An evaluator's error (every attempt failed on an answer) \
         is no verdict: a loop with one is left out of its row's numbers and counted under errors.</p>\n",
    );
    let errors: u64 = report.rows.iter().map(|r| r.evaluator_errors).sum();
    if errors > 0 {
        let loops: u64 = report.rows.iter().map(|r| r.n + r.evaluator_errors).sum();
        let _ = writeln!(
            out,
            "<p class=\"evaluator-errors\"><strong>An evaluator failed on the answers of {errors} of {loops} \
             loops</strong>: they are left out of its pass rates, agreement and gap below (<code>evaluator_errors</code> \
             in evaluators.csv; <code>critic_error</code> in evaluations.parquet says why).</p>"
        );
    }
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"table-evaluators\"><thead><tr><th>config</th><th>critic</th>\
         <th>evaluator</th><th>arm</th><th class=\"num\">loops</th><th class=\"num\">critic pass</th>\
         <th class=\"num\">evaluator pass (95% CI)</th><th class=\"num\">gap (95% CI)</th>\
         <th class=\"num\">first drafts</th><th class=\"num\">lift (95% CI)</th>\
         <th class=\"num\">both / critic only / evaluator only / neither</th><th class=\"num\">errors</th></tr>\
         </thead><tbody>\n",
    );
    for r in &report.rows {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{} ({} – {})</td><td class=\"num\">{} ({} to {})</td><td class=\"num\">{}</td>\
             <td class=\"num\">{} ({})</td><td class=\"num\">{} / {} / {} / {}</td><td class=\"num\">{}</td></tr>",
            escape(&r.config_id),
            escape(&r.critic),
            escape(&r.evaluator),
            escape(&r.arm),
            r.n,
            percent(r.critic_pass_rate),
            percent(r.evaluator_pass_rate),
            percent(r.evaluator_lo),
            percent(r.evaluator_hi),
            points(r.gap),
            points(r.gap_lo),
            points(r.gap_hi),
            percent(r.first_pass_rate),
            points(r.lift),
            range(r.lift_lo, r.lift_hi),
            r.both,
            r.critic_only,
            r.evaluator_only,
            r.neither,
            r.evaluator_errors,
        );
    }
    out.push_str("</tbody></table></div>\n");
    let flips = crate::evaluators::flips_rows(report);
    if !flips.is_empty() {
        let _ = writeln!(
            out,
            "<h3 id=\"flips\">Fixed and broken</h3>\n<p>{}</p>",
            escape(crate::evaluators::FLIPS_SENTENCE)
        );
        super::tables::cells_table(out, "table-flips", &crate::evaluators::FLIPS_HEADER, &flips, |i| i >= 4);
    }
    let pleasing = crate::evaluators::pleasing_rows(report);
    if !pleasing.is_empty() {
        let _ = writeln!(
            out,
            "<h3 id=\"critic-pleasing\">Is the loop pleasing its critic?</h3>\n<p>{}</p>",
            escape(crate::evaluators::PLEASING_SENTENCE)
        );
        super::tables::cells_table(out, "table-pleasing", &crate::evaluators::PLEASING_HEADER, &pleasing, |i| {
            (4..8).contains(&i)
        });
    }
    let ceilings = crate::evaluators::ceiling_rows(report);
    if !ceilings.is_empty() {
        let _ = writeln!(
            out,
            "<h3 id=\"resample-ceiling\">How far resampling can go</h3>\n<p>{}</p>",
            escape(crate::evaluators::CEILING_SENTENCE)
        );
        super::tables::cells_table(out, "table-resample-ceiling", &crate::evaluators::CEILING_HEADER, &ceilings, |i| {
            i >= 3
        });
    }
    if !report.comparisons.is_empty() {
        out.push_str(
            "<h3>Arms compared under each evaluator</h3>\n<div class=\"table-wrap\"><table \
             id=\"table-evaluator-comparisons\"><thead><tr><th>config</th><th>critic</th><th>evaluator</th>\
             <th>A vs B</th><th class=\"num\">pairs</th><th class=\"num\">A</th><th class=\"num\">B</th>\
             <th class=\"num\">A − B (95% CI)</th><th class=\"num\">p (test)</th></tr></thead><tbody>\n",
        );
        for c in &report.comparisons {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} vs {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{} ({})</td><td class=\"num\">{}</td></tr>",
                escape(&c.config_id),
                escape(&c.critic),
                escape(&c.evaluator),
                escape(&c.arm_a),
                escape(&c.arm_b),
                c.pairs,
                percent(c.rate_a),
                percent(c.rate_b),
                points(c.diff),
                range(c.diff_lo, c.diff_hi),
                escape(&crate::format::test_cell(c.p_value, &c.test)),
            );
        }
        out.push_str("</tbody></table></div>\n");
    }
    let critic_only: u64 = report.rows.iter().map(|r| r.critic_only).sum();
    if critic_only > 0 {
        // The answers themselves are read in `critbench view`, each task's rounds beside them.
        let _ = writeln!(
            out,
            "<h3 id=\"critic-only\">Passed by the critic, failed by the evaluator</h3>\n<p id=\"list-critic-only\">\
             {critic_only} final answers in all. To read them round by round, run <code>critbench view .</code> in \
             this report's folder and open “critic passed, an evaluator failed”.</p>"
        );
    }
    out.push_str("</section>\n");
}
