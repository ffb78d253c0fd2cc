//! Errors as the HTTP layer answers them.

use a2a_core::{Auth, Permission};
use a2a_protocol::A2AError;
use a2a_protocol::Operation;
use axum::http::{header, HeaderValue, Method as HttpMethod, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// An A2A error with the HTTP status the REST binding answers with.
///
/// The status is normally `error.http_status()`. The transport-level checks override it where
/// HTTP has a better code than the A2A error table: 415 for a request Content-Type (the A2A
/// `ContentTypeNotSupported` is about message parts, and is 400), 405 for a wrong method.
#[derive(Debug, Clone)]
pub(crate) struct HttpError {
    pub(crate) error: A2AError,
    pub(crate) status: StatusCode,
}

impl HttpError {
    /// `error` answered with `status` instead of its own.
    pub(crate) fn with_status(error: A2AError, status: StatusCode) -> Self {
        Self { error, status }
    }

    /// The REST answer: the status and a `google.rpc.Status` body whose `code` matches it.
    pub(crate) fn rest_response(&self) -> Response {
        let mut body = self.error.to_status_body();
        body["error"]["code"] = Value::from(self.status.as_u16());
        if self.status == StatusCode::METHOD_NOT_ALLOWED {
            // Not an A2A error, so there is no gRPC code for it in the table; UNIMPLEMENTED is
            // what gRPC transcoding uses for an unsupported HTTP method.
            body["error"]["status"] = Value::from("UNIMPLEMENTED");
        }
        json_response(self.status, &body)
    }
}

impl From<A2AError> for HttpError {
    fn from(error: A2AError) -> Self {
        let status =
            StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Self { error, status }
    }
}

/// A JSON response with `Content-Type: application/json`.
/// A response with `body`, JSON already serialised.
pub(crate) fn json_text_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    // Serialising a `Value` cannot fail: its map keys are strings.
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        bytes,
    )
        .into_response()
}

/// Whether `error` is an authentication or authorization failure: answered with HTTP 401 or
/// 403 on both bindings, with a `WWW-Authenticate` challenge.
pub(crate) fn is_auth_failure(error: &A2AError) -> bool {
    matches!(
        error,
        A2AError::Unauthenticated(_) | A2AError::PermissionDenied(_)
    )
}

/// Adds the `WWW-Authenticate` challenge of `auth` to the answer to an auth failure of
/// `operation` (RFC 9110 §11.6.1 requires one on every 401).
pub(crate) fn with_challenge(
    mut response: Response,
    auth: &Auth,
    error: &A2AError,
    operation: Option<Operation>,
) -> Response {
    let permission = operation.map(Permission::for_operation);
    if let Some(value) = auth
        .challenge(error, permission)
        .and_then(|c| HeaderValue::from_str(&c).ok())
    {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The generic error for a failure that must not show its details to the client.
pub(crate) fn internal(context: &str, err: impl std::fmt::Display) -> A2AError {
    tracing::error!(%err, context, "internal error");
    A2AError::Internal("Internal error".into())
}

/// Fallback for paths no route matches: 404 with a Status body.
pub(crate) async fn not_found(method: HttpMethod, uri: Uri) -> Response {
    HttpError::from(A2AError::MethodNotFound(format!(
        "No A2A operation at {method} {}",
        uri.path()
    )))
    .rest_response()
}

/// Fallback for a known path with the wrong HTTP method: 405 with a Status body.
pub(crate) async fn method_not_allowed(method: HttpMethod, uri: Uri) -> Response {
    HttpError::with_status(
        A2AError::MethodNotFound(format!(
            "The HTTP method {method} is not allowed on {}",
            uri.path()
        )),
        StatusCode::METHOD_NOT_ALLOWED,
    )
    .rest_response()
}
