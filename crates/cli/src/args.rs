use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Benchmark critique→revise loops: run experiments, rebuild reports, inspect critic plugins.
#[derive(Parser, Debug)]
#[command(name = "critbench", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run an experiment (experiments/demo.toml when none is given).
    Run(RunArgs),
    /// Rebuild summary.csv, summary.json, comparisons.csv and report.md from a run's Parquet files.
    Report(ReportArgs),
    /// Show or check critic plugins.
    #[command(subcommand)]
    Plugins(PluginsCommand),
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The experiment file (TOML).
    pub experiment: Option<PathBuf>,
    /// Run directory to write (overrides `out`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Worker threads (default: every core).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Dataset file(s) to use instead of the experiment's `dataset` (repeatable).
    #[arg(long = "dataset")]
    pub datasets: Vec<PathBuf>,
    /// Only the first N tasks of each dataset file.
    #[arg(long)]
    pub limit: Option<usize>,
    /// What to do with a dataset row that breaks the rules.
    #[arg(long, value_enum)]
    pub on_bad_row: Option<BadRow>,
    /// Keep every draft's text in trajectories.parquet.
    #[arg(long)]
    pub store_drafts: bool,
    /// Extra directory to look for plugins in (repeatable).
    #[arg(long = "plugin-dir")]
    pub plugin_dirs: Vec<PathBuf>,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum BadRow {
    /// Stop with an error naming the row.
    Error,
    /// Skip it, count it in the manifest and go on.
    Skip,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A run directory written by `critbench run`.
    pub run_dir: PathBuf,
}

#[derive(Subcommand, Debug)]
pub enum PluginsCommand {
    /// List the plugins found in the search path.
    List(PluginListArgs),
    /// Load a plugin, verify its ABI, call it on a sample request and print what it says.
    Check(PluginCheckArgs),
}

#[derive(Args, Debug)]
pub struct PluginListArgs {
    /// Extra directory to look for plugins in (repeatable).
    #[arg(long = "plugin-dir")]
    pub plugin_dirs: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub struct PluginCheckArgs {
    /// A plugin name (e.g. `rubric`) or the path to a shared library.
    pub plugin: String,
    /// JSON config handed to the plugin.
    #[arg(long, default_value = "{}")]
    pub config: String,
    /// Extra directory to look for plugins in (repeatable).
    #[arg(long = "plugin-dir")]
    pub plugin_dirs: Vec<PathBuf>,
}
