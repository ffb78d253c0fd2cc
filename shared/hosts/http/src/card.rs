//! The public agent card at `/.well-known/agent-card.json` (with the top-level fields 0.3
//! clients read while 0.3 is on) and at the pre-0.3 path `/.well-known/agent.json` (the early
//! card while the early protocol is on, else the same card), and the push signing keys at `/.well-known/jwks.json`, with
//! caching headers. Neither needs `A2A-Version`: clients read the card to find out which
//! versions are served, and webhook receivers are not A2A clients at all.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use a2a_protocol::AgentCard;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::App;

/// A well-known document as served (the card, the JWKS): its bytes and validators, computed
/// once per router.
pub(crate) struct CardDocument {
    body: axum::body::Bytes,
    content_type: HeaderValue,
    etag: HeaderValue,
    last_modified: SystemTime,
    last_modified_header: HeaderValue,
    cache_control: HeaderValue,
}

impl CardDocument {
    /// A card turned into JSON (with the fields older versions read, if any), and its
    /// validators. `Last-Modified` is now: the card is built from configuration and signed
    /// when the router first serves it, and again only when the signing keys change.
    ///
    /// A signed card's bytes differ between instances (ES256 signatures are randomised), so
    /// its ETag is weak and derived from what the signatures sign and which keys sign it,
    /// never from the signature bytes: every instance serving the same card with the same
    /// keys gives the same validator.
    fn card(card: &serde_json::Value, max_age: Duration) -> Self {
        let body = serde_json::to_vec(card).expect("JSON always serialises");
        let signatures = card.get("signatures").and_then(serde_json::Value::as_array);
        let Some(signatures) = signatures.filter(|s| !s.is_empty()) else {
            return Self::from_bytes(body, "application/json", max_age);
        };
        let mut basis = card.clone();
        if let Some(members) = basis.as_object_mut() {
            members.remove("signatures");
        }
        let mut basis = serde_json::to_vec(&basis).expect("JSON always serialises");
        for signature in signatures {
            basis.extend(
                signature["protected"]
                    .as_str()
                    .unwrap_or_default()
                    .as_bytes(),
            );
        }
        let mut document = Self::from_bytes(body, "application/json", max_age);
        document.etag = etag_of(&basis, true);
        document
    }

    /// The JWKS of the push signing keys: every key, so that a push signed by any of them
    /// verifies while keys rotate. RFC 7517's media type.
    pub(crate) fn jwks(jwks: &impl serde::Serialize, max_age: Duration) -> Self {
        let body = serde_json::to_vec(jwks).expect("a JWK set always serialises to JSON");
        Self::from_bytes(body, "application/jwk-set+json", max_age)
    }

    fn from_bytes(body: Vec<u8>, content_type: &'static str, max_age: Duration) -> Self {
        // A strong validator that is the same on every instance serving the same card, so a
        // cached copy validates against any Lambda instance: a hash of the bytes, not a
        // random or time-based value.
        let etag = etag_of(&body, false);
        // HTTP-dates have whole seconds; truncate so If-Modified-Since compares exactly.
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let last_modified = UNIX_EPOCH + Duration::from_secs(secs);
        Self {
            body: body.into(),
            content_type: HeaderValue::from_static(content_type),
            etag,
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
            let ours = self
                .etag
                .to_str()
                .unwrap_or_default()
                .trim_start_matches("W/");
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

/// A validator of `bytes`: a hash and the length (weak: `W/` before it).
fn etag_of(bytes: &[u8], weak: bool) -> HeaderValue {
    let weak = if weak { "W/" } else { "" };
    let etag = format!(
        "{weak}\"{:016x}{:08x}\"",
        fnv1a64(bytes),
        bytes.len() as u32
    );
    HeaderValue::from_str(&etag).expect("hex digits are a valid header value")
}

/// 64-bit FNV-1a: tiny, stable across builds and platforms, and plenty for a cache validator
/// (it is not a security boundary).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Where python-a2a's streaming client looks for the early card (besides `/.well-known/agent.json`).
pub const EARLY_CARD_ALT_PATH: &str = "/agent.json";

/// Adds the card routes, and the JWKS route if the service signs pushes; the documents
/// themselves are in the router's state.
pub(crate) fn mount(router: Router<Arc<App>>, jwks: bool, early: bool) -> Router<Arc<App>> {
    let mut router = router
        .route("/.well-known/agent-card.json", get(serve_card))
        .route("/.well-known/agent.json", get(serve_early_card));
    if early {
        // python-a2a's streaming client looks for the early card here.
        router = router.route(EARLY_CARD_ALT_PATH, get(serve_early_card));
    }
    if jwks {
        router.route(a2a_protocol::push::JWKS_PATH, get(serve_jwks))
    } else {
        router
    }
}

/// `/.well-known/agent-card.json`, negotiated like any request: a client that says
/// `A2A-Version: 1.x` (the 1.0 SDKs do, on the card too) gets the plain 1.0 card; one that says
/// nothing means 0.3 and gets the card with the 0.3 fields as well. The two cannot be one
/// document: 0.3 parsers need `"type"` in each security scheme, and the JS 1.x resolver reads a
/// card whose first scheme has a `"type"` as a 0.3-era card and misses its 1.0 schemes.
async fn serve_card(State(app): State<Arc<App>>, headers: HeaderMap, uri: Uri) -> Response {
    let speaks_1 = crate::context::requested_version(&headers, &uri)
        .and_then(|v| v.split('.').next()?.trim().parse::<u32>().ok())
        .is_some_and(|major| major >= 1);
    let Some(cards) = &app.cards else {
        return serve(None, &headers);
    };
    let documents = cards.documents(&app.service).await;
    let document = match &documents.card_v1 {
        Some(v1) if speaks_1 => v1,
        _ => &documents.card,
    };
    let mut response = serve(Some(document), &headers);
    if documents.card_v1.is_some() {
        response
            .headers_mut()
            .insert(header::VARY, HeaderValue::from_static("A2A-Version"));
    }
    response
}

/// `/.well-known/agent.json`: the early card while the early protocol is on, else the card.
async fn serve_early_card(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let Some(cards) = &app.cards else {
        return serve(None, &headers);
    };
    let documents = cards.documents(&app.service).await;
    serve(
        Some(documents.early_card.as_ref().unwrap_or(&documents.card)),
        &headers,
    )
}

/// The card's documents as served, built from the service's signed cards, again whenever
/// those change (a key rotation).
pub(crate) struct Cards {
    older_versions: a2a_core::OlderVersions,
    max_age: Duration,
    /// This server's JSON-RPC path, which the card's JSON-RPC URL ends with.
    jsonrpc_path: String,
    built: std::sync::Mutex<Option<(Arc<a2a_core::SignedCards>, Arc<Documents>)>>,
}

/// The card in each form it is served in.
pub(crate) struct Documents {
    /// `/.well-known/agent-card.json`: with the 0.3 fields too while 0.3 is on.
    card: CardDocument,
    /// The plain 1.0 card, for requests that say `A2A-Version: 1.x`, while 0.3 is on.
    card_v1: Option<CardDocument>,
    /// The early protocol's card (`/.well-known/agent.json`), while it is on.
    early_card: Option<CardDocument>,
}

impl Cards {
    pub(crate) fn new(
        older_versions: a2a_core::OlderVersions,
        max_age: Duration,
        jsonrpc_path: &str,
    ) -> Self {
        Self {
            older_versions,
            max_age,
            jsonrpc_path: jsonrpc_path.to_owned(),
            built: std::sync::Mutex::new(None),
        }
    }

    async fn documents(&self, service: &a2a_core::A2aService) -> Arc<Documents> {
        let signed = service.signed_cards().await;
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((cards, documents)) = built.as_ref() {
            if Arc::ptr_eq(cards, &signed) {
                return documents.clone();
            }
        }
        let documents = Arc::new(self.build(&signed.card));
        *built = Some((signed, documents.clone()));
        documents
    }

    fn build(&self, card: &AgentCard) -> Documents {
        let json = serde_json::to_value(card).unwrap_or_default();
        let plain = CardDocument::card(&json, self.max_age);
        let (card_doc, card_v1) = if self.older_versions.v0_3 {
            // The signatures cover the 1.0 card: a verifier reads the 1.0 members it knows.
            let v03 = a2a_protocol::compat::v03_card(json.clone());
            (CardDocument::card(&v03, self.max_age), Some(plain))
        } else {
            (plain, None)
        };
        let early_card = self.older_versions.early.then(|| {
            let jsonrpc_url = card
                .supported_interfaces
                .iter()
                .find(|i| i.protocol_binding == a2a_protocol::BINDING_JSONRPC)
                .map(|i| i.url.clone())
                .unwrap_or_default();
            // Early clients know no signatures, and the early card is not what they sign.
            let mut unsigned = json.clone();
            if let Some(members) = unsigned.as_object_mut() {
                members.remove("signatures");
            }
            let url = early_url(&jsonrpc_url, &self.jsonrpc_path);
            let early = a2a_protocol::compat::early_card(unsigned, &url);
            CardDocument::card(&early, self.max_age)
        });
        Documents {
            card: card_doc,
            card_v1,
            early_card,
        }
    }
}

/// Where an early client that follows the early card posts every method: Hexagon's `POST
/// /tasks` beside the JSON-RPC endpoint, which serves the early methods alone and answers each
/// in the early dialect, as an early SDK's server would. (The JSON-RPC endpoint answers the
/// names 0.3 shares with the early protocol, `tasks/get`, `tasks/cancel`,
/// `tasks/resubscribe`, in 0.3 with the early fields too: it cannot tell the two clients
/// apart.) The JSON-RPC URL itself when it does not end with this server's JSON-RPC path.
fn early_url(jsonrpc_url: &str, jsonrpc_path: &str) -> String {
    let url = jsonrpc_url.trim_end_matches('/');
    let path = jsonrpc_path.trim_end_matches('/');
    match url.strip_suffix(path) {
        Some(base) if !url.is_empty() => format!("{base}{}", crate::EARLY_JSONRPC_PATHS[0]),
        _ => jsonrpc_url.to_owned(),
    }
}

async fn serve_jwks(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    match &app.jwks {
        Some(jwks) => serve(Some(&*jwks.document().await), &headers),
        None => serve(None, &headers),
    }
}

/// The JWKS as served: the signer's current keys (they may rotate while the instance runs),
/// serialised once per key set.
pub(crate) struct Jwks {
    signer: a2a_core::PushSigner,
    max_age: Duration,
    built: std::sync::Mutex<Option<(Arc<a2a_core::KeySet>, Arc<CardDocument>)>>,
}

impl Jwks {
    pub(crate) fn new(signer: a2a_core::PushSigner, max_age: Duration) -> Self {
        Self {
            signer,
            max_age,
            built: std::sync::Mutex::new(None),
        }
    }

    /// The document of the current keys. Without keys (none generated yet, an unreadable or
    /// broken key set) it is an empty set: the card and the JWKS stay up, and the function
    /// that signs reports the problem.
    async fn document(&self) -> Arc<CardDocument> {
        let keys = match self.signer.keys().await {
            Ok(keys) => keys,
            Err(err) => {
                // The load that failed logged why; a deployment that never pushed has none.
                tracing::debug!(error = %err, "no push signing keys to publish; serving an empty JWKS");
                let empty = serde_json::json!({ "keys": [] });
                // Not to be cached: the first key may exist by the next request.
                return Arc::new(CardDocument::jwks(&empty, Duration::ZERO));
            }
        };
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((set, document)) = built.as_ref() {
            if Arc::ptr_eq(set, &keys) {
                return document.clone();
            }
        }
        let document = Arc::new(CardDocument::jwks(&keys.jwks(), self.max_age));
        *built = Some((keys, document.clone()));
        document
    }
}

fn serve(document: Option<&CardDocument>, headers: &HeaderMap) -> Response {
    let Some(card) = document else {
        // Not mounted without the document; kept total rather than panicking.
        return StatusCode::NOT_FOUND.into_response();
    };
    let validators = [
        (header::ETAG, card.etag.clone()),
        (header::LAST_MODIFIED, card.last_modified_header.clone()),
        (header::CACHE_CONTROL, card.cache_control.clone()),
    ];
    if card.not_modified(headers) {
        return (StatusCode::NOT_MODIFIED, validators).into_response();
    }
    (
        StatusCode::OK,
        validators,
        [(header::CONTENT_TYPE, card.content_type.clone())],
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
