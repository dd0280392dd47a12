//! `critbench replay`: evaluates new policies on a finished run's recorded loops, without calling
//! any model or critic. Exact, because the author never sees the policy: a policy's outcome is
//! where it stops on the recording, and its best draft is the best of that prefix.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use critbench_core::{Arm, FinalDraft, Policy, PolicyGrid, RoundScore, ScoreRange};
use critbench_storage::evaluations::{EvaluationRow, EvaluationWriter, read_evaluations};
use critbench_storage::recorded::{RecordedLoop, for_each_recorded_loop};
use critbench_storage::tables::{OutcomeWriter, StorageError, TrajectoryWriter, read_outcome_metas};

pub use super::error::{NotARun, ReplayError};
use crate::EngineError;
use crate::commands::KeptAside;
use crate::experiment::limits;
use crate::run::emit::{LoopLabels, effective_policy, emit_loop, round_score, writer_ended};
use crate::run::plan::{ThresholdNames, threshold_warnings};
use critbench_storage::clock;
use critbench_storage::manifest::{Calls, ExperimentRecord, Manifest, PolicyRecord};
use critbench_storage::shards;

/// What a replay wrote.
#[derive(Debug)]
pub struct ReplaySummary {
    /// The new run's directory.
    pub out_dir: PathBuf,
    /// Loops replayed.
    pub loops: u64,
    /// Critiques in the outputs.
    pub critiques: u64,
    /// The new run's report.
    pub report: critbench_report::Report,
    /// Thresholds outside a recorded critic's score range (also in the new manifest).
    pub warnings: Vec<String>,
}

/// The values a replay's flags give for each key of the policy grid; `None` for a key the flags
/// leave out, which then keeps the run's own values ([`replay_grid`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayFlags {
    /// `--pass-score`.
    pub pass_score: Option<Vec<f64>>,
    /// `--max-revisions`.
    pub max_revisions: Option<Vec<u32>>,
    /// `--stall`.
    pub stall: Option<Vec<bool>>,
    /// `--plateau-eps`.
    pub plateau_eps: Option<Vec<f64>>,
    /// `--dim-target` (`None` in the list for no target).
    pub dim_target: Option<Vec<Option<f64>>>,
    /// `--final-draft`.
    pub final_draft: Option<Vec<FinalDraft>>,
}

/// The grid a replay of the run in `run_dir` evaluates: each key the flags give, and for every
/// other key the values the run's own configs had (its manifest's policies, in the order they
/// first appear), so that `--max-revisions 5` on a run made at `pass_score = [7, 9]` replays
/// `p7-r5` and `p9-r5`. A run without a manifest falls back to the built-in defaults. Values
/// outside what the run recorded are refused when the grid is replayed ([`replay_run`]).
pub fn replay_grid(run_dir: &Path, flags: &ReplayFlags) -> Result<PolicyGrid, ReplayError> {
    let manifest = Manifest::read(run_dir)?;
    let recorded = manifest.as_ref().map_or(&[][..], |m| &m.experiment.policies[..]);
    let defaults = Policy::default();
    // The distinct values of one key over the run's configs; the default when it recorded none.
    fn values<T: PartialEq + Clone>(recorded: impl Iterator<Item = Option<T>>, default: T) -> Vec<T> {
        let mut seen: Vec<T> = Vec::new();
        for value in recorded.flatten() {
            if !seen.contains(&value) {
                seen.push(value);
            }
        }
        if seen.is_empty() { vec![default] } else { seen }
    }
    let field = |p: &critbench_storage::manifest::PolicyRecord, key: &str| p.rest.get(key).cloned();
    Ok(PolicyGrid {
        pass_score: flags
            .pass_score
            .clone()
            .unwrap_or_else(|| values(recorded.iter().map(|p| Some(p.pass_score)), defaults.pass_score)),
        max_revisions: flags
            .max_revisions
            .clone()
            .unwrap_or_else(|| values(recorded.iter().map(|p| Some(p.max_revisions)), defaults.max_revisions)),
        stall: flags.stall.clone().unwrap_or_else(|| {
            values(recorded.iter().map(|p| field(p, "stall").and_then(|v| v.as_bool())), defaults.stall)
        }),
        plateau_eps: flags.plateau_eps.clone().unwrap_or_else(|| {
            values(recorded.iter().map(|p| field(p, "plateau_eps").and_then(|v| v.as_f64())), defaults.plateau_eps)
        }),
        dim_target: flags.dim_target.clone().unwrap_or_else(|| {
            // A recorded `null` is a value too: no dimension target.
            values(recorded.iter().map(|p| field(p, "dim_target").map(|v| v.as_f64())), defaults.dim_target)
        }),
        final_draft: flags.final_draft.clone().unwrap_or_else(|| {
            let parse = |v: serde_json::Value| match v.as_str() {
                Some("last") => Some(FinalDraft::Last),
                Some("best") => Some(FinalDraft::Best),
                _ => None,
            };
            values(recorded.iter().map(|p| field(p, "final").and_then(parse)), defaults.final_draft)
        }),
    })
}

/// The replay flags' names, for warnings.
const REPLAY_FLAGS: ThresholdNames = ThresholdNames { pass_score: "--pass-score", dim_target: "--dim-target" };

/// The policies of a replay grid, checked: every `plateau_eps` finite and ≥ 0, every score
/// finite, no config twice, the experiment file's bounds on revisions and configs. The messages
/// name the `critbench replay` flags.
pub fn replay_policies(grid: &PolicyGrid) -> Result<Vec<Policy>, ReplayError> {
    limits::check_revisions("--max-revisions", grid.max_revisions.iter().map(|&cap| u64::from(cap)))?;
    let lengths = [
        grid.pass_score.len(),
        grid.max_revisions.len(),
        grid.stall.len(),
        grid.plateau_eps.len(),
        grid.dim_target.len(),
        grid.final_draft.len(),
    ];
    limits::check_configs("the replay flags", &lengths)?;
    if let Some(&eps) = grid.plateau_eps.iter().find(|e| !(e.is_finite() && **e >= 0.0)) {
        return Err(ReplayError::PlateauEps(eps));
    }
    let targets = grid.dim_target.iter().flatten();
    if let Some(&value) = grid.pass_score.iter().chain(targets).find(|v| !v.is_finite()) {
        return Err(ReplayError::NotFinite(value));
    }
    grid.policies().map_err(ReplayError::Repeated)
}

/// What to run when `policy` would revise past the `rounds` a loop recorded under the configs of
/// `recorded`: a larger `max_revisions` when the loop used every revision the grid allowed, else
/// the policy's values the grid lacks (a loop is recorded until every config of its grid stopped,
/// so a threshold the grid holds is recorded for).
fn beyond_recording_fix(policy: &Policy, rounds: usize, recorded: &[PolicyRecord]) -> String {
    let Some(cap) = recorded.iter().map(|p| p.max_revisions).max() else {
        return "run the experiment with this policy in its [policy] grid to record it".into();
    };
    if rounds > cap as usize {
        return format!(
            "run the experiment with a larger max_revisions to record more (the run's configs go up to \
             max_revisions = {cap})"
        );
    }
    let held = |key: &str, value: serde_json::Value| recorded.iter().any(|p| p.rest.get(key) == Some(&value));
    let mut missing = Vec::new();
    if !recorded.iter().any(|p| p.pass_score == policy.pass_score) {
        missing.push(format!("pass_score = {}", policy.pass_score));
    }
    if !held("stall", policy.stall.into()) {
        missing.push(format!("stall = {}", policy.stall));
    }
    if !held("plateau_eps", policy.plateau_eps.into()) {
        missing.push(format!("plateau_eps = {}", policy.plateau_eps));
    }
    if !held("dim_target", policy.dim_target.into()) {
        missing.push(policy.dim_target.map_or("no dim_target".into(), |d| format!("dim_target = {d}")));
    }
    let values = if missing.is_empty() { "this policy".to_string() } else { missing.join(", ") };
    format!(
        "this loop stopped before the grid's max_revisions ({cap}) because every config of the run's grid had \
         stopped, so a larger max_revisions records no more: include {values} in the experiment's [policy] grid \
         and run it again (each loop is then recorded until this policy stops too)"
    )
}

/// Replays `policies` on the loops recorded in `run_dir` and writes a new run directory `out`
/// (claimed as [`crate::run_dir::claim`] does: never the source, another run unless `overwrite`,
/// or a user's folder).
pub fn replay_run(
    run_dir: &Path,
    policies: &[Policy],
    out: &Path,
    overwrite: bool,
) -> Result<ReplaySummary, ReplayError> {
    let started = Instant::now();
    let (started_iso, started_compact) = clock::utc_stamps(SystemTime::now());
    let not_a_run = |reason: NotARun| ReplayError::NotARun { dir: run_dir.to_path_buf(), reason };
    if let Some(message) = critbench_storage::manifest::unmerged(run_dir) {
        return Err(not_a_run(NotARun::Unmerged(message)));
    }
    // Every recorded round is read: the tables must be the ones the run wrote.
    critbench_report::check_tables(run_dir)?;
    let trajectories_files = shards::table_files(run_dir, shards::TRAJECTORIES);
    let outcomes_files = shards::table_files(run_dir, shards::OUTCOMES);
    for (table, files) in [(shards::TRAJECTORIES, &trajectories_files), (shards::OUTCOMES, &outcomes_files)] {
        if files.is_empty() {
            return Err(not_a_run(NotARun::Missing(shards::table_file(table))));
        }
    }
    let mut metas: HashMap<(String, String), String> = HashMap::new();
    for path in &outcomes_files {
        metas.extend(read_outcome_metas(path).map_err(|e| not_a_run(e.into()))?);
    }
    let manifest = Manifest::read(run_dir)?;
    let dependent: Vec<String> = manifest
        .iter()
        .flat_map(|m| m.plugins.iter())
        .filter(|p| p.policy_dependent)
        .map(|p| p.critic.clone())
        .collect();
    if !dependent.is_empty() {
        return Err(ReplayError::PolicyDependent { dir: run_dir.to_path_buf(), critics: dependent });
    }
    let name = manifest.as_ref().map_or_else(|| "run".to_string(), |m| m.experiment.name.clone());
    // The same rule as a run's: a threshold outside a critic's range is replayed, with a warning.
    let mut warnings: Vec<String> = manifest
        .iter()
        .flat_map(|m| m.plugins.iter())
        .flat_map(|p| {
            let range = ScoreRange { min: p.score_range[0], max: p.score_range[1] };
            threshold_warnings(&p.critic, range, policies, &REPLAY_FLAGS)
        })
        .collect();
    // Evaluators that judged every draft have a verdict on whatever a new policy returns: replayed.
    // The others judged only the recorded configs' answers.
    let (replayed_evaluators, left_out): (Vec<_>, Vec<_>) =
        manifest.iter().flat_map(|m| m.experiment.evaluators()).partition(|(_, all_rounds)| *all_rounds);
    let replayed_evaluators: Vec<serde_json::Value> = replayed_evaluators.into_iter().map(|(e, _)| e.clone()).collect();
    let left_out: Vec<&str> = left_out.iter().filter_map(|(e, _)| e.get("name")?.as_str()).collect();
    let evaluations_files = shards::table_files(run_dir, shards::EVALUATIONS);
    let judged = JudgedDrafts::read(&evaluations_files, &replayed_evaluators).map_err(|e| not_a_run(e.into()))?;
    if !evaluations_files.is_empty() && !left_out.is_empty() {
        warnings.push(format!(
            "the evaluations of {} are not replayed: they judged only the recorded configs' answers, and a new policy \
             may return a draft they never judged; run the experiment with the new grid, or give them `rounds = \"all\"`",
            left_out.join(", ")
        ));
    }

    // Every loop must reach each policy's stop inside what was recorded: a first pass over the
    // recording checks that before anything is written. Both passes stream loop by loop.
    let check = |recorded: &RecordedLoop| -> Result<(Arm, Vec<RoundScore>), ReplayError> {
        let arm = recorded.arm;
        if recorded.adjudicated {
            // The adjudicator is a model: a new policy's final draft may be one it never saw.
            return Err(ReplayError::Adjudicated { dir: run_dir.to_path_buf(), arm: recorded.arm });
        }
        let loop_scores: Vec<RoundScore> = recorded.rounds.iter().map(round_score).collect();
        for policy in policies {
            let policy_of_arm = effective_policy(policy, arm);
            if crate::run::emit::stop_of(&recorded.rounds, &loop_scores, &policy_of_arm, arm.drafting()).is_none() {
                let recorded_grid = manifest.as_ref().map_or(&[][..], |m| &m.experiment.policies[..]);
                return Err(ReplayError::BeyondRecording {
                    config_id: policy.config_id(),
                    task_id: recorded.task_id.clone(),
                    arm: recorded.arm,
                    critic: recorded.critic.clone(),
                    epoch: recorded.epoch,
                    rounds: recorded.rounds.len(),
                    fix: beyond_recording_fix(policy, recorded.rounds.len(), recorded_grid),
                });
            }
        }
        Ok((arm, loop_scores))
    };
    // The first error of a pass, kept aside: the reader's callback is handed only `KeptAside`.
    let mut failure: Option<ReplayError> = None;
    let read = trajectories_files.iter().try_for_each(|path| {
        for_each_recorded_loop(path, |recorded| match check(&recorded) {
            Ok(_) => Ok(()),
            Err(error) => {
                failure = Some(error);
                Err(KeptAside)
            }
        })
    });
    if let Some(error) = failure.take() {
        return Err(error);
    }
    read.map_err(|e| not_a_run(e.into()))?;

    let layout = crate::run_dir::Layout::new(out, None);
    let _lock = crate::run_dir::claim(&layout, crate::run_dir::Claim::Replay { source: run_dir, overwrite })?;
    let run_id = format!("{name}-replay-{started_compact}");
    // Written aside and renamed into place once whole.
    let mut tables =
        vec![out.join(shards::table_file(shards::TRAJECTORIES)), out.join(shards::table_file(shards::OUTCOMES))];
    if !judged.is_empty() {
        tables.push(out.join(shards::table_file(shards::EVALUATIONS)));
    }
    let (asides, paths) = critbench_storage::files::Asides::new(tables);
    let mut trajectories = TrajectoryWriter::create(&paths[0])?;
    let mut outcomes = OutcomeWriter::create(&paths[1])?;
    let mut evaluations = paths.get(2).map(|path| EvaluationWriter::create(path)).transpose()?;
    let config_ids: Vec<String> = policies.iter().map(Policy::config_id).collect();
    let (mut written_loops, mut critiques) = (0u64, 0u64);
    let mut meta_key = (String::new(), String::new());
    // A replayed config costs what its rounds cost when they were recorded, at the run's prices.
    let prices =
        crate::run::cost::RolePrices::recorded(manifest.as_ref().and_then(|m| m.experiment.rest.get("openai")));
    let mut each = |recorded: RecordedLoop| {
        let result = (|| -> Result<(), ReplayError> {
            let (arm, loop_scores) = check(&recorded)?;
            meta_key.0.clone_from(&recorded.critic);
            meta_key.1.clone_from(&recorded.task_id);
            let labels = LoopLabels {
                run_id: &run_id,
                critic: &recorded.critic,
                arm,
                task_id: &recorded.task_id,
                kind: recorded.kind.as_deref(),
                epoch: recorded.epoch,
                meta: metas.get(&meta_key).map(String::as_str),
                prices: &prices,
            };
            let loop_judged = judged.of(&recorded);
            for (policy, config_id) in policies.iter().zip(&config_ids) {
                let (passed, rounds, _) = emit_loop(
                    &labels,
                    &recorded.rounds,
                    &loop_scores,
                    &[],
                    policy,
                    config_id,
                    &mut trajectories,
                    &mut outcomes,
                )?
                .expect("every policy was checked to stop within the recording");
                if let (Some(writer), Some(verdicts)) = (evaluations.as_mut(), loop_judged) {
                    let policy = effective_policy(policy, arm);
                    let writer_ended = writer_ended(&recorded.rounds);
                    let answers = crate::run::evaluate::judged_answers(
                        &loop_scores,
                        &policy,
                        arm.drafting(),
                        true,
                        passed,
                        writer_ended,
                    );
                    for row in verdicts.rows(&answers, &run_id, config_id) {
                        writer.push(row)?;
                    }
                }
                written_loops += 1;
                critiques += rounds as u64;
            }
            Ok(())
        })();
        result.map_err(|error| {
            failure = Some(error);
            KeptAside
        })
    };
    let read = trajectories_files.iter().try_for_each(|path| for_each_recorded_loop(path, &mut each));
    if let Some(error) = failure.take() {
        return Err(error);
    }
    read.map_err(|e| not_a_run(e.into()))?;
    trajectories.close()?;
    outcomes.close()?;
    if let Some(writer) = evaluations {
        writer.close()?;
    }
    asides.commit().map_err(|source| EngineError::Io {
        context: format!("cannot write the tables in {}", out.display()),
        source,
    })?;

    let (finished_iso, _) = clock::utc_stamps(SystemTime::now());
    let recording = manifest.as_ref().map(|m| &m.experiment);
    // The recording's backend and seed: what the reports say of the backend, and the seed a
    // bootstrap that resamples draws from (with the data), are the run's; and the evaluators replayed.
    let rest: serde_json::Map<String, serde_json::Value> = recording
        .iter()
        .flat_map(|e| e.rest.iter().filter(|(key, _)| matches!(key.as_str(), "backend" | "seed")))
        .map(|(k, v)| (k.clone(), v.clone()))
        .chain((!judged.is_empty()).then(|| ("evaluators".to_string(), serde_json::Value::from(replayed_evaluators))))
        .collect();
    let manifest_out = Manifest {
        manifest_version: critbench_storage::manifest::MANIFEST_VERSION,
        schema_version: critbench_storage::SCHEMA_VERSION,
        critbench_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id: run_id.clone(),
        replayed_from: Some(run_dir.to_path_buf()),
        source_run_id: manifest.as_ref().map(|m| m.run_id.clone()),
        experiment: ExperimentRecord {
            name,
            policies: policies
                .iter()
                .map(|p| serde_json::from_value(crate::experiment::policy_json(p)).expect("a policy record"))
                .collect(),
            critics: recording.map(|e| e.critics.clone()).unwrap_or_default(),
            // Every recorded loop is replayed under every policy, so each task has the recording's
            // epochs × arms loops per config: the summary closes a task once they have arrived.
            epochs: recording.and_then(|e| e.epochs),
            arms: recording.map(|e| e.arms.clone()).unwrap_or_default(),
            adjudicate: Vec::new(),
            rest,
        },
        sweep: "replay".into(),
        calls: Calls { generator: 0, critic: 0, direct_equivalent: critiques, saved: critiques, ratio: 0.0 },
        started_at: started_iso,
        finished_at: finished_iso,
        wall_seconds: started.elapsed().as_secs_f64(),
        loops: written_loops,
        critiques,
        tables: crate::run_dir::layout::table_records(&layout)?,
        warnings: warnings.clone(),
        ..Manifest::default()
    };
    manifest_out.write(out).map_err(|source| EngineError::Io {
        context: format!("cannot write {}", out.join(critbench_storage::manifest::MANIFEST_FILE).display()),
        source,
    })?;
    let report = critbench_report::write_reports_trusted(out)?;
    Ok(ReplaySummary { out_dir: out.to_path_buf(), loops: written_loops, critiques, report, warnings })
}

/// The recorded verdicts of the evaluators that judged every draft, one row per loop, evaluator
/// and round: what a replay writes again under each new config.
#[derive(Default)]
struct JudgedDrafts {
    /// Per loop (critic, arm, task, epoch): each evaluator's row per round, the evaluators in the
    /// manifest's order.
    loops: HashMap<(String, Arm, String, u32), LoopVerdicts>,
}

/// One loop's recorded verdicts: per evaluator (in order), its rows by round.
struct LoopVerdicts(Vec<HashMap<u32, EvaluationRow>>);

impl JudgedDrafts {
    /// Reads `files`, keeping the rows of `evaluators` (the manifest's entries, every one with
    /// `all_rounds`), each draft once whatever config's row it came in.
    fn read(files: &[PathBuf], evaluators: &[serde_json::Value]) -> Result<JudgedDrafts, StorageError> {
        let names: Vec<&str> = evaluators.iter().filter_map(|e| e.get("name")?.as_str()).collect();
        let mut judged = JudgedDrafts::default();
        if names.is_empty() {
            return Ok(judged);
        }
        for path in files {
            for row in read_evaluations(path)? {
                let Some(position) = names.iter().position(|name| *name == row.evaluator) else { continue };
                let key = (row.critic.clone(), row.arm, row.task_id.clone(), row.epoch);
                let verdicts = judged
                    .loops
                    .entry(key)
                    .or_insert_with(|| LoopVerdicts(names.iter().map(|_| HashMap::new()).collect()));
                verdicts.0[position].entry(row.round).or_insert(row);
            }
        }
        Ok(judged)
    }

    fn is_empty(&self) -> bool {
        self.loops.is_empty()
    }

    /// The recorded verdicts of `recorded`'s drafts, when an evaluator judged them.
    fn of(&self, recorded: &RecordedLoop) -> Option<&LoopVerdicts> {
        self.loops.get(&(recorded.critic.clone(), recorded.arm, recorded.task_id.clone(), recorded.epoch))
    }
}

impl LoopVerdicts {
    /// The rows of this loop under `config_id`, whose judged `answers` are the config's (what
    /// `judged_answers` gives for every round): as a run writes them, each verdict the recorded
    /// one, beside the steering critic's under this config.
    fn rows(&self, answers: &[(&'static str, usize, bool)], run_id: &str, config_id: &str) -> Vec<EvaluationRow> {
        let mut rows = Vec::new();
        for by_round in &self.0 {
            for &(answer, round, steering_passed) in answers {
                let Some(recorded) = by_round.get(&(round as u32)) else { continue };
                rows.push(EvaluationRow {
                    run_id: run_id.to_string(),
                    config_id: config_id.to_string(),
                    answer: answer.to_string(),
                    steering_passed,
                    ..recorded.clone()
                });
            }
        }
        rows
    }
}
