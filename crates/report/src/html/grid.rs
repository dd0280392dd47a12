//! The grid views of `report.html`: heatmaps over a policy grid's two main axes, the Pareto front
//! of pass rate against rounds, and which configs a large grid's page lists.
//!
//! - `chart-heatmap`: per critic (and per value of any further axis that varies), each arm's pass
//!   rate over the two axes, and the paired difference of the first compared pair of arms with
//!   its 95% interval; cells whose interval excludes 0 are outlined and starred.
//! - The Pareto front of an arm and critic: the configs no other config of that arm and critic
//!   beats on pass rate at fewer or equal mean rounds.
//! - Past [`MANY_CONFIGS`] configs the per-config charts and tables show the [`EXTREMES`] best and
//!   worst configs by pass rate of each arm; the CSVs keep everything.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use critbench_storage::manifest::PolicyRecord;
use serde_json::Value;

use crate::Report;
use crate::configs::{axes, axis_value, value_order};
use crate::html::svg::{GRID, TEXT, WIDTH, escape, open_svg, percent, px, text};
use crate::rows::{ComparisonRow, SummaryRow};

/// Past this many configs the page summarises instead of listing every config.
pub(crate) const MANY_CONFIGS: usize = 50;
/// How many best and worst configs per arm a summarised page shows.
pub(crate) const EXTREMES: usize = 10;
/// The most slices (values of the axes beyond the first two) drawn as heatmaps per critic.
const MAX_SLICES: usize = 6;

/// A policy grid laid out on its two main axes: the first two parameters (in
/// [`crate::configs::axes`] order: `pass_score`, `max_revisions`, then the rest by name) that take
/// more than one value. Configs that differ in further parameters fall in separate slices.
#[derive(Debug)]
pub(crate) struct Grid {
    /// Rows of a heatmap.
    pub y_axis: String,
    pub y_values: Vec<Value>,
    /// Columns of a heatmap.
    pub x_axis: String,
    pub x_values: Vec<Value>,
    /// Labels of the value combinations of the other varying axes (one empty label when none).
    pub slices: Vec<String>,
    /// config id → (slice, row, column).
    pub cells: HashMap<String, (usize, usize, usize)>,
}

/// A value of an axis as a reader writes it: numbers and booleans plain, strings unquoted.
fn value_label(value: &Value) -> String {
    match value {
        Value::Null => "none".to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{f:.0}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// The grid of the manifest's policies, when two parameters take more than one value.
pub(crate) fn grid(policies: &[PolicyRecord]) -> Option<Grid> {
    let names = axes(policies);
    let values_of = |axis: &str| {
        let mut values: Vec<Value> = policies.iter().map(|p| axis_value(p, axis)).collect();
        values.sort_by(value_order);
        values.dedup();
        values
    };
    let varying: Vec<(&String, Vec<Value>)> =
        names.iter().map(|axis| (axis, values_of(axis))).filter(|(_, values)| values.len() > 1).collect();
    if varying.len() < 2 {
        return None;
    }
    let others: Vec<&String> = varying[2..].iter().map(|(axis, _)| *axis).collect();
    let slice_of = |policy: &PolicyRecord| -> Vec<Value> { others.iter().map(|a| axis_value(policy, a)).collect() };
    let mut slice_values: Vec<Vec<Value>> = policies.iter().map(slice_of).collect();
    slice_values.sort_by(|a, b| {
        a.iter().zip(b).map(|(x, y)| value_order(x, y)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
    });
    slice_values.dedup();
    let (y_values, x_values) = (varying[0].1.clone(), varying[1].1.clone());
    let position = |values: &[Value], value: &Value| values.iter().position(|v| v == value).unwrap_or(0);
    let cells = policies
        .iter()
        .map(|p| {
            let slice = slice_values.iter().position(|s| *s == slice_of(p)).unwrap_or(0);
            let row = position(&y_values, &axis_value(p, varying[0].0));
            let column = position(&x_values, &axis_value(p, varying[1].0));
            (p.config_id.clone(), (slice, row, column))
        })
        .collect();
    let slices = slice_values
        .iter()
        .map(|values| {
            others.iter().zip(values).map(|(a, v)| format!("{a} = {}", value_label(v))).collect::<Vec<_>>().join(", ")
        })
        .collect();
    Some(Grid { y_axis: varying[0].0.clone(), y_values, x_axis: varying[1].0.clone(), x_values, slices, cells })
}

/// Which rows of one arm and critic are on the Pareto front of pass rate against what they spend
/// (`spent`: mean rounds, or money per loop when the run was priced): no other row passes at
/// least as often for at most as much and is better on one of the two. Rows that coincide are on
/// it together.
pub(crate) fn pareto_front(rows: &[&SummaryRow], spent: impl Fn(&SummaryRow) -> f64) -> Vec<bool> {
    // Sorted by what they spend (then best rate first), a row is on the front when its rate is
    // the best of its tie and beats every rate seen at less.
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        spent(rows[a]).total_cmp(&spent(rows[b])).then(rows[b].pass_rate.total_cmp(&rows[a].pass_rate))
    });
    let mut front = vec![false; rows.len()];
    let mut best = f64::NEG_INFINITY;
    let mut i = 0;
    while i < order.len() {
        let rounds = spent(rows[order[i]]);
        let tie_end = order[i..].iter().position(|&k| spent(rows[k]) != rounds).map_or(order.len(), |n| i + n);
        let tie_best = rows[order[i]].pass_rate;
        for &k in &order[i..tie_end] {
            front[k] = tie_best > best && rows[k].pass_rate == tie_best;
        }
        best = best.max(tie_best);
        i = tie_end;
    }
    front
}

/// The configs a page of more than [`MANY_CONFIGS`] configs lists: for each arm, the configs of
/// its [`EXTREMES`] best and worst config × critic rows by pass rate. `None` when the page lists
/// every config.
pub(crate) fn shown_configs(report: &Report) -> Option<HashSet<String>> {
    let mut configs: Vec<&str> = Vec::new();
    let mut seen = HashSet::new();
    for row in &report.summary.rows {
        if seen.insert(row.config_id.as_str()) {
            configs.push(&row.config_id);
        }
    }
    if configs.len() <= MANY_CONFIGS {
        return None;
    }
    let mut shown = HashSet::new();
    let mut arms: Vec<&str> = Vec::new();
    for row in &report.summary.rows {
        if !arms.contains(&row.arm.as_str()) {
            arms.push(&row.arm);
        }
    }
    for arm in arms {
        let mut rows: Vec<(usize, &SummaryRow)> =
            report.summary.rows.iter().filter(|r| r.arm == arm).enumerate().collect();
        rows.sort_by(|a, b| b.1.pass_rate.total_cmp(&a.1.pass_rate).then(a.0.cmp(&b.0)));
        let worst = rows.len().saturating_sub(EXTREMES);
        for (index, (_, row)) in rows.iter().enumerate() {
            if index < EXTREMES || index >= worst {
                shown.insert(row.config_id.clone());
            }
        }
    }
    Some(shown)
}

/// The report restricted to `configs` (rows keep their order).
pub(crate) fn restricted(report: &Report, configs: &HashSet<String>) -> Report {
    let summary = &report.summary;
    Report {
        summary: crate::Summary {
            run_id: summary.run_id.clone(),
            name: summary.name.clone(),
            currency: summary.currency.clone(),
            partial: summary.partial.clone(),
            rows: summary.rows.iter().filter(|r| configs.contains(&r.config_id)).cloned().collect(),
            comparisons: summary.comparisons.iter().filter(|c| configs.contains(&c.config_id)).cloned().collect(),
            notes: summary.notes.clone(),
            timing: summary.timing.clone(),
            censored: summary.censored.iter().filter(|(key, _)| configs.contains(&key.0)).cloned().collect(),
            spend: crate::spend::Spend {
                curves: summary.spend.curves.iter().filter(|c| configs.contains(&c.config_id)).cloned().collect(),
                comparisons: summary
                    .spend
                    .comparisons
                    .iter()
                    .filter(|c| configs.contains(&c.config_id))
                    .cloned()
                    .collect(),
            },
            by_kind: summary
                .by_kind
                .iter()
                .map(|kind| crate::KindReport {
                    kind: kind.kind.clone(),
                    summary: kind.summary.iter().filter(|r| configs.contains(&r.config_id)).cloned().collect(),
                    comparisons: kind.comparisons.iter().filter(|c| configs.contains(&c.config_id)).cloned().collect(),
                })
                .collect(),
        },
        backend: report.backend.clone(),
        power: report.power.iter().filter(|p| configs.contains(&p.config_id)).cloned().collect(),
        held_out: Vec::new(),
        config_comparisons: Vec::new(),
        evaluators: report.evaluators.as_ref().map(|e| crate::evaluators::EvaluatorReport {
            rows: e.rows.iter().filter(|r| configs.contains(&r.config_id)).cloned().collect(),
            comparisons: e.comparisons.iter().filter(|c| configs.contains(&c.config_id)).cloned().collect(),
            disagreements: e.disagreements.iter().filter(|d| configs.contains(&d.config_id)).cloned().collect(),
            rounds: e.rounds.iter().filter(|r| configs.contains(&r.config_id)).cloned().collect(),
            truth: e.truth.clone(),
        }),
        sequential: report.sequential.clone(),
        trouble: report.trouble.clone(),
        rescored_by: report.rescored_by.clone(),
    }
}

/// The pair of arms the heatmaps compare: that of the first comparison of two arms that ran.
pub(crate) fn compared_pair(report: &Report) -> Option<(&str, &str)> {
    report.summary.comparisons.iter().find(|c| c.between_arms_that_ran()).map(|c| (c.arm_a.as_str(), c.arm_b.as_str()))
}

/// Pass rate 0..1 on a white-to-blue scale; the text colour that reads on it.
fn rate_fill(rate: f64) -> (String, &'static str) {
    let t = rate.clamp(0.0, 1.0);
    let mix = |from: f64, to: f64| (from + (to - from) * t).round() as u8;
    let fill = format!("#{:02x}{:02x}{:02x}", mix(247.0, 8.0), mix(251.0, 69.0), mix(255.0, 148.0));
    (fill, if t > 0.55 { "#ffffff" } else { TEXT })
}

/// A difference on a red–white–blue scale, `scale` being the largest magnitude drawn.
fn diff_fill(diff: f64, scale: f64) -> (String, &'static str) {
    let t = (diff / scale).clamp(-1.0, 1.0);
    let (to_r, to_g, to_b) = if t >= 0.0 { (33.0, 102.0, 172.0) } else { (178.0, 24.0, 43.0) };
    let a = t.abs();
    let mix = |to: f64| (255.0 + (to - 255.0) * a).round() as u8;
    (format!("#{:02x}{:02x}{:02x}", mix(to_r), mix(to_g), mix(to_b)), if a > 0.6 { "#ffffff" } else { TEXT })
}

fn signed_pp(value: f64) -> String {
    format!("{:+.0}", 100.0 * value)
}

/// Whether a comparison's interval leaves 0 out (never for sides identical by design).
pub(crate) fn excludes_zero(row: &ComparisonRow) -> bool {
    row.diff_lo.is_some_and(|lo| lo > 0.0) || row.diff_hi.is_some_and(|hi| hi < 0.0)
}

/// What one heatmap panel draws in each cell.
enum Panel<'a> {
    Rate(&'a str),
    Diff(&'a str, &'a str),
}

/// Panel geometry shared by every panel of a chart.
struct Cells {
    width: f64,
    height: f64,
    plot_width: f64,
    cell_w: f64,
    cell_h: f64,
}

const PANEL_GAP: f64 = 24.0;
const PLOT_LEFT: f64 = 64.0;
const PLOT_TOP: f64 = 46.0;

fn cells(grid: &Grid) -> Cells {
    let width = (WIDTH - PANEL_GAP) / 2.0;
    let plot_width = width - PLOT_LEFT - 8.0;
    let rows = grid.y_values.len().max(1) as f64;
    let cell_w = plot_width / grid.x_values.len().max(1) as f64;
    let cell_h = if rows * 36.0 <= 360.0 { 36.0 } else { (360.0 / rows).max(2.0) };
    Cells { width, height: PLOT_TOP + rows * cell_h + 12.0, plot_width, cell_w, cell_h }
}

/// The report's rows by key, so each cell is found without a scan.
struct Index<'a> {
    summary: HashMap<(&'a str, &'a str, &'a str), &'a SummaryRow>,
    comparisons: HashMap<(&'a str, &'a str, &'a str, &'a str), &'a ComparisonRow>,
}

impl<'a> Index<'a> {
    fn of(report: &'a Report) -> Index<'a> {
        Index {
            summary: report
                .summary
                .rows
                .iter()
                .map(|r| ((r.config_id.as_str(), r.critic.as_str(), r.arm.as_str()), r))
                .collect(),
            comparisons: report
                .summary
                .comparisons
                .iter()
                .map(|c| ((c.config_id.as_str(), c.critic.as_str(), c.arm_a.as_str(), c.arm_b.as_str()), c))
                .collect(),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn panel(
    out: &mut String,
    index: &Index<'_>,
    grid: &Grid,
    geometry: &Cells,
    (left, top): (f64, f64),
    critic: &str,
    slice: usize,
    what: &Panel<'_>,
    diff_scale: f64,
) {
    let Cells { plot_width, cell_w, cell_h, .. } = *geometry;
    let (x0, y0) = (left + PLOT_LEFT, top + PLOT_TOP);
    let title = match what {
        Panel::Rate(arm) => format!("{arm}: pass rate"),
        Panel::Diff(a, b) => format!("{a} − {b}: paired difference (pp)"),
    };
    out.push_str("<g class=\"heatmap\">");
    text(out, left, top + 12.0, "start", "group", &title);
    text(out, x0 + plot_width / 2.0, top + 26.0, "middle", "axis", &grid.x_axis);
    let every = |size: f64, room: f64| ((room / size).ceil() as usize).max(1);
    let x_every = every(cell_w, 34.0);
    for (column, value) in grid.x_values.iter().enumerate().filter(|(c, _)| c % x_every == 0) {
        text(out, x0 + (column as f64 + 0.5) * cell_w, top + 40.0, "middle", "tick", &value_label(value));
    }
    let y_every = every(cell_h, 13.0);
    for (row, value) in grid.y_values.iter().enumerate().filter(|(r, _)| r % y_every == 0) {
        text(out, x0 - 6.0, y0 + (row as f64 + 0.5) * cell_h + 4.0, "end", "tick", &value_label(value));
    }
    let middle = y0 + grid.y_values.len() as f64 * cell_h / 2.0;
    let _ = write!(
        out,
        "<text x=\"{x}\" y=\"{y}\" text-anchor=\"middle\" class=\"axis\" transform=\"rotate(-90 {x} {y})\">{}</text>",
        escape(&grid.y_axis),
        x = px(left + 10.0),
        y = px(middle),
    );
    // Each config of this slice in its cell; a cell no config ran stays grey.
    let mut filled = vec![false; grid.x_values.len() * grid.y_values.len()];
    for (config, &(cell_slice, row, column)) in sorted_cells(grid) {
        if cell_slice != slice {
            continue;
        }
        let (x, y) = (x0 + column as f64 * cell_w, y0 + row as f64 * cell_h);
        let (fill, ink, tooltip, label, significant) = match what {
            Panel::Rate(arm) => {
                let Some(r) = index.summary.get(&(config, critic, *arm)) else {
                    continue;
                };
                let (fill, ink) = rate_fill(r.pass_rate);
                let tooltip = format!(
                    "{config} · {critic} · {arm}: pass rate {} ({} to {}), {} of {}, {:.2} mean rounds",
                    percent(r.pass_rate),
                    percent(r.pass_rate_lo),
                    percent(r.pass_rate_hi),
                    r.passed,
                    r.n,
                    r.mean_rounds
                );
                let label = (cell_w >= 34.0 && cell_h >= 14.0).then(|| vec![format!("{:.0}%", 100.0 * r.pass_rate)]);
                (fill, ink, tooltip, label, false)
            }
            Panel::Diff(a, b) => {
                let Some(c) = index.comparisons.get(&(config, critic, *a, *b)) else {
                    continue;
                };
                let (fill, ink) = diff_fill(c.diff, diff_scale);
                let significant = excludes_zero(c);
                let star = if significant { "*" } else { "" };
                let tooltip = match (c.diff_lo, c.diff_hi, c.p_value) {
                    (Some(lo), Some(hi), Some(p)) => format!(
                        "{config} · {critic}: {a} − {b} {:+.1} pp (95% CI {:+.1} to {:+.1}){}, p = {:.4} ({})",
                        100.0 * c.diff,
                        100.0 * lo,
                        100.0 * hi,
                        if significant { ", interval excludes 0" } else { "" },
                        p,
                        c.test
                    ),
                    _ => format!("{config} · {critic}: {a} − {b} {:+.1} pp, {}", 100.0 * c.diff, c.test),
                };
                let label = if cell_w >= 84.0 && cell_h >= 30.0 {
                    let range = match (c.diff_lo, c.diff_hi) {
                        (Some(lo), Some(hi)) => format!("{} to {}", signed_pp(lo), signed_pp(hi)),
                        _ => "by design".to_string(),
                    };
                    Some(vec![format!("{} pp{star}", signed_pp(c.diff)), range])
                } else if cell_w >= 34.0 && cell_h >= 14.0 {
                    Some(vec![format!("{}{star}", signed_pp(c.diff))])
                } else {
                    None
                };
                (fill, ink, tooltip, label, significant)
            }
        };
        filled[row * grid.x_values.len() + column] = true;
        let (stroke, class) = if significant {
            (format!(" stroke=\"{TEXT}\" stroke-width=\"2\""), "cell significant")
        } else {
            (String::new(), "cell")
        };
        let inset = if significant { 1.0 } else { 0.0 };
        let _ = write!(
            out,
            "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\"{stroke}><title>{}</title></rect>",
            px(x + inset),
            px(y + inset),
            px(cell_w - 2.0 * inset),
            px(cell_h - 2.0 * inset),
            escape(&tooltip)
        );
        match label.as_deref() {
            Some([one]) => {
                let _ = write!(
                    out,
                    "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"cell-label\" style=\"fill:{ink}\">{}</text>",
                    px(x + cell_w / 2.0),
                    px(y + cell_h / 2.0 + 4.0),
                    escape(one)
                );
            }
            Some([first, second]) => {
                let _ = write!(
                    out,
                    "<text x=\"{x}\" y=\"{}\" text-anchor=\"middle\" class=\"cell-label\" style=\"fill:{ink}\">{}</text>\
                     <text x=\"{x}\" y=\"{}\" text-anchor=\"middle\" class=\"cell-interval\" style=\"fill:{ink}\">{}</text>",
                    px(y + cell_h / 2.0 - 2.0),
                    escape(first),
                    px(y + cell_h / 2.0 + 11.0),
                    escape(second),
                    x = px(x + cell_w / 2.0),
                );
            }
            _ => {}
        }
    }
    for (index, _) in filled.iter().enumerate().filter(|(_, f)| !**f) {
        let (row, column) = (index / grid.x_values.len(), index % grid.x_values.len());
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#f6f8fa\"><title>not run</title></rect>",
            px(x0 + column as f64 * cell_w),
            px(y0 + row as f64 * cell_h),
            px(cell_w),
            px(cell_h)
        );
    }
    // Thin white lines between cells, drawn once over the panel when cells are wide enough.
    if cell_w >= 6.0 && cell_h >= 6.0 {
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"{GRID}\"/>",
            px(x0),
            px(y0),
            px(plot_width),
            px(grid.y_values.len() as f64 * cell_h)
        );
    }
    out.push_str("</g>");
}

/// The grid's cells in config-id order, so the page's bytes do not depend on hashing.
fn sorted_cells(grid: &Grid) -> Vec<(&str, &(usize, usize, usize))> {
    let mut cells: Vec<(&str, &(usize, usize, usize))> = grid.cells.iter().map(|(c, p)| (c.as_str(), p)).collect();
    cells.sort_unstable_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(b.0)));
    cells
}

/// `chart-heatmap`: for each critic and slice, each arm's pass rate and the first compared pair's
/// paired difference over the grid. Returns how many slices were left out (past [`MAX_SLICES`]).
pub(crate) fn heatmap_chart(out: &mut String, report: &Report, grid: &Grid, arms: &[(String, &'static str)]) -> usize {
    let mut critics: Vec<&str> = Vec::new();
    for row in &report.summary.rows {
        if !critics.contains(&row.critic.as_str()) {
            critics.push(&row.critic);
        }
    }
    let pair = compared_pair(report);
    let rows = Index::of(report);
    let geometry = cells(grid);
    let slices = grid.slices.len().min(MAX_SLICES);
    let mut panels: Vec<Panel<'_>> = arms.iter().map(|(arm, _)| Panel::Rate(arm)).collect();
    if let Some((a, b)) = pair {
        panels.push(Panel::Diff(a, b));
    }
    let panel_rows = panels.len().div_ceil(2) as f64;
    let block = 26.0 + panel_rows * (geometry.height + 10.0);
    let height = 8.0 + critics.len() as f64 * slices as f64 * block;
    open_svg(
        out,
        "chart-heatmap",
        height,
        &format!("Pass rate over {} × {}, per critic and arm", grid.y_axis, grid.x_axis),
        &format!(
            "Heatmaps, one per critic and arm, with {} as rows and {} as columns; each cell is a config, labelled \
             with its pass rate{}.",
            grid.y_axis,
            grid.x_axis,
            match pair {
                Some((a, b)) => format!(
                    ", and a heatmap of the paired difference {a} − {b} in percentage points with its 95% interval, \
                     starred and outlined where the interval excludes 0"
                ),
                None => String::new(),
            }
        ),
    );
    let mut top = 8.0;
    for critic in &critics {
        for slice in 0..slices {
            let heading = if grid.slices[slice].is_empty() {
                critic.to_string()
            } else {
                format!("{critic} · {}", grid.slices[slice])
            };
            text(out, 0.0, top + 14.0, "start", "group", &heading);
            // One colour scale for the differences of a block: the largest magnitude in it.
            let scale = pair.map_or(1.0, |(a, b)| {
                report
                    .summary
                    .comparisons
                    .iter()
                    .filter(|c| c.critic == *critic && c.arm_a == a && c.arm_b == b)
                    .filter(|c| grid.cells.get(&c.config_id).is_some_and(|cell| cell.0 == slice))
                    .map(|c| c.diff.abs())
                    .fold(0.05, f64::max)
            });
            for (index, what) in panels.iter().enumerate() {
                let left = (index % 2) as f64 * (geometry.width + PANEL_GAP);
                let panel_top = top + 22.0 + (index / 2) as f64 * (geometry.height + 10.0);
                panel(out, &rows, grid, &geometry, (left, panel_top), critic, slice, what, scale);
            }
            top += block;
        }
    }
    out.push_str("</svg>\n");
    grid.slices.len() - slices
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(pass_score: f64, max_revisions: u32, stall: bool) -> PolicyRecord {
        let mut rest = serde_json::Map::new();
        rest.insert("stall".into(), Value::Bool(stall));
        rest.insert("plateau_eps".into(), serde_json::json!(0.0));
        PolicyRecord { config_id: format!("p{pass_score}-r{max_revisions}-{stall}"), pass_score, max_revisions, rest }
    }

    fn row(config: &str, arm: &str, pass_rate: f64, mean_rounds: f64) -> SummaryRow {
        SummaryRow {
            config_id: config.into(),
            arm: arm.into(),
            critic: "rubric".into(),
            pass_rate,
            mean_rounds,
            ..SummaryRow::default()
        }
    }

    #[test]
    fn the_grid_takes_the_first_two_varying_axes_and_slices_by_the_rest() {
        let mut policies = Vec::new();
        for stall in [true, false] {
            for pass_score in [9.0, 7.0, 8.0] {
                for max_revisions in [5, 1] {
                    policies.push(policy(pass_score, max_revisions, stall));
                }
            }
        }
        let grid = grid(&policies).unwrap();
        assert_eq!((grid.y_axis.as_str(), grid.x_axis.as_str()), ("pass_score", "max_revisions"));
        assert_eq!(grid.y_values, vec![serde_json::json!(7.0), serde_json::json!(8.0), serde_json::json!(9.0)]);
        assert_eq!(grid.x_values, vec![serde_json::json!(1), serde_json::json!(5)]);
        assert_eq!(grid.slices, vec!["stall = false", "stall = true"]);
        assert_eq!(grid.cells["p8-r5-true"], (1, 1, 1));
        assert_eq!(grid.cells["p7-r1-false"], (0, 0, 0));
        // One varying axis is a line, not a grid.
        assert!(super::grid(&[policy(7.0, 3, true), policy(8.0, 3, true)]).is_none());
    }

    #[test]
    fn the_pareto_front_keeps_configs_nothing_beats_for_as_few_rounds() {
        let rows = [
            row("a", "feedback", 0.50, 1.5),
            row("b", "feedback", 0.70, 2.0),
            row("c", "feedback", 0.60, 2.5), // b passes more in fewer rounds
            row("d", "feedback", 0.80, 3.0),
            row("e", "feedback", 0.80, 3.5), // d: as many passes, fewer rounds
            row("f", "feedback", 0.45, 1.5), // a: more passes, same rounds
            row("g", "feedback", 0.50, 1.5), // tied with a: both on the front
        ];
        let refs: Vec<&SummaryRow> = rows.iter().collect();
        let front = pareto_front(&refs, |r| r.mean_rounds);
        let on: Vec<&str> = rows.iter().zip(&front).filter(|(_, f)| **f).map(|(r, _)| r.config_id.as_str()).collect();
        assert_eq!(on, ["a", "b", "d", "g"]);
        // Checked against the definition, pair by pair.
        for (i, r) in rows.iter().enumerate() {
            let beaten = rows.iter().any(|s| {
                s.pass_rate >= r.pass_rate
                    && s.mean_rounds <= r.mean_rounds
                    && (s.pass_rate > r.pass_rate || s.mean_rounds < r.mean_rounds)
            });
            assert_eq!(front[i], !beaten, "{}", r.config_id);
        }
    }

    #[test]
    fn a_large_grid_shows_the_best_and_worst_configs_of_each_arm() {
        let mut summary = Vec::new();
        for config in 0..60 {
            summary.push(row(&format!("c{config:02}"), "feedback", config as f64 / 100.0, 2.0));
            summary.push(row(&format!("c{config:02}"), "no-feedback", ((config * 7) % 60) as f64 / 100.0, 2.0));
        }
        let report = Report { summary: crate::Summary { rows: summary, ..Default::default() }, ..Report::default() };
        let shown = shown_configs(&report).unwrap();
        for config in (0..10).chain(50..60) {
            assert!(shown.contains(&format!("c{config:02}")), "feedback extreme c{config:02}");
        }
        // no-feedback's best (rate 0.59: 7·c ≡ 59 mod 60 → c = 17) is there too.
        assert!(shown.contains("c17"));
        assert!(shown.len() <= 40, "{}", shown.len());
        assert_eq!(restricted(&report, &shown).summary.rows.len(), 2 * shown.len());
        let small = Report {
            summary: crate::Summary { rows: report.summary.rows[..100].to_vec(), ..Default::default() },
            ..report
        };
        assert!(shown_configs(&small).is_none(), "50 configs are listed whole");
    }
}
