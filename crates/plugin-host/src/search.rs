//! Where plugin libraries are looked for by name (`--plugin-dir`, `$CRITBENCH_PLUGIN_DIR`, beside
//! the binary, the user's plugin directory) and the file names a plugin name stands for.

use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
use std::path::{Path, PathBuf};

/// Where plugins are looked for by name, in order.
#[derive(Clone, Debug, Default)]
pub struct SearchPath {
    /// Searched in order; the first match wins.
    pub dirs: Vec<PathBuf>,
}

/// The environment variable holding extra plugin directories (separated like `PATH`).
pub const PLUGIN_DIR_ENV: &str = "CRITBENCH_PLUGIN_DIR";

impl SearchPath {
    /// `extra` first, then `$CRITBENCH_PLUGIN_DIR`, then the running executable's directory and
    /// its parent (so `target/debug/critbench` and test binaries in `target/debug/deps` both
    /// find the plugins cargo built beside them), then `share/critbench/plugins` under that
    /// parent (`prefix_plugin_dir`: `PREFIX/bin/critbench` finds `PREFIX/share/critbench/plugins`,
    /// a virtualenv's), then the user's plugin directory ([`user_plugin_dir`]). The built-in
    /// critics are never looked for here: they are compiled in (`critbench_builtins`).
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
            dirs.extend(prefix_plugin_dir(&exe));
        }
        dirs.extend(user_plugin_dir(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME")));
        let mut seen = std::collections::HashSet::new();
        dirs.retain(|dir| seen.insert(dir.clone()));
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

    /// The declaration `NAME.plugin.json` (a plugin's info JSON) in the first search directory
    /// that has one: what a plugin that is not built yet says about itself, such as how to build
    /// it (`hints.not_found`). An unreadable or invalid file counts as none.
    pub fn declaration(&self, name: &str) -> Option<critbench_abi::PluginInfo> {
        let file = format!("{name}.plugin.json");
        self.dirs
            .iter()
            .map(|dir| dir.join(&file))
            .filter_map(|path| std::fs::read_to_string(path).ok())
            .find_map(|text| critbench_abi::PluginInfo::parse(&text).ok())
    }

    /// Every shared library (`*.so`, `*.dylib` or `*.dll`, this platform's suffix) in the search
    /// directories, in directory order and by name within one, first occurrence of each file
    /// name only: the plugins a name can resolve to (`libNAME.so` or `libcritbench_NAME.so`).
    pub fn discover(&self) -> Vec<PathBuf> {
        let mut seen = std::collections::BTreeSet::new();
        let mut found = Vec::new();
        for dir in &self.dirs {
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            let mut files: Vec<PathBuf> = entries
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|path| is_library_file_name(path))
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

fn is_library_file_name(path: &Path) -> bool {
    path.is_file()
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(DLL_PREFIX) && n.ends_with(DLL_SUFFIX))
}

/// The plugin directory of the installation prefix an executable at `PREFIX/bin/critbench` belongs
/// to: `PREFIX/share/critbench/plugins` (a virtualenv's, `/usr/local`'s or `~/.local`'s).
pub fn prefix_plugin_dir(exe: &Path) -> Option<PathBuf> {
    Some(exe.parent()?.parent()?.join("share/critbench/plugins"))
}

/// The user's plugin directory: `$XDG_DATA_HOME/critbench/plugins`, or
/// `$HOME/.local/share/critbench/plugins` when `XDG_DATA_HOME` is unset or empty (the XDG base
/// directory default); none without either.
pub fn user_plugin_dir(xdg_data_home: Option<std::ffi::OsString>, home: Option<std::ffi::OsString>) -> Option<PathBuf> {
    let data = match xdg_data_home.filter(|v| !v.is_empty()) {
        Some(data) => PathBuf::from(data),
        None => PathBuf::from(home.filter(|v| !v.is_empty())?).join(".local/share"),
    };
    Some(data.join("critbench/plugins"))
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
    fn the_user_plugin_dir_follows_xdg() {
        assert_eq!(
            user_plugin_dir(Some("/x/data".into()), Some("/home/u".into())),
            Some(PathBuf::from("/x/data/critbench/plugins"))
        );
        assert_eq!(
            user_plugin_dir(Some("".into()), Some("/home/u".into())),
            Some(PathBuf::from("/home/u/.local/share/critbench/plugins"))
        );
        assert_eq!(user_plugin_dir(None, None), None);
    }

    #[test]
    fn an_installed_binary_looks_in_its_prefix_share_dir() {
        assert_eq!(
            prefix_plugin_dir(Path::new("/venv/bin/critbench")),
            Some(PathBuf::from("/venv/share/critbench/plugins"))
        );
        assert_eq!(prefix_plugin_dir(Path::new("/critbench")), None);
    }

    #[test]
    fn every_library_in_a_dir_is_discovered() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["critbench_a", "length", "z"] {
            std::fs::write(dir.path().join(format!("{DLL_PREFIX}{name}{DLL_SUFFIX}")), b"").unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), b"").unwrap();
        let found = SearchPath { dirs: vec![dir.path().into()] }.discover();
        let names: Vec<String> = found.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["critbench_a", "length", "z"].map(|n| format!("{DLL_PREFIX}{n}{DLL_SUFFIX}")).to_vec());
    }

    #[test]
    fn candidates_cover_prefixed_and_plain_names() {
        let names = SearchPath::candidate_file_names("llm-judge");
        assert!(names[0].contains("critbench_llm_judge"));
        assert!(names[1].contains("llm_judge"));
    }
}
