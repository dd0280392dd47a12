//! Loops as recorded, independent of any policy: what replay needs to judge a new policy on a
//! finished run without calling a model or a critic.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};

use crate::tables::StorageError;

/// One critiqued round of a loop.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RecordedRound {
    pub score: f64,
    pub dims: BTreeMap<String, f64>,
    pub issues: Vec<String>,
    pub fatal_issues: Vec<String>,
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
    let file = std::fs::File::open(path).map_err(|source| StorageError::Io { path: path.into(), source })?;
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(|e| corrupt(format!("not a readable Parquet file: {e}")))?;
    // loop → config → (round → recorded round), and the loop's kind.
    let mut loops: Loops = HashMap::new();
    let mut order: Vec<LoopKey> = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| corrupt(format!("cannot read: {e}")))?;
        read_batch(&batch, &mut loops, &mut order).map_err(corrupt)?;
    }
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
    let column = |name: &str| -> Result<&ArrayRef, String> {
        batch.column_by_name(name).ok_or_else(|| format!("missing column `{name}`"))
    };
    let strings = |name: &str| -> Result<Vec<Option<String>>, String> {
        let array = column(name)?.as_string_opt::<i32>().ok_or_else(|| format!("column `{name}` is not utf8"))?;
        Ok((0..array.len()).map(|i| array.is_valid(i).then(|| array.value(i).to_string())).collect())
    };
    let required = |name: &str| -> Result<Vec<String>, String> {
        strings(name)?.into_iter().map(|v| v.ok_or_else(|| format!("column `{name}` has a null"))).collect()
    };
    let int32 = |name: &str| -> Result<Vec<u32>, String> {
        let array =
            column(name)?.as_primitive_opt::<Int32Type>().ok_or_else(|| format!("column `{name}` is not int32"))?;
        Ok(array.values().iter().map(|v| u32::try_from(*v).unwrap_or(0)).collect())
    };
    let int64 = |name: &str| -> Result<Vec<Option<u64>>, String> {
        let array =
            column(name)?.as_primitive_opt::<Int64Type>().ok_or_else(|| format!("column `{name}` is not int64"))?;
        Ok((0..array.len()).map(|i| array.is_valid(i).then(|| array.value(i).max(0) as u64)).collect())
    };
    let float = |name: &str| -> Result<Vec<f64>, String> {
        let array =
            column(name)?.as_primitive_opt::<Float64Type>().ok_or_else(|| format!("column `{name}` is not float64"))?;
        Ok(array.values().to_vec())
    };
    let lists = |name: &str| -> Result<Vec<Vec<String>>, String> {
        let array = column(name)?.as_list_opt::<i32>().ok_or_else(|| format!("column `{name}` is not a list"))?;
        (0..array.len())
            .map(|i| {
                let items = array.value(i);
                let items = items.as_string_opt::<i32>().ok_or_else(|| format!("column `{name}` holds no strings"))?;
                Ok((0..items.len()).map(|j| items.value(j).to_string()).collect())
            })
            .collect()
    };
    let dims = column("dims")?.as_map_opt().ok_or_else(|| "column `dims` is not a map".to_string())?;
    let critic_passed =
        column("critic_passed")?.as_boolean_opt().ok_or_else(|| "column `critic_passed` is not boolean".to_string())?;
    let (critic, arm, task_id, config_id) =
        (required("critic")?, required("arm")?, required("task_id")?, required("config_id")?);
    let (kind, suggestions, rationale, critic_error, draft) =
        (strings("kind")?, strings("suggestions")?, strings("rationale")?, strings("critic_error")?, strings("draft")?);
    let (epoch, round, attempts) = (int32("epoch")?, int32("round")?, int32("critic_attempts")?);
    let (score, gen_ms, critic_ms) = (float("score")?, float("gen_ms")?, float("critic_ms")?);
    let (draft_chars, tokens_in, tokens_out) = (int64("draft_chars")?, int64("tokens_in")?, int64("tokens_out")?);
    let (issues, fatal_issues) = (lists("issues")?, lists("fatal_issues")?);
    for i in 0..batch.num_rows() {
        let entry = dims.value(i);
        let keys = entry.column(0).as_string::<i32>();
        let values = entry.column(1).as_primitive::<Float64Type>();
        let round_dims = (0..entry.len()).map(|j| (keys.value(j).to_string(), values.value(j))).collect();
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
                suggestions: suggestions[i].clone(),
                rationale: rationale[i].clone(),
                critic_passed: critic_passed.is_valid(i).then(|| critic_passed.value(i)),
                critic_attempts: attempts[i],
                critic_error: critic_error[i].clone(),
                draft_chars: draft_chars[i].unwrap_or(0),
                draft: draft[i].clone(),
                gen_ms: gen_ms[i],
                critic_ms: critic_ms[i],
                tokens_in: tokens_in[i],
                tokens_out: tokens_out[i],
            },
        );
    }
    Ok(())
}
