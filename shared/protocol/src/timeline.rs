//! The A2A 1.1 draft's task timeline (spec `dev-1.1` §3.2.8, `TimelineEntry` §4.1.8, ADR-002):
//! the client messages and agent statuses of a task in generation order. [`TimelineEntry`] is
//! with the other objects, in `types`.

use crate::types::{Message, TaskStatus, TimelineEntry};

impl TimelineEntry {
    /// A client message appended at `generation`.
    pub fn message(message: Message, generation: i64) -> Self {
        Self {
            message: Some(message),
            status: None,
            generation,
        }
    }

    /// An agent status appended at `generation`.
    pub fn status(status: TaskStatus, generation: i64) -> Self {
        Self {
            message: None,
            status: Some(status),
            generation,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Task, TaskState};
    use serde_json::json;

    #[test]
    fn entries_are_protojson_oneofs_with_int64_generations() {
        let status = TaskStatus {
            state: TaskState::Working,
            ..Default::default()
        };
        let json = serde_json::to_value(TimelineEntry::status(status.clone(), 4)).unwrap();
        assert_eq!(
            json,
            json!({"status": {"state": "TASK_STATE_WORKING"}, "generation": "4"})
        );
        let read: TimelineEntry = serde_json::from_value(json).unwrap();
        assert_eq!(read, TimelineEntry::status(status, 4));
    }

    #[test]
    fn an_entry_of_an_unknown_kind_is_read_and_can_be_skipped() {
        let task: Task = serde_json::from_value(json!({
            "id": "t",
            "timeline": [
                {"elicitation": {"id": "e1"}, "generation": "2"},
                {"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}, "generation": 3},
            ],
        }))
        .unwrap();
        assert_eq!(task.timeline.len(), 2);
        let unknown = &task.timeline[0];
        assert!(unknown.message.is_none() && unknown.status.is_none());
        assert_eq!(unknown.generation, 2);
        assert_eq!(task.timeline[1].generation, 3);
    }

    #[test]
    fn a_task_without_a_timeline_writes_none() {
        let json = serde_json::to_value(Task::default()).unwrap();
        assert!(json.get("timeline").is_none(), "{json}");
        let artifact = serde_json::to_value(crate::types::Artifact::default()).unwrap();
        assert!(artifact.get("startGeneration").is_none(), "{artifact}");
        assert!(artifact.get("endGeneration").is_none(), "{artifact}");
    }
}
