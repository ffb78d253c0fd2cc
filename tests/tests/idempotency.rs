//! Idempotent SendMessage over real HTTP: retried and concurrent copies of one message (same
//! owner and `messageId`) make one task, and a copy with another body is refused.

use a2a_e2e::*;
use serde_json::{json, Value};

both_bindings!(
    concurrent_copies_make_exactly_one_task,
    a_repeat_with_a_different_body_is_invalid_params,
);

/// Ten copies of one message, all at once: one task, and every answer carries its id.
async fn concurrent_copies_make_exactly_one_task(b: Binding) {
    let server = Server::start().await;
    // A context of its own, so the count below sees only this test's tasks on a shared store.
    let context_id = new_id();
    let mut message = user_message("hello, ten times");
    message["contextId"] = json!(context_id);
    let request = json!({"message": message});
    let sends = (0..10).map(|_| server.send(b, request.clone()));
    let answers = futures::future::join_all(sends).await;
    let ids: Vec<String> = answers
        .into_iter()
        .map(|answer| id_of(task_of(&ok(answer))))
        .collect();
    assert!(ids.iter().all(|id| id == &ids[0]), "one task id: {ids:?}");
    let listed = ok(server.list_tasks(b, json!({"contextId": context_id})).await);
    let tasks = listed["tasks"].as_array().cloned().unwrap_or_default();
    assert_eq!(tasks.len(), 1, "exactly one task: {listed}");
    assert_eq!(tasks[0]["id"], json!(ids[0]));
    let task = server
        .await_terminal(&ids[0], std::time::Duration::from_secs(10))
        .await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(artifacts(&task).len(), 1, "one run's output: {task}");
}

/// The same messageId with other text: InvalidParams, and the first task is unchanged.
async fn a_repeat_with_a_different_body_is_invalid_params(b: Binding) {
    let server = Server::start().await;
    let request = send_request("the original");
    let first = ok(server.send(b, request.clone()).await);
    let task = task_of(&first).clone();
    let again = ok(server.send(b, request.clone()).await);
    assert_eq!(
        task_of(&again)["id"],
        task["id"],
        "a retry gets the same task"
    );

    let mut changed: Value = request.clone();
    changed["message"]["parts"] = json!([{"text": "something else"}]);
    let error = err(server.send(b, changed).await);
    error.assert_is(-32602, 400, "INVALID_PARAMS");
    assert!(
        error
            .body
            .to_string()
            .contains("was already used for a different message"),
        "{}",
        error.body
    );
    let stored = ok(server.get_task(b, &id_of(&task), None).await);
    assert_eq!(stored, task, "nothing changed");
}
