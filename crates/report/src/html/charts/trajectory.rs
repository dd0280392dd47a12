//! The score trajectory: mean critic score by round, one panel per config × critic.

use std::collections::HashMap;
use std::fmt::Write;

use crate::queries::round_scores::RoundMean;

use super::groups;
use crate::Report;
use crate::html::svg::{GRID, MUTED, WIDTH, escape, labelled_ticks, legend, line, open_svg, px, text, tick_step};

/// Trajectory points averaging fewer loops than this are drawn hollow.
const FEW_LOOPS: u64 = 10;

pub(crate) fn trajectory_chart(
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
        for (tick, label) in labelled_ticks(low, high, 5.0) {
            line(out, (x0, y_of(tick)), (x1, y_of(tick)), GRID, 1.0);
            text(out, x0 - 6.0, y_of(tick) + 4.0, "end", "tick", &label);
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
                threshold
            );
        }
        for (arm, color) in arms {
            let series: Vec<&RoundMean> = rounds
                .iter()
                .filter(|r| r.config_id == *config && r.critic == *critic && r.arm.as_str() == arm)
                .collect();
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
