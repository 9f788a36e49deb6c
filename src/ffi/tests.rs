//! Unit tests of the binding: serialization exactly as `xsl:output` says,
//! error capture, security refusals, limits, params, compiled instances
//! under concurrency, and libxslt running with Axle's interposed helpers.
//! Result trees' faithfulness and canonical forms are in
//! `canonical_tests.rs`; HTML serialization against libxslt's in
//! `html_tests.rs`.

use super::*;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// Serves files from an in-memory map and records what was asked for.
#[derive(Default)]
struct MapResolver {
    files: Vec<(String, String)>,
    asked: Mutex<Vec<String>>,
}

impl Resolver for MapResolver {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        self.asked.lock().unwrap().push(url.to_string());
        self.files
            .iter()
            .find(|(name, _)| url.ends_with(name.as_str()))
            .map(|(_, body)| Loaded {
                url: url.to_string(),
                bytes: body.as_bytes().to_vec(),
            })
            .ok_or_else(|| format!("no such file {url}"))
    }
}

pub(super) fn refuse() -> Arc<dyn Resolver> {
    Arc::new(RefuseAll)
}

fn run(xsl: &str, xml: &str) -> Result<Vec<u8>, XmlError> {
    run_with(xsl, xml, &[], refuse())
}

fn run_with(
    xsl: &str,
    xml: &str,
    params: &[(String, String)],
    resolver: Arc<dyn Resolver>,
) -> Result<Vec<u8>, XmlError> {
    let style = Arc::new(Stylesheet::compile(
        xsl.as_bytes(),
        "/site/style.xsl",
        resolver.clone(),
    )?);
    let doc = XmlDoc::parse(xml.as_bytes(), "/site/doc.xml", resolver.clone())?;
    style
        .transform(doc, "/site/doc.xml", params, &Limits::default(), resolver)?
        .serialize()
}

const XSL_HEAD: &str =
    r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">"#;

pub(super) fn xsl(body: &str) -> String {
    format!("{XSL_HEAD}{body}</xsl:stylesheet>")
}

#[test]
fn output_methods_serialize_like_xsltproc() {
    let cases: &[(&str, &str)] = &[
        (
            r#"<xsl:output method="html"/><xsl:template match="/"><html><body><br/><p>x</p></body></html></xsl:template>"#,
            "<html><body>\n<br><p>x</p>\n</body></html>\n",
        ),
        (
            r#"<xsl:template match="/"><html><head/><body>é</body></html></xsl:template>"#,
            "<html>\n<head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\"></head>\n<body>\u{e9}</body>\n</html>\n",
        ),
        (
            r#"<xsl:output method="text"/><xsl:template match="/"><a>one</a><b>two</b></xsl:template>"#,
            "onetwo",
        ),
        (
            r#"<xsl:output omit-xml-declaration="yes" indent="yes"/><xsl:template match="/"><a><b/></a></xsl:template>"#,
            "<a>\n  <b/>\n</a>\n",
        ),
        (r#"<xsl:template match="/"></xsl:template>"#, ""),
    ];
    for (body, expected) in cases {
        let out = run(&xsl(body), "<doc/>").unwrap();
        assert_eq!(String::from_utf8_lossy(&out), *expected, "case {body}");
    }
}

#[test]
fn latin1_output_stays_latin1_bytes() {
    let out = run(
        &xsl(r#"<xsl:output encoding="ISO-8859-1"/><xsl:template match="/"><p>é€</p></xsl:template>"#),
        "<doc/>",
    )
    .unwrap();
    let expected: Vec<u8> = [
        b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<p>".as_slice(),
        &[0xE9],
        b"&#8364;</p>\n",
    ]
    .concat();
    assert_eq!(out, expected);
}

#[test]
fn output_settings_are_read_across_imports() {
    let resolver = Arc::new(MapResolver {
        files: vec![(
            "base.xsl".into(),
            xsl(r#"<xsl:output method="text" media-type="text/x-base" encoding="ISO-8859-1"/>"#),
        )],
        ..Default::default()
    });
    let style = Stylesheet::compile(
        xsl(r#"<xsl:import href="base.xsl"/><xsl:template match="/">x</xsl:template>"#).as_bytes(),
        "/site/style.xsl",
        resolver.clone(),
    )
    .unwrap();
    assert_eq!(style.output().method.as_deref(), Some("text"));
    assert_eq!(style.output().media_type.as_deref(), Some("text/x-base"));
    assert_eq!(style.output().encoding.as_deref(), Some("ISO-8859-1"));
    assert_eq!(
        *resolver.asked.lock().unwrap(),
        vec!["/site/base.xsl".to_string()]
    );
}

#[test]
fn malformed_document_reports_file_and_line() {
    let err = XmlDoc::parse(b"<a>\n<b>\n</a>", "/site/bad.xml", refuse()).unwrap_err();
    match err {
        XmlError::Parse {
            file,
            line,
            column,
            message,
        } => {
            assert_eq!(file.as_deref(), Some("/site/bad.xml"));
            assert_eq!(line, Some(3), "{message}");
            assert_eq!(column, Some(5), "{message}");
            assert!(message.contains("mismatch"), "{message}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn invalid_stylesheet_is_an_error_not_a_crash() {
    let err = Stylesheet::compile(
        xsl(r#"<xsl:template match="/"><xsl:value-of select="(("/></xsl:template>"#).as_bytes(),
        "/site/bad.xsl",
        refuse(),
    )
    .unwrap_err();
    assert!(
        matches!(err, XmlError::Compile(ref m) if m.contains("could not compile select expression '(('")),
        "{err}"
    );
    let err = Stylesheet::compile(b"<doc/>", "/site/notxsl.xsl", refuse()).unwrap_err();
    assert!(matches!(err, XmlError::Compile(_)), "{err}");
}

#[test]
fn params_are_string_literals_even_with_both_quotes() {
    let style = xsl(
        r#"<xsl:output method="text"/><xsl:param name="p"/><xsl:template match="/">[<xsl:value-of select="$p"/>]</xsl:template>"#,
    );
    for value in [
        "plain",
        "it's",
        "say \"hi\"",
        "both ' and \"",
        "1+2",
        "",
        "'",
    ] {
        let out = run_with(&style, "<doc/>", &[("p".into(), value.into())], refuse()).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), format!("[{value}]"));
    }
}

#[test]
fn nul_in_param_is_an_input_error() {
    let err = run_with(&xsl(""), "<doc/>", &[("p".into(), "a\0b".into())], refuse()).unwrap_err();
    assert!(matches!(err, XmlError::Input(_)));
}

#[test]
fn external_entities_go_through_the_resolver() {
    let xml = r#"<!DOCTYPE doc [<!ENTITY secret SYSTEM "file:///etc/passwd"><!ENTITY ok SYSTEM "ok.txt">]><doc>[&secret;][&ok;]</doc>"#;
    let resolver = Arc::new(MapResolver {
        files: vec![("ok.txt".into(), "fine".into())],
        ..Default::default()
    });
    let out = run_with(
        &xsl(r#"<xsl:output method="text"/><xsl:template match="/"><xsl:value-of select="doc"/></xsl:template>"#),
        xml,
        &[],
        resolver.clone(),
    )
    .unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "[][fine]");
    let asked = resolver.asked.lock().unwrap();
    assert!(asked.iter().any(|u| u.contains("passwd")), "{asked:?}");
}

#[test]
fn document_function_reads_through_the_resolver() {
    let resolver = Arc::new(MapResolver {
        files: vec![("other.xml".into(), "<o>other</o>".into())],
        ..Default::default()
    });
    let out = run_with(
        &xsl(r#"<xsl:output method="text"/><xsl:template match="/"><xsl:value-of select="document('other.xml')/o"/>|<xsl:value-of select="count(document('missing.xml'))"/></xsl:template>"#),
        "<doc/>",
        &[],
        resolver.clone(),
    )
    .unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "other|0");
}

#[test]
fn writing_files_is_forbidden() {
    let dir = std::env::temp_dir().join(format!("axle-ffi-{}", std::process::id()));
    let target = dir.join("written.txt");
    let style = format!(
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform" xmlns:exsl="http://exslt.org/common" extension-element-prefixes="exsl"><xsl:template match="/"><exsl:document href="{}" method="text">pwned</exsl:document><ok/></xsl:template></xsl:stylesheet>"#,
        target.display()
    );
    let err = run(&style, "<doc/>").unwrap_err();
    assert!(
        matches!(err, XmlError::Transform(ref m) if m.contains("denied")),
        "{err}"
    );
    assert!(!target.exists());
    assert!(!dir.exists());
}

#[test]
fn deep_recursion_stops_at_the_depth_limit() {
    let style = xsl(
        r#"<xsl:template match="/"><xsl:call-template name="r"/></xsl:template><xsl:template name="r"><xsl:if test="true()"><xsl:call-template name="r"/></xsl:if></xsl:template>"#,
    );
    let handle = std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(move || run(&style, "<doc/>"))
        .unwrap();
    let err = handle.join().unwrap().unwrap_err();
    assert!(
        matches!(err, XmlError::Transform(ref m) if m.to_lowercase().contains("recurs") || m.contains("depth")),
        "{err}"
    );
}

#[test]
fn op_limit_stops_runaway_loops() {
    let style = Arc::new(
        Stylesheet::compile(
            xsl(r#"<xsl:template match="/"><xsl:for-each select="//node()|//@*"><xsl:for-each select="//node()"><xsl:for-each select="//node()"><x/></xsl:for-each></xsl:for-each></xsl:for-each></xsl:template>"#).as_bytes(),
            "/s.xsl",
            refuse(),
        )
        .unwrap(),
    );
    let items: String = (0..300).map(|i| format!("<i n='{i}'/>")).collect();
    let doc = XmlDoc::parse(format!("<d>{items}</d>").as_bytes(), "/d.xml", refuse()).unwrap();
    let limits = Limits {
        max_ops: 100_000,
        ..Limits::default()
    };
    let err = style
        .transform(doc, "/d.xml", &[], &limits, refuse())
        .unwrap_err();
    assert!(matches!(err, XmlError::Transform(_)), "{err}");
}

#[test]
fn errors_do_not_leak_between_calls() {
    assert!(XmlDoc::parse(b"<a>", "/x.xml", refuse()).is_err());
    let out = run(
        &xsl(r#"<xsl:output method="text"/><xsl:template match="/">ok</xsl:template>"#),
        "<doc/>",
    )
    .unwrap();
    assert_eq!(out, b"ok");
}

#[test]
fn prolog_fallback_reads_latin1_documents() {
    let mut xml = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<?xml-stylesheet href=\"a.xsl\" type=\"text/xsl\" title=\"caf".to_vec();
    xml.push(0xE9);
    xml.extend_from_slice(b"\"?>\n<!DOCTYPE r PUBLIC \"-//X//Y\" \"r.dtd\"><r xmlns=\"urn:x\"/>");
    let p = prolog_via_libxml(&xml, "/d.xml").unwrap();
    assert_eq!(
        p.pis,
        vec![(
            "xml-stylesheet".to_string(),
            "href=\"a.xsl\" type=\"text/xsl\" title=\"café\"".to_string()
        )]
    );
    assert_eq!(
        p.doctype,
        Some(("r".into(), Some("-//X//Y".into()), Some("r.dtd".into())))
    );
    assert_eq!(p.root, Some((None, "r".into(), Some("urn:x".into()))));
}

/// Parameters are literal strings, never XPath: quotes of both kinds,
/// 15 KB of them, and text that would be an expression all come back as
/// they were given.
#[test]
fn parameters_are_literals() {
    let xsl = xsl(
        r#"<xsl:output method="text"/><xsl:param name="p" select="'default'"/>
<xsl:template match="/"><xsl:value-of select="$p"/></xsl:template>"#,
    );
    let quotes = "'\"".repeat(7_500);
    for value in [
        "plain",
        "a'b\"c",
        "count(/*)",
        "concat('x', 'y')",
        quotes.as_str(),
    ] {
        let params = [("p".to_string(), value.to_string())];
        let out = run_with(&xsl, "<a/>", &params, refuse()).unwrap();
        assert_eq!(out, value.as_bytes(), "{}", &value[..value.len().min(40)]);
    }
}

/// A stylesheet whose one XPath expression is cubic in the number of `n`
/// elements (over 400: 64 million node visits inside one `count()`, never
/// an instruction boundary), and a document with `n` of them.
fn cubic(n: usize) -> (String, String) {
    let xsl = xsl(r#"<xsl:output method="text"/><xsl:template match="/">
<xsl:value-of select="count(//n[count(//n[count(//n) > 0]) > 0])"/></xsl:template>"#);
    (xsl, format!("<r>{}</r>", "<n/>".repeat(n)))
}

fn run_budgeted(
    xsl: &str,
    xml: &str,
    budget: &RenderBudget,
) -> (
    Result<Vec<u8>, XmlError>,
    Option<Exceeded>,
    std::time::Duration,
) {
    let started = std::time::Instant::now();
    let scope = BudgetScope::enter(budget);
    let out = run_with(xsl, xml, &[], refuse());
    let why = scope.check();
    (out, why, started.elapsed())
}

#[test]
fn a_render_past_its_deadline_is_stopped_inside_xpath_and_its_stylesheet_runs_again() {
    let (xsl, xml) = cubic(1000);
    let style = Arc::new(Stylesheet::compile(xsl.as_bytes(), "/site/style.xsl", refuse()).unwrap());
    let budget = RenderBudget {
        deadline: Some(std::time::Instant::now() + std::time::Duration::from_millis(300)),
        ..RenderBudget::unlimited()
    };
    let started = std::time::Instant::now();
    let scope = BudgetScope::enter(&budget);
    let doc = XmlDoc::parse(xml.as_bytes(), "/site/doc.xml", refuse()).unwrap();
    let out = style.transform(doc, "/site/doc.xml", &[], &Limits::default(), refuse());
    assert_eq!(scope.check(), Some(Exceeded::Deadline));
    drop(scope);
    let took = started.elapsed();
    assert!(
        matches!(out, Err(XmlError::Stopped(Exceeded::Deadline))),
        "{:?}",
        out.err()
    );
    assert!(
        took < std::time::Duration::from_secs(5),
        "stopped after {took:?}"
    );
    // The stopped instance was dropped; the stylesheet compiles another
    // and runs to its end.
    let (_, small) = cubic(5);
    let doc = XmlDoc::parse(small.as_bytes(), "/site/doc.xml", refuse()).unwrap();
    let out = style
        .transform(doc, "/site/doc.xml", &[], &Limits::default(), refuse())
        .unwrap();
    assert_eq!(out.serialize().unwrap(), b"5");
}

#[test]
fn renders_that_start_while_the_watchdog_is_already_watching_are_stopped_on_time() {
    // The first scope wakes the watchdog; the ones entered while it is
    // looking every POLL do not (src/ffi/budget.rs, Watchdog::watch) and
    // must still be stopped at their deadlines, the short one included.
    let (xsl, xml) = cubic(1000);
    let runs: Vec<_> = [400u64, 150, 300, 20]
        .into_iter()
        .enumerate()
        .map(|(i, ms)| {
            let (xsl, xml) = (xsl.clone(), xml.clone());
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(30 * i as u64));
                let budget = RenderBudget {
                    deadline: Some(
                        std::time::Instant::now() + std::time::Duration::from_millis(ms),
                    ),
                    ..RenderBudget::unlimited()
                };
                run_budgeted(&xsl, &xml, &budget)
            })
        })
        .collect();
    for run in runs {
        let (out, why, took) = run.join().unwrap();
        assert!(
            matches!(out, Err(XmlError::Stopped(Exceeded::Deadline))),
            "{out:?}"
        );
        assert_eq!(why, Some(Exceeded::Deadline));
        assert!(
            took < std::time::Duration::from_secs(5),
            "stopped after {took:?}"
        );
    }
}

#[test]
fn a_cancelled_render_is_stopped() {
    let (xsl, xml) = cubic(1000);
    let budget = RenderBudget::unlimited();
    let cancel = Arc::clone(&budget.cancel);
    let setter = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        cancel.store(true, Ordering::Release);
    });
    let (out, why, took) = run_budgeted(&xsl, &xml, &budget);
    setter.join().unwrap();
    assert!(
        matches!(out, Err(XmlError::Stopped(Exceeded::Cancelled))),
        "{out:?}"
    );
    assert_eq!(why, Some(Exceeded::Cancelled));
    assert!(
        took < std::time::Duration::from_secs(5),
        "stopped after {took:?}"
    );
}

#[test]
fn a_render_over_its_memory_budget_fails_and_the_next_one_runs() {
    // Doubles a string 24 times: 16 MiB of text, copies included more.
    let xsl = xsl(r#"<xsl:output method="text"/><xsl:template match="/">
<xsl:call-template name="double"><xsl:with-param name="s" select="'0123456789abcdef'"/><xsl:with-param name="n" select="24"/></xsl:call-template>
</xsl:template>
<xsl:template name="double"><xsl:param name="s"/><xsl:param name="n"/>
<xsl:choose><xsl:when test="$n = 0"><xsl:value-of select="string-length($s)"/></xsl:when>
<xsl:otherwise><xsl:call-template name="double"><xsl:with-param name="s" select="concat($s, $s)"/><xsl:with-param name="n" select="$n - 1"/></xsl:call-template></xsl:otherwise></xsl:choose>
</xsl:template>"#);
    let budget = RenderBudget {
        memory: 8 << 20,
        ..RenderBudget::unlimited()
    };
    let (out, why, _) = run_budgeted(&xsl, "<a/>", &budget);
    assert!(
        matches!(out, Err(XmlError::Stopped(Exceeded::Memory))),
        "{out:?}"
    );
    assert_eq!(why, Some(Exceeded::Memory));
    // With room, the same render completes.
    let budget = RenderBudget {
        memory: 1 << 30,
        ..RenderBudget::unlimited()
    };
    let (out, why, _) = run_budgeted(&xsl, "<a/>", &budget);
    assert_eq!(out.unwrap(), (16u64 << 24).to_string().as_bytes());
    assert_eq!(why, None);
}

/// The serializer's text escaping (the shim's own, for speed) writes what
/// libxml2's default does: `<` `>` `&` and CR escaped, everything else as
/// is, whatever the buffer boundaries (long texts cross several chunks).
#[test]
fn serialized_text_is_escaped_exactly_like_libxml2s_default() {
    fn escaped(text: &str) -> String {
        let mut s = String::new();
        for c in text.chars() {
            match c {
                '<' => s.push_str("&lt;"),
                '>' => s.push_str("&gt;"),
                '&' => s.push_str("&amp;"),
                '\r' => s.push_str("&#13;"),
                c => s.push(c),
            }
        }
        s
    }
    let pieces = [
        "plain ",
        "<",
        ">",
        "&",
        "\r",
        "é€😀",
        "&&&&",
        "<<>>",
        "\r\r",
    ];
    let mut text = String::new();
    for i in 0..20_000usize {
        text.push_str(pieces[(i * 7 + i / 13) % pieces.len()]);
    }
    // The document's text is given through character references, so the
    // parser keeps CRs and every special character literally.
    let mut source = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<t>");
    for c in text.chars() {
        match c {
            '<' => source.push_str("&#60;"),
            '&' => source.push_str("&#38;"),
            '\r' => source.push_str("&#13;"),
            c => source.push(c),
        }
    }
    source.push_str("</t>");
    let doc = XmlDoc::parse(source.as_bytes(), "/t.xml", refuse()).unwrap();
    let bytes = doc.to_xml_bytes().unwrap();
    let want = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<t>{}</t>\n",
        escaped(&text)
    );
    assert_eq!(String::from_utf8(bytes).unwrap(), want);
}

/// A resolver whose one import can be edited between compiles.
struct EditableImport(Mutex<String>);

impl Resolver for EditableImport {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        if url.ends_with("/base.xsl") {
            Ok(Loaded {
                url: url.to_string(),
                bytes: self.0.lock().unwrap().as_bytes().to_vec(),
            })
        } else {
            Err(format!("no such file {url}"))
        }
    }
}

#[test]
fn another_instance_compiles_from_the_bytes_the_first_compile_read() {
    let base = |word: &str| {
        xsl(&format!(
            r#"<xsl:output method="text"/><xsl:template match="/">{word}</xsl:template>"#
        ))
    };
    let resolver = Arc::new(EditableImport(Mutex::new(base("one"))));
    let style = Arc::new(
        Stylesheet::compile(
            xsl(r#"<xsl:import href="base.xsl"/>"#).as_bytes(),
            "/site/style.xsl",
            resolver.clone(),
        )
        .unwrap(),
    );
    let render = |style: &Arc<Stylesheet>| {
        let doc = XmlDoc::parse(b"<doc/>", "/site/doc.xml", refuse()).unwrap();
        let out = style
            .transform(doc, "/site/doc.xml", &[], &Limits::default(), refuse())
            .unwrap()
            .serialize()
            .unwrap();
        String::from_utf8(out).unwrap()
    };
    assert_eq!(render(&style), "one");
    assert_eq!(style.instances(), 1, "one transform at a time needs one");
    // The import changes on disk; while the first instance is busy, a
    // transform compiles a second one, from the bytes read the first time.
    *resolver.0.lock().unwrap() = base("two");
    let busy = style.lease().unwrap();
    assert_eq!(render(&style), "one");
    assert_eq!(style.instances(), 2);
    drop(busy);
    // Both are idle now: no third one.
    assert_eq!(render(&style), "one");
    assert_eq!(render(&style), "one");
    assert_eq!(style.instances(), 2);
}

#[test]
fn concurrent_transforms_of_one_stylesheet_give_the_bytes_of_one_alone() {
    // `(…|…)[last()]` is where libxml2 reorders a union's branches inside
    // the compiled expression while evaluating it (see `Stylesheet`): the
    // nearest `a` or `b` ancestor of every `x`, through nestings that make
    // each branch the heavier one in turn.
    let style = xsl(r#"<xsl:output method="text"/>
        <xsl:template match="/"><xsl:for-each select="//x">
          <xsl:value-of select="(ancestor::a|ancestor::b)[last()]/@n"/>
          <xsl:value-of select="(ancestor::b|ancestor::a)[1]/@n"/>,</xsl:for-each></xsl:template>"#);
    let mut xml = String::from("<doc>");
    for i in 0..300 {
        let depth = 1 + i % 7;
        for d in 0..depth {
            let name = if (i / 3 + d) % 2 == 0 { "a" } else { "b" };
            xml.push_str(&format!("<{name} n=\"{i}.{d}\"><x/>"));
        }
        for d in (0..depth).rev() {
            let name = if (i / 3 + d) % 2 == 0 { "a" } else { "b" };
            xml.push_str(&format!("<x/></{name}>"));
        }
    }
    xml.push_str("</doc>");
    let style =
        Arc::new(Stylesheet::compile(style.as_bytes(), "/site/style.xsl", refuse()).unwrap());
    let render = |style: &Arc<Stylesheet>| {
        let doc = XmlDoc::parse(xml.as_bytes(), "/site/doc.xml", refuse()).unwrap();
        style
            .transform(doc, "/site/doc.xml", &[], &Limits::default(), refuse())
            .unwrap()
            .serialize()
            .unwrap()
    };
    let alone = render(&style);
    assert!(
        alone.starts_with(b"0.00.0,0.00.0,"),
        "{}",
        String::from_utf8_lossy(&alone[..40])
    );
    let wrong = std::sync::atomic::AtomicUsize::new(0);
    let renders_each = 40;
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..renders_each {
                    if render(&style) != alone {
                        wrong.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(
        wrong.into_inner(),
        0,
        "renders (of {}) that differ from the render alone",
        4 * renders_each
    );
}

#[test]
fn libxslt_compares_strings_with_axle_s_str_equal_and_gets_the_same_answers() {
    assert!(
        str_equal_is_ours(),
        "the executable does not export csrc/shim.c's xmlStrEqual"
    );
    // libxslt tells instructions from literal result elements with
    // xmlStrEqual(namespace, XSLT's): a near miss of the namespace (longer,
    // shorter, one byte off) is literal, the namespace under another prefix
    // is XSLT.
    let out = run(
        r#"<t:stylesheet version="1.0" xmlns:t="http://www.w3.org/1999/XSL/Transform"
             xmlns:a="http://www.w3.org/1999/XSL/TransformX"
             xmlns:b="http://www.w3.org/1999/XSL/Transfor"
             xmlns:c="http://www.w3.org/1999/XSL/Transforn"
             exclude-result-prefixes="">
           <t:output method="xml" omit-xml-declaration="yes"/>
           <t:template match="/"><r><a:value-of select="1"/><b:value-of select="2"/><c:value-of select="3"/><t:value-of select="4"/></r></t:template>
         </t:stylesheet>"#,
        "<d/>",
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        concat!(
            r#"<r xmlns:a="http://www.w3.org/1999/XSL/TransformX" xmlns:b="http://www.w3.org/1999/XSL/Transfor" xmlns:c="http://www.w3.org/1999/XSL/Transforn">"#,
            r#"<a:value-of select="1"/><b:value-of select="2"/><c:value-of select="3"/>4</r>"#,
            "\n"
        )
    );
}

#[test]
fn element_available_answers_as_xsltproc_with_the_xslt_elements_registered_once() {
    assert!(
        xslt_elements_are_shared(),
        "the executable does not export csrc/shim.c's xsltRegisterAllElement"
    );
    // Every name libxslt registers per context, names it does not, and
    // module elements; the expected answers are xsltproc 1.1.35's.
    let names = "xsl:apply-templates xsl:apply-imports xsl:call-template xsl:element \
        xsl:attribute xsl:text xsl:processing-instruction xsl:comment xsl:copy xsl:value-of \
        xsl:number xsl:for-each xsl:if xsl:choose xsl:sort xsl:copy-of xsl:message \
        xsl:variable xsl:param xsl:with-param xsl:decimal-format xsl:when xsl:otherwise \
        xsl:fallback xsl:template xsl:stylesheet xsl:key xsl:output xsl:foo exsl:document \
        func:result foo:bar";
    let list: String = names
        .split_whitespace()
        .map(|n| format!("<foo:n>{n}</foo:n>"))
        .collect();
    let style = format!(
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
             xmlns:exsl="http://exslt.org/common" xmlns:func="http://exslt.org/functions"
             xmlns:foo="urn:foo">
           <xsl:output method="text"/>
           <xsl:template match="/">
             <xsl:for-each select="document('')//foo:names/foo:n">
               <xsl:value-of select="concat(., '=', element-available(string(.)), ' ')"/>
             </xsl:for-each>
           </xsl:template>
           <foo:names>{list}</foo:names>
         </xsl:stylesheet>"#
    );
    let answers: String = names
        .split_whitespace()
        .map(|n| {
            let known = !matches!(
                n,
                "xsl:template"
                    | "xsl:stylesheet"
                    | "xsl:key"
                    | "xsl:output"
                    | "xsl:foo"
                    | "foo:bar"
            );
            format!("{n}={known} ")
        })
        .collect();
    let out = run(&style, "<d/>").unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), answers);
    // xsl:message still reaches the error capture.
    let err = run(
        &xsl(r#"<xsl:template match="/"><xsl:message terminate="yes">stop here</xsl:message></xsl:template>"#),
        "<d/>",
    )
    .unwrap_err();
    assert!(err.to_string().contains("stop here"), "{err}");
}

#[test]
fn library_versions_are_the_running_libraries_dotted() {
    assert_eq!(init::dotted(20914), "2.9.14");
    assert_eq!(init::dotted(10135), "1.1.35");
    assert_eq!(init::dotted(820), "0.8.20");
    let versions = library_versions();
    let dotted = regex::Regex::new(r"^\d+\.\d+\.\d+$").unwrap();
    for version in [&versions.libxml2, &versions.libxslt, &versions.libexslt] {
        assert!(dotted.is_match(version), "{versions}");
    }
    assert!(versions.libxml2.starts_with("2."), "{versions}");
    assert!(versions.libxslt.starts_with("1."), "{versions}");
    assert_eq!(
        versions.to_string(),
        format!(
            "libxml2 {}, libxslt {}, libexslt {}",
            versions.libxml2, versions.libxslt, versions.libexslt
        )
    );
}

#[test]
fn endless_recursion_reports_the_limit_not_xsltproc_options() {
    // On a 16 MiB stack, as the transform pool's threads have: 3000
    // levels come close to overflowing a test thread's 2 MiB.
    let err = std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(|| {
            run(
                &xsl(
                    r#"<xsl:template match="/"><xsl:call-template name="again"/></xsl:template>
                       <xsl:template name="again"><xsl:call-template name="again"/></xsl:template>"#,
                ),
                "<doc/>",
            )
        })
        .unwrap()
        .join()
        .unwrap()
        .unwrap_err();
    let XmlError::Transform(message) = &err else {
        panic!("{err:?}");
    };
    assert!(
        message.contains(
            "A potential infinite template recursion was detected: it reached the limit of \
             3000 nested template calls and variables/params."
        ),
        "{message}"
    );
    assert!(!message.contains("--maxdepth"), "{message}");
    assert!(!message.contains("You can adjust"), "{message}");
}

#[test]
fn libxslt_advice_on_limits_is_reworded_and_other_text_kept() {
    let depth = "runtime error: file /s.xsl line 3 element call-template\n\
        xsltApplySequenceConstructor: A potential infinite template recursion was detected.\n\
        You can adjust xsltMaxDepth (--maxdepth) in order to raise the maximum number of \
        nested template calls and variables/params (currently set to 200).\n";
    assert_eq!(
        errors::reword(depth),
        "runtime error: file /s.xsl line 3 element call-template\n\
         xsltApplySequenceConstructor: A potential infinite template recursion was detected: \
         it reached the limit of 200 nested template calls and variables/params.\n"
    );
    let vars = "xsltApplyXSLTTemplate: A potential infinite template recursion was detected.\n\
        You can adjust maxTemplateVars (--maxvars) in order to raise the maximum number of \
        variables/params (currently set to 15000).";
    assert_eq!(
        errors::reword(vars),
        "xsltApplyXSLTTemplate: A potential infinite template recursion was detected: \
         it reached the limit of 15000 variables/params."
    );
    // Twice in one buffer; unknown or damaged text untouched.
    assert_eq!(
        errors::reword(&format!("{vars}\n{vars}"))
            .matches("limit of 15000")
            .count(),
        2
    );
    for kept in [
        "xsl:import : recursion detected on imported URL /a.xsl",
        "A potential infinite template recursion was detected.\nYou can adjust xsltMaxDepth \
         (--maxdepth) in order to raise the maximum number of nested template calls and \
         variables/params (currently set to x).",
        "",
    ] {
        assert_eq!(errors::reword(kept), kept);
    }
}

#[test]
fn a_broken_select_reports_its_expression_and_column() {
    let xsl = br#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:template match="/">
    <p><xsl:value-of select="count(//para"/></p>
  </xsl:template>
</xsl:stylesheet>"#;
    let err = Stylesheet::compile(xsl, "/site/bad.xsl", refuse()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("Invalid expression at column 13 of the XPath expression \"count(//para\""),
        "{text}"
    );
    assert!(text.contains("file /site/bad.xsl line 3"), "{text}");
}
