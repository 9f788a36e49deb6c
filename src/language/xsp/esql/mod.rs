//! The `esql` taglib (Cocoon's ESQL, `http://apache.org/cocoon/SQL/v2`):
//! SQL queries from XSP pages, over SQLite (embedded) and PostgreSQL,
//! with bound parameters only. A query's text is the page's own; a request
//! value can only ever be an `esql:parameter`, bound as data, so no request
//! can change what SQL runs. Every connection has a pool, a row limit and
//! a timeout (`[esql.NAME]` in `axle.toml`).
//!
//! A page:
//! ```xml
//! <esql:connection>
//!   <esql:pool>guestbook</esql:pool>
//!   <esql:execute-query>
//!     <esql:query>SELECT name FROM entries WHERE id &gt; <esql:parameter type="int"><xsp-request:get-parameter name="since"/></esql:parameter></esql:query>
//!     <esql:results><ul><esql:row-results><li><esql:get-string column="name"/></li></esql:row-results></ul></esql:results>
//!     <esql:no-results><p>Nothing yet.</p></esql:no-results>
//!   </esql:execute-query>
//! </esql:connection>
//! ```
//! compiles to a task (the query, its parameters' expressions) and XSLT
//! over the task's result, `<rows count="N"><row><col name="name">…</col></row></rows>`
//! (or `<update count="N"/>` for a statement that returns no rows).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use roxmltree::{Node, NodeType};

use super::compile::{TagCompiler, XspError, escape_attr, literal};
use super::taglib::{Taglib, TaskCall, TaskError, escape};

mod backend;

pub use backend::{Backend, Column, DbError, Outcome, ParamType};

/// Cocoon's ESQL namespace.
pub const ESQL_NS: &str = "http://apache.org/cocoon/SQL/v2";

/// One configured connection (`[esql.NAME]`).
#[derive(Debug, Clone)]
pub struct EsqlConnection {
    /// Its name (`<esql:pool>NAME</esql:pool>`).
    pub name: String,
    /// Where: `sqlite:/abs/path.sqlite` or `postgres://user@host:port/db`.
    pub url: String,
    /// Rows read at most per query (more are not read; the result says
    /// `truncated="true"`).
    pub max_rows: usize,
    /// How long a query (and waiting for a connection) may take.
    pub timeout: Duration,
    /// Connections kept open at most.
    pub pool_size: u32,
    /// SQL run once when a SQLite database file is created (a schema).
    pub init: Option<String>,
}

/// The esql taglib with its connections.
pub struct Esql {
    backends: HashMap<String, Arc<dyn Backend>>,
}

impl std::fmt::Debug for Esql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.backends.keys().collect();
        names.sort();
        f.debug_struct("Esql").field("connections", &names).finish()
    }
}

impl Esql {
    /// The taglib with these connections (pools are made now; nothing
    /// connects to a server until a query asks).
    pub fn new(connections: &[EsqlConnection]) -> Result<Esql, DbError> {
        let mut backends = HashMap::new();
        for c in connections {
            backends.insert(c.name.clone(), backend::open(c)?);
        }
        Ok(Esql { backends })
    }
}

/// What a query task keeps of the page.
#[derive(Debug)]
struct Query {
    pool: String,
    /// The SQL between parameters (one more than there are parameters).
    parts: Vec<String>,
    /// Declared parameter types.
    types: Vec<ParamType>,
}

const RESULT: &str = "esql:result";
const ROW: &str = "esql:row";

impl Taglib for Esql {
    fn namespace(&self) -> &str {
        ESQL_NS
    }

    fn compile(&self, tag: Node<'_, '_>, cx: &mut TagCompiler<'_>) -> Result<(), XspError> {
        match tag.tag_name().name() {
            "connection" => cx.children_except(tag, &["pool"]),
            "execute-query" => self.execute_query(tag, cx),
            "results" => {
                let r = result_of(tag, cx)?;
                cx.raw(&format!(
                    "<xsl:if test=\"{}\">",
                    escape_attr(&format!("{r}/rows/row"))
                ));
                cx.children(tag)?;
                cx.raw("</xsl:if>");
                Ok(())
            }
            "no-results" => {
                let r = result_of(tag, cx)?;
                let test = format!("{r}/rows and not({r}/rows/row)");
                cx.raw(&format!("<xsl:if test=\"{}\">", escape_attr(&test)));
                cx.children(tag)?;
                cx.raw("</xsl:if>");
                Ok(())
            }
            "update-results" => {
                let r = result_of(tag, cx)?;
                cx.raw(&format!(
                    "<xsl:if test=\"{}\">",
                    escape_attr(&format!("{r}/update"))
                ));
                cx.children(tag)?;
                cx.raw("</xsl:if>");
                Ok(())
            }
            "row-results" => {
                let r = result_of(tag, cx)?;
                cx.raw(&format!(
                    "<xsl:for-each select=\"{}\">",
                    escape_attr(&format!("{r}/rows/row"))
                ));
                cx.push_scope(ROW, String::from("."));
                let done = cx.children(tag);
                cx.pop_scope();
                done?;
                cx.raw("</xsl:for-each>");
                Ok(())
            }
            "get-columns" => {
                let row = row_of(tag, cx)?;
                cx.expression(tag, &format!("{row}/col"));
                cx.raw(&format!(
                    "<xsl:for-each select=\"{}\"><xsl:element name=\"{{@name}}\"><xsl:value-of select=\".\"/></xsl:element></xsl:for-each>",
                    escape_attr(&format!("{row}/col"))
                ));
                Ok(())
            }
            _ => {
                let expression = self.expression(tag, cx)?;
                cx.tag_value(tag, expression, "esql")
            }
        }
    }

    fn expression(
        &self,
        tag: Node<'_, '_>,
        cx: &mut TagCompiler<'_>,
    ) -> Result<Option<String>, XspError> {
        let name = tag.tag_name().name();
        Ok(Some(match name {
            "get-string" | "get-int" | "get-long" | "get-short" | "get-double" | "get-float"
            | "get-boolean" | "get-date" | "get-time" | "get-timestamp" | "get-xml" => {
                let row = row_of(tag, cx)?;
                let Some(column) = tag.attribute("column") else {
                    return Err(
                        cx.error(tag, "needs a column attribute (a name or a 1-based number)")
                    );
                };
                match column.parse::<usize>() {
                    Ok(n) if n > 0 => format!("string({row}/col[{n}])"),
                    _ => format!("string({row}/col[@name = {}])", literal(column)),
                }
            }
            "get-row-position" => {
                if cx.scope(ROW).is_none() {
                    return Err(cx.error(tag, "get-row-position belongs inside esql:row-results"));
                }
                String::from("position()")
            }
            "get-column-count" => {
                let row = row_of(tag, cx)?;
                format!("count({row}/col)")
            }
            "get-row-count" => format!("number({}/rows/@count)", result_of(tag, cx)?),
            "get-update-count" => format!("number({}/update/@count)", result_of(tag, cx)?),
            _ => return Ok(None),
        }))
    }

    fn run(&self, task: &TaskCall<'_>) -> Result<String, TaskError> {
        let Some(query) = task.data.downcast_ref::<Query>() else {
            return Err(TaskError::new("internal: not an esql query"));
        };
        let Some(backend) = self.backends.get(&query.pool) else {
            return Err(TaskError::new(format!(
                "no esql connection named {} in axle.toml",
                query.pool
            )));
        };
        let values: Vec<(ParamType, &str)> = query
            .types
            .iter()
            .enumerate()
            .map(|(i, t)| (*t, task.arg(&format!("p{}", i + 1))))
            .collect();
        let outcome = backend.run(&query.parts, &values).map_err(|e| match e {
            DbError::Parameter(message) => TaskError::new(message),
            other => TaskError::private(
                format!("the query on {} failed ({})", query.pool, other.kind()),
                other.to_string(),
            ),
        })?;
        Ok(render(&outcome))
    }
}

impl Esql {
    fn execute_query(&self, tag: Node<'_, '_>, cx: &mut TagCompiler<'_>) -> Result<(), XspError> {
        let pool = match tag.attribute("pool") {
            Some(p) => p.to_string(),
            None => tag
                .ancestors()
                .filter(|a| is_esql(*a, "connection"))
                .find_map(|c| {
                    c.children()
                        .find(|p| is_esql(*p, "pool"))
                        .map(|p| p.text().unwrap_or("").trim().to_string())
                })
                .ok_or_else(|| {
                    cx.error(
                        tag,
                        "names no pool: put it in esql:connection/esql:pool (or a pool attribute)",
                    )
                })?,
        };
        if !self.backends.contains_key(&pool) {
            let mut known: Vec<&str> = self.backends.keys().map(String::as_str).collect();
            known.sort_unstable();
            return Err(cx.error(
                tag,
                &format!(
                    "no esql connection named `{pool}` (axle.toml has [esql.NAME] for: {})",
                    if known.is_empty() {
                        String::from("none")
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
        let Some(sql) = tag.children().find(|c| is_esql(*c, "query")) else {
            return Err(cx.error(tag, "needs an esql:query"));
        };
        let mut parts = vec![String::new()];
        let mut types = Vec::new();
        let mut args = Vec::new();
        for part in sql.children() {
            match part.node_type() {
                NodeType::Text => {
                    if let Some(last) = parts.last_mut() {
                        last.push_str(part.text().unwrap_or(""));
                    }
                }
                NodeType::Element if is_esql(part, "parameter") => {
                    let t = match part.attribute("type").unwrap_or("string") {
                        "string" | "text" => ParamType::Text,
                        "int" | "long" | "short" | "integer" => ParamType::Int,
                        "double" | "float" | "real" => ParamType::Real,
                        "boolean" => ParamType::Bool,
                        other => {
                            return Err(cx.error(
                                part,
                                &format!("unknown parameter type `{other}` (string, int, double, boolean)"),
                            ));
                        }
                    };
                    let value = cx.value_expr(part)?;
                    types.push(t);
                    args.push((format!("p{}", args.len() + 1), value));
                    parts.push(String::new());
                }
                NodeType::Element => {
                    return Err(cx.error(
                        part,
                        "esql:query holds SQL text and esql:parameter only: a request value can only be a bound parameter",
                    ));
                }
                _ => {}
            }
        }
        if parts.iter().all(|p| p.trim().is_empty()) {
            return Err(cx.error(sql, "esql:query is empty"));
        }
        let result = cx.task(tag, args, Arc::new(Query { pool, parts, types }));
        cx.push_scope(RESULT, result);
        let done = cx.children_except(tag, &["query", "pool"]);
        cx.pop_scope();
        done
    }
}

/// The result expression of the enclosing `esql:execute-query`.
fn result_of(tag: Node<'_, '_>, cx: &TagCompiler<'_>) -> Result<String, XspError> {
    cx.scope(RESULT)
        .map(str::to_string)
        .ok_or_else(|| cx.error(tag, "belongs inside esql:execute-query"))
}

/// The row a column tag reads: the current one inside
/// `esql:row-results`, else the first.
fn row_of(tag: Node<'_, '_>, cx: &TagCompiler<'_>) -> Result<String, XspError> {
    if let Some(row) = cx.scope(ROW) {
        return Ok(row.to_string());
    }
    Ok(format!("{}/rows/row[1]", result_of(tag, cx)?))
}

fn is_esql(node: Node<'_, '_>, local: &str) -> bool {
    node.is_element()
        && node.tag_name().namespace() == Some(ESQL_NS)
        && node.tag_name().name() == local
}

/// A query's outcome as the task's result content.
fn render(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Update(n) => format!("<update count=\"{n}\"/>"),
        Outcome::Rows {
            columns,
            rows,
            truncated,
        } => {
            let mut x = format!("<rows count=\"{}\"", rows.len());
            if *truncated {
                x.push_str(" truncated=\"true\"");
            }
            x.push('>');
            for row in rows {
                x.push_str("<row>");
                for (name, value) in columns.iter().zip(row) {
                    match value {
                        Column::Null => {
                            let _ = write!(x, "<col name=\"{}\" null=\"true\"/>", escape(name));
                        }
                        Column::Text(v) => {
                            let _ = write!(x, "<col name=\"{}\">{}</col>", escape(name), escape(v));
                        }
                    }
                }
                x.push_str("</row>");
            }
            x.push_str("</rows>");
            x
        }
    }
}
