//! The server builder: the public extension API. A user's own binary
//! registers Languages by MIME type, mounts dynamic sources at location
//! prefixes, loads `axle.toml`, picks the cache mode and serves on the
//! same connection loop `axle serve` uses (`axle serve` is built through
//! it too).
//!
//! ```no_run
//! use std::sync::Arc;
//! use axle::dynamic::{BoxFuture, DynamicProvider, Produced, SourceError, SourceRequest};
//! use axle::language::{Language, LanguageError, Resource, Stage, StageContext, StageData, StageOutput};
//!
//! /// A Language that hands its input on unchanged.
//! struct Same;
//! struct SameStage;
//! impl Language for Same {
//!     fn name(&self) -> &str { "same" }
//!     fn compile(&self, _: &Resource<'_>) -> Result<Arc<dyn Stage>, LanguageError> {
//!         Ok(Arc::new(SameStage))
//!     }
//! }
//! impl Stage for SameStage {
//!     fn run(&self, input: StageData, _: &StageContext<'_>) -> Result<StageOutput, LanguageError> {
//!         Ok(StageOutput { data: input, content_type: None })
//!     }
//! }
//!
//! /// A source that makes the same small document for every URL.
//! struct Hello;
//! impl DynamicProvider for Hello {
//!     fn describe(&self) -> String { "hello".into() }
//!     fn produce<'a>(&'a self, r: &'a SourceRequest) -> BoxFuture<'a, Result<Produced, SourceError>> {
//!         let doc = format!("<hello path='{}'/>", r.path_info.replace('\'', ""));
//!         Box::pin(async move { Ok(Produced { bytes: doc.into(), cacheable: true, status: None }) })
//!     }
//! }
//!
//! fn main() -> std::io::Result<()> {
//!     axle::Server::builder("samples")
//!         .listen("127.0.0.1:8080".parse().unwrap())
//!         .cache_mode(axle::CacheMode::Incremental)
//!         .language("application/x-same", Same)
//!         .provider("/hello", Hello)
//!         .build()?
//!         .run()
//! }
//! ```

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use crate::config::{CacheMode, ServeConfig};
use crate::dynamic::{DynamicProvider, Mount};
use crate::http::{self, App};
use crate::language::{Language, Registry};
use crate::site::SiteConfig;

/// A built server: its [`App`] (the pipeline, the site configuration,
/// the limits) and the settings it serves with.
pub struct Server {
    app: Arc<App>,
    config: ServeConfig,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("root", &self.config.root)
            .field("listen", &self.config.listen)
            .field("cache_mode", &self.config.cache_mode)
            .finish()
    }
}

/// What can go wrong while building a server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A Language could not be registered (another Language has its name).
    #[error("cannot register {mime}: {error}")]
    Language {
        /// The MIME type.
        mime: String,
        /// Why.
        error: crate::language::RegistryError,
    },
    /// A mount's prefix is not a URL path prefix.
    #[error("cannot mount {describe} at {prefix:?}: a prefix is a URL path starting with '/'")]
    Prefix {
        /// The prefix given.
        prefix: String,
        /// The source.
        describe: String,
    },
    /// The configuration file does not load.
    #[error(transparent)]
    Config(#[from] crate::site::ConfigErrors),
    /// The document root or the configuration file's place is refused, or
    /// the pipeline cannot start.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<BuildError> for std::io::Error {
    fn from(e: BuildError) -> std::io::Error {
        match e {
            BuildError::Io(e) => e,
            other => std::io::Error::other(other),
        }
    }
}

/// Builds a [`Server`]: see [`Server::builder`].
#[must_use]
pub struct Builder {
    config: ServeConfig,
    registry: Registry,
    errors: Vec<BuildError>,
    mounts: Vec<Mount>,
    site_file: SiteFile,
    overrides: Vec<Override>,
}

/// A change to the settings, applied after the configuration file's.
type Override = Box<dyn FnOnce(&mut ServeConfig) + Send>;

/// Which configuration file a builder loads.
enum SiteFile {
    /// `axle.toml` in the root, when there is one.
    Default,
    /// This file.
    Path(PathBuf),
    /// None at all.
    None,
}

impl Server {
    /// A builder for a server of the documents under `root`, with the
    /// defaults `axle serve` has: listening on 127.0.0.1:8080, incremental
    /// caching, XSLT and passthru registered, `root/axle.toml` loaded when
    /// it exists.
    pub fn builder(root: impl Into<PathBuf>) -> Builder {
        Builder {
            config: ServeConfig::new(root),
            registry: Registry::default(),
            errors: Vec::new(),
            mounts: Vec::new(),
            site_file: SiteFile::Default,
            overrides: Vec::new(),
        }
    }

    /// The application: its pipeline (statistics, the store) and site
    /// configuration.
    pub fn app(&self) -> &Arc<App> {
        &self.app
    }

    /// The settings it serves with (the configuration file's `[limits]`
    /// applied).
    pub fn config(&self) -> &ServeConfig {
        &self.config
    }

    /// Serves on the configured address with the configured I/O threads
    /// until Ctrl-C or SIGTERM; SIGHUP reloads the configuration file
    /// (mounts and Languages registered here stay). Returns after the
    /// shutdown timeout; transforms still running are not waited for (end
    /// the process).
    pub async fn serve(self) -> std::io::Result<()> {
        http::serve_app(self.app, &self.config).await
    }

    /// Serves on `listener` (one I/O thread: the caller's runtime) until
    /// `shutdown` completes: for tests and embedding, on an ephemeral port.
    pub async fn serve_on(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        http::serve_on(listener, self.app, shutdown).await
    }

    /// [`Server::serve`] on a runtime of its own, blocking: what a `main`
    /// calls. Exits the process when the server stops after a signal (a
    /// transform still running cannot be joined).
    pub fn run(self) -> std::io::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(self.serve())?;
        let _ = std::io::Write::flush(&mut std::io::stdout());
        std::process::exit(0)
    }
}

impl Builder {
    /// Starts from these Languages instead of the default registry (XSLT
    /// and passthru).
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// Starts from these settings (root, listen address, cache mode, sizes,
    /// limits) instead of the defaults.
    pub fn config(mut self, config: ServeConfig) -> Self {
        self.config = config;
        self
    }

    /// The address to listen on.
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.config.listen = addr;
        self
    }

    /// The cache mode (`off`, `all`, `incremental`).
    pub fn cache_mode(mut self, mode: CacheMode) -> Self {
        self.config.cache_mode = mode;
        self
    }

    /// Registers `language` for stylesheet PIs and processors of type
    /// `mime` (case-insensitive), next to XSLT and passthru. A Language
    /// whose name another one has already is an error at
    /// [`Builder::build`] (names are part of cache keys).
    pub fn language(mut self, mime: &str, language: impl Language) -> Self {
        let language: Arc<dyn Language> = Arc::new(language);
        if let Err(error) = self.registry.register(mime, language) {
            self.errors.push(BuildError::Language {
                mime: mime.to_string(),
                error,
            });
        }
        self
    }

    /// Adds `taglib` to the XSP Language (`application/x-xsp`): its
    /// namespace's elements in XSP pages compile through it
    /// (`docs/xsp.md`). Taglibs stay across reloads of the configuration
    /// file.
    pub fn taglib(mut self, taglib: impl crate::language::xsp::Taglib) -> Self {
        self.registry.add_taglib(Arc::new(taglib));
        self
    }

    /// Mounts `provider` at `prefix` (`/live`): every URL under it is
    /// answered from the documents it produces, as a location's `provider`
    /// key would. A mount wins over the configuration file's `provider` at
    /// the same prefix; the file's other settings for it still apply.
    pub fn provider(self, prefix: &str, provider: impl DynamicProvider) -> Self {
        self.mount(prefix, Arc::new(provider), false)
    }

    /// [`Builder::provider`] for a source whose documents are the client's
    /// own (a request body): a document the parser refuses is then the
    /// client's error (400), not the source's (502).
    pub fn client_provider(self, prefix: &str, provider: impl DynamicProvider) -> Self {
        self.mount(prefix, Arc::new(provider), true)
    }

    fn mount(
        mut self,
        prefix: &str,
        provider: Arc<dyn DynamicProvider>,
        client_document: bool,
    ) -> Self {
        if !prefix.starts_with('/') {
            self.errors.push(BuildError::Prefix {
                prefix: prefix.to_string(),
                describe: provider.describe(),
            });
            return self;
        }
        self.mounts.push(Mount {
            prefix: prefix.to_string(),
            provider,
            client_document,
        });
        self
    }

    /// Adds `tier` to the output cache, below memory and the disk tier
    /// (`--cache-dir`) and any tier added before it. Final responses are
    /// written to it; a memory miss asks it, and what it answers is checked
    /// (the bytes against their hash, every recorded dependency against the
    /// files) before it is served and promoted. `X-Axle-Cache` then says
    /// `hit; tier=NAME`.
    pub fn cache_tier(mut self, tier: impl crate::cache::Cache) -> Self {
        self.config.tiers.0.push(Arc::new(tier));
        self
    }

    /// Loads this configuration file instead of `axle.toml` in the root. A
    /// file inside the root under another name is refused at
    /// [`Builder::build`] (it could be served).
    pub fn site_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.site_file = SiteFile::Path(path.into());
        self
    }

    /// Loads no configuration file, not even `axle.toml` in the root.
    pub fn no_site_file(mut self) -> Self {
        self.site_file = SiteFile::None;
        self
    }

    /// Changes the settings after the configuration file's `[limits]` are
    /// applied, so what `change` sets wins over the file (what `axle
    /// serve`'s flags do).
    pub fn configure(mut self, change: impl FnOnce(&mut ServeConfig) + Send + 'static) -> Self {
        self.overrides.push(Box::new(change));
        self
    }

    /// Loads the configuration file, applies its `[limits]` and
    /// `[shared-cache]` (then
    /// [`Builder::configure`]'s changes), starts the pipeline and mounts
    /// the sources. Nothing listens yet.
    pub fn build(mut self) -> Result<Server, BuildError> {
        if let Some(e) = self.errors.drain(..).next() {
            return Err(e);
        }
        let explicit = match &self.site_file {
            SiteFile::Path(p) => Some(p.as_path()),
            _ => None,
        };
        let path = match self.site_file {
            SiteFile::None => None,
            _ => http::site_config_path(&self.config.root, explicit),
        };
        let site = match &path {
            Some(path) => {
                http::refuse_servable_config(&self.config.root, path)?;
                let site = SiteConfig::load_in(path, self.registry.clone(), &self.config.root)?;
                site.limits()
                    .apply(&mut self.config.http, &mut self.config.render);
                site.shared_cache().apply(&mut self.config.shared_cache);
                http::warn_about_references(&site, &self.config.root);
                site
            }
            None => SiteConfig::defaults(self.registry.clone()),
        };
        for change in self.overrides {
            change(&mut self.config);
        }
        let app = App::with_mounts(&self.config, self.registry, site, self.mounts)?;
        Ok(Server {
            app,
            config: self.config,
        })
    }
}
