//! The experiment file's tests: defaults, resolution, limits and the messages that name the key.

use std::time::Duration;

use critbench_core::ScoreRange;
use critbench_plugin_host::CriticSource;

use super::resolve::normalize;
use super::*;
use crate::EngineError;

/// An experiment read from `text`, as a file of its own; errors name the folder `DIR`.
pub(crate) fn load(text: &str) -> Result<Experiment, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.toml");
    std::fs::write(&path, text).unwrap();
    Experiment::load(&path, &Overrides::default())
        .map_err(|e| e.to_string().replace(&dir.path().display().to_string(), "DIR"))
}

const MINIMAL: &str = "name = \"t\"\ndataset = \"d.jsonl\"\n[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n";

#[test]
fn defaults_follow_the_spec() {
    let e = load(MINIMAL).unwrap();
    assert_eq!(e.backend, BackendKind::Sim);
    assert_eq!(e.arms, Arm::DEFAULT);
    assert_eq!(e.policies, [Policy::default()]);
    assert_eq!(e.critic_attempts, 3);
    assert!(e.datasets[0].ends_with("d.jsonl") && e.datasets[0].is_absolute());
}

#[test]
fn a_name_with_a_path_separator_is_refused() {
    for name in ["../../x", "a/b", "a\\b", "..", "."] {
        let error = load(&MINIMAL.replace("name = \"t\"", &format!("name = {name:?}"))).unwrap_err();
        assert!(error.contains("must not contain a path separator"), "{name}: {error}");
    }
    assert_eq!(load(&MINIMAL.replace("name = \"t\"", "name = \"a.b-c\"")).unwrap().name, "a.b-c");
}

#[test]
fn a_critic_name_that_would_break_a_report_line_is_refused() {
    for (name, problem) in [
        ("a\nb", "a line break (U+000A)"),
        ("a|b", "`|`, which splits a cell of report.md's tables"),
        ("tab\there", "a control character (U+0009)"),
    ] {
        let text = MINIMAL.replace("name = \"r\"", &format!("name = {name:?}"));
        let error = load(&text).unwrap_err();
        assert!(error.contains(&format!("critics[0]: `name` = {name:?} holds {problem}")), "{error}");
        let evaluator = format!("{MINIMAL}[[evaluators]]\nname = {name:?}\nplugin = \"rubric\"\n");
        assert!(load(&evaluator).unwrap_err().contains("evaluators[0]: `name` = "), "{name:?}");
    }
    assert_eq!(name_problem("llm-judge (gpt-4o) · strict"), None);
}

#[test]
fn an_evaluator_judges_every_round_only_when_asked_and_a_wrong_rounds_is_refused() {
    let with = |rounds: &str| load(&format!("{MINIMAL}[[evaluators]]\nname = \"e\"\nplugin = \"rubric\"\n{rounds}"));
    assert!(!with("").unwrap().evaluators[0].all_rounds);
    assert!(!with("rounds = \"first and final\"\n").unwrap().evaluators[0].all_rounds);
    assert!(with("rounds = \"all\"\n").unwrap().evaluators[0].all_rounds);
    let error = with("rounds = \"every\"\n").unwrap_err();
    assert!(error.contains("evaluators[0]: `rounds` = \"every\"; use \"all\""), "{error}");
}

#[test]
fn a_plugin_path_and_the_file_itself_are_resolved_once_to_absolute_paths() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("exp")).unwrap();
    let path = dir.path().join("exp/x.toml");
    let text = MINIMAL.replace("plugin = \"rubric\"", "plugin = \"../plug/libx.so\"");
    std::fs::write(&path, text).unwrap();
    let e = Experiment::load(&path, &Overrides::default()).unwrap();
    assert_eq!(Path::new(&e.critics[0].plugin), dir.path().join("plug/libx.so"));
    assert_eq!(e.path.as_deref(), Some(path.as_path()));
    assert!(e.path.unwrap().is_absolute());
}

#[test]
fn paths_are_normalized_lexically() {
    assert_eq!(normalize(Path::new("experiments/../datasets/x.jsonl")), Path::new("datasets/x.jsonl"));
    assert_eq!(normalize(Path::new("./a/./b")), Path::new("a/b"));
    assert_eq!(normalize(Path::new("../x")), Path::new("../x"));
    assert_eq!(normalize(Path::new("a/..")), Path::new("."));
}

#[test]
fn policy_lists_make_a_grid() {
    let e =
        load(&format!("{MINIMAL}[policy]\npass_score = [7, 8.5]\nmax_revisions = [1, 3, 5]\nstall = false\n")).unwrap();
    let ids: Vec<String> = e.policies.iter().map(Policy::config_id).collect();
    assert_eq!(ids.len(), 6);
    assert_eq!(ids[0], "p7-r1-nostall-e0");
    assert_eq!(ids[5], "p8.5-r5-nostall-e0");
}

#[test]
fn judge_table_is_optional_and_checked() {
    let e = load(MINIMAL).unwrap();
    assert_eq!(e.judge, JudgeSettings { repeats: 1, datasets: None, out: None });
    let e = load(&format!("{MINIMAL}[judge]\nrepeats = 3\ndataset = \"labeled.jsonl\"\nout = \"j\"\n")).unwrap();
    assert_eq!(e.judge.repeats, 3);
    assert!(e.judge.datasets.unwrap()[0].ends_with("labeled.jsonl"));
    assert!(e.judge.out.unwrap().is_absolute());
    assert!(load(&format!("{MINIMAL}[judge]\nrepeats = 0\n")).unwrap_err().contains("[judge]: `repeats` must be"));
    assert!(load(&format!("{MINIMAL}[judge]\nrepeat = 2\n")).unwrap_err().contains("unknown field `repeat`"));
    assert!(load(&format!("{MINIMAL}[judge]\ndataset = []\n")).unwrap_err().contains("[judge]: `dataset` is an empty"));
}

const OPENAI: &str = "backend = \"openai\"\nname = \"t\"\ndataset = \"d.jsonl\"\nout = \"runs/x\"\n\
    [[critics]]\nname = \"j\"\nplugin = \"llm-judge\"\n\
    [openai]\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodels = { generator = \"g\", judge = \"j\" }\n";

#[test]
fn openai_table_resolves_roles_limits_and_cache() {
    use critbench_openai::{CacheMode, Role};
    let e = load(OPENAI).unwrap();
    let openai = e.openai.as_ref().unwrap();
    assert_eq!(openai.concurrency(), DEFAULT_CONCURRENCY);
    assert_eq!(openai.max_retries, DEFAULT_MAX_RETRIES);
    assert_eq!(openai.roles[&Role::Generator].temperature, 0.7);
    assert_eq!(openai.roles[&Role::Reviser].model, "g", "the reviser defaults to the generator's model");
    assert_eq!(openai.roles[&Role::Judge].temperature, 0.0);
    assert!(!openai.roles.contains_key(&Role::Adjudicator));
    match &openai.cache {
        CacheMode::Disk { path } => assert!(path.ends_with("runs/.critbench-cache.sqlite"), "{path:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.jobs, 0, "decided by the run");
    assert!(e.blocking_jobs() >= DEFAULT_CONCURRENCY as usize, "threads enough to keep the requests in flight");
    let e = load(&format!(
        "{OPENAI}max_tokens = 100\ncache = \"c.sqlite\"\n[openai.judge]\ntemperature = 0.3\nseed = 9\n\
         [openai.reviser]\nmodel = \"r\"\nmax_tokens = 50\n"
    ))
    .unwrap();
    let openai = e.openai.unwrap();
    assert_eq!((openai.roles[&Role::Judge].temperature, openai.roles[&Role::Judge].seed), (0.3, 9));
    assert_eq!(openai.roles[&Role::Generator].max_tokens, Some(100));
    assert_eq!((openai.roles[&Role::Reviser].model.as_str(), openai.roles[&Role::Reviser].max_tokens), ("r", Some(50)));
    assert!(matches!(&openai.cache, CacheMode::Disk { path } if path.is_absolute() && path.ends_with("c.sqlite")));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.toml");
    std::fs::write(&path, OPENAI).unwrap();
    let e = Experiment::load(&path, &Overrides { no_cache: true, ..Overrides::default() }).unwrap();
    assert_eq!(e.openai.unwrap().cache, CacheMode::Memory);
}

#[test]
fn openai_mistakes_name_the_key() {
    let error = |extra: &str| load(&format!("{OPENAI}{extra}")).unwrap_err();
    assert!(error("api_key = \"x\"\n").contains("unknown field `api_key`"));
    assert!(error("api_key_env = \"sk-abc123-def\"\n").contains("not the key itself"));
    assert!(!error("api_key_env = \"sk-abc123-def\"\n").contains("sk-abc123"), "a pasted key is not echoed");
    assert!(error("concurrency = 0\n").contains("concurrency = 0 must be from 1 to 4096"));
    assert!(error("timeout_s = -1\n").contains("timeout_s"));
    assert!(error("[openai.critic]\nmodel = \"m\"\n").contains("unknown field `critic`"));
    assert!(error("[openai.judge]\nmodel = \"other\"\n").contains("the judge model is given twice"));
    assert!(error("[openai.judge]\ntemperature = 3\n").contains("temperature = 3 must be from 0 to 2"));
    assert!(error("[openai.adjudicator]\ntemperature = 0.1\n").contains("has settings but no `model`"));
    assert!(error("[openai.generator]\ntopp = 1\n").contains("unknown field `topp`"));
    let e = load(&OPENAI.replace("models = { generator = \"g\", judge = \"j\" }", "models = { generatr = \"g\" }"))
        .unwrap_err();
    assert!(e.contains("unknown role `generatr`"), "{e}");
    let e = load(&OPENAI.replace("generator = \"g\", ", "")).unwrap_err();
    assert!(e.contains("needs a generator model"), "{e}");
    let e = load(&OPENAI.replace("http://127", "http://me:secret@127")).unwrap_err();
    assert!(e.contains("must not carry credentials") && !e.contains("secret"), "{e}");
    let e = load(&OPENAI.replace("http://127", "ftp://127")).unwrap_err();
    assert!(e.contains("must start with http:// or https://"), "{e}");
}

#[test]
fn prompts_table_overrides_and_is_checked() {
    let e = load(&format!("{MINIMAL}[prompts]\ngenerator = \"Do: {{prompt}}\"\n")).unwrap();
    assert_eq!(e.prompts.generator, "Do: {prompt}");
    assert_eq!(e.prompts.reviser_blind, critbench_openai::prompts::Prompts::default().reviser_blind);
    assert!(load(&format!("{MINIMAL}[prompts]\ncritic = \"x\"\n")).unwrap_err().contains("unknown field `critic`"));
    assert!(
        load(&format!("{MINIMAL}[prompts]\nreviser_feedback = \"{{draft}} {{critique}}\"\n"))
            .unwrap_err()
            .contains("[prompts] reviser_feedback: unknown placeholder {critique}")
    );
}

#[test]
fn critics_run_in_process_unless_told_otherwise() {
    let e = load(MINIMAL).unwrap();
    let critic = &e.critics[0];
    assert_eq!(critic.isolation, IsolationMode::InProcess);
    assert_eq!((critic.timeout_s, critic.memory_mb), (60.0, 4096));
    assert_eq!(critic.source(), CriticSource::Plugin("rubric".into()));
    let isolation = critic.isolation(3);
    assert_eq!((isolation.children, isolation.timeout, isolation.memory_mb), (3, Duration::from_secs(60), Some(4096)));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.toml");
    let text = format!(
        "{MINIMAL}[[critics]]\nname = \"kept\"\nplugin = \"rubric\"\nisolation = \"in-process\"\n\
         [[critics]]\nname = \"py\"\ncommand = [\"python3\", \"c.py\"]\ntimeout_s = 2.5\nmemory_mb = 128\n"
    );
    std::fs::write(&path, text).unwrap();
    let flagged = Experiment::load(&path, &Overrides { isolate_plugins: true, ..Overrides::default() }).unwrap();
    let modes: Vec<IsolationMode> = flagged.critics.iter().map(|c| c.isolation).collect();
    assert_eq!(modes, [IsolationMode::Process, IsolationMode::InProcess, IsolationMode::Process]);
    let py = &flagged.critics[2];
    assert_eq!(py.source(), CriticSource::Command(vec!["python3".into(), "c.py".into()]));
    assert_eq!((py.timeout_s, py.memory_mb, py.plugin.as_str()), (2.5, 128, ""));
}

#[test]
fn critic_isolation_mistakes_name_the_key() {
    let critic = |extra: &str| load(&format!("name = \"t\"\ndataset = \"d\"\n[[critics]]\nname = \"c\"\n{extra}\n"));
    for (extra, expected) in [
        ("plugin = \"rubric\"\nisolation = \"thread\"", "critics[0]: `isolation` = \"thread\" is not known"),
        ("plugin = \"rubric\"\ntimeout_s = 0", "critics[0]: `timeout_s` = 0 must be more than 0"),
        ("plugin = \"rubric\"\ntimeout_s = nan", "critics[0]: `timeout_s` = NaN must be more than 0"),
        ("plugin = \"rubric\"\nmemory_mb = 1", "critics[0]: `memory_mb` = 1 must be from 16 to 1048576"),
        ("command = []", "critics[0]: `command` must start with a program"),
        ("", "critics[0]: give `plugin` (a built-in name or a shared library) or `command`"),
    ] {
        let e = critic(extra).unwrap_err();
        assert!(e.contains(expected), "{extra}: {e}");
    }
}

#[test]
fn thresholds_outside_a_critics_range_are_warnings_once_per_value() {
    use crate::run::plan::{POLICY_KEYS, threshold_warnings};
    let e = load(&format!(
        "{MINIMAL}[policy]\npass_score = [-1, 8, 10, 11]\nmax_revisions = [1, 3]\ndim_target = [50, 5]\n"
    ))
    .unwrap();
    let range = ScoreRange { min: 0.0, max: 10.0 };
    assert_eq!(
        threshold_warnings("r", range, &e.policies, &POLICY_KEYS),
        [
            "critic `r`: [policy] pass_score = -1 is below the critic's score range 0–10: every draft passes at its \
         first critique (unless the critique fails, has fatal issues or misses dim_target)",
            "critic `r`: [policy] dim_target = 50 is above the critic's score range 0–10: no draft whose critique has \
         dimensions can pass, so such loops will end by stall, plateau or budget",
            "critic `r`: [policy] pass_score = 11 is above the critic's score range 0–10: no draft can pass, so every \
         loop will end by stall, plateau or budget",
        ]
    );
    assert!(threshold_warnings("r", ScoreRange { min: -1.0, max: 50.0 }, &e.policies, &POLICY_KEYS).is_empty());
    // Non-finite thresholds never get this far.
    assert!(load(&format!("{MINIMAL}[policy]\npass_score = inf\n")).unwrap_err().contains("must be finite"));
    assert!(load(&format!("{MINIMAL}[policy]\ndim_target = nan\n")).unwrap_err().contains("must be finite"));
}

#[test]
fn limits_refuse_what_would_eat_the_machine_naming_the_key() {
    let e = load(&format!("epochs = 4000000000\n{MINIMAL}")).unwrap_err();
    assert_eq!(
        e,
        "DIR/x.toml: `epochs` = 4000000000 is more than 1000: every epoch repeats every loop of every task, and a \
         task's loops are held in memory together; give at most 1000"
    );
    assert!(load(&format!("epochs = 1000\n{MINIMAL}")).is_ok());
    let e = load(&format!("{MINIMAL}[policy]\nmax_revisions = 5000\n")).unwrap_err();
    assert!(e.contains("[policy]: `max_revisions` = 5000 is more than 1000: a loop holds every round"), "{e}");
    // 10 × 10 × 2 × 10 × 11 × 2 = 44,000 configs.
    let many = (0..10).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    let e = load(&format!(
        "{MINIMAL}[policy]\npass_score = [{many}]\nmax_revisions = [{many}]\nstall = [true, false]\n\
         plateau_eps = [{many}]\ndim_target = [{many}, 10]\nfinal = [\"best\", \"last\"]\n"
    ))
    .unwrap_err();
    assert!(e.contains("[policy]: the value lists make 44000 configs (their product), more than 10000"), "{e}");
    // Each bound alone is fine; their product is what a task holds.
    let e = load(&format!("epochs = 1000\n{MINIMAL}[policy]\nmax_revisions = 1000\n")).unwrap_err();
    assert!(
        e.contains(
            "each task's loops would record up to 2003000 rounds (3000 loop(s): 1 critic(s) × 1000 epoch(s) × 3 \
             arm(s), up to 1001 round(s) each)"
        ),
        "{e}"
    );
    let e = load(&format!(
        "epochs = 30\n{MINIMAL}[policy]\npass_score = [{many}]\nmax_revisions = [{many}]\n\
                           stall = [true, false]\n"
    ))
    .unwrap();
    assert_eq!(e.policies.len(), 200, "a grid of 200 configs swept by replay is recorded once per loop");
    let e = load(&format!(
        "epochs = 30\nsweep = \"direct\"\n{MINIMAL}[policy]\npass_score = [{many}]\nmax_revisions = [{many}]\n\
         stall = [true, false]\n"
    ))
    .unwrap_err();
    assert!(e.contains("× 200 configs swept directly") && e.contains("sweep = \"replay\""), "{e}");
}

#[test]
fn long_loops_go_fewer_tasks_to_a_chunk() {
    let chunk = |text: &str| load(text).unwrap().task_shape().tasks_per_chunk(256);
    assert_eq!(chunk(MINIMAL), 256, "3 arms × (4 + 4 + 1) rounds: the usual chunk");
    // 100 epochs × (4 + 4 + 1) = 900 rounds a task: 22 tasks make 19,800 rounds.
    assert_eq!(chunk(&format!("epochs = 100\n{MINIMAL}")), 22);
    assert_eq!(chunk(&format!("epochs = 20\n{MINIMAL}[policy]\nmax_revisions = 1000\n")), 1);
}

#[test]
fn bad_files_name_the_key() {
    assert!(load(&format!("colour = 3\n{MINIMAL}")).unwrap_err().contains("unknown field `colour`"));
    assert!(
        load(&format!("{MINIMAL}[policy]\nthreshold = 3\n")).unwrap_err().contains("[policy]: unknown key `threshold`")
    );
    assert!(
        load(&format!("{MINIMAL}[policy]\npass_score = []\n")).unwrap_err().contains("`pass_score` is an empty list")
    );
    assert!(
        load(&format!("{MINIMAL}[policy]\nmax_revisions = -1\n"))
            .unwrap_err()
            .contains("`max_revisions` must be a whole number")
    );
    assert!(
        load(&format!("arms = [\"feedback\", \"blind\"]\n{MINIMAL}")).unwrap_err().contains("\"blind\" is not an arm")
    );
    assert!(load(&format!("backend = \"gpt\"\n{MINIMAL}")).unwrap_err().contains("`backend` = \"gpt\" is not known"));
    assert!(load("name = \"t\"\ndataset = \"d\"\ncritics = []\n").unwrap_err().contains("no critics"));
    let e = load("name = \"t\"\n[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n").unwrap_err();
    assert!(e.starts_with("DIR/x.toml: `dataset` is missing"), "{e}");
    assert!(load(&format!("epochs = \"two\"\n{MINIMAL}")).unwrap_err().contains("line 1"));
}

/// The `oracle` arm's oracle: on the simulator its hidden truth, unless `oracle` names a held-out
/// evaluator; elsewhere the evaluator `oracle` must name. Each way the key can be wrong is refused
/// naming the file and the key.
#[test]
fn the_oracle_arm_needs_an_oracle_and_the_oracle_key_names_an_evaluator_of_that_arm() {
    let arms = "arms = [\"feedback\", \"oracle\"]\n";
    let sim = load(&format!("{arms}{MINIMAL}")).unwrap();
    assert_eq!((sim.arms.as_slice(), sim.oracle.as_deref()), (&[Arm::Feedback, Arm::Oracle][..], None));
    assert!(serde_json::to_value(&sim).unwrap().get("oracle").is_none());
    let named = load(&format!("{arms}oracle = \"sim-truth\"\n{MINIMAL}")).unwrap();
    assert_eq!(named.oracle.as_deref(), Some("sim-truth"));
    assert_eq!(serde_json::to_value(&named).unwrap()["oracle"], "sim-truth", "the manifest records it");
    let gold = "[[evaluators]]\nname = \"gold\"\nplugin = \"evidence\"\n";
    let openai = load(&format!("{arms}oracle = \"gold\"\n{OPENAI}{gold}")).unwrap();
    assert_eq!(openai.oracle.as_deref(), Some("gold"));

    let error = |text: String| load(&text).unwrap_err();
    let without = error(format!("{arms}{OPENAI}{gold}"));
    assert!(
        without.starts_with(
            "DIR/x.toml: `arms`: \"oracle\" needs an oracle, a critic that knows the answer, and `backend` = \"openai\" \
             keeps no hidden truth to play it; set `oracle` = \"NAME\""
        ),
        "{without}"
    );
    let scripted = error(format!("{arms}backend = \"scripted\"\n{MINIMAL}"));
    assert!(scripted.contains("`backend` = \"scripted\" keeps no hidden truth"), "{scripted}");
    let unknown = error(format!("{arms}oracle = \"gld\"\n{MINIMAL}{gold}"));
    assert_eq!(
        unknown,
        "DIR/x.toml: `oracle` = \"gld\" names no [[evaluators]] table; give the `name` of one: \"gold\", \"sim-truth\""
    );
    let none = error(format!("{arms}oracle = \"gold\"\nsim_truth = false\n{MINIMAL}"));
    assert!(none.ends_with("names no [[evaluators]] table; give the `name` of one: the experiment has none"), "{none}");
    let unused = error(format!("oracle = \"sim-truth\"\n{MINIMAL}"));
    assert_eq!(
        unused,
        "DIR/x.toml: `oracle` = \"sim-truth\" is unused: `arms` has no \"oracle\"; add \"oracle\" to `arms`, or \
         remove `oracle`"
    );
    let narrow = error(format!("{arms}oracle = \"gold\"\n{MINIMAL}{gold}kinds = [\"rag\"]\n"));
    assert!(
        narrow.starts_with(
            "DIR/x.toml: `oracle` = \"gold\": the evaluator takes only `kinds` = [rag], but critic `r` takes (any)"
        ),
        "{narrow}"
    );
    let covered = format!("{arms}oracle = \"gold\"\n{MINIMAL}kinds = [\"rag\"]\n{gold}kinds = [\"rag\", \"paper\"]\n");
    assert_eq!(load(&covered).unwrap().oracle.as_deref(), Some("gold"));
}

/// Two arms, two configs, one critic: what a `[sequential]` table is checked against.
const SEQUENTIAL: &str = "name = \"t\"\ndataset = \"d.jsonl\"\narms = [\"feedback\", \"no-feedback\"]\n\
    [[critics]]\nname = \"r\"\nplugin = \"rubric\"\n[policy]\npass_score = [7, 8]\n[sequential]\n";

#[test]
fn a_sequential_table_takes_the_monitors_defaults_and_is_recorded_with_the_experiment() {
    let e = load(&format!("{SEQUENTIAL}arms = [\"feedback\", \"no-feedback\"]\n")).unwrap();
    let settings = e.sequential.as_ref().unwrap();
    assert_eq!(
        *settings,
        SequentialSettings {
            arms: vec![Arm::Feedback, Arm::NoFeedback],
            confidence: 0.95,
            margin: None,
            min_tasks: 20,
            check_every: 10,
            max_tasks: None,
            decides: None,
        }
    );
    // Part of the resolved experiment, hence of the manifest and of what a resume must match.
    let json = serde_json::to_value(&e).unwrap();
    assert_eq!(json["sequential"]["arms"], serde_json::json!(["feedback", "no-feedback"]));
    assert!(serde_json::to_value(load(MINIMAL).unwrap()).unwrap().get("sequential").is_none());
    let e = load(&format!(
        "{SEQUENTIAL}arms = [\"no-feedback\", \"feedback\"]\nconfidence = 0.9\nmargin = 0.05\nmin_tasks = 5\n\
         check_every = 1\nmax_tasks = 50\ndecides = {{ config = \"p8-r3-stall-e0\" }}\n"
    ))
    .unwrap();
    let settings = e.sequential.unwrap();
    assert_eq!(settings.pair(), (Arm::NoFeedback, Arm::Feedback));
    assert_eq!(
        (settings.margin, settings.min_tasks, settings.check_every, settings.max_tasks),
        (Some(0.05), 5, 1, Some(50))
    );
    // The only critic needs no naming.
    assert_eq!(settings.decides, Some(Decides { config: "p8-r3-stall-e0".into(), critic: "r".into() }));
}

#[test]
fn a_sequential_table_that_cannot_work_is_refused_naming_the_key() {
    let refused = |table: &str| load(&format!("{SEQUENTIAL}{table}")).unwrap_err();
    let cases = [
        ("arms = [\"feedback\"]", "[sequential]: `arms` names 1 arm(s); give two, A then B"),
        ("arms = [\"feedback\", \"single\"]", "[sequential]: `arms`: \"single\" is not one of the experiment's `arms`"),
        ("arms = [\"feedback\", \"feedback\"]", "[sequential]: `arms`: \"feedback\" is listed twice"),
        (
            "arms = [\"feedback\", \"no-feedback\"]\nconfidence = 1.0",
            "[sequential]: `confidence` must lie strictly between 0 and 1 (it is 1)",
        ),
        ("arms = [\"feedback\", \"no-feedback\"]\nmargin = 0.0", "[sequential]: `margin` must lie in (0, 1]"),
        ("arms = [\"feedback\", \"no-feedback\"]\nmin_tasks = 0", "[sequential]: `min_tasks` must be at least 1"),
        (
            "arms = [\"feedback\", \"no-feedback\"]\ncheck_every = 0",
            "[sequential]: `check_every` must be at least 1 task",
        ),
        (
            "arms = [\"feedback\", \"no-feedback\"]\nmax_tasks = 5",
            "[sequential]: `max_tasks` (5) is below `min_tasks` (20)",
        ),
        (
            "arms = [\"feedback\", \"no-feedback\"]\ndecides = { config = \"p9\" }",
            "[sequential.decides]: `config` = \"p9\" is not a config of the [policy] grid (p7-r3-stall-e0, p8-r3-stall-e0)",
        ),
        (
            "arms = [\"feedback\", \"no-feedback\"]\ndecides = { critic = \"r\" }",
            "[sequential.decides]: `config` is missing; the grid has 2 configs",
        ),
        (
            "arms = [\"feedback\", \"no-feedback\"]\ndecides = { config = \"p7-r3-stall-e0\", critic = \"x\" }",
            "[sequential.decides]: `critic` = \"x\" is not one of the experiment's critics (r)",
        ),
        ("arms = [\"feedback\", \"no-feedback\"]\nevery = 3", "unknown field `every`"),
        ("confidence = 0.9", "missing field `arms`"),
    ];
    for (table, expected) in cases {
        let error = refused(table);
        assert!(error.contains(expected), "{table}: {error}");
    }
}

#[test]
fn prices_go_to_the_roles_whose_model_they_name_and_the_file_wins() {
    use critbench_openai::{Price, Role};
    let price = |input: f64, output: f64| {
        Some(Price { input_per_mtok: input, cached_input_per_mtok: None, output_per_mtok: output })
    };
    let e = load(&format!(
        "{OPENAI}[pricing]\ncurrency = \"EUR\"\n[pricing.\"g\"]\ninput_per_mtok = 0.5\noutput_per_mtok = 1.5\n\
         [pricing.\"unused\"]\ninput_per_mtok = 9\noutput_per_mtok = 9\n"
    ))
    .unwrap();
    let openai = e.openai.as_ref().unwrap();
    assert_eq!(openai.roles[&Role::Generator].price, price(0.5, 1.5));
    assert_eq!(openai.roles[&Role::Reviser].price, price(0.5, 1.5), "the reviser is the generator's model");
    assert_eq!(openai.roles[&Role::Judge].price, None, "a model without a price has none, never 0");
    let pricing = e.pricing.as_ref().unwrap();
    assert_eq!((pricing.currency.as_str(), pricing.models.len()), ("EUR", 1), "only the models the run uses");
    assert_eq!(
        crate::experiment::pricing_warnings(&e).len(),
        1,
        "the judge is unpriced: {:?}",
        crate::experiment::pricing_warnings(&e)
    );

    // A shared price list over the file's table, model by model.
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("prices.toml");
    std::fs::write(&list, "currency = \"EUR\"\n[\"j\"]\ninput_per_mtok = 0\noutput_per_mtok = 0\n[\"g\"]\ninput_per_mtok = 2\noutput_per_mtok = 3\ncached_input_per_mtok = 1\n").unwrap();
    let path = dir.path().join("x.toml");
    std::fs::write(
        &path,
        format!(
            "{OPENAI}[pricing]\ncurrency = \"EUR\"\n[pricing.\"g\"]\ninput_per_mtok = 0.5\noutput_per_mtok = 1.5\n"
        ),
    )
    .unwrap();
    let e = Experiment::load(&path, &Overrides { pricing: Some(list.clone()), ..Overrides::default() }).unwrap();
    let roles = &e.openai.as_ref().unwrap().roles;
    assert_eq!(roles[&Role::Generator].price.unwrap().cached_input_per_mtok, Some(1.0));
    assert_eq!(roles[&Role::Judge].price, price(0.0, 0.0), "a local judge priced at zero by saying so");
    assert!(crate::experiment::pricing_warnings(&e).is_empty());
    // Without [pricing] the currency is the list's, or USD.
    std::fs::write(&path, OPENAI).unwrap();
    let e = Experiment::load(&path, &Overrides { pricing: Some(list.clone()), ..Overrides::default() }).unwrap();
    assert_eq!(e.pricing.unwrap().currency, "EUR");
    assert!(load(OPENAI).unwrap().pricing.is_none(), "no prices at all: no pricing");
    std::fs::write(&list, "[\"g\"]\ninput_per_mtok = 1\n").unwrap();
    let error =
        Experiment::load(&path, &Overrides { pricing: Some(list), ..Overrides::default() }).unwrap_err().to_string();
    assert!(error.contains("prices.toml \"g\": missing field `output_per_mtok`"), "{error}");
}

#[test]
fn pricing_mistakes_name_the_model_and_the_key() {
    let error = |extra: &str| load(&format!("{OPENAI}{extra}")).unwrap_err();
    let e = error("[pricing]\ncurency = \"EUR\"\n");
    assert!(e.contains("[pricing]: unknown field `curency`") && e.contains("expected one of `currency`"), "{e}");
    let e = error("[pricing.\"g\"]\ninput_per_mtok = 1\noutput_per_mtok = 1\nper_request = 2\n");
    assert!(e.contains("[pricing] \"g\": unknown field `per_request`"), "{e}");
    let e = error("[pricing.\"g\"]\ninput_per_mtok = -1\noutput_per_mtok = 1\n");
    assert!(e.contains("`input_per_mtok` = -1 must be a price per million tokens"), "{e}");
    // A price whose cost would overflow to infinity, and one that is not a number.
    let e = error("[pricing.\"g\"]\ninput_per_mtok = 1e308\noutput_per_mtok = 1\n");
    assert!(
        e.contains("[pricing] \"g\": `input_per_mtok` = 1e308 must be a price per million tokens from 0 to 1000000"),
        "{e}"
    );
    let e = error("[pricing.\"g\"]\ninput_per_mtok = 1\noutput_per_mtok = nan\n");
    assert!(e.contains("`output_per_mtok` = NaN must be a price"), "{e}");
    let e = error("[pricing.\"g\"]\ninput_per_mtok = 1\noutput_per_mtok = 1\ncached_input_per_mtok = inf\n");
    assert!(e.contains("`cached_input_per_mtok` = inf must be a price"), "{e}");
    assert!(load(&format!("{OPENAI}[pricing.\"g\"]\ninput_per_mtok = 1000000\noutput_per_mtok = 0\n")).is_ok());
    let e = error("[pricing]\ncurrency = \"\"\n");
    assert!(e.contains("`currency` = \"\" must be a currency's name"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("usd.toml");
    std::fs::write(&list, "currency = \"USD\"\n").unwrap();
    let path = dir.path().join("x.toml");
    std::fs::write(&path, format!("{OPENAI}[pricing]\ncurrency = \"EUR\"\n")).unwrap();
    let e =
        Experiment::load(&path, &Overrides { pricing: Some(list), ..Overrides::default() }).unwrap_err().to_string();
    assert!(
        e.contains("[pricing] prices in EUR but --pricing") && e.contains("in USD: a run's prices are in one currency"),
        "{e}"
    );
}

#[test]
fn a_budget_needs_a_price_for_every_call_it_counts() {
    let priced = "[pricing.\"g\"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n[pricing.\"j\"]\ninput_per_mtok = 0\noutput_per_mtok = 0\n";
    let e = load(&format!("{OPENAI}{priced}[budget]\nmax_cost = 2.5\nroles = {{ judge = 0.5 }}\n")).unwrap();
    let budget = e.budget.unwrap();
    assert_eq!((budget.max_cost, budget.roles[&critbench_openai::Role::Judge]), (Some(2.5), 0.5));
    let error = |extra: &str| load(&format!("{OPENAI}{extra}")).unwrap_err();
    let e = error("[pricing.\"g\"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n[budget]\nmax_cost = 1\n");
    assert!(e.contains("[budget] max_cost counts every role's calls, but the judge model `j` has no price"), "{e}");
    assert!(e.contains("add [pricing.\"j\"]"), "{e}");
    // A role budget needs that role's price only.
    let ok = load(&format!(
        "{OPENAI}[pricing.\"g\"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n[budget]\nroles = {{ generator = 1 }}\n"
    ));
    assert!(ok.is_ok(), "{ok:?}");
    assert!(
        error(&format!("{priced}[budget]\nmax_cost = 0\n"))
            .contains("`max_cost` = 0 must be an amount of money above 0")
    );
    assert!(error(&format!("{priced}[budget]\nroles = {{ critic = 1 }}\n")).contains("unknown role `critic`"));
    assert!(error(&format!("{priced}[budget]\nroles = {{ adjudicator = 1 }}\n")).contains("no adjudicator model"));
    assert!(error(&format!("{priced}[budget]\n")).contains("[budget] sets no budget"));
    assert!(error(&format!("{priced}[budget]\nmax_cost = 1\nmax_tokens = 5\n")).contains("unknown field `max_tokens`"));
    let offline = load(&format!("{MINIMAL}[budget]\nmax_cost = 1\n")).unwrap_err();
    assert!(offline.contains("this experiment makes none: it has no [openai] table"), "{offline}");
}

#[test]
fn the_typed_resolution_errors_read_as_the_messages_did() {
    let two_critics = format!("{MINIMAL}[[critics]]\nname = \"s\"\nplugin = \"rubric\"\n");
    let cases = [
        (
            format!("{MINIMAL}[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n"),
            "critics[1]: the name \"r\" is used twice (critics and evaluators share names); names label the outputs",
        ),
        (format!("{MINIMAL}timeout_s = 0\n"), "critics[0]: `timeout_s` = 0 must be more than 0 and at most 86400"),
        (
            format!("adjudicate = [1]\n{MINIMAL}"),
            "`adjudicate`: 1 is not an arm name; give true, false or a list of arms",
        ),
        (
            format!("adjudicate = \"x\"\n{MINIMAL}"),
            "`adjudicate` = \"x\"; give true (every arm), false, or a list of arms such as [\"feedback\"]",
        ),
        (
            format!("{two_critics}[sequential]\narms = [\"feedback\", \"no-feedback\"]\n[sequential.decides]\n"),
            "[sequential.decides]: `critic` is missing; the experiment has 2 critics, so name the one that decides \
             (r, s)",
        ),
        (
            format!("{MINIMAL}[pricing]\nfoo = 1\n"),
            "[pricing]: unknown field `foo` (a value, not a model's table): expected one of `currency`, or a \
             [pricing.\"MODEL\"] table with input_per_mtok and output_per_mtok",
        ),
        (
            format!("{MINIMAL}[budget]\nmax_cost = 1\n"),
            "[budget] counts what model calls cost, and this experiment makes none: it has no [openai] table (the \
             sim and scripted backends are free)",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(load(&text).unwrap_err(), format!("DIR/x.toml: {message}"), "{text}");
    }
}

#[test]
fn a_resolution_error_keeps_its_typed_cause() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.toml");
    std::fs::write(&path, format!("{MINIMAL}[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n")).unwrap();
    let error = Experiment::load(&path, &Overrides::default()).unwrap_err();
    let EngineError::Experiment { problem, .. } = error else { panic!("not an experiment error: {error}") };
    let ExperimentProblem::Invalid(ResolveError::Critic { at, problem }) = problem else {
        panic!("not a critic's problem: {problem}")
    };
    assert_eq!(at, "critics[1]");
    assert!(matches!(problem, CriticProblem::NameTwice(name) if name == "r"));
}

#[test]
fn a_pricing_file_that_cannot_be_read_or_parsed_is_named_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.toml");
    std::fs::write(&path, MINIMAL).unwrap();
    let load_with = |prices: &Path| {
        let overrides = Overrides { pricing: Some(prices.to_path_buf()), ..Overrides::default() };
        Experiment::load(&path, &overrides).unwrap_err().to_string()
    };
    let missing = dir.path().join("missing.toml");
    let message = load_with(&missing);
    let expected = format!("{}: --pricing {}: cannot read it: ", path.display(), missing.display());
    assert!(message.starts_with(&expected), "{message}");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "currency = \"USD\"\n[x\n").unwrap();
    let message = load_with(&bad);
    let expected = format!("{}: --pricing {}, line 2: ", path.display(), bad.display());
    assert!(message.starts_with(&expected), "{message}");
}

#[test]
fn a_toml_error_keeps_its_line_and_cause() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.toml");
    std::fs::write(&path, "name = \"x\"\n\nbackend = = \"sim\"\n").unwrap();
    let error = Experiment::load(&path, &Overrides::default()).unwrap_err();
    let EngineError::Experiment { problem, .. } = &error else { panic!("{error}") };
    assert_eq!(problem.line(), Some(3), "{error}");
    assert!(matches!(problem, ExperimentProblem::Toml { .. }));
    assert!(error.to_string().contains("line 3"), "{error}");
    let missing = Experiment::load(&dir.path().join("none.toml"), &Overrides::default()).unwrap_err();
    let EngineError::Experiment { problem, .. } = &missing else { panic!("{missing}") };
    assert!(std::error::Error::source(problem).is_some(), "the io::Error is kept");
}
