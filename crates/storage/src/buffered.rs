//! Writing owned rows to Parquet in batches: rows wait in memory until a batch is full, then a
//! table-specific function turns them into columns (the builders its declaration derives,
//! `declare_columns!`; [`RowColumns`] for a column a table writes differently).

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Float64Array, StringArray};
use arrow_schema::SchemaRef;

use crate::parquet_sink::{ParquetSink, StorageError};

/// Rows held before they are handed to the Parquet writer.
pub(crate) const BATCH_ROWS: usize = 8192;

/// A row type with a Parquet table of its own.
pub trait TableRow: Sized {
    /// The table's name, in the file's key-value metadata (`critbench.table`).
    const TABLE: &'static str;
    /// The columns stored dictionary-encoded (those of them the schema has).
    const DICTIONARY: &'static [&'static str];
    /// The table's Arrow schema.
    fn schema() -> SchemaRef;
    /// The batch's columns, in the order of [`TableRow::schema`].
    fn columns(rows: &[Self]) -> Vec<ArrayRef>;
}

/// A Parquet file of owned rows, written a batch at a time.
pub struct TableWriter<R: TableRow> {
    sink: ParquetSink,
    pending: Vec<R>,
}

impl<R: TableRow> TableWriter<R> {
    /// Creates the file at `path` (which must not exist).
    pub fn create(path: &Path) -> Result<Self, StorageError> {
        Ok(TableWriter { sink: ParquetSink::create(path, R::schema(), R::TABLE, R::DICTIONARY)?, pending: Vec::new() })
    }

    /// Adds a row; a full batch is written.
    pub fn push(&mut self, row: R) -> Result<(), StorageError> {
        self.pending.push(row);
        if self.pending.len() >= BATCH_ROWS { self.flush() } else { Ok(()) }
    }

    fn flush(&mut self) -> Result<(), StorageError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let columns = R::columns(&self.pending);
        self.pending.clear();
        self.sink.write(columns)
    }

    /// Writes what is left and the footer, and waits until the file is on disk.
    pub fn close(mut self) -> Result<(), StorageError> {
        self.flush()?;
        self.sink.close()
    }
}

/// One column at a time out of a batch of rows.
pub(crate) struct RowColumns<'a, R>(pub &'a [R]);

impl<R> RowColumns<'_, R> {
    pub fn optional_text(&self, f: impl Fn(&R) -> Option<&str>) -> ArrayRef {
        Arc::new(StringArray::from_iter(self.0.iter().map(f)))
    }

    pub fn optional_float(&self, f: impl Fn(&R) -> Option<f64>) -> ArrayRef {
        Arc::new(Float64Array::from_iter(self.0.iter().map(f)))
    }

    pub fn boolean(&self, f: impl Fn(&R) -> bool) -> ArrayRef {
        Arc::new(BooleanArray::from_iter(self.0.iter().map(|r| Some(f(r)))))
    }

    pub fn optional_boolean(&self, f: impl Fn(&R) -> Option<bool>) -> ArrayRef {
        Arc::new(BooleanArray::from_iter(self.0.iter().map(f)))
    }
}
