//! Keys: a loop's ([`LoopKey`]), and those of the hot path: task ids as 128-bit hashes, and maps
//! keyed by them without rehashing.

use std::collections::HashMap;
use std::hash::Hasher;

use critbench_core::Arm;

/// A task id as a 128-bit hash, so an open task is keyed without allocating per row.
pub(crate) fn task_hash(task_id: &str) -> u128 {
    critbench_storage::hash128(task_id)
}

/// Hashes keys that are already hashes (task ids hashed by [`task_hash`], small indices) with a
/// multiply-and-rotate of their words: SipHash again would only cost time on the hot path.
#[derive(Clone, Copy, Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(26) ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_u128(&mut self, word: u128) {
        self.write_u64(word as u64);
        self.write_u64((word >> 64) as u64);
    }

    fn write_u32(&mut self, word: u32) {
        self.write_u64(u64::from(word));
    }

    fn write_usize(&mut self, word: usize) {
        self.write_u64(word as u64);
    }
}

/// A map keyed by hashes and indices (see [`KeyHasher`]).
pub(crate) type KeyMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<KeyHasher>>;

/// What identifies a loop: config × arm × critic × task × epoch. Keys sort by the arm as the
/// output spells it, so a sample's loops keep the order (and hash) they have always had.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LoopKey {
    /// The loop's config.
    pub config_id: String,
    /// Its arm.
    pub arm: Arm,
    /// Its critic.
    pub critic: String,
    /// Its task.
    pub task_id: String,
    /// Its epoch.
    pub epoch: u32,
}

impl LoopKey {
    /// How a loop is named in messages, from its parts as a file spells them: what [`LoopKey`]'s
    /// `Display` shows, for a loop whose arm may not be one of core's (a labels file's).
    pub fn describe(config_id: &str, arm: &str, critic: &str, task_id: &str, epoch: u32) -> String {
        format!("config {config_id} × arm {arm} × critic {critic} × task {task_id} × epoch {epoch}")
    }

    fn order(&self) -> (&str, &str, &str, &str, u32) {
        (&self.config_id, self.arm.as_str(), &self.critic, &self.task_id, self.epoch)
    }
}

impl PartialOrd for LoopKey {
    fn partial_cmp(&self, other: &LoopKey) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for LoopKey {
    fn cmp(&self, other: &LoopKey) -> std::cmp::Ordering {
        self.order().cmp(&other.order())
    }
}
