//! The labelling page (`/` with `--labels`): every sampled answer in a seeded random order, with
//! its task, its text as it was judged, right/wrong controls and the progress; the critic's and
//! evaluators' verdicts hidden until asked for, so a person judges blind.

use std::fmt::Write as _;

use crate::html::{escape, task_path};
use crate::labels::LabelFile;

/// The page's body.
pub fn render(file: &LabelFile, run_dir: &str) -> String {
    let sample = &file.labelling.sample;
    let mut out = String::from("<div id=\"labelling\" class=\"blind\">\n");
    let path = file.labelling.path.display().to_string();
    let _ = writeln!(
        out,
        "<h1>Label the sample</h1>\n<p>Is each answer right for its task? Each label is saved to <code>{}</code> \
         at once. <span id=\"progress\"><span id=\"labelled\">{}</span> of <span id=\"answers\">{}</span> \
         labelled</span>.</p>\n<p class=\"hint\">Keys: <kbd>j</kbd>/<kbd>k</kbd> next/previous, <kbd>r</kbd> \
         right, <kbd>w</kbd> wrong, <kbd>u</kbd> clear, <kbd>v</kbd> show verdicts. When every answer is \
         labelled: <code>critbench report {} --labels {}</code></p>\n<p><label><input type=\"checkbox\" \
         id=\"show-verdicts\"> show the critic's and evaluators' verdicts (hidden: judge blind)</label></p>",
        escape(&path),
        file.labelling.labelled(),
        sample.answers.len(),
        escape(run_dir),
        escape(&path)
    );
    out.push_str("<div class=\"answers\">\n");
    for (shown, &i) in file.order.iter().enumerate() {
        let answer = &sample.answers[i];
        let gold = answer.gold.map_or(String::new(), |g| g.to_string());
        let id = escape(&answer.answer_id);
        let _ = write!(
            out,
            "<article class=\"answer\" tabindex=\"0\" id=\"{id}\" data-answer-id=\"{id}\" data-gold=\"{gold}\">\n\
             <div><strong>{}.</strong> task <a href=\"{}\"><code>{}</code></a> <span class=\"muted\">· answer \
             {id} · {} loop(s)</span></div>\n<pre class=\"answer-text\">{}</pre>\n<div class=\"verdicts\">",
            shown + 1,
            escape(&task_path(&answer.task_id)),
            escape(&answer.task_id),
            answer.loops.len(),
            escape(&answer.answer),
        );
        for l in &answer.loops {
            let (class, verdict) = if l.passed { ("pass", "pass") } else { ("fail", "fail") };
            let _ = write!(
                out,
                "<div>{} · {} · {} · epoch {}: critic <span class=\"{class}\">{verdict}</span> (score {})",
                escape(&l.config_id),
                escape(l.arm.as_str()),
                escape(&l.critic),
                l.epoch,
                crate::html::number(l.score)
            );
            for v in file.verdicts.get(&answer.answer_id).into_iter().flatten().filter(|v| {
                v.config == l.config_id && v.arm == l.arm.as_str() && v.critic == l.critic && v.epoch == l.epoch
            }) {
                let (class, verdict) = match v.passed {
                    Some(true) => ("pass", "pass"),
                    Some(false) => ("fail", "fail"),
                    None => ("error", "error"),
                };
                let _ = write!(out, "; {} <span class=\"{class}\">{verdict}</span>", escape(&v.evaluator));
            }
            out.push_str("</div>");
        }
        let _ = writeln!(
            out,
            "</div>\n<div class=\"controls\"><button class=\"right\" data-answer-id=\"{id}\" data-gold=\"true\">right \
             (r)</button><button class=\"wrong\" data-answer-id=\"{id}\" data-gold=\"false\">wrong (w)</button><button \
             class=\"clear\" data-answer-id=\"{id}\" data-gold=\"null\">clear (u)</button><span class=\"saved \
             muted\"></span></div>\n</article>"
        );
    }
    out.push_str("</div>\n</div>\n");
    out
}
