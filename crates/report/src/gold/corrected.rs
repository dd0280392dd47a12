//! The run's pass rates and paired differences corrected by the labels: `corrected.csv` and
//! `corrected_comparisons.csv`.
//!
//! Outcomes stream by once. Each (config, critic, task) keeps its loops until all of them have
//! arrived (epochs × arms, from the manifest), then folds: a labelled task into a short list (the
//! sample is small), an unlabelled one into a histogram of what the critic said of it (tasks with
//! the same loops and passes are one entry). Memory is the open tasks, the labelled tasks and the
//! histograms, not the run; and every number depends only on the rows, not their order: the
//! labelled tasks are taken by task id and the histograms sorted.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::queries::final_answers::LoopKey;
use critbench_core::Arm;
use critbench_stats::ppi::{
    Corrected as Estimate, ErrorRate, LabelledPairs, LabelledTask, UnlabelledPairs, UnlabelledTask,
    corrected_difference, corrected_rate, error_rate,
};
use critbench_storage::manifest::Manifest;
use critbench_storage::tables::OutcomeStats;
use serde::Serialize;

use super::{ALPHA, GoldError, Labels};
use crate::rows::ADJUDICATED_SUFFIX;
use crate::{Report, ReportError, RowError};

/// One config × critic × arm: the critic's pass rate, the gold labels' and the corrected one.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CorrectedRow {
    /// The config (policy).
    pub config_id: String,
    /// The critic.
    pub critic: String,
    /// The arm.
    pub arm: String,
    /// Loops and tasks, and those labelled.
    pub n: u64,
    /// Tasks.
    pub n_tasks: u64,
    /// Labelled loops.
    pub n_labelled: u64,
    /// Labelled tasks.
    pub n_tasks_labelled: u64,
    /// The critic's pass rate over every loop (as in summary.csv).
    pub pass_rate: f64,
    /// On the labelled loops: the critic's pass rate and the gold labels'.
    pub pass_rate_labelled: Option<f64>,
    /// The gold labels' pass rate of the labelled loops.
    pub gold_pass_rate: Option<f64>,
    /// The estimate of the gold pass rate with its 95% interval (clipped to [0, 1]), by `method`:
    /// PPI++ on enough labelled tasks, else the labelled answers' own gold rate with the
    /// small-sample interval; empty without a labelled task.
    pub pass_rate_corrected: Option<f64>,
    /// Lower end of the 95% interval of `pass_rate_corrected`.
    pub corrected_lo: Option<f64>,
    /// Upper end of the 95% interval of `pass_rate_corrected`.
    pub corrected_hi: Option<f64>,
    /// PPI++'s power-tuning λ; empty when the labels alone were used.
    pub lambda: Option<f64>,
    /// Labelled answers gold fails, those the critic passed, and their share with its interval.
    pub gold_fail: u64,
    /// Of those, the ones the critic passed.
    pub false_pass: u64,
    /// `false_pass / gold_fail`.
    pub false_pass_rate: Option<f64>,
    /// Lower end of the 95% interval of `false_pass_rate`.
    pub false_pass_rate_lo: Option<f64>,
    /// Upper end of the 95% interval of `false_pass_rate`.
    pub false_pass_rate_hi: Option<f64>,
    /// Labelled answers gold passes, those the critic failed, and their share with its interval.
    pub gold_pass: u64,
    /// Of those, the ones the critic failed.
    pub false_fail: u64,
    /// `false_fail / gold_pass`.
    pub false_fail_rate: Option<f64>,
    /// Lower end of the 95% interval of `false_fail_rate`.
    pub false_fail_rate_lo: Option<f64>,
    /// Upper end of the 95% interval of `false_fail_rate`.
    pub false_fail_rate_hi: Option<f64>,
    /// How `pass_rate_corrected` was estimated: `prediction-powered (PPI++)`, or `labels alone, …`
    /// with the small-sample interval's method; empty without a labelled task.
    pub method: String,
    /// How the intervals of `false_pass_rate` and `false_fail_rate` were computed (`wilson,
    /// effective sample size` on many labelled tasks, else `clopper-pearson[, effective sample
    /// size]`); empty without a share.
    pub false_pass_interval: String,
    /// See `false_pass_interval`.
    pub false_fail_interval: String,
}

/// Two arms of one config × critic on the epochs both ran: the critic's difference, the gold
/// labels' on the labelled tasks and the corrected one.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CorrectedComparison {
    /// The config (policy).
    pub config_id: String,
    /// The critic.
    pub critic: String,
    /// The first arm compared (A).
    pub arm_a: String,
    /// The second arm compared (B).
    pub arm_b: String,
    /// Pairs (task × epoch both arms ran) and their tasks, and those labelled.
    pub n_pairs: u64,
    /// Tasks of the pairs.
    pub n_tasks: u64,
    /// Labelled pairs.
    pub n_pairs_labelled: u64,
    /// Labelled tasks.
    pub n_tasks_labelled: u64,
    /// The critic's pass rate of A minus B over every pair (as `diff` in comparisons.csv).
    pub diff: f64,
    /// On the labelled pairs: the critic's difference and the gold labels'.
    pub diff_labelled: Option<f64>,
    /// The gold labels' difference on the labelled pairs.
    pub gold_diff: Option<f64>,
    /// The estimate of the gold difference with its 95% interval (clipped to [−1, 1]), by
    /// `method`; empty without a labelled task.
    pub diff_corrected: Option<f64>,
    /// Lower end of the 95% interval of `diff_corrected`.
    pub diff_lo: Option<f64>,
    /// Upper end of the 95% interval of `diff_corrected`.
    pub diff_hi: Option<f64>,
    /// PPI++'s power-tuning λ; empty when the labels alone were used.
    pub lambda: Option<f64>,
    /// How `diff_corrected` was estimated, as `method` in corrected.csv.
    pub method: String,
}

/// Everything the labels correct, with the sample they came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Corrected {
    /// One row per config × critic × arm (`corrected.csv`).
    pub rows: Vec<CorrectedRow>,
    /// One row per pair of arms (`corrected_comparisons.csv`).
    pub comparisons: Vec<CorrectedComparison>,
    /// The labels file, its sample's seed and tasks, and the answers labelled.
    pub labels_file: PathBuf,
    /// The sample's seed.
    pub seed: u64,
    /// Tasks sampled.
    pub tasks: usize,
    /// Answers labelled.
    pub answers: usize,
    /// Loops those answers stand for.
    pub loops: usize,
}

/// One loop of an open task.
struct Loop {
    arm: u16,
    epoch: u32,
    passed: bool,
    gold: Option<bool>,
}

/// A labelled task of one arm, with its answers' error counts: (false passes, gold fails) and
/// (false fails, gold passes).
struct LabelledArm {
    task_id: String,
    task: LabelledTask,
    false_pass: (u64, u64),
    false_fail: (u64, u64),
}

#[derive(Default)]
struct ArmFold {
    name: String,
    loops: u64,
    passes: u64,
    tasks: u64,
    labelled: Vec<LabelledArm>,
    unlabelled: BTreeMap<UnlabelledTask, u64>,
}

/// Two arms' pairs, oriented from the arm with the smaller index (A) to the other (B).
#[derive(Default)]
struct PairFold {
    pairs: u64,
    tasks: u64,
    /// Σ (A passed − B passed) over every pair.
    net: i64,
    labelled: Vec<(String, LabelledPairs)>,
    unlabelled: BTreeMap<UnlabelledPairs, u64>,
}

struct Group {
    config_id: String,
    critic: String,
    arms: Vec<ArmFold>,
    pairs: BTreeMap<(u16, u16), PairFold>,
}

struct OpenTask {
    task_id: String,
    labelled: bool,
    loops: Vec<Loop>,
}

struct Fold<'l> {
    labels: &'l Labels,
    expected: Option<usize>,
    groups: Vec<Group>,
    index: HashMap<(String, String), usize>,
    last_group: Option<usize>,
    open: HashMap<(usize, u128), OpenTask>,
}

impl Fold<'_> {
    fn group(&mut self, config_id: &str, critic: &str) -> usize {
        // Rows of one config × critic come together, so the last group nearly always matches.
        if let Some(last) = self.last_group.filter(|&g| {
            let group = &self.groups[g];
            group.config_id == config_id && group.critic == critic
        }) {
            return last;
        }
        let slot = self.slot(config_id, critic);
        self.last_group = Some(slot);
        slot
    }

    fn slot(&mut self, config_id: &str, critic: &str) -> usize {
        if let Some(&slot) = self.index.get(&(config_id.to_string(), critic.to_string())) {
            return slot;
        }
        self.groups.push(Group {
            config_id: config_id.to_string(),
            critic: critic.to_string(),
            arms: Vec::new(),
            pairs: BTreeMap::new(),
        });
        self.index.insert((config_id.to_string(), critic.to_string()), self.groups.len() - 1);
        self.groups.len() - 1
    }

    fn add(&mut self, row: &OutcomeStats<'_>) -> Result<(), RowError> {
        let slot = self.group(row.config_id, row.critic);
        let group = &mut self.groups[slot];
        let arm = match group.arms.iter().position(|a| a.name == row.arm) {
            Some(arm) => arm,
            None => {
                group.arms.push(ArmFold { name: row.arm.to_string(), ..ArmFold::default() });
                group.arms.len() - 1
            }
        };
        let arm = u16::try_from(arm).map_err(|_| RowError::TooManyArms)?;
        let labelled = self.labels.tasks.contains(row.task_id);
        let gold = if labelled {
            let key = LoopKey {
                config_id: row.config_id.to_string(),
                arm: Arm::parse(row.arm).expect("an outcome's arm is checked to be core's when read"),
                critic: row.critic.to_string(),
                task_id: row.task_id.to_string(),
                epoch: row.epoch,
            };
            let label = self.labels.gold.get(&key).copied();
            Some(label.ok_or(RowError::NoGoldLabel { key })?)
        } else {
            None
        };
        let key = (slot, critbench_storage::hash128(row.task_id));
        let task = self.open.entry(key).or_insert_with(|| OpenTask {
            task_id: row.task_id.to_string(),
            labelled,
            loops: Vec::new(),
        });
        task.loops.push(Loop { arm, epoch: row.epoch, passed: row.passed, gold });
        if self.expected == Some(task.loops.len()) {
            let task = self.open.remove(&key).expect("the task was just looked up");
            close(&mut self.groups[slot], task)?;
        }
        Ok(())
    }
}

/// Folds one (config, critic, task)'s loops into its group.
fn close(group: &mut Group, mut task: OpenTask) -> Result<(), RowError> {
    crate::totals::sort_task_loops(
        &mut task.loops,
        |l| (l.arm, l.epoch),
        (&task.task_id, &group.config_id, &group.critic),
        |arm| group.arms[arm as usize].name.clone(),
    )?;
    let runs: Vec<&[Loop]> = task.loops.chunk_by(|a, b| a.arm == b.arm).collect();
    for loops in &runs {
        let fold = &mut group.arms[loops[0].arm as usize];
        let (count, passes) = (loops.len() as u64, loops.iter().filter(|l| l.passed).count() as u64);
        fold.loops += count;
        fold.passes += passes;
        fold.tasks += 1;
        if task.labelled {
            let gold = |l: &Loop| l.gold == Some(true);
            let count_where = |test: &dyn Fn(&Loop) -> bool| loops.iter().filter(|l| test(l)).count() as u64;
            fold.labelled.push(LabelledArm {
                task_id: task.task_id.clone(),
                task: LabelledTask { loops: count, gold: count_where(&gold), predicted: passes },
                false_pass: (count_where(&|l| !gold(l) && l.passed), count_where(&|l| !gold(l))),
                false_fail: (count_where(&|l| gold(l) && !l.passed), count_where(&gold)),
            });
        } else {
            *fold.unlabelled.entry(UnlabelledTask { loops: count, predicted: passes }).or_default() += 1;
        }
    }
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            let mut pairs = LabelledPairs::default();
            // Both runs are sorted by epoch: walk them together.
            let (mut x, mut y) = (0, 0);
            while x < a.len() && y < b.len() {
                match a[x].epoch.cmp(&b[y].epoch) {
                    std::cmp::Ordering::Less => x += 1,
                    std::cmp::Ordering::Greater => y += 1,
                    std::cmp::Ordering::Equal => {
                        pairs.pairs += 1;
                        pairs.predicted_a += u64::from(a[x].passed);
                        pairs.predicted_b += u64::from(b[y].passed);
                        pairs.gold_a += u64::from(a[x].gold == Some(true));
                        pairs.gold_b += u64::from(b[y].gold == Some(true));
                        x += 1;
                        y += 1;
                    }
                }
            }
            if pairs.pairs == 0 {
                continue;
            }
            let fold = group.pairs.entry((a[0].arm, b[0].arm)).or_default();
            fold.pairs += pairs.pairs;
            fold.tasks += 1;
            fold.net += pairs.predicted_a as i64 - pairs.predicted_b as i64;
            if task.labelled {
                fold.labelled.push((task.task_id.clone(), pairs));
            } else {
                let key = UnlabelledPairs {
                    pairs: pairs.pairs,
                    predicted_a: pairs.predicted_a,
                    predicted_b: pairs.predicted_b,
                };
                *fold.unlabelled.entry(key).or_default() += 1;
            }
        }
    }
    Ok(())
}

fn share(count: u64, of: u64) -> Option<f64> {
    (of > 0).then(|| count as f64 / of as f64)
}

/// An estimate's point, bounds, λ and method; all empty without one.
type Columns = (Option<f64>, Option<f64>, Option<f64>, Option<f64>, String);

fn columns(estimate: Option<Estimate>) -> Columns {
    match estimate {
        Some(e) => (Some(e.estimate), Some(e.low), Some(e.high), e.lambda, e.method.as_str().to_string()),
        None => (None, None, None, None, String::new()),
    }
}

fn rate_columns(rate: Option<ErrorRate>) -> (Option<f64>, Option<f64>, Option<f64>, String) {
    (
        rate.map(|r| r.rate),
        rate.map(|r| r.low),
        rate.map(|r| r.high),
        rate.map_or_else(String::new, |r| r.method.as_str().to_string()),
    )
}

fn arm_row(group: &Group, fold: &mut ArmFold) -> CorrectedRow {
    fold.labelled.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    let tasks: Vec<LabelledTask> = fold.labelled.iter().map(|l| l.task).collect();
    let unlabelled: Vec<(UnlabelledTask, u64)> = fold.unlabelled.iter().map(|(k, v)| (*k, *v)).collect();
    let n_labelled: u64 = tasks.iter().map(|t| t.loops).sum();
    let (estimate, lo, hi, lambda, method) = columns(corrected_rate(&tasks, &unlabelled, ALPHA).ok());
    let false_pass: Vec<(u64, u64)> = fold.labelled.iter().map(|l| l.false_pass).collect();
    let false_fail: Vec<(u64, u64)> = fold.labelled.iter().map(|l| l.false_fail).collect();
    let sum = |pairs: &[(u64, u64)]| pairs.iter().fold((0, 0), |(c, o), (x, y)| (c + x, o + y));
    let ((fp, gold_fail), (ff, gold_pass)) = (sum(&false_pass), sum(&false_fail));
    let (false_pass_rate, false_pass_rate_lo, false_pass_rate_hi, false_pass_interval) =
        rate_columns(error_rate(&false_pass, ALPHA));
    let (false_fail_rate, false_fail_rate_lo, false_fail_rate_hi, false_fail_interval) =
        rate_columns(error_rate(&false_fail, ALPHA));
    CorrectedRow {
        config_id: group.config_id.clone(),
        critic: group.critic.clone(),
        arm: fold.name.clone(),
        n: fold.loops,
        n_tasks: fold.tasks,
        n_labelled,
        n_tasks_labelled: tasks.len() as u64,
        pass_rate: share(fold.passes, fold.loops).unwrap_or(0.0),
        pass_rate_labelled: share(tasks.iter().map(|t| t.predicted).sum(), n_labelled),
        gold_pass_rate: share(tasks.iter().map(|t| t.gold).sum(), n_labelled),
        pass_rate_corrected: estimate,
        corrected_lo: lo,
        corrected_hi: hi,
        lambda,
        gold_fail,
        false_pass: fp,
        false_pass_rate,
        false_pass_rate_lo,
        false_pass_rate_hi,
        gold_pass,
        false_fail: ff,
        false_fail_rate,
        false_fail_rate_lo,
        false_fail_rate_hi,
        method,
        false_pass_interval,
        false_fail_interval,
    }
}

/// The pairs of A and B, oriented A − B whichever arm the fold took first.
fn comparison_row(group: &Group, a: u16, b: u16) -> Option<CorrectedComparison> {
    let (key, flip) = if a < b { ((a, b), false) } else { ((b, a), true) };
    let fold = group.pairs.get(&key)?;
    let orient = |p: LabelledPairs| {
        if flip {
            LabelledPairs {
                gold_a: p.gold_b,
                gold_b: p.gold_a,
                predicted_a: p.predicted_b,
                predicted_b: p.predicted_a,
                ..p
            }
        } else {
            p
        }
    };
    let mut labelled: Vec<(&String, LabelledPairs)> = fold.labelled.iter().map(|(id, p)| (id, orient(*p))).collect();
    labelled.sort_by(|x, y| x.0.cmp(y.0));
    let labelled: Vec<LabelledPairs> = labelled.into_iter().map(|(_, p)| p).collect();
    let mut unlabelled: Vec<(UnlabelledPairs, u64)> = fold
        .unlabelled
        .iter()
        .map(|(p, count)| {
            let p = if flip {
                UnlabelledPairs { predicted_a: p.predicted_b, predicted_b: p.predicted_a, ..*p }
            } else {
                *p
            };
            (p, *count)
        })
        .collect();
    // In the orientation's own order, so the sums round the same whichever arm came first.
    unlabelled.sort_unstable();
    let n_pairs_labelled: u64 = labelled.iter().map(|p| p.pairs).sum();
    let difference = |a: u64, b: u64| (n_pairs_labelled > 0).then(|| (a as f64 - b as f64) / n_pairs_labelled as f64);
    let (estimate, lo, hi, lambda, method) = columns(corrected_difference(&labelled, &unlabelled, ALPHA).ok());
    let net = if flip { -fold.net } else { fold.net };
    Some(CorrectedComparison {
        config_id: group.config_id.clone(),
        critic: group.critic.clone(),
        arm_a: group.arms[a as usize].name.clone(),
        arm_b: group.arms[b as usize].name.clone(),
        n_pairs: fold.pairs,
        n_tasks: fold.tasks,
        n_pairs_labelled,
        n_tasks_labelled: labelled.len() as u64,
        diff: if fold.pairs > 0 { net as f64 / fold.pairs as f64 } else { 0.0 },
        diff_labelled: difference(
            labelled.iter().map(|p| p.predicted_a).sum(),
            labelled.iter().map(|p| p.predicted_b).sum(),
        ),
        gold_diff: difference(labelled.iter().map(|p| p.gold_a).sum(), labelled.iter().map(|p| p.gold_b).sum()),
        diff_corrected: estimate,
        diff_lo: lo,
        diff_hi: hi,
        lambda,
        method,
    })
}

impl Corrected {
    /// Folds the outcomes in `paths` with `labels`, in the order of `report`'s summary rows and
    /// comparisons between arms that ran (an adjudicated twin's answer is another draft, which
    /// the sample does not hold).
    pub(crate) fn compute(
        paths: &[PathBuf],
        manifest: Option<&Manifest>,
        labels: &Labels,
        report: &Report,
    ) -> Result<Corrected, ReportError> {
        let expected = manifest.and_then(|m| {
            let (epochs, arms) = (m.experiment.epochs? as usize, m.experiment.arms.len());
            (epochs > 0 && arms > 0).then_some(epochs * arms)
        });
        let mut fold = Fold {
            labels,
            expected,
            groups: Vec::new(),
            index: HashMap::new(),
            last_group: None,
            open: HashMap::new(),
        };
        critbench_storage::tables::for_each_outcome_stats_in(paths, |row| fold.add(row))?;
        let open: Vec<((usize, u128), OpenTask)> = fold.open.drain().collect();
        for ((slot, _), task) in open {
            close(&mut fold.groups[slot], task)?;
        }
        let mut groups = fold.groups;
        let slot = |config: &str, critic: &str| fold.index.get(&(config.to_string(), critic.to_string())).copied();
        let mut rows = Vec::new();
        for summary in report.summary.rows.iter().filter(|r| !r.arm.ends_with(ADJUDICATED_SUFFIX)) {
            let Some(slot) = slot(&summary.config_id, &summary.critic) else { continue };
            let group = &mut groups[slot];
            let Some(arm) = group.arms.iter().position(|a| a.name == summary.arm) else { continue };
            let mut arm_fold = std::mem::take(&mut group.arms[arm]);
            rows.push(arm_row(group, &mut arm_fold));
            group.arms[arm] = arm_fold;
        }
        let mut comparisons = Vec::new();
        for comparison in report.summary.comparisons.iter().filter(|c| c.between_arms_that_ran()) {
            let Some(slot) = slot(&comparison.config_id, &comparison.critic) else { continue };
            let group = &groups[slot];
            let position = |name: &str| group.arms.iter().position(|a| a.name == name).map(|i| i as u16);
            let (Some(a), Some(b)) = (position(&comparison.arm_a), position(&comparison.arm_b)) else { continue };
            comparisons.extend(comparison_row(group, a, b));
        }
        Ok(Corrected {
            rows,
            comparisons,
            labels_file: labels.path.clone(),
            seed: labels.header.seed,
            tasks: labels.header.tasks,
            answers: labels.header.answers,
            loops: labels.header.loops,
        })
    }

    /// Writes `corrected.csv` and `corrected_comparisons.csv` into `run_dir`.
    pub(crate) fn write_files(&self, run_dir: &Path) -> Result<(), ReportError> {
        write_csv(&run_dir.join(crate::outputs::CORRECTED_CSV), &self.rows)?;
        write_csv(&run_dir.join(crate::outputs::CORRECTED_COMPARISONS_CSV), &self.comparisons)
    }
}

/// A CSV of `rows`, with its header line even when there are none, written atomically.
fn write_csv<T: Serialize + Default>(path: &Path, rows: &[T]) -> Result<(), ReportError> {
    let failed = |e: csv::Error| GoldError::Write { path: path.into(), source: std::io::Error::other(e.to_string()) };
    let mut writer = csv::Writer::from_writer(Vec::new());
    if rows.is_empty() {
        // A default row's header, without the row.
        let mut scratch = csv::Writer::from_writer(Vec::new());
        scratch.serialize(T::default()).map_err(failed)?;
        let text = scratch.into_inner().map_err(|e| failed(e.into_error().into()))?;
        let header = text.split(|b| *b == b'\n').next().unwrap_or_default().to_vec();
        writer.write_record(String::from_utf8_lossy(&header).split(',')).map_err(failed)?;
    }
    for row in rows {
        writer.serialize(row).map_err(failed)?;
    }
    let bytes = writer.into_inner().map_err(|e| failed(e.into_error().into()))?;
    critbench_storage::files::write_atomically(path, &bytes)
        .map_err(|source| GoldError::Write { path: path.into(), source }.into())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use critbench_storage::tables::{OutcomeRow, OutcomeWriter};

    use super::*;
    use crate::gold::SampleHeader;

    const TASKS: usize = 40;
    const EPOCHS: u32 = 3;

    /// Feedback passes its critic more often than its answers are right; gold passes a loop by a
    /// rule of its own. Tasks t00–t09 are labelled.
    fn loops() -> Vec<(OutcomeRow, bool)> {
        let mut rows = Vec::new();
        for task in 0..TASKS {
            for epoch in 0..EPOCHS {
                for arm in ["feedback", "no-feedback"] {
                    let i = task as u32 * 7 + epoch * 3 + u32::from(arm == "feedback");
                    let passed = if arm == "feedback" { !i.is_multiple_of(4) } else { i.is_multiple_of(3) };
                    let gold = if arm == "feedback" { i % 5 < 3 } else { i.is_multiple_of(3) || i.is_multiple_of(7) };
                    let row = OutcomeRow { epoch, ..OutcomeRow::bare(&format!("t{task:02}"), arm, passed, 2) };
                    rows.push((row, gold));
                }
            }
        }
        rows
    }

    fn labels(rows: &[(OutcomeRow, bool)]) -> Labels {
        let tasks: BTreeSet<String> = (0..10).map(|t| format!("t{t:02}")).collect();
        let gold = rows
            .iter()
            .filter(|(row, _)| tasks.contains(&row.task_id))
            .map(|(row, gold)| {
                let key = LoopKey {
                    config_id: row.config_id.clone(),
                    arm: row.arm,
                    critic: row.critic.clone(),
                    task_id: row.task_id.clone(),
                    epoch: row.epoch,
                };
                (key, *gold)
            })
            .collect();
        let header = SampleHeader {
            critbench_sample: 1,
            run_id: "r".into(),
            seed: 1,
            tasks: 10,
            answers: 60,
            loops: 60,
            keys_sha256: String::new(),
            how_to_label: String::new(),
        };
        Labels { path: "labels.jsonl".into(), header, gold, tasks }
    }

    fn corrected(rows: &[(OutcomeRow, bool)], labels: &Labels, manifest: Option<&Manifest>) -> Corrected {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outcomes.parquet");
        let mut writer = OutcomeWriter::create(&path).unwrap();
        for (row, _) in rows {
            writer.push(row.clone()).unwrap();
        }
        writer.close().unwrap();
        let report = crate::summarize_files(std::slice::from_ref(&path), manifest).unwrap();
        Corrected::compute(&[path], manifest, labels, &report).unwrap()
    }

    #[test]
    fn each_arm_is_corrected_by_its_labelled_tasks_whatever_the_row_order() {
        let rows = loops();
        let labels = labels(&rows);
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "manifest_version": 1, "schema_version": 10, "critbench_version": "t", "run_id": "r", "started_at": "", "finished_at": "",
            "wall_seconds": 0.0, "loops": 240, "critiques": 240, "sweep": "direct",
            "experiment": {"name": "n", "epochs": EPOCHS, "arms": ["feedback", "no-feedback"]},
        }))
        .unwrap();
        let forward = corrected(&rows, &labels, Some(&manifest));
        let mut reversed = rows.clone();
        reversed.reverse();
        assert_eq!(corrected(&reversed, &labels, Some(&manifest)), forward, "row order changes nothing");
        assert_eq!(corrected(&reversed, &labels, None), forward, "nor does a missing manifest");

        // The feedback row by hand: each task's share of passing loops, gold and critic.
        let feedback: Vec<&(OutcomeRow, bool)> = rows.iter().filter(|(r, _)| r.arm.as_str() == "feedback").collect();
        let mut labelled = Vec::new();
        let mut unlabelled: BTreeMap<UnlabelledTask, u64> = BTreeMap::new();
        for task in 0..TASKS {
            let of_task: Vec<&&(OutcomeRow, bool)> =
                feedback.iter().filter(|(r, _)| r.task_id == format!("t{task:02}")).collect();
            let predicted = of_task.iter().filter(|(r, _)| r.passed).count() as u64;
            let gold = of_task.iter().filter(|(_, g)| *g).count() as u64;
            if task < 10 {
                labelled.push(LabelledTask { loops: 3, gold, predicted });
            } else {
                *unlabelled.entry(UnlabelledTask { loops: 3, predicted }).or_default() += 1;
            }
        }
        let unlabelled: Vec<(UnlabelledTask, u64)> = unlabelled.into_iter().collect();
        let want = corrected_rate(&labelled, &unlabelled, ALPHA).unwrap();
        let row = &forward.rows[0];
        assert_eq!(
            (row.arm.as_str(), row.n, row.n_tasks, row.n_labelled, row.n_tasks_labelled),
            ("feedback", 120, 40, 30, 10)
        );
        assert_eq!(row.pass_rate_corrected, Some(want.estimate));
        assert_eq!((row.corrected_lo, row.corrected_hi, row.lambda), (Some(want.low), Some(want.high), want.lambda));
        // Ten labelled tasks are too few for PPI's normal interval: the labels alone, exactly.
        assert_eq!((row.lambda, row.method.as_str()), (None, "labels alone, clopper-pearson, effective sample size"));
        let labelled_rows: Vec<&&(OutcomeRow, bool)> =
            feedback.iter().filter(|(r, _)| labels.tasks.contains(&r.task_id)).collect();
        let false_passes = labelled_rows.iter().filter(|(r, g)| r.passed && !*g).count() as u64;
        let gold_fails = labelled_rows.iter().filter(|(_, g)| !*g).count() as u64;
        assert_eq!((row.false_pass, row.gold_fail), (false_passes, gold_fails));
        assert!(false_passes > 0, "the fixture has false passes to count");

        // The comparison is feedback − no-feedback, however the arms first appeared.
        let comparison = &forward.comparisons[0];
        assert_eq!((comparison.arm_a.as_str(), comparison.arm_b.as_str()), ("feedback", "no-feedback"));
        assert_eq!((comparison.n_pairs, comparison.n_pairs_labelled, comparison.n_tasks_labelled), (120, 30, 10));
        let rate = |arm: &str| rows.iter().filter(|(r, _)| r.arm.as_str() == arm && r.passed).count() as f64 / 120.0;
        assert!((comparison.diff - (rate("feedback") - rate("no-feedback"))).abs() < 1e-12);
        let gold_of = |arm: &str| labelled_rows_of(&rows, &labels, arm);
        assert!((comparison.gold_diff.unwrap() - (gold_of("feedback") - gold_of("no-feedback"))).abs() < 1e-12);
    }

    /// The gold pass rate of `arm` on the labelled tasks.
    fn labelled_rows_of(rows: &[(OutcomeRow, bool)], labels: &Labels, arm: &str) -> f64 {
        let of: Vec<bool> = rows
            .iter()
            .filter(|(r, _)| r.arm.as_str() == arm && labels.tasks.contains(&r.task_id))
            .map(|(_, g)| *g)
            .collect();
        of.iter().filter(|g| **g).count() as f64 / of.len() as f64
    }

    #[test]
    fn one_labelled_task_gets_the_labels_own_rate_and_none_a_dash() {
        let rows = loops();
        let mut labels = labels(&rows);
        labels.tasks = BTreeSet::from(["t00".to_string()]);
        labels.gold.retain(|key, _| key.task_id == "t00");
        let corrected = corrected(&rows, &labels, None);
        let row = &corrected.rows[0];
        // One task of three loops: its gold rate, with Clopper–Pearson over that one task.
        assert_eq!((row.n_tasks_labelled, row.pass_rate_corrected), (1, row.gold_pass_rate));
        let (low, high) = (row.corrected_lo.unwrap(), row.corrected_hi.unwrap());
        assert!(low < 0.2 && high > 0.8, "({low}, {high})");
        assert!(corrected.comparisons[0].diff_corrected.is_some());
        let markdown = crate::gold::render::markdown_section(&corrected);
        assert!(markdown.contains("| p8-r3-stall-e0 | rubric | feedback | 1 of 40 tasks |"), "{markdown}");
        assert!(!markdown.contains("A dash:"), "{markdown}");
        // No labelled task in the run: every correction is a dash, said once.
        labels.tasks.clear();
        labels.gold.clear();
        let none = super::super::render::markdown_section(&self::corrected(&rows, &labels, None));
        assert!(none.contains("A dash: no labelled task in that row"), "{none}");
    }
}
