//! Directory listings as documents (AxKit's `AxHandleDirs`): a `filelist`
//! in AxKit's namespace, which then goes through the location's processors,
//! or, where the location has none, through Axle's built-in listing
//! stylesheet (`stylesheets/listing.xsl`) into a page with the built-in
//! look; `?passthru=1` gives the filelist itself.
//!
//! A listing names only what a request for it would be answered with: each
//! entry is asked of the same code that serves URLs ([`served`]:
//! confinement and the private set, `SiteConfig::is_private`, the
//! location's `private` and dynamic source, a directory's index or
//! listing), so `axle.toml`, `esql` databases, program files, private
//! locations and dot-files are never listed, and every link answers.

use std::os::unix::fs::MetadataExt;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::builtin::BuiltIn;
use super::{App, HttpError};
use crate::provider::{ConfinedPath, Provider, ResourceKind, normalize_request_path};
use crate::site::SiteConfig;

/// What a name's URL segment escapes: everything but RFC 3986's
/// unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Whether the entry `name` of the directory at URL path `dir_url` (with
/// its trailing `/`) is answered by this server: what [`super::respond`]
/// would do for its URL, asked of the same functions, short of rendering.
pub(super) fn served(
    app: &App,
    site: &SiteConfig,
    dir_url: &str,
    name: &str,
    is_dir: bool,
) -> bool {
    let url = format!(
        "{dir_url}{}{}",
        utf8_percent_encode(name, SEGMENT),
        if is_dir { "/" } else { "" }
    );
    let Some(normal) = normalize_request_path(&url) else {
        return false;
    };
    let location = site.location(&normal.decoded);
    if location.private || location.source.is_some() {
        return false;
    }
    let provider = app.pipeline.provider();
    let Ok(located) = provider.locate(&normal.url) else {
        return false;
    };
    if site.is_private(located.path.as_path()) {
        return false;
    }
    match located.kind {
        ResourceKind::File => !is_dir,
        ResourceKind::Directory if !is_dir => false,
        ResourceKind::Directory => {
            location.directories
                || location.index.as_deref().is_some_and(|index| {
                    provider
                        .locate(&format!("{}{index}", normal.url))
                        .is_ok_and(|l| {
                            l.kind == ResourceKind::File && !site.is_private(l.path.as_path())
                        })
                })
        }
    }
}

/// The listing page for the directory at URL path `url` from its filelist
/// `listing`, through the built-in stylesheet (on the blocking pool), in
/// the built-in page shell; `raw` says whether `?passthru=1` is offered.
/// Not cached: a listing changes with the directory's entries, which no
/// content hash covers.
pub(super) async fn page(url: &str, listing: Bytes, raw: bool) -> Result<Response, HttpError> {
    let shown = percent_encoding::percent_decode_str(url)
        .decode_utf8_lossy()
        .into_owned();
    let params = vec![
        ("path".to_string(), shown.clone()),
        ("raw".to_string(), if raw { "1" } else { "" }.to_string()),
    ];
    let rendered = tokio::task::spawn_blocking(move || BuiltIn::Listing.render(&listing, &params))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r);
    let body = rendered.map_err(|detail| {
        tracing::error!(error = %detail, "the directory listing failed");
        HttpError::Render {
            title: "Listing failed",
            detail: "the built-in listing stylesheet failed (the log says why)".into(),
        }
    })?;
    let body = String::from_utf8_lossy(&body);
    let html = super::look::page(&format!("Index of {shown}"), &body);
    let mut response = (StatusCode::OK, html).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// AxKit's filelist namespace.
pub const FILELIST_NS: &str = "http://axkit.org/2002/filelist";

/// The `filelist` document for a directory: one `<directory>` or `<file>`
/// per entry that `served(name, is_directory)` accepts (dotfiles left out
/// first), sorted by name, with `name`, `size`,
/// `mtime` (Unix seconds), `readable`, `writable`, `executable` (`1` or
/// absent: the owner's permission bits) and, for files, `type` (the MIME
/// type guessed from the name). AxKit also gave `atime` and `ctime`; they
/// are left out because reading a file changes its `atime`, which would
/// change the listing (and its cache key) on every request.
pub fn listing(
    dir: &ConfinedPath,
    root: &std::path::Path,
    served: impl Fn(&str, bool) -> bool,
) -> std::io::Result<Bytes> {
    let mut entries: Vec<(String, std::fs::Metadata)> = std::fs::read_dir(dir.as_path())?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            // Follow symlinks for metadata, but list only what stays inside
            // the root: a link leading out is not shown at all.
            let target = e.path().canonicalize().ok()?;
            if !target.starts_with(root) {
                return None;
            }
            if name.starts_with('.') {
                return None;
            }
            let meta = std::fs::metadata(&target).ok()?;
            served(&name, meta.is_dir()).then_some((name, meta))
        })
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out =
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<filelist xmlns=\"{FILELIST_NS}\">\n");
    for (name, meta) in entries {
        let kind = if meta.is_dir() { "directory" } else { "file" };
        let mode = meta.mode();
        let flag = |bit: u32, attr: &str| {
            if mode & bit != 0 {
                format!(" {attr}=\"1\"")
            } else {
                String::new()
            }
        };
        let mime = if meta.is_dir() {
            String::new()
        } else {
            format!(
                " type=\"{}\"",
                super::escape_markup(
                    mime_guess::from_path(&name)
                        .first_or_octet_stream()
                        .essence_str()
                )
            )
        };
        out.push_str(&format!(
            "  <{kind} name=\"{}\" size=\"{}\" mtime=\"{}\"{}{}{}{mime}/>\n",
            super::escape_markup(&name),
            meta.len(),
            meta.mtime(),
            flag(0o400, "readable"),
            flag(0o200, "writable"),
            flag(0o100, "executable"),
        ));
    }
    out.push_str("</filelist>\n");
    Ok(Bytes::from(out))
}
