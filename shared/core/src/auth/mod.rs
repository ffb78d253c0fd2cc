//! Who is calling: the auth layer that turns a request's credentials into a [`Principal`], the
//! permissions each operation needs, and what the agent card says about it.
//!
//! A deployment runs in one [`Auth`] mode:
//!
//! - **none**: every caller is the anonymous principal, unauthenticated, with every
//!   permission. The local default; never expose it beyond your machine.
//! - **API keys** ([`api_keys`]): `a2a_<id>_<secret>` keys, stored only as SHA-256 hashes in a
//!   JSON key document ([`ApiKeyDocument`]) behind the [`ApiKeySource`] port: a file the
//!   `a2a-local keys` command writes (`a2a-embedded`), or a secret the Lambda host fetches. The
//!   key travels in the header or query parameter the card's `apiKeySecurityScheme` names.
//! - **JWT** ([`jwt`]): bearer tokens from one OpenID issuer, verified against its JWKS
//!   ([`JwtConfig`]), fetched through the [`JwksSource`] port (`a2a-net`).
//!
//! The front door hands the request's [`Credentials`] to [`Auth::authenticate`] and builds the
//! [`crate::CallContext`] from the principal: its owner is derived from the principal and the
//! tenant, so every store access is scoped to the caller. Each operation then checks its
//! [`Permission`] ([`permissions`]).
//!
//! Nothing here logs a credential: failures are logged by reason, never with the token or key.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use a2a_protocol::{A2AError, SecurityRequirement, SecurityScheme, StringList};
use serde_json::json;

mod api_keys;
mod jwt;
mod permissions;
mod principal;
mod settings;

pub use api_keys::{
    ApiKeyConfig, ApiKeyDocument, ApiKeyLocation, ApiKeyRecord, ApiKeySource, IssuedKey,
    API_KEY_PREFIX,
};
pub use jwt::{JwksSource, JwksUnavailable, JwtConfig, ScopeNames, DEFAULT_JWT_ALGORITHMS};
pub use permissions::{Permission, Permissions};
pub use principal::{AuthFailure, Credentials, Principal};
pub use settings::{
    AuthMode, AuthSettings, ENV_API_KEY_LOCATION, ENV_API_KEY_NAME, ENV_AUTH, ENV_JWT_ALGORITHMS,
    ENV_JWT_AUDIENCE, ENV_JWT_ISSUER, ENV_JWT_JWKS_TTL_SECS, ENV_JWT_JWKS_URL, ENV_JWT_LEEWAY_SECS,
    ENV_JWT_SCOPE_CANCEL, ENV_JWT_SCOPE_PUSH, ENV_JWT_SCOPE_READ, ENV_JWT_SCOPE_SEND,
};

use api_keys::ApiKeys;
use jwt::JwtVerifier;

/// The `realm` of every `WWW-Authenticate` challenge.
const REALM: &str = "a2a";

enum Mode {
    None,
    ApiKey(ApiKeys),
    /// Boxed: the verifier and its key cache are more than twice an API key cache's size.
    Jwt(Box<JwtVerifier>),
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

    /// Bearer JWTs from one OpenID issuer, whose keys come from `jwks`.
    pub fn jwt(config: JwtConfig, jwks: Arc<dyn JwksSource>) -> Self {
        Self(Arc::new(Mode::Jwt(Box::new(JwtVerifier::new(
            config, jwks,
        )))))
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
                        tracing::error!(%reason, "cannot verify bearer tokens");
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

    /// An issuer that is never reached: these tests look at the card and the challenges.
    struct Unreachable;

    #[async_trait::async_trait]
    impl JwksSource for Unreachable {
        async fn fetch(&self) -> Result<jsonwebtoken::jwk::JwkSet, JwksUnavailable> {
            Err(JwksUnavailable("not in these tests".into()))
        }
    }

    fn jwt_auth() -> Auth {
        Auth::jwt(
            JwtConfig::new("https://issuer", "aud"),
            Arc::new(Unreachable),
        )
    }

    fn static_keys(doc: ApiKeyDocument) -> Auth {
        Auth::api_keys(ApiKeyConfig {
            location: ApiKeyLocation::Header,
            name: "X-API-Key".into(),
            source: Arc::new(doc),
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
    fn the_card_names_the_schemes() {
        let (schemes, reqs) = static_keys(ApiKeyDocument::default()).card_security();
        let json = serde_json::to_value(&schemes).unwrap();
        assert_eq!(json["apiKey"]["apiKeySecurityScheme"]["location"], "header");
        assert_eq!(json["apiKey"]["apiKeySecurityScheme"]["name"], "X-API-Key");
        assert_eq!(
            serde_json::to_value(&reqs).unwrap(),
            json!([{"schemes": {"apiKey": {"list": []}}}])
        );
        let (schemes, reqs) = jwt_auth().card_security();
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
        let auth = jwt_auth();
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
