//! The exact sign-flip (randomization) test of paired task differences, and the interval of shifts
//! it does not reject.
//!
//! Each task contributes its mean difference d = net / pairs (A's passes − B's over the epochs both
//! arms ran), in [−1, 1]. If the arms are interchangeable on every task, each d is as likely to be
//! −d as d, so every one of the 2ⁿ ways of flipping the tasks' signs is equally likely; the
//! two-sided p-value is the share of flips whose sum is at least as far from 0 as the observed one.
//! With one epoch per task it is McNemar's exact test, and whenever every task that differs goes
//! the same way it is the sign test's 2 · 0.5ᵏ on those k tasks.
//!
//! The test of a shift δ flips the residuals d − δ instead; a tied task (d = 0) is then −δ, no
//! longer 0. A flip's sum is X − δY with X = Σ ±d and Y = Σ ±1, so one table of (X, Y) serves every
//! δ: X lives on the lattice 1/L (L the least common multiple of the tasks' pair counts) and the
//! tied tasks add a binomial to Y, summed in closed form. Where that table would be too large
//! (tasks of many different pair counts) the flips are drawn, 20,000 of them from a stream seeded
//! by the data, and the p-value is (1 + as extreme) / (1 + draws).
//!
//! ```
//! use critbench_stats::sign_flip::SignFlip;
//!
//! // Nine tasks of three epochs, A ahead on each by one or two epochs: p = 2 · 0.5⁹.
//! let flips = SignFlip::new(&[(3, 1, 5), (3, 2, 4)]);
//! assert!((flips.p_value(0.0) - 2.0 / 512.0).abs() < 1e-15);
//! let (low, high) = flips.interval(0.05);
//! assert!(0.0 < low && low < 13.0 / 27.0 && 13.0 / 27.0 < high);
//! ```

use crate::distributions::ln_gamma;

/// The most (X, Y) cells the exact table may hold before the flips are drawn instead.
const EXACT_MAX_CELLS: usize = 1 << 22;

/// How many flips are drawn when the table would be too large.
const DRAWS: usize = 20_000;

/// Bisection steps for an interval's end: 2 / 2⁶⁰ is far below any printed digit.
const BISECTION_STEPS: usize = 60;

/// The distribution of the flips' sums for one set of tasks, ready to test any shift.
#[derive(Clone, Debug)]
pub struct SignFlip {
    /// Tasks in all, tied ones included.
    tasks: u64,
    /// Σ d over the tasks.
    sum: f64,
    /// The flips of the untied tasks, exact or drawn.
    flips: Flips,
    /// P(B ≤ b) and P(B ≥ b) for B ~ Binomial(tied tasks, ½): how many tied tasks keep their sign.
    tied_lower: Vec<f64>,
    tied_upper: Vec<f64>,
}

#[derive(Clone, Debug)]
enum Flips {
    /// P(X = x / lattice, Y = y) of the untied tasks, x in −x_max..=x_max (rows), y in −y_max..=y_max.
    Exact { lattice: u64, observed: i64, x_max: i64, y_max: i64, probability: Vec<f64> },
    /// Drawn flips of every task, tied ones included: (Σ ±d, Σ ±1) each.
    Drawn(Vec<(f64, i64)>),
}

impl SignFlip {
    /// The flips of `tasks`, each (pairs, net difference, how many tasks are like it); tasks
    /// without pairs are left out.
    pub fn new(tasks: &[(u64, i64, u64)]) -> SignFlip {
        let tasks: Vec<(u64, i64, u64)> = tasks.iter().copied().filter(|t| t.0 > 0 && t.2 > 0).collect();
        let count: u64 = tasks.iter().map(|t| t.2).sum();
        let sum: f64 = tasks.iter().map(|&(pairs, net, c)| c as f64 * net as f64 / pairs as f64).sum();
        let untied: Vec<(u64, i64, u64)> = tasks.iter().copied().filter(|t| t.1 != 0).collect();
        let tied = count - untied.iter().map(|t| t.2).sum::<u64>();
        let flips = exact_flips(&untied).unwrap_or_else(|| Flips::Drawn(drawn_flips(&tasks)));
        let (tied_lower, tied_upper) = binomial_half_tails(tied);
        SignFlip { tasks: count, sum, flips, tied_lower, tied_upper }
    }

    /// The mean of the tasks' differences: the shift whose test never rejects (0 without tasks).
    pub fn center(&self) -> f64 {
        if self.tasks == 0 { 0.0 } else { self.sum / self.tasks as f64 }
    }

    /// The two-sided p-value of the shift `delta`: the share of flips of d − δ whose sum is at
    /// least as far from 0 as the observed sum Σ (d − δ).
    pub fn p_value(&self, delta: f64) -> f64 {
        let observed = (self.sum - self.tasks as f64 * delta).abs();
        // Sums that equal the observed one count as extreme; rounding must not make them less.
        let threshold = observed - 1e-10 * (1.0 + self.tasks as f64);
        match &self.flips {
            Flips::Exact { lattice, observed: x_observed, x_max, y_max, probability } => {
                let width = (2 * y_max + 1) as usize;
                let mut p = 0.0;
                for (row, cells) in probability.chunks(width).enumerate() {
                    let x = row as i64 - x_max;
                    for (column, &mass) in cells.iter().enumerate() {
                        if mass == 0.0 {
                            continue;
                        }
                        let y = column as i64 - y_max;
                        let extreme = if delta == 0.0 {
                            // Whole numbers at no shift: the test itself, to the last bit.
                            if x.abs() >= x_observed.abs() { 1.0 } else { 0.0 }
                        } else {
                            self.tied_extreme(x as f64 / *lattice as f64 - delta * y as f64, threshold, delta)
                        };
                        p += mass * extreme;
                    }
                }
                p.min(1.0)
            }
            Flips::Drawn(draws) => {
                let extreme = draws.iter().filter(|&&(x, y)| (x - delta * y as f64).abs() >= threshold).count();
                (1 + extreme) as f64 / (1 + draws.len()) as f64
            }
        }
    }

    /// P(|a − δ·Y₀| ≥ threshold) over the tied tasks' flips Y₀ = 2B − tied.
    fn tied_extreme(&self, a: f64, threshold: f64, delta: f64) -> f64 {
        if threshold <= 0.0 {
            return 1.0;
        }
        let tied = (self.tied_lower.len() - 1) as f64;
        // |a − δY₀| ≥ s ⟺ δY₀ ≤ a − s or δY₀ ≥ a + s; B = (Y₀ + tied) / 2.
        let (below, above) = ((a - threshold) / delta, (a + threshold) / delta);
        let (at_most, at_least) = if delta > 0.0 { (below, above) } else { (above, below) };
        let low = ((at_most + tied) / 2.0).floor();
        let high = ((at_least + tied) / 2.0).ceil();
        let lower = if low < 0.0 { 0.0 } else { self.tied_lower[low.min(tied) as usize] };
        let upper = if high > tied { 0.0 } else { self.tied_upper[high.max(0.0) as usize] };
        (lower + upper).min(1.0)
    }

    /// The shifts the test does not reject at level `alpha`, as an interval: from the mean of the
    /// differences (never rejected) out to where the test first rejects, found by bisection, within
    /// [−1, 1]. When the test of 0 rejects the end toward 0 is searched between 0 and the mean, and
    /// when it does not the interval holds 0, so the interval excludes 0 exactly when
    /// `p_value(0.0) < alpha`.
    pub fn interval(&self, alpha: f64) -> (f64, f64) {
        let center = self.center();
        let rejects_zero = self.p_value(0.0) < alpha;
        let end = |outside: f64| {
            if self.p_value(outside) >= alpha {
                return outside;
            }
            let (mut rejected, mut accepted) = (outside, center);
            for _ in 0..BISECTION_STEPS {
                let middle = 0.5 * (rejected + accepted);
                if self.p_value(middle) >= alpha {
                    accepted = middle;
                } else {
                    rejected = middle;
                }
            }
            accepted
        };
        let low = if rejects_zero && center > 0.0 { end(0.0) } else { end(-1.0) };
        let high = if rejects_zero && center < 0.0 { end(0.0) } else { end(1.0) };
        if rejects_zero { (low, high) } else { (low.min(0.0), high.max(0.0)) }
    }
}

/// The exact table of the untied tasks' flips, or `None` when it would be too large.
fn exact_flips(untied: &[(u64, i64, u64)]) -> Option<Flips> {
    let mut lattice: u64 = 1;
    for &(pairs, _, _) in untied {
        lattice = lattice.checked_mul(pairs / gcd(lattice, pairs))?;
    }
    let weight =
        |&(pairs, net, _): &(u64, i64, u64)| -> Option<i64> { net.checked_mul(i64::try_from(lattice / pairs).ok()?) };
    let mut x_max: i64 = 0;
    let mut observed: i64 = 0;
    let mut y_max: i64 = 0;
    for task in untied {
        let count = i64::try_from(task.2).ok()?;
        let w = weight(task)?;
        x_max = x_max.checked_add(w.checked_abs()?.checked_mul(count)?)?;
        observed = observed.checked_add(w.checked_mul(count)?)?;
        y_max += count;
    }
    let (rows, width) = (usize::try_from(2 * x_max + 1).ok()?, usize::try_from(2 * y_max + 1).ok()?);
    if rows.checked_mul(width)? > EXACT_MAX_CELLS {
        return None;
    }
    let mut probability = vec![0.0; rows * width];
    probability[x_max as usize * width + y_max as usize] = 1.0;
    for task in untied {
        let w = weight(task)?;
        let count = task.2;
        // The `count` tasks alike flip as a binomial: b of them keep their sign.
        let (lower, _) = binomial_half_tails(count);
        let pmf: Vec<f64> = (0..=count as usize).map(|b| lower[b] - if b == 0 { 0.0 } else { lower[b - 1] }).collect();
        let mut next = vec![0.0; rows * width];
        for (cell, &mass) in probability.iter().enumerate() {
            if mass == 0.0 {
                continue;
            }
            let (row, column) = ((cell / width) as i64, (cell % width) as i64);
            for (b, &chance) in pmf.iter().enumerate() {
                let signs = 2 * b as i64 - count as i64;
                let target = (row + w * signs) as usize * width + (column + signs) as usize;
                next[target] += mass * chance;
            }
        }
        probability = next;
    }
    Some(Flips::Exact { lattice, observed, x_max, y_max, probability })
}

/// `DRAWS` flips of every task, from a stream seeded by the tasks themselves.
fn drawn_flips(tasks: &[(u64, i64, u64)]) -> Vec<(f64, i64)> {
    // FNV-1a over the tasks: equal data draw equal flips.
    let mut state: u64 = 0xcbf2_9ce4_8422_2325;
    for &(pairs, net, count) in tasks {
        for value in [pairs, net as u64, count] {
            for byte in value.to_le_bytes() {
                state ^= u64::from(byte);
                state = state.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
    }
    let mut next = move || {
        // SplitMix64.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    (0..DRAWS)
        .map(|_| {
            let (mut x, mut y) = (0.0, 0i64);
            for &(pairs, net, count) in tasks {
                let d = net as f64 / pairs as f64;
                for _ in 0..count {
                    let sign = if next() >> 63 == 0 { 1 } else { -1 };
                    x += sign as f64 * d;
                    y += sign;
                }
            }
            (x, y)
        })
        .collect()
}

/// P(B ≤ b) and P(B ≥ b) for B ~ Binomial(n, ½), b = 0..=n, each tail summed from its own end so
/// that neither loses its small values to rounding.
fn binomial_half_tails(n: u64) -> (Vec<f64>, Vec<f64>) {
    let nf = n as f64;
    let pmf: Vec<f64> = (0..=n)
        .map(|b| {
            let b = b as f64;
            (ln_gamma(nf + 1.0) - ln_gamma(b + 1.0) - ln_gamma(nf - b + 1.0) - nf * std::f64::consts::LN_2).exp()
        })
        .collect();
    let mut lower = Vec::with_capacity(pmf.len());
    let mut total = 0.0;
    for &p in &pmf {
        total += p;
        lower.push(total.min(1.0));
    }
    let mut upper = vec![0.0; pmf.len()];
    let mut total = 0.0;
    for (b, &p) in pmf.iter().enumerate().rev() {
        total += p;
        upper[b] = total.min(1.0);
    }
    (lower, upper)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binomial::mcnemar_exact;

    /// The p-value by listing every one of the 2ⁿ flips of the tasks' residuals.
    fn brute_force(values: &[f64], delta: f64) -> f64 {
        let n = values.len();
        let observed: f64 = values.iter().map(|v| v - delta).sum::<f64>().abs();
        let extreme = (0..1u64 << n)
            .filter(|mask| {
                let sum: f64 = values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| if mask >> i & 1 == 1 { v - delta } else { delta - v })
                    .sum();
                sum.abs() >= observed - 1e-9
            })
            .count();
        extreme as f64 / (1u64 << n) as f64
    }

    #[test]
    fn the_table_agrees_with_listing_every_flip() {
        let tasks = [(3u64, 1i64, 2u64), (3, -2, 1), (3, 3, 1), (3, 0, 3), (2, 1, 1), (1, -1, 1)];
        let values: Vec<f64> =
            tasks.iter().flat_map(|&(p, n, c)| std::iter::repeat_n(n as f64 / p as f64, c as usize)).collect();
        let flips = SignFlip::new(&tasks);
        for delta in [-0.9, -0.4, -0.1, 0.0, 0.05, 0.13, 0.3, 0.61, 1.0] {
            let (table, listed) = (flips.p_value(delta), brute_force(&values, delta));
            assert!((table - listed).abs() < 1e-12, "δ = {delta}: {table} against {listed}");
        }
    }

    #[test]
    fn one_epoch_is_mcnemars_exact_test() {
        for (a, b, tied) in [(7u64, 1u64, 92u64), (9, 0, 0), (3, 3, 4), (12, 2, 0), (0, 6, 10)] {
            let flips = SignFlip::new(&[(1, 1, a), (1, -1, b), (1, 0, tied)]);
            assert!((flips.p_value(0.0) - mcnemar_exact(a, b)).abs() < 1e-12, "{a} vs {b}");
        }
    }

    #[test]
    fn drawn_flips_agree_with_the_table() {
        let tasks = [(3u64, 1i64, 4u64), (3, 2, 3), (3, -1, 2), (3, 0, 3)];
        let exact = SignFlip::new(&tasks);
        let count: u64 = tasks.iter().map(|t| t.2).sum();
        let sum: f64 = tasks.iter().map(|&(p, n, c)| c as f64 * n as f64 / p as f64).sum();
        let drawn = SignFlip { flips: Flips::Drawn(drawn_flips(&tasks)), tasks: count, sum, ..exact.clone() };
        for delta in [-0.2, 0.0, 0.1, 0.25, 0.5] {
            // 20,000 draws: a p-value's standard error is at most 0.0035.
            assert!((exact.p_value(delta) - drawn.p_value(delta)).abs() < 0.015, "δ = {delta}");
        }
    }

    #[test]
    fn the_interval_excludes_exactly_the_shifts_that_are_rejected() {
        let flips = SignFlip::new(&[(3, 1, 4), (3, 2, 3), (3, -1, 1), (3, 0, 4)]);
        let (low, high) = flips.interval(0.05);
        assert!(flips.p_value(low) >= 0.05 && flips.p_value(high) >= 0.05);
        assert!(flips.p_value(low - 1e-6) < 0.05 && flips.p_value(high + 1e-6) < 0.05, "({low}, {high})");
        assert!(low > 0.0 && flips.p_value(0.0) < 0.05);
    }
}
