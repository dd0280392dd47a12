//! The page as a whole: sections, escaping, charts drawn to scale.

use std::collections::HashMap;

use crate::queries::round_scores::RoundMean;
use critbench_storage::manifest::PolicyRecord;

use super::render_html;
use crate::Report;
use crate::rows::{ComparisonRow, SummaryRow};

fn summary(config_id: &str, critic: &str, arm: &str, passed: u64, mean_rounds: f64) -> SummaryRow {
    let n = 100;
    let (lo, hi) = critbench_stats::binomial::wilson_interval(passed, n);
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
    let summary =
        crate::Summary { run_id: Some("run-1".into()), name: Some("demo".into()), rows, ..Default::default() };
    Report { summary, ..Report::default() }
}

fn round(config_id: &str, critic: &str, arm: &str, round: u32, mean_score: f64) -> RoundMean {
    RoundMean {
        config_id: config_id.into(),
        critic: critic.into(),
        arm: critbench_core::Arm::parse(arm).expect("an arm"),
        round,
        mean_score,
        count: 10,
    }
}

#[test]
fn notes_are_shown_with_code_spans_and_escaped() {
    let mut with_notes = report(&["p8"], "rubric");
    with_notes.summary.notes = vec![
        "2 loop(s) failed; `failed_loops` in manifest.json says why <b>".into(),
        "**Spent 0.0256 USD** on model calls (`writer` **2** x**y `a**b`).".into(),
    ];
    let page = render_html(&with_notes, None, &HashMap::new(), &[], None);
    assert!(page.contains("<section id=\"notes\">"));
    assert!(page.contains("<li>2 loop(s) failed; <code>failed_loops</code> in manifest.json says why &lt;b&gt;</li>"));
    // Bold as the markdown report reads it, never inside a code span, an unclosed `**` kept.
    assert!(
        page.contains(
            "<li><strong>Spent 0.0256 USD</strong> on model calls (<code>writer</code> <strong>2</strong> x**y \
             <code>a**b</code>).</li>"
        ),
        "{page}"
    );
    let page = render_html(&report(&["p8"], "rubric"), None, &HashMap::new(), &[], None);
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
        None,
    );
    assert!(!page.contains("<script"), "raw markup from data reached the page");
    assert!(page.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"));
}

#[test]
fn every_chart_is_an_svg_with_a_title_and_the_grid_chart_only_for_grids() {
    let rounds = [round("p8", "rubric", "feedback", 0, 5.0), round("p8", "rubric", "feedback", 1, 7.5)];
    let one = render_html(&report(&["p8"], "rubric"), Some(&rounds), &HashMap::from([("p8".into(), 8.0)]), &[], None);
    for id in ["chart-pass-rate", "chart-exit-reasons", "chart-score-trajectory"] {
        assert!(one.contains(&format!("<svg id=\"{id}\"")), "{id} missing");
        assert!(one.contains(&format!("<title id=\"{id}-title\">")), "{id} has no title");
    }
    assert!(!one.contains("chart-pass-vs-rounds"), "a single config has nothing to trade off");
    // The trajectory joins its rounds with a line; the pass score is drawn.
    assert!(one.contains("<polyline points=\""));
    assert!(one.contains("pass score 8"));

    let grid = render_html(&report(&["p7", "p8", "p9"], "rubric"), Some(&rounds), &HashMap::new(), &[], None);
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
    let policies: Vec<PolicyRecord> = [7.0, 8.0, 9.0].iter().flat_map(|p| [1, 3, 5].map(|r| policy(*p, r))).collect();
    let configs: Vec<&str> = policies.iter().map(|p| p.config_id.as_str()).collect();
    let mut grid = report(&configs, "rubric");
    for (i, config) in configs.iter().enumerate() {
        let diff = (50.0 - i as f64 * 6.0) / 100.0;
        grid.summary.comparisons.push(ComparisonRow {
            config_id: config.to_string(),
            critic: "rubric".into(),
            arm_a: "feedback".into(),
            arm_b: "no-feedback".into(),
            diff,
            diff_lo: Some(diff - 0.1),
            diff_hi: Some(diff + 0.1),
            ..ComparisonRow::default()
        });
    }
    let page = render_html(&grid, None, &HashMap::new(), &policies, None);
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
    let page = render_html(&grid, None, &HashMap::new(), &[], None);
    assert!(!page.contains("chart-heatmap"));
}

#[test]
fn the_pareto_front_is_ringed_joined_and_tabled() {
    let page = render_html(&report(&["p7", "p8", "p9"], "rubric"), None, &HashMap::new(), &[], None);
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
fn the_page_loads_nothing_from_elsewhere() {
    let page = render_html(&report(&["p7", "p8"], "rubric"), Some(&[]), &HashMap::new(), &[], None);
    assert!(!page.contains("http://") && !page.contains("https://"));
    assert!(!page.contains("<script") && !page.contains("<link") && !page.contains("@import"));
    assert!(!page.contains("url("));
}

#[test]
fn without_trajectories_the_page_says_so() {
    let page = render_html(&report(&["p8"], "rubric"), None, &HashMap::new(), &[], None);
    assert!(page.contains("No <code>trajectories.parquet</code>"));
    assert!(page.contains("<svg id=\"chart-pass-rate\""));
}

#[test]
fn the_summary_table_shows_what_a_pass_costs() {
    let mut costed = report(&["p8"], "rubric");
    costed.summary.rows[0].mean_rounds_passed = 2.25;
    let page = render_html(&costed, None, &HashMap::new(), &[], None);
    assert!(page.contains("<td class=\"num\">2.50</td><td class=\"num\">2.25</td>"), "{page}");
    assert!(!page.contains("tokens in / out per loop"), "no tokens, no token columns");
    costed.summary.rows[0].tokens_in_per_loop = Some(1200.0);
    costed.summary.rows[0].tokens_out_per_loop = Some(300.4);
    costed.summary.rows[0].tokens_in_per_pass = Some(1000.0);
    costed.summary.rows[0].tokens_out_per_pass = Some(250.0);
    let page = render_html(&costed, None, &HashMap::new(), &[], None);
    assert!(page.contains("<td class=\"num\">1200 / 300</td><td class=\"num\">1000 / 250</td>"), "{page}");
    // An arm without token counts shows dashes in those columns.
    assert!(page.contains("<td class=\"num\">–</td><td class=\"num\">–</td>"));
}

#[test]
fn bars_and_whiskers_are_drawn_to_scale() {
    let page = render_html(&report(&["p8"], "rubric"), None, &HashMap::new(), &[], None);
    // 80% of the 210..740 axis is 424 wide.
    assert!(page.contains("width=\"424.0\" height=\"14\" fill=\"#0072b2\""), "{page}");
    // Exit segments of a row add up to the full axis (650 wide): 80 + 10 + 10 of 100.
    assert!(page.contains("width=\"520.0\" height=\"14\" fill=\"#009e73\""));
    assert!(page.contains("width=\"65.0\" height=\"14\" fill=\"#d55e00\""));
}

fn comparison(config: &str, diff: f64, p_value: f64) -> ComparisonRow {
    ComparisonRow {
        config_id: config.into(),
        critic: "rubric".into(),
        arm_a: "feedback".into(),
        arm_b: "no-feedback".into(),
        diff,
        diff_lo: Some(diff - 0.1),
        diff_hi: Some(diff + 0.1),
        p_value: Some(p_value),
        test: "exact McNemar".into(),
        ..ComparisonRow::default()
    }
}

#[test]
fn each_task_kind_gets_its_headline_row_per_config() {
    let mut page_report = report(&["p7", "p8"], "rubric");
    let paper = report(&["p7", "p8"], "rubric");
    let mut essay = report(&["p7"], "rubric");
    essay.summary.rows.retain(|r| r.arm == "feedback");
    page_report.summary.by_kind = vec![
        crate::KindReport {
            kind: Some("paper<1>".into()),
            summary: paper.summary.rows,
            comparisons: vec![comparison("p7", 0.5, 0.001), comparison("p8", 0.02, 0.6)],
        },
        crate::KindReport { kind: None, summary: essay.summary.rows, comparisons: Vec::new() },
    ];
    let page = render_html(&page_report, None, &HashMap::new(), &[], None);
    assert!(page.contains("<li><a href=\"#table-kinds\">By task kind</a></li>"));
    let table = &page[page.find("<table id=\"table-kinds\">").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    // Two configs of the escaped kind, one of the tasks without a kind.
    assert_eq!(table.matches("<td><code>paper&lt;1&gt;</code></td>").count(), 2, "{table}");
    assert_eq!(table.matches("<td><span class=\"note\">none</span></td>").count(), 1);
    // Significant differences are bold, as in the comparisons table.
    assert_eq!(table.matches("<tr class=\"significant\">").count(), 1);
    assert!(table.contains("<td class=\"num\">+50.0 pp<br><span class=\"ci\">(+40.0 to +60.0)</span></td>"), "{table}");
    // Feedback passed 80 of 100 at p7; an arm a kind lacks is a dash, as is a missing comparison.
    assert!(table.contains("<td class=\"num\">80.0%<br><span class=\"ci\">(71.1%–86.7%) n = 100</span></td>"));
    assert!(table.contains("<td class=\"num\">–</td><td class=\"num\">–</td><td class=\"num\">–</td></tr>"));
    // Every row compares the same two arms: the header names them, no column repeats them.
    assert!(table.contains("<th class=\"num\">feedback − no-feedback (95% CI)</th>") && !table.contains("A vs B"));
    // Rows comparing different arms say which, row by row.
    let mut mixed = page_report.clone();
    mixed.summary.by_kind[0].comparisons[1].arm_b = "single".into();
    let page = render_html(&mixed, None, &HashMap::new(), &[], None);
    assert!(page.contains("<th>A vs B</th>") && page.contains("<td>feedback vs single</td><td class=\"num\">+2.0 pp"));
    // Without kinds, no section and no link.
    let page = render_html(&report(&["p7"], "rubric"), None, &HashMap::new(), &[], None);
    assert!(!page.contains("table-kinds") && !page.contains("By task kind"));
}

fn pair_group(config: &str, pairs: usize, units: usize) -> crate::show::PairGroup {
    let pairs: Vec<crate::show::DiscordantPair> = (0..pairs)
        .map(|i| crate::show::DiscordantPair { task_id: format!("t<{i:03}>"), epoch: 0, a_passed: i % 3 != 0 })
        .collect();
    crate::show::PairGroup {
        config: config.into(),
        critic: "rubric".into(),
        units,
        a_only: pairs.iter().filter(|p| p.a_passed).count(),
        b_only: pairs.iter().filter(|p| !p.a_passed).count(),
        pairs,
    }
}

#[test]
fn discordant_pairs_are_counted_and_the_first_hundred_listed_with_their_command() {
    let pairs = crate::show::ListedPairs {
        arm_a: "feedback".into(),
        arm_b: "no-feedback".into(),
        groups: vec![pair_group("p7", 60, 200), pair_group("p8", 60, 200)],
    };
    let page = render_html(&report(&["p7", "p8"], "rubric"), None, &HashMap::new(), &[], Some(&pairs));
    assert!(page.contains("<li><a href=\"#discordant-pairs\">Discordant pairs</a></li>"));
    assert!(page.contains("<h2 id=\"discordant-pairs\">Discordant pairs of feedback and no-feedback</h2>"));
    assert!(page.contains(
        "<p>120 of 400 task × epoch units had one arm pass and the other not: only feedback passed 80, only \
         no-feedback passed 40."
    ));
    assert!(page.contains("The first 100 are listed; <code>critbench show . --pairs feedback,no-feedback</code>"));
    let table = &page[page.find("<table id=\"table-discordant-pairs\">").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(table.matches("<tr><td>").count(), 100);
    assert_eq!(table.matches("<tr><td>p8</td>").count(), 40, "p7's 60, then p8's first 40");
    // Task ids are escaped; the command opens the arm that did not pass.
    assert!(table.contains(
        "<tr><td>p7</td><td>rubric</td><td>t&lt;000&gt;</td><td class=\"num\">0</td><td>no-feedback</td>\
         <td><code>critbench show . --task t&lt;000&gt; --config p7 --critic rubric --epoch 0 --arm feedback</code></td></tr>"
    ), "{table}");
    // No discordant pairs: the counts, no table.
    let none = crate::show::ListedPairs { groups: vec![pair_group("p7", 0, 200)], ..pairs };
    let page = render_html(&report(&["p7"], "rubric"), None, &HashMap::new(), &[], Some(&none));
    assert!(page.contains("<p>0 of 200 task × epoch units") && !page.contains("table-discordant-pairs"));
}

#[test]
fn with_prices_the_front_is_drawn_in_money_and_a_pass_is_priced() {
    // p7 passes most in the fewest rounds but costs the most per loop; p9 is cheapest.
    let mut priced = report(&["p7", "p8", "p9"], "rubric");
    for (row, cost) in priced.summary.rows.iter_mut().zip([0.09, 0.02, 0.05, 0.02, 0.01, 0.02]) {
        row.cost_per_loop = Some(cost);
        row.cost_total = Some(cost * row.n as f64);
        row.cost_per_pass = Some(cost * row.n as f64 / row.passed as f64);
    }
    priced.summary.currency = Some("EUR".into());
    let page = render_html(&priced, None, &HashMap::new(), &[], None);
    assert!(page.contains("Pass rate against cost per loop"), "the chart's title");
    assert!(page.contains(">mean cost per loop (EUR)</text>"), "its axis");
    // Feedback's front in money: p9 (78% for 0.01), p8 (79% for 0.05), p7 (80% for 0.09); in
    // rounds it was p7 alone. The no-feedback configs coincide: one ringed point.
    assert_eq!(page.matches("<circle class=\"front\"").count(), 3 + 1, "{page}");
    let table = &page[page.find("<table id=\"table-pareto\">").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    let order: Vec<usize> =
        ["<td>p9</td>", "<td>p8</td>", "<td>p7</td>"].iter().map(|c| table.find(c).unwrap()).collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "cheapest first: {table}");
    assert!(table.contains("<td class=\"num\">0.0100 EUR</td><td class=\"num\">0.0128 EUR</td>"), "{table}");
    assert!(page.contains("<h2 id=\"money\">What a pass costs</h2>") && page.contains("<table id=\"table-money\">"));
    assert!(page.contains("<a href=\"#money\">"));
    // One row without a price: rounds again, and no money chart.
    priced.summary.rows[5].cost_per_loop = None;
    let page = render_html(&priced, None, &HashMap::new(), &[], None);
    assert!(page.contains("Pass rate against mean rounds") && !page.contains("mean cost per loop"));
    let plain = render_html(&report(&["p7", "p8"], "rubric"), None, &HashMap::new(), &[], None);
    assert!(!plain.contains("id=\"money\"") && !plain.contains("cost per loop"), "no prices, no money");
}

/// A loop costing a ten-thousandth of a euro: the spend chart's axis and descriptions say the
/// amounts with the digits they need, not `0.0`.
#[test]
fn the_spend_charts_money_reads_at_a_ten_thousandth_of_a_unit() {
    let mut priced = report(&["p7"], "rubric");
    priced.summary.currency = Some("EUR".into());
    priced.summary.spend.curves = (0..=5)
        .map(|step| crate::spend::CostCurveRow {
            config_id: "p7".into(),
            critic: "rubric".into(),
            arm: "feedback".into(),
            unit: crate::spend::COST.into(),
            cap: step + 1,
            spend: 0.00002 * f64::from(step),
            loops: 100,
            pass_rate: 0.1 * f64::from(step),
            ..Default::default()
        })
        .collect();
    let page = render_html(&priced, None, &HashMap::new(), &[], None);
    let chart = &page[page.find("<svg id=\"chart-cost\"").unwrap()..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    let labels: Vec<&str> = chart
        .split("class=\"tick\">")
        .skip(1)
        .map(|t| &t[..t.find('<').unwrap()])
        .filter(|t| !t.ends_with('%'))
        .collect();
    // Four ticks at a step of 0.000025 (were "0.0 0.0 0.0 0.0").
    assert_eq!(labels, ["0.000025", "0.00005", "0.000075", "0.0001"], "{chart}");
    assert!(chart.contains(">mean spend per loop (EUR)</text>"), "{chart}");
    assert!(chart.contains("p7 · rubric · feedback, cap 3, 0.0000400 EUR a loop: 20.0%"), "{chart}");
}
