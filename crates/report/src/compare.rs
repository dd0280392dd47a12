//! `critbench compare RUN_A RUN_B`: two runs (two critics, two model versions, two prompt sets)
//! on the tasks they share, with the same paired statistics as the arms within one run.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;
use std::path::Path;

use critbench_storage::tables::{OutcomeStats, for_each_outcome_stats_in, outcome_critics, parquet_rows};

use crate::csv_files::{headers as csv_headers, write_csv};
use crate::keys::{KeyMap, task_hash};
use crate::rows::ComparisonRow;
use crate::totals::{Design, Loop, PairTotals, TaskPairs};
use crate::{QueryError, ReportError};

/// The comparison of two runs.
#[derive(Debug)]
pub struct RunComparison {
    /// How run A is named.
    pub label_a: String,
    /// How run B is named.
    pub label_b: String,
    /// One row per config × arm × critic (pair), A against B.
    pub rows: Vec<ComparisonRow>,
    /// Loops of each run without a partner in the other.
    pub unmatched_a: usize,
    /// Loops of run B without a partner in run A.
    pub unmatched_b: usize,
    /// Whether loops were paired by critic too (the runs share critic names).
    pub by_critic: bool,
}

fn outcomes_of(dir: &Path) -> Result<Vec<std::path::PathBuf>, ReportError> {
    crate::run_tables::table_files(dir, "outcomes")
}

/// The run's name (its directory's when it has no manifest) and its seed.
fn name_of(dir: &Path) -> Result<(String, u64), ReportError> {
    let manifest = critbench_storage::manifest::Manifest::read(dir)?;
    let seed = crate::experiment::run_seed(manifest.as_ref());
    let name = manifest
        .map(|m| m.experiment.name)
        .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "run".into());
    Ok((name, seed))
}

/// Interned strings, so a loop's key is a few integers.
#[derive(Default)]
struct Names {
    index: HashMap<String, u32>,
    names: Vec<String>,
    /// The last (config, arm, critic) looked up and its ids: rows of a group come together.
    last: Option<(String, String, String, [u32; 3])>,
}

impl Names {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), id);
        id
    }

    /// Ids of a row's config, arm and critic.
    fn ids(&mut self, row: &OutcomeStats<'_>) -> [u32; 3] {
        if let Some((config, arm, critic, ids)) = &self.last
            && (config.as_str(), arm.as_str(), critic.as_str()) == (row.config_id, row.arm, row.critic)
        {
            return *ids;
        }
        let ids = [self.id(row.config_id), self.id(row.arm), self.id(row.critic)];
        self.last = Some((row.config_id.to_string(), row.arm.to_string(), row.critic.to_string(), ids));
        ids
    }
}

/// (config, arm, critic or "" when not pairing by critic, epoch, task hash): what pairs two loops.
/// The hash is two words, so the key packs into 32 bytes (a `u128` would align it to 48).
type PairKey = (u32, u32, u32, u32, [u64; 2]);

fn words(hash: u128) -> [u64; 2] {
    [hash as u64, (hash >> 64) as u64]
}

/// (config, arm, critic of A, critic of B): one row of the comparison.
type GroupKey = (u32, u32, u32, u32);

/// A loop of run B waiting for its partner: what the pair statistics need of it, its critic, and
/// once A's partner has arrived, that partner's critic and pass bits. 32 bytes.
struct Waiting {
    best_score: f64,
    rounds: u32,
    critic: u32,
    partner_critic: u32,
    passed: bool,
    first: bool,
    matched: bool,
    partner_passed: bool,
    partner_first: bool,
}

impl Waiting {
    fn partner(&self) -> Loop {
        Loop {
            arm: 0,
            epoch: 0,
            passed: self.passed,
            first: self.first,
            rounds: self.rounds,
            best_score: self.best_score,
            // Kept small: the money of two runs is not compared (each run's summary has its own).
            cost: None,
            capped: crate::totals::Capped::ByRule,
        }
    }
}

/// Pairs the loops of two runs on config × arm × task × epoch (and critic, when the runs share
/// critic names) and compares each group.
///
/// Both files are streamed with a column projection. Run B's loops wait in a compact index (64
/// bytes a loop) for run A's partners; each pair's sums are added as it is found and its pass
/// bits kept in the index, and the per-task counts are folded at the end by sorting the matched
/// loops, so no outcome row is held whole. Memory is O(loops of B): about 180 bytes a loop.
pub fn compare_runs(a_dir: &Path, b_dir: &Path) -> Result<RunComparison, ReportError> {
    let (a_path, b_path) = (outcomes_of(a_dir)?, outcomes_of(b_dir)?);
    for dir in [a_dir, b_dir] {
        crate::run_tables::check_tables(dir)?;
    }
    // A bootstrap that resamples is seeded by the first run's seed and the pairs.
    let ((a_name, seed), (b_name, _)) = (name_of(a_dir)?, name_of(b_dir)?);
    let (label_a, label_b) =
        if a_name == b_name { (format!("A({a_name})"), format!("B({b_name})")) } else { (a_name, b_name) };
    let critics_of = |paths: &[std::path::PathBuf]| -> Result<BTreeSet<String>, ReportError> {
        let mut critics = BTreeSet::new();
        for path in paths {
            critics.extend(outcome_critics(path)?);
        }
        Ok(critics)
    };
    let (critics_a, critics_b) = (critics_of(&a_path)?, critics_of(&b_path)?);
    let by_critic = !critics_a.is_disjoint(&critics_b);

    let mut names = Names::default();
    let empty = names.id("");
    let key = |row: &OutcomeStats<'_>, names: &mut Names| -> (PairKey, u32) {
        let [config, arm, critic] = names.ids(row);
        ((config, arm, if by_critic { critic } else { empty }, row.epoch, words(task_hash(row.task_id))), critic)
    };
    // Sized from the footer up front, so the index is never rehashed into a second copy.
    let mut index_b: KeyMap<PairKey, Waiting> = KeyMap::with_capacity_and_hasher(
        b_path.iter().map(|p| parquet_rows(p)).sum::<Result<usize, _>>()?,
        Default::default(),
    );
    let mut ambiguous_b = None;
    for_each_outcome_stats_in::<std::convert::Infallible>(&b_path, |row| {
        let (pair_key, critic) = key(row, &mut names);
        let own = Loop::of(row, 0);
        let waiting = Waiting {
            best_score: own.best_score,
            rounds: own.rounds,
            critic,
            passed: own.passed,
            first: own.first,
            partner_critic: 0,
            matched: false,
            partner_passed: false,
            partner_first: false,
        };
        if index_b.insert(pair_key, waiting).is_some() && ambiguous_b.is_none() {
            ambiguous_b = Some(ambiguous(b_dir, row));
        }
        Ok(())
    })?;
    if let Some(error) = ambiguous_b {
        return Err(error);
    }
    // Run A, paired as it streams. A loop of A seen twice is caught by its partner's `matched`,
    // or, without a partner, by the (usually small) set of A's unmatched keys.
    let mut unmatched_keys: KeyMap<PairKey, ()> = KeyMap::default();
    let mut totals: HashMap<GroupKey, PairTotals> = HashMap::new();
    let mut matched_b = 0usize;
    let mut ambiguous_a = None;
    for_each_outcome_stats_in::<std::convert::Infallible>(&a_path, |row| {
        let (pair_key, critic_a) = key(row, &mut names);
        match index_b.get_mut(&pair_key) {
            Some(waiting) if waiting.matched => {
                ambiguous_a.get_or_insert_with(|| ambiguous(a_dir, row));
            }
            Some(waiting) => {
                let own = Loop::of(row, 0);
                waiting.matched = true;
                (waiting.partner_critic, waiting.partner_passed, waiting.partner_first) =
                    (critic_a, own.passed, own.first);
                matched_b += 1;
                let group = (pair_key.0, pair_key.1, critic_a, waiting.critic);
                // The task's counts are folded below, from the index.
                totals.entry(group).or_default().add_pair(&own, &waiting.partner(), &mut TaskPairs::default());
            }
            None => {
                if unmatched_keys.insert(pair_key, ()).is_some() {
                    ambiguous_a.get_or_insert_with(|| ambiguous(a_dir, row));
                }
            }
        }
        Ok(())
    })?;
    if let Some(error) = ambiguous_a {
        return Err(error);
    }
    let (unmatched_a, unmatched_b) = (unmatched_keys.len(), index_b.len() - matched_b);
    // Each matched pair as (group, task, A − B passes, A − B first drafts), sorted so a task's
    // pairs are adjacent.
    let mut pairs: Vec<(GroupKey, [u64; 2], i8, i8)> = Vec::with_capacity(matched_b);
    for (key, waiting) in index_b.drain().filter(|(_, waiting)| waiting.matched) {
        let group = (key.0, key.1, waiting.partner_critic, waiting.critic);
        let difference = i8::from(waiting.partner_passed) - i8::from(waiting.passed);
        let first_difference = i8::from(waiting.partner_first) - i8::from(waiting.first);
        pairs.push((group, key.4, difference, first_difference));
    }
    drop(index_b);
    pairs.sort_unstable_by_key(|&(group, task, _, _)| (group, task));
    for task_pairs in pairs.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        let task = task_pairs.iter().fold(TaskPairs::default(), |task, &(_, _, difference, first)| TaskPairs {
            pairs: task.pairs + 1,
            difference: task.difference + i64::from(difference),
            first_difference: task.first_difference + i64::from(first),
            discordant: task.discordant + u64::from(difference != 0),
        });
        totals.get_mut(&task_pairs[0].0).expect("a task's group has totals").add_cluster(task);
    }
    if totals.is_empty() {
        return Err(ReportError::NotARun {
            path: b_dir.into(),
            reason: format!(
                "it shares no task × config × arm × epoch{} with {}",
                if by_critic { " × critic" } else { "" },
                a_dir.display()
            ),
        });
    }
    let name = |id: u32| names.names[id as usize].as_str();
    let groups: BTreeMap<(&str, &str, &str, &str), &PairTotals> = totals
        .iter()
        .map(|(&(config, arm, critic_a, critic_b), pair)| {
            ((name(config), name(arm), name(critic_a), name(critic_b)), pair)
        })
        .collect();
    let rows = groups
        .into_iter()
        .map(|((config, arm, critic_a, critic_b), pair)| {
            let critic = if critic_a == critic_b { critic_a.to_string() } else { format!("{critic_a} vs {critic_b}") };
            // Two runs share nothing by design: every difference is measured.
            let labels = (format!("{label_a}:{arm}"), format!("{label_b}:{arm}"));
            pair.row((config, &critic), (&labels.0, &labels.1), Design::default(), seed)
        })
        .collect();
    Ok(RunComparison { label_a, label_b, rows, unmatched_a, unmatched_b, by_critic })
}

fn ambiguous(dir: &Path, row: &OutcomeStats<'_>) -> ReportError {
    QueryError::Unpairable {
        dir: dir.into(),
        task_id: row.task_id.to_string(),
        config_id: row.config_id.to_string(),
        arm: row.arm.to_string(),
        epoch: row.epoch,
    }
    .into()
}

/// A short report for people.
pub fn render_comparison(comparison: &RunComparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{HEADING}{} vs {}\n", comparison.label_a, comparison.label_b);
    let _ = writeln!(
        out,
        "Loops paired on config × arm × task × epoch{}; {} loop(s) of {} and {} of {} had no partner.\n",
        if comparison.by_critic { " × critic" } else { "" },
        comparison.unmatched_a,
        comparison.label_a,
        comparison.unmatched_b,
        comparison.label_b
    );
    out.push_str("| config | critic | A vs B | pairs | pass A | pass B | A − B (95% CI) | A only | B only | p (test) | rounds A / B | best score A / B |\n");
    out.push_str("|---|---|---|---:|---:|---:|---|---:|---:|---:|---|---|\n");
    for row in &comparison.rows {
        out.push_str(&crate::markdown::comparison_line(row));
    }
    out
}

/// The first line of every `compare.md`.
const HEADING: &str = "# critbench comparison: ";

/// Writes `compare.md` and `compare.csv` into `dir`, replacing an earlier comparison's but never
/// a file critbench did not write (nor a link).
pub fn write_comparison(dir: &Path, comparison: &RunComparison) -> Result<(), ReportError> {
    let csv_header = csv_headers::<ComparisonRow>().join(",");
    for (name, first_line) in [("compare.md", HEADING.trim_end()), ("compare.csv", csv_header.as_str())] {
        let path = dir.join(name);
        let Ok(metadata) = std::fs::symlink_metadata(&path) else { continue };
        if metadata.file_type().is_symlink() {
            return Err(ReportError::WouldReplace { path, what: "a symbolic link" });
        }
        let text = std::fs::read(&path).unwrap_or_default();
        let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
        if !metadata.is_file() || !line.starts_with(first_line.as_bytes()) {
            return Err(ReportError::WouldReplace { path, what: "not a comparison critbench wrote" });
        }
    }
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Write { path: dir.into(), source })?;
    write_csv(&dir.join("compare.csv"), &comparison.rows)?;
    let path = dir.join("compare.md");
    critbench_storage::files::write_atomically(&path, render_comparison(comparison).as_bytes())
        .map_err(|source| ReportError::Write { path, source })
}

#[cfg(test)]
mod tests {
    use critbench_storage::tables::{OutcomeRow, OutcomeWriter};

    use super::*;

    fn loop_row(task: &str, epoch: u32, arm: &str, critic: &str, passed: bool) -> OutcomeRow {
        OutcomeRow {
            config_id: "c".into(),
            critic: critic.into(),
            epoch,
            best_round: 1,
            ..OutcomeRow::bare(task, arm, passed, 2)
        }
    }

    fn write_run(dir: &Path, rows: &[OutcomeRow]) {
        std::fs::create_dir_all(dir).unwrap();
        let mut writer = OutcomeWriter::create(&dir.join("outcomes.parquet")).unwrap();
        for row in rows {
            writer.push(row.clone()).unwrap();
        }
        writer.close().unwrap();
    }

    #[test]
    fn pairs_loops_counts_the_unmatched_and_clusters_epochs_by_task() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let mut rows_a = Vec::new();
        let mut rows_b = Vec::new();
        for task in 0..10 {
            let id = format!("t{task}");
            for epoch in 0..3 {
                rows_a.push(loop_row(&id, epoch, "feedback", "rubric", task < 7));
                rows_b.push(loop_row(&id, epoch, "feedback", "rubric", task < 4));
            }
        }
        rows_a.push(loop_row("only-a", 0, "feedback", "rubric", true));
        rows_b.extend([
            loop_row("only-b", 0, "feedback", "rubric", true),
            loop_row("only-b", 1, "feedback", "rubric", true),
        ]);
        rows_b.reverse();
        write_run(&a, &rows_a);
        write_run(&b, &rows_b);
        let comparison = compare_runs(&a, &b).unwrap();
        assert!(comparison.by_critic);
        assert_eq!((comparison.unmatched_a, comparison.unmatched_b), (1, 2));
        let row = &comparison.rows[0];
        assert_eq!((row.n_pairs, row.n_tasks, row.a_only, row.b_only), (30, 10, 9, 0));
        // Ten tasks, three of them untied: exact, and the three alone cannot reject.
        assert_eq!((row.tasks_a_better, row.tasks_b_better), (3, 0));
        assert_eq!(row.test, critbench_stats::difference::DifferenceTest::ExactSignFlip.as_str());
        assert!((row.p_value.unwrap() - 0.25).abs() < 1e-12, "{row:?}");
        assert!(row.diff_lo.unwrap() < 0.0, "{row:?}");
        assert!((row.diff - 0.3).abs() < 1e-12);
    }

    #[test]
    fn a_loop_twice_in_either_run_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let one = loop_row("t1", 0, "feedback", "rubric", true);
        let lonely = loop_row("t2", 0, "feedback", "rubric", true);
        write_run(&b, std::slice::from_ref(&one));
        // Twice with a partner in B, and twice without one.
        for rows in [vec![one.clone(), one.clone()], vec![one.clone(), lonely.clone(), lonely.clone()]] {
            write_run(&a, &rows);
            let error = compare_runs(&a, &b).unwrap_err().to_string();
            assert!(error.contains("appears more than once") && error.contains(&a.display().to_string()), "{error}");
        }
        write_run(&a, std::slice::from_ref(&one));
        write_run(&b, &[one.clone(), one]);
        let error = compare_runs(&a, &b).unwrap_err().to_string();
        assert!(
            error.contains("task `t1` appears more than once") && error.contains(&b.display().to_string()),
            "{error}"
        );
    }
}
