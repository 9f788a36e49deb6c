//! The only place in Axle that knows libxml2 and libxslt exist, and the only
//! module with `unsafe` code: RAII types over the system libraries, following
//! the measured design in `research/xslt-binding.md` (shared folder).
//!
//! What it owns:
//! - process-wide set-up ([`init`]): EXSLT, security prefs that forbid writing
//!   files, creating directories and all network access, the template depth
//!   limit, and one external-entity loader through which *every* file libxml2
//!   or libxslt reads passes (imports, includes, `document()`, DTDs, entities);
//! - [`XmlDoc`] (an owned tree, `Send`), [`Stylesheet`] (compiled once, shared
//!   across threads, `Send + Sync`; each transform runs on a compiled
//!   instance of its own, as libxml2 writes into compiled XPath) and [`ResultDoc`]
//!   (a transform result that must be serialized by the stylesheet that made
//!   it);
//! - per-thread error capture: libxml2/libxslt messages go into a buffer of the
//!   calling thread and come back as [`XmlError`], never to stderr;
//! - shared parsed DTDs (`dtd`, with `csrc/dtd.c`): a document's external
//!   subset is parsed once and lent to later parses of documents that name
//!   it ([`XmlDoc::parse_document`]), giving the same tree.
//!
//! What it deliberately does not do: decide *which* files may be read. Each
//! operation takes a [`Resolver`] (installed for the current thread while the
//! operation runs); the loader asks it for bytes, so confinement to the
//! document root and dependency recording live in safe code above this module.
#![allow(unsafe_code)]

mod dtd;
mod sys;

pub use dtd::{DoctypeIds, set_shared_dtds};

use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Once};

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

/// Budgets and settings for one transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Process XInclude in documents loaded by `document()` too.
    pub xinclude: bool,
    /// Nested sequence constructors before libxslt stops (`maxTemplateDepth`).
    pub max_depth: u32,
    /// Live template variables before libxslt stops (`maxTemplateVars`).
    pub max_vars: u32,
    /// Executed XSLT instructions per transform (0 = unlimited).
    pub max_ops: u64,
    /// Evaluated XPath operations per transform (0 = unlimited).
    pub max_xpath_ops: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            xinclude: false,
            max_depth: 3000,
            max_vars: 15_000,
            max_ops: 100_000_000,
            max_xpath_ops: 1_000_000_000,
        }
    }
}

/// What went wrong inside libxml2 or libxslt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XmlError {
    /// A document or stylesheet is not well-formed XML (or could not be read).
    #[error("{}{message}", location(file.as_deref(), *line))]
    Parse {
        /// The file libxml2 was reading, when it said.
        file: Option<String>,
        /// The 1-based line, when known.
        line: Option<u32>,
        /// libxml2's message.
        message: String,
    },
    /// The stylesheet is well-formed but not a valid XSLT 1.0 stylesheet.
    #[error("not a valid XSLT stylesheet: {0}")]
    Compile(String),
    /// The transform failed (runtime error, `xsl:message terminate="yes"`,
    /// a security refusal or an exceeded limit).
    #[error("transform failed: {0}")]
    Transform(String),
    /// Serializing the result failed.
    #[error("serialization failed: {0}")]
    Serialize(String),
    /// The input cannot be handed to libxml2 at all (too large, or a
    /// parameter containing a NUL byte).
    #[error("{0}")]
    Input(String),
}

fn location(file: Option<&str>, line: Option<u32>) -> String {
    match (file, line) {
        (Some(f), Some(l)) => format!("{f}:{l}: "),
        (Some(f), None) => format!("{f}: "),
        (None, Some(l)) => format!("line {l}: "),
        (None, None) => String::new(),
    }
}

// ---------------------------------------------------------------------------
// Process and thread set-up

static INIT: Once = Once::new();

/// Sets libxml2/libxslt's process-wide hooks. Idempotent; called by every
/// entry point, and should be called once before worker threads start.
pub fn init() {
    INIT.call_once(|| {
        // SAFETY: called once (Once), before any other libxml2/libxslt call of
        // ours; these functions set process globals and take no pointers
        // except the function pointers, which are 'static.
        unsafe {
            sys::xmlInitParser();
            sys::xsltInit();
            sys::exsltRegisterAll();
            // libxslt's own test extension (namespace
            // http://xmlsoft.org/XSLT/), registered by xsltproc too.
            sys::xsltRegisterTestModule();
            // XSLT's own elements as module elements, once (see
            // csrc/shim.c: xsltRegisterAllElement).
            sys::shim_share_xslt_elements();
            sys::shim_install_xslt_error();
            sys::xmlSetExternalEntityLoader(Some(entity_loader));
            // Defence in depth: libxml2's own file and HTTP input handlers
            // are removed, so the only way libxml2 can read anything (even
            // through paths that bypass the entity loader, such as XInclude
            // parse="text") is the Resolver; and it can write no file at all.
            sys::xmlCleanupInputCallbacks();
            sys::xmlCleanupOutputCallbacks();
            sys::xmlRegisterInputCallbacks(
                Some(io_match),
                Some(io_open),
                Some(io_read),
                Some(io_close),
            );
            let sec = sys::xsltNewSecurityPrefs();
            if !sec.is_null() {
                for option in [
                    sys::XSLT_SECPREF_WRITE_FILE,
                    sys::XSLT_SECPREF_CREATE_DIRECTORY,
                    sys::XSLT_SECPREF_WRITE_NETWORK,
                ] {
                    sys::xsltSetSecurityPrefs(sec, option, Some(sys::xsltSecurityForbid));
                }
                // No network reads, but `axle:` URIs (documents rendered by
                // Axle itself) count as "network" to libxslt.
                sys::xsltSetSecurityPrefs(
                    sec,
                    sys::XSLT_SECPREF_READ_NETWORK,
                    Some(read_network_check),
                );
                // Kept for the life of the process: libxslt checks imports
                // against the default prefs and copies them into each context.
                sys::xsltSetDefaultSecurityPrefs(sec);
                SEC_PREFS.store(sec.cast(), std::sync::atomic::Ordering::Release);
            }
            sys::xsltMaxDepth = 3000;
        }
    });
}

/// Whether libxslt's calls to `xmlStrEqual` reach Axle's faster definition
/// (`csrc/shim.c`) rather than libxml2's: true in any executable that links
/// this crate, where the linker exports it because libxslt references it.
pub fn str_equal_is_ours() -> bool {
    // SAFETY: takes nothing and only asks the dynamic linker (dlsym) for a
    // symbol's address.
    unsafe { sys::shim_str_equal_is_ours() != 0 }
}

/// Whether libxslt's per-transform registration of the XSLT elements
/// reaches Axle's definition (`csrc/shim.c`), which registers them once for
/// the process, rather than libxslt's, which copies them into every
/// transform context.
pub fn xslt_elements_are_shared() -> bool {
    // SAFETY: takes nothing and only asks the dynamic linker (dlsym) for a
    // symbol's address.
    unsafe { sys::shim_xslt_elements_are_shared() != 0 }
}

static SEC_PREFS: std::sync::atomic::AtomicPtr<std::ffi::c_void> =
    std::sync::atomic::AtomicPtr::new(ptr::null_mut());

thread_local! {
    static THREAD_READY: Cell<bool> = const { Cell::new(false) };
    static ERRORS: RefCell<String> = const { RefCell::new(String::new()) };
    static FIRST_ERROR: RefCell<Option<(String, Option<String>, u32)>> = const { RefCell::new(None) };
    static RESOLVERS: RefCell<Vec<Arc<dyn Resolver>>> = const { RefCell::new(Vec::new()) };
}

/// Prepares the calling thread (libxml2's error handler is per thread) and
/// clears its error buffer.
fn begin() {
    init();
    THREAD_READY.with(|ready| {
        if !ready.get() {
            // SAFETY: sets this thread's libxml2 generic error handler to the
            // shim's function; no pointers of ours are retained.
            unsafe { sys::shim_install_xml_error_for_thread() };
            ready.set(true);
        }
    });
    ERRORS.with(|e| e.borrow_mut().clear());
    FIRST_ERROR.with(|e| e.borrow_mut().take());
    // SAFETY: resets this thread's libxml2 last-error record; no arguments.
    unsafe { sys::xmlResetLastError() };
}

fn take_messages() -> String {
    ERRORS.with(|e| {
        let mut text = std::mem::take(&mut *e.borrow_mut());
        while text.ends_with('\n') {
            text.pop();
        }
        text
    })
}

/// Called by the shim with each formatted libxml2/libxslt message.
///
/// # Safety
/// `msg` is NULL or a NUL-terminated string valid for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn axle_error_sink(msg: *const c_char) {
    if msg.is_null() {
        return;
    }
    // SAFETY: the shim passes a NUL-terminated buffer that lives for the call.
    let text = unsafe { CStr::from_ptr(msg) }.to_string_lossy();
    ERRORS.with(|e| {
        if let Ok(mut buf) = e.try_borrow_mut() {
            // Bound the buffer: a runaway xsl:message loop must not eat memory.
            if buf.len() < 64 * 1024 {
                buf.push_str(&text);
            }
        }
    });
}

/// Called by the shim with each structured libxml2 error (parser, XPath,
/// I/O): remembers the first error with its file and line, and appends a
/// readable line to the thread's message buffer.
///
/// # Safety
/// `msg` and `file` are NULL or NUL-terminated strings valid for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn axle_structured_sink(
    msg: *const c_char,
    file: *const c_char,
    line: c_int,
    level: c_int,
) {
    // Levels: 1 warning, 2 error, 3 fatal. Warnings (such as a refused
    // external load, which leaves an entity empty) do not fail anything.
    if level < 2 {
        return;
    }
    let message = opt_string(msg).unwrap_or_default().trim_end().to_string();
    let file = opt_string(file);
    let line = u32::try_from(line).unwrap_or(0);
    let text = match (&file, line) {
        (Some(f), l) if l > 0 => format!("{f}:{l}: {message}\n"),
        (Some(f), _) => format!("{f}: {message}\n"),
        (None, _) => format!("{message}\n"),
    };
    note(&text);
    FIRST_ERROR.with(|e| {
        if let Ok(mut first) = e.try_borrow_mut() {
            if first.is_none() {
                *first = Some((message, file, line));
            }
        }
    });
}

/// Installs `resolver` for the current thread until the guard drops.
struct ResolverGuard;

impl ResolverGuard {
    fn install(resolver: Arc<dyn Resolver>) -> ResolverGuard {
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
unsafe extern "C" fn entity_loader(
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

/// The scheme of URIs that name documents rendered by Axle itself.
pub const INTERNAL_SCHEME: &str = "axle:";

/// libxslt's READ_NETWORK check: refuse everything but `axle:` URIs.
unsafe extern "C" fn read_network_check(
    _sec: *mut sys::xsltSecurityPrefs,
    _ctxt: *mut sys::xsltTransformContext,
    value: *const c_char,
) -> c_int {
    let url = opt_string(value).unwrap_or_default();
    c_int::from(url.starts_with(INTERNAL_SCHEME))
}

/// An open input handed to libxml2 by [`io_open`].
struct IoCursor {
    bytes: Vec<u8>,
    pos: usize,
}

/// libxml2 input callback: claims every URI, so no built-in handler runs.
unsafe extern "C" fn io_match(_filename: *const c_char) -> c_int {
    1
}

/// libxml2 input callback: opens through the thread's Resolver.
unsafe extern "C" fn io_open(filename: *const c_char) -> *mut std::ffi::c_void {
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
unsafe extern "C" fn io_read(ctx: *mut std::ffi::c_void, buf: *mut c_char, len: c_int) -> c_int {
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
unsafe extern "C" fn io_close(ctx: *mut std::ffi::c_void) -> c_int {
    if !ctx.is_null() {
        // SAFETY: ctx came from Box::into_raw in io_open and is closed once.
        drop(unsafe { Box::from_raw(ctx.cast::<IoCursor>()) });
    }
    0
}

fn note(msg: &str) {
    ERRORS.with(|e| {
        if let Ok(mut buf) = e.try_borrow_mut() {
            buf.push_str(msg);
        }
    });
}

fn last_parse_error(fallback_file: &str) -> XmlError {
    let first = FIRST_ERROR.with(|e| e.borrow_mut().take());
    let extra = take_messages();
    match first {
        Some((message, file, line)) => XmlError::Parse {
            file: file.or_else(|| Some(fallback_file.to_string())),
            line: Some(line).filter(|l| *l > 0),
            message,
        },
        None => XmlError::Parse {
            file: Some(fallback_file.to_string()),
            line: None,
            message: if extra.is_empty() {
                "the document could not be parsed".to_string()
            } else {
                extra
            },
        },
    }
}

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

// ---------------------------------------------------------------------------
// Documents

/// An owned libxml2 document tree.
///
/// `Send` but not `Sync`: a tree is used by one thread at a time, and libxslt
/// mutates the trees it transforms, so a tree is consumed by a transform.
#[derive(Debug)]
pub struct XmlDoc {
    ptr: NonNull<sys::xmlDoc>,
    /// Parsed with a shared DTD ([`XmlDoc::parse_document`]): its external
    /// subset borrows the template's tables, which go back before it is
    /// freed. Such a tree is never given to libxslt to own.
    borrows_dtd: bool,
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

    fn set_url(&mut self, url: &str) {
        if let Ok(c) = CString::new(url) {
            // SAFETY: the document is ours; the shim copies the string.
            unsafe { sys::shim_set_doc_url(self.ptr.as_ptr(), c.as_ptr()) };
        }
    }

    fn into_raw(self) -> *mut sys::xmlDoc {
        // Only trees from `parse` are given away (to libxslt, which frees
        // them with xmlFreeDoc); a borrowing tree must not be.
        debug_assert!(!self.borrows_dtd);
        let p = self.ptr.as_ptr();
        std::mem::forget(self);
        p
    }
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

// ---------------------------------------------------------------------------
// Stylesheets

/// A stylesheet's `xsl:output` settings, resolved across imports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputSettings {
    /// `method` (`xml`, `html`, `text`, or a QName), if set.
    pub method: Option<String>,
    /// `media-type`, if set.
    pub media_type: Option<String>,
    /// `encoding`, if set.
    pub encoding: Option<String>,
}

/// A compiled XSLT stylesheet, compiled once from one set of bytes and
/// shared by every transform.
///
/// libxslt documents a compiled stylesheet as shareable between concurrent
/// transforms, but with the system libraries (libxml2 2.9.14, libxslt
/// 1.1.35) a transform writes into it:
/// - libxml2's XPath evaluator reorders the two branches of a union
///   (`xmlXPathCompSwap`, after `if (total > cur)` in `xmlXPathCompOpEval`
///   and the first/last variants) in the shared compiled expression. Its
///   guard is compiled out in thread-enabled builds. A concurrent
///   evaluation that reads the branches between two swaps evaluates one
///   branch twice and the other not at all: DocBook's
///   `(ancestor::section|…|ancestor::sect5)[last()]` then picks a
///   section's parent, and the page shows the parent's title.
/// - `xsl:sort` whose `data-type`, `order` or `lang` is an attribute value
///   template stores the evaluated value in the shared instruction and
///   frees it after sorting (`xsltDefaultSortFunction`).
///
/// So each transform uses one compiled *instance* by itself: an idle one
/// when there is one, otherwise a new one compiled from exactly the bytes
/// the first compile read (kept in a [`Recipe`]). Instances grow to the
/// largest number of transforms of this stylesheet that ran at once, which
/// the transform pool's size bounds, and are reused from then on.
#[derive(Debug)]
pub struct Stylesheet {
    /// Instances no transform is using.
    idle: Mutex<Vec<Arc<Compiled>>>,
    /// Signalled when an instance goes back to `idle`.
    returned: Condvar,
    /// How the first instance was compiled, to compile more.
    recipe: Recipe,
    /// Set when compiling another instance failed; from then on a transform
    /// waits for an idle instance instead.
    no_more: AtomicBool,
    /// Instances compiled, idle or in use.
    instances: AtomicUsize,
    output: OutputSettings,
}

/// One compiled instance: libxslt's `xsltStylesheet`, with its document.
#[derive(Debug)]
struct Compiled(NonNull<sys::xsltStylesheet>);

// SAFETY: a compiled stylesheet is a self-contained heap structure owned by
// this value. A transform writes into it (see `Stylesheet`), so a transform
// uses an instance only while it holds the instance's `Lease`, which no
// other transform can hold at the same time. Every other use (reading the
// `xsl:output` settings, serializing a result) reads fields that no
// transform writes.
unsafe impl Send for Compiled {}
// SAFETY: see Send.
unsafe impl Sync for Compiled {}

impl Drop for Compiled {
    fn drop(&mut self) {
        // SAFETY: we own the stylesheet (and, through it, its document); no
        // lease or result refers to it any more (they hold an Arc).
        unsafe { sys::xsltFreeStylesheet(self.0.as_ptr()) };
    }
}

/// What the first compile of a stylesheet read: its bytes and every file
/// loaded while compiling it (imports, includes, DTDs, entities), so a
/// further instance is compiled from exactly the same bytes even if the
/// files have changed since. (A changed file is a new stylesheet for the
/// caches above, compiled afresh.)
#[derive(Debug)]
struct Recipe {
    bytes: Vec<u8>,
    url: String,
    /// The ID of an embedded stylesheet (`href="#id"`).
    id: Option<String>,
    /// `(requested URL, what the resolver gave)`, in the order read.
    loads: Arc<Vec<(String, Loaded)>>,
}

/// Passes loads on to the caller's resolver, and keeps a copy of each for
/// the [`Recipe`].
struct Recorder {
    inner: Arc<dyn Resolver>,
    loads: Mutex<Vec<(String, Loaded)>>,
}

impl Resolver for Recorder {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        let loaded = self.inner.load(url)?;
        self.loads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((url.to_string(), loaded.clone()));
        Ok(loaded)
    }
}

/// Answers loads from a [`Recipe`]: what the first compile was given.
struct Replay(Arc<Vec<(String, Loaded)>>);

impl Resolver for Replay {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        self.0
            .iter()
            .find(|(asked, _)| asked == url)
            .map(|(_, loaded)| loaded.clone())
            .ok_or_else(|| format!("{url} was not read when the stylesheet was first compiled"))
    }
}

impl Recipe {
    /// Compiles one instance; every load goes to `resolver`.
    fn compile(&self, resolver: Arc<dyn Resolver>) -> Result<Compiled, XmlError> {
        match &self.id {
            None => compile_document(&self.bytes, &self.url, resolver),
            Some(id) => compile_embedded(&self.bytes, &self.url, id, resolver),
        }
    }
}

fn compile_document(
    bytes: &[u8],
    url: &str,
    resolver: Arc<dyn Resolver>,
) -> Result<Compiled, XmlError> {
    let doc = XmlDoc::parse(bytes, url, resolver.clone())?;
    begin();
    let _guard = ResolverGuard::install(resolver);
    let raw = doc.into_raw();
    // SAFETY: `raw` is a live document we own. On success the stylesheet
    // owns it; on NULL it stays ours and is freed below.
    let style = unsafe { sys::xsltParseStylesheetDoc(raw) };
    // SAFETY: a non-NULL stylesheet is live; reading its error count.
    if !style.is_null() && unsafe { sys::shim_style_errors(style) } != 0 {
        // SAFETY: libxslt returned a stylesheet that counted errors (as
        // xsltproc, we refuse it); freeing it frees its document too.
        unsafe { sys::xsltFreeStylesheet(style) };
        return Err(XmlError::Compile(take_messages()));
    }
    let Some(ptr) = NonNull::new(style) else {
        // SAFETY: compilation failed, so the document is still ours.
        unsafe { sys::xmlFreeDoc(raw) };
        let msg = take_messages();
        return Err(XmlError::Compile(if msg.is_empty() {
            format!("{url} is not an XSLT stylesheet")
        } else {
            msg
        }));
    };
    let warnings = take_messages();
    if !warnings.is_empty() {
        tracing::debug!(stylesheet = url, %warnings, "stylesheet compiled with messages");
    }
    Ok(Compiled(ptr))
}

fn compile_embedded(
    bytes: &[u8],
    url: &str,
    id: &str,
    resolver: Arc<dyn Resolver>,
) -> Result<Compiled, XmlError> {
    let doc = XmlDoc::parse(bytes, url, resolver.clone())?;
    let c_id = c_string(id, "stylesheet id")?;
    begin();
    let _guard = ResolverGuard::install(resolver);
    // SAFETY: `doc` is a live document we own and keep until after the
    // call; the shim copies the subtree into a new document that the
    // returned stylesheet owns (or frees it on failure).
    let style = unsafe { sys::shim_embedded_stylesheet(doc.ptr.as_ptr(), c_id.as_ptr()) };
    drop(doc);
    let Some(ptr) = NonNull::new(style) else {
        let msg = take_messages();
        return Err(XmlError::Compile(if msg.is_empty() {
            format!("no stylesheet with ID '{id}' in {url}")
        } else {
            msg
        }));
    };
    Ok(Compiled(ptr))
}

impl Stylesheet {
    /// Compiles the stylesheet in `bytes` whose URL (absolute path) is `url`.
    /// Imports, includes, DTDs and entities are read through `resolver`.
    pub fn compile(
        bytes: &[u8],
        url: &str,
        resolver: Arc<dyn Resolver>,
    ) -> Result<Stylesheet, XmlError> {
        Stylesheet::first(bytes, url, None, resolver)
    }

    /// Compiles the stylesheet embedded in the document `bytes` (at `url`)
    /// as the element whose ID is `id` (XSLT 1.0 section 2.7,
    /// `<?xml-stylesheet href="#id"?>`), as libxslt's `xsltLoadStylesheetPI`
    /// does: the element must be declared an ID (DTD or `xml:id`).
    pub fn compile_embedded(
        bytes: &[u8],
        url: &str,
        id: &str,
        resolver: Arc<dyn Resolver>,
    ) -> Result<Stylesheet, XmlError> {
        Stylesheet::first(bytes, url, Some(id), resolver)
    }

    /// Compiles the first instance, recording what it read.
    fn first(
        bytes: &[u8],
        url: &str,
        id: Option<&str>,
        resolver: Arc<dyn Resolver>,
    ) -> Result<Stylesheet, XmlError> {
        let recorder = Arc::new(Recorder {
            inner: resolver,
            loads: Mutex::new(Vec::new()),
        });
        let mut recipe = Recipe {
            bytes: bytes.to_vec(),
            url: url.to_string(),
            id: id.map(str::to_string),
            loads: Arc::new(Vec::new()),
        };
        let compiled = recipe.compile(recorder.clone())?;
        recipe.loads = Arc::new(std::mem::take(
            &mut *recorder
                .loads
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        ));
        let ptr = compiled.0.as_ptr();
        // SAFETY: the stylesheet is live; the returned strings belong to it
        // (or its imports) and are copied immediately.
        let output = unsafe {
            OutputSettings {
                method: opt_string(sys::shim_out_method(ptr)),
                media_type: opt_string(sys::shim_out_media_type(ptr)),
                encoding: opt_string(sys::shim_out_encoding(ptr)),
            }
        };
        Ok(Stylesheet {
            idle: Mutex::new(vec![Arc::new(compiled)]),
            returned: Condvar::new(),
            recipe,
            no_more: AtomicBool::new(false),
            instances: AtomicUsize::new(1),
            output,
        })
    }

    /// The stylesheet's `xsl:output` settings.
    pub fn output(&self) -> &OutputSettings {
        &self.output
    }

    /// How many compiled instances exist (see [`Stylesheet`]).
    pub fn instances(&self) -> usize {
        self.instances.load(Ordering::Relaxed)
    }

    /// An instance for one transform, used by nothing else until the lease
    /// drops: an idle one, else a newly compiled one. A transform nested in
    /// another on this thread (an `axle:` document rendered through this
    /// stylesheet) never waits, as the instance it would wait for is its
    /// caller's.
    fn lease(&self) -> Result<Lease<'_>, XmlError> {
        let nested = RUNNING_HERE.with(|held| held.borrow().contains(&self.key()));
        let mut idle = self.idle();
        loop {
            if let Some(compiled) = idle.pop() {
                return Ok(Lease::new(self, compiled));
            }
            if nested || !self.no_more.load(Ordering::Acquire) {
                drop(idle);
                match self.compile_another() {
                    Ok(compiled) => return Ok(Lease::new(self, Arc::new(compiled))),
                    Err(e) if nested => {
                        return Err(XmlError::Transform(format!(
                            "a nested render through {} needs a second compiled instance, and compiling it failed: {e}",
                            self.recipe.url
                        )));
                    }
                    Err(_) => idle = self.idle(),
                }
                continue;
            }
            idle = self
                .returned
                .wait(idle)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Compiles one more instance from the recipe; on failure, marks that
    /// no more will be tried (transforms then wait for an idle one).
    fn compile_another(&self) -> Result<Compiled, XmlError> {
        let replay: Arc<dyn Resolver> = Arc::new(Replay(Arc::clone(&self.recipe.loads)));
        match self.recipe.compile(replay) {
            Ok(compiled) => {
                let n = self.instances.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::debug!(stylesheet = %self.recipe.url, instances = n, "compiled another instance");
                Ok(compiled)
            }
            Err(e) => {
                self.no_more.store(true, Ordering::Release);
                tracing::warn!(stylesheet = %self.recipe.url, error = %e,
                    "could not compile another instance: its transforms now take turns");
                Err(e)
            }
        }
    }

    /// The idle instances. A poisoned lock only means a thread panicked
    /// while pushing or popping; the list itself is whole.
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Compiled>>> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// This stylesheet's mark in `RUNNING_HERE`.
    fn key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Transforms `doc` (consumed: libxslt mutates its input). `params` are
    /// `(name, string value)` pairs; values are passed as XPath string
    /// literals, so any text is safe. `document()` and other loads go to
    /// `resolver`.
    pub fn transform(
        self: &Arc<Self>,
        doc: XmlDoc,
        base_url: &str,
        params: &[(String, String)],
        limits: &Limits,
        resolver: Arc<dyn Resolver>,
    ) -> Result<ResultDoc, XmlError> {
        let mut c_params: Vec<CString> = Vec::with_capacity(params.len() * 2);
        for (name, value) in params {
            c_params.push(c_string(name, "parameter name")?);
            c_params.push(c_string(&xpath_string_literal(value), "parameter value")?);
        }
        let mut param_ptrs: Vec<*const c_char> = c_params.iter().map(|c| c.as_ptr()).collect();
        param_ptrs.push(ptr::null());
        // Before `begin`: compiling an instance uses the error buffer too.
        let lease = self.lease()?;
        begin();
        let _guard = ResolverGuard::install(resolver);
        let style = lease.compiled.0.as_ptr();
        let doc_ptr = doc.ptr.as_ptr();
        // SAFETY: `style` is a live compiled instance that this transform
        // alone uses (the lease); `doc_ptr` is a live document we own, kept
        // alive (by `doc`) until after the context is freed; the params
        // array is NULL-terminated and its strings outlive the call. The
        // context is created and freed here.
        let (result, state) = unsafe {
            let ctxt = sys::xsltNewTransformContext(style, doc_ptr);
            if ctxt.is_null() {
                return Err(XmlError::Transform(
                    "could not create a transform context".to_string(),
                ));
            }
            sys::xsltSetCtxtParseOptions(ctxt, DOC_OPTIONS);
            let sec = SEC_PREFS.load(std::sync::atomic::Ordering::Acquire);
            if !sec.is_null() {
                sys::xsltSetCtxtSecurityPrefs(sec.cast(), ctxt);
            }
            sys::shim_set_transform_error(ctxt);
            sys::shim_ctxt_xinclude(ctxt, c_int::from(limits.xinclude));
            sys::shim_ctxt_limits(
                ctxt,
                c_int::try_from(limits.max_depth).unwrap_or(c_int::MAX),
                c_int::try_from(limits.max_vars).unwrap_or(c_int::MAX),
                std::os::raw::c_ulong::try_from(limits.max_ops).unwrap_or(0),
                std::os::raw::c_ulong::try_from(limits.max_xpath_ops).unwrap_or(0),
            );
            let result = sys::xsltApplyStylesheetUser(
                style,
                doc_ptr,
                param_ptrs.as_ptr(),
                ptr::null(),
                ptr::null_mut(),
                ctxt,
            );
            let state = sys::shim_ctxt_state(ctxt);
            sys::xsltFreeTransformContext(ctxt);
            (result, state)
        };
        drop(doc); // the source is freed after its context
        let compiled = Arc::clone(&lease.compiled);
        drop(lease);
        let messages = take_messages();
        match NonNull::new(result) {
            Some(ptr) if state == 0 => {
                if !messages.is_empty() {
                    tracing::debug!(%messages, "transform messages");
                }
                let mut out = XmlDoc {
                    ptr,
                    borrows_dtd: false,
                };
                out.set_url(base_url);
                Ok(ResultDoc {
                    doc: out,
                    style: Arc::clone(self),
                    compiled,
                })
            }
            other => {
                if let Some(ptr) = other {
                    drop(XmlDoc {
                        ptr,
                        borrows_dtd: false,
                    });
                }
                Err(XmlError::Transform(if messages.is_empty() {
                    "the transform stopped with an error".to_string()
                } else {
                    messages
                }))
            }
        }
    }
}

/// One transform's exclusive use of a compiled instance; gives it back
/// (and wakes a waiting transform) when dropped.
struct Lease<'a> {
    style: &'a Stylesheet,
    compiled: Arc<Compiled>,
    _here: RunningHere,
}

impl<'a> Lease<'a> {
    fn new(style: &'a Stylesheet, compiled: Arc<Compiled>) -> Lease<'a> {
        Lease {
            style,
            compiled,
            _here: RunningHere::enter(style.key()),
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.style.idle().push(Arc::clone(&self.compiled));
        self.style.returned.notify_one();
    }
}

thread_local! {
    /// Stylesheets (by address) of which this thread holds an instance.
    static RUNNING_HERE: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// This thread's mark that it holds an instance of a stylesheet, removed
/// when dropped.
struct RunningHere(usize);

impl RunningHere {
    fn enter(key: usize) -> RunningHere {
        RUNNING_HERE.with(|held| held.borrow_mut().push(key));
        RunningHere(key)
    }
}

impl Drop for RunningHere {
    fn drop(&mut self) {
        RUNNING_HERE.with(|held| {
            let mut held = held.borrow_mut();
            if let Some(i) = held.iter().rposition(|k| *k == self.0) {
                held.remove(i);
            }
        });
    }
}

/// Quotes `value` as an XPath 1.0 string literal. XPath has no escapes, so a
/// value holding both quote kinds becomes a `concat()` of pieces.
pub fn xpath_string_literal(value: &str) -> String {
    if !value.contains('\'') {
        format!("'{value}'")
    } else if !value.contains('"') {
        format!("\"{value}\"")
    } else {
        let pieces: Vec<String> = value
            .split('\'')
            .map(|piece| format!("'{piece}'"))
            .collect();
        format!("concat({})", pieces.join(", \"'\", "))
    }
}

/// The result of a transform, tied to the stylesheet whose `xsl:output`
/// governs its serialization.
#[derive(Debug)]
pub struct ResultDoc {
    doc: XmlDoc,
    style: Arc<Stylesheet>,
    /// The instance that made it: serialization reads its `xsl:output`
    /// (and the result tree's names may live in its dictionary).
    compiled: Arc<Compiled>,
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
    /// HTML in UTF-8 is written by `csrc/html.c` ([`ResultDoc::save_html`]:
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
    fn save_html(&mut self) -> Result<Option<Vec<u8>>, XmlError> {
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

// ---------------------------------------------------------------------------
// Prolog fallback

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
    Ok(out)
}

#[cfg(test)]
mod html_tests;
#[cfg(test)]
mod tests;
