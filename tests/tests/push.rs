//! Push notifications to a real webhook listener on 127.0.0.1.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use a2a_e2e::*;
use serde_json::{json, Value};

both_bindings!(
    inline_push_config_receives_every_event,
    created_push_config_receives_later_events,
    webhook_hosts_outside_the_allow_list_are_refused,
    unresolvable_webhook_host_is_refused,
);

fn is_completed_status(push: &Push) -> bool {
    push.json()["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
}

/// Checks the headers of every push and that each body is one StreamResponse of `task_id`.
fn check_pushes(pushes: &[Push], task_id: &str, credentials: &str, token: &str) {
    for push in pushes {
        assert_eq!(push.path, "/hook");
        assert_eq!(
            push.header("authorization"),
            Some(format!("Bearer {credentials}").as_str())
        );
        assert_eq!(
            push.header("x-a2a-notification-token"),
            Some(token),
            "{:?}",
            push.headers
        );
        assert_eq!(
            push.header("a2a-notification-token"),
            Some(token),
            "{:?}",
            push.headers
        );
        assert!(
            push.header("content-type")
                .is_some_and(|c| c.contains("json")),
            "{:?}",
            push.headers
        );
        let body = push.json();
        let k = kind(&body);
        let inner = &body[k];
        let id = if k == "task" {
            &inner["id"]
        } else {
            &inner["taskId"]
        };
        assert_eq!(id, &json!(task_id), "{body}");
        let _: a2a_protocol::StreamResponse =
            serde_json::from_value(body.clone()).expect("the body is a StreamResponse");
    }
}

fn states(pushes: &[Push]) -> Vec<String> {
    pushes
        .iter()
        .filter_map(|p| event_state(&p.json()).map(str::to_string))
        .collect()
}

async fn inline_push_config_receives_every_event(b: Binding) {
    let server = Server::start().await;
    let mut hook = Webhook::start().await;
    let request = send_request_with(
        "hold",
        json!({"taskPushNotificationConfig": {
            "url": hook.url,
            "token": "tok-inline",
            "authentication": {"scheme": "Bearer", "credentials": "cred-inline"},
        }}),
    );
    let held = task_of(&ok(server.send(b, request).await)).clone();
    assert_eq!(state(&held), "TASK_STATE_INPUT_REQUIRED");
    let id = id_of(&held);
    // The inline config is stored with the task.
    let configs = ok(server.list_push(b, &id).await);
    assert_eq!(
        configs["configs"].as_array().map(|c| c.len()),
        Some(1),
        "{configs}"
    );
    assert_eq!(configs["configs"][0]["url"], json!(hook.url));

    let done = task_of(&ok(server.send(b, follow_up(&id, "finish it")).await)).clone();
    assert_eq!(state(&done), "TASK_STATE_COMPLETED");

    let pushes = hook.until(EVENT_TIMEOUT, is_completed_status).await;
    check_pushes(&pushes, &id, "cred-inline", "tok-inline");
    // In log order: the task as created, INPUT_REQUIRED, then the follow-up's echo artifact,
    // then COMPLETED last.
    assert_eq!(kind(&pushes[0].json()), "task", "{:?}", pushes[0].json());
    let seen = states(&pushes);
    let input = seen
        .iter()
        .position(|s| s == "TASK_STATE_INPUT_REQUIRED")
        .expect("INPUT_REQUIRED pushed");
    assert_eq!(
        seen.last().map(String::as_str),
        Some("TASK_STATE_COMPLETED")
    );
    let artifact = pushes
        .iter()
        .position(|p| p.json().get("artifactUpdate").is_some())
        .expect("the echo artifact is pushed");
    let input_at = pushes
        .iter()
        .position(|p| event_state(&p.json()) == Some("TASK_STATE_INPUT_REQUIRED"))
        .unwrap();
    assert!(
        input_at < artifact && artifact < pushes.len() - 1,
        "order: {seen:?} (input at {input})"
    );
    assert_eq!(
        artifact_text(&pushes[artifact].json()["artifactUpdate"]["artifact"]),
        "finish it"
    );
    // The pushes are the task's log. Replaying the log with Last-Event-ID (a stream closes at
    // INPUT_REQUIRED, so it takes two resumes) carries the same events in the same order.
    let mut logged: Vec<Value> = Vec::new();
    let mut after = 0;
    while logged.len() < pushes.len() {
        let mut replay = server
            .subscribe(b, &id, Some(after))
            .await
            .unwrap_or_else(|e| panic!("replay after {after}: {}", e.body));
        let events = replay.collect_to_end(EVENT_TIMEOUT).await;
        assert!(!events.is_empty(), "replay after {after} is empty");
        after = events.last().unwrap().seq();
        logged.extend(events.iter().map(|e| e.payload()));
        if event_state(logged.last().unwrap()) == Some("TASK_STATE_COMPLETED") {
            break;
        }
    }
    let pushed: Vec<Value> = pushes.iter().map(|p| p.json()).collect();
    assert_eq!(pushed, logged, "one push per event, in sequence order");
    // Credentials and tokens are secrets: never logged.
    let logs = server.logs();
    assert!(!logs.is_empty());
    for secret in ["cred-inline", "tok-inline"] {
        assert!(!logs.contains(secret), "the log shows {secret}:\n{logs}");
    }
    // Nothing more arrives after the terminal event.
    assert!(hook
        .next_within(std::time::Duration::from_millis(300))
        .await
        .is_none());
}

async fn created_push_config_receives_later_events(b: Binding) {
    let server = Server::start().await;
    let mut hook = Webhook::start().await;
    let held = server.send_text(b, "hold").await;
    let id = id_of(&held);
    let created = ok(server
        .create_push(
            b,
            &id,
            json!({
                "url": hook.url,
                "token": "tok-created",
                "authentication": {"scheme": "Bearer", "credentials": "cred-created"},
            }),
        )
        .await);
    assert_eq!(created["taskId"], json!(id));

    let done = task_of(&ok(server
        .send(b, follow_up(&id, "after the config"))
        .await))
    .clone();
    assert_eq!(state(&done), "TASK_STATE_COMPLETED");
    let pushes = hook.until(EVENT_TIMEOUT, is_completed_status).await;
    check_pushes(&pushes, &id, "cred-created", "tok-created");
    assert!(
        pushes
            .iter()
            .any(|p| artifact_text(&p.json()["artifactUpdate"]["artifact"]) == "after the config"),
        "the follow-up's artifact is pushed: {:?}",
        pushes.iter().map(|p| p.json()).collect::<Vec<_>>()
    );
    assert_eq!(
        states(&pushes).last().map(String::as_str),
        Some("TASK_STATE_COMPLETED")
    );
}

async fn webhook_hosts_outside_the_allow_list_are_refused(b: Binding) {
    let server = Server::start().await;
    let held = server.send_text(b, "hold").await;
    let id = id_of(&held);
    for url in [
        "http://10.0.0.1/x",
        "http://192.168.1.10/x",
        "http://169.254.169.254/latest/meta-data",
        "http://[fd00::1]/x",
        "ftp://127.0.0.1/x",
        "http://user:pw@127.0.0.1/x",
        "not a url",
    ] {
        err(server.create_push(b, &id, json!({"url": url})).await).assert_is(
            -32602,
            400,
            "INVALID_PARAMS",
        );
    }
    let configs = ok(server.list_push(b, &id).await);
    assert_eq!(
        configs["configs"].as_array().map(|c| c.len()).unwrap_or(0),
        0,
        "{configs}"
    );
    // Inline, too: the send is refused and no task is created.
    let before = ok(server.list_tasks(b, json!({})).await)["tasks"]
        .as_array()
        .unwrap()
        .len();
    let request = send_request_with(
        "hello",
        json!({"taskPushNotificationConfig": {"url": "http://10.0.0.1/x"}}),
    );
    err(server.send(b, request).await).assert_is(-32602, 400, "INVALID_PARAMS");
    let after = ok(server.list_tasks(b, json!({})).await)["tasks"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(before, after, "no task was created");
}

async fn unresolvable_webhook_host_is_refused(b: Binding) {
    // A host name that is not allow-listed must resolve to public addresses only; `.invalid`
    // never resolves (RFC 6761), so such a config could never be delivered and is refused.
    let server = Server::start().await;
    let held = server.send_text(b, "hold").await;
    let id = id_of(&held);
    err(server
        .create_push(b, &id, json!({"url": "http://webhook.invalid/x"}))
        .await)
    .assert_is(-32602, 400, "INVALID_PARAMS");
    let request = send_request_with(
        "hello",
        json!({"taskPushNotificationConfig": {"url": "http://webhook.invalid/x"}}),
    );
    err(server.send(b, request).await).assert_is(-32602, 400, "INVALID_PARAMS");
}
