//! What the model roles are told (the `[prompts]` table), and what is done to model text before
//! anyone sees it: chatty preambles and sign-offs stripped, degenerate critic
//! feedback replaced by a generic instruction (a guard against critiques that say nothing).

use std::borrow::Cow;
use std::collections::BTreeSet;

use critbench_core::author::Hint;
use critbench_core::{CRITIQUE_UNAVAILABLE, Critique, Task};
use serde::{Deserialize, Serialize};

/// The prompt templates of every role. `{name}` is replaced by a part of the task (see
/// [`PLACEHOLDERS`]); `{{` and `}}` are literal braces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Prompts {
    /// The generator's system prompt.
    pub generator_system: String,
    /// The generator's first-draft request.
    pub generator: String,
    /// The reviser's system prompt.
    pub reviser_system: String,
    /// The reviser when the arm shows it the critique.
    pub reviser_feedback: String,
    /// The reviser when the arm keeps the critique from it (`no-feedback`).
    pub reviser_blind: String,
    /// The adjudicator's system prompt.
    pub adjudicator_system: String,
    /// The adjudicator's final-pass request.
    pub adjudicator: String,
    /// Given to the reviser instead of feedback that is empty or degenerate.
    pub generic_fix: String,
}

impl Default for Prompts {
    fn default() -> Prompts {
        Prompts {
            generator_system: "You are a careful writer. You write exactly what the task asks for and output only \
                               the requested text: no preamble, no notes, no sign-off."
                .into(),
            generator: "Task:\n{prompt}\n\n{context}{evidence}{hints}Write what the task asks for. Output only the \
                        text itself."
                .into(),
            reviser_system: "You are a precise editor. You revise a draft so that it does its task better, and you \
                             output only the revised text: no preamble, no list of changes, no sign-off."
                .into(),
            reviser_feedback: "Task:\n{prompt}\n\n{context}{evidence}Draft:\n{draft}\n\nA reviewer found these \
                               problems:\n{feedback}\nRewrite the draft to fix them, fatal issues first. Keep the \
                               topic, the form and about the same length. Output only the revised text."
                .into(),
            reviser_blind: "Task:\n{prompt}\n\n{context}{evidence}Draft:\n{draft}\n\nImprove this draft. Keep the \
                            topic, the form and about the same length. Output only the revised text."
                .into(),
            adjudicator_system: "You are a senior editor giving a draft its final pass after several revisions. \
                                 Remove statements that contradict each other or the task, tidy the prose, and \
                                 output only the final text: no preamble, no comments, no sign-off."
                .into(),
            adjudicator: "Task:\n{prompt}\n\n{context}{evidence}Latest draft:\n{draft}\n\nThe reviewer's last \
                          remaining concerns:\n{feedback}\nOutput only the final text."
                .into(),
            generic_fix: "Re-check the draft against the task line by line and fix its weakest part.".into(),
        }
    }
}

/// Every placeholder a template may use.
pub const PLACEHOLDERS: [&str; 6] = ["prompt", "context", "evidence", "hints", "draft", "feedback"];

/// A `[prompts]` template that cannot be filled, named by its key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    /// Its braces do not pair up.
    #[error("[prompts] {template}: {problem}")]
    Braces {
        /// The template's key.
        template: &'static str,
        /// What is wrong with them.
        problem: BraceProblem,
    },
    /// It uses a placeholder its role does not fill.
    #[error("[prompts] {template}: unknown placeholder {{{placeholder}}}; valid here: {}", valid_here(allowed))]
    UnknownPlaceholder {
        /// The template's key.
        template: &'static str,
        /// The placeholder, without braces.
        placeholder: String,
        /// The placeholders its role fills.
        allowed: &'static [&'static str],
    },
    /// It lacks a placeholder its role cannot do without.
    #[error("[prompts] {template}: must contain {{{placeholder}}}")]
    MissingPlaceholder {
        /// The template's key.
        template: &'static str,
        /// The placeholder, without braces.
        placeholder: &'static str,
    },
    /// `generic_fix` is empty.
    #[error("[prompts] generic_fix: must not be empty")]
    EmptyGenericFix,
}

/// How a template's braces fail to pair up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BraceProblem {
    /// A `}` that closes nothing.
    #[error("a lone `}}`; write `}}}}` for a literal brace")]
    LoneClosing,
    /// A `{` that is never closed.
    #[error("a `{{` without its `}}`; write `{{{{` for a literal brace")]
    Unclosed,
}

/// The placeholders a role fills, as an error message lists them.
fn valid_here(allowed: &[&str]) -> String {
    if allowed.is_empty() {
        "none (a system prompt is sent as written)".to_string()
    } else {
        allowed.iter().map(|p| format!("{{{p}}}")).collect::<Vec<_>>().join(", ")
    }
}

impl Prompts {
    /// Checks every template: known placeholders only, and the ones a role cannot do without.
    pub fn check(&self) -> Result<(), PromptError> {
        let templates: [(&'static str, &str, &'static [&'static str], &[&'static str]); 7] = [
            ("generator_system", &self.generator_system, &[], &[]),
            ("generator", &self.generator, &["prompt", "context", "evidence", "hints"], &["prompt"]),
            ("reviser_system", &self.reviser_system, &[], &[]),
            (
                "reviser_feedback",
                &self.reviser_feedback,
                &["prompt", "context", "evidence", "draft", "feedback"],
                &["draft", "feedback"],
            ),
            ("reviser_blind", &self.reviser_blind, &["prompt", "context", "evidence", "draft"], &["draft"]),
            ("adjudicator_system", &self.adjudicator_system, &[], &[]),
            ("adjudicator", &self.adjudicator, &["prompt", "context", "evidence", "draft", "feedback"], &["draft"]),
        ];
        for (name, template, allowed, required) in templates {
            let used = placeholders(template).map_err(|problem| PromptError::Braces { template: name, problem })?;
            for placeholder in &used {
                if !allowed.contains(&placeholder.as_str()) {
                    return Err(PromptError::UnknownPlaceholder {
                        template: name,
                        placeholder: placeholder.clone(),
                        allowed,
                    });
                }
            }
            for placeholder in required {
                if !used.contains(*placeholder) {
                    return Err(PromptError::MissingPlaceholder { template: name, placeholder });
                }
            }
        }
        if self.generic_fix.trim().is_empty() {
            return Err(PromptError::EmptyGenericFix);
        }
        Ok(())
    }
}

/// The placeholders a template uses.
fn placeholders(template: &str) -> Result<BTreeSet<String>, BraceProblem> {
    let mut used = BTreeSet::new();
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        let (brace, after) = (&rest[at..at + 1], &rest[at + 1..]);
        if after.starts_with(brace) {
            rest = &after[1..];
            continue;
        }
        if brace == "}" {
            return Err(BraceProblem::LoneClosing);
        }
        let end = after.find('}').ok_or(BraceProblem::Unclosed)?;
        used.insert(after[..end].to_string());
        rest = &after[end + 1..];
    }
    Ok(used)
}

/// Fills `template` (already checked) with `values`.
pub fn render(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + values.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        out.push_str(&rest[..at]);
        let (brace, after) = (&rest[at..at + 1], &rest[at + 1..]);
        if after.starts_with(brace) {
            out.push_str(brace);
            rest = &after[1..];
            continue;
        }
        match after.find('}') {
            Some(end) if brace == "{" => {
                let name = &after[..end];
                out.push_str(values.iter().find(|(k, _)| *k == name).map_or("", |(_, v)| v));
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str(brace);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The task's parts as template values: blocks that are empty when the task lacks them.
pub fn task_blocks(task: &Task) -> (String, String) {
    let context = match task.context.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
        Some(context) => format!("Source material:\n{context}\n\n"),
        None => String::new(),
    };
    let evidence = if task.evidence.is_empty() {
        String::new()
    } else {
        let mut block = String::from("Evidence (cite it by id in brackets, e.g. [d1]):\n");
        for (id, passage) in &task.evidence {
            block.push_str(&format!("[{id}] {}\n", passage.trim()));
        }
        block.push('\n');
        block
    };
    (context, evidence)
}

/// Strategy memory's hints as a template value: empty without hints.
pub fn hints_block(hints: &[Hint]) -> String {
    if hints.is_empty() {
        return String::new();
    }
    let mut block = String::from("Lessons from earlier tasks like this one:\n");
    for hint in hints {
        block.push_str(&format!("- {}\n", hint.text.trim()));
    }
    block.push('\n');
    block
}

/// A guard: `None` when a piece of feedback is empty or degenerate — a few distinct
/// characters (`../../..`), or many words that are one or two words repeated.
pub fn sanitize_fix(text: &str) -> Option<String> {
    // Runs for every item of every critique a reviser is shown: counted without collecting.
    let mut stripped = String::with_capacity(text.len());
    let mut words = 0;
    for word in text.split_whitespace() {
        if words > 0 {
            stripped.push(' ');
        }
        stripped.push_str(word);
        words += 1;
    }
    let degenerate = stripped.is_empty()
        || at_most_distinct(stripped.chars(), 4)
        || (words > 5 && at_most_distinct(stripped.split(' ').map(str::to_lowercase), 2))
        || stripped.eq_ignore_ascii_case(CRITIQUE_UNAVAILABLE);
    if degenerate {
        return None;
    }
    // A runaway answer is cut rather than pasted whole into the next prompt.
    const MAX_CHARS: usize = 600;
    Some(if stripped.chars().count() > MAX_CHARS {
        format!("{}…", stripped.chars().take(MAX_CHARS).collect::<String>())
    } else {
        stripped
    })
}

/// Whether `items` holds `most` distinct values or fewer (looks no further than one more).
fn at_most_distinct<T: PartialEq>(items: impl Iterator<Item = T>, most: usize) -> bool {
    let mut seen: Vec<T> = Vec::with_capacity(most + 1);
    for item in items {
        if !seen.contains(&item) {
            if seen.len() == most {
                return false;
            }
            seen.push(item);
        }
    }
    true
}

/// The critique as the reviser reads it: fatal issues, issues and suggested edits, each one
/// sanitized; the generic instruction when nothing usable is left.
pub fn feedback_block(critique: &Critique, generic_fix: &str) -> String {
    let mut block = String::new();
    let mut section = |title: &str, items: &mut dyn Iterator<Item = Cow<'_, str>>| {
        let mut titled = false;
        for item in items.filter_map(|item| sanitize_fix(&item)) {
            if !titled {
                block.push_str(title);
                block.push('\n');
                titled = true;
            }
            block.push_str("- ");
            block.push_str(&item);
            block.push('\n');
        }
    };
    section("Fatal issues (fix these first):", &mut critique.fatal_issues.iter().map(|s| Cow::Borrowed(s.as_str())));
    section("Issues:", &mut critique.issues.iter().map(|s| Cow::Borrowed(s.as_str())));
    let mut edits = critique.suggestions.iter().map(|s| match s.target.as_deref().or(s.dimension.as_deref()) {
        Some(place) if !place.trim().is_empty() => Cow::Owned(format!("({}) {}", place.trim(), s.edit)),
        _ => Cow::Borrowed(s.edit.as_str()),
    });
    section("Suggested edits:", &mut edits);
    if block.is_empty() { format!("- {}\n", generic_fix.trim()) } else { block }
}

/// Lines a model adds around the text it was asked for: "Sure, here is…", "I hope this helps".
const PREAMBLE_STARTS: [&str; 17] = [
    "sure",
    "certainly",
    "of course",
    "absolutely",
    "okay",
    "ok,",
    "great",
    "here is",
    "here's",
    "here are",
    "below is",
    "i have revised",
    "i've revised",
    "i have rewritten",
    "i've rewritten",
    "revised draft",
    "revised version",
];
const SIGN_OFF_STARTS: [&str; 22] = [
    "note:",
    "notes:",
    "please note",
    "i hope",
    "hope this",
    "let me know",
    "feel free",
    "if you would like",
    "if you'd like",
    "if you need",
    "would you like",
    "is there anything",
    "happy to help",
    "this revised",
    "this version",
    "in this revision",
    "changes made",
    "i have made",
    "i've made",
    "no errors",
    "no contradictions",
    "no formatting errors",
];

/// A line that carries markdown structure is content, never chat.
fn is_structural(line: &str) -> bool {
    line.starts_with(['#', '|', '-', '*', '>', '`', '{', '[']) || line.starts_with(|c: char| c.is_ascii_digit())
}

fn starts_with_any(line: &str, starts: &[&str]) -> bool {
    let lowered = line.trim_start_matches(['*', '_']).to_lowercase();
    starts.iter().any(|s| lowered.starts_with(s))
}

/// "The improved version follows:" — a line ending in a colon that announces the text.
fn announces_text(line: &str) -> bool {
    let lowered = line.to_lowercase();
    line.ends_with(':')
        && ["here", "below", "revised", "rewritten", "improved", "updated", "final version"]
            .iter()
            .any(|word| lowered.contains(word))
}

/// Strips what models wrap their text in: `<think>` blocks, a fence around the whole answer, a
/// short chatty first paragraph, and chatty closing lines. Never returns an empty text for a
/// non-empty one: if everything looks like chat, the original is kept.
pub fn clean_model_text(text: &str) -> String {
    let mut text = text.to_string();
    // Reasoning models think out loud first.
    while let (Some(start), Some(end)) = (text.find("<think>"), text.find("</think>")) {
        if end < start {
            break;
        }
        text.replace_range(start..end + "</think>".len(), "");
    }
    let mut body = text.trim();
    // One fenced block holding the whole answer: keep its inside.
    if body.starts_with("```") && body.ends_with("```") && body.len() > 6 && body.matches("```").count() == 2 {
        let inner = &body[3..body.len() - 3];
        body =
            inner.split_once('\n').map_or(inner, |(lang, rest)| if lang.trim().contains(' ') { inner } else { rest });
        body = body.trim();
    }
    let mut lines: Vec<&str> = body.lines().collect();
    // A short first paragraph that is chat ("Sure! Here is the revised draft:").
    let first_break = lines.iter().position(|l| l.trim().is_empty()).unwrap_or(lines.len());
    let first: String = lines[..first_break].join(" ");
    let first_trimmed = first.trim();
    if first_break < lines.len()
        && first_trimmed.chars().count() < 200
        && !is_structural(first_trimmed)
        && (starts_with_any(first_trimmed, &PREAMBLE_STARTS) || announces_text(first_trimmed))
    {
        lines.drain(..first_break);
    } else if let Some(line) = lines.first().map(|l| l.trim())
        && lines.len() > 1
        && !is_structural(line)
        && line.chars().count() < 120
        && starts_with_any(line, &PREAMBLE_STARTS)
        && line.ends_with(':')
    {
        lines.remove(0);
    }
    // Chatty closing lines, from the bottom up.
    while let Some(last) = lines.last().map(|l| l.trim()) {
        if last.is_empty() || last == "---" || last == "***" {
            lines.pop();
            continue;
        }
        if !is_structural(last) && starts_with_any(last, &SIGN_OFF_STARTS) {
            lines.pop();
            continue;
        }
        break;
    }
    let cleaned = lines.join("\n").trim().to_string();
    if cleaned.is_empty() { text.trim().to_string() } else { cleaned }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_prompts_pass_their_own_check() {
        Prompts::default().check().unwrap();
    }

    #[test]
    fn templates_are_checked() {
        let with = |f: fn(&mut Prompts)| {
            let mut prompts = Prompts::default();
            f(&mut prompts);
            prompts.check().map_err(|e| e.to_string())
        };
        assert!(
            with(|p| p.generator = "{prompt} {colour}".into()).unwrap_err().contains("unknown placeholder {colour}")
        );
        assert!(
            with(|p| p.reviser_blind = "{prompt}".into()).unwrap_err().contains("reviser_blind: must contain {draft}")
        );
        assert!(with(|p| p.reviser_feedback = "{draft}".into()).unwrap_err().contains("must contain {feedback}"));
        assert!(with(|p| p.generator_system = "{prompt}".into()).unwrap_err().contains("valid here: none"));
        assert!(with(|p| p.generator = "{prompt".into()).unwrap_err().contains("without its `}`"));
        assert!(with(|p| p.generator = "{prompt} as JSON {{\"a\": 1}}".into()).is_ok());
    }

    #[test]
    fn rendering_fills_placeholders_and_keeps_literal_braces() {
        let out = render("A {x}{y} {{literal}} {x}", &[("x", "1"), ("y", "")]);
        assert_eq!(out, "A 1 {literal} 1");
    }

    #[test]
    fn degenerate_feedback_is_replaced() {
        assert_eq!(sanitize_fix("  "), None);
        assert_eq!(sanitize_fix(&"../".repeat(200)), None);
        assert_eq!(sanitize_fix("fix fix fix fix fix fix fix"), None);
        assert_eq!(sanitize_fix("the the and the and the and"), None);
        assert_eq!(sanitize_fix("critique unavailable"), None);
        assert_eq!(sanitize_fix("  Cite the\nsource. ").as_deref(), Some("Cite the source."));
        let long = sanitize_fix(&"Cite the source for the second claim. ".repeat(30)).unwrap();
        assert!(long.ends_with('…') && long.chars().count() == 601, "a runaway answer is cut");

        let mut critique = Critique::unavailable(critbench_core::ScoreRange { min: 0.0, max: 10.0 });
        assert_eq!(feedback_block(&critique, "Re-check it."), "- Re-check it.\n");
        // The placebo arm's critique carries nothing but the instruction to try again.
        assert_eq!(feedback_block(Critique::placebo(), "Re-check it."), "- Re-check it.\n");
        critique.issues = vec!["../../../../".into(), "The intro is vague.".into()];
        critique.fatal_issues = vec!["Invented citation [d9].".into()];
        critique.suggestions = vec![critbench_core::Suggestion {
            dimension: None,
            target: Some("Intro".into()),
            edit: "Name the claim.".into(),
        }];
        assert_eq!(
            feedback_block(&critique, "Re-check it."),
            "Fatal issues (fix these first):\n- Invented citation [d9].\nIssues:\n- The intro is vague.\n\
             Suggested edits:\n- (Intro) Name the claim.\n"
        );
    }

    #[test]
    fn chatty_wrappers_are_stripped() {
        let cases = [
            ("Sure! Here is the revised essay:\n\nTrees cool cities.\n\nI hope this helps!", "Trees cool cities."),
            ("Here's your paragraph:\nTrees cool cities.", "Trees cool cities."),
            ("<think>they want trees</think>\nTrees cool cities.", "Trees cool cities."),
            ("```markdown\n# Title\nBody\n```", "# Title\nBody"),
            (
                "```json\n{\"answer\": \"x\", \"evidence_ids\": [\"d1\"]}\n```",
                "{\"answer\": \"x\", \"evidence_ids\": [\"d1\"]}",
            ),
            ("# Title\n\nBody.\n\n---\nNote: I kept the length.\nLet me know if you need more.", "# Title\n\nBody."),
            (
                "Trees cool cities.\n- No errors here is a list item",
                "Trees cool cities.\n- No errors here is a list item",
            ),
            ("Certainly.", "Certainly."),
            ("The improved version follows:\n\nTrees cool cities.", "Trees cool cities."),
            ("The three causes are:\n\n1. Heat\n2. Light", "The three causes are:\n\n1. Heat\n2. Light"),
            (
                "Cities need trees: they cool streets.\n\nSecond paragraph.",
                "Cities need trees: they cool streets.\n\nSecond paragraph.",
            ),
        ];
        for (raw, clean) in cases {
            assert_eq!(clean_model_text(raw), clean, "{raw:?}");
        }
    }
}
