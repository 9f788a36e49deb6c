//! The databases behind `esql`: SQLite (embedded, a file) and PostgreSQL
//! (a server), each behind a connection pool (`r2d2`). A query is the
//! page's SQL with numbered placeholders (`?1`, `$1`) and its parameters
//! bound as values; rows past the connection's limit are not read; a
//! query past its timeout is interrupted (SQLite's progress handler,
//! PostgreSQL's `statement_timeout`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use r2d2_postgres::PostgresConnectionManager;
use r2d2_postgres::postgres::types::{ToSql, Type};
use r2d2_postgres::postgres::{self, NoTls};
use r2d2_sqlite::SqliteConnectionManager;

use super::EsqlConnection;

/// A parameter's declared type (`<esql:parameter type="int">`): SQLite
/// binds it so; PostgreSQL binds by the type the server infers, and the
/// declared one only checks the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// Text.
    Text,
    /// A 64-bit integer.
    Int,
    /// A double.
    Real,
    /// A boolean (`true`/`false`, `1`/`0`).
    Bool,
}

/// One value of a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Column {
    /// SQL NULL.
    Null,
    /// Its text.
    Text(String),
}

/// What a statement gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Rows (a query).
    Rows {
        /// Column names.
        columns: Vec<String>,
        /// The rows read.
        rows: Vec<Vec<Column>>,
        /// More rows were there than the limit.
        truncated: bool,
    },
    /// Rows changed (a statement without results).
    Update(u64),
}

/// Why a query failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum DbError {
    /// No connection within the timeout (the server is down, the pool is
    /// busy).
    #[error("no connection: {0}")]
    Unavailable(String),
    /// The query ran past its timeout and was stopped.
    #[error("the query ran past its timeout and was stopped")]
    Timeout,
    /// A parameter's value does not fit its type (the request's fault).
    #[error("{0}")]
    Parameter(String),
    /// The database refused or failed the statement (its message).
    #[error("{0}")]
    Database(String),
    /// The connection's settings are unusable.
    #[error("{0}")]
    Config(String),
}

impl DbError {
    /// A short name of the kind, for messages a client may see.
    pub fn kind(&self) -> &'static str {
        match self {
            DbError::Unavailable(_) => "the database is unavailable",
            DbError::Timeout => "it ran past its timeout",
            DbError::Parameter(_) => "a parameter does not fit its type",
            DbError::Database(_) => "the database refused it",
            DbError::Config(_) => "the connection is misconfigured",
        }
    }
}

/// A database.
pub trait Backend: Send + Sync {
    /// Runs the statement made of `parts` with `values` bound between them.
    fn run(&self, parts: &[String], values: &[(ParamType, &str)]) -> Result<Outcome, DbError>;
}

/// The backend for `connection`'s URL.
pub(super) fn open(connection: &EsqlConnection) -> Result<Arc<dyn Backend>, DbError> {
    if let Some(path) = connection.url.strip_prefix("sqlite:") {
        return Ok(Arc::new(Sqlite::open(path, connection)?));
    }
    if connection.url.starts_with("postgres://") || connection.url.starts_with("postgresql://") {
        return Ok(Arc::new(Postgres::open(connection)?));
    }
    Err(DbError::Config(format!(
        "{}: an esql url is sqlite:PATH or postgres://USER@HOST:PORT/DB",
        connection.url
    )))
}

fn int(i: usize, v: &str) -> Result<i64, DbError> {
    v.trim()
        .parse()
        .map_err(|_| DbError::Parameter(format!("parameter {i} is not an integer: `{v}`")))
}

fn real(i: usize, v: &str) -> Result<f64, DbError> {
    v.trim()
        .parse()
        .map_err(|_| DbError::Parameter(format!("parameter {i} is not a number: `{v}`")))
}

fn boolean(i: usize, v: &str) -> Result<bool, DbError> {
    match v.trim() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" | "" => Ok(false),
        _ => Err(DbError::Parameter(format!(
            "parameter {i} is not a boolean: `{v}`"
        ))),
    }
}

/// SQLite, through a pool of connections to one file.
struct Sqlite {
    pool: r2d2::Pool<SqliteConnectionManager>,
    max_rows: usize,
    timeout: Duration,
}

impl Sqlite {
    fn open(path: &str, c: &EsqlConnection) -> Result<Sqlite, DbError> {
        let path = std::path::PathBuf::from(path);
        let new = !path.exists();
        let busy = c.timeout;
        let manager = SqliteConnectionManager::file(&path).with_init(move |conn| {
            conn.busy_timeout(busy)?;
            Ok(())
        });
        if new {
            if let Some(sql) = &c.init {
                let conn = rusqlite::Connection::open(&path)
                    .map_err(|e| DbError::Config(format!("{}: {e}", path.display())))?;
                conn.execute_batch(sql).map_err(|e| {
                    DbError::Config(format!("{}: the init SQL failed: {e}", path.display()))
                })?;
            }
        }
        let pool = r2d2::Pool::builder()
            .max_size(c.pool_size.max(1))
            .connection_timeout(c.timeout)
            .build_unchecked(manager);
        Ok(Sqlite {
            pool,
            max_rows: c.max_rows,
            timeout: c.timeout,
        })
    }
}

fn sqlite_error(e: rusqlite::Error) -> DbError {
    match e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::OperationInterrupted =>
        {
            DbError::Timeout
        }
        other => DbError::Database(other.to_string()),
    }
}

impl Backend for Sqlite {
    fn run(&self, parts: &[String], values: &[(ParamType, &str)]) -> Result<Outcome, DbError> {
        let conn = self
            .pool
            .get()
            .map_err(|e| DbError::Unavailable(e.to_string()))?;
        let mut sql = String::new();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                sql.push_str(&format!("?{i}"));
            }
            sql.push_str(part);
        }
        let mut bound = Vec::with_capacity(values.len());
        for (i, (t, v)) in values.iter().enumerate() {
            let n = i + 1;
            bound.push(match t {
                ParamType::Text => rusqlite::types::Value::Text((*v).to_string()),
                ParamType::Int => rusqlite::types::Value::Integer(int(n, v)?),
                ParamType::Real => rusqlite::types::Value::Real(real(n, v)?),
                ParamType::Bool => rusqlite::types::Value::Integer(i64::from(boolean(n, v)?)),
            });
        }
        let deadline = Instant::now() + self.timeout;
        conn.progress_handler(1000, Some(move || Instant::now() > deadline));
        let outcome = run_sqlite(&conn, &sql, bound, self.max_rows);
        conn.progress_handler(0, None::<fn() -> bool>);
        outcome
    }
}

fn run_sqlite(
    conn: &rusqlite::Connection,
    sql: &str,
    bound: Vec<rusqlite::types::Value>,
    max_rows: usize,
) -> Result<Outcome, DbError> {
    let mut stmt = conn.prepare(sql).map_err(sqlite_error)?;
    let params = rusqlite::params_from_iter(bound);
    if stmt.column_count() == 0 {
        let n = stmt.execute(params).map_err(sqlite_error)?;
        return Ok(Outcome::Update(n as u64));
    }
    let columns: Vec<String> = stmt.column_names().into_iter().map(String::from).collect();
    let mut rows = Vec::new();
    let mut truncated = false;
    let mut cursor = stmt.query(params).map_err(sqlite_error)?;
    while let Some(row) = cursor.next().map_err(sqlite_error)? {
        if rows.len() == max_rows {
            truncated = true;
            break;
        }
        let mut values = Vec::with_capacity(columns.len());
        for i in 0..columns.len() {
            use rusqlite::types::ValueRef;
            values.push(match row.get_ref(i).map_err(sqlite_error)? {
                ValueRef::Null => Column::Null,
                ValueRef::Integer(n) => Column::Text(n.to_string()),
                ValueRef::Real(f) => Column::Text(f.to_string()),
                ValueRef::Text(t) => Column::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Column::Text(b.iter().map(|x| format!("{x:02x}")).collect()),
            });
        }
        rows.push(values);
    }
    Ok(Outcome::Rows {
        columns,
        rows,
        truncated,
    })
}

/// PostgreSQL, through a pool of client connections (no TLS: a server on
/// loopback or a private network).
struct Postgres {
    /// Always Some but in `drop`.
    pool: Option<r2d2::Pool<PostgresConnectionManager<NoTls>>>,
    max_rows: usize,
    timeout: Duration,
}

impl Drop for Postgres {
    /// The pool's connections are closed on a thread of their own: a
    /// `postgres` client blocks on its own runtime when it closes, which
    /// panics on a thread that drives async tasks (a configuration reload
    /// drops the old pools there).
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            let _ = std::thread::Builder::new()
                .name("axle-esql-close".into())
                .spawn(move || drop(pool));
        }
    }
}

impl Postgres {
    fn open(c: &EsqlConnection) -> Result<Postgres, DbError> {
        let mut config: postgres::Config = c
            .url
            .parse()
            .map_err(|e| DbError::Config(format!("{}: {e}", c.url)))?;
        config.connect_timeout(c.timeout);
        let manager = PostgresConnectionManager::new(config, NoTls);
        let pool = r2d2::Pool::builder()
            .max_size(c.pool_size.max(1))
            .connection_timeout(c.timeout)
            .build_unchecked(manager);
        Ok(Postgres {
            pool: Some(pool),
            max_rows: c.max_rows,
            timeout: c.timeout,
        })
    }
}

fn pg_error(e: postgres::Error) -> DbError {
    if e.code() == Some(&postgres::error::SqlState::QUERY_CANCELED) {
        return DbError::Timeout;
    }
    match e.as_db_error() {
        Some(db) => DbError::Database(format!("{}: {}", db.severity(), db.message())),
        None => DbError::Unavailable(e.to_string()),
    }
}

/// A parameter for a placeholder the server typed `t`.
fn pg_param(
    n: usize,
    t: &Type,
    declared: ParamType,
    v: &str,
) -> Result<Box<dyn ToSql + Sync>, DbError> {
    // The declared type is checked too: `type="int"` with a word is the
    // request's error whatever the column is.
    match declared {
        ParamType::Int => {
            int(n, v)?;
        }
        ParamType::Real => {
            real(n, v)?;
        }
        ParamType::Bool => {
            boolean(n, v)?;
        }
        ParamType::Text => {}
    }
    let out_of_range = || DbError::Parameter(format!("parameter {n} is out of range: `{v}`"));
    Ok(match *t {
        Type::INT2 => Box::new(i16::try_from(int(n, v)?).map_err(|_| out_of_range())?),
        Type::INT4 => Box::new(i32::try_from(int(n, v)?).map_err(|_| out_of_range())?),
        Type::INT8 => Box::new(int(n, v)?),
        Type::FLOAT4 => Box::new(real(n, v)? as f32),
        Type::FLOAT8 => Box::new(real(n, v)?),
        Type::BOOL => Box::new(boolean(n, v)?),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            Box::new(v.to_string())
        }
        ref other => {
            return Err(DbError::Database(format!(
                "parameter {n} has type {other}: cast it in the query (${n}::text)"
            )));
        }
    })
}

fn pg_column(row: &postgres::Row, i: usize) -> Result<Column, DbError> {
    let column = &row.columns()[i];
    let get_err = |e: postgres::Error| DbError::Database(e.to_string());
    macro_rules! text {
        ($t:ty) => {
            row.try_get::<_, Option<$t>>(i)
                .map_err(get_err)?
                .map_or(Column::Null, |v| Column::Text(v.to_string()))
        };
    }
    Ok(match *column.type_() {
        Type::INT2 => text!(i16),
        Type::INT4 => text!(i32),
        Type::INT8 => text!(i64),
        Type::FLOAT4 => text!(f32),
        Type::FLOAT8 => text!(f64),
        Type::BOOL => text!(bool),
        Type::OID => text!(u32),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => text!(String),
        ref other => {
            return Err(DbError::Database(format!(
                "column {} has type {other}: cast it to text in the query ({}::text)",
                column.name(),
                column.name()
            )));
        }
    })
}

impl Backend for Postgres {
    fn run(&self, parts: &[String], values: &[(ParamType, &str)]) -> Result<Outcome, DbError> {
        let mut client = self
            .pool
            .as_ref()
            .ok_or_else(|| DbError::Unavailable("closed".into()))?
            .get()
            .map_err(|e| DbError::Unavailable(e.to_string()))?;
        let millis = self.timeout.as_millis().max(1);
        client
            .batch_execute(&format!("SET statement_timeout = {millis}"))
            .map_err(pg_error)?;
        let mut sql = String::new();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                sql.push_str(&format!("${i}"));
            }
            sql.push_str(part);
        }
        let stmt = client.prepare(&sql).map_err(pg_error)?;
        let mut bound: Vec<Box<dyn ToSql + Sync>> = Vec::with_capacity(values.len());
        for (i, ((declared, v), t)) in values.iter().zip(stmt.params()).enumerate() {
            bound.push(pg_param(i + 1, t, *declared, v)?);
        }
        let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| b.as_ref()).collect();
        if stmt.columns().is_empty() {
            let n = client.execute(&stmt, &refs).map_err(pg_error)?;
            return Ok(Outcome::Update(n));
        }
        let columns: Vec<String> = stmt
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        let mut rows = Vec::new();
        let mut truncated = false;
        let mut iter = client
            .query_raw(&stmt, refs.iter().copied())
            .map_err(pg_error)?;
        use postgres::fallible_iterator::FallibleIterator;
        while let Some(row) = iter.next().map_err(pg_error)? {
            if rows.len() == self.max_rows {
                truncated = true;
                break;
            }
            let mut values = Vec::with_capacity(columns.len());
            for i in 0..columns.len() {
                values.push(pg_column(&row, i)?);
            }
            rows.push(values);
        }
        Ok(Outcome::Rows {
            columns,
            rows,
            truncated,
        })
    }
}
