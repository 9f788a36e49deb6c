//! Chain selection: which stages a document goes through, from its
//! `<?xml-stylesheet?>` PIs. Pure: no I/O beyond confining the hrefs.
//!
//! Today: every PI that is not `alternate="yes"`, in document order, whose
//! type has a registered Language (others, such as `text/css` for browsers,
//! are skipped). [`Selection`] carries the chosen style and media so the
//! AxKit rules (titles, media, config processors) slot in here later.

use std::sync::Arc;

use crate::href::resolve_href;
use crate::language::{Language, Registry};
use crate::prolog::{Prolog, StylesheetPi};
use crate::provider::{ConfinedPath, FileProvider, ProviderError};

/// The style and media a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The chosen style (`None`: the default chain).
    pub style: Option<String>,
    /// The chosen media (`screen` by default).
    pub media: String,
}

impl Default for Selection {
    fn default() -> Self {
        Selection {
            style: None,
            media: "screen".to_string(),
        }
    }
}

/// One stage of a chain, before compilation.
#[derive(Clone)]
pub struct StageSpec {
    /// The PI's type.
    pub mime: String,
    /// The PI's href as written.
    pub href: String,
    /// The Language that runs it.
    pub language: Arc<dyn Language>,
    /// The stylesheet (resource) it names, confined to the root (for a
    /// Language whose resource is optional, possibly a
    /// [missing](ConfinedPath::is_missing) one).
    pub resource: ConfinedPath,
    /// For `href="#id"`: the ID of the stylesheet element embedded in the
    /// document (then `resource` is the document itself).
    pub fragment: Option<String>,
}

impl std::fmt::Debug for StageSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageSpec")
            .field("language", &self.language.name())
            .field("resource", &self.resource.rel())
            .finish()
    }
}

/// Why a chain cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// The stylesheet a PI names does not exist.
    #[error("stylesheet {href} (named by {document}) was not found")]
    Missing {
        /// The href as written.
        href: String,
        /// The document naming it.
        document: String,
    },
    /// The href points outside the root or off this machine.
    #[error("stylesheet {href} (named by {document}) is outside the document root")]
    Outside {
        /// The href as written.
        href: String,
        /// The document naming it.
        document: String,
    },
    /// A configured processor names a type no Language is registered for.
    #[error("no Language is registered for the type {type} (configured for {document})")]
    UnknownType {
        /// The MIME type.
        r#type: String,
        /// The document.
        document: String,
    },
    /// `href="#"`: an embedded stylesheet without an ID.
    #[error("href=\"{href}\" in {document} names no embedded stylesheet")]
    Embedded {
        /// The href as written.
        href: String,
        /// The document naming it.
        document: String,
    },
}

/// The media types AxKit recognises in a PI's `media` pseudo-attribute.
const MEDIA_TYPES: [&str; 9] = [
    "screen",
    "tty",
    "tv",
    "projection",
    "handheld",
    "print",
    "braille",
    "aural",
    "all",
];

/// Does a PI's `media` (default `screen`) include `media`? Tokens are split
/// on commas, each cut at its first character outside `[A-Za-z0-9-]` and
/// kept only if it is a known media type; `all` matches every media.
fn media_matches(pi: &StylesheetPi, media: &str) -> bool {
    media_tokens(pi).any(|token| token == media || token == "all")
}

/// Does a PI's `media` name `media` itself (not through `all`)? `axle
/// build` exports a media variant of a document only when one does.
pub(crate) fn names_media(pi: &StylesheetPi, media: &str) -> bool {
    media_tokens(pi).any(|token| token == media)
}

/// The known media types a PI's `media` lists (default `screen`).
fn media_tokens(pi: &StylesheetPi) -> impl Iterator<Item = &str> {
    let attr = pi.media.as_deref().unwrap_or("screen");
    attr.split(',').filter_map(|token| {
        let token = token.trim();
        let end = token
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(token.len());
        let token = &token[..end];
        MEDIA_TYPES.contains(&token).then_some(token)
    })
}

/// The PIs that apply for `selection`, in chain order, by AxKit's rules:
/// persistent PIs (no title, not alternate) always; with a chosen style, the
/// PIs whose title matches it case-insensitively, alternate or not; with no
/// chosen style, every titled non-alternate PI. PIs are filtered by media;
/// if none matches, the PIs for `screen` are used instead. Persistent PIs
/// come first, then the selected ones, each in document order.
pub fn applicable<'p>(prolog: &'p Prolog, selection: &Selection) -> Vec<&'p StylesheetPi> {
    let pick = |media: &str| -> Vec<&'p StylesheetPi> {
        let fits = |pi: &&StylesheetPi| media_matches(pi, media);
        let persistent = prolog
            .stylesheets
            .iter()
            .filter(|pi| pi.title.is_none() && !pi.alternate)
            .filter(fits);
        let selected = prolog
            .stylesheets
            .iter()
            .filter(|pi| match (&pi.title, &selection.style) {
                (Some(title), Some(style)) => title.eq_ignore_ascii_case(style),
                (Some(_), None) => !pi.alternate,
                (None, _) => false,
            })
            .filter(fits);
        persistent.chain(selected).collect()
    };
    let chosen = pick(&selection.media);
    if chosen.is_empty() && selection.media != "screen" {
        return pick("screen");
    }
    chosen
}

/// Does the chosen style name a titled PI of this document? (A style that
/// selects nothing must not create cache entries: AxKit's guard against
/// `?style=<random>`.)
pub fn style_selects_something(prolog: &Prolog, style: &str) -> bool {
    prolog.stylesheets.iter().any(|pi| {
        pi.title
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case(style))
    })
}

/// A configured processor (AxKit's `AxAddProcessor` and its conditional
/// kinds) and when it applies.
#[derive(Debug, Clone)]
pub struct Processor {
    /// Its type and href.
    pub pi: StylesheetPi,
    /// Its conditions (all that are set must hold).
    pub when: When,
}

impl Processor {
    /// An unconditional processor.
    pub fn always(r#type: &str, href: &str) -> Processor {
        Processor {
            pi: StylesheetPi {
                href: href.to_string(),
                r#type: r#type.to_string(),
                ..Default::default()
            },
            when: When::default(),
        }
    }
}

/// Conditions on a configured processor.
#[derive(Debug, Clone, Default)]
pub struct When {
    /// Root element, `{ns}local` or a plain name (AxAddRootProcessor).
    pub root: Option<String>,
    /// DOCTYPE public id (AxAddDocTypeProcessor).
    pub doctype: Option<String>,
    /// DOCTYPE system id (AxAddDTDProcessor).
    pub dtd: Option<String>,
    /// Regex on the request path (AxAddURIProcessor).
    pub uri: Option<regex::Regex>,
    /// Only for this style (case-insensitive).
    pub style: Option<String>,
    /// Only for this media.
    pub media: Option<String>,
}

impl When {
    /// Do the conditions hold for this document and request?
    pub fn holds(&self, prolog: &Prolog, uri: &str, selection: &Selection) -> bool {
        let doctype = prolog.doctype.as_ref();
        self.root.as_ref().is_none_or(|r| *r == prolog.root.clark())
            && self
                .doctype
                .as_ref()
                .is_none_or(|d| doctype.and_then(|t| t.public_id.as_ref()) == Some(d))
            && self
                .dtd
                .as_ref()
                .is_none_or(|d| doctype.and_then(|t| t.system_id.as_ref()) == Some(d))
            && self.uri.as_ref().is_none_or(|r| r.is_match(uri))
            && self.style.as_ref().is_none_or(|s| {
                selection
                    .style
                    .as_ref()
                    .is_some_and(|c| c.eq_ignore_ascii_case(s))
            })
            && self.media.as_ref().is_none_or(|m| *m == selection.media)
    }
}

/// How configured processors combine with a document's PI chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProcessorOrder {
    /// Only when no PI applies (AxKit: "PIs override these directives").
    #[default]
    Fallback,
    /// Always, and the PIs are ignored (AxKit's `AxIgnoreStylePI`).
    Instead,
    /// Before the PI chain.
    Before,
    /// After the PI chain.
    After,
}

/// Builds the chain for the document at `doc` (root-relative URL path) from
/// its applicable PIs and the configured `processors`, combined by `order`.
/// An unregistered type among the processors is an error, while a PI of an
/// unregistered type (such as `text/css`, meant for browsers) is skipped.
pub fn select(
    prolog: &Prolog,
    doc: &str,
    files: &FileProvider,
    registry: &Registry,
    selection: &Selection,
    processors: &[Processor],
    order: ProcessorOrder,
) -> Result<Vec<StageSpec>, ChainError> {
    let configured = || {
        let pis = processors
            .iter()
            .filter(|p| p.when.holds(prolog, doc, selection))
            .map(|p| &p.pi)
            .collect();
        build(pis, doc, files, registry, true)
    };
    if order == ProcessorOrder::Instead {
        return configured();
    }
    let mut stages = build(applicable(prolog, selection), doc, files, registry, false)?;
    match order {
        ProcessorOrder::Fallback if stages.is_empty() => configured(),
        ProcessorOrder::Before => {
            let mut all = configured()?;
            all.append(&mut stages);
            Ok(all)
        }
        ProcessorOrder::After => {
            stages.append(&mut configured()?);
            Ok(stages)
        }
        _ => Ok(stages),
    }
}

/// What a client's document (a request body) may choose through its PIs
/// (issue #36): each applicable PI must name a stylesheet *file* (never
/// an embedded `#id` stylesheet, never the document itself, `href="."`)
/// whose Language's name is in `allowed`. The
/// location's processors are not the client's choice and are not held to
/// it; with `order` [`ProcessorOrder::Instead`] the PIs choose nothing.
/// A PI of a type no Language is registered for chooses nothing either
/// (it is skipped, as for files). Returns why the document is refused.
pub fn client_choice_refused(
    prolog: &Prolog,
    selection: &Selection,
    order: ProcessorOrder,
    registry: &Registry,
    allowed: &[String],
) -> Option<String> {
    if order == ProcessorOrder::Instead {
        return None;
    }
    let allows = |name: &str| allowed.iter().any(|a| a.eq_ignore_ascii_case(name));
    for pi in applicable(prolog, selection) {
        let Some(language) = registry.lookup(&pi.r#type, &pi.href) else {
            continue;
        };
        let href = pi.href.trim();
        if href == "." || href.is_empty() {
            return Some(format!(
                "its <?xml-stylesheet href=\"{href}\"?> names the document itself as a stage ({}): a posted document may not choose what runs",
                language.name()
            ));
        }
        if href.starts_with('#') {
            return Some(format!(
                "its <?xml-stylesheet href=\"{href}\"?> names a stylesheet embedded in the document: a posted document may name only stylesheet files under the root"
            ));
        }
        if !allows(language.name()) {
            return Some(format!(
                "its <?xml-stylesheet type=\"{}\" href=\"{href}\"?> names a {} stage, which a posted document may not choose here (client-stages: {})",
                pi.r#type,
                language.name(),
                allowed.join(", ")
            ));
        }
    }
    None
}

fn build(
    pis: Vec<&StylesheetPi>,
    doc: &str,
    files: &FileProvider,
    registry: &Registry,
    strict: bool,
) -> Result<Vec<StageSpec>, ChainError> {
    let mut stages = Vec::new();
    for pi in pis {
        let err_doc = || doc.to_string();
        let Some(language) = registry.lookup(&pi.r#type, &pi.href) else {
            if strict {
                return Err(ChainError::UnknownType {
                    r#type: pi.r#type.clone(),
                    document: err_doc(),
                });
            }
            tracing::debug!(document = doc, r#type = %pi.r#type, "skipping PI of unregistered type");
            continue;
        };
        // The document itself is the resource: an embedded stylesheet
        // (`#id`), or AxKit's `href="."` (XSP's form).
        let fragment = match pi.href.strip_prefix('#') {
            Some("") => {
                return Err(ChainError::Embedded {
                    href: pi.href.clone(),
                    document: err_doc(),
                });
            }
            Some(id) => Some(Some(id.to_string())),
            None if pi.href == "." => Some(None),
            None => None,
        };
        if let Some(fragment) = fragment {
            let resource = files.confine(doc).map_err(|_| ChainError::Missing {
                href: pi.href.clone(),
                document: err_doc(),
            })?;
            stages.push(StageSpec {
                mime: pi.r#type.clone(),
                href: pi.href.clone(),
                language,
                resource,
                fragment,
            });
            continue;
        }
        let Some(url) = resolve_href(doc, &pi.href) else {
            return Err(ChainError::Outside {
                href: pi.href.clone(),
                document: err_doc(),
            });
        };
        // A Language whose resource is optional (a filter) takes an href
        // naming no file: the stage then depends on its absence.
        let confined = if language.resource_optional() {
            files.confine_optional(&url)
        } else {
            files.confine(&url)
        };
        let resource = match confined {
            Ok(p) => p,
            Err(ProviderError::NotFound(_)) => {
                return Err(ChainError::Missing {
                    href: pi.href.clone(),
                    document: err_doc(),
                });
            }
            Err(_) => {
                return Err(ChainError::Outside {
                    href: pi.href.clone(),
                    document: err_doc(),
                });
            }
        };
        stages.push(StageSpec {
            mime: pi.r#type.clone(),
            href: pi.href.clone(),
            language,
            resource,
            fragment: None,
        });
    }
    Ok(stages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_tokens_are_cut_at_the_first_character_outside_a_name() {
        let with_media = |media: &str| StylesheetPi {
            media: Some(media.to_string()),
            ..Default::default()
        };
        for (attr, media, want) in [
            // Cut at a space, a parenthesis or a semicolon: the media type
            // before it counts (HTML 4's rule, which AxKit followed).
            ("screen and (color)", "screen", true),
            ("print;", "print", true),
            ("projection, print", "print", true),
            ("handheld(x)", "handheld", true),
            // A hyphen is part of the name: `screen-x` is no media type.
            ("screen-x", "screen", false),
            ("all", "aural", true),
            ("tv", "screen", false),
        ] {
            assert_eq!(
                media_matches(&with_media(attr), media),
                want,
                "{attr:?} {media}"
            );
        }
        assert!(
            media_matches(&StylesheetPi::default(), "screen"),
            "screen by default"
        );
    }

    #[test]
    fn every_condition_of_a_processor_must_hold() {
        let prolog = Prolog {
            doctype: Some(crate::prolog::Doctype {
                name: "feed".into(),
                public_id: Some("-//X//DTD Feed//EN".into()),
                system_id: Some("feed.dtd".into()),
                internal_subset: false,
            }),
            root: crate::prolog::RootName {
                prefix: None,
                local: "feed".into(),
                namespace: Some("urn:x".into()),
            },
            ..Default::default()
        };
        let selection = Selection {
            style: Some("Print".into()),
            media: "handheld".into(),
        };
        let all = When {
            root: Some("{urn:x}feed".into()),
            doctype: Some("-//X//DTD Feed//EN".into()),
            dtd: Some("feed.dtd".into()),
            uri: Some(regex::Regex::new(r"^/news/").unwrap()),
            style: Some("print".into()),
            media: Some("handheld".into()),
        };
        assert!(all.holds(&prolog, "/news/a.xml", &selection));
        assert!(When::default().holds(&prolog, "/other.xml", &Selection::default()));
        // Each condition alone failing, every other one holding.
        type Spoil = fn(&mut When);
        let fails: [(&str, Spoil); 6] = [
            ("root", |w| w.root = Some("feed".into())),
            ("doctype", |w| w.doctype = Some("-//Y//EN".into())),
            ("dtd", |w| w.dtd = Some("other.dtd".into())),
            ("uri", |w| {
                w.uri = Some(regex::Regex::new("^/old/").unwrap())
            }),
            ("style", |w| w.style = Some("screen".into())),
            ("media", |w| w.media = Some("screen".into())),
        ];
        for (name, spoil) in fails {
            let mut w = all.clone();
            spoil(&mut w);
            assert!(!w.holds(&prolog, "/news/a.xml", &selection), "{name}");
        }
        // A style condition needs a chosen style; a DOCTYPE condition a
        // DOCTYPE.
        let style_only = When {
            style: Some("print".into()),
            ..Default::default()
        };
        assert!(!style_only.holds(&prolog, "/a.xml", &Selection::default()));
        let bare = Prolog::default();
        for w in [
            When {
                doctype: Some("-//X//DTD Feed//EN".into()),
                ..Default::default()
            },
            When {
                dtd: Some("feed.dtd".into()),
                ..Default::default()
            },
        ] {
            assert!(!w.holds(&bare, "/a.xml", &selection));
        }
    }

    #[test]
    fn a_style_selects_something_only_when_a_pi_has_that_title() {
        let prolog = Prolog {
            stylesheets: vec![
                pi("base.xsl", "text/xsl", false),
                StylesheetPi {
                    title: Some("Print".into()),
                    ..pi("print.xsl", "text/xsl", true)
                },
            ],
            ..Default::default()
        };
        assert!(style_selects_something(&prolog, "print"));
        assert!(!style_selects_something(&prolog, "screen"));
    }

    #[test]
    fn media_with_no_pi_falls_back_to_screen_and_screen_has_no_fallback() {
        let media = |href: &str, media: &str| StylesheetPi {
            media: Some(media.into()),
            ..pi(href, "text/xsl", false)
        };
        let prolog = Prolog {
            stylesheets: vec![media("screen.xsl", "screen"), media("tv.xsl", "tv")],
            ..Default::default()
        };
        let hrefs = |m: &str| -> Vec<String> {
            let selection = Selection {
                style: None,
                media: m.into(),
            };
            applicable(&prolog, &selection)
                .iter()
                .map(|p| p.href.to_string())
                .collect()
        };
        assert_eq!(hrefs("tv"), ["tv.xsl"]);
        assert_eq!(
            hrefs("handheld"),
            ["screen.xsl"],
            "nothing for handheld: screen's"
        );
        let only_tv = Prolog {
            stylesheets: vec![media("tv.xsl", "tv")],
            ..Default::default()
        };
        let screen = applicable(&only_tv, &Selection::default());
        assert!(screen.is_empty(), "screen falls back to nothing");
    }

    #[test]
    fn without_a_chosen_style_titled_alternates_do_not_apply() {
        let titled = |href: &str, title: &str, alternate: bool| StylesheetPi {
            href: href.into(),
            r#type: "text/xsl".into(),
            title: Some(title.into()),
            alternate,
            ..Default::default()
        };
        let prolog = Prolog {
            stylesheets: vec![
                pi("base.xsl", "text/xsl", false),
                titled("screen.xsl", "screen", false),
                titled("print.xsl", "print", true),
            ],
            ..Default::default()
        };
        let hrefs = |selection: &Selection| -> Vec<String> {
            applicable(&prolog, selection)
                .iter()
                .map(|p| p.href.to_string())
                .collect()
        };
        assert_eq!(hrefs(&Selection::default()), ["base.xsl", "screen.xsl"]);
        let print = Selection {
            style: Some("Print".into()),
            ..Default::default()
        };
        assert_eq!(hrefs(&print), ["base.xsl", "print.xsl"]);
    }

    fn pi(href: &str, ty: &str, alternate: bool) -> StylesheetPi {
        StylesheetPi {
            href: href.into(),
            r#type: ty.into(),
            alternate,
            ..Default::default()
        }
    }

    #[test]
    fn chains_follow_document_order_skipping_alternates_and_unknown_types() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let files = FileProvider::new(&root, crate::cache::Fingerprints::default()).unwrap();
        for f in ["a.xsl", "b.xsl", "c.xsl"] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        let prolog = Prolog {
            stylesheets: vec![
                pi("a.xsl", "text/xsl", false),
                pi("style.css", "text/css", false),
                pi("c.xsl", "text/xsl", true),
                pi("/b.xsl", "text/xsl", false),
            ],
            ..Default::default()
        };
        let chain = select(
            &prolog,
            "/doc.xml",
            &files,
            &Registry::default(),
            &Selection::default(),
            &[],
            ProcessorOrder::Fallback,
        )
        .unwrap();
        let names: Vec<&str> = chain.iter().map(|s| s.resource.rel()).collect();
        assert_eq!(names, ["/a.xsl", "/b.xsl"]);
    }

    #[test]
    fn missing_and_outside_stylesheets_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let files = FileProvider::new(&root, crate::cache::Fingerprints::default()).unwrap();
        let reg = Registry::default();
        let one = |href: &str| Prolog {
            stylesheets: vec![pi(href, "text/xsl", false)],
            ..Default::default()
        };
        let err = |href: &str| {
            select(
                &one(href),
                "/d.xml",
                &files,
                &reg,
                &Selection::default(),
                &[],
                ProcessorOrder::Fallback,
            )
            .unwrap_err()
        };
        assert!(matches!(err("nope.xsl"), ChainError::Missing { .. }));
        assert!(matches!(err("../x.xsl"), ChainError::Outside { .. }));
        assert!(matches!(err("#"), ChainError::Embedded { .. }));
    }

    #[test]
    fn processors_apply_only_when_no_pi_does() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let files = FileProvider::new(&root, crate::cache::Fingerprints::default()).unwrap();
        for f in ["pi.xsl", "conf.xsl"] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        let reg = Registry::default();
        let conf = [Processor::always("text/xsl", "/conf.xsl")];
        let none = Prolog::default();
        let with_pi = Prolog {
            stylesheets: vec![pi("pi.xsl", "text/xsl", false)],
            ..Default::default()
        };
        let sel = Selection::default();
        let rel = |p: &Prolog, order| -> Vec<String> {
            select(p, "/d.xml", &files, &reg, &sel, &conf, order)
                .unwrap()
                .iter()
                .map(|s| s.resource.rel().to_string())
                .collect()
        };
        assert_eq!(rel(&none, ProcessorOrder::Fallback), ["/conf.xsl"]);
        assert_eq!(rel(&with_pi, ProcessorOrder::Fallback), ["/pi.xsl"]);
        assert_eq!(rel(&with_pi, ProcessorOrder::Instead), ["/conf.xsl"]);
        assert_eq!(
            rel(&with_pi, ProcessorOrder::Before),
            ["/conf.xsl", "/pi.xsl"]
        );
        assert_eq!(
            rel(&with_pi, ProcessorOrder::After),
            ["/pi.xsl", "/conf.xsl"]
        );
        let unknown = [Processor::always("text/x-nope", "/conf.xsl")];
        assert!(matches!(
            select(
                &none,
                "/d.xml",
                &files,
                &reg,
                &sel,
                &unknown,
                ProcessorOrder::Fallback
            ),
            Err(ChainError::UnknownType { .. })
        ));
    }
}
