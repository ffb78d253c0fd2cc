//! The A2A-Lite bridge: an agent of this deployment as a member of chat rooms.
//!
//! A channel adapter (a Slack-style webhook, a Matrix application service, …) hands the bridge
//! each message of a room ([`LiteBridge::receive`]) and posts what the bridge says through the
//! one port of this module, [`ChannelPort`]. The bridge does no I/O of its own: the A2A-Lite
//! codec is `a2a_protocol::lite`, and every task is an ordinary A2A task run through
//! [`A2aService`] as the channel's principal (with auth off, the anonymous owner of every other
//! task), with pushes and retention as usual.
//!
//! - `[A2A:discover]` → a `card` message: prose and the A2A-Lite card in JSON.
//! - `[A2A:task id=X]` → `ack` at once, then SendMessage (answered at once; the task runs
//!   inline in a long-lived process, on the worker on Lambda). A `task` naming a task that
//!   waits for input continues it.
//! - `[A2A:cancel task=X]` → CancelTask.
//! - `[A2A:status task=X]`, `[A2A:result task=X]` about a task one of our agents gave the room
//!   (`delegate lite:<channel>:<room> …`: X names our waiting task, see [`OutboundTask`]) are
//!   relayed into that task (`A2aService::relay_named`), if it waits for X in this very room.
//! - Malformed markers get a plain reply saying why, and start nothing. Chat without a marker,
//!   and the types a requester receives (`card`, `ack`, `status`, `result`), start nothing and
//!   get no reply (nor does an answer to a task of ours): the bridge's own messages are of
//!   those kinds, so it can never answer itself or another bridge in a loop.
//!
//! Status and result messages need no process left running: each task of a room gets a push
//! config whose URL is the bridge's own receiver (`events_url`, served by the channel's host)
//! and whose token is an HMAC under the channel's secret ([`EventTarget`]). The push pipeline
//! (fan-out, queue, retries with backoff, dead letters) delivers each event there, and
//! [`LiteBridge::deliver`] turns it into a `status` or `result` message for the room. A delivery
//! answers only once the room has the message, so a chat server that is down is retried.

mod events;
mod ids;
mod inbound;
mod room;

use std::fmt;
use std::sync::Arc;

use a2a_protocol::lite::LiteCardOptions;
use async_trait::async_trait;

use a2a_core::{A2aService, CallContext};

pub use events::{DeliveryError, EventTarget};
pub use inbound::{Handled, MAX_CHAT_MESSAGE_BYTES};
pub use room::{outbound_task_id, room_update, OutboundTask, RoomAddress, ROOM_SCHEME};

/// Why a channel could not post a message. The text names the chat server at most, never a
/// token or a URL's path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ChannelError(pub String);

/// The one port of the bridge: posts a message to a room of one chat channel.
#[async_trait]
pub trait ChannelPort: Send + Sync {
    /// The channel's name in ids and URLs (`webhook`, `matrix`): it must never change for a
    /// deployment, or the tasks of its rooms are no longer found.
    fn name(&self) -> &str;

    /// Posts `text` to `room` as the bridge. `key` names the message: a retry of the same
    /// message has the same key, so a channel that de-duplicates sends (Matrix transaction ids)
    /// shows it once.
    async fn post(&self, room: &str, text: &str, key: &str) -> Result<(), ChannelError>;
}

/// One message seen in a room, as a channel adapter hands it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// The room, as the channel posts to it.
    pub room: String,
    /// Who wrote it (the chat's user id).
    pub sender: String,
    /// The chat's id of the message, when it has one: a message delivered twice starts one
    /// task.
    pub event_id: Option<String>,
    /// The text.
    pub text: String,
}

/// A channel the bridge serves: its port, and the secret its push tokens are made with (the
/// channel's own inbound secret: a rotated secret makes pending tasks' pushes fail).
#[derive(Clone)]
pub struct Channel {
    /// Posts to the channel's rooms.
    pub port: Arc<dyn ChannelPort>,
    /// Keys the push tokens of the channel's tasks.
    pub secret: Vec<u8>,
}

impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel")
            .field("name", &self.port.name())
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// The bridge between chat rooms and the A2A operations. Cheap to clone.
#[derive(Clone)]
pub struct LiteBridge {
    inner: Arc<Inner>,
}

struct Inner {
    service: A2aService,
    ctx: CallContext,
    channels: Vec<Channel>,
    events_url: String,
    card: LiteCardOptions,
}

/// What a bridge serves, and where its pushes come back.
#[derive(Debug, Clone, Default)]
pub struct LiteBridgeConfig {
    /// The URL of the receiver route where this deployment's pushes reach the bridge again
    /// ([`LiteBridge::deliver`]); it must pass the service's push URL policy.
    pub events_url: String,
    /// The channels served (one per name: a later one replaces an earlier one).
    pub channels: Vec<Channel>,
    /// `agent.id` of the agent's A2A-Lite card; empty: derived from the card's name.
    pub agent_id: String,
}

impl LiteBridge {
    /// A bridge for `service`, acting as `ctx` (the channel's principal, or the anonymous
    /// caller with auth off).
    pub fn new(service: A2aService, ctx: CallContext, config: LiteBridgeConfig) -> Self {
        let card = LiteCardOptions {
            agent_id: config.agent_id,
            a2a_agent_card: a2a_card_url(&service),
            ..LiteCardOptions::default()
        };
        let mut channels: Vec<Channel> = Vec::new();
        for channel in config.channels {
            channels.retain(|c| c.port.name() != channel.port.name());
            channels.push(channel);
        }
        Self {
            inner: Arc::new(Inner {
                service,
                ctx,
                channels,
                events_url: config.events_url,
                card,
            }),
        }
    }

    /// The channel called `name`, if the bridge serves it.
    fn channel(&self, name: &str) -> Option<&Channel> {
        self.inner.channels.iter().find(|c| c.port.name() == name)
    }

    /// Posts `text` to `room`, cut to the bound of a room message
    /// ([`render::fit`](a2a_protocol::lite::render::fit)); a failure is logged, not returned:
    /// a reply that does not reach the room changes nothing the bridge did.
    async fn say(&self, channel: &Channel, room: &str, text: &str, key: &str) {
        let text = a2a_protocol::lite::render::fit(text, None);
        if let Err(err) = channel.port.post(room, &text, key).await {
            tracing::warn!(channel = channel.port.name(), error = %err, "posting to a room failed");
        }
    }
}

/// Where the service's A2A card is, for the A2A-Lite card's `a2aAgentCard`: next to its
/// HTTP+JSON interface.
fn a2a_card_url(service: &A2aService) -> Option<String> {
    service
        .agent_card()
        .supported_interfaces
        .iter()
        .find(|i| i.protocol_binding == a2a_protocol::BINDING_HTTP_JSON)
        .map(|i| {
            format!(
                "{}/.well-known/agent-card.json",
                i.url.trim_end_matches('/')
            )
        })
}
