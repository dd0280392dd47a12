//! The command line: every subcommand and flag, parsed by clap into plain structs.
//!
//! The doc comments here are `--help` text, where `[pricing]` names a TOML table: not links.
#![allow(rustdoc::broken_intra_doc_links)]

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
    /// Run an experiment (when none is given: experiment.toml here, else experiments/demo.toml).
    Run(RunArgs),
    /// Rebuild summary.csv, summary.json, comparisons.csv and report.md from a run's Parquet files
    /// (with --labels, also the pass rates corrected by a labelled sample: corrected.csv).
    Report(ReportArgs),
    /// Draw a seeded uniform sample of a finished run's tasks and write their final answers for
    /// people to label (then: critbench report RUN --labels FILE).
    Sample(SampleArgs),
    /// Check that every shard of a sharded run finished, then write its manifest and reports.
    Merge(MergeArgs),
    /// Compare two runs on the tasks they share (e.g. two critics or two model versions), or two
    /// configs of one run (--configs A,B).
    Compare(CompareArgs),
    /// Read one loop of a run round by round (--task), or list where two arms disagree (--pairs).
    Show(ShowArgs),
    /// Serve a run on 127.0.0.1 to look at in a browser: its answer, its loops filtered, each task's
    /// rounds side by side, and (--labels FILE) a sample of its answers to label.
    View(ViewArgs),
    /// Evaluate new policies on a finished run's recorded loops, without calling any model or critic.
    Replay(ReplayArgs),
    /// Critique every stored draft of a finished run again under another critic, calling no model,
    /// and replay its policy grid on the new scores (into RUN/rescored/NAME).
    Rescore(RescoreArgs),
    /// Benchmark the critics themselves on labeled drafts (experiments/judge-demo.toml when none is given).
    Judge(JudgeArgs),
    /// Know before you pay: run a seeded pilot of a few tasks (through the response cache, into a
    /// scratch run directory) and project the whole run's loops, rounds, model calls, tokens, cost
    /// and wall time, with 95% ranges.
    Estimate(EstimateArgs),
    /// Write a starter experiment and its dataset (experiment.toml, tasks.jsonl) into DIR (default:
    /// the current directory); never overwrites a file.
    Init(InitArgs),
    /// Show or check critic plugins.
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// Serve one plugin library over the JSON-lines protocol on stdin/stdout (docs/PROTOCOL.md);
    /// started by critbench itself for critics with isolation = "process".
    #[command(hide = true)]
    PluginWorker(PluginWorkerArgs),
}

#[derive(Args, Debug)]
pub struct InitArgs {
    /// The directory to write into (created if missing).
    pub dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct PluginWorkerArgs {
    /// The plugin's shared library.
    #[arg(required_unless_present = "builtin", conflicts_with = "builtin")]
    pub library: Option<PathBuf>,
    /// Serve the critic of this name compiled into critbench instead of a library.
    #[arg(long, value_name = "NAME")]
    pub builtin: Option<String>,
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
    /// Replace the run already in the output directory (its files are removed first; a run
    /// directory that holds a run is refused otherwise).
    #[arg(long)]
    pub overwrite: bool,
    /// Finish the interrupted run in the output directory: what it committed is kept, the rest
    /// is run (refused, naming what changed, when the experiment, a dataset or a plugin differs).
    #[arg(long)]
    pub resume: bool,
    /// How to run a policy grid: record each loop once and replay every config on it (the
    /// default), or run each config separately.
    #[arg(long, value_enum)]
    pub sweep: Option<SweepMode>,
    /// Neither read nor write the model response cache (backend "openai" and llm-judge).
    #[arg(long)]
    pub no_cache: bool,
    /// Run every critic without an `isolation` key in child processes (isolation = "process"):
    /// a crash, hang or runaway memory in a plugin costs that round, not the run.
    #[arg(long)]
    pub isolate_plugins: bool,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Run only shard I of N (0 ≤ I < N): the tasks whose id hashes to I; `critbench merge`
    /// joins the shards. Without it, SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX name the shard.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// The number of shards when JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) names the shard
    /// (else CRITBENCH_SHARDS).
    #[arg(long, value_name = "N")]
    pub shards: Option<u32>,
    /// A price list (TOML, shaped like the [pricing] table) over the experiment's [pricing].
    #[arg(long, value_name = "FILE")]
    pub pricing: Option<PathBuf>,
    /// Run even though the experiment's estimate (critbench estimate) exceeds its [budget].
    #[arg(long)]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct EstimateArgs {
    /// The experiment file (TOML).
    pub experiment: Option<PathBuf>,
    /// Tasks in the pilot: a seeded sample of the experiment's tasks (at least 2).
    #[arg(long, value_name = "N", default_value_t = critbench_engine::commands::estimate::DEFAULT_PILOT_TASKS)]
    pub pilot: usize,
    /// The pilot's run directory (default: the experiment's out with -estimate appended, where
    /// critbench run looks for the estimate to check its budget against).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace an earlier pilot in --out.
    #[arg(long)]
    pub overwrite: bool,
    /// A price list (TOML, shaped like the [pricing] table) over the experiment's [pricing].
    #[arg(long, value_name = "FILE")]
    pub pricing: Option<PathBuf>,
    /// Worker threads (default: as critbench run).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Extra directory to look for plugins in (repeatable).
    #[arg(long = "plugin-dir")]
    pub plugin_dirs: Vec<PathBuf>,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The run directory the shards wrote into.
    pub run_dir: PathBuf,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SweepMode {
    Replay,
    Direct,
}

#[derive(Args, Debug)]
pub struct JudgeArgs {
    /// The experiment file (TOML): its critics, pass rule and labeled dataset.
    pub experiment: Option<PathBuf>,
    /// Directory to write judgments.parquet and the judge reports to (overrides `[judge] out` and `out`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Worker threads (default: every core).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Critiques of each draft by each critic (overrides `[judge] repeats`).
    #[arg(long)]
    pub repeats: Option<u32>,
    /// Labeled dataset file(s) to judge on instead of the experiment's (repeatable).
    #[arg(long = "dataset")]
    pub datasets: Vec<PathBuf>,
    /// What to do with a dataset row or a task's labels that break the rules.
    #[arg(long, value_enum)]
    pub on_bad_row: Option<BadRow>,
    /// Extra directory to look for plugins in (repeatable).
    #[arg(long = "plugin-dir")]
    pub plugin_dirs: Vec<PathBuf>,
    /// Replace the critic benchmark already in the output directory (its files are removed first).
    #[arg(long)]
    pub overwrite: bool,
    /// Run every critic without an `isolation` key in child processes (isolation = "process"):
    /// a crash, hang or runaway memory in a plugin costs that judgment, not the benchmark.
    #[arg(long)]
    pub isolate_plugins: bool,
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
    /// A sample of this run written by `critbench sample`, every `gold` filled with true or false:
    /// also write corrected.csv and corrected_comparisons.csv, the pass rates and paired
    /// differences corrected by the labels (prediction-powered inference).
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct SampleArgs {
    /// A finished run directory whose drafts were stored (`--store-drafts`).
    pub run_dir: PathBuf,
    /// How many tasks to sample; every loop of a sampled task is in the sample.
    #[arg(long, value_name = "N")]
    pub tasks: usize,
    /// The seed that picks the tasks.
    #[arg(long, default_value = "0")]
    pub seed: u64,
    /// The file to write (JSON lines: a header, then one line per distinct answer to label).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Replace --out if it exists (it is refused otherwise).
    #[arg(long)]
    pub overwrite: bool,
}

#[derive(Args, Debug)]
pub struct ViewArgs {
    /// A finished run directory.
    pub run_dir: PathBuf,
    /// The port on 127.0.0.1 (default: a free one).
    #[arg(long, value_name = "P")]
    pub port: Option<u16>,
    /// A labels file `critbench sample` drew from this run: the front page lists its answers to
    /// label, and each label is saved to it at once.
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The first run directory (side A).
    pub run_a: PathBuf,
    /// The second run directory (side B); not with --configs.
    #[arg(required_unless_present = "configs")]
    pub run_b: Option<PathBuf>,
    /// Compare two configs of RUN_A instead (CONFIG_A,CONFIG_B), per arm and critic, on the task ×
    /// epoch units both ran.
    #[arg(long, value_delimiter = ',', conflicts_with = "run_b")]
    pub configs: Option<Vec<String>>,
    /// Also write compare.md and compare.csv into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// A run directory written by `critbench run`.
    pub run_dir: PathBuf,
    /// The task to show (its dataset `id`).
    #[arg(long)]
    pub task: Option<String>,
    /// The config of the loop to show (default: the first that has the task).
    #[arg(long)]
    pub config: Option<String>,
    /// The critic of the loop to show.
    #[arg(long)]
    pub critic: Option<String>,
    /// The arm of the loop to show.
    #[arg(long)]
    pub arm: Option<String>,
    /// The epoch of the loop to show.
    #[arg(long)]
    pub epoch: Option<u32>,
    /// List the task × epoch units where one of two arms passed and the other did not (ARM_A,ARM_B).
    #[arg(long, value_delimiter = ',', conflicts_with = "task")]
    pub pairs: Option<Vec<String>>,
    /// With --pairs: at most this many pairs per config and critic.
    #[arg(long, default_value = "10")]
    pub limit: usize,
}

/// `critbench replay`'s flags: a flag left out keeps the run's own values (its configs').
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// A run directory written by `critbench run`.
    pub run_dir: PathBuf,
    /// Pass thresholds to evaluate (comma-separated list; default: the run's).
    #[arg(long, value_delimiter = ',')]
    pub pass_score: Option<Vec<f64>>,
    /// Revision caps to evaluate (comma-separated list; default: the run's).
    #[arg(long, value_delimiter = ',')]
    pub max_revisions: Option<Vec<u32>>,
    /// Stop on a score drop (true, false, or both: true,false; default: the run's).
    #[arg(long, value_delimiter = ',', action = clap::ArgAction::Set)]
    pub stall: Option<Vec<bool>>,
    /// Plateau thresholds (0 turns plateau detection off; default: the run's).
    #[arg(long, value_delimiter = ',')]
    pub plateau_eps: Option<Vec<f64>>,
    /// Every dimension must reach this to pass (a list; `none` for no target; default: the run's).
    #[arg(long, value_delimiter = ',', value_parser = dim_target)]
    pub dim_target: Option<Vec<DimTarget>>,
    /// Which draft a loop returns (default: the run's).
    #[arg(long, value_enum)]
    pub final_draft: Option<FinalChoice>,
    /// Where to write the new run directory (default: RUN_DIR-replay).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the run already in the output directory (never the run being replayed).
    #[arg(long)]
    pub overwrite: bool,
}

/// One `--dim-target` value: a number, or no target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DimTarget(pub Option<f64>);

fn dim_target(text: &str) -> Result<DimTarget, String> {
    match text.trim() {
        "none" => Ok(DimTarget(None)),
        number => number
            .parse::<f64>()
            .map(|value| DimTarget(Some(value)))
            .map_err(|_| format!("`{text}` is neither a number nor `none`")),
    }
}

#[derive(Args, Debug)]
pub struct RescoreArgs {
    /// A finished run directory whose drafts were stored (store_drafts = true or --store-drafts).
    pub run_dir: PathBuf,
    /// The rescoring's name, and its folder RUN/rescored/NAME. Without --plugin or --command, the
    /// run's critic of this name, as the run opened it (plugin, config, kinds, weights, isolation).
    #[arg(long, value_name = "NAME")]
    pub critic: String,
    /// A critic the run did not have: a plugin name (searched as the run searches) or the path to a
    /// shared library.
    #[arg(long, conflicts_with = "command")]
    pub plugin: Option<String>,
    /// A critic the run did not have: a program and its arguments speaking docs/PROTOCOL.md. Every
    /// argument after it is the command's, so give it last.
    #[arg(long, num_args = 1.., allow_hyphen_values = true, value_name = "PROGRAM ARGS")]
    pub command: Option<Vec<String>>,
    /// JSON config handed to the critic (replaces the run critic's).
    #[arg(long, value_name = "JSON")]
    pub config: Option<String>,
    /// Only the loops of tasks of these kinds (comma-separated; replaces the run critic's kinds;
    /// default for a new critic: every kind).
    #[arg(long, value_delimiter = ',')]
    pub kinds: Option<Vec<String>>,
    /// The run's dataset files, once per file in the run's order, when they are not where its
    /// manifest.json says (each must be the file the run read: its SHA-256 is checked).
    #[arg(long = "dataset")]
    pub datasets: Vec<PathBuf>,
    /// Extra directory to look for plugins in (repeatable).
    #[arg(long = "plugin-dir")]
    pub plugin_dirs: Vec<PathBuf>,
    /// Run the critic in child processes (isolation = "process").
    #[arg(long)]
    pub isolate_plugins: bool,
    /// Worker threads (default: every core).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Replace an earlier rescoring of this name (its files are removed first).
    #[arg(long, conflicts_with = "resume")]
    pub overwrite: bool,
    /// Finish an interrupted rescoring of this name: what it committed is kept (refused, naming
    /// what changed, when the run, the critic or a dataset differs).
    #[arg(long)]
    pub resume: bool,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum FinalChoice {
    Best,
    Last,
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
