//! A sequential run in the reports: `sequential.csv` (every look × comparison), the sentence
//! the reports open with, and report.md's section. The numbers are the manifest's `sequential`
//! record, written by the run as it looked; nothing here recomputes them.

use std::fmt::Write;
use std::path::Path;

use critbench_storage::manifest::{SequentialLook, SequentialRecord, SequentialStatus};
use serde::{Serialize, Serializer};

use crate::ReportError;

/// One row of `sequential.csv`: one comparison at one look. Columns are documented in
/// `docs/FORMAT.md`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SequentialRow {
    /// The config (policy).
    pub config_id: String,
    /// The critic.
    pub critic: String,
    /// The first arm compared (A).
    pub arm_a: String,
    /// The second arm compared (B).
    pub arm_b: String,
    /// The look's number.
    pub look: u64,
    /// Tasks admitted at this look, and those that gave this comparison a value.
    pub tasks: u64,
    /// Tasks that gave this comparison a value.
    pub n_tasks: u64,
    /// The mean of the values (A − B), and the confidence sequence's bounds.
    pub estimate: Option<f64>,
    /// Lower bound of the confidence sequence.
    pub lower: f64,
    /// Upper bound of the confidence sequence.
    pub upper: f64,
    /// The confidence of this comparison's own sequence.
    pub confidence: f64,
    /// This comparison's verdict at the look.
    pub verdict: String,
    /// What the look decided for the run: `continue`, `settled` or `budget`.
    pub decision: String,
    /// Whether this comparison's verdict counts for the decision.
    pub decides: bool,
}

/// The rows of `sequential.csv`: each comparison's looks in order, comparisons in the record's
/// order (config, then critic).
pub fn rows(record: &SequentialRecord) -> Vec<SequentialRow> {
    let mut rows = Vec::with_capacity(record.comparisons.len() * record.looks.len());
    for (index, comparison) in record.comparisons.iter().enumerate() {
        for look in &record.looks {
            let Some(status) = look.comparisons.get(index) else { continue };
            rows.push(SequentialRow {
                config_id: comparison.config_id.clone(),
                critic: comparison.critic.clone(),
                arm_a: comparison.arm_a.clone(),
                arm_b: comparison.arm_b.clone(),
                look: look.look,
                tasks: look.tasks,
                n_tasks: status.tasks,
                estimate: status.estimate,
                lower: status.lower,
                upper: status.upper,
                confidence: record.rule.sequence_confidence,
                verdict: status.verdict.clone(),
                decision: look.decision.clone(),
                decides: comparison.decides,
            });
        }
    }
    rows
}

/// Writes `sequential.csv` into the run directory, atomically.
pub(crate) fn write_file(run_dir: &Path, record: &SequentialRecord) -> Result<(), ReportError> {
    crate::csv_files::write_csv(&run_dir.join(crate::outputs::SEQUENTIAL_CSV), &rows(record))
}

/// The comparison the reports draw: the one that decides, or with every one deciding, the last
/// to settle (the first still open when none stopped the run); ties go to the first.
pub fn shown_comparison(record: &SequentialRecord) -> Option<usize> {
    let deciding: Vec<usize> = (0..record.comparisons.len()).filter(|&i| record.comparisons[i].decides).collect();
    let settled_at = |index: usize| {
        record
            .looks
            .iter()
            .position(|look| look.comparisons.get(index).is_some_and(|s| s.verdict != "open"))
            .unwrap_or(usize::MAX)
    };
    let mut shown: Option<usize> = None;
    for index in deciding {
        if shown.is_none_or(|best| settled_at(index) > settled_at(best)) {
            shown = Some(index);
        }
    }
    shown
}

fn plural(count: u64, word: &str) -> String {
    format!("{count} {word}{}", if count == 1 { "" } else { "s" })
}

/// Percent of a share, whole.
fn percent(share: f64) -> String {
    format!("{:.0}%", 100.0 * share)
}

/// A difference on [−1, 1] in percentage points.
pub(crate) fn points(value: f64) -> String {
    format!("{:+.1} pp", 100.0 * value)
}

/// An interval in percentage points.
pub(crate) fn interval(status: &SequentialStatus) -> String {
    format!("{} to {}", points(status.lower), points(status.upper))
}

/// The verdict as a reader says it.
pub(crate) fn verdict_words(verdict: &str, arm_a: &str, arm_b: &str) -> String {
    match verdict {
        "a_better" => format!("{arm_a} better"),
        "b_better" => format!("{arm_b} better"),
        "equivalent" => "equivalent".to_string(),
        _ => "open".to_string(),
    }
}

/// What the run decided, after how many of the set's tasks, and what share of the model calls the
/// whole set would have cost: the line `critbench run` prints, and the start of [`sentence`].
pub fn headline(record: &SequentialRecord) -> String {
    let calls = &record.cost.calls;
    let spent = format!(
        "{} of the model calls ({} of the {} the whole set would have taken at this run's mean per task)",
        percent(calls.share),
        calls.used,
        calls.full
    );
    let Some(decision) = &record.decision else {
        let tasks = record.looks.last().map_or(0, |look| look.tasks);
        return format!(
            "Sequential run, not decided yet: {} over {} of {} tasks, none of which stopped it.",
            plural(record.looks.len() as u64, "look"),
            tasks,
            record.task_set
        );
    };
    match decision.decision.as_str() {
        "settled" => format!(
            "Sequential run: settled after {} of {} tasks (look {}), {}: {spent}.",
            decision.tasks,
            record.task_set,
            decision.look,
            settled_what(record, decision)
        ),
        _ => format!(
            "Sequential run: not settled within its budget of {} of {} tasks (look {}): {spent}.",
            record.budget, record.task_set, decision.look
        ),
    }
}

/// The sentence the reports open with: [`headline`], then which tasks ran and what the numbers
/// after it are over.
pub fn sentence(record: &SequentialRecord) -> String {
    let mut out = headline(record);
    let Some(decision) = &record.decision else { return out };
    let ran = record.tasks_run;
    let extra = ran.saturating_sub(decision.tasks);
    if extra > 0 {
        let _ = write!(
            out,
            " {ran} tasks ran: the {} of the next look were admitted before the decision and finished.",
            plural(extra, "task")
        );
    }
    let _ = write!(
        out,
        " The numbers below are over the {} that ran, drawn from the set in a seeded random order: the sample the \
         stopping rule found enough, not partial results.",
        plural(ran, "task")
    );
    out
}

/// What settled: the deciding comparison's verdict, or every comparison's.
fn settled_what(record: &SequentialRecord, decision: &SequentialLook) -> String {
    let (a, b) = (&record.rule.arm_a, &record.rule.arm_b);
    let deciding: Vec<(usize, &SequentialStatus)> = decision
        .comparisons
        .iter()
        .enumerate()
        .filter(|(index, _)| record.comparisons.get(*index).is_some_and(|c| c.decides))
        .collect();
    match deciding.as_slice() {
        [(index, status)] => {
            let comparison = &record.comparisons[*index];
            format!(
                "{} × {}: {a} − {b} {} ({} at {}), {}",
                comparison.config_id,
                comparison.critic,
                status.estimate.map_or_else(|| "–".to_string(), points),
                interval(status),
                confidence(record.rule.sequence_confidence),
                verdict_words(&status.verdict, a, b)
            )
        }
        all => {
            let better_a = all.iter().filter(|(_, s)| s.verdict == "a_better").count();
            let better_b = all.iter().filter(|(_, s)| s.verdict == "b_better").count();
            let equivalent = all.len() - better_a - better_b;
            let mut parts = Vec::new();
            if better_a > 0 {
                parts.push(format!("{a} better in {better_a}"));
            }
            if better_b > 0 {
                parts.push(format!("{b} better in {better_b}"));
            }
            if equivalent > 0 {
                parts.push(format!("equivalent in {equivalent}"));
            }
            format!("every one of the {} comparisons {a} − {b} settled ({})", all.len(), parts.join(", "))
        }
    }
}

/// What the rule is, for the section's second paragraph.
pub(crate) fn rule_sentence(record: &SequentialRecord) -> String {
    let rule = &record.rule;
    let together = if rule.settle == "all" && record.comparisons.len() > 1 {
        format!(
            "; every comparison must settle, so each sequence holds at {} (Bonferroni) for all {} to hold together at {}",
            confidence(rule.sequence_confidence),
            record.comparisons.len(),
            confidence(rule.confidence)
        )
    } else if rule.settle == "one" {
        format!(
            "; the comparison marked as deciding stops the run, the others are followed at the same level for the \
             record ({})",
            confidence(rule.sequence_confidence)
        )
    } else {
        String::new()
    };
    let margin = rule
        .margin
        .map_or_else(String::new, |margin| format!(", or lies within ±{:.1} pp (equivalence)", 100.0 * margin));
    format!(
        "Tasks were admitted in a seeded random order, whole (every arm and epoch of a task), and each task's value is \
         the mean over its epochs of `{}` passed − `{}` passed. Each interval is a {}, at {}{together}. It holds at \
         every look at once, so stopping on it keeps its guarantee, unlike a fixed-n interval looked at repeatedly. A \
         comparison settles when its interval excludes 0{margin}. Looks come after {} tasks, then every {}, and at the \
         budget ({} of the set's {} tasks). `sequential.csv` has every look of every comparison.",
        rule.arm_a,
        rule.arm_b,
        record.method,
        confidence(rule.confidence),
        rule.min_tasks,
        rule.check_every,
        record.budget,
        record.task_set
    )
}

/// A confidence level as a percentage, without trailing zeros (95%, 97.5%, 99.72%).
fn confidence(level: f64) -> String {
    let text = format!("{:.2}", 100.0 * level);
    format!("{}%", text.trim_end_matches('0').trim_end_matches('.'))
}

/// The looks a table shows: every one up to 30, else about 30 evenly spaced, the last always.
pub(crate) fn shown_looks(looks: &[SequentialLook]) -> Vec<&SequentialLook> {
    const MOST: usize = 30;
    if looks.len() <= MOST {
        return looks.iter().collect();
    }
    let step = looks.len().div_ceil(MOST);
    let mut shown: Vec<&SequentialLook> = looks.iter().step_by(step).collect();
    if shown.last().map(|l| l.look) != looks.last().map(|l| l.look) {
        shown.extend(looks.last());
    }
    shown
}

/// report.md's `## Sequential run` section: the sentence, the rule, every comparison at the
/// deciding look, and the sequence of the comparison [`shown_comparison`] picks.
pub(crate) fn markdown_section(record: &SequentialRecord) -> String {
    let mut out = String::from("## Sequential run\n\n");
    let _ = writeln!(out, "{}\n\n{}\n", sentence(record), rule_sentence(record));
    let at = record.decision.as_ref().or(record.looks.last());
    if let Some(look) = at {
        let _ = writeln!(
            out,
            "At look {} ({} tasks):\n\n| config | critic | A − B | tasks | estimate | confidence sequence | verdict |\n\
             |---|---|---|---:|---:|---|---|",
            look.look, look.tasks
        );
        for (comparison, status) in record.comparisons.iter().zip(&look.comparisons) {
            let _ = writeln!(
                out,
                "| {} | {} | {} − {} | {} | {} | {} | {}{} |",
                comparison.config_id,
                comparison.critic,
                comparison.arm_a,
                comparison.arm_b,
                status.tasks,
                status.estimate.map_or_else(|| "–".to_string(), points),
                interval(status),
                verdict_words(&status.verdict, &comparison.arm_a, &comparison.arm_b),
                if comparison.decides && record.rule.settle == "one" { " (decides)" } else { "" }
            );
        }
    }
    if let Some(index) = shown_comparison(record) {
        let comparison = &record.comparisons[index];
        let _ = writeln!(
            out,
            "\nThe sequence of {} × {}{}:\n\n| look | tasks | estimate | confidence sequence | decision |\n|---:|---:|---:|---|---|",
            comparison.config_id,
            comparison.critic,
            if record.rule.settle == "one" { ", the deciding comparison" } else { ", the last to settle" }
        );
        for look in shown_looks(&record.looks) {
            let Some(status) = look.comparisons.get(index) else { continue };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                look.look,
                look.tasks,
                status.estimate.map_or_else(|| "–".to_string(), points),
                interval(status),
                look.decision
            );
        }
    }
    out.push('\n');
    out
}

/// summary.json's `sequential`: what the run is, in a few fields (the manifest has the rest).
pub(crate) fn summary_json<S: Serializer>(record: &Option<SequentialRecord>, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Summary<'a> {
        message: String,
        decision: Option<&'a str>,
        look: Option<u64>,
        tasks_decided: Option<u64>,
        tasks_run: u64,
        task_set: u64,
        calls_share: f64,
    }
    let record = record.as_ref().expect("skipped when absent");
    Summary {
        message: sentence(record),
        decision: record.decision.as_ref().map(|d| d.decision.as_str()),
        look: record.decision.as_ref().map(|d| d.look),
        tasks_decided: record.decision.as_ref().map(|d| d.tasks),
        tasks_run: record.tasks_run,
        task_set: record.task_set,
        calls_share: record.cost.calls.share,
    }
    .serialize(s)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use critbench_storage::manifest::{SequentialComparison, SequentialCost, SequentialRule, Spent};

    fn status(tasks: u64, lower: f64, upper: f64, verdict: &str) -> SequentialStatus {
        SequentialStatus { tasks, estimate: Some((lower + upper) / 2.0), lower, upper, verdict: verdict.into() }
    }

    /// Two comparisons over 480 tasks: the first settles at look 1, the second at look 3.
    pub(crate) fn record() -> SequentialRecord {
        let comparison = |config: &str, critic: &str| SequentialComparison {
            config_id: config.into(),
            critic: critic.into(),
            arm_a: "feedback".into(),
            arm_b: "no-feedback".into(),
            population: 240,
            decides: true,
        };
        let look = |look: u64, tasks: u64, decision: &str, second: SequentialStatus| SequentialLook {
            look,
            tasks,
            decision: decision.into(),
            comparisons: vec![status(tasks / 2, 0.1, 0.5, "a_better"), second],
        };
        let looks = vec![
            look(1, 20, "continue", status(10, -0.4, 0.9, "open")),
            look(2, 30, "continue", status(15, -0.1, 0.7, "open")),
            look(3, 40, "settled", status(20, 0.02, 0.6, "a_better")),
        ];
        SequentialRecord {
            method: "hedged-capital betting confidence sequence".into(),
            rule: SequentialRule {
                arm_a: "feedback".into(),
                arm_b: "no-feedback".into(),
                confidence: 0.95,
                sequence_confidence: 0.975,
                margin: None,
                min_tasks: 20,
                check_every: 10,
                max_tasks: None,
                settle: "all".into(),
            },
            task_set: 480,
            budget: 480,
            comparisons: vec![comparison("p8", "rubric"), comparison("p8", "evidence")],
            decision: looks.last().cloned(),
            looks,
            tasks_run: 50,
            over_tasks_run: Vec::new(),
            cost: SequentialCost {
                tasks: Spent { used: 50, full: 480, share: 50.0 / 480.0 },
                loops: Spent { used: 900, full: 8640, share: 50.0 / 480.0 },
                calls: Spent { used: 1000, full: 9600, share: 50.0 / 480.0 },
                tokens: None,
            },
        }
    }

    #[test]
    fn the_csv_has_one_row_per_comparison_and_look() {
        let rows = rows(&record());
        assert_eq!(rows.len(), 6);
        let keys: Vec<(&str, &str, u64, &str)> =
            rows.iter().map(|r| (r.critic.as_str(), r.verdict.as_str(), r.look, r.decision.as_str())).collect();
        assert_eq!(
            keys[..3],
            [
                ("rubric", "a_better", 1, "continue"),
                ("rubric", "a_better", 2, "continue"),
                ("rubric", "a_better", 3, "settled")
            ]
        );
        assert_eq!(keys[3], ("evidence", "open", 1, "continue"));
        assert_eq!((rows[5].n_tasks, rows[5].lower, rows[5].confidence), (20, 0.02, 0.975));
        let dir = tempfile::tempdir().unwrap();
        write_file(dir.path(), &record()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(crate::outputs::SEQUENTIAL_CSV)).unwrap();
        assert!(
            text.starts_with(
                "config_id,critic,arm_a,arm_b,look,tasks,n_tasks,estimate,lower,upper,confidence,verdict,decision,decides\n\
                 p8,rubric,feedback,no-feedback,1,20,10,0.3,0.1,0.5,0.975,a_better,continue,true\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_sentence_says_when_it_settled_and_what_it_saved() {
        assert_eq!(
            sentence(&record()),
            "Sequential run: settled after 40 of 480 tasks (look 3), every one of the 2 comparisons feedback − \
             no-feedback settled (feedback better in 2): 10% of the model calls (1000 of the 9600 the whole set would \
             have taken at this run's mean per task). 50 tasks ran: the 10 tasks of the next look were admitted \
             before the decision and finished. The numbers below are over the 50 tasks that ran, drawn from the set \
             in a seeded random order: the sample the stopping rule found enough, not partial results."
        );
        let mut one = record();
        one.rule.settle = "one".into();
        one.comparisons[0].decides = false;
        assert!(
            sentence(&one).contains(
                "settled after 40 of 480 tasks (look 3), p8 × evidence: feedback − no-feedback +31.0 pp (+2.0 pp to \
                 +60.0 pp at 97.5%), feedback better:"
            ),
            "{}",
            sentence(&one)
        );
        let mut budget = record();
        budget.decision.as_mut().unwrap().decision = "budget".into();
        assert!(sentence(&budget).starts_with("Sequential run: not settled within its budget of 480 of 480 tasks"));
        let mut open = record();
        open.decision = None;
        assert_eq!(
            sentence(&open),
            "Sequential run, not decided yet: 3 looks over 40 of 480 tasks, none of which stopped it."
        );
    }

    #[test]
    fn the_last_comparison_to_settle_is_drawn_unless_one_decides() {
        assert_eq!(shown_comparison(&record()), Some(1));
        let mut one = record();
        one.comparisons[1].decides = false;
        assert_eq!(shown_comparison(&one), Some(0));
        let section = markdown_section(&record());
        assert!(section.starts_with("## Sequential run\n\nSequential run: settled after 40"), "{section}");
        assert!(
            section.contains(
                "| p8 | evidence | feedback − no-feedback | 20 | +31.0 pp | +2.0 pp to +60.0 pp | feedback better |"
            ),
            "{section}"
        );
        assert!(section.contains("The sequence of p8 × evidence, the last to settle:"), "{section}");
        assert!(section.contains("| 2 | 30 | +30.0 pp | -10.0 pp to +70.0 pp | continue |"), "{section}");
    }

    #[test]
    fn long_sequences_show_at_most_about_thirty_looks_and_the_last() {
        let looks: Vec<SequentialLook> =
            (1..=95).map(|look| SequentialLook { look, tasks: 10 * look, ..SequentialLook::default() }).collect();
        let shown: Vec<u64> = shown_looks(&looks).iter().map(|l| l.look).collect();
        // Every fourth look, and the last.
        assert_eq!(shown.len(), 25);
        assert_eq!((shown[0], shown[1], shown[23], shown[24]), (1, 5, 93, 95));
        assert_eq!(shown_looks(&looks[..30]).len(), 30);
    }
}
