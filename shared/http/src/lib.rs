//! The HTTP front door of an A2A 1.0 agent: one axum [`Router`] serving the JSON-RPC binding,
//! the HTTP+JSON (REST) binding, their SSE streams and the public agent card, all on top of an
//! [`A2aService`].
//!
//! The same router runs in the local server and inside each Lambda function. A function that
//! serves only some operations mounts a subset with [`router_for`] or [`router_with`]; the
//! mapping of each operation to HTTP exists once ([`ops`]) and both bindings go through it.
//!
//! Module map:
//! - [`ops`]: decoding an operation's request and calling the service (shared by both bindings);
//! - `jsonrpc`: the JSON-RPC endpoint (envelope, errors, SSE framing);
//! - `rest`: the REST routes (paths, query parameters, Status errors, SSE framing);
//! - `context`: version negotiation, extensions, `Last-Event-ID`, and the one place where a
//!   request is authenticated and becomes a [`a2a_core::CallContext`];
//! - `body`: Content-Type and size checks on request bodies;
//! - `sse`: event-stream rendering with keep-alive comments;
//! - `card`: the public agent card and the push signing JWKS, with caching headers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a_core::A2aService;
use a2a_protocol::jsonrpc::Method;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::post;
use axum::Router;

mod body;
mod card;
mod context;
mod errors;
mod jsonrpc;
pub mod ops;
mod rest;
mod sse;

/// Tunables of the HTTP front door.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where the JSON-RPC endpoint listens. It also answers at this path with a trailing `/`
    /// (some clients, including the A2A TCK, append one).
    pub jsonrpc_path: String,
    /// The largest request body accepted, in bytes. Larger bodies get `PayloadTooLarge`.
    pub max_body_bytes: usize,
    /// How often an idle SSE stream sends a keep-alive comment, so that proxies and gateways
    /// do not cut it.
    pub keep_alive: Duration,
    /// `Cache-Control: max-age` of the public agent card and of the JWKS. Key rotation waits
    /// at least this long between publishing a key and signing with it.
    pub card_max_age: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            jsonrpc_path: "/jsonrpc".to_string(),
            max_body_bytes: 1024 * 1024,
            keep_alive: Duration::from_secs(15),
            card_max_age: Duration::from_secs(300),
        }
    }
}

/// Which parts of the A2A HTTP surface a router serves.
///
/// Each Lambda function serves a slice of the surface: one REST operation, the JSON-RPC
/// endpoint, or the card. Operations not listed answer as if they did not exist (404 on REST,
/// -32601 on JSON-RPC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Surface {
    /// The operations served.
    pub operations: Vec<Method>,
    /// Whether the JSON-RPC endpoint is mounted (for the listed operations).
    pub jsonrpc: bool,
    /// Whether the REST routes are mounted (for the listed operations).
    pub rest: bool,
    /// Whether the public agent card (`/.well-known/agent-card.json`) is served, and with it
    /// the push signing keys (`/.well-known/jwks.json`) when the service signs pushes.
    pub card: bool,
}

impl Surface {
    /// Everything: all eleven operations on both bindings, and the card.
    pub fn all() -> Self {
        Self {
            operations: Method::ALL.to_vec(),
            jsonrpc: true,
            rest: true,
            card: true,
        }
    }
}

/// The whole A2A HTTP surface for `service`: JSON-RPC, REST (also under `/{tenant}`), SSE and
/// the agent card.
pub fn router(service: A2aService, options: HttpOptions) -> Router {
    router_with(service, options, &Surface::all())
}

/// A router serving only `operations` (on both bindings), plus the card if `card` is set.
pub fn router_for(
    service: A2aService,
    options: HttpOptions,
    operations: &[Method],
    card: bool,
) -> Router {
    let surface = Surface {
        operations: operations.to_vec(),
        jsonrpc: true,
        rest: true,
        card,
    };
    router_with(service, options, &surface)
}

/// A router serving exactly `surface`.
pub fn router_with(service: A2aService, options: HttpOptions, surface: &Surface) -> Router {
    let card = surface
        .card
        .then(|| card::CardDocument::new(service.agent_card(), options.card_max_age));
    // The JWKS is served wherever the card is: receivers find it next to the agent.
    let jwks = match (&card, &service.config().push_signer) {
        (Some(_), Some(signer)) => Some(card::CardDocument::jwks(
            &signer.keys().jwks(),
            options.card_max_age,
        )),
        _ => None,
    };
    let app = Arc::new(App {
        operations: OperationSet::new(&surface.operations),
        service,
        options,
        card,
        jwks,
    });

    let mut router: Router<Arc<App>> = Router::new();
    if surface.jsonrpc && !surface.operations.is_empty() {
        for path in jsonrpc_paths(&app.options.jsonrpc_path) {
            router = router.route(&path, post(jsonrpc::handle));
        }
    }
    if surface.rest {
        router = rest::mount(router, &app.operations);
    }
    if app.card.is_some() {
        router = card::mount(router, app.jwks.is_some());
    }
    router
        .fallback(errors::not_found)
        .method_not_allowed_fallback(errors::method_not_allowed)
        .with_state(app)
        .layer(middleware::from_fn(log_request))
}

/// The JSON-RPC path as configured, and its form with (or without) a trailing slash.
fn jsonrpc_paths(configured: &str) -> Vec<String> {
    let base = configured.trim_end_matches('/');
    if base.is_empty() {
        return vec!["/".to_string()];
    }
    let base = if base.starts_with('/') {
        base.to_string()
    } else {
        format!("/{base}")
    };
    vec![base.clone(), format!("{base}/")]
}

/// Shared state of every handler.
pub(crate) struct App {
    pub(crate) service: A2aService,
    pub(crate) options: HttpOptions,
    pub(crate) operations: OperationSet,
    /// The public card, when this router serves it.
    pub(crate) card: Option<card::CardDocument>,
    /// The push signing keys' JWKS, when this router serves the card and the service signs.
    pub(crate) jwks: Option<card::CardDocument>,
}

/// A set of operations. `Method` is not `Hash`, and eleven flags are all it takes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OperationSet([bool; Method::ALL.len()]);

impl OperationSet {
    fn new(operations: &[Method]) -> Self {
        let mut set = Self::default();
        for op in operations {
            set.0[Self::index(*op)] = true;
        }
        set
    }

    fn index(op: Method) -> usize {
        Method::ALL
            .iter()
            .position(|m| *m == op)
            .expect("Method::ALL lists every method")
    }

    /// Whether `op` is served.
    pub(crate) fn contains(&self, op: Method) -> bool {
        self.0[Self::index(op)]
    }

    /// Whether any of `ops` is served.
    pub(crate) fn any(&self, ops: &[Method]) -> bool {
        ops.iter().any(|op| self.contains(*op))
    }
}

/// Logs each request's method, path and status. Never headers, query strings or bodies: they
/// may carry credentials.
async fn log_request(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16();
    let elapsed_ms = started.elapsed().as_millis() as u64;
    if response.status().is_server_error() {
        tracing::warn!(%method, %path, status, elapsed_ms, "request failed");
    } else {
        tracing::info!(%method, %path, status, elapsed_ms, "request");
    }
    response
}
