//! Real runs as people pay for them, end to end against a scripted OpenAI-compatible server on
//! 127.0.0.1: prices per model give every loop a `cost` and the summaries money per pass; a
//! `[budget]` stops the run (exit status 3) with no more spent than the budget and what was in
//! flight, and `--resume` with a larger one finishes it equal to an uninterrupted run, paying
//! for nothing twice; `critbench estimate`'s pilot brackets the full run's loops, rounds, calls,
//! tokens and cost, and a run whose estimate exceeds its budget is refused unless `--force`; the
//! judge's structured output reaches each kind of server in the form it reads.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;
use critbench_openai::ServerKind;
use critbench_openai::mock_server::{MockRequest, MockResponse, MockServer, structured_stub};
use critbench_storage::recorded::read_recorded_loops;
use critbench_storage::tables::read_rescored_outcomes;
use serde_json::{Value, json};

/// Prices per million tokens of the three models, as the experiments below set them.
const PRICES: [(&str, f64, f64); 3] = [("gen-m", 200.0, 400.0), ("rev-m", 300.0, 600.0), ("judge-m", 100.0, 100.0)];

fn task_number(text: &str) -> u64 {
    let start = text.find("[task-").expect("every prompt names its task") + 6;
    text[start..].split(']').next().unwrap().parse().unwrap()
}

fn draft_of(request: &MockRequest) -> String {
    let user = request.body["messages"][1]["content"].as_str().unwrap_or("");
    let start = user.find("<<<\n").map(|i| i + 4).unwrap_or(0);
    let end = user.rfind("\n>>>").unwrap_or(user.len());
    user[start..end.max(start)].to_string()
}

/// The models: the writer's tokens grow with the task's number; the judge scores first drafts 5,
/// blind revisions 6, and a revision that saw the critique 9, except on every third task (6), so
/// loops run one to three rounds.
fn answer(request: &MockRequest) -> MockResponse {
    let text = request.text();
    match request.model() {
        "gen-m" => {
            let n = task_number(&text);
            MockResponse::chat(&format!("A first draft [task-{n}]."), 30 + 7 * n, 10 + n % 5)
        }
        "rev-m" => {
            let n = task_number(&text);
            let fixed = request.last_message().contains("A reviewer found these problems");
            let body = if fixed { format!("FIXED draft [task-{n}].") } else { format!("POLISHED draft [task-{n}].") };
            MockResponse::chat(&body, 50 + 3 * n, 12 + n % 3)
        }
        "judge-m" => {
            let draft = draft_of(request);
            let n = task_number(&draft);
            let score = if draft.contains("FIXED") && !n.is_multiple_of(3) {
                9
            } else if draft.contains("FIXED") || draft.contains("POLISHED") {
                6
            } else {
                5
            };
            let critique = json!({
                "dimensions": {"accuracy": score, "completeness": score, "clarity": score},
                "issues": ["The claim in the first sentence has no support."],
                "fatal_issues": [],
                "suggestions": [{"dimension": "accuracy", "edit": "Add one concrete example."}],
            });
            MockResponse::chat(&format!("```json\n{critique}\n```"), 80 + n, 30)
        }
        other => MockResponse::error(404, &format!("no model {other}")),
    }
}

fn pricing_table(judge: bool) -> String {
    let mut table = String::from("[pricing]\ncurrency = \"EUR\"\n");
    for (model, input, output) in PRICES.iter().filter(|(m, _, _)| judge || *m != "judge-m") {
        table.push_str(&format!("[pricing.\"{model}\"]\ninput_per_mtok = {input}\noutput_per_mtok = {output}\n"));
    }
    table
}

/// `tasks` tasks and an experiment of the two feedback arms on them, in `dir`.
fn fixture(dir: &Path, base_url: &str, tasks: u64, extra: &str) -> PathBuf {
    let rows: String = (1..=tasks)
        .map(|n| {
            json!({"id": format!("task-{n}"), "prompt": format!("[task-{n}] Write one paragraph on rivers.")})
                .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.join("tasks.jsonl"), rows).unwrap();
    experiment(
        dir,
        "priced.toml",
        &format!(
            r#"name = "priced"
dataset = "tasks.jsonl"
backend = "openai"
arms = ["feedback", "no-feedback"]
seed = 3
store_drafts = true

[[critics]]
name = "judge"
plugin = "llm-judge"

[policy]
pass_score = 8
max_revisions = [1, 2]

[openai]
base_url = "{base_url}"
concurrency = 2
timeout_s = 5.0
max_retries = 1
retry_base_ms = 10
cache = "cache.sqlite"
models = {{ generator = "gen-m", reviser = "rev-m", judge = "judge-m" }}
{extra}"#
        ),
    )
}

fn critbench_in(dir: &Path, args: &[&str]) -> Output {
    require_plugins();
    Command::new(binary()).args(args).current_dir(dir).output().expect("the critbench binary runs")
}

fn price(model: &str) -> (f64, f64) {
    PRICES.iter().find(|(m, _, _)| *m == model).map(|(_, i, o)| (*i, *o)).unwrap()
}

fn cost_of(model: &str, tokens_in: Option<u64>, tokens_out: Option<u64>) -> f64 {
    let (input, output) = price(model);
    (tokens_in.unwrap() as f64 * input + tokens_out.unwrap() as f64 * output) / 1e6
}

/// Each loop's rows as a line that must repeat exactly, cost included (not its run id or time).
fn comparable(out: &Path) -> Vec<String> {
    let mut rows: Vec<String> = outcomes(out)
        .into_iter()
        .map(|r| {
            let cost = r.cost.map(|c| format!("{c:.12}"));
            format!(
                "{} {} {} {} {:?} {} {} {cost:?}",
                r.task_id, r.arm, r.config_id, r.epoch, r.tokens_in, r.rounds, r.passed
            )
        })
        .collect();
    rows.sort();
    rows
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn a_priced_run_records_what_each_loop_cost_and_what_a_pass_costs() {
    let server = MockServer::start(answer);
    let dir = tempfile::tempdir().unwrap();
    let file = fixture(dir.path(), &server.base_url(), 6, &pricing_table(true));
    let out = dir.path().join("run");
    let printed = ok(critbench_in(dir.path(), &["run", file.to_str().unwrap(), "--out", "run", "-q"]));

    // Every loop's cost is its rounds' writer tokens (generator, then reviser) and judge tokens
    // at their prices, whichever config it is.
    let recorded = read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    let rows = outcomes(&out);
    assert_eq!(rows.len(), 6 * 2 * 2);
    for row in &rows {
        let recording = recorded.iter().find(|l| l.task_id == row.task_id && l.arm == row.arm).unwrap();
        let expected: f64 = recording.rounds[..row.rounds as usize]
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let writer = if i == 0 { "gen-m" } else { "rev-m" };
                cost_of(writer, r.tokens_in, r.tokens_out) + cost_of("judge-m", r.critic_tokens_in, r.critic_tokens_out)
            })
            .sum();
        assert!(close(row.cost.expect("every role is priced"), expected), "{row:?}: {expected}");
    }
    // The summaries: money per loop and per pass for every arm and config, in the run's currency.
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["currency"], "EUR");
    for row in summary["summary"].as_array().unwrap() {
        let mine: Vec<f64> = rows
            .iter()
            .filter(|r| r.config_id == row["config_id"] && r.arm.as_str() == row["arm"])
            .map(|r| r.cost.unwrap())
            .collect();
        let total: f64 = mine.iter().sum();
        assert!(close(row["cost_total"].as_f64().unwrap(), total), "{row}");
        assert!(close(row["cost_per_loop"].as_f64().unwrap(), total / mine.len() as f64), "{row}");
        let passed = row["passed"].as_f64().unwrap();
        match row["cost_per_pass"].as_f64() {
            Some(per_pass) => assert!(close(per_pass, total / passed), "{row}"),
            None => assert_eq!(passed, 0.0, "{row}"),
        }
    }
    let csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(csv.lines().next().unwrap().contains(",cost_total,cost_per_loop,cost_per_pass,"), "{csv}");
    let comparisons = std::fs::read_to_string(out.join("comparisons.csv")).unwrap();
    assert!(
        comparisons.lines().next().unwrap().contains(",mean_cost_passed_a,mean_cost_passed_b,diff_mean_cost_passed,"),
        "{comparisons}"
    );
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(markdown.contains("## What a pass costs") && markdown.contains(" EUR |"), "{markdown}");
    assert!(markdown.contains("**Spent ") && markdown.contains("Model latency p50 / p95 / p99: "), "{markdown}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Pass rate against cost per loop") && html.contains("mean cost per loop (EUR)"));
    let openai = &manifest(&out)["openai"];
    let spent = openai["cost"]["spent"].as_f64().unwrap();
    let paid: f64 = ["generator", "reviser", "judge"]
        .iter()
        .map(|role| {
            let calls = &openai["calls"]["by_role"][role];
            let model = openai["models"][role].as_str().unwrap();
            cost_of(model, calls["model_tokens_in"].as_u64(), calls["model_tokens_out"].as_u64())
        })
        .sum();
    assert!(close(spent, paid), "the manifest's spend is its model calls' tokens at their prices: {openai:#}");
    assert_eq!(openai["endpoints"][0]["server"]["kind"], "openai", "a server that names no software: OpenAI's form");
    // The tokens the models line calls paid are those calls' too, and the money beside them.
    let tokens = &openai["tokens"];
    let by_roles = |key: &str| -> u64 {
        ["generator", "reviser", "judge"].iter().map(|r| openai["calls"]["by_role"][r][key].as_u64().unwrap()).sum()
    };
    assert_eq!(tokens["model_in"].as_u64(), Some(by_roles("model_tokens_in")), "{tokens:#}");
    assert_eq!(tokens["model_out"].as_u64(), Some(by_roles("model_tokens_out")), "{tokens:#}");
    let count = |key: &str| tokens[key].as_u64().unwrap();
    let (all_in, all_out) = (count("in"), count("out"));
    assert!(
        printed.contains(&format!(
            "; paid (the calls sent): {} tokens in, {} out, {spent:.4} EUR; not paid (from the cache or shared in \
             flight): {} tokens in, {} out",
            count("model_in"),
            count("model_out"),
            all_in - count("model_in"),
            all_out - count("model_out"),
        )),
        "{printed}\n{tokens:#}"
    );

    // Each loop's critic tokens, apart from its writer's: the sums over the trajectories rows of
    // its config's rounds.
    let mut critic_tokens = std::collections::BTreeMap::new();
    critbench_storage::recorded::for_each_loop_with_rows(&out.join("trajectories.parquet"), |one| {
        let recorded = &one.recorded;
        for row in &one.rows {
            let round = row.own.as_ref().unwrap_or(&recorded.rounds[row.round as usize]);
            let key = (row.config_id.clone(), recorded.arm, recorded.task_id.clone(), recorded.epoch);
            let sums: &mut (u64, u64) = critic_tokens.entry(key).or_default();
            sums.0 += round.critic_tokens_in.expect("a model judge counts its tokens");
            sums.1 += round.critic_tokens_out.expect("a model judge counts its tokens");
        }
        Ok::<_, std::convert::Infallible>(())
    })
    .unwrap();
    assert_eq!(critic_tokens.len(), rows.len());
    for row in &rows {
        let sums = critic_tokens[&(row.config_id.clone(), row.arm, row.task_id.clone(), row.epoch)];
        assert_eq!((row.critic_tokens_in, row.critic_tokens_out), (Some(sums.0), Some(sums.1)), "{row:?}");
        assert_ne!(row.critic_tokens_in, row.tokens_in, "the writer's tokens are apart: {row:?}");
    }

    // The same run again, every answer from the response cache: nothing paid, and the line says
    // so of tokens and money alike, with every token from the cache; each loop records the same
    // tokens and cost, which count its answers wherever they came from.
    let again = ok(critbench_in(dir.path(), &["run", file.to_str().unwrap(), "--out", "again", "-q"]));
    let cached = &manifest(&dir.path().join("again"))["openai"];
    assert_eq!(cached["calls"]["model_calls"], 0, "{cached:#}");
    assert_eq!((cached["tokens"]["in"].as_u64(), cached["tokens"]["out"].as_u64()), (Some(all_in), Some(all_out)));
    assert!(
        again.contains(&format!(
            "; paid (the calls sent): 0 tokens in, 0 out, 0.0000 EUR; not paid (from the cache or shared in flight): \
             {all_in} tokens in, {all_out} out"
        )),
        "{again}"
    );
    assert_eq!(cached["cost"]["spent"], 0.0, "{cached:#}");
    let loop_tokens = |out: &Path| -> Vec<String> {
        let mut rows: Vec<String> = outcomes(out)
            .iter()
            .map(|r| {
                format!(
                    "{} {:?} {} {:?} {:?} {:?}",
                    r.task_id, r.arm, r.config_id, r.tokens_in, r.critic_tokens_in, r.cost
                )
            })
            .collect();
        rows.sort();
        rows
    };
    assert_eq!(loop_tokens(&dir.path().join("again")), loop_tokens(&out));

    // A replay costs each config what its rounds cost when they were recorded.
    ok(critbench_in(dir.path(), &["replay", "run", "--max-revisions", "1", "--out", "replayed"]));
    let replayed = outcomes(&dir.path().join("replayed"));
    assert_eq!(replayed.len(), 12);
    for row in &replayed {
        let original =
            rows.iter().find(|r| r.config_id == row.config_id && r.task_id == row.task_id && r.arm == row.arm);
        assert_eq!(row.cost, original.unwrap().cost, "{row:?}");
    }

    // A rescoring replays the grid on another critic's scores, calling no model: each loop costs
    // what the run paid for the drafts of the rounds it uses (all of them when it is censored).
    ok(critbench_in(dir.path(), &["rescore", "run", "--critic", "rubric", "--plugin", "rubric", "-q"]));
    let rescored = read_rescored_outcomes(&out.join("rescored/rubric/outcomes.parquet")).unwrap();
    assert_eq!(rescored.len(), rows.len());
    for row in &rescored {
        let loop_ = &row.outcome;
        let recording = recorded.iter().find(|l| l.task_id == loop_.task_id && l.arm == loop_.arm).unwrap();
        let drafts: f64 = recording.rounds[..loop_.rounds as usize]
            .iter()
            .enumerate()
            .map(|(i, r)| cost_of(if i == 0 { "gen-m" } else { "rev-m" }, r.tokens_in, r.tokens_out))
            .sum();
        assert!(close(loop_.cost.expect("the run's writers are priced"), drafts), "{row:?}: {drafts}");
    }

    // A model without a price leaves the cost empty, never zero, and says so before the run.
    let unpriced = fixture(dir.path(), &server.base_url(), 6, &pricing_table(false));
    let output = critbench_in(dir.path(), &["run", unpriced.to_str().unwrap(), "--out", "unpriced", "-q"]);
    assert!(stderr(&output).contains("[pricing] has no price for the judge model `judge-m`"), "{}", stderr(&output));
    ok(output);
    assert!(outcomes(&dir.path().join("unpriced")).iter().all(|r| r.cost.is_none()));
    let summary = std::fs::read_to_string(dir.path().join("unpriced/summary.json")).unwrap();
    assert!(summary.contains("\"cost_per_pass\": null") && !summary.contains("\"cost_per_loop\": 0"), "{summary}");
}

#[test]
fn a_run_stopped_by_its_budget_resumes_to_the_full_run_paying_for_nothing_twice() {
    let server = MockServer::start(answer);
    let dir = tempfile::tempdir().unwrap();
    let tasks = 12;
    // The run without a budget: what it all costs, and its rows.
    let whole = dir.path().join("whole");
    std::fs::create_dir(&whole).unwrap();
    let file = fixture(&whole, &server.base_url(), tasks, &pricing_table(true));
    ok(critbench_in(&whole, &["run", file.to_str().unwrap(), "--out", "run", "-q", "--jobs", "2"]));
    let full = whole.join("run");
    let total = manifest(&full)["openai"]["cost"]["spent"].as_f64().unwrap();
    let dearest = outcomes(&full).iter().map(|r| r.cost.unwrap()).fold(0.0, f64::max);

    let budgeted = dir.path().join("budgeted");
    std::fs::create_dir(&budgeted).unwrap();
    let limit = 0.4 * total;
    let with_budget = |limit: f64| format!("{}[budget]\nmax_cost = {limit}\n", pricing_table(true));
    let file = fixture(&budgeted, &server.base_url(), tasks, &with_budget(limit));
    let run = |extra: &[&str]| {
        let mut args = vec!["run", file.to_str().unwrap(), "--out", "run", "-q", "--jobs", "2"];
        args.extend(extra);
        critbench_in(&budgeted, &args)
    };
    let output = run(&[]);
    let code = output.status.code();
    assert_eq!(code, Some(3), "{}", stderr(&output));
    assert!(stderr(&output).contains("stopped by its budget: [budget] max_cost = "), "{}", stderr(&output));
    let out = budgeted.join("run");
    let stopped = manifest(&out);
    assert_eq!(stopped["status"], "interrupted");
    let budget = &stopped["openai"]["budget"];
    assert_eq!(budget["stopped_by"]["budget"], "max_cost", "{budget:#}");
    let spent = stopped["openai"]["cost"]["spent"].as_f64().unwrap();
    // No more than the budget and what the two workers had in flight: a loop each.
    assert!(
        spent >= limit && spent <= limit + 2.0 * dearest,
        "spent {spent} of {limit} (a loop costs at most {dearest})"
    );
    assert!(stopped["loops"].as_u64().unwrap() < outcomes(&full).len() as u64);
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        markdown.contains("> **Partial results: the run was stopped by its budget ([budget] max_cost"),
        "{markdown}"
    );
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["partial"]["status"], "budget");

    // The same budget again: it is spent already, so no loop starts.
    let loops = stopped["loops"].clone();
    let output = run(&["--resume"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert_eq!(manifest(&out)["loops"], loops);
    // A larger budget finishes the run: the same rows as the run without one, and every answer
    // paid for once (what the stopped run had asked is in the cache).
    std::fs::write(
        &file,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace(&format!("max_cost = {limit}"), &format!("max_cost = {}", 10.0 * total)),
    )
    .unwrap();
    ok(run(&["--resume"]));
    assert_eq!(comparable(&out), comparable(&full));
    let finished = manifest(&out);
    assert_eq!(finished["status"], "finished");
    let spent = finished["openai"]["cost"]["spent"].as_f64().unwrap();
    assert!(close(spent, total), "the whole run spent {spent}, as the run without a budget did {total}");
    assert_eq!(finished["openai"]["budget"]["stopped_by"], Value::Null);
}

/// Runs `critbench estimate` and reads its estimate.json.
fn run_estimate(dir: &Path, file: &Path, args: &[&str]) -> (Output, Value) {
    let mut all = vec!["estimate", file.to_str().unwrap(), "-q"];
    all.extend(args);
    let output = critbench_in(dir, &all);
    let out = args.iter().position(|a| *a == "--out").map(|i| dir.join(args[i + 1])).unwrap();
    let json = std::fs::read_to_string(out.join("estimate.json")).map(|t| serde_json::from_str(&t).unwrap());
    (output, json.unwrap_or(Value::Null))
}

fn brackets(projection: &Value, actual: f64) -> bool {
    let (lo, hi) = (projection["lo"].as_f64().unwrap(), projection["hi"].as_f64().unwrap());
    lo <= actual * (1.0 + 1e-9) && actual <= hi * (1.0 + 1e-9)
}

#[test]
fn an_estimate_brackets_the_simulated_runs_loops_and_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = String::new();
    for name in ["papers", "rag"] {
        let text = std::fs::read_to_string(repo().join(format!("datasets/{name}.jsonl"))).unwrap();
        for line in text.lines().take(30) {
            rows.push_str(line);
            rows.push('\n');
        }
    }
    std::fs::write(dir.path().join("tasks.jsonl"), rows).unwrap();
    let file = experiment(
        dir.path(),
        "sim.toml",
        "name = \"sim\"\ndataset = \"tasks.jsonl\"\nepochs = 2\nseed = 11\nout = \"run\"\n\
         [[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\nkinds = [\"paper\"]\n\
         [[critics]]\nname = \"evidence\"\nplugin = \"evidence\"\nkinds = [\"rag\"]\n\
         [policy]\npass_score = [7, 8]\nmax_revisions = [1, 3]\n",
    );
    let (output, estimate) = run_estimate(dir.path(), &file, &["--pilot", "8", "--out", "pilot"]);
    let stdout = ok(output);
    assert!(stdout.contains("from a pilot of 8 of its 60 tasks (seed 11)"), "{stdout}");
    assert!(!dir.path().join("run").exists(), "the pilot never writes into the experiment's out");
    assert_eq!((estimate["tasks"].as_u64(), estimate["pilot_tasks"].as_u64()), (Some(60), Some(8)));
    assert_eq!(estimate["wall_seconds"], Value::Null, "the simulator's time is not a model's");
    assert!(manifest(&dir.path().join("pilot"))["tasks_run"] == 8, "the pilot is a run of its own");
    // Every task has the same loops: that projection is exact.
    let loops = &estimate["loops"];
    assert_eq!(loops["lo"], loops["hi"]);

    ok(critbench_in(dir.path(), &["run", file.to_str().unwrap(), "-q"]));
    let actual = manifest(&dir.path().join("run"));
    for (projected, field) in
        [("loops", "/loops"), ("critiques", "/critiques"), ("recorded_rounds", "/calls/generator")]
    {
        let value = actual.pointer(field).unwrap().as_f64().unwrap();
        assert!(brackets(&estimate[projected], value), "{projected}: {} does not bracket {value}", estimate[projected]);
    }
    // The same seed, the same pilot.
    let (_, again) = run_estimate(dir.path(), &file, &["--pilot", "8", "--out", "pilot", "--overwrite"]);
    assert_eq!(again["pilot_ids"], estimate["pilot_ids"]);
    assert_eq!(again["critiques"], estimate["critiques"]);
}

#[test]
fn an_estimate_brackets_the_calls_tokens_and_cost_and_a_budget_it_exceeds_refuses_the_run() {
    let server = MockServer::start(answer);
    let dir = tempfile::tempdir().unwrap();
    let file = fixture(dir.path(), &server.base_url(), 24, &pricing_table(true));
    let (output, estimate) = run_estimate(dir.path(), &file, &["--pilot", "8", "--out", "pilot"]);
    let stdout = ok(output);
    assert!(stdout.contains("judge (`judge-m`):") && stdout.contains(" EUR  ("), "{stdout}");
    let pilot_calls = manifest(&dir.path().join("pilot"))["openai"]["calls"]["model_calls"].as_u64().unwrap();
    assert!(estimate["wall_seconds"]["point"].as_f64().unwrap() > 0.0);

    // What the whole run asks, measured without the cache.
    ok(critbench_in(dir.path(), &["run", file.to_str().unwrap(), "--out", "cold", "-q", "--no-cache"]));
    let cold = manifest(&dir.path().join("cold"))["openai"].clone();
    for role in ["generator", "reviser", "judge"] {
        let (projected, calls) = (&estimate["roles"][role], &cold["calls"]["by_role"][role]);
        for (name, actual) in [
            ("model_calls", calls["model_calls"].as_f64().unwrap()),
            ("tokens_in", calls["model_tokens_in"].as_f64().unwrap()),
            ("tokens_out", calls["model_tokens_out"].as_f64().unwrap()),
            ("cost", cold["cost"]["by_role"][role]["spent"].as_f64().unwrap()),
        ] {
            assert!(brackets(&projected[name], actual), "{role} {name}: {} does not bracket {actual}", projected[name]);
        }
    }
    let total = cold["cost"]["spent"].as_f64().unwrap();
    assert!(brackets(&estimate["cost"], total), "{} does not bracket {total}", estimate["cost"]);
    assert!(brackets(&estimate["model_calls"], cold["calls"]["model_calls"].as_f64().unwrap()));
    // The run after the pilot pays only for the tasks the pilot did not run.
    ok(critbench_in(dir.path(), &["run", file.to_str().unwrap(), "--out", "warm", "-q"]));
    let warm = manifest(&dir.path().join("warm"))["openai"]["calls"]["model_calls"].as_u64().unwrap();
    assert_eq!(warm + pilot_calls, cold["calls"]["model_calls"].as_u64().unwrap());

    // A budget the estimate exceeds: the run is refused before any call, unless --force.
    let projected = estimate["cost"]["point"].as_f64().unwrap();
    let text = std::fs::read_to_string(&file).unwrap().replace("out = ", "# out = ");
    std::fs::write(&file, format!("{text}[budget]\nmax_cost = {}\n", projected / 2.0)).unwrap();
    let default_pilot = dir.path().join("reports/priced-estimate");
    let (output, over) = run_estimate(dir.path(), &file, &["--pilot", "8", "--out", "reports/priced-estimate"]);
    assert!(stderr(&output).contains("the projected cost exceeds the budget: max_cost = "), "{}", stderr(&output));
    assert!(over["exceeds_budget"].as_array().is_some_and(|e| e.len() == 1), "{over:#}");
    assert!(default_pilot.join("estimate.json").is_file());
    let requests = server.requests();
    let output = critbench_in(dir.path(), &["run", file.to_str().unwrap(), "-q"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("already exceeds the budget: max_cost = ") && stderr(&output).contains("--force"));
    assert_eq!(server.requests(), requests, "refused before any call");
    assert!(!dir.path().join("reports/priced").exists());
    // Forced, it runs, and pays again for what it asks (every answer is cached by now): the
    // budget still stops it.
    let output = critbench_in(dir.path(), &["run", file.to_str().unwrap(), "-q", "--force", "--no-cache"]);
    assert_eq!(output.status.code(), Some(3), "forced, then stopped by the budget: {}", stderr(&output));
    assert!(stderr(&output).contains("stopped by its budget: [budget] max_cost = "), "{}", stderr(&output));
}

#[test]
fn the_judge_is_asked_for_structured_output_in_each_servers_own_form() {
    let critique = json!({
        "dimensions": {"accuracy": 9, "completeness": 9, "clarity": 9},
        "issues": [], "fatal_issues": [], "suggestions": [],
    })
    .to_string();
    for (kind, form) in [
        (ServerKind::Openai, "response_format.json_schema"),
        (ServerKind::Vllm, "structured_outputs"),
        (ServerKind::Llamacpp, "response_format.schema"),
        (ServerKind::Ollama, "format"),
    ] {
        let server = structured_stub(kind, &critique);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("tasks.jsonl"),
            "{\"id\": \"t1\", \"prompt\": \"Write a line.\"}\n{\"id\": \"t2\", \"prompt\": \"Write two.\"}\n",
        )
        .unwrap();
        let file = experiment(
            dir.path(),
            "x.toml",
            &format!(
                "name = \"x\"\ndataset = \"tasks.jsonl\"\nbackend = \"openai\"\narms = [\"single\"]\nout = \"run\"\n\
                 [[critics]]\nname = \"judge\"\nplugin = \"llm-judge\"\nconfig = {{ response_format = \"json_schema\", attempts = 1 }}\n\
                 [openai]\nbase_url = \"{}\"\nmax_retries = 0\nmodels = {{ generator = \"g\", judge = \"j\" }}\n",
                server.base_url()
            ),
        );
        ok(critbench_in(dir.path(), &["run", file.to_str().unwrap(), "-q", "--no-cache"]));
        let out = dir.path().join("run");
        let endpoint = &manifest(&out)["openai"]["endpoints"][0]["server"];
        assert_eq!(
            (endpoint["kind"].as_str(), endpoint["structured_output"].as_str()),
            (Some(kind.as_str()), Some(form))
        );
        assert_eq!(endpoint["models"], json!(["mock-model"]), "the models the server reports");
        for recorded in read_recorded_loops(&out.join("trajectories.parquet")).unwrap() {
            for round in &recorded.rounds {
                assert_eq!(round.critic_error, None, "{kind}: the judge's answer was constrained and parsed");
                assert_eq!(round.critique.score, 9.0, "{kind}");
            }
        }
        // Told the wrong server, the same judge is not answered in its form.
        let wrong = if kind == ServerKind::Llamacpp { "ollama" } else { "llamacpp" };
        let text = std::fs::read_to_string(&file)
            .unwrap()
            .replace("max_retries = 0", &format!("max_retries = 0\nserver = \"{wrong}\""));
        std::fs::write(&file, text).unwrap();
        let output = critbench_in(dir.path(), &["run", file.to_str().unwrap(), "-q", "--no-cache", "--overwrite"]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{kind} told it is {wrong}: every critique fails: {}",
            stderr(&output)
        );
    }
}
