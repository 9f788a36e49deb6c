//! XSLT 1.0 through libxslt (with EXSLT): the Language behind `text/xsl`.

use std::sync::Arc;

use bytes::Bytes;

use super::{Language, LanguageError, Resource, Stage, StageContext, StageData, StageOutput};
use crate::ffi::{OutputSettings, Stylesheet};

/// The XSLT 1.0 Language.
#[derive(Debug, Default, Clone, Copy)]
pub struct Xslt;

impl Language for Xslt {
    fn name(&self) -> &str {
        "xslt"
    }

    fn compile(&self, resource: &Resource<'_>) -> Result<Arc<dyn Stage>, LanguageError> {
        let url = resource.url;
        let resolver = resource.resolver.clone();
        let style = match resource.fragment {
            Some(id) => Stylesheet::compile_embedded(resource.bytes, url, id, resolver)?,
            None => Stylesheet::compile(resource.bytes, url, resolver)?,
        };
        Ok(Arc::new(XsltStage {
            style: Arc::new(style),
        }))
    }
}

/// A compiled stylesheet as a stage.
#[derive(Debug)]
struct XsltStage {
    style: Arc<Stylesheet>,
}

impl Stage for XsltStage {
    fn run(&self, input: StageData, ctx: &StageContext<'_>) -> Result<StageOutput, LanguageError> {
        let doc = input.into_dom_for(ctx)?;
        let result = self.style.transform(
            doc,
            ctx.base_url,
            ctx.params,
            ctx.limits,
            ctx.resolver.clone(),
        )?;
        stage_output(&self.style, result, ctx)
    }
}

/// A transform's result as a stage's output: the response bytes and their
/// Content-Type for the final stage; otherwise the tree, or the text of a
/// text-method stylesheet.
pub(crate) fn stage_output(
    style: &Stylesheet,
    result: crate::ffi::ResultDoc,
    ctx: &StageContext<'_>,
) -> Result<StageOutput, LanguageError> {
    let output = style.output();
    let is_text = output.method.as_deref() == Some("text");
    if ctx.is_final {
        let content_type = content_type(output, result.is_html());
        let bytes = result.serialize()?;
        Ok(StageOutput {
            data: StageData::Bytes(Bytes::from(bytes)),
            content_type: Some(content_type),
        })
    } else if is_text {
        // Text output has no tree form: the next stage gets the text.
        Ok(StageOutput {
            data: StageData::Bytes(Bytes::from(result.serialize()?)),
            content_type: None,
        })
    } else {
        Ok(StageOutput {
            data: StageData::Dom(result.into_doc()),
            content_type: None,
        })
    }
}

/// The Content-Type of a final XSLT stage: `media-type` when given, else by
/// the explicit `method` (`html` → text/html, `text` → text/plain, `xml` →
/// text/xml), else text/html (AxKit's default); the charset is `encoding`,
/// else UTF-8.
pub(crate) fn content_type(output: &OutputSettings, is_html: bool) -> String {
    let mime = match (&output.media_type, output.method.as_deref()) {
        (Some(m), _) => m.as_str(),
        (None, Some("text")) => "text/plain",
        (None, Some("xml")) if !is_html => "text/xml",
        _ => "text/html",
    };
    let charset = output.encoding.as_deref().unwrap_or("UTF-8");
    format!("{mime}; charset={charset}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(method: Option<&str>, media: Option<&str>, enc: Option<&str>) -> OutputSettings {
        OutputSettings {
            method: method.map(Into::into),
            media_type: media.map(Into::into),
            encoding: enc.map(Into::into),
        }
    }

    #[test]
    fn content_types() {
        assert_eq!(
            content_type(&out(None, None, None), false),
            "text/html; charset=UTF-8"
        );
        assert_eq!(
            content_type(&out(Some("text"), None, None), false),
            "text/plain; charset=UTF-8"
        );
        assert_eq!(
            content_type(&out(Some("xml"), None, Some("ISO-8859-1")), false),
            "text/xml; charset=ISO-8859-1"
        );
        assert_eq!(
            content_type(&out(Some("xml"), Some("application/atom+xml"), None), false),
            "application/atom+xml; charset=UTF-8"
        );
        assert_eq!(
            content_type(&out(Some("html"), None, None), true),
            "text/html; charset=UTF-8"
        );
    }
}
