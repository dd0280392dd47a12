//! `critbench compare`: two runs on the tasks they share.

use crate::common::*;

fn summary(run: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn compares_two_critics_on_the_same_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let essays = repo().join("datasets/essays.jsonl");
    let write = |name: &str, critic: &str| {
        let file = experiment(
            dir.path(),
            &format!("{name}.toml"),
            &format!(
                "name = \"{name}\"\ndataset = \"{}\"\nbackend = \"scripted\"\narms = [\"feedback\", \"single\"]\n\
                 [[critics]]\nname = \"{critic}\"\nplugin = \"{critic}\"\n[policy]\npass_score = 5\n",
                essays.display()
            ),
        );
        let run = dir.path().join(name);
        ok(critbench(&["run", file.to_str().unwrap(), "--out", run.to_str().unwrap(), "-q"]));
        run
    };
    let (a, b) = (write("scripted-run", "scripted"), write("length-run", "faulty"));
    let out = dir.path().join("cmp");
    let printed = ok(critbench(&["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--out", out.to_str().unwrap()]));
    assert!(printed.contains("# critbench comparison: scripted-run vs length-run"), "{printed}");
    assert!(printed.contains("0 loop(s) of scripted-run and 0 of length-run had no partner"), "{printed}");
    let csv = std::fs::read_to_string(out.join("compare.csv")).unwrap();
    let mut lines = csv.lines();
    assert!(
        lines.next().unwrap().starts_with("config_id,critic,judge,arm_a,arm_b,n_pairs,pass_rate_a,pass_rate_b,diff")
    );
    let rows: Vec<Vec<String>> = lines.map(|l| l.split(',').map(String::from).collect()).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    // Every task is paired, so each side's pass rate is that run's own pass rate.
    let (sa, sb) = (summary(&a), summary(&b));
    for row in &rows {
        assert_eq!((row[1].as_str(), row[2].as_str()), ("scripted vs faulty", "critic"));
        assert_eq!(row[5], "36");
        let arm = row[3].split(':').nth(1).unwrap();
        let rate = |s: &serde_json::Value| {
            s["summary"].as_array().unwrap().iter().find(|r| r["arm"] == arm).unwrap()["pass_rate"].as_f64().unwrap()
        };
        assert!((row[6].parse::<f64>().unwrap() - rate(&sa)).abs() < 1e-12, "{row:?}");
        assert!((row[7].parse::<f64>().unwrap() - rate(&sb)).abs() < 1e-12, "{row:?}");
    }

    // A run against itself: no discordant pairs, no difference.
    let printed = ok(critbench(&["compare", a.to_str().unwrap(), a.to_str().unwrap()]));
    // 36 tasks, none differing: an interval about 0, not the point 0.
    assert!(printed.contains("| +0.0 pp (-13.7 to +13.7) | 0 | 0 | 1.0000 (exact McNemar) |"), "{printed}");

    let missing = usage_error(critbench(&["compare", a.to_str().unwrap(), dir.path().to_str().unwrap()]), dir.path());
    assert!(missing.contains("outcomes.parquet is missing"), "{missing}");
}
