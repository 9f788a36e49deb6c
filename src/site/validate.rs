//! Validation: from the file format to sections the merge can use, with
//! regexes compiled, Languages and charsets looked up, and every problem
//! reported with the key and line it is at.

use std::sync::Arc;

use super::format::{ParamSetting, Section};
use super::{ConfigError, MediaRule, OutputCharset, UaStyleRule};
use crate::chain::{Processor, When};
use crate::language::{Language, Registry};
use crate::prolog::StylesheetPi;

#[derive(Clone)]
pub(super) struct LangRef(pub(super) Arc<dyn Language>);

impl std::fmt::Debug for LangRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name())
    }
}

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
}

pub(super) fn field_span(
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
pub(super) type Finder<'a> = dyn Fn(&str, usize) -> Option<std::ops::Range<usize>> + 'a;

/// The dotted key of the table around `offset` (from the last table header
/// before it, with an index for arrays of tables), plus the field an
/// "unknown field" message names: `location."/".processor[0].bogus`.
pub(super) fn key_at(text: &str, offset: usize, message: &str) -> String {
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

pub(super) fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |t| t.matches('\n').count() + 1)
}

pub(super) type ErrFn<'a> =
    dyn Fn(Option<std::ops::Range<usize>>, String, String) -> ConfigError + 'a;

pub(super) fn regex_of(
    pattern: &str,
    span: std::ops::Range<usize>,
    key: String,
    err: &ErrFn<'_>,
) -> Result<regex::Regex, ConfigError> {
    regex::Regex::new(pattern).map_err(|e| err(Some(span), key, format!("invalid regex: {e}")))
}

pub(super) fn validate(
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
