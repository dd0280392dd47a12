use crate::args::ReportArgs;
use crate::failure::Failure;

pub fn report(args: ReportArgs) -> Result<(), Failure> {
    let report = critbench_engine::run_dir::rebuild_reports(&args.run_dir, args.labels.as_deref())?;
    println!("{}\n{}", critbench_report::GLANCE_HEADER, critbench_report::glance_table(&report));
    if let Some(evaluated) = &report.evaluators {
        print!("{}", critbench_report::evaluators::glance(evaluated));
    }
    print!("{}", critbench_report::glance_legend(&args.run_dir));
    let files = if args.labels.is_some() {
        "summary.csv, summary.json, comparisons.csv, report.md, report.html, corrected.csv and corrected_comparisons.csv"
    } else {
        "summary.csv, summary.json, comparisons.csv, report.md and report.html"
    };
    println!("wrote {files} in {}", args.run_dir.display());
    Ok(())
}
