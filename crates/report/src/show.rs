//! `critbench show RUN`: read one loop of a run round by round, or list the discordant pairs of two
//! arms (the task × epoch units where one arm passed and the other did not).
//!
//! A loop is found in `trajectories.parquet` by its task ([`crate::queries::task_rounds`]): only
//! the row groups whose `task_id` statistics (min/max) can hold the task are read, and only the
//! columns shown are decoded, so showing one task of a run of a million rounds reads a row group
//! or two.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use critbench_core::{Arm, ExitReason};
use critbench_storage::tables::{RowDecision, for_each_outcome_stats_in};

use crate::keys::{KeyMap, task_hash};
use crate::queries::task_rounds::{TaskRound, read_task_rounds};
use crate::{QueryError, Report, ReportError, WantedKey};

/// Which loop of a task to show; `None` keys take the first loop that matches the others.
#[derive(Clone, Debug, Default)]
pub struct LoopQuery {
    /// The task's id.
    pub task: String,
    /// The config (`--config`).
    pub config: Option<String>,
    /// The critic (`--critic`).
    pub critic: Option<String>,
    /// The arm (`--arm`).
    pub arm: Option<String>,
    /// The epoch (`--epoch`).
    pub epoch: Option<u32>,
}

/// Every round of `task` in the run's trajectories, whether in one file or in shards.
fn task_rounds(run_dir: &Path, task: &str) -> Result<Vec<TaskRound>, ReportError> {
    Ok(read_task_rounds(&crate::run_tables::table_files(run_dir, "trajectories")?, task)?.rounds)
}

/// Renders one loop of `query.task` round by round. `color` adds ANSI colours to the draft diffs
/// (for a terminal). Errors name what is missing: an unknown task, or a key no loop of the task has
/// (with the values it does have).
pub fn show_loop(run_dir: &Path, query: &LoopQuery, color: bool) -> Result<String, ReportError> {
    crate::run_tables::table_files(run_dir, "trajectories")?;
    crate::run_tables::check_tables(run_dir)?;
    let rounds = task_rounds(run_dir, &query.task)?;
    if rounds.is_empty() {
        return Err(QueryError::NoTask {
            task: query.task.clone(),
            file: run_dir.join(critbench_storage::shards::table_label(run_dir, "trajectories")),
        }
        .into());
    }
    let keys = |r: &TaskRound| (r.config.clone(), r.critic.clone(), r.arm, r.epoch);
    let loops = crate::format::unique(rounds.iter().map(keys));
    let matches = |key: &LoopOfTask| {
        query.config.as_ref().is_none_or(|c| *c == key.0)
            && query.critic.as_ref().is_none_or(|c| *c == key.1)
            && query.arm.as_ref().is_none_or(|a| a == key.2.as_str())
            && query.epoch.is_none_or(|e| e == key.3)
    };
    let matching: Vec<&LoopOfTask> = loops.iter().filter(|k| matches(k)).collect();
    let Some(&chosen) = matching.first() else {
        let mut wanted = Vec::new();
        for (flag, given, values) in [
            ("--config", query.config.clone(), crate::format::unique(rounds.iter().map(|r| r.config.clone()))),
            ("--critic", query.critic.clone(), crate::format::unique(rounds.iter().map(|r| r.critic.clone()))),
            ("--arm", query.arm.clone(), crate::format::unique(rounds.iter().map(|r| r.arm.to_string()))),
            (
                "--epoch",
                query.epoch.map(|e| e.to_string()),
                crate::format::unique(rounds.iter().map(|r| r.epoch.to_string())),
            ),
        ] {
            if let Some(given) = given {
                let has = (!values.contains(&given)).then_some(values);
                wanted.push(WantedKey { flag, given, has });
            }
        }
        return Err(QueryError::NoLoop { task: query.task.clone(), wanted }.into());
    };
    let rounds: Vec<&TaskRound> = rounds.iter().filter(|r| keys(r) == *chosen).collect();
    Ok(render_loop(run_dir, query, chosen, &matching, &rounds, color))
}

/// A loop of a task: config, critic, arm and epoch.
type LoopOfTask = (String, String, Arm, u32);

fn render_loop(
    run_dir: &Path,
    query: &LoopQuery,
    chosen: &LoopOfTask,
    matching: &[&LoopOfTask],
    rounds: &[&TaskRound],
    color: bool,
) -> String {
    let mut out = String::new();
    let (config, critic, arm, epoch) = chosen;
    let kind = rounds[0].kind.as_deref().map(|k| format!(" ({k})")).unwrap_or_default();
    let _ = writeln!(out, "task {}{kind} · config {config} · critic {critic} · arm {arm} · epoch {epoch}", query.task);
    if matching.len() > 1 {
        let _ = writeln!(
            out,
            "the first of {} loops that match; choose another with --config, --critic, --arm, --epoch:",
            matching.len()
        );
        for (flag, values) in [
            ("--config", crate::format::unique(matching.iter().map(|k| k.0.clone()))),
            ("--critic", crate::format::unique(matching.iter().map(|k| k.1.clone()))),
            ("--arm", crate::format::unique(matching.iter().map(|k| k.2.to_string()))),
            ("--epoch", crate::format::unique(matching.iter().map(|k| k.3.to_string()))),
        ] {
            if values.len() > 1 {
                let _ = writeln!(out, "  {flag} {}", values.join(", "));
            }
        }
    }
    let mut previous: Option<&str> = None;
    let mut drafts_stored = false;
    // A resampled round is a fresh draft, not a revision of the one before: no diff between them.
    let resamples = arm.resamples();
    for round in rounds {
        let _ = writeln!(out);
        let best = if round.is_best { ", the best draft" } else { "" };
        let decision = match round.decision {
            RowDecision::Policy(critbench_core::Decision::Revise) if resamples => "draw a fresh draft",
            decision => decision.as_str(),
        };
        let _ = writeln!(out, "round {}: score {}{best} → {decision}", round.round, number(round.critique.score));
        if !round.critique.dims.is_empty() {
            let dims: Vec<String> = round.critique.dims.iter().map(|(k, v)| format!("{k} {}", number(*v))).collect();
            let _ = writeln!(out, "  dimensions: {}", dims.join(", "));
        }
        list(&mut out, "issues", &round.critique.issues);
        list(&mut out, "fatal issues", &round.critique.fatal_issues);
        if !round.critique.issue_types.is_empty() {
            let _ = writeln!(out, "  issue types: {}", round.critique.issue_types.join(", "));
        }
        if let Some(suggestions) = &round.critique.suggestions {
            let _ = writeln!(out, "  suggestions:{}", suggestions_text(suggestions));
        }
        if let Some(rationale) = &round.critique.rationale {
            let _ = writeln!(out, "  rationale: {rationale}");
        }
        let verdict = match round.critique.critic_passed {
            Some(true) => "critic says pass, ",
            Some(false) => "critic says fail, ",
            None => "",
        };
        let attempts =
            if round.critic_attempts == 1 { "1 attempt".into() } else { format!("{} attempts", round.critic_attempts) };
        let _ = writeln!(out, "  critic: {verdict}{attempts}");
        if let Some(error) = &round.critic_error {
            let _ = writeln!(out, "  critic error: {error}");
        }
        if round.tokens.iter().any(Option::is_some) {
            let t = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
            let _ = writeln!(
                out,
                "  tokens: writer {} in / {} out, critic {} in / {} out",
                t(round.tokens[0]),
                t(round.tokens[1]),
                t(round.tokens[2]),
                t(round.tokens[3])
            );
        }
        let _ = writeln!(out, "  time: writer {:.1} ms, critic {:.1} ms", round.gen_ms, round.critic_ms);
        let _ = writeln!(out, "  draft: {} chars", round.draft_chars);
        if let Some(draft) = &round.draft {
            drafts_stored = true;
            match previous {
                None => indent(&mut out, draft),
                Some(before) if before == draft => {
                    let _ = writeln!(out, "  (the same draft as round {})", round.round.saturating_sub(1));
                }
                Some(before) => {
                    let _ = writeln!(out, "  diff from round {}:", round.round.saturating_sub(1));
                    unified_diff(&mut out, before, draft, color);
                }
            }
            previous = Some(draft.as_str()).filter(|_| !resamples);
        }
        if round.passed || round.decision.exit_reason().is_some() {
            let exit = round.decision.exit_reason().map_or("-", ExitReason::as_str);
            let verdict = if round.passed { "passed" } else { "did not pass" };
            let _ = writeln!(out, "  exit: {exit} ({verdict})");
        }
    }
    if !drafts_stored {
        let _ = writeln!(
            out,
            "\n(drafts were not stored; rerun with --store-drafts to see them: {})",
            rerun_command(run_dir)
        );
    }
    out
}

/// The command that reruns the run in `run_dir` over itself with its drafts stored: the experiment
/// its manifest names, when that file is still there.
fn rerun_command(run_dir: &Path) -> String {
    let manifest = critbench_storage::manifest::Manifest::read(run_dir).ok().flatten();
    let experiment = manifest
        .and_then(|m| m.experiment.rest.get("path").and_then(|p| p.as_str()).map(PathBuf::from))
        .filter(|path| path.is_file());
    let experiment = experiment.map_or_else(|| "EXPERIMENT.toml".to_string(), |path| shell_word(&path));
    format!("critbench run {experiment} --store-drafts --out {} --overwrite", shell_word(run_dir))
}

/// `path` as one word of a POSIX shell command: single-quoted when it holds anything a shell reads.
fn shell_word(path: &Path) -> String {
    let text = path.to_string_lossy();
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "_-./+:=@%,".contains(c)) {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

fn number(value: f64) -> String {
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

fn list(out: &mut String, label: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let _ = writeln!(out, "  {label}:");
    for item in items {
        let _ = writeln!(out, "    - {item}");
    }
}

/// Suggestions are stored as JSON text (a list of `{target, edit}` objects or strings); shown one
/// per line when they parse, verbatim otherwise.
fn suggestions_text(json: &str) -> String {
    match suggestion_items(json) {
        Some(items) => items.iter().map(|item| format!("\n    - {item}")).collect(),
        None => format!(" {json}"),
    }
}

/// The suggestions of a critique's stored JSON text, one per item (`target: edit`, or the edit
/// alone); `None` when the text is not a list.
pub fn suggestion_items(json: &str) -> Option<Vec<String>> {
    let Ok(serde_json::Value::Array(items)) = serde_json::from_str::<serde_json::Value>(json) else {
        return None;
    };
    let item = |item: &serde_json::Value| match item {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Object(map) => {
            let field = |k: &str| map.get(k).and_then(|v| v.as_str()).unwrap_or("");
            match (field("target"), field("edit")) {
                ("", edit) => edit.to_string(),
                (target, edit) => format!("{target}: {edit}"),
            }
        }
        other => other.to_string(),
    };
    Some(items.iter().map(item).collect())
}

fn indent(out: &mut String, text: &str) {
    for line in text.lines() {
        let _ = writeln!(out, "    {line}");
    }
}

/// A unified line diff of `before` → `after` with three lines of context, `-`/`+` lines red/green
/// when `color`.
fn unified_diff(out: &mut String, before: &str, after: &str, color: bool) {
    let diff = similar::TextDiff::from_lines(before, after);
    for group in diff.grouped_ops(3) {
        let (first, last) = (&group[0], &group[group.len() - 1]);
        let old = first.old_range().start..last.old_range().end;
        let new = first.new_range().start..last.new_range().end;
        let header = format!("@@ -{},{} +{},{} @@", old.start + 1, old.len(), new.start + 1, new.len());
        if color {
            let _ = writeln!(out, "    \x1b[36m{header}\x1b[0m");
        } else {
            let _ = writeln!(out, "    {header}");
        }
        for op in &group {
            for change in diff.iter_changes(op) {
                let (sign, paint) = match change.tag() {
                    similar::ChangeTag::Delete => ('-', "\x1b[31m"),
                    similar::ChangeTag::Insert => ('+', "\x1b[32m"),
                    similar::ChangeTag::Equal => (' ', ""),
                };
                let line = change.value().trim_end_matches('\n');
                if color && !paint.is_empty() {
                    let _ = writeln!(out, "    {paint}{sign}{line}\x1b[0m");
                } else {
                    let _ = writeln!(out, "    {sign}{line}");
                }
            }
        }
    }
}

/// One discordant pair: a task × epoch where one of the two arms passed.
#[derive(Clone, Debug, PartialEq)]
pub struct DiscordantPair {
    /// The task.
    pub task_id: String,
    /// The epoch.
    pub epoch: u32,
    /// Whether arm A passed (then B did not).
    pub a_passed: bool,
}

/// The discordant pairs of one config and critic.
#[derive(Clone, Debug)]
pub struct PairGroup {
    /// The config.
    pub config: String,
    /// The critic.
    pub critic: String,
    /// Units where both arms ran.
    pub units: usize,
    /// Discordant units where only A passed, and where only B passed.
    pub a_only: usize,
    /// Units only B passed.
    pub b_only: usize,
    /// The discordant pairs by task and epoch, the first `limit` of them when a limit was given.
    pub pairs: Vec<DiscordantPair>,
}

/// Every task × epoch, per config and critic, where exactly one of `arm_a` and `arm_b` passed,
/// read from `outcomes.parquet` (only the columns it needs, a batch at a time). Groups are in file
/// order, pairs by task and epoch (whatever order the rows came in). An arm the run does not have is an error listing the arms it has.
pub fn discordant_pairs(run_dir: &Path, arm_a: &str, arm_b: &str) -> Result<Vec<PairGroup>, ReportError> {
    discordant_pairs_limited(run_dir, arm_a, arm_b, usize::MAX)
}

/// [`discordant_pairs`] keeping at most `limit` pairs of each group (the first by task and epoch)
/// and counting the rest. A unit is held only until both arms' loops of it have been read, so
/// memory grows with the groups, the units open at once and `limit`, not with the run.
pub fn discordant_pairs_limited(
    run_dir: &Path,
    arm_a: &str,
    arm_b: &str,
    limit: usize,
) -> Result<Vec<PairGroup>, ReportError> {
    let paths = crate::run_tables::table_files(run_dir, "outcomes")?;
    crate::run_tables::check_tables(run_dir)?;
    pairs_in(&paths, arm_a, arm_b, limit)
}

/// [`discordant_pairs_limited`] of the outcomes in `paths`, already checked against their
/// manifest (or just written).
fn pairs_in(paths: &[PathBuf], arm_a: &str, arm_b: &str, limit: usize) -> Result<Vec<PairGroup>, ReportError> {
    if arm_a == arm_b {
        return Err(QueryError::SameArmTwice(arm_a.to_string()).into());
    }
    let mut arms: Vec<String> = Vec::new();
    let mut groups: Vec<PairGroup> = Vec::new();
    let mut found: Vec<Vec<DiscordantPair>> = Vec::new();
    let mut last_group = 0;
    // (group, task, epoch) → [A passed, B passed], until both have been read.
    let mut open: KeyMap<(usize, u128, u32), [Option<bool>; 2]> = KeyMap::default();
    // The first `limit` pairs by task and epoch, trimmed now and then so memory stays bounded.
    let keep_first = |pairs: &mut Vec<DiscordantPair>| {
        pairs.sort_unstable_by(|x, y| (&x.task_id, x.epoch).cmp(&(&y.task_id, y.epoch)));
        pairs.truncate(limit);
    };
    for_each_outcome_stats_in::<std::convert::Infallible>(paths, |row| {
        if !arms.iter().any(|a| a == row.arm) {
            arms.push(row.arm.to_string());
        }
        let side = if row.arm == arm_a {
            0
        } else if row.arm == arm_b {
            1
        } else {
            return Ok(());
        };
        // Rows of one config × critic come together, and the groups are few: the last one nearly
        // always matches, and a scan finds the others.
        let is_row_group = |g: &PairGroup| g.config == row.config_id && g.critic == row.critic;
        if !groups.get(last_group).is_some_and(is_row_group) {
            last_group = match groups.iter().position(is_row_group) {
                Some(group) => group,
                None => {
                    groups.push(PairGroup {
                        config: row.config_id.to_string(),
                        critic: row.critic.to_string(),
                        units: 0,
                        a_only: 0,
                        b_only: 0,
                        pairs: Vec::new(),
                    });
                    found.push(Vec::new());
                    groups.len() - 1
                }
            };
        }
        let group = last_group;
        let key = (group, task_hash(row.task_id), row.epoch);
        let unit = open.entry(key).or_default();
        unit[side] = Some(row.passed);
        let [Some(a), Some(b)] = *unit else { return Ok(()) };
        open.remove(&key);
        let counts = &mut groups[group];
        counts.units += 1;
        if a != b {
            if a {
                counts.a_only += 1;
            } else {
                counts.b_only += 1;
            }
            let pairs = &mut found[group];
            pairs.push(DiscordantPair { task_id: row.task_id.to_string(), epoch: row.epoch, a_passed: a });
            if pairs.len() >= limit.saturating_mul(2).max(16) {
                keep_first(pairs);
            }
        }
        Ok(())
    })?;
    for arm in [arm_a, arm_b] {
        if !arms.iter().any(|a| a == arm) {
            return Err(QueryError::NoArm { arm: arm.to_string(), arms }.into());
        }
    }
    for (group, mut pairs) in groups.iter_mut().zip(found) {
        keep_first(&mut pairs);
        group.pairs = pairs;
    }
    Ok(groups)
}

/// The command that opens the loop of `arm` in a discordant pair of `group`.
pub fn show_command(run: &str, group: &PairGroup, pair: &DiscordantPair, arm: &str) -> String {
    format!(
        "critbench show {run} --task {} --config {} --critic {} --epoch {} --arm {arm}",
        pair.task_id, group.config, group.critic, pair.epoch
    )
}

/// The most discordant pairs `report.md` and `report.html` list.
pub(crate) const LISTED_PAIRS: usize = 100;

/// The discordant pairs of the two arms the reports compare, as they list them: every group's
/// counts, and the first [`LISTED_PAIRS`] pairs in file order.
pub(crate) struct ListedPairs {
    pub arm_a: String,
    pub arm_b: String,
    pub groups: Vec<PairGroup>,
}

impl ListedPairs {
    /// Reads the pairs of `arm_a` and `arm_b` in the outcomes `paths` (checked, or just written,
    /// as the summary's), at most [`LISTED_PAIRS`] of each group, the groups in the order of
    /// `report`'s summary (so the list does not depend on the order of the rows).
    pub(crate) fn read(
        paths: &[PathBuf],
        report: &Report,
        arm_a: &str,
        arm_b: &str,
    ) -> Result<ListedPairs, ReportError> {
        Ok(ListedPairs::read_unordered(paths, arm_a, arm_b)?.ordered(report))
    }

    /// [`ListedPairs::read`] without the summary: the groups in file order, for
    /// [`ListedPairs::ordered`] to put in the summary's once it is there.
    pub(crate) fn read_unordered(paths: &[PathBuf], arm_a: &str, arm_b: &str) -> Result<ListedPairs, ReportError> {
        let groups = pairs_in(paths, arm_a, arm_b, LISTED_PAIRS)?;
        Ok(ListedPairs { arm_a: arm_a.to_string(), arm_b: arm_b.to_string(), groups })
    }

    /// The groups in the order of `report`'s summary.
    pub(crate) fn ordered(mut self, report: &Report) -> ListedPairs {
        let position = |group: &PairGroup| {
            let found =
                report.summary.rows.iter().position(|r| r.config_id == group.config && r.critic == group.critic);
            (found.unwrap_or(usize::MAX), group.config.clone(), group.critic.clone())
        };
        self.groups.sort_by_cached_key(position);
        self
    }

    /// Units where both arms ran, and the discordant ones where only A and only B passed.
    pub(crate) fn totals(&self) -> (usize, usize, usize) {
        self.groups.iter().fold((0, 0, 0), |(units, a, b), g| (units + g.units, a + g.a_only, b + g.b_only))
    }

    /// The pairs listed, with their group, and the arm that did not pass (the loop worth opening).
    pub(crate) fn listed(&self) -> impl Iterator<Item = (&PairGroup, &DiscordantPair, &str)> {
        self.groups
            .iter()
            .flat_map(|group| group.pairs.iter().map(move |pair| (group, pair)))
            .take(LISTED_PAIRS)
            .map(|(group, pair)| (group, pair, if pair.a_passed { self.arm_b.as_str() } else { self.arm_a.as_str() }))
    }
}

/// Renders [`discordant_pairs`]: per config and critic, the counts and at most `limit` pairs, each
/// with the `critbench show` command that opens it; the rest are counted.
pub fn render_pairs(run_dir: &Path, arm_a: &str, arm_b: &str, groups: &[PairGroup], limit: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "discordant pairs of {arm_a} and {arm_b}: the task × epoch units where one passed and the other did not"
    );
    for group in groups {
        let (a_only, b_only) = (group.a_only, group.b_only);
        let _ = writeln!(
            out,
            "\n{} · {}: {} of {} units ({a_only} only {arm_a} passed, {b_only} only {arm_b} passed)",
            group.config,
            group.critic,
            a_only + b_only,
            group.units
        );
        for pair in group.pairs.iter().take(limit) {
            let (won, lost) = if pair.a_passed { (arm_a, arm_b) } else { (arm_b, arm_a) };
            let _ = writeln!(
                out,
                "  {} epoch {}: {won} passed, {lost} did not · {}",
                pair.task_id,
                pair.epoch,
                show_command(&run_dir.display().to_string(), group, pair, lost)
            );
        }
        if a_only + b_only > limit {
            let _ = writeln!(out, "  … and {} more (--limit to see more)", a_only + b_only - limit);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 3,000 tasks × 2 epochs, feedback passing the even tasks and no-feedback the tasks divisible
    /// by 3; rows of a unit far apart (all feedback rows first, no-feedback reversed).
    #[test]
    fn discordant_pairs_keep_the_first_in_file_order_and_count_the_rest() {
        use critbench_storage::tables::{OutcomeRow, OutcomeWriter};
        let dir = tempfile::tempdir().unwrap();
        let mut rows = Vec::new();
        for (arm, passes) in [("feedback", 2), ("no-feedback", 3)] {
            let mut arm_rows = Vec::new();
            for task in 0..3000 {
                for epoch in 0..2 {
                    let id = format!("t{task:04}");
                    arm_rows.push(OutcomeRow { epoch, ..OutcomeRow::bare(&id, arm, task % passes == 0, 2) });
                }
            }
            if arm == "no-feedback" {
                arm_rows.reverse();
            }
            rows.extend(arm_rows);
        }
        let mut writer = OutcomeWriter::create(&dir.path().join("outcomes.parquet")).unwrap();
        for row in rows {
            writer.push(row).unwrap();
        }
        writer.close().unwrap();
        let all = discordant_pairs(dir.path(), "feedback", "no-feedback").unwrap();
        let limited = discordant_pairs_limited(dir.path(), "feedback", "no-feedback", 5).unwrap();
        // Tasks even but not divisible by 3: 1,000 of 3,000; divisible by 3 but odd: 500. Two epochs
        // each: more than the limited read holds before it trims.
        for groups in [&all, &limited] {
            assert_eq!(groups.len(), 1);
            assert_eq!((groups[0].units, groups[0].a_only, groups[0].b_only), (6000, 2000, 1000));
        }
        assert_eq!(all[0].pairs.len(), 3000);
        assert_eq!(limited[0].pairs, all[0].pairs[..5].to_vec(), "the first five by task and epoch");
        let first: Vec<(&str, u32, bool)> =
            limited[0].pairs.iter().map(|p| (p.task_id.as_str(), p.epoch, p.a_passed)).collect();
        assert_eq!(
            first,
            [("t0002", 0, true), ("t0002", 1, true), ("t0003", 0, false), ("t0003", 1, false), ("t0004", 0, true)]
        );
        let rendered = render_pairs(dir.path(), "feedback", "no-feedback", &limited, 5);
        assert!(rendered.contains(": 3000 of 6000 units (2000 only feedback passed, 1000 only no-feedback passed)"));
        assert!(rendered.contains("… and 2995 more"), "{rendered}");
    }
}
