//! Pass rates corrected by gold labels, with the real binary: `critbench sample` → a labeller (this
//! test, by a rule it knows: an answer is right when it cites one of its task's relevant evidence
//! ids) → `critbench report --labels`; labels files that are not the sample refused (answers and
//! verdicts that are not the run's among them); and
//! tests/python/check_ppi.py comparing the corrected intervals with ppi-python's `ppi_mean_ci`.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::common::*;
use serde_json::Value;

/// A RAG run of `tasks` tasks, the three arms, under the evidence critic.
fn rag_run(dir: &Path, name: &str, tasks: usize, extra: &str) -> PathBuf {
    let dataset = repo().join("datasets/rag.jsonl");
    let file = experiment(
        dir,
        &format!("{name}.toml"),
        &format!(
            "name = \"{name}\"\ndataset = \"{}\"\narms = [\"feedback\", \"no-feedback\", \"single\"]\nseed = 3\n{extra}\n\
             [[critics]]\nname = \"evidence\"\nplugin = \"evidence\"\n",
            dataset.display()
        ),
    );
    let run = dir.join(name);
    ok(critbench(&[
        "run",
        file.to_str().unwrap(),
        "--limit",
        &tasks.to_string(),
        "--out",
        run.to_str().unwrap(),
        "-q",
    ]));
    run
}

fn sample(run: &Path, tasks: usize, seed: u64, out: &Path) -> std::process::Output {
    critbench(&[
        "sample",
        run.to_str().unwrap(),
        "--tasks",
        &tasks.to_string(),
        "--seed",
        &seed.to_string(),
        "--out",
        out.to_str().unwrap(),
    ])
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn write_lines(path: &Path, lines: &[Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// Each task's relevant evidence ids, from the dataset's gold `labels`.
fn relevant() -> HashMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(repo().join("datasets/rag.jsonl")).unwrap();
    text.lines()
        .map(|line| {
            let task: Value = serde_json::from_str(line).unwrap();
            let ids = task["labels"]["relevant"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string());
            (task["id"].as_str().unwrap().to_string(), ids.collect())
        })
        .collect()
}

/// The labeller: right when the answer cites a relevant id (`evidence_ids` of a JSON answer, or
/// `[dN]` markers in a plain one).
fn cites_relevant(answer: &str, relevant: &BTreeSet<String>) -> bool {
    let cited: Vec<String> = match serde_json::from_str::<Value>(answer) {
        Ok(Value::Object(map)) => map
            .get("evidence_ids")
            .and_then(Value::as_array)
            .map(|ids| ids.iter().filter_map(Value::as_str).map(String::from).collect())
            .unwrap_or_default(),
        _ => answer
            .split('[')
            .skip(1)
            .filter_map(|part| part.split(']').next())
            .filter(|id| id.starts_with('d'))
            .map(String::from)
            .collect(),
    };
    cited.iter().any(|id| relevant.contains(id))
}

/// Fills every answer's gold by the rule.
fn label(sample: &[Value]) -> Vec<Value> {
    let relevant = relevant();
    let mut labelled = sample.to_vec();
    for line in &mut labelled[1..] {
        let task = line["task_id"].as_str().unwrap().to_string();
        let gold = cites_relevant(line["answer"].as_str().unwrap(), &relevant[&task]);
        line["gold"] = Value::Bool(gold);
    }
    labelled
}

fn csv_rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|r| headers.iter().zip(r.unwrap().iter()).map(|(h, v)| (h.to_string(), v.to_string())).collect())
        .collect()
}

#[test]
fn sample_label_and_report_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let run = rag_run(dir.path(), "rag", 30, "store_drafts = true");
    let file = dir.path().join("labels.jsonl");
    let printed = ok(sample(&run, 10, 5, &file));
    let drawn = lines(&file);
    let header = &drawn[0];
    assert_eq!(
        (header["critbench_sample"].as_u64(), header["seed"].as_u64(), header["tasks"].as_u64()),
        (Some(1), Some(5), Some(10))
    );
    assert_eq!(header["run_id"], manifest(&run)["run_id"]);
    let answers = &drawn[1..];
    assert_eq!(header["answers"].as_u64(), Some(answers.len() as u64));
    assert!(
        printed.contains(&format!("{} answers to label (30 loops of 10 tasks, seed 5)", answers.len())),
        "{printed}"
    );
    // Every arm of every sampled task, each loop once, and no more lines than loops.
    let tasks: BTreeSet<&str> = answers.iter().map(|a| a["task_id"].as_str().unwrap()).collect();
    assert_eq!(tasks.len(), 10);
    let loops: Vec<(&str, &str)> = answers
        .iter()
        .flat_map(|a| {
            a["loops"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |l| (a["task_id"].as_str().unwrap(), l["arm"].as_str().unwrap()))
        })
        .collect();
    assert_eq!(loops.len(), 30);
    assert!(answers.len() < 30, "arms that returned the same answer share a line");
    assert!(answers.iter().all(|a| a["gold"].is_null()));

    // The same seed draws the same sample; another draws other tasks.
    ok(critbench(&[
        "sample",
        run.to_str().unwrap(),
        "--tasks",
        "10",
        "--seed",
        "5",
        "--out",
        dir.path().join("again.jsonl").to_str().unwrap(),
    ]));
    assert_eq!(std::fs::read(&file).unwrap(), std::fs::read(dir.path().join("again.jsonl")).unwrap());
    let other = dir.path().join("other.jsonl");
    ok(sample(&run, 10, 6, &other));
    let other_tasks: BTreeSet<String> =
        lines(&other)[1..].iter().map(|a| a["task_id"].as_str().unwrap().to_string()).collect();
    assert_ne!(other_tasks, tasks.iter().map(|t| t.to_string()).collect::<BTreeSet<String>>());

    let labelled = label(&drawn);
    write_lines(&file, &labelled);
    let printed = ok(critbench(&["report", run.to_str().unwrap(), "--labels", file.to_str().unwrap()]));
    assert!(printed.contains("corrected.csv and corrected_comparisons.csv"), "{printed}");

    // Per arm: the labelled loops and the gold rate are the labeller's, the critic's rate summary.csv's.
    let summary = csv_rows(&run.join("summary.csv"));
    let rows = csv_rows(&run.join("corrected.csv"));
    assert_eq!(rows.iter().map(|r| r["arm"].as_str()).collect::<Vec<_>>(), ["feedback", "no-feedback", "single"]);
    for row in &rows {
        let arm = row["arm"].as_str();
        let gold: Vec<bool> = labelled[1..]
            .iter()
            .flat_map(|a| {
                a["loops"].as_array().unwrap().iter().filter(|l| l["arm"] == arm).map(|_| a["gold"].as_bool().unwrap())
            })
            .collect();
        assert_eq!(
            (row["n"].as_str(), row["n_labelled"].as_str(), row["n_tasks_labelled"].as_str()),
            ("30", "10", "10")
        );
        let gold_rate = gold.iter().filter(|g| **g).count() as f64 / 10.0;
        assert_eq!(row["gold_pass_rate"].parse::<f64>().unwrap(), gold_rate, "{arm}");
        let critic = summary.iter().find(|s| s["arm"] == arm).unwrap();
        assert_eq!(row["pass_rate"], critic["pass_rate"]);
        let (estimate, lo, hi) = (
            row["pass_rate_corrected"].parse::<f64>().unwrap(),
            row["corrected_lo"].parse::<f64>().unwrap(),
            row["corrected_hi"].parse::<f64>().unwrap(),
        );
        assert!((0.0..=1.0).contains(&lo) && lo <= estimate && estimate <= hi && hi <= 1.0, "{row:?}");
        // 10 labelled tasks are too few for PPI's normal interval: the labels' own rate, no λ.
        assert_eq!((row["lambda"].as_str(), row["method"].as_str()), ("", "labels alone, clopper-pearson"), "{row:?}");
        assert_eq!(estimate, gold_rate, "{row:?}");
        let false_passes: usize = labelled[1..]
            .iter()
            .flat_map(|a| a["loops"].as_array().unwrap().iter().filter(|l| l["arm"] == arm).map(move |l| (a, l)))
            .filter(|(a, l)| !a["gold"].as_bool().unwrap() && l["passed"].as_bool().unwrap())
            .count();
        assert_eq!(row["false_pass"], false_passes.to_string(), "{arm}");
    }
    let comparisons = csv_rows(&run.join("corrected_comparisons.csv"));
    let pairs: Vec<(&str, &str)> = comparisons.iter().map(|c| (c["arm_a"].as_str(), c["arm_b"].as_str())).collect();
    assert_eq!(pairs, [("feedback", "no-feedback"), ("feedback", "single"), ("no-feedback", "single")]);
    let markdown = std::fs::read_to_string(run.join("report.md")).unwrap();
    let section = &markdown[markdown.find("## Corrected by gold labels").expect("the section is in report.md")..];
    assert!(section.contains("the sample `critbench sample` drew with seed 5"), "{section}");
    assert!(section.contains("| p8-r3-stall-e0 | evidence | feedback | 10 of 30 tasks |"), "{section}");
    assert!(section.contains("| p8-r3-stall-e0 | evidence | feedback − no-feedback | 10 of 30 tasks |"), "{section}");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    let table = |id: &str| {
        let start =
            html.split(&format!("<table id=\"{id}\">")).nth(1).unwrap_or_else(|| panic!("no {id} in report.html"));
        start.split("</table>").next().unwrap().to_string()
    };
    assert_eq!(table("table-corrected").matches("<tr><td>").count(), 3, "one row per arm");
    assert_eq!(table("table-corrected-comparisons").matches("<tr><td>").count(), 3, "one row per compared pair");
    assert!(html.contains("<a href=\"#corrected\">Corrected by gold labels</a>"));

    // A report without labels drops the section and leaves the corrected files as they were.
    let before = std::fs::read(run.join("corrected.csv")).unwrap();
    ok(critbench(&["report", run.to_str().unwrap()]));
    assert!(!std::fs::read_to_string(run.join("report.md")).unwrap().contains("## Corrected by gold labels"));
    assert_eq!(std::fs::read(run.join("corrected.csv")).unwrap(), before);
}

#[test]
fn labels_that_are_not_the_sample_are_refused_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let run = rag_run(dir.path(), "rag", 30, "store_drafts = true");
    let (five, six) = (dir.path().join("five.jsonl"), dir.path().join("six.jsonl"));
    ok(sample(&run, 10, 5, &five));
    ok(sample(&run, 10, 6, &six));
    let (five, six) = (label(&lines(&five)), label(&lines(&six)));
    let report_md = std::fs::read(run.join("report.md")).unwrap();
    let refused = |name: &str, labels: &[Value]| {
        let path = dir.path().join(name);
        write_lines(&path, labels);
        let message =
            usage_error(critbench(&["report", run.to_str().unwrap(), "--labels", path.to_str().unwrap()]), dir.path());
        assert!(message.contains(&format!("DIR/{name}")), "the message names the file: {message}");
        message
    };

    // A loop key the run does not have.
    let mut wrong_key = five.clone();
    wrong_key[3]["loops"][0]["config_id"] = Value::from("p9-r9-stall-e0");
    let message = refused("wrong-key.jsonl", &wrong_key);
    assert!(message.contains("line 4: the run has no loop config p9-r9-stall-e0 × arm "), "{message}");

    // A gold left empty, and one that is not a boolean.
    let mut missing = five.clone();
    missing[2]["gold"] = Value::Null;
    let task = missing[2]["task_id"].as_str().unwrap().to_string();
    let message = refused("missing.jsonl", &missing);
    assert!(
        message.contains(&format!(
            "line 3: `gold` is empty (answer {} of task `{task}`)",
            missing[2]["answer_id"].as_str().unwrap()
        )),
        "{message}"
    );
    let mut text = five.clone();
    text[1]["gold"] = Value::from("yes");
    assert!(refused("text.jsonl", &text).contains("line 2: `gold` is \"yes\"; expected true or false"));

    // Lines of the seed-6 sample under the seed-5 header: named at the first line of a task that
    // seed 5 did not draw.
    let tasks_five: BTreeSet<&str> = five[1..].iter().map(|a| a["task_id"].as_str().unwrap()).collect();
    let mut mixed = vec![five[0].clone()];
    mixed.extend(six[1..].iter().cloned());
    let foreign = mixed
        .iter()
        .position(|l| l.get("answer_id").is_some() && !tasks_five.contains(l["task_id"].as_str().unwrap()))
        .unwrap();
    let message = refused("mixed.jsonl", &mixed);
    assert!(
        message.contains(&format!(
            "line {}: task `{}` is not in this sample (seed 5, 10 tasks): the line comes from another sample",
            foreign + 1,
            mixed[foreign]["task_id"].as_str().unwrap()
        )),
        "{message}"
    );
    // The seed-5 file with its header edited to say seed 6.
    let mut edited = five.clone();
    edited[0]["seed"] = Value::from(6);
    let message = refused("edited.jsonl", &edited);
    assert!(
        message.contains("is not the sample `critbench sample DIR/rag --tasks 10 --seed 6` draws from this run"),
        "{message}"
    );

    // An answer left out.
    let message = refused("short.jsonl", &five[..five.len() - 1]);
    assert!(message.contains(&format!("1 of the sample's {} answers have no line", five.len() - 1)), "{message}");

    // An answer's text edited after sampling: refused although its id and loops are untouched.
    let mut edited_answer = five.clone();
    edited_answer[2]["answer"] = Value::from(format!("{} [d1]", edited_answer[2]["answer"].as_str().unwrap()));
    let message = refused("edited-answer.jsonl", &edited_answer);
    let first_loop = |line: &Value| {
        let l = &line["loops"][0];
        format!(
            "config {} × arm {} × critic {} × task {} × epoch {}",
            l["config_id"].as_str().unwrap(),
            l["arm"].as_str().unwrap(),
            l["critic"].as_str().unwrap(),
            line["task_id"].as_str().unwrap(),
            l["epoch"]
        )
    };
    assert!(
        message.contains(&format!("line 3: the answer is not the text the loop {}", first_loop(&five[2])))
            && message
                .contains(&format!("(answer {}): edited after sampling?", five[2]["answer_id"].as_str().unwrap())),
        "{message}"
    );

    // Two answers of one task swapped, each line keeping its id, loops and gold: refused at the
    // first, which holds the other's text.
    let (first, second) = (1..five.len())
        .find_map(|i| (i + 1..five.len()).find(|&j| five[j]["task_id"] == five[i]["task_id"]).map(|j| (i, j)))
        .expect("a sampled task with two answers");
    let mut swapped = five.clone();
    swapped[first]["answer"] = five[second]["answer"].clone();
    swapped[second]["answer"] = five[first]["answer"].clone();
    let message = refused("swapped.jsonl", &swapped);
    assert!(
        message.contains(&format!(
            "line {}: the answer is the text of answer {}, not of this line's {}, which the loop {}",
            first + 1,
            five[second]["answer_id"].as_str().unwrap(),
            five[first]["answer_id"].as_str().unwrap(),
            first_loop(&five[first])
        )) && message.contains("were two lines' answers swapped?"),
        "{message}"
    );

    // A loop's verdict edited: its `passed`, or its `score`.
    let verdict = &five[4]["loops"][0];
    let (passed, score) = (verdict["passed"].as_bool().unwrap(), verdict["score"].as_f64().unwrap());
    let mut repassed = five.clone();
    repassed[4]["loops"][0]["passed"] = Value::Bool(!passed);
    let message = refused("repassed.jsonl", &repassed);
    assert!(
        message.contains(&format!(
            "line 5: the loop {} says passed {}, score {score}; the run's verdict is passed {passed}, score {score}",
            first_loop(&five[4]),
            !passed
        )),
        "{message}"
    );
    let mut rescored = five.clone();
    rescored[4]["loops"][0]["score"] = Value::from(score + 0.5);
    let message = refused("rescored.jsonl", &rescored);
    assert!(
        message.contains(&format!(
            "line 5: the loop {} says passed {passed}, score {}; the run's verdict is passed {passed}, score {score}",
            first_loop(&five[4]),
            score + 0.5
        )),
        "{message}"
    );

    // A sample of another run.
    let other = rag_run(dir.path(), "other", 30, "store_drafts = true");
    let message = usage_error(
        critbench(&["report", other.to_str().unwrap(), "--labels", dir.path().join("missing.jsonl").to_str().unwrap()]),
        dir.path(),
    );
    let (this_id, other_id) = (
        manifest(&run)["run_id"].as_str().unwrap().to_string(),
        manifest(&other)["run_id"].as_str().unwrap().to_string(),
    );
    assert_ne!(this_id, other_id);
    assert!(
        message.contains(&format!("is a sample of run `{this_id}`, not of DIR/other (run `{other_id}`)")),
        "{message}"
    );

    // Nothing refused touched the run directory.
    assert_eq!(std::fs::read(run.join("report.md")).unwrap(), report_md);
    assert!(!run.join("corrected.csv").exists());
}

#[test]
fn a_sample_needs_stored_drafts_enough_tasks_and_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let bare = rag_run(dir.path(), "bare", 12, "");
    let out = dir.path().join("labels.jsonl");
    let message = usage_error(sample(&bare, 4, 1, &out), dir.path());
    assert!(
        message.contains("DIR/bare did not store its drafts")
            && message.contains("critbench run EXPERIMENT --store-drafts --out DIR/bare --overwrite"),
        "{message}"
    );
    assert!(!out.exists(), "nothing written");

    let run = rag_run(dir.path(), "stored", 12, "store_drafts = true");
    assert!(usage_error(sample(&run, 0, 1, &out), dir.path()).contains("--tasks must be at least 1"));
    let message = usage_error(sample(&run, 13, 1, &out), dir.path());
    assert!(message.contains("DIR/stored has 12 tasks; --tasks 13 asks for more"), "{message}");
    // Every task is a sample too.
    ok(sample(&run, 12, 1, &out));
    std::fs::write(&out, "mine").unwrap();
    let message = usage_error(sample(&run, 4, 1, &out), dir.path());
    assert!(message.contains("DIR/labels.jsonl exists") && message.contains("--overwrite"), "{message}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "mine");
    ok(critbench(&["sample", run.to_str().unwrap(), "--tasks", "4", "--out", out.to_str().unwrap(), "--overwrite"]));
    assert_eq!(lines(&out)[0]["tasks"].as_u64(), Some(4));

    // A run a signal stopped is not sampled: its tasks are not all there.
    let mut interrupted = manifest(&run);
    interrupted["status"] = Value::from("interrupted");
    std::fs::write(run.join("manifest.json"), interrupted.to_string()).unwrap();
    let message = usage_error(sample(&run, 4, 1, &dir.path().join("new.jsonl")), dir.path());
    assert!(message.contains("DIR/stored holds an interrupted run") && message.contains("--resume"), "{message}");
}

#[test]
fn a_sharded_run_draws_the_same_sample_and_corrects_to_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let whole = rag_run(dir.path(), "whole", 24, "store_drafts = true\nepochs = 2");
    let sharded = dir.path().join("sharded");
    let file = dir.path().join("whole.toml");
    for shard in ["0/2", "1/2"] {
        let out = sharded.to_str().unwrap();
        ok(critbench(&["run", file.to_str().unwrap(), "--limit", "24", "--shard", shard, "--out", out, "-q"]));
    }
    ok(critbench(&["merge", sharded.to_str().unwrap()]));
    let mut corrected = Vec::new();
    for run in [&whole, &sharded] {
        let path = dir.path().join(format!("{}.jsonl", run.file_name().unwrap().to_str().unwrap()));
        ok(sample(run, 8, 2, &path));
        let drawn = lines(&path);
        write_lines(&path, &label(&drawn));
        ok(critbench(&["report", run.to_str().unwrap(), "--labels", path.to_str().unwrap()]));
        corrected.push((drawn, std::fs::read(run.join("corrected.csv")).unwrap()));
    }
    let ((whole_lines, whole_csv), (sharded_lines, sharded_csv)) = (&corrected[0], &corrected[1]);
    assert_eq!(whole_lines[0]["keys_sha256"], sharded_lines[0]["keys_sha256"]);
    assert_eq!(whole_lines[1..], sharded_lines[1..], "the same answers, in the same order");
    assert!(whole_csv == sharded_csv, "corrected.csv differs between the run in one piece and in shards");
}

#[test]
fn corrected_intervals_equal_ppi_pythons_ppi_mean_ci() {
    let dir = tempfile::tempdir().unwrap();
    // A grid (two thresholds × best/last final drafts) with one epoch, and two epochs: 240 tasks.
    let grid = rag_run(
        dir.path(),
        "grid",
        240,
        "store_drafts = true\n[policy]\npass_score = [7, 8]\nfinal = [\"best\", \"last\"]",
    );
    let epochs = rag_run(dir.path(), "epochs", 240, "store_drafts = true\nepochs = 2");
    let python = crate::common::python()
        .arg(repo().join("tests/python/check_ppi.py"))
        .arg(binary())
        .arg(repo().join("datasets/rag.jsonl"))
        .arg(&grid)
        .arg(&epochs)
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
    let stdout = String::from_utf8_lossy(&python.stdout);
    assert!(
        python.status.success(),
        "check_ppi.py failed (install tests/python/requirements.txt):\n{stdout}\n{}",
        String::from_utf8_lossy(&python.stderr)
    );
    // Both runs were checked; a script that checked nothing must not pass.
    assert!(
        stdout.contains("grid: 1 epoch(s), 80 of 240 tasks labelled")
            && stdout.contains("12 corrected rows and 12 corrected comparisons agree with ppi_mean_ci"),
        "{stdout}"
    );
    assert!(
        stdout.contains("epochs: 2 epoch(s), 80 of 240 tasks labelled")
            && stdout.contains("3 corrected rows and 3 corrected comparisons agree"),
        "{stdout}"
    );
}
