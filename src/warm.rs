//! `axle warm`: fills a running server's cache before traffic does, from a
//! sitemap, a list of URLs, or every document under a root. A client of the
//! public listener, nothing more: each URL is requested once (GET, keep-alive,
//! a bounded number at once), and what the server's `X-Axle-Cache` said is
//! counted, so a second run shows how warm the cache already was.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;

/// What `axle warm` failed at (before any request, or every request).
#[derive(Debug, thiserror::Error)]
pub enum WarmError {
    /// The client's runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(String),
    /// A file the URLs come from could not be read.
    #[error("cannot read {path}: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A sitemap that is not well-formed XML.
    #[error("{path} is not a sitemap: {reason}")]
    Sitemap {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Nothing to request.
    #[error("no URLs to warm")]
    Empty,
    /// Some URLs were not answered 2xx/3xx.
    #[error("{failed} of {total} URLs failed:\n{list}")]
    Failed {
        /// How many failed.
        failed: usize,
        /// How many were requested.
        total: usize,
        /// One line each: status (or error) and URL.
        list: String,
    },
}

/// Where the URLs come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A sitemap file (`<urlset><url><loc>`): each `loc`'s path and query.
    Sitemap(PathBuf),
    /// A file with one URL or URL path per line (`#` comments, blank lines
    /// skipped).
    List(PathBuf),
    /// Every `.xml` document under this root, at its URL (locations with a
    /// dynamic source skipped: they are made per request).
    Root(PathBuf),
}

/// What a warm run did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// URLs requested.
    pub requested: usize,
    /// Answered `X-Axle-Cache: hit…` (already warm).
    pub hits: usize,
    /// Answered by a render (`miss`, `partial …`, `uncacheable`).
    pub rendered: usize,
    /// Answered without a transform (static files, untransformed documents).
    pub other: usize,
    /// Not answered 2xx/3xx.
    pub failed: Vec<(String, String)>,
}

/// The URL paths (with query) `source` names.
pub fn urls(source: &Source) -> Result<Vec<String>, WarmError> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|e| WarmError::Read {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    };
    let mut urls = match source {
        Source::Sitemap(path) => {
            let text = read(path)?;
            let doc = roxmltree::Document::parse(&text).map_err(|e| WarmError::Sitemap {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            doc.descendants()
                .filter(|n| n.has_tag_name("loc"))
                .filter_map(|n| n.text())
                .filter_map(path_of)
                .collect()
        }
        Source::List(path) => read(path)?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(path_of)
            .collect(),
        Source::Root(root) => documents(root),
    };
    urls.dedup();
    Ok(urls)
}

/// The path and query of a URL (`http://host/a?b` → `/a?b`), or a path as
/// it is; None for anything else.
fn path_of(text: &str) -> Option<String> {
    let text = text.trim();
    if text.starts_with('/') {
        return Some(text.to_string());
    }
    let rest = text
        .strip_prefix("http://")
        .or_else(|| text.strip_prefix("https://"))?;
    match rest.find('/') {
        Some(i) => Some(rest[i..].to_string()),
        None => Some("/".to_string()),
    }
}

/// Every `.xml` document under `root` at its URL, sorted; dot-files,
/// `axle.toml`, locations with a dynamic source and what the server
/// refuses (private files, `private` locations) left out.
fn documents(root: &Path) -> Vec<String> {
    let site = crate::http::site_config_path(root, None)
        .and_then(|p| crate::site::SiteConfig::load_in(&p, crate::Registry::default(), root).ok());
    let dynamic = site
        .as_ref()
        .map(|site| site.dynamic_prefixes())
        .unwrap_or_default();
    let private = |path: &Path| {
        site.as_ref()
            .is_some_and(|site| path.canonicalize().is_ok_and(|c| site.is_private(&c)))
    };
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                dirs.push(path);
            } else if name.to_ascii_lowercase().ends_with(".xml") {
                let Ok(rel) = path.strip_prefix(root) else {
                    continue;
                };
                let url = format!("/{}", rel.to_string_lossy());
                if !dynamic.iter().any(|p| url.starts_with(p.as_str())) && !private(&path) {
                    out.push(url);
                }
            }
        }
    }
    out.sort();
    out
}

/// Requests every URL of `urls` from the server at `server` (any of the
/// forms of [`crate::config::Address`]), `concurrency` at a time, each over a kept-alive
/// connection of its own worker; `progress` is told after each one.
pub async fn warm(
    server: &crate::config::Address,
    urls: Vec<String>,
    concurrency: usize,
    progress: impl Fn(usize, usize) + Send + Sync + 'static,
) -> Result<Report, WarmError> {
    let authority = server.authority();
    if urls.is_empty() {
        return Err(WarmError::Empty);
    }
    let total = urls.len();
    let urls = Arc::new(urls);
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let progress = Arc::new(progress);
    let mut workers = Vec::new();
    for _ in 0..concurrency.clamp(1, 256).min(total) {
        let (urls, next, done, progress, authority) = (
            Arc::clone(&urls),
            Arc::clone(&next),
            Arc::clone(&done),
            Arc::clone(&progress),
            authority.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            let mut conn = None;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(url) = urls.get(i) else { break };
                let got = fetch(&authority, url, &mut conn).await;
                seen.push((url.clone(), got));
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(usize::try_from(n).unwrap_or(usize::MAX), total);
            }
            seen
        }));
    }
    let mut report = Report {
        requested: total,
        ..Report::default()
    };
    for worker in workers {
        let Ok(seen) = worker.await else { continue };
        for (url, got) in seen {
            match got {
                Ok((status, cache)) if (200..400).contains(&status) => match cache.as_str() {
                    c if c.starts_with("hit") => report.hits += 1,
                    c if c.starts_with("miss")
                        || c.starts_with("partial")
                        || c == "uncacheable" =>
                    {
                        report.rendered += 1
                    }
                    _ => report.other += 1,
                },
                Ok((status, _)) => report.failed.push((url, status.to_string())),
                Err(why) => report.failed.push((url, why)),
            }
        }
    }
    report.failed.sort();
    Ok(report)
}

/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(60);

type Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;

/// GET `path` on `authority` over the worker's connection (opened, or
/// opened again when the server closed it): the status and `X-Axle-Cache`.
async fn fetch(
    authority: &str,
    path: &str,
    conn: &mut Option<Sender>,
) -> Result<(u16, String), String> {
    for attempt in 0..2 {
        if conn.as_ref().is_none_or(|s| s.is_closed()) {
            *conn = Some(connect(authority).await?);
        }
        let Some(sender) = conn.as_mut() else {
            return Err("no connection".into());
        };
        let request = hyper::Request::get(path)
            .header(hyper::header::HOST, authority)
            .header(hyper::header::USER_AGENT, "axle-warm")
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let sent = tokio::time::timeout(TIMEOUT, async {
            let response = sender.send_request(request).await?;
            let status = response.status().as_u16();
            let cache = response
                .headers()
                .get("x-axle-cache")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            response.into_body().collect().await?;
            Ok::<_, hyper::Error>((status, cache))
        })
        .await;
        match sent {
            Ok(Ok(got)) => return Ok(got),
            // A kept connection the server closed: once more, on a new one.
            Ok(Err(e)) if attempt == 0 => {
                tracing::debug!(error = %e, "warm: retrying on a new connection");
                *conn = None;
            }
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err(format!("no answer within {TIMEOUT:?}")),
        }
    }
    Err("the server closed the connection twice".into())
}

async fn connect(authority: &str) -> Result<Sender, String> {
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .map_err(|e| format!("cannot connect to {authority}: {e}"))?;
    let _ = stream.set_nodelay(true);
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// `axle warm`: the URLs, the requests with a progress bar (plain lines
/// when stderr is not a terminal), a summary; an error listing every URL
/// that failed.
pub fn command(
    server: &crate::config::Address,
    source: &Source,
    concurrency: usize,
) -> Result<Report, WarmError> {
    use std::io::IsTerminal;
    let urls = urls(source)?;
    let total = urls.len();
    let started = Instant::now();
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(total as u64);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {per_sec} ETA {eta}")
        {
            bar.set_style(style);
        }
        bar
    });
    let shown = bar.clone();
    let step = (total / 20).max(1);
    let progress = move |n: usize, total: usize| match &shown {
        Some(bar) => bar.set_position(n as u64),
        None if n % step == 0 || n == total => eprintln!("axle warm: {n}/{total}"),
        None => {}
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| WarmError::Runtime(e.to_string()))?;
    let report = runtime.block_on(warm(server, urls, concurrency, progress))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    println!(
        "axle warm: {} URLs in {:.1} s: {} rendered now, {} already cached, {} without a transform, {} failed",
        report.requested,
        started.elapsed().as_secs_f64(),
        report.rendered,
        report.hits,
        report.other,
        report.failed.len()
    );
    if report.failed.is_empty() {
        return Ok(report);
    }
    let list: Vec<String> = report
        .failed
        .iter()
        .map(|(url, why)| format!("  {why} {url}"))
        .collect();
    Err(WarmError::Failed {
        failed: report.failed.len(),
        total: report.requested,
        list: list.join("\n"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_become_paths_and_queries() {
        assert_eq!(
            path_of("http://example.org/a/b.xml?x=1").as_deref(),
            Some("/a/b.xml?x=1")
        );
        assert_eq!(path_of("https://example.org").as_deref(), Some("/"));
        assert_eq!(path_of(" /c.xml ").as_deref(), Some("/c.xml"));
        assert_eq!(path_of("ftp://x/y"), None);
        assert_eq!(path_of("relative.xml"), None);
    }

    #[test]
    fn sitemaps_and_lists_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let map = dir.path().join("sitemap.xml");
        std::fs::write(
            &map,
            r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://h/a.xml</loc></url><url><loc>http://h/b/</loc></url></urlset>"#,
        )
        .unwrap();
        assert_eq!(urls(&Source::Sitemap(map)).unwrap(), vec!["/a.xml", "/b/"]);
        let list = dir.path().join("urls.txt");
        std::fs::write(&list, "# pages\n/a.xml\n\nhttp://h/c.xml?s=print\n").unwrap();
        assert_eq!(
            urls(&Source::List(list)).unwrap(),
            vec!["/a.xml", "/c.xml?s=print"]
        );
        let bad = dir.path().join("bad.xml");
        std::fs::write(&bad, "<urlset>").unwrap();
        assert!(matches!(
            urls(&Source::Sitemap(bad)),
            Err(WarmError::Sitemap { .. })
        ));
    }
}
