//! The request and the answer of one operation as every front door hands them over: decoded
//! from JSON ([`OperationRequest::from_json`]) and answered as one ProtoJSON value or a stream
//! ([`Reply`]).

use a2a_protocol::jsonrpc::Params;
use a2a_protocol::{
    A2AError, AgentCard, CancelTaskRequest, GetExtendedAgentCardRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, Operation, SendMessageRequest, SendMessageResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig, TaskPushNotificationConfigRef,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::task_log::{internal, EventStream};

/// The decoded request of one operation.
#[derive(Debug, Clone)]
pub enum OperationRequest {
    /// `SendMessage`.
    SendMessage(SendMessageRequest),
    /// `SendStreamingMessage`.
    SendStreamingMessage(SendMessageRequest),
    /// `GetTask`.
    GetTask(GetTaskRequest),
    /// `ListTasks`.
    ListTasks(ListTasksRequest),
    /// `CancelTask`.
    CancelTask(CancelTaskRequest),
    /// `SubscribeToTask`, with the `Last-Event-ID` to resume after, if any.
    SubscribeToTask(SubscribeToTaskRequest, Option<u64>),
    /// `CreateTaskPushNotificationConfig`.
    CreateTaskPushNotificationConfig(TaskPushNotificationConfig),
    /// `GetTaskPushNotificationConfig`.
    GetTaskPushNotificationConfig(TaskPushNotificationConfigRef),
    /// `ListTaskPushNotificationConfigs`.
    ListTaskPushNotificationConfigs(ListTaskPushNotificationConfigsRequest),
    /// `DeleteTaskPushNotificationConfig`.
    DeleteTaskPushNotificationConfig(TaskPushNotificationConfigRef),
    /// `GetExtendedAgentCard`.
    GetExtendedAgentCard(GetExtendedAgentCardRequest),
}

impl OperationRequest {
    /// Decodes the request of `operation` from its JSON object (JSON-RPC `params`, or what the
    /// REST binding built from path, query and body). Unknown fields are ignored; a field of the
    /// wrong type is `InvalidParams` naming the field.
    pub fn from_json(
        operation: Operation,
        params: Value,
        last_event_id: Option<u64>,
    ) -> Result<Self, A2AError> {
        Self::read(operation, params, last_event_id)
    }

    /// Decodes the request of `operation` from a JSON-RPC call's params: text straight into
    /// its type, and, when that fails, through [`OperationRequest::from_json`], whose errors
    /// name the field (a typed reading of the text would name a line and column instead).
    pub fn from_params(
        operation: Operation,
        params: Params<'_>,
        last_event_id: Option<u64>,
    ) -> Result<Self, A2AError> {
        let raw = match params {
            Params::Parsed(value) => return Self::from_json(operation, value, last_event_id),
            Params::Text(raw) => raw,
        };
        match Self::read(operation, Text(raw.get()), last_event_id) {
            Ok(request) => Ok(request),
            Err(Unread) => {
                Self::from_json(operation, Params::Text(raw).into_value()?, last_event_id)
            }
        }
    }

    /// The request of `operation`, read from `p`: the one place that says which request
    /// type each operation reads.
    fn read<S: RequestSource>(
        operation: Operation,
        p: S,
        last_event_id: Option<u64>,
    ) -> Result<Self, S::Error> {
        use Operation as O;
        Ok(match operation {
            O::SendMessage => Self::SendMessage(p.read(operation)?),
            O::SendStreamingMessage => Self::SendStreamingMessage(p.read(operation)?),
            O::GetTask => Self::GetTask(p.read(operation)?),
            O::ListTasks => Self::ListTasks(p.read(operation)?),
            O::CancelTask => Self::CancelTask(p.read(operation)?),
            O::SubscribeToTask => Self::SubscribeToTask(p.read(operation)?, last_event_id),
            O::CreateTaskPushNotificationConfig => {
                Self::CreateTaskPushNotificationConfig(p.read(operation)?)
            }
            O::GetTaskPushNotificationConfig => {
                Self::GetTaskPushNotificationConfig(p.read(operation)?)
            }
            O::ListTaskPushNotificationConfigs => {
                Self::ListTaskPushNotificationConfigs(p.read(operation)?)
            }
            O::DeleteTaskPushNotificationConfig => {
                Self::DeleteTaskPushNotificationConfig(p.read(operation)?)
            }
            O::GetExtendedAgentCard => Self::GetExtendedAgentCard(p.read(operation)?),
        })
    }

    /// Sets the request's `tenant`, so the service sees one tenant whichever binding (params or
    /// path) supplied it.
    pub fn set_tenant(&mut self, tenant: &str) {
        tenant.clone_into(self.tenant_mut());
    }

    /// The request's `tenant` (empty when none was given).
    pub fn tenant_mut(&mut self) -> &mut String {
        match self {
            Self::SendMessage(r) | Self::SendStreamingMessage(r) => &mut r.tenant,
            Self::GetTask(r) => &mut r.tenant,
            Self::ListTasks(r) => &mut r.tenant,
            Self::CancelTask(r) => &mut r.tenant,
            Self::SubscribeToTask(r, _) => &mut r.tenant,
            Self::CreateTaskPushNotificationConfig(r) => &mut r.tenant,
            Self::GetTaskPushNotificationConfig(r) | Self::DeleteTaskPushNotificationConfig(r) => {
                &mut r.tenant
            }
            Self::ListTaskPushNotificationConfigs(r) => &mut r.tenant,
            Self::GetExtendedAgentCard(r) => &mut r.tenant,
        }
    }

    /// The operation.
    pub fn operation(&self) -> Operation {
        use Operation as O;
        match self {
            Self::SendMessage(_) => O::SendMessage,
            Self::SendStreamingMessage(_) => O::SendStreamingMessage,
            Self::GetTask(_) => O::GetTask,
            Self::ListTasks(_) => O::ListTasks,
            Self::CancelTask(_) => O::CancelTask,
            Self::SubscribeToTask(..) => O::SubscribeToTask,
            Self::CreateTaskPushNotificationConfig(_) => O::CreateTaskPushNotificationConfig,
            Self::GetTaskPushNotificationConfig(_) => O::GetTaskPushNotificationConfig,
            Self::ListTaskPushNotificationConfigs(_) => O::ListTaskPushNotificationConfigs,
            Self::DeleteTaskPushNotificationConfig(_) => O::DeleteTaskPushNotificationConfig,
            Self::GetExtendedAgentCard(_) => O::GetExtendedAgentCard,
        }
    }
}

/// What [`OperationRequest::read`] reads a request from.
trait RequestSource {
    /// Why a request could not be read.
    type Error;

    /// The request of `operation`, as a `T`.
    fn read<T: DeserializeOwned>(self, operation: Operation) -> Result<T, Self::Error>;
}

/// A JSON object: a field of the wrong type is `InvalidParams` naming the field.
impl RequestSource for Value {
    type Error = A2AError;

    fn read<T: DeserializeOwned>(self, operation: Operation) -> Result<T, A2AError> {
        serde_path_to_error::deserialize(self).map_err(|err| {
            let path = err.path().to_string();
            let inner = err.into_inner();
            if path == "." {
                A2AError::invalid_params(format!("Invalid params for {operation}: {inner}"))
            } else {
                A2AError::invalid_params(format!("Invalid params for {operation}: {path}: {inner}"))
            }
        })
    }
}

/// One JSON object's text, read straight into the request's type.
struct Text<'a>(&'a str);

/// The text did not read as the request (the value's reading says why).
struct Unread;

impl RequestSource for Text<'_> {
    type Error = Unread;

    fn read<T: DeserializeOwned>(self, _: Operation) -> Result<T, Unread> {
        serde_json::from_str(self.0).map_err(|_| Unread)
    }
}

/// What an operation answered.
pub enum OperationResponse {
    /// SendMessage: the task, or the agent's direct message.
    Sent(SendMessageResponse),
    /// GetTask, CancelTask.
    Task(Task),
    /// ListTasks.
    Tasks(ListTasksResponse),
    /// Create/GetTaskPushNotificationConfig.
    PushConfig(TaskPushNotificationConfig),
    /// ListTaskPushNotificationConfigs.
    PushConfigs(ListTaskPushNotificationConfigsResponse),
    /// DeleteTaskPushNotificationConfig (`google.protobuf.Empty`).
    Empty,
    /// GetExtendedAgentCard.
    Card(AgentCard),
    /// SendStreamingMessage, SubscribeToTask: the events.
    Stream(EventStream),
}

impl std::fmt::Debug for OperationResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sent(r) => f.debug_tuple("Sent").field(r).finish(),
            Self::Task(t) => f.debug_tuple("Task").field(t).finish(),
            Self::Tasks(r) => f.debug_tuple("Tasks").field(r).finish(),
            Self::PushConfig(c) => f.debug_tuple("PushConfig").field(c).finish(),
            Self::PushConfigs(r) => f.debug_tuple("PushConfigs").field(r).finish(),
            Self::Empty => f.write_str("Empty"),
            Self::Card(c) => f.debug_tuple("Card").field(c).finish(),
            Self::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

/// An operation's answer as the bindings send it: one ProtoJSON value, or a stream of events.
pub enum Reply {
    /// The ProtoJSON result of a unary operation, serialised once, straight from its type: the
    /// 1.0 bindings send it as it is; an edge that rewrites it (an older version) parses it
    /// ([`Reply::value`]).
    Json(Box<RawValue>),
    /// The events of a streaming operation.
    Stream(EventStream),
}

impl Reply {
    /// A serialised result as a JSON value, for an edge that rewrites it.
    pub fn value(result: &RawValue) -> Value {
        // It was serialised from a Rust value a moment ago: it parses.
        serde_json::from_str(result.get()).unwrap_or(Value::Null)
    }
}

impl OperationResponse {
    /// The answer as the bindings send it.
    pub fn into_reply(self) -> Result<Reply, A2AError> {
        fn json<T: Serialize>(t: &T) -> Result<Reply, A2AError> {
            serde_json::value::to_raw_value(t)
                .map(Reply::Json)
                .map_err(|err| internal("serialising a result failed", err))
        }
        match self {
            Self::Sent(r) => json(&r),
            Self::Task(t) => json(&t),
            Self::Tasks(r) => json(&r),
            Self::PushConfig(c) => json(&c),
            Self::PushConfigs(r) => json(&r),
            Self::Empty => json(&serde_json::Map::new()),
            Self::Card(c) => json(&c),
            Self::Stream(events) => Ok(Reply::Stream(events)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(value: &Value) -> Box<RawValue> {
        RawValue::from_string(value.to_string()).unwrap()
    }

    /// Params read from their text are the request read from their value, and a bad field is
    /// refused with the same words (naming the field, not a line and column).
    #[test]
    fn params_read_from_text_as_from_their_value() {
        let send = json!({
            "tenant": "tn",
            "message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "hi"}],
                        "metadata": {"k": [1, {"deep": null}]}},
            "configuration": {"historyLength": 2},
            "unknown": {"ignored": true}
        });
        for (operation, params) in [
            (Operation::SendMessage, send),
            (
                Operation::GetTask,
                json!({"id": "t", "historyLength": null}),
            ),
            (
                Operation::ListTasks,
                json!({"pageSize": 5, "status": "TASK_STATE_WORKING"}),
            ),
            (Operation::SubscribeToTask, json!({"id": "t"})),
        ] {
            let raw = text(&params);
            let read = OperationRequest::from_params(operation, Params::Text(&raw), Some(3));
            let want = OperationRequest::from_json(operation, params, Some(3));
            assert_eq!(format!("{read:?}"), format!("{want:?}"));
        }
        let mut read = OperationRequest::from_params(
            Operation::GetTask,
            Params::Text(&text(&json!({"id": "t", "tenant": "a"}))),
            None,
        )
        .unwrap();
        assert_eq!(read.tenant_mut(), "a");
        let bad = json!({"message": {"role": "ROLE_USER", "messageId": 7, "parts": []}});
        let read =
            OperationRequest::from_params(Operation::SendMessage, Params::Text(&text(&bad)), None);
        let want = OperationRequest::from_json(Operation::SendMessage, bad, None);
        let (read, want) = (read.unwrap_err(), want.unwrap_err());
        assert_eq!(read.to_string(), want.to_string());
        assert!(read.to_string().contains("message.messageId"), "{read}");
    }
}
