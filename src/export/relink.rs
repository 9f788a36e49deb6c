//! Pointing exported pages' links at the files the build wrote, so that a
//! static host (a plain file server, an object store, a browser opening the
//! folder) serves every page a link names.
//!
//! A page's internal links (`links`: which attributes) are resolved against
//! its URL (`targets`) and looked up, in this order: a URL the build
//! exported; a URL the server answers with the very bytes of an exported
//! file (asked through the handler, as the build asks for pages: a
//! directory's `?style=`, a style chosen by path or suffix, a query the
//! page ignores); a URL with a query the page does not ignore, pointed at
//! the page without it. Each becomes a relative URL to the file (a
//! directory's as its `index.html`), fragment kept. The rest are left as
//! written and listed: dynamic locations, pages made per request, a form's
//! POST target, URLs the server does not answer with a page.
//!
//! A re-run keeps a page whose sources are unchanged only when each of its
//! links resolves as it did: the state holds every page's links and each
//! link's resolution. What the server answered for a link's URL that is no
//! exported page (`?theme=dark`, a style by path) is kept in the state with
//! the files the answer came from ([`Answer`]), and reused without asking
//! while they are unchanged, so a re-run with nothing changed renders
//! nothing, links included.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::cache::ContentHash;

use super::links::{self, Link, Syntax};
use super::output::write_inside;
use super::targets::{self, Target};
use super::{Ctx, Failure, PageState, Report};

/// What a link was made to point at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum Resolution {
    /// The exported file (relative to the output folder).
    File(String),
    /// The exported file of the page without the link's query (the query
    /// changes the page, and no such page is exported).
    WithoutQuery(String),
    /// Left as written, and why.
    AsWritten(String),
}

/// The server's answer (2xx, cacheable) to a link's URL that is no
/// exported page: what resolving the link needs of it, and the files it
/// came from with their content hashes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Answer {
    content_type: String,
    /// The hash of the body as served.
    body: String,
    deps: Vec<(PathBuf, String)>,
}

/// A link left as written, or pointed at the page without its query.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnexportedLink {
    /// The URL (path and query), `POST ` before a form's POST target.
    pub target: String,
    /// The exported file it now points at (None: left as written).
    pub file: Option<String>,
    /// Why it is not exported.
    pub why: String,
    /// How many exported pages link to it.
    pub pages: usize,
}

/// What the build exported and skipped, for resolving links.
pub(super) struct Exported {
    /// URL → file of every page and file exported (not media variants).
    files: HashMap<String, String>,
    /// (content type, hash of the served body) → file.
    bodies: HashMap<(String, String), String>,
    /// URLs skipped this run, with why.
    skipped: HashMap<String, String>,
    /// Dynamic locations' prefixes.
    dynamic: Vec<String>,
}

impl Exported {
    pub(super) fn new(
        pages: &BTreeMap<String, PageState>,
        skipped: HashMap<String, String>,
        dynamic: Vec<String>,
    ) -> Self {
        let mut files = HashMap::new();
        let mut bodies = HashMap::new();
        for page in pages.values().filter(|p| p.media.is_none()) {
            files.insert(page.url.clone(), page.file.clone());
            bodies
                .entry((page.content_type.clone(), page.served.clone()))
                .or_insert_with(|| page.file.clone());
        }
        Exported {
            files,
            bodies,
            skipped,
            dynamic,
        }
    }

    fn is_dynamic(&self, path: &str) -> bool {
        let decoded = super::decoded(path);
        self.dynamic.iter().any(|prefix| {
            let prefix = prefix.trim_end_matches('/');
            decoded == prefix
                || decoded
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }
}

/// The URL a page's relative links are read against, and whether its
/// rewritten links must be root-absolute (a `<base href>` makes relative
/// ones mean something else); None: a base outside the site, nothing is
/// rewritten.
fn base_of(page_url: &str, found: &[Link]) -> Option<(String, bool)> {
    match found
        .iter()
        .find(|l| l.element == "base" && l.attribute == "href")
    {
        None => Some((page_url.to_string(), false)),
        Some(base) => targets::resolve(page_url, base.value.trim()).map(|t| (t.url(), true)),
    }
}

/// A link's key in the resolutions: its URL, `POST ` before a form's POST
/// target.
fn key(link: &Link, target: &Target) -> String {
    if link.posts {
        format!("POST {}", target.url())
    } else {
        target.url()
    }
}

fn is_base(link: &Link) -> bool {
    link.element == "base" && link.attribute == "href"
}

/// The keys of every internal link of a page.
fn keys_of(page_url: &str, body: &[u8], syntax: Syntax) -> Vec<String> {
    let found = links::links(body, syntax);
    let Some((base, _)) = base_of(page_url, &found) else {
        return Vec::new();
    };
    let mut keys: Vec<String> = found
        .iter()
        .filter(|l| !is_base(l))
        .flat_map(|l| {
            l.urls()
                .into_iter()
                .filter_map(|u| targets::resolve(&base, u).map(|t| key(l, &t)))
                .collect::<Vec<_>>()
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// `body` (the page exported as `file` from `page_url`) with its internal
/// links pointed at their files.
fn rewrite(
    page_url: &str,
    file: &str,
    body: &[u8],
    syntax: Syntax,
    resolved: &HashMap<String, Resolution>,
) -> Vec<u8> {
    let found = links::links(body, syntax);
    let Some((base, absolute)) = base_of(page_url, &found) else {
        return body.to_vec();
    };
    links::rewrite(body, &found, |link, url| {
        if is_base(link) {
            return None;
        }
        let target = targets::resolve(&base, url)?;
        let to = match resolved.get(&key(link, &target))? {
            Resolution::File(f) | Resolution::WithoutQuery(f) => f,
            Resolution::AsWritten(_) => return None,
        };
        let mut new = if absolute {
            format!("/{}", targets::relative("", to))
        } else {
            targets::relative(file, to)
        };
        if let Some(fragment) = &target.fragment {
            new.push('#');
            new.push_str(fragment);
        }
        (new != url).then_some(new)
    })
}

/// How `key` resolves this run: looked up, answered as the last run's
/// `before` said (the files it came from unchanged), or asked of the
/// server; with the answer to keep for the next run, if any.
async fn resolve(
    ctx: &Ctx,
    exported: &Exported,
    before: &BTreeMap<String, Answer>,
    key: &str,
) -> (Resolution, Option<(String, Answer)>) {
    if key.starts_with("POST ") {
        let why = "a form's POST target (a static host answers POST with an error)";
        return (Resolution::AsWritten(String::from(why)), None);
    }
    let mut url = key.to_string();
    // A redirect the server answers (`/dir` → `/dir/`) is followed, twice
    // at most.
    for _ in 0..3 {
        if let Some(file) = exported.files.get(&url) {
            return (Resolution::File(file.clone()), None);
        }
        let (path, query) = match url.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (url.clone(), None),
        };
        let as_written = |why: &str| (Resolution::AsWritten(why.to_string()), None);
        if exported.is_dynamic(&path) {
            return as_written("a dynamic location (request-time only)");
        }
        if let Some(why) = exported
            .skipped
            .get(&url)
            .or_else(|| exported.skipped.get(&path))
        {
            return as_written(why);
        }
        if let Some(answer) = before.get(&url).filter(|a| ctx.fresh(&a.deps)) {
            let resolution = by_body(exported, answer, query.is_some(), &path);
            return (resolution, Some((url, answer.clone())));
        }
        let got = match ctx.get(&url, None).await {
            Ok(got) => got,
            Err(e) => return as_written(&e),
        };
        if (300..400).contains(&got.status) {
            match got
                .location
                .as_deref()
                .and_then(|l| targets::resolve(&url, l))
            {
                Some(next) => {
                    url = next.url();
                    continue;
                }
                None => {
                    return as_written(&format!(
                        "the server redirects it ({}) out of the site",
                        got.status
                    ));
                }
            }
        }
        if !(200..300).contains(&got.status) {
            return as_written(&format!("the server answers {}", got.status));
        }
        if got.per_request {
            return as_written("made per request (Cache-Control: no-store)");
        }
        let body = ContentHash::of(&got.body).hex(32);
        let deps = ctx.url_deps(&url, &body).await;
        let answer = Answer {
            content_type: got.content_type,
            body,
            deps: deps.unwrap_or_default(),
        };
        let resolution = by_body(exported, &answer, query.is_some(), &path);
        // Kept only with the files it came from: an answer nothing is known
        // to come from is asked again next run.
        let keep = (!answer.deps.is_empty()).then_some((url, answer));
        return (resolution, keep);
    }
    (
        Resolution::AsWritten(String::from("redirected too many times")),
        None,
    )
}

/// How a link resolves given the server's `answer` for its URL (`path`,
/// with a query or not): the exported file with those very bytes, else
/// the page without the query, else as written.
fn by_body(exported: &Exported, answer: &Answer, has_query: bool, path: &str) -> Resolution {
    let key = (answer.content_type.clone(), answer.body.clone());
    if let Some(file) = exported.bodies.get(&key) {
        return Resolution::File(file.clone());
    }
    match (has_query, exported.files.get(path)) {
        (true, Some(file)) => Resolution::WithoutQuery(file.clone()),
        _ => Resolution::AsWritten(String::from("the server renders it as no exported file")),
    }
}

/// Points every exported page's internal links at the exported files (see
/// the module's doc). `rendered` holds the ids of pages written this run
/// (their served bytes in their file); the others were kept and are
/// rendered again when one of their links resolves otherwise than in
/// `previous` (the last run's resolutions, and its server answers).
/// Returns every link's resolution and the answers to keep, for the state,
/// and the pages whose links could not be rewritten (their state is left
/// so that the next run renders them again).
pub(super) async fn relink(
    ctx: &Arc<Ctx>,
    pages: &mut BTreeMap<String, PageState>,
    exported: Exported,
    previous: (&BTreeMap<String, Resolution>, BTreeMap<String, Answer>),
    parallel: usize,
    report: &mut Report,
) -> (
    BTreeMap<String, Resolution>,
    BTreeMap<String, Answer>,
    Vec<Failure>,
) {
    let (previous, before) = (previous.0, Arc::new(previous.1));
    let mut failures = Vec::new();
    // A page not rewritten must not be kept by the next run: its state's
    // body hash is cleared, which no file matches.
    let mut fail = |page: &mut PageState, id: &str, detail: String| {
        page.body.clear();
        failures.push(Failure {
            url: id.to_string(),
            status: 0,
            detail: format!("its links could not be rewritten: {detail}"),
        });
    };
    let rendered: HashSet<String> = report.rendered.iter().cloned().collect();
    // Every page's links: read from a rendered page, kept for a kept one.
    let mut keys: HashMap<String, Vec<String>> = HashMap::new();
    for (id, page) in pages.iter_mut().filter(|(_, p)| !p.copy) {
        let Some(syntax) = Syntax::of(&page.content_type) else {
            continue;
        };
        if rendered.contains(id) {
            match std::fs::read(ctx.out.join(&page.file)) {
                Ok(body) => {
                    keys.insert(id.clone(), keys_of(&page.url, &body, syntax));
                }
                Err(e) => fail(page, id, e.to_string()),
            }
        } else {
            keys.insert(id.clone(), page.links.clone());
        }
    }
    let mut resolved: HashMap<String, Resolution> = HashMap::new();
    let mut answers: BTreeMap<String, Answer> = BTreeMap::new();
    let mut distinct: Vec<&String> = keys.values().flatten().collect();
    distinct.sort();
    distinct.dedup();
    // Resolved at once, as many at a time as the build asks for pages.
    let exported = Arc::new(exported);
    let permits = Arc::new(tokio::sync::Semaphore::new(parallel));
    let mut set = tokio::task::JoinSet::new();
    for key in distinct {
        let (ctx, exported, before, permits) = (
            Arc::clone(ctx),
            Arc::clone(&exported),
            Arc::clone(&before),
            Arc::clone(&permits),
        );
        let key = key.clone();
        set.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let (resolution, answer) = resolve(&ctx, &exported, &before, &key).await;
            (key, resolution, answer)
        });
    }
    while let Some(joined) = set.join_next().await {
        if let Ok((key, resolution, answer)) = joined {
            resolved.insert(key, resolution);
            if let Some((url, answer)) = answer {
                answers.insert(url, answer);
            }
        }
    }

    let mut unexported: BTreeMap<String, UnexportedLink> = BTreeMap::new();
    for (id, page_keys) in &keys {
        let Some(page) = pages.get_mut(id) else {
            continue;
        };
        for key in page_keys {
            let (file, why) = match resolved.get(key) {
                Some(Resolution::WithoutQuery(f)) => (
                    Some(f.clone()),
                    String::from("its query changes the page; pointed at the page without it"),
                ),
                Some(Resolution::AsWritten(why)) => (None, why.clone()),
                _ => continue,
            };
            unexported
                .entry(key.clone())
                .or_insert_with(|| UnexportedLink {
                    target: key.clone(),
                    file,
                    why,
                    pages: 0,
                })
                .pages += 1;
        }
        let Some(syntax) = Syntax::of(&page.content_type) else {
            continue;
        };
        if !rendered.contains(id) {
            let same = page_keys
                .iter()
                .all(|k| previous.get(k).is_some() && previous.get(k) == resolved.get(k));
            if same {
                continue;
            }
            // A link of a kept page resolves otherwise: the page is asked
            // for again (its sources are unchanged: the same bytes) and its
            // served form written before it is rewritten below.
            let got = match ctx.get(&page.url, page.media.as_deref()).await {
                Ok(got) if (200..300).contains(&got.status) => got,
                Ok(got) => {
                    fail(page, id, format!("asked again, it answers {}", got.status));
                    continue;
                }
                Err(e) => {
                    fail(page, id, e);
                    continue;
                }
            };
            if let Err(e) = write_inside(&ctx.out, &page.file, &got.body) {
                fail(page, id, e.to_string());
                continue;
            }
            report.kept.retain(|k| k != id);
            report.rendered.push(id.clone());
            report.bytes += got.body.len() as u64;
            println!("rendered {id} -> {} (its links changed)", page.file);
        }
        let body = match std::fs::read(ctx.out.join(&page.file)) {
            Ok(body) => body,
            Err(e) => {
                fail(page, id, e.to_string());
                continue;
            }
        };
        let new = rewrite(&page.url, &page.file, &body, syntax, &resolved);
        if new != body {
            if let Err(e) = write_inside(&ctx.out, &page.file, &new) {
                fail(page, id, e.to_string());
                continue;
            }
            report.bytes = (report.bytes + new.len() as u64).saturating_sub(body.len() as u64);
        }
        page.body = ContentHash::of(&new).hex(32);
        page.links.clone_from(page_keys);
    }
    report.unexported_links = unexported.into_values().collect();
    let used: HashSet<&String> = keys.values().flatten().collect();
    let resolved = resolved
        .into_iter()
        .filter(|(k, _)| used.contains(k))
        .collect();
    (resolved, answers, failures)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolutions(pairs: &[(&str, Resolution)]) -> HashMap<String, Resolution> {
        pairs
            .iter()
            .map(|(k, r)| ((*k).to_string(), r.clone()))
            .collect()
    }

    #[test]
    fn links_point_at_files_relative_to_the_page() {
        let page = concat!(
            "<a href=\"/\">home</a><a href=\"../css/a.css\">c</a>",
            "<a href=\"?style=print#top\">p</a><a href=\"/x?lang=fr\">x</a>",
            "<a href=\"/live/now\">live</a><a href=\"https://example.org/\">e</a>",
            "<form action=\"/articles/\" method=\"post\"></form><a href=\"#f\">f</a>"
        );
        let resolved = resolutions(&[
            ("/", Resolution::File("index.html".into())),
            ("/css/a.css", Resolution::File("css/a.css".into())),
            (
                "/articles/x.xml?style=print",
                Resolution::File("articles/x.xml.print.html".into()),
            ),
            ("/x?lang=fr", Resolution::WithoutQuery("x.xml.html".into())),
            ("/live/now", Resolution::AsWritten("dynamic".into())),
            ("POST /articles/", Resolution::AsWritten("post".into())),
        ]);
        let out = rewrite(
            "/articles/x.xml",
            "articles/x.xml.html",
            page.as_bytes(),
            Syntax::Html,
            &resolved,
        );
        let expected = page
            // `../css/a.css` already names its file: unchanged.
            .replace("\"/\"", "\"../index.html\"")
            .replace("?style=print#top", "x.xml.print.html#top")
            .replace("/x?lang=fr", "../x.xml.html");
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        let keys = keys_of("/articles/x.xml", page.as_bytes(), Syntax::Html);
        assert!(keys.contains(&"POST /articles/".to_string()), "{keys:?}");
        assert!(!keys.iter().any(|k| k.contains("example.org")), "{keys:?}");
    }

    #[test]
    fn a_base_element_makes_links_root_absolute() {
        let page = "<base href=\"/docs/\"><a href=\"a.xml\">a</a>";
        let resolved = resolutions(&[("/docs/a.xml", Resolution::File("docs/a.xml.html".into()))]);
        let out = rewrite(
            "/x.xml",
            "x.xml.html",
            page.as_bytes(),
            Syntax::Html,
            &resolved,
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "<base href=\"/docs/\"><a href=\"/docs/a.xml.html\">a</a>"
        );
        // A base elsewhere: nothing is rewritten.
        let page = "<base href=\"https://example.org/\"><a href=\"/docs/a.xml\">a</a>";
        let out = rewrite(
            "/x.xml",
            "x.xml.html",
            page.as_bytes(),
            Syntax::Html,
            &resolved,
        );
        assert_eq!(out, page.as_bytes());
    }
}
