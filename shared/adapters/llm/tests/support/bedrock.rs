//! A scripted Amazon Bedrock ConverseStream endpoint of the tests' own on 127.0.0.1: the AWS
//! SDK is pointed at it (its endpoint URL, static test credentials), and it answers as Bedrock
//! does, its events framed with the SDK's own event-stream types.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

/// The model id the tests call.
pub(crate) const MODEL: &str = "amazon.nova-lite-v1:0";

/// One reply of the scripted endpoint.
pub(crate) enum Reply {
    /// These text deltas, then the end of the message (its stop reason, the token usage).
    Text(Vec<&'static str>),
    /// `before`, then nothing until `gate` is notified, then `after` and the end.
    Gated {
        before: Vec<&'static str>,
        gate: Arc<Notify>,
        after: Vec<&'static str>,
    },
    /// A call of the tool `name` with `input` (JSON text), streamed in two deltas.
    ToolUse {
        name: &'static str,
        input: &'static str,
    },
    /// An HTTP error before any event, as Bedrock sends one: the status, the exception's
    /// type (`x-amzn-errortype`) and its message.
    Refused {
        status: u16,
        kind: &'static str,
        message: &'static str,
    },
    /// The stream's first message an exception (its type, e.g. `throttlingException`).
    ExceptionEvent {
        kind: &'static str,
        message: &'static str,
    },
}

#[derive(Default)]
struct Scripted {
    replies: Mutex<VecDeque<Reply>>,
    /// (the model id in the path, the request's JSON body)
    requests: Mutex<Vec<(String, Value)>>,
}

/// The endpoint.
pub(crate) struct BedrockServer {
    /// `http://127.0.0.1:PORT`, the SDK's endpoint URL.
    pub(crate) endpoint: String,
    state: Arc<Scripted>,
}

impl BedrockServer {
    /// Serves `replies`, one a request, in order.
    pub(crate) async fn start(replies: Vec<Reply>) -> Self {
        let state = Arc::new(Scripted {
            replies: Mutex::new(replies.into()),
            requests: Mutex::default(),
        });
        let app = Router::new()
            .route("/model/{model}/converse-stream", post(converse_stream))
            .with_state(state.clone());
        let endpoint = format!("http://{}", super::serve(app).await);
        Self { endpoint, state }
    }

    /// The requests received so far: (model id, JSON body).
    pub(crate) fn requests(&self) -> Vec<(String, Value)> {
        self.state
            .requests
            .lock()
            .expect("the script's lock")
            .clone()
    }

    /// The Bedrock model [`MODEL`], through this endpoint, with static test credentials.
    pub(crate) fn model(&self) -> a2a_llm::ChatModel {
        use aws_sdk_bedrockruntime::config::{Credentials, SharedCredentialsProvider};
        let credentials = Credentials::new("AKIDTEST", "test-secret", None, None, "test");
        let config = aws_config::SdkConfig::builder()
            .endpoint_url(&self.endpoint)
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(SharedCredentialsProvider::new(credentials))
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        a2a_llm::ChatModel::bedrock(MODEL, Some(config))
    }
}

/// One event-stream message: `{"<kind>": payload}` as Bedrock frames it.
fn frame(message_type: &'static str, kind: &'static str, payload: Value) -> Bytes {
    let kind_header = if message_type == "event" {
        ":event-type"
    } else {
        ":exception-type"
    };
    let message = Message::new(payload.to_string().into_bytes())
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String(message_type.into()),
        ))
        .add_header(Header::new(kind_header, HeaderValue::String(kind.into())))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".into()),
        ));
    let mut bytes = Vec::new();
    write_message_to(&message, &mut bytes).expect("an event-stream message");
    Bytes::from(bytes)
}

fn event(kind: &'static str, payload: Value) -> Bytes {
    frame("event", kind, payload)
}

fn text(index: u32, text: &str) -> Bytes {
    event(
        "contentBlockDelta",
        json!({"contentBlockIndex": index, "delta": {"text": text}}),
    )
}

/// The message's end: its block stopped, the stop reason, then the usage (the last event).
fn end(index: u32, stop_reason: &str) -> Vec<Bytes> {
    vec![
        event("contentBlockStop", json!({"contentBlockIndex": index})),
        event("messageStop", json!({"stopReason": stop_reason})),
        event(
            "metadata",
            json!({"usage": {"inputTokens": 7, "outputTokens": 3, "totalTokens": 10},
                   "metrics": {"latencyMs": 12}}),
        ),
    ]
}

async fn converse_stream(
    State(state): State<Arc<Scripted>>,
    Path(model): Path<String>,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).expect("a Converse request is JSON");
    state
        .requests
        .lock()
        .expect("the script's lock")
        .push((model, body));
    let reply = state.replies.lock().expect("the script's lock").pop_front();
    let Some(reply) = reply else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "no reply scripted").into_response();
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(16);
    let start = event("messageStart", json!({"role": "assistant"}));
    match reply {
        Reply::Refused {
            status,
            kind,
            message,
        } => {
            let mut response = (
                StatusCode::from_u16(status).expect("a status"),
                Json(json!({"message": message})),
            )
                .into_response();
            let headers = response.headers_mut();
            headers.insert(
                "x-amzn-errortype",
                format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/")
                    .parse()
                    .expect("a header"),
            );
            headers.insert("x-amzn-requestid", "req-1".parse().expect("a header"));
            return response;
        }
        Reply::ExceptionEvent { kind, message } => {
            let _ = tx.try_send(Ok(frame("exception", kind, json!({"message": message}))));
        }
        Reply::Text(deltas) => {
            tokio::spawn(async move {
                let _ = tx.send(Ok(start)).await;
                for delta in deltas {
                    let _ = tx.send(Ok(text(0, delta))).await;
                }
                for bytes in end(0, "end_turn") {
                    let _ = tx.send(Ok(bytes)).await;
                }
            });
        }
        Reply::Gated {
            before,
            gate,
            after,
        } => {
            tokio::spawn(async move {
                let _ = tx.send(Ok(start)).await;
                for delta in before {
                    let _ = tx.send(Ok(text(0, delta))).await;
                }
                gate.notified().await;
                for delta in after {
                    let _ = tx.send(Ok(text(0, delta))).await;
                }
                for bytes in end(0, "end_turn") {
                    let _ = tx.send(Ok(bytes)).await;
                }
            });
        }
        Reply::ToolUse { name, input } => {
            let (first, rest) = input.split_at(input.len() / 2);
            tokio::spawn(async move {
                let _ = tx.send(Ok(start)).await;
                let open = json!({"contentBlockIndex": 0,
                    "start": {"toolUse": {"toolUseId": "tooluse_1", "name": name}}});
                let _ = tx.send(Ok(event("contentBlockStart", open))).await;
                for part in [first, rest] {
                    let delta =
                        json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": part}}});
                    let _ = tx.send(Ok(event("contentBlockDelta", delta))).await;
                }
                for bytes in end(0, "tool_use") {
                    let _ = tx.send(Ok(bytes)).await;
                }
            });
        }
    }
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Response::builder()
        .header("content-type", "application/vnd.amazon.eventstream")
        .header("x-amzn-requestid", "req-1")
        .body(Body::from_stream(stream))
        .expect("the scripted Bedrock endpoint")
}
