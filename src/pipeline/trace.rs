//! Trace files (AxKit's AxTraceIntermediate): with `--trace DIR` or a
//! location's `trace` setting, the source and every stage's output are
//! written under DIR, for looking at what each stage made.

use super::job::ChainJob;

impl ChainJob {
    /// AxKit's AxTraceIntermediate: `<dir>/<escaped path>.N` holds the
    /// source (N = 0) and each stage's output. Failures are logged only.
    pub(super) fn write_trace(&self, n: usize, bytes: &[u8]) {
        let Some((dir, name)) = &self.trace else {
            return;
        };
        let path = dir.join(format!("{name}.{n}"));
        if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, bytes)) {
            tracing::warn!(path = %path.display(), error = %e, "cannot write trace file");
        }
    }
}

/// A trace file name for a URL path: `/a/b.xml` → `a|b.xml` (AxKit escaped
/// `/` the same way).
pub(super) fn trace_name(url_path: &str) -> String {
    let name = url_path.trim_start_matches('/').replace('/', "|");
    if name.is_empty() {
        "index".to_string()
    } else {
        name
    }
}
