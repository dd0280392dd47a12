//! The "Corrected by gold labels" section of the page: `table-corrected` and
//! `table-corrected-comparisons`, the same cells as `report.md`'s.

use std::fmt::Write;

use super::svg::{escape, with_code_spans};
use crate::gold::Corrected;
use crate::gold::render::{TOO_FEW, difference_cell, error_cell, introduction, or_dash, percent, points, too_few};

/// The section of `report.html`: `table-corrected` and `table-corrected-comparisons`.
pub(crate) fn corrected_section(out: &mut String, corrected: &Corrected) {
    out.push_str("<section>\n<h2 id=\"corrected\">Corrected by gold labels</h2>\n");
    let _ = writeln!(out, "<p>{}</p>", with_code_spans(&introduction(corrected)));
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"table-corrected\"><thead><tr><th>config</th><th>critic</th><th>arm</th>\
         <th class=\"num\">labelled tasks</th><th class=\"num\">critic pass rate</th>\
         <th class=\"num\">gold, labelled</th><th class=\"num\">corrected</th><th class=\"num\">95% CI</th>\
         <th class=\"num\">false pass</th><th class=\"num\">false fail</th></tr></thead><tbody>\n",
    );
    let cell = |value: Option<String>| format!("<td class=\"num\">{}</td>", escape(&or_dash(value)));
    for row in &corrected.rows {
        let interval = match (row.corrected_lo, row.corrected_hi) {
            (Some(lo), Some(hi)) => Some(format!("{}–{}", percent(lo), percent(hi))),
            _ => None,
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{} of {}</td><td class=\"num\">{}</td>{}{}{}{}{}</tr>",
            escape(&row.config_id),
            escape(&row.critic),
            escape(&row.arm),
            row.n_tasks_labelled,
            row.n_tasks,
            percent(row.pass_rate),
            cell(row.gold_pass_rate.map(percent)),
            cell(row.pass_rate_corrected.map(percent)),
            cell(interval),
            cell(error_cell(
                row.false_pass_rate,
                row.false_pass_rate_lo,
                row.false_pass_rate_hi,
                row.false_pass,
                row.gold_fail
            )),
            cell(error_cell(
                row.false_fail_rate,
                row.false_fail_rate_lo,
                row.false_fail_rate_hi,
                row.false_fail,
                row.gold_pass
            )),
        );
    }
    out.push_str("</tbody></table></div>\n");
    if !corrected.comparisons.is_empty() {
        out.push_str(
            "<h3>Paired differences</h3>\n<p>Corrected the same way: each task's mean difference over the epochs both \
             arms ran.</p>\n<div class=\"table-wrap\"><table id=\"table-corrected-comparisons\"><thead><tr>\
             <th>config</th><th>critic</th><th>A − B</th><th class=\"num\">labelled tasks</th>\
             <th class=\"num\">critic's difference</th><th class=\"num\">gold, labelled</th>\
             <th class=\"num\">corrected (95% CI)</th></tr></thead><tbody>\n",
        );
        for row in &corrected.comparisons {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{} − {}</td><td class=\"num\">{} of {}</td><td class=\"num\">{}</td>{}{}</tr>",
                escape(&row.config_id),
                escape(&row.critic),
                escape(&row.arm_a),
                escape(&row.arm_b),
                row.n_tasks_labelled,
                row.n_tasks,
                points(row.diff),
                cell(row.gold_diff.map(points)),
                cell(difference_cell(row)),
            );
        }
        out.push_str("</tbody></table></div>\n");
    }
    if too_few(corrected) {
        let _ = writeln!(out, "<p class=\"note\">{TOO_FEW}</p>");
    }
    out.push_str("</section>\n");
}
