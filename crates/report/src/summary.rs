//! Grouping outcomes into summary rows and paired comparisons.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use critbench_core::{Arm, SeedKey, derive_seed};
use critbench_storage::tables::OutcomeRow;
use serde::Serialize;

use crate::ReportError;
use crate::stats::{mcnemar_exact, mean, paired_bootstrap_diffs, wilson_interval};

/// Bootstrap resamples for the pass-rate difference.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// One config × arm × critic.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct SummaryRow {
    pub config_id: String,
    pub arm: String,
    pub critic: String,
    pub n: u64,
    pub passed: u64,
    pub pass_rate: f64,
    pub pass_rate_lo: f64,
    pub pass_rate_hi: f64,
    pub mean_rounds: f64,
    /// Loops whose first draft passed (round 0), with its Wilson interval.
    pub first_round_passed: u64,
    pub first_round_pass_rate: f64,
    pub first_round_pass_rate_lo: f64,
    pub first_round_pass_rate_hi: f64,
    pub exit_pass: u64,
    pub exit_stall: u64,
    pub exit_plateau: u64,
    pub exit_budget: u64,
    pub mean_first_score: f64,
    pub mean_best_score: f64,
    pub mean_final_score: f64,
    pub critic_errors: u64,
    /// Rounds where the critic's own `passed` disagreed with the host's verdict (SPEC §4: the
    /// critic's verdict is recorded, never obeyed).
    pub critic_passed_disagreements: u64,
}

/// Two arms of one config × critic, on the task × epoch pairs both ran.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ComparisonRow {
    pub config_id: String,
    pub critic: String,
    pub arm_a: String,
    pub arm_b: String,
    pub n_pairs: u64,
    pub pass_rate_a: f64,
    pub pass_rate_b: f64,
    pub diff: f64,
    pub diff_lo: f64,
    pub diff_hi: f64,
    pub a_only: u64,
    pub b_only: u64,
    pub mcnemar_p: f64,
    pub mean_rounds_a: f64,
    pub mean_rounds_b: f64,
    /// mean_rounds_a − mean_rounds_b
    pub diff_mean_rounds: f64,
    pub mean_best_score_a: f64,
    pub mean_best_score_b: f64,
    /// mean_best_score_a − mean_best_score_b
    pub diff_mean_best_score: f64,
    /// Pass rates of the first draft alone, and their paired difference with its interval.
    pub first_round_rate_a: f64,
    pub first_round_rate_b: f64,
    pub first_round_diff: f64,
    pub first_round_diff_lo: f64,
    pub first_round_diff_hi: f64,
}

/// Everything the summary files hold.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub run_id: Option<String>,
    pub name: Option<String>,
    pub summary: Vec<SummaryRow>,
    pub comparisons: Vec<ComparisonRow>,
    /// What a reader should know beside the tables (from the manifest): a token cap that stopped
    /// the run, loops that failed, the models and their cache, critics disagreeing with the host.
    pub notes: Vec<String>,
}

fn notes(summary: &[SummaryRow], manifest: Option<&serde_json::Value>) -> Vec<String> {
    let mut notes = Vec::new();
    let count = |pointer: &str| manifest.and_then(|m| m.pointer(pointer)).and_then(|v| v.as_u64()).unwrap_or(0);
    let failed = manifest.and_then(|m| m.get("failed_loops")).and_then(|v| v.as_array()).map_or(0, Vec::len);
    if let Some(openai) = manifest.and_then(|m| m.get("openai")).filter(|o| o.is_object()) {
        let models: Vec<String> = openai["models"]
            .as_object()
            .map(|m| m.iter().map(|(role, model)| format!("{role} `{}`", model.as_str().unwrap_or("?"))).collect())
            .unwrap_or_default();
        notes.push(format!(
            "Models ({}): {}. {} calls: {} answered by the model, {} from the response cache, {} shared with an \
             identical request in flight; {} tokens in, {} out.",
            openai["endpoint"].as_str().unwrap_or("?"),
            models.join(", "),
            count("/openai/calls/total"),
            count("/openai/calls/model_calls"),
            count("/openai/cache/hits"),
            count("/openai/cache/shared_in_flight"),
            count("/openai/tokens/in"),
            count("/openai/tokens/out"),
        ));
        if openai.pointer("/tokens/cap_reached") == Some(&serde_json::Value::Bool(true)) {
            notes.push(format!(
                "**The token cap was reached** (max_tokens_total = {}): {} model calls were refused, so loops that \
                 still needed the model failed and the rates above cover only the loops that finished.",
                count("/openai/tokens/max_tokens_total"),
                count("/openai/tokens/refused_calls"),
            ));
        }
    }
    if failed > 0 {
        notes.push(format!("{failed} loop(s) failed and have no rows; `failed_loops` in manifest.json says why."));
    }
    let disagreements: u64 = summary.iter().map(|r| r.critic_passed_disagreements).sum();
    if disagreements > 0 {
        notes.push(format!(
            "On {disagreements} critiqued round(s) the critic's own `passed` disagreed with the host's pass rule \
             (`critic_passed_disagreements` in summary.csv); the host's rule decided."
        ));
    }
    notes
}

/// Sort position of a name in the manifest's list, unknown names last (then by name).
fn order_of(manifest: Option<&serde_json::Value>, pointer: &str, field: Option<&str>) -> HashMap<String, usize> {
    let mut order = HashMap::new();
    if let Some(items) = manifest.and_then(|m| m.pointer(pointer)).and_then(|v| v.as_array()) {
        for (index, item) in items.iter().enumerate() {
            let name = match field {
                Some(field) => item.get(field).and_then(|v| v.as_str()),
                None => item.as_str(),
            };
            if let Some(name) = name {
                order.entry(name.to_string()).or_insert(index);
            }
        }
    }
    order
}

/// Arms in reading order: the memory arm first (it is compared with plain feedback), then
/// feedback, no-feedback and single; unknown names last.
fn arm_rank(arm: &str) -> usize {
    match Arm::parse(arm) {
        Some(Arm::FeedbackMemory) => 0,
        Some(Arm::Feedback) => 1,
        Some(Arm::NoFeedback) => 2,
        Some(Arm::Single) => 3,
        None => usize::MAX,
    }
}

/// Groups outcomes into the summary and the pairwise comparisons.
pub fn build_report(outcomes: &[OutcomeRow], manifest: Option<&serde_json::Value>) -> Report {
    let config_order = order_of(manifest, "/experiment/policies", Some("config_id"));
    let critic_order = order_of(manifest, "/experiment/critics", Some("name"));
    let rank =
        |map: &HashMap<String, usize>, name: &str| (map.get(name).copied().unwrap_or(usize::MAX), name.to_string());

    // Names carry their sort rank: manifest order first, then alphabetical.
    type Ranked = (usize, String);
    type Group<'a> = Vec<&'a OutcomeRow>;
    let mut groups: BTreeMap<(Ranked, Ranked, Ranked), Group<'_>> = BTreeMap::new();
    for row in outcomes {
        let key = (
            rank(&config_order, &row.config_id),
            rank(&critic_order, &row.critic),
            (arm_rank(&row.arm), row.arm.clone()),
        );
        groups.entry(key).or_default().push(row);
    }

    let summary: Vec<SummaryRow> = groups
        .values()
        .map(|rows| {
            let n = rows.len() as u64;
            let passed = rows.iter().filter(|r| r.passed).count() as u64;
            let exits = |reason: &str| rows.iter().filter(|r| r.exit_reason == reason).count() as u64;
            let (lo, hi) = wilson_interval(passed, n);
            let first = rows.iter().filter(|r| r.passed && r.revisions == 0).count() as u64;
            let (first_lo, first_hi) = wilson_interval(first, n);
            SummaryRow {
                config_id: rows[0].config_id.clone(),
                arm: rows[0].arm.clone(),
                critic: rows[0].critic.clone(),
                n,
                passed,
                pass_rate: passed as f64 / n as f64,
                pass_rate_lo: lo,
                pass_rate_hi: hi,
                mean_rounds: mean(rows.iter().map(|r| f64::from(r.rounds))),
                first_round_passed: first,
                first_round_pass_rate: first as f64 / n as f64,
                first_round_pass_rate_lo: first_lo,
                first_round_pass_rate_hi: first_hi,
                exit_pass: exits("pass"),
                exit_stall: exits("stall"),
                exit_plateau: exits("plateau"),
                exit_budget: exits("budget"),
                mean_first_score: mean(rows.iter().map(|r| r.first_score)),
                mean_best_score: mean(rows.iter().map(|r| r.best_score)),
                mean_final_score: mean(rows.iter().map(|r| r.final_score)),
                critic_errors: rows.iter().map(|r| u64::from(r.critic_errors)).sum(),
                critic_passed_disagreements: rows.iter().map(|r| u64::from(r.critic_disagreements)).sum(),
            }
        })
        .collect();

    // Pair arms within each config × critic on (task, epoch).
    let mut comparisons = Vec::new();
    let mut by_config_critic: BTreeMap<(&Ranked, &Ranked), Vec<(&Ranked, &Group<'_>)>> = BTreeMap::new();
    for ((config, critic, arm), rows) in &groups {
        by_config_critic.entry((config, critic)).or_default().push((arm, rows));
    }
    for ((config, critic), arms) in by_config_critic {
        for (i, (arm_a, rows_a)) in arms.iter().enumerate() {
            for (arm_b, rows_b) in arms.iter().skip(i + 1) {
                let index_b: HashMap<(&str, u32), &OutcomeRow> =
                    rows_b.iter().map(|r| ((r.task_id.as_str(), r.epoch), *r)).collect();
                let matched: Vec<(&OutcomeRow, &OutcomeRow)> = rows_a
                    .iter()
                    .filter_map(|a| index_b.get(&(a.task_id.as_str(), a.epoch)).map(|b| (*a, *b)))
                    .collect();
                if matched.is_empty() {
                    continue;
                }
                comparisons.push(compare_pairs(&config.1, &critic.1, &arm_a.1, &arm_b.1, &matched));
            }
        }
    }

    Report {
        run_id: manifest
            .and_then(|m| m.get("run_id"))
            .and_then(|v| v.as_str())
            .map(String::from)
            .or_else(|| outcomes.first().map(|o| o.run_id.clone())),
        name: manifest.and_then(|m| m.pointer("/experiment/name")).and_then(|v| v.as_str()).map(String::from),
        notes: notes(&summary, manifest),
        summary,
        comparisons,
    }
}

/// The paired statistics of side A against side B over matched outcomes (same task × epoch).
pub fn compare_pairs(
    config_id: &str,
    critic: &str,
    label_a: &str,
    label_b: &str,
    matched: &[(&OutcomeRow, &OutcomeRow)],
) -> ComparisonRow {
    let pairs: Vec<(bool, bool)> = matched.iter().map(|(a, b)| (a.passed, b.passed)).collect();
    let n = pairs.len() as u64;
    let a_only = pairs.iter().filter(|(a, b)| *a && !*b).count() as u64;
    let b_only = pairs.iter().filter(|(a, b)| !*a && *b).count() as u64;
    let rate_a = pairs.iter().filter(|p| p.0).count() as f64 / n as f64;
    let rate_b = pairs.iter().filter(|p| p.1).count() as f64 / n as f64;
    // Seeded by what is compared, so every rebuild of a report gives the same interval.
    let seed = derive_seed(&SeedKey {
        seed: 0,
        task_id: &format!("{config_id}|{critic}|{label_a}|{label_b}"),
        epoch: 0,
        round: 0,
        purpose: "bootstrap",
    });
    let first_pairs: Vec<(bool, bool)> =
        matched.iter().map(|(a, b)| (a.passed && a.revisions == 0, b.passed && b.revisions == 0)).collect();
    // One resampling serves both differences.
    let intervals = paired_bootstrap_diffs(&[&pairs, &first_pairs], BOOTSTRAP_RESAMPLES, seed);
    let ((lo, hi), (first_lo, first_hi)) = (intervals[0], intervals[1]);
    let first_a = first_pairs.iter().filter(|p| p.0).count() as f64 / n as f64;
    let first_b = first_pairs.iter().filter(|p| p.1).count() as f64 / n as f64;
    let rounds_a = mean(matched.iter().map(|(a, _)| f64::from(a.rounds)));
    let rounds_b = mean(matched.iter().map(|(_, b)| f64::from(b.rounds)));
    let best_a = mean(matched.iter().map(|(a, _)| a.best_score));
    let best_b = mean(matched.iter().map(|(_, b)| b.best_score));
    ComparisonRow {
        config_id: config_id.to_string(),
        critic: critic.to_string(),
        arm_a: label_a.to_string(),
        arm_b: label_b.to_string(),
        n_pairs: n,
        pass_rate_a: rate_a,
        pass_rate_b: rate_b,
        diff: rate_a - rate_b,
        diff_lo: lo,
        diff_hi: hi,
        a_only,
        b_only,
        mcnemar_p: mcnemar_exact(a_only, b_only),
        mean_rounds_a: rounds_a,
        mean_rounds_b: rounds_b,
        diff_mean_rounds: rounds_a - rounds_b,
        mean_best_score_a: best_a,
        mean_best_score_b: best_b,
        diff_mean_best_score: best_a - best_b,
        first_round_rate_a: first_a,
        first_round_rate_b: first_b,
        first_round_diff: first_a - first_b,
        first_round_diff_lo: first_lo,
        first_round_diff_hi: first_hi,
    }
}

/// The column names a row type serializes to, for a CSV with no rows.
fn headers<T: Serialize + Default>() -> Vec<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.serialize(T::default()).expect("a default row serializes");
    let text = String::from_utf8(writer.into_inner().expect("writing to memory cannot fail")).expect("CSV is UTF-8");
    text.lines().next().unwrap_or_default().split(',').map(String::from).collect()
}

pub(crate) fn write_csv<T: Serialize + Default>(path: &Path, rows: &[T]) -> Result<(), ReportError> {
    let failed = |e: csv::Error| ReportError::Write { path: path.into(), source: std::io::Error::other(e.to_string()) };
    let mut writer = csv::WriterBuilder::new().has_headers(!rows.is_empty()).from_path(path).map_err(failed)?;
    if rows.is_empty() {
        writer.write_record(headers::<T>()).map_err(failed)?;
    }
    for row in rows {
        writer.serialize(row).map_err(failed)?;
    }
    writer.flush().map_err(|source| ReportError::Write { path: path.into(), source })
}

pub(crate) fn write_files(run_dir: &Path, report: &Report) -> Result<(), ReportError> {
    write_csv(&run_dir.join("summary.csv"), &report.summary)?;
    write_csv(&run_dir.join("comparisons.csv"), &report.comparisons)?;
    let path = run_dir.join("summary.json");
    let json = serde_json::to_string_pretty(report).expect("the report serializes");
    std::fs::write(&path, json + "\n").map_err(|source| ReportError::Write { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(task: &str, arm: &str, passed: bool, rounds: u32) -> OutcomeRow {
        OutcomeRow {
            run_id: "r".into(),
            config_id: "p8-r3-stall-e0".into(),
            arm: arm.into(),
            critic: "rubric".into(),
            task_id: task.into(),
            kind: None,
            epoch: 0,
            pass_score: 8.0,
            max_revisions: 3,
            stall: true,
            plateau_eps: 0.0,
            dim_target: None,
            final_draft: "best".into(),
            rounds,
            revisions: rounds - 1,
            exit_reason: if passed { "pass" } else { "budget" }.into(),
            passed,
            first_score: 5.0,
            last_score: 6.0,
            final_score: 6.0,
            best_score: 6.0,
            best_round: 0,
            critic_errors: 0,
            critic_disagreements: 0,
            tokens_in: None,
            tokens_out: None,
            wall_ms: 1.0,
            meta: None,
        }
    }

    #[test]
    fn empty_tables_still_have_their_header() {
        let summary = headers::<SummaryRow>();
        assert_eq!(&summary[..4], ["config_id", "arm", "critic", "n"]);
        assert!(summary.contains(&"first_round_pass_rate".to_string()));
        assert!(headers::<ComparisonRow>().contains(&"diff_mean_best_score".to_string()));
    }

    #[test]
    fn summary_counts_and_pairs_arms_by_task() {
        let outcomes = vec![
            row("a", "no-feedback", false, 4),
            row("a", "feedback", true, 2),
            row("b", "feedback", true, 3),
            row("b", "no-feedback", true, 1),
            row("c", "feedback", false, 4),
            row("c", "no-feedback", false, 4),
            row("d", "feedback", true, 2), // no partner: not paired
        ];
        let report = build_report(&outcomes, None);
        assert_eq!(report.summary.len(), 2);
        let feedback = &report.summary[0];
        assert_eq!((feedback.arm.as_str(), feedback.n, feedback.passed, feedback.exit_budget), ("feedback", 4, 3, 1));
        assert_eq!(feedback.mean_rounds, 2.75);
        let comparison = &report.comparisons[0];
        assert_eq!((comparison.arm_a.as_str(), comparison.arm_b.as_str()), ("feedback", "no-feedback"));
        assert_eq!((comparison.n_pairs, comparison.a_only, comparison.b_only), (3, 1, 0));
        assert!((comparison.diff - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(comparison.mcnemar_p, 1.0);
    }
}
