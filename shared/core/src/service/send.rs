//! SendMessage and SendStreamingMessage: the send state machine. A send is validated, its
//! message recorded, and the agent started inline or queued ([`A2aService::start`]); a repeat
//! of a message (same owner and `messageId`) starts nothing and answers as the original did.

use std::future::Future;
use std::pin::Pin;

use a2a_protocol::{
    A2AError, Message, Role, SendMessageRequest, SendMessageResponse, StreamResponse,
    TaskPushNotificationConfig,
};
use tokio::time::Instant;

use super::inline::{settle, then_settled, InlineRun};
use super::A2aService;
use crate::agent::Placement;
use crate::auth::Permission;
use crate::context::CallContext;
use crate::emitter::FirstOutcome;
use crate::event::find_sent;
use crate::execution::new_emitter;
use crate::idempotency;
use crate::idempotency::MessageIdReuse;
use crate::journal::DurableRun;
use crate::ports::{SendRecord, StoredTask};
use crate::request::AgentRequest;
use crate::task_log::{internal, store_error, AppendError, EventStream, StreamItem};

impl A2aService {
    /// SendMessage: blocks until the task is terminal or interrupted unless
    /// `configuration.returnImmediately` is set.
    pub(super) async fn run_send_message(
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
    pub(super) async fn run_send_streaming_message(
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
    pub(super) async fn superseded(
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
                self.start_again(ctx, request.clone(), streaming).await
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

    /// [`Self::start_as`] once more, for a send that lost the race for its task id. Boxed as a
    /// `Send` future by a function of its own: the start it recurses into may run detached (in
    /// a task, which needs `Send`), and the compiler proves that only through such a box.
    fn start_again<'a>(
        &'a self,
        ctx: &'a CallContext,
        request: SendMessageRequest,
        streaming: bool,
    ) -> Pin<Box<dyn Future<Output = Result<Started, A2AError>> + Send + 'a>> {
        Box::pin(self.start_as(ctx, request, streaming, false))
    }

    /// For a follow-up whose append failed: a repeat if a concurrent copy of the message got
    /// into the task's history first, otherwise `err`.
    pub(super) async fn follow_up_failed(
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
            Ok(Some(head)) if find_sent(&head.task, &sent.message_id).is_some() => {
                repeat_of(&self.new_task_id(ctx, sent), sent, SendRecord::Task(head))
            }
            _ => Err(err),
        }
    }

    /// Records a follow-up's message on its task (`head`), unless an earlier copy of it already
    /// was ([`Recording::Recorded`]). An append that failed in the store may have landed all
    /// the same (its answer lost, and the store could not tell it through its retries): if the
    /// task now waits on this very message, that is the task to go on with.
    pub(super) async fn record_follow_up(
        &self,
        ctx: &CallContext,
        sent: &Message,
        agent_request: &AgentRequest,
        head: StoredTask,
        recording: Recording,
    ) -> Result<StoredTask, AppendError> {
        let Recording::Append { exact } = recording else {
            return Ok(head);
        };
        let task_id = &agent_request.task_id;
        let message = agent_request.message.clone();
        match self
            .core
            .log
            .append_user_message(&ctx.owner, head, message, exact)
            .await
        {
            Err(AppendError::Store(err)) => {
                match self.core.log.load_retried(&ctx.owner, task_id).await {
                    Ok(Some(head)) if waits_on(&head, sent) => Ok(head),
                    _ => Err(AppendError::Store(err)),
                }
            }
            appended => appended,
        }
    }

    /// The id a new task for `sent` gets (see [`idempotency::new_task_id`]).
    pub(super) fn new_task_id(&self, ctx: &CallContext, sent: &Message) -> String {
        idempotency::new_task_id(&ctx.owner, sent, self.core.config.message_id_reuse)
    }

    /// SendMessage's inline push config, checked as a push-config write: it needs the push
    /// permission beside the send permission that `call` checked, and a URL the policy allows.
    async fn inline_push_config(
        &self,
        ctx: &CallContext,
        config: Option<TaskPushNotificationConfig>,
    ) -> Result<Option<TaskPushNotificationConfig>, A2AError> {
        let Some(mut cfg) = config else {
            return Ok(None);
        };
        cfg.set_protocol(ctx.version);
        cfg.traceparent = ctx.traceparent.clone();
        ctx.require(Permission::Push)?;
        self.require_push_capability()?;
        self.core
            .config
            .push_policy
            .check_new_url(&cfg.url, &*self.core.config.push_sender)
            .await?;
        Ok(Some(cfg))
    }

    /// The id a new task for this message gets: the one the client chose (the early
    /// protocol), else derived from the messageId when sends are idempotent. A chosen id the
    /// owner already holds makes `message` a follow-up on that task.
    async fn chosen_task_id(
        &self,
        ctx: &CallContext,
        sent: &Message,
        message: &mut Message,
    ) -> Result<String, A2AError> {
        let Some(id) = ctx.requested_task_id.as_deref() else {
            return Ok(self.new_task_id(ctx, sent));
        };
        a2a_protocol::compat::inbound::validate_client_task_id(id)?;
        if !message.task_id.is_empty() && message.task_id != id {
            return Err(A2AError::invalid_params(
                "message.taskId differs from the task id the request chose",
            ));
        }
        let held = self
            .core
            .store
            .load_task(&ctx.owner, id)
            .await
            .map_err(store_error)?;
        if held.is_some() {
            message.task_id = id.to_owned();
        }
        Ok(id.to_owned())
    }

    /// Validates a send, records the message, and starts the agent (inline or queued). A
    /// repeat of a message (same owner and `messageId`) starts nothing: it returns the original
    /// task or reply ([`crate::idempotency`]).
    ///
    /// What it writes runs to its end even if the caller goes away. A client that hangs up
    /// drops its request's future (a local server's HTTP connection does), and a start
    /// stopped between the task's create and its job's enqueue would leave a task nothing
    /// runs: SUBMITTED for good. On Lambda an invocation runs on after its client left; this
    /// makes every host so (see [`detached`]).
    fn start<'a>(
        &'a self,
        ctx: &'a CallContext,
        request: SendMessageRequest,
        streaming: bool,
    ) -> impl Future<Output = Result<Started, A2AError>> + Send + 'a {
        // Not an `async` layer of its own: that would move the start's future once more.
        self.start_as(ctx, request, streaming, true)
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
        // The message as sent, borrowed: a new task's inline run (the common case) only reads
        // it; the rest of the start takes a copy of its own below.
        let sent = request.validate()?;
        let mut message = sent.clone();
        self.check_extensions(ctx)?;
        let configuration = request.configuration.clone().unwrap_or_default();
        let inline_push = self
            .inline_push_config(ctx, configuration.task_push_notification_config.clone())
            .await?;
        let requested = ctx.requested_task_id.as_deref();
        let new_task_id = self.chosen_task_id(ctx, sent, &mut message).await?;
        // The message is already in its task, and nothing ran after it (see [`waits_on`]).
        let mut recorded = false;
        let existing = if message.task_id.is_empty() {
            if requested.is_none() && self.core.config.message_id_reuse == MessageIdReuse::Reject {
                // One read of the id a new task for this message would get tells a repeat.
                if let Some(original) = self.original(ctx, sent, &new_task_id).await? {
                    return Ok(original);
                }
            }
            None
        } else {
            let head = self.load(&ctx.owner, &message.task_id).await?;
            // Before the terminal check: a repeat of the message that ended the task returns it.
            // Not when every send is a new message, whatever its messageId.
            let dedupe = self.core.config.message_id_reuse == MessageIdReuse::Reject;
            if dedupe && find_sent(&head.task, &message.message_id).is_some() {
                if !waits_on(&head, sent) {
                    return repeat_of(&new_task_id, sent, SendRecord::Task(head));
                }
                // Recorded, and nothing ran after it: this copy goes on with it.
                repeat_of(&new_task_id, sent, SendRecord::Task(head.clone()))?;
                recorded = true;
            }
            if head.task.status.state.is_terminal() {
                return Err(A2AError::unsupported(format!(
                    "Task {} is in terminal state {} and accepts no more messages",
                    head.task.id, head.task.status.state
                )));
            }
            if !recorded {
                super::generation::check_match(ctx, &configuration, &head)?;
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
        // A 1.1 `ifGenerationMatch` (checked above) holds until the message is recorded.
        let recording = if recorded {
            Recording::Recorded
        } else {
            let exact = super::generation::if_generation_match(ctx, &configuration).is_some();
            Recording::Append { exact }
        };
        let place = match (placement, existing) {
            // Nothing is written here: the agent's run, a task of its own, creates the task.
            // A caller gone meanwhile leaves nothing half done.
            (Placement::Inline, None) => {
                return self
                    .start_inline_new(ctx, sent, agent_request, inline_push, retry)
                    .await;
            }
            (Placement::Inline, Some(head)) => Place::FollowUp(head),
            (Placement::Queued, existing) => Place::Queued(existing),
        };
        // The rest writes (a config, the message, a queued task and its job): it runs in a
        // task of its own, to its end whatever the caller does.
        let (service, ctx, sent) = (self.clone(), ctx.clone(), sent.clone());
        let retry = retry.map(|(request, streaming)| (request.clone(), streaming));
        let placed = Placed {
            place,
            recording,
            inline_push,
        };
        detached(Box::pin(async move {
            let retry = retry
                .as_ref()
                .map(|(request, streaming)| (request, *streaming));
            service
                .start_placed(&ctx, &sent, agent_request, placed, retry)
                .await
        }))
        .await
    }

    /// Starts an inline execution of a new message: the agent's first report creates the
    /// task, or answers with a direct message.
    async fn start_inline_new(
        &self,
        ctx: &CallContext,
        sent: &Message,
        agent_request: AgentRequest,
        inline_push: Option<TaskPushNotificationConfig>,
        retry: Option<(&SendMessageRequest, bool)>,
    ) -> Result<Started, A2AError> {
        let task_id = agent_request.task_id.clone();
        let (emitter, first) = new_emitter(
            &self.core.log,
            &self.core.durable,
            &ctx.owner,
            agent_request,
            None,
            inline_push,
            DurableRun::fresh(1, ctx.traceparent.clone()),
        );
        let execution = self.spawn_inline(emitter.leased(&self.core.config, false), None);
        match first.await {
            Ok(FirstOutcome::Message(message)) => Ok(Started::Message(message)),
            Ok(FirstOutcome::Superseded) => self.superseded(ctx, sent, &task_id, retry).await,
            Ok(FirstOutcome::NotCreated(err)) => Err(err),
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

/// A message [`A2aService::start_placed`] writes before its agent runs, as
/// [`A2aService::start_as`] found it.
pub(super) struct Placed {
    pub(super) place: Place,
    pub(super) recording: Recording,
    pub(super) inline_push: Option<TaskPushNotificationConfig>,
}

/// Where a [`Placed`] message goes (a new task's inline run writes nothing before its agent
/// runs, and is not one of them).
pub(super) enum Place {
    /// A queued execution: of a new task (`None`), or of a follow-up of the task.
    Queued(Option<StoredTask>),
    /// An inline follow-up of the task.
    FollowUp(StoredTask),
}

/// Runs `work` in a task of its own and waits for it: dropping the caller's future does not
/// stop it halfway (a panic in it is the caller's). Boxed by the caller, as `spawn_inline`'s
/// run is: a spawned future is moved into the task's cell, and a box moves as a pointer; and
/// the caller's own future then holds a pointer, not the work (kilobytes, in every send's).
async fn detached<T, F>(work: Pin<Box<F>>) -> Result<T, A2AError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, A2AError>> + Send + 'static,
{
    use tracing::Instrument as _;
    match tokio::spawn(work.instrument(tracing::Span::current())).await {
        Ok(done) => done,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(internal("a send's start was cancelled", e)),
    }
}

/// How a follow-up's message gets into its task.
#[derive(Clone, Copy, Debug)]
pub(super) enum Recording {
    /// Appended now; `exact`: only on top of the head as read (1.1's `ifGenerationMatch`).
    Append { exact: bool },
    /// Already recorded by an earlier copy of the message whose answer, or whose run, was
    /// lost: the task still waits with it the last message of its history ([`waits_on`]).
    Recorded,
}

/// Whether `head` holds `sent` as the last message of its history and still waits for input:
/// the message was recorded, and nothing ran after it (an agent's run writes WORKING first).
/// Taken for a plain repeat, such a task would wait for good (issue 52's fault run at 20 %,
/// seed 7: a held task left INPUT_REQUIRED after a follow-up answered without an error).
pub(super) fn waits_on(head: &StoredTask, sent: &Message) -> bool {
    head.task.status.state.is_interrupted()
        && head
            .task
            .history
            .last()
            .is_some_and(|last| last.role == Role::User && last.message_id == sent.message_id)
}

/// Whether a task's stream would stop at once: it is terminal or waits for the client.
fn stops(head: &StoredTask) -> bool {
    let state = head.task.status.state;
    state.is_terminal() || state.is_interrupted()
}

/// Whether `record` holds `sent` (by its `messageId`): the task's history, or the reply's request.
fn holds(record: &SendRecord, sent: &Message) -> bool {
    match record {
        SendRecord::Task(head) => find_sent(&head.task, &sent.message_id).is_some(),
        SendRecord::Reply(reply) => reply.request.message_id == sent.message_id,
    }
}

/// The original result for `sent`, a repeat of the message recorded in `record`, or
/// InvalidParams if its body differs.
/// `new_task_id` is the id a new task for `sent` gets.
pub(super) fn repeat_of(
    new_task_id: &str,
    sent: &Message,
    record: SendRecord,
) -> Result<Started, A2AError> {
    match record {
        SendRecord::Task(head) => {
            let recorded = find_sent(&head.task, &sent.message_id).ok_or_else(|| {
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

pub(super) enum Started {
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
        execution: Option<InlineRun>,
    },
}
