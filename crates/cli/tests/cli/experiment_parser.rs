//! Property tests of the experiment parser (docs/REFERENCE.md, The experiment file): no file makes
//! it panic; a file it refuses
//! gets a message that starts with the file's path; a file it accepts has critics the run can
//! trust (a plugin or a command, a positive finite timeout, a bounded memory limit, finite
//! non-negative weights, process isolation for commands) and a finite policy grid.

use std::path::Path;

use critbench_engine::experiment::{Experiment, MAX_MEMORY_MB, MAX_TIMEOUT_S, MIN_MEMORY_MB, Overrides};
use critbench_plugin_host::IsolationMode;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

fn load(dir: &Path, text: &str, overrides: &Overrides) -> Result<Experiment, String> {
    let path = dir.join("e.toml");
    std::fs::write(&path, text).unwrap();
    Experiment::load(&path, overrides).map_err(|e| {
        let message = e.to_string();
        assert!(message.starts_with(&path.display().to_string()), "the message names the file: {message}");
        assert!(e.is_usage(), "a bad experiment file is the user's to fix (exit 2): {message}");
        message
    })
}

/// A TOML value as text: numbers of every kind (including nan and inf), strings, lists, tables.
fn toml_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        any::<i32>().prop_map(|n| n.to_string()),
        prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(-0.0), -1e6f64..1e6].prop_map(|f| {
            if f.is_nan() {
                "nan".to_string()
            } else if f.is_infinite() {
                "inf".to_string()
            } else {
                format!("{f:?}")
            }
        }),
        any::<bool>().prop_map(|b| b.to_string()),
        prop_oneof![
            Just("\"process\"".to_string()),
            Just("\"in-process\"".to_string()),
            Just("\"rubric\"".to_string()),
            "\"[a-z ./-]{0,10}\""
        ],
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|items| format!("[{}]", items.join(", "))),
            prop::collection::vec(("[a-z]{1,4}", inner), 0..3).prop_map(|pairs| {
                let pairs: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k} = {v}")).collect();
                format!("{{ {} }}", pairs.join(", "))
            }),
        ]
    })
}

const CRITIC_KEYS: [&str; 10] =
    ["plugin", "command", "isolation", "timeout_s", "memory_mb", "weights", "kinds", "config", "name", "other"];
const POLICY_KEYS: [&str; 4] = ["pass_score", "max_revisions", "plateau_eps", "stall"];

/// An experiment file with one or two critics and a policy table, each key present or not,
/// with a plausible or arbitrary value.
fn experiment_text() -> impl Strategy<Value = String> {
    let critic = prop::collection::vec((prop::sample::select(CRITIC_KEYS.to_vec()), toml_value()), 0..6);
    let plausible_critic = prop_oneof![
        Just("name = \"a\"\nplugin = \"rubric\"\n".to_string()),
        Just("name = \"b\"\ncommand = [\"python3\", \"c.py\"]\n".to_string()),
        Just(String::new()),
    ];
    let policy = prop::collection::vec((prop::sample::select(POLICY_KEYS.to_vec()), toml_value()), 0..3);
    (prop::collection::vec((plausible_critic, critic), 1..3), policy).prop_map(|(critics, policy)| {
        let mut text = "name = \"p\"\ndataset = \"d.jsonl\"\n".to_string();
        for (base, extra) in critics {
            text.push_str("[[critics]]\n");
            text.push_str(&base);
            let mut seen: Vec<&str> = base.lines().filter_map(|l| l.split(' ').next()).collect();
            for (key, value) in extra {
                if !seen.contains(&key) {
                    seen.push(key);
                    text.push_str(&format!("{key} = {value}\n"));
                }
            }
        }
        text.push_str("[policy]\n");
        let mut seen = Vec::new();
        for (key, value) in policy {
            if !seen.contains(&key) {
                seen.push(key);
                text.push_str(&format!("{key} = {value}\n"));
            }
        }
        text
    })
}

fn assert_trustworthy(experiment: &Experiment, text: &str) {
    for critic in &experiment.critics {
        assert!(critic.plugin.is_empty() != critic.command.is_none(), "plugin xor command:\n{text}");
        assert!(critic.timeout_s.is_finite() && critic.timeout_s > 0.0 && critic.timeout_s <= MAX_TIMEOUT_S, "{text}");
        assert!((MIN_MEMORY_MB..=MAX_MEMORY_MB).contains(&critic.memory_mb), "{text}");
        if critic.command.is_some() {
            assert_eq!(critic.isolation, IsolationMode::Process, "{text}");
        }
        if let Some(weights) = &critic.weights {
            assert!(weights.values().all(|w| w.is_finite() && *w >= 0.0), "weights {weights:?} accepted:\n{text}");
        }
    }
    assert!(!experiment.policies.is_empty());
    for policy in &experiment.policies {
        assert!(policy.pass_score.is_finite() && policy.plateau_eps.is_finite() && policy.plateau_eps >= 0.0, "{text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 400,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        let dir = tempfile::tempdir().unwrap();
        if let Ok(experiment) = load(dir.path(), &text, &Overrides::default()) {
            assert_trustworthy(&experiment, &text);
        }
    }

    #[test]
    fn accepted_critics_and_policies_are_trustworthy(text in experiment_text(), isolate in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let overrides = Overrides { isolate_plugins: isolate, ..Overrides::default() };
        if let Ok(experiment) = load(dir.path(), &text, &overrides) {
            assert_trustworthy(&experiment, &text);
            if isolate && !text.contains("isolation") {
                prop_assert!(experiment.critics.iter().all(|c| c.isolation == IsolationMode::Process));
            }
        }
    }
}

#[test]
fn the_generator_reaches_accepted_files_with_each_critic_key() {
    // Guards the property above against testing only refusals.
    let dir = tempfile::tempdir().unwrap();
    let text = "name = \"p\"\ndataset = \"d.jsonl\"\n[[critics]]\nname = \"a\"\nplugin = \"rubric\"\nisolation = \"process\"\n\
                timeout_s = 0.5\nmemory_mb = 64\nweights = { a = 2 }\nkinds = [\"x\"]\nconfig = { k = 1 }\n\
                [[critics]]\nname = \"b\"\ncommand = [\"python3\", \"c.py\"]\n[policy]\npass_score = [7, 8]\n";
    let experiment = load(dir.path(), text, &Overrides::default()).unwrap();
    assert_trustworthy(&experiment, text);
    assert_eq!(experiment.critics[0].memory_mb, 64);
    assert_eq!(experiment.critics[1].isolation, IsolationMode::Process);
}

#[test]
fn weights_must_be_finite_and_not_negative() {
    let dir = tempfile::tempdir().unwrap();
    for (weights, expected) in [
        ("{ a = nan }", "critics[0]: `weights`: a = NaN must be a finite number ≥ 0"),
        ("{ a = -1 }", "critics[0]: `weights`: a = -1 must be a finite number ≥ 0"),
        ("{ a = inf }", "critics[0]: `weights`: a = inf must be a finite number ≥ 0"),
    ] {
        let text = format!(
            "name = \"p\"\ndataset = \"d.jsonl\"\n[[critics]]\nname = \"a\"\nplugin = \"rubric\"\nweights = {weights}\n"
        );
        let message = load(dir.path(), &text, &Overrides::default()).unwrap_err();
        assert!(message.ends_with(expected), "{message}");
    }
}
