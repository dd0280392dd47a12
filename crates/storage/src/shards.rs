//! Sharded runs: which shard a task belongs to, where a shard writes, and where readers find a
//! run's tables whether it was run in one piece or in shards.
//!
//! A task is in shard `fnv1a64(id's UTF-8 bytes) mod N` (FNV-1a, 64 bits: offset basis
//! `0xcbf29ce484222325`, prime `0x100000001b3`). The split is part of the format: the same ids
//! land in the same shards on every machine, platform and critbench version.
//!
//! Shard `I` of a run in `RUN` writes
//! - `RUN/trajectories/shard=I/part-0.parquet` and `RUN/outcomes/shard=I/part-0.parquet`
//!   (Hive-partitioned tables: pandas, Polars, DuckDB and Spark read the folder as one table with
//!   a `shard` column);
//! - `RUN/shards/I/`: its `manifest.json`, `run.lock`, `in-progress/` and `memory.json`.
//!
//! A run in one piece has `RUN/trajectories.parquet` and `RUN/outcomes.parquet` instead.
//! `critbench merge RUN` writes the run-level `manifest.json` and reports over every shard.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Shard `index` of `count` (0 ≤ index < count).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// Which shard, from 0.
    pub index: u32,
    /// How many shards the run has.
    pub count: u32,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The folder of a sharded run holding each shard's own files.
pub const SHARDS_DIR: &str = "shards";

/// Every round of every loop.
pub const TRAJECTORIES: &str = "trajectories";

/// One row per loop and config.
pub const OUTCOMES: &str = "outcomes";

/// The held-out evaluators' verdicts, in a run that has evaluators.
pub const EVALUATIONS: &str = "evaluations";

/// A run's two row tables (a rescoring's too).
pub const TABLES: [&str; 2] = [TRAJECTORIES, OUTCOMES];

/// Every table a run may write: the two row tables, and `evaluations` when it has held-out
/// evaluators. The one list of the run's tables: the engine's layout, journal, part files,
/// `--overwrite` and manifest read it.
pub const ALL_TABLES: [&str; 3] = [TRAJECTORIES, OUTCOMES, EVALUATIONS];

/// The one file of a table in each shard's partition.
pub const PARTITION_FILE: &str = "part-0.parquet";

/// The file of `table` in a run in one piece: `TABLE.parquet`.
pub fn table_file(table: &str) -> String {
    format!("{table}.parquet")
}

/// FNV-1a, 64 bits, of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The shard (of `count`) the task `id` belongs to.
pub fn shard_of(id: &str, count: u32) -> u32 {
    (fnv1a64(id.as_bytes()) % u64::from(count.max(1))) as u32
}

/// A shard that cannot be: none of zero, or an index past the last.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardRangeError {
    /// Zero shards.
    #[error("the number of shards must be at least 1")]
    NoShards,
    /// An index of `count` shards that is `count` or more.
    #[error("shard index {index} is out of range for {count} shard(s) (0 to {})", count - 1)]
    OutOfRange {
        /// The index given.
        index: u32,
        /// The number of shards.
        count: u32,
    },
}

/// A `--shard` that is not `I/N` of a shard that can be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardFlagError {
    /// Not two numbers around a `/`.
    #[error("--shard {text}: expected I/N, the shard's index and the number of shards (e.g. 0/4)")]
    NotIOverN {
        /// What was given.
        text: String,
    },
    /// The index or the count is not a whole number.
    #[error("--shard {text}: {what} `{part}` is not a whole number")]
    NotANumber {
        /// What was given.
        text: String,
        /// "the index" or "the count".
        what: &'static str,
        /// The part that is not a number.
        part: String,
    },
    /// Numbers, but of no shard.
    #[error("--shard {text}: {source}")]
    Range {
        /// What was given.
        text: String,
        /// Why there is no such shard.
        source: ShardRangeError,
    },
}

impl Shard {
    /// Parses `I/N` as given to `--shard`.
    pub fn parse(text: &str) -> Result<Shard, ShardFlagError> {
        let (index, count) =
            text.split_once('/').ok_or_else(|| ShardFlagError::NotIOverN { text: text.to_string() })?;
        let number = |part: &str, what| {
            part.trim().parse::<u32>().map_err(|_| ShardFlagError::NotANumber {
                text: text.to_string(),
                what,
                part: part.to_string(),
            })
        };
        Shard::new(number(index, "the index")?, number(count, "the count")?)
            .map_err(|source| ShardFlagError::Range { text: text.to_string(), source })
    }

    /// Shard `index` of `count`, checked.
    pub fn new(index: u32, count: u32) -> Result<Shard, ShardRangeError> {
        if count == 0 {
            return Err(ShardRangeError::NoShards);
        }
        if index >= count {
            return Err(ShardRangeError::OutOfRange { index, count });
        }
        Ok(Shard { index, count })
    }

    /// Whether the task `id` is in this shard.
    pub fn holds(&self, id: &str) -> bool {
        shard_of(id, self.count) == self.index
    }

    /// `RUN/shards/I`: the shard's manifest, lock and progress.
    pub fn dir(&self, run_dir: &Path) -> PathBuf {
        shard_dir(run_dir, self.index)
    }

    /// `RUN/TABLE/shard=I/part-0.parquet`.
    pub fn table_path(&self, run_dir: &Path, table: &str) -> PathBuf {
        run_dir.join(table).join(format!("shard={}", self.index)).join(PARTITION_FILE)
    }
}

/// `RUN/shards/I`.
pub fn shard_dir(run_dir: &Path, index: u32) -> PathBuf {
    run_dir.join(SHARDS_DIR).join(index.to_string())
}

/// Whether `run_dir` holds a sharded run (a `shards/` folder or a partitioned table).
pub fn is_sharded(run_dir: &Path) -> bool {
    run_dir.join(SHARDS_DIR).is_dir() || TABLES.iter().any(|table| run_dir.join(table).is_dir())
}

/// The shard indices with a folder in `RUN/shards/`, in order; other names are ignored.
pub fn shard_indices(run_dir: &Path) -> Vec<u32> {
    let mut indices: Vec<u32> = std::fs::read_dir(run_dir.join(SHARDS_DIR))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .filter_map(|entry| entry.file_name().to_str().and_then(|name| name.parse().ok()))
        .collect();
    indices.sort_unstable();
    indices
}

/// The Parquet files of `table` (`"outcomes"` or `"trajectories"`) of the run in `run_dir`, in
/// order: `RUN/TABLE.parquet` for a run in one piece, else every `RUN/TABLE/shard=I/*.parquet`
/// by shard index, then file name. Empty when the run has no such table.
pub fn table_files(run_dir: &Path, table: &str) -> Vec<PathBuf> {
    let single = run_dir.join(table_file(table));
    if single.is_file() {
        return vec![single];
    }
    let mut partitions: Vec<(u32, PathBuf)> = std::fs::read_dir(run_dir.join(table))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let index = name.to_str()?.strip_prefix("shard=")?.parse().ok()?;
            Some((index, entry.path()))
        })
        .collect();
    partitions.sort();
    let mut files = Vec::new();
    for (_, dir) in partitions {
        let mut parts: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "parquet") && path.is_file())
            .collect();
        parts.sort();
        files.extend(parts);
    }
    files
}

/// How a table is named in messages: `outcomes.parquet`, or `outcomes/shard=*/` for a sharded run.
pub fn table_label(run_dir: &Path, table: &str) -> String {
    if is_sharded(run_dir) && !run_dir.join(table_file(table)).is_file() {
        format!("{table}/shard=*/{PARTITION_FILE}")
    } else {
        table_file(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The split is a format guarantee: these ids are in these shards, forever.
    #[test]
    fn ids_are_pinned_to_their_shards() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        let pinned = [("a", 1), ("paper-001", 0), ("paper-002", 1), ("rag-017", 2), ("任务-1", 1)];
        for (id, shard) in pinned {
            assert_eq!(shard_of(id, 3), shard, "{id}");
        }
        assert_eq!(shard_of("anything", 1), 0);
    }

    #[test]
    fn shard_arguments_are_checked() {
        assert_eq!(Shard::parse("2/4").unwrap(), Shard { index: 2, count: 4 });
        let error = |text: &str| Shard::parse(text).unwrap_err().to_string();
        assert_eq!(error("4/4"), "--shard 4/4: shard index 4 is out of range for 4 shard(s) (0 to 3)");
        assert_eq!(error("0/0"), "--shard 0/0: the number of shards must be at least 1");
        assert_eq!(error("x/2"), "--shard x/2: the index `x` is not a whole number");
        assert_eq!(error("3"), "--shard 3: expected I/N, the shard's index and the number of shards (e.g. 0/4)");
        // The cause is kept: the range error under the flag's.
        let range = std::error::Error::source(&Shard::parse("4/4").unwrap_err()).unwrap().to_string();
        assert_eq!(range, "shard index 4 is out of range for 4 shard(s) (0 to 3)");
    }

    #[test]
    fn tables_are_listed_by_shard_index() {
        let dir = tempfile::tempdir().unwrap();
        assert!(table_files(dir.path(), "outcomes").is_empty());
        for index in [10, 2, 0] {
            let path = Shard { index, count: 11 }.table_path(dir.path(), "outcomes");
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "").unwrap();
        }
        let names: Vec<String> = table_files(dir.path(), "outcomes")
            .iter()
            .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            ["outcomes/shard=0/part-0.parquet", "outcomes/shard=2/part-0.parquet", "outcomes/shard=10/part-0.parquet"]
        );
        assert!(is_sharded(dir.path()));
        std::fs::write(dir.path().join("outcomes.parquet"), "").unwrap();
        assert_eq!(table_files(dir.path(), "outcomes"), [dir.path().join("outcomes.parquet")]);
    }
}
