//! `GET /status` on the admin listener: an HTML page about the running
//! server, rendered by Axle's own XSLT engine from an XML status document
//! built here, through the bundled `stylesheets/status.xsl`
//! (`super::super::builtin`: compiled into the binary, run outside the
//! pipeline so the page counts in no figure it shows), in the built-in
//! page shell and style (`look`). Each request runs one transform on the
//! blocking pool.
//!
//! Sizes are formatted here, once ([`iec`]), and sent with their exact
//! bytes; the memory tier's hits include the hot memo's (it answers from
//! that tier's entries), so the tiers' hits add up to the page's hits.
//!
//! The chart's figures come from [`History`]: a ring of cumulative counter
//! samples, one every [`SAMPLE_EVERY`], kept for [`WINDOW`], taken by a
//! background task that ends with the app.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::super::builtin::BuiltIn;
use super::super::{App, escape_markup};
use super::{StatsDoc, stats_of};

/// How often the history takes a sample.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// How far back the chart goes.
pub const WINDOW: Duration = Duration::from_secs(15 * 60);

/// Cumulative counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sample {
    /// Seconds since the admin listener started.
    pub at: u64,
    /// Responses that computed nothing.
    pub hits: u64,
    /// Responses that computed something (misses, partials, uncacheable).
    pub computed: u64,
    /// Requests that reached the render path.
    pub renders: u64,
    /// Microseconds spent in stages, over every Language.
    pub stage_micros: u64,
}

impl Sample {
    fn of(app: &App, at: u64) -> Sample {
        let s = app.pipeline().stats();
        Sample {
            at,
            hits: s.all_hits(),
            computed: s.misses.load(Ordering::Relaxed)
                + s.partials.load(Ordering::Relaxed)
                + s.uncacheable.load(Ordering::Relaxed),
            renders: s.renders.load(Ordering::Relaxed),
            stage_micros: s.stage_times().values().map(|t| t.micros).sum(),
        }
    }
}

/// The samples of the last [`WINDOW`] (plus the one before it, the base of
/// the oldest interval), oldest first.
#[derive(Debug, Default)]
pub struct History {
    samples: Mutex<VecDeque<Sample>>,
}

impl History {
    /// Samples kept: one per interval of the window, and its base.
    const KEEP: usize = (WINDOW.as_secs() / SAMPLE_EVERY.as_secs()) as usize + 1;

    /// Adds `sample`, forgetting the oldest beyond the window.
    pub fn push(&self, sample: Sample) {
        let mut samples = self
            .samples
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        samples.push_back(sample);
        while samples.len() > Self::KEEP {
            samples.pop_front();
        }
    }

    /// The samples, oldest first, with `now` last (the interval in
    /// progress).
    fn with(&self, now: Sample) -> Vec<Sample> {
        let samples = self
            .samples
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut all: Vec<Sample> = samples.iter().copied().collect();
        all.push(now);
        all
    }

    /// Samples `app` every [`SAMPLE_EVERY`] until it is dropped (on the
    /// current runtime; nothing when there is none).
    pub fn spawn_sampler(self: &Arc<Self>, app: Weak<App>, started: Instant) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let history = Arc::clone(self);
        handle.spawn(async move {
            let mut tick = tokio::time::interval(SAMPLE_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(app) = app.upgrade() else { return };
                history.push(Sample::of(&app, started.elapsed().as_secs()));
            }
        });
    }
}

/// One interval of the chart: what happened between two samples.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Interval {
    /// Seconds before now at which it ended.
    age: u64,
    hits: u64,
    computed: u64,
    renders: u64,
    /// Hits over responses, when there were responses.
    hit_ratio: Option<f64>,
    /// Mean stage time per computed response, in milliseconds, when there
    /// were some.
    latency_ms: Option<f64>,
}

fn intervals(samples: &[Sample]) -> Vec<Interval> {
    let now = samples.last().map_or(0, |s| s.at);
    samples
        .windows(2)
        .map(|w| {
            let (a, b) = (w[0], w[1]);
            let hits = b.hits.saturating_sub(a.hits);
            let computed = b.computed.saturating_sub(a.computed);
            let micros = b.stage_micros.saturating_sub(a.stage_micros);
            let answered = hits + computed;
            Interval {
                age: now - b.at.min(now),
                hits,
                computed,
                renders: b.renders.saturating_sub(a.renders),
                hit_ratio: (answered > 0).then(|| hits as f64 / answered as f64),
                latency_ms: (computed > 0).then(|| micros as f64 / computed as f64 / 1000.0),
            }
        })
        .collect()
}

/// `text` as XML character data: markup escaped, and the characters XML
/// 1.0 cannot hold (C0 controls but tab, CR, LF) written as U+FFFD.
fn text(value: &str) -> String {
    let clean: String = value
        .chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => '\u{FFFD}',
            c => c,
        })
        .collect();
    escape_markup(&clean)
}

/// `bytes` in IEC units, the one way the status page writes a size:
/// `512 B`, `1.5 KiB`, `230 MiB` (one decimal, dropped when it is 0).
pub fn iec(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let text = format!("{value:.1}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text} {}", UNITS[unit])
}

/// The status document for `stats` (what `/stats` says), `app`'s
/// configuration and the chart's `samples`.
pub fn document(app: &App, stats: &StatsDoc, samples: &[Sample]) -> String {
    let mut x = String::with_capacity(4096);
    let _ = writeln!(x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let answered = stats.hits + stats.misses + stats.partials + stats.uncacheable;
    let _ = writeln!(
        x,
        "<status version=\"{}\" uptime-seconds=\"{}\" mode=\"{}\" freshness=\"{}\" hit-sample=\"{}\">",
        text(env!("CARGO_PKG_VERSION")),
        stats.uptime_seconds,
        text(&stats.mode),
        text(&stats.freshness),
        super::super::metrics::HIT_SAMPLE,
    );
    let _ = writeln!(x, "<config>");
    let root = app.pipeline().provider().root().display().to_string();
    let mut setting = |name: &str, value: &str, title: Option<String>| {
        let title = title
            .map(|t| format!(" title=\"{}\"", text(&t)))
            .unwrap_or_default();
        let _ = writeln!(
            x,
            "<setting name=\"{}\"{title}>{}</setting>",
            text(name),
            text(value)
        );
    };
    setting("root", &root, None);
    setting("cache mode", &stats.mode, None);
    setting("freshness", &stats.freshness, None);
    let budget = app.cache_size();
    setting(
        "memory budget (--cache-size)",
        &iec(budget),
        Some(format!("{budget} bytes")),
    );
    for tier in &stats.tiers {
        let capacity = tier.stats.capacity;
        let (size, title) = match (capacity, tier.name.as_str()) {
            (0, _) => ("unbounded".to_string(), None),
            (c, "memory") => (
                format!(
                    "{} of the {} budget (the rest holds source documents, the hot memo, and in incremental mode traces and intermediate outputs)",
                    iec(c),
                    iec(budget)
                ),
                Some(format!("{c} bytes")),
            ),
            (c, _) => (iec(c), Some(format!("{c} bytes"))),
        };
        setting(&format!("{} tier size", tier.name), &size, title);
    }
    let _ = writeln!(x, "</config>");
    let lower_hits = stats
        .hits
        .saturating_sub(stats.hot_hits)
        .saturating_sub(stats.memory_hits);
    let _ = writeln!(
        x,
        "<counters answered=\"{answered}\" hits=\"{}\" misses=\"{}\" partials=\"{}\" early-cutoffs=\"{}\" uncacheable=\"{}\" untransformed=\"{}\" hot-hits=\"{}\" memory-hits=\"{}\" lower-hits=\"{lower_hits}\" stage-runs=\"{}\" compiles=\"{}\" renders=\"{}\" evictions=\"{}\"/>",
        stats.hits,
        stats.misses,
        stats.partials,
        stats.early_cutoffs,
        stats.uncacheable,
        stats.untransformed,
        stats.hot_hits,
        stats.memory_hits,
        stats.stage_runs,
        stats.compiles,
        stats.renders,
        stats.evictions,
    );
    let _ = writeln!(x, "<tiers>");
    for t in &stats.tiers {
        // The hot memo answers from the memory tier's entries: its hits
        // are that tier's too, so the tiers' hits add up to `hits`.
        let (hits, split) = if t.name == "memory" {
            (
                t.hits + stats.hot_hits,
                format!(
                    " hot-hits=\"{}\" rendered-hits=\"{}\"",
                    stats.hot_hits, t.hits
                ),
            )
        } else {
            (t.hits, String::new())
        };
        let _ = writeln!(
            x,
            "<tier name=\"{}\" entries=\"{}\" bytes=\"{}\" bytes-text=\"{}\" capacity=\"{}\" capacity-text=\"{}\" hits=\"{hits}\"{split} evictions=\"{}\" rejected=\"{}\" write-errors=\"{}\" dropped=\"{}\" writable=\"{}\"/>",
            text(&t.name),
            t.stats.entries,
            t.stats.bytes,
            iec(t.stats.bytes),
            t.stats.capacity,
            iec(t.stats.capacity),
            t.stats.evictions,
            t.stats.rejected,
            t.stats.write_errors,
            t.stats.dropped,
            t.stats.writable,
        );
    }
    let _ = writeln!(x, "</tiers>");
    let c = &stats.compressed;
    let _ = writeln!(
        x,
        "<compressed gzip=\"{}\" br=\"{}\" bytes-made=\"{}\" bytes-made-text=\"{}\" served=\"{}\"/>",
        c.gzip,
        c.br,
        c.bytes_made,
        iec(c.bytes_made),
        c.served
    );
    let _ = writeln!(x, "<stages>");
    for (language, t) in &stats.stages {
        let mean = if t.runs == 0 {
            0.0
        } else {
            t.micros as f64 / t.runs as f64 / 1000.0
        };
        let _ = writeln!(
            x,
            "<stage language=\"{}\" runs=\"{}\" micros=\"{}\" mean-ms=\"{mean:.3}\"/>",
            text(language),
            t.runs,
            t.micros,
        );
    }
    let _ = writeln!(x, "</stages>");
    let _ = writeln!(x, "<pages>");
    for (list, pages) in [("hottest", &stats.hottest), ("slowest", &stats.slowest)] {
        let _ = writeln!(x, "<{list}>");
        for p in pages {
            let f = &p.figures;
            let _ = writeln!(
                x,
                "<page path=\"{}\" requests=\"{}\" renders=\"{}\" mean-ms=\"{:.3}\" max-ms=\"{:.3}\"/>",
                text(&p.path),
                f.requests,
                f.renders,
                f.mean_micros() as f64 / 1000.0,
                f.max_micros as f64 / 1000.0,
            );
        }
        let _ = writeln!(x, "</{list}>");
    }
    let _ = writeln!(x, "</pages>");
    let _ = writeln!(x, "<stylesheets>");
    for c in &stats.stylesheets {
        let _ = writeln!(
            x,
            "<stylesheet path=\"{}\" language=\"{}\" files=\"{}\" closure=\"{}\"/>",
            text(&c.path),
            text(&c.language),
            c.files,
            text(&c.closure),
        );
    }
    let _ = writeln!(x, "</stylesheets>");
    let _ = writeln!(
        x,
        "<history every-seconds=\"{}\" window-seconds=\"{}\">",
        SAMPLE_EVERY.as_secs(),
        WINDOW.as_secs()
    );
    for i in intervals(samples) {
        let _ = write!(
            x,
            "<interval age-seconds=\"{}\" hits=\"{}\" computed=\"{}\" renders=\"{}\"",
            i.age, i.hits, i.computed, i.renders
        );
        if let Some(r) = i.hit_ratio {
            let _ = write!(x, " hit-ratio=\"{r:.4}\"");
        }
        if let Some(ms) = i.latency_ms {
            let _ = write!(x, " latency-ms=\"{ms:.3}\"");
        }
        let _ = writeln!(x, "/>");
    }
    let _ = writeln!(x, "</history>");
    let _ = writeln!(x, "</status>");
    x
}

/// Renders the status document `xml` to the HTML page (blocking).
pub fn render(xml: &str) -> Result<Vec<u8>, String> {
    let body = BuiltIn::Status.render(xml.as_bytes(), &[])?;
    let body = String::from_utf8_lossy(&body);
    Ok(super::super::look::page("Axle status", &body).into_bytes())
}

/// `GET /status`.
pub async fn page(app: Arc<App>, history: Arc<History>, started: Instant) -> Response {
    app.pipeline().store().sync().await;
    let uptime = started.elapsed();
    let stats = stats_of(&app, uptime);
    let samples = history.with(Sample::of(&app, uptime.as_secs()));
    let xml = document(&app, &stats, &samples);
    let rendered = tokio::task::spawn_blocking(move || render(&xml)).await;
    match rendered {
        Ok(Ok(body)) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            body,
        )
            .into_response(),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "the status page failed");
            (StatusCode::INTERNAL_SERVER_ERROR, e).into_response()
        }
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at: u64, hits: u64, computed: u64, micros: u64) -> Sample {
        Sample {
            at,
            hits,
            computed,
            renders: hits + computed,
            stage_micros: micros,
        }
    }

    #[test]
    fn intervals_are_differences_of_samples() {
        let s = [
            sample(0, 0, 0, 0),
            sample(10, 3, 1, 2000),
            sample(20, 3, 1, 2000),
        ];
        let i = intervals(&s);
        assert_eq!(i.len(), 2);
        assert_eq!(i[0].age, 10);
        assert_eq!(i[0].hit_ratio, Some(0.75));
        assert_eq!(i[0].latency_ms, Some(2.0));
        assert_eq!(i[1].age, 0);
        assert_eq!(i[1].hit_ratio, None);
        assert_eq!(i[1].latency_ms, None);
    }

    #[test]
    fn the_history_keeps_the_window() {
        let h = History::default();
        for n in 0..200 {
            h.push(sample(n * 10, n, 0, 0));
        }
        let all = h.with(sample(2000, 200, 0, 0));
        assert_eq!(all.len(), History::KEEP + 1);
        assert_eq!(all.first().unwrap().at, (200 - History::KEEP as u64) * 10);
    }

    #[test]
    fn text_is_escaped_and_xml_safe() {
        assert_eq!(text("a<b&\u{1}"), "a&lt;b&amp;\u{FFFD}");
    }

    #[test]
    fn sizes_have_one_format_in_iec_units() {
        assert_eq!(iec(0), "0 B");
        assert_eq!(iec(1023), "1023 B");
        assert_eq!(iec(1536), "1.5 KiB");
        assert_eq!(iec(256 << 20), "256 MiB");
        assert_eq!(iec(241_172_480), "230 MiB");
        assert_eq!(iec(3 << 30), "3 GiB");
    }

    #[test]
    fn the_bundled_stylesheet_compiles_and_renders() {
        let xml = "<status version=\"0\" uptime-seconds=\"5\" mode=\"m\" freshness=\"f\"><config/><counters answered=\"0\"/><tiers><tier name=\"memory\" entries=\"1\" bytes=\"2\"/></tiers><compressed/><stages/><history every-seconds=\"10\" window-seconds=\"900\"><interval age-seconds=\"0\" hit-ratio=\"0.5\" latency-ms=\"1.5\"/></history></status>";
        let html = String::from_utf8(render(xml).unwrap()).unwrap();
        assert!(html.contains("<svg"), "{html}");
        assert!(html.contains("memory"), "{html}");
    }
}
