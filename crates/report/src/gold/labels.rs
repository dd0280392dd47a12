//! Reading a labelled sample back: every answer of the sample `critbench sample` drew from this
//! run, each with a boolean `gold`, and nothing else.
//!
//! The header's seed and number of tasks redraw the sample from the run, reading each sampled
//! loop's final answer and verdict again; the file is accepted only when that sample's keys hash
//! to the header's `keys_sha256` and its lines are exactly that sample's answers, each with the
//! text its loops returned and listing exactly its loops with the critic's verdicts on them. A file
//! drawn from another run, a header edited to another seed, lines mixed in from another sample, an
//! answer edited or swapped with another line's, or a verdict edited are refused with the line or
//! field at fault: a label is a person's verdict on the text they read, so it counts only when
//! that text, and the critic's verdict it is set against, are the run's.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::queries::final_answers::LoopKey;
use critbench_core::Arm;
use serde::Deserialize;

use super::GoldError;
use super::sample::{
    AnsweredLoop, SAMPLE_VERSION, Sample, SampleHeader, SampleRequest, answer_id, draw_sample, loop_key,
};
use crate::ReportError;

/// A labelled sample, checked against the run.
#[derive(Clone, Debug, PartialEq)]
pub struct Labels {
    /// The file it was read from.
    pub path: PathBuf,
    /// The sample's header line.
    pub header: SampleHeader,
    /// Every sampled loop's gold label (that of the answer it returned).
    pub gold: BTreeMap<LoopKey, bool>,
    /// The sampled tasks.
    pub tasks: BTreeSet<String>,
}

/// A line as people leave it: the fields the check reads (the others are ignored).
#[derive(Deserialize)]
struct Line {
    answer_id: String,
    task_id: String,
    #[serde(default)]
    gold: serde_json::Value,
    answer: String,
    loops: Vec<LineLoop>,
}

#[derive(Deserialize)]
struct LineLoop {
    config_id: String,
    arm: String,
    critic: String,
    epoch: u32,
    passed: bool,
    /// Null where the run's score is not finite (JSON has no NaN), and when left out.
    score: Option<f64>,
}

/// Reads the labels file at `path` and checks it against the run in `run_dir`.
pub fn read_labels(run_dir: &Path, path: &Path) -> Result<Labels, ReportError> {
    let checked = check_file(run_dir, path, false)?;
    let mut gold = BTreeMap::new();
    for answer in &checked.sample.answers {
        for l in &answer.loops {
            gold.insert(loop_key(&answer.task_id, l), answer.gold.unwrap_or_default());
        }
    }
    Ok(Labels { path: path.into(), header: checked.header, gold, tasks: checked.sample.tasks })
}

/// A labels file being filled in: the sample drawn again from the run, each answer's `gold` as the
/// file has it (`None` where it is still empty), and the file's header line as it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Labelling {
    /// The file.
    pub path: PathBuf,
    /// The sample, every answer's `gold` read from the file.
    pub sample: Sample,
    /// The file's header line, kept byte for byte when the file is written again.
    header_line: String,
}

impl Labelling {
    /// Reads the labels file at `path`, some or every `gold` still empty, with every check of
    /// [`read_labels`] but the one that each answer is labelled: a file of another run, another
    /// sample, or with an answer or verdict that is not the run's is refused naming the line.
    pub fn read(run_dir: &Path, path: &Path) -> Result<Labelling, ReportError> {
        let checked = check_file(run_dir, path, true)?;
        Ok(Labelling { path: path.into(), sample: checked.sample, header_line: checked.header_line })
    }

    /// Sets the `gold` of the answer `answer_id` (`None` empties it); false when the sample has no
    /// such answer.
    pub fn set(&mut self, answer_id: &str, gold: Option<bool>) -> bool {
        match self.sample.answers.iter_mut().find(|a| a.answer_id == answer_id) {
            Some(answer) => {
                answer.gold = gold;
                true
            }
            None => false,
        }
    }

    /// Answers whose `gold` is filled.
    pub fn labelled(&self) -> usize {
        self.sample.answers.iter().filter(|a| a.gold.is_some()).count()
    }

    /// The file's text: its header line as read, then every answer of the sample with its `gold`,
    /// one a line, as `critbench sample` writes them.
    pub fn text(&self) -> String {
        let mut text = self.header_line.clone();
        text.push('\n');
        for answer in &self.sample.answers {
            text.push_str(&serde_json::to_string(answer).expect("an answer serializes"));
            text.push('\n');
        }
        text
    }
}

/// A labels file checked against the run: the sample drawn again, each answer's `gold` as the file
/// has it, and the header line.
struct Checked {
    header: SampleHeader,
    sample: Sample,
    header_line: String,
}

/// The checks of a labels file; with `partial`, an empty `gold` (or an answer without its line) is
/// not refused but left `None`.
fn check_file(run_dir: &Path, path: &Path, partial: bool) -> Result<Checked, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| GoldError::Read { path: path.into(), source })?;
    let at = |line: usize, message: String| GoldError::Line { path: path.into(), line, message };
    let whole = |message: String| GoldError::File { path: path.into(), message };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.trim().is_empty());
    let Some((first, header_line)) = lines.next() else {
        return Err(
            whole("is empty; expected the file `critbench sample` writes, with every gold filled in".into()).into()
        );
    };
    let header: SampleHeader = serde_json::from_str(header_line).map_err(|e| {
        at(
            first,
            format!("is not the header `critbench sample` writes ({{\"critbench_sample\": 1, \"run_id\": …}}): {e}"),
        )
    })?;
    if header.critbench_sample != SAMPLE_VERSION {
        return Err(at(
            first,
            format!("`critbench_sample` is {}; this critbench reads version {SAMPLE_VERSION}", header.critbench_sample),
        )
        .into());
    }
    let other_run = |actual: &str| {
        whole(format!(
            "is a sample of run `{}`, not of {} (run `{actual}`)\n  hint: draw one from this run: critbench sample {} \
             --tasks {} --seed {} --out FILE",
            header.run_id,
            run_dir.display(),
            run_dir.display(),
            header.tasks,
            header.seed
        ))
    };
    // The manifest's id first, so a file of another run is named as such before the redraw.
    let run_id = run_id_of(run_dir)?;
    if !run_id.is_empty() && header.run_id != run_id {
        return Err(other_run(&run_id).into());
    }
    let drawn = draw_sample(run_dir, &SampleRequest { tasks: header.tasks, seed: header.seed })?;
    if header.run_id != drawn.header.run_id {
        return Err(other_run(&drawn.header.run_id).into());
    }
    if drawn.header.keys_sha256 != header.keys_sha256 {
        return Err(whole(format!(
            "is not the sample `critbench sample {} --tasks {} --seed {}` draws from this run (its loops hash to {}, \
             the header says {})\n  hint: label the file that command writes, without editing its header",
            run_dir.display(),
            header.tasks,
            header.seed,
            &drawn.header.keys_sha256[..16],
            header.keys_sha256.get(..16).unwrap_or(&header.keys_sha256)
        ))
        .into());
    }
    let loops_by_key = drawn.loops_by_key();
    let answers: HashMap<&str, &super::Answer> = drawn.answers.iter().map(|a| (a.answer_id.as_str(), a)).collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut gold: HashMap<String, bool> = HashMap::new();
    for (number, text) in lines {
        let line: Line = serde_json::from_str(text).map_err(|e| at(number, format!("is not an answer line: {e}")))?;
        for l in &line.loops {
            // A loop whose arm is none of core's is no loop of the run: refused as one.
            let key = Arm::parse(&l.arm).map(|arm| LoopKey {
                config_id: l.config_id.clone(),
                arm,
                critic: l.critic.clone(),
                task_id: line.task_id.clone(),
                epoch: l.epoch,
            });
            let shown = LoopKey::describe(&l.config_id, &l.arm, &l.critic, &line.task_id, l.epoch);
            match key.as_ref().and_then(|key| loops_by_key.get(key)) {
                None if !drawn.tasks.contains(&line.task_id) => {
                    return Err(at(
                        number,
                        format!(
                            "task `{}` is not in this sample (seed {}, {} tasks): the line comes from another sample",
                            line.task_id, header.seed, header.tasks
                        ),
                    )
                    .into());
                }
                None => return Err(at(number, format!("the run has no loop {shown}")).into()),
                Some((answer, _)) if answer.answer_id != line.answer_id => {
                    return Err(at(
                        number,
                        format!(
                            "the loop {shown} returned answer {}, not this line's {}: keep each line's loops as \
                             `critbench sample` wrote them",
                            answer.answer_id, line.answer_id
                        ),
                    )
                    .into());
                }
                Some((_, verdict)) if !same_verdict(l, verdict) => {
                    return Err(at(
                        number,
                        format!(
                            "the loop {shown} says passed {}, score {}; the run's verdict is passed {}, score {}: \
                             keep each loop's `passed` and `score` as `critbench sample` wrote them",
                            l.passed,
                            l.score.map_or("null".to_string(), |score| score.to_string()),
                            verdict.passed,
                            verdict.score
                        ),
                    )
                    .into());
                }
                Some(_) => {}
            }
        }
        let Some(answer) = answers.get(line.answer_id.as_str()) else {
            return Err(at(number, format!("answer `{}` is not an answer of this sample", line.answer_id)).into());
        };
        if answer.task_id != line.task_id {
            return Err(at(
                number,
                format!("answer {} is of task `{}`, not `{}`", line.answer_id, answer.task_id, line.task_id),
            )
            .into());
        }
        if line.answer != answer.answer {
            return Err(at(number, not_the_runs_answer(&line, answer, &answers)).into());
        }
        if let Some(missing) = answer.loops.iter().find(|expected| {
            !line.loops.iter().any(|l| {
                (l.config_id.as_str(), l.arm.as_str(), l.critic.as_str(), l.epoch)
                    == (expected.config_id.as_str(), expected.arm.as_str(), expected.critic.as_str(), expected.epoch)
            })
        }) {
            return Err(at(
                number,
                format!(
                    "answer {} lists {} of its {} loops; {} is missing",
                    line.answer_id,
                    line.loops.len(),
                    answer.loops.len(),
                    loop_key(&answer.task_id, missing)
                ),
            )
            .into());
        }
        if let Some(earlier) = seen.insert(line.answer_id.clone(), number) {
            return Err(at(
                number,
                format!("answer {} is labelled twice: lines {earlier} and {number}", line.answer_id),
            )
            .into());
        }
        let label = match &line.gold {
            serde_json::Value::Bool(label) => *label,
            serde_json::Value::Null if partial => continue,
            serde_json::Value::Null => {
                return Err(at(
                    number,
                    format!(
                        "`gold` is empty (answer {} of task `{}`): fill it with true or false",
                        line.answer_id, line.task_id
                    ),
                )
                .into());
            }
            other => {
                return Err(at(
                    number,
                    format!(
                        "`gold` is {other}; expected true or false (answer {} of task `{}`)",
                        line.answer_id, line.task_id
                    ),
                )
                .into());
            }
        };
        gold.insert(line.answer_id.clone(), label);
    }
    let unlabelled: Vec<&super::Answer> = drawn.answers.iter().filter(|a| !seen.contains_key(&a.answer_id)).collect();
    if let (Some(first), false) = (unlabelled.first(), partial) {
        return Err(whole(format!(
            "{} of the sample's {} answers have no line, the first answer {} of task `{}`: every answer needs its gold",
            unlabelled.len(),
            drawn.answers.len(),
            first.answer_id,
            first.task_id
        ))
        .into());
    }
    let mut sample = drawn;
    for answer in &mut sample.answers {
        answer.gold = gold.get(&answer.answer_id).copied();
    }
    Ok(Checked { header, sample, header_line: header_line.to_string() })
}

/// Whether a line's verdict on a loop is the run's. The score is compared to within one part in
/// 10¹² (absolute below 1): the sample writes the shortest text that reads back as the run's
/// score, but the JSON reader's default parsing may land a unit in the last place off on 17 digits.
fn same_verdict(line: &LineLoop, run: &AnsweredLoop) -> bool {
    let same_score = match line.score {
        None => !run.score.is_finite(),
        Some(score) => (score - run.score).abs() <= 1e-12 * score.abs().max(run.score.abs()).max(1.0),
    };
    line.passed == run.passed && same_score
}

/// Why a line's answer text is not the run's: the text of another answer of the task (two lines'
/// answers swapped), or text the task's loops never returned (edited after sampling).
fn not_the_runs_answer(line: &Line, answer: &super::Answer, answers: &HashMap<&str, &super::Answer>) -> String {
    let first = loop_key(&answer.task_id, &answer.loops[0]);
    let others = match answer.loops.len() - 1 {
        0 => String::new(),
        1 => " and 1 other loop".to_string(),
        more => format!(" and {more} other loops"),
    };
    let id_of_text = answer_id(&line.task_id, &line.answer);
    match answers.get(id_of_text.as_str()) {
        Some(other) if other.task_id == line.task_id => format!(
            "the answer is the text of answer {id_of_text}, not of this line's {}, which the loop {first}{others} \
             returned: were two lines' answers swapped? keep each line's `answer` as `critbench sample` wrote it",
            answer.answer_id
        ),
        _ => format!(
            "the answer is not the text the loop {first}{others} returned (answer {}): edited after sampling? keep \
             each line's `answer` as `critbench sample` wrote it",
            answer.answer_id
        ),
    }
}

/// The run's id, from its manifest (empty when it has none).
fn run_id_of(run_dir: &Path) -> Result<String, ReportError> {
    let manifest = critbench_storage::manifest::Manifest::read(run_dir)?;
    Ok(manifest.map(|m| m.run_id).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(passed: bool, score: Option<f64>) -> LineLoop {
        LineLoop { config_id: "c".into(), arm: "feedback".into(), critic: "r".into(), epoch: 0, passed, score }
    }

    fn run(passed: bool, score: f64) -> AnsweredLoop {
        AnsweredLoop { config_id: "c".into(), arm: Arm::Feedback, critic: "r".into(), epoch: 0, passed, score }
    }

    #[test]
    fn a_verdict_is_the_runs_only_with_its_pass_and_its_score() {
        assert!(same_verdict(&written(true, Some(8.5)), &run(true, 8.5)));
        // One unit in the last place, as a reader's float parsing may land, is the same score.
        let score = 7.123_456_789_012_345_f64;
        assert!(same_verdict(&written(false, Some(f64::from_bits(score.to_bits() + 1))), &run(false, score)));
        assert!(!same_verdict(&written(false, Some(8.5)), &run(true, 8.5)), "passed edited");
        assert!(!same_verdict(&written(true, Some(8.5)), &run(true, 8.0)), "score edited");
        assert!(!same_verdict(&written(true, Some(0.0)), &run(true, 1e-9)), "a small score edited");
        // A score JSON cannot hold is written as null, and only a null is it.
        assert!(same_verdict(&written(true, None), &run(true, f64::NAN)));
        assert!(!same_verdict(&written(true, None), &run(true, 8.5)), "score left out");
        assert!(!same_verdict(&written(true, Some(0.0)), &run(true, f64::NAN)));
    }
}
