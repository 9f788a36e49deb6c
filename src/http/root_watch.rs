//! `--freshness watch` follows a deploy's swap of a symlinked root with no
//! signal: the directory holding the configured root's last name is
//! watched (inotify, on a thread of its own), and when that name is bound
//! anew (`ln -sfn releases/N+1 current.tmp && mv -T current.tmp current`)
//! the root is resolved again and, if it leads elsewhere now, the server
//! reloads as on SIGHUP ([`App::reload`]): the new release's `axle.toml`,
//! private set and files, nothing remembered of the old one.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use inotify::{Inotify, WatchMask};

use super::App;

/// Starts the watch on `app`'s configured root; logs and gives up when the
/// system has no inotify or the directory cannot be watched (SIGHUP still
/// re-resolves the root).
pub(crate) fn spawn(app: Arc<App>) {
    let configured = app.pipeline.provider().configured_root().to_path_buf();
    let Some((dir, name)) = split(&configured) else {
        return;
    };
    let watch = Inotify::init().and_then(|inotify| {
        inotify.watches().add(
            &dir,
            WatchMask::CREATE
                | WatchMask::MOVED_TO
                | WatchMask::MOVED_FROM
                | WatchMask::DELETE
                | WatchMask::ONLYDIR,
        )?;
        Ok(inotify)
    });
    let mut inotify = match watch {
        Ok(inotify) => inotify,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot watch the root's directory for a swap; SIGHUP re-resolves it");
            return;
        }
    };
    // Weak: the watch does not keep a stopped server alive; it ends at the
    // first event after the server is gone.
    let app: Weak<App> = Arc::downgrade(&app);
    let spawned = std::thread::Builder::new()
        .name("axle-root-watch".into())
        .spawn(move || {
            let mut buffer = vec![0u8; 4096];
            loop {
                let events = match inotify.read_events_blocking(&mut buffer) {
                    Ok(events) => events,
                    Err(e) => {
                        tracing::warn!(error = %e, "the root's directory is no longer watched");
                        return;
                    }
                };
                let ours = events
                    .filter_map(|e| e.name.map(|n| n.to_os_string()))
                    .any(|n| n == name);
                if ours {
                    let Some(app) = app.upgrade() else {
                        return;
                    };
                    follow(&app);
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the root watch; SIGHUP re-resolves the root");
    }
}

/// Reloads when the configured root leads elsewhere than the root in force.
fn follow(app: &App) {
    let files = app.pipeline.provider();
    match crate::provider::resolve_root(files.configured_root()) {
        Ok(now) if now != files.root() => match app.reload() {
            Ok(()) => {}
            Err(e) => {
                tracing::error!(error = %e, "the root moved but was not reloaded; the previous one stays")
            }
        },
        Ok(_) => {}
        // Between the two steps of a swap, or removed: the old root stays
        // in force until the name leads somewhere again.
        Err(e) => tracing::warn!(error = %e, "the configured root resolves to nothing now"),
    }
}

/// The directory holding `configured`'s last name, and that name.
fn split(configured: &Path) -> Option<(PathBuf, std::ffi::OsString)> {
    let absolute = std::path::absolute(configured).ok()?;
    let name = absolute.file_name()?.to_os_string();
    let dir = absolute.parent()?.to_path_buf();
    Some((dir, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watched_name_is_the_roots_last_component() {
        let (dir, name) = split(Path::new("/srv/site/current/")).unwrap();
        assert_eq!(dir, Path::new("/srv/site"));
        assert_eq!(name, "current");
        let (dir, name) = split(Path::new("current")).unwrap();
        assert_eq!(dir, std::env::current_dir().unwrap());
        assert_eq!(name, "current");
        assert!(split(Path::new("/")).is_none());
    }
}
