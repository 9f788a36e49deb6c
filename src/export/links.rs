//! The link attributes of an exported page, found and replaced in its bytes.
//!
//! `axle build` points a page's internal links at the files it wrote, so
//! that a static host serves them. This is the part that reads markup: a
//! small tokenizer over the serialized page that finds the attributes a
//! browser (or a feed reader) follows, and splices a new value into exactly
//! their bytes. Everything else — text that merely looks like an attribute
//! (`&lt;a href="x"&gt;`, a `<script>` or `<style>` body, comments, CDATA,
//! processing instructions, the DOCTYPE) and every byte around a replaced
//! value — is copied as it was. Pure: what a link points to is decided by
//! the caller.

use std::ops::Range;

/// How a page's markup is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Syntax {
    /// HTML: names ASCII-case-insensitive, unquoted values, raw-text
    /// elements (`script`, `style`, …) whose bodies hold no tags.
    Html,
    /// XML (XHTML, Atom, SVG, any `+xml`): names as written, values quoted.
    Xml,
}

impl Syntax {
    /// The syntax of a page served as `content_type`; None for one that has
    /// no markup to rewrite (text, JSON, CSS, images).
    pub(super) fn of(content_type: &str) -> Option<Syntax> {
        match super::naming::essence(content_type).as_str() {
            "text/html" => Some(Syntax::Html),
            "text/xml" | "application/xml" => Some(Syntax::Xml),
            e if e.ends_with("+xml") => Some(Syntax::Xml),
            _ => None,
        }
    }
}

/// One link attribute of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Link {
    /// The element's name (ASCII-lowercased in HTML).
    pub(super) element: String,
    /// The attribute's name (ASCII-lowercased in HTML).
    pub(super) attribute: String,
    /// The value with its character references decoded.
    pub(super) value: String,
    /// The link is a form's (or a button's) target submitted with POST.
    pub(super) posts: bool,
    /// The value's bytes in the page (inside the quotes).
    span: Range<usize>,
    /// The quote around the value (None: an unquoted HTML value).
    quote: Option<u8>,
}

impl Link {
    /// The URLs the attribute holds: its value, trimmed; for `srcset`, the
    /// URL of each candidate.
    pub(super) fn urls(&self) -> Vec<&str> {
        if self.attribute == "srcset" {
            srcset(&self.value)
                .into_iter()
                .map(|(_, url)| url)
                .collect()
        } else {
            vec![self.value.trim_matches(is_space)]
        }
    }
}

/// Attributes that hold a URL a client follows or loads, on any element
/// (`data` on `object` only, below).
const LINK_ATTRIBUTES: &[&str] = &[
    "href",
    "src",
    "action",
    "formaction",
    "poster",
    "srcset",
    "xlink:href",
];

/// HTML elements whose content is text up to their end tag.
const RAW_TEXT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
];

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c')
}

fn is_space_byte(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

/// The position of `needle` in `hay` from `from`, or `hay.len()`.
fn find(hay: &[u8], from: usize, needle: &[u8]) -> usize {
    hay.get(from..)
        .and_then(|rest| rest.windows(needle.len()).position(|w| w == needle))
        .map_or(hay.len(), |p| from + p)
}

/// Like [`find`], ASCII-case-insensitively.
fn find_ignore_case(hay: &[u8], from: usize, needle: &[u8]) -> usize {
    hay.get(from..)
        .and_then(|rest| {
            rest.windows(needle.len())
                .position(|w| w.eq_ignore_ascii_case(needle))
        })
        .map_or(hay.len(), |p| from + p)
}

/// Every link attribute of `body`, in document order. Values whose
/// references cannot be decoded (an unknown named entity, bytes that are
/// not UTF-8) are left out: they are never rewritten.
pub(super) fn links(body: &[u8], syntax: Syntax) -> Vec<Link> {
    let html = syntax == Syntax::Html;
    let mut found = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let Some(lt) = body[i..].iter().position(|&b| b == b'<') else {
            break;
        };
        i += lt;
        let rest = &body[i..];
        if rest.starts_with(b"<!--") {
            i = find(body, i + 4, b"-->") + 3;
        } else if rest.starts_with(b"<![CDATA[") && !html {
            i = find(body, i + 9, b"]]>") + 3;
        } else if rest.starts_with(b"<!") {
            i = declaration_end(body, i + 2, html);
        } else if rest.starts_with(b"<?") {
            i = if html {
                find(body, i + 2, b">") + 1
            } else {
                find(body, i + 2, b"?>") + 2
            };
        } else if rest.starts_with(b"</") {
            i = find(body, i + 2, b">") + 1;
        } else if rest
            .get(1)
            .is_some_and(|&b| b.is_ascii_alphabetic() || (!html && (b == b'_' || b >= 0x80)))
        {
            let (end, element, attributes) = tag(body, i + 1, html);
            collect(body, &element, &attributes, &mut found);
            i = end;
            if html && RAW_TEXT.contains(&element.as_str()) {
                let close = format!("</{element}");
                i = find_ignore_case(body, i, close.as_bytes());
            }
        } else {
            i += 1;
        }
    }
    found
}

/// The end of a `<!…>` declaration starting its body at `from`: the DOCTYPE's
/// internal subset and quoted literals may hold `>`.
fn declaration_end(body: &[u8], from: usize, html: bool) -> usize {
    let mut depth = 0usize;
    let mut quote = None;
    let mut i = from;
    while i < body.len() {
        let b = body[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if !html && (b == b'"' || b == b'\'') => quote = Some(b),
            None if !html && b == b'[' => depth += 1,
            None if !html && b == b']' => depth = depth.saturating_sub(1),
            None if b == b'>' && depth == 0 => return i + 1,
            None => {}
        }
        i += 1;
    }
    body.len()
}

/// One attribute as written: its name and its raw value's span and quote.
struct Attribute {
    name: String,
    span: Range<usize>,
    quote: Option<u8>,
}

/// A start tag whose name begins at `from`: where it ends, the element's
/// name, its attributes.
fn tag(body: &[u8], from: usize, html: bool) -> (usize, String, Vec<Attribute>) {
    let name_end = body[from..]
        .iter()
        .position(|&b| is_space_byte(b) || b == b'/' || b == b'>')
        .map_or(body.len(), |p| from + p);
    let mut element = String::from_utf8_lossy(&body[from..name_end]).into_owned();
    if html {
        element.make_ascii_lowercase();
    }
    let mut attributes = Vec::new();
    let mut i = name_end;
    loop {
        while i < body.len() && (is_space_byte(body[i]) || body[i] == b'/') {
            i += 1;
        }
        if i >= body.len() {
            return (i, element, attributes);
        }
        if body[i] == b'>' {
            return (i + 1, element, attributes);
        }
        let start = i;
        while i < body.len() && !is_space_byte(body[i]) && !matches!(body[i], b'=' | b'>' | b'/') {
            i += 1;
        }
        if i == start {
            // A stray `=`: not a name.
            i += 1;
            continue;
        }
        let mut name = String::from_utf8_lossy(&body[start..i]).into_owned();
        if html {
            name.make_ascii_lowercase();
        }
        let mut j = i;
        while j < body.len() && is_space_byte(body[j]) {
            j += 1;
        }
        if body.get(j) != Some(&b'=') {
            // An attribute without a value.
            continue;
        }
        j += 1;
        while j < body.len() && is_space_byte(body[j]) {
            j += 1;
        }
        match body.get(j) {
            Some(&q) if q == b'"' || q == b'\'' => {
                let end = body[j + 1..]
                    .iter()
                    .position(|&b| b == q)
                    .map_or(body.len(), |p| j + 1 + p);
                if end < body.len() {
                    attributes.push(Attribute {
                        name,
                        span: j + 1..end,
                        quote: Some(q),
                    });
                }
                i = end + 1;
            }
            Some(_) if html => {
                let end = body[j..]
                    .iter()
                    .position(|&b| is_space_byte(b) || b == b'>')
                    .map_or(body.len(), |p| j + p);
                attributes.push(Attribute {
                    name,
                    span: j..end,
                    quote: None,
                });
                i = end;
            }
            _ => i = j,
        }
    }
}

/// The link attributes among a tag's `attributes`.
/// (In XML a name is as written: `HREF` is no link there.)
fn collect(body: &[u8], element: &str, attributes: &[Attribute], out: &mut Vec<Link>) {
    let value_of = |name: &str| {
        attributes
            .iter()
            .find(|a| a.name == name)
            .and_then(|a| decode(&body[a.span.clone()]))
    };
    let method_posts = |name: &str| {
        value_of(name).is_some_and(|m| m.trim_matches(is_space).eq_ignore_ascii_case("post"))
    };
    for a in attributes {
        let is_link = LINK_ATTRIBUTES.contains(&a.name.as_str())
            || (a.name == "data" && element.eq_ignore_ascii_case("object"));
        if !is_link {
            continue;
        }
        let Some(value) = decode(&body[a.span.clone()]) else {
            continue;
        };
        let posts = match a.name.as_str() {
            "action" => method_posts("method"),
            "formaction" => method_posts("formmethod"),
            _ => false,
        };
        out.push(Link {
            element: element.to_string(),
            attribute: a.name.clone(),
            value,
            posts,
            span: a.span.clone(),
            quote: a.quote,
        });
    }
}

/// An attribute value with its character references decoded; None when it
/// holds a named reference other than XML's five or is not UTF-8.
fn decode(raw: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(raw).ok()?;
    if !text.contains('&') {
        return Some(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let semi = rest.find(';')?;
        let name = &rest[1..semi];
        let c = match name {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            n if n.starts_with("#x") || n.starts_with("#X") => {
                char::from_u32(u32::from_str_radix(&n[2..], 16).ok()?)?
            }
            n if n.starts_with('#') => char::from_u32(n[1..].parse().ok()?)?,
            _ => return None,
        };
        out.push(c);
        rest = &rest[semi + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// `value` escaped for an attribute quoted with `quote` (None: unquoted).
fn escape(value: &str, quote: Option<u8>) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '"' if quote != Some(b'\'') => out.push_str("&quot;"),
            '\'' if quote != Some(b'"') => out.push_str("&#39;"),
            c if quote.is_none() && (is_space(c) || c == '>' || c == '`' || c == '=') => {
                out.push_str(&format!("&#{};", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

/// A `srcset`'s candidates: (the candidate's start in the value, its URL).
fn srcset(value: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for candidate in value.split(',') {
        let start = candidate.len() - candidate.trim_start_matches(is_space).len();
        let url_len = candidate[start..]
            .find(is_space)
            .unwrap_or(candidate.len() - start);
        if url_len > 0 {
            out.push((offset + start, &candidate[start..start + url_len]));
        }
        offset += candidate.len() + 1;
    }
    out
}

/// `body` with the URLs of `links` (found by [`links`] in that very body)
/// replaced where `replace` returns a new URL for one; every other byte as
/// it was. A value that changes is written escaped for its quote.
pub(super) fn rewrite(
    body: &[u8],
    links: &[Link],
    mut replace: impl FnMut(&Link, &str) -> Option<String>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + body.len() / 16);
    let mut copied = 0;
    for link in links {
        let new_value = if link.attribute == "srcset" {
            let mut value = link.value.clone();
            let mut changed = false;
            // From the last candidate back, so earlier offsets stay valid.
            for (start, url) in srcset(&link.value).into_iter().rev() {
                if let Some(new) = replace(link, url) {
                    value.replace_range(start..start + url.len(), &new);
                    changed = true;
                }
            }
            changed.then_some(value)
        } else {
            let trimmed = link.value.trim_matches(is_space);
            replace(link, trimmed)
        };
        let Some(new_value) = new_value else {
            continue;
        };
        out.extend_from_slice(&body[copied..link.span.start]);
        out.extend_from_slice(escape(&new_value, link.quote).as_bytes());
        copied = link.span.end;
    }
    out.extend_from_slice(&body[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every link's URL given to `f`, its answer spliced in.
    fn apply(body: &str, syntax: Syntax, f: impl Fn(&str) -> Option<String>) -> String {
        let b = body.as_bytes();
        let found = links(b, syntax);
        String::from_utf8(rewrite(b, &found, |_, url| f(url))).unwrap()
    }

    fn upper(url: &str) -> Option<String> {
        url.starts_with('/').then(|| url.to_ascii_uppercase())
    }

    #[test]
    fn only_link_attributes_of_tags_change() {
        let page = concat!(
            "<!DOCTYPE html>\n<html><head><link rel=stylesheet href=/css/a.css>",
            "<title><a href=\"/in-title\"></title>",
            "<script>document.write('<a href=\"/in-script\">')</script>",
            "<style>a[href=\"/in-style\"]{}</style></head>\n",
            "<body><!-- <a href=\"/in-comment\"> -->",
            "<p>&lt;a href=\"/in-text\"&gt; and <code>href=\"/code\"</code></p>",
            "<A HREF='/upper' class=x>x</A><img src=\"/i.png\" alt=\"/alt\">",
            "<a data-href=\"/data\" title=\"href=/t\" href = \"/spaced\">y</a>",
            "</body></html>\n"
        );
        let expected = page
            .replace("/css/a.css", "/CSS/A.CSS")
            .replace("'/upper'", "'/UPPER'")
            .replace("\"/i.png\"", "\"/I.PNG\"")
            .replace("\"/spaced\"", "\"/SPACED\"");
        assert_eq!(apply(page, Syntax::Html, upper), expected);
    }

    #[test]
    fn references_are_decoded_and_new_values_escaped_for_their_quote() {
        let page = "<a href=\"/a?x=1&amp;y=2#f\">a</a><a href='/b&#x3F;q'>b</a>";
        let found = links(page.as_bytes(), Syntax::Html);
        let values: Vec<&str> = found.iter().map(|l| l.value.as_str()).collect();
        assert_eq!(values, ["/a?x=1&y=2#f", "/b?q"]);
        let out = apply(page, Syntax::Html, |u| Some(format!("{u}&\"'")));
        assert_eq!(
            out,
            "<a href=\"/a?x=1&amp;y=2#f&amp;&quot;'\">a</a><a href='/b?q&amp;\"&#39;'>b</a>"
        );
        // An unknown entity: the link is left alone.
        assert!(links(b"<a href=\"/a&nbsp;b\">", Syntax::Html).is_empty());
        // Unchanged links change no byte, escaped or not.
        let same = "<a href=\"/x?a=1&#38;b\">";
        assert_eq!(apply(same, Syntax::Html, |_| None), same);
    }

    #[test]
    fn xml_reads_cdata_pis_and_case_as_written() {
        let feed = concat!(
            "<?xml version=\"1.0\"?>\n<?xml-stylesheet href=\"/s.xsl\"?>\n",
            "<!DOCTYPE feed [<!ENTITY e \"<a href='/in-dtd'>\">]>\n",
            "<feed><link rel=\"alternate\" href=\"/a.xml\"/><content src='/c'/>",
            "<x HREF=\"/not-a-link\"/><![CDATA[<link href=\"/in-cdata\"/>]]>",
            "<svg:a xlink:href=\"/x\"/></feed>"
        );
        let expected = feed
            .replace("\"/a.xml\"", "\"/A.XML\"")
            .replace("'/c'", "'/C'")
            .replace("\"/x\"", "\"/X\"");
        assert_eq!(apply(feed, Syntax::Xml, upper), expected);
    }

    #[test]
    fn a_post_form_is_known_and_srcset_candidates_each_rewritten() {
        let page = concat!(
            "<form action=\"/g\" method=\"POST\"></form><form action=\"/s\"></form>",
            "<img srcset=\"/a.png 1x, /b.png 2x,/c.png\">"
        );
        let found = links(page.as_bytes(), Syntax::Html);
        let posts: Vec<(&str, bool)> = found.iter().map(|l| (l.value.as_str(), l.posts)).collect();
        assert_eq!(posts[..2], [("/g", true), ("/s", false)]);
        assert_eq!(found[2].urls(), ["/a.png", "/b.png", "/c.png"]);
        let out = apply(page, Syntax::Html, |u| {
            (u != "/b.png").then(|| format!("x{u}"))
        });
        assert!(
            out.ends_with("<img srcset=\"x/a.png 1x, /b.png 2x,x/c.png\">"),
            "{out}"
        );
    }

    proptest::proptest! {
        /// On any bytes: no panic, spans inside the body, and a rewrite
        /// that replaces nothing is the body itself.
        #[test]
        fn any_bytes_scan_and_an_empty_rewrite_is_the_identity(
            body in proptest::collection::vec(
                proptest::sample::select(b"<>!-?[]/='\" \nahrefsctiplxmA&#;:".to_vec()),
                0..200,
            )
        ) {
            for syntax in [Syntax::Html, Syntax::Xml] {
                let found = links(&body, syntax);
                for link in &found {
                    proptest::prop_assert!(link.span.end <= body.len());
                }
                proptest::prop_assert_eq!(rewrite(&body, &found, |_, _| None), body.clone());
            }
        }
    }

    #[test]
    fn truncated_markup_never_panics() {
        for cut in [
            "<a href=\"/x",
            "<a href=",
            "<a",
            "<",
            "<!--",
            "<![CDATA[",
            "<!DOCTYPE x [",
            "<?pi",
            "<script>",
            "<a href=/x",
            "<a b c=>",
        ] {
            for syntax in [Syntax::Html, Syntax::Xml] {
                let found = links(cut.as_bytes(), syntax);
                let _ = rewrite(cut.as_bytes(), &found, |_, u| Some(u.to_string()));
            }
        }
        let unquoted = links(b"<a href=/x", Syntax::Html);
        assert_eq!(unquoted[0].value, "/x");
    }
}
