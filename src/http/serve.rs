//! Starting and stopping a server: binding the listeners (one per I/O
//! thread, refusing a port something else listens on), the I/O threads'
//! runtimes, SIGHUP reloads of the site configuration, the file
//! descriptor limit, and shutdown on Ctrl-C or SIGTERM (every listener on
//! every I/O thread stops accepting at once; in-flight requests get the
//! shutdown timeout). Apart from request handling because none of it runs
//! per request.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{App, serve_on};
use crate::config::ServeConfig;
use crate::site::SiteConfig;

/// The configuration file to use: `explicit`, else `axle.toml` in the root
/// if there is one.
pub fn site_config_path(root: &Path, explicit: Option<&Path>) -> Option<PathBuf> {
    match explicit {
        Some(p) => Some(p.to_path_buf()),
        None => Some(root.join(CONFIG_FILE)).filter(|p| p.is_file()),
    }
}

/// The configuration file's default name, looked for in the root (never
/// served: see [`crate::provider::SITE_CONFIG_NAME`]).
pub const CONFIG_FILE: &str = crate::provider::SITE_CONFIG_NAME;

/// Refuses a configuration file inside the root under another name: it
/// could be read as a document. (`axle.toml`, the default name, is never
/// served.)
pub(crate) fn refuse_servable_config(root: &Path, path: &Path) -> std::io::Result<()> {
    let (Ok(root), Ok(file)) = (root.canonicalize(), path.canonicalize()) else {
        return Ok(()); // loading it reports a missing file
    };
    let named_safely = file
        .file_name()
        .is_some_and(|n| n.eq_ignore_ascii_case(CONFIG_FILE));
    if file.starts_with(&root) && !named_safely {
        return Err(std::io::Error::other(format!(
            "the configuration {} is inside the document root, where it could be served: \
             move it out of the root, or name it {CONFIG_FILE} (never served)",
            path.display()
        )));
    }
    Ok(())
}

/// A site configuration file's problems that do not stop a server: the
/// stylesheets it names that cannot be used now (they may be deployed
/// later; `axle check` refuses them).
pub(crate) fn warn_about_references(site: &SiteConfig, root: &Path) {
    for problem in site.check_references(root) {
        tracing::warn!(%problem, "the configuration names a file or program that cannot be used");
    }
}

/// Serves `app` (made with `config`) on `config.listen` until Ctrl-C or
/// SIGTERM; SIGHUP reloads the site configuration (a broken one is
/// reported and the old one kept). After the signal, every listener stops
/// accepting at once and requests being answered get
/// `config.http.shutdown_timeout`; whatever is still open then is cut and
/// this returns. A transform still running on the pool is not waited for
/// (it cannot be cut short from here): the caller ends the process (`axle
/// serve` exits 0). [`crate::Server`] is the usual way in.
///
/// Connections are served thread-per-core: the calling runtime serves one
/// listener, and `config.io_threads - 1` more threads each run a
/// single-threaded runtime with its own listener on the same address
/// (`SO_REUSEPORT`: the kernel spreads new connections over them). A
/// single-threaded scheduler runs tasks first-in first-out, which keeps the
/// latency tail short with thousands of connections (the work-stealing
/// scheduler's LIFO slot let a few connections starve the rest: p99 at
/// 1,000 connections went from ~160 ms to ~23 ms). Transforms run on the
/// pipeline's own thread pool either way.
pub async fn serve_app(app: Arc<App>, config: &ServeConfig) -> std::io::Result<()> {
    raise_open_files_limit();
    let listener = first_listener(config.listen, config.reuse_port)?;
    let addr: SocketAddr = listener.local_addr()?;
    let threads = io_threads(config.io_threads);
    // The release served: the root as configured and where it led (a
    // reload that re-resolves it logs "document root changed").
    let files = app.pipeline.provider();
    let chosen = config.root_chosen.as_deref().unwrap_or("as configured");
    tracing::info!(%addr, root = %files.root().display(), configured = %files.configured_root().display(), chosen, cache = %config.cache_mode, io_threads = threads, "axle serving");
    spawn_reloader(Arc::clone(&app));
    if config.freshness == crate::config::Freshness::Watch {
        // A deploy's swap of a symlinked root, followed with no signal.
        super::root_watch::spawn(Arc::clone(&app));
    }
    // One task hears the signal and tells every listener at once.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    if let Some(admin_addr) = config.admin {
        let listener = super::admin::bind(admin_addr).await?;
        let bound = listener.local_addr()?;
        let guard =
            super::admin::Guard::new(bound, &config.admin_hosts).map_err(std::io::Error::other)?;
        tracing::info!(addr = %bound, "admin listener: /stats, /status, /purge");
        println!("axle: admin listener on http://{bound}/ (stats, status, purge)");
        let (app, mut stopped) = (Arc::clone(&app), stopped.clone());
        tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.wait_for(|s| *s).await;
            };
            if let Err(e) = super::admin::serve(listener, app, guard, shutdown).await {
                tracing::error!(error = %e, "the admin listener failed");
            }
        });
    }
    // Listening for SIGTERM and Ctrl-C from here on, before anyone is
    // told the server is ready.
    let signalled = shutdown_signal();
    // Written and printed once the public address (its first listener;
    // the others share its port) and the admin address accept: whoever
    // waits for either can connect.
    let pid_file = match &config.pid_file {
        Some(path) => Some(PidFile::write(path)?),
        None => None,
    };
    println!(
        "axle: serving {} on http://{addr}/ (cache: {})",
        app.pipeline.provider().root().display(),
        config.cache_mode
    );
    if let Some(how) = &config.root_chosen {
        // No --root: say which rule chose this one, and how to pick another.
        println!("axle: the document root is {how}; serve another with --root DIR");
    }
    tokio::spawn(async move {
        signalled.await;
        tracing::info!("stopping: no new connections; finishing requests being answered");
        let _ = stop.send(true);
    });
    let mut others = Vec::new();
    for i in 1..threads {
        // Bind here, so a failure is reported before serving starts.
        let listener =
            reuseport_std_listener(addr).map_err(|e| listen_error(addr, e, config.reuse_port))?;
        let app = Arc::clone(&app);
        let mut stopped = stopped.clone();
        let handle = std::thread::Builder::new()
            .name(format!("axle-io-{i}"))
            .spawn(move || -> std::io::Result<()> {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)?;
                    serve_on(listener, app, async move {
                        let _ = stopped.wait_for(|s| *s).await;
                    })
                    .await
                })
            })?;
        others.push(handle);
    }
    let mut stopped = stopped.clone();
    let served = serve_on(listener, Arc::clone(&app), async move {
        let _ = stopped.wait_for(|s| *s).await;
    })
    .await;
    for handle in others {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "an I/O thread failed"),
            Err(_) => tracing::error!("an I/O thread panicked"),
        }
    }
    app.flush_access_log();
    drop(pid_file);
    served
}

/// `--pid-file`: the process ID, written when the server is ready and
/// removed when it stops (on drop), unless another process wrote it since.
struct PidFile {
    path: std::path::PathBuf,
    pid: String,
}

impl PidFile {
    fn write(path: &std::path::Path) -> std::io::Result<PidFile> {
        let pid = format!("{}\n", std::process::id());
        // Written whole under another name, then renamed: a reader never
        // sees a partial ID.
        let partial = path.with_extension("pid-partial");
        std::fs::write(&partial, &pid)
            .and_then(|()| std::fs::rename(&partial, path))
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("cannot write --pid-file {}: {e}", path.display()),
                )
            })?;
        Ok(PidFile {
            path: path.to_path_buf(),
            pid,
        })
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        if std::fs::read_to_string(&self.path).is_ok_and(|now| now == self.pid) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Raises the soft limit on open files to the hard limit: every
/// connection is a descriptor, and the usual soft limit (1024) is far below
/// `max_connections`. A failure is logged, not fatal.
fn raise_open_files_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!(limit, "open files limit"),
        Err(e) => tracing::warn!(error = %e, "cannot raise the open files limit"),
    }
}

/// Threads that accept and serve connections: `requested`, or one per CPU
/// this process may run on.
fn io_threads(requested: usize) -> usize {
    if requested > 0 {
        return requested;
    }
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// A listening socket on `addr` that others may share (`SO_REUSEPORT`).
fn reuseport_std_listener(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_reuseport(true)?;
    socket.bind(addr)?;
    let listener = socket.listen(4096)?;
    listener.into_std()
}

/// The first listener on `addr`, on the current runtime. Unless `share`
/// is set, an address something else already listens on is refused: every
/// listener Axle binds sets `SO_REUSEPORT` (one per I/O thread), so without
/// this check a second server on the same port would start silently and the
/// kernel would split requests between the two. A probe socket without
/// `SO_REUSEPORT` cannot bind where anything listens, so it tells.
fn first_listener(addr: SocketAddr, share: bool) -> std::io::Result<tokio::net::TcpListener> {
    if !share && addr.port() != 0 {
        exclusive_probe(addr).map_err(|e| listen_error(addr, e, share))?;
    }
    reuseport_std_listener(addr)
        .and_then(tokio::net::TcpListener::from_std)
        .map_err(|e| listen_error(addr, e, share))
}

/// Binds (and drops) a socket on `addr` that does not share its port.
fn exclusive_probe(addr: SocketAddr) -> std::io::Result<()> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)
}

/// A bind failure that names the address, and for a port in use, what to do.
fn listen_error(addr: SocketAddr, e: std::io::Error, share: bool) -> std::io::Error {
    let hint = match (e.kind(), share) {
        (std::io::ErrorKind::AddrInUse, false) => {
            "; another server is listening there: stop it, choose another --listen address, \
             or pass --reuse-port to share the port with it"
        }
        (std::io::ErrorKind::AddrInUse, true) => {
            "; the server listening there does not share its port (SO_REUSEPORT)"
        }
        _ => "",
    };
    std::io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}{hint}"))
}

/// Reloads the site configuration on SIGHUP.
fn spawn_reloader(app: Arc<App>) {
    let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else {
        return;
    };
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            if app.pipeline.trusting() {
                // Under `--freshness trust`, SIGHUP is how a deployment
                // says files changed.
                app.pipeline.files_changed().await;
                tracing::info!(
                    "files changed (SIGHUP): remembered hashes and memory entries forgotten"
                );
            }
            match app.reload() {
                Ok(()) => tracing::info!("configuration reloaded"),
                Err(e) => {
                    tracing::error!(error = %e, "configuration not reloaded; the previous one stays")
                }
            }
        }
    });
}

/// Ctrl-C (SIGINT) or SIGTERM, listened for from the call on: the
/// handlers are installed before this returns, so a signal sent the moment
/// the server says it is ready is never the default action (death).
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let interrupt = signal(SignalKind::interrupt());
    let terminate = signal(SignalKind::terminate());
    async move {
        let one = async {
            match interrupt {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        let other = async {
            match terminate {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            () = one => {},
            () = other => {},
        }
    }
}
