//! AWS's limits as the local stand-ins apply them: API Gateway's 29 s for a buffered answer
//! (against a function on 127.0.0.1 that answers after a while: 504), Lambda's 6 MB buffered
//! answer (502, as API Gateway answers a function's error), its 10 MiB request and
//! Lambda's 6 MB event (413, no function invoked), Lambda's 200 MiB streamed answer (cut), and
//! a function's `Timeout` (the answer breaks off, and the invocation is counted).

use std::time::Duration;

use a2a_lambda_tools::{forward_buffered, BUFFERED_INTEGRATION_TIMEOUT};
use a2a_lambda_tools::{response_payload_size, LAMBDA_MAX_BUFFERED_RESPONSE};
use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;

/// A function that answers `hello` after `delay`.
async fn slow_function(delay: Duration) -> String {
    let app = axum::Router::new().fallback(move || async move {
        tokio::time::sleep(delay).await;
        "hello"
    });
    serve(app).await
}

/// `app` served on 127.0.0.1: its URL.
async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

fn request() -> Request {
    Request::builder()
        .method("POST")
        .uri("/message:send")
        .body(Body::from("{}"))
        .expect("a request")
}

#[test]
fn api_gateway_allows_29_seconds() {
    assert_eq!(BUFFERED_INTEGRATION_TIMEOUT, Duration::from_secs(29));
}

#[tokio::test]
async fn a_buffered_answer_past_the_timeout_is_a_504() {
    let url = slow_function(Duration::from_secs(3600)).await;
    let http = reqwest::Client::new();
    let answer = tokio::time::timeout(
        Duration::from_secs(20),
        forward_buffered(&http, &url, request(), Duration::from_millis(300)),
    )
    .await
    .expect("the front door gave up by itself")
    .expect("the function is reachable");
    assert_eq!(answer.status(), StatusCode::GATEWAY_TIMEOUT);
    let body = axum::body::to_bytes(answer.into_body(), 1024)
        .await
        .expect("a body");
    assert_eq!(&body[..], br#"{"message":"Endpoint request timed out"}"#);
}

#[tokio::test]
async fn a_buffered_answer_within_the_timeout_is_passed_on_whole() {
    let url = slow_function(Duration::from_millis(50)).await;
    let http = reqwest::Client::new();
    let answer = forward_buffered(&http, &url, request(), Duration::from_secs(10))
        .await
        .expect("the function is reachable");
    assert_eq!(answer.status(), StatusCode::OK);
    let body = axum::body::to_bytes(answer.into_body(), 1024)
        .await
        .expect("a body");
    assert_eq!(&body[..], b"hello");
}

/// A function that answers `body` at once.
async fn function_answering(body: &'static [u8]) -> String {
    serve(axum::Router::new().fallback(move || async move { body })).await
}

/// Lambda measures a buffered answer as the JSON its runtime returns: 4 MiB of quotes is
/// 8 MiB escaped, over the 6 MB, and API Gateway answers the function's error with 502; 4 MiB
/// of plain text passes whole.
/// The answer of the function at `url` through the buffered front door: its head and body.
async fn through_buffered(url: &str) -> (axum::http::response::Parts, axum::body::Bytes) {
    let http = reqwest::Client::new();
    let answer = forward_buffered(&http, url, request(), Duration::from_secs(20))
        .await
        .expect("the function is reachable");
    let (parts, body) = answer.into_parts();
    (
        parts,
        axum::body::to_bytes(body, 8 << 20).await.expect("a body"),
    )
}

#[tokio::test]
async fn a_buffered_answer_over_lambda_s_6_mb_is_a_502() {
    static QUOTES: [u8; 4 << 20] = [b'"'; 4 << 20];
    static PLAIN: [u8; 4 << 20] = [b'a'; 4 << 20];
    let (parts, body) = through_buffered(&function_answering(&QUOTES).await).await;
    assert_eq!(parts.status, StatusCode::BAD_GATEWAY);
    assert_eq!(&body[..], br#"{"message":"Internal server error"}"#);

    let (parts, body) = through_buffered(&function_answering(&PLAIN).await).await;
    assert_eq!(parts.status, StatusCode::OK);
    assert_eq!(body.len(), PLAIN.len());
    let size = response_payload_size(&parts, &body);
    assert!(size < LAMBDA_MAX_BUFFERED_RESPONSE, "{size}");
    assert!(size > PLAIN.len(), "{size}");
}

fn parts_of(body_len: usize) -> axum::http::request::Parts {
    let (parts, ()) = Request::builder()
        .method("POST")
        .uri("/message:send")
        .header("content-type", "application/json")
        .header("content-length", body_len)
        .body(())
        .expect("a request")
        .into_parts();
    parts
}

async fn json_of(answer: axum::response::Response) -> (StatusCode, serde_json::Value) {
    let status = answer.status();
    let body = axum::body::to_bytes(answer.into_body(), 4096)
        .await
        .expect("a body");
    (status, serde_json::from_slice(&body).expect("a JSON body"))
}

#[tokio::test]
async fn api_gateway_refuses_a_body_over_10_mib() {
    use a2a_lambda_tools::{refused_request, FrontDoor, API_GATEWAY_MAX_REQUEST_BODY};
    assert_eq!(API_GATEWAY_MAX_REQUEST_BODY, 10 * 1024 * 1024);
    let body = vec![0xffu8; API_GATEWAY_MAX_REQUEST_BODY + 1];
    let answer =
        refused_request(FrontDoor::ApiGateway, &parts_of(body.len()), &body).expect("refused");
    let (status, json) = json_of(answer).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(json, serde_json::json!({"message": "Request Too Long"}));
}

#[tokio::test]
async fn an_event_over_lambda_s_6_mb_is_refused_behind_either_door() {
    use a2a_lambda_tools::{refused_request, FrontDoor, LAMBDA_MAX_REQUEST_EVENT};
    assert_eq!(LAMBDA_MAX_REQUEST_EVENT, 6_291_456);
    // 4 MiB of quotes: under both doors' body limits, but each is escaped in the event's JSON
    // (`\"`), which makes it 8 MiB: Lambda measures the event, not the body.
    let quotes = vec![b'"'; 4 * 1024 * 1024];
    // 6.3 MB of plain text, and 4.5 MiB of bytes that are not UTF-8 (base64 in the event).
    let plain = vec![b'a'; 6_300_000];
    let binary = vec![0xffu8; 4_718_592];
    for body in [&quotes, &plain, &binary] {
        let refused = refused_request(FrontDoor::ApiGateway, &parts_of(body.len()), body)
            .expect("refused behind API Gateway");
        let (status, json) = json_of(refused).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(json["message"], "Request Too Long");
        let refused = refused_request(FrontDoor::FunctionUrl, &parts_of(body.len()), body)
            .expect("refused behind a Function URL");
        let (status, json) = json_of(refused).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            json["Message"],
            "Request must be smaller than 6291456 bytes for the InvokeFunction operation"
        );
    }
}

#[test]
fn a_request_within_the_limits_passes() {
    use a2a_lambda_tools::{invocation_event_size, refused_request, FrontDoor};
    // 4 MiB of plain JSON text, and 3 MiB of quotes (6 MiB escaped, plus the headers).
    let text = vec![b'a'; 4 * 1024 * 1024];
    let quotes = vec![b'"'; 3 * 1024 * 1024 - 4096];
    for body in [&text, &quotes] {
        for door in [FrontDoor::ApiGateway, FrontDoor::FunctionUrl] {
            assert!(refused_request(door, &parts_of(body.len()), body).is_none());
        }
    }
    // The event is larger than the body it carries, and grows with the headers.
    let parts = parts_of(text.len());
    let rest = invocation_event_size(FrontDoor::ApiGateway, &parts, &text);
    let url = invocation_event_size(FrontDoor::FunctionUrl, &parts, &text);
    assert!(url > text.len());
    assert!(rest > url, "API Gateway's event carries the headers twice");
}

#[tokio::test]
async fn a_streamed_answer_is_cut_at_the_limit() {
    use a2a_lambda_tools::{cut_streamed_response, LAMBDA_MAX_STREAMED_RESPONSE};
    use futures::StreamExt;
    assert_eq!(LAMBDA_MAX_STREAMED_RESPONSE, 200 * 1024 * 1024);
    let chunks = futures::stream::iter(
        (0..10).map(|_| Ok::<_, std::io::Error>(axum::body::Bytes::from(vec![b'x'; 100]))),
    );
    let mut cut = cut_streamed_response(Body::from_stream(chunks), 450).into_data_stream();
    let mut passed = 0;
    let mut ended_with_error = false;
    while let Some(chunk) = cut.next().await {
        match chunk {
            Ok(bytes) => passed += bytes.len(),
            Err(_) => {
                ended_with_error = true;
                break;
            }
        }
    }
    assert_eq!(passed, 400);
    assert!(
        ended_with_error,
        "the cut stream must end in an error, not look complete"
    );
    // Within the limit, everything passes and the stream ends cleanly.
    let chunks = futures::stream::iter(
        (0..10).map(|_| Ok::<_, std::io::Error>(axum::body::Bytes::from(vec![b'x'; 100]))),
    );
    let whole = axum::body::to_bytes(cut_streamed_response(Body::from_stream(chunks), 1000), 4096)
        .await
        .expect("whole");
    assert_eq!(whole.len(), 1000);
}

#[tokio::test]
async fn an_invocation_past_its_timeout_breaks_off_and_is_counted() {
    use a2a_lambda_tools::end_body_at;
    use futures::StreamExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    // A function that sends one chunk, then never finishes.
    let first = futures::stream::once(async {
        Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b"data: 1\n\n"))
    });
    let endless = first.chain(futures::stream::pending());
    let timeouts = Arc::new(AtomicUsize::new(0));
    let counted = timeouts.clone();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(200);
    let mut body = end_body_at(Body::from_stream(endless), deadline, move || {
        counted.fetch_add(1, Ordering::SeqCst);
    })
    .into_data_stream();
    let chunk = body
        .next()
        .await
        .expect("a chunk")
        .expect("the first chunk");
    assert_eq!(&chunk[..], b"data: 1\n\n");
    let end = tokio::time::timeout(Duration::from_secs(20), body.next())
        .await
        .expect("the deadline ends the body");
    assert!(
        matches!(end, Some(Err(_))),
        "the body breaks off with an error"
    );
    assert!(body.next().await.is_none());
    assert_eq!(timeouts.load(Ordering::SeqCst), 1);

    // An answer complete before its deadline passes whole, and nothing is counted.
    let counted = timeouts.clone();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
    let whole = axum::body::to_bytes(
        end_body_at(Body::from("hello"), deadline, move || {
            counted.fetch_add(1, Ordering::SeqCst);
        }),
        1024,
    )
    .await
    .expect("whole");
    assert_eq!(&whole[..], b"hello");
    assert_eq!(timeouts.load(Ordering::SeqCst), 1);
}

#[test]
fn a_function_s_timeout_is_read_from_its_local_environment() {
    use a2a_lambda_tools::timeout_in_env_file;
    let file = "# The worker function's environment\nA2A_FUNCTION='worker'\nA2A_LOCAL_INVOCATION_TIMEOUT_SECS='900'\n";
    assert_eq!(timeout_in_env_file(file), Some(Duration::from_secs(900)));
    assert_eq!(timeout_in_env_file("A2A_FUNCTION='card'\n"), None);
}
