//! Who is calling, as the auth layer sees it: the [`Principal`] it establishes, the
//! [`Credentials`] a request carries, and why credentials were refused ([`AuthFailure`]).

use std::fmt;

use a2a_protocol::A2AError;

use super::permissions::Permissions;

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
    pub(super) fn from_jwt(issuer: &str, subject: &str, permissions: Permissions) -> Self {
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
    /// The API key from the header or query parameter named by [`Auth::api_key_location`](super::Auth::api_key_location).
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

    pub(super) fn into_error(self) -> A2AError {
        tracing::info!(reason = self.description(), "authentication failed");
        A2AError::Unauthenticated(format!("Unauthenticated: {}", self.description()))
    }
}
