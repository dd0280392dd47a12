//! The RAG writer: answers a question from the task's evidence pool and cites evidence ids.
//!
//! It judges relevance from the text alone (content words shared by the question and each
//! passage). Its first drafts show the failures of seeds 000 and 001: no evidence ids, a cited
//! distractor, a vague or loosely paraphrased answer, and — when the pool has nothing on the
//! question — a confident answer citing an id that is not in the pool.
//!
//! It knows the `evidence` critic's issue types and fixes each specifically (its suggestions,
//! which target `evidence_ids` or `answer`, come with them); anything else a critique asks for
//! is a generic request ([`crate::request`]), added to the answer.

use std::collections::BTreeSet;

use critbench_core::{Critique, Rng, Suggestion, Task};
use serde_json::Value;

use crate::odds::difficulty;
use crate::request::Requests;
use crate::text::{content_words, split_sentences, strip_final_stop};

/// The issue types the RAG writer has a specific fix for: the `evidence` critic's.
const KNOWN_TYPES: [&str; 7] = [
    "invalid_draft",
    "empty_answer",
    "unknown_evidence_id",
    "missing_evidence",
    "answer_too_short",
    "off_topic_evidence",
    "unsupported_answer",
];

/// The defects an answer can really have (its truth, [`crate::truth`]): cut off, empty, citing an
/// id the pool does not have, citing a passage about something else, or citing no passage that
/// answers the question when the pool has one.
pub(crate) const DEFECTS: [&str; 5] =
    ["empty_answer", "invalid_draft", "missing_evidence", "off_topic_evidence", "unknown_evidence_id"];

/// The defects of [`DEFECTS`] the writer finds in an answer when it reads it against the pool.
pub(crate) fn defects(task: &Task, draft: &str) -> BTreeSet<&'static str> {
    let pool = Pool::of(task);
    let answer = Answer::parse(draft);
    let mut found = BTreeSet::new();
    if answer.broken {
        found.insert("invalid_draft");
    }
    if answer.sentences.is_empty() {
        found.insert("empty_answer");
    }
    if answer.ids.iter().any(|id| !pool.has(id)) {
        found.insert("unknown_evidence_id");
    }
    if !pool.relevant.is_empty() {
        if answer.ids.iter().any(|id| pool.has(id) && !pool.relevant.contains(id)) {
            found.insert("off_topic_evidence");
        }
        if !answer.ids.iter().any(|id| pool.relevant.contains(id)) {
            found.insert("missing_evidence");
        }
    }
    found
}

/// The first draft of an answer.
pub(crate) fn generate(task: &Task, rng: &mut Rng) -> String {
    let pool = Pool::of(task);
    let d = difficulty(task);
    let skill = (1.0 - d + (rng.unit() - 0.5) * 0.6).clamp(0.0, 1.0);
    let mut answer = Answer::default();
    if pool.relevant.is_empty() {
        if rng.chance(0.45 + 0.35 * d) {
            // The classic RAG failure: nothing in the pool answers the question, so the writer
            // answers from memory and makes up a source.
            answer.sentences.push(pool.answer_from_memory(rng));
            answer.ids.push(pool.invented_id(rng));
        } else if let (true, Some(closest)) = (rng.chance(0.5), pool.closest()) {
            answer.sentences.push(pool.abstain(closest, rng));
            answer.ids.push(closest.to_string());
        } else {
            answer.sentences.push(vague(rng));
        }
    } else {
        let mut used = vec![pool.relevant[0].clone()];
        if pool.relevant.len() > 1 && rng.chance(0.5) {
            used.push(pool.relevant[1].clone());
        }
        let roll = rng.unit();
        let style = if roll < 0.2 + 0.5 * skill {
            Style::Quoted
        } else if roll < 0.85 {
            Style::Loose
        } else {
            Style::Vague
        };
        answer.sentences = pool.compose(&used, style, rng);
        // The first draft: a plausible answer with no evidence ids.
        if !rng.chance(0.25 + 0.4 * d) {
            answer.ids = used;
        }
        if rng.chance(0.1 + 0.3 * d)
            && let Some(distractor) = pool.random_distractor(rng)
        {
            answer.ids.push(distractor);
        }
    }
    let format = Format::of(task);
    answer.broken = format == Format::Json && rng.chance(0.02 + 0.05 * d);
    answer.render(format, &pool)
}

/// A revision: fixes for what the critique asks when one is given and asks for something,
/// random edits otherwise. The flag is whether it acted on the critique (`None`: none shown).
pub(crate) fn revise(task: &Task, draft: &str, feedback: Option<&Critique>, rng: &mut Rng) -> (String, Option<bool>) {
    let pool = Pool::of(task);
    let d = difficulty(task);
    let mut answer = Answer::parse(draft);
    let acted = match feedback.map(|critique| Requests::read(critique, &KNOWN_TYPES, covers)) {
        Some(requests) if requests.can_act_on(draft) => {
            act_on_critique(&mut answer, &requests, &pool, d, rng);
            Some(true)
        }
        Some(_) => {
            edit_blindly(&mut answer, &pool, rng);
            Some(false)
        }
        None => {
            edit_blindly(&mut answer, &pool, rng);
            None
        }
    };
    (answer.render(Format::of(task), &pool), acted)
}

/// Whether a suggestion is one of those the known issue types come with: the `evidence`
/// critic's name no dimension and target a field of the answer.
fn covers(suggestion: &Suggestion, known: &[&str]) -> bool {
    !known.is_empty()
        && suggestion.dimension.is_none()
        && matches!(suggestion.target.as_deref(), Some("evidence_ids" | "answer"))
}

/// The adjudicator's final pass: reconciles the answer with its sources, never adds
/// content. It mends a cut-off object, drops repeated sentences and ids and cites only ids in the
/// pool (the invented-source contradiction); an answer left without ids cites the passages it
/// draws on. Now and then it over-edits: an answer of several sentences is cut back to its first,
/// which can leave it too short.
pub(crate) fn adjudicate(task: &Task, draft: &str, rng: &mut Rng) -> String {
    let pool = Pool::of(task);
    let mut answer = Answer::parse(draft);
    answer.broken = false;
    let mut seen = BTreeSet::new();
    answer.sentences.retain(|sentence| seen.insert(sentence.to_lowercase()));
    let mut ids = BTreeSet::new();
    answer.ids.retain(|id| pool.has(id) && ids.insert(id.clone()));
    if answer.ids.is_empty() {
        answer.ids = pool.sources_of(&answer.sentences);
    }
    if answer.sentences.len() > 1 && rng.chance(crate::OVER_EDIT_CHANCE) {
        answer.sentences.truncate(1);
    }
    answer.render(Format::of(task), &pool)
}

fn act_on_critique(answer: &mut Answer, requests: &Requests<'_>, pool: &Pool, d: f64, rng: &mut Rng) {
    let lands = (0.9 - 0.4 * d).clamp(0.3, 0.95);

    if answer.broken && requests.has("invalid_draft") && rng.chance(lands.max(0.85)) {
        answer.broken = false;
    }
    if answer.sentences.is_empty() || requests.has("empty_answer") {
        if rng.chance(lands) {
            pool.rewrite_from_evidence(answer, rng);
        } else if answer.sentences.is_empty() {
            answer.sentences.push(vague(rng));
        }
    }
    if requests.has("unknown_evidence_id") && rng.chance(lands) {
        // Check every cited id against the pool and keep only real ones.
        answer.ids.retain(|id| pool.has(id));
    }
    if requests.has("off_topic_evidence") {
        // Check every cited passage against the question, and drop the ones about something else.
        let mut seen = BTreeSet::new();
        let off_topic: Vec<String> = answer
            .ids
            .iter()
            .filter(|id| pool.has(id) && !pool.relevant.contains(id) && seen.insert(id.to_string()))
            .cloned()
            .collect();
        for id in off_topic {
            if rng.chance(lands) {
                answer.ids.retain(|kept| *kept != id);
            }
        }
    }
    // Whether the critique asked for ids or the fixes above removed the last one, an answer
    // without ids cannot pass the check: cite the passages it draws on.
    if answer.ids.is_empty() && rng.chance(lands) {
        answer.ids = pool.sources_of(&answer.sentences);
        if answer.ids.is_empty() {
            answer.ids.extend(pool.relevant.first().cloned().or_else(|| pool.closest().map(str::to_string)));
        }
    }
    if requests.has("unsupported_answer") && rng.chance(lands) {
        pool.rewrite_from_evidence(answer, rng);
    } else if requests.has("answer_too_short") && rng.chance(lands) {
        if answer.sentences.len() > 1 || pool.relevant.is_empty() {
            pool.lengthen(answer, false, rng);
        } else {
            pool.rewrite_from_evidence(answer, rng);
        }
    }
    for request in &requests.generic {
        if rng.chance(lands) {
            let text = request.text();
            let sentence = if text.ends_with(['.', '!', '?']) { text } else { format!("{text}.") };
            answer.sentences.push(sentence);
        }
    }
    if rng.chance(0.06 + 0.12 * d) {
        // A side effect of rewriting: one sentence paraphrased loosely, or one id lost.
        if answer.ids.len() > 1 && rng.chance(0.5) {
            let position = rng.below(answer.ids.len());
            answer.ids.remove(position);
        } else if !answer.sentences.is_empty() && !pool.relevant.is_empty() {
            let position = rng.below(answer.sentences.len());
            answer.sentences[position] = loosen(&answer.sentences[position], rng);
        }
    }
}

/// What a reviser does when asked only to "improve the answer": rephrase, add or drop a
/// sentence or an id. It does not check ids against the pool.
fn edit_blindly(answer: &mut Answer, pool: &Pool, rng: &mut Rng) {
    if answer.broken && rng.chance(0.6) {
        answer.broken = false;
    }
    if answer.sentences.is_empty() {
        answer.sentences.push(vague(rng));
    }
    for _ in 0..rng.between(1, 2) {
        let roll = rng.unit();
        if roll < 0.25 {
            if answer.ids.is_empty() {
                answer.ids = pool.sources_of(&answer.sentences);
            }
        } else if roll < 0.5 {
            let sources = pool.sources_or_relevant(&answer.sentences);
            if !sources.is_empty() {
                let style = match rng.unit() {
                    r if r < 0.35 => Style::Quoted,
                    r if r < 0.8 => Style::Loose,
                    _ => Style::Vague,
                };
                answer.sentences = pool.compose(&sources, style, rng);
            }
        } else if roll < 0.62 {
            if let Some(id) = rng.pick(&pool.ids).cloned()
                && !answer.ids.contains(&id)
            {
                answer.ids.push(id);
            }
        } else if roll < 0.74 {
            if !answer.ids.is_empty() {
                let position = rng.below(answer.ids.len());
                answer.ids.remove(position);
            }
        } else if roll < 0.84 {
            pool.lengthen(answer, true, rng);
        } else if roll < 0.92 && answer.sentences.len() > 1 {
            let position = rng.below(answer.sentences.len());
            answer.sentences.remove(position);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// The JSON form `{"answer": "...", "evidence_ids": [...]}`.
    Json,
    /// Markdown prose citing `[d1]`.
    Prose,
}

impl Format {
    fn of(task: &Task) -> Format {
        match task.meta_str("format").as_deref() {
            Some("prose") => Format::Prose,
            _ => Format::Json,
        }
    }
}

/// How closely an answer follows its sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    /// The source's own words.
    Quoted,
    /// Part of the source, padded with generalities.
    Loose,
    /// No content from the sources at all.
    Vague,
}

/// An answer as the writer reads it back from a draft.
#[derive(Clone, Debug, Default)]
struct Answer {
    sentences: Vec<String>,
    ids: Vec<String>,
    /// The JSON object was cut off (a glitch the critic must treat as fatal).
    broken: bool,
}

impl Answer {
    fn parse(draft: &str) -> Answer {
        let body = draft.trim();
        if body.starts_with('{') {
            return match serde_json::from_str::<Value>(body) {
                Ok(value) => Answer {
                    sentences: split_sentences(value.get("answer").and_then(Value::as_str).unwrap_or("")),
                    ids: value
                        .get("evidence_ids")
                        .and_then(Value::as_array)
                        .map(|ids| ids.iter().filter_map(Value::as_str).map(str::to_string).collect())
                        .unwrap_or_default(),
                    broken: false,
                },
                Err(_) => salvage(body),
            };
        }
        let (text, ids) = strip_citations(body);
        Answer { sentences: split_sentences(&text), ids, broken: false }
    }

    fn render(&self, format: Format, pool: &Pool) -> String {
        match format {
            Format::Json => {
                let object = serde_json::json!({ "answer": self.sentences.join(" "), "evidence_ids": self.ids });
                let mut text = object.to_string();
                if self.broken {
                    // Cut off mid-list, as a truncated model reply would be.
                    text.truncate(text.len().saturating_sub(2));
                }
                text
            }
            Format::Prose => self.render_prose(pool),
        }
    }

    /// Each id is cited after the sentence that draws on it; the rest after the last sentence.
    fn render_prose(&self, pool: &Pool) -> String {
        let mut placed: Vec<Vec<&str>> = vec![Vec::new(); self.sentences.len()];
        let mut leftover = Vec::new();
        for id in &self.ids {
            let home = pool.text(id).and_then(|text| {
                let source = content_words(text);
                self.sentences.iter().position(|sentence| content_words(sentence).intersection(&source).count() >= 2)
            });
            match home {
                Some(index) => placed[index].push(id),
                None => leftover.push(id.as_str()),
            }
        }
        if let Some(last) = placed.last_mut() {
            last.extend(leftover);
        }
        let rendered: Vec<String> = self
            .sentences
            .iter()
            .zip(&placed)
            .map(|(sentence, ids)| {
                if ids.is_empty() {
                    return sentence.clone();
                }
                let marks: Vec<String> = ids.iter().map(|id| format!("[{id}]")).collect();
                let stop = sentence.chars().last().filter(|c| matches!(c, '.' | '!' | '?')).unwrap_or('.');
                format!("{} {}{stop}", strip_final_stop(sentence), marks.join(" "))
            })
            .collect();
        let mut text = rendered.join(" ");
        text.push('\n');
        text
    }
}

/// Reads what it can from a cut-off JSON draft: the answer string and the quoted ids.
fn salvage(body: &str) -> Answer {
    let quoted_after = |key: &str| -> Vec<String> {
        let Some(at) = body.find(key) else { return Vec::new() };
        let rest = &body[at + key.len()..];
        let rest = rest.trim_start_matches(['"', ':', ' ']);
        rest.split('"').skip(1).step_by(2).map(str::to_string).collect()
    };
    let answer = body
        .find("\"answer\"")
        .map(|at| &body[at + "\"answer\"".len()..])
        .and_then(|rest| rest.trim_start_matches([':', ' ']).strip_prefix('"'))
        .map(|rest| rest.split('"').next().unwrap_or("").to_string())
        .unwrap_or_default();
    let ids = quoted_after("\"evidence_ids\"").into_iter().filter(|id| !id.contains(' ') && !id.is_empty()).collect();
    Answer { sentences: split_sentences(&answer), ids, broken: true }
}

/// Prose without its `[d1]` marks, and the ids cited, in order, without repeats.
fn strip_citations(text: &str) -> (String, Vec<String>) {
    let mut plain = String::with_capacity(text.len());
    let mut ids: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        plain.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find(']') {
            Some(close) if is_id_list(&after[..close]) => {
                for id in after[..close].split(',').map(str::trim) {
                    if !ids.iter().any(|seen| seen == id) {
                        ids.push(id.to_string());
                    }
                }
                rest = &after[close + 1..];
            }
            _ => {
                plain.push('[');
                rest = after;
            }
        }
    }
    plain.push_str(rest);
    let lines: Vec<&str> = plain.lines().filter(|line| !line.trim_start().starts_with('#')).collect();
    let plain = lines.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
    (plain.replace(" .", ".").replace(" ,", ","), ids)
}

fn is_id_list(inside: &str) -> bool {
    !inside.trim().is_empty()
        && inside.split(',').all(|id| {
            let id = id.trim();
            !id.is_empty() && id.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        })
}

/// The task's evidence as the writer sees it: which passages address the question.
struct Pool<'a> {
    task: &'a Task,
    ids: Vec<String>,
    /// Ids of passages that share enough content words with the question, best first.
    relevant: Vec<String>,
    question: BTreeSet<String>,
}

impl<'a> Pool<'a> {
    fn of(task: &'a Task) -> Pool<'a> {
        let question = content_words(&task.prompt);
        let needed = question.len().min(2);
        let mut scored: Vec<(usize, &String)> = task
            .evidence
            .iter()
            .map(|(id, text)| (content_words(text).intersection(&question).count(), id))
            .filter(|(shared, _)| *shared > 0 && *shared >= needed)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        Pool {
            task,
            ids: task.evidence.keys().cloned().collect(),
            relevant: scored.into_iter().map(|(_, id)| id.clone()).collect(),
            question,
        }
    }

    fn has(&self, id: &str) -> bool {
        self.task.evidence.contains_key(id)
    }

    fn text(&self, id: &str) -> Option<&str> {
        self.task.evidence.get(id).map(String::as_str)
    }

    /// The passage sharing most words with the question, relevant or not.
    fn closest(&self) -> Option<&str> {
        self.task
            .evidence
            .iter()
            .max_by(|a, b| {
                let shared = |text: &str| content_words(text).intersection(&self.question).count();
                shared(a.1).cmp(&shared(b.1)).then_with(|| b.0.cmp(a.0))
            })
            .map(|(id, _)| id.as_str())
    }

    fn random_distractor(&self, rng: &mut Rng) -> Option<String> {
        let distractors: Vec<&String> = self.ids.iter().filter(|id| !self.relevant.contains(id)).collect();
        rng.pick(&distractors).map(|id| (*id).clone())
    }

    /// An id shaped like the pool's ids (`d7` next to `d1`..`d4`) that is not in it.
    fn invented_id(&self, rng: &mut Rng) -> String {
        let prefix: String =
            self.ids.first().map(|id| id.chars().take_while(|c| !c.is_ascii_digit()).collect()).unwrap_or_default();
        let prefix = if prefix.is_empty() { "d".to_string() } else { prefix };
        let highest = self
            .ids
            .iter()
            .filter_map(|id| id.trim_start_matches(|c: char| !c.is_ascii_digit()).parse::<u32>().ok())
            .max()
            .unwrap_or(0);
        let mut number = highest + rng.between(1, 4) as u32;
        loop {
            let id = format!("{prefix}{number}");
            if !self.has(&id) {
                return id;
            }
            number += 1;
        }
    }

    /// Pool ids whose passages an answer draws on (three or more shared content words).
    fn sources_of(&self, sentences: &[String]) -> Vec<String> {
        let words = content_words(&sentences.join(" "));
        self.task
            .evidence
            .iter()
            .filter(|(_, text)| content_words(text).intersection(&words).count() >= 3)
            .map(|(id, _)| id.clone())
            .collect()
    }

    fn sources_or_relevant(&self, sentences: &[String]) -> Vec<String> {
        let sources = self.sources_of(sentences);
        if sources.is_empty() { self.relevant.iter().take(1).cloned().collect() } else { sources }
    }

    /// One sentence per used passage, in the given style.
    fn compose(&self, used: &[String], style: Style, rng: &mut Rng) -> Vec<String> {
        if style == Style::Vague {
            return vec![vague(rng)];
        }
        used.iter()
            .filter_map(|id| self.text(id))
            .map(|text| {
                let quoted = split_sentences(text).into_iter().next().unwrap_or_default();
                match style {
                    Style::Loose => loosen(&quoted, rng),
                    _ => quoted,
                }
            })
            .collect()
    }

    /// Rewrites the answer from the evidence: quote the relevant passages it cites (or the
    /// best relevant one, cited), or say plainly that the pool does not cover the question.
    fn rewrite_from_evidence(&self, answer: &mut Answer, rng: &mut Rng) {
        let cited: Vec<String> = answer.ids.iter().filter(|id| self.relevant.contains(id)).cloned().collect();
        if !cited.is_empty() {
            answer.sentences = self.compose(&cited, Style::Quoted, rng);
        } else if let Some(best) = self.relevant.first() {
            answer.sentences = self.compose(std::slice::from_ref(best), Style::Quoted, rng);
            if !answer.ids.contains(best) {
                answer.ids.push(best.clone());
            }
        } else if let Some(closest) = self.closest() {
            answer.sentences = vec![self.abstain(closest, rng)];
            if !answer.ids.iter().any(|id| id == closest) {
                answer.ids.push(closest.to_string());
            }
        }
    }

    /// Adds a sentence from a relevant passage the answer does not use yet; with none left, a
    /// blind reviser (`pad_when_stuck`) may pad the answer with a generality instead.
    fn lengthen(&self, answer: &mut Answer, pad_when_stuck: bool, rng: &mut Rng) {
        let words = content_words(&answer.sentences.join(" "));
        let unused = self
            .relevant
            .iter()
            .find(|id| self.text(id).is_some_and(|text| content_words(text).intersection(&words).count() < 3));
        match unused {
            Some(id) => {
                let style = if rng.chance(0.6) { Style::Quoted } else { Style::Loose };
                answer.sentences.extend(self.compose(std::slice::from_ref(id), style, rng));
            }
            None if pad_when_stuck && rng.chance(0.5) => answer.sentences.push(vague(rng)),
            None => {}
        }
    }

    /// A confident answer with nothing behind it, built from the question's own words.
    fn answer_from_memory(&self, rng: &mut Rng) -> String {
        let words: Vec<&str> = self
            .task
            .prompt
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| self.question.contains(&w.to_lowercase()))
            .collect();
        let topic = match words.as_slice() {
            [] => "this".to_string(),
            [only] => only.to_string(),
            [first, .., last] => format!("{first} and {last}"),
        };
        const MEMORY: [&str; 3] = [
            "Studies have established that {t} are closely linked through well understood mechanisms.",
            "The standard explanation is that {t} interact in a predictable way, as reported in earlier research.",
            "Experts agree that {t} follow a simple pattern that has been measured many times.",
        ];
        rng.pick(&MEMORY).expect("MEMORY is not empty").replace("{t}", &topic)
    }

    /// The honest answer when no passage addresses the question.
    fn abstain(&self, closest: &str, rng: &mut Rng) -> String {
        let opening: Vec<&str> = self.text(closest).unwrap_or("").split_whitespace().take(6).collect();
        let opening = opening.join(" ");
        let opening = opening.trim_end_matches([',', '.', ';', ':']);
        const ABSTAIN: [&str; 2] = [
            "The evidence provided does not answer this question; the closest passage, \"{w}...\", is about something else.",
            "None of the passages covers this question directly; the nearest one, \"{w}...\", concerns another topic.",
        ];
        rng.pick(&ABSTAIN).expect("ABSTAIN is not empty").replace("{w}", opening)
    }
}

/// Keeps the first half or so of a sentence and pads it with generalities.
fn loosen(sentence: &str, rng: &mut Rng) -> String {
    const TAILS: [&str; 6] = [
        "which matters for a number of practical reasons",
        "among several other contributing factors",
        "although the details depend heavily on the situation",
        "in ways that specialists continue to debate",
        "for reasons that are widely discussed elsewhere",
        "alongside various broader considerations",
    ];
    // A cut must not leave a dangling "the" or "and" behind.
    const DANGLING: [&str; 24] = [
        "a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "its", "of", "on", "or", "than", "that",
        "the", "their", "to", "using", "when", "where", "which", "whose",
    ];
    let words: Vec<&str> = strip_final_stop(sentence).split_whitespace().collect();
    let cut = ((words.len() as f64) * (0.4 + 0.25 * rng.unit())).ceil() as usize;
    let mut keep = cut.clamp(1, words.len().max(1)).min(words.len());
    while keep > 1 && DANGLING.contains(&words[keep - 1].trim_end_matches([',', ';', ':']).to_lowercase().as_str()) {
        keep -= 1;
    }
    let kept = words[..keep].join(" ");
    let kept = kept.trim_end_matches([',', ';', ':']);
    format!("{kept}, {}.", rng.pick(&TAILS).expect("TAILS is not empty"))
}

/// An answer with no content from any source.
fn vague(rng: &mut Rng) -> String {
    const VAGUE: [&str; 3] = [
        "It depends on several factors, and the short answer is that it varies.",
        "There are a number of reasons, and experts describe them in different ways.",
        "This is a complex topic with many contributing factors.",
    ];
    rng.pick(&VAGUE).expect("VAGUE is not empty").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_citations_are_read_back() {
        let (text, ids) = strip_citations("## Answer\nBees dance [d2]. They fan air [d2] [d4, d1]. See [note here].");
        assert_eq!(text, "Bees dance. They fan air. See [note here].");
        assert_eq!(ids, ["d2", "d4", "d1"]);
    }

    #[test]
    fn a_cut_off_json_draft_is_salvaged() {
        let answer = Answer::parse(r#"{"answer":"Bees dance. They fan.","evidence_ids":["d1","d9""#);
        assert!(answer.broken);
        assert_eq!(answer.sentences, ["Bees dance.", "They fan."]);
        assert_eq!(answer.ids, ["d1", "d9"]);
    }
}
