//! Verify the push notifications an A2A agent built on a2a-lambda sends to your webhook.
//!
//! Each push POST carries a JWT (in the `A2A-Push-Signature` header, and also as
//! `Authorization: Bearer <jwt>` when the push config has no `authentication`) signed with one
//! of the agent's keys, which the agent publishes at `{agent}/.well-known/jwks.json`. A
//! [`Verifier`] checks, for each POST:
//!
//! - the signature, with the key named by the header's `kid` (the JWKS is fetched and cached
//!   with a TTL, and fetched again once when an unknown `kid` shows up, so key rotation works);
//! - the algorithm, against an allow-list (ES256 and RS256; never `none`, never HMAC);
//! - `aud`: the webhook URL you registered, exactly;
//! - `iss`, if configured: the agent's base URL;
//! - `exp` and `iat`, with a small leeway, and a lifetime of at most five minutes;
//! - `bodySha256`: the SHA-256 of the exact body bytes received;
//! - `jti`: never seen before within the token's lifetime (replays are refused).
//!
//! ```no_run
//! # async fn example(headers: reqwest::header::HeaderMap, body: &[u8]) {
//! use a2a_push_verify::Verifier;
//! let verifier = Verifier::for_agent("https://agent.example.com", "https://me.example.com/hook");
//! match verifier.verify(&headers, body).await {
//!     // Drop redeliveries by (task, seq); then parse `body` as a StreamResponse.
//!     Ok(push) => println!("task {} event {}", push.claims.task_id, push.claims.seq),
//!     Err(err) => eprintln!("refused: {err}"), // answer 401
//! }
//! # }
//! ```
//!
//! This crate replaces `jwks-client`, which is unmaintained and panics under tokio 1: it uses
//! `jsonwebtoken`'s `jwk` module and `reqwest` instead.

pub mod card;

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use reqwest::header::{HeaderMap, AUTHORIZATION};
use tokio::sync::Mutex;

pub use a2a_protocol::push::{
    PushClaims, JWKS_PATH, MAX_PUSH_TOKEN_LIFETIME as MAX_TOKEN_LIFETIME,
    PUSH_SIGNATURE_HEADER as SIGNATURE_HEADER,
};

/// A push that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedPush {
    /// Its claims.
    pub claims: PushClaims,
    /// The key that signed it.
    pub kid: String,
    /// The algorithm it was signed with.
    pub algorithm: Algorithm,
}

/// Why a push was refused. Answer any of these with 401.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// No JWT in `A2A-Push-Signature` or `Authorization: Bearer`.
    #[error("the request carries no push signature")]
    MissingToken,
    /// The JWT or its claims are malformed, or a required claim is missing.
    #[error("malformed push token: {0}")]
    Malformed(String),
    /// The algorithm is not on the allow-list (or does not match the key).
    #[error("algorithm {0} is not accepted")]
    Algorithm(String),
    /// No published key has this `kid`, even after fetching the JWKS again.
    #[error("unknown signing key {0:?}")]
    UnknownKey(String),
    /// The signature does not verify.
    #[error("the signature does not verify")]
    BadSignature,
    /// `exp` has passed.
    #[error("the push token has expired")]
    Expired,
    /// `iat` is in the future, or `exp - iat` is longer than allowed.
    #[error("the push token's lifetime is not acceptable")]
    BadLifetime,
    /// `aud` is not this webhook's URL.
    #[error("the push token is for another audience")]
    WrongAudience,
    /// `iss` is not the configured issuer.
    #[error("the push token is from another issuer")]
    WrongIssuer,
    /// The body is not the one that was signed.
    #[error("the body does not match the signed hash")]
    BodyMismatch,
    /// This `jti` was already accepted.
    #[error("the push token was already used")]
    Replayed,
    /// The JWKS could not be fetched or parsed.
    #[error("fetching the JWKS failed: {0}")]
    Jwks(String),
}

/// The largest JWKS a [`Verifier`] reads by default.
pub const DEFAULT_MAX_JWKS_BYTES: usize = 1 << 20;
/// How long a [`Verifier`] waits for the JWKS by default: connecting, the first byte and the
/// last one together.
pub const DEFAULT_JWKS_FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Verifies pushes for one webhook URL. Keep one per webhook for the life of the process: it
/// holds the JWKS cache and the replay window.
#[derive(Debug)]
pub struct Verifier {
    jwks_url: String,
    audience: String,
    issuer: Option<String>,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    jwks_ttl: Duration,
    refetch_cooldown: Duration,
    fetch_timeout: Duration,
    http: reqwest::Client,
    max_jwks_bytes: usize,
    jwks: Mutex<JwksCache>,
    seen: std::sync::Mutex<HashMap<String, u64>>,
}

#[derive(Debug, Default)]
struct JwksCache {
    keys: Option<JwkSet>,
    fetched: Option<Instant>,
    /// The last fetch that failed, and why: within the cooldown, pushes that need the keys
    /// are refused with it at once instead of each waiting for a fetch of their own.
    failed: Option<(Instant, VerifyError)>,
}

impl Verifier {
    /// A verifier for pushes from the agent at `agent_base_url` (its `iss`; the JWKS is at
    /// `{agent_base_url}/.well-known/jwks.json`) to the webhook `audience` (the URL you
    /// registered, exactly as registered).
    pub fn for_agent(agent_base_url: &str, audience: impl Into<String>) -> Self {
        let base = agent_base_url.trim_end_matches('/');
        Self::new(format!("{base}{JWKS_PATH}"), audience).issuer(base)
    }

    /// A verifier that fetches keys from `jwks_url` and accepts tokens for `audience`, from
    /// any issuer (set one with [`Self::issuer`]).
    pub fn new(jwks_url: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            jwks_url: jwks_url.into(),
            audience: audience.into(),
            issuer: None,
            algorithms: vec![Algorithm::ES256, Algorithm::RS256],
            leeway: Duration::from_secs(30),
            jwks_ttl: Duration::from_secs(300),
            refetch_cooldown: Duration::from_secs(10),
            fetch_timeout: DEFAULT_JWKS_FETCH_TIMEOUT,
            http: reqwest::Client::builder()
                .timeout(DEFAULT_JWKS_FETCH_TIMEOUT)
                .build()
                .expect("a default reqwest client builds"),
            max_jwks_bytes: DEFAULT_MAX_JWKS_BYTES,
            jwks: Mutex::new(JwksCache::default()),
            seen: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Accepts only tokens whose `iss` is `issuer` (trailing `/` ignored).
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into().trim_end_matches('/').to_string());
        self
    }

    /// The accepted algorithms (default ES256 and RS256). HMAC algorithms are dropped: a
    /// shared secret cannot prove who signed, and a public key must never be used as one.
    pub fn algorithms(mut self, algorithms: &[Algorithm]) -> Self {
        self.algorithms = algorithms
            .iter()
            .copied()
            .filter(|a| !matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
            .collect();
        self
    }

    /// Clock skew tolerated on `exp` and `iat` (default 30 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// How long a fetched JWKS is used before it is fetched again (default 5 min).
    pub fn jwks_ttl(mut self, ttl: Duration) -> Self {
        self.jwks_ttl = ttl;
        self
    }

    /// The least time between two fetches caused by unknown `kid`s (default 10 s), so that
    /// tokens with made-up `kid`s cannot make the verifier hammer the JWKS endpoint. After a
    /// fetch that failed, pushes are refused with its error for this long without a fetch.
    pub fn refetch_cooldown(mut self, cooldown: Duration) -> Self {
        self.refetch_cooldown = cooldown;
        self
    }

    /// The largest JWKS document read, in bytes (default 1 MiB: a key set is a few
    /// kilobytes); a larger one is refused without reading the rest.
    pub fn max_jwks_bytes(mut self, bytes: usize) -> Self {
        self.max_jwks_bytes = bytes;
        self
    }

    /// The longest one JWKS fetch may take, connecting and reading the whole body together
    /// (default 10 s). It holds whatever client [`Self::http_client`] gives: a JWKS endpoint
    /// that never answers fails the push that needed it after this long, and the pushes
    /// behind it at once (see [`Self::refetch_cooldown`]).
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }

    /// The HTTP client that fetches the JWKS (to set proxies or roots; the fetch's timeout is
    /// [`Self::fetch_timeout`]).
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = client;
        self
    }

    /// Verifies a received push: its headers (the JWT is read from `A2A-Push-Signature`, else
    /// from `Authorization: Bearer`) and its exact body bytes.
    pub async fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<VerifiedPush, VerifyError> {
        let token = token_from(headers).ok_or(VerifyError::MissingToken)?;
        self.verify_token(token, body).await
    }

    /// Verifies a push JWT against the body it came with.
    pub async fn verify_token(
        &self,
        token: &str,
        body: &[u8],
    ) -> Result<VerifiedPush, VerifyError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| VerifyError::Malformed(format!("{:?}", e.kind())))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(VerifyError::Algorithm(format!("{:?}", header.alg)));
        }
        let kid = header
            .kid
            .ok_or_else(|| VerifyError::Malformed("the header has no kid".into()))?;
        let jwk = self.key(&kid).await?;
        if let Some(key_alg) = jwk.common.key_algorithm {
            // A key published for one algorithm is never used with another.
            if key_alg != header.alg.into() {
                return Err(VerifyError::Algorithm(format!("{:?}", header.alg)));
            }
        }
        let key = DecodingKey::from_jwk(&jwk)
            .map_err(|e| VerifyError::Malformed(format!("published key {kid}: {:?}", e.kind())))?;

        let mut validation = Validation::new(header.alg);
        validation.leeway = self.leeway.as_secs();
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "aud", "iss"]);
        if let Some(issuer) = &self.issuer {
            validation.set_issuer(&[issuer]);
        }
        let data = jsonwebtoken::decode::<PushClaims>(token, &key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind;
            match e.kind() {
                ErrorKind::InvalidSignature => VerifyError::BadSignature,
                ErrorKind::ExpiredSignature => VerifyError::Expired,
                ErrorKind::InvalidAudience => VerifyError::WrongAudience,
                ErrorKind::InvalidIssuer => VerifyError::WrongIssuer,
                ErrorKind::InvalidAlgorithm => VerifyError::Algorithm(format!("{:?}", header.alg)),
                other => VerifyError::Malformed(format!("{other:?}")),
            }
        })?;
        let claims = data.claims;

        let now = unix_now();
        let leeway = self.leeway.as_secs();
        // A token from the future, or one living longer than the sender promises, would
        // outlast the replay window below.
        if claims.iat > now + leeway
            || claims.exp < claims.iat
            || claims.exp - claims.iat > MAX_TOKEN_LIFETIME.as_secs()
        {
            return Err(VerifyError::BadLifetime);
        }
        if claims.body_sha256 != body_sha256(body) {
            return Err(VerifyError::BodyMismatch);
        }
        // Last: only a token that passed every other check may use up its jti.
        self.remember(&claims.jti, claims.exp + leeway, now)?;
        Ok(VerifiedPush {
            claims,
            kid,
            algorithm: header.alg,
        })
    }

    /// Records `jti` until `until`; `Replayed` if it is already there. Entries are dropped once
    /// their token has expired: after that `exp` refuses the token anyway.
    fn remember(&self, jti: &str, until: u64, now: u64) -> Result<(), VerifyError> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.retain(|_, expiry| *expiry >= now);
        if seen.contains_key(jti) {
            return Err(VerifyError::Replayed);
        }
        seen.insert(jti.to_string(), until);
        Ok(())
    }

    /// The published key `kid`: from the cache while it is fresh, else from a new fetch; an
    /// unknown `kid` causes one more fetch (outside the cooldown) before it is refused.
    async fn key(&self, kid: &str) -> Result<jsonwebtoken::jwk::Jwk, VerifyError> {
        let mut cache = self.jwks.lock().await;
        let fresh = cache.fetched.is_some_and(|at| at.elapsed() < self.jwks_ttl);
        if let Some((at, err)) = &cache.failed {
            if !fresh && at.elapsed() < self.refetch_cooldown {
                return Err(err.clone());
            }
        }
        if !fresh {
            self.fetch(&mut cache).await?;
        } else if let Some(jwk) = cache.keys.as_ref().and_then(|k| k.find(kid)) {
            return Ok(jwk.clone());
        } else if cache
            .fetched
            .is_some_and(|at| at.elapsed() >= self.refetch_cooldown)
        {
            self.fetch(&mut cache).await?;
        }
        cache
            .keys
            .as_ref()
            .and_then(|k| k.find(kid))
            .cloned()
            .ok_or_else(|| VerifyError::UnknownKey(kid.to_string()))
    }

    /// Fetches the JWKS into `cache`, within [`Self::fetch_timeout`]; a failure is kept for
    /// the cooldown.
    async fn fetch(&self, cache: &mut JwksCache) -> Result<(), VerifyError> {
        let fetched = tokio::time::timeout(self.fetch_timeout, self.fetch_keys()).await;
        let result = fetched.unwrap_or_else(|_| {
            Err(VerifyError::Jwks(format!(
                "the JWKS endpoint did not answer within {} s",
                self.fetch_timeout.as_secs_f64()
            )))
        });
        match result {
            Ok(keys) => {
                cache.keys = Some(keys);
                cache.fetched = Some(Instant::now());
                cache.failed = None;
                Ok(())
            }
            Err(err) => {
                cache.failed = Some((Instant::now(), err.clone()));
                Err(err)
            }
        }
    }

    /// One fetch of the JWKS, its body read up to [`Self::max_jwks_bytes`].
    async fn fetch_keys(&self) -> Result<JwkSet, VerifyError> {
        let mut response = self
            .http
            .get(&self.jwks_url)
            .send()
            .await
            .map_err(|e| VerifyError::Jwks(e.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(VerifyError::Jwks(format!(
                "the JWKS endpoint answered {}",
                response.status()
            )));
        }
        let too_large = || {
            VerifyError::Jwks(format!(
                "the JWKS is larger than the limit of {} bytes",
                self.max_jwks_bytes
            ))
        };
        if response
            .content_length()
            .is_some_and(|n| n > self.max_jwks_bytes as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| VerifyError::Jwks(e.without_url().to_string()))?
        {
            if body.len() + chunk.len() > self.max_jwks_bytes {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| VerifyError::Jwks(format!("not a JWK set: {e}")))
    }
}

/// The push JWT of a request: `A2A-Push-Signature`, else the `Authorization` bearer token.
pub fn token_from(headers: &HeaderMap) -> Option<&str> {
    if let Some(value) = headers.get(SIGNATURE_HEADER) {
        return value.to_str().ok().map(str::trim);
    }
    let auth = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = auth.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// base64url (unpadded) SHA-256 of `body`: the `bodySha256` claim.
pub fn body_sha256(body: &[u8]) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, body);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_comes_from_the_signature_header_first() {
        let mut headers = HeaderMap::new();
        assert_eq!(token_from(&headers), None);
        headers.insert(AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(token_from(&headers), Some("abc"));
        headers.insert(SIGNATURE_HEADER, "xyz".parse().unwrap());
        assert_eq!(token_from(&headers), Some("xyz"));
        let mut basic = HeaderMap::new();
        basic.insert(AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(token_from(&basic), None);
    }

    #[test]
    fn hmac_is_never_accepted() {
        let v = Verifier::new("http://x", "y").algorithms(&[Algorithm::HS256, Algorithm::ES256]);
        assert_eq!(v.algorithms, vec![Algorithm::ES256]);
    }

    #[test]
    fn a_jti_is_accepted_once_within_its_lifetime() {
        let v = Verifier::new("http://x", "y");
        v.remember("a", 100, 50).unwrap();
        assert_eq!(v.remember("a", 100, 60), Err(VerifyError::Replayed));
        // Once the token has expired, its entry is dropped (exp refuses it anyway).
        v.remember("a", 200, 101).unwrap();
    }
}
