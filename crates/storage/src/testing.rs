//! Fixtures for the tests of crates that read critbench's tables (the `testing` feature): tables
//! holding what this version never writes, to show how a reader refuses them.

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_schema::Schema;

use crate::critique_columns::CritiqueColumns;
use crate::parquet_sink::ParquetSink;
use crate::tables::{DICTIONARY_COLUMNS, TrajectoryBuilders, TrajectoryRow, trajectory_schema};

/// A trajectories file of two rounds of task `t` whose `column` holds `text` (null for `None`) in
/// its second row.
pub fn trajectories_with(path: &Path, column: &str, text: Option<&str>) {
    let critique = CritiqueColumns::scored(4.0);
    let rows = [TrajectoryRow::bare("t", 0, &critique), TrajectoryRow::bare("t", 1, &critique)];
    trajectories_holding(path, &rows, column, 1, text);
}

/// A trajectories file of `rows` (row groups closed as the writer closes them), except that
/// `column` holds `text` (null for `None`) in row `at`: what this version never writes.
pub fn trajectories_holding(path: &Path, rows: &[TrajectoryRow<'_>], column: &str, at: usize, text: Option<&str>) {
    let mut builders = TrajectoryBuilders::with_capacity(rows.len());
    rows.iter().for_each(|row| builders.append(row));
    let mut columns = builders.finish();
    let index = trajectory_schema().index_of(column).unwrap();
    let mut values: Vec<Option<String>> =
        columns[index].as_string::<i32>().iter().map(|v| v.map(str::to_string)).collect();
    values[at] = text.map(str::to_string);
    columns[index] = Arc::new(arrow_array::StringArray::from(values));
    let schema = Arc::new(Schema::new(
        trajectory_schema().fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect::<Vec<_>>(),
    ));
    let mut sink = ParquetSink::create(path, schema, "trajectories", DICTIONARY_COLUMNS).unwrap();
    sink.write(columns).unwrap();
    sink.close().unwrap();
}
