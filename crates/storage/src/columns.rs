//! Reading Parquet back: typed access to a batch's columns by name, with errors that name the
//! column, so every reader checks the table it is given the same way.

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};

pub use crate::error::{BoxError, TableError};

fn not_of_type(column: &str, expected: &'static str) -> TableError {
    TableError::NotOfType { column: column.to_string(), expected }
}

/// The columns of one batch, by name: each accessor checks the column is there and of the type
/// critbench writes, or names it in its error.
#[derive(Clone, Copy)]
pub struct Columns<'a>(pub &'a RecordBatch);

impl<'a> Columns<'a> {
    fn column(&self, name: &str) -> Result<&'a ArrayRef, TableError> {
        self.0.column_by_name(name).ok_or_else(|| TableError::MissingColumn(name.to_string()))
    }

    fn required<T>(name: &str, values: Vec<Option<T>>) -> Result<Vec<T>, TableError> {
        values.into_iter().map(|v| v.ok_or_else(|| TableError::Null(name.to_string()))).collect()
    }

    /// A utf8 column, each value copied; null where the file has none.
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

    /// An int64 column that may hold nulls, borrowed.
    pub fn int64_array(&self, name: &str) -> Result<&'a arrow_array::Int64Array, TableError> {
        self.column(name)?.as_primitive_opt::<Int64Type>().ok_or_else(|| not_of_type(name, "int64"))
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

    /// A utf8 column without nulls, each value copied.
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

    /// A float64 column; null where the file has none.
    pub fn float(&self, name: &str) -> Result<Vec<Option<f64>>, TableError> {
        let array = self.column(name)?.as_primitive_opt::<Float64Type>().ok_or_else(|| not_of_type(name, "float64"))?;
        Ok((0..array.len()).map(|i| array.is_valid(i).then(|| array.value(i))).collect())
    }

    /// A float64 column without nulls.
    pub fn required_float(&self, name: &str) -> Result<Vec<f64>, TableError> {
        Self::required(name, self.float(name)?)
    }

    /// A boolean column; null where the file has none.
    pub fn boolean(&self, name: &str) -> Result<Vec<Option<bool>>, TableError> {
        let array = self.column(name)?.as_boolean_opt().ok_or_else(|| not_of_type(name, "boolean"))?;
        Ok((0..array.len()).map(|i| array.is_valid(i).then(|| array.value(i))).collect())
    }

    /// A boolean column without nulls.
    pub fn required_boolean(&self, name: &str) -> Result<Vec<bool>, TableError> {
        Self::required(name, self.boolean(name)?)
    }

    /// A `list<utf8>` column; a null list reads as empty.
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

    /// How many items each row of a list column holds (a null list holds none), read off the
    /// list's offsets: no item is copied.
    pub fn list_lengths(&self, name: &str) -> Result<Vec<usize>, TableError> {
        let array = self.column(name)?.as_list_opt::<i32>().ok_or_else(|| not_of_type(name, "a list"))?;
        Ok((0..array.len()).map(|i| if array.is_null(i) { 0 } else { array.value_length(i) as usize }).collect())
    }

    /// A `map<utf8, float64>` column; a null map reads as empty.
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
