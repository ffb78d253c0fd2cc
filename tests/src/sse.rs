//! Server-Sent Events, read incrementally as they arrive (by `a2a-client`'s reader), with the
//! timeouts and assertions the tests want.

use std::time::Duration;

use a2a_client::{EventReader, Operation, StreamOptions};
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

/// An SSE response read incrementally (by `a2a-client`'s reader).
pub struct SseStream {
    pub status: u16,
    pub headers: HeaderMap,
    binding: Binding,
    reader: EventReader,
}

impl std::fmt::Debug for SseStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseStream")
            .field("status", &self.status)
            .field("binding", &self.binding)
            .field("reader", &self.reader)
            .finish_non_exhaustive()
    }
}

/// What can go wrong while waiting for the next event.
#[derive(Debug)]
pub enum SseWait {
    TimedOut,
    Failed(String),
}

/// Opens any streaming request, raw (a legacy method name, a malformed body): the events are
/// read with `a2a-client`'s reader. An error answer (plain JSON, or an error as the first SSE
/// event) is returned as `Err`.
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
    let client_binding = match binding {
        Binding::JsonRpc => a2a_client::Binding::JsonRpc,
        Binding::Rest => a2a_client::Binding::HttpJson,
    };
    let mut stream = SseStream {
        status,
        headers: headers.clone(),
        binding,
        reader: EventReader::new(
            client_binding,
            status,
            headers,
            Box::pin(response.bytes_stream()),
        ),
    };
    // An error before any data is sent as the first event (the digest's interop advice).
    match stream.next_within(EVENT_TIMEOUT).await {
        Ok(Some(first)) => {
            if let Some(error) = first.as_error() {
                return Err(error);
            }
            stream.reader.push_front(a2a_client::SseEvent {
                id: first.id,
                event: first.event,
                data: first.data,
            });
        }
        Ok(None) => {}
        Err(e) => panic!("no first SSE event: {e:?}"),
    }
    Ok(stream)
}

/// Opens a streaming operation through `a2a-client`. An error answer (plain JSON, or an error
/// as the first SSE event) is returned as `Err`.
pub(crate) async fn open_a2a_sse(
    client: &Client,
    binding: Binding,
    op: Operation,
    params: Value,
    options: StreamOptions,
) -> Result<SseStream, ApiError> {
    let a2a = client.a2a(binding);
    let opened = tokio::time::timeout(EVENT_TIMEOUT, a2a.open_events(op, &params, &options))
        .await
        .unwrap_or_else(|_| panic!("{op}: no first SSE event within {EVENT_TIMEOUT:?}"));
    let reader = opened.map_err(|e| ApiError::from_client(binding, op, e))?;
    assert_eq!(reader.status, 200, "SSE responses have status 200");
    Ok(SseStream {
        status: reader.status,
        headers: reader.headers.clone(),
        binding,
        reader,
    })
}

impl SseStream {
    /// The next event, `Ok(None)` when the server closed the stream.
    pub async fn next_within(&mut self, timeout: Duration) -> Result<Option<SseEvent>, SseWait> {
        match tokio::time::timeout(timeout, self.reader.next_event()).await {
            Err(_) => Err(SseWait::TimedOut),
            Ok(Err(e)) => Err(SseWait::Failed(e.to_string())),
            Ok(Ok(event)) => Ok(event.map(|e| SseEvent {
                id: e.id,
                event: e.event,
                data: e.data,
                binding: self.binding,
            })),
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
