//! Bearer JWTs from one OpenID issuer: the verification rules and a cache of the issuer's keys,
//! fetched through the [`JwksSource`] port.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::sync::Mutex;

use super::{AuthFailure, Permission, Permissions, Principal};
use crate::signing::RETRY_FAILED_LOAD;

/// The OAuth scope that grants each permission. An empty name grants that permission to every
/// holder of a valid token (for issuers that cannot mint custom scopes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeNames {
    /// Grants [`Permission::Read`] (default `a2a:read`).
    pub read: String,
    /// Grants [`Permission::Send`] (default `a2a:send`).
    pub send: String,
    /// Grants [`Permission::Cancel`] (default `a2a:cancel`).
    pub cancel: String,
    /// Grants [`Permission::Push`] (default `a2a:push`).
    pub push: String,
}

impl Default for ScopeNames {
    fn default() -> Self {
        Self {
            read: "a2a:read".into(),
            send: "a2a:send".into(),
            cancel: "a2a:cancel".into(),
            push: "a2a:push".into(),
        }
    }
}

impl ScopeNames {
    /// The scope that grants `permission`.
    pub fn scope(&self, permission: Permission) -> &str {
        match permission {
            Permission::Read => &self.read,
            Permission::Send => &self.send,
            Permission::Cancel => &self.cancel,
            Permission::Push => &self.push,
        }
    }

    fn permissions(&self, scopes: &[&str]) -> Permissions {
        Permission::ALL
            .into_iter()
            .filter(|p| {
                let needed = self.scope(*p);
                needed.is_empty() || scopes.contains(&needed)
            })
            .collect()
    }
}

/// The asymmetric algorithms accepted by default. HMAC is never accepted (see
/// [`JwtConfig::algorithms`]).
pub const DEFAULT_JWT_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// How bearer JWTs are verified.
#[derive(Debug, Clone)]
pub struct JwtConfig {
    /// The issuer: tokens must carry exactly this `iss` (a trailing `/` is significant, as
    /// in OpenID Connect). Its keys are found through `{issuer}/.well-known/openid-configuration`
    /// unless `jwks_url` is set.
    pub issuer: String,
    /// Accepted audiences: a token's `aud` must contain one of them.
    pub audience: Vec<String>,
    /// The issuer's JWKS, if it is not to be discovered.
    pub jwks_url: Option<String>,
    /// The algorithm allow-list. HMAC algorithms are removed whatever is configured: a shared
    /// secret cannot prove who signed, and a public key must never be used as one.
    pub algorithms: Vec<Algorithm>,
    /// Which scope grants which permission.
    pub scopes: ScopeNames,
    /// Clock skew tolerated on `exp` and `nbf`.
    pub leeway: Duration,
    /// How long a fetched JWKS is used before it is fetched again.
    pub jwks_ttl: Duration,
    /// The least time between two fetches caused by unknown `kid`s, so that tokens with
    /// made-up `kid`s cannot make the server hammer the issuer.
    pub refetch_cooldown: Duration,
}

impl JwtConfig {
    /// Tokens from `issuer` for `audience`, with the defaults.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            audience: vec![audience.into()],
            jwks_url: None,
            algorithms: DEFAULT_JWT_ALGORITHMS.to_vec(),
            scopes: ScopeNames::default(),
            leeway: Duration::from_secs(60),
            jwks_ttl: Duration::from_secs(600),
            refetch_cooldown: Duration::from_secs(30),
        }
    }

    /// The discovery document's URL.
    pub fn discovery_url(&self) -> String {
        format!(
            "{}/.well-known/openid-configuration",
            self.issuer.trim_end_matches('/')
        )
    }
}

/// The claims read from a verified token; `exp`, `nbf`, `iss` and `aud` are checked by
/// `jsonwebtoken` itself.
#[derive(Debug, Deserialize)]
struct BearerClaims {
    sub: String,
    iss: String,
    /// Space-separated scopes (RFC 8693, Cognito, Auth0, Keycloak).
    #[serde(default)]
    scope: Option<String>,
    /// Scopes as a list or a space-separated string (Okta, Entra ID).
    #[serde(default)]
    scp: Option<ScopeClaim>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ScopeClaim {
    Text(String),
    List(Vec<String>),
}

/// The issuer's signing keys, as last fetched, and the last failed fetch since.
#[derive(Default)]
struct JwksCache {
    keys: Option<JwkSet>,
    fetched: Option<Instant>,
    failed: Option<(Instant, JwksUnavailable)>,
}

/// The issuer's keys could not be fetched: a server-side failure, not the caller's. The text
/// names the URL and the reason, never a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwksUnavailable(pub String);

impl fmt::Display for JwksUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for JwksUnavailable {}

/// Where the issuer's signing keys come from: the port a host implements (`a2a-net`'s
/// OpenID client: discovery through `{issuer}/.well-known/openid-configuration`, unless a
/// JWKS URL is configured, then the JWKS itself). Caching is the verifier's business: each
/// call fetches.
#[async_trait]
pub trait JwksSource: Send + Sync {
    /// The issuer's current key set.
    async fn fetch(&self) -> Result<JwkSet, JwksUnavailable>;
}

/// Bearer-token verification: the configuration, the issuer's keys behind a TTL cache, and
/// the checks (algorithm allow-list, key family, `exp`, `nbf`, `iss`, `aud`).
pub(super) struct JwtVerifier {
    pub(super) config: JwtConfig,
    source: Arc<dyn JwksSource>,
    cache: Mutex<JwksCache>,
    /// The monotonic clock the cache ages by: `Instant::now`, or a test's clock that it moves
    /// forward without waiting.
    now: Box<dyn Fn() -> Instant + Send + Sync>,
}

impl JwtVerifier {
    pub(super) fn new(mut config: JwtConfig, source: Arc<dyn JwksSource>) -> Self {
        config
            .algorithms
            .retain(|a| !matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512));
        Self {
            config,
            source,
            cache: Mutex::new(JwksCache::default()),
            now: Box::new(Instant::now),
        }
    }

    pub(super) async fn verify(
        &self,
        token: &str,
    ) -> Result<Result<Principal, AuthFailure>, JwksUnavailable> {
        // `decode_header` refuses `alg: none` (no such algorithm) and anything not a JWS.
        let Ok(header) = jsonwebtoken::decode_header(token) else {
            return Ok(Err(AuthFailure::Malformed));
        };
        // RFC 7515 §4.1.11: a recipient must refuse a token whose `crit` names an extension
        // it does not understand, and we understand none. `jsonwebtoken` parses the list but
        // does not enforce it.
        if header.crit.as_ref().is_some_and(|crit| !crit.is_empty()) {
            return Ok(Err(AuthFailure::Malformed));
        }
        if !self.config.algorithms.contains(&header.alg) {
            return Ok(Err(AuthFailure::Algorithm));
        }
        let Some(kid) = header.kid.as_deref() else {
            return Ok(Err(AuthFailure::UnknownKey));
        };
        let Some(jwk) = self.key(kid).await? else {
            return Ok(Err(AuthFailure::UnknownKey));
        };
        if let Some(key_alg) = jwk.common.key_algorithm {
            // A key published for one algorithm is never used with another.
            if key_alg != header.alg.into() {
                return Ok(Err(AuthFailure::Algorithm));
            }
        }
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            return Ok(Err(AuthFailure::UnknownKey));
        };
        // The key's family must be the algorithm's (an RSA key cannot verify ES256): the
        // other half of what makes algorithm confusion impossible.
        if key.family() != header.alg.family() {
            return Ok(Err(AuthFailure::Algorithm));
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.config.leeway.as_secs();
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.set_audience(&self.config.audience);
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = match jsonwebtoken::decode::<BearerClaims>(token, &key, &validation) {
            Ok(data) => data,
            Err(err) => {
                use jsonwebtoken::errors::ErrorKind;
                return Ok(Err(match err.kind() {
                    ErrorKind::InvalidSignature => AuthFailure::BadSignature,
                    ErrorKind::ExpiredSignature => AuthFailure::Expired,
                    ErrorKind::ImmatureSignature => AuthFailure::NotYetValid,
                    ErrorKind::InvalidAudience => AuthFailure::WrongAudience,
                    ErrorKind::InvalidIssuer => AuthFailure::WrongIssuer,
                    ErrorKind::InvalidAlgorithm => AuthFailure::Algorithm,
                    _ => AuthFailure::Malformed,
                }));
            }
        };
        let claims = data.claims;
        let mut scopes: Vec<&str> = Vec::new();
        if let Some(scope) = &claims.scope {
            scopes.extend(scope.split_whitespace());
        }
        match &claims.scp {
            Some(ScopeClaim::Text(text)) => scopes.extend(text.split_whitespace()),
            Some(ScopeClaim::List(list)) => scopes.extend(list.iter().map(String::as_str)),
            None => {}
        }
        let permissions = self.config.scopes.permissions(&scopes);
        Ok(Ok(Principal::from_jwt(
            &claims.iss,
            &claims.sub,
            permissions,
        )))
    }

    /// The issuer's key `kid`: from the cache while it is fresh, else from a new fetch; an
    /// unknown `kid` causes one more fetch (outside the cooldown) before it is refused.
    async fn key(&self, kid: &str) -> Result<Option<Jwk>, JwksUnavailable> {
        let mut cache = self.cache.lock().await;
        let now = (self.now)();
        let fresh = cache
            .fetched
            .is_some_and(|at| now.duration_since(at) < self.config.jwks_ttl);
        if !fresh {
            self.fetch(&mut cache).await?;
        } else if let Some(jwk) = cache.keys.as_ref().and_then(|k| k.find(kid)) {
            return Ok(Some(jwk.clone()));
        } else if cache
            .fetched
            .is_some_and(|at| now.duration_since(at) >= self.config.refetch_cooldown)
        {
            tracing::info!("a token names an unknown key: fetching the issuer's keys again");
            self.fetch(&mut cache).await?;
        }
        Ok(cache.keys.as_ref().and_then(|k| k.find(kid)).cloned())
    }

    /// Fetches the issuer's keys, unless a fetch failed less than a second ago (or the TTL, if
    /// shorter): while the issuer is down, the requests in between get that failure at once
    /// instead of each waiting on a fetch of their own.
    async fn fetch(&self, cache: &mut JwksCache) -> Result<(), JwksUnavailable> {
        let retry = RETRY_FAILED_LOAD.min(self.config.jwks_ttl);
        if let Some((at, err)) = &cache.failed {
            if (self.now)().duration_since(*at) < retry {
                return Err(err.clone());
            }
        }
        match self.source.fetch().await {
            Ok(keys) => {
                tracing::info!(keys = keys.keys.len(), "fetched the issuer's signing keys");
                cache.keys = Some(keys);
                cache.fetched = Some((self.now)());
                cache.failed = None;
                Ok(())
            }
            Err(err) => {
                cache.failed = Some(((self.now)(), err.clone()));
                Err(err)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};

    use super::*;
    use crate::signing::{KeySet, SigningAlgorithm, SigningKey};

    /// An issuer in memory: publishes whatever keys the test sets, and counts the fetches.
    #[derive(Default)]
    struct FakeIssuer {
        keys: std::sync::Mutex<Vec<SigningKey>>,
        fetches: AtomicUsize,
    }

    impl FakeIssuer {
        fn publish(&self, keys: &[&SigningKey]) {
            *self.keys.lock().unwrap() = keys.iter().map(|k| (*k).clone()).collect();
        }

        fn fetches(&self) -> usize {
            self.fetches.load(Ordering::SeqCst)
        }
    }

    #[async_trait]
    impl JwksSource for FakeIssuer {
        async fn fetch(&self) -> Result<JwkSet, JwksUnavailable> {
            self.fetches.fetch_add(1, Ordering::SeqCst);
            let keys = self.keys.lock().unwrap().clone();
            if keys.is_empty() {
                return Err(JwksUnavailable("the issuer is down".into()));
            }
            let active = keys[0].kid().to_string();
            Ok(KeySet::new(keys, &active).unwrap().jwks())
        }
    }

    fn key() -> SigningKey {
        SigningKey::generate(SigningAlgorithm::Es256).unwrap().0
    }

    fn token(key: &SigningKey, scope: &str) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let claims = serde_json::json!({
            "iss": "https://issuer", "aud": "aud", "sub": "alice",
            "iat": now, "exp": now + 3600, "scope": scope,
        });
        KeySet::single(key.clone()).sign(&claims).unwrap()
    }

    fn verifier(issuer: &Arc<FakeIssuer>) -> JwtVerifier {
        JwtVerifier::new(JwtConfig::new("https://issuer", "aud"), issuer.clone())
    }

    #[test]
    fn scopes_grant_permissions_and_empty_names_grant_to_all() {
        let names = ScopeNames::default();
        let p = names.permissions(&["a2a:read", "a2a:push", "other"]);
        assert_eq!(p, Permissions::parse_list("read,push").unwrap());
        let open = ScopeNames {
            read: String::new(),
            ..ScopeNames::default()
        };
        assert_eq!(
            open.permissions(&[]),
            Permissions::parse_list("read").unwrap()
        );
    }

    #[test]
    fn hmac_never_stays_on_the_allow_list() {
        let mut config = JwtConfig::new("https://issuer", "aud");
        config.algorithms = vec![Algorithm::HS256, Algorithm::RS256];
        let verifier = JwtVerifier::new(config, Arc::new(FakeIssuer::default()));
        assert_eq!(verifier.config.algorithms, vec![Algorithm::RS256]);
    }

    #[tokio::test]
    async fn the_key_cache_expires_and_refetches_once_for_an_unknown_kid() {
        let issuer = Arc::new(FakeIssuer::default());
        let (old, new) = (key(), key());
        issuer.publish(&[&old]);
        let mut jwt = verifier(&issuer);
        // A clock the test moves forward, instead of waiting out the cooldown and the TTL.
        let start = Instant::now();
        let elapsed = Arc::new(std::sync::Mutex::new(Duration::ZERO));
        let clock = elapsed.clone();
        jwt.now = Box::new(move || start + *clock.lock().unwrap());
        let advance = |by: u64| *elapsed.lock().unwrap() += Duration::from_secs(by);

        let principal = jwt.verify(&token(&old, "a2a:read")).await.unwrap().unwrap();
        assert_eq!(principal.id, "jwt:14:https://issueralice");
        assert_eq!(
            principal.permissions,
            Permissions::parse_list("read").unwrap()
        );
        jwt.verify(&token(&old, "")).await.unwrap().unwrap();
        assert_eq!(issuer.fetches(), 1, "a fresh cache is used");

        // A rotation: the new key is unknown until the cooldown allows one more fetch.
        issuer.publish(&[&old, &new]);
        let refused = jwt.verify(&token(&new, "")).await.unwrap().unwrap_err();
        assert_eq!(refused, AuthFailure::UnknownKey);
        assert_eq!(issuer.fetches(), 1, "no fetch inside the cooldown");
        advance(31);
        jwt.verify(&token(&new, "")).await.unwrap().unwrap();
        assert_eq!(issuer.fetches(), 2, "one fetch for the unknown kid");
        let made_up = jwt.verify(&token(&key(), "")).await.unwrap().unwrap_err();
        assert_eq!(made_up, AuthFailure::UnknownKey);
        assert_eq!(issuer.fetches(), 2, "made-up kids cannot hammer the issuer");

        // Past the TTL, the keys are fetched again before any is used.
        advance(600);
        jwt.verify(&token(&old, "")).await.unwrap().unwrap();
        assert_eq!(issuer.fetches(), 3);
    }

    #[tokio::test]
    async fn a_critical_header_extension_is_refused() {
        let issuer = Arc::new(FakeIssuer::default());
        let (key, pem) = SigningKey::generate(SigningAlgorithm::Es256).unwrap();
        issuer.publish(&[&key]);
        let jwt = verifier(&issuer);
        let encoding = jsonwebtoken::EncodingKey::from_ec_pem(pem.expose().as_bytes()).unwrap();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let claims = serde_json::json!({
            "iss": "https://issuer", "aud": "aud", "sub": "alice",
            "iat": now, "exp": now + 3600, "exp-ext": true,
        });
        let signed = |crit: Option<Vec<String>>| {
            let mut header = jsonwebtoken::Header::new(Algorithm::ES256);
            header.kid = Some(key.kid().to_string());
            header.crit = crit;
            jsonwebtoken::encode(&header, &claims, &encoding).unwrap()
        };

        let refused = jwt
            .verify(&signed(Some(vec!["exp-ext".into()])))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(refused, AuthFailure::Malformed);
        // No extension named: nothing to understand, the token is fine.
        jwt.verify(&signed(Some(Vec::new())))
            .await
            .unwrap()
            .unwrap();
        jwt.verify(&signed(None)).await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn an_unavailable_issuer_is_a_server_failure() {
        let issuer = Arc::new(FakeIssuer::default());
        let mut jwt = verifier(&issuer);
        let start = Instant::now();
        let elapsed = Arc::new(std::sync::Mutex::new(Duration::ZERO));
        let clock = elapsed.clone();
        jwt.now = Box::new(move || start + *clock.lock().unwrap());
        let signer = key();
        let err = jwt.verify(&token(&signer, "")).await.unwrap_err();
        assert_eq!(err.0, "the issuer is down");
        let refused = jwt.verify("not a token").await.unwrap().unwrap_err();
        assert_eq!(refused, AuthFailure::Malformed);
        // The requests right after a failed fetch get its failure, not a fetch each.
        let err = jwt.verify(&token(&signer, "")).await.unwrap_err();
        assert_eq!(err.0, "the issuer is down");
        assert_eq!(issuer.fetches(), 1);
        // A second later the issuer is asked again, and its keys are used once it is back.
        issuer.publish(&[&signer]);
        *elapsed.lock().unwrap() += RETRY_FAILED_LOAD;
        jwt.verify(&token(&signer, "")).await.unwrap().unwrap();
        assert_eq!(issuer.fetches(), 2);
    }
}
