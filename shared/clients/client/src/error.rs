//! What a call can fail with: an A2A error the agent answered with, or a failure of the
//! transport around it.

use a2a_protocol::A2AError;
use serde_json::{json, Value};

/// An error answer of the agent, decoded, with the wire form kept for callers that need it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentError {
    /// The A2A error.
    pub error: A2AError,
    /// The HTTP status it came with (200 for a JSON-RPC error, unless authentication failed).
    pub http_status: u16,
    /// `ErrorInfo.reason`, when the answer had one.
    pub reason: Option<String>,
    /// What came over the wire: the JSON-RPC `error` object, or the REST `google.rpc.Status`
    /// body (`{"error": {…}}`).
    pub body: Value,
    /// The `WWW-Authenticate` challenge, if the answer had one.
    pub www_authenticate: Option<String>,
}

impl AgentError {
    /// The A2A name of the error (`TaskNotFoundError`, `InvalidParamsError`, …).
    pub fn name(&self) -> &'static str {
        error_name(&self.error)
    }

    /// The message the agent sent.
    pub fn message(&self) -> String {
        let from_wire = self.body["message"]
            .as_str()
            .or_else(|| self.body["error"]["message"].as_str());
        from_wire.map_or_else(|| self.error.message(), str::to_string)
    }
}

/// Everything a client call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The agent answered with an A2A error.
    #[error("{}: {}", .0.name(), .0.message())]
    Agent(Box<AgentError>),
    /// The agent answered with an HTTP error that is not an A2A error (a proxy's 502, a 404 of
    /// a server that is no agent).
    #[error("HTTP {status}: {body}")]
    HttpStatus {
        /// The status.
        status: u16,
        /// The body, as JSON when it is JSON, else as a JSON string.
        body: Value,
        /// The `WWW-Authenticate` challenge, if any.
        www_authenticate: Option<String>,
    },
    /// The request could not be sent or its answer not read (connection refused or reset).
    #[error("transport: {0}")]
    Transport(#[from] reqwest::Error),
    /// Something did not finish within its timeout: `what` says what it was (a call, a card
    /// fetch, a stream that stayed silent or did not end).
    #[error("{what}: timed out after {}", seconds(.after))]
    Timeout {
        /// What timed out.
        what: String,
        /// The timeout.
        after: std::time::Duration,
    },
    /// The agent sent more than a limit allows (see [`crate::Limits`]); nothing more of it was
    /// read.
    #[error("{what} is larger than the {limit} limit of {bytes} bytes")]
    TooLarge {
        /// What was too large (the answer to an operation, an SSE event, a stream, a card).
        what: String,
        /// Which limit it exceeded.
        limit: Limit,
        /// The limit, in bytes.
        bytes: u64,
    },
    /// The agent asked for a request to go to another origin (a redirect, or a card naming its
    /// interface elsewhere) while credentials are set for this one: not followed, so that they
    /// go nowhere else (see [`crate::ClientBuilder::share_credentials`]).
    #[error("{0}")]
    OtherOrigin(String),
    /// The answer is not what the protocol says it must be.
    #[error("invalid response: {0}")]
    InvalidResponse(String),
    /// No usable agent card, or no interface this client speaks.
    #[error("agent card: {0}")]
    Card(String),
    /// Credentials could not be obtained (the OAuth2 token endpoint failed).
    #[error("authentication: {0}")]
    Auth(String),
    /// The client was configured or called wrongly (a bad URL, a missing id).
    #[error("{0}")]
    Usage(String),
}

/// The size limits of [`crate::Limits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// [`crate::Limits::max_body_bytes`]: an answer that is not a stream, a card.
    Body,
    /// [`crate::Limits::max_event_bytes`]: one SSE event, or one line of one.
    Event,
    /// [`crate::Limits::max_stream_bytes`]: all of a stream, reconnects included.
    Stream,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Body => "body size",
            Self::Event => "event size",
            Self::Stream => "stream size",
        })
    }
}

/// A duration as people write it: `300 s`, `1.5 s`.
fn seconds(d: &std::time::Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

impl Error {
    /// The agent's A2A error, if that is what this is.
    pub fn agent_error(&self) -> Option<&AgentError> {
        match self {
            Self::Agent(e) => Some(e),
            _ => None,
        }
    }

    /// Whether a retry of an idempotent call may succeed: the connection failed, the call timed
    /// out, or a gateway said it is overloaded or unavailable. A2A errors are answers, never
    /// retried.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Transport(e) => e.is_connect() || e.is_timeout() || e.is_request(),
            Self::Timeout { .. } => true,
            Self::HttpStatus { status, .. } => matches!(status, 429 | 502 | 503 | 504),
            _ => false,
        }
    }
}

/// The A2A name of an error, as the spec spells it.
pub fn error_name(error: &A2AError) -> &'static str {
    match error {
        // A missing push config is TaskNotFound on the wire, in every version.
        A2AError::TaskNotFound { .. } | A2AError::PushConfigNotFound { .. } => "TaskNotFoundError",
        A2AError::TaskNotCancelable { .. } => "TaskNotCancelableError",
        A2AError::PushNotificationNotSupported => "PushNotificationNotSupportedError",
        A2AError::UnsupportedOperation(_) => "UnsupportedOperationError",
        A2AError::ContentTypeNotSupported(_) => "ContentTypeNotSupportedError",
        A2AError::InvalidAgentResponse(_) => "InvalidAgentResponseError",
        A2AError::ExtendedAgentCardNotConfigured => "ExtendedAgentCardNotConfiguredError",
        A2AError::ExtensionSupportRequired(_) => "ExtensionSupportRequiredError",
        A2AError::VersionNotSupported(_) => "VersionNotSupportedError",
        A2AError::ParseError(_) => "JSONParseError",
        A2AError::InvalidRequest(_) => "InvalidRequestError",
        A2AError::MethodNotFound(_) => "MethodNotFoundError",
        A2AError::InvalidParams(_) => "InvalidParamsError",
        A2AError::Internal(_) => "InternalError",
        A2AError::Unauthenticated(_) => "UnauthenticatedError",
        A2AError::PermissionDenied(_) => "PermissionDeniedError",
        A2AError::PayloadTooLarge(_) => "PayloadTooLargeError",
        A2AError::TaskGenerationMismatch { .. } => "TaskGenerationMismatchError",
    }
}

fn error_info_reason(details: &Value) -> Option<String> {
    details.as_array()?.iter().find_map(|d| {
        (d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
            .then(|| d["reason"].as_str().map(str::to_string))
            .flatten()
    })
}

/// The JSON-RPC code of an `ErrorInfo.reason` (the REST binding carries no code).
fn code_of_reason(reason: &str) -> Option<i64> {
    Some(match reason {
        "TASK_NOT_FOUND" => -32001,
        "TASK_NOT_CANCELABLE" => -32002,
        "PUSH_NOTIFICATION_NOT_SUPPORTED" => -32003,
        "UNSUPPORTED_OPERATION" => -32004,
        "CONTENT_TYPE_NOT_SUPPORTED" | "UNSUPPORTED_CONTENT_TYPE" => -32005,
        "INVALID_AGENT_RESPONSE" => -32006,
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED" => -32007,
        "EXTENSION_SUPPORT_REQUIRED" => -32008,
        "VERSION_NOT_SUPPORTED" => -32009,
        "TASK_GENERATION_MISMATCH" => -32010,
        "PARSE_ERROR" => -32700,
        "INVALID_REQUEST" => -32600,
        "METHOD_NOT_FOUND" => -32601,
        "INVALID_PARAMS" => -32602,
        "INTERNAL_ERROR" => -32603,
        "UNAUTHENTICATED" => -31401,
        "PERMISSION_DENIED" => -31403,
        _ => return None,
    })
}

/// Decodes a JSON-RPC `error` object.
pub(crate) fn from_json_rpc(error: &Value, http_status: u16) -> AgentError {
    AgentError {
        error: A2AError::from_json_rpc_error(error),
        http_status,
        reason: error_info_reason(&error["data"]),
        body: error.clone(),
        www_authenticate: None,
    }
}

/// Decodes a REST error body (`google.rpc.Status`), if it is one.
pub(crate) fn from_status_body(status: u16, body: &Value) -> Option<AgentError> {
    let error = body.get("error")?;
    if !error.is_object() {
        return None;
    }
    let reason = error_info_reason(&error["details"]);
    let code = reason
        .as_deref()
        .and_then(code_of_reason)
        .unwrap_or(match status {
            401 => -31401,
            403 => -31403,
            404 => -32001,
            400 => -32602,
            _ => -32603,
        });
    let as_rpc = json!({
        "code": code,
        "message": error["message"],
        "data": error["details"],
    });
    Some(AgentError {
        error: A2AError::from_json_rpc_error(&as_rpc),
        http_status: status,
        reason,
        body: body.clone(),
        www_authenticate: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rest_errors_decode_by_their_reason() {
        let body = A2AError::task_not_found("t1").to_status_body();
        let e = from_status_body(404, &body).unwrap();
        assert_eq!(e.error, A2AError::task_not_found("t1"));
        assert_eq!(e.reason.as_deref(), Some("TASK_NOT_FOUND"));
        assert_eq!(e.name(), "TaskNotFoundError");
        assert_eq!(from_status_body(502, &json!("Bad gateway")), None);
    }

    #[test]
    fn json_rpc_errors_keep_their_message() {
        let wire = A2AError::invalid_params("message is required").to_json_rpc_error();
        let e = from_json_rpc(&wire, 200);
        assert_eq!(e.message(), "message is required");
        assert_eq!(
            Error::Agent(Box::new(e)).to_string(),
            "InvalidParamsError: message is required"
        );
    }
}
