//! notebooks/analysis.ipynb runs top to bottom against a real run (nbclient, the `python3`
//! kernel), draws its figures, and is committed without outputs.

use crate::common::*;

#[test]
fn the_committed_notebook_has_no_outputs() {
    let path = repo().join("notebooks/analysis.ipynb");
    let notebook: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cells = notebook["cells"].as_array().expect("a notebook has cells");
    for (index, cell) in cells.iter().enumerate().filter(|(_, c)| c["cell_type"] == "code") {
        // Outputs in git are noise in every diff and can carry data from someone's run.
        assert_eq!(cell["outputs"], serde_json::json!([]), "cell {index} has outputs; strip them before committing");
        assert!(cell["execution_count"].is_null(), "cell {index} has an execution count");
    }
}

#[test]
fn notebook_runs_against_the_demo() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("demo");
    ok(critbench(&["run", "experiments/demo.toml", "--limit", "20", "--out", run.to_str().unwrap(), "-q"]));
    execute_notebook(dir.path(), &run);
}

/// The same notebook on a sharded run (two shards, merged): it reads the partitioned tables.
#[test]
fn notebook_runs_against_a_sharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("demo");
    for shard in ["0/2", "1/2"] {
        ok(critbench(&[
            "run",
            "experiments/demo.toml",
            "--limit",
            "20",
            "--shard",
            shard,
            "--out",
            run.to_str().unwrap(),
            "-q",
        ]));
    }
    ok(critbench(&["merge", run.to_str().unwrap()]));
    assert!(!run.join("outcomes.parquet").exists());
    execute_notebook(dir.path(), &run);
}

/// Executes notebooks/analysis.ipynb against `run`, checks its figures and tables.
fn execute_notebook(dir: &std::path::Path, run: &std::path::Path) {
    let figures = dir.join("figures");
    let executed = dir.join("executed.ipynb");
    // Executed from notebooks/, as Jupyter would; CRITBENCH_RUN points at the run.
    // The kernel is this same Python: its environment's kernel spec comes first on the Jupyter
    // path (a spec whose command is `python` is started with the running interpreter).
    let script = r#"
import os, sys
os.environ["JUPYTER_PATH"] = os.path.join(sys.prefix, "share", "jupyter")
import nbformat
from nbclient import NotebookClient

notebook = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}}).execute()
nbformat.write(notebook, sys.argv[3])
"#;
    let python = crate::common::python()
        .args(["-c", script])
        .arg(repo().join("notebooks/analysis.ipynb"))
        .arg(repo().join("notebooks"))
        .arg(&executed)
        .env("CRITBENCH_RUN", run)
        .env("CRITBENCH_FIGURES", &figures)
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
    assert!(
        python.status.success(),
        "the notebook failed (install tests/python/requirements.txt):\n{}\n{}",
        String::from_utf8_lossy(&python.stdout),
        String::from_utf8_lossy(&python.stderr)
    );
    for figure in ["score_trajectory.png", "exit_reasons.png"] {
        let bytes = std::fs::read(figures.join(figure)).unwrap_or_else(|_| panic!("the notebook drew no {figure}"));
        assert!(bytes.len() > 10_000, "{figure} is only {} bytes", bytes.len());
    }
    // The outputs show the figures and the pass-rate, exit and comparison tables.
    let executed: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&executed).unwrap()).unwrap();
    let outputs: Vec<&serde_json::Value> = executed["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["outputs"].as_array().into_iter().flatten())
        .collect();
    let images = outputs.iter().filter(|o| o["data"]["image/png"].is_string()).count();
    assert_eq!(images, 2, "expected the trajectory and exit-reason figures");
    let tables = serde_json::to_string(&outputs).unwrap();
    for column in ["pass_rate_lo", "plateau", "mcnemar_p"] {
        assert!(tables.contains(column), "no table shows `{column}`");
    }
}
