//! What `critbench judge` is asked to do ([`JudgeSpec`]): the critics, the labeled datasets, the
//! pass rule and where the files go.

use std::path::PathBuf;

use critbench_core::Policy;
use critbench_plugin_host::CriticSpec;
use critbench_storage::dataset::OnBadRow;

/// Everything `critbench judge` needs, resolved from the experiment file and the command line.
#[derive(Clone, Debug)]
pub struct JudgeSpec {
    /// The experiment's name: it names the run.
    pub name: String,
    /// The experiment file, if any: plugin paths are relative to its directory.
    pub experiment_path: Option<PathBuf>,
    /// The dataset files.
    pub datasets: Vec<PathBuf>,
    /// What to do with a task whose labels are bad.
    pub on_bad_row: OnBadRow,
    /// The critics to judge.
    pub critics: Vec<CriticSpec>,
    /// The pass rule that turns a critique into a verdict (the experiment's first policy).
    pub policy: Policy,
    /// How many configs the experiment's policy grid has (only the first is used here).
    pub grid_size: usize,
    /// Critiques of each draft by each critic.
    pub repeats: u32,
    /// Attempts per critique before the conservative failure (docs/REFERENCE.md, Critique).
    pub attempts: u32,
    /// Seeds the bootstrap intervals.
    pub seed: u64,
    /// The output directory.
    pub out: PathBuf,
    /// Where plugin libraries are looked for.
    pub plugin_dirs: Vec<PathBuf>,
    /// Worker threads; 0 means every core.
    pub jobs: usize,
    /// The services the critics may call (`chat` when a judge model is configured).
    pub host: std::sync::Arc<critbench_plugin_host::services::Host>,
}

impl Default for JudgeSpec {
    fn default() -> Self {
        JudgeSpec {
            name: "judge".into(),
            experiment_path: None,
            datasets: Vec::new(),
            on_bad_row: OnBadRow::Error,
            critics: Vec::new(),
            policy: Policy::default(),
            grid_size: 1,
            repeats: 1,
            attempts: critbench_plugin_host::DEFAULT_ATTEMPTS,
            seed: 0,
            out: PathBuf::from("reports/judge"),
            plugin_dirs: Vec::new(),
            jobs: 0,
            host: Default::default(),
        }
    }
}
