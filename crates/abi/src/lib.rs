//! The critic plugin ABI (version 1), shared by the host and by plugins written in Rust.
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
//!     fn create(_config: &str, _host: Host) -> Result<Self, String> {
//!         Ok(Length)
//!     }
//!
//!     fn critique(&self, request: &str) -> Result<String, String> {
//!         let request: critbench_abi::Request = serde_json::from_str(request).map_err(|e| e.to_string())?;
//!         let score = (request.draft.len() as f64 / 100.0).min(10.0);
//!         Ok(serde_json::json!({ "score": score }).to_string())
//!     }
//! }
//!
//! export_critic!(Length);
//! ```
//!
//! A plugin may also declare what it is — the issue types it tags, the host services it needs,
//! hints for its users — in a JSON [`PluginInfo`] (the optional symbol [`INFO_SYMBOL`];
//! [`CriticPlugin::INFO`] in Rust).
#![warn(missing_docs)]

use std::ffi::c_void;

mod export;
mod info;
mod messages;

pub use export::{CriticPlugin, Host, builtin_descriptor, glue, library_descriptor};
pub use info::{INFO_VERSION, IssueType, PluginInfo};
pub use messages::{CRITIQUE_VERSION, REQUEST_VERSION, Request, RequestTask};

/// The ABI version this crate speaks.
pub const ABI_VERSION: u32 = 1;
/// The symbol every plugin exports.
pub const ENTRY_SYMBOL: &str = "critbench_critic_v1";
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

// SAFETY: a descriptor is immutable static data: pointers to static strings and functions.
unsafe impl Sync for CriticDescriptorV1 {}
// SAFETY: the host table is immutable after creation and its functions are thread-safe.
unsafe impl Sync for HostV1 {}
// SAFETY: as above.
unsafe impl Send for HostV1 {}

/// The type of the exported entry point.
pub type EntryPoint = unsafe extern "C" fn() -> *const CriticDescriptorV1;
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
            "critbench_str critbench_critic_info_v1(void);",
        ] {
            assert!(C_HEADER.contains(field), "header lacks {field}");
        }
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_ABI_VERSION {ABI_VERSION}u")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_CRITIQUE_VERSION {CRITIQUE_VERSION}u")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_INFO_VERSION {INFO_VERSION}u")));
        assert!(C_HEADER.contains(INFO_SYMBOL));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_FLAG_THREAD_SAFE {FLAG_THREAD_SAFE}u")));
        assert!(C_HEADER.contains(&format!("#define CRITBENCH_FLAG_POLICY_DEPENDENT {FLAG_POLICY_DEPENDENT}u")));
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
