//! The two HTTP bindings: one request of any operation, as JSON in and JSON out, with
//! credentials, the version header, the tenant, a timeout and retries.
//!
//! Requests are derived from the operation table the server routes by
//! ([`a2a_protocol::OPERATIONS`]): the JSON-RPC method is the operation's name; the REST route's
//! path parameters, query parameters and body are taken from the same request fields.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use a2a_protocol::{AgentInterface, PROTOCOL_VERSION};
use a2a_protocol::{HttpVerb, Operation, RestRoute};
use reqwest::header::{HeaderMap, ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use reqwest::{Method, RequestBuilder};
use serde_json::{json, Map, Value};

use crate::auth::Auth;
pub use crate::binding::Binding;
use crate::error::{self, Error};
use crate::limits::{Exchange, Limits};
use crate::sse::{self, EventReader};

/// Which calls are retried, how often, and how long to wait in between.
///
/// Only idempotent calls are retried, and only after a transient failure (connection refused
/// or reset, a timeout, HTTP 429/502/503/504): reads (GetTask, ListTasks, the push config reads,
/// the extended card), DeleteTaskPushNotificationConfig (deleting twice deletes once), and the
/// agent card. CancelTask, CreateTaskPushNotificationConfig and streams are never retried
/// (a stream resumes by itself, see [`crate::TaskStream`]). SendMessage is retried only when
/// [`RetryPolicy::retry_send_message`] is set: the spec does not make it idempotent; a server
/// that deduplicates by `messageId` (a2a-lambda's does) returns the first result to the retry,
/// any other may run the message twice.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts after the first one.
    pub max_retries: u32,
    /// The wait before the first retry; doubled for each further one.
    pub initial_backoff: Duration,
    /// The longest wait between attempts.
    pub max_backoff: Duration,
    /// Whether SendMessage is retried too (same `messageId`).
    pub retry_send_message: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
            retry_send_message: false,
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The wait before retry `n` (0-based).
    pub fn backoff(&self, n: u32) -> Duration {
        self.initial_backoff
            .saturating_mul(2u32.saturating_pow(n))
            .min(self.max_backoff)
    }

    fn applies_to(&self, op: Operation) -> bool {
        match op {
            Operation::GetTask
            | Operation::ListTasks
            | Operation::GetTaskPushNotificationConfig
            | Operation::ListTaskPushNotificationConfigs
            | Operation::DeleteTaskPushNotificationConfig
            | Operation::GetExtendedAgentCard => true,
            Operation::SendMessage => self.retry_send_message,
            _ => false,
        }
    }
}

/// One interface of an agent, and how to talk to it.
#[derive(Debug, Clone)]
pub struct Transport {
    pub(crate) interface: AgentInterface,
    pub(crate) binding: Binding,
    pub(crate) http: reqwest::Client,
    pub(crate) auth: Auth,
    pub(crate) timeout: Option<Duration>,
    pub(crate) retry: RetryPolicy,
    pub(crate) headers: HeaderMap,
    pub(crate) limits: Limits,
    /// The longest a stream may stay silent.
    pub(crate) idle_timeout: Option<Duration>,
    /// The longest a whole stream may last, reconnects included.
    pub(crate) stream_timeout: Option<Duration>,
    next_id: Arc<AtomicU64>,
}

/// What a [`Transport`] applies to every request, beside where it goes.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) auth: Auth,
    pub(crate) timeout: Option<Duration>,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) stream_timeout: Option<Duration>,
    pub(crate) retry: RetryPolicy,
    pub(crate) headers: HeaderMap,
    pub(crate) limits: Limits,
}

/// What one streaming request should look like.
#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    /// `Last-Event-ID`: resume after this event.
    pub last_event_id: Option<String>,
    /// The REST method, where the operation has more than one route (SubscribeToTask is
    /// served as GET and POST); the first route otherwise.
    pub rest_verb: Option<HttpVerb>,
}

/// Where a stream stands against its bounds: its deadline (with the timeout it stands for)
/// and the bytes it may still read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamBounds {
    pub(crate) deadline: Option<(Instant, Duration)>,
    pub(crate) budget: u64,
}

impl Transport {
    pub(crate) fn new(
        interface: AgentInterface,
        binding: Binding,
        http: reqwest::Client,
        settings: Settings,
    ) -> Self {
        Self {
            interface,
            binding,
            http,
            auth: settings.auth,
            timeout: settings.timeout,
            retry: settings.retry,
            headers: settings.headers,
            limits: settings.limits,
            idle_timeout: settings.idle_timeout,
            stream_timeout: settings.stream_timeout,
            next_id: Arc::new(AtomicU64::new(1)),
        }
    }

    /// The version every request says it speaks: the A2A 1.1 draft on an interface that
    /// offers it (see [`crate::ClientBuilder::for_card`]), else 1.0.
    pub(crate) fn version(&self) -> &'static str {
        if self.interface.protocol_version == a2a_protocol::PROTOCOL_VERSION_1_1 {
            a2a_protocol::PROTOCOL_VERSION_1_1
        } else {
            PROTOCOL_VERSION
        }
    }

    /// The bounds of a stream opened now.
    pub(crate) fn new_stream_bounds(&self) -> StreamBounds {
        StreamBounds {
            deadline: self
                .stream_timeout
                .map(|total| (Instant::now() + total, total)),
            budget: self.limits.max_stream_bytes,
        }
    }

    /// Calls a unary operation with its request fields as JSON; returns the response JSON
    /// (`Null` for an empty body). Retries as the [`RetryPolicy`] says.
    pub async fn call(&self, op: Operation, params: Value) -> Result<Value, Error> {
        if op.is_streaming() {
            return Err(Error::Usage(format!("{op} answers with a stream")));
        }
        let mut attempt = 0;
        let mut reauthenticated = false;
        loop {
            let result = self.call_once(op, &params).await;
            let Err(e) = &result else {
                return result;
            };
            if attempt < self.retry.max_retries && self.retry.applies_to(op) && e.is_transient() {
                tokio::time::sleep(self.retry.backoff(attempt)).await;
                attempt += 1;
                continue;
            }
            // A refused OAuth2 token may have been revoked early: fetch a new one, once.
            if !reauthenticated && is_unauthenticated(e) && self.auth.refused().await {
                reauthenticated = true;
                continue;
            }
            return result;
        }
    }

    async fn call_once(&self, op: Operation, params: &Value) -> Result<Value, Error> {
        let (id, builder) = self.request(op, params, &StreamOptions::default())?;
        let builder = self.auth.apply(&self.http, builder).await?;
        // reqwest's timeout covers the whole exchange, the body's last byte included.
        let builder = match self.timeout {
            Some(t) => builder.timeout(t),
            None => builder,
        };
        let what = op.to_string();
        let exchange = Exchange {
            what: &what,
            timeout: self.timeout,
        };
        let response = builder.send().await.map_err(|e| exchange.failed(e))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = exchange
            .read_body(response, self.limits.max_body_bytes)
            .await?;
        let body = parse_body(&bytes);
        let challenge = header(&headers, WWW_AUTHENTICATE.as_str());
        match self.binding {
            Binding::JsonRpc => {
                // Authentication failures are HTTP 401/403 with a JSON-RPC error body; any other
                // answer of a JSON-RPC server is HTTP 200.
                let auth_failure = matches!(status, 401 | 403) && body.get("error").is_some();
                if status != 200 && !auth_failure {
                    return Err(Error::HttpStatus {
                        status,
                        body,
                        www_authenticate: challenge,
                    });
                }
                if status == 200 {
                    check_envelope(op, &body, id)?;
                }
                if let Some(error) = body.get("error") {
                    let mut e = error::from_json_rpc(error, status);
                    e.www_authenticate = challenge;
                    return Err(Error::Agent(Box::new(e)));
                }
                body.get("result").cloned().ok_or_else(|| {
                    Error::InvalidResponse(format!("{op}: neither result nor error: {body}"))
                })
            }
            Binding::HttpJson => {
                if (200..300).contains(&status) {
                    let ct = header(&headers, CONTENT_TYPE.as_str()).unwrap_or_default();
                    let json = ct.starts_with("application/json")
                        || ct.starts_with("application/a2a+json");
                    if !json && !bytes.is_empty() {
                        return Err(Error::InvalidResponse(format!(
                            "{op}: REST answers are JSON, got Content-Type {ct:?}"
                        )));
                    }
                    return Ok(body);
                }
                match error::from_status_body(status, &body) {
                    Some(mut e) => {
                        e.www_authenticate = challenge;
                        Err(Error::Agent(Box::new(e)))
                    }
                    None => Err(Error::HttpStatus {
                        status,
                        body,
                        www_authenticate: challenge,
                    }),
                }
            }
        }
    }

    /// Opens a streaming operation. An error answer (plain JSON, or an error as the first SSE
    /// event) is returned as `Err`; otherwise the events, read as they arrive.
    pub async fn open_stream(
        &self,
        op: Operation,
        params: &Value,
        options: &StreamOptions,
    ) -> Result<EventReader, Error> {
        self.open_stream_within(op, params, options, self.new_stream_bounds())
            .await
    }

    /// [`Self::open_stream`] within `bounds` (a resumed stream's are what is left of them).
    pub(crate) async fn open_stream_within(
        &self,
        op: Operation,
        params: &Value,
        options: &StreamOptions,
        bounds: StreamBounds,
    ) -> Result<EventReader, Error> {
        if !op.is_streaming() {
            return Err(Error::Usage(format!("{op} does not answer with a stream")));
        }
        let mut reauthenticated = false;
        loop {
            let result = self.open_stream_once(op, params, options, bounds).await;
            match &result {
                Err(e) if !reauthenticated && is_unauthenticated(e) => {
                    if !self.auth.refused().await {
                        return result;
                    }
                    reauthenticated = true;
                }
                _ => return result,
            }
        }
    }

    async fn open_stream_once(
        &self,
        op: Operation,
        params: &Value,
        options: &StreamOptions,
        bounds: StreamBounds,
    ) -> Result<EventReader, Error> {
        let (_, builder) = self.request(op, params, options)?;
        let mut builder = self
            .auth
            .apply(&self.http, builder)
            .await?
            .header(ACCEPT, "text/event-stream");
        if let Some(last) = &options.last_event_id {
            builder = builder.header("Last-Event-ID", last.as_str());
        }
        let what = op.to_string();
        // The wait for the response head: the call's timeout, or what is left of the stream's.
        let head_timeout = match (self.timeout, bounds.deadline) {
            (Some(t), Some((at, _))) => Some(t.min(at.saturating_duration_since(Instant::now()))),
            (t, deadline) => {
                t.or(deadline.map(|(at, _)| at.saturating_duration_since(Instant::now())))
            }
        };
        let exchange = Exchange {
            what: &what,
            timeout: head_timeout,
        };
        let send = builder.send();
        let response = match head_timeout {
            Some(t) => tokio::time::timeout(t, send)
                .await
                .map_err(|_| Error::Timeout {
                    what: format!("{op}: the answer's head"),
                    after: t,
                })?,
            None => send.await,
        }
        .map_err(|e| exchange.failed(e))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let ct = header(&headers, CONTENT_TYPE.as_str()).unwrap_or_default();
        if !ct.starts_with("text/event-stream") {
            let read = exchange.read_body(response, self.limits.max_body_bytes);
            let bytes = match head_timeout {
                Some(t) => tokio::time::timeout(t, read)
                    .await
                    .map_err(|_| Error::Timeout {
                        what: format!("{op}: the answer"),
                        after: t,
                    })??,
                None => read.await?,
            };
            let body = parse_body(&bytes);
            let challenge = header(&headers, WWW_AUTHENTICATE.as_str());
            let decoded = match self.binding {
                Binding::JsonRpc => body.get("error").map(|e| error::from_json_rpc(e, status)),
                Binding::HttpJson => error::from_status_body(status, &body),
            };
            return Err(match decoded {
                Some(mut e) => {
                    e.www_authenticate = challenge;
                    Error::Agent(Box::new(e))
                }
                None if status == 200 => Error::InvalidResponse(format!(
                    "{op}: a 200 streaming answer must be text/event-stream, got {ct:?}: {body}"
                )),
                None => Error::HttpStatus {
                    status,
                    body,
                    www_authenticate: challenge,
                },
            });
        }
        if status != 200 {
            return Err(Error::InvalidResponse(format!(
                "{op}: an SSE answer with status {status}"
            )));
        }
        let mut reader = EventReader::new(
            self.binding,
            status,
            headers,
            Box::pin(response.bytes_stream()),
        )
        .limits(self.limits.max_event_bytes, bounds.budget)
        .idle_timeout(self.idle_timeout)
        .deadline(bounds.deadline);
        // An error before any data is sent as the first event (the digest's interop advice).
        if let Some(first) = reader.next_event().await? {
            if let Err(e @ Error::Agent(_)) = sse::payload(self.binding, &first) {
                return Err(e);
            }
            reader.push_front(first);
        }
        Ok(reader)
    }

    /// The request of `op` with `params`, and its JSON-RPC id (0 for REST).
    fn request(
        &self,
        op: Operation,
        params: &Value,
        options: &StreamOptions,
    ) -> Result<(u64, RequestBuilder), Error> {
        let Value::Object(fields) = params else {
            return Err(Error::Usage(format!(
                "{op}: the request must be a JSON object"
            )));
        };
        let mut fields = fields.clone();
        let tenant = &self.interface.tenant;
        let (id, builder) = match self.binding {
            Binding::JsonRpc => {
                if !tenant.is_empty() && !fields.contains_key("tenant") {
                    fields.insert("tenant".into(), json!(tenant));
                }
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                let body =
                    json!({"jsonrpc": "2.0", "id": id, "method": op.name(), "params": fields});
                let url = self.auth.with_query_key(parse_url(&self.interface.url)?);
                let builder = self
                    .http
                    .post(url)
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.to_string());
                (id, builder)
            }
            Binding::HttpJson => {
                let routes = op.rest_routes();
                let route = options
                    .rest_verb
                    .and_then(|v| routes.iter().find(|r| r.verb == v))
                    .unwrap_or(&routes[0]);
                let tenant = fields
                    .remove("tenant")
                    .and_then(|t| t.as_str().map(str::to_string))
                    .filter(|t| !t.is_empty())
                    .unwrap_or_else(|| tenant.clone());
                let (url, body) = rest_url_and_body(&self.interface.url, &tenant, route, fields)?;
                let url = self.auth.with_query_key(url);
                let method = match route.verb {
                    HttpVerb::Get => Method::GET,
                    HttpVerb::Post => Method::POST,
                    HttpVerb::Delete => Method::DELETE,
                };
                let mut builder = self.http.request(method, url);
                if let Some(body) = body {
                    builder = builder
                        .header(CONTENT_TYPE, "application/json")
                        .body(body.to_string());
                }
                (0, builder)
            }
        };
        let builder = builder
            .headers(self.headers.clone())
            .header("A2A-Version", self.version());
        Ok((id, builder))
    }
}

fn is_unauthenticated(e: &Error) -> bool {
    match e {
        Error::Agent(a) => a.http_status == 401,
        Error::HttpStatus { status, .. } => *status == 401,
        _ => false,
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The body as JSON: `Null` when empty, a JSON string when it is not JSON.
pub(crate) fn parse_body(bytes: &[u8]) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

fn check_envelope(op: Operation, body: &Value, id: u64) -> Result<(), Error> {
    if body["jsonrpc"] != "2.0" || body["id"] != json!(id) {
        return Err(Error::InvalidResponse(format!(
            "{op}: not the JSON-RPC response to request {id}: {body}"
        )));
    }
    Ok(())
}

pub(crate) fn parse_url(url: &str) -> Result<url::Url, Error> {
    url::Url::parse(url).map_err(|e| Error::Usage(format!("invalid URL {url:?}: {e}")))
}

/// The REST URL of `route` under `base` (with the `/{tenant}` prefix when set), with path
/// parameters and query parameters taken from `fields`, and the JSON body of the remaining
/// fields when the route takes one (`{}` when none are left).
fn rest_url_and_body(
    base: &str,
    tenant: &str,
    route: &RestRoute,
    mut fields: Map<String, Value>,
) -> Result<(url::Url, Option<Value>), Error> {
    let mut path = String::new();
    if !tenant.is_empty() {
        path.push('/');
        path.push_str(&encode_segment(tenant));
    }
    let mut rest = route.path;
    while let Some(start) = rest.find('{') {
        let end = rest[start..]
            .find('}')
            .map(|i| start + i)
            .unwrap_or(rest.len());
        path.push_str(&rest[..start]);
        let name = &rest[start + 1..end];
        let value = match fields.remove(name) {
            Some(Value::String(s)) if !s.is_empty() => s,
            _ => return Err(Error::Usage(format!("{name} is required"))),
        };
        path.push_str(&encode_segment(&value));
        rest = &rest[(end + 1).min(rest.len())..];
    }
    path.push_str(rest);
    let mut url = parse_url(&format!("{}{path}", base.trim_end_matches('/')))?;
    if route.body {
        return Ok((url, Some(Value::Object(fields))));
    }
    // A route without a body takes the remaining fields as query parameters (the table's
    // `query` names the ones the server types; any other is passed on for it to judge).
    if !fields.is_empty() {
        let mut query = url.query_pairs_mut();
        for (name, value) in fields {
            let text = match value {
                Value::String(s) => s,
                Value::Null => continue,
                other => other.to_string(),
            };
            query.append_pair(&name, &text);
        }
    }
    if url.query() == Some("") {
        url.set_query(None);
    }
    let body = None;
    Ok((url, body))
}

/// Percent-encodes one path segment (everything but RFC 3986 unreserved characters).
fn encode_segment(segment: &str) -> String {
    let mut out = String::new();
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn rest_requests_follow_the_operation_table() {
        let route = &Operation::GetTask.rest_routes()[0];
        let (url, body) = rest_url_and_body(
            "http://h/a2a/",
            "",
            route,
            object(json!({"id": "t 1", "historyLength": 2})),
        )
        .unwrap();
        assert_eq!(url.as_str(), "http://h/a2a/tasks/t%201?historyLength=2");
        assert_eq!(body, None);

        let route = &Operation::CreateTaskPushNotificationConfig.rest_routes()[0];
        let (url, body) = rest_url_and_body(
            "http://h",
            "acme",
            route,
            object(json!({"taskId": "t", "url": "http://x"})),
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "http://h/acme/tasks/t/pushNotificationConfigs"
        );
        assert_eq!(body, Some(json!({"url": "http://x"})));

        let route = &Operation::CancelTask.rest_routes()[0];
        let (url, body) =
            rest_url_and_body("http://h", "", route, object(json!({"id": "t"}))).unwrap();
        assert_eq!(url.as_str(), "http://h/tasks/t:cancel");
        assert_eq!(body, Some(json!({})));

        let route = &Operation::GetTask.rest_routes()[0];
        let e = rest_url_and_body("http://h", "", route, Map::new()).unwrap_err();
        assert_eq!(e.to_string(), "id is required");
    }

    #[test]
    fn only_idempotent_calls_are_retried() {
        let policy = RetryPolicy::default();
        assert!(policy.applies_to(Operation::GetTask));
        assert!(!policy.applies_to(Operation::SendMessage));
        assert!(!policy.applies_to(Operation::CancelTask));
        assert!(RetryPolicy {
            retry_send_message: true,
            ..policy.clone()
        }
        .applies_to(Operation::SendMessage));
        assert_eq!(policy.backoff(0), Duration::from_millis(200));
        assert_eq!(policy.backoff(1), Duration::from_millis(400));
        assert_eq!(policy.backoff(10), Duration::from_secs(5));
    }
}
