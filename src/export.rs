//! `axle build`: a site rendered to static files, for a CDN or a mirror.
//!
//! It exists so that the static copy of a site cannot drift from what the
//! server sends: every file is the body of a GET sent through the very
//! handler `axle serve` runs ([`crate::http::router`] on a
//! [`Server`](crate::Server) built as `serve` builds it), with no
//! `Accept-Encoding`, so the bytes are the server's by construction.
//!
//! What is written, under OUT:
//! - every `.xml` document at its own URL, as `PATH` plus the extension of
//!   the content type it is served as (`articles/x.xml.html`; a document
//!   served as XML keeps its name, `feed.xml`); a directory's index
//!   document also at the directory's URL (`articles/` →
//!   `articles/index.html`);
//! - every style a document's `<?xml-stylesheet?>` PIs title (alternate or
//!   not) at `?style=NAME`, as `PATH.NAME.EXT` (`styles/index.xml.print.html`;
//!   characters other than ASCII letters, digits, `-` and `_` in NAME become
//!   `_`);
//! - every media variant a client can be given: for each media that one of
//!   the location's `media-rules` chooses (other than the location's own
//!   `media`) and that one of the document's PIs or the location's
//!   processors names, the page (and each style) as a client whose headers
//!   chose that media gets it, as `PATH[.NAME].media-MEDIA.EXT`
//!   (`a.xml.media-handheld.html`); its manifest entry has the same `url`
//!   and a `media` field;
//! - every directory listing (a location with `directories = true`) at its
//!   URL, as `DIR/index.EXT` (`docs/index.html`);
//! - every other file (CSS, images) as it is served, at its own path;
//! - `axle-manifest.json`: a JSON array of `{url, file, content_type}`, one
//!   per file written, sorted by URL;
//! - `.axle-build-state.json`: for each URL, the hash of the file written
//!   and every file its response was computed from with its content hash
//!   (the pipeline's validators, the same content hashes the server's cache
//!   keys use). A re-run renders a URL again only when one of those files
//!   changed, its output is missing or altered, or the site configuration
//!   or Axle's version changed; the others are kept.
//!
//! Skipped: `axle.toml`, dot-files and dot-directories, symbolic links to
//! directories, every location with a dynamic `provider` (its documents
//! exist only per request), and every page the server says is made per
//! request (`Cache-Control: no-store`: XSP pages, uncacheable stages).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::cache::ContentHash;
use crate::config::Freshness;
use crate::http::App;
use crate::provider::{Provider, ResourceKind};
use crate::server::{BuildError, Server};

mod naming;

use naming::{document_file, file_safe};

/// The manifest's name in the output directory.
pub const MANIFEST: &str = "axle-manifest.json";

/// The incremental state's name in the output directory.
pub const STATE: &str = ".axle-build-state.json";

/// What can stop a build (a page answering an error is not one of these:
/// it is listed in [`ExportError::Failed`] after every other page is done).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The server could not be built (the configuration, the root).
    #[error(transparent)]
    Build(#[from] BuildError),
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The output directory is inside the document root (its files would be
    /// walked, and served).
    #[error("the output directory {out} is inside the document root {root}")]
    OutInsideRoot {
        /// The output directory.
        out: PathBuf,
        /// The root.
        root: PathBuf,
    },
    /// The manifest or the state could not be written.
    #[error("{path}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// Some pages answered a non-2xx status (every other page was written).
    #[error("{} page(s) failed:\n{}", .0.len(), list_failures(.0))]
    Failed(Vec<Failure>),
}

fn list_failures(failures: &[Failure]) -> String {
    failures
        .iter()
        .map(|f| format!("  {} {}: {}", f.status, f.url, f.detail))
        .collect::<Vec<_>>()
        .join("\n")
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ExportError + '_ {
    move |source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A page that failed.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Its URL.
    pub url: String,
    /// The status it answered (0: it could not be written).
    pub status: u16,
    /// The first line of its body, or why it could not be written.
    pub detail: String,
}

/// One manifest entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Entry {
    /// The URL path (and `?style=NAME` for a style variant).
    pub url: String,
    /// The file, relative to the output directory, `/`-separated.
    pub file: String,
    /// The `Content-Type` the server sends.
    pub content_type: String,
    /// The media the page was rendered for, for a media variant (its URL is
    /// the page's own; a client's headers choose it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<String>,
}

/// What a build did.
#[derive(Debug, Default)]
pub struct Report {
    /// Every file written or kept.
    pub entries: Vec<Entry>,
    /// URLs rendered (requested) this run.
    pub rendered: Vec<String>,
    /// URLs whose file was kept from the previous run (nothing they came
    /// from changed).
    pub kept: Vec<String>,
    /// Dynamic locations (by prefix) and files not served, skipped.
    pub skipped: Vec<String>,
    /// Bytes of the files written this run.
    pub bytes: u64,
    /// Wall-clock time.
    pub elapsed: Duration,
}

/// The incremental state kept in [`STATE`].
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    /// The hash of Axle's version and the site configuration's bytes: when
    /// it differs, nothing is kept.
    site: String,
    pages: BTreeMap<String, PageState>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct PageState {
    file: String,
    content_type: String,
    /// The hash of the file's bytes (the response's body).
    body: String,
    /// Every file the response came from and its content hash; None: not
    /// known (always rendered again).
    deps: Option<Vec<(PathBuf, String)>>,
}

/// `axle build --root ROOT --out OUT`: builds the server as `axle serve`
/// does (the root's `axle.toml` loaded), exports it, prints progress and a
/// summary. Runs its own multi-threaded runtime.
pub fn command(root: &Path, out: &Path) -> Result<Report, ExportError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(io(out))?;
    runtime.block_on(async {
        // One build checks each file when asked (no watcher to set up).
        let server = Server::builder(root)
            .configure(|c| c.freshness = Freshness::Check)
            .build()?;
        let terminal = std::io::stderr().is_terminal();
        export(&server, out, terminal).await
    })
}

/// The summary on stdout: pages, bytes, errors, time, then what was skipped.
fn print_summary(report: &Report, errors: usize) {
    println!(
        "axle build: {} pages ({} rendered, {} kept), {} bytes written, {errors} errors, {:.2?}",
        report.entries.len(),
        report.rendered.len(),
        report.kept.len(),
        report.bytes,
        report.elapsed
    );
    for s in &report.skipped {
        println!("skipped {s}");
    }
}

/// One URL to export.
#[derive(Debug, Clone)]
struct Job {
    /// Percent-encoded URL path and query.
    url: String,
    /// The URL path alone (for the provider and the location).
    path: String,
    /// The output file's name before its extension (documents) or in full
    /// (static files).
    base: String,
    kind: Kind,
}

impl Job {
    /// What the job is known by in the state, the report and the progress
    /// lines: its URL, and the media of a media variant.
    fn id(&self) -> String {
        match &self.kind {
            Kind::Document {
                media: Some(media), ..
            } => format!("{} [media={media}]", self.url),
            _ => self.url.clone(),
        }
    }

    fn media(&self) -> Option<&str> {
        match &self.kind {
            Kind::Document { media, .. } => media.as_deref(),
            Kind::Static(_) => None,
        }
    }
}

#[derive(Debug, Clone)]
enum Kind {
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

/// What one job ended as.
enum Done {
    Written {
        entry: Entry,
        state: PageState,
        bytes: u64,
    },
    Kept(Entry, PageState),
    NotServed(String),
    Failed(Failure),
}

struct Ctx {
    app: Arc<App>,
    router: axum::Router,
    out: PathBuf,
    previous: BTreeMap<String, PageState>,
    /// Content hashes of files read this run (stylesheets are shared).
    hashes: Mutex<HashMap<PathBuf, ContentHash>>,
    /// Files claimed this run, with the URL and body hash that claimed them.
    claimed: Mutex<HashMap<String, (String, String)>>,
}

/// Exports `server`'s site into `out` (created if missing). Progress goes
/// to a bar on stderr when `terminal`, else one line per URL on stdout;
/// the summary to stdout.
/// Returns [`ExportError::Failed`] when any page answered a non-2xx status
/// (the other pages, the manifest and the state are written first).
pub async fn export(server: &Server, out: &Path, terminal: bool) -> Result<Report, ExportError> {
    let started = Instant::now();
    let app = Arc::clone(server.app());
    let site = app.site();
    let root = app.pipeline().provider().root().to_path_buf();
    std::fs::create_dir_all(out).map_err(io(out))?;
    let out = out.canonicalize().map_err(io(out))?;
    if out.starts_with(&root) {
        return Err(ExportError::OutInsideRoot { out, root });
    }

    let site_hash = {
        let mut text = format!("axle {}\n", env!("CARGO_PKG_VERSION")).into_bytes();
        if let Some(file) = site.source() {
            text.extend(std::fs::read(file).map_err(io(file))?);
        }
        ContentHash::of(&text).hex(32)
    };
    let state_path = out.join(STATE);
    let previous: State = std::fs::read(&state_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let mut previous_pages = if previous.site == site_hash {
        previous.pages
    } else {
        BTreeMap::new()
    };
    // The state is a file anyone with the folder may edit: a page whose
    // file is not a plain relative path inside it is forgotten, never
    // kept, never deleted.
    previous_pages.retain(|_, page| inside_out(&page.file).is_some());

    let mut report = Report::default();
    let dynamic = site.dynamic_prefixes();
    for prefix in &dynamic {
        report
            .skipped
            .push(format!("{prefix} (dynamic provider: request-time only)"));
    }
    let mut jobs = Vec::new();
    if site.location("/").directories {
        jobs.push(listing_job(String::from("/"), String::from("index")));
    }
    walk(&app, &root, &root, &mut jobs)?;

    let ctx = Arc::new(Ctx {
        router: crate::http::router(Arc::clone(&app)),
        app,
        out: out.clone(),
        previous: previous_pages.clone(),
        hashes: Mutex::default(),
        claimed: Mutex::default(),
    });
    let bar = terminal.then(|| {
        let bar = indicatif::ProgressBar::new(jobs.len() as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} pages  {per_sec}  ETA {eta}  {msg}",
        ) {
            bar.set_style(style);
        }
        bar
    });
    let parallel = std::thread::available_parallelism().map_or(4, |n| n.get()) * 2;
    let permits = Arc::new(tokio::sync::Semaphore::new(parallel));
    let mut set = tokio::task::JoinSet::new();
    for job in jobs {
        let ctx = Arc::clone(&ctx);
        let permits = Arc::clone(&permits);
        set.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let id = job.id();
            (id, run(&ctx, job).await)
        });
    }
    let mut failures = Vec::new();
    let mut pages: BTreeMap<String, PageState> = BTreeMap::new();
    while let Some(joined) = set.join_next().await {
        let (url, done) = match joined {
            Ok(pair) => pair,
            Err(e) => (
                String::from("?"),
                Done::Failed(Failure {
                    url: String::from("?"),
                    status: 0,
                    detail: e.to_string(),
                }),
            ),
        };
        let line = match done {
            Done::Written {
                entry,
                state,
                bytes,
            } => {
                report.bytes += bytes;
                report.rendered.push(url.clone());
                let line = format!("rendered {url} -> {}", entry.file);
                report.entries.push(entry);
                pages.insert(url.clone(), state);
                line
            }
            Done::Kept(entry, state) => {
                report.kept.push(url.clone());
                let line = format!("kept {url} -> {}", entry.file);
                report.entries.push(entry);
                pages.insert(url.clone(), state);
                line
            }
            Done::NotServed(why) => {
                let line = format!("skipped {url}: {why}");
                report.skipped.push(format!("{url} ({why})"));
                line
            }
            Done::Failed(f) => {
                let line = format!("FAILED {} {}: {}", f.status, f.url, f.detail);
                failures.push(f);
                line
            }
        };
        match &bar {
            Some(bar) => {
                bar.set_message(url);
                bar.inc(1);
            }
            None => println!("{line}"),
        }
    }
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }

    // Files of the previous run that no URL produced now are removed.
    let live: HashSet<&str> = pages.values().map(|p| p.file.as_str()).collect();
    for old in previous_pages.values() {
        if !live.contains(old.file.as_str()) {
            remove_inside(&out, &old.file);
        }
    }
    report
        .entries
        .sort_by(|a, b| (&a.url, &a.media).cmp(&(&b.url, &b.media)));
    report.rendered.sort();
    report.kept.sort();
    report.skipped.sort();
    write_json(&out, MANIFEST, &report.entries)?;
    write_json(
        &out,
        STATE,
        &State {
            site: site_hash,
            pages,
        },
    )?;
    report.elapsed = started.elapsed();
    print_summary(&report, failures.len());
    if failures.is_empty() {
        Ok(report)
    } else {
        failures.sort_by(|a, b| a.url.cmp(&b.url));
        Err(ExportError::Failed(failures))
    }
}

fn write_json(out: &Path, name: &str, value: &impl Serialize) -> Result<(), ExportError> {
    let path = out.join(name);
    let mut text = serde_json::to_vec_pretty(value).map_err(|source| ExportError::Json {
        path: path.clone(),
        source,
    })?;
    text.push(b'\n');
    write_inside(out, name, &text).map_err(io(&path))
}

/// `file` (a path the build writes, relative to the output folder) as
/// components that stay inside it: relative, no `..`, no `.`, not empty.
/// None for anything else (an edited state naming `../x` or `/tmp/x`).
fn inside_out(file: &str) -> Option<PathBuf> {
    let path = Path::new(file);
    let mut inside = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::Normal(name) => inside.push(name),
            _ => return None,
        }
    }
    (!inside.as_os_str().is_empty() && !file.contains('\0')).then_some(inside)
}

/// The directories on the way to `file` under `out` (canonical) exist as
/// real directories: a symlink there is replaced by a directory (never
/// followed out of the folder), anything else in the way is an error.
fn directories_inside(out: &Path, file: &Path) -> std::io::Result<PathBuf> {
    let mut dir = out.to_path_buf();
    let parts: Vec<_> = file.components().collect();
    let Some((_, parents)) = parts.split_last() else {
        return Err(std::io::Error::other("an empty file name"));
    };
    for part in parents {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                match std::fs::remove_file(&dir) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
                create_dir(&dir)?;
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(std::io::Error::other(format!(
                    "{} is in the way (not a directory)",
                    dir.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_dir(&dir)?,
            Err(e) => return Err(e),
        }
    }
    Ok(out.join(file))
}

/// Creates the directory `dir`; one another page's job made meanwhile (the
/// jobs run at once) is as good, when it is a real directory.
fn create_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            match std::fs::symlink_metadata(dir) {
                Ok(meta) if meta.is_dir() => Ok(()),
                _ => Err(e),
            }
        }
        other => other,
    }
}

/// Writes `bytes` to `file` (relative) inside `out` (canonical), never
/// through a symlink: into a new temporary file beside it (`create_new`
/// follows no link), renamed over the name, which replaces a link there
/// instead of writing to where it points.
fn write_inside(out: &Path, file: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    static UNIQUE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let rel = inside_out(file)
        .ok_or_else(|| std::io::Error::other(format!("{file} is not a path inside the output")))?;
    let target = directories_inside(out, &rel)?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = UNIQUE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = target.with_file_name(format!(".{name}.axle-{}-{n}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|mut f| f.write_all(bytes));
    match written.and_then(|()| std::fs::rename(&temp, &target)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Removes `file` (relative) inside `out` (canonical) when every
/// directory on its way is a real one there (a link on the way could lead
/// out of the folder); a link at the name itself is removed, not what it
/// points to.
fn remove_inside(out: &Path, file: &str) {
    let Some(rel) = inside_out(file) else {
        return;
    };
    let mut dir = out.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    if let Some((_, parents)) = parts.split_last() {
        for part in parents {
            dir.push(part);
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.is_dir() => {}
                _ => return,
            }
        }
    }
    let _ = std::fs::remove_file(out.join(rel));
}

/// URL-path characters left as they are (RFC 3986's unreserved); the rest
/// are percent-encoded.
const PATH_SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, PATH_SET).to_string()
}

/// The jobs for every file under `dir` (`rel` components joined by `/`).
fn walk(app: &App, root: &Path, dir: &Path, jobs: &mut Vec<Job>) -> Result<(), ExportError> {
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
fn listing_job(url: String, base: String) -> Job {
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

impl Ctx {
    /// The content hash of the file at `path` now (ABSENT when missing).
    fn hash_now(&self, path: &Path) -> ContentHash {
        if let Ok(map) = self.hashes.lock() {
            if let Some(h) = map.get(path) {
                return *h;
            }
        }
        let hash = std::fs::read(path).map_or(ContentHash::ABSENT, |b| ContentHash::of(&b));
        if let Ok(mut map) = self.hashes.lock() {
            map.insert(path.to_path_buf(), hash);
        }
        hash
    }

    /// The previous run's page for `url`, when nothing it came from changed
    /// and its file is still as written.
    fn unchanged(&self, url: &str) -> Option<&PageState> {
        let page = self.previous.get(url)?;
        let deps = page.deps.as_ref()?;
        let fresh = deps
            .iter()
            .all(|(path, hash)| self.hash_now(path).hex(32) == *hash);
        let written = std::fs::read(self.out.join(&page.file))
            .is_ok_and(|b| ContentHash::of(&b).hex(32) == page.body);
        (fresh && written).then_some(page)
    }

    /// The files the response for `job` comes from, as the pipeline renders
    /// it for a GET with no headers (None: unknown or uncacheable).
    async fn deps(&self, job: &Job) -> Option<Vec<(PathBuf, String)>> {
        match &job.kind {
            Kind::Static(path) => Some(vec![(path.clone(), self.hash_now(path).hex(32))]),
            Kind::Document { style, media } => {
                let located = self.app.pipeline().provider().locate(&job.path).ok()?;
                let located = if located.kind == ResourceKind::Directory {
                    let site = self.app.site();
                    let location = site.location(&decoded(&job.path));
                    if location.directories {
                        // A listing: it changes with the directory's
                        // entries, which no content hash covers.
                        return None;
                    }
                    let index = location.index.as_deref()?;
                    self.app
                        .pipeline()
                        .provider()
                        .locate(&format!("{}{}", job.path, encode(index)))
                        .ok()?
                } else {
                    located
                };
                let site = self.app.site();
                let location = site.location(&decoded(&job.path));
                let query: Vec<(String, String)> = style
                    .iter()
                    .map(|s| (String::from("style"), s.clone()))
                    .collect();
                let mut chosen =
                    crate::http::choose(&location, &::http::HeaderMap::new(), &query, None);
                if let Some(media) = media {
                    chosen.selection.media.clone_from(media);
                }
                let req = crate::http::render_request_for(&location, &chosen, &query);
                let rendered = self.app.pipeline().render(&located, &req).await.ok()?;
                let validators = rendered.validators?;
                Some(
                    validators
                        .iter()
                        .map(|d| (d.path.clone(), d.hash.hex(32)))
                        .collect(),
                )
            }
        }
    }

    /// GET `url` through the server's handler: status, Content-Type, body.
    async fn get(&self, url: &str, media: Option<&str>) -> Result<Got, String> {
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let mut request = ::http::Request::builder()
            .method(::http::Method::GET)
            .uri(url)
            .header(::http::header::HOST, "localhost")
            .body(axum::body::Body::empty())
            .map_err(|e| e.to_string())?;
        if let Some(media) = media {
            request
                .extensions_mut()
                .insert(crate::http::ExportMedia(media.to_string()));
        }
        let response = match self.router.clone().oneshot(request).await {
            Ok(r) => r,
            Err(never) => match never {},
        };
        let status = response.status().as_u16();
        // `no-store`: made per request (an XSP page, an uncacheable stage).
        let per_request = response
            .headers()
            .get(::http::header::CACHE_CONTROL)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("no-store"));
        let content_type = response
            .headers()
            .get(::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/octet-stream")
            .to_string();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok(Got {
            status,
            content_type,
            body,
            per_request,
        })
    }
}

/// A response to an export's GET.
struct Got {
    status: u16,
    content_type: String,
    body: Bytes,
    /// `Cache-Control: no-store`: made per request.
    per_request: bool,
}

fn decoded(path: &str) -> String {
    percent_encoding::percent_decode_str(path)
        .decode_utf8_lossy()
        .into_owned()
}

/// Exports one URL.
async fn run(ctx: &Ctx, job: Job) -> Done {
    let id = job.id();
    let media = job.media().map(String::from);
    if let Some(page) = ctx.unchanged(&id) {
        let page = page.clone();
        let claim = (id.clone(), page.body.clone());
        if let Ok(mut claimed) = ctx.claimed.lock() {
            claimed.insert(page.file.clone(), claim);
        }
        return Done::Kept(
            Entry {
                url: job.url,
                file: page.file.clone(),
                content_type: page.content_type.clone(),
                media,
            },
            page,
        );
    }
    let fail = |status: u16, detail: String| {
        Done::Failed(Failure {
            url: id.clone(),
            status,
            detail,
        })
    };
    let deps = ctx.deps(&job).await;
    let Got {
        status,
        content_type,
        body,
        per_request,
    } = match ctx.get(&job.url, job.media()).await {
        Ok(r) => r,
        Err(e) => return fail(0, e),
    };
    if per_request && (200..300).contains(&status) {
        // A page made for each request (an XSP page, an uncacheable
        // stage) has no one static form: listed, not written.
        return Done::NotServed(String::from("made per request (Cache-Control: no-store)"));
    }
    if !(200..300).contains(&status) {
        if let Kind::Static(_) = job.kind {
            // A file the server does not serve (refused, or not found
            // through its locations) is not copied.
            return Done::NotServed(format!("not served: {status}"));
        }
        let first = String::from_utf8_lossy(&body[..body.len().min(300)])
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string();
        return fail(status, first);
    }
    let file = match &job.kind {
        Kind::Static(_) => job.base.clone(),
        Kind::Document { style, media } => {
            document_file(&job.base, &content_type, style.is_some() || media.is_some())
        }
    };
    let body_hash = ContentHash::of(&body).hex(32);
    let clash = match ctx.claimed.lock() {
        Ok(mut claimed) => match claimed.get(&file) {
            Some((other, hash)) if *hash != body_hash => Some(other.clone()),
            Some(_) => None,
            None => {
                claimed.insert(file.clone(), (id.clone(), body_hash.clone()));
                None
            }
        },
        Err(_) => None,
    };
    if let Some(other) = clash {
        return fail(0, format!("{file} is written for {other} with other bytes"));
    }
    if let Err(e) = write_inside(&ctx.out, &file, &body) {
        return fail(0, format!("{}: {e}", ctx.out.join(&file).display()));
    }
    Done::Written {
        entry: Entry {
            url: job.url,
            file: file.clone(),
            content_type: content_type.clone(),
            media,
        },
        state: PageState {
            file,
            content_type,
            body: body_hash,
            deps,
        },
        bytes: body.len() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_are_inside_the_output() {
        for good in ["a.html", "articles/x.xml.html", "a/b/c"] {
            assert_eq!(inside_out(good), Some(PathBuf::from(good)), "{good}");
        }
        for bad in ["", "../x", "a/../../x", "/tmp/x", "./a", "a\0b"] {
            assert_eq!(inside_out(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_write_replaces_a_link_and_a_delete_never_passes_one() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let out = out.canonicalize().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "OUTSIDE").unwrap();
        let outside_dir = dir.path().join("outside-dir");
        std::fs::create_dir(&outside_dir).unwrap();
        std::fs::write(outside_dir.join("f.txt"), "OUTSIDE").unwrap();
        std::os::unix::fs::symlink(&outside, out.join("page.html")).unwrap();
        std::os::unix::fs::symlink(&outside_dir, out.join("sub")).unwrap();

        // A delete through the linked directory does nothing.
        remove_inside(&out, "sub/f.txt");
        assert!(outside_dir.join("f.txt").exists());

        write_inside(&out, "page.html", b"PAGE").unwrap();
        write_inside(&out, "sub/f.txt", b"PAGE").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "OUTSIDE");
        assert_eq!(
            std::fs::read_to_string(outside_dir.join("f.txt")).unwrap(),
            "OUTSIDE"
        );
        assert_eq!(
            std::fs::read_to_string(out.join("page.html")).unwrap(),
            "PAGE"
        );
        assert!(!out.join("sub").is_symlink());
        assert!(write_inside(&out, "../escape.txt", b"x").is_err());
        assert!(!dir.path().join("escape.txt").exists());
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}
