//! Typed conveniences over [`A2aService::call`] for Rust callers (tests, hosts embedding the
//! core): each runs its operation through `call`, the permission check included. One line per
//! operation: the method, its request type, the request variant and the response variant.

use a2a_protocol::{
    A2AError, AgentCard, CancelTaskRequest, GetExtendedAgentCardRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig, TaskPushNotificationConfigRef,
};

use super::{A2aService, OperationRequest, OperationResponse};
use crate::context::CallContext;
use crate::task_log::{internal, EventStream};

/// `fn name(Request) -> Answer = RequestVariant => ResponseVariant`: a typed method that calls
/// [`A2aService::call`] with `OperationRequest::RequestVariant` and unwraps
/// `OperationResponse::ResponseVariant`.
macro_rules! typed_operations {
    ($( fn $name:ident($request:ty) -> $answer:ty = $variant:ident => $response:ident; )*) => {
        impl A2aService {
            $(
                #[doc = concat!("`", stringify!($variant), "` through [`Self::call`].")]
                pub async fn $name(
                    &self,
                    ctx: &CallContext,
                    request: $request,
                ) -> Result<$answer, A2AError> {
                    match self.call(ctx, OperationRequest::$variant(request)).await? {
                        OperationResponse::$response(answer) => Ok(answer),
                        other => Err(unexpected(other)),
                    }
                }
            )*
        }
    };
}

typed_operations! {
    fn send_message(SendMessageRequest) -> SendMessageResponse = SendMessage => Sent;
    fn send_streaming_message(SendMessageRequest) -> EventStream = SendStreamingMessage => Stream;
    fn get_task(GetTaskRequest) -> Task = GetTask => Task;
    fn list_tasks(ListTasksRequest) -> ListTasksResponse = ListTasks => Tasks;
    fn cancel_task(CancelTaskRequest) -> Task = CancelTask => Task;
    fn create_push_config(TaskPushNotificationConfig) -> TaskPushNotificationConfig
        = CreateTaskPushNotificationConfig => PushConfig;
    fn get_push_config(TaskPushNotificationConfigRef) -> TaskPushNotificationConfig
        = GetTaskPushNotificationConfig => PushConfig;
    fn list_push_configs(ListTaskPushNotificationConfigsRequest)
        -> ListTaskPushNotificationConfigsResponse = ListTaskPushNotificationConfigs => PushConfigs;
    fn get_extended_card(GetExtendedAgentCardRequest) -> AgentCard = GetExtendedAgentCard => Card;
}

impl A2aService {
    /// `SubscribeToTask` through [`Self::call`], resuming after `last_event_id` if given.
    pub async fn subscribe_to_task(
        &self,
        ctx: &CallContext,
        request: SubscribeToTaskRequest,
        last_event_id: Option<u64>,
    ) -> Result<EventStream, A2AError> {
        let request = OperationRequest::SubscribeToTask(request, last_event_id);
        match self.call(ctx, request).await? {
            OperationResponse::Stream(events) => Ok(events),
            other => Err(unexpected(other)),
        }
    }

    /// `DeleteTaskPushNotificationConfig` through [`Self::call`].
    pub async fn delete_push_config(
        &self,
        ctx: &CallContext,
        request: TaskPushNotificationConfigRef,
    ) -> Result<(), A2AError> {
        let request = OperationRequest::DeleteTaskPushNotificationConfig(request);
        self.call(ctx, request).await.map(drop)
    }
}

/// An answer of the wrong kind: a bug in `call`, never the client's doing.
fn unexpected(response: OperationResponse) -> A2AError {
    internal(
        "an operation answered with the wrong kind",
        format!("{response:?}"),
    )
}
