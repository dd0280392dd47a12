//! The documentation tells the truth: `docs/REFERENCE.md` lists every key the experiment parser
//! accepts and no other, the defaults it gives are the code's, its exit statuses are the binary's,
//! the README and `docs/` link only to files and headings that exist in the repository, the README
//! stays a front door (250 lines, a table of every guide) whose commands, tables and notebook
//! snippet are what the binary and Python print.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use critbench_engine::experiment::{Experiment, Overrides};
use serde_json::Value;

use crate::common::repo;

const REFERENCE: &str = "docs/REFERENCE.md";
const MINIMAL: &str = "name = \"t\"\ndataset = \"d.jsonl\"\n[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n";
const OPENAI: &str = "[openai]\nbase_url = \"http://127.0.0.1:9/v1\"\n";
const SEQUENTIAL: &str = "[sequential]\narms = [\"feedback\", \"no-feedback\"]\n";

fn reference() -> String {
    std::fs::read_to_string(repo().join(REFERENCE)).unwrap()
}

/// The experiment-file tables of the reference: section (`""` for the top level, `critics`,
/// `policy`, `openai.ROLE`, …) → key → its default cell.
fn documented_keys() -> BTreeMap<String, BTreeMap<String, String>> {
    let text = reference();
    let start = text.find("## The experiment file").expect("the reference has an experiment file section");
    let end = start + text[start..].find("\n## Dataset").expect("followed by the dataset section");
    let mut sections: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut section = None;
    for line in text[start..end].lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            let name = heading.trim_matches(['`', '[', ']']);
            section = Some(if heading == "Top level" { String::new() } else { name.to_string() });
            continue;
        }
        let (Some(section), Some(row)) = (&section, line.strip_prefix("| `")) else { continue };
        let cells: Vec<&str> = row.split(" | ").collect();
        assert!(cells.len() >= 3, "{REFERENCE}: a table row without key, default and meaning: {line}");
        for key in cells[0].split(", ") {
            let key = key.trim_matches('`').to_string();
            let previous = sections.entry(section.clone()).or_default().insert(key.clone(), cells[1].to_string());
            assert!(previous.is_none(), "{REFERENCE}: [{section}] `{key}` is listed twice");
        }
    }
    sections
}

fn load(text: &str) -> Result<Experiment, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.toml");
    std::fs::write(&path, text).unwrap();
    Experiment::load(&path, &Overrides::default()).map_err(|e| e.to_string())
}

/// The keys a table of the parser accepts, read from its own refusal of an unknown key.
fn accepted_keys(text: &str) -> BTreeSet<String> {
    let error = load(text).expect_err("an unknown key is refused");
    // serde lists three keys or more as "expected one of `a`, `b`, `c`", two as "expected `a` or `b`".
    let list = error
        .split("expected one of")
        .nth(1)
        .or_else(|| error.split(", expected `").nth(1).map(|rest| &error[error.len() - rest.len() - 1..]))
        .unwrap_or_else(|| panic!("no key list in: {error}"));
    let list = list.lines().next().unwrap();
    let keys: BTreeSet<String> = if list.contains('`') {
        list.split('`').skip(1).step_by(2).map(str::to_string).collect()
    } else {
        list.trim_start_matches(':').split(',').map(|k| k.trim().to_string()).collect()
    };
    assert!(!keys.is_empty(), "no keys in: {error}");
    keys
}

#[test]
fn every_key_the_parser_accepts_is_documented_and_no_other() {
    let documented = documented_keys();
    let probes: [(&str, String); 15] = [
        ("", format!("zz_unknown = 1\n{MINIMAL}")),
        ("critics", format!("{MINIMAL}zz_unknown = 1\n")),
        ("evaluators", format!("{MINIMAL}[[evaluators]]\nname = \"e\"\nplugin = \"rubric\"\nzz_unknown = 1\n")),
        ("policy", format!("{MINIMAL}[policy]\nzz_unknown = 1\n")),
        ("memory", format!("{MINIMAL}[memory]\nzz_unknown = 1\n")),
        ("openai", format!("{MINIMAL}{OPENAI}zz_unknown = 1\n")),
        ("openai.ROLE", format!("{MINIMAL}{OPENAI}[openai.generator]\nzz_unknown = 1\n")),
        ("prompts", format!("{MINIMAL}[prompts]\nzz_unknown = 1\n")),
        ("judge", format!("{MINIMAL}[judge]\nzz_unknown = 1\n")),
        ("sequential", format!("{MINIMAL}[sequential]\nzz_unknown = 1\n")),
        ("sequential.decides", format!("{MINIMAL}{SEQUENTIAL}[sequential.decides]\nzz_unknown = 1\n")),
        ("pricing", format!("{MINIMAL}[pricing]\nzz_unknown = 1\n")),
        ("pricing.MODEL", format!("{MINIMAL}[pricing.m]\ninput_per_mtok = 1\noutput_per_mtok = 1\nzz_unknown = 1\n")),
        ("budget", format!("{MINIMAL}[budget]\nzz_unknown = 1\n")),
        ("writer", format!("{MINIMAL}[writer]\nzz_unknown = 1\n")),
    ];
    for (section, probe) in &probes {
        let accepted = accepted_keys(probe);
        let listed: BTreeSet<String> = documented
            .get(*section)
            .unwrap_or_else(|| panic!("{REFERENCE} has no [{section}] table"))
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            listed, accepted,
            "{REFERENCE}: the [{section}] table (left) against what the parser accepts (right)"
        );
    }
    let sections: BTreeSet<&str> = probes.iter().map(|(s, _)| *s).collect();
    let tables: BTreeSet<&str> = documented.keys().map(String::as_str).collect();
    assert_eq!(tables, sections, "{REFERENCE}: every table is checked against the parser");
}

/// A default cell written as a TOML value in backticks, as JSON; `None` for prose ("required",
/// "none", "built-in", …).
fn literal(cell: &str) -> Option<Value> {
    let inner = cell.strip_prefix('`')?.strip_suffix('`')?;
    if inner.contains('`') {
        return None;
    }
    let table: toml::Table = toml::from_str(&format!("v = {inner}"))
        .unwrap_or_else(|e| panic!("{REFERENCE}: the default `{inner}` is not a TOML value: {e}"));
    Some(serde_json::to_value(&table["v"]).unwrap())
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

#[test]
fn the_documented_defaults_are_the_codes() {
    let plain = serde_json::to_value(load(MINIMAL).unwrap()).unwrap();
    let with_openai = load(&format!("{MINIMAL}{OPENAI}models = {{ generator = \"g\" }}\n")).unwrap();
    let openai = with_openai.openai.as_ref().unwrap();
    let generator = &openai.roles[&critbench_openai::Role::Generator];
    // What the code resolves for every key the file leaves out (the experiment is named `t`).
    let mut code: BTreeMap<(&str, &str), Value> = BTreeMap::new();
    for key in
        ["backend", "arms", "epochs", "seed", "critic_attempts", "store_drafts", "plugin_dirs", "on_bad_row", "sweep"]
    {
        code.insert(("", key), plain[key].clone());
    }
    code.insert(("", "out"), Value::from(plain["out"].as_str().unwrap().replace("reports/t", "reports/NAME")));
    for key in ["isolation", "timeout_s", "memory_mb", "config"] {
        code.insert(("critics", key), plain["critics"][0][key].clone());
    }
    let evaluated =
        serde_json::to_value(load(&format!("{MINIMAL}[[evaluators]]\nname = \"e\"\nplugin = \"rubric\"\n")).unwrap())
            .unwrap();
    let evaluator = &evaluated["evaluators"][0];
    for key in ["isolation", "timeout_s", "memory_mb", "config", "pass_score"] {
        code.insert(("evaluators", key), evaluator[key].clone());
    }
    let every_round = evaluator.get("all_rounds").and_then(Value::as_bool).unwrap_or(false);
    code.insert(("evaluators", "rounds"), Value::from(if every_round { "all" } else { "first and final" }));
    for key in ["pass_score", "max_revisions", "stall", "plateau_eps", "final"] {
        code.insert(("policy", key), plain["policies"][0][key].clone());
    }
    for key in ["learn_fraction", "min_count", "hints"] {
        code.insert(("memory", key), plain["memory"][key].clone());
    }
    code.insert(("openai", "concurrency"), openai.endpoints[0].concurrency.into());
    code.insert(("openai", "timeout_s"), openai.timeout.as_secs_f64().into());
    code.insert(("openai", "max_retries"), openai.max_retries.into());
    code.insert(("openai", "retry_base_ms"), (openai.retry_base.as_millis() as u64).into());
    code.insert(("judge", "repeats"), with_openai.judge.repeats.into());
    let sequential =
        serde_json::to_value(load(&format!("{MINIMAL}{SEQUENTIAL}")).unwrap()).unwrap()["sequential"].clone();
    for key in ["confidence", "min_tasks", "check_every"] {
        code.insert(("sequential", key), sequential[key].clone());
    }
    code.insert(("openai", "server"), openai.endpoints[0].server.map_or("auto", |kind| kind.as_str()).into());
    let written =
        serde_json::to_value(load(&format!("backend = \"command\"\n{MINIMAL}[writer]\ncommand = [\"w\"]\n")).unwrap())
            .unwrap()["writer"]
            .clone();
    for key in ["timeout_s", "memory_mb", "in_flight", "config"] {
        code.insert(("writer", key), written[key].clone());
    }
    let priced = load(&format!("{MINIMAL}[pricing]\n")).unwrap();
    code.insert(("pricing", "currency"), priced.pricing.as_ref().unwrap().currency.clone().into());
    // Defaults the code leaves unset: the reference must say "none" for them.
    let unset: [(&str, &str, bool); 17] = [
        ("writer", "env", written.get("env").is_none()),
        ("critics", "env", plain["critics"][0].get("env").is_none()),
        ("evaluators", "env", evaluator.get("env").is_none()),
        ("critics", "kinds", plain["critics"][0]["kinds"].is_null()),
        ("evaluators", "kinds", evaluator["kinds"].is_null()),
        ("evaluators", "weights", evaluator["weights"].is_null()),
        ("evaluators", "dim_target", evaluator.get("dim_target").is_none_or(Value::is_null)),
        ("critics", "weights", plain["critics"][0]["weights"].is_null()),
        ("policy", "dim_target", plain["policies"][0]["dim_target"].is_null()),
        ("openai", "api_key_env", openai.endpoints[0].api_key_env.is_none()),
        ("openai", "max_tokens_total", openai.max_tokens_total.is_none()),
        ("openai", "max_tokens", generator.max_tokens.is_none()),
        ("", "openai", with_openai.openai.is_some() && load(MINIMAL).unwrap().openai.is_none()),
        ("", "sequential", plain.get("sequential").is_none()),
        ("sequential", "margin", sequential["margin"].is_null()),
        ("sequential", "max_tasks", sequential["max_tasks"].is_null()),
        ("sequential", "decides", sequential["decides"].is_null()),
    ];

    let documented = documented_keys();
    let mut checked = 0;
    for (section, keys) in &documented {
        for (key, cell) in keys {
            let Some(written) = literal(cell) else { continue };
            let actual = code
                .get(&(section.as_str(), key.as_str()))
                .unwrap_or_else(|| panic!("{REFERENCE}: [{section}] `{key}` = {cell} is not checked against the code"));
            assert!(
                same(&written, actual),
                "{REFERENCE}: [{section}] `{key}` says {cell}, the code's default is {actual}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, code.len(), "every default the code resolves is written in {REFERENCE} as a value");
    for (section, key, is_unset) in unset {
        let cell = &documented[section][key];
        assert!(cell.starts_with("none"), "{REFERENCE}: [{section}] `{key}` should say none, says {cell}");
        assert!(is_unset, "[{section}] `{key}` has a default in the code but {REFERENCE} says none");
    }
}

#[test]
fn the_documented_required_keys_are_required() {
    let documented = documented_keys();
    let required: BTreeSet<(String, String)> = documented
        .iter()
        .flat_map(|(s, keys)| {
            keys.iter().filter(|(_, c)| c.as_str() == "required").map(|(k, _)| (s.clone(), k.clone()))
        })
        .collect();
    let price = "[pricing.m]\ninput_per_mtok = 1\noutput_per_mtok = 1\n";
    let without: [(&str, &str, String); 9] = [
        ("", "name", MINIMAL.replace("name = \"t\"\n", "")),
        ("", "dataset", MINIMAL.replace("dataset = \"d.jsonl\"\n", "")),
        ("", "critics", "name = \"t\"\ndataset = \"d.jsonl\"\n".into()),
        ("critics", "name", MINIMAL.replace("name = \"r\"\n", "")),
        ("evaluators", "name", format!("{MINIMAL}[[evaluators]]\nplugin = \"rubric\"\n")),
        ("openai", "base_url", format!("{MINIMAL}[openai]\nconcurrency = 2\n")),
        ("sequential", "arms", format!("{MINIMAL}[sequential]\nconfidence = 0.9\n")),
        ("pricing.MODEL", "input_per_mtok", format!("{MINIMAL}{}", price.replace("input_per_mtok = 1\n", ""))),
        ("pricing.MODEL", "output_per_mtok", format!("{MINIMAL}{}", price.replace("output_per_mtok = 1\n", ""))),
    ];
    let probed: BTreeSet<(String, String)> = without.iter().map(|(s, k, _)| (s.to_string(), k.to_string())).collect();
    assert_eq!(required, probed, "{REFERENCE}: the keys marked required (left) against those this test checks (right)");
    for (section, key, text) in without {
        let error = load(&text).expect_err(&format!("[{section}] without `{key}` is refused"));
        assert!(error.contains(key), "[{section}] without `{key}`: {error}");
    }
}

/// The documented exit statuses, from the reference's table.
fn documented_statuses() -> BTreeSet<i32> {
    let text = reference();
    let start = text.find("## Exit status").unwrap();
    let end = start + text[start..].find("\n## The experiment file").unwrap();
    text[start..end].lines().filter_map(|line| line.strip_prefix("| `")?.split('`').next()?.parse().ok()).collect()
}

#[test]
fn the_documented_exit_statuses_are_the_binarys() {
    crate::common::require_plugins();
    assert_eq!(documented_statuses(), BTreeSet::from([0, 1, 2, 3, 130, 143]));
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(crate::common::binary())
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(run(&["init", "."]), Some(0));
    assert_eq!(run(&["run", "experiment.toml", "--limit", "2", "-q"]), Some(0));
    // Bad usage, a bad file, a run directory that already holds a run.
    assert_eq!(run(&["run", "--no-such-flag"]), Some(2));
    assert_eq!(run(&["run", "missing.toml"]), Some(2));
    assert_eq!(run(&["run", "experiment.toml", "--limit", "2", "-q"]), Some(2));
    // A critic that fails on every critique: the run fails.
    std::fs::write(
        dir.path().join("failing.toml"),
        "name = \"f\"\ndataset = \"tasks.jsonl\"\nout = \"f\"\n[[critics]]\nname = \"bad\"\nplugin = \"faulty\"\n\
         config = { error_on = [\"paper-0001\", \"paper-0002\"] }\n",
    )
    .unwrap();
    assert_eq!(run(&["run", "failing.toml", "--limit", "2", "-q"]), Some(1));
    // 130 and 143 need a run stopped by a signal mid-way: crates/cli/tests/cli/interrupt.rs sends them.
    let interrupt = std::fs::read_to_string(repo().join("crates/cli/tests/cli/interrupt.rs")).unwrap();
    for status in [130, 143] {
        assert!(interrupt.contains(&format!("assert_eq!(code, Some({status})")), "no test asserts exit {status}");
    }
    // 3 needs a model server and a priced run its budget stops: crates/cli/tests/cli/pricing.rs.
    let pricing = std::fs::read_to_string(repo().join("crates/cli/tests/cli/pricing.rs")).unwrap();
    assert!(pricing.contains("assert_eq!(code, Some(3)"), "no test asserts exit 3");
}

/// Runs critbench in `dir` with standard output a pipe whose reader is gone (as `| head -1` leaves
/// it once it has its line), and standard error too when `stderr_closed`.
fn with_closed_pipe(dir: &Path, args: &[&str], stderr_closed: bool) -> std::process::Output {
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        writer
    };
    let mut command = std::process::Command::new(crate::common::binary());
    command.args(args).current_dir(dir).stdout(closed());
    if stderr_closed {
        command.stderr(closed());
    }
    command.output().unwrap()
}

#[test]
fn a_closed_pipe_ends_every_printing_command_quietly_with_its_own_status() {
    crate::common::require_plugins();
    assert!(reference().contains("Output written to a closed pipe is not a failure"), "{REFERENCE} says it");
    let dir = tempfile::tempdir().unwrap();
    let labeled = "{\"id\":\"e1\",\"prompt\":\"p\",\"kind\":\"essay\",\"drafts\":[\"a\",\"b\"],\
                   \"critiques\":[{\"score\":9},{\"score\":3}],\"labels\":[{\"pass\":true},{\"pass\":false}]}\n";
    std::fs::write(dir.path().join("labeled.jsonl"), labeled).unwrap();
    std::fs::write(
        dir.path().join("judge.toml"),
        "name = \"j\"\ndataset = \"labeled.jsonl\"\n[[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n\
         [policy]\npass_score = 8\n",
    )
    .unwrap();
    // Every command that prints, in an order where each finds what it reads.
    let commands: &[&[&str]] = &[
        &["init", "."],
        &["run", "experiment.toml", "--limit", "2", "--store-drafts", "--out", "a"],
        &["run", "experiment.toml", "--limit", "2", "--out", "b"],
        &["run", "experiment.toml", "--limit", "2", "--out", "m", "--shard", "0/2"],
        &["run", "experiment.toml", "--limit", "2", "--out", "m", "--shard", "1/2"],
        &["merge", "m"],
        &["report", "a"],
        &["show", "a", "--task", "paper-0001"],
        &["show", "a", "--pairs", "feedback,no-feedback"],
        &["compare", "a", "b", "--out", "compared"],
        &["compare", "a", "--configs", "p8-r1-stall-e0,p8-r3-stall-e0"],
        &["replay", "a", "--max-revisions", "2"],
        &["rescore", "a", "--critic", "rubric"],
        &["sample", "a", "--tasks", "2", "--out", "gold.jsonl"],
        &["estimate", "experiment.toml", "--out", "estimated"],
        &["judge", "judge.toml", "--out", "judged"],
        &["plugins", "list"],
        &["plugins", "check", "rubric"],
        &["--help"],
        &["run", "--help"],
    ];
    for args in commands {
        let output = with_closed_pipe(dir.path(), args, false);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "critbench {}\n{stderr}", args.join(" "));
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "critbench {}\n{stderr}",
            args.join(" ")
        );
    }
    // The command went on to its end: what it writes besides what it prints is there.
    assert!(dir.path().join("compared/compare.md").is_file());
    assert!(dir.path().join("gold.jsonl").is_file());
    // A closed standard error is no crash either, and a failure keeps its status.
    assert_eq!(with_closed_pipe(dir.path(), &["plugins", "list"], true).status.code(), Some(0));
    assert_eq!(with_closed_pipe(dir.path(), &["run", "missing.toml"], true).status.code(), Some(2));
}

/// Markdown links `[text](target)` of a file.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            found.push(rest[..end].to_string());
        }
    }
    found
}

/// `path` with `.` and `..` resolved without the file system; `None` when it climbs above its root.
fn lexical(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(part) => out.push(part),
            _ => return None,
        }
    }
    Some(out)
}

/// Every problem with the links of `file` (relative to the repository): a link that leaves the
/// repository, is a URL, or names a file that does not exist.
fn link_problems(root: &Path, file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root.join(file)).unwrap();
    let base = Path::new(file).parent().unwrap_or(Path::new(""));
    let mut problems = Vec::new();
    for link in links(&text) {
        let (target, anchor) = link.split_once('#').unwrap_or((&link, ""));
        if target.is_empty() {
            if !has_heading(&text, anchor) {
                problems.push(format!("{file}: `{link}`: it has no heading #{anchor}"));
            }
            continue;
        }
        if target.contains("://") || target.starts_with("mailto:") || target.starts_with('/') {
            problems.push(format!("{file}: `{link}` is not a file in the repository"));
            continue;
        }
        match lexical(&base.join(target)) {
            None => problems.push(format!("{file}: `{link}` points outside the repository")),
            Some(path) if !root.join(&path).exists() => {
                problems.push(format!("{file}: `{link}` names {} which does not exist", path.display()))
            }
            Some(path) if !anchor.is_empty() && path.extension().is_some_and(|e| e == "md") => {
                let headings = std::fs::read_to_string(root.join(&path)).unwrap_or_default();
                if !has_heading(&headings, anchor) {
                    problems.push(format!("{file}: `{link}`: {} has no heading #{anchor}", path.display()));
                }
            }
            Some(_) => {}
        }
    }
    problems
}

/// Whether the Markdown `text` has a heading whose anchor is `anchor` (outside code blocks).
fn has_heading(text: &str, anchor: &str) -> bool {
    let mut in_code = false;
    text.lines().any(|line| {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        !in_code
            && line.starts_with('#')
            && line.trim_start_matches('#').strip_prefix(' ').is_some_and(|h| slug(h) == anchor)
    })
}

/// A heading's anchor as Markdown renderers make it: lower case, punctuation dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn readme_and_docs_link_only_to_files_in_the_repository() {
    let root = repo();
    let mut files = vec!["README.md".to_string(), "crates/README.md".to_string()];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            files.push(format!("docs/{name}"));
        }
    }
    let problems: Vec<String> = files.iter().flat_map(|f| link_problems(&root, f)).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(links(&readme).iter().any(|l| l == "docs/REFERENCE.md"), "the README links the reference");
    for file in &files {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        for outside in ["SPEC", "shared folder"] {
            assert!(!text.contains(outside), "{file} refers to `{outside}`, which a clone does not contain");
        }
    }
}

#[test]
fn the_link_check_catches_dangling_and_escaping_links() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(
        dir.path().join("docs/x.md"),
        "# Here\n\n[ok](A.md) [ok](../docs/A.md#the-part-b) [anchor](#here) [gone](B.md) [up](../../etc/passwd) \
         [web](https://x.org/) [no heading](A.md#nowhere) [not here](#elsewhere) [code](A.md#not-a-heading)",
    )
    .unwrap();
    std::fs::write(dir.path().join("docs/A.md"), "# Title\n\n## The `part` (b)\n\n```sh\n# not a heading\n```\n")
        .unwrap();
    let problems = link_problems(dir.path(), "docs/x.md");
    assert_eq!(problems.len(), 6, "{problems:#?}");
    assert!(problems[0].contains("`B.md` names docs/B.md which does not exist"));
    assert!(problems[1].contains("points outside the repository"));
    assert!(problems[2].contains("is not a file in the repository"));
    assert!(problems[3].contains("docs/A.md has no heading #nowhere"));
    assert!(problems[4].contains("`#elsewhere`: it has no heading #elsewhere"));
    assert!(problems[5].contains("docs/A.md has no heading #not-a-heading"));
}

/// The subcommands `critbench --help` lists (without `help`).
fn subcommands() -> Vec<String> {
    let help = crate::common::ok(crate::common::critbench(&["--help"]));
    let listed = help.split("Commands:\n").nth(1).expect("--help lists its commands");
    listed
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The long flags of `critbench SUBCOMMAND --help` (without `--help`).
fn flags_of(subcommand: &str) -> BTreeSet<String> {
    let help = crate::common::ok(crate::common::critbench(&[subcommand, "--help"]));
    long_flags(&help).into_iter().filter(|flag| flag != "--help").collect()
}

/// Every `--flag` a text names.
fn long_flags(text: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    for (at, _) in text.match_indices("--") {
        let name: String = text[at + 2..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
        if name.starts_with(|c: char| c.is_ascii_lowercase()) {
            flags.insert(format!("--{name}"));
        }
    }
    flags
}

/// The Commands section of docs/REFERENCE.md.
fn reference_commands() -> String {
    let reference = std::fs::read_to_string(repo().join("docs/REFERENCE.md")).unwrap();
    let start = reference.find("## Commands").expect("REFERENCE.md has a Commands section");
    let end = reference[start..].find("## Exit status").map_or(reference.len(), |end| start + end);
    reference[start..end].to_string()
}

#[test]
fn every_subcommand_and_flag_of_the_help_is_in_the_reference_and_no_other() {
    let reference = std::fs::read_to_string(repo().join("docs/REFERENCE.md")).unwrap();
    let commands = reference_commands();
    let subcommands = subcommands();
    assert!(subcommands.len() >= 10, "{subcommands:?}");
    let mut missing = Vec::new();
    let mut every_flag = BTreeSet::new();
    for subcommand in &subcommands {
        if !commands.contains(&format!("| `critbench {subcommand}")) {
            missing.push(format!("critbench {subcommand} (a row of the Commands table)"));
        }
        for flag in flags_of(subcommand) {
            let named = [" ", "`", "=", ",", ")"].iter().any(|after| reference.contains(&format!("{flag}{after}")));
            if !named {
                missing.push(format!("critbench {subcommand} {flag}"));
            }
            every_flag.insert(flag);
        }
    }
    assert!(missing.is_empty(), "in `critbench --help` but not in docs/REFERENCE.md: {missing:?}");

    // And the reverse: the Commands table names no command or flag the binary lacks.
    let documented: BTreeSet<String> = commands
        .lines()
        .filter_map(|line| line.strip_prefix("| `critbench "))
        .filter_map(|rest| rest.split([' ', '`']).next())
        .map(str::to_string)
        .collect();
    let unknown: Vec<&String> = documented.iter().filter(|name| !subcommands.contains(name)).collect();
    assert!(unknown.is_empty(), "docs/REFERENCE.md's Commands table names commands critbench lacks: {unknown:?}");
    let unknown: Vec<String> = long_flags(&commands).into_iter().filter(|flag| !every_flag.contains(flag)).collect();
    assert!(unknown.is_empty(), "docs/REFERENCE.md's Commands table names flags critbench lacks: {unknown:?}");
}

#[test]
fn the_docs_cite_only_documents_in_the_repository() {
    let mut citing = Vec::new();
    let mut files = Vec::new();
    // The docs, and the code's comments and messages: every text file of the repository but its
    // data (this file names the forbidden citations to look for them).
    collect_sources(&repo(), &mut files);
    files.retain(|path| !path.ends_with("crates/cli/tests/cli/docs.rs"));
    assert!(files.len() > 100, "the walk found the sources: {}", files.len());
    for part in [
        "README.md",
        "docs/REFERENCE.md",
        "scripts/bench/peers.py",
        "experiments/demo.toml",
        "justfile",
        ".ci/run",
        "reports/README.md",
    ] {
        assert!(files.contains(&repo().join(part)), "the walk reads {part}");
    }
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let seed = lower
                .match_indices("seed ")
                .any(|(at, _)| lower[at + 5..].chars().take(3).filter(char::is_ascii_digit).count() == 3);
            if line.contains("SPEC") || seed || lower.contains("seeds/") {
                citing.push(format!("{}:{}: {line}", path.display(), number + 1));
            }
        }
    }
    assert!(citing.is_empty(), "the docs cite documents that are not in the repository:\n{}", citing.join("\n"));
}

/// Every source, script, config and document under `dir` (by extension, and the extensionless
/// `justfile` and `.ci/run`); build output, installed packages, run outputs and data (`.jsonl`)
/// left out.
fn collect_sources(dir: &Path, files: &mut Vec<PathBuf>) {
    const TEXT: [&str; 16] =
        ["md", "rs", "h", "c", "py", "toml", "sh", "mjs", "js", "yml", "yaml", "txt", "html", "css", "ipynb", "sbatch"];
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() {
            if path == repo().join("reports") {
                // Run outputs land here; only its README is the project's.
                files.push(path.join("README.md"));
            } else if !matches!(name, "target" | "node_modules" | ".venv" | ".git" | "__pycache__") {
                collect_sources(&path, files);
            }
        } else if path.extension().and_then(|e| e.to_str()).is_some_and(|e| TEXT.contains(&e))
            || name == "justfile"
            || path.ends_with(".ci/run")
        {
            files.push(path);
        }
    }
}

/// The README's lines, a front door's length.
const README_MAX_LINES: usize = 250;

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).unwrap()
}

/// The fenced blocks of a Markdown text whose opening fence is exactly `fence` (e.g. "```sh"), each
/// with its lines' newlines.
fn blocks(text: &str, fence: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut open: Option<(bool, String)> = None;
    for line in text.lines() {
        match &mut open {
            None if line.starts_with("```") => open = Some((line == fence, String::new())),
            None => {}
            Some((wanted, body)) if line == "```" => {
                if *wanted {
                    found.push(std::mem::take(body));
                }
                open = None;
            }
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
        }
    }
    found
}

#[test]
fn the_readme_is_a_front_door_of_at_most_250_lines() {
    let lines = readme().lines().count();
    assert!(lines <= README_MAX_LINES, "README.md has {lines} lines; move detail into a guide in docs/");
}

/// Every guide in docs/ (not the reference, format, protocol or benchmark files) has a title and a
/// paragraph saying what it covers, and the README's table of guides lists each, in reading order.
#[test]
fn every_guide_has_a_title_says_what_it_covers_and_is_in_the_readme() {
    let contract = ["REFERENCE.md", "FORMAT.md", "PROTOCOL.md", "benchmarks.md"];
    let mut guides = BTreeSet::new();
    for entry in std::fs::read_dir(repo().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") && !contract.contains(&name.as_str()) {
            let text = std::fs::read_to_string(repo().join("docs").join(&name)).unwrap();
            let mut lines = text.lines();
            assert!(lines.next().is_some_and(|l| l.starts_with("# ")), "docs/{name} opens with a title");
            assert_eq!(lines.next(), Some(""), "docs/{name}: a blank line after the title");
            assert!(
                lines.next().is_some_and(|l| l.starts_with("What this guide covers: ")),
                "docs/{name}: the paragraph after the title says what the guide covers"
            );
            guides.insert(format!("docs/{name}"));
        }
    }
    assert!(guides.len() >= 7, "{guides:?}");
    let readme = readme();
    let table = readme.split("\n## Guides\n").nth(1).expect("the README has a Guides section");
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| #")).collect();
    let listed: Vec<String> =
        rows.iter().filter_map(|row| links(row).into_iter().next()).filter(|link| link.starts_with("docs/")).collect();
    assert_eq!(listed.iter().cloned().collect::<BTreeSet<_>>(), guides, "the README's table of guides");
    for (number, row) in rows.iter().enumerate() {
        assert!(row.starts_with(&format!("| {} | [", number + 1)), "the guides are numbered in order: {row}");
    }
}

/// The README's two commands are the ones `.ci/run` runs: the demo, and the test command with the
/// requirements and the Python it names.
#[test]
fn the_readme_gives_the_demo_and_test_commands_ci_runs() {
    let readme = readme();
    let commands = blocks(&readme, "```sh").into_iter().next().expect("the README opens with a sh block");
    let demo = "cargo build --workspace && cargo run -q -p critbench -- run --overwrite";
    let test = "python3 -m venv .venv && .venv/bin/pip install -r tests/python/requirements.txt && cargo build \
                --workspace && CRITBENCH_PYTHON=.venv/bin/python cargo test --workspace";
    let lines: Vec<&str> = commands.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).collect();
    assert_eq!(lines, [demo, test], "the README's first commands");
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    for step in [
        "python3 -m venv .venv",
        ".venv/bin/pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt",
        "export CRITBENCH_PYTHON=.venv/bin/python",
        "cargo build --workspace --locked",
        "cargo test --workspace --locked",
    ] {
        assert!(ci.contains(step), ".ci/run no longer runs the README's `{step}`");
    }
}

/// The tour's table is what `critbench init` + `critbench run experiment.toml` print, and its
/// notebook snippet prints, from the run's outcomes, a row of that table.
#[test]
fn the_readme_tour_is_what_init_and_run_print() {
    crate::common::require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let output =
            std::process::Command::new(crate::common::binary()).args(args).current_dir(dir.path()).output().unwrap();
        crate::common::ok(output)
    };
    run(&["init"]);
    let printed = run(&["run", "experiment.toml"]);
    let readme = readme();
    let tour = readme.split("\n## A five-minute tour\n").nth(1).expect("the README has a tour");
    let table = blocks(tour, "```").into_iter().next().expect("the tour shows what the run prints");
    for line in table.lines().filter(|l| !l.is_empty()) {
        assert!(printed.lines().any(|p| p == line), "the tour shows `{line}`, the run printed:\n{printed}");
    }
    let snippet = blocks(tour, "```python").into_iter().next().expect("the tour has a notebook snippet");
    let python = crate::common::python().arg("-c").arg(&snippet).current_dir(dir.path()).output().unwrap();
    assert!(
        python.status.success(),
        "the README's snippet (needs polars): {}",
        String::from_utf8_lossy(&python.stderr)
    );
    let said = String::from_utf8(python.stdout).unwrap();
    let mut rates = Vec::new();
    for line in said.lines() {
        assert!(tour.contains(&format!("`{line}`")), "the README says what its snippet prints: `{line}`");
        rates.push(line.split(": ").nth(1).unwrap().split(' ').next().unwrap().to_string());
    }
    assert_eq!(rates.len(), 3, "{said}");
    let row = format!("| p8-r3-stall-e0 | rubric | {} |", rates.join(" | "));
    assert!(printed.lines().any(|l| l.starts_with(&row)), "the snippet's rates {row} are a printed row:\n{printed}");
    assert!(tour.contains(&format!("`{row}`")), "the README names the row {row}");
}

/// The demo's table in the README is what the first command prints.
#[test]
fn the_readme_demo_table_is_what_the_demo_prints() {
    crate::common::require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let printed = crate::common::ok(crate::common::critbench(&["run", "--overwrite", "--out", out.to_str().unwrap()]));
    let readme = readme();
    let shown = readme.split("\n## Two commands\n").nth(1).unwrap();
    let table = blocks(shown, "```").into_iter().next().expect("the README shows the demo's table");
    assert!(table.lines().filter(|l| l.starts_with("| p")).count() >= 6, "{table}");
    assert!(table.starts_with("The answer, by `sim-truth`"), "{table}");
    for line in table.lines().filter(|l| !l.is_empty()) {
        assert!(printed.lines().any(|p| p == line), "the README shows `{line}`, the demo printed:\n{printed}");
    }
}

/// crates/README.md's table names every crate of `crates/`, and each row's arrow lists exactly the
/// workspace crates its `Cargo.toml` depends on (`[dependencies]`, not dev or build).
#[test]
fn the_crates_readme_arrows_are_each_crates_dependencies() {
    let readme = std::fs::read_to_string(repo().join("crates/README.md")).unwrap();
    let mut rows = std::collections::BTreeMap::new();
    for line in readme.lines().filter(|l| l.starts_with("| `")) {
        let name = line[3..].split('`').next().unwrap().to_string();
        let cells: Vec<&str> = line.trim_end_matches('|').rsplit('|').collect();
        let holds = cells[0];
        let arrows: BTreeSet<String> = match holds.rsplit_once('→') {
            Some((_, after)) => after.split(',').map(|d| d.trim().to_string()).filter(|d| !d.is_empty()).collect(),
            None => BTreeSet::new(),
        };
        rows.insert(name, arrows);
    }
    let mut crates = BTreeSet::new();
    for entry in std::fs::read_dir(repo().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else { continue };
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        let manifest: toml::Table = toml::from_str(&manifest).unwrap();
        let depends: BTreeSet<String> = manifest
            .get("dependencies")
            .and_then(|d| d.as_table())
            .map(|d| d.keys().filter_map(|k| k.strip_prefix("critbench-")).map(str::to_string).collect())
            .unwrap_or_default();
        let arrows = rows.get(&name).unwrap_or_else(|| panic!("crates/README.md has no row for crates/{name}"));
        assert_eq!(arrows, &depends, "crates/README.md's arrow for `{name}` against its Cargo.toml");
        crates.insert(name);
    }
    let rows: BTreeSet<String> = rows.into_keys().collect();
    assert_eq!(rows, crates, "crates/README.md's rows against the crates in crates/");
}
