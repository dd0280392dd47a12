//! The charts of the page, one file each, and what they share: arm colours and the report's
//! config × critic groups.

mod bars;
mod cost;
mod pass_vs_rounds;
mod rounds_judged;
mod trajectory;

pub(crate) use bars::{exit_reasons_chart, pass_rate_chart};
pub(crate) use cost::{cost_chart, has_cost_chart};
pub(crate) use pass_vs_rounds::{Spent, front_rows, pass_vs_rounds_chart};
pub(crate) use rounds_judged::rounds_judged_chart;
pub(crate) use trajectory::trajectory_chart;

use super::svg::TEXT;
use crate::Report;
pub(crate) use crate::format::unique;
use crate::rows::SummaryRow;

/// Okabe–Ito colours: distinguishable with the common colour-vision deficiencies. Every arm has
/// its own; an adjudicated twin or an unknown label takes one of the rest by its place.
pub(crate) fn arm_color(arm: &str, index: usize) -> &'static str {
    match arm {
        "feedback" => "#0072b2",
        "no-feedback" => "#e69f00",
        "single" => "#7f7f7f",
        "feedback+memory" => "#009e73",
        "resample" => "#cc79a7",
        "placebo" => "#56b4e9",
        "oracle" => "#000000",
        _ => ["#d55e00", "#f0e442"][index % 2],
    }
}

/// Arms in the order the summary lists them, each with its colour.
pub(crate) fn arms(report: &Report) -> Vec<(String, &'static str)> {
    let mut arms: Vec<String> = Vec::new();
    for row in &report.summary.rows {
        if !arms.contains(&row.arm) {
            arms.push(row.arm.clone());
        }
    }
    arms.into_iter().enumerate().map(|(i, arm)| (arm_color(&arm, i), arm)).map(|(color, arm)| (arm, color)).collect()
}

pub(crate) fn color_of(arms: &[(String, &'static str)], arm: &str) -> &'static str {
    arms.iter().find(|(a, _)| a == arm).map(|(_, c)| *c).unwrap_or(TEXT)
}

/// Summary rows grouped by config × critic, in report order (the summary is sorted that way).
pub(crate) fn groups(report: &Report) -> Vec<(&str, &str, Vec<&SummaryRow>)> {
    let mut groups: Vec<(&str, &str, Vec<&SummaryRow>)> = Vec::new();
    for row in &report.summary.rows {
        match groups.last_mut() {
            Some((config, critic, rows)) if *config == row.config_id && *critic == row.critic => rows.push(row),
            _ => groups.push((&row.config_id, &row.critic, vec![row])),
        }
    }
    groups
}
