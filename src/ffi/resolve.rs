//! The [`Resolver`] seam: the one way libxml2 and libxslt read any file.
//!
//! Every load (imports, includes, `document()`, DTDs, external entities,
//! XInclude) reaches either the external-entity loader or the input
//! callbacks installed by [`super::init()`]; both ask the resolver installed
//! for the current thread ([`ResolverGuard`]) for the bytes, so what may be
//! read, and recording what was, stay in safe code above `ffi`.

use std::cell::RefCell;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::ptr;
use std::sync::Arc;

use super::errors::note;
use super::{opt_string, sys};

thread_local! {
    static RESOLVERS: RefCell<Vec<Arc<dyn Resolver>>> = const { RefCell::new(Vec::new()) };
}

/// Where libxml2 and libxslt get the bytes of every file they want to read.
///
/// Implementations decide what may be read (Axle confines reads to the
/// document root) and record what was read (for cache dependencies).
pub trait Resolver: Send + Sync {
    /// Returns the bytes behind `url` (an absolute path or `file:` URL as
    /// libxml2 built it) and the URL to report as their base, or a message
    /// saying why the load is refused.
    fn load(&self, url: &str) -> Result<Loaded, String>;

    /// Would [`Resolver::load`] of `url` give, now, the bytes whose blake3
    /// hash is `hash`? If so, records that read as `load` would have. A
    /// parsed DTD is reused only while this holds for every file its parse
    /// read. The default says no (nothing is reused).
    fn unchanged(&self, url: &str, hash: &[u8; 32]) -> bool {
        let _ = (url, hash);
        false
    }
}

/// Bytes handed to libxml2 by a [`Resolver`].
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The base URL of the loaded bytes (normally the absolute path).
    pub url: String,
    /// The file's content.
    pub bytes: Vec<u8>,
}

/// A resolver that refuses every load.
#[derive(Debug, Default, Clone, Copy)]
pub struct RefuseAll;

impl Resolver for RefuseAll {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        Err(format!("loading {url} is not allowed here"))
    }
}

/// Installs `resolver` for the current thread until the guard drops.
pub(super) struct ResolverGuard;

impl ResolverGuard {
    pub(super) fn install(resolver: Arc<dyn Resolver>) -> ResolverGuard {
        RESOLVERS.with(|r| r.borrow_mut().push(resolver));
        ResolverGuard
    }
}

impl Drop for ResolverGuard {
    fn drop(&mut self) {
        RESOLVERS.with(|r| {
            r.borrow_mut().pop();
        });
    }
}

fn current_resolver() -> Option<Arc<dyn Resolver>> {
    RESOLVERS.with(|r| r.borrow().last().cloned())
}

/// libxml2's external entity loader: every file read by libxml2 or libxslt
/// (imports, includes, `document()`, DTDs, external entities) arrives here.
pub(super) unsafe extern "C" fn entity_loader(
    url: *const c_char,
    _id: *const c_char,
    ctxt: *mut sys::xmlParserCtxt,
) -> *mut sys::xmlParserInput {
    if url.is_null() || ctxt.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: libxml2 passes a NUL-terminated URL valid for the call.
    let url = unsafe { CStr::from_ptr(url) }
        .to_string_lossy()
        .into_owned();
    let Some(resolver) = current_resolver() else {
        note(&format!("refused to load {url}\n"));
        return ptr::null_mut();
    };
    match resolver.load(&url) {
        Ok(loaded) => {
            let Ok(base) = CString::new(loaded.url) else {
                note(&format!("cannot load {url}: bad name\n"));
                return ptr::null_mut();
            };
            let cursor: *mut std::ffi::c_void = Box::into_raw(Box::new(IoCursor {
                bytes: loaded.bytes,
                pos: 0,
            }))
            .cast();
            // SAFETY: ctxt is the live parser context libxml2 passed us; the
            // cursor is a fresh Box that the input buffer now owns and frees
            // through io_close (also on failure); the URL string is copied.
            unsafe {
                sys::shim_input_from_io(ctxt, Some(io_read), Some(io_close), cursor, base.as_ptr())
            }
        }
        Err(why) => {
            note(&format!("{why}\n"));
            ptr::null_mut()
        }
    }
}

/// An open input handed to libxml2 by [`io_open`].
struct IoCursor {
    bytes: Vec<u8>,
    pos: usize,
}

/// libxml2 input callback: claims every URI, so no built-in handler runs.
pub(super) unsafe extern "C" fn io_match(_filename: *const c_char) -> c_int {
    1
}

/// libxml2 input callback: opens through the thread's Resolver.
pub(super) unsafe extern "C" fn io_open(filename: *const c_char) -> *mut std::ffi::c_void {
    let url = opt_string(filename).unwrap_or_default();
    let Some(resolver) = current_resolver() else {
        note(&format!("refused to read {url}\n"));
        return ptr::null_mut();
    };
    match resolver.load(&url) {
        Ok(loaded) => Box::into_raw(Box::new(IoCursor {
            bytes: loaded.bytes,
            pos: 0,
        }))
        .cast(),
        Err(why) => {
            note(&format!("{why}\n"));
            ptr::null_mut()
        }
    }
}

/// libxml2 input callback: copies the next bytes.
pub(super) unsafe extern "C" fn io_read(
    ctx: *mut std::ffi::c_void,
    buf: *mut c_char,
    len: c_int,
) -> c_int {
    if ctx.is_null() || buf.is_null() || len <= 0 {
        return -1;
    }
    // SAFETY: ctx came from io_open (a live IoCursor, used by one thread).
    let cursor = unsafe { &mut *ctx.cast::<IoCursor>() };
    let rest = cursor.bytes.get(cursor.pos..).unwrap_or(&[]);
    let n = rest.len().min(usize::try_from(len).unwrap_or(0));
    // SAFETY: libxml2 gives a buffer of at least `len` bytes; n <= len.
    unsafe { ptr::copy_nonoverlapping(rest.as_ptr(), buf.cast::<u8>(), n) };
    cursor.pos += n;
    c_int::try_from(n).unwrap_or(-1)
}

/// libxml2 input callback: frees the cursor.
pub(super) unsafe extern "C" fn io_close(ctx: *mut std::ffi::c_void) -> c_int {
    if !ctx.is_null() {
        // SAFETY: ctx came from Box::into_raw in io_open and is closed once.
        drop(unsafe { Box::from_raw(ctx.cast::<IoCursor>()) });
    }
    0
}
