use std::future::Future;
use std::pin::pin;
use std::process::Command;
use std::task::{Context, Poll, Waker};

use proptest::prelude::*;

use super::*;

/// Runs a tier future outside any runtime: every one completes on its
/// first poll there (reads and purges run inline).
fn now<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("a disk tier future waited outside a runtime"),
    }
}

fn key(n: u8) -> Key {
    Key::from_bytes([n; 32])
}

fn entry(body: &[u8], url: Option<&str>) -> Arc<Entry> {
    Arc::new(format::tests::entry_of(body, url))
}

use format::tests::same;

/// A tier with one entry under `key(1)`, flushed.
fn stored(dir: &Path) -> (DiskTier, PathBuf, Vec<u8>) {
    let tier = DiskTier::open(dir, 1 << 20);
    now(tier.put(key(1), entry(b"<p>body</p>", Some("/a.xml"))));
    tier.flush();
    let path = tier.shared.path(&key(1));
    let bytes = fs::read(&path).unwrap();
    (tier, path, bytes)
}

/// Replaces `key(1)`'s file with `bytes` and checks the tier refuses it:
/// a miss, the file deleted, one more rejection.
fn refused(dir: &Path, bytes: &[u8], what: &str) {
    let (tier, path, _) = stored(dir);
    fs::write(&path, bytes).unwrap();
    let before = tier.stats().rejected;
    assert!(now(tier.get(&key(1))).is_none(), "{what}: served");
    assert!(!path.exists(), "{what}: file kept");
    assert_eq!(tier.stats().rejected, before + 1, "{what}: not counted");
    assert_eq!(tier.stats().entries, 0, "{what}: still indexed");
}

#[test]
fn every_field_round_trips_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let tier = DiskTier::open(dir.path(), 1 << 20);
    assert_eq!(tier.name(), "disk");
    assert_eq!(tier.dir(), dir.path());
    let e = entry(b"<html>x</html>", Some("/docs/x.xml"));
    let bare = Arc::new(format::tests::bare());
    now(tier.put(key(1), Arc::clone(&e)));
    now(tier.put(key(2), Arc::clone(&bare)));
    tier.flush();
    assert!(same(&e, &now(tier.get(&key(1))).unwrap()));
    assert!(same(&bare, &now(tier.get(&key(2))).unwrap()));
    assert!(now(tier.get(&key(3))).is_none());
    let stats = tier.stats();
    assert_eq!((stats.entries, stats.writable), (2, true));
    let on_disk = fs::metadata(tier.shared.path(&key(1))).unwrap().len()
        + fs::metadata(tier.shared.path(&key(2))).unwrap().len();
    assert_eq!(stats.bytes, on_disk);
    let name = key(1).hex();
    assert!(dir.path().join("v2").join(&name[..2]).join(&name).is_file());
    drop(tier);

    // A restart: the scan finds both, and reads find them.
    let tier = DiskTier::open(dir.path(), 1 << 20);
    tier.flush();
    let stats = tier.stats();
    assert_eq!(
        (stats.entries, stats.bytes, stats.rejected),
        (2, on_disk, 0)
    );
    assert!(same(&e, &now(tier.get(&key(1))).unwrap()));
}

#[test]
fn reads_under_a_runtime_small_inline_large_on_the_blocking_pool() {
    let dir = tempfile::tempdir().unwrap();
    let tier = DiskTier::open(dir.path(), 1 << 20);
    let small = entry(b"body", Some("/a"));
    let large = entry(&vec![b'x'; INLINE_READ as usize + 1], Some("/b"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        tier.put(key(1), Arc::clone(&small)).await;
        tier.put(key(2), Arc::clone(&large)).await;
        tier.flush();
        // A small file is read on this thread: the future is ready at its
        // first poll, even under a runtime.
        let got = now(tier.get(&key(1))).unwrap();
        assert!(same(&small, &got));
        assert!(same(&large, &tier.get(&key(2)).await.unwrap()));
        // A small file replaced by a large one (behind the index's back)
        // is read on the pool, and served when it checks out.
        let big = format::encode(&key(1), &large);
        fs::write(tier.shared.path(&key(1)), big).unwrap();
        assert!(same(&large, &tier.get(&key(1)).await.unwrap()));
        tier.remove(&key(1)).await;
        assert!(tier.get(&key(1)).await.is_none());
        assert_eq!(tier.purge(None).await, 1);
    });
}

#[test]
fn the_files_of_format_version_1_are_deleted_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("v1");
    let name = key(1).hex();
    fs::create_dir_all(old.join(&name[..2])).unwrap();
    fs::create_dir_all(old.join("tmp")).unwrap();
    fs::create_dir_all(old.join("keep")).unwrap();
    fs::write(old.join(&name[..2]).join(&name), b"an old entry").unwrap();
    fs::write(old.join("tmp").join("half"), b"half").unwrap();
    fs::write(old.join(&name[..2]).join("notes.txt"), b"not ours").unwrap();
    fs::write(old.join("keep").join(&name), b"not ours either").unwrap();
    let tier = DiskTier::open(dir.path(), 1 << 20);
    tier.flush();
    assert!(!old.join(&name[..2]).join(&name).exists());
    assert!(!old.join("tmp").exists());
    assert!(old.join(&name[..2]).join("notes.txt").exists());
    assert!(old.join("keep").join(&name).exists());
    assert_eq!(tier.stats().entries, 0);

    // With only our files there, v1 goes entirely.
    fs::remove_file(old.join(&name[..2]).join("notes.txt")).unwrap();
    fs::remove_dir_all(old.join("keep")).unwrap();
    drop(tier);
    let tier = DiskTier::open(dir.path(), 1 << 20);
    tier.flush();
    assert!(!old.exists());
}

#[test]
fn elided_entries_are_not_stored() {
    let dir = tempfile::tempdir().unwrap();
    let tier = DiskTier::open(dir.path(), 1 << 20);
    let mut e = (*entry(b"", None)).clone();
    e.elided = true;
    now(tier.put(key(1), Arc::new(e)));
    tier.flush();
    assert_eq!(tier.stats().entries, 0);
    assert!(now(tier.get(&key(1))).is_none());
}

#[test]
fn a_flipped_byte_anywhere_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, good) = stored(dir.path());
    let len = good.len();
    // Header (magic, version, key, hash, url), body, checksum.
    for at in [0, 11, 20, 50, 80, len - 40, len - 33, len - 10, len - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x20;
        refused(dir.path(), &bad, &format!("byte {at} flipped"));
    }
}

#[test]
fn truncated_and_empty_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, good) = stored(dir.path());
    for cut in [
        0,
        1,
        9,
        14,
        46,
        78,
        100,
        good.len() - 33,
        good.len() - 32,
        good.len() - 1,
    ] {
        refused(dir.path(), &good[..cut], &format!("cut at {cut}"));
    }
}

#[test]
fn foreign_and_old_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    refused(
        dir.path(),
        b"random bytes, not a cache file at all",
        "random",
    );
    // A valid file of another key, copied under this one's name.
    let other = format::encode(&key(9), &entry(b"<p>other</p>", None));
    refused(dir.path(), &other, "copied");
    // An old format version, otherwise valid (re-sealed: the checksum
    // covers the header, which ends 32 bytes before the body).
    let (_, _, good) = stored(dir.path());
    let body = b"<p>body</p>".len();
    let header = good.len() - body - 32;
    let mut old = good[..header].to_vec();
    old[10..14].copy_from_slice(&1u32.to_le_bytes());
    let sum = blake3::hash(&old);
    old.extend_from_slice(sum.as_bytes());
    old.extend_from_slice(&good[header + 32..]);
    refused(dir.path(), &old, "old version");
}

#[test]
fn the_scan_drops_what_fails_its_header() {
    let dir = tempfile::tempdir().unwrap();
    let (tier, path, good) = stored(dir.path());
    drop(tier);
    let sub = path.parent().unwrap();
    let copied = sub.join(format!("{}{}", &key(1).hex()[..2], "0".repeat(62)));
    fs::write(&copied, &good).unwrap(); // a foreign copy
    fs::write(sub.join("not-a-key"), b"x").unwrap();
    let empty = key(2).hex();
    fs::create_dir_all(dir.path().join("v2").join(&empty[..2])).unwrap();
    fs::write(dir.path().join("v2").join(&empty[..2]).join(&empty), b"").unwrap();
    fs::write(dir.path().join("v2/tmp/leftover"), b"half").unwrap();
    let tier = DiskTier::open(dir.path(), 1 << 20);
    tier.flush();
    let stats = tier.stats();
    assert_eq!((stats.entries, stats.rejected), (1, 3));
    assert!(!copied.exists() && !sub.join("not-a-key").exists());
    assert!(!dir.path().join("v2/tmp/leftover").exists());
    assert!(now(tier.get(&key(1))).is_some());
}

#[test]
fn eviction_keeps_within_the_capacity_and_drops_the_least_recently_used() {
    let dir = tempfile::tempdir().unwrap();
    let body = [b'x'; 1000];
    let size = format::encode(&key(0), &entry(&body, Some("/k"))).len() as u64;
    let capacity = size * 7 / 2;
    let tier = DiskTier::open(dir.path(), capacity);
    for n in 1..=3 {
        now(tier.put(key(n), entry(&body, Some("/k"))));
    }
    tier.flush();
    assert!(now(tier.get(&key(1))).is_some()); // 2 is now the oldest
    now(tier.put(key(4), entry(&body, Some("/k"))));
    tier.flush();
    let stats = tier.stats();
    assert!(stats.bytes <= capacity, "{stats:?}");
    assert_eq!((stats.entries, stats.evictions), (3, 1));
    assert!(now(tier.get(&key(2))).is_none());
    assert!(!tier.shared.path(&key(2)).exists());
    for n in [1, 3, 4] {
        assert!(now(tier.get(&key(n))).is_some(), "{n} evicted");
    }
    // Lots more writes: never past the capacity.
    for n in 10..40 {
        now(tier.put(key(n), entry(&body, Some("/k"))));
        tier.flush();
        assert!(tier.stats().bytes <= capacity);
    }
    // And a restart with a smaller capacity evicts down to it.
    drop(tier);
    let tier = DiskTier::open(dir.path(), size * 2);
    tier.flush();
    assert!(tier.stats().bytes <= size * 2);
}

#[test]
fn purge_by_prefix_and_all() {
    let dir = tempfile::tempdir().unwrap();
    let tier = DiskTier::open(dir.path(), 1 << 20);
    let urls = [
        Some("/docs/a.xml"),
        Some("/docs/b.xml"),
        Some("/img/c.xml"),
        None,
    ];
    for (n, url) in (1u8..).zip(urls) {
        now(tier.put(key(n), entry(b"b", url)));
    }
    // Purges run after the writes queued before them: no flush needed.
    assert_eq!(now(tier.purge(Some("/docs/"))), 2);
    assert!(now(tier.get(&key(1))).is_none() && now(tier.get(&key(2))).is_none());
    assert!(!tier.shared.path(&key(1)).exists());
    assert!(now(tier.get(&key(3))).is_some());
    assert_eq!(tier.stats().entries, 2);
    now(tier.remove(&key(3)));
    assert!(!tier.shared.path(&key(3)).exists());
    assert_eq!(tier.stats().entries, 1);
    assert_eq!(now(tier.purge(None)), 1);
    assert_eq!(tier.stats().entries, 0);
    assert!(now(tier.get(&key(4))).is_none());
}

/// Is this process able to write where permissions say it may not (root)?
fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A tmpfs mounted on a directory for the test's length.
struct Mount(PathBuf);

impl Mount {
    fn new(dir: &Path, options: &str) -> Option<Mount> {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mount(dir.to_path_buf()))
    }

    fn remount(&self, options: &str) -> bool {
        Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Skips a test whose condition cannot be made here, loudly; under
/// `CI=true` that is a failure instead.
fn skip(why: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "cannot run under CI: {why}"
    );
    eprintln!("SKIPPED: {why}");
}

#[test]
fn a_read_only_directory_degrades_but_serves_what_it_has() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("cache");
    fs::create_dir(&base).unwrap();
    let mount = if is_root() {
        let Some(m) = Mount::new(&base, "size=1m") else {
            return skip("running as root and cannot mount a tmpfs for a read-only directory");
        };
        Some(m)
    } else {
        None
    };
    let e = entry(b"<p>kept</p>", Some("/a.xml"));
    {
        let tier = DiskTier::open(&base, 1 << 20);
        now(tier.put(key(1), Arc::clone(&e)));
        tier.flush();
    }
    match &mount {
        Some(m) => assert!(m.remount("ro"), "remount read-only"),
        None => {
            use std::os::unix::fs::PermissionsExt;
            for sub in ["v2", "v2/tmp", &format!("v2/{}", &key(1).hex()[..2])] {
                fs::set_permissions(base.join(sub), fs::Permissions::from_mode(0o555)).unwrap();
            }
        }
    }
    let tier = DiskTier::open(&base, 1 << 20);
    tier.flush();
    let stats = tier.stats();
    assert!(!stats.writable, "{stats:?}");
    assert_eq!(stats.entries, 1);
    assert!(same(&e, &now(tier.get(&key(1))).unwrap()));
    // Writes are dropped, without an error per write.
    now(tier.put(key(2), entry(b"new", None)));
    tier.flush();
    assert!(now(tier.get(&key(2))).is_none());
    assert_eq!(tier.dropped(), 1);
    assert_eq!(tier.stats().write_errors, 0);
    drop(tier);
    if mount.is_none() {
        use std::os::unix::fs::PermissionsExt;
        for sub in ["v2", "v2/tmp", &format!("v2/{}", &key(1).hex()[..2])] {
            let _ = fs::set_permissions(base.join(sub), fs::Permissions::from_mode(0o755));
        }
    }
}

#[test]
fn a_directory_that_cannot_be_created_degrades() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    fs::write(&file, b"").unwrap();
    let tier = DiskTier::open(&file.join("cache"), 1 << 20);
    assert!(!tier.stats().writable);
    now(tier.put(key(1), entry(b"x", None)));
    tier.flush();
    assert!(now(tier.get(&key(1))).is_none());
    assert_eq!(now(tier.purge(None)), 0);
}

#[test]
fn a_full_directory_degrades_and_recovers() {
    if !is_root() {
        return skip("a full directory needs a small tmpfs mount, which needs root");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(_mount) = Mount::new(dir.path(), "size=64k") else {
        return skip("cannot mount a tmpfs for a full directory");
    };
    let small = entry(b"<p>small</p>", None);
    {
        let tier = DiskTier::open_with(dir.path(), 1 << 30, QUEUE, Duration::from_secs(3600));
        assert!(tier.stats().writable);
        now(tier.put(key(1), entry(&[b'x'; 256 * 1024], None)));
        now(tier.put(key(2), Arc::clone(&small)));
        tier.flush();
        let stats = tier.stats();
        assert!(!stats.writable, "{stats:?}");
        assert_eq!((stats.write_errors, stats.entries), (1, 0));
        assert_eq!(tier.dropped(), 1); // not tried before the retry is due
        assert!(now(tier.get(&key(1))).is_none());
        // The failed write's temp file is gone.
        assert_eq!(fs::read_dir(dir.path().join("v2/tmp")).unwrap().count(), 0);
    }
    // Due to retry at once: the next small write works again.
    let tier = DiskTier::open_with(dir.path(), 1 << 30, QUEUE, Duration::ZERO);
    now(tier.put(key(1), entry(&[b'x'; 256 * 1024], None)));
    tier.flush();
    assert!(!tier.stats().writable);
    now(tier.put(key(2), Arc::clone(&small)));
    tier.flush();
    let stats = tier.stats();
    assert!(stats.writable, "{stats:?}");
    assert_eq!((stats.write_errors, stats.entries), (1, 1));
    assert!(same(&small, &now(tier.get(&key(2))).unwrap()));
}

#[test]
fn file_names_parse_back_to_keys() {
    let k = Key::from_bytes(std::array::from_fn(|i| i as u8 * 7));
    assert_eq!(parse_key(&k.hex()), Some(k));
    assert_eq!(parse_key(&k.hex().to_uppercase()), None);
    assert_eq!(parse_key("00"), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_files_never_panic_or_serve(
        bytes in proptest::collection::vec(any::<u8>(), 0..1024),
        keep_start in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (tier, path, good) = stored(dir.path());
        // Arbitrary bytes, or a valid start followed by arbitrary bytes.
        let file = if keep_start {
            let mut f = good[..78].to_vec();
            f.extend_from_slice(&bytes);
            f
        } else {
            bytes
        };
        fs::write(&path, &file).unwrap();
        let got = now(tier.get(&key(1)));
        prop_assert_eq!(got.is_some(), file == good);
        // And the scan at open, on the same bytes.
        drop(tier);
        fs::write(&path, &file).unwrap();
        let tier = DiskTier::open(dir.path(), 1 << 20);
        tier.flush();
        prop_assert_eq!(tier.stats().entries, u64::from(file == good));
    }
}
