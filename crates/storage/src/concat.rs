//! Joins Parquet files of one schema into one file by copying their column chunks as they are
//! (no decoding, no re-compression): how a run's committed part files become its tables.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::ParquetMetaDataReader;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;

use crate::parquet_sink::StorageError;

/// Writes the row groups of `parts`, in order, into `output`. Every part must have the schema
/// of the first; the first part's key-value metadata (the Arrow schema, critbench's table name
/// and version) is the output's.
pub fn concat_parquet(parts: &[impl AsRef<Path>], output: &Path) -> Result<(), StorageError> {
    let fail = |path: &Path, source| StorageError::Parquet { path: path.into(), source };
    let mut inputs = Vec::new();
    for part in parts {
        let path = part.as_ref();
        let file = File::open(path).map_err(|source| StorageError::Io { path: path.into(), source })?;
        let metadata = ParquetMetaDataReader::new().parse_and_finish(&file).map_err(|e| fail(path, e))?;
        inputs.push((path, file, metadata));
    }
    let Some((first_path, _, first)) = inputs.first() else {
        return Err(StorageError::NoParts { path: output.into() });
    };
    let schema = first.file_metadata().schema_descr().root_schema_ptr();
    for (path, _, metadata) in &inputs[1..] {
        if metadata.file_metadata().schema_descr().root_schema_ptr() != schema {
            return Err(StorageError::SchemaDiffers { path: path.to_path_buf(), first: first_path.to_path_buf() });
        }
    }
    let properties =
        WriterProperties::builder().set_key_value_metadata(first.file_metadata().key_value_metadata().cloned()).build();
    let file = crate::files::create_new(output).map_err(|source| StorageError::Io { path: output.into(), source })?;
    let mut writer = SerializedFileWriter::new(std::io::BufWriter::new(file), schema, Arc::new(properties))
        .map_err(|e| fail(output, e))?;
    for (_, input, metadata) in &inputs {
        for group in metadata.row_groups() {
            let mut out = writer.next_row_group().map_err(|e| fail(output, e))?;
            for column in group.columns() {
                let close = ColumnCloseResult {
                    bytes_written: column.compressed_size() as _,
                    rows_written: group.num_rows() as _,
                    metadata: column.clone(),
                    bloom_filter: None,
                    column_index: None,
                    offset_index: None,
                };
                out.append_column(input, close).map_err(|e| fail(output, e))?;
            }
            out.close().map_err(|e| fail(output, e))?;
        }
    }
    let buffered = writer.into_inner().map_err(|e| fail(output, e))?;
    let file = buffered.into_inner().map_err(|e| StorageError::Io { path: output.into(), source: e.into_error() })?;
    file.sync_all().map_err(|source| StorageError::Io { path: output.into(), source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::tests::outcome;
    use crate::tables::{OutcomeWriter, read_outcomes};

    #[test]
    fn joined_parts_read_back_as_one_table_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut parts = Vec::new();
        for (index, tasks) in [vec!["a", "b"], vec![], vec!["c"]].into_iter().enumerate() {
            let path = dir.path().join(format!("part-{index}.parquet"));
            let mut writer = OutcomeWriter::create(&path).unwrap();
            for task in tasks {
                writer.push(outcome(task, true)).unwrap();
            }
            writer.close().unwrap();
            parts.push(path);
        }
        let joined = dir.path().join("outcomes.parquet");
        concat_parquet(&parts, &joined).unwrap();
        let ids: Vec<String> = read_outcomes(&joined).unwrap().into_iter().map(|r| r.task_id).collect();
        assert_eq!(ids, ["a", "b", "c"]);
    }
}
