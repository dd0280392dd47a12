//! `critbench report RUN`: a finished run's reports written again (with `--labels`, corrected by
//! hand labels).

use crate::args::ReportArgs;
use crate::failure::Failure;
use crate::output::Stdout;

pub fn report(args: ReportArgs) -> Result<(), Failure> {
    let report = critbench_engine::run_dir::rebuild_reports(&args.run_dir, args.labels.as_deref())?;
    let mut out = Stdout::lock();
    write!(out, "{}", critbench_report::terminal(&report, &args.run_dir))?;
    let files = if args.labels.is_some() {
        "summary.csv, summary.json, comparisons.csv, report.md, report.html, corrected.csv and corrected_comparisons.csv"
    } else {
        "summary.csv, summary.json, comparisons.csv, report.md and report.html"
    };
    writeln!(out, "wrote {files} in {}", args.run_dir.display())?;
    Ok(())
}
