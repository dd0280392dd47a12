//! Word and sentence helpers shared by the writers.

use std::collections::BTreeSet;

/// Words too common to say what a text is about.
fn is_stopword(word: &str) -> bool {
    matches!(
        word,
        "the"
            | "and"
            | "but"
            | "nor"
            | "for"
            | "with"
            | "from"
            | "into"
            | "onto"
            | "over"
            | "under"
            | "about"
            | "above"
            | "below"
            | "between"
            | "through"
            | "during"
            | "without"
            | "within"
            | "along"
            | "across"
            | "against"
            | "among"
            | "around"
            | "are"
            | "was"
            | "were"
            | "been"
            | "being"
            | "does"
            | "did"
            | "doing"
            | "done"
            | "has"
            | "have"
            | "had"
            | "having"
            | "its"
            | "itself"
            | "this"
            | "that"
            | "these"
            | "those"
            | "there"
            | "here"
            | "their"
            | "theirs"
            | "they"
            | "them"
            | "what"
            | "which"
            | "who"
            | "whom"
            | "whose"
            | "when"
            | "where"
            | "why"
            | "how"
            | "than"
            | "then"
            | "such"
            | "not"
            | "yes"
            | "can"
            | "could"
            | "may"
            | "might"
            | "must"
            | "should"
            | "would"
            | "will"
            | "shall"
            | "more"
            | "most"
            | "much"
            | "many"
            | "some"
            | "any"
            | "each"
            | "every"
            | "other"
            | "another"
            | "also"
            | "only"
            | "very"
            | "just"
            | "out"
            | "down"
            | "off"
            | "while"
            | "after"
            | "before"
            | "because"
            | "often"
            | "usually"
            | "both"
            | "all"
            | "our"
            | "ours"
            | "you"
            | "your"
            | "yours"
            | "his"
            | "her"
            | "hers"
            | "she"
            | "him"
            | "one"
            | "two"
            | "per"
            | "via"
            | "yet"
            | "still"
            | "even"
            | "ever"
            | "too"
            | "again"
            | "almost"
            | "mostly"
    )
}

/// The words that carry a text's meaning: lowercase alphanumeric runs of three or more
/// characters, without stopwords, with a plural `s` trimmed so "tides" matches "tide".
pub(crate) fn content_words(text: &str) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    for raw in text.split(|c: char| !c.is_alphanumeric()) {
        if raw.chars().count() < 3 {
            continue;
        }
        let mut word = raw.to_lowercase();
        if is_stopword(&word) {
            continue;
        }
        if word.len() > 4 && word.ends_with('s') && !word.ends_with("ss") {
            word.pop();
        }
        words.insert(word);
    }
    words
}

/// How many whitespace-separated words `text` has.
pub(crate) fn word_count(text: &str) -> usize {
    text.split_whitespace().filter(|w| w.chars().any(char::is_alphanumeric)).count()
}

/// Splits a paragraph into sentences at `.`, `!` or `?` followed by whitespace, so numbers
/// like "4.3" stay whole.
pub(crate) fn split_sentences(text: &str) -> Vec<String> {
    let mut sentences = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        if matches!(c, '.' | '!' | '?') {
            let at_break = chars.peek().is_none_or(|(_, next)| next.is_whitespace());
            if at_break {
                let end = index + c.len_utf8();
                let sentence = text[start..end].trim();
                if !sentence.is_empty() {
                    sentences.push(sentence.to_string());
                }
                start = end;
            }
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        sentences.push(rest.to_string());
    }
    sentences
}

/// `text` with its first letter in upper case.
pub(crate) fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `text` with its first letter in lower case, unless the first word looks like a name or an
/// acronym (a capital letter after the first one, as in "DNA" or "McKinsey").
pub(crate) fn decapitalize(text: &str) -> String {
    let first_word = text.split_whitespace().next().unwrap_or("");
    if first_word.chars().skip(1).any(char::is_uppercase) {
        return text.to_string();
    }
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Removes the sentence's final punctuation, so a clause can be appended.
pub(crate) fn strip_final_stop(sentence: &str) -> &str {
    sentence.trim_end().trim_end_matches(['.', '!', '?']).trim_end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_words_drop_stopwords_and_plural_s() {
        let words = content_words("What causes the ocean tides? Tides are caused by the Moon.");
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        assert_eq!(words, ["cause", "caused", "moon", "ocean", "tide"]);
    }

    #[test]
    fn sentences_split_at_stops_followed_by_space() {
        let sentences = split_sentences("About 4.3 billion. Second one [2]! Third");
        assert_eq!(sentences, ["About 4.3 billion.", "Second one [2]!", "Third"]);
    }

    #[test]
    fn decapitalize_keeps_acronyms() {
        assert_eq!(decapitalize("Research on x"), "research on x");
        assert_eq!(decapitalize("DNA is long"), "DNA is long");
        assert_eq!(capitalize("émile"), "Émile");
    }
}
