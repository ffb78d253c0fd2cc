//! The public agent card at `/.well-known/agent-card.json` (and the pre-0.3 alias
//! `/.well-known/agent.json`), with caching headers. It needs no `A2A-Version`: clients read it
//! to find out which versions are served.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use a2a_protocol::AgentCard;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::App;

/// The card as served: its bytes and validators, computed once per router.
pub(crate) struct CardDocument {
    body: axum::body::Bytes,
    etag: HeaderValue,
    last_modified: SystemTime,
    last_modified_header: HeaderValue,
    cache_control: HeaderValue,
}

impl CardDocument {
    /// Serialises `card` and derives its validators. `Last-Modified` is now: the card is built
    /// from configuration when the router is, and cannot change afterwards.
    pub(crate) fn new(card: &AgentCard, max_age: Duration) -> Self {
        let body = serde_json::to_vec(card).expect("an agent card always serialises to JSON");
        // A strong validator that is the same on every instance serving the same card, so a
        // cached copy validates against any Lambda instance: a hash of the bytes, not a
        // random or time-based value.
        let etag = format!("\"{:016x}{:08x}\"", fnv1a64(&body), body.len() as u32);
        // HTTP-dates have whole seconds; truncate so If-Modified-Since compares exactly.
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let last_modified = UNIX_EPOCH + Duration::from_secs(secs);
        Self {
            body: body.into(),
            etag: HeaderValue::from_str(&etag).expect("hex digits are a valid header value"),
            last_modified,
            last_modified_header: HeaderValue::from_str(&httpdate::fmt_http_date(last_modified))
                .expect("an HTTP-date is a valid header value"),
            cache_control: HeaderValue::from_str(&format!("public, max-age={}", max_age.as_secs()))
                .expect("digits are a valid header value"),
        }
    }

    /// Whether the client's cached copy is current (RFC 9110 §13.1: If-None-Match wins over
    /// If-Modified-Since; weak comparison applies to If-None-Match).
    fn not_modified(&self, headers: &HeaderMap) -> bool {
        let if_none_match: Vec<&HeaderValue> =
            headers.get_all(header::IF_NONE_MATCH).iter().collect();
        if !if_none_match.is_empty() {
            let ours = self.etag.to_str().unwrap_or_default();
            return if_none_match
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(|tag| tag.trim().trim_start_matches("W/"))
                .any(|tag| tag == "*" || tag == ours);
        }
        headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| httpdate::parse_http_date(v).ok())
            .is_some_and(|since| self.last_modified <= since)
    }
}

/// 64-bit FNV-1a: tiny, stable across builds and platforms, and plenty for a cache validator
/// (it is not a security boundary).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Adds the card routes; the card itself is in the router's state.
pub(crate) fn mount(router: Router<Arc<App>>) -> Router<Arc<App>> {
    router
        .route("/.well-known/agent-card.json", get(serve))
        .route("/.well-known/agent.json", get(serve))
}

async fn serve(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let Some(card) = app.card.as_ref() else {
        // Not mounted without a card; kept total rather than panicking.
        return StatusCode::NOT_FOUND.into_response();
    };
    let validators = [
        (header::ETAG, card.etag.clone()),
        (header::LAST_MODIFIED, card.last_modified_header.clone()),
        (header::CACHE_CONTROL, card.cache_control.clone()),
    ];
    if card.not_modified(&headers) {
        return (StatusCode::NOT_MODIFIED, validators).into_response();
    }
    (
        StatusCode::OK,
        validators,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        card.body.clone(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
