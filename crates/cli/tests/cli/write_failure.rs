//! A run whose disk fills up: the real binary writes into a 1 MiB tmpfs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// Unmounts the tmpfs however the test ends.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn mount_tmpfs(at: &Path, size: &str) -> Mount {
    std::fs::create_dir_all(at).unwrap();
    let status = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(at)
        .status()
        .expect("mount runs");
    assert!(status.success(), "cannot mount a tmpfs at {} (this test needs root)", at.display());
    Mount(at.to_path_buf())
}

/// Drafts that do not compress away: each task's are its own pseudo-random hex.
fn dataset(path: &Path, tasks: usize) {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut text = String::new();
    for task in 0..tasks {
        let mut drafts = Vec::new();
        for _ in 0..3 {
            let mut draft = String::with_capacity(2048);
            while draft.len() < 2048 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                draft.push_str(&format!("{state:016x}"));
            }
            drafts.push(draft);
        }
        let line = serde_json::json!({
            "id": format!("t{task}"),
            "prompt": "p",
            "drafts": drafts,
            "critiques": [{"score": 3}, {"score": 5}, {"score": 9}],
        });
        text.push_str(&line.to_string());
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

#[test]
#[ignore = "needs root to mount a tmpfs; CI runs it with --include-ignored"]
fn a_full_disk_stops_the_run_with_the_file_and_the_os_error() {
    let dir = tempfile::tempdir().unwrap();
    dataset(&dir.path().join("tasks.jsonl"), 3000);
    let exp = experiment(
        dir.path(),
        "full.toml",
        "name = \"full\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\", \"no-feedback\"]\n\
         store_drafts = true\n[[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n[policy]\npass_score = 8\nmax_revisions = 3\n",
    );
    let disk = dir.path().join("disk");
    let _mount = mount_tmpfs(&disk, "1m");
    let run = disk.join("run");
    let output = critbench(&["run", exp.to_str().unwrap(), "--quiet", "--jobs", "2", "--out", run.to_str().unwrap()]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "a full disk is not the user's input: exit 1\n{message}");
    assert!(message.contains("No space left on device"), "the OS error is named:\n{message}");
    assert!(
        message.contains("/in-progress/trajectories-") || message.contains("/in-progress/outcomes-"),
        "the file is named:\n{message}"
    );
    assert!(message.contains("--resume"), "the message says how to go on:\n{message}");
    assert!(!stdout(&output).contains("wrote"), "no summary for a failed run");
    // Whatever is left under a table's own name is a readable table (a failed run writes its rows
    // only to committed part files, and no table).
    for table in ["trajectories.parquet", "outcomes.parquet"] {
        let path = run.join(table);
        if path.exists() {
            let file = std::fs::File::open(&path).unwrap();
            parquet::file::reader::SerializedFileReader::new(file)
                .unwrap_or_else(|e| panic!("{table} is left unreadable under its own name: {e}"));
        }
    }
    // With room on the disk again, the run resumes from what it committed and ends as a run
    // that never failed.
    let status = Command::new("mount").args(["-o", "remount,size=256m"]).arg(&disk).status().unwrap();
    assert!(status.success());
    ok(critbench(&["run", exp.to_str().unwrap(), "--quiet", "--resume", "--out", run.to_str().unwrap()]));
    let whole = dir.path().join("whole");
    ok(critbench(&["run", exp.to_str().unwrap(), "--quiet", "--out", whole.to_str().unwrap()]));
    let strip = |mut rows: Vec<critbench_storage::tables::OutcomeRow>| {
        for row in &mut rows {
            row.run_id.clear();
            row.wall_ms = 0.0;
        }
        rows
    };
    assert_eq!(strip(outcomes(&run)), strip(outcomes(&whole)));
}

#[test]
#[ignore = "needs root to mount a tmpfs; CI runs it with --include-ignored"]
fn a_disk_full_before_the_run_starts_leaves_no_lock_behind() {
    let dir = tempfile::tempdir().unwrap();
    dataset(&dir.path().join("tasks.jsonl"), 20);
    let exp = experiment(
        dir.path(),
        "full.toml",
        "name = \"full\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\"]\n\
         [[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n[policy]\npass_score = 8\nmax_revisions = 3\n",
    );
    let disk = dir.path().join("disk");
    let _mount = mount_tmpfs(&disk, "4m");
    let run = disk.join("run");
    std::fs::create_dir_all(&run).unwrap();
    // Fill the disk to the last byte.
    let filler = disk.join("filler");
    {
        use std::io::Write;
        let mut file = std::fs::File::create(&filler).unwrap();
        while file.write_all(&[0u8; 4096]).is_ok() {}
        while file.write_all(&[0u8; 1]).is_ok() {}
    }
    for extra in [&[][..], &["--overwrite"][..]] {
        let mut args = vec!["run", exp.to_str().unwrap(), "--quiet", "--out", run.to_str().unwrap()];
        args.extend_from_slice(extra);
        let output = critbench(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{message}");
        assert!(message.contains("No space left on device") && message.contains("run.lock"), "{message}");
        let left: Vec<String> =
            std::fs::read_dir(&run).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        assert!(left.is_empty(), "a run that could not take its lock leaves nothing: {left:?}");
    }
    std::fs::remove_file(&filler).unwrap();
    ok(critbench(&["run", exp.to_str().unwrap(), "--quiet", "--out", run.to_str().unwrap()]));
}
