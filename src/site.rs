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

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::Deserialize;
use toml::Spanned;

use crate::cache::{ContentHash, KeyBuilder};
use crate::chain::{Processor, ProcessorOrder, When};
use crate::language::{Language, Registry};
use crate::prolog::StylesheetPi;

/// A problem in the configuration file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {key}: {message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The key (e.g. `location."/docs".processor[1].uri`).
    pub key: String,
    /// What is wrong.
    pub message: String,
}

// ---------------------------------------------------------------------------
// The file format

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileFormat {
    #[serde(default)]
    location: BTreeMap<String, Section>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Section {
    style: Option<String>,
    media: Option<String>,
    order: Option<OrderWord>,
    reset: Option<bool>,
    passthru: Option<bool>,
    params: Option<ParamSetting>,
    index: Option<String>,
    directories: Option<bool>,
    xinclude: Option<bool>,
    trace: Option<PathBuf>,
    error_stylesheet: Option<Spanned<String>>,
    output_charset: Option<Spanned<String>>,
    style_key: Option<String>,
    style_cookie: Option<String>,
    path_info: Option<bool>,
    suffix: Option<bool>,
    user_agent_styles: Option<Vec<Spanned<UaStyle>>>,
    media_rules: Option<Vec<Spanned<MediaRuleFormat>>>,
    types: Option<BTreeMap<String, String>>,
    #[serde(default)]
    processor: Vec<Spanned<ProcessorFormat>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum OrderWord {
    Fallback,
    Instead,
    Before,
    After,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
enum ParamSetting {
    Word(String),
    List(Vec<String>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct UaStyle {
    pattern: String,
    style: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct MediaRuleFormat {
    user_agent: Option<String>,
    accept: Option<String>,
    media: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProcessorFormat {
    r#type: String,
    href: String,
    root: Option<String>,
    doctype: Option<String>,
    dtd: Option<String>,
    uri: Option<String>,
    style: Option<String>,
    media: Option<String>,
}

// ---------------------------------------------------------------------------
// Validated sections

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

/// A Language in a section's type map (Debug shows its name).
#[derive(Clone)]
struct LangRef(Arc<dyn Language>);

impl std::fmt::Debug for LangRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name())
    }
}

#[derive(Debug, Clone)]
struct ValidSection {
    prefix: String,
    raw: Section,
    processors: Vec<Processor>,
    ua_styles: Option<Vec<UaStyleRule>>,
    media_rules: Option<Vec<MediaRule>>,
    types: Option<Vec<(String, LangRef)>>,
    error_stylesheet: Option<StylesheetPi>,
    output_charset: Option<OutputCharset>,
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
    /// Which request params reach stylesheets.
    pub params: ParamPolicy,
    /// Directory index document name (None: no index).
    pub index: Option<String>,
    /// Directory URLs produce a `filelist` document (AxHandleDirs).
    pub directories: bool,
    /// Process XInclude in source documents.
    pub xinclude: bool,
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
    /// Hash of everything above that can change output.
    pub hash: ContentHash,
}

/// A loaded, validated configuration.
#[derive(Debug, Clone)]
pub struct SiteConfig {
    sections: Vec<ValidSection>,
    registry: Registry,
    source: Option<PathBuf>,
    /// Merged locations by the sections they merge (prefix chains, so few;
    /// a map, not a cache: this is read on every request).
    merged: Arc<RwLock<MergedMemo>>,
}

impl SiteConfig {
    /// No file: every path gets the defaults.
    pub fn defaults(registry: Registry) -> SiteConfig {
        SiteConfig {
            sections: Vec::new(),
            registry,
            source: None,
            merged: Arc::default(),
        }
    }

    /// The file this was loaded from.
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// Loads and validates `path`; `registry` names the Languages that
    /// `types` may refer to.
    pub fn load(path: &Path, registry: Registry) -> Result<SiteConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            line: None,
            key: "(file)".into(),
            message: e.to_string(),
        })?;
        let mut site = Self::parse(&text, path, registry)?;
        // Canonical, so the server can recognise the file under any
        // spelling of the root (and never serve it).
        site.source = Some(path.canonicalize().unwrap_or_else(|_| path.to_path_buf()));
        Ok(site)
    }

    /// Parses and validates configuration text (`file` names it in errors).
    pub fn parse(text: &str, file: &Path, registry: Registry) -> Result<SiteConfig, ConfigError> {
        let err =
            |span: Option<std::ops::Range<usize>>, key: String, message: String| ConfigError {
                file: file.to_path_buf(),
                line: span.map(|s| line_of(text, s.start)),
                key,
                message,
            };
        let format: FileFormat = toml::from_str(text).map_err(|e| {
            let message = e.message().to_string();
            let key = e.span().map_or_else(
                || "(syntax)".to_string(),
                |span| key_at(text, span.start, &message),
            );
            err(e.span(), key, message)
        })?;
        let mut sections = Vec::new();
        // Where a string first appears in the file: the line for errors on
        // values whose position toml does not keep.
        let find = |needle: &str, from: usize| {
            let rest = text.get(from..)?;
            rest.find(needle).map(|i| from + i..from + i + needle.len())
        };
        for (prefix, section) in format.location {
            let span = find(&format!("{prefix:?}"), 0).unwrap_or(0..0);
            let key = format!("location.{prefix:?}");
            if !prefix.starts_with('/') {
                return Err(err(
                    Some(span),
                    key,
                    "a location is a URL path prefix starting with '/'".into(),
                ));
            }
            sections.push(validate(
                prefix,
                section,
                &find,
                &registry,
                &|span, k, m| err(span, format!("{key}.{k}"), m),
            )?);
        }
        // Outermost first: shorter prefixes contain longer ones.
        sections.sort_by(|a, b| {
            a.prefix
                .len()
                .cmp(&b.prefix.len())
                .then(a.prefix.cmp(&b.prefix))
        });
        Ok(SiteConfig {
            sections,
            registry,
            source: Some(file.to_path_buf()),
            merged: Arc::default(),
        })
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
            params: ParamPolicy::All,
            index: Some("index.xml".into()),
            directories: false,
            xinclude: false,
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
            if let Some(v) = r.passthru {
                l.passthru = v;
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
            if let Some(v) = &r.trace {
                l.trace = Some(v.clone()).filter(|p| !p.as_os_str().is_empty());
            }
            if s.error_stylesheet.is_some() {
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
fn field_span(
    find: &Finder<'_>,
    table: &std::ops::Range<usize>,
    field: &str,
) -> std::ops::Range<usize> {
    find(&format!("{field} "), table.start)
        .or_else(|| find(&format!("{field}="), table.start))
        .filter(|found| found.start < table.end.max(table.start + 1))
        .unwrap_or_else(|| table.clone())
}

/// Searches the configuration text for a string from an offset.
type Finder<'a> = dyn Fn(&str, usize) -> Option<std::ops::Range<usize>> + 'a;

/// The dotted key of the table around `offset` (from the last table header
/// before it, with an index for arrays of tables), plus the field an
/// "unknown field" message names: `location."/".processor[0].bogus`.
fn key_at(text: &str, offset: usize, message: &str) -> String {
    let before = text.get(..offset).unwrap_or(text);
    let mut header: Option<(String, bool)> = None;
    for line in before.lines() {
        let t = line.trim();
        if let Some(inner) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            header = Some((inner.trim().to_string(), true));
        } else if let Some(inner) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            header = Some((inner.trim().to_string(), false));
        }
    }
    let mut key = match header {
        Some((name, true)) => {
            let count = before
                .lines()
                .filter(|l| {
                    l.trim()
                        .strip_prefix("[[")
                        .is_some_and(|r| r.split("]]").next().map(str::trim) == Some(name.as_str()))
                })
                .count();
            format!("{name}[{}]", count.saturating_sub(1))
        }
        Some((name, false)) => name,
        None => String::new(),
    };
    if let Some(field) = message
        .strip_prefix("unknown field `")
        .and_then(|r| r.split('`').next())
    {
        if !key.is_empty() {
            key.push('.');
        }
        key.push_str(field);
    }
    if key.is_empty() {
        "(syntax)".to_string()
    } else {
        key
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |t| t.matches('\n').count() + 1)
}

type ErrFn<'a> = dyn Fn(Option<std::ops::Range<usize>>, String, String) -> ConfigError + 'a;

fn regex_of(
    pattern: &str,
    span: std::ops::Range<usize>,
    key: String,
    err: &ErrFn<'_>,
) -> Result<regex::Regex, ConfigError> {
    regex::Regex::new(pattern).map_err(|e| err(Some(span), key, format!("invalid regex: {e}")))
}

fn validate(
    prefix: String,
    raw: Section,
    find: &Finder<'_>,
    registry: &Registry,
    err: &ErrFn<'_>,
) -> Result<ValidSection, ConfigError> {
    let mut processors = Vec::new();
    for (i, p) in raw.processor.iter().enumerate() {
        let span = p.span();
        let p = p.get_ref();
        let key = |k: &str| format!("processor[{i}].{k}");
        if registry.lookup(&p.r#type, &p.href).is_none() {
            return Err(err(
                Some(span),
                key("type"),
                format!("no Language is registered for '{}'", p.r#type),
            ));
        }
        if p.href.is_empty() {
            return Err(err(
                Some(span),
                key("href"),
                "href must not be empty".into(),
            ));
        }
        let uri = match &p.uri {
            Some(u) => Some(regex_of(
                u,
                field_span(find, &span, "uri"),
                key("uri"),
                err,
            )?),
            None => None,
        };
        processors.push(Processor {
            pi: StylesheetPi {
                href: p.href.clone(),
                r#type: p.r#type.clone(),
                ..Default::default()
            },
            when: When {
                root: p.root.clone(),
                doctype: p.doctype.clone(),
                dtd: p.dtd.clone(),
                uri,
                style: p.style.clone(),
                media: p.media.clone(),
            },
        });
    }
    let ua_styles = match &raw.user_agent_styles {
        Some(list) => Some(
            list.iter()
                .enumerate()
                .map(|(i, r)| {
                    Ok(UaStyleRule {
                        pattern: regex_of(
                            &r.get_ref().pattern,
                            r.span(),
                            format!("user-agent-styles[{i}].pattern"),
                            err,
                        )?,
                        style: r.get_ref().style.clone(),
                    })
                })
                .collect::<Result<Vec<_>, ConfigError>>()?,
        ),
        None => None,
    };
    let media_rules = match &raw.media_rules {
        Some(list) => Some(
            list.iter()
                .enumerate()
                .map(|(i, r)| {
                    let f = r.get_ref();
                    if f.user_agent.is_none() && f.accept.is_none() {
                        return Err(err(
                            Some(r.span()),
                            format!("media-rules[{i}]"),
                            "a media rule needs user-agent and/or accept".into(),
                        ));
                    }
                    Ok(MediaRule {
                        user_agent: match &f.user_agent {
                            Some(p) => Some(regex_of(
                                p,
                                r.span(),
                                format!("media-rules[{i}].user-agent"),
                                err,
                            )?),
                            None => None,
                        },
                        accept: f.accept.clone(),
                        media: f.media.clone(),
                    })
                })
                .collect::<Result<Vec<_>, ConfigError>>()?,
        ),
        None => None,
    };
    let types = match &raw.types {
        Some(map) => {
            let mut out = Vec::new();
            for (mime, name) in map {
                let lang = registry.by_name(name).ok_or_else(|| {
                    err(
                        find(&format!("{mime:?}"), 0),
                        format!("types.{mime:?}"),
                        format!("no Language named '{name}' is registered"),
                    )
                })?;
                out.push((mime.clone(), LangRef(lang)));
            }
            Some(out)
        }
        None => None,
    };
    if let Some(ParamSetting::Word(w)) = &raw.params {
        if w != "all" && w != "none" {
            return Err(err(
                None,
                "params".into(),
                format!("'{w}': use \"all\", \"none\" or a list of names"),
            ));
        }
    }
    let error_stylesheet = raw.error_stylesheet.as_ref().map(|s| StylesheetPi {
        href: s.get_ref().clone(),
        r#type: "text/xsl".into(),
        ..Default::default()
    });
    let output_charset = match &raw.output_charset {
        Some(c) if c.get_ref().eq_ignore_ascii_case("accept") => Some(OutputCharset::Accept),
        Some(c) => Some(OutputCharset::Fixed(
            encoding_rs::Encoding::for_label(c.get_ref().as_bytes()).ok_or_else(|| {
                err(
                    Some(c.span()),
                    "output-charset".into(),
                    format!("unknown charset '{}'", c.get_ref()),
                )
            })?,
        )),
        None => None,
    };
    Ok(ValidSection {
        prefix,
        raw,
        processors,
        ua_styles,
        media_rules,
        types,
        error_stylesheet,
        output_charset,
    })
}

fn location_hash(l: &Location) -> ContentHash {
    let mut k = KeyBuilder::new("location");
    k.str(l.style.as_deref().unwrap_or("")).str(&l.media);
    k.str(&format!("{:?}", l.order))
        .str(&format!("{:?}", l.params));
    k.u64(u64::from(l.xinclude)).u64(u64::from(l.directories));
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
    k.finish_hash()
}

#[cfg(test)]
mod tests;
