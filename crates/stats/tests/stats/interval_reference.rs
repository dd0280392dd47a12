//! The printed intervals and tests against scipy, statsmodels and numpy:
//! tests/python/check_intervals.py recomputes every fixture here — Clopper–Pearson's interval and
//! its binomial test (whole and fractional counts), Student's t quantile, the pass rate and paired
//! difference in every regime (exact, effective sample size, Wilson, the exact bootstrap and its
//! p-value by numpy convolution), the smallest detectable difference — from the inputs alone and
//! compares them with what critbench-stats gives.

use crate::common::{Rng, python, repo};
use critbench_stats::binomial::{binomial_test_half, clopper_pearson};
use critbench_stats::bootstrap::Cluster;
use critbench_stats::difference::paired_difference;
use critbench_stats::distributions::student_t_quantile;
use critbench_stats::power::Test;
use critbench_stats::rate::pass_rate;

/// A JSON number Python reads back as the same double.
fn number(value: f64) -> String {
    format!("{value:?}")
}

/// Tasks as JSON: [[denominator, numerator, tasks], …].
fn tasks_json(clusters: &[Cluster<1>]) -> String {
    let rows: Vec<String> =
        clusters.iter().map(|c| format!("[{}, {}, {}]", c.denominator, c.numerators[0], c.tasks)).collect();
    format!("[{}]", rows.join(", "))
}

fn clusters(list: &[(u64, i64, u64)]) -> Vec<Cluster<1>> {
    list.iter().map(|&(denominator, n, tasks)| Cluster { denominator, numerators: [n], tasks }).collect()
}

/// Rate fixtures: every regime, at the boundaries and in between.
fn rate_fixtures() -> Vec<(&'static str, Vec<Cluster<1>>)> {
    let mut rng = Rng::new(9);
    let mut random = |tasks: u64, epochs: u64, p: f64| {
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..tasks {
            let p_task = if rng.unit() < 0.5 { p } else { p * rng.unit() };
            let passes = (0..epochs).filter(|_| rng.unit() < p_task).count() as i64;
            *counts.entry(passes).or_insert(0u64) += 1;
        }
        counts.into_iter().map(|(n, tasks)| Cluster { denominator: epochs, numerators: [n], tasks }).collect::<Vec<_>>()
    };
    vec![
        ("one task, one loop, passed", clusters(&[(1, 1, 1)])),
        ("20 tasks, one loop, none passed", clusters(&[(1, 0, 20)])),
        ("20 tasks × 3, none passed", clusters(&[(3, 0, 20)])),
        ("9 tasks × 3, all passed", clusters(&[(3, 3, 9)])),
        ("12 tasks, one loop, 5 passed", clusters(&[(1, 1, 5), (1, 0, 7)])),
        ("25 tasks × 3, varied", random(25, 3, 0.7)),
        ("30 tasks × 5, varied", random(30, 5, 0.4)),
        ("100 tasks, one loop, 4 passed", clusters(&[(1, 1, 4), (1, 0, 96)])),
        ("100 tasks, one loop, 37 passed", clusters(&[(1, 1, 37), (1, 0, 63)])),
        ("80 tasks × 3, varied", random(80, 3, 0.6)),
        ("240 tasks × 3, 3 with a pass", clusters(&[(3, 1, 2), (3, 2, 1), (3, 0, 237)])),
    ]
}

/// Difference fixtures: every regime.
fn difference_fixtures() -> Vec<(&'static str, Vec<Cluster<1>>)> {
    vec![
        ("one task × 3, A passed all, B none", clusters(&[(3, 3, 1)])),
        ("5 tasks × 3, A ahead on every one", clusters(&[(3, 3, 2), (3, 2, 2), (3, 1, 1)])),
        ("5 tasks, equal arms", clusters(&[(1, 0, 5)])),
        ("100 pairs, 7 only A and 1 only B", clusters(&[(1, 1, 7), (1, -1, 1), (1, 0, 92)])),
        ("240 tasks × 3, nothing differs", clusters(&[(3, 0, 240)])),
        ("20 tasks × 3, 14 untied", clusters(&[(3, 1, 8), (3, 2, 4), (3, -1, 2), (3, 0, 6)])),
        ("30 tasks, one pair, 16 untied", clusters(&[(1, 1, 11), (1, -1, 5), (1, 0, 14)])),
        ("20 tasks × 3, all +1", clusters(&[(3, 1, 20)])),
        ("40 tasks × 3, bootstrapped", clusters(&[(3, 2, 8), (3, 1, 9), (3, -1, 6), (3, -2, 1), (3, 0, 16)])),
        ("120 tasks × 3, bootstrapped", clusters(&[(3, 2, 20), (3, 1, 30), (3, -1, 10), (3, 0, 60)])),
        ("240 tasks, one pair, bootstrapped", clusters(&[(1, 1, 40), (1, -1, 22), (1, 0, 178)])),
    ]
}

#[test]
fn intervals_and_tests_agree_with_scipy_and_statsmodels() {
    let mut cp = Vec::new();
    let mut tests = Vec::new();
    for (successes, trials) in
        [(0.0, 5.0), (3.0, 10.0), (10.0, 10.0), (1.0, 240.0), (4.5, 12.0), (0.3, 240.3), (17.25, 30.5), (59.9, 60.0)]
    {
        for alpha in [0.05, 0.04, 0.01] {
            let (low, high) = clopper_pearson(successes, trials, alpha);
            cp.push(format!(
                "{{\"successes\": {}, \"trials\": {}, \"alpha\": {}, \"low\": {}, \"high\": {}}}",
                number(successes),
                number(trials),
                number(alpha),
                number(low),
                number(high)
            ));
        }
        tests.push(format!(
            "{{\"successes\": {}, \"trials\": {}, \"p_value\": {}}}",
            number(successes),
            number(trials),
            number(binomial_test_half(successes, trials))
        ));
    }
    let t: Vec<String> = [1.0, 2.0, 9.0, 13.0, 29.0, 239.0]
        .iter()
        .map(|&freedom| {
            format!("{{\"freedom\": {}, \"value\": {}}}", number(freedom), number(student_t_quantile(0.975, freedom)))
        })
        .collect();
    let rates: Vec<String> = rate_fixtures()
        .iter()
        .map(|(name, clusters)| {
            let rate = pass_rate(clusters, 2000, 1);
            format!(
                "{{\"name\": \"{name}\", \"tasks\": {}, \"estimate\": {}, \"low\": {}, \"high\": {}, \"method\": \"{}\"}}",
                tasks_json(clusters),
                number(rate.estimate),
                number(rate.low),
                number(rate.high),
                rate.method.as_str()
            )
        })
        .collect();
    let differences: Vec<String> = difference_fixtures()
        .iter()
        .map(|(name, clusters)| {
            let d = paired_difference(clusters, 2000, 1);
            format!(
                "{{\"name\": \"{name}\", \"tasks\": {}, \"estimate\": {}, \"low\": {}, \"high\": {}, \"method\": \"{}\", \
                 \"p_value\": {}, \"test\": \"{}\"}}",
                tasks_json(clusters),
                number(d.estimate),
                number(d.low),
                number(d.high),
                d.method.as_str(),
                number(d.p_value),
                d.test.as_str()
            )
        })
        .collect();
    let test = Test::default();
    let floors: Vec<String> = [(5.0, 1.0), (20.0, 2.0), (240.0, 3.0)]
        .iter()
        .map(|&(tasks, epochs)| {
            format!(
                "{{\"tasks\": {}, \"epochs\": {}, \"floor\": {}}}",
                number(tasks),
                number(epochs),
                number(test.detectable_floor(tasks, epochs))
            )
        })
        .collect();
    let json = format!(
        "{{\"clopper_pearson\": [{}],\n\"binomial_tests\": [{}],\n\"t_quantiles\": [{}],\n\"rates\": [{}],\n\
         \"differences\": [{}],\n\"detectable_floors\": [{}]}}\n",
        cp.join(",\n"),
        tests.join(",\n"),
        t.join(",\n"),
        rates.join(",\n"),
        differences.join(",\n"),
        floors.join(",\n")
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("intervals.json");
    std::fs::write(&path, json).unwrap();
    let output = python()
        .arg(repo().join("tests/python/check_intervals.py"))
        .arg(&path)
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "check_intervals.py failed (install tests/python/requirements.txt):\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    println!("{stdout}");
    // Every fixture was checked: a script that compared nothing must not pass.
    for (name, _) in rate_fixtures().iter().chain(difference_fixtures().iter()) {
        assert!(
            stdout.lines().any(|l| l.starts_with(name) && l.ends_with("agrees")),
            "`{name}` was not checked:\n{stdout}"
        );
    }
}
