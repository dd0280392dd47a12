//! The Arrow field types every critbench table shares, so a notebook reads `dims`, `issues` and
//! the other nested columns of every table the same way.

use std::sync::Arc;

use arrow_schema::{DataType, Field};

pub(crate) fn utf8(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

/// A list<utf8> column; the list itself is never null.
pub(crate) fn string_list(name: &str) -> Field {
    Field::new(name, DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))), false)
}

/// A map<utf8, float64> column (a critique's dimension scores); the map itself is never null.
pub(crate) fn dims_map(name: &str) -> Field {
    let entries = Field::new(
        "entries",
        DataType::Struct(
            vec![Field::new("key", DataType::Utf8, false), Field::new("value", DataType::Float64, true)].into(),
        ),
        false,
    );
    Field::new(name, DataType::Map(Arc::new(entries), false), false)
}

/// Whole numbers are stored signed; a count too large for the column saturates.
pub(crate) fn int32(value: u32) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

pub(crate) fn int64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
