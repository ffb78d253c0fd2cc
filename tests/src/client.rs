//! The client of one server: raw requests (JSON-RPC, REST), and the binding-generic operations
//! that return `Result<Value, ApiError>` whichever binding carried them. The binding-generic
//! ones go through `a2a-client` (the project's client library), so the suite tests it too; the
//! raw ones stay raw for the malformed-input tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2a_client::{HttpVerb, Operation, StreamOptions};
use reqwest::header::{HeaderMap, CONTENT_TYPE};
use reqwest::Method;
use serde_json::{json, Value};

use crate::*;

/// A client of one server: every request helper ([`Client::send`], [`Client::rpc`], …) lives
/// here. The server's own ([`Server`] derefs to it) sends no credentials;
/// [`Server::client_with_headers`] makes one that sends the given headers (an
/// `Authorization`, an API key) on every request. A client made that way keeps the base URL of
/// the moment it was made: make it again after [`Server::restart`].
#[derive(Clone)]
pub struct Client {
    pub(crate) base: String,
    pub(crate) http: reqwest::Client,
    pub(crate) next_id: Arc<AtomicU64>,
}

impl Client {
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `base + path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// The JSON-RPC endpoint.
    pub fn jsonrpc_url(&self) -> String {
        self.url("/jsonrpc")
    }

    /// The shared HTTP client (for requests the helpers do not cover).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    fn next_request_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// A REST response as it came: status, headers, and the body as JSON (`Null` when empty, a
/// JSON string when it is not JSON).
#[derive(Debug, Clone)]
pub struct RestResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
}

impl RestResponse {
    /// A header as text, if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

pub(crate) async fn into_rest_response(response: reqwest::Response) -> RestResponse {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.expect("read the response body");
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    RestResponse {
        status,
        headers,
        body,
    }
}

impl Client {
    /// A JSON-RPC request builder for `/jsonrpc` with the version header and JSON content type.
    pub fn rpc_request(&self, method: &str, params: Value) -> (u64, reqwest::RequestBuilder) {
        let id = self.next_request_id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let builder = self
            .http
            .post(self.jsonrpc_url())
            .header("A2A-Version", A2A_VERSION)
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
        (id, builder)
    }

    /// Calls a JSON-RPC method and returns the whole response object (`result` or `error`).
    /// Panics unless the HTTP status is 200 and the envelope echoes the request id.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let (id, builder) = self.rpc_request(method, params);
        let response = builder.send().await.expect("JSON-RPC request");
        let rest = into_rest_response(response).await;
        assert_eq!(
            rest.status, 200,
            "{method}: JSON-RPC answers with HTTP 200, got {} {}",
            rest.status, rest.body
        );
        assert_eq!(rest.body["jsonrpc"], "2.0", "{method}: {}", rest.body);
        assert_eq!(
            rest.body["id"],
            json!(id),
            "{method}: the id is echoed: {}",
            rest.body
        );
        rest.body
    }

    /// A REST request builder for `base + path` with the version header (and a JSON body).
    pub fn rest_request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> reqwest::RequestBuilder {
        let mut builder = self
            .http
            .request(method, self.url(path))
            .header("A2A-Version", A2A_VERSION);
        if let Some(body) = body {
            builder = builder
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        builder
    }

    /// Calls a REST route and returns what came back.
    pub async fn rest(&self, method: Method, path: &str, body: Option<Value>) -> RestResponse {
        let response = self
            .rest_request(method, path, body.as_ref())
            .send()
            .await
            .expect("REST request");
        into_rest_response(response).await
    }

    /// Sends any request and returns what came back.
    pub async fn send_raw(&self, builder: reqwest::RequestBuilder) -> RestResponse {
        into_rest_response(builder.send().await.expect("HTTP request")).await
    }
}

/// The two HTTP bindings of the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    Rest,
}

impl Binding {
    pub const ALL: [Binding; 2] = [Binding::JsonRpc, Binding::Rest];
}

/// An error answer from either binding.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub binding: Binding,
    /// The HTTP status (200 for JSON-RPC errors).
    pub http_status: u16,
    /// The JSON-RPC code (JSON-RPC only).
    pub code: Option<i64>,
    /// `ErrorInfo.reason` from `error.data[]` (JSON-RPC) or `error.details[]` (REST).
    pub reason: Option<String>,
    /// The error object: JSON-RPC `error`, or the REST body.
    pub body: Value,
    /// The `WWW-Authenticate` challenge, if the answer had one.
    pub www_authenticate: Option<String>,
}

fn error_info_reason(details: &Value) -> Option<String> {
    details.as_array()?.iter().find_map(|d| {
        (d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
            .then(|| d["reason"].as_str().map(str::to_string))
            .flatten()
    })
}

impl ApiError {
    /// A JSON-RPC `error` object, as the test got it.
    pub fn from_rpc_error(error: &Value) -> Self {
        ApiError {
            binding: Binding::JsonRpc,
            http_status: 200,
            code: error["code"].as_i64(),
            reason: error_info_reason(&error["data"]),
            body: error.clone(),
            www_authenticate: None,
        }
    }

    /// A REST error answer (`google.rpc.Status`), as the test got it.
    pub fn from_rest(status: u16, body: &Value) -> Self {
        ApiError {
            binding: Binding::Rest,
            http_status: status,
            code: None,
            reason: error_info_reason(&body["error"]["details"]),
            body: body.clone(),
            www_authenticate: None,
        }
    }

    /// The error answer `a2a-client` decoded. Anything that is no error answer of the agent
    /// (a broken connection, a JSON-RPC answer that is not HTTP 200, a response that breaks
    /// the protocol) fails the test, as the raw helpers do.
    #[track_caller]
    pub(crate) fn from_client(binding: Binding, op: Operation, error: a2a_client::Error) -> Self {
        match error {
            a2a_client::Error::Agent(e) => ApiError {
                binding,
                http_status: e.http_status,
                code: match binding {
                    Binding::JsonRpc => e.body["code"].as_i64(),
                    Binding::Rest => None,
                },
                reason: e.reason,
                body: e.body,
                www_authenticate: e.www_authenticate,
            },
            a2a_client::Error::HttpStatus {
                status,
                body,
                www_authenticate,
            } if binding == Binding::Rest => ApiError {
                www_authenticate,
                ..ApiError::from_rest(status, &body)
            },
            other => panic!("{op} on {binding:?}: {other}"),
        }
    }

    /// The `ErrorInfo` detail, whichever binding carried it.
    pub fn error_info(&self) -> Option<&Value> {
        let details = match self.binding {
            Binding::JsonRpc => &self.body["data"],
            Binding::Rest => &self.body["error"]["details"],
        };
        details.as_array()?.iter().find(|d| d["reason"].is_string())
    }

    /// Asserts the error is the given A2A error on this binding: the JSON-RPC `code`, or the
    /// REST status with a `google.rpc.Status` body whose `code` matches; and in both cases an
    /// `ErrorInfo` with `reason` in domain `a2a-protocol.org`.
    #[track_caller]
    pub fn assert_is(&self, code: i64, http_status: u16, reason: &str) {
        match self.binding {
            Binding::JsonRpc => {
                assert_eq!(self.code, Some(code), "JSON-RPC error code: {}", self.body);
                assert!(
                    self.body["message"].is_string(),
                    "error.message: {}",
                    self.body
                );
                let info = self.body["data"]
                    .as_array()
                    .and_then(|d| d.iter().find(|d| d["reason"].is_string()))
                    .unwrap_or_else(|| panic!("error.data holds an ErrorInfo: {}", self.body));
                assert_eq!(info["domain"], "a2a-protocol.org", "{}", self.body);
            }
            Binding::Rest => {
                assert_eq!(self.http_status, http_status, "HTTP status: {}", self.body);
                let error = &self.body["error"];
                assert_eq!(
                    error["code"],
                    json!(http_status),
                    "error.code: {}",
                    self.body
                );
                assert!(error["status"].is_string(), "error.status: {}", self.body);
                assert!(error["message"].is_string(), "error.message: {}", self.body);
                let info = error["details"]
                    .as_array()
                    .and_then(|d| d.iter().find(|d| d["reason"].is_string()))
                    .unwrap_or_else(|| panic!("error.details holds an ErrorInfo: {}", self.body));
                assert_eq!(info["domain"], "a2a-protocol.org", "{}", self.body);
            }
        }
        assert_eq!(
            self.reason.as_deref(),
            Some(reason),
            "ErrorInfo.reason: {}",
            self.body
        );
    }
}

/// Panics with the error if `result` is one; returns the value otherwise.
#[track_caller]
pub fn ok(result: Result<Value, ApiError>) -> Value {
    match result {
        Ok(v) => v,
        Err(e) => panic!(
            "expected success on {:?}, got {} {}",
            e.binding, e.http_status, e.body
        ),
    }
}

/// Panics with the value if `result` is a success; returns the error otherwise.
#[track_caller]
pub fn err<T: std::fmt::Debug>(result: Result<T, ApiError>) -> ApiError {
    match result {
        Ok(v) => panic!("expected an error, got success: {v:?}"),
        Err(e) => e,
    }
}

/// Turns a flat JSON object into a query string (`?a=1&b=x`), values as text.
pub fn query_string(params: &Value) -> String {
    let mut url = reqwest::Url::parse("http://x/").expect("static URL");
    if let Some(map) = params.as_object() {
        let mut pairs = url.query_pairs_mut();
        for (k, v) in map {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            pairs.append_pair(k, &text);
        }
    }
    match url.query() {
        Some(q) if !q.is_empty() => format!("?{q}"),
        _ => String::new(),
    }
}

impl Client {
    /// A JSON-RPC call as a Result: `result`, or the `error` object.
    pub async fn rpc_call(&self, method: &str, params: Value) -> Result<Value, ApiError> {
        // Authentication failures are HTTP 401/403 with a JSON-RPC error body; anything else
        // must be HTTP 200 (checked by `rpc`).
        let (id, builder) = self.rpc_request(method, params);
        let raw = into_rest_response(builder.send().await.expect("JSON-RPC request")).await;
        if matches!(raw.status, 401 | 403) {
            let error = raw.body.get("error").unwrap_or_else(|| {
                panic!(
                    "{method}: a {} without a JSON-RPC error: {}",
                    raw.status, raw.body
                )
            });
            let mut api = ApiError::from_rpc_error(error);
            api.http_status = raw.status;
            api.www_authenticate = raw.header("www-authenticate").map(str::to_string);
            return Err(api);
        }
        assert_eq!(
            raw.status, 200,
            "{method}: JSON-RPC answers with HTTP 200, got {} {}",
            raw.status, raw.body
        );
        assert_eq!(raw.body["jsonrpc"], "2.0", "{method}: {}", raw.body);
        assert_eq!(
            raw.body["id"],
            json!(id),
            "{method}: the id is echoed: {}",
            raw.body
        );
        let response = raw.body;
        match response.get("error") {
            Some(error) => Err(ApiError::from_rpc_error(error)),
            None => {
                assert!(response.get("result").is_some(), "no result: {response}");
                Ok(response["result"].clone())
            }
        }
    }

    /// A REST call as a Result: the body on 2xx, or the `google.rpc.Status` error.
    pub async fn rest_call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, ApiError> {
        let response = self.rest(method, path, body).await;
        if (200..300).contains(&response.status) {
            let ct = response
                .header("content-type")
                .unwrap_or_default()
                .to_string();
            assert!(
                ct.starts_with("application/json") || ct.starts_with("application/a2a+json"),
                "REST responses are JSON, got Content-Type {ct:?}"
            );
            Ok(response.body)
        } else {
            let mut api = ApiError::from_rest(response.status, &response.body);
            api.www_authenticate = response.header("www-authenticate").map(str::to_string);
            Err(api)
        }
    }

    /// An `a2a-client` client of this server's interface for `b`: no card lookup (the tests
    /// judge the card separately), no timeout and no retries (a test sees every answer as it
    /// came), and this client's HTTP client, so its credentials go along.
    pub fn a2a(&self, b: Binding) -> a2a_client::Client {
        let (url, binding) = match b {
            Binding::JsonRpc => (self.jsonrpc_url(), a2a_client::Binding::JsonRpc),
            Binding::Rest => (self.base.clone(), a2a_client::Binding::HttpJson),
        };
        a2a_client::Client::builder()
            .http_client(self.http.clone())
            .timeout(None)
            .retry(a2a_client::RetryPolicy::none())
            .for_interface(a2a_client::AgentInterface {
                url,
                protocol_binding: binding.as_str().into(),
                protocol_version: A2A_VERSION.into(),
                tenant: String::new(),
            })
            .expect("the server's URL is valid")
    }

    /// Calls `op` through `a2a-client` with the request fields as JSON.
    async fn a2a_call(&self, b: Binding, op: Operation, params: Value) -> Result<Value, ApiError> {
        self.a2a(b)
            .call(op, params)
            .await
            .map_err(|e| ApiError::from_client(b, op, e))
    }

    /// SendMessage / `POST /message:send` with a full `SendMessageRequest`.
    pub async fn send(&self, b: Binding, request: Value) -> Result<Value, ApiError> {
        self.a2a_call(b, Operation::SendMessage, request).await
    }

    /// Sends `text` as a new message (blocking) and returns the Task. Panics on errors or on
    /// a Message reply.
    pub async fn send_text(&self, b: Binding, text: &str) -> Value {
        let response = ok(self.send(b, send_request(text)).await);
        task_of(&response).clone()
    }

    /// GetTask / `GET /tasks/{id}`.
    pub async fn get_task(
        &self,
        b: Binding,
        id: &str,
        history_length: Option<i64>,
    ) -> Result<Value, ApiError> {
        let mut params = json!({"id": id});
        if let Some(n) = history_length {
            params["historyLength"] = json!(n);
        }
        self.a2a_call(b, Operation::GetTask, params).await
    }

    /// ListTasks / `GET /tasks?…` with the request fields as a flat JSON object.
    pub async fn list_tasks(&self, b: Binding, params: Value) -> Result<Value, ApiError> {
        self.a2a_call(b, Operation::ListTasks, params).await
    }

    /// CancelTask / `POST /tasks/{id}:cancel`.
    pub async fn cancel(&self, b: Binding, id: &str) -> Result<Value, ApiError> {
        self.a2a_call(b, Operation::CancelTask, json!({"id": id}))
            .await
    }

    /// CreateTaskPushNotificationConfig / `POST /tasks/{taskId}/pushNotificationConfigs`.
    pub async fn create_push(
        &self,
        b: Binding,
        task_id: &str,
        config: Value,
    ) -> Result<Value, ApiError> {
        let mut params = config;
        params["taskId"] = json!(task_id);
        self.a2a_call(b, Operation::CreateTaskPushNotificationConfig, params)
            .await
    }

    /// GetTaskPushNotificationConfig / `GET /tasks/{taskId}/pushNotificationConfigs/{id}`.
    pub async fn get_push(&self, b: Binding, task_id: &str, id: &str) -> Result<Value, ApiError> {
        self.a2a_call(
            b,
            Operation::GetTaskPushNotificationConfig,
            json!({"taskId": task_id, "id": id}),
        )
        .await
    }

    /// ListTaskPushNotificationConfigs / `GET /tasks/{taskId}/pushNotificationConfigs`.
    pub async fn list_push(&self, b: Binding, task_id: &str) -> Result<Value, ApiError> {
        self.a2a_call(
            b,
            Operation::ListTaskPushNotificationConfigs,
            json!({"taskId": task_id}),
        )
        .await
    }

    /// DeleteTaskPushNotificationConfig / `DELETE /tasks/{taskId}/pushNotificationConfigs/{id}`.
    pub async fn delete_push(
        &self,
        b: Binding,
        task_id: &str,
        id: &str,
    ) -> Result<Value, ApiError> {
        self.a2a_call(
            b,
            Operation::DeleteTaskPushNotificationConfig,
            json!({"taskId": task_id, "id": id}),
        )
        .await
    }

    /// GetExtendedAgentCard / `GET /extendedAgentCard`.
    pub async fn extended_card(&self, b: Binding) -> Result<Value, ApiError> {
        self.a2a_call(b, Operation::GetExtendedAgentCard, json!({}))
            .await
    }

    /// SendStreamingMessage / `POST /message:stream`.
    pub async fn stream(&self, b: Binding, request: Value) -> Result<SseStream, ApiError> {
        open_a2a_sse(
            self,
            b,
            Operation::SendStreamingMessage,
            request,
            StreamOptions::default(),
        )
        .await
    }

    /// SubscribeToTask / `GET /tasks/{id}:subscribe`, optionally resuming with `Last-Event-ID`.
    pub async fn subscribe(
        &self,
        b: Binding,
        id: &str,
        last_event_id: Option<u64>,
    ) -> Result<SseStream, ApiError> {
        self.subscribe_with(b, Method::GET, id, last_event_id).await
    }

    /// SubscribeToTask; for REST with the given HTTP method (the spec text says POST, the
    /// proto GET: both are served).
    pub async fn subscribe_with(
        &self,
        b: Binding,
        rest_method: Method,
        id: &str,
        last_event_id: Option<u64>,
    ) -> Result<SseStream, ApiError> {
        let verb = match rest_method {
            Method::GET => HttpVerb::Get,
            Method::POST => HttpVerb::Post,
            other => panic!("SubscribeToTask has no {other} route"),
        };
        let options = StreamOptions {
            last_event_id: last_event_id.map(|n| n.to_string()),
            rest_verb: Some(verb),
        };
        open_a2a_sse(
            self,
            b,
            Operation::SubscribeToTask,
            json!({"id": id}),
            options,
        )
        .await
    }

    /// Waits, without polling, until the task is terminal (following SubscribeToTask to its end,
    /// resubscribing if a stream ends early at an interrupted state), then returns GetTask.
    pub async fn await_terminal(&self, id: &str, within: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let task = ok(self.get_task(Binding::JsonRpc, id, None).await);
            if is_terminal(state(&task)) {
                return task;
            }
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            assert!(
                !remaining.is_zero(),
                "task {id} is not terminal after {within:?}: {task}"
            );
            match self.subscribe(Binding::JsonRpc, id, None).await {
                Ok(mut stream) => {
                    let _ = stream.collect_to_end(remaining).await;
                }
                Err(e) if e.code == Some(-32004) => {}
                Err(e) => panic!("subscribe to {id} failed: {}", e.body),
            }
            let task = ok(self.get_task(Binding::JsonRpc, id, None).await);
            if !is_terminal(state(&task)) && is_interrupted(state(&task)) {
                panic!(
                    "task {id} is parked in {} and will not end by itself",
                    state(&task)
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_strings_encode_values() {
        assert_eq!(
            query_string(&json!({"pageSize": 1, "contextId": "a b", "includeArtifacts": true})),
            "?contextId=a+b&includeArtifacts=true&pageSize=1"
        );
        assert_eq!(query_string(&json!({})), "");
    }
}
