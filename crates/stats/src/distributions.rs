//! The distribution functions the intervals rest on: the standard normal quantile, ln Γ, the
//! regularized incomplete beta function and its inverse, and from them the binomial tails (for
//! fractional counts too) and Student's t quantile.

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

/// The standard normal distribution's quantile function Φ⁻¹(p), for p in (0, 1) (±∞ at 0 and 1,
/// NaN outside): Wichura's algorithm AS 241 (PPND16), accurate to about 1e-16.
pub fn normal_quantile(p: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180625 - q * q;
        return q * polynomial(&CENTRAL_NUMERATOR, r) / polynomial(&CENTRAL_DENOMINATOR, r);
    }
    let tail = if q < 0.0 { p } else { 1.0 - p };
    let mut r = (-tail.ln()).sqrt();
    let value = if r <= 5.0 {
        r -= 1.6;
        polynomial(&NEAR_NUMERATOR, r) / polynomial(&NEAR_DENOMINATOR, r)
    } else {
        r -= 5.0;
        polynomial(&FAR_NUMERATOR, r) / polynomial(&FAR_DENOMINATOR, r)
    };
    if q < 0.0 { -value } else { value }
}

use coefficients::{
    CENTRAL_DENOMINATOR, CENTRAL_NUMERATOR, FAR_DENOMINATOR, FAR_NUMERATOR, NEAR_DENOMINATOR, NEAR_NUMERATOR,
};

/// c₀ + c₁x + … by Horner's rule.
fn polynomial(coefficients: &[f64; 8], x: f64) -> f64 {
    coefficients.iter().rev().fold(0.0, |sum, &c| sum * x + c)
}

/// AS 241's coefficients, as published (to more digits than a double holds): |p − ½| ≤ 0.425,
/// then r = √(−ln tail) ≤ 5, then beyond.
#[allow(clippy::excessive_precision)]
mod coefficients {
    pub(super) const CENTRAL_NUMERATOR: [f64; 8] = [
        3.387_132_872_796_366_608,
        1.331_416_678_917_843_774_5e2,
        1.971_590_950_306_551_442_7e3,
        1.373_169_376_550_946_112_5e4,
        4.592_195_393_154_987_145_7e4,
        6.726_577_092_700_870_085_3e4,
        3.343_057_558_358_812_810_5e4,
        2.509_080_928_730_122_672_7e3,
    ];
    pub(super) const CENTRAL_DENOMINATOR: [f64; 8] = [
        1.0,
        4.231_333_070_160_091_125_2e1,
        6.871_870_074_920_579_083e2,
        5.394_196_021_424_751_107_7e3,
        2.121_379_430_158_659_586_7e4,
        3.930_789_580_009_271_061e4,
        2.872_908_573_572_194_267_4e4,
        5.226_495_278_852_854_561e3,
    ];
    pub(super) const NEAR_NUMERATOR: [f64; 8] = [
        1.423_437_110_749_683_577_34,
        4.630_337_846_156_545_295_9,
        5.769_497_221_460_691_405_5,
        3.647_848_324_763_204_605_04,
        1.270_458_252_452_368_382_58,
        2.417_807_251_774_506_117_7e-1,
        2.272_384_498_926_918_458_33e-2,
        7.745_450_142_783_414_076_4e-4,
    ];
    pub(super) const NEAR_DENOMINATOR: [f64; 8] = [
        1.0,
        2.053_191_626_637_758_821_87,
        1.676_384_830_183_803_849_4,
        6.897_673_349_851_000_045_5e-1,
        1.481_039_764_274_800_745_9e-1,
        1.519_866_656_361_645_719_66e-2,
        5.475_938_084_995_344_946e-4,
        1.050_750_071_644_416_843_24e-9,
    ];
    pub(super) const FAR_NUMERATOR: [f64; 8] = [
        6.657_904_643_501_103_777_2,
        5.463_784_911_164_114_369_9,
        1.784_826_539_917_291_335_8,
        2.965_605_718_285_048_912_3e-1,
        2.653_218_952_657_612_309_3e-2,
        1.242_660_947_388_078_438_6e-3,
        2.711_555_568_743_487_578_15e-5,
        2.010_334_399_292_288_132_65e-7,
    ];
    pub(super) const FAR_DENOMINATOR: [f64; 8] = [
        1.0,
        5.998_322_065_558_879_376_9e-1,
        1.369_298_809_227_358_053_1e-1,
        1.487_536_129_085_061_485_25e-2,
        7.868_691_311_456_132_591e-4,
        1.846_318_317_510_054_681_8e-5,
        1.421_511_758_316_445_888_7e-7,
        2.044_263_103_389_939_785_64e-15,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

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

    #[test]
    fn the_normal_quantile_matches_reference_values() {
        // scipy.stats.norm.ppf
        for (p, z) in [
            (0.975, 1.959_963_984_540_054),
            (0.8, 0.841_621_233_572_914_3),
            (0.5, 0.0),
            (0.025, -1.959_963_984_540_054_5),
            (0.995, 2.575_829_303_548_900_4),
            (1e-10, -6.361_340_902_404_056),
            (0.999_999, 4.753_424_308_817_087),
        ] {
            let got = normal_quantile(p);
            assert!((got - z).abs() < 1e-14 * z.abs().max(1.0), "Φ⁻¹({p}) = {got}, expected {z}");
        }
        assert_eq!(normal_quantile(0.0), f64::NEG_INFINITY);
        assert!(normal_quantile(1.5).is_nan());
    }

    #[test]
    fn the_normal_quantile_matches_known_values_in_every_branch() {
        assert!(close(normal_quantile(0.975), 1.959_963_984_540_054));
        assert!(close(normal_quantile(0.95), 1.644_853_626_951_472_2));
        assert!(close(normal_quantile(0.995), 2.575_829_303_548_900_4));
        assert!(close(normal_quantile(0.5), 0.0));
        assert!(close(normal_quantile(0.025), -1.959_963_984_540_054));
        // The far tails (r > 5): Φ⁻¹(1e-12) from scipy.stats.norm.ppf.
        assert!((normal_quantile(1e-12) + 7.034_483_825_301_131).abs() < 1e-9);
        assert_eq!(normal_quantile(0.0), f64::NEG_INFINITY);
        assert!(normal_quantile(1.5).is_nan());
    }
}
