//! `report.html`: the summary for people, as one self-contained page.
//!
//! The page must open anywhere a run directory is copied to — a laptop offline, a CI artifact,
//! an email attachment — so it loads nothing: no scripts, fonts, stylesheets or images from
//! elsewhere. Charts are SVG written here as text, styled by one inline stylesheet; there is no
//! JavaScript. Every string that came from data (config ids, critic and arm names) is escaped.
//!
//! Charts, each an `<svg id="chart-…">` with a `<title>` and a caption:
//! - `chart-pass-rate`: pass rate per config × critic × arm, with 95% intervals (Wilson, or a
//!   task-cluster bootstrap when tasks ran several epochs);
//! - `chart-exit-reasons`: the four exits stacked per arm;
//! - `chart-score-trajectory`: mean critic score by round per arm (from `trajectories.parquet`);
//! - `chart-heatmap`: for grids over two policy parameters, each arm's pass rate and the first
//!   compared pair's paired difference over the grid (see [`crate::grid`]);
//! - `chart-pass-vs-rounds`: for grids only, pass rate against mean rounds per config, each arm's
//!   Pareto front ringed (and listed in `table-pareto`).
//!
//! Past [`crate::grid::MANY_CONFIGS`] configs the per-config charts and tables show the best and
//! worst configs of each arm; the heatmaps and the Pareto chart keep every config.
//!
//! Tables with the same numbers as `report.md` follow the charts.

use std::collections::HashMap;

use critbench_storage::manifest::{Manifest, PolicyRecord};
use std::fmt::Write;
use std::path::Path;

use critbench_storage::round_scores::{RoundMean, read_round_scores};

use crate::{ComparisonRow, Report, ReportError, SummaryRow};

/// Width of every chart's coordinate system; the page scales it to the column width.
pub(crate) const WIDTH: f64 = 960.0;
pub(crate) const TEXT: &str = "#1f2328";
const MUTED: &str = "#57606a";
pub(crate) const GRID: &str = "#d8dee4";
const EXIT_REASONS: [&str; 4] = ["pass", "stall", "plateau", "budget"];
/// Trajectory points averaging fewer loops than this are drawn hollow.
const FEW_LOOPS: u64 = 10;

/// Reads what the charts need beyond the report (round scores, pass thresholds) and writes
/// `report.html` into the run directory.
pub(crate) fn write_html(run_dir: &Path, report: &Report) -> Result<(), ReportError> {
    // Reports can be rebuilt from outcomes alone (SPEC §2); without trajectories the page says
    // the trajectory is unavailable instead of failing. A file that is there but unreadable is
    // an error, like a corrupt outcomes file.
    let trajectories = run_dir.join("trajectories.parquet");
    let rounds = if trajectories.is_file() {
        Some(read_round_scores(&trajectories).map_err(|e| ReportError::Corrupt(e.to_string()))?)
    } else {
        None
    };
    let manifest = Manifest::read(run_dir).map_err(|e| ReportError::Corrupt(e.to_string()))?;
    let policies = manifest.as_ref().map_or(&[][..], |m| &m.experiment.policies[..]);
    let html = render_html(report, rounds.as_deref(), &pass_scores(manifest.as_ref()), policies);
    let path = run_dir.join("report.html");
    std::fs::write(&path, html).map_err(|source| ReportError::Write { path, source })
}

/// Each config's pass threshold, from the manifest's resolved policies.
fn pass_scores(manifest: Option<&Manifest>) -> HashMap<String, f64> {
    manifest
        .into_iter()
        .flat_map(|m| m.experiment.policies.iter())
        .map(|p| (p.config_id.clone(), p.pass_score))
        .collect()
}

/// Escapes `text` and renders its `backticked` spans as `<code>`, as in the markdown report.
fn with_code_spans(text: &str) -> String {
    let mut out = String::new();
    for (index, part) in text.split('`').enumerate() {
        if index % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", escape(part));
        } else {
            out.push_str(&escape(part));
        }
    }
    out
}

/// Escapes text for HTML content and attribute values alike.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

pub(crate) fn percent(value: f64) -> String {
    format!("{:.1}%", 100.0 * value)
}

/// A coordinate: one decimal is finer than a pixel, and a non-finite value must not leave the
/// SVG unparseable.
pub(crate) fn px(value: f64) -> String {
    if value.is_finite() { format!("{value:.1}") } else { "0".to_string() }
}

/// Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
fn arm_color(arm: &str, index: usize) -> &'static str {
    match arm {
        "feedback" => "#0072b2",
        "no-feedback" => "#e69f00",
        "single" => "#7f7f7f",
        _ => ["#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#000000"][index % 5],
    }
}

fn exit_color(reason: &str) -> (&'static str, &'static str) {
    // (fill, text on it)
    match reason {
        "pass" => ("#009e73", "#ffffff"),
        "stall" => ("#d55e00", "#ffffff"),
        "plateau" => ("#cc79a7", "#ffffff"),
        _ => ("#b8bec5", TEXT),
    }
}

fn exit_count(row: &SummaryRow, reason: &str) -> u64 {
    match reason {
        "pass" => row.exit_pass,
        "stall" => row.exit_stall,
        "plateau" => row.exit_plateau,
        _ => row.exit_budget,
    }
}

/// Arms in the order the summary lists them, each with its colour.
fn arms(report: &Report) -> Vec<(String, &'static str)> {
    let mut arms: Vec<String> = Vec::new();
    for row in &report.summary {
        if !arms.contains(&row.arm) {
            arms.push(row.arm.clone());
        }
    }
    arms.into_iter().enumerate().map(|(i, arm)| (arm_color(&arm, i), arm)).map(|(color, arm)| (arm, color)).collect()
}

fn color_of(arms: &[(String, &'static str)], arm: &str) -> &'static str {
    arms.iter().find(|(a, _)| a == arm).map(|(_, c)| *c).unwrap_or(TEXT)
}

/// Unique values in first-seen order.
fn unique<'a>(values: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    for value in values {
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    seen
}

/// Summary rows grouped by config × critic, in report order (the summary is sorted that way).
fn groups(report: &Report) -> Vec<(&str, &str, Vec<&SummaryRow>)> {
    let mut groups: Vec<(&str, &str, Vec<&SummaryRow>)> = Vec::new();
    for row in &report.summary {
        match groups.last_mut() {
            Some((config, critic, rows)) if *config == row.config_id && *critic == row.critic => rows.push(row),
            _ => groups.push((&row.config_id, &row.critic, vec![row])),
        }
    }
    groups
}

/// A round step (1, 2, 2.5 or 5 times a power of ten) giving about `target` ticks over the range.
fn tick_step(low: f64, high: f64, target: f64) -> f64 {
    let raw = ((high - low) / target).max(1e-9);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(magnitude * 10.0)
}

/// Tick values from `low` to `high` at a round step, about `target` of them.
fn ticks(low: f64, high: f64, target: f64) -> Vec<f64> {
    let step = tick_step(low, high, target);
    let first = (low / step).ceil() as i64;
    let last = (high / step + 1e-9).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

fn tick_label(value: f64) -> String {
    if (value - value.round()).abs() < 1e-9 { format!("{value:.0}") } else { format!("{value:.1}") }
}

/// Opens a chart: `<svg>` with an accessible title and description.
pub(crate) fn open_svg(out: &mut String, id: &str, height: f64, title: &str, description: &str) {
    let _ = write!(
        out,
        "<svg id=\"{id}\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" \
         aria-labelledby=\"{id}-title {id}-desc\" preserveAspectRatio=\"xMinYMin meet\">\
         <title id=\"{id}-title\">{title}</title><desc id=\"{id}-desc\">{description}</desc>",
        w = px(WIDTH),
        h = px(height),
        title = escape(title),
        description = escape(description),
    );
}

pub(crate) fn text(out: &mut String, x: f64, y: f64, anchor: &str, class: &str, content: &str) {
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\" class=\"{class}\">{}</text>",
        px(x),
        px(y),
        escape(content)
    );
}

fn line(out: &mut String, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: &str, width: f64) {
    let _ = write!(
        out,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{stroke}\" stroke-width=\"{}\"/>",
        px(x1),
        px(y1),
        px(x2),
        px(y2),
        px(width)
    );
}

/// A row of coloured swatches with labels, starting at (x, y).
fn legend(out: &mut String, x: f64, y: f64, items: &[(&str, &str)]) {
    let mut x = x;
    for (label, color) in items {
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" rx=\"2\" fill=\"{color}\"/>",
            px(x),
            px(y - 10.0)
        );
        text(out, x + 17.0, y, "start", "legend", label);
        x += 17.0 + label.chars().count() as f64 * 7.0 + 22.0;
    }
}

// ---- (a) pass rate with intervals and (b) exit reasons: one row per config × critic × arm ------

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

fn pass_rate_chart(out: &mut String, report: &Report, arms: &[(String, &'static str)]) {
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

fn exit_reasons_chart(out: &mut String, report: &Report) {
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
    let items: Vec<(&str, &str)> = EXIT_REASONS.iter().map(|r| (*r, exit_color(r).0)).collect();
    legend(out, x0, 16.0, &items);
    percent_axis(out, x0, x1, top, layout.height);
    for (y, label) in &layout.headers {
        text(out, 0.0, *y, "start", "group", label);
    }
    for (y, row) in &layout.rows {
        let middle = y + BAR / 2.0;
        text(out, 14.0, middle + 4.0, "start", "label", &row.arm);
        let mut x = x0;
        for reason in EXIT_REASONS {
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

// ---- (c) the score trajectory: mean score by round, one panel per config × critic --------------

fn trajectory_chart(
    out: &mut String,
    report: &Report,
    rounds: &[RoundMean],
    arms: &[(String, &'static str)],
    pass_scores: &HashMap<String, f64>,
) {
    let panels = groups(report);
    let columns = panels.len().clamp(1, 3);
    let (gap, panel_height, top) = (24.0, 250.0, 30.0);
    let panel_width = (WIDTH - gap * (columns as f64 - 1.0)) / columns as f64;
    let panel_rows = panels.len().div_ceil(columns);
    let height = top + panel_rows as f64 * (panel_height + gap);

    // One score axis and one round axis for every panel, so panels compare at a glance.
    let mut low = f64::INFINITY;
    let mut high = f64::NEG_INFINITY;
    let mut last_round = 1;
    let shown = |r: &&RoundMean| panels.iter().any(|(config, critic, _)| r.config_id == *config && r.critic == *critic);
    for r in rounds.iter().filter(shown) {
        low = low.min(r.mean_score);
        high = high.max(r.mean_score);
        last_round = last_round.max(r.round);
    }
    for (config, _, _) in &panels {
        if let Some(threshold) = pass_scores.get(*config) {
            low = low.min(*threshold);
            high = high.max(*threshold);
        }
    }
    if !low.is_finite() {
        (low, high) = (0.0, 10.0);
    }
    // Widen to whole ticks so the frame starts and ends on a labelled gridline.
    let high = if high - low < 1.0 { low + 1.0 } else { high };
    let step = tick_step(low, high, 5.0);
    let (low, high) = ((low / step).floor() * step, (high / step).ceil() * step);

    open_svg(
        out,
        "chart-score-trajectory",
        height,
        "Score trajectory: mean critic score by round, per arm",
        &format!(
            "Line charts, one per config and critic, of the mean score at each round for each arm: {}.",
            rounds
                .iter()
                .filter(shown)
                .map(|r| format!(
                    "{} {} {} round {}: {:.2} over {} loops",
                    r.config_id, r.critic, r.arm, r.round, r.mean_score, r.count
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    );
    let items: Vec<(&str, &str)> = arms.iter().map(|(a, c)| (a.as_str(), *c)).collect();
    legend(out, 0.0, 16.0, &items);
    if pass_scores.values().next().is_some() {
        let x = 0.0 + items.iter().map(|(l, _)| 17.0 + l.chars().count() as f64 * 7.0 + 22.0).sum::<f64>();
        let _ = write!(
            out,
            "<line x1=\"{}\" y1=\"12\" x2=\"{}\" y2=\"12\" stroke=\"{MUTED}\" stroke-dasharray=\"4 3\"/>",
            px(x),
            px(x + 22.0)
        );
        text(out, x + 28.0, 16.0, "start", "legend", "pass score");
    }

    for (index, (config, critic, _)) in panels.iter().enumerate() {
        let left = (index % columns) as f64 * (panel_width + gap);
        let top = top + (index / columns) as f64 * (panel_height + gap);
        let (x0, x1) = (left + 34.0, left + panel_width - 10.0);
        let (y0, y1) = (top + 26.0, top + panel_height - 34.0); // y0 is the top of the plot
        let x_of = |round: u32| x0 + f64::from(round) / f64::from(last_round) * (x1 - x0);
        let y_of = |score: f64| y1 - (score - low) / (high - low) * (y1 - y0);
        let _ = write!(out, "<g class=\"panel\">");
        text(out, left, top + 12.0, "start", "group", &format!("{config} · {critic}"));
        for tick in ticks(low, high, 5.0) {
            line(out, (x0, y_of(tick)), (x1, y_of(tick)), GRID, 1.0);
            text(out, x0 - 6.0, y_of(tick) + 4.0, "end", "tick", &tick_label(tick));
        }
        for round in 0..=last_round {
            text(out, x_of(round), y1 + 16.0, "middle", "tick", &round.to_string());
        }
        text(out, (x0 + x1) / 2.0, y1 + 31.0, "middle", "axis", "round");
        if let Some(threshold) = pass_scores.get(*config) {
            let y = y_of(*threshold);
            let _ = write!(
                out,
                "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{MUTED}\" stroke-dasharray=\"4 3\"><title>pass \
                 score {}</title></line>",
                px(x0),
                px(y),
                px(x1),
                px(y),
                tick_label(*threshold)
            );
        }
        for (arm, color) in arms {
            let series: Vec<&RoundMean> =
                rounds.iter().filter(|r| r.config_id == *config && r.critic == *critic && &r.arm == arm).collect();
            if series.is_empty() {
                continue;
            }
            let points: Vec<String> =
                series.iter().map(|r| format!("{},{}", px(x_of(r.round)), px(y_of(r.mean_score)))).collect();
            let _ = write!(
                out,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2.5\" \
                 stroke-linejoin=\"round\"/>",
                points.join(" ")
            );
            for r in series {
                // A mean over a handful of loops is noise; draw it hollow so it reads as such.
                let (fill, stroke): (&str, &str) =
                    if r.count < FEW_LOOPS { ("#ffffff", color) } else { (color, "#ffffff") };
                let _ = write!(
                    out,
                    "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"1.5\">\
                     <title>{}</title></circle>",
                    px(x_of(r.round)),
                    px(y_of(r.mean_score)),
                    escape(&format!(
                        "{} · {} · {}, round {}: mean score {:.2} over {} loops",
                        r.config_id, r.critic, r.arm, r.round, r.mean_score, r.count
                    ))
                );
            }
        }
        out.push_str("</g>");
    }
    out.push_str("</svg>\n");
}

// ---- (d) grids: pass rate against rounds spent, one panel per critic ---------------------------

/// Config ids shortened for point labels: the `-`-separated parts every config shares (in a grid
/// over pass score and revision cap, `stall-e0`) say nothing about which point is which.
fn short_config_labels(configs: &[&str]) -> HashMap<String, String> {
    let parts: Vec<Vec<&str>> = configs.iter().map(|c| c.split('-').collect()).collect();
    let same_shape = parts.windows(2).all(|w| w[0].len() == w[1].len());
    let shared = |position: usize| parts.iter().all(|p| p[position] == parts[0][position]);
    configs
        .iter()
        .zip(&parts)
        .map(|(config, split)| {
            let kept: Vec<&str> =
                split.iter().enumerate().filter(|(i, _)| !same_shape || !shared(*i)).map(|(_, p)| *p).collect();
            let label = if kept.is_empty() { config.to_string() } else { kept.join("-") };
            (config.to_string(), label)
        })
        .collect()
}

/// An axis-aligned box: left, top, right, bottom.
type Box2 = (f64, f64, f64, f64);

/// Where a label goes: the first of a few spots around its point that stays inside `area` and
/// overlaps nothing placed before (greedy: grid points crowd, and overlapping labels are
/// unreadable). Returns the text's left end and baseline.
fn place_label(placed: &mut Vec<Box2>, (x, y): (f64, f64), width: f64, area: Box2) -> (f64, f64) {
    let height = 12.0;
    let candidates = [
        (x + 8.0, y + 4.0),
        (x - 8.0 - width, y + 4.0),
        (x - width / 2.0, y - 9.0),
        (x - width / 2.0, y + 18.0),
        (x + 7.0, y - 8.0),
        (x + 7.0, y + 16.0),
        (x - 7.0 - width, y - 8.0),
        (x - 7.0 - width, y + 16.0),
        (x + 8.0, y - 20.0),
        (x + 8.0, y + 28.0),
    ];
    let bounds = |(left, baseline): (f64, f64)| (left, baseline - height + 2.0, left + width, baseline + 3.0);
    let free = |spot: (f64, f64)| {
        let (left, top, right, bottom) = bounds(spot);
        left >= area.0
            && top >= area.1
            && right <= area.2
            && bottom <= area.3
            && placed.iter().all(|(l, t, r, b)| right < *l || left > *r || bottom < *t || top > *b)
    };
    let inside = |spot: &&(f64, f64)| {
        let (left, _, right, _) = bounds(**spot);
        left >= area.0 && right <= area.2
    };
    let spot = candidates
        .iter()
        .find(|c| free(**c))
        .or_else(|| candidates.iter().find(inside))
        .copied()
        .unwrap_or(candidates[0]);
    placed.push(bounds(spot));
    spot
}

/// One point of the scatter: the configs of an arm that landed on the same spot share it (in a
/// grid, the `single` arm ignores the revision cap, so its configs coincide).
struct Point<'a> {
    arm: &'a str,
    mean_rounds: f64,
    pass_rate: f64,
    rows: Vec<&'a SummaryRow>,
}

fn points<'a>(rows: &[&'a SummaryRow]) -> Vec<Point<'a>> {
    let mut points: Vec<Point<'a>> = Vec::new();
    for row in rows {
        let same = |p: &&mut Point<'a>| {
            p.arm == row.arm
                && (p.mean_rounds - row.mean_rounds).abs() < 1e-9
                && (p.pass_rate - row.pass_rate).abs() < 1e-9
        };
        match points.iter_mut().find(|p| same(p)) {
            Some(point) => point.rows.push(row),
            None => points.push(Point {
                arm: &row.arm,
                mean_rounds: row.mean_rounds,
                pass_rate: row.pass_rate,
                rows: vec![row],
            }),
        }
    }
    points
}

/// The rows of `report` on the Pareto front of their arm and critic, as (config, critic, arm).
fn front_rows(report: &Report) -> std::collections::HashSet<(&str, &str, &str)> {
    let mut by_arm: HashMap<(&str, &str), Vec<&SummaryRow>> = HashMap::new();
    for row in &report.summary {
        by_arm.entry((row.critic.as_str(), row.arm.as_str())).or_default().push(row);
    }
    let mut front = std::collections::HashSet::new();
    for rows in by_arm.values() {
        for (row, on) in rows.iter().zip(crate::grid::pareto_front(rows)) {
            if on {
                front.insert((row.config_id.as_str(), row.critic.as_str(), row.arm.as_str()));
            }
        }
    }
    front
}

fn pass_vs_rounds_chart(out: &mut String, report: &Report, arms: &[(String, &'static str)]) {
    let critics = unique(report.summary.iter().map(|r| r.critic.as_str()));
    let configs = unique(report.summary.iter().map(|r| r.config_id.as_str()));
    let labels = short_config_labels(&configs);
    // Past the size a page lists in full, only the front is labelled and described.
    let many = configs.len() > crate::grid::MANY_CONFIGS;
    let front = front_rows(report);
    let on_front = |r: &SummaryRow| front.contains(&(r.config_id.as_str(), r.critic.as_str(), r.arm.as_str()));
    let (panel_height, gap, top) = (380.0, 28.0, 30.0);
    let height = top + critics.len() as f64 * (panel_height + gap);
    // Rounds start at 1 (the first draft alone); pass rates span whole tens around the data.
    // Both axes get a margin so points on the extremes do not sit on the frame.
    let max_rounds = report.summary.iter().map(|r| r.mean_rounds).fold(1.0, f64::max).ceil().max(2.0);
    let (round_low, round_high) = (1.0 - 0.03 * (max_rounds - 1.0), max_rounds);
    let (min_rate, max_rate) =
        report.summary.iter().fold((1.0f64, 0.0f64), |(lo, hi), r| (lo.min(r.pass_rate), hi.max(r.pass_rate)));
    let (rate_floor, rate_ceiling) = ((min_rate * 10.0).floor() / 10.0, ((max_rate * 10.0).ceil() / 10.0).max(0.1));
    let rate_ceiling = if rate_ceiling <= rate_floor { rate_floor + 0.1 } else { rate_ceiling };
    let margin = 0.03 * (rate_ceiling - rate_floor);
    let (rate_low, rate_high) = (rate_floor - margin, rate_ceiling + margin);

    open_svg(
        out,
        "chart-pass-vs-rounds",
        height,
        "Pass rate against mean rounds, per config, with the Pareto front",
        &format!(
            "Scatter plots, one per critic: each point is a config and arm, placed by its mean rounds and \
             pass rate; configs on the Pareto front of their arm (no other config of the arm passes more often \
             in as few rounds) are ringed and joined by a dashed line. {}: {}.",
            if many { "On the front" } else { "Every point" },
            report
                .summary
                .iter()
                .filter(|r| !many || on_front(r))
                .map(|r| format!(
                    "{} {} {}: {} in {:.2} rounds",
                    r.config_id,
                    r.critic,
                    r.arm,
                    percent(r.pass_rate),
                    r.mean_rounds
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    );
    let items: Vec<(&str, &str)> = arms.iter().map(|(a, c)| (a.as_str(), *c)).collect();
    legend(out, 0.0, 16.0, &items);
    let x = items.iter().map(|(l, _)| 17.0 + l.chars().count() as f64 * 7.0 + 22.0).sum::<f64>();
    let _ = write!(
        out,
        "<circle cx=\"{}\" cy=\"11\" r=\"7\" fill=\"none\" stroke=\"{TEXT}\" stroke-width=\"1.5\"/>",
        px(x + 7.0)
    );
    text(out, x + 19.0, 16.0, "start", "legend", "Pareto front");
    for (index, critic) in critics.iter().enumerate() {
        let top = top + index as f64 * (panel_height + gap);
        let (x0, x1) = (56.0, WIDTH - 16.0);
        let (y0, y1) = (top + 26.0, top + panel_height - 40.0);
        let x_of = |rounds: f64| x0 + (rounds - round_low) / (round_high - round_low) * (x1 - x0);
        let y_of = |rate: f64| y1 - (rate - rate_low) / (rate_high - rate_low) * (y1 - y0);
        out.push_str("<g class=\"panel\">");
        text(out, 0.0, top + 12.0, "start", "group", critic);
        for tick in ticks(rate_floor, rate_ceiling, 5.0) {
            line(out, (x0, y_of(tick)), (x1, y_of(tick)), GRID, 1.0);
            text(out, x0 - 6.0, y_of(tick) + 4.0, "end", "tick", &format!("{:.0}%", 100.0 * tick));
        }
        for tick in ticks(1.0, max_rounds, 8.0) {
            line(out, (x_of(tick), y0), (x_of(tick), y1), GRID, 1.0);
            text(out, x_of(tick), y1 + 16.0, "middle", "tick", &tick_label(tick));
        }
        text(out, (x0 + x1) / 2.0, y1 + 33.0, "middle", "axis", "mean rounds per loop (critiques)");
        let _ = write!(
            out,
            "<text x=\"14\" y=\"{}\" text-anchor=\"middle\" class=\"axis\" transform=\"rotate(-90 14 {})\">pass \
             rate</text>",
            px((y0 + y1) / 2.0),
            px((y0 + y1) / 2.0)
        );
        let rows: Vec<&SummaryRow> = report.summary.iter().filter(|r| r.critic == *critic).collect();
        let points = points(&rows);
        // The front of each arm, joined in order of rounds.
        for (arm, color) in arms {
            let mut line: Vec<&SummaryRow> = rows.iter().copied().filter(|r| &r.arm == arm && on_front(r)).collect();
            line.sort_by(|a, b| a.mean_rounds.total_cmp(&b.mean_rounds).then(a.pass_rate.total_cmp(&b.pass_rate)));
            if line.len() > 1 {
                let coordinates: Vec<String> =
                    line.iter().map(|r| format!("{},{}", px(x_of(r.mean_rounds)), px(y_of(r.pass_rate)))).collect();
                let _ = write!(
                    out,
                    "<polyline class=\"pareto-front\" points=\"{}\" fill=\"none\" stroke=\"{color}\" \
                     stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/>",
                    coordinates.join(" ")
                );
            }
        }
        // Every point is placed before any label, so no label covers a point.
        let mut placed: Vec<Box2> = Vec::new();
        for point in &points {
            let color = color_of(arms, point.arm);
            let (x, y) = (x_of(point.mean_rounds), y_of(point.pass_rate));
            placed.push((x - 5.0, y - 5.0, x + 5.0, y + 5.0));
            let front = point.rows.iter().any(|r| on_front(r));
            if many && !front {
                // A point of a large grid off the front: its place only.
                let _ = write!(
                    out,
                    "<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{color}\" fill-opacity=\"0.45\"/>",
                    px(x),
                    px(y)
                );
                continue;
            }
            if front {
                let _ = write!(
                    out,
                    "<circle class=\"front\" cx=\"{}\" cy=\"{}\" r=\"8.5\" fill=\"none\" stroke=\"{color}\" \
                     stroke-width=\"1.5\"/>",
                    px(x),
                    px(y)
                );
                placed.push((x - 9.0, y - 9.0, x + 9.0, y + 9.0));
            }
            let configs: Vec<&str> = point.rows.iter().map(|r| r.config_id.as_str()).collect();
            let _ = write!(
                out,
                "<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{color}\" stroke=\"#ffffff\" stroke-width=\"1.5\">\
                 <title>{}</title></circle>",
                px(x),
                px(y),
                escape(&format!(
                    "{} · {critic} · {}: pass rate {} in {:.2} rounds ({:.3} passes per round){}",
                    configs.join(", "),
                    point.arm,
                    percent(point.pass_rate),
                    point.mean_rounds,
                    point.pass_rate / point.mean_rounds,
                    if front { "; on the Pareto front" } else { "" }
                ))
            );
        }
        for point in &points {
            if many && !point.rows.iter().any(|r| on_front(r)) {
                continue;
            }
            let (x, y) = (x_of(point.mean_rounds), y_of(point.pass_rate));
            let label: Vec<&str> = point.rows.iter().map(|r| labels[&r.config_id].as_str()).collect();
            let label = label.join(", ");
            let width = label.chars().count() as f64 * 6.0;
            let (lx, ly) = place_label(&mut placed, (x, y), width, (x0 + 2.0, y0 - 4.0, x1, y1));
            let _ = write!(
                out,
                "<text x=\"{}\" y=\"{}\" class=\"point\" fill=\"{}\">{}</text>",
                px(lx),
                px(ly),
                color_of(arms, point.arm),
                escape(&label)
            );
        }
        out.push_str("</g>");
    }
    out.push_str("</svg>\n");
}

// ---- tables --------------------------------------------------------------------------------------

/// Configs on the Pareto front of each critic and arm, fewest rounds first, with what a pass costs.
fn pareto_table(out: &mut String, report: &Report, arms: &[(String, &'static str)]) {
    let front = front_rows(report);
    let tokens = report.summary.iter().any(|r| r.tokens_in_per_pass.is_some());
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"table-pareto\"><thead><tr><th>critic</th><th>arm</th><th>config</th>\
         <th class=\"num\">pass rate</th><th class=\"num\">95% CI</th><th class=\"num\">mean rounds</th>\
         <th class=\"num\">rounds per passed loop</th>",
    );
    if tokens {
        out.push_str("<th class=\"num\">tokens in / out per passed loop</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    for critic in unique(report.summary.iter().map(|r| r.critic.as_str())) {
        for (arm, _) in arms {
            let mut rows: Vec<&SummaryRow> = report
                .summary
                .iter()
                .filter(|r| r.critic == critic && &r.arm == arm && front.contains(&(&r.config_id, critic, arm)))
                .collect();
            rows.sort_by(|a, b| a.mean_rounds.total_cmp(&b.mean_rounds).then(a.pass_rate.total_cmp(&b.pass_rate)));
            for row in rows {
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
                     <td class=\"num\">{:.2}</td><td class=\"num\">{}</td>{tokens_cell}</tr>",
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

fn format_p(p: f64) -> String {
    if p < 0.0001 { "&lt; 0.0001".to_string() } else { format!("{p:.4}") }
}

fn summary_table(out: &mut String, report: &Report) {
    out.push_str(
        "<div class=\"table-wrap\"><table id=\"table-summary\"><thead><tr><th>config</th><th>critic</th>\
         <th>arm</th><th class=\"num\">n</th><th class=\"num\">pass rate</th><th class=\"num\">95% CI</th>\
         <th class=\"num\">mean rounds</th><th class=\"num\">rounds per passed loop</th><th class=\"num\">pass</th>\
         <th class=\"num\">stall</th><th class=\"num\">plateau</th><th class=\"num\">budget</th>\
         <th class=\"num\">first → best score</th>",
    );
    let tokens = report.summary.iter().any(|r| r.tokens_in_per_loop.is_some());
    if tokens {
        out.push_str("<th class=\"num\">tokens in / out per loop</th><th class=\"num\">per passed loop</th>");
    }
    let errors = report.summary.iter().any(|r| r.critic_errors > 0);
    if errors {
        out.push_str("<th class=\"num\">critic errors</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in &report.summary {
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
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}–{}</td><td class=\"num\">{:.2}</td><td class=\"num\">{per_pass}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{:.2} → {:.2}</td>{tokens_cells}{errors_cell}</tr>",
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

fn comparison_row(out: &mut String, row: &ComparisonRow) {
    // Significance is marked, not hidden: the interval and the p-value are both shown.
    let class = if row.p_value < 0.05 { " class=\"significant\"" } else { "" };
    let _ = writeln!(
        out,
        "<tr{class}><td>{}</td><td>{}</td><td>{} vs {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
         <td class=\"num\">{}</td><td class=\"num\">{:+.1} pp<br><span class=\"ci\">({:+.1} to {:+.1})</span></td>\
         <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num p\">{}<br><span class=\"ci\">{}</span></td><td class=\"num\">{:.2} / {:.2}</td>\
         <td class=\"num\">{:.2} / {:.2}</td></tr>",
        escape(&row.config_id),
        escape(&row.critic),
        escape(&row.arm_a),
        escape(&row.arm_b),
        row.n_pairs,
        percent(row.pass_rate_a),
        percent(row.pass_rate_b),
        100.0 * row.diff,
        100.0 * row.diff_lo,
        100.0 * row.diff_hi,
        row.a_only,
        row.b_only,
        format_p(row.p_value),
        escape(&row.test),
        row.mean_rounds_a,
        row.mean_rounds_b,
        row.mean_best_score_a,
        row.mean_best_score_b,
    );
}

fn comparison_table(out: &mut String, report: &Report) {
    if report.comparisons.is_empty() {
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
    for row in &report.comparisons {
        comparison_row(out, row);
    }
    out.push_str("</tbody></table></div>\n");
}

// ---- the page ------------------------------------------------------------------------------------

const STYLE: &str = "
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #ffffff; color: #1f2328;
  font: 16px/1.55 system-ui, -apple-system, \"Segoe UI\", Roboto, \"Noto Sans\", \"Helvetica Neue\", Arial, sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 40px 28px 72px; }
h1 { font-size: 1.75rem; line-height: 1.25; margin: 0 0 0.4rem; }
h3 { font-size: 1.05rem; margin: 1.75rem 0 0.4rem; }
h2 { font-size: 1.25rem; margin: 2.75rem 0 0.6rem; padding-bottom: 0.3rem; border-bottom: 1px solid #d8dee4; }
p { margin: 0.5rem 0; max-width: 75ch; }
.meta { color: #57606a; font-size: 0.95rem; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, \"Liberation Mono\", monospace; font-size: 0.9em;
  background: #f6f8fa; padding: 0.1em 0.3em; border-radius: 4px; }
nav ul { list-style: none; padding: 0; margin: 1rem 0 0; display: flex; flex-wrap: wrap; gap: 0.4rem 1.2rem; }
nav a, a { color: #0550ae; text-decoration: none; }
nav a:hover { text-decoration: underline; }
figure { margin: 1rem 0 0; }
figcaption { color: #57606a; font-size: 0.9rem; margin-top: 0.5rem; max-width: 80ch; }
svg { display: block; width: 100%; height: auto; font-family: inherit; }
svg text { fill: #1f2328; font-size: 12px; }
svg text.group { font-weight: 600; font-size: 13px; }
svg text.label { font-size: 12.5px; }
svg text.value { font-size: 12px; font-variant-numeric: tabular-nums; }
svg text.tick, svg text.axis { fill: #57606a; font-size: 11.5px; }
svg text.inside { font-size: 11px; font-weight: 600; }
svg text.point { font-size: 10px; }
svg text.legend { font-size: 12.5px; }
svg text.cell-label { font-size: 11.5px; font-weight: 600; font-variant-numeric: tabular-nums; }
svg text.cell-interval { font-size: 10px; font-variant-numeric: tabular-nums; }
.table-wrap { overflow-x: auto; margin-top: 0.75rem; }
table { border-collapse: collapse; font-size: 0.82rem; font-variant-numeric: tabular-nums; width: 100%; }
th, td { padding: 0.35rem 0.5rem; border-bottom: 1px solid #d8dee4; text-align: left; white-space: nowrap; }
thead th { background: #f6f8fa; font-weight: 600; border-bottom: 1px solid #afb8c1; vertical-align: bottom;
  white-space: normal; }
.num { text-align: right; }
tr.significant td.p { font-weight: 700; }
.ci { color: #57606a; font-size: 0.92em; }
tbody tr:hover { background: #f6f8fa; }
.note { color: #57606a; font-style: italic; }
";

/// The whole page. `rounds` is `None` when the run directory has no `trajectories.parquet`;
/// `pass_scores` maps config ids to their threshold, drawn on the trajectory.
pub(crate) fn render_html(
    report: &Report,
    rounds: Option<&[RoundMean]>,
    pass_scores: &HashMap<String, f64>,
    policies: &[PolicyRecord],
) -> String {
    let arms = arms(report);
    let configs = unique(report.summary.iter().map(|r| r.config_id.as_str()));
    // Heatmaps need two axes of the manifest's grid, and at least one config of the report on it.
    let heatmap_grid =
        crate::grid::grid(policies).filter(|g| report.summary.iter().any(|r| g.cells.contains_key(&r.config_id)));
    // Past MANY_CONFIGS the per-config charts and tables show the best and worst configs only.
    let shown = crate::grid::shown_configs(report);
    let listed = shown.as_ref().map(|configs| crate::grid::restricted(report, configs));
    let full = report;
    let report = listed.as_ref().unwrap_or(report);
    let critics = unique(report.summary.iter().map(|r| r.critic.as_str()));
    let grid = configs.len() > 1;
    let loops: u64 = full.summary.iter().map(|r| r.n).sum();
    let name = report.name.as_deref().unwrap_or("run");
    let plural = |count: usize, word: &str| format!("{count} {word}{}", if count == 1 { "" } else { "s" });

    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light\">\n<title>critbench report: {}</title>\n<style>{STYLE}</style>\n\
         </head>\n<body>\n<main>\n<header>\n<h1>critbench report: {}</h1>\n",
        escape(name),
        escape(name)
    );
    let _ = writeln!(
        out,
        "<p class=\"meta\">{}{} loops · {} · {} · {}</p>",
        report.run_id.as_deref().map(|id| format!("Run <code>{}</code> · ", escape(id))).unwrap_or_default(),
        loops,
        plural(configs.len(), "config"),
        plural(critics.len(), "critic"),
        plural(arms.len(), "arm"),
    );
    out.push_str("<nav><ul><li><a href=\"#chart-pass-rate\">Pass rate</a></li>");
    out.push_str("<li><a href=\"#chart-exit-reasons\">Exit reasons</a></li>");
    out.push_str("<li><a href=\"#chart-score-trajectory\">Score trajectory</a></li>");
    if heatmap_grid.is_some() {
        out.push_str("<li><a href=\"#chart-heatmap\">Grid heatmaps</a></li>");
    }
    if grid {
        out.push_str("<li><a href=\"#chart-pass-vs-rounds\">Passes per round</a></li>");
        out.push_str("<li><a href=\"#table-pareto\">Pareto front</a></li>");
    }
    out.push_str("<li><a href=\"#table-summary\">Summary table</a></li>");
    out.push_str("<li><a href=\"#table-comparisons\">Paired comparisons</a></li></ul></nav>\n</header>\n");

    // What the reader must know before trusting the numbers: failed loops, a token cap, models.
    if !report.notes.is_empty() {
        out.push_str("<section id=\"notes\">\n<h2>Notes</h2>\n<ul>\n");
        for note in &report.notes {
            let _ = writeln!(out, "<li>{}</li>", with_code_spans(note));
        }
        out.push_str("</ul>\n</section>\n");
    }

    if let Some(shown) = &shown {
        let _ = writeln!(
            out,
            "<p class=\"note\" id=\"summarised\">This grid has {} configs: the charts and tables per config below show \
             {} of them, the {} best and {} worst by pass rate of each arm. The heatmaps and the pass-rate-against-rounds \
             chart cover every config; <code>summary.csv</code>, <code>comparisons.csv</code> and \
             <code>config_comparisons.csv</code> hold every row.</p>",
            configs.len(),
            shown.len(),
            crate::grid::EXTREMES,
            crate::grid::EXTREMES,
        );
    }
    if let (Some(grid), false) = (&heatmap_grid, full.summary.is_empty()) {
        out.push_str("<section>\n<h2>The grid at a glance</h2>\n<figure>\n");
        let left_out = crate::grid::heatmap_chart(&mut out, full, grid, &arms);
        let pair = crate::grid::compared_pair(full);
        let _ = writeln!(
            out,
            "<figcaption>Each cell is one config: {} down, {} across; darker blue is a higher pass rate.{} \
             Hover a cell for its interval, counts and rounds.{}</figcaption>\n</figure>\n</section>",
            escape(&grid.y_axis),
            escape(&grid.x_axis),
            match pair {
                Some((a, b)) => format!(
                    " The last heatmap is the paired difference {} − {} in percentage points (blue: {} ahead, red: \
                     {} ahead) with its 95% interval; cells outlined and starred (*) are those whose interval \
                     excludes 0.",
                    escape(a),
                    escape(b),
                    escape(a),
                    escape(b)
                ),
                None => String::new(),
            },
            if left_out > 0 {
                format!(" {left_out} more combinations of the other axes are not drawn; the CSVs have them.")
            } else {
                String::new()
            }
        );
    }
    if report.summary.is_empty() {
        out.push_str("<p class=\"note\">The run has no outcomes: nothing to chart.</p>\n");
    } else {
        out.push_str("<section>\n<h2>Pass rate by arm</h2>\n<figure>\n");
        pass_rate_chart(&mut out, report, &arms);
        out.push_str(
            "<figcaption>Share of loops whose exit was <code>pass</code>. Whiskers are 95% intervals (see the \
             summary table). The arms of a config and critic ran on the same tasks and epochs; the paired comparisons below \
             say whether their difference is real.</figcaption>\n</figure>\n</section>\n",
        );

        out.push_str("<section>\n<h2>Why loops stopped</h2>\n<figure>\n");
        exit_reasons_chart(&mut out, report);
        out.push_str(
            "<figcaption>Each bar splits an arm's loops by exit reason: <code>pass</code> (the critique cleared \
             the bar), <code>stall</code> (the score fell), <code>plateau</code> (improvements became too small) \
             and <code>budget</code> (the revision cap was reached). Hover a segment for its share.\
             </figcaption>\n</figure>\n</section>\n",
        );

        out.push_str("<section>\n<h2>Score trajectory</h2>\n<figure>\n");
        match rounds {
            Some(rounds) => {
                trajectory_chart(&mut out, report, rounds, &arms, pass_scores);
                out.push_str(
                    "<figcaption>Mean critic score at each round (round 0 is the first draft). Each point \
                     averages the loops still running at that round, so loops that passed or stopped early drop \
                     out and later rounds hold the harder tasks; hover a point for its count. Hollow points \
                     average fewer than 10 loops. The dashed line is the config's pass score.</figcaption>\n",
                );
            }
            None => out.push_str(
                "<p class=\"note\" id=\"chart-score-trajectory\">No <code>trajectories.parquet</code> in this run \
                 directory: the score trajectory needs it.</p>\n",
            ),
        }
        out.push_str("</figure>\n</section>\n");

        if grid {
            out.push_str("<section>\n<h2>Passes per round spent</h2>\n<figure>\n");
            pass_vs_rounds_chart(&mut out, full, &arms);
            out.push_str(
                "<figcaption>Each point is one config and arm: how often its loops passed against how many \
                 rounds they used on average. Up and to the left is better: more passes for fewer rounds spent. \
                 Ringed points, joined by a dashed line, are each arm's Pareto front: no other config of that arm \
                 and critic passes more often in as few rounds or fewer. Points are labelled by config id, leaving \
                 out the parts all configs share; configs that landed on the same spot share a point.",
            );
            if full.summary.len() != report.summary.len() {
                out.push_str(" In a grid this large only the front is labelled.");
            }
            out.push_str("</figcaption>\n</figure>\n<h3>Pareto front</h3>\n");
            out.push_str(
                "<p>The configs worth shipping for each arm: the front, fewest rounds first. Rounds per passed loop \
                 is what a pass costs.</p>\n",
            );
            pareto_table(&mut out, full, &arms);
            out.push_str("</section>\n");
        }
    }

    out.push_str("<section>\n<h2>Pass rate, rounds and exits per arm</h2>\n");
    let _ = writeln!(
        out,
        "<p>A loop passes when its exit is <code>pass</code>. Rounds count critiques (round 0 is the first draft). \
         {}</p>",
        with_code_spans(&crate::markdown::interval_sentence(report))
    );
    summary_table(&mut out, report);
    out.push_str("</section>\n<section>\n<h2 id=\"paired-comparisons\">Paired comparisons</h2>\n");
    let _ = writeln!(
        out,
        "<p>{} Rows with p below 0.05 are bold.</p>",
        with_code_spans(&crate::markdown::comparison_sentence(report))
    );
    comparison_table(&mut out, report);
    out.push_str("</section>\n</main>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(config_id: &str, critic: &str, arm: &str, passed: u64, mean_rounds: f64) -> SummaryRow {
        let n = 100;
        let (lo, hi) = crate::stats::wilson_interval(passed, n);
        SummaryRow {
            config_id: config_id.into(),
            arm: arm.into(),
            critic: critic.into(),
            n,
            passed,
            pass_rate: passed as f64 / n as f64,
            pass_rate_lo: lo,
            pass_rate_hi: hi,
            mean_rounds,
            exit_pass: passed,
            exit_stall: (n - passed) / 2,
            exit_plateau: 0,
            exit_budget: n - passed - (n - passed) / 2,
            mean_first_score: 5.0,
            mean_best_score: 7.0,
            mean_final_score: 7.0,
            critic_errors: 0,
            ..SummaryRow::default()
        }
    }

    fn report(configs: &[&str], critic: &str) -> Report {
        let mut rows = Vec::new();
        for (i, config) in configs.iter().enumerate() {
            let i = i as u64;
            rows.push(summary(config, critic, "feedback", 80 - i, 2.5 + 0.1 * i as f64));
            rows.push(summary(config, critic, "no-feedback", 30, 3.0));
        }
        Report {
            run_id: Some("run-1".into()),
            name: Some("demo".into()),
            summary: rows,
            comparisons: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn round(config_id: &str, critic: &str, arm: &str, round: u32, mean_score: f64) -> RoundMean {
        RoundMean { config_id: config_id.into(), critic: critic.into(), arm: arm.into(), round, mean_score, count: 10 }
    }

    #[test]
    fn notes_are_shown_with_code_spans_and_escaped() {
        let mut with_notes = report(&["p8"], "rubric");
        with_notes.notes = vec!["2 loop(s) failed; `failed_loops` in manifest.json says why <b>".into()];
        let page = render_html(&with_notes, None, &HashMap::new(), &[]);
        assert!(page.contains("<section id=\"notes\">"));
        assert!(
            page.contains("<li>2 loop(s) failed; <code>failed_loops</code> in manifest.json says why &lt;b&gt;</li>")
        );
        let page = render_html(&report(&["p8"], "rubric"), None, &HashMap::new(), &[]);
        assert!(!page.contains("id=\"notes\""), "no notes, no section");
    }

    #[test]
    fn names_from_data_are_escaped_everywhere() {
        let critic = "<script>alert(\"x\")</script>&'";
        let page = render_html(
            &report(&["p8", "p9"], critic),
            Some(&[round("p8", critic, "feedback", 0, 5.0)]),
            &HashMap::new(),
            &[],
        );
        assert!(!page.contains("<script"), "raw markup from data reached the page");
        assert!(page.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"));
    }

    #[test]
    fn every_chart_is_an_svg_with_a_title_and_the_grid_chart_only_for_grids() {
        let rounds = [round("p8", "rubric", "feedback", 0, 5.0), round("p8", "rubric", "feedback", 1, 7.5)];
        let one = render_html(&report(&["p8"], "rubric"), Some(&rounds), &HashMap::from([("p8".into(), 8.0)]), &[]);
        for id in ["chart-pass-rate", "chart-exit-reasons", "chart-score-trajectory"] {
            assert!(one.contains(&format!("<svg id=\"{id}\"")), "{id} missing");
            assert!(one.contains(&format!("<title id=\"{id}-title\">")), "{id} has no title");
        }
        assert!(!one.contains("chart-pass-vs-rounds"), "a single config has nothing to trade off");
        // The trajectory joins its rounds with a line; the pass score is drawn.
        assert!(one.contains("<polyline points=\""));
        assert!(one.contains("pass score 8"));

        let grid = render_html(&report(&["p7", "p8", "p9"], "rubric"), Some(&rounds), &HashMap::new(), &[]);
        assert!(grid.contains("<svg id=\"chart-pass-vs-rounds\""));
        for config in ["p7", "p8", "p9"] {
            assert!(grid.contains(&format!("class=\"point\" fill=\"#0072b2\">{config}</text>")), "{config} unlabelled");
        }
        // no-feedback landed on one spot in every config: one point, one label naming them all.
        assert!(grid.contains("class=\"point\" fill=\"#e69f00\">p7, p8, p9</text>"), "{grid}");
        assert_eq!(grid.matches("fill=\"#e69f00\" stroke=\"#ffffff\"").count(), 1);
    }

    fn policy(pass_score: f64, max_revisions: u32) -> PolicyRecord {
        PolicyRecord {
            config_id: format!("p{pass_score}-r{max_revisions}"),
            pass_score,
            max_revisions,
            rest: serde_json::Map::new(),
        }
    }

    #[test]
    fn a_grid_gets_heatmaps_of_each_arm_and_of_the_paired_difference() {
        let policies: Vec<PolicyRecord> =
            [7.0, 8.0, 9.0].iter().flat_map(|p| [1, 3, 5].map(|r| policy(*p, r))).collect();
        let configs: Vec<&str> = policies.iter().map(|p| p.config_id.as_str()).collect();
        let mut grid = report(&configs, "rubric");
        for (i, config) in configs.iter().enumerate() {
            let diff = (50.0 - i as f64 * 6.0) / 100.0;
            grid.comparisons.push(ComparisonRow {
                config_id: config.to_string(),
                critic: "rubric".into(),
                arm_a: "feedback".into(),
                arm_b: "no-feedback".into(),
                diff,
                diff_lo: diff - 0.1,
                diff_hi: diff + 0.1,
                ..ComparisonRow::default()
            });
        }
        let page = render_html(&grid, None, &HashMap::new(), &policies);
        assert!(page.contains("<svg id=\"chart-heatmap\""));
        assert!(page.contains("<title id=\"chart-heatmap-title\">Pass rate over pass_score × max_revisions"));
        // 9 cells for each arm and 9 for the difference.
        assert_eq!(page.matches("<rect class=\"cell").count(), 27);
        // Intervals diff ± 10 pp leave out 0 while |diff| > 10 pp: 50, 44, 38, 32, 26, 20, 14 pp.
        assert_eq!(page.matches("<rect class=\"cell significant\"").count(), 7);
        assert!(page.contains(">+50 pp*</text>") && page.contains(">+40 to +60</text>"), "{page}");
        assert!(page.contains(">+2 pp</text>"), "p9-r5: +2 pp, interval includes 0, no star");
        // Each arm's cell is labelled with its rate: feedback at p7-r1 passed 80 of 100.
        assert!(page.contains(">80%</text>"));
        assert!(page.contains(">pass_score</text>") && page.contains(">max_revisions</text>"));
        // Without the manifest's policies there are no axes to draw.
        let page = render_html(&grid, None, &HashMap::new(), &[]);
        assert!(!page.contains("chart-heatmap"));
    }

    #[test]
    fn the_pareto_front_is_ringed_joined_and_tabled() {
        let page = render_html(&report(&["p7", "p8", "p9"], "rubric"), None, &HashMap::new(), &[]);
        // Feedback: rates 80, 79, 78% at 2.5, 2.6, 2.7 rounds: only p7 is on its front; the
        // no-feedback configs coincide (30% in 3 rounds) and share one ringed point.
        assert_eq!(page.matches("<circle class=\"front\"").count(), 2, "{page}");
        assert!(page.contains("<table id=\"table-pareto\">"));
        let table = &page[page.find("<table id=\"table-pareto\">").unwrap()..];
        let table = &table[..table.find("</table>").unwrap()];
        assert_eq!(table.matches("<tr><td>").count(), 1 + 3, "{table}");
        assert!(table.contains("<td>feedback</td><td>p7</td>"));
        assert!(!table.contains("<td>p8</td><td class=\"num\">79.0%"), "{table}");
    }

    #[test]
    fn point_labels_leave_out_what_every_config_shares() {
        let labels = short_config_labels(&["p7-r1-stall-e0", "p8-r1-stall-e0", "p8-r3-stall-e0"]);
        assert_eq!(labels["p7-r1-stall-e0"], "p7-r1");
        assert_eq!(labels["p8-r3-stall-e0"], "p8-r3");
        let labels = short_config_labels(&["p8-r3-stall-e0", "p8-r3-nostall-e0"]);
        assert_eq!(labels["p8-r3-nostall-e0"], "nostall");
        // Ids of different shapes are kept whole rather than cut inconsistently.
        let labels = short_config_labels(&["a-b", "a-b-c"]);
        assert_eq!((labels["a-b"].as_str(), labels["a-b-c"].as_str()), ("a-b", "a-b-c"));
    }

    #[test]
    fn labels_avoid_each_other_and_stay_in_the_plot() {
        let mut placed = Vec::new();
        let area = (0.0, 0.0, 200.0, 200.0);
        let first = place_label(&mut placed, (100.0, 100.0), 40.0, area);
        let second = place_label(&mut placed, (100.0, 100.0), 40.0, area);
        assert_ne!(first, second);
        // A point on the right edge puts its label to the left.
        let edge = place_label(&mut placed, (198.0, 50.0), 40.0, area);
        assert!(edge.0 + 40.0 <= 200.0, "{edge:?}");
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        let page = render_html(&report(&["p7", "p8"], "rubric"), Some(&[]), &HashMap::new(), &[]);
        assert!(!page.contains("http://") && !page.contains("https://"));
        assert!(!page.contains("<script") && !page.contains("<link") && !page.contains("@import"));
        assert!(!page.contains("url("));
    }

    #[test]
    fn without_trajectories_the_page_says_so() {
        let page = render_html(&report(&["p8"], "rubric"), None, &HashMap::new(), &[]);
        assert!(page.contains("No <code>trajectories.parquet</code>"));
        assert!(page.contains("<svg id=\"chart-pass-rate\""));
    }

    #[test]
    fn the_summary_table_shows_what_a_pass_costs() {
        let mut costed = report(&["p8"], "rubric");
        costed.summary[0].mean_rounds_passed = 2.25;
        let page = render_html(&costed, None, &HashMap::new(), &[]);
        assert!(page.contains("<td class=\"num\">2.50</td><td class=\"num\">2.25</td>"), "{page}");
        assert!(!page.contains("tokens in / out per loop"), "no tokens, no token columns");
        costed.summary[0].tokens_in_per_loop = Some(1200.0);
        costed.summary[0].tokens_out_per_loop = Some(300.4);
        costed.summary[0].tokens_in_per_pass = Some(1000.0);
        costed.summary[0].tokens_out_per_pass = Some(250.0);
        let page = render_html(&costed, None, &HashMap::new(), &[]);
        assert!(page.contains("<td class=\"num\">1200 / 300</td><td class=\"num\">1000 / 250</td>"), "{page}");
        // An arm without token counts shows dashes in those columns.
        assert!(page.contains("<td class=\"num\">–</td><td class=\"num\">–</td>"));
    }

    #[test]
    fn bars_and_whiskers_are_drawn_to_scale() {
        let page = render_html(&report(&["p8"], "rubric"), None, &HashMap::new(), &[]);
        // 80% of the 210..740 axis is 424 wide.
        assert!(page.contains("width=\"424.0\" height=\"14\" fill=\"#0072b2\""), "{page}");
        // Exit segments of a row add up to the full axis (650 wide): 80 + 10 + 10 of 100.
        assert!(page.contains("width=\"520.0\" height=\"14\" fill=\"#009e73\""));
        assert!(page.contains("width=\"65.0\" height=\"14\" fill=\"#d55e00\""));
    }

    #[test]
    fn ticks_are_round_numbers_covering_the_range() {
        assert_eq!(ticks(0.0, 1.0, 5.0), vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]);
        assert_eq!(ticks(4.0, 9.0, 5.0), vec![4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
        assert_eq!(ticks(1.0, 4.0, 8.0), vec![1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]);
    }
}
