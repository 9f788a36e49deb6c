//! The identity Language: hands its input on unchanged. Useful to test
//! chains and as the smallest example of a Language.

use std::sync::Arc;

use super::{Language, LanguageError, Resource, Stage, StageContext, StageData, StageOutput};

/// Returns its input unchanged (its resource is only required to exist).
#[derive(Debug, Default, Clone, Copy)]
pub struct Passthru;

impl Language for Passthru {
    fn name(&self) -> &str {
        "passthru"
    }

    fn compile(&self, _resource: &Resource<'_>) -> Result<Arc<dyn Stage>, LanguageError> {
        Ok(Arc::new(Passthru))
    }
}

impl Stage for Passthru {
    fn run(&self, input: StageData, ctx: &StageContext<'_>) -> Result<StageOutput, LanguageError> {
        let data = if ctx.is_final {
            StageData::Bytes(input.into_bytes()?)
        } else {
            input
        };
        let content_type = ctx.is_final.then(|| "text/xml; charset=UTF-8".to_string());
        Ok(StageOutput { data, content_type })
    }
}
