#!/usr/bin/env python3
"""Checks critbench-stats' printed intervals and tests against scipy, statsmodels and numpy.

Usage: python3 tests/python/check_intervals.py INTERVALS_JSON

INTERVALS_JSON is written by crates/stats/tests/stats/interval_reference.rs. Every value in it is
recomputed here from its inputs alone and must agree to 1e-9:

- Clopper-Pearson's interval at level 1 - alpha for whole and fractional counts: scipy.stats.beta.ppf
  (alpha/2; s, n - s + 1) and (1 - alpha/2; s + 1, n - s), and for whole counts also statsmodels
  proportion_confint(method="beta");
- the binomial test of p = 1/2 dual to it: scipy.stats.binomtest(k, n, 0.5) for whole counts, twice the
  smaller of betainc(s, n - s + 1, 1/2) and 1 - betainc(s + 1, n - s, 1/2) for fractional ones;
- Student's t quantile at 0.975: scipy.stats.t.ppf;
- a pass rate, each task (loops, passes, tasks like it): with more than 30 tasks and at least 10 with a pass
  and 10 with a fail, Wilson's interval (statsmodels, one loop per task) or the exact task-cluster bootstrap
  (numpy: the tasks' empirical distribution of passes convolved with itself once per task; the interval's
  ends are the smallest sums whose cumulative probability reaches 2.5% and 97.5%); otherwise Clopper-Pearson
  on the effective sample size: rate (1 - rate) / (v (t/z)^2) with v = n/(n - 1) sum (passes - rate loops)^2
  / (sum loops)^2, t on min(tasks with a pass, tasks with a fail) - 1 degrees of freedom (at least 1),
  kept between the tasks and the loops, the tasks at a rate of 0 or 1;
- a paired difference, each task (pairs, net difference, tasks like it): with more than 30 tasks and at
  least 10 untied, the exact bootstrap (as for a rate) and its p-value, twice the smaller tail at 0, each
  tail counting the mass at 0; otherwise the exact sign-flip test of the tasks' mean differences d =
  net / pairs (every one of the 2^n sign flips listed, by exact fractions, and the tied tasks' flips a
  scipy binomial; McNemar's exact test, statsmodels, with one pair per task, and scipy's binomtest when
  every untied task goes one way) and the shifts it does not reject, found by the same bisection, the
  far end widened to the bounded interval (Clopper-Pearson at level 1 - 0.8 alpha for the untied tasks'
  mean difference mapped to [0, 1], at 1 - 0.2 alpha for the share of untied tasks, the difference the
  range of (2 mu - 1) q) and the end toward 0 the bounded one's when every task has the same difference;
- the smallest detectable difference m^2 / (tasks epochs + m^2), m = z_0.975 + z_0.8 (scipy.stats.norm).

Prints one line per fixture and exits 0, or prints every disagreement and exits 1 (2 for bad usage).
Requirements: tests/python/requirements.txt.
"""

import json
import sys
from fractions import Fraction

import numpy as np
from scipy.special import betainc
from scipy.stats import beta, binom, binomtest, norm, t
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

TOLERANCE = 1e-9
ALPHA = 0.05
SMALL = 30
EACH_SIDE = 10
failures = []


def expect(where, name, got, want, tolerance=TOLERANCE):
    if abs(got - want) > tolerance * max(1.0, abs(want)):
        failures.append(f"{where}: {name} = {got!r}, expected {want!r}")
        return False
    return True


def whole(value):
    return float(value).is_integer()


def clopper_pearson(s, n, alpha):
    if n <= 0:
        return 0.0, 1.0
    s = min(max(s, 0.0), n)
    low = 0.0 if s <= 0 else beta.ppf(alpha / 2, s, n - s + 1)
    high = 1.0 if s >= n else beta.ppf(1 - alpha / 2, s + 1, n - s)
    return float(low), float(high)


def binomial_test_half(s, n):
    if n <= 0:
        return 1.0
    s = min(max(s, 0.0), n)
    if whole(s) and whole(n):
        return float(binomtest(int(s), int(n), 0.5).pvalue)
    upper = 1.0 if s <= 0 else betainc(s, n - s + 1, 0.5)
    lower = 1.0 if s >= n else 1 - betainc(s + 1, n - s, 0.5)
    return float(min(1.0, 2 * min(upper, lower)))


def effective_size(estimate, variance, freedom, low, high):
    z = norm.ppf(1 - ALPHA / 2)
    inflation = (t.ppf(1 - ALPHA / 2, max(freedom, 1)) / z) ** 2
    size = estimate * (1 - estimate) / (variance * inflation) if variance > 0 else np.inf
    return float(min(max(size, low), max(high, low)))


def exact_bootstrap(tasks):
    """The exact task-cluster bootstrap of sum numerators / sum denominators (equal denominators)."""
    denominator = tasks[0][0]
    n = sum(c for _, _, c in tasks)
    low = min(v for _, v, _ in tasks)
    high = max(v for _, v, _ in tasks)
    one = np.zeros(high - low + 1)
    for _, v, c in tasks:
        one[v - low] += c / n
    pmf = np.array([1.0])
    for _ in range(n):
        pmf = np.convolve(pmf, one)
    pmf = np.maximum(pmf, 0)
    total = pmf.sum()
    cumulative = np.cumsum(pmf)
    values = (n * low + np.arange(len(pmf))) / (n * denominator)

    def quantile(q):
        return float(values[np.argmax(cumulative >= q * total)])

    zero = -n * low
    at_most = pmf[: zero + 1].sum() if zero >= 0 else 0.0
    at_least = pmf[max(zero, 0):].sum() if zero < len(pmf) else 0.0
    p = min(1.0, 2 * min(at_most, at_least) / total)
    return (quantile(0.025), quantile(0.975)), p


def rate(tasks):
    tasks = [(l, p, c) for l, p, c in tasks if l > 0 and c > 0]
    n = sum(c for _, _, c in tasks)
    passes = sum(p * c for _, p, c in tasks)
    loops = sum(l * c for l, _, c in tasks)
    with_pass = sum(c for _, p, c in tasks if p > 0)
    with_fail = sum(c for l, p, c in tasks if p < l)
    one_each = all(l == 1 for l, _, _ in tasks)
    estimate = passes / loops
    if n > SMALL and min(with_pass, with_fail) >= EACH_SIDE:
        if one_each:
            return estimate, tuple(float(v) for v in proportion_confint(passes, loops, ALPHA, "wilson")), "wilson"
        interval, _ = exact_bootstrap(tasks)
        return estimate, interval, "task-cluster bootstrap"
    method = "clopper-pearson" if one_each else "clopper-pearson, effective sample size"
    if n < 2 or passes == 0 or passes == loops:
        size = float(n)
    else:
        residuals = sum(c * (p - estimate * l) ** 2 for l, p, c in tasks)
        variance = n / (n - 1) * residuals / loops**2
        freedom = max(min(with_pass, with_fail), 2) - 1
        size = effective_size(estimate, variance, freedom, n, loops)
    return estimate, clopper_pearson(estimate * size, size, ALPHA), method


class SignFlip:
    """The exact sign-flip test of task differences d = net / pairs, and its shifts."""

    def __init__(self, tasks):
        self.n = sum(c for _, _, c in tasks)
        self.sum = sum(Fraction(d, pr) * c for pr, d, c in tasks)
        self.tied = sum(c for _, d, c in tasks if d == 0)
        # (sum of the flipped untied differences, sum of their signs) -> probability, exact.
        table = {(Fraction(0), 0): 1.0}
        for pr, d, c in tasks:
            if d == 0:
                continue
            value = Fraction(d, pr)
            step = {}
            for (x, y), mass in table.items():
                for kept in range(c + 1):
                    signs = 2 * kept - c
                    key = (x + value * signs, y + signs)
                    step[key] = step.get(key, 0.0) + mass * float(binom.pmf(kept, c, 0.5))
            table = step
        self.x = np.array([float(x) for x, _ in table])
        self.exact_x = [x for x, _ in table]
        self.y = np.array([y for _, y in table], dtype=float)
        self.mass = np.array(list(table.values()))

    def center(self):
        return float(self.sum) / self.n if self.n else 0.0

    def p_value(self, delta):
        if delta == 0:
            extreme = np.array([abs(x) >= abs(self.sum) for x in self.exact_x])
            return float(min(1.0, self.mass[extreme].sum()))
        observed = abs(float(self.sum) - self.n * delta)
        s = observed - 1e-10 * (1 + self.n)
        if s <= 0:
            return 1.0
        a = self.x - delta * self.y
        # |a - delta Y0| >= s for Y0 = 2B - tied, B ~ Binomial(tied, 1/2).
        below, above = (a - s) / delta, (a + s) / delta
        at_most, at_least = (below, above) if delta > 0 else (above, below)
        low = np.floor((at_most + self.tied) / 2)
        high = np.ceil((at_least + self.tied) / 2)
        lower = np.where(low < 0, 0.0, binom.cdf(np.minimum(low, self.tied), self.tied, 0.5))
        upper = np.where(high > self.tied, 0.0, binom.sf(np.maximum(high, 0) - 1, self.tied, 0.5))
        return float(min(1.0, (self.mass * np.minimum(lower + upper, 1.0)).sum()))

    def interval(self, alpha):
        center = self.center()
        rejects = self.p_value(0.0) < alpha

        def end(outside):
            if self.p_value(outside) >= alpha:
                return outside
            rejected, accepted = outside, center
            for _ in range(60):
                middle = 0.5 * (rejected + accepted)
                if self.p_value(middle) >= alpha:
                    accepted = middle
                else:
                    rejected = middle
            return accepted

        low = end(0.0) if rejects and center > 0 else end(-1.0)
        high = end(0.0) if rejects and center < 0 else end(1.0)
        return (low, high) if rejects else (min(low, 0.0), max(high, 0.0))


def bounded(tasks, n, untied):
    mapped = sum(c * (1 + d / pr) / 2 for pr, d, c in tasks if d != 0)
    mean_low, mean_high = clopper_pearson(mapped, untied, 0.8 * ALPHA)
    share_low, share_high = clopper_pearson(untied, n, 0.2 * ALPHA)
    a_low, a_high = 2 * mean_low - 1, 2 * mean_high - 1
    low = a_low * share_low if a_low >= 0 else a_low * share_high
    high = a_high * share_high if a_high >= 0 else a_high * share_low
    return low, high


def difference(tasks):
    tasks = [(pr, d, c) for pr, d, c in tasks if pr > 0 and c > 0]
    n = sum(c for _, _, c in tasks)
    pairs = sum(pr * c for pr, _, c in tasks)
    estimate = sum(d * c for _, d, c in tasks) / pairs
    untied = sum(c for _, d, c in tasks if d != 0)
    if n > SMALL and untied >= EACH_SIDE:
        interval, p = exact_bootstrap(tasks)
        return estimate, interval, "task-cluster bootstrap", p, "task-cluster bootstrap"
    flips = SignFlip(tasks)
    p = flips.p_value(0.0)
    flip_low, flip_high = flips.interval(ALPHA)
    bounded_low, bounded_high = bounded(tasks, n, untied)
    alike = len({Fraction(d, pr) for pr, d, _ in tasks}) == 1
    if p >= ALPHA:
        low, high = min(flip_low, bounded_low, 0.0), max(flip_high, bounded_high, 0.0)
    elif flips.center() > 0:
        low = min(flip_low, bounded_low) if alike and bounded_low > 0 else flip_low
        high = max(flip_high, bounded_high)
    else:
        low = min(flip_low, bounded_low)
        high = max(flip_high, bounded_high) if alike and bounded_high < 0 else flip_high
    one_each = all(pr == 1 for pr, _, _ in tasks)
    ahead = sum(c for _, d, c in tasks if d > 0)
    behind = sum(c for _, d, c in tasks if d < 0)
    if one_each:
        reference = mcnemar([[0, ahead], [behind, 0]], exact=True).pvalue if untied > 0 else 1.0
        expect("difference", "McNemar (statsmodels)", p, float(reference))
    if untied > 0 and min(ahead, behind) == 0:
        expect("difference", "sign test (scipy binomtest)", p, float(binomtest(untied, untied, 0.5).pvalue))
    test = "exact McNemar" if one_each else "exact sign-flip test of tasks"
    return estimate, (low, high), "exact sign-flip test inverted", p, test


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as file:
        fixtures = json.load(file)
    for item in fixtures["clopper_pearson"]:
        s, n, alpha = item["successes"], item["trials"], item["alpha"]
        where = f"Clopper-Pearson {s} of {n} at alpha {alpha}"
        low, high = clopper_pearson(s, n, alpha)
        expect(where, "low", item["low"], low)
        expect(where, "high", item["high"], high)
        if whole(s) and whole(n):
            reference = proportion_confint(int(s), int(n), alpha, "beta")
            expect(where, "low (statsmodels)", item["low"], float(reference[0]))
            expect(where, "high (statsmodels)", item["high"], float(reference[1]))
    print(f"Clopper-Pearson: {len(fixtures['clopper_pearson'])} intervals checked")
    for item in fixtures["binomial_tests"]:
        s, n = item["successes"], item["trials"]
        expect(f"binomial test {s} of {n}", "p", item["p_value"], binomial_test_half(s, n))
    print(f"binomial tests: {len(fixtures['binomial_tests'])} checked")
    for item in fixtures["t_quantiles"]:
        expect(f"t quantile, {item['freedom']} df", "value", item["value"], float(t.ppf(0.975, item["freedom"])))
    print(f"t quantiles: {len(fixtures['t_quantiles'])} checked")
    for item in fixtures["rates"]:
        before = len(failures)
        estimate, (low, high), method = rate(item["tasks"])
        where = item["name"]
        expect(where, "estimate", item["estimate"], estimate)
        expect(where, "low", item["low"], low)
        expect(where, "high", item["high"], high)
        if item["method"] != method:
            failures.append(f"{where}: method {item['method']!r}, expected {method!r}")
        if len(failures) == before:
            print(f"{where}: {method} ({low:.4f} to {high:.4f}) agrees")
    for item in fixtures["differences"]:
        before = len(failures)
        estimate, (low, high), method, p, test = difference(item["tasks"])
        where = item["name"]
        expect(where, "estimate", item["estimate"], estimate)
        expect(where, "low", item["low"], low)
        expect(where, "high", item["high"], high)
        expect(where, "p_value", item["p_value"], p)
        if (item["method"], item["test"]) != (method, test):
            failures.append(f"{where}: {item['method']!r} / {item['test']!r}, expected {method!r} / {test!r}")
        if len(failures) == before:
            print(f"{where}: {method} ({low:+.4f} to {high:+.4f}), p = {p:.4g} ({test}) agrees")
    m = norm.ppf(0.975) + norm.ppf(0.8)
    for item in fixtures["detectable_floors"]:
        want = m**2 / (item["tasks"] * item["epochs"] + m**2)
        expect(f"detectable floor, {item['tasks']} x {item['epochs']}", "floor", item["floor"], float(want))
    print(f"detectable floors: {len(fixtures['detectable_floors'])} checked")
    for failure in failures:
        print(f"FAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
