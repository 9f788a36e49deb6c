//! Validation: from the file format to sections the merge can use, with
//! regexes compiled, Languages and charsets looked up, and every problem
//! reported with the key and line it is at.

use std::path::Path;
use std::sync::Arc;

use super::format::{ParamSetting, Section};
use super::references::Reference;
use super::spans::{Spans, join};
use super::{ConfigError, MediaRule, OutputCharset, UaStyleRule, XslSort};
use crate::chain::{Processor, When};
use crate::language::{Language, Registry};
use crate::prolog::StylesheetPi;

/// A Language in a section's type map (Debug shows its name).
#[derive(Clone)]
pub(super) struct LangRef(pub(super) Arc<dyn Language>);

impl std::fmt::Debug for LangRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name())
    }
}

/// A section, validated: what the merge reads.
#[derive(Debug, Clone)]
pub(super) struct ValidSection {
    pub(super) prefix: String,
    pub(super) raw: Section,
    pub(super) processors: Vec<Processor>,
    pub(super) ua_styles: Option<Vec<UaStyleRule>>,
    pub(super) media_rules: Option<Vec<MediaRule>>,
    pub(super) types: Option<Vec<(String, LangRef)>>,
    pub(super) error_stylesheet: Option<StylesheetPi>,
    pub(super) output_charset: Option<OutputCharset>,
    /// The files it names (processor hrefs, the error stylesheet).
    pub(super) references: Vec<Reference>,
    /// Its `provider`: `Some(None)` for `type = "files"` (the file tree,
    /// undoing an outer section's source).
    pub(super) source: Option<Option<crate::dynamic::Mount>>,
    /// Problems that do not stop the site (a program that cannot be run
    /// yet): warned about at start, refused by `axle check`.
    pub(super) problems: Vec<ConfigError>,
}

impl ValidSection {
    /// A section that sets nothing but a dynamic source (one mounted
    /// through the server builder).
    pub(super) fn mounted(mount: crate::dynamic::Mount) -> ValidSection {
        ValidSection {
            prefix: mount.prefix.clone(),
            raw: Section::default(),
            processors: Vec::new(),
            ua_styles: None,
            media_rules: None,
            types: None,
            error_stylesheet: None,
            output_charset: None,
            references: Vec::new(),
            source: Some(Some(mount)),
            problems: Vec::new(),
        }
    }
}

/// Where errors in one section are: the file, its text and keys, and the
/// section's own key (`location."/docs"`).
pub(super) struct Here<'a> {
    /// The file, for errors.
    pub(super) file: &'a Path,
    /// Its text.
    pub(super) text: &'a str,
    /// Its keys.
    pub(super) spans: &'a Spans,
    /// The section's key.
    pub(super) section: String,
}

impl Here<'_> {
    /// The full key of `key` (relative to the section; `""` is the section).
    pub(super) fn key(&self, key: &str) -> String {
        if key.is_empty() {
            self.section.clone()
        } else if key.starts_with('[') {
            format!("{}{key}", self.section)
        } else {
            format!("{}.{key}", self.section)
        }
    }

    /// The line of a full key (or of the nearest key above it in the file).
    pub(super) fn line(&self, full_key: &str) -> Option<usize> {
        self.spans
            .start_of(full_key)
            .map(|offset| line_of(self.text, offset))
    }

    /// An error at `key` (relative to the section).
    pub(super) fn err(&self, key: &str, message: impl Into<String>) -> ConfigError {
        let key = self.key(key);
        ConfigError {
            file: self.file.to_path_buf(),
            line: self.line(&key),
            key,
            message: message.into(),
        }
    }
}

/// The 1-based line of a byte offset.
pub(super) fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |t| t.matches('\n').count() + 1)
}

/// The error for what serde (through `toml`) refused: the full key of the
/// span it names (plus the field a "missing field" message names), at the
/// line of that span.
pub(super) fn serde_error(
    file: &Path,
    text: &str,
    spans: &Spans,
    e: &toml::de::Error,
) -> ConfigError {
    let message = super::errors::suggest_near_key(e.message());
    let key = match e.span() {
        Some(span) => match spans.key_at(&span) {
            Some(key) => with_named_field(key, &message),
            // Not TOML at all: the table the error is in.
            None => header_key_at(text, span.start, &message),
        },
        None => "(syntax)".to_string(),
    };
    ConfigError {
        file: file.to_path_buf(),
        line: e.span().map(|s| line_of(text, s.start)),
        key,
        message,
    }
}

/// `key`, plus the field a "missing field `x`" or "unknown field `x`"
/// message names when `key` is the table rather than the field.
fn with_named_field(key: &str, message: &str) -> String {
    let field = ["missing field `", "unknown field `"]
        .iter()
        .find_map(|p| message.strip_prefix(p))
        .and_then(|r| r.split('`').next());
    match field {
        Some(field) if !key.ends_with(&join("", field)) => join(key, field),
        _ => key.to_string(),
    }
}

/// For text that is not valid TOML: the dotted key of the table around
/// `offset` (from the last table header before it, with an index for
/// arrays of tables), plus the field an "unknown field" message names.
fn header_key_at(text: &str, offset: usize, message: &str) -> String {
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
    let key = match header {
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
    if key.is_empty() {
        "(syntax)".to_string()
    } else {
        with_named_field(&key, message)
    }
}

fn regex_of(pattern: &str, key: &str, here: &Here<'_>) -> Result<regex::Regex, ConfigError> {
    regex::Regex::new(pattern).map_err(|e| here.err(key, format!("invalid regex: {e}")))
}

/// Validates one section (`here.section` names it in errors): every
/// problem in it, not just the first.
pub(super) fn validate(
    prefix: String,
    raw: Section,
    registry: &Registry,
    root: &Path,
    here: &Here<'_>,
) -> Result<ValidSection, Vec<ConfigError>> {
    let mut errors = Vec::new();
    if !prefix.starts_with('/') {
        errors.push(here.err("", "a location is a URL path prefix starting with '/'"));
    }
    // The value, or None with its error kept.
    fn keep<T>(errors: &mut Vec<ConfigError>, r: Result<T, ConfigError>) -> Option<T> {
        r.map_err(|e| errors.push(e)).ok()
    }
    let mut processors = Vec::new();
    for (i, p) in raw.processor.iter().enumerate() {
        let key = |k: &str| format!("processor[{i}].{k}");
        if registry.lookup(&p.r#type, &p.href).is_none() {
            errors.push(here.err(
                &key("type"),
                format!("no Language is registered for '{}'", p.r#type),
            ));
        }
        if p.href.is_empty() {
            errors.push(here.err(&key("href"), "href must not be empty"));
        }
        let uri = match &p.uri {
            Some(u) => keep(&mut errors, regex_of(u, &key("uri"), here)),
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
    let ua_styles = raw.user_agent_styles.as_ref().map(|list| {
        list.iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let key = format!("user-agent-styles[{i}].pattern");
                let pattern = keep(&mut errors, regex_of(&r.pattern, &key, here))?;
                Some(UaStyleRule {
                    pattern,
                    style: r.style.clone(),
                })
            })
            .collect::<Vec<_>>()
    });
    let media_rules = raw.media_rules.as_ref().map(|list| {
        list.iter()
            .enumerate()
            .filter_map(|(i, f)| {
                if f.user_agent.is_none() && f.accept.is_none() {
                    errors.push(here.err(
                        &format!("media-rules[{i}]"),
                        "a media rule needs user-agent and/or accept",
                    ));
                    return None;
                }
                let user_agent = match &f.user_agent {
                    Some(p) => Some(keep(
                        &mut errors,
                        regex_of(p, &format!("media-rules[{i}].user-agent"), here),
                    )?),
                    None => None,
                };
                Some(MediaRule {
                    user_agent,
                    accept: f.accept.clone(),
                    media: f.media.clone(),
                })
            })
            .collect::<Vec<_>>()
    });
    let types = raw.types.as_ref().map(|map| {
        let mut out = Vec::new();
        for (mime, name) in map {
            match registry.by_name(name) {
                Some(lang) => out.push((mime.clone(), LangRef(lang))),
                None => errors.push(here.err(
                    &join("types", mime),
                    format!("no Language named '{name}' is registered"),
                )),
            }
        }
        out
    });
    if let Some(ParamSetting::Word(w)) = &raw.params
        && w != "all"
        && w != "none"
    {
        errors.push(here.err(
            "params",
            format!("'{w}': use \"all\", \"none\" or a list of names"),
        ));
    }
    // "" turns an inherited error stylesheet off.
    let error_stylesheet = raw
        .error_stylesheet
        .as_ref()
        .filter(|s| !s.is_empty())
        .map(|s| StylesheetPi {
            href: s.clone(),
            r#type: "text/xsl".into(),
            ..Default::default()
        });
    if let Some(v) = &raw.cache_control
        && http::HeaderValue::from_str(v).is_err()
    {
        errors.push(here.err(
            "cache-control",
            format!("'{v}' is not a header value (visible ASCII, e.g. \"public, max-age=300\")"),
        ));
    }
    if let Some(v) = &raw.source_type
        && !v.trim().is_empty()
        && !is_media_type(v)
    {
        errors.push(here.err(
            "source-type",
            format!("'{v}' is not a media type (type/subtype, e.g. \"application/atom+xml\")"),
        ));
    }
    if let Some(v) = &raw.xsl_sort
        && XslSort::parse(v).is_none()
    {
        errors.push(here.err(
            "xsl-sort",
            format!("'{v}' is not a sort order (\"codepoint\", as xsltproc sorts, or \"unicode\", as browsers sort)"),
        ));
    }
    let output_charset = match &raw.output_charset {
        Some(c) if c.eq_ignore_ascii_case("accept") => Some(OutputCharset::Accept),
        Some(c) => match encoding_rs::Encoding::for_label(c.as_bytes()) {
            Some(encoding) => Some(OutputCharset::Fixed(encoding)),
            None => {
                errors.push(here.err("output-charset", format!("unknown charset '{c}'")));
                None
            }
        },
        None => None,
    };
    let mut references = Vec::new();
    let mut names = |key: String, href: &str| {
        let key = here.key(&key);
        references.push(Reference {
            line: here.line(&key),
            key,
            href: href.to_string(),
        });
    };
    for (i, p) in raw.processor.iter().enumerate() {
        // A Language that needs no file (a filter) is not held to one.
        let optional = registry
            .lookup(&p.r#type, &p.href)
            .is_some_and(|l| l.resource_optional());
        if !optional {
            names(format!("processor[{i}].href"), &p.href);
        }
    }
    if let Some(sheet) = &error_stylesheet {
        names("error-stylesheet".into(), &sheet.href);
    }
    let mut problems = Vec::new();
    let source = match &raw.provider {
        Some(p) => keep(
            &mut errors,
            super::sources::mount(&prefix, p, root, here, &mut problems),
        ),
        None => None,
    };
    if !errors.is_empty() {
        // Refused anyway: its programs that cannot run are named too.
        errors.extend(problems);
        return Err(errors);
    }
    Ok(ValidSection {
        prefix,
        raw,
        processors,
        ua_styles,
        media_rules,
        types,
        error_stylesheet,
        output_charset,
        references,
        source,
        problems,
    })
}

/// Whether `v` is a media type Axle can send: `type/subtype` of token
/// characters, then parameters, all a valid header value.
fn is_media_type(v: &str) -> bool {
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    let essence = v.split(';').next().unwrap_or("").trim();
    http::HeaderValue::from_str(v).is_ok()
        && essence
            .split_once('/')
            .is_some_and(|(t, s)| token(t) && token(s))
}
