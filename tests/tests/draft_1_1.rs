//! The A2A 1.1 draft (spec branch `dev-1.1`), for clients that say `A2A-Version: 1.1`, on
//! both bindings: task generations (the log's sequence numbers, the same in GetTask, ListTasks,
//! stream events and SSE ids), long-polling GetTask (`currentGeneration`), `ifGenerationMatch`
//! (TaskGenerationMismatchError, -32010 / 409); a 1.0 client sees none of it. And, in every
//! generation, push config secrets are never read back.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use a2a_e2e::versioned::{call, generation};
use a2a_e2e::*;
use reqwest::header::CONTENT_TYPE;
use serde_json::{json, Value};

both_bindings!(
    generations_are_log_positions_for_1_1_clients_only,
    streams_carry_the_generation_of_each_event,
    long_poll_answers_once_the_generation_passes,
    long_poll_answers_at_once_when_passed_or_terminal,
    long_polls_beyond_the_bound_on_held_polls_are_answered_at_once,
    if_generation_match_refuses_a_stale_follow_up,
    push_config_secrets_are_not_read_back,
);

/// A task parked in INPUT_REQUIRED (the reference agent's `hold`), as a 1.1 client sees it.
async fn held(server: &Client, b: Binding) -> Value {
    let sent = call(server, b, "1.1", "SendMessage", send_request("hold")).await;
    let task = task_of(&ok(sent)).clone();
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    task
}

async fn generations_are_log_positions_for_1_1_clients_only(b: Binding) {
    let server = Server::start().await;
    let task = held(&server, b).await;
    let id = id_of(&task);
    // Created (1), then the agent's INPUT_REQUIRED status (2).
    assert_eq!(generation(&task), 2, "{task}");
    let got = ok(call(&server, b, "1.1", "GetTask", json!({"id": id})).await);
    assert_eq!(generation(&got), 2, "{got}");
    let listed = ok(call(&server, b, "1.1", "ListTasks", json!({})).await);
    let in_list = task_in(&listed, &id);
    assert_eq!(generation(in_list), 2, "{listed}");

    // A 1.0 client: the same task, without a generation anywhere.
    let got = ok(call(&server, b, "1.0", "GetTask", json!({"id": id})).await);
    assert!(got.get("generation").is_none(), "{got}");
    let listed = ok(call(&server, b, "1.0", "ListTasks", json!({})).await);
    assert!(!listed.to_string().contains("generation"), "{listed}");
    let sent = ok(call(&server, b, "1.0", "SendMessage", send_request("hello")).await);
    assert!(!sent.to_string().contains("generation"), "{sent}");
}

async fn streams_carry_the_generation_of_each_event(b: Binding) {
    let server = Server::start().await;
    for version in ["1.1", "1.0"] {
        let request = send_request("slow 3 20");
        let builder = match b {
            Binding::JsonRpc => server
                .http()
                .post(server.jsonrpc_url())
                .header(CONTENT_TYPE, "application/json")
                .body(json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": request}).to_string()),
            Binding::Rest => server
                .http()
                .post(server.url("/message:stream"))
                .header(CONTENT_TYPE, "application/json")
                .body(request.to_string()),
        }
        .header("A2A-Version", version);
        let mut stream = open_sse(b, builder).await.expect("a stream");
        let events = stream.collect_to_end(EVENT_TIMEOUT).await;
        assert!(
            events.len() >= 5,
            "task, working, 3 chunks, completed: {events:?}"
        );
        let mut last = 0;
        for event in &events {
            let payload = event.payload();
            let (kind, body) = payload.as_object().unwrap().iter().next().unwrap();
            if version == "1.0" {
                assert!(body.get("generation").is_none(), "{payload}");
                continue;
            }
            // The SSE id is the event's position in the log, and so its generation.
            assert_eq!(generation(body), event.seq() as i64, "{kind}: {payload}");
            assert!(generation(body) > last, "generations increase: {events:?}");
            last = generation(body);
        }
    }
}

async fn long_poll_answers_once_the_generation_passes(b: Binding) {
    let server = Server::start().await;
    let task = held(&server, b).await;
    let id = id_of(&task);
    let current = generation(&task);
    let poll = poll_in_background(&server, b, &id, current);
    // The follow-up moves the task on; the held GetTask answers with a later generation.
    let follow = ok(call(&server, b, "1.1", "SendMessage", follow_up(&id, "done")).await);
    assert_eq!(state(task_of(&follow)), "TASK_STATE_COMPLETED", "{follow}");
    let polled = ok(poll.await.unwrap());
    assert!(generation(&polled) > current, "{polled}");
    assert_eq!(polled["id"], id.as_str());
}

async fn long_poll_answers_at_once_when_passed_or_terminal(b: Binding) {
    // A short bound: a poll on a task that does not change answers at it, as it stands.
    let server = Server::start_with_env(&[("A2A_LONG_POLL_SECS", "1")]).await;
    let task = held(&server, b).await;
    let id = id_of(&task);
    let current = generation(&task);
    let started = std::time::Instant::now();
    let polled = ok(call(
        &server,
        b,
        "1.1",
        "GetTask",
        json!({"id": id, "currentGeneration": current}),
    )
    .await);
    assert_eq!(generation(&polled), current, "{polled}");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "held until the bound"
    );
    // A generation already passed: the task as it stands.
    let polled = ok(call(
        &server,
        b,
        "1.1",
        "GetTask",
        json!({"id": id, "currentGeneration": current - 1}),
    )
    .await);
    assert_eq!(generation(&polled), current, "{polled}");
    // A terminal task never changes again: no waiting for it.
    let done = task_of(&ok(call(
        &server,
        b,
        "1.1",
        "SendMessage",
        send_request("hello"),
    )
    .await))
    .clone();
    let polled = ok(call(
        &server,
        b,
        "1.1",
        "GetTask",
        json!({"id": id_of(&done), "currentGeneration": generation(&done) + 5}),
    )
    .await);
    assert_eq!(state(&polled), "TASK_STATE_COMPLETED");
    // A malformed generation is the client's error.
    let bad = err(call(
        &server,
        b,
        "1.1",
        "GetTask",
        json!({"id": id, "currentGeneration": "soon"}),
    )
    .await);
    bad.assert_is(-32602, 400, "INVALID_PARAMS");
}

/// A long poll of `id` past `current`, in the background.
fn poll_in_background(
    server: &Client,
    b: Binding,
    id: &str,
    current: i64,
) -> tokio::task::JoinHandle<Result<Value, ApiError>> {
    let server = server.clone();
    let id = id.to_owned();
    tokio::spawn(async move {
        call(
            &server,
            b,
            "1.1",
            "GetTask",
            json!({"id": id, "currentGeneration": current.to_string()}),
        )
        .await
    })
}

/// Two long polls of a new held task, with one slot free: one answers at once, as the task
/// stands; the other is held until the task moves on.
async fn one_of_two_polls_is_held(server: &Client, b: Binding) {
    let task = held(server, b).await;
    let id = id_of(&task);
    let current = generation(&task);
    let mut first = poll_in_background(server, b, &id, current);
    let mut second = poll_in_background(server, b, &id, current);
    // Held polls last a minute here, longer than this wait: an answer within it, on a task
    // that did not change, is a poll that was not held.
    let (answered, still_held) = tokio::time::timeout(EVENT_TIMEOUT, async {
        tokio::select! {
            a = &mut first => (a, second),
            a = &mut second => (a, first),
        }
    })
    .await
    .expect("one of two long polls, with one slot, answers before the task changes");
    let answered = ok(answered.unwrap());
    assert_eq!(generation(&answered), current, "{answered}");
    let follow = ok(call(server, b, "1.1", "SendMessage", follow_up(&id, "done")).await);
    assert_eq!(state(task_of(&follow)), "TASK_STATE_COMPLETED", "{follow}");
    let polled = ok(still_held.await.unwrap());
    assert!(
        generation(&polled) > current,
        "the other poll was held until the task moved: {polled}"
    );
}

async fn long_polls_beyond_the_bound_on_held_polls_are_answered_at_once(b: Binding) {
    let server = Server::start_with_env(&[
        ("A2A_LONG_POLL_MAX_HELD", "1"),
        ("A2A_LONG_POLL_SECS", "60"),
    ])
    .await;
    one_of_two_polls_is_held(&server, b).await;
    // Again: the held poll gave its slot back when it answered (else both would answer at
    // once now).
    one_of_two_polls_is_held(&server, b).await;
}

async fn if_generation_match_refuses_a_stale_follow_up(b: Binding) {
    let server = Server::start().await;
    let task = held(&server, b).await;
    let id = id_of(&task);
    let current = generation(&task);
    let mut stale = follow_up(&id, "late");
    stale["configuration"] = json!({"ifGenerationMatch": (current - 1).to_string()});
    let refused = err(call(&server, b, "1.1", "SendMessage", stale.clone()).await);
    refused.assert_is(-32010, 409, "TASK_GENERATION_MISMATCH");
    let info = refused.error_info().unwrap();
    assert_eq!(info["metadata"]["taskId"], id.as_str(), "{info}");
    assert_eq!(
        info["metadata"]["expectedGeneration"],
        (current - 1).to_string()
    );
    assert_eq!(info["metadata"]["currentGeneration"], current.to_string());
    // Nothing changed.
    let got = ok(call(&server, b, "1.1", "GetTask", json!({"id": id})).await);
    assert_eq!(generation(&got), current, "{got}");
    assert_eq!(state(&got), "TASK_STATE_INPUT_REQUIRED");

    // A 1.0 client's configuration has no such field: the same stale value is not looked at.
    // (Sent on a task of its own, so the 1.1 checks below find this one as it was.)
    let other = held(&server, b).await;
    let mut from_1_0 = follow_up(&id_of(&other), "late");
    from_1_0["configuration"] = json!({"ifGenerationMatch": "1"});
    let answered = ok(call(&server, b, "1.0", "SendMessage", from_1_0).await);
    assert_eq!(
        state(task_of(&answered)),
        "TASK_STATE_COMPLETED",
        "{answered}"
    );

    // The current generation: accepted.
    let mut fresh = follow_up(&id, "now");
    fresh["configuration"] = json!({"ifGenerationMatch": current});
    let answered = ok(call(&server, b, "1.1", "SendMessage", fresh).await);
    let answered = task_of(&answered);
    assert_eq!(state(answered), "TASK_STATE_COMPLETED", "{answered}");
    assert!(generation(answered) > current);
    // A new task ignores it.
    let new = send_request_with("hello", json!({"ifGenerationMatch": "42"}));
    let answered = ok(call(&server, b, "1.1", "SendMessage", new).await);
    assert_eq!(
        state(task_of(&answered)),
        "TASK_STATE_COMPLETED",
        "{answered}"
    );
}

async fn push_config_secrets_are_not_read_back(b: Binding) {
    let server = Server::start().await;
    let task = held(&server, b).await;
    let id = id_of(&task);
    for version in ["1.0", "1.1"] {
        let config = json!({
            "taskId": id,
            "url": "http://127.0.0.1:9/hook",
            "token": "tok-secret",
            "authentication": {"scheme": "Bearer", "credentials": "cred-secret"},
        });
        let created = ok(call(
            &server,
            b,
            version,
            "CreateTaskPushNotificationConfig",
            config,
        )
        .await);
        let config_id = created["id"].as_str().unwrap().to_owned();
        let got = ok(call(
            &server,
            b,
            version,
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": config_id}),
        )
        .await);
        assert_eq!(got["url"], "http://127.0.0.1:9/hook", "{got}");
        assert_eq!(got["authentication"]["scheme"], "Bearer", "{got}");
        let listed = ok(call(
            &server,
            b,
            version,
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id}),
        )
        .await);
        for answer in [&got, &listed] {
            let text = answer.to_string();
            assert!(
                !text.contains("tok-secret") && !text.contains("cred-secret"),
                "{version}: {text}"
            );
            assert!(!text.contains("x-a2a-lambda"), "{text}");
        }
    }
}
