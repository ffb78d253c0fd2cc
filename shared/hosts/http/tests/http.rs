//! The HTTP front door over real sockets: a test agent on the embedded SQLite store, served by
//! `a2a_http::router` on 127.0.0.1, called with reqwest.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{Agent, AgentDescription, AgentError, AgentRequest, Emitter, ServiceConfig};
use a2a_http::{router_with, HttpOptions, Surface};
use a2a_protocol::Operation;
use a2a_protocol::{AgentExtension, AgentSkill, Artifact, Message, Part};
use a2a_test_support::server::{interface, EmbeddedStore, InProcessServer};
use async_trait::async_trait;
use reqwest::header::{CONTENT_TYPE, ETAG};
use reqwest::StatusCode;
use serde_json::{json, Value};

const EXTENSION: &str = "urn:test:required-extension";

/// The test agent. By the message text: `input` parks in INPUT_REQUIRED; `stream` goes WORKING,
/// sends two chunks of one artifact and completes; `message` replies with a direct Message;
/// `slow` works for a while before completing; anything else is echoed as an artifact.
struct TestAgent {
    require_extension: bool,
}

#[async_trait]
impl Agent for TestAgent {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "HTTP test agent".into(),
            description: "Echoes, streams and asks for input, for the HTTP tests.".into(),
            version: "0.0.1".into(),
            skills: vec![AgentSkill {
                id: "echo".into(),
                name: "Echo".into(),
                description: "Echoes the text it receives.".into(),
                tags: vec!["test".into()],
                ..AgentSkill::default()
            }],
            default_input_modes: vec!["text/plain".into()],
            default_output_modes: vec!["text/plain".into()],
            extensions: if self.require_extension {
                vec![AgentExtension {
                    uri: EXTENSION.into(),
                    required: true,
                    ..AgentExtension::default()
                }]
            } else {
                Vec::new()
            },
            ..AgentDescription::default()
        }
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        let text = request.text().to_string();
        let artifact = |id: &str, text: &str| Artifact {
            artifact_id: id.into(),
            parts: vec![Part::text(text)],
            ..Artifact::default()
        };
        match text.as_str() {
            "input" => emitter.input_required("What else?").await,
            "message" => emitter.reply(Message::agent_text("direct reply")).await,
            "stream" => {
                emitter.working(None).await?;
                emitter
                    .artifact(artifact("a1", "chunk-1 "), false, false)
                    .await?;
                emitter
                    .artifact(artifact("a1", "chunk-2"), true, true)
                    .await?;
                emitter.complete(Some("done")).await
            }
            "slow" => {
                emitter.working(Some("working")).await?;
                tokio::time::sleep(Duration::from_millis(700)).await;
                emitter.complete(Some("done")).await
            }
            _ => {
                emitter
                    .artifact(artifact("echo", &text), false, true)
                    .await?;
                emitter.complete(Some(&text)).await
            }
        }
    }
}

/// The test agent on the embedded store, served in-process, with a client to call it.
struct Server {
    served: InProcessServer,
    http: reqwest::Client,
    _store: EmbeddedStore,
}

async fn start() -> Server {
    start_with(HttpOptions::default(), Surface::all(), false).await
}

async fn start_with(options: HttpOptions, surface: Surface, require_extension: bool) -> Server {
    let store = EmbeddedStore::open();
    let served = InProcessServer::start(|base| {
        let config = ServiceConfig {
            interfaces: vec![
                interface(format!("{base}/jsonrpc"), "JSONRPC"),
                interface(base, "HTTP+JSON"),
            ],
            // Push configs in these tests point at 127.0.0.1 over http, as on the local server.
            push_policy: a2a_core::PushPolicy::local(),
            ..ServiceConfig::default()
        };
        let service = store.service(config, Arc::new(TestAgent { require_extension }));
        router_with(service, options, &surface)
    })
    .await;
    Server {
        served,
        http: reqwest::Client::new(),
        _store: store,
    }
}

fn send_params(text: &str) -> Value {
    json!({"message": {"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]}})
}

impl Server {
    fn url(&self, path: &str) -> String {
        self.served.url(path)
    }

    /// A JSON-RPC call with `A2A-Version: 1.0`; returns the HTTP status and the body.
    async fn rpc(&self, method: &str, params: Value) -> (StatusCode, Value) {
        let body = json!({"jsonrpc": "2.0", "id": "req-1", "method": method, "params": params});
        let resp = self
            .http
            .post(self.url("/jsonrpc"))
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap())
    }

    /// A raw JSON-RPC POST (any body, any headers).
    async fn rpc_raw(
        &self,
        path: &str,
        body: &'static str,
        headers: &[(&str, &str)],
    ) -> (StatusCode, Value) {
        let mut req = self.http.post(self.url(path)).body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap())
    }

    fn rest(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, self.url(path))
            .header("A2A-Version", "1.0")
    }

    async fn rest_json(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self.rest(method, path);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let content_type = resp.headers()[CONTENT_TYPE].to_str().unwrap().to_string();
        assert_eq!(content_type, "application/json", "REST responses are JSON");
        (status, resp.json().await.unwrap())
    }

    /// Sends `text` over REST and returns the task.
    async fn create_task(&self, tenant: &str, text: &str) -> Value {
        let (status, body) = self
            .rest_json(
                reqwest::Method::POST,
                &format!("{tenant}/message:send"),
                Some(send_params(text)),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["task"].clone()
    }
}

/// One parsed SSE event.
#[derive(Debug, Default)]
struct SseEvent {
    id: Option<String>,
    event: Option<String>,
    data: Value,
}

/// Reads an event stream to its end (with a timeout, so a stream that never closes fails the
/// test) and parses its events; returns them and whether a keep-alive comment was seen.
async fn read_sse(resp: reqwest::Response) -> (Vec<SseEvent>, bool) {
    assert_eq!(resp.status(), StatusCode::OK);
    let content_type = resp.headers()[CONTENT_TYPE].to_str().unwrap().to_string();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let text = tokio::time::timeout(Duration::from_secs(20), resp.text())
        .await
        .expect("the stream should close")
        .unwrap();
    let mut events = Vec::new();
    let mut keep_alive = false;
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut event = SseEvent::default();
        let mut data = String::new();
        for line in block.lines() {
            if let Some(comment) = line.strip_prefix(':') {
                keep_alive |= comment.contains("keep-alive");
            } else if let Some(v) = line.strip_prefix("id:") {
                event.id = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("event:") {
                event.event = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        if !data.is_empty() {
            event.data = serde_json::from_str(&data).unwrap();
            events.push(event);
        }
    }
    (events, keep_alive)
}

fn error_reason(status_body: &Value) -> &str {
    status_body["error"]["details"][0]["reason"]
        .as_str()
        .unwrap_or_default()
}

#[tokio::test]
async fn card_has_caching_headers_and_answers_304() {
    let server = start().await;
    let resp = server
        .http
        .get(server.url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let headers = resp.headers().clone();
    assert_eq!(headers[CONTENT_TYPE], "application/json");
    assert_eq!(headers["cache-control"], "public, max-age=300");
    assert!(headers.contains_key("last-modified"));
    let etag = headers[ETAG].to_str().unwrap().to_string();
    assert!(
        etag.starts_with('"') && etag.ends_with('"'),
        "strong ETag: {etag}"
    );
    let card: Value = resp.json().await.unwrap();
    assert_eq!(card["name"], "HTTP test agent");
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");

    let resp = server
        .http
        .get(server.url("/.well-known/agent-card.json"))
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(resp.headers()[ETAG].to_str().unwrap(), etag);
    assert!(resp.bytes().await.unwrap().is_empty());

    // A different tag gets the card. The pre-0.3 path is the early protocol's card (issue
    // #16), a document of its own with its own validator.
    let resp = server
        .http
        .get(server.url("/.well-known/agent.json"))
        .header("If-None-Match", "\"other\"")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_ne!(resp.headers()[ETAG].to_str().unwrap(), etag);
    let early: Value = resp.json().await.unwrap();
    assert_eq!(early["name"], "HTTP test agent");
    // Early clients post every method to the early endpoint beside the JSON-RPC one.
    assert_eq!(early["url"], json!(server.url("/tasks")), "{early}");
}

#[tokio::test]
async fn missing_version_is_version_not_supported() {
    let server = start().await;
    let (status, body) = server
        .rpc_raw(
            "/jsonrpc",
            r#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"x"}}"#,
            &[("content-type", "application/json")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["error"]["code"], -32009);
    assert_eq!(body["id"], 7);
    assert_eq!(body["error"]["data"][0]["reason"], "VERSION_NOT_SUPPORTED");

    let resp = server
        .http
        .get(server.url("/tasks/x"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(error_reason(&body), "VERSION_NOT_SUPPORTED");
    assert_eq!(body["error"]["status"], "FAILED_PRECONDITION");

    // 0.3 method names are answered as the version they belong to.
    let (_, body) = server.rpc("message/send", send_params("hi")).await;
    assert_eq!(body["error"]["code"], -32009);

    // Another major version is refused too; a later 1.x is accepted.
    let resp = server
        .http
        .get(server.url("/tasks"))
        .header("A2A-Version", "2.0")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let resp = server
        .http
        .get(server.url("/tasks"))
        .header("A2A-Version", "1.1")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn version_query_parameter_is_accepted() {
    let server = start().await;
    let resp = server
        .http
        .get(server.url("/tasks?A2A-Version=1.0"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let (status, body) = server
        .rpc_raw(
            "/jsonrpc?A2A-Version=1.0",
            r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}"#,
            &[("content-type", "application/json")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(body["result"]["tasks"].is_array(), "{body}");
    assert_eq!(body["result"]["nextPageToken"], "");
}

#[tokio::test]
async fn wrong_content_type_is_refused_before_parsing() {
    let server = start().await;
    let resp = server
        .rest(reqwest::Method::POST, "/message:send")
        .header("content-type", "text/plain")
        .body(send_params("hi").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(error_reason(&body), "CONTENT_TYPE_NOT_SUPPORTED");
    assert_eq!(body["error"]["code"], 415);

    let (status, body) = server
        .rpc_raw(
            "/jsonrpc",
            "this is not even JSON",
            &[("content-type", "text/plain"), ("a2a-version", "1.0")],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["error"]["code"], -32005);

    // application/a2a+json with parameters is fine.
    let resp = server
        .rest(reqwest::Method::POST, "/message:send")
        .header("content-type", "application/a2a+json; charset=utf-8")
        .body(send_params("hi").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn oversize_bodies_are_refused_with_the_limit() {
    let options = HttpOptions {
        max_body_bytes: 4096,
        ..HttpOptions::default()
    };
    let server = start_with(options, Surface::all(), false).await;
    let big = "x".repeat(8192);
    let resp = server
        .rest(reqwest::Method::POST, "/message:send")
        .json(&send_params(&big))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("4096"),
        "{body}"
    );

    let (status, body) = server.rpc("SendMessage", send_params(&big)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["error"]["code"], -32602);
    assert!(
        body["error"]["message"].as_str().unwrap().contains("4096"),
        "{body}"
    );

    // The default limit is 1 MiB; a body well over it is answered, not reset.
    let server = start().await;
    let big = "x".repeat(3 * 1024 * 1024);
    for _ in 0..3 {
        let resp = server
            .rest(reqwest::Method::POST, "/message:send")
            .json(&send_params(&big))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let body: Value = resp.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("1048576"), "{body}");
    }
}

#[tokio::test]
async fn json_rpc_envelope_errors() {
    let server = start().await;
    let json = [("content-type", "application/json"), ("a2a-version", "1.0")];
    let (_, body) = server.rpc_raw("/jsonrpc", "{not json", &json).await;
    assert_eq!(body["error"]["code"], -32700);
    assert_eq!(body["id"], Value::Null);

    let (_, body) = server
        .rpc_raw(
            "/jsonrpc",
            r#"{"jsonrpc":"1.0","id":"abc","method":"GetTask"}"#,
            &json,
        )
        .await;
    assert_eq!(body["error"]["code"], -32600);
    assert_eq!(body["id"], "abc");

    let (status, body) = server.rpc("NoSuchMethod", json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["error"]["code"], -32601);
    assert_eq!(body["id"], "req-1");

    let (_, body) = server.rpc("SendMessage", json!({})).await;
    assert_eq!(body["error"]["code"], -32602);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("message"),
        "{body}"
    );

    // A wrongly typed field is named in the message.
    let (_, body) = server
        .rpc("GetTask", json!({"id": "x", "historyLength": "lots"}))
        .await;
    assert_eq!(body["error"]["code"], -32602);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("historyLength"),
        "{body}"
    );

    // Unknown fields are ignored.
    let (_, body) = server
        .rpc("GetTask", json!({"id": "x", "metadata": {}}))
        .await;
    assert_eq!(body["error"]["code"], -32001);
    assert_eq!(body["error"]["data"][0]["reason"], "TASK_NOT_FOUND");

    // The trailing-slash form of the URL is the same endpoint.
    let (status, body) = server
        .rpc_raw(
            "/jsonrpc/",
            r#"{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#,
            &json,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{body}"
    );
}

#[tokio::test]
async fn send_message_on_both_bindings() {
    let server = start().await;
    let (_, body) = server.rpc("SendMessage", send_params("hello")).await;
    let task = &body["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "hello");

    let (_, body) = server.rpc("SendMessage", send_params("message")).await;
    assert_eq!(
        body["result"]["message"]["parts"][0]["text"], "direct reply",
        "{body}"
    );

    let task = server.create_task("", "hello").await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    let id = task["id"].as_str().unwrap();
    let (status, got) = server
        .rest_json(
            reqwest::Method::GET,
            &format!("/tasks/{id}?historyLength=0"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got["id"], id);
    assert!(
        got.get("history").is_none(),
        "historyLength=0 drops the history: {got}"
    );

    let (status, got) = server
        .rest_json(
            reqwest::Method::GET,
            "/tasks?includeArtifacts=true&pageSize=10",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got["tasks"][0]["id"], id);
    assert!(got["tasks"][0]["artifacts"].is_array());
}

#[tokio::test]
async fn rest_unknown_task_is_404_with_error_info() {
    let server = start().await;
    let (status, body) = server
        .rest_json(reqwest::Method::GET, "/tasks/nope", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], 404);
    assert_eq!(body["error"]["status"], "NOT_FOUND");
    let info = &body["error"]["details"][0];
    assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
    assert_eq!(info["reason"], "TASK_NOT_FOUND");
    assert_eq!(info["domain"], "a2a-protocol.org");
    assert_eq!(info["metadata"]["taskId"], "nope");
}

#[tokio::test]
async fn unknown_paths_and_wrong_methods_have_status_bodies() {
    let server = start().await;
    let (status, body) = server
        .rest_json(reqwest::Method::GET, "/no/such/thing/here", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], 404);

    let (status, body) = server
        .rest_json(reqwest::Method::DELETE, "/message:send", None)
        .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(body["error"]["code"], 405);

    let (status, _) = server
        .rest_json(reqwest::Method::GET, "/tasks/x:cancel", None)
        .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);

    let resp = server
        .rest(reqwest::Method::PUT, "/tasks")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    // POST /tasks is the early protocol's JSON-RPC endpoint (issue #16).
    assert_eq!(resp.headers()["allow"], "POST,GET,HEAD");
}

#[tokio::test]
async fn json_rpc_stream_framing() {
    let server = start().await;
    let body = json!({"jsonrpc": "2.0", "id": 42, "method": "SendStreamingMessage", "params": send_params("stream")});
    let resp = server
        .http
        .post(server.url("/jsonrpc"))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap();
    let (events, _) = read_sse(resp).await;
    assert!(events.len() >= 4, "{events:?}");
    for event in &events {
        assert_eq!(event.data["jsonrpc"], "2.0");
        assert_eq!(event.data["id"], 42);
        assert!(event.event.is_none());
        let seq: u64 = event
            .id
            .as_deref()
            .expect("task events carry an id")
            .parse()
            .unwrap();
        assert!(seq > 0);
    }
    assert!(
        events[0].data["result"]["task"].is_object(),
        "the Task comes first"
    );
    let last = &events.last().unwrap().data["result"];
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let ids: Vec<u64> = events
        .iter()
        .map(|e| e.id.as_ref().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids increase: {ids:?}");
    let chunks = events
        .iter()
        .filter(|e| e.data["result"]["artifactUpdate"].is_object())
        .count();
    assert_eq!(chunks, 2);

    // A direct message reply has no log position: no id line.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": send_params("message")});
    let resp = server
        .http
        .post(server.url("/jsonrpc"))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap();
    let (events, _) = read_sse(resp).await;
    assert_eq!(events.len(), 1);
    assert!(events[0].id.is_none());
    assert_eq!(
        events[0].data["result"]["message"]["parts"][0]["text"],
        "direct reply"
    );
}

#[tokio::test]
async fn rest_stream_framing() {
    let server = start().await;
    let resp = server
        .rest(reqwest::Method::POST, "/message:stream")
        .json(&send_params("stream"))
        .send()
        .await
        .unwrap();
    let (events, _) = read_sse(resp).await;
    assert!(events.len() >= 4, "{events:?}");
    assert!(
        events[0].data["task"].is_object(),
        "bare StreamResponse, Task first"
    );
    assert!(events[0].data.get("jsonrpc").is_none());
    assert!(events.iter().all(|e| e.id.is_some()));
    assert_eq!(
        events.last().unwrap().data["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn errors_before_a_stream() {
    let server = start().await;
    // JSON-RPC: an event stream whose only event is the error.
    let body = json!({"jsonrpc": "2.0", "id": "s1", "method": "SubscribeToTask", "params": {"id": "missing"}});
    let resp = server
        .http
        .post(server.url("/jsonrpc"))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap();
    let (events, _) = read_sse(resp).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event.as_deref(), Some("error"));
    assert_eq!(events[0].data["id"], "s1");
    assert_eq!(events[0].data["error"]["code"], -32001);

    // Also for a missing version header.
    let resp = server
        .http
        .post(server.url("/jsonrpc"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let (events, _) = read_sse(resp).await;
    assert_eq!(events[0].data["error"]["code"], -32009);

    // REST: a plain HTTP error.
    let (status, body) = server
        .rest_json(reqwest::Method::GET, "/tasks/missing:subscribe", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_reason(&body), "TASK_NOT_FOUND");

    // Subscribing to a terminal task is UnsupportedOperation.
    let task = server.create_task("", "hello").await;
    let id = task["id"].as_str().unwrap();
    let (status, body) = server
        .rest_json(
            reqwest::Method::POST,
            &format!("/tasks/{id}:subscribe"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_reason(&body), "UNSUPPORTED_OPERATION");
}

#[tokio::test]
async fn last_event_id_resumes_after_that_event() {
    let server = start().await;
    let resp = server
        .rest(reqwest::Method::POST, "/message:stream")
        .json(&send_params("stream"))
        .send()
        .await
        .unwrap();
    let (events, _) = read_sse(resp).await;
    let task_id = events[0].data["task"]["id"].as_str().unwrap().to_string();
    let ids: Vec<u64> = events
        .iter()
        .map(|e| e.id.as_ref().unwrap().parse().unwrap())
        .collect();
    let resume = ids[1];
    let expected: Vec<u64> = ids.iter().copied().filter(|id| *id > resume).collect();

    for http_method in [reqwest::Method::GET, reqwest::Method::POST] {
        let resp = server
            .rest(http_method, &format!("/tasks/{task_id}:subscribe"))
            .header("Last-Event-ID", resume.to_string())
            .send()
            .await
            .unwrap();
        let (events, _) = read_sse(resp).await;
        let got: Vec<u64> = events
            .iter()
            .map(|e| e.id.as_ref().unwrap().parse().unwrap())
            .collect();
        assert_eq!(got, expected);
    }

    let body =
        json!({"jsonrpc": "2.0", "id": 5, "method": "SubscribeToTask", "params": {"id": task_id}});
    let resp = server
        .http
        .post(server.url("/jsonrpc"))
        .header("A2A-Version", "1.0")
        .header("Last-Event-ID", resume.to_string())
        .json(&body)
        .send()
        .await
        .unwrap();
    let (events, _) = read_sse(resp).await;
    let got: Vec<u64> = events
        .iter()
        .map(|e| e.id.as_ref().unwrap().parse().unwrap())
        .collect();
    assert_eq!(got, expected);
    assert_eq!(events[0].data["id"], 5);

    // A Last-Event-ID that is not a number is invalid params.
    let (status, body) = server
        .rest_json_with(
            reqwest::Method::GET,
            &format!("/tasks/{task_id}:subscribe"),
            ("Last-Event-ID", "abc"),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_reason(&body), "INVALID_PARAMS");
}

impl Server {
    async fn rest_json_with(
        &self,
        method: reqwest::Method,
        path: &str,
        header: (&str, &str),
    ) -> (StatusCode, Value) {
        let resp = self
            .rest(method, path)
            .header(header.0, header.1)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap())
    }
}

#[tokio::test]
async fn keep_alive_comments_on_idle_streams() {
    let options = HttpOptions {
        keep_alive: Duration::from_millis(100),
        ..HttpOptions::default()
    };
    let server = start_with(options, Surface::all(), false).await;
    let resp = server
        .rest(reqwest::Method::POST, "/message:stream")
        .json(&send_params("slow"))
        .send()
        .await
        .unwrap();
    let (events, keep_alive) = read_sse(resp).await;
    assert!(keep_alive, "a keep-alive comment while the agent works");
    assert_eq!(
        events.last().unwrap().data["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn tenants_are_isolated() {
    let server = start().await;
    let task = server.create_task("/t1", "hello").await;
    let id = task["id"].as_str().unwrap();
    let (status, _) = server
        .rest_json(reqwest::Method::GET, &format!("/t1/tasks/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = server
        .rest_json(reqwest::Method::GET, &format!("/t2/tasks/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, _) = server
        .rest_json(reqwest::Method::GET, &format!("/tasks/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // JSON-RPC carries the tenant in params.
    let (_, body) = server
        .rpc("GetTask", json!({"id": id, "tenant": "t1"}))
        .await;
    assert_eq!(body["result"]["id"], id, "{body}");
    let (_, body) = server
        .rpc("GetTask", json!({"id": id, "tenant": "t2"}))
        .await;
    assert_eq!(body["error"]["code"], -32001);

    let (_, list) = server
        .rest_json(reqwest::Method::GET, "/t2/tasks", None)
        .await;
    assert_eq!(list["tasks"], json!([]));
    let (_, list) = server
        .rest_json(reqwest::Method::GET, "/t1/tasks", None)
        .await;
    assert_eq!(list["tasks"][0]["id"], id);
}

#[tokio::test]
async fn push_config_crud_over_rest() {
    let server = start().await;
    let task = server.create_task("", "input").await;
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let id = task["id"].as_str().unwrap();
    let base = format!("/tasks/{id}/pushNotificationConfigs");

    let (status, created) = server
        .rest_json(
            reqwest::Method::POST,
            &base,
            Some(json!({"url": "http://127.0.0.1:9/hook", "token": "secret"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    assert_eq!(created["taskId"], id);
    let config_id = created["id"].as_str().unwrap().to_string();
    assert!(!config_id.is_empty());

    let (status, got) = server
        .rest_json(reqwest::Method::GET, &format!("{base}/{config_id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got["url"], "http://127.0.0.1:9/hook");

    let (status, list) = server
        .rest_json(reqwest::Method::GET, &format!("{base}?pageSize=10"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["configs"][0]["id"], config_id.as_str());

    let (status, deleted) = server
        .rest_json(
            reqwest::Method::DELETE,
            &format!("{base}/{config_id}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(deleted, json!({}));

    let (status, body) = server
        .rest_json(reqwest::Method::GET, &format!("{base}/{config_id}"), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    // JSON-RPC: Delete answers the ProtoJSON Empty, and is idempotent.
    let (_, body) = server
        .rpc(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": config_id}),
        )
        .await;
    assert_eq!(body["result"], json!({}), "{body}");

    let (status, body) = server
        .rest_json(reqwest::Method::GET, &format!("{base}?pageSize=x"), None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("pageSize"));
}

#[tokio::test]
async fn list_tasks_query_validation() {
    let server = start().await;
    for (query, name) in [
        ("pageSize=0", "pageSize"),
        ("pageSize=abc", "pageSize"),
        ("pageSize=101", "pageSize"),
        ("status=TASK_STATE_BOGUS", "status"),
        ("historyLength=-1", "historyLength"),
        ("statusTimestampAfter=yesterday", "statusTimestampAfter"),
        ("includeArtifacts=maybe", "includeArtifacts"),
    ] {
        let (status, body) = server
            .rest_json(reqwest::Method::GET, &format!("/tasks?{query}"), None)
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(body["error"]["status"], "INVALID_ARGUMENT", "{query}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(name), "{query}: {message}");
    }
    let (status, body) = server
        .rest_json(
            reqwest::Method::GET,
            "/tasks?status=TASK_STATE_COMPLETED&statusTimestampAfter=2020-01-01T00:00:00Z&contextId=c",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["pageSize"], 50);
}

#[tokio::test]
async fn cancel_without_body_or_content_type() {
    let server = start().await;
    let task = server.create_task("", "input").await;
    let id = task["id"].as_str().unwrap();
    let resp = server
        .rest(reqwest::Method::POST, &format!("/tasks/{id}:cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["status"]["state"], "TASK_STATE_CANCELED");

    // With a metadata body, on a terminal task now: TaskNotCancelable.
    let (status, body) = server
        .rest_json(
            reqwest::Method::POST,
            &format!("/tasks/{id}:cancel"),
            Some(json!({"metadata": {"why": "test"}})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_reason(&body), "TASK_NOT_CANCELABLE");
}

#[tokio::test]
async fn extensions_header_reaches_the_service() {
    let server = start_with(HttpOptions::default(), Surface::all(), true).await;
    let (_, body) = server.rpc("SendMessage", send_params("hi")).await;
    assert_eq!(body["error"]["code"], -32008, "{body}");

    let resp = server
        .rest(reqwest::Method::POST, "/message:send")
        .header("A2A-Extensions", format!("urn:other, {EXTENSION}"))
        .json(&send_params("hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_subset_router_serves_only_its_operations() {
    let surface = Surface {
        operations: vec![Operation::GetTask],
        jsonrpc: true,
        rest: true,
        card: false,
        relay: false,
    };
    let server = start_with(HttpOptions::default(), surface, false).await;
    let (status, body) = server
        .rest_json(reqwest::Method::GET, "/tasks/x", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error_reason(&body), "TASK_NOT_FOUND");
    let (status, _) = server
        .rest_json(reqwest::Method::GET, "/tasks/x:subscribe", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = server
        .rest_json(
            reqwest::Method::POST,
            "/message:send",
            Some(send_params("hi")),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, body) = server.rpc("SendMessage", send_params("hi")).await;
    assert_eq!(body["error"]["code"], -32601);
    let resp = server
        .http
        .get(server.url("/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn extended_card_when_not_offered() {
    let server = start().await;
    let (status, body) = server
        .rest_json(reqwest::Method::GET, "/extendedAgentCard", None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_reason(&body), "UNSUPPORTED_OPERATION");
    let (_, body) = server.rpc("GetExtendedAgentCard", Value::Null).await;
    assert_eq!(body["error"]["code"], -32004);
}
