//! The A2A operations. [`A2aService`] is what every front door (the local router, each Lambda
//! function) calls; it owns no state between requests beyond configuration and clients.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use a2a_protocol::{
    A2AError, AgentCapabilities, AgentCard, AgentInterface, CancelTaskRequest,
    GetExtendedAgentCardRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, Message,
    SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
    TaskPushNotificationConfig, TaskPushNotificationConfigRef, TaskState, TaskStatus, Timestamp,
    PROTOCOL_VERSION,
};
use futures::Stream;
use tokio::sync::{oneshot, Mutex};
use tokio::time::Instant;

use crate::agent::{
    Agent, AgentError, AgentRequest, Emitter, EmitterState, FirstOutcome, Placement,
};
use crate::auth::{Auth, Permission, Permissions, Principal};
use crate::event::{LoggedEvent, TaskEvent};
use crate::ports::*;
use crate::push_policy::PushPolicy;
use crate::signing::PushSigner;
use crate::webhook::{NoWebhookSender, WebhookSender};

/// How the service behaves; the host (local server or Lambda function) fills it in.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// The interfaces this deployment really serves, in order of preference.
    pub interfaces: Vec<AgentInterface>,
    /// Whether the streaming operations are offered.
    pub streaming: bool,
    /// Whether push notifications are offered.
    pub push_notifications: bool,
    /// Whether the extended card is offered. It requires authentication, so it is offered
    /// only when `auth` is on, whatever this says.
    pub extended_card: bool,
    /// Who may call: turns credentials into a principal, and says so on the card.
    pub auth: Auth,
    /// How long tasks, events and push configs are kept.
    pub retention: Duration,
    /// How long a blocking SendMessage waits before it returns the task as it stands.
    pub blocking_timeout: Duration,
    /// How long one SSE stream may last before it ends gracefully (the client resubscribes).
    pub max_stream_duration: Duration,
    /// Whether inline work may go on after the response ends. True for a long-lived process;
    /// false on Lambda, where a frozen instance would stall it: such work is queued instead.
    pub background_inline: bool,
    /// Which webhook URLs may be contacted.
    pub push_policy: PushPolicy,
    /// Sends the webhook POSTs through the SSRF guard (the host's network adapter). The
    /// default refuses every send.
    pub push_sender: Arc<dyn WebhookSender>,
    /// Signs every push (a JWT verifiable against the JWKS this service publishes). Without
    /// one, pushes go out unsigned and no JWKS is served: hosts should always set it.
    pub push_signer: Option<PushSigner>,
    /// Lease holder name of this process (worker identity).
    pub worker_id: String,
    /// How long an execution lease lasts before another worker may take over.
    pub lease_duration: Duration,
    /// A work job received this many times ends its task FAILED instead of running again.
    pub max_job_receives: u32,
    /// Push delivery attempts per event and config before the job is dead-lettered.
    pub max_push_attempts: u32,
    /// Timeout of one webhook POST.
    pub push_timeout: Duration,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            interfaces: Vec::new(),
            streaming: true,
            push_notifications: true,
            extended_card: true,
            auth: Auth::none(),
            retention: Duration::from_secs(30 * 24 * 3600),
            blocking_timeout: Duration::from_secs(120),
            max_stream_duration: Duration::from_secs(14 * 60),
            background_inline: true,
            push_policy: PushPolicy::default(),
            push_sender: Arc::new(NoWebhookSender),
            push_signer: None,
            worker_id: crate::new_id(),
            lease_duration: Duration::from_secs(60),
            max_job_receives: 5,
            max_push_attempts: 8,
            push_timeout: Duration::from_secs(10),
        }
    }
}

/// Who is calling, as the front door established it.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The owner every read and write is scoped to.
    pub owner: Owner,
    /// The tenant from the request (opaque routing key), or empty.
    pub tenant: String,
    /// Extension URIs the client activated (`A2A-Extensions`).
    pub extensions: Vec<String>,
    /// Whether the caller was authenticated (the extended card requires it).
    pub authenticated: bool,
    /// What the caller may do; each operation checks its [`Permission`].
    pub permissions: Permissions,
}

impl CallContext {
    /// An unauthenticated caller in `tenant` (auth mode `none`).
    pub fn anonymous(tenant: &str) -> Self {
        Self::new(&Principal::anonymous(), tenant)
    }

    /// `principal` calling in `tenant`: its tasks are those of the owner (tenant, principal).
    pub fn new(principal: &Principal, tenant: &str) -> Self {
        Self {
            owner: Owner::new(tenant, &principal.id),
            tenant: tenant.to_string(),
            extensions: Vec::new(),
            authenticated: principal.authenticated,
            permissions: principal.permissions,
        }
    }

    /// `PermissionDenied` unless the caller holds `permission`. Checked first in every
    /// operation: it depends on nothing but the caller, so it reveals nothing about tasks.
    pub fn require(&self, permission: Permission) -> Result<(), A2AError> {
        if self.permissions.contains(permission) {
            Ok(())
        } else {
            Err(A2AError::PermissionDenied(format!(
                "Permission denied: this operation needs the {permission} permission"
            )))
        }
    }
}

/// One item of an event stream, with the log sequence number that SSE sends as `id:`.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamItem {
    /// The log position this item reflects; resume after it with `Last-Event-ID`.
    pub seq: u64,
    /// What the client receives.
    pub response: StreamResponse,
}

/// A stream of events for SendStreamingMessage and SubscribeToTask. It ends when the task is
/// terminal or interrupted, or when the maximum stream duration is reached.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamItem, A2AError>> + Send>>;

pub(crate) struct Core {
    pub(crate) config: ServiceConfig,
    pub(crate) agent: Arc<dyn Agent>,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) work: Arc<dyn WorkQueue>,
    pub(crate) push: Arc<dyn PushQueue>,
    pub(crate) card: AgentCard,
    pub(crate) extended_card: AgentCard,
    /// `capabilities.extendedAgentCard` as published.
    pub(crate) offers_extended_card: bool,
    /// Inline executions running in this process, so a graceful shutdown can end their tasks
    /// instead of leaving them WORKING. Only a courtesy: correctness never depends on it.
    pub(crate) running: std::sync::Mutex<std::collections::HashSet<(Owner, String)>>,
}

/// The A2A operations, for every front door. Cheap to clone.
#[derive(Clone)]
pub struct A2aService {
    core: Arc<Core>,
}

/// Logs an internal failure and returns the generic error the client sees.
pub(crate) fn internal(context: &str, err: impl std::fmt::Display) -> A2AError {
    tracing::error!(%err, "{context}");
    A2AError::Internal("Internal error".into())
}

fn store_error(err: StoreError) -> A2AError {
    match err {
        StoreError::InvalidPageToken => A2AError::invalid_params("pageToken is not valid"),
        StoreError::TooLarge(what) => A2AError::PayloadTooLarge(what),
        other => internal("store failure", other),
    }
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
        let mut extended_card = card.clone();
        extended_card
            .skills
            .extend(description.extended_skills.iter().cloned());
        Self {
            core: Arc::new(Core {
                config,
                agent,
                store,
                work,
                push,
                card,
                extended_card,
                offers_extended_card,
                running: Default::default(),
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

    fn require_streaming(&self) -> Result<(), A2AError> {
        if self.core.config.streaming {
            Ok(())
        } else {
            Err(A2AError::unsupported(
                "Streaming is not supported by this agent",
            ))
        }
    }

    /// The caller's push permission, then the capability: every push-config operation (and an
    /// inline config in a send) starts with both.
    fn require_push(&self, ctx: &CallContext) -> Result<(), A2AError> {
        ctx.require(Permission::Push)?;
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
        self.core
            .store
            .load_task(owner, task_id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| A2AError::task_not_found(task_id))
    }

    /// SendMessage: blocks until the task is terminal or interrupted unless
    /// `configuration.returnImmediately` is set.
    pub async fn send_message(
        &self,
        ctx: &CallContext,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2AError> {
        ctx.require(Permission::Send)?;
        let configuration = request.configuration.clone().unwrap_or_default();
        let started = self.start(ctx, request, false).await?;
        let (task_id, from_seq) = match started {
            Started::Message(message) => return Ok(SendMessageResponse::Message(message)),
            Started::Task {
                task_id, from_seq, ..
            } => (task_id, from_seq),
        };
        if !configuration.return_immediately {
            let deadline = Instant::now() + self.core.config.blocking_timeout;
            let mut events = Box::pin(follow_log(
                self.core.clone(),
                ctx.owner.clone(),
                task_id.clone(),
                from_seq,
                deadline,
            ));
            use futures::StreamExt;
            while let Some(item) = events.next().await {
                item?;
            }
        }
        let mut task = self.load(&ctx.owner, &task_id).await?.task;
        task.truncate_history(configuration.history_length);
        Ok(SendMessageResponse::Task(task))
    }

    /// SendStreamingMessage: the Task (or one Message) first, then every update until the task
    /// is terminal or interrupted.
    pub async fn send_streaming_message(
        &self,
        ctx: &CallContext,
        request: SendMessageRequest,
    ) -> Result<EventStream, A2AError> {
        ctx.require(Permission::Send)?;
        self.require_streaming()?;
        match self.start(ctx, request, true).await? {
            Started::Message(message) => Ok(Box::pin(futures::stream::once(async move {
                Ok(StreamItem {
                    seq: 0,
                    response: StreamResponse::Message(message),
                })
            }))),
            Started::Task {
                task_id,
                from_seq: 0,
                ..
            } => {
                // A new task: its first event is the Task as created.
                Ok(Box::pin(follow_log(
                    self.core.clone(),
                    ctx.owner.clone(),
                    task_id,
                    0,
                    Instant::now() + self.core.config.max_stream_duration,
                )))
            }
            // The Task as it stood right after the client's message, then every event after
            // it: loading the head now instead could already include the agent's events and
            // the stream would skip them.
            Started::Task {
                head: Some(head), ..
            } => Ok(self.snapshot_then_follow(ctx, *head)),
            Started::Task { task_id, .. } => {
                let head = self.load(&ctx.owner, &task_id).await?;
                Ok(self.snapshot_then_follow(ctx, head))
            }
        }
    }

    fn snapshot_then_follow(&self, ctx: &CallContext, head: StoredTask) -> EventStream {
        use futures::StreamExt;
        let first = StreamItem {
            seq: head.version,
            response: StreamResponse::Task(head.task.clone()),
        };
        let rest = follow_log(
            self.core.clone(),
            ctx.owner.clone(),
            head.task.id.clone(),
            head.version,
            Instant::now() + self.core.config.max_stream_duration,
        );
        Box::pin(futures::stream::once(async move { Ok(first) }).chain(rest))
    }

    /// Validates a send, records the message, and starts the agent (inline or queued).
    async fn start(
        &self,
        ctx: &CallContext,
        request: SendMessageRequest,
        streaming: bool,
    ) -> Result<Started, A2AError> {
        let mut message = request.validate()?.clone();
        self.check_extensions(ctx)?;
        let configuration = request.configuration.clone().unwrap_or_default();
        let inline_push = match configuration.task_push_notification_config {
            Some(cfg) => {
                // An inline config is a push-config write like any other.
                self.require_push(ctx)?;
                self.core
                    .config
                    .push_policy
                    .check_new_url(&cfg.url, &*self.core.config.push_sender)
                    .await?;
                Some(cfg)
            }
            None => None,
        };
        let existing = if message.task_id.is_empty() {
            None
        } else {
            let head = self.load(&ctx.owner, &message.task_id).await?;
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
        let task_id = existing
            .as_ref()
            .map(|h| h.task.id.clone())
            .unwrap_or_else(crate::new_id);
        let context_id = match &existing {
            Some(h) => h.task.context_id.clone(),
            None if message.context_id.is_empty() => crate::new_id(),
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
        let writer = Writer {
            core: &self.core,
            owner: &ctx.owner,
        };
        if let (Some(cfg), Some(_)) = (&inline_push, &existing) {
            writer.put_push_config(&task_id, cfg.clone()).await?;
        }

        match (placement, existing) {
            (Placement::Queued, existing) => {
                let head = match existing {
                    None => {
                        writer
                            .create(&agent_request, Vec::new(), inline_push.as_ref())
                            .await?
                    }
                    Some(head) => {
                        writer
                            .append_user_message(head, agent_request.message.clone())
                            .await?
                    }
                };
                let job = WorkJob {
                    v: JOB_FORMAT_VERSION,
                    owner: ctx.owner.clone(),
                    task_id: task_id.clone(),
                    trigger_seq: head.version,
                };
                if let Err(err) = self.core.work.enqueue_work(&job).await {
                    // The client gets an error, and the task must not stay SUBMITTED forever.
                    let _ = writer
                        .finish_failed(head, "the work could not be queued")
                        .await;
                    return Err(internal("work queue enqueue failed", err));
                }
                Ok(Started::Task {
                    task_id,
                    from_seq: head.version,
                    head: Some(Box::new(head)),
                })
            }
            (Placement::Inline, Some(head)) => {
                let head = writer
                    .append_user_message(head, agent_request.message.clone())
                    .await?;
                let from_seq = head.version;
                let snapshot = Box::new(head.clone());
                let (emitter, _first) =
                    new_emitter(&self.core, &ctx.owner, agent_request, Some(head), None);
                tokio::spawn(run_inline(emitter));
                Ok(Started::Task {
                    task_id,
                    from_seq,
                    head: Some(snapshot),
                })
            }
            (Placement::Inline, None) => {
                let (emitter, first) =
                    new_emitter(&self.core, &ctx.owner, agent_request, None, inline_push);
                tokio::spawn(run_inline(emitter));
                match first.await {
                    Ok(FirstOutcome::Message(message)) => Ok(Started::Message(message)),
                    Ok(FirstOutcome::TaskStarted) => Ok(Started::Task {
                        task_id,
                        from_seq: 0,
                        head: None,
                    }),
                    Err(_) => Err(A2AError::InvalidAgentResponse(
                        "the agent stopped without creating a task or replying".into(),
                    )),
                }
            }
        }
    }

    /// GetTask.
    pub async fn get_task(
        &self,
        ctx: &CallContext,
        request: GetTaskRequest,
    ) -> Result<Task, A2AError> {
        ctx.require(Permission::Read)?;
        request.validate()?;
        let mut task = self.load(&ctx.owner, &request.id).await?.task;
        task.truncate_history(request.history_length);
        Ok(task)
    }

    /// ListTasks: the caller's tasks, newest status first.
    pub async fn list_tasks(
        &self,
        ctx: &CallContext,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, A2AError> {
        ctx.require(Permission::Read)?;
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
    pub async fn cancel_task(
        &self,
        ctx: &CallContext,
        request: CancelTaskRequest,
    ) -> Result<Task, A2AError> {
        ctx.require(Permission::Cancel)?;
        request.validate()?;
        let head = self.load(&ctx.owner, &request.id).await?;
        let writer = Writer {
            core: &self.core,
            owner: &ctx.owner,
        };
        let event = TaskEvent::Status {
            update: a2a_protocol::TaskStatusUpdateEvent {
                task_id: head.task.id.clone(),
                context_id: head.task.context_id.clone(),
                status: TaskStatus {
                    state: TaskState::Canceled,
                    message: Some(Message {
                        message_id: crate::new_id(),
                        context_id: head.task.context_id.clone(),
                        task_id: head.task.id.clone(),
                        ..Message::agent_text("The task was canceled at the client's request.")
                    }),
                    timestamp: Some(Timestamp::now()),
                },
                metadata: request.metadata.clone(),
            },
        };
        match writer.append(head, vec![event]).await {
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
    pub async fn subscribe_to_task(
        &self,
        ctx: &CallContext,
        request: SubscribeToTaskRequest,
        last_event_id: Option<u64>,
    ) -> Result<EventStream, A2AError> {
        ctx.require(Permission::Read)?;
        self.require_streaming()?;
        request.validate()?;
        let head = self.load(&ctx.owner, &request.id).await?;
        if let Some(after) = last_event_id {
            return Ok(Box::pin(follow_log(
                self.core.clone(),
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
    pub async fn create_push_config(
        &self,
        ctx: &CallContext,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.require_push(ctx)?;
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
        let writer = Writer {
            core: &self.core,
            owner: &ctx.owner,
        };
        writer.put_push_config(&head.task.id, config).await
    }

    /// GetTaskPushNotificationConfig.
    pub async fn get_push_config(
        &self,
        ctx: &CallContext,
        request: TaskPushNotificationConfigRef,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.require_push(ctx)?;
        request.validate()?;
        self.load(&ctx.owner, &request.task_id).await?;
        self.core
            .store
            .get_push_config(&ctx.owner, &request.task_id, &request.id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| A2AError::task_not_found(&request.task_id))
    }

    /// ListTaskPushNotificationConfigs (one page holds them all).
    pub async fn list_push_configs(
        &self,
        ctx: &CallContext,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2AError> {
        self.require_push(ctx)?;
        request.validate()?;
        self.load(&ctx.owner, &request.task_id).await?;
        let configs = self
            .core
            .store
            .list_push_configs(&ctx.owner, &request.task_id)
            .await
            .map_err(store_error)?;
        Ok(ListTaskPushNotificationConfigsResponse {
            configs,
            next_page_token: String::new(),
        })
    }

    /// DeleteTaskPushNotificationConfig; deleting a config that is not there succeeds.
    pub async fn delete_push_config(
        &self,
        ctx: &CallContext,
        request: TaskPushNotificationConfigRef,
    ) -> Result<(), A2AError> {
        self.require_push(ctx)?;
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
    pub async fn get_extended_card(
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
        ctx.require(Permission::Read)?;
        Ok(self.core.extended_card.clone())
    }

    /// Ends the tasks of inline executions still running in this process as FAILED, for a
    /// graceful shutdown: their work dies with the process, and nothing would redeliver it.
    /// Queued work is not touched: its job is redelivered to another worker.
    pub async fn shutdown(&self) {
        let running: Vec<(Owner, String)> = lock_running(&self.core).drain().collect();
        for (owner, task_id) in running {
            let writer = Writer {
                core: &self.core,
                owner: &owner,
            };
            let head = match self.core.store.load_task(&owner, &task_id).await {
                Ok(Some(head)) if !head.task.status.state.is_terminal() => head,
                _ => continue,
            };
            match writer
                .finish_failed(
                    head,
                    "The server shut down while the agent was working on this task.",
                )
                .await
            {
                Ok(_) | Err(AppendError::Terminal(_)) => {}
                Err(err) => tracing::warn!(%task_id, "could not end the task at shutdown: {err:?}"),
            }
        }
    }

    /// Runs a work job (from the work queue): the agent on the job's message. `receive_count`
    /// is how many times the queue has handed this job out, this time included.
    pub async fn run_work_job(&self, job: &WorkJob, receive_count: u32) -> JobOutcome {
        crate::worker::run_work_job(&self.core, job, receive_count).await
    }

    /// Delivers a push job (from the push queue) to its webhook.
    pub async fn deliver_push(&self, job: &PushJob, receive_count: u32) -> JobOutcome {
        crate::push::deliver(&self.core, job, receive_count).await
    }
}

enum Started {
    Message(Message),
    Task {
        task_id: String,
        /// The log position the caller's view starts after (0: the task is new).
        from_seq: u64,
        /// The task right after the client's message was recorded, when known.
        head: Option<Box<StoredTask>>,
    },
}

pub(crate) fn new_emitter(
    core: &Arc<Core>,
    owner: &Owner,
    request: AgentRequest,
    head: Option<StoredTask>,
    inline_push: Option<TaskPushNotificationConfig>,
) -> (Emitter, oneshot::Receiver<FirstOutcome>) {
    let (tx, rx) = oneshot::channel();
    let emitter = Emitter {
        core: core.clone(),
        owner: owner.clone(),
        request: Arc::new(request),
        state: Arc::new(Mutex::new(EmitterState {
            head,
            first: Some(tx),
            replied: false,
            pending: Vec::new(),
        })),
        inline_push,
    };
    (emitter, rx)
}

/// Runs an inline execution, registered so that [`A2aService::shutdown`] can find it.
async fn run_inline(emitter: Emitter) {
    let key = (emitter.owner.clone(), emitter.task_id().to_string());
    let core = emitter.core.clone();
    lock_running(&core).insert(key.clone());
    run_agent(emitter).await;
    lock_running(&core).remove(&key);
}

fn lock_running(
    core: &Core,
) -> std::sync::MutexGuard<'_, std::collections::HashSet<(Owner, String)>> {
    // A poisoned set only means a panic elsewhere while it was held; its content is still valid.
    core.running.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs the agent to its end and makes sure the task does not stay active when it stops: an
/// error fails the task; returning without a final state fails it too (no task stays WORKING).
pub(crate) async fn run_agent(emitter: Emitter) {
    let agent = emitter.core.agent.clone();
    let request = (*emitter.request).clone();
    let handle = tokio::spawn({
        let emitter = emitter.clone();
        async move { agent.execute(request, emitter).await }
    });
    let result = match handle.await {
        Ok(result) => result,
        Err(join) => {
            tracing::error!(task_id = %emitter.task_id(), "the agent panicked: {join}");
            Err(AgentError::Failed("The agent failed unexpectedly.".into()))
        }
    };
    let (replied, state) = {
        let state = emitter.state.lock().await;
        (
            state.replied,
            state.head.as_ref().map(|h| h.task.status.state),
        )
    };
    if replied {
        return;
    }
    let reason = match (result, state) {
        (Err(AgentError::TaskEnded(_)), _) => return,
        (Err(AgentError::Failed(reason)), _) => reason,
        (Ok(()), None) => "The agent finished without reporting a result.".to_string(),
        (Ok(()), Some(s)) if s.is_terminal() || s.is_interrupted() => return,
        (Ok(()), Some(_)) => "The agent finished without a final status.".to_string(),
    };
    if let Some(s) = state {
        if s.is_terminal() {
            return;
        }
    }
    if let Err(err) = emitter.fail(&reason).await {
        tracing::warn!(task_id = %emitter.task_id(), "could not mark the task failed: {err}");
    }
}

/// Why an append did not happen.
#[derive(Debug)]
pub(crate) enum AppendError {
    /// The task is terminal (it was, or became so under a concurrent writer).
    Terminal(Box<Task>),
    /// The task is gone (expired).
    NotFound(String),
    /// The event breaks the lifecycle.
    Invalid(A2AError),
    /// The store failed.
    Store(StoreError),
}

impl From<AppendError> for A2AError {
    fn from(err: AppendError) -> Self {
        match err {
            AppendError::Terminal(task) => A2AError::unsupported(format!(
                "Task {} is in terminal state {}",
                task.id, task.status.state
            )),
            AppendError::NotFound(id) => A2AError::task_not_found(id),
            AppendError::Invalid(e) => e,
            AppendError::Store(e) => store_error(e),
        }
    }
}

impl From<AppendError> for AgentError {
    fn from(err: AppendError) -> Self {
        match err {
            AppendError::Terminal(task) => AgentError::TaskEnded(task.status.state),
            AppendError::NotFound(_) => AgentError::TaskEnded(TaskState::Unspecified),
            AppendError::Invalid(e) => AgentError::Failed(e.message()),
            AppendError::Store(e) => AgentError::Failed(format!("the task store failed: {e}")),
        }
    }
}

/// A status event gets its timestamp when it is written, never earlier than the task's current
/// status timestamp: ListTasks orders by it and `statusTimestampAfter` filters on it, so it must
/// not go backwards (an emit built a moment before a concurrent write would otherwise be older).
fn stamped(event: &TaskEvent, task: &Task, now: Timestamp) -> TaskEvent {
    match event {
        TaskEvent::Status { update } => {
            let mut update = update.clone();
            let floor = task.status.timestamp.unwrap_or(now);
            update.status.timestamp = Some(now.max(floor));
            TaskEvent::Status { update }
        }
        other => other.clone(),
    }
}

/// Writes to the event log with conditional appends, and fans appended events out to push.
pub(crate) struct Writer<'a> {
    pub(crate) core: &'a Arc<Core>,
    pub(crate) owner: &'a Owner,
}

impl Writer<'_> {
    fn expires_at(&self) -> Timestamp {
        Timestamp::from_millis(
            Timestamp::now().millis() + self.core.config.retention.as_millis() as i64,
        )
    }

    /// Appends `events` on top of `head`. On a version conflict it re-reads the head and tries
    /// again; it gives up if the task became terminal meanwhile.
    pub(crate) async fn append(
        &self,
        mut head: StoredTask,
        events: Vec<TaskEvent>,
    ) -> Result<StoredTask, AppendError> {
        for _attempt in 0..32 {
            if head.task.status.state.is_terminal() {
                return Err(AppendError::Terminal(Box::new(head.task)));
            }
            let mut next = head.clone();
            let now = Timestamp::now();
            let mut logged = Vec::with_capacity(events.len());
            for event in &events {
                let event = &stamped(event, &next.task, now);
                event.apply(&mut next.task).map_err(|e| {
                    if next.task.status.state.is_terminal() {
                        AppendError::Terminal(Box::new(next.task.clone()))
                    } else {
                        AppendError::Invalid(e)
                    }
                })?;
                next.version += 1;
                logged.push(LoggedEvent {
                    seq: next.version,
                    at: now,
                    event: event.clone(),
                });
            }
            next.expires_at = self.expires_at();
            match self
                .core
                .store
                .append_events(&next, head.version, &logged)
                .await
            {
                Ok(()) => {
                    self.fan_out(&next.task.id, &logged).await;
                    return Ok(next);
                }
                Err(StoreError::Conflict) => {
                    head = self
                        .core
                        .store
                        .load_task(self.owner, &head.task.id)
                        .await
                        .map_err(AppendError::Store)?
                        .ok_or_else(|| AppendError::NotFound(head.task.id.clone()))?;
                }
                Err(other) => return Err(AppendError::Store(other)),
            }
        }
        Err(AppendError::Store(StoreError::Backend(
            "too many concurrent writers on one task".into(),
        )))
    }

    /// Creates a task for `request` (SUBMITTED, with the message in its history), followed by
    /// `events`, in one atomic write. An inline push config is stored first so that it sees
    /// every event.
    pub(crate) async fn create(
        &self,
        request: &AgentRequest,
        events: Vec<TaskEvent>,
        inline_push: Option<&TaskPushNotificationConfig>,
    ) -> Result<StoredTask, AppendError> {
        if let Some(cfg) = inline_push {
            self.put_push_config(&request.task_id, cfg.clone())
                .await
                .map_err(AppendError::Invalid)?;
        }
        let now = Timestamp::now();
        let created = Task {
            id: request.task_id.clone(),
            context_id: request.context_id.clone(),
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Some(now),
            },
            artifacts: Vec::new(),
            history: vec![request.message.clone()],
            metadata: None,
        };
        let mut head = StoredTask {
            owner: self.owner.clone(),
            task: Task::default(),
            version: 0,
            expires_at: self.expires_at(),
        };
        let mut logged = Vec::new();
        for event in std::iter::once(TaskEvent::Created { task: created }).chain(events) {
            let event = stamped(&event, &head.task, now);
            event.apply(&mut head.task).map_err(AppendError::Invalid)?;
            head.version += 1;
            logged.push(LoggedEvent {
                seq: head.version,
                at: now,
                event,
            });
        }
        self.core
            .store
            .create_task(&head, &logged)
            .await
            .map_err(AppendError::Store)?;
        self.fan_out(&head.task.id, &logged).await;
        Ok(head)
    }

    pub(crate) async fn append_user_message(
        &self,
        head: StoredTask,
        message: Message,
    ) -> Result<StoredTask, A2AError> {
        self.append(head, vec![TaskEvent::UserMessage { message }])
            .await
            .map_err(A2AError::from)
    }

    /// Ends the task FAILED with `reason` (best effort, for paths that are already failing).
    pub(crate) async fn finish_failed(
        &self,
        head: StoredTask,
        reason: &str,
    ) -> Result<StoredTask, AppendError> {
        let task = &head.task;
        let event = TaskEvent::Status {
            update: a2a_protocol::TaskStatusUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                status: TaskStatus {
                    state: TaskState::Failed,
                    message: Some(Message {
                        message_id: crate::new_id(),
                        context_id: task.context_id.clone(),
                        task_id: task.id.clone(),
                        ..Message::agent_text(reason)
                    }),
                    timestamp: Some(Timestamp::now()),
                },
                metadata: None,
            },
        };
        self.append(head, vec![event]).await
    }

    pub(crate) async fn put_push_config(
        &self,
        task_id: &str,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        config.task_id = task_id.to_string();
        if config.id.is_empty() {
            config.id = crate::new_id();
        }
        self.core
            .store
            .put_push_config(self.owner, &config, self.expires_at())
            .await
            .map_err(store_error)?;
        Ok(config)
    }

    /// One push job per appended event and push config. A failure here is logged, not
    /// returned: the event is in the log, which is what the client is promised.
    async fn fan_out(&self, task_id: &str, events: &[LoggedEvent]) {
        if !self.core.config.push_notifications {
            return;
        }
        let visible: Vec<&LoggedEvent> = events
            .iter()
            .filter(|e| e.event.to_stream_response().is_some())
            .collect();
        if visible.is_empty() {
            return;
        }
        let configs = match self.core.store.list_push_configs(self.owner, task_id).await {
            Ok(configs) if configs.is_empty() => return,
            Ok(configs) => configs,
            Err(err) => {
                tracing::error!(%task_id, "listing push configs failed; pushes for these events are lost: {err}");
                return;
            }
        };
        let jobs: Vec<PushJob> = visible
            .iter()
            .flat_map(|e| {
                configs.iter().map(move |c| PushJob {
                    v: JOB_FORMAT_VERSION,
                    owner: self.owner.clone(),
                    task_id: task_id.to_string(),
                    seq: e.seq,
                    config_id: c.id.clone(),
                })
            })
            .collect();
        if let Err(err) = self.core.push.enqueue_push(&jobs).await {
            tracing::error!(%task_id, "enqueueing push jobs failed: {err}");
        }
    }
}

/// Follows a task's log from `after_seq`: yields every stream-visible event in order and ends
/// after a terminal or interrupted status, or at `deadline`.
pub(crate) fn follow_log(
    core: Arc<Core>,
    owner: Owner,
    task_id: String,
    after_seq: u64,
    deadline: Instant,
) -> impl Stream<Item = Result<StreamItem, A2AError>> + Send + 'static {
    struct State {
        core: Arc<Core>,
        owner: Owner,
        task_id: String,
        after: u64,
        buffer: VecDeque<LoggedEvent>,
        done: bool,
        deadline: Instant,
    }
    let state = State {
        core,
        owner,
        task_id,
        after: after_seq,
        buffer: VecDeque::new(),
        done: false,
        deadline,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if st.done {
                return None;
            }
            if let Some(event) = st.buffer.pop_front() {
                st.after = event.seq;
                if event.event.closes_stream() {
                    st.done = true;
                }
                if let Some(response) = event.event.to_stream_response() {
                    let item = StreamItem {
                        seq: event.seq,
                        response,
                    };
                    return Some((Ok(item), st));
                }
                continue;
            }
            match st
                .core
                .store
                .read_events(&st.owner, &st.task_id, st.after, 100)
                .await
            {
                Ok(events) if !events.is_empty() => {
                    st.buffer.extend(events);
                    continue;
                }
                Ok(_) => {}
                Err(err) => {
                    st.done = true;
                    return Some((Err(store_error(err)), st));
                }
            }
            let now = Instant::now();
            if now >= st.deadline {
                return None;
            }
            match st.core.store.load_task(&st.owner, &st.task_id).await {
                Ok(Some(head))
                    if head.version <= st.after && head.task.status.state.is_terminal() =>
                {
                    return None
                }
                Ok(Some(_)) => {}
                Ok(None) => {
                    st.done = true;
                    return Some((Err(A2AError::task_not_found(&st.task_id)), st));
                }
                Err(err) => {
                    st.done = true;
                    return Some((Err(store_error(err)), st));
                }
            }
            let wait = (st.deadline - now).min(Duration::from_secs(5));
            st.core
                .store
                .wait_for_append(&st.task_id, st.after, wait)
                .await;
        }
    })
}
