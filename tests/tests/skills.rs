//! The reference agent's skills end to end: hold and follow-up, queued jobs, failure.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use a2a_e2e::*;
use serde_json::json;

both_bindings!(
    hold_then_follow_up_completes_as_echo,
    job_runs_on_the_worker_to_completion,
    job_streams_its_progress,
    fail_ends_failed_with_a_reason,
    streamed_follow_up_starts_with_the_task,
    cancel_a_queued_job_in_flight,
);

async fn streamed_follow_up_starts_with_the_task(b: Binding) {
    let server = Server::start().await;
    let held = server.send_text(b, "hold").await;
    let id = id_of(&held);
    let mut stream = server
        .stream(b, follow_up(&id, "streamed answer"))
        .await
        .expect("stream");
    let payloads: Vec<serde_json::Value> = stream
        .collect_to_end(EVENT_TIMEOUT)
        .await
        .iter()
        .map(|e| e.payload())
        .collect();
    assert_eq!(kind(&payloads[0]), "task", "the Task first: {payloads:#?}");
    assert_eq!(id_of(&payloads[0]["task"]), id);
    let art = payloads
        .iter()
        .find_map(|p| p.get("artifactUpdate"))
        .expect("the echo artifact");
    assert_eq!(artifact_text(&art["artifact"]), "streamed answer");
    assert_eq!(
        event_state(payloads.last().unwrap()),
        Some("TASK_STATE_COMPLETED")
    );
}

async fn cancel_a_queued_job_in_flight(b: Binding) {
    let server = Server::start().await;
    let response = ok(server
        .send(
            b,
            send_request_with("job 5 1000", json!({"returnImmediately": true})),
        )
        .await);
    let id = id_of(task_of(&response));
    let mut stream = server.subscribe(b, &id, None).await.expect("subscribe");
    // Wait for the worker to start it, then cancel.
    loop {
        let event = stream.next_event().await.expect("the job starts");
        if event_state(&event.payload()) == Some("TASK_STATE_WORKING") {
            break;
        }
    }
    let canceled = ok(server.cancel(b, &id).await);
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");
    let rest = stream
        .collect_to_end(std::time::Duration::from_secs(3))
        .await;
    assert_eq!(
        event_state(&rest.last().expect("the cancellation").payload()),
        Some("TASK_STATE_CANCELED")
    );
    let got = ok(server.get_task(b, &id, None).await);
    assert_eq!(state(&got), "TASK_STATE_CANCELED");
    assert!(artifacts(&got).is_empty(), "no report: {got}");
}

async fn hold_then_follow_up_completes_as_echo(b: Binding) {
    let server = Server::start().await;
    let held = server.send_text(b, "hold").await;
    assert_eq!(state(&held), "TASK_STATE_INPUT_REQUIRED", "{held}");
    let ask = &held["status"]["message"];
    assert_eq!(
        ask["role"], "ROLE_AGENT",
        "the agent asks for input: {held}"
    );
    assert!(!message_text(ask).is_empty());
    let id = id_of(&held);
    let context = held["contextId"].clone();

    let request = follow_up(&id, "the answer is 42");
    let follow_id = request["message"]["messageId"].clone();
    assert!(request["message"].get("contextId").is_none());
    let response = ok(server.send(b, request).await);
    let done = task_of(&response);
    assert_eq!(id_of(done), id, "the same task");
    assert_eq!(done["contextId"], context, "the contextId is inherited");
    assert_eq!(state(done), "TASK_STATE_COMPLETED", "{done}");
    let arts = artifacts(done);
    assert_eq!(arts.len(), 1, "{done}");
    assert_eq!(arts[0]["name"], "echo");
    assert_eq!(artifact_text(&arts[0]), "the answer is 42");
    let hist = history(done);
    let users: Vec<&serde_json::Value> = hist.iter().filter(|m| m["role"] == "ROLE_USER").collect();
    assert_eq!(users.len(), 2, "both user messages, in order: {done}");
    assert_eq!(message_text(users[0]), "hold");
    assert_eq!(users[1]["messageId"], follow_id);
    assert_eq!(
        users[1]["contextId"], context,
        "the stored follow-up carries the context"
    );
    assert_eq!(users[1]["taskId"], json!(id));
}

async fn job_runs_on_the_worker_to_completion(b: Binding) {
    let server = Server::start().await;
    // Blocking: SendMessage follows the log until the queued job ends.
    let done = server.send_text(b, "job 3 100").await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    let arts = artifacts(&done);
    assert_eq!(arts.len(), 1, "{done}");
    assert_eq!(arts[0]["name"], "report");
    assert_eq!(artifact_text(&arts[0]), "job finished: 3 steps");
    let progress: Vec<String> = history(&done)
        .iter()
        .filter(|m| m["role"] == "ROLE_AGENT")
        .map(message_text)
        .filter(|t| t.starts_with("step "))
        .collect();
    assert_eq!(progress, ["step 1/3", "step 2/3", "step 3/3"], "{done}");
}

async fn job_streams_its_progress(b: Binding) {
    let server = Server::start().await;
    let mut stream = server
        .stream(b, send_request("job 3 100"))
        .await
        .expect("stream");
    let payloads: Vec<serde_json::Value> = stream
        .collect_to_end(EVENT_TIMEOUT)
        .await
        .iter()
        .map(|e| e.payload())
        .collect();
    assert_eq!(kind(&payloads[0]), "task");
    let working: Vec<String> = payloads
        .iter()
        .filter(|p| event_state(p) == Some("TASK_STATE_WORKING") && kind(p) == "statusUpdate")
        .map(|p| message_text(&p["statusUpdate"]["status"]["message"]))
        .collect();
    assert_eq!(
        working,
        ["step 1/3", "step 2/3", "step 3/3"],
        "{payloads:#?}"
    );
    let report = payloads
        .iter()
        .find_map(|p| p.get("artifactUpdate"))
        .expect("the report artifact");
    assert_eq!(report["artifact"]["name"], "report");
    assert_eq!(
        event_state(payloads.last().unwrap()),
        Some("TASK_STATE_COMPLETED")
    );
}

async fn fail_ends_failed_with_a_reason(b: Binding) {
    let server = Server::start().await;
    let failed = server.send_text(b, "fail").await;
    assert_eq!(state(&failed), "TASK_STATE_FAILED", "{failed}");
    let reason = &failed["status"]["message"];
    assert_eq!(reason["role"], "ROLE_AGENT", "{failed}");
    assert!(
        !message_text(reason).is_empty(),
        "the status explains why: {failed}"
    );
    // Streamed, it ends with the FAILED status.
    let mut stream = server
        .stream(b, send_request("fail"))
        .await
        .expect("stream");
    let events = stream.collect_to_end(EVENT_TIMEOUT).await;
    let last = events.last().expect("events").payload();
    assert_eq!(event_state(&last), Some("TASK_STATE_FAILED"), "{last}");
}
