//! Where each key of the configuration file is, for error messages.
//!
//! serde (through `toml`) reports a bad value with the byte span of the
//! value but not its key, and validation knows a key but not its line.
//! This reads the same text once more with `toml_edit` (the parser `toml`
//! itself uses, so the spans agree) and keeps every key with its span:
//! a span becomes the full dotted key (`location."/".processor[1].href`)
//! and a key becomes its line.

use std::ops::Range;

use toml_edit::{ImDocument, Item, Table, Value};

/// Every key of a configuration file with where it is.
#[derive(Debug, Default)]
pub(super) struct Spans {
    entries: Vec<Entry>,
}

#[derive(Debug)]
struct Entry {
    /// The full dotted key.
    key: String,
    /// How many segments it has.
    depth: usize,
    /// From the key (or the value, for array elements) to the end of the
    /// value (for a `[table]`, its header).
    range: Range<usize>,
}

impl Spans {
    /// The keys of `text`; none when it is not valid TOML (then `toml`
    /// reports a syntax error, which carries its own position).
    pub(super) fn parse(text: &str) -> Spans {
        let mut spans = Spans::default();
        if let Ok(doc) = ImDocument::parse(text) {
            if let Some(table) = doc.as_item().as_table() {
                spans.table(table, "", 0);
            }
        }
        spans
    }

    /// The deepest key whose entry covers all of `span`.
    pub(super) fn key_at(&self, span: &Range<usize>) -> Option<&str> {
        let last = span.end.max(span.start + 1) - 1;
        self.entries
            .iter()
            .filter(|e| e.range.contains(&span.start) && e.range.contains(&last))
            .max_by(|a, b| {
                a.depth
                    .cmp(&b.depth)
                    .then(b.range.len().cmp(&a.range.len()))
            })
            .map(|e| e.key.as_str())
    }

    /// Where `key` starts, or, when it is not in the file, the nearest key
    /// above it that is.
    pub(super) fn start_of(&self, key: &str) -> Option<usize> {
        let mut key = key;
        loop {
            if let Some(e) = self.entries.iter().find(|e| e.key == key) {
                return Some(e.range.start);
            }
            key = parent(key)?;
        }
    }

    /// The bytes `key` and everything under it take (a `[table]`: its
    /// header through its last key), when it is in the file.
    pub(super) fn extent(&self, key: &str) -> Option<Range<usize>> {
        let under = |k: &str| {
            k == key
                || k.strip_prefix(key)
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
        };
        let mut covered = self.entries.iter().filter(|e| under(&e.key));
        let first = covered.next()?.range.clone();
        Some(covered.fold(first, |r, e| {
            r.start.min(e.range.start)..r.end.max(e.range.end)
        }))
    }

    /// The key `key` is under, if any (`a.b[2]` → `a.b`).
    pub(super) fn parent_of(key: &str) -> Option<&str> {
        parent(key)
    }

    fn push(&mut self, key: String, depth: usize, spans: &[Option<Range<usize>>]) {
        let start = spans.iter().flatten().map(|s| s.start).min();
        let end = spans.iter().flatten().map(|s| s.end).max();
        if let (Some(start), Some(end)) = (start, end) {
            self.entries.push(Entry {
                key,
                depth,
                range: start..end,
            });
        }
    }

    fn table(&mut self, table: &Table, prefix: &str, depth: usize) {
        for (name, item) in table.iter() {
            let key = join(prefix, name);
            let key_span = table.key(name).and_then(|k| k.span());
            self.push(key.clone(), depth + 1, &[key_span, item.span()]);
            self.item(item, &key, depth + 1);
        }
    }

    fn item(&mut self, item: &Item, key: &str, depth: usize) {
        match item {
            Item::Table(t) => self.table(t, key, depth),
            Item::ArrayOfTables(a) => {
                for (i, t) in a.iter().enumerate() {
                    let element = format!("{key}[{i}]");
                    self.push(element.clone(), depth + 1, &[t.span()]);
                    self.table(t, &element, depth + 1);
                }
            }
            Item::Value(v) => self.value(v, key, depth),
            Item::None => {}
        }
    }

    fn value(&mut self, value: &Value, key: &str, depth: usize) {
        match value {
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    let element = format!("{key}[{i}]");
                    self.push(element.clone(), depth + 1, &[v.span()]);
                    self.value(v, &element, depth + 1);
                }
            }
            Value::InlineTable(t) => {
                for (name, v) in t.iter() {
                    let child = join(key, name);
                    let key_span = t.key(name).and_then(|k| k.span());
                    self.push(child.clone(), depth + 1, &[key_span, v.span()]);
                    self.value(v, &child, depth + 1);
                }
            }
            _ => {}
        }
    }
}

/// A key segment as errors write it: bare when TOML allows, else quoted.
pub(super) fn segment(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if bare {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}

/// `prefix.name`, with `name` as a segment.
pub(super) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        segment(name)
    } else {
        format!("{prefix}.{}", segment(name))
    }
}

/// The key above `key` (`a."b.c"[2]` → `a."b.c"`), if any.
fn parent(key: &str) -> Option<&str> {
    let mut quoted = false;
    let mut escaped = false;
    let mut cut = None;
    for (i, c) in key.char_indices() {
        if quoted {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => quoted = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            '.' | '[' => cut = Some(i),
            _ => {}
        }
    }
    cut.map(|i| &key[..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "[location.\"/a.b\"]\nstyle = \"x\"\nuser-agent-styles = [\n  { pattern = \"p\", style = \"s\" },\n]\n\n[[location.\"/a.b\".processor]]\ntype = \"t\"\n";

    fn line(text: &str, offset: usize) -> usize {
        text[..offset].matches('\n').count() + 1
    }

    #[test]
    fn keys_have_lines() {
        let spans = Spans::parse(TEXT);
        let line_of = |k: &str| spans.start_of(k).map(|o| line(TEXT, o));
        assert_eq!(line_of("location.\"/a.b\".style"), Some(2));
        assert_eq!(
            line_of("location.\"/a.b\".user-agent-styles[0].style"),
            Some(4)
        );
        assert_eq!(line_of("location.\"/a.b\".processor[0].type"), Some(8));
        assert_eq!(
            line_of("location.\"/a.b\".processor[0].href"),
            Some(7),
            "a key that is not there: the table it would be in"
        );
    }

    #[test]
    fn spans_have_keys() {
        let spans = Spans::parse(TEXT);
        let at = |needle: &str| {
            let start = TEXT.find(needle).unwrap();
            spans
                .key_at(&(start..start + needle.len()))
                .map(str::to_string)
        };
        assert_eq!(
            at("\"p\"").as_deref(),
            Some("location.\"/a.b\".user-agent-styles[0].pattern")
        );
        assert_eq!(
            at("{ pattern = \"p\", style = \"s\" }").as_deref(),
            Some("location.\"/a.b\".user-agent-styles[0]")
        );
        assert_eq!(
            at("\"t\"").as_deref(),
            Some("location.\"/a.b\".processor[0].type")
        );
        assert!(Spans::parse("[a").key_at(&(0..1)).is_none());
    }

    #[test]
    fn parents_respect_quotes() {
        assert_eq!(parent("a.\"b.c\"[2]"), Some("a.\"b.c\""));
        assert_eq!(parent("a.\"b.c\""), Some("a"));
        assert_eq!(parent("a.\"b\\\".c\""), Some("a"));
        assert_eq!(parent("a"), None);
        assert_eq!(segment("user-agent"), "user-agent");
        assert_eq!(segment("/docs"), "\"/docs\"");
    }
}
