//! Pass rates corrected by gold labels: `critbench sample` draws a seeded uniform sample of a
//! finished run's tasks and writes their answers for people to label; `critbench report RUN
//! --labels FILE` reads the labels back and corrects every arm's pass rate, and the paired
//! differences of arms, by prediction-powered inference (`critbench_stats::ppi`).
//!
//! The critic that steered a loop is the one the loop learned to satisfy, so its pass rate may
//! be real improvement or the loop pleasing its critic. A few hundred labelled answers measure
//! how far the critic is off on this run's own answers, without trusting it: the corrected rate
//! is the critic's verdict on every task, corrected by its difference from gold on the labelled
//! ones, with an interval that holds whatever the critic's errors are.
//!
//! - `sample`: draws the tasks ([`draw_sample`]) and writes the file ([`write_sample`]): a header
//!   line naming the sample, then one line per distinct answer with the loops it stands for.
//! - `labels`: reads a labelled file and checks it is that sample of that run, with the answers and
//!   verdicts the run holds ([`read_labels`]).
//! - `corrected`: folds the run's outcomes with the labels into `corrected.csv` and
//!   `corrected_comparisons.csv` ([`Corrected`]).
//! - `render`: the "Corrected by gold labels" section of `report.md`, and the cells the page's
//!   section (`html/corrected.rs`) shares with it.
//!
//! ```no_run
//! use critbench_report::gold::{SampleRequest, draw_sample, write_sample};
//! let run = std::path::Path::new("reports/demo");
//! let sample = draw_sample(run, &SampleRequest { tasks: 60, seed: 1 })?;
//! write_sample(&sample, "labels.jsonl".as_ref(), false)?;
//! // … people fill every `gold` with true or false, then:
//! critbench_report::write_reports_with_labels(run, Some("labels.jsonl".as_ref()))?;
//! # Ok::<(), critbench_report::ReportError>(())
//! ```

mod corrected;
mod labels;
pub(crate) mod render;
mod sample;

pub use corrected::{Corrected, CorrectedComparison, CorrectedRow};
pub use labels::{Labelling, Labels, read_labels};
pub use sample::{
    Answer, AnsweredLoop, SAMPLE_VERSION, Sample, SampleHeader, SampleRequest, draw_sample, write_sample,
};

/// The error level of every interval: 95%.
pub const ALPHA: f64 = 0.05;

pub use crate::error::GoldError;
