//! Running a transform: [`Limits`] (the budgets each transform gets) and
//! [`Stylesheet::transform`], which leases a compiled instance, sets up a
//! libxslt transform context (parse options, security prefs, error
//! capture, limits) and hands back a [`ResultDoc`]; and passing string
//! parameters as literals.

use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::ptr::{self, NonNull};
use std::sync::Arc;

use super::budget;
use super::errors::{begin, take_messages};
use super::init::SEC_PREFS;
use super::resolve::ResolverGuard;
use super::{DOC_OPTIONS, Resolver, ResultDoc, Stylesheet, XmlDoc, XmlError, c_string, sys};

/// Budgets and settings for one transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Process XInclude in documents loaded by `document()` too.
    pub xinclude: bool,
    /// `xsl:sort` compares text with a Unicode collation honouring `lang`
    /// and `case-order`, as browsers sort (`csrc/sort.c`); off: libxslt's
    /// code point order, as xsltproc sorts.
    pub unicode_sort: bool,
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
            unicode_sort: false,
            max_depth: 3000,
            max_vars: 15_000,
            max_ops: 100_000_000,
            max_xpath_ops: 1_000_000_000,
        }
    }
}

impl Stylesheet {
    /// Transforms `doc` (consumed: libxslt mutates its input). `params` are
    /// `(name, string value)` pairs; values are passed as literal strings
    /// (`xsltQuoteUserParams`), never evaluated, so any text is safe. `document()` and other loads go to
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
            c_params.push(c_string(value, "parameter value")?);
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
            let ctxt = sys::shim_new_transform_context(style, doc_ptr);
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
            let registered = budget::register(ctxt);
            sys::shim_set_transform_error(ctxt);
            sys::shim_ctxt_xinclude(ctxt, c_int::from(limits.xinclude));
            if limits.unicode_sort {
                sys::shim_ctxt_unicode_sort(ctxt);
            }
            sys::shim_ctxt_limits(
                ctxt,
                c_int::try_from(limits.max_depth).unwrap_or(c_int::MAX),
                c_int::try_from(limits.max_vars).unwrap_or(c_int::MAX),
                std::os::raw::c_ulong::try_from(limits.max_ops).unwrap_or(0),
                std::os::raw::c_ulong::try_from(limits.max_xpath_ops).unwrap_or(0),
            );
            // Values are literal strings, never XPath text (xsltproc's
            // --stringparam), whatever quotes they hold.
            let quoted = sys::xsltQuoteUserParams(ctxt, param_ptrs.as_ptr());
            let result = if quoted != 0 {
                ptr::null_mut()
            } else {
                sys::xsltApplyStylesheetUser(
                    style,
                    doc_ptr,
                    ptr::null(),
                    ptr::null(),
                    ptr::null_mut(),
                    ctxt,
                )
            };
            let state = sys::shim_ctxt_state(ctxt);
            drop(registered); // before the context is freed
            sys::shim_free_transform_context(ctxt);
            (result, state)
        };
        drop(doc); // the source is freed after its context
        if let Some(why) = budget::exceeded_here() {
            lease.discard();
            let _ = take_messages();
            if let Some(ptr) = NonNull::new(result) {
                drop(XmlDoc {
                    ptr,
                    borrows_dtd: false,
                });
            }
            return Err(XmlError::Stopped(why));
        }
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
