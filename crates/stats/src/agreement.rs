//! Agreement of two raters: Cohen's kappa of binary verdicts, and the Pearson, Spearman and
//! Kendall tau-b correlations of scores. The reference values in the tests come from scikit-learn
//! and scipy, and `tests/python/check_judge.py` checks every metric of a real critic benchmark
//! against them again.

/// Cohen's kappa of two binary raters from their 2×2 table (`both`, `only_a`, `only_b`,
/// `neither` are counts of "yes" by both, by a only, by b only, by neither). `None` when chance
/// agreement is perfect (both raters constant and equal), where kappa is 0/0.
pub fn cohen_kappa(both: u64, only_a: u64, only_b: u64, neither: u64) -> Option<f64> {
    let n = (both + only_a + only_b + neither) as f64;
    if n == 0.0 {
        return None;
    }
    let observed = (both + neither) as f64 / n;
    let a_yes = (both + only_a) as f64 / n;
    let b_yes = (both + only_b) as f64 / n;
    let expected = a_yes * b_yes + (1.0 - a_yes) * (1.0 - b_yes);
    (expected < 1.0).then(|| (observed - expected) / (1.0 - expected))
}

/// Ranks with ties given their average rank (1-based), as `scipy.stats.rankdata`.
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|a, b| values[*a].total_cmp(&values[*b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end (0-based) share the mean of ranks start+1 ..= end.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &index in &order[start..end] {
            ranks[index] = rank;
        }
        start = end;
    }
    ranks
}

/// Pearson correlation; `None` with fewer than two points or when either side is constant.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len();
    if n < 2 || y.len() != n {
        return None;
    }
    let mean_x = x.iter().sum::<f64>() / n as f64;
    let mean_y = y.iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (dx, dy) = (a - mean_x, b - mean_y);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    (sxx > 0.0 && syy > 0.0).then(|| (sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0))
}

/// Spearman's rank correlation (Pearson on average ranks), as `scipy.stats.spearmanr`.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    pearson(&average_ranks(x), &average_ranks(y))
}

/// Kendall's tau-b, as `scipy.stats.kendalltau`, in O(n log n) (Knight's algorithm): sort by
/// (x, y), count the discordant pairs as the inversions of y in that order, and correct for ties.
/// `None` with fewer than two points or when either side is constant.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len();
    if n < 2 || y.len() != n {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| x[*a].total_cmp(&x[*b]).then(y[*a].total_cmp(&y[*b])));
    let pairs = |t: u64| t * t.saturating_sub(1) / 2;
    let (mut ties_x, mut ties_xy) = (0u64, 0u64);
    let (mut run_x, mut run_xy) = (1u64, 1u64);
    for window in order.windows(2) {
        let (a, b) = (window[0], window[1]);
        if x[a] == x[b] {
            run_x += 1;
            if y[a] == y[b] {
                run_xy += 1;
            } else {
                ties_xy += pairs(run_xy);
                run_xy = 1;
            }
        } else {
            ties_x += pairs(run_x);
            ties_xy += pairs(run_xy);
            run_x = 1;
            run_xy = 1;
        }
    }
    ties_x += pairs(run_x);
    ties_xy += pairs(run_xy);
    let mut ys: Vec<f64> = order.iter().map(|&i| y[i]).collect();
    let discordant = count_inversions(&mut ys);
    // `ys` is now sorted: count the ties in y alone.
    let mut ties_y = 0u64;
    let mut run_y = 1u64;
    for window in ys.windows(2) {
        if window[0] == window[1] {
            run_y += 1;
        } else {
            ties_y += pairs(run_y);
            run_y = 1;
        }
    }
    ties_y += pairs(run_y);
    let total = pairs(n as u64);
    if ties_x == total || ties_y == total {
        return None;
    }
    // concordant − discordant = total − ties_x − ties_y + ties_xy − 2·discordant
    let difference = total as f64 - ties_x as f64 - ties_y as f64 + ties_xy as f64 - 2.0 * discordant as f64;
    let denominator = ((total - ties_x) as f64 * (total - ties_y) as f64).sqrt();
    Some((difference / denominator).clamp(-1.0, 1.0))
}

/// Sorts `values` and returns how many pairs i < j had values[i] > values[j] (strictly).
fn count_inversions(values: &mut [f64]) -> u64 {
    let n = values.len();
    let mut buffer = vec![0.0; n];
    let mut inversions = 0u64;
    let mut width = 1;
    // Bottom-up merge sort: no recursion, one scratch buffer.
    while width < n {
        let mut start = 0;
        while start < n {
            let middle = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j, mut k) = (start, middle, start);
            while i < middle && j < end {
                if values[j] < values[i] {
                    buffer[k] = values[j];
                    inversions += (middle - i) as u64;
                    j += 1;
                } else {
                    buffer[k] = values[i];
                    i += 1;
                }
                k += 1;
            }
            buffer[k..k + middle - i].copy_from_slice(&values[i..middle]);
            k += middle - i;
            buffer[k..k + end - j].copy_from_slice(&values[j..end]);
            start = end;
        }
        values.copy_from_slice(&buffer);
        width *= 2;
    }
    inversions
}
#[cfg(test)]
mod tests {
    use super::*;
    use critbench_core::Rng;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-12)
    }

    #[test]
    fn kappa_matches_scikit_learn() {
        // sklearn.metrics.cohen_kappa_score([1,1,1,0,0,0,0,1,0,0], [1,1,0,0,0,1,0,1,0,0]) = 0.5833…
        // both = 3, only gold = 1, only judged = 1, neither = 5.
        assert!(close(cohen_kappa(3, 1, 1, 5), 0.583_333_333_333_333_3));
        assert!(close(cohen_kappa(4, 0, 0, 6), 1.0));
        assert_eq!(cohen_kappa(0, 0, 0, 7), None);
        assert_eq!(cohen_kappa(0, 0, 0, 0), None);
    }

    #[test]
    fn rank_correlations_match_scipy() {
        let gold = [9.0, 9.0, 5.0, 4.0, 2.0, 3.0, 2.0, 0.0, 1.0, 1.0];
        let score = [9.8, 8.0, 8.0, 3.1, 9.5, 8.0, 2.0, 0.0, 3.0, 1.0];
        // scipy.stats.spearmanr(gold, score).statistic and scipy.stats.kendalltau(gold, score).statistic
        assert!(close(spearman(&gold, &score), 0.767_805_537_326_041_6), "{:?}", spearman(&gold, &score));
        assert!(close(kendall_tau_b(&gold, &score), 0.642_857_142_857_142_8), "{:?}", kendall_tau_b(&gold, &score));
        assert_eq!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(kendall_tau_b(&[1.0, 2.0, 3.0], &[4.0, 4.0, 4.0]), None);
        assert_eq!(kendall_tau_b(&[1.0], &[1.0]), None);
        assert!(close(kendall_tau_b(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0));
    }

    /// The O(n²) definition of tau-b, to check the fast one on random data with many ties.
    fn kendall_brute_force(x: &[f64], y: &[f64]) -> Option<f64> {
        let (mut concordant, mut discordant, mut only_x, mut only_y) = (0i64, 0i64, 0i64, 0i64);
        for i in 0..x.len() {
            for j in i + 1..x.len() {
                let (dx, dy) = (x[i] - x[j], y[i] - y[j]);
                match (dx == 0.0, dy == 0.0) {
                    (true, true) => {}
                    (true, false) => only_x += 1,
                    (false, true) => only_y += 1,
                    (false, false) if (dx > 0.0) == (dy > 0.0) => concordant += 1,
                    (false, false) => discordant += 1,
                }
            }
        }
        let denominator = (((concordant + discordant + only_x) * (concordant + discordant + only_y)) as f64).sqrt();
        (denominator > 0.0).then(|| (concordant - discordant) as f64 / denominator)
    }

    #[test]
    fn fast_kendall_agrees_with_the_definition() {
        let mut rng = Rng::new(11);
        for trial in 0..200 {
            let n = 2 + rng.below(60);
            let levels = 1 + rng.below(8);
            let x: Vec<f64> = (0..n).map(|_| rng.below(levels) as f64 * 0.5).collect();
            let y: Vec<f64> = (0..n).map(|_| rng.below(1 + trial % 12) as f64).collect();
            let (fast, slow) = (kendall_tau_b(&x, &y), kendall_brute_force(&x, &y));
            match (fast, slow) {
                (Some(a), Some(b)) => assert!((a - b).abs() < 1e-12, "{x:?} {y:?}: {a} vs {b}"),
                (a, b) => assert_eq!(a, b, "{x:?} {y:?}"),
            }
        }
    }

    #[test]
    fn average_ranks_share_ties() {
        assert_eq!(average_ranks(&[3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0]);
    }
}
