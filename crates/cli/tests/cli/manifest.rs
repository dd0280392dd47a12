//! manifest.json is one typed record, and a corrupt one is the same clear error for every
//! command that reads it.

use crate::common::*;

#[test]
fn a_corrupt_manifest_is_one_clear_error_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    ok(critbench(&["run", "experiments/essays.toml", "--quiet", "--out", run.to_str().unwrap()]));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["manifest_version"], 1);
    assert_eq!(manifest["status"], "finished");
    std::fs::write(run.join("manifest.json"), "{\"run_id\": ").unwrap();
    let run_arg = run.to_str().unwrap();
    let replay_out = dir.path().join("replayed");
    for args in [
        vec!["report", run_arg],
        vec!["replay", run_arg, "--out", replay_out.to_str().unwrap()],
        vec!["compare", run_arg, run_arg, "--out", dir.path().join("cmp").to_str().unwrap()],
    ] {
        let message = usage_error(critbench(&args), dir.path());
        assert!(
            message.contains("DIR/run/manifest.json is not a critbench manifest") && message.contains("hint:"),
            "critbench {}: {message}",
            args[0]
        );
    }
}
