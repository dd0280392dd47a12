//! How the reports write what they show: p-values, notes, and lists of names in the order they
//! first appear.

/// A p-value as the reports print it: four decimals, or `< 0.0001` below that.
pub(crate) fn format_p(p: f64) -> String {
    if p < 0.0001 { "< 0.0001".to_string() } else { format!("{p:.4}") }
}

/// A paired difference as the tables print it: "+30.1 pp (+26.7 to +33.6)", or, for sides
/// identical by design (no interval), "+0.0 pp (identical by design)".
pub(crate) fn difference_cell(diff: f64, low: Option<f64>, high: Option<f64>) -> String {
    match (low, high) {
        (Some(low), Some(high)) => format!("{:+.1} pp ({:+.1} to {:+.1})", 100.0 * diff, 100.0 * low, 100.0 * high),
        _ => format!("{:+.1} pp ({})", 100.0 * diff, crate::rows::IDENTICAL_BY_DESIGN),
    }
}

/// A test's cell: "0.0312 (exact McNemar)", or "–" without a test (sides identical by design).
pub(crate) fn test_cell(p_value: Option<f64>, test: &str) -> String {
    match p_value {
        Some(p) => format!("{} ({test})", format_p(p)),
        None => "–".to_string(),
    }
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

/// An amount of money as the reports show it: four decimals, the currency after.
pub(crate) fn money(value: f64, currency: Option<&str>) -> String {
    match currency {
        Some(currency) => format!("{value:.4} {currency}"),
        None => format!("{value:.4}"),
    }
}

/// A report section's table with the text above it (`intro`, after a blank line), or nothing when
/// there are no rows: the reports leave out a table with nothing to say.
pub(crate) fn table_under<const N: usize>(
    intro: &str,
    header: &[&str; N],
    alignment: &str,
    rows: &[[String; N]],
) -> String {
    if rows.is_empty() {
        return String::new();
    }
    format!("\n{intro}\n\n{}", markdown_table(header, alignment, rows))
}

/// A Markdown table of text cells under `header`, its columns aligned as `alignment` (the
/// separator row) says.
pub(crate) fn markdown_table<const N: usize>(header: &[&str; N], alignment: &str, rows: &[[String; N]]) -> String {
    let mut out = format!("| {} |\n{alignment}\n", header.join(" | "));
    for row in rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}
