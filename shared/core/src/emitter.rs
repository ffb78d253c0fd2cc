//! The [`Emitter`]: the agent's handle on its task. Every emit is a conditional append to the
//! task's event log through [`TaskLog`]; the emitter knows nothing of the operations.

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol::{
    Artifact, Message, Metadata, Part, Role, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent, Timestamp,
};
use tokio::sync::{Mutex, MutexGuard, Notify};

use crate::event::TaskEvent;
use crate::ports::{Owner, StoreError};
use crate::request::{AgentError, AgentRequest};
use crate::task_log::{AppendError, TaskLog};

mod state;

use state::outline;
pub(crate) use state::{EmitterState, FirstOutcome};

/// How many events may wait for a write before an emit waits for the write to finish: a bound
/// on what an agent faster than the store holds in memory.
const MAX_QUEUED: usize = 1024;

/// How long an execution whose caller does not stream holds an artifact for the agent's next
/// emit, so that the two are one write. An agent that answers with an artifact and then
/// completes (an echo run by the worker) writes once instead of twice: on DynamoDB one write
/// unit and one request less. Short: a client reading the task meanwhile sees the artifact that
/// much later. A stream's chunks are never held: its caller wants each one.
pub(crate) const ARTIFACT_HOLD: std::time::Duration = std::time::Duration::from_millis(20);

/// How many queued events one append writes at most: DynamoDB takes at most 100 items in one
/// transaction (the head and its events), and a round this size already makes the write's
/// cost per event small.
const MAX_ROUND: usize = 32;

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
    /// Woken when the write task has written everything queued and stopped.
    pub(crate) written: Arc<Notify>,
    pub(crate) inline_push: Option<a2a_protocol::TaskPushNotificationConfig>,
    /// Set for inline executions: the emitter holds the task's lease while the task is active.
    /// Queued executions leave it `None`: their worker holds the lease.
    pub(crate) lease: Option<InlineLease>,
    /// The durable side of this run: its recorded steps and what it replays.
    pub(crate) durable: Arc<Mutex<crate::journal::DurableRun>>,
    /// What durable steps need: the store, the work queue, other agents.
    pub(crate) env: Arc<crate::journal::DurableEnv>,
    /// The step the agent is running, if any (a durable call inside it is refused).
    pub(crate) in_step: crate::agent_call::InStep,
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
        let mut state = lock_now(&self.state).await;
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
        let recorded = match self
            .log
            .record_reply(&self.owner, &self.request, &message)
            .await
        {
            Ok(recorded) => recorded,
            Err(err) => return Err(self.not_created(&mut state, err)),
        };
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
        self.status_with_metadata(state, message, None).await
    }

    /// [`Self::status`], with the event's metadata, which the task keeps too, key by key (a
    /// later status's value for a key replaces it; GetTask shows them): what the agent reports
    /// about the whole task, such as an LLM agent's token usage.
    pub async fn status_with_metadata(
        &self,
        state: TaskState,
        message: Option<Message>,
        metadata: Option<Metadata>,
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
                generation: 0,
                task_id: self.request.task_id.clone(),
                context_id: self.request.context_id.clone(),
                status: TaskStatus {
                    state,
                    message,
                    timestamp: Some(Timestamp::now()),
                },
                metadata,
            },
        };
        // Boxed: an agent's future holds this one while it waits, for as long as the agent
        // runs (a stream kept open holds it for minutes); the write's state needs room only
        // while an emit is under way.
        Box::pin(self.emit(event)).await
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
                generation: 0,
                task_id: self.request.task_id.clone(),
                context_id: self.request.context_id.clone(),
                artifact,
                append,
                last_chunk,
                metadata: None,
            },
        };
        Box::pin(self.emit(event)).await
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
    ///
    /// The write that creates the task is made at once, and the emit returns when it is done.
    /// Later events are queued and written in order by a write task of this emitter, so the
    /// agent goes on while they are written, and whatever it emits during one write goes into
    /// the next, as one append. An event that stops the task (a terminal or interrupted
    /// status) returns only once it and everything before it is written, as does any emit
    /// while [`MAX_QUEUED`] events wait. An emit after a write found the task ended (it was
    /// canceled, say) returns [`AgentError::TaskEnded`]; a failed write is reported to the
    /// next emit, and its events are not written.
    async fn emit(&self, event: TaskEvent) -> Result<(), AgentError> {
        // A resumed run does not write again what the run it replays wrote.
        if self.skips_emit().await {
            return Ok(());
        }
        let mut state = lock_now(&self.state).await;
        if state.superseded {
            return Err(AgentError::TaskEnded(TaskState::Unspecified));
        }
        if let Some(broken) = &state.broken {
            return Err(broken.clone());
        }
        if state.replied {
            return Err(AgentError::Failed(
                "the agent already replied with a message; no task events may follow".into(),
            ));
        }
        if state.head.is_none() {
            return self.create(&mut state, event).await;
        }
        state.outcome()?;
        // Checked as the log will check it when the event is written (`TaskEvent::apply`).
        if state.projected.is_terminal() {
            return Err(AgentError::TaskEnded(state.projected));
        }
        let next = match event.state() {
            Some(to) if !state.projected.can_move_to(to) => {
                return Err(AgentError::Failed(format!(
                    "invalid status change from {} to {to}",
                    state.projected
                )))
            }
            Some(to) => to,
            None => state.projected,
        };
        state.projected = next;
        let artifact = match &event {
            TaskEvent::Artifact { update } => {
                // The agent's own artifact of that id is what stands, not a remote's.
                let id = &update.artifact.artifact_id;
                if state.settled.iter().any(|a| &a.artifact_id == id) {
                    Arc::make_mut(&mut state.settled).retain(|a| &a.artifact_id != id);
                }
                true
            }
            _ => false,
        };
        state.queued.push(event);
        let wait = !is_active(next) || state.queued.len() >= MAX_QUEUED;
        if !wait && artifact && !self.request.streaming && !state.writing {
            // Held for the agent's next emit (which starts the write), or until the hold is up.
            if !state.holding {
                state.holding = true;
                let emitter = self.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(ARTIFACT_HOLD).await;
                    let mut state = lock_now(&emitter.state).await;
                    state.holding = false;
                    emitter.start_writing(&mut state);
                });
            }
            return Ok(());
        }
        self.start_writing(&mut state);
        if !wait {
            return Ok(());
        }
        drop(state);
        self.written().await
    }

    /// Whether the task, as this emitter last wrote it, is still active (submitted or
    /// working): a run stopped now has work left to hand over.
    pub(crate) async fn task_active(&self) -> bool {
        self.state
            .lock()
            .await
            .head
            .as_ref()
            .is_some_and(|h| is_active(h.task.status.state))
    }

    /// Starts the write task if events are queued and none runs.
    fn start_writing(&self, state: &mut EmitterState) {
        if !state.writing && !state.queued.is_empty() {
            state.writing = true;
            tokio::spawn(Box::pin(self.clone().write_queued()));
        }
    }

    /// Waits until everything emitted so far is written to the task's log. Emits return before
    /// their write when they can (see [`Emitter::artifact`]); an agent that must know its output
    /// is durable before it acts outside the task calls this. Returns what a later emit would:
    /// [`AgentError::TaskEnded`] if the task ended meanwhile, or the failure of a write.
    pub async fn flush(&self) -> Result<(), AgentError> {
        self.written().await
    }

    /// [`Self::flush`], for the execution: held artifacts' write starts now.
    pub(crate) async fn written(&self) -> Result<(), AgentError> {
        loop {
            // Registered before the check: a write task that stops in between still wakes it.
            let stopped = self.written.notified();
            {
                let mut state = lock_now(&self.state).await;
                self.start_writing(&mut state);
                if !state.writing {
                    return state.outcome();
                }
            }
            stopped.await;
        }
    }

    /// The write task: writes what is queued, one append at a time (of at most
    /// [`MAX_ROUND`] events, fewer if the store finds them too large for one write), until
    /// nothing is.
    async fn write_queued(self) {
        let mut round = MAX_ROUND;
        loop {
            let mut state = lock_now(&self.state).await;
            if state.queued.is_empty() || state.ended.is_some() || state.broken.is_some() {
                state.queued.clear();
                state.writing = false;
                drop(state);
                self.written.notify_waiters();
                return;
            }
            let take = round.min(state.queued.len());
            let events: Vec<TaskEvent> = state.queued.drain(..take).collect();
            // The state the task is in once these are written.
            let next = events
                .iter()
                .rev()
                .find_map(TaskEvent::state)
                .or_else(|| state.head.as_ref().map(|h| h.task.status.state))
                .unwrap_or(state.projected);
            if let Err(err) = self.lease_before(&mut state, next).await {
                state.failure = Some(err);
                continue;
            }
            let Some(head) = state.head.clone() else {
                // Only a created task queues events.
                state.queued.clear();
                continue;
            };
            let settled = state.settled.clone();
            // The agent emits on while this write is in flight.
            drop(state);
            let written = self
                .log
                .append_settling(&self.owner, head, events.clone(), &settled)
                .await;
            let mut state = lock_now(&self.state).await;
            match written {
                // More than the store takes in one write: the same events again, in smaller
                // rounds.
                Err(AppendError::Store(StoreError::TooLarge(_))) if events.len() > 1 => {
                    round = events.len() / 2;
                    state.queued.splice(0..0, events);
                }
                Ok(head) => {
                    let stopped = !is_active(head.task.status.state);
                    state.head = Some(head);
                    if stopped {
                        self.release_lease(&mut state).await;
                    }
                }
                Err(AppendError::Terminal(task)) => {
                    let ended = task.status.state;
                    state.projected = ended;
                    if let Some(head) = state.head.as_mut() {
                        head.task = *task;
                    }
                    state.ended = Some(AgentError::TaskEnded(ended));
                    self.release_lease(&mut state).await;
                }
                Err(AppendError::NotFound(_)) => {
                    // The task expired under the run.
                    state.ended = Some(AgentError::TaskEnded(TaskState::Unspecified));
                }
                Err(
                    err @ (AppendError::Invalid(_)
                    | AppendError::TooLarge(_)
                    | AppendError::Store(StoreError::TooLarge(_))),
                ) => {
                    let err = AgentError::from(err);
                    // What remains queued was checked against a state these events would
                    // have made: start again from the task as it was last written.
                    let written = state
                        .head
                        .as_ref()
                        .map_or(TaskState::Unspecified, |h| h.task.status.state);
                    state.projected = state
                        .queued
                        .iter()
                        .rev()
                        .find_map(TaskEvent::state)
                        .unwrap_or(written);
                    state.failure = Some(err);
                }
                Err(AppendError::Store(err)) => {
                    // The store failed through its retries: these events are not written, and
                    // what was emitted after them must not be written over the gap.
                    let failure = crate::task_log::store_unavailable(err);
                    state.queued.clear();
                    state.broken = Some(failure);
                }
            }
        }
    }

    /// The agent's first report on a task that does not exist yet: buffers an artifact, or
    /// creates the task with this status (and the artifacts before it) in one write.
    async fn create(&self, state: &mut EmitterState, event: TaskEvent) -> Result<(), AgentError> {
        if matches!(event, TaskEvent::Artifact { .. }) {
            state.pending.push(event);
            return Ok(());
        }
        if let Some(to) = event.state() {
            self.lease_before(state, to).await?;
        }
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
        match created {
            Ok(head) => {
                let stopped = !is_active(head.task.status.state);
                state.projected = head.task.status.state;
                state.head = Some(match state.first.take() {
                    // Ended (an echo): handed over whole, not copied (see `head`).
                    Some(tx) if head.task.status.state.is_terminal() => {
                        let outline = outline(&head);
                        let _ = tx.send(FirstOutcome::TaskStarted(Box::new(head)));
                        outline
                    }
                    Some(tx) => {
                        let _ = tx.send(FirstOutcome::TaskStarted(Box::new(head.clone())));
                        head
                    }
                    None => head,
                });
                if stopped {
                    self.release_lease(state).await;
                }
                Ok(())
            }
            // The task id is derived from the message: a live task under it means a
            // concurrent copy of the message won the create.
            Err(AppendError::Store(StoreError::Conflict)) => Err(self.supersede(state)),
            Err(AppendError::Terminal(task)) => {
                self.release_lease(state).await;
                Err(AgentError::TaskEnded(task.status.state))
            }
            Err(AppendError::Store(err)) => Err(self.not_created(state, err)),
            Err(other) => Err(other.into()),
        }
    }

    /// The store failed the write that would have created the task (or recorded the reply):
    /// nothing was written. The caller gets an error it may retry, and the run ends without a
    /// task: no FAILED task spends the message's id on a passing fault.
    fn not_created(&self, state: &mut EmitterState, err: StoreError) -> AgentError {
        let failure = crate::task_log::store_unavailable(&err);
        if let Some(tx) = state.first.take() {
            let _ = tx.send(FirstOutcome::NotCreated(crate::task_log::store_error(err)));
        }
        state.broken = Some(failure.clone());
        failure
    }

    /// Ends the task FAILED with `reason` at the end of its run: through [`Self::fail`], or,
    /// once a write failed for good ([`EmitterState::broken`]), straight on top of the task as
    /// it stands in the store. A task that was never created stays so.
    pub(crate) async fn end_failed(&self, reason: &str) -> Result<(), AgentError> {
        let mut state = lock_now(&self.state).await;
        if state.broken.is_none() {
            drop(state);
            return self.fail(reason).await;
        }
        let Some(head) = state.head.clone() else {
            return Ok(());
        };
        match self.log.finish_failed(&self.owner, head, reason).await {
            Ok(head) => {
                state.projected = head.task.status.state;
                state.head = Some(head);
            }
            Err(AppendError::Terminal(task)) => {
                state.projected = task.status.state;
                if let Some(head) = state.head.as_mut() {
                    head.task = *task;
                }
            }
            Err(err) => return Err(err.into()),
        }
        state.broken = None;
        self.release_lease(&mut state).await;
        Ok(())
    }

    /// Takes the inline lease right before the first write that leaves the task active (in
    /// state `next`), so that a task born terminal (an echo) never pays for one, and an active
    /// task is never durable without one (a crash in between leaves a lease on a task that is
    /// missing or fine: the sweep just removes it).
    async fn lease_before(
        &self,
        state: &mut EmitterState,
        next: TaskState,
    ) -> Result<(), AgentError> {
        let Some(lease) = &self.lease else {
            return Ok(());
        };
        if state.lease_held || !is_active(next) {
            return Ok(());
        }
        // Made again after a failure of the backend: a lease that is ours is ours to take.
        let taken = crate::task_log::with_store_retries("an inline lease", self.task_id(), || {
            self.log.store.acquire_inline_lease(
                &self.owner,
                self.task_id(),
                &lease.holder,
                lease.until(),
            )
        })
        .await
        .map_err(crate::task_log::store_unavailable)?;
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
        let state = lock_now(&self.state).await;
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

    /// Gives the inline lease back once the execution ended (or the task stopped), after the
    /// writes of what it emitted.
    pub(crate) async fn finish_lease(&self) {
        let _ = self.written().await;
        let mut state = lock_now(&self.state).await;
        // A task that a failed write left active keeps its lease: once the lease runs out, the
        // sweep ends the task FAILED (given back now, nothing would, and it would stay WORKING).
        let stranded = state.broken.is_some()
            && state
                .head
                .as_ref()
                .is_some_and(|h| is_active(h.task.status.state));
        if stranded {
            tracing::warn!(task_id = %self.task_id(), "a failed write left the task active: its lease stays, for the sweep to end it");
            return;
        }
        // A create that failed through the store may have landed all the same (its answer
        // lost, and the store's check of it failed too), with the agent's first events in it:
        // given back, the lease would leave that task active for good, run by nobody (a
        // client's retry of the message is a repeat of it, and a job would not run an agent
        // that already wrote). Kept, it runs out, and the sweep ends such a task FAILED, or
        // just removes the lease if the create did not land.
        if state.broken.is_some() && state.head.is_none() && state.lease_held {
            tracing::warn!(task_id = %self.task_id(), "a create failed through the store and may have landed: its lease stays, for the sweep");
            return;
        }
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

/// Locks `mutex`: at once when it is free, as a run's state and durable side nearly always are
/// (`try_lock` spares the wait's future: ≈ 120 instructions, ten times an echo), else in turn.
pub(crate) async fn lock_now<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.try_lock() {
        Ok(guard) => guard,
        Err(_) => mutex.lock().await,
    }
}
