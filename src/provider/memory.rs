//! A provider that keeps recently read sources in memory, keyed by content
//! hash: the "Cache is itself a Provider" rule applied to sources. It answers
//! from memory when the wrapped provider's (stat-memoized) hash says the bytes
//! it holds are current, and otherwise asks the provider it wraps.

use bytes::Bytes;

use super::{Located, Provider, ProviderError, Source};
use crate::cache::ContentHash;

/// Wraps a [`Provider`], remembering source bytes by content hash within a
/// byte budget.
pub struct CachingProvider<P> {
    inner: P,
    sources: moka::sync::Cache<ContentHash, Bytes>,
}

impl<P: std::fmt::Debug> std::fmt::Debug for CachingProvider<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachingProvider")
            .field("inner", &self.inner)
            .finish()
    }
}

impl<P: Provider> CachingProvider<P> {
    /// Wraps `inner`, holding at most `budget` bytes of sources.
    pub fn new(inner: P, budget: u64) -> Self {
        let sources = moka::sync::Cache::builder()
            .max_capacity(budget)
            .weigher(|_k: &ContentHash, v: &Bytes| u32::try_from(v.len() + 64).unwrap_or(u32::MAX))
            .build();
        CachingProvider { inner, sources }
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }
}

impl<P: Provider> Provider for CachingProvider<P> {
    fn locate(&self, url_path: &str) -> Result<Located, ProviderError> {
        self.inner.locate(url_path)
    }

    fn read(&self, located: &Located) -> Result<Source, ProviderError> {
        if let Some(hash) = located.hash {
            if let Some(bytes) = self.sources.get(&hash) {
                return Ok(Source {
                    path: located.path.clone(),
                    bytes,
                    hash,
                });
            }
        }
        let source = self.inner.read(located)?;
        self.sources.insert(source.hash, source.bytes.clone());
        Ok(source)
    }
}
