//! Axle: an XML transformation pipeline server in the lineage of AxKit and
//! Apache Cocoon. Documents are served through the chain of stylesheets their
//! `<?xml-stylesheet?>` PIs name, and results are cached by content hash.
//!
//! # Layout
//! - [`ffi`]: the only `unsafe` code; libxml2/libxslt as safe RAII types.
//! - [`prolog`]: reads PIs, DOCTYPE and root element without a full parse.
//! - [`href`]: resolves an href against its document (below `chain` and `language`).
//! - [`chain`]: PIs → the stages a document goes through.
//! - [`language`]: the `Language`/`Stage` plug-in API; XSLT and passthru.
//! - [`provider`]: where sources come from; confinement to the root.
//! - [`dynamic`]: sources produced per request (a POST body, a program, an upstream).
//! - [`cache`]: content hashes, keys, stat-memoized freshness, the store.
//! - [`pipeline`]: runs chains in the three cache modes; no HTTP.
//! - [`pool`]: the transform threads (16 MiB stacks).
//! - [`exec`]: runs configured programs (filters, command sources), bounded.
//! - [`http`]: the axum server; error mapping.
//! - [`config`]: start-up settings.
//! - [`server`]: the server builder, the public extension API ([`Server::builder`]).
//! - [`upstream`]: the HTTP client behind the `upstream` source provider.
//! - [`export`]: `axle build`, a site rendered to static files through the server's handler.
//!
//! See `docs/ARCHITECTURE.md` for invariants and boundaries.
#![deny(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod cache;
pub mod chain;
pub mod config;
pub mod dynamic;
pub mod exec;
pub mod export;
pub mod fastcgi;
pub mod ffi;
pub mod href;
pub mod http;
pub mod language;
pub mod pipeline;
pub mod pool;
pub mod prolog;
pub mod provider;
pub mod server;
pub mod site;
pub mod upstream;
pub mod warm;

pub use config::{CacheMode, ServeConfig};
pub use language::{Language, Registry, Stage};
pub use server::{Builder, Server};
