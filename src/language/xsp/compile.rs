//! An XSP page compiled to XSLT: the page's literal content becomes
//! literal result elements, `xsp:` elements become XSLT instructions, a
//! taglib's elements become what the taglib writes, and every expression
//! is XPath 1.0 run by libxslt over the request's context document (see
//! `context.rs`). Nothing of the page is ever executed as code: `xsp:logic`
//! is refused here, with the page, line and tag.
//!
//! Two stylesheets come out of a page that has tasks (work a taglib does in
//! Rust at request time, such as a query): the *arguments* stylesheet,
//! which evaluates every task's arguments and condition over the context,
//! and the *main* one, which renders the page once the tasks' results are
//! in the context. So a request value reaches a task as data, never as
//! code or SQL text.
//!
//! Whitespace: a text node of the page that is only whitespace is dropped
//! (as XSLT drops it from a stylesheet), except inside `xsp:text` and
//! under an element with `xml:space="preserve"` (the nearest `xml:space`
//! wins); other text is kept exactly.

use std::any::Any;
use std::fmt::Write as _;
use std::sync::Arc;

use roxmltree::{Node, NodeType};

use super::taglib::{Taglib, Taglibs};
use super::{AXSP_NS, XSP_NS};

/// Where in the page something is: for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The page's URL.
    pub page: String,
    /// 1-based line.
    pub line: u32,
    /// The element, as written (`xsp:expr`).
    pub tag: String,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, line {}, <{}>", self.page, self.line, self.tag)
    }
}

/// Why a page does not compile or run: where, and what.
#[derive(Debug, Clone, thiserror::Error)]
#[error("XSP page {place}: {message}")]
pub struct XspError {
    /// Where.
    pub place: Place,
    /// What is wrong.
    pub message: String,
}

/// Work a taglib does in Rust at request time (see [`Taglib::run`]).
#[derive(Clone)]
pub struct TaskSpec {
    /// Its number in the page (its result is `$results[@id=N]`).
    pub id: usize,
    /// The taglib's namespace.
    pub namespace: String,
    /// Arguments: name and XPath expression (evaluated to a string).
    pub args: Vec<(String, String)>,
    /// The condition under which it runs (the `axsp:if` tests around it).
    pub condition: Option<String>,
    /// What the taglib kept of the page for it (a query's text).
    pub data: Arc<dyn Any + Send + Sync>,
    /// Where it is in the page.
    pub place: Place,
}

impl std::fmt::Debug for TaskSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskSpec")
            .field("id", &self.id)
            .field("namespace", &self.namespace)
            .field("args", &self.args)
            .field("condition", &self.condition)
            .field("place", &self.place)
            .finish()
    }
}

/// What a page declares of its caching (`axsp:cache-params`,
/// `axsp:ttl` on `xsp:page`): without either, it is never cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachePolicy {
    /// The request parameters its output depends on (their values key it).
    pub params: Vec<String>,
    /// How long an output may be served (its key changes every `ttl`).
    pub ttl: Option<std::time::Duration>,
}

/// A compiled page, as stylesheet texts.
#[derive(Debug)]
pub struct Program {
    /// Its caching, when it declares any.
    pub cache: Option<CachePolicy>,
    /// The main stylesheet.
    pub main: String,
    /// The arguments stylesheet (when there are tasks).
    pub arguments: Option<String>,
    /// The tasks, in page order.
    pub tasks: Vec<TaskSpec>,
    /// Every expression with where it is (to name a bad one).
    pub expressions: Vec<(String, Place)>,
    /// Lines of the main stylesheet and the page places they come from,
    /// in order (to name the place of a runtime error).
    pub lines: Vec<(u32, Place)>,
}

/// The top-level variables both stylesheets define over the context.
pub(super) const VARIABLES: &str = r#"<xsl:variable name="request" select="/xsp-context/request"/>
<xsl:variable name="method" select="string($request/@method)"/>
<xsl:variable name="path" select="string($request/@path)"/>
<xsl:variable name="query" select="string($request/@query)"/>
<xsl:variable name="remote-addr" select="string($request/@remote-addr)"/>
<xsl:variable name="params" select="$request/param"/>
<xsl:variable name="headers" select="$request/header"/>
<xsl:variable name="cookies" select="$request/cookie"/>
<xsl:variable name="time" select="string(/xsp-context/time/@iso)"/>
<xsl:variable name="epoch" select="number(/xsp-context/time/@epoch)"/>
<xsl:variable name="results" select="/xsp-context/results/result"/>
"#;

const STYLESHEET_OPEN: &str = "<xsl:stylesheet version=\"1.0\" xmlns:xsl=\"http://www.w3.org/1999/XSL/Transform\">\n<xsl:output method=\"xml\" encoding=\"UTF-8\"/>\n";

/// Compiles the page `text` at `url` with `taglibs`.
pub fn compile(text: &str, url: &str, taglibs: &Taglibs) -> Result<Program, XspError> {
    let doc = roxmltree::Document::parse_with_options(
        text,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..roxmltree::ParsingOptions::default()
        },
    )
    .map_err(|e| XspError {
        place: Place {
            page: url.to_string(),
            line: e.pos().row,
            tag: String::from("?"),
        },
        message: format!("not well-formed: {e}"),
    })?;
    let mut c = TagCompiler {
        doc: &doc,
        url,
        taglibs,
        out: String::with_capacity(text.len() * 2),
        line: 1,
        lines: Vec::new(),
        tasks: Vec::new(),
        expressions: Vec::new(),
        conditions: Vec::new(),
        default_ns: Vec::new(),
        scopes: Vec::new(),
    };
    c.raw(STYLESHEET_OPEN);
    c.raw(VARIABLES);
    c.raw("<xsl:template match=\"/\">\n");
    let page = doc.root_element();
    if !is_xsp(page, "page") {
        return Err(c.error(page, "an XSP page's root element is xsp:page"));
    }
    let mut content = None;
    for child in page.children() {
        match child.node_type() {
            NodeType::Element if is_xsp(child, "logic") => {
                return Err(c.error(child, LOGIC_REFUSED));
            }
            NodeType::Element if is_xsp(child, "structure") => {
                return Err(c.error(child, STRUCTURE_REFUSED));
            }
            NodeType::Element => {
                if content.is_some() {
                    return Err(c.error(child, "xsp:page holds one element (the page's content)"));
                }
                content = Some(child);
            }
            NodeType::Text if !is_blank(child) => {
                return Err(c.error(page, "xsp:page holds no text, only the page's element"));
            }
            _ => {}
        }
    }
    let Some(content) = content else {
        return Err(c.error(page, "xsp:page holds no element: nothing to render"));
    };
    if is_xsp(content, "") || c.taglibs.get(ns_of(content)).is_some() {
        return Err(c.error(
            content,
            "the page's content must be a literal element (the document's root)",
        ));
    }
    c.node(content)?;
    c.raw("</xsl:template>\n</xsl:stylesheet>\n");
    let cache = cache_policy(&c, page)?;
    if cache.is_some() {
        if let Some(t) = c.tasks.iter().find(|t| {
            [super::taglibs::COOKIE_NS, super::WEBUTILS_NS].contains(&t.namespace.as_str())
        }) {
            let what = if t.namespace == super::WEBUTILS_NS {
                "redirects"
            } else {
                "sets cookies"
            };
            return Err(XspError {
                place: t.place.clone(),
                message: format!(
                    "a page that {what} is never cached: remove axsp:cache-params and axsp:ttl from xsp:page"
                ),
            });
        }
    }
    if cache.is_some() {
        let outside = c
            .expressions
            .iter()
            .find_map(|(xpath, place)| outside_key(xpath).map(|what| (what, place)));
        if let Some((what, place)) = outside {
            return Err(XspError {
                place: place.clone(),
                message: format!(
                    "a cacheable page (axsp:cache-params or axsp:ttl) cannot read {what}: its cache key holds only the parameters it names, its path and its time slice, so what one client sent would be served to every client. Remove the read, or remove axsp:cache-params and axsp:ttl from xsp:page"
                ),
            });
        }
    }
    let arguments = (!c.tasks.is_empty()).then(|| arguments_stylesheet(&c.tasks));
    Ok(Program {
        cache,
        main: c.out,
        arguments,
        tasks: c.tasks,
        expressions: c.expressions,
        lines: c.lines,
    })
}

/// What of the request `xpath` reads that a cacheable page's key does not
/// hold (the headers, the cookies, the method, the query string, the
/// client's address, the request element or the context document as a
/// whole), if anything. What the page cannot see is also left out of its
/// context at run time (`XspStage::keyed_request`).
pub(super) fn outside_key(xpath: &str) -> Option<&'static str> {
    const READS: [(&str, &str); 7] = [
        ("$headers", "request headers ($headers)"),
        ("$cookies", "cookies ($cookies)"),
        ("$method", "the request method ($method)"),
        ("$query", "the query string ($query)"),
        ("$remote-addr", "the client's address ($remote-addr)"),
        ("$request", "the request ($request)"),
        ("xsp-context", "the request context (/xsp-context)"),
    ];
    let name_char = |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '.');
    READS.iter().find_map(|(name, what)| {
        xpath
            .match_indices(name)
            .any(|(at, _)| !xpath[at + name.len()..].starts_with(name_char))
            .then_some(*what)
    })
}

/// The page's `axsp:cache-params` (names, separated by spaces or commas;
/// empty: none matter) and `axsp:ttl` (a duration, at least 1s).
fn cache_policy(c: &TagCompiler<'_>, page: Node<'_, '_>) -> Result<Option<CachePolicy>, XspError> {
    let params = page.attribute((AXSP_NS, "cache-params"));
    let ttl = page.attribute((AXSP_NS, "ttl"));
    if params.is_none() && ttl.is_none() {
        return Ok(None);
    }
    let ttl = match ttl {
        Some(text) => {
            let d = crate::config::parse_duration(text)
                .map_err(|e| c.error(page, &format!("axsp:ttl: {e}")))?;
            if d.as_secs() == 0 {
                return Err(c.error(page, "axsp:ttl is at least 1s"));
            }
            Some(d)
        }
        None => None,
    };
    let mut params: Vec<String> = params
        .unwrap_or("")
        .split(|ch: char| ch == ',' || ch.is_whitespace())
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    params.sort();
    params.dedup();
    Ok(Some(CachePolicy { params, ttl }))
}

const LOGIC_REFUSED: &str = "xsp:logic is not supported: Axle's XSP embeds no code. Use xsp:expr (an XPath 1.0 expression), axsp:if/axsp:choose for conditions, and taglibs for the rest";
const STRUCTURE_REFUSED: &str =
    "xsp:structure is not supported: it imports code, and Axle's XSP embeds none";

/// The arguments stylesheet: `<tasks><task id run><arg name>value</arg>…`.
fn arguments_stylesheet(tasks: &[TaskSpec]) -> String {
    let mut x = String::from(STYLESHEET_OPEN);
    x.push_str(VARIABLES);
    x.push_str("<xsl:template match=\"/\"><tasks>\n");
    for t in tasks {
        let run = t.condition.as_deref().unwrap_or("true()");
        let _ = writeln!(
            x,
            "<task id=\"{}\"><xsl:attribute name=\"run\"><xsl:value-of select=\"boolean({})\"/></xsl:attribute>",
            t.id,
            escape_attr(run)
        );
        for (name, expr) in &t.args {
            let _ = writeln!(
                x,
                "<arg name=\"{}\"><xsl:value-of select=\"{}\"/></arg>",
                escape_attr(name),
                escape_attr(expr)
            );
        }
        x.push_str("</task>\n");
    }
    x.push_str("</tasks></xsl:template>\n</xsl:stylesheet>\n");
    x
}

/// The compiler a taglib writes its elements' XSLT with.
pub struct TagCompiler<'a> {
    doc: &'a roxmltree::Document<'a>,
    url: &'a str,
    taglibs: &'a Taglibs,
    out: String,
    /// The line `out` is at (1-based).
    line: u32,
    lines: Vec<(u32, Place)>,
    tasks: Vec<TaskSpec>,
    expressions: Vec<(String, Place)>,
    /// The `axsp:if`/`axsp:when` tests around the element being compiled.
    conditions: Vec<String>,
    /// The default namespace in force in the output, per open element.
    default_ns: Vec<Option<String>>,
    /// Values a taglib keeps for the elements inside one of its own
    /// (key, value), innermost last.
    scopes: Vec<(String, String)>,
}

impl<'a> TagCompiler<'a> {
    /// Where `node` is.
    pub fn place(&self, node: Node<'_, '_>) -> Place {
        let line = self.doc.text_pos_at(node.range().start).row;
        Place {
            page: self.url.to_string(),
            line,
            tag: qualified(node),
        }
    }

    /// An error at `node`.
    pub fn error(&self, node: Node<'_, '_>, message: &str) -> XspError {
        XspError {
            place: self.place(node),
            message: message.to_string(),
        }
    }

    /// Appends XSLT as it is (it must be well-formed in its place).
    pub fn raw(&mut self, xslt: &str) {
        self.line += xslt.bytes().filter(|b| *b == b'\n').count() as u32;
        self.out.push_str(xslt);
    }

    /// Outputs `text` literally.
    pub fn text(&mut self, text: &str) {
        if !text.is_empty() {
            let t = format!("<xsl:text>{}</xsl:text>", escape_text(text));
            self.raw(&t);
        }
    }

    /// Marks the next line as coming from `node` (for runtime errors).
    fn mark(&mut self, node: Node<'_, '_>) {
        if !self.out.ends_with('\n') {
            self.raw("\n");
        }
        let place = self.place(node);
        self.lines.push((self.line, place));
    }

    /// Records `xpath` as an expression of `node` (checked when the page's
    /// stylesheet does not compile, to name the bad one).
    pub fn expression(&mut self, node: Node<'_, '_>, xpath: &str) {
        let place = self.place(node);
        self.expressions.push((xpath.to_string(), place));
    }

    /// Outputs the string value of `xpath`, from `node`.
    pub fn value_of(&mut self, node: Node<'_, '_>, xpath: &str) {
        self.expression(node, xpath);
        self.mark(node);
        let t = format!("<xsl:value-of select=\"{}\"/>\n", escape_attr(xpath));
        self.raw(&t);
    }

    /// Outputs the string value of a tag's expression (`Taglib::expression`),
    /// or, when the tag has none, fails naming it as an unknown tag of
    /// `taglib` (`request`, `esql`).
    pub fn tag_value(
        &mut self,
        tag: Node<'_, '_>,
        expression: Option<String>,
        taglib: &str,
    ) -> Result<(), XspError> {
        match expression {
            Some(e) => {
                self.value_of(tag, &e);
                Ok(())
            }
            None => Err(self.error(
                tag,
                &format!(
                    "unknown {taglib} tag {} (see docs/xsp.md for the list)",
                    tag.tag_name().name()
                ),
            )),
        }
    }

    /// Outputs a copy of what `xpath` selects (nodes), or its string value.
    pub fn copy_of(&mut self, node: Node<'_, '_>, xpath: &str) {
        self.expression(node, xpath);
        self.mark(node);
        let t = format!("<xsl:copy-of select=\"{}\"/>\n", escape_attr(xpath));
        self.raw(&t);
    }

    /// Compiles the children of `node` as content.
    pub fn children(&mut self, node: Node<'_, '_>) -> Result<(), XspError> {
        self.children_except(node, &[])
    }

    /// Compiles the children of `node` as content, but the elements of
    /// `node`'s own namespace named in `skip` (a taglib's parameter
    /// elements).
    pub fn children_except(&mut self, node: Node<'_, '_>, skip: &[&str]) -> Result<(), XspError> {
        let ns = ns_of(node);
        for child in node.children() {
            if child.is_element() && ns_of(child) == ns && skip.contains(&child.tag_name().name()) {
                continue;
            }
            self.node(child)?;
        }
        Ok(())
    }

    /// The value of parameter `name` of a tag as an XPath expression: its
    /// attribute `name` (a literal), else its child element `name` in the
    /// tag's namespace (literal text, an `xsp:expr`, or a taglib element
    /// that has a value). None when neither is there.
    pub fn arg(&mut self, node: Node<'_, '_>, name: &str) -> Result<Option<String>, XspError> {
        if let Some(v) = node.attribute(name) {
            return Ok(Some(literal(v)));
        }
        let ns = ns_of(node);
        let Some(child) = node
            .children()
            .find(|c| c.is_element() && ns_of(*c) == ns && c.tag_name().name() == name)
        else {
            return Ok(None);
        };
        self.value_expr(child).map(Some)
    }

    /// The value of an element's content as one XPath expression (a
    /// string): text is literal, `xsp:expr` its expression, a taglib
    /// element its value; several parts are joined with `concat()`.
    pub fn value_expr(&mut self, node: Node<'_, '_>) -> Result<String, XspError> {
        let mut parts = Vec::new();
        for child in node.children() {
            match child.node_type() {
                NodeType::Text => {
                    let t = child.text().unwrap_or("");
                    if !t.trim().is_empty() {
                        parts.push(literal(t.trim()));
                    }
                }
                NodeType::Element if is_xsp(child, "expr") => {
                    let e = expr_text(self, child)?;
                    self.expression(child, &e);
                    parts.push(format!("string({e})"));
                }
                NodeType::Element if is_xsp(child, "text") => {
                    parts.push(literal(child.text().unwrap_or("")));
                }
                NodeType::Element => {
                    let Some(lib) = self.taglibs.get(ns_of(child)) else {
                        return Err(self.error(
                            child,
                            "only text, xsp:expr and taglib elements with a value may give a value here",
                        ));
                    };
                    let Some(e) = lib.expression(child, self)? else {
                        return Err(self.error(child, "this tag has no value to give here"));
                    };
                    self.expression(child, &e);
                    parts.push(format!("string({e})"));
                }
                _ => {}
            }
        }
        Ok(match parts.len() {
            0 => literal(""),
            1 => parts.remove(0),
            _ => format!("concat({})", parts.join(", ")),
        })
    }

    /// Registers a task of the taglib `namespace` at `node`, with its
    /// arguments (name, XPath) and what the taglib keeps for it; returns
    /// the XPath of its result element (`$results[@id='N']`), whose
    /// content is what [`Taglib::run`] returns.
    pub fn task(
        &mut self,
        node: Node<'_, '_>,
        args: Vec<(String, String)>,
        data: Arc<dyn Any + Send + Sync>,
    ) -> String {
        let id = self.tasks.len() + 1;
        for (_, e) in &args {
            self.expression(node, e);
        }
        let condition = (!self.conditions.is_empty()).then(|| {
            self.conditions
                .iter()
                .map(|c| format!("({c})"))
                .collect::<Vec<_>>()
                .join(" and ")
        });
        let place = self.place(node);
        self.tasks.push(TaskSpec {
            id,
            namespace: ns_of(node).to_string(),
            args,
            condition,
            data,
            place,
        });
        format!("$results[@id='{id}']")
    }

    /// Opens a scope: `key` is `value` for the elements compiled until
    /// the matching [`TagCompiler::pop_scope`] (a query's result for the
    /// tags inside it).
    pub fn push_scope(&mut self, key: &str, value: String) {
        self.scopes.push((key.to_string(), value));
    }

    /// Closes the innermost scope.
    pub fn pop_scope(&mut self) {
        self.scopes.pop();
    }

    /// The innermost value of `key`.
    pub fn scope(&self, key: &str) -> Option<&str> {
        self.scopes
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Compiles one node of the page.
    fn node(&mut self, node: Node<'_, '_>) -> Result<(), XspError> {
        match node.node_type() {
            NodeType::Text => {
                let t = node.text().unwrap_or("");
                if !t.trim().is_empty() || preserves_space(node) {
                    self.text(t);
                }
                Ok(())
            }
            NodeType::Element => self.element(node),
            // Comments and PIs of the page are not output.
            _ => Ok(()),
        }
    }

    fn element(&mut self, node: Node<'_, '_>) -> Result<(), XspError> {
        let ns = ns_of(node);
        if ns == XSP_NS {
            return self.xsp_element(node);
        }
        if ns == AXSP_NS {
            return self.axsp_element(node);
        }
        if let Some(lib) = self.taglibs.get(ns) {
            let lib: Arc<dyn Taglib> = Arc::clone(lib);
            return lib.compile(node, self);
        }
        self.literal_element(node)
    }

    fn literal_element(&mut self, node: Node<'_, '_>) -> Result<(), XspError> {
        let tag = node.tag_name();
        let own_ns = tag.namespace().map(str::to_string);
        let prefix = tag
            .namespace()
            .and_then(|uri| node.lookup_prefix(uri))
            .filter(|p| !p.is_empty());
        let mut start = String::from("<");
        if let Some(p) = prefix {
            let _ = write!(start, "{p}:");
        }
        start.push_str(tag.name());
        let inherited = self.default_ns.last().cloned().flatten();
        let mut declared = Vec::new();
        match (prefix, &own_ns) {
            (Some(p), Some(uri)) => {
                let _ = write!(start, " xmlns:{p}=\"{}\"", escape_attr(uri));
                declared.push(p.to_string());
            }
            (None, Some(uri)) if inherited.as_deref() != Some(uri.as_str()) => {
                let _ = write!(start, " xmlns=\"{}\"", escape_attr(uri));
            }
            (None, None) if inherited.is_some() => start.push_str(" xmlns=\"\""),
            _ => {}
        }
        let default_here = if prefix.is_none() { own_ns } else { inherited };
        let mut xml_attrs: Vec<(String, String)> = Vec::new();
        for attr in node.attributes() {
            let (name, decl) = match attr.namespace() {
                Some(XSP_NS) | Some(AXSP_NS) => {
                    return Err(self.error(node, "xsp: attributes are not supported"));
                }
                // `xml:space` on the stylesheet's element would keep the
                // generated stylesheet's own line breaks: `xml:`
                // attributes are made by `xsl:attribute` instead.
                Some(XML_NS) => {
                    xml_attrs.push((attr.name().to_string(), attr.value().to_string()));
                    continue;
                }
                Some(uri) => {
                    let p = node.lookup_prefix(uri).unwrap_or("ns");
                    let decl = (!declared.iter().any(|d| d == p))
                        .then(|| format!(" xmlns:{p}=\"{}\"", escape_attr(uri)));
                    if decl.is_some() {
                        declared.push(p.to_string());
                    }
                    (format!("{p}:{}", attr.name()), decl)
                }
                None => (attr.name().to_string(), None),
            };
            if let Some(d) = decl {
                start.push_str(&d);
            }
            let _ = write!(
                start,
                " {name}=\"{}\"",
                escape_attr(&avt_literal(attr.value()))
            );
        }
        start.push('>');
        for (name, value) in &xml_attrs {
            let _ = write!(
                start,
                "<xsl:attribute name=\"xml:{name}\">{}</xsl:attribute>",
                escape_text(value)
            );
        }
        self.raw(&start);
        self.default_ns.push(default_here);
        let result = self.children(node);
        self.default_ns.pop();
        result?;
        let end = match prefix {
            Some(p) => format!("</{p}:{}>", tag.name()),
            None => format!("</{}>", tag.name()),
        };
        self.raw(&end);
        Ok(())
    }

    fn xsp_element(&mut self, node: Node<'_, '_>) -> Result<(), XspError> {
        match node.tag_name().name() {
            "expr" => {
                let e = expr_text(self, node)?;
                self.copy_of(node, &e);
                Ok(())
            }
            "text" => {
                self.text(node.text().unwrap_or(""));
                Ok(())
            }
            "content" => self.children(node),
            "element" => {
                let name = self.name_avt(node)?;
                self.mark(node);
                let mut start = format!("<xsl:element name=\"{}\"", escape_attr(&name));
                if let Some(uri) = node.attribute("uri") {
                    let _ = write!(start, " namespace=\"{}\"", escape_attr(&avt_literal(uri)));
                }
                start.push('>');
                self.raw(&start);
                self.default_ns.push(None);
                let r = self.children_except(node, &["param"]);
                self.default_ns.pop();
                r?;
                self.raw("</xsl:element>");
                Ok(())
            }
            "attribute" => {
                let name = self.name_avt(node)?;
                self.mark(node);
                let mut start = format!("<xsl:attribute name=\"{}\"", escape_attr(&name));
                if let Some(uri) = node.attribute("uri") {
                    let _ = write!(start, " namespace=\"{}\"", escape_attr(&avt_literal(uri)));
                }
                start.push('>');
                self.raw(&start);
                self.children_except(node, &["param"])?;
                self.raw("</xsl:attribute>");
                Ok(())
            }
            "pi" => {
                let Some(target) = node.attribute("target") else {
                    return Err(self.error(node, "xsp:pi needs a target attribute"));
                };
                self.mark(node);
                let t = format!(
                    "<xsl:processing-instruction name=\"{}\">",
                    escape_attr(&avt_literal(target))
                );
                self.raw(&t);
                self.children(node)?;
                self.raw("</xsl:processing-instruction>");
                Ok(())
            }
            "comment" => {
                self.mark(node);
                self.raw("<xsl:comment>");
                self.children(node)?;
                self.raw("</xsl:comment>");
                Ok(())
            }
            "logic" => Err(self.error(node, LOGIC_REFUSED)),
            "structure" => Err(self.error(node, STRUCTURE_REFUSED)),
            "page" => Err(self.error(node, "xsp:page is the page's root, and only that")),
            other => Err(self.error(
                node,
                &format!("unknown XSP element xsp:{other} (Axle knows page, element, attribute, content, expr, text, pi, comment)"),
            )),
        }
    }

    /// Axle's conditions (`axsp:if test`, `axsp:choose` with `axsp:when
    /// test` and `axsp:otherwise`): XSP's own conditions were code.
    fn axsp_element(&mut self, node: Node<'_, '_>) -> Result<(), XspError> {
        match node.tag_name().name() {
            "if" => {
                let test = self.test_of(node)?;
                self.mark(node);
                let t = format!("<xsl:if test=\"{}\">", escape_attr(&test));
                self.raw(&t);
                self.conditions.push(test);
                let r = self.children(node);
                self.conditions.pop();
                r?;
                self.raw("</xsl:if>");
                Ok(())
            }
            "choose" => {
                self.mark(node);
                self.raw("<xsl:choose>");
                let mut earlier: Vec<String> = Vec::new();
                for child in node.children() {
                    match child.node_type() {
                        NodeType::Element
                            if ns_of(child) == AXSP_NS && child.tag_name().name() == "when" =>
                        {
                            let test = self.test_of(child)?;
                            let t = format!("<xsl:when test=\"{}\">", escape_attr(&test));
                            self.raw(&t);
                            let mut cond = format!("({test})");
                            for e in &earlier {
                                let _ = write!(cond, " and not({e})");
                            }
                            self.conditions.push(cond);
                            let r = self.children(child);
                            self.conditions.pop();
                            r?;
                            self.raw("</xsl:when>");
                            earlier.push(test);
                        }
                        NodeType::Element
                            if ns_of(child) == AXSP_NS
                                && child.tag_name().name() == "otherwise" =>
                        {
                            self.raw("<xsl:otherwise>");
                            let cond = if earlier.is_empty() {
                                String::from("true()")
                            } else {
                                earlier
                                    .iter()
                                    .map(|e| format!("not({e})"))
                                    .collect::<Vec<_>>()
                                    .join(" and ")
                            };
                            self.conditions.push(cond);
                            let r = self.children(child);
                            self.conditions.pop();
                            r?;
                            self.raw("</xsl:otherwise>");
                        }
                        NodeType::Element => {
                            return Err(self.error(
                                child,
                                "axsp:choose holds axsp:when and axsp:otherwise only",
                            ));
                        }
                        NodeType::Text if !is_blank(child) => {
                            return Err(self.error(node, "axsp:choose holds no text"));
                        }
                        _ => {}
                    }
                }
                if earlier.is_empty() {
                    return Err(self.error(node, "axsp:choose needs an axsp:when"));
                }
                self.raw("</xsl:choose>");
                Ok(())
            }
            other => Err(self.error(
                node,
                &format!("unknown element axsp:{other} (Axle knows if, choose, when, otherwise)"),
            )),
        }
    }

    fn test_of(&mut self, node: Node<'_, '_>) -> Result<String, XspError> {
        let Some(test) = node.attribute("test") else {
            return Err(self.error(node, "needs a test attribute (an XPath 1.0 expression)"));
        };
        self.expression(node, test);
        Ok(test.to_string())
    }

    /// The `name` of `xsp:element`/`xsp:attribute` as an attribute value
    /// template: the `name` attribute, or an `xsp:param name="name"` child.
    fn name_avt(&mut self, node: Node<'_, '_>) -> Result<String, XspError> {
        if let Some(n) = node.attribute("name") {
            return Ok(avt_literal(n));
        }
        let param = node
            .children()
            .find(|c| is_xsp(*c, "param") && c.attribute("name") == Some("name"));
        let Some(param) = param else {
            return Err(self.error(node, "needs a name attribute or an xsp:param name=\"name\""));
        };
        let e = self.value_expr(param)?;
        Ok(format!("{{{e}}}"))
    }
}

/// The text of an `xsp:expr` (it holds an expression, not elements).
fn expr_text(c: &TagCompiler<'_>, node: Node<'_, '_>) -> Result<String, XspError> {
    if node.children().any(|n| n.is_element()) {
        return Err(c.error(
            node,
            "xsp:expr holds an XPath 1.0 expression as text, not elements",
        ));
    }
    let text: String = node.children().filter_map(|n| n.text()).collect();
    let text = text.trim();
    if text.is_empty() {
        return Err(c.error(node, "xsp:expr is empty"));
    }
    Ok(text.to_string())
}

/// The XML namespace (`xml:space`, `xml:lang`).
const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";

/// Does the nearest `xml:space` around `node` say `preserve`?
fn preserves_space(node: Node<'_, '_>) -> bool {
    node.ancestors()
        .find_map(|a| a.attribute((XML_NS, "space")))
        .is_some_and(|v| v == "preserve")
}

fn ns_of<'n>(node: Node<'n, '_>) -> &'n str {
    node.tag_name().namespace().unwrap_or("")
}

fn is_xsp(node: Node<'_, '_>, local: &str) -> bool {
    node.is_element()
        && node.tag_name().namespace() == Some(XSP_NS)
        && (local.is_empty() || node.tag_name().name() == local)
}

fn is_blank(node: Node<'_, '_>) -> bool {
    node.text().is_none_or(|t| t.trim().is_empty())
}

/// An element's name as written (`prefix:local`).
fn qualified(node: Node<'_, '_>) -> String {
    if !node.is_element() {
        return String::from("#text");
    }
    let tag = node.tag_name();
    match tag
        .namespace()
        .and_then(|uri| node.lookup_prefix(uri))
        .filter(|p| !p.is_empty())
    {
        Some(p) => format!("{p}:{}", tag.name()),
        None => tag.name().to_string(),
    }
}

/// An XPath string literal for `s` (`concat()` when it holds both quotes).
pub fn literal(s: &str) -> String {
    if !s.contains('\'') {
        format!("'{s}'")
    } else if !s.contains('"') {
        format!("\"{s}\"")
    } else {
        let parts: Vec<String> = s.split('\'').map(|p| format!("'{p}'")).collect();
        format!("concat({})", parts.join(", \"'\", "))
    }
}

/// A literal as an attribute value template (braces doubled).
fn avt_literal(s: &str) -> String {
    s.replace('{', "{{").replace('}', "}}")
}

/// Text as XML character data.
pub(super) fn escape_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Text as an XML attribute value in double quotes.
pub(super) fn escape_attr(s: &str) -> String {
    escape_text(s)
        .replace('"', "&quot;")
        .replace('\n', "&#10;")
        .replace('\r', "&#13;")
        .replace('\t', "&#9;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_hold_any_quotes() {
        assert_eq!(literal("a"), "'a'");
        assert_eq!(literal("a'b"), "\"a'b\"");
        assert_eq!(literal("a'b\"c"), "concat('a', \"'\", 'b\"c')");
    }
}
