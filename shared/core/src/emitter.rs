//! The [`Emitter`]: the agent's handle on its task. Every emit is a conditional append to the
//! task's event log through [`TaskLog`]; the emitter knows nothing of the operations.

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol::{
    Artifact, Message, Part, Role, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent, Timestamp,
};
use tokio::sync::{oneshot, Mutex};

use crate::event::TaskEvent;
use crate::ports::{Owner, StoreError, StoredTask};
use crate::request::{AgentError, AgentRequest};
use crate::task_log::{AppendError, TaskLog};

/// How the agent's first report resolved the request: a task exists now, or a direct reply.
#[derive(Debug)]
pub(crate) enum FirstOutcome {
    /// The task exists in the store: its head as the create wrote it, so that the caller need
    /// not read back what was just written.
    TaskStarted(Box<StoredTask>),
    /// The agent answered with a message and no task.
    Message(Message),
    /// A concurrent copy of the same message (same owner and `messageId`) created the task or
    /// recorded a reply first: this run's report was discarded, and it is stopped.
    Superseded,
}

pub(crate) struct EmitterState {
    /// The task head as this emitter last wrote it; `None` until the task exists (a new task is
    /// created by the agent's first emit).
    pub(crate) head: Option<StoredTask>,
    pub(crate) first: Option<oneshot::Sender<FirstOutcome>>,
    pub(crate) replied: bool,
    /// Artifacts not written yet. Before the task's first status: they are written together
    /// with that status, in the one write that creates the task. An echo-like agent (artifact,
    /// then complete) thus costs one store write instead of two, and nobody can observe the
    /// difference: the task becomes visible to streams, pushes and reads with that write. After
    /// it, in an execution whose caller does not stream: held at most [`ARTIFACT_HOLD`] for the
    /// agent's next emit, and written with it (see [`Emitter::emit`]).
    pub(crate) pending: Vec<TaskEvent>,
    /// A write of held artifacts is scheduled ([`ARTIFACT_HOLD`] after the first of them).
    pub(crate) flush_scheduled: bool,
    /// Why a write of held artifacts failed: the agent's next emit returns it.
    pub(crate) deferred: Option<AgentError>,
    /// Whether this execution holds the task's inline lease now (see [`InlineLease`]).
    pub(crate) lease_held: bool,
    /// A concurrent copy of the message won (see [`FirstOutcome::Superseded`]): every further
    /// emit fails, so the run stops.
    pub(crate) superseded: bool,
}

/// How long an execution whose caller does not stream holds an artifact for the agent's next
/// emit, so that the two are one write. An agent that answers with an artifact and then
/// completes (an echo run by the worker) writes once instead of twice: on DynamoDB one write
/// unit and one request less. A stream's chunks are never held: its caller wants each one.
pub(crate) const ARTIFACT_HOLD: std::time::Duration = std::time::Duration::from_millis(200);

/// The terms of an inline execution's lease on its task: who holds it and for how long each
/// take or renewal lasts. A crashed process stops renewing; once the lease is over, a sweep
/// ends the task FAILED (`A2aService::sweep_expired_executions`).
#[derive(Debug, Clone)]
pub(crate) struct InlineLease {
    pub(crate) holder: String,
    pub(crate) duration: Duration,
}

impl InlineLease {
    pub(crate) fn until(&self) -> Timestamp {
        lease_until(self.duration)
    }
}

/// The agent's handle on its task. Cheap to clone; every emit is a conditional append to the
/// task's event log. An emit after the task ended (for example it was canceled) returns
/// [`AgentError::TaskEnded`].
#[derive(Clone)]
pub struct Emitter {
    pub(crate) log: Arc<TaskLog>,
    pub(crate) owner: Owner,
    pub(crate) request: Arc<AgentRequest>,
    pub(crate) state: Arc<Mutex<EmitterState>>,
    pub(crate) inline_push: Option<a2a_protocol::TaskPushNotificationConfig>,
    /// Set for inline executions: the emitter holds the task's lease while the task is active.
    /// Queued executions leave it `None`: their worker holds the lease.
    pub(crate) lease: Option<InlineLease>,
}

impl Emitter {
    /// The task id.
    pub fn task_id(&self) -> &str {
        &self.request.task_id
    }

    /// The context id.
    pub fn context_id(&self) -> &str {
        &self.request.context_id
    }

    /// Builds an agent message in this task's context (with a fresh message id).
    pub fn agent_message(&self, parts: Vec<Part>) -> Message {
        Message {
            message_id: crate::new_id(),
            context_id: self.request.context_id.clone(),
            task_id: self.request.task_id.clone(),
            role: Role::Agent,
            parts,
            ..Message::default()
        }
    }

    /// Replies with a single message and no task. Only allowed before any task event.
    pub async fn reply(&self, mut message: Message) -> Result<(), AgentError> {
        let mut state = self.state.lock().await;
        if state.superseded {
            return Err(AgentError::TaskEnded(TaskState::Unspecified));
        }
        if state.head.is_some() || state.replied || !state.pending.is_empty() {
            return Err(AgentError::Failed(
                "a direct message reply is only possible before the task exists".into(),
            ));
        }
        message.role = Role::Agent;
        if message.message_id.is_empty() {
            message.message_id = crate::new_id();
        }
        message.context_id = self.request.context_id.clone();
        message.task_id.clear();
        // Recorded before anyone sees it, so a repeat of the message gets this same reply.
        let recorded = self
            .log
            .record_reply(&self.owner, &self.request, &message)
            .await
            .map_err(|e| AgentError::Failed(format!("the task store failed: {e}")))?;
        if !recorded {
            return Err(self.supersede(&mut state));
        }
        state.replied = true;
        if let Some(tx) = state.first.take() {
            let _ = tx.send(FirstOutcome::Message(message));
        }
        Ok(())
    }

    /// Sets the task's status, with an optional message (which gets this task's ids).
    pub async fn status(
        &self,
        state: TaskState,
        message: Option<Message>,
    ) -> Result<(), AgentError> {
        let message = message.map(|mut m| {
            m.role = Role::Agent;
            if m.message_id.is_empty() {
                m.message_id = crate::new_id();
            }
            m.context_id = self.request.context_id.clone();
            m.task_id = self.request.task_id.clone();
            m
        });
        let event = TaskEvent::Status {
            update: TaskStatusUpdateEvent {
                task_id: self.request.task_id.clone(),
                context_id: self.request.context_id.clone(),
                status: TaskStatus {
                    state,
                    message,
                    timestamp: Some(Timestamp::now()),
                },
                metadata: None,
            },
        };
        self.emit(event).await
    }

    fn text_message(&self, text: Option<&str>) -> Option<Message> {
        text.map(|t| self.agent_message(vec![Part::text(t)]))
    }

    /// WORKING, with an optional progress text.
    pub async fn working(&self, text: Option<&str>) -> Result<(), AgentError> {
        self.status(TaskState::Working, self.text_message(text))
            .await
    }

    /// COMPLETED, with an optional final text.
    pub async fn complete(&self, text: Option<&str>) -> Result<(), AgentError> {
        self.status(TaskState::Completed, self.text_message(text))
            .await
    }

    /// FAILED, with the reason.
    pub async fn fail(&self, reason: &str) -> Result<(), AgentError> {
        self.status(TaskState::Failed, self.text_message(Some(reason)))
            .await
    }

    /// REJECTED, with the reason.
    pub async fn reject(&self, reason: &str) -> Result<(), AgentError> {
        self.status(TaskState::Rejected, self.text_message(Some(reason)))
            .await
    }

    /// INPUT_REQUIRED, with the question for the client.
    pub async fn input_required(&self, question: &str) -> Result<(), AgentError> {
        self.status(TaskState::InputRequired, self.text_message(Some(question)))
            .await
    }

    /// AUTH_REQUIRED, explaining what credential is needed.
    pub async fn auth_required(&self, explanation: &str) -> Result<(), AgentError> {
        self.status(
            TaskState::AuthRequired,
            self.text_message(Some(explanation)),
        )
        .await
    }

    /// Adds or replaces an artifact (`append == false`), or appends its parts to the artifact
    /// with the same id (`append == true`). `last_chunk` marks the final chunk.
    pub async fn artifact(
        &self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), AgentError> {
        let event = TaskEvent::Artifact {
            update: TaskArtifactUpdateEvent {
                task_id: self.request.task_id.clone(),
                context_id: self.request.context_id.clone(),
                artifact,
                append,
                last_chunk,
                metadata: None,
            },
        };
        self.emit(event).await
    }

    /// A concurrent copy of this message created its task (or reply) first: tells the caller,
    /// and stops this run. Only the winner's first report is kept.
    fn supersede(&self, state: &mut EmitterState) -> AgentError {
        state.superseded = true;
        state.pending.clear();
        if let Some(tx) = state.first.take() {
            let _ = tx.send(FirstOutcome::Superseded);
        }
        AgentError::TaskEnded(TaskState::Unspecified)
    }

    /// Appends one event; creates the task first if it does not exist yet.
    async fn emit(&self, event: TaskEvent) -> Result<(), AgentError> {
        let mut state = self.state.lock().await;
        if state.superseded {
            return Err(AgentError::TaskEnded(TaskState::Unspecified));
        }
        if state.replied {
            return Err(AgentError::Failed(
                "the agent already replied with a message; no task events may follow".into(),
            ));
        }
        if let Some(err) = state.deferred.take() {
            return Err(err);
        }
        self.lease_before(&mut state, &event).await?;
        let result = match state.head.clone() {
            Some(_) if !self.request.streaming && matches!(event, TaskEvent::Artifact { .. }) => {
                state.pending.push(event);
                if !state.flush_scheduled {
                    state.flush_scheduled = true;
                    let emitter = self.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(ARTIFACT_HOLD).await;
                        emitter.flush().await;
                    });
                }
                return Ok(());
            }
            Some(head) => {
                let mut events = std::mem::take(&mut state.pending);
                state.flush_scheduled = false;
                events.push(event);
                self.log.append(&self.owner, head, events).await
            }
            None if matches!(event, TaskEvent::Artifact { .. }) => {
                state.pending.push(event);
                return Ok(());
            }
            None => {
                let mut events = std::mem::take(&mut state.pending);
                events.push(event);
                let created = self
                    .log
                    .create(
                        &self.owner,
                        &self.request,
                        events,
                        self.inline_push.as_ref(),
                    )
                    .await;
                match &created {
                    Ok(head) => {
                        if let Some(tx) = state.first.take() {
                            let _ = tx.send(FirstOutcome::TaskStarted(Box::new(head.clone())));
                        }
                    }
                    // The task id is derived from the message: a live task under it means a
                    // concurrent copy of the message won the create.
                    Err(AppendError::Store(StoreError::Conflict)) => {
                        return Err(self.supersede(&mut state))
                    }
                    Err(_) => {}
                }
                created
            }
        };
        match result {
            Ok(head) => {
                let stopped = !is_active(head.task.status.state);
                state.head = Some(head);
                if stopped {
                    self.release_lease(&mut state).await;
                }
                Ok(())
            }
            Err(AppendError::Terminal(task)) => {
                let ended = task.status.state;
                if let Some(head) = state.head.as_mut() {
                    head.task = *task;
                }
                self.release_lease(&mut state).await;
                Err(AgentError::TaskEnded(ended))
            }
            Err(other) => Err(other.into()),
        }
    }

    /// Writes the artifacts held for the agent's next emit (its hold is over, or the run
    /// ended). A failure is returned by the agent's next emit.
    pub(crate) async fn flush(&self) {
        let mut state = self.state.lock().await;
        state.flush_scheduled = false;
        let Some(head) = state.head.clone() else {
            return;
        };
        if state.pending.is_empty() || state.superseded {
            return;
        }
        let events = std::mem::take(&mut state.pending);
        match self.log.append(&self.owner, head, events).await {
            Ok(head) => {
                let stopped = !is_active(head.task.status.state);
                state.head = Some(head);
                if stopped {
                    self.release_lease(&mut state).await;
                }
            }
            Err(AppendError::Terminal(task)) => {
                let ended = task.status.state;
                if let Some(head) = state.head.as_mut() {
                    head.task = *task;
                }
                self.release_lease(&mut state).await;
                state.deferred = Some(AgentError::TaskEnded(ended));
            }
            Err(other) => state.deferred = Some(other.into()),
        }
    }

    /// Takes the inline lease right before the first write that leaves the task active, so
    /// that a task born terminal (an echo) never pays for one, and an active task is never
    /// durable without one (a crash in between leaves a lease on a task that is missing or
    /// fine: the sweep just removes it).
    async fn lease_before(
        &self,
        state: &mut EmitterState,
        event: &TaskEvent,
    ) -> Result<(), AgentError> {
        let Some(lease) = &self.lease else {
            return Ok(());
        };
        if state.lease_held {
            return Ok(());
        }
        let next = match event {
            TaskEvent::Status { update } => Some(update.status.state),
            _ => state.head.as_ref().map(|h| h.task.status.state),
        };
        // Artifacts before the first status are only buffered: nothing is written yet.
        if !next.is_some_and(is_active) {
            return Ok(());
        }
        let taken = self
            .log
            .store
            .acquire_inline_lease(&self.owner, self.task_id(), &lease.holder, lease.until())
            .await
            .map_err(|e| AgentError::Failed(format!("the task store failed: {e}")))?;
        if !taken {
            return Err(AgentError::Failed(
                "another execution is running on this task".into(),
            ));
        }
        state.lease_held = true;
        Ok(())
    }

    /// Renews the inline lease, if this execution holds it (the heartbeat of a running agent).
    pub(crate) async fn renew_lease(&self) {
        let state = self.state.lock().await;
        let Some(lease) = self.lease.as_ref().filter(|_| state.lease_held) else {
            return;
        };
        // The state lock stays held so that a renewal cannot revive a lease just released.
        match self
            .log
            .store
            .acquire_inline_lease(&self.owner, self.task_id(), &lease.holder, lease.until())
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(task_id = %self.task_id(), "the task's lease was taken over")
            }
            Err(err) => {
                tracing::warn!(task_id = %self.task_id(), error = %err, "lease renewal failed")
            }
        }
    }

    /// Gives the inline lease back once the execution ended (or the task stopped).
    pub(crate) async fn finish_lease(&self) {
        let mut state = self.state.lock().await;
        self.release_lease(&mut state).await;
    }

    async fn release_lease(&self, state: &mut EmitterState) {
        let Some(lease) = self.lease.as_ref().filter(|_| state.lease_held) else {
            return;
        };
        state.lease_held = false;
        if let Err(err) = self
            .log
            .store
            .release_lease(self.task_id(), &lease.holder)
            .await
        {
            // It expires on its own; the sweep then finds the task stopped and removes it.
            tracing::warn!(task_id = %self.task_id(), error = %err, "lease release failed");
        }
    }
}

/// When a lease taken (or renewed) now for `duration` ends.
pub(crate) fn lease_until(duration: Duration) -> Timestamp {
    Timestamp::from_millis(Timestamp::now().millis() + duration.as_millis() as i64)
}

/// A state in which the task's execution is still going: neither terminal nor interrupted.
pub(crate) fn is_active(state: TaskState) -> bool {
    !state.is_terminal() && !state.is_interrupted()
}
