//! Every operation on both bindings: SendMessage, GetTask, ListTasks, CancelTask,
//! SubscribeToTask, the push-config CRUD and GetExtendedAgentCard.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use a2a_e2e::*;
use serde_json::{json, Value};

both_bindings!(
    blocking_send_echo_completes,
    return_immediately_returns_before_the_work_is_done,
    history_length_limits_history,
    get_task_returns_the_stored_task,
    list_tasks_filters_and_orders,
    list_tasks_rejects_out_of_range_page_sizes,
    list_tasks_pages_through_every_task_once,
    list_tasks_omits_artifacts_unless_asked,
    cancel_a_held_task_then_cancel_again,
    cancel_ends_a_running_stream_promptly,
    subscribe_sends_the_snapshot_first,
    subscribe_to_a_terminal_task_is_unsupported,
    push_config_crud,
    extended_card_is_not_offered,
);

async fn blocking_send_echo_completes(b: Binding) {
    let server = Server::start().await;
    let request = send_request("hello e2e");
    let message_id = request["message"]["messageId"].clone();
    let response = ok(server.send(b, request).await);
    let typed: a2a_protocol::SendMessageResponse =
        serde_json::from_value(response.clone()).expect("a SendMessageResponse");
    assert!(matches!(typed, a2a_protocol::SendMessageResponse::Task(_)));
    let task = task_of(&response);
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{task}");
    id_of(task);
    assert!(
        task["contextId"].as_str().is_some_and(|c| !c.is_empty()),
        "contextId is present: {task}"
    );
    let arts = artifacts(task);
    assert_eq!(arts.len(), 1, "one artifact: {task}");
    assert_eq!(arts[0]["name"], "echo");
    assert!(arts[0]["artifactId"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    assert_eq!(arts[0]["parts"], json!([{"text": "hello e2e"}]));
    // The completed status carries the same text; the user's message is in the history.
    assert_eq!(message_text(&task["status"]["message"]), "hello e2e");
    assert_eq!(task["status"]["message"]["role"], "ROLE_AGENT");
    assert!(
        task["status"]["timestamp"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "status.timestamp is UTC: {task}"
    );
    let hist = history(task);
    assert!(
        hist.iter()
            .any(|m| m["messageId"] == message_id && m["role"] == "ROLE_USER"),
        "the user message is in the history: {task}"
    );
    assert_eq!(hist[0]["contextId"], task["contextId"]);
    assert_eq!(hist[0]["taskId"], task["id"]);
}

async fn return_immediately_returns_before_the_work_is_done(b: Binding) {
    let server = Server::start().await;
    let response = ok(server
        .send(
            b,
            send_request_with("slow 3 100", json!({"returnImmediately": true})),
        )
        .await);
    let task = task_of(&response);
    let id = id_of(task);
    assert!(
        matches!(state(task), "TASK_STATE_SUBMITTED" | "TASK_STATE_WORKING"),
        "returned before the end: {task}"
    );
    assert!(artifacts(task).len() <= 1);

    // Await the end through a subscription (no sleeping).
    let done = server.await_terminal(&id, EVENT_TIMEOUT).await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    let done = ok(server.get_task(b, &id, None).await);
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    let arts = artifacts(&done);
    assert_eq!(arts.len(), 1, "{done}");
    assert_eq!(artifact_text(&arts[0]), "chunk-1 chunk-2 chunk-3 ");
}

async fn history_length_limits_history(b: Binding) {
    let server = Server::start().await;
    // historyLength 0 on a send: no history at all.
    let response = ok(server
        .send(
            b,
            send_request_with("echo zero", json!({"historyLength": 0})),
        )
        .await);
    let task = task_of(&response);
    assert_eq!(state(task), "TASK_STATE_COMPLETED");
    assert!(
        task.get("history").is_none(),
        "historyLength 0 omits history: {task}"
    );
    // The stored task still has it.
    let id = id_of(task);
    let full = ok(server.get_task(b, &id, None).await);
    assert!(!history(&full).is_empty(), "{full}");
    let none = ok(server.get_task(b, &id, Some(0)).await);
    assert!(
        none.get("history").is_none(),
        "GetTask historyLength 0: {none}"
    );

    // A task with several messages: historyLength 1 keeps only the newest.
    let held = server.send_text(b, "hold").await;
    let held_id = id_of(&held);
    let response = ok(server.send(b, follow_up(&held_id, "second message")).await);
    assert_eq!(state(task_of(&response)), "TASK_STATE_COMPLETED");
    let full = ok(server.get_task(b, &held_id, None).await);
    let full_history = history(&full);
    assert!(full_history.len() >= 2, "hold + follow-up: {full}");
    let one = ok(server.get_task(b, &held_id, Some(1)).await);
    assert_eq!(
        history(&one),
        vec![full_history.last().unwrap().clone()],
        "{one}"
    );
    // Also on SendMessage.
    let held2 = server.send_text(b, "hold").await;
    let mut request = follow_up(&id_of(&held2), "third");
    request["configuration"] = json!({"historyLength": 1});
    let response = ok(server.send(b, request).await);
    let limited = history(task_of(&response));
    assert_eq!(limited.len(), 1, "{response}");
    let stored = history(&ok(server.get_task(b, &id_of(&held2), None).await));
    assert_eq!(&limited[0], stored.last().unwrap());
}

async fn get_task_returns_the_stored_task(b: Binding) {
    let server = Server::start().await;
    let sent = server.send_text(b, "stored").await;
    let got = ok(server.get_task(b, &id_of(&sent), None).await);
    let typed: a2a_protocol::Task = serde_json::from_value(got.clone()).expect("a Task");
    assert_eq!(typed.id, id_of(&sent));
    assert_eq!(got, sent, "GetTask returns what SendMessage returned");
}

/// Creates three echo tasks in one context and a held task in another; returns
/// (context, ids oldest first, held id).
async fn three_in_a_context(server: &Server, b: Binding) -> (String, Vec<String>, String) {
    let first = server.send_text(b, "list one").await;
    let context = first["contextId"].as_str().unwrap().to_string();
    let mut ids = vec![id_of(&first)];
    for text in ["list two", "list three"] {
        let mut request = send_request(text);
        request["message"]["contextId"] = json!(context);
        let response = ok(server.send(b, request).await);
        let task = task_of(&response);
        assert_eq!(
            task["contextId"],
            json!(context),
            "a client contextId is kept"
        );
        assert_eq!(state(task), "TASK_STATE_COMPLETED");
        ids.push(id_of(task));
    }
    let held = server.send_text(b, "hold").await;
    assert_ne!(held["contextId"], json!(context));
    (context, ids, id_of(&held))
}

fn ids(list: &Value) -> Vec<String> {
    list["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("tasks array: {list}"))
        .iter()
        .map(id_of)
        .collect()
}

/// Tasks whose status changed later come first: for two listed tasks with different status
/// timestamps, the one created later (sent after the other finished) is listed first.
#[track_caller]
fn assert_newest_first(list: &Value, created_oldest_first: &[String]) {
    let listed: Vec<(usize, String)> = list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let id = id_of(t);
            let index = created_oldest_first
                .iter()
                .position(|c| *c == id)
                .unwrap_or_else(|| panic!("unexpected task {id} in {list}"));
            let stamp = t["status"]["timestamp"].as_str().unwrap().to_string();
            (index, stamp)
        })
        .collect();
    for (i, (index_a, stamp_a)) in listed.iter().enumerate() {
        for (index_b, stamp_b) in &listed[i + 1..] {
            assert!(stamp_a >= stamp_b, "newest status first: {list}");
            if stamp_a != stamp_b {
                assert!(index_a > index_b, "a newer task is listed first: {list}");
            }
        }
    }
}

fn check_list_shape(list: &Value) {
    let typed: a2a_protocol::ListTasksResponse =
        serde_json::from_value(list.clone()).expect("a ListTasksResponse");
    let _ = typed;
    for field in ["tasks", "nextPageToken", "pageSize", "totalSize"] {
        assert!(
            list.get(field).is_some(),
            "ListTasksResponse.{field} is always present: {list}"
        );
    }
}

async fn list_tasks_filters_and_orders(b: Binding) {
    let server = Server::start().await;
    let (context, created, held) = three_in_a_context(&server, b).await;

    let all = ok(server.list_tasks(b, json!({})).await);
    check_list_shape(&all);
    assert_eq!(all["totalSize"], 4, "{all}");
    let all_ids = ids(&all);
    assert_eq!(all_ids.len(), 4);
    // Newest status timestamp first.
    let stamps: Vec<String> = all["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["status"]["timestamp"]
                .as_str()
                .expect("timestamp")
                .to_string()
        })
        .collect();
    let mut sorted = stamps.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(stamps, sorted, "sorted by status timestamp, newest first");
    let mut oldest_first = created.clone();
    oldest_first.push(held.clone());
    assert_newest_first(&all, &oldest_first);

    let in_context = ok(server.list_tasks(b, json!({"contextId": context})).await);
    check_list_shape(&in_context);
    let mut listed = ids(&in_context);
    assert_newest_first(&in_context, &created);
    listed.sort();
    let mut expected = created.clone();
    expected.sort();
    assert_eq!(listed, expected, "exactly the context's tasks");
    assert_eq!(in_context["totalSize"], 3);

    let waiting = ok(server
        .list_tasks(b, json!({"status": "TASK_STATE_INPUT_REQUIRED"}))
        .await);
    assert_eq!(ids(&waiting), vec![held.clone()], "{waiting}");
    let completed = ok(server
        .list_tasks(
            b,
            json!({"status": "TASK_STATE_COMPLETED", "contextId": context}),
        )
        .await);
    assert_eq!(ids(&completed).len(), 3);
    let none = ok(server
        .list_tasks(b, json!({"status": "TASK_STATE_FAILED"}))
        .await);
    assert_eq!(ids(&none), Vec::<String>::new());
    assert_eq!(none["nextPageToken"], "");
    let other = ok(server.list_tasks(b, json!({"contextId": new_id()})).await);
    assert!(ids(&other).is_empty());

    // statusTimestampAfter keeps tasks whose status changed at or after the given time.
    let held_stamp = all["tasks"][0]["status"]["timestamp"]
        .as_str()
        .unwrap()
        .to_string();
    let recent = ok(server
        .list_tasks(b, json!({"statusTimestampAfter": held_stamp}))
        .await);
    let recent_ids = ids(&recent);
    assert!(recent_ids.contains(&held), "{recent}");
    for task in recent["tasks"].as_array().unwrap() {
        assert!(
            task["status"]["timestamp"].as_str().unwrap() >= held_stamp.as_str(),
            "{task}"
        );
    }
    let future = ok(server
        .list_tasks(b, json!({"statusTimestampAfter": "2999-01-01T00:00:00Z"}))
        .await);
    assert!(ids(&future).is_empty(), "{future}");

    // historyLength applies to every listed task.
    let no_history = ok(server.list_tasks(b, json!({"historyLength": 0})).await);
    for task in no_history["tasks"].as_array().unwrap() {
        assert!(task.get("history").is_none(), "{task}");
    }
}

async fn list_tasks_rejects_out_of_range_page_sizes(b: Binding) {
    let server = Server::start().await;
    server.send_text(b, "x").await;
    for bad in [0, 101, -1] {
        let e = err(server.list_tasks(b, json!({"pageSize": bad})).await);
        e.assert_is(-32602, 400, "INVALID_PARAMS");
    }
    for good in [1, 100] {
        let list = ok(server.list_tasks(b, json!({"pageSize": good})).await);
        assert_eq!(list["pageSize"], good, "{list}");
        assert_eq!(ids(&list).len(), 1);
    }
    let e = err(server
        .list_tasks(b, json!({"pageToken": "not-a-token!"}))
        .await);
    e.assert_is(-32602, 400, "INVALID_PARAMS");
}

async fn list_tasks_pages_through_every_task_once(b: Binding) {
    let server = Server::start().await;
    let (context, created, _) = three_in_a_context(&server, b).await;
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let mut params = json!({"contextId": context, "pageSize": 1});
        if !token.is_empty() {
            params["pageToken"] = json!(token);
        }
        let page = ok(server.list_tasks(b, params).await);
        check_list_shape(&page);
        pages += 1;
        assert!(pages <= 3, "more pages than tasks: {page}");
        let page_ids = ids(&page);
        assert_eq!(page_ids.len(), 1, "pageSize 1: {page}");
        assert_eq!(page["pageSize"], 1);
        assert_eq!(page["totalSize"], 3, "totalSize counts every match: {page}");
        seen.extend(page_ids);
        token = page["nextPageToken"]
            .as_str()
            .expect("nextPageToken is a string")
            .to_string();
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(pages, 3);
    let one_page = ok(server
        .list_tasks(b, json!({"contextId": context, "pageSize": 100}))
        .await);
    assert_eq!(seen, ids(&one_page), "paging gives the one-page order");
    let mut sorted_seen = seen.clone();
    sorted_seen.sort();
    let mut expected = created.clone();
    expected.sort();
    assert_eq!(sorted_seen, expected, "each task exactly once");
}

async fn list_tasks_omits_artifacts_unless_asked(b: Binding) {
    let server = Server::start().await;
    let task = server.send_text(b, "with artifact").await;
    assert_eq!(artifacts(&task).len(), 1);
    let list = ok(server.list_tasks(b, json!({})).await);
    assert!(
        list["tasks"][0].get("artifacts").is_none(),
        "no artifacts member by default: {list}"
    );
    let list = ok(server
        .list_tasks(b, json!({"includeArtifacts": false}))
        .await);
    assert!(list["tasks"][0].get("artifacts").is_none(), "{list}");
    let list = ok(server
        .list_tasks(b, json!({"includeArtifacts": true}))
        .await);
    assert_eq!(list["tasks"][0]["artifacts"], task["artifacts"], "{list}");
}

async fn cancel_a_held_task_then_cancel_again(b: Binding) {
    let server = Server::start().await;
    let held = server.send_text(b, "hold").await;
    assert_eq!(state(&held), "TASK_STATE_INPUT_REQUIRED");
    let id = id_of(&held);
    let canceled = ok(server.cancel(b, &id).await);
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED", "{canceled}");
    assert_eq!(id_of(&canceled), id);
    let got = ok(server.get_task(b, &id, None).await);
    assert_eq!(state(&got), "TASK_STATE_CANCELED");
    let e = err(server.cancel(b, &id).await);
    e.assert_is(-32002, 400, "TASK_NOT_CANCELABLE");
    // A completed task cannot be canceled either.
    let done = server.send_text(b, "done").await;
    err(server.cancel(b, &id_of(&done)).await).assert_is(-32002, 400, "TASK_NOT_CANCELABLE");
    // An unknown one is not found.
    err(server.cancel(b, &new_id()).await).assert_is(-32001, 404, "TASK_NOT_FOUND");
}

async fn cancel_ends_a_running_stream_promptly(b: Binding) {
    let server = Server::start().await;
    let mut stream = server
        .stream(b, send_request("slow 20 200"))
        .await
        .unwrap_or_else(|e| panic!("stream: {}", e.body));
    let first = stream.next_event().await.expect("the task");
    let task = first.payload();
    assert_eq!(kind(&task), "task");
    let id = id_of(&task["task"]);
    let working = stream.next_event().await.expect("WORKING");
    assert_eq!(event_state(&working.payload()), Some("TASK_STATE_WORKING"));

    let canceled_at = Instant::now();
    let canceled = ok(server.cancel(b, &id).await);
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");
    let rest = stream.collect_to_end(Duration::from_secs(3)).await;
    let took = canceled_at.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "the stream ended {took:?} after the cancel (the task alone would run 4 s)"
    );
    let last = rest
        .last()
        .expect("the stream carries the cancellation")
        .payload();
    assert_eq!(event_state(&last), Some("TASK_STATE_CANCELED"), "{last}");
    assert_eq!(kind(&last), "statusUpdate");
    let chunks = rest
        .iter()
        .filter(|e| kind(&e.payload()) == "artifactUpdate")
        .count();
    assert!(chunks < 20, "the work stopped early ({chunks} chunks)");
    // Nothing after the terminal event, and the task stays canceled.
    let got = ok(server.get_task(b, &id, None).await);
    assert_eq!(state(&got), "TASK_STATE_CANCELED", "{got}");
    assert!(artifacts(&got)
        .iter()
        .all(|a| a["parts"].as_array().unwrap().len() < 20));
}

async fn subscribe_sends_the_snapshot_first(b: Binding) {
    let server = Server::start().await;
    let response = ok(server
        .send(
            b,
            send_request_with("slow 5 100", json!({"returnImmediately": true})),
        )
        .await);
    let id = id_of(task_of(&response));
    let mut stream = server
        .subscribe(b, &id, None)
        .await
        .unwrap_or_else(|e| panic!("subscribe: {}", e.body));
    assert!(stream
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/event-stream")));
    let events = stream.collect_to_end(EVENT_TIMEOUT).await;
    let first = events.first().expect("a snapshot").payload();
    assert_eq!(kind(&first), "task", "the first event is the Task: {first}");
    assert_eq!(id_of(&first["task"]), id);
    let seqs: Vec<u64> = events.iter().map(|e| e.seq()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "ids increase: {seqs:?}"
    );
    let last = events.last().unwrap().payload();
    assert_eq!(event_state(&last), Some("TASK_STATE_COMPLETED"), "{last}");
    for e in &events[1..] {
        let p = e.payload();
        assert_ne!(kind(&p), "task", "only one snapshot: {p}");
        let inner = p.as_object().unwrap().values().next().unwrap();
        assert_eq!(inner["taskId"], json!(id));
    }

    // A held task: the snapshot comes at once, then the follow-up's events, then the end.
    let held = server.send_text(b, "hold").await;
    let held_id = id_of(&held);
    let mut stream = match b {
        // REST also serves POST /tasks/{id}:subscribe.
        Binding::Rest => server
            .subscribe_with(b, reqwest::Method::POST, &held_id, None)
            .await
            .unwrap_or_else(|e| panic!("POST subscribe: {}", e.body)),
        Binding::JsonRpc => server.subscribe(b, &held_id, None).await.unwrap(),
    };
    let snapshot_event = stream.next_event().await.expect("snapshot");
    // The snapshot's id is the task's version: created (1), then INPUT_REQUIRED (2).
    assert_eq!(snapshot_event.seq(), 2, "{snapshot_event:?}");
    let snapshot = snapshot_event.payload();
    assert_eq!(kind(&snapshot), "task");
    assert_eq!(state(&snapshot["task"]), "TASK_STATE_INPUT_REQUIRED");
    ok(server.send(b, follow_up(&held_id, "go on")).await);
    let rest = stream.collect_to_end(EVENT_TIMEOUT).await;
    assert!(rest.iter().all(|e| e.seq() > 2), "{rest:#?}");
    let last = rest.last().expect("events after the follow-up").payload();
    assert_eq!(event_state(&last), Some("TASK_STATE_COMPLETED"), "{last}");
}

async fn subscribe_to_a_terminal_task_is_unsupported(b: Binding) {
    let server = Server::start().await;
    let done = server.send_text(b, "finished").await;
    err(server.subscribe(b, &id_of(&done), None).await).assert_is(
        -32004,
        400,
        "UNSUPPORTED_OPERATION",
    );
    err(server.subscribe(b, &new_id(), None).await).assert_is(-32001, 404, "TASK_NOT_FOUND");
}

async fn push_config_crud(b: Binding) {
    let server = Server::start().await;
    let held = server.send_text(b, "hold").await;
    let id = id_of(&held);
    let config = json!({
        "url": "http://127.0.0.1:9/hook",
        "token": "tok-crud",
        "authentication": {"scheme": "Bearer", "credentials": "secret-crud"},
    });
    let created = ok(server.create_push(b, &id, config).await);
    let typed: a2a_protocol::TaskPushNotificationConfig =
        serde_json::from_value(created.clone()).expect("a TaskPushNotificationConfig");
    assert!(!typed.id.is_empty(), "an id is assigned: {created}");
    assert_eq!(created["taskId"], json!(id));
    assert_eq!(created["url"], "http://127.0.0.1:9/hook");
    assert_eq!(created["token"], "tok-crud");
    assert_eq!(created["authentication"]["scheme"], "Bearer");
    let config_id = typed.id.clone();

    let got = ok(server.get_push(b, &id, &config_id).await);
    assert_eq!(got["id"], json!(config_id));
    assert_eq!(got["taskId"], json!(id));
    assert_eq!(got["url"], created["url"]);

    let second = ok(server
        .create_push(b, &id, json!({"url": "http://localhost:9/other"}))
        .await);
    assert_ne!(second["id"], created["id"], "ids are distinct");

    let list = ok(server.list_push(b, &id).await);
    let listed: Vec<&Value> = list["configs"]
        .as_array()
        .expect("configs")
        .iter()
        .collect();
    assert_eq!(listed.len(), 2, "{list}");
    assert!(listed.iter().any(|c| c["id"] == json!(config_id)));
    assert!(list.get("nextPageToken").is_some_and(|t| t == ""), "{list}");

    let deleted = ok(server.delete_push(b, &id, &config_id).await);
    match b {
        Binding::Rest => assert_eq!(deleted, json!({}), "REST delete answers {{}}"),
        Binding::JsonRpc => assert!(
            deleted == json!({}) || deleted.is_null(),
            "delete result is Empty: {deleted}"
        ),
    }
    let list = ok(server.list_push(b, &id).await);
    assert_eq!(
        list["configs"].as_array().map(|c| c.len()).unwrap_or(0),
        1,
        "{list}"
    );
    err(server.get_push(b, &id, &config_id).await).assert_is(-32001, 404, "TASK_NOT_FOUND");
    err(server.get_push(b, &id, &new_id()).await).assert_is(-32001, 404, "TASK_NOT_FOUND");
    // Deleting again succeeds (idempotent); a missing task does not.
    ok(server.delete_push(b, &id, &config_id).await);
    err(server.delete_push(b, &new_id(), &config_id).await).assert_is(
        -32001,
        404,
        "TASK_NOT_FOUND",
    );
    err(server
        .create_push(b, &new_id(), json!({"url": "http://127.0.0.1:9/x"}))
        .await)
    .assert_is(-32001, 404, "TASK_NOT_FOUND");
    err(server.list_push(b, &new_id()).await).assert_is(-32001, 404, "TASK_NOT_FOUND");
    // url is required.
    err(server.create_push(b, &id, json!({"token": "x"})).await).assert_is(
        -32602,
        400,
        "INVALID_PARAMS",
    );
}

async fn extended_card_is_not_offered(b: Binding) {
    let server = Server::start().await;
    err(server.extended_card(b).await).assert_is(-32004, 400, "UNSUPPORTED_OPERATION");
}

/// `tenant` (a path prefix on REST, a field on JSON-RPC) is a routing key; tasks are kept per
/// tenant and are invisible from another one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_prefix_routes_and_scoping() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let response = server
        .rest(
            reqwest::Method::POST,
            "/acme/message:send",
            Some(send_request("tenant echo")),
        )
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    let task = task_of(&response.body).clone();
    let id = id_of(&task);
    let got = server
        .rest(reqwest::Method::GET, &format!("/acme/tasks/{id}"), None)
        .await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_eq!(got.body, task);
    let rpc = server
        .rpc("GetTask", json!({"id": id, "tenant": "acme"}))
        .await;
    assert_eq!(rpc["result"], task, "{rpc}");
    // Not visible without the tenant, nor from another one.
    err(server.get_task(Binding::Rest, &id, None).await).assert_is(-32001, 404, "TASK_NOT_FOUND");
    err(server.get_task(Binding::JsonRpc, &id, None).await).assert_is(
        -32001,
        404,
        "TASK_NOT_FOUND",
    );
    let other = server
        .rest(reqwest::Method::GET, &format!("/other/tasks/{id}"), None)
        .await;
    assert_eq!(other.status, 404, "{}", other.body);
    let listed = server.rest(reqwest::Method::GET, "/acme/tasks", None).await;
    assert_eq!(ids(&listed.body), vec![id.clone()]);
    let root = ok(server.list_tasks(Binding::Rest, json!({})).await);
    assert!(ids(&root).is_empty(), "{root}");
}

/// Unknown request fields are ignored (the spec's SHOULD; a 0.3-style stray `metadata` on
/// GetTask must not break the call).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_request_fields_are_ignored() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let task = server.send_text(Binding::JsonRpc, "lenient").await;
    let id = id_of(&task);
    let got = server
        .rpc(
            "GetTask",
            json!({"id": id, "metadata": {}, "somethingNew": 1}),
        )
        .await;
    assert_eq!(got["result"], task, "{got}");
    let mut request = send_request("lenient too");
    request["futureField"] = json!({"x": 1});
    request["message"]["futureField"] = json!(true);
    let response = ok(server.send(Binding::Rest, request).await);
    assert_eq!(state(task_of(&response)), "TASK_STATE_COMPLETED");
}
