//! Server-sent event streams of both bindings.
//!
//! Every event carries `id: <seq>` (the task log position) so a client can resume with
//! `Last-Event-ID`; a direct Message reply has no log position (seq 0) and no id line. An error
//! in the middle of a stream is an `event: error` and ends the stream. Idle streams send a
//! keep-alive comment so proxies and gateways do not cut them.

use std::convert::Infallible;
use std::time::Duration;

use a2a_core::{EventStream, StreamItem};
use a2a_protocol::compat::{is_final_state, Dialect};
use a2a_protocol::{jsonrpc, A2AError};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{future, stream, StreamExt};
use serde_json::Value;

/// How the events of a stream are framed.
#[derive(Debug, Clone)]
pub(crate) enum Framing {
    /// Each event is a JSON-RPC response with the request's id.
    JsonRpc(Value),
    /// Each event is the bare `StreamResponse`; errors are `{"error": Status}`.
    Rest,
    /// python-a2a's own framing, on the path it resubscribes on (`/tasks/stream`): each event
    /// the bare early object, named `update`, `artifact`, or `complete` for the last one (its
    /// client parses `update` and `complete` data as a Task, and stops at `complete`); errors
    /// as JSON-RPC responses with the request's id (it reads their `error`).
    PythonA2a(Value),
}

/// A framing, and the older version its events are written for (`None`: 1.0).
#[derive(Debug, Clone)]
pub(crate) struct Framed(pub(crate) Framing, pub(crate) Option<Legacy>);

/// How a stream is written for an older version. Its clients stop reading at `final: true`,
/// so the stream ends there too, even where a 1.0 stream would wait on: a resubscription to an
/// interrupted task ends after the task, as its status is final.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Legacy {
    /// The dialect of the events.
    pub(crate) dialect: Dialect,
    /// Whether this is a resubscription (its first event, the task, may already be final).
    pub(crate) resubscribe: bool,
}

impl Legacy {
    /// `response` (a 1.0 `StreamResponse`) in the dialect, and whether it ends the stream.
    fn render(self, response: Value) -> (Value, bool) {
        let snapshot_state = response
            .get("task")
            .map(|t| t["status"]["state"].as_str().unwrap_or_default().to_owned());
        let mut out = self.dialect.stream_event(response);
        match snapshot_state {
            Some(state) => {
                let ends = self.resubscribe && is_final_state(&state);
                if let Some(flag) = out.get_mut("final") {
                    // An early client reads the task as a status event: final only if it ends.
                    *flag = Value::Bool(ends);
                }
                (out, ends)
            }
            None => {
                let ends = out["final"] == Value::Bool(true)
                    || out["statusUpdate"]["final"] == Value::Bool(true);
                (out, ends)
            }
        }
    }
}

impl From<Framing> for Framed {
    fn from(framing: Framing) -> Self {
        Self(framing, None)
    }
}

impl Framing {
    fn error_data(&self, error: &A2AError) -> Value {
        match self {
            Self::JsonRpc(id) | Self::PythonA2a(id) => jsonrpc::failure(id, error),
            Self::Rest => error.to_status_body(),
        }
    }

    /// The SSE event of one item, and whether it ends the stream.
    fn render(&self, item: Result<StreamItem, A2AError>, legacy: Option<Legacy>) -> (Event, bool) {
        let item = match item {
            Ok(item) => item,
            Err(error) => return (error_event(self.error_data(&error)), true),
        };
        let mut name = None;
        let rendered = match legacy {
            // 1.0: serialised once, straight from its type.
            None => serde_json::value::to_raw_value(&item.response).map(|response| {
                let data = match self {
                    Self::JsonRpc(id) => jsonrpc::success_text(id, &response),
                    Self::Rest | Self::PythonA2a(_) => String::from(Box::<str>::from(response)),
                };
                (data, false)
            }),
            Some(legacy) => serde_json::to_value(&item.response).map(|response| {
                let (response, last) = legacy.render(response);
                let data = match self {
                    Self::JsonRpc(id) => jsonrpc::success(id, response),
                    Self::Rest => response,
                    Self::PythonA2a(_) => {
                        name = Some(if last {
                            "complete"
                        } else if response.get("artifact").is_some() {
                            "artifact"
                        } else {
                            "update"
                        });
                        response
                    }
                };
                (data.to_string(), last)
            }),
        };
        let (data, last) = match rendered {
            Ok(rendered) => rendered,
            Err(err) => {
                let error = crate::errors::internal("serialising a stream event failed", err);
                return (error_event(self.error_data(&error)), true);
            }
        };
        let mut event = Event::default().data(data);
        if let Some(name) = name {
            event = event.event(name);
        }
        if item.seq > 0 {
            event = event.id(item.seq.to_string());
        }
        (event, last)
    }
}

fn error_event(data: Value) -> Event {
    Event::default().event("error").data(data.to_string())
}

/// Answers with `events` as an SSE stream that ends when they end, or after an error.
pub(crate) fn stream_response(
    events: EventStream,
    framing: impl Into<Framed>,
    keep_alive: Duration,
) -> Response {
    let Framed(framing, legacy) = framing.into();
    let events = events.map(move |item| framing.render(item, legacy));
    // Ends right after the last event, without waiting for the next one.
    let body = stream::unfold((events, false), |(mut events, ended)| async move {
        if ended {
            return None;
        }
        let (event, last) = events.next().await?;
        Some((Ok::<_, Infallible>(event), (events, last)))
    });
    Sse::new(body)
        .keep_alive(KeepAlive::new().interval(keep_alive).text("keep-alive"))
        .into_response()
}

/// A JSON-RPC error before a stream started, sent as a stream of that one error event: some
/// clients (Go) only read `data:` lines of an event stream and would not see a JSON body.
pub(crate) fn json_rpc_error_stream(id: &Value, error: &A2AError) -> Response {
    let event = error_event(jsonrpc::failure(id, error));
    Sse::new(stream::once(future::ready(Ok::<_, Infallible>(event)))).into_response()
}
