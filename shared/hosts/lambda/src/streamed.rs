//! How the streaming HTTP functions hand their answers to the Runtime API: in one write when
//! the answer is whole, and each piece at once when it is a stream.
//!
//! A function whose route may answer with SSE (`get`, `cancel`, `stream`, `rpc`, `front`)
//! answers every request in Lambda's response-streaming mode: a prelude (status and headers),
//! eight NULs, then the body, in one chunked `POST` to the Runtime API. `lambda_runtime` sends
//! those as separate writes, one per piece, on a connection without `TCP_NODELAY`, so each write
//! after the first waits for the Runtime API to acknowledge the one before, and a delayed ACK
//! holds that for about 40 ms. Every answer of those functions, a plain GetTask as much as a
//! stream, reached its caller 40+ ms after its work was done, and the extra writes and wake-ups
//! cost CPU (`a2a-cold-start`; docs/lambda.md, "Streaming").
//!
//! Here `lambda_runtime` still asks for the invocations, and [`Answers`] answers them on a
//! connection of its own with `TCP_NODELAY`: an answer whose body is whole (every answer but an
//! SSE stream) goes in one write, prelude, NULs and body together; a stream's prelude goes at
//! once and each event as the agent produces it.

use std::convert::Infallible;
use std::future::{ready, Future};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::http::header::{CONTENT_TYPE, SET_COOKIE, TRANSFER_ENCODING};
use axum::http::{HeaderValue, Method, Response};
use futures::{FutureExt, StreamExt};
use hyper_util::client::legacy::connect::HttpConnector;
use lambda_http::{Request, RequestExt};
use lambda_runtime::{Diagnostic, LambdaEvent, LambdaInvocation, MetadataPrelude};
use lambda_runtime_api_client::{body::Body as ApiBody, build_request, BoxError, PooledClient};
use tower::{Service, ServiceExt};

use crate::Error;

/// What ends a streamed answer's prelude (the Runtime API's response-streaming format).
const PRELUDE_END: [u8; 8] = [0; 8];

/// Serves `handler` as a streaming function until the runtime stops the instance, answering
/// each invocation through [`Answers`].
pub(crate) async fn run<H>(handler: H) -> Result<(), Error>
where
    H: Service<Request, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    H::Future: Send,
{
    let api = Arc::new(runtime_api(None));
    // `lambda_runtime` wants a handler to answer through its own client; [`Answers`] wraps it
    // and answers every invocation itself, so that handler is never called.
    lambda_runtime::Runtime::new(tower::service_fn(unused))
        .layer(tower::layer::layer_fn(move |_| Answers {
            handler: handler.clone(),
            api: api.clone(),
        }))
        .layer(lambda_runtime::layers::TracingLayer::new())
        .run()
        .await
}

/// A client of the Runtime API (at `endpoint`, else where `AWS_LAMBDA_RUNTIME_API` says), on
/// connections with `TCP_NODELAY`: a write goes at once, acknowledged or not.
fn runtime_api(endpoint: Option<axum::http::Uri>) -> PooledClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let builder = PooledClient::builder().with_connector(connector);
    match endpoint {
        Some(endpoint) => builder.with_endpoint(endpoint),
        None => builder,
    }
    .build()
}

/// The handler `lambda_runtime` is given, which [`Answers`] never calls.
async fn unused(_: LambdaEvent<serde_json::Value>) -> Result<serde_json::Value, Error> {
    Err("unreachable: the streaming functions answer through `Answers`".into())
}

/// Answers each invocation with `handler`, streamed to the Runtime API through `api`.
#[derive(Clone)]
struct Answers<H> {
    handler: H,
    api: Arc<PooledClient>,
}

impl<H> Service<LambdaInvocation> for Answers<H>
where
    H: Service<Request, Response = Response<Body>, Error = Infallible> + Clone + Send + 'static,
    H::Future: Send,
{
    type Response = ();
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, invocation: LambdaInvocation) -> Self::Future {
        let handler = self.handler.clone();
        let api = self.api.clone();
        Box::pin(async move {
            let LambdaInvocation { body, context, .. } = invocation;
            let request_id = context.request_id.clone();
            let event = std::str::from_utf8(&body)
                .map_err(|e| e.to_string())
                .and_then(|text| lambda_http::request::from_str(text).map_err(|e| e.to_string()));
            let mut request = match event {
                Ok(request) => request,
                Err(e) => {
                    let diagnostic = Diagnostic {
                        error_type: "Runtime.UnmarshalError".into(),
                        error_message: format!("the event is not an HTTP request: {e}"),
                    };
                    return report(&api, &request_id, &diagnostic).await;
                }
            };
            if let Some(trace) = context.xray_trace_id.as_deref() {
                if let Ok(value) = HeaderValue::from_str(trace) {
                    request.headers_mut().insert("x-amzn-trace-id", value);
                }
            }
            let request = request.with_lambda_context(context);
            let answered = AssertUnwindSafe(handler.oneshot(request))
                .catch_unwind()
                .await;
            match answered {
                Ok(Ok(response)) => answer(&api, &request_id, response).await,
                Ok(Err(never)) => match never {},
                Err(panic) => {
                    let message = panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "the handler panicked".into());
                    tracing::error!(%message, "the handler panicked");
                    let diagnostic = Diagnostic {
                        error_type: "Runtime.Panic".into(),
                        error_message: message,
                    };
                    report(&api, &request_id, &diagnostic).await
                }
            }
        })
    }
}

/// Hands `response` to the Runtime API as invocation `request_id`'s streamed answer: the
/// prelude, the NULs and the body each in a chunk of their own (`cargo lambda watch` reads the
/// first two chunks as prelude and separator; Lambda reads the bytes, whatever the chunks), all
/// in one write when the body is whole.
async fn answer(
    api: &PooledClient,
    request_id: &str,
    response: Response<Body>,
) -> Result<(), BoxError> {
    let (parts, body) = response.into_parts();
    let prelude = serde_json::to_vec(&prelude(parts.status, parts.headers))?;
    let head = futures::stream::iter([
        Ok(Bytes::from(prelude)),
        Ok(Bytes::from_static(&PRELUDE_END)),
    ]);
    let rest = if body.size_hint().exact().is_some() {
        // Whole (every answer but a stream): ready with the prelude, so they leave together.
        let whole = axum::body::to_bytes(body, usize::MAX).await?;
        a2a_telemetry::flush().await;
        futures::stream::iter([Ok(whole)]).boxed()
    } else {
        // A stream: each piece as it comes. A body that fails ends the stream there (its
        // events so far were delivered); the failure is logged.
        body.into_data_stream()
            .take_while(|piece| {
                ready(match piece {
                    Ok(_) => true,
                    Err(e) => {
                        tracing::error!(error = %e, "a streamed answer failed; ending it");
                        false
                    }
                })
            })
            .chain(futures::stream::once(async {
                // The answer's spans, before its end completes the invocation.
                a2a_telemetry::flush().await;
                Ok(Bytes::new())
            }))
            .boxed()
    };
    // An empty piece would read as the end of a chunked body.
    let pieces = head
        .chain(rest)
        .filter(|piece| ready(!matches!(piece, Ok(bytes) if bytes.is_empty())));
    let body = ApiBody::new(Body::from_stream(pieces));
    let request = build_request()
        .method(Method::POST)
        .uri(format!(
            "/2018-06-01/runtime/invocation/{request_id}/response"
        ))
        .header("Lambda-Runtime-Function-Response-Mode", "streaming")
        .header(TRANSFER_ENCODING, "chunked")
        .header(
            CONTENT_TYPE,
            "application/vnd.awslambda.http-integration-response",
        )
        .body(body)?;
    api.call(request).await?;
    Ok(())
}

/// The prelude of a streamed answer: its status, its headers (a `Content-Type` always, as
/// Lambda requires), and its cookies apart, as Lambda wants them.
fn prelude(
    status_code: axum::http::StatusCode,
    mut headers: axum::http::HeaderMap,
) -> MetadataPrelude {
    let cookies = headers
        .get_all(SET_COOKIE)
        .iter()
        .map(|c| String::from_utf8_lossy(c.as_bytes()).into_owned())
        .collect();
    headers.remove(SET_COOKIE);
    headers
        .entry(CONTENT_TYPE)
        .or_insert(HeaderValue::from_static("application/octet-stream"));
    MetadataPrelude {
        status_code,
        headers,
        cookies,
    }
}

/// Reports invocation `request_id` failed, as `lambda_runtime` does.
async fn report(
    api: &PooledClient,
    request_id: &str,
    diagnostic: &Diagnostic,
) -> Result<(), BoxError> {
    let request = build_request()
        .method(Method::POST)
        .uri(format!("/2018-06-01/runtime/invocation/{request_id}/error"))
        .header("lambda-runtime-function-error-type", "unhandled")
        .body(ApiBody::from(serde_json::to_vec(diagnostic)?))?;
    api.call(request).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// A Runtime API on 127.0.0.1 that takes one answer, and the client of it.
    async fn runtime_api_on_loopback() -> (TcpListener, PooledClient) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        (listener, runtime_api(Some(endpoint.parse().unwrap())))
    }

    /// Reads from `conn` until `received` ends with `end`; returns how many reads it took.
    async fn read_until(conn: &mut TcpStream, received: &mut Vec<u8>, end: &[u8]) -> usize {
        let mut reads = 0;
        let mut buf = vec![0u8; 64 * 1024];
        while !received.ends_with(end) {
            let n = conn.read(&mut buf).await.unwrap();
            assert!(
                n > 0,
                "the connection ended: {}",
                String::from_utf8_lossy(received)
            );
            received.extend_from_slice(&buf[..n]);
            reads += 1;
        }
        reads
    }

    /// The chunks of a chunked body, up to its last (empty) one.
    fn dechunk(mut body: &str) -> Vec<String> {
        let mut chunks = Vec::new();
        loop {
            let (size, rest) = body.split_once("\r\n").unwrap();
            let size = usize::from_str_radix(size, 16).unwrap();
            if size == 0 {
                assert_eq!(rest, "\r\n", "nothing after the last chunk");
                return chunks;
            }
            chunks.push(rest[..size].to_owned());
            assert_eq!(&rest[size..size + 2], "\r\n");
            body = &rest[size + 2..];
        }
    }

    const ACCEPTED: &[u8] = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n";

    #[tokio::test]
    async fn a_whole_answer_goes_in_one_write() {
        let (listener, api) = runtime_api_on_loopback().await;
        let response = Response::builder()
            .status(404)
            .header(SET_COOKIE, "a=1")
            .header("x-kept", "yes")
            .body(Body::from(r#"{"error":"task not found"}"#))
            .unwrap();
        let answering = tokio::spawn(async move { answer(&api, "req-1", response).await });
        let (mut conn, _) = listener.accept().await.unwrap();
        let mut received = Vec::new();
        let reads = read_until(&mut conn, &mut received, b"\r\n0\r\n\r\n").await;
        conn.write_all(ACCEPTED).await.unwrap();
        answering.await.unwrap().unwrap();

        let text = String::from_utf8_lossy(&received).into_owned();
        assert_eq!(reads, 1, "the answer came in {reads} reads: {text:?}");
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let head = head.to_ascii_lowercase();
        assert!(
            head.starts_with("post /2018-06-01/runtime/invocation/req-1/response "),
            "{head}"
        );
        assert!(
            head.contains("lambda-runtime-function-response-mode: streaming"),
            "{head}"
        );
        assert!(head.contains("transfer-encoding: chunked"), "{head}");
        // Three chunks, the prelude, eight NULs and the body, then the last chunk.
        let chunks = dechunk(body);
        assert_eq!(chunks.len(), 3, "{body:?}");
        assert_eq!(chunks[1], "\0\0\0\0\0\0\0\0");
        let (prelude, answer_body) = (&chunks[0], &chunks[2]);
        let prelude: serde_json::Value = serde_json::from_str(prelude).unwrap();
        assert_eq!(prelude["statusCode"], 404);
        assert_eq!(prelude["cookies"], serde_json::json!(["a=1"]));
        assert_eq!(prelude["headers"]["x-kept"], "yes");
        assert_eq!(
            prelude["headers"]["content-type"],
            "application/octet-stream"
        );
        assert!(prelude["headers"].get("set-cookie").is_none(), "{prelude}");
        assert_eq!(answer_body, r#"{"error":"task not found"}"#);
    }

    #[tokio::test]
    async fn a_streams_pieces_go_as_they_come() {
        let (listener, api) = runtime_api_on_loopback().await;
        let (events, pieces) = futures::channel::mpsc::unbounded::<Result<Bytes, Infallible>>();
        let response = Response::builder()
            .header(CONTENT_TYPE, "text/event-stream")
            .body(Body::from_stream(pieces))
            .unwrap();
        let answering = tokio::spawn(async move { answer(&api, "req-2", response).await });
        let (mut conn, _) = listener.accept().await.unwrap();
        // The prelude arrives while the stream has produced nothing yet, then each event
        // before the next is produced.
        let mut received = Vec::new();
        read_until(&mut conn, &mut received, b"\0\0\0\0\0\0\0\0\r\n").await;
        let text = String::from_utf8_lossy(&received).into_owned();
        assert!(
            text.contains(r#""content-type":"text/event-stream""#),
            "{text}"
        );
        for n in 1..=3 {
            let event = format!("data: {n}\n\n");
            events
                .unbounded_send(Ok(Bytes::from(event.clone())))
                .unwrap();
            let mut received = Vec::new();
            read_until(&mut conn, &mut received, b"\n\n\r\n").await;
            assert!(
                String::from_utf8_lossy(&received).contains(&event),
                "{received:?}"
            );
        }
        drop(events);
        let mut received = Vec::new();
        read_until(&mut conn, &mut received, b"0\r\n\r\n").await;
        conn.write_all(ACCEPTED).await.unwrap();
        answering.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_failure_is_reported_as_the_invocations_error() {
        let (listener, api) = runtime_api_on_loopback().await;
        let diagnostic = Diagnostic {
            error_type: "Runtime.UnmarshalError".into(),
            error_message: "the event is not an HTTP request".into(),
        };
        let reporting = tokio::spawn(async move { report(&api, "req-3", &diagnostic).await });
        let (mut conn, _) = listener.accept().await.unwrap();
        let mut received = Vec::new();
        read_until(&mut conn, &mut received, b"}").await;
        conn.write_all(ACCEPTED).await.unwrap();
        reporting.await.unwrap().unwrap();
        let text = String::from_utf8_lossy(&received).to_ascii_lowercase();
        assert!(
            text.starts_with("post /2018-06-01/runtime/invocation/req-3/error "),
            "{text}"
        );
        assert!(
            text.contains(r#""errortype":"runtime.unmarshalerror""#),
            "{text}"
        );
    }
}
