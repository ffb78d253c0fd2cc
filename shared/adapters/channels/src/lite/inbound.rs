//! A room's messages to the agent: `discover`, `task` and `cancel` as A2A operations.

use a2a_protocol::lite::render::quote;
use a2a_protocol::lite::{parse, render, LiteCard, LiteKind, LiteMessage, LiteState};
use a2a_protocol::{
    A2AError, CancelTaskRequest, GetTaskRequest, Message, Part, Role, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, Task, TaskPushNotificationConfig,
};
use serde_json::{json, Map, Value};

use super::events::EventTarget;
use super::room::{room_update, OutboundTask, RoomAddress};
use super::{ids, Channel, ChatMessage, LiteBridge};

/// The longest chat message the bridge reads, in bytes: more is refused with a reply.
pub const MAX_CHAT_MESSAGE_BYTES: usize = 64 * 1024;

/// What the bridge did with a chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// Nothing, and no reply: chat without a marker, a type a requester receives, a type this
    /// version does not know, or a channel the bridge does not serve.
    Ignored(&'static str),
    /// A `discover`: the card was posted.
    Described,
    /// A malformed or refused message: a reply says why; nothing was started.
    Refused(String),
    /// A `task` started the A2A task with this id (an `ack` was posted).
    Started(String),
    /// A `task` continued the A2A task with this id, which waited for input.
    Continued(String),
    /// A chat message delivered again: what it started before stands.
    Repeated(String),
    /// A `cancel` cancelled the A2A task with this id (its `result` comes as for any end).
    Cancelled(String),
    /// A room agent's `status` or `result` about the task with this A2A-Lite id, which one of
    /// our agents gave the room: relayed into the task waiting for it.
    Relayed(String),
}

impl LiteBridge {
    /// Handles one message of `room` in `channel`. An `Err` is a failure of the store or the
    /// agent, worth a redelivery (a chat message delivered twice starts one task); everything
    /// the sender did wrong is answered in the room and is `Ok`.
    pub async fn receive(&self, channel: &str, message: ChatMessage) -> Result<Handled, A2AError> {
        let Some(channel) = self.channel(channel) else {
            return Ok(Handled::Ignored("a channel the bridge does not serve"));
        };
        if message.text.len() > MAX_CHAT_MESSAGE_BYTES {
            if parse(&message.text).is_ok_and(|m| m.is_none()) {
                return Ok(Handled::Ignored("chat"));
            }
            let why = format!(
                "This A2A message is {} bytes long; the most I read is {MAX_CHAT_MESSAGE_BYTES}.",
                message.text.len()
            );
            return Ok(self.refuse(channel, &message, None, why).await);
        }
        let lite = match parse(&message.text) {
            Ok(None) => return Ok(Handled::Ignored("chat")),
            Ok(Some(lite)) => lite,
            Err(err) => {
                let task = err.task.clone();
                return Ok(self.refuse(channel, &message, task, err.message).await);
            }
        };
        match &lite.kind {
            LiteKind::Discover => Ok(self.describe(channel, &message).await),
            LiteKind::Task { id, skill, .. } => {
                let (id, skill) = (id.clone(), skill.clone());
                // Our own call's message (a chat that echoes the bridge's posts): never work
                // for us. The same kind of id from another deployment is a task like any other.
                let ours = OutboundTask::named_call(&room_address(channel, &message), &id);
                if let Some(named) = ours {
                    if self.inner.service.made_named_call(&named).await? {
                        return Ok(Handled::Ignored("a task this deployment gave"));
                    }
                }
                self.task(channel, &message, &lite, &id, skill.as_deref())
                    .await
            }
            LiteKind::Cancel { task, reason } => {
                self.cancel(channel, &message, task, reason.as_deref())
                    .await
            }
            // A room agent's answer to a task our agent gave it.
            LiteKind::Status { task, .. } | LiteKind::Result { task, .. }
                if OutboundTask::parse(task).is_some() =>
            {
                self.answer(channel, &message, &lite, task).await
            }
            // What a requester receives, about tasks not ours: for the side that gave them.
            LiteKind::Card
            | LiteKind::Ack { .. }
            | LiteKind::Status { .. }
            | LiteKind::Result { .. } => Ok(Handled::Ignored("a message for requesters")),
            LiteKind::Other { .. } => Ok(Handled::Ignored("a type this version does not know")),
        }
    }

    /// A room agent's `status` or `result` about `lite_id`, a task one of our agents gave this
    /// room: relayed into the waiting task if it waits for it here. Never answered in the room
    /// (an answer to an answer could loop): one not taken changes nothing.
    async fn answer(
        &self,
        channel: &Channel,
        message: &ChatMessage,
        lite: &LiteMessage,
        lite_id: &str,
    ) -> Result<Handled, A2AError> {
        let Some(update) = room_update(lite) else {
            return Ok(Handled::Ignored("a room's word that changes nothing"));
        };
        let room = room_address(channel, message);
        let Some(named) = OutboundTask::named_call(&room, lite_id) else {
            return Ok(Handled::Ignored("an answer no task of ours waits for here"));
        };
        match self.inner.service.relay_named(&named, &update).await {
            Ok(true) => Ok(Handled::Relayed(lite_id.to_owned())),
            Ok(false) => Ok(Handled::Ignored("an answer no task of ours waits for here")),
            Err(err) if is_internal(&err) => Err(err),
            Err(_) => Ok(Handled::Ignored("an answer that does not fit the task")),
        }
    }

    /// A plain reply (no marker: nothing acts on it) saying why the message started nothing.
    async fn refuse(
        &self,
        channel: &Channel,
        message: &ChatMessage,
        task: Option<String>,
        why: String,
    ) -> Handled {
        let about = task
            .map(|t| format!(" (task {})", quote(&t)))
            .unwrap_or_default();
        let text = format!("Your A2A message{about} was not accepted: {why} Nothing was started.");
        let key = reply_key(channel, message, "refused");
        self.say(channel, &message.room, &text, &key).await;
        Handled::Refused(why)
    }

    /// `discover`: the card, in prose and JSON.
    async fn describe(&self, channel: &Channel, message: &ChatMessage) -> Handled {
        let mut options = self.inner.card.clone();
        options.channels = vec![format!("{}:{}", channel.port.name(), message.room)];
        let card = LiteCard::from_a2a(self.inner.service.agent_card(), &options);
        let reply = LiteMessage::new(LiteKind::Card, card.message_body());
        let key = reply_key(channel, message, "card");
        self.say(channel, &message.room, &reply.to_string(), &key)
            .await;
        Handled::Described
    }

    /// `task`: a new A2A task, or the answer to one that waits for input.
    async fn task(
        &self,
        channel: &Channel,
        message: &ChatMessage,
        lite: &LiteMessage,
        lite_id: &str,
        skill: Option<&str>,
    ) -> Result<Handled, A2AError> {
        let name = channel.port.name();
        let task_id = ids::task_id(name, &message.room, &message.sender, lite_id);
        let message_id = ids::message_id(name, &message.room, message.event_id.as_deref());
        let existing = self.existing(&task_id).await?;
        let follow_up = match &existing {
            None => false,
            Some(task) if task.history.iter().any(|m| m.message_id == message_id) => {
                return Ok(Handled::Repeated(task_id));
            }
            Some(task) if task.status.state.is_interrupted() => true,
            Some(task) => {
                let state = LiteState::from_a2a(task.status.state)
                    .map_or_else(|| task.status.state.to_string(), |s| s.to_string());
                let why = if task.status.state.is_terminal() {
                    format!(
                        "your task {} already ended ({state}); give a new task a new id.",
                        quote(lite_id)
                    )
                } else {
                    format!(
                        "your task {} is still {state}; wait for its result or cancel it with \
                         [A2A:cancel task={lite_id}] (the id as every marker carries it).",
                        quote(lite_id)
                    )
                };
                return Ok(self.refuse(channel, message, None, why).await);
            }
        };
        if !follow_up {
            if let Some(why) = self.unknown_skill(skill) {
                return Ok(self.reject(channel, message, lite_id, why).await);
            }
            if lite.body.trim().is_empty() && skill.is_none() {
                let why = "say what to do below the marker, or name a skill with skill=…";
                return Ok(self
                    .refuse(channel, message, Some(lite_id.to_owned()), why.to_owned())
                    .await);
            }
        }
        let ack = if follow_up {
            "Received your answer.".to_owned()
        } else {
            format!("Received. This is A2A task {task_id}.")
        };
        let ack = LiteMessage::new(
            LiteKind::Ack {
                task: lite_id.to_owned(),
            },
            ack,
        );
        let key = reply_key(channel, message, "ack");
        self.say(channel, &message.room, &ack.to_string(), &key)
            .await;

        let target = EventTarget {
            channel: name.to_owned(),
            room: message.room.clone(),
            sender: message.sender.clone(),
            task: lite_id.to_owned(),
        };
        let request = SendMessageRequest {
            message: Some(Message {
                message_id,
                context_id: ids::context_id(name, &message.room),
                task_id: if follow_up {
                    task_id.clone()
                } else {
                    String::new()
                },
                role: Role::User,
                parts: vec![Part::text(task_text(lite, skill))],
                metadata: Some(metadata(name, message, lite, lite_id)),
                ..Message::default()
            }),
            configuration: Some(SendMessageConfiguration {
                // Answered at once: the room hears of the work through the pushes.
                return_immediately: true,
                task_push_notification_config: (!follow_up).then(|| TaskPushNotificationConfig {
                    url: target.url(&self.inner.events_url),
                    token: target.token(&channel.secret, &task_id),
                    ..TaskPushNotificationConfig::default()
                }),
                ..SendMessageConfiguration::default()
            }),
            ..SendMessageRequest::default()
        };
        let mut ctx = self.inner.ctx.clone();
        ctx.requested_task_id = Some(task_id.clone());
        match self.inner.service.send_message(&ctx, request).await {
            Ok(SendMessageResponse::Task(_)) if follow_up => Ok(Handled::Continued(task_id)),
            Ok(SendMessageResponse::Task(_)) => Ok(Handled::Started(task_id)),
            // An agent that answers with a message, no task: that is the result.
            Ok(SendMessageResponse::Message(reply)) => {
                let (text, attachments) = render::message_text(&reply);
                let result = LiteMessage {
                    attachments,
                    ..LiteMessage::new(
                        LiteKind::Result {
                            task: lite_id.to_owned(),
                            state: LiteState::Completed,
                            artifacts: None,
                        },
                        text,
                    )
                };
                let key = reply_key(channel, message, "result");
                self.say(channel, &message.room, &result.to_string(), &key)
                    .await;
                Ok(Handled::Started(task_id))
            }
            Err(err) if is_internal(&err) => Err(err),
            Err(err) => Ok(self
                .reject(channel, message, lite_id, err.to_string())
                .await),
        }
    }

    /// A task refused before anything ran: `result` `rejected`, with the reason.
    async fn reject(
        &self,
        channel: &Channel,
        message: &ChatMessage,
        lite_id: &str,
        why: String,
    ) -> Handled {
        let reply = LiteMessage::new(
            LiteKind::Result {
                task: lite_id.to_owned(),
                state: LiteState::Rejected,
                artifacts: None,
            },
            why.clone(),
        );
        let key = reply_key(channel, message, "rejected");
        self.say(channel, &message.room, &reply.to_string(), &key)
            .await;
        Handled::Refused(why)
    }

    /// The reason to refuse `skill`, when the agent's card has no such skill.
    fn unknown_skill(&self, skill: Option<&str>) -> Option<String> {
        let skill = skill?;
        let skills = &self.inner.service.agent_card().skills;
        if skills.iter().any(|s| s.id == skill) {
            return None;
        }
        let ids: Vec<&str> = skills.iter().map(|s| s.id.as_str()).collect();
        Some(format!(
            "I have no skill {}; my skills are {}. Ask with [A2A:discover].",
            quote(skill),
            if ids.is_empty() {
                "none".to_owned()
            } else {
                ids.join(", ")
            }
        ))
    }

    /// The A2A task `task_id` of the channel's owner, if there is one.
    async fn existing(&self, task_id: &str) -> Result<Option<Task>, A2AError> {
        let request = GetTaskRequest {
            id: task_id.to_owned(),
            ..GetTaskRequest::default()
        };
        match self.inner.service.get_task(&self.inner.ctx, request).await {
            Ok(task) => Ok(Some(task)),
            Err(A2AError::TaskNotFound { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// `cancel`: CancelTask on the sender's task; its `result` comes through the push like any
    /// end. A task that is not there or already ended gets a plain reply.
    async fn cancel(
        &self,
        channel: &Channel,
        message: &ChatMessage,
        lite_id: &str,
        reason: Option<&str>,
    ) -> Result<Handled, A2AError> {
        let name = channel.port.name();
        let task_id = ids::task_id(name, &message.room, &message.sender, lite_id);
        let metadata = reason.map(|r| {
            let mut m = Map::new();
            m.insert("reason".into(), Value::String(r.to_owned()));
            m
        });
        let request = CancelTaskRequest {
            id: task_id.clone(),
            metadata,
            ..CancelTaskRequest::default()
        };
        let why = match self
            .inner
            .service
            .cancel_task(&self.inner.ctx, request)
            .await
        {
            Ok(_) => return Ok(Handled::Cancelled(task_id)),
            Err(A2AError::TaskNotFound { .. }) => {
                format!("there is no task {} of yours here.", quote(lite_id))
            }
            Err(A2AError::TaskNotCancelable { state, .. }) => {
                let state = a2a_protocol::TaskState::parse(&state)
                    .and_then(LiteState::from_a2a)
                    .map_or(state, |s| s.to_string());
                format!(
                    "your task {} already ended ({state}); there is nothing to cancel.",
                    quote(lite_id)
                )
            }
            Err(err) if is_internal(&err) => return Err(err),
            Err(err) => err.to_string(),
        };
        Ok(self.refuse(channel, message, None, why).await)
    }
}

/// The address of the room `message` was said in, as calls to it name it.
fn room_address(channel: &Channel, message: &ChatMessage) -> String {
    RoomAddress {
        channel: channel.port.name().to_owned(),
        room: message.room.clone(),
    }
    .to_string()
}

/// What the agent is asked: the body, or the skill's name when the body is empty.
fn task_text(lite: &LiteMessage, skill: Option<&str>) -> String {
    match (lite.body.trim().is_empty(), skill) {
        (true, Some(skill)) => skill.to_owned(),
        _ => lite.body.clone(),
    }
}

/// The message's `a2aLite` metadata: where it came from and what the marker said, for the
/// agent and for whoever reads the task later.
fn metadata(
    channel: &str,
    message: &ChatMessage,
    lite: &LiteMessage,
    lite_id: &str,
) -> Map<String, Value> {
    let mut fields = json!({
        "channel": channel,
        "room": message.room,
        "sender": message.sender,
        "taskId": lite_id,
    });
    if let LiteKind::Task {
        skill, priority, ..
    } = &lite.kind
    {
        if let Some(skill) = skill {
            fields["skill"] = json!(skill);
        }
        if let Some(priority) = priority {
            fields["priority"] = json!(priority);
        }
    }
    if !lite.attachments.is_empty() {
        let names: Vec<&str> = lite.attachments.iter().map(|a| a.name.as_str()).collect();
        fields["attachments"] = json!(names);
    }
    let mut map = Map::new();
    map.insert("a2aLite".into(), fields);
    map
}

/// The key of the bridge's reply of `kind` to `message`: a chat message delivered twice gets
/// the same reply key, which a de-duplicating channel shows once.
fn reply_key(channel: &Channel, message: &ChatMessage, kind: &str) -> String {
    let event = message.event_id.clone().unwrap_or_else(a2a_core::new_id);
    ids::post_key(&[channel.port.name(), &message.room, &event, kind])
}

/// A failure of ours (the store, the queue), not the sender's doing: worth a redelivery.
fn is_internal(err: &A2AError) -> bool {
    matches!(err, A2AError::Internal(_))
}
