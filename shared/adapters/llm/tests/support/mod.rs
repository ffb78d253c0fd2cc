//! What the LLM adapter's tests share: a scripted OpenAI-compatible server on 127.0.0.1 and
//! a2a-local's server (the embedded store, the worker loops) for an agent.

#![allow(dead_code)]

#[cfg(feature = "aws")]
pub(crate) mod bedrock;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use a2a_core::Agent;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

/// The API key the tests configure: a provider's error that echoes it must not show it.
pub(crate) const API_KEY: &str = "sk-test-secret-0123456789";

/// One reply of the scripted model.
pub(crate) enum Script {
    /// These tokens, streamed, then a normal end.
    Text(Vec<&'static str>),
    /// `before`, then nothing until `gate` is notified, then `after` and the end.
    Gated {
        before: Vec<&'static str>,
        gate: Arc<Notify>,
        after: Vec<&'static str>,
    },
    /// A call of the tool `name` with `arguments` (JSON text), streamed in two fragments.
    ToolCall {
        name: &'static str,
        arguments: &'static str,
    },
    /// Nothing: `arrived` is notified, and the answer is held open, empty, until the client
    /// goes away (a model still thinking when its caller dies).
    Held { arrived: Arc<Notify> },
    /// Tokens every few milliseconds until the client goes away (then `closed` is notified),
    /// or 100,000 of them (over 8 minutes).
    Endless { closed: Arc<Notify> },
    /// An error answer: its status, a `Retry-After` and a body.
    Error {
        status: u16,
        retry_after: Option<&'static str>,
        body: Value,
    },
}

#[derive(Default)]
struct Scripted {
    replies: Mutex<VecDeque<Script>>,
    requests: Mutex<Vec<Value>>,
}

/// A scripted OpenAI-compatible Chat Completions server on 127.0.0.1.
pub(crate) struct ModelServer {
    /// `http://127.0.0.1:PORT/v1`, as `OPENAI_BASE_URL` takes it.
    pub(crate) base_url: String,
    state: Arc<Scripted>,
}

impl ModelServer {
    /// Serves `replies`, one a request, in order.
    pub(crate) async fn start(replies: Vec<Script>) -> Self {
        let state = Arc::new(Scripted {
            replies: Mutex::new(replies.into()),
            requests: Mutex::default(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(state.clone());
        let base_url = format!("http://{}/v1", serve(app).await);
        Self { base_url, state }
    }

    /// The request bodies received so far.
    pub(crate) fn requests(&self) -> Vec<Value> {
        self.state
            .requests
            .lock()
            .expect("the script's lock")
            .clone()
    }

    /// The model: this server, the test key, model `m`.
    pub(crate) fn model(&self) -> a2a_llm::ChatModel {
        a2a_llm::ChatModel::new(&self.base_url, API_KEY, "m")
    }
}

fn chunk(delta: Value, finish: Option<&str>) -> Bytes {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    Bytes::from(format!("data: {body}\n\n"))
}

fn usage() -> Bytes {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    });
    Bytes::from(format!("data: {body}\n\ndata: [DONE]\n\n"))
}

async fn complete(
    State(state): State<Arc<Scripted>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    assert_eq!(
        headers.get("authorization").and_then(|v| v.to_str().ok()),
        Some(format!("Bearer {API_KEY}").as_str())
    );
    state.requests.lock().expect("the script's lock").push(body);
    let script = state.replies.lock().expect("the script's lock").pop_front();
    let Some(script) = script else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "no reply scripted").into_response();
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(16);
    match script {
        Script::Error {
            status,
            retry_after,
            body,
        } => {
            let mut response = (
                StatusCode::from_u16(status).expect("the scripted model server"),
                Json(body),
            )
                .into_response();
            if let Some(after) = retry_after {
                response.headers_mut().insert(
                    "retry-after",
                    after.parse().expect("the scripted model server"),
                );
            }
            return response;
        }
        Script::Text(tokens) => {
            tokio::spawn(async move {
                for token in tokens {
                    let _ = tx.send(Ok(chunk(json!({"content": token}), None))).await;
                }
                let _ = tx.send(Ok(chunk(json!({}), Some("stop")))).await;
                let _ = tx.send(Ok(usage())).await;
            });
        }
        Script::Gated {
            before,
            gate,
            after,
        } => {
            tokio::spawn(async move {
                for token in before {
                    let _ = tx.send(Ok(chunk(json!({"content": token}), None))).await;
                }
                gate.notified().await;
                for token in after {
                    let _ = tx.send(Ok(chunk(json!({"content": token}), None))).await;
                }
                let _ = tx.send(Ok(chunk(json!({}), Some("stop")))).await;
                let _ = tx.send(Ok(usage())).await;
            });
        }
        Script::Held { arrived } => {
            arrived.notify_one();
            tokio::spawn(async move { tx.closed().await });
        }
        Script::Endless { closed } => {
            tokio::spawn(async move {
                for _ in 0..100_000 {
                    if tx
                        .send(Ok(chunk(json!({"content": "la "}), None)))
                        .await
                        .is_err()
                    {
                        closed.notify_one();
                        return;
                    }
                    // The pace of a model writing, not a synchronisation.
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
            });
        }
        Script::ToolCall { name, arguments } => {
            let (first, rest) = arguments.split_at(arguments.len() / 2);
            tokio::spawn(async move {
                let open = json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": name, "arguments": first}}]});
                let more = json!({"tool_calls": [{"index": 0, "function": {"arguments": rest}}]});
                let _ = tx.send(Ok(chunk(open, None))).await;
                let _ = tx.send(Ok(chunk(more, None))).await;
                let _ = tx.send(Ok(chunk(json!({}), Some("tool_calls")))).await;
                let _ = tx.send(Ok(usage())).await;
            });
        }
    }
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .expect("the scripted model server")
}

/// A directory of a test's own under cargo's scratch directory for integration tests, removed
/// when dropped.
///
/// Not the `tempfile` crate: as a dev-dependency it turns on `bitflags`' `std` feature, so the
/// tests' build (infra/llm-check.sh) would no longer share reqwest, rig and everything above
/// them with a generated project's Lambda binary, which would compile them again (≈ 100 s).
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "a2a-llm-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // A directory a killed run left behind under the same name goes first.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("a test's directory");
        Self(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// a2a-local's server for `agent`, on the embedded store in a temporary directory, on a free
/// port of 127.0.0.1; stops when dropped.
pub(crate) struct A2aServer {
    /// `http://127.0.0.1:PORT`.
    pub(crate) base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    _dir: TempDir,
}

impl A2aServer {
    pub(crate) async fn start(agent: Arc<dyn Agent>) -> Self {
        let dir = TempDir::new();
        // A free port, bound by the server right after (serve takes an address, not a socket).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("a2a-local's server")
            .local_addr()
            .expect("a2a-local's server")
            .port();
        let addr = format!("127.0.0.1:{port}");
        let data_dir = dir.path().to_str().expect("a2a-local's server").to_owned();
        let options = a2a_local::Options::try_parse_from_with_data_dir(
            ".a2a",
            ["a2a-local", "--addr", &addr, "--data-dir", &data_dir],
        )
        .expect("a2a-local's server");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            a2a_local::serve(options, agent, async {
                let _ = stopped.await;
            })
            .await
            .expect("a2a-local's server");
        });
        let base = format!("http://{addr}");
        // Ready once it accepts a connection (it binds before it serves).
        for _ in 0..500 {
            if tokio::net::TcpStream::connect(&addr).await.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        Self {
            base,
            stop: Some(stop),
            _dir: dir,
        }
    }

    pub(crate) async fn client(&self) -> a2a_client::Client {
        a2a_client::Client::connect(&self.base)
            .await
            .expect("a2a-local's server")
    }
}

impl Drop for A2aServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Sends `request`, expecting a task back.
pub(crate) async fn send(
    client: &a2a_client::Client,
    request: a2a_protocol::SendMessageRequest,
) -> a2a_protocol::Task {
    match client.send_message(request).await.expect("the send") {
        a2a_protocol::SendMessageResponse::Task(task) => task,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// Waits for `work`, failing the test instead of hanging if what it awaits never comes.
pub(crate) async fn within<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(60), work)
        .await
        .expect("the awaited event came (60 s safety net)")
}

/// The first artifact chunk a stream brings.
pub(crate) async fn first_chunk(
    events: &mut a2a_client::TaskStream,
) -> a2a_protocol::TaskArtifactUpdateEvent {
    use futures::StreamExt as _;
    within(async {
        loop {
            let event = events.next().await.expect("the stream goes on");
            let event = event.expect("a stream event");
            if let a2a_client::StreamResponse::ArtifactUpdate(update) = event {
                break update;
            }
        }
    })
    .await
}

/// The text of a task's answer artifact.
pub(crate) fn answer(task: &a2a_protocol::Task) -> String {
    let artifact = task
        .artifacts
        .iter()
        .find(|a| a.name == "answer")
        .expect("an answer artifact");
    a2a_client::text_of(&artifact.parts)
}

/// The task's token usage, as GetTask shows it: input, output, total tokens and model calls.
pub(crate) fn token_usage(task: &a2a_protocol::Task) -> [u64; 4] {
    let usage = &task.metadata.as_ref().expect("the task's metadata")["tokenUsage"];
    ["inputTokens", "outputTokens", "totalTokens", "modelCalls"].map(|key| {
        usage[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key} in {usage}"))
    })
}

/// Serves `app` on a free port of 127.0.0.1; returns its address.
pub(crate) async fn serve(app: Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a test server's port");
    let addr = listener.local_addr().expect("a test server's port");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("a test server") });
    addr
}

/// Streams a message to `agent` (served by a2a-local's server) whose model holds the rest of
/// its answer until `gate` is notified: notifies it once the first chunk reached the client,
/// then reads the stream to the task's end, which must be COMPLETED. Returns the first chunk
/// and the last artifact update.
pub(crate) async fn stream_through_gate(
    agent: Arc<dyn Agent>,
    gate: &Notify,
) -> (
    a2a_protocol::TaskArtifactUpdateEvent,
    a2a_protocol::TaskArtifactUpdateEvent,
    Option<a2a_protocol::Metadata>,
) {
    use futures::StreamExt as _;
    let server = A2aServer::start(agent).await;
    let client = server.client().await;
    let mut events = client
        .send_streaming_message(client.text("greet me"))
        .await
        .expect("the stream");
    let first = first_chunk(&mut events).await;
    gate.notify_one();
    let mut last = None;
    let mut end = None;
    while let Some(event) = events.next().await {
        match event.expect("a stream event") {
            a2a_client::StreamResponse::ArtifactUpdate(update) => last = Some(update),
            a2a_client::StreamResponse::StatusUpdate(update)
                if update.status.state.is_terminal() =>
            {
                assert_eq!(update.status.state, a2a_protocol::TaskState::Completed);
                end = update.metadata;
                break;
            }
            _ => {}
        }
    }
    (first, last.expect("the final artifact"), end)
}
