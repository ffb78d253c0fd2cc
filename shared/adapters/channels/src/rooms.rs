//! Rooms as agents our agents call: [`RoomAgents`] gives an A2A-Lite agent in a room a task
//! (`[A2A:task id=…]` posted through the channel) and cancels it (`[A2A:cancel …]`);
//! [`AgentsByAddress`] sends room addresses (`lite:<channel>:<room>`) there and every other
//! address to the A2A client. The room's answers come back through the bridge
//! (`LiteBridge::receive` → `A2aService::relay_named`).

use std::sync::Arc;

use crate::lite::{outbound_task_id, ChannelPort, RoomAddress};
use a2a_core::{CallKey, RemoteAgents, RemoteError, RemoteSent, RemoteTaskRef};
use a2a_protocol::lite::{render, LiteKind, LiteMessage};
use a2a_protocol::{
    Message, SendMessageResponse, Task, TaskPushNotificationConfig, TaskState, TaskStatus,
    Timestamp,
};
use async_trait::async_trait;

/// What a call to a room that no channel here serves fails with.
fn unreachable_room(address: &str) -> RemoteError {
    RemoteError::Refused(format!(
        "rooms are not reachable from this deployment through the channel of {address} \
         (no such A2A-Lite channel is configured here)"
    ))
}

/// The id of the task call `key` gives the room at `agent`, named after our task
/// ([`outbound_task_id`]): `None` when `agent` is no room's address or the id would be too
/// long for a marker (the send then refuses the call, saying so).
pub fn room_task_id(agent: &str, key: &CallKey) -> Option<String> {
    RoomAddress::parse(agent)?;
    outbound_task_id(&key.task_id, &key.call)
}

/// The A2A-Lite agents of the rooms of the configured channels, as remote agents.
#[derive(Clone, Default)]
pub struct RoomAgents {
    channels: Vec<Arc<dyn ChannelPort>>,
}

impl std::fmt::Debug for RoomAgents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.channels.iter().map(|c| c.name()).collect();
        f.debug_struct("RoomAgents")
            .field("channels", &names)
            .finish()
    }
}

impl RoomAgents {
    /// Rooms of `channels` (none: every call to a room is refused).
    pub fn new(channels: Vec<Arc<dyn ChannelPort>>) -> Self {
        Self { channels }
    }

    /// The channel and room of `address`.
    fn room(&self, address: &str) -> Result<(&dyn ChannelPort, RoomAddress), RemoteError> {
        let room = RoomAddress::parse(address).ok_or_else(|| {
            RemoteError::Refused(format!(
                "{address} is not a room's address: write lite:<channel>:<room>"
            ))
        })?;
        let channel = self
            .channels
            .iter()
            .find(|c| c.name() == room.channel)
            .ok_or_else(|| unreachable_room(address))?;
        Ok((channel.as_ref(), room))
    }
}

#[async_trait]
impl RemoteAgents for RoomAgents {
    /// Posts `[A2A:task id=…]` and the message's text to the room: the id the call was named
    /// with ([`room_task_id`], asked through `names_task` before the wait is written; a
    /// continued task keeps its id), which leads the room's answers back to the waiting task. The answer is that task, SUBMITTED, and the room "pushes":
    /// its `status` and `result` come back through the bridge.
    async fn send(
        &self,
        agent: &str,
        key: &CallKey,
        mut message: Message,
        _push: Option<TaskPushNotificationConfig>,
        _traceparent: Option<&str>,
    ) -> Result<RemoteSent, RemoteError> {
        let (channel, room) = self.room(agent)?;
        if message.task_id.is_empty() {
            message.task_id = outbound_task_id(&key.task_id, &key.call).ok_or_else(|| {
                RemoteError::Refused(
                    "this task's id is too long to put in an A2A-Lite task id".into(),
                )
            })?;
        }
        let text: String = message
            .parts
            .iter()
            .filter_map(|p| p.text.as_deref())
            .collect::<Vec<_>>()
            .join("\n");
        let task = LiteMessage::new(
            LiteKind::Task {
                id: message.task_id.clone(),
                skill: None,
                priority: None,
            },
            text,
        );
        // The message id is the same for a send repeated after a crash: a de-duplicating
        // channel (Matrix) shows it once.
        // Cut to the bound of a room message like everything posted to a room.
        let text = render::fit(&task.to_string(), None);
        channel
            .post(&room.room, &text, &message.message_id)
            .await
            .map_err(|e| RemoteError::Unavailable(e.to_string()))?;
        Ok(RemoteSent {
            answer: SendMessageResponse::Task(Task {
                id: message.task_id,
                status: TaskStatus {
                    state: TaskState::Submitted,
                    message: None,
                    timestamp: Some(Timestamp::now()),
                },
                ..Task::default()
            }),
            pushes: true,
        })
    }

    /// A room cannot name its task: it is named after the call ([`room_task_id`]).
    fn names_task(&self, agent: &str, key: &CallKey) -> Option<String> {
        room_task_id(agent, key)
    }

    /// A room cannot be asked how a task stands: the answer is the task as SUBMITTED, which
    /// relays nothing and stops nothing, so the wait goes on until the room answers or its
    /// timeout cancels the task.
    async fn get_task(
        &self,
        remote: &RemoteTaskRef,
        _traceparent: Option<&str>,
    ) -> Result<Task, RemoteError> {
        self.room(&remote.agent)?;
        Ok(Task {
            id: remote.task_id.clone(),
            context_id: remote.context_id.clone(),
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: None,
            },
            ..Task::default()
        })
    }

    /// Posts `[A2A:cancel task=<id>]` to the room.
    async fn cancel_task(
        &self,
        remote: &RemoteTaskRef,
        _traceparent: Option<&str>,
    ) -> Result<(), RemoteError> {
        let (channel, room) = self.room(&remote.agent)?;
        let cancel = LiteMessage::new(
            LiteKind::Cancel {
                task: remote.task_id.clone(),
                reason: Some("canceled-by-requester".into()),
            },
            "The task that asked for this was canceled.",
        );
        let key = format!("cancel-{}", remote.task_id);
        channel
            .post(&room.room, &render::fit(&cancel.to_string(), None), &key)
            .await
            .map_err(|e| RemoteError::Unavailable(e.to_string()))
    }

    /// Rooms do not push over HTTP: nothing of theirs comes signed.
    async fn verify_push(
        &self,
        agent: &str,
        _audiences: &[String],
        _signature: &str,
        _body: &[u8],
    ) -> Result<(), RemoteError> {
        Err(RemoteError::Refused(format!(
            "{agent} is a room: its answers come through the chat, never as signed pushes"
        )))
    }
}

/// Calls rooms through [`RoomAgents`] and every other agent through `agents` (the A2A client):
/// what hosts install as the service's remote agents.
#[derive(Debug, Clone)]
pub struct AgentsByAddress {
    rooms: RoomAgents,
    agents: Arc<dyn RemoteAgents>,
}

impl AgentsByAddress {
    /// Rooms through `rooms`, the rest through `agents`.
    pub fn new(rooms: RoomAgents, agents: Arc<dyn RemoteAgents>) -> Self {
        Self { rooms, agents }
    }

    fn to(&self, address: &str) -> &dyn RemoteAgents {
        if RoomAddress::is_room(address) {
            &self.rooms
        } else {
            self.agents.as_ref()
        }
    }
}

#[async_trait]
impl RemoteAgents for AgentsByAddress {
    async fn send(
        &self,
        agent: &str,
        key: &CallKey,
        message: Message,
        push: Option<TaskPushNotificationConfig>,
        traceparent: Option<&str>,
    ) -> Result<RemoteSent, RemoteError> {
        self.to(agent)
            .send(agent, key, message, push, traceparent)
            .await
    }

    fn names_task(&self, agent: &str, key: &CallKey) -> Option<String> {
        self.to(agent).names_task(agent, key)
    }

    async fn get_task(
        &self,
        remote: &RemoteTaskRef,
        traceparent: Option<&str>,
    ) -> Result<Task, RemoteError> {
        self.to(&remote.agent).get_task(remote, traceparent).await
    }

    async fn cancel_task(
        &self,
        remote: &RemoteTaskRef,
        traceparent: Option<&str>,
    ) -> Result<(), RemoteError> {
        self.to(&remote.agent)
            .cancel_task(remote, traceparent)
            .await
    }

    async fn verify_push(
        &self,
        agent: &str,
        audiences: &[String],
        signature: &str,
        body: &[u8],
    ) -> Result<(), RemoteError> {
        self.to(agent)
            .verify_push(agent, audiences, signature, body)
            .await
    }
}
