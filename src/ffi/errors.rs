//! Per-thread error capture: libxml2 and libxslt report through callbacks
//! (the shim formats their variadic messages) into a buffer of the calling
//! thread, never to stderr, and each operation turns what was captured into
//! an [`XmlError`]. libxslt's advice to raise its limits with `xsltproc`
//! options, which Axle does not have, is reworded here ([`reword`]).
//! What libxml2 says beyond file and line is kept where it says it: a
//! parser error's column, an XPath error's expression and the column in
//! it where the error was found (libxslt's own report of a broken
//! `select` names the file, line and element, not the expression).

use std::cell::{Cell, RefCell};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use super::{init, opt_string, sys};

thread_local! {
    static THREAD_READY: Cell<bool> = const { Cell::new(false) };
    static ERRORS: RefCell<String> = const { RefCell::new(String::new()) };
    static FIRST_ERROR: RefCell<Option<FirstError>> = const { RefCell::new(None) };
}

/// The first structured error of an operation: message, file, line,
/// column (0: not known).
type FirstError = (String, Option<String>, u32, u32);

/// libxml2's error domains that [`axle_structured_sink`] reads more of
/// (`xmlErrorDomain`).
const FROM_PARSER: c_int = 1;
const FROM_XPATH: c_int = 12;

/// What went wrong inside libxml2 or libxslt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XmlError {
    /// A document or stylesheet is not well-formed XML (or could not be read).
    #[error("{}{message}", location(file.as_deref(), *line, *column))]
    Parse {
        /// The file libxml2 was reading, when it said.
        file: Option<String>,
        /// The 1-based line, when known.
        line: Option<u32>,
        /// The 1-based column on that line, when known.
        column: Option<u32>,
        /// libxml2's message.
        message: String,
    },
    /// The stylesheet is well-formed but not a valid XSLT 1.0 stylesheet.
    #[error("not a valid XSLT stylesheet: {0}")]
    Compile(String),
    /// The transform failed (runtime error, `xsl:message terminate="yes"`,
    /// a security refusal or an exceeded limit).
    #[error("transform failed: {0}")]
    Transform(String),
    /// Serializing the result failed.
    #[error("serialization failed: {0}")]
    Serialize(String),
    /// The render was stopped from outside: past its deadline, over its
    /// memory budget, or its client went away.
    #[error("the render was stopped: {}", stopped_reason(*.0))]
    Stopped(super::Exceeded),
    /// The input cannot be handed to libxml2 at all (too large, or a
    /// parameter containing a NUL byte).
    #[error("{0}")]
    Input(String),
}

fn stopped_reason(why: super::Exceeded) -> &'static str {
    match why {
        super::Exceeded::Deadline => "it ran past its time limit",
        super::Exceeded::Memory => "it needed more memory than its budget",
        super::Exceeded::Cancelled => "its client went away",
    }
}

fn location(file: Option<&str>, line: Option<u32>, column: Option<u32>) -> String {
    let at = match (line, column) {
        (Some(l), Some(c)) => format!("{l}:{c}"),
        (Some(l), None) => l.to_string(),
        (None, _) => String::new(),
    };
    match (file, at.is_empty()) {
        (Some(f), false) => format!("{f}:{at}: "),
        (Some(f), true) => format!("{f}: "),
        (None, false) => format!("line {at}: "),
        (None, true) => String::new(),
    }
}

/// An XPath error as one line: libxml2's message, the expression and the
/// 1-based column in it where parsing stopped (`offset` is libxml2's
/// 0-based byte offset; the column counts characters), so `count(//para`
/// says where it broke, not only that it did.
fn xpath_line(message: &str, expression: Option<&str>, offset: c_int) -> String {
    match expression.filter(|e| !e.is_empty()) {
        Some(expr) => {
            let offset = usize::try_from(offset).unwrap_or(0).min(expr.len());
            let column = expr.char_indices().take_while(|(i, _)| *i < offset).count() + 1;
            format!("{message} at column {column} of the XPath expression \"{expr}\"")
        }
        None => message.to_string(),
    }
}

/// Prepares the calling thread (libxml2's error handler is per thread) and
/// clears its error buffer.
pub(super) fn begin() {
    init();
    THREAD_READY.with(|ready| {
        if !ready.get() {
            // SAFETY: sets this thread's libxml2 generic error handler to the
            // shim's function; no pointers of ours are retained.
            unsafe { sys::shim_install_xml_error_for_thread() };
            ready.set(true);
        }
    });
    ERRORS.with(|e| e.borrow_mut().clear());
    FIRST_ERROR.with(|e| e.borrow_mut().take());
    // SAFETY: resets this thread's libxml2 last-error record; no arguments.
    unsafe { sys::xmlResetLastError() };
}

/// The thread's captured messages (emptying the buffer), reworded.
pub(super) fn take_messages() -> String {
    let mut text = ERRORS.with(|e| std::mem::take(&mut *e.borrow_mut()));
    if text.is_empty() {
        // The usual case (every stage asks): no search for advice to
        // reword (setting up those searches cost an uncached three-stage
        // render 28k instructions).
        return text;
    }
    while text.ends_with('\n') {
        text.pop();
    }
    reword(&text)
}

/// libxslt's recursion errors end in advice for `xsltproc` users
/// ("You can adjust xsltMaxDepth (--maxdepth) in order to raise ...
/// (currently set to 3000).", likewise `--maxvars`): `(advice before the
/// number, after it, what Axle says instead around the number)`.
const ADVICE: &[(&str, &str, &str, &str)] = &[
    (
        " was detected.\nYou can adjust xsltMaxDepth (--maxdepth) in order to raise the maximum \
         number of nested template calls and variables/params (currently set to ",
        ").",
        " was detected: it reached the limit of ",
        " nested template calls and variables/params.",
    ),
    (
        " was detected.\nYou can adjust maxTemplateVars (--maxvars) in order to raise the maximum \
         number of variables/params (currently set to ",
        ").",
        " was detected: it reached the limit of ",
        " variables/params.",
    ),
];

/// `text` with libxslt's advice to use options Axle does not have replaced
/// by the limit that was reached (see [`ADVICE`]). Anything else, and
/// advice in another wording, is left as it is.
pub(super) fn reword(text: &str) -> String {
    let mut out = text.to_string();
    for (before, after, said_before, said_after) in ADVICE {
        let mut from = 0;
        while let Some(found) = out[from..].find(before) {
            let start = from + found;
            let digits_at = start + before.len();
            let digits = out[digits_at..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            let end = digits_at + digits;
            if digits == 0 || !out[end..].starts_with(after) {
                from = digits_at;
                continue;
            }
            let replacement = format!("{said_before}{}{said_after}", &out[digits_at..end]);
            out.replace_range(start..end + after.len(), &replacement);
            from = start + replacement.len();
        }
    }
    out
}

/// Called by the shim with each formatted libxml2/libxslt message.
///
/// # Safety
/// `msg` is NULL or a NUL-terminated string valid for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn axle_error_sink(msg: *const c_char) {
    if msg.is_null() {
        return;
    }
    // SAFETY: the shim passes a NUL-terminated buffer that lives for the call.
    let text = unsafe { CStr::from_ptr(msg) }.to_string_lossy();
    ERRORS.with(|e| {
        if let Ok(mut buf) = e.try_borrow_mut() {
            // Bound the buffer: a runaway xsl:message loop must not eat memory.
            if buf.len() < 64 * 1024 {
                buf.push_str(&text);
            }
        }
    });
}

/// Called by the shim with each structured libxml2 error (parser, XPath,
/// I/O): remembers the first error with its file, line and column, and
/// appends a readable line to the thread's message buffer (with an XPath
/// error's expression and column, [`xpath_line`]).
///
/// # Safety
/// `msg`, `file` and `str1` are NULL or NUL-terminated strings valid for
/// the call.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn axle_structured_sink(
    msg: *const c_char,
    file: *const c_char,
    line: c_int,
    level: c_int,
    domain: c_int,
    str1: *const c_char,
    int1: c_int,
    int2: c_int,
) {
    // Levels: 1 warning, 2 error, 3 fatal. Warnings (such as a refused
    // external load, which leaves an entity empty) do not fail anything.
    if level < 2 {
        return;
    }
    let mut message = opt_string(msg).unwrap_or_default().trim_end().to_string();
    if domain == FROM_XPATH {
        message = xpath_line(&message, opt_string(str1).as_deref(), int1);
    }
    let file = opt_string(file);
    let line = u32::try_from(line).unwrap_or(0);
    // A parser's column (libxml2 counts from 1; 0 is "not known").
    let column = match domain {
        FROM_PARSER if line > 0 => u32::try_from(int2).unwrap_or(0),
        _ => 0,
    };
    let text = match (&file, line, column) {
        (Some(f), l, c) if l > 0 && c > 0 => format!("{f}:{l}:{c}: {message}\n"),
        (Some(f), l, _) if l > 0 => format!("{f}:{l}: {message}\n"),
        (Some(f), _, _) => format!("{f}: {message}\n"),
        (None, _, _) => format!("{message}\n"),
    };
    note(&text);
    FIRST_ERROR.with(|e| {
        if let Ok(mut first) = e.try_borrow_mut() {
            if first.is_none() {
                *first = Some((message, file, line, column));
            }
        }
    });
}

pub(super) fn note(msg: &str) {
    ERRORS.with(|e| {
        if let Ok(mut buf) = e.try_borrow_mut() {
            buf.push_str(msg);
        }
    });
}

pub(super) fn last_parse_error(fallback_file: &str) -> XmlError {
    let first = FIRST_ERROR.with(|e| e.borrow_mut().take());
    let extra = take_messages();
    match first {
        Some((message, file, line, column)) => XmlError::Parse {
            file: file.or_else(|| Some(fallback_file.to_string())),
            line: Some(line).filter(|l| *l > 0),
            column: Some(column).filter(|c| *c > 0 && line > 0),
            message,
        },
        None => XmlError::Parse {
            file: Some(fallback_file.to_string()),
            line: None,
            column: None,
            message: if extra.is_empty() {
                "the document could not be parsed".to_string()
            } else {
                extra
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_xpath_error_names_its_expression_and_character_column() {
        assert_eq!(
            xpath_line("Invalid expression", Some("count(//para"), 12),
            "Invalid expression at column 13 of the XPath expression \"count(//para\""
        );
        // A byte offset past two-byte characters counts characters.
        assert_eq!(
            xpath_line("Invalid expression", Some("'éé' +"), 7),
            "Invalid expression at column 6 of the XPath expression \"'éé' +\""
        );
        assert_eq!(
            xpath_line("Stack usage error", None, 0),
            "Stack usage error"
        );
    }
}
