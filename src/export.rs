//! `axle build`: a site rendered to static files, for a CDN, a mirror or
//! any static host.
//!
//! It exists so that the static copy of a site cannot drift from what the
//! server sends: every file is the body of a GET sent through the very
//! handler `axle serve` runs ([`crate::http::router`] on a
//! [`Server`](crate::Server) built as `serve` builds it), with no
//! `Accept-Encoding`, so the bytes are the server's by construction; then
//! (by default, [`Links::Rewrite`]) each page's internal links are pointed
//! at the exported files (`relink`), so that a plain static file server
//! serves every page a link names.
//!
//! The parts: `jobs` (the URLs asked for), `naming` (the files they are
//! written to), `output` (writing only inside OUT), `links` (a page's link
//! attributes found and replaced in its bytes), `targets` (an href resolved,
//! relative URLs between files), `relink` (links pointed at files, the
//! re-run's link check); this file runs them and keeps the state.
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
//!   keys use), and its internal links with how each resolved. A re-run
//!   renders a URL again only when one of those files changed, its output
//!   is missing or altered, one of its links resolves otherwise, or the
//!   site configuration, the link mode or Axle's version changed; the
//!   others are kept.
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

mod jobs;
mod links;
mod naming;
mod output;
mod relink;
mod targets;

use jobs::{Job, Kind, encode, listing_job, walk};
use naming::document_file;
use output::{inside_out, remove_inside, write_inside, write_json};
pub use relink::UnexportedLink;
use relink::{Answer, Exported, Resolution};

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
    /// Internal links of exported pages that name no exported file: left
    /// as written, or pointed at the page without their query (sorted by
    /// URL).
    pub unexported_links: Vec<UnexportedLink>,
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
    /// How each link of an exported page resolved (its key: URL, `POST `
    /// before a form's POST target).
    #[serde(default)]
    links: BTreeMap<String, Resolution>,
    /// The server's answers to links' URLs that are no exported page, with
    /// the files each came from (reused while those are unchanged).
    #[serde(default)]
    answers: BTreeMap<String, Answer>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct PageState {
    /// The URL asked for (a media variant's is its page's).
    url: String,
    /// The media of a media variant.
    media: Option<String>,
    file: String,
    content_type: String,
    /// The hash of the file's bytes (the body with its links rewritten).
    body: String,
    /// The hash of the response's body, as served.
    served: String,
    /// The keys of the page's internal links (see [`State::links`]).
    links: Vec<String>,
    /// A file of the root copied as served (never rewritten).
    copy: bool,
    /// Every file the response came from and its content hash; None: not
    /// known (always rendered again).
    deps: Option<Vec<(PathBuf, String)>>,
}

/// How a build writes pages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Links {
    /// Internal links point at the exported files (relative URLs; a
    /// directory's as its `index.html`), so any static host serves them.
    #[default]
    Rewrite,
    /// Every file is byte for byte what the server sends (links name the
    /// server's URLs; a host must map them with the manifest).
    AsServed,
}

/// `axle build --root ROOT --out OUT`: builds the server as `axle serve`
/// does (the root's `axle.toml` loaded), exports it, prints progress and a
/// summary. Runs its own multi-threaded runtime.
pub fn command(root: &Path, out: &Path) -> Result<Report, ExportError> {
    command_with(root, out, Links::default())
}

/// [`command`], links written as `links` says.
pub fn command_with(root: &Path, out: &Path, links: Links) -> Result<Report, ExportError> {
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
        export_with(&server, out, terminal, links).await
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
    for link in &report.unexported_links {
        let pages = link.pages;
        match &link.file {
            Some(file) => println!(
                "link {} -> {file}: {} ({pages} pages)",
                link.target, link.why
            ),
            None => println!(
                "link {} left as written: {} ({pages} pages)",
                link.target, link.why
            ),
        }
    }
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
    export_with(server, out, terminal, Links::default()).await
}

/// [`export`], links written as `links` says.
pub async fn export_with(
    server: &Server,
    out: &Path,
    terminal: bool,
    links: Links,
) -> Result<Report, ExportError> {
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
        // The state's format and the link mode too: a page written
        // otherwise is never kept.
        let mut text = format!(
            "axle {} state 2 links {links:?}\n",
            env!("CARGO_PKG_VERSION")
        )
        .into_bytes();
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
    let (mut previous_pages, previous_links, previous_answers) = if previous.site == site_hash {
        (previous.pages, previous.links, previous.answers)
    } else {
        (BTreeMap::new(), BTreeMap::new(), BTreeMap::new())
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
    let mut not_exported: HashMap<String, String> = HashMap::new();
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
                not_exported.insert(url.clone(), why.clone());
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

    let (resolutions, answers, relink_failures) = match links {
        Links::Rewrite => {
            let exported = Exported::new(&pages, not_exported, dynamic);
            relink::relink(
                &ctx,
                &mut pages,
                exported,
                (&previous_links, previous_answers),
                parallel,
                &mut report,
            )
            .await
        }
        Links::AsServed => (BTreeMap::new(), BTreeMap::new(), Vec::new()),
    };
    for f in relink_failures {
        println!("FAILED {} {}: {}", f.status, f.url, f.detail);
        failures.push(f);
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
            links: resolutions,
            answers,
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

    /// Whether every file of `deps` still has its content hash.
    fn fresh(&self, deps: &[(PathBuf, String)]) -> bool {
        deps.iter()
            .all(|(path, hash)| self.hash_now(path).hex(32) == *hash)
    }

    /// The previous run's page for `url`, when nothing it came from changed
    /// and its file is still as written.
    fn unchanged(&self, url: &str) -> Option<&PageState> {
        let page = self.previous.get(url)?;
        let fresh = self.fresh(page.deps.as_ref()?);
        let written = std::fs::read(self.out.join(&page.file))
            .is_ok_and(|b| ContentHash::of(&b).hex(32) == page.body);
        (fresh && written).then_some(page)
    }

    /// The previous run's page for `url` when this run's response is the
    /// one it served (`served`, the body's hash) to the same `file`, and
    /// that file is still as written: a page no content hash covers (a
    /// listing) is asked again each run, and kept when it did not change.
    fn served_as_before(&self, url: &str, file: &str, served: &str) -> Option<&PageState> {
        let page = self.previous.get(url)?;
        let written = std::fs::read(self.out.join(&page.file))
            .is_ok_and(|b| ContentHash::of(&b).hex(32) == page.body);
        (page.file == file && page.served == served && written).then_some(page)
    }

    /// The files the response for `job` comes from, as the pipeline renders
    /// it for a GET with no headers (None: unknown or uncacheable).
    async fn deps(&self, job: &Job) -> Option<Vec<(PathBuf, String)>> {
        match &job.kind {
            Kind::Static(path) => Some(vec![(path.clone(), self.hash_now(path).hex(32))]),
            Kind::Document { style, media } => {
                let query: Vec<(String, String)> = style
                    .iter()
                    .map(|s| (String::from("style"), s.clone()))
                    .collect();
                self.render_deps(&job.path, &query, media.as_deref(), None)
                    .await
            }
        }
    }

    /// The files the answer to `url` (a path and query, as a link names
    /// it) comes from, when the pipeline, asked for that document as the
    /// build asks for pages, renders exactly the body hashed `served`
    /// (None: unknown, uncacheable, or not that rendering).
    async fn url_deps(&self, url: &str, served: &str) -> Option<Vec<(PathBuf, String)>> {
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        let query: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        self.render_deps(path, &query, None, Some(served)).await
    }

    /// The files the document at `path` comes from, rendered with `query`
    /// and `media`, for a GET with no headers; with `served`, only when the
    /// rendering's body has that hash.
    async fn render_deps(
        &self,
        path: &str,
        query: &[(String, String)],
        media: Option<&str>,
        served: Option<&str>,
    ) -> Option<Vec<(PathBuf, String)>> {
        let located = self.app.pipeline().provider().locate(path).ok()?;
        let located = if located.kind == ResourceKind::Directory {
            let site = self.app.site();
            let location = site.location(&decoded(path));
            if location.directories {
                // A listing: it changes with the directory's entries,
                // which no content hash covers.
                return None;
            }
            let index = location.index.as_deref()?;
            self.app
                .pipeline()
                .provider()
                .locate(&format!("{path}{}", encode(index)))
                .ok()?
        } else {
            located
        };
        let site = self.app.site();
        let location = site.location(&decoded(path));
        let mut chosen = crate::http::choose(&location, &::http::HeaderMap::new(), query, None);
        if let Some(media) = media {
            chosen.selection.media = media.to_string();
        }
        let req = crate::http::render_request_for(&location, &chosen, query);
        let rendered = self.app.pipeline().render(&located, &req).await.ok()?;
        if served.is_some_and(|s| ContentHash::of(&rendered.body).hex(32) != s) {
            return None;
        }
        let validators = rendered.validators?;
        Some(
            validators
                .iter()
                .map(|d| (d.path.clone(), d.hash.hex(32)))
                .collect(),
        )
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
        let location = response
            .headers()
            .get(::http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(String::from);
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
            location,
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
    /// The `Location` of a redirect.
    location: Option<String>,
}

fn decoded(path: &str) -> String {
    percent_encoding::percent_decode_str(path)
        .decode_utf8_lossy()
        .into_owned()
}

/// The previous run's `page`, kept for `url`: its file claimed, nothing
/// written.
fn keep(ctx: &Ctx, id: &str, url: String, media: Option<String>, page: PageState) -> Done {
    if let Ok(mut claimed) = ctx.claimed.lock() {
        claimed.insert(page.file.clone(), (id.to_string(), page.body.clone()));
    }
    Done::Kept(
        Entry {
            url,
            file: page.file.clone(),
            content_type: page.content_type.clone(),
            media,
        },
        page,
    )
}

/// Exports one URL.
async fn run(ctx: &Ctx, job: Job) -> Done {
    let id = job.id();
    let media = job.media().map(String::from);
    if let Some(page) = ctx.unchanged(&id) {
        return keep(ctx, &id, job.url, media, page.clone());
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
        ..
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
    if deps.is_none()
        && let Some(page) = ctx.served_as_before(&id, &file, &body_hash)
    {
        return keep(ctx, &id, job.url, media, page.clone());
    }
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
            url: job.url.clone(),
            file: file.clone(),
            content_type: content_type.clone(),
            media: media.clone(),
        },
        state: PageState {
            url: job.url,
            media,
            file,
            content_type,
            body: body_hash.clone(),
            served: body_hash,
            links: Vec::new(),
            copy: matches!(job.kind, Kind::Static(_)),
            deps,
        },
        bytes: body.len() as u64,
    }
}
