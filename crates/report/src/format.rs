//! How the reports write what they show: p-values, notes, and lists of names in the order they
//! first appear.

/// A p-value as the reports print it: four decimals, or `< 0.0001` below that.
pub(crate) fn format_p(p: f64) -> String {
    if p < 0.0001 { "< 0.0001".to_string() } else { format!("{p:.4}") }
}

/// A notice as a note of the reports: a sentence.
pub(crate) fn as_note(notice: &str) -> String {
    let mut chars = notice.chars();
    let first: String = chars.next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
    format!("{first}{}.", chars.as_str())
}

/// The values in the order they first appear, each once (tables and charts list configs, critics
/// and arms so; the lists are short, so a scan beats hashing).
pub(crate) fn unique<T: PartialEq>(values: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut seen: Vec<T> = Vec::new();
    for value in values {
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    seen
}
