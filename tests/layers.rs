//! Keeps Axle's module layers honest: a module may use only the modules
//! below it, so that (for example) `ffi` can be reasoned about, tested and
//! replaced without the HTTP server, and no cycle creeps in between
//! `language` and `chain`.
//!
//! How it reads the crate: every `src/**/*.rs` file except the two crate
//! roots (`lib.rs` only declares modules and re-exports; `main.rs` is the
//! binary, a separate crate) is lexed with comments, string, byte-string,
//! raw-string and character literals removed, and scanned for references to
//! the crate's own modules:
//! - `crate::x` paths anywhere in code (`use crate::x::…`, `crate::x::f()`,
//!   `pub(in crate::x)`), including grouped imports such as
//!   `use crate::{a, b::{c, d}}` over several lines (each head counts);
//! - `super::` chains that climb out of a top-level module to the crate
//!   root (counting inline `mod name { … }` blocks, so `use super::super::x`
//!   in a `mod tests` of `src/chain.rs` reaches `x`).
//!
//! Unit tests count: `src/ffi/dtd/tests.rs` and a `mod tests` inside a file
//! belong to their file's top-level module, and must keep to its layer too.
//! Doc comments do not count: an intra-doc link such as
//! ``[`crate::http::x`]`` in `ffi` is a reference for readers, not a
//! dependency of the code, and is stripped with the other comments.
//!
//! A name that is neither a top-level module nor one of `lib.rs`'s
//! re-exports (mapped to the module it comes from), and a top-level module
//! missing from [`LAYERS`], fail the test: the table has to be kept up to
//! date rather than silently ignore what it does not know.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What each top-level module may use, bottom-up. Anything not listed is
/// forbidden. `href` is the low module (at the provider level) that
/// resolves relative references; it may not exist yet.
const LAYERS: &[(&str, &[&str])] = &[
    // Pure: the prolog scanner imports nothing.
    ("prolog", &[]),
    ("ffi", &["prolog"]),
    ("cache", &["ffi", "prolog"]),
    ("provider", &["exec", "cache", "ffi", "prolog"]),
    ("href", &["cache", "ffi", "prolog"]),
    // `config` (a leaf of settings) for its duration and size syntax: an
    // XSP page's `axsp:ttl` reads as every duration a user writes.
    (
        "language",
        &[
            "config", "exec", "href", "provider", "cache", "ffi", "prolog", "fastcgi",
        ],
    ),
    (
        "chain",
        &[
            "language", "exec", "href", "provider", "cache", "ffi", "prolog", "fastcgi",
        ],
    ),
    // Dynamic sources (issue #24): a program's output, an upstream's
    // answer, a request body; below `site`, which mounts them.
    (
        "dynamic",
        &[
            "config", "exec", "upstream", "cache", "ffi", "prolog", "fastcgi",
        ],
    ),
    (
        "site",
        &[
            "dynamic", "config", "chain", "language", "href", "provider", "cache", "ffi", "prolog",
            "exec", "upstream", "fastcgi",
        ],
    ),
    // Leaves: the start-up settings (also what `axle.toml`'s `[limits]`
    // fills in, so `site` uses them), the pool, and the runner of
    // configured programs (filters, command sources).
    ("config", &["cache", "ffi", "prolog"]),
    ("pool", &[]),
    // The upstream fetcher (issue #24) decides alone which host is
    // contacted, so it stands on nothing: no provider, site or server
    // code can reach into it, and it into them.
    ("upstream", &[]),
    ("exec", &[]),
    // FastCGI (issue #38): the record layer, the client and the spawned
    // workers, on `exec` (the process-tree rule) and nothing else.
    ("fastcgi", &["exec"]),
    (
        "pipeline",
        &[
            "config", "pool", "exec", "site", "chain", "language", "href", "provider", "cache",
            "ffi", "prolog", "fastcgi",
        ],
    ),
    (
        "http",
        &[
            "dynamic", "pipeline", "config", "pool", "exec", "site", "chain", "language", "href",
            "provider", "cache", "ffi", "prolog", "fastcgi",
        ],
    ),
    // The builder: everything a server is made of.
    (
        "server",
        &[
            "http", "dynamic", "pipeline", "config", "pool", "exec", "site", "chain", "language",
            "href", "provider", "cache", "ffi", "prolog", "fastcgi",
        ],
    ),
    // `axle build`: a built server's handler, asked for every page.
    (
        "export",
        &[
            "server", "http", "dynamic", "pipeline", "config", "pool", "exec", "site", "chain",
            "language", "href", "provider", "cache", "ffi", "prolog", "fastcgi",
        ],
    ),
    // `axle warm`: a client of the public listener; reads the root's
    // configuration for its dynamic locations.
    (
        "warm",
        &[
            "http", "site", "language", "config", "chain", "href", "provider", "cache", "ffi",
            "prolog", "dynamic", "exec", "upstream", "fastcgi",
        ],
    ),
];

/// Modules that may be missing from `lib.rs` (being added elsewhere).
const OPTIONAL: &[&str] = &["href", "exec"];

fn allowed(from: &str) -> Option<&'static [&'static str]> {
    LAYERS
        .iter()
        .find(|(name, _)| *name == from)
        .map(|(_, uses)| *uses)
}

// ---------------------------------------------------------------------------
// Lexing

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Open,
    Close,
    Comma,
    Semi,
    Other(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Rust source as tokens, without comments and literals.
fn lex(src: &str) -> Vec<Token> {
    let s: Vec<char> = src.chars().collect();
    let at = |i: usize| s.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // Skips a quoted literal whose opening quote is at `i`; returns the
    // index after its closing quote.
    let skip_quoted = |mut i: usize, quote: char, line: &mut usize| {
        i += 1;
        while i < s.len() {
            match s[i] {
                '\\' => {
                    if at(i + 1) == '\n' {
                        *line += 1;
                    }
                    i += 2;
                    continue;
                }
                '\n' => *line += 1,
                c if c == quote => return i + 1,
                _ => {}
            }
            i += 1;
        }
        i
    };
    // Skips a raw string whose `r` is followed by `hashes` '#' and a quote
    // at `i` (the quote's index).
    let skip_raw = |mut i: usize, hashes: usize, line: &mut usize| {
        i += 1;
        while i < s.len() {
            if s[i] == '\n' {
                *line += 1;
            }
            if s[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                return i + 1 + hashes;
            }
            i += 1;
        }
        i
    };
    while i < s.len() {
        let c = s[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if at(i + 1) == '/' => {
                while i < s.len() && s[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                let mut depth = 0;
                while i < s.len() {
                    if s[i] == '/' && at(i + 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if s[i] == '*' && at(i + 1) == '/' {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if s[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                }
            }
            '"' => i = skip_quoted(i, '"', &mut line),
            '\'' => {
                if at(i + 1) == '\\' {
                    // An escaped character literal: '\n', '\'', '\u{..}'.
                    let mut j = i + 3;
                    while j < s.len() && s[j] != '\'' {
                        j += 1;
                    }
                    i = j + 1;
                } else if at(i + 2) == '\'' {
                    i += 3; // 'x'
                } else {
                    // A lifetime or label: the quote alone.
                    out.push(Token {
                        tok: Tok::Other('\''),
                        line,
                    });
                    i += 1;
                }
            }
            c if is_ident_start(c) => {
                let start = i;
                while i < s.len() && is_ident_char(s[i]) {
                    i += 1;
                }
                let word: String = s[start..i].iter().collect();
                let next = at(i);
                match word.as_str() {
                    // Raw strings (and raw identifiers `r#name`).
                    "r" | "br" | "cr" if next == '#' || next == '"' => {
                        let mut hashes = 0;
                        while at(i + hashes) == '#' {
                            hashes += 1;
                        }
                        if at(i + hashes) == '"' {
                            i = skip_raw(i + hashes, hashes, &mut line);
                        } else if word == "r" && hashes == 1 {
                            let start = i + 1;
                            i = start;
                            while i < s.len() && is_ident_char(s[i]) {
                                i += 1;
                            }
                            out.push(Token {
                                tok: Tok::Ident(s[start..i].iter().collect()),
                                line,
                            });
                        } else {
                            i += hashes;
                        }
                    }
                    "b" | "c" if next == '"' => i = skip_quoted(i, '"', &mut line),
                    "b" if next == '\'' => i = skip_quoted(i, '\'', &mut line),
                    _ => out.push(Token {
                        tok: Tok::Ident(word),
                        line,
                    }),
                }
            }
            c if c.is_ascii_digit() => {
                while i < s.len() && is_ident_char(s[i]) {
                    i += 1;
                }
            }
            ':' if at(i + 1) == ':' => {
                out.push(Token {
                    tok: Tok::PathSep,
                    line,
                });
                i += 2;
            }
            _ => {
                let tok = match c {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    ',' => Tok::Comma,
                    ';' => Tok::Semi,
                    other => Tok::Other(other),
                };
                out.push(Token { tok, line });
                i += 1;
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Scanning

/// A reference from code in `module_path` (within its file) to a name at
/// the crate root.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reference {
    line: usize,
    /// The first segment after `crate::` (or after the `super::` chain that
    /// reaches the crate root); `*` for a glob of the crate root.
    name: String,
}

fn ident(tokens: &[Token], i: usize) -> Option<&str> {
    match tokens.get(i).map(|t| &t.tok) {
        Some(Tok::Ident(name)) => Some(name),
        _ => None,
    }
}

fn is(tokens: &[Token], i: usize, tok: &Tok) -> bool {
    tokens.get(i).map(|t| &t.tok) == Some(tok)
}

/// The first segments of the path (or `{…}` group of paths) at `i`.
fn heads(tokens: &[Token], i: usize) -> Vec<Reference> {
    let Some(first) = tokens.get(i) else {
        return Vec::new();
    };
    match &first.tok {
        Tok::Ident(name) => vec![Reference {
            line: first.line,
            name: name.clone(),
        }],
        Tok::Other('*') => vec![Reference {
            line: first.line,
            name: "*".to_string(),
        }],
        Tok::Open => {
            let mut out = Vec::new();
            let mut depth = 0;
            let mut item_start = true;
            for token in &tokens[i..] {
                match &token.tok {
                    Tok::Open => {
                        depth += 1;
                        item_start = depth == 1;
                        continue;
                    }
                    Tok::Close => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Tok::Comma if depth == 1 => {
                        item_start = true;
                        continue;
                    }
                    Tok::Ident(name) if item_start && depth == 1 && name != "self" => {
                        out.push(Reference {
                            line: token.line,
                            name: name.clone(),
                        });
                    }
                    Tok::Other('*') if item_start && depth == 1 => out.push(Reference {
                        line: token.line,
                        name: "*".to_string(),
                    }),
                    _ => {}
                }
                item_start = false;
            }
            out
        }
        _ => Vec::new(),
    }
}

/// Every reference to the crate root in `src`, the text of the module at
/// `module_path` (as `["ffi", "dtd"]` for `src/ffi/dtd.rs`).
fn references(src: &str, module_path: &[String]) -> Vec<Reference> {
    let tokens = lex(src);
    let mut out = Vec::new();
    let mut depth = 0usize;
    // Inline modules: (name, brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut pending_mod: Option<String> = None;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i].tok {
            Tok::Open => {
                depth += 1;
                if let Some(name) = pending_mod.take() {
                    inline.push((name, depth));
                }
            }
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(word) if word == "mod" => {
                if let Some(name) = ident(&tokens, i + 1) {
                    if is(&tokens, i + 2, &Tok::Open) {
                        pending_mod = Some(name.to_string());
                    }
                }
            }
            Tok::Ident(word)
                if word == "crate"
                    && is(&tokens, i + 1, &Tok::PathSep)
                    && !(i > 0 && is(&tokens, i - 1, &Tok::Other('$'))) =>
            {
                out.extend(heads(&tokens, i + 2));
            }
            Tok::Ident(word)
                if word == "super"
                    && is(&tokens, i + 1, &Tok::PathSep)
                    && !(i > 0 && is(&tokens, i - 1, &Tok::PathSep)) =>
            {
                let mut climbs = 0;
                let mut j = i;
                while ident(&tokens, j) == Some("super") && is(&tokens, j + 1, &Tok::PathSep) {
                    climbs += 1;
                    j += 2;
                }
                if climbs >= module_path.len() + inline.len() {
                    out.extend(heads(&tokens, j));
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// `lib.rs`: its top-level modules, and the module each re-exported name
/// comes from.
fn crate_root(src: &str) -> (BTreeSet<String>, BTreeMap<String, String>) {
    let tokens = lex(src);
    let mut modules = BTreeSet::new();
    let mut reexports = BTreeMap::new();
    for i in 0..tokens.len() {
        if ident(&tokens, i) == Some("mod") && is(&tokens, i + 2, &Tok::Semi) {
            if let Some(name) = ident(&tokens, i + 1) {
                modules.insert(name.to_string());
            }
        }
        if ident(&tokens, i) == Some("use") && is(&tokens, i + 2, &Tok::PathSep) {
            let Some(module) = ident(&tokens, i + 1) else {
                continue;
            };
            let mut j = i + 3;
            while j < tokens.len() && !is(&tokens, j, &Tok::Semi) {
                if let Some(name) = ident(&tokens, j) {
                    let renamed = ident(&tokens, j + 1) == Some("as");
                    let leaf = !is(&tokens, j + 1, &Tok::PathSep);
                    if leaf && !renamed && name != "as" && name != "self" {
                        reexports.insert(name.to_string(), module.to_string());
                    }
                }
                j += 1;
            }
        }
    }
    (modules, reexports)
}

/// A file's module path, from its path under `src/`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.last_mut() {
        if let Some(stem) = last.strip_suffix(".rs") {
            *last = stem.to_string();
        }
    }
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every forbidden or unknown reference under `src`, as messages.
fn violations(src_dir: &Path) -> Vec<String> {
    scan(src_dir).1
}

/// The edges `from -> to` found under `src`, and the problems (forbidden
/// or unknown references, an out-of-date table), as messages.
fn scan(src_dir: &Path) -> (BTreeSet<(String, String)>, Vec<String>) {
    let mut edges = BTreeSet::new();
    let lib = std::fs::read_to_string(src_dir.join("lib.rs")).expect("reading src/lib.rs");
    let (modules, reexports) = crate_root(&lib);
    let mut problems = Vec::new();
    for module in &modules {
        if allowed(module).is_none() {
            problems.push(format!(
                "src/lib.rs: module `{module}` has no row in the LAYERS table of tests/layers.rs"
            ));
        }
    }
    for (module, _) in LAYERS {
        if !modules.contains(*module) && !OPTIONAL.contains(module) {
            problems.push(format!(
                "tests/layers.rs: LAYERS names `{module}`, which src/lib.rs does not declare"
            ));
        }
    }
    let mut files = Vec::new();
    rust_files(src_dir, &mut files);
    for file in files {
        let relative = file.strip_prefix(src_dir).expect("under src");
        let path = module_path(relative);
        let Some(from) = path.first().cloned() else {
            continue;
        };
        if path.len() == 1 && (from == "lib" || from == "main") {
            continue;
        }
        let shown = format!("src/{}", relative.display());
        let text = std::fs::read_to_string(&file).expect("reading a source file");
        let Some(uses) = allowed(&from) else {
            continue; // reported above
        };
        for reference in references(&text, &path) {
            let to = if modules.contains(&reference.name) {
                reference.name.clone()
            } else if let Some(module) = reexports.get(&reference.name) {
                module.clone()
            } else {
                problems.push(format!(
                    "{shown}:{}: `{from}` refers to `crate::{}`, which is neither a top-level \
                     module nor a re-export in src/lib.rs",
                    reference.line, reference.name
                ));
                continue;
            };
            if to != from {
                edges.insert((from.clone(), to.clone()));
            }
            if to != from && !uses.contains(&to.as_str()) {
                problems.push(format!(
                    "{shown}:{}: forbidden edge {from} -> {to} (`{from}` may use only: {})",
                    reference.line,
                    if uses.is_empty() {
                        "nothing".to_string()
                    } else {
                        uses.join(", ")
                    }
                ));
            }
        }
    }
    (edges, problems)
}

#[test]
fn modules_use_only_the_layers_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = violations(&src);
    assert!(
        problems.is_empty(),
        "module layering broken ({} problem(s)):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_scan_sees_edges_known_to_exist() {
    // A scanner that lost its way (say, in a literal it misread) would
    // find nothing and pass; these edges are the crate's backbone.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (edges, _) = scan(&src);
    for (from, to) in [
        ("provider", "cache"),
        ("provider", "ffi"),
        ("language", "ffi"),
        ("language", "provider"),
        ("chain", "language"),
        ("pipeline", "pool"),
        ("pipeline", "chain"),
        ("http", "pipeline"),
        ("http", "site"),
    ] {
        assert!(
            edges.contains(&(from.to_string(), to.to_string())),
            "expected {from} -> {to} among {edges:?}"
        );
    }
}

#[test]
fn the_layer_table_has_no_cycle() {
    // Depth-first search over the allowed edges.
    fn visit(module: &str, stack: &mut Vec<String>) {
        assert!(
            !stack.iter().any(|m| m == module),
            "LAYERS has a cycle: {} -> {module}",
            stack.join(" -> ")
        );
        stack.push(module.to_string());
        for next in allowed(module).unwrap_or(&[]) {
            visit(next, stack);
        }
        stack.pop();
    }
    for (module, uses) in LAYERS {
        for used in *uses {
            assert!(allowed(used).is_some(), "{module} uses unknown {used}");
        }
        visit(module, &mut Vec::new());
    }
}

// ---------------------------------------------------------------------------
// The scanner on small inputs

fn names(src: &str, path: &[&str]) -> Vec<(usize, String)> {
    let path: Vec<String> = path.iter().map(|p| p.to_string()).collect();
    references(src, &path)
        .into_iter()
        .map(|r| (r.line, r.name))
        .collect()
}

#[test]
fn scanner_reads_grouped_multiline_imports() {
    let src = "use std::fmt;\nuse crate::{\n    a,\n    b::{c, d::{e}},\n    self,\n};\n";
    assert_eq!(
        names(src, &["ffi"]),
        vec![(3, "a".to_string()), (4, "b".to_string())]
    );
    assert_eq!(
        names("use crate::{a, b::{c}};", &["ffi"]),
        vec![(1, "a".to_string()), (1, "b".to_string())]
    );
}

#[test]
fn scanner_reads_paths_in_code() {
    let src = "fn f() {\n    let x = crate::http::escape(\"s\");\n    g::<crate::cache::Key>();\n}\npub(in crate::pool) fn h() {}\n";
    assert_eq!(
        names(src, &["ffi"]),
        vec![
            (2, "http".to_string()),
            (3, "cache".to_string()),
            (5, "pool".to_string())
        ]
    );
}

#[test]
fn scanner_ignores_comments_literals_and_macro_crate() {
    let src = r####"
//! See [`crate::http::serve`].
/// Links to [`crate::pipeline`].
// use crate::http;
/* use crate::http; /* nested crate::http */ still comment crate::http */
const A: &str = "crate::http::x \" crate::http";
const B: &str = r#"crate::http "quoted" crate::http"#;
const C: &[u8] = b"crate::http";
const D: &[u8] = br##"crate::http"##;
const E: char = '{';
const F: char = '\'';
const G: u8 = b'"';
fn lifetimes<'a>(x: &'a str) -> &'a str { x }
macro_rules! m { () => { $crate::http::x() }; }
pub(crate) fn ok() {}
fn after() { crate::chain::resolve(); }
"####;
    assert_eq!(names(src, &["ffi"]), vec![(16, "chain".to_string())]);
}

#[test]
fn scanner_follows_super_out_of_a_top_level_module() {
    // Within ffi: `super::` from ffi::dtd stays in ffi.
    assert!(names("use super::{Loaded, sys};", &["ffi", "dtd"]).is_empty());
    assert!(names("use super::super::*;", &["ffi", "dtd", "tests"]).is_empty());
    // Out to the crate root.
    assert_eq!(
        names("use super::super::http::X;", &["ffi", "dtd"]),
        vec![(1, "http".to_string())]
    );
    assert_eq!(
        names("use super::pool;", &["chain"]),
        vec![(1, "pool".to_string())]
    );
    // An inline module adds a level, and ends with its braces.
    let src =
        "mod tests {\n    use super::*;\n    use super::super::pool::Pool;\n}\nuse super::site;\n";
    assert_eq!(
        names(src, &["chain"]),
        vec![(3, "pool".to_string()), (5, "site".to_string())]
    );
}

#[test]
fn crate_root_maps_reexports_to_modules() {
    let src = "pub mod cache;\nmod ffi;\npub use config::{CacheMode, ServeConfig};\npub use language::{Language, registry::Registry as Reg, Stage};\n";
    let (modules, reexports) = crate_root(src);
    assert_eq!(
        modules.into_iter().collect::<Vec<_>>(),
        vec!["cache".to_string(), "ffi".to_string()]
    );
    assert_eq!(
        reexports.get("ServeConfig").map(String::as_str),
        Some("config")
    );
    assert_eq!(reexports.get("Stage").map(String::as_str), Some("language"));
    assert_eq!(reexports.get("Reg").map(String::as_str), Some("language"));
    assert_eq!(reexports.get("Registry"), None);
}

#[test]
fn a_forbidden_edge_names_file_line_and_edge() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    std::fs::write(
        src.join("lib.rs"),
        "pub mod ffi;\npub mod http;\npub mod prolog;\n",
    )
    .expect("write");
    std::fs::create_dir(src.join("ffi")).expect("mkdir");
    std::fs::write(
        src.join("ffi/mod.rs"),
        "//! ffi\nuse crate::prolog::scan;\n",
    )
    .expect("write");
    std::fs::write(
        src.join("ffi/tests.rs"),
        "use super::*;\n\nfn t() {\n    crate::http::escape_markup(\"\");\n}\n",
    )
    .expect("write");
    std::fs::write(src.join("http.rs"), "use crate::ffi::XmlDoc;\n").expect("write");
    std::fs::write(src.join("prolog.rs"), "").expect("write");
    let problems = violations(src);
    let forbidden: Vec<&String> = problems
        .iter()
        .filter(|p| p.contains("forbidden"))
        .collect();
    assert_eq!(forbidden.len(), 1, "{problems:#?}");
    assert!(
        forbidden[0].starts_with("src/ffi/tests.rs:4: forbidden edge ffi -> http"),
        "{}",
        forbidden[0]
    );
}
