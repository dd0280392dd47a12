//! `config_comparisons.csv` and `critbench compare RUN --configs A,B`: configs of one grid compared
//! on the same task × epoch units.

use std::collections::{BTreeMap, HashMap};

use crate::common::{critbench, ok, outcomes, usage_error};

/// (config, arm, critic, task, epoch).
type LoopKey = (String, String, String, String, u32);

fn csv_rows(text: &str) -> Vec<HashMap<String, String>> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|r| headers.iter().zip(r.unwrap().iter()).map(|(h, v)| (h.to_string(), v.to_string())).collect())
        .collect()
}

/// On a small 3 × 3 grid (the demo, 10 tasks a dataset), every pair of grid neighbours is compared
/// per arm and critic, and each row's counts are those of the loops themselves.
#[test]
fn grid_neighbours_are_compared_unit_by_unit() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("demo");
    let run_arg = run.to_str().unwrap();
    ok(critbench(&["run", "--limit", "10", "--out", run_arg, "--quiet"]));
    let every = csv_rows(&std::fs::read_to_string(run.join("config_comparisons.csv")).unwrap());
    // The steering critic's rows here, recomputed from the outcomes; a held-out judge's rows are the
    // same computation over its verdicts (judges.rs recomputes them from evaluations.parquet).
    let rows: Vec<_> = every.iter().filter(|r| r["judge"] == "critic").cloned().collect();
    // 3 × 3 grid: 6 steps along pass_score, 6 along max_revisions; 4 arms × 2 critics each.
    assert_eq!(rows.len(), 12 * 8);
    // sim-truth judges every loop: a full set of rows of its own; cites-relevant the RAG tasks.
    assert_eq!(every.iter().filter(|r| r["judge"] == "sim-truth").count(), 12 * 8);
    assert_eq!(every.iter().filter(|r| r["judge"] == "cites-relevant").count(), 12 * 4);
    let steps: Vec<(&str, &str, &str)> =
        rows.iter().map(|r| (r["axis"].as_str(), r["config_a"].as_str(), r["config_b"].as_str())).collect();
    assert!(steps.contains(&("max_revisions", "p8-r5-stall-e0", "p8-r3-stall-e0")), "{steps:?}");
    assert!(steps.contains(&("pass_score", "p9-r3-stall-e0", "p8-r3-stall-e0")), "{steps:?}");
    assert!(!steps.iter().any(|s| s.1 == "p9-r3-stall-e0" && s.2 == "p7-r3-stall-e0"), "not neighbours");

    // Each row against the outcomes: (config, arm, critic, task, epoch) → passed.
    let mut passed: HashMap<LoopKey, (bool, u32)> = HashMap::new();
    for row in outcomes(&run) {
        passed
            .insert((row.config_id, row.arm.to_string(), row.critic, row.task_id, row.epoch), (row.passed, row.rounds));
    }
    for row in &rows {
        let (mut n, mut a_passed, mut b_passed, mut a_only, mut b_only, mut rounds) = (0u64, 0u64, 0u64, 0, 0, 0i64);
        let mut per_task: BTreeMap<String, i64> = BTreeMap::new();
        for ((config, arm, critic, task, epoch), (a, rounds_a)) in &passed {
            if (config, arm, critic) != (&row["config_a"], &row["arm"], &row["critic"]) {
                continue;
            }
            let key = (row["config_b"].clone(), arm.clone(), critic.clone(), task.clone(), *epoch);
            let Some(&(b, rounds_b)) = passed.get(&key) else { continue };
            n += 1;
            a_passed += u64::from(*a);
            b_passed += u64::from(b);
            a_only += u64::from(*a && !b);
            b_only += u64::from(!a && b);
            rounds += i64::from(*rounds_a) - i64::from(rounds_b);
            *per_task.entry(task.clone()).or_default() += i64::from(*a) - i64::from(b);
        }
        let number = |name: &str| row[name].parse::<f64>().unwrap();
        assert_eq!(row["n_pairs"], n.to_string(), "{row:?}");
        assert_eq!(n, 30, "10 tasks × 3 epochs: {row:?}");
        assert_eq!((row["a_only"].clone(), row["b_only"].clone()), (a_only.to_string(), b_only.to_string()));
        assert!((number("diff") - (a_passed as f64 - b_passed as f64) / n as f64).abs() < 1e-12, "{row:?}");
        assert!((number("diff_mean_rounds") - rounds as f64 / n as f64).abs() < 1e-12, "{row:?}");
        let better = per_task.values().filter(|d| **d > 0).count();
        assert_eq!(row["tasks_a_better"], better.to_string(), "{row:?}");
        if row["interval"] == "identical by design" {
            // `single` never revises: more revisions allowed leave its loops as they were.
            assert_eq!((row["arm"].as_str(), row["axis"].as_str()), ("single", "max_revisions"), "{row:?}");
            assert_eq!((a_only, b_only, row["diff_lo"].as_str(), row["p_value"].as_str()), (0, 0, "", ""));
            assert_eq!(row["test"], "identical by design");
            continue;
        }
        assert!(number("diff_lo") <= number("diff") && number("diff") <= number("diff_hi"), "{row:?}");
        // 10 tasks: the small-sample interval, with its dual test.
        assert_eq!(
            (row["test"].as_str(), row["interval"].as_str()),
            ("exact sign-flip test of tasks", "exact sign-flip test inverted"),
            "{row:?}"
        );
        assert_eq!(number("diff_lo") > 0.0 || number("diff_hi") < 0.0, number("p_value") < 0.05, "{row:?}");
    }
    // Raising the cap never loses a pass on the same recording (replay), and feedback gains.
    let cap = rows
        .iter()
        .find(|r| r["config_a"] == "p8-r5-stall-e0" && r["config_b"] == "p8-r3-stall-e0" && r["arm"] == "feedback")
        .unwrap();
    assert_eq!(cap["b_only"], "0", "{cap:?}");

    // `compare --configs` prints the same comparison for any two configs.
    let printed = ok(critbench(&["compare", run_arg, "--configs", "p8-r5-stall-e0,p8-r3-stall-e0"]));
    let line = printed
        .lines()
        .find(|l| l.starts_with("| p8-r5-stall-e0 vs p8-r3-stall-e0 | - | feedback | rubric |"))
        .unwrap_or_else(|| panic!("{printed}"));
    let rubric = rows
        .iter()
        .find(|r| {
            r["config_a"] == "p8-r5-stall-e0"
                && r["config_b"] == "p8-r3-stall-e0"
                && r["arm"] == "feedback"
                && r["critic"] == "rubric"
        })
        .unwrap();
    let diff = format!("{:+.1} pp", 100.0 * rubric["diff"].parse::<f64>().unwrap());
    assert!(
        line.contains(&diff) && line.contains(&format!("| {} | {} |", rubric["a_only"], rubric["b_only"])),
        "{line}"
    );
    let far = ok(critbench(&["compare", run_arg, "--configs", "p9-r5-stall-e0,p7-r1-stall-e0"]));
    assert_eq!(far.lines().filter(|l| l.starts_with("| p9-r5-stall-e0 vs p7-r1-stall-e0 |")).count(), 8, "{far}");

    let unknown = usage_error(critbench(&["compare", run_arg, "--configs", "p8-r5-stall-e0,p6"]), dir.path());
    assert!(unknown.contains("the run has no config `p6`; its configs are p7-r1-stall-e0,"), "{unknown}");
}
