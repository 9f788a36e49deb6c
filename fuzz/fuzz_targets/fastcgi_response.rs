//! Feeds arbitrary bytes to the FastCGI record decoder as an application's
//! answer (`axle::fastcgi::record::ResponseDecoder`, in pieces cut where
//! byte 0 says, and whole through `decode_response`), to the CGI header
//! parser (`axle::fastcgi::response::parse`) over the STDOUT it gives, and
//! to the PARAMS decoder (`decode_pairs`). Issue #38: a FastCGI server is
//! not trusted to send well-formed records.
//!
//! Must never panic. Decoding in pieces gives what decoding whole gives;
//! STDOUT never passes the limit (64 KiB here); STDERR never passes its
//! own (1 KiB); a parsed header block's body start is within STDOUT and
//! its status within 100..=599.
#![no_main]

use axle::fastcgi::record::{ResponseDecoder, decode_pairs, decode_response};
use axle::fastcgi::response::parse;
use libfuzzer_sys::fuzz_target;

const MAX_STDOUT: u64 = 64 * 1024;
const MAX_STDERR: usize = 1024;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let whole = decode_response(1, rest, MAX_STDOUT);
    let mut decoder = ResponseDecoder::new(1, MAX_STDOUT, MAX_STDERR);
    let step = usize::from(cut).max(1);
    let mut pieces = Ok(None);
    for chunk in rest.chunks(step) {
        pieces = decoder.push(chunk);
        if pieces.is_err() || matches!(pieces, Ok(Some(_))) {
            break;
        }
    }
    assert!(decoder.stdout.len() as u64 <= MAX_STDOUT);
    assert!(decoder.stderr.len() <= MAX_STDERR);
    match (&whole, &pieces) {
        (Ok((stdout, _, end)), Ok(Some(e))) => {
            assert_eq!(end, e);
            assert_eq!(stdout, &decoder.stdout);
        }
        (Ok(_), other) => panic!("whole decoded, pieces gave {other:?}"),
        (Err(_), _) => {}
    }
    if let Ok((stdout, _, _)) = &whole {
        if let Ok(head) = parse(stdout) {
            assert!(head.body_start <= stdout.len());
            assert!((100..600).contains(&head.status));
        }
    }
    let _ = decode_pairs(rest);
});
