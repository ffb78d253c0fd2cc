//! The agent through the A2A core, on a throwaway embedded store, its model a scripted
//! OpenAI-compatible server on 127.0.0.1 (one streamed answer).

use std::path::Path;
use std::sync::Arc;

use a2a_core::{A2aService, CallContext, ServiceConfig};
use a2a_embedded::SqliteStore;
use a2a_protocol::{Message, SendMessageRequest, SendMessageResponse, TaskState};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Answers one Chat Completions request with `tokens`, streamed; returns the request's text.
async fn model(listener: tokio::net::TcpListener, tokens: &[&str]) -> String {
    let (mut socket, _) = listener.accept().await.expect("the agent calls the model");
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    // The headers, then the body (its length from Content-Length).
    while !request.windows(4).any(|w| w == b"\r\n\r\n") || !has_body(&request) {
        let n = socket.read(&mut buf).await.expect("read the request");
        assert!(n > 0, "the request ended early");
        request.extend_from_slice(&buf[..n]);
    }
    let mut body = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
    );
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        let choice = serde_json::json!({"index": 0, "delta": delta, "finish_reason": finish});
        let chunk = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [choice]});
        format!("data: {chunk}\n\n")
    };
    for token in tokens {
        body += &chunk(
            serde_json::json!({"content": token}),
            serde_json::Value::Null,
        );
    }
    body += &chunk(serde_json::json!({}), serde_json::json!("stop"));
    body += "data: [DONE]\n\n";
    socket.write_all(body.as_bytes()).await.expect("answer");
    String::from_utf8_lossy(&request).into_owned()
}

fn has_body(request: &[u8]) -> bool {
    let text = String::from_utf8_lossy(request);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().to_owned())
        })
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    body.len() >= length
}

#[tokio::test]
async fn answers_with_what_the_model_streams() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    std::env::set_var("OPENAI_BASE_URL", format!("http://{address}/v1"));
    std::env::set_var("OPENAI_API_KEY", "test-key");
    std::env::set_var("A2A_LLM_MODEL", "test-model");
    let model = tokio::spawn(async move { model(listener, &["Hello", " there"]).await });

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("agent-{}", std::process::id()));
    let store = Arc::new(SqliteStore::open(&dir).expect("open the store"));
    let service = A2aService::new(
        ServiceConfig::default(),
        {{crate}}::agent(),
        store.clone(),
        store.clone(),
        store,
    );
    let request = SendMessageRequest {
        message: Some(Message::user_text("m-1", "greet me")),
        ..SendMessageRequest::default()
    };
    let response = service
        .send_message(&CallContext::anonymous(""), request)
        .await
        .expect("the message is accepted");
    let SendMessageResponse::Task(task) = response else {
        panic!("expected a task, got {response:?}");
    };
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    let texts: Vec<_> = task
        .artifacts
        .iter()
        .flat_map(|a| &a.parts)
        .filter_map(|p| p.text.as_deref())
        .collect();
    assert_eq!(texts, ["Hello there"]);
    let sent = model.await.expect("the model server");
    assert!(sent.contains("You are a helpful assistant."), "{sent}");
    assert!(sent.contains("greet me"), "{sent}");
    let _ = std::fs::remove_dir_all(&dir);
}
