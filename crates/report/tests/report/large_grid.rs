//! A 1,000-config grid: the page summarises instead of listing every config, and the terminal
//! table prints the best and worst configs, while the CSVs keep every row.

use critbench_storage::tables::{OutcomeRow, OutcomeWriter};

const PASS_SCORES: usize = 10;
const CAPS: usize = 100;
const TASKS: usize = 12;

fn outcome(pass_score: usize, cap: usize, arm: &str, task: usize) -> OutcomeRow {
    // Lower thresholds and higher caps pass more; feedback more than no-feedback.
    let ease = (PASS_SCORES - pass_score) as f64 / PASS_SCORES as f64 * 0.5 + cap as f64 / CAPS as f64 * 0.4;
    let boost = if arm == "feedback" { 0.1 } else { 0.0 };
    let passed = (task as f64 + 0.5) / TASKS as f64 <= ease + boost;
    let rounds = 1 + (cap % 5) as u32 + u32::from(!passed);
    OutcomeRow {
        run_id: "large-grid".into(),
        config_id: format!("p{pass_score}-r{cap}"),
        task_id: format!("t{task:03}"),
        pass_score: pass_score as f64,
        max_revisions: cap as u32,
        ..OutcomeRow::bare("", arm, passed, rounds)
    }
}

#[test]
fn a_thousand_config_grid_gives_a_small_page_and_a_short_terminal_table() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = OutcomeWriter::create(&dir.path().join("outcomes.parquet")).unwrap();
    let mut policies = Vec::new();
    for pass_score in 0..PASS_SCORES {
        for cap in 0..CAPS {
            policies.push(serde_json::json!({
                "config_id": format!("p{pass_score}-r{cap}"), "pass_score": pass_score, "max_revisions": cap,
                "stall": true, "plateau_eps": 0.0,
            }));
            for task in 0..TASKS {
                for arm in ["feedback", "no-feedback"] {
                    writer.push(outcome(pass_score, cap, arm, task)).unwrap();
                }
            }
        }
    }
    writer.close().unwrap();
    let manifest = serde_json::json!({
        "manifest_version": 1, "schema_version": 10, "run_id": "large-grid",
        "experiment": {"name": "large", "epochs": 1, "arms": ["feedback", "no-feedback"],
            "policies": policies, "critics": [{"name": "rubric"}]},
    });
    std::fs::write(dir.path().join("manifest.json"), manifest.to_string()).unwrap();

    let report = critbench_report::write_reports(dir.path()).unwrap();
    assert_eq!(report.summary.rows.len(), 2000);
    let csv = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2000, "the CSV keeps every row");

    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(page.len() < 5_000_000, "report.html is {} bytes", page.len());
    assert!(page.contains("<svg id=\"chart-heatmap\"") && page.contains("<svg id=\"chart-pass-vs-rounds\""));
    // Every config has its cell in each arm's heatmap and in the difference's.
    assert_eq!(page.matches("<rect class=\"cell").count(), 3 * 1000);
    assert!(page.contains("This grid has 1000 configs"), "the page says it summarises");
    assert!(page.contains(" · 24000 loops · 1000 configs · "), "the header counts every loop");
    let summary_table = &page[page.find("<table id=\"table-summary\">").unwrap()..];
    let summary_table = &summary_table[..summary_table.find("</table>").unwrap()];
    let listed = summary_table.matches("<tr><td>").count();
    assert!((20..=80).contains(&listed), "{listed} summary rows listed");
    // The best config of feedback (lowest threshold, highest cap) is among those listed.
    assert!(summary_table.contains("<td>p0-r99</td>"));

    let terminal = critbench_report::glance_table(&report);
    eprintln!("report.html: {} bytes; terminal table: {} lines", page.len(), terminal.lines().count());
    if let Some(keep) = std::env::var_os("CRITBENCH_KEEP_LARGE_GRID") {
        std::fs::write(std::path::Path::new(&keep).join("report.html"), &page).unwrap();
        std::fs::write(std::path::Path::new(&keep).join("glance.txt"), &terminal).unwrap();
    }
    assert!(terminal.lines().count() < 40, "{terminal}");
    assert!(terminal.contains("980 config × critic rows left out"), "{terminal}");
    let best = terminal.lines().nth(2).unwrap();
    assert!(best.contains("100.0%"), "best first: {best}");
}
