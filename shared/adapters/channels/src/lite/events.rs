//! The room hears of its tasks: this deployment's pushes come back to the bridge's receiver
//! route, and each becomes a `status` or `result` message.

use a2a_protocol::lite::render;
use a2a_protocol::{A2AError, GetTaskRequest, StreamResponse, Task, TaskState};

use super::{ids, LiteBridge};

/// Where a task's events go: the room, the sender and the sender's name for the task. It rides
/// in the query of the task's push config URL, so the receiver needs no lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventTarget {
    /// The channel's name.
    pub channel: String,
    /// The room.
    pub room: String,
    /// Who gave the task.
    pub sender: String,
    /// The sender's id for the task (`[A2A:task id=…]`).
    pub task: String,
}

impl EventTarget {
    /// The push config URL: `events_url` with the target in its query.
    pub fn url(&self, events_url: &str) -> String {
        let query = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("channel", &self.channel)
            .append_pair("room", &self.room)
            .append_pair("sender", &self.sender)
            .append_pair("task", &self.task)
            .finish();
        let separator = if events_url.contains('?') { '&' } else { '?' };
        format!("{events_url}{separator}{query}")
    }

    /// The target named by a receiver request's query, if it names one fully.
    pub fn from_query(query: &str) -> Option<Self> {
        let mut target = Self {
            channel: String::new(),
            room: String::new(),
            sender: String::new(),
            task: String::new(),
        };
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            let slot = match key.as_ref() {
                "channel" => &mut target.channel,
                "room" => &mut target.room,
                "sender" => &mut target.sender,
                "task" => &mut target.task,
                _ => continue,
            };
            *slot = value.into_owned();
        }
        let complete = [&target.channel, &target.room, &target.sender, &target.task]
            .iter()
            .all(|v| !v.is_empty());
        complete.then_some(target)
    }

    fn fields(&self) -> [&str; 4] {
        [&self.channel, &self.room, &self.sender, &self.task]
    }

    /// The push config token for the A2A task `a2a_task` sent here (see `ids::push_token`).
    pub(crate) fn token(&self, secret: &[u8], a2a_task: &str) -> String {
        ids::push_token(secret, a2a_task, &self.fields())
    }
}

/// Why a push could not be turned into a room message. The receiver answers each with its
/// own status, which tells the push pipeline what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    /// The token is not ours for this task and target (401: retried, then dead-lettered).
    #[error("the push token does not match")]
    Unauthorized,
    /// The task is gone (410: the push config is deleted).
    #[error("{0}")]
    Gone(String),
    /// The room could not be told, or the task not read (5xx: retried with backoff).
    #[error("{0}")]
    Unavailable(String),
}

impl LiteBridge {
    /// Turns one push of this deployment (`event`, sent to `target` with `token`) into the
    /// room's `status` or `result` message. Answers `Ok` once the room has it, or when the
    /// event says nothing a room needs (an artifact chunk, SUBMITTED).
    pub async fn deliver(
        &self,
        target: &EventTarget,
        token: &str,
        event: &StreamResponse,
    ) -> Result<(), DeliveryError> {
        let task_id = match event {
            StreamResponse::Task(task) => task.id.as_str(),
            StreamResponse::StatusUpdate(update) => update.task_id.as_str(),
            StreamResponse::ArtifactUpdate(update) => update.task_id.as_str(),
            StreamResponse::Message(message) => message.task_id.as_str(),
        };
        // A channel no longer served has no secret to check a token with: its pushes are
        // refused like forged ones (and the caller learns nothing either way).
        let Some(channel) = self.channel(&target.channel) else {
            return Err(DeliveryError::Unauthorized);
        };
        if !ids::push_token_matches(&channel.secret, task_id, &target.fields(), token) {
            return Err(DeliveryError::Unauthorized);
        }
        let text = match event {
            StreamResponse::Task(task) if task.status.state.is_terminal() => {
                render::result_message(&target.task, task)
            }
            StreamResponse::Task(task) => {
                match render::status_message(&target.task, &task.status) {
                    Some(message) => message,
                    None => return Ok(()),
                }
            }
            StreamResponse::StatusUpdate(update) if update.status.state.is_terminal() => {
                // The output is in the task, not in its last status.
                let task = self.ended_task(task_id, update.status.state).await?;
                render::result_message(&target.task, &task)
            }
            StreamResponse::StatusUpdate(update) => {
                match render::status_message(&target.task, &update.status) {
                    Some(message) => message,
                    None => return Ok(()),
                }
            }
            StreamResponse::ArtifactUpdate(_) | StreamResponse::Message(_) => return Ok(()),
        }
        .to_string();
        let text = render::fit(&text, Some(task_id));
        // The same event delivered again has the same key (its body is the stored event's).
        let event_json = serde_json::to_string(event).unwrap_or_default();
        let key = ids::post_key(&["event", task_id, &event_json]);
        channel
            .port
            .post(&target.room, &text, &key)
            .await
            .map_err(|e| DeliveryError::Unavailable(e.to_string()))
    }

    /// The task that just ended in `state`, with its artifacts.
    async fn ended_task(&self, task_id: &str, state: TaskState) -> Result<Task, DeliveryError> {
        let request = GetTaskRequest {
            id: task_id.to_owned(),
            history_length: Some(0),
            ..GetTaskRequest::default()
        };
        match self.inner.service.get_task(&self.inner.ctx, request).await {
            // A task read after its end is in that end: the log allows nothing after it.
            Ok(task) if task.status.state == state => Ok(task),
            Ok(task) => Err(DeliveryError::Unavailable(format!(
                "task {task_id} is {} in the store, not yet {state}",
                task.status.state
            ))),
            Err(A2AError::TaskNotFound { .. }) => {
                Err(DeliveryError::Gone("the task is gone".into()))
            }
            Err(err) => Err(DeliveryError::Unavailable(err.to_string())),
        }
    }
}
