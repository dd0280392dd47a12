//! Shared by the integration tests: the real datasets, the real critics called as Rust
//! libraries, and the loop of SPEC §5 driven by `critbench_core::decide`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use critbench_abi::{CriticPlugin, Host};
use critbench_core::{Arm, Critique, Decision, ExitReason, Policy, Rng, RoundScore, ScoreRange, SeedKey, Task, decide};
use critbench_evidence::EvidenceCritic;
use critbench_rubric::Rubric;

pub const RANGE: ScoreRange = ScoreRange { min: 0.0, max: 10.0 };

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

/// The critic the demo runs on a kind of task: `rubric` for papers, `evidence` for RAG.
pub enum Critic {
    Rubric(Rubric),
    Evidence(EvidenceCritic),
}

impl Critic {
    pub fn for_kind(kind: &str) -> Critic {
        match kind {
            "rag" => Critic::Evidence(EvidenceCritic::create("{}", Host::none()).unwrap()),
            _ => Critic::Rubric(Rubric::create("{}", Host::none()).unwrap()),
        }
    }

    /// The validated critique of `draft`, as the host would have it.
    pub fn critique(&self, task: &Task, draft: &str, round: u32) -> Critique {
        let request =
            serde_json::json!({"request_version": 1, "task": task, "draft": draft, "round": round}).to_string();
        let answer = match self {
            Critic::Rubric(critic) => critic.critique(&request),
            Critic::Evidence(critic) => critic.critique(&request),
        }
        .unwrap_or_else(|e| panic!("critic failed on task {}: {e}", task.id));
        Critique::parse(&answer, RANGE, None).unwrap_or_else(|e| panic!("invalid critique for {}: {e}", task.id))
    }
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
}

/// Runs one arm of the loop on one task, seeded as the engine seeds it: round 0 from
/// (seed, task, epoch, 0, "generate"), the draft of round k from (seed, task, epoch, k, "revise").
pub fn run_loop(task: &Task, arm: Arm, critic: &Critic, seed: u64, epoch: u32) -> Outcome {
    let policy = match arm {
        Arm::Single => Policy { max_revisions: 0, ..Policy::default() },
        _ => Policy::default(),
    };
    let mut draft = critbench_sim::generate(task, &mut rng(seed, task, epoch, 0, "generate"));
    let mut rounds = Vec::new();
    let mut outcome = Outcome { exit: ExitReason::Budget, scores: Vec::new(), drafts: Vec::new() };
    loop {
        let round = rounds.len() as u32;
        let critique = critic.critique(task, &draft, round);
        rounds.push(RoundScore {
            score: critique.score,
            fatal: !critique.fatal_issues.is_empty(),
            failed: false,
            min_dimension: critique.min_dimension(),
        });
        outcome.scores.push(critique.score);
        outcome.drafts.push(draft.clone());
        match decide(&rounds, &policy) {
            Decision::Stop(exit) => {
                outcome.exit = exit;
                return outcome;
            }
            Decision::Revise => {
                let shown = arm.shows_critique().then_some(&critique);
                draft = critbench_sim::revise(task, &draft, shown, &mut rng(seed, task, epoch, round + 1, "revise"));
            }
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
