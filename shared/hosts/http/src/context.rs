//! What a request says about its caller and its protocol: its credentials (turned into a
//! [`Principal`] by the deployment's [`Auth`]), the `A2A-Version` negotiation, the
//! `A2A-Extensions` it activates, `Last-Event-ID`, and the [`CallContext`] built from them.

use a2a_core::ApiKeyLocation;
use a2a_core::{Auth, CallContext, Credentials, Principal};
use a2a_protocol::{A2AError, ProtocolVersion};
use axum::extract::Query;
use axum::http::{header, HeaderMap, HeaderName, Uri};

/// `A2A-Version`, as a header and as a query parameter.
pub(crate) const VERSION: &str = "A2A-Version";
static VERSION_HEADER: HeaderName = HeaderName::from_static("a2a-version");
static EXTENSIONS_HEADER: HeaderName = HeaderName::from_static("a2a-extensions");
static LAST_EVENT_ID_HEADER: HeaderName = HeaderName::from_static("last-event-id");
/// The W3C trace context of the request (checked; a malformed one is ignored).
static TRACEPARENT_HEADER: HeaderName = HeaderName::from_static("traceparent");

/// The version a request without `A2A-Version` speaks (spec §3.6.2).
const IMPLICIT_VERSION: &str = "0.3";

/// Authenticates the request: finds its credentials where the deployment's auth mode expects
/// them (`Authorization`, or the API key's header or query parameter) and checks them.
/// `Unauthenticated` if they are missing or invalid. Runs before anything else about the
/// request is looked at, so an unauthenticated caller learns nothing.
pub(crate) async fn authenticate(
    auth: &Auth,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<Principal, A2AError> {
    if !auth.is_enabled() {
        return Ok(Principal::anonymous());
    }
    // A header that is not visible ASCII cannot hold a valid credential; it counts as present
    // (and so is refused as malformed rather than as missing).
    let authorization = headers
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or("\u{fffd}"));
    let query_key;
    let api_key = match auth.api_key_location() {
        Some((ApiKeyLocation::Header, name)) => {
            headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"))
        }
        Some((ApiKeyLocation::Query, name)) => {
            query_key = query_value(uri, name);
            query_key.as_deref()
        }
        None => None,
    };
    auth.authenticate(Credentials {
        authorization,
        api_key,
    })
    .await
}

/// Builds the caller's context: the one place where a request becomes a caller. The owner
/// every read and write is scoped to comes from the authenticated principal and the tenant,
/// so a tenant only partitions a principal's own tasks and never grants access by itself.
pub(crate) fn call_context(
    principal: &Principal,
    headers: &HeaderMap,
    tenant: &str,
) -> CallContext {
    let traceparent = headers
        .get(&TRACEPARENT_HEADER)
        .and_then(|v| v.to_str().ok());
    let mut ctx = CallContext::new(principal, tenant).traced(traceparent);
    ctx.extensions = requested_extensions(headers);
    ctx
}

/// The value of query parameter `name`, if present.
fn query_value(uri: &Uri, name: &str) -> Option<String> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri).ok()?;
    pairs.into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
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

/// Checks that the request speaks a version this server serves: any 1.x. The A2A 1.1 draft
/// when it asks for it (or for a later 1.x, served as 1.1), else 1.0.
///
/// The version comes from the `A2A-Version` header, else the `A2A-Version` query parameter;
/// missing or empty means 0.3, which is not served.
pub(crate) fn check_version(headers: &HeaderMap, uri: &Uri) -> Result<ProtocolVersion, A2AError> {
    let Some(requested) = requested_version(headers, uri) else {
        return Err(A2AError::VersionNotSupported(format!(
            "The request has no {VERSION} header, which means protocol version \
             {IMPLICIT_VERSION}; this server speaks A2A 1.0: send {VERSION}: 1.0"
        )));
    };
    let mut parts = requested.split('.').map(|p| p.trim().parse::<u32>());
    if parts.next() == Some(Ok(1)) {
        Ok(match parts.next() {
            Some(Ok(minor)) if minor >= 1 => ProtocolVersion::V1_1,
            _ => ProtocolVersion::V1_0,
        })
    } else {
        Err(A2AError::VersionNotSupported(format!(
            "Protocol version {requested:?} is not supported; this server speaks A2A 1.0"
        )))
    }
}

/// The version the request names: the `A2A-Version` header, else the query parameter; `None`
/// when both are absent or empty (which means 0.3).
pub(crate) fn requested_version(headers: &HeaderMap, uri: &Uri) -> Option<String> {
    let from_header = headers
        .get(&VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned);
    from_header.or_else(|| version_from_query(uri))
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
        for (v, version) in [
            ("1.0", ProtocolVersion::V1_0),
            ("1.0.1", ProtocolVersion::V1_0),
            ("1.1", ProtocolVersion::V1_1),
            (" 1.0 ", ProtocolVersion::V1_0),
            ("1.2", ProtocolVersion::V1_1),
            ("1", ProtocolVersion::V1_0),
        ] {
            let h = headers(&[("a2a-version", v)]);
            assert_eq!(check_version(&h, &uri), Ok(version), "{v}");
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
