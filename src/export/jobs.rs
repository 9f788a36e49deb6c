//! What `axle build` asks the server for: one job per URL of the root (a
//! document, each of its styles and reachable media variants, a directory's
//! index and listing, a static file), found by walking the root as the
//! server's locations see it. Pure planning: nothing is requested here.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::http::App;

use super::naming::file_safe;
use super::{ExportError, io};

/// One URL to export.
#[derive(Debug, Clone)]
pub(super) struct Job {
    /// Percent-encoded URL path and query.
    pub(super) url: String,
    /// The URL path alone (for the provider and the location).
    pub(super) path: String,
    /// The output file's name before its extension (documents) or in full
    /// (static files).
    pub(super) base: String,
    pub(super) kind: Kind,
}

impl Job {
    /// What the job is known by in the state, the report and the progress
    /// lines: its URL, and the media of a media variant.
    pub(super) fn id(&self) -> String {
        match &self.kind {
            Kind::Document {
                media: Some(media), ..
            } => format!("{} [media={media}]", self.url),
            _ => self.url.clone(),
        }
    }

    pub(super) fn media(&self) -> Option<&str> {
        match &self.kind {
            Kind::Document { media, .. } => media.as_deref(),
            Kind::Static(_) => None,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) enum Kind {
    /// A document (or a directory listing), with the style asked for and
    /// the media it is rendered for (None: what a request with no headers
    /// gets).
    Document {
        style: Option<String>,
        media: Option<String>,
    },
    /// A static file at this path.
    Static(PathBuf),
}

/// URL-path characters left as they are (RFC 3986's unreserved); the rest
/// are percent-encoded.
const PATH_SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub(super) fn encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, PATH_SET).to_string()
}

/// The jobs for every file under `dir` (`rel` components joined by `/`).
pub(super) fn walk(
    app: &App,
    root: &Path,
    dir: &Path,
    jobs: &mut Vec<Job>,
) -> Result<(), ExportError> {
    let site = app.site();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if site.source() == Some(path.as_path())
            || path == root.join(crate::http::CONFIG_FILE)
            || site.is_private(&path)
        {
            // Never exported, nor named: what `serve` refuses (a link to
            // such a file is refused by the server when asked).
            continue;
        }
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        let rel_parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let rel_text = rel_parts.join("/");
        let url_path = format!(
            "/{}",
            rel_parts
                .iter()
                .map(|p| encode(p))
                .collect::<Vec<_>>()
                .join("/")
        );
        let file_type = entry.file_type().map_err(io(&path))?;
        let is_dir = if file_type.is_symlink() {
            // A link to a directory could loop: not followed.
            if path.is_dir() {
                continue;
            }
            false
        } else {
            file_type.is_dir()
        };
        if site.location(&format!("/{rel_text}")).source.is_some() {
            continue;
        }
        if is_dir {
            let dir_url = format!("{url_path}/");
            if site.location(&format!("/{rel_text}/")).directories {
                jobs.push(listing_job(dir_url, format!("{rel_text}/index")));
            }
            walk(app, root, &path, jobs)?;
            continue;
        }
        let is_xml = Path::new(name)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("xml"));
        if !is_xml {
            jobs.push(Job {
                url: url_path.clone(),
                path: url_path,
                base: rel_text,
                kind: Kind::Static(path),
            });
            continue;
        }
        let mut urls = vec![(url_path.clone(), rel_text.clone())];
        // A directory's index document is also the directory's page.
        let parent = &rel_parts[..rel_parts.len() - 1];
        let dir_rel = parent.join("/");
        let dir_url = if parent.is_empty() {
            String::from("/")
        } else {
            format!(
                "/{}/",
                parent
                    .iter()
                    .map(|p| encode(p))
                    .collect::<Vec<_>>()
                    .join("/")
            )
        };
        let dir_location = site.location(&format!(
            "/{dir_rel}{}",
            if parent.is_empty() { "" } else { "/" }
        ));
        if dir_location.index.as_deref() == Some(name) && !dir_location.directories {
            let stem = Path::new(name)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let base = if dir_rel.is_empty() {
                stem
            } else {
                format!("{dir_rel}/{stem}")
            };
            urls.push((dir_url, base));
        }
        let (styles, media) = variants_of(&path, &site.location(&format!("/{rel_text}")));
        for (url, base) in urls {
            jobs.push(Job {
                url: url.clone(),
                path: url.clone(),
                base: base.clone(),
                kind: Kind::Document {
                    style: None,
                    media: None,
                },
            });
            // The variants at the document's own URL only.
            if base != rel_text {
                continue;
            }
            let medias = std::iter::once(None).chain(media.iter().map(Some));
            for m in medias {
                let media_base = match m {
                    Some(m) => format!("{base}.media-{}", file_safe(m)),
                    None => base.clone(),
                };
                if m.is_some() {
                    jobs.push(Job {
                        url: url.clone(),
                        path: url.clone(),
                        base: media_base.clone(),
                        kind: Kind::Document {
                            style: None,
                            media: m.cloned(),
                        },
                    });
                }
                for style in &styles {
                    let named = format!("{base}.{}", file_safe(style));
                    jobs.push(Job {
                        url: format!("{url}?style={}", encode(style)),
                        path: url.clone(),
                        base: match m {
                            Some(m) => format!("{named}.media-{}", file_safe(m)),
                            None => named,
                        },
                        kind: Kind::Document {
                            style: Some(style.clone()),
                            media: m.cloned(),
                        },
                    });
                }
            }
        }
    }
    Ok(())
}

/// A directory listing's job.
pub(super) fn listing_job(url: String, base: String) -> Job {
    Job {
        path: url.clone(),
        url,
        base,
        kind: Kind::Document {
            style: None,
            media: None,
        },
    }
}

/// A document's variants: the distinct titles of its stylesheet PIs
/// (first spelling), and the media other than `location`'s own that one
/// of its `media-rules` chooses and one of its PIs or the location's
/// processors names (a media no PI or processor names renders as the
/// location's own would, and one no rule chooses no client is given).
fn variants_of(path: &Path, location: &crate::site::Location) -> (Vec<String>, Vec<String>) {
    let Ok(bytes) = std::fs::read(path) else {
        return (Vec::new(), Vec::new());
    };
    let Ok(prolog) = crate::prolog::scan(&bytes) else {
        return (Vec::new(), Vec::new());
    };
    let mut seen = HashSet::new();
    let styles = prolog
        .stylesheets
        .iter()
        .filter_map(|pi| pi.title.clone())
        .filter(|t| seen.insert(t.to_ascii_lowercase()))
        .collect();
    let mut media: Vec<String> = Vec::new();
    for rule in &location.media_rules {
        let m = &rule.media;
        if *m == location.media || media.contains(m) {
            continue;
        }
        let named = prolog
            .stylesheets
            .iter()
            .any(|pi| crate::chain::names_media(pi, m))
            || location
                .processors
                .iter()
                .any(|p| p.when.media.as_deref() == Some(m.as_str()));
        if named {
            media.push(m.clone());
        }
    }
    (styles, media)
}
