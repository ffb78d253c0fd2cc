//! A hostile agent: a server on 127.0.0.1 that answers like an A2A 1.0 agent (JSON-RPC) but
//! tries to harm whoever calls it, one way per [`Hostility`]. The `a2a` command's tests run
//! against it (`tests/tests/hostile.rs`). It records every request it gets, so a test can tell
//! whether a credential reached it.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

/// Text carrying every kind of terminal attack: a screen clear, a clipboard write (OSC 52), a
/// forged link (OSC 8), C1 controls, `\r` and backspace overwrites, and a bidi override.
pub const EVIL: &str = "ok\x1b[2J\x1b[H\x1b]52;c;cm0gLXJmIH4=\x07\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\\u{9b}31m\u{9d}0;title\u{9c}\rFAKE\x08\x08\u{202e}txt.exe";

/// How the agent misbehaves.
#[derive(Debug, Clone)]
pub enum Hostility {
    /// None: a plain agent (the other host of the redirect tests).
    Benign,
    /// Control and bidi characters ([`EVIL`]) in every field it supplies, errors included.
    Escapes,
    /// A card that never ends.
    EndlessCard,
    /// An answer to GetTask that never ends.
    EndlessAnswer,
    /// A stream whose first event never ends (data lines, no blank line).
    EndlessEvent,
    /// A stream whose first line never ends.
    EndlessLine,
    /// A stream of small events that never ends.
    EndlessStream,
    /// The card is a redirect (with this status) to the same path on another origin.
    RedirectCard(u16, String),
    /// Every JSON-RPC call is a 307 redirect to the same path on another origin.
    RedirectCalls(String),
    /// The card names its interface on another origin.
    InterfaceElsewhere(String),
    /// A stream of task `t1` that goes on with an event of task `t2`, which ends it.
    OtherTask,
    /// A stream that ends before any event.
    EmptyStream,
    /// A stream that sends its head, then nothing.
    SilentStream,
    /// A stream of one WORKING task, then keep-alive comments forever.
    EndlessKeepAlive,
    /// A card whose body stops coming after its first byte.
    StalledCard,
    /// A JWKS that never ends.
    EndlessJwks,
    /// An OAuth token endpoint (`/oauth/token`) whose answer never ends.
    EndlessToken,
    /// No harm: it serves this card as its own (another agent's, changed by the test: one
    /// that offers no pushes, say), naming that agent's interfaces, which its callers then use.
    Card(Value),
    /// A task that never finishes: SendMessage and GetTask answer it WORKING forever, and no
    /// push ever comes; CancelTask cancels it.
    NeverFinishes,
    /// Pushes out of order: SendMessage answers task `t1` WORKING, then the agent pushes (to
    /// the push config the send carried) its second chunk, its first (which starts the
    /// artifact afresh), its end as a status update without artifacts, and a late third chunk;
    /// GetTask answers the task as it ended, with both chunks. [`HostileAgent::push_results`]
    /// has the HTTP status of each push.
    OutOfOrderPushes,
    /// A push delivered twice, and a task that cannot be read at its end: SendMessage answers
    /// task `t1` WORKING, then the agent pushes its first chunk, its second chunk twice (a
    /// push service's retry), and its end as a status update without artifacts, and does not
    /// push again whatever the answers; GetTask answers HTTP 503 the first [`BUSY_READS`] times
    /// (the read that places the second copy of the chunk and the read at the end, each with
    /// its client's retries), then the task as it ended, with both chunks once.
    /// [`HostileAgent::push_results`] has the HTTP status of each push.
    DoubledChunkThenBusy,
    /// Pushes out of order and twice: SendMessage answers task `t1` WORKING, then the agent
    /// pushes its second chunk (before the start of its artifact), its first (the start), its
    /// second again, its third, its third again, its first again, and its end as a status
    /// update without artifacts. GetTask answers the task WORKING with its first two chunks
    /// until the end is pushed (six pushes answered), then COMPLETED with all three.
    /// [`HostileAgent::push_results`] has the HTTP status of each push.
    ScrambledTwice,
    /// Pushes delivered twice and replayed: SendMessage answers task `t1` WORKING, then the
    /// agent pushes its status "step 1", "step 2", "step 2" again (a push service's retry),
    /// "step 1" again (an old push replayed after a newer one), its end (COMPLETED, as a status
    /// update), and "step 1" once more after its end, each with the token; GetTask answers the
    /// task as it ended, with one artifact "done". [`HostileAgent::push_results`] has the HTTP
    /// status of each push.
    ReplayedPushes,
    /// A task that answers too much: SendMessage answers task `t1` WORKING, then the agent
    /// pushes this many chunks of 1,000,000 characters, each appended to one artifact;
    /// GetTask answers it WORKING, CancelTask cancels it. [`HostileAgent::push_results`] has
    /// the HTTP status of each push.
    BigAppends(usize),
    /// An agent in trouble for a moment (its store, say): SendMessage answers JSON-RPC
    /// InternalError (-32603) the first this many times, then takes the message and answers
    /// task `t1` COMPLETED.
    BusySends(usize),
}

/// How many times [`Hostility::DoubledChunkThenBusy`] answers GetTask 503: two GetTasks and
/// the two retries the kit's client makes of each.
pub const BUSY_READS: usize = 6;

/// A request the agent got.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// A running hostile agent. Stops when dropped.
pub struct HostileAgent {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    pushes: Arc<Mutex<Vec<u16>>>,
    server: JoinHandle<()>,
}

struct Shared {
    base: String,
    hostility: Hostility,
    requests: Arc<Mutex<Vec<Recorded>>>,
    pushes: Arc<Mutex<Vec<u16>>>,
}

impl HostileAgent {
    /// Starts an agent that misbehaves as `hostility` says.
    pub async fn start(hostility: Hostility) -> HostileAgent {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let base = format!("http://{}", listener.local_addr().expect("local address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let pushes = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            base: base.clone(),
            hostility,
            requests: requests.clone(),
            pushes: pushes.clone(),
        });
        let app = Router::new().fallback(handle).with_state(shared);
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        HostileAgent {
            base,
            requests,
            pushes,
            server,
        }
    }

    /// The HTTP status of each push the agent made so far (0: no answer), in order.
    pub fn push_results(&self) -> Vec<u16> {
        self.pushes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The requests that carried `header` (a credential).
    pub fn requests_with(&self, header: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.headers.contains_key(header))
            .collect()
    }
}

impl Drop for HostileAgent {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    let body = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    shared
        .requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Recorded {
            method: parts.method.to_string(),
            path: path.clone(),
            headers: parts.headers.clone(),
            body: body.to_vec(),
        });
    match path.as_str() {
        "/.well-known/agent-card.json" => card(&shared),
        "/.well-known/jwks.json" => match shared.hostility {
            Hostility::EndlessJwks => endless(b"{\"keys\":[", b"{\"kty\":\"EC\"},"),
            _ => json_response(&json!({"keys": []})),
        },
        "/oauth/token" if matches!(shared.hostility, Hostility::EndlessToken) => {
            endless(b"{\"access_token\":\"", b"aaaaaaaa")
        }
        "/rpc" => rpc(&shared, &body),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A body that starts with `head` and repeats `unit` until the client stops reading.
fn endless(head: &'static [u8], unit: &'static [u8]) -> Response {
    let chunk = Bytes::from(unit.repeat((64 * 1024) / unit.len().max(1)));
    let body = futures::stream::once(async move { Bytes::from_static(head) })
        .chain(futures::stream::repeat(chunk))
        .map(Ok::<_, Infallible>);
    Body::from_stream(body).into_response()
}

fn json_response(value: &Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn redirect(status: u16, to: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::FOUND);
    (status, [(header::LOCATION, to)]).into_response()
}

/// The agent's card, with its JSON-RPC interface at `url`.
fn card_json(name: &str, text: &str, url: &str) -> Value {
    json!({
        "name": name,
        "description": text,
        "version": text,
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true, "pushNotifications": true},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": format!("skill-{text}"), "name": text, "description": text,
            "tags": [text], "examples": [text]}],
    })
}

fn card(shared: &Shared) -> Response {
    let own = format!("{}/rpc", shared.base);
    match &shared.hostility {
        Hostility::Escapes => json_response(&card_json(EVIL, EVIL, &own)),
        Hostility::EndlessCard => endless(b"{\"name\":\"", b"aaaaaaaa"),
        Hostility::RedirectCard(status, elsewhere) => {
            redirect(*status, format!("{elsewhere}/.well-known/agent-card.json"))
        }
        Hostility::InterfaceElsewhere(elsewhere) => json_response(&card_json(
            "hostile",
            "an agent",
            &format!("{elsewhere}/rpc"),
        )),
        Hostility::StalledCard => {
            let body = futures::stream::once(async { Bytes::from_static(b"{") })
                .chain(futures::stream::pending())
                .map(Ok::<_, Infallible>);
            (
                [(header::CONTENT_TYPE, "application/json")],
                Body::from_stream(body),
            )
                .into_response()
        }
        Hostility::Card(card) => json_response(card),
        _ => json_response(&card_json("hostile", "an agent", &own)),
    }
}

/// A task of `id` in `state`, every text field `text`.
fn task(id: &str, state: &str, text: &str) -> Value {
    json!({
        "id": id,
        "contextId": text,
        "status": {"state": state, "message": {"messageId": text, "role": "ROLE_AGENT",
            "parts": [{"text": text}]}},
        "artifacts": [{"artifactId": text, "name": text,
            "parts": [{"text": text}, {"url": text, "filename": text, "mediaType": text}]}],
    })
}

fn rpc(shared: &Shared, body: &[u8]) -> Response {
    if let Hostility::RedirectCalls(elsewhere) = &shared.hostility {
        return redirect(307, format!("{elsewhere}/rpc"));
    }
    let request: Value = serde_json::from_slice(body).unwrap_or_default();
    let id = request["id"].clone();
    let method = request["method"].as_str().unwrap_or_default();
    let task_id = request["params"]["id"].as_str().unwrap_or("t1").to_owned();
    let result =
        |result: Value| json_response(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    let evil = matches!(shared.hostility, Hostility::Escapes);
    let stuck = matches!(shared.hostility, Hostility::NeverFinishes);
    let scrambled = matches!(shared.hostility, Hostility::OutOfOrderPushes);
    let doubled = matches!(shared.hostility, Hostility::DoubledChunkThenBusy);
    let replayed = matches!(shared.hostility, Hostility::ReplayedPushes);
    let scrambled_twice = matches!(shared.hostility, Hostility::ScrambledTwice);
    let big = match shared.hostility {
        Hostility::BigAppends(chunks) => Some(chunks),
        _ => None,
    };
    let busy = match shared.hostility {
        Hostility::BusySends(times) => calls_of(shared, "SendMessage") <= times,
        _ => false,
    };
    match method {
        "SendMessage" if busy => json_response(&json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32603, "message": "Internal error"}})),
        "SendMessage" if big.is_some() => {
            let (url, token) = push_target(&request);
            let chunks = big.unwrap_or_default();
            tokio::spawn(push_big_appends(url, token, chunks, shared.pushes.clone()));
            result(json!({"task": {"id": "t1", "contextId": "c1",
                "status": {"state": "TASK_STATE_WORKING"}}}))
        }
        "GetTask" if big.is_some() => result(json!({"id": task_id, "contextId": "c1",
            "status": {"state": "TASK_STATE_WORKING"}})),
        "CancelTask" if big.is_some() => result(json!({"id": task_id, "contextId": "c1",
            "status": {"state": "TASK_STATE_CANCELED"}})),
        "SendMessage" if doubled => {
            let (url, token) = push_target(&request);
            tokio::spawn(push_doubled_chunk(url, token, shared.pushes.clone()));
            result(json!({"task": {"id": "t1", "contextId": "c1",
                "status": {"state": "TASK_STATE_WORKING"}}}))
        }
        "GetTask" if doubled && calls_of(shared, "GetTask") <= BUSY_READS => {
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        "GetTask" if doubled => result(json!({"id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "answer",
                "parts": [{"text": "chunk-1 "}, {"text": "chunk-2 "}]}]})),
        "SendMessage" if replayed => {
            let (url, token) = push_target(&request);
            tokio::spawn(push_replayed(url, token, shared.pushes.clone()));
            result(json!({"task": {"id": "t1", "contextId": "c1",
                "status": {"state": "TASK_STATE_WORKING"}}}))
        }
        "GetTask" if replayed => result(json!({"id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "answer", "parts": [{"text": "done"}]}]})),
        "SendMessage" if scrambled_twice => {
            let (url, token) = push_target(&request);
            tokio::spawn(push_scrambled_twice(url, token, shared.pushes.clone()));
            result(json!({"task": {"id": "t1", "contextId": "c1",
                "status": {"state": "TASK_STATE_WORKING"}}}))
        }
        "GetTask" if scrambled_twice => {
            let answered = shared
                .pushes
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .len();
            let (state, texts) = if answered >= 6 {
                (
                    "TASK_STATE_COMPLETED",
                    &["chunk-1 ", "chunk-2 ", "chunk-3 "][..],
                )
            } else {
                ("TASK_STATE_WORKING", &["chunk-1 ", "chunk-2 "][..])
            };
            let parts: Vec<Value> = texts.iter().map(|t| json!({"text": t})).collect();
            result(
                json!({"id": "t1", "contextId": "c1", "status": {"state": state},
                "artifacts": [{"artifactId": "answer", "parts": parts}]}),
            )
        }
        "SendMessage" if scrambled => {
            let (url, token) = push_target(&request);
            tokio::spawn(push_out_of_order(url, token, shared.pushes.clone()));
            result(json!({"task": {"id": "t1", "contextId": "c1",
                "status": {"state": "TASK_STATE_WORKING"}}}))
        }
        "GetTask" if scrambled => result(json!({"id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "answer",
                "parts": [{"text": "chunk-1 "}, {"text": "chunk-2 "}]}]})),
        "SendMessage" if stuck => {
            result(json!({"task": task("t1", "TASK_STATE_WORKING", "working")}))
        }
        "GetTask" if stuck => result(task(&task_id, "TASK_STATE_WORKING", "working")),
        "CancelTask" if stuck => result(task(&task_id, "TASK_STATE_CANCELED", "canceled")),
        "SendMessage" if evil => result(json!({"task": task(EVIL, "TASK_STATE_COMPLETED", EVIL)})),
        "SendMessage" => result(json!({"task": task("t1", "TASK_STATE_COMPLETED", "done")})),
        "GetTask" if evil && task_id == "err" => json_response(&json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32001, "message": EVIL}})),
        "GetTask" if evil => result(task(EVIL, "TASK_STATE_COMPLETED", EVIL)),
        "GetTask" if matches!(shared.hostility, Hostility::EndlessAnswer) => endless(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"id\":\"",
            b"aaaaaaaa",
        ),
        "GetTask" => result(task(&task_id, "TASK_STATE_COMPLETED", "done")),
        "SendStreamingMessage" | "SubscribeToTask" => {
            stream(shared, &id, &task_id, request["params"]["id"].is_string())
        }
        _ => json_response(&json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": "no such method"}})),
    }
}

/// The URL and token of the push config a SendMessage `request` carried (empty if none).
fn push_target(request: &Value) -> (String, String) {
    let config = &request["params"]["configuration"]["taskPushNotificationConfig"];
    let text = |name: &str| config[name].as_str().unwrap_or_default().to_owned();
    (text("url"), text("token"))
}

/// How many JSON-RPC calls of `method` the agent got so far (the one being answered too).
fn calls_of(shared: &Shared, method: &str) -> usize {
    shared
        .requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|r| r.path == "/rpc")
        .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
        .filter(|call| call["method"] == method)
        .count()
}

/// An append of `text` to the artifact `answer` of task `t1` (its start, if not `append`).
fn answer_chunk(text: &str, append: bool) -> Value {
    json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1", "append": append,
        "artifact": {"artifactId": "answer", "parts": [{"text": text}]}}})
}

/// The end of task `t1`, as a status update without artifacts.
fn completed_push() -> Value {
    json!({"statusUpdate": {"taskId": "t1", "contextId": "c1",
        "status": {"state": "TASK_STATE_COMPLETED"}}})
}

/// The pushes of [`Hostility::OutOfOrderPushes`], one after the other's answer.
async fn push_out_of_order(url: String, token: String, results: Arc<Mutex<Vec<u16>>>) {
    let pushes = [
        answer_chunk("chunk-2 ", true),
        answer_chunk("chunk-1 ", false),
        completed_push(),
        answer_chunk("chunk-3 ", true),
    ];
    push_all(url, token, pushes, results).await;
}

/// The pushes of [`Hostility::ScrambledTwice`], one after the other's answer.
async fn push_scrambled_twice(url: String, token: String, results: Arc<Mutex<Vec<u16>>>) {
    let pushes = [
        answer_chunk("chunk-2 ", true),
        answer_chunk("chunk-1 ", false),
        answer_chunk("chunk-2 ", true),
        answer_chunk("chunk-3 ", true),
        answer_chunk("chunk-3 ", true),
        answer_chunk("chunk-1 ", false),
        completed_push(),
    ];
    push_all(url, token, pushes, results).await;
}

/// The pushes of [`Hostility::DoubledChunkThenBusy`], one after the other's answer.
async fn push_doubled_chunk(url: String, token: String, results: Arc<Mutex<Vec<u16>>>) {
    let pushes = [
        answer_chunk("chunk-1 ", false),
        answer_chunk("chunk-2 ", true),
        answer_chunk("chunk-2 ", true),
        completed_push(),
    ];
    push_all(url, token, pushes, results).await;
}

/// A WORKING status of task `t1` saying `text`, in a message whose id is `text` too.
fn step_push(text: &str) -> Value {
    json!({"statusUpdate": {"taskId": "t1", "contextId": "c1",
        "status": {"state": "TASK_STATE_WORKING", "message": {"messageId": text,
            "role": "ROLE_AGENT", "parts": [{"text": text}]}}}})
}

/// The pushes of [`Hostility::ReplayedPushes`], one after the other's answer.
async fn push_replayed(url: String, token: String, results: Arc<Mutex<Vec<u16>>>) {
    let pushes = [
        step_push("step 1"),
        step_push("step 2"),
        step_push("step 2"),
        step_push("step 1"),
        completed_push(),
        step_push("step 1"),
    ];
    push_all(url, token, pushes, results).await;
}

/// Pushes `pushes` to `url` with `token`, one after the other's answer, recording each answer's
/// status in `results`.
async fn push_all(
    url: String,
    token: String,
    pushes: impl IntoIterator<Item = Value>,
    results: Arc<Mutex<Vec<u16>>>,
) {
    // It works a moment before its first push: the call that sent to it has parked by then.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let http = reqwest::Client::new();
    for push in pushes {
        let status = http
            .post(&url)
            .header("X-A2A-Notification-Token", &token)
            .json(&push)
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .map_or(0, |r| r.status().as_u16());
        results
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(status);
    }
}

/// The pushes of [`Hostility::BigAppends`], one after the other's answer.
async fn push_big_appends(
    url: String,
    token: String,
    chunks: usize,
    results: Arc<Mutex<Vec<u16>>>,
) {
    let text = "x".repeat(1_000_000);
    // It works a moment before its first push: the call that sent to it has parked by then.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let http = reqwest::Client::new();
    for n in 0..chunks {
        let push = json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1",
            "append": n > 0, "artifact": {"artifactId": "big", "parts": [{"text": text}]}}});
        let status = http
            .post(&url)
            .header("X-A2A-Notification-Token", &token)
            .json(&push)
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .map_or(0, |r| r.status().as_u16());
        results
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(status);
    }
}

/// One SSE event carrying the JSON-RPC response of `id` with `result`.
fn event(id: &Value, result: Value) -> Bytes {
    let data = json!({"jsonrpc": "2.0", "id": id, "result": result});
    Bytes::from(format!("data: {data}\n\n"))
}

fn sse(body: impl futures::Stream<Item = Bytes> + Send + 'static) -> Response {
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(body.map(Ok::<_, Infallible>)),
    )
        .into_response()
}

fn stream(shared: &Shared, id: &Value, task_id: &str, id_given: bool) -> Response {
    let working = event(
        id,
        json!({"task": task(task_id, "TASK_STATE_WORKING", "working")}),
    );
    match &shared.hostility {
        Hostility::Escapes => {
            // A send's task is its own; a subscription's the one asked for.
            let tid = if id_given { task_id } else { EVIL };
            let first = event(id, json!({"task": task(tid, "TASK_STATE_WORKING", EVIL)}));
            let chunk = event(
                id,
                json!({"artifactUpdate": {"taskId": tid, "contextId": EVIL,
                "artifact": {"artifactId": EVIL, "name": EVIL, "parts": [{"text": EVIL}]}}}),
            );
            let last = event(
                id,
                json!({"statusUpdate": {"taskId": tid, "contextId": EVIL,
                "status": {"state": "TASK_STATE_COMPLETED",
                    "message": {"messageId": EVIL, "role": "ROLE_AGENT", "parts": [{"text": EVIL}]}}}}),
            );
            sse(futures::stream::iter([first, chunk, last]))
        }
        Hostility::EndlessEvent => {
            let line = Bytes::from(format!("data: {}\n", "x".repeat(1000)));
            sse(
                futures::stream::once(async { Bytes::from_static(b"data: {\n") })
                    .chain(futures::stream::repeat(line)),
            )
        }
        Hostility::EndlessLine => {
            sse(
                futures::stream::once(async { Bytes::from_static(b"data: ") })
                    .chain(futures::stream::repeat(Bytes::from(vec![b'x'; 64 * 1024]))),
            )
        }
        Hostility::EndlessStream => {
            let status = event(
                id,
                json!({"statusUpdate": {"taskId": task_id, "contextId": "c",
                "status": {"state": "TASK_STATE_WORKING"}}}),
            );
            sse(futures::stream::once(async move { working })
                .chain(futures::stream::repeat(status)))
        }
        Hostility::OtherTask => {
            let other = event(
                id,
                json!({"statusUpdate": {"taskId": "t2", "contextId": "c",
                "status": {"state": "TASK_STATE_COMPLETED"}}}),
            );
            sse(futures::stream::iter([working, other]))
        }
        Hostility::EmptyStream => sse(futures::stream::empty()),
        Hostility::SilentStream => sse(futures::stream::pending()),
        Hostility::EndlessKeepAlive => {
            let ticks = futures::stream::unfold((), |()| async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Some((Bytes::from_static(b": keep-alive\n\n"), ()))
            });
            sse(futures::stream::once(async move { working }).chain(ticks))
        }
        _ => {
            let done = event(
                id,
                json!({"statusUpdate": {"taskId": task_id, "contextId": "c",
                "status": {"state": "TASK_STATE_COMPLETED"}}}),
            );
            sse(futures::stream::iter([working, done]))
        }
    }
}
