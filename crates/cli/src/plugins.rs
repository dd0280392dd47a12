//! `critbench plugins list` and `plugins check`: the critic plugins this critbench finds, and one
//! tried on a sample.

use critbench_core::Critique;
use critbench_plugin_host::{PluginLibrary, SearchPath};

use crate::args::{PluginCheckArgs, PluginListArgs};
use crate::failure::Failure;
use crate::output::Stdout;

pub fn list(args: PluginListArgs) -> Result<(), Failure> {
    let search = SearchPath::default_for_current_exe(&args.plugin_dirs);
    let mut out = Stdout::lock();
    writeln!(out, "{:<12} {:<9} {:<8} path", "name", "version", "range")?;
    for builtin in &critbench_builtins::BUILTINS {
        match PluginLibrary::builtin(builtin) {
            Ok(library) => writeln!(out, "{}", row(&library, "built in"))?,
            Err(error) => writeln!(out, "{:<12} {:<9} {:<8} built in ({error})", builtin.name, "?", "?")?,
        }
    }
    let found = search.discover();
    for path in &found {
        match PluginLibrary::load(path) {
            // A bare name means the built-in critic; this library loads by its path.
            Ok(library) if critbench_builtins::find(&library.name).is_some() => writeln!(
                out,
                "{} (shadowed by the built-in: load it by its path)",
                row(&library, &path.display().to_string())
            )?,
            Ok(library) => writeln!(out, "{}", row(&library, &path.display().to_string()))?,
            Err(error) => writeln!(out, "{:<12} {:<9} {:<8} {} ({error})", "?", "?", "?", path.display())?,
        }
    }
    writeln!(out, "built in: compiled into this critbench; libraries searched, in order: {}", dirs(&search))?;
    if found.is_empty() {
        writeln!(
            out,
            "no plugin libraries found there: pass --plugin-dir DIR, or give a library's path in the experiment"
        )?;
    }
    Ok(())
}

fn row(library: &PluginLibrary, place: &str) -> String {
    format!(
        "{:<12} {:<9} {:<8} {place}",
        library.name,
        library.version,
        format!("{}–{}", library.range.min, library.range.max)
    )
}

fn dirs(search: &SearchPath) -> String {
    search.dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// A request any built-in critic can answer: a short paper that cites known evidence, with a
/// scripted critique attached, and the hidden truth a held-out evaluator's request about a
/// simulated draft carries (for `sim-truth`; docs/PROTOCOL.md).
const SAMPLE_REQUEST: &str = r#"{"request_version":1,"round":0,"truth":{"defects":[]},"draft":"{\"answer\": \"Retrieval-augmented generation grounds answers in retrieved documents.\", \"evidence_ids\": [\"d1\"]}","task":{"id":"sample","prompt":"What does retrieval-augmented generation do?","kind":"rag","evidence":{"d1":"Retrieval-augmented generation grounds answers in retrieved documents."},"critiques":[{"score":7,"issues":["sample issue"]}]}}"#;

pub fn check(args: PluginCheckArgs) -> Result<(), Failure> {
    let search = SearchPath::default_for_current_exe(&args.plugin_dirs);
    let cwd = std::env::current_dir().ok();
    let library =
        PluginLibrary::resolve(&args.plugin, &search, cwd.as_deref()).map_err(|e| Failure::usage(e.to_string()))?;
    let mut out = Stdout::lock();
    if library.builtin {
        writeln!(out, "plugin:      built in ({})", library.path.display())?;
    } else {
        writeln!(out, "plugin:      {}", library.path.display())?;
    }
    writeln!(out, "sha256:      {}", library.sha256)?;
    writeln!(out, "abi:         v{}", critbench_abi::ABI_VERSION)?;
    writeln!(out, "name:        {}", library.name)?;
    writeln!(out, "version:     {}", library.version)?;
    writeln!(out, "score range: {}–{}", library.range.min, library.range.max)?;
    writeln!(out, "thread-safe: {}", if library.thread_safe { "yes" } else { "no (calls are serialized)" })?;
    if library.policy_dependent {
        writeln!(out, "note:        its critiques depend on the loop policy")?;
    }
    let declared = &library.declared;
    if !declared.issue_types.is_empty() {
        let names: Vec<&str> = declared.issue_types.iter().map(|t| t.name.as_str()).collect();
        writeln!(out, "issue types: {}", names.join(", "))?;
    }
    if !declared.requires.is_empty() {
        writeln!(out, "requires:    {}", declared.requires.join(", "))?;
    }
    if serde_json::from_str::<serde_json::Value>(&args.config).is_err() {
        return Err(Failure::usage(format!("--config is not valid JSON: {}", args.config)));
    }
    let critic = library.instantiate(&args.config).map_err(|e| Failure::usage(e.to_string()))?;
    let answer = critic.call(SAMPLE_REQUEST).map_err(|e| {
        // A plugin that calls back into the host needs a run's services.
        let hint = if declared.requires.is_empty() {
            String::new()
        } else {
            format!(
                "\n  hint: this plugin requires the host service(s) {}; `plugins check` offers none. Run it in an \
                 experiment{}",
                declared.requires.join(", "),
                declared.hint("requires").map(|h| format!(" ({h})")).unwrap_or_default()
            )
        };
        Failure::usage(format!("the plugin failed on the sample request: {e}{hint}"))
    })?;
    let critique = Critique::parse(&answer, library.range, None).map_err(|e| {
        Failure::usage(format!("the plugin's answer to the sample request is invalid: {e}\n  answer: {answer}"))
    })?;
    writeln!(
        out,
        "sample:      score {} · {} issue(s) · {} fatal · {} suggestion(s) · {} dimension(s)",
        critique.score,
        critique.issues.len(),
        critique.fatal_issues.len(),
        critique.suggestions.len(),
        critique.dimensions.len()
    )?;
    writeln!(out, "ok")?;
    Ok(())
}
