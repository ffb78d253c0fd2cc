//! Webhook POSTs through the SSRF guard.
//!
//! IP-literal hosts are checked by the core before a request gets here; host names are
//! resolved by [`GuardedResolver`], which hands the HTTP client only addresses the request's
//! [`PushPolicy`] accepts, so the client connects only to checked addresses, on every
//! connection (a name that turned private since the config was created is refused then).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use a2a_core::GuardRefusal;
use a2a_core::{HostResolver, PushPolicy, WebhookOutcome, WebhookRequest, WebhookSender};
use async_trait::async_trait;

/// The webhook sender: `reqwest` with no redirects, no proxies and the guarded resolver.
#[derive(Debug, Default)]
pub struct WebhookClient {
    /// The HTTP client built for the policy it was last asked to apply (one per process in
    /// practice): the resolver, which holds the policy, belongs to the client.
    client: Mutex<Option<(PushPolicy, reqwest::Client)>>,
}

impl WebhookClient {
    /// A sender; its HTTP client is built on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// The HTTP client that enforces `policy`.
    fn client(&self, policy: &PushPolicy) -> Result<reqwest::Client, String> {
        let mut cached = self.client.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((built_for, client)) = cached.as_ref() {
            if built_for == policy {
                return Ok(client.clone());
            }
        }
        let client = guarded_client(policy)?;
        *cached = Some((policy.clone(), client.clone()));
        Ok(client)
    }
}

/// An HTTP client that connects only where `policy` allows: host names resolved by a resolver
/// that refuses non-public addresses (unless allow-listed), no redirects, no proxies, `https`
/// only if the policy requires it. IP-literal URLs must be checked by the caller
/// ([`PushPolicy::check_url`]) before a request. For every outbound request of the kit that
/// goes to a URL someone configured or sent: webhooks, chat channels.
pub fn guarded_client(policy: &PushPolicy) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        // A redirect could lead past the guard, and would carry the request's credentials.
        .redirect(reqwest::redirect::Policy::none())
        // A proxy would resolve the host and connect itself, out of the guard's sight.
        .no_proxy()
        .dns_resolver(GuardedResolver {
            policy: Arc::new(policy.clone()),
        })
        .https_only(policy.require_https)
        .build()
        .map_err(|e| format!("the guarded HTTP client could not be built: {e}"))
}

/// Why a request of a [`guarded_client`] failed, on one line: the guard's refusal, or the
/// error and its causes, without the URL (its path and query may carry secrets).
pub fn describe_error(err: &reqwest::Error) -> String {
    match guard_refusal(err) {
        Some(refusal) => format!("refused by the URL policy: {refusal}"),
        None => error_chain(err),
    }
}

#[async_trait]
impl HostResolver for WebhookClient {
    async fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        Ok(tokio::net::lookup_host((host, port)).await?.collect())
    }
}

#[async_trait]
impl WebhookSender for WebhookClient {
    async fn send(&self, request: WebhookRequest) -> WebhookOutcome {
        let client = match self.client(&request.policy) {
            Ok(client) => client,
            Err(err) => return WebhookOutcome::Failed(err),
        };
        let sent = client
            .post(request.url)
            .headers(request.headers)
            .timeout(request.timeout)
            .body(request.body)
            .send()
            .await;
        match sent {
            Ok(response) => WebhookOutcome::Answered(response.status()),
            Err(err) => match guard_refusal(&err) {
                Some(refusal) => WebhookOutcome::Refused(refusal.to_string()),
                None => WebhookOutcome::Failed(error_chain(&err)),
            },
        }
    }
}

/// Resolves webhook host names for the HTTP client and hands it only checked addresses.
struct GuardedResolver {
    policy: Arc<PushPolicy>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            // The port is replaced by the URL's when the client connects.
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            // The refusal travels through reqwest's error chain to `guard_refusal`.
            policy.check_resolved(&host, &addrs)?;
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// The guard's refusal inside a reqwest error, if that is what stopped the request.
pub(crate) fn guard_refusal(err: &reqwest::Error) -> Option<&GuardRefusal> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(refusal) = e.downcast_ref::<GuardRefusal>() {
            return Some(refusal);
        }
        source = e.source();
    }
    None
}

/// A reqwest error and its causes on one line, without the URL.
fn error_chain(err: &reqwest::Error) -> String {
    let mut text = if err.is_timeout() {
        "timed out".to_string()
    } else {
        "request failed".to_string()
    };
    let mut source = std::error::Error::source(err);
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use a2a_test_support::webhook::RawListener;

    use super::*;

    fn request(url: &str, policy: PushPolicy) -> WebhookRequest {
        WebhookRequest {
            url: url.parse().unwrap(),
            headers: Default::default(),
            body: b"{}".to_vec(),
            timeout: Duration::from_secs(5),
            policy,
        }
    }

    #[tokio::test]
    async fn names_resolving_to_non_public_addresses_are_refused_on_connection() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let strict_but_http = PushPolicy {
            allowed_hosts: Vec::new(),
            require_https: false,
        };
        let outcome = WebhookClient::new()
            .send(request(
                &format!("http://localhost:{port}/secret-path?token=x"),
                strict_but_http,
            ))
            .await;
        let WebhookOutcome::Refused(reason) = outcome else {
            panic!("not refused: {outcome:?}");
        };
        assert!(reason.contains("localhost"), "{reason}");
        assert!(!reason.contains("secret-path"), "{reason}");
    }

    #[tokio::test]
    async fn answers_are_reported_and_redirects_not_followed() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            let _ = socket
                .write_all(b"HTTP/1.1 302 Found\r\nLocation: http://10.0.0.1/\r\nContent-Length: 0\r\n\r\n")
                .await;
        });
        let outcome = WebhookClient::new()
            .send(request(
                &format!("http://localhost:{port}/hook"),
                PushPolicy::local(),
            ))
            .await;
        assert_eq!(
            outcome,
            WebhookOutcome::Answered(reqwest::StatusCode::FOUND)
        );
    }

    /// A webhook that reads the push and never answers fails it once the request's timeout
    /// (`push_timeout`, here 1 s) passes, saying it timed out: the delivery is then retried
    /// with backoff instead of holding a worker for as long as the webhook hangs.
    #[tokio::test]
    async fn a_webhook_that_never_answers_times_out() {
        let silent = RawListener::silent().await;
        let mut push = request(
            &format!("http://127.0.0.1:{}/hook", silent.port),
            PushPolicy::local(),
        );
        push.timeout = Duration::from_secs(1);
        // The guard only turns a push that waits for ever into a failure.
        let outcome =
            tokio::time::timeout(Duration::from_secs(30), WebhookClient::new().send(push))
                .await
                .expect("the push ends at its timeout");
        let WebhookOutcome::Failed(reason) = outcome else {
            panic!("not failed: {outcome:?}");
        };
        assert!(reason.starts_with("timed out"), "{reason}");
        assert_eq!(silent.accepted(), 1, "the push reached the webhook");
    }
}
