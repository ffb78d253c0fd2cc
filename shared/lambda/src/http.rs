//! The HTTP functions: one slice of the A2A surface each, on `lambda_http`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use a2a_core::Agent;
use a2a_http::{router_with, HttpOptions, Surface};
use a2a_protocol::jsonrpc::Method;
use axum::Router;
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};
use tower::ServiceExt;

use crate::{Error, Init};

/// The HTTP functions, each serving a slice of the surface. The front door's routes
/// (`infra/routes.json`) send each REST route to one of them.
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

    /// Whether the function answers in response-streaming mode (it serves an SSE operation).
    /// The template's front door must use `RESPONSE_STREAM` for exactly these.
    pub fn streaming(self) -> bool {
        matches!(self, Self::Get | Self::Cancel | Self::Stream | Self::Rpc)
    }

    /// The slice of the surface the function serves.
    pub fn surface(self) -> Surface {
        use Method as M;
        let rest = |operations: Vec<Method>| Surface {
            operations,
            jsonrpc: false,
            rest: true,
            card: false,
        };
        match self {
            Self::Send => rest(vec![M::SendMessage]),
            Self::Get => rest(vec![M::GetTask, M::SubscribeToTask]),
            Self::List => rest(vec![M::ListTasks]),
            Self::Cancel => rest(vec![M::CancelTask, M::SubscribeToTask]),
            Self::PushConfig => rest(vec![
                M::CreateTaskPushNotificationConfig,
                M::GetTaskPushNotificationConfig,
                M::ListTaskPushNotificationConfigs,
                M::DeleteTaskPushNotificationConfig,
            ]),
            Self::Card => Surface {
                operations: vec![M::GetExtendedAgentCard],
                jsonrpc: false,
                rest: true,
                card: true,
            },
            Self::Stream => rest(vec![M::SendStreamingMessage, M::SubscribeToTask]),
            Self::Rpc => Surface {
                operations: Method::ALL.to_vec(),
                jsonrpc: true,
                rest: false,
                card: false,
            },
        }
    }

    /// Whether the function needs the push signing keys (the card function publishes them).
    pub fn needs_keys(self) -> bool {
        self == Self::Card
    }
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

    #[test]
    fn every_operation_is_served_over_rest_and_json_rpc() {
        for op in Method::ALL {
            assert!(HttpFunction::Rpc.surface().operations.contains(&op));
            assert!(
                HttpFunction::ALL
                    .iter()
                    .any(|f| f.surface().rest && f.surface().operations.contains(&op)),
                "{op:?} has no REST function"
            );
        }
        // Every function serving an SSE operation streams.
        for f in HttpFunction::ALL {
            let sse = f
                .surface()
                .operations
                .iter()
                .any(|op| matches!(op, Method::SendStreamingMessage | Method::SubscribeToTask));
            assert_eq!(sse, f.streaming(), "{f:?}");
        }
    }
}
