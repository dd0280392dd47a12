//! Statistics for critbench that stand on their own: pure functions of numbers, no I/O, no
//! knowledge of runs or tables. The report, the critic benchmark and the engine call them; each is
//! checked against reference values (scipy, scikit-learn, numpy) in its tests, and the larger ones
//! against a reference implementation in `tests/python/`.
//!
//! - [`rate`]: a pass rate with the 95% interval valid at its number of tasks, and
//!   [`difference`]: a paired difference with its interval and the test that is the interval's
//!   dual — the numbers the reports print;
//! - [`sign_flip`]: the exact sign-flip test of paired task differences and the interval of shifts
//!   it does not reject, the small-sample test of a difference;
//! - [`binomial`]: Wilson's and Clopper–Pearson's intervals of a proportion, the binomial test
//!   dual to Clopper–Pearson's and the exact McNemar test;
//! - [`distributions`]: the normal quantile, ln Γ, the incomplete beta function and its inverse,
//!   binomial tails and Student's t quantile;
//! - [`bootstrap`]: the task-cluster bootstrap of ratio statistics (exact when every task has the
//!   same size, otherwise resampled with a seed drawn from the data), with the p-value read from
//!   the same distribution;
//! - [`descriptive`]: an order-independent exact sum ([`descriptive::ExactSum`]), the mean,
//!   numpy's percentile, rates and the sample standard deviation;
//! - [`agreement`]: Cohen's kappa and the Pearson, Spearman and Kendall correlations of two
//!   raters;
//! - [`ppi`]: pass rates and differences corrected by a labelled sample (prediction-powered
//!   inference, or the labels alone where they are few);
//! - [`sequential`]: anytime-valid confidence sequences for a paired comparison run task by task,
//!   and the [`sequential::Monitor`] that decides when a sequential run may stop;
//! - [`power`]: how many tasks a paired comparison needs, from the split of its variance into a
//!   task part and an epoch part, and the smallest difference it could detect.
//!
//! ```
//! use critbench_stats::binomial::{mcnemar_exact, wilson_interval};
//!
//! let (low, high) = wilson_interval(7, 10);
//! assert!(low < 0.7 && 0.7 < high);
//! assert!(mcnemar_exact(2, 10) < 0.05);
//! ```
#![warn(missing_docs)]

pub mod agreement;
pub mod binomial;
pub mod bootstrap;
pub mod descriptive;
pub mod difference;
pub mod distributions;
pub mod power;
pub mod ppi;
pub mod rate;
pub mod sequential;
pub mod sign_flip;
