//! The critic plugin ABI (versions 1 and 2), shared by the host and by plugins written in Rust.
//!
//! The C view of the same contract is `include/critbench.h` (also available as [`C_HEADER`]);
//! the `#[repr(C)]` types here mirror it field for field. A Rust plugin implements
//! [`CriticPlugin`] and exports it with [`export_critic!`], which catches every panic at the
//! boundary and turns it into an error message.
//!
//! ```
//! use critbench_abi::{export_critic, CriticPlugin, Host};
//!
//! struct Length;
//!
//! impl CriticPlugin for Length {
//!     const NAME: &'static str = "length";
//!     const VERSION: &'static str = "1.0.0";
//!     const SCORE_MIN: f64 = 0.0;
//!     const SCORE_MAX: f64 = 10.0;
//!
//!     fn create(_config: &str, _host: Host) -> Result<Self, critbench_abi::CriticError> {
//!         Ok(Length)
//!     }
//!
//!     fn critique(&self, request: &str) -> Result<String, critbench_abi::CriticError> {
//!         let request: critbench_abi::Request = serde_json::from_str(request)?;
//!         let score = (request.draft.len() as f64 / 100.0).min(10.0);
//!         Ok(serde_json::json!({ "score": score }).to_string())
//!     }
//! }
//!
//! export_critic!(Length);
//! ```
//!
//! ABI version 2 adds per-task handles: a plugin exporting `critbench_critic_v2`
//! ([`CriticDescriptorV2`]) is shown each task once per loop (`open_task`) and then only each
//! round's draft (`critique_task`, a [`TaskRequest`]), instead of the task again in every round's
//! request. A Rust plugin opts in by implementing [`TaskCritic`] and exporting it with
//! [`export_task_critic!`], which exports both versions: a host that knows only version 1 still
//! loads it.
//!
//! A plugin may also declare what it is — the issue types it tags, the host services it needs,
//! hints for its users — in a JSON [`PluginInfo`] (the optional symbol [`INFO_SYMBOL`];
//! [`CriticPlugin::INFO`] in Rust).
#![warn(missing_docs)]

use std::ffi::c_void;

mod export;
mod info;
mod messages;

pub use export::{
    CriticError, CriticPlugin, Host, ServiceError, TaskCritic, builtin_descriptor, builtin_descriptor_v2, glue,
    library_descriptor, library_descriptor_v2,
};
pub use info::{INFO_VERSION, InfoError, IssueType, PluginInfo};
pub use messages::{CRITIQUE_VERSION, REQUEST_VERSION, Request, RequestTask, TASK_REQUEST_VERSION, TaskRequest};

/// The ABI version of [`CriticDescriptorV1`] and of the host table ([`HostV1`]).
pub const ABI_VERSION: u32 = 1;
/// The ABI version of [`CriticDescriptorV2`].
pub const ABI_VERSION_V2: u32 = 2;
/// The symbol every plugin exports.
pub const ENTRY_SYMBOL: &str = "critbench_critic_v1";
/// The symbol a plugin speaking version 2 exports beside [`ENTRY_SYMBOL`]; a host that knows it
/// calls through it.
pub const ENTRY_SYMBOL_V2: &str = "critbench_critic_v2";
/// The optional symbol that returns the plugin's info JSON ([`PluginInfo`]).
pub const INFO_SYMBOL: &str = "critbench_critic_info_v1";
/// `critique` may run on one instance from many threads at once.
pub const FLAG_THREAD_SAFE: u32 = 1;
/// The critique depends on the loop's policy, so recorded loops cannot be replayed under another.
pub const FLAG_POLICY_DEPENDENT: u32 = 2;
/// A call succeeded.
pub const STATUS_OK: i32 = 0;
/// A call failed; its buffer holds the message.
pub const STATUS_ERROR: i32 = 1;

/// The C header for plugin authors.
pub const C_HEADER: &str = include_str!("../include/critbench.h");

/// Borrowed UTF-8 text (`critbench_str`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Str {
    /// The first byte (may be null when `len` is 0).
    pub ptr: *const u8,
    /// The length in bytes.
    pub len: usize,
}

impl Str {
    /// Borrows static text (descriptor fields, the info JSON).
    pub const fn from_static(text: &'static str) -> Str {
        Str { ptr: text.as_ptr(), len: text.len() }
    }

    /// Borrows `text` for the duration of one call.
    pub fn new(text: &str) -> Str {
        Str { ptr: text.as_ptr(), len: text.len() }
    }

    /// # Safety
    /// `ptr` must point to `len` readable bytes that outlive `'a`.
    pub unsafe fn as_bytes<'a>(self) -> &'a [u8] {
        if self.len == 0 {
            &[]
        } else {
            // SAFETY: guaranteed by the caller.
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
        }
    }
}

/// Bytes owned by the side that allocated them (`critbench_buffer`).
#[repr(C)]
#[derive(Debug)]
pub struct Buffer {
    /// The first byte, or null for no buffer.
    pub ptr: *mut u8,
    /// The length in bytes.
    pub len: usize,
}

impl Buffer {
    /// No buffer: what an out-parameter holds before the callee fills it.
    pub const EMPTY: Buffer = Buffer { ptr: std::ptr::null_mut(), len: 0 };

    /// Hands `bytes` over; the receiver must give it back to [`Buffer::free`] of this same
    /// library (each shared library has its own allocator).
    pub fn from_vec(bytes: Vec<u8>) -> Buffer {
        let boxed = bytes.into_boxed_slice();
        let len = boxed.len();
        let ptr = Box::into_raw(boxed) as *mut u8;
        Buffer { ptr, len }
    }

    /// Frees a buffer made by [`Buffer::from_vec`] in this same library.
    ///
    /// # Safety
    /// `self` must come from `Buffer::from_vec` of this library and not be freed before.
    pub unsafe fn free(self) {
        if self.ptr.is_null() {
            return;
        }
        // SAFETY: ptr/len came from Box<[u8]>::into_raw in from_vec, per the caller's promise.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
    }

    /// Copies the bytes out without freeing them.
    ///
    /// # Safety
    /// `ptr` must point to `len` readable bytes (or be null).
    pub unsafe fn to_vec(&self) -> Vec<u8> {
        if self.ptr.is_null() || self.len == 0 {
            Vec::new()
        } else {
            // SAFETY: guaranteed by the caller.
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }.to_vec()
        }
    }
}

/// Host services offered to a plugin (`critbench_host_v1`).
#[repr(C)]
#[derive(Debug)]
pub struct HostV1 {
    /// The ABI version of the host ([`ABI_VERSION`]).
    pub abi_version: u32,
    /// `size_of::<HostV1>()` as the host knows it: later versions only append fields.
    pub size: u32,
    /// The run this table belongs to; passed back as `call`'s first argument.
    pub context: *mut c_void,
    /// Calls a host service by name with a JSON request; `out` receives the answer (on
    /// [`STATUS_OK`]) or an error message, to be released with `free_buffer`.
    pub call: unsafe extern "C" fn(context: *mut c_void, service: Str, request: Str, out: *mut Buffer) -> i32,
    /// Frees a buffer the host allocated.
    pub free_buffer: unsafe extern "C" fn(buffer: Buffer),
}

/// The static descriptor a plugin returns (`critbench_critic_descriptor_v1`).
#[repr(C)]
#[derive(Debug)]
pub struct CriticDescriptorV1 {
    /// [`ABI_VERSION`].
    pub abi_version: u32,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// The critic's name, e.g. `rubric`.
    pub name: Str,
    /// The critic's version.
    pub version: Str,
    /// The lowest score the critic gives.
    pub score_min: f64,
    /// The highest score the critic gives.
    pub score_max: f64,
    /// Makes an instance from a JSON config: on [`STATUS_OK`] `*instance` must be non-null; on
    /// error `*error` holds a message.
    pub create:
        unsafe extern "C" fn(config: Str, host: *const HostV1, instance: *mut *mut c_void, error: *mut Buffer) -> i32,
    /// Critiques one request; `out` receives the critique JSON or an error message.
    pub critique: unsafe extern "C" fn(instance: *mut c_void, request: Str, out: *mut Buffer) -> i32,
    /// Destroys an instance made by `create`.
    pub destroy: unsafe extern "C" fn(instance: *mut c_void),
    /// Frees a buffer the plugin allocated.
    pub free_buffer: unsafe extern "C" fn(buffer: Buffer),
}

/// The static descriptor of ABI version 2 (`critbench_critic_descriptor_v2`): version 1's fields,
/// in the same order (with `abi_version` [`ABI_VERSION_V2`]), then the per-task functions. A task
/// handle belongs to the instance that opened it and is used by one thread at a time; unless
/// [`FLAG_THREAD_SAFE`] is set, the host never calls into one instance from two threads at once.
#[repr(C)]
#[derive(Debug)]
pub struct CriticDescriptorV2 {
    /// [`ABI_VERSION_V2`].
    pub abi_version: u32,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// The critic's name, e.g. `rubric`.
    pub name: Str,
    /// The critic's version.
    pub version: Str,
    /// The lowest score the critic gives.
    pub score_min: f64,
    /// The highest score the critic gives.
    pub score_max: f64,
    /// As in [`CriticDescriptorV1`].
    pub create:
        unsafe extern "C" fn(config: Str, host: *const HostV1, instance: *mut *mut c_void, error: *mut Buffer) -> i32,
    /// As in [`CriticDescriptorV1`]: a whole version 1 request, task included.
    pub critique: unsafe extern "C" fn(instance: *mut c_void, request: Str, out: *mut Buffer) -> i32,
    /// As in [`CriticDescriptorV1`]; every task handle of the instance is closed before.
    pub destroy: unsafe extern "C" fn(instance: *mut c_void),
    /// As in [`CriticDescriptorV1`].
    pub free_buffer: unsafe extern "C" fn(buffer: Buffer),
    /// Reads a task (the JSON a version 1 request holds as `task`) once for the rounds of a loop:
    /// on [`STATUS_OK`] `*task_handle` must be non-null; on error `*error` holds a message, and
    /// the host records it as the critique's error.
    pub open_task: unsafe extern "C" fn(
        instance: *mut c_void,
        task: Str,
        task_handle: *mut *mut c_void,
        error: *mut Buffer,
    ) -> i32,
    /// Critiques one draft of an opened task: `request` is a [`TaskRequest`] (no task); `out`
    /// receives the critique JSON or an error message.
    pub critique_task:
        unsafe extern "C" fn(instance: *mut c_void, task_handle: *mut c_void, request: Str, out: *mut Buffer) -> i32,
    /// Releases a task handle made by `open_task`; the host never uses it afterwards.
    pub close_task: unsafe extern "C" fn(instance: *mut c_void, task_handle: *mut c_void),
}

// SAFETY: a descriptor is immutable static data: pointers to static strings and functions.
unsafe impl Sync for CriticDescriptorV1 {}
// SAFETY: as above.
unsafe impl Sync for CriticDescriptorV2 {}
// SAFETY: the host table is immutable after creation and its functions are thread-safe.
unsafe impl Sync for HostV1 {}
// SAFETY: as above.
unsafe impl Send for HostV1 {}

/// The type of the exported entry point.
pub type EntryPoint = unsafe extern "C" fn() -> *const CriticDescriptorV1;
/// The type of the version 2 entry point ([`ENTRY_SYMBOL_V2`]).
pub type EntryPointV2 = unsafe extern "C" fn() -> *const CriticDescriptorV2;

/// A critic's static descriptor of either version, as a host calls it: what a built-in critic
/// registers and what a host finds behind a library's entry points.
#[derive(Clone, Copy, Debug)]
pub enum Descriptor {
    /// A version 1 critic: every request carries its task.
    V1(&'static CriticDescriptorV1),
    /// A version 2 critic: a task is opened once per loop.
    V2(&'static CriticDescriptorV2),
}
/// The type of the optional info symbol ([`INFO_SYMBOL`]): static UTF-8 JSON, empty for none.
pub type InfoEntryPoint = unsafe extern "C" fn() -> Str;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_declares_every_field_of_the_rust_structs() {
        for field in [
            "uint32_t abi_version;",
            "uint32_t flags;",
            "critbench_str name;",
            "critbench_str version;",
            "double score_min;",
            "double score_max;",
            "(*create)(",
            "(*critique)(",
            "(*destroy)(",
            "(*free_buffer)(",
            "const critbench_critic_descriptor_v1 *critbench_critic_v1(void);",
            "(*open_task)(",
            "(*critique_task)(",
            "(*close_task)(",
            "} critbench_critic_descriptor_v2;",
            "const critbench_critic_descriptor_v2 *critbench_critic_v2(void);",
            "critbench_str critbench_critic_info_v1(void);",
        ] {
            assert!(C_HEADER.contains(field), "header lacks {field}");
        }
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_ABI_VERSION {ABI_VERSION}u")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_ABI_VERSION_V2 {ABI_VERSION_V2}u")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_TASK_REQUEST_VERSION {TASK_REQUEST_VERSION}u")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_CRITIQUE_VERSION {CRITIQUE_VERSION}u")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_INFO_VERSION {INFO_VERSION}u")));
        assert!(C_HEADER.contains(INFO_SYMBOL));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_FLAG_THREAD_SAFE {FLAG_THREAD_SAFE}u")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_FLAG_POLICY_DEPENDENT {FLAG_POLICY_DEPENDENT}u")));
    }

    #[test]
    fn version_two_begins_with_version_ones_fields_at_the_same_offsets() {
        use std::mem::offset_of;
        assert_eq!(offset_of!(CriticDescriptorV1, abi_version), offset_of!(CriticDescriptorV2, abi_version));
        assert_eq!(offset_of!(CriticDescriptorV1, flags), offset_of!(CriticDescriptorV2, flags));
        assert_eq!(offset_of!(CriticDescriptorV1, name), offset_of!(CriticDescriptorV2, name));
        assert_eq!(offset_of!(CriticDescriptorV1, version), offset_of!(CriticDescriptorV2, version));
        assert_eq!(offset_of!(CriticDescriptorV1, score_min), offset_of!(CriticDescriptorV2, score_min));
        assert_eq!(offset_of!(CriticDescriptorV1, score_max), offset_of!(CriticDescriptorV2, score_max));
        assert_eq!(offset_of!(CriticDescriptorV1, create), offset_of!(CriticDescriptorV2, create));
        assert_eq!(offset_of!(CriticDescriptorV1, critique), offset_of!(CriticDescriptorV2, critique));
        assert_eq!(offset_of!(CriticDescriptorV1, destroy), offset_of!(CriticDescriptorV2, destroy));
        assert_eq!(offset_of!(CriticDescriptorV1, free_buffer), offset_of!(CriticDescriptorV2, free_buffer));
        assert_eq!(std::mem::size_of::<CriticDescriptorV1>(), offset_of!(CriticDescriptorV2, open_task));
    }

    #[test]
    fn buffers_round_trip() {
        let buffer = Buffer::from_vec(b"hello".to_vec());
        // SAFETY: made just above by from_vec.
        assert_eq!(unsafe { buffer.to_vec() }, b"hello");
        // SAFETY: made by from_vec in this library, freed once.
        unsafe { buffer.free() };
        // SAFETY: an empty buffer is a no-op.
        unsafe { Buffer::from_vec(Vec::new()).free() };
    }
}
