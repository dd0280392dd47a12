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

/// An amount of money as the reports and the terminal show it: three significant digits whatever
/// its magnitude (`0.000103`, `0.0256`, `1.23`, `12.3`, `123`), whole units from 1,000 up (`1234`, not `1230`),
/// the currency after. A run's calls can cost a ten-thousandth of a unit each, and a fixed number
/// of decimals would print them as 0; 0 itself is `0`.
pub fn money(value: f64, currency: Option<&str>) -> String {
    let amount = significant(value, 3);
    match currency.filter(|c| !c.is_empty()) {
        Some(currency) => format!("{amount} {currency}"),
        None => amount,
    }
}

/// `value` to `digits` significant digits, as many decimals as its magnitude needs and none from
/// `10^(digits − 1)` up (whole units are never rounded away); 0 is `0`, and a value that is not a
/// number prints as Rust prints it (`NaN`, `inf`).
pub(crate) fn significant(value: f64, digits: usize) -> String {
    if value == 0.0 {
        return "0".to_string();
    }
    if !value.is_finite() {
        return value.to_string();
    }
    // The exponent of the value rounded to its digits (9.996 rounds to 10.0, a power up), as the
    // scientific form gives it.
    let scientific = format!("{:.*e}", digits.saturating_sub(1), value);
    let exponent: i64 = scientific.rsplit('e').next().and_then(|e| e.parse().ok()).unwrap_or(0);
    let decimals = (digits as i64 - 1 - exponent).max(0) as usize;
    format!("{value:.decimals$}")
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

/// The widest line the terminal's answer prints, in characters.
pub(crate) const LINE_WIDTH: usize = 160;

/// `head` then as many of `entries` as fit in [`LINE_WIDTH`] characters, joined by ` · `, and
/// ` · N more` for those left out (at least the first entry is always shown).
pub(crate) fn fit_line(head: &str, entries: &[String]) -> String {
    let width = |text: &str| text.chars().count();
    let mut shown = entries.len();
    loop {
        let more = if shown < entries.len() { format!(" · {} more", entries.len() - shown) } else { String::new() };
        let line = format!("{head}{}{more}", entries[..shown].join(" · "));
        if shown <= 1 || width(&line) <= LINE_WIDTH {
            return line;
        }
        shown -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_has_three_significant_digits_at_every_magnitude() {
        let usd = Some("USD");
        let cases = [
            (0.0, "0 USD"),
            (0.000001234, "0.00000123 USD"),
            (0.0000103, "0.0000103 USD"),
            (0.000103, "0.000103 USD"),
            (0.00012345, "0.000123 USD"),
            (0.0001, "0.000100 USD"),
            (0.0256, "0.0256 USD"),
            (0.25, "0.250 USD"),
            (1.234, "1.23 USD"),
            (9.996, "10.0 USD"),
            (12.34, "12.3 USD"),
            (99.96, "100 USD"),
            (123.4, "123 USD"),
            (1234.56, "1235 USD"),
            (12_345.0, "12345 USD"),
        ];
        for (value, printed) in cases {
            assert_eq!(money(value, usd), printed, "{value}");
        }
        assert_eq!(money(-0.0256, usd), "-0.0256 USD");
        assert_eq!(money(0.0256, None), "0.0256");
        assert_eq!(money(0.0256, Some("")), "0.0256", "no currency named, none printed");
        assert_eq!(money(f64::NAN, usd), "NaN USD");
    }

    #[test]
    fn no_amount_above_zero_prints_as_zero() {
        for exponent in -12..=4 {
            for mantissa in [1.0, 1.5, 2.5, 4.999, 9.999] {
                let value = mantissa * 10f64.powi(exponent);
                let printed = money(value, None);
                let parsed: f64 = printed.parse().unwrap();
                assert!(parsed > 0.0, "{value} printed as {printed}");
                assert!((parsed - value).abs() <= 0.005 * value, "{value} printed as {printed}");
                let digits = printed.trim_start_matches(['0', '.']).chars().filter(char::is_ascii_digit).count();
                assert!(digits <= 3 || parsed >= 1000.0, "{value} printed as {printed}: {digits} digits");
            }
        }
    }

    #[test]
    fn a_line_keeps_the_entries_that_fit_and_counts_the_rest() {
        let entries: Vec<String> = (0..30).map(|i| format!("arm{i} +1.0")).collect();
        let line = fit_line("  head: ", &entries);
        assert!(line.chars().count() <= LINE_WIDTH, "{line}");
        let shown = line.matches(" +1.0").count();
        assert!(line.ends_with(&format!(" · {} more", 30 - shown)), "{line}");
        assert_eq!(fit_line("  head: ", &entries[..2]), "  head: arm0 +1.0 · arm1 +1.0");
    }
}
