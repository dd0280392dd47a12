//! The distribution functions the exact intervals rest on: ln Γ, the regularized incomplete beta
//! function and its inverse, and from them the binomial tails (for fractional counts too) and
//! Student's t quantile.

use std::f64::consts::PI;

/// ln Γ(x) for x > 0: Lanczos' approximation (g = 7, nine coefficients), relative error about
/// 1e-15, with the reflection formula below ½.
pub fn ln_gamma(x: f64) -> f64 {
    #[allow(clippy::excessive_precision)]
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_93,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_13,
        -176.615_029_162_140_59,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_571_6e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Γ(x) Γ(1 − x) = π / sin(πx)
        return (PI / (PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The regularized incomplete beta function I_x(a, b) = P(X ≤ x) for X ~ Beta(a, b), a, b > 0:
/// the continued fraction of Numerical Recipes (modified Lentz), on whichever side of the mean it
/// converges fast. Relative error about 1e-14.
pub fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    incomplete_beta_with(x, a, b, ln_beta(a, b))
}

/// ln B(a, b) = ln Γ(a) + ln Γ(b) − ln Γ(a + b).
fn ln_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
}

/// [`incomplete_beta`] given ln B(a, b), which a search over x computes once.
fn incomplete_beta_with(x: f64, a: f64, b: f64, ln_beta: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (a * x.ln() + b * (-x).ln_1p() - ln_beta).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * continued_fraction(x, a, b) / a
    } else {
        1.0 - front * continued_fraction(1.0 - x, b, a) / b
    }
}

/// The continued fraction of I_x(a, b) (Numerical Recipes' `betacf`).
fn continued_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPSILON: f64 = 1e-16;
    let (sum, plus, minus) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - sum * x / plus;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..100_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((minus + m2) * (a + m2));
        d = 1.0 + even * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + even / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let odd = -(a + m) * (sum + m) * x / ((a + m2) * (plus + m2));
        d = 1.0 + odd * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + odd / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < EPSILON {
            break;
        }
    }
    h
}

/// The quantile of Beta(a, b): the x with I_x(a, b) = p, for p in [0, 1] (0 and 1 at the ends).
///
/// Newton's method on I_x(a, b) − p (its derivative is the beta density), kept inside a bracket
/// that every step narrows, with a bisection step — geometric while the bracket spans orders of
/// magnitude, so a quantile of 1e-12 is found to the same relative precision as one of ½ — whenever
/// Newton's would leave it. A quantile above ½ is found as 1 − the quantile of Beta(b, a) at 1 − p,
/// for the same reason at the other end.
pub fn beta_quantile(p: f64, a: f64, b: f64) -> f64 {
    if p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    let ln_beta = ln_beta(a, b);
    if incomplete_beta_with(0.5, a, b, ln_beta) < p {
        return 1.0 - lower_quantile(1.0 - p, b, a, ln_beta);
    }
    lower_quantile(p, a, b, ln_beta)
}

/// The quantile of Beta(a, b) at p, known to lie in (0, ½], given ln B(a, b).
fn lower_quantile(p: f64, a: f64, b: f64, ln_beta: f64) -> f64 {
    let (mut low, mut high) = (0.0f64, 0.5f64);
    // A start from the lower tail's leading term, I_x ≈ x^a / (a B(a, b)), where the quantiles
    // of the intervals lie.
    let mut x = ((p.ln() + a.ln() + ln_beta) / a).exp().clamp(f64::MIN_POSITIVE, 0.5);
    for _ in 0..400 {
        let f = incomplete_beta_with(x, a, b, ln_beta) - p;
        if f < 0.0 {
            low = x;
        } else {
            high = x;
        }
        if high - low <= 4.0 * f64::EPSILON * high || f == 0.0 {
            break;
        }
        let density = ((a - 1.0) * x.ln() + (b - 1.0) * (-x).ln_1p() - ln_beta).exp();
        let newton = x - f / density;
        let next = if density > 0.0 && newton > low && newton < high {
            newton
        } else if low > 0.0 && high / low > 4.0 {
            (low * high).sqrt()
        } else if low == 0.0 {
            high / 16.0
        } else {
            0.5 * (low + high)
        };
        if (next - x).abs() <= 2.0 * f64::EPSILON * x {
            x = next;
            break;
        }
        x = next;
    }
    x
}

/// P(X ≥ s) for X ~ Binomial(n, p), continued to fractional `s` and `n` as I_p(s, n − s + 1)
/// (for whole numbers it is the binomial tail exactly); 1 at s ≤ 0, 0 above n.
pub fn binomial_upper_tail(s: f64, n: f64, p: f64) -> f64 {
    if s <= 0.0 {
        1.0
    } else if s > n {
        0.0
    } else {
        incomplete_beta(p, s, n - s + 1.0)
    }
}

/// P(X ≤ s) for X ~ Binomial(n, p), continued to fractional `s` and `n` as 1 − I_p(s + 1, n − s);
/// 1 at s ≥ n, 0 below 0.
pub fn binomial_lower_tail(s: f64, n: f64, p: f64) -> f64 {
    if s >= n {
        1.0
    } else if s < 0.0 {
        0.0
    } else {
        1.0 - incomplete_beta(p, s + 1.0, n - s)
    }
}

/// The quantile of Student's t with `freedom` degrees of freedom at p in (½, 1): from
/// P(|T| > t) = I_{ν/(ν + t²)}(ν/2, ½).
pub fn student_t_quantile(p: f64, freedom: f64) -> f64 {
    let x = beta_quantile(2.0 * (1.0 - p), freedom / 2.0, 0.5);
    (freedom * (1.0 - x) / x).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relative(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs().max(1e-300)
    }

    #[test]
    fn ln_gamma_matches_known_values() {
        // math.lgamma
        for (x, want) in [
            (1.0, 0.0),
            (2.0, 0.0),
            (0.5, 0.572_364_942_924_700_4),
            (10.0, 12.801_827_480_081_467),
            (0.1, 2.252_712_651_734_205_5),
            (171.5, 709.143_163_030_928_2),
        ] {
            assert!((ln_gamma(x) - want).abs() < 1e-12 * want.abs().max(1.0), "lgamma({x}) = {}", ln_gamma(x));
        }
    }

    #[test]
    fn the_incomplete_beta_and_its_inverse_match_scipy() {
        // scipy.special.betainc(a, b, x) and scipy.stats.beta.ppf(p, a, b)
        for (x, a, b, want) in [
            (0.3, 2.0, 5.0, 0.579_825),
            (0.5, 0.5, 0.5, 0.5),
            (0.01, 1.0, 240.0, 0.910_371_381_297_675_3),
            (0.9, 30.5, 1.5, 0.090_500_253_568_867_8),
            (0.5, 13.0, 8.0, 0.131_587_982_177_734_38),
        ] {
            let got = incomplete_beta(x, a, b);
            assert!(relative(got, want) < 1e-12, "I_{x}({a}, {b}) = {got}, want {want}");
            let back = beta_quantile(want, a, b);
            assert!(relative(back, x) < 1e-11, "quantile({want}; {a}, {b}) = {back}, want {x}");
        }
        // Clopper–Pearson's lower end for 1 of 240 (statsmodels proportion_confint(1, 240, method="beta")).
        assert!(relative(beta_quantile(0.025, 1.0, 240.0), 1.054_853_026_353_906e-4) < 1e-11);
        // A very small quantile keeps its relative precision.
        let tiny = beta_quantile(1e-30, 3.0, 50.0);
        assert!(relative(incomplete_beta(tiny, 3.0, 50.0), 1e-30) < 1e-9, "{tiny}");
        assert_eq!((beta_quantile(0.0, 2.0, 3.0), beta_quantile(1.0, 2.0, 3.0)), (0.0, 1.0));
    }

    #[test]
    fn binomial_tails_are_the_binomial_distribution_at_whole_counts() {
        // scipy.stats.binom.sf(s - 1, n, p) and binom.cdf(s, n, p)
        assert!(relative(binomial_upper_tail(10.0, 12.0, 0.5), 0.019_287_109_375) < 1e-12);
        assert!(relative(binomial_lower_tail(2.0, 12.0, 0.5), 0.019_287_109_375) < 1e-12);
        assert!(relative(binomial_lower_tail(3.0, 20.0, 0.3), 0.107_086_804_503_730_87) < 1e-12);
        assert_eq!((binomial_upper_tail(0.0, 5.0, 0.2), binomial_upper_tail(6.0, 5.0, 0.2)), (1.0, 0.0));
        assert_eq!((binomial_lower_tail(5.0, 5.0, 0.2), binomial_lower_tail(-1.0, 5.0, 0.2)), (1.0, 0.0));
        // Between whole counts the tails move monotonically.
        let tails: Vec<f64> = (0..=20).map(|i| binomial_upper_tail(f64::from(i) * 0.5, 10.0, 0.5)).collect();
        assert!(tails.windows(2).all(|w| w[1] <= w[0]), "{tails:?}");
    }

    #[test]
    fn t_quantiles_match_scipy() {
        // scipy.stats.t.ppf(0.975, df)
        for (freedom, want) in [
            (1.0, 12.706_204_736_174_694),
            (3.0, 3.182_446_305_283_708),
            (9.0, 2.262_157_162_798_205),
            (29.0, 2.045_229_642_132_703),
            (1000.0, 1.962_339_080_826_408_3),
        ] {
            let got = student_t_quantile(0.975, freedom);
            assert!(relative(got, want) < 1e-10, "t({freedom}) = {got}, want {want}");
        }
    }
}
