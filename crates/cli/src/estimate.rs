//! `critbench estimate`: a pilot run's projection of a whole run's loops, calls, tokens, cost and
//! time.

use critbench_engine::commands::estimate::{EstimateOptions, Projection, default_dir, estimate as run_estimate};
use critbench_engine::experiment::{DEFAULT_EXPERIMENT, Experiment, Overrides};

use crate::args::EstimateArgs;
use crate::failure::{Failure, LOCAL_EXPERIMENT, check_jobs, experiment_file};
use crate::output::{Stderr, Stdout};

pub fn estimate(args: EstimateArgs) -> Result<(), Failure> {
    let path = experiment_file(args.experiment, &[LOCAL_EXPERIMENT, DEFAULT_EXPERIMENT], "estimate")?;
    check_jobs(args.jobs)?;
    let overrides =
        Overrides { jobs: args.jobs, plugin_dirs: args.plugin_dirs, pricing: args.pricing, ..Overrides::default() };
    let experiment = Experiment::load(&path, &overrides)?;
    let out = args.out.unwrap_or_else(|| default_dir(&experiment));
    let interrupt = crate::signals::install()?;
    let options = EstimateOptions {
        pilot: args.pilot,
        out,
        overwrite: args.overwrite,
        quiet: args.quiet,
        interrupt: Some(interrupt),
    };
    let estimate = run_estimate(&experiment, &options)?;

    let mut out = Stdout::lock();
    writeln!(
        out,
        "estimate of {} from a pilot of {} of its {} tasks (seed {}); {:.0}% ranges:",
        estimate.experiment,
        estimate.pilot_tasks,
        estimate.tasks,
        estimate.seed,
        100.0 * estimate.confidence
    )?;
    let line = |out: &mut Stdout, what: &str, p: &Projection, unit: &str| {
        writeln!(out, "  {what:<28} {:>14} {unit}  ({} to {})", amount(p.point), amount(p.lo), amount(p.hi))
    };
    let currency = estimate.currency.as_deref().unwrap_or("");
    let cost_line = |out: &mut Stdout, what: &str, p: &Projection| {
        let money = |value: f64| {
            if value.is_finite() { critbench_report::format_money(value, None) } else { amount(value) }
        };
        writeln!(out, "  {what:<28} {:>14} {currency}  ({} to {})", money(p.point), money(p.lo), money(p.hi))
    };
    line(&mut out, "loops", &estimate.loops, "")?;
    line(&mut out, "critiques in the outputs", &estimate.critiques, "")?;
    line(&mut out, "rounds recorded", &estimate.recorded_rounds, "")?;
    if let Some(calls) = &estimate.model_calls {
        line(&mut out, "model calls", calls, "")?;
    }
    for (role, projected) in &estimate.roles {
        writeln!(out, "  {role} (`{}`):", projected.model)?;
        line(&mut out, "  model calls", &projected.model_calls, "")?;
        line(&mut out, "  tokens in", &projected.tokens_in, "")?;
        line(&mut out, "  tokens out", &projected.tokens_out, "")?;
        match &projected.cost {
            Some(cost) => cost_line(&mut out, "  cost", cost)?,
            None => writeln!(out, "    {:<26} no price in [pricing]", "cost")?,
        }
    }
    if let Some(cost) = &estimate.cost {
        cost_line(&mut out, "cost", cost)?;
    }
    match &estimate.wall_seconds {
        Some(wall) => line(&mut out, "wall time", wall, "s")?,
        None if estimate.model_calls.is_some() => {
            writeln!(out, "  {:<28} unknown: every pilot call came from the response cache, untimed", "wall time")?
        }
        None => {}
    }
    writeln!(
        out,
        "the pilot's run is in {} ({}); its calls are in the response cache, so the run does not pay for them again",
        estimate.pilot_dir.display(),
        critbench_engine::commands::estimate::ESTIMATE_FILE
    )?;
    if !estimate.exceeds_budget.is_empty() {
        writeln!(
            Stderr,
            "warning: the projected cost exceeds the budget: {}; critbench run refuses this experiment unless --force",
            estimate.exceeds_budget.join("; ")
        );
    }
    Ok(())
}

/// A number as the table shows it: whole numbers for counts, four decimals for small amounts
/// (money has its own digits: [`critbench_report::format_money`]).
fn amount(value: f64) -> String {
    if !value.is_finite() {
        "unbounded".into()
    } else if value.abs() >= 100.0 || value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.4}")
    }
}
