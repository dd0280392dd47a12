//! One way into a run's tables: the files of a table, a column projection and an optional task
//! filter, read as record batches that each reader folds into what it needs.
//!
//! Every file is checked first to be a table of this schema version (its footer's
//! `critbench.schema_version`): a table an earlier development build wrote is refused, naming its
//! version, never read with nulls for what it lacks. Only the columns asked for are decoded (a
//! Parquet projection: the others are never decompressed). With a task filter, the row groups whose `task_id` statistics
//! (min/max) hold none of the tasks are not read at all, and of the rest only the rows of the tasks
//! have their other columns decoded (a row filter); each row is still named by its position in its
//! file. Memory is one batch.
//!
//! ```no_run
//! use critbench_storage::scan::Scan;
//! let files = [std::path::PathBuf::from("reports/demo/trajectories.parquet")];
//! let tasks = std::collections::BTreeSet::from(["rag-0001".to_string()]);
//! let mut rounds = 0;
//! Scan::columns(&["task_id", "round"], &[]).tasks(&tasks).for_each(&files, |batch| {
//!     rounds += batch.num_rows();
//!     Ok(())
//! })?;
//! # Ok::<(), critbench_storage::tables::StorageError>(())
//! ```

use std::collections::BTreeSet;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{BooleanArray, RecordBatch};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowPredicateFn, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowFilter};
use parquet::file::metadata::ParquetMetaData;

use crate::columns::{Columns, TableError};
use crate::error::StorageError;
use crate::schema::{SCHEMA_VERSION, SCHEMA_VERSION_KEY};

/// The column every table keys its rows by task with, which a task filter reads.
const TASK_ID: &str = "task_id";

/// The name a scan gives the row numbers it asks Parquet for when it skips rows: not a column
/// critbench writes.
const ROW_NUMBER: &str = "critbench.row_number";

/// What to read of a table's files: which columns, and which tasks' rows.
#[derive(Clone, Copy, Debug)]
pub struct Scan<'a> {
    /// `None`: every column.
    columns: Option<Projection<'a>>,
    /// `None`: every row.
    tasks: Option<&'a BTreeSet<String>>,
}

/// The columns a scan decodes.
#[derive(Clone, Copy, Debug)]
struct Projection<'a> {
    /// Columns a file must have: one it lacks is an error naming it.
    required: &'a [&'a str],
    /// Columns read when the file has them, left out of the batch when it does not.
    optional: &'a [&'a str],
}

/// What a scan read: how many of its files' row groups, of how many.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scanned {
    /// Row groups read: all of them, or with a task filter those whose `task_id` range holds one
    /// of the tasks.
    pub groups_read: usize,
    /// Row groups in the files.
    pub groups_total: usize,
}

/// One batch of a scan: its rows, and where each is in its file.
pub struct ScanBatch<'a> {
    /// The file the rows are from.
    pub path: &'a Path,
    /// The rows, with the columns asked for (in the file's order: look them up by name).
    pub batch: &'a RecordBatch,
    rows: FileRows,
}

/// Where the rows of a batch are in their file.
enum FileRows {
    /// One after the other from this row: nothing was skipped.
    From(usize),
    /// Each row's own position: row groups or rows were skipped.
    Numbered(Vec<usize>),
}

impl<'a> ScanBatch<'a> {
    /// Typed access to the batch's columns by name.
    pub fn columns(&self) -> Columns<'a> {
        Columns(self.batch)
    }

    /// The rows of the batch.
    pub fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }

    /// The position in its file (counted from 0) of the batch's row `i`, to name a row at fault.
    pub fn row(&self, i: usize) -> usize {
        match &self.rows {
            FileRows::From(first) => first + i,
            FileRows::Numbered(rows) => rows[i],
        }
    }
}

impl<'a> Scan<'a> {
    /// Every column of every row.
    pub fn all() -> Scan<'a> {
        Scan { columns: None, tasks: None }
    }

    /// The columns `required` (a file without one is an error naming it) and those of `optional`
    /// a file has, of every row.
    pub fn columns(required: &'a [&'a str], optional: &'a [&'a str]) -> Scan<'a> {
        Scan { columns: Some(Projection { required, optional }), tasks: None }
    }

    /// Only the rows whose `task_id` is one of `tasks`.
    pub fn tasks(self, tasks: &'a BTreeSet<String>) -> Scan<'a> {
        Scan { tasks: Some(tasks), ..self }
    }

    /// Calls `each` on every batch of `files`, one file after the other. A row `each` refuses
    /// (its `TableError`) is reported with its file.
    pub fn for_each(
        &self,
        files: &[impl AsRef<Path>],
        mut each: impl FnMut(&ScanBatch<'_>) -> Result<(), TableError>,
    ) -> Result<Scanned, StorageError> {
        let mut scanned = Scanned::default();
        for path in files {
            self.file(path.as_ref(), &mut scanned, &mut each)?;
        }
        Ok(scanned)
    }

    fn file(
        &self,
        path: &Path,
        scanned: &mut Scanned,
        each: &mut dyn FnMut(&ScanBatch<'_>) -> Result<(), TableError>,
    ) -> Result<(), StorageError> {
        let corrupt = |source| StorageError::table(path, source);
        let unreadable = |source| StorageError::Unreadable { path: path.into(), source };
        let file = std::fs::File::open(path).map_err(|source| StorageError::Io { path: path.into(), source })?;
        // Rows are skipped: the reader numbers the rows it reads, so that a row that holds what
        // this version never writes is named by its position in the file.
        let options = match self.tasks {
            Some(_) => ArrowReaderOptions::new().with_virtual_columns(vec![row_number_field()]).map_err(unreadable)?,
            None => ArrowReaderOptions::new(),
        };
        let mut builder = ParquetRecordBatchReaderBuilder::try_new_with_options(file, options).map_err(unreadable)?;
        check_version(path, builder.metadata())?;
        let schema = builder.schema().clone();
        let root = |name: &str| schema.column_with_name(name).map(|(index, _)| index);
        let groups_total = builder.metadata().num_row_groups();
        let mut groups_read = groups_total;
        if let Some(projection) = self.columns {
            let mut roots = Vec::with_capacity(projection.required.len() + projection.optional.len());
            for name in projection.required {
                roots.push(root(name).ok_or_else(|| corrupt(TableError::MissingColumn(name.to_string())))?);
            }
            roots.extend(projection.optional.iter().filter_map(|name| root(name)));
            let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
            builder = builder.with_projection(mask);
        }
        if let Some(tasks) = self.tasks {
            let task_root = root(TASK_ID).ok_or_else(|| corrupt(TableError::MissingColumn(TASK_ID.to_string())))?;
            let groups = groups_holding(builder.metadata(), tasks)
                .ok_or_else(|| corrupt(TableError::MissingColumn(TASK_ID.to_string())))?;
            groups_read = groups.len();
            let wanted = Arc::new(tasks.clone());
            let task_only = ProjectionMask::roots(builder.parquet_schema(), [task_root]);
            let predicate = ArrowPredicateFn::new(task_only, move |batch| {
                let ids = batch
                    .column(0)
                    .as_string_opt::<i32>()
                    .ok_or_else(|| arrow_schema::ArrowError::SchemaError(format!("column `{TASK_ID}` is not utf8")))?;
                Ok(ids.iter().map(|id| Some(id.is_some_and(|id| wanted.contains(id)))).collect::<BooleanArray>())
            });
            builder = builder.with_row_groups(groups).with_row_filter(RowFilter::new(vec![Box::new(predicate)]));
        }
        scanned.groups_read += groups_read;
        scanned.groups_total += groups_total;
        let reader = builder.build().map_err(|source| StorageError::Projection { path: path.into(), source })?;
        let mut first_row = 0;
        for batch in reader {
            let batch = batch.map_err(|source| StorageError::Decode { path: path.into(), source })?;
            let rows = match self.tasks {
                Some(_) => FileRows::Numbered(row_numbers(&batch).map_err(corrupt)?),
                None => FileRows::From(first_row),
            };
            first_row += batch.num_rows();
            each(&ScanBatch { path, batch: &batch, rows }).map_err(corrupt)?;
        }
        Ok(())
    }
}

/// Refuses a file that is not a table of this schema version, naming the version that wrote it.
fn check_version(path: &Path, metadata: &ParquetMetaData) -> Result<(), StorageError> {
    let found = metadata
        .file_metadata()
        .key_value_metadata()
        .and_then(|pairs| pairs.iter().find(|kv| kv.key == SCHEMA_VERSION_KEY))
        .map(|kv| kv.value.clone().unwrap_or_default());
    match found {
        Some(version) if version == SCHEMA_VERSION.to_string() => Ok(()),
        found => Err(StorageError::OtherVersion { path: path.into(), found }),
    }
}

/// The row groups whose `task_id` min/max statistics admit one of `tasks` (a group without them
/// is read); `None` when the file has no `task_id` column.
fn groups_holding(metadata: &ParquetMetaData, tasks: &BTreeSet<String>) -> Option<Vec<usize>> {
    let leaf = metadata.file_metadata().schema_descr().columns().iter().position(|c| c.path().string() == TASK_ID)?;
    fn text(bytes: Option<&[u8]>) -> Option<Option<&str>> {
        bytes.map(|bytes| std::str::from_utf8(bytes).ok())
    }
    let groups = metadata.row_groups().iter().enumerate().filter(|(_, group)| {
        let Some(stats) = group.column(leaf).statistics() else { return true };
        let (lower, upper) = match (text(stats.min_bytes_opt()), text(stats.max_bytes_opt())) {
            // A bound that is not text bounds nothing.
            (Some(None), _) | (_, Some(None)) => return true,
            (min, max) => (min.flatten(), max.flatten()),
        };
        if lower.zip(upper).is_some_and(|(lower, upper)| lower > upper) {
            return true;
        }
        let lower = lower.map_or(Bound::Unbounded, Bound::Included);
        let upper = upper.map_or(Bound::Unbounded, Bound::Included);
        tasks.range::<str, _>((lower, upper)).next().is_some()
    });
    Some(groups.map(|(i, _)| i).collect())
}

/// A virtual column of each row's position in its file (counted from 0), for a scan that skips
/// rows (a row filter, row groups left out) and must still name a row by its position.
fn row_number_field() -> arrow_schema::FieldRef {
    Arc::new(
        arrow_schema::Field::new(ROW_NUMBER, arrow_schema::DataType::Int64, false)
            .with_extension_type(parquet::arrow::RowNumber),
    )
}

/// The file row of each row of a batch read with [`row_number_field`].
fn row_numbers(batch: &RecordBatch) -> Result<Vec<usize>, TableError> {
    let numbers = batch
        .column_by_name(ROW_NUMBER)
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .ok_or_else(|| TableError::MissingColumn(ROW_NUMBER.to_string()))?;
    Ok(numbers.values().iter().map(|&n| usize::try_from(n).unwrap_or(0)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::critique_columns::CritiqueColumns;
    use crate::tables::{TrajectoryRow, TrajectoryWriter};

    /// Tasks `a`, `b` and `c` over two row groups (the writer closes one at 65,536 rows), `b`
    /// straddling both; each row's `round` is its position in the file.
    fn three_tasks(path: &Path) {
        let critique = CritiqueColumns::scored(5.0);
        let mut writer = TrajectoryWriter::create(path).unwrap();
        for row in 0..70_000u32 {
            let task = match row {
                0..60_000 => "a",
                60_000..67_000 => "b",
                _ => "c",
            };
            writer.push(&TrajectoryRow::bare(task, row, &critique)).unwrap();
        }
        writer.close().unwrap();
    }

    /// With a task filter, a group whose range holds none of the tasks is not read, only the
    /// tasks' rows reach the fold, and each is named by its position in its file.
    #[test]
    fn a_task_filter_reads_the_tasks_rows_only_each_named_by_its_row_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectories.parquet");
        three_tasks(&path);
        let scan = |tasks: &[&str]| {
            let tasks: BTreeSet<String> = tasks.iter().map(|t| t.to_string()).collect();
            let mut seen: Vec<(String, usize, u32)> = Vec::new();
            let scanned = Scan::columns(&["task_id", "round"], &["no_such_column"])
                .tasks(&tasks)
                .for_each(&[&path], |batch| {
                    assert_eq!(batch.path, path);
                    let c = batch.columns();
                    let (task, round) = (c.text_array("task_id")?, c.int32_array("round")?);
                    assert!(batch.batch.column_by_name("draft").is_none(), "a column not asked for is not read");
                    for i in 0..batch.num_rows() {
                        seen.push((task.value(i).to_string(), batch.row(i), round.value(i) as u32));
                    }
                    Ok(())
                })
                .unwrap();
            (seen, (scanned.groups_read, scanned.groups_total))
        };
        let (seen, groups) = scan(&["c"]);
        assert_eq!(groups, (1, 2));
        assert_eq!(seen.len(), 3_000);
        assert!(seen.iter().all(|(task, row, round)| task == "c" && *row as u32 == *round), "{:?}", &seen[..3]);
        let (seen, groups) = scan(&["a", "c"]);
        assert_eq!(groups, (2, 2));
        assert_eq!(seen.len(), 63_000);
        assert!(seen.iter().all(|(task, row, round)| task != "b" && *row as u32 == *round));
        assert_eq!(scan(&["0", "d"]), (Vec::new(), (0, 2)), "outside every group's range");
    }

    /// Without a filter every row comes, numbered from the file's first; a required column the
    /// file lacks is an error naming the file and the column.
    #[test]
    fn a_scan_numbers_every_row_and_names_a_missing_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectories.parquet");
        three_tasks(&path);
        let mut rows = 0;
        let scanned = Scan::columns(&["round"], &[])
            .for_each(&[&path, &path], |batch| {
                let round = batch.columns().int32_array("round")?;
                for i in 0..batch.num_rows() {
                    assert_eq!(batch.row(i), round.value(i) as usize);
                }
                rows += batch.num_rows();
                Ok(())
            })
            .unwrap();
        assert_eq!((rows, scanned.groups_read, scanned.groups_total), (140_000, 4, 4));
        let error = Scan::columns(&["round", "nothing"], &[]).for_each(&[&path], |_| Ok(())).unwrap_err();
        assert_eq!(error.to_string(), format!("{}: missing column `nothing`", path.display()));
    }

    /// An outcomes table as this version writes it, but with `version` (none for `None`) in its
    /// footer.
    fn outcomes_of_version(path: &Path, version: Option<&str>) {
        use parquet::file::metadata::KeyValue;
        let rows = [crate::tables::OutcomeRow::bare("t1", "feedback", true, 2)];
        let batch = RecordBatch::try_new(
            crate::tables::outcome_schema(),
            <crate::tables::OutcomeRow as crate::TableRow>::columns(&rows),
        )
        .unwrap();
        let mut pairs = vec![KeyValue::new(crate::schema::TABLE_KEY.to_string(), "outcomes".to_string())];
        if let Some(version) = version {
            pairs.push(KeyValue::new(SCHEMA_VERSION_KEY.to_string(), version.to_string()));
        }
        let properties =
            parquet::file::properties::WriterProperties::builder().set_key_value_metadata(Some(pairs)).build();
        let file = std::fs::File::create(path).unwrap();
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(properties)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
    }

    /// A table an earlier development build wrote (or one critbench did not write) is refused
    /// before anything is read, naming its version and saying to run the experiment again, by the
    /// scan and so by every reader of a run's tables.
    #[test]
    fn a_table_of_another_schema_version_is_refused_naming_its_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outcomes.parquet");
        outcomes_of_version(&path, Some(&SCHEMA_VERSION.to_string()));
        assert_eq!(crate::tables::read_outcomes(&path).unwrap().len(), 1);
        for (version, what) in [
            (Some("6"), "written by a critbench whose tables are schema version 6"),
            (Some("8"), "written by a critbench whose tables are schema version 8"),
            (Some("11"), "written by a critbench whose tables are schema version 11"),
            (None, "not a table critbench wrote (its footer has no critbench.schema_version)"),
        ] {
            outcomes_of_version(&path, version);
            let error = Scan::all().for_each(&[&path], |_| panic!("nothing is read")).unwrap_err();
            assert!(matches!(error, StorageError::OtherVersion { .. }), "{error:?}");
            assert_eq!(
                error.to_string(),
                format!(
                    "{}: {what}; this critbench reads tables of schema version 10 only\n  hint: run the experiment again \
                     with this critbench (docs/FORMAT.md's changelog says what changed)",
                    path.display()
                )
            );
            let error = crate::tables::read_outcomes(&path).unwrap_err();
            assert!(matches!(error, StorageError::OtherVersion { .. }), "{error:?}");
            let error = crate::tables::for_each_outcome_stats(&path, |_| Ok::<_, std::convert::Infallible>(()));
            assert!(matches!(error, Err(StorageError::OtherVersion { .. })), "{error:?}");
        }
    }
}
