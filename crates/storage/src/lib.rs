//! critbench's files: dataset readers (JSONL, CSV, Parquet) on the way in, and the Parquet tables
//! of every round and every loop on the way out.
//!
//! Readers validate each row against docs/REFERENCE.md (Dataset) and name the file, line or row, and field at fault.
//! Writers stream: a row goes into a column builder as soon as it exists and is flushed to disk
//! in bounded batches, so memory stays flat however long the run.
//!
//! ```no_run
//! use critbench_storage::dataset::{read_dataset, OnBadRow};
//!
//! let dataset = read_dataset("datasets/papers.jsonl".as_ref(), OnBadRow::Error).unwrap();
//! println!("{} tasks, sha256 {}", dataset.tasks.len(), dataset.sha256);
//! ```

#![warn(missing_docs)]

mod buffered;
pub mod clock;
pub mod columns;
pub mod concat;
pub mod critique_columns;
pub mod dataset;
mod declared;
mod error;
pub mod evaluations;
pub mod files;
pub mod judgments;
pub mod manifest;
mod parquet_sink;
pub mod recorded;
pub mod scan;
mod schema;
pub mod shards;
pub mod tables;
pub mod task_ids;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use buffered::{Batches, TableBatches, TableRow, TableWriter};
pub use columns::Columns;
pub use error::{BoxError, TableError};
pub use schema::SCHEMA_VERSION;

/// A 128-bit hash of `value`, to key what is seen many times without holding its text: two
/// SipHash passes under different prefixes (a collision among a million keys has odds near 1e-26).
pub fn hash128<T: std::hash::Hash + ?Sized>(value: &T) -> u128 {
    use std::hash::{Hash, Hasher};
    let half = |prefix: u8| {
        let mut hasher = std::hash::DefaultHasher::new();
        prefix.hash(&mut hasher);
        value.hash(&mut hasher);
        hasher.finish()
    };
    (u128::from(half(0)) << 64) | u128::from(half(1))
}

/// Hex-encoded SHA-256 of a file's bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    critbench_core::hex(&Sha256::digest(bytes))
}
