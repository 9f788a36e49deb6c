//! [`Memoized`]: a dynamic source that answers from memory for a
//! time-to-live (`cache = "10s"`), itself a [`DynamicProvider`] (the "a
//! cache is itself a Provider" rule). Concurrent misses of one key run the
//! source once; failures are not remembered.

use std::sync::Arc;
use std::time::Duration;

use http::Method;

use super::{BoxFuture, DynamicProvider, Produced, SourceError, SourceRequest};

/// Wraps a source, remembering its answers by [`DynamicProvider::memo_key`]
/// for `ttl`, within a byte budget.
pub struct Memoized {
    inner: Arc<dyn DynamicProvider>,
    answers: moka::future::Cache<Vec<u8>, Produced>,
}

impl std::fmt::Debug for Memoized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memoized")
            .field("inner", &self.inner.describe())
            .finish()
    }
}

impl Memoized {
    /// Remembers `inner`'s answers for `ttl`, at most `budget` bytes of them.
    pub fn new(inner: Arc<dyn DynamicProvider>, ttl: Duration, budget: u64) -> Memoized {
        let answers = moka::future::Cache::builder()
            .time_to_live(ttl)
            .max_capacity(budget)
            .weigher(|k: &Vec<u8>, v: &Produced| {
                u32::try_from(k.len() + v.bytes.len() + 64).unwrap_or(u32::MAX)
            })
            .build();
        Memoized { inner, answers }
    }
}

impl DynamicProvider for Memoized {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn body_limit(&self, method: &Method) -> Result<Option<u64>, SourceError> {
        self.inner.body_limit(method)
    }

    fn memo_key(&self, request: &SourceRequest) -> Option<Vec<u8>> {
        self.inner.memo_key(request)
    }

    fn produce<'a>(
        &'a self,
        request: &'a SourceRequest,
    ) -> BoxFuture<'a, Result<Produced, SourceError>> {
        Box::pin(async move {
            // A request with a body is never answered from memory.
            let key = match (&request.body, self.inner.memo_key(request)) {
                (None, Some(key)) => key,
                _ => return self.inner.produce(request).await,
            };
            self.answers
                .try_get_with(key, async {
                    let mut produced = self.inner.produce(request).await?;
                    // Remembered for the time-to-live: for that long the
                    // bytes stand for this request.
                    produced.cacheable = true;
                    Ok::<_, SourceError>(produced)
                })
                .await
                .map_err(|e| (*e).clone())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::sync::atomic::{AtomicU64, Ordering};

    struct Counter(AtomicU64);

    impl DynamicProvider for Counter {
        fn describe(&self) -> String {
            "counter".into()
        }
        fn memo_key(&self, request: &SourceRequest) -> Option<Vec<u8>> {
            Some(request.path_below.as_bytes().to_vec())
        }
        fn produce<'a>(
            &'a self,
            request: &'a SourceRequest,
        ) -> BoxFuture<'a, Result<Produced, SourceError>> {
            Box::pin(async move {
                let n = self.0.fetch_add(1, Ordering::SeqCst);
                if request.path_below == "/fail" {
                    return Err(SourceError::Failed("no".into()));
                }
                Ok(Produced {
                    bytes: Bytes::from(format!("<n>{n}</n>")),
                    cacheable: false,
                    status: None,
                })
            })
        }
    }

    #[tokio::test]
    async fn answers_from_memory_for_the_time_to_live() {
        let counter = Arc::new(Counter(AtomicU64::new(0)));
        let memo = Memoized::new(counter.clone(), Duration::from_millis(300), 1 << 20);
        let a = SourceRequest::new(Method::GET, "/live", "/a");
        let b = SourceRequest::new(Method::GET, "/live", "/b");
        let first = memo.produce(&a).await.unwrap();
        assert!(first.cacheable);
        assert_eq!(memo.produce(&a).await.unwrap().bytes, first.bytes);
        assert_ne!(memo.produce(&b).await.unwrap().bytes, first.bytes);
        assert_eq!(counter.0.load(Ordering::SeqCst), 2);
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_ne!(memo.produce(&a).await.unwrap().bytes, first.bytes);
        assert_eq!(counter.0.load(Ordering::SeqCst), 3);
        // Failures are not remembered.
        let fail = SourceRequest::new(Method::GET, "/live", "/fail");
        assert!(memo.produce(&fail).await.is_err());
        assert!(memo.produce(&fail).await.is_err());
        assert_eq!(counter.0.load(Ordering::SeqCst), 5);
    }
}
