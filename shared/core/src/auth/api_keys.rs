//! API keys: `a2a_<id>_<secret>` keys, stored only as SHA-256 hashes in a JSON key document
//! ([`ApiKeyDocument`]) that a host keeps behind the [`ApiKeySource`] port.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

use super::{AuthFailure, Permissions, Principal};
use crate::signing::RETRY_FAILED_LOAD;

/// The prefix of every API key: `a2a_<id>_<secret>`.
pub const API_KEY_PREFIX: &str = "a2a";

/// Where the API key travels, as in the card's `apiKeySecurityScheme.location`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApiKeyLocation {
    /// A request header.
    #[default]
    Header,
    /// A query parameter (visible in access logs and browser history: prefer the header).
    Query,
}

impl ApiKeyLocation {
    /// `header` or `query`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Header => "header",
            Self::Query => "query",
        }
    }
}

impl std::str::FromStr for ApiKeyLocation {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "header" => Ok(Self::Header),
            "query" => Ok(Self::Query),
            _ => Err(format!(
                "unknown API key location {s:?}: use header or query"
            )),
        }
    }
}

/// One issued API key, as stored: never the key itself, only its SHA-256.
///
/// A fast hash is enough (no bcrypt or argon2): the secret is 256 random bits, so there is
/// nothing to brute-force, and a fast check keeps every request cheap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyRecord {
    /// The key id, also the second part of the key (`a2a_<id>_…`): lookup is by id.
    pub id: String,
    /// Who the key belongs to: tasks are owned by the principal, so a replacement key with
    /// the same principal sees the same tasks. Defaults to the key id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// base64url (unpadded) SHA-256 of the whole key.
    pub sha256: String,
    /// What the key allows.
    pub permissions: Permissions,
    /// A note for humans (whose key it is).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// When the key was issued (RFC 3339).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub created_at: String,
    /// A revoked key is refused. It stays in the document so that its id is not reused and the
    /// revocation is visible.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub revoked: bool,
}

impl ApiKeyRecord {
    /// The principal tasks created with this key belong to.
    pub fn principal(&self) -> &str {
        self.principal.as_deref().unwrap_or(&self.id)
    }
}

/// A newly issued API key. Shown once to whoever issued it; its `Debug` output is redacted.
pub struct IssuedKey(String);

impl IssuedKey {
    /// The key, to hand to the client. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for IssuedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IssuedKey([redacted])")
    }
}

/// The API key document: a JSON file locally, a secret (Secrets Manager / SSM) in the cloud.
///
/// ```json
/// {"keys": [{"id": "3f9c1a2b4d5e6f70", "sha256": "…", "permissions": ["read", "send"],
///            "description": "alice's laptop", "createdAt": "2026-11-22T10:00:00Z"}]}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ApiKeyDocument {
    /// Every key ever issued, revoked ones included.
    #[serde(default)]
    pub keys: Vec<ApiKeyRecord>,
}

impl ApiKeyDocument {
    /// Parses a key document; duplicate ids are refused (a lookup must be unambiguous).
    pub fn from_json(text: &str) -> Result<Self, crate::ConfigError> {
        let unusable =
            |reason: String| crate::ConfigError::unreadable("the API key document", reason);
        let doc: Self = serde_json::from_str(text)
            .map_err(|e| unusable(format!("not an API key document: {e}")))?;
        let mut seen = std::collections::HashSet::new();
        for key in &doc.keys {
            if !seen.insert(key.id.as_str()) {
                return Err(unusable(format!("the API key id {} appears twice", key.id)));
            }
        }
        Ok(doc)
    }

    /// The document as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a key document always serialises")
    }

    /// Issues a new key: records its hash and returns the key, which exists nowhere else.
    pub fn issue(
        &mut self,
        permissions: Permissions,
        principal: Option<String>,
        description: String,
    ) -> Result<(ApiKeyRecord, IssuedKey), String> {
        let mut id_bytes = [0u8; 8];
        let mut secret = [0u8; 32];
        aws_lc_rs::rand::fill(&mut id_bytes).map_err(|_| "no randomness available")?;
        aws_lc_rs::rand::fill(&mut secret).map_err(|_| "no randomness available")?;
        let id: String = id_bytes.iter().map(|b| format!("{b:02x}")).collect();
        let key = format!(
            "{API_KEY_PREFIX}_{id}_{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret)
        );
        let record = ApiKeyRecord {
            id,
            principal: principal.filter(|p| !p.trim().is_empty()),
            sha256: sha256_b64(key.as_bytes()),
            permissions,
            description,
            created_at: a2a_protocol::Timestamp::now().to_string(),
            revoked: false,
        };
        self.keys.push(record.clone());
        Ok((record, IssuedKey(key)))
    }

    /// Marks key `id` revoked; `false` if there is no such key.
    pub fn revoke(&mut self, id: &str) -> bool {
        match self.keys.iter_mut().find(|k| k.id == id) {
            Some(key) => {
                key.revoked = true;
                true
            }
            None => false,
        }
    }
}

fn sha256_b64(bytes: &[u8]) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// Where the API key document is kept: the port a host implements (a file locally, a
/// Secrets Manager secret on Lambda). The cache in front of it keeps the keys in force.
#[async_trait]
pub trait ApiKeySource: Send + Sync + fmt::Debug {
    /// The document as it is now, or `None` when it is known not to have changed since this
    /// source last returned one (a file whose modification time and size are the same).
    async fn load(&self) -> Result<Option<ApiKeyDocument>, String>;

    /// How long a loaded document is used before the source is asked again: zero asks on
    /// every request (a cheap check, such as a file's modification time); a fetched secret
    /// is asked every so often, so a revocation takes effect within that time.
    fn refresh(&self) -> Duration;
}

/// A fixed document: loaded once, never asked again.
#[async_trait]
impl ApiKeySource for ApiKeyDocument {
    async fn load(&self) -> Result<Option<ApiKeyDocument>, String> {
        Ok(Some(self.clone()))
    }

    fn refresh(&self) -> Duration {
        Duration::MAX
    }
}

/// How API keys are checked.
#[derive(Debug, Clone)]
pub struct ApiKeyConfig {
    /// Header or query parameter.
    pub location: ApiKeyLocation,
    /// Its name, e.g. `X-API-Key` (header) or `api_key` (query).
    pub name: String,
    /// Where the issued keys' hashes are.
    pub source: Arc<dyn ApiKeySource>,
}

/// The keys in force, by id, when they were loaded, and when a load last failed since.
#[derive(Default)]
struct KeyCache {
    keys: HashMap<String, ApiKeyRecord>,
    loaded_at: Option<Instant>,
    failed_at: Option<Instant>,
}

/// API key checking: the configuration and a cache of the source's keys.
pub(super) struct ApiKeys {
    pub(super) config: ApiKeyConfig,
    cache: Mutex<KeyCache>,
}

impl ApiKeys {
    pub(super) fn new(config: ApiKeyConfig) -> Self {
        Self {
            config,
            cache: Mutex::new(KeyCache::default()),
        }
    }

    /// Brings the cache up to date with the source. On a failure the previous keys stay in
    /// force (a transient Secrets Manager error must not lock everybody out, nor let anybody
    /// in) and the error is logged. A failed load is tried again a second later at the soonest,
    /// not by every request in between.
    async fn refresh(&self, cache: &mut KeyCache) {
        let refresh = self.config.source.refresh();
        if cache.loaded_at.is_some_and(|at| at.elapsed() < refresh)
            || cache
                .failed_at
                .is_some_and(|at| at.elapsed() < refresh.min(RETRY_FAILED_LOAD))
        {
            return;
        }
        match self.config.source.load().await {
            Ok(Some(doc)) => {
                cache.keys = index(&doc);
                cache.loaded_at = Some(Instant::now());
                cache.failed_at = None;
            }
            // Unchanged since the keys in the cache were loaded.
            Ok(None) => cache.failed_at = None,
            Err(err) => {
                tracing::error!(%err, "cannot load the API keys");
                cache.failed_at = Some(Instant::now());
            }
        }
    }

    pub(super) async fn authenticate(&self, presented: &str) -> Result<Principal, AuthFailure> {
        let presented = presented.trim();
        let mut parts = presented.splitn(3, '_');
        let (Some(API_KEY_PREFIX), Some(id), Some(secret)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(AuthFailure::Malformed);
        };
        if id.is_empty() || secret.is_empty() {
            return Err(AuthFailure::Malformed);
        }
        let mut cache = self.cache.lock().await;
        self.refresh(&mut cache).await;
        let record = cache.keys.get(id).ok_or(AuthFailure::InvalidKey)?;
        let hash = sha256_b64(presented.as_bytes());
        // Constant time, although comparing hashes leaks little: habits matter with secrets.
        let matches = aws_lc_rs::constant_time::verify_slices_are_equal(
            hash.as_bytes(),
            record.sha256.as_bytes(),
        )
        .is_ok();
        if !matches || record.revoked {
            return Err(AuthFailure::InvalidKey);
        }
        Ok(Principal {
            id: format!("key:{}", record.principal()),
            authenticated: true,
            permissions: record.permissions,
        })
    }
}

fn index(doc: &ApiKeyDocument) -> HashMap<String, ApiKeyRecord> {
    doc.keys.iter().map(|k| (k.id.clone(), k.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A secret that cannot be read, counting how often it is asked.
    #[derive(Debug)]
    struct Unreadable {
        loads: std::sync::atomic::AtomicUsize,
        refresh: Duration,
    }

    #[async_trait]
    impl ApiKeySource for Unreadable {
        async fn load(&self) -> Result<Option<ApiKeyDocument>, String> {
            self.loads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Err("AccessDeniedException".into())
        }

        fn refresh(&self) -> Duration {
            self.refresh
        }
    }

    #[tokio::test]
    async fn an_unreadable_source_is_not_asked_by_every_request() {
        for (refresh, asked) in [(Duration::from_secs(300), 1), (Duration::ZERO, 3)] {
            let source = Arc::new(Unreadable {
                loads: Default::default(),
                refresh,
            });
            let keys = ApiKeys::new(ApiKeyConfig {
                location: ApiKeyLocation::Header,
                name: "X-API-Key".into(),
                source: source.clone(),
            });
            for _ in 0..3 {
                let refused = keys.authenticate("a2a_id_secret").await.unwrap_err();
                assert!(matches!(refused, AuthFailure::InvalidKey), "{refused:?}");
            }
            // A source asked on every request (a file's cheap check) still is.
            let loads = source.loads.load(std::sync::atomic::Ordering::SeqCst);
            assert_eq!(loads, asked, "refresh {refresh:?}");
        }
    }

    #[test]
    fn duplicate_key_ids_are_refused() {
        let record = r#"{"id":"a","sha256":"x","permissions":[]}"#;
        let text = format!(r#"{{"keys":[{record},{record}]}}"#);
        assert!(ApiKeyDocument::from_json(&text).is_err());
    }
}
