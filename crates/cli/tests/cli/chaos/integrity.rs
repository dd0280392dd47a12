//! Nothing read back from disk is trusted unchecked: committed parts, the journal, shards,
//! finished tables.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use critbench_storage::recorded::read_recorded_loops;
use critbench_storage::tables::{OutcomeRow, OutcomeWriter};

use super::directories::{run, scripted, snapshot};
use crate::common::*;

/// Tasks of the resumable fixture: enough for dozens of committed parts, few enough that a resume
/// takes a few seconds in a debug build.
const TASKS: usize = 12_000;

/// The rows of a run without what names the run or measures time, in file order.
fn rows(run_dir: &Path) -> (Vec<OutcomeRow>, Vec<critbench_storage::recorded::RecordedLoop>) {
    let mut outcomes = outcomes(run_dir);
    for row in &mut outcomes {
        row.run_id.clear();
        row.wall_ms = 0.0;
    }
    let mut loops = read_recorded_loops(&run_dir.join("trajectories.parquet")).expect("trajectories read");
    for round in loops.iter_mut().flat_map(|l| l.rounds.iter_mut()) {
        round.gen_ms = 0.0;
        round.critic_ms = 0.0;
    }
    (outcomes, loops)
}

/// `b` is the run `a` is: the same rows in the same order (names and times aside) and the same
/// summaries, byte for byte.
fn assert_same_run(a: &Path, b: &Path, case: &str) {
    let (a_rows, b_rows) = (rows(a), rows(b));
    assert_eq!(a_rows.0.len(), b_rows.0.len(), "{case}: outcome rows");
    assert!(a_rows.0 == b_rows.0, "{case}: the outcomes differ");
    assert!(a_rows.1 == b_rows.1, "{case}: the trajectories differ");
    for file in ["summary.csv", "comparisons.csv"] {
        assert_eq!(std::fs::read(a.join(file)).unwrap(), std::fs::read(b.join(file)).unwrap(), "{case}: {file}");
    }
    assert!(!b.join("in-progress").exists(), "{case}: a finished run keeps no progress folder");
}

/// The uninterrupted run, and the same run interrupted by SIGINT after it committed several
/// parts (every chunk is committed, so there are many).
struct Fixture {
    dir: tempfile::TempDir,
    exp: PathBuf,
    whole: PathBuf,
    interrupted: PathBuf,
}

fn fixture() -> Fixture {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), TASKS);
    let whole = dir.path().join("whole");
    ok(run(&exp, &whole, &[]));
    let interrupted = dir.path().join("interrupted");
    let journal = interrupted.join("in-progress/journal.jsonl");
    let child = Command::new(binary())
        .args(["run", exp.to_str().unwrap(), "--quiet", "--jobs", "1", "--out", interrupted.to_str().unwrap()])
        .env("CRITBENCH_COMMIT_INTERVAL_S", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::fs::read_to_string(&journal).unwrap_or_default().lines().count() < 6 {
        assert!(started.elapsed() < Duration::from_secs(120), "the run never committed six parts");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(130),
        "the run must still be running when interrupted (make TASKS larger if it finished): {}",
        stderr(&output)
    );
    Fixture { dir, exp, whole, interrupted }
}

/// A copy of the interrupted run to damage.
fn copy_of(fixture: &Fixture, name: &str) -> PathBuf {
    let copy = fixture.dir.path().join(name);
    let status = Command::new("cp").arg("-a").arg(&fixture.interrupted).arg(&copy).status().unwrap();
    assert!(status.success());
    copy
}

/// The committed part files of a run's progress folder, in order.
fn parts(run_dir: &Path) -> Vec<PathBuf> {
    let mut parts: Vec<PathBuf> = std::fs::read_dir(run_dir.join("in-progress"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    parts.sort();
    parts
}

fn flip_bytes(path: &Path, at: usize, count: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = at.min(bytes.len().saturating_sub(count));
    let end = (at + count).min(bytes.len());
    for byte in &mut bytes[at..end] {
        *byte ^= 0x5a;
    }
    std::fs::write(path, bytes).unwrap();
}

fn resume(fixture: &Fixture, out: &Path) -> std::process::Output {
    run(&fixture.exp, out, &["--resume"])
}

#[test]
fn damaged_committed_parts_and_journal_lines_are_recomputed_and_the_run_ends_as_if_uninterrupted() {
    let fixture = fixture();
    let committed = parts(&fixture.interrupted);
    assert!(committed.len() >= 12, "six parts, two files each: {committed:?}");
    let middle = committed[committed.len() / 2].clone();
    let name = |path: &Path| path.file_name().unwrap().to_owned();
    type Damage = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Damage)> = vec![
        ("64 flipped bytes in a committed part", {
            let part = name(&middle);
            Box::new(move |run: &Path| {
                let path = run.join("in-progress").join(&part);
                let at = std::fs::metadata(&path).unwrap().len() as usize / 3;
                flip_bytes(&path, at, 64);
            })
        }),
        ("a committed part cut short", {
            let part = name(&middle);
            Box::new(move |run: &Path| {
                let path = run.join("in-progress").join(&part);
                let length = std::fs::metadata(&path).unwrap().len() / 2;
                std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(length).unwrap();
            })
        }),
        ("a committed part deleted", {
            let part = name(&committed[2]);
            Box::new(move |run: &Path| std::fs::remove_file(run.join("in-progress").join(&part)).unwrap())
        }),
        (
            "a journal line's next_chunk edited",
            Box::new(|run: &Path| {
                let path = run.join("in-progress/journal.jsonl");
                let text = std::fs::read_to_string(&path).unwrap();
                let mut lines: Vec<String> = text.lines().map(String::from).collect();
                let line = &mut lines[2];
                let at = line.find("\"next_chunk\":").unwrap() + "\"next_chunk\":".len();
                let end = at + line[at..].find(',').unwrap();
                let bumped: u64 = line[at..end].parse::<u64>().unwrap() + 2;
                line.replace_range(at..end, &bumped.to_string());
                std::fs::write(&path, lines.join("\n") + "\n").unwrap();
            }),
        ),
        (
            "a journal line cut in the middle of the journal",
            Box::new(|run: &Path| {
                let path = run.join("in-progress/journal.jsonl");
                let text = std::fs::read_to_string(&path).unwrap();
                let mut lines: Vec<String> = text.lines().map(String::from).collect();
                let half = lines[1].len() / 2;
                lines[1].truncate(half);
                std::fs::write(&path, lines.join("\n") + "\n").unwrap();
            }),
        ),
        (
            "the last journal line torn by a kill",
            Box::new(|run: &Path| {
                let path = run.join("in-progress/journal.jsonl");
                let text = std::fs::read_to_string(&path).unwrap();
                std::fs::write(&path, &text[..text.len() - 40]).unwrap();
            }),
        ),
    ];
    for (index, (case, damage)) in cases.iter().enumerate() {
        let copy = copy_of(&fixture, &format!("case-{index}"));
        damage(&copy);
        let output = resume(&fixture, &copy);
        let message = stderr(&output);
        ok(output);
        if !case.contains("torn") {
            assert!(message.contains("run again"), "{case}: the resume says what it recomputes: {message}");
        }
        assert_same_run(&fixture.whole, &copy, case);
    }

    // Progress another critbench wrote is not read: refused, naming what wrote it, and nothing
    // of it changed.
    let copy = copy_of(&fixture, "other-critbench");
    let run_json = copy.join("in-progress/run.json");
    let text = std::fs::read_to_string(&run_json).unwrap();
    let ours = format!("\"critbench_version\": \"{}\"", env!("CARGO_PKG_VERSION"));
    assert!(text.contains(&ours), "{text}");
    std::fs::write(&run_json, text.replace(&ours, "\"critbench_version\": \"0.0.0-earlier\"")).unwrap();
    let before = snapshot(&copy);
    let refused = usage_error(resume(&fixture, &copy), fixture.dir.path());
    assert!(refused.contains("in-progress/run.json was written by critbench 0.0.0-earlier"), "{refused}");
    assert!(refused.contains("--overwrite"), "{refused}");
    assert_eq!(snapshot(&copy), before, "a refused resume changes nothing");
}

/// Every file of the progress folder, damaged in turn (bytes flipped, cut short, removed): the
/// resume ends equal to the uninterrupted run, or refuses with exit 2 naming what it cannot use.
/// Never a finished run with other rows, never a crash.
#[test]
fn any_file_of_a_run_in_progress_damaged_then_resumed_ends_as_the_whole_run_or_is_refused() {
    let fixture = fixture();
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixture.interrupted.join("in-progress"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into())
        .collect();
    files.sort();
    // Seeded, so that a failure can be replayed: a few files of each kind, each damage once.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    let mut chosen: Vec<PathBuf> =
        files.iter().filter(|f| !f.to_string_lossy().ends_with(".parquet")).cloned().collect();
    let part_files: Vec<&PathBuf> = files.iter().filter(|f| f.to_string_lossy().ends_with(".parquet")).collect();
    for _ in 0..3 {
        chosen.push(part_files[next(part_files.len())].clone());
    }
    let mut refused = 0;
    for (index, file) in chosen.iter().enumerate() {
        let damage = next(3);
        let copy = copy_of(&fixture, &format!("any-{index}"));
        let path = copy.join("in-progress").join(file);
        let length = std::fs::metadata(&path).unwrap().len() as usize;
        let case = match damage {
            0 => {
                flip_bytes(&path, next(length.max(1)), 1 + next(64));
                format!("{} with bytes flipped", file.display())
            }
            1 => {
                let cut = next(length.max(1)) as u64;
                std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(cut).unwrap();
                format!("{} cut to {cut} bytes", file.display())
            }
            _ => {
                std::fs::remove_file(&path).unwrap();
                format!("{} removed", file.display())
            }
        };
        let output = resume(&fixture, &copy);
        match output.status.code() {
            Some(0) => assert_same_run(&fixture.whole, &copy, &case),
            Some(2) => {
                let message = stderr(&output);
                assert!(file.to_string_lossy() == "run.json", "{case}: only a damaged run.json may refuse: {message}");
                assert!(message.contains("run.json"), "{case}: the refusal names the file: {message}");
                refused += 1;
            }
            other => panic!("{case}: exit {other:?}: {}", stderr(&output)),
        }
    }
    eprintln!(
        "{} damaged progress folders: {} resumed to the whole run, {refused} refused",
        chosen.len(),
        chosen.len() - refused
    );
}

#[test]
fn an_unchanged_experiment_resumes_from_another_directory_or_by_another_path() {
    let fixture = fixture();
    // From the filesystem root, naming the experiment by an absolute path through a link.
    let link = fixture.dir.path().join("linked.toml");
    std::os::unix::fs::symlink(&fixture.exp, &link).unwrap();
    let copy = copy_of(&fixture, "elsewhere");
    let output = Command::new(binary())
        .args(["run", link.to_str().unwrap(), "--quiet", "--resume", "--out", copy.to_str().unwrap()])
        .current_dir("/")
        .output()
        .unwrap();
    ok(output);
    assert_same_run(&fixture.whole, &copy, "resumed by a link, from /");
    // A relative path with `..` in it, from the experiment's own folder.
    let copy = copy_of(&fixture, "relative");
    let folder = fixture.dir.path().file_name().unwrap().to_str().unwrap().to_string();
    let output = Command::new(binary())
        .args(["run", &format!("../{folder}/exp.toml"), "--quiet", "--resume", "--out", copy.to_str().unwrap()])
        .current_dir(fixture.dir.path())
        .output()
        .unwrap();
    ok(output);
    assert_same_run(&fixture.whole, &copy, "resumed by a relative path");
}

/// SIGKILL at seeded points, the resume itself killed too, then resumed again: every time the
/// result is the uninterrupted run's.
#[test]
fn kills_at_any_point_of_a_run_and_of_its_resume_still_end_as_the_whole_run() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), TASKS);
    let whole = dir.path().join("whole");
    let started = Instant::now();
    ok(run(&exp, &whole, &[]));
    let took = started.elapsed();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut fraction = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        0.05 + 0.9 * (state % 1000) as f64 / 1000.0
    };
    for attempt in 0..3 {
        let out = dir.path().join(format!("killed-{attempt}"));
        for (pass, extra) in [&[][..], &["--resume"][..]].iter().enumerate() {
            let mut args = vec!["run", exp.to_str().unwrap(), "--quiet", "--jobs", "2", "--out", out.to_str().unwrap()];
            args.extend_from_slice(extra);
            let mut child = Command::new(binary())
                .args(&args)
                .env("CRITBENCH_COMMIT_INTERVAL_S", "0.1")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(took.mul_f64(fraction()));
            let _ = child.kill();
            let status = child.wait().unwrap();
            if pass == 0 && status.success() {
                break;
            }
        }
        let resumed = run(&exp, &out, &["--resume"]);
        if !resumed.status.success() && stderr(&resumed).contains("cannot be resumed") {
            ok(run(&exp, &out, &["--overwrite"]));
        } else if !resumed.status.success() && stderr(&resumed).contains("already holds a finished run") {
            // The resume finished before its kill.
        } else {
            ok(resumed);
        }
        assert_same_run(&whole, &out, &format!("attempt {attempt}"));
    }
}

/// Three shards and a merge, in `dir/sharded`.
fn sharded(dir: &Path) -> (PathBuf, PathBuf) {
    let exp = scripted(dir, 90);
    let out = dir.join("sharded");
    for index in 0..3 {
        ok(run(&exp, &out, &["--shard", &format!("{index}/3")]));
    }
    (exp, out)
}

#[test]
fn merge_refuses_shards_whose_tables_are_not_the_ones_they_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out) = sharded(dir.path());
    ok(critbench(&["merge", out.to_str().unwrap()]));
    let table = |index: u32| out.join(format!("outcomes/shard={index}/part-0.parquet"));
    let manifest_of = |index: u32| out.join(format!("shards/{index}/manifest.json"));
    let pristine: Vec<(Vec<u8>, Vec<u8>)> =
        (0..3).map(|i| (std::fs::read(table(i)).unwrap(), std::fs::read(manifest_of(i)).unwrap())).collect();
    let restore = || {
        for (index, (table_bytes, manifest_bytes)) in pristine.iter().enumerate() {
            std::fs::write(table(index as u32), table_bytes).unwrap();
            std::fs::write(manifest_of(index as u32), manifest_bytes).unwrap();
        }
        ok(critbench(&["merge", out.to_str().unwrap()]));
    };

    // One shard's outcomes replaced by another's.
    std::fs::copy(table(0), table(1)).unwrap();
    let refused = usage_error(critbench(&["merge", out.to_str().unwrap()]), dir.path());
    assert!(refused.contains("shard 1") && refused.contains("is not the file the run wrote"), "{refused}");
    restore();

    // Rows deleted from a shard's outcomes.
    let mut rows = read_rows(&table(2));
    rows.truncate(rows.len() / 2);
    write_rows(&table(2), rows);
    let refused = usage_error(critbench(&["merge", out.to_str().unwrap()]), dir.path());
    assert!(refused.contains("shard 2"), "{refused}");
    restore();

    // Replaced, and the shard's manifest made to agree: the tasks are not the shard's.
    std::fs::copy(table(0), table(1)).unwrap();
    let manifest_path = out.join("shards/1/manifest.json");
    let mut shard_manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    let record = critbench_storage::manifest::TableRecord::of(&table(1)).unwrap();
    shard_manifest["tables"]["outcomes/shard=1/part-0.parquet"] = serde_json::to_value(&record).unwrap();
    std::fs::write(&manifest_path, serde_json::to_string_pretty(&shard_manifest).unwrap()).unwrap();
    let refused = usage_error(critbench(&["merge", out.to_str().unwrap()]), dir.path());
    assert!(refused.contains("shard 1") && refused.contains("which is shard 0's"), "{refused}");
    restore();

    // Duplicated loops inside one shard, its manifest made to agree.
    let mut rows = read_rows(&table(2));
    let doubled = rows.clone();
    rows.extend(doubled);
    write_rows(&table(2), rows);
    let manifest_path = out.join("shards/2/manifest.json");
    let mut shard_manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    let record = critbench_storage::manifest::TableRecord::of(&table(2)).unwrap();
    shard_manifest["tables"]["outcomes/shard=2/part-0.parquet"] = serde_json::to_value(&record).unwrap();
    std::fs::write(&manifest_path, serde_json::to_string_pretty(&shard_manifest).unwrap()).unwrap();
    let refused = usage_error(critbench(&["merge", out.to_str().unwrap()]), dir.path());
    assert!(refused.contains("shard 2") && refused.contains("twice"), "{refused}");
}

fn read_rows(path: &Path) -> Vec<OutcomeRow> {
    critbench_storage::tables::read_outcomes(path).unwrap()
}

fn write_rows(path: &Path, rows: Vec<OutcomeRow>) {
    let _ = std::fs::remove_file(path);
    let mut writer = OutcomeWriter::create(path).unwrap();
    for row in rows {
        writer.push(row).unwrap();
    }
    writer.close().unwrap();
}

#[test]
fn a_finished_runs_damaged_table_is_named_by_every_command_that_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), 40);
    let out = dir.path().join("run");
    ok(run(&exp, &out, &[]));
    let other = dir.path().join("other");
    ok(run(&exp, &other, &[]));
    let outcomes = out.join("outcomes.parquet");
    let length = std::fs::metadata(&outcomes).unwrap().len() as usize;
    flip_bytes(&outcomes, length / 2, 8);
    let (out_s, other_s) = (out.to_str().unwrap(), other.to_str().unwrap());
    let replayed = dir.path().join("replayed");
    let commands: Vec<Vec<&str>> = vec![
        vec!["report", out_s],
        vec!["show", out_s, "--task", "t000001"],
        vec!["show", out_s, "--pairs", "feedback,no-feedback"],
        vec!["replay", out_s, "--pass-score", "7", "--out", replayed.to_str().unwrap()],
        vec!["compare", out_s, other_s],
    ];
    for args in commands {
        let refused = usage_error(critbench(&args), dir.path());
        assert!(
            refused.contains("outcomes.parquet") && refused.contains("is not the file the run wrote"),
            "{args:?}: {refused}"
        );
    }
}
