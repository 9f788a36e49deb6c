//! Feeds arbitrary documents and requests to chain selection (PIs + style
//! and media + configured processors → stages) over a temporary root whose
//! stylesheets include symlinks out of it. Must never panic; every stage it
//! builds must name a file under the root, and selection must be
//! deterministic.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use axle::Registry;
use axle::cache::Fingerprints;
use axle::chain::{Processor, ProcessorOrder, Selection, applicable, select};
use axle::prolog::{Prolog, StylesheetPi, scan};
use axle::provider::FileProvider;
use libfuzzer_sys::fuzz_target;

struct Site {
    root: PathBuf,
    files: FileProvider,
    registry: Registry,
}

fn site() -> &'static Site {
    static SITE: OnceLock<Site> = OnceLock::new();
    SITE.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("axle-fuzz-chain-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(base.join("evil.xsl"), "<x/>").unwrap();
        for f in ["d.xml", "s.xsl", "p.xsl", "sub/e.xml", "sub/t.xsl", "a.css"] {
            std::fs::write(root.join(f), "<x/>").unwrap();
        }
        let _ = std::os::unix::fs::symlink("../evil.xsl", root.join("out.xsl"));
        let _ = std::os::unix::fs::symlink("s.xsl", root.join("in.xsl"));
        let _ = std::os::unix::fs::symlink("/etc/passwd", root.join("passwd.xsl"));
        let root = root.canonicalize().unwrap();
        let files = FileProvider::new(&root, Fingerprints::new(1024)).unwrap();
        Site {
            root,
            files,
            registry: Registry::default(),
        }
    })
}

const MEDIA: [&str; 5] = ["screen", "print", "handheld", "all", "tv"];
const STYLES: [Option<&str>; 4] = [None, Some("print"), Some("Alt"), Some("")];
const ORDERS: [ProcessorOrder; 4] = [
    ProcessorOrder::Fallback,
    ProcessorOrder::Instead,
    ProcessorOrder::Before,
    ProcessorOrder::After,
];

/// PIs from `type|href|title|media|alternate` lines, for bytes the
/// scanner refuses (so selection still sees odd PIs).
fn synthetic(text: &str) -> Prolog {
    let mut prolog = Prolog::default();
    for line in text.lines().filter(|l| !l.starts_with('!')) {
        let mut f = line.split('|');
        let r#type = f.next().unwrap_or_default();
        let href = f.next().unwrap_or_default();
        if r#type.is_empty() || href.is_empty() {
            continue;
        }
        let opt = |s: Option<&str>| s.filter(|s| !s.is_empty()).map(str::to_owned);
        prolog.stylesheets.push(StylesheetPi {
            r#type: r#type.to_owned(),
            href: href.to_owned(),
            title: opt(f.next()),
            media: opt(f.next()),
            charset: None,
            alternate: f.next() == Some("yes"),
        });
    }
    prolog.root.local = "doc".into();
    prolog
}

fn under(root: &Path, p: &Path) -> bool {
    p.starts_with(root)
}

fuzz_target!(|data: &[u8]| {
    let [order, media, style, doc, rest @ ..] = data else {
        return;
    };
    let s = site();
    let prolog = match scan(rest) {
        Ok(p) => p,
        Err(_) => synthetic(&String::from_utf8_lossy(rest)),
    };
    // Configured processors: `!type|href` lines.
    let text = String::from_utf8_lossy(rest);
    let processors: Vec<Processor> = text
        .lines()
        .filter_map(|l| l.strip_prefix('!'))
        .filter_map(|l| l.split_once('|'))
        .take(8)
        .map(|(t, h)| Processor::always(t, h))
        .collect();
    let selection = Selection {
        style: STYLES[usize::from(*style) % STYLES.len()].map(str::to_owned),
        media: MEDIA[usize::from(*media) % MEDIA.len()].to_owned(),
    };
    let order = ORDERS[usize::from(*order) % ORDERS.len()];
    let doc = if doc % 2 == 0 { "/d.xml" } else { "/sub/e.xml" };

    let chosen = applicable(&prolog, &selection);
    assert!(chosen.len() <= prolog.stylesheets.len());

    let first = select(
        &prolog,
        doc,
        &s.files,
        &s.registry,
        &selection,
        &processors,
        order,
    );
    let again = select(
        &prolog,
        doc,
        &s.files,
        &s.registry,
        &selection,
        &processors,
        order,
    );
    match (&first, &again) {
        (Ok(a), Ok(b)) => {
            let paths = |v: &[axle::chain::StageSpec]| {
                v.iter()
                    .map(|st| st.resource.as_path().to_owned())
                    .collect::<Vec<_>>()
            };
            assert_eq!(paths(a), paths(b), "selection is not deterministic");
            assert!(a.len() <= prolog.stylesheets.len() + processors.len());
            for stage in a {
                let p = stage.resource.as_path();
                assert!(under(&s.root, p), "stage outside the root: {p:?}");
                if stage.fragment.is_some() {
                    assert_eq!(stage.resource.rel(), doc, "embedded stage of another file");
                }
            }
            if order == ProcessorOrder::Instead && processors.is_empty() {
                assert!(a.is_empty(), "Instead with no processors gave stages");
            }
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "selection errors differ"),
        _ => panic!("selection is not deterministic: {first:?} / {again:?}"),
    }
});
