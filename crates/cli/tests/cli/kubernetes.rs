//! deploy/kubernetes/indexed-job.yaml: valid YAML (read by PyYAML) describing an Indexed Job whose
//! completions are the shards, on a shared volume; its container command run for real, once per
//! JOB_COMPLETION_INDEX, with the real binary, then merged and compared with the run in one piece.

use std::path::Path;
use std::process::Command;

use crate::common::*;

fn documents() -> Vec<serde_json::Value> {
    let script = "import json, sys, yaml\nprint(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))";
    let output = crate::common::python()
        .args(["-c", script])
        .arg(repo().join("deploy/kubernetes/indexed-job.yaml"))
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
    assert!(output.status.success(), "not valid YAML (or PyYAML missing):\n{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).unwrap()
}

fn env<'a>(container: &'a serde_json::Value, name: &str) -> &'a str {
    container["env"]
        .as_array()
        .and_then(|vars| vars.iter().find(|v| v["name"] == name))
        .and_then(|v| v["value"].as_str())
        .unwrap_or_else(|| panic!("the container sets no {name}"))
}

/// A small copy of the demo (10 tasks a file), so that each pod's run is quick.
fn small_demo(dir: &Path) -> std::path::PathBuf {
    let mut datasets = Vec::new();
    for name in ["papers", "rag"] {
        let text = std::fs::read_to_string(repo().join(format!("datasets/{name}.jsonl"))).unwrap();
        let path = dir.join(format!("{name}.jsonl"));
        std::fs::write(&path, text.lines().take(10).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        datasets.push(format!("{:?}", path.display().to_string()));
    }
    let demo = std::fs::read_to_string(repo().join("experiments/demo.toml")).unwrap();
    let demo: String =
        demo.lines()
            .map(|line| {
                if line.starts_with("dataset =") { format!("dataset = [{}]", datasets.join(", ")) } else { line.into() }
            })
            .collect::<Vec<_>>()
            .join("\n");
    let path = dir.join("demo.toml");
    std::fs::write(&path, demo).unwrap();
    path
}

#[test]
fn the_indexed_job_runs_one_shard_per_completion_index_and_merges() {
    require_plugins();
    let documents = documents();
    let job = documents.iter().find(|d| d["metadata"]["labels"]["critbench/step"] == "shards").expect("a shards Job");
    let merge = documents.iter().find(|d| d["metadata"]["labels"]["critbench/step"] == "merge").expect("a merge Job");
    assert_eq!(job["apiVersion"], "batch/v1");
    assert_eq!(job["kind"], "Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let completions = spec["completions"].as_u64().unwrap();
    let pod = &spec["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(env(container, "CRITBENCH_SHARDS"), completions.to_string(), "CRITBENCH_SHARDS must equal completions");
    let run_dir = env(container, "RUN_DIR");
    let mount = &container["volumeMounts"][0];
    assert!(run_dir.starts_with(mount["mountPath"].as_str().unwrap()), "the run directory is on the shared volume");
    let volume = pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == mount["name"]).unwrap();
    let claim = &volume["persistentVolumeClaim"]["claimName"];
    assert!(claim.is_string());
    assert_eq!(merge["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"], *claim);
    assert_eq!(
        merge["spec"]["template"]["spec"]["containers"][0]["command"],
        serde_json::json!(["critbench", "merge", run_dir])
    );
    assert_eq!(container["command"], serde_json::json!(["/bin/sh", "-c"]));
    let script = container["args"][0].as_str().unwrap();

    // Each pod's command, as Kubernetes would run it: JOB_COMPLETION_INDEX set, the rest from env.
    let dir = tempfile::tempdir().unwrap();
    let experiment = small_demo(dir.path());
    let (whole, sharded) = (dir.path().join("whole"), dir.path().join("sharded"));
    let path = format!("{}:{}", binary().parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let pod = |index: u64| {
        let mut command = Command::new("/bin/sh");
        command
            .args(["-c", script])
            .current_dir(repo())
            .env("PATH", &path)
            .env("JOB_COMPLETION_INDEX", index.to_string());
        for var in container["env"].as_array().unwrap() {
            command.env(var["name"].as_str().unwrap(), var["value"].as_str().unwrap());
        }
        command.env("EXPERIMENT", &experiment).env("RUN_DIR", &sharded);
        for name in ["SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX"] {
            command.env_remove(name);
        }
        command.output().unwrap()
    };
    for index in 0..completions {
        let printed = ok(pod(index));
        assert!(printed.contains(&format!("shard {index}/{completions} done")), "{printed}");
    }
    let again = ok(pod(1));
    assert!(again.contains("shard 1 has already finished"), "a retried pod of a finished shard: {again}");
    ok(critbench(&["merge", sharded.to_str().unwrap()]));
    ok(critbench(&["run", experiment.to_str().unwrap(), "--quiet", "--out", whole.to_str().unwrap()]));
    let same = crate::common::python()
        .arg(repo().join("tests/python/same_rows.py"))
        .args([&whole, &sharded])
        .output()
        .expect("the tests' Python runs tests/python/same_rows.py");
    assert!(same.status.success(), "{}{}", stdout(&same), stderr(&same));
    assert_eq!(
        std::fs::read_to_string(whole.join("summary.csv")).unwrap(),
        std::fs::read_to_string(sharded.join("summary.csv")).unwrap()
    );
}
