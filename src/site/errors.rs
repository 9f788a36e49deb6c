//! What is wrong with a configuration file: one [`ConfigError`] per
//! problem (file, line, full key, message), and [`ConfigErrors`], every
//! problem a load found, so one run of `axle check` (or a failed start)
//! names them all. An unknown key's message suggests the key it is
//! nearest to rather than listing every key the table allows.

use std::path::PathBuf;

/// A problem in the configuration file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {key}: {message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The key (e.g. `location."/docs".processor[1].uri`).
    pub key: String,
    /// What is wrong.
    pub message: String,
}

/// Every problem a configuration file has (at least one), in the order of
/// their lines. Shown one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors(Vec<ConfigError>);

impl ConfigErrors {
    /// The errors of `errors`, ordered by line (errors without a line
    /// last); None when there are none.
    pub(super) fn new(mut errors: Vec<ConfigError>) -> Option<ConfigErrors> {
        errors.sort_by_key(|e| e.line.unwrap_or(usize::MAX));
        errors.dedup();
        (!errors.is_empty()).then_some(ConfigErrors(errors))
    }

    /// The first problem (by line).
    pub fn first(&self) -> &ConfigError {
        // Never empty: `new` refuses an empty list, `From` makes one of one.
        &self.0[0]
    }

    /// Every problem, by line.
    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.0.iter()
    }

    /// How many problems there are (at least one).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl From<ConfigError> for ConfigErrors {
    fn from(e: ConfigError) -> ConfigErrors {
        ConfigErrors(vec![e])
    }
}

impl IntoIterator for ConfigErrors {
    type Item = ConfigError;
    type IntoIter = std::vec::IntoIter<ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// serde's "unknown field `x`, expected one of `a`, `b`, ..." as "unknown
/// field `x`; did you mean `b`?" when one of the allowed keys is near
/// enough to be a slip of the keyboard (a typo, a letter dropped or
/// swapped); any other message as it is.
pub(super) fn suggest_near_key(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_string();
    };
    let Some((unknown, expected)) = rest.split_once('`') else {
        return message.to_string();
    };
    // The allowed names are the back-quoted words after "expected".
    let allowed: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    match nearest(unknown, &allowed) {
        Some(near) => format!("unknown field `{unknown}`; did you mean `{near}`?"),
        None => message.to_string(),
    }
}

/// The allowed name nearest to `unknown`, if it is near: at most two
/// edits (insertions, deletions, substitutions, adjacent swaps) for names
/// of five letters or more, one for shorter ones, and a same-spelling
/// match in another case.
fn nearest<'a>(unknown: &str, allowed: &[&'a str]) -> Option<&'a str> {
    let lower = unknown.to_ascii_lowercase();
    let budget = if unknown.chars().count() >= 5 { 2 } else { 1 };
    allowed
        .iter()
        .map(|name| (strsim::damerau_levenshtein(&lower, name), *name))
        .filter(|(distance, _)| *distance <= budget)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: &str =
        "expected one of `style`, `media`, `cache-control`, `trace`, `output-charset`";

    #[test]
    fn a_near_key_is_suggested_instead_of_the_list() {
        let m = suggest_near_key(&format!("unknown field `cache-contrl`, {KEYS}"));
        assert_eq!(
            m,
            "unknown field `cache-contrl`; did you mean `cache-control`?"
        );
        let m = suggest_near_key(&format!("unknown field `styel`, {KEYS}"));
        assert_eq!(m, "unknown field `styel`; did you mean `style`?");
        let m = suggest_near_key(&format!("unknown field `Trace`, {KEYS}"));
        assert_eq!(m, "unknown field `Trace`; did you mean `trace`?");
        // Two allowed names: serde says "expected `a` or `b`".
        let m = suggest_near_key("unknown field `argvv`, expected `argv` or `env`");
        assert_eq!(m, "unknown field `argvv`; did you mean `argv`?");
    }

    #[test]
    fn without_a_near_key_the_message_stays() {
        for message in [
            format!("unknown field `bogus`, {KEYS}"),
            "unknown field `x`, there are no fields".to_string(),
            "invalid type: integer `1`, expected a string".to_string(),
        ] {
            assert_eq!(suggest_near_key(&message), message);
        }
    }

    #[test]
    fn errors_are_ordered_by_line_and_shown_one_per_line() {
        let e = |line: Option<usize>, key: &str| ConfigError {
            file: "axle.toml".into(),
            line,
            key: key.into(),
            message: "bad".into(),
        };
        let all = ConfigErrors::new(vec![e(None, "c"), e(Some(9), "b"), e(Some(2), "a")]).unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all.first().key, "a");
        assert_eq!(
            all.to_string(),
            "axle.toml:2: a: bad\naxle.toml:9: b: bad\naxle.toml: c: bad"
        );
        assert!(ConfigErrors::new(Vec::new()).is_none());
    }
}
