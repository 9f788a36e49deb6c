//! Sorts fuzzed text with `xsl-sort = "unicode"` (`csrc/sort.c`, comparing
//! through `src/ffi/collate.rs`) and holds what the sort promises: the
//! output is the input items, each once, in an order the collator agrees
//! with (`lang`, `case-order`, `order`), ties broken by a second key when
//! there is one and by document order (a stable sort) when not. Why:
//! sort.c is C that walks node sets and key arrays a stylesheet shapes;
//! under AddressSanitizer (scripts/fuzz-asan builds csrc/ with
//! -fsanitize=address) a read past an array is a crash here, and a
//! misplaced item is a wrong page.
//!
//! Input: byte 0 is the sort (bit 0 `case-order="lower-first"`, bit 1
//! `order="descending"`, bits 2-3 `lang`: none, `sv`, `de` or `x-fuzz`,
//! bit 4 a second key: document position, descending); the rest is up
//! to 64 items split at NUL (UTF-8, lossy; characters XML cannot hold or
//! this line-based check cannot read are dropped).
#![no_main]

use std::cmp::Ordering;
use std::sync::Arc;

use axle::ffi::fuzzing::unicode_collate;
use axle::ffi::{Limits, RefuseAll, Resolver, Stylesheet, XmlDoc};
use libfuzzer_sys::fuzz_target;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fuzz_target!(|data: &[u8]| {
    let [spec, rest @ ..] = data else {
        return;
    };
    axle::ffi::init();
    let lower_first = spec & 1 != 0;
    let descending = spec & 2 != 0;
    let lang = [None, Some("sv"), Some("de"), Some("x-fuzz")][usize::from((spec >> 2) & 3)];
    let second = spec & 16 != 0;
    let items: Vec<String> = rest
        .split(|&b| b == 0)
        .take(64)
        .map(|b| {
            String::from_utf8_lossy(b)
                .chars()
                .filter(|c| !c.is_control() && !matches!(c, '\u{FFFE}' | '\u{FFFF}'))
                .collect()
        })
        .collect();
    let mut source = String::from("<list>");
    for (n, item) in items.iter().enumerate() {
        source.push_str(&format!("<i n=\"{n}\">{}</i>", escape(item)));
    }
    source.push_str("</list>");
    let lang_attr = lang.map(|l| format!(" lang=\"{l}\"")).unwrap_or_default();
    let xsl = format!(
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text" encoding="UTF-8"/>
<xsl:template match="/list"><xsl:for-each select="i">
<xsl:sort select="."{lang_attr} case-order="{case}" order="{{'{order}'}}"/>{second}
<xsl:value-of select="@n"/><xsl:text> </xsl:text><xsl:value-of select="."/><xsl:text>&#10;</xsl:text>
</xsl:for-each></xsl:template></xsl:stylesheet>"#,
        case = if lower_first { "lower-first" } else { "upper-first" },
        order = if descending { "descending" } else { "ascending" },
        second = if second {
            r#"<xsl:sort select="@n" data-type="number" order="descending"/>"#
        } else {
            ""
        },
    );
    let resolver: Arc<dyn Resolver> = Arc::new(RefuseAll);
    let style = Arc::new(
        Stylesheet::compile(xsl.as_bytes(), "/site/sort.xsl", resolver.clone())
            .unwrap_or_else(|e| panic!("{e}\n{xsl}")),
    );
    let doc = XmlDoc::parse(source.as_bytes(), "/site/doc.xml", resolver.clone())
        .unwrap_or_else(|e| panic!("{e}\n{source}"));
    let limits = Limits {
        unicode_sort: true,
        ..Limits::default()
    };
    let result = style
        .transform(doc, "/site/doc.xml", &[], &limits, resolver)
        .unwrap_or_else(|e| panic!("{e}"));
    let out = result.serialize().unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8(out).expect("UTF-8 out");
    let sorted: Vec<(usize, &str)> = text
        .lines()
        .map(|l| {
            let (n, item) = l.split_once(' ').expect("`n item`");
            (n.parse().expect("a position"), item)
        })
        .collect();
    // Each item once.
    let mut seen: Vec<usize> = sorted.iter().map(|(n, _)| *n).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..items.len()).collect::<Vec<_>>(), "{text}");
    for (n, item) in &sorted {
        assert_eq!(*item, items[*n], "item {n} comes back as it was");
    }
    // In an order the collator agrees with.
    for pair in sorted.windows(2) {
        let ((na, a), (nb, b)) = (pair[0], pair[1]);
        let mut order = unicode_collate(lang, lower_first, a, b);
        if descending {
            order = order.reverse();
        }
        match order {
            Ordering::Less => {}
            Ordering::Greater => panic!("{a:?} before {b:?} ({spec:#x})"),
            Ordering::Equal if second => assert!(na > nb, "second key: {na} before {nb}"),
            Ordering::Equal => assert!(na < nb, "stable: {na} before {nb}"),
        }
    }
});
