//! Relaying another agent's task into ours: its progress becomes events of our task as it
//! comes, from its pushes, from polls, or from the answer to the message we sent it.

use a2a_protocol::{Message, Part, Role, Task, TaskState, TaskStatus, Timestamp};

use crate::event::TaskEvent;
use crate::ports::{Owner, RemoteTaskRef};
use crate::task_log::{unsettled, AppendError, TaskLog};

/// How large a remote agent's answer may make our task: what its artifacts (the remote's
/// relayed into ours, and our agent's own) may come to, measured as their parts' JSON, as
/// GetTask answers them. An update past either limit is not written; the call waiting for the
/// remote fails saying so, and the remote's task is canceled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayLimits {
    /// The largest one artifact may become, in bytes (its chunks appended together).
    pub max_artifact_bytes: usize,
    /// The largest all of a task's artifacts may become together, in bytes.
    pub max_task_bytes: usize,
}

impl RelayLimits {
    /// 4 MiB per artifact, 8 MiB per task: a task stays well within what a client reads in
    /// one answer (`a2a get` takes 16 MiB).
    pub const DEFAULT: Self = Self {
        max_artifact_bytes: 4 << 20,
        max_task_bytes: 8 << 20,
    };
}

impl Default for RelayLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The failure reason of a call whose remote at `agent` answered past a [`RelayLimits`]
/// (`detail` says which).
pub(crate) fn too_large_reason(agent: &str, detail: &str) -> String {
    format!(
        "The agent at {agent} answered more than this server takes from another agent: {detail}; \
         its task was canceled."
    )
}

/// The size of `parts` as a task's JSON carries them.
fn parts_bytes(parts: &[Part]) -> usize {
    serde_json::to_vec(parts).map_or(usize::MAX, |json| json.len())
}

/// Whether relaying `events` into `task` keeps its artifacts within `limits`; `Err` says
/// which limit it would pass.
fn within(task: &Task, events: &[TaskEvent], limits: &RelayLimits) -> Result<(), AppendError> {
    if !events
        .iter()
        .any(|e| matches!(e, TaskEvent::Artifact { .. }))
    {
        return Ok(());
    }
    let mut sizes: Vec<(&str, usize)> = task
        .artifacts
        .iter()
        .map(|a| (a.artifact_id.as_str(), parts_bytes(&a.parts)))
        .collect();
    for event in events {
        let TaskEvent::Artifact { update } = event else {
            continue;
        };
        let id = update.artifact.artifact_id.as_str();
        let chunk = parts_bytes(&update.artifact.parts);
        let size = match sizes.iter_mut().find(|(known, _)| *known == id) {
            Some((_, size)) => {
                *size = if update.append {
                    size.saturating_add(chunk)
                } else {
                    chunk
                };
                *size
            }
            None => {
                sizes.push((id, chunk));
                chunk
            }
        };
        if size > limits.max_artifact_bytes {
            return Err(AppendError::TooLarge(format!(
                "its artifact {id:?} would be {size} bytes, over the limit of {} bytes per \
                 artifact",
                limits.max_artifact_bytes
            )));
        }
    }
    let total = sizes
        .iter()
        .fold(0usize, |sum, (_, size)| sum.saturating_add(*size));
    if total > limits.max_task_bytes {
        return Err(AppendError::TooLarge(format!(
            "the task's artifacts would be {total} bytes, over the limit of {} bytes per task",
            limits.max_task_bytes
        )));
    }
    Ok(())
}

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
/// (same id, same parts) is not written again, so a snapshot after the pushes costs nothing,
/// and a push delivered twice changes nothing twice (a chunk appended twice is put right by
/// the remote's task as it stopped). A status whose message our task shows or showed (by its
/// id) is not relayed again, so a replayed old status does not take our task back to it. An
/// update that would take our task past `limits` is not written at all:
/// [`AppendError::TooLarge`].
pub(crate) async fn relay(
    log: &TaskLog,
    limits: &RelayLimits,
    owner: &Owner,
    task_id: &str,
    update: &RemoteUpdate<'_>,
) -> Result<(), AppendError> {
    let head = log
        .load_retried(owner, task_id)
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
    // A status message our task shows, or showed (its history), keeps the remote's message id:
    // that message again is a push delivered twice, or an old one replayed after a newer one,
    // and is not relayed again (our task does not go back to it).
    let shown = |message: &Message| {
        !message.message_id.is_empty()
            && head
                .task
                .status
                .message
                .iter()
                .chain(&head.task.history)
                .any(|m| m.message_id == message.message_id)
    };
    let status = |status: &TaskStatus| {
        let same = head.task.status.state == TaskState::Working
            && head.task.status.message.as_ref().map(|m| &m.parts)
                == status.message.as_ref().map(|m| &m.parts);
        let again = status.message.as_ref().is_some_and(shown);
        (status.state == TaskState::Working && !same && !again).then(|| TaskEvent::Status {
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
            for remote in unsettled(&head.task, &task.artifacts) {
                events.push(artifact(remote, false, true));
            }
        }
        RemoteUpdate::Status(update) => events.extend(status(&update.status)),
        RemoteUpdate::Artifact(update) => {
            let known = !update.append
                && head.task.artifacts.iter().any(|a| {
                    a.artifact_id == update.artifact.artifact_id && a.parts == update.artifact.parts
                });
            if !known {
                events.push(artifact(&update.artifact, update.append, update.last_chunk))
            }
        }
    }
    if events.is_empty() {
        return Ok(());
    }
    within(&head.task, &events, limits)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol::{Artifact, TaskArtifactUpdateEvent};

    fn chunk(id: &str, text: &str, append: bool) -> TaskEvent {
        TaskEvent::Artifact {
            update: TaskArtifactUpdateEvent {
                task_id: "t".into(),
                context_id: "c".into(),
                artifact: Artifact {
                    artifact_id: id.into(),
                    parts: vec![Part::text(text)],
                    ..Artifact::default()
                },
                append,
                last_chunk: false,
                metadata: None,
                generation: 0,
            },
        }
    }

    #[test]
    fn relayed_artifacts_stay_within_the_limits() {
        let limits = RelayLimits {
            max_artifact_bytes: 100,
            max_task_bytes: 150,
        };
        let mut task = Task::default();
        let fifty = "x".repeat(50);
        assert!(within(&task, &[chunk("a", &fifty, false)], &limits).is_ok());
        task.artifacts.push(Artifact {
            artifact_id: "a".into(),
            parts: vec![Part::text(fifty.clone())],
            ..Artifact::default()
        });
        // Appended, "a" passes 100 bytes; replaced, it stays as large as the chunk.
        let appended = within(&task, &[chunk("a", &fifty, true)], &limits);
        assert!(
            matches!(&appended, Err(AppendError::TooLarge(why)) if why.contains("per artifact")),
            "{appended:?}"
        );
        assert!(within(&task, &[chunk("a", &fifty, false)], &limits).is_ok());
        // Another artifact, within its own limit, takes the task past its limit.
        let some = "y".repeat(35);
        let more = [chunk("b", &some, false), chunk("b", &some, true)];
        let total = within(&task, &more, &limits);
        assert!(
            matches!(&total, Err(AppendError::TooLarge(why)) if why.contains("per task")),
            "{total:?}"
        );
    }
}
