//! The `evidence` critic: a rule-based checker for answers grounded in an evidence pool.
//!
//! The draft is either the JSON object `{"answer": "...", "evidence_ids": ["d1"]}` or
//! prose citing passages in brackets (`... as measured [d1].`, `[d1, d3]`). The pool is the
//! task's `evidence` (id → text); the question is its `prompt`.
//!
//! Fatal issues (the loop may not pass while any remains):
//! - a draft that looks like JSON but does not parse, or lacks a string `answer`;
//! - an empty answer;
//! - a cited id that is not in the pool (an invented source), named in the issue.
//!
//! Otherwise the score (0–10) adds three parts:
//! - support, up to 6: the share of the answer's content words found in the cited passages
//!   (40% or less scores 0, 90% or more scores 6);
//! - length, up to 2: eight content words or more score full marks;
//! - relevance, 2 when every cited passage addresses the question (shares at least two
//!   content words with it), −1 when any does not.
//!
//! No evidence ids at all is an ordinary issue ("missing evidence ids") with a score of at most
//! 2, and when none of the cited passages addresses the question the score is capped at 4. A
//! quoted, well-cited answer scores 10. Each issue comes with a suggestion whose `target` is
//! `evidence_ids` or `answer`. Every issue is `{"text", "type"}`, the type one of
//! `invalid_draft`, `empty_answer`, `unknown_evidence_id` (fatal), `missing_evidence`,
//! `answer_too_short`, `off_topic_evidence`, `unsupported_answer`. Config: `{}`.
//!
//! **Gold mode** (`config = {"gold_labels": true}`), for a held-out evaluator: the critique reads
//! the task's gold `labels` — `relevant`, the ids of the passages that answer the question, and
//! `answerable` — which only an evaluator's request carries (a critic never sees labels; without
//! them every critique is an error). The score is 10 × the share of the relevant passages the
//! answer cites, and the critique passes when the answer cites at least one of them; a question
//! the pool cannot answer (no relevant passage, or `answerable = false`) scores 10 when the answer
//! cites nothing and 0 when it cites something. Cited passages that are not relevant are named as
//! issues (`irrelevant_evidence`), a relevant one left out as `missing_relevant_evidence`. This
//! checks what the rule-based critic cannot: that the ids it accepts as known actually answer the
//! question.
//!
//! ```
//! use critbench_abi::{CriticPlugin, Host};
//! use critbench_evidence::EvidenceCritic;
//!
//! let critic = EvidenceCritic::create("{}", Host::none()).unwrap();
//! let request = r#"{"task": {"id": "t", "prompt": "What does RAG add?",
//!                            "evidence": {"d1": "RAG adds retrieved sources to generation."}},
//!                   "draft": "{\"answer\": \"RAG adds retrieved sources.\", \"evidence_ids\": [\"d9\"]}",
//!                   "round": 0}"#;
//! let critique: serde_json::Value = serde_json::from_str(&critic.critique(request).unwrap()).unwrap();
//! let fatal = &critique["fatal_issues"][0];
//! assert!(fatal["text"].as_str().unwrap().contains("`d9`"));
//! assert_eq!(fatal["type"], "unknown_evidence_id");
//! ```

#![warn(missing_docs)]

use std::collections::{BTreeMap, BTreeSet};

use critbench_abi::{CriticError, CriticPlugin, Host, Request};
use serde_json::{Value, json};

/// The evidence critic; `gold` is gold mode (see the crate's docs).
#[derive(Debug)]
pub struct EvidenceCritic {
    gold: bool,
}

impl CriticPlugin for EvidenceCritic {
    const NAME: &'static str = "evidence";
    const VERSION: &'static str = "1.0.0";
    const SCORE_MIN: f64 = 0.0;
    const SCORE_MAX: f64 = 10.0;
    const THREAD_SAFE: bool = true;
    const INFO: &'static str = r#"{
        "info_version": 1,
        "issue_types": [
            {"name": "missing_evidence", "hint": "List the evidence first, then answer: cite the ids of the passages you use."},
            {"name": "unknown_evidence_id", "hint": "Cite only evidence ids that are in the pool you were given."},
            {"name": "empty_answer", "hint": "Always write an answer to the question."},
            {"name": "answer_too_short", "hint": "Answer with the specific facts the evidence gives, not a one-liner."},
            {"name": "unsupported_answer", "hint": "Say only what the cited evidence says."},
            {"name": "off_topic_evidence", "hint": "Cite only passages that address the question."},
            {"name": "invalid_draft", "hint": "Answer with a JSON object with `answer` and `evidence_ids`."},
            {"name": "irrelevant_evidence", "hint": "Cite only the passages that answer the question."},
            {"name": "missing_relevant_evidence", "hint": "Cite every passage that answers the question."}
        ]
    }"#;

    fn create(config: &str, _host: Host) -> Result<Self, CriticError> {
        let config = config.trim();
        if config.is_empty() {
            return Ok(EvidenceCritic { gold: false });
        }
        match serde_json::from_str::<Value>(config).map_err(EvidenceError::ConfigNotJson)? {
            Value::Null => Ok(EvidenceCritic { gold: false }),
            Value::Object(entries) => {
                let mut gold = false;
                for (key, value) in &entries {
                    match (key.as_str(), value) {
                        ("gold_labels", Value::Bool(on)) => gold = *on,
                        ("gold_labels", other) => return Err(EvidenceError::GoldLabelsNotABool(other.clone()).into()),
                        (key, _) => return Err(EvidenceError::UnknownKey(key.to_string()).into()),
                    }
                }
                Ok(EvidenceCritic { gold })
            }
            other => Err(EvidenceError::ConfigNotAnObject(other).into()),
        }
    }

    fn critique(&self, request: &str) -> Result<String, CriticError> {
        if self.gold {
            let request: Value = serde_json::from_str(request).map_err(EvidenceError::MalformedRequest)?;
            let draft = request["draft"].as_str().ok_or(EvidenceError::NoDraft)?;
            return Ok(check_against_gold(&request["task"]["labels"], draft)?.to_string());
        }
        let request: Request = serde_json::from_str(request).map_err(EvidenceError::MalformedRequest)?;
        Ok(check(&request.task.prompt, &request.task.evidence, &request.draft).to_string())
    }
}

/// Why the critic refuses its config or a request (its text is what the host records).
#[derive(Debug, thiserror::Error)]
enum EvidenceError {
    /// The config does not parse.
    #[error("evidence config is not valid JSON: {0}")]
    ConfigNotJson(#[source] serde_json::Error),
    /// The config is JSON but not an object.
    #[error("evidence config must be a JSON object, got {0}")]
    ConfigNotAnObject(Value),
    /// `gold_labels` is not a boolean.
    #[error("evidence config: `gold_labels` must be true or false, got {0}")]
    GoldLabelsNotABool(Value),
    /// A config key other than `gold_labels`.
    #[error("evidence config has an unknown key `{0}` (the evidence critic takes only `gold_labels`)")]
    UnknownKey(String),
    /// The request does not parse.
    #[error("evidence: malformed critique request: {0}")]
    MalformedRequest(#[source] serde_json::Error),
    /// A gold-mode request without a string `draft`.
    #[error("evidence: the request has no string `draft`")]
    NoDraft,
    /// Gold mode on a task without `labels.relevant`.
    #[error(
        "evidence (gold_labels): the task has no `labels.relevant` list; gold mode is for a held-out evaluator on \
         tasks labelled with the passages that answer them (a critic never sees labels)"
    )]
    NoRelevantLabels,
}

/// A draft as the critic reads it.
enum Draft {
    Answer { answer: String, ids: Vec<String> },
    Invalid(String),
}

/// Support below this share of content words is reported as an issue.
const WELL_SUPPORTED: f64 = 0.8;
/// Content words an answer needs for full length marks, and below which it is "too short".
const FULL_LENGTH_WORDS: usize = 8;
const SHORT_WORDS: usize = 5;

/// The critique of `draft` as an answer to `question` from `pool`.
fn check(question: &str, pool: &BTreeMap<String, String>, draft: &str) -> Value {
    let (answer, ids) = match read_draft(draft) {
        Draft::Invalid(reason) => return critique(0.0, vec![typed(reason, "invalid_draft")], Vec::new(), Vec::new()),
        Draft::Answer { answer, ids } => (answer, ids),
    };
    let answer_words = content_words(&answer);
    if answer_words.is_empty() && !answer.chars().any(char::is_alphanumeric) {
        let suggestion = json!({"target": "answer", "edit": "Write an answer to the question from the evidence."});
        return critique(0.0, vec![typed("empty answer".to_string(), "empty_answer")], Vec::new(), vec![suggestion]);
    }

    let mut fatal_issues = Vec::new();
    let mut issues = Vec::new();
    let mut suggestions = Vec::new();
    let known_ids = pool.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
    let (known, unknown): (Vec<&String>, Vec<&String>) = ids.iter().partition(|id| pool.contains_key(*id));
    for id in &unknown {
        fatal_issues.push(typed(
            format!("unknown evidence id `{id}`: not in the task's evidence ({known_ids})"),
            "unknown_evidence_id",
        ));
        suggestions.push(json!({
            "target": "evidence_ids",
            "edit": format!("Remove `{id}`: cite only ids from the evidence pool ({known_ids}).")
        }));
    }

    let length_points = 2.0 * (answer_words.len() as f64 / FULL_LENGTH_WORDS as f64).min(1.0);
    if answer_words.len() < SHORT_WORDS {
        issues.push(typed(format!("answer too short: {} content words", answer_words.len()), "answer_too_short"));
        suggestions.push(json!({
            "target": "answer",
            "edit": "Expand the answer with the specific facts the evidence gives."
        }));
    }

    if known.is_empty() {
        let score = if unknown.is_empty() {
            issues.push(typed("missing evidence ids: the answer cites no evidence".to_string(), "missing_evidence"));
            let closest = closest_passage(&answer_words, pool);
            let hint = closest.map(|id| format!(" (closest to the answer: {id})")).unwrap_or_default();
            suggestions.push(json!({
                "target": "evidence_ids",
                "edit": format!("Cite the evidence the answer relies on{hint}.")
            }));
            1.0 + 0.5 * length_points
        } else {
            1.0
        };
        return critique(score, fatal_issues, issues, suggestions);
    }

    let question_words = content_words(question);
    let needed = question_words.len().min(2);
    let mut cited_words = BTreeSet::new();
    let mut off_topic = Vec::new();
    for id in &known {
        let passage = content_words(&pool[id.as_str()]);
        if passage.intersection(&question_words).count() < needed {
            off_topic.push(id.as_str());
        }
        cited_words.extend(passage);
    }
    for id in &off_topic {
        issues.push(typed(format!("`{id}` does not address the question"), "off_topic_evidence"));
        suggestions.push(json!({
            "target": "evidence_ids",
            "edit": format!("Drop `{id}` or replace it with a passage about the question.")
        }));
    }
    let relevance_points = if off_topic.is_empty() { 2.0 } else { -1.0 };

    let supported = answer_words.intersection(&cited_words).count();
    let support = if answer_words.is_empty() { 0.0 } else { supported as f64 / answer_words.len() as f64 };
    let support_points = 6.0 * ((support - 0.4) / 0.5).clamp(0.0, 1.0);
    if support < WELL_SUPPORTED {
        issues.push(typed(
            format!(
                "answer weakly supported: {supported} of {} content words appear in the cited evidence",
                answer_words.len()
            ),
            "unsupported_answer",
        ));
        let cited: Vec<&str> = known.iter().map(|id| id.as_str()).collect();
        suggestions.push(json!({
            "target": "answer",
            "edit": format!("Rewrite the answer from the cited evidence ({}); drop claims it does not make.", cited.join(", "))
        }));
    }

    let mut score = support_points + length_points + relevance_points;
    if off_topic.len() == known.len() {
        issues.push(typed("none of the cited evidence addresses the question".to_string(), "off_topic_evidence"));
        score = score.min(4.0);
    }
    if !unknown.is_empty() {
        score = score.min(3.0);
    }
    critique(score, fatal_issues, issues, suggestions)
}

/// The gold-mode critique of `draft`: which of the passages `labels.relevant` names it cites.
fn check_against_gold(labels: &Value, draft: &str) -> Result<Value, EvidenceError> {
    let Some(relevant) = labels.get("relevant").and_then(Value::as_array) else {
        return Err(EvidenceError::NoRelevantLabels);
    };
    let relevant: BTreeSet<&str> = relevant.iter().filter_map(Value::as_str).collect();
    let answerable = labels.get("answerable").and_then(Value::as_bool).unwrap_or(true) && !relevant.is_empty();
    let ids = match read_draft(draft) {
        Draft::Invalid(reason) => return Ok(gold_critique(0.0, false, vec![typed(reason, "invalid_draft")])),
        Draft::Answer { ids, .. } => ids,
    };
    if !answerable {
        return Ok(if ids.is_empty() {
            gold_critique(10.0, true, Vec::new())
        } else {
            let issue = format!("the pool cannot answer the question, but the answer cites {}", ids.join(", "));
            gold_critique(0.0, false, vec![typed(issue, "irrelevant_evidence")])
        });
    }
    let cited: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    let hits = relevant.intersection(&cited).count();
    let mut issues: Vec<Value> = cited
        .difference(&relevant)
        .map(|id| typed(format!("`{id}` does not answer the question"), "irrelevant_evidence"))
        .collect();
    issues.extend(
        relevant
            .difference(&cited)
            .map(|id| typed(format!("`{id}` answers the question but is not cited"), "missing_relevant_evidence")),
    );
    Ok(gold_critique(10.0 * hits as f64 / relevant.len() as f64, hits > 0, issues))
}

fn gold_critique(score: f64, passed: bool, issues: Vec<Value>) -> Value {
    let score = (score * 100.0).round() / 100.0;
    json!({
        "score": score,
        "passed": passed,
        "issues": issues,
        "fatal_issues": [],
        "rationale": if passed { "cites gold-relevant evidence" } else { "cites no gold-relevant evidence" },
    })
}

/// An issue with its machine-readable type, as the critique carries it (`{"text", "type"}`).
fn typed(text: String, issue_type: &str) -> Value {
    json!({ "text": text, "type": issue_type })
}

fn critique(score: f64, fatal_issues: Vec<Value>, issues: Vec<Value>, suggestions: Vec<Value>) -> Value {
    let score = (score.clamp(0.0, 10.0) * 100.0).round() / 100.0;
    let rationale = if fatal_issues.is_empty() && issues.is_empty() {
        "every cited id is in the pool and the answer is supported by the cited evidence".to_string()
    } else {
        format!("{} fatal issue(s), {} issue(s)", fatal_issues.len(), issues.len())
    };
    json!({
        "score": score,
        "passed": fatal_issues.is_empty() && issues.is_empty(),
        "issues": issues,
        "fatal_issues": fatal_issues,
        "suggestions": suggestions,
        "rationale": rationale,
    })
}

/// Reads a JSON-object draft or a prose draft with bracketed citations.
fn read_draft(draft: &str) -> Draft {
    let body = strip_code_fence(draft.trim());
    // A leading `[` is JSON only if it parses: prose may open with a citation.
    let json_list = body.starts_with('[').then(|| serde_json::from_str::<Value>(body).ok()).flatten();
    if body.starts_with('{') || json_list.is_some() {
        let value = match json_list.map_or_else(|| serde_json::from_str::<Value>(body), Ok) {
            Ok(value) => value,
            Err(e) => return Draft::Invalid(format!("invalid draft: looks like JSON but does not parse ({e})")),
        };
        let Value::Object(object) = value else {
            return Draft::Invalid(
                "invalid draft: JSON must be an object with `answer` and `evidence_ids`".to_string(),
            );
        };
        let Some(answer) = object.get("answer").and_then(Value::as_str) else {
            return Draft::Invalid("invalid draft: JSON has no string `answer` field".to_string());
        };
        let ids = match object.get("evidence_ids") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let ids: Option<Vec<String>> = items.iter().map(|item| item.as_str().map(str::to_string)).collect();
                match ids {
                    Some(ids) => ids,
                    None => {
                        return Draft::Invalid("invalid draft: `evidence_ids` must be a list of strings".to_string());
                    }
                }
            }
            Some(_) => return Draft::Invalid("invalid draft: `evidence_ids` must be a list of strings".to_string()),
        };
        return Draft::Answer { answer: answer.trim().to_string(), ids: dedup(ids) };
    }
    let (answer, ids) = strip_citations(body);
    Draft::Answer { answer, ids: dedup(ids) }
}

fn dedup(ids: Vec<String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    ids.into_iter().filter(|id| seen.insert(id.clone())).collect()
}

/// The text inside a fenced code block (```` ```json ... ``` ````), or the text itself.
fn strip_code_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else { return text };
    let rest = rest.split_once('\n').map_or("", |(_, body)| body);
    rest.trim_end().strip_suffix("```").unwrap_or(rest).trim()
}

/// Prose without its citation marks, and the ids cited. A bracket counts as a citation when it
/// holds a comma-separated list of id-like tokens that each contain a digit (`[d1]`, `[d1, d3]`,
/// `[12]`) and is not a markdown link (`[text](url)`).
fn strip_citations(text: &str) -> (String, Vec<String>) {
    let mut plain = String::with_capacity(text.len());
    let mut ids = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        plain.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let citation = after.find(']').filter(|close| {
            let inside = &after[..*close];
            let is_link = after[*close + 1..].starts_with('(');
            !is_link && !inside.trim().is_empty() && inside.split(',').all(|id| is_citation_id(id.trim()))
        });
        match citation {
            Some(close) => {
                ids.extend(after[..close].split(',').map(|id| id.trim().to_string()));
                rest = &after[close + 1..];
            }
            None => {
                plain.push('[');
                rest = after;
            }
        }
    }
    plain.push_str(rest);
    let answer = plain
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ");
    // "dance [d1]." leaves "dance ." behind.
    let answer =
        [".", ",", ";", ":", "!", "?"].iter().fold(answer, |text, mark| text.replace(&format!(" {mark}"), mark));
    (answer, ids)
}

fn is_citation_id(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= 40
        && token.chars().any(|c| c.is_ascii_digit())
        && token.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
}

/// The pool passage sharing most content words with the answer, if any shares one.
fn closest_passage<'a>(answer_words: &BTreeSet<String>, pool: &'a BTreeMap<String, String>) -> Option<&'a str> {
    pool.iter()
        .map(|(id, text)| (content_words(text).intersection(answer_words).count(), id))
        .filter(|(shared, _)| *shared > 0)
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, id)| id.as_str())
}

/// The words that carry meaning: lowercase alphanumeric runs of three or more characters,
/// without stopwords, with a plural `s` trimmed so "tides" matches "tide".
fn content_words(text: &str) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    for raw in text.split(|c: char| !c.is_alphanumeric()) {
        if raw.chars().count() < 3 {
            continue;
        }
        let mut word = raw.to_lowercase();
        if STOPWORDS.binary_search(&word.as_str()).is_ok() {
            continue;
        }
        if word.len() > 4 && word.ends_with('s') && !word.ends_with("ss") {
            word.pop();
        }
        words.insert(word);
    }
    words
}

/// Words too common to say what a text is about, sorted for binary search.
const STOPWORDS: [&str; 119] = [
    "about", "above", "across", "after", "again", "against", "all", "almost", "along", "also", "among", "and",
    "another", "any", "are", "around", "because", "been", "before", "being", "below", "between", "both", "but", "can",
    "could", "did", "does", "doing", "done", "down", "during", "each", "even", "ever", "every", "for", "from", "had",
    "has", "have", "having", "her", "here", "hers", "him", "his", "how", "into", "its", "itself", "just", "many",
    "may", "might", "more", "most", "mostly", "much", "must", "nor", "not", "off", "often", "one", "only", "onto",
    "other", "our", "ours", "out", "over", "per", "shall", "she", "should", "some", "still", "such", "than", "that",
    "the", "their", "theirs", "them", "then", "there", "these", "they", "this", "those", "through", "too", "two",
    "under", "usually", "very", "via", "was", "were", "what", "when", "where", "which", "while", "who", "whom",
    "whose", "why", "will", "with", "within", "without", "would", "yes", "yet", "you", "your", "yours",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_declares_every_issue_type_of_the_docs() {
        let info = critbench_abi::PluginInfo::parse(EvidenceCritic::INFO).unwrap();
        for name in [
            "invalid_draft",
            "empty_answer",
            "unknown_evidence_id",
            "missing_evidence",
            "answer_too_short",
            "off_topic_evidence",
            "unsupported_answer",
            "irrelevant_evidence",
            "missing_relevant_evidence",
        ] {
            assert!(info.issue_hint(name).is_some(), "`{name}` is not declared");
        }
        assert_eq!(info.issue_types.len(), 9);
    }

    fn pool() -> BTreeMap<String, String> {
        BTreeMap::from([
            (
                "d1".to_string(),
                "Honeybees perform a waggle dance whose angle tells other bees the direction of flowers.".to_string(),
            ),
            ("d2".to_string(), "Jupiter has more than 90 confirmed moons.".to_string()),
        ])
    }

    const QUESTION: &str = "How do honeybees tell other bees where to find flowers?";

    fn run(draft: &str) -> Value {
        check(QUESTION, &pool(), draft)
    }

    /// The texts of a list of typed issues.
    fn strings(value: &Value) -> Vec<String> {
        value.as_array().unwrap().iter().map(|v| v["text"].as_str().unwrap().to_string()).collect()
    }

    fn types(value: &Value) -> Vec<String> {
        value.as_array().unwrap().iter().map(|v| v["type"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn issues_carry_machine_readable_types() {
        let missing = run(r#"{"answer": "Retrieval helps.", "evidence_ids": []}"#);
        assert!(types(&missing["issues"]).contains(&"missing_evidence".to_string()), "{missing}");
        let invented = run(r#"{"answer": "Retrieval helps.", "evidence_ids": ["d99"]}"#);
        assert_eq!(types(&invented["fatal_issues"]), ["unknown_evidence_id"]);
        assert_eq!(types(&run("")["fatal_issues"]), ["empty_answer"]);
        assert_eq!(types(&run("{\"answer\": ")["fatal_issues"]), ["invalid_draft"]);
    }

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn a_quoted_well_cited_answer_scores_high() {
        let answer = pool()["d1"].clone();
        let critique = run(&json!({"answer": answer, "evidence_ids": ["d1"]}).to_string());
        assert_eq!(critique["score"], 10.0);
        assert_eq!(critique["fatal_issues"], json!([]));
        assert_eq!(critique["issues"], json!([]));
        let prose = run(&format!("{} [d1]", pool()["d1"].trim_end_matches('.')));
        assert_eq!(prose["score"], 10.0);
    }

    #[test]
    fn an_invented_id_is_fatal_and_named() {
        let critique = run(r#"{"answer": "Honeybees perform a waggle dance.", "evidence_ids": ["d1", "d9"]}"#);
        let fatal = strings(&critique["fatal_issues"]);
        assert_eq!(fatal.len(), 1);
        assert!(fatal[0].contains("`d9`"), "{fatal:?}");
        assert!(critique["score"].as_f64().unwrap() <= 3.0);
        let prose = run("Bees dance to show where flowers are [d7].");
        assert!(strings(&prose["fatal_issues"])[0].contains("`d7`"));
    }

    #[test]
    fn missing_ids_are_an_ordinary_issue_with_a_low_score() {
        let critique = run(r#"{"answer": "Honeybees perform a waggle dance toward flowers.", "evidence_ids": []}"#);
        assert_eq!(critique["fatal_issues"], json!([]));
        assert!(strings(&critique["issues"]).iter().any(|i| i.starts_with("missing evidence ids")));
        assert!(critique["score"].as_f64().unwrap() <= 2.0);
        assert_eq!(critique["suggestions"][0]["target"], "evidence_ids");
        assert!(critique["suggestions"][0]["edit"].as_str().unwrap().contains("d1"));
    }

    #[test]
    fn invalid_drafts_are_fatal_not_errors() {
        for draft in [
            r#"{"answer": "cut off", "evidence_ids": ["d1""#,
            r#"{"evidence_ids": ["d1"]}"#,
            r#"{"answer": 3}"#,
            r#"{"answer": "x", "evidence_ids": "d1"}"#,
            r#"{"answer": "x", "evidence_ids": [1]}"#,
            "[1, 2]",
            "{",
        ] {
            let critique = run(draft);
            let fatal = strings(&critique["fatal_issues"]);
            assert_eq!(fatal.len(), 1, "{draft}");
            assert!(fatal[0].starts_with("invalid draft"), "{fatal:?}");
            assert_eq!(critique["score"], 0.0);
        }
    }

    #[test]
    fn an_empty_answer_is_fatal() {
        for draft in ["", "   ", r#"{"answer": "", "evidence_ids": ["d1"]}"#, "[d1]"] {
            let critique = run(draft);
            assert_eq!(strings(&critique["fatal_issues"]), ["empty answer"], "{draft:?}");
        }
    }

    #[test]
    fn a_cited_distractor_keeps_a_good_answer_below_the_bar() {
        let answer = pool()["d1"].clone();
        let critique = run(&json!({"answer": answer, "evidence_ids": ["d1", "d2"]}).to_string());
        assert!(critique["score"].as_f64().unwrap() < 8.0);
        assert!(strings(&critique["issues"]).iter().any(|i| i.contains("`d2` does not address")));
    }

    #[test]
    fn an_unsupported_answer_is_told_to_rewrite_from_the_evidence() {
        let critique =
            run(r#"{"answer": "Bees navigate by smell and memory of the landscape, mostly.", "evidence_ids": ["d1"]}"#);
        assert!(critique["score"].as_f64().unwrap() < 8.0);
        assert!(strings(&critique["issues"]).iter().any(|i| i.starts_with("answer weakly supported")));
        assert!(critique["suggestions"].as_array().unwrap().iter().any(|s| s["target"] == "answer"));
    }

    #[test]
    fn prose_reads_citation_lists_and_ignores_links_and_notes() {
        let (answer, ids) = strip_citations("## Answer\nBees dance [d1, d2]. See [the guide](http://x) [note].");
        assert_eq!(answer, "Bees dance. See [the guide](http://x) [note].");
        assert_eq!(ids, ["d1", "d2"]);
        let fenced = "```json\n{\"answer\": \"Honeybees dance.\", \"evidence_ids\": [\"d1\"]}\n```";
        assert!(matches!(read_draft(fenced), Draft::Answer { ref ids, .. } if ids == &["d1"]));
    }

    #[test]
    fn config_takes_no_keys() {
        assert!(EvidenceCritic::create("{}", Host::none()).is_ok());
        assert!(EvidenceCritic::create(r#"{"gold_labels": "yes"}"#, Host::none()).is_err());
        assert!(EvidenceCritic::create("", Host::none()).is_ok());
        let error = EvidenceCritic::create(r#"{"strict": true}"#, Host::none()).unwrap_err().to_string();
        assert!(error.contains("`strict`"), "{error}");
        assert!(EvidenceCritic::create("[]", Host::none()).is_err());
    }

    /// A refusal's text as the host records it: the error's, then each cause's not already in it.
    fn recorded(error: CriticError) -> String {
        let mut text = error.to_string();
        let mut cause = error.source();
        while let Some(one) = cause {
            if !text.contains(&one.to_string()) {
                text = format!("{text}: {one}");
            }
            cause = one.source();
        }
        text
    }

    #[test]
    fn refusals_are_recorded_word_for_word() {
        let create = |config: &str| recorded(EvidenceCritic::create(config, Host::none()).unwrap_err());
        let not_json = serde_json::from_str::<Value>("{").unwrap_err();
        assert_eq!(create("{"), format!("evidence config is not valid JSON: {not_json}"));
        assert_eq!(create("[]"), "evidence config must be a JSON object, got []");
        assert_eq!(
            create(r#"{"gold_labels": "yes"}"#),
            "evidence config: `gold_labels` must be true or false, got \"yes\""
        );
        assert_eq!(
            create(r#"{"strict": true}"#),
            "evidence config has an unknown key `strict` (the evidence critic takes only `gold_labels`)"
        );
        let plain = EvidenceCritic::create("{}", Host::none()).unwrap();
        let bad_request = serde_json::from_str::<Request>("{}").unwrap_err();
        assert_eq!(
            recorded(plain.critique("{}").unwrap_err()),
            format!("evidence: malformed critique request: {bad_request}")
        );
        let gold = EvidenceCritic::create(r#"{"gold_labels": true}"#, Host::none()).unwrap();
        assert_eq!(recorded(gold.critique("{}").unwrap_err()), "evidence: the request has no string `draft`");
        assert_eq!(
            recorded(gold.critique(r#"{"draft": "x", "task": {}}"#).unwrap_err()),
            "evidence (gold_labels): the task has no `labels.relevant` list; gold mode is for a held-out evaluator on \
             tasks labelled with the passages that answer them (a critic never sees labels)"
        );
    }

    #[test]
    fn odd_input_never_panics() {
        let huge = "word [d1] ".repeat(100_000);
        for draft in ["[", "]", "[[d1]", "```", "```json", "{\"answer\": \"\u{0}\"}", "é [é1]", &huge] {
            let critique = run(draft);
            assert!((0.0..=10.0).contains(&critique["score"].as_f64().unwrap()));
        }
        let critic = EvidenceCritic::create("{}", Host::none()).unwrap();
        assert!(critic.critique("{}").is_err());
    }

    fn gold(task: Value, draft: &str) -> Value {
        let critic = EvidenceCritic::create(r#"{"gold_labels": true}"#, Host::none()).unwrap();
        let request = json!({"request_version": 1, "round": 0, "draft": draft, "task": task});
        serde_json::from_str(&critic.critique(&request.to_string()).unwrap()).unwrap()
    }

    #[test]
    fn gold_mode_checks_the_cited_ids_against_the_labels_not_the_pool() {
        let task = |relevant: Value| {
            json!({"id": "t", "prompt": "How do bees dance?", "evidence": {"d1": "Bees dance.", "d2": "Tides turn."},
                   "labels": {"answerable": true, "relevant": relevant}})
        };
        // A known but irrelevant id: the rule-based critic accepts it, gold mode does not.
        let off = gold(task(json!(["d1"])), r#"{"answer": "Bees dance.", "evidence_ids": ["d2"]}"#);
        assert_eq!((off["score"].as_f64(), off["passed"].as_bool()), (Some(0.0), Some(false)));
        assert_eq!(off["issues"][0]["type"], "irrelevant_evidence");
        let right = gold(task(json!(["d1"])), "Bees dance [d1].");
        assert_eq!((right["score"].as_f64(), right["passed"].as_bool()), (Some(10.0), Some(true)));
        let half = gold(task(json!(["d1", "d2"])), "Bees dance [d1].");
        assert_eq!((half["score"].as_f64(), half["passed"].as_bool()), (Some(5.0), Some(true)));
        assert_eq!(half["issues"][0]["type"], "missing_relevant_evidence");
        // Unanswerable: citing nothing is right.
        let none = json!({"id": "t", "prompt": "q", "labels": {"answerable": false, "relevant": []}});
        assert_eq!(
            gold(none.clone(), r#"{"answer": "The evidence does not say.", "evidence_ids": []}"#)["passed"],
            true
        );
        assert_eq!(gold(none, "It does [d1].")["passed"], false);
    }

    #[test]
    fn gold_mode_without_labels_is_an_error_not_a_verdict() {
        let critic = EvidenceCritic::create(r#"{"gold_labels": true}"#, Host::none()).unwrap();
        let request = json!({"round": 0, "draft": "x [d1]", "task": {"id": "t", "prompt": "q"}});
        let error = critic.critique(&request.to_string()).unwrap_err().to_string();
        assert!(error.contains("labels.relevant") && error.contains("evaluator"), "{error}");
    }
}
