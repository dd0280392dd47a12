//! The adjudicator as a measured stage: `experiments/adjudicate.toml` run by the real
//! binary, its adjudicate rows, its outcome columns and the paired comparison recomputed from
//! `outcomes.parquet`; the replayed grid against the direct one; `critbench replay` refusing.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::common::*;
use critbench_storage::tables::OutcomeRow;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

/// One trajectory row, as far as this test needs it.
#[derive(Debug)]
struct Row {
    key: (String, String, String, String, u32),
    round: u32,
    decision: String,
    score: f64,
    passed: bool,
}

fn trajectories(run: &Path) -> Vec<Row> {
    let file = std::fs::File::open(run.join("trajectories.parquet")).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    let mut rows = Vec::new();
    for row in reader.get_row_iter(None).unwrap() {
        let row = row.unwrap();
        let mut fields: HashMap<String, Field> = HashMap::new();
        for (name, field) in row.get_column_iter() {
            fields.insert(name.clone(), field.clone());
        }
        let text = |name: &str| match &fields[name] {
            Field::Str(s) => s.clone(),
            other => panic!("{name}: {other:?}"),
        };
        let int = |name: &str| match &fields[name] {
            Field::Int(v) => *v as u32,
            other => panic!("{name}: {other:?}"),
        };
        rows.push(Row {
            key: (text("config_id"), text("critic"), text("arm"), text("task_id"), int("epoch")),
            round: int("round"),
            decision: text("decision"),
            score: match &fields["score"] {
                Field::Double(v) => *v,
                other => panic!("score: {other:?}"),
            },
            passed: matches!(fields["passed"], Field::Bool(true)),
        });
    }
    rows
}

fn key(row: &OutcomeRow) -> (String, String, String, String, u32) {
    (row.config_id.clone(), row.critic.clone(), row.arm.to_string(), row.task_id.clone(), row.epoch)
}

fn run(out: &Path, extra: &[&str]) {
    let mut args = vec!["run", "experiments/adjudicate.toml", "--limit", "40", "--out", out.to_str().unwrap(), "-q"];
    args.extend_from_slice(extra);
    ok(critbench(&args));
}

#[test]
fn adjudication_is_recorded_paired_and_replayed_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let replayed = dir.path().join("replayed");
    run(&replayed, &[]);
    let rows = outcomes(&replayed);
    assert_eq!(rows.len(), 80 * 2 * 2 * 2, "tasks (40 per dataset) × arms × epochs × configs");

    // Every loop is adjudicated: the columns are filled, and the trajectory has one adjudicate
    // row per loop, one past its stop, with the adjudicated score and pass.
    let mut adjudicate_rows: BTreeMap<_, &Row> = BTreeMap::new();
    let table = trajectories(&replayed);
    for row in table.iter().filter(|r| r.decision == "adjudicate") {
        assert!(adjudicate_rows.insert(row.key.clone(), row).is_none(), "two adjudicate rows for {:?}", row.key);
    }
    assert_eq!(adjudicate_rows.len(), rows.len());
    let critiques = table.iter().filter(|r| r.decision != "adjudicate").count() as u32;
    assert_eq!(critiques, rows.iter().map(|r| r.rounds).sum::<u32>());
    let (mut flips_down, mut flips_up) = (0, 0);
    for outcome in &rows {
        let score = outcome.adjudicated_score.expect("adjudicated_score");
        let passed = outcome.adjudicated_passed.expect("adjudicated_passed");
        let row = adjudicate_rows[&key(outcome)];
        assert_eq!((row.round, row.score, row.passed), (outcome.rounds, score, passed), "{outcome:?}");
        assert!(!passed || score >= outcome.pass_score, "a pass needs the threshold: {outcome:?}");
        flips_down += u32::from(outcome.passed && !passed);
        flips_up += u32::from(!outcome.passed && passed);
    }
    // The sim adjudicator both helps and harms: both flips are measured, not assumed.
    assert!(flips_down > 0 && flips_up > 0, "pass→fail {flips_down}, fail→pass {flips_up}");

    // The comparison row of each arm with its adjudicated twin, recomputed from the outcomes.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(replayed.join("summary.json")).unwrap()).unwrap();
    let comparisons = summary["comparisons"].as_array().unwrap();
    let mut checked = 0;
    // The rows report.html's adjudication table must hold: arm, pairs, then the flips.
    let mut html_rows = Vec::new();
    for config in ["p7-r3-stall-e0", "p8-r3-stall-e0"] {
        for critic in ["rubric", "evidence"] {
            for arm in ["feedback", "no-feedback"] {
                let loops: Vec<&OutcomeRow> = rows
                    .iter()
                    .filter(|r| r.config_id == config && r.critic == critic && r.arm.as_str() == arm)
                    .collect();
                let n = loops.len() as f64;
                let before = loops.iter().filter(|r| r.passed).count() as f64;
                let after = loops.iter().filter(|r| r.adjudicated_passed == Some(true)).count() as f64;
                let lost = loops.iter().filter(|r| r.passed && r.adjudicated_passed == Some(false)).count();
                let won = loops.iter().filter(|r| !r.passed && r.adjudicated_passed == Some(true)).count();
                let twin = format!("{arm}+adjudicate");
                let row = comparisons
                    .iter()
                    .find(|c| {
                        c["config_id"] == config
                            && c["critic"] == critic
                            && c["arm_a"] == arm
                            && c["arm_b"] == twin.as_str()
                    })
                    .unwrap_or_else(|| panic!("no comparison {config} {critic} {arm} vs {twin}"));
                assert_eq!(row["n_pairs"], loops.len() as u64);
                html_rows.push((
                    format!("<td>{config}</td><td>{critic}</td><td>{arm}</td><td class=\"num\">{}</td>", loops.len()),
                    format!("<td class=\"num\">{lost}</td><td class=\"num\">{won}</td>"),
                ));
                assert_eq!(row["a_only"], lost as u64, "{row}");
                assert_eq!(row["b_only"], won as u64, "{row}");
                assert!((row["pass_rate_a"].as_f64().unwrap() - before / n).abs() < 1e-12, "{row}");
                assert!((row["pass_rate_b"].as_f64().unwrap() - after / n).abs() < 1e-12, "{row}");
                let twin_summary = summary["summary"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|s| s["config_id"] == config && s["critic"] == critic && s["arm"] == twin.as_str())
                    .unwrap();
                assert_eq!(twin_summary["passed"], after as u64);
                let mean_after = loops.iter().map(|r| r.adjudicated_score.unwrap()).sum::<f64>() / n;
                assert!((twin_summary["mean_final_score"].as_f64().unwrap() - mean_after).abs() < 1e-9);
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 8);
    // The adjudicate rows keep the tables readable in pandas, polars and duckdb, and the loop
    // rules of every other row intact.
    let python = crate::common::python()
        .arg(repo().join("tests/python/check_outputs.py"))
        .arg(&replayed)
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
    assert!(python.status.success(), "check_outputs.py failed:\n{}\n{}", stdout(&python), stderr(&python));
    let report = std::fs::read_to_string(replayed.join("report.md")).unwrap();
    assert!(report.contains("## Adjudication") && report.contains("pass → fail"), "{report}");
    let page = std::fs::read_to_string(replayed.join("report.html")).unwrap();
    let table = &page[page.find("id=\"table-adjudication\"").expect("report.html has the adjudication table")..];
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(table.matches("<tr").count(), 1 + html_rows.len(), "{table}");
    for (start, flips) in &html_rows {
        let row = &table[table.find(start.as_str()).unwrap_or_else(|| panic!("no row {start} in {table}"))..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(row.contains(flips.as_str()), "{row} should hold the flips {flips}");
    }

    // The replayed grid adjudicates each config's final draft exactly as a direct sweep does.
    let direct = dir.path().join("direct");
    run(&direct, &["--sweep", "direct"]);
    let strip = |rows: Vec<OutcomeRow>| -> Vec<OutcomeRow> {
        let mut rows: Vec<OutcomeRow> =
            rows.into_iter().map(|r| OutcomeRow { run_id: String::new(), wall_ms: 0.0, ..r }).collect();
        rows.sort_by_key(key);
        rows
    };
    assert_eq!(strip(outcomes(&direct)), strip(rows));

    // `critbench replay` calls no model, so it cannot adjudicate a new policy's final draft.
    let refused = critbench(&["replay", replayed.to_str().unwrap(), "--pass-score", "9"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("end with the adjudicator's pass"), "{}", stderr(&refused));
}

#[test]
fn adjudicate_is_refused_where_no_adjudicator_exists() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("backend = \"scripted\"\nadjudicate = true\n", "the scripted backend has no adjudicator"),
        ("adjudicate = [\"single\"]\n", "\"single\" is not one of the experiment's `arms`"),
        ("adjudicate = 1\n", "give true (every arm), false, or a list of arms"),
    ];
    for (lines, message) in cases {
        let path = dir.path().join("e.toml");
        std::fs::write(
            &path,
            format!(
                "name = \"e\"\ndataset = \"{}\"\narms = [\"feedback\"]\n{lines}[[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\n",
                repo().join("datasets/papers.jsonl").display()
            ),
        )
        .unwrap();
        let output = critbench(&["run", path.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(message), "{}", stderr(&output));
    }
}
