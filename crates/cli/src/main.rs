//! The `critbench` command: parses flags into plain structs and dispatches to one file per
//! subcommand. All the work happens in the library crates.

mod args;
mod compare;
mod estimate;
mod failure;
mod init;
mod judge;
mod merge;
mod output;
mod plugins;
mod replay;
mod report;
mod rescore;
mod run;
mod sample;
mod shard;
mod show;
mod signals;
mod view;

use std::process::ExitCode;

use clap::Parser;

// Loops are built on worker threads and freed on the writer thread; the system allocator
// serializes such cross-thread frees on an arena lock, mimalloc does not. It is built without
// transparent huge pages (the `no_thp` feature): with them the kernel zeroes a whole 2 MiB page
// at its first touch while mimalloc uses 64 KiB of it at a time, which at 1,024 requests in flight
// was a third of the loop workers' CPU in a run's first second and 40 MB of its peak RSS.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe extern "C" {
    /// mimalloc's runtime options (`mimalloc.h`); linked in with the allocator.
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in mimalloc's option enum (the same index in v2 and v3).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

fn main() -> ExitCode {
    // A run's memory is bounded by the chunks in flight, which are allocated and freed over and
    // over: returning those pages to the OS 10 ms after each free (mimalloc's default) made the
    // kernel zero fresh pages for a fifth of a run's time. Keep freed pages for a second instead.
    // SAFETY: sets a plain integer option; mimalloc reads options at any time.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 1000) };
    let cli = args::Cli::parse();
    let result = match cli.command {
        args::Command::Run(options) => run::run(options),
        args::Command::Report(options) => report::report(options),
        args::Command::Sample(options) => sample::sample(options),
        args::Command::Merge(options) => merge::merge(options),
        args::Command::Replay(options) => replay::replay(options),
        args::Command::Rescore(options) => rescore::rescore(options),
        args::Command::Compare(options) => compare::compare(options),
        args::Command::Show(options) => show::show(options),
        args::Command::View(options) => view::view(options),
        args::Command::Judge(options) => judge::judge(options),
        args::Command::Estimate(options) => estimate::estimate(options),
        args::Command::Init(options) => init::init(options),
        args::Command::Plugins(args::PluginsCommand::List(options)) => plugins::list(options),
        args::Command::Plugins(args::PluginsCommand::Check(options)) => plugins::check(options),
        args::Command::PluginWorker(options) => {
            use critbench_plugin_host::worker::{Served, serve};
            let served = match (options.builtin, options.library) {
                (Some(name), _) => Served::Builtin(name),
                (None, Some(path)) => Served::Library(path),
                (None, None) => unreachable!("clap requires a library unless --builtin is given"),
            };
            return ExitCode::from(serve(&served) as u8);
        }
    };
    match result {
        Ok(()) => ExitCode::from(failure::ExitStatus::Success.code()),
        Err(failure) => failure.report(),
    }
}
