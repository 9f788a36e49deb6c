//! FastCGI: the protocol for persistent workers (php-cgi, php-fpm, a Perl
//! or Python app), so a dynamic source or a filter does not start a
//! process per request. A small implementation of the FastCGI 1.0
//! responder side of a web server, not a crate: the record layer is
//! ~300 lines, pure and fuzzed (`record`, `response`), and the I/O is
//! plain blocking sockets on the caller's blocking thread (`client`),
//! like every program Axle runs (`exec`). `workers` spawns and supervises
//! worker processes the way mod_fcgid does, through `exec` (the
//! process-tree rule). Nothing else of the crate is imported: this
//! module sits just above `exec`.

pub mod backend;
pub mod client;
pub mod record;
pub mod response;
pub mod workers;

pub use backend::{Backend, BackendConfig, Bounds};
pub use client::{Address, Answer, Connection, FcgiError};
pub use response::{CgiError, CgiResponse};
pub use workers::{Lease, Pool, PoolConfig, stop_all};
