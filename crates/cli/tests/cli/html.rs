//! `report.html`: self-contained, every chart present, and rendered by a real browser (headless
//! Chromium). The browser test is `#[ignore]`d unless asked for (`cargo test -- --include-ignored`,
//! as `.ci/run` does after installing Chromium); it fails when no browser is found.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

const CHARTS: [&str; 5] =
    ["chart-heatmap", "chart-pass-rate", "chart-exit-reasons", "chart-score-trajectory", "chart-pass-vs-rounds"];

/// A small grid (2 × 2 configs, both bundled critics, three arms), so every chart has data,
/// whatever the demo experiment sweeps.
fn grid_run(dir: &Path) -> PathBuf {
    let file = experiment(
        dir,
        "grid.toml",
        &format!(
            "name = \"grid <&> test\"\ndataset = [\"{papers}\", \"{rag}\"]\nbackend = \"sim\"\n\
             arms = [\"feedback\", \"no-feedback\", \"single\"]\nepochs = 2\nseed = 7\n\
             [[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\nkinds = [\"paper\"]\n\
             [[critics]]\nname = \"evidence\"\nplugin = \"evidence\"\nkinds = [\"rag\"]\n\
             [policy]\npass_score = [7, 8]\nmax_revisions = [1, 3]\n",
            papers = repo().join("datasets/papers.jsonl").display(),
            rag = repo().join("datasets/rag.jsonl").display(),
        ),
    );
    let run = dir.join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--limit", "20", "--out", run.to_str().unwrap(), "-q"]));
    run
}

#[test]
fn html_report_is_self_contained_with_every_chart() {
    let dir = tempfile::tempdir().unwrap();
    let run = grid_run(dir.path());
    let html = std::fs::read_to_string(run.join("report.html")).expect("critbench run writes report.html");

    // Structure: every chart is an inline SVG with an accessible title.
    assert!(html.starts_with("<!doctype html>"));
    for id in CHARTS {
        assert!(html.contains(&format!("<svg id=\"{id}\"")), "{id} is missing");
        assert!(html.contains(&format!("<title id=\"{id}-title\">")), "{id} has no title");
    }
    // The data is drawn: whiskers, stacked segments, trajectory lines, labelled scatter points.
    assert!(html.matches("<rect ").count() >= 4 * 2 * 3, "too few bars");
    assert!(html.matches("<polyline ").count() >= 4 * 2 * 2, "too few trajectory lines");
    let labelled: Vec<&str> = html
        .split("class=\"point\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('>').and_then(|(_, text)| text.split_once("</text>")).map(|(l, _)| l))
        .flat_map(|label| label.split(", "))
        .collect();
    for config in ["p7-r1", "p7-r3", "p8-r1", "p8-r3"] {
        assert!(labelled.contains(&config), "no scatter point labelled {config}: {labelled:?}");
    }
    // Tables: one summary row per config × critic × arm, as in summary.csv.
    let summary = html.split("id=\"table-summary\"").nth(1).unwrap().split("</table>").next().unwrap();
    assert_eq!(summary.matches("<tr><td>").count(), 4 * 2 * 3);
    assert!(html.contains("id=\"table-comparisons\""));
    // The headline per task kind: papers under rubric, RAG answers under evidence, each config.
    let kinds = html.split("<table id=\"table-kinds\">").nth(1).unwrap().split("</table>").next().unwrap();
    assert_eq!(kinds.matches("<td><code>paper</code></td>").count(), 4, "{kinds}");
    assert_eq!(kinds.matches("<td><code>rag</code></td>").count(), 4, "{kinds}");
    // The discordant pairs of the compared arms: as many as comparisons.csv counts by the steering
    // critic, up to 100.
    let comparisons = std::fs::read_to_string(run.join("comparisons.csv")).unwrap();
    let header: Vec<&str> = comparisons.lines().next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let discordant: usize = comparisons
        .lines()
        .skip(1)
        .map(|line| line.split(',').collect::<Vec<_>>())
        .filter(|f| f[column("judge")] == "critic")
        .filter(|f| f[column("arm_a")] == "feedback" && f[column("arm_b")] == "no-feedback")
        .map(|f| f[column("a_only")].parse::<usize>().unwrap() + f[column("b_only")].parse::<usize>().unwrap())
        .sum();
    assert!(discordant > 0);
    assert!(html.contains(&format!("<p>{discordant} of ")), "the page does not count {discordant} pairs");
    let pairs = html.split("<table id=\"table-discordant-pairs\">").nth(1).unwrap().split("</table>").next().unwrap();
    assert_eq!(pairs.matches("<tr><td>").count(), discordant.min(100));
    assert_eq!(pairs.matches("<td><code>critbench show . --task ").count(), discordant.min(100));
    // Self-contained: nothing is fetched, nothing runs.
    for forbidden in ["http://", "https://", "<script", "<link", "@import", "url("] {
        assert!(!html.contains(forbidden), "report.html contains `{forbidden}`");
    }
    // Text from the data is escaped (the experiment's name holds markup characters).
    assert!(html.contains("critbench report: grid &lt;&amp;&gt; test</h1>"));

    // `critbench report` regenerates the same page from the Parquet files alone.
    std::fs::remove_file(run.join("report.html")).unwrap();
    ok(critbench(&["report", run.to_str().unwrap()]));
    assert_eq!(std::fs::read_to_string(run.join("report.html")).unwrap(), html);
}

#[test]
#[ignore = "needs Chromium (`chromium` on PATH; .ci/run installs it)"]
fn html_report_renders_in_chromium() {
    let chromium = find_chromium().expect("`chromium` (or `chromium-browser`) is not on PATH; .ci/run installs it");
    let dir = tempfile::tempdir().unwrap();
    let run = grid_run(dir.path());
    let page = run.join("report.html");

    // The DOM after parsing: every chart survives as an SVG element with its drawing inside.
    let dom = headless(&chromium, &["--dump-dom"], &page);
    let dom = String::from_utf8_lossy(&dom.stdout);
    for id in CHARTS {
        let start = dom.find(&format!("<svg id=\"{id}\"")).unwrap_or_else(|| panic!("{id} not in the parsed DOM"));
        let end = start + dom[start..].find("</svg>").expect("the svg is closed");
        let svg = &dom[start..end];
        assert!(svg.contains("<title") && (svg.contains("<rect") || svg.contains("<circle")), "{id} is empty");
    }
    let svg_of = |id: &str| {
        let start = dom.find(&format!("<svg id=\"{id}\"")).unwrap();
        &dom[start..start + dom[start..].find("</svg>").unwrap()]
    };
    // The heatmap: per critic (2), a panel per arm (3) and the paired difference, over 2 × 2
    // configs, every cell labelled (pass rates in %, differences in pp), both axes named.
    let heatmap = svg_of("chart-heatmap");
    let labels: Vec<&str> = heatmap
        .split("class=\"cell-label\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('>').and_then(|(_, text)| text.split_once("</text>")).map(|(l, _)| l))
        .collect();
    assert_eq!(heatmap.matches("<rect class=\"cell").count(), 2 * 4 * 4, "{heatmap}");
    assert_eq!(labels.len(), 2 * 4 * 4, "{labels:?}");
    assert_eq!(labels.iter().filter(|l| l.ends_with('%')).count(), 2 * 3 * 4, "{labels:?}");
    assert_eq!(labels.iter().filter(|l| l.contains(" pp")).count(), 2 * 4, "{labels:?}");
    for title in ["feedback: pass rate", "single: pass rate", "feedback − no-feedback: paired difference (pp)"] {
        assert!(heatmap.contains(&format!(">{title}</text>")), "no panel titled {title}");
    }
    assert!(heatmap.contains(">pass_score</text>") && heatmap.contains(">max_revisions</text>"));
    // Where an interval excludes 0 the cell is outlined and its label starred, and only there.
    let significant = heatmap.matches("<rect class=\"cell significant\"").count();
    assert_eq!(significant, labels.iter().filter(|l| l.ends_with('*')).count());
    // The Pareto chart: each arm's front ringed and in the legend, its points labelled by config.
    let pareto = svg_of("chart-pass-vs-rounds");
    assert!(pareto.contains(">Pareto front</text>"));
    let rings = pareto.matches("<circle class=\"front\"").count();
    assert!((3..=2 * 3 * 4).contains(&rings), "{rings} front points");
    assert!(dom.contains("<table id=\"table-pareto\">"));
    // The headline per task kind and the discordant pairs, linked from the top of the page.
    let kinds =
        dom.split("<table id=\"table-kinds\">").nth(1).expect("no table-kinds").split("</table>").next().unwrap();
    assert_eq!(kinds.matches("<code>paper</code>").count() + kinds.matches("<code>rag</code>").count(), 2 * 4);
    assert!(kinds.contains(">feedback − no-feedback (95% CI)</th>") && kinds.contains(" pp"), "{kinds}");
    let pairs = dom.split("<table id=\"table-discordant-pairs\">").nth(1).expect("no pairs table");
    let pairs = pairs.split("</table>").next().unwrap();
    let rows = pairs.matches("<tr><td>").count();
    assert!((1..=100).contains(&rows), "{rows} discordant pairs listed");
    assert_eq!(pairs.matches("critbench show . --task ").count(), rows);
    for anchor in ["#table-kinds", "#discordant-pairs"] {
        assert!(dom.contains(&format!("<a href=\"{anchor}\">")), "no link to {anchor}");
    }

    // A screenshot: the page paints, with real content (a blank page compresses to a few KB).
    let shot = dir.path().join("report.png");
    headless(
        &chromium,
        &["--window-size=1200,2400", "--hide-scrollbars", &format!("--screenshot={}", shot.display())],
        &page,
    );
    let png = std::fs::read(&shot).expect("chromium wrote the screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1200, 2400));
    assert!(png.len() > 60_000, "the screenshot is only {} bytes: is the page blank?", png.len());
    if let Some(keep) = std::env::var_os("CRITBENCH_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

/// A single config has no grid: the page keeps its per-arm charts and draws no heatmap and no
/// Pareto chart, and still paints.
#[test]
#[ignore = "needs Chromium (`chromium` on PATH; .ci/run installs it)"]
fn single_config_report_renders_in_chromium_without_grid_charts() {
    let chromium = find_chromium().expect("`chromium` (or `chromium-browser`) is not on PATH; .ci/run installs it");
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(
        dir.path(),
        "single.toml",
        &format!(
            "name = \"one config\"\ndataset = \"{papers}\"\nbackend = \"sim\"\n\
             arms = [\"feedback\", \"no-feedback\"]\nepochs = 1\nseed = 7\n\
             [[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\n\
             [policy]\npass_score = 8\nmax_revisions = 3\n",
            papers = repo().join("datasets/papers.jsonl").display(),
        ),
    );
    let run = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--limit", "20", "--out", run.to_str().unwrap(), "-q"]));
    let page = run.join("report.html");
    let dom = headless(&chromium, &["--dump-dom"], &page);
    let dom = String::from_utf8_lossy(&dom.stdout);
    for id in ["chart-pass-rate", "chart-exit-reasons", "chart-score-trajectory"] {
        assert!(dom.contains(&format!("<svg id=\"{id}\"")), "{id} not in the parsed DOM");
    }
    for id in ["chart-heatmap", "chart-pass-vs-rounds", "table-pareto"] {
        assert!(!dom.contains(&format!("id=\"{id}\"")), "{id} drawn for a single config");
    }
    // One kind of task: its headline is the page's; the discordant pairs are still listed.
    assert!(!dom.contains("id=\"table-kinds\""), "a breakdown of one kind");
    assert!(dom.contains("<h2 id=\"discordant-pairs\">Discordant pairs of feedback and no-feedback</h2>"));
    let shot = dir.path().join("single.png");
    headless(
        &chromium,
        &["--window-size=1200,1600", "--hide-scrollbars", &format!("--screenshot={}", shot.display())],
        &page,
    );
    let png = std::fs::read(&shot).expect("chromium wrote the screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert!(png.len() > 40_000, "the screenshot is only {} bytes: is the page blank?", png.len());
    if let Some(keep) = std::env::var_os("CRITBENCH_KEEP_SINGLE_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// Runs headless Chromium on a local file, offline: without the background-networking flags it
/// tries to reach update and sync servers. Fails the test after two minutes rather than hang.
fn headless(chromium: &Path, args: &[&str], page: &Path) -> std::process::Output {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox", // CI runs as root, where Chromium's sandbox refuses to start
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    // Drain the pipes on threads so a large DOM dump cannot fill a pipe and stall the browser.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut buffer = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut buffer).map(|_| buffer)
    });
    let err = std::thread::spawn(move || {
        let mut buffer = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut buffer).map(|_| buffer)
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium {args:?} did not finish within two minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = std::process::Output {
        status,
        stdout: out.join().unwrap().unwrap_or_default(),
        stderr: err.join().unwrap().unwrap_or_default(),
    };
    assert!(
        output.status.success(),
        "chromium {args:?} failed ({:?}):\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}
