//! The environment of the programs a run starts (docs/REFERENCE.md, Programs' environment): a
//! writer and a command critic see the base variables and those the experiment names in `env`,
//! never the rest of critbench's (its model keys included); whatever they write is stored with
//! the run's model key taken out; an `env` entry that names no variable is refused.

use std::collections::BTreeSet;
use std::process::Command;

use critbench_openai::mock_server::{MockResponse, MockServer};

use crate::common::*;

/// Writes the names of every variable it sees, and the values of `CRITBENCH_NAMED` and of the
/// variable `LEAKED` names (when set), as its draft.
const WRITER: &str = r#"
import json, os
import critbench

def seen():
    leaked = os.environ.get("LEAKED")
    return json.dumps({"names": sorted(os.environ), "named": os.environ.get("CRITBENCH_NAMED"),
                       "leaked": os.environ.get(leaked) if leaked else None})

critbench.serve_writer(lambda task, seed, model: seen(), lambda task, draft, critique, seed, model: seen(),
                       name="env-writer", version="1")
"#;

/// Writes the same as the writer, as its rationale.
const CRITIC: &str = r#"
import json, os
import critbench

def critique(task, draft, round):
    leaked = os.environ.get("LEAKED")
    seen = json.dumps({"names": sorted(os.environ), "named": os.environ.get("CRITBENCH_NAMED"),
                       "leaked": os.environ.get(leaked) if leaked else None})
    return {"score": 3, "issues": ["again"], "rationale": seen}

critbench.serve_critic(critique, name="env-critic", version="1")
"#;

/// What a program wrote it saw: the names of its variables, `CRITBENCH_NAMED`'s value and the
/// value of the variable `LEAKED` names.
fn seen(text: &str) -> (BTreeSet<String>, Option<String>, Option<String>) {
    let seen: serde_json::Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let names = seen["names"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect();
    let text = |key: &str| seen[key].as_str().map(str::to_string);
    (names, text("named"), text("leaked"))
}

/// The Python interpreter itself, not a launcher on PATH (a pyenv shim is a shell script that
/// sets variables of its own).
fn interpreter() -> String {
    let asked = Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output().unwrap();
    assert!(asked.status.success(), "{}", stderr(&asked));
    serde_json::Value::String(stdout(&asked).trim().to_string()).to_string()
}

/// An experiment of two tasks whose writer and critic are [`WRITER`] and [`CRITIC`], given
/// `env`, with `extra` appended.
fn write_experiment(dir: &std::path::Path, env: &str, extra: &str) -> std::path::PathBuf {
    let python = interpreter();
    std::fs::write(dir.join("writer.py"), WRITER).unwrap();
    std::fs::write(dir.join("critic.py"), CRITIC).unwrap();
    std::fs::write(
        dir.join("tasks.jsonl"),
        "{\"id\": \"t1\", \"prompt\": \"p\"}\n{\"id\": \"t2\", \"prompt\": \"q\"}\n",
    )
    .unwrap();
    experiment(
        dir,
        "exp.toml",
        &format!(
            "name = \"env\"\ndataset = \"tasks.jsonl\"\nbackend = \"command\"\nstore_drafts = true\n\
             arms = [\"feedback\"]\n[writer]\ncommand = [{python}, \"writer.py\"]\nenv = {env}\n\
             [[critics]]\nname = \"seen\"\ncommand = [{python}, \"critic.py\"]\nenv = {env}\n\
             [policy]\npass_score = 8\nmax_revisions = 1\n{extra}"
        ),
    )
}

#[test]
fn a_writer_and_a_command_critic_see_the_base_and_the_variables_named_never_the_model_keys() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_experiment(dir.path(), "[\"PYTHONPATH\", \"CRITBENCH_NAMED\", \"CRITBENCH_UNSET_NAME\"]", "");
    let out = dir.path().join("run");
    let run = Command::new(binary())
        .args(["run", "--quiet", "--jobs", "2", "--out"])
        .arg(&out)
        .arg(&file)
        .env("PYTHONPATH", repo().join("python"))
        .env("OPENAI_API_KEY", "sk-openai-not-for-programs")
        .env("ANTHROPIC_API_KEY", "sk-ant-not-for-programs")
        .env("SECRET_X", "not-for-programs")
        .env("CRITBENCH_NAMED", "named-value")
        .env_remove("CRITBENCH_UNSET_NAME")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let allowed: BTreeSet<String> = critbench_plugin_host::BASE_ENV
        .iter()
        .map(|name| name.to_string())
        .chain(["PYTHONPATH".to_string(), "CRITBENCH_NAMED".to_string()])
        .collect();
    let rounds = recorded_rounds(&out);
    assert_eq!(rounds.len(), 4, "two tasks, two rounds each");
    for (task, index, round) in &rounds {
        for (who, text) in [("writer", round.draft.as_deref()), ("critic", round.critique.rationale.as_deref())] {
            let (names, named, _) = seen(text.unwrap_or_else(|| panic!("{task} {index}: no {who} text")));
            for secret in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SECRET_X", "CRITBENCH_UNSET_NAME"] {
                assert!(!names.contains(secret), "{task} {index}: the {who} saw {secret}");
            }
            assert!(names.is_subset(&allowed), "{task} {index}: the {who} saw {:?}", names.difference(&allowed));
            assert!(names.contains("PATH") && names.contains("PYTHONPATH"), "{task} {index}: {who}: {names:?}");
            assert_eq!(named.as_deref(), Some("named-value"), "{task} {index}: {who}");
        }
    }
    // The manifest records the names given, never a value.
    let manifest = manifest(&out);
    let names = serde_json::json!(["PYTHONPATH", "CRITBENCH_NAMED", "CRITBENCH_UNSET_NAME"]);
    assert_eq!(manifest["experiment"]["writer"]["env"], names, "{}", manifest["experiment"]);
    assert_eq!(manifest["experiment"]["critics"][0]["env"], names, "{}", manifest["experiment"]);
    assert!(!manifest.to_string().contains("named-value"));
}

/// The run's upstream key, at least [`critbench_openai::MIN_REDACTED_CHARS`] long.
const KEY: &str = "sk-upstream-4b9e2d7c1a8f3e6b";

#[test]
fn a_model_key_a_writer_or_a_critic_writes_is_stored_redacted_and_counted() {
    let server = MockServer::start(|_| MockResponse::chat("unused", 1, 1));
    let dir = tempfile::tempdir().unwrap();
    // The experiment names the key's variable on purpose: a program that has the key and writes it.
    let file = write_experiment(
        dir.path(),
        "[\"PYTHONPATH\", \"LEAKED\", \"CRITBENCH_ENV_TEST_KEY\"]",
        &format!(
            "[openai]\nbase_url = \"{}\"\napi_key_env = \"CRITBENCH_ENV_TEST_KEY\"\n\
             models = {{ generator = \"gen-m\", reviser = \"rev-m\" }}\n",
            server.base_url()
        ),
    );
    let out = dir.path().join("run");
    let run = Command::new(binary())
        .args(["run", "--quiet", "--jobs", "2", "--out"])
        .arg(&out)
        .arg(&file)
        .env("PYTHONPATH", repo().join("python"))
        .env("LEAKED", "CRITBENCH_ENV_TEST_KEY")
        .env("CRITBENCH_ENV_TEST_KEY", KEY)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let rounds = recorded_rounds(&out);
    assert_eq!(rounds.len(), 4, "two tasks, two rounds each");
    for (task, index, round) in &rounds {
        for (who, text) in [("writer", round.draft.as_deref()), ("critic", round.critique.rationale.as_deref())] {
            let text = text.unwrap_or_else(|| panic!("{task} {index}: no {who} text"));
            assert!(!text.contains(KEY), "{task} {index}: the {who}'s text was stored with the key: {text}");
            assert_eq!(seen(text).2.as_deref(), Some("[REDACTED]"), "{task} {index}: {who}");
        }
    }
    // Each draft and each critique once.
    let manifest = manifest(&out);
    assert_eq!(manifest["openai"]["redacted"], 8, "{}", manifest["openai"]);
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "{} holds the key", path.display());
        }
    }
}

#[test]
fn an_env_entry_that_is_no_variable_name_is_refused_naming_the_file_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    for (table, at) in [("[writer]", "[writer]"), ("[[critics]]", "critics[0]")] {
        let file = write_experiment(dir.path(), "[\"PYTHONPATH\"]", "");
        let text = std::fs::read_to_string(&file).unwrap();
        let text = text.replacen(&format!("{table}\n"), &format!("{table}\nenv = [\"OK\", \"NOT-A-NAME\"]\n"), 1);
        let text = text.replacen("env = [\"PYTHONPATH\"]\n", "", 2);
        std::fs::write(&file, text).unwrap();
        let out = dir.path().join("run");
        let run = critbench(&["run", "--quiet", "--out", out.to_str().unwrap(), file.to_str().unwrap()]);
        assert_eq!(run.status.code(), Some(2), "{table}: {}", stderr(&run));
        let message = stderr(&run);
        for part in ["exp.toml", at, "`env`", "\"NOT-A-NAME\" is not a variable name"] {
            assert!(message.contains(part), "{table}: no {part:?} in {message}");
        }
        assert!(!out.exists());
    }
}
