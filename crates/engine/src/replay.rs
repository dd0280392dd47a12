//! `critbench replay`: evaluates new policies on a finished run's recorded loops, without calling
//! any model or critic. Exact, because the writer never sees the policy: a policy's outcome is
//! where it stops on the recording, and its best draft is the best of that prefix.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use critbench_core::{Arm, Policy, RoundScore};
use critbench_storage::recorded::{RecordedLoop, for_each_recorded_loop};
use critbench_storage::tables::{OutcomeWriter, TrajectoryWriter, read_outcome_metas};
use serde_json::json;

use crate::EngineError;
use crate::emit::{LoopLabels, effective_policy, emit_loop, round_score};
use critbench_storage::clock;

/// What a replay wrote.
#[derive(Debug)]
pub struct ReplaySummary {
    pub out_dir: PathBuf,
    pub loops: u64,
    pub critiques: u64,
    pub report: critbench_report::Report,
}

/// Replays `policies` on the loops recorded in `run_dir` and writes a new run directory `out`.
pub fn replay_run(run_dir: &Path, policies: &[Policy], out: &Path) -> Result<ReplaySummary, EngineError> {
    let started = Instant::now();
    let (started_iso, started_compact) = clock::utc_stamps(SystemTime::now());
    let not_a_run = |reason: String| {
        EngineError::Usage(format!(
            "{} is not a run directory that can be replayed: {reason}\n  hint: pass a directory written by `critbench run`",
            run_dir.display()
        ))
    };
    let trajectories_path = run_dir.join("trajectories.parquet");
    let outcomes_path = run_dir.join("outcomes.parquet");
    for path in [&trajectories_path, &outcomes_path] {
        if !path.is_file() {
            return Err(not_a_run(format!("{} is missing", path.file_name().unwrap().to_string_lossy())));
        }
    }
    let metas: HashMap<(String, String), String> =
        read_outcome_metas(&outcomes_path).map_err(|e| not_a_run(e.to_string()))?;
    let manifest: Option<serde_json::Value> =
        std::fs::read_to_string(run_dir.join("manifest.json")).ok().and_then(|text| serde_json::from_str(&text).ok());
    let dependent: Vec<&str> = manifest
        .as_ref()
        .and_then(|m| m.get("plugins"))
        .and_then(|p| p.as_array())
        .map(|plugins| {
            plugins
                .iter()
                .filter(|p| p.get("policy_dependent").and_then(|v| v.as_bool()) == Some(true))
                .filter_map(|p| p.get("critic").and_then(|v| v.as_str()))
                .collect()
        })
        .unwrap_or_default();
    if !dependent.is_empty() {
        return Err(EngineError::Usage(format!(
            "cannot replay {}: critic(s) {} say their critiques depend on the loop policy, so the recorded \
             rounds would not be what another policy sees; run the experiment again with the new policy",
            run_dir.display(),
            dependent.join(", ")
        )));
    }
    let name = manifest
        .as_ref()
        .and_then(|m| m.pointer("/experiment/name"))
        .and_then(|v| v.as_str())
        .unwrap_or("run")
        .to_string();

    // Every loop must reach each policy's stop inside what was recorded: a first pass over the
    // recording checks that before anything is written. Both passes stream loop by loop.
    let check = |recorded: &RecordedLoop| -> Result<(Arm, Vec<RoundScore>), EngineError> {
        let arm = Arm::parse(&recorded.arm)
            .ok_or_else(|| not_a_run(format!("unknown arm `{}` in trajectories.parquet", recorded.arm)))?;
        let loop_scores: Vec<RoundScore> = recorded.rounds.iter().map(round_score).collect();
        for policy in policies {
            if critbench_core::stop_point(&loop_scores, &effective_policy(policy, arm)).is_none() {
                let recorded_cap = manifest
                    .as_ref()
                    .and_then(|m| m.pointer("/experiment/policies"))
                    .and_then(|p| p.as_array())
                    .and_then(|p| p.iter().filter_map(|p| p.get("max_revisions")?.as_u64()).max())
                    .map(|cap| format!(" (the run's configs go up to max_revisions = {cap})"))
                    .unwrap_or_default();
                return Err(EngineError::Usage(format!(
                    "config {} goes beyond what the run recorded: task `{}` ({} × {} × epoch {}) was recorded \
                     for {} round(s) only, and this policy would still revise after the last of them. \
                     Replay evaluates policies that stop within the recording{recorded_cap}; run the \
                     experiment with a larger max_revisions to record more",
                    policy.config_id(),
                    recorded.task_id,
                    recorded.arm,
                    recorded.critic,
                    recorded.epoch,
                    recorded.rounds.len()
                )));
            }
        }
        Ok((arm, loop_scores))
    };
    // The first error of a pass, kept aside: the reader's callback speaks strings.
    let mut failure: Option<EngineError> = None;
    let read = for_each_recorded_loop(&trajectories_path, |recorded| match check(&recorded) {
        Ok(_) => Ok(()),
        Err(error) => {
            let message = error.to_string();
            failure = Some(error);
            Err(message)
        }
    });
    if let Some(error) = failure.take() {
        return Err(error);
    }
    read.map_err(|e| not_a_run(e.to_string()))?;

    std::fs::create_dir_all(out).map_err(|source| EngineError::Io {
        context: format!("cannot create the run directory {}", out.display()),
        source,
    })?;
    let run_id = format!("{name}-replay-{started_compact}");
    let mut trajectories = TrajectoryWriter::create(&out.join("trajectories.parquet"))?;
    let mut outcomes = OutcomeWriter::create(&out.join("outcomes.parquet"))?;
    let config_ids: Vec<String> = policies.iter().map(Policy::config_id).collect();
    let (mut written_loops, mut critiques) = (0u64, 0u64);
    let mut meta_key = (String::new(), String::new());
    let read = for_each_recorded_loop(&trajectories_path, |recorded| {
        let result = (|| -> Result<(), EngineError> {
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
                meta: metas.get(&meta_key).cloned(),
            };
            for (policy, config_id) in policies.iter().zip(&config_ids) {
                let (_, rounds) = emit_loop(
                    &labels,
                    &recorded.rounds,
                    &loop_scores,
                    policy,
                    config_id,
                    &mut trajectories,
                    &mut outcomes,
                )?
                .expect("every policy was checked to stop within the recording");
                written_loops += 1;
                critiques += rounds as u64;
            }
            Ok(())
        })();
        result.map_err(|error| {
            let message = error.to_string();
            failure = Some(error);
            message
        })
    });
    if let Some(error) = failure.take() {
        return Err(error);
    }
    read.map_err(|e| not_a_run(e.to_string()))?;
    trajectories.close()?;
    outcomes.close()?;

    let (finished_iso, _) = clock::utc_stamps(SystemTime::now());
    let manifest_out = json!({
        "schema_version": critbench_storage::SCHEMA_VERSION,
        "critbench_version": env!("CARGO_PKG_VERSION"),
        "run_id": run_id,
        "replayed_from": run_dir,
        "source_run_id": manifest.as_ref().and_then(|m| m.get("run_id")).cloned(),
        "experiment": {
            "name": name,
            "policies": policies.iter().map(crate::experiment::policy_json).collect::<Vec<_>>(),
            "critics": manifest.as_ref().and_then(|m| m.pointer("/experiment/critics")).cloned(),
            // Every recorded loop is replayed under every policy, so each task has the recording's
            // epochs × arms loops per config: the summary closes a task once they have arrived.
            "epochs": manifest.as_ref().and_then(|m| m.pointer("/experiment/epochs")).cloned(),
            "arms": manifest.as_ref().and_then(|m| m.pointer("/experiment/arms")).cloned(),
        },
        "sweep": "replay",
        "calls": { "generator": 0, "critic": 0, "direct_equivalent": critiques },
        "started_at": started_iso,
        "finished_at": finished_iso,
        "wall_seconds": started.elapsed().as_secs_f64(),
        "loops": written_loops,
        "critiques": critiques,
    });
    let path = out.join("manifest.json");
    std::fs::write(&path, serde_json::to_string_pretty(&manifest_out).expect("the manifest serializes") + "\n")
        .map_err(|source| EngineError::Io { context: format!("cannot write {}", path.display()), source })?;
    let report = critbench_report::write_reports(out)?;
    Ok(ReplaySummary { out_dir: out.to_path_buf(), loops: written_loops, critiques, report })
}
