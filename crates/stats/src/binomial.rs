//! Intervals and exact tests of a binomial proportion: Wilson's score interval, the exact
//! McNemar test of discordant pairs and the sign test, its clustered counterpart.

/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

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

fn log_add(a: f64, b: f64) -> f64 {
    let (high, low) = if a > b { (a, b) } else { (b, a) };
    high + (low - high).exp().ln_1p()
}

/// Exact two-sided sign test: the binomial test of `positive` against `negative` at p = ½ (ties
/// dropped). On per-task differences it is the clustered counterpart of McNemar's test, and with
/// one pair per task it is McNemar's exact test.
pub fn sign_test(positive: u64, negative: u64) -> f64 {
    mcnemar_exact(positive, negative)
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
}
