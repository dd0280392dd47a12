//! `critbench init [DIR]`: a starter experiment and its dataset, runnable offline at once.

use std::path::Path;

use crate::args::InitArgs;
use crate::failure::Failure;
use crate::output::Stdout;

/// The files `init` writes, by name, with their contents (compiled into the binary, so an
/// installed `critbench` needs no repository).
pub const STARTER_FILES: [(&str, &str); 2] = [
    ("experiment.toml", include_str!("../starter/experiment.toml")),
    ("tasks.jsonl", include_str!("../starter/tasks.jsonl")),
];

pub fn init(args: InitArgs) -> Result<(), Failure> {
    let dir = args.dir.unwrap_or_else(|| ".".into());
    // Refuse before writing anything, so a refused init leaves the directory as it was.
    let existing: Vec<String> = STARTER_FILES
        .iter()
        .map(|(name, _)| dir.join(name))
        .filter(|path| path.exists())
        .map(|path| path.display().to_string())
        .collect();
    if !existing.is_empty() {
        return Err(Failure::usage(format!(
            "{} already exist{}; critbench init never overwrites a file: remove {} or give another directory \
             (critbench init DIR)",
            existing.join(" and "),
            if existing.len() == 1 { "s" } else { "" },
            if existing.len() == 1 { "it" } else { "them" },
        )));
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::usage(format!("cannot create the directory {}: {e}", dir.display())))?;
    for (name, text) in STARTER_FILES {
        write_new(&dir.join(name), text)?;
    }
    let experiment = dir.join("experiment.toml");
    let mut out = Stdout::lock();
    writeln!(
        out,
        "wrote {} (the experiment) and {} (24 tasks); run it with:\n  critbench run {}",
        experiment.display(),
        dir.join("tasks.jsonl").display(),
        experiment.display()
    )?;
    Ok(())
}

/// Creates `path` with `text`, failing if it appeared since the check.
fn write_new(path: &Path, text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Failure::usage(format!("{} already exists; critbench init never overwrites a file", path.display()))
        } else {
            Failure::usage(format!("cannot write {}: {e}", path.display()))
        }
    })?;
    file.write_all(text.as_bytes()).map_err(|e| Failure::failed(format!("cannot write {}: {e}", path.display())))
}
