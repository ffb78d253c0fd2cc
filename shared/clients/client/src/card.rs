//! Finding an agent: its card at the well-known paths, and the interface to talk to.

use std::time::Duration;

use a2a_protocol::{AgentCard, AgentInterface, PROTOCOL_VERSION};
use reqwest::header::{HeaderMap, ACCEPT, CACHE_CONTROL, ETAG, IF_NONE_MATCH};
use reqwest::StatusCode;

use crate::auth::Auth;
use crate::binding::Binding;
use crate::error::Error;
use crate::limits::Exchange;
use crate::transport::parse_url;
pub use a2a_push_verify::card::CardSignature;

/// Where agents publish their card (A2A 1.0).
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
/// Where agents before 0.3 published it; tried when the first path is not found.
pub const LEGACY_AGENT_CARD_PATH: &str = "/.well-known/agent.json";
/// The longest `Cache-Control: max-age` a card's response is taken at: a larger one (up to
/// `u64::MAX` seconds, which no clock can add) is read as this. One day: a card changes when
/// its agent is redeployed, and a day-old card is revalidated with its `ETag`.
pub const MAX_CARD_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// A card as fetched, with what its response said about caching.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchedCard {
    /// The card.
    pub card: AgentCard,
    /// The URL it came from.
    pub url: String,
    /// Its `ETag`, for a conditional fetch later.
    pub etag: Option<String>,
    /// `Cache-Control: max-age`, if the response set one (and no `no-store`/`no-cache`).
    pub max_age: Option<Duration>,
}

/// The answer of a conditional fetch.
#[derive(Debug, Clone, PartialEq)]
pub enum CardFetch {
    /// The card changed (or there was none before).
    Fetched(Box<FetchedCard>),
    /// `304 Not Modified`: the cached card is still good, for `max_age` more.
    NotModified {
        /// `Cache-Control: max-age` of the 304.
        max_age: Option<Duration>,
    },
}

/// Resolves agent cards.
#[derive(Debug, Clone)]
pub struct CardResolver {
    http: reqwest::Client,
    auth: Auth,
    timeout: Option<Duration>,
    max_body_bytes: usize,
    headers: HeaderMap,
}

impl CardResolver {
    /// A resolver with this HTTP client and credentials (cards may be behind auth). `timeout`
    /// bounds each fetch as a whole, its body's last byte included.
    pub fn new(http: reqwest::Client, auth: Auth, timeout: Option<Duration>) -> Self {
        Self {
            http,
            auth,
            timeout,
            max_body_bytes: crate::Limits::default().max_body_bytes,
            headers: HeaderMap::new(),
        }
    }

    /// Headers to send with every card request (a trace context, an extension's header).
    pub fn headers(mut self, headers: HeaderMap) -> Self {
        self.headers = headers;
        self
    }

    /// The largest card to read, in bytes (default [`crate::Limits::max_body_bytes`]).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// The card of the agent at `url`: the URL itself when it names a card (ends in `.json`),
    /// else `{url}/.well-known/agent-card.json`, then the legacy `/.well-known/agent.json`.
    pub async fn resolve(&self, url: &str) -> Result<FetchedCard, Error> {
        match self.fetch(url, None).await? {
            CardFetch::Fetched(card) => Ok(*card),
            CardFetch::NotModified { .. } => Err(Error::InvalidResponse(
                "304 Not Modified to an unconditional request".into(),
            )),
        }
    }

    /// Like [`Self::resolve`], conditional on `etag` (`If-None-Match`).
    pub async fn fetch(&self, url: &str, etag: Option<&str>) -> Result<CardFetch, Error> {
        let candidates = card_urls(url)?;
        let mut last = None;
        for candidate in &candidates {
            match self.fetch_one(candidate, etag).await {
                Err(Error::HttpStatus { status: 404, .. }) if candidates.len() > 1 => {
                    last = Some(Error::Card(format!("no agent card at {candidate}")));
                }
                result => return result,
            }
        }
        Err(last.unwrap_or_else(|| Error::Card(format!("no agent card at {url}"))))
    }

    async fn fetch_one(&self, url: &str, etag: Option<&str>) -> Result<CardFetch, Error> {
        let mut builder = self
            .http
            .get(self.auth.with_query_key(parse_url(url)?))
            .headers(self.headers.clone())
            .header(ACCEPT, "application/json")
            // A server that also serves older clients answers a card request without a
            // version with their card (spec §3.6.2: no header means 0.3); ask for 1.0's.
            .header("A2A-Version", a2a_protocol::PROTOCOL_VERSION);
        if let Some(etag) = etag {
            builder = builder.header(IF_NONE_MATCH, etag);
        }
        if let Some(t) = self.timeout {
            builder = builder.timeout(t);
        }
        let builder = self.auth.apply(&self.http, builder).await?;
        let what = format!("fetching the agent card at {url}");
        let exchange = Exchange {
            what: &what,
            timeout: self.timeout,
        };
        let response = builder.send().await.map_err(|e| exchange.failed(e))?;
        let status = response.status();
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let max_age = header(CACHE_CONTROL).and_then(|v| max_age(&v));
        let new_etag = header(ETAG);
        if status == StatusCode::NOT_MODIFIED {
            return Ok(CardFetch::NotModified { max_age });
        }
        let bytes = exchange.read_body(response, self.max_body_bytes).await?;
        if !status.is_success() {
            return Err(Error::HttpStatus {
                status: status.as_u16(),
                body: crate::transport::parse_body(&bytes),
                www_authenticate: None,
            });
        }
        let card: AgentCard = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Card(format!("{url} is not an A2A 1.0 agent card: {e}")))?;
        Ok(CardFetch::Fetched(Box::new(FetchedCard {
            card,
            url: url.to_string(),
            etag: new_etag,
            max_age,
        })))
    }
}

impl CardResolver {
    /// Checks the signatures of a card as fetched (A2A §8.4) against the agent's own JWKS:
    /// the `jku` of a signature's protected header when it is on the card's origin (a JWKS
    /// elsewhere would let anyone sign the card), else `jwks.json` beside the card
    /// (`…/.well-known/jwks.json`). `Card` error if the card is unsigned or no signature
    /// verifies, with the reasons.
    pub async fn verify(&self, fetched: &FetchedCard) -> Result<CardSignature, Error> {
        let origin = crate::scope::origin_of(&fetched.url);
        let beside = match fetched.url.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/jwks.json"),
            None => return Err(Error::Card(format!("{} names no card", fetched.url))),
        };
        let mut jwks_url = beside;
        for signature in &fetched.card.signatures {
            let jku = a2a_push_verify::card::protected_header(&signature.protected)
                .and_then(|h| h.jku)
                .filter(|jku| {
                    crate::scope::origin_of(jku).is_some() && crate::scope::origin_of(jku) == origin
                });
            if let Some(jku) = jku {
                jwks_url = jku;
                break;
            }
        }
        if fetched.card.signatures.is_empty() {
            return Err(Error::Card(format!(
                "the agent card at {} is not signed",
                fetched.url
            )));
        }
        let mut builder = self
            .http
            .get(parse_url(&jwks_url)?)
            .header(ACCEPT, "application/json");
        if let Some(t) = self.timeout {
            builder = builder.timeout(t);
        }
        let what = format!("fetching the agent's keys at {jwks_url}");
        let exchange = Exchange {
            what: &what,
            timeout: self.timeout,
        };
        let response = builder.send().await.map_err(|e| exchange.failed(e))?;
        let status = response.status();
        let bytes = exchange.read_body(response, self.max_body_bytes).await?;
        if !status.is_success() {
            return Err(Error::Card(format!(
                "the agent's keys at {jwks_url}: HTTP {}",
                status.as_u16()
            )));
        }
        let jwks: a2a_push_verify::card::JwkSet = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Card(format!("{jwks_url} is not a JWK set: {e}")))?;
        a2a_push_verify::card::verify_card(
            &fetched.card,
            &jwks,
            a2a_push_verify::card::CARD_ALGORITHMS,
        )
        .map_err(|e| Error::Card(format!("the agent card at {}: {e}", fetched.url)))
    }
}

/// The card URLs to try for `url`, in order.
pub fn card_urls(url: &str) -> Result<Vec<String>, Error> {
    let parsed = parse_url(url)?;
    if parsed.path().ends_with(".json") {
        return Ok(vec![url.to_string()]);
    }
    let base = url.trim_end_matches('/');
    Ok(vec![
        format!("{base}{AGENT_CARD_PATH}"),
        format!("{base}{LEGACY_AGENT_CARD_PATH}"),
    ])
}

/// `max-age` of a `Cache-Control` value, unless it forbids reuse without revalidation; at
/// most [`MAX_CARD_MAX_AGE`] (the agent's number is untrusted: a value too large for any
/// integer is that maximum too, as RFC 9111 reads an overflowing delta-seconds).
fn max_age(value: &str) -> Option<Duration> {
    let directives: Vec<String> = value
        .split(',')
        .map(|d| d.trim().to_ascii_lowercase())
        .collect();
    if directives
        .iter()
        .any(|d| d == "no-store" || d == "no-cache")
    {
        return Some(Duration::ZERO);
    }
    directives
        .iter()
        .find_map(|d| {
            let seconds = d.strip_prefix("max-age=")?.trim_matches('"');
            let digits = !seconds.is_empty() && seconds.bytes().all(|b| b.is_ascii_digit());
            digits.then(|| seconds.parse::<u64>().unwrap_or(u64::MAX))
        })
        .map(|seconds| Duration::from_secs(seconds).min(MAX_CARD_MAX_AGE))
}

/// Whether `card` offers `interface` (its URL and binding) in the A2A 1.1 draft too.
pub(crate) fn offers_1_1(card: &AgentCard, interface: &AgentInterface) -> bool {
    card.supported_interfaces.iter().any(|i| {
        i.protocol_version == a2a_protocol::PROTOCOL_VERSION_1_1
            && i.url == interface.url
            && i.protocol_binding == interface.protocol_binding
            && i.tenant == interface.tenant
    })
}

/// The interface to use: the first of the card's interfaces whose binding comes earliest in
/// `preference` and whose `protocolVersion` is 1.0 (any 1.x, which a 1.0 client can talk to);
/// the card's own order breaks ties, as the spec says clients should honour it.
pub fn choose_interface<'a>(
    card: &'a AgentCard,
    preference: &[Binding],
) -> Result<(&'a AgentInterface, Binding), Error> {
    let major = PROTOCOL_VERSION.split('.').next().unwrap_or("1");
    let speaks = |i: &AgentInterface| i.protocol_version.split('.').next() == Some(major);
    for wanted in preference {
        if let Some(found) = card
            .supported_interfaces
            .iter()
            .find(|i| Binding::parse(&i.protocol_binding) == Some(*wanted) && speaks(i))
        {
            return Ok((found, *wanted));
        }
    }
    let offered: Vec<String> = card
        .supported_interfaces
        .iter()
        .map(|i| format!("{} {} at {}", i.protocol_binding, i.protocol_version, i.url))
        .collect();
    Err(Error::Card(format!(
        "the agent offers no A2A {PROTOCOL_VERSION} interface over {}; it offers: {}",
        preference
            .iter()
            .map(|b| b.as_str())
            .collect::<Vec<_>>()
            .join(" or "),
        if offered.is_empty() {
            "nothing".to_string()
        } else {
            offered.join(", ")
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interface(binding: &str, version: &str, url: &str) -> AgentInterface {
        AgentInterface {
            url: url.into(),
            protocol_binding: binding.into(),
            protocol_version: version.into(),
            tenant: String::new(),
        }
    }

    #[test]
    fn interfaces_are_chosen_by_binding_then_version() {
        let card = AgentCard {
            supported_interfaces: vec![
                interface("JSONRPC", "0.3", "http://a/v03"),
                interface("HTTP+JSON", "1.0", "http://a/rest"),
                interface("GRPC", "1.0", "a:443"),
                interface("JSONRPC", "1.0", "http://a/rpc"),
            ],
            ..AgentCard::default()
        };
        let (i, b) = choose_interface(&card, &[Binding::JsonRpc, Binding::HttpJson]).unwrap();
        assert_eq!((i.url.as_str(), b), ("http://a/rpc", Binding::JsonRpc));
        let (i, _) = choose_interface(&card, &[Binding::HttpJson]).unwrap();
        assert_eq!(i.url, "http://a/rest");
        let only_old = AgentCard {
            supported_interfaces: vec![interface("JSONRPC", "0.3", "http://a/v03")],
            ..AgentCard::default()
        };
        let e = choose_interface(&only_old, &[Binding::JsonRpc]).unwrap_err();
        assert!(e.to_string().contains("JSONRPC 0.3 at http://a/v03"), "{e}");
    }

    #[test]
    fn card_urls_try_the_legacy_path_second() {
        assert_eq!(
            card_urls("http://a:1/").unwrap(),
            [
                "http://a:1/.well-known/agent-card.json",
                "http://a:1/.well-known/agent.json"
            ]
        );
        assert_eq!(
            card_urls("http://a/card.json").unwrap(),
            ["http://a/card.json"]
        );
    }

    #[test]
    fn cache_control_gives_a_max_age() {
        assert_eq!(
            max_age("public, max-age=300"),
            Some(Duration::from_secs(300))
        );
        assert_eq!(max_age("no-cache"), Some(Duration::ZERO));
        assert_eq!(max_age("public"), None);
        assert_eq!(max_age("max-age=-1"), None);
        assert_eq!(max_age("max-age=1e3"), None);
    }

    /// The agent's number is untrusted: however large, it is read as at most a day.
    #[test]
    fn a_huge_max_age_is_clamped() {
        for huge in [
            "max-age=18446744073709551615",
            "max-age=99999999999999999999999999",
            "public, max-age=\"86401\"",
        ] {
            assert_eq!(max_age(huge), Some(MAX_CARD_MAX_AGE), "{huge}");
        }
    }

    proptest::proptest! {
        /// Any `Cache-Control` a server sends is read without a panic, and a `max-age` of any
        /// size reads back as itself up to a day, as a day past it (issue 46, defect 4).
        #[test]
        fn any_cache_control_is_read(
            value in "\\PC{0,64}|[a-z-]{0,12}=?[0-9\"]{0,24}(, *[a-z-]{0,12}=?[0-9]{0,24}){0,3}",
            seconds in proptest::prelude::any::<u64>(),
        ) {
            let _ = max_age(&value);
            proptest::prop_assert_eq!(
                max_age(&format!("public, max-age={seconds}")),
                Some(Duration::from_secs(seconds).min(MAX_CARD_MAX_AGE))
            );
        }
    }
}
