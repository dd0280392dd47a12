//! Writing owned rows to Parquet in batches: rows wait in memory until a batch is full, then a
//! table-specific function turns them into columns (the builders its declaration derives,
//! `declare_columns!`; [`RowColumns`] for a column a table writes differently).
//!
//! The columns can also be built away from the file ([`TableBatches`], [`Batches`]): a run's loop
//! workers build each chunk's, and the one writer appends them in order, encoding only.

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

/// A table's rows as Arrow columns, a batch at a time (at most 8,192 rows each), built
/// before they are appended to the table's file.
#[derive(Debug, Default)]
pub struct Batches {
    batches: Vec<Vec<ArrayRef>>,
    rows: usize,
}

impl Batches {
    /// Rows in all the batches.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Adds a batch of `rows` rows (none: nothing is added).
    pub(crate) fn push(&mut self, columns: Vec<ArrayRef>, rows: usize) {
        if rows > 0 {
            self.batches.push(columns);
            self.rows += rows;
        }
    }

    /// Writes every batch to `sink`, in order.
    pub(crate) fn write_to(self, sink: &mut ParquetSink) -> Result<(), StorageError> {
        self.batches.into_iter().try_for_each(|columns| sink.write(columns))
    }
}

/// Owned rows turned into columns away from any file, a batch at a time: what a loop worker
/// builds of its chunk for [`TableWriter::append`].
pub struct TableBatches<R: TableRow> {
    pending: Vec<R>,
    done: Batches,
}

impl<R: TableRow> Default for TableBatches<R> {
    fn default() -> Self {
        TableBatches { pending: Vec::new(), done: Batches::default() }
    }
}

impl<R: TableRow> TableBatches<R> {
    /// Adds a row; a full batch becomes columns.
    pub fn push(&mut self, row: R) {
        self.pending.push(row);
        if self.pending.len() >= BATCH_ROWS {
            self.seal();
        }
    }

    fn seal(&mut self) {
        if !self.pending.is_empty() {
            self.done.push(R::columns(&self.pending), self.pending.len());
            self.pending.clear();
        }
    }

    /// The columns of every row pushed.
    pub fn finish(mut self) -> Batches {
        self.seal();
        self.done
    }
}

/// A Parquet file of owned rows, written a batch at a time.
pub struct TableWriter<R: TableRow> {
    sink: ParquetSink,
    rows: TableBatches<R>,
}

impl<R: TableRow> TableWriter<R> {
    /// Creates the file at `path` (which must not exist).
    pub fn create(path: &Path) -> Result<Self, StorageError> {
        let sink = ParquetSink::create(path, R::schema(), R::TABLE, R::DICTIONARY)?;
        Ok(TableWriter { sink, rows: TableBatches::default() })
    }

    /// Adds a row; a full batch is written.
    pub fn push(&mut self, row: R) -> Result<(), StorageError> {
        self.rows.push(row);
        if self.rows.done.rows() > 0 { self.flush() } else { Ok(()) }
    }

    fn flush(&mut self) -> Result<(), StorageError> {
        std::mem::take(&mut self.rows).finish().write_to(&mut self.sink)
    }

    /// Appends rows built elsewhere ([`TableBatches`]) after the rows pushed so far.
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
