//! `/answer`: the run's answer as `report.md` opens with it, then every config × critic × arm's
//! pass rate by each judge as `summary.csv` holds it, each figure a link to the loops behind it.
//!
//! Both are the report crate's own output, read as written: the numbers are not computed again,
//! so they are the report's to the digit. A run whose reports are missing says which command
//! writes them.

use std::fmt::Write as _;
use std::path::Path;

use critbench_core::Arm;

use crate::html::{escape, link, percent};
use crate::index::LoopIndex;
use crate::pages::loops::{CRITIC, SETS, in_set};

/// One row of `summary.csv`: the columns the page shows.
#[derive(Clone, Debug, PartialEq)]
pub struct RateRow {
    /// `config_id`.
    pub config: String,
    /// `arm`.
    pub arm: String,
    /// `critic`.
    pub critic: String,
    /// `judge`.
    pub judge: String,
    /// `n`: loops the judge judged.
    pub n: u64,
    /// `passed`.
    pub passed: u64,
    /// `pass_rate` and its interval.
    pub rate: (f64, f64, f64),
}

/// Reads `summary.csv`'s rows; `None` when the run has no such file.
pub fn read_rates(run_dir: &Path) -> Result<Option<Vec<RateRow>>, String> {
    let path = run_dir.join(critbench_report::outputs::SUMMARY_CSV);
    if !path.exists() {
        return Ok(None);
    }
    let mut reader = csv::Reader::from_path(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let headers = reader.headers().map_err(|e| format!("{}: {e}", path.display()))?.clone();
    let column = |name: &str| {
        headers.iter().position(|h| h == name).ok_or_else(|| format!("{}: no column `{name}`", path.display()))
    };
    let [config, arm, critic, judge, n, passed, rate, lo, hi] =
        ["config_id", "arm", "critic", "judge", "n", "passed", "pass_rate", "pass_rate_lo", "pass_rate_hi"].map(column);
    let (config, arm, critic, judge, n, passed, rate, lo, hi) =
        (config?, arm?, critic?, judge?, n?, passed?, rate?, lo?, hi?);
    let mut rows = Vec::new();
    for (line, record) in reader.records().enumerate() {
        let record = record.map_err(|e| format!("{}: {e}", path.display()))?;
        let text = |i: usize| record.get(i).unwrap_or("").to_string();
        let float = |i: usize| record.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(f64::NAN);
        let count = |i: usize| {
            record.get(i).and_then(|v| v.parse::<u64>().ok()).ok_or_else(|| {
                format!("{}: line {}: column `{}` is not a count", path.display(), line + 2, &headers[i])
            })
        };
        rows.push(RateRow {
            config: text(config),
            arm: text(arm),
            critic: text(critic),
            judge: text(judge),
            n: count(n)?,
            passed: count(passed)?,
            rate: (float(rate), float(lo), float(hi)),
        });
    }
    Ok(Some(rows))
}

/// `report.md`'s section `## The answer`, without its heading; `None` when there is none.
pub fn answer_section(report_md: &str) -> Option<&str> {
    let start = report_md.find("## The answer\n")? + "## The answer\n".len();
    let rest = &report_md[start..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    Some(rest[..end].trim())
}

/// The link to the loops of a config × critic × arm that `judge` passed (`verdict` `pass`) or
/// judged (`judged`).
fn loops_link(config: &str, critic: &str, arm: &str, judge: &str, verdict: &str) -> String {
    link("/loops", &[("config", config), ("critic", critic), ("arm", arm), ("judge", judge), ("verdict", verdict)])
}

/// Inline Markdown of the answer's lines: code spans, the rest escaped.
fn inline(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", escape(part));
        } else {
            out.push_str(&escape(part));
        }
    }
    out
}

/// The answer's Markdown as HTML: paragraphs, lists and tables, with each arm's figure of a
/// table under "Every config by JUDGE" a link to the loops it counts.
pub fn render_answer(section: &str) -> String {
    let mut out = String::new();
    let mut judge: Option<String> = None;
    let mut table: Option<Vec<String>> = None;
    let mut in_list = false;
    for line in section.lines() {
        let line = line.trim_end();
        if !line.starts_with('|') && table.take().is_some() {
            out.push_str("</tbody></table>\n");
        }
        if !line.starts_with("- ") && in_list {
            out.push_str("</ul>\n");
            in_list = false;
        }
        if let Some(rest) = line.strip_prefix("Every config by ") {
            let name = rest.trim_end_matches(':').split(',').next().unwrap_or("").trim().trim_matches('`');
            judge = Some(if name.starts_with("the steering critic") { CRITIC.into() } else { name.into() });
        }
        if line.starts_with('|') {
            let cells: Vec<String> = line.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect();
            match &table {
                None => {
                    out.push_str("<table class=\"answer-table\"><thead><tr>");
                    for cell in &cells {
                        let _ = write!(out, "<th>{}</th>", inline(cell));
                    }
                    out.push_str("</tr></thead><tbody>\n");
                    table = Some(cells);
                }
                Some(_) if cells.iter().all(|c| c.chars().all(|ch| ch == '-' || ch == ':')) => {}
                Some(header) => {
                    out.push_str("<tr>");
                    for (i, cell) in cells.iter().enumerate() {
                        let arm = header.get(i).filter(|h| Arm::parse(h).is_some());
                        match (arm, &judge, cells.first(), cells.get(1)) {
                            (Some(arm), Some(judge), Some(config), Some(critic)) if cell.ends_with('%') => {
                                let _ = write!(
                                    out,
                                    "<td class=\"num\"><a href=\"{}\">{}</a></td>",
                                    escape(&loops_link(config, critic, arm, judge, "pass")),
                                    escape(cell)
                                );
                            }
                            _ => {
                                let _ = write!(out, "<td>{}</td>", inline(cell));
                            }
                        }
                    }
                    out.push_str("</tr>\n");
                }
            }
            continue;
        }
        if let Some(item) = line.strip_prefix("- ") {
            if !in_list {
                out.push_str("<ul>\n");
                in_list = true;
            }
            let _ = writeln!(out, "<li>{}</li>", inline(item));
        } else if !line.is_empty() {
            let _ = writeln!(out, "<p>{}</p>", inline(line));
        }
    }
    if table.is_some() {
        out.push_str("</tbody></table>\n");
    }
    if in_list {
        out.push_str("</ul>\n");
    }
    out
}

/// Every judge's pass rates, a table each: config × critic rows, an arm a column, each rate a link
/// to the loops the judge passed and each count to the loops it judged.
pub fn render_rates(rows: &[RateRow]) -> String {
    let mut out = String::new();
    let judges = unique(rows.iter().map(|r| r.judge.as_str()));
    for judge in judges {
        let mine: Vec<&RateRow> = rows.iter().filter(|r| r.judge == judge).collect();
        let arms = unique(mine.iter().map(|r| r.arm.as_str()));
        let cells = unique(mine.iter().map(|r| (r.config.as_str(), r.critic.as_str())));
        let named =
            if judge == CRITIC { "the steering critic".to_string() } else { format!("<code>{}</code>", escape(judge)) };
        let _ = write!(
            out,
            "<h3>By {named}</h3>\n<table class=\"rates\" data-judge=\"{}\"><thead><tr><th>config</th><th>critic</th>",
            escape(judge)
        );
        for arm in &arms {
            let _ = write!(out, "<th>{}</th>", escape(arm));
        }
        out.push_str("</tr></thead><tbody>\n");
        for (config, critic) in cells {
            let _ = write!(out, "<tr><td>{}</td><td>{}</td>", escape(config), escape(critic));
            for arm in &arms {
                let row = mine.iter().find(|r| r.config == config && r.critic == critic && r.arm == *arm);
                match row {
                    // An adjudicated twin is no arm of the tables: its figure has no loops of its own.
                    Some(row) if Arm::parse(arm).is_none() => {
                        let _ =
                            write!(out, "<td class=\"num\">{} ({}/{})</td>", percent(row.rate.0), row.passed, row.n);
                    }
                    Some(row) => {
                        let _ = write!(
                            out,
                            "<td class=\"num\" data-arm=\"{}\"><a class=\"rate\" href=\"{}\">{}</a> <span \
                             class=\"ci\">({}–{})</span> <a class=\"passed\" data-passed=\"{}\" href=\"{}\">{}</a>/<a \
                             class=\"judged\" data-n=\"{}\" href=\"{}\">{}</a></td>",
                            escape(arm),
                            escape(&loops_link(config, critic, arm, judge, "pass")),
                            percent(row.rate.0),
                            percent(row.rate.1),
                            percent(row.rate.2),
                            row.passed,
                            escape(&loops_link(config, critic, arm, judge, "pass")),
                            row.passed,
                            row.n,
                            escape(&loops_link(config, critic, arm, judge, "judged")),
                            row.n,
                        );
                    }
                    None => out.push_str("<td class=\"muted\">–</td>"),
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table>\n");
    }
    out
}

/// The interesting sets with how many loops each holds, each a link to its list.
pub fn render_sets(index: &LoopIndex) -> String {
    let mut counts = vec![0usize; SETS.len()];
    for l in &index.loops {
        for (set, count) in counts.iter_mut().enumerate() {
            if in_set(set, l, index) {
                *count += 1;
            }
        }
    }
    let mut out = String::from("<ul class=\"sets\">\n");
    for ((name, text), count) in SETS.iter().zip(counts) {
        if super::loops::needs_evaluators(name) && index.evaluators.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "<li><a href=\"{}\">{}</a>: <span class=\"count\" data-set=\"{name}\">{count}</span> loops</li>",
            escape(&link("/loops", &[("set", name)])),
            escape(text)
        );
    }
    out.push_str("</ul>\n");
    out
}

fn unique<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_section_is_cut_at_the_next_heading_and_its_figures_link_to_their_loops() {
        let md = "# critbench report: x\n\n## The answer\n\nThe answer, by `sim-truth`.\n\n- p8, pass rate: \
                  feedback 36.7%\n\nEvery config by sim-truth:\n\n| config | critic | feedback | no-feedback | \
                  by the critic |\n|---|---|---:|---:|---:|\n| p8 | rubric | 36.7% | 3.3% | +61.7 pp |\n\n## Pass \
                  rate\n\nmore\n";
        let section = answer_section(md).unwrap();
        assert!(section.starts_with("The answer, by") && section.ends_with("+61.7 pp |"), "{section}");
        let html = render_answer(section);
        assert!(html.contains("<p>The answer, by <code>sim-truth</code>.</p>"), "{html}");
        assert!(html.contains("<li>p8, pass rate: feedback 36.7%</li>"), "{html}");
        assert!(
            html.contains(
                "<td class=\"num\"><a href=\"/loops?config=p8&amp;critic=rubric&amp;arm=feedback&amp;judge=sim-truth&amp;verdict=pass\">36.7%</a></td>"
            ),
            "{html}"
        );
        assert!(html.contains("<td>+61.7 pp</td>"), "not an arm's column: {html}");
        assert_eq!(html.matches("<a href").count(), 2);
    }
}
