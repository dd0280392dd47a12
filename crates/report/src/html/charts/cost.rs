//! Pass rate against spend: each arm's pass rate at each cap on its rounds against its loops' mean
//! realized spend per loop there, one panel per config × critic, in money when the config × critic
//! was priced, else in tokens when counted, else in rounds.

use std::fmt::Write;

use super::groups;
use crate::Report;
use crate::html::svg::{GRID, WIDTH, escape, legend, line, open_svg, px, text, tick_label, tick_step, ticks};
use crate::spend::{COST, CostCurveRow, TOKENS};

/// The curves of one config × critic in the unit it is drawn in.
fn panel_curves<'r>(report: &'r Report, config: &str, critic: &str) -> Vec<&'r CostCurveRow> {
    let curves: Vec<&CostCurveRow> =
        report.summary.spend.curves.iter().filter(|c| c.config_id == config && c.critic == critic).collect();
    let unit = [COST, TOKENS].into_iter().find(|u| curves.iter().any(|c| c.unit == *u)).unwrap_or(crate::spend::ROUNDS);
    curves.into_iter().filter(|c| c.unit == unit).collect()
}

/// A point's cap and spend as the chart's descriptions say them: `cap 2, 1.84 rounds a loop`.
fn point_text(report: &Report, curve: &CostCurveRow) -> String {
    let currency = Some(report.summary.currency.as_deref().unwrap_or(COST));
    format!("cap {}, {} a loop", curve.cap, crate::spend::spend_text(&curve.unit, curve.spend, currency))
}

/// Whether the chart has anything to say: some arm of some config × critic has more than one cap.
pub(crate) fn has_cost_chart(report: &Report) -> bool {
    groups(report).iter().any(|(config, critic, _)| panel_curves(report, config, critic).len() > 1)
}

/// Draws the chart (`chart-cost`).
pub(crate) fn cost_chart(out: &mut String, report: &Report, arms: &[(String, &'static str)]) {
    let panels: Vec<(&str, &str, Vec<&CostCurveRow>)> = groups(report)
        .into_iter()
        .map(|(config, critic, _)| (config, critic, panel_curves(report, config, critic)))
        .filter(|(_, _, curves)| !curves.is_empty())
        .collect();
    let columns = panels.len().clamp(1, 3);
    let (gap, panel_height, top) = (24.0, 250.0, 30.0);
    let panel_width = (WIDTH - gap * (columns as f64 - 1.0)) / columns as f64;
    let height = top + panels.len().div_ceil(columns) as f64 * (panel_height + gap);
    let described: Vec<String> = panels
        .iter()
        .flat_map(|(_, _, curves)| curves.iter())
        .map(|c| {
            format!("{} {} {} at {}: {:.1}%", c.config_id, c.critic, c.arm, point_text(report, c), 100.0 * c.pass_rate)
        })
        .collect();
    open_svg(
        out,
        "chart-cost",
        height,
        "Pass rate against spend, per arm",
        &format!(
            "Line charts, one per config and critic, of each arm's pass rate against its mean spend per loop, one point per cap on its rounds: {}.",
            described.join("; ")
        ),
    );
    let items: Vec<(&str, &str)> = arms.iter().map(|(a, c)| (a.as_str(), *c)).collect();
    legend(out, 0.0, 16.0, &items);
    for (index, (config, critic, curves)) in panels.iter().enumerate() {
        let left = (index % columns) as f64 * (panel_width + gap);
        let top = top + (index / columns) as f64 * (panel_height + gap);
        let (x0, x1) = (left + 40.0, left + panel_width - 10.0);
        let (y0, y1) = (top + 26.0, top + panel_height - 34.0);
        let unit = curves[0].unit.as_str();
        // Money and tokens from nothing spent; rounds from the first draft, a whole round a step.
        let continuous = unit != crate::spend::ROUNDS;
        let least = if continuous { 0.0 } else { 1.0 };
        let most = curves.iter().map(|c| c.spend).fold(least, f64::max);
        let span = if most > least { most - least } else { 1.0 };
        let x_of = |budget: f64| x0 + (budget - least) / span * (x1 - x0);
        let y_of = |rate: f64| y1 - rate * (y1 - y0);
        let _ = write!(out, "<g class=\"panel\">");
        text(out, left, top + 12.0, "start", "group", &format!("{config} · {critic}"));
        for tick in ticks(0.0, 1.0, 5.0) {
            line(out, (x0, y_of(tick)), (x1, y_of(tick)), GRID, 1.0);
            text(out, x0 - 6.0, y_of(tick) + 4.0, "end", "tick", &format!("{:.0}%", 100.0 * tick));
        }
        let step = if continuous { tick_step(0.0, most, 4.0) } else { tick_step(0.0, span, 4.0).ceil().max(1.0) };
        let mut tick = if continuous { step } else { least };
        while tick <= most * (1.0 + 1e-9) {
            text(out, x_of(tick), y1 + 16.0, "middle", "tick", &tick_label(tick, step));
            tick += step;
        }
        let axis = format!(
            "mean spend per loop ({})",
            if unit == COST { report.summary.currency.as_deref().unwrap_or("money") } else { unit }
        );
        text(out, (x0 + x1) / 2.0, y1 + 31.0, "middle", "axis", &axis);
        for (arm, color) in arms {
            let series: Vec<&&CostCurveRow> = curves.iter().filter(|c| c.arm == *arm).collect();
            if series.is_empty() {
                continue;
            }
            let points: Vec<String> =
                series.iter().map(|c| format!("{},{}", px(x_of(c.spend)), px(y_of(c.pass_rate)))).collect();
            let _ = write!(
                out,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2.5\" \
                 stroke-linejoin=\"round\"/>",
                points.join(" ")
            );
            for c in series {
                let _ = write!(
                    out,
                    "<circle cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{color}\" stroke=\"#ffffff\" stroke-width=\"1.5\">\
                     <title>{}</title></circle>",
                    px(x_of(c.spend)),
                    px(y_of(c.pass_rate)),
                    escape(&format!(
                        "{} · {} · {}, {}: {:.1}% ({:.1}% to {:.1}%) of {} loops",
                        c.config_id,
                        c.critic,
                        c.arm,
                        point_text(report, c),
                        100.0 * c.pass_rate,
                        100.0 * c.lo,
                        100.0 * c.hi,
                        c.loops
                    ))
                );
            }
        }
        out.push_str("</g>");
    }
    out.push_str("</svg>\n");
}
