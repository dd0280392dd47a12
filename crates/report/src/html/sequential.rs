//! The section of report.html on a sequential run (`#sequential`): the sentence, the confidence
//! sequence over tasks as a chart with the stopping point (`chart-sequential`), every comparison
//! at the deciding look (`table-sequential`) and the looks of the one drawn
//! (`table-sequential-looks`).

use std::fmt::Write;

use critbench_storage::manifest::SequentialRecord;

use super::svg::{GRID, MUTED, TEXT, WIDTH, escape, labelled_ticks, line, open_svg, px, text, with_code_spans};
use crate::rows::ComparisonRow;
use crate::sequential::{
    interval, points, rule_sentence, sentence, shown_comparison, shown_looks, stated, stated_words,
};

/// The band's colour: the arm A colour of the other charts, light.
const BAND: &str = "#0072b2";

pub(crate) fn section(out: &mut String, record: &SequentialRecord, comparisons: &[ComparisonRow]) {
    out.push_str("<section>\n<h2 id=\"sequential\">Sequential run</h2>\n");
    let _ = writeln!(
        out,
        "<p>{}</p>\n<p>{}</p>",
        escape(&sentence(record, comparisons)),
        with_code_spans(&rule_sentence(record))
    );
    if let Some(index) = shown_comparison(record) {
        let comparison = &record.comparisons[index];
        out.push_str("<figure>\n");
        chart(out, record, index);
        let _ = writeln!(
            out,
            "<figcaption>{} × {}{}: the confidence sequence of {} − {} (shaded, {}) and the estimate (line) at each \
             look, over the tasks admitted in order. The dashed line is 0; the vertical line is where the run \
             stopped; the grey part of the axis is the set's tasks it never ran.</figcaption>\n</figure>",
            escape(&comparison.config_id),
            escape(&comparison.critic),
            if record.rule.settle == "one" { ", the deciding comparison" } else { ", the last comparison to settle" },
            escape(&comparison.arm_a),
            escape(&comparison.arm_b),
            escape(&level(record.rule.sequence_confidence)),
        );
    }
    if let Some(look) = record.decision.as_ref().or(record.looks.last()) {
        let _ = writeln!(out, "<h3>Every comparison at look {} ({} tasks)</h3>", look.look, look.tasks);
        out.push_str(
            "<div class=\"table-wrap\"><table id=\"table-sequential\"><thead><tr><th>config</th><th>critic</th>\
             <th>A − B</th><th class=\"num\">tasks</th><th class=\"num\">estimate</th><th>confidence sequence</th>\
             <th>verdict</th></tr></thead><tbody>\n",
        );
        for (index, (comparison, status)) in record.comparisons.iter().zip(&look.comparisons).enumerate() {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{} − {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td>{}</td><td>{}{}</td></tr>",
                escape(&comparison.config_id),
                escape(&comparison.critic),
                escape(&comparison.arm_a),
                escape(&comparison.arm_b),
                status.tasks,
                status.estimate.map_or_else(|| "–".to_string(), points),
                interval(status),
                escape(&stated_words(
                    &stated(record, index, status, comparisons),
                    &comparison.arm_a,
                    &comparison.arm_b
                )),
                if comparison.decides && record.rule.settle == "one" { " (decides)" } else { "" }
            );
        }
        out.push_str("</tbody></table></div>\n");
    }
    if let Some(index) = shown_comparison(record) {
        out.push_str(
            "<div class=\"table-wrap\"><table id=\"table-sequential-looks\"><thead><tr><th class=\"num\">look</th>\
             <th class=\"num\">tasks</th><th class=\"num\">estimate</th><th>confidence sequence</th><th>decision</th>\
             </tr></thead><tbody>\n",
        );
        for look in shown_looks(&record.looks) {
            let Some(status) = look.comparisons.get(index) else { continue };
            let _ = writeln!(
                out,
                "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
                look.look,
                look.tasks,
                status.estimate.map_or_else(|| "–".to_string(), points),
                interval(status),
                escape(&look.decision)
            );
        }
        out.push_str("</tbody></table></div>\n");
    }
    out.push_str("</section>\n");
}

fn level(confidence: f64) -> String {
    let text = format!("{:.2}", 100.0 * confidence);
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}

/// `chart-sequential`: comparison `index`'s interval and estimate at each look, in percentage
/// points, against the tasks admitted, from 0 to the whole set.
fn chart(out: &mut String, record: &SequentialRecord, index: usize) {
    let comparison = &record.comparisons[index];
    let series: Vec<(u64, f64, f64, Option<f64>)> = record
        .looks
        .iter()
        .filter_map(|look| look.comparisons.get(index).map(|s| (look.tasks, s.lower, s.upper, s.estimate)))
        .collect();
    let height = 320.0;
    let (x0, x1, y0, y1) = (56.0, WIDTH - 16.0, 28.0, height - 44.0);
    // The interval's range over the looks, with 0 and the margin always in view.
    let margin = record.rule.margin.unwrap_or(0.0);
    let low = series.iter().map(|s| s.1).fold(-margin, f64::min).max(-1.0);
    let high = series.iter().map(|s| s.2).fold(margin, f64::max).min(1.0);
    let (low, high) = (100.0 * low, 100.0 * high.max(low + 0.01));
    let step = super::svg::tick_step(low, high, 6.0);
    let (low, high) = ((low / step).floor() * step, (high / step).ceil() * step);
    let set = record.task_set.max(1) as f64;
    let x_of = |tasks: u64| x0 + tasks as f64 / set * (x1 - x0);
    let y_of = |points: f64| y1 - (100.0 * points - low) / (high - low) * (y1 - y0);
    open_svg(
        out,
        "chart-sequential",
        height,
        &format!(
            "The confidence sequence of {} − {} ({} × {}) over the tasks admitted",
            comparison.arm_a, comparison.arm_b, comparison.config_id, comparison.critic
        ),
        &format!(
            "At each look: {}.",
            series
                .iter()
                .map(|(tasks, lower, upper, estimate)| format!(
                    "{tasks} tasks, estimate {}, interval {} to {}",
                    estimate.map_or_else(|| "none".to_string(), points),
                    points(*lower),
                    points(*upper)
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    );
    for (tick, label) in labelled_ticks(low, high, 6.0) {
        let y = y1 - (tick - low) / (high - low) * (y1 - y0);
        line(out, (x0, y), (x1, y), GRID, 1.0);
        text(out, x0 - 6.0, y + 4.0, "end", "tick", &format!("{label} pp"));
    }
    for (tick, label) in labelled_ticks(0.0, set, 8.0) {
        text(out, x_of(tick as u64), y1 + 16.0, "middle", "tick", &label);
    }
    text(out, (x0 + x1) / 2.0, y1 + 34.0, "middle", "axis", "tasks admitted");
    // The set's tasks the run never ran.
    let ran = x_of(record.tasks_run);
    if record.tasks_run < record.task_set {
        let _ = write!(
            out,
            "<rect class=\"not-run\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f6f8fa\"><title>{} tasks not \
             run</title></rect>",
            px(ran),
            px(y0),
            px(x1 - ran),
            px(y1 - y0),
            record.task_set - record.tasks_run
        );
    }
    if !series.is_empty() {
        let upper: Vec<String> = series.iter().map(|s| format!("{},{}", px(x_of(s.0)), px(y_of(s.2)))).collect();
        let lower: Vec<String> = series.iter().rev().map(|s| format!("{},{}", px(x_of(s.0)), px(y_of(s.1)))).collect();
        let _ = write!(
            out,
            "<polygon class=\"band\" points=\"{} {}\" fill=\"{BAND}\" fill-opacity=\"0.18\" stroke=\"{BAND}\" \
             stroke-opacity=\"0.5\"/>",
            upper.join(" "),
            lower.join(" ")
        );
        let estimate: Vec<String> =
            series.iter().filter_map(|s| s.3.map(|e| format!("{},{}", px(x_of(s.0)), px(y_of(e))))).collect();
        let _ = write!(
            out,
            "<polyline class=\"estimate\" points=\"{}\" fill=\"none\" stroke=\"{BAND}\" stroke-width=\"2\"/>",
            estimate.join(" ")
        );
    }
    let zero = y_of(0.0);
    let _ = write!(
        out,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{TEXT}\" stroke-dasharray=\"5 4\"/>",
        px(x0),
        px(zero),
        px(x1),
        px(zero)
    );
    if let Some(margin) = record.rule.margin {
        for bound in [-margin, margin] {
            let y = y_of(bound);
            let _ = write!(
                out,
                "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{MUTED}\" stroke-dasharray=\"2 3\"><title>margin \
                 {}</title></line>",
                px(x0),
                px(y),
                px(x1),
                px(y),
                points(bound)
            );
        }
    }
    if let Some(decision) = &record.decision {
        let x = x_of(decision.tasks);
        let _ = write!(
            out,
            "<line class=\"stop\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{TEXT}\" stroke-width=\"1.5\"/>",
            px(x),
            px(y0),
            px(x),
            px(y1)
        );
        let label = format!("{} at look {} ({} tasks)", decision.decision, decision.look, decision.tasks);
        let anchor = if x > (x0 + x1) / 2.0 { "end" } else { "start" };
        text(out, if anchor == "end" { x - 6.0 } else { x + 6.0 }, y0 + 14.0, anchor, "label", &label);
    }
    out.push_str("</svg>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_draws_the_sequence_and_marks_where_the_run_stopped() {
        let record = crate::sequential::tests::record();
        let mut html = String::new();
        section(&mut html, &record, &[]);
        assert!(html.starts_with("<section>\n<h2 id=\"sequential\">Sequential run</h2>\n<p>Sequential run: settled"));
        assert!(html.contains("<svg id=\"chart-sequential\""), "{html}");
        // The stop at 40 tasks of 480, on an axis 56 to 944 wide: x = 56 + 40/480 × 888 = 130.
        assert!(html.contains("<line class=\"stop\" x1=\"130.0\""), "{html}");
        assert!(html.contains("settled at look 3 (40 tasks)"), "{html}");
        // The 430 tasks not run are greyed from x = 56 + 50/480 × 888 = 148.5.
        assert!(html.contains("<rect class=\"not-run\" x=\"148.5\""), "{html}");
        assert!(html.contains("<title>430 tasks not run</title>"), "{html}");
        assert_eq!(html.matches("<tr><td>p8</td>").count(), 2, "both comparisons are listed");
        assert_eq!(html.matches("<tr><td class=\"num\">").count(), 3, "and the three looks of the one drawn");
    }
}
