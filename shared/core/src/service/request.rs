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
        use Operation as O;
        let p = params;
        Ok(match operation {
            O::SendMessage => Self::SendMessage(decode(operation, p)?),
            O::SendStreamingMessage => Self::SendStreamingMessage(decode(operation, p)?),
            O::GetTask => Self::GetTask(decode(operation, p)?),
            O::ListTasks => Self::ListTasks(decode(operation, p)?),
            O::CancelTask => Self::CancelTask(decode(operation, p)?),
            O::SubscribeToTask => Self::SubscribeToTask(decode(operation, p)?, last_event_id),
            O::CreateTaskPushNotificationConfig => {
                Self::CreateTaskPushNotificationConfig(decode(operation, p)?)
            }
            O::GetTaskPushNotificationConfig => {
                Self::GetTaskPushNotificationConfig(decode(operation, p)?)
            }
            O::ListTaskPushNotificationConfigs => {
                Self::ListTaskPushNotificationConfigs(decode(operation, p)?)
            }
            O::DeleteTaskPushNotificationConfig => {
                Self::DeleteTaskPushNotificationConfig(decode(operation, p)?)
            }
            O::GetExtendedAgentCard => Self::GetExtendedAgentCard(decode(operation, p)?),
        })
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
        let text = raw.get();
        use Operation as O;
        let read = match operation {
            O::SendMessage => read_text(text).map(Self::SendMessage),
            O::SendStreamingMessage => read_text(text).map(Self::SendStreamingMessage),
            O::GetTask => read_text(text).map(Self::GetTask),
            O::ListTasks => read_text(text).map(Self::ListTasks),
            O::CancelTask => read_text(text).map(Self::CancelTask),
            O::SubscribeToTask => read_text(text).map(|r| Self::SubscribeToTask(r, last_event_id)),
            O::CreateTaskPushNotificationConfig => {
                read_text(text).map(Self::CreateTaskPushNotificationConfig)
            }
            O::GetTaskPushNotificationConfig => {
                read_text(text).map(Self::GetTaskPushNotificationConfig)
            }
            O::ListTaskPushNotificationConfigs => {
                read_text(text).map(Self::ListTaskPushNotificationConfigs)
            }
            O::DeleteTaskPushNotificationConfig => {
                read_text(text).map(Self::DeleteTaskPushNotificationConfig)
            }
            O::GetExtendedAgentCard => read_text(text).map(Self::GetExtendedAgentCard),
        };
        match read {
            Some(request) => Ok(request),
            None => Self::from_json(operation, Params::Text(raw).into_value()?, last_event_id),
        }
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

fn decode<T: DeserializeOwned>(operation: Operation, params: Value) -> Result<T, A2AError> {
    serde_path_to_error::deserialize(params).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if path == "." {
            A2AError::invalid_params(format!("Invalid params for {operation}: {inner}"))
        } else {
            A2AError::invalid_params(format!("Invalid params for {operation}: {path}: {inner}"))
        }
    })
}

/// `text` (one JSON object) read as a `T`, if it reads as one.
fn read_text<T: DeserializeOwned>(text: &str) -> Option<T> {
    serde_json::from_str(text).ok()
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
