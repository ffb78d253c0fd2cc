//! What the agent is asked to act on ([`AgentRequest`]) and how it stops short
//! ([`AgentError`]): shared by the `Agent` trait, its `Emitter` and the
//! task log, so none of them imports another.

use a2a_protocol::{Message, Metadata, Task, TaskState};

/// What the agent is asked to act on.
#[derive(Debug, Clone)]
pub struct AgentRequest {
    /// The client's message (with `taskId` and `contextId` filled in).
    pub message: Message,
    /// The task as it stood before this message, for a follow-up; `None` for a new task.
    pub task: Option<Task>,
    /// The id the task has (or will have, if the agent creates it).
    pub task_id: String,
    /// The conversation this message belongs to.
    pub context_id: String,
    /// Whether the client is streaming (SendStreamingMessage).
    pub streaming: bool,
    /// The request-level metadata.
    pub metadata: Option<Metadata>,
}

impl AgentRequest {
    /// The first text part of the message, or `""`.
    pub fn text(&self) -> &str {
        self.message.first_text().unwrap_or_default()
    }
}

/// Why an agent stopped without finishing the task.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// The task was canceled (or otherwise ended) while the agent ran: stop quietly.
    #[error("task ended while the agent was running ({0})")]
    TaskEnded(TaskState),
    /// The agent failed: the task ends FAILED with this reason as its status message.
    #[error("{0}")]
    Failed(String),
    /// The execution parked on a durable wait (`Emitter::sleep`, `wait_for_signal`,
    /// `call_agent`): return it (with `?`) and nothing runs until the wait is over; then the
    /// execution resumes. The task stays as it is meanwhile.
    #[error("the execution parked on a durable wait")]
    Parked,
}
