//! The three cache modes: hit/miss/partial headers, early cut-off, freshness
//! after edits, and byte identity of bodies and headers across modes.

use proptest::prelude::*;

use crate::support::{MODES, TestServer, TestSite, tick};
use axle::CacheMode;

const DOCS: [&str; 9] = [
    "/one.xml",
    "/one.xml?who=x",
    "/two.xml",
    "/three.xml",
    "/text.xml",
    "/latin1.xml",
    "/atom.xml",
    "/plain.xml",
    "/docfn.xml",
];

#[tokio::test(flavor = "multi_thread")]
async fn every_mode_gives_identical_bodies_and_headers() {
    let site = TestSite::new();
    let off = TestServer::start_bytes_handoff(&site.root).await;
    let off_tree = TestServer::start(&site.root, CacheMode::Off).await;
    let all = TestServer::start(&site.root, CacheMode::All).await;
    let inc = TestServer::start(&site.root, CacheMode::Incremental).await;
    for doc in DOCS {
        let want = off.get(doc).await;
        assert_eq!(want.status, 200, "{doc}");
        for server in [&off_tree, &all, &inc] {
            for round in 0..2 {
                let got = server.get(doc).await;
                assert_eq!(got.body, want.body, "{doc} round {round}");
                assert_eq!(
                    got.comparable_headers(),
                    want.comparable_headers(),
                    "{doc} round {round}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn disable_output_escaping_in_an_earlier_stage_survives_every_hand_off() {
    // DocBook's way of writing &nbsp;: text with disable-output-escaping in
    // stage 1's (HTML) output, copied by stage 2. Through bytes, the
    // intermediate must still parse and the text stay unescaped, exactly as
    // through the tree.
    let site = TestSite::new();
    site.write(
        "s/doe1.xsl",
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html"/>
  <xsl:template match="/">
    <html><body><p>before <xsl:text disable-output-escaping="yes">&amp;nbsp;&lt;b&gt;raw&lt;/b&gt;</xsl:text> escaped &lt; after</p></body></html>
  </xsl:template>
</xsl:stylesheet>"#,
    );
    site.write(
        "s/doe2.xsl",
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html"/>
  <xsl:template match="@*|node()"><xsl:copy><xsl:apply-templates select="@*|node()"/></xsl:copy></xsl:template>
</xsl:stylesheet>"#,
    );
    site.write(
        "doe.xml",
        r#"<?xml-stylesheet href="s/doe1.xsl" type="text/xsl"?><?xml-stylesheet href="s/doe2.xsl" type="text/xsl"?><doc/>"#,
    );
    let bytes = TestServer::start_bytes_handoff(&site.root).await;
    let want = bytes.get("/doe.xml").await;
    assert_eq!(want.status, 200, "{}", want.text());
    assert!(
        want.text()
            .contains("<p>before &nbsp;<b>raw</b> escaped &lt; after</p>"),
        "{}",
        want.text()
    );
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        for round in 0..2 {
            let got = server.get("/doe.xml").await;
            assert_eq!(got.body, want.body, "{mode} round {round}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stylesheet_writing_the_escaping_marker_pis_itself_reads_the_same_through_tree_and_bytes()
{
    // The byte hand-off marks disable-output-escaping text with two PIs
    // (the JAXP names) and turns a text node between such a pair back
    // into unescaped text after re-parsing. A stage that writes that pair
    // itself must then not be handed on as a tree either: through the tree
    // the next stage would see the PIs, through bytes unescaped text.
    let site = TestSite::new();
    site.write(
        "s/marks.xsl",
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:template match="/">
    <r><xsl:processing-instruction name="javax.xml.transform.disable-output-escaping"/>a &amp;lt; b<xsl:processing-instruction name="javax.xml.transform.enable-output-escaping"/></r>
  </xsl:template>
</xsl:stylesheet>"#,
    );
    site.write(
        "marks.xml",
        "<?xml-stylesheet href=\"s/marks.xsl\" type=\"text/xsl\"?><?xml-stylesheet href=\"s/identity.xsl\" type=\"text/xsl\"?><doc/>",
    );
    let bytes = TestServer::start_bytes_handoff(&site.root).await;
    let want = bytes.get("/marks.xml").await;
    assert_eq!(want.status, 200, "{}", want.text());
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        for round in 0..2 {
            let got = server.get("/marks.xml").await;
            assert_eq!(got.text(), want.text(), "{mode} round {round}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn caching_modes_report_miss_then_hit_and_off_always_computes() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let first = server.get("/three.xml").await;
        let second = server.get("/three.xml").await;
        let runs = server.stage_runs();
        match mode {
            CacheMode::Off => {
                assert_eq!(
                    (first.cache().as_str(), second.cache().as_str()),
                    ("miss", "miss")
                );
                assert_eq!(runs, 6);
            }
            _ => {
                assert_eq!(
                    (first.cache().as_str(), second.cache().as_str()),
                    ("miss", "hit"),
                    "{mode}"
                );
                assert_eq!(runs, 3, "{mode}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn incremental_reuses_later_stages_when_stage_one_output_is_unchanged() {
    let site = TestSite::new();
    let inc = TestServer::start(&site.root, CacheMode::Incremental).await;
    let all = TestServer::start(&site.root, CacheMode::All).await;
    let before = inc.get("/three.xml").await;
    all.get("/three.xml").await;
    assert_eq!(inc.stage_runs(), 3);

    tick().await;
    let edited = site
        .read("three.xml")
        .replace("ignored 1", "ignored 2 (longer)");
    site.write("three.xml", &edited);

    let after = inc.get("/three.xml").await;
    assert_eq!(after.cache(), "partial 2/3");
    assert_eq!(after.body, before.body);
    assert_eq!(inc.stage_runs(), 4, "only stage 1 ran again");

    let all_after = all.get("/three.xml").await;
    assert_eq!(
        all_after.cache(),
        "miss",
        "all-or-nothing recomputes the whole chain"
    );
    assert_eq!(all.stage_runs(), 6);
    assert_eq!(all_after.body, after.body);

    // A change that does reach stage 1's output recomputes everything after it.
    tick().await;
    site.write("three.xml", &edited.replace(">kept<", ">changed<"));
    let changed = inc.get("/three.xml").await;
    assert_eq!(changed.cache(), "miss");
    assert!(changed.text().contains(">changed<"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_last_stylesheet_reuses_the_earlier_stages() {
    let site = TestSite::new();
    let inc = TestServer::start(&site.root, CacheMode::Incremental).await;
    inc.get("/three.xml").await;
    tick().await;
    site.write(
        "s/step3.xsl",
        &site.read("s/step3.xsl").replace("<body>", "<body><hr/>"),
    );
    let r = inc.get("/three.xml").await;
    assert_eq!(r.cache(), "partial 2/3");
    assert!(r.text().contains("<hr>"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn edits_to_source_stylesheet_and_imported_file_show_in_the_next_response() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        let base = server.get("/two.xml").await;
        assert!(base.text().contains("base v1"));

        tick().await;
        site.write(
            "two.xml",
            &site.read("two.xml").replace("Second.", "Second, edited."),
        );
        let r = server.get("/two.xml").await;
        assert!(r.text().contains("Second, edited."), "{mode}: source edit");

        tick().await;
        site.write(
            "s/layout.xsl",
            &site
                .read("s/layout.xsl")
                .replace("<h1>", "<h1 class=\"t\">"),
        );
        let r = server.get("/two.xml").await;
        assert!(
            r.text().contains("<h1 class=\"t\">"),
            "{mode}: stylesheet edit"
        );

        tick().await;
        site.write(
            "s/base.xsl",
            &site.read("s/base.xsl").replace("base v1", "base v2"),
        );
        let r = server.get("/two.xml").await;
        assert!(
            r.text().contains("base v2"),
            "{mode}: imported stylesheet edit"
        );
        let again = server.get("/two.xml").await;
        assert_eq!(again.body, r.body);
        if mode != CacheMode::Off {
            assert_eq!(again.cache(), "hit");
        }

        // restore for the next mode
        site.write(
            "two.xml",
            &site.read("two.xml").replace("Second, edited.", "Second."),
        );
        site.write(
            "s/layout.xsl",
            &site
                .read("s/layout.xsl")
                .replace("<h1 class=\"t\">", "<h1>"),
        );
        site.write(
            "s/base.xsl",
            &site.read("s/base.xsl").replace("base v2", "base v1"),
        );
        tick().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_read_by_document_is_a_dependency() {
    let site = TestSite::new();
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        assert_eq!(server.get("/docfn.xml").await.text(), "[data v1]");
        tick().await;
        site.write("data.xml", "<data>data v2</data>");
        assert_eq!(server.get("/docfn.xml").await.text(), "[data v2]", "{mode}");
        site.write("data.xml", "<data>data v1</data>\n");
        tick().await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn identical_sources_at_two_urls_resolve_relative_references_against_their_own() {
    // The same bytes at /a/doc.xml and /b/doc.xml, through a stylesheet
    // that reads `document('data.xml', /)`: relative to each source's own
    // URL, so each page shows its own directory's data. The base URL is an
    // input of every stage, so the caching modes must not answer /b from
    // /a's entry (they did before it was part of the keys).
    let site = TestSite::new();
    site.write(
        "s/sibling.xsl",
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="text"/>
  <xsl:template match="/">data=<xsl:value-of select="document('data.xml', /)/d"/></xsl:template>
</xsl:stylesheet>"#,
    );
    for dir in ["a", "b"] {
        site.write(
            &format!("{dir}/doc.xml"),
            "<?xml-stylesheet href=\"/s/sibling.xsl\" type=\"text/xsl\"?>\n<doc/>\n",
        );
        site.write(
            &format!("{dir}/two.xml"),
            "<?xml-stylesheet href=\"/s/identity.xsl\" type=\"text/xsl\"?>\n\
             <?xml-stylesheet href=\"/s/sibling.xsl\" type=\"text/xsl\"?>\n<doc/>\n",
        );
        site.write(&format!("{dir}/data.xml"), &format!("<d>{dir}</d>"));
    }
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        for round in 0..2 {
            for doc in ["doc", "two"] {
                for dir in ["a", "b"] {
                    let got = server.get(&format!("/{dir}/{doc}.xml")).await;
                    assert_eq!(
                        got.text(),
                        format!("data={dir}"),
                        "{mode} /{dir}/{doc}.xml round {round}"
                    );
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn two_stylesheets_embedded_in_one_document_are_two_stages() {
    // `#one` and `#two` live in the same file, so every file their
    // compiles read is the same: the stage's identity must still tell them
    // apart, or ?style=two is answered with #one's output.
    let site = TestSite::new();
    let embedded = |id: &str, text: &str| {
        format!(
            r#"<xsl:stylesheet xml:id="{id}" version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"><xsl:output method="text"/><xsl:template match="/">{text}</xsl:template></xsl:stylesheet>"#
        )
    };
    site.write(
        "embedded.xml",
        &format!(
            "<?xml-stylesheet href=\"#one\" type=\"text/xsl\" title=\"one\"?>\n\
             <?xml-stylesheet href=\"#two\" type=\"text/xsl\" title=\"two\" alternate=\"yes\"?>\n\
             <doc>{}{}</doc>",
            embedded("one", "ONE"),
            embedded("two", "TWO")
        ),
    );
    for mode in MODES {
        let server = TestServer::start(&site.root, mode).await;
        for round in 0..2 {
            for (url, want) in [
                ("/embedded.xml", "ONE"),
                ("/embedded.xml?style=two", "TWO"),
                ("/embedded.xml?style=one", "ONE"),
            ] {
                let got = server.get(url).await;
                assert_eq!(got.text(), want, "{mode} {url} round {round}");
            }
        }
    }
}

/// Random documents through the fixture chains: off, all and incremental
/// (each asked twice), and off with a serialize-and-reparse at every stage
/// boundary, must agree to the byte, headers included.
fn arb_document() -> impl Strategy<Value = String> {
    let text = "[a-zA-Z0-9 <>&'\"é€\u{1F600}]{0,12}";
    let item = (text, prop::bool::ANY).prop_map(|(t, attr)| {
        let esc = t
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        if attr {
            format!(
                "<para class=\"{}\">{esc}</para>",
                esc.replace('"', "&quot;")
            )
        } else {
            format!("<para>{esc}<em>{esc}</em></para>")
        }
    });
    let chain = prop::sample::select(vec![
        vec!["s/content.xsl", "s/layout.xsl"],
        vec!["s/step1.xsl", "s/step2.xsl", "s/step3.xsl"],
        vec!["s/content.xsl", "s/step2.xsl", "s/text.xsl"],
        vec!["s/step2.xsl", "s/step2.xsl", "s/step2.xsl"],
        vec!["s/content.xsl"],
    ]);
    (chain, prop::collection::vec(item, 0..6), "[a-z ]{0,10}").prop_map(|(chain, items, title)| {
        let pis: String = chain
            .iter()
            .map(|href| format!("<?xml-stylesheet href=\"{href}\" type=\"text/xsl\"?>\n"))
            .collect();
        format!(
            "<?xml version=\"1.0\"?>\n{pis}<article><title>{title}</title><keep>{title}</keep>{}</article>",
            items.concat()
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn all_three_cache_modes_give_identical_bytes(docs in prop::collection::vec(arb_document(), 1..4)) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async {
            let site = TestSite::new();
            let servers = [
                TestServer::start_bytes_handoff(&site.root).await,
                TestServer::start(&site.root, CacheMode::Off).await,
                TestServer::start(&site.root, CacheMode::All).await,
                TestServer::start(&site.root, CacheMode::Incremental).await,
            ];
            // The same path is rewritten with each document in turn, so the
            // caching modes also see sources change under a warm cache.
            for doc in &docs {
                site.write("gen.xml", doc);
                tick().await;
                let want = servers[0].get("/gen.xml").await;
                for server in &servers[1..] {
                    for _ in 0..2 {
                        let got = server.get("/gen.xml").await;
                        assert_eq!(got.status, want.status, "{doc}");
                        assert_eq!(got.body, want.body, "{doc}");
                        assert_eq!(got.comparable_headers(), want.comparable_headers(), "{doc}");
                    }
                }
            }
        });
    }
}

/// One state of the two-directory site: the document both `a/` and `b/`
/// hold (the same bytes; `None`: unchanged, so a cached response must
/// notice the data alone changing), and each directory's `data.xml`
/// (absent or a value), which the chain's `document('data.xml', /)` reads
/// relative to the document.
#[derive(Debug, Clone)]
struct TwinState {
    document: Option<String>,
    data: [Option<&'static str>; 2],
}

fn arb_twin_state() -> impl Strategy<Value = TwinState> {
    let chain = prop::sample::select(vec![
        vec!["/s/twin-read.xsl"],
        vec!["/s/identity.xsl", "/s/twin-read.xsl"],
        vec!["/s/twin-read.xsl", "/s/identity.xsl"],
        vec!["/s/identity.xsl", "/s/identity.xsl", "/s/twin-read.xsl"],
    ]);
    let data = prop::option::of(prop::sample::select(vec!["x", "y"]));
    let document = prop::option::of((chain, "[a-b]{0,1}")).prop_map(|doc| {
        doc.map(|(chain, text)| {
            let pis: String = chain
                .iter()
                .map(|href| format!("<?xml-stylesheet href=\"{href}\" type=\"text/xsl\"?>\n"))
                .collect();
            format!("{pis}<doc><p>{text}</p></doc>")
        })
    });
    (document, data.clone(), data).prop_map(|(document, a, b)| TwinState {
        document,
        data: [a, b],
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    /// The same bytes at two URLs, each reading its own directory's
    /// `data.xml` (present or not, changing between steps): every mode
    /// answers each URL as the byte hand-off does, after every step. This
    /// is the invariant the URL in the keys and absent-file dependencies
    /// keep.
    #[test]
    fn cache_modes_agree_for_twin_documents_whose_relative_reads_change(
        states in prop::collection::vec(arb_twin_state(), 1..5)
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async {
            let site = TestSite::new();
            site.write(
                "s/twin-read.xsl",
                r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:template match="/"><out data="{document('data.xml', /)/d}"><xsl:copy-of select="/*"/></out></xsl:template>
</xsl:stylesheet>"#,
            );
            let servers = [
                TestServer::start_bytes_handoff(&site.root).await,
                TestServer::start(&site.root, CacheMode::Off).await,
                TestServer::start(&site.root, CacheMode::All).await,
                TestServer::start(&site.root, CacheMode::Incremental).await,
            ];
            let mut document = "<?xml-stylesheet href=\"/s/twin-read.xsl\" type=\"text/xsl\"?>\n<doc/>".to_string();
            for state in &states {
                if let Some(changed) = &state.document {
                    document = changed.clone();
                }
                for (dir, data) in ["a", "b"].iter().zip(state.data) {
                    site.write(&format!("{dir}/doc.xml"), &document);
                    let path = site.root.join(dir).join("data.xml");
                    match data {
                        Some(value) => site.write(&format!("{dir}/data.xml"), &format!("<d>{dir}{value}</d>")),
                        None => {
                            let _ = std::fs::remove_file(&path);
                        }
                    }
                }
                tick().await;
                for url in ["/a/doc.xml", "/b/doc.xml"] {
                    let want = servers[0].get(url).await;
                    assert_eq!(want.status, 200, "{url} {state:?}: {}", want.text());
                    for server in &servers[1..] {
                        for _ in 0..2 {
                            let got = server.get(url).await;
                            assert_eq!(got.body, want.body, "{url} {state:?}");
                            assert_eq!(got.comparable_headers(), want.comparable_headers(), "{url} {state:?}");
                        }
                    }
                }
            }
        });
    }
}
