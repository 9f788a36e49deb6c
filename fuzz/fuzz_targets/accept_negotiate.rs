//! Feeds arbitrary `Accept` fields to `negotiate = true`'s choice between
//! a document's page and its source (`axle::http::wire::choose_representation`,
//! `surely_page`). Issue #39: the field is the client's, and the hot memo
//! answers without reading the source whenever `surely_page` says so.
//!
//! Must never panic, and whenever `surely_page` says the page, the choice
//! made with the source read (any type it may have) is the page too:
//! otherwise a feed reader could be handed a memoized page.
//!
//! Input: byte 0 picks a configured `source-type` (or none); the rest,
//! split at `\n`, are the `Accept` fields (invalid header values are
//! skipped, as the HTTP layer never passes them on).
#![no_main]

use axle::http::wire::{Representation, choose_representation, surely_page};
use axum::http::{HeaderMap, HeaderValue, header};
use libfuzzer_sys::fuzz_target;

const CONFIGURED: [Option<&str>; 3] = [None, Some("text/x-opml"), Some("application/xml")];
const SOURCE_TYPES: [&str; 3] = [
    "application/atom+xml",
    "application/rss+xml",
    "application/xml",
];

fuzz_target!(|data: &[u8]| {
    let [c, fields @ ..] = data else {
        return;
    };
    let configured = CONFIGURED[usize::from(*c) % CONFIGURED.len()];
    let mut headers = HeaderMap::new();
    for field in fields.split(|&b| b == b'\n') {
        if let Ok(v) = HeaderValue::from_bytes(field) {
            headers.append(header::ACCEPT, v);
        }
    }
    let sure = surely_page(&headers, configured);
    let types: Vec<&str> = match configured {
        Some(t) => vec![t],
        None => SOURCE_TYPES.to_vec(),
    };
    for t in types {
        let chosen = choose_representation(&headers, t);
        assert_eq!(
            chosen,
            choose_representation(&headers, t),
            "the choice is a function of its input"
        );
        if sure {
            assert_eq!(
                chosen,
                Representation::Page,
                "surely_page said the page; {t} says otherwise"
            );
        }
    }
});
