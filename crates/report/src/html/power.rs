//! The section of report.html on how many tasks each comparison needs (`table-power`), with the
//! numbers of `power.csv` and the words of report.md's section.

use std::fmt::Write;

use super::svg::{escape, with_code_spans};
use crate::power::{PowerRow, SENTENCE, epochs_label, points, share_cell, split_cell, tasks_cell};

/// The section of report.html with `table-power`, for the comparisons the page lists; nothing
/// without comparisons.
pub(crate) fn section(out: &mut String, rows: &[&PowerRow]) {
    if rows.is_empty() {
        return;
    }
    out.push_str("<section>\n<h2 id=\"power\">How many tasks a question needs</h2>\n");
    let _ = writeln!(out, "<p>{}</p>", with_code_spans(SENTENCE));
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"table-power\"><thead><tr><th>config</th><th>critic</th><th>A vs B</th>\
         <th class=\"num\">tasks × epochs</th><th class=\"num\">A − B</th><th class=\"num\">MDE</th>\
         <th class=\"num\">tasks for 5 pp / 10 pp</th><th class=\"num\">variance: task / epoch</th>\
         <th class=\"num\">epoch share</th><th>advice</th></tr></thead><tbody>\n",
    );
    for &row in rows {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{} vs {}</td><td class=\"num\">{} × {}</td><td class=\"num\">{:+.1} pp</td>\
             <td class=\"num\">{}</td><td class=\"num\">{} / {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td>{}</td></tr>",
            escape(&row.config_id),
            escape(&row.critic),
            escape(&row.arm_a),
            escape(&row.arm_b),
            row.n_tasks,
            epochs_label(row.epochs),
            100.0 * row.diff,
            points(row.mde),
            tasks_cell(row.tasks_for_5pp),
            tasks_cell(row.tasks_for_10pp),
            split_cell(row),
            share_cell(row),
            escape(&row.advice),
        );
    }
    out.push_str("</tbody></table></div>\n</section>\n");
}
