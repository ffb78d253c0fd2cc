//! Local stand-ins for what AWS puts around the functions, for runs under `cargo lambda watch`:
//!
//! - `a2a-lambda-router`: the front door. It serves the route table `shared/hosts/lambda/routes.json` (the
//!   one `template.yaml` declares as API Gateway events) and forwards each request to its
//!   function's Function URL path under `/lambda-url/<function>/`, streaming the response; or,
//!   as the front door `FunctionUrl`, every request to the one front function.
//! - `a2a-sqs-poller`: the event source mappings. It long-polls each queue, hands the messages
//!   to the function as an SQS event through the Invoke API, and deletes what the function did
//!   not list in `batchItemFailures`.

use std::collections::BTreeMap;

use serde::Deserialize;

/// `shared/hosts/lambda/routes.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteTable {
    /// The HTTP functions and whether each streams.
    pub functions: BTreeMap<String, FunctionSpec>,
    /// The SQS functions and the queue each consumes.
    pub queue_functions: BTreeMap<String, QueueFunctionSpec>,
    /// The one function of the front door `FunctionUrl`.
    pub front_function: FrontFunctionSpec,
    /// The function serving the machine-to-machine routes on a Function URL of its own
    /// beside it.
    pub relay_function: FrontFunctionSpec,
    /// The routes.
    pub routes: Vec<Route>,
}

/// An HTTP function.
#[derive(Debug, Clone, Deserialize)]
pub struct FunctionSpec {
    /// Whether its front door uses response streaming.
    pub streaming: bool,
}

/// A function behind a Function URL of its own (the front one, or the relay one).
#[derive(Debug, Clone, Deserialize)]
pub struct FrontFunctionSpec {
    /// Its role name.
    pub name: String,
}

/// Which front door the functions stand behind (the template's `FrontDoor` parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FrontDoor {
    /// API Gateway: each route to the function `shared/hosts/lambda/routes.json` names.
    ApiGateway,
    /// A Lambda Function URL: every request to the front function.
    FunctionUrl,
}

/// An SQS function.
#[derive(Debug, Clone, Deserialize)]
pub struct QueueFunctionSpec {
    /// `work` or `push`.
    pub queue: String,
}

/// One route.
#[derive(Debug, Clone, Deserialize)]
pub struct Route {
    /// HTTP method, upper case.
    pub method: String,
    /// Path; a `{name}` segment matches any one segment.
    pub path: String,
    /// The function serving it.
    pub function: String,
}

impl RouteTable {
    /// Parses the route table.
    pub fn parse(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| format!("bad route table: {e}"))
    }

    /// The function serving `method path` behind `front_door`: the front function for any
    /// request behind a Function URL (which has no routes: the function answers what it does
    /// not serve), else as API Gateway matches it.
    pub fn function_behind(&self, front_door: FrontDoor, method: &str, path: &str) -> Option<&str> {
        match front_door {
            FrontDoor::FunctionUrl => Some(&self.front_function.name),
            FrontDoor::ApiGateway => self.function_for(method, path),
        }
    }

    /// The function serving `method path`, as API Gateway matches it: segment by segment, a
    /// literal segment before a `{variable}` one (so `/tasks/{id}` wins over `/{tenant}/tasks`
    /// for `/tasks/tasks`), a trailing `/` ignored.
    pub fn function_for(&self, method: &str, path: &str) -> Option<&str> {
        let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
        // Per segment, whether the route has a literal there: compared left to right.
        let mut best: Option<(&Route, Vec<bool>)> = None;
        for route in &self.routes {
            if !route.method.eq_ignore_ascii_case(method) {
                continue;
            }
            let pattern: Vec<&str> = route.path.split('/').skip(1).collect();
            if pattern.len() != segments.len() {
                continue;
            }
            let mut literals = Vec::with_capacity(pattern.len());
            let matched = pattern.iter().zip(&segments).all(|(p, s)| {
                let variable = p.starts_with('{') && p.ends_with('}');
                literals.push(!variable);
                if variable {
                    !s.is_empty()
                } else {
                    p == s
                }
            });
            if matched && best.as_ref().is_none_or(|(_, l)| literals > *l) {
                best = Some((route, literals));
            }
        }
        best.map(|(r, _)| r.function.as_str())
    }
}

/// One invocation of a function, from the moment it is handed its event (or request) until its
/// answer is complete (for a streamed response, its last byte): on drop it logs the function,
/// the milliseconds Lambda would bill, rounded up as Lambda rounds them, and the tasks the
/// invocation was for where the invoker knows them (`invocation ended function=… billed_ms=…
/// tasks=…`). `infra/lambda-e2e.py` adds these up to show what a durable wait costs: the
/// router, the SQS pollers and the stream poller each log one per invocation they make.
#[derive(Debug)]
pub struct Invocation {
    function: String,
    tasks: String,
    started: std::time::Instant,
}

impl Invocation {
    /// Starts timing an invocation of `function` for `tasks` (comma-separated ids, or `-`).
    pub fn start(function: &str, tasks: &str) -> Self {
        Self {
            function: function.to_owned(),
            tasks: tasks.to_owned(),
            started: std::time::Instant::now(),
        }
    }
}

impl Drop for Invocation {
    fn drop(&mut self) {
        let billed_ms = self.started.elapsed().as_micros().div_ceil(1000);
        tracing::info!(function = %self.function, billed_ms, tasks = %self.tasks, "invocation ended");
    }
}

/// The URLs of the work and push dead-letter queues of `resources`, which the template passes to
/// the queue functions (`A2A_WORK_DLQ_URL`, `A2A_PUSH_DLQ_URL`): they never look them up.
pub async fn dead_letter_queue_urls(
    clients: &a2a_aws::AwsClients,
    resources: &a2a_aws::resources::Resources,
) -> Result<[String; 2], String> {
    let mut urls = [String::new(), String::new()];
    for (url, queue) in urls.iter_mut().zip([
        &resources.work_dead_letter_queue,
        &resources.push_dead_letter_queue,
    ]) {
        let out = clients
            .sqs
            .get_queue_url()
            .queue_name(&queue.name)
            .send()
            .await
            .map_err(|e| format!("the URL of {}: {e}", queue.name))?;
        *url = out.queue_url.unwrap_or_default();
    }
    Ok(urls)
}

/// Hop-by-hop headers, and those the HTTP stack sets itself: never copied by [`forward`].
fn hop_by_hop(name: &axum::http::HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host" | "connection" | "content-length" | "transfer-encoding" | "keep-alive"
    )
}

/// The largest request body [`forward`] relays.
pub const MAX_FORWARDED_BODY: usize = 16 * 1024 * 1024;

/// Sends `request` (its method, its headers but the hop-by-hop ones, and its body) to `url`
/// and answers with what came back, the body streamed. A body over 16 MiB is answered 413
/// here. `Err` when `url` cannot be reached: the caller says so in its own terms.
pub async fn forward(
    http: &reqwest::Client,
    url: &str,
    request: axum::extract::Request,
) -> Result<axum::response::Response, reqwest::Error> {
    use axum::response::IntoResponse;
    use futures::TryStreamExt;

    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_FORWARDED_BODY).await else {
        return Ok(axum::http::StatusCode::PAYLOAD_TOO_LARGE.into_response());
    };
    let mut upstream = http.request(parts.method, url).body(body);
    for (name, value) in &parts.headers {
        if !hop_by_hop(name) {
            upstream = upstream.header(name, value);
        }
    }
    let response = upstream.send().await?;
    let mut out = axum::response::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        if !hop_by_hop(name) {
            out = out.header(name, value);
        }
    }
    let stream = response.bytes_stream().map_err(std::io::Error::other);
    Ok(out
        .body(axum::body::Body::from_stream(stream))
        .unwrap_or_else(|_| axum::http::StatusCode::BAD_GATEWAY.into_response()))
}

/// How long API Gateway waits for a buffered integration (a route without response
/// streaming): its whole answer must be in by then.
pub const BUFFERED_INTEGRATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(29);

/// [`forward`] for a buffered API Gateway route: the whole answer is read, and one not
/// complete within `timeout` is answered `504 {"message": "Endpoint request timed out"}`, as API
/// Gateway answers when its integration outlasts the 29 s it allows
/// ([`BUFFERED_INTEGRATION_TIMEOUT`]). The function is not stopped: on AWS it runs on too, to
/// its own timeout, with nobody to answer.
pub async fn forward_buffered(
    http: &reqwest::Client,
    url: &str,
    request: axum::extract::Request,
    timeout: std::time::Duration,
) -> Result<axum::response::Response, reqwest::Error> {
    use axum::response::IntoResponse;

    let deadline = tokio::time::Instant::now() + timeout;
    let timed_out = || {
        (
            axum::http::StatusCode::GATEWAY_TIMEOUT,
            axum::Json(serde_json::json!({"message": "Endpoint request timed out"})),
        )
            .into_response()
    };
    let Ok(answer) = tokio::time::timeout_at(deadline, forward(http, url, request)).await else {
        return Ok(timed_out());
    };
    let (parts, body) = answer?.into_parts();
    match tokio::time::timeout_at(deadline, axum::body::to_bytes(body, usize::MAX)).await {
        // Lambda refuses the function's answer ("Response payload size exceeded maximum
        // allowed payload size"), a function error to API Gateway.
        Ok(Ok(bytes)) if response_payload_size(&parts, &bytes) > LAMBDA_MAX_BUFFERED_RESPONSE => {
            Ok(function_error())
        }
        Ok(Ok(bytes)) => Ok(axum::response::Response::from_parts(parts, bytes.into())),
        Ok(Err(_)) => Ok(axum::http::StatusCode::BAD_GATEWAY.into_response()),
        Err(_) => Ok(timed_out()),
    }
}

/// The largest answer a buffered (not streaming) function may return: Lambda's 6 MB
/// response payload, measured on the JSON its runtime hands back ([`response_payload_size`]).
pub const LAMBDA_MAX_BUFFERED_RESPONSE: usize = 6_291_456;

/// What API Gateway answers when the function failed (here: its answer was over Lambda's 6 MB):
/// `502 {"message": "Internal server error"}`.
pub fn function_error() -> axum::response::Response {
    use axum::response::IntoResponse;

    (
        axum::http::StatusCode::BAD_GATEWAY,
        axum::Json(serde_json::json!({"message": "Internal server error"})),
    )
        .into_response()
}

/// How many bytes a buffered function's answer takes as the response payload its runtime
/// returns to Lambda behind API Gateway: the status, the headers (twice: `headers` and
/// `multiValueHeaders`), the body as a JSON string (base64 when it is not UTF-8) and
/// `isBase64Encoded`. The measure Lambda's 6 MB applies to.
pub fn response_payload_size(parts: &axum::http::response::Parts, body: &[u8]) -> usize {
    // `{"statusCode":200,"headers":{},"multiValueHeaders":{},"body":,"isBase64Encoded":false}`.
    const FIELDS: usize = 90;
    FIELDS + json_body_len(body) + 2 * json_headers_len(&parts.headers)
}

/// A JSON string's length: `text` quoted and escaped.
fn json_len(text: &str) -> usize {
    serde_json::to_string(text).map_or(text.len(), |s| s.len())
}

/// A body's length in a Lambda event's JSON: a string, or base64 when it is not UTF-8.
fn json_body_len(body: &[u8]) -> usize {
    match std::str::from_utf8(body) {
        Ok(text) => json_len(text),
        Err(_) => body.len().div_ceil(3) * 4 + 2,
    }
}

/// The headers' length in a Lambda event's JSON, once.
fn json_headers_len(headers: &axum::http::HeaderMap) -> usize {
    headers
        .iter()
        .map(|(name, value)| {
            json_len(name.as_str()) + json_len(&String::from_utf8_lossy(value.as_bytes())) + 2
        })
        .sum()
}

/// The largest request body API Gateway (REST) takes: 10 MiB. A larger one is answered
/// `413 {"message": "Request Too Long"}` and reaches no function.
pub const API_GATEWAY_MAX_REQUEST_BODY: usize = 10 * 1024 * 1024;

/// The largest event a synchronous invocation takes: Lambda refuses a larger one
/// (`RequestEntityTooLargeException`, "Request must be smaller than 6291456 bytes for the
/// InvokeFunction operation") and the function never runs.
pub const LAMBDA_MAX_REQUEST_EVENT: usize = 6_291_456;

/// The most a streaming function may send in one response (Lambda's default since July 2025;
/// 20 MB before): the stream is cut there.
pub const LAMBDA_MAX_STREAMED_RESPONSE: u64 = 200 * 1024 * 1024;

/// How many bytes the invocation event for a request with these headers and this body takes,
/// as the JSON the front door hands Lambda: the body as a JSON string (base64 when it is not
/// UTF-8), the headers (twice behind API Gateway: `headers` and `multiValueHeaders`), the path
/// and query, and the fixed fields of the request context. It is the measure Lambda's 6 MB
/// applies to, within the few hundred bytes the request context's exact fields make.
pub fn invocation_event_size(
    front_door: FrontDoor,
    parts: &axum::http::request::Parts,
    body: &[u8],
) -> usize {
    // The request context's fields the request does not change: ids, account, stage, times,
    // the caller's address and user agent (counted again below, with the headers).
    const CONTEXT: usize = 1_200;
    let body = json_body_len(body);
    let headers = json_headers_len(&parts.headers);
    let copies = match front_door {
        FrontDoor::ApiGateway => 2,
        FrontDoor::FunctionUrl => 1,
    };
    let target = json_len(parts.uri.path()) + parts.uri.query().map_or(0, |q| 2 * json_len(q));
    CONTEXT + body + copies * headers + 2 * target
}

/// Whether AWS refuses to hand a request with these headers and this body to a function:
/// behind API Gateway a body over 10 MiB ([`API_GATEWAY_MAX_REQUEST_BODY`]), behind either
/// front door an invocation event over Lambda's 6 MB ([`LAMBDA_MAX_REQUEST_EVENT`],
/// [`invocation_event_size`]). Its caller then gets [`request_too_large`].
pub fn refused_request(
    front_door: FrontDoor,
    parts: &axum::http::request::Parts,
    body: &[u8],
) -> Option<axum::response::Response> {
    let refused = (front_door == FrontDoor::ApiGateway
        && body.len() > API_GATEWAY_MAX_REQUEST_BODY)
        || invocation_event_size(front_door, parts, body) > LAMBDA_MAX_REQUEST_EVENT;
    refused.then(|| request_too_large(front_door))
}

/// What AWS answers, in place of the function, a request too large for it: 413, API Gateway's
/// `{"message": "Request Too Long"}` or, behind a Function URL, Lambda's own error.
pub fn request_too_large(front_door: FrontDoor) -> axum::response::Response {
    use axum::response::IntoResponse;

    let body = match front_door {
        FrontDoor::ApiGateway => serde_json::json!({"message": "Request Too Long"}),
        FrontDoor::FunctionUrl => serde_json::json!({
            "Message": format!(
                "Request must be smaller than {LAMBDA_MAX_REQUEST_EVENT} bytes for the InvokeFunction operation"
            ),
            "Type": "User",
        }),
    };
    (axum::http::StatusCode::PAYLOAD_TOO_LARGE, axum::Json(body)).into_response()
}

/// `body`, cut at `limit` bytes as Lambda cuts a streamed response that outgrows
/// [`LAMBDA_MAX_STREAMED_RESPONSE`]: the chunks within the limit pass, the one that would pass
/// it ends the stream with an error, and its caller sees the response break off unfinished.
pub fn cut_streamed_response(body: axum::body::Body, limit: u64) -> axum::body::Body {
    use futures::StreamExt;

    let mut sent = 0u64;
    axum::body::Body::from_stream(body.into_data_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        sent += chunk.len() as u64;
        if sent > limit {
            return Err(std::io::Error::other(format!(
                "the function's streamed response passed Lambda's {limit} bytes"
            )));
        }
        Ok(chunk)
    }))
}

/// `body`, ended at `deadline` as Lambda ends an invocation at its function's `Timeout`: the
/// chunks before it pass; at the deadline the stream ends with an error (its caller sees the
/// answer break off) and `on_timeout` runs, once. A body that ends first is passed on whole.
pub fn end_body_at(
    body: axum::body::Body,
    deadline: tokio::time::Instant,
    on_timeout: impl FnOnce() + Send + 'static,
) -> axum::body::Body {
    use futures::StreamExt;

    let chunks = body.into_data_stream();
    let stream = futures::stream::unfold(
        (chunks, Some(on_timeout)),
        move |(mut chunks, mut on_timeout)| async move {
            let on = on_timeout.take()?;
            tokio::select! {
                chunk = chunks.next() => {
                    let chunk = chunk?.map_err(std::io::Error::other);
                    Some((chunk, (chunks, Some(on))))
                }
                () = tokio::time::sleep_until(deadline) => {
                    on();
                    let cut = std::io::Error::other("the invocation reached its function's timeout");
                    Some((Err(cut), (chunks, None)))
                }
            }
        },
    );
    axum::body::Body::from_stream(stream)
}

/// A function's `Timeout` as its local environment file gives it
/// (`A2A_LOCAL_INVOCATION_TIMEOUT_SECS='N'`, infra/sam-translate.py --local-env), if it does.
pub fn timeout_in_env_file(text: &str) -> Option<std::time::Duration> {
    text.lines().find_map(|line| {
        let value = line
            .trim()
            .strip_prefix("A2A_LOCAL_INVOCATION_TIMEOUT_SECS=")?;
        let secs = value.trim_matches(|c| c == '\'' || c == '"').parse().ok()?;
        Some(std::time::Duration::from_secs(secs))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_like_api_gateway() {
        let table = RouteTable::parse(include_str!("../../../shared/hosts/lambda/routes.json"))
            .expect("routes.json parses");
        let f = |m, p| table.function_for(m, p);
        assert_eq!(f("POST", "/message:send"), Some("send"));
        assert_eq!(f("POST", "/message:stream"), Some("stream"));
        assert_eq!(f("GET", "/tasks"), Some("list"));
        assert_eq!(f("GET", "/tasks/abc"), Some("get"));
        assert_eq!(f("GET", "/tasks/abc:subscribe"), Some("get"));
        assert_eq!(f("POST", "/tasks/abc:cancel"), Some("cancel"));
        assert_eq!(
            f("POST", "/tasks/abc/pushNotificationConfigs"),
            Some("push-config")
        );
        assert_eq!(
            f("DELETE", "/tasks/abc/pushNotificationConfigs/x"),
            Some("push-config")
        );
        assert_eq!(f("GET", "/.well-known/agent-card.json"), Some("card"));
        assert_eq!(f("POST", "/jsonrpc/"), Some("rpc"));
        // CORS preflights reach a function serving the path (it answers them when configured).
        assert_eq!(f("OPTIONS", "/acme/tasks/abc:cancel"), Some("get"));
        assert_eq!(f("OPTIONS", "/jsonrpc"), Some("rpc"));
        assert_eq!(f("PUT", "/tasks"), None);
        assert_eq!(f("GET", "/nope"), None);
    }

    #[test]
    fn behind_a_function_url_every_request_goes_to_the_front_function() {
        let table = RouteTable::parse(include_str!("../../../shared/hosts/lambda/routes.json"))
            .expect("routes.json parses");
        for (method, path) in [
            ("POST", "/message:send"),
            ("GET", "/.well-known/jwks.json"),
            ("POST", "/jsonrpc"),
            ("GET", "/nope"),
        ] {
            assert_eq!(
                table.function_behind(FrontDoor::FunctionUrl, method, path),
                Some("front")
            );
        }
        assert_eq!(
            table.function_behind(FrontDoor::ApiGateway, "POST", "/jsonrpc"),
            Some("rpc")
        );
        // The relay function's own URL (routes.json's relayFunction) beside it.
        assert_eq!(table.relay_function.name, "relay");
        assert_eq!(
            table.function_behind(FrontDoor::ApiGateway, "GET", "/nope"),
            None
        );
    }

    /// A route of an older protocol version (issue #16): the 0.3 REST binding under /v1,
    /// python-a2a's `/agent.json`, and the early JSON-RPC paths (`POST /tasks`, and the literal
    /// paths under `/tasks/`, where the 1.0 routes have `{id}`).
    fn legacy(r: &Route) -> bool {
        let early = (r.path == "/tasks" && r.method == "POST")
            || r.path
                .strip_prefix("/tasks/")
                .is_some_and(|rest| !rest.starts_with('{'));
        r.path.starts_with("/v1/") || r.path == "/agent.json" || early
    }

    #[test]
    fn older_versions_have_their_own_routes() {
        let table = RouteTable::parse(include_str!("../../../shared/hosts/lambda/routes.json"))
            .expect("routes.json parses");
        let f = |m, p| table.function_for(m, p);
        // A2A 0.3 REST: each 1.0 route under /v1, to the 1.0 route's function; `/v1` wins over
        // `{tenant}` as a literal segment does.
        assert_eq!(f("POST", "/v1/message:send"), Some("send"));
        assert_eq!(f("POST", "/v1/message:stream"), Some("stream"));
        assert_eq!(f("GET", "/v1/tasks/abc"), Some("get"));
        assert_eq!(f("GET", "/v1/tasks/abc:subscribe"), Some("get"));
        assert_eq!(f("POST", "/v1/tasks/abc:subscribe"), Some("cancel"));
        assert_eq!(f("POST", "/v1/tasks/abc:cancel"), Some("cancel"));
        assert_eq!(
            f("GET", "/v1/tasks/abc/pushNotificationConfigs"),
            Some("push-config")
        );
        assert_eq!(
            f("DELETE", "/v1/tasks/abc/pushNotificationConfigs/x"),
            Some("push-config")
        );
        assert_eq!(f("GET", "/v1/card"), Some("card"));
        assert_eq!(f("GET", "/.well-known/agent.json"), Some("card"));
        // The early protocol's JSON-RPC paths, beside ListTasks and the 1.0 task routes.
        assert_eq!(f("POST", "/tasks"), Some("rpc"));
        assert_eq!(f("GET", "/tasks"), Some("list"));
        assert_eq!(f("POST", "/tasks/sendSubscribe"), Some("rpc"));
        assert_eq!(f("POST", "/tasks/resubscribe/"), Some("rpc"));
        assert_eq!(f("POST", "/tasks/abc:cancel"), Some("cancel"));
        assert_eq!(f("OPTIONS", "/tasks/sendSubscribe"), Some("rpc"));
        // python-a2a's method-named paths, and its other early card path.
        for path in [
            "/tasks/send",
            "/tasks/get",
            "/tasks/cancel",
            "/tasks/stream",
        ] {
            assert_eq!(f("POST", path), Some("rpc"), "{path}");
        }
        assert_eq!(f("POST", "/tasks/pushNotification/set"), Some("rpc"));
        assert_eq!(f("GET", "/agent.json"), Some("card"));
        // No tenant forms.
        assert_eq!(f("POST", "/acme/v1/message:send"), None);
    }

    #[test]
    fn tenant_routes_sit_beside_the_static_ones() {
        let table = RouteTable::parse(include_str!("../../../shared/hosts/lambda/routes.json"))
            .expect("routes.json parses");
        let f = |m, p| table.function_for(m, p);
        assert_eq!(f("POST", "/acme/message:send"), Some("send"));
        assert_eq!(f("POST", "/acme/message:stream"), Some("stream"));
        assert_eq!(f("GET", "/acme/tasks"), Some("list"));
        assert_eq!(f("GET", "/acme/tasks/abc:subscribe"), Some("get"));
        assert_eq!(f("POST", "/acme/tasks/abc:cancel"), Some("cancel"));
        assert_eq!(
            f("GET", "/acme/tasks/abc/pushNotificationConfigs/x"),
            Some("push-config")
        );
        assert_eq!(f("GET", "/acme/extendedAgentCard"), Some("card"));
        // A literal segment wins over `{tenant}`, as in API Gateway's resource tree.
        assert_eq!(f("GET", "/tasks/tasks"), Some("get"));
        assert_eq!(f("GET", "/tasks/abc"), Some("get"));
        // The documents and JSON-RPC have no tenant form.
        assert_eq!(f("GET", "/acme/.well-known/agent-card.json"), None);
        assert_eq!(f("POST", "/acme/jsonrpc"), None);
        // Every 1.0 operation route has its tenant form, to the same function; the older
        // versions' routes (0.3 under /v1, the early JSON-RPC paths) and the chat channels'
        // (a room is no tenant) have none.
        for r in &table.routes {
            if r.path.starts_with("/.well-known/")
                || r.path.starts_with("/a2a-lite/")
                // The relay route is ours, not the tenant's: the task's owner is in our store.
                || r.path.starts_with("/a2a-relay/")
                || r.path == "/jsonrpc"
                || legacy(r)
            {
                continue;
            }
            let (plain, tenant) = match r.path.strip_prefix("/{tenant}") {
                Some(rest) => (rest.to_owned(), r.path.clone()),
                None => (r.path.clone(), format!("/{{tenant}}{}", r.path)),
            };
            for path in [plain, tenant] {
                assert!(
                    table.routes.iter().any(|x| x.method == r.method
                        && x.path == path
                        && x.function == r.function),
                    "{} {path} is missing",
                    r.method
                );
            }
        }
    }

    /// `forward` over real sockets: what the upstream sees and what comes back.
    #[tokio::test(flavor = "current_thread")]
    async fn forward_relays_all_but_hop_by_hop_headers() {
        use axum::http::{HeaderMap, StatusCode};

        let upstream =
            axum::Router::new().fallback(|headers: HeaderMap, body: String| async move {
                let seen = format!(
                    "target={} connection={} body={body}",
                    headers
                        .get("x-amz-target")
                        .map_or("-", |v| v.to_str().unwrap_or("?")),
                    headers
                        .get("connection")
                        .map_or("-", |v| v.to_str().unwrap_or("?")),
                );
                (StatusCode::CREATED, [("x-amzn-requestid", "r1")], seen)
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, upstream).await });
        let http = reqwest::Client::new();
        let url = format!("http://{address}/q");

        let request = axum::http::Request::post("/q")
            .header("x-amz-target", "DynamoDB_20120810.GetItem")
            .header("connection", "close")
            .body(axum::body::Body::from("{}"))
            .unwrap();
        let response = forward(&http, &url, request).await.unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        assert_eq!(response.headers()["x-amzn-requestid"], "r1");
        assert!(response.headers().get("connection").is_none());
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(
            &body[..],
            b"target=DynamoDB_20120810.GetItem connection=- body={}"
        );

        let too_big = axum::http::Request::post("/q")
            .body(axum::body::Body::from(vec![b'x'; MAX_FORWARDED_BODY + 1]))
            .unwrap();
        let response = forward(&http, &url, too_big).await.unwrap();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);

        let nobody = format!("http://{}/q", free_address().await);
        let request = axum::http::Request::get("/q")
            .body(axum::body::Body::empty())
            .unwrap();
        assert!(forward(&http, &nobody, request).await.is_err());
    }

    /// An address nothing listens on.
    async fn free_address() -> std::net::SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap()
    }
}
