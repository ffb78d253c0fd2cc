//! The relay route: where a remote agent that one of our tasks waits for pushes its task's
//! updates (`POST {REST base}/a2a-relay/{taskId}/{owner}`, the URL of the push config our
//! `call_agent` gave it). It is not an A2A operation and takes none of the deployment's
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

use crate::errors::{json_text_response, HttpError};
use crate::App;

/// The headers a push carries its config's token in (the SDKs read one or the other; ours and
/// a2a-lambda's send both).
const TOKEN_HEADERS: [&str; 2] = ["x-a2a-notification-token", "a2a-notification-token"];

/// Adds the relay route.
pub(crate) fn mount(router: Router<Arc<App>>) -> Router<Arc<App>> {
    let path = format!("{}/{{task_id}}/{{owner}}", a2a_core::RELAY_PATH);
    router.route(&path, post(handle))
}

/// One push: 200 once relayed; 410 Gone `{}` for every push not proven to be for one of our
/// waits, alike: no token, a wrong one, a signature that does not verify, no execution at this
/// address (never, or no more: our task ended, the sender may stop pushing). Nothing tells a
/// task that waits from one that does not. The token is checked before the body is read; a
/// push whose token holds then gets 400 for a body that is no A2A task update, 413 past the
/// body limit, 500 when its signature's keys cannot be fetched now (worth a retry).
async fn handle(
    State(app): State<Arc<App>>,
    Path((task_id, owner)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let outcome = async {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|v| !v.is_empty())
        };
        let Some(token) = TOKEN_HEADERS.iter().find_map(|name| header(name)) else {
            return Ok(false);
        };
        let Some(push) = app
            .service
            .authenticate_relay_push(&task_id, &owner, token)
            .await
            .map_err(HttpError::from)?
        else {
            return Ok(false);
        };
        let signature = header(PUSH_SIGNATURE_HEADER);
        let bytes = crate::body::read(&headers, body, app.options.max_body_bytes).await?;
        app.service
            .take_relay_push(push, signature, &bytes)
            .await
            .map_err(HttpError::from)
    }
    .await;
    match outcome {
        Ok(true) => json_text_response(StatusCode::OK, "{}".into()),
        // Not an A2A error: a webhook's way of saying "stop" (a2a-lambda agents delete the
        // push config on it). The same for every refusal, so it reveals nothing.
        Ok(false) => json_text_response(StatusCode::GONE, "{}".into()),
        Err(err) => err.rest_response(),
    }
}
