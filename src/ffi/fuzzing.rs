//! Entry points for the fuzz targets in `fuzz/` (and tests): not an API.
//! Why it exists: a target that checks a promise of this module must read
//! something the public types do not show; each function here is the
//! smallest reading that promise needs, `#[doc(hidden)]`.

use super::{XmlDoc, sys};

/// For fuzz targets; not an API. The nodes of `doc`'s tree as
/// [`XmlDoc::xinclude_expansion`] counts them (the document node and every
/// node of every children list, XInclude start and end markers included;
/// not a DTD's declarations), read from the tree as it is now: after
/// [`XmlDoc::process_xinclude`], what the expansion count must bound.
#[doc(hidden)]
pub fn tree_node_count(doc: &XmlDoc) -> u64 {
    // SAFETY: read-only walk over a live document the caller holds.
    let n = unsafe { sys::axle_tree_node_count(doc.ptr.as_ptr()) };
    n as u64
}

/// For fuzz targets; not an API. The deepest element of `doc`'s tree (1
/// for a root alone), as [`XmlDoc::parse_untrusted`] measures it.
#[doc(hidden)]
pub fn tree_depth(doc: &XmlDoc) -> u64 {
    // SAFETY: read-only, iterative walk over a live document the caller
    // holds.
    let n = unsafe { sys::axle_tree_depth(doc.ptr.as_ptr()) };
    n as u64
}

/// For fuzz targets; not an API. `a` against `b` as `xsl-sort =
/// "unicode"` compares text keys for the first key's `lang` (`None`:
/// English) and case order (`csrc/sort.c` through `collate.rs`).
#[doc(hidden)]
pub fn unicode_collate(
    lang: Option<&str>,
    lower_first: bool,
    a: &str,
    b: &str,
) -> std::cmp::Ordering {
    super::collate::compare_text(lang, lower_first, a, b)
}
