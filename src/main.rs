//! The `axle` command: `serve` a document root, or `render` one document to
//! stdout. Thin: parses arguments and calls the library.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use axle::Registry;
use axle::config::{CacheMode, DEFAULT_CACHE_SIZE, Freshness, ServeConfig, parse_size};
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
/// (benches/load/results/site-mimalloc-2026-12-02/).
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
    /// Parse every document's DTD for that document, instead of parsing an
    /// external DTD once and lending it to later documents that name it
    /// (the same trees either way; this is the switch to compare them).
    #[arg(long, global = true)]
    no_shared_dtds: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve a document root over HTTP.
    Serve {
        /// The document root (default: the bundled samples/).
        #[arg(long, default_value_os_t = default_root())]
        root: PathBuf,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Cache strategy.
        #[arg(long, value_enum, default_value_t = CacheMode::Incremental)]
        cache: CacheMode,
        /// Memory budget of the output cache (e.g. 256MiB, 1G).
        #[arg(long, value_parser = parse_size, default_value_t = DEFAULT_CACHE_SIZE)]
        cache_size: u64,
        /// Transform threads (0: one per CPU).
        #[arg(long, default_value_t = 0)]
        workers: usize,
        /// Threads serving connections, each with its own listener on the
        /// same address (0: one per CPU).
        #[arg(long, default_value_t = 0)]
        io_threads: usize,
        /// How a cached response is checked: `watch` (inotify; a hit costs
        /// no stat) or `check` (stat every file it came from, per request;
        /// for network filesystems and hard-linked trees).
        #[arg(long, value_enum, default_value_t = Freshness::Watch)]
        freshness: Freshness,
        /// The site configuration (default: axle.toml in the root, if any).
        /// SIGHUP reloads it.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Validate a site configuration file without serving.
    Check {
        /// The configuration file.
        #[arg(long)]
        config: PathBuf,
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
        /// Write the source and every stage's output into DIR (as
        /// `<name>.0`, `<name>.1`, ...).
        #[arg(long, value_name = "DIR")]
        trace: Option<PathBuf>,
        /// The document root that hrefs like "/stylesheets/x.xsl" resolve
        /// against (default: the current directory if it contains FILE,
        /// else FILE's directory).
        #[arg(long)]
        root: Option<PathBuf>,
    },
}

fn default_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples")
}

fn parse_param(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("'{text}' is not name=value"))
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("axle=info,warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    axle::ffi::init();
    let cli = Cli::parse();
    if cli.no_shared_dtds {
        axle::ffi::set_shared_dtds(false);
    }
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
        Command::Check { config } => {
            match axle::site::SiteConfig::load(&config, Registry::default()) {
                Ok(_) => {
                    println!("axle: {} is valid", config.display());
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            }
        }
        Command::Serve {
            root,
            listen,
            cache,
            cache_size,
            workers,
            io_threads,
            freshness,
            config: site_file,
        } => {
            let mut config = ServeConfig::new(root);
            config.listen = listen;
            config.cache_mode = cache;
            config.cache_size = cache_size;
            config.workers = workers;
            config.io_threads = io_threads;
            config.freshness = freshness;
            runtime
                .block_on(axle::http::serve_with(
                    &config,
                    Registry::default(),
                    site_file.as_deref(),
                ))
                .map_err(|e| e.to_string())
        }
        Command::Render {
            file,
            params,
            stylesheets,
            trace,
            root,
        } => runtime.block_on(render(&file, params, &stylesheets, trace, root)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("axle: {message}");
            ExitCode::FAILURE
        }
    }
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
    let root = match root {
        Some(r) => canonical(&r)?,
        None => {
            let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
            match cwd.canonicalize() {
                Ok(c) if file.starts_with(&c) => c,
                _ => file.parent().map(Path::to_path_buf).unwrap_or_default(),
            }
        }
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
    let located = pipeline
        .provider()
        .locate(&url_of(&file)?)
        .map_err(|e| e.to_string())?;
    if located.kind != ResourceKind::File {
        return Err(format!("{} is not a file", file.display()));
    }
    let rendered = pipeline
        .render(&located, &request)
        .await
        .map_err(|e| HttpError::from_pipeline(e, &root).to_string())?;
    let mut out = std::io::stdout().lock();
    out.write_all(&rendered.body)
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())
}
