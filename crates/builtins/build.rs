//! Hashes each built-in critic's source files, so that a run records which code critiqued it
//! (the manifest's `sha256`, as a shared library's file hash does) and a resume after the critic
//! changed is refused.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The built-in critics' directories, relative to this crate, and the variable each hash goes to.
const CRITICS: [(&str, &str); 5] = [
    ("../../plugins/rubric", "CRITBENCH_SOURCE_SHA256_RUBRIC"),
    ("../../plugins/evidence", "CRITBENCH_SOURCE_SHA256_EVIDENCE"),
    ("../../plugins/scripted", "CRITBENCH_SOURCE_SHA256_SCRIPTED"),
    ("../../plugins/llm-judge", "CRITBENCH_SOURCE_SHA256_LLM_JUDGE"),
    ("../../plugins/sim-truth", "CRITBENCH_SOURCE_SHA256_SIM_TRUTH"),
];

/// The glue every built-in's descriptor is made of.
const ABI: &str = "../abi/src";

fn main() {
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let abi = files(&here.join(ABI));
    println!("cargo:rerun-if-changed={ABI}");
    for (dir, variable) in CRITICS {
        let root = here.join(dir);
        println!("cargo:rerun-if-changed={dir}/Cargo.toml");
        println!("cargo:rerun-if-changed={dir}/src");
        let mut sources = files(&root.join("src"));
        sources.push(root.join("Cargo.toml"));
        sources.extend(abi.iter().cloned());
        let mut hash = Sha256::new();
        for file in &sources {
            let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
            // Each file's length first, so that no two lists of files hash alike.
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(&bytes);
        }
        let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
        println!("cargo:rustc-env={variable}={hex}");
    }
}

/// Every file under `dir`, sorted by path.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a readable directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}
