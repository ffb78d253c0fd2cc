//! The HTTP functions: one slice of the A2A surface each, on `lambda_http`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use a2a_core::Agent;
use a2a_http::{router_with, HttpOptions};
use axum::Router;
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

use crate::role::HttpFunction;
use crate::settings::Settings;
use crate::{Error, Init};

/// Runs `function` for `agent`: builds clients and configuration once, then serves requests
/// until the runtime stops the instance.
pub async fn serve_http(function: HttpFunction, agent: Arc<dyn Agent>) -> Result<(), Error> {
    let init = Init::for_callers(agent, function.key_use()).await?;
    let lite = function.serves_channels().then(|| init.lite.clone());
    let handler = LazyRouter::new(init, function, lite);
    keep_serving(|| {
        let handler = handler.clone();
        async move {
            if handler.streaming {
                crate::streamed::run(handler).await
            } else {
                lambda_http::run(handler).await
            }
        }
    })
    .await
}

/// How many runtime loops in a row may fail within [`QUICK_FAILURE`] of their start before the
/// function gives up and exits: enough to ride out a burst of callers that hang up (each loop
/// that fails served at least the invocation it failed on), few enough that a function whose
/// Runtime API is gone exits within about a second.
const QUICK_FAILURES_TOLERATED: u32 = 20;

/// A runtime loop that failed sooner than this after it started counts as a quick failure.
const QUICK_FAILURE: Duration = Duration::from_secs(1);

/// Runs the runtime loop `serve`, and runs it again when it fails.
///
/// `lambda_runtime` ends its loop with an error when it cannot hand one response to the Runtime
/// API: for example when the caller of a streamed response went away and the connection to the
/// Runtime API broke mid-body. Exiting then would throw away a warm instance for one lost
/// response (and under `cargo lambda watch`, which never restarts a function whose process
/// ended, leave the function dead), so the function asks for its next invocation instead. Only
/// when the loop keeps failing right after it starts (the Runtime API is gone) does it exit.
pub(crate) async fn keep_serving<F, Fut>(mut serve: F) -> Result<(), Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), Error>>,
{
    let mut quick_failures = 0;
    loop {
        let started = tokio::time::Instant::now();
        let error = match serve().await {
            Ok(()) => return Ok(()),
            Err(error) => error,
        };
        if started.elapsed() < QUICK_FAILURE {
            quick_failures += 1;
        } else {
            quick_failures = 1;
        }
        if quick_failures > QUICK_FAILURES_TOLERATED {
            return Err(error);
        }
        tracing::error!(%error, "the runtime loop failed; asking for the next invocation again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The function's router, built on the first request when the public base URL is not
/// configured: the card must list the deployment's real URLs, and inside a SAM template the
/// functions behind an API cannot name the API's URL (that would be a dependency cycle), so the
/// first request's domain and stage supply it.
#[derive(Clone)]
pub(crate) struct LazyRouter {
    init: Arc<Init>,
    function: HttpFunction,
    /// [`HttpFunction::streaming`], worked out once: it walks the route table, which no
    /// request needs to do again.
    streaming: bool,
    /// The A2A-Lite channels the function serves (none unless it serves channels).
    lite: Option<Arc<crate::channel::LiteSource>>,
    router: Arc<OnceLock<Router>>,
}

impl LazyRouter {
    /// A router for `function` (with the A2A-Lite channels of `lite`); built now if the base
    /// URL is configured.
    pub(crate) fn new(
        init: Init,
        function: HttpFunction,
        lite: Option<Arc<crate::channel::LiteSource>>,
    ) -> Self {
        let this = Self {
            init: Arc::new(init),
            function,
            streaming: function.streaming(),
            lite,
            router: Arc::new(OnceLock::new()),
        };
        let settings = &this.init.settings;
        // The relay function hands out relay URLs under the URL it is reached at, unless told.
        let relay_base_known = function != HttpFunction::Relay || settings.relay_base_url.is_some();
        if let (Some(base), true) = (settings.public_base_url.clone(), relay_base_known) {
            let relay_base = settings.relay_base(function, None).map(str::to_owned);
            let _ = this
                .router
                .set(this.build(Some(&base), relay_base.as_deref()));
        }
        this
    }

    /// The router with the public base URL `base` and the relay URLs under `relay_base`
    /// (`None`: under `base`), where the A2A-Lite bridge's pushes come back too.
    fn build(&self, base: Option<&str>, relay_base: Option<&str>) -> Router {
        let service = self.init.service_relayed_at(base, relay_base);
        let router = router_with(
            service.clone(),
            http_options(&self.init.settings),
            &self.function.surface(),
        );
        crate::channel::with_channels(router, self.lite.as_ref(), service, relay_base.or(base))
    }

    fn router_for(&self, request: &Request) -> Router {
        self.router
            .get_or_init(|| {
                let settings = &self.init.settings;
                let reached_at = base_url_of(request);
                // The relay function's own URL serves no card: its service lists interfaces
                // only under a configured public base URL (the A2A-Lite card it posts then
                // names the A2A card; without one it names none rather than a 404).
                let base = match self.function {
                    HttpFunction::Relay => settings.public_base_url.clone(),
                    _ => settings.public_base_url.clone().or(reached_at.clone()),
                };
                let relay_base = settings.relay_base(self.function, reached_at.as_deref());
                self.build(base.as_deref(), relay_base)
            })
            .clone()
    }
}

/// The HTTP front door's options from a function's settings.
fn http_options(settings: &Settings) -> HttpOptions {
    HttpOptions {
        jsonrpc_path: settings.jsonrpc_path.clone(),
        cors_origins: settings.cors_origins.clone(),
        base_path: settings.base_path.clone(),
        ..HttpOptions::default()
    }
}

/// The public base URL a request came through: API Gateway's domain and stage (REST API), or
/// the Function URL's domain.
pub(crate) fn base_url_of(request: &Request) -> Option<String> {
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
        let streaming = self.streaming;
        Box::pin(async move {
            let answer = crate::buffered::serve(router, request, streaming).await;
            // A buffered answer is complete once returned: its spans go first. A streamed
            // one's go at its end (streamed.rs).
            if !streaming {
                a2a_telemetry::flush().await;
            }
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::role::{route_table, KeyUse};
    use a2a_protocol::Operation;
    use tower::ServiceExt;

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
            serde_json::from_str(include_str!("../routes.json")).unwrap();
        let mut tenant_routes = 0;
        for route in routes["routes"].as_array().unwrap() {
            let resource = route["path"].as_str().unwrap();
            let method = route["method"].as_str().unwrap();
            let path = resource
                .replace("{tenant}", "acme")
                .replace("{id}", "t1:subscribe")
                .replace("{configId}", "c1")
                .replace("{txnId}", "txn1")
                .replace("{taskId}", "t1")
                .replace("{owner}", "b3duZXI");
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

    /// An agent that is never asked anything: the CORS checks stop before any operation.
    struct Idle;

    #[async_trait::async_trait]
    impl a2a_core::Agent for Idle {
        fn describe(&self) -> a2a_core::AgentDescription {
            a2a_core::AgentDescription {
                name: "idle".into(),
                ..Default::default()
            }
        }

        async fn execute(
            &self,
            _request: a2a_core::AgentRequest,
            _emitter: a2a_core::Emitter,
        ) -> Result<(), a2a_core::AgentError> {
            Ok(())
        }
    }

    const INSPECTOR: &str = "https://inspector.example";

    /// A function's environment as template.yaml sets it, with API keys (from an empty key
    /// file) and `A2A_CORS_ORIGINS` = `cors`.
    fn settings(cors: Option<&str>, key_file: &std::path::Path) -> Settings {
        let key_file = key_file.display().to_string();
        Settings::from_lookup(|name| match name {
            "A2A_TABLE" => Some("t".into()),
            "A2A_WORK_QUEUE_URL" | "A2A_PUSH_QUEUE_URL" => Some("http://q".into()),
            "A2A_AUTH" => Some("api-key".into()),
            "A2A_API_KEY_FILE" => Some(key_file.clone()),
            "A2A_CORS_ORIGINS" => cors.map(str::to_owned),
            _ => None,
        })
        .expect("settings")
    }

    /// The router `function` builds from `settings`, over an embedded store.
    fn function_router(
        function: HttpFunction,
        settings: &Settings,
        store: &a2a_test_support::server::EmbeddedStore,
    ) -> Router {
        let sdk = aws_config::SdkConfig::builder().build();
        let auth = crate::build_auth(settings, &sdk).expect("auth");
        let base = "https://abc123.execute-api.us-east-1.amazonaws.com/a2a";
        let config = settings.service_config(Some(base), None, auth);
        let service = store.service(config, Arc::new(Idle));
        router_with(service, http_options(settings), &function.surface())
    }

    fn function_named(name: &str) -> HttpFunction {
        HttpFunction::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .unwrap_or_else(|| panic!("no function {name}"))
    }

    async fn answer(router: &Router, request: Request) -> axum::response::Response {
        router
            .clone()
            .oneshot(request.map(axum::body::Body::new))
            .await
            .expect("infallible")
    }

    /// API Gateway sends every OPTIONS request to the function routes.json names; with
    /// `A2A_CORS_ORIGINS` set, that function answers a browser's preflight itself (no auth),
    /// and errors carry the headers a browser needs to read them.
    #[tokio::test]
    async fn functions_answer_preflights_when_cors_is_configured() {
        std::env::set_var("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH", "true");
        let store = a2a_test_support::server::EmbeddedStore::open();
        let dir = tempfile::tempdir().unwrap();
        let key_file = dir.path().join("api-keys.json");
        let on = settings(Some(INSPECTOR), &key_file);
        let off = settings(None, &key_file);
        let mut preflights = 0;
        for route in route_table().iter().filter(|r| r.method == "OPTIONS") {
            let function = function_named(&route.function);
            let path = route
                .path
                .replace("{tenant}", "acme")
                .replace("{id}", "t1")
                .replace("{configId}", "c1");
            let preflight = |origin: &str| {
                let mut request = rest_event("OPTIONS", &route.path, &path);
                let h = request.headers_mut();
                h.insert("origin", origin.parse().unwrap());
                h.insert("access-control-request-method", "POST".parse().unwrap());
                h.insert(
                    "access-control-request-headers",
                    "content-type,x-api-key".parse().unwrap(),
                );
                request
            };
            let router = function_router(function, &on, &store);
            let ok = answer(&router, preflight(INSPECTOR)).await;
            assert_eq!(ok.status(), 204, "OPTIONS {path} on {}", route.function);
            assert_eq!(ok.headers()["access-control-allow-origin"], INSPECTOR);
            let allowed = ok.headers()["access-control-allow-headers"]
                .to_str()
                .unwrap();
            assert!(allowed.contains("X-API-Key"), "{allowed}");

            let refused = answer(&router, preflight("https://evil.example")).await;
            assert!(!refused
                .headers()
                .contains_key("access-control-allow-origin"));

            let router = function_router(function, &off, &store);
            let off = answer(&router, preflight(INSPECTOR)).await;
            assert_ne!(off.status(), 204, "OPTIONS {path} without CORS");
            assert!(
                off.headers()
                    .keys()
                    .all(|k| !k.as_str().starts_with("access-control-")),
                "{:?}",
                off.headers()
            );
            preflights += 1;
        }
        // The A2A-Lite paths are for chat servers and our own pushes, the relay route for the
        // agents our tasks call: browsers never call them.
        let paths: std::collections::BTreeSet<&str> = route_table()
            .iter()
            .map(|r| r.path.as_str())
            .filter(|p| !p.starts_with("/a2a-lite/") && !p.starts_with("/a2a-relay/"))
            .collect();
        assert_eq!(
            preflights,
            paths.len(),
            "an OPTIONS route per path of routes.json"
        );

        // An actual request without a key: 401, readable by the browser.
        let router = function_router(HttpFunction::List, &on, &store);
        let mut request = rest_event("GET", "/{tenant}/tasks", "/acme/tasks");
        request
            .headers_mut()
            .insert("origin", INSPECTOR.parse().unwrap());
        let denied = answer(&router, request).await;
        assert_eq!(denied.status(), 401);
        assert_eq!(denied.headers()["access-control-allow-origin"], INSPECTOR);
        assert!(denied.headers().contains_key("www-authenticate"));
        let exposed = denied.headers()["access-control-expose-headers"]
            .to_str()
            .unwrap();
        assert!(exposed.contains("WWW-Authenticate"), "{exposed}");
    }

    /// Every operation a function serves is counted as an EMF line on its way out: requests,
    /// latency, and errors split into ours and the caller's, per operation.
    #[tokio::test]
    async fn operations_are_counted_in_embedded_metric_format() {
        std::env::set_var("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH", "true");
        let store = a2a_test_support::server::EmbeddedStore::open();
        let settings = Settings::from_lookup(|name| match name {
            "A2A_TABLE" => Some("t".into()),
            "A2A_WORK_QUEUE_URL" | "A2A_PUSH_QUEUE_URL" => Some("http://q".into()),
            "AWS_LAMBDA_FUNCTION_NAME" => Some("stack-GetFunction-1".into()),
            "A2A_METRICS_NAMESPACE" => Some("test-ns".into()),
            _ => None,
        })
        .unwrap();
        let lines = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let sink_lines = lines.clone();
        let mut config =
            settings.service_config(Some("https://x.example"), None, a2a_core::Auth::none());
        // The configured observer writes to stdout; the same observer on a captured sink.
        assert!(format!("{:?}", config.observer).contains("stack-GetFunction-1"));
        config.observer = Arc::new(crate::EmfObserver::with_sink(
            &settings.metrics_namespace,
            &settings.function_name,
            Arc::new(move |line: &str| sink_lines.lock().unwrap().push(line.to_owned())),
        ));
        let service = store.service(config, Arc::new(Idle));
        let router = router_with(
            service,
            http_options(&settings),
            &HttpFunction::Get.surface(),
        );
        let mut request = rest_event("GET", "/tasks/{id}", "/tasks/nope");
        request
            .headers_mut()
            .insert("a2a-version", "1.0".parse().unwrap());
        let missing = answer(&router, request).await;
        assert_eq!(missing.status(), 404);

        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 1, "{lines:?}");
        let line: serde_json::Value = serde_json::from_str(&lines[0]).expect("one JSON object");
        let directive = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "test-ns");
        assert_eq!(
            directive["Dimensions"],
            serde_json::json!([["FunctionName", "Operation"]])
        );
        assert_eq!(line["FunctionName"], "stack-GetFunction-1");
        assert_eq!(line["Operation"], "GetTask");
        assert_eq!(line["Requests"], 1.0);
        assert_eq!(line["ClientErrors"], 1.0);
        assert_eq!(line["Errors"], 0.0);
        assert!(line["Latency"].as_f64().is_some_and(|ms| ms >= 0.0));
        assert_eq!(line["error"], "TASK_NOT_FOUND");
    }

    #[test]
    fn a_bad_cors_setting_stops_the_function_with_the_reason() {
        let err = Settings::from_lookup(|name| match name {
            "A2A_TABLE" => Some("t".into()),
            "A2A_WORK_QUEUE_URL" | "A2A_PUSH_QUEUE_URL" => Some("http://q".into()),
            "A2A_CORS_ORIGINS" => Some("inspector.example".into()),
            _ => None,
        })
        .unwrap_err();
        assert!(
            matches!(&err, a2a_core::ConfigError::Invalid { setting, .. } if setting == "A2A_CORS_ORIGINS"),
            "{err}"
        );
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
        // table serves something (the channel function: the channels' routes).
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
                surface.card || !surface.operations.is_empty() || f.serves_channels(),
                "{f:?} serves nothing"
            );
        }
    }

    /// What a Lambda Function URL sends (payload 2.0) for `method path`.
    fn function_url_event(method: &str, path: &str) -> Request {
        let domain = "abcdefgh.lambda-url.us-east-1.on.aws";
        let event = serde_json::json!({
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": path,
            "rawQueryString": "",
            "headers": {"host": domain, "a2a-version": "1.0", "content-type": "application/json"},
            "requestContext": {
                "accountId": "anonymous",
                "apiId": "abcdefgh",
                "domainName": domain,
                "domainPrefix": "abcdefgh",
                "http": {
                    "method": method,
                    "path": path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": "203.0.113.1",
                    "userAgent": "test"
                },
                "requestId": "req",
                "routeKey": "$default",
                "stage": "$default",
                "time": "01/Jan/2026:00:00:00 +0000",
                "timeEpoch": 0
            },
            "body": "{}",
            "isBase64Encoded": false
        });
        lambda_http::request::from_str(&event.to_string()).expect("a Function URL event")
    }

    /// Behind a Function URL (front door `FunctionUrl`) the one `front` function gets every
    /// route, with its path as sent, and the card's base URL is the Function URL's own.
    #[test]
    fn function_url_events_reach_the_router_with_their_path_and_base_url() {
        std::env::set_var("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH", "true");
        for path in [
            "/message:send",
            "/acme/tasks/t1:cancel",
            "/jsonrpc",
            "/v1/card",
        ] {
            let request = function_url_event("POST", path);
            assert_eq!(request.uri().path(), path);
            assert_eq!(
                base_url_of(&request).as_deref(),
                Some("https://abcdefgh.lambda-url.us-east-1.on.aws")
            );
        }
    }

    /// A path of `route` (a routes.json path) with each parameter filled in.
    fn sample_path(route: &str) -> String {
        route
            .replace("{tenant}", "acme")
            .replace("{id}", "t1")
            .replace("{configId}", "c1")
            .replace("{taskId}", "t1")
            .replace("{owner}", "b3duZXI")
            .replace("{txnId}", "txn1")
    }

    /// What `router` answers for a path it does not serve.
    async fn unrouted(router: &Router) -> (u16, String) {
        status_and_body(
            answer(
                router,
                rest_event("GET", "/no/such/route", "/no/such/route"),
            )
            .await,
        )
        .await
    }

    async fn status_and_body(response: axum::response::Response) -> (u16, String) {
        let status = response.status().as_u16();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("a body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    /// The `front` function answers every route of `shared/hosts/lambda/routes.json` as the function the
    /// route names does, and streams (it serves SSE).
    #[tokio::test]
    async fn the_front_function_serves_every_route_as_its_function_does() {
        std::env::set_var("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH", "true");
        let store = a2a_test_support::server::EmbeddedStore::open();
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings::from_lookup(|name| match name {
            "A2A_TABLE" => Some("t".into()),
            "A2A_WORK_QUEUE_URL" | "A2A_PUSH_QUEUE_URL" => Some("http://q".into()),
            "A2A_AUTH" => Some("none".into()),
            "A2A_CORS_ORIGINS" => Some(INSPECTOR.into()),
            "A2A_API_KEY_FILE" => Some(dir.path().join("keys.json").display().to_string()),
            _ => None,
        })
        .expect("settings");
        assert!(HttpFunction::Front.streaming());
        assert_eq!(HttpFunction::Front.key_use(), KeyUse::Publish);
        assert!(!HttpFunction::ALL.contains(&HttpFunction::Front));
        let front = function_router(HttpFunction::Front, &settings, &store);
        let unrouted = unrouted(&front).await;
        let mut compared = 0;
        for route in route_table() {
            let path = sample_path(&route.path);
            let request = || {
                let mut request = rest_event(&route.method, &route.path, &path);
                let h = request.headers_mut();
                h.insert("a2a-version", "1.0".parse().unwrap());
                h.insert("origin", INSPECTOR.parse().unwrap());
                h.insert("access-control-request-method", "POST".parse().unwrap());
                request
            };
            let routed = function_router(function_named(&route.function), &settings, &store);
            let expected = status_and_body(answer(&routed, request()).await).await;
            assert_ne!(
                expected, unrouted,
                "{} {path}: nothing to compare",
                route.method
            );
            let got = status_and_body(answer(&front, request()).await).await;
            assert_eq!(got, expected, "{} {path} on front", route.method);
            compared += 1;
        }
        assert_eq!(compared, route_table().len());
    }

    /// The relay function serves the relay route (both forms) as the send function does, and
    /// nothing of the A2A surface: every operation route, the card and the JWKS are what a
    /// router answers a path it does not serve.
    #[tokio::test]
    async fn the_relay_function_serves_the_relay_route_and_nothing_else() {
        std::env::set_var("AWS_LAMBDA_HTTP_IGNORE_STAGE_IN_PATH", "true");
        let store = a2a_test_support::server::EmbeddedStore::open();
        let dir = tempfile::tempdir().unwrap();
        let settings = settings(None, &dir.path().join("keys.json"));
        let relay = function_router(HttpFunction::Relay, &settings, &store);
        let unrouted = unrouted(&relay).await;
        let mut relayed = 0;
        for route in route_table() {
            let path = sample_path(&route.path);
            let request = || {
                let mut request = rest_event(&route.method, &route.path, &path);
                request
                    .headers_mut()
                    .insert("a2a-version", "1.0".parse().unwrap());
                request
            };
            let got = status_and_body(answer(&relay, request()).await).await;
            if route.path.starts_with(a2a_core::RELAY_PATH) {
                let send = function_router(HttpFunction::Send, &settings, &store);
                let expected = status_and_body(answer(&send, request()).await).await;
                assert_ne!(got, unrouted, "{} {path}", route.method);
                assert_eq!(got, expected, "{} {path}", route.method);
                relayed += 1;
            } else if !route.path.starts_with("/a2a-lite/") {
                // (The channels' routes are mounted only once a channel is configured.)
                assert_eq!(got.0, unrouted.0, "{} {path} on relay", route.method);
            }
        }
        assert_eq!(relayed, 2);
    }

    #[tokio::test]
    async fn a_failed_runtime_loop_is_run_again() {
        let mut calls = 0;
        let outcome = keep_serving(|| {
            calls += 1;
            let call = calls;
            async move {
                if call < 3 {
                    Err(Error::from("IncompleteMessage"))
                } else {
                    Ok(())
                }
            }
        })
        .await;
        assert!(outcome.is_ok());
        assert_eq!(calls, 3, "two failures, then the loop that ended cleanly");
    }

    #[tokio::test]
    async fn a_runtime_loop_that_keeps_failing_at_once_ends_the_function() {
        let mut calls = 0;
        let outcome = keep_serving(|| {
            calls += 1;
            async { Err(Error::from("connection refused")) }
        })
        .await;
        assert_eq!(outcome.unwrap_err().to_string(), "connection refused");
        assert_eq!(calls, QUICK_FAILURES_TOLERATED + 1);
    }
}
