//! Reading an experiment file: its text, its TOML and its resolution ([`Experiment::load`]), each
//! failure the file's [`ExperimentError`].

use std::path::Path;

use super::file::ExperimentFile;
use super::{Experiment, ExperimentError, ExperimentProblem, Overrides};

impl Experiment {
    /// Reads, validates and resolves an experiment file.
    pub fn load(path: &Path, overrides: &Overrides) -> Result<Experiment, ExperimentError> {
        let fail = |problem: ExperimentProblem| ExperimentError { path: path.to_path_buf(), problem };
        let text = std::fs::read_to_string(path).map_err(|e| fail(ExperimentProblem::Unreadable(e)))?;
        let file: ExperimentFile = toml::from_str(&text).map_err(|error| {
            let line = error.span().map(|span| text[..span.start].lines().count().max(1));
            fail(ExperimentProblem::Toml { line, error: Box::new(error) })
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::resolve(file, &base, overrides)
            .map(|mut experiment| {
                // Absolute: what is resolved against its folder later (a command critic's
                // program, the folder it runs in) is then the same from any working directory.
                experiment.path = Some(std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()));
                experiment
            })
            .map_err(|error| fail(ExperimentProblem::Invalid(error)))
    }
}
