//! The `axle.toml` file format as serde reads it: one struct per kind of
//! table, before validation. The field names here are the keys users write
//! (`rename_all = "kebab-case"`), and `docs/configuration.md` documents
//! exactly these: a test collects the fields serde asks for and compares.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileFormat {
    #[serde(default)]
    pub(super) location: BTreeMap<String, Section>,
    pub(super) limits: Option<LimitsFormat>,
    #[serde(rename = "shared-cache")]
    pub(super) shared_cache: Option<SharedCacheFormat>,
    #[serde(default)]
    pub(super) filter: BTreeMap<String, FilterFormat>,
    #[serde(default)]
    pub(super) esql: BTreeMap<String, EsqlFormat>,
}

/// `[esql.NAME]`: a database XSP pages query (`docs/xsp.md`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct EsqlFormat {
    pub(super) url: String,
    pub(super) max_rows: Option<usize>,
    pub(super) timeout: Option<String>,
    pub(super) pool_size: Option<usize>,
    pub(super) init: Option<PathBuf>,
}

/// `[filter."MIME type"]`: an external program as the Language of that
/// stylesheet type (stdin: the stage's input; stdout: its output).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct FilterFormat {
    #[serde(default)]
    pub(super) argv: Vec<String>,
    pub(super) fastcgi: Option<FastcgiFilterFormat>,
    pub(super) timeout: Option<String>,
    pub(super) max_output: Option<String>,
    pub(super) max_concurrent: Option<usize>,
    pub(super) max_queue: Option<usize>,
    pub(super) env: Option<Vec<String>>,
    pub(super) version_file: Option<PathBuf>,
    pub(super) content_type: Option<String>,
    pub(super) cache: Option<String>,
}

/// `[filter."MIME type"] fastcgi = { ... }`: the filter's stages answered
/// by a FastCGI application (spawned workers or an address) instead of
/// `argv` run per stage.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct FastcgiFilterFormat {
    pub(super) spawn: Option<Vec<String>>,
    pub(super) address: Option<String>,
    pub(super) script: Option<String>,
    pub(super) workers: Option<usize>,
    pub(super) max_requests: Option<usize>,
    pub(super) idle_timeout: Option<String>,
    pub(super) env: Option<Vec<String>>,
}

/// A location's `provider = { type = ..., ... }`: where its documents come
/// from. One struct for every type (each type's keys are checked in
/// `sources`, naming the key that does not belong).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct ProviderFormat {
    pub(super) r#type: String,
    pub(super) cache: Option<String>,
    pub(super) max_body: Option<String>,
    pub(super) argv: Option<Vec<String>>,
    pub(super) env: Option<Vec<String>>,
    pub(super) headers: Option<Vec<String>>,
    pub(super) timeout: Option<String>,
    pub(super) connect_timeout: Option<String>,
    pub(super) max_size: Option<String>,
    pub(super) max_concurrent: Option<usize>,
    pub(super) max_queue: Option<usize>,
    pub(super) max_hops: Option<usize>,
    pub(super) url: Option<String>,
    pub(super) spawn: Option<Vec<String>>,
    pub(super) address: Option<String>,
    pub(super) script: Option<String>,
    pub(super) workers: Option<usize>,
    pub(super) max_requests: Option<usize>,
    pub(super) idle_timeout: Option<String>,
}

/// `[limits]`: the server's limits (durations like `"10s"`, sizes like
/// `"64MiB"`); read at start, overridden by the same-named CLI flags.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct LimitsFormat {
    pub(super) header_timeout: Option<String>,
    pub(super) keepalive_timeout: Option<String>,
    pub(super) write_timeout: Option<String>,
    pub(super) shutdown_timeout: Option<String>,
    pub(super) max_connections: Option<usize>,
    pub(super) max_header_count: Option<usize>,
    pub(super) max_header_size: Option<String>,
    pub(super) max_uri_size: Option<String>,
    pub(super) max_query_params: Option<usize>,
    pub(super) max_form_fields: Option<usize>,
    pub(super) max_body_size: Option<String>,
    pub(super) max_compress_size: Option<String>,
    pub(super) render_timeout: Option<String>,
    pub(super) render_memory: Option<String>,
    pub(super) max_source_size: Option<String>,
    pub(super) max_output_size: Option<String>,
    pub(super) max_chain: Option<usize>,
    pub(super) max_nested: Option<usize>,
    pub(super) max_xinclude_nodes: Option<usize>,
    pub(super) max_queue: Option<usize>,
    pub(super) max_per_url: Option<usize>,
    pub(super) max_post_depth: Option<usize>,
    pub(super) max_post_attributes: Option<usize>,
    pub(super) max_post_amplification: Option<usize>,
}

/// `[shared-cache]`: the shared tier in Redis (durations like `"100ms"`,
/// sizes like `"8MiB"`); read at start, overridden by the `--shared-cache*`
/// flags.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct SharedCacheFormat {
    pub(super) url: Option<String>,
    pub(super) prefix: Option<String>,
    pub(super) ttl: Option<String>,
    pub(super) max_entry_size: Option<String>,
    pub(super) timeout: Option<String>,
    pub(super) lock_wait: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct Section {
    pub(super) style: Option<String>,
    pub(super) media: Option<String>,
    pub(super) order: Option<OrderWord>,
    pub(super) reset: Option<bool>,
    pub(super) passthru: Option<bool>,
    /// Documents with a stylesheet chain negotiate by `Accept` between
    /// the rendered page and the source as it is.
    pub(super) negotiate: Option<bool>,
    /// The media type a negotiated source is sent as ("": by its root).
    pub(super) source_type: Option<String>,
    pub(super) client_stages: Option<Vec<String>>,
    pub(super) params: Option<ParamSetting>,
    pub(super) index: Option<String>,
    pub(super) directories: Option<bool>,
    pub(super) xinclude: Option<bool>,
    /// `"codepoint"` or `"unicode"`.
    pub(super) xsl_sort: Option<String>,
    pub(super) debug_errors: Option<bool>,
    pub(super) cache_control: Option<String>,
    pub(super) trace: Option<PathBuf>,
    pub(super) error_stylesheet: Option<String>,
    pub(super) output_charset: Option<String>,
    pub(super) style_key: Option<String>,
    pub(super) style_cookie: Option<String>,
    pub(super) path_info: Option<bool>,
    pub(super) suffix: Option<bool>,
    pub(super) user_agent_styles: Option<Vec<UaStyle>>,
    pub(super) media_rules: Option<Vec<MediaRuleFormat>>,
    pub(super) types: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub(super) processor: Vec<ProcessorFormat>,
    pub(super) provider: Option<ProviderFormat>,
    /// Nothing under the prefix is served nor read by any load.
    pub(super) private: Option<bool>,
    /// Program files under the prefix are served as static files.
    pub(super) serve_programs: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum OrderWord {
    Fallback,
    Instead,
    Before,
    After,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub(super) enum ParamSetting {
    Word(String),
    List(Vec<String>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UaStyle {
    pub(super) pattern: String,
    pub(super) style: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct MediaRuleFormat {
    pub(super) user_agent: Option<String>,
    pub(super) accept: Option<String>,
    pub(super) media: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ProcessorFormat {
    pub(super) r#type: String,
    pub(super) href: String,
    pub(super) root: Option<String>,
    pub(super) doctype: Option<String>,
    pub(super) dtd: Option<String>,
    pub(super) uri: Option<String>,
    pub(super) style: Option<String>,
    pub(super) media: Option<String>,
}
