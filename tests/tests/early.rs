//! Early-protocol clients (before A2A 0.2) on the same server (issue #16): `tasks/send` with a
//! task id the client chooses, `sessionId`, `type`-tagged parts, `tasks/sendSubscribe`, the
//! early card, Hexagon's `POST /tasks` paths and python-a2a's method-named ones, owner scoping of
//! chosen ids, and the switch that turns the early protocol off.

use a2a_e2e::issuer::{TestIssuer, ALL_SCOPES, AUDIENCE};
use a2a_e2e::*;
use reqwest::header::CONTENT_TYPE;
use reqwest::Method;
use serde_json::{json, Value};

/// An early JSON-RPC request to `path` (no `A2A-Version`: early clients send none).
fn early_request(c: &Client, path: &str, method: &str, params: Value) -> reqwest::RequestBuilder {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    c.http()
        .post(c.url(path))
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_string())
}

/// An early JSON-RPC call to `path`; the whole response object.
async fn early_at(c: &Client, path: &str, method: &str, params: Value) -> Value {
    let response = c.send_raw(early_request(c, path, method, params)).await;
    assert_eq!(response.status, 200, "{method}: {}", response.body);
    response.body
}

/// An early call to Hexagon's endpoint, `POST /tasks`.
async fn early(c: &Client, method: &str, params: Value) -> Value {
    early_at(c, "/tasks", method, params).await
}

#[track_caller]
fn result(response: &Value) -> &Value {
    assert!(response.get("error").is_none(), "an error: {response}");
    &response["result"]
}

fn early_send(id: &str, text: &str) -> Value {
    json!({"id": id, "message": {"role": "user", "parts": [{"type": "text", "text": text}]}})
}

/// The events of an early stream (JSON-RPC framing), as their `result`.
async fn early_stream(c: &Client, path: &str, method: &str, params: Value) -> Vec<Value> {
    let mut stream = open_sse(Binding::JsonRpc, early_request(c, path, method, params))
        .await
        .unwrap_or_else(|e| panic!("{method}: {}", e.body));
    stream
        .collect_to_end(EVENT_TIMEOUT)
        .await
        .iter()
        .map(SseEvent::payload)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_send_keeps_the_chosen_id_and_session() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let id = new_id();
    let mut params = early_send(&id, "hello");
    params["sessionId"] = json!("session-1");
    let sent = early(&server, "tasks/send", params).await;
    let task = result(&sent);
    assert_eq!(task["id"], json!(id), "{task}");
    assert_eq!(task["sessionId"], "session-1");
    assert_eq!(task["status"]["state"], "completed");
    assert!(task.get("kind").is_none(), "early shape: {task}");
    let artifact = &task["artifacts"][0];
    assert_eq!(
        artifact["parts"][0],
        json!({"type": "text", "text": "hello"})
    );
    assert_eq!(artifact["index"], 0);
    // The message got a messageId, and is in the history.
    let history = task["history"].as_array().unwrap();
    assert!(
        history[0]["messageId"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{task}"
    );

    // The same task to a 1.0 client, under the chosen id; the session is its context.
    let task = ok(server.get_task(Binding::Rest, &id, None).await);
    assert_eq!(state(&task), "TASK_STATE_COMPLETED");
    assert_eq!(task["contextId"], "session-1");

    // tasks/get on the early endpoint answers in the early shape, on the generic endpoint in
    // 0.3 carrying the early fields too.
    let got = early(&server, "tasks/get", json!({"id": id, "historyLength": 0})).await;
    assert_eq!(result(&got)["sessionId"], "session-1");
    assert!(result(&got).get("kind").is_none());
    let got = early_at(&server, "/jsonrpc", "tasks/get", json!({"id": id})).await;
    assert_eq!(result(&got)["kind"], "task");
    assert_eq!(result(&got)["sessionId"], "session-1");
    assert_eq!(result(&got)["artifacts"][0]["parts"][0]["type"], "text");
    assert_eq!(result(&got)["artifacts"][0]["parts"][0]["kind"], "text");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chosen_id_the_owner_holds_is_a_follow_up() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let id = new_id();
    let held = early(&server, "tasks/send", early_send(&id, "hold")).await;
    assert_eq!(result(&held)["status"]["state"], "input-required");
    let done = early(&server, "tasks/send", early_send(&id, "more")).await;
    let done = result(&done);
    assert_eq!(done["id"], json!(id));
    assert_eq!(done["status"]["state"], "completed", "{done}");
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], "more");
    // A message to the ended task is refused as in 1.0 (-32004).
    let again = early(&server, "tasks/send", early_send(&id, "again")).await;
    assert_eq!(again["error"]["code"], -32004, "{again}");
    // Ids that would break REST routes or are not ids at all are refused, and nothing is
    // created under them: `GET /tasks/send` is the early path, `/tasks/..` is `/`.
    let before = ok(server.list_tasks(Binding::Rest, json!({})).await);
    let reserved = [
        "send",
        "get",
        "cancel",
        "stream",
        "sendSubscribe",
        "resubscribe",
        "pushNotification",
        ".",
        "..",
    ];
    for bad in ["a:b", "a/b", "", "with space"].into_iter().chain(reserved) {
        let r = early(&server, "tasks/send", early_send(bad, "x")).await;
        assert_eq!(r["error"]["code"], -32602, "{bad:?}: {r}");
        let message = r["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("is not accepted"), "{bad:?}: {message}");
    }
    let after = ok(server.list_tasks(Binding::Rest, json!({})).await);
    assert_eq!(after["totalSize"], before["totalSize"], "{after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_held_by_another_owner_is_refused_without_telling() {
    if !store_ready() {
        return;
    }
    let issuer = TestIssuer::start().await;
    let server = Server::start_with_env(&[
        ("A2A_AUTH", "jwt"),
        ("A2A_JWT_ISSUER", &issuer.issuer),
        ("A2A_JWT_AUDIENCE", AUDIENCE),
    ])
    .await;
    let alice = server.client_with_bearer(&issuer.token("alice", ALL_SCOPES));
    let bob = server.client_with_bearer(&issuer.token("bob", ALL_SCOPES));
    let id = new_id();
    let held = early(&alice, "tasks/send", early_send(&id, "hold")).await;
    assert_eq!(result(&held)["status"]["state"], "input-required");

    // Bob cannot read it, and cannot take its id: InvalidParams with nothing of Alice's task
    // in it (not TaskNotFound, which would say the id is free, nor anything about her task).
    let got = early(&bob, "tasks/get", json!({"id": id})).await;
    assert_eq!(got["error"]["code"], -32001, "{got}");
    let taken = early(&bob, "tasks/send", early_send(&id, "mine now")).await;
    assert_eq!(taken["error"]["code"], -32602, "{taken}");
    let text = taken.to_string();
    assert!(
        !text.contains("input-required") && !text.contains("hold"),
        "{text}"
    );
    // Alice's task is untouched.
    let task = ok(alice.get_task(Binding::JsonRpc, &id, None).await);
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED");
    assert!(!task.to_string().contains("mine now"), "{task}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_subscribe_and_resubscribe_stream_early_events() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let id = new_id();
    let events = early_stream(
        &server,
        "/tasks/sendSubscribe",
        "tasks/sendSubscribe",
        early_send(&id, "slow 2 20"),
    )
    .await;
    let last = events.last().unwrap();
    assert_eq!(
        last,
        &json!({"id": id, "status": last["status"].clone(), "final": true})
    );
    assert_eq!(last["status"]["state"], "completed");
    for event in &events {
        assert_eq!(event["id"], json!(id), "{event}");
        assert!(
            event.get("kind").is_none() && event.get("taskId").is_none(),
            "{event}"
        );
        assert!(
            event.get("status").is_some() || event.get("artifact").is_some(),
            "{event}"
        );
    }
    assert!(events[..events.len() - 1]
        .iter()
        .all(|e| e["final"] != true));
    let chunk = events
        .iter()
        .find(|e| e.get("artifact").is_some())
        .expect("artifact events");
    assert_eq!(chunk["artifact"]["parts"][0]["type"], "text", "{chunk}");
    assert!(chunk["artifact"].get("lastChunk").is_some(), "{chunk}");

    // Resubscribing to a held task: its status, final (input-required ends the stream).
    let held_id = new_id();
    early(&server, "tasks/send", early_send(&held_id, "hold")).await;
    let events = early_stream(
        &server,
        "/tasks/resubscribe",
        "tasks/resubscribe",
        json!({"id": held_id}),
    )
    .await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["status"]["state"], "input-required");
    assert_eq!(events[0]["final"], true);

    // tasks/cancel ends it: canceled, in the early spelling.
    let canceled = early(&server, "tasks/cancel", json!({"id": held_id})).await;
    assert_eq!(result(&canceled)["status"]["state"], "canceled");
    // Resubscribing to it now: its final state, final (1.0 refuses a finished task).
    let events = early_stream(
        &server,
        "/tasks/resubscribe",
        "tasks/resubscribe",
        json!({"id": held_id}),
    )
    .await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (&events[0]["status"]["state"], &events[0]["final"]),
        (&json!("canceled"), &json!(true)),
        "{events:?}"
    );
    // An unknown task is still TaskNotFound.
    let unknown = open_sse(
        Binding::JsonRpc,
        early_request(
            &server,
            "/tasks/resubscribe",
            "tasks/resubscribe",
            json!({"id": new_id()}),
        ),
    )
    .await;
    assert_eq!(unknown.err().and_then(|e| e.code), Some(-32001));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_a2a_paths_and_the_early_card() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    // python-a2a posts each method to its own path, with the Task's `status` in the params.
    let id = new_id();
    let mut params = early_send(&id, "hello");
    params["status"] = json!({"state": "submitted", "timestamp": "2026-01-01T00:00:00"});
    params["message"]["metadata"] = json!({"message_id": "abc"});
    let sent = early_at(&server, "/tasks/send", "tasks/send", params).await;
    assert_eq!(result(&sent)["status"]["state"], "completed", "{sent}");
    let got = early_at(
        &server,
        "/tasks/get",
        "tasks/get",
        json!({"id": id, "historyLength": 0}),
    )
    .await;
    assert_eq!(result(&got)["id"], json!(id));
    // Its resubscription (a python-a2a-only path), framed as its client reads it: bare early
    // objects, the last one named `complete` (it stops there). To a held task, which ends at
    // once with its state:
    let held_id = new_id();
    early_at(
        &server,
        "/tasks/send",
        "tasks/send",
        early_send(&held_id, "hold"),
    )
    .await;
    let resubscribe = |id: &str| {
        let request = early_request(
            &server,
            "/tasks/stream",
            "tasks/resubscribe",
            json!({"id": id}),
        );
        async move {
            let mut stream = open_sse(Binding::Rest, request)
                .await
                .unwrap_or_else(|e| panic!("tasks/resubscribe: {}", e.body));
            stream.collect_to_end(EVENT_TIMEOUT).await
        }
    };
    let events = resubscribe(&held_id).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].event.as_deref(), Some("complete"), "{events:?}");
    let last = events[0].json();
    assert_eq!(
        (&last["id"], &last["status"]["state"], &last["final"]),
        (&json!(held_id), &json!("input-required"), &json!(true)),
        "{last}"
    );
    // To a task that ended: its final state, where 1.0 refuses (nothing to follow).
    let events = resubscribe(&id).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].event.as_deref(), Some("complete"), "{events:?}");
    assert_eq!(
        events[0].json()["status"]["state"],
        "completed",
        "{events:?}"
    );

    for path in ["/.well-known/agent.json", "/agent.json"] {
        let card = server
            .send_raw(server.http().get(server.url(path)))
            .await
            .body;
        // Hexagon's early endpoint: every early method, each answered in the early dialect.
        assert_eq!(card["url"], json!(server.url("/tasks")), "{path}: {card}");
        assert_eq!(card["capabilities"]["streaming"], true);
        assert_eq!(card["capabilities"]["stateTransitionHistory"], false);
        assert!(card["skills"].as_array().is_some_and(|s| !s.is_empty()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_notification_set_get_and_tasks_list_by_session() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let hook = Webhook::start().await;
    let id = new_id();
    let mut params = early_send(&id, "hold");
    params["sessionId"] = json!("s-list");
    early(&server, "tasks/send", params).await;
    let set = early(
        &server,
        "tasks/pushNotification/set",
        json!({"id": id, "pushNotificationConfig": {"url": hook.url, "token": "t"}}),
    )
    .await;
    assert_eq!(
        result(&set),
        &json!({"id": id, "pushNotificationConfig": {"url": hook.url, "token": "t"}})
    );
    let got = early(&server, "tasks/pushNotification/get", json!({"id": id})).await;
    // Secrets are written, never read back (in every version): the same config, no token.
    assert_eq!(
        result(&got),
        &json!({"id": id, "pushNotificationConfig": {"url": hook.url}})
    );

    let mut other = early_send(&new_id(), "hello");
    other["sessionId"] = json!("s-list");
    early(&server, "tasks/send", other).await;
    early(&server, "tasks/send", early_send(&new_id(), "hello")).await;
    let listed = early(&server, "tasks/list", json!({"sessionId": "s-list"})).await;
    let tasks = result(&listed).as_array().expect("an array of tasks");
    assert_eq!(tasks.len(), 2, "{listed}");
    assert!(tasks.iter().all(|t| t["sessionId"] == "s-list"), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_methods_are_not_sent_as_1_0() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let r = server
        .send_raw(
            early_request(
                &server,
                "/jsonrpc",
                "tasks/send",
                early_send(&new_id(), "x"),
            )
            .header("A2A-Version", "1.0"),
        )
        .await;
    assert_eq!(r.body["error"]["code"], -32009, "{}", r.body);
    // And a 1.0 method is no early method.
    let r = early(&server, "GetTask", json!({"id": "x"})).await;
    assert_eq!(r["error"]["code"], -32601, "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_early_protocol_off_its_requests_are_refused() {
    if !store_ready() {
        return;
    }
    let server = Server::start_with_env(&[("A2A_PROTOCOL_EARLY", "off")]).await;
    let r = early_at(
        &server,
        "/jsonrpc",
        "tasks/send",
        early_send(&new_id(), "x"),
    )
    .await;
    assert_eq!(r["error"]["code"], -32009, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("early") && !message.contains("0.3 method"),
        "{message}"
    );
    let r = server
        .send_raw(early_request(
            &server,
            "/tasks",
            "tasks/send",
            early_send(&new_id(), "x"),
        ))
        .await;
    assert_eq!(r.status, 405, "{}", r.body);
    // tasks/get is 0.3's too: still served, in the 0.3 shape.
    let sent = server.send_text(Binding::JsonRpc, "hello").await;
    let got = early_at(
        &server,
        "/jsonrpc",
        "tasks/get",
        json!({"id": id_of(&sent)}),
    )
    .await;
    assert_eq!(result(&got)["kind"], "task");
    assert!(result(&got).get("sessionId").is_none(), "{got}");
    // agent.json is the card as before.
    let card = server
        .send_raw(
            server
                .http()
                .get(server.url("/.well-known/agent-card.json")),
        )
        .await
        .body;
    let alias = server
        .send_raw(server.http().get(server.url("/.well-known/agent.json")))
        .await
        .body;
    assert_eq!(card, alias);
    let r = server
        .send_raw(
            server
                .http()
                .request(Method::GET, server.url("/agent.json")),
        )
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_to_an_early_config_carry_the_early_task() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let mut hook = Webhook::start().await;
    let id = new_id();
    let mut params = early_send(&id, "hold");
    params["sessionId"] = json!("s-push");
    params["pushNotification"] = json!({"url": hook.url, "token": "tok-early",
        "authentication": {"schemes": ["Bearer"], "credentials": "cred-early"}});
    let held = early(&server, "tasks/send", params).await;
    assert_eq!(result(&held)["status"]["state"], "input-required");
    let done = early(&server, "tasks/send", early_send(&id, "finish")).await;
    assert_eq!(result(&done)["status"]["state"], "completed");

    let pushes = hook
        .until(EVENT_TIMEOUT, |p| {
            p.json()["status"]["state"] == "completed"
        })
        .await;
    for push in &pushes {
        let body = push.json();
        assert_eq!(body["id"], json!(id), "{body}");
        assert_eq!(body["sessionId"], "s-push", "{body}");
        assert!(body.get("kind").is_none(), "{body}");
        assert_eq!(push.header("authorization"), Some("Bearer cred-early"));
    }
    let last = pushes.last().unwrap().json();
    assert_eq!(
        last["artifacts"][0]["parts"][0],
        json!({"type": "text", "text": "finish"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_reply_is_a_completed_task_under_the_chosen_id() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let id = new_id();
    // The reference agent answers a `tck-message-response…` messageId with a Message.
    let mut params = early_send(&id, "hi");
    params["message"]["messageId"] = json!(format!("tck-message-response-{}", new_id()));
    let sent = early(&server, "tasks/send", params).await;
    let task = result(&sent);
    assert_eq!(task["id"], json!(id), "{task}");
    assert_eq!(task["status"]["state"], "completed", "{task}");
    assert_eq!(task["status"]["message"]["role"], "agent", "{task}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sends_to_one_new_chosen_id_never_fail_internally() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    for round in 0..20 {
        // Eight sends of one owner race to create the same new task id: one creates it, each
        // other one continues it as a follow-up, or is refused in the protocol's terms (the
        // task is running, or already ended), never with an internal error.
        let id = new_id();
        let text = if round % 2 == 0 { "hold" } else { "hello" };
        let sends = (0..8).map(|_| early(&server, "tasks/send", early_send(&id, text)));
        let answers = futures::future::join_all(sends).await;
        let mut accepted = 0;
        for answer in &answers {
            match answer.get("error") {
                Some(error) => assert_eq!(error["code"], -32004, "{answer}"),
                None => {
                    assert_eq!(answer["result"]["id"], json!(id), "{answer}");
                    accepted += 1;
                }
            }
        }
        assert!(accepted >= 1, "{answers:?}");
        let task = ok(server.get_task(Binding::JsonRpc, &id, Some(100)).await);
        let turns = task["history"]
            .as_array()
            .map(|h| h.iter().filter(|m| m["role"] == "ROLE_USER").count());
        assert_eq!(turns, Some(accepted), "one turn per accepted send: {task}");
    }
}

/// Whether `value` has a member `kind` anywhere (0.3's discriminator).
fn has_kind(value: &Value) -> bool {
    match value {
        Value::Object(members) => members.contains_key("kind") || members.values().any(has_kind),
        Value::Array(items) => items.iter().any(has_kind),
        _ => false,
    }
}

/// Issue 46, defect 9: an early client that follows the early card gets what an early SDK's
/// server gives, for the names 0.3 shares too: no 0.3 `kind`, and a resubscription's first
/// event is a status event with `final`, never a 0.3 Task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_early_client_following_the_card_reads_the_early_dialect_only() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let card = server
        .send_raw(server.http().get(server.url("/.well-known/agent.json")))
        .await
        .body;
    let url = card["url"].as_str().expect("the card's url").to_owned();
    let post = |method: &str, params: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        server
            .http()
            .post(url.as_str())
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string())
    };
    let id = new_id();
    let sent = server
        .send_raw(post("tasks/send", early_send(&id, "hold")))
        .await;
    assert_eq!(
        result(&sent.body)["status"]["state"],
        "input-required",
        "{}",
        sent.body
    );
    let got = server.send_raw(post("tasks/get", json!({"id": id}))).await;
    let task = result(&got.body);
    assert_eq!(task["id"], json!(id), "{task}");
    assert!(!has_kind(task), "{task}");
    let mut stream = open_sse(
        Binding::JsonRpc,
        post("tasks/resubscribe", json!({"id": id})),
    )
    .await
    .unwrap_or_else(|e| panic!("tasks/resubscribe: {}", e.body));
    let events: Vec<Value> = stream
        .collect_to_end(EVENT_TIMEOUT)
        .await
        .iter()
        .map(SseEvent::payload)
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        events[0],
        json!({"id": id, "status": events[0]["status"].clone(), "final": true})
    );
    assert_eq!(events[0]["status"]["state"], "input-required");
    assert!(!has_kind(&events[0]), "{}", events[0]);
    let canceled = server
        .send_raw(post("tasks/cancel", json!({"id": id})))
        .await;
    let task = result(&canceled.body);
    assert_eq!(task["status"]["state"], "canceled", "{task}");
    assert!(!has_kind(task), "{task}");
}
