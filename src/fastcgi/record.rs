//! The FastCGI 1.0 record layer, pure (no I/O): encoding a responder
//! request (BEGIN_REQUEST, PARAMS name-value pairs, STDIN) and decoding
//! the application's answer (STDOUT, STDERR, END_REQUEST) from a byte
//! stream that may arrive in any pieces. Every length is checked against
//! what is there and against the caller's output limit before anything
//! is kept: a hostile or broken application can make the decoder fail,
//! never panic or allocate past the limit (fuzzed: `fastcgi_response`).

/// The protocol version every record carries.
pub const VERSION: u8 = 1;
/// A record's header length.
pub const HEADER_LEN: usize = 8;
/// The largest content of one record.
pub const MAX_CONTENT: usize = 0xFFFF;

/// Record types (FastCGI 1.0 §8).
pub mod kind {
    /// Starts a request (role, flags).
    pub const BEGIN_REQUEST: u8 = 1;
    /// The web server aborts a request.
    pub const ABORT_REQUEST: u8 = 2;
    /// The application ends a request (app status, protocol status).
    pub const END_REQUEST: u8 = 3;
    /// Name-value pairs: the request's environment.
    pub const PARAMS: u8 = 4;
    /// The request body.
    pub const STDIN: u8 = 5;
    /// The application's answer.
    pub const STDOUT: u8 = 6;
    /// The application's error stream.
    pub const STDERR: u8 = 7;
    /// Filter role data (unused here).
    pub const DATA: u8 = 8;
    /// Management query.
    pub const GET_VALUES: u8 = 9;
    /// Management answer.
    pub const GET_VALUES_RESULT: u8 = 10;
    /// The application did not know a management record's type.
    pub const UNKNOWN_TYPE: u8 = 11;
}

/// The responder role (the only one Axle asks for).
pub const RESPONDER: u16 = 1;
/// BEGIN_REQUEST flag: keep the connection open after the request.
pub const KEEP_CONN: u8 = 1;

/// Why a record stream cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// A header with a version other than 1.
    #[error("a record of protocol version {0} (only 1 is spoken)")]
    Version(u8),
    /// A record type an application never sends to a web server.
    #[error("an unexpected record of type {0}")]
    UnexpectedType(u8),
    /// A record for another request than the one asked.
    #[error("a record for request {got} while request {want} was asked")]
    RequestId {
        /// The id asked.
        want: u16,
        /// The id received.
        got: u16,
    },
    /// An END_REQUEST record whose content is shorter than 8 bytes.
    #[error("an END_REQUEST record of {0} bytes (8 expected)")]
    ShortEnd(usize),
    /// More STDOUT than the limit.
    #[error("more than {0} bytes of output")]
    TooLarge(u64),
    /// The stream ended in the middle of a record, or before END_REQUEST.
    #[error("the answer ended before its END_REQUEST record ({0} bytes of a record left over)")]
    Truncated(usize),
    /// A name-value pair whose lengths run past its record.
    #[error("a name-value pair runs past its record")]
    BadPair,
}

/// Appends records of type `kind` for request `id` carrying `content`,
/// split into records of at most [`MAX_CONTENT`] bytes, each padded to a
/// multiple of 8. An empty `content` gives one empty record (the end of
/// a stream).
pub fn encode(out: &mut Vec<u8>, kind: u8, id: u16, content: &[u8]) {
    let mut chunks = content.chunks(MAX_CONTENT).peekable();
    if chunks.peek().is_none() {
        push_record(out, kind, id, &[]);
    }
    for chunk in chunks {
        push_record(out, kind, id, chunk);
    }
}

fn push_record(out: &mut Vec<u8>, kind: u8, id: u16, content: &[u8]) {
    let len = content.len();
    let padding = (8 - len % 8) % 8;
    let [id_hi, id_lo] = id.to_be_bytes();
    let [len_hi, len_lo] = u16::try_from(len).unwrap_or(u16::MAX).to_be_bytes();
    out.extend_from_slice(&[
        VERSION,
        kind,
        id_hi,
        id_lo,
        len_hi,
        len_lo,
        padding as u8,
        0,
    ]);
    out.extend_from_slice(content);
    out.extend(std::iter::repeat_n(0, padding));
}

/// A name-value pair's length: one byte below 128, else four with the
/// high bit set.
fn push_length(out: &mut Vec<u8>, len: usize) {
    if len < 128 {
        out.push(len as u8);
    } else {
        let len = u32::try_from(len).unwrap_or(u32::MAX >> 1) | 0x8000_0000;
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// The PARAMS stream's content for `pairs`.
pub fn encode_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in pairs {
        push_length(&mut out, name.len());
        push_length(&mut out, value.len());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(value.as_bytes());
    }
    out
}

/// A name-value pair as read back: name, value.
pub type Pair = (Vec<u8>, Vec<u8>);

/// Reads a PARAMS stream's content back into pairs (for tests and the
/// fuzz target: what an application would read).
pub fn decode_pairs(mut bytes: &[u8]) -> Result<Vec<Pair>, RecordError> {
    fn length(bytes: &mut &[u8]) -> Result<usize, RecordError> {
        let first = *bytes.first().ok_or(RecordError::BadPair)?;
        if first < 128 {
            *bytes = &bytes[1..];
            return Ok(first as usize);
        }
        let four: [u8; 4] = bytes
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .ok_or(RecordError::BadPair)?;
        *bytes = &bytes[4..];
        Ok((u32::from_be_bytes(four) & 0x7FFF_FFFF) as usize)
    }
    let mut pairs = Vec::new();
    while !bytes.is_empty() {
        let name_len = length(&mut bytes)?;
        let value_len = length(&mut bytes)?;
        let total = name_len
            .checked_add(value_len)
            .ok_or(RecordError::BadPair)?;
        if total > bytes.len() {
            return Err(RecordError::BadPair);
        }
        let (name, rest) = bytes.split_at(name_len);
        let (value, rest) = rest.split_at(value_len);
        pairs.push((name.to_vec(), value.to_vec()));
        bytes = rest;
    }
    Ok(pairs)
}

/// A whole responder request: BEGIN_REQUEST, the PARAMS stream and its
/// end, the STDIN stream and its end.
pub fn encode_request(id: u16, params: &[u8], stdin: &[u8], keep_conn: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(params.len() + stdin.len() + 64);
    let [role_hi, role_lo] = RESPONDER.to_be_bytes();
    let flags = if keep_conn { KEEP_CONN } else { 0 };
    push_record(
        &mut out,
        kind::BEGIN_REQUEST,
        id,
        &[role_hi, role_lo, flags, 0, 0, 0, 0, 0],
    );
    if !params.is_empty() {
        encode(&mut out, kind::PARAMS, id, params);
    }
    push_record(&mut out, kind::PARAMS, id, &[]);
    if !stdin.is_empty() {
        encode(&mut out, kind::STDIN, id, stdin);
    }
    push_record(&mut out, kind::STDIN, id, &[]);
    out
}

/// How a request ended (its END_REQUEST record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct End {
    /// The application's status (its exit code, for a CGI-like app).
    pub app_status: u32,
    /// 0: complete; 1: cannot multiplex; 2: overloaded; 3: unknown role.
    pub protocol_status: u8,
}

/// Decodes an application's answer to one request as its bytes arrive:
/// STDOUT kept up to a limit, STDERR up to its own, the END_REQUEST
/// noted. Management records (GET_VALUES_RESULT, UNKNOWN_TYPE) are
/// skipped.
#[derive(Debug)]
pub struct ResponseDecoder {
    id: u16,
    max_stdout: u64,
    max_stderr: usize,
    pending: Vec<u8>,
    /// The STDOUT stream so far.
    pub stdout: Vec<u8>,
    /// The STDERR stream so far (at most the limit; the rest dropped).
    pub stderr: Vec<u8>,
    end: Option<End>,
}

impl ResponseDecoder {
    /// A decoder for request `id`, keeping at most `max_stdout` bytes of
    /// STDOUT (more is [`RecordError::TooLarge`]) and `max_stderr` of
    /// STDERR.
    pub fn new(id: u16, max_stdout: u64, max_stderr: usize) -> ResponseDecoder {
        ResponseDecoder {
            id,
            max_stdout,
            max_stderr,
            pending: Vec::new(),
            stdout: Vec::new(),
            stderr: Vec::new(),
            end: None,
        }
    }

    /// The END_REQUEST, once it has arrived.
    pub fn end(&self) -> Option<End> {
        self.end
    }

    /// Takes the next bytes of the stream; `Ok(Some(end))` once the
    /// request has ended (bytes after its END_REQUEST are an error: one
    /// request is answered at a time on a connection).
    pub fn push(&mut self, bytes: &[u8]) -> Result<Option<End>, RecordError> {
        if let Some(end) = self.end {
            if bytes.is_empty() {
                return Ok(Some(end));
            }
            return Err(RecordError::UnexpectedType(0));
        }
        self.pending.extend_from_slice(bytes);
        let mut at = 0;
        let result = loop {
            let rest = &self.pending[at..];
            if rest.len() < HEADER_LEN {
                break Ok(None);
            }
            let version = rest[0];
            if version != VERSION {
                break Err(RecordError::Version(version));
            }
            let kind = rest[1];
            let id = u16::from_be_bytes([rest[2], rest[3]]);
            let len = u16::from_be_bytes([rest[4], rest[5]]) as usize;
            let padding = rest[6] as usize;
            let total = HEADER_LEN + len + padding;
            if rest.len() < total {
                break Ok(None);
            }
            let content = &rest[HEADER_LEN..HEADER_LEN + len];
            at += total;
            match kind {
                kind::GET_VALUES_RESULT | kind::UNKNOWN_TYPE if id == 0 => continue,
                kind::STDOUT | kind::STDERR | kind::END_REQUEST if id != self.id => {
                    break Err(RecordError::RequestId {
                        want: self.id,
                        got: id,
                    });
                }
                kind::STDOUT => {
                    if (self.stdout.len() + content.len()) as u64 > self.max_stdout {
                        break Err(RecordError::TooLarge(self.max_stdout));
                    }
                    self.stdout.extend_from_slice(content);
                }
                kind::STDERR => {
                    let room = self.max_stderr.saturating_sub(self.stderr.len());
                    self.stderr
                        .extend_from_slice(&content[..content.len().min(room)]);
                }
                kind::END_REQUEST => {
                    if content.len() < 8 {
                        break Err(RecordError::ShortEnd(content.len()));
                    }
                    let end = End {
                        app_status: u32::from_be_bytes([
                            content[0], content[1], content[2], content[3],
                        ]),
                        protocol_status: content[4],
                    };
                    self.end = Some(end);
                    if at != self.pending.len() {
                        break Err(RecordError::UnexpectedType(0));
                    }
                    break Ok(Some(end));
                }
                other => break Err(RecordError::UnexpectedType(other)),
            }
        };
        self.pending.drain(..at);
        result
    }

    /// The stream has ended (EOF): an error unless END_REQUEST came.
    pub fn finish(&self) -> Result<End, RecordError> {
        self.end.ok_or(RecordError::Truncated(self.pending.len()))
    }
}

/// Decodes a whole answer at once (the fuzz target's entry): its STDOUT,
/// STDERR and end.
pub fn decode_response(
    id: u16,
    bytes: &[u8],
    max_stdout: u64,
) -> Result<(Vec<u8>, Vec<u8>, End), RecordError> {
    let mut decoder = ResponseDecoder::new(id, max_stdout, 64 * 1024);
    decoder.push(bytes)?;
    let end = decoder.finish()?;
    Ok((decoder.stdout, decoder.stderr, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn records(bytes: &[u8]) -> Vec<(u8, u16, Vec<u8>)> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let h = &bytes[at..at + 8];
            assert_eq!(h[0], VERSION);
            let len = u16::from_be_bytes([h[4], h[5]]) as usize;
            let pad = h[6] as usize;
            assert_eq!((len + pad) % 8, 0, "records are padded to 8");
            out.push((
                h[1],
                u16::from_be_bytes([h[2], h[3]]),
                bytes[at + 8..at + 8 + len].to_vec(),
            ));
            at += 8 + len + pad;
        }
        out
    }

    #[test]
    fn a_request_is_begin_params_and_stdin_each_ended() {
        let params = encode_pairs([("SCRIPT_FILENAME", "/srv/a.php"), ("Q", "")]);
        let bytes = encode_request(7, &params, b"body", true);
        let recs = records(&bytes);
        let kinds: Vec<u8> = recs.iter().map(|r| r.0).collect();
        assert_eq!(
            kinds,
            [
                kind::BEGIN_REQUEST,
                kind::PARAMS,
                kind::PARAMS,
                kind::STDIN,
                kind::STDIN
            ]
        );
        assert!(recs.iter().all(|r| r.1 == 7));
        assert_eq!(recs[0].2, [0, 1, KEEP_CONN, 0, 0, 0, 0, 0]);
        assert!(recs[2].2.is_empty() && recs[4].2.is_empty());
        assert_eq!(recs[3].2, b"body");
    }

    #[test]
    fn long_names_and_values_take_four_byte_lengths() {
        let long = "v".repeat(300);
        let bytes = encode_pairs([("N", long.as_str()), ("", "")]);
        assert_eq!(&bytes[..5], &[1, 0x80, 0, 1, 44]);
        let pairs = decode_pairs(&bytes).unwrap();
        assert_eq!(pairs[0], (b"N".to_vec(), long.into_bytes()));
        assert_eq!(pairs[1], (Vec::new(), Vec::new()));
        assert_eq!(decode_pairs(&[5, 0, b'a']), Err(RecordError::BadPair));
        assert_eq!(decode_pairs(&[0x80, 0]), Err(RecordError::BadPair));
    }

    fn answer(id: u16, stdout: &[u8], stderr: &[u8], status: u32) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&mut out, kind::STDERR, id, stderr);
        encode(&mut out, kind::STDOUT, id, stdout);
        push_record(&mut out, kind::STDOUT, id, &[]);
        let s = status.to_be_bytes();
        push_record(
            &mut out,
            kind::END_REQUEST,
            id,
            &[s[0], s[1], s[2], s[3], 0, 0, 0, 0],
        );
        out
    }

    #[test]
    fn an_answer_decodes_in_any_pieces_and_is_bounded() {
        let body = vec![b'x'; 70_000];
        let bytes = answer(1, &body, b"warn", 3);
        let mut d = ResponseDecoder::new(1, 1 << 20, 2);
        for piece in bytes.chunks(7) {
            let _ = d.push(piece).unwrap();
        }
        assert_eq!(
            d.finish().unwrap(),
            End {
                app_status: 3,
                protocol_status: 0
            }
        );
        assert_eq!(d.stdout, body);
        assert_eq!(d.stderr, b"wa", "stderr cut at its limit");
        assert_eq!(
            decode_response(1, &bytes, 69_999),
            Err(RecordError::TooLarge(69_999))
        );
        assert_eq!(
            decode_response(2, &bytes, 1 << 20),
            Err(RecordError::RequestId { want: 2, got: 1 })
        );
        assert!(matches!(
            decode_response(1, &bytes[..bytes.len() - 3], 1 << 20),
            Err(RecordError::Truncated(13))
        ));
        let mut bad = bytes.clone();
        bad[0] = 2;
        assert_eq!(
            decode_response(1, &bad, 1 << 20),
            Err(RecordError::Version(2))
        );
    }

    proptest! {
        #[test]
        fn pairs_round_trip(pairs in proptest::collection::vec(("[a-zA-Z_]{0,200}", ".{0,300}"), 0..8)) {
            let refs: Vec<(&str, &str)> = pairs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            let decoded = decode_pairs(&encode_pairs(refs)).unwrap();
            let want: Vec<(Vec<u8>, Vec<u8>)> = pairs.iter().map(|(a, b)| (a.clone().into_bytes(), b.clone().into_bytes())).collect();
            prop_assert_eq!(decoded, want);
        }

        #[test]
        fn stdout_round_trips(body in proptest::collection::vec(any::<u8>(), 0..100_000), id in 1u16..) {
            let (out, _, end) = decode_response(id, &answer(id, &body, b"", 0), u64::MAX).unwrap();
            prop_assert_eq!(out, body);
            prop_assert_eq!(end.app_status, 0);
        }

        #[test]
        fn any_bytes_decode_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_response(1, &bytes, 64);
            let _ = decode_pairs(&bytes);
        }
    }
}
