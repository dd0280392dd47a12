//! The confidence sequence against its authors' reference implementation:
//! tests/python/check_sequential.py recomputes every bound of these fixtures with
//! `confseq.betting.hedged_cs` (the hedged-capital sequence with predictable plug-in bets, its
//! default grid of 1,000 steps and truncation at ½, running intersection) and compares them with
//! the bounds computed here.

use crate::common::{Rng, population, python, repo};
use critbench_stats::sequential::ConfidenceSequence;

struct Fixture {
    name: &'static str,
    confidence: f64,
    values: Vec<f64>,
}

fn fixtures() -> Vec<Fixture> {
    let mut rng = Rng::new(20);
    vec![
        // The demo's shape: 3 epochs, feedback well ahead.
        Fixture {
            name: "3 epochs, a clear difference, 120 tasks",
            confidence: 0.95,
            values: population(&mut rng, 120, 3, 0.3),
        },
        Fixture {
            name: "3 epochs, no difference, 150 tasks",
            confidence: 0.95,
            values: population(&mut rng, 150, 3, 0.0),
        },
        Fixture {
            name: "1 epoch, a small difference, 500 tasks",
            confidence: 0.95,
            values: population(&mut rng, 500, 1, 0.1),
        },
        Fixture {
            name: "2 epochs at confidence 0.9, 40 tasks",
            confidence: 0.9,
            values: population(&mut rng, 40, 2, -0.2),
        },
        Fixture { name: "5 epochs, 400 tasks", confidence: 0.95, values: population(&mut rng, 400, 5, 0.15) },
    ]
}

/// A JSON list of numbers, each written so Python reads back the same double.
fn json_numbers(values: impl Iterator<Item = f64>) -> String {
    let numbers: Vec<String> = values.map(|v| format!("{v:?}")).collect();
    format!("[{}]", numbers.join(", "))
}

#[test]
#[ignore = "needs confseq (built from source with Boost: tests/python/requirements-no-build-isolation.txt); .ci/run installs it and runs this with --include-ignored"]
fn bounds_agree_with_confseq_hedged_cs() {
    let mut entries = Vec::new();
    for fixture in fixtures() {
        let mut sequence = ConfidenceSequence::new(fixture.confidence).unwrap();
        let (mut lower, mut upper) = (Vec::new(), Vec::new());
        for &value in &fixture.values {
            sequence.push(value).unwrap();
            let (l, u) = sequence.interval();
            lower.push(l);
            upper.push(u);
        }
        entries.push(format!(
            "{{\"name\": \"{}\", \"confidence\": {:?}, \"values\": {}, \"lower\": {}, \"upper\": {}}}",
            fixture.name,
            fixture.confidence,
            json_numbers(fixture.values.iter().copied()),
            json_numbers(lower.into_iter()),
            json_numbers(upper.into_iter()),
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sequences.json");
    std::fs::write(&path, format!("{{\"fixtures\": [{}]}}\n", entries.join(",\n"))).unwrap();
    let output = python()
        .arg(repo().join("tests/python/check_sequential.py"))
        .arg(&path)
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "check_sequential.py failed (install tests/python/requirements.txt and confseq, see .ci/run):\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    println!("{stdout}");
    // Every fixture was checked; a script that silently compared nothing must not pass.
    for fixture in fixtures() {
        assert!(
            stdout.lines().any(|l| l.starts_with(fixture.name) && l.contains("every bound equal")),
            "fixture `{}` was not checked:\n{stdout}",
            fixture.name
        );
    }
}
