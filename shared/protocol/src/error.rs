//! One error type for every binding: each variant knows its JSON-RPC code, its HTTP status and
//! its `google.rpc.ErrorInfo` reason (digest §5).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The `ErrorInfo.domain` of every A2A error.
pub const A2A_ERROR_DOMAIN: &str = "a2a-protocol.org";
const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// An A2A or JSON-RPC error. The message is what the client sees; it never carries internals.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum A2AError {
    /// No such task (or not the caller's): TaskNotFoundError, -32001 / 404.
    #[error("Task not found: {task_id}")]
    TaskNotFound {
        /// The task asked for.
        task_id: String,
    },
    /// TaskNotFound on the wire (the spec's error for an unknown push config id), with a
    /// message that names the config: the task itself may well exist.
    #[error("Push notification config {config_id} not found for task {task_id}")]
    PushConfigNotFound {
        /// The task asked for.
        task_id: String,
        /// The push config asked for.
        config_id: String,
    },
    /// The task cannot be canceled in its state: TaskNotCancelableError, -32002 / 409.
    #[error("Task {task_id} cannot be canceled: it is {state}")]
    TaskNotCancelable {
        /// The task asked for.
        task_id: String,
        /// The state it is in.
        state: String,
    },
    /// Push notifications are off: PushNotificationNotSupportedError, -32003 / 400.
    #[error("Push notifications are not supported by this agent")]
    PushNotificationNotSupported,
    /// The operation is not supported: UnsupportedOperationError, -32004 / 400.
    #[error("{0}")]
    UnsupportedOperation(String),
    /// A media type the agent does not handle: ContentTypeNotSupportedError, -32005 / 415.
    #[error("{0}")]
    ContentTypeNotSupported(String),
    /// The agent answered with something invalid: InvalidAgentResponseError, -32006 / 502.
    #[error("{0}")]
    InvalidAgentResponse(String),
    /// No extended card: ExtendedAgentCardNotConfiguredError, -32007 / 400.
    #[error("The extended agent card is not configured")]
    ExtendedAgentCardNotConfigured,
    /// A required extension was not activated: ExtensionSupportRequiredError, -32008 / 400.
    #[error("{0}")]
    ExtensionSupportRequired(String),
    /// The requested `A2A-Version` is not served: VersionNotSupportedError, -32009 / 400.
    #[error("{0}")]
    VersionNotSupported(String),
    /// The body is not JSON: -32700 / 400.
    #[error("{0}")]
    ParseError(String),
    /// Not a valid request: -32600 / 400.
    #[error("{0}")]
    InvalidRequest(String),
    /// No such method or route: -32601 / 404.
    #[error("{0}")]
    MethodNotFound(String),
    /// A parameter is missing or wrong: -32602 / 400.
    #[error("{0}")]
    InvalidParams(String),
    /// The server failed; the message never carries internals: -32603 / 500.
    #[error("{0}")]
    Internal(String),
    /// Credentials are missing or invalid: -31401 / 401.
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller lacks the permission: -31403 / 403.
    #[error("{0}")]
    PermissionDenied(String),
    /// The request is larger than the server accepts: 413.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// A2A 1.1 (draft): a follow-up's `ifGenerationMatch` is not the task's generation:
    /// TaskGenerationMismatchError, -32010 / 409.
    #[error("Task generation mismatch: expected {expected} but the current generation of task {task_id} is {current}")]
    TaskGenerationMismatch {
        /// The task the message was for.
        task_id: String,
        /// The client's `ifGenerationMatch`.
        expected: i64,
        /// The task's generation when the message came.
        current: i64,
    },
}

impl A2AError {
    /// An `InvalidParams` error (-32602 / 400).
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::InvalidParams(message.into())
    }

    /// An `UnsupportedOperation` error (-32004 / 400).
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::UnsupportedOperation(message.into())
    }

    /// A `TaskNotFound` error (-32001 / 404).
    pub fn task_not_found(task_id: impl Into<String>) -> Self {
        Self::TaskNotFound {
            task_id: task_id.into(),
        }
    }

    /// The text the client sees.
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// The JSON-RPC error code.
    pub fn json_rpc_code(&self) -> i64 {
        match self {
            Self::TaskNotFound { .. } | Self::PushConfigNotFound { .. } => -32001,
            Self::TaskNotCancelable { .. } => -32002,
            Self::PushNotificationNotSupported => -32003,
            Self::UnsupportedOperation(_) => -32004,
            Self::ContentTypeNotSupported(_) => -32005,
            Self::InvalidAgentResponse(_) => -32006,
            Self::ExtendedAgentCardNotConfigured => -32007,
            Self::ExtensionSupportRequired(_) => -32008,
            Self::VersionNotSupported(_) => -32009,
            Self::TaskGenerationMismatch { .. } => -32010,
            Self::ParseError(_) => -32700,
            Self::InvalidRequest(_) => -32600,
            Self::MethodNotFound(_) => -32601,
            Self::InvalidParams(_) | Self::PayloadTooLarge(_) => -32602,
            Self::Internal(_) => -32603,
            // Transport-level auth errors; Go uses these custom codes on JSON-RPC.
            Self::Unauthenticated(_) => -31401,
            Self::PermissionDenied(_) => -31403,
        }
    }

    /// The HTTP status for the REST binding.
    pub fn http_status(&self) -> u16 {
        match self {
            Self::TaskNotFound { .. }
            | Self::PushConfigNotFound { .. }
            | Self::MethodNotFound(_) => 404,
            Self::InvalidAgentResponse(_) | Self::Internal(_) => 500,
            Self::Unauthenticated(_) => 401,
            Self::PermissionDenied(_) => 403,
            Self::PayloadTooLarge(_) => 413,
            Self::TaskGenerationMismatch { .. } => 409,
            Self::ContentTypeNotSupported(_) => 400,
            _ => 400,
        }
    }

    /// The `google.rpc.Code` name for `Status.status`.
    pub fn grpc_status(&self) -> &'static str {
        match self {
            Self::TaskNotFound { .. } | Self::PushConfigNotFound { .. } => "NOT_FOUND",
            Self::MethodNotFound(_) => "NOT_FOUND",
            Self::TaskNotCancelable { .. }
            | Self::PushNotificationNotSupported
            | Self::UnsupportedOperation(_)
            | Self::ExtendedAgentCardNotConfigured
            | Self::ExtensionSupportRequired(_)
            | Self::VersionNotSupported(_) => "FAILED_PRECONDITION",
            Self::ContentTypeNotSupported(_)
            | Self::ParseError(_)
            | Self::InvalidRequest(_)
            | Self::InvalidParams(_) => "INVALID_ARGUMENT",
            Self::PayloadTooLarge(_) => "RESOURCE_EXHAUSTED",
            Self::TaskGenerationMismatch { .. } => "ABORTED",
            Self::InvalidAgentResponse(_) | Self::Internal(_) => "INTERNAL",
            Self::Unauthenticated(_) => "UNAUTHENTICATED",
            Self::PermissionDenied(_) => "PERMISSION_DENIED",
        }
    }

    /// The `ErrorInfo.reason`: the error name in UPPER_SNAKE_CASE without `Error`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::TaskNotFound { .. } | Self::PushConfigNotFound { .. } => "TASK_NOT_FOUND",
            Self::TaskNotCancelable { .. } => "TASK_NOT_CANCELABLE",
            Self::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            Self::UnsupportedOperation(_) => "UNSUPPORTED_OPERATION",
            Self::ContentTypeNotSupported(_) => "CONTENT_TYPE_NOT_SUPPORTED",
            Self::InvalidAgentResponse(_) => "INVALID_AGENT_RESPONSE",
            Self::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            Self::ExtensionSupportRequired(_) => "EXTENSION_SUPPORT_REQUIRED",
            Self::VersionNotSupported(_) => "VERSION_NOT_SUPPORTED",
            Self::TaskGenerationMismatch { .. } => "TASK_GENERATION_MISMATCH",
            Self::ParseError(_) => "PARSE_ERROR",
            Self::InvalidRequest(_) => "INVALID_REQUEST",
            Self::MethodNotFound(_) => "METHOD_NOT_FOUND",
            Self::InvalidParams(_) => "INVALID_PARAMS",
            Self::PayloadTooLarge(_) => "PAYLOAD_TOO_LARGE",
            Self::Internal(_) => "INTERNAL_ERROR",
            Self::Unauthenticated(_) => "UNAUTHENTICATED",
            Self::PermissionDenied(_) => "PERMISSION_DENIED",
        }
    }

    /// The `ErrorInfo` detail.
    pub fn error_info(&self) -> ErrorInfo {
        let mut metadata = BTreeMap::new();
        match self {
            Self::TaskNotFound { task_id } => {
                metadata.insert("taskId".to_string(), task_id.clone());
            }
            Self::PushConfigNotFound { task_id, config_id } => {
                metadata.insert("taskId".to_string(), task_id.clone());
                metadata.insert("pushNotificationConfigId".to_string(), config_id.clone());
            }
            Self::TaskNotCancelable { task_id, state } => {
                metadata.insert("taskId".to_string(), task_id.clone());
                metadata.insert("state".to_string(), state.clone());
            }
            Self::TaskGenerationMismatch {
                task_id,
                expected,
                current,
            } => {
                metadata.insert("taskId".to_string(), task_id.clone());
                metadata.insert("expectedGeneration".to_string(), expected.to_string());
                metadata.insert("currentGeneration".to_string(), current.to_string());
            }
            _ => {}
        }
        ErrorInfo {
            type_url: ERROR_INFO_TYPE.to_string(),
            reason: self.reason().to_string(),
            domain: A2A_ERROR_DOMAIN.to_string(),
            metadata,
        }
    }

    /// The JSON-RPC `error` object: `{code, message, data: [ErrorInfo]}`.
    pub fn to_json_rpc_error(&self) -> Value {
        json!({
            "code": self.json_rpc_code(),
            "message": self.message(),
            "data": [self.error_info()],
        })
    }

    /// The REST error body: a `google.rpc.Status` in ProtoJSON.
    pub fn to_status_body(&self) -> Value {
        json!({
            "error": {
                "code": self.http_status(),
                "status": self.grpc_status(),
                "message": self.message(),
                "details": [self.error_info()],
            }
        })
    }

    /// Rebuilds an error from a JSON-RPC `error` object (used by clients and tests).
    pub fn from_json_rpc_error(error: &Value) -> Self {
        let message = error["message"].as_str().unwrap_or_default().to_string();
        let task_id = error["data"][0]["metadata"]["taskId"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match error["code"].as_i64().unwrap_or_default() {
            -32001 => Self::TaskNotFound { task_id },
            -32002 => Self::TaskNotCancelable {
                task_id,
                state: String::new(),
            },
            -32003 => Self::PushNotificationNotSupported,
            -32004 => Self::UnsupportedOperation(message),
            -32005 => Self::ContentTypeNotSupported(message),
            -32006 => Self::InvalidAgentResponse(message),
            -32007 => Self::ExtendedAgentCardNotConfigured,
            -32008 => Self::ExtensionSupportRequired(message),
            -32009 => Self::VersionNotSupported(message),
            -32010 => {
                let generation = |name: &str| {
                    error["data"][0]["metadata"][name]
                        .as_str()
                        .and_then(|g| g.parse().ok())
                        .unwrap_or_default()
                };
                Self::TaskGenerationMismatch {
                    expected: generation("expectedGeneration"),
                    current: generation("currentGeneration"),
                    task_id,
                }
            }
            -32700 => Self::ParseError(message),
            -32600 => Self::InvalidRequest(message),
            -32601 => Self::MethodNotFound(message),
            -32602 => Self::InvalidParams(message),
            -31401 => Self::Unauthenticated(message),
            -31403 => Self::PermissionDenied(message),
            _ => Self::Internal(message),
        }
    }
}

/// `google.rpc.ErrorInfo` with its `@type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// `@type`: always `type.googleapis.com/google.rpc.ErrorInfo`.
    #[serde(rename = "@type")]
    pub type_url: String,
    /// The error's name in UPPER_SNAKE_CASE (`TASK_NOT_FOUND`).
    pub reason: String,
    /// The error's domain: `a2a-protocol.org` for A2A errors.
    pub domain: String,
    /// Details of this occurrence (the task id, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<(A2AError, i64, u16, &'static str)> {
        vec![
            (
                A2AError::task_not_found("t1"),
                -32001,
                404,
                "TASK_NOT_FOUND",
            ),
            (
                A2AError::TaskNotCancelable {
                    task_id: "t1".into(),
                    state: "TASK_STATE_COMPLETED".into(),
                },
                -32002,
                400,
                "TASK_NOT_CANCELABLE",
            ),
            (
                A2AError::PushNotificationNotSupported,
                -32003,
                400,
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ),
            (
                A2AError::unsupported("x"),
                -32004,
                400,
                "UNSUPPORTED_OPERATION",
            ),
            (
                A2AError::ContentTypeNotSupported("x".into()),
                -32005,
                400,
                "CONTENT_TYPE_NOT_SUPPORTED",
            ),
            (
                A2AError::InvalidAgentResponse("x".into()),
                -32006,
                500,
                "INVALID_AGENT_RESPONSE",
            ),
            (
                A2AError::ExtendedAgentCardNotConfigured,
                -32007,
                400,
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ),
            (
                A2AError::ExtensionSupportRequired("x".into()),
                -32008,
                400,
                "EXTENSION_SUPPORT_REQUIRED",
            ),
            (
                A2AError::VersionNotSupported("x".into()),
                -32009,
                400,
                "VERSION_NOT_SUPPORTED",
            ),
            (
                A2AError::PushConfigNotFound {
                    task_id: "t".into(),
                    config_id: "c".into(),
                },
                -32001,
                404,
                "TASK_NOT_FOUND",
            ),
            (A2AError::ParseError("x".into()), -32700, 400, "PARSE_ERROR"),
            (
                A2AError::InvalidRequest("x".into()),
                -32600,
                400,
                "INVALID_REQUEST",
            ),
            (
                A2AError::MethodNotFound("x".into()),
                -32601,
                404,
                "METHOD_NOT_FOUND",
            ),
            (A2AError::invalid_params("x"), -32602, 400, "INVALID_PARAMS"),
            (
                A2AError::Internal("Internal error".into()),
                -32603,
                500,
                "INTERNAL_ERROR",
            ),
            (
                A2AError::PayloadTooLarge("x".into()),
                -32602,
                413,
                "PAYLOAD_TOO_LARGE",
            ),
            (
                A2AError::TaskGenerationMismatch {
                    task_id: "t1".into(),
                    expected: 3,
                    current: 5,
                },
                -32010,
                409,
                "TASK_GENERATION_MISMATCH",
            ),
        ]
    }

    #[test]
    fn every_error_maps_to_its_code_status_and_reason() {
        for (err, code, status, reason) in all() {
            assert_eq!(err.json_rpc_code(), code, "{err:?}");
            assert_eq!(err.http_status(), status, "{err:?}");
            let rpc = err.to_json_rpc_error();
            assert_eq!(rpc["code"], code);
            assert_eq!(rpc["data"][0]["reason"], reason);
            assert_eq!(rpc["data"][0]["domain"], A2A_ERROR_DOMAIN);
            assert_eq!(
                rpc["data"][0]["@type"],
                "type.googleapis.com/google.rpc.ErrorInfo"
            );
            assert_eq!(
                rpc.as_object().unwrap().len(),
                3,
                "only code, message, data"
            );
            let rest = err.to_status_body();
            assert_eq!(rest["error"]["code"], status);
            assert_eq!(rest["error"]["status"], err.grpc_status());
            assert_eq!(rest["error"]["details"][0]["reason"], reason);
        }
    }

    #[test]
    fn json_rpc_errors_parse_back() {
        for (err, ..) in all() {
            let back = A2AError::from_json_rpc_error(&err.to_json_rpc_error());
            assert_eq!(back.json_rpc_code(), err.json_rpc_code());
        }
        let nf =
            A2AError::from_json_rpc_error(&A2AError::task_not_found("abc").to_json_rpc_error());
        assert_eq!(nf, A2AError::task_not_found("abc"));
    }

    #[test]
    fn error_info_metadata_names_the_task() {
        let body = A2AError::task_not_found("t9").to_status_body();
        assert_eq!(body["error"]["details"][0]["metadata"]["taskId"], "t9");
    }
}
