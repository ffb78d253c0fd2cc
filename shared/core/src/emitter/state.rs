//! What an [`Emitter`](super::Emitter) knows of its task between two emits, and how the
//! agent's first report resolved the request.

use std::sync::Arc;

use a2a_protocol::{Artifact, Message, TaskState};
use tokio::sync::oneshot;

use crate::event::TaskEvent;
use crate::ports::StoredTask;
use crate::request::AgentError;

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
    /// The task could not be created (the store failed, after its retries): nothing was
    /// recorded, so the client's retry of the same message starts afresh.
    NotCreated(a2a_protocol::A2AError),
}

pub(crate) struct EmitterState {
    /// The task head as this emitter last wrote it; `None` until the task exists (a new task is
    /// created by the agent's first emit). Of a task that ended in its create, only its ids,
    /// status and version: the caller took the whole head, and nothing is written on it again.
    pub(crate) head: Option<StoredTask>,
    pub(crate) first: Option<oneshot::Sender<FirstOutcome>>,
    pub(crate) replied: bool,
    /// Artifacts emitted before the task's first status: they are written together with that
    /// status, in the one write that creates the task. An echo-like agent (artifact, then
    /// complete) thus costs one store write instead of two, and nobody can observe the
    /// difference: the task becomes visible to streams, pushes and reads with that write.
    pub(crate) pending: Vec<TaskEvent>,
    /// Whether this execution holds the task's inline lease now (see [`super::InlineLease`]).
    pub(crate) lease_held: bool,
    /// A concurrent copy of the message won (see [`FirstOutcome::Superseded`]): every further
    /// emit fails, so the run stops.
    pub(crate) superseded: bool,
    /// Events emitted on the existing task and not written yet, in order. A write in flight
    /// does not hold the agent up: what it emits meanwhile queues here, and the next write takes
    /// all of it at once: one append (one commit, one conditional write) for many events.
    pub(crate) queued: Vec<TaskEvent>,
    /// The state the task will be in once `queued` is written. Each emit is checked against
    /// it, so that an event that breaks the lifecycle is refused on its own, to its emitter,
    /// instead of spoiling the write it would have shared.
    pub(crate) projected: TaskState,
    /// A write task is writing `queued` (see [`super::Emitter::write_queued`]).
    pub(crate) writing: bool,
    /// Queued artifacts are held for the agent's next emit, and a write of them is scheduled
    /// [`super::ARTIFACT_HOLD`] after the first (see [`super::Emitter::emit`]).
    pub(crate) holding: bool,
    /// The task ended under this execution (a write found it canceled, say): every later emit
    /// returns this.
    pub(crate) ended: Option<AgentError>,
    /// A write failed (the store): the next emit (or wait for the writes) returns this once.
    pub(crate) failure: Option<AgentError>,
    /// A write failed for good (the store, through every retry): its events are not in the
    /// log, so nothing emitted after them is written either (it would stand on a gap: a
    /// stream's chunk missing from a completed artifact). Every later emit returns this, and
    /// the run's end writes FAILED ([`super::Emitter::end_failed`]).
    pub(crate) broken: Option<AgentError>,
    /// The artifacts of the remote tasks this execution's calls returned, as they stopped:
    /// every later write settles the task on them
    /// ([`crate::task_log::TaskLog::append_settling`]), so a chunk of theirs that a push wrote
    /// after the call ended is put right at the latest by the write that ends the task. An
    /// artifact the agent emits itself leaves this list.
    pub(crate) settled: Arc<Vec<Artifact>>,
}

impl EmitterState {
    /// Whether the task, as last written, is in a terminal state.
    pub(crate) fn task_ended(&self) -> bool {
        self.head
            .as_ref()
            .is_some_and(|h| h.task.status.state.is_terminal())
    }

    pub(crate) fn new(head: Option<StoredTask>, first: oneshot::Sender<FirstOutcome>) -> Self {
        Self {
            projected: head
                .as_ref()
                .map_or(TaskState::Unspecified, |h| h.task.status.state),
            head,
            first: Some(first),
            replied: false,
            pending: Vec::new(),
            lease_held: false,
            superseded: false,
            queued: Vec::new(),
            writing: false,
            holding: false,
            ended: None,
            failure: None,
            broken: None,
            settled: Arc::default(),
        }
    }

    /// Settles every later write on `artifacts` (a called remote task's, as it stopped), in
    /// place of what was settled under their ids before.
    pub(crate) fn settle_on(&mut self, artifacts: &[Artifact]) {
        if artifacts.is_empty() {
            return;
        }
        let settled = Arc::make_mut(&mut self.settled);
        settled.retain(|a| !artifacts.iter().any(|r| r.artifact_id == a.artifact_id));
        settled.extend(artifacts.iter().cloned());
    }

    /// What an emit gets once the writes before it are done: the task's end or a failed
    /// write, if any.
    pub(super) fn outcome(&mut self) -> Result<(), AgentError> {
        if let Some(ended) = &self.ended {
            return Err(ended.clone());
        }
        if let Some(broken) = &self.broken {
            return Err(broken.clone());
        }
        self.failure.take().map_or(Ok(()), Err)
    }
}

/// What an emitter keeps of a task that ended in its create: its ids, status and version, all
/// that is read of it from then on (whether it exists, whether it is active or ended).
pub(super) fn outline(head: &StoredTask) -> StoredTask {
    StoredTask {
        owner: head.owner.clone(),
        task: a2a_protocol::Task {
            id: head.task.id.clone(),
            context_id: head.task.context_id.clone(),
            status: head.task.status.clone(),
            ..Default::default()
        },
        version: head.version,
        expires_at: head.expires_at,
    }
}
