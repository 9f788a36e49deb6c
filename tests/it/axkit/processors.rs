//! Configured processors (AxKit's AxAddProcessor and the conditional
//! AxAdd*Processor directives): processors applied unconditionally or by
//! root element, DOCTYPE, DTD, URI, style and media, and how their `order`
//! (`fallback`, `instead`, `before`, `after`) combines them with the PI
//! chain.

use super::{Server, out, pi, proc, tags};
use crate::support::{MODES, TestSite};

fn when_config() -> String {
    format!(
        r#"
[location."/always"]
processor = [{}]

[location."/when"]
processor = [
  {},
  {},
  {},
  {},
  {},
  {},
  {},
]
"#,
        proc("conf", ""),
        proc("feed", ", root = \"{urn:x-feed}feed\""),
        proc("plainroot", ", root = \"plain\""),
        proc("book", ", doctype = \"-//AXLE//DTD Book//EN\""),
        proc("sysid", ", dtd = \"sys.dtd\""),
        proc("special", ", uri = \"^/when/special-[0-9]+\\\\.xml$\""),
        proc("printonly", ", style = \"print\""),
        proc("handheldonly", ", media = \"handheld\""),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn processors_apply_unconditionally_or_by_root_doctype_dtd_uri_style_and_media() {
    let site = TestSite::new();
    tags(
        &site,
        &[
            "conf",
            "feed",
            "plainroot",
            "book",
            "sysid",
            "special",
            "printonly",
            "handheldonly",
        ],
    );
    site.write("always/doc.xml", "<anything/>");
    site.write("when/feed.xml", "<f:feed xmlns:f=\"urn:x-feed\"/>");
    site.write("when/default-ns-feed.xml", "<feed xmlns=\"urn:x-feed\"/>");
    site.write("when/nsless-feed.xml", "<feed/>");
    site.write("when/plain.xml", "<plain/>");
    site.write("when/ns-plain.xml", "<plain xmlns=\"urn:other\"/>");
    site.write("when/book.dtd", "<!ELEMENT book EMPTY>");
    site.write("when/sys.dtd", "<!ELEMENT thing EMPTY>");
    site.write(
        "when/book.xml",
        "<!DOCTYPE book PUBLIC \"-//AXLE//DTD Book//EN\" \"book.dtd\">\n<book/>",
    );
    site.write(
        "when/otherbook.xml",
        "<!DOCTYPE book PUBLIC \"-//AXLE//DTD Other//EN\" \"book.dtd\">\n<book/>",
    );
    site.write(
        "when/sys.xml",
        "<!DOCTYPE thing SYSTEM \"sys.dtd\">\n<thing/>",
    );
    site.write("when/special-42.xml", "<x/>");
    site.write("when/special-x.xml", "<x/>");
    site.write("when/any.xml", "<any/>");
    let config = when_config();
    for mode in MODES {
        let server = Server::start(&site.root, mode, &config).await;
        for (path, headers, expected) in [
            ("/always/doc.xml", vec![], Some("conf")),
            ("/when/feed.xml", vec![], Some("feed")),
            ("/when/default-ns-feed.xml", vec![], Some("feed")),
            ("/when/nsless-feed.xml", vec![], None),
            ("/when/plain.xml", vec![], Some("plainroot")),
            ("/when/ns-plain.xml", vec![], None),
            ("/when/book.xml", vec![], Some("book")),
            ("/when/otherbook.xml", vec![], None),
            ("/when/sys.xml", vec![], Some("sysid")),
            ("/when/special-42.xml", vec![], Some("special")),
            ("/when/special-x.xml", vec![], None),
            ("/when/any.xml", vec![], None),
            ("/when/any.xml?style=print", vec![], Some("printonly")),
            ("/when/any.xml?style=PRINT", vec![], Some("printonly")),
            ("/when/any.xml?style=other", vec![], None),
            (
                "/when/any.xml",
                vec![("user-agent", "Nokia6230/2.0")],
                Some("handheldonly"),
            ),
            (
                "/when/any.xml?style=print",
                vec![("user-agent", "Nokia6230/2.0")],
                Some("printonly...handheldonly"),
            ),
        ] {
            let r = server.get_with(path, &headers).await;
            assert_eq!(r.status, 200, "{mode} {path}: {}", r.text());
            match expected {
                Some(chain) => {
                    assert_eq!(r.text(), out(chain), "{mode} {path} {headers:?}");
                    assert_eq!(r.header("content-type"), "text/xml; charset=UTF-8");
                }
                None => {
                    // No stage: the document as it is.
                    let file = path.split('?').next().unwrap();
                    assert_eq!(r.text(), site.read(&file[1..]), "{mode} {path}");
                    assert_eq!(
                        (r.header("content-type").as_str(), r.cache().as_str()),
                        ("text/xml", "none"),
                        "{mode} {path}"
                    );
                }
            }
        }
    }
}

const ORDERS: &str = r#"
[location."/order/fallback"]
processor = [{ type = "text/xsl", href = "/t/conf.xsl" }]

[location."/order/instead"]
order = "instead"
processor = [{ type = "text/xsl", href = "/t/conf.xsl" }]

[location."/order/before"]
order = "before"
processor = [{ type = "text/xsl", href = "/t/conf.xsl" }]

[location."/order/after"]
order = "after"
processor = [{ type = "text/xsl", href = "/t/conf.xsl" }]
"#;

/// `fallback` (AxKit: PIs win when any applies), `instead`
/// (AxIgnoreStylePI), `before` and `after` the PI chain.
#[tokio::test(flavor = "multi_thread")]
async fn processor_order_decides_how_processors_combine_with_pis() {
    let site = TestSite::new();
    tags(&site, &["conf", "pi", "alt"]);
    for order in ["fallback", "instead", "before", "after"] {
        site.write(
            &format!("order/{order}/pi.xml"),
            &format!("{}<doc/>", pi("pi", "")),
        );
        site.write(&format!("order/{order}/nopi.xml"), "<doc/>");
        site.write(
            &format!("order/{order}/alt.xml"),
            &format!("{}<doc/>", pi("alt", " title=\"alt\" alternate=\"yes\"")),
        );
    }
    for mode in MODES {
        let server = Server::start(&site.root, mode, ORDERS).await;
        for (path, expected) in [
            ("/order/fallback/pi.xml", "pi"),
            ("/order/fallback/nopi.xml", "conf"),
            ("/order/fallback/alt.xml", "conf"),
            ("/order/fallback/alt.xml?style=alt", "alt"),
            ("/order/instead/pi.xml", "conf"),
            ("/order/instead/nopi.xml", "conf"),
            ("/order/instead/alt.xml?style=alt", "conf"),
            ("/order/before/pi.xml", "conf...pi"),
            ("/order/before/nopi.xml", "conf"),
            ("/order/before/alt.xml?style=alt", "conf...alt"),
            ("/order/after/pi.xml", "pi...conf"),
            ("/order/after/nopi.xml", "conf"),
            ("/order/after/alt.xml?style=alt", "alt...conf"),
        ] {
            let r = server.get(path).await;
            assert_eq!((r.status, r.text()), (200, out(expected)), "{mode} {path}");
            if server.caches() {
                let again = server.get(path).await;
                assert_eq!(
                    (again.text(), again.cache()),
                    (out(expected), "hit".to_string()),
                    "{mode} {path}"
                );
            }
        }
    }
}
