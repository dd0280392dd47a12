//! The page every view is drawn in, and the small pieces of markup the pages share: escaping
//! (every text from the run goes through [`escape`]), links with a query, and the assets compiled
//! into the binary.

use std::fmt::Write as _;

pub use critbench_report::escape_html as escape;

/// The style sheet, served at `/assets/view.css`.
pub const CSS: &str = include_str!("../assets/view.css");
/// The script (labelling controls, keyboard shortcuts, the verdicts switch), at `/assets/view.js`.
pub const JS: &str = include_str!("../assets/view.js");

/// A whole page: the navigation, `body`, the style sheet and the script, nothing from the network.
pub fn page(title: &str, run: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 1024);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" \
         content=\"width=device-width, initial-scale=1\">\n<title>{} · critbench view</title>\n<link \
         rel=\"stylesheet\" href=\"/assets/view.css\">\n</head>\n<body>\n<nav><strong>critbench view</strong> \
         <span class=\"run\">{}</span> <a href=\"/\">home</a> <a href=\"/answer\">the answer</a> <a \
         href=\"/loops\">loops</a></nav>\n<main>\n{body}</main>\n<script src=\"/assets/view.js\"></script>\n\
         </body>\n</html>\n",
        escape(title),
        escape(run)
    );
    out
}

/// `path?key=value&…` with the pairs whose value is not empty, percent-encoded.
pub fn link(path: &str, pairs: &[(&str, &str)]) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (key, value) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
        query.append_pair(key, value);
    }
    let query = query.finish();
    if query.is_empty() { path.to_string() } else { format!("{path}?{query}") }
}

/// The path of a task's page: `/task/ID`, the id percent-encoded.
pub fn task_path(task: &str) -> String {
    let encoded: String = form_urlencoded::byte_serialize(task.as_bytes()).collect();
    format!("/task/{}", encoded.replace('+', "%20"))
}

/// A rate as a percentage with one decimal.
pub fn percent(rate: f64) -> String {
    if rate.is_finite() { format!("{:.1}%", 100.0 * rate) } else { "–".into() }
}

/// A number with at most two decimals, trailing zeros dropped.
pub fn number(value: f64) -> String {
    if !value.is_finite() {
        return "–".into();
    }
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}
