//! Property tests of the dataset readers: whatever bytes a dataset file holds, reading it never
//! panics, and a refusal names the file (and the line or row, when there is one); well-formed
//! rows read back as written, in order, however the file is cut into blocks.

use std::io::Write;
use std::path::{Path, PathBuf};

use critbench_storage::dataset::{DatasetStream, OnBadRow, read_dataset};
use proptest::prelude::*;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path).unwrap().write_all(bytes).unwrap();
    path
}

/// A line that is often almost a task: JSON fragments, fields of every type, junk.
fn line() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        Just("\"id\":\"a\"".to_string()),
        "[a-z]{1,6}".prop_map(|id| format!("\"id\":\"{id}\"")),
        Just("\"id\":5".to_string()),
        Just("\"prompt\":\"p\"".to_string()),
        Just("\"kind\":null".to_string()),
        Just("\"drafts\":[\"x\",3]".to_string()),
        Just("\"drafts\":[\"x\"]".to_string()),
        Just("\"critiques\":[{\"score\":9},7]".to_string()),
        Just("\"evidence\":{\"d\":1}".to_string()),
        Just("\"meta\":[1]".to_string()),
        Just("\"colour\":\"red\"".to_string()),
        "\\PC{0,12}".prop_map(|junk| format!("\"{}\":1", junk.replace(['"', '\\'], ""))),
    ];
    prop_oneof![
        3 => prop::collection::vec(field, 0..6).prop_map(|fields| format!("{{{}}}", fields.join(","))),
        1 => "\\PC{0,40}",
        1 => Just(String::new()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn jsonl_never_panics_and_errors_name_file_and_line(lines in prop::collection::vec(line(), 0..20), skip in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "d.jsonl", lines.join("\n").as_bytes());
        let mode = if skip { OnBadRow::Skip } else { OnBadRow::Error };
        match read_dataset(&path, mode) {
            Ok(dataset) => {
                prop_assert!(dataset.tasks.len() + dataset.skipped.len() <= lines.len());
                let mut ids: Vec<&str> = dataset.tasks.iter().map(|t| t.id.as_str()).collect();
                ids.sort();
                ids.dedup();
                prop_assert_eq!(ids.len(), dataset.tasks.len(), "ids are unique");
                for skipped in &dataset.skipped {
                    prop_assert!(skipped.row >= 1 && skipped.row <= lines.len());
                }
            }
            Err(error) => {
                let text = error.to_string();
                prop_assert!(text.starts_with(&path.display().to_string()), "{}", text);
                prop_assert!(text.contains(": line ") || text.ends_with("the dataset has no rows"), "{}", text);
            }
        }
    }

    #[test]
    fn csv_never_panics_and_errors_name_the_file(text in "(id,prompt(,kind)?\n)?(\\PC{0,20}(,\\PC{0,20}){0,3}\n){0,6}") {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "d.csv", text.as_bytes());
        if let Err(error) = read_dataset(&path, OnBadRow::Error) {
            prop_assert!(error.to_string().starts_with(&path.display().to_string()), "{}", error);
        }
    }

    #[test]
    fn parquet_of_arbitrary_bytes_is_refused_not_panicked(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let dir = tempfile::tempdir().unwrap();
        let mut file = b"PAR1".to_vec();
        file.extend_from_slice(&bytes);
        file.extend_from_slice(b"PAR1");
        let path = write(dir.path(), "d.parquet", &file);
        let error = read_dataset(&path, OnBadRow::Error).unwrap_err();
        prop_assert!(error.to_string().starts_with(&path.display().to_string()), "{}", error);
    }

    #[test]
    fn well_formed_rows_read_back_in_order_whatever_the_block_size(
        count in 1usize..60,
        block in 1usize..9,
        blank_every in 2usize..7,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for task in 0..count {
            if task % blank_every == 0 {
                text.push('\n');
            }
            text.push_str(&format!("{{\"id\":\"t{task}\",\"prompt\":\"p {task}\",\"drafts\":[\"d\"]}}\r\n"));
        }
        let path = write(dir.path(), "d.jsonl", text.as_bytes());
        let mut stream = DatasetStream::open(&path).unwrap();
        let mut ids = Vec::new();
        let mut lines = Vec::new();
        while let Some(rows) = stream.next_block(block).unwrap() {
            for (line, task) in rows.parse() {
                ids.push(task.unwrap().id);
                lines.push(line);
            }
        }
        let sha = stream.finish().unwrap();
        prop_assert_eq!(ids, (0..count).map(|t| format!("t{t}")).collect::<Vec<_>>());
        prop_assert!(lines.windows(2).all(|w| w[0] < w[1]), "lines increase: {:?}", lines);
        prop_assert_eq!(sha, critbench_storage::sha256_hex(text.as_bytes()), "the hash covers every byte");
    }
}
