//! Directory watches (inotify) that let a memoized response be checked
//! without a single `stat`: the `watch` freshness mode.
//!
//! A memo entry depends on a set of names: every path component from the
//! document root down to each file it was computed from. The watcher keeps
//! one inotify watch per directory on those paths and one generation
//! counter per watched name; an event on a name bumps its counter, an event
//! on a directory itself (deleted, moved, unwatched) bumps all of its names,
//! and a queue overflow bumps a global epoch. An entry is fresh while every
//! counter it recorded is unchanged.
//!
//! Exactness: the kernel queues an inotify event inside the system call
//! that changes the file, before that call returns. [`Watcher::sync`]
//! drains the queue (one non-blocking `read`) under a lock before every
//! check, so a change that completed before a request arrived is always
//! seen by it — the same guarantee a `stat` per file gives. Registration
//! records the counters *before* the caller verifies its stamps once by
//! `stat`, so a change between reading a file and watching it is caught
//! too. Not seen: writes through a hard link in an unwatched directory,
//! writes through `mmap`, changes made by another machine on a network
//! filesystem; `freshness = check` is for such roots.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};

/// A counter of changes to one name (or, for the epoch, to everything).
type Counter = Arc<AtomicU64>;

/// What an entry recorded: counters and the values they had.
#[derive(Debug, Clone)]
pub struct Token {
    epoch: u64,
    names: Vec<(Counter, u64)>,
}

impl Token {
    /// Approximate bytes held.
    pub fn weight(&self) -> usize {
        32 + self.names.len() * 24
    }
}

struct Dir {
    names: HashMap<OsString, Counter>,
}

impl Dir {
    /// Marks every name as changed: tokens over any of them are stale.
    fn bump_all(&self) {
        for counter in self.names.values() {
            counter.fetch_add(1, Ordering::AcqRel);
        }
    }
}

struct Inner {
    inotify: Inotify,
    dirs: HashMap<std::path::PathBuf, Dir>,
    by_wd: HashMap<WatchDescriptor, std::path::PathBuf>,
    buffer: Vec<u8>,
    /// Names in `dirs`, at most (directories dropped with their names are
    /// counted again at the next pruning).
    names: usize,
    /// When `names` passes this, names no token holds are dropped.
    prune_at: usize,
}

/// The fewest names kept before the first pruning.
pub(super) const PRUNE_FLOOR: usize = 4096;

/// Told the path of every changed name, while the change is applied (so
/// memos keyed by path can forget it before any request looks).
pub type OnChange = Box<dyn Fn(&Path) + Send + Sync>;

/// The watcher (one per pipeline).
pub struct Watcher {
    inner: Mutex<Inner>,
    on_change: Option<OnChange>,
    epoch: AtomicU64,
    /// When the last drain that ended with the queue empty began, in
    /// nanoseconds after `born`, plus one (0: none yet).
    clean_from: AtomicU64,
    born: Instant,
    /// Watched directories at most (inotify watches are a per-user kernel
    /// resource); beyond it, registration fails and callers use stats.
    max_dirs: usize,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("epoch", &self.epoch.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

const MASK: WatchMask = WatchMask::MODIFY
    .union(WatchMask::ATTRIB)
    .union(WatchMask::CLOSE_WRITE)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::CREATE)
    .union(WatchMask::DELETE)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF)
    .union(WatchMask::ONLYDIR);

/// Events after which a name is bound to another file or directory.
const RELINKED: EventMask = EventMask::CREATE
    .union(EventMask::DELETE)
    .union(EventMask::MOVED_FROM)
    .union(EventMask::MOVED_TO);

impl Watcher {
    /// A watcher, or the reason the system has none (then callers check
    /// by `stat`).
    pub fn new(max_dirs: usize, on_change: Option<OnChange>) -> io::Result<Watcher> {
        Ok(Watcher {
            on_change,
            inner: Mutex::new(Inner {
                inotify: Inotify::init()?,
                dirs: HashMap::new(),
                by_wd: HashMap::new(),
                buffer: vec![0; 64 * 1024],
                names: 0,
                prune_at: PRUNE_FLOOR,
            }),
            epoch: AtomicU64::new(0),
            clean_from: AtomicU64::new(0),
            born: Instant::now(),
            max_dirs,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves counters at worst bumped
        // too often, never too rarely: the state stays usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies every queued event. Returns after the queue was seen empty.
    /// (The hot memo's check: outside any piece of request work, and kept
    /// to the one read it costs.)
    pub fn sync(&self) {
        let mut inner = self.lock();
        self.drain(&mut inner);
    }

    /// [`Watcher::sync`] for a check made as part of a request: inside a
    /// [`SyncedSince`] piece it returns at once when a drain that began at
    /// or after the piece began found the queue empty (so one piece drains
    /// once, not once per file it checks: that was 8 `read` calls, each
    /// finding the queue empty, per uncached request of the article).
    pub fn sync_for_request(&self) {
        let Some(since) = since() else {
            return self.sync();
        };
        if self.clean_from.load(Ordering::Acquire) > self.nanos(since) {
            return;
        }
        let began = Instant::now();
        let mut inner = self.lock();
        if self.drain(&mut inner) {
            self.clean_from
                .fetch_max(self.nanos(began) + 1, Ordering::AcqRel);
        }
    }

    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.born).as_nanos()).unwrap_or(u64::MAX - 1)
    }

    /// Applies queued events until the queue is empty (true) or cannot be
    /// read (false: everything counts as changed).
    fn drain(&self, inner: &mut Inner) -> bool {
        let Inner {
            inotify,
            dirs,
            by_wd,
            buffer,
            ..
        } = inner;
        let mut stale = Vec::new();
        loop {
            let events = match inotify.read_events(buffer) {
                Ok(events) => events,
                Err(e) if queue_empty(&e) => return true,
                Err(e) => {
                    // Cannot tell what changed: everything is stale.
                    tracing::warn!(error = %e, "reading file-change events failed");
                    self.epoch.fetch_add(1, Ordering::AcqRel);
                    return false;
                }
            };
            for event in events {
                if event.mask.contains(EventMask::Q_OVERFLOW) {
                    self.epoch.fetch_add(1, Ordering::AcqRel);
                    continue;
                }
                let Some(path) = by_wd.get(&event.wd) else {
                    continue;
                };
                let Some(dir) = dirs.get(path) else {
                    continue;
                };
                let whole_dir = event
                    .mask
                    .intersects(EventMask::IGNORED | EventMask::DELETE_SELF | EventMask::MOVE_SELF);
                match event.name {
                    Some(name) if !whole_dir => {
                        if let Some(counter) = dir.names.get(name) {
                            counter.fetch_add(1, Ordering::AcqRel);
                            if let Some(tell) = &self.on_change {
                                tell(&path.join(name));
                            }
                        }
                        if event.mask.intersects(RELINKED) {
                            // The name now means another file or directory:
                            // watches of directories below the old one are
                            // of the wrong directories from now on.
                            stale.push(path.join(name));
                        }
                    }
                    _ => dir.bump_all(),
                }
                if event.mask.contains(EventMask::IGNORED) {
                    // The watch is gone (directory deleted or unmounted):
                    // forget it, so the next registration watches afresh.
                    if let Some(path) = by_wd.remove(&event.wd) {
                        dirs.remove(&path);
                    }
                }
            }
            for gone in stale.drain(..) {
                Self::unwatch_below(inotify, dirs, by_wd, &gone);
            }
        }
    }

    /// Drops the watches of `top` and every directory below it (their
    /// names' counters are bumped: tokens over them are stale), so the next
    /// registration of a path through `top` watches the directories that
    /// are there now.
    fn unwatch_below(
        inotify: &mut Inotify,
        dirs: &mut HashMap<std::path::PathBuf, Dir>,
        by_wd: &mut HashMap<WatchDescriptor, std::path::PathBuf>,
        top: &Path,
    ) {
        // One watch per entry of each map: the descriptors tell which.
        let mut below = Vec::new();
        by_wd.retain(|wd, path| {
            if !path.starts_with(top) {
                return true;
            }
            // Fails when the directory is gone already; either way no
            // more events come from it.
            let _ = inotify.watches().remove(wd.clone());
            below.push(std::mem::take(path));
            false
        });
        for d in below {
            if let Some(dir) = dirs.remove(&d) {
                dir.bump_all();
            }
        }
    }

    /// Watches every name on the way from `root` to each of `files` and
    /// returns the token to check later, or `None` when a file is not
    /// under `root` or a directory cannot be watched (callers then check
    /// by `stat`). The caller must verify its stamps *after* this returns.
    pub fn register<'a>(
        &self,
        root: &Path,
        files: impl IntoIterator<Item = &'a Path>,
    ) -> Option<Token> {
        let mut inner = self.lock();
        // Apply what is already queued, so the counters recorded below are
        // current.
        self.drain(&mut inner);
        let epoch = self.epoch.load(Ordering::Acquire);
        let mut names: Vec<(Counter, u64)> = Vec::new();
        for file in files {
            let rest = file.strip_prefix(root).ok()?;
            let mut dir = root.to_path_buf();
            for component in rest.components() {
                let Component::Normal(name) = component else {
                    return None;
                };
                let counter = self.name_counter(&mut inner, &dir, name)?;
                if !names.iter().any(|(c, _)| Arc::ptr_eq(c, &counter)) {
                    let seen = counter.load(Ordering::Acquire);
                    names.push((counter, seen));
                }
                dir.push(name);
            }
        }
        Some(Token { epoch, names })
    }

    fn name_counter(&self, inner: &mut Inner, dir: &Path, name: &OsStr) -> Option<Counter> {
        if !inner.dirs.contains_key(dir) {
            if inner.dirs.len() >= self.max_dirs {
                return None;
            }
            let wd = match inner.inotify.watches().add(dir, MASK) {
                Ok(wd) => wd,
                Err(e) => {
                    tracing::debug!(dir = %dir.display(), error = %e, "cannot watch a directory");
                    return None;
                }
            };
            // The same directory reached under another spelling (a
            // symlink) gives the same descriptor: one entry per descriptor.
            if let Some(old) = inner.by_wd.insert(wd.clone(), dir.to_path_buf()) {
                // Tokens over the old spelling's names would never see
                // another event: they are stale from now on.
                if let Some(gone) = inner.dirs.remove(&old) {
                    gone.bump_all();
                }
            }
            inner.dirs.insert(
                dir.to_path_buf(),
                Dir {
                    names: HashMap::new(),
                },
            );
        }
        let entry = inner.dirs.get_mut(dir)?;
        if let Some(counter) = entry.names.get(name) {
            return Some(Arc::clone(counter));
        }
        let counter = Counter::default();
        entry
            .names
            .insert(name.to_os_string(), Arc::clone(&counter));
        inner.names += 1;
        if inner.names > inner.prune_at {
            Self::prune(inner);
        }
        Some(counter)
    }

    /// Drops the names no token holds (their counter's only owner is the
    /// map), so the map follows the memos that hold tokens instead of
    /// growing with every file ever watched. Nothing can be stale over a
    /// dropped name: a later registration starts a fresh counter, and
    /// events for it no longer reach the change hook, which matters only
    /// for memo entries that hold no token (checked by `stat`, like a file
    /// seen once). The next pruning waits until the map has doubled:
    /// amortized O(1) per registration.
    fn prune(inner: &mut Inner) {
        let mut kept = 0;
        for dir in inner.dirs.values_mut() {
            dir.names
                .retain(|_, counter| Arc::strong_count(counter) > 1);
            dir.names.shrink_to_fit();
            kept += dir.names.len();
        }
        inner.names = kept;
        inner.prune_at = (2 * kept).max(PRUNE_FLOOR);
    }

    /// Whether nothing `token` recorded has changed; call [`Watcher::sync`]
    /// first.
    pub fn unchanged(&self, token: &Token) -> bool {
        token.epoch == self.epoch.load(Ordering::Acquire)
            && token
                .names
                .iter()
                .all(|(counter, seen)| counter.load(Ordering::Acquire) == *seen)
    }
}

thread_local! {
    /// The instant of this thread's innermost [`SyncedSince`] scope.
    static SINCE: Cell<Option<Instant>> = const { Cell::new(None) };
}

tokio::task_local! {
    /// The instant a request's handler task began ([`SyncedSince::task`]).
    static TASK_SINCE: Instant;
}

/// The instant of the request work running here, if any: this thread's
/// scope, else the running task's.
fn since() -> Option<Instant> {
    SINCE.get().or_else(|| TASK_SINCE.try_with(|t| *t).ok())
}

/// A piece of one request's work, begun at an instant: inside it,
/// [`Watcher::sync_for_request`] is satisfied by any drain that began at or after that
/// instant and found the queue empty. A change finished before the piece
/// began was queued before such a drain began, so it is applied, as with a
/// drain per check; a change made while the piece runs may or may not be
/// seen, which was already so between two checks. Two forms: a thread's
/// (the render job on a transform thread; it must not span an `.await`,
/// where the thread runs other tasks) and a task's (the request handler,
/// whose value follows it across `.await`s and into no other task).
#[must_use = "the scope ends when dropped"]
pub struct SyncedSince {
    outer: Option<Instant>,
}

impl SyncedSince {
    /// Begins a piece of request work on this thread now.
    pub fn now() -> SyncedSince {
        SyncedSince {
            outer: SINCE.replace(Some(Instant::now())),
        }
    }

    /// Runs `work` (a request's handler) as one piece begun now. Not an
    /// `async fn`: that would hold `work` in a state of its own and move
    /// it again on the first poll (a request handler's future is large,
    /// and each move is a copy of all of it).
    pub fn task<F: std::future::Future>(
        work: F,
    ) -> tokio::task::futures::TaskLocalFuture<Instant, F> {
        TASK_SINCE.scope(Instant::now(), work)
    }
}

impl Drop for SyncedSince {
    fn drop(&mut self) {
        SINCE.set(self.outer);
    }
}

/// Whether a failed read of the event queue only means it is empty (the
/// descriptor is non-blocking); any other error leaves the changes
/// unknown, so everything counts as changed.
fn queue_empty(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_empty_queue_is_not_an_error() {
        assert!(queue_empty(&io::Error::from(io::ErrorKind::WouldBlock)));
        for kind in [
            io::ErrorKind::Other,
            io::ErrorKind::Interrupted,
            io::ErrorKind::InvalidInput,
        ] {
            assert!(!queue_empty(&io::Error::from(kind)), "{kind:?}");
        }
    }

    fn fresh(w: &Watcher, t: &Token) -> bool {
        w.sync_for_request();
        w.unchanged(t)
    }

    #[test]
    fn one_drain_serves_a_piece_of_request_work_and_sees_what_came_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let x = root.join("x.xml");
        std::fs::write(&x, "1").unwrap();
        let w = Watcher::new(100, None).unwrap();
        let t = w.register(&root, [x.as_path()]).unwrap();
        assert!(fresh(&w, &t));
        // A change finished before the piece began is seen by its first
        // check, even though a drain ran (and found the queue empty) before.
        std::fs::write(&x, "2").unwrap();
        let t = {
            let _piece = SyncedSince::now();
            assert!(!fresh(&w, &t));
            let t = w.register(&root, [x.as_path()]).unwrap();
            assert!(fresh(&w, &t));
            // Inside the piece that drain serves every later check: a
            // change made now is not looked for (no read of the queue)...
            std::fs::write(&x, "3").unwrap();
            assert!(fresh(&w, &t), "the piece's checks drain once");
            t
        };
        // ...and the next piece (or any check outside one) sees it.
        {
            let _piece = SyncedSince::now();
            assert!(!fresh(&w, &t));
        }
        // Nested pieces: the inner one's later instant counts, then the
        // outer one's again.
        let t = w.register(&root, [x.as_path()]).unwrap();
        let _outer = SyncedSince::now();
        assert!(fresh(&w, &t));
        std::fs::write(&x, "4").unwrap();
        {
            let _inner = SyncedSince::now();
            assert!(!fresh(&w, &t));
        }
        let t = w.register(&root, [x.as_path()]).unwrap();
        std::fs::write(&x, "5").unwrap();
        assert!(
            fresh(&w, &t),
            "the outer piece was served by the inner drain"
        );
    }

    #[tokio::test]
    async fn a_task_s_piece_follows_it_and_no_other_task() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let x = root.join("x.xml");
        std::fs::write(&x, "1").unwrap();
        let w = Arc::new(Watcher::new(100, None).unwrap());
        let t = w.register(&root, [x.as_path()]).unwrap();
        let (w2, t2, x2) = (Arc::clone(&w), t.clone(), x.clone());
        SyncedSince::task(async move {
            assert!(fresh(&w2, &t2));
            tokio::task::yield_now().await;
            std::fs::write(&x2, "2").unwrap();
            assert!(fresh(&w2, &t2), "still the same piece after an await");
        })
        .await;
        // Outside the task's piece: drained again.
        assert!(!fresh(&w, &t));
    }

    #[test]
    fn a_directory_replaced_on_the_way_is_watched_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/x.xml"), "1").unwrap();
        let x = root.join("a/b/x.xml");
        let w = Watcher::new(100, None).unwrap();
        let t = w.register(&root, [x.as_path()]).unwrap();
        assert!(fresh(&w, &t));
        // `a` (and with it `a/b`) moved away, a new `a/b` put in its place.
        std::fs::rename(root.join("a"), root.join("old")).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/x.xml"), "2").unwrap();
        assert!(!fresh(&w, &t));
        let t = w.register(&root, [x.as_path()]).unwrap();
        assert!(fresh(&w, &t));
        // Changes in the new directories are seen, not the old ones'.
        std::fs::write(root.join("old/b/x.xml"), "3").unwrap();
        assert!(fresh(&w, &t));
        std::fs::write(&x, "4").unwrap();
        assert!(!fresh(&w, &t));
        let t = w.register(&root, [x.as_path()]).unwrap();
        std::fs::remove_file(&x).unwrap();
        assert!(!fresh(&w, &t));
    }

    #[test]
    fn a_directory_watched_under_a_second_spelling_leaves_no_deaf_token() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::fs::write(root.join("real/x.xml"), "1").unwrap();
        std::os::unix::fs::symlink("real", root.join("link")).unwrap();
        let w = Watcher::new(100, None).unwrap();
        let t = w
            .register(&root, [root.join("real/x.xml").as_path()])
            .unwrap();
        // The same directory through the symlink: one watch, one entry.
        let u = w
            .register(&root, [root.join("link/x.xml").as_path()])
            .unwrap();
        assert!(fresh(&w, &u));
        std::fs::write(root.join("real/x.xml"), "2").unwrap();
        assert!(!fresh(&w, &t), "the first token is not left deaf");
        assert!(!fresh(&w, &u));
    }

    #[test]
    fn writes_renames_and_deletes_are_seen_before_the_next_check() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let a = root.join("sub/a.xml");
        let b = root.join("sub/b.xml");
        std::fs::write(&a, "1").unwrap();
        std::fs::write(&b, "1").unwrap();
        let w = Watcher::new(100, None).unwrap();

        let t = w.register(&root, [a.as_path()]).unwrap();
        assert!(fresh(&w, &t));
        // A sibling changing is not a change of `a`.
        std::fs::write(&b, "2").unwrap();
        assert!(fresh(&w, &t));
        // Written in place: seen at once, no waiting.
        std::fs::write(&a, "2").unwrap();
        assert!(!fresh(&w, &t));

        let t = w.register(&root, [a.as_path()]).unwrap();
        assert!(fresh(&w, &t));
        let tmp = root.join("sub/.a.tmp");
        std::fs::write(&tmp, "3").unwrap();
        assert!(fresh(&w, &t));
        std::fs::rename(&tmp, &a).unwrap();
        assert!(!fresh(&w, &t));

        // A directory on the way renamed away and back.
        let t = w.register(&root, [a.as_path()]).unwrap();
        std::fs::rename(root.join("sub"), root.join("sub2")).unwrap();
        std::fs::rename(root.join("sub2"), root.join("sub")).unwrap();
        assert!(!fresh(&w, &t));

        let t = w.register(&root, [a.as_path()]).unwrap();
        std::fs::remove_file(&a).unwrap();
        assert!(!fresh(&w, &t));

        // Deleting the whole directory, then re-creating it: new watches.
        std::fs::remove_file(&b).unwrap();
        std::fs::remove_dir(root.join("sub")).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(&a, "4").unwrap();
        let t = w.register(&root, [a.as_path()]).unwrap();
        assert!(fresh(&w, &t));
        std::fs::write(&a, "5").unwrap();
        assert!(!fresh(&w, &t));
    }

    #[test]
    fn changed_paths_are_reported_while_draining() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let a = root.join("a.xml");
        std::fs::write(&a, "1").unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let w = Watcher::new(
            10,
            Some(Box::new(move |p: &Path| {
                log.lock().unwrap().push(p.to_path_buf())
            })),
        )
        .unwrap();
        let _t = w.register(&root, [a.as_path()]).unwrap();
        std::fs::write(root.join("unrelated"), "x").unwrap();
        std::fs::write(&a, "2").unwrap();
        w.sync();
        let seen = seen.lock().unwrap();
        assert!(!seen.is_empty() && seen.iter().all(|p| *p == a), "{seen:?}");
    }

    #[test]
    fn attribute_changes_count_and_paths_outside_the_root_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let a = root.join("a.xml");
        std::fs::write(&a, "1").unwrap();
        let w = Watcher::new(100, None).unwrap();
        let t = w.register(&root, [a.as_path()]).unwrap();
        let f = std::fs::File::options().write(true).open(&a).unwrap();
        f.set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
        assert!(!fresh(&w, &t));
        assert!(w.register(&root, [Path::new("/etc/hostname")]).is_none());
        assert!(w.register(&root, [root.join("../x").as_path()]).is_none());
    }

    #[test]
    fn the_directory_limit_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/c.xml"), "1").unwrap();
        let w = Watcher::new(2, None).unwrap();
        assert!(
            w.register(&root, [root.join("a/b/c.xml").as_path()])
                .is_none()
        );
        assert!(w.register(&root, [root.join("a/x").as_path()]).is_some());
    }

    /// Names in the map.
    fn names(w: &Watcher) -> usize {
        w.lock().dirs.values().map(|d| d.names.len()).sum()
    }

    #[test]
    fn names_no_token_holds_are_dropped_and_held_ones_still_see_changes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let kept = root.join("kept.xml");
        std::fs::write(&kept, "1").unwrap();
        let w = Watcher::new(10, None).unwrap();
        let token = w.register(&root, [kept.as_path()]).unwrap();
        // Files visited once and forgotten by every memo (names need not
        // exist to be watched).
        let visited = 3 * PRUNE_FLOOR;
        for i in 0..visited {
            let gone = w.register(&root, [root.join(format!("n{i}.xml")).as_path()]);
            assert!(gone.is_some());
        }
        let held = names(&w);
        assert!(
            held <= 2 * PRUNE_FLOOR,
            "{held} names kept after {visited} dropped registrations"
        );
        assert!(fresh(&w, &token), "pruning bumps nothing");
        std::fs::write(&kept, "2").unwrap();
        assert!(!fresh(&w, &token), "a held name still sees its changes");
        // A dropped name registered again gets a counter that works.
        let again_path = root.join("n0.xml");
        let again = w.register(&root, [again_path.as_path()]).unwrap();
        assert!(fresh(&w, &again));
        std::fs::write(&again_path, "x").unwrap();
        assert!(!fresh(&w, &again));
    }
}
