//! The `[esql.NAME]` tables: the database connections XSP pages query
//! through the `esql` taglib. Each becomes a pool in one `Esql` taglib,
//! added to the XSP Language of every location. A SQLite database under
//! the document root lies in a directory of its own, which is never
//! served (nor are its journal files), whatever the locations say.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::ConfigError;
use super::format::EsqlFormat;
use super::validate::Here;
use crate::config::parse_duration;
use crate::language::Registry;
use crate::language::xsp::esql::{Esql, EsqlConnection};

/// Rows read at most per query, by default.
pub const DEFAULT_MAX_ROWS: usize = 1000;
/// A query's time, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections per pool, by default.
pub const DEFAULT_POOL_SIZE: u32 = 4;

/// Builds the connections, adds the taglib to `registry`; returns the
/// directories never to serve, or every table's problem.
pub(super) fn register(
    tables: &std::collections::BTreeMap<String, EsqlFormat>,
    registry: &mut Registry,
    root: &Path,
    file: &Path,
    text: &str,
    spans: &super::spans::Spans,
) -> Result<Vec<PathBuf>, Vec<ConfigError>> {
    let here_of = |name: &str| Here {
        file,
        text,
        spans,
        section: if name.is_empty() {
            String::from("esql")
        } else {
            super::join("esql", name)
        },
    };
    let mut connections = Vec::new();
    let mut private = Vec::new();
    let mut errors = Vec::new();
    for (name, t) in tables {
        match connection(name, t, root, &here_of(name), &mut private) {
            Ok(c) => connections.push(c),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if connections.is_empty() {
        return Ok(private);
    }
    let esql = Esql::new(&connections).map_err(|e| vec![here_of("").err("", e.to_string())])?;
    registry.add_taglib(Arc::new(esql));
    Ok(private)
}

/// One `[esql.NAME]` table as a connection (its SQLite directory, under
/// the root, added to `private`).
fn connection(
    name: &str,
    t: &EsqlFormat,
    root: &Path,
    here: &Here<'_>,
    private: &mut Vec<PathBuf>,
) -> Result<EsqlConnection, ConfigError> {
    let url = if let Some(path) = t.url.strip_prefix("sqlite:") {
        let path = root.join(path);
        let dir = path
            .parent()
            .ok_or_else(|| here.err("url", "a SQLite database is a file"))?;
        let dir = dir.canonicalize().map_err(|e| {
            here.err(
                "url",
                format!(
                    "{}: {e} (the database's directory must exist)",
                    dir.display()
                ),
            )
        })?;
        if dir.starts_with(root) {
            if dir == root {
                return Err(here.err(
                    "url",
                    "a SQLite database under the document root needs a directory of its own (it is never served): e.g. sqlite:data/site.sqlite",
                ));
            }
            private.push(dir.clone());
        }
        let file = path
            .file_name()
            .ok_or_else(|| here.err("url", "a SQLite database is a file"))?;
        format!("sqlite:{}", dir.join(file).display())
    } else if t.url.starts_with("postgres://") || t.url.starts_with("postgresql://") {
        t.url.clone()
    } else {
        return Err(here.err(
            "url",
            "an esql url is sqlite:PATH (relative to the root) or postgres://USER@HOST:PORT/DB",
        ));
    };
    let timeout = match &t.timeout {
        Some(text) => parse_duration(text).map_err(|e| here.err("timeout", e))?,
        None => DEFAULT_TIMEOUT,
    };
    let init = match &t.init {
        Some(rel) => {
            let path = root.join(rel);
            Some(
                std::fs::read_to_string(&path)
                    .map_err(|e| here.err("init", format!("{}: {e}", path.display())))?,
            )
        }
        None => None,
    };
    let max_rows = t.max_rows.unwrap_or(DEFAULT_MAX_ROWS);
    if max_rows == 0 {
        return Err(here.err("max-rows", "at least 1"));
    }
    Ok(EsqlConnection {
        name: name.to_string(),
        url,
        max_rows,
        timeout,
        pool_size: t
            .pool_size
            .map_or(DEFAULT_POOL_SIZE, |n| u32::try_from(n).unwrap_or(u32::MAX))
            .max(1),
        init,
    })
}
