//! The collation behind `xsl-sort = "unicode"`: `csrc/sort.c` sorts a
//! node set the way libxslt's default sort does, and compares text keys
//! through the two functions here, with ICU4X's collator (the Unicode
//! Collation Algorithm and CLDR's tailorings, data compiled in), set up
//! as Chromium sets up its own: the first key's `lang` (English when
//! absent or unknown), upper case first unless `case-order` is
//! `lower-first`, normalization on (ICU4X always normalizes).
//!
//! Collators are made on first use and kept for the thread (a transform
//! runs on one thread), at most [`MAX_KEPT`] of them: past that, a new
//! `lang` sorts with the root collation instead of growing the set (a
//! stylesheet cannot make the server keep one collator per string).

use std::cell::RefCell;
use std::cmp::Ordering;
use std::ffi::{CStr, c_void};
use std::os::raw::{c_char, c_int};

use icu_collator::options::CollatorOptions;
use icu_collator::preferences::CollationCaseFirst;
use icu_collator::{Collator, CollatorBorrowed, CollatorPreferences};
use icu_locale_core::Locale;

/// The most collators a thread keeps.
pub const MAX_KEPT: usize = 32;

thread_local! {
    /// This thread's collators, by (lang, lower-first). Boxed, so the
    /// pointers handed to C stay put while the list grows.
    static KEPT: RefCell<Vec<(String, bool, Box<CollatorBorrowed<'static>>)>> =
        const { RefCell::new(Vec::new()) };
}

/// A collator for `lang` (`None`, or one that is not a locale: root) and
/// the case order.
fn make(lang: Option<&str>, lower_first: bool) -> Option<CollatorBorrowed<'static>> {
    let mut prefs = lang
        .and_then(|l| l.replace('_', "-").parse::<Locale>().ok())
        .map(|l| CollatorPreferences::from(&l))
        .unwrap_or_default();
    prefs.case_first = Some(if lower_first {
        CollationCaseFirst::Lower
    } else {
        CollationCaseFirst::Upper
    });
    Collator::try_new(prefs, CollatorOptions::default()).ok()
}

/// The name the root collation is kept under (not a language tag).
const ROOT: &str = "\0root";

/// The collator kept for (`lang`, `lower_first`) on this thread, made
/// now if need be (the root collation for a `lang` past the first
/// [`MAX_KEPT`], or one ICU4X cannot make); null only if not even the
/// root collation can be made.
fn collator(lang: Option<&str>, lower_first: bool) -> *const CollatorBorrowed<'static> {
    let wanted = lang.unwrap_or("en");
    KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        let find = |kept: &[(String, bool, Box<CollatorBorrowed<'static>>)], name: &str| {
            kept.iter()
                .find(|(l, lf, _)| l == name && *lf == lower_first)
                .map(|(_, _, c)| &**c as *const CollatorBorrowed<'static>)
        };
        if let Some(found) = find(&kept, wanted) {
            return found;
        }
        let name = if kept.len() < MAX_KEPT { wanted } else { ROOT };
        if let Some(found) = find(&kept, name) {
            return found;
        }
        let made = (name != ROOT)
            .then(|| make(Some(name), lower_first))
            .flatten()
            .or_else(|| make(None, lower_first));
        let Some(made) = made else {
            return std::ptr::null();
        };
        let boxed = Box::new(made);
        let ptr: *const CollatorBorrowed<'static> = &*boxed;
        kept.push((name.to_string(), lower_first, boxed));
        ptr
    })
}

/// Compares two UTF-8 strings (ill-formed sequences count as U+FFFD)
/// with `collator`, code point order without one.
fn compare(collator: Option<&CollatorBorrowed<'static>>, a: &[u8], b: &[u8]) -> Ordering {
    match collator {
        Some(c) => c.compare_utf8(a, b),
        None => a.cmp(b),
    }
}

/// `a` against `b` as a sort with (`lang`, `lower_first`) compares them
/// (for tests and fuzz targets).
pub(super) fn compare_text(lang: Option<&str>, lower_first: bool, a: &str, b: &str) -> Ordering {
    // SAFETY: the pointer comes from this thread's set, whose boxes live
    // until the thread ends.
    let c = unsafe { collator(lang, lower_first).as_ref() };
    compare(c, a.as_bytes(), b.as_bytes())
}

/// For `csrc/sort.c`: the collator for `lang` (a NUL-terminated string,
/// or null) and the case order, valid until the thread ends.
#[unsafe(no_mangle)]
pub extern "C" fn axle_collator(lang: *const c_char, lower_first: c_int) -> *const c_void {
    let lang = if lang.is_null() {
        None
    } else {
        // SAFETY: sort.c passes a sort element's `lang`, a NUL-terminated
        // string libxslt owns for the stylesheet's life, or null.
        unsafe { CStr::from_ptr(lang) }.to_str().ok()
    };
    collator(lang, lower_first != 0).cast()
}

/// For `csrc/sort.c`: `a` against `b` (NUL-terminated UTF-8, null as
/// empty) with a collator from [`axle_collator`]: -1, 0 or 1.
#[unsafe(no_mangle)]
pub extern "C" fn axle_collate(collator: *const c_void, a: *const u8, b: *const u8) -> c_int {
    // SAFETY: `collator` is null or came from `axle_collator` on this
    // thread (sort.c asks for it within the same sort), whose box lives
    // until the thread ends; `a` and `b` are null or NUL-terminated
    // strings libxslt owns for the sort's duration.
    let (collator, a, b) = unsafe {
        let text = |p: *const u8| {
            if p.is_null() {
                &[][..]
            } else {
                CStr::from_ptr(p.cast()).to_bytes()
            }
        };
        (
            collator.cast::<CollatorBorrowed<'static>>().as_ref(),
            text(a),
            text(b),
        )
    };
    match compare(collator, a, b) {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }
}

/// For `csrc/sort.c`: the sort key of `text` (NUL-terminated UTF-8, null
/// as empty) under `collator` (its bytes, when there is none), its length
/// in `*len`: two keys compare bytewise as [`axle_collate`] compares their
/// texts. Freed with [`axle_sort_key_free`].
#[unsafe(no_mangle)]
pub extern "C" fn axle_sort_key(
    collator: *const c_void,
    text: *const u8,
    len: *mut usize,
) -> *mut u8 {
    // SAFETY: as in `axle_collate`: `collator` is null or from
    // `axle_collator` on this thread, `text` null or a NUL-terminated
    // string libxslt owns for the sort's duration.
    let (collator, text) = unsafe {
        (
            collator.cast::<CollatorBorrowed<'static>>().as_ref(),
            if text.is_null() {
                &[][..]
            } else {
                CStr::from_ptr(text.cast()).to_bytes()
            },
        )
    };
    let key = sort_key(collator, text).into_boxed_slice();
    if !len.is_null() {
        // SAFETY: sort.c passes the address of a `size_t` it owns.
        unsafe { *len = key.len() };
    }
    Box::into_raw(key).cast::<u8>()
}

/// For `csrc/sort.c`: frees a key from [`axle_sort_key`] (`len` as it
/// was given); null is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn axle_sort_key_free(key: *mut u8, len: usize) {
    if key.is_null() {
        return;
    }
    // SAFETY: `key` and `len` are a boxed slice's pointer and length from
    // `axle_sort_key`, freed once (sort.c frees each key it made once).
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(key, len)) });
}

/// The sort key of `text`: ICU4X's at the collator's strength, or the
/// bytes themselves without a collator.
fn sort_key(collator: Option<&CollatorBorrowed<'static>>, text: &[u8]) -> Vec<u8> {
    let mut key = Vec::new();
    match collator {
        Some(c) => {
            let Ok(()) = c.write_sort_key_utf8_to(text, &mut key);
        }
        None => key.extend_from_slice(text),
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(lang: Option<&str>, lower_first: bool, words: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = words.iter().map(|s| s.to_string()).collect();
        v.sort_by(|a, b| compare_text(lang, lower_first, a, b));
        v
    }

    #[test]
    fn english_upper_first_as_chromium_sorts() {
        let words = ["b", "Z", "a", "10", "é", "Ärger", "A", "e", "9", "B", "_x"];
        assert_eq!(
            sorted(None, false, &words),
            ["_x", "10", "9", "A", "a", "Ärger", "B", "b", "e", "é", "Z"]
        );
        assert_eq!(
            sorted(Some("en"), true, &["A", "a", "B", "b"]),
            ["a", "A", "b", "B"]
        );
    }

    #[test]
    fn lang_chooses_the_tailoring() {
        // Swedish sorts ä after z; German with a.
        assert_eq!(sorted(Some("sv"), false, &["ä", "z", "a"]), ["a", "z", "ä"]);
        assert_eq!(sorted(Some("de"), false, &["ä", "z", "a"]), ["a", "ä", "z"]);
        // Not a locale: root.
        assert_eq!(sorted(Some("!!"), false, &["b", "a"]), ["a", "b"]);
    }

    #[test]
    fn sort_keys_order_as_the_comparison_does() {
        let words = [
            "b", "Z", "a", "10", "é", "Ärger", "A", "e", "9", "B", "_x", "", "a\u{301}", "á",
        ];
        for lang in [None, Some("sv"), Some("de")] {
            for lower_first in [false, true] {
                // SAFETY (test): the pointer comes from this thread's set.
                let c = unsafe { collator(lang, lower_first).as_ref() };
                for a in words {
                    for b in words {
                        let by_key = sort_key(c, a.as_bytes()).cmp(&sort_key(c, b.as_bytes()));
                        assert_eq!(
                            by_key,
                            compare_text(lang, lower_first, a, b),
                            "{a:?} {b:?} {lang:?} {lower_first}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_set_is_bounded() {
        for i in 0..(MAX_KEPT * 2) {
            let lang = format!("x-{i}");
            assert!(!collator(Some(&lang), false).is_null());
        }
        KEPT.with(|k| assert!(k.borrow().len() <= MAX_KEPT + 2));
        // Past the bound every new lang gets the one root collator, and
        // the first ones keep their own.
        let root = collator(Some("y-1"), false);
        assert_eq!(collator(Some("y-2"), false), root);
        assert_ne!(collator(Some("x-0"), false), root);
        KEPT.with(|k| assert!(k.borrow().len() <= MAX_KEPT + 2));
    }
}
