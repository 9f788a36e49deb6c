//! Feeds arbitrary bytes to Axle's own HTTP/1.1 head parser and response
//! framing (the path every `axle serve` request takes first), with a fast
//! path that answers some requests and passes others, so both the wire
//! answer and the `http::Request` build run. Must never panic; an answered
//! request must frame as one well-formed head.
#![no_main]

use axle::http::wire::{Fast, Head, Headers, Wire, fast_answer};
use axum::http::header;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

/// Answers paths ending in `.xml` (304 when `If-None-Match` is `"x"`),
/// reports a miss for `/miss…`, and passes everything else.
fn fast(head: &Head<'_>) -> Fast {
    // Touch every lookup the real fast path uses.
    let inm = head.first(&header::IF_NONE_MATCH).map(str::to_owned);
    let accepts = head.each(&header::ACCEPT).count();
    if head.path.starts_with("/miss") {
        return Fast::Missed;
    }
    if !head.path.ends_with(".xml") {
        return Fast::Pass;
    }
    let mut body = head.path.as_bytes().to_vec();
    body.extend_from_slice(head.query.as_bytes());
    body.extend(std::iter::repeat_n(b'.', accepts));
    Fast::Answer(Wire {
        not_modified: inm.as_deref() == Some("\"x\""),
        fields: Bytes::from_static(b"content-type: text/html\r\n"),
        more: b"x-axle-cache: hit\r\n",
        body: Bytes::from(body),
    })
}

fuzz_target!(|data: &[u8]| {
    let mut head = Vec::new();
    let Some(body) = fast_answer(Bytes::copy_from_slice(data), &fast, &mut head) else {
        return;
    };
    assert!(
        head.starts_with(b"HTTP/1.1 200 OK\r\n")
            || head.starts_with(b"HTTP/1.1 304 Not Modified\r\n"),
        "bad status line: {:?}",
        String::from_utf8_lossy(&head)
    );
    assert!(head.ends_with(b"\r\n\r\n"), "head not terminated");
    // Exactly one blank line: the head's end.
    assert_eq!(
        head.windows(4).filter(|w| w == b"\r\n\r\n").count(),
        1,
        "a blank line inside the head"
    );
    if head.starts_with(b"HTTP/1.1 304") {
        assert!(body.is_empty(), "304 with a body");
    }
    // A HEAD request gets no body bytes.
    if data.starts_with(b"HEAD ") {
        assert!(body.is_empty(), "HEAD answered with a body");
    }
});
