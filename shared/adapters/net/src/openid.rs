//! A token issuer's signing keys: OpenID Connect Discovery, then the JWKS.

use std::sync::Mutex;
use std::time::Duration;

use a2a_core::{JwksSource, JwksUnavailable, JwtConfig};
use async_trait::async_trait;
use jsonwebtoken::jwk::JwkSet;
use serde::Deserialize;

/// How long one discovery or JWKS request may take.
pub const ISSUER_TIMEOUT: Duration = Duration::from_secs(10);

/// Fetches an issuer's JWKS: from the configured JWKS URL, or from the `jwks_uri` its
/// discovery document names (discovered once, then remembered).
#[derive(Debug)]
pub struct OpenIdJwks {
    issuer: String,
    discovery_url: String,
    jwks_url: Mutex<Option<String>>,
    http: reqwest::Client,
}

impl OpenIdJwks {
    /// The key source of the issuer `config` names; each request to it may take
    /// [`ISSUER_TIMEOUT`].
    pub fn new(config: &JwtConfig) -> Self {
        Self::with_timeout(config, ISSUER_TIMEOUT)
    }

    /// [`Self::new`], each request to the issuer bounded by `timeout` instead: an issuer that
    /// never answers makes a request wait that long, then the token is refused as unverifiable.
    pub fn with_timeout(config: &JwtConfig, timeout: Duration) -> Self {
        Self {
            issuer: config.issuer.clone(),
            discovery_url: config.discovery_url(),
            jwks_url: Mutex::new(config.jwks_url.clone()),
            http: reqwest::Client::builder()
                .timeout(timeout)
                .build()
                .expect("a default reqwest client builds"),
        }
    }

    /// Finds the JWKS through OpenID Connect Discovery. The document must name our issuer
    /// exactly (OIDC Discovery §4.3), or its keys would vouch for someone else's tokens.
    async fn discover(&self) -> Result<String, JwksUnavailable> {
        #[derive(Deserialize)]
        struct Discovery {
            issuer: String,
            jwks_uri: String,
        }
        let doc: Discovery = self.get_json(&self.discovery_url).await?;
        if doc.issuer != self.issuer {
            return Err(JwksUnavailable(format!(
                "the discovery document names issuer {:?}, not {:?}",
                doc.issuer, self.issuer
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

#[async_trait]
impl JwksSource for OpenIdJwks {
    async fn fetch(&self) -> Result<JwkSet, JwksUnavailable> {
        let known = self
            .jwks_url
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let jwks_url = match known {
            Some(url) => url,
            None => {
                let url = self.discover().await?;
                *self.jwks_url.lock().unwrap_or_else(|e| e.into_inner()) = Some(url.clone());
                url
            }
        };
        self.get_json(&jwks_url).await
    }
}
