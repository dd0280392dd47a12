//! `critbench view`: the real binary serving a 60-task sim run with its drafts stored, asked over
//! HTTP (the answer's figures lead to as many loops as summary.csv counts, the interesting sets hold
//! the loops the tables say, a task's page shows its drafts' changes and critiques, labels are
//! saved so `critbench report --labels` reads them), refusals with exit status 2, and the same run
//! in headless Chromium, clicked and typed at as a person labelling would.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::*;
use serde_json::Value;

/// A sim run of 60 papers, feedback and no-feedback, its drafts stored; `sim-truth` judges every
/// round.
fn sim_run(dir: &Path) -> PathBuf {
    let file = experiment(
        dir,
        "view.toml",
        &format!(
            "name = \"view <&> test\"\ndataset = \"{}\"\nbackend = \"sim\"\narms = [\"feedback\", \"no-feedback\"]\n\
             seed = 7\nstore_drafts = true\n[[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\n\
             [policy]\npass_score = 8\nmax_revisions = 3\n",
            repo().join("datasets/papers.jsonl").display()
        ),
    );
    let run = dir.join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--limit", "60", "--out", run.to_str().unwrap(), "-q"]));
    run
}

/// A running `critbench view`, stopped when dropped.
struct Viewing {
    child: Child,
    url: String,
}

impl Viewing {
    fn start(args: &[&str]) -> Viewing {
        require_plugins();
        let mut child = Command::new(binary())
            .arg("view")
            .args(args)
            .current_dir(repo())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("critbench view starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://127.0.0.1:"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .trim_end_matches('/')
            .to_string();
        Viewing { child, url }
    }

    fn get(&self, path: &str) -> (u16, String) {
        http("GET", &format!("{}{path}", self.url), "")
    }

    /// Waits for the loop index, then GETs `path`.
    fn list(&self, path: &str) -> String {
        for _ in 0..600 {
            let (status, body) = self.get(path);
            if status != 503 {
                assert_eq!(status, 200, "{path}: {body}");
                return body;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the loops were never read");
    }
}

impl Drop for Viewing {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request to 127.0.0.1, the connection closed after it: status and body.
pub fn http(method: &str, url: &str, body: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let Ok(mut socket) = TcpStream::connect(host) else { return (0, String::new()) };
    socket.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        socket,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: \
         application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // Read to the end of the body its Content-Length gives (a server may keep the connection
    // open), else to the end of the connection.
    let mut response = Vec::new();
    let mut buffer = [0u8; 65536];
    loop {
        let text = String::from_utf8_lossy(&response).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse::<usize>().ok()).flatten()
            });
            if length.is_some_and(|length| body.len() >= length) {
                break;
            }
        }
        match socket.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&buffer[..n]),
        }
    }
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { unchunk(body) } else { body.into() };
    (status, body)
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    out
}

/// The number a list page says it found (`data-total`).
fn total(page: &str) -> usize {
    let at = page.find("data-total=\"").expect("a count") + "data-total=\"".len();
    page[at..].split('"').next().unwrap().parse().unwrap()
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A loop: config, arm, critic, task, epoch.
type LoopKey = (String, String, String, String, u32);

/// Each loop with sim-truth's verdicts on its rounds, in order.
fn truth_rounds(run: &Path) -> BTreeMap<LoopKey, BTreeMap<u32, bool>> {
    let rows = critbench_storage::evaluations::read_evaluations(&run.join("evaluations.parquet")).unwrap();
    let mut loops: BTreeMap<_, BTreeMap<u32, bool>> = BTreeMap::new();
    for row in rows.iter().filter(|r| r.evaluator == "sim-truth") {
        let key =
            (row.config_id.clone(), row.arm.as_str().to_string(), row.critic.clone(), row.task_id.clone(), row.epoch);
        if let Some(passed) = row.passed {
            loops.entry(key).or_default().insert(row.round, passed);
        }
    }
    loops
}

#[test]
fn view_leads_from_the_answer_to_the_loops_and_rounds_behind_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = sim_run(dir.path());
    let view = Viewing::start(&[run.to_str().unwrap()]);

    // The answer as report.md opens with it, escaped.
    let (status, answer) = view.get("/");
    assert_eq!(status, 200);
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let first = report.split("## The answer\n\n").nth(1).unwrap().lines().next().unwrap();
    assert!(first.starts_with("The answer, by `sim-truth`"), "{first}");
    assert!(answer.contains("<p>The answer, by <code>sim-truth</code>, the simulator&#39;s hidden truth."), "{answer}");
    assert!(answer.contains("<span class=\"run\">view &lt;&amp;&gt; test ("), "the run's name is escaped");

    // Every figure of summary.csv by every judge leads to as many loops as it counts.
    let summary = csv_rows(&run.join("summary.csv"));
    assert_eq!(
        summary.iter().map(|r| r["judge"].as_str()).collect::<BTreeSet<_>>(),
        BTreeSet::from(["critic", "sim-truth"])
    );
    for row in &summary {
        for (verdict, count) in [("pass", "passed"), ("judged", "n")] {
            let link = format!(
                "/loops?config={}&amp;critic={}&amp;arm={}&amp;judge={}&amp;verdict={verdict}",
                row["config_id"], row["critic"], row["arm"], row["judge"]
            );
            assert!(answer.contains(&format!("href=\"{link}\"")), "no link {link}");
            let page = view.list(&link.replace("&amp;", "&"));
            assert_eq!(total(&page), row[count].parse::<usize>().unwrap(), "{link}");
        }
    }

    // The interesting sets hold the loops the tables say.
    let truth = truth_rounds(&run);
    let flips = |from: bool| {
        truth
            .values()
            .filter(|rounds| rounds.values().zip(rounds.values().skip(1)).any(|(a, b)| *a == from && *b != from))
            .count()
    };
    let (fixed, broken) = (flips(false), flips(true));
    assert!(fixed > 0, "the run has revisions sim-truth saw fix a draft");
    assert_eq!(total(&view.list("/loops?set=fixed")), fixed);
    assert_eq!(total(&view.list("/loops?set=broken")), broken);
    let outcomes = outcomes(&run);
    let final_truth: BTreeMap<_, bool> =
        critbench_storage::evaluations::read_evaluations(&run.join("evaluations.parquet"))
            .unwrap()
            .into_iter()
            .filter(|r| r.answer == "final")
            .map(|r| ((r.arm.as_str().to_string(), r.task_id.clone(), r.epoch), r.passed.unwrap()))
            .collect();
    let pleased = outcomes
        .iter()
        .filter(|o| {
            o.passed && final_truth.get(&(o.arm.as_str().to_string(), o.task_id.clone(), o.epoch)) == Some(&false)
        })
        .count();
    assert!(pleased > 0);
    assert_eq!(total(&view.list("/loops?set=critic-passed-evaluator-failed")), pleased);
    let feedback_budget =
        outcomes.iter().filter(|o| o.arm.as_str() == "feedback" && o.exit_reason.as_str() == "budget").count();
    let page = view.list("/loops?arm=feedback&exit=budget");
    assert_eq!(total(&page), feedback_budget);
    assert_eq!(page.matches("<tr><td><a href=\"/task/").count(), feedback_budget.min(50));
    // Paged: 120 loops, 50 a page.
    let third = view.list("/loops?page=3");
    assert_eq!((total(&third), third.matches("<tr><td><a href=\"/task/").count()), (120, 20));
    assert!(third.contains("page 3 of 3"));
    // A name the run does not have is said so, with the names it has.
    let (status, page) = view.get("/loops?config=p9");
    assert_eq!(status, 400);
    assert!(page.contains("The run has no config <code>p9</code>; it has p8-r3-stall-e0."), "{page}");

    // A task's page: both arms side by side, round by round, each revision's words inserted and
    // deleted, and the critique `critbench show` prints beside them.
    let task = outcomes.iter().find(|o| o.arm.as_str() == "feedback" && o.revisions >= 2).unwrap().task_id.clone();
    let (status, page) = view.get(&format!("/task/{task}"));
    assert_eq!(status, 200);
    assert_eq!(page.matches("<section class=\"loop\"").count(), 2);
    assert!(page.contains("<ins>") && page.contains("<del>"), "no word changes on the task page");
    let shown = ok(critbench(&["show", run.to_str().unwrap(), "--task", &task, "--arm", "feedback"]));
    let rationale = shown.lines().find_map(|l| l.trim().strip_prefix("rationale: ")).expect("a rationale");
    let issue = shown.lines().skip_while(|l| l.trim() != "issues:").nth(1).unwrap().trim().trim_start_matches("- ");
    for text in [rationale, issue] {
        let escaped = critbench_report::escape_html(text);
        assert!(page.contains(&escaped), "the task page lacks {escaped}");
    }
    assert!(
        page.contains("sim-truth (first): <span class=\"pass\">")
            || page.contains("sim-truth (first): <span class=\"fail\">")
    );
    assert!(page.contains("→ stop: "), "the decision and why the loop stopped");
    let (status, page) = view.get("/task/no-such-task");
    assert_eq!((status, page.contains("No task <code>no-such-task</code>")), (404, true));
    // report.html leaves the answers to the viewer: a count and the way there, no list, and
    // commands that run as written in the report's folder.
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    let count = format!(
        "<p id=\"list-critic-only\">{pleased} final answers in all. To read them round by round, run <code>critbench view .</code>"
    );
    assert!(html.contains(&count), "report.html says how many and how to read them");
    assert!(!html.contains("<ul id=\"list-critic-only\">") && !html.contains("critbench show RUN"));
    assert!(html.contains("<code>critbench show . --task "), "the discordant pairs' commands name the run `.`");
    // Nothing of the run was written.
    let mut after: Vec<String> =
        std::fs::read_dir(&run).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    after.sort();
    assert!(!after.iter().any(|f| f.ends_with(".tmp") || f == "run.lock"), "{after:?}");
}

#[test]
fn view_saves_each_label_so_report_labels_reads_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = sim_run(dir.path());
    let labels = dir.path().join("labels.jsonl");
    ok(critbench(&["sample", run.to_str().unwrap(), "--tasks", "6", "--seed", "2", "--out", labels.to_str().unwrap()]));
    let written = std::fs::read_to_string(&labels).unwrap();
    let header = written.lines().next().unwrap().to_string();
    let answers: Vec<String> =
        lines(&labels)[1..].iter().map(|l| l["answer_id"].as_str().unwrap().to_string()).collect();
    let view = Viewing::start(&[run.to_str().unwrap(), "--labels", labels.to_str().unwrap()]);
    let (status, page) = view.get("/");
    assert_eq!(status, 200);
    for id in &answers {
        assert!(page.contains(&format!("data-answer-id=\"{id}\" data-gold=\"true\"")), "no control for {id}");
    }
    assert!(page.contains(&format!("<span id=\"labelled\">0</span> of <span id=\"answers\">{}</span>", answers.len())));
    assert!(page.contains("<div id=\"labelling\" class=\"blind\">"), "blind by default");
    // Labelled one by one; the file is the sample's at every step, its header as written.
    for (i, id) in answers.iter().enumerate() {
        let gold = i % 3 != 0;
        let (status, body) = http("POST", &format!("{}/api/label", view.url), &format!("answer_id={id}&gold={gold}"));
        assert_eq!(status, 200, "{body}");
        let state: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(state["labelled"], i + 1);
        let text = std::fs::read_to_string(&labels).unwrap();
        assert_eq!(text.lines().next().unwrap(), header);
        let line = lines(&labels).into_iter().find(|l| l["answer_id"] == id.as_str()).unwrap();
        assert_eq!(line["gold"], gold);
        // Partly labelled, the file is one `report --labels` reads and refuses for its empty gold.
        if i == 0 {
            let refused = critbench(&["report", run.to_str().unwrap(), "--labels", labels.to_str().unwrap()]);
            assert!(usage_error(refused, dir.path()).contains("`gold` is empty"));
        }
    }
    let (status, body) = http("POST", &format!("{}/api/label", view.url), "answer_id=a0000&gold=true");
    assert_eq!((status, body.contains("not in the sample")), (404, true));
    let (status, _) = http("POST", &format!("{}/api/label", view.url), &format!("answer_id={}&gold=maybe", answers[0]));
    assert_eq!(status, 400);
    // Ctrl-C stops it; the file is whole, as the last label left it.
    let mut view = view;
    let stopped = std::process::Command::new("kill").args(["-INT", &view.child.id().to_string()]).status().unwrap();
    assert!(stopped.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = view.child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "critbench view did not stop on SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130), "ended by SIGINT with its documented status: {status:?}");
    ok(critbench(&["report", run.to_str().unwrap(), "--labels", labels.to_str().unwrap()]));
    assert!(run.join("corrected.csv").is_file());
}

#[test]
fn view_refuses_what_is_not_a_run_or_not_a_sample_of_it_with_exit_status_2() {
    let dir = tempfile::tempdir().unwrap();
    let run = sim_run(dir.path());
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let message = usage_error(critbench(&["view", empty.to_str().unwrap()]), dir.path());
    assert!(message.contains("DIR/empty") && message.contains("outcomes.parquet is missing"), "{message}");
    // A sample of another run.
    let text = std::fs::read_to_string(dir.path().join("view.toml")).unwrap().replace("view <&> test", "other");
    let file = experiment(dir.path(), "other.toml", &text);
    let other = dir.path().join("other");
    ok(critbench(&["run", file.to_str().unwrap(), "--limit", "10", "--out", other.to_str().unwrap(), "-q"]));
    let labels = dir.path().join("labels.jsonl");
    ok(critbench(&["sample", other.to_str().unwrap(), "--tasks", "2", "--out", labels.to_str().unwrap()]));
    let message =
        usage_error(critbench(&["view", run.to_str().unwrap(), "--labels", labels.to_str().unwrap()]), dir.path());
    assert!(message.contains("DIR/labels.jsonl") && message.contains("is a sample of run"), "{message}");
    // A labels file inside the run's folders is refused by the guard before anything is read.
    std::fs::create_dir_all(run.join("rescored")).unwrap();
    let inside = run.join("rescored/labels.jsonl");
    std::fs::copy(&labels, &inside).unwrap();
    let message =
        usage_error(critbench(&["view", run.to_str().unwrap(), "--labels", inside.to_str().unwrap()]), dir.path());
    assert!(message.contains("lies inside"), "{message}");
    std::fs::remove_dir_all(run.join("rescored")).unwrap();
    // A port already taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let message = usage_error(critbench(&["view", run.to_str().unwrap(), "--port", &port]), dir.path());
    assert!(message.contains(&format!("cannot listen on 127.0.0.1:{port}")), "{message}");
}

#[test]
#[ignore = "needs Chromium (`chromium` on PATH or /usr/bin/chromium; .ci/run installs it)"]
fn view_in_chromium_shows_a_tasks_rounds_and_labels_a_sample_by_clicks_and_keys() {
    let chromium = crate::cdp::find_chromium().expect("no chromium on PATH nor /usr/bin/chromium; .ci/run installs it");
    let dir = tempfile::tempdir().unwrap();
    let run = sim_run(dir.path());
    let labels = dir.path().join("labels.jsonl");
    ok(critbench(&["sample", run.to_str().unwrap(), "--tasks", "4", "--seed", "5", "--out", labels.to_str().unwrap()]));
    let answers = lines(&labels).len() - 1;
    let view = Viewing::start(&[run.to_str().unwrap(), "--labels", labels.to_str().unwrap()]);
    let mut browser = crate::cdp::Browser::start(&chromium);

    // A task's page, as the browser draws it.
    let task = outcomes(&run).into_iter().find(|o| o.arm.as_str() == "feedback" && o.revisions >= 2).unwrap().task_id;
    browser.open(&format!("{}/task/{task}", view.url));
    assert_eq!(browser.eval("document.querySelectorAll('section.loop').length"), 2);
    assert!(browser.eval("document.querySelectorAll('.draft ins').length").as_u64().unwrap() > 0);
    assert!(browser.eval("document.querySelectorAll('.draft del').length").as_u64().unwrap() > 0);
    let critique = browser.eval("document.querySelector('.critique').innerText").as_str().unwrap().to_string();
    assert!(critique.contains("critique: score") && critique.contains("issues:"), "{critique}");
    let shown = ok(critbench(&["show", run.to_str().unwrap(), "--task", &task, "--arm", "feedback"]));
    let rationale = shown.lines().find_map(|l| l.trim().strip_prefix("rationale: ")).unwrap();
    assert!(browser.eval("document.body.innerText").as_str().unwrap().contains(rationale));
    let screenshot = browser.screenshot();
    assert!(screenshot.starts_with(b"\x89PNG\r\n\x1a\n") && screenshot.len() > 10_000);
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("critbench-view");
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::write(artifacts.join("task-page.png"), &screenshot).unwrap();

    // Labelling: a control for every answer, the verdicts hidden until asked for.
    browser.open(&format!("{}/", view.url));
    assert_eq!(browser.eval("document.querySelectorAll('.answer[data-answer-id]').length"), answers);
    assert_eq!(browser.eval("document.querySelectorAll('button[data-answer-id][data-gold]').length"), 3 * answers);
    let visible = "document.querySelector('.verdicts').offsetParent !== null";
    assert_eq!(browser.eval(visible), false, "verdicts shown to a blind labeller");
    browser.click("#show-verdicts");
    assert_eq!(browser.eval(visible), true, "the switch shows the verdicts");
    // Every answer but the last by a click on right or wrong, the last by its keyboard shortcut.
    let ids: Vec<String> = serde_json::from_value(
        browser.eval("Array.from(document.querySelectorAll('.answer')).map(a => a.dataset.answerId)"),
    )
    .unwrap();
    let mut expected = BTreeMap::new();
    for (i, id) in ids.iter().enumerate() {
        let right = i % 2 == 0;
        if i + 1 < ids.len() {
            browser.click(&format!(".answer[data-answer-id='{id}'] button.{}", if right { "right" } else { "wrong" }));
        } else {
            browser.click(&format!(".answer[data-answer-id='{id}'] pre"));
            browser.press(if right { "r" } else { "w" });
        }
        browser.wait_for(&format!("document.getElementById('labelled').textContent === '{}'", i + 1));
        expected.insert(id.clone(), right);
    }
    for line in &lines(&labels)[1..] {
        assert_eq!(line["gold"], expected[line["answer_id"].as_str().unwrap()], "{line}");
    }
    drop(browser);
    drop(view);
    ok(critbench(&["report", run.to_str().unwrap(), "--labels", labels.to_str().unwrap()]));
    let corrected = csv_rows(&run.join("corrected.csv"));
    assert!(!corrected.is_empty());
}
