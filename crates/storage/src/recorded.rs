//! Loops as recorded, independent of any policy: what replay needs to judge a new policy on a
//! finished run without calling a model or a critic.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use arrow_array::RecordBatch;

use crate::columns::Columns;
use crate::tables::StorageError;

/// One critiqued round of a loop.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RecordedRound {
    pub score: f64,
    pub dims: BTreeMap<String, f64>,
    pub issues: Vec<String>,
    pub fatal_issues: Vec<String>,
    pub issue_types: Vec<String>,
    /// Suggestions as JSON text.
    pub suggestions: Option<String>,
    pub rationale: Option<String>,
    pub critic_passed: Option<bool>,
    pub critic_attempts: u32,
    pub critic_error: Option<String>,
    pub draft_chars: u64,
    pub draft: Option<String>,
    pub gen_ms: f64,
    pub critic_ms: f64,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    /// Model tokens the critic spent on this round (a model judge), when known.
    pub critic_tokens_in: Option<u64>,
    pub critic_tokens_out: Option<u64>,
}

/// One loop (task × arm × critic × epoch) as far as it was recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedLoop {
    pub critic: String,
    pub arm: String,
    pub task_id: String,
    pub kind: Option<String>,
    pub epoch: u32,
    pub rounds: Vec<RecordedRound>,
}

type LoopKey = (String, String, String, u32);

/// Reads `trajectories.parquet` back into recorded loops. Every config of a loop shares the same
/// recorded rounds up to its own stop, so the longest config's rows are the whole recording.
pub fn read_recorded_loops(path: &Path) -> Result<Vec<RecordedLoop>, StorageError> {
    let corrupt = |message: String| StorageError::Parquet { path: path.into(), message };
    // loop → config → (round → recorded round), and the loop's kind.
    let mut loops: Loops = HashMap::new();
    let mut order: Vec<LoopKey> = Vec::new();
    crate::columns::for_each_batch(path, |batch| read_batch(batch, &mut loops, &mut order))?;
    let mut recorded = Vec::with_capacity(order.len());
    for key in order {
        let (kind, configs) = loops.remove(&key).expect("every ordered key was inserted");
        let (_, rounds) = configs
            .into_iter()
            .max_by(|(a_id, a), (b_id, b)| a.len().cmp(&b.len()).then_with(|| b_id.cmp(a_id)))
            .expect("a loop has at least one config");
        if rounds.keys().copied().ne(0..rounds.len() as u32) {
            return Err(corrupt(format!(
                "loop {} × {} × {} × epoch {} has rounds {:?}; expected 0, 1, 2, … without gaps",
                key.2,
                key.1,
                key.0,
                key.3,
                rounds.keys().collect::<Vec<_>>()
            )));
        }
        recorded.push(RecordedLoop {
            critic: key.0,
            arm: key.1,
            task_id: key.2,
            kind,
            epoch: key.3,
            rounds: rounds.into_values().collect(),
        });
    }
    Ok(recorded)
}

type Loops = HashMap<LoopKey, (Option<String>, HashMap<String, BTreeMap<u32, RecordedRound>>)>;

fn read_batch(batch: &RecordBatch, loops: &mut Loops, order: &mut Vec<LoopKey>) -> Result<(), String> {
    let c = Columns(batch);
    let (critic, arm, task_id, config_id) = (
        c.required_text("critic")?,
        c.required_text("arm")?,
        c.required_text("task_id")?,
        c.required_text("config_id")?,
    );
    let (kind, suggestions, rationale, critic_error, draft) =
        (c.text("kind")?, c.text("suggestions")?, c.text("rationale")?, c.text("critic_error")?, c.text("draft")?);
    let (epoch, round, attempts) = (c.int32("epoch")?, c.int32("round")?, c.int32("critic_attempts")?);
    let (score, gen_ms, critic_ms) =
        (c.required_float("score")?, c.required_float("gen_ms")?, c.required_float("critic_ms")?);
    let (draft_chars, tokens_in, tokens_out) = (c.int64("draft_chars")?, c.int64("tokens_in")?, c.int64("tokens_out")?);
    let (critic_tokens_in, critic_tokens_out) = (c.int64("critic_tokens_in")?, c.int64("critic_tokens_out")?);
    let (issues, fatal_issues, issue_types, critic_passed) = (
        c.string_lists("issues")?,
        c.string_lists("fatal_issues")?,
        c.string_lists("issue_types")?,
        c.boolean("critic_passed")?,
    );
    let mut dims = c.float_maps("dims")?;
    for i in 0..batch.num_rows() {
        let round_dims = std::mem::take(&mut dims[i]);
        let key = (critic[i].clone(), arm[i].clone(), task_id[i].clone(), epoch[i]);
        let slot = loops.entry(key.clone()).or_insert_with(|| {
            order.push(key);
            (kind[i].clone(), HashMap::new())
        });
        slot.1.entry(config_id[i].clone()).or_default().insert(
            round[i],
            RecordedRound {
                score: score[i],
                dims: round_dims,
                issues: issues[i].clone(),
                fatal_issues: fatal_issues[i].clone(),
                issue_types: issue_types[i].clone(),
                suggestions: suggestions[i].clone(),
                rationale: rationale[i].clone(),
                critic_passed: critic_passed[i],
                critic_attempts: attempts[i],
                critic_error: critic_error[i].clone(),
                draft_chars: draft_chars[i].unwrap_or(0),
                draft: draft[i].clone(),
                gen_ms: gen_ms[i],
                critic_ms: critic_ms[i],
                tokens_in: tokens_in[i],
                tokens_out: tokens_out[i],
                critic_tokens_in: critic_tokens_in[i],
                critic_tokens_out: critic_tokens_out[i],
            },
        );
    }
    Ok(())
}
