//! A cache tier of your own, registered through [`axle::Server::builder`]:
//! one bounded map shared by two servers in one process, each with its own
//! memory tier, so a page rendered by one is a hit on the other
//! (`X-Axle-Cache: hit; tier=shared`). The same shape fits a tier over a
//! database, an object store or a cache server: implement
//! [`axle::cache::Cache`] (get, put, remove, purge, stats) and Axle does
//! the rest — it asks the tier after memory (and the disk tier, when
//! `--cache-dir` is set), checks what the tier answers (the bytes against
//! their hash, every recorded dependency against the files) before
//! serving it, promotes it into memory, and writes every response it
//! computes down to the tier in the background.
//!
//! Usage: `cargo run --release --example cache_tier -- [--root DIR]`; it
//! prints both addresses (`... on http://ADDR/ (instance a)`, then `(instance
//! b)`), each on a free loopback port. Try `curl -si http://A/` and then
//! `curl -si http://B/`.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use axle::cache::{BoxFuture, Cache, Entry, Key, TierStats};

/// The allocator `axle serve` uses (see src/main.rs).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The most bytes the shared map holds.
const CAPACITY: u64 = 64 << 20;

/// A bounded map of entries, oldest dropped first; cloning shares it.
#[derive(Clone, Default)]
struct SharedMap(Arc<Mutex<Map>>);

#[derive(Default)]
struct Map {
    entries: HashMap<Key, Arc<Entry>>,
    order: VecDeque<Key>,
    bytes: u64,
    evictions: u64,
}

impl Map {
    fn drop_key(&mut self, key: &Key) -> bool {
        match self.entries.remove(key) {
            Some(e) => {
                self.bytes -= e.bytes.len() as u64;
                self.order.retain(|k| k != key);
                true
            }
            None => false,
        }
    }
}

impl Cache for SharedMap {
    fn name(&self) -> &'static str {
        "shared"
    }

    fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Option<Arc<Entry>>> {
        Box::pin(async move { self.0.lock().ok()?.entries.get(key).cloned() })
    }

    fn put(&self, key: Key, entry: Arc<Entry>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let Ok(mut map) = self.0.lock() else { return };
            map.drop_key(&key);
            map.bytes += entry.bytes.len() as u64;
            map.entries.insert(key, entry);
            map.order.push_back(key);
            while map.bytes > CAPACITY {
                let Some(oldest) = map.order.pop_front() else {
                    break;
                };
                if let Some(e) = map.entries.remove(&oldest) {
                    map.bytes -= e.bytes.len() as u64;
                    map.evictions += 1;
                }
            }
        })
    }

    fn remove<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Ok(mut map) = self.0.lock() {
                map.drop_key(key);
            }
        })
    }

    fn purge<'a>(&'a self, prefix: Option<&'a str>) -> BoxFuture<'a, u64> {
        Box::pin(async move {
            let Ok(mut map) = self.0.lock() else { return 0 };
            let doomed: Vec<Key> = map
                .entries
                .iter()
                .filter(|(_, e)| match (prefix, &e.url) {
                    (None, _) => true,
                    (Some(p), Some(url)) => url.starts_with(p),
                    (Some(_), None) => false,
                })
                .map(|(k, _)| *k)
                .collect();
            doomed.iter().filter(|k| map.drop_key(k)).count() as u64
        })
    }

    fn stats(&self) -> TierStats {
        let Ok(map) = self.0.lock() else {
            return TierStats::default();
        };
        TierStats {
            entries: map.entries.len() as u64,
            bytes: map.bytes,
            capacity: CAPACITY,
            evictions: map.evictions,
            writable: true,
            ..TierStats::default()
        }
    }
}

fn main() -> ExitCode {
    let mut root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--root", Some(v)) => root = PathBuf::from(v),
            // Each instance takes a free port; `--listen` is accepted (the
            // examples' test passes it) and its port ignored.
            ("--listen", Some(_)) => {}
            (other, _) => {
                eprintln!("usage: cache_tier [--root DIR] ({other}?)");
                return ExitCode::from(2);
            }
        }
    }
    let shared = SharedMap::default();
    let served = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .and_then(|runtime| {
            runtime.block_on(async {
                let mut instances = Vec::new();
                for name in ["a", "b"] {
                    let server = axle::Server::builder(&root)
                        .cache_tier(shared.clone())
                        .build()?;
                    let listener =
                        tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
                            .await?;
                    println!(
                        "axle: serving {} on http://{}/ (instance {name})",
                        root.display(),
                        listener.local_addr()?
                    );
                    instances.push((server, listener));
                }
                let (Some((b, lb)), Some((a, la))) = (instances.pop(), instances.pop()) else {
                    return Ok(());
                };
                tokio::try_join!(
                    a.serve_on(la, std::future::pending()),
                    b.serve_on(lb, std::future::pending())
                )?;
                Ok(())
            })
        });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cache_tier: {e}");
            ExitCode::FAILURE
        }
    }
}
