//! Critics whose descriptor sets the task functions (docs/REFERENCE.md, The ABI): such a critic is
//! shown each loop's task once and then only each round's draft; it records the same rows as the
//! same critic sent every request whole, and a task it refuses to open costs that loop's rounds
//! only.

use std::path::{Path, PathBuf};

use crate::common::*;

/// A critic in C that reads tasks once, non-thread-safe: it scores round R as 5 + R, refuses to
/// open the task `essay-003`, and answers every whole request (`critique`) with an error, so a run
/// that ever sends it one shows it. A round asked while another task is still open (a handle the
/// host did not close) is an error too.
const TASK_CRITIC: &str = r#"#include <stdlib.h>
#include <string.h>
#include "critbench.h"

static int OPEN = 0;
static char STATE = 0;

static critbench_buffer text(const char *message) {
    critbench_buffer buffer;
    buffer.len = strlen(message);
    buffer.ptr = malloc(buffer.len);
    memcpy(buffer.ptr, message, buffer.len);
    return buffer;
}

/* Whether `needle` occurs in the `len` bytes at `bytes`. */
static int contains(const uint8_t *bytes, size_t len, const char *needle) {
    size_t n = strlen(needle), i;
    for (i = 0; i + n <= len; i++) {
        if (memcmp(bytes + i, needle, n) == 0) return 1;
    }
    return 0;
}

static int32_t create(critbench_str config, const critbench_host *host, void **instance, critbench_buffer *error) {
    (void)config; (void)host; (void)error;
    *instance = &STATE;
    return CRITBENCH_OK;
}

static int32_t critique(void *instance, critbench_str request, critbench_buffer *out) {
    (void)instance; (void)request;
    *out = text("a whole request");
    return CRITBENCH_ERROR;
}

static void destroy(void *instance) { (void)instance; }

static void free_buffer(critbench_buffer buffer) { free(buffer.ptr); }

static int32_t open_task(void *instance, critbench_str task, void **task_handle, critbench_buffer *error) {
    (void)instance;
    if (contains(task.ptr, task.len, "\"id\":\"essay-003\"")) {
        *error = text("essay-003 is not a task this critic opens");
        return CRITBENCH_ERROR;
    }
    *task_handle = malloc(1);
    OPEN += 1;
    return CRITBENCH_OK;
}

static int32_t critique_task(void *instance, void *task_handle, critbench_str request, critbench_buffer *out) {
    const char *scores[] = {"{\"score\": 5}", "{\"score\": 6}", "{\"score\": 7}", "{\"score\": 8}"};
    int round;
    (void)instance; (void)task_handle;
    if (OPEN != 1) {
        *out = text("another task is still open");
        return CRITBENCH_ERROR;
    }
    if (!contains(request.ptr, request.len, "\"request_version\":2") || contains(request.ptr, request.len, "\"task\"")) {
        *out = text("not a task request");
        return CRITBENCH_ERROR;
    }
    for (round = 0; round < 3; round++) {
        char key[16] = "\"round\":0";
        key[8] = (char)('0' + round);
        if (contains(request.ptr, request.len, key)) break;
    }
    *out = text(scores[round]);
    return CRITBENCH_OK;
}

static void close_task(void *instance, void *task_handle) {
    (void)instance;
    free(task_handle);
    OPEN -= 1;
}

static const critbench_critic_descriptor DESCRIPTOR = {
    CRITBENCH_ABI_VERSION, 0u, { (const uint8_t *)"by-task", 7 }, { (const uint8_t *)"1.0", 3 }, 0.0, 10.0, { NULL, 0 },
    create, critique, destroy, free_buffer, open_task, critique_task, close_task,
};

const critbench_critic_descriptor *critbench_critic(void) { return &DESCRIPTOR; }
"#;

#[test]
fn a_critic_that_reads_tasks_sees_each_task_once_and_a_task_it_cannot_open_costs_only_its_loop() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("by_task.c");
    std::fs::write(&source, TASK_CRITIC).unwrap();
    let library = compile_c_plugin(&source, dir.path(), "by_task");
    let file = experiment(
        dir.path(),
        "by-task.toml",
        &format!(
            "name = \"by-task\"\ndataset = \"{}\"\nbackend = \"scripted\"\narms = [\"feedback\", \"no-feedback\"]\n\
             [[critics]]\nname = \"by-task\"\nplugin = \"{}\"\n[policy]\npass_score = 8\nmax_revisions = 3\n",
            repo().join("datasets/essays.jsonl").display(),
            library.display()
        ),
    );
    for jobs in ["1", "2"] {
        let run = dir.path().join(format!("run-{jobs}"));
        ok(critbench(&["run", file.to_str().unwrap(), "--out", run.to_str().unwrap(), "-q", "--jobs", jobs]));
        let rows = outcomes(&run);
        assert_eq!(rows.len(), 36 * 2, "every loop has its outcome");
        for row in &rows {
            if row.task_id == "essay-003" {
                assert!(!row.passed, "{row:?}");
                assert!(row.critic_errors >= 1, "{row:?}");
                assert_eq!(row.critic_errors, row.rounds, "every round failed to open its task: {row:?}");
            } else {
                assert_eq!(row.critic_errors, 0, "{row:?}");
                assert!(row.passed && row.rounds == 4 && row.last_score == 8.0, "scored 5, 6, 7, then 8: {row:?}");
            }
        }
        let loops = trajectories_without_clock(&run);
        let refused = loops.iter().filter(|l| l.task_id == "essay-003").flat_map(|l| &l.rounds);
        for round in refused {
            assert_eq!(round.critic_attempts, 3);
            assert_eq!(round.critic_error.as_deref(), Some("essay-003 is not a task this critic opens"));
        }
    }
}

/// A library that hands out the scripted critic's own descriptor, loaded from its shared library,
/// with the task functions left NULL: the same critic, sent every request whole.
fn whole_requests_only(dir: &Path, scripted: &Path) -> PathBuf {
    let source = dir.join("scripted_whole.c");
    let text = format!(
        r#"#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stddef.h>
#include "critbench.h"

typedef const critbench_critic_descriptor *(*entry_point)(void);

static critbench_critic_descriptor WHOLE;

const critbench_critic_descriptor *critbench_critic(void) {{
    void *library = dlopen({scripted:?}, RTLD_NOW | RTLD_LOCAL);
    entry_point entry;
    void *symbol;
    if (library == NULL) return NULL;
    symbol = dlsym(library, "critbench_critic");
    if (symbol == NULL) return NULL;
    *(void **)&entry = symbol;
    WHOLE = *entry();
    WHOLE.open_task = NULL;
    WHOLE.critique_task = NULL;
    WHOLE.close_task = NULL;
    return &WHOLE;
}}
"#
    );
    std::fs::write(&source, text).unwrap();
    compile_c_plugin(&source, dir, "scripted_whole")
}

#[test]
fn the_scripted_critic_by_task_and_by_whole_requests_records_the_same_rows() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.jsonl");
    bench_tasks("scripted", "300", &tasks);
    let text = std::fs::read_to_string(repo().join("experiments/bench-distinct.toml")).unwrap();
    let scripted = built_plugin("scripted");
    let shim = whole_requests_only(dir.path(), &scripted);
    let whole = text.replace("plugin = \"scripted\"", &format!("plugin = {:?}", shim.to_str().unwrap()));
    let by_task = text.replace("plugin = \"scripted\"", &format!("plugin = {:?}", scripted.to_str().unwrap()));
    assert_ne!(whole, text, "the bench experiment names the scripted plugin");
    let files = [("builtin", text), ("whole", whole), ("by-task", by_task)];
    let mut runs = Vec::new();
    for (name, text) in &files {
        let file = experiment(dir.path(), &format!("{name}.toml"), text);
        for jobs in ["1", "2"] {
            let out = dir.path().join(format!("{name}-{jobs}"));
            ok(critbench(&[
                "run",
                file.to_str().unwrap(),
                "--quiet",
                "--dataset",
                tasks.to_str().unwrap(),
                "--jobs",
                jobs,
                "--out",
                out.to_str().unwrap(),
            ]));
            runs.push(out);
        }
    }
    let expected = (outcomes_without_clock(&runs[0]), trajectories_without_clock(&runs[0]));
    assert_eq!(expected.0.len(), 2 * 300, "two arms of every task");
    assert!(expected.1.iter().flat_map(|l| &l.rounds).all(|r| r.critic_error.is_none()));
    for other in &runs[1..] {
        assert!(outcomes_without_clock(other) == expected.0, "{}: outcomes differ", other.display());
        assert!(trajectories_without_clock(other) == expected.1, "{}: trajectories differ", other.display());
    }
}
