//! Reading `axle.toml` past its first mistake. serde stops at the first
//! key it refuses; to name every mistake in one run, the refused key (an
//! unknown one, a value of the wrong type) is recorded, blanked out of the
//! text (spaces over its bytes, so every later offset and line stays where
//! it was) and the text read again, until it reads or nothing more can be
//! taken out. A missing key that is missing because it was taken out is
//! not reported again.

use std::ops::Range;
use std::path::Path;

use super::ConfigError;
use super::format::FileFormat;
use super::spans::Spans;
use super::validate::serde_error;

/// The most keys taken out before giving up (each costs one more read).
const MAX_ROUNDS: usize = 100;

/// The file format read from `text` with every refused key taken out
/// (None when what is left is still not readable: a syntax error, or a
/// mistake that cannot be cut out), and the errors for what was refused.
pub(super) fn read_format(file: &Path, text: &str) -> (Option<FileFormat>, Vec<ConfigError>) {
    let mut errors = Vec::new();
    let mut removed: Vec<String> = Vec::new();
    let mut current = text.to_string();
    for _ in 0..MAX_ROUNDS {
        let e = match toml::from_str::<FileFormat>(&current) {
            Ok(format) => return (Some(format), errors),
            Err(e) => e,
        };
        let spans = Spans::parse(&current);
        let error = serde_error(file, &current, &spans, &e);
        let consequence = removed.iter().any(|r| under(&error.key, r));
        let key = error.key.clone();
        if !consequence {
            errors.push(error);
        }
        match without(&current, &spans, &key) {
            Some(next) => {
                removed.push(key);
                current = next;
            }
            None => return (None, errors),
        }
    }
    (None, errors)
}

/// Is `key` the key `of` or under it?
fn under(key: &str, of: &str) -> bool {
    key.strip_prefix(of)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
}

/// `text` with `key` blanked out, or the nearest key above it whose
/// removal leaves valid TOML (a key inside an inline table takes its
/// comma with it, so the inline table goes; an array's element goes with
/// its array, so no later element changes its index); None when no key
/// can go (a syntax error has no keys).
fn without(text: &str, spans: &Spans, key: &str) -> Option<String> {
    let mut key = key;
    loop {
        if !key.ends_with(']')
            && let Some(range) = spans.extent(key)
        {
            let candidate = blank(text, range);
            if candidate != text && toml_edit::ImDocument::parse(candidate.as_str()).is_ok() {
                return Some(candidate);
            }
        }
        key = Spans::parent_of(key)?;
    }
}

/// `text` with the bytes of `range` turned to spaces (line ends kept).
fn blank(text: &str, range: Range<usize>) -> String {
    let mut bytes = text.as_bytes().to_vec();
    let end = range.end.min(bytes.len());
    for b in bytes
        .get_mut(range.start.min(end)..end)
        .into_iter()
        .flatten()
    {
        if *b != b'\n' && *b != b'\r' {
            *b = b' ';
        }
    }
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<(String, Option<usize>)> {
        let (_, errors) = read_format(Path::new("axle.toml"), text);
        errors.into_iter().map(|e| (e.key, e.line)).collect()
    }

    #[test]
    fn every_refused_key_is_named_with_its_line() {
        let text = "[location.\"/a\"]\ncache-contrl = \"x\"\nstyle = 3\n\n\
                    [location.\"/b\"]\ndirectoris = true\nprovider = { type = \"post\", bogus = 1 }\n\n\
                    [limts]\nx = 1\n";
        assert_eq!(
            keys(text),
            vec![
                ("location.\"/a\".cache-contrl".to_string(), Some(2)),
                ("location.\"/a\".style".to_string(), Some(3)),
                ("location.\"/b\".directoris".to_string(), Some(6)),
                ("location.\"/b\".provider.bogus".to_string(), Some(7)),
                ("limts".to_string(), Some(9)),
            ]
        );
    }

    #[test]
    fn a_key_taken_out_is_not_reported_missing() {
        // href of the wrong type: taken out, then "missing field href"
        // would follow; it is the same mistake.
        let text = "[[location.\"/\".processor]]\ntype = \"text/xsl\"\nhref = 1\n";
        assert_eq!(
            keys(text),
            vec![("location.\"/\".processor[0].href".to_string(), Some(3))]
        );
    }

    #[test]
    fn a_syntax_error_is_one_error() {
        let (format, errors) = read_format(Path::new("axle.toml"), "[location.\"/\"\nstyle = 1\n");
        assert!(format.is_none());
        assert_eq!(errors.len(), 1, "{errors:?}");
    }

    #[test]
    fn blanking_keeps_offsets_and_lines() {
        assert_eq!(blank("a = 1\nb = 2\n", 0..7), "     \n  = 2\n");
        assert_eq!(blank("é = 1\n", 0..2), "   = 1\n", "one space a byte");
    }
}
