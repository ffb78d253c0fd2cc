//! A webhook receiver: a real HTTP listener on 127.0.0.1 that records push notifications.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::*;

/// One push notification as the webhook received it.
#[derive(Debug, Clone)]
pub struct Push {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Push {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A real HTTP listener on 127.0.0.1 that answers 200 to every POST and hands each one to the
/// test through a channel.
pub struct Webhook {
    /// `http://127.0.0.1:PORT/hook`.
    pub url: String,
    rx: tokio::sync::mpsc::UnboundedReceiver<Push>,
    task: tokio::task::JoinHandle<()>,
}

impl Webhook {
    pub async fn start() -> Webhook {
        use axum::extract::State;
        use axum::http::{HeaderMap as AxHeaders, StatusCode, Uri};

        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Push>();
        async fn receive(
            State(tx): State<tokio::sync::mpsc::UnboundedSender<Push>>,
            uri: Uri,
            headers: AxHeaders,
            body: axum::body::Bytes,
        ) -> StatusCode {
            let body = serde_json::from_slice(&body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
            let mut converted = HeaderMap::new();
            for (name, value) in headers.iter() {
                if let (Ok(n), Ok(v)) = (
                    reqwest::header::HeaderName::from_bytes(name.as_str().as_bytes()),
                    reqwest::header::HeaderValue::from_bytes(value.as_bytes()),
                ) {
                    converted.append(n, v);
                }
            }
            let _ = tx.send(Push {
                path: uri.path().to_string(),
                headers: converted,
                body,
            });
            StatusCode::OK
        }
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(tx);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the webhook listener");
        let addr = listener.local_addr().expect("webhook address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Webhook {
            url: format!("http://{addr}/hook"),
            rx,
            task,
        }
    }

    /// The next push, or `None` if none arrives within `timeout`.
    pub async fn next_within(&mut self, timeout: Duration) -> Option<Push> {
        tokio::time::timeout(timeout, self.rx.recv())
            .await
            .ok()
            .flatten()
    }

    /// Collects pushes until one satisfies `last` (included); panics after `within`.
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
                    out.iter().map(|p| &p.body).collect::<Vec<_>>()
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
