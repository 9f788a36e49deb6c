//! Per-page figures for the admin listener (`/stats` and the status
//! page's "hottest" and "slowest" tables): how often each page was asked
//! for and how long its renders took. Kept apart from the pipeline's
//! counters because it is keyed by URL path, bounded, and fed from both
//! connection paths at different rates.
//!
//! The costs are bounded where they run:
//! - the hot path records one hit in [`super::metrics::HIT_SAMPLE`] per
//!   thread (the hits the latency histogram times), weighted by that
//!   factor, so its request counts are estimates (the page says "≈");
//! - the ordinary path records every page it answers (a hit or a render
//!   there costs far more than one lock);
//! - the table holds at most [`Pages::CAPACITY`] paths. When full, the
//!   less requested half is forgotten, so a flood of distinct URLs cannot
//!   grow it, and only answered pages (200, 304) enter it at all.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// One page's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Figures {
    /// Requests answered (hits on the hot path counted by sample).
    pub requests: u64,
    /// Responses that computed something (misses, partials, uncacheable).
    pub renders: u64,
    /// Time spent on those responses, in microseconds (whole requests).
    pub render_micros: u64,
    /// The slowest of them, in microseconds.
    pub max_micros: u64,
}

impl Figures {
    /// Mean time of a render, in microseconds (0 when none).
    pub fn mean_micros(&self) -> u64 {
        self.render_micros.checked_div(self.renders).unwrap_or(0)
    }
}

/// One page in a ranking.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PageDoc {
    /// The URL path (as requested, without the query).
    pub path: String,
    /// Its figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// The table.
#[derive(Debug, Default)]
pub struct Pages {
    table: Mutex<HashMap<Box<str>, Figures>>,
}

impl Pages {
    /// Paths held at most.
    pub const CAPACITY: usize = 1024;

    /// Records `weight` requests of `path`, one of which rendered for
    /// `render` when given.
    pub fn record(&self, path: &str, weight: u64, render: Option<Duration>) {
        let Ok(mut table) = self.table.lock() else {
            return;
        };
        if !table.contains_key(path) && table.len() >= Self::CAPACITY {
            forget_the_less_requested_half(&mut table);
        }
        let f = table.entry(path.into()).or_default();
        f.requests = f.requests.saturating_add(weight);
        if let Some(took) = render {
            let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
            f.renders += 1;
            f.render_micros = f.render_micros.saturating_add(micros);
            f.max_micros = f.max_micros.max(micros);
        }
    }

    /// The `n` most requested pages, most first (ties by path).
    pub fn hottest(&self, n: usize) -> Vec<PageDoc> {
        self.ranked(n, |f| (f.requests > 0).then_some(f.requests))
    }

    /// The `n` pages whose renders took longest on average, slowest
    /// first (ties by path); pages never rendered are not ranked.
    pub fn slowest(&self, n: usize) -> Vec<PageDoc> {
        self.ranked(n, |f| (f.renders > 0).then(|| f.mean_micros()))
    }

    fn ranked(&self, n: usize, score: impl Fn(&Figures) -> Option<u64>) -> Vec<PageDoc> {
        let Ok(table) = self.table.lock() else {
            return Vec::new();
        };
        let mut all: Vec<(u64, &str, Figures)> = table
            .iter()
            .filter_map(|(p, f)| Some((score(f)?, &**p, *f)))
            .collect();
        all.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        all.into_iter()
            .take(n)
            .map(|(_, path, figures)| PageDoc {
                path: path.to_string(),
                figures,
            })
            .collect()
    }
}

/// Keeps the more requested half of `table` (at the median, ties go).
fn forget_the_less_requested_half(table: &mut HashMap<Box<str>, Figures>) {
    let mut counts: Vec<u64> = table.values().map(|f| f.requests).collect();
    let mid = counts.len() / 2;
    let (_, median, _) = counts.select_nth_unstable(mid);
    let median = *median;
    table.retain(|_, f| f.requests > median);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_ranked_by_requests_and_by_mean_render_time() {
        let p = Pages::default();
        p.record("/a", 1, Some(Duration::from_millis(10)));
        p.record("/a", 16, None);
        p.record("/b", 1, Some(Duration::from_millis(30)));
        p.record("/b", 1, Some(Duration::from_millis(10)));
        p.record("/c", 1, None);
        let hot: Vec<_> = p.hottest(10).into_iter().map(|d| d.path).collect();
        assert_eq!(hot, ["/a", "/b", "/c"]);
        let slow = p.slowest(10);
        assert_eq!(slow.len(), 2, "a page never rendered is not ranked");
        assert_eq!(slow[0].path, "/b");
        assert_eq!(slow[0].figures.mean_micros(), 20_000);
        assert_eq!(slow[0].figures.max_micros, 30_000);
        assert_eq!(slow[1].figures.requests, 17);
        assert_eq!(p.hottest(1).len(), 1);
    }

    #[test]
    fn the_table_stays_bounded_and_keeps_the_busy_pages() {
        let p = Pages::default();
        p.record("/busy", 1_000, None);
        for i in 0..10 * Pages::CAPACITY {
            p.record(&format!("/flood/{i}"), 1, None);
        }
        let len = p.table.lock().unwrap().len();
        assert!(len <= Pages::CAPACITY, "{len}");
        assert_eq!(p.hottest(1)[0].path, "/busy");
    }
}
