//! `critbench sample`: a seeded uniform sample of a finished run's tasks, and the file people
//! label.
//!
//! Each task's place in the draw is a hash of (seed, task id), and the sample is the `tasks`
//! lowest: a uniform draw without replacement that depends on nothing but the seed and the set of
//! task ids — not on row order, threads or shards — and is found in one pass over the outcomes
//! holding `tasks` ids. Every loop of a sampled task (every config, arm, critic and epoch) is in
//! the sample.
//!
//! The file is JSON lines: a header naming the sample (run id, seed, number of tasks, a SHA-256
//! of the sampled loops' keys), then one line per distinct answer of a task — not one per loop.
//! A policy grid replayed from one recording, configs that stop at the same round and critics
//! that see the same first draft share answers, and a person should judge each answer once;
//! the line lists every loop that returned it, with the critic's verdict on that loop.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::queries::final_answers::{FinalAnswer, LoopKey, read_final_answers};
use critbench_core::{Arm, SeedKey, derive_seed};
use critbench_storage::manifest::{Manifest, RunStatus};
use serde::{Deserialize, Serialize};

use super::GoldError;
use crate::ReportError;

/// The sample file's format version (its header's `critbench_sample`).
pub const SAMPLE_VERSION: u32 = 1;

/// What the seed is mixed with to rank tasks, so the draw is its own random choice.
const PURPOSE: &str = "gold-sample";

/// How many tasks to sample, and the seed that picks them.
#[derive(Clone, Copy, Debug)]
pub struct SampleRequest {
    /// Tasks to sample.
    pub tasks: usize,
    /// The seed that ranks the tasks.
    pub seed: u64,
}

/// The sample file's first line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleHeader {
    /// [`SAMPLE_VERSION`].
    pub critbench_sample: u32,
    /// The run the sample is of.
    pub run_id: String,
    /// The seed the tasks were drawn with.
    pub seed: u64,
    /// Tasks sampled.
    pub tasks: usize,
    /// Distinct answers (lines to label) and the loops they stand for.
    pub answers: usize,
    /// Loops those answers stand for.
    pub loops: usize,
    /// SHA-256 of the sampled loops' keys: one JSON array `[config_id, arm, critic, task_id, epoch]`
    /// and a newline per loop, sorted.
    pub keys_sha256: String,
    /// What a person is to do with the file.
    pub how_to_label: String,
}

/// One loop an answer stands for, with the critic's verdict on it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnsweredLoop {
    /// The config (policy).
    pub config_id: String,
    /// The arm, written as the output spells it.
    #[serde(serialize_with = "arm_as_text", deserialize_with = "arm_from_text")]
    pub arm: Arm,
    /// The critic.
    pub critic: String,
    /// The epoch.
    pub epoch: u32,
    /// Whether the loop passed under its critic, and its final score.
    pub passed: bool,
    /// The loop's final score.
    pub score: f64,
}

fn arm_as_text<S: serde::Serializer>(arm: &Arm, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(arm.as_str())
}

fn arm_from_text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Arm, D::Error> {
    let text = String::deserialize(deserializer)?;
    Arm::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("`{text}` is not an arm")))
}

/// One distinct answer of one task: a line to label.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Answer {
    /// `a` and 16 hex digits of the SHA-256 of (task id, answer).
    pub answer_id: String,
    /// The task.
    pub task_id: String,
    /// Empty (null) until a person fills it with true or false.
    pub gold: Option<bool>,
    /// The answer's text (the loop's final draft).
    pub answer: String,
    /// Every loop that returned this answer.
    pub loops: Vec<AnsweredLoop>,
}

/// A drawn sample: the header and its answers, by task and then by their first loop.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The header line.
    pub header: SampleHeader,
    /// The lines to label.
    pub answers: Vec<Answer>,
    /// The sampled tasks.
    pub tasks: BTreeSet<String>,
}

impl Sample {
    /// Each sampled loop, with the answer it returned and the critic's verdict on it.
    pub(crate) fn loops_by_key(&self) -> BTreeMap<LoopKey, (&Answer, &AnsweredLoop)> {
        let mut by_loop = BTreeMap::new();
        for answer in &self.answers {
            for l in &answer.loops {
                by_loop.insert(loop_key(&answer.task_id, l), (answer, l));
            }
        }
        by_loop
    }
}

pub(crate) fn loop_key(task_id: &str, l: &AnsweredLoop) -> LoopKey {
    LoopKey {
        config_id: l.config_id.clone(),
        arm: l.arm,
        critic: l.critic.clone(),
        task_id: task_id.to_string(),
        epoch: l.epoch,
    }
}

/// What the header tells people to do.
const HOW_TO_LABEL: &str = "Set each line's gold to true (the answer is right for its task) or false, judging the answer \
     alone; leave every other field as it is. Then: critbench report RUN --labels FILE";

/// SHA-256 of the keys, one JSON array `[config_id, arm, critic, task_id, epoch]` per line,
/// sorted: it names exactly which loops a sample holds.
pub(crate) fn keys_sha256<'a>(keys: impl Iterator<Item = &'a LoopKey>) -> String {
    let mut sorted: Vec<&LoopKey> = keys.collect();
    sorted.sort();
    let mut text = String::new();
    for key in sorted {
        let line = serde_json::json!([key.config_id, key.arm.as_str(), key.critic, key.task_id, key.epoch]);
        text.push_str(&line.to_string());
        text.push('\n');
    }
    critbench_storage::sha256_hex(text.as_bytes())
}

pub(crate) fn answer_id(task_id: &str, answer: &str) -> String {
    let hash = critbench_storage::sha256_hex(serde_json::json!([task_id, answer]).to_string().as_bytes());
    format!("a{}", &hash[..16])
}

/// Draws the sample of `request.tasks` tasks of the finished run in `run_dir` with
/// `request.seed`, with every sampled loop's final answer. Refused (exit 2): no tasks asked for,
/// more than the run has, an interrupted or unmerged run, a run without stored drafts.
pub fn draw_sample(run_dir: &Path, request: &SampleRequest) -> Result<Sample, ReportError> {
    if request.tasks == 0 {
        return Err(GoldError::NoTasks.into());
    }
    let outcomes = crate::run_tables::table_files(run_dir, "outcomes")?;
    let manifest = Manifest::read(run_dir)?;
    if manifest.as_ref().is_some_and(|m| m.status == RunStatus::Interrupted) {
        return Err(GoldError::Unfinished { run: run_dir.into() }.into());
    }
    let trajectories = crate::run_tables::table_files(run_dir, "trajectories")?;
    // The `tasks` lowest (rank, id); a task's rows come together, so the last id is remembered.
    let mut lowest: BTreeSet<(u64, String)> = BTreeSet::new();
    let mut last: Option<String> = None;
    let mut smallest_run_id: Option<String> = None;
    critbench_storage::tables::for_each_outcome_stats_in::<std::convert::Infallible>(&outcomes, |row| {
        if smallest_run_id.as_deref().is_none_or(|id| row.run_id < id) {
            smallest_run_id = Some(row.run_id.to_string());
        }
        if last.as_deref() == Some(row.task_id) {
            return Ok(());
        }
        last = Some(row.task_id.to_string());
        let rank =
            derive_seed(&SeedKey { seed: request.seed, task_id: row.task_id, epoch: 0, round: 0, purpose: PURPOSE });
        let full = lowest.len() >= request.tasks;
        if full && lowest.last().is_some_and(|(highest, _)| rank > *highest) {
            return Ok(());
        }
        lowest.insert((rank, row.task_id.to_string()));
        if lowest.len() > request.tasks {
            lowest.pop_last();
        }
        Ok(())
    })?;
    if lowest.len() < request.tasks {
        return Err(
            GoldError::TooFewTasks { run: run_dir.into(), available: lowest.len(), asked: request.tasks }.into()
        );
    }
    let tasks: BTreeSet<String> = lowest.into_iter().map(|(_, id)| id).collect();
    let answers = read_final_answers(&outcomes, &trajectories, &tasks)?;
    if answers.iter().any(|a| a.draft.is_none()) {
        return Err(GoldError::NoDrafts { run: run_dir.into() }.into());
    }
    let run_id = manifest.map(|m| m.run_id).filter(|id| !id.is_empty()).or(smallest_run_id).unwrap_or_default();
    Ok(group_answers(run_id, request, tasks, answers))
}

/// One line per distinct (task, answer), in task order and then by each answer's first loop.
fn group_answers(run_id: String, request: &SampleRequest, tasks: BTreeSet<String>, loops: Vec<FinalAnswer>) -> Sample {
    let keys_sha256 = keys_sha256(loops.iter().map(|l| &l.key));
    let loop_count = loops.len();
    let mut by_answer: BTreeMap<(String, String), Vec<FinalAnswer>> = BTreeMap::new();
    for answer in loops {
        let text = answer.draft.clone().unwrap_or_default();
        by_answer.entry((answer.key.task_id.clone(), text)).or_default().push(answer);
    }
    let mut answers: Vec<Answer> = by_answer
        .into_iter()
        .map(|((task_id, text), loops)| Answer {
            answer_id: answer_id(&task_id, &text),
            gold: None,
            answer: text,
            loops: loops
                .into_iter()
                .map(|l| AnsweredLoop {
                    config_id: l.key.config_id,
                    arm: l.key.arm,
                    critic: l.key.critic,
                    epoch: l.key.epoch,
                    passed: l.passed,
                    score: l.score,
                })
                .collect(),
            task_id,
        })
        .collect();
    // Loops arrive sorted by key, so each answer's first loop is its smallest.
    answers.sort_by(|a, b| {
        let first = |x: &Answer| loop_key(&x.task_id, &x.loops[0]);
        (&a.task_id, first(a)).cmp(&(&b.task_id, first(b)))
    });
    Sample {
        header: SampleHeader {
            critbench_sample: SAMPLE_VERSION,
            run_id,
            seed: request.seed,
            tasks: tasks.len(),
            answers: answers.len(),
            loops: loop_count,
            keys_sha256,
            how_to_label: HOW_TO_LABEL.to_string(),
        },
        answers,
        tasks,
    }
}

/// The file's text: the header, then one answer per line.
pub(crate) fn sample_text(sample: &Sample) -> String {
    let mut text = serde_json::to_string(&sample.header).expect("a header serializes");
    text.push('\n');
    for answer in &sample.answers {
        text.push_str(&serde_json::to_string(answer).expect("an answer serializes"));
        text.push('\n');
    }
    text
}

/// Writes the sample to `out` (by way of `out.tmp` and a rename); an existing `out` is refused
/// unless `overwrite`.
pub fn write_sample(sample: &Sample, out: &Path, overwrite: bool) -> Result<(), ReportError> {
    let text = sample_text(sample);
    let written = if overwrite {
        critbench_storage::files::write_atomically(out, text.as_bytes())
    } else {
        critbench_storage::files::write_new(out, text.as_bytes())
    };
    written.map_err(|source| match source.kind() {
        std::io::ErrorKind::AlreadyExists => GoldError::Exists { path: out.into() }.into(),
        _ => GoldError::Write { path: out.into(), source }.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(config: &str, arm: &str, task: &str, epoch: u32, draft: &str, passed: bool) -> FinalAnswer {
        FinalAnswer {
            key: LoopKey {
                config_id: config.into(),
                arm: critbench_core::Arm::parse(arm).expect("an arm"),
                critic: "evidence".into(),
                task_id: task.into(),
                epoch,
            },
            round: 0,
            passed,
            score: if passed { 9.0 } else { 4.0 },
            draft: Some(draft.into()),
        }
    }

    #[test]
    fn loops_that_returned_the_same_answer_share_one_line() {
        let mut loops = vec![
            answer("p7", "feedback", "t1", 0, "cites d4", true),
            answer("p7", "single", "t1", 0, "cites nothing", false),
            answer("p8", "feedback", "t1", 0, "cites d4", false),
            answer("p8", "single", "t1", 0, "cites nothing", false),
            answer("p7", "feedback", "t0", 0, "cites nothing", true),
        ];
        loops.sort_by(|a, b| a.key.cmp(&b.key));
        let request = SampleRequest { tasks: 2, seed: 3 };
        let tasks = BTreeSet::from(["t0".to_string(), "t1".to_string()]);
        let sample = group_answers("run".into(), &request, tasks, loops.clone());
        let lines: Vec<(&str, &str, usize)> =
            sample.answers.iter().map(|a| (a.task_id.as_str(), a.answer.as_str(), a.loops.len())).collect();
        // The same text for another task is another answer: gold depends on the task.
        assert_eq!(lines, [("t0", "cites nothing", 1), ("t1", "cites d4", 2), ("t1", "cites nothing", 2)]);
        let shared = &sample.answers[1].loops;
        assert_eq!((shared[0].config_id.as_str(), shared[0].passed), ("p7", true));
        assert_eq!((shared[1].config_id.as_str(), shared[1].passed), ("p8", false), "each loop keeps its verdict");
        assert_eq!((sample.header.answers, sample.header.loops, sample.header.tasks), (3, 5, 2));
        assert_eq!(sample.answers[0].answer_id, answer_id("t0", "cites nothing"));
        assert_ne!(sample.answers[0].answer_id, sample.answers[2].answer_id);
        // The keys' hash names the loops, not their order or their answers.
        let mut reversed = loops.clone();
        reversed.reverse();
        assert_eq!(keys_sha256(reversed.iter().map(|l| &l.key)), sample.header.keys_sha256);
        let fewer = keys_sha256(loops[1..].iter().map(|l| &l.key));
        assert_ne!(fewer, sample.header.keys_sha256);
        let text = sample_text(&sample);
        assert!(text.starts_with("{\"critbench_sample\":1,\"run_id\":\"run\",\"seed\":3,\"tasks\":2,"), "{text}");
        assert!(text.lines().nth(1).unwrap().contains("\"task_id\":\"t0\",\"gold\":null,\"answer\":\"cites nothing\""));
    }
}
