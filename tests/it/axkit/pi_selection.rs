//! PI selection (AxKit's `xml-stylesheet` handling): which
//! `<?xml-stylesheet?>` PIs make the chain for a given style and media —
//! persistent before titled, alternates by title, `media` filtering with a
//! fallback to `screen`, only PIs before the root element — and AxKit's guard
//! that a style selecting nothing is never cached. The choosers that decide
//! the style and media are in `choosers`.

use super::{Server, out, pi, styles_site, tags};
use crate::support::{MODES, TestSite};

#[tokio::test(flavor = "multi_thread")]
async fn the_style_picks_titled_pis_after_the_persistent_ones() {
    let site = styles_site();
    for mode in MODES {
        let server = Server::start(&site.root, mode, "").await;
        for (query, expected) in [
            ("", "persistent...screen"),
            ("?style=print", "persistent...print"),
            ("?style=PRINT", "persistent...print"),
            ("?style=Handheld", "persistent...handheld"),
            ("?style=screen", "persistent...screen"),
            ("?style=", "persistent...screen"),
            ("?style=nope", "persistent"),
        ] {
            let path = format!("/sel/doc.xml{query}");
            assert_eq!(server.body(&path).await, out(expected), "{mode} {query}");
        }
    }
}

/// AxKit's guard: a `?style=` that selects nothing gives the persistent
/// chain, is computed every time (`miss`) and adds no cache entry, so
/// random styles cannot fill the cache.
#[tokio::test(flavor = "multi_thread")]
async fn a_style_that_selects_nothing_is_never_cached() {
    let site = styles_site();
    for mode in MODES {
        let server = Server::start(&site.root, mode, "").await;
        assert_eq!(
            server.body("/sel/doc.xml").await,
            out("persistent...screen")
        );
        assert_eq!(
            server.body("/sel/doc.xml?style=print").await,
            out("persistent...print")
        );
        let before = server.entries().await;
        let mut seen = Vec::new();
        for style in ["nope", "zzz", "r4nd0m", "nope", "zzz"] {
            let r = server.get(&format!("/sel/doc.xml?style={style}")).await;
            assert_eq!(
                (r.status, r.text()),
                (200, out("persistent")),
                "{mode} {style}"
            );
            seen.push((format!("?style={style}"), r.cache()));
        }
        for cookie in ["axkit_preferred_style=bogus", "axkit_preferred_style=bogus"] {
            let r = server.get_with("/sel/doc.xml", &[("cookie", cookie)]).await;
            assert_eq!(r.text(), out("persistent"));
            seen.push((cookie.to_string(), r.cache()));
        }
        let after = server.entries().await;
        let all_miss: Vec<(String, String)> = seen
            .iter()
            .map(|(what, _)| (what.clone(), "miss".to_string()))
            .collect();
        assert_eq!(
            (seen, after - before),
            (all_miss, 0),
            "{mode}: (x-axle-cache of each request, new cache entries)"
        );
        // Real styles are still cached.
        let again = server.get("/sel/doc.xml?style=print").await;
        if server.caches() {
            assert_eq!(again.cache(), "hit", "{mode}");
        }
    }
}

const MEDIA_RULES: &str = r#"
[location."/"]
media-rules = [
  { user-agent = "^Printer", media = "print" },
  { user-agent = "^Braille", media = "braille" },
  { user-agent = "^(Noki|Eric)", accept = "vnd.wap.wml", media = "handheld" },
]
"#;

/// `media` filters PIs (a PI without `media` is for `screen`; a list
/// matches any of its media; `all` matches every media); when no PI is for
/// the chosen media, the `screen` PIs are used.
#[tokio::test(flavor = "multi_thread")]
async fn media_filters_pis_and_falls_back_to_screen() {
    let site = styles_site();
    site.write(
        "media/doc.xml",
        &format!(
            "{}{}{}{}{}<doc/>\n",
            pi("plain", ""),
            pi("screen", " media=\"screen\""),
            pi("handheld", " media=\"handheld\""),
            pi("print", " media=\"print\""),
            pi("multi", " media=\"tv, handheld\""),
        ),
    );
    site.write(
        "media/all.xml",
        &format!(
            "{}{}<doc/>\n",
            pi("every", " media=\"print, all\""),
            pi("screen", " media=\"screen\""),
        ),
    );
    for mode in MODES {
        let server = Server::start(&site.root, mode, MEDIA_RULES).await;
        for (headers, doc, expected) in [
            (vec![], "doc", "plain...screen"),
            (vec![("user-agent", "Printer/1.0")], "doc", "print"),
            (
                vec![("user-agent", "Nokia6230/2.0")],
                "doc",
                "handheld...multi",
            ),
            (
                vec![("accept", "text/vnd.wap.wml")],
                "doc",
                "handheld...multi",
            ),
            // Nothing for braille: the screen PIs.
            (vec![("user-agent", "Braille/1")], "doc", "plain...screen"),
            (vec![], "all", "every...screen"),
            (vec![("user-agent", "Printer/1.0")], "all", "every"),
            (vec![("user-agent", "Braille/1")], "all", "every"),
        ] {
            let path = format!("/media/{doc}.xml");
            assert_eq!(
                server.body_with(&path, &headers).await,
                out(expected),
                "{mode} {doc} {headers:?}"
            );
        }
    }
}

/// Only PIs before the root element count (also when the prolog is read by
/// libxml2, as for an ISO-8859-1 document).
#[tokio::test(flavor = "multi_thread")]
async fn pis_after_the_root_element_are_ignored() {
    let site = TestSite::new();
    tags(&site, &["before", "inside", "after"]);
    site.write(
        "late/doc.xml",
        &format!(
            "<?xml version=\"1.0\"?>\n{}<doc>{}</doc>\n{}",
            pi("before", ""),
            pi("inside", "").trim_end(),
            pi("after", ""),
        ),
    );
    let mut latin1 = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n".to_vec();
    latin1.extend_from_slice(pi("before", "").as_bytes());
    latin1.extend_from_slice(b"<doc>caf\xE9");
    latin1.extend_from_slice(pi("inside", "").trim_end().as_bytes());
    latin1.extend_from_slice(b"</doc>\n");
    latin1.extend_from_slice(pi("after", "").as_bytes());
    std::fs::write(site.root.join("late/latin1.xml"), &latin1).unwrap();
    let only_after = format!("<doc/>\n{}", pi("after", ""));
    site.write("late/none.xml", &only_after);
    for mode in MODES {
        let server = Server::start(&site.root, mode, "").await;
        assert_eq!(server.body("/late/doc.xml").await, out("before"), "{mode}");
        assert_eq!(
            server.body("/late/latin1.xml").await,
            out("café...before"),
            "{mode}"
        );
        let none = server.get("/late/none.xml").await;
        assert_eq!(
            (none.status, none.text(), none.cache()),
            (200, only_after.clone(), "none".to_string()),
            "{mode}"
        );
        assert_eq!(none.header("content-type"), "text/xml");
    }
}
