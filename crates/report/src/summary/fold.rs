//! The summary's one pass over the outcomes, in any order.
//!
//! Per config × critic × arm the aggregates are running sums. Paired comparisons and clustered
//! intervals need each task's loops together, so every (config, critic, task) keeps a small
//! accumulator of its loops until all of them have arrived (epochs × arms, from the manifest),
//! then folds it into histograms of distinct per-task vectors and drops it. Tasks that never
//! complete (failed loops, or no manifest to say how many to expect) fold at the end with what
//! they have. Memory is O(open tasks + distinct vectors), not O(rows), and every total is
//! independent of the order rows arrive in: integer counts, exact float sums, sorted histograms.
//!
//! Each group keeps the same totals once more per task kind (a task's kind is that of its first
//! row), so the reports can give the headline per kind from the same single pass.
//!
//! The pass is made over the rows in memory ([`summarize_rows`]), or over the tables streamed, for
//! the steering critic and every held-out judge at once ([`summarize_judged`]).

use crate::backend::SameByConstruction;
use std::collections::HashMap;
use std::path::PathBuf;

use critbench_storage::manifest::Manifest;
use critbench_storage::tables::{OutcomeRow, OutcomeStats};

use super::notes::{censored_note, notes, time_note};
use super::{Judged, KindReport, Partial, Summary, arm_order, order_of};
use crate::experiment::{run_currency, run_seed};
use crate::keys::{KeyMap, task_hash};
use crate::power::PowerRow;
use crate::queries::judge_verdicts::JudgeVerdicts;
use crate::queries::round_spend::loop_key;
use crate::rows::{ADJUDICATED_SUFFIX, ComparisonRow, SummaryRow};
use crate::spend::{Spend, SpendTotals, TaskLoops};
use crate::totals::{ArmTotals, Design, Loop, PairTotals, matched_epochs};
use crate::{ReportError, RowError};

/// One config × critic: its arms (in order of first appearance) and their pairs.
struct Group {
    config_id: String,
    critic: String,
    arms: Vec<ArmTotals>,
    /// (arm index of A, of B) → their comparison; A is the arm that reads first.
    pairs: HashMap<(u16, u16), PairTotals>,
    /// The same totals per task kind, in order of first appearance.
    kinds: Vec<KindTotals>,
    /// Pass rate against spend, per arm and pair (`cost_curves.csv`, `cost_comparisons.csv`).
    spend: SpendTotals,
}

/// One task kind's arms (indexed as the group's, added as they appear) and pairs.
struct KindTotals {
    kind: Option<String>,
    arms: Vec<ArmTotals>,
    pairs: HashMap<(u16, u16), PairTotals>,
}

impl Group {
    /// The index of `kind` in `kinds`, added if new. Kinds are few, so a scan is enough.
    fn kind(&mut self, kind: Option<&str>) -> usize {
        match self.kinds.iter().position(|k| k.kind.as_deref() == kind) {
            Some(index) => index,
            None => {
                self.kinds.push(KindTotals { kind: kind.map(String::from), arms: Vec::new(), pairs: HashMap::new() });
                self.kinds.len() - 1
            }
        }
    }

    /// The totals of `arm` among the tasks of kind `kind`.
    fn kind_arm(&mut self, kind: usize, arm: u16) -> &mut ArmTotals {
        let totals = &mut self.kinds[kind];
        while totals.arms.len() <= arm as usize {
            let like = &self.arms[totals.arms.len()];
            totals.arms.push(ArmTotals::new(like.name.clone(), like.rank.clone()));
        }
        &mut totals.arms[arm as usize]
    }
}

/// Folds one task's runs of loops (one run per arm, in arm order) into per-task histograms of
/// `arms` and the pairs of every two arms (A being the one that reads first).
fn fold_task(arms: &mut [ArmTotals], pairs: &mut HashMap<(u16, u16), PairTotals>, runs: &[(u16, &[Loop])]) {
    for (arm, loops) in runs {
        let passes = loops.iter().filter(|l| l.passed).count() as i64;
        let first = loops.iter().filter(|l| l.first).count() as i64;
        *arms[*arm as usize].clusters.entry((loops.len() as u64, passes, first)).or_default() += 1;
    }
    for (i, (arm_i, loops_i)) in runs.iter().enumerate() {
        for (arm_j, loops_j) in &runs[i + 1..] {
            let (a, b, loops_a, loops_b) = if arms[*arm_i as usize].rank <= arms[*arm_j as usize].rank {
                (*arm_i, *arm_j, loops_i, loops_j)
            } else {
                (*arm_j, *arm_i, loops_j, loops_i)
            };
            pairs.entry((a, b)).or_default().add_task(matched_epochs(loops_a, loops_b));
        }
    }
}

/// The summary rows of `arms` in reading order, and the comparison of every two that have pairs;
/// with `power`, also the comparisons' `power.csv` rows. `max_revisions` is the config's cap, when
/// the manifest gives it, and `same` what the backend makes the same by construction: with the
/// arms' design, what their loops share ([`Design::of_arms`]).
#[allow(clippy::too_many_arguments)]
fn group_rows(
    (config_id, max_revisions, same): (&str, Option<u32>, SameByConstruction),
    critic: &str,
    arms: &[ArmTotals],
    pairs: &HashMap<(u16, u16), PairTotals>,
    seed: u64,
    summary: &mut Vec<SummaryRow>,
    comparisons: &mut Vec<ComparisonRow>,
    mut power: Option<&mut Vec<PowerRow>>,
) {
    let mut order: Vec<usize> = (0..arms.len()).collect();
    order.sort_by(|&a, &b| arms[a].rank.cmp(&arms[b].rank));
    summary.extend(order.iter().filter(|&&arm| arms[arm].n > 0).map(|&arm| arms[arm].row(config_id, critic, seed)));
    for (i, &a) in order.iter().enumerate() {
        for &b in &order[i + 1..] {
            if !comparable_arms(&arms[a].name, &arms[b].name) {
                continue;
            }
            if let Some(pair) = pairs.get(&(a as u16, b as u16)).filter(|p| !p.is_empty()) {
                let (label_a, label_b) = (&arms[a].name, &arms[b].name);
                let design = Design::of_arms(label_a, label_b, max_revisions, same);
                comparisons.push(pair.row((config_id, critic), (label_a, label_b), design, seed));
                if let Some(power) = power.as_deref_mut() {
                    power.extend(pair.power(config_id, critic, label_a, label_b));
                }
            }
        }
    }
}

/// A (config, critic, task) whose loops have not all arrived.
#[derive(Default)]
pub(super) struct OpenTask {
    task_id: String,
    /// Index of the task's kind in its group's `kinds` (that of its first row).
    kind: usize,
    loops: Vec<Loop>,
    /// A rescoring's censored loops of the task: they arrive, but have no outcome to count.
    censored: usize,
}

/// Folds outcome rows, in any order, into a [`Report`].
pub(crate) struct Summarizer {
    /// Loops per (config, critic, task) when the run finished every one: epochs × arms.
    pub(super) expected: Option<usize>,
    groups: Vec<Group>,
    index: HashMap<String, HashMap<String, usize>>,
    last_group: Option<usize>,
    pub(super) open: KeyMap<(usize, u128), OpenTask>,
    /// Emptied accumulators, reused so closing and opening tasks does not allocate.
    spare: Vec<OpenTask>,
    run_id: Option<String>,
    /// The most tasks open at once: what the summary's memory grows with.
    pub(crate) peak_open: usize,
    /// A rescoring's censored loops per (config, critic, arm): left out of every number, and
    /// said so in the notes.
    censored: HashMap<(String, String, String), u64>,
    /// Each loop's rounds' tokens and cost, when the run counted them (`with_spends`).
    spends: Option<std::sync::Arc<crate::queries::round_spend::RoundSpends>>,
}

impl Summarizer {
    pub(crate) fn new(manifest: Option<&Manifest>) -> Summarizer {
        let epochs = manifest.and_then(|m| m.experiment.epochs).map(u64::from);
        // An adjudicated arm's loops count twice: as themselves and as the `+adjudicate` arm.
        let arms = manifest
            .filter(|m| !m.experiment.arms.is_empty())
            .map(|m| m.experiment.arms.len() + m.experiment.adjudicate.len());
        let expected = match (epochs, arms) {
            (Some(epochs), Some(arms)) if epochs > 0 && arms > 0 => Some(epochs as usize * arms),
            _ => None,
        };
        Summarizer {
            expected,
            groups: Vec::new(),
            index: HashMap::new(),
            last_group: None,
            open: KeyMap::default(),
            spare: Vec::new(),
            run_id: None,
            peak_open: 0,
            censored: HashMap::new(),
            spends: None,
        }
    }

    /// Gives each loop its rounds' tokens and cost (from `trajectories.parquet`), for the cost
    /// curves in money and in tokens.
    pub(crate) fn with_spends(
        mut self,
        spends: std::sync::Arc<crate::queries::round_spend::RoundSpends>,
    ) -> Summarizer {
        self.spends = Some(spends).filter(|s| !s.is_empty());
        self
    }

    /// A summarizer of a held-out judge's reading: no loop has an adjudicated twin, so a task is
    /// complete at epochs × arms loops.
    pub(crate) fn for_judge(manifest: Option<&Manifest>) -> Summarizer {
        let mut summarizer = Summarizer::new(manifest);
        let twins = manifest.map_or(0, |m| m.experiment.adjudicate.len());
        let epochs = manifest.and_then(|m| m.experiment.epochs).map_or(0, |e| e as usize);
        summarizer.expected = summarizer.expected.map(|loops| loops - twins * epochs).filter(|&loops| loops > 0);
        summarizer
    }

    fn group(&mut self, config_id: &str, critic: &str) -> usize {
        // Rows of one config × critic come together, so the last group nearly always matches.
        if let Some(last) = self.last_group {
            let group = &self.groups[last];
            if group.config_id == config_id && group.critic == critic {
                return last;
            }
        }
        let slot = match self.index.get(config_id).and_then(|critics| critics.get(critic)) {
            Some(&slot) => slot,
            None => {
                let slot = self.groups.len();
                self.groups.push(Group {
                    config_id: config_id.to_string(),
                    critic: critic.to_string(),
                    arms: Vec::new(),
                    pairs: HashMap::new(),
                    kinds: Vec::new(),
                    spend: SpendTotals::default(),
                });
                self.index.entry(config_id.to_string()).or_default().insert(critic.to_string(), slot);
                slot
            }
        };
        self.last_group = Some(slot);
        slot
    }

    /// Adds one outcome row; an adjudicated loop also counts as a loop of the arm
    /// `ARM+adjudicate` whose answer is the adjudicated draft: its pass and final score are the
    /// adjudicated ones, and it used one more critique.
    pub(crate) fn add(&mut self, row: &OutcomeStats<'_>) -> Result<(), RowError> {
        if row.censored {
            return self.add_censored(row);
        }
        self.add_loop(row, row.passed && row.revisions == 0, crate::totals::Capped::ByRule)?;
        if let Some(passed) = row.adjudicated_passed {
            let arm = format!("{}{ADJUDICATED_SUFFIX}", row.arm);
            let adjudicated = OutcomeStats {
                arm: &arm,
                passed,
                final_score: row.adjudicated_score.unwrap_or(row.final_score),
                rounds: row.rounds + 1,
                ..*row
            };
            self.add_loop(&adjudicated, passed && row.revisions == 0, crate::totals::Capped::ByRule)?;
        }
        Ok(())
    }

    /// Adds one loop as a held-out judge read it: `row.passed` is the judge's verdict on its final
    /// answer, `first` on its first draft (an adjudicated draft is the steering critic's alone).
    pub(crate) fn add_judged(
        &mut self,
        row: &OutcomeStats<'_>,
        first: bool,
        capped: crate::totals::Capped,
    ) -> Result<(), RowError> {
        self.add_loop(row, first, capped)
    }

    /// Adds one loop; `first` is whether its first draft passed the judge.
    fn add_loop(&mut self, row: &OutcomeStats<'_>, first: bool, capped: crate::totals::Capped) -> Result<(), RowError> {
        if self.run_id.as_deref().is_none_or(|id| row.run_id < id) {
            self.run_id = Some(row.run_id.to_string());
        }
        let slot = self.group(row.config_id, row.critic);
        let group = &mut self.groups[slot];
        let arm = match group.arms.iter().position(|a| a.name == row.arm) {
            Some(arm) => arm,
            None => {
                let rank = arm_order(row.arm);
                group.arms.push(ArmTotals::new(row.arm.to_string(), rank));
                group.arms.len() - 1
            }
        };
        group.arms[arm].add(row, first);
        let arm = u16::try_from(arm).map_err(|_| RowError::TooManyArms)?;
        let kind = group.kind(row.kind);
        group.kind_arm(kind, arm).add(row, first);
        let recorded = Loop { first, capped, ..Loop::of(row, arm) };
        let key = (slot, task_hash(row.task_id));
        let task = self.open_task(key, row.task_id);
        if task.loops.is_empty() {
            task.kind = kind;
        }
        task.loops.push(recorded);
        self.arrived(slot, key)
    }

    /// A censored loop of a rescoring: no outcome to count, but one more of its task's loops.
    fn add_censored(&mut self, row: &OutcomeStats<'_>) -> Result<(), RowError> {
        let key = (row.config_id.to_string(), row.critic.to_string(), row.arm.to_string());
        *self.censored.entry(key).or_default() += 1;
        let slot = self.group(row.config_id, row.critic);
        let key = (slot, task_hash(row.task_id));
        self.open_task(key, row.task_id).censored += 1;
        self.arrived(slot, key)
    }

    /// The open task `key`, opened if new.
    fn open_task(&mut self, key: (usize, u128), task_id: &str) -> &mut OpenTask {
        self.open.entry(key).or_insert_with(|| {
            let mut task = self.spare.pop().unwrap_or_default();
            task.task_id.push_str(task_id);
            task
        })
    }

    /// After a loop of the open task `key` arrived: folds the task once all its loops have.
    fn arrived(&mut self, slot: usize, key: (usize, u128)) -> Result<(), RowError> {
        let task = self.open.get(&key).expect("the task is open");
        let complete = self.expected == Some(task.loops.len() + task.censored);
        self.peak_open = self.peak_open.max(self.open.len());
        if complete {
            let mut task = self.open.remove(&key).expect("the task was just looked up");
            self.close(slot, &mut task)?;
            task.task_id.clear();
            task.loops.clear();
            task.censored = 0;
            self.spare.push(task);
        }
        Ok(())
    }

    /// Folds one task's loops into its group's histograms.
    fn close(&mut self, slot: usize, task: &mut OpenTask) -> Result<(), RowError> {
        if task.loops.is_empty() {
            // Every loop of the task was censored: nothing to count.
            return Ok(());
        }
        let group = &mut self.groups[slot];
        crate::totals::sort_task_loops(
            &mut task.loops,
            |l| (l.arm, l.epoch),
            (&task.task_id, &group.config_id, &group.critic),
            |arm| group.arms[arm as usize].name.clone(),
        )?;
        // Each arm's run of loops, in arm order.
        let mut runs: Vec<(u16, &[Loop])> = Vec::new();
        for chunk in task.loops.chunk_by(|a, b| a.arm == b.arm) {
            runs.push((chunk[0].arm, chunk));
        }
        fold_task(&mut group.arms, &mut group.pairs, &runs);
        let arms = &group.arms;
        let loops = TaskLoops {
            config_id: &group.config_id,
            critic: &group.critic,
            task_id: &task.task_id,
            spends: self.spends.as_deref(),
        };
        group.spend.add_task(&runs, |arm| arms[arm as usize].name.clone(), loops);
        // The task counts once more among the tasks of its kind.
        if let Some(&(last, _)) = runs.iter().max_by_key(|(arm, _)| *arm) {
            group.kind_arm(task.kind, last);
        }
        let kind = &mut group.kinds[task.kind];
        fold_task(&mut kind.arms, &mut kind.pairs, &runs);
        Ok(())
    }

    /// Folds the tasks still open and orders everything for reading: the summary, and the power
    /// rows of its comparisons.
    pub(crate) fn finish(mut self, manifest: Option<&Manifest>) -> Result<(Summary, Vec<PowerRow>), RowError> {
        let seed = run_seed(manifest);
        let open: Vec<((usize, u128), OpenTask)> = self.open.drain().collect();
        let incomplete = if self.expected.is_some() { open.len() } else { 0 };
        for ((slot, _), mut task) in open {
            self.close(slot, &mut task)?;
        }
        let experiment = manifest.map(|m| &m.experiment);
        let caps: HashMap<&str, u32> = experiment
            .into_iter()
            .flat_map(|e| e.policies.iter().map(|p| (p.config_id.as_str(), p.max_revisions)))
            .collect();
        let shared = crate::backend::same_by_construction(manifest);
        let cap = |config_id: &str| caps.get(config_id).copied();
        let config_order =
            order_of(experiment.into_iter().flat_map(|e| e.policies.iter().map(|p| p.config_id.as_str())));
        let critic_order = order_of(experiment.into_iter().flat_map(|e| e.critics.iter().map(|c| c.name.as_str())));
        let rank =
            |map: &HashMap<String, usize>, name: &str| (map.get(name).copied().unwrap_or(usize::MAX), name.to_string());
        let mut groups = self.groups;
        groups.sort_by_cached_key(|g| (rank(&config_order, &g.config_id), rank(&critic_order, &g.critic)));
        let mut summary = Vec::new();
        let mut comparisons = Vec::new();
        let mut power = Vec::new();
        let mut spend = Spend::default();
        for group in &groups {
            let mut order: Vec<u16> = (0..group.arms.len() as u16).collect();
            order.sort_by_key(|&arm| group.arms[arm as usize].rank.clone());
            group.spend.rows(
                (&group.config_id, &group.critic),
                &order,
                |arm| group.arms[arm as usize].name.clone(),
                |a, b| {
                    let (a, b) = (&group.arms[a as usize].name, &group.arms[b as usize].name);
                    Design::of_arms(a, b, cap(&group.config_id), shared)
                },
                seed,
                &mut spend,
            );
            group_rows(
                (&group.config_id, cap(&group.config_id), shared),
                &group.critic,
                &group.arms,
                &group.pairs,
                seed,
                &mut summary,
                &mut comparisons,
                Some(&mut power),
            );
        }
        // Kinds by name (tasks without one last), so the order does not depend on the rows'.
        let mut kinds: Vec<Option<&str>> = Vec::new();
        for kind in groups.iter().flat_map(|g| g.kinds.iter().map(|k| k.kind.as_deref())) {
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        kinds.sort_by_key(|kind| (kind.is_none(), *kind));
        let mut by_kind = Vec::new();
        if kinds.len() > 1 {
            for kind in kinds {
                let mut rows = KindReport { kind: kind.map(String::from), ..KindReport::default() };
                for group in &groups {
                    if let Some(totals) = group.kinds.iter().find(|k| k.kind.as_deref() == kind) {
                        group_rows(
                            (&group.config_id, cap(&group.config_id), shared),
                            &group.critic,
                            &totals.arms,
                            &totals.pairs,
                            seed,
                            &mut rows.summary,
                            &mut rows.comparisons,
                            None,
                        );
                    }
                }
                by_kind.push(rows);
            }
        }
        let mut notes = notes(&summary, manifest, self.expected.map(|e| (e, incomplete)));
        // In the summary's order: configs and critics as the run lists them, then arms.
        let mut censored: Vec<((String, String, String), u64)> = self.censored.into_iter().collect();
        censored.sort_by_cached_key(|((config, critic, arm), _)| {
            (rank(&config_order, config), rank(&critic_order, critic), arm_order(arm))
        });
        if !censored.is_empty() {
            let known = |(config, critic, arm): &(String, String, String)| {
                let row = summary.iter().find(|r| (&r.config_id, &r.critic, &r.arm) == (config, critic, arm));
                row.map_or(0, |r| r.n)
            };
            let groups: Vec<(String, u64, u64)> = censored
                .iter()
                .map(|(key, count)| (format!("{} × {} × {}", key.0, key.1, key.2), *count, count + known(key)))
                .collect();
            notes.insert(0, censored_note(&groups));
        }
        let summary = Summary {
            run_id: manifest.map(|m| m.run_id.clone()).filter(|id| !id.is_empty()).or(self.run_id),
            name: manifest.map(|m| m.experiment.name.clone()),
            currency: run_currency(manifest),
            partial: manifest.and_then(Partial::of),
            notes,
            timing: manifest.and_then(|m| time_note(m.openai.as_ref()?, Some(m))),
            rows: summary,
            comparisons,
            by_kind,
            censored,
            spend,
        };
        Ok((summary, power))
    }
}

/// Whether a comparison of two arms says something: an adjudicated twin is compared with its own
/// arm (the effect of adjudication) and with other twins (arms compared after adjudication), not
/// with other arms before it.
fn comparable_arms(a: &str, b: &str) -> bool {
    match (a.strip_suffix(ADJUDICATED_SUFFIX), b.strip_suffix(ADJUDICATED_SUFFIX)) {
        (Some(_), Some(_)) | (None, None) => true,
        (Some(base), None) => base == b,
        (None, Some(base)) => base == a,
    }
}

/// Folds outcomes (the rows in memory; the streaming path is [`summarize_files`]) into the summary
/// and the power rows of its comparisons.
pub(crate) fn summarize_rows(
    outcomes: &[OutcomeRow],
    manifest: Option<&Manifest>,
) -> Result<(Summary, Vec<PowerRow>), RowError> {
    let mut summarizer = Summarizer::new(manifest);
    for row in outcomes {
        summarizer.add(&OutcomeStats::from(row))?;
    }
    summarizer.finish(manifest)
}

/// Streams one outcomes table kept in `paths` (one file, or a sharded run's partitions, one after
/// the other; a projection of the columns summaries need, a batch at a time) into the summary and
/// the power rows of its comparisons.
pub(crate) fn summarize_files(
    paths: &[PathBuf],
    manifest: Option<&Manifest>,
) -> Result<(Summary, Vec<PowerRow>), ReportError> {
    summarize_files_with(paths, manifest, None)
}

/// [`summarize_files`] with each loop's rounds' tokens and cost, for the cost curves in money
/// and in tokens.
pub(crate) fn summarize_files_with(
    paths: &[PathBuf],
    manifest: Option<&Manifest>,
    spends: Option<crate::queries::round_spend::RoundSpends>,
) -> Result<(Summary, Vec<PowerRow>), ReportError> {
    let (summary, power, _) = summarize_judged(paths, manifest, spends, &JudgeVerdicts::default())?;
    Ok((summary, power))
}

/// The steering critic's summary and power rows, and the same rows as each held-out evaluator of
/// `verdicts` reads them ([`crate::judges`]), in one pass over the outcomes.
pub(crate) fn summarize_judged(
    paths: &[PathBuf],
    manifest: Option<&Manifest>,
    spends: Option<crate::queries::round_spend::RoundSpends>,
    verdicts: &JudgeVerdicts,
) -> Result<(Summary, Vec<PowerRow>, Vec<Judged>), ReportError> {
    let spends = spends.map(std::sync::Arc::new);
    let with_spends = |summarizer: Summarizer| match &spends {
        Some(spends) => summarizer.with_spends(spends.clone()),
        None => summarizer,
    };
    let mut critic = with_spends(Summarizer::new(manifest));
    // The configs whose loops answer with their last draft rather than their best.
    let answers_last: std::collections::HashSet<&str> = manifest
        .into_iter()
        .flat_map(|m| &m.experiment.policies)
        .filter(|p| p.rest.get("final_draft").and_then(|v| v.as_str()) == Some("last"))
        .map(|p| p.config_id.as_str())
        .collect();
    let mut held_out: Vec<Summarizer> =
        verdicts.evaluators.iter().map(|_| with_spends(Summarizer::for_judge(manifest))).collect();
    critbench_storage::tables::for_each_outcome_stats_with_censored_in(paths, |row| {
        critic.add(row)?;
        if held_out.is_empty() || row.censored {
            return Ok::<(), RowError>(());
        }
        let key = loop_key(row.config_id, row.arm, row.critic, row.task_id, row.epoch);
        let scores: Vec<critbench_core::RoundScore> = spends
            .as_ref()
            .and_then(|s| s.get(&key))
            .map(|rounds| rounds.iter().map(|r| r.score).collect())
            .unwrap_or_default();
        for (index, summarizer) in held_out.iter_mut().enumerate() {
            let Some((first, last)) = verdicts.judged(index, key) else { continue };
            let row = OutcomeStats { passed: last, adjudicated_passed: None, adjudicated_score: None, ..*row };
            let final_last = answers_last.contains(row.config_id);
            let capped = crate::spend::judged_caps(row.rounds, verdicts.rounds(index, key), &scores, final_last);
            summarizer.add_judged(&row, first, capped)?;
        }
        Ok(())
    })?;
    let name = match paths {
        [one] => one.display().to_string(),
        _ => paths.first().and_then(|p| p.parent()?.parent()).map_or_else(String::new, |d| d.display().to_string()),
    };
    let rows_error = |source| ReportError::Rows { name: name.clone(), source: Box::new(source) };
    let (summary, power) = critic.finish(manifest).map_err(rows_error)?;
    let mut judged = Vec::new();
    for (summarizer, evaluator) in held_out.into_iter().zip(&verdicts.evaluators) {
        let (rows, power) = summarizer.finish(manifest).map_err(rows_error)?;
        judged.push(Judged::new(evaluator, Summary { notes: Vec::new(), timing: None, ..rows }, power));
    }
    Ok((summary, power, judged))
}
