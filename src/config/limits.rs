//! The limits that keep one client, one document or one stylesheet from
//! taking the server down: connection timeouts and counts, request sizes
//! ([`HttpLimits`]), and what one render may spend ([`RenderLimits`]).
//! Defaults follow nginx's and hyper's where they have one; every value is
//! a CLI flag and an `axle.toml` key (`docs/security.md` has the table).

use std::time::Duration;

/// Limits on connections and requests, enforced by the HTTP layer on both
/// connection paths (Axle's own loop and the hand-off to hyper).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Time allowed from a connection's first byte of a request head (or
    /// its accept) to the end of that head (`--header-timeout`).
    pub header_timeout: Duration,
    /// Time an idle keep-alive connection is kept open waiting for its
    /// next request (`--keepalive-timeout`).
    pub keepalive_timeout: Duration,
    /// Time allowed for writing one response to a client that reads
    /// nothing (`--write-timeout`).
    pub write_timeout: Duration,
    /// Time in-flight requests get after SIGTERM before they are cut
    /// (`--shutdown-timeout`).
    pub shutdown_timeout: Duration,
    /// Connections served at once (`--max-connections`); past it, new
    /// connections wait in the listen backlog.
    pub max_connections: usize,
    /// Header fields one request may carry (431 past it).
    pub max_header_count: usize,
    /// Bytes one request head may take, request line included (431 past it).
    pub max_header_bytes: usize,
    /// Bytes of the request target (414 past it).
    pub max_uri_bytes: usize,
    /// Parameters in one query string (414 past it).
    pub max_query_params: usize,
    /// Fields in one form body (413 past it).
    pub max_form_fields: usize,
    /// Bytes of one request body (413 past it).
    pub max_body_bytes: usize,
    /// The largest body sent compressed (a rendered page or a static
    /// file); larger ones go out as they are.
    pub max_compress_bytes: u64,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_timeout: Duration::from_secs(10),
            keepalive_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(60),
            shutdown_timeout: Duration::from_secs(10),
            max_connections: 10_000,
            max_header_count: 100,
            max_header_bytes: 64 << 10,
            max_uri_bytes: 8 << 10,
            max_query_params: 256,
            max_form_fields: 1_000,
            max_body_bytes: 1 << 20,
            max_compress_bytes: 8 << 20,
        }
    }
}

/// What one render (a request's whole chain, nested `axle:` renders
/// included) may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderLimits {
    /// Wall-clock time from the start of a render to its end, checked
    /// inside libxslt's and libxml2's loops (`--render-timeout`; 504).
    pub timeout: Duration,
    /// Bytes libxml2 and libxslt may hold for one render
    /// (`--render-memory`; 500).
    pub memory: u64,
    /// Bytes of a source document, refused before it is parsed.
    pub max_source_bytes: u64,
    /// Bytes of a rendered response.
    pub max_output_bytes: u64,
    /// Stages in one chain.
    pub max_chain: usize,
    /// `axle:` documents rendered for one request, nested ones included.
    pub max_nested: usize,
    /// Nodes a source may have once its XInclude elements are processed
    /// (counted before processing them).
    pub max_xinclude_nodes: u64,
    /// Renders waiting for a transform thread; past it, 503 with
    /// `Retry-After`.
    pub max_queue: usize,
    /// Variants (parameters, style, media) of one URL path rendered at
    /// once; renders of one variant share a turn (0: one fewer than the
    /// transform threads, at least 1).
    pub max_per_url: usize,
    /// What a client's document (a `post` source's body) may do when it is
    /// parsed: nesting depth, attributes per element, entity amplification
    /// (`--max-post-depth`, `--max-post-attributes`,
    /// `--max-post-amplification`; 400 past them).
    pub client: crate::ffi::UntrustedLimits,
}

impl Default for RenderLimits {
    fn default() -> Self {
        RenderLimits {
            timeout: Duration::from_secs(10),
            memory: 256 << 20,
            max_source_bytes: 16 << 20,
            max_output_bytes: 64 << 20,
            max_chain: 32,
            max_nested: 64,
            max_xinclude_nodes: 1_000_000,
            max_queue: 256,
            max_per_url: 0,
            client: crate::ffi::UntrustedLimits::default(),
        }
    }
}

/// Parses a duration: `10s`, `500ms`, `2m`, `1h`, or a bare number of
/// seconds (`30`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (examples: 10s, 500ms, 2m)"))?;
    let millis = match unit.trim() {
        "" | "s" => 1_000,
        "ms" => 1,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        other => {
            return Err(format!(
                "unknown duration unit '{other}' in '{text}' (use ms, s, m, h)"
            ));
        }
    };
    n.checked_mul(millis)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("duration '{text}' is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_in_every_spelling() {
        for (text, want) in [
            ("30", Duration::from_secs(30)),
            ("2s", Duration::from_secs(2)),
            ("500ms", Duration::from_millis(500)),
            ("2m", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3600)),
            (" 0s ", Duration::ZERO),
        ] {
            assert_eq!(parse_duration(text), Ok(want), "{text}");
        }
        for bad in ["", "s", "1.5s", "2d", "-1s", "99999999999999999999h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
