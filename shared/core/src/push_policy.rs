//! Which webhook URLs are accepted and which addresses may be contacted: the SSRF guard's
//! rules, without any I/O.
//!
//! The guard works in two places:
//! - when a config is created ([`PushPolicy::check_new_url`]): the URL's form, its scheme, an
//!   IP-literal host, and the addresses a host name resolves to right now (asked of a
//!   [`HostResolver`], the host's DNS adapter);
//! - on every connection, in the webhook sender adapter (the `WebhookSender` port):
//!   IP literals are checked again, and host names are resolved by a resolver that refuses
//!   non-public addresses ([`PushPolicy::check_resolved`]), so the sender connects only to
//!   the addresses that were checked. A name that resolved to a public address when the config
//!   was created and to a private one later (DNS rebinding) is refused at that point.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use a2a_protocol::A2AError;
use async_trait::async_trait;
use url::Url;

/// Resolves host names: the port behind which the creation check of a webhook URL asks DNS.
/// The webhook sender adapter implements it with the same resolver it connects through.
#[async_trait]
pub trait HostResolver: Send + Sync + std::fmt::Debug {
    /// The addresses `host` resolves to now, with `port`.
    async fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>>;
}

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
    pub async fn check_new_url(
        &self,
        url: &str,
        resolver: &dyn HostResolver,
    ) -> Result<Url, A2AError> {
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
        let addrs = match tokio::time::timeout(RESOLVE_TIMEOUT, resolver.resolve(name, port)).await
        {
            Ok(Ok(addrs)) => addrs,
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
    /// made, by the resolver of the webhook sender.
    pub fn check_delivery_url(&self, url: &str) -> Result<Url, A2AError> {
        self.check_url(url)
    }

    /// Whether `host` may be contacted at `addrs` (what it resolved to): yes if it is
    /// allow-listed; otherwise there must be at least one address and all must be public.
    /// The webhook sender's resolver calls it on every connection.
    pub fn check_resolved(&self, host: &str, addrs: &[SocketAddr]) -> Result<(), GuardRefusal> {
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

/// Why the guard refused to connect: names the host and the address, never a URL's path. The
/// sender adapter reports it as `WebhookOutcome::Refused` (never retried),
/// apart from a network failure (retried).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardRefusal(pub String);

impl std::fmt::Display for GuardRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for GuardRefusal {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resolver with fixed answers: `None` for a name that does not resolve.
    #[derive(Debug)]
    struct FixedDns(Option<Vec<SocketAddr>>);

    #[async_trait]
    impl HostResolver for FixedDns {
        async fn resolve(&self, host: &str, _port: u16) -> std::io::Result<Vec<SocketAddr>> {
            self.0.clone().ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{host}: no such host"),
                )
            })
        }
    }

    /// A resolver that never answers: a DNS server that drops the query.
    #[derive(Debug)]
    struct SilentDns;

    #[async_trait]
    impl HostResolver for SilentDns {
        async fn resolve(&self, _host: &str, _port: u16) -> std::io::Result<Vec<SocketAddr>> {
            std::future::pending().await
        }
    }

    /// The creation's DNS lookup is given up on after RESOLVE_TIMEOUT (docs/bounds.md): the
    /// config is accepted, as for a name that does not resolve now, and its addresses are
    /// checked on every connection. Without the bound the request would hang.
    #[tokio::test]
    async fn a_resolver_that_never_answers_is_given_up_on_after_five_seconds() {
        assert_eq!(RESOLVE_TIMEOUT, Duration::from_secs(5));
        let policy = PushPolicy::default();
        let started = tokio::time::Instant::now();
        let checked = tokio::time::timeout(
            Duration::from_secs(30),
            policy.check_new_url("https://hooks.example.com/a2a", &SilentDns),
        )
        .await
        .expect("the check gave up by itself");
        assert!(checked.is_ok(), "{checked:?}");
        assert!(started.elapsed() >= RESOLVE_TIMEOUT);
    }

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
        let unresolved = FixedDns(None);
        for special in [
            "http://localhost:1/x",
            "http://no-such-host.invalid/x",
            "http://a.LOCAL./x",
        ] {
            let err = open.check_new_url(special, &unresolved).await.unwrap_err();
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
            .check_new_url("http://no-such-host.a2a-lambda.example.com/x", &unresolved)
            .await
            .is_ok());
        assert!(PushPolicy::local()
            .check_new_url("http://localhost:1/x", &unresolved)
            .await
            .is_ok());
        // The resolver's answer is checked: a private address refuses the name at creation.
        let private = FixedDns(Some(vec![addr("93.184.216.34"), addr("10.1.2.3")]));
        let err = open
            .check_new_url("http://hook.example/x", &private)
            .await
            .unwrap_err();
        assert!(err.message().contains("10.1.2.3"), "{}", err.message());
        let public = FixedDns(Some(vec![addr("93.184.216.34")]));
        assert!(open
            .check_new_url("http://hook.example/x", &public)
            .await
            .is_ok());
    }
}
