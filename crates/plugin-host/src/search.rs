use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
use std::path::{Path, PathBuf};

/// Where plugins are looked for by name, in order.
#[derive(Clone, Debug, Default)]
pub struct SearchPath {
    pub dirs: Vec<PathBuf>,
}

/// The environment variable holding extra plugin directories (separated like `PATH`).
pub const PLUGIN_DIR_ENV: &str = "CRITBENCH_PLUGIN_DIR";

impl SearchPath {
    /// `extra` first, then `$CRITBENCH_PLUGIN_DIR`, then the running executable's directory and
    /// its parent (so `target/debug/critbench` and test binaries in `target/debug/deps` both
    /// find the plugins cargo built beside them).
    pub fn default_for_current_exe(extra: &[PathBuf]) -> SearchPath {
        let mut dirs: Vec<PathBuf> = extra.to_vec();
        if let Some(value) = std::env::var_os(PLUGIN_DIR_ENV) {
            dirs.extend(std::env::split_paths(&value));
        }
        if let Ok(exe) = std::env::current_exe()
            && let Some(dir) = exe.parent()
        {
            dirs.push(dir.to_path_buf());
            if let Some(parent) = dir.parent() {
                dirs.push(parent.to_path_buf());
            }
        }
        dirs.dedup();
        SearchPath { dirs }
    }

    /// File names a plugin called `name` may have: `libNAME.so` and `libcritbench_NAME.so` (with
    /// this platform's prefix and suffix, and `-` read as `_`).
    pub fn candidate_file_names(name: &str) -> Vec<String> {
        let stem = name.replace('-', "_");
        vec![format!("{DLL_PREFIX}critbench_{stem}{DLL_SUFFIX}"), format!("{DLL_PREFIX}{stem}{DLL_SUFFIX}")]
    }

    /// Whether `reference` names a file rather than a plugin to look up.
    pub fn is_path(reference: &str) -> bool {
        reference.contains('/')
            || reference.contains('\\')
            || [".so", ".dylib", ".dll"].iter().any(|suffix| reference.ends_with(suffix))
    }

    /// The first existing file for `name`, or every place that was tried.
    pub fn find(&self, name: &str) -> Result<PathBuf, (Vec<String>, Vec<PathBuf>)> {
        let names = Self::candidate_file_names(name);
        for dir in &self.dirs {
            for file in &names {
                let path = dir.join(file);
                if path.is_file() {
                    return Ok(path);
                }
            }
        }
        Err((names, self.dirs.clone()))
    }

    /// Every file in the search directories that looks like a critbench plugin
    /// (`libcritbench_*.so`), first occurrence of each file name only.
    pub fn discover(&self) -> Vec<PathBuf> {
        let prefix = format!("{DLL_PREFIX}critbench_");
        let mut seen = std::collections::BTreeSet::new();
        let mut found = Vec::new();
        for dir in &self.dirs {
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            let mut files: Vec<PathBuf> = entries
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|path| is_plugin_file_name(path, &prefix))
                .collect();
            files.sort();
            for path in files {
                if seen.insert(path.file_name().map(|n| n.to_os_string())) {
                    found.push(path);
                }
            }
        }
        found
    }
}

fn is_plugin_file_name(path: &Path, prefix: &str) -> bool {
    path.is_file()
        && path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix) && n.ends_with(DLL_SUFFIX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths_are_told_apart() {
        assert!(!SearchPath::is_path("rubric"));
        assert!(SearchPath::is_path("./librubric.so"));
        assert!(SearchPath::is_path("plugins/x.so"));
        assert!(SearchPath::is_path("x.dylib"));
    }

    #[test]
    fn candidates_cover_prefixed_and_plain_names() {
        let names = SearchPath::candidate_file_names("llm-judge");
        assert!(names[0].contains("critbench_llm_judge"));
        assert!(names[1].contains("llm_judge"));
    }
}
