//! Output charset transcoding (AxKit's `AxTranslateOutput` and
//! `AxOutputCharset`): UTF-8 output re-encoded to a fixed charset or to one
//! the client accepts, with characters the charset lacks written as
//! numeric character references, and the XML declaration, an HTML
//! `<meta http-equiv>` charset and the Content-Type updated to match.

use bytes::Bytes;
use encoding_rs::{Encoding, UTF_8};

use crate::site::OutputCharset;

/// The encoding to send, given the setting and `Accept-Charset`.
pub fn target(setting: &OutputCharset, accept_charset: Option<&str>) -> &'static Encoding {
    match setting {
        OutputCharset::Fixed(e) => e,
        OutputCharset::Accept => {
            let Some(accept) = accept_charset else {
                return UTF_8;
            };
            let mut best: Option<(f32, &'static Encoding)> = None;
            for item in accept.split(',') {
                let mut parts = item.split(';');
                let label = parts.next().unwrap_or("").trim();
                let q = parts
                    .find_map(|p| p.trim().strip_prefix("q="))
                    .and_then(|q| q.parse::<f32>().ok())
                    .unwrap_or(1.0);
                if q <= 0.0 {
                    continue;
                }
                let enc = if label == "*" {
                    Some(UTF_8)
                } else {
                    Encoding::for_label(label.as_bytes())
                };
                // UTF-8 wins ties: it needs no conversion.
                if let Some(enc) = enc.filter(|e| e.output_encoding() == *e) {
                    let better = match best {
                        None => true,
                        Some((bq, be)) => q > bq || (q == bq && enc == UTF_8 && be != UTF_8),
                    };
                    if better {
                        best = Some((q, enc));
                    }
                }
            }
            best.map_or(UTF_8, |(_, e)| e)
        }
    }
}

/// Re-encodes a UTF-8 `body` whose Content-Type is `content_type` into
/// `to`. Returns None when nothing changes (already in that charset, or the
/// body is not UTF-8 text).
pub fn transcode(
    body: &[u8],
    content_type: &str,
    to: &'static Encoding,
) -> Option<(Bytes, String)> {
    let current = content_type
        .split(';')
        .find_map(|p| p.trim().strip_prefix("charset="))
        .and_then(|c| Encoding::for_label(c.trim_matches('"').as_bytes()))?;
    if current != UTF_8 || to == UTF_8 {
        return None;
    }
    let text = std::str::from_utf8(body).ok()?;
    let name = to.name();
    let text = relabel(text, name);
    let (encoded, _, _) = to.encode(&text);
    let mime = content_type.split(';').next().unwrap_or("text/html").trim();
    Some((
        Bytes::from(encoded.into_owned()),
        format!("{mime}; charset={name}"),
    ))
}

/// Rewrites the declared encoding in an XML declaration and in HTML
/// `<meta http-equiv="Content-Type">`/`<meta charset>` tags.
fn relabel(text: &str, name: &str) -> String {
    let mut out = text.to_string();
    if out.starts_with("<?xml") {
        if let Some(end) = out.find("?>") {
            let decl = &out[..end];
            let new_decl = match decl.find("encoding=") {
                Some(i) => {
                    let quote = decl[i + 9..].chars().next().unwrap_or('"');
                    let value_end = decl[i + 10..]
                        .find(quote)
                        .map_or(decl.len(), |j| i + 10 + j);
                    format!(
                        "{}encoding={quote}{name}{quote}{}",
                        &decl[..i],
                        &decl[value_end + 1..]
                    )
                }
                None => format!("{decl} encoding=\"{name}\""),
            };
            out = format!("{new_decl}{}", &out[end..]);
        }
    }
    for pattern in [
        "charset=UTF-8",
        "charset=utf-8",
        "charset=\"UTF-8\"",
        "charset=\"utf-8\"",
    ] {
        if let Some(i) = out.find(pattern) {
            let quoted = pattern.contains('"');
            let replacement = if quoted {
                format!("charset=\"{name}\"")
            } else {
                format!("charset={name}")
            };
            out.replace_range(i..i + pattern.len(), &replacement);
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_charset_picks_the_best_known_encoding() {
        let accept = OutputCharset::Accept;
        assert_eq!(target(&accept, None), UTF_8);
        assert_eq!(target(&accept, Some("iso-8859-1")).name(), "windows-1252");
        assert_eq!(target(&accept, Some("iso-8859-1;q=0.5, utf-8")), UTF_8);
        assert_eq!(
            target(&accept, Some("utf-8;q=0.1, koi8-r")).name(),
            "KOI8-R"
        );
        assert_eq!(target(&accept, Some("*")), UTF_8);
        assert_eq!(target(&accept, Some("x-unknown")), UTF_8);
    }

    #[test]
    fn html_and_xml_are_relabelled_and_unmappable_characters_become_references() {
        let koi8 = Encoding::for_label(b"koi8-r").unwrap();
        let html = "<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\"></head><body>Привет é</body></html>";
        let (body, ct) = transcode(html.as_bytes(), "text/html; charset=UTF-8", koi8).unwrap();
        assert_eq!(ct, "text/html; charset=KOI8-R");
        let (back, _, _) = koi8.decode(&body);
        assert!(back.contains("charset=KOI8-R"));
        assert!(back.contains("Привет &#233;"), "{back}");
        let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a>€</a>";
        let latin = Encoding::for_label(b"iso-8859-1").unwrap();
        let (body, _) = transcode(xml.as_bytes(), "text/xml; charset=UTF-8", latin).unwrap();
        assert!(
            String::from_utf8_lossy(&body)
                .starts_with("<?xml version=\"1.0\" encoding=\"windows-1252\"?>")
        );
        assert!(transcode(b"x", "text/plain; charset=ISO-8859-1", latin).is_none());
        assert!(transcode(b"x", "text/plain; charset=UTF-8", UTF_8).is_none());
    }
}
