//! Directory listings as documents (AxKit's `AxHandleDirs`): a `filelist`
//! in AxKit's namespace, which then goes through the location's processors.

use std::os::unix::fs::MetadataExt;

use bytes::Bytes;

use crate::provider::ConfinedPath;

/// AxKit's filelist namespace.
pub const FILELIST_NS: &str = "http://axkit.org/2002/filelist";

/// The `filelist` document for a directory: one `<directory>` or `<file>`
/// per entry (dotfiles left out), sorted by name, with `name`, `size`,
/// `mtime` (Unix seconds), `readable`, `writable`, `executable` (`1` or
/// absent: the owner's permission bits) and, for files, `type` (the MIME
/// type guessed from the name). AxKit also gave `atime` and `ctime`; they
/// are left out because reading a file changes its `atime`, which would
/// change the listing (and its cache key) on every request.
pub fn listing(dir: &ConfinedPath, root: &std::path::Path) -> std::io::Result<Bytes> {
    let mut entries: Vec<(String, std::fs::Metadata)> = std::fs::read_dir(dir.as_path())?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            // Follow symlinks for metadata, but list only what stays inside
            // the root: a link leading out is not shown at all.
            let target = e.path().canonicalize().ok()?;
            if !target.starts_with(root) {
                return None;
            }
            let meta = std::fs::metadata(&target).ok()?;
            (!name.starts_with('.')).then_some((name, meta))
        })
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out =
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<filelist xmlns=\"{FILELIST_NS}\">\n");
    for (name, meta) in entries {
        let kind = if meta.is_dir() { "directory" } else { "file" };
        let mode = meta.mode();
        let flag = |bit: u32, attr: &str| {
            if mode & bit != 0 {
                format!(" {attr}=\"1\"")
            } else {
                String::new()
            }
        };
        let mime = if meta.is_dir() {
            String::new()
        } else {
            format!(
                " type=\"{}\"",
                super::escape_markup(
                    mime_guess::from_path(&name)
                        .first_or_octet_stream()
                        .essence_str()
                )
            )
        };
        out.push_str(&format!(
            "  <{kind} name=\"{}\" size=\"{}\" mtime=\"{}\"{}{}{}{mime}/>\n",
            super::escape_markup(&name),
            meta.len(),
            meta.mtime(),
            flag(0o400, "readable"),
            flag(0o200, "writable"),
            flag(0o100, "executable"),
        ));
    }
    out.push_str("</filelist>\n");
    Ok(Bytes::from(out))
}
