use crate::args::ReportArgs;
use crate::failure::Failure;

pub fn report(args: ReportArgs) -> Result<(), Failure> {
    let report = critbench_engine::run_dir::rebuild_reports(&args.run_dir)?;
    println!("{}", critbench_report::glance_table(&report));
    println!(
        "wrote summary.csv, summary.json, comparisons.csv, report.md and report.html in {}",
        args.run_dir.display()
    );
    Ok(())
}
