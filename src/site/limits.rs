//! The `[limits]` table of `axle.toml`: the server's limits, validated at
//! load (key and line in every error) and applied under the CLI flags of
//! the same names (a flag given on the command line wins). Read at start
//! only: a SIGHUP reload keeps the limits in force.

use std::time::Duration;

use crate::config::{HttpLimits, RenderLimits, parse_duration, parse_size};

use super::ConfigError;
use super::format::LimitsFormat;
use super::validate::Here;

/// The limits a configuration file sets (None: not set there).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitSettings {
    http: [Option<u64>; 12],
    render: [Option<u64>; 12],
}

/// `[limits]` keys, in the order of [`LimitSettings::http`] and
/// [`LimitSettings::render`]; `true` for a duration, `false` for a size or
/// a count.
const HTTP_KEYS: [&str; 12] = [
    "header-timeout",
    "keepalive-timeout",
    "write-timeout",
    "shutdown-timeout",
    "max-connections",
    "max-header-count",
    "max-header-size",
    "max-uri-size",
    "max-query-params",
    "max-form-fields",
    "max-body-size",
    "max-compress-size",
];
const RENDER_KEYS: [&str; 12] = [
    "render-timeout",
    "render-memory",
    "max-source-size",
    "max-output-size",
    "max-chain",
    "max-nested",
    "max-queue",
    "max-per-url",
    "max-xinclude-nodes",
    "max-post-depth",
    "max-post-attributes",
    "max-post-amplification",
];

fn duration_ms(here: &Here<'_>, key: &str, v: &Option<String>) -> Result<Option<u64>, ConfigError> {
    v.as_deref()
        .map(|t| {
            parse_duration(t)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .map_err(|e| here.err(key, e))
        })
        .transpose()
}

fn size(here: &Here<'_>, key: &str, v: &Option<String>) -> Result<Option<u64>, ConfigError> {
    v.as_deref()
        .map(|t| parse_size(t).map_err(|e| here.err(key, e)))
        .transpose()
}

/// A count that must lie in `low..=high`.
fn bounded(
    here: &Here<'_>,
    key: &str,
    v: Option<usize>,
    low: u64,
    high: u64,
) -> Result<Option<u64>, ConfigError> {
    match count(v) {
        Some(n) if n < low || n > high => Err(here.err(key, format!("from {low} to {high}"))),
        other => Ok(other),
    }
}

fn count(v: Option<usize>) -> Option<u64> {
    v.map(|n| n as u64)
}

impl LimitSettings {
    pub(super) fn validate(
        f: &LimitsFormat,
        here: &Here<'_>,
    ) -> Result<LimitSettings, Vec<ConfigError>> {
        let mut errors = Vec::new();
        // Every bad value is reported; each counts as unset meanwhile.
        let mut ok = |r: Result<Option<u64>, ConfigError>| {
            r.unwrap_or_else(|e| {
                errors.push(e);
                None
            })
        };
        let d = |key: &str, v: &Option<String>| duration_ms(here, key, v);
        let z = |key: &str, v: &Option<String>| size(here, key, v);
        let settings = LimitSettings {
            http: [
                ok(d(HTTP_KEYS[0], &f.header_timeout)),
                ok(d(HTTP_KEYS[1], &f.keepalive_timeout)),
                ok(d(HTTP_KEYS[2], &f.write_timeout)),
                ok(d(HTTP_KEYS[3], &f.shutdown_timeout)),
                count(f.max_connections),
                count(f.max_header_count),
                ok(z(HTTP_KEYS[6], &f.max_header_size)),
                ok(z(HTTP_KEYS[7], &f.max_uri_size)),
                count(f.max_query_params),
                count(f.max_form_fields),
                ok(z(HTTP_KEYS[10], &f.max_body_size)),
                ok(z(HTTP_KEYS[11], &f.max_compress_size)),
            ],
            render: [
                ok(d(RENDER_KEYS[0], &f.render_timeout)),
                ok(z(RENDER_KEYS[1], &f.render_memory)),
                ok(z(RENDER_KEYS[2], &f.max_source_size)),
                ok(z(RENDER_KEYS[3], &f.max_output_size)),
                count(f.max_chain),
                count(f.max_nested),
                count(f.max_queue),
                count(f.max_per_url),
                count(f.max_xinclude_nodes),
                ok(bounded(here, RENDER_KEYS[9], f.max_post_depth, 1, 256)),
                count(f.max_post_attributes),
                ok(bounded(
                    here,
                    RENDER_KEYS[11],
                    f.max_post_amplification,
                    1,
                    u64::from(u32::MAX),
                )),
            ],
        };
        if errors.is_empty() {
            Ok(settings)
        } else {
            Err(errors)
        }
    }

    /// The keys this file sets.
    pub fn keys(&self) -> Vec<&'static str> {
        let http = HTTP_KEYS.iter().zip(&self.http);
        let render = RENDER_KEYS.iter().zip(&self.render);
        http.chain(render)
            .filter(|(_, v)| v.is_some())
            .map(|(k, _)| *k)
            .collect()
    }

    /// Writes the limits this file sets into `http` and `render`.
    pub fn apply(&self, http: &mut HttpLimits, render: &mut RenderLimits) {
        let ms = |v: u64| Duration::from_millis(v);
        let n = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        let h = &self.http;
        let set_d = |slot: &mut Duration, v: Option<u64>| {
            if let Some(v) = v {
                *slot = ms(v);
            }
        };
        let set_n = |slot: &mut usize, v: Option<u64>| {
            if let Some(v) = v {
                *slot = n(v);
            }
        };
        set_d(&mut http.header_timeout, h[0]);
        set_d(&mut http.keepalive_timeout, h[1]);
        set_d(&mut http.write_timeout, h[2]);
        set_d(&mut http.shutdown_timeout, h[3]);
        set_n(&mut http.max_connections, h[4]);
        set_n(&mut http.max_header_count, h[5]);
        set_n(&mut http.max_header_bytes, h[6]);
        set_n(&mut http.max_uri_bytes, h[7]);
        set_n(&mut http.max_query_params, h[8]);
        set_n(&mut http.max_form_fields, h[9]);
        set_n(&mut http.max_body_bytes, h[10]);
        if let Some(v) = h[11] {
            http.max_compress_bytes = v;
        }
        let r = &self.render;
        set_d(&mut render.timeout, r[0]);
        if let Some(v) = r[1] {
            render.memory = v;
        }
        if let Some(v) = r[2] {
            render.max_source_bytes = v;
        }
        if let Some(v) = r[3] {
            render.max_output_bytes = v;
        }
        set_n(&mut render.max_chain, r[4]);
        set_n(&mut render.max_nested, r[5]);
        set_n(&mut render.max_queue, r[6]);
        set_n(&mut render.max_per_url, r[7]);
        if let Some(v) = r[8] {
            render.max_xinclude_nodes = v;
        }
        let u32_of = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        if let Some(v) = r[9] {
            render.client.max_depth = u32_of(v);
        }
        if let Some(v) = r[10] {
            render.client.max_attributes = u32_of(v);
        }
        if let Some(v) = r[11] {
            render.client.max_amplification = u32_of(v);
        }
    }
}
