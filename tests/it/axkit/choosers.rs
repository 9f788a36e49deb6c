//! The style and media choosers (AxKit's StyleChooser and MediaChooser
//! modules): where the style comes from (query, cookie, path info, file
//! suffix, User-Agent map, location default) and the media (WAP User-Agent,
//! Accept header, location default), and which beats which. They select
//! among the PIs of the shared [`styles_doc`](super::styles_doc), so what
//! `pi_selection` pins down is taken as given here.

use super::{Headers, Server, out, pi, styles_doc, styles_site};
use crate::support::MODES;

const CHOOSERS: &str = r#"
[location."/"]
user-agent-styles = [{ pattern = "Lynx|w3m", style = "print" }]

[location."/custom"]
style-key = "look"
style-cookie = "theme"

[location."/def"]
style = "handheld"

[location."/defmedia"]
media = "handheld"

[location."/off"]
style-key = ""
style-cookie = ""
path-info = false
suffix = false
"#;

#[tokio::test(flavor = "multi_thread")]
async fn styles_are_chosen_by_query_cookie_path_info_suffix_user_agent_and_default() {
    let site = styles_site();
    for dir in ["c", "custom", "def", "off"] {
        site.write(&format!("{dir}/doc.xml"), &styles_doc());
    }
    let default = out("persistent...screen");
    let print = out("persistent...print");
    let handheld = out("persistent...handheld");
    for mode in MODES {
        let server = Server::start(&site.root, mode, CHOOSERS).await;
        let cases: Vec<(&str, Headers, &String)> = vec![
            ("/c/doc.xml", vec![], &default),
            ("/c/doc.xml?style=print", vec![], &print),
            (
                "/c/doc.xml",
                vec![("cookie", "axkit_preferred_style=print")],
                &print,
            ),
            (
                "/c/doc.xml",
                vec![("cookie", "a=1; axkit_preferred_style=handheld; b=2")],
                &handheld,
            ),
            ("/c/doc.xml/print", vec![], &print),
            ("/c/doc.xml.print", vec![], &print),
            ("/c/doc.xml/HANDHELD", vec![], &handheld),
            ("/c/doc.xml", vec![("user-agent", "Lynx/2.8.9")], &print),
            // The client's own choice beats the User-Agent map, and the URL
            // beats the query string, which beats the cookie.
            (
                "/c/doc.xml?style=handheld",
                vec![("user-agent", "Lynx/2.8.9")],
                &handheld,
            ),
            ("/c/doc.xml/handheld?style=print", vec![], &handheld),
            (
                "/c/doc.xml?style=print",
                vec![("cookie", "axkit_preferred_style=handheld")],
                &print,
            ),
            // A custom query key and cookie name.
            ("/custom/doc.xml?look=print", vec![], &print),
            ("/custom/doc.xml?style=print", vec![], &default),
            (
                "/custom/doc.xml",
                vec![("cookie", "theme=handheld")],
                &handheld,
            ),
            (
                "/custom/doc.xml",
                vec![("cookie", "axkit_preferred_style=print")],
                &default,
            ),
            // The location's default style (an alternate's title is fine).
            ("/def/doc.xml", vec![], &handheld),
            ("/def/doc.xml?style=print", vec![], &print),
            // Choosers turned off.
            ("/off/doc.xml?style=print", vec![], &default),
            (
                "/off/doc.xml",
                vec![("cookie", "axkit_preferred_style=print")],
                &default,
            ),
        ];
        for (path, headers, expected) in cases {
            let r = server.get_with(path, &headers).await;
            assert_eq!(
                (r.status, &r.text()),
                (200, expected),
                "{mode} {path} {headers:?}"
            );
            if server.caches() {
                let again = server.get_with(path, &headers).await;
                assert_eq!(again.body, r.body);
                assert_eq!(again.cache(), "hit", "{mode} {path} {headers:?}");
            }
        }
        assert_eq!(server.get("/off/doc.xml/print").await.status, 404, "{mode}");
        assert_eq!(server.get("/off/doc.xml.print").await.status, 404, "{mode}");
        assert_eq!(server.get("/c/nope.xml/print").await.status, 404, "{mode}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn media_is_chosen_by_wap_user_agent_accept_header_and_location_default() {
    let site = styles_site();
    let media = format!(
        "{}{}{}<doc/>\n",
        pi("screen", " media=\"screen\""),
        pi("handheld", " media=\"handheld\""),
        pi("print", " media=\"print\""),
    );
    site.write("c/media.xml", &media);
    site.write("defmedia/media.xml", &media);
    for mode in MODES {
        let server = Server::start(&site.root, mode, CHOOSERS).await;
        for (path, headers, expected) in [
            ("/c/media.xml", vec![], "screen"),
            (
                "/c/media.xml",
                vec![("user-agent", "Mozilla/5.0")],
                "screen",
            ),
            (
                "/c/media.xml",
                vec![("user-agent", "Nokia6230/2.0 (03.14)")],
                "handheld",
            ),
            (
                "/c/media.xml",
                vec![("user-agent", "UP.Browser/6.2")],
                "handheld",
            ),
            (
                "/c/media.xml",
                vec![("accept", "text/vnd.wap.wml, */*;q=0.1")],
                "handheld",
            ),
            ("/defmedia/media.xml", vec![], "handheld"),
            (
                "/defmedia/media.xml",
                vec![("user-agent", "Mozilla/5.0")],
                "handheld",
            ),
        ] {
            assert_eq!(
                server.body_with(path, &headers).await,
                out(expected),
                "{mode} {path} {headers:?}"
            );
        }
    }
}
