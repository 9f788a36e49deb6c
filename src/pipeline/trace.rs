//! Trace files (AxKit's AxTraceIntermediate): with `--trace DIR` or a
//! location's `trace` setting, the source and every stage's output are
//! written under DIR, for looking at what each stage made.

use std::path::{Component, Path, PathBuf};

use super::job::ChainJob;

impl ChainJob {
    /// AxKit's AxTraceIntermediate: `<dir>/<url path>.N` holds the source
    /// (N = 0) and each stage's output (see [`trace_stem`]). Failures are
    /// logged only.
    pub(super) fn write_trace(&self, n: usize, bytes: &[u8]) {
        let Some(stem) = &self.trace else {
            return;
        };
        let mut path = stem.clone().into_os_string();
        path.push(format!(".{n}"));
        let path = PathBuf::from(path);
        let dirs = match path.parent() {
            Some(parent) => std::fs::create_dir_all(parent),
            None => Ok(()),
        };
        if let Err(e) = dirs.and_then(|()| std::fs::write(&path, bytes)) {
            tracing::warn!(path = %path.display(), error = %e, "cannot write trace file");
        }
    }
}

/// Where the trace files of the document at `url_path` go, without their
/// `.N` suffix: `dir` joined with [`trace_rel`]. `None` (logged) when the
/// URL path cannot be mirrored safely; then nothing is written.
pub(super) fn trace_stem(dir: &Path, url_path: &str) -> Option<PathBuf> {
    match trace_rel(url_path) {
        Some(rel) => Some(dir.join(rel)),
        None => {
            tracing::warn!(url_path, "not writing trace files: odd URL path");
            None
        }
    }
}

/// The trace files' path relative to the trace directory: the URL path's
/// segments as subdirectories (`/articles/a.xml` → `articles/a.xml`, so
/// `articles/a.xml.0`, `.1`, ...; `/` → `index`). The URL path is already
/// confined and normalized; still, any segment that is not a plain name
/// (`..`, a root or drive prefix, a NUL or a backslash) gives `None`, so
/// the files can never land outside the directory. Empty and `.` segments
/// are skipped.
pub(super) fn trace_rel(url_path: &str) -> Option<PathBuf> {
    let mut rel = PathBuf::new();
    for segment in url_path.split('/') {
        if segment.is_empty() || segment == "." {
            continue;
        }
        let mut components = Path::new(segment).components();
        let plain = !segment.contains(['\0', '\\'])
            && matches!(components.next(), Some(Component::Normal(c)) if c == segment)
            && components.next().is_none();
        if !plain {
            return None;
        }
        rel.push(segment);
    }
    if rel.as_os_str().is_empty() {
        rel.push("index");
    }
    Some(rel)
}
