//! [`XmlDoc`]: an owned libxml2 tree. Parsing (with the public parse
//! options and, for documents, a shared parsed DTD when one fits),
//! XInclude, the plain-XML serialization of an intermediate stage and the
//! tree's canonical form for hashing.

use std::ffi::CString;
use std::os::raw::c_int;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use super::errors::{begin, last_parse_error, take_messages};
use super::resolve::ResolverGuard;
use super::{DOC_OPTIONS, DoctypeIds, Resolver, XmlError, c_len, c_string, dtd, sys, take_buffer};

/// An owned libxml2 document tree.
///
/// `Send` but not `Sync`: a tree is used by one thread at a time, and libxslt
/// mutates the trees it transforms, so a tree is consumed by a transform.
#[derive(Debug)]
pub struct XmlDoc {
    pub(super) ptr: NonNull<sys::xmlDoc>,
    /// Parsed with a shared DTD ([`XmlDoc::parse_document`]): its external
    /// subset borrows the template's tables, which go back before it is
    /// freed. Such a tree is never given to libxslt to own.
    pub(super) borrows_dtd: bool,
}

// SAFETY: an xmlDoc is a self-contained heap structure (its dictionary, when
// any, is reference-counted and thread-safe in libxml2); XmlDoc owns it
// exclusively and is not Sync, so only one thread touches it at a time.
unsafe impl Send for XmlDoc {}

impl Drop for XmlDoc {
    fn drop(&mut self) {
        if self.borrows_dtd {
            // SAFETY: we own the document and nothing else frees it; the
            // C side returns the borrowed DTD tables, then frees it.
            unsafe { sys::axle_dtd_free_doc(self.ptr.as_ptr()) };
        } else {
            // SAFETY: we own the document and nothing else frees it.
            unsafe { sys::xmlFreeDoc(self.ptr.as_ptr()) };
        }
    }
}

impl XmlDoc {
    /// Parses `bytes` as a document whose base URL is `url` (normally its
    /// absolute path). External loads (DTD, entities) go to `resolver`.
    pub fn parse(bytes: &[u8], url: &str, resolver: Arc<dyn Resolver>) -> Result<XmlDoc, XmlError> {
        XmlDoc::read(bytes, url, resolver, None)
    }

    /// Parses a document to be transformed: as [`XmlDoc::parse`], but when
    /// `doctype` names an external subset that was parsed before (and none
    /// of the files that parse read has changed, as `resolver` says), the
    /// parsed DTD is lent to this parse instead of being read and parsed
    /// again. The tree is the same either way (see `csrc/dtd.c`); the
    /// files of the DTD are recorded by `resolver` either way.
    pub fn parse_document(
        bytes: &[u8],
        url: &str,
        resolver: Arc<dyn Resolver>,
        doctype: Option<DoctypeIds<'_>>,
    ) -> Result<XmlDoc, XmlError> {
        let template = doctype.and_then(|ids| {
            begin();
            let _guard = ResolverGuard::install(resolver.clone());
            dtd::template_for(ids, url, DOC_OPTIONS, &resolver)
        });
        XmlDoc::read(bytes, url, resolver, template.as_deref())
    }

    /// The one parse: libxml2's own (`xmlReadMemory`), or with `template`
    /// standing in for the document's external subset where it can.
    fn read(
        bytes: &[u8],
        url: &str,
        resolver: Arc<dyn Resolver>,
        template: Option<&dtd::Template>,
    ) -> Result<XmlDoc, XmlError> {
        // Also clears whatever building a template left in the thread's
        // error buffer.
        begin();
        let len = c_len(bytes)?;
        let c_url = c_string(url, "document URL")?;
        let _guard = ResolverGuard::install(resolver);
        let mut used: c_int = 0;
        // SAFETY: buffer and length describe `bytes`, which outlives the call;
        // libxml2 copies what it keeps. The URL is NUL-terminated. A template
        // is live for the call (the caller holds it); the C side takes its
        // own reference for a document that borrows from it, reported in
        // `used`.
        let doc = unsafe {
            match template {
                None => sys::xmlReadMemory(
                    bytes.as_ptr().cast(),
                    len,
                    c_url.as_ptr(),
                    ptr::null(),
                    DOC_OPTIONS,
                ),
                Some(t) => sys::axle_dtd_read(
                    bytes.as_ptr().cast(),
                    len,
                    c_url.as_ptr(),
                    DOC_OPTIONS,
                    t.as_ptr(),
                    &mut used,
                ),
            }
        };
        match NonNull::new(doc) {
            Some(ptr) => Ok(XmlDoc {
                ptr,
                borrows_dtd: used == 1,
            }),
            None => Err(last_parse_error(url)),
        }
    }

    /// Parses an earlier stage's output ([`XmlDoc::to_xml_bytes`]): as
    /// [`XmlDoc::parse`], then text that was written with
    /// disable-output-escaping (escaped, between the JAXP processing
    /// instructions `javax.xml.transform.disable-output-escaping` and
    /// `…enable-output-escaping`) becomes such text again, and the two
    /// instructions go.
    pub fn parse_stage_output(
        bytes: &[u8],
        url: &str,
        resolver: Arc<dyn Resolver>,
        doctype: Option<DoctypeIds<'_>>,
    ) -> Result<XmlDoc, XmlError> {
        let doc = XmlDoc::parse_document(bytes, url, resolver, doctype)?;
        // SAFETY: the document is live and ours; the shim relinks and frees
        // only processing-instruction nodes of it and renames text nodes to
        // libxml2's static "noenc" name.
        unsafe { sys::shim_restore_doe(doc.ptr.as_ptr()) };
        Ok(doc)
    }

    /// How many nodes this document would have once its XInclude elements
    /// are processed: an upper bound, counted without copying anything
    /// (`csrc/xinclude.c`); counting stops once past `limit`. Included
    /// files are read through `resolver`.
    pub fn xinclude_expansion(&self, resolver: Arc<dyn Resolver>, limit: u64) -> u64 {
        begin();
        let _guard = ResolverGuard::install(resolver);
        // SAFETY: the document is live and ours; the count only reads it
        // (and parses, then frees, the documents it includes).
        let n =
            unsafe { sys::axle_xinclude_expansion(self.ptr.as_ptr(), DOC_OPTIONS, limit as f64) };
        let _ = take_messages();
        n as u64
    }

    /// Processes XInclude elements; included files are read through
    /// `resolver` (so confined and recorded). Returns the number of
    /// substitutions.
    pub fn process_xinclude(&mut self, resolver: Arc<dyn Resolver>) -> Result<u32, XmlError> {
        begin();
        let _guard = ResolverGuard::install(resolver);
        if self.borrows_dtd {
            // XInclude looks entities up without the parser's hook: give the
            // document every entity of its DTD first, as a full parse would.
            // SAFETY: the document is live and ours and borrows a template.
            unsafe { sys::axle_dtd_materialize(self.ptr.as_ptr()) };
        }
        // SAFETY: the document is live and ours; libxml2 edits it in place.
        let rc = unsafe { sys::xmlXIncludeProcessFlags(self.ptr.as_ptr(), DOC_OPTIONS) };
        let messages = take_messages();
        u32::try_from(rc).map_err(|_| {
            XmlError::Transform(if messages.is_empty() {
                "XInclude processing failed".to_string()
            } else {
                messages
            })
        })
    }

    /// Serializes the tree as plain UTF-8 XML: the canonical bytes of an
    /// intermediate stage's output. Text written with
    /// disable-output-escaping is escaped between the JAXP processing
    /// instructions that say so (see [`XmlDoc::parse_stage_output`]).
    pub fn to_xml_bytes(&self) -> Result<Vec<u8>, XmlError> {
        begin();
        let mut out: *mut u8 = ptr::null_mut();
        let mut len: c_int = 0;
        // SAFETY: the document is live and owned by us; out/len are valid locals.
        let rc = unsafe { sys::shim_dump_xml(self.ptr.as_ptr(), &mut out, &mut len) };
        // SAFETY: on success `out` holds `len` bytes allocated by libxml2.
        let bytes = unsafe { take_buffer(out, len) };
        if rc != 0 {
            return Err(XmlError::Serialize(take_messages()));
        }
        Ok(bytes)
    }

    /// Was this tree parsed with a shared DTD ([`XmlDoc::parse_document`])?
    pub fn shares_dtd(&self) -> bool {
        self.borrows_dtd
    }

    /// Would re-parsing [`XmlDoc::to_xml_bytes`] give exactly this tree? Only
    /// then may the tree be handed to the next stage without re-parsing.
    pub fn is_faithful(&self) -> bool {
        // SAFETY: read-only walk over a live document we own.
        unsafe { sys::shim_doc_is_faithful(self.ptr.as_ptr()) == 1 }
    }

    /// Calls `f` with the tree's canonical form: an encoding of everything
    /// [`XmlDoc::to_xml_bytes`] reads (the XML declaration's fields, a
    /// DTD node's name and identifiers, and every node's type, name,
    /// namespace, content, namespace declarations and attributes, in
    /// order, with where each element ends). Equal forms serialize to
    /// equal bytes, so a hash of the form identifies a faithful tree as
    /// well as a hash of its bytes, for less (callgrind, the 10 KB sample
    /// article's stage-1 tree: the walk 33k instructions where serializing
    /// took 199k; with the hash, 69k against 236k). `None` when the tree
    /// holds something the form does not encode (a DTD with declarations,
    /// an entity reference, another node type) or memory ran out:
    /// serialize instead.
    pub fn with_canonical_form<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let mut out: *mut u8 = ptr::null_mut();
        let mut len: usize = 0;
        // SAFETY: read-only walk over a live document we own; out/len are
        // valid locals the shim fills on success.
        let rc = unsafe { sys::shim_tree_canon(self.ptr.as_ptr(), &mut out, &mut len) };
        if rc != 0 || out.is_null() {
            return None;
        }
        // SAFETY: on success `out` holds `len` initialized bytes allocated
        // with xmlMalloc, ours until freed below; the slice does not
        // outlive this call.
        let result = f(unsafe { std::slice::from_raw_parts(out, len) });
        // SAFETY: `out` came from xmlMalloc and is freed once.
        unsafe { sys::xmlFree(out.cast()) };
        Some(result)
    }

    pub(super) fn set_url(&mut self, url: &str) {
        if let Ok(c) = CString::new(url) {
            // SAFETY: the document is ours; the shim copies the string.
            unsafe { sys::shim_set_doc_url(self.ptr.as_ptr(), c.as_ptr()) };
        }
    }

    pub(super) fn into_raw(self) -> *mut sys::xmlDoc {
        // Only trees from `parse` are given away (to libxslt, which frees
        // them with xmlFreeDoc); a borrowing tree must not be.
        debug_assert!(!self.borrows_dtd);
        let p = self.ptr.as_ptr();
        std::mem::forget(self);
        p
    }
}
