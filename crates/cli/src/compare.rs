//! `critbench compare`: two runs side by side, or two configs of one run, printed (and written
//! with `--out`).

use critbench_report::compare::{compare_runs, render_comparison, write_comparison};
use critbench_report::configs::{compare_configs, render_config_comparisons};

use crate::args::CompareArgs;
use crate::failure::Failure;
use crate::output::Stdout;

pub fn compare(args: CompareArgs) -> Result<(), Failure> {
    let mut out = Stdout::lock();
    if let Some(configs) = &args.configs {
        let [a, b] = configs.as_slice() else {
            return Err(Failure::usage(format!(
                "--configs takes two configs of the run, e.g. --configs p8-r3-stall-e0,p8-r5-stall-e0 (got {})",
                configs.join(",")
            )));
        };
        if args.out.is_some() {
            return Err(Failure::usage("--out is for two runs; with --configs the table is printed"));
        }
        let rows = compare_configs(&args.run_a, a, b)?;
        writeln!(out, "{a} (A) against {b} (B) on the same task × epoch units, per arm and critic:\n")?;
        write!(out, "{}", render_config_comparisons(&rows))?;
        return Ok(());
    }
    let run_b = args.run_b.as_ref().expect("clap requires RUN_B without --configs");
    let comparison = compare_runs(&args.run_a, run_b)?;
    write!(out, "{}", render_comparison(&comparison))?;
    if let Some(dir) = &args.out {
        write_comparison(dir, &comparison)?;
        writeln!(out, "\nwrote compare.md and compare.csv in {}", dir.display())?;
    }
    Ok(())
}
