//! Passthru and tracing (AxKit's `passthru=1` and AxTraceIntermediate):
//! the two ways to see what a chain works on — the untransformed source, and
//! the source plus every stage's output written to a trace directory (also
//! by `axle render --trace`).

use super::{Server, out, pi, tags};
use crate::support::{MODES, TestSite, axle_ok};

#[tokio::test(flavor = "multi_thread")]
async fn passthru_returns_the_source_unless_the_location_disables_it() {
    let site = TestSite::new();
    tags(&site, &["A"]);
    let doc = format!("<?xml version=\"1.0\"?>\n{}<doc>src</doc>\n", pi("A", ""));
    site.write("pass/doc.xml", &doc);
    site.write("nopass/doc.xml", &doc);
    let config = "[location.\"/nopass\"]\npassthru = false\n";
    for mode in MODES {
        let server = Server::start(&site.root, mode, config).await;
        let raw = server.get("/pass/doc.xml?passthru=1").await;
        assert_eq!((raw.status, raw.text()), (200, doc.clone()), "{mode}");
        assert_eq!(raw.header("content-type"), "text/xml");
        assert_eq!(
            server.body("/pass/doc.xml?passthru=0").await,
            out("src...A"),
            "{mode}"
        );
        assert_eq!(server.body("/pass/doc.xml").await, out("src...A"), "{mode}");
        assert_eq!(
            server.body("/nopass/doc.xml?passthru=1").await,
            out("src...A"),
            "{mode}"
        );
        let fixture = server.get("/one.xml?passthru=yes").await;
        assert_eq!(fixture.text(), site.read("one.xml"));
        // A browser would run the PIs itself and show the page, not the
        // source: it gets the same bytes as text, in the declared charset.
        let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        let shown = server
            .get_with("/pass/doc.xml?passthru=1", &[("accept", browser)])
            .await;
        assert_eq!((shown.status, shown.text()), (200, doc.clone()), "{mode}");
        assert_eq!(shown.header("content-type"), "text/plain; charset=UTF-8");
        assert_eq!(shown.header("x-content-type-options"), "nosniff");
        assert_eq!(shown.header("vary"), "accept");
        assert_eq!(raw.header("vary"), "accept", "{mode}: either answer varies");
    }
}

/// `trace` (AxTraceIntermediate): `<dir>/<URL path>.N` (the path's
/// directories mirrored under `<dir>`) holds the source (0) and each stage's
/// output; traced requests are computed in every mode.
#[tokio::test(flavor = "multi_thread")]
async fn trace_writes_the_source_and_every_stage_output() {
    let site = TestSite::new();
    tags(&site, &["A", "B"]);
    let doc = format!(
        "<?xml version=\"1.0\"?>\n{}{}<doc>src</doc>\n",
        pi("A", ""),
        pi("B", "")
    );
    site.write("traced/doc.xml", &doc);
    let dir = site.outside().join("trace");
    let config = format!(
        "[location.\"/traced\"]\ntrace = {:?}\n",
        dir.display().to_string()
    );
    let file = |n: usize| dir.join("traced").join(format!("doc.xml.{n}"));
    let stage1 = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<out>src...A</out>\n";
    for mode in MODES {
        let _ = std::fs::remove_dir_all(&dir);
        let server = Server::start(&site.root, mode, &config).await;
        for _ in 0..2 {
            let r = server.get("/traced/doc.xml").await;
            assert_eq!((r.status, r.text()), (200, out("src...A...B")), "{mode}");
            assert_eq!(std::fs::read_to_string(file(0)).unwrap(), doc, "{mode}");
            assert_eq!(std::fs::read_to_string(file(1)).unwrap(), stage1, "{mode}");
            assert_eq!(std::fs::read(file(2)).unwrap(), r.body, "{mode}");
            assert!(!file(3).exists());
            std::fs::remove_dir_all(&dir).unwrap();
        }
        // Elsewhere nothing is traced.
        assert!(!server.body("/one.xml").await.is_empty());
        assert!(!dir.exists(), "{mode}");
    }

    // `axle render --trace DIR` does the same.
    let cli_dir = site.outside().join("cli-trace");
    let stdout = axle_ok(
        &site.root,
        [
            std::ffi::OsStr::new("render"),
            "traced/doc.xml".as_ref(),
            "--trace".as_ref(),
            cli_dir.as_os_str(),
        ],
    );
    assert_eq!(
        String::from_utf8(stdout.clone()).unwrap(),
        out("src...A...B")
    );
    let cli = |n: usize| cli_dir.join("traced").join(format!("doc.xml.{n}"));
    assert_eq!(std::fs::read_to_string(cli(0)).unwrap(), doc);
    assert_eq!(std::fs::read_to_string(cli(1)).unwrap(), stage1);
    assert_eq!(std::fs::read(cli(2)).unwrap(), stdout);
    assert!(!cli(3).exists());
}
