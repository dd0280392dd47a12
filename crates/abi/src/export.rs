//! The Rust side of a plugin: the [`CriticPlugin`] and [`TaskCritic`] traits and the glue behind
//! [`export_critic!`] and [`export_task_critic!`], which export one descriptor.

use std::any::Any;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use crate::{Buffer, CriticDescriptor, HostTable, STATUS_ERROR, STATUS_OK, Str};

/// Why a plugin refuses its config or a request: any error. The host records its text, then
/// each of its causes', `: `-separated.
pub type CriticError = Box<dyn std::error::Error + Send + Sync>;

/// What a host service answered instead of an answer: its message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ServiceError(pub String);

/// A critic written in Rust. Export it with [`export_critic!`](crate::export_critic).
pub trait CriticPlugin: Sized + Send + Sync + 'static {
    /// The critic's name, e.g. `rubric`.
    const NAME: &'static str;
    /// The critic's version.
    const VERSION: &'static str;
    /// The lowest score it gives.
    const SCORE_MIN: f64;
    /// The highest score it gives.
    const SCORE_MAX: f64;
    /// Whether `critique` may run from many threads at once (the host serializes calls otherwise).
    const THREAD_SAFE: bool = true;
    /// Whether the critique depends on the loop's policy (this disables replay).
    const POLICY_DEPENDENT: bool = false;
    /// The plugin's info JSON ([`PluginInfo`](crate::PluginInfo)), the descriptor's `info`: its
    /// issue types, the host services it requires, hints. Empty declares nothing.
    const INFO: &'static str = "";

    /// Builds an instance from the experiment's JSON config (`{}` when none is given). A string
    /// is an error too: `Err(format!("…").into())`.
    fn create(config: &str, host: Host) -> Result<Self, CriticError>;

    /// Critiques one request (see [`Request`](crate::Request)) into critique JSON.
    fn critique(&self, request: &str) -> Result<String, CriticError>;
}

/// A critic that reads each task once per loop: the host opens the task before a loop's first
/// critique and then sends only each round's draft ([`TaskRequest`](crate::TaskRequest)). Export
/// it with [`export_task_critic!`](crate::export_task_critic). [`CriticPlugin::critique`] still
/// answers whole requests (tools, the adjudicator, everything outside a loop): it must answer a
/// request as [`TaskCritic::open_task`] on its `task` and then [`TaskCritic::critique_task`] would.
pub trait TaskCritic: CriticPlugin {
    /// What the critic keeps of a task: what the task says, never the state of one loop (the host
    /// may critique the rounds of several loops of the task through one, interleaved). The host
    /// uses one task from one thread at a time, but not always the same thread.
    type Task: Send + 'static;

    /// Reads a task, the JSON a whole request holds as `task`. An error is the critique's error,
    /// as one from `critique_task` would be.
    fn open_task(&self, task: &str) -> Result<Self::Task, CriticError>;

    /// Critiques one draft of an opened task: `request` is a
    /// [`TaskRequest`](crate::TaskRequest), `{"request_version": 2, "round": R, "draft": "..."}`.
    fn critique_task(&self, task: &Self::Task, request: &str) -> Result<String, CriticError>;
}

/// The host's services, as a plugin sees them.
#[derive(Clone, Copy)]
pub struct Host {
    raw: *const HostTable,
}

// SAFETY: the host table is immutable for the run and its `call` is thread-safe.
unsafe impl Send for Host {}
// SAFETY: as above.
unsafe impl Sync for Host {}

impl Host {
    /// A host that offers no services: every [`Host::call`] returns an error. For tests and for
    /// tools that run a plugin outside critbench.
    pub fn none() -> Host {
        let raw = std::ptr::null();
        Host { raw }
    }

    /// Calls a host service with a JSON request and returns its JSON answer.
    pub fn call(&self, service: &str, request: &str) -> Result<String, ServiceError> {
        if self.raw.is_null() {
            return Err(ServiceError("the host offers no services".to_string()));
        }
        // SAFETY: the host promises the table outlives every instance.
        let host = unsafe { &*self.raw };
        let mut out = Buffer::EMPTY;
        // SAFETY: the strings are valid for the call; `out` is written by the host.
        let status = unsafe { (host.call)(host.context, Str::new(service), Str::new(request), &mut out) };
        // SAFETY: the host filled `out`; we copy it and hand it back to the host's free.
        let bytes = unsafe { out.to_vec() };
        // SAFETY: `out` was allocated by the host, so the host frees it.
        unsafe { (host.free_buffer)(out) };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if status == STATUS_OK { Ok(text) } else { Err(ServiceError(text)) }
    }
}

/// Functions the macro expands to. Not for direct use.
pub mod glue {
    use super::*;

    static QUIET: Once = Once::new();

    /// A plugin has its own copy of std, so the host's panic hook does not reach it: silence
    /// this library's hook, since every panic is caught and reported as an error string.
    fn quiet_panics() {
        QUIET.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    }

    fn panic_message(payload: Box<dyn Any + Send>) -> String {
        let detail = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic payload".to_string());
        format!("critic panicked: {detail}")
    }

    /// An error and its causes, `: `-separated (a cause already in the text is not repeated).
    fn message(error: &(dyn std::error::Error + 'static)) -> String {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !text.contains(&cause_text) {
                text.push_str(": ");
                text.push_str(&cause_text);
            }
            source = cause.source();
        }
        text
    }

    fn write(out: *mut Buffer, text: String) {
        if !out.is_null() {
            // SAFETY: the host passes a valid, writable out-pointer.
            unsafe { *out = Buffer::from_vec(text.into_bytes()) };
        }
    }

    /// What the host passed is not text.
    #[derive(Debug, thiserror::Error)]
    #[error("input is not UTF-8: {0}")]
    struct NotUtf8(#[source] std::str::Utf8Error);

    fn text<'a>(s: Str) -> Result<&'a str, NotUtf8> {
        // SAFETY: the host passes a valid (ptr, len) for the duration of the call.
        std::str::from_utf8(unsafe { s.as_bytes() }).map_err(NotUtf8)
    }

    /// `QUIET`: silence this copy of std's panic hook first, as a shared library must (see
    /// `quiet_panics`); a critic compiled into the host shares the host's hook and leaves it alone.
    ///
    /// # Safety
    /// Called by the host through the descriptor with valid pointers.
    pub unsafe extern "C" fn create<P: CriticPlugin, const QUIET: bool>(
        config: Str,
        host: *const HostTable,
        instance: *mut *mut c_void,
        error: *mut Buffer,
    ) -> i32 {
        if QUIET {
            quiet_panics();
        }
        let result = catch_unwind(AssertUnwindSafe(|| P::create(text(config)?, Host { raw: host })));
        match result {
            Ok(Ok(plugin)) => {
                // SAFETY: `instance` is a valid out-pointer from the host.
                unsafe { *instance = Box::into_raw(Box::new(plugin)) as *mut c_void };
                STATUS_OK
            }
            Ok(Err(refused)) => {
                write(error, message(&*refused));
                STATUS_ERROR
            }
            Err(payload) => {
                write(error, panic_message(payload));
                STATUS_ERROR
            }
        }
    }

    /// What a critique call hands the host: the answer, or the error or panic as a message.
    fn answer(result: std::thread::Result<Result<String, CriticError>>, out: *mut Buffer) -> i32 {
        match result {
            Ok(Ok(json)) => {
                write(out, json);
                STATUS_OK
            }
            Ok(Err(error)) => {
                write(out, message(&*error));
                STATUS_ERROR
            }
            Err(payload) => {
                write(out, panic_message(payload));
                STATUS_ERROR
            }
        }
    }

    /// # Safety
    /// `instance` must come from `create::<P>` and not be destroyed.
    pub unsafe extern "C" fn critique<P: CriticPlugin>(instance: *mut c_void, request: Str, out: *mut Buffer) -> i32 {
        let result = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the host only passes instances made by `create::<P>`.
            let plugin = unsafe { &*(instance as *const P) };
            plugin.critique(text(request)?)
        }));
        answer(result, out)
    }

    /// # Safety
    /// `instance` must come from `create::<P>` and not be destroyed; `task_handle` is writable.
    pub unsafe extern "C" fn open_task<P: TaskCritic>(
        instance: *mut c_void,
        task: Str,
        task_handle: *mut *mut c_void,
        error: *mut Buffer,
    ) -> i32 {
        let result = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the host only passes instances made by `create::<P>`.
            let plugin = unsafe { &*(instance as *const P) };
            plugin.open_task(text(task)?)
        }));
        match result {
            Ok(Ok(task)) => {
                // A zero-sized task boxes to a dangling but non-null pointer, which is all the
                // host checks.
                let raw = Box::into_raw(Box::new(task)) as *mut c_void;
                if task_handle.is_null() {
                    // SAFETY: made just above; nobody else has it.
                    drop(unsafe { Box::from_raw(raw as *mut P::Task) });
                } else {
                    // SAFETY: the host passes a valid, writable out-pointer.
                    unsafe { *task_handle = raw };
                }
                STATUS_OK
            }
            Ok(Err(refused)) => {
                write(error, message(&*refused));
                STATUS_ERROR
            }
            Err(payload) => {
                write(error, panic_message(payload));
                STATUS_ERROR
            }
        }
    }

    /// # Safety
    /// `instance` must come from `create::<P>`, `task_handle` from its `open_task::<P>`, neither
    /// closed.
    pub unsafe extern "C" fn critique_task<P: TaskCritic>(
        instance: *mut c_void,
        task_handle: *mut c_void,
        request: Str,
        out: *mut Buffer,
    ) -> i32 {
        let result = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the host only passes instances made by `create::<P>`.
            let plugin = unsafe { &*(instance as *const P) };
            // SAFETY: the host only passes handles made by `open_task::<P>`, one thread at a time.
            let task = unsafe { &*(task_handle as *const P::Task) };
            plugin.critique_task(task, text(request)?)
        }));
        answer(result, out)
    }

    /// # Safety
    /// `task_handle` must come from `open_task::<P>` and is not used afterwards.
    pub unsafe extern "C" fn close_task<P: TaskCritic>(_instance: *mut c_void, task_handle: *mut c_void) {
        if task_handle.is_null() {
            return;
        }
        // A panic in Drop must not unwind into the host.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: made by Box::into_raw in `open_task::<P>`, closed once.
            drop(unsafe { Box::from_raw(task_handle as *mut P::Task) });
        }));
    }

    /// # Safety
    /// `instance` must come from `create::<P>` and is not used afterwards.
    pub unsafe extern "C" fn destroy<P: CriticPlugin>(instance: *mut c_void) {
        if instance.is_null() {
            return;
        }
        // A panic in Drop must not unwind into the host.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: made by Box::into_raw in `create::<P>`, destroyed once.
            drop(unsafe { Box::from_raw(instance as *mut P) });
        }));
    }

    /// # Safety
    /// `buffer` must have been allocated by this library.
    pub unsafe extern "C" fn free_buffer(buffer: Buffer) {
        // SAFETY: guaranteed by the caller.
        unsafe { buffer.free() };
    }

    /// The descriptor flags of `P`.
    pub const fn flags<P: CriticPlugin>() -> u32 {
        (if P::THREAD_SAFE { crate::FLAG_THREAD_SAFE } else { 0 })
            | (if P::POLICY_DEPENDENT { crate::FLAG_POLICY_DEPENDENT } else { 0 })
    }

    /// The descriptor of `P`, silencing the library's own panic hook when `QUIET`: every request
    /// goes to `critique`, task included.
    pub const fn descriptor<P: CriticPlugin, const QUIET: bool>() -> CriticDescriptor {
        CriticDescriptor {
            abi_version: crate::ABI_VERSION,
            flags: flags::<P>(),
            name: Str::from_static(P::NAME),
            version: Str::from_static(P::VERSION),
            score_min: P::SCORE_MIN,
            score_max: P::SCORE_MAX,
            info: Str::from_static(P::INFO),
            create: Some(create::<P, QUIET>),
            critique: Some(critique::<P>),
            destroy: Some(destroy::<P>),
            free_buffer: Some(free_buffer),
            open_task: None,
            critique_task: None,
            close_task: None,
        }
    }

    /// [`descriptor`] of a critic that reads each task once per loop: the task functions set.
    pub const fn task_descriptor<P: TaskCritic, const QUIET: bool>() -> CriticDescriptor {
        CriticDescriptor {
            open_task: Some(open_task::<P>),
            critique_task: Some(critique_task::<P>),
            close_task: Some(close_task::<P>),
            ..descriptor::<P, QUIET>()
        }
    }
}

/// The descriptor a shared library exports for `P` (what [`export_critic!`](crate::export_critic)
/// returns from `critbench_critic`).
pub const fn library_descriptor<P: CriticPlugin>() -> CriticDescriptor {
    glue::descriptor::<P, true>()
}

/// The descriptor of `P` compiled into the host: the same functions as
/// [`library_descriptor`], except that `create` leaves the panic hook, which is the host's, alone.
pub const fn builtin_descriptor<P: CriticPlugin>() -> CriticDescriptor {
    glue::descriptor::<P, false>()
}

/// The descriptor a shared library exports for a [`TaskCritic`] `P` (what
/// [`export_task_critic!`](crate::export_task_critic) returns from `critbench_critic`).
pub const fn library_task_descriptor<P: TaskCritic>() -> CriticDescriptor {
    glue::task_descriptor::<P, true>()
}

/// The descriptor of a [`TaskCritic`] `P` compiled into the host (see [`builtin_descriptor`]).
pub const fn builtin_task_descriptor<P: TaskCritic>() -> CriticDescriptor {
    glue::task_descriptor::<P, false>()
}

/// Exports a [`CriticPlugin`] from a `cdylib` as the entry point `critbench_critic`, whose
/// descriptor sends every request, task included, to `critique`.
#[macro_export]
macro_rules! export_critic {
    ($plugin:ty) => {
        /// The plugin's entry point (the critbench ABI, `critbench.h`).
        #[unsafe(no_mangle)]
        pub extern "C" fn critbench_critic() -> *const $crate::CriticDescriptor {
            static DESCRIPTOR: $crate::CriticDescriptor = $crate::library_descriptor::<$plugin>();
            &DESCRIPTOR
        }
    };
}

/// Exports a [`TaskCritic`] from a `cdylib` as the entry point `critbench_critic`, whose
/// descriptor has the task functions set: a loop's task is opened once and each round sends only
/// its draft.
#[macro_export]
macro_rules! export_task_critic {
    ($plugin:ty) => {
        /// The plugin's entry point (the critbench ABI, `critbench.h`): a task read once per loop.
        #[unsafe(no_mangle)]
        pub extern "C" fn critbench_critic() -> *const $crate::CriticDescriptor {
            static DESCRIPTOR: $crate::CriticDescriptor = $crate::library_task_descriptor::<$plugin>();
            &DESCRIPTOR
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("config refused")]
    struct Refusal(#[source] std::io::Error);

    struct Refusing;

    impl CriticPlugin for Refusing {
        const NAME: &'static str = "refusing";
        const VERSION: &'static str = "1";
        const SCORE_MIN: f64 = 0.0;
        const SCORE_MAX: f64 = 1.0;

        fn create(config: &str, _host: Host) -> Result<Self, CriticError> {
            match config {
                "plain" => Err("a plain message".into()),
                _ => Err(Refusal(std::io::Error::other("the file is gone")).into()),
            }
        }

        fn critique(&self, _request: &str) -> Result<String, CriticError> {
            Ok(String::new())
        }
    }

    /// What `create` hands the host for `config`.
    fn refusal(config: &str) -> String {
        refusal_of(config.as_bytes())
    }

    /// What `create` hands the host for config bytes that may not be text.
    fn refusal_of(config: &[u8]) -> String {
        static DESCRIPTOR: CriticDescriptor = crate::builtin_descriptor::<Refusing>();
        assert!(
            DESCRIPTOR.open_task.is_none() && DESCRIPTOR.critique_task.is_none() && DESCRIPTOR.close_task.is_none()
        );
        let create = DESCRIPTOR.create.expect("set");
        let (mut instance, mut error) = (std::ptr::null_mut(), Buffer::EMPTY);
        let config = Str { ptr: config.as_ptr(), len: config.len() };
        // SAFETY: valid config bytes, no host services, valid out-pointers.
        let status = unsafe { create(config, std::ptr::null(), &mut instance, &mut error) };
        assert_eq!(status, STATUS_ERROR);
        assert!(instance.is_null());
        // SAFETY: `create` filled the buffer; it is copied and freed once.
        let text = String::from_utf8(unsafe { error.to_vec() }).unwrap();
        // SAFETY: allocated by this library.
        unsafe { error.free() };
        text
    }

    #[test]
    fn a_plugins_error_reaches_the_host_with_its_causes() {
        assert_eq!(refusal("plain"), "a plain message");
        assert_eq!(refusal("{}"), "config refused: the file is gone");
    }

    #[test]
    fn input_that_is_not_utf8_is_refused_before_the_plugin_sees_it() {
        assert_eq!(refusal_of(b"{\xff}"), "input is not UTF-8: invalid utf-8 sequence of 1 bytes from index 1");
    }

    /// A task critic that panics where its task or request says so.
    struct Touchy;

    impl CriticPlugin for Touchy {
        const NAME: &'static str = "touchy";
        const VERSION: &'static str = "1";
        const SCORE_MIN: f64 = 0.0;
        const SCORE_MAX: f64 = 1.0;

        fn create(_config: &str, _host: Host) -> Result<Self, CriticError> {
            Ok(Touchy)
        }

        fn critique(&self, _request: &str) -> Result<String, CriticError> {
            Err("only by task".into())
        }
    }

    impl TaskCritic for Touchy {
        type Task = String;

        fn open_task(&self, task: &str) -> Result<String, CriticError> {
            match task {
                "panic" => panic!("no task like that"),
                "refuse" => Err("task refused".into()),
                _ => Ok(task.to_string()),
            }
        }

        fn critique_task(&self, task: &String, request: &str) -> Result<String, CriticError> {
            if request == "panic" {
                panic!("request {request} of task {task}");
            }
            Ok(format!("{task}/{request}"))
        }
    }

    /// Takes a buffer `Touchy` allocated: its text.
    fn taken(buffer: Buffer) -> String {
        // SAFETY: filled by the plugin; copied, then freed once by the same library.
        let text = String::from_utf8(unsafe { buffer.to_vec() }).unwrap();
        // SAFETY: as above.
        unsafe { buffer.free() };
        text
    }

    #[test]
    fn a_task_critics_panics_and_errors_reach_the_host_as_messages() {
        static DESCRIPTOR: CriticDescriptor = crate::builtin_task_descriptor::<Touchy>();
        assert_eq!(DESCRIPTOR.abi_version, crate::ABI_VERSION);
        let (create, destroy) = (DESCRIPTOR.create.expect("set"), DESCRIPTOR.destroy.expect("set"));
        let (open_task, critique_task, close_task) = (
            DESCRIPTOR.open_task.expect("set"),
            DESCRIPTOR.critique_task.expect("set"),
            DESCRIPTOR.close_task.expect("set"),
        );
        let (mut instance, mut error) = (std::ptr::null_mut(), Buffer::EMPTY);
        // SAFETY: valid config text, no host services, valid out-pointers.
        assert_eq!(unsafe { create(Str::new("{}"), std::ptr::null(), &mut instance, &mut error) }, STATUS_OK);
        let open = |task: &str| {
            let (mut handle, mut error) = (std::ptr::null_mut(), Buffer::EMPTY);
            // SAFETY: a live instance, valid text and out-pointers.
            let status = unsafe { open_task(instance, Str::new(task), &mut handle, &mut error) };
            (status, handle, taken(error))
        };
        let (status, handle, message) = open("panic");
        assert_eq!(
            (status, handle.is_null(), message.as_str()),
            (STATUS_ERROR, true, "critic panicked: no task like that")
        );
        let (status, handle, message) = open("refuse");
        assert_eq!((status, handle.is_null(), message.as_str()), (STATUS_ERROR, true, "task refused"));

        let (status, handle, message) = open("t1");
        assert_eq!((status, handle.is_null(), message.as_str()), (STATUS_OK, false, ""));
        let critique = |request: &str| {
            let mut out = Buffer::EMPTY;
            // SAFETY: a live instance and a handle it opened, valid text and out-pointer.
            let status = unsafe { critique_task(instance, handle, Str::new(request), &mut out) };
            (status, taken(out))
        };
        assert_eq!(critique("r0"), (STATUS_OK, "t1/r0".to_string()));
        assert_eq!(critique("panic"), (STATUS_ERROR, "critic panicked: request panic of task t1".to_string()));
        assert_eq!(critique("r1"), (STATUS_OK, "t1/r1".to_string()), "the handle outlives a caught panic");
        // SAFETY: opened above, closed once; then the instance is destroyed once.
        unsafe {
            close_task(instance, handle);
            destroy(instance);
        }
    }
}
