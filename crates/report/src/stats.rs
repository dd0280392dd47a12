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

/// One distinct per-task vector of a clustered statistic: how many tasks share it (`tasks`), the
/// task's denominator (its loops, or its matched pairs) and its numerators, one per statistic
/// (passes, or pass differences).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cluster<const K: usize> {
    pub denominator: u64,
    pub numerators: [i64; K],
    pub tasks: u64,
}

/// Task-cluster percentile bootstrap (95%) of K ratio statistics Σ numerator / Σ denominator.
///
/// A resample draws as many tasks as there are, with replacement, and keeps every loop of a
/// drawn task together, so a task's epochs are never treated as independent (Miller 2024,
/// "Adding Error Bars to Evals"). Tasks with the same vector are interchangeable, so a resample
/// is one multinomial draw of how many times each distinct vector is taken (sequential binomial
/// draws): O(distinct vectors) per resample, whatever the number of tasks. The vectors are
/// sorted first, so the interval depends only on the multiset of vectors and the seed, never on
/// the order they arrived in. Every statistic is evaluated on the same resamples.
pub fn cluster_bootstrap<const K: usize>(clusters: &[Cluster<K>], resamples: usize, seed: u64) -> [(f64, f64); K] {
    let mut sorted: Vec<Cluster<K>> = clusters.iter().copied().filter(|c| c.tasks > 0).collect();
    sorted.sort_unstable();
    let total: u64 = sorted.iter().map(|c| c.tasks).sum();
    if total == 0 || resamples == 0 {
        return [(0.0, 0.0); K];
    }
    let mut rng = Rng::new(seed);
    let mut values: Vec<Vec<f64>> = (0..K).map(|_| Vec::with_capacity(resamples)).collect();
    let mut draws = vec![0u64; sorted.len()];
    for _ in 0..resamples {
        multinomial(&mut rng, total, sorted.iter().map(|c| c.tasks), &mut draws);
        let mut denominator = 0u128;
        let mut numerators = [0i128; K];
        for (cluster, &drawn) in sorted.iter().zip(&draws) {
            denominator += u128::from(cluster.denominator) * u128::from(drawn);
            for (sum, numerator) in numerators.iter_mut().zip(cluster.numerators) {
                *sum += i128::from(numerator) * i128::from(drawn);
            }
        }
        for (statistic, numerator) in values.iter_mut().zip(numerators) {
            statistic.push(if denominator == 0 { 0.0 } else { numerator as f64 / denominator as f64 });
        }
    }
    let mut intervals = [(0.0, 0.0); K];
    for (interval, mut statistic) in intervals.iter_mut().zip(values) {
        statistic.sort_by(f64::total_cmp);
        *interval = (percentile(&statistic, 0.025), percentile(&statistic, 0.975));
    }
    intervals
}

/// How many of `n` draws fall on each category, with probabilities proportional to `weights`
/// (which sum to `n` here, but need not): sequential binomial draws, written into `out`.
fn multinomial(rng: &mut Rng, n: u64, weights: impl Iterator<Item = u64> + Clone, out: &mut [u64]) {
    let mut remaining_weight: u64 = weights.clone().sum();
    let mut remaining = n;
    for (slot, weight) in out.iter_mut().zip(weights) {
        *slot = if remaining == 0 || weight == 0 {
            0
        } else if weight >= remaining_weight {
            remaining
        } else {
            binomial(rng, remaining, weight as f64 / remaining_weight as f64)
        };
        remaining -= *slot;
        remaining_weight -= weight;
    }
}

/// A draw from Binomial(n, p), exact up to floating-point rounding of the probabilities.
///
/// Inversion: from 0 when the mean is small, otherwise a search outward from the mode that
/// subtracts probabilities alternately below and above it (expected steps about one standard
/// deviation), with each probability from its neighbour's by the ratio of binomial terms.
fn binomial(rng: &mut Rng, n: u64, p: f64) -> u64 {
    if n == 0 || p <= 0.0 {
        return 0;
    }
    if p >= 1.0 {
        return n;
    }
    if p > 0.5 {
        return n - binomial(rng, n, 1.0 - p);
    }
    let q = 1.0 - p;
    let odds = p / q;
    let nf = n as f64;
    if nf * p < 16.0 {
        // q^n ≥ e^-23 here (p ≤ ½ and np < 16), far from underflow.
        let start = (nf * q.ln()).exp();
        loop {
            let mut u = rng.unit();
            let mut probability = start;
            for k in 0..=n {
                if u < probability {
                    return k;
                }
                u -= probability;
                probability *= odds * (n - k) as f64 / (k + 1) as f64;
                if probability == 0.0 {
                    break;
                }
            }
            // What rounding left of the mass past the last term: draw again.
        }
    }
    let mode = (((n + 1) as f64) * p).floor().min(nf) as u64;
    let at_mode = (ln_factorial(n) - ln_factorial(mode) - ln_factorial(n - mode)
        + mode as f64 * p.ln()
        + (n - mode) as f64 * q.ln())
    .exp();
    loop {
        let mut u = rng.unit() - at_mode;
        if u < 0.0 {
            return mode;
        }
        let (mut low, mut high, mut below, mut above) = (mode, mode, at_mode, at_mode);
        loop {
            let mut moved = false;
            if low > 0 {
                below *= low as f64 / ((n - low + 1) as f64 * odds);
                low -= 1;
                u -= below;
                if u < 0.0 {
                    return low;
                }
                moved = below > 0.0;
            }
            if high < n {
                above *= odds * (n - high) as f64 / (high + 1) as f64;
                high += 1;
                u -= above;
                if u < 0.0 {
                    return high;
                }
                moved |= above > 0.0;
            }
            if !moved {
                break;
            }
        }
    }
}

/// ln(k!): summed exactly for small k, Stirling's series (error below 1e-15) above.
fn ln_factorial(k: u64) -> f64 {
    if k < 32 {
        return (2..=k).map(|i| (i as f64).ln()).sum();
    }
    let x = k as f64;
    let inverse = 1.0 / x;
    let inverse2 = inverse * inverse;
    (x + 0.5) * x.ln() - x
        + 0.5 * (2.0 * std::f64::consts::PI).ln()
        + inverse * (1.0 / 12.0 - inverse2 * (1.0 / 360.0 - inverse2 * (1.0 / 1260.0 - inverse2 / 1680.0)))
}

/// Exact two-sided sign test: the binomial test of `positive` against `negative` at p = ½ (ties
/// dropped). On per-task differences it is the clustered counterpart of McNemar's test, and with
/// one pair per task it is McNemar's exact test.
pub fn sign_test(positive: u64, negative: u64) -> f64 {
    mcnemar_exact(positive, negative)
}

/// A sum of floating-point numbers that does not depend on the order they are added in: the
/// partials are kept exactly (Shewchuk's algorithm, as Python's `math.fsum`) and the total is
/// rounded once at the end.
#[derive(Clone, Debug, Default)]
pub struct ExactSum {
    partials: Vec<f64>,
    /// Infinities and NaNs, which have no exact partials.
    special: f64,
    count: u64,
}

impl ExactSum {
    pub fn add(&mut self, value: f64) {
        self.count += 1;
        if !value.is_finite() {
            self.special += value;
            return;
        }
        let mut x = value;
        let mut kept = 0;
        for j in 0..self.partials.len() {
            let mut y = self.partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let high = x + y;
            let low = y - (high - x);
            if low != 0.0 {
                self.partials[kept] = low;
                kept += 1;
            }
            x = high;
        }
        self.partials.truncate(kept);
        self.partials.push(x);
    }

    /// The correctly rounded total.
    pub fn sum(&self) -> f64 {
        if self.special != 0.0 || self.special.is_nan() {
            return self.special;
        }
        let partials = &self.partials;
        let mut n = partials.len();
        if n == 0 {
            return 0.0;
        }
        n -= 1;
        let mut high = partials[n];
        let mut low = 0.0;
        while n > 0 {
            let x = high;
            n -= 1;
            let y = partials[n];
            high = x + y;
            low = y - (high - x);
            if low != 0.0 {
                break;
            }
        }
        if n > 0 && ((low < 0.0 && partials[n - 1] < 0.0) || (low > 0.0 && partials[n - 1] > 0.0)) {
            let y = low * 2.0;
            let x = high + y;
            if y == x - high {
                high = x;
            }
        }
        high
    }

    /// The mean of what was added; NaN when nothing was.
    pub fn mean(&self) -> f64 {
        if self.count == 0 { f64::NAN } else { self.sum() / self.count as f64 }
    }
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
    fn exact_sum_does_not_depend_on_order() {
        let values: Vec<f64> = (0..1000).map(|i| (f64::from(i) * 0.1).sin() * 10f64.powi(i % 7 - 3)).collect();
        let mut forward = ExactSum::default();
        values.iter().for_each(|&v| forward.add(v));
        let mut backward = ExactSum::default();
        values.iter().rev().for_each(|&v| backward.add(v));
        assert_eq!(forward.sum().to_bits(), backward.sum().to_bits());
        // A naive sum loses the small terms; the exact one keeps them: 1e16 + 1 − 1e16 = 1.
        let mut cancel = ExactSum::default();
        [1e16, 1.0, -1e16].iter().for_each(|&v| cancel.add(v));
        assert_eq!(cancel.sum(), 1.0);
        assert_eq!(cancel.mean(), 1.0 / 3.0);
        assert!(ExactSum::default().mean().is_nan());
    }

    #[test]
    fn binomial_draws_have_the_right_mean_and_variance() {
        for (n, p) in [(10u64, 0.3), (40, 0.2), (1000, 0.5), (1_000_000, 0.013), (500_000, 0.97)] {
            let mut rng = Rng::new(n);
            let draws: Vec<f64> = (0..4000).map(|_| binomial(&mut rng, n, p) as f64).collect();
            assert!(draws.iter().all(|&d| d <= n as f64));
            let mean = draws.iter().sum::<f64>() / draws.len() as f64;
            let variance = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (draws.len() - 1) as f64;
            let (true_mean, true_variance) = (n as f64 * p, n as f64 * p * (1.0 - p));
            // Five standard errors of the mean; the variance within 15%.
            assert!((mean - true_mean).abs() < 5.0 * (true_variance / 4000.0).sqrt(), "n {n} p {p}: mean {mean}");
            assert!((variance / true_variance - 1.0).abs() < 0.15, "n {n} p {p}: variance {variance}");
        }
        // The probability of each value of a small binomial, against its formula.
        let mut rng = Rng::new(3);
        let mut counts = [0u32; 5];
        for _ in 0..200_000 {
            counts[binomial(&mut rng, 4, 0.5) as usize] += 1;
        }
        for (k, expected) in [1.0, 4.0, 6.0, 4.0, 1.0].iter().enumerate() {
            let frequency = f64::from(counts[k]) / 200_000.0;
            assert!((frequency - expected / 16.0).abs() < 0.005, "P({k}) = {frequency}");
        }
    }

    #[test]
    fn cluster_bootstrap_keeps_a_tasks_epochs_together() {
        // 40 tasks × 3 epochs where every epoch agrees: the task, not the loop, is the unit.
        let agreeing = [
            Cluster { denominator: 3, numerators: [3, 3], tasks: 20 },
            Cluster { denominator: 3, numerators: [0, 0], tasks: 20 },
        ];
        // The same 120 loops as independent tasks.
        let independent = [
            Cluster { denominator: 1, numerators: [1, 1], tasks: 60 },
            Cluster { denominator: 1, numerators: [0, 0], tasks: 60 },
        ];
        let [(lo, hi), second] = cluster_bootstrap(&agreeing, 2000, 9);
        assert_eq!(second, (lo, hi));
        let [(ilo, ihi), _] = cluster_bootstrap(&independent, 2000, 9);
        assert!(lo < 0.5 && hi > 0.5 && ilo < 0.5 && ihi > 0.5);
        // sqrt(3) wider: the width of a proportion over 40 clusters, not 120 loops.
        let ratio = (hi - lo) / (ihi - ilo);
        assert!(ratio > 1.5 && ratio < 2.0, "{ratio}");
        // The order of the vectors does not matter.
        let reversed: Vec<_> = agreeing.iter().rev().copied().collect();
        assert_eq!(cluster_bootstrap(&reversed, 2000, 9), cluster_bootstrap(&agreeing, 2000, 9));
        assert_eq!(cluster_bootstrap::<1>(&[], 2000, 1), [(0.0, 0.0)]);
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
