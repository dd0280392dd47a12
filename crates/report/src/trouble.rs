//! What went wrong that the rates do not show, from `manifest.json`: a critic's or an evaluator's
//! child processes restarted after a protocol error, a timeout or a crash, critiques retried after
//! a failed attempt, an evaluator's errors (no verdicts, left out of its numbers), and model
//! answers cut at `max_tokens`, and which critic a rescoring's rates are the verdicts of. The terminal prints each as a `note:` line below its table, and
//! the notes of `summary.json`, `report.md` and `report.html` give the same sentences.

use critbench_storage::manifest::{CritiqueCounts, Manifest, PluginRecord, ProcessTrouble, RescoreRecord};

/// The sentences, each starting lowercase and without its final period (as the backend's).
pub fn notices(manifest: &Manifest) -> Vec<String> {
    let mut notices = Vec::new();
    match &manifest.rescore {
        // A rescoring's critiques are its critic's: the run's critics' trouble is the run's.
        Some(rescore) => {
            notices.extend(rescored_by(manifest, rescore));
            let plugin = PluginRecord { critic: rescore.name.clone(), ..rescore.plugin.clone() };
            let counts = manifest.critiques_by_critic.get(&rescore.name);
            notices.extend(critic_notice("critic", &plugin, counts, "critiques"));
        }
        None => {
            for plugin in &manifest.plugins {
                let counts = manifest.critiques_by_critic.get(&plugin.critic);
                notices.extend(critic_notice("critic", plugin, counts, "critiques"));
            }
        }
    }
    for plugin in &manifest.evaluators {
        let counts = manifest.evaluations_by_evaluator.get(&plugin.critic);
        notices.extend(critic_notice("evaluator", plugin, counts, "answers"));
    }
    notices.extend(unread_key_notices(manifest));
    notices.extend(cut_notices(manifest));
    notices
}

/// The start of every notice of critique keys critbench does not read: the terminal prints
/// these as warnings.
pub const UNREAD_KEYS: &str = "critbench does not read";

/// Per critic whose answers carried keys critbench does not read (`unread_critique_keys`): each
/// key, the critiques that carried it, and where what it carries goes.
fn unread_key_notices(manifest: &Manifest) -> Vec<String> {
    manifest
        .unread_critique_keys
        .iter()
        .filter(|(_, keys)| !keys.is_empty())
        .map(|(critic, keys)| {
            let total = manifest.critiques_by_critic.get(critic).map(|c| c.recorded);
            let listed: Vec<String> = keys
                .iter()
                .map(|(key, count)| {
                    let of = total.map_or_else(String::new, |total| format!(" of {total}"));
                    format!("`{key}` in {count}{of} critiques ({})", critbench_core::unread_key_hint(key))
                })
                .collect();
            format!(
                "critic `{critic}`'s answers carry keys {UNREAD_KEYS}, and what they hold was dropped: {}",
                listed.join("; ")
            )
        })
        .collect()
}

/// What the critic column of a rescoring by a critic the run did not have names: the critic that
/// steered each loop, not the one whose verdicts the rates are.
fn rescored_by(manifest: &Manifest, rescore: &RescoreRecord) -> Option<String> {
    new_rescoring_critic(manifest)?;
    let steering: Vec<String> = manifest.experiment.critics.iter().map(|c| format!("`{}`", c.name)).collect();
    Some(format!(
        "rescored by critic `{name}`: every pass rate and score is `{name}`'s verdict, on loops the run's critic{s} \
         {list} steered; the critic column names the steering critic, as the tables' `critic` does",
        name = rescore.name,
        s = if steering.len() == 1 { "" } else { "s" },
        list = steering.join(", "),
    ))
}

/// The critic of a rescoring whose rates are its verdicts on loops other critics steered: a
/// rescoring by a critic the run did not have.
pub fn new_rescoring_critic(manifest: &Manifest) -> Option<&str> {
    let rescore = manifest.rescore.as_ref()?;
    let critics = &manifest.experiment.critics;
    (!critics.is_empty() && critics.iter().all(|c| c.name != rescore.name)).then_some(rescore.name.as_str())
}

/// Each model role whose answers were cut at `max_tokens` (`openai.calls.by_role.ROLE.truncated`),
/// with the limit the run set (`experiment.openai.roles.ROLE.max_tokens`) and what to raise.
fn cut_notices(manifest: &Manifest) -> Vec<String> {
    let Some(by_role) = manifest.openai.as_ref().and_then(|o| o.pointer("/calls/by_role")?.as_object()) else {
        return Vec::new();
    };
    let roles = manifest.experiment.rest.get("openai").and_then(|o| o.get("roles"));
    let mut notices = Vec::new();
    for (role, calls) in by_role {
        let count = |key: &str| calls[key].as_u64().unwrap_or(0);
        let cut = count("truncated");
        if cut == 0 {
            continue;
        }
        let limit = match roles.and_then(|r| r.get(role)).and_then(|r| r["max_tokens"].as_u64()) {
            Some(limit) => format!("max_tokens = {limit}"),
            None => "max_tokens unset: the server's default".to_string(),
        };
        let what = match role.as_str() {
            "judge" => "a cut critique is asked again or fails (`critic_truncated` in trajectories.parquet)",
            "adjudicator" => "a cut adjudicated draft may end mid-sentence",
            _ => "a cut draft may end mid-sentence (`draft_truncated` in trajectories.parquet)",
        };
        notices.push(format!(
            "{cut} of the {role} model's {} answers were cut at its token limit ({limit}; finish_reason \"length\"): \
             {what}; raise [openai.{role}] max_tokens (or [openai] max_tokens for every role)",
            count("calls").saturating_sub(count("failures"))
        ));
    }
    notices
}

/// `ProcessTrouble`'s causes that happened, in words.
fn causes(trouble: &ProcessTrouble) -> String {
    let mut causes = Vec::new();
    for (count, one, many) in [
        (trouble.protocol_errors, "protocol error", "protocol errors"),
        (trouble.timeouts, "timeout", "timeouts"),
        (trouble.exits, "exit or crash", "exits or crashes"),
    ] {
        if count > 0 {
            causes.push(format!("{count} {}", if count == 1 { one } else { many }));
        }
    }
    causes.join(", ")
}

/// What went wrong with one critic (`role` "critic") or evaluator, whose `counts` are its
/// critiques (of `what`: "critiques", "answers").
fn critic_notice(role: &str, plugin: &PluginRecord, counts: Option<&CritiqueCounts>, what: &str) -> Option<String> {
    let counts = counts.copied().unwrap_or_default();
    let trouble = plugin.process.unwrap_or_default();
    let evaluator_failed = role == "evaluator" && counts.failed > 0;
    if !trouble.any() && counts.retried == 0 && !evaluator_failed {
        return None;
    }
    let mut parts = Vec::new();
    if trouble.any() {
        parts.push(format!(
            "its process was stopped and restarted {} time(s) ({}; the request it failed on was retried)",
            trouble.restarts,
            causes(&trouble)
        ));
    }
    if counts.retried > 0 {
        let mut retried =
            format!("{} of its {} {what} were retried after a failed attempt", counts.retried, counts.recorded);
        if role == "critic" {
            retried.push_str(&format!(", {} failed every attempt", counts.failed));
        }
        parts.push(retried);
    }
    if evaluator_failed {
        parts.push(format!(
            "it failed on {} of its {} answers (every attempt): an error is no verdict, so the loops of those \
             answers are left out of its pass rates, agreement and gap (`evaluator_errors` in evaluators.csv; \
             `critic_error` in evaluations.parquet says why)",
            counts.failed, counts.recorded
        ));
    }
    // Where the manifest keeps each number said.
    let (records, counted) =
        if role == "critic" { ("plugins", "critiques_by_critic") } else { ("evaluators", "evaluations_by_evaluator") };
    let mut keys = Vec::new();
    if trouble.any() {
        keys.push(format!("`{records}[].process`"));
    }
    if counts.retried > 0 || evaluator_failed {
        keys.push(format!("`{counted}`"));
    }
    Some(format!("{role} `{}`: {} (manifest.json: {})", plugin.critic, parts.join("; "), keys.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_cut_at_max_tokens_say_which_role_and_what_to_raise() {
        let mut manifest = Manifest::default();
        let calls =
            |calls: u64, truncated: u64| serde_json::json!({"calls": calls, "failures": 1, "truncated": truncated});
        manifest.openai = Some(serde_json::json!({"calls": {"by_role": {
            "generator": calls(12, 0), "judge": calls(41, 9), "reviser": calls(7, 2)}}}));
        manifest.experiment.rest.insert(
            "openai".into(),
            serde_json::json!({"roles": {"judge": {"max_tokens": 64}, "reviser": {"max_tokens": null}}}),
        );
        assert_eq!(
            notices(&manifest),
            [
                "9 of the judge model's 40 answers were cut at its token limit (max_tokens = 64; finish_reason \
                 \"length\"): a cut critique is asked again or fails (`critic_truncated` in trajectories.parquet); \
                 raise [openai.judge] max_tokens (or [openai] max_tokens for every role)",
                "2 of the reviser model's 6 answers were cut at its token limit (max_tokens unset: the server's \
                 default; finish_reason \"length\"): a cut draft may end mid-sentence (`draft_truncated` in \
                 trajectories.parquet); raise [openai.reviser] max_tokens (or [openai] max_tokens for every role)",
            ]
        );
    }

    #[test]
    fn a_critic_whose_errors_were_retried_away_is_still_told() {
        let mut manifest = Manifest::default();
        manifest.plugins.push(PluginRecord {
            critic: "stray".into(),
            process: Some(ProcessTrouble { restarts: 14, protocol_errors: 13, timeouts: 1, exits: 0 }),
            ..PluginRecord::default()
        });
        manifest.plugins.push(PluginRecord { critic: "calm".into(), process: None, ..PluginRecord::default() });
        manifest.critiques_by_critic.insert("stray".into(), CritiqueCounts { recorded: 48, retried: 14, failed: 0 });
        manifest.critiques_by_critic.insert("calm".into(), CritiqueCounts { recorded: 48, retried: 0, failed: 0 });
        manifest.evaluators.push(PluginRecord { critic: "gold".into(), ..PluginRecord::default() });
        manifest.evaluations_by_evaluator.insert("gold".into(), CritiqueCounts { recorded: 24, retried: 8, failed: 8 });
        assert_eq!(
            notices(&manifest),
            [
                "critic `stray`: its process was stopped and restarted 14 time(s) (13 protocol errors, 1 timeout; the \
                 request it failed on was retried); 14 of its 48 critiques were retried after a failed attempt, 0 \
                 failed every attempt (manifest.json: `plugins[].process`, `critiques_by_critic`)",
                "evaluator `gold`: 8 of its 24 answers were retried after a failed attempt; it failed on 8 of its 24 \
                 answers (every attempt): an error is no verdict, so the loops of those answers are left out of its \
                 pass rates, agreement and gap (`evaluator_errors` in evaluators.csv; `critic_error` in \
                 evaluations.parquet says why) (manifest.json: `evaluations_by_evaluator`)",
            ]
        );
    }
}
