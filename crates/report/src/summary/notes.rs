//! The notes beside the tables, from the manifest: model calls, a token cap, failed loops,
//! incomplete tasks, critic errors and disagreements.

use critbench_storage::manifest::Manifest;

use crate::rows::SummaryRow;

/// The sentence about model calls, from the manifest's `openai` section alone: every number in it
/// is one the manifest records, so the two cannot disagree.
pub(crate) fn calls_note(openai: &serde_json::Value) -> String {
    let count = |pointer: &str| openai.pointer(pointer).and_then(|v| v.as_u64()).unwrap_or(0);
    let models: Vec<String> = openai["models"]
        .as_object()
        .map(|m| m.iter().map(|(role, model)| format!("{role} `{}`", model.as_str().unwrap_or("?"))).collect())
        .unwrap_or_default();
    let (total, failed) = (count("/calls/total"), count("/calls/failures"));
    let mut http = format!("{} ok", count("/http/ok"));
    for (pointer, what) in [
        ("/http/connection_errors", "connection errors"),
        ("/http/timeouts", "timeouts"),
        ("/http/status_429", "HTTP 429"),
        ("/http/status_503", "HTTP 503"),
        ("/http/status_5xx_other", "other HTTP 5xx"),
        ("/http/status_4xx", "HTTP 4xx"),
        ("/http/malformed_bodies", "malformed bodies"),
    ] {
        if count(pointer) > 0 {
            http.push_str(&format!(", {} {what}", count(pointer)));
        }
    }
    format!(
        "Models ({}): {}. {total} calls: {} answered, {failed} failed; {} sent to the model ({} HTTP requests: {http}; \
         {} retries), {} from the response cache, {} shared with an identical request in flight; {} tokens in, {} out.",
        openai["endpoint"].as_str().unwrap_or("?"),
        models.join(", "),
        total.saturating_sub(failed),
        count("/calls/model_calls"),
        count("/http/requests"),
        count("/http/retries"),
        count("/cache/hits"),
        count("/cache/shared_in_flight"),
        count("/tokens/in"),
        count("/tokens/out"),
    )
}

/// What the model calls cost, per role, from the manifest's `openai.cost` (absent without prices).
pub(crate) fn money_note(openai: &serde_json::Value) -> Option<String> {
    let cost = openai.get("cost")?;
    let spent = cost.get("spent")?.as_f64()?;
    let currency = cost["currency"].as_str().unwrap_or("");
    let money = |value: f64| crate::format::money(value, Some(currency));
    let roles: Vec<String> = cost["by_role"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(role, c)| match c["spent"].as_f64() {
            Some(spent) => format!("{role} `{}` {}", c["model"].as_str().unwrap_or("?"), money(spent)),
            None => format!("{role} `{}` not priced", c["model"].as_str().unwrap_or("?")),
        })
        .collect();
    let mut note = format!("**Spent {}** on model calls ({}).", money(spent), roles.join(", "));
    if let Some(saved) = cost["saved_by_cache"].as_f64().filter(|s| *s > 0.0) {
        note.push_str(&format!(" Answers from the response cache would have cost {} more.", money(saved)));
    }
    let carried: f64 =
        cost["by_role"].as_object().into_iter().flatten().filter_map(|(_, c)| c["carried_over"].as_f64()).sum();
    if carried > 0.0 {
        note.push_str(&format!(" Of it, {} was spent before the run was resumed.", money(carried)));
    }
    if cost["priced"] == false {
        note.push_str(" A model without a price has no cost: `cost` is empty for the loops that used it.");
    }
    if let Some(budget) = openai.get("budget") {
        let limit = |key: &str| budget[key].as_f64().map(money);
        let mut limits: Vec<String> = limit("max_cost").map(|m| format!("max_cost {m}")).into_iter().collect();
        for (role, value) in budget["roles"].as_object().into_iter().flatten() {
            if let Some(value) = value.as_f64() {
                limits.push(format!("{role} {}", money(value)));
            }
        }
        match budget.get("stopped_by").filter(|s| s.is_object()) {
            Some(stop) => note.push_str(&format!(
                " **The budget stopped the run**: `{}` = {} was reached; no loop started after it, the loops in flight \
                 then finished, and {} was spent by the end.",
                stop["budget"].as_str().unwrap_or("?"),
                money(stop["limit"].as_f64().unwrap_or(f64::NAN)),
                money(stop["spent"].as_f64().unwrap_or(f64::NAN)),
            )),
            None => note.push_str(&format!(" Budget: {} (not reached).", limits.join(", "))),
        }
    }
    Some(note)
}

/// Whether the model or critbench bounds the run: latency percentiles per role, and the time
/// calls waited on the server, for a free slot and backing off, against the workers' time. A
/// measurement of time, so it is in `report.md` and `report.html` but not in `summary.json`,
/// whose notes depend on the data alone.
pub(crate) fn time_note(openai: &serde_json::Value, manifest: Option<&Manifest>) -> Option<String> {
    let latency = openai.get("latency")?.as_object()?;
    let roles: Vec<String> = latency
        .iter()
        .filter(|(_, l)| l["requests"].as_u64().unwrap_or(0) > 0)
        .map(|(role, l)| {
            let ms = |key: &str| l[key].as_f64().map_or("?".to_string(), |v| format!("{v:.0}"));
            format!("{role} {} / {} / {} ms", ms("p50_ms"), ms("p95_ms"), ms("p99_ms"))
        })
        .collect();
    if roles.is_empty() {
        return None;
    }
    let waiting = &openai["waiting"];
    let seconds = |key: &str| waiting[key].as_f64().unwrap_or(0.0);
    let (server, queue, backoff) = (seconds("server_s"), seconds("queue_s"), seconds("backoff_s"));
    let mut note = format!(
        "Model latency p50 / p95 / p99: {}. Calls waited {server:.1} s on the server, {queue:.1} s for a free slot \
         (the concurrency limit, a paused endpoint) and {backoff:.1} s backing off",
        roles.join("; ")
    );
    match manifest.filter(|m| m.wall_seconds > 0.0 && m.jobs > 0) {
        Some(m) => {
            let workers = m.wall_seconds * m.jobs as f64;
            let share = (server + queue + backoff) / workers;
            let bound = if share >= 0.5 {
                "the model server bounds the run"
            } else {
                "critbench (its critics and writing) bounds the run more than the server"
            };
            note.push_str(&format!(
                ", of the {workers:.1} worker-seconds of the run ({:.1} s × {} workers): {:.0}% waiting on the model, \
                 so {bound}.",
                m.wall_seconds,
                m.jobs,
                100.0 * share.min(1.0)
            ));
        }
        None => note.push('.'),
    }
    Some(note)
}

/// The note on a rescoring's censored loops, which every number of its summaries leaves out:
/// `groups` holds each config × critic × arm with censored loops, their count and its loops in all.
pub(crate) fn censored_note(groups: &[(String, u64, u64)]) -> String {
    let total: u64 = groups.iter().map(|(_, censored, _)| censored).sum();
    let shown = groups.len().min(6);
    let listed: Vec<String> =
        groups[..shown].iter().map(|(group, censored, loops)| format!("{group} {censored} of {loops}")).collect();
    format!(
        "**{total} loop(s) are censored** ({}{}): under the rescoring critic's scores their policy would have revised \
         after the last round the run recorded, so their outcome is unknown. They are left out of every rate, mean \
         and comparison here (`n` counts the loops with an outcome; arms and configs are paired only where both \
         loops have one); `censored.csv` has every group, with the pass rate's bounds if every censored loop had \
         failed or passed.",
        listed.join(", "),
        if groups.len() > shown { format!(" and {} more", groups.len() - shown) } else { String::new() },
    )
}

/// `incomplete`: the loops the manifest expects per task, and how many tasks had fewer.
pub(crate) fn notes(
    summary: &[SummaryRow],
    manifest: Option<&Manifest>,
    incomplete: Option<(usize, usize)>,
) -> Vec<String> {
    let mut notes = Vec::new();
    let failed = manifest.map_or(0, |m| (m.failed_loop_count as usize).max(m.failed_loops.len()));
    if let Some(openai) = manifest.and_then(|m| m.openai.as_ref()).filter(|o| o.is_object()) {
        let count = |pointer: &str| openai.pointer(pointer).and_then(|v| v.as_u64()).unwrap_or(0);
        notes.push(calls_note(openai));
        let failures = count("/calls/failures");
        if failures > 0 && failures == count("/calls/total") {
            notes.push(format!(
                "**Every model call failed** ({failures} of {failures}): the numbers above measure no model output."
            ));
        }
        notes.extend(money_note(openai));
        if openai.pointer("/tokens/cap_reached") == Some(&serde_json::Value::Bool(true)) {
            notes.push(format!(
                "**The token cap was reached** (max_tokens_total = {}): {} model calls were refused, so loops that \
                 still needed the model failed and the rates above cover only the loops that finished.",
                count("/tokens/max_tokens_total"),
                count("/tokens/refused_calls"),
            ));
        }
    }
    if failed > 0 {
        notes.push(format!("{failed} loop(s) failed and have no rows; `failed_loops` in manifest.json says why."));
    }
    let writer_errors = manifest.map_or(0, |m| m.loops_with_writer_errors);
    if writer_errors > 0 {
        notes.push(format!(
            "{writer_errors} loop(s) ended because the writer program wrote no draft the policy asked for (exit \
             `writer_error`): each counts as not passed, on the drafts it had; `writer_error` in trajectories.parquet \
             says what the writer did."
        ));
    }
    // Errors a retry hid, an evaluator's errors, answers cut short: what the rates do not show.
    notes.extend(manifest.into_iter().flat_map(crate::trouble::notices).map(|n| crate::format::as_note(&n)));
    if let Some((expected, tasks)) = incomplete.filter(|(_, tasks)| *tasks > 0) {
        // A failed loop leaves one task short; more short tasks than that means rows are missing
        // or a loop was written twice (a task that closed and then saw another row).
        let unexplained = if tasks > failed {
            " More than the failed loops explain: the outcomes may be incomplete or hold a loop twice."
        } else {
            ""
        };
        notes.push(format!(
            "{tasks} task(s) of a config × critic had fewer than the {expected} loops (epochs × arms) the manifest \
             expects and are summarized with the loops they have.{unexplained}"
        ));
    }
    let (errors, rounds): (u64, u64) =
        summary.iter().fold((0, 0), |(e, r), row| (e + row.critic_errors, r + row.rounds_total));
    if errors > 0 {
        let worst = summary
            .iter()
            .filter(|row| row.critic_errors > 0)
            .map(|row| {
                format!("{} × {} × {} {:.1}%", row.config_id, row.critic, row.arm, 100.0 * row.critic_error_rate)
            })
            .collect::<Vec<_>>();
        let shown = worst.len().min(6);
        notes.push(format!(
            "**The critic failed on {errors} of {rounds} critiqued rounds** ({:.1}%); a failed critique scores the range minimum and never \
             passes a draft. By config × critic × arm: {}{} (`critic_error_rate` in summary.csv).",
            100.0 * errors as f64 / rounds.max(1) as f64,
            worst[..shown].join(", "),
            if worst.len() > shown { format!(" and {} more", worst.len() - shown) } else { String::new() },
        ));
    }
    let disagreements: u64 = summary.iter().map(|r| r.critic_disagreements).sum();
    if disagreements > 0 {
        notes.push(format!(
            "On {disagreements} critiqued round(s) the critic's own `passed` disagreed with the host's pass rule \
             (`critic_disagreements` in summary.csv); the host's rule decided."
        ));
    }
    notes
}
