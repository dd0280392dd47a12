//! `critbench merge RUN`: a sharded run's shards joined into one run and its reports.

use critbench_engine::run_dir::merge::merge_run;

use crate::args::MergeArgs;
use crate::failure::Failure;
use crate::output::Stdout;

pub fn merge(args: MergeArgs) -> Result<(), Failure> {
    let merged = merge_run(&args.run_dir)?;
    let mut out = Stdout::lock();
    write!(out, "{}", critbench_report::terminal(&merged.report, &merged.out_dir))?;
    writeln!(
        out,
        "merged {} shard(s), {} loops: wrote manifest.json, summary.csv, summary.json, comparisons.csv, \
         config_comparisons.csv, power.csv, report.md and report.html in {}",
        merged.shards,
        merged.loops,
        merged.out_dir.display()
    )?;
    Ok(())
}
