//! The two Parquet tables of a run (docs/FORMAT.md): `trajectories.parquet`, one row per critique, and
//! `outcomes.parquet`, one row per loop (task × config × arm × critic × epoch).

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::buffered::{BATCH_ROWS, Batches, RowColumns, TableBatches, TableRow, TableWriter};
use crate::columns::{BoxError, TableError};
use critbench_core::{Arm, Decision, ExitReason};

use crate::critique_columns::CritiqueColumns;
use crate::declared::declare_columns;
pub use crate::declared::{Label, parse_label};
use crate::parquet_sink::ParquetSink;
pub use crate::parquet_sink::StorageError;
use crate::scan::Scan;
use crate::schema::utf8;

declare_columns! {
    /// One critique of one draft, as written to `trajectories.parquet` and read back by replay and
    /// rescoring. Its text is borrowed (from the round a writer records, or the batch a reader
    /// reads), so writing a row copies each string once, into its column.
    #[derive(Clone, Debug, PartialEq)]
    pub struct TrajectoryRow<'a> {
        pub run_id: &'a str = "run_id",
        pub config_id: &'a str = "config_id",
        pub arm: Arm = "arm",
        pub critic: &'a str = "critic",
        pub task_id: &'a str = "task_id",
        pub kind: Option<&'a str> = "kind",
        pub epoch: u32 = "epoch",
        pub round: u32 = "round",
        pub revisions: u32 = "revisions",
        /// The critic's critique of the round's draft: a writer's borrowed, a reader's owned.
        pub critique: Cow<'a, CritiqueColumns> = flattened,
        pub passed: bool = "passed",
        /// The policy's decision (`decision` and `exit_reason`), or the adjudication row's.
        pub decision: RowDecision = flattened,
        pub is_best: bool = "is_best",
        pub best_score: f64 = "best_score",
        pub draft_chars: u64 = "draft_chars",
        pub draft: Option<&'a str> = "draft",
        pub gen_ms: f64 = "gen_ms",
        pub critic_ms: f64 = "critic_ms",
        pub critic_attempts: u32 = "critic_attempts",
        pub critic_error: Option<&'a str> = "critic_error",
        /// Why the writer program wrote no next draft when the policy asked for one: set on the
        /// row the loop stopped at with `exit_reason` `writer_error`, null on every other.
        pub writer_error: Option<&'a str> = "writer_error",
        pub tokens_in: Option<u64> = "tokens_in",
        pub tokens_out: Option<u64> = "tokens_out",
        /// Model tokens the critic spent on this round, when it is a model judge.
        pub critic_tokens_in: Option<u64> = "critic_tokens_in",
        pub critic_tokens_out: Option<u64> = "critic_tokens_out",
        /// What this round's model calls cost in the run's currency: its writer tokens and critic
        /// tokens at their roles' prices (`[pricing]`); null when it asked no model, when a role
        /// it used has no price, and on the adjudication row. A loop's `cost` in
        /// `outcomes.parquet` is the sum of its rounds'.
        pub cost: Option<f64> = "cost",
        /// Whether the writer of this round's draft acted on the critique it was shown (the
        /// offline writer says; null for a first draft, a blind revision or a model).
        pub acted_on_critique: Option<bool> = "acted_on_critique",
        /// Whether the model's answer that is this round's draft was cut at its `max_tokens`
        /// (`finish_reason` `length`); null without a model.
        pub draft_truncated: Option<bool> = "draft_truncated",
        /// The critic's model answers for this critique (all attempts) cut at their `max_tokens`;
        /// null when the critic asked no model.
        pub critic_truncated: Option<u64> = "critic_truncated",
        /// How much this round's draft changed the one before it ([`critbench_core::edit_share`]);
        /// null for a first draft and for a fresh draft of the `resample` arm.
        pub edit_share: Option<f64> = "edit_share",
    }
    names: TrajectoryColumns,
    builders: TrajectoryBuilders,
    reader: read_batch,
}

impl<'a> TrajectoryRow<'a> {
    /// A revising round of `task_id` with its critique and nothing else: no text, no times. For
    /// fixtures that need rows of a given shape; fill what matters with `..`.
    pub fn bare(task_id: &'a str, round: u32, critique: &'a CritiqueColumns) -> TrajectoryRow<'a> {
        TrajectoryRow {
            run_id: "r",
            config_id: "p8-r3-stall-e0",
            arm: Arm::Feedback,
            critic: "rubric",
            task_id,
            kind: None,
            epoch: 0,
            round,
            revisions: round,
            critique: Cow::Borrowed(critique),
            passed: false,
            decision: RowDecision::Policy(Decision::Revise),
            is_best: false,
            best_score: critique.score,
            draft_chars: 1,
            draft: None,
            gen_ms: 0.0,
            critic_ms: 0.0,
            critic_attempts: 1,
            critic_error: None,
            writer_error: None,
            tokens_in: None,
            tokens_out: None,
            critic_tokens_in: None,
            critic_tokens_out: None,
            cost: None,
            acted_on_critique: None,
            draft_truncated: None,
            critic_truncated: None,
            edit_share: None,
        }
    }
}

/// The `decision` of the row that records a loop's adjudicated final draft: not a round of the
/// loop, so replay leaves it out of the recording.
pub const DECISION_ADJUDICATE: &str = "adjudicate";

/// What a trajectory row's `decision` and `exit_reason` record (docs/FORMAT.md): the policy's
/// decision after the round's critique, or that the row is the loop's adjudicated final draft,
/// which is not a round of the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowDecision {
    /// `revise` (no exit reason), or `stop` with why the loop stopped.
    Policy(Decision),
    /// `adjudicate` (no exit reason): the row of the loop's adjudicated final draft.
    Adjudicate,
}

impl RowDecision {
    /// The decision as the `decision` column holds it.
    pub fn as_str(self) -> &'static str {
        match self {
            RowDecision::Policy(decision) => decision.as_str(),
            RowDecision::Adjudicate => DECISION_ADJUDICATE,
        }
    }

    /// Why the loop stopped, on its stop row.
    pub fn exit_reason(self) -> Option<ExitReason> {
        match self {
            RowDecision::Policy(decision) => decision.exit_reason(),
            RowDecision::Adjudicate => None,
        }
    }

    /// The decision of row `row` from its `decision` and `exit_reason`; an unknown decision, or an
    /// exit reason where there is none (or none where the loop stopped), names the row and column.
    pub fn parse(decision: &str, exit_reason: Option<&str>, row: usize) -> Result<RowDecision, TableError> {
        let [decision_column, exit_column] = DECISION_COLUMNS;
        let parsed = match decision {
            "revise" => RowDecision::Policy(Decision::Revise),
            DECISION_ADJUDICATE => RowDecision::Adjudicate,
            "stop" => {
                let Some(exit_reason) = exit_reason else {
                    let valid: Vec<&str> = ExitReason::ALL.iter().map(|exit| exit.as_str()).collect();
                    return Err(TableError::StopWithoutExit { row, column: exit_column, valid: valid.join(", ") });
                };
                return Ok(RowDecision::Policy(Decision::Stop(crate::declared::parse_label(
                    exit_reason,
                    exit_column,
                    row,
                )?)));
            }
            other => {
                return Err(TableError::NotALabel {
                    row,
                    column: decision_column.to_string(),
                    text: other.to_string(),
                    what: "a decision",
                    valid: format!("revise, stop, {}", DECISION_ADJUDICATE),
                });
            }
        };
        match exit_reason {
            Some(exit_reason) => Err(TableError::ExitWithoutStop {
                row,
                column: exit_column,
                exit_reason: exit_reason.to_string(),
                decision: parsed.as_str(),
            }),
            None => Ok(parsed),
        }
    }
}

impl crate::declared::Column for RowDecision {
    type Builder = [StringBuilder; 2];
    fn fields(_: &str) -> Vec<Field> {
        let [decision, exit_reason] = DECISION_COLUMNS;
        vec![utf8(decision, false), utf8(exit_reason, true)]
    }
    fn builder(rows: usize) -> [StringBuilder; 2] {
        // Few distinct, short values: "revise", "stop", "adjudicate"; "pass", "stall", …
        [StringBuilder::with_capacity(rows, rows * 6), StringBuilder::with_capacity(rows, rows)]
    }
    fn append(&self, [decision, exit_reason]: &mut [StringBuilder; 2]) {
        decision.append_value(self.as_str());
        exit_reason.append_option(self.exit_reason().map(ExitReason::as_str));
    }
    fn finish(builders: &mut [StringBuilder; 2], columns: &mut Vec<ArrayRef>) {
        columns.extend(builders.iter_mut().map(|builder| Arc::new(builder.finish()) as ArrayRef));
    }
}

/// The name of each column of a [`RowDecision`]: the one place they are spelled.
#[derive(Clone, Copy, Debug)]
pub struct DecisionColumnNames {
    /// `decision`: `revise`, `stop` or `adjudicate`.
    pub decision: &'static str,
    /// `exit_reason`, on a `stop` row.
    pub exit_reason: &'static str,
}

impl RowDecision {
    /// Each column's name.
    pub const COLUMNS: DecisionColumnNames = DecisionColumnNames { decision: "decision", exit_reason: "exit_reason" };
}

/// The columns of a [`RowDecision`], in order.
const DECISION_COLUMNS: [&str; 2] = [RowDecision::COLUMNS.decision, RowDecision::COLUMNS.exit_reason];

impl crate::declared::Flattened for RowDecision {
    const NAMES: &'static [&'static str] = &DECISION_COLUMNS;
}

impl crate::declared::ReadColumn<'_> for RowDecision {
    fn read(c: &crate::columns::Columns<'_>, _: &str, first_row: usize) -> Result<Vec<Self>, TableError> {
        use arrow_array::Array;
        let [decision, exit_reason] = DECISION_COLUMNS;
        let (decision, exit_reason) = (c.text_array(decision)?, c.nullable_text_array(exit_reason)?);
        (0..decision.len())
            .map(|i| {
                let exit = exit_reason.is_valid(i).then(|| exit_reason.value(i));
                RowDecision::parse(decision.value(i), exit, first_row + i)
            })
            .collect()
    }
}

declare_columns! {
    /// One finished loop, as written to `outcomes.parquet` and read back by reports.
    #[derive(Clone, Debug, PartialEq)]
    pub struct OutcomeRow {
        pub run_id: String = "run_id",
        pub config_id: String = "config_id",
        pub arm: Arm = "arm",
        pub critic: String = "critic",
        pub task_id: String = "task_id",
        pub kind: Option<String> = "kind",
        pub epoch: u32 = "epoch",
        pub pass_score: f64 = "pass_score",
        pub max_revisions: u32 = "max_revisions",
        pub stall: bool = "stall",
        pub plateau_eps: f64 = "plateau_eps",
        pub dim_target: Option<f64> = "dim_target",
        pub final_draft: String = "final",
        pub rounds: u32 = "rounds",
        pub revisions: u32 = "revisions",
        pub exit_reason: ExitReason = "exit_reason",
        pub passed: bool = "passed",
        pub first_score: f64 = "first_score",
        pub last_score: f64 = "last_score",
        pub final_score: f64 = "final_score",
        pub best_score: f64 = "best_score",
        pub best_round: u32 = "best_round",
        pub critic_errors: u32 = "critic_errors",
        /// Rounds where the critic's own `passed` (when it gave one) disagreed with the host's verdict.
        pub critic_disagreements: u32 = "critic_disagreements",
        pub tokens_in: Option<u64> = "tokens_in",
        pub tokens_out: Option<u64> = "tokens_out",
        pub wall_ms: f64 = "wall_ms",
        /// The task's `meta`, as JSON text.
        pub meta: Option<String> = "meta",
        /// The critic's score of the adjudicated final draft (the adjudicator's last pass), and whether it
        /// meets the pass rule; `None` when the loop's arm does not adjudicate.
        pub adjudicated_score: Option<f64> = "adjudicated_score",
        pub adjudicated_passed: Option<bool> = "adjudicated_passed",
        /// What the loop's model calls cost in the run's currency (`[pricing]`): its rounds' writer
        /// tokens (`tokens_in`/`tokens_out`) and critic tokens (`critic_tokens_in`/`critic_tokens_out`)
        /// at their roles' prices; `None` when a role it used has no price, or it used no model.
        pub cost: Option<f64> = "cost",
        /// The model tokens its critic (a model judge) spent on its rounds: the sums of their
        /// trajectories' `critic_tokens_in`/`critic_tokens_out`; `None` when no round counted any.
        pub critic_tokens_in: Option<u64> = "critic_tokens_in",
        pub critic_tokens_out: Option<u64> = "critic_tokens_out",
    }
    names: OutcomeColumns,
    builders: OutcomeBuilders,
    reader: read_batch,
}

const T: TrajectoryColumns = TrajectoryRow::COLUMNS;

/// Columns of few distinct values, stored dictionary-encoded in every table that has them.
pub(crate) const DICTIONARY_COLUMNS: &[&str] = &[
    T.run_id,
    T.config_id,
    T.arm,
    T.critic,
    T.kind,
    RowDecision::COLUMNS.decision,
    RowDecision::COLUMNS.exit_reason,
    OutcomeRow::COLUMNS.final_draft,
];

/// The schema of `trajectories.parquet`.
pub fn trajectory_schema() -> SchemaRef {
    Arc::new(Schema::new(TrajectoryRow::fields()))
}

/// The schema of `outcomes.parquet`.
pub fn outcome_schema() -> SchemaRef {
    Arc::new(Schema::new(OutcomeRow::fields()))
}

/// Streams [`TrajectoryRow`]s into `trajectories.parquet`: each row goes straight into the
/// column builders (its text copied once), and a batch is written when full.
pub struct TrajectoryWriter {
    sink: ParquetSink,
    rows: TrajectoryBatches,
}

impl TrajectoryWriter {
    /// Creates `trajectories.parquet` at `path` (which must not exist).
    pub fn create(path: &Path) -> Result<Self, StorageError> {
        Ok(TrajectoryWriter {
            sink: ParquetSink::create(path, trajectory_schema(), "trajectories", DICTIONARY_COLUMNS)?,
            rows: TrajectoryBatches::with_capacity(BATCH_ROWS),
        })
    }

    /// Adds a row; a full batch is written.
    pub fn push(&mut self, row: &TrajectoryRow<'_>) -> Result<(), StorageError> {
        self.rows.push(row);
        if self.rows.done.rows() > 0 { self.flush() } else { Ok(()) }
    }

    fn flush(&mut self) -> Result<(), StorageError> {
        std::mem::take(&mut self.rows).finish().write_to(&mut self.sink)
    }

    /// Appends rows built elsewhere ([`TrajectoryBatches`]) after the rows pushed so far.
    pub fn append(&mut self, batches: Batches) -> Result<(), StorageError> {
        self.flush()?;
        batches.write_to(&mut self.sink)
    }

    /// Writes what is left and the footer, and waits until the file is on disk.
    pub fn close(mut self) -> Result<(), StorageError> {
        self.flush()?;
        self.sink.close()
    }
}

/// [`TrajectoryRow`]s turned into columns away from any file (each row's text copied once, into
/// its column), a batch at a time: what a loop worker builds of its chunk for
/// [`TrajectoryWriter::append`].
pub struct TrajectoryBatches {
    rows: usize,
    builders: TrajectoryBuilders<'static>,
    done: Batches,
}

impl Default for TrajectoryBatches {
    fn default() -> Self {
        TrajectoryBatches::with_capacity(0)
    }
}

impl TrajectoryBatches {
    /// Room for about `rows` rows before the builders grow (never more than a batch's).
    pub fn with_capacity(rows: usize) -> Self {
        TrajectoryBatches {
            rows: 0,
            builders: TrajectoryBuilders::with_capacity(rows.min(BATCH_ROWS)),
            done: Batches::default(),
        }
    }

    /// Adds a row; a full batch becomes columns.
    pub fn push(&mut self, row: &TrajectoryRow<'_>) {
        self.builders.append(row);
        self.rows += 1;
        if self.rows >= BATCH_ROWS {
            self.done.push(self.builders.finish(), std::mem::take(&mut self.rows));
        }
    }

    /// The columns of every row pushed.
    pub fn finish(mut self) -> Batches {
        let rows = std::mem::take(&mut self.rows);
        if rows > 0 {
            self.done.push(self.builders.finish(), rows);
        }
        self.done
    }
}

/// Streams [`OutcomeRow`]s into `outcomes.parquet`.
pub type OutcomeWriter = TableWriter<OutcomeRow>;

/// [`OutcomeRow`]s turned into columns away from any file, for [`OutcomeWriter::append`].
pub type OutcomeBatches = TableBatches<OutcomeRow>;

impl OutcomeRow {
    /// A loop of `task_id` under `arm` that used `rounds` rounds, first scored 5 and last 6, and
    /// passed or ran out of budget: nothing else set. For fixtures that need loops of a given
    /// shape; fill what matters with `..`.
    /// `arm` as the output spells it.
    pub fn bare(task_id: &str, arm: &str, passed: bool, rounds: u32) -> OutcomeRow {
        OutcomeRow {
            run_id: "r".into(),
            config_id: "p8-r3-stall-e0".into(),
            arm: Arm::parse(arm).expect("an arm as the output spells it"),
            critic: "rubric".into(),
            task_id: task_id.into(),
            kind: None,
            epoch: 0,
            pass_score: 8.0,
            max_revisions: 3,
            stall: true,
            plateau_eps: 0.0,
            dim_target: None,
            final_draft: "best".into(),
            rounds,
            revisions: rounds.saturating_sub(1),
            exit_reason: if passed { ExitReason::Pass } else { ExitReason::Budget },
            passed,
            first_score: 5.0,
            last_score: 6.0,
            final_score: 6.0,
            best_score: 6.0,
            best_round: 0,
            critic_errors: 0,
            critic_disagreements: 0,
            tokens_in: None,
            tokens_out: None,
            wall_ms: 1.0,
            meta: None,
            adjudicated_score: None,
            adjudicated_passed: None,
            cost: None,
            critic_tokens_in: None,
            critic_tokens_out: None,
        }
    }
}

impl TableRow for OutcomeRow {
    const TABLE: &'static str = "outcomes";
    const DICTIONARY: &'static [&'static str] = DICTIONARY_COLUMNS;

    fn schema() -> SchemaRef {
        outcome_schema()
    }

    fn columns(rows: &[Self]) -> Vec<ArrayRef> {
        outcome_columns(rows, |row| row)
    }
}

/// The columns of `outcome_schema()`, in order, of the outcome each of `rows` holds.
fn outcome_columns<R>(rows: &[R], outcome: impl Fn(&R) -> &OutcomeRow) -> Vec<ArrayRef> {
    let mut builders = OutcomeBuilders::with_capacity(rows.len());
    for row in rows {
        builders.append(outcome(row));
    }
    builders.finish()
}

/// One loop of a rescoring's replay (`RUN/rescored/NAME/outcomes.parquet`, docs/FORMAT.md): the
/// run's outcome columns, and whether the loop is censored — the new critic's scores would have
/// its policy revise after the last round the run recorded, so its outcome is unknown. A censored
/// loop's `outcome` holds what the recorded rounds show; its `exit_reason`, `passed` and
/// `final_score` are written as nulls and read back as the placeholders [`CENSORED_EXIT`], `false`
/// and NaN: they mean nothing, and only `censored` says so.
#[derive(Clone, Debug, PartialEq)]
pub struct RescoredOutcome {
    /// The loop's outcome columns (placeholders where censored).
    pub outcome: OutcomeRow,
    /// The outcome is unknown: the recorded rounds ran out before the policy stopped.
    pub censored: bool,
}

/// Streams [`RescoredOutcome`]s into a rescoring's `outcomes.parquet`.
pub type RescoredOutcomeWriter = TableWriter<RescoredOutcome>;

/// The column a rescoring's outcomes add after the run's: whether the loop is censored.
pub const CENSORED_COLUMN: &str = "censored";

/// The outcome columns a censored loop has no value for.
const UNKNOWN_WHEN_CENSORED: [&str; 3] =
    [OutcomeRow::COLUMNS.exit_reason, OutcomeRow::COLUMNS.passed, OutcomeRow::COLUMNS.final_score];

/// The `exit_reason` a censored loop's [`OutcomeRow`] holds, a placeholder (see
/// [`RescoredOutcome`]): its recorded rounds ran out before its policy stopped.
pub const CENSORED_EXIT: ExitReason = ExitReason::Budget;

/// The schema of a rescoring's `outcomes.parquet`: [`outcome_schema`] with the columns a censored
/// loop has no value for nullable, and `censored` at the end.
pub fn rescored_outcome_schema() -> SchemaRef {
    let mut fields: Vec<Field> = outcome_schema()
        .fields()
        .iter()
        .map(|field| {
            let unknown = UNKNOWN_WHEN_CENSORED.contains(&field.name().as_str());
            field.as_ref().clone().with_nullable(field.is_nullable() || unknown)
        })
        .collect();
    fields.push(Field::new(CENSORED_COLUMN, DataType::Boolean, false));
    Arc::new(Schema::new(fields))
}

impl TableRow for RescoredOutcome {
    const TABLE: &'static str = "outcomes";
    const DICTIONARY: &'static [&'static str] = DICTIONARY_COLUMNS;

    fn schema() -> SchemaRef {
        rescored_outcome_schema()
    }

    fn columns(rows: &[Self]) -> Vec<ArrayRef> {
        let mut columns = outcome_columns(rows, |row| &row.outcome);
        let schema = outcome_schema();
        let c = RowColumns(rows);
        let known = |row: &RescoredOutcome| !row.censored;
        let names = OutcomeRow::COLUMNS;
        for name in UNKNOWN_WHEN_CENSORED {
            let index = schema.index_of(name).expect("an outcome column");
            columns[index] = if name == names.exit_reason {
                c.optional_text(|r| known(r).then_some(r.outcome.exit_reason.as_str()))
            } else if name == names.passed {
                c.optional_boolean(|r| known(r).then_some(r.outcome.passed))
            } else {
                c.optional_float(|r| known(r).then_some(r.outcome.final_score))
            };
        }
        columns.push(c.boolean(|r| r.censored));
        columns
    }
}

/// Reads a rescoring's `outcomes.parquet` back, censored loops included (see [`RescoredOutcome`]).
pub fn read_rescored_outcomes(path: &Path) -> Result<Vec<RescoredOutcome>, StorageError> {
    let (mut rows, mut first_row) = (Vec::new(), 0);
    Scan::all().for_each(&[path], |scanned| {
        let batch = scanned.batch;
        read_outcome_batch(batch, first_row, &mut |outcome, censored| {
            rows.push(RescoredOutcome { outcome, censored })
        })?;
        first_row += batch.num_rows();
        Ok(())
    })?;
    Ok(rows)
}

/// Reads `outcomes.parquet` back, checking that every column this version writes is there. A
/// rescoring's censored loops have no outcome and are left out ([`read_rescored_outcomes`] keeps
/// them).
pub fn read_outcomes(path: &Path) -> Result<Vec<OutcomeRow>, StorageError> {
    let (mut rows, mut first_row) = (Vec::new(), 0);
    Scan::all().for_each(&[path], |scanned| {
        let batch = scanned.batch;
        read_outcome_batch(batch, first_row, &mut |outcome, censored| {
            if !censored {
                rows.push(outcome);
            }
        })?;
        first_row += batch.num_rows();
        Ok(())
    })?;
    Ok(rows)
}

/// The fields of one outcome row that summaries need, borrowed from the batch being read.
#[derive(Clone, Copy, Debug)]
pub struct OutcomeStats<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The loop's config.
    pub config_id: &'a str,
    /// The loop's arm as the file spells it (checked to be an [`Arm`] when read): text, since a
    /// summary also folds a loop's adjudicated twin under the label `ARM+adjudicate`.
    pub arm: &'a str,
    /// Its critic.
    pub critic: &'a str,
    /// Its task.
    pub task_id: &'a str,
    /// Its epoch.
    pub epoch: u32,
    /// Rounds it ran.
    pub rounds: u32,
    /// Revisions it made.
    pub revisions: u32,
    /// Why the loop stopped; `None` exactly when it is censored.
    pub exit_reason: Option<ExitReason>,
    /// Whether its answer passed.
    pub passed: bool,
    /// The first draft's score.
    pub first_score: f64,
    /// The best draft's score.
    pub best_score: f64,
    /// The returned draft's score.
    pub final_score: f64,
    /// Rounds whose critique failed every attempt.
    pub critic_errors: u32,
    /// Rounds where the critic's own verdict disagreed with the host's.
    pub critic_disagreements: u32,
    /// The writer's tokens of the loop, when its backend counts them.
    pub tokens_in: Option<u64>,
    /// The writer's completion tokens, when counted.
    pub tokens_out: Option<u64>,
    /// The adjudicated final draft's score and pass, when the loop's arm adjudicates.
    pub adjudicated_score: Option<f64>,
    /// Whether the adjudicated draft passed.
    pub adjudicated_passed: Option<bool>,
    /// The task's kind, when its dataset row gave one.
    pub kind: Option<&'a str>,
    /// The loop's cost in money, when its roles were priced.
    pub cost: Option<f64>,
    /// A rescoring's loop whose outcome is unknown ([`RescoredOutcome`]): only
    /// [`for_each_outcome_stats_with_censored`] hands these on, and their `exit_reason`, `passed`
    /// and `final_score` are `None`, `false` and NaN.
    pub censored: bool,
}

impl<'a> From<&'a OutcomeRow> for OutcomeStats<'a> {
    fn from(row: &'a OutcomeRow) -> OutcomeStats<'a> {
        OutcomeStats {
            run_id: &row.run_id,
            config_id: &row.config_id,
            arm: row.arm.as_str(),
            critic: &row.critic,
            task_id: &row.task_id,
            epoch: row.epoch,
            rounds: row.rounds,
            revisions: row.revisions,
            exit_reason: Some(row.exit_reason),
            passed: row.passed,
            first_score: row.first_score,
            best_score: row.best_score,
            final_score: row.final_score,
            critic_errors: row.critic_errors,
            critic_disagreements: row.critic_disagreements,
            tokens_in: row.tokens_in,
            tokens_out: row.tokens_out,
            adjudicated_score: row.adjudicated_score,
            adjudicated_passed: row.adjudicated_passed,
            kind: row.kind.as_deref(),
            cost: row.cost,
            censored: false,
        }
    }
}

const NAMES: OutcomeColumns = OutcomeRow::COLUMNS;

/// The columns [`for_each_outcome_stats`] decodes (and a rescoring's `censored`).
pub const OUTCOME_STATS_COLUMNS: [&str; 21] = [
    NAMES.run_id,
    NAMES.config_id,
    NAMES.arm,
    NAMES.critic,
    NAMES.task_id,
    NAMES.epoch,
    NAMES.rounds,
    NAMES.revisions,
    NAMES.exit_reason,
    NAMES.passed,
    NAMES.first_score,
    NAMES.best_score,
    NAMES.final_score,
    NAMES.critic_errors,
    NAMES.critic_disagreements,
    NAMES.tokens_in,
    NAMES.tokens_out,
    NAMES.adjudicated_score,
    NAMES.adjudicated_passed,
    NAMES.kind,
    NAMES.cost,
];

/// Streams `outcomes.parquet` row by row through `each`, decoding only
/// [`OUTCOME_STATS_COLUMNS`] (and a rescoring's `censored`), a batch at a time:
/// memory is one batch whatever the file's size. An error from `each` is reported with the file
/// and the row's position in it. A rescoring's censored loops have no outcome and are left out.
pub fn for_each_outcome_stats<E: Into<BoxError>>(
    path: &Path,
    mut each: impl FnMut(&OutcomeStats<'_>) -> Result<(), E>,
) -> Result<(), StorageError> {
    stream_outcome_stats(path, &mut |row| if row.censored { Ok(()) } else { each(row).map_err(Into::into) })
}

/// [`for_each_outcome_stats`] with a rescoring's censored loops too (`censored` set), for a
/// reader that counts them: a summary that must know when a task's loops have all arrived.
pub fn for_each_outcome_stats_with_censored<E: Into<BoxError>>(
    path: &Path,
    mut each: impl FnMut(&OutcomeStats<'_>) -> Result<(), E>,
) -> Result<(), StorageError> {
    stream_outcome_stats(path, &mut |row| each(row).map_err(Into::into))
}

fn stream_outcome_stats(
    path: &Path,
    each: &mut dyn FnMut(&OutcomeStats<'_>) -> Result<(), BoxError>,
) -> Result<(), StorageError> {
    use arrow_array::Array;
    let mut offset = 0usize;
    Scan::columns(&OUTCOME_STATS_COLUMNS, &[CENSORED_COLUMN]).for_each(&[path], |scanned| {
        let (batch, c) = (scanned.batch, scanned.columns());
        // A rescoring's censored loops have nulls where the outcome is unknown.
        let censored = match batch.column_by_name(CENSORED_COLUMN) {
            Some(_) => Some(c.boolean_array(CENSORED_COLUMN)?),
            None => None,
        };
        let is_censored = |i: usize| censored.is_some_and(|array| array.value(i));
        let (run_id, config_id, arm, critic, task_id) = (
            c.text_array(NAMES.run_id)?,
            c.text_array(NAMES.config_id)?,
            c.text_array(NAMES.arm)?,
            c.text_array(NAMES.critic)?,
            c.text_array(NAMES.task_id)?,
        );
        let (exit_reason, passed, final_score) = match censored {
            None => {
                (c.text_array(NAMES.exit_reason)?, c.boolean_array(NAMES.passed)?, c.float_array(NAMES.final_score)?)
            }
            Some(_) => (
                c.nullable_text_array(NAMES.exit_reason)?,
                c.nullable_boolean_array(NAMES.passed)?,
                c.nullable_float_array(NAMES.final_score)?,
            ),
        };
        let (epoch, rounds, revisions, critic_errors) = (
            c.int32_array(NAMES.epoch)?,
            c.int32_array(NAMES.rounds)?,
            c.int32_array(NAMES.revisions)?,
            c.int32_array(NAMES.critic_errors)?,
        );
        let disagreements = c.int32_array(NAMES.critic_disagreements)?;
        let (tokens_in, tokens_out) = (c.int64(NAMES.tokens_in)?, c.int64(NAMES.tokens_out)?);
        let (adjudicated_score, cost) = (c.float(NAMES.adjudicated_score)?, c.float(NAMES.cost)?);
        let adjudicated_passed = c.boolean(NAMES.adjudicated_passed)?;
        let kind = c.nullable_text_array(NAMES.kind)?;
        let (first_score, best_score) = (c.float_array(NAMES.first_score)?, c.float_array(NAMES.best_score)?);
        let whole = |array: &arrow_array::Int32Array, column: &'static str, i: usize| {
            u32::try_from(array.value(i)).map_err(|_| TableError::NegativeInRow {
                row: offset + i,
                column,
                value: array.value(i),
            })
        };
        for i in 0..batch.num_rows() {
            let censored = is_censored(i);
            let known = [exit_reason.is_valid(i), passed.is_valid(i), final_score.is_valid(i)];
            if !censored && known.contains(&false) {
                return Err(TableError::OutcomeNull(offset + i));
            }
            let row = OutcomeStats {
                run_id: run_id.value(i),
                config_id: config_id.value(i),
                arm: crate::declared::parse_label::<Arm>(arm.value(i), NAMES.arm, offset + i)?.as_str(),
                critic: critic.value(i),
                task_id: task_id.value(i),
                epoch: whole(epoch, NAMES.epoch, i)?,
                rounds: whole(rounds, NAMES.rounds, i)?,
                revisions: whole(revisions, NAMES.revisions, i)?,
                exit_reason: match censored {
                    true => None,
                    false => Some(crate::declared::parse_label(exit_reason.value(i), NAMES.exit_reason, offset + i)?),
                },
                passed: !censored && passed.value(i),
                first_score: first_score.value(i),
                best_score: best_score.value(i),
                final_score: if censored { f64::NAN } else { final_score.value(i) },
                critic_errors: whole(critic_errors, NAMES.critic_errors, i)?,
                critic_disagreements: whole(disagreements, NAMES.critic_disagreements, i)?,
                tokens_in: tokens_in[i],
                tokens_out: tokens_out[i],
                adjudicated_score: adjudicated_score[i],
                adjudicated_passed: adjudicated_passed[i],
                kind: kind.is_valid(i).then(|| kind.value(i)),
                cost: cost[i],
                censored,
            };
            each(&row).map_err(|source| TableError::RefusedRow {
                row: offset + i,
                task_id: row.task_id.to_string(),
                source,
            })?;
        }
        offset += batch.num_rows();
        Ok(())
    })?;
    Ok(())
}

/// Each (critic, task)'s `meta` in `outcomes.parquet`, reading only those three columns; tasks
/// without a meta are left out.
pub fn read_outcome_metas(path: &Path) -> Result<std::collections::HashMap<(String, String), String>, StorageError> {
    let mut metas = std::collections::HashMap::new();
    Scan::columns(&[NAMES.critic, NAMES.task_id, NAMES.meta], &[]).for_each(&[path], |scanned| {
        let (batch, columns) = (scanned.batch, scanned.columns());
        let (critic, task_id) = (columns.text_array(NAMES.critic)?, columns.text_array(NAMES.task_id)?);
        let meta = columns.nullable_text_array(NAMES.meta)?;
        for i in 0..batch.num_rows() {
            if arrow_array::Array::is_valid(meta, i) {
                metas
                    .entry((critic.value(i).to_string(), task_id.value(i).to_string()))
                    .or_insert_with(|| meta.value(i).to_string());
            }
        }
        Ok(())
    })?;
    Ok(metas)
}

/// [`for_each_outcome_stats`] over each of `paths` in turn: one table kept in several files (a
/// sharded run's partitions, from [`crate::shards::table_files`]).
pub fn for_each_outcome_stats_in<E: Into<BoxError>>(
    paths: &[std::path::PathBuf],
    mut each: impl FnMut(&OutcomeStats<'_>) -> Result<(), E>,
) -> Result<(), StorageError> {
    for path in paths {
        for_each_outcome_stats(path, &mut each)?;
    }
    Ok(())
}

/// [`for_each_outcome_stats_with_censored`] over each of `paths` in turn.
pub fn for_each_outcome_stats_with_censored_in<E: Into<BoxError>>(
    paths: &[std::path::PathBuf],
    mut each: impl FnMut(&OutcomeStats<'_>) -> Result<(), E>,
) -> Result<(), StorageError> {
    for path in paths {
        for_each_outcome_stats_with_censored(path, &mut each)?;
    }
    Ok(())
}

/// How many rows a Parquet file holds, from its footer (nothing else is read).
pub fn parquet_rows(path: &Path) -> Result<usize, StorageError> {
    let file = std::fs::File::open(path).map_err(|source| StorageError::Io { path: path.into(), source })?;
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|source| StorageError::Unreadable { path: path.into(), source })?;
    Ok(usize::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0))
}

/// The critbench table a Parquet file holds (`"outcomes"`, `"trajectories"`, …), from the name its
/// footer records; `None` for a file that is not one critbench wrote, or not Parquet at all.
pub fn critbench_table(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let metadata = parquet::file::metadata::ParquetMetaDataReader::new().parse_and_finish(&file).ok()?;
    let pairs = metadata.file_metadata().key_value_metadata()?;
    pairs.iter().find(|kv| kv.key == crate::schema::TABLE_KEY).and_then(|kv| kv.value.clone())
}

/// The distinct critic names of `outcomes.parquet`, reading only its `critic` column.
pub fn outcome_critics(path: &Path) -> Result<std::collections::BTreeSet<String>, StorageError> {
    let mut critics = std::collections::BTreeSet::new();
    Scan::columns(&[NAMES.critic], &[]).for_each(&[path], |scanned| {
        let (batch, column) = (scanned.batch, scanned.columns());
        let critic = column.text_array(NAMES.critic)?;
        for i in 0..batch.num_rows() {
            if !critics.contains(critic.value(i)) {
                critics.insert(critic.value(i).to_string());
            }
        }
        Ok(())
    })?;
    Ok(critics)
}

/// The distinct task kinds of `outcomes.parquet` (`None` for tasks without one), reading only its
/// `kind` column.
pub fn outcome_kinds(path: &Path) -> Result<std::collections::BTreeSet<Option<String>>, StorageError> {
    let mut kinds = std::collections::BTreeSet::new();
    Scan::columns(&[NAMES.kind], &[]).for_each(&[path], |scanned| {
        for kind in scanned.columns().text(NAMES.kind)? {
            kinds.insert(kind);
        }
        Ok(())
    })?;
    Ok(kinds)
}

/// Decodes one batch of outcomes (rows `first_row..` of their file), handing each row to `row`
/// with whether it is censored (a rescoring's loop without an outcome: see [`RescoredOutcome`]).
fn read_outcome_batch(
    batch: &RecordBatch,
    first_row: usize,
    row: &mut dyn FnMut(OutcomeRow, bool),
) -> Result<(), TableError> {
    use arrow_array::Array;
    let c = crate::columns::Columns(batch);
    let censored = match batch.column_by_name(CENSORED_COLUMN) {
        Some(_) => c.required_boolean(CENSORED_COLUMN)?,
        None => vec![false; batch.num_rows()],
    };
    // Null exactly where the loop is censored; anywhere else a null is a broken file.
    for name in UNKNOWN_WHEN_CENSORED {
        let column = batch.column_by_name(name).ok_or_else(|| TableError::MissingColumn(name.to_string()))?;
        if let Some(i) = (0..batch.num_rows()).find(|&i| column.is_null(i) != censored[i]) {
            return Err(TableError::Censored { row: first_row + i, column: name, censored: censored[i] });
        }
    }
    let rows = if censored.contains(&true) {
        OutcomeRow::read_batch(&crate::columns::Columns(&with_placeholders(batch)?), first_row)?
    } else {
        OutcomeRow::read_batch(&c, first_row)?
    };
    for (outcome, censored) in rows.into_iter().zip(censored) {
        row(outcome, censored);
    }
    Ok(())
}

/// `batch` with the censored loops' unknowns (the nulls of [`UNKNOWN_WHEN_CENSORED`]) read as the
/// placeholders of [`RescoredOutcome`].
fn with_placeholders(batch: &RecordBatch) -> Result<RecordBatch, TableError> {
    use arrow_array::{BooleanArray, Float64Array, StringArray};
    let c = crate::columns::Columns(batch);
    let names = OutcomeRow::COLUMNS;
    let mut columns = batch.columns().to_vec();
    let index = |name: &str| batch.schema().index_of(name).map_err(|_| TableError::MissingColumn(name.to_string()));
    columns[index(names.exit_reason)?] = Arc::new(StringArray::from_iter_values(
        c.text(names.exit_reason)?.iter().map(|exit| exit.as_deref().unwrap_or(CENSORED_EXIT.as_str()).to_string()),
    ));
    columns[index(names.passed)?] =
        Arc::new(BooleanArray::from_iter(c.boolean(names.passed)?.iter().map(|passed| Some(passed.unwrap_or(false)))));
    columns[index(names.final_score)?] =
        Arc::new(Float64Array::from_iter_values(c.float(names.final_score)?.iter().map(|s| s.unwrap_or(f64::NAN))));
    RecordBatch::try_new(batch.schema(), columns).map_err(TableError::Arrow)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::SCHEMA_VERSION;
    use arrow_array::Array;
    use arrow_array::cast::AsArray;

    pub(crate) fn outcome(task: &str, passed: bool) -> OutcomeRow {
        OutcomeRow {
            kind: Some("paper".into()),
            epoch: 1,
            revisions: 1,
            exit_reason: if passed { ExitReason::Pass } else { ExitReason::Stall },
            last_score: 8.5,
            final_score: 8.5,
            best_score: 8.5,
            best_round: 1,
            tokens_out: Some(12),
            wall_ms: 0.5,
            meta: Some("{}".into()),
            cost: passed.then_some(0.0125),
            critic_tokens_in: passed.then_some(40),
            critic_tokens_out: Some(7),
            ..OutcomeRow::bare(task, "feedback", passed, 2)
        }
    }

    #[test]
    fn outcomes_round_trip_through_parquet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outcomes.parquet");
        let mut writer = OutcomeWriter::create(&path).unwrap();
        let rows: Vec<OutcomeRow> = (0..10_000).map(|i| outcome(&format!("t{i}"), i % 3 == 0)).collect();
        for row in &rows {
            writer.push(row.clone()).unwrap();
        }
        writer.close().unwrap();
        assert_eq!(read_outcomes(&path).unwrap(), rows);
    }

    #[test]
    fn trajectories_write_nested_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectories.parquet");
        let mut writer = TrajectoryWriter::create(&path).unwrap();
        let critique = CritiqueColumns {
            score: 5.5,
            dims: BTreeMap::from([("clarity".to_string(), 7.0), ("evidence".to_string(), 4.0)]),
            issues: vec!["thin evidence".to_string()],
            critic_passed: Some(false),
            ..CritiqueColumns::default()
        };
        for round in 0..20_000u32 {
            writer
                .push(&TrajectoryRow {
                    run_id: "r",
                    config_id: "c",
                    arm: Arm::Feedback,
                    critic: "rubric",
                    task_id: "t",
                    kind: None,
                    epoch: 0,
                    round,
                    revisions: round,
                    critique: Cow::Borrowed(&critique),
                    passed: false,
                    decision: RowDecision::Policy(Decision::Revise),
                    is_best: round == 0,
                    best_score: 5.5,
                    draft_chars: 10,
                    draft: None,
                    gen_ms: 0.1,
                    critic_ms: 0.1,
                    critic_attempts: 1,
                    critic_error: None,
                    writer_error: None,
                    tokens_in: None,
                    tokens_out: None,
                    critic_tokens_in: None,
                    critic_tokens_out: None,
                    cost: None,
                    acted_on_critique: (round > 0).then_some(round % 2 == 0),
                    draft_truncated: None,
                    critic_truncated: None,
                    edit_share: (round > 0).then_some(0.25),
                })
                .unwrap();
        }
        writer.close().unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        assert_eq!(reader.metadata().file_metadata().num_rows(), 20_000);
        assert_eq!(reader.schema().fields(), trajectory_schema().fields());
        assert_eq!(reader.schema().metadata()["critbench.schema_version"], SCHEMA_VERSION.to_string());
        let batch = reader.build().unwrap().next().unwrap().unwrap();
        let dims = batch.column_by_name("dims").unwrap().as_map();
        assert_eq!(dims.value(0).len(), 2);
        // Whether the writer acted on the critique: unknown for a first draft, then as written.
        let acted = batch.column_by_name("acted_on_critique").unwrap().as_boolean();
        assert!(acted.is_null(0) && !acted.value(1) && acted.value(2));
    }

    #[test]
    fn a_censored_loop_has_no_outcome_and_only_the_readers_that_ask_see_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outcomes.parquet");
        let mut writer = RescoredOutcomeWriter::create(&path).unwrap();
        let rows: Vec<RescoredOutcome> = (0..20)
            .map(|i| RescoredOutcome { outcome: outcome(&format!("t{i}"), i % 2 == 0), censored: i % 5 == 0 })
            .collect();
        for row in &rows {
            writer.push(row.clone()).unwrap();
        }
        writer.close().unwrap();

        // Nulls where the outcome is unknown, so no reader takes a censored loop for a fail.
        let file = std::fs::File::open(&path).unwrap();
        let batch = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(batch.schema().fields().last().unwrap().name(), "censored");
        for name in ["exit_reason", "passed", "final_score"] {
            assert_eq!(batch.column_by_name(name).unwrap().null_count(), 4, "{name}");
        }
        assert_eq!(batch.column_by_name("first_score").unwrap().null_count(), 0);

        let back = read_rescored_outcomes(&path).unwrap();
        assert_eq!(back.len(), 20);
        for (read, written) in back.iter().zip(&rows) {
            assert_eq!(read.censored, written.censored);
            if written.censored {
                assert_eq!((read.outcome.exit_reason, read.outcome.passed), (CENSORED_EXIT, false));
                assert!(read.outcome.final_score.is_nan());
                assert_eq!(read.outcome.first_score, written.outcome.first_score);
            } else {
                assert_eq!(read, written);
            }
        }
        let known: Vec<OutcomeRow> = rows.iter().filter(|r| !r.censored).map(|r| r.outcome.clone()).collect();
        assert_eq!(read_outcomes(&path).unwrap(), known, "censored loops are left out");

        let mut seen = Vec::new();
        for_each_outcome_stats(&path, |row| {
            seen.push((row.task_id.to_string(), row.passed));
            Ok::<_, std::convert::Infallible>(())
        })
        .unwrap();
        assert_eq!(seen, known.iter().map(|r| (r.task_id.clone(), r.passed)).collect::<Vec<_>>());
        let mut censored = Vec::new();
        for_each_outcome_stats_with_censored(&path, |row| {
            if row.censored {
                censored.push(row.task_id.to_string());
                assert!(!row.passed && row.exit_reason.is_none());
            }
            Ok::<_, std::convert::Infallible>(())
        })
        .unwrap();
        assert_eq!(censored, ["t0", "t5", "t10", "t15"]);
    }

    /// The columns FORMAT.md lists for `table` (its Columns section), in order.
    pub(crate) fn format_md_columns(table: &str) -> Vec<String> {
        let format = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/FORMAT.md")).unwrap();
        let prefix = format!("- `{table}`: `");
        let line = format.lines().find(|line| line.starts_with(&prefix)).unwrap_or_else(|| {
            panic!("docs/FORMAT.md lists no columns for {table} (a line starting {prefix:?} in its Columns section)")
        });
        let list = &line[prefix.len()..];
        list[..list.find('`').unwrap()].split(", ").map(str::to_string).collect()
    }

    #[test]
    fn the_outcome_columns_are_declared_once_and_are_those_format_md_lists() {
        let names: Vec<String> = outcome_schema().fields().iter().map(|field| field.name().clone()).collect();
        assert_eq!(names, format_md_columns("outcomes.parquet"));
        assert_eq!(names, OutcomeRow::names());
        let rescored: Vec<String> = rescored_outcome_schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(rescored[..names.len()], names[..]);
        assert_eq!(rescored[names.len()..], ["censored"]);
        // The readers ask for columns by the declaration's names: the stats reader's are all in it.
        for name in OUTCOME_STATS_COLUMNS {
            assert!(names.contains(&name.to_string()), "{name}");
        }
        assert_eq!(OutcomeRow::COLUMNS.final_draft, "final");
    }

    #[test]
    fn the_trajectory_columns_are_declared_once_and_are_those_format_md_lists() {
        let names: Vec<String> = trajectory_schema().fields().iter().map(|field| field.name().clone()).collect();
        assert_eq!(names, format_md_columns("trajectories.parquet"));
        assert_eq!(names, TrajectoryRow::names());
        assert_eq!(TrajectoryRow::COLUMNS.critique, CritiqueColumns::NAMES);
        assert_eq!(TrajectoryRow::COLUMNS.decision, ["decision", "exit_reason"]);
    }

    /// Rows of every shape a run writes: each arm, a revise, a stop for each exit reason, an
    /// adjudication; text and nulls in every optional column somewhere.
    fn trajectory_rows(critiques: &[CritiqueColumns]) -> Vec<TrajectoryRow<'_>> {
        let decisions: Vec<RowDecision> = std::iter::once(RowDecision::Policy(Decision::Revise))
            .chain(ExitReason::ALL.map(|exit| RowDecision::Policy(Decision::Stop(exit))))
            .chain([RowDecision::Adjudicate])
            .collect();
        (0..crate::buffered::BATCH_ROWS as u32 + 100)
            .map(|i| {
                let critique = &critiques[i as usize % critiques.len()];
                TrajectoryRow {
                    arm: Arm::ALL[i as usize % Arm::ALL.len()],
                    kind: i.is_multiple_of(2).then_some("paper"),
                    epoch: i % 3,
                    decision: decisions[i as usize % decisions.len()],
                    is_best: i.is_multiple_of(5),
                    draft: i.is_multiple_of(3).then_some("a draft"),
                    gen_ms: f64::from(i) / 8.0,
                    critic_error: i.is_multiple_of(7).then_some("no answer within 60 s"),
                    writer_error: i.is_multiple_of(11).then_some("round 2 (revise): the writer exited with status 3"),
                    tokens_in: i.is_multiple_of(2).then_some(u64::from(i) * 3),
                    critic_tokens_out: i.is_multiple_of(4).then_some(9),
                    cost: i.is_multiple_of(4).then_some(f64::from(i) * 1e-6),
                    acted_on_critique: (i % 3 != 0).then_some(i.is_multiple_of(2)),
                    draft_truncated: (i % 5 != 0).then_some(i.is_multiple_of(11)),
                    critic_truncated: i.is_multiple_of(6).then_some(u64::from(i % 3)),
                    edit_share: i.is_multiple_of(3).then_some(f64::from(i % 10) / 10.0),
                    ..TrajectoryRow::bare(if i < 4000 { "t0" } else { "t1" }, i % 4, critique)
                }
            })
            .collect()
    }

    #[test]
    fn trajectories_round_trip_through_parquet_with_core_s_enums() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectories.parquet");
        let critiques = [
            CritiqueColumns::scored(3.0),
            CritiqueColumns {
                dims: BTreeMap::from([("clarity".to_string(), 7.0)]),
                issues: vec!["thin evidence".to_string()],
                rationale: Some("why".to_string()),
                critic_passed: Some(true),
                ..CritiqueColumns::scored(8.5)
            },
        ];
        let rows = trajectory_rows(&critiques);
        let mut writer = TrajectoryWriter::create(&path).unwrap();
        for row in &rows {
            writer.push(row).unwrap();
        }
        writer.close().unwrap();
        let mut back = Vec::new();
        let (mut first_row, mut batches) = (0, Vec::new());
        Scan::all()
            .for_each(&[&path], |scanned| {
                batches.push(scanned.batch.clone());
                Ok(())
            })
            .unwrap();
        for batch in &batches {
            back.extend(TrajectoryRow::read_batch(&crate::columns::Columns(batch), first_row).unwrap());
            first_row += batch.num_rows();
        }
        assert_eq!(back, rows);
        assert!(back.iter().all(|row| matches!(row.critique, Cow::Owned(_))), "a reader owns its critiques");
    }

    /// The batches of a trajectories file, and how many rows each of its row groups holds.
    fn batches_and_groups(path: &Path) -> (Vec<RecordBatch>, Vec<i64>) {
        let mut batches = Vec::new();
        Scan::all()
            .for_each(&[path], |scanned| {
                batches.push(scanned.batch.clone());
                Ok(())
            })
            .unwrap();
        let reader = parquet::file::reader::SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
        let groups = parquet::file::reader::FileReader::metadata(&reader).row_groups().iter().map(|g| g.num_rows());
        (batches, groups.collect())
    }

    /// The rows of `batches`, in order.
    fn rows_of(batches: &[RecordBatch]) -> Vec<TrajectoryRow<'_>> {
        let mut rows = Vec::new();
        for batch in batches {
            rows.extend(TrajectoryRow::read_batch(&crate::columns::Columns(batch), rows.len()).unwrap());
        }
        rows
    }

    /// A run's loop workers build each chunk's rows as batches and the sink appends them: the file
    /// holds the rows pushed one by one, in the same order and in the same row groups, however
    /// the chunks cut the rows (across a batch, a few rows, or none at all) and whatever was
    /// pushed between.
    #[test]
    fn batches_built_apart_append_as_the_rows_pushed_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let critiques: Vec<CritiqueColumns> = (0..7).map(|i| CritiqueColumns::scored(f64::from(i))).collect();
        let ids: Vec<String> = (0..1000).map(|i| format!("t{i}")).collect();
        let row = |i: usize| TrajectoryRow {
            draft: i.is_multiple_of(3).then_some("a draft"),
            ..TrajectoryRow::bare(&ids[i % ids.len()], (i % 4) as u32, &critiques[i % critiques.len()])
        };
        let total = 70_000;
        let pushed = dir.path().join("pushed.parquet");
        let mut writer = TrajectoryWriter::create(&pushed).unwrap();
        for i in 0..total {
            writer.push(&row(i)).unwrap();
        }
        writer.close().unwrap();

        let appended = dir.path().join("appended.parquet");
        let mut writer = TrajectoryWriter::create(&appended).unwrap();
        let mut at = 0;
        // Small chunks too (a model-backed run's are a few tasks each), which the file holds back
        // and writes together.
        for (chunk, size) in [3000, 9000, 0, 12_345, 1, 7, 300, 2].into_iter().cycle().enumerate() {
            if at == total {
                break;
            }
            let size = size.min(total - at);
            if chunk % 4 == 3 {
                // A row pushed between appended chunks keeps its place.
                writer.push(&row(at)).unwrap();
                at += 1;
                continue;
            }
            let mut batches = TrajectoryBatches::with_capacity(size);
            for i in at..at + size {
                batches.push(&row(i));
            }
            let batches = batches.finish();
            assert_eq!(batches.rows(), size);
            writer.append(batches).unwrap();
            at += size;
        }
        writer.close().unwrap();

        let (expected, groups) = batches_and_groups(&pushed);
        let (written, written_groups) = batches_and_groups(&appended);
        assert_eq!(rows_of(&expected).len(), total);
        assert_eq!(groups, vec![65_536, 70_000 - 65_536]);
        assert_eq!(written_groups, groups);
        assert!(rows_of(&written) == rows_of(&expected), "the appended file holds other rows");
    }

    /// Each dictionary column is a declared column of the outcomes or the trajectories, so a
    /// renamed column cannot leave its encoding behind.
    #[test]
    fn every_dictionary_column_is_a_declared_column() {
        let (outcomes, trajectories) = (outcome_schema(), trajectory_schema());
        for name in DICTIONARY_COLUMNS {
            assert!(
                outcomes.index_of(name).is_ok() || trajectories.index_of(name).is_ok(),
                "`{name}` is a column of neither table"
            );
        }
    }

    #[test]
    fn a_trajectory_arm_or_decision_that_is_not_core_s_is_refused_with_its_file_row_and_column() {
        let dir = tempfile::tempdir().unwrap();
        for (column, text, expected) in [
            ("arm", Some("feedbak"), "row 1: column `arm` holds `feedbak`, which is not an arm"),
            ("decision", Some("halt"), "row 1: column `decision` holds `halt`, which is not a decision"),
            ("decision", Some("stop"), "row 1: column `exit_reason` is null in a `stop` row"),
            ("exit_reason", Some("pass"), "row 1: column `exit_reason` holds `pass` in a `revise` row"),
        ] {
            let path = dir.path().join(format!("{column}-{}.parquet", text.unwrap_or("null")));
            crate::testing::trajectories_with(&path, column, text);
            let expected = format!("{}: {expected}", path.display());
            let error = crate::recorded::read_recorded_loops(&path).unwrap_err().to_string();
            assert!(error.starts_with(&expected), "{error}");
        }
        // A stop row with an exit reason that is not core's is refused too.
        let path = dir.path().join("stop.parquet");
        crate::testing::trajectories_with(&path, "exit_reason", Some("timeout"));
        let batch = {
            let mut batches = Vec::new();
            Scan::all()
                .for_each(&[&path], |scanned| {
                    batches.push(scanned.batch.clone());
                    Ok(())
                })
                .unwrap();
            batches.remove(0)
        };
        let mut columns = batch.columns().to_vec();
        let decision = trajectory_schema().index_of("decision").unwrap();
        columns[decision] = Arc::new(arrow_array::StringArray::from(vec!["revise", "stop"]));
        let batch = RecordBatch::try_new(batch.schema(), columns).unwrap();
        let error = TrajectoryRow::read_batch(&crate::columns::Columns(&batch), 40).unwrap_err().to_string();
        assert!(
            error.starts_with("row 41: column `exit_reason` holds `timeout`, which is not an exit reason"),
            "{error}"
        );
    }

    /// An outcomes file whose `column` holds `text` in its second row, otherwise as written.
    fn outcomes_with(path: &Path, column: &str, text: &str) {
        let rows = [outcome("t0", true), outcome("t1", false)];
        let mut columns = outcome_columns(&rows, |row| row);
        let index = outcome_schema().index_of(column).unwrap();
        let mut values: Vec<String> =
            columns[index].as_string::<i32>().iter().map(|v| v.unwrap().to_string()).collect();
        values[1] = text.to_string();
        columns[index] = Arc::new(arrow_array::StringArray::from(values));
        let mut sink = ParquetSink::create(path, outcome_schema(), "outcomes", DICTIONARY_COLUMNS).unwrap();
        sink.write(columns).unwrap();
        sink.close().unwrap();
    }

    #[test]
    fn an_arm_or_exit_reason_that_is_not_core_s_is_refused_with_its_file_row_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outcomes.parquet");
        for (column, text, what) in [
            ("arm", "feedbak", "an arm"),
            ("exit_reason", "timeout", "an exit reason"),
            ("exit_reason", "", "an exit reason"),
        ] {
            outcomes_with(&path, column, text);
            let expected = format!("{}: row 1: column `{column}` holds `{text}`, which is not {what}", path.display());
            let error = read_outcomes(&path).unwrap_err().to_string();
            assert!(error.starts_with(&expected), "{error}");
            let error =
                for_each_outcome_stats(&path, |_| Ok::<_, std::convert::Infallible>(())).unwrap_err().to_string();
            assert!(error.starts_with(&expected), "{error}");
        }
        // The strings of the output contract read back as core's enums.
        outcomes_with(&path, "arm", "feedback+memory");
        assert_eq!(read_outcomes(&path).unwrap()[1].arm, Arm::FeedbackMemory);
    }

    #[test]
    fn a_row_the_caller_refuses_names_the_file_row_and_task_and_keeps_the_caller_s_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outcomes.parquet");
        let mut writer = OutcomeWriter::create(&path).unwrap();
        for task in ["t0", "t1"] {
            writer.push(outcome(task, true)).unwrap();
        }
        writer.close().unwrap();
        let error = for_each_outcome_stats(&path, |row| match row.task_id {
            "t1" => Err(std::io::Error::other("the caller's reason")),
            _ => Ok(()),
        })
        .unwrap_err();
        assert_eq!(error.to_string(), format!("{}: row 1 (task `t1`): the caller's reason", path.display()));
        let StorageError::Table { source, .. } = &error else { panic!("{error:?}") };
        assert!(matches!(**source, TableError::RefusedRow { row: 1, .. }), "{source:?}");
        let cause = std::error::Error::source(source.as_ref()).expect("the caller's error is kept");
        assert!(cause.downcast_ref::<std::io::Error>().is_some(), "{cause:?}");
    }

    #[test]
    fn a_file_that_is_not_parquet_is_unreadable_with_parquet_s_error_as_its_cause() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outcomes.parquet");
        std::fs::write(&path, "not parquet").unwrap();
        let error = read_outcomes(&path).unwrap_err();
        let prefix = format!("{}: not a readable Parquet file: ", path.display());
        assert!(error.to_string().starts_with(&prefix), "{error}");
        let cause = std::error::Error::source(&error).expect("Parquet's error is kept");
        assert!(cause.downcast_ref::<parquet::errors::ParquetError>().is_some(), "{cause:?}");
        assert_eq!(error.to_string(), format!("{prefix}{cause}"));
    }

    #[test]
    fn missing_outcome_file_is_an_io_error() {
        let error = read_outcomes(Path::new("/nonexistent/outcomes.parquet")).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/outcomes.parquet"));
    }
}
