//! Feeds arbitrary text to the `axle.toml` parser and validator (a file
//! any site owner writes, read at start and on SIGHUP): it must never
//! panic, only accept or give an error naming the file; an accepted
//! configuration must answer location lookups for any path.
#![no_main]

use std::path::Path;

use axle::Registry;
use axle::site::SiteConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = Path::new("/fuzz/axle.toml");
    match SiteConfig::parse(text, file, Registry::default()) {
        Ok(site) => {
            for path in ["/", "/a.xml", "/docs/x/y.xml", "/%2e%2e/", ""] {
                let _ = site.location(path);
            }
            // A path taken from the text itself, so prefixes it names match.
            if let Some(line) = text.lines().find(|l| l.contains('/'))
                && let Some(start) = line.find('/')
            {
                let _ = site.location(&line[start..]);
            }
        }
        Err(errors) => {
            for e in &errors {
                assert_eq!(e.file, file, "an error names another file");
            }
            let _ = errors.to_string();
        }
    }
});
