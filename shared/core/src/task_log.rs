//! The task event log: conditional appends ([`TaskLog`]), and following a task's log as a stream
//! of events ([`TaskLog::follow`]). Every change to a task goes through here; streams, blocking
//! sends and push fan-out read what was written here.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use a2a_protocol::{
    A2AError, Message, StreamResponse, Task, TaskPushNotificationConfig, TaskState, TaskStatus,
    TaskStatusUpdateEvent, Timestamp,
};
use futures::Stream;
use tokio::time::Instant;

use crate::event::{LoggedEvent, TaskEvent};
use crate::observe::Observer;
use crate::ports::{
    Owner, PushJob, PushQueue, StoreError, StoredReply, StoredTask, TaskStore, JOB_FORMAT_VERSION,
};
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

/// Writes to the event log with conditional appends, and fans appended events out to push.
/// Holds only the store, the push queue and the two settings writing needs, so the agent's
/// emitter, the worker and the operations can all share it.
pub struct TaskLog {
    pub(crate) store: Arc<dyn TaskStore>,
    push: Arc<dyn PushQueue>,
    retention: Duration,
    push_notifications: bool,
    /// Told of every task that reaches a terminal state.
    observer: Arc<dyn Observer>,
    /// Set when the process stops: followers drain the log and end their streams cleanly.
    stopping: tokio::sync::watch::Sender<bool>,
}

impl TaskLog {
    /// A log on `store`, fanning events out to `push` when `push_notifications` is on, keeping
    /// what it writes for `retention`.
    pub(crate) fn new(
        store: Arc<dyn TaskStore>,
        push: Arc<dyn PushQueue>,
        retention: Duration,
        push_notifications: bool,
        observer: Arc<dyn Observer>,
    ) -> Self {
        Self {
            store,
            push,
            retention,
            push_notifications,
            observer,
            stopping: tokio::sync::watch::channel(false).0,
        }
    }

    /// Ends every stream following this log once it has delivered what the log holds now
    /// (a graceful stop: the final events just written still reach their clients).
    pub(crate) fn stop_following(&self) {
        self.stopping.send_replace(true);
    }

    fn expires_at(&self) -> Timestamp {
        Timestamp::from_millis(Timestamp::now().millis() + self.retention.as_millis() as i64)
    }

    /// The owner's task, or TaskNotFound.
    pub(crate) async fn load(&self, owner: &Owner, task_id: &str) -> Result<StoredTask, A2AError> {
        self.store
            .load_task(owner, task_id)
            .await
            .map_err(store_error)?
            .ok_or_else(|| A2AError::task_not_found(task_id))
    }

    /// Appends `events` on top of `head`. On a version conflict it re-reads the head and tries
    /// again; it gives up if the task became terminal meanwhile.
    pub(crate) async fn append(
        &self,
        owner: &Owner,
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
            match self.store.append_events(&next, head.version, &logged).await {
                Ok(()) => {
                    self.fan_out(owner, &next.task.id, &logged, None).await;
                    self.observe_end(&next);
                    return Ok(next);
                }
                Err(StoreError::Conflict) => {
                    head = self
                        .store
                        .load_task(owner, &head.task.id)
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
        owner: &Owner,
        request: &AgentRequest,
        events: Vec<TaskEvent>,
        inline_push: Option<&TaskPushNotificationConfig>,
    ) -> Result<StoredTask, AppendError> {
        // A task being created has no push configs but the inline one (the push config
        // operations need the task to exist), so the fan-out needs no lookup.
        let mut configs = Vec::new();
        if let Some(cfg) = inline_push {
            let stored = self
                .put_push_config(owner, &request.task_id, cfg.clone())
                .await
                .map_err(AppendError::Invalid)?;
            configs.push(stored);
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
            owner: owner.clone(),
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
        self.store
            .create_task(&head, &logged)
            .await
            .map_err(AppendError::Store)?;
        self.fan_out(owner, &head.task.id, &logged, Some(configs))
            .await;
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

    /// Records a client's follow-up message on its task.
    pub(crate) async fn append_user_message(
        &self,
        owner: &Owner,
        head: StoredTask,
        message: Message,
    ) -> Result<StoredTask, A2AError> {
        self.append(owner, head, vec![TaskEvent::UserMessage { message }])
            .await
            .map_err(A2AError::from)
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
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        config.task_id = task_id.to_string();
        if config.id.is_empty() {
            config.id = crate::new_id();
        }
        self.store
            .put_push_config(owner, &config, self.expires_at())
            .await
            .map_err(store_error)?;
        Ok(config)
    }

    /// One push job per appended event and push config. `known` holds the task's push configs
    /// when the writer already knows them (a create), which saves the lookup. A failure here is
    /// logged, not returned: the event is in the log, which is what the client is promised.
    async fn fan_out(
        &self,
        owner: &Owner,
        task_id: &str,
        events: &[LoggedEvent],
        known: Option<Vec<TaskPushNotificationConfig>>,
    ) {
        if !self.push_notifications {
            return;
        }
        let visible: Vec<&LoggedEvent> = events
            .iter()
            .filter(|e| e.event.to_stream_response().is_some())
            .collect();
        if visible.is_empty() {
            return;
        }
        let listed = match known {
            Some(configs) => Ok(configs),
            None => self.store.list_push_configs(owner, task_id).await,
        };
        let configs = match listed {
            Ok(configs) if configs.is_empty() => return,
            Ok(configs) => configs,
            Err(err) => {
                tracing::error!(%task_id, error = %err, "listing push configs failed; pushes for these events are lost");
                return;
            }
        };
        let jobs: Vec<PushJob> = visible
            .iter()
            .flat_map(|e| {
                configs.iter().map(move |c| PushJob {
                    v: JOB_FORMAT_VERSION,
                    owner: owner.clone(),
                    task_id: task_id.to_string(),
                    seq: e.seq,
                    config_id: c.id.clone(),
                })
            })
            .collect();
        if let Err(err) = self.push.enqueue_push(&jobs).await {
            tracing::error!(%task_id, error = %err, "enqueueing push jobs failed");
        }
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
                if !fresh {
                    const PAGE: usize = 100;
                    match store
                        .read_events(&st.owner, &st.task_id, st.after, PAGE)
                        .await
                    {
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
                    match store.load_task(&st.owner, &st.task_id).await {
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
