//! Raw declarations of the libxml2, libxslt, libexslt, `csrc/shim.c` and
//! `csrc/dtd.c` symbols Axle uses. Every struct is opaque: field access
//! happens in the C files, so no C struct layout is mirrored here. Nothing
//! outside `ffi` sees this.

#![allow(non_camel_case_types, non_upper_case_globals, dead_code)]

use std::os::raw::{c_char, c_int, c_uchar, c_ulong, c_void};

macro_rules! opaque {
    ($($name:ident),*) => { $( #[repr(C)] pub struct $name { _private: [u8; 0] } )* };
}
opaque!(
    xmlDoc,
    xmlNode,
    xmlParserCtxt,
    xmlParserInput,
    xsltStylesheet,
    xsltTransformContext,
    xsltSecurityPrefs,
    axle_dtd
);

pub type xmlExternalEntityLoader = Option<
    unsafe extern "C" fn(
        url: *const c_char,
        id: *const c_char,
        ctxt: *mut xmlParserCtxt,
    ) -> *mut xmlParserInput,
>;
pub type xsltSecurityCheck = Option<
    unsafe extern "C" fn(
        sec: *mut xsltSecurityPrefs,
        ctxt: *mut xsltTransformContext,
        value: *const c_char,
    ) -> c_int,
>;

pub const XML_PARSE_NOENT: c_int = 1 << 1;
pub const XML_PARSE_DTDLOAD: c_int = 1 << 2;
pub const XML_PARSE_DTDATTR: c_int = 1 << 3;
pub const XML_PARSE_NOERROR: c_int = 1 << 5;
pub const XML_PARSE_NOWARNING: c_int = 1 << 6;
pub const XML_PARSE_NONET: c_int = 1 << 11;
pub const XML_PARSE_NOCDATA: c_int = 1 << 14;

pub const XSLT_SECPREF_WRITE_FILE: c_int = 2;
pub const XSLT_SECPREF_CREATE_DIRECTORY: c_int = 3;
pub const XSLT_SECPREF_READ_NETWORK: c_int = 4;
pub const XSLT_SECPREF_WRITE_NETWORK: c_int = 5;

pub const XML_ELEMENT_NODE: c_int = 1;
pub const XML_PI_NODE: c_int = 7;
pub const XML_HTML_DOCUMENT_NODE: c_int = 13;

#[link(name = "xml2")]
unsafe extern "C" {
    pub static xmlFree: unsafe extern "C" fn(*mut c_void);
    pub fn xmlInitParser();
    pub fn xmlMemSetup(
        free: unsafe extern "C" fn(*mut c_void),
        malloc: unsafe extern "C" fn(usize) -> *mut c_void,
        realloc: unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void,
        strdup: unsafe extern "C" fn(*const c_char) -> *mut c_char,
    ) -> c_int;
    pub fn xmlGcMemSetup(
        free: unsafe extern "C" fn(*mut c_void),
        malloc: unsafe extern "C" fn(usize) -> *mut c_void,
        malloc_atomic: unsafe extern "C" fn(usize) -> *mut c_void,
        realloc: unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void,
        strdup: unsafe extern "C" fn(*const c_char) -> *mut c_char,
    ) -> c_int;
    pub fn malloc(size: usize) -> *mut c_void;
    pub fn realloc(p: *mut c_void, size: usize) -> *mut c_void;
    pub fn free(p: *mut c_void);
    pub fn xmlReadMemory(
        buffer: *const c_char,
        size: c_int,
        url: *const c_char,
        encoding: *const c_char,
        options: c_int,
    ) -> *mut xmlDoc;
    pub fn xmlFreeDoc(doc: *mut xmlDoc);
    pub fn xmlResetLastError();
    pub fn xmlSetExternalEntityLoader(f: xmlExternalEntityLoader);
    pub fn xmlDocGetRootElement(doc: *mut xmlDoc) -> *mut xmlNode;
    pub fn xmlCleanupInputCallbacks();
    pub fn xmlCleanupOutputCallbacks();
    pub fn xmlRegisterInputCallbacks(
        match_fn: Option<unsafe extern "C" fn(filename: *const c_char) -> c_int>,
        open_fn: Option<unsafe extern "C" fn(filename: *const c_char) -> *mut c_void>,
        read_fn: Option<
            unsafe extern "C" fn(ctx: *mut c_void, buf: *mut c_char, len: c_int) -> c_int,
        >,
        close_fn: Option<unsafe extern "C" fn(ctx: *mut c_void) -> c_int>,
    ) -> c_int;
    pub fn xmlXIncludeProcessFlags(doc: *mut xmlDoc, flags: c_int) -> c_int;
    pub fn axle_xinclude_expansion(doc: *mut xmlDoc, options: c_int, limit: f64) -> f64;
    pub fn axle_tree_node_count(doc: *mut xmlDoc) -> f64;
}

#[link(name = "xslt")]
unsafe extern "C" {
    pub fn xsltInit();
    pub fn xsltRegisterTestModule();
    pub fn xsltParseStylesheetDoc(doc: *mut xmlDoc) -> *mut xsltStylesheet;
    pub fn xsltFreeStylesheet(style: *mut xsltStylesheet);
    pub fn xsltSetCtxtParseOptions(ctxt: *mut xsltTransformContext, options: c_int) -> c_int;
    pub fn xsltQuoteUserParams(
        ctxt: *mut xsltTransformContext,
        params: *const *const c_char,
    ) -> c_int;
    pub fn xsltApplyStylesheetUser(
        style: *mut xsltStylesheet,
        doc: *mut xmlDoc,
        params: *const *const c_char,
        output: *const c_char,
        profile: *mut c_void,
        ctxt: *mut xsltTransformContext,
    ) -> *mut xmlDoc;
    pub fn xsltSaveResultToString(
        out: *mut *mut c_uchar,
        len: *mut c_int,
        result: *mut xmlDoc,
        style: *mut xsltStylesheet,
    ) -> c_int;
    pub fn xsltNewSecurityPrefs() -> *mut xsltSecurityPrefs;
    pub fn xsltSetSecurityPrefs(
        sec: *mut xsltSecurityPrefs,
        option: c_int,
        func: xsltSecurityCheck,
    ) -> c_int;
    pub fn xsltSecurityForbid(
        sec: *mut xsltSecurityPrefs,
        ctxt: *mut xsltTransformContext,
        value: *const c_char,
    ) -> c_int;
    pub fn xsltSetDefaultSecurityPrefs(sec: *mut xsltSecurityPrefs);
    pub fn xsltSetCtxtSecurityPrefs(
        sec: *mut xsltSecurityPrefs,
        ctxt: *mut xsltTransformContext,
    ) -> c_int;
    pub static mut xsltMaxDepth: c_int;
    /// The running libxslt's version, as 10135 for 1.1.35.
    pub static xsltLibxsltVersion: c_int;
}

#[link(name = "exslt")]
unsafe extern "C" {
    pub fn exsltRegisterAll();
    /// The running libexslt's version, as 823 for 0.8.23.
    pub static exsltLibexsltVersion: c_int;
}

// csrc/shim.c
unsafe extern "C" {
    // csrc/dtd.c: shared parsed DTDs.
    pub fn axle_dtd_build(
        url: *const c_char,
        public_id: *const c_char,
        system_id: *const c_char,
        options: c_int,
    ) -> *mut axle_dtd;
    pub fn axle_dtd_ok(t: *const axle_dtd) -> c_int;
    pub fn axle_dtd_release(t: *mut axle_dtd);
    pub fn axle_dtd_read(
        buf: *const c_char,
        len: c_int,
        url: *const c_char,
        options: c_int,
        t: *mut axle_dtd,
        used: *mut c_int,
    ) -> *mut xmlDoc;
    pub fn axle_dtd_free_doc(doc: *mut xmlDoc);
    pub fn axle_tree_depth(doc: *mut xmlDoc) -> c_ulong;
    pub fn axle_parse_untrusted(
        buf: *const c_char,
        len: c_int,
        url: *const c_char,
        options: c_int,
        max_depth: c_ulong,
        max_attributes: c_ulong,
        max_amplification: f64,
        floor: f64,
        why: *mut c_int,
        reached: *mut c_ulong,
        line: *mut c_int,
    ) -> *mut xmlDoc;
    pub fn axle_dtd_materialize(doc: *mut xmlDoc);
    pub fn axle_dtd_resolve(system_id: *const c_char, base: *const c_char) -> *mut c_uchar;
    pub fn shim_install_xslt_error();
    pub fn shim_install_xml_error_for_thread();
    pub fn shim_set_transform_error(c: *mut xsltTransformContext);
    pub fn shim_ctxt_limits(
        c: *mut xsltTransformContext,
        max_depth: c_int,
        max_vars: c_int,
        op_limit: c_ulong,
        xpath_op_limit: c_ulong,
    );
    pub fn shim_ctxt_state(c: *mut xsltTransformContext) -> c_int;
    pub fn shim_ctxt_stop(c: *mut xsltTransformContext);
    pub fn shim_ctxt_xinclude(c: *mut xsltTransformContext, on: c_int);
    /// `csrc/sort.c`: this transform's `xsl:sort`s compare text with a
    /// Unicode collation (`collate.rs`).
    pub fn shim_ctxt_unicode_sort(c: *mut xsltTransformContext);
    pub fn shim_out_method(s: *mut xsltStylesheet) -> *const c_char;
    pub fn shim_out_media_type(s: *mut xsltStylesheet) -> *const c_char;
    pub fn shim_out_encoding(s: *mut xsltStylesheet) -> *const c_char;
    pub fn shim_doc_type(d: *mut xmlDoc) -> c_int;
    pub fn shim_set_doc_url(d: *mut xmlDoc, url: *const c_char);
    pub fn shim_dump_xml(d: *mut xmlDoc, out: *mut *mut c_uchar, len: *mut c_int) -> c_int;
    pub fn shim_save_html(
        result: *mut xmlDoc,
        style: *mut xsltStylesheet,
        out: *mut *mut c_uchar,
        len: *mut c_int,
    ) -> c_int;
    pub fn shim_doc_is_faithful(d: *mut xmlDoc) -> c_int;
    pub fn shim_tree_canon(d: *mut xmlDoc, out: *mut *mut c_uchar, len: *mut usize) -> c_int;
    pub fn shim_restore_doe(d: *mut xmlDoc);
    pub fn shim_style_errors(s: *mut xsltStylesheet) -> c_int;
    pub fn shim_embedded_stylesheet(doc: *mut xmlDoc, id: *const c_char) -> *mut xsltStylesheet;
    pub fn shim_input_from_io(
        ctxt: *mut xmlParserCtxt,
        read_fn: Option<
            unsafe extern "C" fn(ctx: *mut c_void, buf: *mut c_char, len: c_int) -> c_int,
        >,
        close_fn: Option<unsafe extern "C" fn(ctx: *mut c_void) -> c_int>,
        ioctx: *mut c_void,
        url: *const c_char,
    ) -> *mut xmlParserInput;
    pub fn shim_doc_children(d: *mut xmlDoc) -> *mut xmlNode;
    pub fn shim_node_next(n: *mut xmlNode) -> *mut xmlNode;
    pub fn shim_node_type(n: *mut xmlNode) -> c_int;
    pub fn shim_node_name(n: *mut xmlNode) -> *const c_char;
    pub fn shim_node_content(n: *mut xmlNode) -> *const c_char;
    pub fn shim_node_ns_href(n: *mut xmlNode) -> *const c_char;
    pub fn shim_node_ns_prefix(n: *mut xmlNode) -> *const c_char;
    pub fn shim_dtd_external_id(d: *mut xmlDoc) -> *const c_char;
    pub fn shim_dtd_system_id(d: *mut xmlDoc) -> *const c_char;
    pub fn shim_dtd_name(d: *mut xmlDoc) -> *const c_char;
    pub fn shim_str_equal_is_ours() -> c_int;
    pub fn shim_xpath_pool_init() -> c_int;
    pub fn shim_xpath_pool_is_ours() -> c_int;
    pub fn shim_xpath_pool_reused() -> u64;
    pub fn shim_new_transform_context(
        style: *mut xsltStylesheet,
        doc: *mut xmlDoc,
    ) -> *mut xsltTransformContext;
    pub fn shim_free_transform_context(ctxt: *mut xsltTransformContext);
    pub fn shim_share_xslt_elements();
    pub fn shim_xslt_elements_are_shared() -> c_int;
    pub fn shim_xml_parser_version() -> *const c_char;
}
