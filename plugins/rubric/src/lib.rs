//! The `rubric` critic: the five fixed dimensions of a paper review, scored 0–10 from the draft's text.
//!
//! A draft is read as markdown: the first `# ` heading is the title, every other heading starts a
//! section, and a line `Originality: high|medium|low` states the originality claim.
//!
//! | dimension      | grows with                                                   |
//! |----------------|--------------------------------------------------------------|
//! | `clarity`      | the average length of section bodies (60 words scores 10)    |
//! | `novelty`      | the originality claim: high 10, medium 6.5, low 3, none 1     |
//! | `evidence`     | figure references ("Figure 2", up to 2) and citations (`[3]`, up to 4) |
//! | `methodology`  | a "Method" section with a body (40 words scores 10)          |
//! | `related_work` | a "Related Work" section with a body (40 words scores 10)    |
//!
//! The critique has no `score`: the host takes the (optionally weighted) mean of the dimensions.
//! Every dimension below `weak_below` (default 8) gets one issue and exactly one suggestion,
//! whose `target` names the section to change. An empty draft, or one without any section, is a
//! fatal issue. `passed` is the rubric's own verdict (no fatal issue and no weak dimension);
//! the host records it and decides by itself.
//!
//! Issues are `{"text", "type"}`: `weak_<dimension>` for a weak dimension, `empty_draft` and
//! `no_sections` for the fatal ones.
//! Config: `{}` or `{"weak_below": 8}`; any other key is rejected.
//!
//! ```
//! use critbench_abi::{CriticPlugin, Host};
//! use critbench_rubric::Rubric;
//!
//! let rubric = Rubric::create("{}", Host::none()).unwrap();
//! let request = r##"{"request_version": 1, "task": {"id": "t", "prompt": "p"},
//!                   "draft": "# T\n\n## Introduction\n\nShort.", "round": 0}"##;
//! let critique: serde_json::Value = serde_json::from_str(&rubric.critique(request).unwrap()).unwrap();
//! assert_eq!(critique["dimensions"]["methodology"], 0.0);
//! assert_eq!(critique["suggestions"].as_array().unwrap().len(), 5);
//! ```

#![warn(missing_docs)]

use std::collections::BTreeSet;

use critbench_abi::{CriticError, CriticPlugin, Host, Request};
use serde_json::{Value, json};

/// The rubric critic.
#[derive(Debug)]
pub struct Rubric {
    /// A dimension below this value is weak: it gets an issue and a suggestion.
    weak_below: f64,
}

/// Average section body length that scores full clarity.
const CLARITY_FULL_WORDS: f64 = 60.0;
/// Body length of a Method or Related Work section that scores full marks.
const SECTION_FULL_WORDS: f64 = 40.0;
/// Figure references and citations that score full evidence.
const FULL_FIGURES: usize = 2;
const FULL_CITATIONS: usize = 4;

impl CriticPlugin for Rubric {
    const NAME: &'static str = "rubric";
    const VERSION: &'static str = "1.0.0";
    const SCORE_MIN: f64 = 0.0;
    const SCORE_MAX: f64 = 10.0;
    const THREAD_SAFE: bool = true;
    const INFO: &'static str = r#"{
        "info_version": 1,
        "issue_types": [
            {"name": "weak_clarity", "hint": "Give every section a full body."},
            {"name": "weak_novelty", "hint": "State what is original about the work."},
            {"name": "weak_evidence", "hint": "Back the results with figures and citations."},
            {"name": "weak_methodology", "hint": "Include a Method section that says how the work was done."},
            {"name": "weak_related_work", "hint": "Include a Related Work section that cites prior work."},
            {"name": "no_sections", "hint": "Structure the paper in sections with headings."},
            {"name": "empty_draft", "hint": "Structure the paper in sections with headings."}
        ]
    }"#;

    fn create(config: &str, _host: Host) -> Result<Self, CriticError> {
        let mut rubric = Rubric { weak_below: 8.0 };
        let config = config.trim();
        if config.is_empty() {
            return Ok(rubric);
        }
        let value: Value = serde_json::from_str(config).map_err(|e| format!("rubric config is not valid JSON: {e}"))?;
        let entries = match value {
            Value::Null => return Ok(rubric),
            Value::Object(entries) => entries,
            other => return Err(format!("rubric config must be a JSON object, got {other}").into()),
        };
        for (key, value) in entries {
            match key.as_str() {
                "weak_below" => {
                    rubric.weak_below =
                        value.as_f64().filter(|v| (Self::SCORE_MIN..=Self::SCORE_MAX).contains(v)).ok_or_else(
                            || format!("rubric config `weak_below` must be a number from 0 to 10, got {value}"),
                        )?;
                }
                _ => return Err(format!("rubric config has an unknown key `{key}` (known keys: weak_below)").into()),
            }
        }
        Ok(rubric)
    }

    fn critique(&self, request: &str) -> Result<String, CriticError> {
        let request: Request =
            serde_json::from_str(request).map_err(|e| format!("rubric: malformed critique request: {e}"))?;
        Ok(self.assess(&request.draft).to_string())
    }
}

impl Rubric {
    /// The critique of one draft, as JSON.
    fn assess(&self, draft: &str) -> Value {
        let outline = Outline::parse(draft);
        let mut fatal_issues = Vec::new();
        if draft.trim().is_empty() {
            fatal_issues.push(json!({ "text": "draft is empty", "type": "empty_draft" }));
        } else if outline.sections.is_empty() {
            fatal_issues.push(json!({
                "text": "draft has no sections: use `## Heading` lines for Introduction, Method, Results, Related Work",
                "type": "no_sections",
            }));
        }

        let scores = Scores::of(&outline);
        let mut issues = Vec::new();
        let mut suggestions = Vec::new();
        for (name, value) in scores.named() {
            if value < self.weak_below {
                let (issue, target, edit) = advice(name, value, &outline);
                issues.push(json!({ "text": issue, "type": format!("weak_{name}") }));
                suggestions.push(json!({ "dimension": name, "target": target, "edit": edit }));
            }
        }
        let dimensions: serde_json::Map<String, Value> =
            scores.named().into_iter().map(|(name, value)| (name.to_string(), json!(value))).collect();
        let mean = scores.named().iter().map(|(_, value)| value).sum::<f64>() / 5.0;
        let weakest =
            scores.named().into_iter().min_by(|a, b| a.1.total_cmp(&b.1)).map(|(name, _)| name).unwrap_or("clarity");
        json!({
            "dimensions": dimensions,
            "issues": issues,
            "fatal_issues": fatal_issues,
            "suggestions": suggestions,
            "passed": fatal_issues.is_empty() && issues.is_empty(),
            "rationale": format!(
                "{} sections, mean {:.2}, weakest dimension {weakest}",
                outline.sections.len(),
                mean
            ),
        })
    }
}

/// The five dimension scores, rounded to two decimals.
struct Scores {
    clarity: f64,
    novelty: f64,
    evidence: f64,
    methodology: f64,
    related_work: f64,
}

impl Scores {
    fn of(outline: &Outline) -> Scores {
        let clarity =
            if outline.sections.is_empty() { 0.0 } else { outline.average_words() / CLARITY_FULL_WORDS * 10.0 };
        let novelty = match outline.originality.as_deref() {
            Some("high") => 10.0,
            Some("medium") => 6.5,
            Some("low") => 3.0,
            _ => 1.0,
        };
        let figures = outline.figures.len().min(FULL_FIGURES) as f64;
        let citations = outline.citations.len().min(FULL_CITATIONS) as f64;
        let evidence = 5.0 * figures / FULL_FIGURES as f64 + 5.0 * citations / FULL_CITATIONS as f64;
        let section_score = |kind: Kind| match outline.find(kind) {
            None => 0.0,
            Some(section) => 2.0 + 8.0 * section.words as f64 / SECTION_FULL_WORDS,
        };
        let round = |value: f64| (value.clamp(0.0, 10.0) * 100.0).round() / 100.0;
        Scores {
            clarity: round(clarity),
            novelty: round(novelty),
            evidence: round(evidence),
            methodology: round(section_score(Kind::Method)),
            related_work: round(section_score(Kind::RelatedWork)),
        }
    }

    fn named(&self) -> [(&'static str, f64); 5] {
        [
            ("clarity", self.clarity),
            ("novelty", self.novelty),
            ("evidence", self.evidence),
            ("methodology", self.methodology),
            ("related_work", self.related_work),
        ]
    }
}

/// The issue line, the section to change and the edit, for one weak dimension.
fn advice(dimension: &str, value: f64, outline: &Outline) -> (String, String, String) {
    let score = format!("{dimension} {value:.1}/10");
    match dimension {
        "clarity" => {
            let shortest = outline.sections.iter().min_by_key(|section| section.words);
            let (name, words) = shortest.map_or(("Introduction", 0), |s| (s.name.as_str(), s.words));
            (
                format!("{score}: sections average {:.0} words; `{name}` has only {words}", outline.average_words()),
                name.to_string(),
                format!(
                    "Expand `{name}` with concrete detail from the source material; sections should average about {CLARITY_FULL_WORDS:.0} words"
                ),
            )
        }
        "novelty" => {
            let claim = outline.originality.as_deref().unwrap_or("not stated");
            let target = outline.find(Kind::Introduction).map_or("Introduction", |s| s.name.as_str());
            (
                format!("{score}: originality is {claim}"),
                target.to_string(),
                "State plainly what is new compared with earlier work, then mark the draft `Originality: high`"
                    .to_string(),
            )
        }
        "evidence" => {
            let (figures, citations) = (outline.figures.len(), outline.citations.len());
            let target = if figures < FULL_FIGURES {
                outline.find(Kind::Results).map_or("Results", |s| s.name.as_str())
            } else {
                outline.sections.iter().find(|s| s.citations == 0).map_or("Introduction", |s| s.name.as_str())
            };
            let mut wants = Vec::new();
            if figures < FULL_FIGURES {
                let next = outline.figures.iter().max().map_or(1, |n| n + 1);
                wants.push(format!("reference {} more figure(s), e.g. \"Figure {next}\"", FULL_FIGURES - figures));
            }
            if citations < FULL_CITATIONS {
                wants.push(format!("cite {} more source(s) as [n]", FULL_CITATIONS - citations));
            }
            (
                format!("{score}: {figures} figure reference(s) and {citations} citation(s)"),
                target.to_string(),
                format!("In `{target}`, {}", wants.join(" and ")),
            )
        }
        "methodology" | "related_work" => {
            let (kind, heading) =
                if dimension == "methodology" { (Kind::Method, "Method") } else { (Kind::RelatedWork, "Related Work") };
            match outline.find(kind) {
                None => (
                    format!("{score}: no {heading} section"),
                    heading.to_string(),
                    format!(
                        "Add a `## {heading}` section of at least {SECTION_FULL_WORDS:.0} words{}",
                        if kind == Kind::Method {
                            " describing the data, the design and the analysis"
                        } else {
                            " that places the work among earlier studies, with citations"
                        }
                    ),
                ),
                Some(section) => (
                    format!("{score}: the {heading} section has only {} words", section.words),
                    section.name.clone(),
                    format!("Expand `{}` to at least {SECTION_FULL_WORDS:.0} words", section.name),
                ),
            }
        }
        _ => (score, String::new(), String::new()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Introduction,
    Method,
    Results,
    RelatedWork,
    Other,
}

impl Kind {
    fn of(heading: &str) -> Kind {
        let heading = heading.to_lowercase();
        if heading.contains("intro") {
            Kind::Introduction
        } else if heading.contains("related work")
            || heading.contains("prior work")
            || heading.contains("literature")
            || heading.contains("background")
        {
            Kind::RelatedWork
        } else if heading.contains("method") {
            Kind::Method
        } else if heading.contains("result") || heading.contains("finding") {
            Kind::Results
        } else {
            Kind::Other
        }
    }
}

struct Section {
    name: String,
    kind: Kind,
    words: usize,
    citations: usize,
}

/// What the rubric reads from a draft.
#[derive(Default)]
struct Outline {
    originality: Option<String>,
    sections: Vec<Section>,
    figures: BTreeSet<u64>,
    citations: BTreeSet<u64>,
}

impl Outline {
    fn parse(draft: &str) -> Outline {
        let mut outline = Outline::default();
        let mut seen_title = false;
        for line in draft.lines() {
            let line = line.trim();
            let hashes = line.bytes().take_while(|b| *b == b'#').count();
            if (1..=6).contains(&hashes) && line[hashes..].chars().next().is_none_or(char::is_whitespace) {
                let heading = line[hashes..].trim();
                if hashes == 1 && !seen_title && outline.sections.is_empty() {
                    seen_title = true;
                } else {
                    outline.sections.push(Section {
                        name: heading.to_string(),
                        kind: Kind::of(heading),
                        words: 0,
                        citations: 0,
                    });
                }
                continue;
            }
            if let Some(claim) = originality(line) {
                outline.originality = Some(claim);
                continue;
            }
            outline.figures.extend(figure_numbers(line));
            let cited = citation_numbers(line);
            if let Some(section) = outline.sections.last_mut() {
                section.words += line.split_whitespace().filter(|w| w.chars().any(char::is_alphanumeric)).count();
                section.citations += cited.len();
            }
            outline.citations.extend(cited);
        }
        outline
    }

    fn average_words(&self) -> f64 {
        if self.sections.is_empty() {
            return 0.0;
        }
        self.sections.iter().map(|s| s.words).sum::<usize>() as f64 / self.sections.len() as f64
    }

    /// The first section of `kind` with a body, else the first of that kind.
    fn find(&self, kind: Kind) -> Option<&Section> {
        let mut of_kind = self.sections.iter().filter(|s| s.kind == kind);
        let first = of_kind.clone().next();
        of_kind.find(|s| s.words > 0).or(first)
    }
}

/// The value of an `Originality: high` line (also `**Originality:** high`), lowercased.
fn originality(line: &str) -> Option<String> {
    let line = line.trim_start_matches(['*', '_', '-', ' ']);
    let head = line.get(..11)?;
    if !head.eq_ignore_ascii_case("originality") {
        return None;
    }
    let rest = line[11..].trim_start_matches(['*', '_', ' ']);
    let rest = rest.strip_prefix(':')?.trim_start_matches(['*', '_', ' ']);
    Some(rest.chars().take_while(char::is_ascii_alphabetic).collect::<String>().to_lowercase())
}

/// Numbers referenced as "Figure 2", "figure 2" or "Fig. 2".
fn figure_numbers(line: &str) -> Vec<u64> {
    let lower = line.to_ascii_lowercase();
    let mut numbers = Vec::new();
    for marker in ["figure ", "fig. "] {
        let mut rest = lower.as_str();
        while let Some(at) = rest.find(marker) {
            rest = &rest[at + marker.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(number) = digits.parse() {
                numbers.push(number);
            }
        }
    }
    numbers
}

/// Numbers cited as `[3]`, `[3, 4]` or `[3-5]` (each listed number counts; ranges count ends).
fn citation_numbers(line: &str) -> Vec<u64> {
    let mut numbers = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else { break };
        let inside = &after[..close];
        let is_list = inside.chars().any(|c| c.is_ascii_digit())
            && inside.chars().all(|c| c.is_ascii_digit() || matches!(c, ',' | ' ' | '-' | '–'));
        if is_list {
            numbers.extend(inside.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse::<u64>().ok()));
        }
        rest = &after[close..];
    }
    numbers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_declares_every_issue_type_the_rubric_tags() {
        let info = critbench_abi::PluginInfo::parse(Rubric::INFO).unwrap();
        let request =
            r##"{"request_version": 1, "task": {"id": "t", "prompt": "p"}, "draft": "# T\n\nx", "round": 0}"##;
        let critique: Value = serde_json::from_str(&rubric().critique(request).unwrap()).unwrap();
        for issue in critique["issues"].as_array().unwrap().iter().chain(critique["fatal_issues"].as_array().unwrap()) {
            let name = issue["type"].as_str().unwrap();
            assert!(info.issue_hint(name).is_some(), "`{name}` is not declared");
        }
        assert_eq!(info.issue_types.len(), 7);
        assert!(info.requires.is_empty());
    }

    fn rubric() -> Rubric {
        Rubric::create("{}", Host::none()).unwrap()
    }

    fn critique(draft: &str) -> Value {
        let request = json!({"request_version": 1, "task": {"id": "t", "prompt": "p"}, "draft": draft, "round": 0});
        serde_json::from_str(&rubric().critique(&request.to_string()).unwrap()).unwrap()
    }

    fn words(n: usize) -> String {
        vec!["word"; n].join(" ")
    }

    fn strong_draft() -> String {
        let body = words(60);
        format!(
            "# Title\n\nOriginality: high\n\n## Introduction\n\n{body} [1] [2].\n\n## Related Work\n\n{body} [3].\n\n\
             ## Method\n\n{body}\n\n## Results\n\n{body} Figure 1 and Figure 2 [4].\n"
        )
    }

    #[test]
    fn a_complete_draft_scores_full_marks_without_issues() {
        let critique = critique(&strong_draft());
        for name in ["clarity", "novelty", "evidence", "methodology", "related_work"] {
            assert_eq!(critique["dimensions"][name], 10.0, "{name}");
        }
        assert_eq!(critique["issues"], json!([]));
        assert_eq!(critique["suggestions"], json!([]));
        assert_eq!(critique["passed"], true);
        assert!(critique.get("score").is_none());
    }

    #[test]
    fn one_suggestion_per_weak_dimension_naming_the_section() {
        let draft = format!(
            "# T\n\nOriginality: medium\n\n## Introduction\n\n{}\n\n## Results\n\n{} [1].\n",
            words(70),
            words(12)
        );
        let critique = critique(&draft);
        let suggestions = critique["suggestions"].as_array().unwrap();
        let dimensions: Vec<&str> = suggestions.iter().map(|s| s["dimension"].as_str().unwrap()).collect();
        // clarity: (70 + 13) / 2 = 41.5 words → 6.9; novelty 6.5; evidence 1.25; no Method, no Related Work.
        assert_eq!(dimensions, ["clarity", "novelty", "evidence", "methodology", "related_work"]);
        assert_eq!(critique["issues"].as_array().unwrap().len(), 5);
        let types: Vec<&str> =
            critique["issues"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["weak_clarity", "weak_novelty", "weak_evidence", "weak_methodology", "weak_related_work"]);
        let target = |dimension: &str| {
            suggestions.iter().find(|s| s["dimension"] == dimension).unwrap()["target"].as_str().unwrap().to_string()
        };
        assert_eq!(target("clarity"), "Results");
        assert_eq!(target("evidence"), "Results");
        assert_eq!(target("methodology"), "Method");
        assert_eq!(target("related_work"), "Related Work");
        assert_eq!(target("novelty"), "Introduction");
    }

    #[test]
    fn weak_below_sets_what_counts_as_weak() {
        let lenient = Rubric::create(r#"{"weak_below": 3}"#, Host::none()).unwrap();
        let draft = "# T\n\nOriginality: low\n\n## Introduction\n\nSome words here.\n";
        let request = json!({"task": {"id": "t"}, "draft": draft, "round": 0}).to_string();
        let critique: Value = serde_json::from_str(&lenient.critique(&request).unwrap()).unwrap();
        // novelty 3.0 is not below 3; clarity, evidence, methodology and related_work are.
        let dims: Vec<&str> =
            critique["suggestions"].as_array().unwrap().iter().map(|s| s["dimension"].as_str().unwrap()).collect();
        assert_eq!(dims, ["clarity", "evidence", "methodology", "related_work"]);
    }

    #[test]
    fn empty_and_unsectioned_drafts_are_fatal() {
        for draft in ["", "   \n", "Just a paragraph of text without headings.", "{\"answer\": \"x\"}"] {
            let critique = critique(draft);
            assert_eq!(critique["fatal_issues"].as_array().unwrap().len(), 1, "{draft:?}");
            assert_eq!(critique["dimensions"]["clarity"], 0.0);
        }
    }

    #[test]
    fn odd_input_never_panics() {
        let huge = format!("# T\n## A\n{}\n", "word [1] Figure 9 ".repeat(200_000));
        for draft in
            ["#", "######", "####### seven", "## \n## \n", "[", "[1", "Originality:", "ORIGINALITY: HIGH", "é#ü", &huge]
        {
            let critique = critique(draft);
            assert!(
                critique["dimensions"]
                    .as_object()
                    .unwrap()
                    .values()
                    .all(|v| (0.0..=10.0).contains(&v.as_f64().unwrap()))
            );
        }
    }

    #[test]
    fn unknown_config_keys_and_bad_values_are_rejected() {
        let error = Rubric::create(r#"{"weak_below": 8, "strictness": 2}"#, Host::none()).unwrap_err().to_string();
        assert!(error.contains("`strictness`"), "{error}");
        assert!(Rubric::create(r#"{"weak_below": 11}"#, Host::none()).is_err());
        assert!(Rubric::create("[1]", Host::none()).is_err());
        assert!(Rubric::create("{", Host::none()).is_err());
        assert!(Rubric::create("", Host::none()).is_ok());
    }

    #[test]
    fn malformed_requests_are_errors_not_panics() {
        assert!(rubric().critique("not json").is_err());
        assert!(rubric().critique(r#"{"draft": "x"}"#).is_err());
    }

    #[test]
    fn originality_lines_in_several_spellings() {
        assert_eq!(originality("Originality: high").as_deref(), Some("high"));
        assert_eq!(originality("**Originality:** Medium").as_deref(), Some("medium"));
        assert_eq!(originality("originality:low."), Some("low".to_string()));
        assert_eq!(originality("Originality is high"), None);
        assert_eq!(originality("Origin"), None);
    }
}
