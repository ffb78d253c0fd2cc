//! Server-Sent Events, read incrementally as they arrive.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, CONTENT_TYPE};
use serde_json::Value;

use crate::*;

/// One SSE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
    /// Which binding sent it (decides how [`SseEvent::payload`] unwraps it).
    pub binding: Binding,
}

impl SseEvent {
    /// `data` as JSON (panics if it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {}", self.data))
    }

    /// The `id:` as a sequence number (panics if absent or not a number).
    #[track_caller]
    pub fn seq(&self) -> u64 {
        self.id
            .as_deref()
            .unwrap_or_else(|| panic!("SSE event without id: {self:?}"))
            .parse()
            .unwrap_or_else(|_| panic!("SSE id is not a number: {self:?}"))
    }

    /// The `StreamResponse`: `result` of a JSON-RPC envelope, or the bare REST data. Panics on
    /// an error event.
    #[track_caller]
    pub fn payload(&self) -> Value {
        let data = self.json();
        match self.binding {
            Binding::JsonRpc => {
                assert_eq!(
                    data["jsonrpc"], "2.0",
                    "SSE data is a JSON-RPC response: {data}"
                );
                assert!(data.get("error").is_none(), "error event: {data}");
                data.get("result")
                    .cloned()
                    .unwrap_or_else(|| panic!("JSON-RPC SSE data without result: {data}"))
            }
            Binding::Rest => {
                assert!(data.get("error").is_none(), "error event: {data}");
                data
            }
        }
    }

    fn as_error(&self) -> Option<ApiError> {
        let data: Value = serde_json::from_str(&self.data).ok()?;
        let error = data.get("error")?;
        Some(match self.binding {
            Binding::JsonRpc => ApiError::from_rpc_error(error),
            Binding::Rest => {
                let status = error["code"].as_u64().unwrap_or(0) as u16;
                ApiError::from_rest(status, &data)
            }
        })
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>;

/// An SSE response read incrementally.
pub struct SseStream {
    pub status: u16,
    pub headers: HeaderMap,
    binding: Binding,
    inner: ByteStream,
    buffer: Vec<u8>,
    ready: VecDeque<SseEvent>,
    current: PartialEvent,
    ended: bool,
}

impl std::fmt::Debug for SseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseStream")
            .field("status", &self.status)
            .field("binding", &self.binding)
            .field("ready", &self.ready)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct PartialEvent {
    id: Option<String>,
    event: Option<String>,
    data: Option<String>,
}

/// What can go wrong while waiting for the next event.
#[derive(Debug)]
pub enum SseWait {
    TimedOut,
    Failed(String),
}

/// Opens a streaming request. An error answer (plain JSON, or an error as the first SSE event)
/// is returned as `Err`.
pub async fn open_sse(
    binding: Binding,
    builder: reqwest::RequestBuilder,
) -> Result<SseStream, ApiError> {
    let response = builder.send().await.expect("streaming request");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    if !content_type.starts_with("text/event-stream") {
        let rest = into_rest_response(response).await;
        let challenge = rest.header("www-authenticate").map(str::to_string);
        let mut api = match binding {
            Binding::JsonRpc => match rest.body.get("error") {
                Some(error) => ApiError {
                    http_status: rest.status,
                    ..ApiError::from_rpc_error(error)
                },
                None => panic!(
                    "a non-SSE answer that is no JSON-RPC error: {} {}",
                    rest.status, rest.body
                ),
            },
            Binding::Rest => {
                assert_ne!(
                    status, 200,
                    "a 200 streaming answer must be text/event-stream"
                );
                ApiError::from_rest(rest.status, &rest.body)
            }
        };
        api.www_authenticate = challenge;
        return Err(api);
    }
    assert_eq!(status, 200, "SSE responses have status 200");
    let headers = response.headers().clone();
    let mut stream = SseStream {
        status,
        headers,
        binding,
        inner: Box::pin(response.bytes_stream()),
        buffer: Vec::new(),
        ready: VecDeque::new(),
        current: PartialEvent::default(),
        ended: false,
    };
    // An error before any data is sent as the first event (the digest's interop advice).
    match stream.next_within(EVENT_TIMEOUT).await {
        Ok(Some(first)) => {
            if let Some(error) = first.as_error() {
                return Err(error);
            }
            stream.ready.push_front(first);
        }
        Ok(None) => {}
        Err(e) => panic!("no first SSE event: {e:?}"),
    }
    Ok(stream)
}

impl SseStream {
    fn parse_line(&mut self, line: &str) {
        if line.is_empty() {
            let current = std::mem::take(&mut self.current);
            if let Some(data) = current.data {
                self.ready.push_back(SseEvent {
                    id: current.id,
                    event: current.event,
                    data,
                    binding: self.binding,
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

    /// The next event, `Ok(None)` when the server closed the stream.
    pub async fn next_within(&mut self, timeout: Duration) -> Result<Option<SseEvent>, SseWait> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            match tokio::time::timeout_at(deadline, self.inner.next()).await {
                Err(_) => return Err(SseWait::TimedOut),
                Ok(None) => {
                    self.ended = true;
                    // A final event without its blank line is dropped, as the SSE spec says.
                }
                Ok(Some(Err(e))) => return Err(SseWait::Failed(e.to_string())),
                Ok(Some(Ok(bytes))) => {
                    self.buffer.extend_from_slice(&bytes);
                    self.drain_lines();
                }
            }
        }
    }

    /// The next event within [`EVENT_TIMEOUT`]; `None` at the end of the stream. Panics on a
    /// timeout or a broken connection.
    #[track_caller]
    pub fn next_event(&mut self) -> impl std::future::Future<Output = Option<SseEvent>> + '_ {
        let caller = std::panic::Location::caller();
        async move {
            match self.next_within(EVENT_TIMEOUT).await {
                Ok(event) => event,
                Err(e) => panic!("waiting for an SSE event ({caller}): {e:?}"),
            }
        }
    }

    /// The next `n` events; panics if the stream ends or stalls first.
    pub async fn take(&mut self, n: usize) -> Vec<SseEvent> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            match self.next_within(EVENT_TIMEOUT).await {
                Ok(Some(e)) => out.push(e),
                Ok(None) => panic!(
                    "the stream ended after {} of {n} events: {out:#?}",
                    out.len()
                ),
                Err(e) => panic!(
                    "waiting for event {} of {n}: {e:?}; got {out:#?}",
                    out.len() + 1
                ),
            }
        }
        out
    }

    /// Every remaining event until the server closes the stream; panics if that takes longer
    /// than `within` in total.
    pub async fn collect_to_end(&mut self, within: Duration) -> Vec<SseEvent> {
        let deadline = tokio::time::Instant::now() + within;
        let mut out = Vec::new();
        loop {
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_within(remaining).await {
                Ok(Some(e)) => out.push(e),
                Ok(None) => return out,
                Err(e) => panic!(
                    "the stream did not end within {within:?} ({e:?}); events so far: {out:#?}"
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn sse_lines_are_parsed_incrementally() {
        let chunks: Vec<reqwest::Result<axum::body::Bytes>> = vec![
            Ok(axum::body::Bytes::from_static(b": keep-alive\n\nid: 1\nda")),
            Ok(axum::body::Bytes::from_static(
                b"ta: {\"a\":1}\r\n\r\nid: 2\nevent: error\ndata: x\ndata: y\n\n",
            )),
            Ok(axum::body::Bytes::from_static(b"id: 3\ndata: partial")),
        ];
        let mut s = SseStream {
            status: 200,
            headers: HeaderMap::new(),
            binding: Binding::Rest,
            inner: Box::pin(futures::stream::iter(chunks)),
            buffer: Vec::new(),
            ready: VecDeque::new(),
            current: PartialEvent::default(),
            ended: false,
        };
        let first = s.next_event().await.unwrap();
        assert_eq!((first.seq(), first.json()), (1, json!({"a": 1})));
        let second = s.next_event().await.unwrap();
        assert_eq!(second.event.as_deref(), Some("error"));
        assert_eq!(second.data, "x\ny");
        assert_eq!(s.next_event().await, None);
    }
}
