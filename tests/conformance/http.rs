//! The HTTP subset: cases served by a real server (one per suite folder and
//! cache mode) from a scratch copy of the suites, each source given the
//! `<?xml-stylesheet?>` PI of its stylesheet, and checked for status,
//! Content-Type, body, the cache's miss-then-hit, agreement between modes,
//! and a server that still answers after a 500. It checks what the server
//! sends against what the pipeline renders, so it lives apart from the
//! in-process run.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use axle::config::{CacheMode, ServeConfig};
use bytes::Bytes;

use super::http_prep::first_stylesheet_pi;
use super::judge::{contains, first_line, shorten};
use super::{
    Case, Compare, MODES, compare_bytes, expected_content_type, insert_pi, load_manifest,
    output_decl, relative_href, url_path,
};

/// What the HTTP subset serves: every row marked `xsltproc=pass` that is a
/// `(pi)` row or lies under one of these `(suite folder, case_id prefix)`
/// folders, except [`HTTP_EXCLUDED`]. `(pi)` rows are served as they are;
/// every other row gets an `<?xml-stylesheet?>` PI naming its stylesheet
/// inserted into (a copy of) its source.
pub const HTTP_FOLDERS: &[(&str, &str)] = &[
    // document(): libxslt documents/ and Xalan mdocs/.
    ("libxslt", "documents/"),
    ("xalan-conf", "conf/mdocs/"),
    // xsl:import / xsl:include with relative hrefs.
    ("xalan-conf", "conf/impincl/"),
    // Embedded and external PI stylesheets.
    ("xalan-conf", "conf/embed/"),
    // Output methods, media types, encodings.
    ("xalan-conf", "conf/output/"),
    ("libxslt", "encoding/"),
    // Errors: 500, then the server must still answer.
    ("xalan-conf", "conferr/impinclerr/"),
    ("xalan-conf", "conferr/mdocserr/"),
    ("xalan-conf", "conferr/outputerr/"),
    ("xalan-conf", "conferr/messageerr/"),
    ("xalan-conf", "conferr/variableerr/"),
];

/// Rows of [`HTTP_FOLDERS`] left out of the HTTP subset, and why: the PI
/// the subset inserts changes their output (it is a node of the source that
/// these stylesheets copy or count), so they cannot be served this way.
pub const HTTP_EXCLUDED: &[(&str, &str)] = &[(
    "xalan-conf conf/output/output80",
    "identity transform (match=\"@*|node()\") from the root: the inserted PI is copied to the output",
)];

fn in_folders(case: &Case) -> bool {
    case.xsl.is_none()
        || HTTP_FOLDERS
            .iter()
            .any(|(f, prefix)| *f == case.group.folder() && case.id.starts_with(prefix))
}

/// Is `case` in the HTTP subset?
pub fn in_http_subset(case: &Case) -> bool {
    let folder = case.group.folder();
    let label = case.label();
    case.xsltproc_pass
        && (case.xsl.is_none()
            || HTTP_FOLDERS
                .iter()
                .any(|(f, prefix)| *f == folder && case.id.starts_with(prefix)))
        && !HTTP_EXCLUDED.iter().any(|(l, _)| *l == label)
}

/// One HTTP check.
#[derive(Debug, Clone)]
pub struct HttpResult {
    /// `folder case_id`.
    pub label: String,
    /// The mode.
    pub mode: CacheMode,
    /// `Ok` or what went wrong.
    pub outcome: Result<(), String>,
}

/// The HTTP subset's findings.
pub struct HttpReport {
    /// Every (case, mode) check.
    pub results: Vec<HttpResult>,
    /// Cases whose bodies or headers differ between modes.
    pub mode_mismatches: Vec<String>,
    /// Problems with the subset itself (a listed case missing, ...).
    pub setup_errors: Vec<String>,
    /// Cases run (`ok` cases, error cases).
    pub cases: (usize, usize),
    /// Wall time.
    pub elapsed: Duration,
}

impl HttpReport {
    /// The failed checks.
    pub fn failures(&self) -> Vec<&HttpResult> {
        self.results.iter().filter(|r| r.outcome.is_err()).collect()
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

struct HttpServer {
    addr: std::net::SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn start_server(
    root: &Path,
    mode: CacheMode,
    max_depth: Option<u32>,
) -> Result<HttpServer, String> {
    let mut config = ServeConfig::new(root);
    config.cache_mode = mode;
    config.workers = 2;
    if let Some(depth) = max_depth {
        config.limits.max_depth = depth;
    }
    let app = axle::http::App::new(&config, axle::Registry::default())
        .map_err(|e| format!("server for {}: {e}", root.display()))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let router = axle::http::router(app);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Ok(HttpServer { addr, task })
}

struct Fetched {
    status: u16,
    content_type: String,
    cache: String,
    etag: String,
    body: Bytes,
}

async fn fetch(client: &reqwest::Client, url: &str) -> Result<Fetched, String> {
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (status, content_type, cache, etag) = (
        response.status().as_u16(),
        header("content-type"),
        header("x-axle-cache"),
        header("etag"),
    );
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("GET {url}: reading the body: {e}"))?;
    Ok(Fetched {
        status,
        content_type,
        cache,
        etag,
        body,
    })
}

/// A prepared HTTP case.
struct HttpCase {
    case: Case,
    url: String,
    content_type: Option<String>,
    expected: Bytes,
}

/// Runs [`HTTP_CASES`] over real HTTP in every mode.
pub async fn run_http_subset(conf: &Path) -> Result<HttpReport, String> {
    let started = Instant::now();
    let mut setup_errors = Vec::new();
    let scratch = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let mut manifests: HashMap<&str, Vec<Case>> = HashMap::new();
    for folder in ["libxslt", "xalan-conf"] {
        manifests.insert(folder, load_manifest(conf, folder)?);
    }
    // Prepare the copies: each suite folder once, then the PIs.
    let mut copied: HashMap<&str, PathBuf> = HashMap::new();
    let mut prepared: Vec<HttpCase> = Vec::new();
    for (label, _) in HTTP_EXCLUDED {
        let known = label.split_once(' ').is_some_and(|(folder, id)| {
            manifests
                .get(folder)
                .is_some_and(|cases| cases.iter().any(|c| c.id == id && in_folders(c)))
        });
        if !known {
            setup_errors.push(format!(
                "excluded case {label} is not in the subset's folders"
            ));
        }
    }
    let chosen: Vec<Case> = ["libxslt", "xalan-conf"]
        .iter()
        .flat_map(|f| manifests[f].iter())
        .filter(|c| in_http_subset(c))
        .cloned()
        .collect();
    for case in chosen {
        let folder = case.group.folder();
        let label = case.label();
        if !copied.contains_key(folder) {
            let target = scratch.path().join(folder);
            copy_tree(&conf.join(folder), &target).map_err(|e| format!("copying {folder}: {e}"))?;
            let canonical = target.canonicalize().map_err(|e| e.to_string())?;
            copied.insert(
                if folder == "libxslt" {
                    "libxslt"
                } else {
                    "xalan-conf"
                },
                canonical,
            );
        }
        let root = &copied[folder];
        let source = root.join(&case.xml);
        let (stylesheet, fragment) = match &case.xsl {
            Some(xsl) => {
                let bytes = std::fs::read(&source).map_err(|e| format!("{label}: {e}"))?;
                if contains(&bytes, b"<?xml-stylesheet") {
                    setup_errors.push(format!("{label}: its source already has a stylesheet PI"));
                    continue;
                }
                let href = relative_href(&case.xml, xsl);
                match insert_pi(&bytes, &href) {
                    Ok(with_pi) => {
                        std::fs::write(&source, with_pi).map_err(|e| format!("{label}: {e}"))?
                    }
                    Err(e) => {
                        setup_errors.push(format!("{label}: {e}"));
                        continue;
                    }
                }
                (root.join(xsl), None)
            }
            None => {
                let bytes = std::fs::read(&source).map_err(|e| format!("{label}: {e}"))?;
                let Some(pi) = first_stylesheet_pi(&bytes) else {
                    setup_errors.push(format!("{label}: no stylesheet PI"));
                    continue;
                };
                match pi.href.strip_prefix('#') {
                    Some(id) => (source.clone(), Some(id.to_string())),
                    None => (source.with_file_name("").join(&pi.href), None),
                }
            }
        };
        let content_type = if case.compare == Compare::ExpectError {
            None
        } else {
            match output_decl(&stylesheet, fragment.as_deref()) {
                Ok(decl) => Some(expected_content_type(&decl)),
                Err(e) => {
                    setup_errors.push(format!("{label}: reading xsl:output: {e}"));
                    continue;
                }
            }
        };
        let expected = match &case.expected {
            Some(rel) => Bytes::from(
                std::fs::read(conf.join(folder).join(rel)).map_err(|e| format!("{label}: {e}"))?,
            ),
            None => Bytes::new(),
        };
        let mut url = url_path(&case.xml);
        if !case.params.is_empty() {
            let query: Vec<String> = case
                .params
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}={}",
                        form_urlencoded::byte_serialize(k.as_bytes()).collect::<String>(),
                        form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>()
                    )
                })
                .collect();
            url = format!("{url}?{}", query.join("&"));
        }
        prepared.push(HttpCase {
            case,
            url,
            content_type,
            expected,
        });
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("client: {e}"))?;
    let mut results = Vec::new();
    // Per case: the (status, content-type, etag, body) seen in each mode.
    let mut seen: BTreeMap<String, Vec<(CacheMode, String)>> = BTreeMap::new();
    for mode in MODES {
        let mut servers: HashMap<&str, HttpServer> = HashMap::new();
        for (folder, root) in &copied {
            // libxslt's runtest rows run with xsltMaxDepth = 200.
            let depth = (*folder == "libxslt").then_some(200);
            servers.insert(folder, start_server(root, mode, depth).await?);
        }
        let mut probe: HashMap<&str, (String, Bytes)> = HashMap::new();
        for hc in &prepared {
            let folder = hc.case.group.folder();
            let base = format!("http://{}", servers[folder].addr);
            let label = hc.case.label();
            let outcome = check_http_case(&client, &base, hc, mode, &mut probe, &mut seen).await;
            results.push(HttpResult {
                label,
                mode,
                outcome,
            });
        }
    }
    let mut mode_mismatches = Vec::new();
    for (label, per_mode) in &seen {
        if per_mode.windows(2).any(|w| w[0].1 != w[1].1) {
            let detail: Vec<String> = per_mode
                .iter()
                .map(|(m, s)| format!("{m}: {}", shorten(s, 100)))
                .collect();
            mode_mismatches.push(format!("{label}: {}", detail.join("; ")));
        }
    }
    let errors = prepared
        .iter()
        .filter(|h| h.case.compare == Compare::ExpectError)
        .count();
    Ok(HttpReport {
        results,
        mode_mismatches,
        setup_errors,
        cases: (prepared.len() - errors, errors),
        elapsed: started.elapsed(),
    })
}

async fn check_http_case(
    client: &reqwest::Client,
    base: &str,
    hc: &HttpCase,
    mode: CacheMode,
    probe: &mut HashMap<&'static str, (String, Bytes)>,
    seen: &mut BTreeMap<String, Vec<(CacheMode, String)>>,
) -> Result<(), String> {
    let folder = hc.case.group.folder();
    let url = format!("{base}{}", hc.url);
    let first = fetch(client, &url).await?;
    let summary = |f: &Fetched| {
        format!(
            "{} {} {} {}",
            f.status,
            f.content_type,
            f.etag,
            axle::cache::ContentHash::of(&f.body).etag()
        )
    };
    seen.entry(hc.case.label())
        .or_default()
        .push((mode, summary(&first)));
    // A runtest row expecting empty output: xsltproc printed nothing, most
    // often because the transform failed; over HTTP that is a 500.
    let empty_or_error = hc.case.runtest && hc.case.expected.is_none() && first.status == 500;
    if hc.case.compare == Compare::ExpectError || empty_or_error {
        if first.status != 500 {
            return Err(format!(
                "expected status 500, got {} ({} bytes)",
                first.status,
                first.body.len()
            ));
        }
        // The server must still answer: the suite's probe document, or a
        // static file when no rendered case ran before this one.
        let (probe_url, probe_body) = match probe.get(folder) {
            Some((u, b)) => (format!("{base}{u}"), Some(b.clone())),
            None => (format!("{base}/MANIFEST.tsv"), None),
        };
        let next = fetch(client, &probe_url)
            .await
            .map_err(|e| format!("the server stopped answering after a 500: {e}"))?;
        if next.status != 200 || probe_body.is_some_and(|b| b != next.body) {
            return Err(format!(
                "after the 500, {probe_url} gave status {} (expected 200 and the same body)",
                next.status
            ));
        }
        return Ok(());
    }
    if first.status != 200 {
        return Err(format!(
            "status {}: {}",
            first.status,
            first_line(&html_detail(&first.body))
        ));
    }
    if let Some(want) = &hc.content_type {
        if first.content_type != *want {
            return Err(format!(
                "Content-Type {:?}, expected {want:?} (from xsl:output)",
                first.content_type
            ));
        }
    }
    compare_bytes(hc.case.compare, &hc.expected, &first.body)?;
    if mode != CacheMode::Off {
        let second = fetch(client, &url).await?;
        if second.body != first.body || second.content_type != first.content_type {
            return Err("the second request gave another response".into());
        }
        if first.cache != "miss" || second.cache != "hit" {
            return Err(format!(
                "x-axle-cache: {} then {}, expected miss then hit",
                first.cache, second.cache
            ));
        }
    }
    probe
        .entry(folder)
        .or_insert_with(|| (hc.url.clone(), first.body.clone()));
    Ok(())
}

/// The `<pre>` of an Axle error page.
fn html_detail(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    match (text.find("<pre>"), text.find("</pre>")) {
        (Some(a), Some(b)) if a < b => text[a + 5..b].to_string(),
        _ => text.into_owned(),
    }
}
