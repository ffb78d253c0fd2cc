//! The wire contract of a signed push notification: the header that carries the JWT, its
//! claims, and where the signing keys are published. Shared by the sender (the core) and the
//! receiver-side verifier, so the two cannot drift apart.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The HTTP header carrying the push JWT (always sent; also sent as `Authorization: Bearer`
/// when the push config has no `authentication`).
pub const PUSH_SIGNATURE_HEADER: &str = "A2A-Push-Signature";

/// The path of the JWKS below the agent's base URL (the push JWT's `iss`).
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

/// The longest lifetime (`exp - iat`) a push JWT may have.
pub const MAX_PUSH_TOKEN_LIFETIME: Duration = Duration::from_secs(300);

/// The claims of a push JWT. Field names on the wire are given in each field's doc.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushClaims {
    /// `iss`: the agent's base URL (its JWKS is at `{iss}/.well-known/jwks.json`).
    pub iss: String,
    /// `aud`: the webhook URL exactly as given in the push config.
    pub aud: String,
    /// `iat`: when the token was made, in seconds since the Unix epoch.
    pub iat: u64,
    /// `exp`: when it expires (at most five minutes after `iat`).
    pub exp: u64,
    /// `jti`: a UUID unique to this POST (replay protection).
    pub jti: String,
    /// `taskId`: the task the event belongs to.
    pub task_id: String,
    /// `seq`: the event's position in the task's log. With `taskId` it names the event, so a
    /// receiver can drop a redelivered event (a retry carries a new `jti`, the same `seq`).
    pub seq: u64,
    /// `configId`: the push config this POST was made for.
    pub config_id: String,
    /// `bodySha256`: base64url (unpadded) of the SHA-256 of the exact request body bytes.
    pub body_sha256: String,
}
