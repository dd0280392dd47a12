//! Property tests of the critique parser as the host uses it (`Critique::parse`, docs/REFERENCE.md, Critique): no
//! input makes it panic, and whatever it accepts is a critique the decision rule can trust — a
//! finite score and dimensions inside the critic's range. Failing cases are kept by proptest in
//! `proptest-regressions/` and replayed first.

use std::collections::BTreeMap;

use critbench_core::{Critique, CritiqueError, ScoreRange};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value, json};

const RANGE: ScoreRange = ScoreRange { min: 0.0, max: 10.0 };

/// Any JSON value, nested a few levels, with numbers around and outside the range.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1e3f64..1e3).prop_map(|n| json!(n)),
        any::<i64>().prop_map(|n| json!(n)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("score".to_string()),
                    Just("dimensions".to_string()),
                    Just("issues".to_string()),
                    Just("fatal_issues".to_string()),
                    Just("suggestions".to_string()),
                    Just("passed".to_string()),
                    Just("rationale".to_string()),
                    Just("text".to_string()),
                    Just("type".to_string()),
                    Just("edit".to_string()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// An issue as text or as `{"text", "type"}`.
fn issue() -> impl Strategy<Value = Value> {
    prop_oneof![
        ".{0,20}".prop_map(Value::String),
        (".{0,20}", prop::option::of("[a-z_]{0,10}")).prop_map(|(text, kind)| match kind {
            Some(kind) => json!({"text": text, "type": kind}),
            None => json!({"text": text}),
        }),
    ]
}

/// The text of an issue as the parser keeps it.
fn text_of(issue: &Value) -> String {
    issue.as_str().map(str::to_string).unwrap_or_else(|| issue["text"].as_str().unwrap().to_string())
}

fn assert_trustworthy(critique: &Critique) {
    assert!(RANGE.contains(critique.score), "score {} escaped the range", critique.score);
    for (name, value) in &critique.dimensions {
        assert!(RANGE.contains(*value), "dimension {name} = {value} escaped the range");
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        if let Ok(critique) = Critique::parse(&text, RANGE, None) {
            assert_trustworthy(&critique);
        }
    }

    #[test]
    fn arbitrary_json_never_panics_and_accepts_only_in_range_scores(value in any_json()) {
        if let Ok(critique) = Critique::parse(&value.to_string(), RANGE, None) {
            assert_trustworthy(&critique);
        }
    }

    #[test]
    fn a_well_formed_critique_keeps_what_it_says(
        score in 0.0f64..=10.0,
        issues in prop::collection::vec(issue(), 0..5),
        fatal in prop::collection::vec(issue(), 0..3),
        passed in prop::option::of(any::<bool>()),
        rationale in prop::option::of(".{0,30}"),
    ) {
        let mut wire = json!({"score": score, "issues": issues, "fatal_issues": fatal});
        if let Some(passed) = passed { wire["passed"] = json!(passed); }
        if let Some(rationale) = &rationale { wire["rationale"] = json!(rationale); }
        let critique = Critique::parse(&wire.to_string(), RANGE, None).unwrap();
        prop_assert_eq!(critique.score, score);
        prop_assert_eq!(critique.issues, issues.iter().map(text_of).collect::<Vec<_>>());
        prop_assert_eq!(critique.fatal_issues, fatal.iter().map(text_of).collect::<Vec<_>>());
        prop_assert_eq!(critique.critic_passed, passed);
        prop_assert_eq!(critique.rationale, rationale);
    }

    #[test]
    fn a_score_outside_the_range_is_refused(score in prop_oneof![-1e9f64..-1e-9, 10.000001f64..1e9]) {
        let result = Critique::parse(&json!({"score": score}).to_string(), RANGE, None);
        prop_assert!(matches!(result, Err(CritiqueError::ScoreOutOfRange { .. })), "{:?}", result);
    }

    #[test]
    fn dimensions_without_a_score_give_their_weighted_mean_inside_the_range(
        dimensions in prop::collection::btree_map("[a-d]", 0.0f64..=10.0, 1..5),
        weights in prop::option::of(prop::collection::btree_map("[a-d]", -5.0f64..5.0, 0..5)),
    ) {
        let wire = json!({"dimensions": dimensions});
        let result = Critique::parse(&wire.to_string(), RANGE, weights.as_ref());
        match (&weights, &result) {
            (None, Ok(critique)) => {
                let mean = dimensions.values().sum::<f64>() / dimensions.len() as f64;
                prop_assert!((critique.score - mean).abs() < 1e-9);
            }
            (None, Err(e)) => prop_assert!(false, "unweighted dimensions in range were refused: {}", e),
            // Negative weights can push the mean out of the range: refused, never passed through.
            (Some(_), Ok(critique)) => assert_trustworthy(critique),
            (Some(_), Err(e)) => prop_assert!(matches!(e, CritiqueError::ScoreOutOfRange { .. }), "{}", e),
        }
    }
}

/// Found by `a_well_formed_critique_keeps_what_it_says`: serde_json's default float parser read
/// this score one ulp low; with `float_roundtrip` every score is read exactly as written.
#[test]
fn a_score_is_read_exactly_as_written() {
    for score in [9.028850879086137f64, 0.1 + 0.2, 7.999999999999999, 1e-300, 9.999999999999998] {
        let critique = Critique::parse(&json!({ "score": score }).to_string(), RANGE, None).unwrap();
        assert_eq!(critique.score.to_bits(), score.to_bits(), "{score}");
    }
}

#[test]
fn non_finite_numbers_are_not_json() {
    for text in [r#"{"score": NaN}"#, r#"{"score": Infinity}"#, r#"{"dimensions": {"a": -Infinity}}"#] {
        assert!(matches!(Critique::parse(text, RANGE, None), Err(CritiqueError::Json(_))), "{text}");
    }
    // A number too large for f64 is refused too, never read as infinity.
    assert!(Critique::parse(r#"{"score": 1e999}"#, RANGE, None).is_err());
    let weights: BTreeMap<String, f64> = [("a".to_string(), 0.0)].into();
    // All weights zero: the mean is undefined and taken as 0, the range minimum here.
    assert_eq!(Critique::parse(r#"{"dimensions": {"a": 9}}"#, RANGE, Some(&weights)).unwrap().score, 0.0);
}
