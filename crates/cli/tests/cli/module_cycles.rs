//! No module of a crate imports one that imports it back: each crate's top-level modules form a
//! graph without cycles, read off the sources' `crate::module` paths (test code and comments
//! aside), so a layer can be read without the ones above it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Top-level module → the top-level modules of the same crate its code names.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(src).unwrap();
        let top =
            relative.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        if top == "lib" || top == "main" || relative.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let names = graph.entry(top.clone()).or_default();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for (i, _) in line.match_indices("crate::") {
                let rest = &line[i + "crate::".len()..];
                let name: String = rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                let preceded_by_word = line[..i].chars().last().is_some_and(|c| c.is_alphanumeric() || c == '_');
                if !name.is_empty() && name != top && !preceded_by_word {
                    names.insert(name);
                }
            }
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    graph.values_mut().for_each(|names| names.retain(|n| modules.contains(n)));
    graph
}

/// A cycle through `start`, if there is one (depth-first search for a path back to it).
fn cycle_through(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((module, path)) = stack.pop() {
        for next in &graph[&module] {
            if next == start {
                return Some([path.clone(), vec![start.to_string()]].concat());
            }
            if seen.insert(next.clone()) {
                stack.push((next.clone(), [path.clone(), vec![next.clone()]].concat()));
            }
        }
    }
    None
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let mut crates: Vec<PathBuf> = std::fs::read_dir(repo().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    assert!(crates.len() >= 10, "found the crates: {crates:?}");
    let mut cycles = Vec::new();
    for src in &crates {
        let graph = module_graph(src);
        for module in graph.keys() {
            if let Some(cycle) = cycle_through(&graph, module) {
                cycles.push(format!(
                    "{}: {}",
                    src.parent().unwrap().file_name().unwrap().to_string_lossy(),
                    cycle.join(" → ")
                ));
                break;
            }
        }
    }
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    std::fs::write(dir.path().join("a.rs"), "use crate::b::B;\n// crate::c in a comment is no import\n").unwrap();
    std::fs::write(dir.path().join("b.rs"), "pub struct B;\nfn f() { crate::a::g() }\n").unwrap();
    std::fs::write(dir.path().join("c.rs"), "use crate::a;\n#[cfg(test)]\nmod tests { use crate::c; }\n").unwrap();
    let graph = module_graph(dir.path());
    assert_eq!(graph["a"], BTreeSet::from(["b".to_string()]));
    assert_eq!(cycle_through(&graph, "a"), Some(vec!["a".into(), "b".into(), "a".into()]));
    assert_eq!(cycle_through(&graph, "c"), None);
}
