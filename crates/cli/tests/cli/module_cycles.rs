//! No module of a crate imports one that imports it back: each crate's top-level modules form a
//! graph without cycles, read off the sources' `crate::` paths — a module's, a group's, or a name
//! the crate root re-exports from a module — (test modules and comments aside), so a layer can be
//! read without the ones above it.

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

/// A source file's text less its test modules: each item `#[cfg(test)] mod NAME { … }` or
/// `#[cfg(test)] mod NAME;` is cut out, and the names of the second kind (modules in files of
/// their own) are returned. Anything else under `#[cfg(test)]` (a `use`, a function) stays: it is
/// compiled into the tests only, but it is code of this file all the same.
fn without_test_modules(text: &str) -> (String, Vec<String>) {
    const ATTRIBUTE: &str = "#[cfg(test)]";
    let mut code = String::with_capacity(text.len());
    let mut file_modules = Vec::new();
    let mut rest = text;
    while let Some(at) = find_attribute(rest, ATTRIBUTE) {
        let after = &rest[at + ATTRIBUTE.len()..];
        match test_module(after) {
            Some((name, length, in_file)) => {
                code.push_str(&rest[..at]);
                if in_file {
                    file_modules.push(name);
                }
                rest = &after[length..];
            }
            None => {
                code.push_str(&rest[..at + ATTRIBUTE.len()]);
                rest = after;
            }
        }
    }
    code.push_str(rest);
    (code, file_modules)
}

/// Where `attribute` first opens a line of `text` (so not inside a comment or a string).
fn find_attribute(text: &str, attribute: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(attribute) {
        let at = from + i;
        let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
        if text[line_start..at].trim().is_empty() {
            return Some(at);
        }
        from = at + attribute.len();
    }
    None
}

/// When `text` (what follows a `#[cfg(test)]`) is a module item: its name, the length of the item
/// in `text`, and whether it lives in a file of its own (`mod NAME;`).
fn test_module(text: &str) -> Option<(String, usize, bool)> {
    let mut at = skip_trivia(text, 0);
    // Further attributes of the same item.
    while text[at..].starts_with("#[") {
        at = skip_trivia(text, matching(text, at + 1)? + 1);
    }
    if text[at..].starts_with("pub") {
        at = skip_trivia(text, at + "pub".len());
        if text[at..].starts_with('(') {
            at = skip_trivia(text, matching(text, at)? + 1);
        }
    }
    let after_mod = text[at..].strip_prefix("mod")?;
    if !after_mod.starts_with(char::is_whitespace) {
        return None;
    }
    at = skip_trivia(text, at + "mod".len());
    let name: String = text[at..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    if name.is_empty() {
        return None;
    }
    at = skip_trivia(text, at + name.len());
    match text[at..].chars().next()? {
        ';' => Some((name, at + 1, true)),
        '{' => Some((name, matching(text, at)? + 1, false)),
        _ => None,
    }
}

/// The index past the whitespace and comments from `at`.
fn skip_trivia(text: &str, mut at: usize) -> usize {
    loop {
        let rest = &text[at..];
        let trimmed = rest.trim_start();
        at += rest.len() - trimmed.len();
        if trimmed.starts_with("//") {
            at += trimmed.find('\n').unwrap_or(trimmed.len());
        } else if trimmed.starts_with("/*") {
            at = block_comment_end(text, at);
        } else {
            return at;
        }
    }
}

/// The index past the (possibly nested) block comment opening at `at`.
fn block_comment_end(text: &str, mut at: usize) -> usize {
    let bytes = text.as_bytes();
    let mut depth = 0;
    while at < bytes.len() {
        if bytes[at..].starts_with(b"/*") {
            depth += 1;
            at += 2;
        } else if bytes[at..].starts_with(b"*/") {
            depth -= 1;
            at += 2;
            if depth == 0 {
                return at;
            }
        } else {
            at += 1;
        }
    }
    bytes.len()
}

/// The index of the bracket that closes the one at `open` (`{`, `(` or `[`), past strings,
/// character literals and comments; `None` when it is never closed.
fn matching(text: &str, open: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut at = open;
    while at < bytes.len() {
        match bytes[at] {
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at);
                }
            }
            b'/' if bytes[at..].starts_with(b"//") => {
                at += text[at..].find('\n').unwrap_or(text.len() - at);
                continue;
            }
            b'/' if bytes[at..].starts_with(b"/*") => {
                at = block_comment_end(text, at);
                continue;
            }
            b'"' => {
                at = string_end(bytes, at + 1, 0);
                continue;
            }
            b'r' if raw_string_hashes(bytes, at).is_some() && opens_raw_string(bytes, at) => {
                let hashes = raw_string_hashes(bytes, at).expect("just matched");
                at = raw_string_end(bytes, at + 2 + hashes, hashes);
                continue;
            }
            b'\'' => {
                // A character literal (`'{'`, `'\''`), not a lifetime (`'a`).
                if bytes.get(at + 1) == Some(&b'\\') {
                    at = string_end(bytes, at + 1, b'\'');
                    continue;
                }
                let width = text[at + 1..].chars().next().map_or(1, char::len_utf8);
                if bytes.get(at + 1 + width) == Some(&b'\'') {
                    at += width + 2;
                    continue;
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// Whether the `r` at `at` opens a raw string (`r"`, `br"`), not ends a word (`for"`).
fn opens_raw_string(bytes: &[u8], at: usize) -> bool {
    let word = |i: Option<usize>| i.is_some_and(|i: usize| bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_');
    match at.checked_sub(1) {
        Some(before) if bytes[before] == b'b' => !word(before.checked_sub(1)),
        before => !word(before),
    }
}

/// The index past a quoted literal whose text starts at `at` and ends at `close` (`"` when 0),
/// escapes skipped.
fn string_end(bytes: &[u8], mut at: usize, close: u8) -> usize {
    let close = if close == 0 { b'"' } else { close };
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            byte if byte == close => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// The number of `#` of a raw string opening at `at` (`r"`, `r#"`, …).
fn raw_string_hashes(bytes: &[u8], at: usize) -> Option<usize> {
    let hashes = bytes[at + 1..].iter().take_while(|&&b| b == b'#').count();
    (bytes.get(at + 1 + hashes) == Some(&b'"')).then_some(hashes)
}

/// The index past the raw string whose text starts at `at`, closed by `"` and `hashes` `#`s.
fn raw_string_end(bytes: &[u8], mut at: usize, hashes: usize) -> usize {
    while at < bytes.len() {
        if bytes[at] == b'"' && bytes[at + 1..].iter().take(hashes).filter(|&&b| b == b'#').count() == hashes {
            return at + 1 + hashes;
        }
        at += 1;
    }
    bytes.len()
}

/// The files of a crate's source folder that are test modules of their own (`#[cfg(test)] mod
/// NAME;`), and under which folders every file is one.
fn test_module_files(src: &Path, files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut tests = BTreeSet::new();
    for file in files {
        let (_, modules) = without_test_modules(&std::fs::read_to_string(file).unwrap());
        let stem = file.file_stem().unwrap().to_string_lossy();
        let parent = file.parent().unwrap();
        // `lib.rs`, `main.rs` and `mod.rs` declare their children beside them; `x.rs` in `x/`.
        let dir = if file.parent() == Some(src) && (stem == "lib" || stem == "main") || stem == "mod" {
            parent.to_path_buf()
        } else {
            parent.join(stem.as_ref())
        };
        for name in modules {
            tests.insert(dir.join(format!("{name}.rs")));
            tests.insert(dir.join(&name));
        }
    }
    tests
}

/// Top-level module → the top-level modules of the same crate its code names: by a path
/// (`crate::module::…`), in a group (`use crate::{module, other::Item}`), or by a name the crate
/// root re-exports from a module (`crate::Item` after `pub use module::Item;` in `lib.rs`).
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let tests = test_module_files(src, &files);
    let root = ["lib.rs", "main.rs"].iter().map(|name| src.join(name)).find(|path| path.is_file());
    let reexports = root.map_or_else(BTreeMap::new, |root| {
        root_reexports(&without_test_modules(&std::fs::read_to_string(root).unwrap()).0)
    });
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        if tests.iter().any(|test| file.starts_with(test)) {
            continue;
        }
        let relative = file.strip_prefix(src).unwrap();
        let top =
            relative.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let (code, _) = without_test_modules(&std::fs::read_to_string(&file).unwrap());
        let code: String = code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
        let names = graph.entry(top.clone()).or_default();
        for first in crate_paths(&code) {
            let module = reexports.get(&first).cloned().unwrap_or(first);
            if module != top {
                names.insert(module);
            }
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    graph.values_mut().for_each(|names| names.retain(|n| modules.contains(n)));
    graph
}

/// The first segment after every `crate::` of `code`: of the path, or of each path of a group
/// `crate::{a, b::C}`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut firsts = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let preceded_by_word = code[..i].chars().last().is_some_and(|c| c.is_alphanumeric() || c == '_');
        if preceded_by_word {
            continue;
        }
        let rest = &code[i + "crate::".len()..];
        if rest.starts_with('{') {
            if let Some(close) = matching(rest, 0) {
                firsts.extend(group_items(&rest[1..close]).iter().map(|item| first_segment(item)));
            }
        } else {
            firsts.push(first_segment(rest));
        }
    }
    firsts.retain(|name| !name.is_empty() && name != "self");
    firsts
}

/// The items of a use group's inside (`a, b::{C, D}, E as F`), split at its top-level commas.
fn group_items(inside: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (at, c) in inside.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(inside[start..at].trim());
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(inside[start..].trim());
    items.retain(|item| !item.is_empty());
    items
}

fn first_segment(path: &str) -> String {
    path.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// Name → the module it comes from, for every name the crate root re-exports from one of its
/// modules (`pub use module::Name;`, `pub use module::{A, b::C as D};`); globs name nothing.
fn root_reexports(root: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for (at, _) in root.match_indices("use ") {
        let line_start = root[..at].rfind('\n').map_or(0, |n| n + 1);
        let before = root[line_start..at].trim();
        if !before.starts_with("pub") {
            continue;
        }
        let Some(end) = root[at..].find(';') else { continue };
        let tree = root[at + "use ".len()..at + end].trim();
        let tree = tree.strip_prefix("crate::").or_else(|| tree.strip_prefix("self::")).unwrap_or(tree);
        let module = first_segment(tree);
        for leaf in use_leaves(tree) {
            names.insert(leaf, module.clone());
        }
    }
    names
}

/// The names a use tree brings in: each leaf's alias, else its last segment.
fn use_leaves(tree: &str) -> Vec<String> {
    match (tree.find('{'), tree.rfind('}')) {
        (Some(open), Some(close)) if open < close => {
            group_items(&tree[open + 1..close]).into_iter().flat_map(use_leaves).collect()
        }
        _ => {
            let leaf = tree.rsplit(" as ").next().unwrap_or(tree);
            let name = leaf.rsplit("::").next().unwrap_or(leaf).trim();
            if name == "*" || name == "self" || name.is_empty() { Vec::new() } else { vec![name.to_string()] }
        }
    }
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
        // Every cycle once, whichever of its modules it was found through.
        let mut seen: BTreeSet<BTreeSet<String>> = BTreeSet::new();
        for module in graph.keys() {
            if let Some(cycle) = cycle_through(&graph, module)
                && seen.insert(cycle.iter().cloned().collect())
            {
                let name = src.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
                cycles.push(format!("{name}: {}", cycle.join(" → ")));
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

/// A `#[cfg(test)] use` is code of its file, and so is everything after it; only test modules
/// (inline, whatever their braces hold, or in files of their own) are left out.
#[test]
fn the_cycle_check_reads_past_a_test_import_and_skips_only_test_modules() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("lib.rs"),
        "mod a;\nmod b;\nmod c;\nmod d;\n#[cfg(test)]\nmod fixtures;\n#[cfg(test)]\nmod helpers;\n",
    )
    .unwrap();
    let a = "#[cfg(test)]\nuse crate::c::for_tests;\n\npub fn f() -> u8 {\n    crate::b::g()\n}\n";
    std::fs::write(dir.path().join("a.rs"), a).unwrap();
    let b = r###"pub fn g() -> u8 { 1 }

#[cfg(test)]
#[allow(unused)]
pub(crate) mod tests {
    const OPEN: &str = "}{ crate::d:: ";
    const RAW: &str = r#"}"#;
    const BRACE: char = '}';
    fn lifetime<'a>(text: &'a str) -> &'a str { /* } */ text }
    // }
    use crate::a;
}

/// Code after the test module is read again.
pub fn h() -> u8 { crate::c::k() }
"###;
    std::fs::write(dir.path().join("b.rs"), b).unwrap();
    std::fs::write(dir.path().join("c.rs"), "pub fn k() -> u8 { 2 }\n#[cfg(test)]\nmod tests;\n").unwrap();
    std::fs::create_dir(dir.path().join("c")).unwrap();
    std::fs::write(dir.path().join("c/tests.rs"), "use crate::a;\n").unwrap();
    std::fs::write(dir.path().join("d.rs"), "pub fn m() {}\n").unwrap();
    std::fs::write(dir.path().join("fixtures.rs"), "use crate::a;\n").unwrap();
    std::fs::create_dir(dir.path().join("helpers")).unwrap();
    std::fs::write(dir.path().join("helpers/mod.rs"), "use crate::a;\n").unwrap();
    let graph = module_graph(dir.path());
    assert_eq!(graph["a"], BTreeSet::from(["b".to_string(), "c".to_string()]), "the line after the test import");
    assert_eq!(graph["b"], BTreeSet::from(["c".to_string()]), "not the test module's, but the line after it");
    assert!(graph["c"].is_empty(), "c/tests.rs is c's test module: {graph:?}");
    assert!(!graph.contains_key("fixtures") && !graph.contains_key("helpers"), "{graph:?}");
    assert_eq!(cycle_through(&graph, "a"), None);

    // The old reading stopped at the first `#[cfg(test)]`, and saw nothing of `a` past it.
    let (code, modules) = without_test_modules(a);
    assert!(code.contains("crate::b::g()"), "{code}");
    assert!(modules.is_empty());
    let (code, modules) = without_test_modules(b);
    assert!(!code.contains("mod tests") && !code.contains("crate::d") && code.contains("crate::c::k()"), "{code}");
    assert!(modules.is_empty());
    assert_eq!(
        without_test_modules("#[cfg(test)]\nmod tests;\nfn f() {}\n"),
        ("\nfn f() {}\n".into(), vec!["tests".into()])
    );
}

/// A name re-exported by the crate root (`crate::Error`), or a module named in a group
/// (`use crate::{a, b::C}`), is an import of the module it comes from.
#[test]
fn the_cycle_check_follows_root_reexports_and_groups() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("lib.rs"),
        "mod a;\nmod b;\nmod c;\nmod d;\npub use a::{Alpha, inner::Deep as Renamed};\npub(crate) use b::Beta;\npub use c::*;\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("a.rs"),
        "pub struct Alpha;\npub mod inner { pub struct Deep; }\nuse crate::Beta;\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("b.rs"), "pub struct Beta;\nfn f(_: crate::Renamed) {}\n").unwrap();
    std::fs::write(dir.path().join("c.rs"), "use crate::{\n    d,\n    a::Alpha,\n};\n").unwrap();
    std::fs::write(dir.path().join("d.rs"), "use crate::{self as root};\n").unwrap();
    let graph = module_graph(dir.path());
    assert_eq!(graph["a"], BTreeSet::from(["b".to_string()]), "crate::Beta is b's");
    assert_eq!(graph["b"], BTreeSet::from(["a".to_string()]), "crate::Renamed is a's");
    assert_eq!(graph["c"], BTreeSet::from(["a".to_string(), "d".to_string()]), "both paths of the group");
    assert!(graph["d"].is_empty(), "{graph:?}");
    assert_eq!(cycle_through(&graph, "a"), Some(vec!["a".into(), "b".into(), "a".into()]));
}
