//! Unit tests of the configuration file: prefixes, merge order,
//! validation errors with key and line, and the location hash.

use super::*;

fn parse(text: &str) -> Result<SiteConfig, ConfigError> {
    SiteConfig::parse(text, Path::new("axle.toml"), Registry::default())
}

fn hrefs(l: &Location) -> Vec<&str> {
    l.processors.iter().map(|p| p.pi.href.as_str()).collect()
}

const NESTED: &str = r#"
[location."/"]
style = "base"

[[location."/".processor]]
type = "text/xsl"
href = "/larry.xsl"

[location."/a"]
media = "print"

[[location."/a".processor]]
type = "text/xsl"
href = "/moe.xsl"

[location."/a/b"]

[[location."/a/b".processor]]
type = "text/xsl"
href = "/curly.xsl"

[location."/reset"]
reset = true

[[location."/reset".processor]]
type = "text/xsl"
href = "/only.xsl"
"#;

#[test]
fn inner_processors_run_before_inherited_ones_unless_reset() {
    let site = parse(NESTED).unwrap();
    assert_eq!(
        hrefs(&site.location("/a/b/doc.xml")),
        ["/curly.xsl", "/moe.xsl", "/larry.xsl"]
    );
    assert_eq!(
        hrefs(&site.location("/a/doc.xml")),
        ["/moe.xsl", "/larry.xsl"]
    );
    assert_eq!(hrefs(&site.location("/doc.xml")), ["/larry.xsl"]);
    assert_eq!(hrefs(&site.location("/reset/x.xml")), ["/only.xsl"]);
}

#[test]
fn prefixes_match_on_segment_boundaries_and_settings_inherit() {
    let site = parse(NESTED).unwrap();
    let ab = site.location("/a/b/c.xml");
    assert_eq!(ab.prefixes, ["/", "/a", "/a/b"]);
    assert_eq!(
        (ab.style.as_deref(), ab.media.as_str()),
        (Some("base"), "print")
    );
    let abc = site.location("/abc/x.xml");
    assert_eq!(abc.prefixes, ["/"], "/a does not cover /abc");
    assert_eq!(abc.media, "screen");
    assert_eq!(site.location("/a").prefixes, ["/", "/a"]);
}

#[test]
fn the_hash_changes_with_anything_that_changes_output() {
    let site = parse(NESTED).unwrap();
    assert_ne!(site.location("/a/x.xml").hash, site.location("/x.xml").hash);
    assert_eq!(
        site.location("/a/x.xml").hash,
        site.location("/a/y.xml").hash
    );
    let other = parse(&NESTED.replace("/moe.xsl", "/moe2.xsl")).unwrap();
    assert_ne!(
        other.location("/a/x.xml").hash,
        site.location("/a/x.xml").hash
    );
    let defaults = SiteConfig::defaults(Registry::default());
    assert_eq!(
        defaults.location("/x.xml").hash,
        defaults.location("/y/z.xml").hash
    );
}

#[test]
fn errors_name_the_key_and_line() {
    let err = parse("[location.\"/\"]\nstyle = \"a\"\nstyel = \"b\"\n").unwrap_err();
    assert_eq!(err.line, Some(3), "{err}");
    assert_eq!(err.key, "location.\"/\".styel", "{err}");
    assert!(err.message.contains("unknown field `styel`"), "{err}");

    let err = parse("[location.\"/\"]\n\n[[location.\"/\".processor]]\ntype = \"text/xsl\"\nhref = \"/a.xsl\"\nuri = \"((\"\n")
        .unwrap_err();
    assert_eq!(err.key, "location.\"/\".processor[0].uri");
    assert_eq!(err.line, Some(6), "the line of the uri key: {err}");

    let err = parse(
        "[location.\"/\"]\n[[location.\"/\".processor]]\ntype = \"text/x-nope\"\nhref = \"/a\"\n",
    )
    .unwrap_err();
    assert!(err.message.contains("no Language"), "{err}");

    let err = parse("[location.\"/\".types]\n\"text/x\" = \"nope\"\n").unwrap_err();
    assert_eq!(
        (err.key.as_str(), err.line),
        ("location.\"/\".types.\"text/x\"", Some(2)),
        "{err}"
    );

    let err = parse("[location.\"/\"]\noutput-charset = \"klingon\"\n").unwrap_err();
    assert!(err.message.contains("unknown charset"), "{err}");

    let err = parse("[location.\"docs\"]\n").unwrap_err();
    assert!(err.message.contains("starting with '/'"), "{err}");

    let err = parse("[location.\"/\"]\nparams = \"some\"\n").unwrap_err();
    assert!(err.message.contains("\"all\", \"none\""), "{err}");
}

#[test]
fn params_policies() {
    let site =
        parse("[location.\"/a\"]\nparams = [\"lang\"]\n[location.\"/b\"]\nparams = \"none\"\n")
            .unwrap();
    assert!(site.location("/a/x").params.allows("lang"));
    assert!(!site.location("/a/x").params.allows("p"));
    assert!(!site.location("/b/x").params.allows("lang"));
    assert!(site.location("/c").params.allows("anything"));
}
