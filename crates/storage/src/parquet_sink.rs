//! A Parquet file written batch by batch: ZSTD-compressed, row groups capped by size.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

pub use crate::error::StorageError;
use crate::schema::{SCHEMA_VERSION, SCHEMA_VERSION_KEY, TABLE_KEY};

/// Row groups close at whichever limit comes first, so wide rows (stored drafts) do not pile
/// up in memory.
const MAX_ROW_GROUP_ROWS: usize = 64 * 1024;
const MAX_ROW_GROUP_BYTES: usize = 64 * 1024 * 1024;

/// Batches of fewer rows are held and written together. What the Parquet writer spends on a
/// batch is mostly a step per column, whatever its rows: a model-backed run, whose chunks are a
/// task each, would otherwise spend more on that than on its rows.
const COALESCE_ROWS: usize = 1024;

pub(crate) struct ParquetSink {
    path: PathBuf,
    schema: SchemaRef,
    writer: ArrowWriter<BufWriter<File>>,
    /// Batches not written yet, fewer than [`COALESCE_ROWS`] rows in all.
    held: Vec<RecordBatch>,
    held_rows: usize,
}

impl ParquetSink {
    /// Creates the file of `table` at `path` (which must not exist); the columns of `dictionary`
    /// the schema has are stored dictionary-encoded.
    pub(crate) fn create(
        path: &Path,
        schema: SchemaRef,
        table: &str,
        dictionary: &[&str],
    ) -> Result<Self, StorageError> {
        let file = crate::files::create_new(path).map_err(|source| StorageError::Io { path: path.into(), source })?;
        let mut properties = WriterProperties::builder()
            // Dictionaries pay only for columns with few distinct values; building one for ids and
            // free text costs a hash per value and is then thrown away.
            .set_dictionary_enabled(false);
        for column in dictionary {
            properties = properties.set_column_dictionary_enabled(ColumnPath::from(*column), true);
        }
        let properties = properties
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).expect("3 is a valid zstd level")))
            .set_max_row_group_row_count(Some(MAX_ROW_GROUP_ROWS))
            .set_max_row_group_bytes(Some(MAX_ROW_GROUP_BYTES))
            .set_key_value_metadata(Some(vec![
                KeyValue::new(TABLE_KEY.to_string(), table.to_string()),
                KeyValue::new(SCHEMA_VERSION_KEY.to_string(), SCHEMA_VERSION.to_string()),
            ]))
            .build();
        let writer = ArrowWriter::try_new(BufWriter::new(file), schema.clone(), Some(properties))
            .map_err(|source| StorageError::Parquet { path: path.into(), source })?;
        Ok(ParquetSink { path: path.into(), schema, writer, held: Vec::new(), held_rows: 0 })
    }

    /// Adds rows after those written so far; a small batch may wait for the next ones (all are
    /// written by [`ParquetSink::close`]).
    pub(crate) fn write(&mut self, columns: Vec<ArrayRef>) -> Result<(), StorageError> {
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|source| StorageError::Batch { path: self.path.clone(), source })?;
        if self.held.is_empty() && batch.num_rows() >= COALESCE_ROWS {
            return self.write_batch(&batch);
        }
        self.held_rows += batch.num_rows();
        self.held.push(batch);
        if self.held_rows >= COALESCE_ROWS { self.write_held() } else { Ok(()) }
    }

    fn write_held(&mut self) -> Result<(), StorageError> {
        let batch = match self.held.len() {
            0 => return Ok(()),
            1 => self.held.pop().expect("one batch"),
            _ => arrow_select::concat::concat_batches(&self.schema, &self.held)
                .map_err(|source| StorageError::Batch { path: self.path.clone(), source })?,
        };
        self.held.clear();
        self.held_rows = 0;
        self.write_batch(&batch)
    }

    fn write_batch(&mut self, batch: &RecordBatch) -> Result<(), StorageError> {
        self.writer.write(batch).map_err(|source| StorageError::Parquet { path: self.path.clone(), source })
    }

    /// Writes the rows held, the footer, and waits until the file is on disk.
    pub(crate) fn close(mut self) -> Result<(), StorageError> {
        self.write_held()?;
        let path = self.path;
        let buffered =
            self.writer.into_inner().map_err(|source| StorageError::Parquet { path: path.clone(), source })?;
        let file =
            buffered.into_inner().map_err(|e| StorageError::Io { path: path.clone(), source: e.into_error() })?;
        file.sync_all().map_err(|source| StorageError::Io { path, source })
    }
}
