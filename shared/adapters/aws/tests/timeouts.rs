//! A stale connection, played by a peer on 127.0.0.1 that accepts connections and never
//! answers (what a connection dropped while a Lambda instance was frozen looks like from the
//! instance): a call bounded by `CallLimits` gives up on each attempt, retries on a fresh
//! connection, and fails with a timeout instead of hanging until the function's own timeout.
//! The limits here are shorter than `CALL_LIMITS` only to keep the test quick; the unit test of
//! `a2a_aws::timeouts` checks those.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2a_aws::timeouts::CallLimits;
use aws_sdk_dynamodb::config::{Credentials, Region, SharedCredentialsProvider};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::AttributeValue;

/// A peer that accepts every connection, reads nothing and answers nothing; it counts them.
async fn silent_peer() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            held.push(socket);
        }
    });
    (url, accepted)
}

fn sdk_for(url: &str) -> aws_config::SdkConfig {
    aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(url)
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "test", "test", None, None, "test",
        )))
        .build()
}

#[tokio::test]
async fn a_call_to_a_peer_that_never_answers_times_out_after_its_attempts() {
    let (url, accepted) = silent_peer().await;
    let limits = CallLimits {
        connect: Duration::from_secs(2),
        read: Duration::from_millis(300),
        attempt: Duration::from_millis(300),
        operation: Duration::from_secs(20),
        max_attempts: 3,
    };
    let client = aws_sdk_dynamodb::Client::new(&limits.apply(&sdk_for(&url)));
    let err = client
        .get_item()
        .table_name("tasks")
        .key("pk", AttributeValue::S("T#1".into()))
        .key("sk", AttributeValue::S("H".into()))
        .send()
        .await
        .expect_err("nobody answers");
    let text = format!("{:?}", aws_sdk_dynamodb::error::DisplayErrorContext(&err));
    assert!(
        matches!(err, SdkError::TimeoutError(_)) || text.to_lowercase().contains("timeout"),
        "a timeout, not another failure: {text}"
    );
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        3,
        "each attempt on a fresh connection: {text}"
    );
}
