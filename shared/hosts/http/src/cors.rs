//! CORS, so that browser-based A2A clients (the A2A Inspector, web UIs on `@a2a-js/sdk`) can
//! call the agent. Off unless origins are configured.
//!
//! A small function over `http` types rather than tower-http's `CorsLayer`: that layer answers
//! every `OPTIONS` request as a preflight (with 200, and with the allowed methods and headers
//! even for an origin it refuses), where we answer only a real preflight from an allowed
//! origin, with 204, and let everything else through to the router unchanged.

use std::fmt;
use std::str::FromStr;

use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// The request headers A2A clients send (`@a2a-js/sdk` sends `X-A2A-Extensions` to 0.3
/// servers); the API key header, when keys travel in one, is added to these.
const ALLOWED_HEADERS: &[&str] = &[
    "Content-Type",
    "Accept",
    "Authorization",
    "A2A-Version",
    "A2A-Extensions",
    "X-A2A-Extensions",
    "Last-Event-ID",
];

/// The response headers a client reads beyond the ones every browser exposes.
const EXPOSED_HEADERS: &str = "A2A-Version, A2A-Extensions, Content-Type, WWW-Authenticate, ETag";

/// Every method of the A2A HTTP surface.
const ALLOWED_METHODS: &str = "GET, POST, DELETE, OPTIONS";

/// How long a browser may cache a preflight answer, in seconds (Chromium caps it at 7200).
const MAX_AGE_SECS: &str = "7200";

/// Which browser origins may call the agent.
///
/// Parsed from a comma-separated list of origins (`scheme://host[:port]`, matched exactly as
/// browsers send them), or `*` for any origin; an empty text is [`CorsOrigins::Off`]. No
/// credentials mode is ever allowed: API keys and bearer tokens travel in request headers,
/// which the policy allows, not in cookies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CorsOrigins {
    /// No CORS headers, and `OPTIONS` answered as any other unsupported method (the default).
    #[default]
    Off,
    /// Any origin (`Access-Control-Allow-Origin: *`).
    Any,
    /// These origins, normalised (lowercase, without a default port).
    List(Vec<String>),
}

impl CorsOrigins {
    /// Whether any origin is allowed.
    pub fn is_enabled(&self) -> bool {
        !matches!(self, Self::Off)
    }

    /// Whether a request whose `Origin` header is `origin` is allowed (as a browser sends it:
    /// `scheme://host[:port]`, lowercase, no default port).
    pub fn allows(&self, origin: &str) -> bool {
        match self {
            Self::Off => false,
            Self::Any => true,
            Self::List(origins) => origins.iter().any(|o| o == origin),
        }
    }
}

impl FromStr for CorsOrigins {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let entries: Vec<&str> = text
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        if entries.is_empty() {
            return Ok(Self::Off);
        }
        if entries.contains(&"*") {
            if entries.len() > 1 {
                return Err(
                    "CORS origins: `*` allows every origin and cannot be combined with \
                            a list"
                        .into(),
                );
            }
            return Ok(Self::Any);
        }
        let mut origins = Vec::with_capacity(entries.len());
        for entry in entries {
            let origin = normalise_origin(entry)?;
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        Ok(Self::List(origins))
    }
}

impl fmt::Display for CorsOrigins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Off => Ok(()),
            Self::Any => f.write_str("*"),
            Self::List(origins) => f.write_str(&origins.join(",")),
        }
    }
}

/// `entry` as a browser serialises an origin: `scheme://host[:port]`, lowercase, with no
/// default port, path, query or user info.
fn normalise_origin(entry: &str) -> Result<String, String> {
    let bad = |why: &str| {
        format!("CORS origin {entry:?} {why}: expected scheme://host[:port], e.g. https://inspector.example")
    };
    let uri: Uri = entry.parse().map_err(|_| bad("is not a URL"))?;
    let scheme = uri.scheme_str().ok_or_else(|| bad("has no scheme"))?;
    let authority = uri.authority().ok_or_else(|| bad("has no host"))?;
    if authority.as_str().contains('@') {
        return Err(bad("has user info"));
    }
    if uri.query().is_some() || !matches!(uri.path(), "" | "/") || entry.ends_with('#') {
        return Err(bad("has a path"));
    }
    if authority.host().is_empty() {
        return Err(bad("has no host"));
    }
    let scheme = scheme.to_ascii_lowercase();
    let host = authority.host().to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    };
    Ok(match authority.port_u16() {
        Some(port) if Some(port) != default_port => format!("{scheme}://{host}:{port}"),
        _ => format!("{scheme}://{host}"),
    })
}

/// The CORS policy a router applies: the allowed origins and the request headers to allow.
#[derive(Debug, Clone)]
pub(crate) struct Cors {
    origins: CorsOrigins,
    allow_headers: HeaderValue,
}

impl Cors {
    /// The policy for `origins`, allowing also `api_key_header` (the header API keys travel
    /// in, if they do); `None` when CORS is off.
    pub(crate) fn new(origins: &CorsOrigins, api_key_header: Option<&str>) -> Option<Self> {
        if !origins.is_enabled() {
            return None;
        }
        let mut names: Vec<&str> = ALLOWED_HEADERS.to_vec();
        if let Some(name) = api_key_header.map(str::trim).filter(|n| !n.is_empty()) {
            if !names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                names.push(name);
            }
        }
        let allow_headers = HeaderValue::from_str(&names.join(", "))
            .or_else(|_| HeaderValue::from_str(&ALLOWED_HEADERS.join(", ")))
            .expect("the fixed header names are a valid header value");
        Some(Self {
            origins: origins.clone(),
            allow_headers,
        })
    }

    /// The `Access-Control-Allow-Origin` value for a request from `origin` (its `Origin`
    /// header), if that origin is allowed.
    fn allow_origin(&self, origin: Option<&HeaderValue>) -> Option<HeaderValue> {
        match &self.origins {
            CorsOrigins::Off => None,
            CorsOrigins::Any => Some(HeaderValue::from_static("*")),
            CorsOrigins::List(_) => {
                let origin = origin?;
                let text = origin.to_str().ok()?;
                self.origins.allows(text).then(|| origin.clone())
            }
        }
    }

    /// The answer to a preflight from an allowed origin; `None` for any other request, which
    /// goes on to the router. Never asks for credentials: browsers send none on a preflight.
    pub(crate) fn preflight(&self, method: &Method, headers: &HeaderMap) -> Option<Response> {
        if method != Method::OPTIONS
            || !headers.contains_key(header::ORIGIN)
            || !headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
        {
            return None;
        }
        let origin = self.allow_origin(headers.get(header::ORIGIN))?;
        let mut response = StatusCode::NO_CONTENT.into_response();
        let out = response.headers_mut();
        out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        out.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(ALLOWED_METHODS),
        );
        out.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            self.allow_headers.clone(),
        );
        out.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static(MAX_AGE_SECS),
        );
        self.vary(out);
        Some(response)
    }

    /// Adds the CORS headers of an actual request from `origin` (its `Origin` header) to
    /// `response` (success or error, JSON or SSE).
    pub(crate) fn decorate(&self, origin: Option<&HeaderValue>, response: &mut HeaderMap) {
        if let Some(origin) = self.allow_origin(origin) {
            response.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            response.insert(
                header::ACCESS_CONTROL_EXPOSE_HEADERS,
                HeaderValue::from_static(EXPOSED_HEADERS),
            );
        }
        self.vary(response);
    }

    /// With a list, the answer depends on the `Origin`: say so to caches, whatever the origin.
    fn vary(&self, response: &mut HeaderMap) {
        if matches!(self.origins, CorsOrigins::List(_)) {
            vary_origin(response);
        }
    }
}

/// Adds `Vary: Origin` to `response` unless it says so already: for every response whose
/// content depends on the request's `Origin` (allowed, refused, or without one), so that a
/// shared cache never serves one origin's answer to another.
pub fn vary_origin(response: &mut HeaderMap) {
    let named = response
        .get_all(header::VARY)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|name| {
            let name = name.trim();
            name == "*" || name.eq_ignore_ascii_case("origin")
        });
    if !named {
        response.append(header::VARY, HeaderValue::from_static("Origin"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INSPECTOR: &str = "https://inspector.example";

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(n, v)| (n.clone(), HeaderValue::from_str(v).unwrap()))
            .collect()
    }

    fn preflight_from(origin: &str) -> HeaderMap {
        headers(&[
            (header::ORIGIN, origin),
            (header::ACCESS_CONTROL_REQUEST_METHOD, "POST"),
            (
                header::ACCESS_CONTROL_REQUEST_HEADERS,
                "content-type,a2a-version,x-api-key",
            ),
        ])
    }

    fn listed() -> Cors {
        Cors::new(&INSPECTOR.parse().unwrap(), Some("X-API-Key")).unwrap()
    }

    fn cors_headers(map: &HeaderMap) -> Vec<String> {
        map.keys()
            .map(|k| k.as_str().to_owned())
            .filter(|k| k.starts_with("access-control-"))
            .collect()
    }

    #[test]
    fn origins_parse_to_what_browsers_send() {
        assert_eq!("".parse::<CorsOrigins>().unwrap(), CorsOrigins::Off);
        assert_eq!(" , ".parse::<CorsOrigins>().unwrap(), CorsOrigins::Off);
        assert_eq!("*".parse::<CorsOrigins>().unwrap(), CorsOrigins::Any);
        assert_eq!(
            "HTTPS://Inspector.Example:443/, http://localhost:5173,https://inspector.example"
                .parse::<CorsOrigins>()
                .unwrap(),
            CorsOrigins::List(vec![
                INSPECTOR.to_owned(),
                "http://localhost:5173".to_owned()
            ])
        );
        for bad in [
            "*,https://a.example",
            "inspector.example",
            "https://a.example/app",
            "https://a.example?x=1",
            "https://user@a.example",
            "not a url",
        ] {
            let err = bad.parse::<CorsOrigins>().unwrap_err();
            assert!(err.contains("CORS"), "{bad}: {err}");
        }
    }

    #[test]
    fn off_builds_no_policy() {
        assert!(Cors::new(&CorsOrigins::Off, Some("X-API-Key")).is_none());
    }

    #[test]
    fn a_preflight_from_a_listed_origin_is_answered_with_204() {
        let answer = listed()
            .preflight(&Method::OPTIONS, &preflight_from(INSPECTOR))
            .expect("answered");
        assert_eq!(answer.status(), StatusCode::NO_CONTENT);
        let h = answer.headers();
        assert_eq!(h[header::ACCESS_CONTROL_ALLOW_ORIGIN], INSPECTOR);
        assert_eq!(h[header::VARY], "Origin");
        assert_eq!(h[header::ACCESS_CONTROL_ALLOW_METHODS], ALLOWED_METHODS);
        assert_eq!(h[header::ACCESS_CONTROL_MAX_AGE], MAX_AGE_SECS);
        let allowed = h[header::ACCESS_CONTROL_ALLOW_HEADERS].to_str().unwrap();
        for name in [
            "Content-Type",
            "Authorization",
            "A2A-Version",
            "A2A-Extensions",
            "X-API-Key",
            "Last-Event-ID",
        ] {
            assert!(allowed.contains(name), "{name} in {allowed}");
        }
        assert!(!h.contains_key(header::ACCESS_CONTROL_ALLOW_CREDENTIALS));
    }

    #[test]
    fn the_configured_api_key_header_is_allowed() {
        let cors = Cors::new(&CorsOrigins::Any, Some("X-Agent-Key")).unwrap();
        let answer = cors
            .preflight(&Method::OPTIONS, &preflight_from(INSPECTOR))
            .unwrap();
        let allowed = answer.headers()[header::ACCESS_CONTROL_ALLOW_HEADERS]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(allowed.contains("X-Agent-Key"), "{allowed}");
        assert!(!allowed.contains("X-API-Key"), "{allowed}");
    }

    #[test]
    fn a_preflight_from_another_origin_goes_on_to_the_router() {
        let cors = listed();
        for origin in [
            "https://evil.example",
            "http://inspector.example",
            "https://inspector.example:8443",
        ] {
            assert!(cors
                .preflight(&Method::OPTIONS, &preflight_from(origin))
                .is_none());
        }
        // Not a preflight: no Origin, or no requested method.
        let mut plain = preflight_from(INSPECTOR);
        plain.remove(header::ACCESS_CONTROL_REQUEST_METHOD);
        assert!(cors.preflight(&Method::OPTIONS, &plain).is_none());
        let mut no_origin = preflight_from(INSPECTOR);
        no_origin.remove(header::ORIGIN);
        assert!(cors.preflight(&Method::OPTIONS, &no_origin).is_none());
        assert!(cors
            .preflight(&Method::POST, &preflight_from(INSPECTOR))
            .is_none());
    }

    #[test]
    fn actual_requests_from_a_listed_origin_get_the_origin_back() {
        let cors = listed();
        let mut response = HeaderMap::new();
        cors.decorate(Some(&HeaderValue::from_static(INSPECTOR)), &mut response);
        assert_eq!(response[header::ACCESS_CONTROL_ALLOW_ORIGIN], INSPECTOR);
        let exposed = response[header::ACCESS_CONTROL_EXPOSE_HEADERS]
            .to_str()
            .unwrap();
        assert!(exposed.contains("A2A-Version") && exposed.contains("WWW-Authenticate"));
        assert_eq!(response[header::VARY], "Origin");

        let mut other = HeaderMap::new();
        other.insert(header::VARY, HeaderValue::from_static("Accept"));
        cors.decorate(
            Some(&HeaderValue::from_static("https://evil.example")),
            &mut other,
        );
        assert!(cors_headers(&other).is_empty(), "{other:?}");
        // Vary is appended to, not replaced.
        let vary: Vec<_> = other.get_all(header::VARY).iter().collect();
        assert_eq!(vary, ["Accept", "Origin"]);
    }

    #[test]
    fn any_origin_is_a_wildcard_without_vary() {
        let cors = Cors::new(&CorsOrigins::Any, None).unwrap();
        let answer = cors
            .preflight(&Method::OPTIONS, &preflight_from("https://anyone.example"))
            .unwrap();
        assert_eq!(answer.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert!(!answer.headers().contains_key(header::VARY));
        let mut response = HeaderMap::new();
        cors.decorate(None, &mut response);
        assert_eq!(response[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert!(!response.contains_key(header::ACCESS_CONTROL_ALLOW_CREDENTIALS));
    }
}
