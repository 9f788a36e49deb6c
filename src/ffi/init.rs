//! Process-wide set-up of libxml2 and libxslt, done once before worker
//! threads start: EXSLT and the test module, the hooks that route every
//! read through the [`super::Resolver`] and every message into the error
//! buffer, security prefs (no writing files, no creating directories, no
//! network but `axle:` URIs), the template depth limit; and what the
//! process links: the runtime library versions and whether the shim's
//! faster definitions are the ones libxslt calls.

use std::ffi::c_void;
use std::fmt;
use std::os::raw::{c_char, c_int};
use std::ptr;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use super::budget;
use super::resolve::{entity_loader, io_close, io_match, io_open, io_read};
use super::{opt_string, sys};

static INIT: Once = Once::new();

/// Whether [`init`] found libxml2's `xmlXPathNewContext` behind the
/// executable's (`csrc/xpath_pool.c`); without it no transform can start.
static XPATH_POOL: AtomicBool = AtomicBool::new(false);

/// The security prefs [`init`] made: libxslt's defaults, also attached to
/// each transform context.
pub(super) static SEC_PREFS: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());

/// Sets libxml2/libxslt's process-wide hooks. Idempotent; called by every
/// entry point, and should be called once before worker threads start.
pub fn init() {
    INIT.call_once(|| {
        // SAFETY: called once (Once), before any other libxml2/libxslt call of
        // ours; these functions set process globals and take no pointers
        // except the function pointers, which are 'static.
        unsafe {
            // Every libxml2/libxslt allocation through the budget's hooks
            // (src/ffi/budget.rs), set before the libraries allocate.
            sys::xmlGcMemSetup(
                budget::counted_free,
                budget::counted_malloc,
                budget::counted_malloc,
                budget::counted_realloc,
                budget::counted_strdup,
            );
            sys::xmlInitParser();
            sys::xsltInit();
            sys::exsltRegisterAll();
            // libxslt's own test extension (namespace
            // http://xmlsoft.org/XSLT/), registered by xsltproc too.
            sys::xsltRegisterTestModule();
            // XSLT's own elements as module elements, once (see
            // csrc/shim.c: xsltRegisterAllElement).
            sys::shim_share_xslt_elements();
            // The XPath contexts transforms reuse (csrc/xpath_pool.c): finds
            // libxml2's xmlXPathNewContext behind the executable's.
            let pooled = sys::shim_xpath_pool_init() != 0;
            XPATH_POOL.store(pooled, Ordering::Release);
            if !pooled {
                tracing::error!(
                    "libxml2's xmlXPathNewContext was not found behind Axle's (csrc/xpath_pool.c): no XSLT transform can start"
                );
            }
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
                SEC_PREFS.store(sec.cast(), Ordering::Release);
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

/// Whether transforms reuse their thread's XPath contexts
/// (`csrc/xpath_pool.c`): the executable's `xmlXPathNewContext` is the one
/// libxslt calls, and it found libxml2's to make new ones with.
pub fn xpath_contexts_are_pooled() -> bool {
    init();
    // SAFETY: takes nothing and only asks the dynamic linker (dlsym) for a
    // symbol's address.
    XPATH_POOL.load(Ordering::Acquire) && unsafe { sys::shim_xpath_pool_is_ours() != 0 }
}

/// How many transforms on this thread started with a kept XPath context.
pub fn xpath_contexts_reused_here() -> u64 {
    // SAFETY: reads a thread-local counter.
    unsafe { sys::shim_xpath_pool_reused() }
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

/// The versions of the XML libraries the process runs with: those of the
/// shared libraries loaded, which may be newer than the headers Axle was
/// built against. Each is `major.minor.patch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryVersions {
    /// libxml2's, from its `xmlParserVersion` ("20914" is 2.9.14).
    pub libxml2: String,
    /// libxslt's, from its `xsltLibxsltVersion` (10135 is 1.1.35).
    pub libxslt: String,
    /// libexslt's, from its `exsltLibexsltVersion` (820 is 0.8.20).
    pub libexslt: String,
}

impl fmt::Display for LibraryVersions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "libxml2 {}, libxslt {}, libexslt {}",
            self.libxml2, self.libxslt, self.libexslt
        )
    }
}

/// The runtime versions of libxml2, libxslt and libexslt.
pub fn library_versions() -> LibraryVersions {
    init();
    // SAFETY: after init; the shim returns libxml2's static version string
    // (or NULL), which opt_string copies; the two ints are constants the
    // libraries export.
    let (xml, xslt, exslt) = unsafe {
        (
            opt_string(sys::shim_xml_parser_version()),
            sys::xsltLibxsltVersion,
            sys::exsltLibexsltVersion,
        )
    };
    let libxml2 = match xml {
        Some(text) => match text.trim().parse::<i64>() {
            Ok(n) => dotted(n),
            Err(_) => text,
        },
        None => "unknown".to_string(),
    };
    LibraryVersions {
        libxml2,
        libxslt: dotted(i64::from(xslt)),
        libexslt: dotted(i64::from(exslt)),
    }
}

/// libxml2's encoding of a version as a number, `major * 10000 + minor *
/// 100 + patch`, as `major.minor.patch`.
pub(super) fn dotted(n: i64) -> String {
    format!("{}.{}.{}", n / 10_000, n / 100 % 100, n % 100)
}
