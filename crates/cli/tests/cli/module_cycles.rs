//! No source file of a crate imports one that imports it back: each crate's files form a graph
//! without cycles, read off the paths their code names (`crate::`, `super::`, `self::`, in a `use`
//! or in code, followed through the names modules re-export; test modules and comments aside), so
//! a file can be read without the ones that use it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
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

/// The code of a source text: comments, strings and character literals blanked (their newlines
/// kept), so that no path written in them reads as one the code names.
fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut code = bytes.to_vec();
    let blank = |code: &mut Vec<u8>, from: usize, to: usize| {
        for byte in &mut code[from..to.min(bytes.len())] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    let mut at = 0;
    while at < bytes.len() {
        let end = match bytes[at] {
            b'/' if bytes[at..].starts_with(b"//") => at + text[at..].find('\n').unwrap_or(text.len() - at),
            b'/' if bytes[at..].starts_with(b"/*") => block_comment_end(text, at),
            b'"' => string_end(bytes, at + 1, 0),
            b'r' if opens_raw_string(bytes, at) && raw_string_hashes(bytes, at).is_some() => {
                let hashes = raw_string_hashes(bytes, at).expect("just matched");
                raw_string_end(bytes, at + 2 + hashes, hashes)
            }
            b'\'' if bytes.get(at + 1) == Some(&b'\\') => string_end(bytes, at + 1, b'\''),
            b'\'' => {
                // A character literal (`'{'`), not a lifetime (`'a`).
                let width = text[at + 1..].chars().next().map_or(1, char::len_utf8);
                if bytes.get(at + 1 + width) == Some(&b'\'') { at + width + 2 } else { at + 1 }
            }
            _ => {
                at += 1;
                continue;
            }
        };
        if end > at + 1 || bytes[at] != b'\'' {
            blank(&mut code, at, end);
        }
        at = end.max(at + 1);
    }
    String::from_utf8(code).expect("only ASCII bytes and whole characters were replaced")
}

/// A token of code: a word (`$crate` reads as `crate`), `::`, or any other character.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    PathSep,
    Mark(char),
}

/// The tokens of `code` (from [`code_only`]); numbers are left out.
fn tokens(code: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_alphanumeric() || c == '_' || c == '$' {
            let mut end = at + c.len_utf8();
            while let Some(&(next, d)) = chars.peek() {
                if !(d.is_alphanumeric() || d == '_') {
                    break;
                }
                end = next + d.len_utf8();
                chars.next();
            }
            let word = code[at..end].trim_start_matches('$');
            if !c.is_ascii_digit() && !word.is_empty() {
                tokens.push(Token::Word(word.to_string()));
            }
        } else if c == ':' && chars.peek().is_some_and(|&(_, d)| d == ':') {
            chars.next();
            tokens.push(Token::PathSep);
        } else if !c.is_whitespace() {
            tokens.push(Token::Mark(c));
        }
    }
    tokens
}

fn word(token: Option<&Token>) -> Option<&str> {
    match token {
        Some(Token::Word(word)) => Some(word),
        _ => None,
    }
}

/// The token index of the bracket that closes the one at `open`, or the end.
fn closing(tokens: &[Token], open: usize, (left, right): (char, char)) -> usize {
    let mut depth = 0usize;
    for (at, token) in tokens.iter().enumerate().skip(open) {
        if *token == Token::Mark(left) {
            depth += 1;
        } else if *token == Token::Mark(right) {
            depth -= 1;
            if depth == 0 {
                return at;
            }
        }
    }
    tokens.len()
}

/// One name a `use` brings in: the path as written (`self` dropped), the name it is known by
/// (its alias, else its last segment; none for a glob or `as _`), and whether it is a glob.
#[derive(Debug)]
struct UseLeaf {
    path: Vec<String>,
    name: Option<String>,
    glob: bool,
}

/// Reads the use tree at `at` under `prefix` into `leaves`: `a::b`, `a::b as c`, `a::*`,
/// `a::{b, c::{self, d}}`. Returns the index past it.
fn use_tree(tokens: &[Token], mut at: usize, prefix: Vec<String>, leaves: &mut Vec<UseLeaf>) -> usize {
    let mut path = prefix;
    if tokens.get(at) == Some(&Token::PathSep) {
        at += 1;
    }
    loop {
        match tokens.get(at) {
            Some(Token::Mark('{')) => {
                at += 1;
                loop {
                    match tokens.get(at) {
                        None => return at,
                        Some(Token::Mark('}')) => return at + 1,
                        Some(Token::Mark(',')) => at += 1,
                        Some(_) => at = use_tree(tokens, at, path.clone(), leaves).max(at + 1),
                    }
                }
            }
            Some(Token::Mark('*')) => {
                leaves.push(UseLeaf { path, name: None, glob: true });
                return at + 1;
            }
            Some(Token::Word(segment)) => {
                at += 1;
                if tokens.get(at) == Some(&Token::PathSep) {
                    path.push(segment.clone());
                    at += 1;
                    continue;
                }
                let mut name = if segment == "self" { path.last().cloned() } else { Some(segment.clone()) };
                if segment != "self" {
                    path.push(segment.clone());
                }
                if word(tokens.get(at)) == Some("as") {
                    name = word(tokens.get(at + 1)).filter(|alias| *alias != "_").map(str::to_string);
                    at += 2;
                }
                leaves.push(UseLeaf { path, name, glob: false });
                return at;
            }
            _ => return at,
        }
    }
}

/// What one file's code names, each in the module it is written in (the file's, or an inline
/// module's within it).
#[derive(Debug, Default)]
struct FileCode {
    /// The inline modules (`mod NAME { … }`), by module path.
    inline_modules: Vec<Vec<String>>,
    /// The items each module of the file defines (`struct`, `enum`, `fn`, `const`, `static`,
    /// `type`, `trait`, `union`, `mod`), by module path.
    defines: BTreeMap<Vec<String>, BTreeSet<String>>,
    /// Each `use`: its module, whether it is a re-export (`pub`, `pub(…)`), and its leaves.
    uses: Vec<(Vec<String>, bool, Vec<UseLeaf>)>,
    /// Each path written in code outside a `use` (`crate::run::cost::RolePrices`,
    /// `chunk::record_chunk`): its module and its segments.
    paths: Vec<(Vec<String>, Vec<String>)>,
    /// Each name the code uses outside a `use` (a word, or the first segment of a path; not a
    /// field or method after `.`), with its module.
    names: BTreeSet<(Vec<String>, String)>,
}

/// The keywords that open an item whose name follows.
const ITEMS: [&str; 9] = ["struct", "enum", "fn", "const", "static", "type", "trait", "union", "mod"];

/// Reads the code of the file whose module is `module`.
fn file_code(module: &[String], code: &str) -> FileCode {
    let tokens = tokens(code);
    // The depth of braces each token is in.
    let mut depths = Vec::with_capacity(tokens.len());
    let mut depth = 0usize;
    for token in &tokens {
        if *token == Token::Mark('}') {
            depth = depth.saturating_sub(1);
        }
        depths.push(depth);
        if *token == Token::Mark('{') {
            depth += 1;
        }
    }
    let mut spans = Vec::new();
    for at in 0..tokens.len() {
        if word(tokens.get(at)) == Some("mod")
            && let Some(name) = word(tokens.get(at + 1))
            && tokens.get(at + 2) == Some(&Token::Mark('{'))
        {
            spans.push((at + 2, closing(&tokens, at + 2, ('{', '}')), name.to_string()));
        }
    }
    // A token's module, and whether it is at that module's top level (outside any body).
    let scope_at = |at: usize| -> (Vec<String>, bool) {
        let inner: Vec<_> = spans.iter().filter(|(open, close, _)| *open < at && at < *close).collect();
        let top = inner.last().map_or(0, |(open, ..)| depths[*open] + 1) == depths[at];
        (module.iter().cloned().chain(inner.iter().map(|(.., name)| name.clone())).collect(), top)
    };
    let mut file = FileCode {
        inline_modules: spans.iter().map(|(open, ..)| scope_at(open + 1).0).collect(),
        ..FileCode::default()
    };
    let mut at = 0;
    while at < tokens.len() {
        let (scope, top) = scope_at(at);
        let Some(first) = word(tokens.get(at)) else {
            at += 1;
            continue;
        };
        if first == "use" {
            let public = match at.checked_sub(1).map(|before| &tokens[before]) {
                Some(Token::Word(before)) => before == "pub",
                // `pub(crate)`, `pub(in crate::run)`: the word before the parenthesis.
                Some(Token::Mark(')')) => {
                    let open = tokens[..at].iter().rposition(|token| *token == Token::Mark('('));
                    word(open.and_then(|open| open.checked_sub(1)).map(|before| &tokens[before])) == Some("pub")
                }
                _ => false,
            };
            let mut leaves = Vec::new();
            let end = use_tree(&tokens, at + 1, Vec::new(), &mut leaves);
            file.uses.push((scope, public, leaves));
            at = end.max(at + 1);
            continue;
        }
        if top
            && ITEMS.contains(&first)
            && let Some(name) = word(tokens.get(at + 1)).filter(|name| !ITEMS.contains(name) && *name != "mut")
        {
            file.defines.entry(scope.clone()).or_default().insert(name.to_string());
        }
        let before = at.checked_sub(1).map(|before| &tokens[before]);
        if before == Some(&Token::PathSep) || before == Some(&Token::Mark('.')) {
            at += 1;
            continue;
        }
        file.names.insert((scope.clone(), first.to_string()));
        let mut segments = vec![first.to_string()];
        let mut next = at + 1;
        while tokens.get(next) == Some(&Token::PathSep)
            && let Some(segment) = word(tokens.get(next + 1))
        {
            segments.push(segment.to_string());
            next += 2;
        }
        if segments.len() > 1 {
            file.paths.push((scope, segments));
        }
        at = next;
    }
    file
}

/// A crate's source files and the modules they hold, to resolve the paths its code writes.
#[derive(Default)]
struct Crate {
    /// Each file, relative to the source folder (`run/loops/chunk.rs`).
    files: Vec<String>,
    /// Module path (`["run", "loops"]`) → the file holding it: each file's own module (`mod.rs`
    /// and `lib.rs` are their folder's), and each inline module.
    modules: BTreeMap<Vec<String>, usize>,
    /// Module path → the items it defines.
    defines: BTreeMap<Vec<String>, BTreeSet<String>>,
    /// Module path → the names its `use`s bring in, each to the path it was written as.
    imports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
    /// Module path → the paths its glob imports (`use super::*`) were written as.
    globs: BTreeMap<Vec<String>, Vec<Vec<String>>>,
}

/// How many names a path may pass through (`use` after `use`) before it is given up.
const DEPTH: usize = 16;

impl Crate {
    fn defines(&self, module: &[String], name: &str) -> bool {
        self.defines.get(module).is_some_and(|names| names.contains(name))
    }

    /// The absolute module path `name` stands for in `module`, when it is the crate's: a child
    /// module, an item defined there, a name a `use` brings in, or one a glob import does.
    fn lookup(&self, module: &[String], name: &str, depth: usize) -> Option<Vec<String>> {
        let here = [module, &[name.to_string()]].concat();
        if self.modules.contains_key(&here) || self.defines(module, name) {
            return Some(here);
        }
        if depth >= DEPTH {
            return None;
        }
        if let Some(target) = self.imports.get(module).and_then(|names| names.get(name)) {
            return self.absolute(module, target, depth + 1);
        }
        self.through_globs(module, name, depth)
    }

    /// What `name` stands for in `module` through its glob imports alone.
    fn through_globs(&self, module: &[String], name: &str, depth: usize) -> Option<Vec<String>> {
        let globs = self.globs.get(module)?;
        globs.iter().filter_map(|glob| self.absolute(module, glob, depth + 1)).find_map(|glob| {
            let named = self.lookup(&glob, name, depth + 1)?;
            // A glob brings in what the module defines or imports, not what reaches it by a glob.
            (self.defines(&glob, name)
                || self.modules.contains_key(&named)
                || self.imports.get(&glob).is_some_and(|names| names.contains_key(name)))
            .then_some(named)
        })
    }

    /// The absolute module path of `path` as written in module `scope`, or `None` when it leads
    /// out of the crate (another crate, a local type's associated item).
    fn absolute(&self, scope: &[String], path: &[String], depth: usize) -> Option<Vec<String>> {
        let (first, mut rest) = path.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => scope.to_vec(),
            "super" => scope.split_last()?.1.to_vec(),
            name => self.lookup(scope, name, depth)?,
        };
        while let Some((segment, after)) = rest.split_first()
            && segment == "super"
        {
            base.pop()?;
            rest = after;
        }
        Some([base, rest.to_vec()].concat())
    }

    /// The file that defines what the absolute `path` names: the file of its longest prefix that
    /// is a module, past every `use` there that brings the next segment in (a re-export, or a
    /// private import a child names through `super::`). `None` when such a `use` leads out of the
    /// crate.
    fn defining_file(&self, path: &[String], depth: usize) -> Option<usize> {
        let known = (0..=path.len()).rev().find(|&k| self.modules.contains_key(&path[..k]))?;
        if known < path.len() && !self.defines(&path[..known], &path[known]) && depth < DEPTH {
            let target = self.lookup(&path[..known], &path[known], 0);
            // A name the module brings in from another crate.
            let brought_in = self.imports.get(&path[..known]).is_some_and(|names| names.contains_key(&path[known]));
            match target {
                Some(target) if target != path[..=known] => {
                    return self.defining_file(&[target, path[known + 1..].to_vec()].concat(), depth + 1);
                }
                None if brought_in => return None,
                _ => {}
            }
        }
        Some(self.modules[&path[..known]])
    }
}

/// The module path of a source file, from its place under the source folder.
fn module_path(relative: &Path) -> Vec<String> {
    let mut path: Vec<String> = relative.iter().map(|part| part.to_string_lossy().into_owned()).collect();
    let last = path.pop().expect("a file").trim_end_matches(".rs").to_string();
    if !(last == "mod" || path.is_empty() && (last == "lib" || last == "main")) {
        path.push(last);
    }
    path
}

/// A crate's files, each → the files its code names → how (each path as written).
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The graph between a crate's source files (test modules and comments aside). A file names
/// another by a path to an item the other defines: in a `use` (`use crate::a::{b, c::d}`,
/// `use super::Item`) or written in code (`crate::run::cost::RolePrices`, `child::function()`
/// after `mod child;`), or by a name a glob import (`use super::*`) brings in. A name a module's
/// `use` brings in is followed to the file that defines it. A path to a module itself names none
/// of its items, and `mod child;` is how a parent holds its children, not an import; so is a
/// re-export (`pub use child::Item;`) of a name the file's own code does not use.
fn file_graph(src: &Path) -> Graph {
    let mut paths = Vec::new();
    rust_files(src, &mut paths);
    paths.sort();
    let tests = test_module_files(src, &paths);
    paths.retain(|path| !tests.iter().any(|test| path.starts_with(test)));
    let mut krate = Crate::default();
    let mut codes = Vec::new();
    for (index, path) in paths.iter().enumerate() {
        let relative = path.strip_prefix(src).unwrap();
        krate.files.push(relative.to_string_lossy().replace('\\', "/"));
        let (code, _) = without_test_modules(&std::fs::read_to_string(path).unwrap());
        let code = file_code(&module_path(relative), &code_only(&code));
        krate.modules.insert(module_path(relative), index);
        for inline in &code.inline_modules {
            krate.modules.insert(inline.clone(), index);
        }
        for (module, names) in &code.defines {
            krate.defines.entry(module.clone()).or_default().extend(names.iter().cloned());
        }
        for (scope, _, leaves) in &code.uses {
            for leaf in leaves {
                if leaf.glob {
                    krate.globs.entry(scope.clone()).or_default().push(leaf.path.clone());
                } else if let Some(name) = &leaf.name {
                    let names = krate.imports.entry(scope.clone()).or_default();
                    names.entry(name.clone()).or_insert(leaf.path.clone());
                }
            }
        }
        codes.push(code);
    }
    let mut graph: Graph = krate.files.iter().map(|file| (file.clone(), BTreeMap::new())).collect();
    for (index, code) in codes.iter().enumerate() {
        let mut names = |absolute: Option<Vec<String>>, text: String| {
            let Some(absolute) = absolute.filter(|absolute| !krate.modules.contains_key(absolute)) else { return };
            if let Some(target) = krate.defining_file(&absolute, 0)
                && target != index
            {
                let edges = graph.entry(krate.files[index].clone()).or_default();
                edges.entry(krate.files[target].clone()).or_default().insert(text);
            }
        };
        let used = |name: &String| code.names.iter().any(|(_, used)| used == name);
        for (scope, reexport, leaves) in &code.uses {
            for leaf in leaves.iter().filter(|leaf| !leaf.glob) {
                if *reexport && !leaf.name.as_ref().is_some_and(used) {
                    continue;
                }
                names(krate.absolute(scope, &leaf.path, 0), format!("use {}", leaf.path.join("::")));
            }
        }
        for (scope, path) in &code.paths {
            names(krate.absolute(scope, path, 0), path.join("::"));
        }
        // Names only a glob import brings in.
        for (scope, name) in &code.names {
            let explicit = krate.imports.get(scope).is_some_and(|names| names.contains_key(name));
            if !explicit && !krate.defines(scope, name) {
                names(krate.through_globs(scope, name, 0), format!("{name} (by a glob import)"));
            }
        }
    }
    graph
}

/// Every cycle of the graph once: for each file on one, the shortest way back to it, unless a
/// cycle through the same files is already listed.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut seen: BTreeSet<BTreeSet<String>> = BTreeSet::new();
    for start in graph.keys() {
        // Breadth-first from `start`, each file reached → the file it was reached from.
        let mut from: BTreeMap<&String, &String> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        let mut last = None;
        'search: while let Some(file) = queue.pop_front() {
            for next in graph.get(file).into_iter().flat_map(BTreeMap::keys) {
                if next == start {
                    last = Some(file);
                    break 'search;
                }
                if !from.contains_key(next) {
                    from.insert(next, file);
                    queue.push_back(next);
                }
            }
        }
        let Some(mut file) = last else { continue };
        let mut cycle = vec![start.clone()];
        while file != start {
            cycle.push(file.clone());
            file = from[file];
        }
        cycle.push(start.clone());
        cycle.reverse();
        if seen.insert(cycle.iter().cloned().collect()) {
            found.push(cycle);
        }
    }
    found
}

/// A cycle as the test reports it: `a.rs → b.rs → a.rs`, then each edge with the paths that make
/// it.
fn describe(cycle: &[String], graph: &Graph) -> String {
    let mut text = cycle.join(" → ");
    for pair in cycle.windows(2) {
        let paths: Vec<&str> = graph[&pair[0]][&pair[1]].iter().map(String::as_str).collect();
        text.push_str(&format!("\n    {} → {}: {}", pair[0], pair[1], paths.join(", ")));
    }
    text
}

/// The cycles of the crate whose source folder is `src`, described.
fn crate_cycles(src: &Path) -> Vec<String> {
    let graph = file_graph(src);
    cycles(&graph).iter().map(|cycle| describe(cycle, &graph)).collect()
}

#[test]
fn no_file_imports_one_that_imports_it_back() {
    let mut crates: Vec<PathBuf> = std::fs::read_dir(repo().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    assert!(crates.len() >= 10, "found the crates: {crates:?}");
    let mut found = Vec::new();
    for src in &crates {
        let name = src.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
        found.extend(crate_cycles(src).into_iter().map(|cycle| format!("{name}: {cycle}")));
    }
    assert!(
        found.is_empty(),
        "{} file cycles (each file may import only from files that do not import it back: move what two files \
         both need into one of them, or down into a file of its own):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// Writes `files` (path, text) under a new folder, a crate's source folder.
fn crate_of(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn edges(graph: &Graph, file: &str) -> BTreeSet<String> {
    graph.get(file).map(|edges| edges.keys().cloned().collect()).unwrap_or_default()
}

/// Two files of one folder importing each other fail the check, naming both and each import;
/// the same files importing one way pass.
#[test]
fn a_planted_cycle_of_two_files_is_reported() {
    let lib = "mod run;\n";
    let run = "mod chunk;\nmod together;\n";
    let chunk = "use super::together::Room;\npub const IN_FLIGHT: usize = 4;\npub fn f(_: Room) {}\n";
    let together = "use super::chunk::{IN_FLIGHT, f};\npub struct Room;\n";
    let dir = crate_of(&[("lib.rs", lib), ("run/mod.rs", run), ("run/chunk.rs", chunk), ("run/together.rs", together)]);
    assert_eq!(
        crate_cycles(dir.path()),
        vec![
            "run/chunk.rs → run/together.rs → run/chunk.rs\n    \
             run/chunk.rs → run/together.rs: use super::together::Room\n    \
             run/together.rs → run/chunk.rs: use super::chunk::IN_FLIGHT, use super::chunk::f"
        ]
    );

    let together = "use super::chunk::{IN_FLIGHT, f};\nuse crate::run::room::Room;\n";
    let chunk = "use super::room::Room;\npub const IN_FLIGHT: usize = 4;\npub fn f(_: Room) {}\n";
    let run = "mod chunk;\nmod room;\nmod together;\n";
    let room = "pub struct Room;\n";
    let dir = crate_of(&[
        ("lib.rs", lib),
        ("run/mod.rs", run),
        ("run/chunk.rs", chunk),
        ("run/room.rs", room),
        ("run/together.rs", together),
    ]);
    let graph = file_graph(dir.path());
    assert_eq!(edges(&graph, "run/together.rs"), BTreeSet::from(["run/chunk.rs".into(), "run/room.rs".into()]));
    assert_eq!(edges(&graph, "run/chunk.rs"), BTreeSet::from(["run/room.rs".into()]));
    assert!(crate_cycles(dir.path()).is_empty(), "{graph:?}");
}

/// A parent declaring its children and re-exporting their items holds them; a child naming an
/// item its parent defines while the parent names one of the child's is a cycle.
#[test]
fn the_cycle_check_tells_holding_a_child_from_importing_from_it() {
    let lib = "mod a;\npub use a::b::Deep;\n";
    let a = "mod b;\npub use b::Deep;\npub(crate) use self::b::Other as Renamed;\npub struct Shared;\n";
    let b = "use super::Shared;\npub struct Deep;\npub struct Other;\n";
    let dir = crate_of(&[("lib.rs", lib), ("a/mod.rs", a), ("a/b.rs", b)]);
    let graph = file_graph(dir.path());
    assert_eq!(edges(&graph, "a/b.rs"), BTreeSet::from(["a/mod.rs".into()]));
    assert!(edges(&graph, "a/mod.rs").is_empty() && edges(&graph, "lib.rs").is_empty(), "{graph:?}");
    assert!(crate_cycles(dir.path()).is_empty());

    // The parent using the child's item itself, by a path in code or a private `use`.
    for a in ["mod b;\npub struct Shared;\nfn f() { b::Deep; }\n", "mod b;\nuse b::Deep;\npub struct Shared;\n"] {
        let dir = crate_of(&[("lib.rs", lib), ("a/mod.rs", a), ("a/b.rs", b)]);
        let cycles = crate_cycles(dir.path());
        assert_eq!(cycles.len(), 1, "{a}");
        assert!(
            cycles[0].starts_with("a/b.rs → a/mod.rs → a/b.rs\n    a/b.rs → a/mod.rs: use super::Shared"),
            "{cycles:?}"
        );
    }
}

/// Paths resolve from the module they are written in: `self::`, `super::super::`, an inline
/// module's `super::`, a name brought in by a `use` (`use crate::run; run::cost::Price`), and
/// names a module re-exports or imports, followed to the file that defines them.
#[test]
fn the_cycle_check_resolves_paths_where_they_are_written() {
    let dir = crate_of(&[
        ("lib.rs", "mod run;\nmod report;\nmod stop;\npub use stop::Stop;\n"),
        ("run/mod.rs", "mod cost;\nmod loops;\npub use cost::Price;\nuse crate::stop::Signal;\n"),
        ("run/cost.rs", "pub struct Price;\npub mod inner { use super::Price; pub struct In; }\n"),
        ("run/loops/mod.rs", "mod chunk;\n"),
        ("run/loops/chunk.rs", "fn f() -> super::super::Price { todo!() }\nfn g(_: crate::Stop) {}\n"),
        (
            "report.rs",
            "use crate::run;\nuse self::local::*;\nmod local { pub fn h(_: super::run::Signal) {} }\nfn p(_: run::cost::inner::In) {}\n",
        ),
        (
            "stop.rs",
            "pub struct Stop;\npub struct Signal;\n/* crate::run::Price */\nconst S: &str = \"crate::report::x\";\n",
        ),
    ]);
    let graph = file_graph(dir.path());
    assert_eq!(edges(&graph, "run/loops/chunk.rs"), BTreeSet::from(["run/cost.rs".into(), "stop.rs".into()]));
    assert_eq!(edges(&graph, "run/mod.rs"), BTreeSet::from(["stop.rs".into()]));
    assert_eq!(edges(&graph, "report.rs"), BTreeSet::from(["run/cost.rs".into(), "stop.rs".into()]), "{graph:?}");
    assert!(edges(&graph, "run/cost.rs").is_empty(), "an inline module's `super` is its file");
    assert!(edges(&graph, "stop.rs").is_empty(), "comments and strings name nothing");
    assert!(edges(&graph, "lib.rs").is_empty());
    assert!(crate_cycles(dir.path()).is_empty());
}

/// A glob import (`use super::*`) names what the globbed module defines or imports from the crate,
/// and only the names the file's code uses; a name it imports from another crate names no file.
#[test]
fn the_cycle_check_follows_glob_imports_to_the_names_used() {
    let dir = crate_of(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\nuse std::collections::BTreeMap;\nuse d::Deep;\npub struct Root;\n"),
        ("a.rs", "use super::*;\nfn f(_: BTreeMap<u8, u8>) {}\n"),
        ("b.rs", "use super::*;\npub fn g(_: Root) {}\n"),
        ("c.rs", "use crate::b::*;\nuse super::*;\nfn h(deep: Deep) { g(Root); deep.Root; }\n"),
        ("d.rs", "pub struct Deep;\n"),
    ]);
    let graph = file_graph(dir.path());
    assert!(edges(&graph, "a.rs").is_empty(), "BTreeMap is std's: {graph:?}");
    assert_eq!(edges(&graph, "b.rs"), BTreeSet::from(["lib.rs".into()]));
    assert_eq!(edges(&graph, "c.rs"), BTreeSet::from(["b.rs".into(), "d.rs".into(), "lib.rs".into()]));
    assert_eq!(graph["c.rs"]["d.rs"], BTreeSet::from(["Deep (by a glob import)".into()]));
}

/// Comments, strings and character literals name nothing; lifetimes are not literals.
#[test]
fn the_cycle_check_reads_code_only() {
    let text = "a('\\'', \"b::c\", '{', b'x') /* d::e */ // f::g\nfn h<'a>(x: &'a str) {}\n";
    assert_eq!(code_only(text).split_whitespace().collect::<String>(), "a(,,,b)fnh<'a>(x:&'astr){}");
    assert_eq!(code_only(text).lines().count(), 2);
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
    std::fs::write(dir.path().join("c/tests.rs"), "use crate::a::f;\n").unwrap();
    std::fs::write(dir.path().join("d.rs"), "pub fn m() {}\n").unwrap();
    std::fs::write(dir.path().join("fixtures.rs"), "use crate::a::f;\n").unwrap();
    std::fs::create_dir(dir.path().join("helpers")).unwrap();
    std::fs::write(dir.path().join("helpers/mod.rs"), "use crate::a::f;\n").unwrap();
    let graph = file_graph(dir.path());
    assert_eq!(edges(&graph, "a.rs"), BTreeSet::from(["b.rs".into(), "c.rs".into()]), "the line after the test import");
    assert_eq!(edges(&graph, "b.rs"), BTreeSet::from(["c.rs".into()]), "not the test module's, but the line after it");
    assert!(edges(&graph, "c.rs").is_empty(), "{graph:?}");
    for test in ["c/tests.rs", "fixtures.rs", "helpers/mod.rs"] {
        assert!(!graph.contains_key(test), "{test} is a test module: {graph:?}");
    }
    assert!(cycles(&graph).is_empty());

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

/// A name the crate root re-exports (`crate::Renamed`), or an item named in a group
/// (`use crate::{a::Alpha, d::D}`), is an import of the file that defines it.
#[test]
fn the_cycle_check_follows_root_reexports_and_groups() {
    let dir = crate_of(&[
        (
            "lib.rs",
            "mod a;\nmod b;\nmod c;\nmod d;\npub use a::{Alpha, inner::Deep as Renamed};\npub(crate) use b::Beta;\npub use c::*;\n",
        ),
        ("a.rs", "pub struct Alpha;\npub mod inner { pub struct Deep; }\nuse crate::Beta;\n"),
        ("b.rs", "pub struct Beta;\nfn f(_: crate::Renamed) {}\n"),
        ("c.rs", "use crate::{\n    d::D,\n    a::Alpha,\n};\n"),
        ("d.rs", "pub struct D;\nuse crate::{self as root};\n"),
    ]);
    let graph = file_graph(dir.path());
    assert_eq!(edges(&graph, "a.rs"), BTreeSet::from(["b.rs".into()]), "crate::Beta is b's");
    assert_eq!(edges(&graph, "b.rs"), BTreeSet::from(["a.rs".into()]), "crate::Renamed is a's");
    assert_eq!(edges(&graph, "c.rs"), BTreeSet::from(["a.rs".into(), "d.rs".into()]), "both paths of the group");
    assert!(edges(&graph, "d.rs").is_empty() && edges(&graph, "lib.rs").is_empty(), "{graph:?}");
    assert_eq!(cycles(&graph), vec![vec!["a.rs".to_string(), "b.rs".into(), "a.rs".into()]]);
}
