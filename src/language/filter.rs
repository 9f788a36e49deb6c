//! External filter Languages: a stylesheet MIME type mapped to a command,
//! so that a stage can be any program, with no Rust written.
//!
//! A PI of the filter's type (`<?xml-stylesheet type="application/x-shout"
//! href="shout.py"?>`) runs the command on the stage's input: the input's
//! bytes on stdin, stdout is the output (XML for the next stage, or the
//! response with the configured Content-Type when it is the last stage).
//! The command is an argv list run through [`crate::exec`] (never a shell)
//! in the document root, with a cleared environment: the allow-listed
//! variables of the server's own, plus `AXLE_RESOURCE` (the href's file,
//! absolute, when there is one), `AXLE_RESOURCE_URL`, `AXLE_BASE_URL` (the
//! document), `AXLE_STAGE_FINAL` (`1`/`0`) and `AXLE_PARAM_<name>` for each
//! stage param (and the run's marker `AXLE_RUN`, [`crate::exec`]'s, by
//! which what the command starts is killed when the run ends). Request
//! data reaches the command only through stdin and
//! this environment, never its argv. The href may name no file at all
//! ([`Language::resource_optional`]).
//!
//! The stage's key. A stage's identity in every cache key is its closure
//! hash (`pipeline::compiled`): the Language's name and version, its
//! [`Language::config_hash`], the resource's URL and every file the compile
//! recorded with its content hash. So:
//! - the name is `filter:<type>`, stable and readable (it is what the
//!   site configuration's `[types]` can name, and the registry refuses two
//!   Languages of one name);
//! - everything configured that can change an output (argv as written,
//!   the executable it resolved to, the working directory, the allowed
//!   environment's names *and values*, the Content-Type, the limits,
//!   `cacheable`) is hashed once at construction into the config hash, so a
//!   reloaded configuration with another command never shares compiled
//!   stages or outputs with the old one;
//! - the *content* of what the command runs is recorded as dependencies
//!   on every compile: the executable (its canonical file, and the name
//!   it was found by when links differ, so an upgrade that re-points
//!   `/usr/bin/python3` counts), every argv element that names an existing
//!   regular file relative to the root (a script such as `shout.py`), and
//!   the optional version file (absent recorded as absent). The
//!   compiled-stage cache re-checks these on every use: an edited script,
//!   an upgraded interpreter or a bumped version file means a recompile,
//!   a new closure and new keys. What the executable loads by itself (an
//!   interpreter's library, a module a script imports) is not seen: that
//!   is what the version file is for.
//!
//! Failures are [`LanguageError::External`]: a non-zero exit, a death by
//! signal, a failed start or output past the limit are
//! [`ExternalFailure::Failed`], the timeout [`ExternalFailure::Timeout`],
//! a full queue [`ExternalFailure::Busy`]. The message names the filter
//! (type and `argv[0]`) and the reason in one line; the command's stderr
//! goes to the log (`tracing::warn!`, with the document, the stage's
//! resource and the exit status), never into the error.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{
    ExternalFailure, Language, LanguageError, Resource, Stage, StageContext, StageData, StageOutput,
};
use crate::cache::{ContentHash, Dep, KeyBuilder};
use crate::exec::{Concurrency, ExecError, Program};
use crate::provider::RootResolver;

/// Most characters of a filter's stderr in one log event.
const LOGGED_STDERR: usize = 2000;

/// One `[filter."type"]` of the site configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterConfig {
    /// The stylesheet MIME type a PI names to run this filter.
    pub mime: String,
    /// The command: `argv[0]` found on the server's `PATH` (or relative
    /// to the document root when it has a `/`), the rest its arguments.
    pub argv: Vec<String>,
    /// Wall-clock limit of one run (and of its wait in the queue).
    pub timeout: Duration,
    /// Most bytes of output one run may write.
    pub max_output: u64,
    /// Most runs of this filter at once.
    pub max_concurrent: usize,
    /// Most runs waiting for a turn; past it, 503 at once.
    pub max_queue: usize,
    /// Variables of the server's own environment passed to the command.
    pub env: Vec<String>,
    /// A file (relative to the document root, or absolute) whose content
    /// is part of the stage's key: bump it when the command's output
    /// changes in a way its files do not show.
    pub version_file: Option<PathBuf>,
    /// The response's Content-Type when the filter is the last stage
    /// (`None`: [`FilterConfig::DEFAULT_CONTENT_TYPE`]).
    pub content_type: Option<String>,
    /// May its output be cached ([`Stage::cacheable`])?
    pub cacheable: bool,
}

impl FilterConfig {
    /// Default `timeout`.
    pub const DEFAULT_TIMEOUT: Duration = Program::DEFAULT_TIMEOUT;
    /// Default `max_output`: 64 MiB.
    pub const DEFAULT_MAX_OUTPUT: u64 = Program::DEFAULT_MAX_OUTPUT;
    /// Default `max_queue`.
    pub const DEFAULT_MAX_QUEUE: usize = 64;
    /// Default `env`.
    pub const DEFAULT_ENV: [&'static str; 4] = ["PATH", "LANG", "LC_ALL", "TZ"];
    /// The Content-Type of the output as the last stage when none is
    /// configured: XML.
    pub const DEFAULT_CONTENT_TYPE: &'static str = "text/xml; charset=UTF-8";

    /// A filter for `mime` running `argv`, everything else by default.
    pub fn new(mime: impl Into<String>, argv: Vec<String>) -> FilterConfig {
        FilterConfig {
            mime: mime.into(),
            argv,
            timeout: FilterConfig::DEFAULT_TIMEOUT,
            max_output: FilterConfig::DEFAULT_MAX_OUTPUT,
            max_concurrent: FilterConfig::default_max_concurrent(),
            max_queue: FilterConfig::DEFAULT_MAX_QUEUE,
            env: FilterConfig::DEFAULT_ENV
                .iter()
                .map(|s| s.to_string())
                .collect(),
            version_file: None,
            content_type: None,
            cacheable: true,
        }
    }

    /// Default `max_concurrent`: the machine's available parallelism.
    pub fn default_max_concurrent() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
}

/// Why a filter cannot be configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError {
    /// The command cannot be run (empty, not found, not executable).
    #[error("the command {0}")]
    Program(#[from] ExecError),
    /// A setting is out of range.
    #[error("{0}")]
    Invalid(String),
}

/// A Language that runs a configured command (see the module docs).
#[derive(Debug)]
pub struct FilterLanguage {
    name: String,
    shared: Arc<Shared>,
    version_file: Option<PathBuf>,
    config_hash: ContentHash,
    config: FilterConfig,
}

/// What every compiled stage of one filter shares.
#[derive(Debug)]
struct Shared {
    mime: String,
    /// `filter <type> (<argv[0]>)`: how messages name it.
    label: String,
    program: Program,
    turns: Concurrency,
    content_type: Option<String>,
    cacheable: bool,
}

impl FilterLanguage {
    /// The filter `config` describes, its command run in `root` (the
    /// document root). Refused: an empty MIME type or argv, a command not
    /// found or not executable, a zero timeout or `max_concurrent`, an
    /// unusable Content-Type or variable name, a version file that is not
    /// a file.
    pub fn new(config: FilterConfig, root: &Path) -> Result<FilterLanguage, FilterError> {
        let mime = normalize_mime(&config.mime);
        if mime.is_empty() || mime.contains(char::is_whitespace) {
            return Err(FilterError::Invalid(format!(
                "{:?} is not a MIME type",
                config.mime
            )));
        }
        if config.timeout.is_zero() {
            return Err(FilterError::Invalid("the timeout must not be 0".into()));
        }
        if config.max_concurrent == 0 {
            return Err(FilterError::Invalid(
                "max-concurrent must be at least 1".into(),
            ));
        }
        if let Some(bad) = config
            .env
            .iter()
            .find(|n| n.is_empty() || n.contains(['=', '\0']))
        {
            return Err(FilterError::Invalid(format!(
                "{bad:?} is not an environment variable name"
            )));
        }
        if let Some(ct) = &config.content_type {
            let visible = ct.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b));
            if ct.trim().is_empty() || !visible {
                return Err(FilterError::Invalid(format!(
                    "{ct:?} is not a usable Content-Type"
                )));
            }
        }
        let program = Program::new(config.argv.clone(), root)?
            .with_env(Program::allowed_env(&config.env, &[]))
            .with_timeout(config.timeout)
            .with_max_output(config.max_output);
        let version_file = match &config.version_file {
            Some(v) => {
                let path = program.cwd().join(v);
                if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                    return Err(FilterError::Invalid(format!(
                        "the version file {} is not a file",
                        v.display()
                    )));
                }
                Some(path)
            }
            None => None,
        };
        let config_hash = hash_config(&mime, &config, &program, version_file.as_deref());
        let label = format!("filter {mime} ({})", config.argv[0]);
        Ok(FilterLanguage {
            name: format!("filter:{mime}"),
            shared: Arc::new(Shared {
                mime,
                label,
                turns: Concurrency::new(config.max_concurrent, config.max_queue),
                program,
                content_type: config.content_type.clone(),
                cacheable: config.cacheable,
            }),
            version_file,
            config_hash,
            config,
        })
    }

    /// The MIME type to register it under (lower case, no parameters).
    pub fn mime(&self) -> &str {
        &self.shared.mime
    }

    /// Its configuration, as given.
    pub fn config(&self) -> &FilterConfig {
        &self.config
    }

    /// The command as it runs.
    pub fn program(&self) -> &Program {
        &self.shared.program
    }
}

/// A MIME type as the registry keys it: lower case, without parameters.
pub(super) fn normalize_mime(mime: &str) -> String {
    mime.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Everything configured that can change a filter's output (see the module
/// docs); not the concurrency bounds, which only decide when it runs.
fn hash_config(
    mime: &str,
    config: &FilterConfig,
    program: &Program,
    version_file: Option<&Path>,
) -> ContentHash {
    let mut key = KeyBuilder::new("filter configuration");
    key.str(mime).u64(program.argv().len() as u64);
    for arg in program.argv() {
        key.str(arg);
    }
    key.bytes(program.executable().as_os_str().as_bytes())
        .bytes(program.cwd().as_os_str().as_bytes())
        .u64(program.env().len() as u64);
    for (name, value) in program.env() {
        key.str(name).str(value);
    }
    key.u64(u64::from(config.content_type.is_some()))
        .str(config.content_type.as_deref().unwrap_or(""))
        .u64(u64::from(config.cacheable))
        .u64(u64::try_from(config.timeout.as_millis()).unwrap_or(u64::MAX))
        .u64(config.max_output)
        .bytes(version_file.map_or(&[][..], |p| p.as_os_str().as_bytes()));
    key.finish_hash()
}

impl Language for FilterLanguage {
    fn name(&self) -> &str {
        &self.name
    }

    fn config_hash(&self) -> Option<ContentHash> {
        Some(self.config_hash)
    }

    fn resource_optional(&self) -> bool {
        true
    }

    /// Records what the command runs (executable, script arguments, version
    /// file) as the stage's dependencies; the command itself runs only in
    /// [`Stage::run`].
    fn compile(&self, resource: &Resource<'_>) -> Result<Arc<dyn Stage>, LanguageError> {
        let shared = &self.shared;
        let resolver = resource.resolver;
        record_file(resolver, shared.program.executable()).map_err(|e| {
            LanguageError::External {
                kind: ExternalFailure::Failed,
                message: format!("{}: its executable cannot be read: {e}", shared.label),
            }
        })?;
        for arg in &shared.program.argv()[1..] {
            let path = shared.program.cwd().join(arg);
            if std::fs::metadata(&path).is_ok_and(|m| m.is_file())
                && record_file(resolver, &path).is_err()
            {
                // Gone between the two looks: as good as absent.
                resolver.record(Dep::absent(path));
            }
        }
        if let Some(version) = &self.version_file {
            if record_file(resolver, version).is_err() {
                resolver.record(Dep::absent(version.clone()));
            }
        }
        let file = (!resource.missing)
            .then(|| resource.path.to_str().map(str::to_string))
            .flatten();
        Ok(Arc::new(FilterStage {
            shared: Arc::clone(shared),
            resource: file,
            resource_url: resource.url.to_string(),
        }))
    }
}

/// Records the file at `path` (absolute) with its content hash, under its
/// canonical path, and the name it was reached by when links made that
/// differ (so re-pointing the link counts as a change).
pub(super) fn record_file(resolver: &RootResolver, path: &Path) -> std::io::Result<()> {
    let fingerprints = resolver.fingerprints();
    let canonical = fingerprints.canonicalize(path)?;
    let hash = fingerprints.hash(&canonical)?;
    let mut dep = Dep::new(canonical, hash);
    if dep.path != path {
        dep.via = Some(Arc::from(path));
    }
    resolver.record(dep);
    Ok(())
}

/// A compiled filter stage: the filter and its resource.
struct FilterStage {
    shared: Arc<Shared>,
    /// The resource's absolute path, when it is a file (and UTF-8).
    resource: Option<String>,
    resource_url: String,
}

impl FilterStage {
    /// The request's part of the command's environment.
    fn request_env(&self, ctx: &StageContext<'_>) -> Vec<(String, String)> {
        let mut env = Vec::with_capacity(4 + ctx.params.len());
        if let Some(path) = &self.resource {
            env.push(("AXLE_RESOURCE".to_string(), path.clone()));
        }
        env.push(("AXLE_RESOURCE_URL".to_string(), self.resource_url.clone()));
        env.push(("AXLE_BASE_URL".to_string(), ctx.base_url.to_string()));
        env.push((
            "AXLE_STAGE_FINAL".to_string(),
            if ctx.is_final { "1" } else { "0" }.to_string(),
        ));
        for (name, value) in ctx.params {
            match param_variable(name) {
                Some(var) if !value.contains('\0') => env.push((var, value.clone())),
                _ => {
                    tracing::debug!(filter = %self.shared.mime, param = %name, "param not passed to the filter");
                }
            }
        }
        env
    }

    fn error(&self, e: &ExecError, ctx: &StageContext<'_>) -> LanguageError {
        let kind = match e {
            ExecError::Busy(_) => ExternalFailure::Busy,
            ExecError::Timeout(_) => ExternalFailure::Timeout,
            ExecError::Invalid(_)
            | ExecError::Spawn(_)
            | ExecError::Exit { .. }
            | ExecError::TooLarge(_)
            | ExecError::Io(_) => ExternalFailure::Failed,
        };
        let message = format!("{} {e}", self.shared.label);
        match e.stderr() {
            Some(stderr) => tracing::warn!(
                document = ctx.base_url,
                stage = %self.resource_url,
                filter = %self.shared.mime,
                program = %self.shared.program.argv()[0],
                status = %e,
                stderr = %excerpt(stderr),
                "filter failed"
            ),
            None => tracing::debug!(
                document = ctx.base_url,
                stage = %self.resource_url,
                filter = %self.shared.mime,
                reason = %e,
                "filter failed"
            ),
        }
        LanguageError::External { kind, message }
    }
}

/// `AXLE_PARAM_<name>` for a param name made of `[A-Za-z0-9_.-]` (`.` and
/// `-` become `_`); `None` for any other name.
pub(super) fn param_variable(name: &str) -> Option<String> {
    let usable = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    usable.then(|| format!("AXLE_PARAM_{}", name.replace(['.', '-'], "_")))
}

/// The start of a program's stderr, for one log event.
pub(super) fn excerpt(stderr: &str) -> String {
    let trimmed = stderr.trim_end();
    let mut out: String = trimmed.chars().take(LOGGED_STDERR).collect();
    if trimmed.chars().count() > LOGGED_STDERR {
        out.push('…');
    }
    out
}

impl Stage for FilterStage {
    fn run(&self, input: StageData, ctx: &StageContext<'_>) -> Result<StageOutput, LanguageError> {
        let input = input.into_bytes()?;
        let env = self.request_env(ctx);
        let shared = &self.shared;
        // The wait for a turn is bounded by the timeout too.
        let _turn = shared
            .turns
            .acquire(shared.program.timeout())
            .map_err(|e| self.error(&e, ctx))?;
        let output = shared
            .program
            .run_bytes(input, &env)
            .map_err(|e| self.error(&e, ctx))?;
        if !output.stderr.is_empty() {
            tracing::debug!(
                document = ctx.base_url,
                filter = %shared.mime,
                stderr = %excerpt(&output.stderr),
                "filter wrote to stderr"
            );
        }
        let content_type = ctx.is_final.then(|| {
            shared
                .content_type
                .clone()
                .unwrap_or_else(|| FilterConfig::DEFAULT_CONTENT_TYPE.to_string())
        });
        Ok(StageOutput {
            data: StageData::Bytes(output.stdout),
            content_type,
        })
    }

    fn cacheable(&self) -> bool {
        self.shared.cacheable
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Fingerprints;
    use crate::ffi::Limits;
    use crate::provider::FileProvider;
    use bytes::Bytes;

    const SHOUT: &str = "import sys\nsys.stdout.write(sys.stdin.read().upper())\n";

    fn argv(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    struct Site {
        _dir: tempfile::TempDir,
        root: PathBuf,
        files: FileProvider,
    }

    impl Site {
        fn new() -> Site {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().canonicalize().unwrap();
            std::fs::write(root.join("shout.py"), SHOUT).unwrap();
            let files = FileProvider::new(&root, Fingerprints::new(64)).unwrap();
            Site {
                _dir: dir,
                root,
                files,
            }
        }

        fn filter(&self, args: &[&str]) -> FilterLanguage {
            self.with(FilterConfig::new("application/x-test", argv(args)))
        }

        fn with(&self, config: FilterConfig) -> FilterLanguage {
            FilterLanguage::new(config, &self.root).unwrap()
        }

        /// Compiles `lang` for the resource `/shout.py` (or a missing
        /// `/none`), returning the stage and the dependencies recorded.
        fn compile(&self, lang: &FilterLanguage, missing: bool) -> (Arc<dyn Stage>, Vec<Dep>) {
            let resolver = self.files.resolver();
            let (path, url) = if missing {
                (self.root.join("none"), "/none")
            } else {
                (self.root.join("shout.py"), "/shout.py")
            };
            let bytes = std::fs::read(&path).unwrap_or_default();
            let mut resource = Resource::new(&path, url, &bytes, &resolver);
            if missing {
                resource = resource.as_missing();
            }
            let stage = lang.compile(&resource).unwrap();
            (stage, resolver.take_deps())
        }

        fn run(
            &self,
            stage: &Arc<dyn Stage>,
            input: &str,
            params: &[(String, String)],
            is_final: bool,
        ) -> Result<StageOutput, LanguageError> {
            let resolver = self.files.resolver();
            let limits = Limits::default();
            let ctx = StageContext::new("/doc.xml", params, is_final, &limits, &resolver);
            stage.run(StageData::Bytes(Bytes::from(input.to_string())), &ctx)
        }
    }

    fn text(out: &StageOutput) -> String {
        match &out.data {
            StageData::Bytes(b) => String::from_utf8(b.to_vec()).unwrap(),
            StageData::Dom(_) => panic!("a filter gives bytes"),
        }
    }

    #[test]
    fn a_python_filter_transforms_its_input_and_types_the_last_stage() {
        let site = Site::new();
        let lang = site.filter(&["python3", "shout.py"]);
        assert_eq!(lang.name(), "filter:application/x-test");
        assert!(lang.resource_optional());
        let (stage, _) = site.compile(&lang, false);
        assert!(stage.cacheable());
        let middle = site.run(&stage, "<a>hi</a>", &[], false).unwrap();
        assert_eq!(text(&middle), "<A>HI</A>");
        assert_eq!(middle.content_type, None);
        let last = site.run(&stage, "<a>hi</a>", &[], true).unwrap();
        assert_eq!(
            last.content_type.as_deref(),
            Some(FilterConfig::DEFAULT_CONTENT_TYPE)
        );

        let mut config = FilterConfig::new("Application/X-Plain; q=1", argv(&["cat"]));
        config.content_type = Some("text/plain; charset=UTF-8".into());
        config.cacheable = false;
        let lang = site.with(config);
        assert_eq!(lang.mime(), "application/x-plain");
        let (stage, _) = site.compile(&lang, true);
        assert!(!stage.cacheable());
        let last = site.run(&stage, "as is", &[], true).unwrap();
        assert_eq!(text(&last), "as is");
        assert_eq!(
            last.content_type.as_deref(),
            Some("text/plain; charset=UTF-8")
        );
    }

    #[test]
    fn the_environment_is_the_allow_list_and_the_stage_s_own() {
        let site = Site::new();
        // `env` itself, no shell (a shell adds variables of its own).
        let lang = site.filter(&["env"]);
        let params = vec![
            ("a.b-c".to_string(), "v1".to_string()),
            ("bad name".to_string(), "x".to_string()),
            ("nul".to_string(), "a\0b".to_string()),
            ("plain".to_string(), "v 2".to_string()),
        ];
        let vars = |missing: bool, is_final: bool| {
            let (stage, _) = site.compile(&lang, missing);
            let out = site.run(&stage, "", &params, is_final).unwrap();
            let mut lines: Vec<String> = text(&out).lines().map(str::to_string).collect();
            // Every run's own marker (`exec`), once: the rest is exact.
            let marker = format!("{}=", crate::exec::MARKER_VARIABLE);
            assert_eq!(lines.iter().filter(|l| l.starts_with(&marker)).count(), 1);
            lines.retain(|l| !l.starts_with(&marker));
            lines.sort();
            lines
        };
        let allowed: Vec<String> = FilterConfig::DEFAULT_ENV
            .iter()
            .filter_map(|n| std::env::var(n).ok().map(|v| format!("{n}={v}")))
            .collect();
        let mut want = vec![
            "AXLE_BASE_URL=/doc.xml".to_string(),
            "AXLE_PARAM_a_b_c=v1".to_string(),
            "AXLE_PARAM_plain=v 2".to_string(),
            format!("AXLE_RESOURCE={}", site.root.join("shout.py").display()),
            "AXLE_RESOURCE_URL=/shout.py".to_string(),
            "AXLE_STAGE_FINAL=1".to_string(),
        ];
        want.extend(allowed.iter().cloned());
        want.sort();
        assert_eq!(vars(false, true), want);
        // No file: no AXLE_RESOURCE; its URL all the same.
        let got = vars(true, false);
        assert!(
            got.contains(&"AXLE_RESOURCE_URL=/none".to_string()),
            "{got:?}"
        );
        assert!(got.contains(&"AXLE_STAGE_FINAL=0".to_string()), "{got:?}");
        assert!(
            !got.iter().any(|l| l.starts_with("AXLE_RESOURCE=")),
            "{got:?}"
        );
    }

    #[test]
    fn the_key_covers_the_script_the_executable_and_the_version_file() {
        let site = Site::new();
        std::fs::write(site.root.join("VERSION"), "1").unwrap();
        let mut config = FilterConfig::new("application/x-test", argv(&["python3", "shout.py"]));
        config.version_file = Some("VERSION".into());
        let lang = site.with(config);
        let (_, before) = site.compile(&lang, false);
        let dep_of = |deps: &[Dep], path: &Path| {
            deps.iter()
                .find(|d| d.path == path)
                .map(|d| d.hash)
                .unwrap_or_else(|| panic!("{} not recorded in {deps:?}", path.display()))
        };
        let script = site.root.join("shout.py");
        let version = site.root.join("VERSION");
        // The executable: its canonical file, and the name it was found by
        // when that is a link.
        let exe = lang.program().executable();
        let canonical = exe.canonicalize().unwrap();
        let recorded = before.iter().find(|d| d.path == canonical).unwrap();
        assert_eq!(
            recorded.via.as_deref(),
            (canonical != exe).then_some(exe),
            "{recorded:?}"
        );
        assert!(
            before
                .iter()
                .all(|d| d.unchanged(site.files.fingerprints()))
        );

        // An edited script: another hash, and the recorded one no longer
        // holds (the compiled-stage cache recompiles).
        std::fs::write(&script, format!("{SHOUT}# edited\n")).unwrap();
        let (_, after) = site.compile(&lang, false);
        assert_ne!(dep_of(&before, &script), dep_of(&after, &script));
        assert!(
            !before
                .iter()
                .all(|d| d.unchanged(site.files.fingerprints()))
        );
        assert_eq!(dep_of(&before, &version), dep_of(&after, &version));
        // A bumped version file, the same.
        std::fs::write(&version, "2").unwrap();
        let (_, bumped) = site.compile(&lang, false);
        assert_ne!(dep_of(&after, &version), dep_of(&bumped, &version));
        // A missing version file is recorded as absent.
        std::fs::remove_file(&version).unwrap();
        let (_, gone) = site.compile(&lang, false);
        assert_eq!(dep_of(&gone, &version), ContentHash::ABSENT);
    }

    #[test]
    fn the_config_hash_covers_what_can_change_the_output() {
        let site = Site::new();
        let hash = |f: &dyn Fn(&mut FilterConfig)| {
            let mut config =
                FilterConfig::new("application/x-test", argv(&["python3", "shout.py"]));
            f(&mut config);
            site.with(config).config_hash().unwrap()
        };
        let base = hash(&|_| {});
        assert_eq!(hash(&|_| {}), base);
        // Only when it runs, not what it gives.
        assert_eq!(hash(&|c| c.max_concurrent = 7), base);
        assert_eq!(hash(&|c| c.max_queue = 0), base);
        for (what, change) in [
            (
                "argv",
                &(|c: &mut FilterConfig| c.argv.push("x".into())) as &dyn Fn(&mut FilterConfig),
            ),
            ("env", &|c: &mut FilterConfig| c.env = vec!["PATH".into()]),
            ("content type", &|c: &mut FilterConfig| {
                c.content_type = Some("text/plain".into())
            }),
            ("cacheable", &|c: &mut FilterConfig| c.cacheable = false),
            ("timeout", &|c: &mut FilterConfig| {
                c.timeout = Duration::from_secs(3)
            }),
        ] {
            assert_ne!(hash(change), base, "{what}");
        }
    }

    fn external(e: LanguageError) -> (ExternalFailure, String) {
        match e {
            LanguageError::External { kind, message } => (kind, message),
            other => panic!("not an external failure: {other:?}"),
        }
    }

    #[test]
    fn failures_name_the_filter_and_the_reason_and_never_its_stderr() {
        let site = Site::new();
        let lang = site.filter(&["sh", "-c", "echo private-detail >&2; exit 3"]);
        let (stage, _) = site.compile(&lang, true);
        let (kind, message) = external(site.run(&stage, "<a/>", &[], false).unwrap_err());
        assert_eq!(kind, ExternalFailure::Failed);
        assert_eq!(
            message,
            "filter application/x-test (sh) exited with status 3"
        );

        let mut config = FilterConfig::new("application/x-test", argv(&["sleep", "30"]));
        config.timeout = Duration::from_millis(200);
        let (stage, _) = site.compile(&site.with(config), true);
        let (kind, message) = external(site.run(&stage, "", &[], false).unwrap_err());
        assert_eq!(kind, ExternalFailure::Timeout);
        assert!(
            message.ends_with("did not finish within 200ms"),
            "{message}"
        );

        let mut config = FilterConfig::new("application/x-test", argv(&["cat"]));
        config.max_output = 10;
        let (stage, _) = site.compile(&site.with(config), true);
        let (kind, message) = external(
            site.run(&stage, "more than ten bytes", &[], false)
                .unwrap_err(),
        );
        assert_eq!(kind, ExternalFailure::Failed);
        assert!(
            message.ends_with("wrote more than 10 bytes of output"),
            "{message}"
        );
    }

    #[test]
    fn past_its_concurrency_a_filter_is_busy() {
        let site = Site::new();
        let mut config = FilterConfig::new("application/x-test", argv(&["sleep", "1"]));
        config.max_concurrent = 1;
        config.max_queue = 0;
        let (stage, _) = site.compile(&site.with(config), true);
        std::thread::scope(|s| {
            let slow = s.spawn(|| site.run(&stage, "", &[], false));
            // Time for the first run to take the one turn.
            std::thread::sleep(Duration::from_millis(300));
            let (kind, message) = external(site.run(&stage, "", &[], false).unwrap_err());
            assert_eq!(kind, ExternalFailure::Busy);
            assert!(message.contains("is busy"), "{message}");
            slow.join().unwrap().unwrap();
        });
    }

    #[test]
    fn a_filter_that_cannot_be_run_is_refused_at_construction() {
        let site = Site::new();
        let new = |f: &dyn Fn(&mut FilterConfig)| {
            let mut config = FilterConfig::new("application/x-test", argv(&["cat"]));
            f(&mut config);
            FilterLanguage::new(config, &site.root)
                .unwrap_err()
                .to_string()
        };
        for (why, change) in [
            (
                "empty",
                &(|c: &mut FilterConfig| c.argv.clear()) as &dyn Fn(&mut FilterConfig),
            ),
            ("not found on PATH", &|c: &mut FilterConfig| {
                c.argv = argv(&["no-such-program-axle"])
            }),
            ("not a MIME type", &|c: &mut FilterConfig| {
                c.mime = " ".into()
            }),
            ("timeout", &|c: &mut FilterConfig| {
                c.timeout = Duration::ZERO
            }),
            ("max-concurrent", &|c: &mut FilterConfig| {
                c.max_concurrent = 0
            }),
            ("Content-Type", &|c: &mut FilterConfig| {
                c.content_type = Some("text/plain\n".into())
            }),
            ("variable name", &|c: &mut FilterConfig| {
                c.env = vec!["A=B".into()]
            }),
            ("version file", &|c: &mut FilterConfig| {
                c.version_file = Some("nope".into())
            }),
        ] {
            let message = new(change);
            assert!(message.contains(why), "{why}: {message}");
        }
    }

    #[test]
    fn param_names_become_variable_names_or_are_left_out() {
        assert_eq!(
            param_variable("a.b-c_d9").as_deref(),
            Some("AXLE_PARAM_a_b_c_d9")
        );
        for bad in ["", "a b", "é", "a=b", "x:y"] {
            assert_eq!(param_variable(bad), None, "{bad:?}");
        }
    }
}
