//! Request and response messages of the eleven A2A operations.

use serde::{Deserialize, Serialize};

use crate::error::A2AError;
use crate::types::*;

/// How a SendMessage call should behave.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "accepted_output_modes")]
    pub accepted_output_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_push_notification_config")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    #[serde(default)]
    #[serde(alias = "return_immediately")]
    pub return_immediately: bool,
}

/// `SendMessage` and `SendStreamingMessage`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default)]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
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
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default)]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
}

impl GetTaskRequest {
    /// Checks the REQUIRED fields.
    pub fn validate(&self) -> Result<(), A2AError> {
        require_id(&self.id, "id")?;
        check_history_length(self.history_length)
    }
}

/// `ListTasks`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "context_id")]
    pub context_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "page_size")]
    pub page_size: Option<i32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "page_token")]
    pub page_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "status_timestamp_after")]
    pub status_timestamp_after: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "include_artifacts")]
    pub include_artifacts: Option<bool>,
}

/// Default and bounds of `ListTasksRequest.pageSize`.
pub const LIST_TASKS_DEFAULT_PAGE_SIZE: i32 = 50;
/// Largest accepted `ListTasksRequest.pageSize`.
pub const LIST_TASKS_MAX_PAGE_SIZE: i32 = 100;

impl ListTasksRequest {
    /// Checks ranges and returns the effective page size.
    pub fn validate(&self) -> Result<usize, A2AError> {
        check_history_length(self.history_length)?;
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
    #[serde(default)]
    pub tasks: Vec<Task>,
    #[serde(default)]
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
    #[serde(default)]
    #[serde(alias = "page_size")]
    pub page_size: i32,
    #[serde(default)]
    #[serde(alias = "total_size")]
    pub total_size: i32,
}

/// `CancelTask`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default)]
    pub id: String,
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
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default)]
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
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default)]
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(default)]
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
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default)]
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(default)]
    #[serde(alias = "page_size")]
    pub page_size: i32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
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
    #[serde(default)]
    pub configs: Vec<TaskPushNotificationConfig>,
    #[serde(default)]
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
}

/// `GetExtendedAgentCard`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetExtendedAgentCardRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
}
