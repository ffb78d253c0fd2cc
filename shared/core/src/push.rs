//! Push delivery: one webhook POST per (event, config) job, with the config's credentials.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use a2a_protocol::A2AError;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use reqwest::Url;

use crate::ports::{JobOutcome, PushJob};
use crate::service::Core;

/// Which webhook URLs are accepted and which may be contacted.
///
/// A config's URL is checked when it is created: it must be http(s) without embedded
/// credentials, and an IP-literal host must be a public address unless allow-listed. Delivery
/// is stricter for now: until the SSRF guard that checks resolved addresses exists, only
/// allow-listed hosts are contacted (loopback by default, for the local server); pushes to other
/// hosts are logged and dropped.
#[derive(Debug, Clone)]
pub struct PushPolicy {
    /// Host names or IP literals (without brackets) that webhooks may point at.
    pub allowed_hosts: Vec<String>,
}

impl Default for PushPolicy {
    fn default() -> Self {
        Self {
            allowed_hosts: vec!["127.0.0.1".into(), "localhost".into(), "::1".into()],
        }
    }
}

/// Whether an address is one a webhook must never point at: loopback, private (RFC 1918),
/// CGNAT, link-local (the cloud metadata address among them), multicast, unspecified,
/// broadcast, documentation/benchmark ranges, and their IPv6 forms (ULA, link-local,
/// IPv4-mapped and -compatible).
pub fn is_non_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_multicast()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
                || a >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_non_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || (v6.segments()[..6] == [0, 0, 0, 0, 0, 0])
                || first == 0x2001 && v6.segments()[1] == 0x0db8
        }
    }
}

impl PushPolicy {
    fn is_allowed(&self, host: &str) -> bool {
        self.allowed_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(host))
    }

    /// Checks a webhook URL when a push config is created.
    pub fn check_url(&self, url: &str) -> Result<Url, A2AError> {
        let parsed = Url::parse(url).map_err(|e| {
            A2AError::invalid_params(format!(
                "push notification url {url:?} is not a valid URL: {e}"
            ))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(A2AError::invalid_params(format!(
                "push notification url must use http or https, not {}",
                parsed.scheme()
            )));
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
                    "push notification url points at {ip}, a non-public address;                      webhooks must be reachable on a public address"
                )));
            }
        }
        Ok(parsed)
    }

    /// Checks a webhook URL right before a delivery: the creation checks, and the host must be
    /// allow-listed.
    pub fn check_delivery_url(&self, url: &str) -> Result<Url, A2AError> {
        let parsed = self.check_url(url)?;
        let host = host_of(&parsed)?;
        if !self.is_allowed(&host) {
            return Err(A2AError::invalid_params(format!(
                "webhook host {host} is not on the allow-list ({}); deliveries to other hosts \
                 await the SSRF guard",
                self.allowed_hosts.join(", ")
            )));
        }
        Ok(parsed)
    }
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
        // Deleted, or expired with its task: nothing to deliver to.
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
    let Some(body) = event.and_then(|e| e.event.to_stream_response()) else {
        return JobOutcome::Done;
    };
    let url = match core.config.push_policy.check_delivery_url(&config.url) {
        Ok(url) => url,
        Err(err) => {
            tracing::warn!(task_id = %job.task_id, config_id = %job.config_id, "push not sent: {}", err.message());
            return JobOutcome::Done;
        }
    };
    let host = url.host_str().unwrap_or_default().to_string();
    let mut request = core
        .http
        .post(url)
        .header(CONTENT_TYPE, "application/json")
        .json(&body);
    if let Some(auth) = &config.authentication {
        let value = if auth.credentials.is_empty() {
            auth.scheme.clone()
        } else {
            format!("{} {}", auth.scheme, auth.credentials)
        };
        request = request.header(AUTHORIZATION, value);
    }
    if !config.token.is_empty() {
        // The spec names no header for the token; the SDKs read one or the other.
        request = request
            .header("X-A2A-Notification-Token", &config.token)
            .header("A2A-Notification-Token", &config.token);
    }
    match request.send().await {
        Ok(response) if response.status().is_success() => {
            tracing::debug!(task_id = %job.task_id, seq = job.seq, %host, "push delivered");
            JobOutcome::Done
        }
        Ok(response) if response.status() == reqwest::StatusCode::GONE => {
            tracing::info!(task_id = %job.task_id, config_id = %job.config_id, %host, "webhook answered 410 Gone; event dropped");
            JobOutcome::Done
        }
        Ok(response) => retry(format!("webhook {host} answered {}", response.status())),
        Err(err) => retry(format!("webhook {host} unreachable: {}", err.without_url())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creation_refuses_non_public_literals_unless_allow_listed() {
        let policy = PushPolicy::default();
        for ok in [
            "http://127.0.0.1:8080/hook",
            "http://localhost/hook",
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
    fn delivery_only_reaches_allow_listed_hosts() {
        let policy = PushPolicy::default();
        assert!(policy.check_delivery_url("http://127.0.0.1:1/x").is_ok());
        assert!(policy.check_delivery_url("http://[::1]:1/x").is_ok());
        assert!(policy.check_delivery_url("https://example.com/x").is_err());
        let strict = PushPolicy {
            allowed_hosts: vec![],
        };
        assert!(strict.check_url("http://127.0.0.1/x").is_err());
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(backoff(1) >= Duration::from_secs(1) && backoff(1) < Duration::from_secs(2));
        assert!(backoff(3) >= Duration::from_secs(4));
        assert!(backoff(30) <= Duration::from_secs(375));
    }
}
