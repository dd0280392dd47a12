//! Tasks (one dataset row) and arms (the loop variants compared on them).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Drafting;

/// One task: what to write, and what the offline backends and critics may need (docs/REFERENCE.md, Dataset).
///
/// `critiques` and `meta` are only ever passed on (to critics, to the outputs), so they stay JSON
/// text rather than trees: nothing is rebuilt from them, copied out of them or freed node by node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Unique id within the run's datasets.
    pub id: String,
    /// What the writer is asked to write.
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The task's kind (`paper`, `rag`, …); critics may take only some kinds.
    pub kind: Option<String>,
    /// Source material for the writer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Evidence pool: id → text. Ordered so every reader sees the same order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evidence: BTreeMap<String, String>,
    /// Drafts for the `scripted` backend; round k uses `drafts[min(k, len - 1)]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drafts: Vec<String>,
    /// Independent first drafts for the `resample` arm on the `scripted` backend, beside
    /// `drafts[0]`: a resampled round k (k ≥ 1) uses `samples[k - 1]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<String>,
    /// Critiques for the `scripted` critic, one JSON list of objects (never an empty one); round k
    /// uses `critiques[min(k, len - 1)]`.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_empty_list")]
    pub critiques: Option<JsonText>,
    /// Gold labels for critic benchmarking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Value>,
    /// Anything else, a JSON object; carried to the outputs as this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonText>,
}

impl Task {
    /// The scripted draft for round `round`, if the task has any.
    pub fn scripted_draft(&self, round: usize) -> Option<&str> {
        let last = self.drafts.len().checked_sub(1)?;
        Some(&self.drafts[round.min(last)])
    }

    /// A number from `meta` (e.g. `meta.difficulty`), if present.
    pub fn meta_number(&self, key: &str) -> Option<f64> {
        serde_json::from_str(self.meta.as_ref()?.member(key)?).ok()
    }

    /// A string from `meta` (e.g. `meta.format`), if present: borrowed from the text unless it
    /// holds an escape.
    pub fn meta_str(&self, key: &str) -> Option<Cow<'_, str>> {
        let member = self.meta.as_ref()?.member(key)?;
        let inner = member.strip_prefix('"')?.strip_suffix('"')?;
        if inner.contains('\\') {
            serde_json::from_str::<String>(member).ok().map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(inner))
        }
    }
}

/// JSON text exactly as serde_json writes the value it holds: compact, every object's keys in
/// order and given once, numbers and escapes as serde_json spells them. Text in that one form is
/// what critics are sent and what the outputs carry, whatever spacing or key order the dataset
/// used (docs/FORMAT.md).
#[derive(Clone, PartialEq, Eq)]
pub struct JsonText(String);

impl JsonText {
    /// The text of `value`.
    pub fn from_value(value: &Value) -> JsonText {
        JsonText(value.to_string())
    }

    /// Takes text already in serde_json's form, e.g. written by a reader that transcodes as it
    /// parses (the dataset reader's). Text in any other form would reach critics and outputs as it
    /// is: the caller vouches for it (checked in debug builds).
    pub fn from_serde_json_text(text: String) -> JsonText {
        debug_assert_eq!(
            serde_json::from_str::<Value>(&text).map(|value| value.to_string()).ok().as_deref(),
            Some(text.as_str()),
            "not serde_json's form of a value"
        );
        JsonText(text)
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value, parsed.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.0).expect("JSON text holds JSON")
    }

    /// The text of member `key`, if this is an object that has one.
    pub fn member(&self, key: &str) -> Option<&str> {
        use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
        use serde_json::value::RawValue;

        /// Walks the object's keys without keeping them, and the values without building them.
        struct Member<'k>(&'k str);
        impl<'de> Visitor<'de> for Member<'_> {
            type Value = Option<&'de RawValue>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut member = None;
                while let Some(found) = map.next_key_seed(IsKey(self.0))? {
                    if found {
                        member = Some(map.next_value()?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(member)
            }
        }
        /// Whether a key is the one asked for (escaped or not).
        struct IsKey<'k>(&'k str);
        impl<'de> DeserializeSeed<'de> for IsKey<'_> {
            type Value = bool;
            fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
                deserializer.deserialize_str(self)
            }
        }
        impl<'de> Visitor<'de> for IsKey<'_> {
            type Value = bool;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E>(self, key: &str) -> Result<bool, E> {
                Ok(key == self.0)
            }
        }
        let mut deserializer = serde_json::Deserializer::from_str(&self.0);
        deserializer.deserialize_map(Member(key)).ok().flatten().map(RawValue::get)
    }
}

/// An empty list is no list: a task has critiques or has none.
fn non_empty_list<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<JsonText>, D::Error> {
    Ok(Option::<JsonText>::deserialize(deserializer)?.filter(|list| list.0 != "[]"))
}

impl<'de> Deserialize<'de> for JsonText {
    /// Through a [`Value`], so the text is in serde_json's form whatever the input's.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<JsonText, D::Error> {
        Value::deserialize(deserializer).map(|value| JsonText::from_value(&value))
    }
}

impl fmt::Display for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for JsonText {
    /// As the value itself (verbatim in serde_json), not as a string holding it.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &serde_json::value::RawValue = serde_json::from_str(&self.0).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

/// A loop variant. Every arm of a task uses the same seed, so arms are paired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arm {
    /// The reviser sees the steering critic's critique.
    Feedback,
    /// The reviser improves the draft without seeing the critique.
    NoFeedback,
    /// Round 0 only.
    Single,
    /// Feedback, plus strategy hints learned from earlier tasks given to the writer from round 0.
    FeedbackMemory,
    /// The reviser gets [`Critique::placebo`](crate::Critique::placebo) in place of the critique:
    /// its shape with no content, the same for every task. Against `feedback` it asks whether the
    /// critique's content matters, or only the "try again".
    Placebo,
    /// Every round is a fresh first draft (the generator with the round's seed, shown no draft
    /// and no critique), scored by the critic and stopped by the policy on a pass or at its cap
    /// (stall and plateau do not apply to independent draws, see [`Drafting`]); with the
    /// default `final = "best"` its answer is the best-scored draft: best-of-N with the critic as
    /// selector and early stop. Against `feedback` it asks whether revising beats sampling again.
    Resample,
    /// `feedback`'s loop (the steering critic scores every round and the policy stops it), but the
    /// reviser is shown the oracle's critique of the draft in place of the critic's: a critique by
    /// one who knows what is really wrong with it (the simulator's hidden truth, or a held-out
    /// evaluator the experiment names). Against `feedback` it asks what a perfect critique would add.
    Oracle,
}

/// What an arm's reviser is shown after a round's critique ([`Arm::reviser_sees`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// The steering critic's critique.
    Critique,
    /// [`Critique::placebo`](crate::Critique::placebo) in its place.
    Placebo,
    /// The oracle's critique of the draft in its place, which the loop asks of whoever plays the
    /// oracle: nothing about the arm can produce it.
    Oracle,
    /// Nothing: the reviser revises blind, or the arm never revises (`single`, `resample`).
    Nothing,
}

impl Arm {
    /// Every arm, in the order of the output contract.
    pub const ALL: [Arm; 7] =
        [Arm::Feedback, Arm::NoFeedback, Arm::Single, Arm::FeedbackMemory, Arm::Placebo, Arm::Resample, Arm::Oracle];
    /// The arms an experiment runs when it names none.
    pub const DEFAULT: [Arm; 3] = [Arm::Feedback, Arm::NoFeedback, Arm::Single];

    /// The arm as the output and the experiment file spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Arm::Feedback => "feedback",
            Arm::NoFeedback => "no-feedback",
            Arm::Single => "single",
            Arm::FeedbackMemory => "feedback+memory",
            Arm::Placebo => "placebo",
            Arm::Resample => "resample",
            Arm::Oracle => "oracle",
        }
    }

    /// Reads an arm as the experiment file spells it.
    pub fn parse(text: &str) -> Option<Arm> {
        Arm::ALL.into_iter().find(|arm| arm.as_str() == text)
    }

    /// Whether the reviser is shown the steering critic's critique.
    pub fn shows_critique(self) -> bool {
        self.reviser_sees() == Shown::Critique
    }

    /// What the reviser is shown after a round's critique: the steering critic's critique, the
    /// placebo or the oracle's critique in its place, or nothing.
    pub fn reviser_sees(self) -> Shown {
        match self {
            Arm::Feedback | Arm::FeedbackMemory => Shown::Critique,
            Arm::Placebo => Shown::Placebo,
            Arm::Oracle => Shown::Oracle,
            Arm::NoFeedback | Arm::Single | Arm::Resample => Shown::Nothing,
        }
    }

    /// Whether each round after the first is a fresh first draft rather than a revision.
    pub fn resamples(self) -> bool {
        self == Arm::Resample
    }

    /// How the arm's rounds follow one another, for the decision rule: independent draws for
    /// `resample` (stall and plateau do not apply), revisions for every other arm.
    pub fn drafting(self) -> Drafting {
        if self.resamples() { Drafting::IndependentDraws } else { Drafting::Revisions }
    }

    /// Whether the writer gets strategy hints from memory before the first draft.
    pub fn uses_memory(self) -> bool {
        self == Arm::FeedbackMemory
    }
}

impl fmt::Display for Arm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripted_draft_repeats_the_last_one() {
        let task = Task { drafts: vec!["a".into(), "b".into()], ..Task::default() };
        assert_eq!(task.scripted_draft(0), Some("a"));
        assert_eq!(task.scripted_draft(1), Some("b"));
        assert_eq!(task.scripted_draft(9), Some("b"));
        assert_eq!(Task::default().scripted_draft(0), None);
    }

    #[test]
    fn meta_is_read_from_its_text() {
        let meta = serde_json::json!({"difficulty": 0.25, "n": 3, "topic": "tides", "quoted": "a \"b\"", "nested": {"topic": "x"}});
        let task = Task { meta: Some(JsonText::from_value(&meta)), ..Task::default() };
        assert_eq!(task.meta_number("difficulty"), Some(0.25));
        assert_eq!(task.meta_number("n"), Some(3.0));
        assert_eq!(task.meta_number("topic"), None, "a string is not a number");
        assert!(matches!(task.meta_str("topic"), Some(Cow::Borrowed("tides"))), "borrowed when it can be");
        assert_eq!(task.meta_str("quoted").as_deref(), Some("a \"b\""));
        assert_eq!(task.meta_str("n"), None, "a number is not a string");
        assert_eq!(task.meta_str("missing"), None);
        assert_eq!(task.meta.as_ref().unwrap().member("nested"), Some(r#"{"topic":"x"}"#));
        assert_eq!(Task::default().meta_str("topic"), None);
        assert_eq!(JsonText::from_value(&serde_json::json!([1])).member("topic"), None, "a list has no members");
    }

    #[test]
    fn json_text_serializes_as_the_value_it_holds() {
        let task = Task {
            id: "t".into(),
            critiques: Some(JsonText::from_value(&serde_json::json!([{"score": 5}]))),
            ..Task::default()
        };
        let text = serde_json::to_string(&task).unwrap();
        assert_eq!(text, r#"{"id":"t","prompt":"","critiques":[{"score":5}]}"#);
        let read: Task =
            serde_json::from_str(r#"{"id":"t","prompt":"","critiques":[ ],"meta":{"b":1, "a":2}}"#).unwrap();
        assert_eq!(read.critiques, None, "an empty list is no critiques");
        assert_eq!(read.meta.unwrap().as_str(), r#"{"a":2,"b":1}"#);
    }

    #[test]
    fn arms_round_trip_through_text() {
        for arm in Arm::ALL {
            assert_eq!(Arm::parse(arm.as_str()), Some(arm));
        }
        assert_eq!(Arm::parse("blind"), None);
    }

    #[test]
    fn only_feedback_and_memory_show_the_steering_critics_critique() {
        let shown: Vec<(Arm, Shown)> = Arm::ALL.into_iter().map(|arm| (arm, arm.reviser_sees())).collect();
        assert_eq!(
            shown,
            [
                (Arm::Feedback, Shown::Critique),
                (Arm::NoFeedback, Shown::Nothing),
                (Arm::Single, Shown::Nothing),
                (Arm::FeedbackMemory, Shown::Critique),
                (Arm::Placebo, Shown::Placebo),
                (Arm::Resample, Shown::Nothing),
                (Arm::Oracle, Shown::Oracle),
            ]
        );
        let shows: Vec<Arm> = Arm::ALL.into_iter().filter(|arm| arm.shows_critique()).collect();
        assert_eq!(shows, [Arm::Feedback, Arm::FeedbackMemory]);
        // The oracle's loop is feedback's: revisions, no memory, the critic's policy.
        assert_eq!(
            (Arm::Oracle.drafting(), Arm::Oracle.resamples(), Arm::Oracle.uses_memory()),
            (Drafting::Revisions, false, false)
        );
    }
}
