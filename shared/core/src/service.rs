//! The A2A operations. [`A2aService::call`] is what every front door (the local router, each
//! Lambda function) calls with an [`OperationRequest`]; it owns no state between requests beyond
//! configuration and clients. The kernel it runs on is in [`crate::kernel`].

use std::sync::Arc;

use a2a_protocol::AgentInterface;
use a2a_protocol::{
    A2AError, AgentCapabilities, AgentCard, CancelTaskRequest, GetExtendedAgentCardRequest,
    GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, Message,
    SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
    TaskPushNotificationConfig, TaskPushNotificationConfigRef, TaskState, PROTOCOL_VERSION,
};

/// The version 0.3 interfaces declare on the card.
pub const V03_PROTOCOL_VERSION: &str = "0.3";
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::time::Instant;

use crate::agent::{Agent, Placement};
use crate::auth::Permission;
use crate::config::{MessageIdReuse, ServiceConfig};
use crate::context::CallContext;
use crate::emitter::{Emitter, FirstOutcome};
use crate::execution::{new_emitter, take_follow_up_lease, Executions};
use crate::idempotency;
use crate::kernel::Core;
use crate::operation::Operation;
use crate::ports::*;
use crate::request::AgentRequest;
use crate::task_log::{
    ended_status, internal, store_error, AppendError, EventStream, StreamItem, TaskLog,
};

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

    /// Sets the request's `tenant`, so the service sees one tenant whichever binding (params or
    /// path) supplied it.
    pub fn set_tenant(&mut self, tenant: &str) {
        let field = match self {
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
        };
        tenant.clone_into(field);
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
    /// 1.0 bindings send it as it is; an edge that rewrites it (an older generation) parses it
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

/// The A2A operations, for every front door. Cheap to clone.
#[derive(Clone)]
pub struct A2aService {
    core: Arc<Core>,
}

impl A2aService {
    /// Builds the service from its configuration, the agent and the adapters.
    pub fn new(
        config: ServiceConfig,
        agent: Arc<dyn Agent>,
        store: Arc<dyn TaskStore>,
        work: Arc<dyn WorkQueue>,
        push: Arc<dyn PushQueue>,
    ) -> Self {
        let description = agent.describe();
        // The extended card must require authentication (spec §3.1.11): without auth, there
        // is no such thing.
        let offers_extended_card = config.extended_card && config.auth.is_enabled();
        let (security_schemes, security_requirements) = config.auth.card_security();
        let mut card = AgentCard {
            name: description.name.clone(),
            description: description.description.clone(),
            supported_interfaces: config.interfaces.clone(),
            provider: description.provider.clone(),
            version: description.version.clone(),
            documentation_url: None,
            capabilities: AgentCapabilities {
                streaming: Some(config.streaming),
                push_notifications: Some(config.push_notifications),
                extensions: description.extensions.clone(),
                extended_agent_card: Some(offers_extended_card),
            },
            security_schemes,
            security_requirements,
            default_input_modes: description.default_input_modes.clone(),
            default_output_modes: description.default_output_modes.clone(),
            skills: description.skills.clone(),
            signatures: Vec::new(),
            icon_url: None,
        };
        for iface in &mut card.supported_interfaces {
            if iface.protocol_version.is_empty() {
                iface.protocol_version = PROTOCOL_VERSION.to_string();
            }
        }
        if config.generations.v0_3 {
            // The same URLs speak 0.3 too (told apart by `A2A-Version` and the method names),
            // listed after 1.0 so that clients of both pick their own.
            let v03: Vec<AgentInterface> = card
                .supported_interfaces
                .iter()
                .filter(|i| i.protocol_version == PROTOCOL_VERSION)
                .map(|i| AgentInterface {
                    protocol_version: V03_PROTOCOL_VERSION.to_string(),
                    ..i.clone()
                })
                .collect();
            card.supported_interfaces.extend(v03);
        }
        let mut extended_card = card.clone();
        extended_card
            .skills
            .extend(description.extended_skills.iter().cloned());
        let log = Arc::new(TaskLog::new(
            store.clone(),
            config.retention,
            config.observer.clone(),
            config.message_id_reuse == MessageIdReuse::Reject,
        ));
        Self {
            core: Arc::new(Core {
                config,
                agent,
                store,
                log,
                work,
                push,
                card,
                extended_card,
                offers_extended_card,
                executions: Executions::default(),
            }),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &ServiceConfig {
        &self.core.config
    }

    /// The public agent card.
    pub fn agent_card(&self) -> &AgentCard {
        &self.core.card
    }

    /// Runs one operation for `ctx`: the one entry point of every front door. The caller's
    /// permission for the operation ([`Operation::permission`]) is checked here, once, before
    /// anything else: it depends on nothing but the caller, so it reveals nothing about tasks.
    pub async fn call(
        &self,
        ctx: &CallContext,
        request: OperationRequest,
    ) -> Result<OperationResponse, A2AError> {
        let operation = request.operation();
        let started = std::time::Instant::now();
        let result = self.dispatch(ctx, request).await;
        self.core
            .config
            .observer
            .operation(operation, started.elapsed(), result.as_ref().err());
        result
    }

    async fn dispatch(
        &self,
        ctx: &CallContext,
        request: OperationRequest,
    ) -> Result<OperationResponse, A2AError> {
        ctx.require(request.operation().permission())?;
        use OperationRequest as R;
        use OperationResponse as Out;
        Ok(match request {
            R::SendMessage(r) => Out::Sent(self.run_send_message(ctx, r).await?),
            R::SendStreamingMessage(r) => {
                Out::Stream(self.run_send_streaming_message(ctx, r).await?)
            }
            R::GetTask(r) => Out::Task(self.run_get_task(ctx, r).await?),
            R::ListTasks(r) => Out::Tasks(self.run_list_tasks(ctx, r).await?),
            R::CancelTask(r) => Out::Task(self.run_cancel_task(ctx, r).await?),
            R::SubscribeToTask(r, after) => {
                Out::Stream(self.run_subscribe_to_task(ctx, r, after).await?)
            }
            R::CreateTaskPushNotificationConfig(r) => {
                Out::PushConfig(self.run_create_push_config(ctx, r).await?)
            }
            R::GetTaskPushNotificationConfig(r) => {
                Out::PushConfig(self.run_get_push_config(ctx, r).await?)
            }
            R::ListTaskPushNotificationConfigs(r) => {
                Out::PushConfigs(self.run_list_push_configs(ctx, r).await?)
            }
            R::DeleteTaskPushNotificationConfig(r) => {
                self.run_delete_push_config(ctx, r).await?;
                Out::Empty
            }
            R::GetExtendedAgentCard(r) => Out::Card(self.run_get_extended_card(ctx, r).await?),
        })
    }

    fn require_streaming(&self) -> Result<(), A2AError> {
        if self.core.config.streaming {
            Ok(())
        } else {
            Err(A2AError::unsupported(
                "Streaming is not supported by this agent",
            ))
        }
    }

    /// Whether push notifications are offered: every push-config operation starts with it
    /// (after the push permission, which [`Self::call`] checks).
    fn require_push_capability(&self) -> Result<(), A2AError> {
        if self.core.config.push_notifications {
            Ok(())
        } else {
            Err(A2AError::PushNotificationNotSupported)
        }
    }

    fn check_extensions(&self, ctx: &CallContext) -> Result<(), A2AError> {
        for ext in &self.core.card.capabilities.extensions {
            if ext.required && !ctx.extensions.iter().any(|u| u == &ext.uri) {
                return Err(A2AError::ExtensionSupportRequired(format!(
                    "This agent requires the extension {}; activate it with the A2A-Extensions header",
                    ext.uri
                )));
            }
        }
        Ok(())
    }

    async fn load(&self, owner: &Owner, task_id: &str) -> Result<StoredTask, A2AError> {
        self.core.log.load(owner, task_id).await
    }

    /// SendMessage: blocks until the task is terminal or interrupted unless
    /// `configuration.returnImmediately` is set.
    async fn run_send_message(
        &self,
        ctx: &CallContext,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2AError> {
        let configuration = request.configuration.clone().unwrap_or_default();
        let started = self.start(ctx, request, false).await?;
        let deadline = Instant::now() + self.core.config.blocking_timeout;
        let (task_id, from_seq, known, execution) = match started {
            Started::Message(message) => return Ok(SendMessageResponse::Message(message)),
            // Only a new task's head (`from_seq` 0) is the agent's own write; any other head is
            // from before the agent ran (the client's message recorded), not its answer.
            Started::Task {
                task_id,
                from_seq,
                head,
                execution,
            } => (task_id, from_seq, head.filter(|_| from_seq == 0), execution),
            // A repeat waits as the original would, from where the task stands now.
            Started::Repeat(head) => (head.task.id.clone(), head.version, Some(head), None),
        };
        // A caller that does not wait leaves the execution running (locally; on Lambda such
        // work is queued instead, see `start`).
        let execution = execution.filter(|_| !configuration.return_immediately);
        // A task that already stopped in the head this request wrote (or just read) is the
        // answer: following the log and reading the head back would only return it again.
        if let Some(head) = known.filter(|head| stops(head)) {
            settle(execution, deadline).await;
            let mut task = head.task;
            task.truncate_history(configuration.history_length);
            return Ok(SendMessageResponse::Task(task));
        }
        if !configuration.return_immediately {
            let mut events = Box::pin(self.core.log.follow(
                ctx.owner.clone(),
                task_id.clone(),
                from_seq,
                deadline,
            ));
            use futures::StreamExt;
            while let Some(item) = events.next().await {
                item?;
            }
            settle(execution, deadline).await;
        }
        let mut task = self.load(&ctx.owner, &task_id).await?.task;
        task.truncate_history(configuration.history_length);
        Ok(SendMessageResponse::Task(task))
    }

    /// SendStreamingMessage: the Task (or one Message) first, then every update until the task
    /// is terminal or interrupted.
    async fn run_send_streaming_message(
        &self,
        ctx: &CallContext,
        request: SendMessageRequest,
    ) -> Result<EventStream, A2AError> {
        self.require_streaming()?;
        match self.start(ctx, request, true).await? {
            // A repeat resubscribes: the Task as it stands, then its events until it stops.
            Started::Repeat(head) if stops(&head) => {
                let item = StreamItem {
                    seq: head.version,
                    response: StreamResponse::Task(head.task),
                };
                Ok(Box::pin(futures::stream::once(async move { Ok(item) })))
            }
            Started::Repeat(head) => Ok(self.snapshot_then_follow(ctx, *head)),
            Started::Message(message) => Ok(Box::pin(futures::stream::once(async move {
                Ok(StreamItem {
                    seq: 0,
                    response: StreamResponse::Message(message),
                })
            }))),
            Started::Task {
                task_id,
                from_seq: 0,
                execution,
                ..
            } => {
                // A new task: its first event is the Task as created.
                let deadline = Instant::now() + self.core.config.max_stream_duration;
                let events = self
                    .core
                    .log
                    .follow(ctx.owner.clone(), task_id, 0, deadline);
                Ok(then_settled(Box::pin(events), execution, deadline))
            }
            // The Task as it stood right after the client's message, then every event after
            // it: loading the head now instead could already include the agent's events and
            // the stream would skip them.
            Started::Task {
                head: Some(head),
                execution,
                ..
            } => {
                let deadline = Instant::now() + self.core.config.max_stream_duration;
                Ok(then_settled(
                    self.snapshot_then_follow(ctx, *head),
                    execution,
                    deadline,
                ))
            }
            Started::Task {
                task_id, execution, ..
            } => {
                let head = self.load(&ctx.owner, &task_id).await?;
                let deadline = Instant::now() + self.core.config.max_stream_duration;
                Ok(then_settled(
                    self.snapshot_then_follow(ctx, head),
                    execution,
                    deadline,
                ))
            }
        }
    }

    fn snapshot_then_follow(&self, ctx: &CallContext, head: StoredTask) -> EventStream {
        use futures::StreamExt;
        let first = StreamItem {
            seq: head.version,
            response: StreamResponse::Task(head.task.clone()),
        };
        let rest = self.core.log.follow(
            ctx.owner.clone(),
            head.task.id.clone(),
            head.version,
            Instant::now() + self.core.config.max_stream_duration,
        );
        Box::pin(futures::stream::once(async move { Ok(first) }).chain(rest))
    }

    /// Runs an inline execution in the background of this process; the handle tells when it
    /// ended (see [`settle`]).
    fn spawn_inline(&self, emitter: Emitter) -> tokio::task::JoinHandle<()> {
        let core = self.core.clone();
        tokio::spawn(async move {
            core.executions
                .run_inline(core.agent.clone(), emitter)
                .await
        })
    }

    /// The original result of a message of `ctx`'s owner sent before under `task_id` (its
    /// derived id), if a task or reply holds that id: the message is a repeat.
    async fn original(
        &self,
        ctx: &CallContext,
        sent: &Message,
        task_id: &str,
    ) -> Result<Option<Started>, A2AError> {
        let record = self
            .core
            .store
            .load_send(&ctx.owner, task_id)
            .await
            .map_err(store_error)?;
        record.map(|r| repeat_of(task_id, sent, r)).transpose()
    }

    /// For a copy that lost the race to create its task: the winner's task or reply. A send
    /// to a task id the client chose may lose to another message of the same owner sent to the
    /// same new id at the same time: it then continues the task the other one created, as it
    /// would have had it come a moment later (`retry`, once).
    async fn superseded(
        &self,
        ctx: &CallContext,
        sent: &Message,
        task_id: &str,
        retry: Option<(&SendMessageRequest, bool)>,
    ) -> Result<Started, A2AError> {
        let chosen = ctx.requested_task_id.as_deref() == Some(task_id);
        let record = self
            .core
            .store
            .load_send(&ctx.owner, task_id)
            .await
            .map_err(store_error)?;
        match (record, retry) {
            (Some(record), _) if !chosen || holds(&record, sent) => {
                repeat_of(task_id, sent, record)
            }
            (Some(SendRecord::Task(_)), Some((request, streaming))) => {
                Box::pin(self.start_as(ctx, request.clone(), streaming, false)).await
            }
            // The id is taken (by another owner, or by a reply): say no more than that.
            _ if chosen => Err(A2AError::invalid_params(format!(
                "Task id {task_id} cannot be used for a new task; choose another id"
            ))),
            _ => Err(internal(
                "a send lost the race for its task id, but no task or reply holds it",
                task_id,
            )),
        }
    }

    /// For a follow-up whose append failed: a repeat if a concurrent copy of the message got
    /// into the task's history first, otherwise `err`.
    async fn follow_up_failed(
        &self,
        ctx: &CallContext,
        sent: &Message,
        task_id: &str,
        err: A2AError,
    ) -> Result<Started, A2AError> {
        if self.core.config.message_id_reuse != MessageIdReuse::Reject {
            return Err(err);
        }
        match self.core.store.load_task(&ctx.owner, task_id).await {
            Ok(Some(head)) if idempotency::find_sent(&head.task, &sent.message_id).is_some() => {
                repeat_of(&self.new_task_id(ctx, sent), sent, SendRecord::Task(head))
            }
            _ => Err(err),
        }
    }

    /// The id a new task for `sent` gets (see [`idempotency::new_task_id`]).
    fn new_task_id(&self, ctx: &CallContext, sent: &Message) -> String {
        idempotency::new_task_id(&ctx.owner, sent, self.core.config.message_id_reuse)
    }

    /// Validates a send, records the message, and starts the agent (inline or queued). A
    /// repeat of a message (same owner and `messageId`) starts nothing: it returns the original
    /// task or reply ([`crate::idempotency`]).
    async fn start(
        &self,
        ctx: &CallContext,
        request: SendMessageRequest,
        streaming: bool,
    ) -> Result<Started, A2AError> {
        self.start_as(ctx, request, streaming, true).await
    }

    /// [`Self::start`]; `may_retry`: whether a send that lost the race for a new task id its
    /// client chose may continue the winner's task (see [`Self::superseded`]).
    async fn start_as(
        &self,
        ctx: &CallContext,
        request: SendMessageRequest,
        streaming: bool,
        may_retry: bool,
    ) -> Result<Started, A2AError> {
        let retry = may_retry.then_some((&request, streaming));
        let sent = request.validate()?.clone();
        let mut message = sent.clone();
        self.check_extensions(ctx)?;
        let configuration = request.configuration.clone().unwrap_or_default();
        let inline_push = match configuration.task_push_notification_config {
            Some(mut cfg) => {
                cfg.generation = ctx.generation;
                // An inline config is a push-config write like any other: it needs the push
                // permission beside the send permission that `call` checked.
                ctx.require(Permission::Push)?;
                self.require_push_capability()?;
                self.core
                    .config
                    .push_policy
                    .check_new_url(&cfg.url, &*self.core.config.push_sender)
                    .await?;
                Some(cfg)
            }
            None => None,
        };
        // The id a new task for this message gets: the one the client chose (the early
        // protocol), else derived from the messageId when sends are idempotent.
        let requested = ctx.requested_task_id.as_deref();
        let new_task_id = match requested {
            Some(id) => {
                a2a_protocol::compat::inbound::validate_client_task_id(id)?;
                if !message.task_id.is_empty() && message.task_id != id {
                    return Err(A2AError::invalid_params(
                        "message.taskId differs from the task id the request chose",
                    ));
                }
                // A chosen id the owner already holds is a follow-up on that task.
                let held = self
                    .core
                    .store
                    .load_task(&ctx.owner, id)
                    .await
                    .map_err(store_error)?;
                if held.is_some() {
                    message.task_id = id.to_owned();
                }
                id.to_owned()
            }
            None => self.new_task_id(ctx, &sent),
        };
        let existing = if message.task_id.is_empty() {
            if requested.is_none() && self.core.config.message_id_reuse == MessageIdReuse::Reject {
                // One read of the id a new task for this message would get tells a repeat.
                if let Some(original) = self.original(ctx, &sent, &new_task_id).await? {
                    return Ok(original);
                }
            }
            None
        } else {
            let head = self.load(&ctx.owner, &message.task_id).await?;
            // Before the terminal check: a repeat of the message that ended the task returns it.
            // Not when every send is a new message, whatever its messageId.
            let dedupe = self.core.config.message_id_reuse == MessageIdReuse::Reject;
            if dedupe && idempotency::find_sent(&head.task, &message.message_id).is_some() {
                return repeat_of(&new_task_id, &sent, SendRecord::Task(head));
            }
            if head.task.status.state.is_terminal() {
                return Err(A2AError::unsupported(format!(
                    "Task {} is in terminal state {} and accepts no more messages",
                    head.task.id, head.task.status.state
                )));
            }
            if !message.context_id.is_empty() && message.context_id != head.task.context_id {
                return Err(A2AError::invalid_params(format!(
                    "message.contextId {} does not match the task's contextId {}",
                    message.context_id, head.task.context_id
                )));
            }
            Some(head)
        };
        let task_id = match &existing {
            Some(h) => h.task.id.clone(),
            None => new_task_id,
        };
        let context_id = match &existing {
            Some(h) => h.task.context_id.clone(),
            None if message.context_id.is_empty() => idempotency::context_id_for(&task_id),
            None => message.context_id.clone(),
        };
        message.task_id = task_id.clone();
        message.context_id = context_id.clone();
        let agent_request = AgentRequest {
            message,
            task: existing.as_ref().map(|h| h.task.clone()),
            task_id: task_id.clone(),
            context_id,
            streaming,
            metadata: request.metadata.clone(),
        };
        let mut placement = self.core.agent.placement(&agent_request);
        let caller_waits = streaming || !configuration.return_immediately;
        if placement == Placement::Inline && !caller_waits && !self.core.config.background_inline {
            placement = Placement::Queued;
        }
        // A new task's inline config without an id gets one derived from the task, so a
        // racing copy of the message that writes it too (before losing the create) replaces it
        // instead of adding a second config.
        let inline_push = inline_push.map(|mut cfg| {
            if existing.is_none() && cfg.id.is_empty() {
                cfg.id = idempotency::push_config_id_for(&task_id);
            }
            cfg
        });
        if let (Some(cfg), Some(_)) = (&inline_push, &existing) {
            self.core
                .log
                .put_push_config(&ctx.owner, &task_id, cfg.clone())
                .await?;
        }

        match (placement, existing) {
            (Placement::Queued, existing) => {
                let head = match existing {
                    None => match self
                        .core
                        .log
                        .create(&ctx.owner, &agent_request, Vec::new(), inline_push.as_ref())
                        .await
                    {
                        Ok(head) => head,
                        // A concurrent copy of the message created the task first.
                        Err(AppendError::Store(StoreError::Conflict)) => {
                            return self.superseded(ctx, &sent, &task_id, retry).await
                        }
                        Err(err) => return Err(err.into()),
                    },
                    Some(head) => match self
                        .core
                        .log
                        .append_user_message(&ctx.owner, head, agent_request.message.clone())
                        .await
                    {
                        Ok(head) => head,
                        Err(err) => return self.follow_up_failed(ctx, &sent, &task_id, err).await,
                    },
                };
                let job = WorkJob {
                    v: JOB_FORMAT_VERSION,
                    owner: ctx.owner.clone(),
                    task_id: task_id.clone(),
                    trigger_seq: head.version,
                };
                if let Err(err) = self.core.work.enqueue_work(&job).await {
                    // The client gets an error, and the task must not stay SUBMITTED forever.
                    let _ = self
                        .core
                        .log
                        .finish_failed(&ctx.owner, head, "the work could not be queued")
                        .await;
                    return Err(internal("work queue enqueue failed", err));
                }
                Ok(Started::Task {
                    task_id,
                    from_seq: head.version,
                    head: Some(Box::new(head)),
                    execution: None,
                })
            }
            (Placement::Inline, Some(head)) => {
                // The message makes the task active again: lease first (see the emitter). A
                // racing copy of this message may hold it: then this one is a repeat.
                if let Err(err) =
                    take_follow_up_lease(&*self.core.store, &ctx.owner, &task_id, &self.core.config)
                        .await
                {
                    return self.follow_up_failed(ctx, &sent, &task_id, err).await;
                }
                let head = match self
                    .core
                    .log
                    .append_user_message(&ctx.owner, head, agent_request.message.clone())
                    .await
                {
                    Ok(head) => head,
                    Err(err) => {
                        let started = self.follow_up_failed(ctx, &sent, &task_id, err).await;
                        // Give the lease back, unless a copy of this message won the append:
                        // its run (in this process, the same holder) works under that lease.
                        if started.is_err() {
                            let holder = &self.core.config.worker_id;
                            let _ = self.core.store.release_lease(&task_id, holder).await;
                        }
                        return started;
                    }
                };
                let from_seq = head.version;
                let snapshot = Box::new(head.clone());
                let (emitter, _first) =
                    new_emitter(&self.core.log, &ctx.owner, agent_request, Some(head), None);
                let emitter = emitter.leased(&self.core.config, true);
                let execution = self.spawn_inline(emitter);
                Ok(Started::Task {
                    task_id,
                    from_seq,
                    head: Some(snapshot),
                    execution: Some(execution),
                })
            }
            (Placement::Inline, None) => {
                let (emitter, first) =
                    new_emitter(&self.core.log, &ctx.owner, agent_request, None, inline_push);
                let execution = self.spawn_inline(emitter.leased(&self.core.config, false));
                match first.await {
                    Ok(FirstOutcome::Message(message)) => Ok(Started::Message(message)),
                    Ok(FirstOutcome::Superseded) => {
                        self.superseded(ctx, &sent, &task_id, retry).await
                    }
                    Ok(FirstOutcome::TaskStarted(created)) => Ok(Started::Task {
                        task_id,
                        from_seq: 0,
                        head: Some(created),
                        execution: Some(execution),
                    }),
                    Err(_) => Err(A2AError::InvalidAgentResponse(
                        "the agent stopped without creating a task or replying".into(),
                    )),
                }
            }
        }
    }

    /// GetTask.
    async fn run_get_task(
        &self,
        ctx: &CallContext,
        request: GetTaskRequest,
    ) -> Result<Task, A2AError> {
        request.validate()?;
        let mut task = self.load(&ctx.owner, &request.id).await?.task;
        task.truncate_history(request.history_length);
        Ok(task)
    }

    /// ListTasks: the caller's tasks, newest status first.
    async fn run_list_tasks(
        &self,
        ctx: &CallContext,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2AError> {
        let page_size = request.validate()?;
        let query = TaskQuery {
            context_id: (!request.context_id.is_empty()).then(|| request.context_id.clone()),
            state: request.status,
            status_timestamp_after: request.status_timestamp_after,
            page_size,
            page_token: request.page_token.clone(),
        };
        let page = self
            .core
            .store
            .list_tasks(&ctx.owner, &query)
            .await
            .map_err(store_error)?;
        let include_artifacts = request.include_artifacts.unwrap_or(false);
        let tasks = page
            .tasks
            .into_iter()
            .map(|mut task| {
                task.truncate_history(request.history_length);
                if !include_artifacts {
                    task.artifacts.clear();
                }
                task
            })
            .collect();
        Ok(ListTasksResponse {
            tasks,
            next_page_token: page.next_page_token,
            page_size: page_size as i32,
            total_size: i32::try_from(page.total_size).unwrap_or(i32::MAX),
        })
    }

    /// CancelTask: CANCELED, or TaskNotCancelable if the task already ended.
    async fn run_cancel_task(
        &self,
        ctx: &CallContext,
        request: CancelTaskRequest,
    ) -> Result<Task, A2AError> {
        request.validate()?;
        let head = self.load(&ctx.owner, &request.id).await?;
        let event = ended_status(
            &head.task,
            TaskState::Canceled,
            "The task was canceled at the client's request.",
            request.metadata.clone(),
        );
        match self.core.log.append(&ctx.owner, head, vec![event]).await {
            Ok(head) => Ok(head.task),
            Err(AppendError::Terminal(task)) => Err(A2AError::TaskNotCancelable {
                task_id: task.id.clone(),
                state: task.status.state.to_string(),
            }),
            Err(other) => Err(other.into()),
        }
    }

    /// SubscribeToTask: the Task snapshot, then live events. With `last_event_id` (SSE
    /// `Last-Event-ID`) it resumes exactly after that event instead, with no snapshot.
    async fn run_subscribe_to_task(
        &self,
        ctx: &CallContext,
        request: SubscribeToTaskRequest,
        last_event_id: Option<u64>,
    ) -> Result<EventStream, A2AError> {
        self.require_streaming()?;
        request.validate()?;
        let head = self.load(&ctx.owner, &request.id).await?;
        if let Some(after) = last_event_id {
            return Ok(Box::pin(self.core.log.follow(
                ctx.owner.clone(),
                head.task.id.clone(),
                after,
                Instant::now() + self.core.config.max_stream_duration,
            )));
        }
        if head.task.status.state.is_terminal() {
            return Err(A2AError::unsupported(format!(
                "Task {} is in terminal state {}; there is nothing to subscribe to",
                head.task.id, head.task.status.state
            )));
        }
        Ok(self.snapshot_then_follow(ctx, head))
    }

    /// CreateTaskPushNotificationConfig.
    async fn run_create_push_config(
        &self,
        ctx: &CallContext,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.require_push_capability()?;
        config.generation = ctx.generation;
        if config.task_id.is_empty() {
            return Err(A2AError::invalid_params("taskId is required"));
        }
        config.validate()?;
        self.core
            .config
            .push_policy
            .check_new_url(&config.url, &*self.core.config.push_sender)
            .await?;
        let head = self.load(&ctx.owner, &config.task_id).await?;
        self.core
            .log
            .put_push_config(&ctx.owner, &head.task.id, config)
            .await
            .map(without_generation)
    }

    /// GetTaskPushNotificationConfig.
    async fn run_get_push_config(
        &self,
        ctx: &CallContext,
        request: TaskPushNotificationConfigRef,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.require_push_capability()?;
        request.validate()?;
        self.load(&ctx.owner, &request.task_id).await?;
        self.core
            .store
            .get_push_config(&ctx.owner, &request.task_id, &request.id)
            .await
            .map_err(store_error)?
            .map(without_generation)
            .ok_or_else(|| A2AError::PushConfigNotFound {
                task_id: request.task_id.clone(),
                config_id: request.id.clone(),
            })
    }

    /// ListTaskPushNotificationConfigs (one page holds them all).
    async fn run_list_push_configs(
        &self,
        ctx: &CallContext,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2AError> {
        self.require_push_capability()?;
        request.validate()?;
        self.load(&ctx.owner, &request.task_id).await?;
        let configs = self
            .core
            .store
            .list_push_configs(&ctx.owner, &request.task_id)
            .await
            .map_err(store_error)?;
        Ok(ListTaskPushNotificationConfigsResponse {
            configs: configs.into_iter().map(without_generation).collect(),
            next_page_token: String::new(),
        })
    }

    /// DeleteTaskPushNotificationConfig; deleting a config that is not there succeeds.
    async fn run_delete_push_config(
        &self,
        ctx: &CallContext,
        request: TaskPushNotificationConfigRef,
    ) -> Result<(), A2AError> {
        self.require_push_capability()?;
        request.validate()?;
        self.load(&ctx.owner, &request.task_id).await?;
        self.core
            .store
            .delete_push_config(&ctx.owner, &request.task_id, &request.id)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    /// GetExtendedAgentCard: the public card plus the agent's extended skills, for
    /// authenticated callers only.
    async fn run_get_extended_card(
        &self,
        ctx: &CallContext,
        _request: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2AError> {
        if !self.core.offers_extended_card {
            return Err(A2AError::unsupported(
                "This agent does not offer an extended agent card",
            ));
        }
        if !ctx.authenticated {
            return Err(A2AError::Unauthenticated(
                "Unauthenticated: the extended agent card requires authentication".into(),
            ));
        }
        Ok(self.core.extended_card.clone())
    }

    /// Ends the tasks of inline executions still running in this process as FAILED, for a
    /// graceful shutdown: their work dies with the process, and nothing would redeliver it.
    /// Their leases are given back. Queued work is not touched: its job is redelivered to
    /// another worker.
    ///
    /// Then every open stream of this process (SendStreamingMessage, SubscribeToTask, a
    /// blocking SendMessage's wait) delivers what the log holds (those FAILED events
    /// included) and ends cleanly; a client resubscribes elsewhere for a task still running.
    pub async fn shutdown(&self) {
        self.core
            .executions
            .shutdown("The server shut down while the agent was working on this task.")
            .await;
        self.core.log.stop_following();
    }

    /// Ends the tasks of inline executions that stopped without finishing (their process
    /// crashed, a Lambda instance was lost): for up to `limit` inline leases that expired
    /// without being given back, a task still active is ended FAILED with a reason, through
    /// its log like any other final event, and the lease is removed. Returns how many tasks
    /// it ended. Hosts call it on a schedule; it is safe to run anywhere, any number of times
    /// at once.
    pub async fn sweep_expired_executions(&self, limit: usize) -> Result<usize, StoreError> {
        crate::execution::sweep_expired(&self.core, limit).await
    }

    /// Runs a work job (from the work queue): the agent on the job's message. `receive_count`
    /// is how many times the queue has handed this job out, this time included: for logs only.
    /// Attempts are counted on the task's lease ([`TaskStore::begin_job_attempt`]); after
    /// `max_job_attempts` the task ends FAILED and the outcome is
    /// [`JobOutcome::DeadLetter`] with the reason.
    pub async fn run_work_job(&self, job: &WorkJob, receive_count: u32) -> JobOutcome {
        let (outcome, attempt) = crate::worker::run_work_job(&self.core, job, receive_count).await;
        if attempt > 0 {
            self.core.config.observer.work_job(attempt, &outcome);
        }
        outcome
    }

    /// Delivers a push job (from the push queue) to its webhook. `receive_count` is how many
    /// times the queue has handed this job out: a hint only (on the first receive no attempt
    /// can have been made, so the delivery record is not read). Attempts are counted on the
    /// config's delivery record; the last one that fails, after `max_push_attempts`, returns
    /// [`JobOutcome::DeadLetter`] with the reason.
    pub async fn deliver_push(&self, job: &PushJob, receive_count: u32) -> JobOutcome {
        crate::push::deliver(&self.core, job, receive_count).await
    }

    /// The push fan-out of writes a store reports after the fact, in order: one job per visible
    /// event and push config ([`crate::push_jobs`]) on the push queue. The DynamoDB table's
    /// stream feeds it (the fan-out function on Lambda, a stream poller locally), so the fan-out
    /// happens because the write happened, whatever became of its writer. Enqueueing is
    /// idempotent (jobs are de-duplicated by task, event and config), so a batch may be handed
    /// over again after a failure.
    pub async fn fan_out(&self, writes: &[crate::ports::AppendedEvents]) -> Result<(), StoreError> {
        if !self.core.config.push_notifications {
            return Ok(());
        }
        let jobs: Vec<PushJob> = writes
            .iter()
            .flat_map(|w| crate::push_jobs(&w.owner, &w.task_id, &w.events, &w.config_ids))
            .collect();
        if jobs.is_empty() {
            return Ok(());
        }
        self.core.push.enqueue_push(&jobs).await
    }
}

/// Typed conveniences over [`A2aService::call`] for Rust callers (tests, hosts embedding the
/// core): each runs its operation through `call`, the permission check included.
impl A2aService {
    /// `SendMessage` through [`Self::call`].
    pub async fn send_message(
        &self,
        ctx: &CallContext,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2AError> {
        match self
            .call(ctx, OperationRequest::SendMessage(request))
            .await?
        {
            OperationResponse::Sent(answer) => Ok(answer),
            other => Err(unexpected(other)),
        }
    }

    /// `SendStreamingMessage` through [`Self::call`].
    pub async fn send_streaming_message(
        &self,
        ctx: &CallContext,
        request: SendMessageRequest,
    ) -> Result<EventStream, A2AError> {
        match self
            .call(ctx, OperationRequest::SendStreamingMessage(request))
            .await?
        {
            OperationResponse::Stream(answer) => Ok(answer),
            other => Err(unexpected(other)),
        }
    }

    /// `GetTask` through [`Self::call`].
    pub async fn get_task(
        &self,
        ctx: &CallContext,
        request: GetTaskRequest,
    ) -> Result<Task, A2AError> {
        match self.call(ctx, OperationRequest::GetTask(request)).await? {
            OperationResponse::Task(answer) => Ok(answer),
            other => Err(unexpected(other)),
        }
    }

    /// `ListTasks` through [`Self::call`].
    pub async fn list_tasks(
        &self,
        ctx: &CallContext,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2AError> {
        match self.call(ctx, OperationRequest::ListTasks(request)).await? {
            OperationResponse::Tasks(answer) => Ok(answer),
            other => Err(unexpected(other)),
        }
    }

    /// `CancelTask` through [`Self::call`].
    pub async fn cancel_task(
        &self,
        ctx: &CallContext,
        request: CancelTaskRequest,
    ) -> Result<Task, A2AError> {
        match self
            .call(ctx, OperationRequest::CancelTask(request))
            .await?
        {
            OperationResponse::Task(answer) => Ok(answer),
            other => Err(unexpected(other)),
        }
    }

    /// `CreateTaskPushNotificationConfig` through [`Self::call`].
    pub async fn create_push_config(
        &self,
        ctx: &CallContext,
        request: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        match self
            .call(
                ctx,
                OperationRequest::CreateTaskPushNotificationConfig(request),
            )
            .await?
        {
            OperationResponse::PushConfig(answer) => Ok(answer),
            other => Err(unexpected(other)),
        }
    }

    /// `GetTaskPushNotificationConfig` through [`Self::call`].
    pub async fn get_push_config(
        &self,
        ctx: &CallContext,
        request: TaskPushNotificationConfigRef,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        match self
            .call(
                ctx,
                OperationRequest::GetTaskPushNotificationConfig(request),
            )
            .await?
        {
            OperationResponse::PushConfig(answer) => Ok(answer),
            other => Err(unexpected(other)),
        }
    }

    /// `ListTaskPushNotificationConfigs` through [`Self::call`].
    pub async fn list_push_configs(
        &self,
        ctx: &CallContext,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2AError> {
        match self
            .call(
                ctx,
                OperationRequest::ListTaskPushNotificationConfigs(request),
            )
            .await?
        {
            OperationResponse::PushConfigs(answer) => Ok(answer),
            other => Err(unexpected(other)),
        }
    }

    /// `GetExtendedAgentCard` through [`Self::call`].
    pub async fn get_extended_card(
        &self,
        ctx: &CallContext,
        request: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2AError> {
        match self
            .call(ctx, OperationRequest::GetExtendedAgentCard(request))
            .await?
        {
            OperationResponse::Card(answer) => Ok(answer),
            other => Err(unexpected(other)),
        }
    }

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

/// Whether a task's stream would stop at once: it is terminal or waits for the client.
fn stops(head: &StoredTask) -> bool {
    let state = head.task.status.state;
    state.is_terminal() || state.is_interrupted()
}

/// Whether `record` holds `sent` (by its `messageId`): the task's history, or the reply's request.
fn holds(record: &SendRecord, sent: &Message) -> bool {
    match record {
        SendRecord::Task(head) => idempotency::find_sent(&head.task, &sent.message_id).is_some(),
        SendRecord::Reply(reply) => reply.request.message_id == sent.message_id,
    }
}

/// The original result for `sent`, a repeat of the message recorded in `record`, or
/// InvalidParams if its body differs.
/// `new_task_id` is the id a new task for `sent` gets.
fn repeat_of(new_task_id: &str, sent: &Message, record: SendRecord) -> Result<Started, A2AError> {
    match record {
        SendRecord::Task(head) => {
            let recorded =
                idempotency::find_sent(&head.task, &sent.message_id).ok_or_else(|| {
                    internal(
                        "a message's task does not hold the message",
                        &sent.message_id,
                    )
                })?;
            idempotency::check_repeat(new_task_id, sent, recorded)?;
            Ok(Started::Repeat(Box::new(head)))
        }
        SendRecord::Reply(reply) => {
            idempotency::check_repeat(new_task_id, sent, &reply.request)?;
            Ok(Started::Message(reply.reply))
        }
    }
}

enum Started {
    /// A repeat of a message that started (or continued) this task: nothing new was started.
    Repeat(Box<StoredTask>),
    Message(Message),
    Task {
        task_id: String,
        /// The log position the caller's view starts after (0: the task is new).
        from_seq: u64,
        /// The task as this request last wrote it, when known: right after the client's
        /// message was recorded, or (a new task, `from_seq` 0) as its agent created it.
        head: Option<Box<StoredTask>>,
        /// The inline execution this request started, if any.
        execution: Option<tokio::task::JoinHandle<()>>,
    },
}

/// Waits, until `deadline`, for the inline execution a request started to end, so that its
/// response is sent only once nothing of the request is left running: on Lambda the instance
/// freezes as soon as the response is complete, and whatever still ran (the last events' push
/// fan-out, the lease given back) would wait for the next request or be lost with the
/// instance. An execution still running at the deadline (a task that went on) runs on.
async fn settle(execution: Option<tokio::task::JoinHandle<()>>, deadline: Instant) {
    if let Some(execution) = execution {
        let _ = tokio::time::timeout_at(deadline, execution).await;
    }
}

/// `events`, ended only once the request's inline execution ended too (see [`settle`]).
fn then_settled(
    events: EventStream,
    execution: Option<tokio::task::JoinHandle<()>>,
    deadline: Instant,
) -> EventStream {
    use futures::StreamExt;
    let settled = futures::stream::once(settle(execution, deadline))
        .filter_map(|()| futures::future::ready(None::<Result<StreamItem, A2AError>>));
    Box::pin(events.chain(settled))
}

/// A push config as answered to clients: which generation set it is the store's business.
fn without_generation(mut config: TaskPushNotificationConfig) -> TaskPushNotificationConfig {
    config.generation = None;
    config
}
