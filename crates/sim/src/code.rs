//! The code writer: a Python function for a code task, named as the prompt names it (`Write
//! fizzbuzz(n): ...`) or as `meta.function` does, with a docstring from the prompt and a body
//! that returns a result of the kind the prompt describes (it is a stand-in for a model: the body
//! is rarely right). A prompt asking for a fenced block (```` ```python ````) gets one.
//!
//! It knows no critic's issue types: everything a critique asks for is a generic request
//! ([`crate::request`]), written as a comment into the function its target names (else the
//! first one), where a critic reading the code sees it.

use std::collections::BTreeSet;

use critbench_core::{Critique, Rng, Task};

use crate::odds::difficulty;
use crate::request::{Generic, Requests};
use crate::text::{capitalize, strip_final_stop};

/// Whether a prompt asks for code: `Write name(args)...`, a function, a program, Python.
pub(crate) fn asks_for_code(prompt: &str) -> bool {
    let lower = prompt.to_lowercase();
    signature_in(prompt).is_some()
        || ["python", "```", "a function", "write code", "a program", "implement "]
            .iter()
            .any(|word| lower.contains(word))
}

/// The defects a function can really have (its truth, [`crate::truth`]), which are also the issue
/// types the writer fixes: `missing_edge_case` (no check of an empty first argument) and
/// `unfinished` (a TODO left in the body).
pub(crate) const DEFECTS: [&str; 2] = ["missing_edge_case", "unfinished"];

/// The defects of [`DEFECTS`] the writer finds in a function it wrote for `task`.
pub(crate) fn defects(task: &Task, draft: &str) -> BTreeSet<&'static str> {
    let spec = Spec::of(task);
    let code = Code::parse(draft, spec.fenced);
    let mut found = BTreeSet::new();
    if let Some(first) = spec.params.first()
        && !code.lines.iter().any(|line| line.trim() == format!("if not {first}:"))
    {
        found.insert("missing_edge_case");
    }
    if code.lines.iter().any(|line| line.contains("TODO")) {
        found.insert("unfinished");
    }
    found
}

/// The first draft.
pub(crate) fn generate(task: &Task, rng: &mut Rng) -> String {
    let spec = Spec::of(task);
    let skill = (1.0 - difficulty(task) + (rng.unit() - 0.5) * 0.6).clamp(0.0, 1.0);
    let mut code = Code { fenced: spec.fenced, lines: Vec::new() };
    code.lines.push(format!("def {}({}):", spec.name, spec.params.join(", ")));
    code.lines.push(format!("    \"\"\"{}\"\"\"", spec.summary));
    if rng.chance(0.3 + 0.5 * skill)
        && let Some(first) = spec.params.first()
    {
        code.lines.push(format!("    if not {first}:"));
        code.lines.push(format!("        return {}", spec.empty_result()));
    }
    code.lines.push(format!("    result = {}", spec.empty_result()));
    if let Some(first) = spec.params.first() {
        code.lines.push(format!("    for item in {first}:"));
        code.lines.push(format!("        result = {}", spec.step()));
    }
    if rng.chance(0.4 * (1.0 - skill)) {
        code.lines.push("    # TODO: handle the edge cases".to_string());
    }
    code.lines.push("    return result".to_string());
    code.render()
}

/// A revision: the generic requests of a critique that asks for something, blind edits
/// otherwise. The flag is whether it acted on the critique (`None`: none shown).
pub(crate) fn revise(task: &Task, draft: &str, feedback: Option<&Critique>, rng: &mut Rng) -> (String, Option<bool>) {
    let spec = Spec::of(task);
    let mut code = Code::parse(draft, spec.fenced);
    let acted = match feedback.map(|critique| Requests::read(critique, &DEFECTS, |_, _| false)) {
        Some(requests) if requests.can_act_on(draft) => {
            let lands = (0.8 - 0.5 * difficulty(task)).clamp(0.3, 0.9);
            if requests.has("missing_edge_case") && rng.chance(lands) {
                guard_empty_input(&mut code, &spec);
            }
            if requests.has("unfinished") && rng.chance(lands) {
                code.lines.retain(|line| !line.contains("TODO"));
            }
            for request in &requests.generic {
                if rng.chance(lands) {
                    apply_generic(&mut code, request);
                }
            }
            Some(true)
        }
        Some(_) => {
            edit_blindly(&mut code, &spec, rng);
            Some(false)
        }
        None => {
            edit_blindly(&mut code, &spec, rng);
            None
        }
    };
    (code.render(), acted)
}

/// The adjudicator's final pass: comment lines said twice kept once, with
/// [`ADDRESS_CHANCE`] the first thing `concerns` still asks for settled, and with
/// [`crate::OVER_EDIT_CHANCE`] the last comment dropped.
pub(crate) fn adjudicate(draft: &str, concerns: Option<&Critique>, rng: &mut Rng) -> String {
    let fenced = draft.trim_start().starts_with("```");
    let mut code = Code::parse(draft, fenced);
    let mut seen = BTreeSet::new();
    code.lines.retain(|line| !line.trim_start().starts_with('#') || seen.insert(line.trim().to_string()));
    if let Some(critique) = concerns
        && rng.chance(ADDRESS_CHANCE)
        && let Some(request) = Requests::read(critique, &[], |_, _| false).generic.first()
    {
        apply_generic(&mut code, request);
    }
    if rng.chance(crate::OVER_EDIT_CHANCE)
        && let Some(last) = code.lines.iter().rposition(|line| line.trim_start().starts_with('#'))
    {
        code.lines.remove(last);
    }
    code.render()
}

/// How often the adjudicator settles the draft's remaining concern.
const ADDRESS_CHANCE: f64 = 0.3;

/// Writes a request as a comment at the top of the body of the function its target names, else
/// of the first function, else at the end.
fn apply_generic(code: &mut Code, request: &Generic<'_>) {
    let comment = format!("# {}", request.text());
    let target = request.target().map(|t| t.trim().trim_end_matches("()").to_string());
    let def = target
        .and_then(|name| code.lines.iter().position(|line| line.trim_start().starts_with(&format!("def {name}("))))
        .or_else(|| code.lines.iter().position(|line| line.trim_start().starts_with("def ")));
    match def {
        Some(at) => {
            let indent = code.lines[at].len() - code.lines[at].trim_start().len() + 4;
            code.lines.insert(at + 1, format!("{}{comment}", " ".repeat(indent)));
        }
        None => code.lines.push(comment),
    }
}

/// What a reviser does when told only "improve this": a comment, a check or a name changes.
fn edit_blindly(code: &mut Code, spec: &Spec, rng: &mut Rng) {
    let roll = rng.unit();
    if roll < 0.3 {
        const NOTES: [&str; 4] =
            ["# keep the loop simple", "# one pass over the input", "# see the docstring", "# checked by hand"];
        let body = code.lines.iter().position(|line| line.trim_start().starts_with("result =")).unwrap_or(1);
        code.lines.insert(body.min(code.lines.len()), format!("    {}", rng.pick(&NOTES).expect("NOTES is not empty")));
    } else if roll < 0.5 {
        if let Some(todo) = code.lines.iter().position(|line| line.contains("TODO")) {
            code.lines.remove(todo);
        }
    } else if roll < 0.7 {
        let renamed = if code.lines.iter().any(|line| line.contains("result")) {
            ("result", "answer")
        } else {
            ("answer", "result")
        };
        for line in &mut code.lines {
            *line = line.replace(renamed.0, renamed.1);
        }
    } else if roll < 0.85 {
        guard_empty_input(code, spec);
    }
}

/// Checks the first argument for emptiness at the top of the body, unless the code already does.
fn guard_empty_input(code: &mut Code, spec: &Spec) {
    let Some(first) = spec.params.first() else { return };
    if code.lines.iter().any(|line| line.trim() == format!("if not {first}:")) {
        return;
    }
    let at = code.lines.iter().position(|line| line.trim_start().starts_with("\"\"\"")).map_or(1, |i| i + 1);
    code.lines.insert(at.min(code.lines.len()), format!("    if not {first}:"));
    code.lines.insert((at + 1).min(code.lines.len()), format!("        return {}", spec.empty_result()));
}

/// A Python source read back: its lines, without the fence around them.
#[derive(Clone, Debug, Default)]
struct Code {
    fenced: bool,
    lines: Vec<String>,
}

impl Code {
    fn parse(draft: &str, fenced: bool) -> Code {
        let body = draft.trim();
        let body = match body.strip_prefix("```") {
            Some(rest) => {
                let rest = rest.split_once('\n').map_or("", |(_, code)| code);
                rest.trim_end().strip_suffix("```").unwrap_or(rest)
            }
            None => body,
        };
        Code { fenced, lines: body.lines().map(|line| line.trim_end().to_string()).collect() }
    }

    fn render(&self) -> String {
        let mut text = self.lines.join("\n");
        text.push('\n');
        if self.fenced { format!("```python\n{text}```\n") } else { text }
    }
}

/// What the task asks for: the function's name and parameters, what it returns.
struct Spec {
    name: String,
    params: Vec<String>,
    /// The docstring: what the prompt says after the signature.
    summary: String,
    returns: Returns,
    fenced: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Returns {
    List,
    Bool,
    Dict,
    Index,
    Value,
}

impl Spec {
    fn of(task: &Task) -> Spec {
        let (name, params, rest) = match signature_in(&task.prompt) {
            Some((name, params, rest)) => (name, params, rest),
            None => ("solution".to_string(), vec!["data".to_string()], task.prompt.trim().to_string()),
        };
        let name = task.meta_str("function").map(std::borrow::Cow::into_owned).unwrap_or(name);
        let description = rest.split("```").next().unwrap_or("").trim();
        let first_sentence = description.split(". ").next().unwrap_or("").trim();
        let summary =
            capitalize(strip_final_stop(first_sentence.trim_start_matches([':', ' ']))).replace("\"\"\"", "'''");
        let summary = if summary.is_empty() { "Solve the task.".to_string() } else { format!("{summary}.") };
        let lower = description.to_lowercase();
        let returns = if lower.contains("whether") {
            Returns::Bool
        } else if lower.contains("index") {
            Returns::Index
        } else if lower.contains("dict") {
            Returns::Dict
        } else if lower.contains("list") {
            Returns::List
        } else {
            Returns::Value
        };
        Spec { name, params, summary, returns, fenced: task.prompt.contains("```") }
    }

    fn empty_result(&self) -> &'static str {
        match self.returns {
            Returns::List => "[]",
            Returns::Bool => "False",
            Returns::Dict => "{}",
            Returns::Index => "-1",
            Returns::Value => "None",
        }
    }

    /// What the loop does with each item: the obvious first attempt.
    fn step(&self) -> &'static str {
        match self.returns {
            Returns::List => "result + [item]",
            Returns::Bool => "result or bool(item)",
            Returns::Dict => "{**result, item: 1}",
            Returns::Index => "result",
            Returns::Value => "item",
        }
    }
}

/// `name(a, b)` after "Write " (or at the start): the name, the parameters and the text after.
fn signature_in(prompt: &str) -> Option<(String, Vec<String>, String)> {
    let text = prompt.trim();
    let text = text.strip_prefix("Write ").or_else(|| text.strip_prefix("write ")).unwrap_or(text);
    let open = text.find('(')?;
    let name = &text[..open];
    let identifier = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !identifier {
        return None;
    }
    let close = open + text[open..].find(')')?;
    let params: Vec<String> =
        text[open + 1..close].split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect();
    Some((name.to_string(), params, text[close + 1..].to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_comes_from_the_prompt() {
        let (name, params, rest) = signature_in("Write binary_search(xs, target): the index of x.").unwrap();
        assert_eq!((name.as_str(), params), ("binary_search", vec!["xs".to_string(), "target".to_string()]));
        assert_eq!(rest, ": the index of x.");
        assert!(signature_in("Explain why (briefly) bread rises.").is_none());
        assert!(asks_for_code("Write a Python function that sorts"));
        assert!(!asks_for_code("Explain why bread rises."));
    }

    #[test]
    fn a_fenced_draft_reads_back_into_the_same_text() {
        let text = "```python\ndef f(x):\n    return x\n```\n";
        assert_eq!(Code::parse(text, true).render(), text);
        assert_eq!(Code::parse("def f(x):\n    return x\n", false).render(), "def f(x):\n    return x\n");
    }
}
