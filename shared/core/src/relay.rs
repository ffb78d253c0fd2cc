//! Relaying another agent's task into ours: its progress becomes events of our task as it
//! comes, from its pushes, from polls, or from the answer to the message we sent it.

use a2a_protocol::{Message, Role, Task, TaskState, TaskStatus, Timestamp};

use crate::event::TaskEvent;
use crate::ports::{Owner, RemoteTaskRef};
use crate::task_log::{AppendError, TaskLog};

/// Whether a remote task in `state` stopped: the waiting execution resumes.
pub(crate) fn stopped(state: TaskState) -> bool {
    state.is_terminal() || state.is_interrupted()
}

/// What tells one interrupted status of a remote task from another: its state and time, or
/// its message id when it has no time (`None` when it has neither). Not the message itself:
/// an agent may answer the same status with or without it (in its history instead).
pub(crate) fn status_mark(task: &Task) -> Option<String> {
    let status = &task.status;
    let when = match (&status.timestamp, &status.message) {
        (Some(at), _) => at.millis().to_string(),
        (None, Some(message)) => message.message_id.clone(),
        (None, None) => return None,
    };
    Some(format!("{:?}|{when}", status.state))
}

/// Whether `task` (the remote task `remote` follows) stopped since the call waiting for it
/// sent its message: stopped, and not still showing the interrupted status the previous call
/// returned with (a snapshot from before the remote took up our follow-up).
pub(crate) fn stopped_anew(task: &Task, remote: &RemoteTaskRef) -> bool {
    stopped(task.status.state)
        && (remote.stopped_at.is_none() || remote.stopped_at != status_mark(task))
}

/// One update from a remote task: its snapshot, or one of its events.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RemoteUpdate<'a> {
    /// The remote task as it stands.
    Task(&'a Task),
    /// A status change.
    Status(&'a a2a_protocol::TaskStatusUpdateEvent),
    /// An artifact, or a chunk of one.
    Artifact(&'a a2a_protocol::TaskArtifactUpdateEvent),
}

/// Relays a remote task's progress into our task `task_id`: its WORKING status (with its
/// message) and its artifacts, as events of ours. States that stop the remote are not relayed:
/// the resumed agent decides what they mean for our task. An artifact already ours as it is
/// (same id, same parts) is not written again, so a snapshot after the pushes costs nothing.
pub(crate) async fn relay(
    log: &TaskLog,
    owner: &Owner,
    task_id: &str,
    update: &RemoteUpdate<'_>,
) -> Result<(), AppendError> {
    let head = log
        .store
        .load_task(owner, task_id)
        .await
        .map_err(AppendError::Store)?
        .ok_or_else(|| AppendError::NotFound(task_id.to_owned()))?;
    if head.task.status.state.is_terminal() {
        return Err(AppendError::Terminal(Box::new(head.task)));
    }
    let ours = |mut message: Message| {
        message.task_id = head.task.id.clone();
        message.context_id = head.task.context_id.clone();
        message.role = Role::Agent;
        message
    };
    let status = |status: &TaskStatus| {
        let same = head.task.status.state == TaskState::Working
            && head.task.status.message.as_ref().map(|m| &m.parts)
                == status.message.as_ref().map(|m| &m.parts);
        (status.state == TaskState::Working && !same).then(|| TaskEvent::Status {
            update: a2a_protocol::TaskStatusUpdateEvent {
                task_id: head.task.id.clone(),
                context_id: head.task.context_id.clone(),
                status: TaskStatus {
                    state: TaskState::Working,
                    message: status.message.clone().map(ours),
                    timestamp: Some(Timestamp::now()),
                },
                metadata: None,
                generation: 0,
            },
        })
    };
    let artifact =
        |artifact: &a2a_protocol::Artifact, append: bool, last_chunk: bool| TaskEvent::Artifact {
            update: a2a_protocol::TaskArtifactUpdateEvent {
                task_id: head.task.id.clone(),
                context_id: head.task.context_id.clone(),
                artifact: artifact.clone(),
                append,
                last_chunk,
                metadata: None,
                generation: 0,
            },
        };
    let mut events = Vec::new();
    match update {
        RemoteUpdate::Task(task) => {
            events.extend(status(&task.status));
            for remote in &task.artifacts {
                let known = head
                    .task
                    .artifacts
                    .iter()
                    .any(|a| a.artifact_id == remote.artifact_id && a.parts == remote.parts);
                if !known {
                    events.push(artifact(remote, false, true));
                }
            }
        }
        RemoteUpdate::Status(update) => events.extend(status(&update.status)),
        RemoteUpdate::Artifact(update) => {
            events.push(artifact(&update.artifact, update.append, update.last_chunk))
        }
    }
    if events.is_empty() {
        return Ok(());
    }
    // A task still SUBMITTED becomes WORKING before its first relayed artifact.
    if head.task.status.state == TaskState::Submitted && !events.iter().any(|e| e.state().is_some())
    {
        events.insert(
            0,
            TaskEvent::Status {
                update: a2a_protocol::TaskStatusUpdateEvent {
                    task_id: head.task.id.clone(),
                    context_id: head.task.context_id.clone(),
                    status: TaskStatus {
                        state: TaskState::Working,
                        message: None,
                        timestamp: Some(Timestamp::now()),
                    },
                    metadata: None,
                    generation: 0,
                },
            },
        );
    }
    log.append(owner, head, events).await.map(drop)
}
