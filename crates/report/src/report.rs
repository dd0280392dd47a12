//! What the reports hold, section by section ([`Report`]), and `summary.json`, its serialized form.

use std::path::Path;

use critbench_storage::manifest::SequentialRecord;
use serde::Serialize;

use crate::{ReportError, Summary, backend, configs, evaluators, judges, power, sequential};

/// Everything the reports hold, section by section. Serialized, it is `summary.json`: the
/// summary, and what a sequential run decided.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The run, its rows and comparisons, and the notes beside them (`summary.csv`,
    /// `comparisons.csv`).
    pub summary: Summary,
    /// How many tasks each comparison needs (`power.csv`, a row per comparison over two tasks or
    /// more, in their order; not written to `summary.json`).
    pub power: Vec<power::PowerRow>,
    /// The same rows, comparisons, cost curves and power rows as each held-out evaluator reads
    /// them (filled by [`write_reports`](crate::write_reports), in the order the evaluators first appear; `summary` and
    /// `power` are the steering critic's reading). Not written to `summary.json`.
    pub held_out: Vec<judges::Judged>,
    /// Grid neighbours compared unit by unit, by every judge (`config_comparisons.csv`; filled by
    /// [`write_reports`](crate::write_reports)).
    pub config_comparisons: Vec<configs::ConfigComparisonRow>,
    /// What the held-out evaluators said of the same answers (`evaluators.csv`; filled by
    /// [`write_reports`](crate::write_reports), not written to `summary.json`), when the run has any.
    pub evaluators: Option<evaluators::EvaluatorReport>,
    /// What the run's backend can and cannot measure (for the reports; what they say of it is in
    /// the summary's notes).
    pub backend: backend::Backend,
    /// A sequential run's record, from its manifest (filled by [`write_reports`](crate::write_reports)); `summary.json`
    /// gives what it decided in a few fields, read beside the summary's comparisons.
    pub sequential: Option<SequentialRecord>,
    /// What went wrong that the rates do not show (`trouble`: critics restarted or retried,
    /// evaluators' errors, model answers cut short), from the manifest; the terminal prints it
    /// below the table, and the summary's notes say the same (not written to `summary.json`).
    pub trouble: Vec<String>,
    /// A rescoring's critic, when the run did not have it: the rates are its verdicts, and the
    /// critic column names the critic that steered each loop (the tables' `critic`).
    pub rescored_by: Option<String>,
}

impl Serialize for Report {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Json<'a> {
            #[serde(flatten)]
            summary: &'a Summary,
            #[serde(skip_serializing_if = "Option::is_none")]
            sequential: Option<sequential::SummaryJson<'a>>,
        }
        let sequential = self.sequential.as_ref().map(|r| sequential::SummaryJson::of(r, &self.summary.comparisons));
        Json { summary: &self.summary, sequential }.serialize(serializer)
    }
}

impl Report {
    /// The report of the summary's pass alone: its summary and power sections, the others empty.
    pub(crate) fn summarized((summary, power): (Summary, Vec<power::PowerRow>)) -> Report {
        Report { summary, power, ..Report::default() }
    }

    /// Writes `summary.json`.
    pub(crate) fn write_json(&self, run_dir: &Path) -> Result<(), ReportError> {
        let path = run_dir.join(crate::outputs::SUMMARY_JSON);
        let json = serde_json::to_string_pretty(self).expect("the report serializes");
        critbench_storage::files::write_atomically(&path, (json + "\n").as_bytes())
            .map_err(|source| ReportError::Write { path, source })
    }
}
