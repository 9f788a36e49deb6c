//! Writing only inside the output folder: every file `axle build` writes
//! or deletes goes through here, so an edited state file or a symlink
//! planted in OUT can never make a build write or delete outside it (issue
//! #36): paths are plain relative ones, a link is replaced by a renamed
//! temporary file and never written through, a delete never passes a link.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{ExportError, io};

pub(super) fn write_json(
    out: &Path,
    name: &str,
    value: &impl Serialize,
) -> Result<(), ExportError> {
    let path = out.join(name);
    let mut text = serde_json::to_vec_pretty(value).map_err(|source| ExportError::Json {
        path: path.clone(),
        source,
    })?;
    text.push(b'\n');
    write_inside(out, name, &text).map_err(io(&path))
}

/// `file` (a path the build writes, relative to the output folder) as
/// components that stay inside it: relative, no `..`, no `.`, not empty.
/// None for anything else (an edited state naming `../x` or `/tmp/x`).
pub(super) fn inside_out(file: &str) -> Option<PathBuf> {
    let path = Path::new(file);
    let mut inside = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::Normal(name) => inside.push(name),
            _ => return None,
        }
    }
    (!inside.as_os_str().is_empty() && !file.contains('\0')).then_some(inside)
}

/// The directories on the way to `file` under `out` (canonical) exist as
/// real directories: a symlink there is replaced by a directory (never
/// followed out of the folder), anything else in the way is an error.
fn directories_inside(out: &Path, file: &Path) -> std::io::Result<PathBuf> {
    let mut dir = out.to_path_buf();
    let parts: Vec<_> = file.components().collect();
    let Some((_, parents)) = parts.split_last() else {
        return Err(std::io::Error::other("an empty file name"));
    };
    for part in parents {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                match std::fs::remove_file(&dir) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
                create_dir(&dir)?;
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(std::io::Error::other(format!(
                    "{} is in the way (not a directory)",
                    dir.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_dir(&dir)?,
            Err(e) => return Err(e),
        }
    }
    Ok(out.join(file))
}

/// Creates the directory `dir`; one another page's job made meanwhile (the
/// jobs run at once) is as good, when it is a real directory.
fn create_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            match std::fs::symlink_metadata(dir) {
                Ok(meta) if meta.is_dir() => Ok(()),
                _ => Err(e),
            }
        }
        other => other,
    }
}

/// Writes `bytes` to `file` (relative) inside `out` (canonical), never
/// through a symlink: into a new temporary file beside it (`create_new`
/// follows no link), renamed over the name, which replaces a link there
/// instead of writing to where it points.
pub(super) fn write_inside(out: &Path, file: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    static UNIQUE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let rel = inside_out(file)
        .ok_or_else(|| std::io::Error::other(format!("{file} is not a path inside the output")))?;
    let target = directories_inside(out, &rel)?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = UNIQUE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = target.with_file_name(format!(".{name}.axle-{}-{n}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|mut f| f.write_all(bytes));
    match written.and_then(|()| std::fs::rename(&temp, &target)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Removes `file` (relative) inside `out` (canonical) when every
/// directory on its way is a real one there (a link on the way could lead
/// out of the folder); a link at the name itself is removed, not what it
/// points to.
pub(super) fn remove_inside(out: &Path, file: &str) {
    let Some(rel) = inside_out(file) else {
        return;
    };
    let mut dir = out.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    if let Some((_, parents)) = parts.split_last() {
        for part in parents {
            dir.push(part);
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.is_dir() => {}
                _ => return,
            }
        }
    }
    let _ = std::fs::remove_file(out.join(rel));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_are_inside_the_output() {
        for good in ["a.html", "articles/x.xml.html", "a/b/c"] {
            assert_eq!(inside_out(good), Some(PathBuf::from(good)), "{good}");
        }
        for bad in ["", "../x", "a/../../x", "/tmp/x", "./a", "a\0b"] {
            assert_eq!(inside_out(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_write_replaces_a_link_and_a_delete_never_passes_one() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let out = out.canonicalize().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "OUTSIDE").unwrap();
        let outside_dir = dir.path().join("outside-dir");
        std::fs::create_dir(&outside_dir).unwrap();
        std::fs::write(outside_dir.join("f.txt"), "OUTSIDE").unwrap();
        std::os::unix::fs::symlink(&outside, out.join("page.html")).unwrap();
        std::os::unix::fs::symlink(&outside_dir, out.join("sub")).unwrap();

        // A delete through the linked directory does nothing.
        remove_inside(&out, "sub/f.txt");
        assert!(outside_dir.join("f.txt").exists());

        write_inside(&out, "page.html", b"PAGE").unwrap();
        write_inside(&out, "sub/f.txt", b"PAGE").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "OUTSIDE");
        assert_eq!(
            std::fs::read_to_string(outside_dir.join("f.txt")).unwrap(),
            "OUTSIDE"
        );
        assert_eq!(
            std::fs::read_to_string(out.join("page.html")).unwrap(),
            "PAGE"
        );
        assert!(!out.join("sub").is_symlink());
        assert!(write_inside(&out, "../escape.txt", b"x").is_err());
        assert!(!dir.path().join("escape.txt").exists());
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}
