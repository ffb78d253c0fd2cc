//! What a request says about its caller and its protocol: the `A2A-Version` negotiation, the
//! `A2A-Extensions` it activates, `Last-Event-ID`, and the [`CallContext`] built from them.

use a2a_core::CallContext;
use a2a_protocol::A2AError;
use axum::extract::Query;
use axum::http::{HeaderMap, HeaderName, Uri};

/// `A2A-Version`, as a header and as a query parameter.
const VERSION: &str = "A2A-Version";
static VERSION_HEADER: HeaderName = HeaderName::from_static("a2a-version");
static EXTENSIONS_HEADER: HeaderName = HeaderName::from_static("a2a-extensions");
static LAST_EVENT_ID_HEADER: HeaderName = HeaderName::from_static("last-event-id");

/// The version a request without `A2A-Version` speaks (spec §3.6.2).
const IMPLICIT_VERSION: &str = "0.3";

/// Builds the caller's context. This is the one place where a request becomes a caller:
/// authentication (API key, bearer JWT) will slot in here and return `Unauthenticated` or
/// `PermissionDenied`, or a context with the principal's owner. It is async for that reason.
pub(crate) async fn call_context(
    headers: &HeaderMap,
    tenant: &str,
) -> Result<CallContext, A2AError> {
    let mut ctx = CallContext::anonymous(tenant);
    ctx.extensions = requested_extensions(headers);
    Ok(ctx)
}

/// The extension URIs of every `A2A-Extensions` header (comma-separated lists).
fn requested_extensions(headers: &HeaderMap) -> Vec<String> {
    let mut uris: Vec<String> = Vec::new();
    for value in headers.get_all(&EXTENSIONS_HEADER) {
        let Ok(text) = value.to_str() else { continue };
        for uri in text.split(',').map(str::trim).filter(|u| !u.is_empty()) {
            if !uris.iter().any(|u| u == uri) {
                uris.push(uri.to_string());
            }
        }
    }
    uris
}

/// Checks that the request speaks a version this server serves: any 1.x.
///
/// The version comes from the `A2A-Version` header, else the `A2A-Version` query parameter;
/// missing or empty means 0.3, which is not served.
pub(crate) fn check_version(headers: &HeaderMap, uri: &Uri) -> Result<(), A2AError> {
    let from_header = headers
        .get(&VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned);
    let requested = from_header.or_else(|| version_from_query(uri));
    let Some(requested) = requested else {
        return Err(A2AError::VersionNotSupported(format!(
            "The request has no {VERSION} header, which means protocol version \
             {IMPLICIT_VERSION}; this server speaks A2A 1.0: send {VERSION}: 1.0"
        )));
    };
    let major = requested.split('.').next().unwrap_or_default();
    if major.trim().parse::<u32>() == Ok(1) {
        Ok(())
    } else {
        Err(A2AError::VersionNotSupported(format!(
            "Protocol version {requested:?} is not supported; this server speaks A2A 1.0"
        )))
    }
}

fn version_from_query(uri: &Uri) -> Option<String> {
    // A query string that does not parse carries no version; the operation itself reports
    // malformed parameters it needs.
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri).ok()?;
    pairs
        .into_iter()
        .find(|(k, v)| k.eq_ignore_ascii_case(VERSION) && !v.trim().is_empty())
        .map(|(_, v)| v.trim().to_owned())
}

/// The SSE `Last-Event-ID` header: resume a subscription after that log sequence number.
pub(crate) fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, A2AError> {
    let Some(value) = headers.get(&LAST_EVENT_ID_HEADER) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("\u{fffd}").trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<u64>().map(Some).map_err(|_| {
        A2AError::invalid_params(format!(
            "Last-Event-ID must be a non-negative integer (an event id of this server), got {text:?}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn versions_with_major_one_are_accepted() {
        let uri: Uri = "/x".parse().unwrap();
        for v in ["1.0", "1.0.1", "1.1", " 1.0 "] {
            let h = headers(&[("a2a-version", v)]);
            assert!(check_version(&h, &uri).is_ok(), "{v}");
        }
        for v in ["0.3", "2.0", "abc", ""] {
            let h = headers(&[("a2a-version", v)]);
            assert!(check_version(&h, &uri).is_err(), "{v}");
        }
    }

    #[test]
    fn version_falls_back_to_the_query_parameter() {
        let uri: Uri = "/x?A2A-Version=1.0".parse().unwrap();
        assert!(check_version(&HeaderMap::new(), &uri).is_ok());
        let uri: Uri = "/x?other=1".parse().unwrap();
        assert!(check_version(&HeaderMap::new(), &uri).is_err());
    }

    #[test]
    fn extensions_are_split_and_deduplicated() {
        let h = headers(&[
            ("a2a-extensions", "urn:a, urn:b"),
            ("a2a-extensions", "urn:a,,urn:c"),
        ]);
        assert_eq!(requested_extensions(&h), ["urn:a", "urn:b", "urn:c"]);
    }

    #[test]
    fn last_event_id_parses_or_rejects() {
        assert_eq!(last_event_id(&HeaderMap::new()).unwrap(), None);
        assert_eq!(
            last_event_id(&headers(&[("last-event-id", "7")])).unwrap(),
            Some(7)
        );
        assert!(last_event_id(&headers(&[("last-event-id", "-1")])).is_err());
    }
}
