//! The `critbench` command: parses flags into plain structs and dispatches to one file per
//! subcommand. All the work happens in the library crates.

mod args;
mod compare;
mod failure;
mod judge;
mod plugins;
mod replay;
mod report;
mod run;

use std::process::ExitCode;

use clap::Parser;

// Loops are built on worker threads and freed on the writer thread; the system allocator
// serializes such cross-thread frees on an arena lock, mimalloc does not.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let result = match cli.command {
        args::Command::Run(options) => run::run(options),
        args::Command::Report(options) => report::report(options),
        args::Command::Replay(options) => replay::replay(options),
        args::Command::Compare(options) => compare::compare(options),
        args::Command::Judge(options) => judge::judge(options),
        args::Command::Plugins(args::PluginsCommand::List(options)) => plugins::list(options),
        args::Command::Plugins(args::PluginsCommand::Check(options)) => plugins::check(options),
        args::Command::PluginWorker(options) => {
            return ExitCode::from(critbench_plugin_host::worker::serve(&options.library) as u8);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}
