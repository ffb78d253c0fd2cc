//! Request and response messages of the eleven A2A operations.

use serde::{Deserialize, Serialize};

use crate::error::A2AError;
use crate::types::{null_as_default, *};

/// How a SendMessage call should behave.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Media types the client accepts in the answer.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(alias = "accepted_output_modes")]
    pub accepted_output_modes: Vec<String>,
    /// A push config for the task this message starts or continues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_push_notification_config")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// How many of the latest messages the answer's task carries (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// Answer at once instead of waiting for the task to stop.
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "return_immediately")]
    pub return_immediately: bool,
    /// A2A 1.1 (draft): the generation the client last read of the task this message
    /// continues; another one refuses the message (TaskGenerationMismatchError). Ignored for a
    /// new task, and for 1.0 clients.
    #[serde(
        default,
        with = "crate::int64::optional",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "if_generation_match")]
    pub if_generation_match: Option<i64>,
    /// A2A 1.1 (draft): how many of the latest timeline entries the answer's task carries (the server's
    /// default when absent; 0: none). Ignored for 1.0 clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "timeline_length")]
    pub timeline_length: Option<i32>,
}

/// `SendMessage` and `SendStreamingMessage`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The tenant (an opaque routing key), or empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The client's message (required).
    #[serde(default)]
    pub message: Option<Message>,
    /// How to answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Request metadata for the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl SendMessageRequest {
    /// Checks the REQUIRED fields and returns the message.
    pub fn validate(&self) -> Result<&Message, A2AError> {
        let message = self
            .message
            .as_ref()
            .ok_or_else(|| A2AError::invalid_params("message is required"))?;
        message.validate("message")?;
        if let Some(cfg) = &self.configuration {
            check_history_length(cfg.history_length)?;
            check_timeline_length(cfg.timeline_length)?;
            if let Some(push) = &cfg.task_push_notification_config {
                push.validate()?;
            }
        }
        Ok(message)
    }
}

/// Rejects a negative `historyLength`.
pub fn check_history_length(history_length: Option<i32>) -> Result<(), A2AError> {
    match history_length {
        Some(n) if n < 0 => Err(A2AError::invalid_params(format!(
            "historyLength must not be negative, got {n}"
        ))),
        _ => Ok(()),
    }
}

/// Rejects a negative `timelineLength` (A2A 1.1 draft); checked for every client, as a
/// negative `historyLength` is.
pub fn check_timeline_length(timeline_length: Option<i32>) -> Result<(), A2AError> {
    match timeline_length {
        Some(n) if n < 0 => Err(A2AError::invalid_params(format!(
            "timelineLength must not be negative, got {n}"
        ))),
        _ => Ok(()),
    }
}

fn require_id(value: &str, field: &str) -> Result<(), A2AError> {
    if value.is_empty() {
        Err(A2AError::invalid_params(format!("{field} is required")))
    } else {
        Ok(())
    }
}

/// `GetTask`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// The tenant (an opaque routing key), or empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The task's id.
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    /// How many of the latest messages to return (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// A2A 1.1 (draft), long-polling: answer once the task's generation is above this one (or
    /// at the server's bound on waiting). Ignored for 1.0 clients.
    #[serde(
        default,
        with = "crate::int64::optional",
        skip_serializing_if = "Option::is_none"
    )]
    #[serde(alias = "current_generation")]
    pub current_generation: Option<i64>,
    /// A2A 1.1 (draft): how many of the latest timeline entries to return (the server's
    /// default when absent; 0: none). Ignored for 1.0 clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "timeline_length")]
    pub timeline_length: Option<i32>,
}

impl GetTaskRequest {
    /// Checks the REQUIRED fields.
    pub fn validate(&self) -> Result<(), A2AError> {
        require_id(&self.id, "id")?;
        check_history_length(self.history_length)?;
        check_timeline_length(self.timeline_length)
    }
}

/// `ListTasks`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// The tenant (an opaque routing key), or empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// Only tasks in this context.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// Only tasks in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// Tasks per page (1 to 100, 50 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "page_size")]
    pub page_size: Option<i32>,
    /// The `nextPageToken` of the previous page; empty for the first.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    #[serde(alias = "page_token")]
    pub page_token: String,
    /// How many of the latest messages each task carries (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// Only tasks whose status changed at or after this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "status_timestamp_after")]
    pub status_timestamp_after: Option<Timestamp>,
    /// Whether tasks carry their artifacts (not by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "include_artifacts")]
    pub include_artifacts: Option<bool>,
    /// A2A 1.1 (draft): how many of the latest timeline entries each task carries (the server's
    /// default when absent; 0: none). Ignored for 1.0 clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "timeline_length")]
    pub timeline_length: Option<i32>,
}

/// Default and bounds of `ListTasksRequest.pageSize`.
pub const LIST_TASKS_DEFAULT_PAGE_SIZE: i32 = 50;
/// Largest accepted `ListTasksRequest.pageSize`.
pub const LIST_TASKS_MAX_PAGE_SIZE: i32 = 100;

impl ListTasksRequest {
    /// Checks ranges and returns the effective page size.
    pub fn validate(&self) -> Result<usize, A2AError> {
        check_history_length(self.history_length)?;
        check_timeline_length(self.timeline_length)?;
        if self.status == Some(TaskState::Unspecified) {
            return Err(A2AError::invalid_params(
                "status TASK_STATE_UNSPECIFIED is not a valid filter",
            ));
        }
        let size = self.page_size.unwrap_or(LIST_TASKS_DEFAULT_PAGE_SIZE);
        if !(1..=LIST_TASKS_MAX_PAGE_SIZE).contains(&size) {
            return Err(A2AError::invalid_params(format!(
                "pageSize must be between 1 and {LIST_TASKS_MAX_PAGE_SIZE}, got {size}"
            )));
        }
        Ok(size as usize)
    }
}

/// The result of `ListTasks`. All four fields are always present.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// This page's tasks, newest status first.
    #[serde(default, deserialize_with = "null_as_default")]
    pub tasks: Vec<Task>,
    /// The token of the next page; empty on the last.
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
    /// The page size used.
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "page_size")]
    pub page_size: i32,
    /// How many tasks match the filters in all.
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "total_size")]
    pub total_size: i32,
}

/// `CancelTask`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    /// The tenant (an opaque routing key), or empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The task's id.
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    /// Metadata for the cancellation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl CancelTaskRequest {
    /// Checks the REQUIRED fields.
    pub fn validate(&self) -> Result<(), A2AError> {
        require_id(&self.id, "id")
    }
}

/// `SubscribeToTask`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    /// The tenant (an opaque routing key), or empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The task's id.
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
}

impl SubscribeToTaskRequest {
    /// Checks the REQUIRED fields.
    pub fn validate(&self) -> Result<(), A2AError> {
        require_id(&self.id, "id")
    }
}

/// `GetTaskPushNotificationConfig` and `DeleteTaskPushNotificationConfig`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfigRef {
    /// The tenant (an opaque routing key), or empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The task's id.
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The push config's id.
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
}

impl TaskPushNotificationConfigRef {
    /// Checks the REQUIRED fields.
    pub fn validate(&self) -> Result<(), A2AError> {
        require_id(&self.task_id, "taskId")?;
        require_id(&self.id, "id")
    }
}

/// `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    /// The tenant (an opaque routing key), or empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The task's id.
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// Configs per page (all of them on one page here).
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "page_size")]
    pub page_size: i32,
    /// The `nextPageToken` of the previous page; empty for the first.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    #[serde(alias = "page_token")]
    pub page_token: String,
}

impl ListTaskPushNotificationConfigsRequest {
    /// Checks the REQUIRED fields.
    pub fn validate(&self) -> Result<(), A2AError> {
        require_id(&self.task_id, "taskId")?;
        if self.page_size < 0 {
            return Err(A2AError::invalid_params("pageSize must not be negative"));
        }
        Ok(())
    }
}

/// The result of `ListTaskPushNotificationConfigs`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    /// The task's push configs.
    #[serde(default, deserialize_with = "null_as_default")]
    pub configs: Vec<TaskPushNotificationConfig>,
    /// The token of the next page; empty on the last.
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
}

/// `GetExtendedAgentCard`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetExtendedAgentCardRequest {
    /// The tenant (an opaque routing key), or empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;
    use serde_json::{json, Value};
    use std::fmt::Debug;

    // The samples below are struct literals without `..Default::default()`: a field added later
    // breaks the build here until the sample sets it, so the walk covers every field.

    fn metadata() -> Option<Metadata> {
        json!({"k": [1, null]}).as_object().cloned()
    }

    fn part() -> Part {
        // Deserialization does not check the oneof, so one part can carry every member.
        Part {
            text: Some("t".into()),
            raw: Some(Bytes(vec![1, 2])),
            url: Some("https://example.com/f".into()),
            data: Some(json!({"d": 1})),
            metadata: metadata(),
            filename: "f.txt".into(),
            media_type: "text/plain".into(),
        }
    }

    fn message() -> Message {
        Message {
            message_id: "m".into(),
            context_id: "c".into(),
            task_id: "t".into(),
            role: Role::User,
            parts: vec![part()],
            metadata: metadata(),
            extensions: vec!["https://example.com/ext".into()],
            reference_task_ids: vec!["t0".into()],
        }
    }

    fn push_config() -> TaskPushNotificationConfig {
        TaskPushNotificationConfig {
            v1_1: false,
            tenant: "tn".into(),
            id: "p".into(),
            task_id: "t".into(),
            url: "https://example.com/hook".into(),
            token: "tok".into(),
            authentication: Some(AuthenticationInfo {
                scheme: "Bearer".into(),
                credentials: "cred".into(),
            }),
            older_version: None,
            traceparent: None,
        }
    }

    /// Every member below `value` as a JSON pointer, except `data` and the insides of
    /// `metadata`: those are free-form JSON, where `null` is a value.
    fn member_pointers(value: &Value, at: &str, out: &mut Vec<String>) {
        match value {
            Value::Object(members) => {
                for (key, inner) in members {
                    if key == "data" {
                        continue;
                    }
                    let pointer = format!("{at}/{key}");
                    out.push(pointer.clone());
                    if key != "metadata" {
                        member_pointers(inner, &pointer, out);
                    }
                }
            }
            Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    member_pointers(inner, &format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    fn split(pointer: &str) -> (&str, &str) {
        pointer.rsplit_once('/').expect("a member pointer")
    }

    /// Reads `nulled` and `absent` as `T` and checks that they are the same request.
    fn assert_same<T: DeserializeOwned + PartialEq + Debug>(
        what: &str,
        nulled: Value,
        absent: Value,
    ) {
        let from_null: T = serde_json::from_value(nulled.clone())
            .unwrap_or_else(|e| panic!("{what} = null is rejected: {e} in {nulled}"));
        let from_absent: T = serde_json::from_value(absent.clone())
            .unwrap_or_else(|e| panic!("{what} absent is rejected: {e} in {absent}"));
        assert_eq!(from_null, from_absent, "{what}: null must read as absent");
    }

    /// For every member of `sample`'s wire form, at any depth: the member set to `null` reads
    /// exactly as the member left out. Then the same with every member of one object at once.
    fn null_reads_as_absent<T: Serialize + DeserializeOwned + PartialEq + Debug>(sample: T) {
        let wire = serde_json::to_value(&sample).unwrap();
        assert_eq!(serde_json::from_value::<T>(wire.clone()).unwrap(), sample);
        let mut pointers = Vec::new();
        member_pointers(&wire, "", &mut pointers);
        for pointer in &pointers {
            let (parent, key) = split(pointer);
            let mut nulled = wire.clone();
            *nulled.pointer_mut(pointer).unwrap() = Value::Null;
            let mut absent = wire.clone();
            absent
                .pointer_mut(parent)
                .unwrap()
                .as_object_mut()
                .unwrap()
                .remove(key);
            assert_same::<T>(pointer, nulled, absent);
        }
        let mut parents: Vec<&str> = pointers.iter().map(|p| split(p).0).collect();
        parents.sort_unstable();
        parents.dedup();
        for parent in parents {
            let mut nulled = wire.clone();
            let mut absent = wire.clone();
            let members = nulled.pointer_mut(parent).unwrap().as_object_mut().unwrap();
            for (key, value) in members.iter_mut() {
                if key != "data" {
                    *value = Value::Null;
                    absent
                        .pointer_mut(parent)
                        .unwrap()
                        .as_object_mut()
                        .unwrap()
                        .remove(key);
                }
            }
            assert_same::<T>(&format!("every member of {parent:?}"), nulled, absent);
        }
    }

    #[test]
    fn null_reads_as_absent_in_every_request() {
        null_reads_as_absent(SendMessageRequest {
            tenant: "tn".into(),
            message: Some(message()),
            configuration: Some(SendMessageConfiguration {
                if_generation_match: None,
                accepted_output_modes: vec!["text/plain".into()],
                task_push_notification_config: Some(push_config()),
                history_length: Some(3),
                return_immediately: true,
                timeline_length: Some(4),
            }),
            metadata: metadata(),
        });
        null_reads_as_absent(GetTaskRequest {
            current_generation: None,
            tenant: "tn".into(),
            id: "t".into(),
            history_length: Some(2),
            timeline_length: Some(5),
        });
        null_reads_as_absent(ListTasksRequest {
            tenant: "tn".into(),
            context_id: "c".into(),
            status: Some(TaskState::Working),
            page_size: Some(10),
            page_token: "tok".into(),
            history_length: Some(1),
            status_timestamp_after: Some(Timestamp::from_millis(1_767_225_600_000)),
            include_artifacts: Some(true),
            timeline_length: Some(6),
        });
        null_reads_as_absent(CancelTaskRequest {
            tenant: "tn".into(),
            id: "t".into(),
            metadata: metadata(),
        });
        null_reads_as_absent(SubscribeToTaskRequest {
            tenant: "tn".into(),
            id: "t".into(),
        });
        null_reads_as_absent(push_config());
        null_reads_as_absent(TaskPushNotificationConfigRef {
            tenant: "tn".into(),
            task_id: "t".into(),
            id: "p".into(),
        });
        null_reads_as_absent(ListTaskPushNotificationConfigsRequest {
            tenant: "tn".into(),
            task_id: "t".into(),
            page_size: 5,
            page_token: "tok".into(),
        });
        null_reads_as_absent(GetExtendedAgentCardRequest {
            tenant: "tn".into(),
        });
    }

    #[test]
    fn the_js_clients_nulls_are_accepted() {
        // What @a2a-js/sdk 1.3.0 sends for `listTaskPushNotificationConfig({taskId})`.
        let list: ListTaskPushNotificationConfigsRequest =
            serde_json::from_value(json!({"taskId": "t", "pageSize": null, "pageToken": null}))
                .unwrap();
        assert_eq!(list.page_size, 0);
        assert!(list.validate().is_ok());
        let tasks: ListTasksRequest =
            serde_json::from_value(json!({"contextId": null, "pageSize": null})).unwrap();
        assert_eq!(tasks, ListTasksRequest::default());
        assert_eq!(
            tasks.validate().unwrap(),
            LIST_TASKS_DEFAULT_PAGE_SIZE as usize
        );
    }
}
