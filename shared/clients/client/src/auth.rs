//! Credentials the client sends on every request: an API key (in a header or the query), a
//! bearer token, HTTP basic, or an OAuth2 client-credentials token it fetches and refreshes.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::RequestBuilder;
use serde::Deserialize;
use tokio::sync::Mutex;

use crate::error::Error;

/// Where an API key goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKeyLocation {
    /// A request header of that name.
    Header,
    /// A query parameter of that name.
    Query,
}

/// How the client authenticates. Secrets never appear in `Debug` output.
#[derive(Clone, Default)]
pub enum Auth {
    /// No credentials.
    #[default]
    None,
    /// An API key: `name` is the header or query parameter (the card's `apiKeySecurityScheme`
    /// says which; our server reads `X-API-Key`).
    ApiKey {
        /// Header or query parameter name.
        name: String,
        /// The key.
        value: String,
        /// Where it goes.
        location: ApiKeyLocation,
    },
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// `Authorization: Basic …`.
    Basic {
        /// User name.
        username: String,
        /// Password.
        password: String,
    },
    /// OAuth2 client credentials: the token is fetched from `token_url` before the first
    /// request, and again shortly before it expires or after the agent refused it with 401.
    OAuth2(Arc<OAuth2ClientCredentials>),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::ApiKey { name, location, .. } => {
                write!(f, "ApiKey({name:?} in {location:?}, <redacted>)")
            }
            Self::Bearer(_) => f.write_str("Bearer(<redacted>)"),
            Self::Basic { username, .. } => write!(f, "Basic({username:?}, <redacted>)"),
            Self::OAuth2(o) => write!(f, "OAuth2({:?}, {:?})", o.token_url, o.client_id),
        }
    }
}

impl Auth {
    /// An API key sent in the header `name`.
    pub fn api_key_header(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self::ApiKey {
            name: name.into(),
            value: value.into(),
            location: ApiKeyLocation::Header,
        }
    }

    /// An API key sent as the query parameter `name`.
    pub fn api_key_query(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self::ApiKey {
            name: name.into(),
            value: value.into(),
            location: ApiKeyLocation::Query,
        }
    }

    /// A bearer token.
    pub fn bearer(token: impl Into<String>) -> Self {
        Self::Bearer(token.into())
    }

    /// HTTP basic authentication.
    pub fn basic(username: impl Into<String>, password: impl Into<String>) -> Self {
        Self::Basic {
            username: username.into(),
            password: password.into(),
        }
    }

    /// OAuth2 client credentials against `token_url`.
    pub fn oauth2(credentials: OAuth2ClientCredentials) -> Self {
        Self::OAuth2(Arc::new(credentials))
    }

    /// Whether there are no credentials.
    pub(crate) fn is_none(&self) -> bool {
        matches!(self, Self::None)
    }

    /// Adds the credentials to a request.
    pub(crate) async fn apply(
        &self,
        http: &reqwest::Client,
        mut builder: RequestBuilder,
    ) -> Result<RequestBuilder, Error> {
        match self {
            Self::None => {}
            Self::ApiKey {
                name,
                value,
                location: ApiKeyLocation::Header,
            } => builder = builder.header(name.as_str(), value.as_str()),
            // Query keys are added to the URL when it is built (see `with_query_key`).
            Self::ApiKey { .. } => {}
            Self::Bearer(token) => builder = builder.bearer_auth(token),
            Self::Basic { username, password } => {
                builder = builder.basic_auth(username, Some(password))
            }
            Self::OAuth2(o) => builder = builder.bearer_auth(o.token(http).await?),
        }
        Ok(builder)
    }

    /// The URL with a query API key added, if that is the configured credential.
    pub(crate) fn with_query_key(&self, mut url: url::Url) -> url::Url {
        if let Self::ApiKey {
            name,
            value,
            location: ApiKeyLocation::Query,
        } = self
        {
            url.query_pairs_mut().append_pair(name, value);
        }
        url
    }

    /// Forgets a cached token the agent refused, so the next request fetches a new one.
    /// Returns whether a retry can help.
    pub(crate) async fn refused(&self) -> bool {
        match self {
            Self::OAuth2(o) => {
                *o.cached.lock().await = None;
                true
            }
            _ => false,
        }
    }
}

/// The largest token endpoint answer read: a token response is a few kilobytes.
const MAX_TOKEN_RESPONSE_BYTES: usize = 1 << 20;

/// The client-credentials grant (RFC 6749 §4.4): client id and secret sent with HTTP basic
/// authentication, as the RFC recommends.
pub struct OAuth2ClientCredentials {
    /// The token endpoint.
    pub token_url: String,
    /// The client id.
    pub client_id: String,
    client_secret: String,
    /// The scopes to ask for (none: the server's default).
    pub scopes: Vec<String>,
    /// Extra form fields (`audience`, `resource`), for token servers that want them.
    pub extra: Vec<(String, String)>,
    /// How long before `expires_in` runs out the token is replaced.
    pub refresh_margin: Duration,
    cached: Mutex<Option<(String, Option<Instant>)>>,
}

impl OAuth2ClientCredentials {
    /// Credentials for `client_id` at `token_url`.
    pub fn new(
        token_url: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        Self {
            token_url: token_url.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            scopes: Vec::new(),
            extra: Vec::new(),
            refresh_margin: Duration::from_secs(30),
            cached: Mutex::new(None),
        }
    }

    /// Asks for these scopes.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Adds a form field to the token request.
    pub fn param(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra.push((name.into(), value.into()));
        self
    }

    /// A valid access token: the cached one, or a new one.
    pub async fn token(&self, http: &reqwest::Client) -> Result<String, Error> {
        let mut cached = self.cached.lock().await;
        if let Some((token, expires)) = cached.as_ref() {
            if expires.is_none_or(|at| Instant::now() + self.refresh_margin < at) {
                return Ok(token.clone());
            }
        }
        let fresh = self.fetch(http).await?;
        let token = fresh.0.clone();
        *cached = Some(fresh);
        Ok(token)
    }

    async fn fetch(&self, http: &reqwest::Client) -> Result<(String, Option<Instant>), Error> {
        #[derive(Deserialize)]
        struct TokenResponse {
            access_token: String,
            #[serde(default)]
            expires_in: Option<u64>,
        }
        // Built before the first await: the serializer is not `Send`.
        let form = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "client_credentials");
            if !self.scopes.is_empty() {
                form.append_pair("scope", &self.scopes.join(" "));
            }
            for (k, v) in &self.extra {
                form.append_pair(k, v);
            }
            form.finish()
        };
        let asked = Instant::now();
        let response = http
            .post(&self.token_url)
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(form)
            .send()
            .await
            .map_err(|e| Error::Auth(format!("token endpoint {}: {e}", self.token_url)))?;
        let status = response.status();
        let reading = crate::limits::Exchange {
            what: "the token request",
            timeout: None,
        };
        let body = reading
            .read_body(response, MAX_TOKEN_RESPONSE_BYTES)
            .await
            .map_err(|e| Error::Auth(format!("reading the token response: {e}")))?;
        if !status.is_success() {
            return Err(Error::Auth(format!(
                "token endpoint answered {status}: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        let token: TokenResponse = serde_json::from_slice(&body)
            .map_err(|e| Error::Auth(format!("token response without access_token: {e}")))?;
        let expires = token
            .expires_in
            // The endpoint's number is untrusted: one no clock can add is no expiry known.
            .and_then(|secs| asked.checked_add(Duration::from_secs(secs)));
        Ok((token.access_token, expires))
    }
}
