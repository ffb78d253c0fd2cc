//! The auth configuration a deployment is given: flags and environment variables for
//! `a2a-local`, template parameters (passed as the same environment variables) for the Lambda
//! functions. Read and checked here once, so both hosts accept the same settings and refuse
//! the same mistakes with the same words.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::Algorithm;

use crate::ConfigError;

use super::{
    ApiKeyConfig, ApiKeyLocation, ApiKeySource, Auth, JwksSource, JwtConfig, ScopeNames,
    DEFAULT_JWT_ALGORITHMS,
};

/// `none`, `api-key` or `jwt` (template parameter `AuthMode`).
pub const ENV_AUTH: &str = "A2A_AUTH";
/// `header` or `query` (`ApiKeyLocation`).
pub const ENV_API_KEY_LOCATION: &str = "A2A_API_KEY_LOCATION";
/// The header or query parameter holding the API key (`ApiKeyName`).
pub const ENV_API_KEY_NAME: &str = "A2A_API_KEY_NAME";
/// The token issuer (`JwtIssuer`).
pub const ENV_JWT_ISSUER: &str = "A2A_JWT_ISSUER";
/// Accepted audiences, comma-separated (`JwtAudience`).
pub const ENV_JWT_AUDIENCE: &str = "A2A_JWT_AUDIENCE";
/// The issuer's JWKS URL, when it is not to be discovered (`JwtJwksUrl`).
pub const ENV_JWT_JWKS_URL: &str = "A2A_JWT_JWKS_URL";
/// The algorithm allow-list, comma-separated.
pub const ENV_JWT_ALGORITHMS: &str = "A2A_JWT_ALGORITHMS";
/// The scope granting `read`.
pub const ENV_JWT_SCOPE_READ: &str = "A2A_JWT_SCOPE_READ";
/// The scope granting `send`.
pub const ENV_JWT_SCOPE_SEND: &str = "A2A_JWT_SCOPE_SEND";
/// The scope granting `cancel`.
pub const ENV_JWT_SCOPE_CANCEL: &str = "A2A_JWT_SCOPE_CANCEL";
/// The scope granting `push`.
pub const ENV_JWT_SCOPE_PUSH: &str = "A2A_JWT_SCOPE_PUSH";
/// Clock skew tolerated on `exp` and `nbf`, in seconds.
pub const ENV_JWT_LEEWAY_SECS: &str = "A2A_JWT_LEEWAY_SECS";
/// How long the issuer's JWKS is cached, in seconds.
pub const ENV_JWT_JWKS_TTL_SECS: &str = "A2A_JWT_JWKS_TTL_SECS";

/// How callers authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthMode {
    /// Every caller is the anonymous principal (your own machine only).
    #[default]
    None,
    /// API keys issued with `a2a-local keys issue`.
    ApiKey,
    /// Bearer JWTs from one OpenID issuer.
    Jwt,
}

impl AuthMode {
    /// `none`, `api-key` or `jwt`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ApiKey => "api-key",
            Self::Jwt => "jwt",
        }
    }
}

impl fmt::Display for AuthMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AuthMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(Self::None),
            "api-key" | "apikey" | "api_key" => Ok(Self::ApiKey),
            "jwt" => Ok(Self::Jwt),
            _ => Err(format!("unknown auth mode {s:?}: use none, api-key or jwt")),
        }
    }
}

/// Everything about authentication a deployment configures, except where its API keys are
/// kept (a file locally, a secret in the cloud: the host supplies that to [`Self::build`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSettings {
    /// The mode.
    pub mode: AuthMode,
    /// Where clients send an API key.
    pub api_key_location: ApiKeyLocation,
    /// The header or query parameter holding it.
    pub api_key_name: String,
    /// The exact `iss` of accepted tokens (required in mode `jwt`).
    pub jwt_issuer: Option<String>,
    /// Accepted `aud` values (at least one in mode `jwt`).
    pub jwt_audience: Vec<String>,
    /// The issuer's JWKS, when not discovered.
    pub jwt_jwks_url: Option<String>,
    /// The algorithm allow-list (HMAC is dropped whatever it says).
    pub jwt_algorithms: Vec<Algorithm>,
    /// Which scope grants which permission.
    pub jwt_scopes: ScopeNames,
    /// Clock skew tolerated on `exp` and `nbf`.
    pub jwt_leeway: Duration,
    /// JWKS cache lifetime.
    pub jwt_jwks_ttl: Duration,
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self {
            mode: AuthMode::None,
            api_key_location: ApiKeyLocation::Header,
            api_key_name: "X-API-Key".into(),
            jwt_issuer: None,
            jwt_audience: Vec::new(),
            jwt_jwks_url: None,
            jwt_algorithms: DEFAULT_JWT_ALGORITHMS.to_vec(),
            jwt_scopes: ScopeNames::default(),
            jwt_leeway: Duration::from_secs(60),
            jwt_jwks_ttl: Duration::from_secs(600),
        }
    }
}

impl AuthSettings {
    /// Reads the `A2A_AUTH*`, `A2A_API_KEY_*` and `A2A_JWT_*` variables through `lookup`
    /// (unset and empty mean the default). An error names the variable and the bad value.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        fn parse<T: FromStr<Err = String> + Default>(
            name: &str,
            value: Option<String>,
        ) -> Result<T, ConfigError> {
            value
                .map(|v| v.parse().map_err(|e: String| ConfigError::invalid(name, e)))
                .transpose()
                .map(Option::unwrap_or_default)
        }
        let secs = |name: &str, default: Duration| {
            crate::seconds_setting(name, get(name).as_deref(), default)
        };
        let list = |name: &str| -> Vec<String> {
            get(name)
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        // An empty scope name is meaningful (granted to every valid token), so a set-but-empty
        // scope variable is kept, and only an unset one takes the default.
        let scope = |name: &str, default: &str| {
            lookup(name).map_or_else(|| default.to_owned(), |v| v.trim().to_owned())
        };
        let defaults = Self::default();
        let jwt_algorithms = match get(ENV_JWT_ALGORITHMS) {
            None => defaults.jwt_algorithms,
            Some(v) => v
                .split(',')
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(|a| {
                    Algorithm::from_str(a).map_err(|_| {
                        ConfigError::invalid(ENV_JWT_ALGORITHMS, format!("unknown algorithm {a:?}"))
                    })
                })
                .collect::<Result<_, _>>()?,
        };
        let scopes = ScopeNames::default();
        Ok(Self {
            mode: parse(ENV_AUTH, get(ENV_AUTH))?,
            api_key_location: parse(ENV_API_KEY_LOCATION, get(ENV_API_KEY_LOCATION))?,
            api_key_name: get(ENV_API_KEY_NAME).unwrap_or(defaults.api_key_name),
            jwt_issuer: get(ENV_JWT_ISSUER),
            jwt_audience: list(ENV_JWT_AUDIENCE),
            jwt_jwks_url: get(ENV_JWT_JWKS_URL),
            jwt_algorithms,
            jwt_scopes: ScopeNames {
                read: scope(ENV_JWT_SCOPE_READ, &scopes.read),
                send: scope(ENV_JWT_SCOPE_SEND, &scopes.send),
                cancel: scope(ENV_JWT_SCOPE_CANCEL, &scopes.cancel),
                push: scope(ENV_JWT_SCOPE_PUSH, &scopes.push),
            },
            jwt_leeway: secs(ENV_JWT_LEEWAY_SECS, defaults.jwt_leeway)?,
            jwt_jwks_ttl: secs(ENV_JWT_JWKS_TTL_SECS, defaults.jwt_jwks_ttl)?
                .max(Duration::from_secs(1)),
        })
    }

    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The token verification these settings describe, in mode `jwt`; an error names what is
    /// missing.
    pub fn jwt_config(&self) -> Result<JwtConfig, ConfigError> {
        let issuer = self
            .jwt_issuer
            .as_deref()
            .map(str::trim)
            .filter(|i| !i.is_empty())
            .ok_or_else(|| {
                ConfigError::missing(
                    format!(
                        "the token issuer: --jwt-issuer or {ENV_JWT_ISSUER} (the template's \
                         JwtIssuer)"
                    ),
                    "auth mode jwt",
                )
            })?;
        let audience: Vec<String> = self
            .jwt_audience
            .iter()
            .map(|a| a.trim().to_owned())
            .filter(|a| !a.is_empty())
            .collect();
        if audience.is_empty() {
            return Err(ConfigError::missing(
                format!(
                    "at least one accepted audience: --jwt-audience or {ENV_JWT_AUDIENCE} (the \
                     template's JwtAudience)"
                ),
                "auth mode jwt",
            ));
        }
        let mut config = JwtConfig::new(issuer, String::new());
        config.audience = audience;
        config.jwks_url = self.jwt_jwks_url.clone().filter(|u| !u.trim().is_empty());
        config.algorithms = self.jwt_algorithms.clone();
        config.scopes = self.jwt_scopes.clone();
        config.leeway = self.jwt_leeway;
        config.jwks_ttl = self.jwt_jwks_ttl.max(Duration::from_secs(1));
        Ok(config)
    }

    /// The auth layer, on the host's adapters: `api_keys` says where the key document is kept
    /// (asked only in mode `api-key`), `jwks` fetches the issuer's keys (asked only in mode
    /// `jwt`).
    pub fn build(
        &self,
        api_keys: impl FnOnce() -> Result<Arc<dyn ApiKeySource>, ConfigError>,
        jwks: impl FnOnce(&JwtConfig) -> Arc<dyn JwksSource>,
    ) -> Result<Auth, ConfigError> {
        match self.mode {
            AuthMode::None => Ok(Auth::none()),
            AuthMode::ApiKey => {
                if self.api_key_name.trim().is_empty() {
                    return Err(ConfigError::invalid(ENV_API_KEY_NAME, "must not be empty"));
                }
                if self.api_key_location == ApiKeyLocation::Query {
                    tracing::warn!(
                        "API keys in the query string end up in access logs and browser \
                         history; prefer a header"
                    );
                }
                Ok(Auth::api_keys(ApiKeyConfig {
                    location: self.api_key_location,
                    name: self.api_key_name.trim().to_owned(),
                    source: api_keys()?,
                }))
            }
            AuthMode::Jwt => {
                let config = self.jwt_config()?;
                let source = jwks(&config);
                Ok(Auth::jwt(config, source))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The JWKS of an issuer these tests never call.
    struct NoJwks;

    #[async_trait::async_trait]
    impl JwksSource for NoJwks {
        async fn fetch(&self) -> Result<jsonwebtoken::jwk::JwkSet, super::super::JwksUnavailable> {
            Err(super::super::JwksUnavailable("not in these tests".into()))
        }
    }

    fn read(pairs: &[(&str, &str)]) -> Result<AuthSettings, ConfigError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        AuthSettings::from_lookup(|name| env.get(name).cloned())
    }

    #[test]
    fn nothing_set_means_mode_none_with_the_documented_defaults() {
        let s = read(&[]).unwrap();
        assert_eq!(s, AuthSettings::default());
        assert_eq!(s.mode, AuthMode::None);
        assert!(!s
            .build(
                || panic!("no key source in mode none"),
                |_| panic!("no JWKS in mode none")
            )
            .unwrap()
            .is_enabled());
    }

    #[test]
    fn jwt_mode_reads_every_variable() {
        let s = read(&[
            (ENV_AUTH, "jwt"),
            (ENV_JWT_ISSUER, "https://issuer.example/pool"),
            (ENV_JWT_AUDIENCE, " agent-a , agent-b ,"),
            (ENV_JWT_JWKS_URL, "https://issuer.example/keys"),
            (ENV_JWT_ALGORITHMS, "RS256, ES256"),
            (ENV_JWT_SCOPE_READ, "read"),
            (ENV_JWT_SCOPE_PUSH, ""),
            (ENV_JWT_LEEWAY_SECS, "5"),
            (ENV_JWT_JWKS_TTL_SECS, "0"),
        ])
        .unwrap();
        let config = s.jwt_config().unwrap();
        assert_eq!(config.issuer, "https://issuer.example/pool");
        assert_eq!(config.audience, vec!["agent-a", "agent-b"]);
        assert_eq!(
            config.jwks_url.as_deref(),
            Some("https://issuer.example/keys")
        );
        assert_eq!(config.algorithms, vec![Algorithm::RS256, Algorithm::ES256]);
        assert_eq!(config.scopes.read, "read");
        assert_eq!(config.scopes.send, "a2a:send", "unset keeps the default");
        assert_eq!(
            config.scopes.push, "",
            "set but empty grants to every token"
        );
        assert_eq!(config.leeway, Duration::from_secs(5));
        assert_eq!(config.jwks_ttl, Duration::from_secs(1));
        assert!(s
            .build(|| panic!("no key source in mode jwt"), |_| Arc::new(NoJwks))
            .unwrap()
            .is_enabled());
    }

    #[test]
    fn mistakes_are_named() {
        let invalid = |pairs: &[(&str, &str)]| match read(pairs).unwrap_err() {
            ConfigError::Invalid { setting, reason } => (setting, reason),
            other => panic!("{other:?}"),
        };
        let (setting, reason) = invalid(&[(ENV_AUTH, "oauth")]);
        assert!(setting == ENV_AUTH && reason.contains("oauth"), "{reason}");
        let (setting, reason) = invalid(&[(ENV_JWT_ALGORITHMS, "RS256,XS1")]);
        assert!(
            setting == ENV_JWT_ALGORITHMS && reason.contains("XS1"),
            "{reason}"
        );
        assert_eq!(
            invalid(&[(ENV_JWT_LEEWAY_SECS, "soon")]).0,
            ENV_JWT_LEEWAY_SECS
        );
        assert_eq!(
            invalid(&[(ENV_API_KEY_LOCATION, "cookie")]).0,
            ENV_API_KEY_LOCATION
        );

        let missing = |pairs: &[(&str, &str)]| match read(pairs)
            .unwrap()
            .build(|| unreachable!(), |_| unreachable!())
            .unwrap_err()
        {
            ConfigError::Missing { setting, .. } => setting,
            other => panic!("{other:?}"),
        };
        let setting = missing(&[(ENV_AUTH, "jwt"), (ENV_JWT_AUDIENCE, "a")]);
        assert!(setting.contains(ENV_JWT_ISSUER), "{setting}");
        let setting = missing(&[(ENV_AUTH, "jwt"), (ENV_JWT_ISSUER, "https://i")]);
        assert!(setting.contains(ENV_JWT_AUDIENCE), "{setting}");
    }

    #[test]
    fn api_key_mode_asks_the_host_for_the_key_document() {
        let s = read(&[
            (ENV_AUTH, "api-key"),
            (ENV_API_KEY_LOCATION, "query"),
            (ENV_API_KEY_NAME, "key"),
        ])
        .unwrap();
        let auth = s
            .build(
                || Ok(Arc::new(super::super::ApiKeyDocument::default())),
                |_| unreachable!(),
            )
            .unwrap();
        assert_eq!(
            auth.api_key_location(),
            Some((ApiKeyLocation::Query, "key"))
        );
        let err = s
            .build(
                || {
                    Err(ConfigError::unreadable(
                        "the API key secret",
                        "access denied",
                    ))
                },
                |_| unreachable!(),
            )
            .unwrap_err();
        assert_eq!(err.to_string(), "the API key secret: access denied");
    }
}
