//! Receivers of push notifications: [`Webhook`], a real HTTP listener on 127.0.0.1 that
//! records every POST and answers scripted statuses, and [`RawListener`], which only counts
//! the connections it accepts (for the SSRF tests: a guarded sender must never connect).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::Router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One POST as the webhook received it.
#[derive(Debug, Clone)]
pub struct Push {
    /// The request path (`/hook`).
    pub path: String,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its exact body bytes (what a signature's body hash covers).
    pub body: Bytes,
}

impl Push {
    /// The header `name` as text, if present and visible ASCII.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as JSON; panics (failing the test) if it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "the push body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

struct HookState {
    /// Every POST so far, in arrival order; a watch channel so a test can await the next one.
    received: watch::Sender<Vec<Push>>,
    /// Statuses to answer, in order, before [`Self::then`].
    script: Mutex<VecDeque<u16>>,
    /// The status for every request after the script (200 unless told otherwise).
    then: Mutex<u16>,
}

/// A webhook receiver on 127.0.0.1 that records each POST to `/hook` (path, headers, body
/// bytes), answers the statuses it is told to (200 by default), and lets a test await the
/// next push instead of sleeping.
pub struct Webhook {
    /// `http://127.0.0.1:PORT/hook`.
    pub url: String,
    state: Arc<HookState>,
    /// How many pushes [`Self::next_within`] has handed out.
    taken: usize,
    task: JoinHandle<()>,
}

impl Webhook {
    /// Starts a receiver answering 200.
    pub async fn start() -> Self {
        let state = Arc::new(HookState {
            received: watch::Sender::new(Vec::new()),
            script: Mutex::new(VecDeque::new()),
            then: Mutex::new(200),
        });
        let app = Router::new()
            .route("/hook", axum::routing::post(record))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the webhook listener");
        let url = format!(
            "http://{}/hook",
            listener.local_addr().expect("webhook address")
        );
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("serve the webhook");
        });
        Self {
            url,
            state,
            taken: 0,
            task,
        }
    }

    /// Answers `statuses` to the next requests, in order, then `then` to every later one.
    pub fn script(&self, statuses: &[u16], then: u16) {
        *self.state.script.lock().expect("script lock") = statuses.iter().copied().collect();
        *self.state.then.lock().expect("status lock") = then;
    }

    /// Every POST received so far (answered with whatever status), in order.
    pub fn received(&self) -> Vec<Push> {
        self.state.received.borrow().clone()
    }

    /// Waits until every POST received so far satisfies `done` taken together, for at most
    /// `within`; whether it did.
    pub async fn wait_for_all(&self, within: Duration, done: impl Fn(&[Push]) -> bool) -> bool {
        let mut received = self.state.received.subscribe();
        tokio::time::timeout(within, received.wait_for(|all| done(all)))
            .await
            .is_ok_and(|ok| ok.is_ok())
    }

    /// The next push not handed out by this method yet, or `None` if none arrives within
    /// `timeout`.
    pub async fn next_within(&mut self, timeout: Duration) -> Option<Push> {
        let mut received = self.state.received.subscribe();
        let taken = self.taken;
        let arrived = tokio::time::timeout(timeout, received.wait_for(|all| all.len() > taken))
            .await
            .ok()?
            .expect("the webhook's state lives as long as the webhook");
        let push = arrived[taken].clone();
        self.taken += 1;
        Some(push)
    }

    /// Collects the next pushes until one satisfies `last` (included); panics after `within`.
    pub async fn until(&mut self, within: Duration, last: impl Fn(&Push) -> bool) -> Vec<Push> {
        let deadline = tokio::time::Instant::now() + within;
        let mut out = Vec::new();
        loop {
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_within(remaining).await {
                Some(push) => {
                    let done = last(&push);
                    out.push(push);
                    if done {
                        return out;
                    }
                }
                None => panic!(
                    "the expected push did not arrive within {within:?}; received: {:#?}",
                    out.iter()
                        .map(|p| String::from_utf8_lossy(&p.body))
                        .collect::<Vec<_>>()
                ),
            }
        }
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn record(
    State(state): State<Arc<HookState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    // The status is chosen before the push is published, so a test that awaits this push and
    // then scripts the next statuses cannot change the answer to this one.
    let code = state
        .script
        .lock()
        .expect("script lock")
        .pop_front()
        .unwrap_or(*state.then.lock().expect("status lock"));
    state.received.send_modify(|all| {
        all.push(Push {
            path: uri.path().to_string(),
            headers,
            body,
        })
    });
    StatusCode::from_u16(code).expect("a valid status")
}

/// A raw listener on 127.0.0.1 that counts accepted connections and answers each with
/// `response` (bytes of a whole HTTP response), or never answers ([`RawListener::silent`]).
pub struct RawListener {
    /// Its port.
    pub port: u16,
    accepted: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl RawListener {
    /// Starts a listener answering every connection with `response`.
    pub async fn start(response: String) -> Self {
        Self::serve(Some(response)).await
    }

    /// A listener that reads each request and never answers, holding the connection open:
    /// a peer that makes its caller wait for ever.
    pub async fn silent() -> Self {
        Self::serve(None).await
    }

    /// Answers each connection with `response`, or holds it open without a word.
    async fn serve(response: Option<String>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let response = response.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = socket.read(&mut buf).await;
                    match response {
                        Some(response) => {
                            let _ = socket.write_all(response.as_bytes()).await;
                            let _ = socket.shutdown().await;
                        }
                        // The socket stays open until the test's runtime ends.
                        None => std::future::pending().await,
                    }
                });
            }
        });
        Self {
            port,
            accepted,
            task,
        }
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

impl Drop for RawListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}
