//! The `axle` command: `serve` a document root, or `render` one document to
//! stdout. Thin: parses arguments and calls the library.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use axle::Registry;
use axle::config::{
    Address, CacheMode, Freshness, ServeConfig, parse_client, parse_duration, parse_listen,
    parse_size,
};
use axle::http::HttpError;
use axle::pipeline::Pipeline;
use axle::provider::{Provider, ResourceKind};

/// mimalloc for every allocation in the process: the crate's `override`
/// feature also replaces `malloc`/`free` for libxml2 and libxslt, whose
/// allocations were over a quarter of an uncached request's CPU under
/// glibc's allocator (measured: 1.4-1.5x uncached throughput). The 2.x
/// line (`v2` feature), not the crate's default 3.x: on the load
/// benchmark's 100,000-document site its peak RSS was ~14 MiB lower for
/// the same cache (117.6-119.9 against 132.3-133.2 MiB, four runs), at
/// about the same instructions per request on the article (callgrind:
/// 2,426,830 against 2,452,424 uncached, 7,054 against 7,074 for a hit);
/// the dynamic page's incremental request costs 1.5-4.7% more under 2.x
/// (benches/load/results/site-mimalloc-2026-12-02/). Off without the
/// `mimalloc` feature (on by default), for AddressSanitizer builds.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "axle",
    version,
    about = "Serve XML through stylesheet chains, cached by content hash"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The one switch `serve` and `render` share.
#[derive(clap::Args, Debug)]
struct DtdArgs {
    /// Parse every document's DTD for that document, instead of parsing an
    /// external DTD once and lending it to later documents that name it
    /// (the same trees either way; this is the switch to compare them).
    #[arg(long)]
    no_shared_dtds: bool,
}

/// `serve`'s limits (docs/security.md has the table and the reasons for
/// each default). Durations: `10s`, `500ms`, `2m`; sizes: `128MiB`.
#[derive(clap::Args, Debug)]
struct LimitArgs {
    /// Time a client has to send a request head: from the accept (first
    /// request) or its first byte (later ones) to its end. [default: 10s]
    #[arg(long, value_parser = parse_duration)]
    header_timeout: Option<Duration>,
    /// Time an idle keep-alive connection is kept open. [default: 60s]
    #[arg(long, value_parser = parse_duration)]
    keepalive_timeout: Option<Duration>,
    /// Time a client has to take one response. [default: 60s]
    #[arg(long, value_parser = parse_duration)]
    write_timeout: Option<Duration>,
    /// Time in-flight requests get after SIGTERM before they are cut. [default: 10s]
    #[arg(long, value_parser = parse_duration)]
    shutdown_timeout: Option<Duration>,
    /// Connections served at once; more wait in the listen backlog. [default: 10000]
    #[arg(long)]
    max_connections: Option<usize>,
    /// Header fields per request (431 past it). [default: 100]
    #[arg(long)]
    max_header_count: Option<usize>,
    /// Bytes of a request head (431 past it). [default: 64KiB]
    #[arg(long, value_parser = parse_size)]
    max_header_size: Option<u64>,
    /// Bytes of a request target (414 past it). [default: 8KiB]
    #[arg(long, value_parser = parse_size)]
    max_uri_size: Option<u64>,
    /// Parameters in a query string (414 past it). [default: 256]
    #[arg(long)]
    max_query_params: Option<usize>,
    /// Fields in a form body (413 past it). [default: 1000]
    #[arg(long)]
    max_form_fields: Option<usize>,
    /// Bytes of a request body (413 past it). [default: 1MiB]
    #[arg(long, value_parser = parse_size)]
    max_body_size: Option<u64>,
    /// The largest body sent compressed (gzip, br), page or static file;
    /// larger ones go out as they are. [default: 8MiB]
    #[arg(long, value_parser = parse_size)]
    max_compress_size: Option<u64>,
    /// Wall-clock time one render may take (504 past it). [default: 10s]
    #[arg(long, value_parser = parse_duration)]
    render_timeout: Option<Duration>,
    /// Memory libxml2 and libxslt may hold for one render (500 past it). [default: 256MiB]
    #[arg(long, value_parser = parse_size)]
    render_memory: Option<u64>,
    /// Bytes of a source document (a render takes about 10-16 times that).
    /// [default: 16MiB]
    #[arg(long, value_parser = parse_size)]
    max_source_size: Option<u64>,
    /// Bytes of a rendered response. [default: 64MiB]
    #[arg(long, value_parser = parse_size)]
    max_output_size: Option<u64>,
    /// Stages in one chain. [default: 32]
    #[arg(long)]
    max_chain: Option<usize>,
    /// `axle:` documents rendered for one request, nested ones included. [default: 64]
    #[arg(long)]
    max_nested: Option<usize>,
    /// Nodes a source may have once its XIncludes are processed. [default: 1000000]
    #[arg(long)]
    max_xinclude_nodes: Option<u64>,
    /// Renders waiting for a transform thread (503 past it). [default: 256]
    #[arg(long)]
    max_queue: Option<usize>,
    /// Variants (parameters, style, media) of one URL path rendered at once
    /// (0: one fewer than the transform threads, at least 1). [default: 0]
    #[arg(long)]
    max_per_url: Option<usize>,
    /// Elements a posted document may nest (1 to 256, libxml2's own
    /// ceiling; 400 past it). [default: 256]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    max_post_depth: Option<u32>,
    /// Attributes and namespace declarations on one element of a posted
    /// document (400 past it). [default: 256]
    #[arg(long)]
    max_post_attributes: Option<u32>,
    /// Entity expansion of a posted document past its first 1,000,000
    /// bytes, as a multiple of its size (400 past it). [default: 5]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_post_amplification: Option<u32>,
}

impl LimitArgs {
    /// Writes the limits given on the command line into `config`, over
    /// what it holds (the defaults, then the configuration file's).
    fn apply(&self, config: &mut ServeConfig) {
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let (http, render) = (&mut config.http, &mut config.render);
        macro_rules! set {
            ($slot:expr, $value:expr) => {
                if let Some(v) = $value {
                    $slot = v;
                }
            };
        }
        set!(http.header_timeout, self.header_timeout);
        set!(http.keepalive_timeout, self.keepalive_timeout);
        set!(http.write_timeout, self.write_timeout);
        set!(http.shutdown_timeout, self.shutdown_timeout);
        set!(http.max_connections, self.max_connections);
        set!(http.max_header_count, self.max_header_count);
        set!(http.max_header_bytes, self.max_header_size.map(size));
        set!(http.max_uri_bytes, self.max_uri_size.map(size));
        set!(http.max_query_params, self.max_query_params);
        set!(http.max_form_fields, self.max_form_fields);
        set!(http.max_body_bytes, self.max_body_size.map(size));
        set!(http.max_compress_bytes, self.max_compress_size);
        set!(render.timeout, self.render_timeout);
        set!(render.memory, self.render_memory);
        set!(render.max_source_bytes, self.max_source_size);
        set!(render.max_output_bytes, self.max_output_size);
        set!(render.max_chain, self.max_chain);
        set!(render.max_nested, self.max_nested);
        set!(render.max_xinclude_nodes, self.max_xinclude_nodes);
        set!(render.max_queue, self.max_queue);
        set!(render.max_per_url, self.max_per_url);
        set!(render.client.max_depth, self.max_post_depth);
        set!(render.client.max_attributes, self.max_post_attributes);
        set!(render.client.max_amplification, self.max_post_amplification);
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve a document root over HTTP.
    Serve {
        /// The document root [default: the current directory if it holds
        /// index.xml or axle.toml, else samples/ when the current directory
        /// is an Axle checkout, else the current directory].
        #[arg(long)]
        root: Option<PathBuf>,
        /// Address to listen on: PORT (loopback), :PORT (every interface),
        /// HOST:PORT, [IPv6]:PORT or http://HOST:PORT.
        #[arg(long, value_parser = parse_listen, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Share the port with other servers that also ask to (SO_REUSEPORT);
        /// without it, a port already in use is refused.
        #[arg(long)]
        reuse_port: bool,
        /// Cache strategy.
        #[arg(long, value_enum, default_value_t = CacheMode::Incremental)]
        cache: CacheMode,
        /// Memory budget of the caches (e.g. 64MiB, 1G).
        #[arg(long, value_parser = parse_size, default_value = "256MiB")]
        cache_size: u64,
        /// Transform threads (0: one per CPU).
        #[arg(long, default_value_t = 0)]
        workers: usize,
        /// Threads serving connections, each with its own listener on the
        /// same address (0: one per CPU).
        #[arg(long, default_value_t = 0)]
        io_threads: usize,
        /// How long a finished render may wait to be handed to its
        /// connection while more renders queue (0: at once). Batching the
        /// hand-offs saves switching between threads under load; an idle
        /// server adds no delay.
        #[arg(long, value_parser = axle::config::parse_handoff_window, default_value = "2ms")]
        handoff_window: Duration,
        /// How a cached response is checked: `watch` (inotify; a hit costs
        /// no stat), `check` (stat every file it came from, per request;
        /// for network filesystems and hard-linked trees) or `trust` (no
        /// check at all, for immutable deployments: `axle cache purge` or
        /// SIGHUP says files changed).
        #[arg(long, value_enum, default_value_t = Freshness::Watch)]
        freshness: Freshness,
        /// Keep rendered responses on disk under DIR too (content-addressed,
        /// verified on every read): a restart starts warm.
        #[arg(long, value_name = "DIR")]
        cache_dir: Option<PathBuf>,
        /// The most the disk tier may hold (e.g. 512MiB, 4G).
        #[arg(long, value_parser = parse_size, default_value = "1GiB")]
        cache_dir_size: u64,
        /// Serve the admin listener (GET /stats, POST /purge) on this
        /// address, in --listen's forms (e.g. 9090: 127.0.0.1:9090). Off by
        /// default.
        #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
        admin: Option<SocketAddr>,
        /// Another Host name the admin listener answers to (repeatable;
        /// NAME or NAME:PORT): the name a reverse proxy in front of it
        /// sends. Its own address, and on loopback `localhost`, need none.
        #[arg(long, value_name = "NAME", value_parser = axle::http::admin::parse_admin_host)]
        admin_host: Vec<String>,
        /// Log every request to FILE (`-`: standard output): Apache's
        /// combined format, then the X-Axle-Cache value and microseconds.
        #[arg(long, value_name = "FILE")]
        access_log: Option<PathBuf>,
        /// The access log's lines: `combined` or `json` (one object each).
        #[arg(long, value_enum, default_value_t = axle::config::AccessLogFormat::Combined)]
        access_log_format: axle::config::AccessLogFormat,
        /// Write the process ID to FILE once every listener is bound (the
        /// server is ready); removed when it stops.
        #[arg(long, value_name = "FILE")]
        pid_file: Option<PathBuf>,
        /// The site configuration [default: axle.toml in the root, if any].
        /// SIGHUP reloads it.
        #[arg(long)]
        config: Option<PathBuf>,
        #[command(flatten)]
        dtds: DtdArgs,
        #[command(flatten)]
        limits: Box<LimitArgs>,
        #[command(flatten)]
        shared: Box<axle::config::SharedCacheFlags>,
    },
    /// Render every document of a site to static files under OUT, as the
    /// server sends them (OUT/axle-manifest.json lists them; a re-run
    /// renders only pages whose files changed; docs/operations.md).
    Build {
        /// The document root (its axle.toml applies).
        #[arg(long)]
        root: PathBuf,
        /// The output directory (created; outside the root).
        #[arg(long)]
        out: PathBuf,
    },
    /// Fill a running server's cache: request every URL of a sitemap, a
    /// list, or every document under a root, a few at a time.
    Warm {
        /// The server: PORT or :PORT (127.0.0.1:PORT), HOST:PORT,
        /// [IPv6]:PORT or http://HOST:PORT.
        #[arg(long, value_parser = parse_client, default_value = "http://127.0.0.1:8080")]
        server: Address,
        /// A sitemap (`<urlset><url><loc>`); each loc's path is requested.
        #[arg(long, value_name = "FILE", group = "from")]
        sitemap: Option<PathBuf>,
        /// A file with one URL or URL path per line.
        #[arg(long, value_name = "FILE", group = "from")]
        urls: Option<PathBuf>,
        /// Every `.xml` document under this root (the server's), at its URL.
        #[arg(long, value_name = "DIR", group = "from")]
        root: Option<PathBuf>,
        /// Requests at once.
        #[arg(long, default_value_t = 8)]
        concurrency: usize,
    },
    /// Ask a running server's admin listener (`serve --admin ADDR`) about
    /// its cache, or tell it files changed.
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
    /// Validate a site configuration without serving: its keys and values,
    /// and that every stylesheet and program it names exists under the
    /// root. Every problem is listed, then how many there are.
    Check {
        /// The configuration file [default: axle.toml in the root].
        #[arg(long)]
        config: Option<PathBuf>,
        /// The document root the configuration's paths resolve against
        /// [default: the directory of --config, else as for `serve`].
        #[arg(long)]
        root: Option<PathBuf>,
    },
    /// Render one document through its chain to stdout (like xsltproc, but
    /// following the document's <?xml-stylesheet?> PIs).
    Render {
        /// The document.
        file: PathBuf,
        /// A stylesheet parameter (repeatable), passed as a string.
        #[arg(long = "param", value_parser = parse_param)]
        params: Vec<(String, String)>,
        /// A stylesheet to apply instead of the document's <?xml-stylesheet?>
        /// PIs (repeatable: a chain, in order), like `xsltproc STYLESHEET FILE`.
        #[arg(long = "stylesheet")]
        stylesheets: Vec<PathBuf>,
        /// Write the source and every stage's output under DIR, mirroring the
        /// URL path (`/a/doc.xml` → `DIR/a/doc.xml.0` for the source, `.1`,
        /// `.2`, ... for each stage's output).
        #[arg(long, value_name = "DIR")]
        trace: Option<PathBuf>,
        /// The document root that hrefs like "/stylesheets/x.xsl" resolve
        /// against [default: the nearest directory above FILE holding an
        /// axle.toml, else the current directory if it contains FILE, else
        /// FILE's directory].
        #[arg(long)]
        root: Option<PathBuf>,
        #[command(flatten)]
        dtds: DtdArgs,
    },
}

/// `axle cache …`.
#[derive(Subcommand, Debug)]
enum CacheAction {
    /// Print the cache's counters (hits, misses, tiers, stage times) as JSON.
    Stats {
        /// The admin listener's address, as given to `serve --admin`: PORT
        /// or :PORT (127.0.0.1:PORT), HOST:PORT, [IPv6]:PORT or
        /// http://HOST:PORT.
        #[arg(long, value_name = "ADDR", value_parser = parse_client)]
        admin: Address,
    },
    /// Drop stored responses whose URL path starts with PREFIX (all of them
    /// without it), in every tier, and forget remembered file hashes.
    Purge {
        /// The admin listener's address (as for `cache stats`).
        #[arg(long, value_name = "ADDR", value_parser = parse_client)]
        admin: Address,
        /// A URL path prefix, e.g. /docs/.
        prefix: Option<String>,
    },
}

/// `axle cache stats|purge`: one request to the admin listener; the
/// answer's JSON printed, a non-2xx status an error.
async fn cache_command(action: CacheAction) -> Result<(), String> {
    let (addr, method, path) = match &action {
        CacheAction::Stats { admin } => (admin, "GET", "/stats".to_string()),
        CacheAction::Purge { admin, prefix } => {
            let path = match prefix {
                Some(p) => format!(
                    "/purge?prefix={}",
                    percent_encoding::utf8_percent_encode(p, percent_encoding::NON_ALPHANUMERIC)
                ),
                None => "/purge".to_string(),
            };
            (admin, "POST", path)
        }
    };
    let (status, body) = axle::http::admin::client::request(addr, method, &path).await?;
    let pretty = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or(body);
    if !(200..300).contains(&status) {
        return Err(format!("the admin listener answered {status}: {pretty}"));
    }
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{pretty}").and_then(|()| out.flush()) {
        // `axle cache stats | head` is not an error (as for `render`).
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(|e| format!("writing the answer: {e}")),
    }
}

/// `serve`'s root when `--root` is not given (and `check`'s, with neither
/// `--root` nor `--config`): `axle::config::choose_root`'s rule, in the
/// current directory.
fn default_root() -> axle::config::ChosenRoot {
    axle::config::choose_root(Path::new("."), axle::http::CONFIG_FILE)
}

fn parse_param(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("'{text}' is not name=value"))
}

/// The log filter without `RUST_LOG`. The redis crate's own warnings are
/// left out: its cluster client says one per node per failed connection
/// attempt, where the shared tier says one line per change of state.
const DEFAULT_LOG_FILTER: &str = "axle=info,redis=error,warn";

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER)),
        )
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    axle::ffi::init();
    let cli = match parse_cli() {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("axle: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Check { config, root } => check(config, root),
        Command::Serve {
            root,
            listen,
            reuse_port,
            cache,
            cache_size,
            workers,
            io_threads,
            handoff_window,
            freshness,
            cache_dir,
            cache_dir_size,
            admin,
            admin_host,
            pid_file,
            access_log,
            access_log_format,
            config: site_file,
            dtds,
            limits,
            shared,
        } => {
            set_shared_dtds(&dtds);
            let (root, root_chosen) = match root {
                Some(root) => (root, None),
                None => {
                    let chosen = default_root();
                    (chosen.path, Some(chosen.how.to_string()))
                }
            };
            let mut config = ServeConfig::new(root);
            config.root_chosen = root_chosen;
            config.listen = listen;
            config.reuse_port = reuse_port;
            config.cache_mode = cache;
            config.cache_size = cache_size;
            config.workers = workers;
            config.io_threads = io_threads;
            config.handoff_window = handoff_window;
            config.freshness = freshness;
            config.cache_dir = cache_dir;
            config.cache_dir_size = cache_dir_size;
            config.admin = admin;
            config.admin_hosts = admin_host;
            config.pid_file = pid_file;
            config.access_log = access_log.map(|path| axle::config::AccessLogConfig {
                path,
                format: access_log_format,
            });
            let mut builder = axle::Server::builder(&config.root)
                .config(config)
                // The flags win over the file's [limits].
                .configure(move |config| {
                    limits.apply(config);
                    shared.apply(config);
                });
            if let Some(file) = site_file {
                builder = builder.site_file(file);
            }
            let served = builder
                .build()
                // A configuration's problems, one per line, each as its own message.
                .map_err(|e| e.to_string().replace('\n', "\naxle: "))
                .and_then(|server| runtime.block_on(server.serve()).map_err(|e| e.to_string()));
            if served.is_ok() {
                // Stopped by a signal, the shutdown timeout spent: a
                // transform still running on the pool cannot be joined, so
                // the process ends here rather than wait for it.
                let _ = std::io::Write::flush(&mut std::io::stdout());
                // FastCGI workers are stopped, not left behind.
                axle::fastcgi::stop_all();
                std::process::exit(0);
            }
            served
        }
        Command::Build { root, out } => axle::export::command(&root, &out)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Command::Cache { action } => runtime.block_on(cache_command(action)),
        Command::Warm {
            server,
            sitemap,
            urls,
            root,
            concurrency,
        } => {
            let source = match (sitemap, urls, root) {
                (Some(f), _, _) => Ok(axle::warm::Source::Sitemap(f)),
                (_, Some(f), _) => Ok(axle::warm::Source::List(f)),
                (_, _, Some(d)) => Ok(axle::warm::Source::Root(d)),
                _ => Err("name the URLs: --sitemap FILE, --urls FILE or --root DIR".to_string()),
            };
            source.and_then(|source| {
                axle::warm::command(&server, &source, concurrency)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            })
        }
        Command::Render {
            file,
            params,
            stylesheets,
            trace,
            root,
            dtds,
        } => {
            set_shared_dtds(&dtds);
            runtime.block_on(render(&file, params, &stylesheets, trace, root))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("axle: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The arguments, with `--version` also naming the libxml2 and libxslt
/// this process runs with (the system libraries, read at run time).
fn parse_cli() -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let version = format!(
        "{} ({})",
        env!("CARGO_PKG_VERSION"),
        axle::ffi::library_versions()
    );
    let matches = Cli::command()
        .version(version.clone())
        .long_version(version)
        .try_get_matches()?;
    Cli::from_arg_matches(&matches)
}

fn set_shared_dtds(args: &DtdArgs) {
    if args.no_shared_dtds {
        axle::ffi::set_shared_dtds(false);
    }
}

/// `axle check` ([`axle::site::check_target`] says which file and root):
/// every problem printed, then how many.
fn check(config: Option<PathBuf>, root: Option<PathBuf>) -> Result<(), String> {
    let target = axle::site::check_target(config.as_deref(), root.as_deref(), Path::new("."))?;
    let problems = axle::site::check(&target, Registry::default());
    let (file, root) = (target.file.display(), target.root.display());
    if problems.is_empty() {
        println!("axle: {file} is valid for the root {root}");
        return Ok(());
    }
    for problem in &problems {
        eprintln!("axle: {problem}");
    }
    let n = problems.len();
    let s = if n == 1 { "" } else { "s" };
    Err(format!("{n} problem{s} in {file} (document root {root})"))
}

/// How `render` found its root, for messages.
struct RenderRoot {
    path: PathBuf,
    how: &'static str,
}

/// `render`'s root: `--root`, else the nearest directory above the file
/// that holds an `axle.toml` (a site's root, as `serve` would use it), else
/// the current directory if it contains the file, else the file's directory.
fn render_root(file: &Path, explicit: Option<PathBuf>) -> Result<RenderRoot, String> {
    if let Some(r) = explicit {
        let path = r
            .canonicalize()
            .map_err(|e| format!("document root {}: {e}", r.display()))?;
        return Ok(RenderRoot {
            path,
            how: "given by --root",
        });
    }
    if let Some(dir) = file
        .ancestors()
        .skip(1)
        .find(|d| d.join(axle::http::CONFIG_FILE).is_file())
    {
        return Ok(RenderRoot {
            path: dir.to_path_buf(),
            how: "the nearest directory above the document with an axle.toml",
        });
    }
    let cwd = std::env::current_dir()
        .and_then(|c| c.canonicalize())
        .map_err(|e| format!("the current directory: {e}"))?;
    if file.starts_with(&cwd) {
        return Ok(RenderRoot {
            path: cwd,
            how: "the current directory",
        });
    }
    Ok(RenderRoot {
        path: file.parent().map(Path::to_path_buf).unwrap_or_default(),
        how: "the document's directory",
    })
}

async fn render(
    file: &Path,
    params: Vec<(String, String)>,
    stylesheets: &[PathBuf],
    trace: Option<PathBuf>,
    root: Option<PathBuf>,
) -> Result<(), String> {
    let canonical = |p: &Path| {
        p.canonicalize()
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    let file = canonical(file)?;
    let RenderRoot { path: root, how } = render_root(&file, root)?;
    // A stylesheet that cannot be found is reported with the root in use:
    // an href such as "/stylesheets/x.xsl" names different files under
    // different roots.
    let with_root = |message: String| {
        format!(
            "{message}\naxle: the document root is {} ({how}); pass --root DIR to use another",
            root.display()
        )
    };
    // Root-relative, percent-encoded URL path of a file under the root.
    let url_of = |path: &Path| -> Result<String, String> {
        let rel = path.strip_prefix(&root).map_err(|_| {
            format!(
                "{} is not under the root {}",
                path.display(),
                root.display()
            )
        })?;
        let parts: Vec<String> = rel
            .components()
            .map(|c| {
                let text = c.as_os_str().to_string_lossy();
                percent_encoding::utf8_percent_encode(&text, percent_encoding::NON_ALPHANUMERIC)
                    .to_string()
            })
            .collect();
        Ok(format!("/{}", parts.join("/")))
    };
    // The site configuration applies as it would when serving.
    let site = match axle::http::site_config_path(&root, None) {
        Some(path) => {
            axle::site::SiteConfig::load(&path, Registry::default()).map_err(|e| e.to_string())?
        }
        None => axle::site::SiteConfig::defaults(Registry::default()),
    };
    let location = site.location(&url_of(&file)?);
    let chosen = axle::http::Chosen {
        selection: axle::chain::Selection {
            style: location.style.clone(),
            media: location.media.clone(),
        },
        from_client: false,
    };
    let mut request = axle::http::render_request_for(&location, &chosen, &params);
    request.trace = trace.or(request.trace);
    if !stylesheets.is_empty() {
        request.processor_order = axle::chain::ProcessorOrder::Instead;
    }
    for sheet in stylesheets {
        request.processors.push(axle::chain::Processor::always(
            "text/xsl",
            &url_of(&canonical(sheet)?)?,
        ));
    }
    let mut config = ServeConfig::new(&root);
    config.cache_mode = CacheMode::Off;
    let pipeline = Pipeline::new(&config, Registry::default()).map_err(|e| e.to_string())?;
    // What `serve` never reads, `render` never reads either.
    let files = pipeline.provider();
    files.set_root(files.root().to_path_buf(), site.private_set());
    let located = pipeline
        .provider()
        .locate(&url_of(&file)?)
        .map_err(|e| e.to_string())?;
    if located.kind != ResourceKind::File {
        return Err(format!("{} is not a file", file.display()));
    }
    let rendered = pipeline.render(&located, &request).await.map_err(|e| {
        // Which files a stylesheet href names depends on the root.
        let names_a_stylesheet = matches!(e, axle::pipeline::PipelineError::Chain(_));
        let message = HttpError::from_pipeline(e, &root).to_string();
        if names_a_stylesheet {
            with_root(message)
        } else {
            message
        }
    })?;
    let mut out = std::io::stdout().lock();
    match out.write_all(&rendered.body).and_then(|()| out.flush()) {
        // A reader that stopped early (`axle render doc.xml | head`) is not
        // an error worth a message, as for any Unix filter.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(|e| format!("writing the output: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axle::config::{HttpLimits, RenderLimits};
    use clap::CommandFactory;

    #[test]
    fn the_flags_defaults_are_the_library_defaults() {
        let cli = Cli::try_parse_from(["axle", "serve"]).unwrap();
        let Command::Serve { limits, .. } = cli.command else {
            panic!("not serve");
        };
        let mut config = ServeConfig::new(".");
        limits.apply(&mut config);
        assert_eq!(config.http, HttpLimits::default());
        assert_eq!(config.render, RenderLimits::default());
        // Each documented default is the library's.
        let help = Cli::command()
            .find_subcommand_mut("serve")
            .unwrap()
            .render_long_help()
            .to_string();
        // Each flag's own help names its default, and that default parses
        // to the library's value.
        let documented = |flag: &str| -> String {
            let at = help.find(&format!("{flag} <")).expect(flag);
            let rest = &help[at..];
            let start = rest.find("[default: ").expect(flag) + "[default: ".len();
            let end = start + rest[start..].find(']').expect(flag);
            rest[start..end].to_string()
        };
        let (http, render) = (HttpLimits::default(), RenderLimits::default());
        for (flag, value) in [
            ("--header-timeout", http.header_timeout),
            ("--keepalive-timeout", http.keepalive_timeout),
            ("--write-timeout", http.write_timeout),
            ("--shutdown-timeout", http.shutdown_timeout),
            ("--render-timeout", render.timeout),
        ] {
            assert_eq!(parse_duration(&documented(flag)), Ok(value), "{flag}");
        }
        for (flag, value) in [
            ("--render-memory", render.memory),
            ("--max-source-size", render.max_source_bytes),
            ("--max-output-size", render.max_output_bytes),
            ("--max-body-size", http.max_body_bytes as u64),
            ("--max-compress-size", http.max_compress_bytes),
            ("--max-header-size", http.max_header_bytes as u64),
            ("--max-uri-size", http.max_uri_bytes as u64),
            ("--max-xinclude-nodes", render.max_xinclude_nodes),
        ] {
            assert_eq!(parse_size(&documented(flag)), Ok(value), "{flag}");
        }
        for (flag, value) in [
            ("--max-connections", http.max_connections),
            ("--max-header-count", http.max_header_count),
            ("--max-query-params", http.max_query_params),
            ("--max-form-fields", http.max_form_fields),
            ("--max-chain", render.max_chain),
            ("--max-nested", render.max_nested),
            ("--max-queue", render.max_queue),
            ("--max-per-url", render.max_per_url),
            ("--max-post-depth", render.client.max_depth as usize),
            (
                "--max-post-attributes",
                render.client.max_attributes as usize,
            ),
            (
                "--max-post-amplification",
                render.client.max_amplification as usize,
            ),
        ] {
            assert_eq!(documented(flag), value.to_string(), "{flag}");
        }
        let shared = axle::cache::SharedCacheSettings::default();
        assert_eq!(documented("--shared-cache-prefix"), shared.prefix);
        for (flag, value) in [
            ("--shared-cache-ttl", shared.ttl),
            ("--shared-cache-timeout", shared.timeout),
            ("--shared-cache-lock-wait", shared.lock_wait),
        ] {
            assert_eq!(parse_duration(&documented(flag)), Ok(value), "{flag}");
        }
        assert_eq!(
            parse_size(&documented("--shared-cache-max-entry")),
            Ok(shared.max_entry)
        );
        let given = Cli::try_parse_from([
            "axle",
            "serve",
            "--render-timeout",
            "2s",
            "--max-chain",
            "3",
        ])
        .unwrap();
        let Command::Serve { limits, .. } = given.command else {
            panic!("not serve");
        };
        limits.apply(&mut config);
        assert_eq!(config.render.timeout, Duration::from_secs(2));
        assert_eq!(config.render.max_chain, 3);
        assert_eq!(config.http, HttpLimits::default());
    }
}
