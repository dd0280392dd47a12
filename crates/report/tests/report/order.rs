//! Summaries depend only on the outcomes, never on the order of their rows: the same rows written
//! forwards, backwards and shuffled give byte-identical summary files, with and without a manifest
//! to say when a task is complete.

use std::path::Path;

use critbench_core::{ExitReason, Rng};
use critbench_storage::tables::{OutcomeRow, OutcomeWriter};

const ARMS: [&str; 3] = ["feedback", "no-feedback", "single"];
const EPOCHS: u32 = 3;

fn outcome(config: &str, critic: &str, arm: &str, task: usize, epoch: u32, rng: &mut Rng) -> OutcomeRow {
    // Each task has its own difficulty, so its epochs agree more than independent loops would.
    let difficulty = (task * 37 % 100) as f64 / 100.0;
    let boost = match arm {
        "feedback" => 0.35,
        "no-feedback" => 0.15,
        _ => 0.0,
    };
    let passed = rng.unit() < (1.0 - difficulty + boost).clamp(0.0, 1.0) * 0.8;
    let rounds = 1 + (rng.next_u64() % 4) as u32;
    let rounds = if arm == "single" { 1 } else { rounds };
    let first = (rng.next_u64() % 90) as f64 / 10.0 + 0.1;
    OutcomeRow {
        run_id: "order-test".into(),
        config_id: config.into(),
        critic: critic.into(),
        epoch,
        exit_reason: if passed {
            ExitReason::Pass
        } else {
            [ExitReason::Stall, ExitReason::Plateau, ExitReason::Budget][task % 3]
        },
        first_score: first,
        last_score: first + 0.3,
        final_score: first + 0.7,
        best_score: first + 1.0 / 3.0,
        critic_errors: u32::from(rng.next_u64().is_multiple_of(7)),
        // Every other task counted tokens (a backend that counts only some calls).
        tokens_in: task.is_multiple_of(2).then_some(100 * u64::from(rounds)),
        tokens_out: task.is_multiple_of(2).then_some(7 * u64::from(rounds) + u64::from(passed)),
        // Three kinds and tasks without one: the headline per kind folds them apart.
        kind: ["paper", "rag", "essay", ""].get(task % 4).filter(|k| !k.is_empty()).map(|k| k.to_string()),
        ..OutcomeRow::bare(&format!("task-{task:05}"), arm, passed, rounds)
    }
}

/// Rows in the order a streaming engine writes them: task by task, every arm and epoch together.
fn rows(tasks: usize) -> Vec<OutcomeRow> {
    let mut rng = Rng::new(11);
    let mut rows = Vec::new();
    for task in 0..tasks {
        for config in ["p7-r3", "p8-r3"] {
            for critic in ["rubric", "evidence"] {
                for epoch in 0..EPOCHS {
                    for arm in ARMS {
                        rows.push(outcome(config, critic, arm, task, epoch, &mut rng));
                    }
                }
            }
        }
    }
    rows
}

const MANIFEST: &str = r#"{"manifest_version": 1, "schema_version": 10, "run_id": "order-test", "experiment": {"name": "order", "epochs": 3,
  "arms": ["feedback", "no-feedback", "single"],
  "policies": [{"config_id": "p7-r3", "pass_score": 7, "max_revisions": 3},
    {"config_id": "p8-r3", "pass_score": 8, "max_revisions": 3}],
  "critics": [{"name": "rubric"}, {"name": "evidence"}]}}"#;

fn write_run(dir: &Path, rows: &[OutcomeRow], manifest: bool) {
    std::fs::create_dir_all(dir).unwrap();
    let mut writer = OutcomeWriter::create(&dir.join("outcomes.parquet")).unwrap();
    for row in rows {
        writer.push(row.clone()).unwrap();
    }
    writer.close().unwrap();
    if manifest {
        std::fs::write(dir.join("manifest.json"), MANIFEST).unwrap();
    }
}

fn files(dir: &Path) -> Vec<Vec<u8>> {
    [
        "summary.csv",
        "summary.json",
        "comparisons.csv",
        "config_comparisons.csv",
        "power.csv",
        "report.md",
        "report.html",
    ]
    .iter()
    .map(|name| std::fs::read(dir.join(name)).unwrap())
    .collect()
}

#[test]
fn the_same_rows_in_any_order_give_the_same_bytes() {
    let forward = rows(3000); // 108,000 rows: several Parquet batches
    let mut reversed = forward.clone();
    reversed.reverse();
    let mut shuffled = forward.clone();
    let mut rng = Rng::new(5);
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let dir = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for (name, rows) in [("forward", &forward), ("reversed", &reversed), ("shuffled", &shuffled)] {
        let run = dir.path().join(name);
        write_run(&run, rows, true);
        critbench_report::write_reports(&run).unwrap();
        outputs.push((name, files(&run)));
    }
    for (name, output) in &outputs[1..] {
        assert!(output == &outputs[0].1, "{name} rows give other summary bytes than forward rows");
    }
    // The two configs are neighbours on pass_score: one row per arm × critic, on every unit.
    let configs = std::fs::read_to_string(dir.path().join("shuffled/config_comparisons.csv")).unwrap();
    assert_eq!(configs.lines().count(), 1 + 3 * 2, "{configs}");
    assert!(configs.lines().skip(1).all(|l| l.starts_with("pass_score,") && l.contains(",p8-r3,p7-r3,9000,3000,")));
    // Several epochs per task: intervals and tests are the clustered ones.
    let report = critbench_report::write_reports(&dir.path().join("shuffled")).unwrap();
    assert!(report.summary.rows.iter().all(|r| r.interval == "task-cluster bootstrap" && r.n_tasks == 3000));
    let kinds: Vec<Option<&str>> = report.summary.by_kind.iter().map(|k| k.kind.as_deref()).collect();
    assert_eq!(kinds, [Some("essay"), Some("paper"), Some("rag"), None]);
    assert!(report.summary.by_kind.iter().all(|k| k.summary.iter().all(|r| r.n_tasks == 750)));
    let markdown = std::fs::read_to_string(dir.path().join("shuffled/report.md")).unwrap();
    assert!(markdown.contains("### kind `paper` (750 tasks)") && markdown.contains("### tasks without a kind"));
    let page = std::fs::read_to_string(dir.path().join("shuffled/report.html")).unwrap();
    assert!(page.contains("<table id=\"table-kinds\">") && page.contains("<table id=\"table-discordant-pairs\">"));
    assert!(report.summary.comparisons.iter().all(|c| c.test == "task-cluster bootstrap" && c.n_tasks == 3000));
    assert!(report.summary.rows.iter().any(|r| r.critic_errors > 0 && r.critic_error_rate > 0.0));
    // Streamed from Parquet (tokens included) the same as folded from the rows in memory.
    let in_memory = critbench_report::build_report(&forward, None).unwrap();
    let sorted_debug = |rows: Vec<String>| {
        let mut rows = rows;
        rows.sort();
        rows
    };
    assert_eq!(
        sorted_debug(in_memory.summary.rows.iter().map(|s| format!("{s:?}")).collect()),
        sorted_debug(report.summary.rows.iter().map(|s| format!("{s:?}")).collect())
    );
    for row in &report.summary.rows {
        let mine: Vec<&OutcomeRow> = forward
            .iter()
            .filter(|o| o.config_id == row.config_id && o.arm.as_str() == row.arm && o.critic == row.critic)
            .collect();
        let counted: Vec<&&OutcomeRow> = mine.iter().filter(|o| o.tokens_in.is_some()).collect();
        let passed: Vec<&&&OutcomeRow> = counted.iter().filter(|o| o.passed).collect();
        let mean = |values: &mut dyn Iterator<Item = u64>, of: usize| values.sum::<u64>() as f64 / of as f64;
        assert_eq!(
            row.tokens_in_per_loop,
            Some(mean(&mut counted.iter().map(|o| o.tokens_in.unwrap()), counted.len()))
        );
        assert_eq!(
            row.tokens_out_per_pass,
            Some(mean(&mut passed.iter().map(|o| o.tokens_out.unwrap()), passed.len()))
        );
        let passes: Vec<&&OutcomeRow> = mine.iter().filter(|o| o.passed).collect();
        assert_eq!(row.mean_rounds_passed, mean(&mut passes.iter().map(|o| u64::from(o.rounds)), passes.len()));
    }

    // Without a manifest every task stays open to the end: the same numbers, ordered by name.
    let bare = dir.path().join("bare");
    write_run(&bare, &shuffled, false);
    let without = critbench_report::write_reports(&bare).unwrap();
    let sorted = |mut rows: Vec<String>| {
        rows.sort();
        rows
    };
    let summary = |r: &critbench_report::Report| sorted(r.summary.rows.iter().map(|s| format!("{s:?}")).collect());
    let comparisons =
        |r: &critbench_report::Report| sorted(r.summary.comparisons.iter().map(|c| format!("{c:?}")).collect());
    assert_eq!(summary(&without), summary(&report));
    assert_eq!(comparisons(&without), comparisons(&report));
}

#[test]
fn a_loop_written_twice_is_corrupt_or_noted() {
    // Within its task's rows: caught when the task closes.
    let mut rows = rows(4);
    rows.insert(6, rows[5].clone());
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &rows, true);
    let error = critbench_report::write_reports(dir.path()).unwrap_err().to_string();
    assert!(error.contains("outcomes.parquet") && error.contains("appears more than once"), "{error}");
    assert!(error.contains(&rows[5].task_id) && error.contains("epoch 1"), "{error}");

    // After its task closed: the task is not kept, so the stray loop is a task short of loops,
    // and the notes say more tasks are short than failed loops explain.
    rows.remove(6);
    rows.push(rows[5].clone());
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &rows, true);
    let report = critbench_report::write_reports(dir.path()).unwrap();
    assert!(
        report.summary.notes.iter().any(|n| n.starts_with("1 task(s) of a config × critic had fewer than the 9 loops")
            && n.contains("More than the failed loops explain")),
        "{:?}",
        report.summary.notes
    );
}
