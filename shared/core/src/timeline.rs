//! The A2A 1.1 draft's task timeline (spec `dev-1.1` §3.2.8, ADR-002) as a projection of the
//! task's event log: no I/O, the events are read by the caller. The log numbers every change,
//! so an entry's generation is its event's sequence number, and an artifact's start and end
//! generations are those of the updates that began and completed it.

use std::collections::HashMap;

use a2a_protocol::{Role, StreamResponse, Task, TimelineEntry};

use crate::event::{LoggedEvent, TaskEvent};

/// How many of the latest entries a GetTask or SendMessage answer carries when the request
/// sets no `timelineLength` (docs/conformance.md states it).
pub(crate) const DEFAULT_TIMELINE_LENGTH: usize = 100;

/// The most entries an answer carries, whatever `timelineLength` asks (the draft lets a
/// server apply a lower limit): an answer's size stays bounded on a long task.
pub(crate) const MAX_TIMELINE_LENGTH: usize = 1000;

/// The number of entries to keep for a request's `timelineLength` (negative values are
/// refused earlier, by validation): `default` when absent, at most [`MAX_TIMELINE_LENGTH`].
pub(crate) fn timeline_length(requested: Option<i32>, default: usize) -> usize {
    requested
        .map_or(default, |n| usize::try_from(n).unwrap_or(0))
        .min(MAX_TIMELINE_LENGTH)
}

/// `response` as it goes out: an artifact update's artifact is a chunk, whose generations are
/// the task's (on a Task's artifacts), whatever the agent set on it.
pub(crate) fn without_chunk_generations(response: &mut StreamResponse) {
    if let StreamResponse::ArtifactUpdate(update) = response {
        update.artifact.start_generation = 0;
        update.artifact.end_generation = 0;
    }
}

/// Sets `task`'s timeline (its latest `keep` entries) and its artifacts' start and end
/// generations from `events`, the task's log in order. Events past `task.generation` (appended
/// after the head was read) are left out, so the timeline matches the task it is part of.
///
/// - The task's creation (generation 1) holds the client's first message and the SUBMITTED
///   status: a message entry, then a status entry, both at 1.
/// - A client's follow-up is a message entry; every status update a status entry, with the
///   agent's message in its status.
/// - An artifact starts at the first update that holds it and ends at the update marked
///   `lastChunk`; one never so marked ends with its last update once the task is terminal, as
///   nothing can add to it any more. A later update without `lastChunk` reopens it.
pub(crate) fn project(task: &mut Task, events: &[LoggedEvent], keep: usize) {
    let upto = u64::try_from(task.generation).unwrap_or(0);
    let events = events.iter().filter(|e| upto == 0 || e.seq <= upto);
    let mut entries = Vec::new();
    // Per artifact id: (start, last update, whether the last update completed it).
    let mut spans: HashMap<&str, (i64, i64, bool)> = HashMap::new();
    for logged in events {
        let generation = logged.seq as i64;
        match &logged.event {
            TaskEvent::Created { task: created } => {
                entries.extend(
                    created
                        .history
                        .iter()
                        .filter(|m| m.role == Role::User)
                        .map(|m| TimelineEntry::message(m.clone(), generation)),
                );
                entries.push(TimelineEntry::status(created.status.clone(), generation));
                for artifact in &created.artifacts {
                    spans.insert(&artifact.artifact_id, (generation, generation, false));
                }
            }
            TaskEvent::UserMessage { message } => {
                entries.push(TimelineEntry::message(message.clone(), generation));
            }
            TaskEvent::Status { update } => {
                entries.push(TimelineEntry::status(update.status.clone(), generation));
            }
            TaskEvent::Artifact { update } => {
                let span = spans
                    .entry(&update.artifact.artifact_id)
                    .or_insert((generation, generation, false));
                span.1 = generation;
                span.2 = update.last_chunk;
            }
        }
    }
    let terminal = task.status.state.is_terminal();
    for artifact in &mut task.artifacts {
        let (start, end) = match spans.get(artifact.artifact_id.as_str()) {
            Some(&(start, last, completed)) => {
                (start, if completed || terminal { last } else { 0 })
            }
            None => (0, 0),
        };
        artifact.start_generation = start;
        artifact.end_generation = end;
    }
    let skip = entries.len().saturating_sub(keep);
    task.timeline = entries.split_off(skip);
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol::{
        Artifact, Message, Part, TaskArtifactUpdateEvent, TaskState, TaskStatus,
        TaskStatusUpdateEvent, Timestamp,
    };

    fn logged(seq: u64, event: TaskEvent) -> LoggedEvent {
        LoggedEvent {
            seq,
            at: Timestamp::now(),
            event,
        }
    }

    fn status(state: TaskState, text: Option<&str>) -> TaskEvent {
        TaskEvent::Status {
            update: TaskStatusUpdateEvent {
                status: TaskStatus {
                    state,
                    message: text.map(Message::agent_text),
                    timestamp: None,
                },
                ..Default::default()
            },
        }
    }

    fn chunk(id: &str, text: &str, append: bool, last_chunk: bool) -> TaskEvent {
        TaskEvent::Artifact {
            update: TaskArtifactUpdateEvent {
                artifact: Artifact {
                    artifact_id: id.into(),
                    parts: vec![Part::text(text)],
                    ..Default::default()
                },
                append,
                last_chunk,
                ..Default::default()
            },
        }
    }

    /// A task's log and the head it folds to.
    fn folded(events: Vec<TaskEvent>) -> (Task, Vec<LoggedEvent>) {
        let log: Vec<LoggedEvent> = events
            .into_iter()
            .enumerate()
            .map(|(i, e)| logged(i as u64 + 1, e))
            .collect();
        let task = LoggedEvent::replay(&log).unwrap();
        (task, log)
    }

    fn created() -> TaskEvent {
        TaskEvent::Created {
            task: Task {
                id: "t".into(),
                history: vec![Message::user_text("m1", "hold")],
                ..Default::default()
            },
        }
    }

    /// (kind, generation) of each entry.
    fn shape(task: &Task) -> Vec<(&'static str, i64)> {
        task.timeline
            .iter()
            .map(|e| match (&e.message, &e.status) {
                (Some(_), None) => ("message", e.generation),
                (None, Some(_)) => ("status", e.generation),
                _ => ("other", e.generation),
            })
            .collect()
    }

    #[test]
    fn entries_follow_the_log_with_gaps_for_artifacts() {
        let (mut task, log) = folded(vec![
            created(),
            status(TaskState::Working, None),
            chunk("a", "one ", false, false),
            status(TaskState::InputRequired, Some("more?")),
            TaskEvent::UserMessage {
                message: Message::user_text("m2", "yes"),
            },
            chunk("a", "two", true, true),
            status(TaskState::Completed, Some("done")),
        ]);
        project(&mut task, &log, 100);
        assert_eq!(
            shape(&task),
            [
                ("message", 1),
                ("status", 1),
                ("status", 2),
                ("status", 4),
                ("message", 5),
                ("status", 7)
            ]
        );
        let question = task.timeline[3].status.as_ref().unwrap();
        assert_eq!(question.state, TaskState::InputRequired);
        assert_eq!(
            question.message.as_ref().unwrap().first_text(),
            Some("more?")
        );
        assert_eq!(task.timeline[4].message.as_ref().unwrap().message_id, "m2");
        let artifact = &task.artifacts[0];
        assert_eq!((artifact.start_generation, artifact.end_generation), (3, 6));
    }

    #[test]
    fn the_latest_entries_are_kept() {
        let (mut task, log) = folded(vec![
            created(),
            status(TaskState::Working, None),
            status(TaskState::Completed, None),
        ]);
        project(&mut task, &log, 2);
        assert_eq!(shape(&task), [("status", 2), ("status", 3)]);
        project(&mut task, &log, 0);
        assert!(task.timeline.is_empty());
    }

    #[test]
    fn an_artifact_still_streaming_has_no_end_until_the_task_ends() {
        let (mut task, log) = folded(vec![
            created(),
            chunk("a", "one ", false, false),
            chunk("b", "whole", false, true),
            chunk("a", "two", true, false),
        ]);
        project(&mut task, &log, 100);
        let ends: Vec<(i64, i64)> = task
            .artifacts
            .iter()
            .map(|a| (a.start_generation, a.end_generation))
            .collect();
        assert_eq!(ends, [(2, 0), (3, 3)]);

        // Terminal: nothing can add to `a` any more.
        let (mut task, log) = folded(vec![
            created(),
            chunk("a", "one ", false, false),
            status(TaskState::Completed, None),
        ]);
        project(&mut task, &log, 100);
        assert_eq!(task.artifacts[0].end_generation, 2);
    }

    #[test]
    fn events_after_the_head_are_left_out() {
        let (mut task, mut log) = folded(vec![created(), status(TaskState::Working, None)]);
        log.push(logged(3, status(TaskState::Completed, None)));
        project(&mut task, &log, 100);
        assert_eq!(shape(&task), [("message", 1), ("status", 1), ("status", 2)]);
    }

    #[test]
    fn lengths_default_and_are_bounded() {
        assert_eq!(timeline_length(None, 7), 7);
        assert_eq!(timeline_length(Some(0), 7), 0);
        assert_eq!(timeline_length(Some(3), 7), 3);
        assert_eq!(timeline_length(Some(i32::MAX), 7), MAX_TIMELINE_LENGTH);
    }
}
