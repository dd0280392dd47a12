//! Reading Parquet back: typed access to a batch's columns by name, with errors that name the
//! column, so every reader checks the file it is given the same way.

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};

use crate::error::StorageError;
pub use crate::error::{BoxError, TableError};

/// The name a reader gives the row numbers it asks Parquet for ([`row_number_field`]): not a
/// column critbench writes.
const ROW_NUMBER: &str = "critbench.row_number";

/// A virtual column of each row's position in its file (counted from 0), for a reader that
/// skips rows (a row filter, row groups left out) and must still name a row by its position.
pub(crate) fn row_number_field() -> arrow_schema::FieldRef {
    std::sync::Arc::new(
        arrow_schema::Field::new(ROW_NUMBER, arrow_schema::DataType::Int64, false)
            .with_extension_type(parquet::arrow::RowNumber),
    )
}

/// The file row of each row of a batch read with [`row_number_field`].
pub(crate) fn row_numbers(batch: &RecordBatch) -> Result<Vec<usize>, TableError> {
    let numbers = batch
        .column_by_name(ROW_NUMBER)
        .and_then(|c| c.as_primitive_opt::<Int64Type>())
        .ok_or_else(|| TableError::MissingColumn(ROW_NUMBER.to_string()))?;
    Ok(numbers.values().iter().map(|&n| usize::try_from(n).unwrap_or(0)).collect())
}

/// Calls `each` on every record batch of the Parquet file at `path`.
pub(crate) fn for_each_batch(
    path: &Path,
    mut each: impl FnMut(&RecordBatch) -> Result<(), TableError>,
) -> Result<(), StorageError> {
    let unreadable = |source| StorageError::Unreadable { path: path.into(), source };
    let file = std::fs::File::open(path).map_err(|source| StorageError::Io { path: path.into(), source })?;
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.build())
        .map_err(unreadable)?;
    for batch in reader {
        let batch = batch.map_err(|source| StorageError::Decode { path: path.into(), source })?;
        each(&batch).map_err(|source| StorageError::table(path, source))?;
    }
    Ok(())
}

/// Calls `each` on every record batch of the Parquet file at `path`, decoding only the named
/// columns (a Parquet projection: the others are never decompressed). A column in `required`
/// that the file lacks is an error naming it; one in `optional` is simply left out of the batch.
pub(crate) fn for_each_projected_batch(
    path: &Path,
    required: &[&str],
    optional: &[&str],
    mut each: impl FnMut(&RecordBatch) -> Result<(), TableError>,
) -> Result<(), StorageError> {
    let file = std::fs::File::open(path).map_err(|source| StorageError::Io { path: path.into(), source })?;
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|source| StorageError::Unreadable { path: path.into(), source })?;
    let schema = builder.schema().clone();
    let mut roots = Vec::with_capacity(required.len() + optional.len());
    for name in required {
        let (index, _) = schema
            .column_with_name(name)
            .ok_or_else(|| StorageError::table(path, TableError::MissingColumn(name.to_string())))?;
        roots.push(index);
    }
    roots.extend(optional.iter().filter_map(|name| schema.column_with_name(name).map(|(index, _)| index)));
    let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .build()
        .map_err(|source| StorageError::Projection { path: path.into(), source })?;
    for batch in reader {
        let batch = batch.map_err(|source| StorageError::Decode { path: path.into(), source })?;
        each(&batch).map_err(|source| StorageError::table(path, source))?;
    }
    Ok(())
}

fn not_of_type(column: &str, expected: &'static str) -> TableError {
    TableError::NotOfType { column: column.to_string(), expected }
}

/// The columns of one batch.
pub(crate) struct Columns<'a>(pub &'a RecordBatch);

impl<'a> Columns<'a> {
    fn column(&self, name: &str) -> Result<&'a ArrayRef, TableError> {
        self.0.column_by_name(name).ok_or_else(|| TableError::MissingColumn(name.to_string()))
    }

    fn required<T>(name: &str, values: Vec<Option<T>>) -> Result<Vec<T>, TableError> {
        values.into_iter().map(|v| v.ok_or_else(|| TableError::Null(name.to_string()))).collect()
    }

    pub fn text(&self, name: &str) -> Result<Vec<Option<String>>, TableError> {
        let array = self.column(name)?.as_string_opt::<i32>().ok_or_else(|| not_of_type(name, "utf8"))?;
        Ok((0..array.len()).map(|i| array.is_valid(i).then(|| array.value(i).to_string())).collect())
    }

    /// A utf8 column without nulls, borrowed (no per-row allocation).
    pub fn text_array(&self, name: &str) -> Result<&'a arrow_array::StringArray, TableError> {
        let array = self.column(name)?.as_string_opt::<i32>().ok_or_else(|| not_of_type(name, "utf8"))?;
        if array.null_count() > 0 {
            return Err(TableError::Null(name.to_string()));
        }
        Ok(array)
    }

    /// A utf8 column that may hold nulls, borrowed: the caller checks `is_valid` where it must.
    pub fn nullable_text_array(&self, name: &str) -> Result<&'a arrow_array::StringArray, TableError> {
        self.column(name)?.as_string_opt::<i32>().ok_or_else(|| not_of_type(name, "utf8"))
    }

    /// A boolean column that may hold nulls, borrowed.
    pub fn nullable_boolean_array(&self, name: &str) -> Result<&'a arrow_array::BooleanArray, TableError> {
        self.column(name)?.as_boolean_opt().ok_or_else(|| not_of_type(name, "boolean"))
    }

    /// A float64 column that may hold nulls, borrowed.
    pub fn nullable_float_array(&self, name: &str) -> Result<&'a arrow_array::Float64Array, TableError> {
        self.column(name)?.as_primitive_opt::<Float64Type>().ok_or_else(|| not_of_type(name, "float64"))
    }

    /// An int32 column without nulls, borrowed.
    pub fn int32_array(&self, name: &str) -> Result<&'a arrow_array::Int32Array, TableError> {
        let array = self.column(name)?.as_primitive_opt::<Int32Type>().ok_or_else(|| not_of_type(name, "int32"))?;
        if array.null_count() > 0 {
            return Err(TableError::Null(name.to_string()));
        }
        Ok(array)
    }

    /// A float64 column without nulls, borrowed.
    pub fn float_array(&self, name: &str) -> Result<&'a arrow_array::Float64Array, TableError> {
        let array = self.column(name)?.as_primitive_opt::<Float64Type>().ok_or_else(|| not_of_type(name, "float64"))?;
        if array.null_count() > 0 {
            return Err(TableError::Null(name.to_string()));
        }
        Ok(array)
    }

    /// A boolean column without nulls, borrowed.
    pub fn boolean_array(&self, name: &str) -> Result<&'a arrow_array::BooleanArray, TableError> {
        let array = self.column(name)?.as_boolean_opt().ok_or_else(|| not_of_type(name, "boolean"))?;
        if array.null_count() > 0 {
            return Err(TableError::Null(name.to_string()));
        }
        Ok(array)
    }

    pub fn required_text(&self, name: &str) -> Result<Vec<String>, TableError> {
        Self::required(name, self.text(name)?)
    }

    /// Non-negative whole numbers stored as int32.
    pub fn int32(&self, name: &str) -> Result<Vec<u32>, TableError> {
        let array = self.column(name)?.as_primitive_opt::<Int32Type>().ok_or_else(|| not_of_type(name, "int32"))?;
        Ok(array.values().iter().map(|v| u32::try_from(*v).unwrap_or(0)).collect())
    }

    /// Non-negative whole numbers stored as int64, null where unknown.
    pub fn int64(&self, name: &str) -> Result<Vec<Option<u64>>, TableError> {
        let array = self.column(name)?.as_primitive_opt::<Int64Type>().ok_or_else(|| not_of_type(name, "int64"))?;
        Ok((0..array.len()).map(|i| array.is_valid(i).then(|| array.value(i).max(0) as u64)).collect())
    }

    pub fn float(&self, name: &str) -> Result<Vec<Option<f64>>, TableError> {
        let array = self.column(name)?.as_primitive_opt::<Float64Type>().ok_or_else(|| not_of_type(name, "float64"))?;
        Ok((0..array.len()).map(|i| array.is_valid(i).then(|| array.value(i))).collect())
    }

    pub fn required_float(&self, name: &str) -> Result<Vec<f64>, TableError> {
        Self::required(name, self.float(name)?)
    }

    pub fn boolean(&self, name: &str) -> Result<Vec<Option<bool>>, TableError> {
        let array = self.column(name)?.as_boolean_opt().ok_or_else(|| not_of_type(name, "boolean"))?;
        Ok((0..array.len()).map(|i| array.is_valid(i).then(|| array.value(i))).collect())
    }

    pub fn required_boolean(&self, name: &str) -> Result<Vec<bool>, TableError> {
        Self::required(name, self.boolean(name)?)
    }

    /// A list<utf8> column; a null list reads as empty.
    pub fn string_lists(&self, name: &str) -> Result<Vec<Vec<String>>, TableError> {
        let array = self.column(name)?.as_list_opt::<i32>().ok_or_else(|| not_of_type(name, "a list"))?;
        (0..array.len())
            .map(|i| {
                if array.is_null(i) {
                    return Ok(Vec::new());
                }
                let items = array.value(i);
                let items = items.as_string_opt::<i32>().ok_or_else(|| TableError::NotStrings(name.to_string()))?;
                Ok((0..items.len()).map(|j| items.value(j).to_string()).collect())
            })
            .collect()
    }

    /// A map<utf8, float64> column; a null map reads as empty.
    pub fn float_maps(&self, name: &str) -> Result<Vec<BTreeMap<String, f64>>, TableError> {
        let array = self.column(name)?.as_map_opt().ok_or_else(|| not_of_type(name, "a map"))?;
        let keys = array.keys().as_string_opt::<i32>().ok_or_else(|| TableError::MapKeys(name.to_string()))?;
        let values =
            array.values().as_primitive_opt::<Float64Type>().ok_or_else(|| TableError::MapValues(name.to_string()))?;
        let offsets = array.value_offsets();
        Ok((0..array.len())
            .map(|i| {
                let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
                (start..end).map(|j| (keys.value(j).to_string(), values.value(j))).collect()
            })
            .collect())
    }
}
