//! The critique a critic returns for one draft (docs/REFERENCE.md, Critique), and its validation.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The scores a critic can give, inclusive at both ends.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoreRange {
    /// The lowest score.
    pub min: f64,
    /// The highest score.
    pub max: f64,
}

impl ScoreRange {
    /// Whether `value` is a finite score inside the range.
    pub fn contains(&self, value: f64) -> bool {
        value.is_finite() && value >= self.min && value <= self.max
    }
}

impl fmt::Display for ScoreRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}–{}", self.min, self.max)
    }
}

/// One concrete edit the critic proposes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Suggestion {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The dimension the edit improves, if the critic says.
    pub dimension: Option<String>,
    /// The part of the draft to change, e.g. a section name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The edit itself.
    pub edit: String,
}

/// A validated critique: the score is always present and inside the critic's range.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Critique {
    /// The overall score, inside the critic's range.
    pub score: f64,
    /// Scores per dimension (e.g. `clarity`), each inside the range.
    pub dimensions: BTreeMap<String, f64>,
    /// Problems the reviser should fix.
    pub issues: Vec<String>,
    /// Problems that make the draft unacceptable: a draft with one never passes.
    pub fatal_issues: Vec<String>,
    /// The machine-readable types the critic tagged its issues and fatal issues with (e.g.
    /// `missing_evidence`), each once, in the order they first appear.
    pub issue_types: Vec<String>,
    /// Concrete edits the critic proposes.
    pub suggestions: Vec<Suggestion>,
    /// The critic's own verdict. Recorded, never used to decide.
    pub critic_passed: Option<bool>,
    /// The critic's explanation of its scores, if any.
    pub rationale: Option<String>,
    /// The keys of the critic's answer critbench does not read, in the order given: what it
    /// carried is dropped, and the run warns of it ([`unread_key_hint`] says where it belongs).
    #[serde(skip)]
    pub unread_keys: Vec<String>,
}

/// The top-level keys of a critique answer critbench reads.
pub const CRITIQUE_KEYS: [&str; 8] =
    ["critique_version", "score", "dimensions", "issues", "fatal_issues", "suggestions", "passed", "rationale"];

/// Where what a critique answer's unread `key` seems to carry goes, as a warning says it:
/// `issue_types` → "issue types go on each issue, `{"text", "type"}`".
pub fn unread_key_hint(key: &str) -> String {
    let field = match key.to_ascii_lowercase().replace('-', "_").as_str() {
        "issue_types" | "issue_type" | "types" | "type" | "categories" | "labels" | "tags" => {
            return "an issue's type goes on the issue: `issues` entries `{\"text\", \"type\"}`".to_string();
        }
        "issue" | "problems" | "errors" | "weaknesses" | "concerns" | "comments" => "issues",
        "fatal" | "fatal_issue" | "blocking" | "blockers" => "fatal_issues",
        "suggestion" | "edits" | "fixes" | "recommendations" => "suggestions",
        "dims" | "scores" | "dimension" | "dimension_scores" | "rubric" => "dimensions",
        "pass" | "verdict" | "ok" | "accept" | "accepted" => "passed",
        "explanation" | "reasoning" | "reason" | "summary" | "comment" | "feedback" => "rationale",
        "version" => "critique_version",
        "overall" | "overall_score" | "rating" | "grade" => "score",
        _ => return format!("critbench reads only {}", CRITIQUE_KEYS.map(|k| format!("`{k}`")).join(", ")),
    };
    format!("perhaps `{field}`")
}

/// The newest critique answer version this crate reads (`critique_version`; an answer without
/// one is version 1). The same number as `CRITBENCH_CRITIQUE_VERSION` of `critbench.h`.
pub const CRITIQUE_VERSION: u32 = 1;

/// The issue text recorded when no valid critique could be had.
pub const CRITIQUE_UNAVAILABLE: &str = "critique unavailable";

/// Why a critic's answer is not a valid critique.
#[derive(Clone, Debug, PartialEq)]
pub enum CritiqueError {
    /// The answer is not JSON of the critique's shape.
    Json(String),
    /// Neither `score` nor `dimensions` is given.
    NoScore,
    /// A `critique_version` this crate does not read.
    Version(u32),
    /// The score is outside the critic's range.
    ScoreOutOfRange {
        /// The score given.
        score: f64,
        /// The critic's range.
        range: ScoreRange,
    },
    /// A dimension's score is outside the critic's range.
    DimensionOutOfRange {
        /// The dimension.
        name: String,
        /// Its score.
        value: f64,
        /// The critic's range.
        range: ScoreRange,
    },
}

impl fmt::Display for CritiqueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CritiqueError::Json(message) => write!(f, "malformed critique: {message}"),
            CritiqueError::NoScore => write!(f, "critique has neither `score` nor `dimensions`"),
            CritiqueError::Version(version) => write!(
                f,
                "critique_version {version} is not one this critbench reads (1 to {CRITIQUE_VERSION}); \
                 update critbench or have the critic write version {CRITIQUE_VERSION}"
            ),
            CritiqueError::ScoreOutOfRange { score, range } => {
                write!(f, "score {score} is outside the critic's range {range}")
            }
            CritiqueError::DimensionOutOfRange { name, value, range } => {
                write!(f, "dimension `{name}` = {value} is outside the critic's range {range}")
            }
        }
    }
}

impl std::error::Error for CritiqueError {}

/// The critique as it arrives on the wire, before validation.
#[derive(Deserialize)]
struct WireCritique {
    #[serde(default)]
    critique_version: Option<u32>,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default, deserialize_with = "dimensions_once")]
    dimensions: BTreeMap<String, f64>,
    #[serde(default)]
    issues: Vec<WireIssue>,
    #[serde(default)]
    fatal_issues: Vec<WireIssue>,
    #[serde(default)]
    suggestions: Vec<Suggestion>,
    #[serde(default)]
    passed: Option<bool>,
    #[serde(default)]
    rationale: Option<String>,
}

/// `dimensions`, refusing a name given twice: which of the two scores counts is not for a JSON
/// reader to pick (a field of the critique given twice is refused by serde already).
fn dimensions_once<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, f64>, D::Error> {
    struct Once;
    impl<'de> serde::de::Visitor<'de> for Once {
        type Value = BTreeMap<String, f64>;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("an object of dimension scores")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut dimensions = BTreeMap::new();
            while let Some((name, score)) = access.next_entry::<String, f64>()? {
                if dimensions.contains_key(&name) {
                    return Err(serde::de::Error::custom(format!("dimension `{name}` appears twice")));
                }
                dimensions.insert(name, score);
            }
            Ok(dimensions)
        }
    }
    deserializer.deserialize_map(Once)
}

/// An issue is a line of text, or an object with the text and a short machine-readable type.
enum WireIssue {
    Text(String),
    Typed(TypedIssue),
}

/// The object form of an issue.
#[derive(Deserialize)]
struct TypedIssue {
    text: String,
    #[serde(rename = "type", default)]
    issue_type: Option<String>,
}

/// Read by what the JSON value is, a string or an object, so that nothing is buffered to be tried
/// twice (which `#[serde(untagged)]` does, for every issue of every critique).
impl<'de> Deserialize<'de> for WireIssue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<WireIssue, D::Error> {
        struct Issue;
        impl<'de> serde::de::Visitor<'de> for Issue {
            type Value = WireIssue;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("an issue: a string, or an object with `text` and an optional `type`")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<WireIssue, E> {
                Ok(WireIssue::Text(text.to_owned()))
            }

            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<WireIssue, E> {
                Ok(WireIssue::Text(text))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<WireIssue, A::Error> {
                TypedIssue::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(WireIssue::Typed)
            }
        }
        deserializer.deserialize_any(Issue)
    }
}

/// Splits issues into their texts, collecting their types into `types` (each once).
fn split_issues(issues: Vec<WireIssue>, types: &mut Vec<String>) -> Vec<String> {
    issues
        .into_iter()
        .map(|issue| match issue {
            WireIssue::Text(text) => text,
            WireIssue::Typed(TypedIssue { text, issue_type }) => {
                if let Some(issue_type) = issue_type.filter(|t| !t.is_empty())
                    && !types.contains(&issue_type)
                {
                    types.push(issue_type);
                }
                text
            }
        })
        .collect()
}

/// The instruction the placebo critique gives in its rationale.
pub const PLACEBO_INSTRUCTION: &str = "Revise the draft to improve it.";

impl Critique {
    /// The placebo arm's critique: the shape of a critique with no content — score 0 (a value
    /// that means nothing), no dimension, issue, type or suggestion, and a generic instruction
    /// ([`PLACEBO_INSTRUCTION`]) as its rationale — the same for every task and round.
    pub fn placebo() -> &'static Critique {
        static PLACEBO: std::sync::LazyLock<Critique> = std::sync::LazyLock::new(|| Critique {
            score: 0.0,
            dimensions: BTreeMap::new(),
            issues: Vec::new(),
            fatal_issues: Vec::new(),
            issue_types: Vec::new(),
            suggestions: Vec::new(),
            critic_passed: None,
            rationale: Some(PLACEBO_INSTRUCTION.to_string()),
            unread_keys: Vec::new(),
        });
        &PLACEBO
    }

    /// Parses and validates a critic's JSON answer.
    ///
    /// When the critique has dimensions but no score, the score is their mean, weighted by
    /// `weights` when given (a dimension without a weight counts once).
    pub fn parse(
        json: &str,
        range: ScoreRange,
        weights: Option<&BTreeMap<String, f64>>,
    ) -> Result<Critique, CritiqueError> {
        let wire: WireCritique = serde_json::from_str(json).map_err(|e| CritiqueError::Json(e.to_string()))?;
        if let Some(version) = wire.critique_version
            && !(1..=CRITIQUE_VERSION).contains(&version)
        {
            return Err(CritiqueError::Version(version));
        }
        for (name, value) in &wire.dimensions {
            if !range.contains(*value) {
                return Err(CritiqueError::DimensionOutOfRange { name: name.clone(), value: *value, range });
            }
        }
        let score = match wire.score {
            Some(score) => score,
            None if wire.dimensions.is_empty() => return Err(CritiqueError::NoScore),
            None => weighted_mean(&wire.dimensions, weights),
        };
        if !range.contains(score) {
            return Err(CritiqueError::ScoreOutOfRange { score, range });
        }
        let mut issue_types = Vec::new();
        let fatal_issues = split_issues(wire.fatal_issues, &mut issue_types);
        let issues = split_issues(wire.issues, &mut issue_types);
        Ok(Critique {
            score,
            dimensions: wire.dimensions,
            issues,
            fatal_issues,
            issue_types,
            suggestions: wire.suggestions,
            critic_passed: wire.passed,
            rationale: wire.rationale,
            unread_keys: unread_keys(json),
        })
    }

    /// The conservative stand-in for a critique that could not be had: the lowest score, one
    /// issue saying so. It never passes a draft.
    pub fn unavailable(range: ScoreRange) -> Critique {
        Critique {
            score: range.min,
            dimensions: BTreeMap::new(),
            issues: vec![CRITIQUE_UNAVAILABLE.to_string()],
            fatal_issues: Vec::new(),
            issue_types: Vec::new(),
            suggestions: Vec::new(),
            critic_passed: None,
            rationale: None,
            unread_keys: Vec::new(),
        }
    }

    /// The suggestions as JSON text, as the output tables store them; `None` when there are none.
    pub fn suggestions_json(&self) -> Option<String> {
        (!self.suggestions.is_empty())
            .then(|| serde_json::to_string(&self.suggestions).expect("suggestions always serialize"))
    }

    /// What the policy reads of this critique; `failed` when it is the stand-in for a critic call
    /// that failed every attempt.
    pub fn round_score(&self, failed: bool) -> crate::RoundScore {
        crate::RoundScore::of(self.score, &self.dimensions, &self.fatal_issues, failed)
    }
}

/// The top-level keys of `json`, a critique already read, that are not [`CRITIQUE_KEYS`]. The
/// keys alone are read again (their values skipped): most answers have none to report.
fn unread_keys(json: &str) -> Vec<String> {
    key_names(&mut serde_json::Deserializer::from_str(json)).unwrap_or_default()
}

/// The keys of a JSON object that are not [`CRITIQUE_KEYS`], each once, values skipped.
fn key_names<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    struct Names;
    impl<'de> serde::de::Visitor<'de> for Names {
        type Value = Vec<String>;

        fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
            formatter.write_str("a critique object")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut unread: Vec<String> = Vec::new();
            while let Some(key) = access.next_key::<std::borrow::Cow<'de, str>>()? {
                access.next_value::<serde::de::IgnoredAny>()?;
                if !CRITIQUE_KEYS.contains(&key.as_ref()) && !unread.iter().any(|k| *k == key) {
                    unread.push(key.into_owned());
                }
            }
            Ok(unread)
        }
    }
    deserializer.deserialize_map(Names)
}

fn weighted_mean(dimensions: &BTreeMap<String, f64>, weights: Option<&BTreeMap<String, f64>>) -> f64 {
    let (mut total, mut weight_sum) = (0.0, 0.0);
    for (name, value) in dimensions {
        let weight = weights.and_then(|w| w.get(name)).copied().unwrap_or(1.0);
        total += weight * value;
        weight_sum += weight;
    }
    if weight_sum > 0.0 { total / weight_sum } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RANGE: ScoreRange = ScoreRange { min: 0.0, max: 10.0 };

    #[test]
    fn keys_critbench_does_not_read_are_kept_by_name_and_say_where_they_belong() {
        let read =
            Critique::parse(r#"{"score": 3, "issues": [{"text": "t", "type": "x"}], "passed": false}"#, RANGE, None);
        assert!(read.unwrap().unread_keys.is_empty());
        let json = r#"{"score": 3, "issue_types": ["missing_evidence"], "notes": {"a": [1, 2]}, "issues": ["a"],
                       "issue_types_again": null}"#;
        let critique = Critique::parse(json, RANGE, None).unwrap();
        assert_eq!(critique.unread_keys, ["issue_types", "notes", "issue_types_again"]);
        assert!(critique.issue_types.is_empty(), "a top-level list of types is not read as the issues' types");
        assert!(unread_key_hint("issue_types").contains("`issues` entries `{\"text\", \"type\"}`"));
        assert_eq!(unread_key_hint("explanation"), "perhaps `rationale`");
        assert!(unread_key_hint("notes").starts_with("critbench reads only `critique_version`, `score`"));
        // The keys are read once more only to be named: a critique that is not an object fails as before.
        assert!(Critique::parse("[1]", RANGE, None).is_err());
    }

    #[test]
    fn a_critique_version_this_crate_does_not_read_is_refused() {
        assert_eq!(Critique::parse(r#"{"critique_version": 1, "score": 3}"#, RANGE, None).unwrap().score, 3.0);
        let error = Critique::parse(r#"{"critique_version": 2, "score": 3}"#, RANGE, None).unwrap_err();
        assert_eq!(error, CritiqueError::Version(2));
        assert!(error.to_string().contains("critique_version 2 is not one this critbench reads (1 to 1)"));
        assert_eq!(
            Critique::parse(r#"{"critique_version": 0, "score": 3}"#, RANGE, None),
            Err(CritiqueError::Version(0))
        );
    }

    #[test]
    fn a_field_or_a_dimension_given_twice_is_refused() {
        let error = Critique::parse(r#"{"score": 1, "score": 9}"#, RANGE, None).unwrap_err();
        assert!(error.to_string().contains("duplicate field `score`"), "{error}");
        let error = Critique::parse(r#"{"dimensions": {"clarity": 8, "clarity": 2}}"#, RANGE, None).unwrap_err();
        assert!(error.to_string().contains("dimension `clarity` appears twice"), "{error}");
        let c = Critique::parse(r#"{"dimensions": {"clarity": 8, "evidence": 2}}"#, RANGE, None).unwrap();
        assert_eq!(c.score, 5.0);
    }

    #[test]
    fn score_is_taken_as_given() {
        let c = Critique::parse(r#"{"score": 7.5, "issues": ["thin"], "passed": true}"#, RANGE, None).unwrap();
        assert_eq!(c.score, 7.5);
        assert_eq!(c.issues, ["thin"]);
        assert_eq!(c.critic_passed, Some(true));
    }

    #[test]
    fn issues_may_carry_types() {
        let c = Critique::parse(
            r#"{"score": 3, "issues": ["plain", {"text": "no ids", "type": "missing_evidence"}, {"text": "again", "type": "missing_evidence"}],
                "fatal_issues": [{"text": "bad id d9", "type": "unknown_evidence_id"}]}"#,
            RANGE,
            None,
        )
        .unwrap();
        assert_eq!(c.issues, ["plain", "no ids", "again"]);
        assert_eq!(c.fatal_issues, ["bad id d9"]);
        assert_eq!(c.issue_types, ["unknown_evidence_id", "missing_evidence"]);
        assert!(matches!(
            Critique::parse(r#"{"score": 3, "issues": [{"type": "x"}]}"#, RANGE, None),
            Err(CritiqueError::Json(message)) if message.contains("missing field `text`")
        ));
        for bad in [r#"[7]"#, r#"[["nested"]]"#, r#"[null]"#, r#"[true]"#] {
            let json = format!(r#"{{"score": 3, "fatal_issues": {bad}}}"#);
            let error = Critique::parse(&json, RANGE, None).unwrap_err().to_string();
            assert!(error.contains("expected an issue: a string, or an object with `text`"), "{bad}: {error}");
        }
        let c = Critique::parse(
            r#"{"score": 3, "issues": [{"text": "a", "type": null}, {"type": "t", "text": "b\n"}]}"#,
            RANGE,
            None,
        )
        .unwrap();
        assert_eq!((c.issues, c.issue_types), (vec!["a".to_string(), "b\n".to_string()], vec!["t".to_string()]));
        let error =
            Critique::parse(r#"{"score": 3, "issues": [{"text": "a", "text": "b"}]}"#, RANGE, None).unwrap_err();
        assert!(error.to_string().contains("duplicate field `text`"), "{error}");
    }

    #[test]
    fn missing_score_is_the_mean_of_dimensions() {
        let c = Critique::parse(r#"{"dimensions": {"a": 4, "b": 8}}"#, RANGE, None).unwrap();
        assert_eq!(c.score, 6.0);
        let weights = BTreeMap::from([("b".to_string(), 3.0)]);
        let c = Critique::parse(r#"{"dimensions": {"a": 4, "b": 8}}"#, RANGE, Some(&weights)).unwrap();
        assert_eq!(c.score, 7.0);
        assert_eq!(c.round_score(false).min_dimension, Some(4.0));
    }

    #[test]
    fn out_of_range_and_malformed_critiques_are_errors() {
        assert!(matches!(Critique::parse(r#"{"score": 11}"#, RANGE, None), Err(CritiqueError::ScoreOutOfRange { .. })));
        assert!(matches!(
            Critique::parse(r#"{"score": 5, "dimensions": {"x": -1}}"#, RANGE, None),
            Err(CritiqueError::DimensionOutOfRange { .. })
        ));
        assert_eq!(Critique::parse(r#"{"issues": []}"#, RANGE, None), Err(CritiqueError::NoScore));
        assert!(matches!(Critique::parse("not json", RANGE, None), Err(CritiqueError::Json(_))));
        assert!(matches!(Critique::parse(r#"{"score": "8"}"#, RANGE, None), Err(CritiqueError::Json(_))));
    }

    #[test]
    fn unavailable_critique_is_the_range_minimum() {
        let c = Critique::unavailable(ScoreRange { min: 1.0, max: 10.0 });
        assert_eq!(c.score, 1.0);
        assert_eq!(c.issues, [CRITIQUE_UNAVAILABLE]);
    }
}
