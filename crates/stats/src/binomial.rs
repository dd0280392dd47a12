//! Intervals and exact tests of a binomial proportion: Wilson's score interval, Clopper–Pearson's
//! exact interval and the binomial test dual to it (both continued to fractional counts), and the
//! exact McNemar test of discordant pairs.

use crate::distributions::{beta_quantile, binomial_lower_tail, binomial_upper_tail};

/// z for a two-sided 95% interval.
pub(crate) const Z95: f64 = 1.959_963_984_540_054;

/// Wilson score interval (95%) for `successes` out of `n`; `(0, 1)` when `n` is 0.
pub fn wilson_interval(successes: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let n = n as f64;
    let p = successes as f64 / n;
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denominator;
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
    ((center - half).max(0.0), (center + half).min(1.0))
}

/// Exact two-sided McNemar test: the binomial test of `a_only` against `b_only` at p = ½.
pub fn mcnemar_exact(a_only: u64, b_only: u64) -> f64 {
    let n = a_only + b_only;
    if n == 0 {
        return 1.0;
    }
    let k = a_only.min(b_only);
    // log P(X = i) for X ~ Binomial(n, ½), summed in log space so large n cannot underflow.
    let mut log_pmf = -(n as f64) * std::f64::consts::LN_2;
    let mut log_tail = log_pmf;
    for i in 1..=k {
        log_pmf += ((n - i + 1) as f64).ln() - (i as f64).ln();
        log_tail = log_add(log_tail, log_pmf);
    }
    (2.0 * log_tail.exp()).min(1.0)
}

/// Clopper–Pearson's interval at level 1 − `alpha` for `successes` of `trials`: the p whose
/// one-sided binomial tails at the count are each α/2, from the beta quantiles
/// (`statsmodels`' `proportion_confint(method="beta")`). Counts may be fractional (an effective
/// number of trials, or a sum of per-task shares), where the beta quantiles continue the binomial
/// ones; `(0, 1)` for no trials. Exact (coverage at least 1 − α at every p) for whole counts.
pub fn clopper_pearson(successes: f64, trials: f64, alpha: f64) -> (f64, f64) {
    if trials <= 0.0 {
        return (0.0, 1.0);
    }
    let successes = successes.clamp(0.0, trials);
    let low = if successes <= 0.0 { 0.0 } else { beta_quantile(alpha / 2.0, successes, trials - successes + 1.0) };
    let high =
        if successes >= trials { 1.0 } else { beta_quantile(1.0 - alpha / 2.0, successes + 1.0, trials - successes) };
    (low, high)
}

/// The two-sided binomial test of p = ½ dual to [`clopper_pearson`]: twice the smaller tail at
/// `successes` of `trials` (fractional counts continued as there), at most 1; 1 without trials.
/// Clopper–Pearson's interval at level 1 − α excludes ½ exactly when this is below α, and with
/// whole counts it is `scipy.stats.binomtest(k, n, 0.5).pvalue` (the distribution is symmetric).
pub fn binomial_test_half(successes: f64, trials: f64) -> f64 {
    if trials <= 0.0 {
        return 1.0;
    }
    let successes = successes.clamp(0.0, trials);
    if successes.fract() == 0.0 && trials.fract() == 0.0 && trials < 2f64.powi(53) {
        // Whole counts: the binomial sum itself, to the last bit.
        return mcnemar_exact(successes as u64, (trials - successes) as u64);
    }
    let tail = binomial_upper_tail(successes, trials, 0.5).min(binomial_lower_tail(successes, trials, 0.5));
    (2.0 * tail).min(1.0)
}

fn log_add(a: f64, b: f64) -> f64 {
    let (high, low) = if a > b { (a, b) } else { (b, a) };
    high + (low - high).exp().ln_1p()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn wilson_matches_reference_values() {
        // The Wilson formula evaluated in double precision (statsmodels proportion_confint agrees).
        let (lo, hi) = wilson_interval(7, 10);
        assert!(close(lo, 0.396_778_147_461_145_4) && close(hi, 0.892_208_732_593_698_9), "{lo} {hi}");
        assert_eq!(wilson_interval(0, 0), (0.0, 1.0));
        let (lo, hi) = wilson_interval(0, 20);
        assert!(close(lo, 0.0) && hi > 0.15 && hi < 0.17);
    }

    #[test]
    fn mcnemar_matches_the_binomial_test() {
        // scipy.stats.binomtest(2, 12, 0.5).pvalue
        assert!(close(mcnemar_exact(2, 10), 0.038_574_218_75));
        assert!(close(mcnemar_exact(10, 2), 0.038_574_218_75));
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        assert_eq!(mcnemar_exact(5, 5), 1.0);
        // Large n must not underflow to zero or NaN.
        let p = mcnemar_exact(2000, 2100);
        assert!(p > 0.0 && p < 1.0, "{p}");
    }

    #[test]
    fn clopper_pearson_matches_statsmodels() {
        // statsmodels proportion_confint(k, n, alpha=0.05, method="beta")
        for (k, n, low, high) in [
            (7.0, 10.0, 0.347_547_149_940_002_7, 0.933_260_488_822_265_5),
            (0.0, 20.0, 0.0, 0.168_433_470_983_085_34),
            (20.0, 20.0, 0.831_566_529_016_914_6, 1.0),
            (1.0, 240.0, 1.054_853_026_353_906e-4, 0.022_995_275_839_816_715),
        ] {
            let (lo, hi) = clopper_pearson(k, n, 0.05);
            assert!((lo - low).abs() < 1e-12 && (hi - high).abs() < 1e-12, "{k} of {n}: ({lo}, {hi})");
        }
        assert_eq!(clopper_pearson(0.0, 0.0, 0.05), (0.0, 1.0));
        // Four trials at p = ½: Clopper–Pearson covers ½ whatever the count; Wilson does not at 0 of 4.
        assert!((0..=4).all(|k| {
            let (lo, hi) = clopper_pearson(f64::from(k), 4.0, 0.05);
            lo <= 0.5 && 0.5 <= hi
        }));
        assert!(wilson_interval(0, 4).1 < 0.5);
    }

    #[test]
    fn the_binomial_test_is_mcnemars_at_whole_counts_and_dual_to_clopper_pearson() {
        for (a, b) in [(2u64, 10u64), (10, 2), (5, 5), (0, 6), (13, 0), (40, 61)] {
            let p = binomial_test_half(a as f64, (a + b) as f64);
            assert!((p - mcnemar_exact(a, b)).abs() < 1e-12, "{a} vs {b}: {p} against {}", mcnemar_exact(a, b));
        }
        assert_eq!(binomial_test_half(0.0, 0.0), 1.0);
        // Fractional counts: the interval excludes ½ exactly when the test rejects.
        for tenth in 0..=120 {
            let successes = f64::from(tenth) / 10.0;
            let (lo, hi) = clopper_pearson(successes, 12.0, 0.05);
            let p = binomial_test_half(successes, 12.0);
            assert_eq!(lo > 0.5 || hi < 0.5, p < 0.05, "{successes} of 12: ({lo}, {hi}), p {p}");
        }
    }
}
