//! `judge.html`: the judge report for people, as one self-contained page.
//!
//! Like `report.html` it loads nothing — no scripts, fonts, stylesheets or images from elsewhere —
//! so it opens offline, as a CI artifact or as an attachment. Charts are inline SVG, one panel per
//! critic, each an `<svg id="…">` with a `<title>`:
//! - `chart-thresholds-<n>`: false-pass and false-fail rate against `pass_score`, the
//!   experiment's threshold marked — the data to pick a threshold from;
//! - `chart-calibration-<n>`: share of gold passes per band of the critic's score, each point
//!   sized by how many judgments fell in the band.
//!
//! The tables are those of `judge.md`. Every string that came from data is escaped.

use std::fmt::Write;

use critbench_report::escape_html as escape;

use crate::JudgeReport;
use crate::markdown;
use crate::metrics::{CalibrationBin, CriticMetrics, ThresholdRow};

const FALSE_PASS: &str = "#d55e00";
const FALSE_FAIL: &str = "#0072b2";
const CALIBRATION: &str = "#009e73";
const TEXT: &str = "#1f2328";
const MUTED: &str = "#57606a";
const GRID: &str = "#d8dee4";
const PANEL_WIDTH: f64 = 320.0;
const PANEL_HEIGHT: f64 = 230.0;
const LEFT: f64 = 44.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 36.0;

/// `**bold**` and `` `code` `` of the markdown cells, after escaping.
fn inline(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in escape(text).split("**").enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<strong>{part}</strong>");
        } else {
            out.push_str(part);
        }
    }
    let mut code = String::new();
    for (i, part) in out.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(code, "<code>{part}</code>");
        } else {
            code.push_str(part);
        }
    }
    code
}

/// A markdown pipe table (as `markdown` writes them) as an HTML table.
fn table(markdown: &str) -> String {
    let mut out = String::from("<table>\n");
    for (index, line) in markdown.lines().enumerate() {
        if index == 1 || !line.starts_with('|') {
            continue; // the |---| separator
        }
        let cells: Vec<&str> = line.trim().trim_matches('|').split(" | ").map(str::trim).collect();
        let tag = if index == 0 { "th" } else { "td" };
        out.push_str("<tr>");
        for cell in cells {
            let _ = write!(out, "<{tag}>{}</{tag}>", inline(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

fn px(value: f64) -> String {
    if value.is_finite() { format!("{value:.1}") } else { "0".to_string() }
}

/// Maps a critic's score range and a rate in [0, 1] onto a panel.
struct Frame {
    min: f64,
    max: f64,
}

impl Frame {
    fn x(&self, score: f64) -> f64 {
        let span = (self.max - self.min).max(f64::EPSILON);
        LEFT + (score - self.min) / span * (PANEL_WIDTH - LEFT - RIGHT)
    }

    fn y(&self, rate: f64) -> f64 {
        TOP + (1.0 - rate) * (PANEL_HEIGHT - TOP - BOTTOM)
    }

    /// Axes, grid lines at 0/25/50/75/100%, ticks at five points of the range, and the
    /// experiment's threshold as a dashed line.
    fn axes(&self, out: &mut String, x_label: &str, pass_score: f64) {
        for step in 0..=4 {
            let rate = f64::from(step) / 4.0;
            let y = px(self.y(rate));
            let _ = write!(
                out,
                r#"<line x1="{}" x2="{}" y1="{y}" y2="{y}" stroke="{GRID}"/><text x="{}" y="{y}" dy="4" text-anchor="end" font-size="11" fill="{MUTED}">{}%</text>"#,
                px(LEFT),
                px(PANEL_WIDTH - RIGHT),
                px(LEFT - 5.0),
                step * 25
            );
        }
        for step in 0..=4 {
            let score = self.min + (self.max - self.min) * f64::from(step) / 4.0;
            let _ = write!(
                out,
                r#"<text x="{}" y="{}" text-anchor="middle" font-size="11" fill="{MUTED}">{}</text>"#,
                px(self.x(score)),
                px(PANEL_HEIGHT - BOTTOM + 15.0),
                (score * 100.0).round() / 100.0
            );
        }
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="11" fill="{MUTED}">{}</text>"#,
            px((LEFT + PANEL_WIDTH - RIGHT) / 2.0),
            px(PANEL_HEIGHT - 6.0),
            escape(x_label)
        );
        if (self.min..=self.max).contains(&pass_score) {
            let x = px(self.x(pass_score));
            let _ = write!(
                out,
                r#"<line x1="{x}" x2="{x}" y1="{}" y2="{}" stroke="{TEXT}" stroke-dasharray="4 3"/><text x="{x}" y="{}" text-anchor="middle" font-size="11" fill="{TEXT}">pass_score {}</text>"#,
                px(TOP),
                px(PANEL_HEIGHT - BOTTOM),
                px(TOP - 8.0),
                pass_score
            );
        }
    }
}

fn polyline(out: &mut String, points: &[(f64, f64)], color: &str) {
    let path: Vec<String> = points.iter().map(|(x, y)| format!("{},{}", px(*x), px(*y))).collect();
    let _ = write!(out, r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#, path.join(" "));
}

/// Opens a panel's `<svg>` with its accessible title and the critic's name as a heading.
fn panel_start(id: &str, critic: &str, what: &str) -> String {
    let critic = escape(critic);
    format!(
        r#"<svg id="{id}" viewBox="0 0 {PANEL_WIDTH} {PANEL_HEIGHT}" role="img"><title>{critic}: {what}</title><text x="{}" y="14" font-size="13" font-weight="600" fill="{TEXT}">{critic}</text>"#,
        px(LEFT)
    )
}

fn threshold_panel(index: usize, critic: &CriticMetrics, rows: &[&ThresholdRow]) -> String {
    let frame = Frame { min: critic.score_min, max: critic.score_max };
    let mut out = panel_start(
        &format!("chart-thresholds-{index}"),
        &critic.critic,
        "false-pass and false-fail rate by pass_score",
    );
    frame.axes(&mut out, "pass_score", critic.pass_score);
    for (color, pick) in [
        (FALSE_PASS, (|r: &ThresholdRow| r.false_pass_rate) as fn(&ThresholdRow) -> Option<f64>),
        (FALSE_FAIL, |r: &ThresholdRow| r.false_fail_rate),
    ] {
        let points: Vec<(f64, f64)> =
            rows.iter().filter_map(|r| pick(r).map(|v| (frame.x(r.pass_score), frame.y(v)))).collect();
        polyline(&mut out, &points, color);
        for (x, y) in &points {
            let _ = write!(out, r#"<circle cx="{}" cy="{}" r="2.5" fill="{color}"/>"#, px(*x), px(*y));
        }
    }
    out.push_str("</svg>");
    out
}

fn calibration_panel(index: usize, critic: &CriticMetrics, bins: &[&CalibrationBin]) -> String {
    let frame = Frame { min: critic.score_min, max: critic.score_max };
    let most = bins.iter().map(|b| b.judgments).max().unwrap_or(1).max(1) as f64;
    let mut out =
        panel_start(&format!("chart-calibration-{index}"), &critic.critic, "share of gold passes by critic score");
    frame.axes(&mut out, "critic score (band middle)", critic.pass_score);
    let points: Vec<(f64, f64, &CalibrationBin)> = bins
        .iter()
        .filter_map(|b| b.gold_pass_rate.map(|rate| (frame.x((b.score_lo + b.score_hi) / 2.0), frame.y(rate), *b)))
        .collect();
    polyline(&mut out, &points.iter().map(|(x, y, _)| (*x, *y)).collect::<Vec<_>>(), CALIBRATION);
    for (x, y, bin) in &points {
        let radius = 3.0 + 7.0 * (bin.judgments as f64 / most).sqrt();
        let _ = write!(
            out,
            r#"<circle cx="{}" cy="{}" r="{}" fill="{CALIBRATION}" fill-opacity="0.55" stroke="{CALIBRATION}"><title>{}–{}: {} of {} gold pass</title></circle>"#,
            px(*x),
            px(*y),
            px(radius),
            bin.score_lo,
            bin.score_hi,
            bin.gold_pass,
            bin.judgments
        );
    }
    out.push_str("</svg>");
    out
}

const STYLE: &str = "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1f2328;max-width:1100px;\
margin:2em auto;padding:0 1em}h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #d8dee4}\
table{border-collapse:collapse;margin:.6em 0;font-size:13px}td,th{border:1px solid #d8dee4;padding:3px 8px;text-align:left;\
vertical-align:top}th{background:#f6f8fa}code{background:#f6f8fa;padding:0 3px}.panels{display:flex;flex-wrap:wrap;gap:12px}\
.panels svg{width:320px;height:230px;border:1px solid #eaeef2}.legend span{display:inline-block;margin-right:1.4em}\
.swatch{display:inline-block;width:14px;height:3px;vertical-align:middle;margin-right:5px}.muted{color:#57606a}";

/// The whole `judge.html`.
pub(crate) fn render(report: &JudgeReport) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>critbench judge: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&report.name)
    );
    let _ = writeln!(out, "<h1>critbench judge: {}</h1>", escape(&report.name));
    let drafts: usize = report.datasets.iter().map(|d| d.labeled_drafts).sum();
    let _ = writeln!(
        out,
        "<p class=\"muted\">Run <code>{}</code>: {drafts} labeled drafts, {} repeat(s). Verdicts under config \
         <code>{}</code> (pass_score {}): no fatal issue, score ≥ pass_score — the host decides. A failed critique is \
         no verdict (in judgments.parquet it is the fail a loop would take): it is left out of every rate and table \
         below but the critique errors, where it is counted. Rates count judgments with a verdict; intervals are 95% \
         bootstrap intervals over drafts ({} resamples) — for a rate \
         of exactly 0 or 1, Wilson's over drafts (Clopper–Pearson's exact one on 30 drafts or fewer) — unless \
         noted.</p>",
        escape(&report.run_id),
        report.repeats,
        escape(&report.policy.config_id),
        report.policy.pass_score,
        report.bootstrap_resamples
    );
    if !report.notes.is_empty() {
        out.push_str("<p>Notes:</p>\n<ul>\n");
        for note in &report.notes {
            let _ = writeln!(out, "<li>{}</li>", escape(note));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("<h2>Findings</h2>\n<ul>\n");
    for line in markdown::findings(report) {
        let _ = writeln!(out, "<li>{}</li>", inline(&line));
    }
    out.push_str("</ul>\n<h2>Critics side by side</h2>\n");
    out.push_str(&table(&markdown::side_by_side(report)));

    out.push_str("<h2>Threshold sweep</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"legend\"><span><i class=\"swatch\" style=\"background:{FALSE_PASS}\"></i>false-pass rate \
         (gold fail judged pass)</span><span><i class=\"swatch\" style=\"background:{FALSE_FAIL}\"></i>false-fail \
         rate (gold pass judged fail)</span><span class=\"muted\">dashed: the experiment's pass_score</span></p>"
    );
    out.push_str("<div class=\"panels\">\n");
    for (index, critic) in report.critics.iter().enumerate() {
        let rows: Vec<&ThresholdRow> = report.thresholds.iter().filter(|t| t.critic == critic.critic).collect();
        out.push_str(&threshold_panel(index, critic, &rows));
        out.push('\n');
    }
    out.push_str("</div>\n<h2>Calibration</h2>\n");
    out.push_str(
        "<p class=\"muted\">Share of gold passes among the judgments whose score fell in each tenth of the \
         critic's range; larger points hold more judgments. A well-ordered critic rises from left to right and \
         crosses into gold passes near its pass_score.</p>\n<div class=\"panels\">\n",
    );
    for (index, critic) in report.critics.iter().enumerate() {
        let bins: Vec<&CalibrationBin> = report.calibration.iter().filter(|b| b.critic == critic.critic).collect();
        out.push_str(&calibration_panel(index, critic, &bins));
        out.push('\n');
    }
    out.push_str("</div>\n<h2>Critic vs critic</h2>\n");
    if report.pairs.is_empty() {
        out.push_str("<p>No two critics judged the same draft.</p>\n");
    } else {
        out.push_str(
            "<p class=\"muted\">On the drafts both critics judged, first repeat of each; the paired interval \
             valid at the number of drafts, with its dual test (McNemar's exact test where fewer than 10 drafts \
             were judged right by one critic only).</p>\n",
        );
        out.push_str(&table(&markdown::pair_table(report)));
    }
    out.push_str(
        "<h2>By kind of draft</h2>\n<p class=\"muted\">A draft is misjudged when any repeat got the wrong \
                  verdict; 95% intervals over drafts, Wilson's (Clopper–Pearson's on 30 drafts or fewer).</p>\n",
    );
    out.push_str(&table(&markdown::flaw_table(report)));
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_escaped_before_markup() {
        assert_eq!(inline("**<b>** `x&y`"), "<strong>&lt;b&gt;</strong> <code>x&amp;y</code>");
        let html = table("| a | b |\n|---|---|\n| <i> | **1** |\n");
        assert_eq!(
            html,
            "<table>\n<tr><th>a</th><th>b</th></tr>\n<tr><td>&lt;i&gt;</td><td><strong>1</strong></td></tr>\n</table>\n"
        );
    }
}
