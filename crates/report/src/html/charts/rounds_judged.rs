//! Every round judged: the steering critic's and a held-out evaluator's pass rate of each round's
//! drafts, one panel per config × critic × evaluator, a solid line (the critic) and a dashed one
//! (the evaluator) per arm. A critic-pleasing loop shows the two lines parting.

use std::fmt::Write;

use crate::evaluators::{EvaluatorReport, EvaluatorRoundRow};
use crate::html::svg::{GRID, MUTED, WIDTH, escape, legend, line, open_svg, px, text, ticks};

/// Draws the chart (`chart-rounds-judged`); nothing when no evaluator judged every round.
pub(crate) fn rounds_judged_chart(out: &mut String, report: &EvaluatorReport, arms: &[(String, &'static str)]) {
    let mut panels: Vec<(&str, &str, &str)> = Vec::new();
    for r in &report.rounds {
        let key = (r.config_id.as_str(), r.critic.as_str(), r.evaluator.as_str());
        if !panels.contains(&key) {
            panels.push(key);
        }
    }
    if panels.is_empty() {
        return;
    }
    let columns = panels.len().clamp(1, 3);
    let (gap, panel_height, top) = (24.0, 250.0, 30.0);
    let panel_width = (WIDTH - gap * (columns as f64 - 1.0)) / columns as f64;
    let height = top + panels.len().div_ceil(columns) as f64 * (panel_height + gap);
    let last_round = report.rounds.iter().map(|r| r.round).max().unwrap_or(0).max(1);
    let described: Vec<String> = report
        .rounds
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {} round {}: critic {:.1}%, evaluator {:.1}% of {} loops",
                r.config_id,
                r.critic,
                r.evaluator,
                r.arm,
                r.round,
                100.0 * r.critic_pass_rate,
                100.0 * r.evaluator_pass_rate,
                r.loops
            )
        })
        .collect();
    open_svg(
        out,
        "chart-rounds-judged",
        height,
        "The critic's and the evaluator's pass rate by round, per arm",
        &format!("Line charts, one per config, critic and evaluator: {}.", described.join("; ")),
    );
    let shown: Vec<(&str, &str)> = arms
        .iter()
        .filter(|(arm, _)| report.rounds.iter().any(|r| r.arm == *arm))
        .map(|(a, c)| (a.as_str(), *c))
        .collect();
    legend(out, 0.0, 16.0, &shown);
    let x = shown.iter().map(|(l, _)| 17.0 + l.chars().count() as f64 * 7.0 + 22.0).sum::<f64>();
    for (offset, (dash, label)) in [("", "critic"), ("4 3", "evaluator")].iter().enumerate() {
        let x = x + offset as f64 * 110.0;
        let _ = write!(
            out,
            "<line x1=\"{}\" y1=\"12\" x2=\"{}\" y2=\"12\" stroke=\"{MUTED}\" stroke-width=\"2.5\" stroke-dasharray=\"{dash}\"/>",
            px(x),
            px(x + 22.0)
        );
        text(out, x + 28.0, 16.0, "start", "legend", label);
    }
    for (index, (config, critic, evaluator)) in panels.iter().enumerate() {
        let left = (index % columns) as f64 * (panel_width + gap);
        let top = top + (index / columns) as f64 * (panel_height + gap);
        let (x0, x1) = (left + 40.0, left + panel_width - 10.0);
        let (y0, y1) = (top + 26.0, top + panel_height - 34.0);
        let x_of = |round: u32| x0 + f64::from(round) / f64::from(last_round) * (x1 - x0);
        let y_of = |rate: f64| y1 - rate * (y1 - y0);
        let _ = write!(out, "<g class=\"panel\">");
        text(out, left, top + 12.0, "start", "group", &format!("{config} · {critic} · {evaluator}"));
        for tick in ticks(0.0, 1.0, 5.0) {
            line(out, (x0, y_of(tick)), (x1, y_of(tick)), GRID, 1.0);
            text(out, x0 - 6.0, y_of(tick) + 4.0, "end", "tick", &format!("{:.0}%", 100.0 * tick));
        }
        for round in 0..=last_round {
            text(out, x_of(round), y1 + 16.0, "middle", "tick", &round.to_string());
        }
        text(out, (x0 + x1) / 2.0, y1 + 31.0, "middle", "axis", "round");
        for (arm, color) in arms {
            let series: Vec<&EvaluatorRoundRow> = report
                .rounds
                .iter()
                .filter(|r| {
                    (r.config_id.as_str(), r.critic.as_str(), r.evaluator.as_str()) == (*config, *critic, *evaluator)
                })
                .filter(|r| r.arm == *arm)
                .collect();
            if series.is_empty() {
                continue;
            }
            for (dash, rate) in [("", 0usize), ("4 3", 1)] {
                let value = |r: &EvaluatorRoundRow| if rate == 0 { r.critic_pass_rate } else { r.evaluator_pass_rate };
                let points: Vec<String> =
                    series.iter().map(|r| format!("{},{}", px(x_of(r.round)), px(y_of(value(r))))).collect();
                let _ = write!(
                    out,
                    "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2.5\" \
                     stroke-dasharray=\"{dash}\" stroke-linejoin=\"round\"/>",
                    points.join(" ")
                );
                for r in &series {
                    let who = if rate == 0 { "the critic" } else { "the evaluator" };
                    let (low, high) =
                        if rate == 0 { (r.critic_lo, r.critic_hi) } else { (r.evaluator_lo, r.evaluator_hi) };
                    let _ = write!(
                        out,
                        "<circle cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{color}\" stroke=\"#ffffff\" stroke-width=\"1.5\">\
                         <title>{}</title></circle>",
                        px(x_of(r.round)),
                        px(y_of(value(r))),
                        escape(&format!(
                            "{} · {} · {} · {}, round {}: {who} passed {:.1}% ({:.1}% to {:.1}%) of {} loops",
                            r.config_id,
                            r.critic,
                            r.evaluator,
                            r.arm,
                            r.round,
                            100.0 * value(r),
                            100.0 * low,
                            100.0 * high,
                            r.loops
                        ))
                    );
                }
            }
        }
        out.push_str("</g>");
    }
    out.push_str("</svg>\n");
}
