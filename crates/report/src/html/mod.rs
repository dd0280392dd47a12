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
//!   Pareto front ringed (and listed in `table-pareto`);
//! - `chart-sequential`: for a sequential run, the confidence sequence over the tasks admitted
//!   and where the run stopped (`sequential`).
//!
//! Past [`crate::html::grid::MANY_CONFIGS`] configs the per-config charts and tables show the best and
//! worst configs of each arm; the heatmaps and the Pareto chart keep every config.
//!
//! Tables with the same numbers as `report.md` follow the charts.
//!
//! Here: `svg` (escaping and drawing primitives), `labels` (point labels), `charts` (one file per
//! chart; the heatmaps are drawn in [`crate::grid`]), `tables`, `corrected` (the pass rates
//! corrected by gold labels, after `report --labels`), `style.css` (the inline stylesheet) and the
//! page itself.

mod answer;
mod charts;
mod corrected;
mod evaluators;
pub(crate) mod grid;
mod labels;
pub(crate) mod power;
mod sequential;
pub(crate) mod svg;
mod tables;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;

use critbench_storage::manifest::{Manifest, PolicyRecord};

pub use svg::escape;

use charts::{arms, exit_reasons_chart, pass_rate_chart, pass_vs_rounds_chart, trajectory_chart, unique};
use svg::with_code_spans;
use tables::{adjudication_table, comparison_table, kinds_table, pairs_table, pareto_table, summary_table};

use crate::queries::round_scores::{RoundMean, read_round_scores};
use crate::show::ListedPairs;
use crate::{Report, ReportError};

/// The page's one stylesheet, inlined.
const STYLE: &str = include_str!("style.css");

/// Reads what the charts need beyond the report (round scores, pass thresholds) and writes
/// `report.html` into the run directory.
/// `manifest` is the run's, as already read.
pub(crate) fn write_html(
    run_dir: &Path,
    report: &Report,
    manifest: Option<&Manifest>,
    rounds: Option<Vec<RoundMean>>,
    pairs: Option<&ListedPairs>,
    corrected: Option<&crate::gold::Corrected>,
) -> Result<(), ReportError> {
    let policies = manifest.map_or(&[][..], |m| &m.experiment.policies[..]);
    let html = render_page(report, rounds.as_deref(), &pass_scores(manifest), policies, pairs, corrected);
    let path = run_dir.join(crate::outputs::REPORT_HTML);
    critbench_storage::files::write_atomically(&path, html.as_bytes())
        .map_err(|source| ReportError::Write { path, source })
}

/// The mean score by round that the page's trajectory chart draws, from `run_dir`'s trajectories.
/// Reports can be rebuilt from outcomes alone (docs/REFERENCE.md, Commands): without trajectories
/// this is `None` and the page says the trajectory is unavailable. A file that is there but
/// unreadable is an error, like a corrupt outcomes file.
pub(crate) fn read_rounds(run_dir: &Path) -> Result<Option<Vec<RoundMean>>, ReportError> {
    let trajectories = critbench_storage::shards::table_files(run_dir, "trajectories");
    Ok(if trajectories.is_empty() { None } else { Some(read_round_scores(&trajectories)?) })
}

/// Each config's pass threshold, from the manifest's resolved policies.
fn pass_scores(manifest: Option<&Manifest>) -> HashMap<String, f64> {
    manifest
        .into_iter()
        .flat_map(|m| m.experiment.policies.iter())
        .map(|p| (p.config_id.clone(), p.pass_score))
        .collect()
}

/// The whole page. `rounds` is `None` when the run directory has no `trajectories.parquet`;
/// `pass_scores` maps config ids to their threshold, drawn on the trajectory; `pairs`, when given,
/// are the discordant pairs the page lists.
#[cfg(test)]
pub(crate) fn render_html(
    report: &Report,
    rounds: Option<&[RoundMean]>,
    pass_scores: &HashMap<String, f64>,
    policies: &[PolicyRecord],
    pairs: Option<&ListedPairs>,
) -> String {
    render_page(report, rounds, pass_scores, policies, pairs, None)
}

/// [`render_html`] with, when given, the pass rates corrected by gold labels.
pub(crate) fn render_page(
    report: &Report,
    rounds: Option<&[RoundMean]>,
    pass_scores: &HashMap<String, f64>,
    policies: &[PolicyRecord],
    pairs: Option<&ListedPairs>,
    corrected: Option<&crate::gold::Corrected>,
) -> String {
    let arms = arms(report);
    let configs = unique(report.summary.rows.iter().map(|r| r.config_id.as_str()));
    // Heatmaps need two axes of the manifest's grid, and at least one config of the report on it.
    let heatmap_grid = crate::html::grid::grid(policies)
        .filter(|g| report.summary.rows.iter().any(|r| g.cells.contains_key(&r.config_id)));
    // Past MANY_CONFIGS the per-config charts and tables show the best and worst configs only.
    let shown = crate::html::grid::shown_configs(report);
    let listed = shown.as_ref().map(|configs| crate::html::grid::restricted(report, configs));
    let full = report;
    let report = listed.as_ref().unwrap_or(report);
    let critics = unique(report.summary.rows.iter().map(|r| r.critic.as_str()));
    let grid = configs.len() > 1;
    let loops: u64 = full.summary.rows.iter().map(|r| r.n).sum();
    let name = report.summary.name.as_deref().unwrap_or("run");
    let plural = |count: usize, word: &str| format!("{count} {word}{}", if count == 1 { "" } else { "s" });

    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light\">\n<title>critbench report: {}</title>\n<style>\n{STYLE}</style>\n\
         </head>\n<body>\n<main>\n<header>\n<h1>critbench report: {}</h1>\n",
        escape(name),
        escape(name)
    );
    if let Some(partial) = &report.summary.partial {
        let _ = writeln!(out, "<p class=\"partial\" role=\"alert\"><strong>{}</strong></p>", escape(&partial.message));
    }
    let _ = writeln!(
        out,
        "<p class=\"meta\">{}{} loops · {} · {} · {}</p>",
        report.summary.run_id.as_deref().map(|id| format!("Run <code>{}</code> · ", escape(id))).unwrap_or_default(),
        loops,
        plural(configs.len(), "config"),
        plural(critics.len(), "critic"),
        plural(arms.len(), "arm"),
    );
    out.push_str("<nav><ul><li><a href=\"#answer\">The answer</a></li>");
    if report.sequential.is_some() {
        out.push_str("<li><a href=\"#sequential\">Sequential run</a></li>");
    }
    out.push_str("<li><a href=\"#chart-pass-rate\">Pass rate</a></li>");
    if report.evaluators.is_some() {
        out.push_str("<li><a href=\"#evaluators\">Held-out evaluators</a></li>");
    }
    out.push_str("<li><a href=\"#chart-exit-reasons\">Exit reasons</a></li>");
    out.push_str("<li><a href=\"#chart-score-trajectory\">Score trajectory</a></li>");
    if charts::has_cost_chart(report) {
        out.push_str("<li><a href=\"#chart-cost\">Pass rate against spend</a></li>");
    }
    if heatmap_grid.is_some() {
        out.push_str("<li><a href=\"#chart-heatmap\">Grid heatmaps</a></li>");
    }
    let money = charts::Spent::of(full) == charts::Spent::Money;
    if grid {
        let label = if money { "Passes per money spent" } else { "Passes per round" };
        let _ = write!(out, "<li><a href=\"#chart-pass-vs-rounds\">{label}</a></li>");
        out.push_str("<li><a href=\"#table-pareto\">Pareto front</a></li>");
    }
    out.push_str("<li><a href=\"#table-summary\">Summary table</a></li>");
    out.push_str("<li><a href=\"#table-comparisons\">Paired comparisons</a></li>");
    let priced = report.summary.rows.iter().any(|r| r.cost_per_loop.is_some());
    if priced {
        out.push_str("<li><a href=\"#money\">What a pass costs</a></li>");
    }
    if !crate::spend::table_rows(&report.summary.spend, None).is_empty() {
        out.push_str("<li><a href=\"#equal-cost\">At equal cost</a></li>");
    }
    let adjudicated = crate::markdown::adjudication_rows(report);
    if !adjudicated.is_empty() {
        out.push_str("<li><a href=\"#table-adjudication\">Adjudication</a></li>");
    }
    if corrected.is_some() {
        out.push_str("<li><a href=\"#corrected\">Corrected by gold labels</a></li>");
    }
    if !report.power.is_empty() {
        out.push_str("<li><a href=\"#power\">Tasks needed</a></li>");
    }
    if !report.summary.by_kind.is_empty() {
        out.push_str("<li><a href=\"#table-kinds\">By task kind</a></li>");
    }
    if pairs.is_some() {
        out.push_str("<li><a href=\"#discordant-pairs\">Discordant pairs</a></li>");
    }
    out.push_str("</ul></nav>\n</header>\n");
    // The answer first, by the lead judge, over every config (the full report, not the listed one).
    out.push_str(&answer::section(full));

    // What the reader must know before trusting the numbers: failed loops, a token cap, models.
    if !report.summary.notes.is_empty() || report.summary.timing.is_some() {
        out.push_str("<section id=\"notes\">\n<h2>Notes</h2>\n<ul>\n");
        for note in report.summary.notes.iter().chain(&report.summary.timing) {
            let _ = writeln!(out, "<li>{}</li>", with_code_spans(note));
        }
        out.push_str("</ul>\n</section>\n");
    }
    // What a sequential run's tasks are, before any number over them.
    if let Some(record) = &report.sequential {
        sequential::section(&mut out, record, &report.summary.comparisons);
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
            crate::html::grid::EXTREMES,
            crate::html::grid::EXTREMES,
        );
    }
    if let (Some(grid), false) = (&heatmap_grid, full.summary.rows.is_empty()) {
        out.push_str("<section>\n<h2>The grid at a glance</h2>\n<figure>\n");
        let left_out = crate::html::grid::heatmap_chart(&mut out, full, grid, &arms);
        let pair = crate::html::grid::compared_pair(full);
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
    if report.summary.rows.is_empty() {
        out.push_str("<p class=\"note\">The run has no outcomes: nothing to chart.</p>\n");
    } else {
        out.push_str("<section>\n<h2>Pass rate by arm</h2>\n<figure>\n");
        pass_rate_chart(&mut out, report, &arms);
        out.push_str(
            "<figcaption>Share of loops whose exit was <code>pass</code>. Whiskers are 95% intervals (see the \
             summary table). The arms of a config and critic ran on the same tasks and epochs; the paired comparisons below \
             say whether their difference is real.</figcaption>\n</figure>\n</section>\n",
        );

        if let Some(evaluated) = &report.evaluators {
            evaluators::section(&mut out, evaluated);
            if !evaluated.rounds.is_empty() {
                out.push_str("<section>\n<h2 id=\"rounds-judged\">Every round judged</h2>\n<figure>\n");
                charts::rounds_judged_chart(&mut out, evaluated, &arms);
                out.push_str(
                    "<figcaption>The steering critic's (solid) and the held-out evaluator's (dashed) pass rate of \
                     each round's drafts, over the loops that wrote one: loops that stopped earlier drop out, so \
                     later rounds hold the harder tasks. Where the critic's line rises and the evaluator's does \
                     not, the loop is pleasing its critic; <code>evaluators.csv</code> measures it from first draft \
                     to final answer (<code>pleasing_gap</code>, with its interval), \
                     <code>evaluator_rounds.csv</code> has every point.</figcaption>\n</figure>\n</section>\n",
                );
            }
        }
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

        if charts::has_cost_chart(report) {
            out.push_str("<section>\n<h2 id=\"pass-rate-against-spend\">Pass rate against spend</h2>\n<figure>\n");
            charts::cost_chart(&mut out, report, &arms);
            out.push_str(
                "<figcaption>Each arm's pass rate against its loops' mean spend per loop, one point per cap on its \
                 rounds: capped at k, a loop spends its first k rounds and answers with the draft its rule picks \
                 among them (in money when the config and critic were priced, else in tokens when counted, else in \
                 rounds). Where one curve is above another at the same spend, that arm passes more often for it; \
                 hover a point for its 95% interval. <code>cost_curves.csv</code> has every point, \
                 <code>cost_comparisons.csv</code> the paired differences.</figcaption>\n</figure>\n</section>\n",
            );
        }

        if grid {
            let (heading, against, less) = if money {
                ("Passes per money spent", "what a loop cost on average", "for as little money or less")
            } else {
                ("Passes per round spent", "how many rounds they used on average", "in as few rounds or fewer")
            };
            let _ = writeln!(out, "<section>\n<h2>{heading}</h2>\n<figure>");
            pass_vs_rounds_chart(&mut out, full, &arms);
            let _ = write!(
                out,
                "<figcaption>Each point is one config and arm: how often its loops passed against {against}. Up \
                 and to the left is better: more passes for less spent. Ringed points, joined by a dashed line, are \
                 each arm's Pareto front: no other config of that arm and critic passes more often {less}. Points \
                 are labelled by config id, leaving out the parts all configs share; configs that landed on the same \
                 spot share a point.",
            );
            if full.summary.rows.len() != report.summary.rows.len() {
                out.push_str(" In a grid this large only the front is labelled.");
            }
            out.push_str("</figcaption>\n</figure>\n<h3>Pareto front</h3>\n");
            out.push_str(if money {
                "<p>The configs worth shipping for each arm: the front, cheapest first. Cost per pass is what a pass \
                 costs, failed attempts included.</p>\n"
            } else {
                "<p>The configs worth shipping for each arm: the front, fewest rounds first. Rounds per passed loop \
                 is what a pass costs.</p>\n"
            });
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
    out.push_str("</section>\n");
    if priced {
        tables::money_section(&mut out, report);
    }
    tables::equal_cost_section(&mut out, report);
    tables::revisions_section(&mut out, report);
    if !adjudicated.is_empty() {
        out.push_str("<section>\n<h2 id=\"adjudication\">Adjudication</h2>\n");
        let _ = writeln!(out, "<p>{}</p>", with_code_spans(&crate::markdown::ADJUDICATION_SENTENCE.replace('*', "")));
        adjudication_table(&mut out, &adjudicated);
        out.push_str("</section>\n");
    }
    if let Some(corrected) = corrected {
        corrected::corrected_section(&mut out, corrected);
    }
    power::section(&mut out, &report.power.iter().collect::<Vec<_>>());
    if !report.summary.by_kind.is_empty() {
        out.push_str("<section>\n<h2 id=\"by-kind\">By task kind</h2>\n");
        out.push_str(
            "<p>The same headline over the tasks of each kind alone: each arm's pass rate with its 95% interval, and \
             the paired difference with its interval and test. Rows with p below 0.05 are bold.</p>\n",
        );
        kinds_table(&mut out, report, &arms);
        out.push_str("</section>\n");
    }
    if let Some(pairs) = pairs {
        out.push_str("<section>\n");
        pairs_table(&mut out, pairs);
        out.push_str("</section>\n");
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}
