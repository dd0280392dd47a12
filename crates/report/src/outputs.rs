//! The files the report writes into a run's directory (and a rescoring's), each named once: the
//! code that writes a file names it by its constant here, and whatever must know a run's files by
//! name (the run directory's guard: `--overwrite`, `critbench report`, `critbench merge`) reads
//! [`FILES`]. A new report file is added here, beside its writer, and nowhere else.

/// Each config × critic × arm's pass rate and interval.
pub const SUMMARY_CSV: &str = "summary.csv";
/// The whole report as JSON.
pub const SUMMARY_JSON: &str = "summary.json";
/// Each pair of arms compared.
pub const COMPARISONS_CSV: &str = "comparisons.csv";
/// Each arm's pass rate against what its loops spent.
pub const COST_CURVES_CSV: &str = "cost_curves.csv";
/// Arms compared at equal spend.
pub const COST_COMPARISONS_CSV: &str = "cost_comparisons.csv";
/// Where a gain comes from: single → no-feedback → placebo → feedback → oracle.
pub const LADDER_CSV: &str = "ladder.csv";
/// Grid neighbours compared on the same units.
pub const CONFIG_COMPARISONS_CSV: &str = "config_comparisons.csv";
/// Each comparison's power.
pub const POWER_CSV: &str = "power.csv";
/// A sequential run's looks.
pub const SEQUENTIAL_CSV: &str = "sequential.csv";
/// The report, in Markdown.
pub const REPORT_MD: &str = "report.md";
/// The report, in HTML with its charts.
pub const REPORT_HTML: &str = "report.html";
/// Pass rates corrected by a labelled sample (`critbench report --labels`).
pub const CORRECTED_CSV: &str = "corrected.csv";
/// Paired differences corrected by a labelled sample.
pub const CORRECTED_COMPARISONS_CSV: &str = "corrected_comparisons.csv";
/// What held-out evaluators say of the final answers.
pub const EVALUATORS_CSV: &str = "evaluators.csv";
/// Arms compared by the held-out evaluators.
pub const EVALUATOR_COMPARISONS_CSV: &str = "evaluator_comparisons.csv";
/// Every round's pass rates, by the critic and by an evaluator that judged every round.
pub const EVALUATOR_ROUNDS_CSV: &str = "evaluator_rounds.csv";

/// Every file the report may write into a run's directory.
pub const FILES: &[&str] = &[
    SUMMARY_CSV,
    SUMMARY_JSON,
    COMPARISONS_CSV,
    COST_CURVES_CSV,
    COST_COMPARISONS_CSV,
    LADDER_CSV,
    CONFIG_COMPARISONS_CSV,
    POWER_CSV,
    SEQUENTIAL_CSV,
    REPORT_MD,
    REPORT_HTML,
    CORRECTED_CSV,
    CORRECTED_COMPARISONS_CSV,
    EVALUATORS_CSV,
    EVALUATOR_COMPARISONS_CSV,
    EVALUATOR_ROUNDS_CSV,
];
