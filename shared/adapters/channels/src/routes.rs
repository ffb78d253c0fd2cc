//! The HTTP side of the channels: the chats' requests in, the bridge's answers out.

use std::sync::Arc;

use crate::lite::{DeliveryError, EventTarget, Handled, LiteBridge};
use a2a_protocol::StreamResponse;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{post, put};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::matrix::{room_event, MatrixChannel, RoomEvent, SeenTransactions};
use crate::webhook::{OutgoingWebhook, WEBHOOK_CHANNEL};
use crate::{EVENTS_PATH, MATRIX_CHANNEL, MATRIX_PREFIX, WEBHOOK_PATH};

/// The largest request body of a chat or a push, in bytes (a Matrix transaction holds up to
/// 50 PDUs of at most 64 KiB).
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// What the routes share.
pub(crate) struct Inbound {
    pub(crate) bridge: LiteBridge,
    /// The outgoing-webhook token, when the webhook channel is on.
    pub(crate) webhook_token: Option<String>,
    /// The application service, when the Matrix channel is on.
    pub(crate) matrix: Option<MatrixInbound>,
}

/// The Matrix channel's inbound side.
pub(crate) struct MatrixInbound {
    pub(crate) port: Arc<MatrixChannel>,
    pub(crate) hs_token: String,
    pub(crate) localpart: String,
    pub(crate) seen: SeenTransactions,
}

pub(crate) fn router(inbound: Arc<Inbound>) -> Router {
    let mut router = Router::new().route(EVENTS_PATH, post(events));
    if inbound.webhook_token.is_some() {
        router = router.route(WEBHOOK_PATH, post(webhook));
    }
    if inbound.matrix.is_some() {
        router = router
            .route(
                &format!("{MATRIX_PREFIX}/_matrix/app/v1/transactions/{{txn_id}}"),
                put(transaction),
            )
            .route(&format!("{MATRIX_PREFIX}/_matrix/app/v1/ping"), post(ping));
    }
    router
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(inbound)
}

/// Logs what the bridge did with a message, at the level it deserves.
fn log_handled(channel: &str, handled: &Result<Handled, a2a_protocol::A2AError>) {
    match handled {
        Ok(Handled::Ignored(why)) => tracing::debug!(channel, why, "chat message ignored"),
        Ok(Handled::Refused(why)) => tracing::info!(channel, why, "A2A-Lite message refused"),
        Ok(handled) => tracing::info!(channel, ?handled, "A2A-Lite message"),
        Err(err) => {
            tracing::warn!(channel, error = %err, "A2A-Lite message failed; the chat may deliver it again")
        }
    }
}

/// `POST /a2a-lite/webhook`: the chat's outgoing webhook. A wrong or missing token is 401 and
/// nothing else.
async fn webhook(State(inbound): State<Arc<Inbound>>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(token) = &inbound.webhook_token else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let Some(hook) = OutgoingWebhook::parse(content_type, &body) else {
        // Without a readable body there is no token either.
        return StatusCode::UNAUTHORIZED.into_response();
    };
    if !hook.has_token(token) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Some(message) = hook.message() else {
        return Json(json!({})).into_response();
    };
    let handled = inbound.bridge.receive(WEBHOOK_CHANNEL, message).await;
    log_handled(WEBHOOK_CHANNEL, &handled);
    match handled {
        // The reply goes to the incoming webhook; an empty answer posts nothing more.
        Ok(_) => Json(json!({})).into_response(),
        Err(_) => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}

/// The homeserver's credentials on an application service request: `Authorization: Bearer`
/// (Matrix 1.4 on), else the older `access_token` query parameter.
fn homeserver_token<'a>(headers: &'a HeaderMap, query: Option<&'a str>) -> Option<String> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    bearer.or_else(|| {
        url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .find(|(k, _)| k == "access_token")
            .map(|(_, v)| v.into_owned())
    })
}

fn matrix_error(status: StatusCode, errcode: &str, error: &str) -> Response {
    (status, Json(json!({"errcode": errcode, "error": error}))).into_response()
}

/// The answer to a request without the homeserver's token: 401 without one, 403 with
/// another; `None` when the token is right.
fn homeserver_refusal(
    matrix: &MatrixInbound,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Option<Response> {
    match homeserver_token(headers, query) {
        None => Some(matrix_error(
            StatusCode::UNAUTHORIZED,
            "M_UNAUTHORIZED",
            "missing the homeserver's token",
        )),
        Some(given)
            if aws_lc_rs::constant_time::verify_slices_are_equal(
                given.as_bytes(),
                matrix.hs_token.as_bytes(),
            )
            .is_ok() =>
        {
            None
        }
        Some(_) => Some(matrix_error(
            StatusCode::FORBIDDEN,
            "M_FORBIDDEN",
            "the homeserver's token is wrong",
        )),
    }
}

/// `PUT …/_matrix/app/v1/transactions/{txnId}`: room events, answered `{}` once every event
/// is handled. A failure of ours answers 500, and the homeserver sends the transaction again.
async fn transaction(
    State(inbound): State<Arc<Inbound>>,
    Path(txn_id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(matrix) = &inbound.matrix else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if let Some(refused) = homeserver_refusal(matrix, &headers, query.as_deref()) {
        return refused;
    }
    if matrix.seen.contains(&txn_id) {
        return Json(json!({})).into_response();
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return matrix_error(StatusCode::BAD_REQUEST, "M_BAD_JSON", "not JSON");
    };
    let events = body["events"].as_array().cloned().unwrap_or_default();
    for event in &events {
        match room_event(event, &matrix.localpart) {
            RoomEvent::Invited(room) => {
                if let Err(err) = matrix.port.join(&room).await {
                    tracing::warn!(error = %err, "joining a room the service was invited to failed");
                }
            }
            RoomEvent::Message(message) => {
                let handled = inbound.bridge.receive(MATRIX_CHANNEL, message).await;
                log_handled(MATRIX_CHANNEL, &handled);
                if handled.is_err() {
                    return matrix_error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "M_UNKNOWN",
                        "the bridge could not handle an event; send the transaction again",
                    );
                }
            }
            RoomEvent::Other => {}
        }
    }
    matrix.seen.insert(&txn_id);
    Json(json!({})).into_response()
}

/// `POST …/_matrix/app/v1/ping`: the homeserver checking it can reach the service.
async fn ping(
    State(inbound): State<Arc<Inbound>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let Some(matrix) = &inbound.matrix else {
        return StatusCode::NOT_FOUND.into_response();
    };
    homeserver_refusal(matrix, &headers, query.as_deref())
        .unwrap_or_else(|| Json(json!({})).into_response())
}

/// `POST /a2a-lite/events`: a push of this deployment for a room's task. Its status tells the
/// push pipeline what to do: 200 delivered, 401 not ours, 410 gone (the config is deleted),
/// 503 try again later.
async fn events(
    State(inbound): State<Arc<Inbound>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let token = ["x-a2a-notification-token", "a2a-notification-token"]
        .iter()
        .find_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()))
        .unwrap_or_default();
    let Some(target) = EventTarget::from_query(query.as_deref().unwrap_or_default()) else {
        return StatusCode::UNAUTHORIZED;
    };
    let Ok(event) = serde_json::from_slice::<StreamResponse>(&body) else {
        return StatusCode::BAD_REQUEST;
    };
    match inbound.bridge.deliver(&target, token, &event).await {
        Ok(()) => StatusCode::OK,
        Err(DeliveryError::Unauthorized) => {
            tracing::info!("a push to the A2A-Lite receiver had no valid token");
            StatusCode::UNAUTHORIZED
        }
        Err(DeliveryError::Gone(why)) => {
            tracing::info!(why, "a push for a room's task that is gone");
            StatusCode::GONE
        }
        Err(DeliveryError::Unavailable(why)) => {
            tracing::warn!(
                why,
                "a room could not be told of its task; the push is retried"
            );
            StatusCode::SERVICE_UNAVAILABLE
        }
    }
}
