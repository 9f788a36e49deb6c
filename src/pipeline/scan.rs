//! Reading a source's prolog (its `<?xml-stylesheet?>` PIs, DOCTYPE and
//! root element) for chain selection: the fast scanner, and libxml2 when the
//! scanner gives up.

use crate::ffi;
use crate::prolog::{self, Doctype, Prolog, RootName};
use crate::provider::Source;

use super::PipelineError;

/// Reads a source's prolog: the fast scanner, else a full libxml2 parse.
pub(super) fn scan_prolog(source: &Source) -> Result<Prolog, PipelineError> {
    match prolog::scan(&source.bytes) {
        Ok(p) => Ok(p),
        Err(why) => {
            tracing::debug!(document = source.path.rel(), %why, "prolog scanner fell back to libxml2");
            let url = source.path.url().to_string();
            let raw = ffi::prolog_via_libxml(&source.bytes, &url).map_err(|error| {
                PipelineError::Source {
                    document: source.path.rel().to_string(),
                    error,
                }
            })?;
            Ok(prolog_from_raw(raw))
        }
    }
}

/// The prolog of a parsed tree (a client's document's one parse).
pub(super) fn prolog_of_tree(tree: &ffi::XmlDoc) -> Prolog {
    prolog_from_raw(tree.raw_prolog())
}

fn prolog_from_raw(raw: ffi::RawProlog) -> Prolog {
    let stylesheets = raw
        .pis
        .iter()
        .filter(|(target, _)| target == "xml-stylesheet")
        .filter_map(|(_, data)| prolog::parse_stylesheet_pi(data))
        .collect();
    let doctype = raw.doctype.map(|(name, public_id, system_id)| Doctype {
        name,
        public_id,
        system_id,
        // Not known from this path; nothing here shares DTDs.
        internal_subset: true,
    });
    let root = raw
        .root
        .map(|(prefix, local, namespace)| RootName {
            prefix,
            local,
            namespace,
        })
        .unwrap_or_default();
    Prolog {
        xml_encoding: None,
        stylesheets,
        doctype,
        root,
    }
}
