//! Building A2A requests and reading A2A results as JSON.

use serde_json::{json, Value};

use crate::*;

/// A fresh id (UUID v4).
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A user message with one text part and a fresh messageId.
pub fn user_message(text: &str) -> Value {
    json!({"messageId": new_id(), "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// A `SendMessageRequest` for a new task.
pub fn send_request(text: &str) -> Value {
    json!({"message": user_message(text)})
}

/// A `SendMessageRequest` with a `configuration`.
pub fn send_request_with(text: &str, configuration: Value) -> Value {
    json!({"message": user_message(text), "configuration": configuration})
}

/// A follow-up `SendMessageRequest` on `task_id` (no contextId: the server infers it).
pub fn follow_up(task_id: &str, text: &str) -> Value {
    let mut message = user_message(text);
    message["taskId"] = json!(task_id);
    json!({"message": message})
}

/// The Task of a `SendMessageResponse` (panics if it is a Message).
#[track_caller]
pub fn task_of(response: &Value) -> &Value {
    let task = response
        .get("task")
        .unwrap_or_else(|| panic!("SendMessageResponse holds a task: {response}"));
    assert!(
        response.get("message").is_none(),
        "task and message both set: {response}"
    );
    task
}

/// The task `id` in a ListTasks answer (panics if it is not there).
#[track_caller]
pub fn task_in<'a>(listed: &'a Value, id: &str) -> &'a Value {
    listed["tasks"]
        .as_array()
        .and_then(|tasks| tasks.iter().find(|t| t["id"] == id))
        .unwrap_or_else(|| panic!("task {id} is listed: {listed}"))
}

/// `status.state` of a Task.
#[track_caller]
pub fn state(task: &Value) -> &str {
    task["status"]["state"]
        .as_str()
        .unwrap_or_else(|| panic!("task without status.state: {task}"))
}

/// `id` of a Task.
#[track_caller]
pub fn id_of(task: &Value) -> String {
    task["id"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| panic!("task without id: {task}"))
        .to_string()
}

pub fn is_terminal(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
    )
}

pub fn is_interrupted(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED"
    )
}

/// Which member of a `StreamResponse` is set: `task`, `message`, `statusUpdate` or
/// `artifactUpdate`. Panics unless exactly one is.
#[track_caller]
pub fn kind(response: &Value) -> &'static str {
    let kinds: Vec<&'static str> = ["task", "message", "statusUpdate", "artifactUpdate"]
        .into_iter()
        .filter(|k| response.get(*k).is_some())
        .collect();
    assert_eq!(
        kinds.len(),
        1,
        "a StreamResponse sets exactly one member: {response}"
    );
    assert_eq!(
        response.as_object().map(|o| o.len()),
        Some(1),
        "a StreamResponse has nothing besides its member: {response}"
    );
    kinds[0]
}

/// The state carried by a `task` or `statusUpdate` stream response.
pub fn event_state(response: &Value) -> Option<&str> {
    response
        .get("statusUpdate")
        .or_else(|| response.get("task"))
        .and_then(|v| v["status"]["state"].as_str())
}

/// The texts of a message's text parts, joined.
pub fn message_text(message: &Value) -> String {
    message["parts"]
        .as_array()
        .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect())
        .unwrap_or_default()
}

/// The texts of an artifact's parts, joined.
pub fn artifact_text(artifact: &Value) -> String {
    message_text(artifact)
}

/// The artifacts of a task (empty if none).
pub fn artifacts(task: &Value) -> Vec<Value> {
    task["artifacts"].as_array().cloned().unwrap_or_default()
}

/// The history of a task (empty if none).
pub fn history(task: &Value) -> Vec<Value> {
    task["history"].as_array().cloned().unwrap_or_default()
}
