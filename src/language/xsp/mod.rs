//! XSP without Perl: AxKit's eXtensible Server Pages as a Language that
//! embeds no code. A page (`<?xml-stylesheet href="." type="application/x-xsp"?>`,
//! root `xsp:page`) is compiled once, when first asked for and again when
//! its file changes, into XSLT (`compile.rs`): `xsp:expr` holds XPath 1.0
//! over the request's context (`context.rs`), taglibs (`taglib.rs`, the
//! built-in ones in `taglibs.rs` and `webutils.rs`) turn their elements
//! into XSLT and tasks.
//! At request time the page's tasks run with their arguments as data, then
//! the page is rendered; what it outputs is the document the next stages
//! (the page's other PIs) transform.
//!
//! An XSP stage is not cached unless its page says so (it reads the
//! request, the clock, a database): in `all` mode its responses are
//! `uncacheable`; in `incremental` mode it runs on every request and the
//! stages after it are keyed by its output, so when the page outputs what
//! it did before they hit (`partial K/N`). A page that declares
//! `axsp:cache-params` (the request parameters that matter) and/or
//! `axsp:ttl` is cacheable, keyed by those parameters' values and the
//! time-to-live's current slice ([`Stage::varies`]).

use std::sync::Arc;

use crate::cache::ContentHash;
use crate::ffi::{Stylesheet, XmlDoc, XmlError};

use super::{Language, LanguageError, Resource, Stage, StageContext, StageData, StageOutput};

mod compile;
mod context;
pub mod esql;
mod taglib;
mod taglibs;
mod webutils;

pub use compile::{Place, TagCompiler, XspError, literal};
pub use taglib::{Taglib, Taglibs, TaskCall, TaskError, escape};
pub use taglibs::{COOKIE_NS, PARAM_NS, REQUEST_NS, UTIL_NS};
pub use webutils::WEBUTILS_NS;

/// The XSP core namespace.
pub const XSP_NS: &str = "http://apache.org/xsp/core/v1";

/// Axle's namespace for conditions in XSP pages (`axsp:if`,
/// `axsp:choose`): XSP's own were code (`xsp:logic`).
pub const AXSP_NS: &str = "urn:axle:xsp";

/// The MIME type of XSP pages' PI (AxKit's).
pub const XSP_TYPE: &str = "application/x-xsp";

/// The XSP Language, with its taglibs.
#[derive(Debug, Clone)]
pub struct Xsp {
    taglibs: Taglibs,
}

impl Default for Xsp {
    /// With the built-in taglibs: `request`, `param`, `cookie`, `util`,
    /// `web` (redirect).
    fn default() -> Self {
        let mut taglibs = Taglibs::default();
        taglibs::add_builtin(&mut taglibs);
        Xsp { taglibs }
    }
}

impl Xsp {
    /// The same with `taglib` added (replacing one of its namespace).
    pub fn with_taglib(mut self, taglib: Arc<dyn Taglib>) -> Self {
        self.taglibs.add(taglib);
        self
    }
}

impl Language for Xsp {
    fn name(&self) -> &str {
        "xsp"
    }

    fn version(&self) -> u32 {
        1
    }

    fn config_hash(&self) -> Option<ContentHash> {
        Some(ContentHash::of(
            format!("{:?}", self.taglibs.identity()).as_bytes(),
        ))
    }

    fn compile(&self, resource: &Resource<'_>) -> Result<Arc<dyn Stage>, LanguageError> {
        let url = resource.url;
        let text = super::view::decode(resource.bytes)?;
        let failed = |e: XspError| LanguageError::Failed(e.to_string());
        let program = compile::compile(&text, url, &self.taglibs).map_err(failed)?;
        let resolver = resource.resolver.clone();
        let main = match Stylesheet::compile(program.main.as_bytes(), url, resolver.clone()) {
            Ok(s) => s,
            Err(e) => return Err(failed(name_the_expression(&program, e))),
        };
        let arguments = match &program.arguments {
            Some(text) => Some(Arc::new(
                Stylesheet::compile(text.as_bytes(), url, resolver)
                    .map_err(|e| failed(name_the_expression(&program, e)))?,
            )),
            None => None,
        };
        Ok(Arc::new(XspStage {
            main: Arc::new(main),
            arguments,
            program,
            taglibs: self.taglibs.clone(),
            page: url.to_string(),
        }))
    }
}

/// A compile error of a page's stylesheet, named by the first of its
/// expressions that does not compile alone (else as libxslt said it).
fn name_the_expression(program: &compile::Program, error: XmlError) -> XspError {
    for (expr, place) in &program.expressions {
        if let Err(e) = check_expression(expr) {
            return XspError {
                place: place.clone(),
                message: format!(
                    "`{expr}` is not an XPath 1.0 expression ({})",
                    libxslt_reason(&e.to_string())
                ),
            };
        }
    }
    XspError {
        place: program
            .lines
            .first()
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| Place {
                page: String::new(),
                line: 1,
                tag: String::from("xsp:page"),
            }),
        message: error.to_string(),
    }
}

/// libxslt's message without what it says of the generated stylesheet
/// (its file, line and element: the page's place is given instead).
fn libxslt_reason(message: &str) -> String {
    let m = message
        .trim_start_matches("not a valid XSLT stylesheet: ")
        .trim_start_matches("transform failed: ");
    let Some(at) = m.find(" file ") else {
        return m.trim().to_string();
    };
    let head = m[..at].trim().trim_end_matches(':');
    let rest = &m[at..];
    let tail = rest.find(" element ").map_or("", |e| {
        let after = &rest[e + " element ".len()..];
        let name_end = after
            .find(|c: char| c == ':' || c.is_whitespace())
            .unwrap_or(after.len());
        after[name_end..].trim_start_matches(|c: char| c == ':' || c.is_whitespace())
    });
    let tail = tail.trim().replace('\n', " ");
    if tail.is_empty() {
        head.to_string()
    } else {
        format!("{head}: {tail}")
    }
}

/// Compiles `expr` alone (with the context's variables).
fn check_expression(expr: &str) -> Result<(), XmlError> {
    let text = format!(
        "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">{}<xsl:template match=\"/\"><xsl:value-of select=\"{}\"/></xsl:template></xsl:stylesheet>",
        compile::VARIABLES,
        compile::escape_attr(expr)
    );
    Stylesheet::compile(
        text.as_bytes(),
        "axle:/xsp-check.xsl",
        Arc::new(crate::ffi::RefuseAll),
    )
    .map(|_| ())
}

/// A compiled page.
struct XspStage {
    main: Arc<Stylesheet>,
    arguments: Option<Arc<Stylesheet>>,
    program: compile::Program,
    taglibs: Taglibs,
    page: String,
}

impl std::fmt::Debug for XspStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XspStage")
            .field("page", &self.page)
            .finish_non_exhaustive()
    }
}

impl XspStage {
    /// A transform error, named by the page place of the line it names.
    fn runtime(&self, error: XmlError) -> LanguageError {
        let XmlError::Transform(message) = &error else {
            return LanguageError::Xml(error);
        };
        let line = message
            .split("line ")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse::<u32>().ok());
        let place = line.and_then(|line| {
            self.program
                .lines
                .iter()
                .rev()
                .find(|(l, _)| *l <= line)
                .map(|(_, p)| p.clone())
        });
        match place {
            Some(place) => LanguageError::Failed(
                XspError {
                    place,
                    message: libxslt_reason(message),
                }
                .to_string(),
            ),
            None => LanguageError::Failed(format!("XSP page {}: {message}", self.page)),
        }
    }

    /// What of the request the page may see: all of it, unless the page
    /// is cacheable, when only what its key holds (the parameters it
    /// names and the path; the time slice is the key's too): a header or
    /// cookie one client sent must never reach a page stored for every
    /// client (compile.rs refuses the reads it can see; this holds for
    /// any XPath).
    /// (None: the whole request, `ctx.request`.)
    fn keyed_request(&self, ctx: &StageContext<'_>) -> Option<super::RequestInfo> {
        let request = ctx.request?;
        let policy = self.program.cache.as_ref()?;
        let mut keyed = super::RequestInfo::new("", &request.path, "");
        keyed.params = request
            .params
            .iter()
            .filter(|(name, _)| policy.params.iter().any(|p| p == name))
            .cloned()
            .collect();
        Some(keyed)
    }

    /// Runs the page's tasks: their arguments and conditions evaluated
    /// over the context first, then each that should run, in page order.
    fn run_tasks(
        &self,
        arguments: &Arc<Stylesheet>,
        ctx: &StageContext<'_>,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<(usize, String)>, LanguageError> {
        let keyed = self.keyed_request(ctx);
        let text = context::document(keyed.as_ref().or(ctx.request), now, &[]);
        let doc = XmlDoc::parse(text.as_bytes(), ctx.base_url, ctx.resolver.clone())?;
        let out = arguments
            .transform(doc, ctx.base_url, &[], ctx.limits, ctx.resolver.clone())
            .map_err(|e| self.runtime(e))?;
        let bytes = out.serialize()?;
        let text = String::from_utf8_lossy(&bytes);
        let parsed = roxmltree::Document::parse(&text).map_err(|e| {
            LanguageError::Failed(format!("XSP page {}: arguments: {e}", self.page))
        })?;
        let mut results = Vec::new();
        for task in parsed.root_element().children().filter(|n| n.is_element()) {
            let Some(id) = task.attribute("id").and_then(|i| i.parse::<usize>().ok()) else {
                continue;
            };
            let Some(spec) = self.program.tasks.get(id - 1) else {
                continue;
            };
            if task.attribute("run") != Some("true") {
                continue;
            }
            let args: Vec<(String, String)> = task
                .children()
                .filter(|n| n.is_element())
                .map(|a| {
                    (
                        a.attribute("name").unwrap_or("").to_string(),
                        a.text().unwrap_or("").to_string(),
                    )
                })
                .collect();
            let Some(lib) = self.taglibs.get(&spec.namespace) else {
                continue;
            };
            let call = TaskCall {
                args: &args,
                data: spec.data.as_ref(),
                request: ctx.request,
                page: &self.page,
            };
            let content = lib.run(&call).map_err(|e| {
                let public = XspError {
                    place: spec.place.clone(),
                    message: e.public.clone(),
                }
                .to_string();
                // The detail (a database's own message) follows a
                // `Detail:` line: the log and `debug-errors` pages have
                // it, other error pages stop before it.
                LanguageError::Failed(match &e.detail {
                    Some(detail) => format!("{public}\nDetail:\n{detail}"),
                    None => public,
                })
            })?;
            if roxmltree::Document::parse(&format!("<r>{content}</r>")).is_err() {
                return Err(LanguageError::Failed(
                    XspError {
                        place: spec.place.clone(),
                        message: "the taglib returned XML that is not well-formed".into(),
                    }
                    .to_string(),
                ));
            }
            results.push((id, content));
        }
        Ok(results)
    }
}

impl Stage for XspStage {
    fn run(&self, input: StageData, ctx: &StageContext<'_>) -> Result<StageOutput, LanguageError> {
        // The page was compiled from its file; its bytes as input are the
        // same document.
        drop(input);
        let now = chrono::Utc::now();
        let results = match &self.arguments {
            Some(a) => self.run_tasks(a, ctx, now)?,
            None => Vec::new(),
        };
        let keyed = self.keyed_request(ctx);
        let text = context::document(keyed.as_ref().or(ctx.request), now, &results);
        let doc = XmlDoc::parse(text.as_bytes(), ctx.base_url, ctx.resolver.clone())?;
        let result = self
            .main
            .transform(
                doc,
                ctx.base_url,
                ctx.params,
                ctx.limits,
                ctx.resolver.clone(),
            )
            .map_err(|e| self.runtime(e))?;
        super::xslt::stage_output(&self.main, result, ctx)
    }

    fn cacheable(&self) -> bool {
        self.program.cache.is_some()
    }

    fn varies(&self, request: Option<&super::RequestInfo>) -> Option<Vec<u8>> {
        let policy = self.program.cache.as_ref()?;
        let mut key = Vec::new();
        // The path is what the page sees of the URL (two URLs of one page
        // are two keys).
        let path = request.map_or("", |r| r.path.as_str());
        key.extend_from_slice(&(path.len() as u64).to_le_bytes());
        key.extend_from_slice(path.as_bytes());
        for name in &policy.params {
            key.extend_from_slice(name.as_bytes());
            key.push(0);
            if let Some(r) = request {
                for (_, value) in r.params.iter().filter(|(n, _)| n == name) {
                    key.extend_from_slice(&(value.len() as u64).to_le_bytes());
                    key.extend_from_slice(value.as_bytes());
                }
            }
            key.push(0xff);
        }
        if let Some(ttl) = policy.ttl {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            key.extend_from_slice(b"ttl");
            key.extend_from_slice(&(now / ttl.as_secs().max(1)).to_le_bytes());
        }
        Some(key)
    }
}
