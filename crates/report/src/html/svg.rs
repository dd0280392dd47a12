//! SVG and HTML primitives: escaping, coordinates, round ticks, text, lines and legends.

use std::fmt::Write;

/// Width of every chart's coordinate system; the page scales it to the column width.
pub(crate) const WIDTH: f64 = 960.0;
pub(crate) const TEXT: &str = "#1f2328";
pub(crate) const MUTED: &str = "#57606a";
pub(crate) const GRID: &str = "#d8dee4";

/// Escapes `text` and renders its Markdown as the markdown report reads it: `backticked` spans as
/// `<code>`, and `**bold**` outside them as `<strong>` (an unclosed `**` is left as it is).
pub(crate) fn with_code_spans(text: &str) -> String {
    let mut out = String::new();
    for (index, part) in text.split('`').enumerate() {
        if index % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", escape(part));
            continue;
        }
        let pieces: Vec<&str> = part.split("**").collect();
        for (i, piece) in pieces.iter().enumerate() {
            let opens = i % 2 == 1;
            // A `**` whose partner is not in this stretch of text stays literal.
            if opens && i == pieces.len() - 1 {
                out.push_str("**");
            } else if i > 0 {
                out.push_str(if opens { "<strong>" } else { "</strong>" });
            }
            out.push_str(&escape(piece));
        }
    }
    out
}

/// Escapes text for HTML content and attribute values alike.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

pub(crate) fn percent(value: f64) -> String {
    format!("{:.1}%", 100.0 * value)
}

/// A coordinate: one decimal is finer than a pixel, and a non-finite value must not leave the
/// SVG unparseable.
pub(crate) fn px(value: f64) -> String {
    if value.is_finite() { format!("{value:.1}") } else { "0".to_string() }
}

/// A round step (1, 2, 2.5 or 5 times a power of ten) giving about `target` ticks over the range.
pub(crate) fn tick_step(low: f64, high: f64, target: f64) -> f64 {
    let raw = ((high - low) / target).max(1e-9);
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(magnitude * 10.0)
}

/// Tick values from `low` to `high` at a round step, about `target` of them.
pub(crate) fn ticks(low: f64, high: f64, target: f64) -> Vec<f64> {
    let step = tick_step(low, high, target);
    let first = (low / step).ceil() as i64;
    let last = (high / step + 1e-9).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// Tick values with their labels ([`tick_label`] at the ticks' step).
pub(crate) fn labelled_ticks(low: f64, high: f64, target: f64) -> Vec<(f64, String)> {
    let step = tick_step(low, high, target);
    ticks(low, high, target).into_iter().map(|tick| (tick, tick_label(tick, step))).collect()
}

/// A tick's label with the decimals its step needs, so that neighbours read apart: ticks 0.00002
/// apart read `0`, `0.00002`, `0.00004`; 0.25 apart `0.25`, `0.5`, `0.75`, `1`. Trailing zeros are
/// dropped, so a whole tick reads as a whole number.
pub(crate) fn tick_label(value: f64, step: f64) -> String {
    // The fewest decimals that write the step exactly, up to the float noise of a computed step
    // (0.6000000000000001 is 0.6).
    let decimals = (0..=15)
        .find(|&d| {
            let scaled = step.abs() * 10f64.powi(d);
            (scaled - scaled.round()).abs() <= 1e-6 * scaled
        })
        .unwrap_or(15) as usize;
    let text = format!("{value:.decimals$}");
    let text = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.') } else { text.as_str() };
    // A tick a rounding error below 0 is 0.
    if text == "-0" { "0".to_string() } else { text.to_string() }
}

/// Opens a chart: `<svg>` with an accessible title and description.
pub(crate) fn open_svg(out: &mut String, id: &str, height: f64, title: &str, description: &str) {
    let _ = write!(
        out,
        "<svg id=\"{id}\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" \
         aria-labelledby=\"{id}-title {id}-desc\" preserveAspectRatio=\"xMinYMin meet\">\
         <title id=\"{id}-title\">{title}</title><desc id=\"{id}-desc\">{description}</desc>",
        w = px(WIDTH),
        h = px(height),
        title = escape(title),
        description = escape(description),
    );
}

pub(crate) fn text(out: &mut String, x: f64, y: f64, anchor: &str, class: &str, content: &str) {
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\" class=\"{class}\">{}</text>",
        px(x),
        px(y),
        escape(content)
    );
}

pub(crate) fn line(out: &mut String, (x1, y1): (f64, f64), (x2, y2): (f64, f64), stroke: &str, width: f64) {
    let _ = write!(
        out,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{stroke}\" stroke-width=\"{}\"/>",
        px(x1),
        px(y1),
        px(x2),
        px(y2),
        px(width)
    );
}

/// A row of coloured swatches with labels, starting at (x, y).
pub(crate) fn legend(out: &mut String, x: f64, y: f64, items: &[(&str, &str)]) {
    let mut x = x;
    for (label, color) in items {
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" rx=\"2\" fill=\"{color}\"/>",
            px(x),
            px(y - 10.0)
        );
        text(out, x + 17.0, y, "start", "legend", label);
        x += 17.0 + label.chars().count() as f64 * 7.0 + 22.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format;

    #[test]
    fn ticks_are_round_numbers_covering_the_range() {
        assert_eq!(ticks(0.0, 1.0, 5.0), vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]);
        assert_eq!(ticks(4.0, 9.0, 5.0), vec![4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
        assert_eq!(ticks(1.0, 4.0, 8.0), vec![1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]);
    }

    fn labels(low: f64, high: f64, target: f64) -> Vec<String> {
        labelled_ticks(low, high, target).into_iter().map(|(_, label)| label).collect()
    }

    #[test]
    fn tick_labels_have_the_digits_their_step_needs() {
        // Money a hundred-thousandth of a unit apart, not "0.0 0.0 0.0".
        assert_eq!(labels(0.0, 0.0001, 5.0), ["0", "0.00002", "0.00004", "0.00006", "0.00008", "0.0001"]);
        assert_eq!(labels(0.0, 0.00012, 4.0), ["0", "0.00005", "0.0001"]);
        assert_eq!(labels(0.0, 1.0, 5.0), ["0", "0.2", "0.4", "0.6", "0.8", "1"]);
        assert_eq!(labels(0.0, 1.0, 4.0), ["0", "0.25", "0.5", "0.75", "1"]);
        assert_eq!(labels(0.0, 12.0, 5.0), ["0", "2.5", "5", "7.5", "10"]);
        assert_eq!(labels(4.0, 9.0, 5.0), ["4", "5", "6", "7", "8", "9"]);
        assert_eq!(labels(0.0, 25_000.0, 5.0), ["0", "5000", "10000", "15000", "20000", "25000"]);
        assert_eq!(labels(-30.0, 10.0, 4.0), ["-30", "-20", "-10", "0", "10"]);
        // Every label of a step apart differs from its neighbours.
        for exponent in -9..=6 {
            for mantissa in [1.0, 2.0, 2.5, 5.0] {
                let step = mantissa * 10f64.powi(exponent);
                let texts: Vec<String> = (0..5).map(|i| tick_label(f64::from(i) * step, step)).collect();
                assert_eq!(format::unique(texts.iter()).len(), 5, "step {step}: {texts:?}");
                assert_eq!(texts[0], "0");
            }
        }
    }
}
