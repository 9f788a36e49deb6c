//! Proactive negotiation (RFC 9110 §12.5.1) between a document's two
//! representations where a location says `negotiate = true`: the rendered
//! page, and the source as it is (its `<?xml-stylesheet?>` PIs kept, in
//! its own media type).
//!
//! Why it exists: browsers are dropping client-side XSLT, so a feed or a
//! sitemap whose PI styled it in the browser must be rendered by the
//! server, yet a feed reader asking for the same URL must still get the
//! feed. Browsers and feed readers say so in `Accept`; this module reads
//! it. On a tie (`*/*`, no `Accept`, or both at the same quality) the
//! page wins: that is what a browser showed before.
//!
//! The page counts as `text/html` whatever its chain outputs: the choice
//! is made before rendering, so that a feed reader's request never
//! renders, and what a browser rendered from a PI was an HTML page.
//! (Counting `application/xhtml+xml` too would hand the page to a tool
//! asking for `application/*`, which wants XML.)

use axum::http::{HeaderMap, header};
use axum::response::Response;

use super::conn::Headers;
use crate::cache::ContentHash;
use crate::prolog::RootName;
use crate::provider::Source;
use crate::site::Location;

/// Which of a negotiating document's representations a client gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Representation {
    /// The page its stylesheet chain renders.
    Page,
    /// The source document, byte for byte.
    Source,
}

/// Atom's namespace (RFC 4287).
const ATOM_NS: &str = "http://www.w3.org/2005/Atom";
/// RSS 1.0's namespace (an RDF document whose channel is RSS).
const RSS1_NS: &str = "http://purl.org/rss/1.0/";
/// RDF's namespace: RSS 1.0's root is `rdf:RDF`.
const RDF_NS: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";

/// The media type a source is sent as: `configured` (`source-type`) if
/// set; else `application/atom+xml` for an Atom feed,
/// `application/rss+xml` for RSS (2.0's `<rss>`, or 1.0's `rdf:RDF` when
/// the document names RSS 1.0's namespace), `application/xml` otherwise.
pub fn source_type(root: &RootName, source: &[u8], configured: Option<&str>) -> String {
    if let Some(t) = configured {
        return t.to_string();
    }
    let rss1 = || {
        source
            .windows(RSS1_NS.len())
            .any(|w| w == RSS1_NS.as_bytes())
    };
    let t = match (root.namespace.as_deref(), root.local.as_str()) {
        (Some(ATOM_NS), "feed") => "application/atom+xml",
        (None, "rss") => "application/rss+xml",
        (Some(RDF_NS), "RDF") if rss1() => "application/rss+xml",
        _ => "application/xml",
    };
    t.to_string()
}

/// The source's media type when `source` is a document to negotiate
/// here: one its PIs or the location give a stylesheet chain; None for a
/// document with one representation (or a prolog the scanner cannot
/// read: the render path reports that).
pub(crate) fn negotiated_type(location: &Location, source: &Source) -> Option<String> {
    let prolog = crate::prolog::scan(&source.bytes).ok()?;
    if prolog.stylesheets.is_empty() && location.processors.is_empty() {
        return None;
    }
    Some(source_type(
        &prolog.root,
        &source.bytes,
        location.source_type.as_deref(),
    ))
}

/// The source representation: the bytes as stored, as `source_type`,
/// never transcoded nor cached, with `Vary: Accept` and an ETag of its
/// own (the page's is its body's hash; this one is derived from the
/// source's, so the two differ even when the bytes do not).
pub(crate) async fn source_response(
    app: &super::App,
    source: Source,
    source_type: &str,
    request_headers: &HeaderMap,
    location: &Location,
) -> Response {
    let tag = ContentHash::of(
        &[
            b"axle source representation\0".as_slice(),
            source.hash.as_bytes(),
        ]
        .concat(),
    );
    super::passthru::untransformed(
        app,
        source.bytes,
        tag,
        source_type,
        request_headers,
        location,
    )
    .await
}

/// One media range of an `Accept` header with its quality.
#[derive(Debug, PartialEq)]
struct Range<'a> {
    /// `type`, or `*`.
    kind: &'a str,
    /// `subtype`, or `*`.
    sub: &'a str,
    /// 0.0 to 1.0.
    q: f32,
}

impl Range<'_> {
    /// How specifically this range names `kind/sub`: None when it does not
    /// match; 3 for `type/subtype`, 2 for `application/xml` or `text/xml`
    /// naming an `…+xml` type (RFC 6839: such a type is XML, and a client
    /// asking for XML can read it), 1 for `type/*`, 0 for `*/*`.
    fn matches(&self, kind: &str, sub: &str) -> Option<u8> {
        let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
        let xml_suffix =
            sub.len() > 4 && sub.as_bytes()[sub.len() - 4..].eq_ignore_ascii_case(b"+xml");
        match (self.kind, self.sub) {
            ("*", "*") => Some(0),
            (k, "*") if same(k, kind) => Some(1),
            (k, s) if same(k, kind) && same(s, sub) => Some(3),
            (k, s)
                if xml_suffix && same(s, "xml") && (same(k, "application") || same(k, "text")) =>
            {
                Some(2)
            }
            _ => None,
        }
    }
}

/// The media ranges of every `Accept` field; a malformed range is skipped
/// (as if absent), a malformed `q` counts as 1 (RFC 9110 allows ignoring
/// what cannot be parsed; 1 keeps a sloppy client's explicit ask).
fn ranges<'a>(headers: &'a impl Headers) -> Vec<Range<'a>> {
    let mut out = Vec::new();
    for value in headers.each(&header::ACCEPT) {
        for item in value.split(',') {
            let mut parts = item.split(';');
            let media = parts.next().unwrap_or("").trim();
            let Some((kind, sub)) = media.split_once('/') else {
                continue;
            };
            let (kind, sub) = (kind.trim(), sub.trim());
            if kind.is_empty() || sub.is_empty() || (kind == "*" && sub != "*") {
                continue;
            }
            let q = parts
                .filter_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    k.trim().eq_ignore_ascii_case("q").then(|| v.trim())
                })
                .next()
                .map_or(1.0, |v| {
                    v.parse::<f32>()
                        .ok()
                        .filter(|q| !q.is_nan())
                        .map_or(1.0, |q| q.clamp(0.0, 1.0))
                });
            out.push(Range { kind, sub, q });
        }
    }
    out
}

/// The quality `ranges` give `media` (`type/subtype`, parameters
/// ignored): the q of the most specific range that matches it, 0 when
/// none does.
fn quality(ranges: &[Range<'_>], media: &str) -> f32 {
    let media = media.split(';').next().unwrap_or("").trim();
    let Some((kind, sub)) = media.split_once('/') else {
        return 0.0;
    };
    let mut best: Option<(u8, f32)> = None;
    for r in ranges {
        if let Some(s) = r.matches(kind, sub) {
            // Of two equally specific ranges, the first counts.
            if best.is_none_or(|(b, _)| s > b) {
                best = Some((s, r.q));
            }
        }
    }
    best.map_or(0.0, |(_, q)| q)
}

/// The media type the page counts as.
const PAGE_TYPE: &str = "text/html";

/// The media types a source may be sent as when the location names none.
const SOURCE_TYPES: [&str; 3] = [
    "application/atom+xml",
    "application/rss+xml",
    "application/xml",
];

/// The page's quality.
fn page_quality(ranges: &[Range<'_>]) -> f32 {
    quality(ranges, PAGE_TYPE)
}

/// The representation `headers` ask for, between the page and a source
/// of `source_type`: the source only when `Accept` gives it a strictly
/// higher quality than the page. No `Accept` (or one with no usable
/// range) means any type, so the page.
pub fn choose(headers: &impl Headers, source_type: &str) -> Representation {
    let ranges = ranges(headers);
    if ranges.is_empty() || quality(&ranges, source_type) <= page_quality(&ranges) {
        Representation::Page
    } else {
        Representation::Source
    }
}

/// Whether `headers` get the page whatever the source's type turns out
/// to be (`configured`, or any of those [`source_type`] gives): then the
/// page may be answered without reading the source (the hot memo).
pub fn surely_page(headers: &impl Headers, configured: Option<&str>) -> bool {
    let ranges = ranges(headers);
    if ranges.is_empty() {
        return true;
    }
    let page = page_quality(&ranges);
    match configured {
        Some(t) => quality(&ranges, t) <= page,
        None => SOURCE_TYPES.iter().all(|t| quality(&ranges, t) <= page),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accept(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    const CHROMIUM: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
    const FIREFOX: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    const FEED_READER: &str =
        "application/atom+xml, application/rss+xml;q=0.9, application/xml;q=0.8";
    const ATOM: &str = "application/atom+xml";

    #[test]
    fn browsers_get_the_page_feed_readers_the_feed() {
        use Representation::*;
        for (headers, want) in [
            (accept(&[CHROMIUM]), Page),
            (accept(&[FIREFOX]), Page),
            (accept(&[FEED_READER]), Source),
            (accept(&["*/*"]), Page),
            (accept(&[]), Page),
            (accept(&["application/xml"]), Source),
            (accept(&["text/xml"]), Source),
            (accept(&["application/xml;q=0.5, text/html;q=0.4"]), Source),
            (accept(&["application/*"]), Source),
            (
                accept(&["text/html;q=0.5, application/atom+xml;q=0.5"]),
                Page,
            ),
            (
                accept(&["text/html;q=0.5, application/atom+xml;q=0.6"]),
                Source,
            ),
            (accept(&["text/html;q=0, */*"]), Source),
            (accept(&["text/html;q=0, application/atom+xml"]), Source),
            (accept(&["text/*, application/atom+xml;q=0.9"]), Page),
            (
                accept(&["application/atom+xml;q=0.9", "text/html;q=0.1"]),
                Source,
            ),
            (
                accept(&["application/xhtml+xml, application/atom+xml;q=0.9"]),
                Source,
            ),
        ] {
            let v = headers.get_all(header::ACCEPT).iter().collect::<Vec<_>>();
            assert_eq!(choose(&headers, ATOM), want, "Accept: {v:?}");
            // The hot memo answers only requests that surely get the page.
            if want == Source {
                assert!(!surely_page(&headers, None), "Accept: {v:?}");
            }
        }
    }

    #[test]
    fn only_clients_that_get_the_page_whatever_the_source_skip_reading_it() {
        assert!(surely_page(&accept(&[CHROMIUM]), None));
        assert!(surely_page(&accept(&[FIREFOX]), None));
        assert!(surely_page(&accept(&["*/*"]), None));
        assert!(surely_page(&accept(&[]), None));
        assert!(!surely_page(&accept(&[FEED_READER]), None));
        // RSS asked for: an Atom source would still get the page, but the
        // type is not known until the source is read.
        assert!(!surely_page(&accept(&["application/rss+xml"]), None));
        assert_eq!(
            choose(&accept(&["application/rss+xml"]), ATOM),
            Representation::Page
        );
        assert!(surely_page(
            &accept(&["application/rss+xml"]),
            Some("text/x-opml")
        ));
        assert!(!surely_page(&accept(&["text/x-opml"]), Some("text/x-opml")));
    }

    #[test]
    fn the_most_specific_range_sets_the_quality() {
        let h = accept(&["*/*;q=0.1, application/*;q=0.5, application/atom+xml;q=0.9"]);
        let r = ranges(&h);
        assert_eq!(quality(&r, ATOM), 0.9);
        assert_eq!(quality(&r, "application/xml"), 0.5);
        assert_eq!(quality(&r, "text/html"), 0.1);
        let h = accept(&["application/atom+xml;q=0, */*"]);
        assert_eq!(choose(&h, ATOM), Representation::Page);
    }

    #[test]
    fn malformed_ranges_are_skipped_not_fatal() {
        let h = accept(&["garbage, */html, ;q=1, application/atom+xml;q=oops, text/html;q=0.5"]);
        let r = ranges(&h);
        assert_eq!(
            quality(&r, ATOM),
            1.0,
            "a q that cannot be read counts as 1"
        );
        assert_eq!(choose(&h, ATOM), Representation::Source);
        let h = accept(&["???"]);
        assert_eq!(choose(&h, ATOM), Representation::Page);
        let mut h = HeaderMap::new();
        h.append(
            header::ACCEPT,
            HeaderValue::from_bytes(b"\xff\xfe").unwrap(),
        );
        assert_eq!(choose(&h, ATOM), Representation::Page);
    }

    #[test]
    fn odd_numbers_in_q_are_bounded() {
        let r = |v: &str| {
            let h = accept(&[v]);
            quality(&ranges(&h), ATOM)
        };
        assert_eq!(r("application/atom+xml;q=NaN"), 1.0);
        assert_eq!(r("application/atom+xml;q=inf"), 1.0);
        assert_eq!(r("application/atom+xml;q=-1"), 0.0);
        assert_eq!(r("application/atom+xml;Q=0.25"), 0.25);
    }

    proptest::proptest! {
        /// The hot memo's shortcut is sound: whenever `surely_page` says
        /// the page, reading the source could not have said otherwise.
        #[test]
        fn surely_page_never_contradicts_choose(
            items in proptest::collection::vec(
                (
                    proptest::sample::select(vec![
                        "text/html", "application/xhtml+xml", "application/xml",
                        "application/atom+xml", "application/rss+xml", "text/x-opml",
                        "application/*", "text/*", "*/*", "image/png", "bogus", "*/html",
                    ]),
                    proptest::option::of(proptest::sample::select(vec![
                        "0", "0.1", "0.5", "0.9", "1", "NaN", "x", "",
                    ])),
                ),
                0..6,
            ),
            configured in proptest::option::of(proptest::sample::select(vec!["text/x-opml", "application/xml"])),
        ) {
            let value = items
                .iter()
                .map(|(m, q)| match q {
                    Some(q) => format!("{m};q={q}"),
                    None => (*m).to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ");
            let h = accept(&[value.as_str()]);
            if surely_page(&h, configured) {
                let types: Vec<&str> = match configured {
                    Some(t) => vec![t],
                    None => SOURCE_TYPES.to_vec(),
                };
                for t in types {
                    proptest::prop_assert_eq!(choose(&h, t), Representation::Page, "{} for {}", value, t);
                }
            }
        }
    }

    #[test]
    fn sources_are_typed_by_their_root() {
        let root = |ns: Option<&str>, local: &str| RootName {
            prefix: None,
            local: local.to_string(),
            namespace: ns.map(str::to_string),
        };
        assert_eq!(source_type(&root(Some(ATOM_NS), "feed"), b"", None), ATOM);
        assert_eq!(
            source_type(&root(None, "rss"), b"", None),
            "application/rss+xml"
        );
        let rdf = format!("<rdf:RDF xmlns:rdf='{RDF_NS}' xmlns='{RSS1_NS}'>");
        assert_eq!(
            source_type(&root(Some(RDF_NS), "RDF"), rdf.as_bytes(), None),
            "application/rss+xml"
        );
        assert_eq!(
            source_type(&root(Some(RDF_NS), "RDF"), b"<rdf:RDF/>", None),
            "application/xml"
        );
        assert_eq!(
            source_type(&root(None, "urlset"), b"", None),
            "application/xml"
        );
        assert_eq!(
            source_type(&root(None, "feed"), b"", None),
            "application/xml",
            "a feed element outside Atom's namespace is not Atom"
        );
        assert_eq!(
            source_type(&root(None, "opml"), b"", Some("text/x-opml")),
            "text/x-opml"
        );
    }
}
