//! The task event log: conditional appends ([`TaskLog`]), and following a task's log as a stream
//! of events ([`TaskLog::follow`]). Every change to a task goes through here; streams, blocking
//! sends and push fan-out read what was written here.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use a2a_protocol::{
    A2AError, Artifact, Message, StreamResponse, Task, TaskArtifactUpdateEvent,
    TaskPushNotificationConfig, TaskState, TaskStatus, TaskStatusUpdateEvent, Timestamp,
};
use futures::Stream;
use tokio::time::Instant;

use crate::event::{LoggedEvent, TaskEvent};
use crate::observe::Observer;
use crate::ports::{Owner, StoreError, StoredReply, StoredTask, TaskStore};
use crate::request::{AgentError, AgentRequest};

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

/// Logs an internal failure and returns the generic error the client sees.
pub(crate) fn internal(context: &str, err: impl std::fmt::Display) -> A2AError {
    tracing::error!(%err, context, "internal error");
    A2AError::Internal("Internal error".into())
}

/// What a task ended FAILED by a store failure says: the failure's own text names internals
/// (the backend, its error codes), so it goes to the log, and the task says only this.
pub(crate) const STORE_UNAVAILABLE: &str =
    "The task could not be saved: the task store was unavailable.";

/// An agent's view of a store failure: logged in full, told in [`STORE_UNAVAILABLE`]'s words.
pub(crate) fn store_unavailable(err: impl std::fmt::Display) -> AgentError {
    tracing::error!(%err, "the task store failed");
    AgentError::Failed(STORE_UNAVAILABLE.into())
}

/// The pauses before a store call that failed in the store's backend is made again: a task's
/// events, or a durable step's read, are not given up for a burst of throttling of a second or
/// two.
const STORE_RETRY_PAUSES: [Duration; 2] = [Duration::from_millis(250), Duration::from_secs(1)];

/// `call`, made again after each of [`STORE_RETRY_PAUSES`] while the store's backend fails it
/// (a throttling burst outlasting the adapter's own retries); any other outcome is returned as
/// it is. Only for calls that may be repeated: reads, and writes whose store tells a repeat of a
/// write that landed from a new one. `what` and `task_id` name it in the log.
pub(crate) async fn with_store_retries<T, F, Fut>(
    what: &str,
    task_id: &str,
    call: F,
) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    crate::retry::after_pauses(
        &STORE_RETRY_PAUSES,
        |err| matches!(err, StoreError::Backend(_)),
        call,
        |err| tracing::warn!(%task_id, error = %err, what, "a store call failed; it is tried again"),
    )
    .await
}

/// The client's view of a store failure: what it can act on, or a generic internal error.
pub(crate) fn store_error(err: StoreError) -> A2AError {
    match err {
        StoreError::InvalidPageToken => A2AError::invalid_params("pageToken is not valid"),
        StoreError::TooLarge(what) => A2AError::PayloadTooLarge(what),
        other => internal("store failure", other),
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
    /// A relayed update would make the task larger than the relay's limits allow (why).
    TooLarge(String),
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
            AppendError::TooLarge(why) => A2AError::PayloadTooLarge(why),
        }
    }
}

impl From<AppendError> for AgentError {
    fn from(err: AppendError) -> Self {
        match err {
            AppendError::Terminal(task) => AgentError::TaskEnded(task.status.state),
            AppendError::NotFound(_) => AgentError::TaskEnded(TaskState::Unspecified),
            AppendError::Invalid(e) => AgentError::Failed(e.message()),
            AppendError::Store(e) => store_unavailable(e),
            AppendError::TooLarge(why) => AgentError::Failed(why),
        }
    }
}

/// A status event gets its timestamp when it is written, never earlier than the task's current
/// status timestamp: ListTasks orders by it and `statusTimestampAfter` filters on it, so it must
/// not go backwards (an emit built a moment before a concurrent write would otherwise be older).
/// Stamped in place: a created task's event holds the whole task, and a copy of it would be
/// thrown away.
fn stamp(event: &mut TaskEvent, task: &Task, now: Timestamp) {
    if let TaskEvent::Status { update } = event {
        let floor = task.status.timestamp.unwrap_or(now);
        update.status.timestamp = Some(now.max(floor));
    }
}

/// A FAILED status event for `task`, with `reason` as the agent's message.
pub(crate) fn failed_status(task: &Task, reason: &str) -> TaskEvent {
    ended_status(task, TaskState::Failed, reason, None)
}

/// A terminal status event for `task` with `text` as the agent's message.
pub(crate) fn ended_status(
    task: &Task,
    state: TaskState,
    text: &str,
    metadata: Option<a2a_protocol::Metadata>,
) -> TaskEvent {
    TaskEvent::Status {
        update: TaskStatusUpdateEvent {
            generation: 0,
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            status: TaskStatus {
                state,
                message: Some(Message {
                    message_id: crate::new_id(),
                    context_id: task.context_id.clone(),
                    task_id: task.id.clone(),
                    ..Message::agent_text(text)
                }),
                timestamp: Some(Timestamp::now()),
            },
            metadata,
        },
    }
}

/// `config` as stored for `task_id`: the task's id, and an id if it has none: a fresh one, or
/// for a config set through an older version the task's id, as the 0.3 SDKs' servers
/// (Python, JS) name it (their clients read it back by the task's id; the early protocol has
/// one config a task, which setting again replaces).
fn push_config_of(
    task_id: &str,
    mut config: TaskPushNotificationConfig,
) -> TaskPushNotificationConfig {
    config.task_id = task_id.to_string();
    if config.id.is_empty() {
        config.id = match config.older_version {
            Some(_) => task_id.to_string(),
            None => crate::new_id(),
        };
    }
    config
}

/// The expiry of what is written at `now_ms` (see [`TaskLog`]'s `expires_at`): `retention`
/// later, rounded up to a whole step of a sixteenth of the retention (at least a millisecond),
/// so a task lives at most that much longer than the retention.
fn expiry_at(now_ms: i64, retention: Duration) -> i64 {
    let retention = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX / 2);
    let step = (retention / 16).max(1);
    let at = now_ms.saturating_add(retention);
    at.div_euclid(step) * step + if at.rem_euclid(step) == 0 { 0 } else { step }
}

/// Writes to the event log with conditional appends. Holds only the store and the setting
/// writing needs, so the agent's emitter, the worker and the operations can all share it. The
/// push fan-out of what it writes is the store's (see [`TaskStore`]): atomic with the write.
pub struct TaskLog {
    pub(crate) store: Arc<dyn TaskStore>,
    retention: Duration,
    /// Told of every task that reaches a terminal state.
    observer: Arc<dyn Observer>,
    /// Set when the process stops: followers drain the log and end their streams cleanly.
    stopping: tokio::sync::watch::Sender<bool>,
    /// Whether a task takes one turn per `messageId` (idempotent sends): then a concurrent copy
    /// of a follow-up that lost the conditional append does not become a second turn when it
    /// tries again. Off when every send is a new message whatever its `messageId`.
    one_turn_per_message_id: bool,
}

impl TaskLog {
    /// A log on `store`, keeping what it writes for `retention`.
    pub(crate) fn new(
        store: Arc<dyn TaskStore>,
        retention: Duration,
        observer: Arc<dyn Observer>,
        one_turn_per_message_id: bool,
    ) -> Self {
        Self {
            store,
            retention,
            observer,
            stopping: tokio::sync::watch::channel(false).0,
            one_turn_per_message_id,
        }
    }

    /// Ends every stream following this log once it has delivered what the log holds now
    /// (a graceful stop: the final events just written still reach their clients).
    pub(crate) fn stop_following(&self) {
        self.stopping.send_replace(true);
    }

    /// The expiry of what is written now: a full retention from now, rounded up to the next
    /// whole step ([`expiry_at`]: a sixteenth of the retention). So the tasks written within one step share their expiry, and a
    /// store can count an owner's live tasks per expiry (DynamoDB keeps ListTasks' counts that
    /// way) in at most `retention / step + 1` live groups, however many tasks there are.
    fn expires_at(&self) -> Timestamp {
        Timestamp::from_millis(expiry_at(Timestamp::now().millis(), self.retention))
    }

    /// The expiry an append gives a task that expires at `current`: a full retention from now,
    /// but only once `current` has fallen behind that by more than a tenth of the retention (at
    /// most an hour). Within that slack the expiry stays put, so an append that changes no
    /// status leaves every attribute the by-owner index holds alone and writes no index entry
    /// on DynamoDB (one write unit per streamed chunk saved); a task still expires no earlier
    /// than `retention - slack` after its last write.
    fn extended_expiry(&self, current: Timestamp) -> Timestamp {
        let fresh = self.expires_at();
        let slack = (self.retention / 10).min(Duration::from_secs(3600));
        if fresh.millis() - current.millis() > slack.as_millis() as i64 {
            fresh
        } else {
            current
        }
    }

    /// The owner's task, or TaskNotFound.
    pub(crate) async fn load(&self, owner: &Owner, task_id: &str) -> Result<StoredTask, A2AError> {
        let mut head = self
            .store
            .load_task(owner, task_id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| A2AError::task_not_found(task_id))?;
        // The generation (A2A 1.1) is the version; a head written before it was kept has none.
        head.task.generation = head.version as i64;
        Ok(head)
    }

    /// Waits, at most `max_wait`, for an append to the task after `after_version` (a hint
    /// only: the caller reads the head again). `true` when this process is stopping instead.
    pub(crate) async fn wait_for_change(
        &self,
        task_id: &str,
        after_version: u64,
        max_wait: Duration,
    ) -> bool {
        let mut stopping = self.stopping.subscribe();
        if *stopping.borrow_and_update() {
            return true;
        }
        tokio::select! {
            () = self.store.wait_for_append(task_id, after_version, max_wait) => false,
            _ = stopping.changed() => true,
        }
    }

    /// Refuses a client message whose `messageId` the task's history already holds, when a
    /// task takes one turn per `messageId`. A write-time rule, not a rule of the log: a log
    /// written without it replays all the same.
    fn check_turn(&self, task: &Task, event: &TaskEvent) -> Result<(), A2AError> {
        match event {
            TaskEvent::UserMessage { message }
                if self.one_turn_per_message_id
                    && crate::event::find_sent(task, &message.message_id).is_some() =>
            {
                Err(A2AError::invalid_params(format!(
                    "messageId {} is already in the history of task {}",
                    message.message_id, task.id
                )))
            }
            _ => Ok(()),
        }
    }

    /// Appends `events` on top of `head`. On a version conflict it re-reads the head and tries
    /// again; it gives up if the task became terminal meanwhile.
    pub(crate) async fn append(
        &self,
        owner: &Owner,
        head: StoredTask,
        events: Vec<TaskEvent>,
    ) -> Result<StoredTask, AppendError> {
        self.append_at(owner, head, events, false, &[]).await
    }

    /// [`Self::append`], each attempt first settling the task on `settled`: the artifacts of
    /// the remote tasks its execution called, as they stopped. One of them the task holds
    /// otherwise (a remote's chunk pushed twice, whose push was let in while the call was
    /// still waiting and written after it ended) is written again whole, in the same write:
    /// whatever was appended before, this write puts right, and nothing is appended after the
    /// write that ends the task.
    pub(crate) async fn append_settling(
        &self,
        owner: &Owner,
        head: StoredTask,
        events: Vec<TaskEvent>,
        settled: &[Artifact],
    ) -> Result<StoredTask, AppendError> {
        self.append_at(owner, head, events, false, settled).await
    }

    /// [`Self::append`] on top of `head` only: `Ok(None)` when the task moved on since `head`
    /// was read, for a caller whose events depend on what the task holds to decide again.
    pub(crate) async fn append_on(
        &self,
        owner: &Owner,
        head: StoredTask,
        events: Vec<TaskEvent>,
    ) -> Result<Option<StoredTask>, AppendError> {
        match self.append_at(owner, head, events, true, &[]).await {
            Ok(next) => Ok(Some(next)),
            Err(AppendError::Invalid(A2AError::TaskGenerationMismatch { .. })) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// [`Self::append`]; `exact`: only on top of `head` as given (an A2A 1.1
    /// `ifGenerationMatch`): a conflict is TaskGenerationMismatchError, not a new attempt on the
    /// head as it stands now. `settled`: see [`Self::append_settling`].
    async fn append_at(
        &self,
        owner: &Owner,
        mut head: StoredTask,
        events: Vec<TaskEvent>,
        exact: bool,
        settled: &[Artifact],
    ) -> Result<StoredTask, AppendError> {
        for _attempt in 0..32 {
            if head.task.status.state.is_terminal() {
                return Err(AppendError::Terminal(Box::new(head.task)));
            }
            let settling: Vec<TaskEvent> = unsettled(&head.task, settled)
                .map(|artifact| TaskEvent::Artifact {
                    update: TaskArtifactUpdateEvent {
                        task_id: head.task.id.clone(),
                        context_id: head.task.context_id.clone(),
                        artifact: artifact.clone(),
                        append: false,
                        last_chunk: true,
                        metadata: None,
                        generation: 0,
                    },
                })
                .collect();
            // The head is the caller's to give: it becomes the next head in place (a streaming
            // task's head holds every chunk so far; a copy per append would be a big one).
            let (expected, expires_at) = (head.version, head.expires_at);
            let mut next = head;
            let now = Timestamp::now();
            let mut logged = Vec::with_capacity(settling.len() + events.len());
            for event in settling.iter().chain(&events) {
                if let Err(e) = self.check_turn(&next.task, event) {
                    return Err(AppendError::Invalid(e));
                }
                // Copied: an attempt that finds the task moved on uses the events again.
                let mut event = event.clone();
                stamp(&mut event, &next.task, now);
                if let Err(e) = event.apply(&mut next.task) {
                    return Err(if next.task.status.state.is_terminal() {
                        AppendError::Terminal(Box::new(next.task))
                    } else {
                        AppendError::Invalid(e)
                    });
                }
                next.version += 1;
                logged.push(LoggedEvent {
                    seq: next.version,
                    at: now,
                    event,
                });
            }
            next.task.generation = next.version as i64;
            next.expires_at = self.extended_expiry(expires_at);
            match self.append_retried(&next, expected, &logged).await {
                Ok(()) => {
                    self.observe_end(&next);
                    return Ok(next);
                }
                Err(StoreError::Conflict) => {
                    head = self
                        .load_retried(owner, &next.task.id)
                        .await
                        .map_err(AppendError::Store)?
                        .ok_or_else(|| AppendError::NotFound(next.task.id.clone()))?;
                    if exact {
                        return Err(AppendError::Invalid(A2AError::TaskGenerationMismatch {
                            task_id: head.task.id,
                            expected: expected as i64,
                            current: head.version as i64,
                        }));
                    }
                }
                Err(other) => return Err(AppendError::Store(other)),
            }
        }
        Err(AppendError::Store(StoreError::Backend(
            "too many concurrent writers on one task".into(),
        )))
    }

    /// The owner's task as stored, read again after a failure of the backend (see
    /// [`with_store_retries`]): the read a write depends on, so that a throttling burst does
    /// not fail the work the write belongs to.
    pub(crate) async fn load_retried(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<StoredTask>, StoreError> {
        with_store_retries("a task read", task_id, || {
            self.store.load_task(owner, task_id)
        })
        .await
    }

    /// The store's append of `logged`, made again, the same, after a failure of the backend
    /// (a throttling burst outlasting the adapter's own retries): the store tells a repeat of
    /// a write that landed from a new one, so the events are written once either way.
    async fn append_retried(
        &self,
        next: &StoredTask,
        expected: u64,
        logged: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        with_store_retries("a task write", &next.task.id, || {
            self.store.append_events(next, expected, logged)
        })
        .await
    }

    /// Creates a task for `request` (SUBMITTED, with the message in its history), followed by
    /// `events`, in one atomic write. An inline push config is written with it, so that it
    /// sees every event.
    pub(crate) async fn create(
        &self,
        owner: &Owner,
        request: &AgentRequest,
        events: Vec<TaskEvent>,
        inline_push: Option<&TaskPushNotificationConfig>,
    ) -> Result<StoredTask, AppendError> {
        let configs: Vec<TaskPushNotificationConfig> = inline_push
            .map(|cfg| push_config_of(&request.task_id, cfg.clone()))
            .into_iter()
            .collect();
        let now = Timestamp::now();
        let created = Task {
            generation: 0,
            timeline: Vec::new(),
            id: request.task_id.clone(),
            context_id: request.context_id.clone(),
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Some(now),
            },
            artifacts: Vec::new(),
            history: vec![request.message.clone()],
            metadata: crate::trace::created_task_metadata(),
        };
        let mut head = StoredTask {
            owner: owner.clone(),
            task: Task::default(),
            version: 0,
            expires_at: self.expires_at(),
        };
        let mut logged = Vec::new();
        for mut event in std::iter::once(TaskEvent::Created { task: created }).chain(events) {
            stamp(&mut event, &head.task, now);
            event.apply(&mut head.task).map_err(AppendError::Invalid)?;
            head.version += 1;
            logged.push(LoggedEvent {
                seq: head.version,
                at: now,
                event,
            });
        }
        head.task.generation = head.version as i64;
        let created = if configs.is_empty() {
            self.store.create_task(&head, &logged).await
        } else {
            self.store
                .create_task_with_push_configs(&head, &logged, &configs)
                .await
        };
        created.map_err(AppendError::Store)?;
        self.observe_end(&head);
        Ok(head)
    }

    /// Tells the observer when `head` is terminal: only the append that made it so gets here,
    /// since a terminal task takes no further append.
    fn observe_end(&self, head: &StoredTask) {
        if head.task.status.state.is_terminal() {
            self.observer.task_finished(head.task.status.state);
        }
    }

    /// Records the agent's direct `reply` to `request` under the request's task id, so a repeat
    /// of the message gets the same reply; `false` if a racing copy of the message recorded its
    /// task or reply first.
    pub(crate) async fn record_reply(
        &self,
        owner: &Owner,
        request: &AgentRequest,
        reply: &Message,
    ) -> Result<bool, StoreError> {
        let record = StoredReply {
            owner: owner.clone(),
            request: request.message.clone(),
            reply: reply.clone(),
            expires_at: self.expires_at(),
        };
        self.store.put_reply(&request.task_id, &record).await
    }

    /// Records a client's follow-up message on its task; `exact`: only on top of `head` as
    /// given (see [`Self::append_at`]).
    pub(crate) async fn append_user_message(
        &self,
        owner: &Owner,
        head: StoredTask,
        message: Message,
        exact: bool,
    ) -> Result<StoredTask, AppendError> {
        self.append_at(
            owner,
            head,
            vec![TaskEvent::UserMessage { message }],
            exact,
            &[],
        )
        .await
    }

    /// Ends the task FAILED with `reason` (best effort, for paths that are already failing).
    pub(crate) async fn finish_failed(
        &self,
        owner: &Owner,
        head: StoredTask,
        reason: &str,
    ) -> Result<StoredTask, AppendError> {
        let event = failed_status(&head.task, reason);
        self.append(owner, head, vec![event]).await
    }

    /// Stores a push config of the owner's task (with a fresh id if it has none).
    pub(crate) async fn put_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        let config = push_config_of(task_id, config);
        self.store
            .put_push_config(owner, &config, self.expires_at())
            .await
            .map_err(store_error)?;
        Ok(config)
    }

    /// Follows a task's log from `after_seq`: yields every stream-visible event in order and
    /// ends after a terminal or interrupted status, or at `deadline`.
    pub(crate) fn follow(
        self: &Arc<Self>,
        owner: Owner,
        task_id: String,
        after_seq: u64,
        deadline: Instant,
    ) -> impl Stream<Item = Result<StreamItem, A2AError>> + Send + 'static {
        struct State {
            log: Arc<TaskLog>,
            owner: Owner,
            task_id: String,
            after: u64,
            buffer: VecDeque<LoggedEvent>,
            done: bool,
            /// The last read returned events: the log was just read, so the next step waits
            /// for an append instead of reading again at once.
            fresh: bool,
            deadline: Instant,
            stopping: tokio::sync::watch::Receiver<bool>,
        }
        let state = State {
            stopping: self.stopping.subscribe(),
            log: self.clone(),
            owner,
            task_id,
            after: after_seq,
            buffer: VecDeque::new(),
            done: false,
            fresh: false,
            deadline,
        };
        futures::stream::unfold(state, |mut st| async move {
            let store = st.log.store.clone();
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
                // A stopping log is drained: read once more whatever was just read.
                let fresh = std::mem::take(&mut st.fresh) && !*st.stopping.borrow();
                // Each read is made again while the store's backend fails it: a stream that
                // ended at a throttling burst would leave its client without the task's end
                // (issue 52's fault run at 20 %: a stream closed after 3 events).
                if !fresh {
                    const PAGE: usize = 100;
                    let read = with_store_retries("a stream's read", &st.task_id, || {
                        store.read_events(&st.owner, &st.task_id, st.after, PAGE)
                    });
                    match read.await {
                        Ok(events) if !events.is_empty() => {
                            // A full page may have more behind it: read on at once.
                            st.fresh = events.len() < PAGE;
                            st.buffer.extend(events);
                            continue;
                        }
                        Ok(_) => {}
                        Err(err) => {
                            st.done = true;
                            return Some((Err(store_error(err)), st));
                        }
                    }
                }
                let now = Instant::now();
                if now >= st.deadline || *st.stopping.borrow_and_update() {
                    return None;
                }
                // Only a read that found nothing asks whether the task stopped without a
                // closing event after `after` (a resume past the end).
                if !fresh {
                    let read = with_store_retries("a stream's read", &st.task_id, || {
                        store.load_task(&st.owner, &st.task_id)
                    });
                    match read.await {
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
                }
                let wait = (st.deadline - now).min(Duration::from_secs(5));
                tokio::select! {
                    () = store.wait_for_append(&st.task_id, st.after, wait) => {}
                    _ = st.stopping.changed() => {}
                }
            }
        })
    }
}

/// The artifacts of `remote` (a remote task's, as it stopped) that `task` does not hold as they
/// are (same id, same parts): what settling `task` on them writes again, whole.
pub(crate) fn unsettled<'a>(
    task: &'a Task,
    remote: &'a [Artifact],
) -> impl Iterator<Item = &'a Artifact> + 'a {
    remote.iter().filter(move |r| {
        !task
            .artifacts
            .iter()
            .any(|a| a.artifact_id == r.artifact_id && a.parts == r.parts)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol::Part;

    fn artifact(id: &str, texts: &[&str]) -> Artifact {
        Artifact {
            artifact_id: id.into(),
            parts: texts.iter().map(|t| Part::text(*t)).collect(),
            ..Artifact::default()
        }
    }

    #[test]
    fn a_chunk_appended_after_the_remote_stopped_is_unsettled_and_nothing_else() {
        // The remote's answer as it stopped: one artifact of three chunks, one of one.
        let stopped = [artifact("a", &["1", "2", "3"]), artifact("b", &["x"])];
        let mut task = Task {
            artifacts: vec![artifact("a", &["1", "2", "3"]), artifact("b", &["x"])],
            ..Task::default()
        };
        assert_eq!(
            unsettled(&task, &stopped).count(),
            0,
            "settled: nothing written"
        );
        // A chunk pushed twice, written after the call ended; and our own artifact beside.
        task.artifacts[0] = artifact("a", &["1", "2", "3", "2"]);
        task.artifacts.push(artifact("ours", &["mine"]));
        let again: Vec<&Artifact> = unsettled(&task, &stopped).collect();
        assert_eq!(again, [&stopped[0]], "only the changed artifact, whole");
        // An artifact of the remote's that a write lost is written again too.
        task.artifacts.remove(1);
        assert_eq!(unsettled(&task, &stopped).count(), 2);
    }

    #[test]
    fn expiries_are_a_retention_away_rounded_up_to_a_sixteenth_of_it() {
        let day = Duration::from_secs(24 * 3600);
        let step = 24 * 3600 * 1000 / 16;
        for now in [0, 1, step - 1, step, 7 * step + 3, 1_795_726_661_458] {
            let at = expiry_at(now, day);
            let earliest = now + 24 * 3600 * 1000;
            assert!(at >= earliest && at < earliest + step, "{now}: {at}");
            assert_eq!(at % step, 0, "{now}: {at}");
        }
        // Within one step, every write gets the same expiry.
        assert_eq!(expiry_at(10 * step + 1, day), expiry_at(11 * step - 1, day));
        // A retention under 16 ms still moves by whole milliseconds.
        assert_eq!(expiry_at(5, Duration::from_millis(3)), 8);
    }
}
