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

/// How [`relay`] takes a chunk (an artifact update that appends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chunks {
    /// Only where it continues our artifact: a chunk whose artifact we do not have yet (its
    /// start still on its way), or that our artifact ends with already (delivered twice), is
    /// not written: [`Relayed::Unplaced`].
    Placed,
    /// As it comes (the remote's task could not say where it goes).
    AsTheyCome,
}

/// What [`relay`] did with an update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relayed {
    /// Written, or nothing in it was new.
    Done,
    /// A chunk that does not continue our artifact as it stands ([`Chunks::Placed`]): nothing
    /// written; only the remote's task as it stands can say where it goes.
    Unplaced,
}

/// Relays a remote task's progress into our task `task_id`: its WORKING status (with its
/// message) and its artifacts, as events of ours. States that stop the remote are not relayed:
/// the resumed agent decides what they mean for our task. Pushes carry no sequence and may
/// come out of order or twice, so each update is applied knowing what it replaces:
/// - a snapshot of the remote's task replaces our copy of each artifact that differs, except,
///   while the remote works, one our copy extends (the snapshot is older than chunks relayed
///   since); once the remote stopped its task is the truth, and replaces whatever differs;
/// - the start of an artifact (an update that does not append) that our copy begins with
///   already is an old one, delivered late or twice: not written;
/// - a chunk is appended only where it continues our copy ([`Chunks`]).
///
/// A status whose message our task shows or showed (by its id) is not relayed again, so a
/// replayed old status does not take our task back to it. An update that would take our task
/// past `limits` is not written at all: [`AppendError::TooLarge`]. What is written is decided
/// on our task as it stands when it is written (a concurrent relay decides again).
pub(crate) async fn relay(
    log: &TaskLog,
    limits: &RelayLimits,
    owner: &Owner,
    task_id: &str,
    update: &RemoteUpdate<'_>,
    chunks: Chunks,
) -> Result<Relayed, AppendError> {
    loop {
        let head = log
            .load_retried(owner, task_id)
            .await
            .map_err(AppendError::Store)?
            .ok_or_else(|| AppendError::NotFound(task_id.to_owned()))?;
        if head.task.status.state.is_terminal() {
            return Err(AppendError::Terminal(Box::new(head.task)));
        }
        let events = match events_for(&head.task, update, chunks) {
            Some(events) => events,
            None => return Ok(Relayed::Unplaced),
        };
        if events.is_empty() {
            return Ok(Relayed::Done);
        }
        within(&head.task, &events, limits)?;
        if log.append_on(owner, head, events).await?.is_some() {
            return Ok(Relayed::Done);
        }
    }
}

/// The events that relay `update` into `task` (see [`relay`]); `None` for a chunk that does
/// not continue our copy of its artifact.
fn events_for(task: &Task, update: &RemoteUpdate<'_>, chunks: Chunks) -> Option<Vec<TaskEvent>> {
    let ours = |mut message: Message| {
        message.task_id = task.id.clone();
        message.context_id = task.context_id.clone();
        message.role = Role::Agent;
        message
    };
    // A status message our task shows, or showed (its history), keeps the remote's message id:
    // that message again is a push delivered twice, or an old one replayed after a newer one,
    // and is not relayed again (our task does not go back to it).
    let shown = |message: &Message| {
        !message.message_id.is_empty()
            && task
                .status
                .message
                .iter()
                .chain(&task.history)
                .any(|m| m.message_id == message.message_id)
    };
    let status = |status: &TaskStatus| {
        let same = task.status.state == TaskState::Working
            && task.status.message.as_ref().map(|m| &m.parts)
                == status.message.as_ref().map(|m| &m.parts);
        let again = status.message.as_ref().is_some_and(shown);
        (status.state == TaskState::Working && !same && !again)
            .then(|| working(task, status.message.clone().map(ours)))
    };
    let artifact =
        |artifact: &a2a_protocol::Artifact, append: bool, last_chunk: bool| TaskEvent::Artifact {
            update: a2a_protocol::TaskArtifactUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                artifact: artifact.clone(),
                append,
                last_chunk,
                metadata: None,
                generation: 0,
            },
        };
    let copy = |id: &str| task.artifacts.iter().find(|a| a.artifact_id == id);
    let mut events = Vec::new();
    match update {
        RemoteUpdate::Task(remote) => {
            events.extend(status(&remote.status));
            let settled = stopped(remote.status.state);
            for theirs in unsettled(task, &remote.artifacts) {
                let older = copy(&theirs.artifact_id).is_some_and(|a| {
                    a.parts.len() > theirs.parts.len() && a.parts.starts_with(&theirs.parts)
                });
                if settled || !older {
                    events.push(artifact(theirs, false, true));
                }
            }
        }
        RemoteUpdate::Status(update) => events.extend(status(&update.status)),
        RemoteUpdate::Artifact(update) => {
            let parts = &update.artifact.parts;
            match copy(&update.artifact.artifact_id) {
                // Its start, again or late: our copy has it, and maybe more since.
                Some(a) if !update.append && a.parts.starts_with(parts) => {}
                None if update.append && chunks == Chunks::Placed => return None,
                Some(a)
                    if update.append
                        && chunks == Chunks::Placed
                        && !parts.is_empty()
                        && a.parts.ends_with(parts) =>
                {
                    return None
                }
                _ => events.push(artifact(&update.artifact, update.append, update.last_chunk)),
            }
        }
    }
    // A task still SUBMITTED becomes WORKING before its first relayed artifact.
    if !events.is_empty()
        && task.status.state == TaskState::Submitted
        && !events.iter().any(|e| e.state().is_some())
    {
        events.insert(0, working(task, None));
    }
    Some(events)
}

/// A WORKING status of `task`, with `message`.
fn working(task: &Task, message: Option<Message>) -> TaskEvent {
    TaskEvent::Status {
        update: a2a_protocol::TaskStatusUpdateEvent {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            status: TaskStatus {
                state: TaskState::Working,
                message,
                timestamp: Some(Timestamp::now()),
            },
            metadata: None,
            generation: 0,
        },
    }
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

    /// Our task holding the artifact `a` made of `texts`, one part each.
    fn holding(texts: &[&str]) -> Task {
        Task {
            id: "ours".into(),
            status: TaskStatus {
                state: TaskState::Working,
                ..TaskStatus::default()
            },
            artifacts: vec![Artifact {
                artifact_id: "a".into(),
                parts: texts.iter().map(|t| Part::text(*t)).collect(),
                ..Artifact::default()
            }],
            ..Task::default()
        }
    }

    /// The texts of the artifacts the events write, and whether each appends.
    fn written(events: &[TaskEvent]) -> Vec<(String, bool)> {
        events
            .iter()
            .filter_map(|e| match e {
                TaskEvent::Artifact { update } => Some((
                    update
                        .artifact
                        .parts
                        .iter()
                        .filter_map(|p| p.text.as_deref())
                        .collect::<String>(),
                    update.append,
                )),
                _ => None,
            })
            .collect()
    }

    fn pushed(text: &str, append: bool) -> TaskArtifactUpdateEvent {
        let TaskEvent::Artifact { update } = chunk("a", text, append) else {
            unreachable!()
        };
        update
    }

    #[test]
    fn a_chunk_is_appended_only_where_it_continues_our_artifact() {
        let ours = holding(&["1", "2"]);
        let placed = |task: &Task, update: &TaskArtifactUpdateEvent| {
            events_for(task, &RemoteUpdate::Artifact(update), Chunks::Placed).map(|e| written(&e))
        };
        // The next chunk: appended.
        assert_eq!(
            placed(&ours, &pushed("3", true)),
            Some(vec![("3".into(), true)])
        );
        // The chunk our artifact ends with, again; a chunk of an artifact whose start has not
        // come: not placed.
        assert_eq!(placed(&ours, &pushed("2", true)), None);
        assert_eq!(placed(&Task::default(), &pushed("2", true)), None);
        // Taken as they come, they are appended.
        let as_they_come = events_for(
            &ours,
            &RemoteUpdate::Artifact(&pushed("2", true)),
            Chunks::AsTheyCome,
        );
        assert_eq!(
            as_they_come.map(|e| written(&e)),
            Some(vec![("2".into(), true)])
        );
        // Its start again, late: nothing; a new start replaces.
        assert_eq!(placed(&ours, &pushed("1", false)), Some(vec![]));
        assert_eq!(
            placed(&ours, &pushed("0", false)),
            Some(vec![("0".into(), false)])
        );
    }

    #[test]
    fn a_snapshot_older_than_our_artifact_replaces_it_only_once_the_remote_stopped() {
        let ours = holding(&["1", "2", "3"]);
        let mut theirs = holding(&["1", "2"]);
        theirs.id = "theirs".into();
        let relayed = |task: &Task| {
            events_for(&ours, &RemoteUpdate::Task(task), Chunks::Placed).map(|e| written(&e))
        };
        // Taken while it works, before the chunk we have since: not written back.
        assert_eq!(relayed(&theirs), Some(vec![]));
        // Ahead of ours: replaces it.
        theirs.artifacts[0]
            .parts
            .extend([Part::text("3"), Part::text("4")]);
        assert_eq!(relayed(&theirs), Some(vec![("1234".into(), false)]));
        // As it stopped: the truth, whatever ours holds.
        theirs.artifacts[0].parts.truncate(2);
        theirs.status.state = TaskState::Completed;
        assert_eq!(relayed(&theirs), Some(vec![("12".into(), false)]));
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
