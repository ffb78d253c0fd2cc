//! Who is calling: the auth layer that turns a request's credentials into a [`Principal`], the
//! permissions each operation needs, and what the agent card says about it.
//!
//! A deployment runs in one [`Auth`] mode:
//!
//! - **none**: every caller is the anonymous principal, unauthenticated, with every
//!   permission. The local default; never expose it beyond your machine.
//! - **API keys**: `a2a_<id>_<secret>` keys, stored only as SHA-256 hashes in a JSON key
//!   document ([`ApiKeyDocument`]): a file the `a2a-local keys` command writes, or a document the
//!   host fetches (Secrets Manager, SSM) through [`ApiKeySource::Fetched`]. The key travels in
//!   the header or query parameter the card's `apiKeySecurityScheme` names.
//! - **JWT**: bearer tokens from one OpenID issuer, verified against its JWKS ([`JwtConfig`]).
//!
//! The front door hands the request's [`Credentials`] to [`Auth::authenticate`] and builds the
//! [`crate::CallContext`] from the principal: its owner is derived from the principal and the
//! tenant, so every store access is scoped to the caller. Each operation then checks its
//! [`Permission`].
//!
//! Nothing here logs a credential: failures are logged by reason, never with the token or key.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use a2a_protocol::{A2AError, SecurityRequirement, SecurityScheme, StringList};
use base64::Engine as _;
use futures::future::BoxFuture;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::Mutex;

mod settings;

pub use settings::*;

/// The `realm` of every `WWW-Authenticate` challenge.
const REALM: &str = "a2a";

// ---------------------------------------------------------------------------------------------
// Permissions

/// What an operation needs the caller to be allowed to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// GetTask, ListTasks, SubscribeToTask, GetExtendedAgentCard.
    Read,
    /// SendMessage, SendStreamingMessage.
    Send,
    /// CancelTask.
    Cancel,
    /// The four push-config operations.
    Push,
}

impl Permission {
    /// Every permission.
    pub const ALL: [Permission; 4] = [Self::Read, Self::Send, Self::Cancel, Self::Push];

    /// The name in key documents and on the command line: `read`, `send`, `cancel`, `push`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Send => "send",
            Self::Cancel => "cancel",
            Self::Push => "push",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Self::Read => 1,
            Self::Send => 2,
            Self::Cancel => 4,
            Self::Push => 8,
        }
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Permission {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown permission {s:?}: use read, send, cancel or push"))
    }
}

/// A set of [`Permission`]s. Serialised as a list of names (`["read", "send"]`).
#[derive(Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Permissions(u8);

impl Permissions {
    /// No permission at all.
    pub const NONE: Permissions = Permissions(0);

    /// Every permission.
    pub fn all() -> Self {
        Permission::ALL.into_iter().collect()
    }

    /// Whether `permission` is in the set.
    pub fn contains(self, permission: Permission) -> bool {
        self.0 & permission.bit() != 0
    }

    /// The set with `permission` added.
    pub fn with(self, permission: Permission) -> Self {
        Self(self.0 | permission.bit())
    }

    /// The permissions in the set, in the order of [`Permission::ALL`].
    pub fn iter(self) -> impl Iterator<Item = Permission> {
        Permission::ALL
            .into_iter()
            .filter(move |p| self.contains(*p))
    }

    /// Parses a comma- or space-separated list of names; `all` means every permission.
    pub fn parse_list(text: &str) -> Result<Self, String> {
        let mut set = Self::NONE;
        for name in text.split([',', ' ']).filter(|n| !n.trim().is_empty()) {
            if name.trim().eq_ignore_ascii_case("all") {
                set = Self::all();
            } else {
                set = set.with(name.parse()?);
            }
        }
        Ok(set)
    }
}

impl FromIterator<Permission> for Permissions {
    fn from_iter<I: IntoIterator<Item = Permission>>(iter: I) -> Self {
        iter.into_iter().fold(Self::NONE, Self::with)
    }
}

impl fmt::Debug for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl fmt::Display for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(Permission::as_str).collect();
        f.write_str(&names.join(","))
    }
}

impl Serialize for Permissions {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter().map(Permission::as_str))
    }
}

impl<'de> Deserialize<'de> for Permissions {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(deserializer)?;
        names
            .iter()
            .map(|n| n.parse::<Permission>())
            .collect::<Result<Permissions, _>>()
            .map_err(serde::de::Error::custom)
    }
}

// ---------------------------------------------------------------------------------------------
// Principals and credentials

/// The caller, as the auth layer established it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The stable identity tasks are owned by (with the tenant): `anonymous`, `key:<principal>`
    /// for API keys, `jwt:<issuer-length>:<issuer><subject>` for JWTs. Never a credential.
    pub id: String,
    /// Whether credentials were checked (false only in auth mode `none`).
    pub authenticated: bool,
    /// What the caller may do.
    pub permissions: Permissions,
}

impl Principal {
    /// The caller in auth mode `none`: unauthenticated, allowed everything.
    pub fn anonymous() -> Self {
        Self {
            id: "anonymous".into(),
            authenticated: false,
            permissions: Permissions::all(),
        }
    }

    /// The principal of a verified JWT. The issuer is length-prefixed so no two
    /// (issuer, subject) pairs map to the same id.
    fn from_jwt(issuer: &str, subject: &str, permissions: Permissions) -> Self {
        Self {
            id: format!("jwt:{}:{issuer}{subject}", issuer.len()),
            authenticated: true,
            permissions,
        }
    }
}

/// The credentials a request carries, as the front door found them. Borrowed: nothing here
/// outlives the request.
#[derive(Clone, Copy, Default)]
pub struct Credentials<'a> {
    /// The `Authorization` header, if any.
    pub authorization: Option<&'a str>,
    /// The API key from the header or query parameter named by [`Auth::api_key_location`].
    pub api_key: Option<&'a str>,
}

impl fmt::Debug for Credentials<'_> {
    // Only whether they are present: credentials never reach a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("authorization", &self.authorization.map(|_| "[redacted]"))
            .field("api_key", &self.api_key.map(|_| "[redacted]"))
            .finish()
    }
}

/// Why credentials were refused. Each has a fixed description: it goes to the client (in the
/// error message and the `WWW-Authenticate` challenge) and to the log, so it never quotes the
/// credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    /// No credentials at all.
    Missing,
    /// `Authorization` is not `Bearer <token>`.
    WrongScheme,
    /// The token or key is not well formed.
    Malformed,
    /// The token's algorithm is not on the allow-list, or does not fit its key.
    Algorithm,
    /// No key of the issuer has the token's `kid`.
    UnknownKey,
    /// The signature does not verify.
    BadSignature,
    /// `exp` has passed.
    Expired,
    /// `nbf` is in the future.
    NotYetValid,
    /// `aud` names another audience.
    WrongAudience,
    /// `iss` names another issuer.
    WrongIssuer,
    /// The API key is unknown, revoked, or its secret is wrong.
    InvalidKey,
}

impl AuthFailure {
    /// A short, fixed description (safe in a quoted-string: no quotes, no backslashes).
    pub fn description(self) -> &'static str {
        match self {
            Self::Missing => "credentials are required",
            Self::WrongScheme => "the Authorization header must be Bearer <token>",
            Self::Malformed => "the credentials are malformed",
            Self::Algorithm => "the token's algorithm is not accepted",
            Self::UnknownKey => "the token is signed with an unknown key",
            Self::BadSignature => "the token's signature does not verify",
            Self::Expired => "the token has expired",
            Self::NotYetValid => "the token is not valid yet",
            Self::WrongAudience => "the token is for another audience",
            Self::WrongIssuer => "the token is from another issuer",
            Self::InvalidKey => "the API key is not valid",
        }
    }

    fn into_error(self) -> A2AError {
        tracing::info!(reason = self.description(), "authentication failed");
        A2AError::Unauthenticated(format!("Unauthenticated: {}", self.description()))
    }
}

// ---------------------------------------------------------------------------------------------
// API keys

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
    pub fn from_json(text: &str) -> Result<Self, String> {
        let doc: Self =
            serde_json::from_str(text).map_err(|e| format!("not an API key document: {e}"))?;
        let mut seen = std::collections::HashSet::new();
        for key in &doc.keys {
            if !seen.insert(key.id.as_str()) {
                return Err(format!("the API key id {} appears twice", key.id));
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

    /// Reads the document at `path`; a missing file is an empty document.
    pub fn load(path: &Path) -> Result<Self, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_json(&text).map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// Writes the document to `path` atomically (a temporary file, then a rename), readable
    /// by the owner only: it holds no key, but it decides who gets in.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let tmp = path.with_extension("json.tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options
            .open(&tmp)
            .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::io::Write::write_all(&mut file, self.to_json().as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, path).map_err(|e| format!("cannot replace {}: {e}", path.display()))
    }
}

fn sha256_b64(bytes: &[u8]) -> String {
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// A host's way of fetching the key document (on Lambda: Secrets Manager or SSM).
pub type FetchKeyDocument =
    Arc<dyn Fn() -> BoxFuture<'static, Result<String, String>> + Send + Sync>;

/// Where the API key document comes from.
#[derive(Clone)]
pub enum ApiKeySource {
    /// A file, re-read whenever its modification time or size changes, so an issued or
    /// revoked key takes effect on the next request. A missing file means no keys.
    File(PathBuf),
    /// A document fetched by the host, fetched again every `refresh` (a revocation takes
    /// effect within that time). On Lambda: the secret named by the template's API-key secret
    /// ARN, fetched with the AWS SDK.
    Fetched {
        /// Fetches the document's JSON text.
        fetch: FetchKeyDocument,
        /// How long a fetched document is used.
        refresh: Duration,
    },
    /// A fixed document.
    Static(ApiKeyDocument),
}

impl fmt::Debug for ApiKeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => f.debug_tuple("File").field(path).finish(),
            Self::Fetched { refresh, .. } => f
                .debug_struct("Fetched")
                .field("refresh", refresh)
                .finish_non_exhaustive(),
            Self::Static(doc) => write!(f, "Static({} keys)", doc.keys.len()),
        }
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
    pub source: ApiKeySource,
}

/// The keys in force, by id, and what they were loaded from.
#[derive(Default)]
struct KeyCache {
    keys: HashMap<String, ApiKeyRecord>,
    /// The file's (modification time, length), for [`ApiKeySource::File`].
    file_stamp: Option<(SystemTime, u64)>,
    loaded_at: Option<Instant>,
}

struct ApiKeys {
    config: ApiKeyConfig,
    cache: Mutex<KeyCache>,
}

impl ApiKeys {
    fn new(config: ApiKeyConfig) -> Self {
        let mut cache = KeyCache::default();
        if let ApiKeySource::Static(doc) = &config.source {
            cache.keys = index(doc);
            cache.loaded_at = Some(Instant::now());
        }
        Self {
            config,
            cache: Mutex::new(cache),
        }
    }

    /// Brings the cache up to date with the source. On a failure the previous keys stay in
    /// force (a transient Secrets Manager error must not lock everybody out, nor let anybody
    /// in) and the error is logged.
    async fn refresh(&self, cache: &mut KeyCache) {
        match &self.config.source {
            ApiKeySource::Static(_) => {}
            ApiKeySource::File(path) => {
                let stamp = std::fs::metadata(path)
                    .ok()
                    .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
                if cache.loaded_at.is_some() && stamp == cache.file_stamp {
                    return;
                }
                match ApiKeyDocument::load(path) {
                    Ok(doc) => {
                        cache.keys = index(&doc);
                        cache.file_stamp = stamp;
                        cache.loaded_at = Some(Instant::now());
                    }
                    Err(err) => tracing::error!("cannot load the API keys: {err}"),
                }
            }
            ApiKeySource::Fetched { fetch, refresh } => {
                if cache.loaded_at.is_some_and(|at| at.elapsed() < *refresh) {
                    return;
                }
                match fetch()
                    .await
                    .and_then(|text| ApiKeyDocument::from_json(&text))
                {
                    Ok(doc) => {
                        cache.keys = index(&doc);
                        cache.loaded_at = Some(Instant::now());
                    }
                    Err(err) => tracing::error!("cannot fetch the API keys: {err}"),
                }
            }
        }
    }

    async fn authenticate(&self, presented: &str) -> Result<Principal, AuthFailure> {
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

// ---------------------------------------------------------------------------------------------
// JWT bearer tokens

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

#[derive(Default)]
struct JwksCache {
    jwks_url: Option<String>,
    keys: Option<JwkSet>,
    fetched: Option<Instant>,
}

struct JwtVerifier {
    config: JwtConfig,
    http: reqwest::Client,
    cache: Mutex<JwksCache>,
}

/// The issuer's keys could not be fetched: a server-side failure, not the caller's.
#[derive(Debug)]
struct JwksUnavailable(String);

impl JwtVerifier {
    fn new(mut config: JwtConfig) -> Self {
        config
            .algorithms
            .retain(|a| !matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512));
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("a default reqwest client builds");
        Self {
            cache: Mutex::new(JwksCache {
                jwks_url: config.jwks_url.clone(),
                ..JwksCache::default()
            }),
            config,
            http,
        }
    }

    async fn verify(&self, token: &str) -> Result<Result<Principal, AuthFailure>, JwksUnavailable> {
        // `decode_header` refuses `alg: none` (no such algorithm) and anything not a JWS.
        let Ok(header) = jsonwebtoken::decode_header(token) else {
            return Ok(Err(AuthFailure::Malformed));
        };
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
        let fresh = cache
            .fetched
            .is_some_and(|at| at.elapsed() < self.config.jwks_ttl);
        if !fresh {
            self.fetch(&mut cache).await?;
        } else if let Some(jwk) = cache.keys.as_ref().and_then(|k| k.find(kid)) {
            return Ok(Some(jwk.clone()));
        } else if cache
            .fetched
            .is_some_and(|at| at.elapsed() >= self.config.refetch_cooldown)
        {
            tracing::info!("a token names an unknown key: fetching the issuer's keys again");
            self.fetch(&mut cache).await?;
        }
        Ok(cache.keys.as_ref().and_then(|k| k.find(kid)).cloned())
    }

    async fn fetch(&self, cache: &mut JwksCache) -> Result<(), JwksUnavailable> {
        let jwks_url = match &cache.jwks_url {
            Some(url) => url.clone(),
            None => {
                let url = self.discover().await?;
                cache.jwks_url = Some(url.clone());
                url
            }
        };
        let keys: JwkSet = self.get_json(&jwks_url).await?;
        tracing::info!(keys = keys.keys.len(), "fetched the issuer's signing keys");
        cache.keys = Some(keys);
        cache.fetched = Some(Instant::now());
        Ok(())
    }

    /// Finds the JWKS through OpenID Connect Discovery. The document must name our issuer
    /// exactly (OIDC Discovery §4.3), or its keys would vouch for someone else's tokens.
    async fn discover(&self) -> Result<String, JwksUnavailable> {
        #[derive(Deserialize)]
        struct Discovery {
            issuer: String,
            jwks_uri: String,
        }
        let doc: Discovery = self.get_json(&self.config.discovery_url()).await?;
        if doc.issuer != self.config.issuer {
            return Err(JwksUnavailable(format!(
                "the discovery document names issuer {:?}, not {:?}",
                doc.issuer, self.config.issuer
            )));
        }
        Ok(doc.jwks_uri)
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
    ) -> Result<T, JwksUnavailable> {
        let response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| JwksUnavailable(format!("GET {url}: {}", e.without_url())))?;
        if !response.status().is_success() {
            return Err(JwksUnavailable(format!(
                "GET {url} answered {}",
                response.status()
            )));
        }
        response
            .json()
            .await
            .map_err(|e| JwksUnavailable(format!("GET {url}: {}", e.without_url())))
    }
}

// ---------------------------------------------------------------------------------------------
// The auth layer

enum Mode {
    None,
    ApiKey(ApiKeys),
    Jwt(JwtVerifier),
}

/// The auth layer of a deployment. Cheap to clone (one shared JWKS or key cache).
#[derive(Clone)]
pub struct Auth(Arc<Mode>);

impl Default for Auth {
    fn default() -> Self {
        Self::none()
    }
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            Mode::None => f.write_str("Auth::None"),
            Mode::ApiKey(keys) => f.debug_tuple("Auth::ApiKey").field(&keys.config).finish(),
            Mode::Jwt(jwt) => f.debug_tuple("Auth::Jwt").field(&jwt.config).finish(),
        }
    }
}

impl Auth {
    /// Auth mode `none`: every caller is the anonymous principal.
    pub fn none() -> Self {
        Self(Arc::new(Mode::None))
    }

    /// API keys.
    pub fn api_keys(config: ApiKeyConfig) -> Self {
        Self(Arc::new(Mode::ApiKey(ApiKeys::new(config))))
    }

    /// Bearer JWTs from one OpenID issuer.
    pub fn jwt(config: JwtConfig) -> Self {
        Self(Arc::new(Mode::Jwt(JwtVerifier::new(config))))
    }

    /// Whether requests must carry credentials (any mode but `none`).
    pub fn is_enabled(&self) -> bool {
        !matches!(*self.0, Mode::None)
    }

    /// Where the front door finds the API key, in API-key mode.
    pub fn api_key_location(&self) -> Option<(ApiKeyLocation, &str)> {
        match &*self.0 {
            Mode::ApiKey(keys) => Some((keys.config.location, keys.config.name.as_str())),
            _ => None,
        }
    }

    /// Checks `credentials` and returns the caller: `Unauthenticated` if they are missing or
    /// invalid, `Internal` if the issuer's keys cannot be fetched.
    pub async fn authenticate(&self, credentials: Credentials<'_>) -> Result<Principal, A2AError> {
        match &*self.0 {
            Mode::None => Ok(Principal::anonymous()),
            Mode::ApiKey(keys) => match credentials.api_key.filter(|k| !k.trim().is_empty()) {
                None => Err(AuthFailure::Missing.into_error()),
                Some(key) => keys
                    .authenticate(key)
                    .await
                    .map_err(AuthFailure::into_error),
            },
            Mode::Jwt(jwt) => {
                let Some(authorization) = credentials.authorization else {
                    return Err(AuthFailure::Missing.into_error());
                };
                let token = match authorization.trim().split_once(' ') {
                    Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
                    _ => return Err(AuthFailure::WrongScheme.into_error()),
                };
                match jwt.verify(token).await {
                    Ok(result) => result.map_err(AuthFailure::into_error),
                    Err(JwksUnavailable(reason)) => {
                        tracing::error!("cannot verify bearer tokens: {reason}");
                        Err(A2AError::Internal(
                            "The token issuer's keys are unavailable; try again later".into(),
                        ))
                    }
                }
            }
        }
    }

    /// The card's `securitySchemes` and `securityRequirements` for this mode (empty in
    /// mode `none`). Each requirement is one alternative way to authenticate.
    pub fn card_security(&self) -> (BTreeMap<String, SecurityScheme>, Vec<SecurityRequirement>) {
        let mut schemes = BTreeMap::new();
        match &*self.0 {
            Mode::None => {}
            Mode::ApiKey(keys) => {
                schemes.insert(
                    "apiKey".to_string(),
                    SecurityScheme::ApiKeySecurityScheme(json!({
                        "location": keys.config.location.as_str(),
                        "name": keys.config.name,
                        "description": "An API key issued by the agent's operator (a2a_<id>_<secret>).",
                    })),
                );
            }
            Mode::Jwt(jwt) => {
                let scopes: Vec<String> = Permission::ALL
                    .into_iter()
                    .map(|p| format!("{p}: {}", jwt.config.scopes.scope(p)))
                    .collect();
                schemes.insert(
                    "bearer".to_string(),
                    SecurityScheme::HttpAuthSecurityScheme(json!({
                        "scheme": "Bearer",
                        "bearerFormat": "JWT",
                        "description": format!(
                            "An access token (JWT) from {}; scopes grant permissions ({}).",
                            jwt.config.issuer,
                            scopes.join(", ")
                        ),
                    })),
                );
                if jwt.config.jwks_url.is_none() {
                    // The issuer is an OpenID provider: say where clients find it.
                    schemes.insert(
                        "openId".to_string(),
                        SecurityScheme::OpenIdConnectSecurityScheme(json!({
                            "openIdConnectUrl": jwt.config.discovery_url(),
                        })),
                    );
                }
            }
        }
        let requirements = schemes
            .keys()
            .map(|name| SecurityRequirement {
                schemes: BTreeMap::from([(name.clone(), StringList::default())]),
            })
            .collect();
        (schemes, requirements)
    }

    /// The `WWW-Authenticate` value for an `Unauthenticated` or `PermissionDenied` answer to
    /// an operation needing `permission` (RFC 6750 §3 for bearer tokens). `None` for other
    /// errors, and for a 403 where the scheme has nothing to add.
    pub fn challenge(&self, error: &A2AError, permission: Option<Permission>) -> Option<String> {
        let description = match error {
            A2AError::Unauthenticated(message) => Some(message.as_str()),
            A2AError::PermissionDenied(_) => None,
            _ => return None,
        };
        match &*self.0 {
            Mode::None => None,
            Mode::ApiKey(keys) => description.map(|_| {
                format!(
                    "ApiKey realm=\"{REALM}\", location=\"{}\", name=\"{}\"",
                    keys.config.location.as_str(),
                    keys.config.name
                )
            }),
            Mode::Jwt(jwt) => match description {
                // No credentials: a bare challenge, without an error code (RFC 6750 §3.1).
                Some(m) if m.ends_with(AuthFailure::Missing.description()) => {
                    Some(format!("Bearer realm=\"{REALM}\""))
                }
                Some(m) => {
                    let text = m.trim_start_matches("Unauthenticated: ").replace('"', "'");
                    Some(format!(
                        "Bearer realm=\"{REALM}\", error=\"invalid_token\", error_description=\"{text}\""
                    ))
                }
                None => {
                    let scope = permission
                        .map(|p| jwt.config.scopes.scope(p))
                        .unwrap_or_default();
                    Some(format!(
                        "Bearer realm=\"{REALM}\", error=\"insufficient_scope\", scope=\"{scope}\""
                    ))
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_parse_print_and_serialise() {
        let p = Permissions::parse_list("read, send").unwrap();
        assert!(p.contains(Permission::Read) && p.contains(Permission::Send));
        assert!(!p.contains(Permission::Cancel));
        assert_eq!(p.to_string(), "read,send");
        assert_eq!(Permissions::parse_list("all").unwrap(), Permissions::all());
        assert!(Permissions::parse_list("read,write").is_err());
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, r#"["read","send"]"#);
        assert_eq!(serde_json::from_str::<Permissions>(&json).unwrap(), p);
    }

    fn static_keys(doc: ApiKeyDocument) -> Auth {
        Auth::api_keys(ApiKeyConfig {
            location: ApiKeyLocation::Header,
            name: "X-API-Key".into(),
            source: ApiKeySource::Static(doc),
        })
    }

    fn with_key(key: &str) -> Credentials<'_> {
        Credentials {
            authorization: None,
            api_key: Some(key),
        }
    }

    #[tokio::test]
    async fn issued_keys_authenticate_until_revoked() {
        let mut doc = ApiKeyDocument::default();
        let (record, key) = doc
            .issue(
                Permissions::parse_list("read").unwrap(),
                None,
                "test".into(),
            )
            .unwrap();
        // Only the hash is stored.
        assert!(!doc.to_json().contains(key.expose()));
        assert!(key.expose().starts_with(&format!("a2a_{}_", record.id)));
        assert_eq!(format!("{key:?}"), "IssuedKey([redacted])");

        let auth = static_keys(doc.clone());
        let principal = auth.authenticate(with_key(key.expose())).await.unwrap();
        assert_eq!(principal.id, format!("key:{}", record.id));
        assert!(principal.authenticated);
        assert_eq!(
            principal.permissions,
            Permissions::parse_list("read").unwrap()
        );

        // A wrong secret with the right id, garbage, and nothing are all refused.
        let wrong = format!("a2a_{}_AAAA", record.id);
        for bad in [wrong.as_str(), "nonsense", "a2a__x", ""] {
            let err = auth.authenticate(with_key(bad)).await.unwrap_err();
            assert!(matches!(err, A2AError::Unauthenticated(_)), "{bad}: {err}");
        }

        doc.revoke(&record.id);
        let auth = static_keys(doc);
        assert!(auth.authenticate(with_key(key.expose())).await.is_err());
    }

    #[test]
    fn duplicate_key_ids_are_refused() {
        let record = r#"{"id":"a","sha256":"x","permissions":[]}"#;
        let text = format!(r#"{{"keys":[{record},{record}]}}"#);
        assert!(ApiKeyDocument::from_json(&text).is_err());
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
        let verifier = JwtVerifier::new(config);
        assert_eq!(verifier.config.algorithms, vec![Algorithm::RS256]);
    }

    #[test]
    fn the_card_names_the_schemes() {
        let (schemes, reqs) = static_keys(ApiKeyDocument::default()).card_security();
        let json = serde_json::to_value(&schemes).unwrap();
        assert_eq!(json["apiKey"]["apiKeySecurityScheme"]["location"], "header");
        assert_eq!(json["apiKey"]["apiKeySecurityScheme"]["name"], "X-API-Key");
        assert_eq!(
            serde_json::to_value(&reqs).unwrap(),
            json!([{"schemes": {"apiKey": {"list": []}}}])
        );
        let (schemes, reqs) = Auth::jwt(JwtConfig::new("https://issuer", "aud")).card_security();
        let json = serde_json::to_value(&schemes).unwrap();
        assert_eq!(json["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer");
        assert_eq!(
            json["openId"]["openIdConnectSecurityScheme"]["openIdConnectUrl"],
            "https://issuer/.well-known/openid-configuration"
        );
        assert_eq!(reqs.len(), 2);
        assert!(Auth::none().card_security().0.is_empty());
    }

    #[test]
    fn bearer_challenges_follow_rfc_6750() {
        let auth = Auth::jwt(JwtConfig::new("https://issuer", "aud"));
        let missing = AuthFailure::Missing.into_error();
        assert_eq!(
            auth.challenge(&missing, None).unwrap(),
            "Bearer realm=\"a2a\""
        );
        let expired = AuthFailure::Expired.into_error();
        assert_eq!(
            auth.challenge(&expired, None).unwrap(),
            "Bearer realm=\"a2a\", error=\"invalid_token\", error_description=\"the token has expired\""
        );
        let denied = A2AError::PermissionDenied("no".into());
        assert_eq!(
            auth.challenge(&denied, Some(Permission::Cancel)).unwrap(),
            "Bearer realm=\"a2a\", error=\"insufficient_scope\", scope=\"a2a:cancel\""
        );
        assert_eq!(auth.challenge(&A2AError::task_not_found("t"), None), None);
    }
}
