//! The `[memory]` table of an experiment: how strategy memory splits the tasks and words its hints.

use std::collections::BTreeMap;

use critbench_abi::PluginInfo;
use serde::Serialize;

/// The `[memory]` table of an experiment.
#[derive(Clone, Debug, Serialize)]
pub struct MemoryConfig {
    /// Share of tasks (without `meta.split`) that go to the learning part, by a seeded hash.
    pub learn_fraction: f64,
    /// How many learning tasks must have fixed an issue type before it becomes a hint.
    pub min_count: u32,
    /// Hint text per issue type, over the ones the critics declare.
    pub hints: BTreeMap<String, String>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig { learn_fraction: 0.5, min_count: 1, hints: BTreeMap::new() }
    }
}

impl MemoryConfig {
    /// The instruction for an issue type: the experiment's, the one the critic declares for it
    /// (its info's `issue_types`), or a generic one.
    pub fn hint_text(&self, issue_type: &str, declared: &PluginInfo) -> String {
        if let Some(text) = self.hints.get(issue_type) {
            return text.clone();
        }
        match declared.issue_hint(issue_type) {
            Some(text) => text.to_string(),
            None => format!("Avoid this issue from the start: {}.", issue_type.replace('_', " ")),
        }
    }
}
