//! What the push tests share: a tiny agent served by the real router on 127.0.0.1 (so its
//! JWKS is live), a webhook receiver on 127.0.0.1, raw listeners that count connections, and
//! a push loop that runs deliveries without sleeping.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use a2a_core::{
    A2aService, Agent, AgentDescription, AgentError, AgentRequest, CallContext, Emitter,
    JobOutcome, KeySet, PushJob, PushPolicy, PushSigner, ServiceConfig,
};
use a2a_embedded::{QueueName, SqliteStore};
use a2a_http::{router, HttpOptions};
use a2a_protocol::{
    AgentInterface, Artifact, Message, Part, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, Task, TaskPushNotificationConfig,
};
use async_trait::async_trait;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt as _;

/// The test agent. By the message text: `hold` parks in INPUT_REQUIRED; `steps N` goes
/// WORKING, streams N chunks of one artifact and completes.
pub struct StepAgent;

#[async_trait]
impl Agent for StepAgent {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "push test agent".into(),
            description: "Emits a known sequence of events, for the push tests.".into(),
            version: "0.0.1".into(),
            default_input_modes: vec!["text/plain".into()],
            default_output_modes: vec!["text/plain".into()],
            ..AgentDescription::default()
        }
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        let text = request.text().to_string();
        if text == "hold" {
            return emitter.input_required("Anything else?").await;
        }
        let steps: usize = text
            .strip_prefix("steps ")
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        emitter.working(None).await?;
        for n in 0..steps {
            let chunk = Artifact {
                artifact_id: "out".into(),
                parts: vec![Part::text(format!("chunk-{n} "))],
                ..Artifact::default()
            };
            emitter.artifact(chunk, n > 0, n + 1 == steps).await?;
        }
        emitter.complete(Some("done")).await
    }
}

/// The agent as a receiver sees it: the service on the embedded store, served by
/// `a2a_http::router` on 127.0.0.1, with its JWKS live at `{base}/.well-known/jwks.json`.
pub struct AgentServer {
    /// `http://127.0.0.1:PORT`: the issuer of its pushes.
    pub base: String,
    /// The service in force (replaced by [`Self::rotate`]).
    pub service: A2aService,
    /// The store, shared by every service this server runs.
    pub store: Arc<SqliteStore>,
    /// How many times the JWKS was fetched.
    pub jwks_fetches: Arc<AtomicUsize>,
    policy: PushPolicy,
    max_push_attempts: u32,
    router: Arc<RwLock<Router>>,
    _dir: tempfile::TempDir,
}

impl AgentServer {
    /// Starts an agent signing with `keys`, delivering under `policy`, giving up on an event
    /// after `max_push_attempts`.
    pub async fn start(keys: KeySet, policy: PushPolicy, max_push_attempts: u32) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(SqliteStore::open(dir.path()).expect("open the store"));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let service = build_service(&base, keys, &policy, max_push_attempts, &store);
        let router = Arc::new(RwLock::new(router(service.clone(), HttpOptions::default())));
        let jwks_fetches = Arc::new(AtomicUsize::new(0));
        // One listener for the server's whole life, forwarding to whichever router is current,
        // so that a key rotation keeps the issuer URL (as a redeploy would).
        let front = {
            let router = router.clone();
            let fetches = jwks_fetches.clone();
            Router::new().fallback(move |request: Request| {
                if request.uri().path() == "/.well-known/jwks.json" {
                    fetches.fetch_add(1, Ordering::SeqCst);
                }
                let current = router.read().expect("router lock").clone();
                async move { current.oneshot(request).await }
            })
        };
        tokio::spawn(async move {
            axum::serve(listener, front).await.expect("serve");
        });
        Self {
            base,
            service,
            store,
            jwks_fetches,
            policy,
            max_push_attempts,
            router,
            _dir: dir,
        }
    }

    /// Redeploys with another key set: same store, same URL, new signer and JWKS.
    pub fn rotate(&mut self, keys: KeySet) {
        self.service = build_service(
            &self.base,
            keys,
            &self.policy,
            self.max_push_attempts,
            &self.store,
        );
        *self.router.write().expect("router lock") =
            router(self.service.clone(), HttpOptions::default());
    }

    /// Sends `text` in a new task with an inline push config for `webhook`, and waits until
    /// the task stops. Every event is then in the log, and its push jobs are queued.
    pub async fn run_task(&self, text: &str, webhook: &str) -> Task {
        self.send(text, Some(webhook)).await
    }

    /// Sends `text` in a new task without a push config, and waits until the task stops.
    pub async fn run_task_without_push(&self, text: &str) -> Task {
        self.send(text, None).await
    }

    async fn send(&self, text: &str, webhook: Option<&str>) -> Task {
        let push = webhook.map(|url| TaskPushNotificationConfig {
            url: url.to_string(),
            token: "the-config-token".into(),
            ..TaskPushNotificationConfig::default()
        });
        let request = SendMessageRequest {
            message: Some(Message::user_text(a2a_core::new_id(), text)),
            configuration: Some(SendMessageConfiguration {
                task_push_notification_config: push,
                ..SendMessageConfiguration::default()
            }),
            ..SendMessageRequest::default()
        };
        match self
            .service
            .send_message(&CallContext::anonymous(""), request)
            .await
            .expect("send")
        {
            SendMessageResponse::Task(task) => task,
            other => panic!("expected a task, got {other:?}"),
        }
    }

    /// The push loop without its sleeps: takes jobs from the push queue and delivers them,
    /// retrying at once instead of after the backoff, and dead-letters a job after its last
    /// attempt (as `a2a-local`'s push loop and the SQS redrive policy do). Returns when the
    /// queue is empty.
    pub async fn drain(&self) -> Vec<JobOutcome> {
        let mut outcomes = Vec::new();
        for _round in 0..1000 {
            let jobs = self
                .store
                .receive(QueueName::Push, 16, Duration::from_secs(60))
                .await
                .expect("receive");
            if jobs.is_empty() {
                return outcomes;
            }
            for job in jobs {
                let parsed: PushJob = serde_json::from_str(&job.body).expect("a push job");
                let outcome = self.service.deliver_push(&parsed, job.receive_count).await;
                match &outcome {
                    JobOutcome::Done => self.store.delete_job(job.id).await,
                    JobOutcome::Retry { reason, .. }
                        if job.receive_count >= self.max_push_attempts =>
                    {
                        self.store.dead_letter(job.id, reason).await
                    }
                    JobOutcome::Retry { .. } => self.store.retry_job(job.id, Duration::ZERO).await,
                }
                .expect("settle the job");
                outcomes.push(outcome);
            }
        }
        panic!("the push queue did not drain");
    }
}

fn build_service(
    base: &str,
    keys: KeySet,
    policy: &PushPolicy,
    max_push_attempts: u32,
    store: &Arc<SqliteStore>,
) -> A2aService {
    let config = ServiceConfig {
        interfaces: vec![AgentInterface {
            url: base.to_string(),
            protocol_binding: "HTTP+JSON".into(),
            protocol_version: "1.0".into(),
            tenant: String::new(),
        }],
        push_policy: policy.clone(),
        push_signer: Some(PushSigner::new(keys, base)),
        max_push_attempts,
        push_timeout: Duration::from_secs(5),
        ..ServiceConfig::default()
    };
    A2aService::new(
        config,
        Arc::new(StepAgent),
        store.clone(),
        store.clone(),
        store.clone(),
    )
}

/// One POST as the webhook received it.
#[derive(Debug, Clone)]
pub struct Received {
    /// Its headers.
    pub headers: HeaderMap,
    /// Its exact body bytes.
    pub body: Bytes,
}

impl Received {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

#[derive(Default)]
struct HookState {
    received: Mutex<Vec<Received>>,
    /// Statuses to answer, in order; 200 once they run out.
    script: Mutex<VecDeque<u16>>,
    /// Answer this to every request after the script (default 200).
    then: Mutex<u16>,
}

/// A webhook receiver on 127.0.0.1 that records each POST (headers and body bytes) and
/// answers the statuses it is told to.
pub struct Webhook {
    /// `http://127.0.0.1:PORT/hook`.
    pub url: String,
    state: Arc<HookState>,
}

impl Webhook {
    /// Starts a receiver answering 200.
    pub async fn start() -> Self {
        let state = Arc::new(HookState {
            then: Mutex::new(200),
            ..HookState::default()
        });
        let app = Router::new()
            .route("/hook", axum::routing::post(record))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            axum::serve(listener, app).await.expect("serve");
        });
        Self { url, state }
    }

    /// Answers `statuses` to the next requests, in order, then `then` to every later one.
    pub fn script(&self, statuses: &[u16], then: u16) {
        *self.state.script.lock().unwrap() = statuses.iter().copied().collect();
        *self.state.then.lock().unwrap() = then;
    }

    /// Every POST received so far (answered with whatever status), in order.
    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }
}

async fn record(
    State(state): State<Arc<HookState>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    state
        .received
        .lock()
        .unwrap()
        .push(Received { headers, body });
    let code = state
        .script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or(*state.then.lock().unwrap());
    StatusCode::from_u16(code).expect("a valid status")
}

/// A raw listener on 127.0.0.1 that counts accepted connections and answers each with
/// `response` (bytes of a whole HTTP response).
pub struct RawListener {
    /// Its port.
    pub port: u16,
    accepted: Arc<AtomicUsize>,
}

impl RawListener {
    /// Starts a listener answering every connection with `response`.
    pub async fn start(response: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let response = response.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = socket.read(&mut buf).await;
                    let _ = socket.write_all(response.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        Self { port, accepted }
    }

    /// A listener that answers 200 to anything: it would "deliver" every push it receives.
    pub async fn ok() -> Self {
        Self::start("HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into())
            .await
    }

    /// A listener that redirects every request to `location`.
    pub async fn redirect(location: &str) -> Self {
        Self::start(format!(
            "HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\n\
             connection: close\r\n\r\n"
        ))
        .await
    }

    /// How many connections it accepted.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}
