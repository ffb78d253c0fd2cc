//! The HTTP front door of an A2A 1.0 agent: one axum [`Router`] serving the JSON-RPC binding,
//! the HTTP+JSON (REST) binding, their SSE streams and the public agent card, all on top of an
//! [`A2aService`].
//!
//! The same router runs in the local server and inside each Lambda function. A function that
//! serves only some operations mounts a subset with [`router_for`] or [`router_with`]. What each
//! operation is (name, permission, streaming, REST route) is the core's operation table
//! ([`a2a_protocol::OPERATIONS`]); both bindings decode into an [`a2a_core::OperationRequest`] and
//! go through [`a2a_core::A2aService::call`].
//!
//! Module map:
//! - `jsonrpc`: the JSON-RPC endpoint (envelope, errors, SSE framing);
//! - `rest`: the REST routes (paths, query parameters, Status errors, SSE framing);
//! - `context`: version negotiation, extensions, `Last-Event-ID`, and the one place where a
//!   request is authenticated and becomes a [`a2a_core::CallContext`];
//! - `body`: Content-Type and size checks on request bodies;
//! - `sse`: event-stream rendering with keep-alive comments;
//! - `card`: the public agent card and the push signing JWKS, with caching headers;
//! - `cors`: the CORS policy for browser clients (off unless origins are configured);
//! - `layers`: the request log and CORS as the router's outer layers;
//! - `relay`: the route the remote agents our tasks wait for push their updates to.

use std::sync::Arc;
use std::time::Duration;

use a2a_core::ApiKeyLocation;
use a2a_core::{A2aService, CallContext, OperationRequest, Reply};
use a2a_protocol::jsonrpc::Params;
use a2a_protocol::A2AError;
use a2a_protocol::Operation;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::Router;

pub use card::EARLY_CARD_ALT_PATH;
pub use cors::{vary_origin, CorsOrigins};
pub use legacy::legacy_methods;
pub use rest::{V03_CARD_PATH, V03_PREFIX};

mod body;
mod card;
mod context;
mod cors;
mod errors;
mod jsonrpc;
mod layers;
mod legacy;
mod relay;
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
    /// Which browser origins may call (CORS). Off by default: no `Access-Control-*` headers,
    /// and `OPTIONS` is not answered.
    pub cors_origins: CorsOrigins,
    /// The path prefix the whole surface is served under (`/a2a`: `POST /a2a/message:send`,
    /// `/a2a/.well-known/agent-card.json`, …), or empty for the root. The card's interface URLs
    /// must include it (the host's base URL does). A routing convenience, never a security
    /// boundary (spec `dev-1.1` §11.3.5): every request is authenticated the same way.
    /// Normalise it with [`base_path`].
    pub base_path: String,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            jsonrpc_path: "/jsonrpc".to_string(),
            max_body_bytes: 1024 * 1024,
            keep_alive: Duration::from_secs(15),
            card_max_age: Duration::from_secs(300),
            cors_origins: CorsOrigins::Off,
            base_path: String::new(),
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
    pub operations: Vec<Operation>,
    /// Whether the JSON-RPC endpoint is mounted (for the listed operations).
    pub jsonrpc: bool,
    /// Whether the REST routes are mounted (for the listed operations).
    pub rest: bool,
    /// Whether the public agent card (`/.well-known/agent-card.json`) is served, and with it
    /// the push signing keys (`/.well-known/jwks.json`) when the service signs pushes.
    pub card: bool,
    /// Whether the relay route (`/a2a-relay/{taskId}`, and its previous form
    /// `/a2a-relay/{taskId}/{owner}`) is served: where the remote
    /// agents our tasks wait for push their updates (`a2a_core::RELAY_PATH`).
    pub relay: bool,
}

impl Surface {
    /// Everything: all eleven operations on both bindings, and the card.
    pub fn all() -> Self {
        Self {
            operations: Operation::ALL.to_vec(),
            jsonrpc: true,
            rest: true,
            card: true,
            relay: true,
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
    operations: &[Operation],
    card: bool,
) -> Router {
    let surface = Surface {
        operations: operations.to_vec(),
        jsonrpc: true,
        rest: true,
        card,
        relay: false,
    };
    router_with(service, options, &surface)
}

/// A router serving exactly `surface`.
pub fn router_with(service: A2aService, options: HttpOptions, surface: &Surface) -> Router {
    let base = options.base_path.clone();
    let older_versions = service.config().older_versions;
    let cards = surface
        .card
        .then(|| card::Cards::new(older_versions, options.card_max_age, &options.jsonrpc_path));
    // The JWKS is served wherever the card is: receivers find it next to the agent.
    let jwks = match (&cards, &service.config().push_signer) {
        (Some(_), Some(signer)) => Some(card::Jwks::new(signer.clone(), options.card_max_age)),
        _ => None,
    };
    // Browsers send API keys in the header the auth layer reads, so a preflight must allow it.
    let api_key_header = match service.config().auth.api_key_location() {
        Some((ApiKeyLocation::Header, name)) => Some(name.to_owned()),
        _ => None,
    };
    let cors = cors::Cors::new(&options.cors_origins, api_key_header.as_deref());
    let app = Arc::new(App {
        operations: OperationSet::new(&surface.operations),
        service,
        options,
        cards,
        jwks,
    });

    let mut router: Router<Arc<App>> = Router::new();
    if surface.jsonrpc && !surface.operations.is_empty() {
        for path in jsonrpc_paths(&app.options.jsonrpc_path) {
            router = router.route(&path, post(jsonrpc::handle));
        }
        if app.service.config().older_versions.early {
            for path in EARLY_JSONRPC_PATHS {
                let handler = if path == PYTHON_A2A_STREAM_PATH {
                    post(jsonrpc::handle_python_a2a_stream)
                } else {
                    post(jsonrpc::handle_early)
                };
                router = router.route(path, handler);
            }
        }
    }
    if surface.rest {
        router = rest::mount(router, &app.operations);
        if app.service.config().older_versions.v0_3 {
            router = rest::mount_v03(router, &app.operations);
        }
    }
    if app.cards.is_some() {
        router = card::mount(router, app.jwks.is_some(), older_versions.early);
    }
    if surface.relay {
        router = relay::mount(router);
    }
    let router = router
        .fallback(errors::not_found)
        .method_not_allowed_fallback(errors::method_not_allowed)
        .with_state(app);
    // Outside routing and auth: every route answers a preflight, every error carries the
    // headers a browser needs to read it.
    let router = match cors {
        Some(cors) => router.layer(layers::CorsLayer(Arc::new(cors))),
        None => router,
    };
    let router = router.layer(layers::LogRequestLayer);
    match base_path(&base).ok().filter(|p| !p.is_empty()) {
        // Outside the prefix nothing is served: the same 404 as an unknown route inside it.
        Some(prefix) => Router::new()
            .nest(&prefix, router)
            .fallback(errors::not_found),
        None => router,
    }
}

/// A base path as served: `""` for none (also for `/`), else `/seg/…` without a trailing
/// slash. `Err` says what is wrong with one that is not a plain path (a query, a fragment, an
/// empty or dot segment, a character a URL path cannot hold as it is).
pub fn base_path(path: &str) -> Result<String, String> {
    let trimmed = path.trim().trim_end_matches('/');
    if trimmed.is_empty() {
        return Ok(String::new());
    }
    let Some(rest) = trimmed.strip_prefix('/') else {
        return Err(format!("the base path {path:?} must start with /"));
    };
    for segment in rest.split('/') {
        let plain = segment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c));
        if segment.is_empty() || segment == "." || segment == ".." || !plain {
            return Err(format!(
                "the base path {path:?} must be /-separated segments of letters, digits, \
                 '-', '.', '_' or '~'"
            ));
        }
    }
    Ok(trimmed.to_string())
}

/// The early protocol's JSON-RPC paths, served beside the JSON-RPC endpoint while the early
/// protocol is on: Hexagon's (`POST /tasks`, `/tasks/sendSubscribe`, `/tasks/resubscribe`) and
/// the method-named ones python-a2a posts to (`/tasks/send`, `/tasks/get`, …; it sends
/// `tasks/resubscribe` to `/tasks/stream`). Each answers every early method: the body's method
/// decides, not the path.
pub const EARLY_JSONRPC_PATHS: [&str; 9] = [
    "/tasks",
    "/tasks/send",
    "/tasks/get",
    "/tasks/cancel",
    "/tasks/sendSubscribe",
    "/tasks/resubscribe",
    "/tasks/stream",
    "/tasks/pushNotification/set",
    "/tasks/pushNotification/get",
];

/// The early path python-a2a resubscribes on: its streams are framed as that client reads them
/// (bare early objects in `update`/`complete` events, not JSON-RPC responses).
pub const PYTHON_A2A_STREAM_PATH: &str = "/tasks/stream";

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
    /// The public card's documents (signed, for every version served), when this router
    /// serves the card.
    pub(crate) cards: Option<card::Cards>,
    /// The push signing keys' JWKS, when this router serves the card and the service signs.
    pub(crate) jwks: Option<card::Jwks>,
}

/// A set of operations: eleven flags are all it takes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OperationSet([bool; Operation::ALL.len()]);

impl OperationSet {
    fn new(operations: &[Operation]) -> Self {
        let mut set = Self::default();
        for op in operations {
            set.0[*op as usize] = true;
        }
        set
    }

    /// Whether `op` is served.
    pub(crate) fn contains(&self, op: Operation) -> bool {
        self.0[op as usize]
    }
}

/// Runs `operation` for `ctx` with its JSON request object: what both bindings do once they
/// know the caller and the operation. The `Last-Event-ID` header resumes a subscription.
pub(crate) async fn invoke(
    app: &App,
    ctx: &CallContext,
    operation: Operation,
    params: serde_json::Value,
    headers: &HeaderMap,
) -> Result<Reply, A2AError> {
    let request = operation_request(ctx, operation, params, headers)?;
    app.service.call(ctx, request).await?.into_reply()
}

/// [`invoke`]'s request: `operation`'s JSON request object decoded, for `ctx`'s tenant. A hot
/// path calls it and then the service itself rather than awaiting [`invoke`]: each `async`
/// layer around the service's call moves the call's future (kilobytes) once more.
pub(crate) fn operation_request(
    ctx: &CallContext,
    operation: Operation,
    params: serde_json::Value,
    headers: &HeaderMap,
) -> Result<OperationRequest, A2AError> {
    let mut request = decoded_request(operation, Params::Parsed(params), headers)?;
    // The service sees one tenant whichever binding (params or path) supplied it.
    request.set_tenant(&ctx.tenant);
    Ok(request)
}

/// `operation`'s request decoded from `params`, with the `Last-Event-ID` that resumes a
/// subscription.
pub(crate) fn decoded_request(
    operation: Operation,
    params: Params<'_>,
    headers: &HeaderMap,
) -> Result<OperationRequest, A2AError> {
    let resume_after = if operation == Operation::SubscribeToTask {
        context::last_event_id(headers)?
    } else {
        None
    };
    OperationRequest::from_params(operation, params, resume_after)
}
