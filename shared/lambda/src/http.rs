//! The HTTP functions: one slice of the A2A surface each, on `lambda_http`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use a2a_core::Agent;
use a2a_core::Operation;
use a2a_http::{router_with, HttpOptions, Surface};
use axum::Router;
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};
use tower::ServiceExt;

use crate::{Error, Init};

/// The HTTP functions, each serving a slice of the surface. The front door's routes
/// (`infra/routes.json`) send each REST route, and its `/{tenant}/…` form, to one of them; the
/// request reaches `a2a_http` with its path as sent, so the tenant scopes the call there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpFunction {
    /// `POST /message:send`.
    Send,
    /// `GET /tasks/{id}`, and `GET /tasks/{id}:subscribe` (API Gateway cannot route on a
    /// suffix inside a path segment, so the function behind `GET /tasks/{id}` serves both).
    Get,
    /// `GET /tasks`.
    List,
    /// `POST /tasks/{id}:cancel`, and `POST /tasks/{id}:subscribe` (same reason as [`Self::Get`]).
    Cancel,
    /// The four push config operations.
    PushConfig,
    /// The public card, the extended card and the JWKS.
    Card,
    /// `POST /message:stream` (and subscribe).
    Stream,
    /// Every JSON-RPC method on one URL.
    Rpc,
}

impl HttpFunction {
    /// Every HTTP function.
    pub const ALL: [HttpFunction; 8] = [
        Self::Send,
        Self::Get,
        Self::List,
        Self::Cancel,
        Self::PushConfig,
        Self::Card,
        Self::Stream,
        Self::Rpc,
    ];

    /// The function's name: its crate and binary under `functions/`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Send => "send",
            Self::Get => "get",
            Self::List => "list",
            Self::Cancel => "cancel",
            Self::PushConfig => "push-config",
            Self::Card => "card",
            Self::Stream => "stream",
            Self::Rpc => "rpc",
        }
    }

    /// Whether the function answers in response-streaming mode: it serves an SSE operation.
    /// The template's front door must use `RESPONSE_STREAM` for exactly these (a test checks
    /// `template.yaml` and `infra/routes.json` against this).
    pub fn streaming(self) -> bool {
        self.surface().operations.iter().any(|op| op.is_streaming())
    }

    /// The slice of the surface the function serves, derived from the front door's route table
    /// (`infra/routes.json`, compiled in) and the core's operation table: the operations whose
    /// REST route the table sends to this function, all of them on JSON-RPC for the function
    /// behind the JSON-RPC path, and the card for the one behind `/.well-known/…`.
    pub fn surface(self) -> Surface {
        let mut surface = Surface {
            operations: Vec::new(),
            jsonrpc: false,
            rest: false,
            card: false,
        };
        for route in route_table().iter().filter(|r| r.function == self.name()) {
            if route.path == "/jsonrpc" {
                surface.jsonrpc = true;
                surface.operations = Operation::ALL.to_vec();
            } else if route.path.starts_with("/.well-known/") {
                surface.card = true;
            } else if !route.path.starts_with("/{tenant}/") {
                for op in Operation::ALL {
                    let routed = op.rest_routes().iter().any(|r| {
                        r.verb.as_str() == route.method
                            && path_shape(r.path) == path_shape(&route.path)
                    });
                    if routed && !surface.operations.contains(&op) {
                        surface.rest = true;
                        surface.operations.push(op);
                    }
                }
            }
        }
        surface
    }

    /// Whether the function needs the push signing keys (the card function publishes them).
    pub fn needs_keys(self) -> bool {
        self == Self::Card
    }
}

/// One route of `infra/routes.json`: which function serves `method path`.
#[derive(Debug, serde::Deserialize)]
struct Route {
    method: String,
    path: String,
    function: String,
}

/// The front door's routes (`infra/routes.json`, compiled in).
fn route_table() -> &'static [Route] {
    #[derive(serde::Deserialize)]
    struct Table {
        routes: Vec<Route>,
    }
    static TABLE: OnceLock<Vec<Route>> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str::<Table>(include_str!("../../../infra/routes.json"))
            .expect("infra/routes.json is valid (a test parses it)")
            .routes
    })
}

/// A path as API Gateway routes it: parameters unnamed, and the `:action` after a parameter
/// dropped (API Gateway cannot route on a suffix inside a segment, so `/tasks/{id}:cancel`
/// reaches the function behind `/tasks/{id}`).
fn path_shape(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "{}"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Runs `function` for `agent`: builds clients and configuration once, then serves requests
/// until the runtime stops the instance.
pub async fn serve_http(function: HttpFunction, agent: Arc<dyn Agent>) -> Result<(), Error> {
    let init = Init::for_callers(agent, function.needs_keys()).await?;
    let handler = LazyRouter::new(init, function);
    if function.streaming() {
        lambda_http::run_with_streaming_response(handler).await
    } else {
        lambda_http::run(handler).await
    }
}

/// The function's router, built on the first request when the public base URL is not
/// configured: the card must list the deployment's real URLs, and inside a SAM template the
/// functions behind an API cannot name the API's URL (that would be a dependency cycle), so the
/// first request's domain and stage supply it.
#[derive(Clone)]
pub struct LazyRouter {
    init: Arc<Init>,
    function: HttpFunction,
    router: Arc<OnceLock<Router>>,
}

impl LazyRouter {
    /// A router for `function`; built now if the base URL is configured.
    pub fn new(init: Init, function: HttpFunction) -> Self {
        let this = Self {
            init: Arc::new(init),
            function,
            router: Arc::new(OnceLock::new()),
        };
        if let Some(base) = this.init.settings.public_base_url.clone() {
            let _ = this.router.set(this.build(Some(&base)));
        }
        this
    }

    fn build(&self, base: Option<&str>) -> Router {
        let options = HttpOptions {
            jsonrpc_path: self.init.settings.jsonrpc_path.clone(),
            ..HttpOptions::default()
        };
        router_with(self.init.service(base), options, &self.function.surface())
    }

    fn router_for(&self, request: &Request) -> Router {
        self.router
            .get_or_init(|| self.build(base_url_of(request).as_deref()))
            .clone()
    }
}

/// The public base URL a request came through: API Gateway's domain and stage (REST API), or
/// the Function URL's domain.
pub fn base_url_of(request: &Request) -> Option<String> {
    match request.request_context_ref()? {
        RequestContext::ApiGatewayV1(ctx) => {
            let domain = ctx.domain_name.as_deref()?;
            match ctx
                .stage
                .as_deref()
                .filter(|s| !s.is_empty() && *s != "$default")
            {
                // A custom domain maps the stage itself: set A2A_PUBLIC_BASE_URL for those.
                Some(stage) if domain.contains(".execute-api.") => {
                    Some(format!("https://{domain}/{stage}"))
                }
                _ => Some(format!("https://{domain}")),
            }
        }
        RequestContext::ApiGatewayV2(ctx) => {
            let domain = ctx.domain_name.as_deref()?;
            Some(format!("https://{domain}"))
        }
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl tower::Service<Request> for LazyRouter {
    type Response = axum::response::Response;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let router = self.router_for(&request);
        let request = request.map(axum::body::Body::new);
        Box::pin(async move { router.oneshot(request).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What API Gateway (REST, Lambda proxy) sends for `method path` matched to `resource`.
    fn rest_event(method: &str, resource: &str, path: &str) -> Request {
        let event = serde_json::json!({
            "resource": resource,
            "path": path,
            "httpMethod": method,
            "headers": {"Host": "abc123.execute-api.us-east-1.amazonaws.com"},
            "multiValueHeaders": {"Host": ["abc123.execute-api.us-east-1.amazonaws.com"]},
            "queryStringParameters": null,
            "multiValueQueryStringParameters": null,
            "pathParameters": {},
            "stageVariables": null,
            "requestContext": {
                "accountId": "123456789012",
                "resourceId": "r1",
                "stage": "a2a",
                "requestId": "req",
                "identity": {"sourceIp": "203.0.113.1"},
                "resourcePath": resource,
                "httpMethod": method,
                "apiId": "abc123",
                "path": format!("/a2a{path}"),
                "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
                "protocol": "HTTP/1.1"
            },
            "body": null,
            "isBase64Encoded": false
        });
        lambda_http::request::from_str(&event.to_string()).expect("a REST proxy event")
    }

    /// The functions take the tenant from the path (`a2a_http` serves every REST route also under
    /// `/{tenant}`), so what reaches the router must be the request path as sent, tenant segment
    /// included and stage excluded (template.yaml sets AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH for
    /// every function), and the card's base URL must not pick up the tenant.
    #[test]
    fn rest_events_reach_the_router_with_their_tenant() {
        // As template.yaml's Globals do. nextest runs each test in its own process, and no other
        // test of this crate reads the environment.
        std::env::set_var("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH", "true");
        let routes: serde_json::Value =
            serde_json::from_str(include_str!("../../../infra/routes.json")).unwrap();
        let mut tenant_routes = 0;
        for route in routes["routes"].as_array().unwrap() {
            let resource = route["path"].as_str().unwrap();
            let method = route["method"].as_str().unwrap();
            let path = resource
                .replace("{tenant}", "acme")
                .replace("{id}", "t1:subscribe")
                .replace("{configId}", "c1");
            let request = rest_event(method, resource, &path);
            assert_eq!(request.uri().path(), path, "{method} {resource}");
            assert_eq!(request.method().as_str(), method);
            assert_eq!(
                base_url_of(&request).as_deref(),
                Some("https://abc123.execute-api.us-east-1.amazonaws.com/a2a")
            );
            tenant_routes += usize::from(resource.starts_with("/{tenant}/"));
        }
        assert!(tenant_routes > 0, "routes.json has no tenant routes");
    }

    #[test]
    fn every_operation_is_served_over_rest_and_json_rpc() {
        for op in Operation::ALL {
            assert!(HttpFunction::Rpc.surface().operations.contains(&op));
            assert!(
                HttpFunction::ALL
                    .iter()
                    .any(|f| f.surface().rest && f.surface().operations.contains(&op)),
                "{op:?} has no REST function"
            );
        }
        // Every function serving an SSE operation streams, and every function of the route
        // table serves something.
        for f in HttpFunction::ALL {
            let sse = f.surface().operations.iter().any(|op| {
                matches!(
                    op,
                    Operation::SendStreamingMessage | Operation::SubscribeToTask
                )
            });
            assert_eq!(sse, f.streaming(), "{f:?}");
            let surface = f.surface();
            assert!(
                surface.card || !surface.operations.is_empty(),
                "{f:?} serves nothing"
            );
        }
    }
}
