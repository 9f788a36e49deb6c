//! [`ResultDoc`]: a transform's result, serialized by the compiled
//! stylesheet instance that made it (its `xsl:output` governs the bytes):
//! HTML in UTF-8 through `csrc/html.c`, everything else through libxslt.

use std::os::raw::c_int;
use std::ptr;
use std::sync::Arc;

use super::errors::{begin, take_messages};
use super::stylesheet::Compiled;
use super::{OutputSettings, Stylesheet, XmlDoc, XmlError, sys, take_buffer};

/// The result of a transform, tied to the stylesheet whose `xsl:output`
/// governs its serialization.
#[derive(Debug)]
pub struct ResultDoc {
    pub(super) doc: XmlDoc,
    pub(super) style: Arc<Stylesheet>,
    /// The instance that made it: serialization reads its `xsl:output`
    /// (and the result tree's names may live in its dictionary).
    pub(super) compiled: Arc<Compiled>,
}

impl ResultDoc {
    /// Did libxslt choose HTML output (explicitly or by the implicit
    /// `<html>` rule)?
    pub fn is_html(&self) -> bool {
        // SAFETY: reads the type field of a live document we own.
        unsafe { sys::shim_doc_type(self.doc.ptr.as_ptr()) == sys::XML_HTML_DOCUMENT_NODE }
    }

    /// The `xsl:output` settings of the stylesheet that made this result.
    pub fn output(&self) -> &OutputSettings {
        self.style.output()
    }

    /// Serializes exactly as `xsl:output` says (method, encoding, doctype,
    /// indent, ...). The bytes are in the output encoding. Consumes the
    /// result: libxslt edits the tree while serializing HTML.
    ///
    /// HTML in UTF-8 is written by `csrc/html.c` (`ResultDoc::save_html`:
    /// the same bytes, about a quarter of the instructions); everything
    /// else by libxslt ([`ResultDoc::serialize_with_libxslt`]).
    pub fn serialize(mut self) -> Result<Vec<u8>, XmlError> {
        match self.save_html()? {
            Some(bytes) => Ok(bytes),
            None => self.serialize_with_libxslt(),
        }
    }

    /// The bytes `csrc/html.c` writes for an HTML result in UTF-8 (the
    /// tree gains its meta element, as libxslt would add it); `None` for
    /// any other result, left to libxslt.
    pub(super) fn save_html(&mut self) -> Result<Option<Vec<u8>>, XmlError> {
        begin();
        let mut out: *mut u8 = ptr::null_mut();
        let mut len: c_int = 0;
        // SAFETY: result tree and stylesheet instance are live and ours
        // (the tree exclusively, through `&mut self`); out/len are locals.
        let rc = unsafe {
            sys::shim_save_html(
                self.doc.ptr.as_ptr(),
                self.compiled.0.as_ptr(),
                &mut out,
                &mut len,
            )
        };
        match rc {
            // SAFETY: on success `out` holds `len` bytes from libxml2's allocator.
            0 => Ok(Some(unsafe { take_buffer(out, len) })),
            1 => Ok(None),
            _ => Err(XmlError::Serialize(
                "out of memory serializing HTML".to_string(),
            )),
        }
    }

    /// Serializes through libxslt's `xsltSaveResultToString`: the reference
    /// that [`ResultDoc::serialize`] matches byte for byte (tests compare
    /// the two), and its path for everything but HTML in UTF-8.
    pub fn serialize_with_libxslt(self) -> Result<Vec<u8>, XmlError> {
        begin();
        let mut out: *mut u8 = ptr::null_mut();
        let mut len: c_int = 0;
        // SAFETY: result tree and stylesheet are live; out/len are locals.
        let rc = unsafe {
            sys::xsltSaveResultToString(
                &mut out,
                &mut len,
                self.doc.ptr.as_ptr(),
                self.compiled.0.as_ptr(),
            )
        };
        // SAFETY: on success `out` is NULL (empty result) or `len` bytes from libxml2.
        let bytes = unsafe { take_buffer(out, len) };
        if rc != 0 {
            let msg = take_messages();
            return Err(XmlError::Serialize(if msg.is_empty() {
                "xsltSaveResultToString failed".to_string()
            } else {
                msg
            }));
        }
        Ok(bytes)
    }

    /// The result tree, to hand to the next stage.
    pub fn into_doc(self) -> XmlDoc {
        self.doc
    }
}
