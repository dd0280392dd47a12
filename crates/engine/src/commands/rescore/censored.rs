//! `censored.csv`: per config × arm × critic, how many of a rescoring's replayed loops are
//! censored, and what the pass rate would be if every censored loop had failed or passed — the
//! bounds that hold whatever their outcome.

use std::collections::HashMap;
use std::path::Path;

use critbench_storage::manifest::Manifest;

use crate::EngineError;
use crate::run_dir::layout::CENSORED_FILE;

/// One config × arm × critic of a rescoring.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CensoredRow {
    /// The config.
    pub config_id: String,
    /// The arm.
    pub arm: String,
    /// The critic.
    pub critic: String,
    /// Replayed loops, censored or not.
    pub loops: u64,
    /// Of those, the loops censored.
    pub censored: u64,
    /// Loops with an outcome that passed.
    pub passed: u64,
}

impl CensoredRow {
    /// The pass rate over the loops with an outcome (`None` when every loop is censored).
    pub fn pass_rate(&self) -> Option<f64> {
        let known = self.loops - self.censored;
        (known > 0).then(|| self.passed as f64 / known as f64)
    }

    /// The pass rate over every loop if each censored one had failed, and if each had passed.
    pub fn bounds(&self) -> (f64, f64) {
        let loops = self.loops.max(1) as f64;
        (self.passed as f64 / loops, (self.passed + self.censored) as f64 / loops)
    }
}

/// The header of `censored.csv`.
pub const HEADER: &str = "config_id,arm,critic,loops,censored,with_outcome,passed,pass_rate,pass_rate_if_censored_failed,pass_rate_if_censored_passed";

/// Counts the loops of a rescoring's `outcomes.parquet`, ordered as the run lists its configs,
/// critics and arms.
pub fn tally(outcomes: &Path, manifest: &Manifest) -> Result<Vec<CensoredRow>, EngineError> {
    let mut rows: Vec<CensoredRow> = Vec::new();
    let mut index: HashMap<(String, String, String), usize> = HashMap::new();
    critbench_storage::tables::for_each_outcome_stats_with_censored::<std::convert::Infallible>(outcomes, |row| {
        let key = (row.config_id.to_string(), row.arm.to_string(), row.critic.to_string());
        let slot = *index.entry(key).or_insert_with_key(|(config_id, arm, critic)| {
            rows.push(CensoredRow {
                config_id: config_id.clone(),
                arm: arm.clone(),
                critic: critic.clone(),
                ..CensoredRow::default()
            });
            rows.len() - 1
        });
        let counted = &mut rows[slot];
        counted.loops += 1;
        counted.censored += u64::from(row.censored);
        counted.passed += u64::from(row.passed && !row.censored);
        Ok(())
    })?;
    let experiment = &manifest.experiment;
    let position = |names: Vec<&str>, name: &str| names.iter().position(|n| *n == name).unwrap_or(usize::MAX);
    rows.sort_by_cached_key(|row| {
        (
            position(experiment.policies.iter().map(|p| p.config_id.as_str()).collect(), &row.config_id),
            position(experiment.critics.iter().map(|c| c.name.as_str()).collect(), &row.critic),
            position(experiment.arms.iter().map(String::as_str).collect(), &row.arm),
            (row.config_id.clone(), row.critic.clone(), row.arm.clone()),
        )
    });
    Ok(rows)
}

/// Writes `censored.csv` into `dir`.
pub fn write(dir: &Path, rows: &[CensoredRow]) -> Result<(), EngineError> {
    let mut text = format!("{HEADER}\n");
    for row in rows {
        let (low, high) = row.bounds();
        text.push_str(&format!(
            "{},{},{},{},{},{},{},{},{low:?},{high:?}\n",
            field(&row.config_id),
            field(&row.arm),
            field(&row.critic),
            row.loops,
            row.censored,
            row.loops - row.censored,
            row.passed,
            row.pass_rate().map(|rate| format!("{rate:?}")).unwrap_or_default(),
        ));
    }
    Ok(crate::run_dir::journal::write_atomically(&dir.join(CENSORED_FILE), &text)?)
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_count_every_censored_loop_as_a_fail_then_as_a_pass() {
        let row = CensoredRow { loops: 10, censored: 4, passed: 3, ..CensoredRow::default() };
        assert_eq!(row.pass_rate(), Some(0.5));
        assert_eq!(row.bounds(), (0.3, 0.7));
        let all = CensoredRow { loops: 2, censored: 2, ..CensoredRow::default() };
        assert_eq!((all.pass_rate(), all.bounds()), (None, (0.0, 1.0)));
        assert_eq!(field("a,b"), "\"a,b\"");
    }
}
