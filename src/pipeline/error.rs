//! Why a render fails: [`PipelineError`], and how a stage's failure is
//! reported (the source's own parse error is the document's fault, not the
//! stage's). Kept apart so the HTTP layer's error mapping has one small
//! place to read.

use crate::chain::ChainError;
use crate::ffi::{Exceeded, XmlError};
use crate::language::LanguageError;
use crate::pool::PoolError;
use crate::provider::ProviderError;

use super::job::ChainJob;

/// Why a document could not be rendered.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PipelineError {
    /// The source could not be located or read.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The chain names a stylesheet that is missing or not allowed.
    #[error(transparent)]
    Chain(#[from] ChainError),
    /// The source document is not well-formed.
    #[error("{document} is not well-formed XML: {error}")]
    Source {
        /// Root-relative path.
        document: String,
        /// The parser's report.
        error: XmlError,
    },
    /// A stage's resource (stylesheet) does not compile.
    #[error("{stylesheet} cannot be used: {error}")]
    Compile {
        /// Root-relative path of the stylesheet.
        stylesheet: String,
        /// Why.
        error: LanguageError,
    },
    /// A stage failed while running.
    #[error("stage {stage} ({stylesheet}) failed: {error}")]
    Stage {
        /// 1-based stage number.
        stage: usize,
        /// Root-relative path of its stylesheet.
        stylesheet: String,
        /// Why.
        error: LanguageError,
    },
    /// The transform pool failed (a panic: a bug).
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// The transform threads are busy and the queue is full, or renders of
    /// this URL hold their turn (503, with `Retry-After`).
    #[error("the server is busy: {0}")]
    Busy(String),
    /// The render was stopped: past its deadline (504), over its memory
    /// budget (500), or its client went away.
    #[error("the render was stopped: {} ({limit})", stopped_reason(*why))]
    Stopped {
        /// Why.
        why: Exceeded,
        /// The limit it hit, as configured.
        limit: String,
    },
    /// A document or its chain is beyond a configured limit (chain
    /// length, nested renders, source or output size).
    #[error("{0}")]
    Limit(String),
    /// The source changed while it was being rendered (retried internally).
    #[error("{0} changed while it was being rendered")]
    SourceChanged(String),
    /// A client's document does what a client's document may not (names
    /// an external DTD or entity, passes a parse limit, chooses a stage
    /// it may not): the client's error.
    #[error("{document} was refused: {reason}")]
    Refused {
        /// Root-relative path (the request's URL).
        document: String,
        /// Why, naming the rule or limit.
        reason: String,
    },
}

impl PipelineError {
    /// A client's document `document` its parse refused: not well-formed
    /// ([`PipelineError::Source`]), or past a rule or limit.
    pub(super) fn refused(document: String, refusal: crate::ffi::Refusal) -> PipelineError {
        match refusal {
            crate::ffi::Refusal::Malformed(error) => PipelineError::Source { document, error },
            other => PipelineError::Refused {
                document,
                reason: other.to_string(),
            },
        }
    }
}

fn stopped_reason(why: Exceeded) -> &'static str {
    match why {
        Exceeded::Deadline => "it took longer than a render may",
        Exceeded::Memory => "it needed more memory than a render may have",
        Exceeded::Cancelled => "its client went away",
    }
}

impl ChainJob {
    pub(super) fn stage_error(&self, index: usize, error: LanguageError) -> PipelineError {
        if index == 0 {
            let document = || decoded(&self.base_url);
            match &error {
                LanguageError::Xml(e @ XmlError::Parse { .. })
                    if is_source_error(e, &self.base_url) =>
                {
                    return PipelineError::Source {
                        document: document(),
                        error: e.clone(),
                    };
                }
                LanguageError::NotWellFormed { line, message } => {
                    let error = XmlError::Parse {
                        file: Some(document()),
                        line: *line,
                        column: None,
                        message: message.clone(),
                    };
                    return PipelineError::Source {
                        document: document(),
                        error,
                    };
                }
                _ => {}
            }
        }
        PipelineError::Stage {
            stage: index + 1,
            stylesheet: self.stages[index].rel.clone(),
            error,
        }
    }
}

fn is_source_error(e: &XmlError, base_url: &str) -> bool {
    matches!(e, XmlError::Parse { file: Some(f), .. } if f == base_url)
}

pub(super) fn decoded(url: &str) -> String {
    percent_encoding::percent_decode_str(url)
        .decode_utf8_lossy()
        .into_owned()
}
