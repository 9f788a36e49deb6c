//! Where source documents come from.
//!
//! A [`Provider`] turns a URL path into a located resource (confined to its
//! root, with a content hash) and yields its bytes. [`FileProvider`] serves a
//! directory tree; [`CachingProvider`] is itself a Provider that answers from
//! memory and otherwise asks the provider it wraps. Confinement happens once,
//! in [`confine`], and its result is the distinct type [`ConfinedPath`].
//! [`RootResolver`] applies the same confinement to every file libxml2 and
//! libxslt read on a document's behalf, and records them as dependencies.

mod confine;
mod file;
mod memory;
mod root;

pub use confine::{
    ConfinedPath, RequestPath, SITE_CONFIG_NAME, confine, confine_optional, confine_url,
    generated_path, lexical_url_path, normalize_request_path,
};
pub use file::{FileProvider, InternalDocuments, RootResolver};
pub use memory::CachingProvider;
pub use root::{PrivateSet, resolve_root};

use bytes::Bytes;

use crate::cache::ContentHash;

/// What a URL path names under a provider's root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
}

/// A resource found by [`Provider::locate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The confined path.
    pub path: ConfinedPath,
    /// File or directory.
    pub kind: ResourceKind,
    /// The content hash (files only; memoized by stat, so cheap).
    pub hash: Option<ContentHash>,
}

/// A source document's bytes and their identity.
#[derive(Debug, Clone)]
pub struct Source {
    /// Where it came from.
    pub path: ConfinedPath,
    /// The bytes.
    pub bytes: Bytes,
    /// Their blake3 hash (of exactly these bytes).
    pub hash: ContentHash,
}

/// Why a provider could not yield a resource.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// Nothing there (or not allowed to say: traversal answers the same).
    #[error("not found: {0}")]
    NotFound(String),
    /// The path tries to leave the root (`..`, absolute, a symlink out, NUL).
    #[error("refused path: {0}")]
    Outside(String),
    /// The resource exists but could not be read.
    #[error("cannot read {path}: {reason}")]
    Unreadable {
        /// The root-relative path.
        path: String,
        /// The I/O error.
        reason: String,
    },
}

/// A source of documents.
pub trait Provider: Send + Sync {
    /// Confines `url_path` (percent-encoded, as in a request line) and says
    /// what is there. Cheap: one `stat` when the content hash is memoized.
    fn locate(&self, url_path: &str) -> Result<Located, ProviderError>;

    /// The bytes of a located file.
    fn read(&self, located: &Located) -> Result<Source, ProviderError>;
}
