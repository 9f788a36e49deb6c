//! Feeds arbitrary paths and URLs to path confinement (the one function
//! that decides whether a request or a stylesheet may touch a file) over a
//! temporary root holding files, a directory and symlinks that lead both
//! inside and outside it. Must never panic; whatever it accepts must be a
//! canonical path under the root, and a request path it normalizes must
//! hold no `..`, NUL or backslash.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use axle::cache::Fingerprints;
use axle::provider::{confine, confine_url, lexical_url_path, normalize_request_path};
use libfuzzer_sys::fuzz_target;

struct Root {
    root: PathBuf,
    fingerprints: Fingerprints,
}

/// `<tmp>/axle-fuzz-confine-<pid>/root` with files, a subdirectory, links
/// in and out, and `<tmp>/…/secret.txt` beside it (outside).
fn root() -> &'static Root {
    static ROOT: OnceLock<Root> = OnceLock::new();
    ROOT.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("axle-fuzz-confine-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        std::fs::create_dir_all(base.join("outside-dir")).unwrap();
        std::fs::write(base.join("secret.txt"), "SECRET").unwrap();
        std::fs::write(base.join("outside-dir/x.xml"), "<x/>").unwrap();
        for f in [
            "a.xml",
            "s.xsl",
            "sub/b.xml",
            "sub/deeper/c.xsl",
            "a b.xml",
            "%41.xml",
        ] {
            std::fs::write(root.join(f), "<a/>").unwrap();
        }
        let link = |target: &Path, name: &str| {
            let _ = std::os::unix::fs::symlink(target, root.join(name));
        };
        link(Path::new("a.xml"), "in.xml");
        link(Path::new("../s.xsl"), "sub/up.xsl");
        link(Path::new("sub"), "subdir-link");
        link(&base.join("secret.txt"), "out.txt");
        link(Path::new("../secret.txt"), "out-rel.txt");
        link(&base.join("outside-dir"), "out-dir");
        link(Path::new("/etc"), "etc");
        link(Path::new("/etc/passwd"), "passwd");
        link(Path::new("loop"), "loop");
        Root {
            root: root.canonicalize().unwrap(),
            fingerprints: Fingerprints::new(1024),
        }
    })
}

fn check(root: &Path, what: &str, confined: &axle::provider::ConfinedPath) {
    let abs = confined.as_path();
    assert!(
        abs.starts_with(root),
        "{what} confined outside the root: {abs:?}"
    );
    assert!(abs.exists(), "{what} confined to a missing file: {abs:?}");
    assert_eq!(
        abs.canonicalize().ok().as_deref(),
        Some(abs),
        "{what}: not canonical"
    );
    assert!(
        confined.rel().starts_with('/'),
        "{what}: rel {:?}",
        confined.rel()
    );
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let r = root();
    if let Some(path) = normalize_request_path(text) {
        for bad in ["\0", "\\"] {
            assert!(!path.decoded.contains(bad), "{text:?} → {path:?}");
        }
        assert!(
            !path.decoded.split('/').any(|s| s == ".."),
            "{text:?} → {path:?}"
        );
        // Normal form is a fixed point.
        let again = normalize_request_path(&path.url).expect("a normal path normalizes");
        assert_eq!(again.url, path.url, "{text:?}");
        if let Ok(c) = confine(&r.root, &path.url, &r.fingerprints) {
            check(&r.root, text, &c);
        }
    }
    if let Ok(c) = confine(&r.root, text, &r.fingerprints) {
        check(&r.root, text, &c);
        // Its URL confines back to the same file.
        let back = confine(&r.root, c.url(), &r.fingerprints).expect("url round trip");
        assert_eq!(back.as_path(), c.as_path(), "{text:?}");
    }
    if let Ok(c) = confine_url(&r.root, text, &r.fingerprints) {
        check(&r.root, text, &c);
    }
    if let Some(p) = lexical_url_path(&r.root, text) {
        assert!(p.starts_with(&r.root), "{text:?} → {p:?}");
    }
});
