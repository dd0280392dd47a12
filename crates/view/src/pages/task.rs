//! `/task/ID`: every loop of a task side by side, round by round: each draft as the words changed
//! since the draft before it, the critique of that draft beside it, the decision and why the loop
//! stopped, each held-out evaluator's verdict on the round, and what the round spent.

use std::fmt::Write as _;

use critbench_core::{Arm, Decision};
use critbench_report::queries::task_rounds::TaskRound;
use critbench_report::show::suggestion_items;
use critbench_storage::tables::RowDecision;

use crate::html::{escape, number};
use crate::task::{RoundVerdict, TaskLoops};

/// The id of a loop's column on its task's page, which the lists link to.
pub fn anchor(config: &str, critic: &str, arm: &str, epoch: u32) -> String {
    let clean = |text: &str| -> String {
        text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
    };
    format!("loop-{}-{}-{}-e{epoch}", clean(config), clean(critic), clean(arm))
}

/// The page's body.
pub fn render(task: &str, read: &TaskLoops) -> String {
    let mut out = String::new();
    let kind = read.loops.values().flat_map(|r| r.first()).find_map(|r| r.kind.clone());
    let _ = writeln!(
        out,
        "<h1>Task <code>{}</code>{}</h1>\n<p class=\"muted\">{} loops; read from {} of {} row groups of the \
         trajectories.</p>",
        escape(task),
        kind.map(|k| format!(" <span class=\"muted\">({})</span>", escape(&k))).unwrap_or_default(),
        read.loops.len(),
        read.groups.0,
        read.groups.1
    );
    out.push_str("<div class=\"loops\">\n");
    for ((config, critic, epoch, arm), rounds) in &read.loops {
        let arm = Arm::ALL[*arm];
        loop_column(&mut out, read, config, critic, arm, *epoch, rounds);
    }
    out.push_str("</div>\n");
    out
}

fn loop_column(
    out: &mut String,
    read: &TaskLoops,
    config: &str,
    critic: &str,
    arm: Arm,
    epoch: u32,
    rounds: &[TaskRound],
) {
    let _ = writeln!(
        out,
        "<section class=\"loop\" id=\"{}\" data-arm=\"{}\">\n<h2>{} <span class=\"muted\">· {} · {} · epoch \
         {epoch}</span></h2>",
        escape(&anchor(config, critic, arm.as_str(), epoch)),
        arm.as_str(),
        arm.as_str(),
        escape(config),
        escape(critic)
    );
    let key = |round: u32| ((config.to_string(), critic.to_string(), arm, epoch), round);
    let mut previous: Option<&str> = None;
    let mut stored = false;
    for round in rounds {
        let adjudicated = round.decision == RowDecision::Adjudicate;
        let _ = write!(
            out,
            "<div class=\"round\" id=\"{}-r{}\" data-round=\"{}\"><div class=\"round-head\">{} · score {}{}</div>\n<div \
             class=\"round-body\">",
            escape(&anchor(config, critic, arm.as_str(), epoch)),
            round.round,
            round.round,
            if adjudicated { "adjudicated final draft".to_string() } else { format!("round {}", round.round) },
            number(round.critique.score),
            if round.is_best { " · <span class=\"muted\">the best draft</span>" } else { "" }
        );
        out.push_str("<div class=\"draft\">");
        match (&round.draft, previous) {
            (None, _) => {
                let _ = write!(out, "<p class=\"muted\">draft not stored ({} characters)</p>", round.draft_chars);
            }
            (Some(draft), None) => {
                stored = true;
                let _ = write!(out, "<pre>{}</pre>", escape(draft));
            }
            (Some(draft), Some(before)) if before == draft => {
                stored = true;
                let _ = write!(
                    out,
                    "<p class=\"muted\">the same draft as the round before</p><details><summary>show it</summary><pre>{}</pre></details>",
                    escape(draft)
                );
            }
            (Some(draft), Some(before)) => {
                stored = true;
                let _ = write!(out, "<pre class=\"diff\">{}</pre>", crate::diff::words(before, draft));
            }
        }
        out.push_str("</div>\n");
        critique(out, round);
        out.push_str("</div>\n");
        let extra = read.extras.get(&key(round.round));
        facts(out, round, extra, read.verdicts.get(&key(round.round)).map(Vec::as_slice).unwrap_or_default());
        out.push_str("</div>\n");
        // A resampled round is a fresh draft, not a revision of the one before: shown whole.
        if !adjudicated {
            previous = round.draft.as_deref().filter(|_| !arm.resamples());
        }
    }
    if !stored && rounds.iter().all(|r| r.draft.is_none()) {
        out.push_str(
            "<p class=\"hint\">The run did not store its drafts: rerun it with <code>--store-drafts</code> to see \
             them.</p>",
        );
    }
    out.push_str("</section>\n");
}

fn critique(out: &mut String, round: &TaskRound) {
    let c = &round.critique;
    out.push_str("<div class=\"critique\">");
    let verdict = match c.critic_passed {
        Some(true) => " · <span class=\"pass\">critic says pass</span>",
        Some(false) => " · <span class=\"fail\">critic says fail</span>",
        None => "",
    };
    let _ = write!(out, "<div><strong>critique</strong>: score {}{verdict}</div>", number(c.score));
    if !c.dims.is_empty() {
        let dims: Vec<String> = c.dims.iter().map(|(k, v)| format!("{} {}", escape(k), number(*v))).collect();
        let _ = write!(out, "<div class=\"dims\">{}</div>", dims.join(" · "));
    }
    list(out, "issues", &c.issues);
    list(out, "fatal issues", &c.fatal_issues);
    if !c.issue_types.is_empty() {
        let _ = write!(out, "<div>issue types: {}</div>", escape(&c.issue_types.join(", ")));
    }
    if let Some(suggestions) = &c.suggestions {
        list(out, "suggestions", &suggestion_items(suggestions).unwrap_or_else(|| vec![suggestions.to_string()]));
    }
    if let Some(rationale) = &c.rationale {
        let _ = write!(out, "<div class=\"rationale\"><em>rationale</em>: {}</div>", escape(rationale));
    }
    if let Some(error) = &round.critic_error {
        let _ = write!(out, "<div class=\"error\">critic error: {}</div>", escape(error));
    }
    out.push_str("</div>");
}

fn list(out: &mut String, label: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let _ = write!(out, "<div>{label}:</div><ul class=\"{}\">", label.replace(' ', "-"));
    for item in items {
        let _ = write!(out, "<li>{}</li>", escape(item));
    }
    out.push_str("</ul>");
}

fn facts(out: &mut String, round: &TaskRound, extra: Option<&crate::task::RoundExtra>, verdicts: &[RoundVerdict]) {
    if !verdicts.is_empty() {
        out.push_str("<div class=\"evaluators\">");
        for v in verdicts {
            let (class, text) = match (v.passed, &v.error) {
                (_, Some(error)) => ("error", format!("error: {}", escape(error))),
                (Some(true), _) => ("pass", "pass".to_string()),
                (Some(false), _) => ("fail", "fail".to_string()),
                (None, None) => ("muted", "no verdict".to_string()),
            };
            let _ = write!(
                out,
                "<div class=\"evaluator\" data-evaluator=\"{}\">{} ({}): <span class=\"{class}\">{text}</span>, score \
                 {}{}</div>",
                escape(&v.evaluator),
                escape(&v.evaluator),
                escape(&v.answer),
                number(v.score),
                v.rationale
                    .as_ref()
                    .map(|r| format!(" <span class=\"muted\">— {}</span>", escape(r)))
                    .unwrap_or_default()
            );
        }
        out.push_str("</div>");
    }
    let mut facts = Vec::new();
    let [tin, tout, cin, cout] = round.tokens;
    if tin.is_some() || tout.is_some() {
        facts.push(format!("writer tokens {} in / {} out", tin.unwrap_or(0), tout.unwrap_or(0)));
    }
    if cin.is_some() || cout.is_some() {
        facts.push(format!("critic tokens {} in / {} out", cin.unwrap_or(0), cout.unwrap_or(0)));
    }
    if let Some(cost) = extra.and_then(|e| e.cost) {
        facts.push(format!("cost {}", critbench_report::format_money(cost, None)));
    }
    if let Some(share) = extra.and_then(|e| e.edit_share) {
        facts.push(format!("edit share {}", number(share)));
    }
    facts.push(format!("writer {:.1} ms, critic {:.1} ms", round.gen_ms, round.critic_ms));
    facts.push(format!("{} characters", round.draft_chars));
    if round.critic_attempts != 1 {
        facts.push(format!("{} critic attempts", round.critic_attempts));
    }
    let _ = write!(out, "<div class=\"facts\">{}</div>", escape(&facts.join(" · ")));
    if let Some(error) = extra.and_then(|e| e.writer_error.as_ref()) {
        let _ = write!(out, "<div class=\"error\">writer error: {}</div>", escape(error));
    }
    let decision = match round.decision {
        RowDecision::Policy(Decision::Revise) => "revise".to_string(),
        RowDecision::Adjudicate => "adjudicated".to_string(),
        decision => match decision.exit_reason() {
            Some(exit) => format!("stop: {} ({})", exit.as_str(), if round.passed { "passed" } else { "did not pass" }),
            None => decision.as_str().to_string(),
        },
    };
    let _ = write!(
        out,
        "<div class=\"stop\" data-decision=\"{}\">→ {}</div>",
        escape(round.decision.as_str()),
        escape(&decision)
    );
}
