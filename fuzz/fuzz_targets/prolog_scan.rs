//! Feeds arbitrary bytes to the prolog scanner: it must never panic, and what
//! it returns must respect the invariants the rest of Axle relies on.
#![no_main]

use axle::prolog::{parse_stylesheet_pi, scan};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(prolog) = scan(data) {
        for pi in &prolog.stylesheets {
            assert!(!pi.href.is_empty(), "empty href in {pi:?}");
        }
        assert!(!prolog.root.local.is_empty(), "empty root name");
    }
    // The libxml2 fallback path feeds PI data to the same parser.
    if let Ok(text) = std::str::from_utf8(data)
        && let Some(pi) = parse_stylesheet_pi(text)
    {
        assert!(!pi.href.is_empty(), "empty href in {pi:?}");
    }
});
