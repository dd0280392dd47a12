//! Shared by the integration tests: the real datasets, a critic plugin called as a Rust library,
//! and the loop of docs/REFERENCE.md (The decision rule) driven by `critbench_core::decide`.
//!
//! Each test file links at most one plugin crate: every plugin exports the same C entry symbol,
//! so two in one binary would clash at link time. That is why nothing here names a plugin.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use critbench_abi::{CriticPlugin, Host};
use critbench_core::{Arm, Critique, Decision, ExitReason, Policy, Rng, ScoreRange, SeedKey, Task, decide};

pub const RANGE: ScoreRange = ScoreRange { min: 0.0, max: 10.0 };
pub const SEED: u64 = 7;

/// Every task of `datasets/<name>`.
pub fn dataset(name: &str) -> Vec<Task> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| serde_json::from_str(line).unwrap_or_else(|e| panic!("{name} line {}: {e}", n + 1)))
        .collect()
}

/// The critic made from `config`, or its refusal's text.
pub fn create<C: CriticPlugin>(config: &str) -> Result<C, String> {
    C::create(config, Host::none()).map_err(|e| e.to_string())
}

/// The validated critique of `draft`, as the host would have it.
pub fn critique<C: CriticPlugin>(critic: &C, task: &Task, draft: &str, round: u32) -> Critique {
    let request = serde_json::json!({"request_version": 1, "task": task, "draft": draft, "round": round}).to_string();
    let answer = critic.critique(&request).unwrap_or_else(|e| panic!("critic failed on task {}: {e}", task.id));
    Critique::parse(&answer, RANGE, None).unwrap_or_else(|e| panic!("invalid critique for {}: {e}", task.id))
}

pub fn rng(seed: u64, task: &Task, epoch: u32, round: u32, purpose: &str) -> Rng {
    Rng::from_key(&SeedKey { seed, task_id: &task.id, epoch, round, purpose })
}

/// How one loop ended.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub exit: ExitReason,
    pub scores: Vec<f64>,
    pub drafts: Vec<String>,
    pub critiques: Vec<Critique>,
}

/// Runs one arm of the loop on one task, seeded as the engine seeds it: round 0 from
/// (seed, task, epoch, 0, "generate"), the draft of round k from (seed, task, epoch, k, "revise").
pub fn run_loop<C: CriticPlugin>(task: &Task, arm: Arm, critic: &C, seed: u64, epoch: u32) -> Outcome {
    let policy = match arm {
        Arm::Single => Policy { max_revisions: 0, ..Policy::default() },
        _ => Policy::default(),
    };
    let mut draft = critbench_sim::generate(task, &mut rng(seed, task, epoch, 0, "generate"));
    let mut rounds = Vec::new();
    let mut outcome =
        Outcome { exit: ExitReason::Budget, scores: Vec::new(), drafts: Vec::new(), critiques: Vec::new() };
    loop {
        let round = rounds.len() as u32;
        let critique = critique(critic, task, &draft, round);
        rounds.push(critique.round_score(false));
        outcome.scores.push(critique.score);
        outcome.drafts.push(draft.clone());
        let decision = decide(&rounds, &policy, arm.drafting());
        if let Decision::Revise = decision {
            let shown = arm.shows_critique().then_some(&critique);
            draft = critbench_sim::revise(task, &draft, shown, &mut rng(seed, task, epoch, round + 1, "revise")).text;
        }
        outcome.critiques.push(critique);
        if let Decision::Stop(exit) = decision {
            outcome.exit = exit;
            return outcome;
        }
    }
}

/// Pass rate and exit counts of one arm over a set of tasks.
#[derive(Debug, Default)]
pub struct ArmSummary {
    pub loops: usize,
    pub exits: BTreeMap<&'static str, usize>,
    pub rounds: usize,
}

impl ArmSummary {
    pub fn add(&mut self, outcome: &Outcome) {
        self.loops += 1;
        self.rounds += outcome.scores.len();
        *self.exits.entry(outcome.exit.as_str()).or_default() += 1;
    }

    pub fn count(&self, exit: &str) -> usize {
        self.exits.get(exit).copied().unwrap_or(0)
    }

    pub fn pass_rate(&self) -> f64 {
        self.count("pass") as f64 / self.loops.max(1) as f64
    }
}

/// Runs every arm on every task (one epoch), prints the table and checks the demo's property:
/// feedback passes clearly more than no-feedback, which passes at least as many as single.
pub fn measure_and_check<C: CriticPlugin>(tasks: &[Task], critic: &C, kind: &str) {
    assert!(tasks.len() >= 200, "{kind}: only {} tasks", tasks.len());
    let mut summaries: [ArmSummary; 3] = Default::default();
    for task in tasks {
        for (arm, summary) in Arm::DEFAULT.into_iter().zip(summaries.iter_mut()) {
            summary.add(&run_loop(task, arm, critic, SEED, 0));
        }
    }
    for (arm, summary) in Arm::DEFAULT.into_iter().zip(&summaries) {
        eprintln!(
            "{kind:5} {:11} pass {:5.1}%  exits: pass {:3} stall {:3} budget {:3}  mean rounds {:.2}",
            arm.as_str(),
            100.0 * summary.pass_rate(),
            summary.count("pass"),
            summary.count("stall"),
            summary.count("budget"),
            summary.rounds as f64 / summary.loops as f64,
        );
    }
    let [feedback, blind, single] = &summaries;
    let (feedback_rate, blind_rate, single_rate) = (feedback.pass_rate(), blind.pass_rate(), single.pass_rate());
    assert!(
        feedback_rate > blind_rate + 0.15,
        "{kind}: feedback {feedback_rate:.3} is not clearly above no-feedback {blind_rate:.3}"
    );
    assert!(blind_rate >= single_rate, "{kind}: no-feedback {blind_rate:.3} is below single {single_rate:.3}");
    // Not a walkover: most first drafts fail and feedback does not fix everything.
    assert!(single_rate < 0.35, "{kind}: single passes {single_rate:.3}");
    assert!(feedback_rate < 0.95, "{kind}: feedback passes {feedback_rate:.3}");
    for exit in ["pass", "stall", "budget"] {
        let seen = feedback.count(exit) + blind.count(exit);
        assert!(seen > 0, "{kind}: no loop ended with {exit}");
    }
}
