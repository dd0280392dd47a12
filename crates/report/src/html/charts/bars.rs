//! Pass rate with intervals and exit reasons: one bar per config × critic × arm.

use std::fmt::Write;

use super::{color_of, groups};
use crate::Report;
use crate::html::svg::{GRID, TEXT, escape, legend, line, open_svg, percent, px, text, ticks};
use crate::rows::SummaryRow;

const EXIT_REASONS: [&str; 5] = ["pass", "stall", "plateau", "budget", "writer_error"];

/// The exit reasons the chart shows: `writer_error` only in a run that has one.
fn exit_reasons(report: &Report) -> &'static [&'static str] {
    let writer = report.summary.rows.iter().any(|r| r.exit_writer_error > 0);
    if writer { &EXIT_REASONS } else { &EXIT_REASONS[..4] }
}

fn exit_color(reason: &str) -> (&'static str, &'static str) {
    // (fill, text on it)
    match reason {
        "pass" => ("#009e73", "#ffffff"),
        "stall" => ("#d55e00", "#ffffff"),
        "plateau" => ("#cc79a7", "#ffffff"),
        "writer_error" => ("#e69f00", TEXT),
        _ => ("#b8bec5", TEXT),
    }
}

fn exit_count(row: &SummaryRow, reason: &str) -> u64 {
    match reason {
        "pass" => row.exit_pass,
        "stall" => row.exit_stall,
        "plateau" => row.exit_plateau,
        "writer_error" => row.exit_writer_error,
        _ => row.exit_budget,
    }
}

/// Vertical layout shared by the per-arm charts: a header line per config × critic, then a row
/// per arm.
struct RowLayout<'a> {
    headers: Vec<(f64, String)>,
    rows: Vec<(f64, &'a SummaryRow)>,
    height: f64,
}

const ROW: f64 = 22.0;
const BAR: f64 = 14.0;
const HEADER: f64 = 24.0;

fn row_layout<'a>(report: &'a Report, top: f64) -> RowLayout<'a> {
    let mut y = top;
    let mut layout = RowLayout { headers: Vec::new(), rows: Vec::new(), height: 0.0 };
    for (config, critic, rows) in groups(report) {
        y += HEADER;
        layout.headers.push((y - 7.0, format!("{config} · {critic}")));
        for row in rows {
            layout.rows.push((y, row));
            y += ROW;
        }
    }
    layout.height = y;
    layout
}

/// Percentage gridlines and labels across `x0..x1`, from `top` to `bottom`.
fn percent_axis(out: &mut String, x0: f64, x1: f64, top: f64, bottom: f64) {
    for tick in ticks(0.0, 1.0, 5.0) {
        let x = x0 + tick * (x1 - x0);
        line(out, (x, top), (x, bottom), GRID, 1.0);
        text(out, x, bottom + 16.0, "middle", "tick", &format!("{:.0}%", 100.0 * tick));
    }
}

pub(crate) fn pass_rate_chart(out: &mut String, report: &Report, arms: &[(String, &'static str)]) {
    let (x0, x1, value_x) = (210.0, 740.0, 752.0);
    let layout = row_layout(report, 8.0);
    let height = layout.height + 30.0;
    open_svg(
        out,
        "chart-pass-rate",
        height,
        "Pass rate by arm, with 95% intervals",
        &format!(
            "Horizontal bars, one per config, critic and arm: {}.",
            layout
                .rows
                .iter()
                .map(|(_, r)| format!(
                    "{} {} {}: {} ({} to {})",
                    r.config_id,
                    r.critic,
                    r.arm,
                    percent(r.pass_rate),
                    percent(r.pass_rate_lo),
                    percent(r.pass_rate_hi)
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    );
    percent_axis(out, x0, x1, 8.0, layout.height);
    for (y, label) in &layout.headers {
        text(out, 0.0, *y, "start", "group", label);
    }
    let scale = |v: f64| x0 + v.clamp(0.0, 1.0) * (x1 - x0);
    for (y, row) in &layout.rows {
        let color = color_of(arms, &row.arm);
        let middle = y + BAR / 2.0;
        text(out, 14.0, middle + 4.0, "start", "label", &row.arm);
        let _ = write!(
            out,
            "<g><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{BAR}\" fill=\"{color}\" \
             fill-opacity=\"0.85\"/>",
            escape(&format!(
                "{} · {} · {}: {} passed of {} ({}, 95% CI {} to {})",
                row.config_id,
                row.critic,
                row.arm,
                row.passed,
                row.n,
                percent(row.pass_rate),
                percent(row.pass_rate_lo),
                percent(row.pass_rate_hi)
            )),
            px(x0),
            px(*y),
            px(scale(row.pass_rate) - x0),
        );
        // The interval: a whisker with caps, drawn dark so it reads on the bar and off it.
        let (lo, hi) = (scale(row.pass_rate_lo), scale(row.pass_rate_hi));
        line(out, (lo, middle), (hi, middle), TEXT, 1.5);
        line(out, (lo, middle - 5.0), (lo, middle + 5.0), TEXT, 1.5);
        line(out, (hi, middle - 5.0), (hi, middle + 5.0), TEXT, 1.5);
        out.push_str("</g>");
        text(
            out,
            value_x,
            middle + 4.0,
            "start",
            "value",
            &format!(
                "{}  ({}–{})  n = {}",
                percent(row.pass_rate),
                percent(row.pass_rate_lo),
                percent(row.pass_rate_hi),
                row.n
            ),
        );
    }
    out.push_str("</svg>\n");
}

pub(crate) fn exit_reasons_chart(out: &mut String, report: &Report) {
    let (x0, x1, value_x) = (210.0, 860.0, 872.0);
    let top = 30.0;
    let layout = row_layout(report, top);
    let height = layout.height + 30.0;
    open_svg(
        out,
        "chart-exit-reasons",
        height,
        "Why loops stopped: exit reasons per arm",
        &format!(
            "Stacked bars of the share of loops ending in pass, stall, plateau and budget: {}.",
            layout
                .rows
                .iter()
                .map(|(_, r)| format!(
                    "{} {} {}: pass {}, stall {}, plateau {}, budget {}",
                    r.config_id, r.critic, r.arm, r.exit_pass, r.exit_stall, r.exit_plateau, r.exit_budget
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    );
    let reasons = exit_reasons(report);
    let items: Vec<(&str, &str)> = reasons.iter().map(|r| (*r, exit_color(r).0)).collect();
    legend(out, x0, 16.0, &items);
    percent_axis(out, x0, x1, top, layout.height);
    for (y, label) in &layout.headers {
        text(out, 0.0, *y, "start", "group", label);
    }
    for (y, row) in &layout.rows {
        let middle = y + BAR / 2.0;
        text(out, 14.0, middle + 4.0, "start", "label", &row.arm);
        let mut x = x0;
        for &reason in reasons {
            let count = exit_count(row, reason);
            if count == 0 || row.n == 0 {
                continue;
            }
            let share = count as f64 / row.n as f64;
            let width = share * (x1 - x0);
            let (fill, ink) = exit_color(reason);
            let _ = write!(
                out,
                "<g><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{BAR}\" fill=\"{fill}\"/>",
                escape(&format!(
                    "{} · {} · {}: {reason} {count} of {} ({})",
                    row.config_id,
                    row.critic,
                    row.arm,
                    row.n,
                    percent(share)
                )),
                px(x),
                px(*y),
                px(width),
            );
            // Counts go inside segments wide enough to hold them.
            let label = count.to_string();
            if width > label.len() as f64 * 7.0 + 8.0 {
                let _ = write!(
                    out,
                    "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"inside\" fill=\"{ink}\">{label}</text>",
                    px(x + width / 2.0),
                    px(middle + 4.0)
                );
            }
            out.push_str("</g>");
            x += width;
        }
        text(out, value_x, middle + 4.0, "start", "value", &format!("n = {}", row.n));
    }
    out.push_str("</svg>\n");
}
