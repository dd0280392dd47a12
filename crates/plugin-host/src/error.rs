//! The two kinds of failure of a critic: one that cannot be opened ([`PluginError`], the user's to
//! fix) and one call that gave no critique ([`CallError`], recorded on its round).

use std::path::PathBuf;

/// Why a plugin could not be loaded or instantiated. All of these are the user's to fix.
///
/// Fields: `name`, `plugin` and `critic` name the critic as the experiment or the plugin does;
/// `path` is the library's file; `message` is the loader's, the plugin's or the child's own words.
#[allow(missing_docs)]
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// `hint`: the plugin's own `not_found` hint (from a `NAME.plugin.json` declaration on the
    /// search path), else which critics are built in and how to load a library.
    #[error("plugin `{name}` not found; looked for {candidates} in: {searched}\n  hint: {hint}")]
    NotFound { name: String, candidates: String, searched: String, hint: String },

    /// A plugin named by a path that does not exist.
    #[error("plugin file {} does not exist", path.display())]
    MissingFile { path: PathBuf },

    /// The dynamic loader (or reading the file to hash it) failed.
    #[error("cannot load plugin {}: {message}", path.display())]
    Load { path: PathBuf, message: String },

    /// The library exports no critic descriptor.
    #[error(
        "{} is not a critbench plugin: it does not export the symbol `{ENTRY_SYMBOL}`",
        path.display(),
        ENTRY_SYMBOL = critbench_abi::ENTRY_SYMBOL
    )]
    MissingSymbol { path: PathBuf },

    /// The library exports the entry points of an earlier ABI (`exports`, named), not this one's.
    #[error(
        "{} exports {exports}, of the critbench ABI versions 1 and 2, which this critbench no longer loads; it \
         loads one entry point, `{ENTRY_SYMBOL}`, returning a `critbench_critic_descriptor` of ABI version \
         {ABI_VERSION}: rebuild the plugin against this critbench's `critbench.h` (the info JSON is the \
         descriptor's `info`; open_task, critique_task and close_task are set together, or left NULL to be sent \
         every request whole) or, in Rust, against this critbench's `critbench-abi`",
        path.display(),
        ENTRY_SYMBOL = critbench_abi::ENTRY_SYMBOL,
        ABI_VERSION = critbench_abi::ABI_VERSION
    )]
    RetiredAbi { path: PathBuf, exports: String },

    /// The library was built against another ABI version.
    #[error(
        "plugin {} speaks critbench ABI version {found}, but this critbench speaks version {expected}; \
         rebuild the plugin against this critbench's header",
        path.display()
    )]
    AbiVersion { path: PathBuf, found: u32, expected: u32 },

    /// The descriptor's sizes, pointers or fields are wrong.
    #[error("plugin {} has an invalid descriptor: {message}", path.display())]
    BadDescriptor { path: PathBuf, message: String },

    /// The critic's `create` refused the experiment's config (`config`, as JSON).
    #[error("plugin `{plugin}` rejected its config {config}: {message}")]
    ConfigRejected { plugin: String, config: String, message: String },

    /// `create` said yes but gave no instance.
    #[error(
        "plugin `{plugin}` returned success from `create` but no instance (a NULL pointer); \
         `create` must set `*instance` to a non-NULL pointer (see critbench.h)"
    )]
    NullInstance { plugin: String },

    /// The plugin's declared info (`PluginInfo`) does not parse.
    #[error("plugin `{plugin}` has invalid info: {message}")]
    BadInfo { plugin: String, message: String },

    /// The plugin requires a host service (`service`) this run does not offer.
    #[error("`{plugin}` requires the host service `{service}`, which this run does not offer: {message}")]
    MissingService { plugin: String, service: String, message: String },

    /// A critic's child process did not start, or broke the protocol before its first request.
    #[error("the critic process `{critic}` did not start: {message}")]
    Protocol { critic: String, message: String },

    /// A command critic's `program` is not on PATH.
    #[error("the command critic's program `{program}` was not found (a bare name is looked up on PATH)")]
    NoProgram { program: String },

    /// Isolating a library needs the `critbench` executable, and it was not found.
    #[error(
        "process isolation of a plugin library needs the `critbench` executable (it runs `critbench plugin-worker`), \
         and none was found beside this program"
    )]
    NoWorker,
}

/// Why one call to a critic gave no critique JSON. Its text is what a round records as
/// `critic_error` (docs/FORMAT.md); every variant is one attempt lost, and the retry rule
/// (`docs/REFERENCE.md`, Critique) decides what follows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The critic's own error message: an in-process plugin's error status with a message, or a
    /// child's `error` answer.
    #[error("{0}")]
    Critic(String),
    /// An error status (`status`) without a message.
    #[error("critique returned status {0}")]
    Status(i32),
    /// What the plugin returned (`part`: its critique or its error message) is not UTF-8; the
    /// start of it, with U+FFFD in place of the bad bytes.
    #[error("the plugin's {part} is not valid UTF-8: {excerpt}")]
    NotUtf8 {
        /// `critique` or `error message`.
        part: &'static str,
        /// The start of the text, with U+FFFD in place of the bad bytes.
        excerpt: String,
    },
    /// The child process failed on this request (it crashed, timed out, wrote garbage or
    /// another request's answer) and was stopped; the next request gets a fresh child.
    #[error("{failure}; the critic process was stopped and will be restarted")]
    ChildStopped {
        /// What went wrong, or how the process ended when it died.
        failure: String,
    },
    /// No child process could be started for the request.
    #[error("the critic process could not be restarted: {0}")]
    Restart(String),
    /// A restarted child says it is another critic than the one the run started with.
    #[error("the restarted critic process says it is {found}, not {expected}")]
    OtherCritic {
        /// Name, version and range the new process says.
        found: String,
        /// Name, version and range the run started with.
        expected: String,
    },
}
