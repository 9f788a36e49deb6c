use super::*;

fn pi(href: &str, r#type: &str) -> StylesheetPi {
    StylesheetPi {
        href: href.into(),
        r#type: r#type.into(),
        ..StylesheetPi::default()
    }
}

fn root(local: &str) -> RootName {
    RootName {
        prefix: None,
        local: local.into(),
        namespace: None,
    }
}

fn root_ns(prefix: Option<&str>, local: &str, namespace: &str) -> RootName {
    RootName {
        prefix: prefix.map(Into::into),
        local: local.into(),
        namespace: Some(namespace.into()),
    }
}

fn with_subset(doctype: Option<Doctype>) -> Option<Doctype> {
    doctype.map(|d| Doctype {
        internal_subset: true,
        ..d
    })
}

fn doctype(name: &str, public_id: Option<&str>, system_id: Option<&str>) -> Option<Doctype> {
    Some(Doctype {
        name: name.into(),
        public_id: public_id.map(Into::into),
        system_id: system_id.map(Into::into),
        internal_subset: false,
    })
}

fn ok(input: &str) -> Prolog {
    match scan(input.as_bytes()) {
        Ok(prolog) => prolog,
        Err(e) => panic!("scan({input:?}) failed: {e}"),
    }
}

#[test]
fn root_element_forms() {
    let cases = [
        ("<root/>", "root"),
        ("<root>", "root"),
        ("<root >text", "root"),
        ("<root\n/>", "root"),
        ("<r-1.x_y a='1' b=\"2\"/>", "r-1.x_y"),
        ("<root a = '1'\tb\n=\n\"2\" >", "root"),
        ("<root a='x>y' b=\"1 > 0\">", "root"),
        ("<root a='say \"hi\"' b=\"it's\">", "root"),
        ("<_r/>", "_r"),
        ("<ünïcødé/>", "ünïcødé"),
        ("<root>unclosed <and> </garbage", "root"),
    ];
    for (input, local) in cases {
        let prolog = ok(input);
        assert_eq!(prolog.root, root(local), "{input}");
        assert_eq!(
            prolog,
            Prolog {
                root: root(local),
                ..Prolog::default()
            },
            "{input}"
        );
    }
}

#[test]
fn xml_declaration_encodings() {
    let cases = [
        (r#"<?xml version="1.0"?><a/>"#, None),
        (
            r#"<?xml version="1.0" encoding="UTF-8"?><a/>"#,
            Some("UTF-8"),
        ),
        (
            r#"<?xml version='1.0' encoding='utf-8' standalone='yes'?><a/>"#,
            Some("utf-8"),
        ),
        (
            r#"<?xml version="1.1" encoding="utf8" ?><a/>"#,
            Some("utf8"),
        ),
        (
            r#"<?xml version="1.0" encoding="US-ASCII"?><a/>"#,
            Some("US-ASCII"),
        ),
        (
            r#"<?xml version="1.0" encoding = "ascii" ?><a/>"#,
            Some("ascii"),
        ),
        ("<?xml\tversion=\"1.0\"\nstandalone=\"no\"?>\n<a/>", None),
    ];
    for (input, encoding) in cases {
        let prolog = ok(input);
        assert_eq!(prolog.xml_encoding.as_deref(), encoding, "{input}");
        assert_eq!(prolog.root, root("a"), "{input}");
    }
}

#[test]
fn utf8_byte_order_mark_is_skipped() {
    let mut input = b"\xEF\xBB\xBF".to_vec();
    input.extend_from_slice(br#"<?xml version="1.0" encoding="UTF-8"?><?xml-stylesheet href="s.xsl" type="text/xsl"?><doc/>"#);
    let prolog = scan(&input).expect("BOM document");
    assert_eq!(prolog.xml_encoding.as_deref(), Some("UTF-8"));
    assert_eq!(prolog.stylesheets, vec![pi("s.xsl", "text/xsl")]);
    assert_eq!(prolog.root, root("doc"));
    assert_eq!(scan(b"\xEF\xBB\xBF<doc/>").map(|p| p.root), Ok(root("doc")));
}

#[test]
fn stylesheet_pis_in_document_order() {
    let input = r#"<?xml version="1.0"?>
<!-- the chain -->
<?xml-stylesheet href="first.xsl" type="text/xsl"?>
<?other-pi href="no.xsl" type="text/xsl"?>
<?xml-stylesheet type='text/xsl' href='second.xsl'?>
<!DOCTYPE page SYSTEM "page.dtd">
<?xml-stylesheet href="third.css" type="text/css" ?>
<page>
<?xml-stylesheet href="after-root.xsl" type="text/xsl"?>
</page>"#;
    let prolog = ok(input);
    assert_eq!(
        prolog.stylesheets,
        vec![
            pi("first.xsl", "text/xsl"),
            pi("second.xsl", "text/xsl"),
            pi("third.css", "text/css")
        ]
    );
    assert_eq!(prolog.doctype, doctype("page", None, Some("page.dtd")));
    assert_eq!(prolog.root, root("page"));
}

#[test]
fn stylesheet_pi_with_every_pseudo_attribute() {
    let input = r#"<?xml-stylesheet alternate="yes" title="Large &amp; print" media="print, screen" charset="UTF-8" href="big.xsl?a=1&amp;b=2" type="text/xsl"?><doc/>"#;
    let expected = StylesheetPi {
        href: "big.xsl?a=1&b=2".into(),
        r#type: "text/xsl".into(),
        title: Some("Large & print".into()),
        media: Some("print, screen".into()),
        charset: Some("UTF-8".into()),
        alternate: true,
    };
    assert_eq!(ok(input).stylesheets, vec![expected]);
}

#[test]
fn stylesheet_pi_data_table() {
    let full = |href: &str, r#type: &str, f: fn(&mut StylesheetPi)| {
        let mut pi = pi(href, r#type);
        f(&mut pi);
        Some(pi)
    };
    let cases: Vec<(&str, Option<StylesheetPi>)> = vec![
        (
            r#"href="a.xsl" type="text/xsl""#,
            Some(pi("a.xsl", "text/xsl")),
        ),
        (
            r#"href='a.xsl' type='text/xsl'"#,
            Some(pi("a.xsl", "text/xsl")),
        ),
        (
            "  href = \"a.xsl\"\n\ttype\t=\t'text/xsl'  ",
            Some(pi("a.xsl", "text/xsl")),
        ),
        (
            r#"href="it's.xsl" type='say "xsl"'"#,
            Some(pi("it's.xsl", r#"say "xsl""#)),
        ),
        (
            r#"href="&lt;&gt;&amp;&quot;&apos;" type="&#65;&#x42;&#X43;""#,
            None, // &#X43; is not a character reference (the x must be lower case)
        ),
        (
            r#"href="&lt;&gt;&amp;&quot;&apos;" type="&#65;&#x42;&#x10000;&#0000067;""#,
            Some(pi("<>&\"'", "AB\u{10000}C")),
        ),
        (
            r#"href="a.xsl" type="text/xsl" unknown="whatever" x-y='z'"#,
            Some(pi("a.xsl", "text/xsl")),
        ),
        (
            r#"href="a.xsl" type="text/xsl" alternate="no""#,
            Some(pi("a.xsl", "text/xsl")),
        ),
        (
            r#"href="a.xsl" type="text/xsl" alternate="YES""#,
            Some(pi("a.xsl", "text/xsl")),
        ),
        (
            r#"href="a.xsl" type="text/xsl" alternate="yes" title="""#,
            full("a.xsl", "text/xsl", |p| {
                p.alternate = true;
                p.title = Some(String::new());
            }),
        ),
        ("href=\"a\r\nb\rc\" type=\"t\"", Some(pi("a\nb\nc", "t"))),
        ("href=\"a\tb\" type=\"t\"", Some(pi("a\tb", "t"))),
        // Missing or empty href or type: ignored (AxKit's rule).
        (r#"type="text/xsl""#, None),
        (r#"href="a.xsl""#, None),
        (r#"href="" type="text/xsl""#, None),
        (r#"href="a.xsl" type="""#, None),
        ("", None),
        // Broken syntax.
        (r#"href="a.xsl"type="text/xsl""#, None),
        (r#"href="a.xsl" type="text/xsl"#, None),
        (r#"href=a.xsl type="text/xsl""#, None),
        (r#"href "a.xsl" type="text/xsl""#, None),
        (r#"href="a.xsl" type="text/xsl" junk"#, None),
        (r#"href="a.xsl" type="text/xsl" ="x""#, None),
        (r#""href"="a.xsl" type="text/xsl""#, None),
        (r#"href="a<b.xsl" type="text/xsl""#, None),
        (r#"href="a&b.xsl" type="text/xsl""#, None),
        (r#"href="a&nbsp;b.xsl" type="text/xsl""#, None),
        (r#"href="&#0;" type="text/xsl""#, None),
        (r#"href="&#xD800;" type="text/xsl""#, None),
        (r#"href="&#99999999999999999999;" type="text/xsl""#, None),
        (r#"href="&#;" type="text/xsl""#, None),
        (r#"href="&#x;" type="text/xsl""#, None),
        (r#"href="&#12a;" type="text/xsl""#, None),
        (r#"href="a.xsl" type="text/xsl" href="b.xsl""#, None),
    ];
    for (data, expected) in cases {
        assert_eq!(parse_stylesheet_pi(data), expected, "{data}");
    }
}

#[test]
fn pi_target_must_be_exactly_xml_stylesheet() {
    let cases = [
        (
            r#"<?xml-stylesheetfoo href="a.xsl" type="text/xsl"?><a/>"#,
            vec![],
        ),
        (
            r#"<?xml-stylesheet-x href="a.xsl" type="text/xsl"?><a/>"#,
            vec![],
        ),
        (
            r#"<?XML-STYLESHEET href="a.xsl" type="text/xsl"?><a/>"#,
            vec![],
        ),
        (r#"<?xml-stylesheet?><a/>"#, vec![]),
        (r#"<?xml-stylesheet ?><a/>"#, vec![]),
        (r#"<?xml-stylesheet href="a.xsl"?><a/>"#, vec![]),
        (
            r#"<?xml-stylesheet href="a.xsl" type="text/xsl" broken?><a/>"#,
            vec![],
        ),
        (
            "<?xml-stylesheet\nhref=\"a.xsl\"\ntype=\"text/xsl\"?><a/>",
            vec![pi("a.xsl", "text/xsl")],
        ),
        (
            r#"<?xml-stylesheet href="a.xsl" type="text/xsl"?><a/>"#,
            vec![pi("a.xsl", "text/xsl")],
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(ok(input).stylesheets, expected, "{input}");
    }
}

#[test]
fn other_pis_comments_and_whitespace_are_skipped() {
    let input = "\n\t <!-- a comment with <tags> and ?> and - dashes -->\r\n\
        <?php echo '<root>'; ?>\n\
        <!---->\n\
        <?target?>\n\
        <?xml-foo data?>\n\
        <root/>";
    assert_eq!(
        ok(input),
        Prolog {
            root: root("root"),
            ..Prolog::default()
        }
    );
}

#[test]
fn pis_after_the_root_are_never_looked_at() {
    let input = r#"<?xml-stylesheet href="a.xsl" type="text/xsl"?><root/><?xml-stylesheet href="b.xsl" type="text/xsl"?>"#;
    assert_eq!(ok(input).stylesheets, vec![pi("a.xsl", "text/xsl")]);
    // Nothing after the root start tag matters, not even garbage.
    let input = "<root>\u{0}\u{1}<?xml-stylesheet href=\"b.xsl\" type=\"text/xsl\"?><<<<";
    let mut bytes = input.as_bytes().to_vec();
    bytes.extend_from_slice(b"\xFF\xFE");
    assert_eq!(scan(&bytes).map(|p| p.stylesheets), Ok(vec![]));
}

#[test]
fn doctype_table() {
    let cases = [
        ("<!DOCTYPE a><a/>", doctype("a", None, None)),
        ("<!DOCTYPE a ><a/>", doctype("a", None, None)),
        (
            "<!DOCTYPE a SYSTEM \"a.dtd\"><a/>",
            doctype("a", None, Some("a.dtd")),
        ),
        (
            "<!DOCTYPE a SYSTEM 'a \"b\".dtd' ><a/>",
            doctype("a", None, Some("a \"b\".dtd")),
        ),
        ("<!DOCTYPE a SYSTEM ''><a/>", doctype("a", None, Some(""))),
        (
            r#"<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd"><html/>"#,
            doctype(
                "html",
                Some("-//W3C//DTD XHTML 1.0 Strict//EN"),
                Some("http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd"),
            ),
        ),
        (
            "<!DOCTYPE\na\nPUBLIC\n'p'\n's'\n>\n<a/>",
            doctype("a", Some("p"), Some("s")),
        ),
        (
            "<!DOCTYPE a [<!ELEMENT a EMPTY>]><a/>",
            with_subset(doctype("a", None, None)),
        ),
        ("<!DOCTYPE a[]><a/>", with_subset(doctype("a", None, None))),
        (
            "<!DOCTYPE a SYSTEM \"a.dtd\"[ ] ><a/>",
            with_subset(doctype("a", None, Some("a.dtd"))),
        ),
        (
            r#"<!DOCTYPE a SYSTEM "a.dtd" [
  <!ENTITY close "]>">
  <!ENTITY other ']]> and "quotes"'>
  <!-- a comment with ]> and an apostrophe: don't -->
  <?pi with ]> and ' inside?>
  <!ATTLIST a b CDATA "]>">
  %pe;
]>
<a/>"#,
            with_subset(doctype("a", None, Some("a.dtd"))),
        ),
        (
            "<!DOCTYPE x:doc><x:doc xmlns:x='urn:x'/>",
            doctype("x:doc", None, None),
        ),
    ];
    for (input, expected) in cases {
        let prolog = ok(input);
        assert_eq!(prolog.doctype, expected, "{input}");
        assert!(!prolog.root.local.is_empty());
    }
}

#[test]
fn root_namespace_table() {
    const XHTML: &str = "http://www.w3.org/1999/xhtml";
    const XSL: &str = "http://www.w3.org/1999/XSL/Transform";
    let cases = [
        (
            "<html xmlns='http://www.w3.org/1999/xhtml'>",
            root_ns(None, "html", XHTML),
        ),
        (
            r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">"#,
            root_ns(Some("xsl"), "stylesheet", XSL),
        ),
        (
            r#"<xsl:stylesheet xmlns="urn:default" xmlns:xsl="http://www.w3.org/1999/XSL/Transform" xmlns:a="urn:a">"#,
            root_ns(Some("xsl"), "stylesheet", XSL),
        ),
        (
            r#"<doc xmlns:a="urn:a" a:attr="1" xmlns="urn:d"/>"#,
            root_ns(None, "doc", "urn:d"),
        ),
        (r#"<doc xmlns:a="urn:a"/>"#, root("doc")),
        (r#"<doc xmlns=""/>"#, root("doc")),
        (
            r#"<doc xmlns = 'urn:a?x=1&amp;y=&#50;'>"#,
            root_ns(None, "doc", "urn:a?x=1&y=2"),
        ),
        ("<doc xmlns='urn:\na'>", root_ns(None, "doc", "urn: a")),
        (
            r#"<doc attr="a > b" xmlns="urn:gt>"/>"#,
            root_ns(None, "doc", "urn:gt>"),
        ),
        ("<xml:doc/>", root_ns(Some("xml"), "doc", XML_NAMESPACE)),
        (
            r#"<p:doc xmlns:p="urn:p" xmlns:pp="urn:pp"/>"#,
            root_ns(Some("p"), "doc", "urn:p"),
        ),
        (
            r#"<pp:doc xmlns:p="urn:p" xmlns:pp="urn:pp"/>"#,
            root_ns(Some("pp"), "doc", "urn:pp"),
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(ok(input).root, expected, "{input}");
    }
}

#[test]
fn clark_notation() {
    assert_eq!(root("doc").clark(), "doc");
    assert_eq!(root_ns(Some("x"), "doc", "urn:x").clark(), "{urn:x}doc");
    assert_eq!(
        ok("<html xmlns='http://www.w3.org/1999/xhtml'/>")
            .root
            .clark(),
        "{http://www.w3.org/1999/xhtml}html"
    );
}

#[test]
fn unsupported_table() {
    let mut utf16le: Vec<u8> = b"\xFF\xFE".to_vec();
    utf16le.extend("<a/>".encode_utf16().flat_map(u16::to_le_bytes));
    let utf16be_no_bom: Vec<u8> = "<?xml version=\"1.0\"?><a/>"
        .encode_utf16()
        .flat_map(u16::to_be_bytes)
        .collect();
    let utf16le_no_bom: Vec<u8> = "<a/>".encode_utf16().flat_map(u16::to_le_bytes).collect();
    let utf32be: Vec<u8> = "<a/>"
        .chars()
        .flat_map(|c| u32::from(c).to_be_bytes())
        .collect();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("UTF-16 LE with BOM", utf16le),
        ("UTF-16 BE without BOM", utf16be_no_bom),
        ("UTF-16 LE without BOM", utf16le_no_bom),
        ("UTF-32 BE", utf32be),
        ("UTF-32 BE BOM", b"\x00\x00\xFE\xFF\x00\x00\x00<".to_vec()),
        ("UTF-16 BE BOM", b"\xFE\xFF\x00<\x00a\x00/\x00>".to_vec()),
        ("EBCDIC", b"\x4C\x6F\xA7\x94\x93".to_vec()),
        (
            "ISO-8859-1",
            br#"<?xml version="1.0" encoding="ISO-8859-1"?><a/>"#.to_vec(),
        ),
        (
            "iso-8859-1 lower case",
            br#"<?xml version="1.0" encoding="iso-8859-1"?><a/>"#.to_vec(),
        ),
        (
            "declared UTF-16",
            br#"<?xml version="1.0" encoding="UTF-16"?><a/>"#.to_vec(),
        ),
        (
            "windows-1252",
            br#"<?xml version="1.0" encoding='windows-1252'?><a/>"#.to_vec(),
        ),
        (
            "Latin-1 byte in a comment",
            b"<!-- caf\xE9 --><a/>".to_vec(),
        ),
        ("Latin-1 byte in the root name", b"<caf\xE9/>".to_vec()),
        ("Latin-1 byte in an attribute", b"<a b='\xE9'/>".to_vec()),
        (
            "Latin-1 byte in a stylesheet PI",
            b"<?xml-stylesheet href='\xE9.xsl' type='text/xsl'?><a/>".to_vec(),
        ),
        (
            "Latin-1 byte in the DOCTYPE",
            b"<!DOCTYPE a SYSTEM '\xE9.dtd'><a/>".to_vec(),
        ),
        (
            "non-ASCII in a US-ASCII document",
            "<?xml version='1.0' encoding='US-ASCII'?><a b='é'/>"
                .as_bytes()
                .to_vec(),
        ),
        (
            "entity reference in xmlns",
            b"<!DOCTYPE a [<!ENTITY ns 'urn:x'>]><a xmlns='&ns;'/>".to_vec(),
        ),
        (
            "DTD may default xmlns",
            b"<!DOCTYPE a [<!ATTLIST a xmlns CDATA #FIXED 'urn:x'>]><a/>".to_vec(),
        ),
        (
            "DTD may default xmlns:p",
            b"<!DOCTYPE p:a [<!ATTLIST p:a xmlns:p CDATA #FIXED 'urn:x'>]><p:a/>".to_vec(),
        ),
    ];
    for (label, input) in cases {
        assert!(
            matches!(scan(&input), Err(ScanError::Unsupported(_))),
            "{label}: {:?}",
            scan(&input)
        );
    }
    // A DTD mentioning xmlns does not matter when the root declares its own.
    let own = "<!DOCTYPE a [<!ATTLIST a xmlns CDATA #FIXED 'urn:x'>]><a xmlns='urn:y'/>";
    assert_eq!(ok(own).root, root_ns(None, "a", "urn:y"));
    // ...nor does xmlns in a comment or literal of the internal subset.
    let quoted = "<!DOCTYPE a [<!-- xmlns --><!ENTITY e 'xmlns'>]><a/>";
    assert_eq!(ok(quoted).root, root("a"));
}

/// A control character is found wherever it is, however many share its
/// 64-byte chunk (an odd count and an even count alike).
#[test]
fn control_characters_are_found_in_any_number() {
    assert_eq!(first_control_char(b"<a>text</a>"), None);
    assert_eq!(first_control_char(b"<a>\t\r\n </a>"), None);
    assert_eq!(first_control_char(b"ab\x01cd"), Some(2));
    assert_eq!(first_control_char(b"ab\x01\x02cd"), Some(2));
    let mut long = vec![b'a'; 200];
    long[130] = 0x1F;
    long[131] = 0x1F;
    assert_eq!(first_control_char(&long), Some(130));
}

/// A name with an x in the internal subset (not `xmlns`) neither counts as
/// a namespace declaration nor skips the bytes after it (here the `]`).
#[test]
fn an_x_in_the_internal_subset_is_only_an_x() {
    let p = ok("<!DOCTYPE a [<!ELEMENT a (x)>]><a><x/></a>");
    assert_eq!(p.root, root("a"));
}

/// In a namespace declaration, a reference that is not a name is a
/// malformed document; a named entity the scanner does not know is left
/// to the full parser.
#[test]
fn references_in_namespace_declarations() {
    for broken in [
        "<a xmlns='urn:&1x;'/>",
        "<a xmlns='urn:&;'/>",
        "<a xmlns='urn:&a b;'/>",
    ] {
        assert!(
            matches!(scan(broken.as_bytes()), Err(ScanError::Malformed { .. })),
            "{broken}: {:?}",
            scan(broken.as_bytes())
        );
    }
    assert!(matches!(
        scan(b"<a xmlns='urn:&ab;'/>"),
        Err(ScanError::Unsupported(_))
    ));
}

#[test]
fn malformed_table() {
    let cases: &[(&str, &[u8], usize)] = &[
        ("empty", b"", 0),
        ("only whitespace", b" \n", 2),
        ("only a BOM", b"\xEF\xBB\xBF", 3),
        ("no root", b"<?xml version='1.0'?><!-- c -->", 31),
        ("text before root", b"hello <a/>", 0),
        ("text after comment", b"<!-- c -->x<a/>", 10),
        ("entity before root", b"&amp;<a/>", 0),
        ("end tag before root", b"</a>", 0),
        ("CDATA before root", b"<![CDATA[x]]><a/>", 0),
        ("unterminated comment", b"<!-- c <a/>", 0),
        ("double hyphen in comment", b"<!-- a -- b --><a/>", 7),
        ("comment ending in three hyphens", b"<!-- a ---><a/>", 7),
        ("unterminated PI", b"<?pi data <a/>", 0),
        ("PI without target", b"<? data ?><a/>", 2),
        ("PI target without space", b"<?pi\"x\"?><a/>", 4),
        (
            "XML declaration not at offset 0",
            b" <?xml version='1.0'?><a/>",
            1,
        ),
        (
            "XML declaration after BOM and space",
            b"\xEF\xBB\xBF\n<?xml version='1.0'?><a/>",
            4,
        ),
        (
            "XML declaration after a comment",
            b"<!----><?xml version='1.0'?><a/>",
            7,
        ),
        ("XML declaration without data", b"<?xml?><a/>", 0),
        (
            "upper-case XML declaration",
            b"<?XML version='1.0'?><a/>",
            0,
        ),
        (
            "XML declaration without version",
            b"<?xml encoding='UTF-8'?><a/>",
            0,
        ),
        (
            "XML declaration with version 2.0",
            b"<?xml version='2.0'?><a/>",
            0,
        ),
        (
            "XML declaration out of order",
            b"<?xml encoding='UTF-8' version='1.0'?><a/>",
            0,
        ),
        (
            "XML declaration with version 1.",
            b"<?xml version='1.'?><a/>",
            0,
        ),
        (
            "XML declaration with version 1.x",
            b"<?xml version='1.x'?><a/>",
            0,
        ),
        (
            "XML declaration with version twice",
            b"<?xml version='1.0' version='1.0'?><a/>",
            0,
        ),
        (
            "XML declaration with encoding twice",
            b"<?xml version='1.0' encoding='UTF-8' encoding='UTF-8'?><a/>",
            0,
        ),
        (
            "XML declaration with standalone twice",
            b"<?xml version='1.0' standalone='no' standalone='no'?><a/>",
            0,
        ),
        (
            "XML declaration with encoding after standalone",
            b"<?xml version='1.0' standalone='no' encoding='UTF-8'?><a/>",
            0,
        ),
        (
            "XML declaration with standalone first",
            b"<?xml standalone='no' version='1.0'?><a/>",
            0,
        ),
        (
            "XML declaration with junk",
            b"<?xml version='1.0' foo='bar'?><a/>",
            0,
        ),
        (
            "XML declaration without space",
            b"<?xml version='1.0'encoding='UTF-8'?><a/>",
            0,
        ),
        (
            "XML declaration bad standalone",
            b"<?xml version='1.0' standalone='maybe'?><a/>",
            0,
        ),
        (
            "XML declaration bad encoding name",
            b"<?xml version='1.0' encoding='8bit'?><a/>",
            0,
        ),
        ("unterminated XML declaration", b"<?xml version='1.0'", 0),
        ("two DOCTYPEs", b"<!DOCTYPE a><!DOCTYPE a><a/>", 12),
        ("DOCTYPE without name", b"<!DOCTYPE ><a/>", 10),
        ("DOCTYPE without space", b"<!DOCTYPEa><a/>", 9),
        ("unterminated DOCTYPE", b"<!DOCTYPE a SYSTEM 'a.dtd'", 26),
        (
            "unterminated internal subset",
            b"<!DOCTYPE a [<!ELEMENT a EMPTY>",
            31,
        ),
        (
            "unterminated literal in subset",
            b"<!DOCTYPE a [<!ENTITY e \"]>\n<a/>",
            24,
        ),
        (
            "unterminated comment in subset",
            b"<!DOCTYPE a [<!-- ]><a/>",
            13,
        ),
        ("unterminated PI in subset", b"<!DOCTYPE a [<?pi ]><a/>", 13),
        (
            "PUBLIC without system id",
            b"<!DOCTYPE a PUBLIC 'p'><a/>",
            22,
        ),
        ("SYSTEM without literal", b"<!DOCTYPE a SYSTEM><a/>", 18),
        (
            "bad public id character",
            b"<!DOCTYPE a PUBLIC 'p{' 's'><a/>",
            21,
        ),
        ("unquoted system id", b"<!DOCTYPE a SYSTEM a.dtd><a/>", 19),
        ("junk in DOCTYPE", b"<!DOCTYPE a foo><a/>", 12),
        ("unterminated root tag", b"<root a='1'", 1),
        ("unterminated attribute value", b"<root a='1>", 8),
        ("attribute without value", b"<root a>", 7),
        ("attribute without quotes", b"<root a=1>", 8),
        ("attributes without space", b"<root a='1'b='2'>", 11),
        ("'<' in attribute value", b"<root a='<'>", 9),
        ("'<' later in an attribute value", b"<a b='xy<'/>", 8),
        ("root name starting with a digit", b"<1root/>", 1),
        ("space after '<'", b"< root/>", 1),
        ("slash without '>'", b"<root / >", 7),
        ("empty prefix", b"<:root/>", 1),
        ("empty local name", b"<p:/>", 1),
        ("two colons", b"<a:b:c xmlns:a='urn:a'/>", 1),
        ("undeclared prefix", b"<p:root/>", 1),
        ("xmlns prefix", b"<xmlns:root/>", 1),
        ("empty URI for a prefix", b"<p:root xmlns:p=''/>", 16),
        (
            "repeated default namespace",
            b"<root xmlns='a' xmlns='b'/>",
            16,
        ),
        ("bad reference in xmlns", b"<root xmlns='a&b'/>", 12),
        ("control character", b"<!-- \x01 --><a/>", 5),
        ("NUL after the start", b"<!-- \x00 --><a/>", 5),
        ("control character in the root tag", b"<a b='\x07'/>", 6),
    ];
    for &(label, input, offset) in cases {
        match scan(input) {
            Err(ScanError::Malformed { offset: found, .. }) => {
                assert_eq!(found, offset, "{label}: {:?}", scan(input))
            }
            other => panic!("{label}: expected Malformed, got {other:?}"),
        }
    }
}

#[test]
fn errors_display() {
    assert_eq!(
        scan(b"x").map_err(|e| e.to_string()),
        Err("malformed prolog at byte 0: text before the root element".to_string())
    );
    assert_eq!(
        scan(b"\xFE\xFF").map_err(|e| e.to_string()),
        Err(
            "the prolog cannot be read without a full parser: a UTF-16 or UTF-32 byte order mark"
                .to_string()
        )
    );
}

/// Realistic documents for the robustness tests.
const DOCUMENTS: &[&str] = &[
    r#"<?xml version="1.0" encoding="UTF-8"?>
<?xml-stylesheet href="/styles/page.xsl" type="text/xsl"?>
<?xml-stylesheet href="print.xsl" type="text/xsl" alternate="yes" title="Print &amp; save" media="print"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">
<!-- generated -->
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en" lang="en"><head><title>Hi</title></head></html>
"#,
    "\u{FEFF}<?xml version='1.0' encoding='utf-8' standalone='no'?>\r\n\
<!DOCTYPE doc:article SYSTEM 'article.dtd' [\r\n\
  <!ENTITY company \"Acme ]> Inc.\">\r\n\
  <!ENTITY % local SYSTEM 'local.ent'>\r\n\
  <!-- don't ]> -->\r\n\
  <?subset-pi ]> ?>\r\n\
  %local;\r\n\
]>\r\n\
<?xml-stylesheet type='text/xsl' href='docbook&#x2F;html.xsl' charset='UTF-8'?>\r\n\
<doc:article xmlns:doc='urn:example:doc' xmlns='urn:example:default' id=\"a&gt;1\" title='Ünïcødé > ASCII'>\r\n\
<para>&company;</para></doc:article>",
    "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\"/>",
];

#[test]
fn realistic_documents() {
    let first = ok(DOCUMENTS[0]);
    assert_eq!(first.xml_encoding.as_deref(), Some("UTF-8"));
    assert_eq!(first.stylesheets.len(), 2);
    assert_eq!(first.stylesheets[1].title.as_deref(), Some("Print & save"));
    assert!(first.stylesheets[1].alternate);
    assert_eq!(first.root.clark(), "{http://www.w3.org/1999/xhtml}html");

    let second = ok(DOCUMENTS[1]);
    assert_eq!(second.xml_encoding.as_deref(), Some("utf-8"));
    assert_eq!(
        second.doctype,
        with_subset(doctype("doc:article", None, Some("article.dtd")))
    );
    assert_eq!(
        second.stylesheets,
        vec![StylesheetPi {
            charset: Some("UTF-8".into()),
            ..pi("docbook/html.xsl", "text/xsl")
        }]
    );
    assert_eq!(
        second.root,
        root_ns(Some("doc"), "article", "urn:example:doc")
    );

    assert_eq!(
        ok(DOCUMENTS[2]).root.clark(),
        "{http://www.w3.org/1999/XSL/Transform}stylesheet"
    );
}

/// Every prefix of a realistic document fails until the root start tag is
/// complete, and from then on gives exactly the answer for the whole.
#[test]
fn truncations_fail_until_the_root_tag_is_complete() {
    for document in DOCUMENTS {
        let bytes = document.as_bytes();
        let whole = scan(bytes).expect("the untruncated document scans");
        let complete = (0..=bytes.len())
            .find(|&n| scan(&bytes[..n]).is_ok())
            .expect("some prefix scans");
        for n in 0..=bytes.len() {
            let result = scan(&bytes[..n]);
            if n < complete {
                assert!(result.is_err(), "prefix of {n} bytes of {document:?}");
            } else {
                assert_eq!(
                    result.as_ref(),
                    Ok(&whole),
                    "prefix of {n} bytes of {document:?}"
                );
            }
        }
        assert_eq!(bytes.get(complete - 1), Some(&b'>'));
    }
}

/// `scan` never panics: every truncation, and every position with its byte
/// replaced by a set of interesting bytes.
#[test]
fn never_panics_on_truncations_and_byte_flips() {
    const REPLACEMENTS: &[u8] =
        b"<>?!-\"'[]&;#x:=/ \t\r\n\x00\x01\x7F\x80\xBF\xC3\xE2\xEF\xF0\xFE\xFFaAX0%";
    let mut results = [0usize; 2];
    for document in DOCUMENTS {
        let bytes = document.as_bytes();
        assert!(scan(bytes).is_ok(), "{document}");
        for n in 0..=bytes.len() {
            results[usize::from(scan(&bytes[..n]).is_ok())] += 1;
        }
        let mut mutated = bytes.to_vec();
        for at in 0..bytes.len() {
            for &replacement in
                REPLACEMENTS
                    .iter()
                    .chain(&[bytes[at] ^ 0x01, bytes[at] ^ 0x20, !bytes[at]])
            {
                mutated[at] = replacement;
                results[usize::from(scan(&mutated).is_ok())] += 1;
                // Also with everything after the mutation cut off.
                results[usize::from(scan(&mutated[..=at]).is_ok())] += 1;
            }
            mutated[at] = bytes[at];
        }
    }
    assert!(results[0] > 0 && results[1] > 0, "{results:?}");
}

#[test]
fn returned_hrefs_are_never_empty() {
    for document in DOCUMENTS {
        let bytes = document.as_bytes();
        for start in 0..bytes.len() {
            if let Ok(prolog) = scan(&bytes[start..]) {
                assert!(
                    prolog
                        .stylesheets
                        .iter()
                        .all(|pi| !pi.href.is_empty() && !pi.r#type.is_empty())
                );
                assert!(!prolog.root.local.is_empty());
            }
        }
    }
}
