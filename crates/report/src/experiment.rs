//! What the reports read of a run's experiment from its manifest beside the tables: the seed of
//! every bootstrap, and the currency of every cost.

use critbench_storage::manifest::Manifest;

/// The run's `seed`, from its manifest (0 without one): with the data, it seeds a bootstrap's
/// resamples.
pub(crate) fn run_seed(manifest: Option<&Manifest>) -> u64 {
    manifest.and_then(|m| m.experiment.rest.get("seed")).and_then(serde_json::Value::as_u64).unwrap_or(0)
}

/// The currency of the run's prices, from its manifest's `experiment.pricing`.
pub(crate) fn run_currency(manifest: Option<&Manifest>) -> Option<String> {
    manifest?.experiment.rest.get("pricing")?.get("currency")?.as_str().map(str::to_string)
}
