//! The agent through the A2A core, on a throwaway embedded store: no server, no network.

use std::path::Path;
use std::sync::Arc;

use a2a_core::{A2aService, CallContext, ServiceConfig};
use a2a_embedded::SqliteStore;
use a2a_protocol::{Message, SendMessageRequest, SendMessageResponse, TaskState};

#[tokio::test]
async fn shouts_back_what_it_is_sent() {
    // Cargo's scratch directory for integration tests, one store per run.
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
        message: Some(Message::user_text("m-1", "hello there")),
        ..SendMessageRequest::default()
    };
    let response = service
        .send_message(&CallContext::anonymous(""), request)
        .await
        .expect("the message is accepted");
    let SendMessageResponse::Task(task) = response else {
        panic!("expected a task, got {response:?}");
    };
    assert_eq!(task.status.state, TaskState::Completed);
    let texts: Vec<_> = task
        .artifacts
        .iter()
        .flat_map(|artifact| &artifact.parts)
        .filter_map(|part| part.text.as_deref())
        .collect();
    assert_eq!(texts, ["HELLO THERE"]);
    let _ = std::fs::remove_dir_all(&dir);
}
