use critbench_report::compare::{compare_runs, render_comparison, write_comparison};

use crate::args::CompareArgs;
use crate::failure::Failure;

pub fn compare(args: CompareArgs) -> Result<(), Failure> {
    let comparison = compare_runs(&args.run_a, &args.run_b)?;
    print!("{}", render_comparison(&comparison));
    if let Some(out) = &args.out {
        write_comparison(out, &comparison)?;
        println!("\nwrote compare.md and compare.csv in {}", out.display());
    }
    Ok(())
}
