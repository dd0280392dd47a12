//! Judges as a dimension of every table: each rate and comparison file has a full set of rows per
//! judge, a held-out judge's rows (and its pleasing gaps) recompute from `evaluations.parquet` and
//! `outcomes.parquet`, and the terminal and
//! `report.md` open with the answer by the most independent judge, on one screen.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::{critbench, csv_rows, experiment, ok, python, repo};

/// The comparison files, each with a `judge` column.
const JUDGED_FILES: [&str; 6] = [
    "summary.csv",
    "comparisons.csv",
    "cost_curves.csv",
    "cost_comparisons.csv",
    "power.csv",
    "config_comparisons.csv",
];

/// A two-config grid over the demo's datasets: the steering critics, `sim-truth` (judging every
/// loop) and `cites-relevant` (the RAG tasks only).
fn two_config_run(dir: &std::path::Path) -> std::path::PathBuf {
    let datasets = repo().join("datasets");
    let file = experiment(
        dir,
        "judges.toml",
        &format!(
            "name = \"judges\"\ndataset = [\"{}\", \"{}\"]\nbackend = \"sim\"\nseed = 7\nepochs = 2\n\
             arms = [\"feedback\", \"no-feedback\", \"resample\", \"single\"]\n\
             [[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\nkinds = [\"paper\"]\n\
             [[critics]]\nname = \"evidence\"\nplugin = \"evidence\"\nkinds = [\"rag\"]\n\
             [policy]\npass_score = 8\nmax_revisions = [1, 3]\n\
             [[evaluators]]\nname = \"cites-relevant\"\nplugin = \"evidence\"\nconfig = {{ gold_labels = true }}\n\
             kinds = [\"rag\"]\npass_score = 5\n",
            datasets.join("papers.jsonl").display(),
            datasets.join("rag.jsonl").display()
        ),
    );
    let out = dir.join("judges");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]));
    out
}

#[test]
fn every_file_has_each_judges_rows_and_a_held_out_judges_rows_recompute_from_its_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let run = two_config_run(dir.path());
    for file in JUDGED_FILES {
        let rows = csv_rows(&run.join(file));
        let mut per_judge: BTreeMap<String, usize> = BTreeMap::new();
        for row in &rows {
            *per_judge.entry(row["judge"].clone()).or_default() += 1;
        }
        let judges: BTreeSet<&str> = per_judge.keys().map(String::as_str).collect();
        assert_eq!(judges, BTreeSet::from(["critic", "cites-relevant", "sim-truth"]), "{file}: {per_judge:?}");
        // The steering critic's rows come first, then each held-out judge's.
        assert_eq!(rows[0]["judge"], "critic", "{file}");
        // sim-truth judged every loop and every round, so it has as many rows as the critic, less
        // only the adjudicated twins the critic alone has (none here). cites-relevant judged first
        // drafts and final answers: its cost rows are the arms whose capped answers are among them,
        // which check_judges.py recomputes.
        assert_eq!(per_judge["sim-truth"], per_judge["critic"], "{file}: {per_judge:?}");
        // cites-relevant judged the RAG tasks only: the evidence critic's loops.
        let cites = rows.iter().filter(|r| r["judge"] == "cites-relevant");
        assert!(cites.clone().all(|r| r["critic"] == "evidence"), "{file}");
        assert!(cites.count() > 0, "{file}");
    }
    for judge in ["sim-truth", "cites-relevant"] {
        let output = python()
            .arg(repo().join("tests/python/check_judges.py"))
            .arg(&run)
            .arg(judge)
            .output()
            .expect("python runs");
        let printed = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{judge}:\n{printed}{}", String::from_utf8_lossy(&output.stderr));
        assert!(printed.contains("rows of comparisons.csv") && printed.contains("rows of evaluators.csv"), "{printed}");
    }
}

/// The demo's terminal fits one screen, leads with the hidden truth, and `report.md` opens with the
/// same answer.
#[test]
fn the_demo_answers_first_by_the_truth_on_one_screen() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let printed = ok(critbench(&[
        "run",
        repo().join("experiments/demo.toml").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]));
    let lines: Vec<&str> = printed.lines().collect();
    assert!(lines.len() <= 40, "{} lines:\n{printed}", lines.len());
    for line in &lines {
        assert!(line.chars().count() <= 160, "a line of {} characters: {line}", line.chars().count());
    }
    assert!(lines[0].starts_with("The answer, by `sim-truth`"), "{printed}");
    // The first figure is the truth's: the rubric critic's best config by sim-truth.
    let first_figure = lines.iter().find(|l| l.contains('%')).unwrap();
    assert!(first_figure.contains("by sim-truth"), "{first_figure}");
    let truth = csv_rows(&out.join("summary.csv"));
    let best = truth
        .iter()
        .filter(|r| r["judge"] == "sim-truth" && r["critic"] == "rubric")
        .max_by(|a, b| a["pass_rate"].parse::<f64>().unwrap().total_cmp(&b["pass_rate"].parse::<f64>().unwrap()))
        .unwrap();
    let rate = format!("{:.1}%", 100.0 * best["pass_rate"].parse::<f64>().unwrap());
    assert!(
        first_figure.contains(&format!("ship {} with {} ({rate}", best["config_id"], best["arm"])),
        "{first_figure}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let answer = report.find("## The answer").expect("report.md has the answer");
    let first_section = report.find("\n## ").unwrap() + 1;
    assert_eq!(answer, first_section, "the answer is report.md's first section");
    assert!(report[answer..].contains("The answer, by `sim-truth`"), "{}", &report[answer..answer + 400]);
    // report.html opens with the same answer, before any table of the steering critic's.
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    let section = page.find("<section id=\"answer\">").expect("report.html has the answer");
    assert!(section < page.find("id=\"table-summary\"").unwrap(), "the answer comes first");
    let answer = &page[section..page[section..].find("</section>").unwrap() + section];
    assert!(answer.contains("The answer, by <code>sim-truth</code>"), "{answer}");
    assert!(answer.contains(&format!("ship {} with {}", best["config_id"], best["arm"])), "{answer}");
    // The line saying how many configs were left out spans the table rather than widening a column.
    assert!(answer.contains("<td colspan=\"7\">rubric: 4 more configs"), "{answer}");
}
