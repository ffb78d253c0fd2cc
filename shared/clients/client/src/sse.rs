//! Server-Sent Events, read incrementally as they arrive: the raw layer under
//! [`crate::TaskStream`], public for callers that need the events' ids and framing.

use std::collections::VecDeque;
use std::pin::Pin;

use axum::body::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::error::{self, Error};
use crate::transport::Binding;

/// One SSE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `id:` line (our server sends the task log's sequence number).
    pub id: Option<String>,
    /// The `event:` line (`error` for an error event).
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// The bytes of a response body.
pub type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

#[derive(Default)]
struct PartialEvent {
    id: Option<String>,
    event: Option<String>,
    data: Option<String>,
}

/// An SSE response body, parsed as it arrives.
pub struct EventReader {
    /// The HTTP status of the response.
    pub status: u16,
    /// Its headers.
    pub headers: HeaderMap,
    /// The binding that framed the events.
    pub binding: Binding,
    inner: ByteStream,
    buffer: Vec<u8>,
    ready: VecDeque<SseEvent>,
    current: PartialEvent,
    ended: bool,
}

impl std::fmt::Debug for EventReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventReader")
            .field("status", &self.status)
            .field("binding", &self.binding)
            .field("ready", &self.ready)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl EventReader {
    /// Reads SSE from `inner`.
    pub fn new(binding: Binding, status: u16, headers: HeaderMap, inner: ByteStream) -> Self {
        Self {
            status,
            headers,
            binding,
            inner,
            buffer: Vec::new(),
            ready: VecDeque::new(),
            current: PartialEvent::default(),
            ended: false,
        }
    }

    /// Puts an event back in front (a caller that peeked at the first one).
    pub fn push_front(&mut self, event: SseEvent) {
        self.ready.push_front(event);
    }

    /// The next event; `Ok(None)` when the server closed the stream, `Err` when the connection
    /// broke.
    pub async fn next_event(&mut self) -> Result<Option<SseEvent>, Error> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            match self.inner.next().await {
                // A last event without its blank line is dropped, as the SSE spec says.
                None => self.ended = true,
                Some(Err(e)) => return Err(Error::Transport(e)),
                Some(Ok(bytes)) => {
                    self.buffer.extend_from_slice(&bytes);
                    self.drain_lines();
                }
            }
        }
    }

    fn drain_lines(&mut self) {
        while let Some(pos) = self.buffer.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.buffer.drain(..=pos).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line).into_owned();
            self.parse_line(&line);
        }
    }

    fn parse_line(&mut self, line: &str) {
        if line.is_empty() {
            let current = std::mem::take(&mut self.current);
            if let Some(data) = current.data {
                self.ready.push_back(SseEvent {
                    id: current.id,
                    event: current.event,
                    data,
                });
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "id" => self.current.id = Some(value.to_string()),
            "event" => self.current.event = Some(value.to_string()),
            "data" => match &mut self.current.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.current.data = Some(value.to_string()),
            },
            _ => {}
        }
    }
}

/// The `StreamResponse` JSON an event carries (the `result` of a JSON-RPC envelope, or the
/// bare REST data), or the A2A error it carries.
pub fn payload(binding: Binding, event: &SseEvent) -> Result<Value, Error> {
    let data: Value = serde_json::from_str(&event.data).map_err(|e| {
        Error::InvalidResponse(format!("SSE data is not JSON ({e}): {}", event.data))
    })?;
    if let Some(error) = data.get("error") {
        return Err(match binding {
            Binding::JsonRpc => Error::Agent(Box::new(error::from_json_rpc(error, 200))),
            Binding::HttpJson => {
                let status = error["code"].as_u64().unwrap_or(500) as u16;
                match error::from_status_body(status, &data) {
                    Some(e) => Error::Agent(Box::new(e)),
                    None => Error::InvalidResponse(format!("an error event: {data}")),
                }
            }
        });
    }
    match binding {
        Binding::JsonRpc => {
            if data["jsonrpc"] != "2.0" {
                return Err(Error::InvalidResponse(format!(
                    "SSE data is no JSON-RPC response: {data}"
                )));
            }
            data.get("result").cloned().ok_or_else(|| {
                Error::InvalidResponse(format!("JSON-RPC SSE data without result: {data}"))
            })
        }
        Binding::HttpJson => Ok(data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn events_are_parsed_incrementally() {
        let chunks: Vec<reqwest::Result<Bytes>> = vec![
            Ok(Bytes::from_static(b": keep-alive\n\nid: 1\nda")),
            Ok(Bytes::from_static(
                b"ta: {\"a\":1}\r\n\r\nid: 2\nevent: error\ndata: x\ndata: y\n\n",
            )),
            Ok(Bytes::from_static(b"id: 3\ndata: partial")),
        ];
        let mut reader = EventReader::new(
            Binding::HttpJson,
            200,
            HeaderMap::new(),
            Box::pin(futures::stream::iter(chunks)),
        );
        let first = reader.next_event().await.unwrap().unwrap();
        assert_eq!(first.id.as_deref(), Some("1"));
        assert_eq!(payload(Binding::HttpJson, &first).unwrap(), json!({"a": 1}));
        let second = reader.next_event().await.unwrap().unwrap();
        assert_eq!(second.event.as_deref(), Some("error"));
        assert_eq!(second.data, "x\ny");
        assert_eq!(reader.next_event().await.unwrap(), None);
    }

    #[test]
    fn error_events_decode_to_a2a_errors() {
        let event = SseEvent {
            id: None,
            event: Some("error".into()),
            data: json!({"jsonrpc": "2.0", "id": 1,
                "error": a2a_protocol::A2AError::task_not_found("t").to_json_rpc_error()})
            .to_string(),
        };
        let e = payload(Binding::JsonRpc, &event).unwrap_err();
        assert_eq!(e.agent_error().unwrap().name(), "TaskNotFoundError");
    }
}
