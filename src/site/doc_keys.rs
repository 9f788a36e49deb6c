//! Keeps `docs/configuration.md` and the code in agreement: the keys the
//! code accepts are collected from the serde structs themselves (not from
//! a list that could drift as well), the keys the reference documents are
//! read from its tables, and the two must be the same. Every `toml`
//! example in the reference must load, too.
//!
//! The keys: deserializing [`FileFormat`] from [`Recorder`], a deserializer
//! that holds no data, makes every serde-derived struct on the way call
//! `deserialize_struct` with its field names (as written in the file, after
//! `rename_all`). The recorder notes them under the struct's place in the
//! file (`location."PREFIX".processor[]`) and answers each field with
//! itself, one step deeper, so nested structs are reached too.
//!
//! The reference: under a heading whose last code span is such a place
//! (`` `location."PREFIX"` ``, or `` `axle.toml` `` for the top level),
//! the first cell of each table row that is a key in backticks is a key
//! of that place (a heading naming a place with free-form keys, such as
//! `types`, has no such rows).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, Error};
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};

use super::SiteConfig;
use super::format::FileFormat;
use crate::Registry;

const REFERENCE: &str = include_str!("../../docs/configuration.md");

/// What the top level is called in the reference.
const TOP: &str = "axle.toml";

/// The keys of each place, by place.
type Keys = BTreeMap<String, BTreeSet<String>>;

/// A deserializer with no data that records the fields of every struct it
/// is asked for.
struct Recorder<'r> {
    place: String,
    keys: &'r RefCell<Keys>,
}

impl<'r> Recorder<'r> {
    fn at(&self, place: String) -> Recorder<'r> {
        Recorder {
            place,
            keys: self.keys,
        }
    }
}

/// `toml::Spanned` asks for a struct with these fields; it wraps a value
/// without adding keys.
fn is_spanned(fields: &[&str]) -> bool {
    fields.iter().all(|f| f.starts_with("$__serde_spanned"))
}

impl<'de> de::Deserializer<'de> for Recorder<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_str("")
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_bool(false)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_i64(0)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_u64(0)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_f64(0.0)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let element = self.at(format!("{}[]", self.place));
        visitor.visit_seq(One(Some(element)))
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let value = self.at(format!("{}.\"PREFIX\"", self.place));
        visitor.visit_map(Fields {
            fields: vec![("PREFIX", value)].into_iter(),
            pending: None,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let spanned = is_spanned(fields);
        if !spanned {
            self.keys
                .borrow_mut()
                .entry(self.place.clone())
                .or_default()
                .extend(fields.iter().map(|f| f.to_string()));
        }
        let fields: Vec<_> = fields
            .iter()
            .map(|&f| {
                let place = if spanned {
                    self.place.clone()
                } else if self.place.is_empty() {
                    f.to_string()
                } else {
                    format!("{}.{f}", self.place)
                };
                (f, self.at(place))
            })
            .collect();
        visitor.visit_map(Fields {
            fields: fields.into_iter(),
            pending: None,
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let first: de::value::StrDeserializer<'_, Error> =
            variants.first().copied().unwrap_or("").into_deserializer();
        visitor.visit_enum(first)
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i128 u8 u16 u32 u128 f32 char str string bytes byte_buf
        unit_struct tuple tuple_struct identifier ignored_any
    }
}

/// One element of a sequence.
struct One<'r>(Option<Recorder<'r>>);

impl<'de> SeqAccess<'de> for One<'_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0.take().map(|r| seed.deserialize(r)).transpose()
    }
}

/// Each field (or map key) once, answered by a recorder one step deeper.
struct Fields<'r> {
    fields: std::vec::IntoIter<(&'static str, Recorder<'r>)>,
    pending: Option<Recorder<'r>>,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((name, value)) = self.fields.next() else {
            return Ok(None);
        };
        self.pending = Some(value);
        seed.deserialize(BorrowedStrDeserializer::new(name))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self
            .pending
            .take()
            .ok_or_else(|| de::Error::custom("a value before its key"))?;
        seed.deserialize(value)
    }
}

/// The keys the code accepts, by place.
fn code_keys() -> Keys {
    let keys = RefCell::new(Keys::new());
    FileFormat::deserialize(Recorder {
        place: String::new(),
        keys: &keys,
    })
    .unwrap();
    keys.into_inner()
        .into_iter()
        .map(|(place, k)| (if place.is_empty() { TOP.into() } else { place }, k))
        .collect()
}

/// The last code span of a line, if any.
fn last_code_span(line: &str) -> Option<&str> {
    let mut spans = line.split('`').skip(1).step_by(2);
    let mut last = None;
    for s in spans.by_ref() {
        last = Some(s);
    }
    last
}

/// The keys the reference documents, by place.
fn documented_keys(reference: &str) -> Keys {
    let mut keys = Keys::new();
    let mut place: Option<String> = None;
    for line in reference.lines() {
        if line.starts_with('#') {
            place = last_code_span(line)
                .filter(|s| {
                    *s == TOP
                        || *s == "limits"
                        || *s == "shared-cache"
                        || s.starts_with("location")
                        || s.starts_with("filter")
                        || s.starts_with("esql")
                })
                .map(str::to_string);
            continue;
        }
        let (Some(place), Some(row)) = (&place, line.strip_prefix('|')) else {
            continue;
        };
        let first = row.split('|').next().unwrap_or("").trim();
        if let Some(key) = first
            .strip_prefix('`')
            .and_then(|k| k.strip_suffix('`'))
            .filter(|k| !k.contains('`'))
        {
            keys.entry(place.clone())
                .or_default()
                .insert(key.to_string());
        }
    }
    keys
}

/// What differs between the code's keys and the reference's, one line each.
fn differences(code: &Keys, documented: &Keys) -> Vec<String> {
    let mut out = Vec::new();
    let places: BTreeSet<&String> = code.keys().chain(documented.keys()).collect();
    let none = BTreeSet::new();
    for place in places {
        let (c, d) = (
            code.get(place).unwrap_or(&none),
            documented.get(place).unwrap_or(&none),
        );
        if !documented.contains_key(place) {
            out.push(format!(
                "`{place}` has keys in the code but no table of keys under a heading naming it in docs/configuration.md"
            ));
        }
        if !code.contains_key(place) {
            out.push(format!(
                "docs/configuration.md documents keys of `{place}`, which the code does not have"
            ));
        }
        for key in c.difference(d) {
            out.push(format!(
                "key `{key}` of `{place}` is in the code (src/site/format.rs) but not documented in docs/configuration.md"
            ));
        }
        for key in d.difference(c) {
            out.push(format!(
                "key `{key}` of `{place}` is documented in docs/configuration.md but the code does not accept it"
            ));
        }
    }
    out
}

#[test]
fn the_recorder_finds_every_struct_and_its_keys() {
    let code = code_keys();
    let places: Vec<&str> = code.keys().map(String::as_str).collect();
    assert_eq!(
        places,
        [
            "axle.toml",
            "esql.\"PREFIX\"",
            "filter.\"PREFIX\"",
            "filter.\"PREFIX\".fastcgi",
            "limits",
            "location.\"PREFIX\"",
            "location.\"PREFIX\".media-rules[]",
            "location.\"PREFIX\".processor[]",
            "location.\"PREFIX\".provider",
            "location.\"PREFIX\".user-agent-styles[]",
            "shared-cache",
        ]
    );
    let section = &code["location.\"PREFIX\""];
    for key in [
        "error-stylesheet",
        "user-agent-styles",
        "types",
        "processor",
    ] {
        assert!(section.contains(key), "{key} in {section:?}");
    }
    assert!(code["location.\"PREFIX\".processor[]"].contains("type"));
    assert!(code["limits"].contains("render-timeout"));
}

#[test]
fn every_key_in_the_code_is_documented_and_every_documented_key_exists() {
    let problems = differences(&code_keys(), &documented_keys(REFERENCE));
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn a_drift_either_way_is_named() {
    let mut code = code_keys();
    let documented = documented_keys(REFERENCE);
    code.entry("location.\"PREFIX\"".into())
        .or_default()
        .insert("new-key".into());
    let mut doc_only = documented.clone();
    doc_only
        .entry("location.\"PREFIX\".processor[]".into())
        .or_default()
        .insert("old-key".into());
    assert_eq!(
        differences(&code, &documented),
        [
            "key `new-key` of `location.\"PREFIX\"` is in the code (src/site/format.rs) but not documented in docs/configuration.md"
        ]
    );
    assert_eq!(
        differences(&code_keys(), &doc_only),
        [
            "key `old-key` of `location.\"PREFIX\".processor[]` is documented in docs/configuration.md but the code does not accept it"
        ]
    );
}

#[test]
fn every_toml_example_in_the_reference_loads() {
    let mut block: Option<String> = None;
    let mut count = 0;
    for (n, line) in REFERENCE.lines().enumerate() {
        match (&mut block, line.trim_end()) {
            (None, "```toml") => block = Some(String::new()),
            (Some(text), "```") => {
                if let Err(e) =
                    SiteConfig::parse(text, Path::new("configuration.md"), Registry::default())
                {
                    panic!("the example ending on line {} does not load: {e}", n + 1);
                }
                count += 1;
                block = None;
            }
            (Some(text), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(count >= 4, "only {count} examples");
}
