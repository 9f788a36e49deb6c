//! The only place in Axle that knows libxml2 and libxslt exist, and the only
//! module with `unsafe` code: RAII types over the system libraries, following
//! the measured design in `research/xslt-binding.md` (shared folder).
//!
//! What it owns:
//! - process-wide set-up ([`init()`], in `init.rs`): EXSLT, security prefs
//!   that forbid writing files, creating directories and all network
//!   access, the template depth limit, and one external-entity loader
//!   through which *every* file libxml2 or libxslt reads passes (imports,
//!   includes, `document()`, DTDs, entities); and the runtime library
//!   versions ([`library_versions`]);
//! - [`XmlDoc`] (`doc.rs`: an owned tree, `Send`), [`Stylesheet`]
//!   (`stylesheet.rs`: compiled once, shared across threads, `Send + Sync`;
//!   each transform runs on a compiled instance of its own, as libxml2
//!   writes into compiled XPath; the transform itself in `transform.rs`)
//!   and [`ResultDoc`] (`result.rs`: a transform result that must be
//!   serialized by the stylesheet that made it);
//! - per-thread error capture (`errors.rs`): libxml2/libxslt messages go
//!   into a buffer of the calling thread and come back as [`XmlError`],
//!   never to stderr;
//! - shared parsed DTDs (`dtd`, with `csrc/dtd.c`): a document's external
//!   subset is parsed once and lent to later parses of documents that name
//!   it ([`XmlDoc::parse_document`]), giving the same tree;
//! - the prolog as a full parse reads it ([`prolog_via_libxml`], in
//!   `raw_prolog.rs`), for documents the fast scanner cannot read.
//!
//! What it deliberately does not do: decide *which* files may be read. Each
//! operation takes a [`Resolver`] (`resolve.rs`; installed for the current
//! thread while the operation runs); the loader asks it for bytes, so
//! confinement to the document root and dependency recording live in safe
//! code above this module.
#![allow(unsafe_code)]

mod budget;
mod collate;
mod doc;
mod dtd;
mod errors;
#[doc(hidden)]
pub mod fuzzing;
#[doc(hidden)]
pub mod html_source;
mod init;
mod raw_prolog;
mod resolve;
mod result;
mod stylesheet;
mod sys;
mod transform;
mod untrusted;

pub use budget::{BudgetScope, Exceeded, RenderBudget};
pub use doc::XmlDoc;
pub use dtd::{DoctypeIds, set_shared_dtds};
pub use errors::{XmlError, axle_error_sink, axle_structured_sink};
pub use init::{
    INTERNAL_SCHEME, LibraryVersions, init, library_versions, str_equal_is_ours,
    xpath_contexts_are_pooled, xpath_contexts_reused_here, xslt_elements_are_shared,
};
pub use raw_prolog::{RawProlog, prolog_via_libxml};
pub use resolve::{Loaded, RefuseAll, Resolver};
pub use result::ResultDoc;
pub use stylesheet::{OutputSettings, Stylesheet};
pub use transform::Limits;
pub use untrusted::{DEPTH_CEILING, EXPANSION_FLOOR, Refusal, UntrustedLimits, most_attributes};

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};

/// Parse options for documents served to the public: entities substituted
/// (so libxml2's amplification guards apply), DTD attribute defaults as
/// `xsltproc` applies them, CDATA merged into text, no network, no printing.
/// External loads go through the loader and so through the [`Resolver`].
const DOC_OPTIONS: c_int = sys::XML_PARSE_NOENT
    | sys::XML_PARSE_DTDLOAD
    | sys::XML_PARSE_DTDATTR
    | sys::XML_PARSE_NOCDATA
    | sys::XML_PARSE_NONET
    | sys::XML_PARSE_NOERROR
    | sys::XML_PARSE_NOWARNING;

/// Copies a C string owned by libxml2 (may be NULL).
fn opt_string(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        // SAFETY: callers pass NULL or a NUL-terminated string owned by
        // libxml2 that is valid for the duration of this call.
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

fn c_len(bytes: &[u8]) -> Result<c_int, XmlError> {
    c_int::try_from(bytes.len())
        .map_err(|_| XmlError::Input("document larger than 2 GiB".to_string()))
}

fn c_string(s: &str, what: &str) -> Result<CString, XmlError> {
    CString::new(s).map_err(|_| XmlError::Input(format!("{what} contains a NUL byte")))
}

/// Copies and frees a buffer allocated by libxml2.
///
/// # Safety
/// `buf` is NULL or points to at least `len` bytes allocated by libxml2's
/// allocator and owned by the caller.
unsafe fn take_buffer(buf: *mut u8, len: c_int) -> Vec<u8> {
    if buf.is_null() {
        return Vec::new();
    }
    let len = usize::try_from(len).unwrap_or(0);
    // SAFETY: per the contract, `buf` holds `len` initialized bytes.
    let v = unsafe { std::slice::from_raw_parts(buf, len) }.to_vec();
    // SAFETY: the buffer came from libxml2's allocator and is freed once.
    unsafe { sys::xmlFree(buf.cast()) };
    v
}

#[cfg(test)]
mod canonical_tests;
#[cfg(test)]
mod html_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod xinclude_tests;
#[cfg(test)]
mod xpath_pool_tests;
