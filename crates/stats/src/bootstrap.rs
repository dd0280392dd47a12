//! Bootstrap intervals: the task-cluster bootstrap of ratio statistics, computed exactly when
//! every task has the same size and otherwise resampled from a stream seeded by the data
//! ([`data_seed`]), with the test of 0 that is the interval's dual ([`cluster_bootstrap_tested`]).

use critbench_core::Rng;

use crate::descriptive::percentile;

/// One distinct per-task vector of a clustered statistic: how many tasks share it (`tasks`), the
/// task's denominator (its loops, or its matched pairs) and its numerators, one per statistic
/// (passes, or pass differences).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cluster<const K: usize> {
    /// The task's loops, or its matched pairs.
    pub denominator: u64,
    /// One numerator per statistic: passes, or pass differences.
    pub numerators: [i64; K],
    /// How many tasks have this vector.
    pub tasks: u64,
}

/// Task-cluster percentile bootstrap (95%) of K ratio statistics Σ numerator / Σ denominator.
///
/// A resample draws as many tasks as there are, with replacement, and keeps every loop of a
/// drawn task together, so a task's epochs are never treated as independent (Miller 2024,
/// "Adding Error Bars to Evals"). The interval depends only on the multiset of per-task vectors
/// and `seed`, never on the order they arrived in or on what they are the vectors of: equal data
/// give equal intervals.
///
/// When every task has the same denominator (every task ran all its epochs, the usual case) and
/// the run is not huge, the interval is that of the *exact* bootstrap distribution, with no
/// Monte Carlo error at all: a resample's statistic is then a sum of independent draws of one
/// task's numerator, whose distribution is the tasks' empirical distribution convolved with
/// itself once per task ([`exact_intervals`]). Otherwise the tasks are resampled, at least
/// `resamples` times and as often as an endpoint's Monte Carlo error needs
/// ([`monte_carlo_resamples`]): tasks with the same vector are interchangeable, so a resample is
/// one multinomial draw of how many times each distinct vector is taken (sequential binomial
/// draws), O(distinct vectors) per resample whatever the number of tasks, from a stream seeded
/// by `seed` and the data ([`data_seed`]). Every statistic is evaluated on the same resamples.
pub fn cluster_bootstrap<const K: usize>(clusters: &[Cluster<K>], resamples: usize, seed: u64) -> [(f64, f64); K] {
    let mut sorted: Vec<Cluster<K>> = clusters.iter().copied().filter(|c| c.tasks > 0).collect();
    sorted.sort_unstable();
    let total: u64 = sorted.iter().map(|c| c.tasks).sum();
    if total == 0 || resamples == 0 {
        return [(0.0, 0.0); K];
    }
    exact_intervals(&sorted, total)
        .unwrap_or_else(|| monte_carlo_intervals(&sorted, total, monte_carlo_resamples(&sorted, resamples), seed))
}

/// A bootstrap interval with the test that is its own dual: `p_value` is below α exactly when the
/// interval at level 1 − α excludes 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tested {
    /// The 95% percentile interval, as [`cluster_bootstrap`] gives it.
    pub interval: (f64, f64),
    /// The two-sided p-value of "the statistic is 0": twice the bootstrap distribution's smaller
    /// tail at 0 (each tail counting the mass at 0), at most 1.
    pub p_value: f64,
}

/// [`cluster_bootstrap`] with each statistic's test of 0 read from the same bootstrap distribution:
/// the intervals are exactly [`cluster_bootstrap`]'s, and a 95% interval excludes 0 exactly when its
/// p-value is below 0.05. Computed exactly wherever [`cluster_bootstrap`] is, otherwise from the same
/// resamples, where the p-value is read off the percentile function the interval's ends come
/// from (linear between order statistics), never below 1 / (resamples + 1).
pub fn cluster_bootstrap_tested<const K: usize>(clusters: &[Cluster<K>], resamples: usize, seed: u64) -> [Tested; K] {
    let mut sorted: Vec<Cluster<K>> = clusters.iter().copied().filter(|c| c.tasks > 0).collect();
    sorted.sort_unstable();
    let total: u64 = sorted.iter().map(|c| c.tasks).sum();
    if total == 0 || resamples == 0 {
        return [Tested { interval: (0.0, 0.0), p_value: 1.0 }; K];
    }
    exact_tested(&sorted, total).unwrap_or_else(|| {
        let resamples = monte_carlo_resamples(&sorted, resamples);
        let mut tested = [Tested { interval: (0.0, 0.0), p_value: 1.0 }; K];
        for (slot, statistic) in tested.iter_mut().zip(monte_carlo_distributions(&sorted, total, resamples, seed)) {
            *slot = Tested { interval: percentile_interval(&statistic), p_value: percentile_p_value(&statistic) };
        }
        tested
    })
}

/// The Monte Carlo standard deviation an endpoint may have: well below the reports' 0.1 pp.
pub const TARGET_MONTE_CARLO_SD: f64 = 0.0004;

/// Resamples for a Monte Carlo interval of the sorted vectors: at least `floor`, and enough that
/// an endpoint's Monte Carlo standard deviation, about 2.67 σ / √B for a statistic of standard
/// error σ (the spread of a normal's 2.5% quantile estimated from B draws), is at most
/// [`TARGET_MONTE_CARLO_SD`]; σ is the delta-method standard error of the largest of the K
/// ratios. At most 200,000.
pub fn monte_carlo_resamples<const K: usize>(sorted: &[Cluster<K>], floor: usize) -> usize {
    let denominator: f64 = sorted.iter().map(|c| c.denominator as f64 * c.tasks as f64).sum();
    if denominator == 0.0 {
        return floor;
    }
    let sigma = (0..K)
        .map(|k| {
            let ratio = sorted.iter().map(|c| c.numerators[k] as f64 * c.tasks as f64).sum::<f64>() / denominator;
            let spread: f64 = sorted
                .iter()
                .map(|c| c.tasks as f64 * (c.numerators[k] as f64 - ratio * c.denominator as f64).powi(2))
                .sum();
            spread.sqrt() / denominator
        })
        .fold(0.0, f64::max);
    let wanted = (2.67 * sigma / TARGET_MONTE_CARLO_SD).powi(2).ceil();
    (wanted as usize).clamp(floor, 200_000.max(floor))
}

/// [`cluster_bootstrap`] by `resamples` Monte Carlo resamples of the sorted distinct vectors
/// (`total` tasks in all), from a stream seeded by `seed` and the data.
fn monte_carlo_intervals<const K: usize>(
    sorted: &[Cluster<K>],
    total: u64,
    resamples: usize,
    seed: u64,
) -> [(f64, f64); K] {
    let mut intervals = [(0.0, 0.0); K];
    for (interval, statistic) in intervals.iter_mut().zip(monte_carlo_distributions(sorted, total, resamples, seed)) {
        *interval = percentile_interval(&statistic);
    }
    intervals
}

/// Each statistic's `resamples` Monte Carlo bootstrap values, sorted.
fn monte_carlo_distributions<const K: usize>(
    sorted: &[Cluster<K>],
    total: u64,
    resamples: usize,
    seed: u64,
) -> Vec<Vec<f64>> {
    let mut rng = Rng::new(data_seed(seed, sorted));
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
    for statistic in &mut values {
        statistic.sort_by(f64::total_cmp);
    }
    values
}

/// The seed of a bootstrap's random stream: the run's `seed` and the data resampled (the sorted
/// distinct vectors and how many tasks share each), never a label of what is compared, so two
/// configs, arms or runs with equal outcomes draw the same resamples.
pub fn data_seed<const K: usize>(seed: u64, sorted: &[Cluster<K>]) -> u64 {
    // FNV-1a over the vectors, then mixed with the seed as every other seed is.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |value: u64| {
        for byte in value.to_le_bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    feed(K as u64);
    for cluster in sorted {
        feed(cluster.denominator);
        cluster.numerators.iter().for_each(|n| feed(*n as u64));
        feed(cluster.tasks);
    }
    critbench_core::derive_seed(&critbench_core::SeedKey {
        seed,
        task_id: "",
        epoch: 0,
        round: 0,
        purpose: &format!("cluster-bootstrap-{hash:016x}"),
    })
}

/// The longest distribution [`exact_intervals`] computes (a sum of up to this many values, 16
/// bytes each): 170,000 tasks of three epochs; larger runs are resampled, where a few thousand
/// resamples are plenty for intervals that narrow.
const EXACT_MAX_SUPPORT: usize = 1 << 20;

/// The exact percentile interval (95%) of each statistic when every task of `sorted` (sorted
/// distinct vectors, `tasks` in all) has the same denominator: `None` when they differ, or when
/// the distribution would be longer than `EXACT_MAX_SUPPORT`.
///
/// A resample of N tasks takes each task's numerator independently from the empirical
/// distribution of the N tasks, so the resampled sum is distributed as that distribution
/// convolved with itself N times: the N-th power of its Fourier transform, transformed back
/// (floating-point error about 1e-15 in each probability, far below any quantile's concern).
/// The interval is the smallest sum whose cumulative probability reaches 2.5% and the smallest
/// that reaches 97.5%, over N × the denominator: the limit of the Monte Carlo percentile
/// interval as the resamples grow (the statistic takes values on a lattice, so the endpoints are
/// lattice points).
pub fn exact_intervals<const K: usize>(sorted: &[Cluster<K>], tasks: u64) -> Option<[(f64, f64); K]> {
    exact_tested(sorted, tasks).map(|tested| tested.map(|t| t.interval))
}

/// [`exact_intervals`] with each statistic's p-value of 0 from the same distribution
/// ([`cluster_bootstrap_tested`]).
fn exact_tested<const K: usize>(sorted: &[Cluster<K>], tasks: u64) -> Option<[Tested; K]> {
    let denominator = sorted.first()?.denominator;
    if denominator == 0 || tasks == 0 || sorted.iter().any(|c| c.denominator != denominator) {
        return None;
    }
    let mut tested = [Tested { interval: (0.0, 0.0), p_value: 1.0 }; K];
    for (statistic, slot) in tested.iter_mut().enumerate() {
        let low = sorted.iter().map(|c| c.numerators[statistic]).min().expect("at least one cluster");
        let high = sorted.iter().map(|c| c.numerators[statistic]).max().expect("at least one cluster");
        let span = usize::try_from(high - low).ok()?;
        let support = usize::try_from(tasks).ok()?.checked_mul(span)?.checked_add(1)?;
        if support > EXACT_MAX_SUPPORT {
            return None;
        }
        let length = support.next_power_of_two();
        // One task's numerator, less `low`: its empirical distribution.
        let mut spectrum = vec![(0.0, 0.0); length];
        for cluster in sorted {
            spectrum[(cluster.numerators[statistic] - low) as usize].0 += cluster.tasks as f64 / tasks as f64;
        }
        fft(&mut spectrum, false);
        for z in &mut spectrum {
            *z = complex_power(*z, tasks);
        }
        fft(&mut spectrum, true);
        let pmf: Vec<f64> = spectrum[..support].iter().map(|z| (z.0 / length as f64).max(0.0)).collect();
        let total: f64 = pmf.iter().sum();
        let quantile = |q: f64| {
            let mut cumulative = 0.0;
            let index = pmf
                .iter()
                .position(|p| {
                    cumulative += p;
                    cumulative >= q * total
                })
                .unwrap_or(support - 1);
            (tasks as i64 * low + index as i64) as f64 / (tasks * denominator) as f64
        };
        let interval = (quantile(0.025), quantile(0.975));
        // The sum of numerators is tasks·low + index: at most 0 up to index −tasks·low.
        let zero = -(tasks as i64) * low;
        let (mut at_most, mut at_least) = (0.0, 0.0);
        for (index, p) in pmf.iter().enumerate() {
            if (index as i64) <= zero {
                at_most += p;
            }
            if (index as i64) >= zero {
                at_least += p;
            }
        }
        let p_value = (2.0 * at_most.min(at_least) / total).min(1.0);
        *slot = Tested { interval, p_value: consistent(interval, p_value, 0.0) };
    }
    Some(tested)
}

/// `p_value` made to agree with `interval` where rounding at the 5% boundary would have them
/// disagree (the two are computed from the same distribution, so only the last bits can differ):
/// below 0.05 when the interval excludes 0, at least 0.05 when it holds 0; never below `floor`.
fn consistent(interval: (f64, f64), p_value: f64, floor: f64) -> f64 {
    const ALPHA: f64 = 0.05;
    let p_value = p_value.max(floor);
    if interval.0 > 0.0 || interval.1 < 0.0 { p_value.min(ALPHA.next_down()) } else { p_value.max(ALPHA) }
}

/// `z` to the power `n`, by repeated squaring.
fn complex_power(z: (f64, f64), mut n: u64) -> (f64, f64) {
    let multiply = |a: (f64, f64), b: (f64, f64)| (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0);
    let (mut result, mut base) = ((1.0, 0.0), z);
    while n > 0 {
        if n & 1 == 1 {
            result = multiply(result, base);
        }
        base = multiply(base, base);
        n >>= 1;
    }
    result
}

/// The discrete Fourier transform of `values` (length a power of two) in place, or its inverse
/// without the 1/length factor: iterative radix-2 Cooley–Tukey, each twiddle factor computed
/// directly so the error stays at a few ulps whatever the length.
fn fft(values: &mut [(f64, f64)], inverse: bool) {
    let n = values.len();
    debug_assert!(n.is_power_of_two());
    let mut j = 0;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            values.swap(i, j);
        }
    }
    let sign = if inverse { 1.0 } else { -1.0 };
    let twiddles: Vec<(f64, f64)> = (0..n / 2)
        .map(|k| {
            let angle = sign * 2.0 * std::f64::consts::PI * k as f64 / n as f64;
            (angle.cos(), angle.sin())
        })
        .collect();
    let mut length = 2;
    while length <= n {
        let stride = n / length;
        for start in (0..n).step_by(length) {
            for k in 0..length / 2 {
                let w = twiddles[k * stride];
                let (a, b) = (values[start + k], values[start + k + length / 2]);
                let t = (b.0 * w.0 - b.1 * w.1, b.0 * w.1 + b.1 * w.0);
                values[start + k] = (a.0 + t.0, a.1 + t.1);
                values[start + k + length / 2] = (a.0 - t.0, a.1 - t.1);
            }
        }
        length <<= 1;
    }
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

/// The 95% percentile interval of sorted resampled statistics (at least one).
fn percentile_interval(sorted: &[f64]) -> (f64, f64) {
    let at = |q| percentile(sorted, q).expect("at least one resample");
    (at(0.025), at(0.975))
}

/// The two-sided p-value of 0 dual to [`percentile_interval`] on the same sorted values: with P(u)
/// the percentile function (linear between order statistics), twice the smaller of the share u
/// below which P is at most 0 and the share above which it is at least 0, so the interval at level
/// 1 − α excludes 0 exactly when this is below α. Never below 1 / (resamples + 1): a finite number
/// of resamples cannot show less.
fn percentile_p_value(sorted: &[f64]) -> f64 {
    let last = (sorted.len() - 1) as f64;
    // Position (in order statistics) of the last point where P(u) ≤ 0, and of the first where P(u) ≥ 0.
    let up_to = match sorted.iter().rposition(|v| *v <= 0.0) {
        None => 0.0,
        Some(i) if i + 1 < sorted.len() && sorted[i] < 0.0 => i as f64 + -sorted[i] / (sorted[i + 1] - sorted[i]),
        Some(i) => i as f64,
    };
    let from = match sorted.iter().position(|v| *v >= 0.0) {
        None => last,
        Some(0) => 0.0,
        Some(i) if sorted[i] > 0.0 => (i - 1) as f64 + -sorted[i - 1] / (sorted[i] - sorted[i - 1]),
        Some(i) => i as f64,
    };
    let (below, above) = if last == 0.0 {
        (if sorted[0] <= 0.0 { 1.0 } else { 0.0 }, if sorted[0] >= 0.0 { 1.0 } else { 0.0 })
    } else {
        (up_to / last, 1.0 - from / last)
    };
    let p_value = (2.0 * below.min(above)).min(1.0);
    consistent(percentile_interval(sorted), p_value, 1.0 / (sorted.len() + 1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fewest resamples the reports ask of a Monte Carlo interval (`BOOTSTRAP_RESAMPLES` of
    /// `critbench-report`).
    const REPORT_RESAMPLES: usize = 2000;

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

    /// The demo's sizes: 240 tasks × 3 epochs, the rubric's feedback arm at p8-r3 (passes,
    /// first-draft passes) and its difference from no-feedback.
    fn demo_clusters() -> [Vec<Cluster<2>>; 2] {
        let arm =
            [(0, 0, 5), (1, 0, 30), (2, 0, 46), (2, 1, 12), (2, 2, 1), (3, 0, 88), (3, 1, 38), (3, 2, 16), (3, 3, 4)]
                .map(|(passes, first, tasks)| Cluster { denominator: 3, numerators: [passes, first], tasks });
        let diff = [(-1, 0, 1), (0, 0, 30), (1, 0, 70), (2, 0, 98), (3, 0, 41)].map(|(diff, first, tasks)| Cluster {
            denominator: 3,
            numerators: [diff, first],
            tasks,
        });
        [arm.to_vec(), diff.to_vec()]
    }

    #[test]
    fn the_exact_bootstrap_of_independent_loops_is_the_binomial_quantiles() {
        // 20 tasks of one loop, half passed: a resample's passes are Binomial(20, ½), whose
        // 2.5% and 97.5% quantiles are 6 and 14 (scipy.stats.binom.ppf(q, 20, 0.5)).
        let half = [
            Cluster { denominator: 1, numerators: [0], tasks: 10 },
            Cluster { denominator: 1, numerators: [1], tasks: 10 },
        ];
        assert_eq!(exact_intervals(&half, 20), Some([(0.3, 0.7)]));
        // 3 of 50 (binom.ppf(0.025, 50, 0.06) = 0, binom.ppf(0.975, 50, 0.06) = 7).
        let rare = [
            Cluster { denominator: 1, numerators: [0], tasks: 47 },
            Cluster { denominator: 1, numerators: [1], tasks: 3 },
        ];
        assert_eq!(exact_intervals(&rare, 50), Some([(0.0, 0.14)]));
        // Tasks of unequal size have no exact interval here: Monte Carlo it is.
        let unequal = [
            Cluster { denominator: 1, numerators: [1], tasks: 5 },
            Cluster { denominator: 2, numerators: [1], tasks: 5 },
        ];
        assert_eq!(exact_intervals(&unequal, 10), None);
    }

    #[test]
    fn the_exact_interval_is_where_monte_carlo_resampling_converges() {
        for clusters in demo_clusters() {
            let exact = exact_intervals(&clusters, 240).expect("every task has three loops");
            let sampled = monte_carlo_intervals(&clusters, 240, 40_000, 3);
            for (e, m) in exact.iter().zip(sampled) {
                // Within one lattice step (1/720) at each end.
                assert!(
                    (e.0 - m.0).abs() <= 1.0 / 720.0 + 1e-12 && (e.1 - m.1).abs() <= 1.0 / 720.0 + 1e-12,
                    "{e:?} {m:?}"
                );
            }
            assert_eq!(cluster_bootstrap(&clusters, REPORT_RESAMPLES, 1), exact);
            assert_eq!(cluster_bootstrap(&clusters, REPORT_RESAMPLES, 99), exact, "no seed in an exact interval");
        }
    }

    #[test]
    fn the_tested_bootstrap_has_the_same_intervals_and_a_p_value_that_agrees_with_them() {
        for clusters in demo_clusters() {
            let tested = cluster_bootstrap_tested(&clusters, REPORT_RESAMPLES, 1);
            let intervals = cluster_bootstrap(&clusters, REPORT_RESAMPLES, 1);
            assert_eq!(tested.map(|t| t.interval), intervals);
        }
        // 7 tasks a point ahead and 3 a point behind, one pair each: a resample's sum is 2X − 10
        // with X ~ Binomial(10, 0.7), so P(sum ≤ 0) = P(X ≤ 5) and P(sum ≥ 0) = P(X ≥ 5).
        let split = [
            Cluster { denominator: 1, numerators: [1], tasks: 7 },
            Cluster { denominator: 1, numerators: [-1], tasks: 3 },
        ];
        let binomial = |k: u64| {
            let choose = (0..k).fold(1.0, |c, i| c * (10 - i) as f64 / (i + 1) as f64);
            choose * 0.7f64.powi(k as i32) * 0.3f64.powi(10 - k as i32)
        };
        let at_most: f64 = (0..=5).map(binomial).sum();
        let at_least: f64 = (5..=10).map(binomial).sum();
        let [tested] = cluster_bootstrap_tested(&split, REPORT_RESAMPLES, 1);
        assert!((tested.p_value - 2.0 * at_most.min(at_least)).abs() < 1e-12, "{tested:?}");
        // Agreement with the interval, exact and resampled, over differences large and small.
        for ahead in 0..12u64 {
            let mut unequal = vec![
                Cluster { denominator: 3, numerators: [1], tasks: ahead },
                Cluster { denominator: 3, numerators: [-1], tasks: 4 },
                Cluster { denominator: 3, numerators: [0], tasks: 30 },
                Cluster { denominator: 2, numerators: [2], tasks: ahead / 2 },
            ];
            for exact in [false, true] {
                if exact {
                    unequal.pop();
                }
                let [tested] = cluster_bootstrap_tested(&unequal, REPORT_RESAMPLES, 5);
                let (low, high) = tested.interval;
                assert_eq!(low > 0.0 || high < 0.0, tested.p_value < 0.05, "{ahead} ahead, exact {exact}: {tested:?}");
                assert_eq!(tested.interval, cluster_bootstrap(&unequal, REPORT_RESAMPLES, 5)[0]);
            }
        }
    }

    #[test]
    fn the_resampled_p_value_is_where_the_exact_one_is() {
        let clusters = [
            Cluster { denominator: 3, numerators: [1], tasks: 9 },
            Cluster { denominator: 3, numerators: [-1], tasks: 4 },
            Cluster { denominator: 3, numerators: [0], tasks: 27 },
        ];
        let [exact] = cluster_bootstrap_tested(&clusters, REPORT_RESAMPLES, 1);
        let sampled = percentile_p_value(&monte_carlo_distributions(&clusters, 40, 100_000, 2)[0]);
        // 0.1989 exactly, 0.1988 from 100,000 resamples: within the Monte Carlo error (about 0.002).
        assert!(exact.p_value > 0.05 && (exact.p_value - sampled).abs() < 0.01, "{exact:?} vs {sampled}");
        // Every resample above 0: the smallest p-value the resamples can show.
        let ahead = [
            Cluster { denominator: 2, numerators: [2], tasks: 30 },
            Cluster { denominator: 3, numerators: [3], tasks: 30 },
        ];
        let [tested] = cluster_bootstrap_tested(&ahead, REPORT_RESAMPLES, 1);
        assert!(tested.interval.0 > 0.0 && tested.p_value < 0.001, "{tested:?}");
    }

    #[test]
    fn monte_carlo_streams_follow_the_data_not_the_caller() {
        // Unequal task sizes: resampled. The same data give the same interval; other data or
        // another run seed another stream.
        let clusters = [
            Cluster { denominator: 3, numerators: [2], tasks: 40 },
            Cluster { denominator: 2, numerators: [1], tasks: 25 },
            Cluster { denominator: 3, numerators: [0], tasks: 30 },
        ];
        let shuffled = [clusters[2], clusters[0], clusters[1]];
        assert_eq!(cluster_bootstrap(&clusters, 2000, 7), cluster_bootstrap(&shuffled, 2000, 7));
        assert_ne!(data_seed(7, &clusters), data_seed(8, &clusters));
        let mut other = clusters;
        other[0].tasks = 41;
        other.sort_unstable();
        let mut sorted = clusters;
        sorted.sort_unstable();
        assert_ne!(data_seed(7, &sorted), data_seed(7, &other));
    }

    #[test]
    fn the_monte_carlo_error_of_an_endpoint_is_below_the_printed_precision() {
        // Twenty streams of as many resamples as a Monte Carlo interval of the demo's sizes gets:
        // the standard deviation of each endpoint across streams, against the reports' 0.1 pp.
        for clusters in demo_clusters() {
            let resamples = monte_carlo_resamples(&clusters, REPORT_RESAMPLES);
            assert!((10_000..40_000).contains(&resamples), "{resamples}");
            let ends: Vec<(f64, f64)> =
                (0..20).map(|seed| monte_carlo_intervals(&clusters, 240, resamples, seed)[0]).collect();
            let sd = |values: Vec<f64>| {
                let mean = values.iter().sum::<f64>() / values.len() as f64;
                (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (values.len() - 1) as f64).sqrt()
            };
            let (lo, hi) = (sd(ends.iter().map(|e| e.0).collect()), sd(ends.iter().map(|e| e.1).collect()));
            assert!(
                lo < 0.001 && hi < 0.001,
                "Monte Carlo SD of the endpoints: {:.3} and {:.3} pp",
                100.0 * lo,
                100.0 * hi
            );
        }
    }
}
