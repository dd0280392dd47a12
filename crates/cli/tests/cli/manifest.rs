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

/// A run an earlier development build wrote is refused, not read with nulls for what it lacks: its
/// manifest (another table schema version, or no `manifest_version`) by every command that reads
/// it, and, without a manifest, a table whose footer names another schema version; each message
/// names what wrote it and says to run the experiment again with this critbench (exit 2).
#[test]
fn a_run_of_an_earlier_build_is_refused_naming_what_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    ok(critbench(&["run", "experiments/essays.toml", "--quiet", "--out", run.to_str().unwrap()]));
    let written = std::fs::read_to_string(run.join("manifest.json")).unwrap();
    let run_arg = run.to_str().unwrap();
    let replay_out = dir.path().join("replayed");
    for (edit, shown) in [
        (serde_json::json!({"schema_version": 5}), "manifest version 1, table schema version 5"),
        (
            serde_json::json!({"manifest_version": null, "schema_version": 3}),
            "manifest version none, table schema version 3",
        ),
    ] {
        let mut manifest: serde_json::Value = serde_json::from_str(&written).unwrap();
        manifest["critbench_version"] = "0.0.9".into();
        for (key, value) in edit.as_object().unwrap() {
            match value {
                serde_json::Value::Null => drop(manifest.as_object_mut().unwrap().remove(key)),
                value => manifest[key] = value.clone(),
            }
        }
        std::fs::write(run.join("manifest.json"), manifest.to_string()).unwrap();
        for args in [
            vec!["report", run_arg],
            vec!["show", run_arg, "--task", "essay-001"],
            vec!["replay", run_arg, "--out", replay_out.to_str().unwrap()],
            vec!["compare", run_arg, run_arg, "--out", dir.path().join("cmp").to_str().unwrap()],
        ] {
            let message = usage_error(critbench(&args), dir.path());
            let expected = format!(
                "DIR/run/manifest.json was written by critbench 0.0.9, {shown}; this critbench reads manifest version 1 \
                 with table schema version 10 only\n  hint: run the experiment again with this critbench"
            );
            assert!(message.contains(&expected), "critbench {}: {message}", args[0]);
        }
    }
    // Without a manifest the tables alone are read: one of another schema version is refused.
    std::fs::remove_file(run.join("manifest.json")).unwrap();
    let outcomes = run.join("outcomes.parquet");
    let file = std::fs::File::open(&outcomes).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    let properties = parquet::file::properties::WriterProperties::builder()
        .set_key_value_metadata(Some(vec![
            parquet::file::metadata::KeyValue::new("critbench.table".into(), "outcomes".to_string()),
            parquet::file::metadata::KeyValue::new("critbench.schema_version".into(), "5".to_string()),
        ]))
        .build();
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&outcomes).unwrap(),
        batches[0].schema(),
        Some(properties),
    )
    .unwrap();
    batches.iter().for_each(|batch| writer.write(batch).unwrap());
    writer.close().unwrap();
    let message = usage_error(critbench(&["report", run_arg]), dir.path());
    assert!(
        message.contains(
            "DIR/run/outcomes.parquet: written by a critbench whose tables are schema version 5; this critbench reads \
             tables of schema version 10 only\n  hint: run the experiment again with this critbench"
        ),
        "{message}"
    );
}
