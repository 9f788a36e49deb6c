//! The site configuration file (`axle.toml`): locations that match URL path
//! prefixes and nest, each saying how documents under it are served
//! (processors, style and media choice, params, passthru, tracing, error
//! stylesheet, directories, XInclude, output charset, MIME type map).
//!
//! Loading validates everything up front (unknown keys, bad regexes,
//! unknown Languages and charsets) and names the key and line of each
//! problem. [`SiteConfig::location`] merges the sections that match a path,
//! outermost first: inner settings override outer ones, and, as in AxKit, an
//! inner section's processors run before the outer's unless it sets
//! `reset`. Every merged location carries a hash of everything in it that
//! can change output; the pipeline puts it in every cache key.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::cache::{ContentHash, KeyBuilder};
use crate::chain::{Processor, ProcessorOrder};
use crate::language::Registry;
use crate::prolog::StylesheetPi;

mod check;
mod errors;
mod esql;
mod filters;
mod format;
mod lenient;
mod limits;
mod private;
mod references;
mod shared_cache;
mod sources;
mod spans;
mod validate;

pub use check::{CheckTarget, check, check_target};
pub use errors::{ConfigError, ConfigErrors};
pub use limits::LimitSettings;
pub use shared_cache::SharedCacheFile;

use format::{OrderWord, ParamSetting};
use spans::{Spans, join};
use validate::{Here, ValidSection, validate};

// ---------------------------------------------------------------------------
// Validated sections

/// How `xsl:sort` compares text keys (`xsl-sort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum XslSort {
    /// Code point order, ignoring `lang` and `case-order`: libxslt's own,
    /// as xsltproc sorts (the default, which the conformance suites check).
    #[default]
    Codepoint,
    /// A Unicode collation honouring `lang` and `case-order`, as Chromium
    /// sorts: for sites moved off client-side XSLT.
    Unicode,
}

impl XslSort {
    /// `"codepoint"` or `"unicode"`.
    pub fn parse(text: &str) -> Option<XslSort> {
        match text {
            "codepoint" => Some(XslSort::Codepoint),
            "unicode" => Some(XslSort::Unicode),
            _ => None,
        }
    }
}

/// Which request parameters become stylesheet parameters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ParamPolicy {
    /// Every parameter (the default).
    #[default]
    All,
    /// None.
    None,
    /// Only these names.
    Only(Vec<String>),
}

impl ParamPolicy {
    /// May `name` be passed?
    pub fn allows(&self, name: &str) -> bool {
        match self {
            ParamPolicy::All => true,
            ParamPolicy::None => false,
            ParamPolicy::Only(names) => names.iter().any(|n| n == name),
        }
    }
}

/// How output is transcoded (AxKit's `AxTranslateOutput`/`AxOutputCharset`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputCharset {
    /// Always this encoding (a WHATWG label's canonical name).
    Fixed(&'static encoding_rs::Encoding),
    /// The client's preferred one from `Accept-Charset` (UTF-8 preferred).
    Accept,
}

/// A User-Agent → style rule.
#[derive(Debug, Clone)]
pub struct UaStyleRule {
    /// The regex matched against `User-Agent`.
    pub pattern: regex::Regex,
    /// The style it chooses.
    pub style: String,
}

/// A rule choosing the media from `User-Agent` and/or `Accept`.
#[derive(Debug, Clone)]
pub struct MediaRule {
    /// Regex on `User-Agent` (either this or `accept` must match).
    pub user_agent: Option<regex::Regex>,
    /// Substring of `Accept`.
    pub accept: Option<String>,
    /// The media chosen.
    pub media: String,
}

impl MediaRule {
    /// AxKit's WAPCheck: `handheld` when `Accept` mentions WML or the
    /// User-Agent starts like a WAP phone's.
    pub fn wap() -> MediaRule {
        MediaRule {
            user_agent: regex::Regex::new(
                "^(Noki|Eric|UP\\.B|WapI|MOT-|R380|Alca|SIE-|Phil|Pana|SAMS|LGE-|SEC-|NEC-|Sony|Shar|Tosh|WAP|wap)",
            )
            .ok(),
            accept: Some("vnd.wap.wml".to_string()),
            media: "handheld".to_string(),
        }
    }

    /// Does the rule choose its media for these headers?
    pub fn matches(&self, user_agent: &str, accept: &str) -> bool {
        self.user_agent
            .as_ref()
            .is_some_and(|r| r.is_match(user_agent))
            || self
                .accept
                .as_ref()
                .is_some_and(|a| accept.contains(a.as_str()))
    }
}

// ---------------------------------------------------------------------------
// The merged view

/// Everything that governs the documents under one path: the sections that
/// match it, merged.
#[derive(Debug, Clone)]
pub struct Location {
    /// The prefixes of the sections merged, outermost first.
    pub prefixes: Vec<String>,
    /// Default style (AxStyle).
    pub style: Option<String>,
    /// Default media (AxMedia).
    pub media: String,
    /// Configured processors, innermost section's first.
    pub processors: Vec<Processor>,
    /// How they combine with PIs.
    pub order: ProcessorOrder,
    /// Is `?passthru=1` allowed?
    pub passthru: bool,
    /// Was `passthru` set by a section (not the default)? Only then is an
    /// XSP page's source shown by `?passthru=1`: a page holds its SQL and
    /// its logic.
    pub passthru_set: bool,
    /// `negotiate = true`: a document with a stylesheet chain is the
    /// rendered page or the source as it is, chosen by `Accept`
    /// (`http::negotiate`); responses carry `Vary: Accept`.
    pub negotiate: bool,
    /// `source-type`: the media type a negotiated source is sent as; None:
    /// by its root element (Atom, RSS, else `application/xml`).
    pub source_type: Option<String>,
    /// For a posted document (`post` source): the Languages its PIs may
    /// name, by name (`xslt`, `passthru`, `xsp`, `filter:TYPE`, a
    /// plug-in's name). Default: `xslt`. Never an embedded stylesheet.
    pub client_stages: Arc<[String]>,
    /// Which request params reach stylesheets.
    pub params: ParamPolicy,
    /// Directory index document name (None: no index).
    pub index: Option<String>,
    /// Directory URLs produce a `filelist` document (AxHandleDirs).
    pub directories: bool,
    /// Process XInclude in source documents.
    pub xinclude: bool,
    /// How `xsl:sort` compares text (`xsl-sort`).
    pub xsl_sort: XslSort,
    /// Error pages carry libxslt's whole report (template and variable
    /// stacks, every message); off: a one-line reason, the rest logged.
    pub debug_errors: bool,
    /// `Cache-Control` of rendered responses and static files (None: not
    /// sent; uncacheable responses and errors say `no-store` regardless).
    pub cache_control: Option<http::HeaderValue>,
    /// Write every stage's output here (AxTraceIntermediate).
    pub trace: Option<PathBuf>,
    /// Renders error pages (AxErrorStylesheet).
    pub error_stylesheet: Option<StylesheetPi>,
    /// Output transcoding.
    pub output_charset: Option<OutputCharset>,
    /// Query-string key of the style chooser (None: off).
    pub style_key: Option<String>,
    /// Cookie name of the style chooser (None: off).
    pub style_cookie: Option<String>,
    /// `/doc.xml/STYLE` chooses STYLE.
    pub path_info: bool,
    /// `/doc.xml.STYLE` chooses STYLE.
    pub suffix: bool,
    /// User-Agent → style rules.
    pub ua_styles: Vec<UaStyleRule>,
    /// Media rules (default: AxKit's WAP check).
    pub media_rules: Vec<MediaRule>,
    /// The MIME type → Language map in force here.
    pub registry: Arc<Registry>,
    /// The dynamic source that answers every URL here (`provider`; None:
    /// the file tree).
    pub source: Option<crate::dynamic::Mount>,
    /// Nothing here is served (`private = true`, 404), nor read by any
    /// load (the prefix's files are in the private set).
    pub private: bool,
    /// Program files here are served as static files (`serve-programs`).
    pub serve_programs: bool,
    /// Hash of everything above that can change output.
    pub hash: ContentHash,
}

/// A loaded, validated configuration.
#[derive(Debug, Clone)]
pub struct SiteConfig {
    sections: Vec<ValidSection>,
    registry: Registry,
    source: Option<PathBuf>,
    limits: LimitSettings,
    shared_cache: SharedCacheFile,
    /// Merged locations by the sections they merge (prefix chains, so few;
    /// a map, not a cache: this is read on every request).
    merged: Arc<RwLock<MergedMemo>>,
    /// Problems that do not stop the site (a filter's program that cannot
    /// be run yet): warned about at load, refused by `axle check`.
    problems: Vec<ConfigError>,
    /// Paths under the root never served nor read (an `esql` SQLite
    /// database's directory, a `private` location's files, program
    /// files): with the file itself, [`SiteConfig::private_set`].
    private: Vec<PathBuf>,
    /// Program files (a `command` provider's or a filter's argv entries
    /// that name files under the root, unless `serve-programs`): never
    /// served, but read by the stages that run them.
    programs: Vec<PathBuf>,
}

impl SiteConfig {
    /// No file: every path gets the defaults.
    pub fn defaults(registry: Registry) -> SiteConfig {
        SiteConfig {
            sections: Vec::new(),
            registry,
            source: None,
            limits: LimitSettings::default(),
            shared_cache: SharedCacheFile::default(),
            merged: Arc::default(),
            problems: Vec::new(),
            private: Vec::new(),
            programs: Vec::new(),
        }
    }

    /// Is `path` (canonical) private: the configuration file, in an
    /// `esql` SQLite database's directory, under a `private` location, or
    /// a program file (see [`SiteConfig::private_set`])?
    pub fn is_private(&self, path: &Path) -> bool {
        self.source() == Some(path)
            || self.private.iter().any(|dir| path.starts_with(dir))
            || self.programs.iter().any(|p| p == path)
    }

    /// What confinement refuses for this configuration, as it refuses
    /// `axle.toml`: the file itself, the `esql` SQLite databases'
    /// directories, every `private = true` location's directory. Program
    /// files are not in it (a filter's script is also its stylesheet's
    /// href, read by the stage that runs it): they are refused where a
    /// URL is served ([`SiteConfig::is_private`]).
    pub fn private_set(&self) -> crate::provider::PrivateSet {
        crate::provider::PrivateSet::new(
            self.private
                .iter()
                .cloned()
                .chain(self.source.iter().cloned()),
        )
    }

    /// The `[limits]` the file sets.
    pub fn limits(&self) -> &LimitSettings {
        &self.limits
    }

    /// The `[shared-cache]` the file sets.
    pub fn shared_cache(&self) -> &SharedCacheFile {
        &self.shared_cache
    }

    /// The file this was loaded from.
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// Loads and validates `path`, taking the file's own directory as the
    /// document root: [`SiteConfig::load_in`] with that root (what `axle
    /// render` and tests use when the file is the root's `axle.toml`).
    pub fn load(path: &Path, registry: Registry) -> Result<SiteConfig, ConfigErrors> {
        Self::load_in(path, registry, &file_directory(path))
    }

    /// Loads and validates `path` for the document root `root`; `registry`
    /// names the Languages that `types` may refer to. The one rule for
    /// every relative path the file holds (an `esql` SQLite database or
    /// `init` file, a program's working directory and argv files, hrefs):
    /// it is relative to the document root, wherever the file itself is.
    /// `axle serve` and `axle check` both load through here. Every
    /// problem is reported, not just the first.
    pub fn load_in(
        path: &Path,
        registry: Registry,
        root: &Path,
    ) -> Result<SiteConfig, ConfigErrors> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            line: None,
            key: "(file)".into(),
            message: e.to_string(),
        })?;
        let mut site = Self::parse_in(&text, path, registry, root)?;
        // Canonical, so the server can recognise the file under any
        // spelling of the root (and never serve it).
        site.source = Some(path.canonicalize().unwrap_or_else(|_| path.to_path_buf()));
        Ok(site)
    }

    /// Parses and validates configuration text (`file` names it in errors;
    /// its directory is the document root, as for [`SiteConfig::load`]).
    pub fn parse(text: &str, file: &Path, registry: Registry) -> Result<SiteConfig, ConfigErrors> {
        Self::parse_in(text, file, registry, &file_directory(file))
    }

    /// [`SiteConfig::parse`] for the document root `root`.
    pub fn parse_in(
        text: &str,
        file: &Path,
        mut registry: Registry,
        root: &Path,
    ) -> Result<SiteConfig, ConfigErrors> {
        // One spelling of the root for everything below (`samples`,
        // `./samples/`, a link to it): what is private is compared with
        // canonical paths.
        let canonical_root = root
            .canonicalize()
            .or_else(|_| std::path::absolute(root))
            .unwrap_or_else(|_| root.to_path_buf());
        let root = canonical_root.as_path();
        let spans = Spans::parse(text);
        // Every mistake is collected; the file is refused at the end.
        let (format, mut errors) = lenient::read_format(file, text);
        let Some(format) = format else {
            return Err(ConfigErrors::new(errors).unwrap_or_else(|| {
                ConfigErrors::from(ConfigError {
                    file: file.to_path_buf(),
                    line: None,
                    key: "(file)".into(),
                    message: "not readable".into(),
                })
            }));
        };
        let here = |section: String| Here {
            file,
            text,
            spans: &spans,
            section,
        };
        // Filters first: locations may name their types.
        let mut problems = Vec::new();
        for (mime, filter) in &format.filter {
            let here = here(join("filter", mime));
            if let Err(e) =
                filters::register(mime, filter, &mut registry, root, &here, &mut problems)
            {
                errors.extend(e);
            }
        }
        let mut private = esql::register(&format.esql, &mut registry, root, file, text, &spans)
            .unwrap_or_else(|e| {
                errors.extend(e);
                Vec::new()
            });
        let programs = private::program_candidates(&format, root);
        let mut sections = Vec::new();
        for (prefix, section) in format.location {
            let here = here(join("location", &prefix));
            if let Err(e) = private::check_location(&section, &prefix, &here) {
                errors.push(e);
            }
            match validate(prefix, section, &registry, root, &here) {
                Ok(valid) => sections.push(valid),
                Err(e) => errors.extend(e),
            }
        }
        private.extend(private::location_paths(&sections, root));
        // Outermost first: shorter prefixes contain longer ones.
        sections.sort_by(|a, b| {
            a.prefix
                .len()
                .cmp(&b.prefix.len())
                .then(a.prefix.cmp(&b.prefix))
        });
        let limits = match &format.limits {
            Some(l) => {
                LimitSettings::validate(l, &here("limits".to_string())).unwrap_or_else(|e| {
                    errors.extend(e);
                    LimitSettings::default()
                })
            }
            None => LimitSettings::default(),
        };
        let shared_cache = match &format.shared_cache {
            Some(f) => SharedCacheFile::validate(f, &here("shared-cache".to_string()))
                .unwrap_or_else(|e| {
                    errors.extend(e);
                    SharedCacheFile::default()
                }),
            None => SharedCacheFile::default(),
        };
        if !errors.is_empty() {
            // Refused anyway: the programs that cannot run are named too.
            errors.extend(problems.iter().cloned());
            errors.extend(sections.iter().flat_map(|s| s.problems.iter().cloned()));
        }
        if let Some(errors) = ConfigErrors::new(errors) {
            return Err(errors);
        }
        let mut site = SiteConfig {
            sections,
            registry,
            limits,
            shared_cache,
            source: Some(file.to_path_buf()),
            merged: Arc::default(),
            problems,
            private,
            programs: Vec::new(),
        };
        site.programs = private::programs_not_served(&site, programs, root);
        Ok(site)
    }

    /// Problems that do not stop the site (a program that cannot be run
    /// yet), each once: `axle serve` warns about them, `axle check`
    /// refuses them ([`SiteConfig::check_references`] includes them).
    pub fn problems(&self) -> Vec<ConfigError> {
        let mut all = self.problems.clone();
        for section in &self.sections {
            all.extend(section.problems.iter().cloned());
        }
        all
    }

    /// The prefixes of the locations whose documents come from a dynamic
    /// source (a `provider` other than `files`, or a mount): made per
    /// request, so `axle build` skips them.
    pub fn dynamic_prefixes(&self) -> Vec<String> {
        self.sections
            .iter()
            .filter(|s| matches!(s.source, Some(Some(_))))
            .map(|s| s.prefix.clone())
            .collect()
    }

    /// Mounts a dynamic source at its prefix, as a location's `provider`
    /// would; at the same prefix, a mount wins over the file's `provider`
    /// (the file's other settings there still apply).
    pub fn mount(&mut self, mount: crate::dynamic::Mount) {
        self.sections.push(validate::ValidSection::mounted(mount));
        // Stable: a mount stays after the file's section of its prefix.
        self.sections.sort_by(|a, b| {
            a.prefix
                .len()
                .cmp(&b.prefix.len())
                .then(a.prefix.cmp(&b.prefix))
        });
        self.merged = Arc::default();
    }

    /// The merged location for a request path (percent-encoded URL path).
    pub fn location(&self, url_path: &str) -> Arc<Location> {
        // The matching sections, on the stack for up to STACK of them (this
        // runs on every request; only a new combination is allocated).
        const STACK: usize = 32;
        let mut stack = [0usize; STACK];
        let mut n = 0;
        let mut heap: Vec<usize> = Vec::new();
        for (i, section) in self.sections.iter().enumerate() {
            if !prefix_matches(&section.prefix, url_path) {
                continue;
            }
            if n < STACK {
                stack[n] = i;
                n += 1;
            } else {
                if heap.is_empty() {
                    heap.extend_from_slice(&stack);
                }
                heap.push(i);
            }
        }
        let matched: &[usize] = if heap.is_empty() { &stack[..n] } else { &heap };
        if let Some(hit) = self
            .merged
            .read()
            .ok()
            .and_then(|m| m.get(matched).cloned())
        {
            return hit;
        }
        let location = Arc::new(self.merge(matched));
        if let Ok(mut merged) = self.merged.write() {
            if merged.len() >= MAX_MERGED {
                merged.clear();
            }
            merged.insert(matched.to_vec(), Arc::clone(&location));
        }
        location
    }

    fn merge(&self, matched: &[usize]) -> Location {
        let mut l = Location {
            prefixes: Vec::new(),
            style: None,
            media: "screen".into(),
            processors: Vec::new(),
            order: ProcessorOrder::Fallback,
            passthru: true,
            passthru_set: false,
            negotiate: false,
            source_type: None,
            client_stages: Arc::from(vec!["xslt".to_string()]),
            params: ParamPolicy::All,
            index: Some("index.xml".into()),
            directories: false,
            xinclude: false,
            xsl_sort: XslSort::Codepoint,
            debug_errors: false,
            cache_control: None,
            trace: None,
            error_stylesheet: None,
            output_charset: None,
            style_key: Some("style".into()),
            style_cookie: Some("axkit_preferred_style".into()),
            path_info: true,
            suffix: true,
            ua_styles: Vec::new(),
            media_rules: vec![MediaRule::wap()],
            registry: Arc::new(self.registry.clone()),
            source: None,
            private: false,
            serve_programs: false,
            hash: ContentHash::of(b""),
        };
        for &i in matched {
            let Some(s) = self.sections.get(i) else {
                continue;
            };
            let r = &s.raw;
            l.prefixes.push(s.prefix.clone());
            if let Some(v) = &r.style {
                l.style = Some(v.clone()).filter(|v| !v.is_empty());
            }
            if let Some(v) = &r.media {
                l.media = v.clone();
            }
            if let Some(v) = r.order {
                l.order = match v {
                    OrderWord::Fallback => ProcessorOrder::Fallback,
                    OrderWord::Instead => ProcessorOrder::Instead,
                    OrderWord::Before => ProcessorOrder::Before,
                    OrderWord::After => ProcessorOrder::After,
                };
            }
            // AxKit: the inner level's processors run first, then the
            // inherited ones, unless the inner level resets them.
            let mut processors = s.processors.clone();
            if r.reset != Some(true) {
                processors.append(&mut l.processors);
            }
            l.processors = processors;
            if let Some(v) = &r.client_stages {
                l.client_stages = Arc::from(v.clone());
            }
            if let Some(v) = r.passthru {
                l.passthru = v;
                l.passthru_set = true;
            }
            if let Some(v) = r.negotiate {
                l.negotiate = v;
            }
            if let Some(v) = &r.source_type {
                // "" turns an inherited type off; validated at load.
                l.source_type = Some(v.trim().to_string()).filter(|v| !v.is_empty());
            }
            if let Some(v) = &r.params {
                l.params = match v {
                    ParamSetting::Word(w) if w == "none" => ParamPolicy::None,
                    ParamSetting::Word(_) => ParamPolicy::All,
                    ParamSetting::List(names) => ParamPolicy::Only(names.clone()),
                };
            }
            if let Some(v) = &r.index {
                l.index = Some(v.clone()).filter(|v| !v.is_empty());
            }
            if let Some(v) = r.directories {
                l.directories = v;
            }
            if let Some(v) = r.xinclude {
                l.xinclude = v;
            }
            if let Some(v) = &r.xsl_sort {
                // Validated at load.
                l.xsl_sort = XslSort::parse(v).unwrap_or(l.xsl_sort);
            }
            if let Some(v) = r.debug_errors {
                l.debug_errors = v;
            }
            if let Some(v) = &r.cache_control {
                // "" turns an inherited setting off; validated at load.
                l.cache_control = http::HeaderValue::from_str(v)
                    .ok()
                    .filter(|v| !v.is_empty());
            }
            if let Some(v) = &r.trace {
                l.trace = Some(v.clone()).filter(|p| !p.as_os_str().is_empty());
            }
            if r.error_stylesheet.is_some() {
                l.error_stylesheet = s.error_stylesheet.clone();
            }
            if s.output_charset.is_some() {
                l.output_charset = s.output_charset.clone();
            }
            if let Some(v) = &r.style_key {
                l.style_key = Some(v.clone()).filter(|v| !v.is_empty());
            }
            if let Some(v) = &r.style_cookie {
                l.style_cookie = Some(v.clone()).filter(|v| !v.is_empty());
            }
            if let Some(v) = r.path_info {
                l.path_info = v;
            }
            if let Some(v) = r.suffix {
                l.suffix = v;
            }
            if let Some(v) = &s.ua_styles {
                l.ua_styles = v.clone();
            }
            if let Some(v) = &s.media_rules {
                l.media_rules = v.clone();
            }
            if let Some(source) = &s.source {
                l.source = source.clone();
            }
            if r.private == Some(true) {
                l.private = true;
            }
            if let Some(v) = r.serve_programs {
                l.serve_programs = v;
            }
            if let Some(types) = &s.types {
                for (mime, lang) in types {
                    // Names were checked against the registry at load.
                    let _ = Arc::make_mut(&mut l.registry).register(mime, Arc::clone(&lang.0));
                }
            }
        }
        l.hash = location_hash(&l);
        l
    }
}

/// The merged locations by the sections they merge (foldhash: looked up
/// on every request).
type MergedMemo = HashMap<Vec<usize>, Arc<Location>, foldhash::quality::RandomState>;

/// Bound of the merged-location memo (it holds one entry per distinct set
/// of matching sections, which nested prefixes keep small).
const MAX_MERGED: usize = 1024;

/// Does a location prefix cover this URL path (on segment boundaries)?
/// The directory a configuration file is in (`.` for a bare name such as
/// `axle.toml`, whose `parent()` is the empty path).
pub fn file_directory(file: &Path) -> PathBuf {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn prefix_matches(prefix: &str, path: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    prefix.is_empty()
        || path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The span of `field = ...` inside a table's span (for errors on a value
/// whose own position toml does not keep), else the table's span.
fn location_hash(l: &Location) -> ContentHash {
    let mut k = KeyBuilder::new("location");
    k.str(l.style.as_deref().unwrap_or("")).str(&l.media);
    k.str(&format!("{:?}", l.order))
        .str(&format!("{:?}", l.params));
    k.u64(u64::from(l.xinclude) | (u64::from(l.xsl_sort == XslSort::Unicode) << 1))
        .u64(u64::from(l.directories));
    k.str(l.index.as_deref().unwrap_or(""));
    k.str(&match &l.output_charset {
        Some(OutputCharset::Fixed(e)) => e.name().to_string(),
        Some(OutputCharset::Accept) => "accept".to_string(),
        None => String::new(),
    });
    k.u64(l.processors.len() as u64);
    for p in &l.processors {
        k.str(&p.pi.r#type)
            .str(&p.pi.href)
            .str(&format!("{:?}", p.when));
    }
    k.str(&format!("{:?}", l.registry));
    match &l.source {
        Some(mount) => k.str(&mount.prefix).str(&mount.provider.describe()),
        None => k.str("files"),
    };
    k.u64(u64::from(l.private));
    k.finish_hash()
}

#[cfg(test)]
mod doc_keys;
#[cfg(test)]
mod tests;
