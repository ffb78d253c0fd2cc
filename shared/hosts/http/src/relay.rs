//! The relay route: where a remote agent that one of our tasks waits for pushes its task's
//! updates (`POST {REST base}/a2a-relay/{taskId}`, the URL of the push config our `call_agent`
//! gave it; `/a2a-relay/{taskId}/{owner}`, the form waits parked before the upgrade gave out,
//! is still taken). It is not an A2A operation and takes none of the deployment's
//! credentials: the push config's token proves the push is for the wait, and an agent like us
//! also signs it (`A2A-Push-Signature`), which is checked against its published keys.

use std::sync::Arc;

use a2a_protocol::push::PUSH_SIGNATURE_HEADER;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use tracing::Instrument as _;

use a2a_core::{RelayAnswer, RelayCheck};

use crate::errors::{json_text_response, HttpError};
use crate::App;

/// The headers a push carries its config's token in (the SDKs read one or the other; ours and
/// a2a-lambda's send both).
const TOKEN_HEADERS: [&str; 2] = ["x-a2a-notification-token", "a2a-notification-token"];

/// Adds the relay route, in both its forms.
pub(crate) fn mount(router: Router<Arc<App>>) -> Router<Arc<App>> {
    let path = format!("{}/{{task_id}}", a2a_core::RELAY_PATH);
    let legacy = format!("{}/{{task_id}}/{{owner}}", a2a_core::RELAY_PATH);
    router
        .route(&path, post(handle))
        .route(&legacy, post(handle_legacy))
}

/// A push to the relay URL of the previous form, which names the task's owner.
async fn handle_legacy(
    State(app): State<Arc<App>>,
    Path((task_id, owner)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    relay(&app, &task_id, Some(&owner), &headers, body).await
}

async fn handle(
    State(app): State<Arc<App>>,
    Path(task_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    relay(&app, &task_id, None, &headers, body).await
}

/// One push: 200 once taken; 401 `{}` for every push not proven to be for one of our waits,
/// alike (no token, a wrong one, a signature that does not verify), whether or not the task
/// exists or waits, the token checked before anything else is read; 410 Gone `{}` when the
/// token holds and no wait of ours follows that remote task any more (our task ended: the
/// sender may stop pushing). The body is read only once the token holds: then 400 for a body
/// that is no A2A task update, 413 past the body limit, 500 when its signature's keys cannot
/// be fetched now (worth a retry).
async fn relay(
    app: &App,
    task_id: &str,
    owner: Option<&str>,
    headers: &HeaderMap,
    body: Body,
) -> Response {
    // A server span in the pusher's trace: the resumption it may cause is its child.
    let span = tracing::trace_span!(
        "relay_push",
        otel.kind = "server",
        a2a.task.id = task_id,
        http.response.status_code = tracing::field::Empty,
    );
    let traceparent = headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .and_then(a2a_core::checked_traceparent);
    a2a_core::set_span_parent(&span, traceparent.as_deref());
    let outcome = async {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let Some(token) = TOKEN_HEADERS.iter().find_map(|name| header(name)) else {
            return Ok(RelayAnswer::Refused);
        };
        let push = match app
            .service
            .authenticate_relay_push(task_id, owner, token)
            .await
            .map_err(HttpError::from)?
        {
            RelayCheck::Push(push) => push,
            RelayCheck::Answer(answer) => return Ok(answer),
        };
        let signature = header(PUSH_SIGNATURE_HEADER);
        let bytes = crate::body::read(headers, body, app.options.max_body_bytes).await?;
        app.service
            .take_relay_push(*push, signature, &bytes)
            .await
            .map_err(HttpError::from)
    }
    .instrument(span.clone())
    .await;
    let response = match outcome {
        Ok(RelayAnswer::Taken) => json_text_response(StatusCode::OK, "{}".into()),
        // Not an A2A error: a webhook's way of saying "stop" (a2a-lambda agents delete the
        // push config on it).
        Ok(RelayAnswer::Gone) => json_text_response(StatusCode::GONE, "{}".into()),
        // The same for every stranger, so it reveals nothing.
        Ok(RelayAnswer::Refused) => json_text_response(StatusCode::UNAUTHORIZED, "{}".into()),
        Err(err) => err.rest_response(),
    };
    span.record("http.response.status_code", response.status().as_u16());
    response
}
