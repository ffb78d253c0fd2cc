//! Signing push notifications: the keys, their document format (kept in a key file locally and
//! in a secret in the cloud, by the hosts' adapters), and the JWT each webhook POST carries so
//! that a receiver can check it came from this agent, unaltered.
//!
//! A [`KeySet`] holds one or more private keys. The *active* key signs; every key is published
//! in the JWKS (`/.well-known/jwks.json`), so a key can be rotated without a gap: publish the
//! new key first, make it active once receivers' JWKS caches have expired, and remove the old
//! one once the tokens it signed have expired. See `docs/push.md`.
//!
//! Private keys are never logged: no type here prints key material in its `Debug` output, and
//! errors name the key (its `kid`) and what is wrong, never its bytes.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::jwk::{Jwk, JwkSet, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

use a2a_protocol::push::{PushClaims, MAX_PUSH_TOKEN_LIFETIME};

/// The default lifetime of a push JWT: long enough for clock skew and a slow receiver, short
/// enough to keep the receiver's replay window small.
pub const DEFAULT_PUSH_TOKEN_LIFETIME: Duration = Duration::from_secs(120);

/// Signature algorithms push JWTs are signed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum SigningAlgorithm {
    /// ECDSA on P-256 with SHA-256: small keys and signatures, the default.
    #[default]
    #[serde(rename = "ES256")]
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256, for receivers that only handle RSA (2048-bit keys).
    #[serde(rename = "RS256")]
    Rs256,
}

impl SigningAlgorithm {
    fn jwt(self) -> Algorithm {
        match self {
            Self::Es256 => Algorithm::ES256,
            Self::Rs256 => Algorithm::RS256,
        }
    }

    /// The JOSE name (`ES256`, `RS256`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Es256 => "ES256",
            Self::Rs256 => "RS256",
        }
    }
}

impl std::str::FromStr for SigningAlgorithm {
    type Err = KeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_uppercase().as_str() {
            "ES256" => Ok(Self::Es256),
            "RS256" => Ok(Self::Rs256),
            _ => Err(KeyError::Invalid(format!(
                "unknown signing algorithm {s:?}; use ES256 or RS256"
            ))),
        }
    }
}

impl fmt::Display for SigningAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why keys could not be loaded, generated or used. Messages name keys by `kid` and files by
/// path; they never contain key material.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The key file or secret is not in the documented format.
    #[error("invalid signing key set: {0}")]
    Invalid(String),
    /// A key could not be read, written or generated.
    #[error("signing key I/O: {0}")]
    Io(String),
    /// Signing failed.
    #[error("signing failed: {0}")]
    Sign(String),
}

/// One private signing key, its `kid` and its public JWK.
#[derive(Clone)]
pub struct SigningKey {
    kid: String,
    algorithm: SigningAlgorithm,
    key: EncodingKey,
    public: Jwk,
}

impl fmt::Debug for SigningKey {
    // Deliberately only the public identity: the private key must never reach a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Loads a PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`). Without a `kid`, the
    /// key's RFC 7638 thumbprint is used, so the same key always gets the same `kid`.
    pub fn from_pkcs8_pem(
        kid: Option<&str>,
        algorithm: SigningAlgorithm,
        pem: &str,
    ) -> Result<Self, KeyError> {
        let name = kid.unwrap_or("(no kid)");
        let key = match algorithm {
            SigningAlgorithm::Es256 => EncodingKey::from_ec_pem(pem.as_bytes()),
            SigningAlgorithm::Rs256 => EncodingKey::from_rsa_pem(pem.as_bytes()),
        }
        .map_err(|e| {
            KeyError::Invalid(format!(
                "key {name} is not a PKCS#8 PEM {algorithm} private key ({:?})",
                e.kind()
            ))
        })?;
        let mut public = Jwk::from_encoding_key(&key, algorithm.jwt()).map_err(|e| {
            KeyError::Invalid(format!(
                "key {name}: cannot derive its public key ({:?})",
                e.kind()
            ))
        })?;
        let kid = match kid {
            Some(kid) if !kid.trim().is_empty() => kid.to_string(),
            Some(_) => return Err(KeyError::Invalid("a key has an empty kid".into())),
            None => public.thumbprint(ThumbprintHash::SHA256).map_err(|e| {
                KeyError::Invalid(format!("cannot compute a key thumbprint ({:?})", e.kind()))
            })?,
        };
        public.common.key_id = Some(kid.clone());
        public.common.public_key_use = Some(jsonwebtoken::jwk::PublicKeyUse::Signature);
        // Prove the key signs, now rather than on the first push.
        let this = Self {
            kid,
            algorithm,
            key,
            public,
        };
        this.sign(&serde_json::json!({}))?;
        Ok(this)
    }

    /// Generates a new key. Returns it with its PKCS#8 PEM, for storing.
    pub fn generate(algorithm: SigningAlgorithm) -> Result<(Self, SecretPem), KeyError> {
        let der = match algorithm {
            SigningAlgorithm::Es256 => {
                use aws_lc_rs::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
                let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING)
                    .map_err(|_| KeyError::Io("generating a P-256 key failed".into()))?;
                pair.to_pkcs8v1()
                    .map_err(|_| KeyError::Io("encoding a P-256 key failed".into()))?
                    .as_ref()
                    .to_vec()
            }
            SigningAlgorithm::Rs256 => {
                use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der};
                use aws_lc_rs::rsa::{KeyPair, KeySize};
                let pair = KeyPair::generate(KeySize::Rsa2048)
                    .map_err(|_| KeyError::Io("generating an RSA key failed".into()))?;
                AsDer::<Pkcs8V1Der<'static>>::as_der(&pair)
                    .map_err(|_| KeyError::Io("encoding an RSA key failed".into()))?
                    .as_ref()
                    .to_vec()
            }
        };
        let pem = SecretPem(pem::encode(&pem::Pem::new("PRIVATE KEY", der)));
        let key = Self::from_pkcs8_pem(None, algorithm, &pem.0)?;
        Ok((key, pem))
    }

    /// The key id (the JWT header's `kid`).
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The algorithm this key signs with.
    pub fn algorithm(&self) -> SigningAlgorithm {
        self.algorithm
    }

    /// The public half, as published in the JWKS (with `kid`, `alg` and `use: sig`).
    pub fn public_jwk(&self) -> &Jwk {
        &self.public
    }

    /// Signs `claims` as a compact JWT with `kid` and `typ: JWT` in the header.
    pub fn sign<C: Serialize>(&self, claims: &C) -> Result<String, KeyError> {
        let mut header = Header::new(self.algorithm.jwt());
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.key)
            .map_err(|e| KeyError::Sign(format!("key {}: {:?}", self.kid, e.kind())))
    }
}

/// A private key in PEM form, on its way to a file. Its `Debug` output is redacted.
pub struct SecretPem(String);

impl SecretPem {
    /// The PEM text. Write it somewhere private; never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretPem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretPem([redacted])")
    }
}

/// A key set document (private keys included). Its `Debug` output is redacted.
pub struct KeyDocumentText(String);

impl KeyDocumentText {
    /// The JSON text. Store it somewhere private; never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for KeyDocumentText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyDocumentText([redacted])")
    }
}

/// The signing keys of a deployment: all are published, the active one signs.
#[derive(Clone, Debug)]
pub struct KeySet {
    keys: Vec<SigningKey>,
    active: usize,
}

/// One entry of the key file / secret format (see [`KeySet::from_json`]).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KeyEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kid: Option<String>,
    #[serde(default)]
    alg: SigningAlgorithm,
    private_key_pem: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    active: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyDocument {
    keys: Vec<KeyEntry>,
}

impl KeySet {
    /// A set of `keys` where the key with `active_kid` signs.
    pub fn new(keys: Vec<SigningKey>, active_kid: &str) -> Result<Self, KeyError> {
        let mut seen = std::collections::HashSet::new();
        for key in &keys {
            if !seen.insert(key.kid.as_str()) {
                return Err(KeyError::Invalid(format!(
                    "two keys share the kid {}",
                    key.kid
                )));
            }
        }
        let active = keys
            .iter()
            .position(|k| k.kid == active_kid)
            .ok_or_else(|| KeyError::Invalid(format!("no key has the kid {active_kid}")))?;
        Ok(Self { keys, active })
    }

    /// A set of one key.
    pub fn single(key: SigningKey) -> Self {
        Self {
            keys: vec![key],
            active: 0,
        }
    }

    /// Parses the key file / secret format, the same locally (the key file) and in the cloud
    /// (the `SecretString` of a Secrets Manager secret or the value of an SSM SecureString):
    ///
    /// ```json
    /// {"keys": [
    ///   {"kid": "2026-11", "alg": "ES256", "privateKeyPem": "-----BEGIN PRIVATE KEY-----\n…", "active": true},
    ///   {"kid": "2026-05", "alg": "ES256", "privateKeyPem": "-----BEGIN PRIVATE KEY-----\n…"}
    /// ]}
    /// ```
    ///
    /// `alg` is `ES256` (default) or `RS256`; `privateKeyPem` is an unencrypted PKCS#8 PEM;
    /// `kid` defaults to the key's RFC 7638 thumbprint. At most one key is `active`; without
    /// one, the first key signs. Error messages quote no part of the input.
    pub fn from_json(text: &str) -> Result<Self, KeyError> {
        let doc: KeyDocument = serde_json::from_str(text).map_err(|e| {
            // serde_json's message can quote the offending value, which may be key material:
            // report only its category and position.
            KeyError::Invalid(format!(
                "not the documented JSON format ({:?} error at line {}, column {})",
                e.classify(),
                e.line(),
                e.column()
            ))
        })?;
        if doc.keys.is_empty() {
            return Err(KeyError::Invalid("the key set has no keys".into()));
        }
        if doc.keys.iter().filter(|k| k.active).count() > 1 {
            return Err(KeyError::Invalid("more than one key is active".into()));
        }
        let active = doc.keys.iter().position(|k| k.active).unwrap_or(0);
        let keys = doc
            .keys
            .iter()
            .map(|entry| {
                SigningKey::from_pkcs8_pem(entry.kid.as_deref(), entry.alg, &entry.private_key_pem)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let active_kid = keys[active].kid.clone();
        Self::new(keys, &active_kid)
    }

    /// A new set of one freshly generated key, and its document in the [`Self::from_json`]
    /// format (to be stored somewhere private: a key file, a secret).
    pub fn generate(algorithm: SigningAlgorithm) -> Result<(Self, KeyDocumentText), KeyError> {
        let (key, pem) = SigningKey::generate(algorithm)?;
        let doc = KeyDocument {
            keys: vec![KeyEntry {
                kid: Some(key.kid().to_string()),
                alg: algorithm,
                private_key_pem: pem.expose().to_string(),
                active: true,
            }],
        };
        let text = serde_json::to_string_pretty(&doc)
            .map_err(|e| KeyError::Io(format!("cannot encode the key set: {e}")))?;
        Ok((Self::single(key), KeyDocumentText(text)))
    }

    /// Whether `text` is a key set document with no keys yet: what a deployment stores as a
    /// placeholder for keys to be generated on first use.
    pub fn is_empty_document(text: &str) -> bool {
        serde_json::from_str::<KeyDocument>(text).is_ok_and(|doc| doc.keys.is_empty())
    }

    /// The key that signs.
    pub fn active(&self) -> &SigningKey {
        &self.keys[self.active]
    }

    /// Every key, the active one included, in their configured order.
    pub fn keys(&self) -> &[SigningKey] {
        &self.keys
    }

    /// The public keys, as served at `/.well-known/jwks.json`.
    pub fn jwks(&self) -> JwkSet {
        JwkSet {
            keys: self.keys.iter().map(|k| k.public.clone()).collect(),
        }
    }

    /// Signs `claims` with the active key.
    pub fn sign<C: Serialize>(&self, claims: &C) -> Result<String, KeyError> {
        self.active().sign(claims)
    }
}

impl KeySet {
    /// Signatures of `card` (spec §8.4), one per key of the set, the active key's first: a
    /// verifier that already knows any of the keys (a JWKS cached before a rotation, or
    /// fetched after one) finds a signature it can check. Each is a JWS with a detached
    /// payload (the card's canonical form, [`a2a_protocol::signing_payload`]) and a protected
    /// header of `alg`, `kid`, `typ: JOSE` and, when given, `jku` (where the JWKS is).
    pub fn sign_card(
        &self,
        card: &a2a_protocol::AgentCard,
        jku: Option<&str>,
    ) -> Result<Vec<a2a_protocol::AgentCardSignature>, KeyError> {
        let payload = a2a_protocol::signing_payload(card)
            .map_err(|e| KeyError::Sign(format!("the card has no canonical form: {e}")))?;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let payload = b64.encode(payload.as_bytes());
        let active = self.active().kid();
        let ordered =
            std::iter::once(self.active()).chain(self.keys.iter().filter(|k| k.kid() != active));
        ordered
            .map(|key| {
                let mut header = serde_json::json!({
                    "alg": key.algorithm.as_str(),
                    "kid": key.kid,
                    "typ": a2a_protocol::CARD_SIGNATURE_TYPE,
                });
                if let Some(jku) = jku {
                    header["jku"] = jku.into();
                }
                let protected = b64.encode(header.to_string().as_bytes());
                let signing_input = format!("{protected}.{payload}");
                let signature = jsonwebtoken::crypto::sign(
                    signing_input.as_bytes(),
                    &key.key,
                    key.algorithm.jwt(),
                )
                .map_err(|e| KeyError::Sign(format!("key {}: {:?}", key.kid, e.kind())))?;
                Ok(a2a_protocol::AgentCardSignature {
                    protected,
                    signature,
                    header: None,
                })
            })
            .collect()
    }
}

/// The SHA-256 of `body`, base64url without padding (the `bodySha256` claim).
pub fn body_sha256(body: &[u8]) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, body);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// Where a deployment's signing keys come from (a secret, a key file): the port the push
/// signer and the JWKS read through, so a rotation reaches running instances without a
/// redeploy. Implemented by the hosts' adapters; the core does no I/O itself.
#[async_trait::async_trait]
pub trait SigningKeySource: Send + Sync + fmt::Debug {
    /// The current key set. The error says why there is none (no keys yet, unreadable, not
    /// the documented format), never what the source holds.
    async fn load(&self) -> Result<KeySet, KeyError>;

    /// How long a loaded set is used before [`Self::load`] is asked again.
    fn refresh(&self) -> Duration;
}

/// How soon a source that failed to load is asked again (or its refresh time, if shorter).
/// Without it, every request that needs keys reads the secret again while none can be loaded:
/// the card function's public JWKS before the first push (the secret then holds no keys, for
/// as long as the deployment sends none), or every authenticated request while a secret is
/// unreadable; each read is a billed Secrets Manager call, under that API's rate limit.
pub(crate) const RETRY_FAILED_LOAD: Duration = Duration::from_secs(1);

/// The signing keys as an instance uses them: a fixed set, or a [`SigningKeySource`] loaded on
/// first use and again once its refresh time has passed. A failed reload keeps the set loaded
/// before (a secret briefly unreadable does not stop signing); with nothing loaded yet, the
/// error is the caller's to report. A failed load is tried again a second later at the
/// soonest (`RETRY_FAILED_LOAD`).
pub struct SigningKeys {
    source: Option<Arc<dyn SigningKeySource>>,
    cache: tokio::sync::Mutex<KeyCache>,
}

/// The keys last loaded, and the last failure since, each with when it happened.
#[derive(Default)]
struct KeyCache {
    loaded: Option<(Instant, Arc<KeySet>)>,
    failed: Option<(Instant, KeyError)>,
}

impl KeyCache {
    /// The keys loaded before, or the failure's error when there are none.
    fn answer(&self, err: &KeyError) -> Result<Arc<KeySet>, KeyError> {
        match &self.loaded {
            Some((_, keys)) => Ok(keys.clone()),
            None => Err(err.clone()),
        }
    }
}

impl fmt::Debug for SigningKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKeys")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl SigningKeys {
    /// A set that never changes (the local server, tests).
    pub fn fixed(keys: KeySet) -> Self {
        Self {
            source: None,
            cache: tokio::sync::Mutex::new(KeyCache {
                loaded: Some((Instant::now(), Arc::new(keys))),
                failed: None,
            }),
        }
    }

    /// Keys read from `source` on first use, and again every [`SigningKeySource::refresh`].
    pub fn from_source(source: Arc<dyn SigningKeySource>) -> Self {
        Self {
            source: Some(source),
            cache: tokio::sync::Mutex::new(KeyCache::default()),
        }
    }

    /// The current key set: the cached one while fresh, else a new load.
    pub async fn current(&self) -> Result<Arc<KeySet>, KeyError> {
        let mut cache = self.cache.lock().await;
        let Some(source) = &self.source else {
            let (_, keys) = cache.loaded.as_ref().expect("a fixed set is always loaded");
            return Ok(keys.clone());
        };
        let refresh = source.refresh();
        if let Some((at, keys)) = &cache.loaded {
            if at.elapsed() < refresh {
                return Ok(keys.clone());
            }
        }
        if let Some((at, err)) = &cache.failed {
            if at.elapsed() < refresh.min(RETRY_FAILED_LOAD) {
                return cache.answer(err);
            }
        }
        match source.load().await {
            Ok(keys) => {
                let keys = Arc::new(keys);
                cache.loaded = Some((Instant::now(), keys.clone()));
                cache.failed = None;
                Ok(keys)
            }
            Err(err) => {
                if cache.loaded.is_some() {
                    tracing::warn!(error = %err, "cannot reload the push signing keys; using the keys loaded before");
                } else {
                    tracing::warn!(error = %err, "no push signing keys");
                }
                let answer = cache.answer(&err);
                cache.failed = Some((Instant::now(), err));
                answer
            }
        }
    }
}

/// Signs push notifications for one agent: its keys and its issuer URL.
#[derive(Clone)]
pub struct PushSigner {
    keys: Arc<SigningKeys>,
    issuer: String,
    lifetime: Duration,
}

impl fmt::Debug for PushSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushSigner")
            .field("issuer", &self.issuer)
            .field("keys", &self.keys)
            .field("lifetime", &self.lifetime)
            .finish()
    }
}

impl PushSigner {
    /// A signer issuing tokens as `issuer` (the agent's base URL, where the card and the JWKS
    /// are served), valid for [`DEFAULT_PUSH_TOKEN_LIFETIME`].
    pub fn new(keys: KeySet, issuer: impl Into<String>) -> Self {
        Self::with_keys(Arc::new(SigningKeys::fixed(keys)), issuer)
    }

    /// As [`Self::new`], with keys that may change while the instance runs (see
    /// [`SigningKeys`]).
    pub fn with_keys(keys: Arc<SigningKeys>, issuer: impl Into<String>) -> Self {
        Self {
            keys,
            issuer: issuer.into().trim_end_matches('/').to_string(),
            lifetime: DEFAULT_PUSH_TOKEN_LIFETIME,
        }
    }

    /// Sets the token lifetime, capped at [`MAX_PUSH_TOKEN_LIFETIME`].
    pub fn with_lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = lifetime.min(MAX_PUSH_TOKEN_LIFETIME);
        self
    }

    /// The `iss` of every token.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The current keys (all published, the active one signs).
    pub async fn keys(&self) -> Result<Arc<KeySet>, KeyError> {
        self.keys.current().await
    }

    /// The claims for one POST of `body` to `audience`, issued now.
    pub fn claims(
        &self,
        audience: &str,
        task_id: &str,
        seq: u64,
        config_id: &str,
        body: &[u8],
    ) -> PushClaims {
        let iat = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        PushClaims {
            iss: self.issuer.clone(),
            aud: audience.to_string(),
            iat,
            exp: iat + self.lifetime.as_secs(),
            jti: uuid::Uuid::new_v4().to_string(),
            task_id: task_id.to_string(),
            seq,
            config_id: config_id.to_string(),
            body_sha256: body_sha256(body),
        }
    }

    /// Signs `claims` with the active key of the current set.
    pub async fn sign(&self, claims: &PushClaims) -> Result<String, KeyError> {
        self.keys.current().await?.sign(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_round_trip_through_the_file_format() {
        for alg in [SigningAlgorithm::Es256, SigningAlgorithm::Rs256] {
            let (key, pem) = SigningKey::generate(alg).unwrap();
            assert!(pem.expose().starts_with("-----BEGIN PRIVATE KEY-----"));
            let text = serde_json::json!({"keys": [
                {"alg": alg, "privateKeyPem": pem.expose()},
            ]})
            .to_string();
            let set = KeySet::from_json(&text).unwrap();
            // Without a kid, the thumbprint is the kid: stable for the same key.
            assert_eq!(set.active().kid(), key.kid());
            let jwks = set.jwks();
            assert_eq!(jwks.keys.len(), 1);
            assert_eq!(jwks.keys[0].common.key_id.as_deref(), Some(key.kid()));
            let token = set.sign(&serde_json::json!({"a": 1})).unwrap();
            let header = jsonwebtoken::decode_header(&token).unwrap();
            assert_eq!(header.kid.as_deref(), Some(key.kid()));
            assert_eq!(header.alg, alg.jwt());
        }
    }

    #[test]
    fn the_active_flag_chooses_the_signing_key() {
        let (_, a) = SigningKey::generate(SigningAlgorithm::Es256).unwrap();
        let (_, b) = SigningKey::generate(SigningAlgorithm::Es256).unwrap();
        let text = serde_json::json!({"keys": [
            {"kid": "old", "privateKeyPem": a.expose()},
            {"kid": "new", "privateKeyPem": b.expose(), "active": true},
        ]})
        .to_string();
        let set = KeySet::from_json(&text).unwrap();
        assert_eq!(set.active().kid(), "new");
        assert_eq!(set.jwks().keys.len(), 2);
    }

    #[test]
    fn bad_key_sets_are_refused_without_echoing_them() {
        let (_, a) = SigningKey::generate(SigningAlgorithm::Es256).unwrap();
        let secret = a.expose();
        for text in [
            "{}".to_string(),
            r#"{"keys": []}"#.to_string(),
            serde_json::json!({"keys": [{"privateKeyPem": "nope"}]}).to_string(),
            serde_json::json!({"keys": [{"alg": secret, "privateKeyPem": secret}]}).to_string(),
            serde_json::json!({"keys": [{"alg": "RS256", "privateKeyPem": secret}]}).to_string(),
            serde_json::json!({"keys": [
                {"kid": "x", "privateKeyPem": secret}, {"kid": "x", "privateKeyPem": secret}
            ]})
            .to_string(),
            serde_json::json!({"keys": [
                {"kid": "x", "privateKeyPem": secret, "active": true},
                {"kid": "y", "privateKeyPem": secret, "active": true}
            ]})
            .to_string(),
        ] {
            let err = KeySet::from_json(&text).unwrap_err().to_string();
            assert!(!err.contains("PRIVATE KEY"), "{err}");
            let body_line = secret.lines().nth(1).unwrap();
            assert!(!err.contains(body_line), "{err}");
        }
    }

    #[test]
    fn debug_output_never_shows_key_material() {
        let (key, pem) = SigningKey::generate(SigningAlgorithm::Es256).unwrap();
        let set = KeySet::single(key.clone());
        let signer = PushSigner::new(set.clone(), "http://agent");
        for text in [
            format!("{key:?}"),
            format!("{pem:?}"),
            format!("{set:?}"),
            format!("{signer:?}"),
        ] {
            assert!(!text.contains("PRIVATE"), "{text}");
            assert!(
                !text.contains(pem.expose().lines().nth(1).unwrap()),
                "{text}"
            );
        }
    }

    /// A key source whose answers the test sets: a set, or an error.
    #[derive(Debug, Default)]
    struct Scripted {
        answer: std::sync::Mutex<Option<KeySet>>,
        loads: std::sync::atomic::AtomicUsize,
        refresh: Duration,
    }

    #[async_trait::async_trait]
    impl SigningKeySource for Scripted {
        async fn load(&self) -> Result<KeySet, KeyError> {
            self.loads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.answer
                .lock()
                .unwrap()
                .clone()
                .ok_or_else(|| KeyError::Invalid("the key set has no keys".into()))
        }

        fn refresh(&self) -> Duration {
            self.refresh
        }
    }

    fn generated() -> KeySet {
        KeySet::single(SigningKey::generate(SigningAlgorithm::Es256).unwrap().0)
    }

    #[tokio::test]
    async fn a_rotated_key_set_is_picked_up_after_the_refresh_time() {
        let source = Arc::new(Scripted::default());
        let signer = PushSigner::with_keys(
            Arc::new(SigningKeys::from_source(source.clone())),
            "http://agent",
        );
        // Nothing to sign with yet: a clear error, at signing time, not at start.
        let claims = signer.claims("http://hook", "t1", 1, "c1", b"{}");
        let err = signer.sign(&claims).await.unwrap_err().to_string();
        assert!(err.contains("no keys"), "{err}");

        let first = generated();
        *source.answer.lock().unwrap() = Some(first.clone());
        assert!(signer.sign(&claims).await.is_ok());
        let rotated = generated();
        *source.answer.lock().unwrap() = Some(rotated.clone());
        // refresh = 0: every use reloads, so the rotation is seen at once.
        assert_eq!(
            signer.keys().await.unwrap().active().kid(),
            rotated.active().kid()
        );
        // A reload that fails keeps the keys loaded before.
        *source.answer.lock().unwrap() = None;
        assert_eq!(
            signer.keys().await.unwrap().active().kid(),
            rotated.active().kid()
        );
    }

    #[tokio::test]
    async fn fresh_keys_are_not_loaded_again() {
        let source = Arc::new(Scripted {
            refresh: Duration::from_secs(300),
            ..Scripted::default()
        });
        *source.answer.lock().unwrap() = Some(generated());
        let keys = SigningKeys::from_source(source.clone());
        for _ in 0..3 {
            keys.current().await.unwrap();
        }
        assert_eq!(source.loads.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_failed_load_is_not_tried_again_on_every_call() {
        let loads = |source: &Scripted| source.loads.load(std::sync::atomic::Ordering::SeqCst);
        // No keys yet (the card function before the first push): one read answers the calls
        // that follow it within RETRY_FAILED_LOAD, each with the same error.
        let source = Arc::new(Scripted {
            refresh: Duration::from_secs(300),
            ..Scripted::default()
        });
        let keys = SigningKeys::from_source(source.clone());
        for _ in 0..3 {
            let err = keys.current().await.unwrap_err();
            assert!(err.to_string().contains("no keys"), "{err}");
        }
        assert_eq!(loads(&source), 1);

        // A refresh time shorter than the retry bounds it: the keys appear once they exist.
        let source = Arc::new(Scripted {
            refresh: Duration::from_millis(20),
            ..Scripted::default()
        });
        let keys = SigningKeys::from_source(source.clone());
        keys.current().await.unwrap_err();
        let first = generated();
        *source.answer.lock().unwrap() = Some(first.clone());
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(
            keys.current().await.unwrap().active().kid(),
            first.active().kid()
        );
        assert_eq!(loads(&source), 2);
    }

    #[test]
    fn claims_bind_the_body_and_cap_the_lifetime() {
        let (key, _) = SigningKey::generate(SigningAlgorithm::Es256).unwrap();
        let signer = PushSigner::new(KeySet::single(key), "http://agent/")
            .with_lifetime(Duration::from_secs(3600));
        let claims = signer.claims("http://hook", "t1", 3, "c1", b"{}");
        assert_eq!(claims.iss, "http://agent");
        assert_eq!(claims.exp - claims.iat, 300);
        // echo -n '{}' | sha256sum, in base64url.
        assert_eq!(
            claims.body_sha256,
            "RBNvo1WzZ4oRRq0W9-hknpT7T8If536DEMBg9hyq_4o"
        );
        let json = serde_json::to_value(&claims).unwrap();
        for name in [
            "iss",
            "aud",
            "iat",
            "exp",
            "jti",
            "taskId",
            "seq",
            "configId",
            "bodySha256",
        ] {
            assert!(json.get(name).is_some(), "{name}");
        }
    }
}
