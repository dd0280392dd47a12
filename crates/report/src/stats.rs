//! The statistics behind the reports. Pure functions, checked against reference values.

use critbench_core::Rng;

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

/// Paired bootstrap 95% percentile interval of mean(a) − mean(b) over pairs (a_i, b_i).
///
/// Each pair is one of four kinds (both passed, only a, only b, neither), so a resample needs
/// only how many of each kind it drew; `seed` makes the interval reproducible.
pub fn paired_bootstrap_diff(pairs: &[(bool, bool)], resamples: usize, seed: u64) -> (f64, f64) {
    paired_bootstrap_diffs(&[pairs], resamples, seed)[0]
}

/// The same intervals for several statistics over the same pairs, resampled together: each
/// resample draws one set of indices and evaluates every statistic on it, so two differences cost
/// one pass, and the first statistic's interval is what [`paired_bootstrap_diff`] gives alone.
///
/// # Panics
/// If the statistics do not all have the same number of pairs.
pub fn paired_bootstrap_diffs(statistics: &[&[(bool, bool)]], resamples: usize, seed: u64) -> Vec<(f64, f64)> {
    let n = statistics.first().map_or(0, |pairs| pairs.len());
    assert!(statistics.iter().all(|pairs| pairs.len() == n), "every statistic needs the same pairs");
    if n == 0 || resamples == 0 {
        return vec![(0.0, 0.0); statistics.len()];
    }
    // A pair's contributions to the differences (each -1, 0 or 1) as one small code, so a
    // resample only counts how often it drew each code.
    let k = statistics.len();
    let codes: Vec<usize> = (0..n)
        .map(|i| {
            statistics
                .iter()
                .fold(0, |code, pairs| code * 3 + (i64::from(pairs[i].0) - i64::from(pairs[i].1) + 1) as usize)
        })
        .collect();
    let kinds = 3usize.pow(k as u32);
    let delta = |code: usize, statistic: usize| (code / 3usize.pow((k - 1 - statistic) as u32)) as i64 % 3 - 1;
    let mut rng = Rng::new(seed);
    let mut diffs = vec![Vec::with_capacity(resamples); k];
    let mut counts = vec![0i64; kinds];
    // Two indices from each 64-bit draw (32 bits each, multiply-shift): n is far below 2^32, so the
    // bias is under n / 2^32, negligible beside the bootstrap's own sampling error.
    assert!(n < (1 << 31), "too many pairs for the bootstrap");
    let index = |bits: u64| (((bits & 0xffff_ffff) * n as u64) >> 32) as usize;
    for _ in 0..resamples {
        counts.iter_mut().for_each(|c| *c = 0);
        for _ in 0..n / 2 {
            let bits = rng.next_u64();
            counts[codes[index(bits)]] += 1;
            counts[codes[index(bits >> 32)]] += 1;
        }
        if n % 2 == 1 {
            counts[codes[index(rng.next_u64())]] += 1;
        }
        for (statistic, diff) in diffs.iter_mut().enumerate() {
            let total: i64 = counts.iter().enumerate().map(|(code, count)| count * delta(code, statistic)).sum();
            diff.push(total as f64 / n as f64);
        }
    }
    diffs
        .into_iter()
        .map(|mut diff| {
            diff.sort_by(f64::total_cmp);
            (percentile(&diff, 0.025), percentile(&diff, 0.975))
        })
        .collect()
}

/// Linear-interpolated percentile of sorted data (numpy's default method).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let position = q * (sorted.len() - 1) as f64;
    let low = position.floor() as usize;
    let high = position.ceil() as usize;
    sorted[low] + (sorted[high] - sorted[low]) * (position - low as f64)
}

pub fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0u64), |(s, c), v| (s + v, c + 1));
    if count == 0 { f64::NAN } else { sum / count as f64 }
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
    fn bootstrap_interval_brackets_the_difference_and_is_reproducible() {
        let mut pairs = vec![(true, false); 30];
        pairs.extend(vec![(false, false); 50]);
        pairs.extend(vec![(true, true); 20]);
        let (lo, hi) = paired_bootstrap_diff(&pairs, 2000, 1);
        assert!(lo > 0.15 && lo < 0.3 && hi > 0.3 && hi < 0.45, "{lo} {hi}");
        assert_eq!(paired_bootstrap_diff(&pairs, 2000, 1), (lo, hi));
        assert_eq!(paired_bootstrap_diff(&[(true, true); 10], 500, 1), (0.0, 0.0));
        // Resampled together, the first statistic keeps its interval.
        let flipped: Vec<(bool, bool)> = pairs.iter().map(|&(a, b)| (b, a)).collect();
        let both = paired_bootstrap_diffs(&[&pairs, &flipped], 2000, 1);
        assert_eq!(both[0], (lo, hi));
        assert!((both[1].0 + hi).abs() < 1e-12 && (both[1].1 + lo).abs() < 1e-12, "{both:?}");
    }
}
