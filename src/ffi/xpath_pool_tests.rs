//! Tests of the XPath contexts a thread keeps from one transform to the
//! next (`csrc/xpath_pool.c`): they are reused, and a transform given a
//! kept context answers as it would on a fresh one, whatever the transform
//! before it registered, evaluated or failed on.

use super::tests::{refuse, xsl};
use super::*;
use std::sync::Arc;

fn run(xsl: &str, xml: &str) -> Result<Vec<u8>, XmlError> {
    let style = Arc::new(Stylesheet::compile(
        xsl.as_bytes(),
        "/site/style.xsl",
        refuse(),
    )?);
    let doc = XmlDoc::parse(xml.as_bytes(), "/site/doc.xml", refuse())?;
    style
        .transform(doc, "/site/doc.xml", &[], &Limits::default(), refuse())?
        .serialize()
}

fn text(out: Result<Vec<u8>, XmlError>) -> String {
    String::from_utf8(out.unwrap()).unwrap()
}

/// Runs `f` on a new thread: a thread's pool and reuse count start empty.
fn on_new_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f).join().unwrap()
}

#[test]
fn transforms_on_one_thread_reuse_a_kept_xpath_context_and_answer_the_same() {
    assert!(
        xpath_contexts_are_pooled(),
        "libxslt's xmlXPathNewContext calls do not reach csrc/xpath_pool.c, or it found no libxml2 definition"
    );
    // Keys, positions, node-set functions, variables, sorting, and a
    // result tree fragment: the state an XPath context carries while a
    // transform runs.
    let style = xsl(r#"<xsl:output method="text"/>
           <xsl:key name="k" match="i" use="@g"/>
           <xsl:variable name="all" select="//i"/>
           <xsl:template match="/">
             <xsl:variable name="rtf"><x>1</x><x>2</x></xsl:variable>
             <xsl:for-each select="//i">
               <xsl:sort select="@n" data-type="number" order="descending"/>
               <xsl:value-of select="concat(position(), '/', last(), ':', @n, ':', count(key('k', @g)), ' ')"/>
             </xsl:for-each>
             <xsl:value-of select="concat(count($all), ' ', sum(//i/@n), ' ', string($rtf), ' ', local-name(/*), ' ', generate-id(/*) = generate-id(/*))"/>
           </xsl:template>"#);
    let doc = r#"<d><i g="a" n="3"/><i g="b" n="10"/><i g="a" n="7"/></d>"#;
    let expected = "1/3:10:1 2/3:7:2 3/3:3:2 3 20 12 d true";
    let reused = on_new_thread(move || {
        let before = xpath_contexts_reused_here();
        for _ in 0..6 {
            assert_eq!(text(run(&style, doc)), expected);
        }
        xpath_contexts_reused_here() - before
    });
    assert_eq!(
        reused, 5,
        "every transform after the first reuses the context"
    );
}

#[test]
fn a_function_one_transform_defined_is_unknown_to_the_next() {
    // func:function registers the function in the transform's XPath
    // context; that context is freed, not kept, so the next transform on
    // the thread does not see it (as on a fresh context).
    let defines = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
          xmlns:func="http://exslt.org/functions" xmlns:my="urn:my"
          extension-element-prefixes="func">
        <xsl:output method="text"/>
        <func:function name="my:twice"><xsl:param name="x"/><func:result select="$x * 2"/></func:function>
        <xsl:template match="/"><xsl:value-of select="concat(my:twice(21), ' ', function-available('my:twice'))"/></xsl:template>
      </xsl:stylesheet>"#;
    let asks = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
          xmlns:my="urn:my">
        <xsl:output method="text"/>
        <xsl:template match="/"><xsl:value-of select="concat(function-available('my:twice'), ' ', function-available('concat'), ' ', function-available('key'))"/></xsl:template>
      </xsl:stylesheet>"#;
    on_new_thread(move || {
        for _ in 0..3 {
            assert_eq!(text(run(asks, "<d/>")), "false true true");
            assert_eq!(text(run(defines, "<d/>")), "42 true");
            assert_eq!(text(run(asks, "<d/>")), "false true true");
        }
        // Calling it without the definition fails as on a fresh context.
        let calls = xsl(
            r#"<xsl:template match="/" xmlns:my="urn:my"><xsl:value-of select="my:twice(1)"/></xsl:template>"#,
        );
        assert!(run(&calls, "<d/>").is_err());
        assert_eq!(text(run(defines, "<d/>")), "42 true");
    });
}

#[test]
fn a_failed_transform_leaves_nothing_for_the_next() {
    on_new_thread(|| {
        let good = xsl(
            r#"<xsl:output method="text"/><xsl:template match="/"><xsl:value-of select="count(//*)"/></xsl:template>"#,
        );
        assert_eq!(text(run(&good, "<a><b/></a>")), "2");
        let bad = xsl(
            r#"<xsl:template match="/"><xsl:value-of select="no-such-function(1)"/></xsl:template>"#,
        );
        assert!(run(&bad, "<a/>").is_err());
        for _ in 0..3 {
            assert_eq!(text(run(&good, "<a><b/><c/></a>")), "3");
        }
    });
}
