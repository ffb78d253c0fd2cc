//! The A2A-Lite bridge ([`lite`]: an agent of this deployment as a member of chat rooms, and
//! rooms as agents our agents call), its chat channels and their HTTP routes:
//!
//! - [`webhook`]: Slack-compatible outgoing/incoming webhooks (Slack, Mattermost, Rocket.Chat,
//!   Zulip's Slack-compatible interface): `POST /a2a-lite/webhook`;
//! - [`matrix`]: a Matrix application service: `PUT
//!   /a2a-lite/matrix/_matrix/app/v1/transactions/{txnId}` (the registration's `url` is
//!   `{base}/a2a-lite/matrix`);
//! - the bridge's push receiver, `POST /a2a-lite/events`: this deployment's own pushes of the
//!   rooms' tasks, turned into `status` and `result` messages.
//!
//! Every request to a chat server goes through the SSRF guard of the service's push policy
//! (`a2a_net::guarded_client`). Hosts (the local server, the Lambda channel function) build
//! [`LiteChannels`] from [`LiteSettings`] and merge [`LiteChannels::router`] into theirs.

pub mod lite;
pub mod matrix;
mod rooms;
mod routes;
pub mod settings;
pub mod webhook;

use std::sync::Arc;

use crate::lite::{Channel, ChannelPort, LiteBridge, LiteBridgeConfig};
use a2a_core::{A2aService, CallContext, Permissions, Principal, PushPolicy, RemoteAgents};

pub use matrix::{MatrixChannel, MATRIX_CHANNEL};
pub use rooms::{room_task_id, AgentsByAddress, RoomAgents};
pub use settings::{LiteSettings, MatrixSettings, WebhookSettings, DEFAULT_PRINCIPAL};
pub use webhook::{WebhookChannel, WEBHOOK_CHANNEL};

/// The path of the webhook channel's outgoing-webhook endpoint.
pub const WEBHOOK_PATH: &str = "/a2a-lite/webhook";
/// The path of the bridge's push receiver.
pub const EVENTS_PATH: &str = "/a2a-lite/events";
/// The application service's URL below the base URL (the registration's `url`); the
/// homeserver appends `/_matrix/app/v1/…`.
pub const MATRIX_PREFIX: &str = "/a2a-lite/matrix";

/// The bridge and the inbound side of each configured channel, ready to be routed.
#[derive(Clone)]
pub struct LiteChannels {
    inner: Arc<routes::Inbound>,
}

impl LiteChannels {
    /// The channels `settings` configure, bridged to `service`, whose REST base URL is `base`
    /// (pushes come back to `{base}/a2a-lite/events`). `None` when no channel is configured.
    /// A URL the service's push policy refuses (the reply URL, the homeserver, the events URL)
    /// is an error.
    pub fn new(
        settings: &LiteSettings,
        service: A2aService,
        base: &str,
    ) -> Result<Option<Self>, String> {
        if settings.is_empty() {
            return Ok(None);
        }
        let config = service.config();
        let policy = config.push_policy.clone();
        let events_url = format!("{}{EVENTS_PATH}", base.trim_end_matches('/'));
        policy
            .check_url(&events_url)
            .map_err(|e| format!("the A2A-Lite events URL {events_url} is refused: {e}"))?;
        if !config.push_notifications {
            return Err(
                "the A2A-Lite channels tell rooms of their tasks through push notifications, \
                 which are off"
                    .into(),
            );
        }
        let mut channels = Vec::new();
        let webhook = match &settings.webhook {
            Some(w) => {
                let port = Arc::new(WebhookChannel::new(&w.reply_url, &policy)?);
                channels.push(Channel {
                    port,
                    secret: w.token.as_bytes().to_vec(),
                });
                Some(w.token.clone())
            }
            None => None,
        };
        let matrix = match &settings.matrix {
            Some(m) => {
                let port = Arc::new(MatrixChannel::new(m, &policy)?);
                channels.push(Channel {
                    port: port.clone(),
                    secret: m.hs_token.as_bytes().to_vec(),
                });
                Some(routes::MatrixInbound {
                    port,
                    hs_token: m.hs_token.clone(),
                    localpart: m.sender_localpart.clone(),
                    seen: Default::default(),
                })
            }
            None => None,
        };
        let ctx = channel_context(&service, settings.principal.as_deref());
        let bridge = LiteBridge::new(
            service,
            ctx,
            LiteBridgeConfig {
                events_url,
                channels,
                agent_id: settings.agent_id.clone().unwrap_or_default(),
            },
        );
        Ok(Some(Self {
            inner: Arc::new(routes::Inbound {
                bridge,
                webhook_token: webhook,
                matrix,
            }),
        }))
    }

    /// The routes of the configured channels and of the push receiver.
    pub fn router(&self) -> axum::Router {
        routes::router(self.inner.clone())
    }

    /// The bridge itself.
    pub fn bridge(&self) -> &LiteBridge {
        &self.inner.bridge
    }
}

/// The remote agents of a host with the channels of `settings`: rooms of those channels
/// (`lite:<channel>:<room>`) are called through them, every other agent through `agents`.
/// Without channels, a call to a room is refused, saying rooms are not reachable here.
pub fn remote_agents(
    settings: &LiteSettings,
    policy: &PushPolicy,
    agents: Arc<dyn RemoteAgents>,
) -> Result<AgentsByAddress, String> {
    let mut ports: Vec<Arc<dyn ChannelPort>> = Vec::new();
    if let Some(w) = &settings.webhook {
        ports.push(Arc::new(WebhookChannel::new(&w.reply_url, policy)?));
    }
    if let Some(m) = &settings.matrix {
        ports.push(Arc::new(MatrixChannel::new(m, policy)?));
    }
    Ok(AgentsByAddress::new(RoomAgents::new(ports), agents))
}

/// Who the channels act as: with auth on, `principal` (default [`DEFAULT_PRINCIPAL`]), an
/// owner like any other, allowed every operation; with auth off, the anonymous caller, so the
/// rooms' tasks are listed with every other task.
pub fn channel_context(service: &A2aService, principal: Option<&str>) -> CallContext {
    if !service.config().auth.is_enabled() {
        return CallContext::anonymous("");
    }
    let principal = Principal {
        id: principal.unwrap_or(DEFAULT_PRINCIPAL).to_owned(),
        authenticated: true,
        permissions: Permissions::all(),
    };
    CallContext::new(&principal, "")
}
