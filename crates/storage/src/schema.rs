//! The schema every critbench table shares: its version, as each table's footer records it, and
//! the Arrow field types of the nested columns, so a notebook reads `dims`, `issues` and the others
//! of every table the same way.

use std::sync::Arc;

use arrow_schema::{DataType, Field};

/// The version of the output tables' schema; see `docs/FORMAT.md` for the changelog.
pub const SCHEMA_VERSION: u32 = 10;

/// The key of a table's footer metadata that holds [`SCHEMA_VERSION`], which every reader checks.
pub(crate) const SCHEMA_VERSION_KEY: &str = "critbench.schema_version";

/// The key of a table's footer metadata that holds which table it is (`outcomes`, …).
pub(crate) const TABLE_KEY: &str = "critbench.table";

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
