//! History order on a multi-turn task, as the Python SDK keeps it: each agent question (the
//! status message of INPUT_REQUIRED) enters history before the user's reply to it.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use a2a_e2e::*;
use serde_json::{json, Value};

both_bindings!(hold_then_two_follow_ups_keep_history_in_turn_order);

/// `(role, text)` of each history message, the user's with their messageId.
fn turns(task: &Value) -> Vec<(String, String, Option<String>)> {
    history(task)
        .iter()
        .map(|m| {
            let role = m["role"].as_str().unwrap_or_default().to_string();
            let id = (role == "ROLE_USER").then(|| m["messageId"].as_str().unwrap().to_string());
            (role, message_text(m), id)
        })
        .collect()
}

async fn hold_then_two_follow_ups_keep_history_in_turn_order(b: Binding) {
    let server = Server::start().await;
    let hold = send_request("hold");
    let hold_id = hold["message"]["messageId"].as_str().unwrap().to_string();
    let held = task_of(&ok(server.send(b, hold).await)).clone();
    assert_eq!(state(&held), "TASK_STATE_INPUT_REQUIRED", "{held}");
    let id = id_of(&held);
    let question = message_text(&held["status"]["message"]);
    assert!(question.starts_with("This task is on hold"), "{held}");

    // The reference agent parks the task again on a message whose id starts with
    // `tck-input-required` (shared/reference-agent.md), and completes it on any other.
    let mut first = follow_up(&id, "still there?");
    let first_id = format!("tck-input-required-{}", new_id());
    first["message"]["messageId"] = json!(first_id);
    let again = task_of(&ok(server.send(b, first).await)).clone();
    assert_eq!(state(&again), "TASK_STATE_INPUT_REQUIRED", "{again}");
    assert_eq!(
        message_text(&again["status"]["message"]),
        "Please provide more input."
    );

    let second = follow_up(&id, "done");
    let second_id = second["message"]["messageId"].as_str().unwrap().to_string();
    let done = task_of(&ok(server.send(b, second).await)).clone();
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(message_text(&done["status"]["message"]), "done");

    let user = |text: &str, id: &str| {
        (
            "ROLE_USER".to_string(),
            text.to_string(),
            Some(id.to_string()),
        )
    };
    let agent = |text: &str| ("ROLE_AGENT".to_string(), text.to_string(), None);
    let expected = vec![
        user("hold", &hold_id),
        agent(&question),
        user("still there?", &first_id),
        agent("Please provide more input."),
        user("done", &second_id),
    ];
    assert_eq!(turns(&done), expected, "the send's result: {done}");
    let stored = ok(server.get_task(b, &id, None).await);
    assert_eq!(turns(&stored), expected, "the stored task: {stored}");
}
