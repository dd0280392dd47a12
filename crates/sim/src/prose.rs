//! The prose writer: an answer to a question or an instruction, or a short argumentative essay,
//! as paragraphs of plain sentences (separated by blank lines).
//!
//! It knows no critic's issue types: everything a critique asks for is a generic request
//! ([`crate::request`]), written into the paragraph that contains its target's words, else at
//! the end of the last paragraph.

use std::collections::BTreeSet;

use critbench_core::{Critique, Rng, Task};

use crate::odds::difficulty;
use crate::request::{Generic, Requests};
use crate::text::{capitalize, decapitalize, split_sentences, strip_final_stop};

/// What the prose is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Genre {
    /// An answer to a question or an instruction.
    Answer,
    /// A short argumentative essay.
    Essay,
}

/// The defects an answer or essay can really have (its truth, [`crate::truth`]), which are also
/// the issue types the writer fixes: `unsupported_claim` (the task gives source material and no
/// sentence draws on it) and `missing_reasons` (the claim alone: one paragraph for an answer,
/// fewer than three for an essay).
pub(crate) const DEFECTS: [&str; 2] = ["missing_reasons", "unsupported_claim"];

/// The defects of [`DEFECTS`] the writer finds in a text it wrote for `task`.
pub(crate) fn defects(task: &Task, genre: Genre, draft: &str) -> BTreeSet<&'static str> {
    let material = Material::of(task, genre);
    let prose = Prose::parse(draft);
    let mut found = BTreeSet::new();
    if !material.context.is_empty() && !prose.sentences().any(|s| s.starts_with(SOURCE_LEAD)) {
        found.insert("unsupported_claim");
    }
    let enough = match genre {
        Genre::Answer => 2,
        Genre::Essay => 3,
    };
    if prose.paragraphs.len() < enough {
        found.insert("missing_reasons");
    }
    found
}

/// How a sentence drawn from the source material begins.
const SOURCE_LEAD: &str = "As the source material notes, ";

/// The first draft.
pub(crate) fn generate(task: &Task, genre: Genre, rng: &mut Rng) -> String {
    let material = Material::of(task, genre);
    let skill = (1.0 - material.difficulty + (rng.unit() - 0.5) * 0.6).clamp(0.0, 1.0);
    let mut prose = Prose::default();
    let paragraphs = match genre {
        Genre::Answer => 1 + usize::from(rng.chance(0.4 * skill)),
        Genre::Essay => 1 + rng.below(2) + usize::from(rng.chance(skill)),
    };
    for index in 0..paragraphs {
        let part = material.part(index, paragraphs);
        let first = match part {
            Part::Body => material.sentence(part, &prose.sentences().cloned().collect::<Vec<_>>(), rng),
            _ => material.opening(part, rng),
        };
        let mut paragraph = vec![first];
        let count = rng.below(2) + (skill * 3.0 * rng.unit()).round() as usize;
        for _ in 0..count {
            let avoid: Vec<String> = prose.sentences().chain(&paragraph).cloned().collect();
            paragraph.push(material.sentence(part, &avoid, rng));
        }
        prose.paragraphs.push(paragraph);
    }
    prose.render()
}

/// A revision: the generic requests of a critique that asks for something, blind edits
/// otherwise. The flag is whether it acted on the critique (`None`: none shown).
pub(crate) fn revise(
    task: &Task,
    genre: Genre,
    draft: &str,
    feedback: Option<&Critique>,
    rng: &mut Rng,
) -> (String, Option<bool>) {
    let material = Material::of(task, genre);
    let mut prose = Prose::parse(draft);
    let acted = match feedback.map(|critique| Requests::read(critique, &DEFECTS, |_, _| false)) {
        Some(requests) if requests.can_act_on(draft) => {
            act_on_critique(&mut prose, &requests, &material, rng);
            Some(true)
        }
        Some(_) => {
            edit_blindly(&mut prose, &material, rng);
            Some(false)
        }
        None => {
            edit_blindly(&mut prose, &material, rng);
            None
        }
    };
    (prose.render(), acted)
}

/// The adjudicator's final pass: repeated sentences kept once; with
/// [`ADDRESS_CHANCE`] the first thing `concerns` still asks for settled; with
/// [`crate::OVER_EDIT_CHANCE`] the last sentence of every paragraph of three or more cut.
pub(crate) fn adjudicate(draft: &str, concerns: Option<&Critique>, rng: &mut Rng) -> String {
    let mut prose = Prose::parse(draft);
    let mut seen = BTreeSet::new();
    for paragraph in &mut prose.paragraphs {
        paragraph.retain(|sentence| seen.insert(sentence.clone()));
    }
    prose.paragraphs.retain(|paragraph| !paragraph.is_empty());
    if let Some(critique) = concerns
        && rng.chance(ADDRESS_CHANCE)
        && let Some(request) = Requests::read(critique, &[], |_, _| false).generic.first()
    {
        apply_generic(&mut prose, request);
    }
    if rng.chance(crate::OVER_EDIT_CHANCE) {
        for paragraph in &mut prose.paragraphs {
            if paragraph.len() >= 3 {
                paragraph.pop();
            }
        }
    }
    prose.render()
}

/// How often the adjudicator settles the draft's remaining concern.
const ADDRESS_CHANCE: f64 = 0.3;

/// Each request lands with a chance that falls with difficulty; a rewrite may also lose a
/// sentence of a paragraph it was not working on.
fn act_on_critique(prose: &mut Prose, requests: &Requests<'_>, material: &Material, rng: &mut Rng) {
    let lands = (0.8 - 0.5 * material.difficulty).clamp(0.3, 0.9);
    let mut touched = BTreeSet::new();
    if requests.has("unsupported_claim") && rng.chance(lands) {
        let avoid: Vec<String> = prose.sentences().cloned().collect();
        if let Some(sentence) = material.source_sentence(&avoid, rng) {
            if prose.paragraphs.is_empty() {
                prose.paragraphs.push(Vec::new());
            }
            prose.paragraphs[0].push(sentence);
            touched.insert(0);
        }
    }
    if requests.has("missing_reasons") && rng.chance(lands) {
        let at = match material.genre {
            Genre::Essay if prose.paragraphs.len() >= 3 => prose.paragraphs.len() - 1,
            _ => prose.paragraphs.len(),
        };
        let mut paragraph = Vec::new();
        for _ in 0..2 {
            let avoid: Vec<String> = prose.sentences().chain(&paragraph).cloned().collect();
            paragraph.push(material.sentence(Part::Body, &avoid, rng));
        }
        prose.paragraphs.insert(at, paragraph);
        touched.insert(at);
    }
    for request in &requests.generic {
        if rng.chance(lands) {
            touched.insert(apply_generic(prose, request));
        }
    }
    if rng.chance(0.1 + 0.2 * material.difficulty) {
        let untouched: Vec<usize> =
            (0..prose.paragraphs.len()).filter(|i| !touched.contains(i) && prose.paragraphs[*i].len() >= 2).collect();
        if let Some(&index) = rng.pick(&untouched) {
            let position = rng.below(prose.paragraphs[index].len());
            prose.paragraphs[index].remove(position);
        }
    }
}

/// Writes a request into the paragraph that contains its target's words, else the last one;
/// returns that paragraph.
fn apply_generic(prose: &mut Prose, request: &Generic<'_>) -> usize {
    let text = request.text();
    let sentence = if text.ends_with(['.', '!', '?']) { text } else { format!("{text}.") };
    if prose.paragraphs.is_empty() {
        prose.paragraphs.push(Vec::new());
    }
    let index = request
        .target()
        .map(str::to_lowercase)
        .and_then(|target| prose.paragraphs.iter().position(|p| p.join(" ").to_lowercase().contains(&target)))
        .unwrap_or(prose.paragraphs.len() - 1);
    prose.paragraphs[index].push(sentence);
    index
}

/// What a reviser does when told only "improve this": a sentence comes, goes or is reworded.
fn edit_blindly(prose: &mut Prose, material: &Material, rng: &mut Rng) {
    if prose.paragraphs.is_empty() {
        prose.paragraphs.push(vec![material.opening(Part::Claim, rng)]);
    }
    for _ in 0..rng.between(1, 2) {
        let index = rng.below(prose.paragraphs.len());
        let part = material.part(index, prose.paragraphs.len());
        let roll = rng.unit();
        if roll < 0.5 {
            let avoid: Vec<String> = prose.sentences().cloned().collect();
            let sentence = material.sentence(part, &avoid, rng);
            prose.paragraphs[index].push(sentence);
        } else if roll < 0.65 {
            let paragraph = &mut prose.paragraphs[index];
            if paragraph.len() >= 2 {
                let position = rng.below(paragraph.len());
                paragraph.remove(position);
            }
        } else if roll < 0.85 {
            let avoid: Vec<String> = prose.sentences().cloned().collect();
            let replacement = material.sentence(part, &avoid, rng);
            let paragraph = &mut prose.paragraphs[index];
            let position = rng.below(paragraph.len().max(1));
            match paragraph.get_mut(position) {
                Some(sentence) => *sentence = replacement,
                None => paragraph.push(replacement),
            }
        } else if roll < 0.92 && prose.paragraphs[index].len() >= 4 {
            // A long paragraph split in two.
            let paragraph = &mut prose.paragraphs[index];
            let rest = paragraph.split_off(paragraph.len() / 2);
            prose.paragraphs.insert(index + 1, rest);
        }
    }
}

/// A draft read back: paragraphs of sentences.
#[derive(Clone, Debug, Default)]
struct Prose {
    paragraphs: Vec<Vec<String>>,
}

impl Prose {
    fn parse(text: &str) -> Prose {
        let mut prose = Prose::default();
        for block in text.split("\n\n") {
            let sentences = split_sentences(&block.lines().map(str::trim).collect::<Vec<_>>().join(" "));
            if !sentences.is_empty() {
                prose.paragraphs.push(sentences);
            }
        }
        prose
    }

    fn render(&self) -> String {
        let paragraphs: Vec<String> =
            self.paragraphs.iter().filter(|p| !p.is_empty()).map(|sentences| sentences.join(" ")).collect();
        let mut text = paragraphs.join("\n\n");
        text.push('\n');
        text
    }

    fn sentences(&self) -> impl Iterator<Item = &String> {
        self.paragraphs.iter().flatten()
    }
}

/// Which part of the text a paragraph is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// The answer itself, or the essay's claim.
    Claim,
    /// Reasons, mechanisms, examples.
    Body,
    /// The essay's last paragraph.
    Close,
}

/// What the writer knows about the task: what it is about, its source material.
struct Material {
    genre: Genre,
    /// The question or claim, as a phrase ("why bread rises", "whether cities make buses free").
    subject: String,
    context: Vec<String>,
    difficulty: f64,
}

impl Material {
    fn of(task: &Task, genre: Genre) -> Material {
        Material {
            genre,
            subject: subject_of(&task.prompt),
            context: task.context.as_deref().map(split_sentences).unwrap_or_default(),
            difficulty: difficulty(task),
        }
    }

    /// The part paragraph `index` of `count` plays.
    fn part(&self, index: usize, count: usize) -> Part {
        match (self.genre, index) {
            (_, 0) => Part::Claim,
            (Genre::Essay, i) if i + 1 == count && count >= 3 => Part::Close,
            _ => Part::Body,
        }
    }

    fn fill(&self, template: &str) -> String {
        capitalize(&template.replace("{s}", &self.subject))
    }

    /// The first sentence of a paragraph.
    fn opening(&self, part: Part, rng: &mut Rng) -> String {
        let templates: &[&str] = match (self.genre, part) {
            (Genre::Answer, Part::Claim) => &[
                "The short answer to {s} is that a few things work together.",
                "In brief, {s} comes down to one main mechanism and a few conditions.",
                "{s} has a simple core explanation.",
            ],
            (Genre::Essay, Part::Claim) => &[
                "On {s}, the case for yes is stronger than it first looks.",
                "This essay argues that the answer to {s} is yes, with conditions.",
                "The honest answer to {s} is a cautious yes.",
            ],
            (_, Part::Close) => &[
                "On balance, the benefits outweigh the risks.",
                "The sensible course is to try it carefully and measure the results.",
            ],
            (_, Part::Body) => body_templates(self.genre),
        };
        self.fill(rng.pick(templates).expect("templates are not empty"))
    }

    /// A sentence drawn from a source sentence that `avoid` does not have yet, when there is one.
    fn source_sentence(&self, avoid: &[String], rng: &mut Rng) -> Option<String> {
        let unused: Vec<&String> = self
            .context
            .iter()
            .filter(|source| !avoid.iter().any(|s| s.contains(&decapitalize(strip_final_stop(source)))))
            .collect();
        rng.pick(&unused).map(|source| format!("{SOURCE_LEAD}{}", decapitalize(source)))
    }

    /// A fresh sentence for a paragraph: one of the source material's, or a template, that
    /// `avoid` (the sentences already written) does not have yet, when there is one.
    fn sentence(&self, part: Part, avoid: &[String], rng: &mut Rng) -> String {
        if rng.chance(0.3)
            && let Some(sentence) = self.source_sentence(avoid, rng)
        {
            return sentence;
        }
        let templates = match part {
            Part::Close => &["Either way, the question deserves a clear answer rather than a shrug."][..],
            _ => body_templates(self.genre),
        };
        let filled: Vec<String> = templates.iter().map(|t| self.fill(t)).collect();
        let fresh: Vec<&String> = filled.iter().filter(|s| !avoid.contains(s)).collect();
        match rng.pick(&fresh) {
            Some(sentence) => (*sentence).clone(),
            None => rng.pick(&filled).expect("templates are not empty").clone(),
        }
    }
}

fn body_templates(genre: Genre) -> &'static [&'static str] {
    match genre {
        Genre::Answer => &[
            "The main mechanism is simple once its parts are named.",
            "It happens because each step makes the next one possible.",
            "In everyday cases the effect is easy to see, which is why it is so often described.",
            "Conditions matter: the same process runs faster or slower depending on the setting.",
            "A concrete example makes the point clearer than a general rule.",
            "Most accounts of {s} agree on these basics, even when they differ on the details.",
            "The details depend on the case, but the outline holds.",
        ],
        Genre::Essay => &[
            "The first reason is fairness: the change helps the people who need it most.",
            "The second reason is cost, because the savings outweigh the price over time.",
            "Critics worry about side effects, and those worries deserve an answer.",
            "Evidence from places that tried it is encouraging, if still limited.",
            "A gradual start would let the benefits show before the costs grow.",
            "The strongest objection is practical rather than principled.",
        ],
    }
}

/// What a prompt asks about, as a phrase: "Explain why bread rises." → "why bread rises";
/// "...answering the question: Should X do Y?" → "whether X do Y"; "How do bees dance?" → "how
/// bees dance"; "...arguing that X." → "X".
fn subject_of(prompt: &str) -> String {
    // Asides such as "(about 150 words)" are instructions, not the subject.
    let mut plain = String::with_capacity(prompt.len());
    let mut depth = 0usize;
    for c in prompt.chars() {
        match c {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    let plain = plain.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut text = plain.as_str();
    if let Some((_, question)) = text.rsplit_once(':')
        && !question.trim().is_empty()
    {
        text = question.trim();
    }
    let lower = text.to_lowercase();
    for marker in [" arguing that ", " explaining ", " arguing ", " about ", " on "] {
        if let Some(at) = lower.find(marker) {
            text = &text[at + marker.len()..];
            break;
        }
    }
    let text = text.trim().trim_end_matches(['.', '?', '!']).trim();
    let mut words: Vec<&str> = text.split_whitespace().collect();
    while let Some(first) = words.first() {
        let first = first.to_lowercase();
        if matches!(
            first.as_str(),
            "explain" | "describe" | "discuss" | "summarize" | "summarise" | "tell" | "me" | "briefly"
        ) {
            words.remove(0);
        } else {
            break;
        }
    }
    const AUXILIARIES: [&str; 13] =
        ["do", "does", "did", "is", "are", "was", "were", "can", "could", "should", "would", "will", "has"];
    if let Some(first) = words.first().map(|w| w.to_lowercase()) {
        if AUXILIARIES.contains(&first.as_str()) {
            // A yes/no question: "Should cities ..." → "whether cities ...".
            words[0] = "whether";
        } else if matches!(first.as_str(), "why" | "how" | "what" | "when" | "where" | "who" | "which")
            && words.get(1).is_some_and(|w| AUXILIARIES.contains(&w.to_lowercase().as_str()))
            && words.len() > 2
        {
            words.remove(1);
        }
    }
    let subject = decapitalize(&words.join(" "));
    if subject.is_empty() { "the question".to_string() } else { subject }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subject_is_what_the_prompt_asks_about() {
        assert_eq!(subject_of("Explain why bread rises."), "why bread rises");
        assert_eq!(
            subject_of("How do honeybees tell other bees where to find flowers?"),
            "how honeybees tell other bees where to find flowers"
        );
        assert_eq!(
            subject_of("Write a short essay answering the question: Should cities make buses free?"),
            "whether cities make buses free"
        );
        assert_eq!(
            subject_of("Write one paragraph arguing that cities should plant trees."),
            "cities should plant trees"
        );
        assert_eq!(
            subject_of("Write one short paragraph (about 60 words) arguing for or against a four-day week."),
            "for or against a four-day week"
        );
        assert_eq!(subject_of(""), "the question");
    }

    #[test]
    fn a_draft_reads_back_into_the_same_text() {
        let text = "First sentence. Second one.\n\nAnother paragraph.\n";
        let prose = Prose::parse(text);
        assert_eq!(prose.paragraphs, [vec!["First sentence.", "Second one."], vec!["Another paragraph."]]);
        assert_eq!(prose.render(), text);
    }
}
