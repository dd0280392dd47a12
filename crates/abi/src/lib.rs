//! The critic plugin ABI, shared by the host and by plugins written in Rust.
//!
//! The C view of the same contract is `include/critbench.h` (also available as [`C_HEADER`]);
//! the `#[repr(C)]` types here mirror it field for field. A plugin exports one symbol,
//! [`ENTRY_SYMBOL`], returning its [`CriticDescriptor`]. A Rust plugin implements
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
//! A critic that reads each task once per loop (`open_task`) and then only each round's draft
//! (`critique_task`, a [`TaskRequest`]) implements [`TaskCritic`] too and is exported with
//! [`export_task_critic!`]: the same descriptor, with its task functions set. What a plugin
//! declares about itself — the issue types it tags, the host services it needs, hints for its
//! users — is a JSON [`PluginInfo`] in the descriptor ([`CriticPlugin::INFO`] in Rust).
#![warn(missing_docs)]

use std::ffi::c_void;

mod export;
mod info;
mod messages;

pub use export::{
    CriticError, CriticPlugin, Host, ServiceError, TaskCritic, builtin_descriptor, builtin_task_descriptor, glue,
    library_descriptor, library_task_descriptor,
};
pub use info::{INFO_VERSION, InfoError, IssueType, PluginInfo};
pub use messages::{CRITIQUE_VERSION, REQUEST_VERSION, Request, RequestTask, TASK_REQUEST_VERSION, TaskRequest};

/// The ABI version of [`CriticDescriptor`] and of the host table ([`HostTable`]).
pub const ABI_VERSION: u32 = 3;
/// The symbol every plugin exports, returning its [`CriticDescriptor`].
pub const ENTRY_SYMBOL: &str = "critbench_critic";
/// The symbols of the ABI versions before this one (1 and 2, and version 1's info symbol): a
/// library that exports them instead of [`ENTRY_SYMBOL`] was built for an earlier critbench.
pub const RETIRED_SYMBOLS: [&str; 3] = ["critbench_critic_v1", "critbench_critic_v2", "critbench_critic_info_v1"];
/// The plugin may be called on one instance from many threads at once.
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

/// Host services offered to a plugin (`critbench_host`).
#[repr(C)]
#[derive(Debug)]
pub struct HostTable {
    /// The ABI version of the host ([`ABI_VERSION`]).
    pub abi_version: u32,
    /// `size_of::<HostTable>()` as the host knows it: later versions only append fields.
    pub size: u32,
    /// The run this table belongs to; passed back as `call`'s first argument.
    pub context: *mut c_void,
    /// Calls a host service by name with a JSON request; `out` receives the answer (on
    /// [`STATUS_OK`]) or an error message, to be released with `free_buffer`.
    pub call: unsafe extern "C" fn(context: *mut c_void, service: Str, request: Str, out: *mut Buffer) -> i32,
    /// Frees a buffer the host allocated.
    pub free_buffer: unsafe extern "C" fn(buffer: Buffer),
}

/// `create`: makes an instance from a JSON config; on [`STATUS_OK`] `*instance` must be non-null,
/// on error `*error` holds a message.
pub type CreateFn =
    unsafe extern "C" fn(config: Str, host: *const HostTable, instance: *mut *mut c_void, error: *mut Buffer) -> i32;
/// `critique`: critiques a whole request (task included); `out` receives the critique JSON or an
/// error message.
pub type CritiqueFn = unsafe extern "C" fn(instance: *mut c_void, request: Str, out: *mut Buffer) -> i32;
/// `destroy`: destroys an instance made by `create`, every task handle of it closed before.
pub type DestroyFn = unsafe extern "C" fn(instance: *mut c_void);
/// `free_buffer`: frees a buffer the plugin allocated.
pub type FreeBufferFn = unsafe extern "C" fn(buffer: Buffer);
/// `open_task`: reads a task (the JSON a whole request holds as `task`); on [`STATUS_OK`]
/// `*task_handle` must be non-null, on error `*error` holds a message, the critique's error.
pub type OpenTaskFn =
    unsafe extern "C" fn(instance: *mut c_void, task: Str, task_handle: *mut *mut c_void, error: *mut Buffer) -> i32;
/// `critique_task`: critiques one draft of an opened task, `request` a [`TaskRequest`] (no task);
/// `out` receives the critique JSON or an error message.
pub type CritiqueTaskFn =
    unsafe extern "C" fn(instance: *mut c_void, task_handle: *mut c_void, request: Str, out: *mut Buffer) -> i32;
/// `close_task`: releases a task handle made by `open_task`; the host never uses it afterwards.
pub type CloseTaskFn = unsafe extern "C" fn(instance: *mut c_void, task_handle: *mut c_void);

/// The static descriptor a plugin returns (`critbench_critic_descriptor`). Its functions are
/// `Option`s because C may leave any of them NULL: the host refuses a descriptor without the first
/// four, and one with some but not all of the task functions. The three task functions set say
/// that the plugin reads a task once per loop; left `None`, every request carries its task.
#[repr(C)]
#[derive(Debug)]
pub struct CriticDescriptor {
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
    /// The plugin's info JSON ([`PluginInfo`]); empty declares nothing.
    pub info: Str,
    /// Makes an instance from a JSON config (required).
    pub create: Option<CreateFn>,
    /// Critiques a whole request (required).
    pub critique: Option<CritiqueFn>,
    /// Destroys an instance (required).
    pub destroy: Option<DestroyFn>,
    /// Frees a buffer the plugin allocated (required).
    pub free_buffer: Option<FreeBufferFn>,
    /// Reads a task once for the rounds of a loop (with the next two, or none of the three).
    pub open_task: Option<OpenTaskFn>,
    /// Critiques one draft of an opened task.
    pub critique_task: Option<CritiqueTaskFn>,
    /// Releases a task handle.
    pub close_task: Option<CloseTaskFn>,
}

// SAFETY: a descriptor is immutable static data: pointers to static strings and functions.
unsafe impl Sync for CriticDescriptor {}
// SAFETY: the host table is immutable after creation and its functions are thread-safe.
unsafe impl Sync for HostTable {}
// SAFETY: as above.
unsafe impl Send for HostTable {}

/// The type of the exported entry point ([`ENTRY_SYMBOL`]).
pub type EntryPoint = unsafe extern "C" fn() -> *const CriticDescriptor;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_declares_every_field_of_the_rust_structs_in_their_order() {
        // Each struct's fields, in the order the `repr(C)` mirror declares them.
        let structs: [(&str, &[&str]); 2] = [
            (
                "typedef struct critbench_host {",
                &["uint32_t abi_version;", "uint32_t size;", "void *context;", "(*call)(", "(*free_buffer)("],
            ),
            (
                "typedef struct critbench_critic_descriptor {",
                &[
                    "uint32_t abi_version;",
                    "uint32_t flags;",
                    "critbench_str name;",
                    "critbench_str version;",
                    "double score_min;",
                    "double score_max;",
                    "critbench_str info;",
                    "(*create)(",
                    "(*critique)(",
                    "(*destroy)(",
                    "(*free_buffer)(",
                    "(*open_task)(",
                    "(*critique_task)(",
                    "(*close_task)(",
                ],
            ),
        ];
        for (opening, fields) in structs {
            let body = C_HEADER.split(opening).nth(1).unwrap_or_else(|| panic!("header lacks {opening}"));
            let body = body.split("\n} ").next().unwrap();
            let mut from = 0;
            for field in fields {
                let at = body[from..]
                    .find(field)
                    .unwrap_or_else(|| panic!("{opening} lacks {field} after the fields before"));
                from += at + field.len();
            }
        }
        assert!(C_HEADER.contains(&format!("const critbench_critic_descriptor *{ENTRY_SYMBOL}(void);")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_ABI_VERSION {ABI_VERSION}u")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_TASK_REQUEST_VERSION {TASK_REQUEST_VERSION}u")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_CRITIQUE_VERSION {CRITIQUE_VERSION}u")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_INFO_VERSION {INFO_VERSION}u")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_FLAG_THREAD_SAFE {FLAG_THREAD_SAFE}u")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_FLAG_POLICY_DEPENDENT {FLAG_POLICY_DEPENDENT}u")));
        // The header declares no entry point but the one.
        for retired in RETIRED_SYMBOLS {
            assert!(!C_HEADER.contains(&format!("{retired}(void)")), "the header still declares {retired}");
        }
    }

    #[test]
    fn a_null_function_of_the_descriptor_is_a_none_of_the_same_size() {
        // C may leave a function NULL: the mirror reads it as `None`, at the size of a pointer.
        assert_eq!(std::mem::size_of::<Option<CreateFn>>(), std::mem::size_of::<*const c_void>());
        assert_eq!(std::mem::size_of::<Option<CloseTaskFn>>(), std::mem::size_of::<*const c_void>());
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
