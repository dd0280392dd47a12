//! Plugin libraries and the critics compiled into critbench, opened through the one ABI
//! descriptor (`critbench.h`) and called in this process.

use std::collections::HashMap;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use critbench_abi::{
    ABI_VERSION, Buffer, CloseTaskFn, CreateFn, CriticDescriptor, CritiqueFn, CritiqueTaskFn, DestroyFn, ENTRY_SYMBOL,
    EntryPoint, FLAG_POLICY_DEPENDENT, FLAG_THREAD_SAFE, FreeBufferFn, HostTable, OpenTaskFn, PluginInfo,
    RETIRED_SYMBOLS, STATUS_ERROR, STATUS_OK, Str,
};
use critbench_core::ScoreRange;
use sha2::{Digest, Sha256};

use crate::info::{CriticInfo, IsolationMode};
use crate::program::excerpt;
use crate::services::{CallScope, Host, ServiceError};
use crate::{CallError, PluginError, SearchPath};
use critbench_builtins::Builtin;

/// A loaded plugin library, or a critic compiled into critbench: its descriptor and what the
/// manifest records about it.
#[derive(Debug)]
pub struct PluginLibrary {
    /// The shared library; for a built-in critic, the critbench executable holding it.
    pub path: PathBuf,
    /// Of the library file; for a built-in critic, of its source files ([`Builtin::source_sha256`]).
    pub sha256: String,
    /// The name its descriptor gives.
    pub name: String,
    /// The version its descriptor gives.
    pub version: String,
    /// The scores it gives.
    pub range: ScoreRange,
    /// Whether one instance may be called from several threads at once.
    pub thread_safe: bool,
    /// Whether its critiques depend on the policy.
    pub policy_dependent: bool,
    /// What the plugin declares about itself (its descriptor's `info`); empty without it.
    pub declared: PluginInfo,
    /// Compiled into critbench (`critbench_builtins`) rather than loaded from a file.
    pub builtin: bool,
    functions: Functions,
}

/// A descriptor's functions, copied out of it once they are known to be set.
#[derive(Clone, Copy, Debug)]
struct Functions {
    create: CreateFn,
    critique: CritiqueFn,
    destroy: DestroyFn,
    free_buffer: FreeBufferFn,
    /// The task functions, when the plugin reads a task once per loop.
    tasks: Option<TaskFunctions>,
}

/// The functions of a plugin that reads a task once per loop.
#[derive(Clone, Copy, Debug)]
struct TaskFunctions {
    open_task: OpenTaskFn,
    critique_task: CritiqueTaskFn,
    close_task: CloseTaskFn,
}

/// What a plugin reference names: a critic compiled into critbench or a shared library's file.
#[derive(Clone, Debug)]
pub enum Located {
    /// A critic compiled into critbench.
    Builtin(&'static Builtin),
    /// A shared library's file.
    File(PathBuf),
}

/// Libraries loaded so far, by canonical path: each is loaded once per process.
fn loaded() -> &'static Mutex<HashMap<PathBuf, Arc<PluginLibrary>>> {
    static LOADED: OnceLock<Mutex<HashMap<PathBuf, Arc<PluginLibrary>>>> = OnceLock::new();
    LOADED.get_or_init(Default::default)
}

/// The built-in critics opened so far, by name.
fn opened_builtins() -> &'static Mutex<HashMap<&'static str, Arc<PluginLibrary>>> {
    static OPENED: OnceLock<Mutex<HashMap<&'static str, Arc<PluginLibrary>>>> = OnceLock::new();
    OPENED.get_or_init(Default::default)
}

impl PluginLibrary {
    /// Resolves `reference` — a plugin name such as `rubric` (a built-in critic's, else a library
    /// on `search`) or a path to a shared library (relative paths against `base_dir` when given)
    /// — and loads it.
    pub fn resolve(
        reference: &str,
        search: &SearchPath,
        base_dir: Option<&Path>,
    ) -> Result<Arc<PluginLibrary>, PluginError> {
        match Self::locate(reference, search, base_dir)? {
            Located::Builtin(builtin) => Self::builtin(builtin),
            Located::File(path) => Self::load(&path),
        }
    }

    /// What `reference` names, without loading it: a built-in critic for a name that is one,
    /// else the file.
    pub fn locate(reference: &str, search: &SearchPath, base_dir: Option<&Path>) -> Result<Located, PluginError> {
        let path = if SearchPath::is_path(reference) {
            let path = PathBuf::from(reference);
            match base_dir {
                Some(base) if path.is_relative() => base.join(path),
                _ => path,
            }
        } else if let Some(builtin) = critbench_builtins::find(reference) {
            return Ok(Located::Builtin(builtin));
        } else {
            search.find(reference).map_err(|(names, dirs)| PluginError::NotFound {
                hint: search
                    .declaration(reference)
                    .and_then(|info| info.hint("not_found").map(str::to_string))
                    .unwrap_or_else(|| {
                        format!(
                            "the built-in critics are {}; `critbench plugins list` shows them and the libraries \
                             found. Pass `--plugin-dir DIR`, or give the path to a shared library",
                            builtin_names()
                        )
                    }),
                name: reference.to_string(),
                candidates: names.join(" or "),
                searched: if dirs.is_empty() {
                    "(no directories)".to_string()
                } else {
                    dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
                },
            })?
        };
        if !path.is_file() {
            return Err(PluginError::MissingFile { path });
        }
        Ok(Located::File(path))
    }

    /// The built-in critic `builtin`, opened once per process through its descriptor and checked
    /// as a library's is.
    pub fn builtin(builtin: &'static Builtin) -> Result<Arc<PluginLibrary>, PluginError> {
        let mut cache = opened_builtins().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(library) = cache.get(builtin.name) {
            return Ok(Arc::clone(library));
        }
        let path = std::env::current_exe()
            .and_then(|exe| exe.canonicalize())
            .unwrap_or_else(|_| PathBuf::from(format!("(built-in {})", builtin.name)));
        let library =
            Arc::new(Self::from_descriptor(builtin.descriptor, path, builtin.source_sha256.to_string(), true)?);
        cache.insert(builtin.name, Arc::clone(&library));
        Ok(library)
    }

    /// Loads the library at `path` (once per process) and checks its descriptor.
    pub fn load(path: &Path) -> Result<Arc<PluginLibrary>, PluginError> {
        if !path.is_file() {
            return Err(PluginError::MissingFile { path: path.to_path_buf() });
        }
        let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let mut cache = loaded().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(library) = cache.get(&canonical) {
            return Ok(Arc::clone(library));
        }
        let library = Arc::new(Self::open(&canonical)?);
        cache.insert(canonical, Arc::clone(&library));
        Ok(library)
    }

    fn open(path: &Path) -> Result<PluginLibrary, PluginError> {
        let bytes = std::fs::read(path).map_err(|e| PluginError::Load { path: path.into(), message: e.to_string() })?;
        let sha256 = critbench_core::hex(&Sha256::digest(&bytes));
        // SAFETY: loading a library runs its initializers; the user chose this file as a plugin.
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| PluginError::Load { path: path.into(), message: with_sources(&e) })?;
        // Never unloaded: see the crate docs.
        let library: &'static libloading::Library = Box::leak(Box::new(library));
        // SAFETY: the symbol's type is fixed by the ABI; a library exporting the name with another
        // type is not a critbench plugin and breaks the ABI contract. The entry point takes no
        // arguments and returns a pointer to static data.
        let Ok(entry) = (unsafe { library.get::<EntryPoint>(ENTRY_SYMBOL.as_bytes()) }) else {
            // SAFETY: only whether the symbols exist is asked; nothing is called or read.
            let retired: Vec<&str> = (RETIRED_SYMBOLS.iter().copied())
                .filter(|symbol| unsafe { library.get::<*const c_void>(symbol.as_bytes()) }.is_ok())
                .collect();
            if retired.is_empty() {
                return Err(PluginError::MissingSymbol { path: path.into() });
            }
            let named: Vec<String> = retired.iter().map(|symbol| format!("`{symbol}`")).collect();
            let exports = match named.split_last() {
                Some((last, init)) if !init.is_empty() => format!("{} and {last}", init.join(", ")),
                _ => named.concat(),
            };
            return Err(PluginError::RetiredAbi { path: path.into(), exports });
        };
        // SAFETY: as above.
        let descriptor = unsafe { entry() };
        Self::from_descriptor(descriptor, path.to_path_buf(), sha256, false)
    }

    /// Checks a descriptor, its functions and its info JSON.
    fn from_descriptor(
        descriptor: *const CriticDescriptor,
        path: PathBuf,
        sha256: String,
        builtin: bool,
    ) -> Result<PluginLibrary, PluginError> {
        let path = path.as_path();
        let bad = |message: &str| PluginError::BadDescriptor { path: path.into(), message: message.into() };
        if descriptor.is_null() {
            return Err(bad(&format!("the entry point `{ENTRY_SYMBOL}` returned a null descriptor")));
        }
        // The version first, read alone: a descriptor of another version may be laid out otherwise.
        // SAFETY: non-null, and the ABI says it points to a static descriptor, which begins with
        // `abi_version` in every version; `addr_of!` reads the field without making a reference to
        // the whole.
        let abi_version = unsafe { std::ptr::addr_of!((*descriptor).abi_version).read() };
        if abi_version != ABI_VERSION {
            return Err(PluginError::AbiVersion { path: path.into(), found: abi_version, expected: ABI_VERSION });
        }
        // SAFETY: non-null, static and of this version; its functions are `Option`s, so a NULL one
        // is a valid `None`.
        let descriptor: &'static CriticDescriptor = unsafe { &*descriptor };
        let text = |s: Str, field: &str| -> Result<String, PluginError> {
            if s.ptr.is_null() && s.len > 0 {
                return Err(bad(&format!("{field} is a null pointer")));
            }
            // SAFETY: static string owned by the plugin, (ptr, len) per the ABI.
            let bytes = unsafe { s.as_bytes() };
            std::str::from_utf8(bytes).map(str::to_owned).map_err(|_| bad(&format!("{field} is not UTF-8")))
        };
        let name = text(descriptor.name, "name")?;
        let version = text(descriptor.version, "version")?;
        if name.is_empty() {
            return Err(bad("name is empty"));
        }
        let functions = functions(descriptor, &name).map_err(|null| bad(&null.to_string()))?;
        let range = ScoreRange { min: descriptor.score_min, max: descriptor.score_max };
        if !(range.min.is_finite() && range.max.is_finite() && range.min < range.max) {
            return Err(bad(&format!("score range {range} is not a finite, non-empty interval")));
        }
        let bad_info = |message: String| PluginError::BadInfo {
            plugin: name.clone(),
            message: format!("the descriptor's `info`: {message}"),
        };
        let info = descriptor.info;
        if info.ptr.is_null() && info.len > 0 {
            return Err(bad_info("a null pointer".into()));
        }
        // SAFETY: static text owned by the plugin, (ptr, len) per the ABI.
        let info = std::str::from_utf8(unsafe { info.as_bytes() }).map_err(|_| bad_info("not UTF-8".into()))?;
        let declared = PluginInfo::parse(info).map_err(|e| bad_info(e.to_string()))?;
        Ok(PluginLibrary {
            path: path.to_path_buf(),
            sha256,
            name,
            version,
            range,
            thread_safe: descriptor.flags & FLAG_THREAD_SAFE != 0,
            policy_dependent: descriptor.flags & FLAG_POLICY_DEPENDENT != 0,
            declared,
            builtin,
            functions,
        })
    }

    /// Whether the plugin reads a task once per loop (its descriptor sets the task functions).
    pub fn reads_tasks(&self) -> bool {
        self.functions.tasks.is_some()
    }

    /// Creates an instance from a JSON config. With a `timeout`, a call that takes longer stops
    /// the process with a message naming the critic (see the `watchdog` module): a plugin's thread
    /// cannot be interrupted, and a run that waits forever measures nothing.
    pub fn instantiate_in_process(
        self: &Arc<Self>,
        config_json: &str,
        timeout: Option<Duration>,
        host: &Arc<Host>,
    ) -> Result<InProcessCritic, PluginError> {
        let mut raw: *mut c_void = std::ptr::null_mut();
        let mut error = Buffer::EMPTY;
        let table = host_table(host);
        // SAFETY: valid config bytes for the call, a host table the instance owns (it outlives
        // the plugin's instance, see Drop), valid out-pointers.
        let status = unsafe { (self.functions.create)(Str::new(config_json), &*table, &mut raw, &mut error) };
        if status == STATUS_OK && raw.is_null() {
            let _ = self.take(error);
            return Err(PluginError::NullInstance { plugin: self.name.clone() });
        }
        if status != STATUS_OK {
            let message = self.take(error).unwrap_or_else(|LossyText(lossy)| lossy);
            return Err(PluginError::ConfigRejected {
                plugin: self.name.clone(),
                config: config_json.to_string(),
                message: if message.is_empty() { format!("create returned status {status}") } else { message },
            });
        }
        let _ = self.take(error);
        let info = Arc::new(self.info(IsolationMode::InProcess));
        let watch = timeout.map(|t| crate::watchdog::Watch::new(&self.name, t));
        Ok(InProcessCritic {
            library: Arc::clone(self),
            info,
            raw,
            host: Arc::clone(host),
            _table: table,
            serialize: (!self.thread_safe).then(|| Mutex::new(())),
            watch,
        })
    }

    /// What the manifest records about this library, run in `isolation`.
    pub fn info(&self, isolation: IsolationMode) -> CriticInfo {
        CriticInfo {
            name: self.name.clone(),
            version: self.version.clone(),
            path: self.path.clone(),
            command: None,
            sha256: self.sha256.clone(),
            range: self.range,
            thread_safe: self.thread_safe,
            policy_dependent: self.policy_dependent,
            declared: self.declared.clone(),
            isolation,
            builtin: self.builtin,
        }
    }

    /// Copies a plugin-allocated buffer and frees it with the plugin's own allocator. Bytes that
    /// are not UTF-8 are an error carrying the text with U+FFFD in their place.
    fn take(&self, buffer: Buffer) -> Result<String, LossyText> {
        if buffer.ptr.is_null() {
            return Ok(String::new());
        }
        // SAFETY: the plugin filled (ptr, len); we copy before handing it back.
        let bytes = unsafe { buffer.to_vec() };
        // SAFETY: the buffer was allocated by this plugin and is freed exactly once.
        unsafe { (self.functions.free_buffer)(buffer) };
        String::from_utf8(bytes).map_err(|e| LossyText(String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }
}

/// A plugin's buffer that is not UTF-8, as text with U+FFFD in place of the bad bytes.
struct LossyText(String);

/// One in-process critic instance. Calls are serialized when the plugin is not thread-safe.
pub struct InProcessCritic {
    library: Arc<PluginLibrary>,
    info: Arc<CriticInfo>,
    raw: *mut c_void,
    /// The run's services, which the plugin reaches through `_table`.
    host: Arc<Host>,
    /// The host table handed to the plugin's `create`; its `context` points at `host`.
    _table: Box<HostTable>,
    serialize: Option<Mutex<()>>,
    watch: Option<crate::watchdog::Watch>,
}

// SAFETY: the instance pointer is only used through `call`, which holds the mutex when the
// plugin did not declare itself thread-safe; otherwise the plugin promises concurrent calls work.
unsafe impl Send for InProcessCritic {}
// SAFETY: as above.
unsafe impl Sync for InProcessCritic {}

impl InProcessCritic {
    /// The library the instance was made from.
    pub fn library(&self) -> &Arc<PluginLibrary> {
        &self.library
    }

    /// What the manifest records about the critic.
    pub fn info(&self) -> &Arc<CriticInfo> {
        &self.info
    }

    /// Sends one request outside any critique's scope; returns the plugin's answer, or its error
    /// message.
    pub fn call(&self, request: &str) -> Result<String, CallError> {
        self.call_scoped(request, None)
    }

    /// Sends one request for the critique `scope` (what its service calls are keyed by and count
    /// their tokens on); returns the plugin's answer, or its error message. An answer that is not
    /// UTF-8 is an error.
    pub fn call_in(&self, request: &str, scope: &mut CallScope) -> Result<String, CallError> {
        self.call_scoped(request, Some(scope))
    }

    fn call_scoped(&self, request: &str, scope: Option<&mut CallScope>) -> Result<String, CallError> {
        // SAFETY: `raw` came from this library's create and is alive until Drop; request bytes are
        // valid for the call.
        self.invoke(scope, "critique", |out| unsafe {
            (self.library.functions.critique)(self.raw, Str::new(request), out)
        })
    }

    /// Whether the plugin reads a task once for the rounds of a loop (its task functions are set).
    pub fn reads_tasks(&self) -> bool {
        self.library.reads_tasks()
    }

    /// Opens `task` (its JSON) for the rounds of one loop, in `scope`; `None` when the plugin
    /// has no task functions. An error is the plugin's message, the critique's error.
    pub(crate) fn open_task(
        &self,
        task: &str,
        scope: Option<&mut CallScope>,
    ) -> Option<Result<OpenTask<'_>, CallError>> {
        let functions = self.library.functions.tasks?;
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: `raw` came from this library's create and is alive until Drop; the task bytes
        // and out-pointers are valid for the call.
        let opened = self.invoke(scope, "error message", |error| unsafe {
            (functions.open_task)(self.raw, Str::new(task), &mut handle, error)
        });
        Some(opened.and_then(|_| {
            if handle.is_null() {
                return Err(CallError::Critic("open_task succeeded but gave no task handle".into()));
            }
            Ok(OpenTask { critic: self, handle })
        }))
    }

    /// Calls into the plugin through `call` (handed the out-buffer): serialized when the plugin is
    /// not thread-safe, watched for the timeout, in `scope`. The buffer's text is the answer on
    /// [`STATUS_OK`] (`part` names it in the error for text that is not UTF-8), else the error.
    fn invoke(
        &self,
        scope: Option<&mut CallScope>,
        part: &'static str,
        call: impl FnOnce(&mut Buffer) -> i32,
    ) -> Result<String, CallError> {
        let _guard = self.serialize.as_ref().map(|m| m.lock().unwrap_or_else(|p| p.into_inner()));
        let _watching = self.watch.as_ref().map(crate::watchdog::Watch::begin);
        let mut out = Buffer::EMPTY;
        let status = self.host.within(scope, || call(&mut out));
        let text = match self.library.take(out) {
            Ok(text) => text,
            Err(LossyText(lossy)) => {
                let part = if status == STATUS_OK { part } else { "error message" };
                return Err(CallError::NotUtf8 { part, excerpt: excerpt(&lossy) });
            }
        };
        match status {
            STATUS_OK => Ok(text),
            _ if !text.is_empty() => Err(CallError::Critic(text)),
            other => Err(CallError::Status(other)),
        }
    }
}

/// A task an in-process critic opened (`open_task`), closed when dropped. Used by one thread at
/// a time (it is `Send`, not `Sync`), as the ABI promises the plugin.
pub(crate) struct OpenTask<'a> {
    critic: &'a InProcessCritic,
    handle: *mut c_void,
}

// SAFETY: the handle moves between threads but is never used from two at once (not `Sync`); the
// plugin's own thread-safety rule is kept by `invoke`.
unsafe impl Send for OpenTask<'_> {}

impl OpenTask<'_> {
    /// Critiques one draft of the task: `request` is `{"request_version":2,"round":R,"draft":"..."}`.
    pub(crate) fn critique(&self, request: &str, scope: Option<&mut CallScope>) -> Result<String, CallError> {
        let critic = self.critic;
        let functions = critic.library.functions.tasks.expect("only a critic with task functions opens tasks");
        // SAFETY: `raw` is alive (borrowed), `handle` came from its open_task and is not closed;
        // the request bytes and out-pointer are valid for the call.
        critic.invoke(scope, "critique", |out| unsafe {
            (functions.critique_task)(critic.raw, self.handle, Str::new(request), out)
        })
    }
}

impl Drop for OpenTask<'_> {
    fn drop(&mut self) {
        let critic = self.critic;
        let functions = critic.library.functions.tasks.expect("only a critic with task functions opens tasks");
        let _guard = critic.serialize.as_ref().map(|m| m.lock().unwrap_or_else(|p| p.into_inner()));
        // SAFETY: opened by this instance's open_task, closed once, before the instance's destroy.
        unsafe { (functions.close_task)(critic.raw, self.handle) };
    }
}

/// The built-in critics' names, for messages: "`rubric`, `evidence`, … and `llm-judge`".
pub fn builtin_names() -> String {
    let names: Vec<String> = critbench_builtins::BUILTINS.iter().map(|b| format!("`{}`", b.name)).collect();
    match names.split_last() {
        Some((last, init)) if !init.is_empty() => format!("{} and {last}", init.join(", ")),
        _ => names.join(""),
    }
}

impl Drop for InProcessCritic {
    fn drop(&mut self) {
        // SAFETY: made by this library's create, destroyed once; every task handle borrowed the
        // instance, so each is closed already.
        unsafe { (self.library.functions.destroy)(self.raw) };
    }
}

/// Functions of a descriptor that are NULL where critbench needs them (`missing`, in the header's
/// order), in the critic `name`.
#[derive(Debug, thiserror::Error)]
enum NullFunctions {
    /// One or more of the four functions every critic has.
    #[error(
        "{} in `{name}`; critbench calls all four of create, critique, destroy and free_buffer, so the \
         descriptor must set each one",
        null_names(missing)
    )]
    Required { name: String, missing: Vec<&'static str> },
    /// Some of the three task functions, but not all.
    #[error(
        "{} in `{name}`, but not all three task functions; set open_task, critique_task and close_task \
         together (the plugin reads a task once per loop) or leave all three NULL (every request carries \
         its task)",
        null_names(missing)
    )]
    SomeTaskFunctions { name: String, missing: Vec<&'static str> },
}

/// The descriptor's functions, or why they cannot be called: the first four must all be set, the
/// three task functions all or none.
fn functions(descriptor: &CriticDescriptor, name: &str) -> Result<Functions, NullFunctions> {
    let d = descriptor;
    let (Some(create), Some(critique), Some(destroy), Some(free_buffer)) =
        (d.create, d.critique, d.destroy, d.free_buffer)
    else {
        let set = [
            ("create", d.create.is_some()),
            ("critique", d.critique.is_some()),
            ("destroy", d.destroy.is_some()),
            ("free_buffer", d.free_buffer.is_some()),
        ];
        let missing = set.iter().filter(|(_, set)| !set).map(|&(name, _)| name).collect();
        return Err(NullFunctions::Required { name: name.to_string(), missing });
    };
    let tasks = match (d.open_task, d.critique_task, d.close_task) {
        (Some(open_task), Some(critique_task), Some(close_task)) => {
            Some(TaskFunctions { open_task, critique_task, close_task })
        }
        (None, None, None) => None,
        _ => {
            let set = [
                ("open_task", d.open_task.is_some()),
                ("critique_task", d.critique_task.is_some()),
                ("close_task", d.close_task.is_some()),
            ];
            let missing = set.iter().filter(|(_, set)| !set).map(|&(name, _)| name).collect();
            return Err(NullFunctions::SomeTaskFunctions { name: name.to_string(), missing });
        }
    };
    Ok(Functions { create, critique, destroy, free_buffer, tasks })
}

/// "`a` is a NULL function pointer", or "`a`, `b` and `c` are NULL function pointers".
fn null_names(names: &[&str]) -> String {
    match names.split_last() {
        Some((last, [])) => format!("`{last}` is a NULL function pointer"),
        Some((last, init)) => format!(
            "{} and `{last}` are NULL function pointers",
            init.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        ),
        None => String::new(),
    }
}

/// The table through which an instance calls `host`'s services: `context` is the host.
fn host_table(host: &Arc<Host>) -> Box<HostTable> {
    Box::new(HostTable {
        abi_version: ABI_VERSION,
        size: std::mem::size_of::<HostTable>() as u32,
        context: Arc::as_ptr(host) as *mut c_void,
        call: host_call,
        free_buffer: host_free_buffer,
    })
}

unsafe extern "C" fn host_call(context: *mut c_void, service: Str, request: Str, out: *mut Buffer) -> i32 {
    // A panic must not unwind into the plugin's frames.
    let result = std::panic::catch_unwind(|| {
        // SAFETY: (ptr, len) from the plugin, valid for the call.
        let name = String::from_utf8_lossy(unsafe { service.as_bytes() }).into_owned();
        // SAFETY: as above.
        let request = std::str::from_utf8(unsafe { request.as_bytes() })
            .map_err(|e| ServiceError::BadRequest(format!("the request to service `{name}` is not UTF-8: {e}")))?;
        // The plugin's timeout measures the plugin, not the host's own services (they have their
        // own timeouts).
        let _paused = crate::watchdog::pause();
        if context.is_null() {
            return Err(ServiceError::BadRequest(
                "the host context is null: pass back the `context` of the host table".to_string(),
            ));
        }
        // SAFETY: `context` is the `Host` of the table handed to this plugin's `create`, kept
        // alive by the instance that owns the table.
        let host = unsafe { &*(context as *const Host) };
        host.dispatch_from_plugin(&name, request)
    })
    .unwrap_or(Err(ServiceError::Panicked));
    let (status, text) = match result {
        Ok(answer) => (STATUS_OK, answer),
        Err(error) => (STATUS_ERROR, error.to_string()),
    };
    if !out.is_null() {
        // SAFETY: valid out-pointer from the plugin.
        unsafe { *out = Buffer::from_vec(text.into_bytes()) };
    }
    status
}

unsafe extern "C" fn host_free_buffer(buffer: Buffer) {
    // SAFETY: allocated by `Buffer::from_vec` in this host.
    unsafe { buffer.free() };
}

/// An error and its sources, `: `-separated: libloading's "dlopen failed" carries the loader's own
/// message (`dlerror()`: file not found, wrong ELF class, undefined symbol …) as its source.
fn with_sources(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}
