//! Feeds arbitrary request heads to the access log's line for a request
//! refused before it was parsed (`axle::http::wire::access_log_raw_line`:
//! the request line, `Referer` and `User-Agent` read from the raw bytes,
//! each escaped as nginx escapes them, long ones cut), in both formats.
//! Issue #36 row 13: the bytes are the client's, and a log line must
//! never let them forge a line or a field.
//!
//! Must never panic. A combined line is one line of printable ASCII with
//! exactly its 8 field quotes (a client's `"` is `\x22`); a JSON line is
//! one line of ASCII that parses as a JSON object whose `request` is a
//! string.
//!
//! Input: byte 0 picks the status; the rest is the head as read.
#![no_main]

use axle::http::wire::{AccessLogFormat, access_log_raw_line};
use libfuzzer_sys::fuzz_target;

const STATUSES: [u16; 4] = [400, 413, 414, 431];

fuzz_target!(|data: &[u8]| {
    let [s, head @ ..] = data else {
        return;
    };
    let status = STATUSES[usize::from(*s) % STATUSES.len()];

    let line = access_log_raw_line(AccessLogFormat::Combined, head, status);
    let body = line.strip_suffix('\n').expect("a line ends with a newline");
    assert!(
        body.bytes().all(|b| (0x20..0x7f).contains(&b)),
        "not one line of printable ASCII: {line:?}"
    );
    assert_eq!(
        body.matches('"').count(),
        8,
        "a client's bytes added or removed a field: {line:?}"
    );
    assert!(body.contains(&format!("\" {status} ")), "{line:?}");

    let line = access_log_raw_line(AccessLogFormat::Json, head, status);
    let body = line.strip_suffix('\n').expect("a line ends with a newline");
    assert!(
        body.is_ascii() && !body.contains('\n'),
        "not one ASCII line: {line:?}"
    );
    let value: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    assert!(value.is_object(), "{line:?}");
    assert!(value["request"].is_string(), "{line:?}");
});
