//! `GET /status` on the admin listener: an HTML5 page rendered by Axle's
//! bundled stylesheet, checked with a real HTML validator (`tidy`) and
//! loaded in headless Chromium (a screenshot into the test's output
//! directory, and the DOM it built). Either tool absent: skipped loudly,
//! and a failure under `CI=true` (`.ci/run` installs both).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::tiers_support::{Axle, TiersSite, request, skip};

/// The first of `names` on `PATH`.
fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// Checks the page with `tidy -errors -q`: exit status 2 means errors
/// (1 is warnings only, which `-errors` does not print). Also for the
/// other pages Axle makes itself (`pages.rs`).
pub fn validate(html: &Path) -> bool {
    let Some(tidy) = on_path(&["tidy"]) else {
        skip("no `tidy` on PATH to validate Axle's own pages (apt-get install tidy)");
        return false;
    };
    let out = Command::new(tidy)
        .args(["-errors", "-q"])
        .arg(html)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code().is_some_and(|c| c < 2) && !report.contains("Error:"),
        "tidy finds errors in {} ({:?}):\n{report}\n{}",
        html.display(),
        out.status,
        std::fs::read_to_string(html).unwrap()
    );
    true
}

/// `chromium --headless ARGS URL`, its stdout; with a bound on its time.
fn chromium(browser: &Path, profile: &Path, args: &[&str], url: &str) -> String {
    let out = Command::new("timeout")
        .arg("120")
        .arg(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--window-size=1200,900",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium {args:?} failed ({:?}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_status_page_is_valid_html_with_tiers_and_a_chart() {
    let site = TiersSite::new();
    let cache_dir = site.beside("cache");
    let cache_dir = cache_dir.to_str().unwrap();
    let axle = Axle::start(&site.root, true, &["--cache-dir", cache_dir]);
    for path in [
        "/small.xml",
        "/small.xml",
        "/big.xml",
        "/small.xml",
        "/nope.xml",
    ] {
        axle.get(path, &[]).await;
    }
    let url = format!("http://{}/status", axle.admin());
    let r = request(reqwest::Method::GET, &url, &[]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.header("content-type").starts_with("text/html"),
        "{}",
        r.header("content-type")
    );
    let html = r.text();
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert!(html.contains("<title>Axle status</title>"), "{html}");
    assert!(html.contains("<table id=\"tiers\">"), "{html}");
    assert!(html.contains(">memory</th>"), "{html}");
    assert!(html.contains(">disk</th>"), "{html}");
    assert!(html.contains("<svg"), "{html}");
    assert!(html.contains("<polyline"), "{html}");
    // The rankings and the compiled stylesheets reach the page.
    assert!(html.contains("<table id=\"hottest\">"), "{html}");
    assert!(html.contains("<table id=\"slowest\">"), "{html}");
    assert!(html.contains(">/small.xml</th>"), "{html}");
    assert!(html.contains("<table id=\"stylesheets\">"), "{html}");
    assert!(html.contains(">/s/page.xsl</th>"), "{html}");
    // The counters and the configuration reach the page.
    assert!(html.contains(">hits</th>"), "{html}");
    assert!(
        html.contains(&site.root.display().to_string()),
        "the root in force is on the page: {html}"
    );

    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&out).unwrap();
    let saved = out.join("status.html");
    std::fs::write(&saved, &html).unwrap();
    validate(&saved);

    let Some(browser) = on_path(&["chromium", "chromium-browser", "google-chrome"]) else {
        skip("no `chromium` on PATH to load the status page (apt-get install chromium)");
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let png = out.join("status.png");
    let _ = std::fs::remove_file(&png);
    let screenshot = format!("--screenshot={}", png.display());
    let (browser2, profile2, url2) = (browser.clone(), profile.path().to_owned(), url.clone());
    tokio::task::spawn_blocking(move || chromium(&browser2, &profile2, &[&screenshot], &url2))
        .await
        .unwrap();
    let size = std::fs::metadata(&png)
        .unwrap_or_else(|e| panic!("no screenshot at {}: {e}", png.display()))
        .len();
    assert!(size > 0, "an empty screenshot at {}", png.display());
    let profile2 = profile.path().to_owned();
    let dom =
        tokio::task::spawn_blocking(move || chromium(&browser, &profile2, &["--dump-dom"], &url))
            .await
            .unwrap();
    assert!(dom.contains("<title>Axle status</title>"), "{dom}");
    assert!(dom.contains("id=\"tiers\""), "{dom}");
    assert!(dom.contains("id=\"hottest\""), "{dom}");
    assert!(dom.contains("id=\"stylesheets\""), "{dom}");
    assert!(dom.contains("<svg"), "{dom}");
    assert!(dom.contains("<polyline"), "{dom}");
    eprintln!("status page screenshot: {} ({size} bytes)", png.display());
}

/// `/stats` ranks pages by requests (hot-path hits by sample, one in 16
/// per thread, weighted) and by mean render time, lists the compiled
/// stylesheets, and leaves out what was not a page (a 404, a static file).
#[tokio::test(flavor = "multi_thread")]
async fn stats_rank_the_hottest_and_slowest_pages_and_list_stylesheets() {
    let site = TiersSite::new();
    let axle = Axle::start(&site.root, true, &[]);
    for _ in 0..96 {
        assert_eq!(axle.get("/small.xml", &[]).await.status, 200);
    }
    assert_eq!(axle.get("/big.xml", &[]).await.status, 200);
    assert_eq!(axle.get("/nope.xml", &[]).await.status, 404);
    assert_eq!(axle.get("/style.css", &[]).await.status, 200);
    let stats = axle.stats().await;
    let hottest = stats["hottest"].as_array().unwrap();
    let paths: Vec<&str> = hottest
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths.first(), Some(&"/small.xml"), "{stats:#}");
    assert!(paths.contains(&"/big.xml"), "{stats:#}");
    assert!(!paths.contains(&"/nope.xml"), "{stats:#}");
    assert!(!paths.contains(&"/style.css"), "{stats:#}");
    // 1 render, then 95 hits: the hot path's share counted by sample.
    let small = &hottest[0];
    assert_eq!(small["renders"], 1, "{stats:#}");
    let requests = small["requests"].as_u64().unwrap();
    assert!((49..=1 + 95 + 32).contains(&requests), "{stats:#}");
    assert!(small["max_micros"].as_u64().unwrap() > 0, "{stats:#}");
    let slowest = stats["slowest"].as_array().unwrap();
    assert_eq!(slowest.len(), 2, "two pages were rendered: {stats:#}");
    let sheets = stats["stylesheets"].as_array().unwrap();
    assert_eq!(sheets.len(), 1, "{stats:#}");
    assert_eq!(sheets[0]["path"], "/s/page.xsl", "{stats:#}");
    assert_eq!(sheets[0]["language"], "xslt", "{stats:#}");
    assert!(sheets[0]["files"].as_u64().unwrap() >= 1, "{stats:#}");
}

/// The number in the cell after the row header ending in `label`.
fn row(html: &str, label: &str) -> u64 {
    let at = html
        .find(&format!("{label}</th><td class=\"n\">"))
        .unwrap_or_else(|| panic!("no row {label}: {html}"));
    let rest = &html[at + label.len() + "</th><td class=\"n\">".len()..];
    let rest = rest.strip_prefix("<abbr").map_or(rest, |r| {
        let (_, after) = r.split_once('>').unwrap();
        after
    });
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("row {label}: {rest}"))
}

/// The status page's figures agree with each other and with `/stats`:
/// hits are the hot memo's, the memory tier's and the lower tiers', the
/// memory tier's hits include the hot memo's (it answers from that tier's
/// entries), sizes are in IEC units with the exact bytes in a title only,
/// and the page says where counts are sampled.
#[tokio::test(flavor = "multi_thread")]
async fn the_status_page_figures_add_up_in_one_unit_format() {
    let site = TiersSite::new();
    let axle = Axle::start(&site.root, true, &["--cache-size", "256MiB"]);
    for _ in 0..40 {
        assert_eq!(axle.get("/small.xml", &[]).await.status, 200);
    }
    let stats = axle.stats().await;
    let url = format!("http://{}/status", axle.admin());
    let r = request(reqwest::Method::GET, &url, &[]).await;
    assert_eq!(r.status, 200);
    let html = r.text();
    let hits = row(&html, ">hits");
    let hot = row(&html, "from the hot memo");
    let memory = row(&html, "rendered from the memory tier");
    let lower = row(&html, "from a lower tier");
    assert_eq!(hits, hot + memory + lower, "{html}");
    assert_eq!(hits, stats["hits"].as_u64().unwrap(), "{stats:#}");
    assert!(hot > 0, "hits on the hot path: {stats:#}");
    assert_eq!(hot, stats["hot_hits"].as_u64().unwrap(), "{stats:#}");
    // The memory tier's hits: the hot memo's and the rendered ones.
    let tier_hits = format!(
        "<abbr title=\"{hot} from the hot memo + {memory} rendered\">{}</abbr>",
        hot + memory
    );
    assert!(html.contains(&tier_hits), "{tier_hits}: {html}");
    // /stats is as it was: the memory tier's own hits are the rendered ones.
    let tiers = stats["tiers"].as_array().unwrap();
    assert_eq!(tiers[0]["name"], "memory");
    assert_eq!(tiers[0]["hits"].as_u64().unwrap(), memory, "{stats:#}");
    // Sizes: IEC, exact bytes only in titles.
    let capacity = tiers[0]["capacity"].as_u64().unwrap();
    assert!(
        html.contains(&format!("<abbr title=\"{capacity} bytes\">")),
        "{html}"
    );
    assert!(!html.contains(&format!(">{capacity} bytes")), "{html}");
    assert!(
        html.contains("<abbr title=\"268435456 bytes\">256 MiB</abbr>"),
        "--cache-size as given: {html}"
    );
    assert!(html.contains("of the 256 MiB budget"), "{html}");
    assert!(!html.contains(" bytes<"), "a size in bytes shown: {html}");
    assert!(html.contains("counted 1 in 16 per thread"), "{html}");
    // The built-in look.
    assert!(html.contains("prefers-color-scheme: dark"), "{html}");
    assert!(html.contains("class=\"axle-header\""), "{html}");
}
