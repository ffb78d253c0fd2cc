//! The webhook port: the core builds each push request (URL, headers, body) and a sender
//! adapter makes the POST through the SSRF guard and says how it ended.
//!
//! The adapter (`a2a-net`'s `WebhookClient`) must connect only to addresses the request's
//! [`PushPolicy`] accepts ([`PushPolicy::check_resolved`] on every resolution), follow no
//! redirects (a 3xx is an answer, not a hop: a redirect could lead past the guard and would
//! carry the config's credentials), and use no proxy (a proxy would resolve and connect on
//! our behalf, out of the guard's sight).

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use async_trait::async_trait;
use http::{HeaderMap, StatusCode};
use url::Url;

use crate::push_policy::{HostResolver, PushPolicy};

/// One webhook POST, as the core built it.
#[derive(Clone)]
pub struct WebhookRequest {
    /// Where to POST (already checked by [`PushPolicy::check_delivery_url`]).
    pub url: Url,
    /// Every header to send. Credentials (`Authorization`, the notification token, the
    /// signature) are marked sensitive, so a `Debug` print of the map hides them.
    pub headers: HeaderMap,
    /// The JSON body.
    pub body: Vec<u8>,
    /// How long the whole request may take.
    pub timeout: Duration,
    /// The guard: which addresses may be contacted.
    pub policy: PushPolicy,
}

impl fmt::Debug for WebhookRequest {
    // The host only: a URL's path and query can carry secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookRequest")
            .field("host", &self.url.host_str().unwrap_or_default())
            .field("headers", &self.headers)
            .field("body_len", &self.body.len())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// How a webhook POST ended. Texts name the host and the address at most, never the URL's
/// path or query nor a credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookOutcome {
    /// The receiver answered with this status (redirects are answers too: never followed).
    Answered(StatusCode),
    /// The guard refused to connect (the reason, e.g. what the host resolved to). Final.
    Refused(String),
    /// No answer: unreachable, timed out, TLS failure. Worth a retry.
    Failed(String),
}

/// Sends webhook requests through the SSRF guard: the port of push delivery. It resolves host
/// names too ([`HostResolver`]), with the resolver it connects through.
#[async_trait]
pub trait WebhookSender: HostResolver {
    /// Makes one POST and reports how it ended; never follows a redirect.
    async fn send(&self, request: WebhookRequest) -> WebhookOutcome;
}

/// The sender of a service configured without one: refuses every send and resolves nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoWebhookSender;

/// What [`NoWebhookSender`] answers.
const NO_SENDER: &str = "no webhook sender configured";

#[async_trait]
impl HostResolver for NoWebhookSender {
    async fn resolve(&self, _host: &str, _port: u16) -> std::io::Result<Vec<SocketAddr>> {
        Err(std::io::Error::other(NO_SENDER))
    }
}

#[async_trait]
impl WebhookSender for NoWebhookSender {
    async fn send(&self, _request: WebhookRequest) -> WebhookOutcome {
        WebhookOutcome::Refused(NO_SENDER.into())
    }
}
