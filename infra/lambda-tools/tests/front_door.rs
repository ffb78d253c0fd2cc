//! The local front door's API Gateway limits, against a function on 127.0.0.1 that answers
//! after a while: a buffered route's whole answer must come within the integration timeout,
//! or its caller gets 504 as from API Gateway.

use std::time::Duration;

use a2a_lambda_tools::{forward_buffered, BUFFERED_INTEGRATION_TIMEOUT};
use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;

/// A function that answers `hello` after `delay`.
async fn slow_function(delay: Duration) -> String {
    let app = axum::Router::new().fallback(move || async move {
        tokio::time::sleep(delay).await;
        "hello"
    });
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
