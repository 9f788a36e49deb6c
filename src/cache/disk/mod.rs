//! The disk tier of the output cache: final outputs kept in files under a
//! directory, so a restart (a deploy, a crash) does not start from an empty
//! cache, and a cache larger than memory can still answer without
//! recomputing.
//!
//! Layout: `DIR/v2/<first 2 hex of key>/<64 hex key>`, one self-checking
//! file per entry (see `format`); temp files in `DIR/v2/tmp/`. (What
//! version 1 left in `DIR/v1` is deleted by the scan at open.) A file is
//! written in full under a temp name, its data `fsync`ed, then renamed into
//! place, so a reader never sees a partial file under a final name. Every
//! read checks everything (magic, version, key, the header's checksum,
//! lengths, the body against its hash: one pass over the body); a file that fails any check is deleted and counted
//! as rejected, and the read is a miss: a damaged disk costs a
//! recomputation, never a wrong page.
//!
//! Nothing here fails the server or blocks a request for long: reads of
//! files the index knows to be small (`INLINE_READ`) are done on the
//! calling thread (a page-cached read of a few KiB costs less than the
//! hand-off to tokio's blocking pool and back), others run on the
//! blocking pool; writes go to one background writer thread through a
//! bounded queue, and a directory that cannot be written (read-only, full,
//! missing permissions) degrades the tier to reads only, with one log line
//! per change of state.

pub(super) mod format;
mod index;

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;

use super::{BoxFuture, Cache, Entry, Key, TierStats};
use format::{FormatError, OLD_VERSION_DIRS, VERSION_DIR};
use index::{Index, Slot};

/// Writes waiting for the writer thread at most; more are dropped.
const QUEUE: usize = 1024;

/// How long after a failed write the tier tries writing again.
const RETRY: Duration = Duration::from_secs(30);

/// Where the logical clock of reads and writes starts: ticks below it are
/// given to the files found at open, in the order of their modification
/// times, so after a restart the oldest-written files are evicted first.
const FIRST_TICK: u64 = 1 << 32;

/// Files up to this size (as the index records it) are read on the
/// calling thread; larger ones, and files the index does not know yet, on
/// tokio's blocking pool.
const INLINE_READ: u64 = 64 * 1024;

/// The first bytes of a file read to find its header (more are read when
/// the header is longer: many dependencies).
const HEADER_READ: usize = 4096;

/// The output cache's disk tier (`name() == "disk"`). See the module
/// documentation for the layout and the guarantees.
///
/// [`Cache::put`] never blocks: it hands the entry to one background
/// writer thread through a queue of 1024 writes; when the queue is full
/// the write is dropped and counted ([`DiskTier::dropped`]), as is a write
/// offered while the tier is not writable. The writer thread first scans
/// the directory to build the index, so writes made while a large
/// directory is being scanned queue behind the scan (and past 1024, are
/// dropped). [`DiskTier::flush`] waits for the writes queued so far.
pub struct DiskTier {
    shared: Arc<Shared>,
    /// The writer's queue; None when its thread could not be started (the
    /// tier then only reads).
    jobs: Option<SyncSender<Job>>,
}

/// What the tier's handle, its reads and its writer share.
struct Shared {
    /// The directory given to `open`.
    dir: PathBuf,
    /// `dir/v2`.
    root: PathBuf,
    capacity: u64,
    index: Mutex<Index>,
    clock: AtomicU64,
    evictions: AtomicU64,
    rejected: AtomicU64,
    write_errors: AtomicU64,
    dropped: AtomicU64,
    writable: AtomicBool,
}

/// What [`Shared::read`] found.
enum Outcome {
    /// The entry, or None (no file, or one that failed a check and was
    /// dropped).
    Done(Option<Arc<Entry>>),
    /// The file is larger than the caller reads on its own thread.
    Larger,
}

/// Work for the writer thread, done in order.
enum Job {
    /// Store an entry.
    Put(Key, Arc<Entry>),
    /// Forget entries (after the writes queued before it), then reply
    /// how many.
    Purge(Option<String>, SyncSender<u64>),
    /// Reply once every job queued before it is done.
    Flush(SyncSender<()>),
}

impl DiskTier {
    /// Opens (creating it if need be) the disk tier in `dir`, holding at
    /// most `capacity_bytes` bytes of files (0: unbounded). Never fails:
    /// a directory that cannot be created or written gives a degraded
    /// tier (reads of what is there still tried, writes dropped, retried
    /// every 30 s), said once in the log. The index of the files already
    /// there is built by the writer thread, so a large directory does not
    /// hold up the start; until then reads look for each file by its name.
    pub fn open(dir: &Path, capacity_bytes: u64) -> DiskTier {
        DiskTier::open_with(dir, capacity_bytes, QUEUE, RETRY)
    }

    fn open_with(dir: &Path, capacity: u64, queue: usize, retry: Duration) -> DiskTier {
        let root = dir.join(VERSION_DIR);
        let probe = prepare(&root.join("tmp"));
        if let Err(e) = &probe {
            tracing::warn!(
                dir = %dir.display(),
                error = %e,
                "disk cache is not writable: serving the entries already there, storing none \
                 (trying again every {} s)",
                retry.as_secs()
            );
        }
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            root,
            capacity,
            index: Mutex::new(Index::default()),
            clock: AtomicU64::new(FIRST_TICK),
            evictions: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            write_errors: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            writable: AtomicBool::new(probe.is_ok()),
        });
        let (tx, rx) = sync_channel(queue);
        let writer = Writer {
            shared: Arc::clone(&shared),
            retry,
            retry_at: probe.is_err().then(|| Instant::now() + retry),
            seq: 0,
        };
        let jobs = match std::thread::Builder::new()
            .name("axle-disk-cache".into())
            .spawn(move || writer.run(rx))
        {
            Ok(_) => Some(tx),
            Err(e) => {
                tracing::warn!(error = %e, "disk cache: cannot start its writer thread; reads only");
                shared.writable.store(false, Ordering::Relaxed);
                None
            }
        };
        DiskTier { shared, jobs }
    }

    /// The directory the tier was opened in.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// Waits (blocking the calling thread) until every write, purge and
    /// the scan at open queued before this call are done. For tests and
    /// shutdown.
    pub fn flush(&self) {
        if let Some(jobs) = &self.jobs {
            let (tx, rx) = sync_channel(1);
            if jobs.send(Job::Flush(tx)).is_ok() {
                let _ = rx.recv();
            }
        }
    }

    /// Writes dropped without being tried: the queue was full, or the tier
    /// was not writable (and not yet due to try again).
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for DiskTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskTier")
            .field("dir", &self.shared.dir)
            .field("stats", &self.stats())
            .finish()
    }
}

/// Creates the temp directory, empties it (what a crash left half
/// written), and checks that a file can be written there.
fn prepare(tmp: &Path) -> io::Result<()> {
    fs::create_dir_all(tmp)?;
    for item in fs::read_dir(tmp)?.flatten() {
        let _ = fs::remove_file(item.path());
    }
    let probe = tmp.join("probe");
    let written = File::create(&probe).and_then(|mut f| f.write_all(b"probe"));
    let _ = fs::remove_file(&probe);
    written
}

/// Runs `f` on tokio's blocking pool when there is a runtime (the async
/// threads never wait for the disk), inline when there is none.
async fn off_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => runtime.spawn_blocking(f).await.ok(),
        Err(_) => Some(f()),
    }
}

impl Cache for DiskTier {
    fn name(&self) -> &'static str {
        "disk"
    }

    /// Every read decodes with `format::decode`, which checks the body
    /// against its hash.
    fn checks_bodies(&self) -> bool {
        true
    }

    fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Option<Arc<Entry>>> {
        Box::pin(async move {
            // Once the index is complete, a key it lacks has no file: a
            // miss costs no trip to the blocking pool. A small file is
            // read here: the trip would cost more than the read.
            let size = {
                let index = self.shared.lock();
                let size = index.size(key);
                if index.scanned && size.is_none() {
                    return None;
                }
                size
            };
            if size.is_some_and(|n| n <= INLINE_READ) {
                match self.shared.read(key, INLINE_READ) {
                    Outcome::Done(entry) => return entry,
                    // Replaced by a larger file since it was indexed.
                    Outcome::Larger => {}
                }
            }
            let shared = Arc::clone(&self.shared);
            let key = *key;
            match off_thread(move || shared.read(&key, u64::MAX)).await {
                Some(Outcome::Done(entry)) => entry,
                Some(Outcome::Larger) | None => None,
            }
        })
    }

    fn put(&self, key: Key, entry: Arc<Entry>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if entry.elided {
                return;
            }
            let sent = match &self.jobs {
                Some(jobs) => match jobs.try_send(Job::Put(key, entry)) {
                    Ok(()) => true,
                    Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
                },
                None => false,
            };
            if !sent {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            }
        })
    }

    fn remove<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let shared = Arc::clone(&self.shared);
            let key = *key;
            off_thread(move || shared.remove(&key)).await;
        })
    }

    /// Runs on the writer thread, after the writes queued before it (so
    /// none of them lands after the purge) and after the scan at open (so
    /// a prefix finds every file's URL).
    fn purge<'a>(&'a self, prefix: Option<&'a str>) -> BoxFuture<'a, u64> {
        Box::pin(async move {
            let shared = Arc::clone(&self.shared);
            let jobs = self.jobs.clone();
            let prefix = prefix.map(str::to_owned);
            off_thread(move || {
                if let Some(jobs) = jobs {
                    let (tx, rx) = sync_channel(1);
                    match jobs.send(Job::Purge(prefix, tx)) {
                        Ok(()) => return rx.recv().unwrap_or(0),
                        Err(e) => {
                            let Job::Purge(prefix, _) = e.0 else {
                                return 0;
                            };
                            return shared.purge(prefix.as_deref());
                        }
                    }
                }
                shared.purge(prefix.as_deref())
            })
            .await
            .unwrap_or(0)
        })
    }

    fn stats(&self) -> TierStats {
        let (entries, bytes) = {
            let index = self.shared.lock();
            (index.len() as u64, index.bytes())
        };
        let s = &self.shared;
        TierStats {
            entries,
            bytes,
            errors: 0,
            unavailable: 0,
            available: true,
            capacity: s.capacity,
            evictions: s.evictions.load(Ordering::Relaxed),
            rejected: s.rejected.load(Ordering::Relaxed),
            write_errors: s.write_errors.load(Ordering::Relaxed),
            dropped: self.dropped(),
            writable: s.writable.load(Ordering::Relaxed),
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Index> {
        // The index holds no invariant a panic could break halfway that
        // matters more than serving: a poisoned lock is used as it is.
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn path(&self, key: &Key) -> PathBuf {
        let hex = key.hex();
        self.root.join(&hex[..2]).join(hex)
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    /// Reads and checks `key`'s file (blocking), unless it is larger than
    /// `most` bytes.
    fn read(&self, key: &Key, most: u64) -> Outcome {
        let path = self.path(key);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Checked again under the lock, which the writer holds
                // across a rename and its record: a file that appeared
                // since keeps its record.
                let mut index = self.lock();
                if !path.exists() {
                    index.remove(key);
                }
                return Outcome::Done(None);
            }
            Err(e) => {
                self.reject(key, &path, &e);
                return Outcome::Done(None);
            }
        };
        let bytes = match self.read_whole(file, most) {
            Ok(Some(b)) => b,
            Ok(None) => return Outcome::Larger,
            Err(e) => {
                self.reject(key, &path, &e);
                return Outcome::Done(None);
            }
        };
        let size = bytes.len() as u64;
        match format::decode(key, Bytes::from(bytes)) {
            Ok(entry) => {
                let tick = self.tick();
                let mut index = self.lock();
                if !index.touch(key, tick) && !index.scanned {
                    // Found before the scan got to it.
                    index.insert(
                        *key,
                        Slot {
                            size,
                            tick,
                            url: entry.url.clone(),
                        },
                    );
                }
                Outcome::Done(Some(Arc::new(entry)))
            }
            Err(e) => {
                self.reject(key, &path, &e);
                Outcome::Done(None)
            }
        }
    }

    /// A file's bytes, refusing one larger than the capacity (it could
    /// not have been stored, and a hostile one must not be read into
    /// memory); None when it is larger than `most` bytes.
    fn read_whole(&self, file: File, most: u64) -> io::Result<Option<Vec<u8>>> {
        let len = file.metadata()?.len();
        if self.capacity > 0 && len > self.capacity {
            return Err(io::Error::other(format!("{len} bytes, over the capacity")));
        }
        if len > most {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(io::Error::other)?;
        let mut bytes = Vec::with_capacity(len);
        file.take(len as u64).read_to_end(&mut bytes)?;
        if bytes.len() != len {
            return Err(io::Error::other("file shrank while read"));
        }
        Ok(Some(bytes))
    }

    /// Drops an unusable file: deleted, forgotten, counted.
    fn reject(&self, key: &Key, path: &Path, why: &dyn std::fmt::Display) {
        tracing::debug!(file = %path.display(), error = %why, "disk cache: dropping an unusable file");
        let _ = fs::remove_file(path);
        self.lock().remove(key);
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// Deletes `key`'s file (under the index lock, so a write of the same
    /// key cannot slip between the deletion and the index).
    fn remove(&self, key: &Key) {
        let mut index = self.lock();
        let _ = fs::remove_file(self.path(key));
        index.remove(key);
    }

    /// Deletes the files of every entry whose URL starts with `prefix`, or
    /// every file when None; returns how many.
    fn purge(&self, prefix: Option<&str>) -> u64 {
        let keys = self.lock().take_matching(prefix);
        let mut n = 0;
        for key in &keys {
            if fs::remove_file(self.path(key)).is_ok() {
                n += 1;
            }
        }
        if prefix.is_none() {
            // Also what the index does not know (a scan that could not
            // finish, files it never saw).
            for (path, _) in self.files() {
                if fs::remove_file(path).is_ok() {
                    n += 1;
                }
            }
        }
        n
    }

    /// Every file under the key directories, with the name of the
    /// directory it is in (the `tmp` directory and anything not named by
    /// two hex digits are not ours to walk).
    fn files(&self) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        let Ok(dirs) = fs::read_dir(&self.root) else {
            return out;
        };
        for dir in dirs.flatten() {
            let Ok(name) = dir.file_name().into_string() else {
                continue;
            };
            if name.len() != 2 || !name.bytes().all(is_lower_hex) {
                continue;
            }
            let Ok(files) = fs::read_dir(dir.path()) else {
                continue;
            };
            for file in files.flatten() {
                if file.file_type().is_ok_and(|t| t.is_file()) {
                    out.push((file.path(), name.clone()));
                }
            }
        }
        out
    }
}

fn is_lower_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

/// The key a file name (64 lower-case hex digits) stands for.
pub(super) fn parse_key(name: &str) -> Option<Key> {
    let hex = name.as_bytes();
    if hex.len() != 64 || !hex.iter().copied().all(is_lower_hex) {
        return None;
    }
    let digit = |b: u8| {
        if b.is_ascii_digit() {
            b - b'0'
        } else {
            b - b'a' + 10
        }
    };
    let mut out = [0u8; 32];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0]) << 4 | digit(pair[1]);
    }
    Some(Key::from_bytes(out))
}

/// Deletes what an earlier format version left in `old` (`DIR/v1`): the
/// files named by keys in its two-hex-digit directories and in `tmp`, then
/// those directories and `old` itself if that left them empty (anything
/// else there is not ours, and stays). Returns how many files.
fn remove_old_version(old: &Path) -> u64 {
    let Ok(dirs) = fs::read_dir(old) else {
        return 0;
    };
    let mut n = 0;
    for dir in dirs.flatten() {
        let Ok(name) = dir.file_name().into_string() else {
            continue;
        };
        let ours = name == "tmp" || (name.len() == 2 && name.bytes().all(is_lower_hex));
        if !ours || !dir.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        for file in fs::read_dir(dir.path()).into_iter().flatten().flatten() {
            let key_named = file
                .file_name()
                .to_str()
                .is_some_and(|f| f.starts_with(&name) && parse_key(f).is_some());
            if (name == "tmp" || key_named)
                && file.file_type().is_ok_and(|t| t.is_file())
                && fs::remove_file(file.path()).is_ok()
            {
                n += 1;
            }
        }
        let _ = fs::remove_dir(dir.path());
    }
    let _ = fs::remove_dir(old);
    n
}

/// Why a file met by the scan is not indexed.
#[derive(Debug, thiserror::Error)]
enum ScanError {
    /// Its name is not a key, or not one of its directory.
    #[error("not named by a key of its directory")]
    Name,
    /// It cannot be read.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// Its header fails a check.
    #[error(transparent)]
    Format(#[from] FormatError),
}

/// A file found by the scan.
struct Found {
    modified: SystemTime,
    key: Key,
    size: u64,
    url: Option<Arc<str>>,
}

/// Reads and checks the header of the file at `path`, in key directory
/// `dir` (its checksum too; the body is left to reads).
fn scan_file(path: &Path, dir: &str) -> Result<Found, ScanError> {
    let key = path
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| n.starts_with(dir))
        .and_then(parse_key)
        .ok_or(ScanError::Name)?;
    let mut file = File::open(path)?;
    let meta = file.metadata()?;
    let size = meta.len();
    let mut prefix = Vec::new();
    let mut want = (HEADER_READ as u64).min(size);
    loop {
        let have = prefix.len() as u64;
        (&mut file).take(want - have).read_to_end(&mut prefix)?;
        match format::decode_header(&key, &prefix, size) {
            Err(FormatError::Truncated) if (prefix.len() as u64) == want && want < size => {
                want = want.saturating_mul(4).min(size);
            }
            Err(e) => return Err(e.into()),
            Ok(header) => {
                return Ok(Found {
                    modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                    key,
                    size,
                    url: header.url,
                });
            }
        }
    }
}

/// The writer thread's state.
struct Writer {
    shared: Arc<Shared>,
    retry: Duration,
    /// When not writable: when to try again.
    retry_at: Option<Instant>,
    /// Numbers temp files.
    seq: u64,
}

impl Writer {
    fn run(mut self, jobs: Receiver<Job>) {
        self.scan();
        for job in jobs {
            match job {
                Job::Put(key, entry) => self.put(&key, &entry),
                Job::Purge(prefix, reply) => {
                    let _ = reply.send(self.shared.purge(prefix.as_deref()));
                }
                Job::Flush(reply) => {
                    let _ = reply.send(());
                }
            }
        }
    }

    /// Builds the index from the files' headers, deleting those that fail
    /// (and the directories of earlier format versions).
    fn scan(&mut self) {
        let s = &self.shared;
        if let Some(dir) = s.root.parent() {
            for old in OLD_VERSION_DIRS {
                let n = remove_old_version(&dir.join(old));
                if n > 0 {
                    tracing::info!(dir = %dir.join(old).display(), files = n, "disk cache: deleted the files of an earlier format version");
                }
            }
        }
        let mut found = Vec::new();
        for (path, dir) in s.files() {
            match scan_file(&path, &dir) {
                Ok(f) => found.push(f),
                Err(e) => {
                    tracing::debug!(file = %path.display(), error = %e, "disk cache: dropping an unusable file");
                    let _ = fs::remove_file(&path);
                    s.rejected.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        found.sort_by_key(|f| f.modified);
        {
            let mut index = s.lock();
            for (tick, f) in (0u64..).zip(found) {
                let slot = Slot {
                    size: f.size,
                    tick,
                    url: f.url,
                };
                index.insert_if_absent(f.key, slot);
            }
            index.scanned = true;
        }
        // The capacity may be smaller than at the last run.
        self.evict();
    }

    fn put(&mut self, key: &Key, entry: &Entry) {
        let s = Arc::clone(&self.shared);
        let now = Instant::now();
        if self.retry_at.is_some_and(|at| now < at) {
            s.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let file = format::encode(key, entry);
        if s.capacity > 0 && file.len() as u64 > s.capacity {
            // It would be evicted at once.
            s.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        match self.write(key, entry, &file) {
            Ok(()) => {
                if self.retry_at.take().is_some() {
                    s.writable.store(true, Ordering::Relaxed);
                    tracing::info!(dir = %s.dir.display(), "disk cache is writable again");
                }
                self.evict();
            }
            Err(e) => {
                s.write_errors.fetch_add(1, Ordering::Relaxed);
                self.retry_at = Some(now + self.retry);
                if s.writable.swap(false, Ordering::Relaxed) {
                    tracing::warn!(
                        dir = %s.dir.display(),
                        error = %e,
                        "disk cache write failed: storing nothing for {} s, serving the entries \
                         already there",
                        self.retry.as_secs()
                    );
                }
            }
        }
    }

    /// Writes `file` under a temp name, `fsync`s its data, and renames it
    /// into place; on any error the temp file is deleted.
    ///
    /// The directory is not `fsync`ed after the rename: after a power loss
    /// the rename may be lost, which loses an entry that can be computed
    /// again; the file's own data is synced before the rename, so the name
    /// never points at a file whose data did not reach the disk.
    fn write(&mut self, key: &Key, entry: &Entry, file: &[u8]) -> io::Result<()> {
        let s = &self.shared;
        let tmp_dir = s.root.join("tmp");
        let tmp = tmp_dir.join(format!("{}.{}", key.hex(), self.seq));
        self.seq += 1;
        let result = (|| {
            let mut f = match File::create(&tmp) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    // Removed under us, or never made (degraded at open).
                    fs::create_dir_all(&tmp_dir)?;
                    File::create(&tmp)?
                }
                other => other?,
            };
            f.write_all(file)?;
            f.sync_data()?;
            drop(f);
            let path = s.path(key);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)?;
            }
            // Under the index lock: a `remove` of this key comes wholly
            // before or after the rename and its index record.
            let mut index = s.lock();
            fs::rename(&tmp, &path)?;
            index.insert(
                *key,
                Slot {
                    size: file.len() as u64,
                    tick: s.tick(),
                    url: entry.url.clone(),
                },
            );
            Ok(())
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    /// Past the capacity: evicts the least recently used entries down to
    /// 90% of it.
    fn evict(&self) {
        let s = &self.shared;
        if s.capacity == 0 {
            return;
        }
        let victims = {
            let mut index = s.lock();
            if index.bytes() <= s.capacity {
                return;
            }
            index.evict_to(s.capacity - s.capacity / 10)
        };
        for key in victims {
            let _ = fs::remove_file(s.path(&key));
            s.evictions.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests;
