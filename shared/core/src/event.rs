//! The task event log: every change to a task is one of these events, numbered 1, 2, 3, …
//! The head (the Task snapshot) is the fold of the log; streams, resubscription and push
//! delivery are reads of the log.

use a2a_protocol::{
    A2AError, Message, Role, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatusUpdateEvent, Timestamp,
};
use serde::{Deserialize, Serialize};

/// One change to a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum TaskEvent {
    /// The task as first stored (always event 1).
    Created {
        /// The new task.
        task: Task,
    },
    /// A message from the client, added to the history of an existing task.
    UserMessage {
        /// The message, with `taskId` and `contextId` filled in.
        message: Message,
    },
    /// A status change.
    Status {
        /// The update as streamed.
        update: TaskStatusUpdateEvent,
    },
    /// A new artifact, a replacement, or a chunk.
    Artifact {
        /// The update as streamed.
        update: TaskArtifactUpdateEvent,
    },
}

/// An event with its place in the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedEvent {
    /// Sequence number, from 1, gapless per task.
    pub seq: u64,
    /// When it was appended.
    pub at: Timestamp,
    /// The change.
    pub event: TaskEvent,
}

impl LoggedEvent {
    /// The task that `events` build when applied in order from nothing (event 1 is `Created`).
    /// A store that keeps a task as the events of its one write (a task born terminal)
    /// rebuilds the head with this, exactly as the log built it.
    pub fn replay(events: &[LoggedEvent]) -> Result<Task, A2AError> {
        let mut task = Task::default();
        for logged in events {
            logged.event.apply(&mut task)?;
            task.generation = logged.seq as i64;
        }
        Ok(task)
    }
}

impl TaskEvent {
    /// What a stream or a push receiver sees of this event; `None` for client messages.
    pub fn to_stream_response(&self) -> Option<StreamResponse> {
        match self {
            Self::Created { task } => Some(StreamResponse::Task(task.clone())),
            Self::UserMessage { .. } => None,
            Self::Status { update } => Some(StreamResponse::StatusUpdate(update.clone())),
            Self::Artifact { update } => Some(StreamResponse::ArtifactUpdate(update.clone())),
        }
    }

    /// Whether streams and push receivers see this event ([`Self::to_stream_response`] is
    /// `Some`), without building what they would see.
    pub fn is_visible(&self) -> bool {
        !matches!(self, Self::UserMessage { .. })
    }

    /// The state this event leaves the task in, if it sets one.
    pub fn state(&self) -> Option<TaskState> {
        match self {
            Self::Created { task } => Some(task.status.state),
            Self::Status { update } => Some(update.status.state),
            _ => None,
        }
    }

    /// Whether a stream that shows this event ends after it: terminal or interrupted states.
    pub fn closes_stream(&self) -> bool {
        matches!(self, Self::Status { .. })
            && self
                .state()
                .is_some_and(|s| s.is_terminal() || s.is_interrupted())
    }

    /// Applies the event to a task head. Fails if it would break the lifecycle (digest §6).
    pub fn apply(&self, task: &mut Task) -> Result<(), A2AError> {
        match self {
            Self::Created { task: created } => {
                *task = created.clone();
            }
            Self::UserMessage { message } => {
                if task.status.state.is_terminal() {
                    return Err(terminal_error(task));
                }
                // The agent's last word (e.g. the question of INPUT_REQUIRED) came before this
                // reply, so it enters history first, as the Python SDK's task manager does.
                if let Some(previous) = task.status.message.take() {
                    task.history.push(previous);
                }
                task.history.push(message.clone());
            }
            Self::Status { update } => {
                let from = task.status.state;
                let to = update.status.state;
                if !from.can_move_to(to) {
                    return Err(if from.is_terminal() {
                        terminal_error(task)
                    } else {
                        A2AError::InvalidAgentResponse(format!(
                            "invalid status change from {from} to {to}"
                        ))
                    });
                }
                // The previous status message becomes history when a new status replaces it.
                if let Some(previous) = task.status.message.take() {
                    task.history.push(previous);
                }
                // The event's metadata is the task's from now on, key by key (as the Python
                // SDK's task manager merges it): what an agent reports about the whole task,
                // such as an LLM agent's token usage, is in GetTask's task.
                if let Some(metadata) = &update.metadata {
                    let merged = task.metadata.get_or_insert_with(Default::default);
                    merged.extend(metadata.clone());
                }
                task.status = update.status.clone();
            }
            Self::Artifact { update } => {
                if task.status.state.is_terminal() {
                    return Err(terminal_error(task));
                }
                let incoming = &update.artifact;
                match task
                    .artifacts
                    .iter_mut()
                    .find(|a| a.artifact_id == incoming.artifact_id)
                {
                    Some(existing) if update.append => {
                        existing.parts.extend(incoming.parts.iter().cloned());
                        if incoming.metadata.is_some() {
                            existing.metadata = incoming.metadata.clone();
                        }
                    }
                    Some(existing) => *existing = incoming.clone(),
                    None => task.artifacts.push(incoming.clone()),
                }
            }
        }
        Ok(())
    }
}

/// Sets the generation a stream item or push body carries (0: none): the
/// A2A 1.1 generation of a task is its log's sequence number.
pub(crate) fn set_generation(response: &mut StreamResponse, generation: i64) {
    match response {
        StreamResponse::Task(task) => task.generation = generation,
        StreamResponse::StatusUpdate(update) => update.generation = generation,
        StreamResponse::ArtifactUpdate(update) => update.generation = generation,
        StreamResponse::Message(_) => {}
    }
}

fn terminal_error(task: &Task) -> A2AError {
    A2AError::unsupported(format!(
        "Task {} is in terminal state {} and cannot be changed",
        task.id, task.status.state
    ))
}

/// The client's message with `message_id` in the task's history, if it has one.
pub(crate) fn find_sent<'a>(task: &'a Task, message_id: &str) -> Option<&'a Message> {
    task.history
        .iter()
        .find(|m| m.role == Role::User && m.message_id == message_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol::{Artifact, Part, Role, TaskStatus};
    use serde_json::json;

    fn task(state: TaskState) -> Task {
        Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn status(state: TaskState, text: Option<&str>) -> TaskEvent {
        TaskEvent::Status {
            update: TaskStatusUpdateEvent {
                generation: 0,
                task_id: "t".into(),
                context_id: "c".into(),
                status: TaskStatus {
                    state,
                    message: text.map(Message::agent_text),
                    timestamp: Some(Timestamp::now()),
                },
                metadata: None,
            },
        }
    }

    fn chunk(id: &str, text: &str, append: bool) -> TaskEvent {
        TaskEvent::Artifact {
            update: TaskArtifactUpdateEvent {
                task_id: "t".into(),
                context_id: "c".into(),
                artifact: Artifact {
                    artifact_id: id.into(),
                    parts: vec![Part::text(text)],
                    ..Default::default()
                },
                append,
                ..Default::default()
            },
        }
    }

    #[test]
    fn lifecycle_transitions_follow_the_spec() {
        use TaskState::*;
        for terminal in [Completed, Failed, Canceled, Rejected] {
            for next in [Submitted, Working, Completed, InputRequired] {
                assert!(!terminal.can_move_to(next), "{terminal} -> {next}");
            }
        }
        assert!(Submitted.can_move_to(Working));
        assert!(Working.can_move_to(Working));
        assert!(Working.can_move_to(InputRequired));
        assert!(InputRequired.can_move_to(Working));
        assert!(InputRequired.can_move_to(Canceled));
        assert!(!InputRequired.can_move_to(Submitted));
        assert!(!Working.can_move_to(Submitted));
        assert!(!Working.can_move_to(Unspecified));
    }

    #[test]
    fn status_moves_previous_message_into_history() {
        let mut t = task(TaskState::Submitted);
        status(TaskState::Working, Some("one"))
            .apply(&mut t)
            .unwrap();
        status(TaskState::Completed, Some("two"))
            .apply(&mut t)
            .unwrap();
        assert_eq!(t.status.state, TaskState::Completed);
        assert_eq!(t.history.len(), 1);
        assert_eq!(t.history[0].first_text(), Some("one"));
        assert_eq!(t.status.message.as_ref().unwrap().first_text(), Some("two"));
    }

    #[test]
    fn a_status_events_metadata_merges_into_the_tasks() {
        let mut t = task(TaskState::Working);
        let with = |state, metadata: serde_json::Value| {
            let TaskEvent::Status { mut update } = status(state, None) else {
                unreachable!()
            };
            update.metadata = metadata.as_object().cloned();
            TaskEvent::Status { update }
        };
        let asked = with(TaskState::InputRequired, json!({"usage": 1, "kept": true}));
        asked.apply(&mut t).unwrap();
        status(TaskState::Working, None).apply(&mut t).unwrap();
        with(TaskState::Completed, json!({"usage": 2}))
            .apply(&mut t)
            .unwrap();
        // Key by key: a later event's value replaces an earlier one's, the rest stays.
        assert_eq!(
            t.metadata.map(serde_json::Value::Object),
            Some(json!({"usage": 2, "kept": true}))
        );
    }

    #[test]
    fn history_keeps_each_agent_question_before_the_reply_to_it() {
        let user = |id: &str| TaskEvent::UserMessage {
            message: Message::user_text(id, id),
        };
        let mut t = task(TaskState::Submitted);
        t.history.push(Message::user_text("hold", "hold"));
        status(TaskState::InputRequired, Some("on hold"))
            .apply(&mut t)
            .unwrap();
        user("follow-up-1").apply(&mut t).unwrap();
        // The question left the status for history; the state waits for the agent.
        assert_eq!(t.status.state, TaskState::InputRequired);
        assert_eq!(t.status.message, None);
        status(TaskState::Working, None).apply(&mut t).unwrap();
        status(TaskState::InputRequired, Some("more input"))
            .apply(&mut t)
            .unwrap();
        user("follow-up-2").apply(&mut t).unwrap();
        status(TaskState::Completed, Some("done"))
            .apply(&mut t)
            .unwrap();
        let history: Vec<_> = t
            .history
            .iter()
            .map(|m| (m.role, m.first_text().unwrap()))
            .collect();
        assert_eq!(
            history,
            [
                (Role::User, "hold"),
                (Role::Agent, "on hold"),
                (Role::User, "follow-up-1"),
                (Role::Agent, "more input"),
                (Role::User, "follow-up-2"),
            ]
        );
        assert_eq!(t.status.message.unwrap().first_text(), Some("done"));
    }

    #[test]
    fn nothing_applies_after_a_terminal_state() {
        let mut t = task(TaskState::Canceled);
        let err = status(TaskState::Working, None).apply(&mut t).unwrap_err();
        assert_eq!(err.json_rpc_code(), -32004);
        assert!(chunk("a", "x", false).apply(&mut t).is_err());
        let msg = TaskEvent::UserMessage {
            message: Message::user_text("m", "hi"),
        };
        assert!(msg.apply(&mut t).is_err());
        assert_eq!(t, task(TaskState::Canceled));
    }

    #[test]
    fn artifact_chunks_append_and_replace() {
        let mut t = task(TaskState::Working);
        chunk("a", "chunk-1 ", false).apply(&mut t).unwrap();
        chunk("a", "chunk-2 ", true).apply(&mut t).unwrap();
        chunk("b", "other", false).apply(&mut t).unwrap();
        assert_eq!(t.artifacts.len(), 2);
        assert_eq!(t.artifacts[0].parts.len(), 2);
        chunk("a", "new", false).apply(&mut t).unwrap();
        assert_eq!(t.artifacts[0].parts, vec![Part::text("new")]);
    }

    #[test]
    fn only_terminal_and_interrupted_status_events_close_a_stream() {
        assert!(status(TaskState::Completed, None).closes_stream());
        assert!(status(TaskState::InputRequired, None).closes_stream());
        assert!(!status(TaskState::Working, None).closes_stream());
        assert!(!chunk("a", "x", false).closes_stream());
        let created = TaskEvent::Created {
            task: task(TaskState::Submitted),
        };
        assert!(!created.closes_stream());
    }

    #[test]
    fn events_round_trip_through_json() {
        let e = LoggedEvent {
            seq: 3,
            at: Timestamp::from_millis(1_700_000_000_123),
            event: chunk("a", "x", true),
        };
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<LoggedEvent>(&json).unwrap(), e);
    }
}
