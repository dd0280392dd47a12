//! The answer as `report.html` opens with it (`crate::answer`'s lines), by the lead judge.

use std::fmt::Write;

use super::svg::with_code_spans;
use crate::Report;

/// The answer as `report.html` opens with it: the answer's lines as paragraphs, lists and a table.
pub(crate) fn section(report: &Report) -> String {
    let mut out = String::from("<section id=\"answer\">\n<h2>The answer</h2>\n");
    let mut in_list = false;
    let mut in_table = false;
    // The table's columns: a shorter row (the line saying how many configs were left out) spans
    // the rest, so that its sentence does not widen a column.
    let mut columns = 0;
    for line in crate::answer::lines(report) {
        if in_list && !line.starts_with("  ") {
            out.push_str("</ul>\n");
            in_list = false;
        }
        if in_table && !line.starts_with('|') {
            out.push_str("</table></div>\n");
            in_table = false;
        }
        if let Some(item) = line.strip_prefix("  ") {
            if !in_list {
                out.push_str("<ul>\n");
                in_list = true;
            }
            let _ = writeln!(out, "<li>{}</li>", with_code_spans(item));
        } else if line.starts_with("|---") {
            continue;
        } else if let Some(row) = line.strip_prefix('|') {
            let cells: Vec<&str> = row.trim_end_matches('|').split('|').map(str::trim).collect();
            let tag = if in_table { "td" } else { "th" };
            if !in_table {
                out.push_str("<div class=\"table-wrap\"><table id=\"table-answer\">\n");
                in_table = true;
                columns = cells.len();
            }
            out.push_str("<tr>");
            let last = cells.len().saturating_sub(1);
            for (index, cell) in cells.iter().enumerate() {
                let span = if index == last && cells.len() < columns {
                    format!(" colspan=\"{}\"", columns - last)
                } else {
                    String::new()
                };
                let _ = write!(out, "<{tag}{span}>{}</{tag}>", with_code_spans(cell));
            }
            out.push_str("</tr>\n");
        } else if !line.is_empty() {
            let _ = writeln!(out, "<p>{}</p>", with_code_spans(&line));
        }
    }
    if in_list {
        out.push_str("</ul>\n");
    }
    if in_table {
        out.push_str("</table></div>\n");
    }
    out.push_str("</section>\n");
    out
}
