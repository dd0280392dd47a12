//! A sequential run in the reports: `sequential.csv` (every look × comparison), the sentence
//! the reports open with, and report.md's section. The numbers are the manifest's `sequential`
//! record, written by the run as it looked; nothing here recomputes them.
//!
//! The tables of the same run (comparisons.csv) give each comparison's fixed-n interval over the
//! tasks that ran. The two are different intervals over different tasks (the sequence holds at
//! every look; the tables count the tasks of the look after the deciding one too), and on rare
//! draws they disagree: the sequence excludes 0 and the fixed-n interval does not. The reports
//! never print both a verdict and a table that contradicts it: a verdict is stated only where the
//! fixed-n interval of the same comparison agrees with it ([`stated`]); otherwise it is withheld,
//! and the reports say why.

use std::fmt::Write;
use std::path::Path;

use critbench_storage::manifest::{SequentialLook, SequentialRecord, SequentialStatus};
use serde::Serialize;

use crate::ReportError;
use crate::rows::ComparisonRow;

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

/// A comparison's fixed-n difference over the tasks that ran, as the tables give it, oriented as
/// the record's A − B: its interval, or none when the two sides are identical by design.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FixedN {
    /// The difference.
    pub diff: f64,
    /// Its 95% interval; `None` when identical by design.
    pub interval: Option<(f64, f64)>,
}

impl FixedN {
    /// The fixed-n row of comparison `index` of `record` in `comparisons` (the same config,
    /// critic and arms, in either order); `None` when the tables have none.
    pub fn of(record: &SequentialRecord, index: usize, comparisons: &[ComparisonRow]) -> Option<FixedN> {
        let compared = record.comparisons.get(index)?;
        let row = comparisons.iter().find(|c| {
            c.config_id == compared.config_id
                && c.critic == compared.critic
                && ((c.arm_a == compared.arm_a && c.arm_b == compared.arm_b)
                    || (c.arm_a == compared.arm_b && c.arm_b == compared.arm_a))
        })?;
        let interval = row.diff_lo.zip(row.diff_hi);
        Some(if row.arm_a == compared.arm_a {
            FixedN { diff: row.diff, interval }
        } else {
            // `+ 0.0` turns a negated zero into zero.
            FixedN { diff: -row.diff + 0.0, interval: interval.map(|(lo, hi)| (-hi + 0.0, -lo + 0.0)) }
        })
    }

    /// Whether this interval agrees with `verdict`: on the same side of 0 for a winner, within
    /// ±`margin` for equivalence. A difference identical by design agrees with equivalence only.
    fn agrees_with(&self, verdict: &str, margin: Option<f64>) -> bool {
        match (verdict, self.interval) {
            ("a_better", Some((lo, _))) => lo > 0.0,
            ("b_better", Some((_, hi))) => hi < 0.0,
            ("equivalent", Some((lo, hi))) => margin.is_some_and(|m| lo >= -m && hi <= m),
            ("a_better" | "b_better", None) => false,
            _ => true,
        }
    }

    /// The difference and its interval as the reports print them.
    fn words(&self) -> String {
        match self.interval {
            Some((lo, hi)) => format!("{} ({} to {})", points(self.diff), points(lo), points(hi)),
            None => format!("{} ({})", points(self.diff), crate::rows::IDENTICAL_BY_DESIGN),
        }
    }
}

/// What the reports state of a comparison's verdict.
#[derive(Clone, Debug, PartialEq)]
pub enum Stated {
    /// The sequence's verdict (`open`, `a_better`, `b_better`, `equivalent`): the fixed-n table of
    /// the same run agrees with it, or has no row for it.
    Verdict(String),
    /// The sequence settled, but the fixed-n interval of the same comparison over the tasks that
    /// ran does not agree: no verdict is stated.
    Withheld(FixedN),
}

/// The verdict the reports state for comparison `index` of `record` at `status`, read beside the
/// fixed-n rows of the same run (`comparisons`): the sequence's, unless the fixed-n interval
/// disagrees with it (see the module's documentation).
pub fn stated(
    record: &SequentialRecord,
    index: usize,
    status: &SequentialStatus,
    comparisons: &[ComparisonRow],
) -> Stated {
    if status.verdict == "open" {
        return Stated::Verdict(status.verdict.clone());
    }
    match FixedN::of(record, index, comparisons) {
        Some(fixed) if !fixed.agrees_with(&status.verdict, record.rule.margin) => Stated::Withheld(fixed),
        _ => Stated::Verdict(status.verdict.clone()),
    }
}

/// The verdict cell of the reports' tables: the verdict in words, or why it is withheld.
pub(crate) fn stated_words(stated: &Stated, arm_a: &str, arm_b: &str) -> String {
    match stated {
        Stated::Verdict(verdict) => verdict_words(verdict, arm_a, arm_b),
        Stated::Withheld(fixed) => {
            format!("withheld: the fixed-n interval over the tasks that ran is {}", fixed.words())
        }
    }
}

/// The deciding comparisons whose verdict at the decision the reports withhold.
fn withheld_at_decision(record: &SequentialRecord, comparisons: &[ComparisonRow]) -> Vec<(usize, FixedN)> {
    let Some(decision) = &record.decision else { return Vec::new() };
    decision
        .comparisons
        .iter()
        .enumerate()
        .filter(|(index, _)| record.comparisons.get(*index).is_some_and(|c| c.decides))
        .filter_map(|(index, status)| match stated(record, index, status, comparisons) {
            Stated::Withheld(fixed) => Some((index, fixed)),
            Stated::Verdict(_) => None,
        })
        .collect()
}

/// What the run decided, after how many of the set's tasks, and what share of the model calls the
/// whole set would have cost: the line `critbench run` prints, and the start of [`sentence`].
/// `comparisons` are the run's fixed-n rows (comparisons.csv): a verdict they contradict is
/// withheld ([`stated`]).
pub fn headline(record: &SequentialRecord, comparisons: &[ComparisonRow]) -> String {
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
    let withheld = withheld_at_decision(record, comparisons);
    match decision.decision.as_str() {
        "settled" if !withheld.is_empty() => format!(
            "Sequential run: stopped after {} of {} tasks (look {}), {}: {spent}.",
            decision.tasks,
            record.task_set,
            decision.look,
            withheld_what(record, decision, &withheld)
        ),
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
pub fn sentence(record: &SequentialRecord, comparisons: &[ComparisonRow]) -> String {
    let mut out = headline(record, comparisons);
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

/// Why a run that the sequence settled states no verdict, or not every one: the deciding
/// comparisons whose fixed-n interval over the tasks that ran disagrees (`withheld`, not empty).
fn withheld_what(record: &SequentialRecord, decision: &SequentialLook, withheld: &[(usize, FixedN)]) -> String {
    let (a, b) = (&record.rule.arm_a, &record.rule.arm_b);
    let why = "the two are different intervals over different tasks, which disagree only on rare draws, so neither \
               is taken as settling the question";
    let deciding = record.comparisons.iter().filter(|c| c.decides).count();
    if let ([(index, fixed)], 1) = (withheld, deciding) {
        let comparison = &record.comparisons[*index];
        let status = &decision.comparisons[*index];
        return format!(
            "when the sequence of {} × {} settled ({a} − {b} {} ({} at {}), {}), but no verdict is stated: the fixed-n \
             interval of the same comparison over the {} that ran is {}, and {why}",
            comparison.config_id,
            comparison.critic,
            status.estimate.map_or_else(|| "–".to_string(), points),
            interval(status),
            confidence(record.rule.sequence_confidence),
            verdict_words(&status.verdict, a, b),
            plural(record.tasks_run, "task"),
            fixed.words(),
        );
    }
    let named: Vec<String> = withheld
        .iter()
        .map(|(index, fixed)| {
            let comparison = &record.comparisons[*index];
            format!("{} × {}: {}", comparison.config_id, comparison.critic, fixed.words())
        })
        .collect();
    format!(
        "when every one of the {deciding} comparisons {a} − {b} had settled, but {} of them {} no verdict stated: the \
         fixed-n interval over the {} that ran disagrees ({}), and {why}",
        withheld.len(),
        if withheld.len() == 1 { "has" } else { "have" },
        plural(record.tasks_run, "task"),
        named.join("; "),
    )
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
         budget ({} of the set's {} tasks). `sequential.csv` has every look of every comparison. The tables below \
         give each comparison's fixed-n interval over every task that ran, as if that number had been fixed in \
         advance; a verdict is stated only where that interval agrees with it (on the same side of 0, or within the \
         margin), and is otherwise withheld.",
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
/// deciding look, and the sequence of the comparison [`shown_comparison`] picks; `comparisons` are
/// the run's fixed-n rows, beside which each verdict is stated or withheld.
pub(crate) fn markdown_section(record: &SequentialRecord, comparisons: &[ComparisonRow]) -> String {
    let mut out = String::from("## Sequential run\n\n");
    let _ = writeln!(out, "{}\n\n{}\n", sentence(record, comparisons), rule_sentence(record));
    let at = record.decision.as_ref().or(record.looks.last());
    if let Some(look) = at {
        let _ = writeln!(
            out,
            "At look {} ({} tasks):\n\n| config | critic | A − B | tasks | estimate | confidence sequence | verdict |\n\
             |---|---|---|---:|---:|---|---|",
            look.look, look.tasks
        );
        for (index, (comparison, status)) in record.comparisons.iter().zip(&look.comparisons).enumerate() {
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
                stated_words(&stated(record, index, status, comparisons), &comparison.arm_a, &comparison.arm_b),
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
#[derive(Serialize)]
pub(crate) struct SummaryJson<'a> {
    message: String,
    decision: Option<&'a str>,
    look: Option<u64>,
    tasks_decided: Option<u64>,
    tasks_run: u64,
    task_set: u64,
    calls_share: f64,
    /// Deciding comparisons whose verdict at the decision is withheld.
    verdicts_withheld: u64,
}

impl<'a> SummaryJson<'a> {
    /// The fields of `record`, read beside the run's fixed-n rows (`comparisons`).
    pub(crate) fn of(record: &'a SequentialRecord, comparisons: &[ComparisonRow]) -> SummaryJson<'a> {
        SummaryJson {
            message: sentence(record, comparisons),
            decision: record.decision.as_ref().map(|d| d.decision.as_str()),
            look: record.decision.as_ref().map(|d| d.look),
            tasks_decided: record.decision.as_ref().map(|d| d.tasks),
            tasks_run: record.tasks_run,
            task_set: record.task_set,
            calls_share: record.cost.calls.share,
            verdicts_withheld: withheld_at_decision(record, comparisons).len() as u64,
        }
    }
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
            sentence(&record(), &[]),
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
            sentence(&one, &[]).contains(
                "settled after 40 of 480 tasks (look 3), p8 × evidence: feedback − no-feedback +31.0 pp (+2.0 pp to \
                 +60.0 pp at 97.5%), feedback better:"
            ),
            "{}",
            sentence(&one, &[])
        );
        let mut budget = record();
        budget.decision.as_mut().unwrap().decision = "budget".into();
        assert!(
            sentence(&budget, &[]).starts_with("Sequential run: not settled within its budget of 480 of 480 tasks")
        );
        let mut open = record();
        open.decision = None;
        assert_eq!(
            sentence(&open, &[]),
            "Sequential run, not decided yet: 3 looks over 40 of 480 tasks, none of which stopped it."
        );
    }

    #[test]
    fn the_last_comparison_to_settle_is_drawn_unless_one_decides() {
        assert_eq!(shown_comparison(&record()), Some(1));
        let mut one = record();
        one.comparisons[1].decides = false;
        assert_eq!(shown_comparison(&one), Some(0));
        let section = markdown_section(&record(), &[]);
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

    /// The fixed-n row of `config` × `critic`, feedback − no-feedback (or the other way round).
    fn fixed(config: &str, critic: &str, (a, b): (&str, &str), diff: f64, bounds: Option<(f64, f64)>) -> ComparisonRow {
        ComparisonRow {
            config_id: config.into(),
            critic: critic.into(),
            arm_a: a.into(),
            arm_b: b.into(),
            diff,
            diff_lo: bounds.map(|b| b.0),
            diff_hi: bounds.map(|b| b.1),
            ..ComparisonRow::default()
        }
    }

    #[test]
    fn a_verdict_the_fixed_n_table_contradicts_is_withheld_and_one_it_agrees_with_stands() {
        let record = record();
        let agreeing = [
            fixed("p8", "rubric", ("feedback", "no-feedback"), 0.3, Some((0.2, 0.4))),
            // The other orientation: no-feedback − feedback, below 0, is feedback ahead.
            fixed("p8", "evidence", ("no-feedback", "feedback"), -0.3, Some((-0.5, -0.01))),
        ];
        assert_eq!(sentence(&record, &agreeing), sentence(&record, &[]));
        assert_eq!(SummaryJson::of(&record, &agreeing).verdicts_withheld, 0);
        // The evidence comparison's fixed-n interval over the 50 tasks that ran holds 0.
        let holding =
            [agreeing[0].clone(), fixed("p8", "evidence", ("feedback", "no-feedback"), 0.05, Some((-0.02, 0.12)))];
        let said = sentence(&record, &holding);
        assert!(
            said.starts_with(
                "Sequential run: stopped after 40 of 480 tasks (look 3), when every one of the 2 comparisons feedback \
                 − no-feedback had settled, but 1 of them has no verdict stated: the fixed-n interval over the 50 tasks \
                 that ran disagrees (p8 × evidence: +5.0 pp (-2.0 pp to +12.0 pp)), and the two are different \
                 intervals over different tasks"
            ),
            "{said}"
        );
        assert!(!said.contains("feedback better"), "{said}");
        assert_eq!(SummaryJson::of(&record, &holding).verdicts_withheld, 1);
        let section = markdown_section(&record, &holding);
        assert!(
            section.contains(
                "| p8 | evidence | feedback − no-feedback | 20 | +31.0 pp | +2.0 pp to +60.0 pp | withheld: the fixed-n \
                 interval over the tasks that ran is +5.0 pp (-2.0 pp to +12.0 pp) |"
            ),
            "{section}"
        );
        assert!(
            section.contains(
                "| p8 | rubric | feedback − no-feedback | 20 | +30.0 pp | +10.0 pp to +50.0 pp | feedback better |"
            ),
            "{section}"
        );
        // One deciding comparison, contradicted: the run stopped, and says no winner.
        let mut one = record.clone();
        one.rule.settle = "one".into();
        one.comparisons[0].decides = false;
        let said = sentence(&one, &holding);
        assert!(
            said.starts_with(
                "Sequential run: stopped after 40 of 480 tasks (look 3), when the sequence of p8 × evidence settled \
                 (feedback − no-feedback +31.0 pp (+2.0 pp to +60.0 pp at 97.5%), feedback better), but no verdict is \
                 stated: the fixed-n interval of the same comparison over the 50 tasks that ran is +5.0 pp (-2.0 pp \
                 to +12.0 pp)"
            ),
            "{said}"
        );
        // A table that finds the arms identical by design contradicts a winner too.
        let identical = [fixed("p8", "evidence", ("feedback", "no-feedback"), 0.0, None)];
        assert!(sentence(&one, &identical).contains("is +0.0 pp (identical by design)"));
        // Equivalence stands only within the margin.
        let mut equivalent = one.clone();
        equivalent.rule.margin = Some(0.1);
        let status = SequentialStatus { verdict: "equivalent".into(), ..equivalent.looks[2].comparisons[1].clone() };
        let within = fixed("p8", "evidence", ("feedback", "no-feedback"), 0.0, Some((-0.05, 0.05)));
        let beyond = fixed("p8", "evidence", ("feedback", "no-feedback"), 0.1, Some((0.02, 0.18)));
        assert_eq!(stated(&equivalent, 1, &status, &[within]), Stated::Verdict("equivalent".into()));
        assert!(matches!(stated(&equivalent, 1, &status, &[beyond]), Stated::Withheld(_)));
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
