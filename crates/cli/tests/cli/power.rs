//! How many tasks a paired comparison needs: tests/python/check_power.py recomputes every row of a
//! run's power.csv (the variance split into task and epoch parts, the MDE, the tasks needed, the
//! advice) with numpy and scipy from its outcomes.parquet, on the demo (3 epochs), on the
//! adjudicated arms of experiments/adjudicate.toml, and on each with tasks of unequal epochs.

use crate::common::*;

#[test]
fn power_csv_agrees_with_numpy_on_the_demo_and_is_in_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    let adjudicate = dir.path().join("adjudicate");
    // The demo's first 60 tasks of each dataset (120 tasks, 3 epochs, 9 configs): the whole demo
    // checks the same arithmetic at ten times the cost.
    ok(critbench(&["run", "experiments/demo.toml", "--limit", "60", "--out", demo.to_str().unwrap(), "-q"]));
    ok(critbench(&[
        "run",
        "experiments/adjudicate.toml",
        "--limit",
        "15",
        "--out",
        adjudicate.to_str().unwrap(),
        "-q",
    ]));
    let python = crate::common::python()
        .arg(repo().join("tests/python/check_power.py"))
        .arg(binary())
        .arg(&demo)
        .arg(&adjudicate)
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
    let stdout = String::from_utf8_lossy(&python.stdout);
    assert!(
        python.status.success(),
        "check_power.py failed (install tests/python/requirements.txt):\n{stdout}\n{}",
        String::from_utf8_lossy(&python.stderr)
    );
    // 9 configs × 2 critics × 6 pairs of the demo's four arms; 2 configs × 2 critics × the 4 pairs compared there
    // (feedback and no-feedback, each with its adjudicated twin, the twins). A script that
    // checked nothing must not pass.
    for (run, rows) in [("demo", 108), ("adjudicate", 2 * 2 * 4)] {
        for variant in ["", " with unequal epochs"] {
            let line = format!("{run}{variant}: {rows} rows of power.csv agree with numpy");
            assert!(stdout.lines().any(|l| l == line), "missing `{line}`:\n{stdout}");
        }
    }

    let markdown = std::fs::read_to_string(demo.join("report.md")).unwrap();
    let section = &markdown[markdown.find("## How many tasks a question needs").expect("report.md has the section")..];
    let headline = section
        .lines()
        .find(|l| l.starts_with("| p7-r1-stall-e0 | rubric | feedback vs no-feedback | 60 × 3 |"))
        .unwrap_or_else(|| panic!("no headline row:\n{section}"));
    assert!(headline.ends_with("| more epochs |") || headline.ends_with("| more tasks |"), "{headline}");
    let html = std::fs::read_to_string(demo.join("report.html")).unwrap();
    assert!(
        html.contains("<h2 id=\"power\">How many tasks a question needs</h2>") && html.contains("<a href=\"#power\">")
    );
    let table = &html[html.find("<table id=\"table-power\">").expect("report.html has the table")..];
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(table.matches("<tr><td>").count(), 108, "one row per comparison:\n{table}");
}
