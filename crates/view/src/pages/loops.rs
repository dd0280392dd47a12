//! `/loops`: the run's loops filtered by arm, config, critic, exit, a judge's verdict and the
//! interesting sets, paged, with how many loops each choice leaves.

use std::fmt::Write as _;

use critbench_core::{Arm, ExitReason};

use crate::html::{escape, link, task_path};
use crate::index::{
    BROKEN, CRITIC_ERROR, CRITIC_PASSED, FIXED, Loop, LoopIndex, NEAR_EMPTY_REVISION, Verdict, WRITER_ERROR,
};

/// Loops on a page.
pub const PAGE: usize = 50;

/// The judge `critic`: the steering critic, as the report's `judge` column names it.
pub const CRITIC: &str = "critic";

/// The interesting sets a list can be narrowed to.
pub const SETS: [(&str, &str); 5] = [
    ("critic-passed-evaluator-failed", "critic passed, an evaluator failed"),
    ("fixed", "fixed by a revision (an evaluator's fail → pass)"),
    ("broken", "broken by a revision (an evaluator's pass → fail)"),
    ("near-empty", "a near-empty revision"),
    ("errors", "writer or critic errors"),
];

/// A list's query, as its URL gives it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Query {
    /// `arm`.
    pub arm: String,
    /// `config`.
    pub config: String,
    /// `critic`: the steering critic's name.
    pub critic: String,
    /// `exit`: an exit reason, or `none` for a censored loop.
    pub exit: String,
    /// `judge`: `critic` or a held-out evaluator's name.
    pub judge: String,
    /// `verdict`: `pass`, `fail` or `judged` (either), by `judge` (the critic when none is named).
    pub verdict: String,
    /// `set`: one of [`SETS`].
    pub set: String,
    /// `task`: loops whose task id holds this text.
    pub task: String,
    /// `page`, from 1.
    pub page: usize,
}

impl Query {
    /// The query of a URL's `key=value&…`.
    pub fn parse(query: &str) -> Query {
        let mut parsed = Query { page: 1, ..Query::default() };
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            let value = value.trim().to_string();
            match key.as_ref() {
                "arm" => parsed.arm = value,
                "config" => parsed.config = value,
                "critic" => parsed.critic = value,
                "exit" => parsed.exit = value,
                "judge" => parsed.judge = value,
                "verdict" => parsed.verdict = value,
                "set" => parsed.set = value,
                "task" => parsed.task = value,
                "page" => parsed.page = value.parse().unwrap_or(1).max(1),
                _ => {}
            }
        }
        parsed
    }

    fn pairs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("arm", self.arm.clone()),
            ("config", self.config.clone()),
            ("critic", self.critic.clone()),
            ("exit", self.exit.clone()),
            ("judge", self.judge.clone()),
            ("verdict", self.verdict.clone()),
            ("set", self.set.clone()),
            ("task", self.task.clone()),
        ]
    }

    /// This query's link with `key` set to `value` (empty: removed), from its first page.
    pub fn with(&self, key: &str, value: &str) -> String {
        let mut pairs = self.pairs();
        for pair in &mut pairs {
            if pair.0 == key {
                pair.1 = value.to_string();
            }
        }
        let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        link("/loops", &borrowed)
    }

    fn page_link(&self, page: usize) -> String {
        let page = page.to_string();
        let mut pairs = self.pairs();
        pairs.push(("page", page));
        let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        link("/loops", &borrowed)
    }
}

/// Which loops a query keeps, its names resolved against the index.
struct Filter {
    arm: Option<u8>,
    config: Option<u16>,
    critic: Option<u16>,
    exit: Option<u8>,
    /// `None`: the critic; `Some(i)`: evaluator `i`.
    judge: Option<usize>,
    verdict: Option<VerdictWanted>,
    set: Option<usize>,
    task: String,
}

#[derive(Clone, Copy, PartialEq)]
enum VerdictWanted {
    Pass,
    Fail,
    Judged,
}

/// A query value the run has no such thing for: the key, the value and what the run has.
#[derive(Debug, PartialEq)]
pub struct Unknown {
    /// The query key.
    pub key: &'static str,
    /// Its value.
    pub value: String,
    /// The values the run has.
    pub valid: Vec<String>,
}

fn position<T: AsRef<str>>(
    key: &'static str,
    value: &str,
    names: impl Iterator<Item = T> + Clone,
) -> Result<Option<usize>, Unknown> {
    if value.is_empty() {
        return Ok(None);
    }
    match names.clone().position(|n| n.as_ref() == value) {
        Some(i) => Ok(Some(i)),
        None => Err(Unknown { key, value: value.to_string(), valid: names.map(|n| n.as_ref().to_string()).collect() }),
    }
}

impl Filter {
    fn of(query: &Query, index: &LoopIndex) -> Result<Filter, Unknown> {
        let arm = position("arm", &query.arm, Arm::ALL.iter().map(|a| a.as_str()))?.map(|i| i as u8);
        let config = position("config", &query.config, index.configs.iter())?.map(|i| i as u16);
        let critic = position("critic", &query.critic, index.critics.iter())?.map(|i| i as u16);
        let exit = match query.exit.as_str() {
            "none" => Some(u8::MAX),
            exit => position("exit", exit, ExitReason::ALL.iter().map(|e| e.as_str()))?.map(|i| i as u8),
        };
        let judge = match query.judge.as_str() {
            "" | CRITIC => None,
            judge => position("judge", judge, index.evaluators.iter())?,
        };
        let verdict = match query.verdict.as_str() {
            "" => None,
            "pass" => Some(VerdictWanted::Pass),
            "fail" => Some(VerdictWanted::Fail),
            "judged" => Some(VerdictWanted::Judged),
            other => {
                return Err(Unknown {
                    key: "verdict",
                    value: other.to_string(),
                    valid: vec!["pass".into(), "fail".into(), "judged".into()],
                });
            }
        };
        let set = position("set", &query.set, SETS.iter().map(|(name, _)| *name))?;
        Ok(Filter { arm, config, critic, exit, judge, verdict, set, task: query.task.clone() })
    }

    fn keeps_but_set(&self, l: &Loop, index: &LoopIndex) -> bool {
        self.arm.is_none_or(|a| a == l.arm)
            && self.config.is_none_or(|c| c == l.config)
            && self.critic.is_none_or(|c| c == l.critic)
            && self.exit.is_none_or(|e| e == l.exit)
            && self.verdict.is_none_or(|wanted| {
                let verdict = match self.judge {
                    None if l.has(CRITIC_PASSED) => Verdict::Pass,
                    None => Verdict::Fail,
                    Some(i) => l.verdict(i),
                };
                match wanted {
                    VerdictWanted::Pass => verdict == Verdict::Pass,
                    VerdictWanted::Fail => verdict == Verdict::Fail,
                    VerdictWanted::Judged => matches!(verdict, Verdict::Pass | Verdict::Fail),
                }
            })
            && (self.task.is_empty() || index.tasks[l.task as usize].contains(&self.task))
    }
}

/// Whether the set `name` is read off held-out evaluators' verdicts (a run without any has none).
pub fn needs_evaluators(name: &str) -> bool {
    matches!(name, "critic-passed-evaluator-failed" | "fixed" | "broken")
}

/// Whether loop `l` is in set `SETS[set]`.
pub fn in_set(set: usize, l: &Loop, index: &LoopIndex) -> bool {
    match SETS[set].0 {
        "critic-passed-evaluator-failed" => {
            l.has(CRITIC_PASSED) && (0..index.evaluators.len()).any(|i| l.verdict(i) == Verdict::Fail)
        }
        "fixed" => l.has(FIXED),
        "broken" => l.has(BROKEN),
        "near-empty" => l.has(NEAR_EMPTY_REVISION),
        "errors" => l.flags & (CRITIC_ERROR | WRITER_ERROR) != 0,
        _ => false,
    }
}

/// What a query finds: how many loops, the page's loops, and how many each set and each arm
/// would leave under the query's other choices.
pub struct Found<'a> {
    /// Loops the query keeps.
    pub total: usize,
    /// The loops of its page.
    pub page: Vec<&'a Loop>,
    /// Per set of [`SETS`]: loops of the query's other choices in it.
    pub sets: Vec<usize>,
}

/// Runs `query` over `index`.
pub fn find<'a>(query: &Query, index: &'a LoopIndex) -> Result<Found<'a>, Unknown> {
    let filter = Filter::of(query, index)?;
    let skip = (query.page - 1) * PAGE;
    let mut found = Found { total: 0, page: Vec::with_capacity(PAGE), sets: vec![0; SETS.len()] };
    for l in &index.loops {
        if !filter.keeps_but_set(l, index) {
            continue;
        }
        for (set, count) in found.sets.iter_mut().enumerate() {
            if in_set(set, l, index) {
                *count += 1;
            }
        }
        if filter.set.is_some_and(|set| !in_set(set, l, index)) {
            continue;
        }
        if found.total >= skip && found.page.len() < PAGE {
            found.page.push(l);
        }
        found.total += 1;
    }
    Ok(found)
}

fn select(out: &mut String, name: &str, label: &str, chosen: &str, options: &[(String, String)]) {
    let _ = write!(out, "<label>{label}<select name=\"{name}\"><option value=\"\">any</option>");
    for (value, text) in options {
        let selected = if value == chosen { " selected" } else { "" };
        let _ = write!(out, "<option value=\"{}\"{selected}>{}</option>", escape(value), escape(text));
    }
    out.push_str("</select></label>");
}

fn same(names: &[String]) -> Vec<(String, String)> {
    names.iter().map(|n| (n.clone(), n.clone())).collect()
}

/// The page's body.
pub fn render(query: &Query, index: &LoopIndex) -> Result<String, Unknown> {
    let found = find(query, index)?;
    let mut out = String::new();
    let _ = writeln!(out, "<h1>Loops</h1>");
    out.push_str("<form class=\"filters\" method=\"get\" action=\"/loops\">");
    let arms: Vec<String> = {
        let mut arms: Vec<String> = Vec::new();
        for l in &index.loops {
            let arm = l.arm().as_str().to_string();
            if !arms.contains(&arm) {
                arms.push(arm);
            }
            if arms.len() == Arm::ALL.len() {
                break;
            }
        }
        arms
    };
    select(&mut out, "arm", "arm", &query.arm, &same(&arms));
    select(&mut out, "config", "config", &query.config, &same(&index.configs));
    select(&mut out, "critic", "critic", &query.critic, &same(&index.critics));
    let mut exits: Vec<(String, String)> =
        ExitReason::ALL.iter().map(|e| (e.as_str().to_string(), e.as_str().to_string())).collect();
    exits.push(("none".into(), "none (censored)".into()));
    select(&mut out, "exit", "exit", &query.exit, &exits);
    let mut judges = vec![(CRITIC.to_string(), "the steering critic".to_string())];
    judges.extend(same(&index.evaluators));
    select(&mut out, "judge", "judge", &query.judge, &judges);
    let verdicts: Vec<(String, String)> =
        [("pass", "passed"), ("fail", "failed"), ("judged", "judged")].map(|(v, t)| (v.into(), t.into())).into();
    select(&mut out, "verdict", "verdict", &query.verdict, &verdicts);
    let sets: Vec<(String, String)> = SETS.iter().map(|(v, t)| (v.to_string(), t.to_string())).collect();
    select(&mut out, "set", "set", &query.set, &sets);
    let _ = writeln!(
        out,
        "<label>task id holds<input name=\"task\" value=\"{}\" size=\"12\"></label><button>filter</button> <a \
         href=\"/loops\">clear</a></form>",
        escape(&query.task)
    );
    out.push_str("<p class=\"sets\">");
    for ((name, text), count) in SETS.iter().zip(&found.sets) {
        if needs_evaluators(name) && index.evaluators.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "<a href=\"{}\" data-set=\"{name}\">{} <span class=\"count\">{count}</span></a>",
            escape(&query.with("set", name)),
            escape(text)
        );
    }
    out.push_str("</p>\n");
    let first = (query.page - 1) * PAGE;
    let _ = writeln!(
        out,
        "<p id=\"count\"><strong data-total=\"{total}\">{total}</strong> of {} loops{}</p>",
        index.loops.len(),
        if found.total > 0 {
            format!(", {} to {} below", (first + 1).min(found.total), (first + found.page.len()).min(found.total))
        } else {
            String::new()
        },
        total = found.total
    );
    out.push_str(
        "<table id=\"table-loops\"><thead><tr><th>task</th><th>config</th><th>critic</th><th>arm</th><th \
         class=\"num\">epoch</th><th class=\"num\">rounds</th><th>exit</th><th>by the critic</th>",
    );
    for evaluator in &index.evaluators {
        let _ = write!(out, "<th>by {}</th>", escape(evaluator));
    }
    out.push_str("<th>sets</th></tr></thead><tbody>\n");
    for l in &found.page {
        let task = &index.tasks[l.task as usize];
        let config = &index.configs[usize::from(l.config)];
        let critic = &index.critics[usize::from(l.critic)];
        let arm = l.arm().as_str();
        let anchor = crate::pages::task::anchor(config, critic, arm, l.epoch);
        let _ = write!(
            out,
            "<tr><td><a href=\"{}#{}\">{}</a></td><td>{}</td><td>{}</td><td>{arm}</td><td class=\"num\">{}</td><td \
             class=\"num\">{}</td><td>{}</td>{}",
            escape(&task_path(task)),
            escape(&anchor),
            escape(task),
            escape(config),
            escape(critic),
            l.epoch,
            l.rounds,
            l.exit().map_or("none", ExitReason::as_str),
            verdict_cell(if l.has(CRITIC_PASSED) { Verdict::Pass } else { Verdict::Fail }),
        );
        for i in 0..index.evaluators.len() {
            out.push_str(&verdict_cell(l.verdict(i)));
        }
        let sets: Vec<&str> = (0..SETS.len()).filter(|set| in_set(*set, l, index)).map(|set| SETS[set].0).collect();
        let _ = writeln!(out, "<td>{}</td></tr>", sets.join(" "));
    }
    out.push_str("</tbody></table>\n<p class=\"pager\">");
    if query.page > 1 {
        let _ = write!(out, "<a href=\"{}\" rel=\"prev\">← previous</a>", escape(&query.page_link(query.page - 1)));
    }
    let pages = found.total.div_ceil(PAGE).max(1);
    let _ = write!(out, "page {} of {pages}", query.page);
    if query.page < pages {
        let _ = write!(out, " <a href=\"{}\" rel=\"next\">next →</a>", escape(&query.page_link(query.page + 1)));
    }
    out.push_str("</p>\n");
    Ok(out)
}

fn verdict_cell(verdict: Verdict) -> String {
    match verdict {
        Verdict::None => "<td class=\"muted\">–</td>".into(),
        v => format!("<td class=\"{0}\">{0}</td>", v.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four loops of two tasks: feedback and no-feedback of each, one evaluator.
    fn index() -> LoopIndex {
        let entry = |task: u32, arm: Arm, flags: u16, verdict: Verdict| Loop {
            task,
            epoch: 0,
            config: 0,
            critic: 0,
            arm: Arm::ALL.iter().position(|a| *a == arm).unwrap() as u8,
            exit: 0,
            rounds: 2,
            flags,
            verdicts: verdict as u32,
        };
        LoopIndex {
            configs: vec!["p8".into()],
            critics: vec!["rubric".into()],
            tasks: vec!["t-1".into(), "t-2".into()],
            evaluators: vec!["truth".into()],
            loops: vec![
                entry(0, Arm::Feedback, CRITIC_PASSED | FIXED, Verdict::Fail),
                entry(0, Arm::NoFeedback, 0, Verdict::Fail),
                entry(1, Arm::Feedback, CRITIC_PASSED | NEAR_EMPTY_REVISION, Verdict::Pass),
                entry(1, Arm::NoFeedback, WRITER_ERROR, Verdict::Error),
            ],
        }
    }

    fn tasks(query: &str) -> Vec<(u32, &'static str)> {
        let index = index();
        let found = find(&Query::parse(query), &index).unwrap();
        assert_eq!(found.total, found.page.len());
        found.page.iter().map(|l| (l.task, l.arm().as_str())).collect()
    }

    #[test]
    fn a_query_keeps_the_loops_of_every_choice_it_makes() {
        assert_eq!(tasks("").len(), 4);
        assert_eq!(tasks("arm=feedback"), [(0, "feedback"), (1, "feedback")]);
        assert_eq!(tasks("verdict=pass"), [(0, "feedback"), (1, "feedback")], "by the critic when no judge is named");
        assert_eq!(tasks("judge=truth&verdict=fail"), [(0, "feedback"), (0, "no-feedback")]);
        assert_eq!(tasks("judge=truth&verdict=judged").len(), 3, "an error is no verdict");
        assert_eq!(tasks("set=critic-passed-evaluator-failed"), [(0, "feedback")]);
        assert_eq!(tasks("set=fixed&arm=feedback"), [(0, "feedback")]);
        assert_eq!(tasks("set=near-empty"), [(1, "feedback")]);
        assert_eq!(tasks("set=errors"), [(1, "no-feedback")]);
        assert_eq!(tasks("task=2&arm=no-feedback"), [(1, "no-feedback")]);
        assert_eq!(tasks("exit=pass&page=1").len(), 4);
        assert!(tasks("exit=none").is_empty());
    }

    #[test]
    fn the_counts_of_each_set_are_under_the_other_choices_and_a_page_holds_fifty() {
        let index = index();
        let found = find(&Query::parse("arm=feedback&set=errors"), &index).unwrap();
        assert_eq!(found.total, 0);
        let counts: Vec<(&str, usize)> = SETS.iter().map(|(name, _)| *name).zip(found.sets).collect();
        assert_eq!(
            counts,
            [("critic-passed-evaluator-failed", 1), ("fixed", 1), ("broken", 0), ("near-empty", 1), ("errors", 0)]
        );
        let mut many = index;
        many.loops = (0..120).map(|i| Loop { task: i % 2, ..many.loops[0] }).collect();
        let pages: Vec<(usize, usize)> = (1..=4)
            .map(|page| {
                let found = find(&Query { page, ..Query::default() }, &many).unwrap();
                (found.total, found.page.len())
            })
            .collect();
        assert_eq!(pages, [(120, 50), (120, 50), (120, 20), (120, 0)]);
    }

    #[test]
    fn a_name_the_run_does_not_have_is_refused_with_the_names_it_has() {
        let index = index();
        let unknown = |query: &str| find(&Query::parse(query), &index).err().unwrap();
        assert_eq!(unknown("config=p9"), Unknown { key: "config", value: "p9".into(), valid: vec!["p8".into()] });
        assert_eq!(unknown("judge=other").valid, ["truth"]);
        assert_eq!(unknown("verdict=maybe").key, "verdict");
        assert_eq!(unknown("arm=feedbak").valid.len(), Arm::ALL.len());
        let link = Query::parse("arm=feedback&task=a%20b&page=3").with("set", "fixed");
        assert_eq!(link, "/loops?arm=feedback&set=fixed&task=a+b");
    }
}
