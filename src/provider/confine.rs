//! Confinement of paths to a root: the one function that decides whether a
//! request or a stylesheet may touch a file, and the type that proves it did.

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::ProviderError;
use super::root::PrivateSet;
use crate::cache::Fingerprints;

/// A path that exists, was canonicalized (symlinks resolved) and lies inside
/// the root. Only [`confine`] and [`confine_url`] build one; and
/// [`generated_path`] one that names no file (a generated document's URL,
/// never read); and [`confine_optional`], which may also build one that
/// is [`missing`](ConfinedPath::is_missing): a name in a confined
/// directory where there was no file, which is never read through.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConfinedPath {
    abs: PathBuf,
    rel: String,
    url: String,
    named: Named,
    missing: bool,
}

/// The path as it was named, before symlinks were resolved, when that is
/// not the canonical path: what a dependency on this file must check still
/// leads here (a re-pointed link). Not part of a path's identity: two names
/// of one file are one `ConfinedPath`.
#[derive(Debug, Clone, Default)]
struct Named(Option<Arc<Path>>);

impl PartialEq for Named {
    fn eq(&self, _: &Named) -> bool {
        true
    }
}

impl Eq for Named {}

impl std::hash::Hash for Named {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

/// Characters kept as they are in a URL path segment (RFC 3986 `pchar`
/// without `%`): everything else is percent-encoded.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'!')
    .remove(b'$')
    .remove(b'&')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b'+')
    .remove(b',')
    .remove(b';')
    .remove(b'=')
    .remove(b':')
    .remove(b'@');

/// The punctuation [`SEGMENT`] keeps as it is.
const KEPT: &[u8] = b"-._~!$&'()*+,;=:@";

/// Bytes a normal path may hold as they are: ASCII letters, digits and
/// [`KEPT`] (a table: every request's path is checked byte by byte).
const NEVER_ENCODED: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric();
        b += 1;
    }
    let mut i = 0;
    while i < KEPT.len() {
        table[KEPT[i] as usize] = true;
        i += 1;
    }
    table
};

impl ConfinedPath {
    /// The absolute, canonical path.
    pub fn as_path(&self) -> &Path {
        &self.abs
    }

    /// The path relative to the root, with a leading `/`, decoded (for
    /// messages).
    pub fn rel(&self) -> &str {
        &self.rel
    }

    /// The same path as a percent-encoded URL path (what hrefs resolve
    /// against and what [`confine`] takes back).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The path as it was named under the root, when a symlink on its way
    /// makes that differ from [`ConfinedPath::as_path`]; `None` for a
    /// canonical name.
    pub fn named(&self) -> Option<&Arc<Path>> {
        self.named.0.as_ref()
    }

    /// Did this path name no file when it was confined
    /// ([`confine_optional`])? Then it is only a name: nothing reads
    /// through it ([`RootResolver::read_recorded`](super::RootResolver::read_recorded)
    /// refuses), and a dependency on it is [`Dep::absent`](crate::cache::Dep::absent).
    pub fn is_missing(&self) -> bool {
        self.missing
    }

    /// A dependency on this file, which had content `hash`: the name must
    /// still lead here and the file still hold that content.
    pub fn dep(&self, hash: crate::cache::ContentHash) -> crate::cache::Dep {
        crate::cache::Dep {
            path: self.abs.clone(),
            hash,
            via: self.named.0.clone(),
        }
    }
}

/// A request path in one canonical spelling: percent-decoded, with empty
/// and `.` segments removed, and re-encoded. Two spellings of one path
/// (`/a/%62.xml`, `//a/./b.xml`) give the same value, so settings keyed by
/// URL prefix cannot be sidestepped by spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestPath<'a> {
    /// Decoded (`/a b/c.xml`), for matching configured prefixes.
    pub decoded: Cow<'a, str>,
    /// Encoded (`/a%20b/c.xml`), for locating and for URLs (borrowed from
    /// the request when it was already in this form, as nearly all are).
    pub url: Cow<'a, str>,
    /// Did the request end in `/`?
    pub trailing_slash: bool,
}

/// Normalizes a raw request path; `None` for paths that are never valid
/// (not UTF-8 once decoded, NUL, backslash, or a `..` segment).
pub fn normalize_request_path(raw: &str) -> Option<RequestPath<'_>> {
    // Nearly every request path is already in normal form: one copy, no
    // decoding or re-encoding.
    if is_normal(raw) {
        return Some(RequestPath {
            decoded: Cow::Borrowed(raw),
            url: Cow::Borrowed(raw),
            trailing_slash: raw.ends_with('/'),
        });
    }
    normalize_slow(raw)
}

fn normalize_slow(raw: &str) -> Option<RequestPath<'static>> {
    let decoded = percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .ok()?;
    if decoded.contains('\0') || decoded.contains('\\') {
        return None;
    }
    let mut segments = Vec::new();
    for seg in decoded.split('/') {
        match seg {
            "" | "." => {}
            ".." => return None,
            s => segments.push(s),
        }
    }
    let trailing_slash = decoded.ends_with('/') || decoded.ends_with("/.");
    let tail = if trailing_slash && !segments.is_empty() {
        "/"
    } else {
        ""
    };
    let url: Vec<String> = segments
        .iter()
        .map(|s| percent_encoding::utf8_percent_encode(s, SEGMENT).to_string())
        .collect();
    Some(RequestPath {
        decoded: Cow::Owned(format!("/{}{tail}", segments.join("/"))),
        url: Cow::Owned(format!("/{}{tail}", url.join("/"))),
        trailing_slash,
    })
}

/// Whether `raw` is exactly what [`normalize_request_path`] would make of
/// it: absolute, every segment non-empty, not `.`/`..`, and made only of
/// characters that are never percent-encoded.
fn is_normal(raw: &str) -> bool {
    // One pass over the bytes: this runs on every request.
    let b = raw.as_bytes();
    if b.first() != Some(&b'/') {
        return false;
    }
    let mut start = 1;
    for i in 1..=b.len() {
        if i < b.len() && b[i] != b'/' {
            if !NEVER_ENCODED[usize::from(b[i])] {
                return false;
            }
            continue;
        }
        let segment = &b[start..i];
        if i == b.len() && segment.is_empty() {
            // "/" itself, or a single trailing slash
            break;
        }
        if segment.is_empty() || segment == b"." || segment == b".." {
            return false;
        }
        start = i + 1;
    }
    true
}

/// Confines a percent-encoded URL path (`/a/b.xml`) to `root` (canonical).
///
/// Refused: NUL bytes (raw or encoded), `..` components (raw or encoded),
/// backslashes, and any path whose canonical form (after following
/// symlinks) leaves the root. A path that does not exist is `NotFound`.
///
/// Canonicalization goes through `fingerprints`, which remembers canonical
/// paths while its watcher (if any) sees them unchanged.
pub fn confine(
    root: &Path,
    url_path: &str,
    fingerprints: &Fingerprints,
) -> Result<ConfinedPath, ProviderError> {
    confine_in(root, &PrivateSet::NONE, url_path, fingerprints)
}

/// [`confine`], refusing the `private` paths as it refuses `axle.toml`
/// (NotFound, under any spelling: percent-encoded, through a link into
/// them, a link inside them): what [`FileProvider`](super::FileProvider)
/// and [`RootResolver`](super::RootResolver) confine with.
pub(crate) fn confine_in(
    root: &Path,
    private: &PrivateSet,
    url_path: &str,
    fingerprints: &Fingerprints,
) -> Result<ConfinedPath, ProviderError> {
    let decoded = percent_encoding::percent_decode_str(url_path)
        .decode_utf8()
        .map_err(|_| ProviderError::NotFound(url_path.to_string()))?;
    confine_decoded(root, private, &decoded, url_path, fingerprints)
}

/// [`confine`], except that a path naming no file is confined too, as a
/// [`missing`](ConfinedPath::is_missing) one: its directory must exist and
/// lie inside the root (symlinks resolved), and the name itself must be
/// nothing at all (not a dangling link), nor the site configuration's.
/// For a stage whose resource is optional: the file's absence is what its
/// output depends on.
pub fn confine_optional(
    root: &Path,
    url_path: &str,
    fingerprints: &Fingerprints,
) -> Result<ConfinedPath, ProviderError> {
    confine_optional_in(root, &PrivateSet::NONE, url_path, fingerprints)
}

/// [`confine_optional`] refusing the `private` paths too.
pub(crate) fn confine_optional_in(
    root: &Path,
    private: &PrivateSet,
    url_path: &str,
    fingerprints: &Fingerprints,
) -> Result<ConfinedPath, ProviderError> {
    match confine_in(root, private, url_path, fingerprints) {
        Err(ProviderError::NotFound(_)) => confine_missing(root, private, url_path, fingerprints),
        other => other,
    }
}

fn confine_missing(
    root: &Path,
    private: &PrivateSet,
    url_path: &str,
    fingerprints: &Fingerprints,
) -> Result<ConfinedPath, ProviderError> {
    let not_found = || ProviderError::NotFound(url_path.to_string());
    let decoded = percent_encoding::percent_decode_str(url_path)
        .decode_utf8()
        .map_err(|_| not_found())?;
    let joined = joined(root, &decoded, url_path)?;
    let (Some(name), Some(parent)) = (joined.file_name(), joined.parent()) else {
        return Err(not_found());
    };
    // Something there that confinement refused (a dangling or looping
    // link, the site configuration) stays refused.
    if is_site_config(&joined)
        || private.contains(&joined)
        || std::fs::symlink_metadata(&joined).is_ok()
    {
        return Err(not_found());
    }
    let dir = fingerprints.canonicalize(parent).map_err(|_| not_found())?;
    if !dir.is_dir() || private.contains(&dir) {
        return Err(not_found());
    }
    unread(root, dir.join(name), url_path)
}

/// A path under `root` that is never read through (a missing name, a
/// generated document's URL): its root-relative and URL forms.
fn unread(root: &Path, abs: PathBuf, url_path: &str) -> Result<ConfinedPath, ProviderError> {
    let Ok(inside) = abs.strip_prefix(root) else {
        return Err(ProviderError::Outside(url_path.to_string()));
    };
    let rel = rel_of(inside);
    let url = url_of(inside, &rel);
    Ok(ConfinedPath {
        abs,
        rel,
        url,
        named: Named(None),
        missing: true,
    })
}

/// Confines a URL that libxml2 built for a load to `root`.
///
/// Documents and stylesheets are given root-relative base URLs
/// (`/articles/a.xml`), so the URLs libxml2 builds are root-relative paths
/// too (percent-encoded, possibly as `file:///...`): they are resolved
/// under the root, never against the filesystem's `/`. An absolute
/// filesystem path that lies under the root is also accepted. Other
/// schemes and relative URLs are refused.
pub fn confine_url(
    root: &Path,
    url: &str,
    fingerprints: &Fingerprints,
) -> Result<ConfinedPath, ProviderError> {
    confine_url_in(root, &PrivateSet::NONE, url, fingerprints)
}

/// [`confine_url`] refusing the `private` paths too.
pub(crate) fn confine_url_in(
    root: &Path,
    private: &PrivateSet,
    url: &str,
    fingerprints: &Fingerprints,
) -> Result<ConfinedPath, ProviderError> {
    let rel = url_path(root, url)?;
    confine_decoded(root, private, &rel, url, fingerprints)
}

/// Where the file a load's URL names would be under `root`, with no
/// symlink resolved and nothing checked on disk: for a load that found no
/// file, the path whose appearance changes its output. `None` for a URL
/// [`confine_url`] refuses outright.
pub fn lexical_url_path(root: &Path, url: &str) -> Option<PathBuf> {
    let rel = url_path(root, url).ok()?;
    joined(root, &rel, url).ok()
}

/// A load's URL as a decoded root-relative path (see [`confine_url`]).
fn url_path(root: &Path, url: &str) -> Result<String, ProviderError> {
    let path = if let Some(rest) = url.strip_prefix("file://") {
        // file:///path or file://localhost/path
        rest.strip_prefix("localhost").unwrap_or(rest)
    } else if url.contains("://") || url.starts_with("file:") {
        return Err(ProviderError::Outside(format!(
            "{url} (only files under the root may be read)"
        )));
    } else {
        url
    };
    if !path.starts_with('/') {
        return Err(ProviderError::Outside(url.to_string()));
    }
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .map_err(|_| ProviderError::NotFound(url.to_string()))?;
    Ok(match Path::new(decoded.as_ref()).strip_prefix(root) {
        Ok(inside) => format!("/{}", inside.display()),
        Err(_) => decoded.into_owned(),
    })
}

/// The site configuration's file name. No file of that name, nor any
/// name that leads to one, is ever read through confinement: not as a
/// document, a static file, a stylesheet, an entity, an XInclude or a
/// `document()`.
pub const SITE_CONFIG_NAME: &str = "axle.toml";

fn is_site_config(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name.eq_ignore_ascii_case(SITE_CONFIG_NAME))
}

/// `root` joined with a decoded path's parts, before any symlink is
/// resolved; `..` (and NUL or `\\`) refused.
fn joined(root: &Path, decoded: &str, original: &str) -> Result<PathBuf, ProviderError> {
    if decoded.contains('\0') || decoded.contains('\\') {
        return Err(ProviderError::Outside(original.to_string()));
    }
    // `root.join(rel)`, with `rel` the normal components, built in place.
    let mut path = PathBuf::with_capacity(root.as_os_str().len() + decoded.len() + 1);
    path.push(root);
    let mut any = false;
    for component in Path::new(decoded).components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(part) => {
                path.push(part);
                any = true;
            }
            Component::ParentDir | Component::Prefix(_) => {
                return Err(ProviderError::Outside(original.to_string()));
            }
        }
    }
    if !any {
        // What joining an empty path does: a trailing separator.
        path.push("");
    }
    Ok(path)
}

fn confine_decoded(
    root: &Path,
    private: &PrivateSet,
    decoded: &str,
    original: &str,
    fingerprints: &Fingerprints,
) -> Result<ConfinedPath, ProviderError> {
    let joined = joined(root, decoded, original)?;
    let abs = match fingerprints.canonicalize(&joined) {
        Ok(abs) => abs,
        Err(_) => return Err(ProviderError::NotFound(original.to_string())),
    };
    let Ok(inside) = abs.strip_prefix(root) else {
        return Err(ProviderError::Outside(original.to_string()));
    };
    // Nearly always no link was on the way: the canonical path is the
    // joined one, byte for byte, and is checked once (the checks cost
    // ~900 instructions a path, five paths an uncached trivial render).
    let same = joined.as_os_str() == abs.as_os_str();
    if is_site_config(&joined)
        || private.contains(&joined)
        || (!same && (is_site_config(&abs) || private.contains(&abs)))
    {
        return Err(ProviderError::NotFound(original.to_string()));
    }
    let rel = rel_of(inside);
    let url = url_of(inside, &rel);
    let named = Named((!same && joined != abs).then(|| Arc::from(joined)));
    Ok(ConfinedPath {
        abs,
        rel,
        url,
        named,
        missing: false,
    })
}

/// The path a document produced at request time (a dynamic source: a
/// request body, a program's output, an upstream's answer) is rendered
/// as: `url_path` (percent-encoded, as a request names it) under the root,
/// whether or not a file is there. It gives the document its base URL, so
/// its relative hrefs resolve as a file's at that URL would; it is never
/// read. `..`, NUL and backslashes are refused as [`confine`] refuses
/// them.
pub fn generated_path(root: &Path, url_path: &str) -> Result<ConfinedPath, ProviderError> {
    let decoded = percent_encoding::percent_decode_str(url_path)
        .decode_utf8()
        .map_err(|_| ProviderError::NotFound(url_path.to_string()))?;
    // Never read through: the document's bytes come with it.
    unread(root, joined(root, &decoded, url_path)?, url_path)
}

/// `inside` (a path under the root) as a root-relative path: `/` and its
/// text, without the formatting machinery for the usual UTF-8 path (an
/// uncached render confines the document and each stylesheet).
fn rel_of(inside: &Path) -> String {
    match inside.to_str() {
        Some(text) => {
            let mut rel = String::with_capacity(text.len() + 1);
            rel.push('/');
            rel.push_str(text);
            rel
        }
        None => format!("/{}", inside.display()),
    }
}

/// The URL path of `inside` (a path under the root, as `rel` shows it):
/// each component percent-encoded as a URL segment. Most paths have no
/// byte a segment encodes, and then the URL is `rel` itself (an uncached
/// render confines every stylesheet it names, so this runs several times
/// per render).
fn url_of(inside: &Path, rel: &str) -> String {
    if rel
        .bytes()
        .all(|b| b == b'/' || NEVER_ENCODED[usize::from(b)])
    {
        return rel.to_string();
    }
    encoded_url_of(inside)
}

fn encoded_url_of(inside: &Path) -> String {
    let url: Vec<String> = inside
        .components()
        .map(|c| {
            percent_encoding::utf8_percent_encode(&c.as_os_str().to_string_lossy(), SEGMENT)
                .to_string()
        })
        .collect();
    format!("/{}", url.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Confinement with a memo that has no watcher (plain `realpath`).
    fn confine_plain(root: &Path, url_path: &str) -> Result<ConfinedPath, ProviderError> {
        confine(root, url_path, &Fingerprints::new(16))
    }

    /// The site configuration is never confined to, by its name in any
    /// case, in any directory, nor through a link to it; a link named
    /// `axle.toml` to another file is refused too.
    #[test]
    fn the_site_configuration_is_never_confined_to() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("axle.toml"), "x").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/AXLE.TOML"), "x").unwrap();
        std::fs::write(root.join("page.xml"), "<a/>").unwrap();
        std::os::unix::fs::symlink(root.join("axle.toml"), root.join("cfg.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("page.xml"), root.join("sub/axle.toml")).unwrap();
        for url in ["/axle.toml", "/sub/AXLE.TOML", "/cfg.txt", "/sub/axle.toml"] {
            assert!(
                matches!(confine_plain(&root, url), Err(ProviderError::NotFound(_))),
                "{url}: {:?}",
                confine_plain(&root, url)
            );
        }
        assert!(confine_plain(&root, "/page.xml").is_ok());
        assert!(matches!(
            confine_url_plain(&root, "file:///axle.toml"),
            Err(ProviderError::NotFound(_))
        ));
    }

    /// The private set is refused as `axle.toml` is, under every
    /// spelling: percent-encoded, dotted, `file:///`, absolute, a link
    /// into it, a link inside it, a missing name in it; its neighbours
    /// are not.
    #[test]
    fn the_private_set_is_refused_under_every_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("db")).unwrap();
        std::fs::write(root.join("db/x.xml"), "<x/>").unwrap();
        std::fs::write(root.join("dbx.xml"), "<x/>").unwrap();
        std::fs::write(root.join("public.xml"), "<x/>").unwrap();
        std::os::unix::fs::symlink("db", root.join("alias")).unwrap();
        std::os::unix::fs::symlink("db/x.xml", root.join("link.xml")).unwrap();
        std::os::unix::fs::symlink("../public.xml", root.join("db/out.xml")).unwrap();
        let private = PrivateSet::new([root.join("db")]);
        let f = Fingerprints::new(16);
        for url in [
            "/db/x.xml",
            "/d%62/x.xml",
            "/./db//x.xml",
            "/alias/x.xml",
            "/link.xml",
            "/db/out.xml",
            "/db",
        ] {
            assert!(
                matches!(
                    confine_in(&root, &private, url, &f),
                    Err(ProviderError::NotFound(_))
                ),
                "{url}"
            );
            // Without the set, each is a file (or the directory) there.
            assert!(confine(&root, url, &f).is_ok(), "{url}");
        }
        let abs = root.join("db/x.xml").display().to_string();
        for url in ["file:///db/x.xml", "file:///d%62/x.xml", abs.as_str()] {
            assert!(
                matches!(
                    confine_url_in(&root, &private, url, &f),
                    Err(ProviderError::NotFound(_))
                ),
                "{url}"
            );
        }
        assert!(matches!(
            confine_optional_in(&root, &private, "/db/new.xml", &f),
            Err(ProviderError::NotFound(_))
        ));
        assert!(matches!(
            confine_optional_in(&root, &private, "/alias/new.xml", &f),
            Err(ProviderError::NotFound(_))
        ));
        for url in ["/dbx.xml", "/public.xml"] {
            assert!(confine_in(&root, &private, url, &f).is_ok(), "{url}");
        }
    }

    fn confine_url_plain(root: &Path, url: &str) -> Result<ConfinedPath, ProviderError> {
        confine_url(root, url, &Fingerprints::new(16))
    }

    #[test]
    fn a_backslash_or_a_nul_alone_is_refused_even_where_such_a_file_exists() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a\\b.xml"), "x").unwrap();
        for url in ["/a%5Cb.xml", "/a%00b.xml"] {
            assert!(
                matches!(confine_plain(&root, url), Err(ProviderError::Outside(_))),
                "{url}"
            );
        }
    }

    #[test]
    fn urls_with_a_scheme_are_refused_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("x:/y")).unwrap();
        std::fs::write(root.join("x:/y/z.xml"), "z").unwrap();
        // Anything with a scheme but file: is refused outright, even when
        // it also reads as a path under the root, and says why.
        for url in ["http://host/a.xml", "/x://y/z.xml", "file:/etc/passwd"] {
            match confine_url_plain(&root, url) {
                Err(ProviderError::Outside(why)) => {
                    assert!(why.contains("only files under the root"), "{url}: {why}")
                }
                other => panic!("{url}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_path_through_a_symlink_keeps_the_name_it_was_reached_by() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("v1")).unwrap();
        std::fs::write(root.join("v1/a.xsl"), "x").unwrap();
        std::os::unix::fs::symlink("v1", root.join("current")).unwrap();
        let linked = confine_plain(&root, "/current/a.xsl").unwrap();
        assert_eq!(linked.as_path(), root.join("v1/a.xsl"));
        assert_eq!(
            linked.named().map(|p| p.to_path_buf()),
            Some(root.join("current/a.xsl"))
        );
        let dep = linked.dep(crate::cache::ContentHash::of(b"x"));
        assert_eq!(dep.named_path(), root.join("current/a.xsl"));
        // A canonical name needs no second name; both are one path.
        let direct = confine_plain(&root, "/v1/a.xsl").unwrap();
        assert_eq!(direct.named(), None);
        assert_eq!(direct, linked);
        let via_url = confine_url_plain(&root, "file:///current/a.xsl").unwrap();
        assert!(via_url.named().is_some());
    }

    fn site() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.xml"), "<a/>").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "secret").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("out.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("sub/a.xml"), root.join("in.xml")).unwrap();
        let root = root.canonicalize().unwrap();
        (dir, root)
    }

    #[test]
    fn the_lexical_path_of_a_load_is_under_the_root_or_none() {
        let root = Path::new("/srv/site");
        let at = |url: &str| lexical_url_path(root, url);
        assert_eq!(at("/a/b.xml"), Some(root.join("a/b.xml")));
        assert_eq!(at("file:///a/b.xml"), Some(root.join("a/b.xml")));
        assert_eq!(at("/srv/site/a/./b.xml"), Some(root.join("a/b.xml")));
        assert_eq!(at("/%61.xml"), Some(root.join("a.xml")));
        assert_eq!(at("/a/../../etc/passwd"), None);
        assert_eq!(at("http://example.org/x.xml"), None);
        assert_eq!(at("relative.xml"), None);
    }

    #[test]
    fn kept_is_exactly_what_segment_leaves_alone() {
        for b in 0u8..128 {
            let c = char::from(b).to_string();
            let kept = percent_encoding::utf8_percent_encode(&c, SEGMENT).to_string() == c;
            assert_eq!(kept, b.is_ascii_alphanumeric() || KEPT.contains(&b), "{b}");
        }
        for b in 0u8..=255 {
            let want = b.is_ascii_alphanumeric() || KEPT.contains(&b);
            assert_eq!(NEVER_ENCODED[usize::from(b)], want, "{b}");
        }
    }

    #[test]
    fn the_fast_path_takes_normal_paths_only() {
        for p in ["/", "/a", "/a/", "/articles/xml-pipelines.xml", "/a.b/c~d/"] {
            assert!(is_normal(p), "{p}");
        }
        for p in [
            "", "a", "//", "/a//", "/./", "/a/..", "/a/.", "/a b", "/%41", "/a//b",
        ] {
            assert!(!is_normal(p), "{p}");
        }
    }

    proptest::proptest! {
        #[test]
        fn the_plain_path_shortcut_gives_the_encoded_url(
            parts in proptest::collection::vec("[a-zA-Z0-9 %é~._@:+-]{1,5}", 0..4)
        ) {
            let parts: Vec<String> = parts.into_iter().filter(|p| p != "." && p != "..").collect();
            let inside: PathBuf = parts.iter().collect();
            let rel = format!("/{}", inside.display());
            proptest::prop_assert_eq!(&rel_of(&inside), &rel);
            proptest::prop_assert_eq!(url_of(&inside, &rel), encoded_url_of(&inside));
        }

        #[test]
        fn the_fast_path_agrees_with_the_full_normalization(raw in "[/a.%2fF~@:é_ ?-]{0,12}") {
            let slow = normalize_slow(&raw);
            if is_normal(&raw) {
                let fast = normalize_request_path(&raw).unwrap();
                let slow = slow.unwrap();
                proptest::prop_assert_eq!(&fast.decoded, &slow.decoded);
                proptest::prop_assert_eq!(&fast.url, &slow.url);
                proptest::prop_assert_eq!(fast.trailing_slash, slow.trailing_slash);
            }
        }
    }

    #[test]
    fn joined_is_the_root_joined_with_the_normal_components() {
        let root = Path::new("/srv/site");
        for (decoded, rel) in [
            ("/", ""),
            ("", ""),
            ("/./", ""),
            ("/a/b.xml", "a/b.xml"),
            ("a//./b/", "a/b"),
            ("/é x/y", "é x/y"),
        ] {
            let got = joined(root, decoded, decoded).unwrap();
            assert_eq!(got.as_os_str(), root.join(rel).as_os_str(), "{decoded:?}");
        }
        assert!(joined(root, "/a/../b", "/a/../b").is_err());
    }

    #[test]
    fn a_path_that_is_not_utf8_is_shown_as_display_shows_it() {
        use std::os::unix::ffi::OsStrExt;
        let inside = Path::new(std::ffi::OsStr::from_bytes(b"a/b\xff.xml"));
        assert_eq!(rel_of(inside), format!("/{}", inside.display()));
        assert_eq!(rel_of(inside), "/a/b\u{fffd}.xml");
    }

    #[test]
    fn inside_paths_are_confined() {
        let (_d, root) = site();
        let p = confine_plain(&root, "/sub/a.xml").unwrap();
        assert_eq!(p.rel(), "/sub/a.xml");
        assert_eq!(confine_plain(&root, "/sub/%61.xml").unwrap(), p);
        assert_eq!(confine_plain(&root, "/./sub//a.xml").unwrap(), p);
        assert_eq!(
            confine_plain(&root, "/in.xml").unwrap(),
            p,
            "a symlink inside the root is fine"
        );
        assert_eq!(confine_plain(&root, "/").unwrap().rel(), "/");
    }

    #[test]
    fn request_paths_have_one_spelling() {
        let n = |p: &str| {
            normalize_request_path(p).map(|r| (r.decoded.into_owned(), r.url.into_owned()))
        };
        let want = Some((
            "/larry/moe/x.xml".to_string(),
            "/larry/moe/x.xml".to_string(),
        ));
        for spelling in [
            "/larry/moe/x.xml",
            "//larry/./moe//x.xml",
            "/%6Carry/mo%65/x.xml",
            "/larry%2Fmoe/x.xml",
        ] {
            assert_eq!(n(spelling), want, "{spelling}");
        }
        assert_eq!(
            n("/a%20b/"),
            Some(("/a b/".to_string(), "/a%20b/".to_string()))
        );
        assert_eq!(n("/"), Some(("/".to_string(), "/".to_string())));
        assert_eq!(n("//"), Some(("/".to_string(), "/".to_string())));
        assert!(normalize_request_path("/a/./").unwrap().trailing_slash);
        for bad in ["/../x", "/a/%2e%2e/x", "/a%00", "/a%5cb", "/%ff"] {
            assert_eq!(n(bad), None, "{bad}");
        }
    }

    #[test]
    fn url_round_trips_names_with_percent_and_spaces() {
        let (_d, root) = site();
        std::fs::write(root.join("100% a#b.xml"), "<a/>").unwrap();
        let p = confine_plain(&root, "/100%25%20a%23b.xml").unwrap();
        assert_eq!(p.rel(), "/100% a#b.xml");
        assert_eq!(p.url(), "/100%25%20a%23b.xml");
        assert_eq!(confine_plain(&root, p.url()).unwrap(), p);
    }

    #[test]
    fn traversal_variants_are_refused() {
        let (_d, root) = site();
        for bad in [
            "/../secret.txt",
            "/sub/../../secret.txt",
            "/%2e%2e/secret.txt",
            "/%2E%2E%2fsecret.txt",
            "/sub/%2e%2e/%2e%2e/secret.txt",
            "/out.txt",
            "/sub/a.xml%00.txt",
            "/..%5csecret.txt",
            "/%ff%fe",
        ] {
            let err = confine_plain(&root, bad).unwrap_err();
            assert!(
                matches!(err, ProviderError::Outside(_) | ProviderError::NotFound(_)),
                "{bad}: {err:?}"
            );
        }
        assert!(matches!(
            confine_plain(&root, "/out.txt"),
            Err(ProviderError::Outside(_))
        ));
        assert!(matches!(
            confine_plain(&root, "/nope.xml"),
            Err(ProviderError::NotFound(_))
        ));
    }

    #[test]
    fn load_urls_are_confined() {
        let (dir, root) = site();
        let inside = root.join("sub/a.xml");
        assert_eq!(
            confine_url_plain(&root, inside.to_str().unwrap())
                .unwrap()
                .rel(),
            "/sub/a.xml"
        );
        assert_eq!(
            confine_url_plain(&root, &format!("file://{}", inside.display()))
                .unwrap()
                .rel(),
            "/sub/a.xml"
        );
        assert_eq!(
            confine_url_plain(&root, "/sub/a.xml").unwrap().rel(),
            "/sub/a.xml",
            "root-relative"
        );
        assert_eq!(
            confine_url_plain(&root, "file:///sub/%61.xml")
                .unwrap()
                .rel(),
            "/sub/a.xml"
        );
        for bad in [
            "/etc/passwd".to_string(),
            "file:///etc/passwd".to_string(),
            "sub/a.xml".to_string(),
            "/../secret.txt".to_string(),
            "http://127.0.0.1/x.xml".to_string(),
            dir.path().join("secret.txt").display().to_string(),
            format!("{}/../secret.txt", root.display()),
            root.join("out.txt").display().to_string(),
        ] {
            assert!(confine_url_plain(&root, &bad).is_err(), "{bad}");
        }
    }

    /// A Language whose resource is optional may name no file: confined
    /// as a missing name in a confined directory, never read through, and
    /// refused where confinement refuses (the site configuration, a
    /// dangling link, a directory outside the root, no directory at all).
    #[test]
    fn an_optional_path_naming_no_file_is_a_missing_name_in_a_confined_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::write(root.join("there.txt"), "x").unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink("nowhere", root.join("dangling")).unwrap();
        let f = Fingerprints::new(16);
        let optional = |url: &str| confine_optional(&root, url, &f);

        let there = optional("/there.txt").unwrap();
        assert!(!there.is_missing());
        let missing = optional("/sub/new%20file.py").unwrap();
        assert!(missing.is_missing());
        assert_eq!(missing.as_path(), root.join("sub/new file.py"));
        assert_eq!(missing.rel(), "/sub/new file.py");
        assert_eq!(missing.url(), "/sub/new%20file.py");

        for url in ["/axle.toml", "/sub/AXLE.TOML", "/dangling", "/no/dir/x.py"] {
            assert!(
                matches!(optional(url), Err(ProviderError::NotFound(_))),
                "{url}: {:?}",
                optional(url)
            );
        }
        assert!(
            matches!(optional("/out/x.py"), Err(ProviderError::Outside(_))),
            "{:?}",
            optional("/out/x.py")
        );
        assert!(matches!(optional("/../x"), Err(ProviderError::Outside(_))));

        // A file appearing later (here, a link out of the root) is not
        // read through the missing name.
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("sub/new file.py"))
            .unwrap();
        std::fs::write(dir.path().join("secret"), "outside").unwrap();
        let files = crate::provider::FileProvider::new(&root, f.clone()).unwrap();
        assert!(matches!(
            files.resolver().read_recorded(&missing),
            Err(ProviderError::NotFound(_))
        ));
    }
}
