//! Site configuration (`axle.toml`, where AxKit had httpd.conf
//! directives): nested locations and how their processors inherit
//! (`reset`), `axle check` naming the key and line of each error, SIGHUP
//! reloading the file (a broken one keeps the old), the file itself never
//! being served, and location settings holding for every spelling of a
//! path. They live together because they test how the configuration is
//! read and applied, not what one directive does to a chain.

use std::path::Path;

use axle::CacheMode;

use super::{Binary, COPY_XSL, Server, out, pi, proc, tags};
use crate::support::{MODES, TestSite, axle};

const STOOGES: &str = r#"
[location."/"]
processor = [{ type = "text/xsl", href = "/t/Root.xsl" }]

[location."/larry"]
reset = true
processor = [{ type = "text/xsl", href = "/t/Larry.xsl" }]

[location."/larry/moe"]
processor = [{ type = "text/xsl", href = "/t/Moe.xsl" }]

[location."/larry/moe/curly"]
processor = [{ type = "text/xsl", href = "/t/Curly.xsl" }]

[location."/larry/moe/curly/shemp"]
reset = true
processor = [{ type = "text/xsl", href = "/t/Shemp.xsl" }]
"#;

/// AxKit's `02_processor_inheritance` (Larry, Moe, Curly): an inner
/// location's processors run before the inherited ones, so the innermost
/// stage runs first and each outer one appends its name after it; `reset`
/// drops everything inherited.
#[tokio::test(flavor = "multi_thread")]
async fn nested_locations_run_the_innermost_processors_first_and_reset_drops_inherited_ones() {
    let site = TestSite::new();
    tags(&site, &["Root", "Larry", "Moe", "Curly", "Shemp"]);
    for dir in [
        "",
        "larry/",
        "larry/moe/",
        "larry/moe/curly/",
        "larry/moe/curly/shemp/",
        "larryx/",
    ] {
        site.write(&format!("{dir}stooge.xml"), "<doc/>");
    }
    for mode in MODES {
        let server = Server::start(&site.root, mode, STOOGES).await;
        for (path, expected) in [
            ("/stooge.xml", "Root"),
            ("/larry/stooge.xml", "Larry"),
            ("/larry/moe/stooge.xml", "Moe...Larry"),
            ("/larry/moe/curly/stooge.xml", "Curly...Moe...Larry"),
            ("/larry/moe/curly/shemp/stooge.xml", "Shemp"),
            // Prefixes match on `/` boundaries only.
            ("/larryx/stooge.xml", "Root"),
        ] {
            let r = server.get(path).await;
            assert_eq!((r.status, r.text()), (200, out(expected)), "{mode} {path}");
            assert_eq!(r.header("content-type"), "text/xml; charset=UTF-8");
            let again = server.get(path).await;
            assert_eq!(again.body, r.body);
            if server.caches() {
                assert_eq!(again.cache(), "hit", "{mode} {path}");
            }
        }
    }
}

/// Runs `axle check --config FILE` on `text` (the root: FILE's directory,
/// which has the stylesheet `/s/upper.xsl`); returns (success, stdout,
/// stderr).
fn check(dir: &Path, name: &str, text: &str) -> (bool, String, String) {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    std::fs::create_dir_all(dir.join("s")).unwrap();
    std::fs::write(dir.join("s/upper.xsl"), "<stylesheet/>").unwrap();
    let out = axle()
        .arg("check")
        .arg("--config")
        .arg(&file)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `axle check` finds the root's axle.toml without --config, and refuses a
/// configuration naming a stylesheet that is not under the root, with the
/// key and line of each.
#[test]
fn axle_check_finds_the_roots_file_and_refuses_missing_stylesheets() {
    let site = TestSite::new();
    let run = |args: &[&str]| {
        let out = axle()
            .args(["check", "--root"])
            .arg(&site.root)
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let (ok, text) = run(&[]);
    assert!(!ok && text.contains("axle.toml does not exist"), "{text}");
    site.write(
        "axle.toml",
        "[location.\"/\"]\nerror-stylesheet = \"/s/upper.xsl\"\n\n\
         [[location.\"/docs\".processor]]\ntype = \"text/xsl\"\nhref = \"/s/missing.xsl\"\n\n\
         [[location.\"/docs\".processor]]\ntype = \"text/xsl\"\nhref = \"/../secret.txt\"\n",
    );
    let (ok, text) = run(&[]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("axle.toml:6: location.\"/docs\".processor[0].href"),
        "{text}"
    );
    assert!(
        text.contains("axle.toml:10: location.\"/docs\".processor[1].href"),
        "{text}"
    );
    assert!(text.contains("axle: 2 problems in "), "{text}");
    assert!(!text.contains("error-stylesheet"), "it exists: {text}");
    site.write("s/missing.xsl", "<x/>");
    site.write(
        "axle.toml",
        "[[location.\"/docs\".processor]]\ntype = \"text/xsl\"\nhref = \"/s/missing.xsl\"\n",
    );
    let (ok, text) = run(&[]);
    assert!(ok && text.contains("is valid"), "{text}");
}

#[test]
fn axle_check_accepts_a_valid_file_and_names_the_key_and_line_of_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, stdout, stderr) = check(
        dir.path(),
        "good.toml",
        r#"[location."/"]
style = "screen"
media = "screen"
order = "fallback"
params = ["a", "b"]
user-agent-styles = [{ pattern = "Lynx|w3m", style = "text" }]
media-rules = [{ user-agent = "^Noki", accept = "vnd.wap.wml", media = "handheld" }]
output-charset = "accept"

[location."/".types]
"application/x-identity" = "passthru"

[[location."/".processor]]
type = "text/xsl"
href = "/s/upper.xsl"
uri = "\\.xml$"
root = "{urn:x}feed"
"#,
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("good.toml is valid"), "{stdout}");

    // An unknown key: its name and line.
    let (ok, _, stderr) = check(
        dir.path(),
        "unknown.toml",
        "[location.\"/\"]\nstyle = \"x\"\nbogus = 1\n",
    );
    assert!(!ok);
    assert!(stderr.contains("unknown.toml:3:"), "{stderr}");
    assert!(stderr.contains("unknown field `bogus`"), "{stderr}");

    // A bad regex in a processor's `uri`.
    let (ok, _, stderr) = check(
        dir.path(),
        "regex.toml",
        "[location.\"/a\"]\nstyle = \"x\"\nprocessor = [{ type = \"text/xsl\", href = \"/a.xsl\", uri = \"a(\" }]\n",
    );
    assert!(!ok);
    assert!(
        stderr.contains("regex.toml:3: location.\"/a\".processor[0].uri: invalid regex"),
        "{stderr}"
    );

    // A bad regex in the User-Agent map (the second rule).
    let (ok, _, stderr) = check(
        dir.path(),
        "ua.toml",
        "[location.\"/\"]\nuser-agent-styles = [\n  { pattern = \"ok\", style = \"a\" },\n  { pattern = \"[\", style = \"b\" },\n]\n",
    );
    assert!(!ok);
    assert!(
        stderr.contains("ua.toml:4: location.\"/\".user-agent-styles[1].pattern: invalid regex"),
        "{stderr}"
    );

    // An unknown Language in the type map, and an unknown charset.
    let (ok, _, stderr) = check(
        dir.path(),
        "types.toml",
        "[location.\"/\"]\n\n[location.\"/\".types]\n\"text/x-mine\" = \"nope\"\n",
    );
    assert!(!ok);
    assert!(
        stderr.contains("types.toml:4: location.\"/\".types.\"text/x-mine\""),
        "{stderr}"
    );
    let (ok, _, stderr) = check(
        dir.path(),
        "charset.toml",
        "[location.\"/\"]\noutput-charset = \"klingon\"\n",
    );
    assert!(!ok);
    assert!(
        stderr.contains("charset.toml:2: location.\"/\".output-charset"),
        "{stderr}"
    );
}

/// Errors in a processor table name the full key and the line of that key:
/// in the `[[location."/".processor]]` table form the bad `uri` is on line
/// 7 (not the table header on line 4), and an unknown key inside a
/// processor is named with its path, like every other key.
#[test]
fn axle_check_names_the_full_key_of_an_error_and_the_line_it_is_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for (name, text, expected) in [
        (
            "table.toml",
            "[location.\"/\"]\nstyle = \"x\"\n\n[[location.\"/\".processor]]\ntype = \"text/xsl\"\nhref = \"/a.xsl\"\nuri = \"(\"\n",
            "table.toml:7: location.\"/\".processor[0].uri: invalid regex",
        ),
        (
            "unknown.toml",
            "[location.\"/\"]\n\n[[location.\"/\".processor]]\ntype = \"text/xsl\"\nhref = \"/a.xsl\"\nbogus = 2\n",
            "unknown.toml:6: location.\"/\".processor[0].bogus: ",
        ),
    ] {
        let (ok, _, stderr) = check(dir.path(), name, text);
        if ok || !stderr.contains(expected) {
            wrong.push(format!("expected {expected:?}, got: {stderr}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The real binary: a changed configuration takes effect on SIGHUP in every
/// cache mode, including settings that change the output of an unchanged
/// chain (`xinclude`); a broken file is refused and the old one keeps
/// serving.
#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_the_configuration_and_a_broken_file_keeps_the_old_one() {
    for mode in MODES {
        let site = TestSite::new();
        tags(&site, &["A", "B"]);
        site.write("t/copy.xsl", COPY_XSL);
        site.write("hup/doc.xml", "<doc/>");
        site.write(
            "hup/xi.xml",
            "<?xml-stylesheet type=\"text/xsl\" href=\"/t/copy.xsl\"?>\n<doc xmlns:xi=\"http://www.w3.org/2001/XInclude\"><xi:include href=\"part.xml\"/></doc>\n",
        );
        site.write("hup/part.xml", "<part>included</part>");
        let config = site.outside().join("site.toml");
        let v1 = format!("[location.\"/hup\"]\nprocessor = [{}]\n", proc("A", ""));
        std::fs::write(&config, &v1).unwrap();
        let server = Binary::start(&site.root, &config, mode);

        let a = server.get("/hup/doc.xml").await;
        assert_eq!((a.status, a.text()), (200, out("A")), "{mode}");
        let a2 = server.get("/hup/doc.xml").await;
        assert_eq!(a2.text(), out("A"));
        if mode != CacheMode::Off {
            assert_eq!(a2.cache(), "hit", "{mode}");
        }
        let untouched = "<doc xmlns:xi=\"http://www.w3.org/2001/XInclude\"><xi:include href=\"part.xml\"/></doc>\n";
        assert_eq!(server.get("/hup/xi.xml").await.text(), untouched, "{mode}");
        assert_eq!(server.get("/hup/xi.xml").await.text(), untouched, "{mode}");

        // A new processor.
        let v2 = format!("[location.\"/hup\"]\nprocessor = [{}]\n", proc("B", ""));
        std::fs::write(&config, &v2).unwrap();
        server.hup(true).await;
        let b = server.get("/hup/doc.xml").await;
        assert_eq!((b.status, b.text()), (200, out("B")), "{mode}");

        // Same chain, same files: only `xinclude` changes.
        std::fs::write(&config, format!("{v2}xinclude = true\n")).unwrap();
        server.hup(true).await;
        let included = server.get("/hup/xi.xml").await;
        assert_eq!(
            (included.status, included.text().as_str()),
            (
                200,
                "<doc xmlns:xi=\"http://www.w3.org/2001/XInclude\"><part>included</part></doc>\n"
            ),
            "{mode}"
        );

        // A broken file: refused, the previous configuration keeps serving.
        std::fs::write(&config, "[location.\"/hup\"]\nbogus = 1\n").unwrap();
        server.hup(false).await;
        assert_eq!(server.get("/hup/doc.xml").await.text(), out("B"), "{mode}");
        assert_eq!(
            server.get("/hup/xi.xml").await.text(),
            included.text(),
            "{mode}"
        );
        drop(server);
    }
}

/// A configuration file inside the root is never served, however its URL
/// is spelled.
#[tokio::test(flavor = "multi_thread")]
async fn the_configuration_file_in_the_root_is_not_served() {
    let site = TestSite::new();
    let config = site.root.join("axle.toml");
    std::fs::write(&config, "[location.\"/\"]\nstyle = \"screen\"\n").unwrap();
    let server = Binary::start(&site.root, &config, CacheMode::Incremental);
    let mut served = Vec::new();
    for path in [
        "/axle.toml",
        "/%61xle.toml",
        "/axle%2Etoml",
        "/axle.toml/",
        "//axle.toml",
        "/./axle.toml",
    ] {
        let r = server.get(path).await;
        if r.status != 404 {
            served.push(format!("{path} -> {} {:?}", r.status, r.text()));
        }
    }
    assert!(served.is_empty(), "{}", served.join("\n"));
    assert_eq!(server.get("/one.xml").await.status, 200);
}

/// A location's settings cover every spelling of a path under it: a
/// percent-encoded letter, an empty or a `.` segment reach the same file, so
/// they must get the same processors and the same `passthru = false`.
#[tokio::test(flavor = "multi_thread")]
async fn location_settings_apply_to_every_spelling_of_a_path() {
    let site = TestSite::new();
    tags(&site, &["Root", "Larry", "Moe", "Curly", "Shemp", "pi"]);
    site.write("larry/moe/curly/stooge.xml", "<doc/>");
    let source = format!("{}<doc/>\n", pi("pi", ""));
    site.write("sealed/doc.xml", &source);
    let config = format!(
        "{STOOGES}\n[location.\"/sealed\"]\nreset = true\npassthru = false\norder = \"instead\"\nprocessor = [{}]\n",
        proc("Shemp", "")
    );
    let cases = [
        ("/larry/moe/curly/stooge.xml", out("Curly...Moe...Larry")),
        ("/larry/moe/curl%79/stooge.xml", out("Curly...Moe...Larry")),
        ("/%6Carry/moe/curly/stooge.xml", out("Curly...Moe...Larry")),
        ("//larry/moe/curly/stooge.xml", out("Curly...Moe...Larry")),
        ("/./larry/moe/curly/stooge.xml", out("Curly...Moe...Larry")),
        ("/sealed/doc.xml?passthru=1", out("Shemp")),
        ("/seal%65d/doc.xml?passthru=1", out("Shemp")),
        ("//sealed/doc.xml?passthru=1", out("Shemp")),
        ("/./sealed/doc.xml?passthru=1", out("Shemp")),
    ];
    for mode in MODES {
        let server = Server::start(&site.root, mode, &config).await;
        let mut wrong = Vec::new();
        for (path, expected) in &cases {
            // The configured output, or a refusal; never another chain.
            let (status, text) = server.raw(path).await;
            let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
            if !(status == 404 || (status == 200 && body == expected)) {
                wrong.push(format!("{path} -> {status} {body:?}"));
            }
        }
        assert!(wrong.is_empty(), "{mode}:\n{}", wrong.join("\n"));
    }
}
