//! The taglib plug-in API: a Rust type that owns the elements of one XML
//! namespace in XSP pages, registered through the builder like a Language
//! (`Server::builder(root).taglib(..)`).
//!
//! A taglib turns its elements into XSLT when a page compiles (through
//! [`TagCompiler`]: values as XPath expressions over the request's
//! context, content compiled as the page's), and, for work XPath cannot do
//! (a query, a cookie to set), registers a *task*: at request time its
//! arguments are evaluated to strings first, then [`Taglib::run`] gets
//! them as data and returns XML that the page reads as
//! `$results[@id=N]`. A request value is never compiled, so it can never
//! become code, markup or SQL.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use roxmltree::Node;

use super::compile::{TagCompiler, XspError};
use crate::language::RequestInfo;

/// A taglib: the elements of one namespace.
pub trait Taglib: Send + Sync + 'static {
    /// The namespace URI of its elements.
    fn namespace(&self) -> &str;

    /// Bumped when what it compiles to or returns changes (part of every
    /// XSP page's stage key, with the namespace).
    fn version(&self) -> u32 {
        1
    }

    /// The value of `tag` as one XPath expression, when the tag has a
    /// value (`request:get-parameter`); used where a value is wanted (an
    /// argument) and, by default, to compile the tag.
    fn expression(
        &self,
        tag: Node<'_, '_>,
        cx: &mut TagCompiler<'_>,
    ) -> Result<Option<String>, XspError> {
        let _ = cx;
        let _ = tag;
        Ok(None)
    }

    /// Compiles `tag` where it stands in the page's content: by default,
    /// its value ([`Taglib::expression`]), else an error naming it.
    fn compile(&self, tag: Node<'_, '_>, cx: &mut TagCompiler<'_>) -> Result<(), XspError> {
        let expression = self.expression(tag, cx)?;
        cx.tag_value(tag, expression, self.namespace())
    }

    /// Runs a task this taglib registered ([`TagCompiler::task`]) and
    /// returns the content of its result element: well-formed XML content
    /// (escape what you write; [`escape`] does).
    fn run(&self, task: &TaskCall<'_>) -> Result<String, TaskError> {
        let _ = task;
        Err(TaskError::new("this taglib has no tasks"))
    }
}

/// A task at request time.
#[non_exhaustive]
pub struct TaskCall<'a> {
    /// Its arguments, evaluated (name, string value), as registered.
    pub args: &'a [(String, String)],
    /// What the taglib kept for it at compile time.
    pub data: &'a (dyn Any + Send + Sync),
    /// The request, when there is one.
    pub request: Option<&'a RequestInfo>,
    /// The page's URL.
    pub page: &'a str,
}

impl TaskCall<'_> {
    /// The value of argument `name` (empty when absent).
    pub fn arg(&self, name: &str) -> &str {
        self.args
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// Why a task failed. `public` is what a client may see; `detail` is
/// logged (a database's own message, say).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{public}")]
pub struct TaskError {
    /// What the error page may say.
    pub public: String,
    /// What only the log says.
    pub detail: Option<String>,
}

impl TaskError {
    /// An error whose message may be shown.
    pub fn new(message: impl Into<String>) -> Self {
        TaskError {
            public: message.into(),
            detail: None,
        }
    }

    /// An error with a message to show and a detail for the log only.
    pub fn private(public: impl Into<String>, detail: impl Into<String>) -> Self {
        TaskError {
            public: public.into(),
            detail: Some(detail.into()),
        }
    }
}

/// Text escaped as XML character data (and attribute values in double
/// quotes); characters XML 1.0 cannot hold become U+FFFD.
pub fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            // A CR kept as a reference: a parser would turn a raw one
            // (and CR LF) into LF.
            '\r' => s.push_str("&#13;"),
            '\t' | '\n' => s.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => s.push('\u{FFFD}'),
            c => s.push(c),
        }
    }
    s
}

/// The taglibs of an XSP Language, by namespace.
#[derive(Clone, Default)]
pub struct Taglibs(HashMap<String, Arc<dyn Taglib>>);

impl std::fmt::Debug for Taglibs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.0.keys().collect();
        names.sort();
        f.debug_tuple("Taglibs").field(&names).finish()
    }
}

impl Taglibs {
    /// Adds (or replaces) the taglib of its namespace.
    pub fn add(&mut self, taglib: Arc<dyn Taglib>) {
        self.0.insert(taglib.namespace().to_string(), taglib);
    }

    /// The taglib of `namespace`.
    pub fn get(&self, namespace: &str) -> Option<&Arc<dyn Taglib>> {
        self.0.get(namespace)
    }

    /// Namespaces and versions, sorted (for the stage key).
    pub fn identity(&self) -> Vec<(String, u32)> {
        let mut all: Vec<(String, u32)> = self
            .0
            .iter()
            .map(|(ns, t)| (ns.clone(), t.version()))
            .collect();
        all.sort();
        all
    }
}
