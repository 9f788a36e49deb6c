//! Unit tests of the configuration file: prefixes, merge order,
//! validation errors with key and line, and the location hash.

use super::*;

fn parse(text: &str) -> Result<SiteConfig, ConfigErrors> {
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

/// The key, line and message of the error `text` gives.
fn error(text: &str) -> (String, Option<usize>, String) {
    match parse(text) {
        Ok(_) => panic!("no error for {text:?}"),
        Err(e) => {
            let e = e.first().clone();
            (e.key, e.line, e.message)
        }
    }
}

/// Asserts the error's key and line, and that its message contains `says`.
#[track_caller]
fn assert_error(text: &str, key: &str, line: usize, says: &str) {
    let (k, l, m) = error(text);
    assert_eq!((k.as_str(), l), (key, Some(line)), "{m}\nin:\n{text}");
    assert!(m.contains(says), "{m:?} does not say {says:?}");
}

const ROOT: &str = "[location.\"/\"]\nstyle = \"a\"\n";

#[test]
fn errors_name_the_key_and_line() {
    assert_error(
        "[location.\"/\"]\nstyle = \"a\"\nstyel = \"b\"\n",
        "location.\"/\".styel",
        3,
        "unknown field `styel`",
    );
    assert_error(
        "[location.\"/\"]\n\n[[location.\"/\".processor]]\ntype = \"text/xsl\"\nhref = \"/a.xsl\"\nuri = \"((\"\n",
        "location.\"/\".processor[0].uri",
        6,
        "invalid regex",
    );
    assert_error(
        "[location.\"/\".types]\n\"text/x\" = \"nope\"\n",
        "location.\"/\".types.\"text/x\"",
        2,
        "no Language named 'nope'",
    );
    assert_error(
        "[location.\"docs\"]\n",
        "location.docs",
        1,
        "starting with '/'",
    );
}

#[test]
fn bad_values_name_their_key_not_the_section() {
    let at_line_3 = |line: &str| format!("{ROOT}{line}\n");
    for (line, key, says) in [
        (
            "order = \"sideways\"",
            "order",
            "unknown variant `sideways`",
        ),
        ("params = 5", "params", "untagged enum"),
        ("params = [1]", "params", "untagged enum"),
        ("params = \"some\"", "params", "\"all\", \"none\""),
        ("passthru = \"yes\"", "passthru", "expected a boolean"),
        ("negotiate = \"yes\"", "negotiate", "expected a boolean"),
        (
            "source-type = \"atom\"",
            "source-type",
            "is not a media type",
        ),
        (
            "source-type = \"text/x opml\"",
            "source-type",
            "is not a media type",
        ),
        ("xsl-sort = \"browser\"", "xsl-sort", "is not a sort order"),
        ("xsl-sort = true", "xsl-sort", "expected a string"),
        ("style-key = 3", "style-key", "expected a string"),
        ("style-cookie = false", "style-cookie", "expected a string"),
        ("reset = 1", "reset", "expected a boolean"),
        ("index = []", "index", "expected a string"),
        ("trace = 5", "trace", "invalid type"),
        (
            "error-stylesheet = 5",
            "error-stylesheet",
            "expected a string",
        ),
        (
            "output-charset = \"klingon\"",
            "output-charset",
            "unknown charset",
        ),
        ("types = 5", "types", "expected a map"),
        (
            "user-agent-styles = 5",
            "user-agent-styles",
            "expected a sequence",
        ),
        (
            "user-agent-styles = [{ pattern = 3, style = \"x\" }]",
            "user-agent-styles[0].pattern",
            "expected a string",
        ),
        (
            "user-agent-styles = [{ pattern = \"(\", style = \"x\" }]",
            "user-agent-styles[0].pattern",
            "invalid regex",
        ),
        (
            "user-agent-styles = [{ pattern = \"a\" }]",
            "user-agent-styles[0].style",
            "missing field `style`",
        ),
        (
            "media-rules = [{ user-agent = \"(\", media = \"tv\" }]",
            "media-rules[0].user-agent",
            "invalid regex",
        ),
        (
            "media-rules = [{ accept = \"x\", media = \"tv\", bogus = 1 }]",
            "media-rules[0].bogus",
            "unknown field `bogus`",
        ),
        (
            "media-rules = [{ accept = \"x\" }]",
            "media-rules[0].media",
            "missing field `media`",
        ),
        (
            "media-rules = [{ media = \"tv\" }]",
            "media-rules[0]",
            "user-agent and/or accept",
        ),
        (
            "processor = [{ type = \"text/xsl\" }]",
            "processor[0].href",
            "missing field `href`",
        ),
    ] {
        assert_error(&at_line_3(line), &format!("location.\"/\".{key}"), 3, says);
    }
}

#[test]
fn errors_in_rules_on_later_lines_name_that_line() {
    assert_error(
        "[location.\"/\"]\nuser-agent-styles = [\n  { pattern = \"a\", style = \"x\" },\n  { pattern = \"(\", style = \"y\" },\n]\n",
        "location.\"/\".user-agent-styles[1].pattern",
        4,
        "invalid regex",
    );
    assert_error(
        "[location.\"/\"]\nmedia-rules = [\n  { accept = \"wml\", media = \"handheld\" },\n\n  { user-agent = \"[\", media = \"tv\" },\n]\n",
        "location.\"/\".media-rules[1].user-agent",
        5,
        "invalid regex",
    );
}

#[test]
fn processor_errors_name_the_entry_and_field() {
    let two = |second: &str| {
        format!(
            "[location.\"/a\"]\n\n[[location.\"/a\".processor]]\ntype = \"text/xsl\"\nhref = \"/a.xsl\"\n\n[[location.\"/a\".processor]]\n{second}"
        )
    };
    let p1 = "location.\"/a\".processor[1]";
    assert_error(
        &two("type = \"text/x-nope\"\nhref = \"/b.xsl\"\n"),
        &format!("{p1}.type"),
        8,
        "no Language is registered for 'text/x-nope'",
    );
    assert_error(
        &two("type = 5\nhref = \"/b.xsl\"\n"),
        &format!("{p1}.type"),
        8,
        "expected a string",
    );
    assert_error(
        &two("type = \"text/xsl\"\nhref = \"\"\n"),
        &format!("{p1}.href"),
        9,
        "must not be empty",
    );
    assert_error(
        &two("type = \"text/xsl\"\nhref = \"/b.xsl\"\nroot = 1\n"),
        &format!("{p1}.root"),
        10,
        "expected a string",
    );
    assert_error(
        &two("type = \"text/xsl\"\nhref = \"/b.xsl\"\nmdia = \"tv\"\n"),
        &format!("{p1}.mdia"),
        10,
        "unknown field `mdia`",
    );
    assert_error(
        &two("type = \"text/xsl\"\n"),
        &format!("{p1}.href"),
        7,
        "missing field `href`",
    );
}

#[test]
fn a_key_is_found_in_its_own_section_not_where_it_first_appears() {
    assert_error(
        "[location.\"/a\".types]\n\"text/x\" = \"xslt\"\n\n[location.\"/b\".types]\n\"text/x\" = \"nope\"\n",
        "location.\"/b\".types.\"text/x\"",
        5,
        "no Language named 'nope'",
    );
    assert_error(
        "# \"/\" is the whole site\n[location.\"/\"]\nparams = \"some\"\n",
        "location.\"/\".params",
        3,
        "\"all\", \"none\"",
    );
}

#[test]
fn top_level_and_syntax_errors() {
    assert_error("bogus = 1\n", "bogus", 1, "unknown field `bogus`");
    assert_error("location = 5\n", "location", 1, "expected a map");
    assert_error(
        "[location]\n\"/\" = 5\n",
        "location.\"/\"",
        2,
        "invalid type",
    );
    let (key, line, _) = error("[location.\"/\"]\nstyle = \n");
    assert_eq!((key.as_str(), line), ("location.\"/\"", Some(2)));
    let (key, line, _) = error("[location.\"/\"\n");
    assert_eq!((key.as_str(), line), ("location.\"/\"", Some(1)));
    let (key, line, _) = error("x = = 1\n");
    assert_eq!((key.as_str(), line), ("(syntax)", Some(1)));
}

#[test]
fn the_error_display_is_file_line_key_message() {
    let err = parse(&format!("{ROOT}order = \"sideways\"\n")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "axle.toml:3: location.\"/\".order: unknown variant `sideways`, expected one of `fallback`, `instead`, `before`, `after`"
    );
    let no_line = ConfigError {
        line: None,
        ..err.first().clone()
    };
    assert!(no_line.to_string().starts_with("axle.toml: location"));
}

#[test]
fn an_empty_error_stylesheet_turns_the_inherited_one_off() {
    let site = parse(
        "[location.\"/\"]\nerror-stylesheet = \"/e.xsl\"\n[location.\"/plain\"]\nerror-stylesheet = \"\"\n",
    )
    .unwrap();
    assert_eq!(
        site.location("/x.xml")
            .error_stylesheet
            .as_ref()
            .map(|p| p.href.as_str()),
        Some("/e.xsl")
    );
    assert!(site.location("/plain/x.xml").error_stylesheet.is_none());
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

#[test]
fn limits_are_read_validated_and_applied() {
    use crate::config::{HttpLimits, RenderLimits};
    let text = "[limits]\nrender-timeout = \"2s\"\nrender-memory = \"64MiB\"\nmax-chain = 4\nheader-timeout = \"500ms\"\nmax-body-size = \"1KiB\"\n";
    let site = SiteConfig::parse(text, Path::new("axle.toml"), Registry::default()).unwrap();
    assert_eq!(
        site.limits().keys(),
        [
            "header-timeout",
            "max-body-size",
            "render-timeout",
            "render-memory",
            "max-chain"
        ]
    );
    let (mut http, mut render) = (HttpLimits::default(), RenderLimits::default());
    site.limits().apply(&mut http, &mut render);
    assert_eq!(http.header_timeout, std::time::Duration::from_millis(500));
    assert_eq!(http.max_body_bytes, 1024);
    assert_eq!(
        http.keepalive_timeout,
        HttpLimits::default().keepalive_timeout
    );
    assert_eq!(render.timeout, std::time::Duration::from_secs(2));
    assert_eq!(render.memory, 64 << 20);
    assert_eq!(render.max_chain, 4);
    assert_eq!(render.max_queue, RenderLimits::default().max_queue);
    let bad = "[location.\"/\"]\n\n[limits]\nmax-chain = 3\nrender-timeout = \"soon\"\n";
    let err = SiteConfig::parse(bad, Path::new("axle.toml"), Registry::default()).unwrap_err();
    let err = err.first();
    assert_eq!(err.key, "limits.render-timeout", "{err}");
    assert_eq!(err.line, Some(5), "{err}");
    let unknown = "[limits]\nrender-time = \"2s\"\n";
    let err = SiteConfig::parse(unknown, Path::new("axle.toml"), Registry::default()).unwrap_err();
    assert!(err.to_string().contains("render-time"), "{err}");
}

#[test]
fn posted_document_limits_are_read_and_bounded() {
    use crate::config::{HttpLimits, RenderLimits};
    let text =
        "[limits]\nmax-post-depth = 256\nmax-post-attributes = 10\nmax-post-amplification = 1\n";
    let site = SiteConfig::parse(text, Path::new("axle.toml"), Registry::default()).unwrap();
    let (mut http, mut render) = (HttpLimits::default(), RenderLimits::default());
    site.limits().apply(&mut http, &mut render);
    assert_eq!(render.client.max_depth, 256);
    assert_eq!(render.client.max_attributes, 10);
    assert_eq!(render.client.max_amplification, 1);
    for (bad, key) in [
        ("max-post-depth = 257", "limits.max-post-depth"),
        ("max-post-depth = 0", "limits.max-post-depth"),
        (
            "max-post-amplification = 0",
            "limits.max-post-amplification",
        ),
    ] {
        let text = format!("[limits]\n{bad}\n");
        let err =
            SiteConfig::parse(&text, Path::new("axle.toml"), Registry::default()).unwrap_err();
        let err = err.first();
        assert_eq!(err.key, key, "{err}");
    }
}

#[test]
fn a_command_passing_proxy_is_refused_at_load_naming_file_key_and_line() {
    // httpoxy (issue #36): `Proxy:` would reach the program as HTTP_PROXY.
    for spelling in ["proxy", "Proxy", "PROXY"] {
        let text = format!(
            "[location.\"/\"]\nstyle = \"a\"\n\n[location.\"/live\".provider]\ntype = \"command\"\nargv = [\"sh\"]\nheaders = [\"accept\", \"{spelling}\"]\n"
        );
        assert_error(&text, "location.\"/live\".provider.headers", 7, "httpoxy");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("axle.toml") && e.contains(spelling), "{e}");
    }
}

/// One load names every mistake, wherever it is: unknown keys, wrong
/// types and bad values in locations, `[limits]` and `[esql.*]`, by line.
#[test]
fn every_mistake_of_a_file_is_reported_by_line() {
    let text = "[location.\"/\"]\n\
                styel = \"a\"\n\
                output-charset = \"klingon\"\n\
                \n\
                [location.\"/b\"]\n\
                params = \"some\"\n\
                media-rules = [{ media = \"x\" }]\n\
                \n\
                [limits]\n\
                render-timeout = \"soon\"\n\
                max-body-size = \"lots\"\n\
                \n\
                [esql.one]\n\
                url = \"mysql://x\"\n\
                \n\
                [esql.two]\n\
                url = \"postgres://u@h:1/d\"\n\
                max-rows = 0\n\
                \n\
                [filter.\"application/x-a\"]\n\
                argv = [\"python3\", \"a.py\"]\n\
                timeout = \"soon\"\n\
                max-output = \"lots\"\n\
                \n\
                [shared-cache]\n\
                ttl = \"forever\"\n\
                lock-wait = \"never\"\n";
    let errors = parse(text).unwrap_err();
    let got: Vec<(String, Option<usize>)> =
        errors.iter().map(|e| (e.key.clone(), e.line)).collect();
    let want = [
        ("location.\"/\".styel", 2),
        ("location.\"/\".output-charset", 3),
        ("location.\"/b\".params", 6),
        ("location.\"/b\".media-rules[0]", 7),
        ("limits.render-timeout", 10),
        ("limits.max-body-size", 11),
        ("esql.one.url", 14),
        ("esql.two.max-rows", 18),
        ("filter.\"application/x-a\".timeout", 22),
        ("filter.\"application/x-a\".max-output", 23),
        ("shared-cache.ttl", 26),
        ("shared-cache.lock-wait", 27),
    ];
    let want: Vec<(String, Option<usize>)> = want
        .iter()
        .map(|(k, l)| (k.to_string(), Some(*l)))
        .collect();
    assert_eq!(got, want, "{errors}");
    assert_eq!(errors.to_string().lines().count(), 12);
}
