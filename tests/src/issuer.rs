//! A test OpenID issuer on 127.0.0.1: `/.well-known/openid-configuration` and a JWKS, with an
//! RS256 key generated at start, and tokens minted on demand (valid ones, and every kind of
//! forgery the attack matrix needs), or at its OAuth2 token endpoint (client credentials).
//!
//! Used by `tests/tests/auth.rs`, and by the `test-issuer` binary that the interop run starts
//! in front of `a2a-local --auth jwt`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use a2a_core::{SigningAlgorithm, SigningKey};
use axum::extract::State;
use axum::routing::get;
use axum::Json;
use base64::Engine as _;
use serde_json::{json, Value};

/// The audience every test token is for, unless a test says otherwise.
pub const AUDIENCE: &str = "a2a-e2e";

/// Every permission's default scope.
pub const ALL_SCOPES: &str = "a2a:read a2a:send a2a:cancel a2a:push";

/// The secret of every client at the token endpoint (`/token`, client credentials).
pub const CLIENT_SECRET: &str = "test-client-secret";

/// A running test issuer. Stops when dropped.
pub struct TestIssuer {
    /// `http://127.0.0.1:PORT`: the `iss` of its tokens.
    pub issuer: String,
    key: SigningKey,
    /// The private key's PKCS#8 DER, to derive the public key's PEM (the HMAC-confusion attack
    /// signs with it).
    private_der: Vec<u8>,
    jwks_fetches: Arc<AtomicUsize>,
    token_requests: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct Published {
    issuer: String,
    discovery: Value,
    jwks: Value,
    jwks_fetches: Arc<AtomicUsize>,
    key: SigningKey,
    token_requests: Arc<AtomicUsize>,
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl TestIssuer {
    /// Starts an issuer on `127.0.0.1:0` with a fresh RS256 key.
    pub async fn start() -> TestIssuer {
        Self::start_on("127.0.0.1:0").await
    }

    /// Starts an issuer on `addr` (e.g. `127.0.0.1:0`).
    pub async fn start_on(addr: &str) -> TestIssuer {
        Self::try_start_on(addr).await.expect("bind the issuer")
    }

    /// Like [`Self::start_on`]; an address it cannot listen on is an error.
    pub async fn try_start_on(addr: &str) -> std::io::Result<TestIssuer> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let (key, pem) = SigningKey::generate(SigningAlgorithm::Rs256).expect("generate a key");
        let private_der = pem::parse(pem.expose()).expect("PEM").contents().to_vec();
        let issuer = format!("http://{}", listener.local_addr().expect("address"));
        let jwks_fetches = Arc::new(AtomicUsize::new(0));
        let token_requests = Arc::new(AtomicUsize::new(0));
        let published = Published {
            issuer: issuer.clone(),
            key: key.clone(),
            token_requests: token_requests.clone(),
            discovery: json!({
                "issuer": issuer,
                "jwks_uri": format!("{issuer}/jwks.json"),
                "token_endpoint": format!("{issuer}/token"),
                "id_token_signing_alg_values_supported": ["RS256"],
                "response_types_supported": ["token"],
                "subject_types_supported": ["public"],
            }),
            jwks: json!({"keys": [key.public_jwk()]}),
            jwks_fetches: jwks_fetches.clone(),
        };
        async fn discovery(State(p): State<Published>) -> Json<Value> {
            Json(p.discovery)
        }
        async fn jwks(State(p): State<Published>) -> Json<Value> {
            p.jwks_fetches.fetch_add(1, Ordering::SeqCst);
            Json(p.jwks)
        }
        /// The client-credentials grant: any client id, with [`CLIENT_SECRET`] in HTTP basic;
        /// the token's subject is the client id, its scope the one asked for.
        async fn token(
            State(p): State<Published>,
            headers: axum::http::HeaderMap,
            form: String,
        ) -> axum::response::Response {
            use axum::response::IntoResponse as _;
            p.token_requests.fetch_add(1, Ordering::SeqCst);
            let basic = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Basic "))
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .and_then(|b| String::from_utf8(b).ok());
            let form: Vec<(String, String)> = url::form_urlencoded::parse(form.as_bytes())
                .into_owned()
                .collect();
            let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
            let client = basic
                .as_deref()
                .and_then(|b| b.split_once(':'))
                .filter(|(_, secret)| *secret == CLIENT_SECRET)
                .map(|(id, _)| id.to_string());
            let (Some(client), Some("client_credentials")) =
                (client, field("grant_type").as_deref())
            else {
                let error = json!({"error": "invalid_client"});
                return (axum::http::StatusCode::UNAUTHORIZED, Json(error)).into_response();
            };
            let now = now();
            let claims = json!({
                "iss": p.issuer, "sub": client, "aud": AUDIENCE, "iat": now, "nbf": now - 5,
                "exp": now + 3600, "scope": field("scope").unwrap_or_else(|| ALL_SCOPES.into()),
            });
            let token = p.key.sign(&claims).expect("sign a token");
            Json(json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
                .into_response()
        }
        let app = axum::Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks.json", get(jwks))
            .route("/token", axum::routing::post(token))
            .with_state(published);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(TestIssuer {
            issuer,
            key,
            private_der,
            jwks_fetches,
            token_requests,
            task,
        })
    }

    /// How many times the JWKS was fetched.
    pub fn jwks_fetches(&self) -> usize {
        self.jwks_fetches.load(Ordering::SeqCst)
    }

    /// The OAuth2 token endpoint (client credentials; see [`CLIENT_SECRET`]).
    pub fn token_endpoint(&self) -> String {
        format!("{}/token", self.issuer)
    }

    /// How many token requests the token endpoint answered.
    pub fn token_requests(&self) -> usize {
        self.token_requests.load(Ordering::SeqCst)
    }

    /// The standard claims of a valid token for `subject` with `scope`, valid for an hour.
    pub fn claims(&self, subject: &str, scope: &str) -> Value {
        let now = now();
        json!({
            "iss": self.issuer,
            "sub": subject,
            "aud": AUDIENCE,
            "iat": now,
            "nbf": now - 5,
            "exp": now + 3600,
            "scope": scope,
        })
    }

    /// Signs `claims` with the issuer's published key.
    pub fn sign(&self, claims: &Value) -> String {
        self.key.sign(claims).expect("sign a token")
    }

    /// A valid token for `subject` with `scope`.
    pub fn token(&self, subject: &str, scope: &str) -> String {
        self.sign(&self.claims(subject, scope))
    }

    /// A token signed with `alg: none` and no signature.
    pub fn unsigned(&self, claims: &Value) -> String {
        let header = json!({"alg": "none", "typ": "JWT", "kid": self.key.kid()});
        format!(
            "{}.{}.",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        )
    }

    /// The issuer's public key as an SPKI PEM: what a naive verifier would hand to HMAC.
    pub fn public_key_pem(&self) -> String {
        use aws_lc_rs::encoding::{AsDer, PublicKeyX509Der};
        use aws_lc_rs::signature::KeyPair as _;
        let pair = aws_lc_rs::rsa::KeyPair::from_pkcs8(&self.private_der).expect("RSA key");
        let der: PublicKeyX509Der<'static> = pair.public_key().as_der().expect("SPKI DER");
        pem::encode(&pem::Pem::new("PUBLIC KEY", der.as_ref().to_vec()))
    }

    /// A token signed with HS256, keyed with the issuer's public key (the algorithm-confusion
    /// attack), with the issuer's `kid`.
    pub fn hs256_with_public_key(&self, claims: &Value) -> String {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        header.kid = Some(self.key.kid().to_string());
        let secret = jsonwebtoken::EncodingKey::from_secret(self.public_key_pem().as_bytes());
        jsonwebtoken::encode(&header, claims, &secret).expect("sign with HS256")
    }
}

impl Drop for TestIssuer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
