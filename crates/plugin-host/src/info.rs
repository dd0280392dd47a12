//! What a critic is (its source and isolation) and what the manifest records about it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use critbench_core::ScoreRange;
use serde::Serialize;

/// Where a critic comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CriticSource {
    /// A built-in plugin name such as `rubric`, or a path to a shared library.
    Plugin(String),
    /// An executable speaking the JSON-lines protocol (`docs/PROTOCOL.md`): program and arguments.
    Command(Vec<String>),
}

/// How a critic's code runs relative to the host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IsolationMode {
    /// The plugin library is loaded into critbench and called directly: fastest, but a crash in
    /// the plugin is a crash of the run.
    #[default]
    InProcess,
    /// The critic runs in child processes that speak JSON lines over stdin/stdout; a crash, hang,
    /// runaway memory or garbage is a `critic_error` for that round and the child is restarted.
    Process,
}

impl IsolationMode {
    /// Reads `in-process` or `process`, as the experiment file writes them.
    pub fn parse(text: &str) -> Option<IsolationMode> {
        match text {
            "in-process" => Some(IsolationMode::InProcess),
            "process" => Some(IsolationMode::Process),
            _ => None,
        }
    }

    /// The mode as the experiment file and the manifest write it.
    pub fn as_str(self) -> &'static str {
        match self {
            IsolationMode::InProcess => "in-process",
            IsolationMode::Process => "process",
        }
    }
}

/// The per-call timeout unless configured otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The address-space limit of each critic child process unless configured otherwise.
pub const DEFAULT_MEMORY_MB: u64 = 4096;

/// How to run one critic.
#[derive(Clone, Debug)]
pub struct Isolation {
    /// In this process, or in child processes.
    pub mode: IsolationMode,
    /// The longest one critique may take. A child process is killed and restarted after it; an
    /// in-process plugin cannot be interrupted, so the run stops with a message instead.
    pub timeout: Duration,
    /// The address-space limit (`RLIMIT_AS`) of each child process, in MiB; `None` for none.
    /// In-process plugins share critbench's memory and have no limit of their own.
    pub memory_mb: Option<u64>,
    /// The most child processes of a thread-safe critic (one for a critic that is not).
    pub children: usize,
    /// The program (and its first arguments) that hosts a plugin library in a child process; the
    /// library's path is appended (`--builtin NAME` for a built-in critic). `None`: `critbench plugin-worker`, found by [`default_worker`].
    pub worker: Option<Vec<OsString>>,
    /// The variables of critbench's environment a command critic is given besides
    /// [`BASE_ENV`](crate::BASE_ENV) (a plugin library's worker is given all of them).
    pub env: Vec<String>,
}

impl Default for Isolation {
    fn default() -> Isolation {
        Isolation {
            mode: IsolationMode::InProcess,
            timeout: DEFAULT_TIMEOUT,
            memory_mb: Some(DEFAULT_MEMORY_MB),
            children: 1,
            worker: None,
            env: Vec::new(),
        }
    }
}

/// `critbench plugin-worker`: the running executable when it is `critbench`, else a `critbench`
/// beside it or in its parent directory (where cargo puts it for test binaries in `deps/`).
pub fn default_worker() -> Option<Vec<OsString>> {
    let exe = std::env::current_exe().ok()?;
    let name = format!("critbench{}", std::env::consts::EXE_SUFFIX);
    let program = if exe.file_name().is_some_and(|n| n == name.as_str()) {
        exe
    } else {
        let dir = exe.parent()?;
        [dir.join(&name), dir.parent()?.join(&name)].into_iter().find(|p| p.is_file())?
    };
    Some(vec![program.into_os_string(), OsString::from("plugin-worker")])
}

/// What the manifest records about an opened critic.
#[derive(Clone, Debug)]
pub struct CriticInfo {
    /// The name the critic gives itself.
    pub name: String,
    /// The version the critic gives itself.
    pub version: String,
    /// The shared library, or the command's program; for a built-in critic, the critbench
    /// executable.
    pub path: PathBuf,
    /// The whole command line of a command critic.
    pub command: Option<Vec<String>>,
    /// Of the library; of a built-in critic, of its source files; of a command critic, of its
    /// script (the first argument naming a file), else of its program.
    pub sha256: String,
    /// The scores the critic gives.
    pub range: ScoreRange,
    /// Whether one instance may be called from several threads at once.
    pub thread_safe: bool,
    /// Whether its critiques depend on the policy (so replaying a grid from recorded critiques
    /// is not exact).
    pub policy_dependent: bool,
    /// What the critic declares about itself: issue types, required services, hints.
    pub declared: critbench_abi::PluginInfo,
    /// How it runs.
    pub isolation: IsolationMode,
    /// A critic compiled into critbench (`critbench_builtins`).
    pub builtin: bool,
}
