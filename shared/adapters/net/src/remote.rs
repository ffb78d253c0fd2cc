//! [`RemoteAgentsClient`]: the core's [`RemoteAgents`] port on the A2A client (`a2a-client`).
//!
//! Every request goes through the SSRF guard: the agent's URL, and the interface its card
//! names, are checked before a request (an IP literal must be public or allow-listed), and
//! host names are resolved by the guarded resolver of [`crate::guarded_client`] on every
//! connection; no redirects, no proxies. Cards are cached as their `Cache-Control` says.
//! Credentials come from configuration ([`AgentCredentials`], through a [`CredentialSource`]
//! read at the first call that needs them and again every so often), by agent URL prefix, and
//! go to that agent's origin only. Every request carries the work's W3C `traceparent`, and on Lambda
//! the invocation's X-Ray trace header.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use a2a_client::{
    Auth, CancelTaskRequest, CardFetch, Client, ClientBuilder, Error, FetchedCard, GetTaskRequest,
    SendMessageConfiguration, SendMessageRequest, MAX_CARD_MAX_AGE,
};
use a2a_core::{
    is_non_public, CallKey, PushPolicy, ReadClock, RemoteAgents, RemoteError, RemoteSent,
    RemoteTaskRef,
};
use a2a_protocol::{A2AError, Message, Task, TaskPushNotificationConfig};
use a2a_push_verify::{Verifier, VerifyError};
use async_trait::async_trait;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use reqwest::header::{HeaderName, HeaderValue};
use serde::Deserialize;
use url::Url;

use crate::webhook::{describe_error, guard_refusal};

/// The environment variable Lambda sets to the invocation's X-Ray trace header.
const XRAY_ENV: &str = "_X_AMZN_TRACE_ID";
/// The header X-Ray reads a trace from.
const XRAY_HEADER: &str = "x-amzn-trace-id";
/// How many push verifiers (one per remote agent and relay URL) are kept before the cache
/// starts afresh.
const MAX_VERIFIERS: usize = 1024;
/// The longest a relayed push waits for its sender's JWKS (connecting, first and last byte).
const MAX_JWKS_WAIT: Duration = Duration::from_secs(10);
/// The largest JWKS of a remote agent read: a key set is a few kilobytes.
const MAX_JWKS_BYTES: usize = 64 * 1024;
/// The longest error text of a remote agent quoted into our task's failure reason.
const MAX_QUOTED: usize = 300;

/// How calls to other agents are made.
#[derive(Debug, Clone)]
pub struct RemoteAgentSettings {
    /// Which agent URLs may be called: hosts on its allow-list are exempt from the rule that
    /// an agent must be on a public address (loopback, for the local server), and whether
    /// agents must be called over `https`.
    pub policy: PushPolicy,
    /// Where the credentials to send, by agent URL prefix, come from: a fixed document, or a
    /// source asked again every so often (a secret that is rotated).
    pub credentials: Arc<dyn CredentialSource>,
    /// The longest one request may take (a card fetch, a send, a poll, a cancel).
    pub timeout: Duration,
    /// How long a card is reused when its response says nothing about caching.
    pub card_ttl: Duration,
}

impl RemoteAgentSettings {
    /// The local server's defaults: `http` allowed, loopback allow-listed.
    pub fn local() -> Self {
        Self {
            policy: PushPolicy::local(),
            credentials: Arc::new(AgentCredentials::default()),
            timeout: Duration::from_secs(30),
            card_ttl: Duration::from_secs(300),
        }
    }

    /// A deployment's defaults: `https` only, public addresses only.
    pub fn cloud() -> Self {
        Self {
            policy: PushPolicy::default(),
            ..Self::local()
        }
    }
}

/// Credentials for the agents this host calls, each for the agents whose URL starts with a
/// prefix (the longest prefix wins; a prefix matches whole path segments of the same scheme,
/// host and port). Read from a JSON document:
///
/// ```json
/// {"agents": [
///   {"url": "https://billing.example.com/", "bearer": "<token>"},
///   {"url": "https://search.example.com/a2a", "apiKey": "<key>", "header": "X-API-Key"}
/// ]}
/// ```
///
/// Secrets never appear in `Debug` output or in errors.
#[derive(Clone, Default)]
pub struct AgentCredentials {
    entries: Vec<(Url, Auth)>,
}

impl fmt::Debug for AgentCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|(url, _)| url.as_str()))
            .finish()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialDocument {
    agents: Vec<CredentialEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CredentialEntry {
    url: String,
    #[serde(default)]
    bearer: Option<String>,
    #[serde(default)]
    api_key: Option<String>,
    #[serde(default)]
    header: Option<String>,
}

impl AgentCredentials {
    /// None.
    pub fn none() -> Self {
        Self::default()
    }

    /// Parses the JSON document (see the type's documentation). Errors name the entry, never
    /// a secret.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let doc: CredentialDocument = serde_json::from_str(text).map_err(|e| {
            // serde's message may quote a value; say only where it went wrong.
            format!(
                "the agent credentials are not a document of the form {{\"agents\": [{{\"url\": \
                 …, \"bearer\" | \"apiKey\": …}}]}} (line {}, column {})",
                e.line(),
                e.column()
            )
        })?;
        let mut entries = Vec::new();
        for (i, entry) in doc.agents.into_iter().enumerate() {
            let url = Url::parse(&entry.url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
                .ok_or_else(|| format!("agent credentials entry {i}: url is not an http(s) URL"))?;
            let auth = match (entry.bearer, entry.api_key) {
                (Some(token), None) if !token.is_empty() => Auth::bearer(token),
                (None, Some(key)) if !key.is_empty() => Auth::api_key_header(
                    entry.header.unwrap_or_else(|| "X-API-Key".to_owned()),
                    key,
                ),
                _ => {
                    return Err(format!(
                        "agent credentials entry {i} ({url}): give exactly one of bearer or apiKey"
                    ))
                }
            };
            entries.push((url, auth));
        }
        Ok(Self { entries })
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The credentials for the agent at `agent`: those of the longest matching prefix.
    pub fn for_url(&self, agent: &str) -> Option<&Auth> {
        let agent = Url::parse(agent).ok()?;
        self.entries
            .iter()
            .filter(|(prefix, _)| covers(prefix, &agent))
            .max_by_key(|(prefix, _)| prefix.path().len())
            .map(|(_, auth)| auth)
    }
}

/// Whether `prefix` covers `url`: same origin, and the path starts with the prefix's path on a
/// segment boundary (`/a2a` covers `/a2a` and `/a2a/x`, not `/a2ab`).
fn covers(prefix: &Url, url: &Url) -> bool {
    if prefix.origin() != url.origin() {
        return false;
    }
    let want = prefix.path().trim_end_matches('/');
    let path = url.path();
    path.strip_prefix(want)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Where the credentials for other agents come from. Read at the first call that needs them,
/// not when the host starts, and again once [`Self::refresh`] has passed: a rotated secret
/// is used without a redeploy, and a document that does not read fails the calls to other
/// agents (saying why, never what it holds) instead of the whole host. A later failure keeps
/// the credentials read before.
#[async_trait]
pub trait CredentialSource: Send + Sync + fmt::Debug {
    /// The document as it is now. The error names the source and what is wrong with it.
    async fn load(&self) -> Result<AgentCredentials, String>;

    /// How long loaded credentials are used before the source is asked again.
    fn refresh(&self) -> Duration;
}

/// A fixed document: read once, never asked again.
#[async_trait]
impl CredentialSource for AgentCredentials {
    async fn load(&self) -> Result<AgentCredentials, String> {
        Ok(self.clone())
    }

    fn refresh(&self) -> Duration {
        Duration::MAX
    }
}

/// The credentials in force, and when they were read (or failed to be).
#[derive(Default)]
struct CredentialCache {
    current: Option<Arc<AgentCredentials>>,
    clock: ReadClock,
}

/// A card as cached, and until when it is fresh.
#[derive(Debug, Clone)]
struct CachedCard {
    fetched: FetchedCard,
    fresh_until: Instant,
}

/// The network adapter behind [`RemoteAgents`]: calls other agents over A2A 1.0 (JSON-RPC or
/// HTTP+JSON, as their card offers) through the SSRF guard.
pub struct RemoteAgentsClient {
    settings: RemoteAgentSettings,
    /// Built at the first call: building it loads the system's root certificates (half of a
    /// Lambda function's init where the certificate directory is large, docs/lambda.md), and
    /// most instances never call another agent.
    http: OnceLock<reqwest::Client>,
    credentials: tokio::sync::Mutex<CredentialCache>,
    cards: Mutex<HashMap<String, CachedCard>>,
    verifiers: Mutex<HashMap<(String, String), Arc<Verifier>>>,
}

impl fmt::Debug for RemoteAgentsClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteAgentsClient")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl RemoteAgentsClient {
    /// A client with these settings. Its HTTP client is built at the first call.
    pub fn new(settings: RemoteAgentSettings) -> Self {
        Self {
            settings,
            http: OnceLock::new(),
            credentials: tokio::sync::Mutex::new(CredentialCache::default()),
            cards: Mutex::new(HashMap::new()),
            verifiers: Mutex::new(HashMap::new()),
        }
    }

    /// The checks that need no DNS, for an agent's URL or an interface its card names: an
    /// http(s) URL (https if required) without embedded credentials, whose IP-literal host is
    /// public or allow-listed. Host names are checked on connection by the guarded resolver.
    pub fn check_url(&self, url: &str) -> Result<Url, RemoteError> {
        let refused = |why: String| RemoteError::Refused(format!("the agent URL {why}"));
        let parsed = Url::parse(url).map_err(|e| refused(format!("is not a valid URL: {e}")))?;
        match parsed.scheme() {
            "https" => {}
            "http" if !self.settings.policy.require_https => {}
            other => return Err(refused(format!("must use https, not {other}"))),
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(refused("must not carry credentials".into()));
        }
        let host = parsed.host_str().unwrap_or_default().to_owned();
        if host.is_empty() {
            return Err(refused("has no host".into()));
        }
        let literal = match parsed.host() {
            Some(url::Host::Ipv4(v4)) => Some(std::net::IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => Some(std::net::IpAddr::V6(v6)),
            _ => None,
        };
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Some(ip) = literal {
            if is_non_public(ip) && !self.settings.policy.is_allowed(bare) {
                return Err(refused(format!(
                    "points at {ip}, a non-public address this server may not call (allow it \
                     with the agent allow-list)"
                )));
            }
        }
        Ok(parsed)
    }

    /// The guarded HTTP client, built at the first call.
    fn http(&self) -> Result<reqwest::Client, RemoteError> {
        if let Some(http) = self.http.get() {
            return Ok(http.clone());
        }
        let http =
            crate::guarded_client(&self.settings.policy).map_err(RemoteError::Unavailable)?;
        Ok(self.http.get_or_init(|| http).clone())
    }

    /// The credentials in force: read from the source if they are due (see
    /// [`CredentialSource`]). Never read successfully: unavailable, with the reason (the
    /// source is asked again at the next call, a second later at the soonest).
    async fn credentials(&self) -> Result<Arc<AgentCredentials>, RemoteError> {
        let source = &self.settings.credentials;
        let refresh = source.refresh();
        let mut cache = self.credentials.lock().await;
        if cache.clock.due(refresh) {
            match source.load().await {
                Ok(credentials) => {
                    cache.current = Some(Arc::new(credentials));
                    cache.clock.read();
                }
                Err(why) => cache.clock.failed(why),
            }
        }
        match (&cache.current, cache.clock.failure()) {
            (Some(current), _) => Ok(current.clone()),
            (None, Some(why)) => Err(RemoteError::Unavailable(format!(
                "the credentials for other agents cannot be read, so nothing was sent: {why}"
            ))),
            (None, None) => Ok(Arc::new(AgentCredentials::none())),
        }
    }

    /// A client builder for requests to `agent`: the guarded HTTP client, its credentials,
    /// the timeout, the trace headers.
    async fn builder(
        &self,
        agent: &str,
        traceparent: Option<&str>,
    ) -> Result<ClientBuilder, RemoteError> {
        let credentials = self.credentials().await?;
        let mut builder = Client::builder()
            .http_client(self.http()?)
            .timeout(Some(self.settings.timeout));
        if let Some(auth) = credentials.for_url(agent) {
            builder = builder.auth(auth.clone());
        }
        if let Some(value) = traceparent.and_then(|t| HeaderValue::from_str(t).ok()) {
            builder = builder.header(HeaderName::from_static("traceparent"), value);
        }
        // On Lambda: the invocation's X-Ray trace, so the remote's segment joins it.
        if let Some(value) = std::env::var(XRAY_ENV)
            .ok()
            .and_then(|t| HeaderValue::from_str(&t).ok())
        {
            builder = builder.header(HeaderName::from_static(XRAY_HEADER), value);
        }
        Ok(builder)
    }

    /// The card of the agent at `agent`, from the cache while it is fresh, revalidated
    /// (`If-None-Match`) or fetched again once it is not.
    async fn card(
        &self,
        agent: &str,
        traceparent: Option<&str>,
    ) -> Result<FetchedCard, RemoteError> {
        self.check_url(agent)?;
        let key = agent.trim_end_matches('/').to_owned();
        let cached = self.lock_cards().get(&key).cloned();
        if let Some(cached) = &cached {
            if Instant::now() < cached.fresh_until {
                return Ok(cached.fetched.clone());
            }
        }
        let resolver = self
            .builder(agent, traceparent)
            .await?
            .card_resolver()
            .map_err(|e| remote_error(agent, e))?;
        let fetched = match cached {
            Some(stale) if stale.fetched.etag.is_some() => {
                match resolver
                    .fetch(&stale.fetched.url, stale.fetched.etag.as_deref())
                    .await
                    .map_err(|e| remote_error(agent, e))?
                {
                    CardFetch::Fetched(card) => *card,
                    CardFetch::NotModified { max_age } => FetchedCard {
                        max_age: max_age.or(stale.fetched.max_age),
                        ..stale.fetched
                    },
                }
            }
            _ => resolver
                .resolve(agent)
                .await
                .map_err(|e| remote_error(agent, e))?,
        };
        self.lock_cards().insert(
            key,
            CachedCard {
                fetched: fetched.clone(),
                fresh_until: fresh_until(Instant::now(), fetched.max_age, self.settings.card_ttl),
            },
        );
        Ok(fetched)
    }

    fn lock_cards(&self) -> std::sync::MutexGuard<'_, HashMap<String, CachedCard>> {
        self.cards.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A client of the agent at `agent`'s preferred interface (JSON-RPC, else HTTP+JSON; A2A
    /// 1.x), checked against the guard, and its card.
    async fn connect(
        &self,
        agent: &str,
        traceparent: Option<&str>,
    ) -> Result<(Client, FetchedCard), RemoteError> {
        let fetched = self.card(agent, traceparent).await?;
        let client = self
            .builder(agent, traceparent)
            .await?
            .for_fetched_card(fetched.clone())
            .map_err(|e| remote_error(agent, e))?;
        // The card is the remote's word: the interface it names is checked like its URL.
        self.check_url(&client.interface().url)?;
        Ok((client, fetched))
    }

    /// The verifier of pushes signed by `issuer` for `audience`.
    fn verifier(&self, issuer: &str, audience: &str) -> Result<Arc<Verifier>, RemoteError> {
        let http = self.http()?;
        let mut verifiers = self.verifiers.lock().unwrap_or_else(|e| e.into_inner());
        let key = (issuer.to_owned(), audience.to_owned());
        if let Some(found) = verifiers.get(&key) {
            return Ok(found.clone());
        }
        if verifiers.len() >= MAX_VERIFIERS {
            verifiers.clear();
        }
        let verifier = Arc::new(
            Verifier::for_agent(issuer, audience)
                .http_client(http)
                // The guarded client has no timeout of its own: a JWKS that never answers
                // must fail the push, not hold it (and the pushes behind it).
                .fetch_timeout(self.settings.timeout.min(MAX_JWKS_WAIT))
                .max_jwks_bytes(MAX_JWKS_BYTES)
                .jwks_ttl(self.settings.card_ttl.min(MAX_CARD_MAX_AGE)),
        );
        verifiers.insert(key, verifier.clone());
        Ok(verifier)
    }
}

#[async_trait]
impl RemoteAgents for RemoteAgentsClient {
    async fn send(
        &self,
        agent: &str,
        _key: &CallKey,
        message: Message,
        push: Option<TaskPushNotificationConfig>,
        traceparent: Option<&str>,
    ) -> Result<RemoteSent, RemoteError> {
        let (client, fetched) = self.connect(agent, traceparent).await?;
        // A card that does not offer pushes gets no push config: the task is polled.
        let offers_push = fetched.card.capabilities.push_notifications == Some(true);
        let push = push.filter(|_| offers_push);
        let pushes = push.is_some();
        let request = SendMessageRequest {
            message: Some(message),
            configuration: Some(SendMessageConfiguration {
                return_immediately: true,
                task_push_notification_config: push,
                ..SendMessageConfiguration::default()
            }),
            ..SendMessageRequest::default()
        };
        let answer = client
            .send_message(request)
            .await
            .map_err(|e| remote_error(agent, e))?;
        Ok(RemoteSent { answer, pushes })
    }

    async fn get_task(
        &self,
        remote: &RemoteTaskRef,
        traceparent: Option<&str>,
    ) -> Result<Task, RemoteError> {
        let (client, _) = self.connect(&remote.agent, traceparent).await?;
        let task = client
            .get_task(GetTaskRequest {
                id: remote.task_id.clone(),
                ..GetTaskRequest::default()
            })
            .await
            .map_err(|e| remote_error(&remote.agent, e))?;
        if task.id != remote.task_id {
            return Err(RemoteError::Answered(format!(
                "the agent at {} answered GetTask with another task",
                remote.agent
            )));
        }
        Ok(task)
    }

    async fn cancel_task(
        &self,
        remote: &RemoteTaskRef,
        traceparent: Option<&str>,
    ) -> Result<(), RemoteError> {
        let (client, _) = self.connect(&remote.agent, traceparent).await?;
        match client
            .cancel_task(CancelTaskRequest {
                id: remote.task_id.clone(),
                ..CancelTaskRequest::default()
            })
            .await
        {
            Ok(_) => Ok(()),
            // It ended already, or is gone: nothing left to cancel.
            Err(Error::Agent(err))
                if matches!(
                    err.error,
                    A2AError::TaskNotCancelable { .. } | A2AError::TaskNotFound { .. }
                ) =>
            {
                Ok(())
            }
            Err(err) => Err(remote_error(&remote.agent, err)),
        }
    }

    async fn verify_push(
        &self,
        agent: &str,
        audiences: &[String],
        signature: &str,
        body: &[u8],
    ) -> Result<(), RemoteError> {
        let issuer = unverified_claim(signature, "iss")
            .ok_or_else(|| RemoteError::Refused("the push signature names no issuer".into()))?;
        let audience = signed_for(audiences, signature);
        let same_origin = match (Url::parse(&issuer), Url::parse(agent)) {
            (Ok(issuer), Ok(agent)) => issuer.origin() == agent.origin(),
            _ => false,
        };
        if !same_origin {
            return Err(RemoteError::Refused(format!(
                "the push is signed by {issuer}, not by the agent at {agent}"
            )));
        }
        self.check_url(&issuer)?;
        self.verifier(&issuer, audience)?
            .verify_token(signature, body)
            .await
            .map(drop)
            .map_err(|e| match e {
                // The keys could not be read now: no verdict on the push, worth a retry.
                VerifyError::Jwks(_) => RemoteError::Unavailable(format!(
                    "the push signature of the agent at {agent}: {e}"
                )),
                e => RemoteError::Refused(format!("the push signature: {e}")),
            })
    }
}

/// Until when a card fetched `now` is fresh: its response's `max-age` (the agent's number,
/// untrusted), else `default`; never longer than [`MAX_CARD_MAX_AGE`], and never past what
/// the clock can hold (an overflow would panic).
fn fresh_until(now: Instant, max_age: Option<Duration>, default: Duration) -> Instant {
    let ttl = max_age.unwrap_or(default).min(MAX_CARD_MAX_AGE);
    now.checked_add(ttl).unwrap_or(now)
}

/// Which of our `audiences` (at least one) a push `signature` is checked against: the one
/// its (not yet verified) `aud` claim names, else the first, which the check then refuses.
/// One check, against the one URL the remote was given: a relay URL handed out before the
/// relay route moved to a door of its own verifies as well as a new one.
fn signed_for<'a>(audiences: &'a [String], signature: &str) -> &'a str {
    let claimed = unverified_claim(signature, "aud");
    audiences
        .iter()
        .find(|a| claimed.as_deref() == Some(a.as_str()))
        .or(audiences.first())
        .map_or("", String::as_str)
}

/// The string claim `name` of a JWT, read without verifying it: `iss` says whose keys verify
/// it (then checked against the agent we called before anything is fetched), `aud` which of
/// our URLs it is checked for (the verification then holds it to that one).
fn unverified_claim(token: &str, name: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get(name)?.as_str().map(str::to_owned)
}

/// A client error as the core reads it: refused by us, worth trying again, or the agent's
/// answer. What the agent said is untrusted: it is quoted short, and URLs (whose query may
/// carry a key) are left out of transport errors.
fn remote_error(agent: &str, err: Error) -> RemoteError {
    let quoted = |text: String| -> String {
        let mut text = text.replace(['\n', '\r'], " ");
        if text.len() > MAX_QUOTED {
            let mut cut = MAX_QUOTED;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push('…');
        }
        text
    };
    match err {
        Error::Transport(e) if guard_refusal(&e).is_some() => {
            RemoteError::Refused(describe_error(&e))
        }
        Error::Transport(e) => {
            RemoteError::Unavailable(format!("the agent at {agent}: {}", describe_error(&e)))
        }
        Error::Timeout { what, after } => RemoteError::Unavailable(format!(
            "the agent at {agent} did not answer in time ({what}, {} s)",
            after.as_secs()
        )),
        Error::HttpStatus { status, .. } if status == 429 || status >= 500 => {
            RemoteError::Unavailable(format!("the agent at {agent} answered HTTP {status}"))
        }
        Error::HttpStatus { status, .. } => {
            RemoteError::Answered(format!("the agent at {agent} answered HTTP {status}"))
        }
        // An internal error is the remote's own trouble of the moment (its store, say), as a
        // 5xx is: worth trying again, unlike an answer about the request.
        Error::Agent(e) if matches!(e.error, A2AError::Internal(_)) => {
            RemoteError::Unavailable(quoted(format!("{}: {}", e.name(), e.message())))
        }
        Error::Agent(e) => RemoteError::Answered(quoted(format!("{}: {}", e.name(), e.message()))),
        Error::OtherOrigin(text) => RemoteError::Refused(quoted(text)),
        other => RemoteError::Answered(quoted(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> RemoteAgentSettings {
        RemoteAgentSettings::local()
    }

    #[test]
    fn credentials_go_by_the_longest_prefix_on_segment_boundaries() {
        let creds = AgentCredentials::from_json(
            r#"{"agents": [
                {"url": "https://agents.example.com/", "bearer": "general"},
                {"url": "https://agents.example.com/billing", "apiKey": "k", "header": "X-Key"},
                {"url": "http://127.0.0.1:9000", "bearer": "local"}
            ]}"#,
        )
        .unwrap();
        assert_eq!(creds.len(), 3);
        let debug = |url: &str| format!("{:?}", creds.for_url(url));
        assert_eq!(
            debug("https://agents.example.com/billing/v1"),
            r#"Some(ApiKey("X-Key" in Header, <redacted>))"#
        );
        assert_eq!(
            debug("https://agents.example.com/billing"),
            r#"Some(ApiKey("X-Key" in Header, <redacted>))"#
        );
        assert_eq!(
            debug("https://agents.example.com/billingx"),
            "Some(Bearer(<redacted>))"
        );
        assert_eq!(
            debug("https://agents.example.com"),
            "Some(Bearer(<redacted>))"
        );
        assert_eq!(
            debug("http://agents.example.com/billing"),
            "None",
            "another scheme"
        );
        assert_eq!(debug("https://agents.example.com.evil.net/"), "None");
        assert_eq!(
            debug("https://agents.example.com:8443/"),
            "None",
            "another port"
        );
        assert_eq!(debug("http://127.0.0.1:9000/"), "Some(Bearer(<redacted>))");
        assert_eq!(debug("http://127.0.0.1:9001/"), "None");
        assert!(!format!("{creds:?}").contains("general"));
    }

    #[test]
    fn bad_credential_documents_say_where_without_quoting_secrets() {
        for (text, expected) in [
            (
                r#"{"agents": [{"url": "ftp://x", "bearer": "s3cret"}]}"#,
                "entry 0",
            ),
            (
                r#"{"agents": [{"url": "https://x", "bearer": "s3cret", "apiKey": "s3cret"}]}"#,
                "exactly one",
            ),
            (
                r#"{"agents": [{"url": "https://x", "token": "s3cret"}]}"#,
                "line 1",
            ),
            ("s3cret", "line 1"),
        ] {
            let err = AgentCredentials::from_json(text).unwrap_err();
            assert!(err.contains(expected), "{err}");
            assert!(!err.contains("s3cret"), "{err}");
        }
    }

    /// Building the HTTP client loads the system's root certificates: a function that never
    /// calls another agent must not pay for it at init.
    #[tokio::test]
    async fn the_http_client_is_built_at_the_first_call() {
        let client = RemoteAgentsClient::new(settings());
        assert!(client.http.get().is_none(), "built before any call");
        // A refused URL is refused before anything is built.
        let refused = client.card("http://169.254.169.254/", None).await;
        assert!(matches!(refused, Err(RemoteError::Refused(_))));
        assert!(client.http.get().is_none(), "built for a refused call");
        // A call that goes out builds it (nothing listens on port 9: it fails to connect).
        let unreachable = client.card("http://127.0.0.1:9", None).await;
        assert!(unreachable.is_err());
        assert!(client.http.get().is_some(), "not built at the first call");
    }

    #[test]
    fn agent_urls_outside_the_allow_list_are_refused() {
        let local = RemoteAgentsClient::new(settings());
        assert!(local.check_url("http://127.0.0.1:9000").is_ok());
        assert!(local.check_url("http://[::1]:9000/a2a").is_ok());
        assert!(local.check_url("http://localhost:9000").is_ok());
        for bad in [
            "http://169.254.169.254/latest/meta-data",
            "http://10.0.0.1/",
            "http://0x7f000002/",
            "http://user:pw@127.0.0.1/",
            "file:///etc/passwd",
            "not a url",
        ] {
            assert!(
                matches!(local.check_url(bad), Err(RemoteError::Refused(_))),
                "{bad}"
            );
        }
        let cloud = RemoteAgentsClient::new(RemoteAgentSettings::cloud());
        assert!(matches!(
            cloud.check_url("http://agents.example.com"),
            Err(RemoteError::Refused(_))
        ));
        assert!(matches!(
            cloud.check_url("https://127.0.0.1"),
            Err(RemoteError::Refused(_))
        ));
        assert!(cloud.check_url("https://agents.example.com/a2a").is_ok());
    }

    /// A card's `max-age` is the agent's number: however large, it neither panics (an
    /// `Instant` overflow) nor keeps a card longer than a day.
    #[test]
    fn a_card_s_lifetime_is_clamped() {
        let now = Instant::now();
        let default = Duration::from_secs(300);
        assert_eq!(fresh_until(now, None, default), now + default);
        assert_eq!(
            fresh_until(now, Some(Duration::from_secs(60)), default),
            now + Duration::from_secs(60)
        );
        assert_eq!(
            fresh_until(now, Some(Duration::from_secs(u64::MAX)), default),
            now + MAX_CARD_MAX_AGE
        );
        assert_eq!(
            fresh_until(now, None, Duration::MAX),
            now + MAX_CARD_MAX_AGE
        );
    }

    #[test]
    fn the_issuer_is_read_from_the_token() {
        let claims = URL_SAFE_NO_PAD.encode(br#"{"iss":"http://127.0.0.1:9000","aud":"x"}"#);
        assert_eq!(
            unverified_claim(&format!("e30.{claims}.sig"), "iss").as_deref(),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(unverified_claim("garbage", "iss"), None);
    }

    /// A push is checked against the audience its token claims when that is one of ours (a
    /// relay URL under the relay base, or under the REST base, handed out before), else
    /// against the first, which refuses it.
    #[test]
    fn a_push_is_checked_against_the_relay_url_it_was_sent_to() {
        use base64::Engine as _;
        let token = |aud: &str| {
            let claims = serde_json::json!({"iss": "https://remote.example", "aud": aud});
            let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(serde_json::to_vec(&claims).unwrap());
            format!("eyJhbGciOiJFUzI1NiJ9.{payload}.c2ln")
        };
        let ours = [
            "https://relay.example/a2a-relay/t1".to_owned(),
            "https://front.example/a2a-relay/t1".to_owned(),
        ];
        assert_eq!(signed_for(&ours, &token(&ours[0])), ours[0]);
        assert_eq!(signed_for(&ours, &token(&ours[1])), ours[1]);
        assert_eq!(signed_for(&ours, &token("https://evil.example/x")), ours[0]);
        assert_eq!(signed_for(&ours, "not a token"), ours[0]);
        assert_eq!(signed_for(&[], &token(&ours[0])), "");
    }
}
