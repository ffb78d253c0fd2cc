//! The client against small in-process servers that misbehave on purpose: dropped streams,
//! expiring tokens, overloaded gateways, legacy card paths, tenants. (The e2e suite and the
//! `a2a` command's tests run it against a2a-local and the Python SDK's server.)

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_client::{
    Auth, Binding, Client, Error, GetTaskRequest, OAuth2ClientCredentials, ReconnectPolicy,
    RetryPolicy, StreamResponse, TaskState,
};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::Notify;

async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// A builder with short backoffs, so the retry and reconnect paths run quickly.
fn builder() -> a2a_client::ClientBuilder {
    Client::builder()
        .timeout(Some(Duration::from_secs(10)))
        .reconnect(ReconnectPolicy {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
        })
        .retry(RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(50),
            retry_send_message: false,
        })
}

fn interface(base: &str, tenant: &str) -> a2a_client::AgentInterface {
    a2a_client::AgentInterface {
        url: base.into(),
        protocol_binding: "HTTP+JSON".into(),
        protocol_version: "1.0".into(),
        tenant: tenant.into(),
    }
}

fn task(state: &str) -> Value {
    json!({"id": "t1", "contextId": "c1", "status": {"state": state}})
}

fn sse(events: &[(Option<u64>, Value)]) -> String {
    events
        .iter()
        .map(|(id, data)| match id {
            Some(id) => format!("id: {id}\ndata: {data}\n\n"),
            None => format!("data: {data}\n\n"),
        })
        .collect()
}

/// An SSE body that sends `text`, then breaks the connection once `drop` is notified (the test
/// does so after it received those events, so the break comes mid-stream).
fn broken_sse(text: String, drop: Arc<Notify>) -> Response {
    let sent = futures::stream::once(async move { Ok::<_, std::io::Error>(Bytes::from(text)) });
    let broken = futures::stream::once(async move {
        drop.notified().await;
        Err(std::io::Error::other("connection lost"))
    });
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(sent.chain(broken)),
    )
        .into_response()
}

fn sse_response(text: String) -> Response {
    ([("content-type", "text/event-stream")], text).into_response()
}

fn chunk(seq: u64) -> (Option<u64>, Value) {
    (
        Some(seq),
        json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1",
            "artifact": {"artifactId": "a", "parts": [{"text": format!("chunk-{seq} ")}]}}}),
    )
}

#[derive(Default)]
struct Seen {
    last_event_ids: Mutex<Vec<Option<String>>>,
    drop: Arc<Notify>,
}

#[tokio::test]
async fn a_dropped_stream_resumes_after_the_last_event_id() {
    let seen = Arc::new(Seen::default());
    let app = Router::new()
        .route(
            "/message:stream",
            post(|State(seen): State<Arc<Seen>>| async move {
                let events = sse(&[
                    (Some(1), json!({"task": task("TASK_STATE_WORKING")})),
                    chunk(2),
                ]);
                broken_sse(events, seen.drop.clone())
            }),
        )
        .route(
            "/tasks/{rest}",
            get(
                |State(seen): State<Arc<Seen>>, headers: HeaderMap| async move {
                    let last = headers
                        .get("last-event-id")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    seen.last_event_ids.lock().unwrap().push(last);
                    sse_response(sse(&[
                        chunk(3),
                        (
                            Some(4),
                            json!({"statusUpdate": {"taskId": "t1", "contextId": "c1",
                            "status": {"state": "TASK_STATE_COMPLETED"}}}),
                        ),
                    ]))
                },
            ),
        )
        .with_state(seen.clone());
    let base = serve(app).await;
    let client = builder().for_interface(interface(&base, "")).unwrap();

    let mut stream = client
        .send_streaming_message(client.text("go"))
        .await
        .unwrap();
    let mut events = vec![
        stream.next().await.unwrap().unwrap(),
        stream.next().await.unwrap().unwrap(),
    ];
    seen.drop.notify_one();
    events.extend(stream.map(Result::unwrap).collect::<Vec<_>>().await);
    let texts: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            StreamResponse::ArtifactUpdate(a) => Some(a2a_client::text_of(&a.artifact.parts)),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["chunk-2 ", "chunk-3 "], "no event lost or repeated");
    assert!(matches!(
        events.last(),
        Some(StreamResponse::StatusUpdate(u)) if u.status.state == TaskState::Completed
    ));
    assert_eq!(
        *seen.last_event_ids.lock().unwrap(),
        [Some("2".to_string())],
        "one resubscription, after event 2"
    );
}

#[tokio::test]
async fn a_stream_without_ids_ends_with_the_task_when_it_finished_meanwhile() {
    // Like the Python SDK's server: no SSE ids, and no subscription to a finished task.
    let drop = Arc::new(Notify::new());
    let app = Router::new()
        .route(
            "/message:stream",
            post(|State(drop): State<Arc<Notify>>| async move {
                broken_sse(
                    sse(&[(None, json!({"task": task("TASK_STATE_WORKING")}))]),
                    drop,
                )
            }),
        )
        .route(
            "/tasks/{rest}",
            get(|uri: Uri| async move {
                if uri.path().ends_with(":subscribe") {
                    let error = a2a_client::A2AError::unsupported("t1 is terminal");
                    (StatusCode::BAD_REQUEST, axum::Json(error.to_status_body())).into_response()
                } else {
                    axum::Json(task("TASK_STATE_COMPLETED")).into_response()
                }
            }),
        )
        .with_state(drop.clone());
    let base = serve(app).await;
    let client = builder().for_interface(interface(&base, "")).unwrap();
    let mut stream = client
        .send_streaming_message(client.text("go"))
        .await
        .unwrap();
    let mut events = vec![stream.next().await.unwrap().unwrap()];
    drop.notify_one();
    events.extend(stream.map(Result::unwrap).collect::<Vec<_>>().await);
    let states: Vec<TaskState> = events
        .iter()
        .filter_map(|e| match e {
            StreamResponse::Task(t) => Some(t.status.state),
            _ => None,
        })
        .collect();
    assert_eq!(states, [TaskState::Working, TaskState::Completed]);
}

#[derive(Default)]
struct Tokens {
    issued: AtomicUsize,
    expires_in: AtomicUsize,
    forms: Mutex<Vec<String>>,
}

#[tokio::test]
async fn oauth2_tokens_are_fetched_once_refreshed_before_expiry_and_after_a_refusal() {
    let tokens = Arc::new(Tokens::default());
    tokens.expires_in.store(3600, Ordering::SeqCst);
    let app = Router::new()
        .route(
            "/token",
            post(
                |State(t): State<Arc<Tokens>>, headers: HeaderMap, form: String| async move {
                    // client id "cli", secret "s3cret", with HTTP basic.
                    assert_eq!(headers["authorization"], "Basic Y2xpOnMzY3JldA==");
                    t.forms.lock().unwrap().push(form);
                    let n = t.issued.fetch_add(1, Ordering::SeqCst) + 1;
                    axum::Json(json!({
                        "access_token": format!("tok-{n}"),
                        "token_type": "Bearer",
                        "expires_in": t.expires_in.load(Ordering::SeqCst),
                    }))
                },
            ),
        )
        .route(
            "/tasks/{id}",
            get(
                |State(t): State<Arc<Tokens>>, headers: HeaderMap| async move {
                    // Only the newest token is accepted.
                    let newest = format!("Bearer tok-{}", t.issued.load(Ordering::SeqCst));
                    if headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&newest) {
                        axum::Json(task("TASK_STATE_COMPLETED")).into_response()
                    } else {
                        let error = a2a_client::A2AError::Unauthenticated("token refused".into());
                        (StatusCode::UNAUTHORIZED, axum::Json(error.to_status_body()))
                            .into_response()
                    }
                },
            ),
        )
        .with_state(tokens.clone());
    let base = serve(app).await;
    let credentials =
        OAuth2ClientCredentials::new(format!("{base}/token"), "cli", "s3cret").scopes(["a2a:read"]);
    let client = builder()
        .auth(Auth::oauth2(credentials))
        .for_interface(interface(&base, ""))
        .unwrap();
    let get = || {
        client.get_task(GetTaskRequest {
            id: "t1".into(),
            ..GetTaskRequest::default()
        })
    };

    get().await.unwrap();
    get().await.unwrap();
    assert_eq!(
        tokens.issued.load(Ordering::SeqCst),
        1,
        "the token is reused"
    );
    assert_eq!(
        tokens.forms.lock().unwrap()[0],
        "grant_type=client_credentials&scope=a2a%3Aread"
    );

    // The server stops accepting it (revoked): the client fetches a new one and retries once.
    tokens.issued.fetch_add(1, Ordering::SeqCst);
    get().await.unwrap();
    assert_eq!(tokens.issued.load(Ordering::SeqCst), 3);

    // A token about to expire is replaced before it is used.
    tokens.expires_in.store(5, Ordering::SeqCst);
    tokens.issued.fetch_add(1, Ordering::SeqCst); // refuse tok-3: a 5 s token is fetched
    get().await.unwrap();
    let before = tokens.issued.load(Ordering::SeqCst);
    get().await.unwrap();
    assert_eq!(
        tokens.issued.load(Ordering::SeqCst),
        before + 1,
        "a token within the refresh margin is replaced"
    );
}

#[tokio::test]
async fn reads_are_retried_after_a_transient_failure_and_sends_are_not() {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route(
            "/tasks/{id}",
            get(|State(hits): State<Arc<AtomicUsize>>| async move {
                if hits.fetch_add(1, Ordering::SeqCst) == 0 {
                    StatusCode::SERVICE_UNAVAILABLE.into_response()
                } else {
                    axum::Json(task("TASK_STATE_WORKING")).into_response()
                }
            }),
        )
        .route(
            "/message:send",
            post(|State(hits): State<Arc<AtomicUsize>>| async move {
                hits.fetch_add(1, Ordering::SeqCst);
                StatusCode::SERVICE_UNAVAILABLE
            }),
        )
        .with_state(hits.clone());
    let base = serve(app).await;
    let client = builder().for_interface(interface(&base, "")).unwrap();

    let task = client
        .get_task(GetTaskRequest {
            id: "t1".into(),
            ..GetTaskRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(task.status.state, TaskState::Working);
    assert_eq!(hits.swap(0, Ordering::SeqCst), 2, "one retry");

    let e = client.send_message(client.text("hi")).await.unwrap_err();
    assert!(matches!(e, Error::HttpStatus { status: 503, .. }), "{e}");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "SendMessage is not retried by default"
    );
}

#[tokio::test]
async fn the_legacy_card_path_is_tried_and_the_interface_tenant_is_honoured() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let app = Router::new()
        .route(
            "/.well-known/agent.json",
            get(|State(base): State<Arc<Mutex<Vec<String>>>>| async move {
                let base = base.lock().unwrap()[0].clone();
                axum::Json(json!({
                    "name": "legacy", "description": "d", "version": "1",
                    "supportedInterfaces": [
                        {"url": format!("{base}/v03"), "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
                        {"url": base, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0", "tenant": "acme"}
                    ],
                    "capabilities": {}, "defaultInputModes": ["text/plain"],
                    "defaultOutputModes": ["text/plain"], "skills": []
                }))
            }),
        )
        .route(
            "/acme/tasks/{id}",
            get(|headers: HeaderMap, uri: Uri| async move {
                assert_eq!(headers["a2a-version"], "1.0");
                assert_eq!(headers["x-api-key"], "k1");
                assert_eq!(uri.query(), Some("historyLength=1"));
                axum::Json(task("TASK_STATE_COMPLETED"))
            }),
        )
        .with_state(seen.clone());
    let base = serve(app).await;
    seen.lock().unwrap().push(base.clone());

    let client = builder()
        .auth(Auth::api_key_header("X-API-Key", "k1"))
        .connect(&base)
        .await
        .unwrap();
    assert_eq!(
        client.binding(),
        Binding::HttpJson,
        "the 0.3 interface is skipped"
    );
    assert_eq!(client.card().unwrap().name, "legacy");
    let task = client
        .get_task(GetTaskRequest {
            id: "t1".into(),
            history_length: Some(1),
            ..GetTaskRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(task.id, "t1");
}

#[tokio::test]
async fn basic_credentials_go_in_the_authorization_header() {
    let app = Router::new().route(
        "/tasks/{id}",
        get(|headers: HeaderMap| async move {
            // "ada:l0velace", base64.
            assert_eq!(headers["authorization"], "Basic YWRhOmwwdmVsYWNl");
            axum::Json(task("TASK_STATE_COMPLETED"))
        }),
    );
    let base = serve(app).await;
    let client = builder()
        .auth(Auth::basic("ada", "l0velace"))
        .for_interface(interface(&base, ""))
        .unwrap();
    let task = client
        .get_task(GetTaskRequest {
            id: "t1".into(),
            ..GetTaskRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(task.id, "t1");
}

#[tokio::test]
async fn api_keys_can_go_in_the_query() {
    let app = Router::new().route(
        "/tasks/{id}",
        get(|uri: Uri| async move {
            assert_eq!(uri.query(), Some("api_key=k+1"));
            axum::Json(task("TASK_STATE_COMPLETED"))
        }),
    );
    let base = serve(app).await;
    let client = builder()
        .auth(Auth::api_key_query("api_key", "k 1"))
        .for_interface(interface(&base, ""))
        .unwrap();
    client
        .get_task(GetTaskRequest {
            id: "t1".into(),
            ..GetTaskRequest::default()
        })
        .await
        .unwrap();
}
