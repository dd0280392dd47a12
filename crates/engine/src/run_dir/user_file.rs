//! The guard of a command that writes one file of its user's rather than a run directory
//! (`critbench sample --out FILE`): such a file never replaces a file critbench writes in a
//! folder holding its output, and never lies inside such a folder's own folders.

use std::path::Path;

use crate::run_dir::RunDirError;
use crate::run_dir::holds::{canonical, critbench_output};
use crate::run_dir::layout::critbench_owned;

/// Checks that `path` may be written as a file of the user's: refused (exit status 2, nothing
/// written) when it is a folder, when it lies inside a folder holding critbench's output (a run,
/// a rescoring, a sharded run, a critic benchmark: its progress, its rescorings, its shards), or
/// when it would be — or be written by way of — a file critbench writes in the folder holding
/// such output. Folders are compared by what they hold, not by how the path spells them, so a
/// link or a bind mount of a run is that run.
pub fn claim_file(path: &Path) -> Result<(), RunDirError> {
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(RunDirError::FileIsAFolder { path: path.to_path_buf() });
    }
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let parent = path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let folder = canonical(parent);
    for (depth, holder) in folder.ancestors().enumerate() {
        let Some(holds) = critbench_output(holder) else { continue };
        // Beside critbench's files a file of the user's may live, under a name of its own; the
        // file is written as NAME.tmp first, so that name must not be critbench's either.
        let owned = critbench_owned(&name) || critbench_owned(&format!("{name}.tmp"));
        if depth == 0 && !owned {
            continue;
        }
        return Err(RunDirError::RunsFile {
            path: path.to_path_buf(),
            holder: holder.to_path_buf(),
            holds,
            inside: depth > 0,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use critbench_storage::manifest::Manifest;

    #[test]
    fn a_users_file_goes_beside_a_run_under_its_own_name_and_never_over_or_inside_it() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir_all(run.join("in-progress")).unwrap();
        Manifest { run_id: "demo-1".into(), ..Manifest::default() }.write(&run).unwrap();
        let refused = |path: &Path| claim_file(path).unwrap_err().to_string();
        for name in ["manifest.json", "outcomes.parquet", "report.md", "run.lock", "rescored", "outcomes.parquet.tmp"] {
            let message = refused(&run.join(name));
            assert!(message.contains("is a file critbench writes in"), "{name}: {message}");
        }
        assert!(refused(&run.join("summary.csv")).contains("(a run)"));
        let message = refused(&run.join("in-progress/labels.jsonl"));
        assert!(message.contains("lies inside"), "{message}");
        assert!(refused(&run).contains("is a folder"));
        claim_file(&run.join("labels.jsonl")).unwrap();
        claim_file(&dir.path().join("labels.jsonl")).unwrap();
        // The same run by another spelling.
        std::os::unix::fs::symlink(&run, dir.path().join("link")).unwrap();
        assert!(refused(&dir.path().join("link/manifest.json")).contains("is a file critbench writes in"));
        assert!(refused(&dir.path().join("link/../run/outcomes.parquet")).contains("is a file critbench writes in"));
    }
}
