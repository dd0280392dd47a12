//! Descriptive statistics: an order-independent exact sum, the mean, numpy's percentile, a rate
//! and the sample standard deviation.

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
    /// Adds `value` (infinities and NaNs too: the total is then theirs).
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

/// Linear-interpolated percentile of sorted data (numpy's default method); `q` in [0, 1].
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let position = q * (sorted.len() - 1) as f64;
    let low = position.floor() as usize;
    let high = position.ceil() as usize;
    Some(sorted[low] + (sorted[high] - sorted[low]) * (position - low as f64))
}

/// `numerator / denominator`, or `None` when the denominator is zero (the rate is undefined).
pub fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    (denominator > 0).then(|| numerator as f64 / denominator as f64)
}

/// The mean of `values`; `None` when there are none.
pub fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values.fold((0.0, 0u64), |(s, c), v| (s + v, c + 1));
    (count > 0).then(|| sum / count as f64)
}

/// Sample standard deviation (n − 1 in the denominator); `None` for fewer than two values.
pub fn sample_sd(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    if values.iter().all(|v| *v == values[0]) {
        // Exactly 0: the mean of equal values can round away from them (3 × 6.2 / 3 ≠ 6.2), and a
        // deterministic critic must show no spread at all.
        return Some(0.0);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    Some((values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-12)
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
    fn percentiles_match_numpy() {
        // numpy.percentile([1, 2, 3, 4, 10], [50, 90, 99])
        let sorted = [1.0, 2.0, 3.0, 4.0, 10.0];
        assert!(close(percentile(&sorted, 0.5), 3.0));
        assert!(close(percentile(&sorted, 0.9), 7.6));
        assert!(close(percentile(&sorted, 0.99), 9.76));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn sample_sd_uses_n_minus_one() {
        assert!(close(sample_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]), 2.138_089_935_299_395));
        assert_eq!(sample_sd(&[3.0]), None);
        assert_eq!(sample_sd(&[6.2, 6.2, 6.2]), Some(0.0));
    }

    #[test]
    fn mean_is_none_without_values() {
        assert_eq!(mean([1.0, 2.0, 4.5].into_iter()), Some(2.5));
        assert_eq!(mean(std::iter::empty()), None);
    }
}
