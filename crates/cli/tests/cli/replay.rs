//! Policy grids: a replayed sweep equals the direct one row for row, and `critbench replay`
//! evaluates new policies on a finished run without calling a model or a critic.

use crate::common::*;

/// The demo's 3 × 3 grid, swept by replay and directly: identical tables, far fewer calls.
#[test]
fn replayed_sweep_equals_direct_sweep_row_for_row() {
    let dir = tempfile::tempdir().unwrap();
    let (replayed, direct) = (dir.path().join("replay"), dir.path().join("direct"));
    for (out, sweep) in [(&replayed, "replay"), (&direct, "direct")] {
        ok(critbench(&["run", "--limit", "20", "--sweep", sweep, "--out", out.to_str().unwrap(), "-q"]));
    }
    let python = crate::common::python()
        .arg(repo().join("tests/python/same_rows.py"))
        .args([&replayed, &direct])
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
    assert!(
        python.status.success(),
        "replay and direct differ:\n{}{}",
        String::from_utf8_lossy(&python.stdout),
        String::from_utf8_lossy(&python.stderr)
    );
    let (r, d) = (manifest(&replayed), manifest(&direct));
    assert_eq!(r["sweep"], "replay");
    assert_eq!(d["sweep"], "direct");
    assert_eq!(r["critiques"], d["critiques"]);
    // A direct sweep generates and critiques every output round; a replayed one far fewer.
    assert_eq!(d["calls"]["critic"], d["critiques"]);
    let ratio = r["calls"]["ratio"].as_f64().unwrap();
    assert!(ratio >= 3.0, "replay saved only {ratio}×");
    assert_eq!(r["loops"], 20 * 2 * 4 * 3 * 9);
}

/// `critbench replay` on a grid run reproduces one of its configs exactly, and refuses a policy
/// that would need rounds the run never recorded.
#[test]
fn replay_command_reproduces_a_recorded_config_and_refuses_to_extrapolate() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    ok(critbench(&["run", "--limit", "15", "--out", run.to_str().unwrap(), "-q"]));
    let again = dir.path().join("again");
    let printed = ok(critbench(&[
        "replay",
        run.to_str().unwrap(),
        "--pass-score",
        "8",
        "--max-revisions",
        "3",
        "--out",
        again.to_str().unwrap(),
    ]));
    assert!(printed.contains("with no model or critic calls"), "{printed}");
    let normalize = |rows: Vec<critbench_storage::tables::OutcomeRow>| {
        let mut rows: Vec<_> = rows
            .into_iter()
            .filter(|r| r.config_id == "p8-r3-stall-e0")
            .map(|mut r| {
                r.run_id.clear();
                r
            })
            .collect();
        rows.sort_by(|a, b| (&a.critic, &a.task_id, &a.arm, a.epoch).cmp(&(&b.critic, &b.task_id, &b.arm, b.epoch)));
        rows
    };
    let (original, replayed) = (normalize(outcomes(&run)), normalize(outcomes(&again)));
    assert_eq!(original.len(), 15 * 2 * 4 * 3);
    assert_eq!(original, replayed);
    assert_eq!(manifest(&again)["calls"]["critic"], 0);
    // The evaluator of every draft (the simulator's `sim-truth`) is replayed: the config's rows are
    // the run's own. The demo's `cites-relevant` judged only the recorded answers: left out, said so.
    let evaluations = |run: &std::path::Path| {
        let mut rows: Vec<_> = critbench_storage::evaluations::read_evaluations(&run.join("evaluations.parquet"))
            .unwrap()
            .into_iter()
            .filter(|r| r.config_id == "p8-r3-stall-e0")
            .map(|mut r| {
                r.run_id.clear();
                r.critic_ms = 0.0;
                r
            })
            .collect();
        rows.sort_by(|a, b| {
            (&a.evaluator, &a.critic, &a.task_id, a.arm.as_str(), a.epoch, a.round).cmp(&(
                &b.evaluator,
                &b.critic,
                &b.task_id,
                b.arm.as_str(),
                b.epoch,
                b.round,
            ))
        });
        rows
    };
    let (judged, rejudged) = (evaluations(&run), evaluations(&again));
    let truth: Vec<_> = judged.iter().filter(|r| r.evaluator == "sim-truth").cloned().collect();
    assert!(truth.len() > original.len(), "every draft of the config judged: {}", truth.len());
    assert_eq!(rejudged, truth);
    let warnings = manifest(&again)["warnings"].to_string();
    assert!(warnings.contains("the evaluations of cites-relevant are not replayed"), "{warnings}");
    assert!(std::fs::read_to_string(again.join("evaluators.csv")).unwrap().contains(",sim-truth,"));

    // A new threshold inside the recording works; a larger cap than was recorded does not.
    ok(critbench(&[
        "replay",
        run.to_str().unwrap(),
        "--pass-score",
        "7.5,8.5",
        "--max-revisions",
        "5",
        "--out",
        dir.path().join("new").to_str().unwrap(),
    ]));
    let refused = usage_error(
        critbench(&[
            "replay",
            run.to_str().unwrap(),
            "--max-revisions",
            "9",
            "--out",
            dir.path().join("x").to_str().unwrap(),
        ]),
        dir.path(),
    );
    assert!(refused.contains("goes beyond what the run recorded"), "{refused}");
    assert!(refused.contains("(the run's configs go up to max_revisions = 5)"), "{refused}");
}

/// A threshold the recording stopped short of is refused with the fix that works: the threshold
/// in the run's grid, not a larger cap (which records no more); the fix, run, makes the replay pass.
#[test]
fn a_threshold_beyond_the_recording_asks_for_the_threshold_in_the_grid() {
    let dir = tempfile::tempdir().unwrap();
    let papers = repo().join("datasets/papers.jsonl");
    let file = |name: &str, policy: &str| {
        experiment(
            dir.path(),
            name,
            &format!(
                "name = \"t\"\ndataset = {papers:?}\nbackend = \"sim\"\narms = [\"feedback\"]\n\
                 [[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\n[policy]\n{policy}\n"
            ),
        )
    };
    let replay = |run: &std::path::Path| {
        let out = dir.path().join("replayed");
        critbench(&[
            "replay",
            run.to_str().unwrap(),
            "--pass-score",
            "9.5",
            "--out",
            out.to_str().unwrap(),
            "--overwrite",
        ])
    };
    for (name, policy) in
        [("r3.toml", "pass_score = 8\nmax_revisions = 3"), ("r5.toml", "pass_score = 8\nmax_revisions = 5")]
    {
        let run = dir.path().join(name.trim_end_matches(".toml"));
        ok(critbench(&[
            "run",
            file(name, policy).to_str().unwrap(),
            "--limit",
            "15",
            "--out",
            run.to_str().unwrap(),
            "-q",
        ]));
        let refused = usage_error(replay(&run), dir.path());
        assert!(refused.contains("goes beyond what the run recorded"), "{refused}");
        assert!(refused.contains("include pass_score = 9.5 in the experiment's [policy] grid"), "{refused}");
        assert!(!refused.contains("with a larger max_revisions"), "a larger cap records no more:\n{refused}");
    }
    let run = dir.path().join("grid");
    let grid = file("grid.toml", "pass_score = [8, 9.5]\nmax_revisions = 3");
    ok(critbench(&["run", grid.to_str().unwrap(), "--limit", "15", "--out", run.to_str().unwrap(), "-q"]));
    ok(replay(&run));
}

/// A critic whose critiques depend on the policy cannot serve a grid from one recording.
#[test]
fn replay_is_refused_for_a_policy_dependent_critic() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("dependent.c");
    std::fs::write(
        &source,
        r#"#include "critbench.h"
#include <stdlib.h>
#include <string.h>
static int32_t create(critbench_str c, const critbench_host *h, void **instance, critbench_buffer *e) {
    (void)c; (void)h; (void)e; *instance = malloc(1); return CRITBENCH_OK;
}
static int32_t critique(void *instance, critbench_str request, critbench_buffer *out) {
    (void)instance; (void)request;
    static const char answer[] = "{\"score\": 5}";
    out->len = sizeof answer - 1; out->ptr = malloc(out->len); memcpy(out->ptr, answer, out->len);
    return CRITBENCH_OK;
}
static void destroy(void *instance) { free(instance); }
static void free_buffer(critbench_buffer buffer) { free(buffer.ptr); }
static const critbench_critic_descriptor DESCRIPTOR = { CRITBENCH_ABI_VERSION,
    CRITBENCH_FLAG_THREAD_SAFE | CRITBENCH_FLAG_POLICY_DEPENDENT, { (const uint8_t *)"dependent", 9 },
    { (const uint8_t *)"1.0.0", 5 }, 0.0, 10.0, { NULL, 0 }, create, critique, destroy, free_buffer, NULL, NULL, NULL };
const critbench_critic_descriptor *critbench_critic(void) { return &DESCRIPTOR; }
"#,
    )
    .unwrap();
    let library = compile_c_plugin(&source, dir.path(), "dependent");
    let text = |sweep: &str| {
        format!(
            "name = \"dep\"\ndataset = \"{}\"\nbackend = \"scripted\"\nsweep = \"{sweep}\"\n\
             [[critics]]\nname = \"dep\"\nplugin = \"{}\"\n[policy]\nmax_revisions = [1, 2]\n",
            repo().join("datasets/essays.jsonl").display(),
            library.display()
        )
    };
    let replayed = experiment(dir.path(), "replay.toml", &text("replay"));
    let message = usage_error(
        critbench(&["run", replayed.to_str().unwrap(), "--out", dir.path().join("a").to_str().unwrap()]),
        dir.path(),
    );
    assert!(message.contains("depend on the loop policy"), "{message}");
    assert!(message.contains("sweep = \"direct\""), "{message}");
    let direct = experiment(dir.path(), "direct.toml", &text("direct"));
    ok(critbench(&["run", direct.to_str().unwrap(), "--out", dir.path().join("b").to_str().unwrap(), "-q"]));
    let refused = usage_error(critbench(&["replay", dir.path().join("b").to_str().unwrap()]), dir.path());
    assert!(refused.contains("depend on the loop policy"), "{refused}");
}
