use critbench_core::Critique;
use critbench_plugin_host::{PluginLibrary, SearchPath};

use crate::args::{PluginCheckArgs, PluginListArgs};
use crate::failure::Failure;

pub fn list(args: PluginListArgs) -> Result<(), Failure> {
    let search = SearchPath::default_for_current_exe(&args.plugin_dirs);
    println!("{:<12} {:<9} {:<8} path", "name", "version", "range");
    for builtin in &critbench_builtins::BUILTINS {
        match PluginLibrary::builtin(builtin) {
            Ok(library) => println!("{}", row(&library, "built in")),
            Err(error) => println!("{:<12} {:<9} {:<8} built in ({error})", builtin.name, "?", "?"),
        }
    }
    let found = search.discover();
    for path in &found {
        match PluginLibrary::load(path) {
            // A bare name means the built-in critic; this library loads by its path.
            Ok(library) if critbench_builtins::find(&library.name).is_some() => {
                println!(
                    "{} (shadowed by the built-in: load it by its path)",
                    row(&library, &path.display().to_string())
                )
            }
            Ok(library) => println!("{}", row(&library, &path.display().to_string())),
            Err(error) => println!("{:<12} {:<9} {:<8} {} ({error})", "?", "?", "?", path.display()),
        }
    }
    println!("built in: compiled into this critbench; libraries searched, in order: {}", dirs(&search));
    if found.is_empty() {
        println!("no plugin libraries found there: pass --plugin-dir DIR, or give a library's path in the experiment");
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
/// scripted critique attached.
const SAMPLE_REQUEST: &str = r#"{"request_version":1,"round":0,"draft":"{\"answer\": \"Retrieval-augmented generation grounds answers in retrieved documents.\", \"evidence_ids\": [\"d1\"]}","task":{"id":"sample","prompt":"What does retrieval-augmented generation do?","kind":"rag","evidence":{"d1":"Retrieval-augmented generation grounds answers in retrieved documents."},"critiques":[{"score":7,"issues":["sample issue"]}]}}"#;

pub fn check(args: PluginCheckArgs) -> Result<(), Failure> {
    let search = SearchPath::default_for_current_exe(&args.plugin_dirs);
    let cwd = std::env::current_dir().ok();
    let library =
        PluginLibrary::resolve(&args.plugin, &search, cwd.as_deref()).map_err(|e| Failure::usage(e.to_string()))?;
    if library.builtin {
        println!("plugin:      built in ({})", library.path.display());
    } else {
        println!("plugin:      {}", library.path.display());
    }
    println!("sha256:      {}", library.sha256);
    println!("abi:         v{}", critbench_abi::ABI_VERSION);
    println!("name:        {}", library.name);
    println!("version:     {}", library.version);
    println!("score range: {}–{}", library.range.min, library.range.max);
    println!("thread-safe: {}", if library.thread_safe { "yes" } else { "no (calls are serialized)" });
    if library.policy_dependent {
        println!("note:        its critiques depend on the loop policy");
    }
    let declared = &library.declared;
    if !declared.issue_types.is_empty() {
        let names: Vec<&str> = declared.issue_types.iter().map(|t| t.name.as_str()).collect();
        println!("issue types: {}", names.join(", "));
    }
    if !declared.requires.is_empty() {
        println!("requires:    {}", declared.requires.join(", "));
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
    println!(
        "sample:      score {} · {} issue(s) · {} fatal · {} suggestion(s) · {} dimension(s)",
        critique.score,
        critique.issues.len(),
        critique.fatal_issues.len(),
        critique.suggestions.len(),
        critique.dimensions.len()
    );
    println!("ok");
    Ok(())
}
