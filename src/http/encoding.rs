//! `Accept-Encoding` negotiation (RFC 9110 §12.5.3): which of the content
//! codings a response can be sent in (its precompressed variants,
//! [`crate::cache::Variants`]) the client takes best, or the identity
//! body, or nothing (406).
//!
//! Pure: header values in, a [`Choice`] out. Setting `Content-Encoding`,
//! `Vary: Accept-Encoding` and the variant's ETag is the caller's job.

use crate::cache::Encoding;

/// The outcome of [`negotiate`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Choice {
    /// Send the body as it is (no `Content-Encoding`).
    Identity,
    /// Send the body in this encoding.
    Encoded(Encoding),
    /// The client accepts neither the identity body nor any offered
    /// encoding: the caller answers 406 (or, as RFC 9110 allows, ignores
    /// the header and sends the identity body).
    NotAcceptable,
}

/// A q-value in thousandths (0..=1000).
type Weight = u16;

/// What the header said about the codings Axle knows.
#[derive(Default)]
struct Accepted {
    br: Option<Weight>,
    gzip: Option<Weight>,
    identity: Option<Weight>,
    star: Option<Weight>,
}

impl Accepted {
    /// Records `weight` for `slot`, keeping the highest when a coding is
    /// listed twice.
    fn note(slot: &mut Option<Weight>, weight: Weight) {
        *slot = Some(slot.map_or(weight, |w| w.max(weight)));
    }
}

/// Chooses how to send a response, from all the request's
/// `Accept-Encoding` values (`values`: one per header line, in order;
/// none when the header is absent), the encodings the response can be sent
/// in (`offered`, empty when its body is not worth compressing), and
/// whether the identity body can be sent at all (`can_identity`: always
/// true in Axle, which keeps every body; false only in tests).
///
/// The rules (RFC 9110 §12.5.3):
/// - No header at all: any coding is acceptable; the identity body is sent
///   (when `can_identity` is false, the best offered encoding).
/// - A header with no elements (an empty value): identity only.
/// - Codings are case-insensitive; `x-gzip` is `gzip`; unknown codings
///   (`deflate`, `compress`, `zstd`) are ignored, and so are parameters
///   other than `q`.
/// - `q` is 0 to 1 with at most three decimals; an element with a
///   malformed `q` (`q=2`, `q=abc`, `q=0.0001`) is ignored. A coding
///   listed twice keeps its highest `q`.
/// - `*` gives its `q` to every coding not listed explicitly, identity
///   included.
/// - The identity body is acceptable unless excluded by `identity;q=0`, or
///   by `*;q=0` with no `identity` entry. When not listed at all (neither
///   explicitly nor by `*`), it is acceptable but preferred last: any
///   listed encoding with `q` > 0 wins over it.
/// - The highest `q` among the offered encodings and identity wins; ties
///   prefer `br`, then `gzip`, then identity (the smallest body). A `q` of
///   0 is never chosen.
/// - Nothing acceptable: [`Choice::NotAcceptable`].
pub fn negotiate<'a>(
    values: impl IntoIterator<Item = &'a str>,
    offered: &[Encoding],
    can_identity: bool,
) -> Choice {
    let mut present = false;
    let mut accepted = Accepted::default();
    for value in values {
        present = true;
        for element in value.split(',') {
            parse_element(element, &mut accepted);
        }
    }
    if !present {
        // Absent header: anything goes; identity needs no work.
        return if can_identity {
            Choice::Identity
        } else {
            best_offered(offered, |_| Some(1000)).map_or(Choice::NotAcceptable, |(c, _)| c)
        };
    }
    // An empty value (or only malformed or unknown elements) lists no
    // coding: then only identity is acceptable, by default, just as RFC
    // 9110 has it for the empty value.
    let weight_of = |enc: Encoding| {
        let listed = match enc {
            Encoding::Br => accepted.br,
            Encoding::Gzip => accepted.gzip,
        };
        listed.or(accepted.star).filter(|&q| q > 0)
    };
    let encoded = best_offered(offered, weight_of);
    // Identity's weight: explicit, else `*`'s, else acceptable but last
    // (below any q > 0, which is at least 1 thousandth).
    let identity = match accepted.identity.or(accepted.star) {
        Some(0) => None,
        Some(q) => Some(q),
        None => Some(0),
    }
    .filter(|_| can_identity);
    match (encoded, identity) {
        // A tie goes to the encoding (the smaller body).
        (Some((choice, q)), Some(iq)) if q >= iq => choice,
        (Some((choice, _)), None) => choice,
        (_, Some(_)) => Choice::Identity,
        (None, None) => Choice::NotAcceptable,
    }
}

/// The offered encoding of highest weight (ties: [`Encoding::ALL`]'s
/// order, br first), with that weight, or `None` when none is acceptable.
fn best_offered(
    offered: &[Encoding],
    weight_of: impl Fn(Encoding) -> Option<Weight>,
) -> Option<(Choice, Weight)> {
    let mut best: Option<(Choice, Weight)> = None;
    // In preference order, so a later encoding must be strictly better.
    for enc in Encoding::ALL.into_iter().filter(|e| offered.contains(e)) {
        if let Some(q) = weight_of(enc) {
            if best.is_none_or(|(_, b)| q > b) {
                best = Some((Choice::Encoded(enc), q));
            }
        }
    }
    best
}

/// Parses one list element (`coding *( OWS ";" OWS param )`) into
/// `accepted`; empty, malformed and unknown elements leave it as it was.
fn parse_element(element: &str, accepted: &mut Accepted) {
    let mut parts = element.split(';');
    let coding = parts.next().unwrap_or_default().trim();
    if coding.is_empty() {
        return;
    }
    let mut weight: Weight = 1000;
    for param in parts {
        let Some((name, value)) = param.split_once('=') else {
            // A parameter without a value: not a q, and malformed; the
            // element is kept only if it is not a bare "q".
            if param.trim().eq_ignore_ascii_case("q") {
                return;
            }
            continue;
        };
        if name.trim().eq_ignore_ascii_case("q") {
            match parse_q(value.trim()) {
                Some(q) => weight = q,
                None => return,
            }
        }
    }
    let is = |name: &str| coding.eq_ignore_ascii_case(name);
    let slot = if is("br") {
        &mut accepted.br
    } else if is("gzip") || is("x-gzip") {
        &mut accepted.gzip
    } else if is("identity") {
        &mut accepted.identity
    } else if coding == "*" {
        &mut accepted.star
    } else {
        return;
    };
    Accepted::note(slot, weight);
}

/// A qvalue (`"0" [ "." 0*3DIGIT ] / "1" [ "." 0*3("0") ]`) in
/// thousandths, or `None` when malformed.
fn parse_q(text: &str) -> Option<Weight> {
    let (int, frac) = match text.split_once('.') {
        Some((int, frac)) => (int, frac),
        None => (text, ""),
    };
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut thousandths: Weight = 0;
    for (i, b) in frac.bytes().enumerate() {
        thousandths += Weight::from(b - b'0') * [100, 10, 1][i];
    }
    match int {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Choice::{Encoded, Identity, NotAcceptable};
    use Encoding::{Br, Gzip};

    const BOTH: &[Encoding] = &[Gzip, Br];
    const NONE: &[Encoding] = &[];

    /// (header lines, offered, can_identity, expected)
    type Row = (&'static [&'static str], &'static [Encoding], bool, Choice);

    #[test]
    fn the_negotiation_matrix() {
        let rows: &[Row] = &[
            // Absent header.
            (&[], BOTH, true, Identity),
            (&[], NONE, true, Identity),
            (&[], BOTH, false, Encoded(Br)),
            (&[], &[Gzip], false, Encoded(Gzip)),
            (&[], NONE, false, NotAcceptable),
            // Empty value: identity only.
            (&[""], BOTH, true, Identity),
            (&["  "], BOTH, true, Identity),
            (&[" , ,"], BOTH, true, Identity),
            (&[""], BOTH, false, NotAcceptable),
            // One coding.
            (&["gzip"], BOTH, true, Encoded(Gzip)),
            (&["br"], BOTH, true, Encoded(Br)),
            (&["gzip"], &[Br], true, Identity),
            (&["br"], &[Gzip], true, Identity),
            (&["gzip"], NONE, true, Identity),
            // Both: br preferred on a tie, whatever the order.
            (&["gzip, br"], BOTH, true, Encoded(Br)),
            (&["br, gzip"], BOTH, true, Encoded(Br)),
            (&["gzip, br"], &[Br, Gzip], true, Encoded(Br)),
            (&["gzip;q=0.8, br;q=0.8"], BOTH, true, Encoded(Br)),
            (&["gzip, deflate, br, zstd"], BOTH, true, Encoded(Br)),
            (&["gzip, br"], &[Gzip], true, Encoded(Gzip)),
            // q decides.
            (&["br;q=0.5, gzip"], BOTH, true, Encoded(Gzip)),
            (&["br;q=0.5, gzip;q=0.499"], BOTH, true, Encoded(Br)),
            (&["br;q=0.001"], BOTH, true, Encoded(Br)),
            // q=0 is never chosen.
            (&["gzip;q=0"], BOTH, true, Identity),
            (&["gzip;q=0, br;q=0"], BOTH, true, Identity),
            (&["gzip;q=0.000"], BOTH, true, Identity),
            (&["br;q=0."], BOTH, true, Identity),
            // Identity excluded.
            (&["identity;q=0"], BOTH, true, NotAcceptable),
            (&["identity;q=0"], NONE, true, NotAcceptable),
            (&["gzip, identity;q=0"], BOTH, true, Encoded(Gzip)),
            (&["gzip, identity;q=0"], &[Br], true, NotAcceptable),
            (&["gzip, identity;q=0"], NONE, true, NotAcceptable),
            // Identity against encodings.
            (&["gzip, identity"], BOTH, true, Encoded(Gzip)),
            (&["identity, gzip;q=0.5"], BOTH, true, Identity),
            (&["br;q=0.5, identity;q=0.5"], BOTH, true, Encoded(Br)),
            (&["gzip;q=0.5"], BOTH, true, Encoded(Gzip)),
            (&["identity"], BOTH, true, Identity),
            // `*`.
            (&["*"], BOTH, true, Encoded(Br)),
            (&["*"], &[Gzip], true, Encoded(Gzip)),
            (&["*"], NONE, true, Identity),
            (&["*;q=0"], BOTH, true, NotAcceptable),
            (&["*;q=0"], NONE, true, NotAcceptable),
            (&["*;q=0, identity"], BOTH, true, Identity),
            (&["*;q=0, identity;q=0.1"], NONE, true, Identity),
            (&["*;q=0, gzip"], BOTH, true, Encoded(Gzip)),
            (&["*, gzip;q=0"], BOTH, true, Encoded(Br)),
            (&["*, gzip;q=0"], &[Gzip], true, Identity),
            (&["*;q=0.5, gzip"], BOTH, true, Encoded(Gzip)),
            (&["*;q=0.5, identity"], BOTH, true, Identity),
            (&["*;q=0.5"], &[Gzip], true, Encoded(Gzip)),
            (&["*, identity;q=0"], NONE, true, NotAcceptable),
            // x-gzip and case.
            (&["x-gzip"], BOTH, true, Encoded(Gzip)),
            (&["X-GZIP"], BOTH, true, Encoded(Gzip)),
            (&["GZIP"], BOTH, true, Encoded(Gzip)),
            (&["GZIP, BR"], BOTH, true, Encoded(Br)),
            (&["Gzip;Q=0.5, Br;q=0.4"], BOTH, true, Encoded(Gzip)),
            (&["IDENTITY;Q=0"], NONE, true, NotAcceptable),
            // Whitespace.
            (&[" gzip ; q=0.5 ,br;q=0.6 "], BOTH, true, Encoded(Br)),
            (&["\tgzip;\tq=0.9,\tbr ;q=0.3"], BOTH, true, Encoded(Gzip)),
            (&["br;q = 0.4,gzip;q= 0.5"], BOTH, true, Encoded(Gzip)),
            (&[",,gzip,,"], BOTH, true, Encoded(Gzip)),
            // Malformed q: the element is ignored.
            (&["br;q=2, gzip"], BOTH, true, Encoded(Gzip)),
            (&["br;q=2"], BOTH, true, Identity),
            (&["br;q=abc, gzip;q=0.5"], BOTH, true, Encoded(Gzip)),
            (&["br;q=0.0001, gzip;q=0.001"], BOTH, true, Encoded(Gzip)),
            (&["br;q=1.0001"], BOTH, true, Identity),
            (&["br;q=1.001"], BOTH, true, Identity),
            (&["br;q=1.000"], BOTH, true, Encoded(Br)),
            (&["br;q=1."], BOTH, true, Encoded(Br)),
            (&["br;q=.5"], BOTH, true, Identity),
            (&["br;q=-0"], BOTH, true, Identity),
            (&["br;q=+1"], BOTH, true, Identity),
            (&["br;q="], BOTH, true, Identity),
            (&["br;q"], BOTH, true, Identity),
            (&["identity;q=abc"], NONE, true, Identity),
            (&["*;q=2"], BOTH, true, Identity),
            // Other parameters are ignored.
            (&["gzip;level=9"], BOTH, true, Encoded(Gzip)),
            (&["gzip;foo"], BOTH, true, Encoded(Gzip)),
            // Listed twice: the highest q.
            (&["gzip;q=0, gzip"], BOTH, true, Encoded(Gzip)),
            (&["gzip, gzip;q=0"], BOTH, true, Encoded(Gzip)),
            // Several header lines combine.
            (&["gzip;q=0.5", "br;q=0.9"], BOTH, true, Encoded(Br)),
            (&["br;q=0.5", "gzip"], BOTH, true, Encoded(Gzip)),
            (&["", "gzip"], BOTH, true, Encoded(Gzip)),
            (&["", ""], BOTH, true, Identity),
            (&["gzip", "identity;q=0"], NONE, true, NotAcceptable),
            (&["*;q=0", "identity"], NONE, true, Identity),
            // Codings we do not offer.
            (&["deflate"], BOTH, true, Identity),
            (&["compress, identity;q=0.1"], BOTH, true, Identity),
            (&["compress, identity;q=0"], BOTH, true, NotAcceptable),
            (&["zstd, br;q=0.1"], BOTH, true, Encoded(Br)),
            (&["gzp, bro"], BOTH, true, Identity),
            // No identity possible.
            (&["gzip;q=0"], &[Gzip], false, NotAcceptable),
            (&["identity"], BOTH, false, NotAcceptable),
            (&["identity, gzip;q=0.1"], BOTH, false, Encoded(Gzip)),
        ];
        for (i, &(values, offered, can_identity, expected)) in rows.iter().enumerate() {
            let got = negotiate(values.iter().copied(), offered, can_identity);
            assert_eq!(
                got, expected,
                "row {i}: {values:?}, offered {offered:?}, identity {can_identity}"
            );
        }
    }

    #[test]
    fn q_values_parse_to_thousandths() {
        for (text, q) in [
            ("0", Some(0)),
            ("0.", Some(0)),
            ("0.5", Some(500)),
            ("0.05", Some(50)),
            ("0.005", Some(5)),
            ("0.123", Some(123)),
            ("1", Some(1000)),
            ("1.0", Some(1000)),
            ("1.000", Some(1000)),
            ("1.001", None),
            ("0.0001", None),
            ("2", None),
            ("01", None),
            ("abc", None),
            ("", None),
            (".5", None),
            ("0.5a", None),
            ("0,5", None),
            ("٠.5", None),
        ] {
            assert_eq!(parse_q(text), q, "{text:?}");
        }
    }

    #[test]
    fn any_header_text_negotiates_without_panicking() {
        // Odd bytes, lone separators, non-ASCII: never a panic.
        for v in [
            ";",
            "=",
            ";;q=;",
            "q=1",
            "é;q=0.5",
            "*;q=0.5;q=abc",
            "br;;q=1",
        ] {
            let _ = negotiate([v], BOTH, true);
        }
        assert_eq!(negotiate(["br;;q=1"], BOTH, true), Encoded(Br));
        assert_eq!(negotiate(["*;q=0.5;q=abc"], BOTH, true), Identity);
    }
}
