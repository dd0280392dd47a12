//! What a critique asks for, as the writer reads it.
//!
//! The writer keys on what a critique says in machine-readable form, never on the wording of its
//! messages: its issue types (the built-in critics declare theirs, see `PluginInfo`) and its
//! suggestions' dimensions and targets. Each writer knows some issue types and has a specific
//! fix for them; everything else in the critique becomes a generic request that any writer can
//! act on in a way a critic can see:
//!
//! - an issue type the writer does not know: a sentence addressing it by name;
//! - an issue of a critique that tags none: a sentence addressing it by its text;
//! - a suggestion no specific fix covers: its `edit`, written into the draft at its `target`
//!   (a section, a paragraph or a function it names), else at the end.
//!
//! A critique with nothing of the kind (a bare score, or the stand-in for a critique that could
//! not be had) gives the writer nothing to act on: it then revises as blindly as the
//! no-feedback arm and says so ([`crate::Revision::acted_on_critique`]).

use critbench_core::{CRITIQUE_UNAVAILABLE, Critique, Suggestion};

/// A request the writer has no specific fix for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Generic<'c> {
    /// A suggestion's edit, for the part of the draft its target names.
    Edit { edit: String, target: Option<&'c str> },
    /// An issue to address, by its text or its type's name.
    Address(String),
}

impl Generic<'_> {
    /// The text this request puts into a draft.
    pub(crate) fn text(&self) -> String {
        match self {
            Generic::Edit { edit, .. } => edit.clone(),
            Generic::Address(issue) => format!("Revised to address this point: {}.", trim_stop(issue)),
        }
    }

    /// The part of the draft it names, if any.
    pub(crate) fn target(&self) -> Option<&str> {
        match self {
            Generic::Edit { target, .. } => *target,
            Generic::Address(_) => None,
        }
    }
}

/// Everything a critique asks of one writer.
#[derive(Debug, Default)]
pub(crate) struct Requests<'c> {
    /// The critique's issue types this writer has a specific fix for, in the critique's order.
    pub known: Vec<&'static str>,
    /// Suggestions that a known type's fix covers (it reads their `target`), in order.
    pub covered: Vec<&'c Suggestion>,
    /// What it has no specific fix for, in the order the critique gives it.
    pub generic: Vec<Generic<'c>>,
}

impl<'c> Requests<'c> {
    /// Reads `critique` for a writer that knows the issue types `known_types`; `covers` says
    /// whether a suggestion belongs to one of the known types present (`requests.known`).
    pub(crate) fn read(
        critique: &'c Critique,
        known_types: &[&'static str],
        covers: impl Fn(&Suggestion, &[&str]) -> bool,
    ) -> Requests<'c> {
        let mut requests = Requests::default();
        let address = |text: String, generic: &mut Vec<Generic<'c>>| {
            let request = Generic::Address(text);
            if !generic.contains(&request) {
                generic.push(request);
            }
        };
        for issue_type in &critique.issue_types {
            let issue_type = issue_type.trim();
            if issue_type.is_empty() {
                continue;
            }
            match known_types.iter().find(|known| **known == issue_type) {
                Some(known) => requests.known.push(known),
                None => address(issue_type.replace(['_', '-'], " "), &mut requests.generic),
            }
        }
        if critique.issue_types.is_empty() {
            // Untyped issues say what is wrong only in words: address each as written.
            for issue in critique.fatal_issues.iter().chain(&critique.issues) {
                let issue = normalize(issue);
                if !issue.is_empty() && issue != CRITIQUE_UNAVAILABLE {
                    address(issue, &mut requests.generic);
                }
            }
        }
        for suggestion in &critique.suggestions {
            if covers(suggestion, &requests.known) {
                requests.covered.push(suggestion);
                continue;
            }
            let edit = normalize(&suggestion.edit);
            if edit.is_empty() {
                continue;
            }
            let target = suggestion.target.as_deref().map(str::trim).filter(|t| !t.is_empty());
            let request = Generic::Edit { edit, target };
            if !requests.generic.contains(&request) {
                requests.generic.push(request);
            }
        }
        requests
    }

    /// How many things the critique asks for: its known types and its generic requests. The
    /// reviser's effort is spread over them ([`crate::odds::focus`]).
    pub(crate) fn issues(&self) -> usize {
        self.known.len() + self.generic.len()
    }

    /// Whether the critique carries the issue type `name` and this writer knows it.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.known.contains(&name)
    }

    /// Whether acting on these requests can change `draft`: a known type's fix is always tried;
    /// a generic request only when the text it would write is not in the draft already.
    pub(crate) fn can_act_on(&self, draft: &str) -> bool {
        !self.known.is_empty() || self.generic.iter().any(|request| !normalize(draft).contains(&request.text()))
    }
}

/// One line of text: runs of whitespace (newlines included) as one space, trimmed.
pub(crate) fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn trim_stop(text: &str) -> &str {
    text.trim_end().trim_end_matches(['.', '!', '?', ':', ';', ',']).trim_end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use critbench_core::ScoreRange;

    fn critique(json: &str) -> Critique {
        Critique::parse(json, ScoreRange { min: 0.0, max: 10.0 }, None).unwrap()
    }

    #[test]
    fn known_types_get_their_fix_and_the_rest_is_generic() {
        let critique = critique(
            r#"{"score": 3, "issues": [{"text": "thin", "type": "weak_clarity"}, {"text": "x", "type": "tone_off"}],
                "suggestions": [{"dimension": "clarity", "target": "Results", "edit": "Expand it"},
                                {"dimension": "reasoning", "edit": "explain why,\n using because"}]}"#,
        );
        let requests = Requests::read(&critique, &["weak_clarity"], |s, known| {
            s.dimension.as_deref().is_some_and(|d| known.contains(&format!("weak_{d}").as_str()))
        });
        assert_eq!(requests.known, ["weak_clarity"]);
        assert_eq!(requests.covered.len(), 1);
        assert_eq!(
            requests.generic,
            [
                Generic::Address("tone off".into()),
                Generic::Edit { edit: "explain why, using because".into(), target: None }
            ]
        );
        assert!(requests.has("weak_clarity") && !requests.has("tone_off"));
    }

    #[test]
    fn untyped_issues_are_addressed_by_their_text_and_a_bare_score_asks_nothing() {
        let untyped = critique(r#"{"score": 3, "issues": ["no example given", "  "], "fatal_issues": ["off topic"]}"#);
        let requests = Requests::read(&untyped, &[], |_, _| false);
        let texts: Vec<String> = requests.generic.iter().map(Generic::text).collect();
        assert_eq!(
            texts,
            ["Revised to address this point: off topic.", "Revised to address this point: no example given."]
        );
        assert!(requests.can_act_on("a draft"));
        assert!(
            !requests.can_act_on(
                "Revised to address this point: off topic. Revised to address this point: no example given."
            )
        );

        let bare = critique(r#"{"score": 2}"#);
        assert!(!Requests::read(&bare, &["weak_clarity"], |_, _| false).can_act_on("a draft"));
        let unavailable = Critique::unavailable(ScoreRange { min: 0.0, max: 10.0 });
        assert!(!Requests::read(&unavailable, &[], |_, _| false).can_act_on("a draft"));
    }
}
