//! A webhook that receives an agent's push notifications and verifies them.
//!
//! Each POST is checked by an [`a2a_push_verify::Verifier`] (signature against the agent's
//! JWKS, audience = this webhook's URL, issuer = the agent, body hash, expiry, replay) before
//! its body is parsed as a `StreamResponse`. A verified push is answered `200`, a refused one
//! `401`; both are handed to [`WebhookReceiver::next`], so a caller can show refusals too.

use std::net::SocketAddr;
use std::sync::Arc;

use a2a_protocol::push::PushClaims;
use a2a_protocol::StreamResponse;
use a2a_push_verify::Verifier;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Router;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::error::Error;

/// The path the receiver serves.
pub const WEBHOOK_PATH: &str = "/webhook";

/// A push that passed verification.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedPush {
    /// Its verified claims (task, sequence number, config).
    pub claims: PushClaims,
    /// The event.
    pub event: StreamResponse,
    /// The push config's token, from `X-A2A-Notification-Token`, if sent.
    pub token: Option<String>,
}

/// A POST the receiver refused, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedPush {
    /// Why it was refused.
    pub reason: String,
}

/// What reached the webhook.
pub type Delivery = Result<VerifiedPush, RefusedPush>;

/// A webhook on a local address. Stops when dropped.
#[derive(Debug)]
pub struct WebhookReceiver {
    url: String,
    deliveries: mpsc::Receiver<Delivery>,
    server: JoinHandle<()>,
}

struct Shared {
    verifier: Verifier,
    deliveries: mpsc::Sender<Delivery>,
}

impl WebhookReceiver {
    /// Listens on `addr` for pushes from the agent at `agent_url` (its base URL: the pushes'
    /// `iss`, and where its JWKS is published). `public_url` is the URL the agent is told to
    /// push to, when it is not `http://{addr}/webhook` (behind a tunnel or a proxy); it is the
    /// audience each push must be signed for.
    pub async fn start(
        addr: SocketAddr,
        agent_url: &str,
        public_url: Option<String>,
    ) -> Result<Self, Error> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::Usage(format!("cannot listen on {addr}: {e}")))?;
        let local = listener
            .local_addr()
            .map_err(|e| Error::Usage(format!("listener address: {e}")))?;
        let url = public_url.unwrap_or_else(|| format!("http://{local}{WEBHOOK_PATH}"));
        let verifier = Verifier::for_agent(agent_url, url.clone());
        Ok(Self::serve(listener, url, verifier))
    }

    /// Like [`Self::start`], with a verifier you configured (another JWKS URL, algorithms,
    /// leeway). Its audience must be the URL the agent pushes to.
    pub async fn start_with(
        addr: SocketAddr,
        url: String,
        verifier: Verifier,
    ) -> Result<Self, Error> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::Usage(format!("cannot listen on {addr}: {e}")))?;
        Ok(Self::serve(listener, url, verifier))
    }

    fn serve(listener: tokio::net::TcpListener, url: String, verifier: Verifier) -> Self {
        let (tx, rx) = mpsc::channel(256);
        let shared = Arc::new(Shared {
            verifier,
            deliveries: tx,
        });
        let app = Router::new()
            .route(WEBHOOK_PATH, axum::routing::post(receive))
            .with_state(shared);
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url,
            deliveries: rx,
            server,
        }
    }

    /// The URL to register in a push config.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The next delivery, verified or refused; `None` if the receiver stopped.
    pub async fn next(&mut self) -> Option<Delivery> {
        self.deliveries.recv().await
    }
}

impl Drop for WebhookReceiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn receive(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let delivery = match shared.verifier.verify(&headers, &body).await {
        Err(e) => Err(RefusedPush {
            reason: e.to_string(),
        }),
        Ok(verified) => match serde_json::from_slice::<StreamResponse>(&body) {
            Ok(event) => Ok(VerifiedPush {
                claims: verified.claims,
                event,
                token: headers
                    .get("x-a2a-notification-token")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
            }),
            Err(e) => Err(RefusedPush {
                reason: format!("the body is not a StreamResponse: {e}"),
            }),
        },
    };
    let status = if delivery.is_ok() {
        StatusCode::OK
    } else {
        StatusCode::UNAUTHORIZED
    };
    // A full channel (nobody reading) must not hold the agent's request up.
    let _ = shared.deliveries.try_send(delivery);
    status
}
