//! The one rule for task ids: unique within a file and across every file of a run or a judge.
//!
//! Ids are remembered as 64-bit hashes with the file and row of their first occurrence (16 bytes a
//! task in the table), never as the tasks themselves, so a streamed run's memory stays bounded.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::PathBuf;

use crate::dataset::RowError;

/// Every task id seen so far, in the files of one run (or one judge).
#[derive(Debug, Default)]
pub struct TaskIds {
    seen: HashMap<u64, (u32, u32), BuildHasherDefault<IdentityHasher>>,
}

impl TaskIds {
    pub fn new() -> TaskIds {
        TaskIds::default()
    }

    /// Remembers `id`, read on `row` of `files[file]`, or says where it was seen first: a
    /// duplicate is a bad row (field `id`). `row_label` names rows in the messages (`line`, `row`).
    pub fn admit(
        &mut self,
        id: &str,
        file: usize,
        row: usize,
        row_label: &str,
        files: &[PathBuf],
    ) -> Result<(), RowError> {
        let hash = id_hash(id);
        if let Some(&(first_file, first_row)) = self.seen.get(&hash) {
            let message = if first_file as usize == file {
                format!("duplicate id `{id}` (first on {row_label} {first_row}); ids must be unique")
            } else {
                let first = files.get(first_file as usize).map(|p| p.display().to_string()).unwrap_or_default();
                format!("duplicate id `{id}` (also in {first}); ids must be unique across datasets")
            };
            return Err(RowError { field: Some("id".into()), message });
        }
        self.seen.insert(hash, (file as u32, row as u32));
        Ok(())
    }
}

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
        assert_eq!(same.field.as_deref(), Some("id"));
        assert_eq!(same.message, "duplicate id `x` (first on line 1); ids must be unique");
        let across = ids.admit("y", 1, 1, "line", &files).unwrap_err();
        assert_eq!(across.message, "duplicate id `y` (also in a.jsonl); ids must be unique across datasets");
        ids.admit("z", 1, 2, "line", &files).unwrap();
    }
}
