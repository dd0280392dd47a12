//! `report.md` and the table printed after a run.

use std::fmt::Write;

use crate::Report;
use crate::backend::IGNORED_NOTE_SHARE;
use crate::headline::{Headline, critic_errors_of, error_rate, headline_cells, notices};
use crate::rows::ComparisonRow;
use crate::show::{LISTED_PAIRS, ListedPairs, show_command};

fn percent(value: f64) -> String {
    format!("{:.1}%", 100.0 * value)
}

/// The most config × critic lines [`glance_table`] prints; past it, the best and worst
/// `GLANCE_EXTREMES` (10) each.
pub(crate) const GLANCE_MAX_LINES: usize = 30;
pub(crate) const GLANCE_EXTREMES: usize = 10;

/// One line per config × critic: each arm's pass rate, and the headline comparison. What a
/// terminal shows after a run. A grid of more than `GLANCE_MAX_LINES` (30) lines prints its
/// `GLANCE_EXTREMES` (10) best and worst by the first arm's pass rate, and says how many it left out
/// (summary.csv keeps them all). What the backend cannot measure follows the table, and replaces
/// the difference of a critic whose feedback the simulated writer mostly ignored (see
/// [`crate::backend`]); a comparison of the scripted backend's arms says what it measures.
pub fn glance_table(report: &Report) -> String {
    let mut arms: Vec<&str> = Vec::new();
    for row in &report.summary.rows {
        if !arms.contains(&row.arm.as_str()) {
            arms.push(&row.arm);
        }
    }
    let mut out =
        String::from(if report.rescored_by.is_some() { "| config | steering critic |" } else { "| config | critic |" });
    for arm in &arms {
        let _ = write!(out, " {arm} |");
    }
    let errors = has_critic_errors(report);
    out.push_str(" paired difference (95% CI) | p (test) |");
    if errors {
        out.push_str(" critic errors |");
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---:|".repeat(arms.len()));
    out.push_str("---|---:|");
    out.push_str(if errors { "---:|\n" } else { "\n" });
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for row in &report.summary.rows {
        if !groups.contains(&(row.config_id.as_str(), row.critic.as_str())) {
            groups.push((&row.config_id, &row.critic));
        }
    }
    let mut omitted = 0;
    if groups.len() > GLANCE_MAX_LINES {
        // Ranked by the first arm's pass rate (ties in report order); shown best first.
        let rates: std::collections::HashMap<(&str, &str), f64> = report
            .summary
            .rows
            .iter()
            .filter(|r| r.arm == arms[0])
            .map(|r| ((r.config_id.as_str(), r.critic.as_str()), r.pass_rate))
            .collect();
        let rate = |group: (&str, &str)| rates.get(&group).copied().unwrap_or(f64::NEG_INFINITY);
        let mut ranked: Vec<(usize, (&str, &str))> = groups.iter().copied().enumerate().collect();
        ranked.sort_by(|a, b| rate(b.1).total_cmp(&rate(a.1)).then(a.0.cmp(&b.0)));
        omitted = ranked.len() - 2 * GLANCE_EXTREMES;
        let tail = ranked.split_off(ranked.len() - GLANCE_EXTREMES);
        ranked.truncate(GLANCE_EXTREMES);
        groups = ranked.into_iter().chain(tail).map(|(_, group)| group).collect();
    }
    for (index, (config, critic)) in groups.into_iter().enumerate() {
        if omitted > 0 && index == GLANCE_EXTREMES {
            let _ = writeln!(
                out,
                "| … | {omitted} config × critic rows left out: the {GLANCE_EXTREMES} best and worst by {} pass rate are \
                 shown; summary.csv has all |",
                arms[0]
            );
        }
        let _ = write!(out, "| {config} | {critic} |");
        for arm in &arms {
            match report.summary.rows.iter().find(|r| r.config_id == config && r.critic == critic && r.arm == *arm) {
                Some(row) => {
                    let censored = report
                        .summary
                        .censored
                        .iter()
                        .find(|((c, k, a), _)| (c.as_str(), k.as_str(), a.as_str()) == (config, critic, *arm));
                    match censored {
                        Some((_, count)) => {
                            let _ =
                                write!(out, " {} of {} ({count} censored, left out) |", percent(row.pass_rate), row.n);
                        }
                        None => {
                            let _ = write!(out, " {} |", percent(row.pass_rate));
                        }
                    }
                }
                None => out.push_str(" – |"),
            }
        }
        let headline = headline_comparison(&report.summary.comparisons, config, critic);
        let (failed, rounds) = critic_errors_of(report, config, critic);
        match headline.map(|c| (c, headline_cells(report, c))) {
            Some((c, Headline::Measured { shared })) => {
                let _ = write!(
                    out,
                    " {} − {}: {}{shared} | {} |",
                    c.arm_a,
                    c.arm_b,
                    crate::format::difference_cell(c.diff, c.diff_lo, c.diff_hi),
                    crate::format::test_cell(c.p_value, &c.test)
                );
            }
            Some((_, Headline::NotMeasured(why))) => {
                let _ = write!(out, " {why} | – |");
            }
            None => out.push_str(" – | – |"),
        }
        if errors {
            let _ = write!(out, " {} |", error_rate(failed, rounds));
        }
        out.push('\n');
    }
    out.push_str(&notices(report));
    out
}

/// The line a terminal prints above [`glance_table`]: what its numbers are.
pub const GLANCE_HEADER: &str = "Pass rates per arm: the share of each arm's loops (task × epoch) whose answer passed the \
     critic; the difference is paired on the same task × epoch units.";

/// Everything `critbench run` and `critbench report` print of a run's report: first, for a critic
/// that never pointed at what was really wrong, what the simulator's hidden truth says
/// ([`crate::evaluators::truth_lead`]); then the answer by the lead judge (`answer`, with the
/// critic-pleasing gaps it measured), the notes the rates do not show, and [`glance_legend`].
pub fn terminal(report: &Report, run_dir: &std::path::Path) -> String {
    let mut out = String::new();
    if let Some(evaluated) = &report.evaluators {
        out.push_str(&crate::evaluators::truth_lead(evaluated));
    }
    for line in crate::answer::lines(report) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&notices(report));
    out.push_str(&glance_legend(run_dir));
    out
}

/// The lines a terminal prints below its table: how a config id reads (the grammar of
/// `critbench_core::Policy::config_id`, pinned by a test) and where the whole report of `run_dir` is.
pub fn glance_legend(run_dir: &std::path::Path) -> String {
    format!(
        "Config ids name the policy: p8-r3-stall-e0 is pass_score 8, max_revisions 3, the stall rule on (nostall: off), \
         plateau_eps 0 (off);\na -dN suffix is dim_target N, -last returns the last draft, not the best.\n\
         Every judge, arm, interval and chart: {} (report.md beside it).\n",
        run_dir.join(crate::outputs::REPORT_HTML).display()
    )
}

/// The comparison a config × critic's headline shows: memory against plain feedback when the run
/// has the memory arm, else feedback against the next arm, else the first; of arms that ran (an
/// adjudicated twin has its own section).
pub(crate) fn headline_comparison<'a>(
    comparisons: &'a [ComparisonRow],
    config: &str,
    critic: &str,
) -> Option<&'a ComparisonRow> {
    let mut of_group =
        comparisons.iter().filter(|c| c.config_id == config && c.critic == critic && c.between_arms_that_ran());
    let first = of_group.clone().next();
    // Pairs come in reading order, so the first match is the one.
    of_group.find(|c| c.arm_a == "feedback+memory" || c.arm_a == "feedback").or(first)
}

/// The headline of each task kind: [`glance_table`] over that kind's tasks.
fn kinds_section(out: &mut String, report: &Report) {
    if report.summary.by_kind.is_empty() {
        return;
    }
    out.push_str("\n## By task kind\n\n");
    out.push_str(
        "The same headline over the tasks of each kind alone: each arm's pass rate, and the paired difference with \
         its 95% interval and test.\n",
    );
    for kind in &report.summary.by_kind {
        let tasks = kind.summary.iter().map(|r| r.n_tasks).max().unwrap_or(0);
        let _ = writeln!(out, "\n### {} ({tasks} tasks)\n", kind_label(kind.kind.as_deref()));
        let summary =
            crate::Summary { rows: kind.summary.clone(), comparisons: kind.comparisons.clone(), ..Default::default() };
        let view = Report { summary, ..Report::default() };
        out.push_str(&glance_table(&view));
    }
}

/// How a task kind is named in the reports.
pub(crate) fn kind_label(kind: Option<&str>) -> String {
    match kind {
        Some(kind) => format!("kind `{kind}`"),
        None => "tasks without a kind".to_string(),
    }
}

/// The discordant pairs of the compared arms: counts, and the first pairs with the command that
/// opens each.
/// The most discordant pairs `report.md` lists.
const PAIRS_IN_REPORT: usize = 20;

fn pairs_section(out: &mut String, pairs: &ListedPairs) {
    let (units, a_only, b_only) = pairs.totals();
    let _ = writeln!(out, "\n## Discordant pairs of {} and {}\n", pairs.arm_a, pairs.arm_b);
    let _ = writeln!(
        out,
        "{} of {units} task × epoch units had one arm pass and the other not: only {} passed {a_only}, only {} \
         passed {b_only}.{} `RUN` is this report's directory.\n",
        a_only + b_only,
        pairs.arm_a,
        pairs.arm_b,
        if a_only + b_only > PAIRS_IN_REPORT {
            format!(
                " The first {PAIRS_IN_REPORT} are listed (report.html lists {LISTED_PAIRS}; `critbench show RUN --pairs {},{}` \
                 lists all).",
                pairs.arm_a, pairs.arm_b
            )
        } else {
            String::new()
        }
    );
    if a_only + b_only == 0 {
        return;
    }
    out.push_str(
        "| config | critic | task | epoch | passed | open the loop that did not pass |\n|---|---|---|---:|---|---|\n",
    );
    for (group, pair, lost) in pairs.listed().take(PAIRS_IN_REPORT) {
        let won = if pair.a_passed { &pairs.arm_a } else { &pairs.arm_b };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {won} | `{}` |",
            group.config,
            group.critic,
            pair.task_id,
            pair.epoch,
            show_command("RUN", group, pair, lost)
        );
    }
}

/// Whether any critique of the run failed: then the tables show a critic-error column.
fn has_critic_errors(report: &Report) -> bool {
    report.summary.rows.iter().any(|r| r.critic_errors > 0)
}

/// The per-arm table: pass rate with its interval, rounds, exits, and the critic-error rate
/// when any critique failed.
pub fn summary_table(report: &Report) -> String {
    let mut out = String::new();
    let errors = has_critic_errors(report);
    let writer = report.summary.rows.iter().any(|r| r.exit_writer_error > 0);
    out.push_str("| config | critic | arm | n | pass rate (95% CI) | mean rounds | pass | stall | plateau | budget | first → best score |");
    out.push_str(if writer { " writer error |" } else { "" });
    out.push_str(if errors { " critic errors |\n" } else { "\n" });
    out.push_str("|---|---|---|---:|---|---:|---:|---:|---:|---:|---|");
    out.push_str(if writer { "---:|" } else { "" });
    out.push_str(if errors { "---:|\n" } else { "\n" });
    for row in &report.summary.rows {
        let _ = write!(
            out,
            "| {} | {} | {} | {} | {} ({}–{}) | {:.2} | {} | {} | {} | {} | {:.2} → {:.2} |",
            row.config_id,
            row.critic,
            row.arm,
            row.n,
            percent(row.pass_rate),
            percent(row.pass_rate_lo),
            percent(row.pass_rate_hi),
            row.mean_rounds,
            row.exit_pass,
            row.exit_stall,
            row.exit_plateau,
            row.exit_budget,
            row.mean_first_score,
            row.mean_best_score,
        );
        if writer {
            let _ = write!(out, " {} |", row.exit_writer_error);
        }
        if errors {
            let _ = write!(out, " {} |", error_rate(row.critic_errors, row.rounds_total));
        }
        out.push('\n');
    }
    out
}

fn comparison_table(report: &Report) -> String {
    let readings = crate::judges::readings(report);
    let (heads, alignment) = judge_columns(&readings);
    let mut out =
        format!("| config | critic | A − B | pairs |{heads} rounds A / B |\n|---|---|---|---:|{alignment}---|\n");
    for row in &report.summary.comparisons {
        let _ = write!(out, "| {} | {} | {} − {} | {} |", row.config_id, row.critic, row.arm_a, row.arm_b, row.n_pairs);
        for reading in &readings {
            let same = reading.comparison(&row.config_id, &row.critic, &row.arm_a, &row.arm_b);
            out.push_str(&judged_cells(same.map(|c| (c.diff, c.diff_lo, c.diff_hi, c.p_value))));
        }
        let _ = writeln!(out, " {:.2} / {:.2} |", row.mean_rounds_a, row.mean_rounds_b);
    }
    out
}

/// One row of a comparison table.
pub(crate) fn comparison_line(row: &ComparisonRow) -> String {
    format!(
        "| {} | {} | {} vs {} | {} | {} | {} | {} | {} | {} | {} | {:.2} / {:.2} | {:.2} / {:.2} |\n",
        row.config_id,
        row.critic,
        row.arm_a,
        row.arm_b,
        row.n_pairs,
        percent(row.pass_rate_a),
        percent(row.pass_rate_b),
        crate::format::difference_cell(row.diff, row.diff_lo, row.diff_hi),
        row.a_only,
        row.b_only,
        crate::format::test_cell(row.p_value, &row.test),
        row.mean_rounds_a,
        row.mean_rounds_b,
        row.mean_best_score_a,
        row.mean_best_score_b,
    )
}

/// How the per-arm intervals were computed, in words: one clause per method the rows use.
pub(crate) fn interval_sentence(report: &Report) -> String {
    use critbench_stats::rate::RateMethod;
    let uses = |method: RateMethod| {
        report.summary.rows.iter().any(|r| r.interval == method.as_str() || r.first_round_interval == method.as_str())
    };
    let mut sentence = String::from(
        "Each interval is 95% and covers the share of loops that would pass if these loops ran again on new tasks \
         like these; a task's epochs are one unit of evidence, and the method is the one valid at the number of \
         tasks the rate rests on (`interval` in summary.csv).",
    );
    if uses(RateMethod::Wilson) {
        sentence.push_str(
            " With more than 30 tasks, at least 10 with a pass and 10 with a fail, and one loop per task: Wilson's \
             score interval (`wilson`).",
        );
    }
    if uses(RateMethod::TaskBootstrap) {
        sentence.push_str(
            " With more than 30 tasks, at least 10 on each side, and several epochs per task: a task-cluster \
             percentile bootstrap (`task-cluster bootstrap`, tasks resampled each with all its epochs), its distribution computed exactly when every task ran the same \
             number of loops, else drawn from enough resamples (at least 2,000) to keep an endpoint's Monte Carlo \
             error below the 0.1 pp printed.",
        );
    }
    if uses(RateMethod::ClopperPearson) || uses(RateMethod::EffectiveClopperPearson) {
        sentence.push_str(
            " On 30 tasks or fewer, or with fewer than 10 tasks on a side (a rate near 0% or 100%): Clopper–Pearson's \
             exact interval (`clopper-pearson`), taken with several epochs on the number of independent loops the \
             tasks are worth (`clopper-pearson, effective sample size`), so that it is never a point.",
        );
    }
    sentence.push_str(" Equal outcomes get equal intervals, whatever the config.");
    sentence
}

/// How the paired comparisons were computed, in words: one clause per test the rows use.
pub(crate) fn comparison_sentence(report: &Report) -> String {
    use critbench_stats::difference::DifferenceTest;
    let uses = |test: DifferenceTest| report.summary.comparisons.iter().any(|c| c.test == test.as_str());
    let mut sentence = String::from(
        "Arms compared on the same task × epoch; a task's pairs are one unit of evidence. Each interval is 95% and \
         covers the difference between the arms' shares if these loops ran again on new tasks like these; the \
         p-value beside it is its dual test, so the interval excludes 0 exactly when p < 0.05 (`interval` and \
         `test` in comparisons.csv).",
    );
    if uses(DifferenceTest::TaskBootstrap) {
        sentence.push_str(
            " With more than 30 tasks and at least 10 where the arms differ: a paired bootstrap that resamples tasks, \
             each with all its epochs (its distribution computed exactly when every task has the same number of \
             pairs, else drawn from enough resamples to keep an endpoint's Monte Carlo error below the 0.1 pp \
             printed), and the p-value read from the same distribution (`task-cluster bootstrap`).",
        );
    }
    if uses(DifferenceTest::ExactMcNemar) || uses(DifferenceTest::ExactSignFlip) {
        sentence.push_str(
            " With at most 30 tasks, or fewer than 10 that differ: the exact sign-flip test of the tasks' differences \
             (`exact McNemar` with one epoch, `exact sign-flip test of tasks` with several: if the arms were \
             interchangeable, each task's difference would be as likely negative as positive; k tasks that all \
             differ one way give p = 2 · 0.5^k), and the differences it does not reject (`exact sign-flip test \
             inverted`), the end away from 0 widened to an interval that assumes only that a task's difference lies \
             between −1 and 1.",
        );
    }
    let identical = |c: &ComparisonRow| c.interval == crate::IDENTICAL_BY_DESIGN;
    let first_identical =
        report.summary.comparisons.iter().any(|c| c.first_round_interval == crate::IDENTICAL_BY_DESIGN);
    if report.summary.comparisons.iter().any(identical) || first_identical {
        sentence.push_str(
            " A difference that is zero by construction — arms that start from the same first draft, or that never \
             revise it — is marked `identical by design`, with no interval and no test, when every unit agrees.",
        );
    }
    sentence.push_str(
        " `tasks_a_better` and `tasks_b_better` count tasks where A passed more epochs than B and the reverse; \
         `mcnemar_p` is McNemar's test on the pairs as if they were independent, for reference.",
    );
    sentence
}

/// One adjudicated arm of a config × critic: its loops before and after the adjudicator's pass.
pub(crate) struct AdjudicationRow<'a> {
    pub config_id: &'a str,
    pub critic: &'a str,
    pub arm: &'a str,
    pub pairs: u64,
    pub pass_before: f64,
    pub pass_after: f64,
    /// After − before, with its 95% interval.
    pub diff: (f64, Option<f64>, Option<f64>),
    /// Passes adjudication turned into fails, and fails it turned into passes.
    pub lost: u64,
    pub won: u64,
    pub p_value: Option<f64>,
    pub mean_final_before: Option<f64>,
    pub mean_final_after: Option<f64>,
}

/// The adjudicator's effect, read off the paired comparison of each adjudicated arm
/// with its `+adjudicate` twin: the same loops, before and after the final pass. A → B flips are
/// the passes adjudication turned into fails. Empty when no arm adjudicated.
pub(crate) fn adjudication_rows(report: &Report) -> Vec<AdjudicationRow<'_>> {
    let mean_final = |config: &str, critic: &str, arm: &str| {
        report
            .summary
            .rows
            .iter()
            .find(|r| r.config_id == config && r.critic == critic && r.arm == arm)
            .map(|r| r.mean_final_score)
    };
    report
        .summary
        .comparisons
        .iter()
        .filter(|c| c.arm_b.strip_suffix(crate::ADJUDICATED_SUFFIX) == Some(c.arm_a.as_str()))
        .map(|c| AdjudicationRow {
            config_id: &c.config_id,
            critic: &c.critic,
            arm: &c.arm_a,
            pairs: c.n_pairs,
            pass_before: c.pass_rate_a,
            pass_after: c.pass_rate_b,
            // `+ 0.0` turns a negated zero into zero, so no bound reads "-0.0".
            diff: (c.pass_rate_b - c.pass_rate_a, c.diff_hi.map(|hi| -hi + 0.0), c.diff_lo.map(|lo| -lo + 0.0)),
            lost: c.a_only,
            won: c.b_only,
            p_value: c.p_value,
            mean_final_before: mean_final(&c.config_id, &c.critic, &c.arm_a),
            mean_final_after: mean_final(&c.config_id, &c.critic, &c.arm_b),
        })
        .collect()
}

/// What the adjudication table says of itself, in report.md and report.html.
pub(crate) const ADJUDICATION_SENTENCE: &str = "Each adjudicated loop's final draft was rewritten once more by the \
     adjudicator and scored again. `ARM+adjudicate` is the same loops answered with the adjudicated draft, so the \
     comparison is paired loop by loop: *pass → fail* counts the passes adjudication lost, *fail → pass* the ones it \
     won.";

/// The `## Adjudication` section of report.md; empty when no arm adjudicated.
pub fn adjudication_section(report: &Report) -> String {
    let rows = adjudication_rows(report);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n## Adjudication\n\n");
    out.push_str(ADJUDICATION_SENTENCE);
    out.push_str("\n\n");
    out.push_str(
        "| config | critic | arm | pairs | pass before | pass after | diff [95% CI] | pass → fail | fail → pass | p | mean final score before → after |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    let score = |s: Option<f64>| s.map_or_else(|| "–".to_string(), |s| format!("{s:.2}"));
    for row in rows {
        let interval = match (row.diff.1, row.diff.2) {
            (Some(lo), Some(hi)) => format!("[{:+.1}, {:+.1}]", 100.0 * lo, 100.0 * hi),
            _ => format!("({})", crate::rows::IDENTICAL_BY_DESIGN),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.1}% | {:.1}% | {:+.1} pp {interval} | {} | {} | {} | {} → {} |",
            row.config_id,
            row.critic,
            row.arm,
            row.pairs,
            100.0 * row.pass_before,
            100.0 * row.pass_after,
            100.0 * row.diff.0,
            row.lost,
            row.won,
            row.p_value.map_or_else(|| "–".to_string(), crate::format::format_p),
            score(row.mean_final_before),
            score(row.mean_final_after),
        );
    }
    out
}

/// The whole `report.md`.
pub fn render_markdown(report: &Report) -> String {
    render_with_pairs(report, None)
}

/// [`render_markdown`] with the headline per task kind and, when given, the discordant pairs.
pub(crate) fn render_with_pairs(report: &Report, pairs: Option<&ListedPairs>) -> String {
    render_with_sections(report, pairs, None)
}

/// [`render_with_pairs`] with, when given, the pass rates corrected by gold labels.
pub(crate) fn render_with_sections(
    report: &Report,
    pairs: Option<&ListedPairs>,
    corrected: Option<&crate::gold::Corrected>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# critbench report: {}\n", report.summary.name.as_deref().unwrap_or("run"));
    if let Some(partial) = &report.summary.partial {
        let _ = writeln!(out, "> **{}**\n", partial.message);
    }
    if let Some(run_id) = &report.summary.run_id {
        let _ = writeln!(out, "Run `{run_id}`.\n");
    }
    // What the backend cannot measure, before any number.
    for notice in report.backend.notices(IGNORED_NOTE_SHARE) {
        let _ = writeln!(out, "> **Read this first:** {}\n", crate::format::as_note(&notice));
    }
    // A sequential run says what its tasks are before any number.
    if let Some(record) = &report.sequential {
        out.push_str(&crate::sequential::markdown_section(record, &report.summary.comparisons));
    }
    out.push_str(&crate::answer::markdown(report));
    out.push_str("## Pass rate, rounds and exits per arm, by the steering critic\n\n");
    out.push_str("A loop passes when its exit is `pass`. Rounds count critiques (round 0 is the first draft). ");
    out.push_str(&interval_sentence(report));
    out.push_str("\n\n");
    out.push_str(&summary_table(report));
    out.push_str("\n## Paired comparisons\n\n");
    out.push_str(&comparison_sentence(report));
    out.push_str("\n\n");
    if report.summary.comparisons.is_empty() {
        out.push_str("(Only one arm ran: nothing to compare.)\n");
    } else {
        out.push_str(&comparison_table(report));
    }
    out.push_str(&money_section(report));
    out.push_str(&equal_cost_section(report));
    out.push_str(&revisions_section(report));
    if let Some(evaluated) = &report.evaluators {
        out.push_str(&crate::evaluators::markdown_section(evaluated));
    }
    out.push_str(&adjudication_section(report));
    if let Some(corrected) = corrected {
        out.push_str(&crate::gold::render::markdown_section(corrected));
    }
    out.push_str(&crate::power::markdown_section(&report.power));
    kinds_section(&mut out, report);
    if let Some(pairs) = pairs {
        pairs_section(&mut out, pairs);
    }
    if !report.summary.notes.is_empty() || report.summary.timing.is_some() {
        out.push_str("\n## Notes\n\n");
        for note in report.summary.notes.iter().chain(&report.summary.timing) {
            let _ = writeln!(out, "- {note}");
        }
    }
    out
}

/// The sentence above the table of revision sizes.
pub(crate) const REVISIONS_SENTENCE: &str = "How much each revision changed its draft: the edit share is the part of the \
     longer of the two drafts outside the text they share at both ends (0 for an unchanged draft, 1 for a rewrite; \
     `edit_share` in trajectories.parquet). A near-empty revision changed less than 2% of it: a writer that returns its \
     draft as it was revises in name only.";

/// The table of revision sizes, a row per config × critic × arm that revised: config, critic,
/// arm, revisions, mean edit share, near-empty revisions.
pub(crate) fn revision_rows(report: &Report) -> Vec<[String; 6]> {
    // In the summary's order, whatever order the trajectories' rows came in.
    let place = |r: &&crate::queries::revision_sizes::RevisionSize| {
        let at = report.summary.rows.iter().position(|s| {
            (s.config_id.as_str(), s.critic.as_str(), s.arm.as_str())
                == (r.config_id.as_str(), r.critic.as_str(), r.arm.as_str())
        });
        (at.unwrap_or(usize::MAX), r.config_id.clone(), r.critic.clone(), r.arm.as_str())
    };
    let mut sizes: Vec<&crate::queries::revision_sizes::RevisionSize> = report.backend.revision_sizes.iter().collect();
    sizes.sort_by_cached_key(place);
    sizes
        .into_iter()
        .map(|r| {
            [
                r.config_id.clone(),
                r.critic.clone(),
                r.arm.to_string(),
                r.revisions.to_string(),
                format!("{:.3}", r.mean_edit_share),
                format!("{} ({})", r.near_empty, percent(r.near_empty as f64 / r.revisions as f64)),
            ]
        })
        .collect()
}

/// The header of [`revision_rows`].
pub(crate) const REVISIONS_HEADER: [&str; 6] =
    ["config", "critic", "arm", "revisions", "mean edit share", "near-empty revisions"];

/// "How much revisions changed"; empty when no loop revised.
fn revisions_section(report: &Report) -> String {
    let intro = format!("## How much revisions changed\n\n{REVISIONS_SENTENCE}");
    crate::format::table_under(&intro, &REVISIONS_HEADER, "|---|---|---|---:|---:|---:|", &revision_rows(report))
}

/// "At equal cost": arms compared at the same mean spend per loop; empty when no comparison was
/// measured.
fn equal_cost_section(report: &Report) -> String {
    let readings = crate::judges::readings(report);
    let currency = report.summary.currency.as_deref();
    // Each pair at the cheaper arm's own spend, in the unit the reports prefer (money, tokens, rounds).
    let mut chosen: Vec<&crate::spend::CostComparisonRow> = Vec::new();
    for c in report.summary.spend.comparisons.iter().filter(|c| crate::spend::is_uncut(c)) {
        let same = |l: &&crate::spend::CostComparisonRow| {
            (&l.config_id, &l.critic, &l.arm_a, &l.arm_b) == (&c.config_id, &c.critic, &c.arm_a, &c.arm_b)
        };
        match chosen.iter().position(same) {
            Some(i) if crate::spend::preference(&c.unit) < crate::spend::preference(&chosen[i].unit) => chosen[i] = c,
            Some(_) => {}
            None => chosen.push(c),
        }
    }
    if chosen.is_empty() {
        return String::new();
    }
    let (heads, alignment) = judge_columns(&readings);
    let mut out = format!(
        "\n## At equal cost\n\n{}\n\n| config | critic | A − B | spend per loop (cap) |{heads}\n|---|---|---|---|{alignment}\n",
        crate::spend::SENTENCE
    );
    for row in chosen {
        let _ = write!(
            out,
            "| {} | {} | {} − {} | {} |",
            row.config_id,
            row.critic,
            row.arm_a,
            row.arm_b,
            crate::spend::spends_text(row, currency)
        );
        for reading in &readings {
            let same = reading.summary.spend.comparisons.iter().find(|c| {
                (&c.config_id, &c.critic, &c.arm_a, &c.arm_b, &c.unit, &c.matched_to)
                    == (&row.config_id, &row.critic, &row.arm_a, &row.arm_b, &row.unit, &row.matched_to)
            });
            out.push_str(&judged_cells(same.map(|c| (c.diff, c.diff_lo, c.diff_hi, c.p_value))));
        }
        out.push('\n');
    }
    out
}

/// A table's head cells for a difference and its p per judge, and their alignment row.
fn judge_columns(readings: &[crate::judges::Reading<'_>]) -> (String, String) {
    let heads: String =
        readings.iter().map(|r| format!(" {} (95% CI) | p |", crate::judges::column(r.judge))).collect();
    (heads, "---|---:|".repeat(readings.len()))
}

/// A difference as a judge's cells show it: (diff, lo, hi, p).
type JudgedDifference = (f64, Option<f64>, Option<f64>, Option<f64>);

/// One judge's cells of a difference: "+3.1 pp (+1.0 to +5.2) | 0.0030 |", or dashes where that
/// judge has no such comparison.
fn judged_cells(found: Option<JudgedDifference>) -> String {
    match found {
        Some((diff, lo, hi, p)) => {
            let p = p.map_or_else(|| "–".to_string(), crate::format::format_p);
            format!(" {} | {p} |", crate::format::difference_cell(diff, lo, hi))
        }
        None => " – | – |".to_string(),
    }
}

/// The sentence above the money tables.
pub(crate) const MONEY_SENTENCE: &str = "What the loops' model calls cost (`cost` in outcomes.parquet: each round's \
     writer and judge tokens at their models' prices). Cost per pass is everything an arm's loops cost over the loops \
     that passed, failed attempts included; the paired rows compare the cost of a passed loop of each arm on the \
     units where both passed.";

/// "What a pass costs": per config × critic × arm, money per loop and per pass; per paired
/// comparison, the cost of a passed loop of each side. Empty when the run has no prices.
pub fn money_section(report: &Report) -> String {
    if !report.summary.rows.iter().any(|r| r.cost_per_loop.is_some()) {
        return String::new();
    }
    let currency = report.summary.currency.as_deref();
    let cell = |value: Option<f64>| value.map_or_else(|| "–".to_string(), |v| crate::format::money(v, currency));
    let mut out = String::from("\n## What a pass costs\n\n");
    out.push_str(MONEY_SENTENCE);
    out.push_str("\n\n| config | critic | arm | n | pass rate | cost per loop | cost per pass | cost in all |\n");
    out.push_str("|---|---|---|---:|---:|---:|---:|---:|\n");
    for row in &report.summary.rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            row.config_id,
            row.critic,
            row.arm,
            row.n,
            percent(row.pass_rate),
            cell(row.cost_per_loop),
            cell(row.cost_per_pass),
            cell(row.cost_total),
        );
    }
    let paired: Vec<&ComparisonRow> =
        report.summary.comparisons.iter().filter(|c| c.diff_mean_cost_passed.is_some()).collect();
    if !paired.is_empty() {
        out.push_str("\n| config | critic | A vs B | both passed | cost of a pass A | cost of a pass B | A − B |\n");
        out.push_str("|---|---|---|---:|---:|---:|---:|\n");
        for row in paired {
            let _ = writeln!(
                out,
                "| {} | {} | {} vs {} | {} | {} | {} | {} |",
                row.config_id,
                row.critic,
                row.arm_a,
                row.arm_b,
                row.both_passed,
                cell(row.mean_cost_passed_a),
                cell(row.mean_cost_passed_b),
                row.diff_mean_cost_passed.map_or_else(
                    || "–".to_string(),
                    |d| {
                        let sign = if d >= 0.0 { "+" } else { "−" };
                        format!("{sign}{}", crate::format::money(d.abs(), currency))
                    }
                ),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KindReport;
    use crate::rows::SummaryRow;
    use crate::show::{DiscordantPair, PairGroup};

    #[test]
    fn the_legend_reads_config_ids_as_the_policy_writes_them() {
        use critbench_core::{FinalDraft, Policy};
        let legend = glance_legend(std::path::Path::new("reports/demo"));
        // The example is the default policy's id, and every part of the fullest id is explained.
        let example = Policy::default();
        assert!(legend.starts_with(&format!("Config ids name the policy: {} is", example.config_id())), "{legend}");
        for (part, meaning) in [
            ("p8", format!("pass_score {}", example.pass_score)),
            ("r3", format!("max_revisions {}", example.max_revisions)),
            ("stall", "the stall rule on".to_string()),
            ("e0", format!("plateau_eps {}", example.plateau_eps)),
        ] {
            assert!(example.config_id().split('-').any(|p| p == part), "{part} is not a part of the example");
            assert!(legend.contains(&meaning), "the legend does not say {part} is {meaning}: {legend}");
        }
        let fullest = Policy {
            pass_score: 7.5,
            max_revisions: 5,
            stall: false,
            plateau_eps: 0.1,
            dim_target: Some(8.0),
            final_draft: FinalDraft::Last,
        };
        assert_eq!(fullest.config_id(), "p7.5-r5-nostall-e0.1-d8-last");
        for said in ["(nostall: off)", "-dN suffix is dim_target N", "-last returns the last draft"] {
            assert!(legend.contains(said), "{said}: {legend}");
        }
        assert!(legend.contains("reports/demo/report.html"), "{legend}");
        assert!(GLANCE_HEADER.starts_with("Pass rates per arm"));
    }

    #[test]
    fn the_headline_compares_arms_that_ran_not_an_adjudicated_twin() {
        let pair = |a: &str, b: &str| ComparisonRow {
            config_id: "c".into(),
            critic: "r".into(),
            arm_a: a.into(),
            arm_b: b.into(),
            ..ComparisonRow::default()
        };
        let comparisons = [
            pair("feedback", "feedback+adjudicate"),
            pair("feedback", "no-feedback"),
            pair("feedback+adjudicate", "no-feedback+adjudicate"),
        ];
        let chosen = headline_comparison(&comparisons, "c", "r").unwrap();
        assert_eq!((chosen.arm_a.as_str(), chosen.arm_b.as_str()), ("feedback", "no-feedback"));
        let summary = crate::Summary { comparisons: comparisons.to_vec(), ..Default::default() };
        let report = Report { summary, ..Report::default() };
        assert_eq!(crate::html::grid::compared_pair(&report), Some(("feedback", "no-feedback")));
        // Only twins: no headline pair.
        assert!(headline_comparison(&comparisons[..1], "c", "r").is_none());
    }

    fn row(arm: &str, passed: u64) -> SummaryRow {
        SummaryRow {
            config_id: "p8".into(),
            critic: "rubric".into(),
            arm: arm.into(),
            n: 10,
            passed,
            pass_rate: passed as f64 / 10.0,
            n_tasks: 10,
            ..SummaryRow::default()
        }
    }

    #[test]
    fn the_headline_per_kind_and_the_discordant_pairs_are_sections_of_report_md() {
        let comparison = ComparisonRow {
            config_id: "p8".into(),
            critic: "rubric".into(),
            arm_a: "feedback".into(),
            arm_b: "no-feedback".into(),
            diff: 0.3,
            diff_lo: Some(0.1),
            diff_hi: Some(0.5),
            p_value: Some(0.03125),
            test: "exact McNemar".into(),
            ..ComparisonRow::default()
        };
        let summary = crate::Summary {
            rows: vec![row("feedback", 8), row("no-feedback", 5)],
            comparisons: vec![comparison.clone()],
            by_kind: vec![
                KindReport {
                    kind: Some("paper".into()),
                    summary: vec![row("feedback", 8), row("no-feedback", 5)],
                    comparisons: vec![comparison],
                },
                KindReport { kind: None, summary: vec![row("feedback", 1)], comparisons: Vec::new() },
            ],
            ..Default::default()
        };
        let report = Report { summary, ..Report::default() };
        let pairs = ListedPairs {
            arm_a: "feedback".into(),
            arm_b: "no-feedback".into(),
            groups: vec![PairGroup {
                config: "p8".into(),
                critic: "rubric".into(),
                units: 10,
                a_only: 1,
                b_only: 0,
                pairs: vec![DiscordantPair { task_id: "t1".into(), epoch: 0, a_passed: true }],
            }],
        };
        let markdown = render_with_pairs(&report, Some(&pairs));
        let kinds = &markdown[markdown.find("## By task kind").unwrap()..];
        assert_eq!(
            kinds,
            "## By task kind\n\n\
             The same headline over the tasks of each kind alone: each arm's pass rate, and the paired difference \
             with its 95% interval and test.\n\n\
             ### kind `paper` (10 tasks)\n\n\
             | config | critic | feedback | no-feedback | paired difference (95% CI) | p (test) |\n\
             |---|---|---:|---:|---|---:|\n\
             | p8 | rubric | 80.0% | 50.0% | feedback − no-feedback: +30.0 pp (+10.0 to +50.0) | 0.0312 (exact McNemar) |\n\n\
             ### tasks without a kind (10 tasks)\n\n\
             | config | critic | feedback | paired difference (95% CI) | p (test) |\n\
             |---|---|---:|---|---:|\n\
             | p8 | rubric | 10.0% | – | – |\n\n\
             ## Discordant pairs of feedback and no-feedback\n\n\
             1 of 10 task × epoch units had one arm pass and the other not: only feedback passed 1, only \
             no-feedback passed 0. `RUN` is this report's directory.\n\n\
             | config | critic | task | epoch | passed | open the loop that did not pass |\n\
             |---|---|---|---:|---|---|\n\
             | p8 | rubric | t1 | 0 | feedback | `critbench show RUN --task t1 --config p8 --critic rubric --epoch 0 --arm no-feedback` |\n"
        );
        // `render_markdown` is the same page without the pairs.
        assert!(!render_markdown(&report).contains("## Discordant pairs"));
    }
}
