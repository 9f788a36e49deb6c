//! The MIME type → Language map used to turn `<?xml-stylesheet?>` PIs into
//! stages.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Language, Passthru, Xslt};

/// Maps stylesheet MIME types to Languages.
#[derive(Clone)]
pub struct Registry {
    by_type: HashMap<String, Arc<dyn Language>>,
    /// Types that mean XSLT only when the href ends in `.xsl`/`.xslt`
    /// (`application/xml`, `text/xml`: generic XML types browsers also use).
    xml_types: Vec<String>,
    xslt: Arc<dyn Language>,
    /// The XSP Language with its taglibs (registered for
    /// `application/x-xsp`; [`Registry::add_taglib`] adds to it).
    xsp: super::xsp::Xsp,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut types: Vec<(&str, &str)> = self
            .by_type
            .iter()
            .map(|(t, l)| (t.as_str(), l.name()))
            .collect();
        types.sort_unstable();
        f.debug_struct("Registry").field("types", &types).finish()
    }
}

impl Default for Registry {
    /// XSLT for `text/xsl`, `application/xslt+xml` and `text/xslt`, and for
    /// `application/xml`/`text/xml` with an `.xsl`/`.xslt` href; passthru for
    /// `application/x-axle-passthru`; XSP (with the built-in taglibs) for
    /// `application/x-xsp`.
    fn default() -> Self {
        let xslt: Arc<dyn Language> = Arc::new(Xslt);
        let mut r = Registry {
            by_type: HashMap::new(),
            xml_types: vec!["application/xml".into(), "text/xml".into()],
            xslt: Arc::clone(&xslt),
            xsp: super::xsp::Xsp::default(),
        };
        for t in ["text/xsl", "application/xslt+xml", "text/xslt"] {
            r.by_type.insert(t.to_string(), Arc::clone(&xslt));
        }
        r.by_type.insert(
            "application/x-axle-passthru".to_string(),
            Arc::new(Passthru),
        );
        r.by_type
            .insert(super::xsp::XSP_TYPE.to_string(), Arc::new(r.xsp.clone()));
        r
    }
}

impl Registry {
    /// An empty registry (no types at all).
    pub fn empty() -> Self {
        Registry {
            by_type: HashMap::new(),
            xml_types: Vec::new(),
            xslt: Arc::new(Xslt),
            xsp: super::xsp::Xsp::default(),
        }
    }

    /// Adds `taglib` to the XSP Language, and (re)registers that Language
    /// for `application/x-xsp` (replacing any other Language there).
    pub fn add_taglib(&mut self, taglib: Arc<dyn super::xsp::Taglib>) {
        self.xsp = self.xsp.clone().with_taglib(taglib);
        self.by_type
            .insert(super::xsp::XSP_TYPE.to_string(), Arc::new(self.xsp.clone()));
    }

    /// Maps `mime` (case-insensitive, parameters ignored) to `language`,
    /// replacing any earlier mapping of that type. Refused when a *different*
    /// Language with the same name is registered: names are part of cache
    /// keys, so two Languages sharing one would share cached results.
    pub fn register(
        &mut self,
        mime: &str,
        language: Arc<dyn Language>,
    ) -> Result<&mut Self, RegistryError> {
        let clash = self
            .by_type
            .values()
            .chain(std::iter::once(&self.xslt))
            .find(|l| l.name() == language.name() && !Arc::ptr_eq(l, &language));
        if let Some(existing) = clash {
            // The same Language type registered twice (two instances of one
            // stateless struct) is fine only if it is the very same value.
            return Err(RegistryError::DuplicateName(existing.name().to_string()));
        }
        self.by_type.insert(normalize(mime), language);
        Ok(self)
    }

    /// The registered Language called `name`, if any.
    pub fn by_name(&self, name: &str) -> Option<Arc<dyn Language>> {
        self.by_type
            .values()
            .chain(std::iter::once(&self.xslt))
            .find(|l| l.name() == name)
            .cloned()
    }

    /// The Language for a PI's `type` and `href`, if any.
    pub fn lookup(&self, mime: &str, href: &str) -> Option<Arc<dyn Language>> {
        let mime = normalize(mime);
        if let Some(lang) = self.by_type.get(&mime) {
            return Some(Arc::clone(lang));
        }
        let path = href
            .split(['?', '#'])
            .next()
            .unwrap_or(href)
            .to_ascii_lowercase();
        // An embedded stylesheet (`#id`) with a generic XML type is XSLT:
        // XSLT 1.0 section 2.7's own example uses type="text/xml".
        let embedded = href.starts_with('#');
        if self.xml_types.contains(&mime)
            && (embedded || path.ends_with(".xsl") || path.ends_with(".xslt"))
        {
            return Some(Arc::clone(&self.xslt));
        }
        None
    }
}

/// Why a Language cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// Another Language already uses this name.
    #[error("another Language is already registered under the name '{0}'")]
    DuplicateName(String),
}

fn normalize(mime: &str) -> String {
    mime.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_types() {
        let r = Registry::default();
        assert_eq!(r.lookup("text/xsl", "a.xsl").unwrap().name(), "xslt");
        assert_eq!(
            r.lookup("TEXT/XSL; charset=utf-8", "a").unwrap().name(),
            "xslt"
        );
        assert_eq!(
            r.lookup("application/xslt+xml", "a").unwrap().name(),
            "xslt"
        );
        assert_eq!(
            r.lookup("application/xml", "/s/a.XSL").unwrap().name(),
            "xslt"
        );
        assert!(r.lookup("application/xml", "a.xml").is_none());
        assert!(r.lookup("text/css", "a.css").is_none());
        assert_eq!(
            r.lookup("application/x-axle-passthru", "x").unwrap().name(),
            "passthru"
        );
    }
}
