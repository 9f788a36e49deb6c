//! The prolog read by a full libxml2 parse: the fallback for documents the
//! fast scanner in `prolog` cannot read (a non-UTF-8 encoding, say).

use std::sync::Arc;

use super::{RefuseAll, XmlDoc, XmlError, opt_string, sys};

/// What a full libxml2 parse says about a document's prolog; used when the
/// fast scanner cannot read a document (e.g. a non-UTF-8 encoding).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawProlog {
    /// `(target, data)` of every PI before the root element, in order.
    pub pis: Vec<(String, String)>,
    /// DOCTYPE `(name, public id, system id)`.
    pub doctype: Option<(String, Option<String>, Option<String>)>,
    /// Root element `(prefix, local name, namespace)`.
    pub root: Option<(Option<String>, String, Option<String>)>,
}

/// Parses `bytes` fully (no external loads) and reads its prolog.
pub fn prolog_via_libxml(bytes: &[u8], url: &str) -> Result<RawProlog, XmlError> {
    let doc = XmlDoc::parse(bytes, url, Arc::new(RefuseAll))?;
    Ok(doc.raw_prolog())
}

impl XmlDoc {
    /// The prolog of this parsed tree: its DOCTYPE, the PIs before the
    /// root element, the root's name.
    pub fn raw_prolog(&self) -> RawProlog {
        raw_prolog_of(self)
    }
}

fn raw_prolog_of(doc: &XmlDoc) -> RawProlog {
    let mut out = RawProlog::default();
    let d = doc.ptr.as_ptr();
    // SAFETY: a read-only walk over the top-level nodes of a live document we
    // own; every string is copied before the document is dropped.
    unsafe {
        if let Some(name) = opt_string(sys::shim_dtd_name(d)) {
            out.doctype = Some((
                name,
                opt_string(sys::shim_dtd_external_id(d)),
                opt_string(sys::shim_dtd_system_id(d)),
            ));
        }
        let mut node = sys::shim_doc_children(d);
        while !node.is_null() {
            match sys::shim_node_type(node) {
                sys::XML_PI_NODE => out.pis.push((
                    opt_string(sys::shim_node_name(node)).unwrap_or_default(),
                    opt_string(sys::shim_node_content(node)).unwrap_or_default(),
                )),
                sys::XML_ELEMENT_NODE => {
                    out.root = Some((
                        opt_string(sys::shim_node_ns_prefix(node)),
                        opt_string(sys::shim_node_name(node)).unwrap_or_default(),
                        opt_string(sys::shim_node_ns_href(node)),
                    ));
                    break;
                }
                _ => {}
            }
            node = sys::shim_node_next(node);
        }
    }
    out
}
