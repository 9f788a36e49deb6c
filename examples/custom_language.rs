//! Writing your own Language: a stage that numbers section titles.
//!
//! Run it with `cargo run --example custom_language` (options: `--root DIR`,
//! default the bundled `samples/`, and `--listen ADDR`, default
//! `127.0.0.1:8080`), then open <http://127.0.0.1:8080/custom/numbered.xml>:
//! its section headings read 1, 1.1, 1.2, 2, 2.1, 2.1.1.
//!
//! # What a Language is
//!
//! Axle serves a document through the chain of stages named by its
//! `<?xml-stylesheet type="..." href="..."?>` processing instructions. The
//! `type` picks a [`Language`] from the [`Registry`](axle::Registry); the
//! `href` names the stage's *resource*. For XSLT the resource is a
//! stylesheet; for the `Numbered` Language below it is a one-element
//! configuration file:
//!
//! ```xml
//! <numbering separator="." max-depth="3"/>
//! ```
//!
//! # Compile, then run
//!
//! A Language has two halves with different lifetimes:
//!
//! - [`Language::compile`] turns the resource into a [`Stage`]. It runs once
//!   per resource, and again only when a file it read has changed. Do the
//!   expensive and the fallible work here (parsing the configuration,
//!   rejecting a bad one): its errors are reported as a broken stylesheet.
//! - [`Stage::run`] transforms one document. The compiled stage is shared by
//!   every request and may run on several threads at once, so it is
//!   `Send + Sync` and holds no per-request state. Its input is a tree or
//!   bytes ([`StageData`]); a Language written in Rust reads it as a
//!   read-only roxmltree document through [`StageData::with_view`] (decoded,
//!   whatever form it came in) and writes its output with [`XmlOut`], whose
//!   `copy_with` copies nodes with their names, namespaces and escaping, so
//!   this Language is a copy with a hook on `<title>`'s attributes. At the
//!   final position (`ctx.is_final`) the output is the response, and
//!   `XmlOut::finish` gives it the Content-Type `text/xml; charset=UTF-8`.
//!
//! # Read through `Resource` and `StageContext`
//!
//! Axle caches outputs by content hash: a cache key covers the stage's
//! Language, every file its compile read, its position, the request's
//! parameters and the hash of its input. So a stage must be a pure function
//! of what Axle can see:
//!
//! - in `compile`, read the resource from `resource.bytes`, and any other
//!   file with [`Resource::read_related`];
//! - in `run`, read files with [`StageContext::read_related`] and parameters
//!   from `ctx.params`.
//!
//! Those reads are confined to the document root and recorded, so an edit to
//! any of those files invalidates exactly the right entries. A stage that
//! opens files itself (`std::fs`), looks at the clock or the network, or
//! keeps state between runs would be served stale from the cache.
//!
//! # The `version()` rule
//!
//! [`Language::name`] and [`Language::version`] are part of every key. When
//! a new build of the Language would give *other output for the same input
//! and resource*, bump `version()`, so that results cached by the old code
//! are not served as if the new code had produced them. A refactoring that
//! keeps the output byte for byte needs no bump. The name must be unique
//! among the registered Languages.
//!
//! # Plugging it in
//!
//! Register the type under a MIME type, then serve:
//!
//! ```text
//! axle::Server::builder("samples")        // XSLT and passthru, axle.toml
//!     .language("application/x-axle-numbered", Numbered)
//!     .build()?
//!     .run()?;
//! ```
//!
//! (`main` below does this; the `language` module's documentation has the
//! same as a compiled doc test.)
//!
//! and name the type in a document, where it chains with XSLT stages like
//! any other:
//!
//! ```xml
//! <?xml-stylesheet type="application/x-axle-numbered" href="/stylesheets/numbering.xml"?>
//! <?xml-stylesheet type="text/xsl" href="/stylesheets/page.xsl"?>
//! ```
//!
//! A PI whose type is not registered is skipped, so under a plain
//! `axle serve` the same page renders without numbers.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use axle::language::{
    Language, LanguageError, Resource, Stage, StageContext, StageData, StageOutput, XmlOut,
    prefixed_name, view_of,
};

use roxmltree::{Document, Node, NodeId};

/// The MIME type the example registers `Numbered` under.
const NUMBERED_TYPE: &str = "application/x-axle-numbered";

// ---------------------------------------------------------------------------
// The Language
// ---------------------------------------------------------------------------

/// Numbers the `<title>` of every `<section>` (both in no namespace):
/// `number="1"`, `"1.1"`, `"1.2"`, `"2"`, ... by the sections' nesting.
#[derive(Debug, Default, Clone, Copy)]
struct Numbered;

impl Language for Numbered {
    fn name(&self) -> &str {
        "numbered"
    }

    /// Version 1. Bump it when this file changes what the stage writes for
    /// the same input and configuration (say, numbering appendices A, B, C).
    fn version(&self) -> u32 {
        1
    }

    fn compile(&self, resource: &Resource<'_>) -> Result<Arc<dyn Stage>, LanguageError> {
        // `href="#id"` names an element of the document itself (XSLT's
        // embedded stylesheets); this Language wants a file of its own.
        if let Some(id) = resource.fragment {
            return Err(LanguageError::Failed(format!(
                "href=\"#{id}\": the numbered Language reads its configuration from a file \
                 such as /stylesheets/numbering.xml, not from the document"
            )));
        }
        // Everything the stage depends on comes from `resource.bytes`, which
        // Axle has already hashed into the stage's identity.
        let config = NumberingConfig::parse(resource.bytes)?;
        Ok(Arc::new(NumberedStage { config }))
    }
}

/// The compiled configuration: `<numbering separator="." max-depth="3"/>`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NumberingConfig {
    /// Joins the levels of a number (default `.`).
    separator: String,
    /// Sections nested deeper than this get no number (default 3).
    max_depth: usize,
}

impl Default for NumberingConfig {
    fn default() -> Self {
        NumberingConfig {
            separator: ".".into(),
            max_depth: 3,
        }
    }
}

impl NumberingConfig {
    const EXPECTED: &'static str = r#"expected <numbering separator="." max-depth="3"/>"#;

    /// Reads the configuration with the same view a stage's input gets
    /// (decoding, errors with line and column).
    fn parse(bytes: &[u8]) -> Result<Self, LanguageError> {
        view_of(bytes, Self::from_document).map_err(|e| match e {
            LanguageError::NotWellFormed { .. } => {
                Self::fail(format!("the numbering configuration is {e}"))
            }
            other => other,
        })
    }

    fn fail(why: String) -> LanguageError {
        LanguageError::Failed(format!("{why} ({})", Self::EXPECTED))
    }

    fn from_document(doc: &Document<'_>) -> Result<Self, LanguageError> {
        let root = doc.root_element();
        if !is_named(root, "numbering") {
            return Err(Self::fail(format!(
                "the numbering configuration is a <{}> element",
                prefixed_name(root)
            )));
        }
        let has_content = root
            .children()
            .any(|c| c.is_element() || (c.is_text() && !c.text().unwrap_or("").trim().is_empty()));
        if has_content {
            return Err(Self::fail("<numbering> must be empty".into()));
        }
        let mut config = NumberingConfig::default();
        for attr in root.attributes() {
            match (attr.namespace(), attr.name()) {
                (None, "separator") => config.separator = attr.value().to_string(),
                (None, "max-depth") => {
                    config.max_depth = attr
                        .value()
                        .trim()
                        .parse()
                        .ok()
                        .filter(|&d| d >= 1)
                        .ok_or_else(|| {
                            Self::fail(format!(
                                "max-depth=\"{}\" is not a whole number of at least 1",
                                attr.value()
                            ))
                        })?;
                }
                (Some(_), _) => {} // other vocabularies' attributes are allowed
                (None, other) => {
                    return Err(Self::fail(format!(
                        "<numbering> has an unknown attribute {other:?}"
                    )));
                }
            }
        }
        Ok(config)
    }
}

/// The compiled stage: just the configuration, read-only and shareable.
#[derive(Debug)]
struct NumberedStage {
    config: NumberingConfig,
}

impl Stage for NumberedStage {
    fn run(&self, input: StageData, ctx: &StageContext<'_>) -> Result<StageOutput, LanguageError> {
        // A tree from a previous XSLT stage or the source's bytes: either
        // way a roxmltree document here.
        input.with_view(ctx, |doc| number(doc, &self.config).finish(ctx))
    }
}

/// The whole transformation: the input copied, each `<title>` child of a
/// numbered section given a `number` attribute (replacing one already
/// there).
fn number(doc: &Document<'_>, config: &NumberingConfig) -> XmlOut {
    let numbers = section_numbers(doc, config);
    let mut out = XmlOut::with_declaration();
    out.copy_with(doc.root(), |node, attrs| {
        let number = node
            .parent_element()
            .filter(|p| is_named(node, "title") && is_named(*p, "section"))
            .and_then(|p| numbers.get(&p.id()));
        if let Some(number) = number {
            attrs.set("number", number.clone());
        }
    });
    out
}

fn is_named(node: Node<'_, '_>, local: &str) -> bool {
    node.is_element() && node.tag_name().name() == local && node.tag_name().namespace().is_none()
}

/// The number of every section within `max_depth`, by node. A section's
/// parent in the outline is its nearest ancestor section, whatever elements
/// lie between them.
fn section_numbers(doc: &Document<'_>, config: &NumberingConfig) -> HashMap<NodeId, String> {
    // Sections seen so far under each outline parent (None: the top level).
    let mut counts: HashMap<Option<NodeId>, usize> = HashMap::new();
    // Each section's depth and, within max_depth, its number.
    let mut outline: HashMap<NodeId, (usize, Option<String>)> = HashMap::new();
    // Document order: a section is met after its outline parent.
    for section in doc.descendants().filter(|n| is_named(*n, "section")) {
        let parent = section
            .ancestors()
            .skip(1)
            .find(|n| is_named(*n, "section"));
        let count = counts.entry(parent.map(|p| p.id())).or_insert(0);
        *count += 1;
        let (depth, number) = match parent.and_then(|p| outline.get(&p.id())) {
            None => (1, Some(count.to_string())),
            Some((depth, Some(prefix))) if *depth < config.max_depth => (
                depth + 1,
                Some(format!("{prefix}{}{count}", config.separator)),
            ),
            Some((depth, _)) => (depth + 1, None),
        };
        outline.insert(section.id(), (depth, number));
    }
    outline
        .into_iter()
        .filter_map(|(id, (_, number))| Some((id, number?)))
        .collect()
}

// ---------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------

const USAGE: &str = "usage: cargo run --example custom_language -- [--root DIR] [--listen ADDR]";

/// `--root DIR` and `--listen ADDR` (also `--root=DIR`), by hand.
fn parse_args(args: impl IntoIterator<Item = String>) -> Result<(PathBuf, SocketAddr), String> {
    let mut root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut listen = SocketAddr::from(([127, 0, 0, 1], 8080));
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--root" => root = PathBuf::from(value()?),
            "--listen" => {
                let text = value()?;
                listen = axle::config::parse_listen(&text)?;
            }
            "-h" | "--help" => return Err(String::new()), // usage, exit 0
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok((root, listen))
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("axle=info,warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let (root, listen) = match parse_args(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(why) if why.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(why) => {
            eprintln!("custom_language: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // The default Languages (XSLT, passthru) plus ours, on the server
    // `axle serve` runs (axle.toml in the root is loaded as it would be).
    println!("custom_language: {NUMBERED_TYPE} is registered; open /custom/numbered.xml");
    let served = axle::Server::builder(root)
        .listen(listen)
        .language(NUMBERED_TYPE, Numbered)
        .build()
        .map_err(std::io::Error::from)
        .and_then(axle::Server::run);
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("custom_language: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use axle::CacheMode;
    use axle::cache::Fingerprints;
    use axle::ffi::Limits;
    use axle::provider::{FileProvider, RootResolver};
    use bytes::Bytes;

    use super::*;

    /// The stage's transformation of `input`, as a stage that is not the
    /// last would give it.
    fn number_document(input: &[u8], config: &NumberingConfig) -> Result<String, LanguageError> {
        view_of(input, |doc| number(doc, config).into_string())
    }

    fn numbered(input: &str, config: &NumberingConfig) -> String {
        number_document(input.as_bytes(), config).unwrap()
    }

    fn config(separator: &str, max_depth: usize) -> NumberingConfig {
        NumberingConfig {
            separator: separator.into(),
            max_depth,
        }
    }

    #[test]
    fn numbers_nested_sections_exactly() {
        let input = r#"<?xml version="1.0"?>
<!-- outline -->
<doc xmlns:x="urn:x">
  <title>Top</title>
  <section id="a">
    <title>A</title>
    <section><title number="old">A.1</title></section>
    <div><section><title>A.2</title></section></div>
  </section>
  <section><title x:k="v">B</title><section><section><title>B.1.1</title></section></section></section>
</doc>"#;
        let want = r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- outline -->
<doc xmlns:x="urn:x">
  <title>Top</title>
  <section id="a">
    <title number="1">A</title>
    <section><title number="1.1">A.1</title></section>
    <div><section><title number="1.2">A.2</title></section></div>
  </section>
  <section><title x:k="v" number="2">B</title><section><section><title number="2.1.1">B.1.1</title></section></section></section>
</doc>
"#;
        assert_eq!(numbered(input, &NumberingConfig::default()), want);
    }

    #[test]
    fn max_depth_and_separator_are_honoured() {
        let input = "<d><section><title>1</title><section><title>1.1</title>\
                     <section><title>1.1.1</title></section></section></section>\
                     <section><title>2</title><title>again</title></section></d>";
        let out = numbered(input, &config(" - ", 2));
        assert_eq!(
            out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <d><section><title number=\"1\">1</title><section><title number=\"1 - 1\">1.1</title>\
             <section><title>1.1.1</title></section></section></section>\
             <section><title number=\"2\">2</title><title number=\"2\">again</title></section></d>\n"
        );
        let out = numbered(input, &config("-", 1));
        assert!(out.contains(r#"<title number="1">1</title><section><title>1.1</title>"#));
    }

    #[test]
    fn serializer_keeps_namespaces_pis_comments_and_escapes() {
        let input = "<?xml version='1.0' encoding='utf-8'?>\n\
            <!DOCTYPE r [<!ENTITY e '<b>&amp;</b>'>]>\n\
            <?pi one two?><?bare?>\n\
            <r xmlns='urn:d' xmlns:p='urn:p' p:a='&lt;&amp;&gt;&quot;&#10;&#9;x'>\
            <p:e xmlns=''><u/></p:e><![CDATA[a<b>]]> &e; \u{e9}<!--c--><section/></r>";
        let out = numbered(input, &NumberingConfig::default());
        assert_eq!(
            out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <?pi one two?>\n<?bare?>\n\
             <r xmlns=\"urn:d\" xmlns:p=\"urn:p\" p:a=\"&lt;&amp;&gt;&quot;&#10;&#9;x\">\
             <p:e xmlns=\"\"><u/></p:e>a&lt;b&gt; <b>&amp;</b> \u{e9}<!--c--><section/></r>\n"
        );
        // The output means the same as the input (the <section> is in the
        // urn:d namespace, so it is not numbered).
        let (a, b) = (
            Document::parse_with_options(
                input,
                roxmltree::ParsingOptions {
                    allow_dtd: true,
                    ..Default::default()
                },
            )
            .unwrap(),
            Document::parse(&out).unwrap(),
        );
        let names = |d: &Document<'_>| -> Vec<String> {
            d.descendants()
                .filter(|n| n.is_element())
                .map(|n| format!("{:?}", n.tag_name()))
                .collect()
        };
        assert_eq!(names(&a), names(&b));
    }

    #[test]
    fn config_defaults_and_values() {
        let parse = |s: &str| NumberingConfig::parse(s.as_bytes());
        assert_eq!(parse("<numbering/>").unwrap(), NumberingConfig::default());
        assert_eq!(
            parse("<?xml version='1.0'?><!-- c --><numbering separator='-' max-depth=' 5 '/>")
                .unwrap(),
            config("-", 5)
        );
    }

    #[test]
    fn malformed_config_is_a_clear_error() {
        for (config, why) in [
            ("<numbering", "not well-formed XML"),
            ("<numbers/>", "is a <numbers> element"),
            (
                "<n:numbering xmlns:n='urn:n'/>",
                "is a <n:numbering> element",
            ),
            (
                "<numbering max-depth='0'/>",
                "max-depth=\"0\" is not a whole number",
            ),
            ("<numbering max-depth='two'/>", "max-depth=\"two\""),
            (
                "<numbering maxdepth='2'/>",
                "unknown attribute \"maxdepth\"",
            ),
            ("<numbering><x/></numbering>", "must be empty"),
        ] {
            match NumberingConfig::parse(config.as_bytes()) {
                Err(LanguageError::Failed(message)) => {
                    assert!(message.contains(why), "{config}: {message}");
                    assert!(message.contains(NumberingConfig::EXPECTED), "{message}");
                }
                other => panic!("{config}: {other:?}"),
            }
        }
        assert!(matches!(
            NumberingConfig::parse(b"<numbering separator='\xff'/>"),
            Err(LanguageError::Failed(m)) if m.contains("not UTF-8")
        ));
    }

    #[test]
    fn malformed_input_is_a_well_formedness_error() {
        let cfg = NumberingConfig::default();
        match number_document(b"<doc>\n<section></doc>", &cfg) {
            Err(LanguageError::NotWellFormed { line, message }) => {
                assert_eq!(line, Some(2), "{message}");
                assert!(message.contains("2:"), "roxmltree's position: {message}");
            }
            other => panic!("{other:?}"),
        }
        // Bytes that are not in the document's encoding are not XML.
        match number_document(b"<doc>caf\xe9</doc>", &cfg) {
            Err(LanguageError::NotWellFormed { line, message }) => {
                assert_eq!(line, Some(1), "{message}");
                assert!(message.contains("not UTF-8"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        // Those that declare another encoding are read in it.
        let latin1 = b"<?xml version='1.0' encoding='ISO-8859-1'?><doc>caf\xe9</doc>";
        assert_eq!(
            number_document(latin1, &cfg).unwrap(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<doc>caf\u{e9}</doc>\n"
        );
        assert!(matches!(
            number_document(b"<doc>&undefined;</doc>", &cfg),
            Err(LanguageError::NotWellFormed { .. })
        ));
    }

    /// A document root with a resolver, as the pipeline gives a Language.
    fn resolver_for(root: &Path) -> Arc<RootResolver> {
        FileProvider::new(root, Fingerprints::default())
            .unwrap()
            .resolver()
    }

    #[test]
    fn compiles_and_runs_through_the_language_api() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let resolver = resolver_for(&root);
        let config_path = root.join("numbering.xml");
        let resource =
            |bytes: &'static [u8]| Resource::new(&config_path, "/numbering.xml", bytes, &resolver);
        let bad = Numbered.compile(&resource(b"<numbers/>"));
        assert!(matches!(bad, Err(LanguageError::Failed(_))));
        let embedded =
            Numbered.compile(&resource(b"<doc><numbering id='n'/></doc>").with_fragment("n"));
        assert!(matches!(embedded, Err(LanguageError::Failed(m)) if m.contains("#n")));
        let stage = Numbered
            .compile(&resource(b"<numbering separator=':'/>"))
            .unwrap();

        let base_url = "/doc.xml".to_string();
        let limits = Limits::default();
        let run = |is_final: bool| {
            let ctx = StageContext::new(&base_url, &[], is_final, &limits, &resolver);
            let input = StageData::Bytes(Bytes::from_static(
                b"<d><section><section><title>t</title></section></section></d>",
            ));
            stage.run(input, &ctx).unwrap()
        };
        let want = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                    <d><section><section><title number=\"1:1\">t</title></section></section></d>\n";
        for is_final in [false, true] {
            let out = run(is_final);
            let StageData::Bytes(bytes) = out.data else {
                panic!("expected bytes");
            };
            assert_eq!(std::str::from_utf8(&bytes).unwrap(), want);
            assert_eq!(
                out.content_type.as_deref(),
                is_final.then_some("text/xml; charset=UTF-8")
            );
        }
    }

    const RENDER_XSL: &str = r#"<xsl:stylesheet version="1.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html" indent="no"/>
  <xsl:template match="/">
    <div><xsl:apply-templates select="//section/title"/></div>
  </xsl:template>
  <xsl:template match="title[@number]">
    <h1><xsl:value-of select="concat(@number, ' ', .)"/></h1>
  </xsl:template>
  <xsl:template match="title">
    <h1><xsl:value-of select="."/></h1>
  </xsl:template>
</xsl:stylesheet>
"#;

    const DOC: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<?xml-stylesheet type="application/x-axle-numbered" href="numbering.xml"?>
<?xml-stylesheet type="text/xsl" href="/render.xsl"?>
<doc>
  <section><title>Intro</title>
    <section><title>Scope</title></section>
    <section><title>Terms</title>
      <section><title>Too deep</title></section>
    </section>
  </section>
  <section><title>Design &amp; use</title></section>
</doc>
"#;

    const WANT: &str = "<div>\
        <h1>1 Intro</h1><h1>1.1 Scope</h1><h1>1.2 Terms</h1><h1>Too deep</h1>\
        <h1>2 Design &amp; use</h1></div>\n";

    fn write_site(root: &Path) {
        std::fs::write(root.join("render.xsl"), RENDER_XSL).unwrap();
        std::fs::create_dir(root.join("docs")).unwrap();
        std::fs::write(
            root.join("docs/numbering.xml"),
            r#"<numbering max-depth="2"/>"#,
        )
        .unwrap();
        std::fs::write(root.join("docs/outline.xml"), DOC).unwrap();
    }

    /// Serves `root` with the numbered Language on an ephemeral port.
    async fn start(root: PathBuf, mode: CacheMode) -> SocketAddr {
        let server = axle::Server::builder(root)
            .cache_mode(mode)
            .language(NUMBERED_TYPE, Numbered)
            .build()
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(server.serve_on(listener, std::future::pending()));
        addr
    }

    async fn get(url: &str) -> (u16, String, String, String) {
        let response = reqwest::get(url).await.unwrap();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_string())
                .unwrap_or_default()
        };
        let (cache, content_type) = (header(axle::http::CACHE_HEADER), header("content-type"));
        let status = response.status().as_u16();
        (status, cache, content_type, response.text().await.unwrap())
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn serves_the_chain_identically_in_every_cache_mode() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        write_site(&root);
        let mut bodies = Vec::new();
        for mode in [CacheMode::Off, CacheMode::All, CacheMode::Incremental] {
            let addr = start(root.clone(), mode).await;
            let url = format!("http://{addr}/docs/outline.xml");
            let (status, cache, content_type, body) = get(&url).await;
            assert_eq!(status, 200, "{mode}: {body}");
            assert_eq!(cache, "miss", "{mode}");
            assert_eq!(content_type, "text/html; charset=UTF-8", "{mode}");
            assert_eq!(body, WANT, "{mode}");

            let (status, cache, _, again) = get(&url).await;
            assert_eq!(status, 200, "{mode}");
            let want_cache = if mode == CacheMode::Off {
                "miss"
            } else {
                "hit"
            };
            assert_eq!(cache, want_cache, "{mode}");
            assert_eq!(again, body, "{mode}");
            bodies.push(body);
        }
        assert!(bodies.iter().all(|b| *b == bodies[0]));
    }
}
