use std::path::PathBuf;

/// Why a plugin could not be loaded or instantiated. All of these are the user's to fix.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error(
        "plugin `{name}` not found; looked for {candidates} in: {searched}\n  \
         hint: build the built-in plugins with `cargo build --workspace`, pass `--plugin-dir DIR`, \
         or give the path to a shared library"
    )]
    NotFound { name: String, candidates: String, searched: String },

    #[error("plugin file {} does not exist", path.display())]
    MissingFile { path: PathBuf },

    #[error("cannot load plugin {}: {message}", path.display())]
    Load { path: PathBuf, message: String },

    #[error(
        "{} is not a critbench plugin: it does not export the symbol `critbench_critic_v1`",
        path.display()
    )]
    MissingSymbol { path: PathBuf },

    #[error(
        "plugin {} speaks critbench ABI version {found}, but this critbench speaks version {expected}; \
         rebuild the plugin against this critbench's header",
        path.display()
    )]
    AbiVersion { path: PathBuf, found: u32, expected: u32 },

    #[error("plugin {} has an invalid descriptor: {message}", path.display())]
    BadDescriptor { path: PathBuf, message: String },

    #[error("plugin `{plugin}` rejected its config {config}: {message}")]
    ConfigRejected { plugin: String, config: String, message: String },

    #[error("the critic process `{critic}` did not start: {message}")]
    Protocol { critic: String, message: String },

    #[error("the command critic's program `{program}` was not found (a bare name is looked up on PATH)")]
    NoProgram { program: String },

    #[error(
        "process isolation of a plugin library needs the `critbench` executable (it runs `critbench plugin-worker`), \
         and none was found beside this program"
    )]
    NoWorker,
}
