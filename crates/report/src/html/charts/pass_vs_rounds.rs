//! For grids: pass rate against what a loop spends — money per loop when the run was priced
//! (every row has a `cost_per_loop`), else mean rounds — one panel per critic, each arm's Pareto
//! front ringed.

use std::collections::HashMap;
use std::fmt::Write;

use super::{color_of, unique};
use crate::Report;
use crate::html::labels::{Box2, place_label, short_config_labels};
use crate::html::svg::{GRID, TEXT, WIDTH, escape, labelled_ticks, legend, line, open_svg, percent, px, text, ticks};
use crate::rows::SummaryRow;

/// What the horizontal axis (and the Pareto front) measures a loop's spending in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Spent {
    Rounds,
    Money,
}

impl Spent {
    /// Money when every row of the report has a cost, else rounds.
    pub(crate) fn of(report: &Report) -> Spent {
        let priced = !report.summary.rows.is_empty() && report.summary.rows.iter().all(|r| r.cost_per_loop.is_some());
        if priced { Spent::Money } else { Spent::Rounds }
    }

    pub(crate) fn value(self, row: &SummaryRow) -> f64 {
        match self {
            Spent::Rounds => row.mean_rounds,
            Spent::Money => row.cost_per_loop.unwrap_or(f64::NAN),
        }
    }
}

/// One point of the scatter: the configs of an arm that landed on the same spot share it (in a
/// grid, the `single` arm ignores the revision cap, so its configs coincide).
struct Point<'a> {
    arm: &'a str,
    spent: f64,
    pass_rate: f64,
    rows: Vec<&'a SummaryRow>,
}

fn points<'a>(rows: &[&'a SummaryRow], spent: Spent) -> Vec<Point<'a>> {
    let mut points: Vec<Point<'a>> = Vec::new();
    for row in rows {
        let value = spent.value(row);
        let same = |p: &&mut Point<'a>| {
            p.arm == row.arm
                && (p.spent - value).abs() <= 1e-9 * value.abs().max(1e-9)
                && (p.pass_rate - row.pass_rate).abs() < 1e-9
        };
        match points.iter_mut().find(|p| same(p)) {
            Some(point) => point.rows.push(row),
            None => points.push(Point { arm: &row.arm, spent: value, pass_rate: row.pass_rate, rows: vec![row] }),
        }
    }
    points
}

/// The rows of `report` on the Pareto front of their arm and critic, as (config, critic, arm).
pub(crate) fn front_rows(report: &Report) -> std::collections::HashSet<(&str, &str, &str)> {
    let spent = Spent::of(report);
    let mut by_arm: HashMap<(&str, &str), Vec<&SummaryRow>> = HashMap::new();
    for row in &report.summary.rows {
        by_arm.entry((row.critic.as_str(), row.arm.as_str())).or_default().push(row);
    }
    let mut front = std::collections::HashSet::new();
    for rows in by_arm.values() {
        for (row, on) in rows.iter().zip(crate::html::grid::pareto_front(rows, |r| spent.value(r))) {
            if on {
                front.insert((row.config_id.as_str(), row.critic.as_str(), row.arm.as_str()));
            }
        }
    }
    front
}

pub(crate) fn pass_vs_rounds_chart(out: &mut String, report: &Report, arms: &[(String, &'static str)]) {
    let critics = unique(report.summary.rows.iter().map(|r| r.critic.as_str()));
    let configs = unique(report.summary.rows.iter().map(|r| r.config_id.as_str()));
    let labels = short_config_labels(&configs);
    // Past the size a page lists in full, only the front is labelled and described.
    let many = configs.len() > crate::html::grid::MANY_CONFIGS;
    let front = front_rows(report);
    let on_front = |r: &SummaryRow| front.contains(&(r.config_id.as_str(), r.critic.as_str(), r.arm.as_str()));
    let spent = Spent::of(report);
    let currency = report.summary.currency.as_deref().unwrap_or("");
    let (panel_height, gap, top) = (380.0, 28.0, 30.0);
    let height = top + critics.len() as f64 * (panel_height + gap);
    // Rounds start at 1 (the first draft alone), money at 0; pass rates span whole tens around
    // the data. Both axes get a margin so points on the extremes do not sit on the frame.
    let (axis_start, axis_end) = match spent {
        Spent::Rounds => (1.0, report.summary.rows.iter().map(|r| r.mean_rounds).fold(1.0, f64::max).ceil().max(2.0)),
        Spent::Money => {
            let most = report.summary.rows.iter().map(|r| spent.value(r)).fold(0.0, f64::max);
            (0.0, if most > 0.0 { nice_ceiling(most) } else { 1.0 })
        }
    };
    let (round_low, round_high) = (axis_start - 0.03 * (axis_end - axis_start), axis_end);
    let spent_text = |value: f64| match spent {
        Spent::Rounds => format!("{value:.2} rounds"),
        Spent::Money => format!("{} per loop", crate::format::money(value, report.summary.currency.as_deref())),
    };
    let (min_rate, max_rate) =
        report.summary.rows.iter().fold((1.0f64, 0.0f64), |(lo, hi), r| (lo.min(r.pass_rate), hi.max(r.pass_rate)));
    let (rate_floor, rate_ceiling) = ((min_rate * 10.0).floor() / 10.0, ((max_rate * 10.0).ceil() / 10.0).max(0.1));
    let rate_ceiling = if rate_ceiling <= rate_floor { rate_floor + 0.1 } else { rate_ceiling };
    let margin = 0.03 * (rate_ceiling - rate_floor);
    let (rate_low, rate_high) = (rate_floor - margin, rate_ceiling + margin);

    let (title, placed_by, as_little) = match spent {
        Spent::Rounds => {
            ("Pass rate against mean rounds, per config, with the Pareto front", "its mean rounds", "in as few rounds")
        }
        Spent::Money => (
            "Pass rate against cost per loop, per config, with the Pareto front",
            "its cost per loop",
            "for as little money",
        ),
    };
    open_svg(
        out,
        "chart-pass-vs-rounds",
        height,
        title,
        &format!(
            "Scatter plots, one per critic: each point is a config and arm, placed by {placed_by} and pass rate; \
             configs on the Pareto front of their arm (no other config of the arm passes more often {as_little}) \
             are ringed and joined by a dashed line. {}: {}.",
            if many { "On the front" } else { "Every point" },
            report
                .summary
                .rows
                .iter()
                .filter(|r| !many || on_front(r))
                .map(|r| format!(
                    "{} {} {}: {} in {}",
                    r.config_id,
                    r.critic,
                    r.arm,
                    percent(r.pass_rate),
                    spent_text(spent.value(r))
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
        for (tick, label) in labelled_ticks(axis_start, axis_end, 8.0) {
            line(out, (x_of(tick), y0), (x_of(tick), y1), GRID, 1.0);
            text(out, x_of(tick), y1 + 16.0, "middle", "tick", &label);
        }
        let axis = match spent {
            Spent::Rounds => "mean rounds per loop (critiques)".to_string(),
            Spent::Money => format!("mean cost per loop ({currency})"),
        };
        text(out, (x0 + x1) / 2.0, y1 + 33.0, "middle", "axis", axis.trim_end_matches(" ()"));
        let _ = write!(
            out,
            "<text x=\"14\" y=\"{}\" text-anchor=\"middle\" class=\"axis\" transform=\"rotate(-90 14 {})\">pass \
             rate</text>",
            px((y0 + y1) / 2.0),
            px((y0 + y1) / 2.0)
        );
        let rows: Vec<&SummaryRow> = report.summary.rows.iter().filter(|r| r.critic == *critic).collect();
        let points = points(&rows, spent);
        // The front of each arm, joined in order of what it spends.
        for (arm, color) in arms {
            let mut line: Vec<&SummaryRow> = rows.iter().copied().filter(|r| &r.arm == arm && on_front(r)).collect();
            line.sort_by(|a, b| spent.value(a).total_cmp(&spent.value(b)).then(a.pass_rate.total_cmp(&b.pass_rate)));
            if line.len() > 1 {
                let coordinates: Vec<String> =
                    line.iter().map(|r| format!("{},{}", px(x_of(spent.value(r))), px(y_of(r.pass_rate)))).collect();
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
            let (x, y) = (x_of(point.spent), y_of(point.pass_rate));
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
                    "{} · {critic} · {}: pass rate {} in {} ({}){}",
                    configs.join(", "),
                    point.arm,
                    percent(point.pass_rate),
                    spent_text(point.spent),
                    match spent {
                        Spent::Rounds => format!("{:.3} passes per round", point.pass_rate / point.spent),
                        Spent::Money => match point.rows[0].cost_per_pass {
                            Some(per_pass) => format!(
                                "{} per pass",
                                crate::format::money(per_pass, report.summary.currency.as_deref())
                            ),
                            None => "no pass".to_string(),
                        },
                    },
                    if front { "; on the Pareto front" } else { "" }
                ))
            );
        }
        for point in &points {
            if many && !point.rows.iter().any(|r| on_front(r)) {
                continue;
            }
            let (x, y) = (x_of(point.spent), y_of(point.pass_rate));
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

/// The smallest 1, 2 or 5 times a power of ten at or above `value`: the end of a money axis.
fn nice_ceiling(value: f64) -> f64 {
    let power = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * power).find(|&v| v >= value * (1.0 - 1e-12)).unwrap_or(10.0 * power)
}
