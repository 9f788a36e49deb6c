//! Shared parsed DTDs: the external subset a document names is parsed once
//! and lent to every later parse that names it, instead of being parsed
//! again each time (a DocBook document spends about 99% of its parse in the
//! DTD). `csrc/dtd.c` holds the libxml2 side and the argument for why a
//! document parsed with a lent DTD is the tree a full parse gives.
//!
//! This module owns the templates: which one a document gets (by its
//! resolved system URI and public ID), and whether it is still current:
//! every file its parse read, by URL and content hash, is asked of the
//! document's [`Resolver`] again ([`Resolver::unchanged`]), which also
//! records those reads as the document's dependencies, as loading them
//! would.

use std::ffi::CString;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::resolve::ResolverGuard;
use super::{Loaded, Resolver, sys};

/// Templates kept at most (distinct DTDs in use; a parsed DocBook 3.1.7 or
/// 4.1.2 DTD holds about 4 MiB of libxml2's heap).
const CAPACITY: usize = 8;

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns sharing parsed DTDs on or off for the whole process (it is on by
/// default). Off, every parse reads and parses its DTD itself; the two
/// give the same trees, which is what the tests compare.
pub fn set_shared_dtds(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// A document's DOCTYPE identifiers as written: what selects a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DoctypeIds<'a> {
    /// The public identifier, if any.
    pub public_id: Option<&'a str>,
    /// The system identifier.
    pub system_id: &'a str,
}

/// One parsed external subset (or the record that it cannot be shared),
/// with the files its parse read.
pub(super) struct Template {
    ptr: NonNull<sys::axle_dtd>,
    /// Every file the parse read: (URL as given to the loader, blake3).
    reads: Vec<(String, [u8; 32])>,
    /// May documents borrow it? Not when its parse said anything, or a
    /// file it wanted could not be read (then it is kept only to say so,
    /// until one of the files it did read changes).
    shareable: bool,
}

// SAFETY: a template is immutable once built (the C side only reads it;
// its reference count is atomic), so it may be used and dropped anywhere.
unsafe impl Send for Template {}
// SAFETY: as above; shared use is read-only.
unsafe impl Sync for Template {}

impl Drop for Template {
    fn drop(&mut self) {
        // SAFETY: drops the reference the build returned; documents that
        // borrow from the template hold their own.
        unsafe { sys::axle_dtd_release(self.ptr.as_ptr()) };
    }
}

impl Template {
    pub(super) fn as_ptr(&self) -> *mut sys::axle_dtd {
        self.ptr.as_ptr()
    }
}

type Key = (String, Option<String>);

static TEMPLATES: Mutex<Vec<(Key, Arc<Template>)>> = Mutex::new(Vec::new());

/// The URI libxml2 loads for `system_id` in a document at `url`.
fn resolve(system_id: &str, url: &str) -> Option<String> {
    let sys_c = CString::new(system_id).ok()?;
    let url_c = CString::new(url).ok()?;
    // SAFETY: both strings are NUL-terminated; the result is NULL or a
    // string from libxml2's allocator, which we copy and free.
    unsafe {
        let p = sys::axle_dtd_resolve(sys_c.as_ptr(), url_c.as_ptr());
        if p.is_null() {
            return None;
        }
        let s = std::ffi::CStr::from_ptr(p.cast())
            .to_string_lossy()
            .into_owned();
        sys::xmlFree(p.cast());
        Some(s)
    }
}

/// A resolver that forwards to another and notes what it loaded.
struct Recording {
    inner: Arc<dyn Resolver>,
    reads: Mutex<Vec<(String, [u8; 32])>>,
    complete: AtomicBool,
}

impl Resolver for Recording {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        let loaded = self.inner.load(url);
        match &loaded {
            Ok(l) => {
                if let Ok(mut reads) = self.reads.lock() {
                    reads.push((url.to_string(), *blake3::hash(&l.bytes).as_bytes()));
                }
            }
            // A refused or missing file: the template could not be
            // checked for it later, so it is not kept.
            Err(_) => self.complete.store(false, Ordering::Relaxed),
        }
        loaded
    }
}

/// The current template for a document at `url` with these DOCTYPE
/// identifiers, built if there is none or the one kept is stale; `None`
/// when sharing is off or the resolver cannot vouch for files. Reads made
/// to build or check it are recorded by `resolver`.
pub(super) fn template_for(
    ids: DoctypeIds<'_>,
    url: &str,
    options: std::os::raw::c_int,
    resolver: &Arc<dyn Resolver>,
) -> Option<Arc<Template>> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    let key: Key = (
        resolve(ids.system_id, url)?,
        ids.public_id.map(str::to_string),
    );
    let kept = TEMPLATES
        .lock()
        .ok()?
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, t)| Arc::clone(t));
    if let Some(t) = kept {
        if t.reads.iter().all(|(u, h)| resolver.unchanged(u, h)) {
            return t.shareable.then_some(t);
        }
    }
    let t = Arc::new(build(ids, url, options, resolver)?);
    if let Ok(mut all) = TEMPLATES.lock() {
        all.retain(|(k, _)| *k != key);
        if all.len() >= CAPACITY {
            all.remove(0);
        }
        all.push((key, Arc::clone(&t)));
    }
    t.shareable.then_some(t)
}

fn build(
    ids: DoctypeIds<'_>,
    url: &str,
    options: std::os::raw::c_int,
    resolver: &Arc<dyn Resolver>,
) -> Option<Template> {
    let url_c = CString::new(url).ok()?;
    let sys_c = CString::new(ids.system_id).ok()?;
    let pub_c = match ids.public_id {
        Some(p) => Some(CString::new(p).ok()?),
        None => None,
    };
    let recording = Arc::new(Recording {
        inner: Arc::clone(resolver),
        reads: Mutex::new(Vec::new()),
        complete: AtomicBool::new(true),
    });
    let ptr = {
        let _guard = ResolverGuard::install(recording.clone());
        // SAFETY: the strings are NUL-terminated and outlive the call; the
        // build parses a two-line document of its own and returns a
        // template with one reference (ours) or NULL.
        unsafe {
            sys::axle_dtd_build(
                url_c.as_ptr(),
                pub_c.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
                sys_c.as_ptr(),
                options,
            )
        }
    };
    let ptr = NonNull::new(ptr)?;
    let reads = recording
        .reads
        .lock()
        .map(|r| r.clone())
        .unwrap_or_default();
    // SAFETY: reads a flag of the live template just built.
    let parsed_clean = unsafe { sys::axle_dtd_ok(ptr.as_ptr()) == 1 };
    let shareable = parsed_clean && recording.complete.load(Ordering::Relaxed) && !reads.is_empty();
    Some(Template {
        ptr,
        reads,
        shareable,
    })
}

#[cfg(test)]
mod tests;
