//! The operations, independent of the binding: a request decoded from JSON, and the call to the
//! service. JSON-RPC decodes `params`; REST builds the same JSON object from its path, query and
//! body. Both then go through [`OpRequest::decode`] and [`invoke`], so an operation's mapping
//! exists once.

use a2a_core::{A2aService, CallContext, EventStream};
use a2a_protocol::jsonrpc::Method;
use a2a_protocol::{
    A2AError, CancelTaskRequest, GetExtendedAgentCardRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTasksRequest, SendMessageRequest,
    SubscribeToTaskRequest, TaskPushNotificationConfig, TaskPushNotificationConfigRef,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// The decoded request of one operation.
#[derive(Debug, Clone)]
pub enum OpRequest {
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

/// What an operation answers: one JSON result, or a stream of events.
pub enum Outcome {
    /// The ProtoJSON result of a unary operation.
    Json(Value),
    /// The events of a streaming operation.
    Stream(EventStream),
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Json(v) => f.debug_tuple("Json").field(v).finish(),
            Self::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

impl OpRequest {
    /// Decodes the request of `method` from its JSON object. Unknown fields are ignored; a
    /// field of the wrong type is `InvalidParams` naming the field.
    pub fn decode(
        method: Method,
        params: Value,
        last_event_id: Option<u64>,
    ) -> Result<Self, A2AError> {
        Ok(match method {
            Method::SendMessage => Self::SendMessage(decode(method, params)?),
            Method::SendStreamingMessage => Self::SendStreamingMessage(decode(method, params)?),
            Method::GetTask => Self::GetTask(decode(method, params)?),
            Method::ListTasks => Self::ListTasks(decode(method, params)?),
            Method::CancelTask => Self::CancelTask(decode(method, params)?),
            Method::SubscribeToTask => {
                Self::SubscribeToTask(decode(method, params)?, last_event_id)
            }
            Method::CreateTaskPushNotificationConfig => {
                Self::CreateTaskPushNotificationConfig(decode(method, params)?)
            }
            Method::GetTaskPushNotificationConfig => {
                Self::GetTaskPushNotificationConfig(decode(method, params)?)
            }
            Method::ListTaskPushNotificationConfigs => {
                Self::ListTaskPushNotificationConfigs(decode(method, params)?)
            }
            Method::DeleteTaskPushNotificationConfig => {
                Self::DeleteTaskPushNotificationConfig(decode(method, params)?)
            }
            Method::GetExtendedAgentCard => Self::GetExtendedAgentCard(decode(method, params)?),
        })
    }

    /// The operation.
    pub fn method(&self) -> Method {
        match self {
            Self::SendMessage(_) => Method::SendMessage,
            Self::SendStreamingMessage(_) => Method::SendStreamingMessage,
            Self::GetTask(_) => Method::GetTask,
            Self::ListTasks(_) => Method::ListTasks,
            Self::CancelTask(_) => Method::CancelTask,
            Self::SubscribeToTask(..) => Method::SubscribeToTask,
            Self::CreateTaskPushNotificationConfig(_) => Method::CreateTaskPushNotificationConfig,
            Self::GetTaskPushNotificationConfig(_) => Method::GetTaskPushNotificationConfig,
            Self::ListTaskPushNotificationConfigs(_) => Method::ListTaskPushNotificationConfigs,
            Self::DeleteTaskPushNotificationConfig(_) => Method::DeleteTaskPushNotificationConfig,
            Self::GetExtendedAgentCard(_) => Method::GetExtendedAgentCard,
        }
    }
}

fn decode<T: DeserializeOwned>(method: Method, params: Value) -> Result<T, A2AError> {
    serde_path_to_error::deserialize(params).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if path == "." {
            A2AError::invalid_params(format!("Invalid params for {}: {inner}", method.name()))
        } else {
            A2AError::invalid_params(format!(
                "Invalid params for {}: {path}: {inner}",
                method.name()
            ))
        }
    })
}

fn json<T: Serialize>(value: &T) -> Result<Outcome, A2AError> {
    serde_json::to_value(value)
        .map(Outcome::Json)
        .map_err(|err| crate::errors::internal("serialising a result failed", err))
}

/// Runs one operation for `ctx`. The request's `tenant` is set to the context's, so the
/// service sees one tenant whichever binding (params or path) supplied it.
pub async fn invoke(
    service: &A2aService,
    ctx: &CallContext,
    request: OpRequest,
) -> Result<Outcome, A2AError> {
    let tenant = ctx.tenant.clone();
    match request {
        OpRequest::SendMessage(mut r) => {
            r.tenant = tenant;
            json(&service.send_message(ctx, r).await?)
        }
        OpRequest::SendStreamingMessage(mut r) => {
            r.tenant = tenant;
            Ok(Outcome::Stream(
                service.send_streaming_message(ctx, r).await?,
            ))
        }
        OpRequest::GetTask(mut r) => {
            r.tenant = tenant;
            json(&service.get_task(ctx, r).await?)
        }
        OpRequest::ListTasks(mut r) => {
            r.tenant = tenant;
            json(&service.list_tasks(ctx, r).await?)
        }
        OpRequest::CancelTask(mut r) => {
            r.tenant = tenant;
            json(&service.cancel_task(ctx, r).await?)
        }
        OpRequest::SubscribeToTask(mut r, last_event_id) => {
            r.tenant = tenant;
            Ok(Outcome::Stream(
                service.subscribe_to_task(ctx, r, last_event_id).await?,
            ))
        }
        OpRequest::CreateTaskPushNotificationConfig(mut r) => {
            r.tenant = tenant;
            json(&service.create_push_config(ctx, r).await?)
        }
        OpRequest::GetTaskPushNotificationConfig(mut r) => {
            r.tenant = tenant;
            json(&service.get_push_config(ctx, r).await?)
        }
        OpRequest::ListTaskPushNotificationConfigs(mut r) => {
            r.tenant = tenant;
            json(&service.list_push_configs(ctx, r).await?)
        }
        OpRequest::DeleteTaskPushNotificationConfig(mut r) => {
            r.tenant = tenant;
            service.delete_push_config(ctx, r).await?;
            // google.protobuf.Empty is `{}` in ProtoJSON; the official clients accept it on
            // both bindings (and one cannot parse an empty REST body).
            Ok(Outcome::Json(Value::Object(Default::default())))
        }
        OpRequest::GetExtendedAgentCard(mut r) => {
            r.tenant = tenant;
            json(&service.get_extended_card(ctx, r).await?)
        }
    }
}
