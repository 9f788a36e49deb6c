//! The floor of the stack for a cache hit: what an Axle hit would cost if
//! the cache lookup, the freshness check and the response were free.
//!
//! The load harness (`benches/load/run.sh`, target `axum-floor` of the `doc`
//! scenario) measures this next to nginx serving the same precomputed bytes,
//! so that "Axle hit ÷ nginx static" can be read against "the same HTTP
//! stack with nothing on top ÷ nginx static". It is the same stack Axle
//! serves with: axum 0.8 on hyper, on a single-threaded tokio runtime, the
//! one handler served without a router in front.
//!
//! At start-up every file under `--root` is read into memory, with a strong
//! `ETag` (a hash of its bytes). Each request then does exactly one
//! `std::fs::metadata` of the requested file (the shape the performance
//! issue names: cached bytes, one stat, an ETag; an Axle hit in its default
//! `watch` freshness mode does no stat but reads its change queue once) and
//! answers 200 with the in-memory
//! bytes, the `ETag` and `Content-Type: text/html; charset=UTF-8`; unknown
//! paths (and files gone since start-up) give 404. A path ending in `/`
//! means its `index.xml`, as for nginx and Axle.
//!
//! Usage: `cargo run --release --example hit_floor -- [--root DIR]
//! [--listen ADDR]`; it prints `hit_floor: serving DIR on http://ADDR/ ...`
//! like `axle serve` does.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use axum::extract::State;
use axum::handler::Handler;
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;

/// The allocator `axle serve` uses (see src/main.rs), so this server is
/// measured on the same footing.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One file, as read at start-up.
struct Entry {
    /// Where it is on disk (the one `stat` per request).
    path: PathBuf,
    body: Bytes,
    etag: HeaderValue,
}

/// Every file under the root, by URL path (`/a/b.xml`).
struct Files {
    by_url: HashMap<String, Entry>,
}

/// Reads every regular file under `dir` (following no symlinks) into `out`.
fn load(root: &Path, dir: &Path, out: &mut HashMap<String, Entry>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            load(root, &path, out)?;
        } else if kind.is_file() {
            let Ok(rel) = path.strip_prefix(root) else {
                continue;
            };
            let Some(rel) = rel.to_str() else {
                continue; // not UTF-8: no URL names it
            };
            let url = format!("/{}", rel.replace(std::path::MAIN_SEPARATOR, "/"));
            let body = Bytes::from(std::fs::read(&path)?);
            let hash = blake3::hash(&body);
            let etag = format!("\"{}\"", &hash.to_hex()[..32]);
            let etag = HeaderValue::from_str(&etag)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            out.insert(url, Entry { path, body, etag });
        }
    }
    Ok(())
}

async fn serve(State(files): State<Arc<Files>>, uri: Uri) -> Response {
    let path = uri.path();
    let entry = if path.ends_with('/') {
        files.by_url.get(&format!("{path}index.xml"))
    } else {
        files.by_url.get(path)
    };
    let Some(entry) = entry else {
        return StatusCode::NOT_FOUND.into_response();
    };
    // The one stat per request.
    match std::fs::metadata(&entry.path) {
        Ok(m) if m.is_file() => {}
        _ => return StatusCode::NOT_FOUND.into_response(),
    }
    let mut response = (StatusCode::OK, entry.body.clone()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=UTF-8"),
    );
    headers.insert(header::ETAG, entry.etag.clone());
    response
}

fn main() -> ExitCode {
    let mut root = PathBuf::from(".");
    let mut listen: SocketAddr = SocketAddr::from(([127, 0, 0, 1], 8080));
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next();
        match (arg.as_str(), value) {
            ("--root", Some(v)) => root = PathBuf::from(v),
            ("--listen", Some(v)) => match v.parse() {
                Ok(a) => listen = a,
                Err(e) => {
                    eprintln!("hit_floor: --listen {v}: {e}");
                    return ExitCode::from(2);
                }
            },
            (other, _) => {
                eprintln!("usage: hit_floor [--root DIR] [--listen ADDR] ({other}?)");
                return ExitCode::from(2);
            }
        }
    }
    let mut by_url = HashMap::new();
    if let Err(e) = load(&root, &root, &mut by_url) {
        eprintln!("hit_floor: reading {}: {e}", root.display());
        return ExitCode::FAILURE;
    }
    let count = by_url.len();
    let bytes: usize = by_url.values().map(|e| e.body.len()).sum();
    let files = Arc::new(Files { by_url });
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("hit_floor: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result: std::io::Result<()> = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        println!(
            "hit_floor: serving {} on http://{}/ ({count} files, {bytes} bytes in memory)",
            root.display(),
            listener.local_addr()?
        );
        // The handler with no router in front, as `axle serve` does.
        axum::serve(listener, serve.with_state(files).into_make_service()).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hit_floor: {e}");
            ExitCode::FAILURE
        }
    }
}
