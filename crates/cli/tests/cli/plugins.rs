//! Plugins through the C ABI: the Rust built-ins, a plugin written in C, and broken ones.

use std::path::Path;

use crate::common::*;

#[test]
fn plugins_check_prints_name_version_and_range_for_each_built_in() {
    for (name, range) in
        [("rubric", "0–10"), ("evidence", "0–10"), ("scripted", "0–10"), ("faulty", "0–10"), ("sim-truth", "0–10")]
    {
        let printed = ok(critbench(&["plugins", "check", name]));
        assert!(printed.contains(&format!("name:        {name}\n")), "{printed}");
        assert!(printed.contains("version:     1.0.0\n"), "{printed}");
        assert!(printed.contains(&format!("score range: {range}\n")), "{printed}");
        assert!(printed.contains("sample:      score "), "{printed}");
        assert!(printed.trim_end().ends_with("ok"), "{printed}");
    }
}

#[test]
fn plugins_list_marks_the_built_ins_and_finds_the_libraries() {
    let printed = ok(critbench(&["plugins", "list"]));
    let built_in = |name: &str| printed.lines().any(|l| l.starts_with(&format!("{name} ")) && l.ends_with(" built in"));
    for name in ["rubric", "evidence", "scripted", "llm-judge"] {
        assert!(built_in(name), "{name} is not listed as built in:\n{printed}");
    }
    // Test plugins are libraries only, found beside the binary.
    for name in ["faulty", "typed-issues"] {
        assert!(!built_in(name), "{printed}");
        assert!(
            printed.lines().any(|l| l.starts_with(&format!("{name} ")) && l.contains(std::env::consts::DLL_SUFFIX)),
            "{name} missing:\n{printed}"
        );
    }
    // The built-ins' own libraries, built beside the binary, are shadowed for a bare name.
    let rubric_library = printed.lines().find(|l| l.starts_with("rubric ") && !l.ends_with(" built in"));
    assert!(rubric_library.is_some_and(|l| l.contains("shadowed by the built-in")), "{printed}");
}

#[test]
fn plugins_check_says_a_built_in_is_built_in_and_a_library_by_path_is_not() {
    let printed = ok(critbench(&["plugins", "check", "rubric"]));
    assert!(printed.starts_with("plugin:      built in ("), "{printed}");
    let library = binary().parent().unwrap().join(format!(
        "{}critbench_rubric{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let printed = ok(critbench(&["plugins", "check", library.to_str().unwrap()]));
    assert!(printed.starts_with(&format!("plugin:      {}\n", library.display())), "{printed}");
    assert!(printed.contains("name:        rubric\n"), "{printed}");
}

#[test]
fn a_plugin_written_in_c_loads_checks_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let library = compile_c_plugin(&repo().join("plugins/c-example/length_critic.c"), dir.path(), "length_critic");
    let printed = ok(critbench(&["plugins", "check", library.to_str().unwrap()]));
    assert!(printed.contains("name:        length\n"), "{printed}");
    assert!(printed.contains("score range: 0–10\n"), "{printed}");

    let file = experiment(
        dir.path(),
        "c.toml",
        &format!(
            "name = \"c\"\ndataset = \"{}\"\nbackend = \"scripted\"\narms = [\"feedback\", \"single\"]\n\
             [[critics]]\nname = \"length\"\nplugin = \"{}\"\nconfig = {{ target_words = 120 }}\n",
            repo().join("datasets/essays.jsonl").display(),
            library.display()
        ),
    );
    let run = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", run.to_str().unwrap(), "-q"]));
    let rows = outcomes(&run);
    assert_eq!(rows.len(), 36 * 2);
    assert!(rows.iter().all(|r| r.critic == "length" && r.critic_errors == 0));
    assert!(rows.iter().all(|r| (0.0..=10.0).contains(&r.first_score)));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["plugins"][0]["name"], "length");

    let rejected = usage_error(
        critbench(&["plugins", "check", library.to_str().unwrap(), "--config", "{\"target_words\": -3}"]),
        dir.path(),
    );
    assert!(rejected.starts_with("error: plugin `length` rejected its config"), "{rejected}");
}

fn compile_source(dir: &Path, name: &str, source: &str) -> std::path::PathBuf {
    let file = dir.join(format!("{name}.c"));
    std::fs::write(&file, source).unwrap();
    compile_c_plugin(&file, dir, name)
}

#[test]
fn a_library_without_the_entry_symbol_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let library = compile_source(dir.path(), "empty", "int not_a_plugin(void) { return 0; }\n");
    let message = usage_error(critbench(&["plugins", "check", library.to_str().unwrap()]), dir.path());
    assert_eq!(
        message.trim_end(),
        "error: DIR/libempty.so is not a critbench plugin: it does not export the symbol `critbench_critic`"
    );
}

#[test]
fn a_library_of_an_earlier_abi_is_refused_naming_what_it_exports_and_what_to_change() {
    let dir = tempfile::tempdir().unwrap();
    // What a plugin built for ABI version 1 or 2 exported: no `critbench_critic`.
    let library = compile_source(
        dir.path(),
        "old",
        r#"#include <stdint.h>
typedef struct { uint32_t abi_version; } old_descriptor;
static const old_descriptor D1 = { 1u }, D2 = { 2u };
const old_descriptor *critbench_critic_v1(void) { return &D1; }
const old_descriptor *critbench_critic_v2(void) { return &D2; }
"#,
    );
    let lib = library.to_str().unwrap();
    let expected = "error: DIR/libold.so exports `critbench_critic_v1` and `critbench_critic_v2`, of the critbench ABI \
                    versions 1 and 2, which this critbench no longer loads; it loads one entry point, \
                    `critbench_critic`, returning a `critbench_critic_descriptor` of ABI version 3: rebuild the \
                    plugin against this critbench's `critbench.h`";
    let checked = usage_error(critbench(&["plugins", "check", lib]), dir.path());
    assert!(checked.starts_with(expected), "{checked}");
    let file = experiment(
        dir.path(),
        "old.toml",
        &format!(
            "name = \"old\"\ndataset = \"{}\"\n[[critics]]\nname = \"old\"\nplugin = \"{lib}\"\n",
            repo().join("datasets/essays.jsonl").display()
        ),
    );
    let out = dir.path().join("run");
    for isolation in [&[][..], &["--isolate-plugins"][..]] {
        let mut args = vec!["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"];
        args.extend_from_slice(isolation);
        let message = usage_error(critbench(&args), dir.path());
        assert!(message.contains(&expected["error: ".len()..]), "{isolation:?}: {message}");
    }
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn a_descriptor_with_some_but_not_all_task_functions_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let library = compile_source(
        dir.path(),
        "halfway",
        r#"#include "critbench.h"
static int32_t create(critbench_str c, const critbench_host *h, void **instance, critbench_buffer *e) {
    (void)c; (void)h; (void)e; *instance = (void *)1; return CRITBENCH_OK;
}
static int32_t critique(void *i, critbench_str r, critbench_buffer *o) { (void)i; (void)r; (void)o; return CRITBENCH_ERROR; }
static void destroy(void *i) { (void)i; }
static void free_buffer(critbench_buffer b) { (void)b; }
static int32_t open_task(void *i, critbench_str t, void **h, critbench_buffer *e) {
    (void)i; (void)t; (void)e; *h = (void *)1; return CRITBENCH_OK;
}
static const critbench_critic_descriptor D = {CRITBENCH_ABI_VERSION, 0, {(const uint8_t *)"halfway", 7},
    {(const uint8_t *)"1", 1}, 0.0, 1.0, {0, 0}, create, critique, destroy, free_buffer, open_task, 0, 0};
const critbench_critic_descriptor *critbench_critic(void) { return &D; }
"#,
    );
    let message = usage_error(critbench(&["plugins", "check", library.to_str().unwrap()]), dir.path());
    assert_eq!(
        message.trim_end(),
        "error: plugin DIR/libhalfway.so has an invalid descriptor: `critique_task` and `close_task` are NULL function \
         pointers in `halfway`, but not all three task functions; set open_task, critique_task and close_task \
         together (the plugin reads a task once per loop) or leave all three NULL (every request carries its task)"
    );
}

#[test]
fn a_plugin_of_another_abi_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let library = compile_source(
        dir.path(),
        "future",
        r#"#include "critbench.h"
static const critbench_critic_descriptor DESCRIPTOR = { 99u, 0u, { (const uint8_t *)"future", 6 },
    { (const uint8_t *)"9.0", 3 }, 0.0, 1.0, { 0, 0 }, 0, 0, 0, 0, 0, 0, 0 };
const critbench_critic_descriptor *critbench_critic(void) { return &DESCRIPTOR; }
"#,
    );
    let message = usage_error(critbench(&["plugins", "check", library.to_str().unwrap()]), dir.path());
    assert!(message.contains("speaks critbench ABI version 99, but this critbench speaks version 3"), "{message}");
}

#[test]
fn a_plugin_that_panics_or_fails_costs_only_its_own_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(
        dir.path(),
        "faulty.toml",
        &format!(
            "name = \"faulty\"\ndataset = \"{}\"\nbackend = \"scripted\"\narms = [\"feedback\"]\n\
             [[critics]]\nname = \"faulty\"\nplugin = \"faulty\"\n\
             config = {{ panic_on = [\"essay-001\"], error_on = [\"essay-002\"], malformed_on = [\"essay-003\"], \
             out_of_range_on = [\"essay-004\"], flaky_on = [\"essay-005\"] }}\n[policy]\npass_score = 0\n",
            repo().join("datasets/essays.jsonl").display()
        ),
    );
    let run = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", run.to_str().unwrap(), "-q"]));
    let rows = outcomes(&run);
    assert_eq!(rows.len(), 36, "every task has its outcome");
    for row in &rows {
        let broken = ["essay-001", "essay-002", "essay-003", "essay-004"].contains(&row.task_id.as_str());
        if broken {
            // A failed critique scores the range minimum and never passes, even at pass_score 0.
            assert!(!row.passed, "{row:?}");
            assert_eq!(row.first_score, 0.0);
            assert!(row.critic_errors >= 1, "{row:?}");
        } else {
            assert!(row.passed, "{row:?}");
            assert_eq!(row.critic_errors, 0, "{row:?}");
        }
    }
    // The trajectory rows say what went wrong, after three attempts.
    let python = crate::common::python()
        .args([
            "-c",
            "import sys, pyarrow.parquet as pq; t = pq.read_table(sys.argv[1]).to_pylist(); \
            [print(r['task_id'], r['critic_attempts'], r['critic_error']) for r in t if r['round'] == 0]",
        ])
        .arg(run.join("trajectories.parquet"))
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) with pyarrow");
    let text = String::from_utf8_lossy(&python.stdout);
    assert!(text.contains("essay-001 3 critic panicked: deliberate panic on task essay-001"), "{text}");
    assert!(text.contains("essay-002 3 deliberate error on task essay-002"), "{text}");
    assert!(text.contains("essay-003 3 malformed critique"), "{text}");
    assert!(text.contains("essay-004 3 score 42 is outside the critic's range 0–10"), "{text}");
    assert!(text.contains("essay-005 2 None"), "{text}");
}

/// A plugin that does not declare itself thread-safe is never called from two threads at once:
/// this C critic answers with an error whenever it finds another call already inside it.
#[test]
fn calls_to_a_plugin_that_is_not_thread_safe_are_serialized() {
    let dir = tempfile::tempdir().unwrap();
    let library = compile_source(
        dir.path(),
        "single_threaded",
        r#"#define _POSIX_C_SOURCE 199309L
#include "critbench.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static atomic_int inside = 0;

static critbench_buffer text(const char *s) {
    size_t n = strlen(s);
    critbench_buffer b = { malloc(n), n };
    memcpy(b.ptr, s, n);
    return b;
}
static int32_t create(critbench_str config, const critbench_host *host, void **instance, critbench_buffer *error) {
    (void)config; (void)host; (void)error;
    *instance = malloc(1);
    return CRITBENCH_OK;
}
static int32_t critique(void *instance, critbench_str request, critbench_buffer *out) {
    (void)instance; (void)request;
    if (atomic_fetch_add(&inside, 1) != 0) {
        atomic_fetch_sub(&inside, 1);
        *out = text("called from two threads at once");
        return CRITBENCH_ERROR;
    }
    struct timespec pause = { 0, 100000 };
    nanosleep(&pause, NULL);
    atomic_fetch_sub(&inside, 1);
    *out = text("{\"score\": 5}");
    return CRITBENCH_OK;
}
static void destroy(void *instance) { free(instance); }
static void free_buffer(critbench_buffer buffer) { free(buffer.ptr); }
static const critbench_critic_descriptor DESCRIPTOR = { CRITBENCH_ABI_VERSION, 0u,
    { (const uint8_t *)"single", 6 }, { (const uint8_t *)"1.0.0", 5 }, 0.0, 10.0, { NULL, 0 },
    create, critique, destroy, free_buffer, NULL, NULL, NULL };
const critbench_critic_descriptor *critbench_critic(void) { return &DESCRIPTOR; }
"#,
    );
    let file = experiment(
        dir.path(),
        "single.toml",
        &format!(
            "name = \"single\"\ndataset = \"{}\"\nbackend = \"scripted\"\nepochs = 3\n\
             [[critics]]\nname = \"single\"\nplugin = \"{}\"\n[policy]\npass_score = 10\nstall = false\n",
            repo().join("datasets/essays.jsonl").display(),
            library.display()
        ),
    );
    let run = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", run.to_str().unwrap(), "--jobs", "2", "-q"]));
    let rows = outcomes(&run);
    assert_eq!(rows.len(), 36 * 3 * 3);
    assert_eq!(rows.iter().map(|r| r.critic_errors).sum::<u32>(), 0);
}

/// A critic that never answers makes a run whose numbers measure nothing: exit 1, saying so,
/// with every row still written.
#[test]
fn a_critic_that_fails_every_critique_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<String> = (1..=36).map(|i| format!("\"essay-{i:03}\"")).collect();
    let file = experiment(
        dir.path(),
        "dead.toml",
        &format!(
            "name = \"dead\"\ndataset = \"{}\"\nbackend = \"scripted\"\narms = [\"feedback\"]\n\
             [[critics]]\nname = \"dead\"\nplugin = \"faulty\"\nconfig = {{ error_on = [{}] }}\n",
            repo().join("datasets/essays.jsonl").display(),
            ids.join(", ")
        ),
    );
    let run = dir.path().join("run");
    let output = critbench(&["run", file.to_str().unwrap(), "--out", run.to_str().unwrap(), "-q"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("critic `dead` failed on every one of its 144 critique(s)"), "{message}");
    assert!(message.contains("measure nothing"), "{message}");
    assert_eq!(outcomes(&run).len(), 36, "the rows are written all the same");
}

/// `llm-judge` pointed at an endpoint where nothing listens: every critique fails, and the run
/// says its numbers measure nothing instead of reporting 0% against 0%.
#[test]
fn a_dead_judge_endpoint_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    // A port that was free a moment ago: nothing answers there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let file = experiment(
        dir.path(),
        "dead-judge.toml",
        &format!(
            "name = \"dead-judge\"\ndataset = \"{}\"\nbackend = \"scripted\"\narms = [\"feedback\"]\n\
             [[critics]]\nname = \"judge\"\nplugin = \"llm-judge\"\n[policy]\nmax_revisions = 1\n\
             [openai]\nbase_url = \"http://127.0.0.1:{port}/v1\"\ntimeout_s = 1.0\nmax_retries = 1\nretry_base_ms = 1\n\
             models = {{ judge = \"judge-m\" }}\n",
            repo().join("datasets/essays.jsonl").display()
        ),
    );
    let run = dir.path().join("run");
    let output =
        critbench(&["run", file.to_str().unwrap(), "--out", run.to_str().unwrap(), "-q", "--limit", "3", "--no-cache"]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert!(message.contains("critic `judge` failed on every one of its"), "{message}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["openai"]["http"]["ok"], 0);
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains("0 answered"), "the report's notes say what the manifest records:\n{report}");
}

#[test]
fn a_plugin_whose_create_succeeds_without_an_instance_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let source = r#"
#include "critbench.h"
static int32_t create(critbench_str c, const critbench_host *h, void **instance, critbench_buffer *e) {
    (void)c; (void)h; (void)e; *instance = 0; return CRITBENCH_OK;
}
static int32_t critique(void *i, critbench_str r, critbench_buffer *o) { (void)i; (void)r; (void)o; return CRITBENCH_ERROR; }
static void destroy(void *i) { (void)i; }
static void free_buffer(critbench_buffer b) { (void)b; }
static const critbench_critic_descriptor D = {CRITBENCH_ABI_VERSION, 0, {(const uint8_t *)"null", 4},
    {(const uint8_t *)"1", 1}, 0.0, 1.0, {0, 0}, create, critique, destroy, free_buffer, 0, 0, 0};
const critbench_critic_descriptor *critbench_critic(void) { return &D; }
"#;
    let library = compile_source(dir.path(), "null", source);
    let message = usage_error(critbench(&["plugins", "check", library.to_str().unwrap()]), dir.path());
    assert_eq!(
        message.trim_end(),
        "error: plugin `null` returned success from `create` but no instance (a NULL pointer); `create` must set \
         `*instance` to a non-NULL pointer (see critbench.h)"
    );
}
