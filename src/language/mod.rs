//! Languages: the pipeline's stages, and the public plug-in API.
//!
//! A [`Language`] compiles a stage's resource (for XSLT, the stylesheet named
//! by an `<?xml-stylesheet?>` PI) into a [`Stage`], once; the stage then runs
//! for many documents, on several threads at once. A stage takes its input as
//! a tree or as bytes ([`StageData`]) and returns either; the pipeline makes
//! sure the hand-off never changes the final bytes. The [`Registry`] maps
//! stylesheet MIME types to Languages. Besides XSLT and passthru, a
//! [`FilterLanguage`] runs a configured external command as a stage.
//!
//! # Writing a Language in Rust
//!
//! Implement [`Language::compile`] and [`Stage::run`], register the
//! Language under a MIME type, and name that type in a document's
//! `<?xml-stylesheet type="..." href="..."?>`. A stage reads its input
//! through [`StageData::with_view`] (a read-only `roxmltree` document,
//! whatever form the input came in) and writes its output with
//! [`XmlOut`] (escaping, namespaces, the final Content-Type). This one
//! marks the links that leave the site, and copies everything else:
//!
//! ```
//! use std::sync::Arc;
//! use axle::language::{
//!     Language, LanguageError, Resource, Stage, StageContext, StageData, StageOutput, XmlOut,
//! };
//!
//! /// `<a href="http…">` gets `rel="external"`.
//! struct ExternalLinks;
//! struct ExternalLinksStage;
//!
//! impl Language for ExternalLinks {
//!     fn name(&self) -> &str {
//!         "external-links"
//!     }
//!     fn compile(&self, _resource: &Resource<'_>) -> Result<Arc<dyn Stage>, LanguageError> {
//!         Ok(Arc::new(ExternalLinksStage)) // no configuration to read
//!     }
//! }
//!
//! impl Stage for ExternalLinksStage {
//!     fn run(&self, input: StageData, ctx: &StageContext<'_>) -> Result<StageOutput, LanguageError> {
//!         input.with_view(ctx, |doc| {
//!             let mut out = XmlOut::with_declaration();
//!             out.copy_with(doc.root(), |node, attrs| {
//!                 if node.has_tag_name("a") && attrs.get("href").is_some_and(|h| h.starts_with("http")) {
//!                     attrs.set("rel", "external");
//!                 }
//!             });
//!             out.finish(ctx) // text/xml; charset=UTF-8 when the stage is the last
//!         })
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The stage on one document, as the pipeline runs it (a test would do this).
//! let root = std::env::temp_dir().canonicalize()?;
//! let files = axle::provider::FileProvider::new(&root, axle::cache::Fingerprints::default())?;
//! let (resolver, limits) = (files.resolver(), axle::ffi::Limits::default());
//! let ctx = StageContext::new("/page.xml", &[], true, &limits, &resolver);
//! let page = "<p><a href='https://example.org/'>out</a> &amp; <a href='/in'>in</a></p>";
//! let output = ExternalLinksStage.run(StageData::Bytes(page.into()), &ctx)?;
//! let StageData::Bytes(bytes) = output.data else { unreachable!("XmlOut writes bytes") };
//! assert_eq!(
//!     std::str::from_utf8(&bytes)?,
//!     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<p><a href=\"https://example.org/\" \
//!      rel=\"external\">out</a> &amp; <a href=\"/in\">in</a></p>\n"
//! );
//! assert_eq!(output.content_type.as_deref(), Some("text/xml; charset=UTF-8"));
//!
//! // Registered next to XSLT and passthru, on the server `axle serve` runs.
//! let server = axle::Server::builder(&root)
//!     .no_site_file()
//!     .language("application/x-external-links", ExternalLinks)
//!     .build()?;
//! # drop(server);
//! # Ok(())
//! # }
//! ```
//!
//! Serving it is one more call (the address and mode as `axle serve`'s
//! defaults; `axle.toml` in the root is loaded):
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use axle::language::{Language, LanguageError, Resource, Stage};
//! # struct ExternalLinks;
//! # impl Language for ExternalLinks {
//! #     fn name(&self) -> &str { "external-links" }
//! #     fn compile(&self, _: &Resource<'_>) -> Result<Arc<dyn Stage>, LanguageError> {
//! #         Err(LanguageError::Failed("see above".into()))
//! #     }
//! # }
//! fn main() -> std::io::Result<()> {
//!     axle::Server::builder("samples")
//!         .language("application/x-external-links", ExternalLinks)
//!         .build()?
//!         .run()
//! }
//! ```
//!
//! and a document chains it with XSLT like any other stage (the `href`
//! names a file under the root even when, as here, the Language reads
//! nothing from it: its bytes are part of the stage's cache key):
//!
//! ```xml
//! <?xml-stylesheet type="application/x-external-links" href="/stylesheets/links.xml"?>
//! <?xml-stylesheet type="text/xsl" href="/stylesheets/page.xsl"?>
//! ```
//!
//! A stage must be a pure function of its input, its resource and its
//! parameters (read other files through [`Resource::read_related`] and
//! [`StageContext::read_related`], so they are recorded), and its
//! Language's [`Language::version`] goes up when its output for the same
//! input changes. `examples/custom_language.rs` is a longer example with a
//! configuration file.

mod fastcgi_filter;
mod filter;
mod passthru;
mod registry;
mod request;
mod view;
mod xslt;
pub mod xsp;

pub use fastcgi_filter::{FastcgiFilterConfig, FastcgiFilterLanguage};
pub use filter::{FilterConfig, FilterError, FilterLanguage};
pub use passthru::Passthru;
pub use registry::{Registry, RegistryError};
pub use request::{RequestInfo, parse_cookies};
pub use view::{Attrs, XML_CONTENT_TYPE, XmlOut, prefixed_name, view_of};
pub use xslt::Xslt;
pub use xsp::Xsp;

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::cache::ContentHash;
use crate::ffi::{DoctypeIds, Limits, XmlDoc, XmlError};
use crate::href::resolve_href;
use crate::prolog::Doctype;
use crate::provider::RootResolver;

/// A kind of pipeline stage (XSLT, passthru, a plug-in).
pub trait Language: Send + Sync + 'static {
    /// A stable, unique name. It is part of every cache key of the stages
    /// this Language runs.
    fn name(&self) -> &str;

    /// Bump when the same input and resource would now give other output, so
    /// that cached results of older versions are not served.
    fn version(&self) -> u32 {
        1
    }

    /// A hash of this Language's own configuration, for a Language whose
    /// instances differ in more than their name (a filter's command and
    /// environment): part of the compiled-stage cache's key and of the
    /// stage's identity in every cache key, so two instances of one name
    /// with other settings (a site configuration reloaded with another
    /// command) never share compiled stages or cached outputs. `None` (the
    /// default): the name and version say everything.
    fn config_hash(&self) -> Option<ContentHash> {
        None
    }

    /// May a stage of this Language name no file? When its href names
    /// nothing (or a directory), the stage is then compiled with no bytes
    /// and [`Resource::missing`] set, and the file's absence is recorded,
    /// so creating it later compiles the stage again. The default, `false`:
    /// a PI naming no file is a missing stylesheet (an error).
    fn resource_optional(&self) -> bool {
        false
    }

    /// Compiles the stage's resource. Everything the compiled stage depends
    /// on must be read here, through `resource` (so it is tracked), and the
    /// stage must then be a pure function of its input and params.
    fn compile(&self, resource: &Resource<'_>) -> Result<Arc<dyn Stage>, LanguageError>;
}

/// One compiled stage, shared by every request that uses it.
pub trait Stage: Send + Sync {
    /// Runs the stage on `input`. When `ctx.is_final` the output must be
    /// the response bytes; otherwise a tree or bytes for the next stage.
    fn run(&self, input: StageData, ctx: &StageContext<'_>) -> Result<StageOutput, LanguageError>;

    /// May this stage's output be cached? A stage whose output is not a
    /// function of its input, resource and params (it asks a database, a
    /// clock, the network) says `false`: in `all` mode a chain with such a
    /// stage is never stored (AxKit's `no_cache`), and in `incremental`
    /// mode the stage runs on every request while the stages after it are
    /// keyed by its output's hash, so they hit when it repeats itself.
    fn cacheable(&self) -> bool {
        true
    }

    /// For a cacheable stage whose output depends on parts of the request
    /// that are not its input or params (request values a page declared
    /// it reads, the time slice of a time-to-live): those parts, for
    /// `request` (None when there is no request). They become part of the
    /// stage's cache key and of the response's; a response of a chain with
    /// such a stage is never memoized by URL and has no `Last-Modified`
    /// (its files do not date it). `None` (the default): nothing beyond
    /// input and params.
    fn varies(&self, request: Option<&RequestInfo>) -> Option<Vec<u8>> {
        let _ = request;
        None
    }
}

/// The resource a stage is compiled from. (`#[non_exhaustive]`: build one
/// with [`Resource::new`] in tests, so new fields do not break plug-ins.)
#[derive(Debug)]
#[non_exhaustive]
pub struct Resource<'a> {
    /// Absolute path of the resource (under the root).
    pub path: &'a Path,
    /// Its URL: the root-relative, percent-encoded path (`/s/a.xsl`), which
    /// is also its base URI for what it imports.
    pub url: &'a str,
    /// For `href="#id"`: the resource is the document itself and this is
    /// the ID of the element to compile.
    pub fragment: Option<&'a str>,
    /// Its bytes, as hashed for the cache key.
    pub bytes: &'a [u8],
    /// Confined reader for anything else the compile needs (recorded).
    pub resolver: &'a Arc<RootResolver>,
    /// No file was read: the href names none (or a directory) and the
    /// Language's resource is optional ([`Language::resource_optional`]);
    /// `bytes` is empty.
    pub missing: bool,
}

impl<'a> Resource<'a> {
    /// A resource at `path` (absolute, under the root) whose URL is `url`
    /// (root-relative), with its bytes and a resolver for what it reads.
    pub fn new(
        path: &'a Path,
        url: &'a str,
        bytes: &'a [u8],
        resolver: &'a Arc<RootResolver>,
    ) -> Self {
        Resource {
            path,
            url,
            fragment: None,
            bytes,
            resolver,
            missing: false,
        }
    }

    /// The same resource, naming no file (for a Language whose resource is
    /// optional): no bytes, [`Resource::missing`] set.
    pub fn as_missing(mut self) -> Self {
        self.bytes = &[];
        self.missing = true;
        self
    }

    /// The same resource, naming an embedded element by ID.
    pub fn with_fragment(mut self, fragment: &'a str) -> Self {
        self.fragment = Some(fragment);
        self
    }

    /// Reads another file under the root, relative to this resource's
    /// directory (or root-relative with a leading `/`), recording it as part
    /// of the stage's closure.
    pub fn read_related(&self, href: &str) -> Result<Vec<u8>, LanguageError> {
        read_relative(self.resolver, self.url, href)
    }
}

/// What a running stage knows about its request. (`#[non_exhaustive]`:
/// build one with [`StageContext::new`] in tests.)
#[derive(Debug)]
#[non_exhaustive]
pub struct StageContext<'a> {
    /// Base URL of the document: its root-relative, percent-encoded path
    /// (`/articles/a.xml`), never a filesystem path; relative `document()`
    /// and entity references resolve against it.
    pub base_url: &'a str,
    /// Stylesheet parameters (name, string value), sorted by name.
    pub params: &'a [(String, String)],
    /// Is this the last stage (whose output is the response)?
    pub is_final: bool,
    /// Transform limits.
    pub limits: &'a Limits,
    /// Confined, recording reader for files the stage reads while running.
    pub resolver: &'a Arc<RootResolver>,
    /// Is the input an earlier stage's output (not the source)? Its bytes
    /// then mark text written with disable-output-escaping between the
    /// JAXP processing instructions `javax.xml.transform.disable-output-escaping`
    /// and `…enable-output-escaping`; [`StageData::into_dom_for`] restores it.
    pub input_from_stage: bool,
    /// For the first stage, the source's DOCTYPE as the pipeline already
    /// scanned it from these bytes (`Some(None)`: it has none), so the
    /// parse need not scan the prolog again; `None`: not known, the parse
    /// scans it. Ignored when the input is an earlier stage's output.
    pub source_doctype: Option<Option<&'a Doctype>>,
    /// The HTTP request behind the render, when there is one. A stage that
    /// reads it must say it is not cacheable ([`Stage::cacheable`]): its
    /// output then depends on more than its input and params.
    pub request: Option<&'a RequestInfo>,
}

impl<'a> StageContext<'a> {
    /// A context for a stage of the document at `base_url`.
    pub fn new(
        base_url: &'a str,
        params: &'a [(String, String)],
        is_final: bool,
        limits: &'a Limits,
        resolver: &'a Arc<RootResolver>,
    ) -> Self {
        StageContext {
            base_url,
            params,
            is_final,
            limits,
            resolver,
            input_from_stage: false,
            source_doctype: None,
            request: None,
        }
    }

    /// Reads a file under the root relative to the document (or
    /// root-relative with a leading `/`), recording it as a dependency.
    pub fn read_related(&self, href: &str) -> Result<Vec<u8>, LanguageError> {
        read_relative(self.resolver, self.base_url, href)
    }
}

fn read_relative(
    resolver: &Arc<RootResolver>,
    base_url: &str,
    href: &str,
) -> Result<Vec<u8>, LanguageError> {
    let url = resolve_href(base_url, href)
        .ok_or_else(|| LanguageError::Failed(format!("{href} leaves the document root")))?;
    let path = resolver
        .confine(&url)
        .map_err(|e| LanguageError::Failed(e.to_string()))?;
    resolver
        .read_recorded(&path)
        .map(|(bytes, _)| bytes)
        .map_err(|e| LanguageError::Failed(e.to_string()))
}

/// A document between stages: a libxml2 tree or serialized bytes.
#[derive(Debug)]
pub enum StageData {
    /// Serialized bytes (XML for intermediate stages, unless a stage says
    /// otherwise).
    Bytes(Bytes),
    /// A tree, handed on without re-parsing.
    Dom(XmlDoc),
}

impl StageData {
    /// The bytes: serializes a tree as plain UTF-8 XML.
    pub fn into_bytes(self) -> Result<Bytes, LanguageError> {
        match self {
            StageData::Bytes(b) => Ok(b),
            StageData::Dom(doc) => Ok(Bytes::from(doc.to_xml_bytes()?)),
        }
    }

    /// The tree for the stage running in `ctx`: as [`StageData::into_dom`],
    /// but an earlier stage's output gets back the text it wrote with
    /// disable-output-escaping (see [`StageContext::input_from_stage`]), so
    /// the hand-off through bytes gives the tree a hand-off through the
    /// tree would.
    pub fn into_dom_for(self, ctx: &StageContext<'_>) -> Result<XmlDoc, LanguageError> {
        match self {
            StageData::Dom(doc) => Ok(doc),
            StageData::Bytes(b) => parse(
                &b,
                ctx.base_url,
                ctx.resolver,
                ctx.input_from_stage,
                ctx.source_doctype.filter(|_| !ctx.input_from_stage),
            ),
        }
    }

    /// The tree: parses bytes (with the document's base URL, reading any
    /// external entity through `resolver`).
    pub fn into_dom(
        self,
        base_url: &str,
        resolver: &Arc<RootResolver>,
    ) -> Result<XmlDoc, LanguageError> {
        match self {
            StageData::Dom(doc) => Ok(doc),
            StageData::Bytes(b) => parse(&b, base_url, resolver, false, None),
        }
    }
}

/// Parses a document (or, `from_stage`, an earlier stage's output, whose
/// disable-output-escaping marks are restored), its shared DTD picked by
/// the DOCTYPE `known` from an earlier scan of these bytes, or scanned here.
fn parse(
    bytes: &[u8],
    base_url: &str,
    resolver: &Arc<RootResolver>,
    from_stage: bool,
    known: Option<Option<&Doctype>>,
) -> Result<XmlDoc, LanguageError> {
    let scanned;
    let doctype = match known {
        Some(doctype) => doctype,
        None => {
            scanned = doctype_of(bytes);
            scanned.as_ref()
        }
    };
    let ids = doctype.and_then(doctype_ids);
    let resolver = resolver.clone();
    Ok(if from_stage {
        XmlDoc::parse_stage_output(bytes, base_url, resolver, ids)?
    } else {
        XmlDoc::parse_document(bytes, base_url, resolver, ids)?
    })
}

/// The DOCTYPE of a document about to be parsed, as the prolog scanner reads
/// it: it picks the shared parsed DTD ([`XmlDoc::parse_document`]). A
/// document the scanner cannot read is parsed without one.
fn doctype_of(bytes: &[u8]) -> Option<Doctype> {
    crate::prolog::scan(bytes).ok()?.doctype
}

fn doctype_ids(doctype: &Doctype) -> Option<DoctypeIds<'_>> {
    if doctype.internal_subset {
        return None;
    }
    Some(DoctypeIds {
        public_id: doctype.public_id.as_deref(),
        system_id: doctype.system_id.as_deref()?,
    })
}

/// A stage's result.
#[derive(Debug)]
pub struct StageOutput {
    /// The document.
    pub data: StageData,
    /// For the final stage: the response's Content-Type (None: the default,
    /// `text/html; charset=UTF-8`).
    pub content_type: Option<String>,
}

/// Why a stage failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LanguageError {
    /// libxml2/libxslt reported an error.
    #[error(transparent)]
    Xml(#[from] XmlError),
    /// The stage's input is not what it can process.
    #[error("unusable input: {0}")]
    Input(String),
    /// The input is not well-formed XML. At stage 1 this is reported as a
    /// malformed *document* (the source), naming the line.
    #[error("not well-formed XML{}: {message}", line.map(|l| format!(" (line {l})")).unwrap_or_default())]
    NotWellFormed {
        /// 1-based line, when known.
        line: Option<u32>,
        /// What is wrong.
        message: String,
    },
    /// An external program (a filter) failed. `message` is a one-line
    /// reason naming the program; what the program wrote to its standard
    /// error is logged where it failed and is never part of the error (so
    /// it cannot reach a client).
    #[error("{message}")]
    External {
        /// Which kind of failure (it picks the HTTP status).
        kind: ExternalFailure,
        /// The reason, one line, without the program's stderr.
        message: String,
    },
    /// Anything else, in words.
    #[error("{0}")]
    Failed(String),
}

/// How an external program failed ([`LanguageError::External`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExternalFailure {
    /// It could not be started, exited non-zero or by a signal, or wrote
    /// more output than it may (HTTP 502).
    Failed,
    /// It did not finish within its timeout (HTTP 504).
    Timeout,
    /// Every run of it was taken and its queue full, or no run came free
    /// in time (HTTP 503 with `Retry-After`).
    Busy,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Fingerprints;
    use crate::provider::FileProvider;

    #[test]
    fn the_source_doctype_hint_never_changes_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(
            root.join("d.dtd"),
            r#"<!ENTITY e "from the DTD"><!ATTLIST d a CDATA "x">"#,
        )
        .unwrap();
        let source = br#"<?xml version="1.0"?><!DOCTYPE d SYSTEM "d.dtd"><d>&e;</d>"#;
        let files = FileProvider::new(&root, Fingerprints::new(16)).unwrap();
        let resolver = files.resolver();
        let limits = Limits::default();
        let scanned = crate::prolog::scan(source).unwrap().doctype;
        assert!(scanned.is_some());
        let other = Doctype {
            name: "d".into(),
            public_id: None,
            system_id: Some("other.dtd".into()),
            internal_subset: false,
        };
        let tree = |hint: Option<Option<&Doctype>>| {
            let mut ctx = StageContext::new("/doc.xml", &[], false, &limits, &resolver);
            ctx.source_doctype = hint;
            let doc = StageData::Bytes(Bytes::from_static(source))
                .into_dom_for(&ctx)
                .unwrap();
            String::from_utf8(doc.to_xml_bytes().unwrap()).unwrap()
        };
        let unhinted = tree(None);
        assert!(
            unhinted.contains(r#"<d a="x">from the DTD</d>"#),
            "{unhinted}"
        );
        // The right hint, twice (so that a parsed DTD exists to lend).
        assert_eq!(tree(Some(scanned.as_ref())), unhinted);
        assert_eq!(tree(Some(scanned.as_ref())), unhinted);
        // A wrong hint costs the sharing, never the tree.
        assert_eq!(tree(Some(None)), unhinted);
        assert_eq!(tree(Some(Some(&other))), unhinted);
    }
}
