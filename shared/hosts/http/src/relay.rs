//! The relay route: where a remote agent that one of our tasks waits for pushes its task's
//! updates (`POST {REST base}/a2a-relay/{taskId}/{owner}`, the URL of the push config our
//! `call_agent` gave it). It is not an A2A operation and takes none of the deployment's
//! credentials: the push config's token proves the push is for the wait, and an agent like us
//! also signs it (`A2A-Push-Signature`), which is checked against its published keys.

use std::sync::Arc;

use a2a_protocol::push::PUSH_SIGNATURE_HEADER;
use a2a_protocol::A2AError;
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

/// One push: 200 once relayed, 404 (TaskNotFound) for a wrong or missing token or signature,
/// 410 Gone when no execution is at this address any more (our task ended: the sender may
/// stop pushing), 400 for a body that is no A2A task update, 413 past the body limit.
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
            return Err(HttpError::from(A2AError::task_not_found(&task_id)));
        };
        let signature = header(PUSH_SIGNATURE_HEADER);
        let bytes = crate::body::read(&headers, body, app.options.max_body_bytes).await?;
        app.service
            .relay_push(&task_id, &owner, token, signature, &bytes)
            .await
            .map_err(HttpError::from)
    }
    .await;
    match outcome {
        Ok(true) => json_text_response(StatusCode::OK, "{}".into()),
        // Not an A2A error: a webhook's way of saying "stop" (a2a-lambda agents delete the
        // push config on it).
        Ok(false) => json_text_response(StatusCode::GONE, "{}".into()),
        Err(err) => err.rest_response(),
    }
}
