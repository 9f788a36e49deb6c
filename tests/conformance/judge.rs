//! Judging an outcome: comparing the bytes a render gave with the expected
//! output by the case's rule (exact, no-id, filtered-id, `xml-ws`,
//! expect-error), and telling a failure from a documented skip (a design
//! difference, a refusal by Axle's security settings). Shared by the
//! in-process run (`case`) and the HTTP subset (`http`), which must judge
//! alike.

use super::{Case, Compare, Outcome, SKIP_DESIGN, SKIP_FORBIDDEN, Verdict, xmlcompare};

/// Cases whose output differs from xsltproc's by design, each with the
/// substitution that turns the expected output into Axle's designed output.
/// The case counts as a documented skip only if Axle's output then matches
/// exactly; otherwise it fails.
///
/// Axle gives a document the base URI of its URL path (`/general/bug-21-.xml`)
/// and never a filesystem path, so `unparsed-entity-uri()` returns
/// `/general/test.jpg`; xsltproc, run by libxslt's runtest on the relative
/// file name `bug-21-.xml`, returns `test.jpg` (and run on an absolute path
/// it returns the absolute filesystem path, which a server must not leak).
const DESIGN_DIFFERENCES: [(&str, &str, &str); 2] = [
    ("general/bug-21-", "test.jpg", "/general/test.jpg"),
    ("general/bug-52", "graphic.gif", "/general/graphic.gif"),
];

pub(super) fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    shorten(line.trim(), 240)
}

pub(super) fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max).collect();
    s.push('…');
    s
}

fn is_refusal(error: &str) -> bool {
    error.contains("denied") || error.contains("outside the document root")
}

/// Compares an outcome with the expected bytes by the case's rule.
pub fn judge(case: &Case, outcome: &Outcome, expected: &[u8]) -> Verdict {
    let verdict = judge_output(case, outcome, expected);
    if matches!(verdict, Verdict::Fail(_)) {
        if let Some((_, from, to)) = DESIGN_DIFFERENCES.iter().find(|(id, _, _)| *id == case.id) {
            let designed = String::from_utf8_lossy(expected).replace(from, to);
            if judge_output(case, outcome, designed.as_bytes()) == Verdict::Pass {
                return Verdict::Skip(
                    SKIP_DESIGN,
                    format!(
                        "unparsed-entity-uri() gives {to}, xsltproc on a relative file name {from}"
                    ),
                );
            }
        }
    }
    match (&verdict, outcome) {
        (Verdict::Fail(_), Err(error)) if is_refusal(error) => {
            // The first line, and the line saying what was refused.
            let refusal = error
                .lines()
                .find(|l| is_refusal(l))
                .map(|l| shorten(l.trim(), 160))
                .unwrap_or_default();
            let first = first_line(error);
            Verdict::Skip(
                SKIP_FORBIDDEN,
                if first.contains(&refusal) {
                    first
                } else {
                    format!("{first} / {refusal}")
                },
            )
        }
        _ => verdict,
    }
}

fn judge_output(case: &Case, outcome: &Outcome, expected: &[u8]) -> Verdict {
    if case.compare == Compare::ExpectError {
        return match outcome {
            Err(_) => Verdict::Pass,
            Ok(r) => Verdict::Fail(format!(
                "no error: the transform succeeded ({} bytes of output)",
                r.body.len()
            )),
        };
    }
    let actual: &[u8] = match outcome {
        Ok(r) => &r.body,
        Err(_) if case.runtest => b"",
        Err(e) => return Verdict::Fail(format!("render error: {}", first_line(e))),
    };
    match compare_bytes(case.compare, expected, actual) {
        Ok(()) => Verdict::Pass,
        Err(diff) => match outcome {
            Err(e) => Verdict::Fail(format!("render error (empty output): {}", first_line(e))),
            Ok(_) => Verdict::Fail(diff),
        },
    }
}

/// Compares by a rule other than `expect-error`.
pub fn compare_bytes(rule: Compare, expected: &[u8], actual: &[u8]) -> Result<(), String> {
    match rule {
        Compare::Exact | Compare::ExpectError => exact_diff(expected, actual),
        Compare::NoId => exact_diff(
            &drop_lines(expected, |l| contains(l, b"id")),
            &drop_lines(actual, |l| contains(l, b"id")),
        ),
        Compare::FilteredId => exact_diff(
            &drop_lines(expected, id_digit),
            &drop_lines(actual, id_digit),
        ),
        Compare::XmlWs => xmlcompare::compare(expected, actual),
    }
}

pub(super) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn id_digit(line: &[u8]) -> bool {
    line.windows(3)
        .any(|w| w[0] == b'i' && w[1] == b'd' && w[2].is_ascii_digit())
}

/// `grep -v`: the kept lines, each ending in `\n`.
fn drop_lines(bytes: &[u8], drop: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    for line in lines {
        if !drop(line) {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    out
}

/// `Ok` when equal, else the first differing line.
pub fn exact_diff(expected: &[u8], actual: &[u8]) -> Result<(), String> {
    if expected == actual {
        return Ok(());
    }
    if expected.is_empty() {
        let first = actual.split(|b| *b == b'\n').next().unwrap_or(b"");
        return Err(format!(
            "expected empty output, got {} bytes: {:?}",
            actual.len(),
            shorten(&String::from_utf8_lossy(first), 120)
        ));
    }
    let e: Vec<&[u8]> = expected.split(|b| *b == b'\n').collect();
    let a: Vec<&[u8]> = actual.split(|b| *b == b'\n').collect();
    for i in 0..e.len().max(a.len()) {
        let (x, y) = (e.get(i), a.get(i));
        if x != y {
            // Show both lines from a little before their first difference.
            let col = match (x, y) {
                (Some(x), Some(y)) => x.iter().zip(y.iter()).take_while(|(p, q)| p == q).count(),
                _ => 0,
            };
            let from = col.saturating_sub(30);
            let show = |l: Option<&&[u8]>| match l {
                Some(l) => format!(
                    "{}{:?}",
                    if from > 0 { "…" } else { "" },
                    shorten(&String::from_utf8_lossy(&l[from.min(l.len())..]), 100)
                ),
                None => "end of output".to_string(),
            };
            return Err(format!(
                "line {}{}: expected {}, got {}",
                i + 1,
                if from > 0 {
                    format!(", byte {}", col + 1)
                } else {
                    String::new()
                },
                show(x),
                show(y)
            ));
        }
    }
    Err(format!(
        "outputs differ ({} vs {} bytes)",
        expected.len(),
        actual.len()
    ))
}
