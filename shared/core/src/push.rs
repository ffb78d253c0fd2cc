//! Push delivery: one signed webhook POST per (event, config) job, guarded against SSRF, with
//! the outcome of every attempt recorded on the config's delivery record.
//!
//! The SSRF guard works in two places:
//! - when a config is created ([`PushPolicy::check_new_url`]): the URL's form, its scheme, an
//!   IP-literal host, and the addresses a host name resolves to right now;
//! - on every connection (the webhook HTTP client): IP literals are checked again, and host names
//!   are resolved by a resolver that refuses non-public addresses, so the HTTP client connects
//!   only to the addresses that were checked. A name that resolved to a public address when the
//!   config was created and to a private one later (DNS rebinding) is refused at that point.
//!
//! Redirects are never followed (a 3xx is a failed attempt), so neither a redirect to a private
//! address nor the config's credentials can leave the checked host. Proxies from the
//! environment are ignored: a proxy would resolve and connect on our behalf, past the guard.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use a2a_protocol::{A2AError, TaskPushNotificationConfig, Timestamp};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use reqwest::Url;

use crate::config::ServiceConfig;
use crate::kernel::Core;
use crate::ports::{JobOutcome, PushAttempt, PushAttemptResult, PushJob};
use crate::signing::PUSH_SIGNATURE_HEADER;

/// How long resolving a webhook host may take when a config is created.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Which webhook URLs are accepted and which addresses may be contacted.
///
/// Outside the allow-list, a webhook must be reachable on public addresses only: an IP-literal
/// host, and every address a host name resolves to, must be public (see [`is_non_public`]).
/// Hosts on the allow-list skip that check (loopback for the local server and tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushPolicy {
    /// Host names or IP literals (IPv6 without brackets) exempt from the public-address rule.
    /// Compared case-insensitively, ignoring a trailing dot.
    pub allowed_hosts: Vec<String>,
    /// Whether webhook URLs must use `https` (the cloud default). The local server allows
    /// `http`.
    pub require_https: bool,
}

impl Default for PushPolicy {
    /// The strict policy for deployments: HTTPS only, public addresses only, no allow-list.
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            require_https: true,
        }
    }
}

impl PushPolicy {
    /// The local server's policy: `http` allowed, and loopback allow-listed so that webhooks
    /// on the same machine work. Everything else must still be public.
    pub fn local() -> Self {
        Self {
            allowed_hosts: vec!["127.0.0.1".into(), "localhost".into(), "::1".into()],
            require_https: false,
        }
    }

    /// Whether `host` (a name or an IP literal without brackets) is on the allow-list.
    pub fn is_allowed(&self, host: &str) -> bool {
        let host = normalize_host(host);
        self.allowed_hosts
            .iter()
            .any(|h| normalize_host(h).eq_ignore_ascii_case(host))
    }

    /// The checks that need no DNS: a valid http(s) URL (https if required) without embedded
    /// credentials, whose IP-literal host, if any, is public or allow-listed. URL parsing
    /// normalises every IPv4 spelling (decimal, octal, hex, short forms, percent-encoding), so
    /// the check sees the address that would be contacted.
    pub fn check_url(&self, url: &str) -> Result<Url, A2AError> {
        let parsed = Url::parse(url).map_err(|e| {
            A2AError::invalid_params(format!("push notification url is not a valid URL: {e}"))
        })?;
        match parsed.scheme() {
            "https" => {}
            "http" if !self.require_https => {}
            "http" => {
                return Err(A2AError::invalid_params(
                    "push notification url must use https",
                ))
            }
            other => {
                return Err(A2AError::invalid_params(format!(
                    "push notification url must use http or https, not {other}"
                )))
            }
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(A2AError::invalid_params(
                "push notification url must not carry credentials; use authentication instead",
            ));
        }
        let host = host_of(&parsed)?;
        let literal = match parsed.host() {
            Some(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
            _ => None,
        };
        if let Some(ip) = literal {
            if is_non_public(ip) && !self.is_allowed(&host) {
                return Err(A2AError::invalid_params(format!(
                    "push notification url points at {ip}, a non-public address; \
                     webhooks must be reachable on a public address"
                )));
            }
        }
        Ok(parsed)
    }

    /// The check when a config is created: [`Self::check_url`], then, for a host name that is
    /// not allow-listed, the addresses it resolves to now must all be public. Special-use names
    /// that never resolve (`*.invalid`, `*.localhost`, …) are refused; a name that merely fails
    /// to resolve now is accepted, and checked again on every connection.
    pub async fn check_new_url(&self, url: &str) -> Result<Url, A2AError> {
        let parsed = self.check_url(url)?;
        let name = match parsed.host() {
            Some(url::Host::Domain(name)) => name.to_owned(),
            _ => return Ok(parsed),
        };
        let name = name.as_str();
        if self.is_allowed(name) {
            return Ok(parsed);
        }
        if is_special_use_name(name) {
            return Err(A2AError::invalid_params(format!(
                "push notification url host {name} is a special-use name that never resolves \
                 to a public address"
            )));
        }
        let port = parsed.port_or_known_default().unwrap_or(443);
        // A name that does not resolve right now (no network, a slow or failing resolver) is
        // accepted: DNS answers change, and the guard in the webhook client checks the
        // addresses again on every connection. What resolves to a non-public address now is
        // refused at once.
        let addrs: Vec<SocketAddr> = match tokio::time::timeout(
            RESOLVE_TIMEOUT,
            tokio::net::lookup_host((name, port)),
        )
        .await
        {
            Ok(Ok(addrs)) => addrs.collect(),
            Ok(Err(_)) | Err(_) => {
                tracing::debug!(host = %name, "webhook host did not resolve at creation");
                return Ok(parsed);
            }
        };
        self.check_resolved(name, &addrs).map_err(|refusal| {
            A2AError::invalid_params(format!("push notification url {refusal}"))
        })?;
        Ok(parsed)
    }

    /// The check right before a delivery: [`Self::check_url`] again (the policy may have
    /// changed since the config was created). Host names are checked when the connection is
    /// made, by the resolver of the webhook HTTP client.
    pub fn check_delivery_url(&self, url: &str) -> Result<Url, A2AError> {
        self.check_url(url)
    }

    /// Whether `host` may be contacted at `addrs` (what it resolved to): yes if it is
    /// allow-listed; otherwise there must be at least one address and all must be public.
    fn check_resolved(&self, host: &str, addrs: &[SocketAddr]) -> Result<(), GuardRefusal> {
        if self.is_allowed(host) {
            return Ok(());
        }
        if addrs.is_empty() {
            return Err(GuardRefusal(format!("host {host} resolved to no address")));
        }
        // Any non-public address refuses the host: a client may connect to any of them.
        match addrs.iter().find(|a| is_non_public(a.ip())) {
            Some(bad) => Err(GuardRefusal(format!(
                "host {host} resolves to {}, a non-public address; webhooks must be reachable \
                 on a public address",
                bad.ip()
            ))),
            None => Ok(()),
        }
    }
}

/// Names reserved by RFC 6761 and RFC 6762 that never resolve to a public address:
/// `localhost`, `*.localhost`, `*.invalid`, `*.test`, `*.local` (mDNS) and `*.internal`.
fn is_special_use_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let tld = name.rsplit('.').next().unwrap_or_default();
    name == "localhost" || matches!(tld, "localhost" | "invalid" | "test" | "local" | "internal")
}

/// Whether an address is one a webhook must never point at: loopback, private (RFC 1918),
/// CGNAT, link-local (the cloud metadata address among them), multicast, unspecified,
/// broadcast, documentation/benchmark/reserved ranges, and their IPv6 forms (ULA, link-local,
/// IPv4-mapped and -compatible, and the NAT64 and 6to4 forms that embed an IPv4 address).
pub fn is_non_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_multicast()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && c == 0)
                || (a == 198 && (b == 18 || b == 19))
                || a >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_non_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            let embedded = |hi: u16, lo: u16| {
                let [a, b] = hi.to_be_bytes();
                let [c, d] = lo.to_be_bytes();
                IpAddr::V4(std::net::Ipv4Addr::new(a, b, c, d))
            };
            // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 address they embed.
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return is_non_public(embedded(s[6], s[7]));
            }
            // IPv4-translated (::ffff:0:a.b.c.d, RFC 2765) embeds one too.
            if s[..6] == [0, 0, 0, 0, 0xffff, 0] {
                return is_non_public(embedded(s[6], s[7]));
            }
            if s[0] == 0x2002 {
                return is_non_public(embedded(s[1], s[2]));
            }
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] & 0xffc0) == 0xfec0
                // IPv4-compatible (::a.b.c.d, deprecated), `::` and `::1` among them.
                || s[..6] == [0, 0, 0, 0, 0, 0]
                || (s[0] == 0x2001 && s[1] == 0x0db8)
        }
    }
}

/// A host name compared without case or a trailing dot (`LocalHost.` is `localhost`).
fn normalize_host(host: &str) -> &str {
    let host = host.strip_suffix('.').unwrap_or(host);
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

fn host_of(url: &Url) -> Result<String, A2AError> {
    match url.host() {
        Some(url::Host::Ipv6(addr)) => Ok(addr.to_string()),
        Some(host) => Ok(host.to_string().to_ascii_lowercase()),
        None => Err(A2AError::invalid_params(
            "push notification url has no host",
        )),
    }
}

/// Why the guard refused to connect. Travels through reqwest's error chain so that delivery
/// can tell a refusal (never retried) from a network failure (retried).
#[derive(Debug)]
struct GuardRefusal(String);

impl std::fmt::Display for GuardRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GuardRefusal {}

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
            policy.check_resolved(&host, &addrs)?;
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// The HTTP client for webhooks: no redirects, no proxies, the guarded resolver, and the
/// configured timeout.
pub(crate) fn webhook_client(config: &ServiceConfig) -> reqwest::Client {
    reqwest::Client::builder()
        // A redirect could lead past the guard, and would carry the config's credentials.
        .redirect(reqwest::redirect::Policy::none())
        // A proxy would resolve the host and connect itself, out of the guard's sight.
        .no_proxy()
        .dns_resolver(GuardedResolver {
            policy: Arc::new(config.push_policy.clone()),
        })
        .https_only(config.push_policy.require_https)
        .timeout(config.push_timeout)
        .build()
        .expect("the HTTP client for push delivery could not be built")
}

/// Exponential backoff with jitter for the `n`th failed attempt: 1 s, 2 s, 4 s, … up to 5 min.
pub fn backoff(attempt: u32) -> Duration {
    let base =
        Duration::from_secs(1u64 << attempt.saturating_sub(1).min(8)).min(Duration::from_secs(300));
    // Jitter of up to a quarter, from the clock's nanoseconds: enough to spread retries.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    base + base.mul_f64(f64::from(nanos % 1000) / 4000.0)
}

/// How one POST went, before it is recorded.
struct Sent {
    result: PushAttemptResult,
    status: Option<u16>,
    error: Option<String>,
}

impl Sent {
    fn failed(status: Option<u16>, error: String) -> Self {
        Self {
            result: PushAttemptResult::Failed,
            status,
            error: Some(error),
        }
    }
}

pub(crate) async fn deliver(core: &Arc<Core>, job: &PushJob, receive_count: u32) -> JobOutcome {
    let store = &core.store;
    let retry = |reason: String| JobOutcome::Retry {
        reason,
        after: backoff(receive_count),
    };
    let config = match store
        .get_push_config(&job.owner, &job.task_id, &job.config_id)
        .await
    {
        Ok(Some(config)) => config,
        // Deleted (by the client, or after a 410 Gone), or expired with its task.
        Ok(None) => return JobOutcome::Done,
        Err(err) => return retry(format!("store: {err}")),
    };
    let event = match store
        .read_events(&job.owner, &job.task_id, job.seq.saturating_sub(1), 1)
        .await
    {
        Ok(events) => events.into_iter().find(|e| e.seq == job.seq),
        Err(err) => return retry(format!("store: {err}")),
    };
    let Some(response) = event.and_then(|e| e.event.to_stream_response()) else {
        return JobOutcome::Done;
    };
    // Serialised once: the signature's body hash covers exactly these bytes.
    let body = match serde_json::to_vec(&response) {
        Ok(body) => body,
        Err(err) => return retry(format!("encoding the event failed: {err}")),
    };

    let sent = post(core, &config, job, body).await;
    let final_attempt =
        sent.result == PushAttemptResult::Failed && receive_count >= core.config.max_push_attempts;
    let attempt = PushAttempt {
        seq: job.seq,
        at: Timestamp::now(),
        result: sent.result,
        http_status: sent.status,
        error: sent.error,
        final_attempt,
    };
    log_attempt(job, &config, receive_count, &attempt);
    let expires_at = Timestamp::from_millis(
        Timestamp::now().millis() + core.config.retention.as_millis() as i64,
    );
    if let Err(err) = store
        .record_push_attempt(
            &job.owner,
            &job.task_id,
            &job.config_id,
            &attempt,
            expires_at,
        )
        .await
    {
        // The attempt itself stands; only its record is missing.
        tracing::warn!(task_id = %job.task_id, config_id = %job.config_id, "recording the push attempt failed: {err}");
    }

    match attempt.result {
        PushAttemptResult::Delivered | PushAttemptResult::Refused => JobOutcome::Done,
        PushAttemptResult::Gone => {
            // The receiver says this webhook is gone for good: stop every later delivery to it.
            if let Err(err) = store
                .delete_push_config(&job.owner, &job.task_id, &job.config_id)
                .await
            {
                tracing::warn!(task_id = %job.task_id, config_id = %job.config_id, "deleting the gone push config failed: {err}");
            }
            JobOutcome::Done
        }
        PushAttemptResult::Failed => retry(attempt.error.unwrap_or_default()),
    }
}

/// Makes one POST and classifies its outcome. Error texts name the host at most: a URL's path
/// and query can carry secrets, and credentials never appear.
async fn post(
    core: &Core,
    config: &TaskPushNotificationConfig,
    job: &PushJob,
    body: Vec<u8>,
) -> Sent {
    let url = match core.config.push_policy.check_delivery_url(&config.url) {
        Ok(url) => url,
        Err(err) => {
            return Sent {
                result: PushAttemptResult::Refused,
                status: None,
                error: Some(err.message()),
            }
        }
    };
    let host = url.host_str().unwrap_or_default().to_string();
    let token = match &core.config.push_signer {
        Some(signer) => {
            let claims = signer.claims(&config.url, &job.task_id, job.seq, &config.id, &body);
            match signer.sign(&claims) {
                Ok(token) => Some(token),
                Err(err) => return Sent::failed(None, err.to_string()),
            }
        }
        None => {
            // Said where it matters (the host that delivers), once per process.
            static UNSIGNED: std::sync::Once = std::sync::Once::new();
            UNSIGNED.call_once(|| {
                tracing::warn!("no push signing keys are configured: pushes go out unsigned");
            });
            None
        }
    };
    let mut request = core
        .http
        .post(url)
        .header(CONTENT_TYPE, "application/json")
        .body(body);
    match (&config.authentication, &token) {
        (Some(auth), _) => {
            // The spec's rule: Authorization is built from the config's authentication.
            let value = if auth.credentials.is_empty() {
                auth.scheme.clone()
            } else {
                format!("{} {}", auth.scheme, auth.credentials)
            };
            request = request.header(AUTHORIZATION, value);
        }
        // Nothing else claims Authorization: carry the JWT there too, as the A2A topic doc's
        // JWT scheme (and most JWT middleware) expects.
        (None, Some(token)) => request = request.header(AUTHORIZATION, format!("Bearer {token}")),
        (None, None) => {}
    }
    if let Some(token) = &token {
        request = request.header(PUSH_SIGNATURE_HEADER, token);
    }
    if !config.token.is_empty() {
        // The spec names no header for the token; the SDKs read one or the other.
        request = request
            .header("X-A2A-Notification-Token", &config.token)
            .header("A2A-Notification-Token", &config.token);
    }
    match request.send().await {
        Ok(response) => {
            let status = response.status();
            let code = Some(status.as_u16());
            if status.is_success() {
                Sent {
                    result: PushAttemptResult::Delivered,
                    status: code,
                    error: None,
                }
            } else if status == reqwest::StatusCode::GONE {
                Sent {
                    result: PushAttemptResult::Gone,
                    status: code,
                    error: Some(format!("webhook {host} answered 410 Gone")),
                }
            } else if status.is_redirection() {
                Sent::failed(
                    code,
                    format!("webhook {host} answered {status}; redirects are not followed"),
                )
            } else {
                Sent::failed(code, format!("webhook {host} answered {status}"))
            }
        }
        Err(err) => match guard_refusal(&err) {
            Some(refusal) => Sent {
                result: PushAttemptResult::Refused,
                status: None,
                error: Some(format!("not sent: {refusal}")),
            },
            None => Sent::failed(
                None,
                format!("webhook {host} unreachable: {}", error_chain(&err)),
            ),
        },
    }
}

/// The guard's refusal inside a reqwest error, if that is what stopped the request.
fn guard_refusal(err: &reqwest::Error) -> Option<&GuardRefusal> {
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

/// One log line per attempt: identifiers, host, status and error; never the URL's path or
/// query, the token or the credentials.
fn log_attempt(
    job: &PushJob,
    config: &TaskPushNotificationConfig,
    receive_count: u32,
    attempt: &PushAttempt,
) {
    let host = Url::parse(&config.url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    let status = attempt.http_status.unwrap_or_default();
    let error = attempt.error.as_deref().unwrap_or_default();
    let (task_id, config_id, seq) = (&job.task_id, &job.config_id, job.seq);
    match attempt.result {
        PushAttemptResult::Delivered => {
            tracing::info!(%task_id, %config_id, seq, %host, attempt = receive_count, status, "push delivered")
        }
        PushAttemptResult::Gone => {
            tracing::info!(%task_id, %config_id, seq, %host, "webhook answered 410 Gone; push config removed")
        }
        PushAttemptResult::Refused => {
            tracing::warn!(%task_id, %config_id, seq, %host, %error, "push refused by the URL policy")
        }
        PushAttemptResult::Failed if attempt.final_attempt => {
            tracing::error!(%task_id, %config_id, seq, %host, attempt = receive_count, status, %error, "push failed on its last attempt")
        }
        PushAttemptResult::Failed => {
            tracing::warn!(%task_id, %config_id, seq, %host, attempt = receive_count, status, %error, "push failed; will retry")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creation_refuses_non_public_literals_unless_allow_listed() {
        let policy = PushPolicy::local();
        for ok in [
            "http://127.0.0.1:8080/hook",
            "http://localhost/hook",
            "http://LOCALHOST./hook",
            "http://[::1]:9/x",
            "https://example.com/hook",
            "https://8.8.8.8/hook",
        ] {
            assert!(policy.check_url(ok).is_ok(), "{ok}");
        }
        // URL parsing normalises other IPv4 spellings, so the check sees the real address.
        assert_eq!(
            policy.check_url("http://2130706433/").unwrap().host_str(),
            Some("127.0.0.1")
        );
        for bad in [
            "http://10.0.0.1/hook",
            "http://0x0a000001/hook",
            "http://169.254.169.254/latest/meta-data",
            "http://100.64.0.1/",
            "http://192.168.1.1/",
            "http://172.16.0.1/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[::ffff:10.0.0.1]/",
            "http://[64:ff9b::10.0.0.1]/",
            "http://[2002:0a00:0001::1]/",
            "http://0.0.0.0/",
            "http://224.0.0.1/",
            "http://255.255.255.255/",
            "ftp://127.0.0.1/x",
            "http://user:pw@127.0.0.1/x",
            "not a url",
        ] {
            let err = policy.check_url(bad).unwrap_err();
            assert_eq!(err.json_rpc_code(), -32602, "{bad}");
        }
    }

    #[test]
    fn the_default_policy_is_strict() {
        let strict = PushPolicy::default();
        assert!(strict.check_url("http://127.0.0.1/x").is_err());
        assert!(strict.check_url("http://8.8.8.8/x").is_err(), "https only");
        assert!(strict.check_url("https://8.8.8.8/x").is_ok());
        assert!(strict.check_url("https://[::1]/x").is_err());
    }

    #[test]
    fn public_addresses_are_public() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "[2002:0808:0808::1]",
        ] {
            let ip: IpAddr = ip.trim_matches(['[', ']']).parse().unwrap();
            assert!(!is_non_public(ip), "{ip}");
        }
    }

    #[tokio::test]
    async fn creation_resolves_names_that_are_not_allow_listed() {
        let open = PushPolicy {
            allowed_hosts: vec![],
            require_https: false,
        };
        for special in [
            "http://localhost:1/x",
            "http://no-such-host.invalid/x",
            "http://a.LOCAL./x",
        ] {
            let err = open.check_new_url(special).await.unwrap_err();
            assert!(
                err.message().contains("special-use"),
                "{special}: {}",
                err.message()
            );
        }
        // What a name resolves to decides; a name that does not resolve now is left to the
        // connection-time guard.
        let addr = |ip: &str| SocketAddr::new(ip.parse().unwrap(), 80);
        assert!(open
            .check_resolved("hook.example", &[addr("93.184.216.34")])
            .is_ok());
        let refusal = open
            .check_resolved("hook.example", &[addr("93.184.216.34"), addr("10.1.2.3")])
            .unwrap_err();
        assert!(refusal.0.contains("10.1.2.3"), "{}", refusal.0);
        assert!(open.check_resolved("hook.example", &[]).is_err());
        assert!(open
            .check_new_url("http://no-such-host.a2a-lambda.example.com/x")
            .await
            .is_ok());
        assert!(PushPolicy::local()
            .check_new_url("http://localhost:1/x")
            .await
            .is_ok());
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(backoff(1) >= Duration::from_secs(1) && backoff(1) < Duration::from_secs(2));
        assert!(backoff(3) >= Duration::from_secs(4));
        assert!(backoff(30) <= Duration::from_secs(375));
    }
}
