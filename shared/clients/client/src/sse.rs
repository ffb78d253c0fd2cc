//! Server-Sent Events, read incrementally as they arrive: the raw layer under
//! [`crate::TaskStream`], public for callers that need the events' ids and framing.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use axum::body::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use serde_json::Value;

use tokio::time::Instant;

use crate::binding::Binding;
use crate::error::{self, Error, Limit};
use crate::limits::Limits;

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

/// An SSE response body, parsed as it arrives, within bounds: no event or line larger than
/// [`Limits::max_event_bytes`], no more in all than its byte budget, no silence longer than its
/// idle timeout, no reading past its deadline (each an [`Error`] that ends the reading).
pub struct EventReader {
    /// The HTTP status of the response.
    pub status: u16,
    /// Its headers.
    pub headers: HeaderMap,
    /// The binding that framed the events.
    pub binding: Binding,
    inner: ByteStream,
    buffer: Vec<u8>,
    /// How much of `buffer` was searched for a newline already.
    scanned: usize,
    ready: VecDeque<SseEvent>,
    current: PartialEvent,
    ended: bool,
    max_event_bytes: usize,
    /// Bytes this reader may still read.
    budget: u64,
    bytes_read: u64,
    idle: Option<Duration>,
    deadline: Option<(Instant, Duration)>,
}

impl std::fmt::Debug for EventReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventReader")
            .field("status", &self.status)
            .field("binding", &self.binding)
            .field("ready", &self.ready)
            .field("ended", &self.ended)
            .field("bytes_read", &self.bytes_read)
            .finish_non_exhaustive()
    }
}

impl EventReader {
    /// Reads SSE from `inner`, within the default [`Limits`], without timeouts.
    pub fn new(binding: Binding, status: u16, headers: HeaderMap, inner: ByteStream) -> Self {
        let limits = Limits::default();
        Self {
            status,
            headers,
            binding,
            inner,
            buffer: Vec::new(),
            scanned: 0,
            ready: VecDeque::new(),
            current: PartialEvent::default(),
            ended: false,
            max_event_bytes: limits.max_event_bytes,
            budget: limits.max_stream_bytes,
            bytes_read: 0,
            idle: None,
            deadline: None,
        }
    }

    /// The largest event (and line) to accept, and the most to read in all.
    pub fn limits(mut self, max_event_bytes: usize, max_stream_bytes: u64) -> Self {
        self.max_event_bytes = max_event_bytes;
        self.budget = max_stream_bytes;
        self
    }

    /// The longest the stream may send nothing at all (keep-alive comments count): after
    /// that, [`Self::next_event`] fails with [`Error::Timeout`].
    pub fn idle_timeout(mut self, idle: Option<Duration>) -> Self {
        self.idle = idle;
        self
    }

    /// When reading must stop (`total` is the timeout it stands for, for the error).
    pub fn deadline(mut self, deadline: Option<(Instant, Duration)>) -> Self {
        self.deadline = deadline;
        self
    }

    /// The bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Puts an event back in front (a caller that peeked at the first one).
    pub fn push_front(&mut self, event: SseEvent) {
        self.ready.push_front(event);
    }

    /// The next event; `Ok(None)` when the server closed the stream, `Err` when the connection
    /// broke, a limit was passed or a timeout ran out.
    pub async fn next_event(&mut self) -> Result<Option<SseEvent>, Error> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            match self.next_chunk().await? {
                // A last event without its blank line is dropped, as the SSE spec says.
                None => self.ended = true,
                Some(Err(e)) => return Err(Error::Transport(e)),
                Some(Ok(bytes)) => {
                    self.bytes_read += bytes.len() as u64;
                    if self.bytes_read > self.budget {
                        self.ended = true;
                        return Err(Error::TooLarge {
                            what: "the stream".into(),
                            limit: Limit::Stream,
                            bytes: self.budget,
                        });
                    }
                    self.buffer.extend_from_slice(&bytes);
                    if let Err(e) = self.drain_lines() {
                        self.ended = true;
                        return Err(e);
                    }
                }
            }
        }
    }

    /// The next chunk of the body, within the idle timeout and the deadline.
    async fn next_chunk(&mut self) -> Result<Option<reqwest::Result<Bytes>>, Error> {
        let now = Instant::now();
        let until_deadline = self
            .deadline
            .map(|(at, total)| (at.saturating_duration_since(now), total));
        let wait = match (self.idle, until_deadline) {
            (Some(idle), Some((left, _))) => Some(idle.min(left)),
            (idle, left) => idle.or(left.map(|(left, _)| left)),
        };
        let Some(wait) = wait else {
            return Ok(self.inner.next().await);
        };
        match tokio::time::timeout(wait, self.inner.next()).await {
            Ok(chunk) => Ok(chunk),
            Err(_) => {
                self.ended = true;
                Err(match (until_deadline, self.idle) {
                    (Some((left, total)), _) if left <= wait => Error::Timeout {
                        what: "the stream did not end in time".into(),
                        after: total,
                    },
                    (_, idle) => Error::Timeout {
                        what: "the stream sent nothing, not even a keep-alive".into(),
                        after: idle.unwrap_or(wait),
                    },
                })
            }
        }
    }

    /// Parses every complete line in the buffer; refuses a line or an event that grew past the
    /// limit (searching only the bytes not searched before, so a line that never ends costs
    /// its length once, not once per chunk).
    fn drain_lines(&mut self) -> Result<(), Error> {
        let mut start = 0;
        while let Some(offset) = self.buffer[self.scanned..].iter().position(|b| *b == b'\n') {
            let end = self.scanned + offset;
            let mut line = &self.buffer[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            self.scanned = start;
            self.parse_line(&line)?;
        }
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        if self.buffer.len() > self.max_event_bytes {
            return Err(self.too_large("a line of the stream"));
        }
        Ok(())
    }

    fn too_large(&self, what: &str) -> Error {
        Error::TooLarge {
            what: what.into(),
            limit: Limit::Event,
            bytes: self.max_event_bytes as u64,
        }
    }

    fn parse_line(&mut self, line: &str) -> Result<(), Error> {
        if line.is_empty() {
            let current = std::mem::take(&mut self.current);
            if let Some(data) = current.data {
                self.ready.push_back(SseEvent {
                    id: current.id,
                    event: current.event,
                    data,
                });
            }
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "id" => self.current.id = Some(value.to_string()),
            "event" => self.current.event = Some(value.to_string()),
            "data" => {
                let held = self.current.data.as_ref().map_or(0, String::len);
                if held + value.len() + 1 > self.max_event_bytes {
                    return Err(self.too_large("an event of the stream"));
                }
                match &mut self.current.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => self.current.data = Some(value.to_string()),
                }
            }
            _ => {}
        }
        Ok(())
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

    fn reader_of(chunks: Vec<Vec<u8>>) -> EventReader {
        let chunks: Vec<reqwest::Result<Bytes>> =
            chunks.into_iter().map(|c| Ok(Bytes::from(c))).collect();
        EventReader::new(
            Binding::HttpJson,
            200,
            HeaderMap::new(),
            Box::pin(futures::stream::iter(chunks)),
        )
    }

    /// Reads to the end; the events, or the error that ended the reading.
    async fn read_all(mut reader: EventReader) -> Result<usize, Error> {
        let mut events = 0;
        while reader.next_event().await?.is_some() {
            events += 1;
        }
        Ok(events)
    }

    #[tokio::test]
    async fn lines_events_and_streams_are_bounded() {
        let line = |n: usize| format!("data: {}\n", "x".repeat(n)).into_bytes();
        let endless_line =
            std::iter::once(b"data: ".to_vec()).chain(std::iter::repeat_n(vec![b'x'; 10], 20));
        let endless_event = vec![line(10); 20];
        let many_events: Vec<Vec<u8>> = (0..40).map(|_| b"data: {}\n\n".to_vec()).collect();
        /// The events read, or the limit passed and how its error begins.
        type Expected = Result<usize, (Limit, &'static str)>;
        let cases: Vec<(&str, Vec<Vec<u8>>, Expected)> = vec![
            (
                "a line without its newline",
                endless_line.collect(),
                Err((Limit::Event, "a line")),
            ),
            (
                "an event without its blank line",
                endless_event,
                Err((Limit::Event, "an event")),
            ),
            (
                "a stream of small events",
                many_events.clone(),
                Err((Limit::Stream, "the stream")),
            ),
            ("within the limits", many_events[..5].to_vec(), Ok(5)),
            (
                "one event split in 1-byte chunks",
                b"data: {}\n\n".iter().map(|b| vec![*b]).collect(),
                Ok(1),
            ),
        ];
        for (name, chunks, expected) in cases {
            let got = read_all(reader_of(chunks).limits(64, 300)).await;
            match (got, expected) {
                (Ok(n), Ok(m)) => assert_eq!(n, m, "{name}"),
                (Err(Error::TooLarge { what, limit, bytes }), Err((l, w))) => {
                    assert_eq!(limit, l, "{name}");
                    assert!(what.starts_with(w), "{name}: {what}");
                    assert_eq!(bytes, if l == Limit::Event { 64 } else { 300 }, "{name}");
                }
                (got, expected) => panic!("{name}: {got:?}, expected {expected:?}"),
            }
        }
    }

    #[tokio::test]
    async fn a_silent_stream_times_out() {
        let silent = EventReader::new(
            Binding::HttpJson,
            200,
            HeaderMap::new(),
            Box::pin(futures::stream::pending()),
        );
        let idle = Duration::from_millis(20);
        match read_all(silent.idle_timeout(Some(idle))).await {
            Err(Error::Timeout { what, after }) => {
                assert_eq!(after, idle);
                assert!(what.contains("sent nothing"), "{what}");
            }
            other => panic!("{other:?}"),
        }
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
