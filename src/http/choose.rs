//! Style and media choosers: from a request to a [`Selection`].
//!
//! Style, first found wins: the URL (`/doc.xml/STYLE` path info, or the
//! `/doc.xml.STYLE` suffix), the query string (`?style=`, key
//! configurable), a cookie, the User-Agent map, the location's default.
//! Media: the first media rule that matches `User-Agent`/`Accept` (AxKit's
//! WAP check by default), else the location's default.

use axum::http::header;

use super::conn::Headers;
use crate::chain::Selection;
use crate::site::Location;

/// The chosen selection, and whether the style came from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// Style and media.
    pub selection: Selection,
    /// Did the request itself (URL, query, cookie) name the style?
    pub from_client: bool,
}

/// Chooses style and media for a request.
pub fn choose(
    location: &Location,
    headers: &impl Headers,
    query: &[(String, String)],
    url_style: Option<String>,
) -> Chosen {
    let header = |name| headers.first(&name).unwrap_or("");
    // Read only when a rule needs them (this runs on every request).
    let user_agent = || header(header::USER_AGENT);
    let from_query = location
        .style_key
        .as_ref()
        .and_then(|key| query.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()));
    let from_cookie = location
        .style_cookie
        .as_ref()
        .and_then(|name| cookie(headers, name));
    let client = url_style
        .or(from_query)
        .or(from_cookie)
        .filter(|s| !s.is_empty());
    let from_client = client.is_some();
    let style = client
        .or_else(|| {
            if location.ua_styles.is_empty() {
                return None;
            }
            let user_agent = user_agent();
            location
                .ua_styles
                .iter()
                .find(|r| r.pattern.is_match(user_agent))
                .map(|r| r.style.clone())
        })
        .or_else(|| location.style.clone());
    let media = if location.media_rules.is_empty() {
        location.media.clone()
    } else {
        let (user_agent, accept) = (user_agent(), header(header::ACCEPT));
        location
            .media_rules
            .iter()
            .find(|r| r.matches(user_agent, accept))
            .map_or_else(|| location.media.clone(), |r| r.media.clone())
    };
    Chosen {
        selection: Selection { style, media },
        from_client,
    }
}

/// The value of cookie `name`, if sent.
fn cookie(headers: &impl Headers, name: &str) -> Option<String> {
    headers
        .each(&header::COOKIE)
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| {
            percent_encoding::percent_decode_str(v.trim_matches('"'))
                .decode_utf8_lossy()
                .into_owned()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Registry;
    use crate::site::SiteConfig;
    use axum::http::HeaderMap;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn url_beats_query_beats_cookie_beats_user_agent_beats_default() {
        let site = SiteConfig::parse(
            "[location.\"/\"]\nstyle = \"fancy\"\nuser-agent-styles = [{ pattern = \"Lynx\", style = \"text\" }]\n",
            std::path::Path::new("axle.toml"),
            Registry::default(),
        )
        .unwrap();
        let l = site.location("/d.xml");
        let q = vec![("style".to_string(), "print".to_string())];
        let h = headers(&[
            ("cookie", "a=1; axkit_preferred_style=big"),
            ("user-agent", "Lynx/2.8"),
        ]);
        let pick = |h: &HeaderMap, q: &[(String, String)], url: Option<&str>| {
            choose(&l, h, q, url.map(String::from)).selection.style
        };
        assert_eq!(pick(&h, &q, Some("url")).as_deref(), Some("url"));
        assert_eq!(pick(&h, &q, None).as_deref(), Some("print"));
        assert_eq!(pick(&h, &[], None).as_deref(), Some("big"));
        assert_eq!(
            pick(&headers(&[("user-agent", "Lynx/2.8")]), &[], None).as_deref(),
            Some("text")
        );
        assert_eq!(pick(&HeaderMap::new(), &[], None).as_deref(), Some("fancy"));
        assert!(!choose(&l, &HeaderMap::new(), &[], None).from_client);
        assert!(choose(&l, &h, &[], None).from_client);
    }

    #[test]
    fn wap_clients_get_handheld_media() {
        let site = SiteConfig::defaults(Registry::default());
        let l = site.location("/d.xml");
        let media = |h: &HeaderMap| choose(&l, h, &[], None).selection.media;
        assert_eq!(media(&HeaderMap::new()), "screen");
        assert_eq!(
            media(&headers(&[("user-agent", "Nokia6230/2.0")])),
            "handheld"
        );
        assert_eq!(
            media(&headers(&[("accept", "text/vnd.wap.wml, */*")])),
            "handheld"
        );
        assert_eq!(media(&headers(&[("user-agent", "Mozilla/5.0")])), "screen");
    }
}
