//! The one rule for task ids: unique within a file and across every file of a run or a judge.
//!
//! Ids are remembered as 64-bit hashes with the file and row of their first occurrence (16 bytes a
//! task in the table), never as the tasks themselves, so a streamed run's memory stays bounded.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::PathBuf;

/// Every task id seen so far, in the files of one run (or one judge).
#[derive(Debug, Default)]
pub struct TaskIds {
    seen: HashMap<u64, (u32, u32), BuildHasherDefault<IdentityHasher>>,
}

impl TaskIds {
    /// No id seen yet.
    pub fn new() -> TaskIds {
        TaskIds::default()
    }

    /// Remembers `id`, read on `row` of `files[file]`, or says where it was seen first.
    /// `row_label` names rows in the message (`line`, `row`).
    pub fn admit(
        &mut self,
        id: &str,
        file: usize,
        row: usize,
        row_label: &'static str,
        files: &[PathBuf],
    ) -> Result<(), DuplicateId> {
        let hash = id_hash(id);
        if let Some(&(first_file, first_row)) = self.seen.get(&hash) {
            let first = if first_file as usize == file {
                FirstSeen::Row { label: row_label, row: first_row as usize }
            } else {
                FirstSeen::File(files.get(first_file as usize).cloned().unwrap_or_default())
            };
            return Err(DuplicateId { id: id.to_string(), first });
        }
        self.seen.insert(hash, (file as u32, row as u32));
        Ok(())
    }
}

/// A task id seen before: a bad row, in field `id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplicateId {
    /// The id.
    pub id: String,
    /// Where it was first seen.
    pub first: FirstSeen,
}

/// Where a duplicate id was first seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FirstSeen {
    /// Earlier in the same file.
    Row {
        /// What a row is called in this file's format: "line" or "row".
        label: &'static str,
        /// The line or row.
        row: usize,
    },
    /// In an earlier file.
    File(PathBuf),
}

impl fmt::Display for DuplicateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = &self.id;
        match &self.first {
            FirstSeen::Row { label, row } => {
                write!(f, "duplicate id `{id}` (first on {label} {row}); ids must be unique")
            }
            FirstSeen::File(path) => {
                write!(f, "duplicate id `{id}` (also in {}); ids must be unique across datasets", path.display())
            }
        }
    }
}

impl std::error::Error for DuplicateId {}

/// The id's hash for the duplicate check: SipHash with fixed keys (a collision between two
/// different ids among a million has a probability of about 3·10⁻⁸).
fn id_hash(id: &str) -> u64 {
    use std::hash::Hash;
    #[allow(deprecated)]
    let mut hasher = std::hash::SipHasher::new_with_keys(0x6372_6974_6265_6e63, 0x6820_6964_7320_2020);
    id.hash(&mut hasher);
    hasher.finish()
}

/// The ids' table is keyed by hashes already: hashing them again would only cost time.
#[derive(Default)]
struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys are hashed")
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_id_names_its_first_row_or_file() {
        let files = [PathBuf::from("a.jsonl"), PathBuf::from("b.jsonl")];
        let mut ids = TaskIds::new();
        ids.admit("x", 0, 1, "line", &files).unwrap();
        ids.admit("y", 0, 2, "line", &files).unwrap();
        let same = ids.admit("x", 0, 3, "line", &files).unwrap_err();
        assert_eq!(same.to_string(), "duplicate id `x` (first on line 1); ids must be unique");
        let across = ids.admit("y", 1, 1, "line", &files).unwrap_err();
        assert_eq!(across.to_string(), "duplicate id `y` (also in a.jsonl); ids must be unique across datasets");
        ids.admit("z", 1, 2, "line", &files).unwrap();
    }
}
