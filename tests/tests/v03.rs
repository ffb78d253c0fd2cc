//! A2A 0.3 clients on the same server (issue #16): the 0.3 JSON-RPC methods and the 0.3
//! HTTP+JSON routes under `/v1`, as a 0.3 client sends them (no `A2A-Version` header), the same
//! tasks seen from 1.0, version negotiation, and the switch that turns 0.3 off.

use a2a_e2e::*;
use reqwest::header::CONTENT_TYPE;
use reqwest::Method;
use serde_json::{json, Value};

/// A 0.3 JSON-RPC request to the JSON-RPC endpoint, with `version` as `A2A-Version` if given.
fn rpc03_request(
    c: &Client,
    method: &str,
    params: Value,
    version: Option<&str>,
) -> reqwest::RequestBuilder {
    let body = json!({"jsonrpc": "2.0", "id": "r-1", "method": method, "params": params});
    let mut builder = c
        .http()
        .post(c.jsonrpc_url())
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_string());
    if let Some(v) = version {
        builder = builder.header("A2A-Version", v);
    }
    builder
}

/// A 0.3 JSON-RPC call as a 0.3 client makes it (no `A2A-Version`); the whole response object.
async fn rpc03(c: &Client, method: &str, params: Value) -> Value {
    let response = c.send_raw(rpc03_request(c, method, params, None)).await;
    assert_eq!(response.status, 200, "{method}: {}", response.body);
    assert_eq!(response.body["id"], "r-1", "{method}: {}", response.body);
    response.body
}

#[track_caller]
fn result(response: &Value) -> &Value {
    assert!(response.get("error").is_none(), "an error: {response}");
    &response["result"]
}

fn message03(text: &str) -> Value {
    json!({"kind": "message", "messageId": new_id(), "role": "user",
           "parts": [{"kind": "text", "text": text}]})
}

fn send03(text: &str) -> Value {
    json!({"message": message03(text)})
}

/// Every event of a 0.3 stream (JSON-RPC framing), as its `result`.
async fn stream03(c: &Client, method: &str, params: Value) -> Vec<Value> {
    let mut stream = open_sse(Binding::JsonRpc, rpc03_request(c, method, params, None))
        .await
        .unwrap_or_else(|e| panic!("{method}: {}", e.body));
    stream
        .collect_to_end(EVENT_TIMEOUT)
        .await
        .iter()
        .map(SseEvent::payload)
        .collect()
}

/// A 0.3 REST call (`/v1/…`, no `A2A-Version`).
async fn rest03(c: &Client, method: Method, path: &str, body: Option<Value>) -> RestResponse {
    let mut builder = c.http().request(method, c.url(path));
    if let Some(body) = body {
        builder = builder
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
    }
    c.send_raw(builder).await
}

/// The 0.3 proto's SendMessageRequest, as a2a-sdk 0.3's RestTransport sends it.
fn proto_send(text: &str) -> Value {
    json!({"message": {"messageId": new_id(), "role": "ROLE_USER", "content": [{"text": text}]},
           "configuration": {"blocking": true}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_send_and_tasks_get_answer_in_the_03_dialect() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let sent = rpc03(&server, "message/send", send03("hello")).await;
    let task = result(&sent);
    assert_eq!(task["kind"], "task", "{task}");
    assert_eq!(task["status"]["state"], "completed", "{task}");
    assert_eq!(
        task["artifacts"][0]["parts"][0],
        json!({"kind": "text", "text": "hello"})
    );
    assert_eq!(task["history"][0]["role"], "user");
    assert_eq!(task["history"][0]["kind"], "message");
    let id = task["id"].as_str().unwrap();

    let got = rpc03(&server, "tasks/get", json!({"id": id, "historyLength": 0})).await;
    let got = result(&got);
    assert_eq!(got["id"], json!(id));
    assert_eq!(got["kind"], "task");
    assert_eq!(got["status"]["state"], "completed");
    assert!(got.get("history").is_none(), "{got}");

    // A 0.3 `blocking: false` returns at once, before the agent is done.
    let mut params = send03("slow 3 200");
    params["configuration"] = json!({"blocking": false});
    let quick = rpc03(&server, "message/send", params).await;
    let state = result(&quick)["status"]["state"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(state == "submitted" || state == "working", "{quick}");

    // Unknown task: -32001 as in every version.
    let missing = rpc03(&server, "tasks/get", json!({"id": new_id()})).await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_stream_ends_with_a_final_status_event() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let events = stream03(&server, "message/stream", send03("slow 3 20")).await;
    assert_eq!(events[0]["kind"], "task", "{events:?}");
    let last = events.last().unwrap();
    assert_eq!(last["kind"], "status-update", "{last}");
    assert_eq!(last["final"], true, "{last}");
    assert_eq!(last["status"]["state"], "completed", "{last}");
    for event in &events[..events.len() - 1] {
        assert_ne!(
            event["final"], true,
            "only the last event is final: {events:?}"
        );
        assert!(
            ["task", "status-update", "artifact-update"].contains(&event["kind"].as_str().unwrap()),
            "{event}"
        );
    }
    let chunk = events
        .iter()
        .find(|e| e["kind"] == "artifact-update")
        .expect("artifact events");
    assert_eq!(chunk["artifact"]["parts"][0]["kind"], "text", "{chunk}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resubscribe_and_cancel_a_held_task() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let held = rpc03(&server, "message/send", send03("hold")).await;
    let held = result(&held);
    assert_eq!(held["status"]["state"], "input-required");
    let id = held["id"].as_str().unwrap();

    let events = stream03(&server, "tasks/resubscribe", json!({"id": id})).await;
    assert_eq!(events[0]["kind"], "task", "{events:?}");
    assert_eq!(events[0]["status"]["state"], "input-required");

    let canceled = rpc03(&server, "tasks/cancel", json!({"id": id})).await;
    assert_eq!(
        result(&canceled)["status"]["state"],
        "canceled",
        "{canceled}"
    );
    let again = rpc03(&server, "tasks/cancel", json!({"id": id})).await;
    assert_eq!(again["error"]["code"], -32002, "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_config_set_get_list_delete() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let hook = Webhook::start().await;
    let held = rpc03(&server, "message/send", send03("hold")).await;
    let id = result(&held)["id"].as_str().unwrap().to_owned();

    let set = rpc03(
        &server,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": id, "pushNotificationConfig": {"url": hook.url, "token": "tok",
               "authentication": {"schemes": ["Bearer"], "credentials": "cred"}}}),
    )
    .await;
    let set = result(&set);
    assert_eq!(set["taskId"], json!(id), "{set}");
    let config = &set["pushNotificationConfig"];
    assert_eq!(config["url"], json!(hook.url));
    assert_eq!(config["authentication"]["schemes"], json!(["Bearer"]));
    let config_id = config["id"].as_str().expect("an id is assigned").to_owned();

    let got = rpc03(
        &server,
        "tasks/pushNotificationConfig/get",
        json!({"id": id, "pushNotificationConfigId": config_id}),
    )
    .await;
    // Secrets are written, never read back (in every version): the config without its
    // token and credentials.
    let mut read_back = set.clone();
    read_back["pushNotificationConfig"]
        .as_object_mut()
        .unwrap()
        .remove("token");
    read_back["pushNotificationConfig"]["authentication"]
        .as_object_mut()
        .unwrap()
        .remove("credentials");
    assert_eq!(result(&got), &read_back);
    // Without a config id: the task's config.
    let got = rpc03(
        &server,
        "tasks/pushNotificationConfig/get",
        json!({"id": id}),
    )
    .await;
    assert_eq!(result(&got), &read_back);

    let listed = rpc03(
        &server,
        "tasks/pushNotificationConfig/list",
        json!({"id": id}),
    )
    .await;
    assert_eq!(result(&listed), &json!([read_back]));

    let deleted = rpc03(
        &server,
        "tasks/pushNotificationConfig/delete",
        json!({"id": id, "pushNotificationConfigId": config_id}),
    )
    .await;
    assert_eq!(result(&deleted), &Value::Null);
    let listed = rpc03(
        &server,
        "tasks/pushNotificationConfig/list",
        json!({"id": id}),
    )
    .await;
    assert_eq!(result(&listed), &json!([]));
    // A config that is not there: TaskNotFound's code, with a message naming the config.
    let missing = rpc03(
        &server,
        "tasks/pushNotificationConfig/get",
        json!({"id": id, "pushNotificationConfigId": "default"}),
    )
    .await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("config default"),
        "{missing}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_are_negotiated_per_method() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    // A 0.3 method that says it is 1.0.
    let r = server
        .send_raw(rpc03_request(
            &server,
            "message/send",
            send03("x"),
            Some("1.0"),
        ))
        .await;
    assert_eq!(r.body["error"]["code"], -32009, "{}", r.body);
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("message/send") && message.contains("1.0"),
        "{message}"
    );
    // 0.3 said explicitly is 0.3.
    let r = server
        .send_raw(rpc03_request(
            &server,
            "message/send",
            send03("hello"),
            Some("0.3"),
        ))
        .await;
    assert_eq!(
        result(&r.body)["status"]["state"],
        "completed",
        "{}",
        r.body
    );
    // A 1.0 method without the header means 0.3: refused, naming the versions.
    let r = server
        .send_raw(rpc03_request(
            &server,
            "SendMessage",
            send_request("x"),
            None,
        ))
        .await;
    assert_eq!(r.body["error"]["code"], -32009, "{}", r.body);
    assert!(
        r.body["error"]["message"].as_str().unwrap().contains("0.3"),
        "{}",
        r.body
    );
    // A 0.3 stream sent as 1.0: the error is the stream's only event.
    let Err(e) = open_sse(
        Binding::JsonRpc,
        rpc03_request(&server, "message/stream", send03("x"), Some("1.0")),
    )
    .await
    else {
        panic!("a 0.3 stream sent as 1.0 is refused");
    };
    assert_eq!(e.code, Some(-32009), "{}", e.body);
    // A 1.0 request on a 0.3 REST route is a 1.0 request (of the tenant `v1`, see below): a
    // 0.3 body is refused as 1.0 refuses it, with the 1.0 error (google.rpc.Status).
    let r = server
        .send_raw(
            server
                .http()
                .post(server.url("/v1/message:send"))
                .header("A2A-Version", "1.0")
                .header(CONTENT_TYPE, "application/json")
                .body(proto_send("x").to_string()),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.body["error"]["status"], "INVALID_ARGUMENT", "{}", r.body);
    assert_eq!(r.body["error"]["code"], 400, "{}", r.body);
}

/// A REST request under `/v1` that says `A2A-Version: version`.
async fn rest_v1(
    c: &Client,
    method: Method,
    path: &str,
    version: &str,
    body: Option<Value>,
) -> RestResponse {
    let mut builder = c
        .http()
        .request(method, c.url(path))
        .header("A2A-Version", version);
    if let Some(body) = body {
        builder = builder
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
    }
    c.send_raw(builder).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_0_request_under_v1_is_one_of_the_tenant_v1() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    // 1.0 clients send A2A-Version, 0.3 clients none: `/v1/message:send` with 1.0 is the
    // SendMessage of the tenant `v1`, whole, not half shadowed by the 0.3 route.
    let sent = rest_v1(
        &server,
        Method::POST,
        "/v1/message:send",
        "1.0",
        Some(send_request("hello")),
    )
    .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let task = &sent.body["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_COMPLETED",
        "{}",
        sent.body
    );
    let id = task["id"].as_str().expect("a task id").to_owned();
    let got = rest_v1(
        &server,
        Method::GET,
        &format!("/v1/tasks/{id}"),
        "1.0",
        None,
    )
    .await;
    assert_eq!(
        (got.status, &got.body["id"]),
        (200, &json!(id)),
        "{}",
        got.body
    );
    let listed = rest_v1(&server, Method::GET, "/v1/tasks", "1.0", None).await;
    assert_eq!(listed.body["tasks"][0]["id"], json!(id), "{}", listed.body);
    // The same task to JSON-RPC with the tenant `v1`; without it, another partition.
    let rpc = |params: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": params});
        server
            .http()
            .post(server.jsonrpc_url())
            .header("A2A-Version", "1.0")
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string())
    };
    let r = server
        .send_raw(rpc(json!({"id": id, "tenant": "v1"})))
        .await;
    assert_eq!(result(&r.body)["id"], json!(id), "{}", r.body);
    let r = server.send_raw(rpc(json!({"id": id}))).await;
    assert_eq!(r.body["error"]["code"], -32001, "{}", r.body);
    // A 0.3 client (no header) on the same route is served 0.3, outside the tenant.
    let r = rest03(&server, Method::GET, &format!("/v1/tasks/{id}"), None).await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(
        r.body["code"], -32001,
        "the 0.3 SDKs' flat error: {}",
        r.body
    );

    // Every 1.0 error on these routes is the 1.0 REST error.
    let missing = rest_v1(
        &server,
        Method::GET,
        &format!("/v1/tasks/{}", new_id()),
        "1.0",
        None,
    )
    .await;
    assert_eq!(missing.status, 404, "{}", missing.body);
    assert_eq!(
        missing.body["error"]["status"], "NOT_FOUND",
        "{}",
        missing.body
    );
    let card = rest_v1(&server, Method::GET, "/v1/card", "1.0", None).await;
    assert_eq!(card.status, 404, "{}", card.body);
    assert_eq!(card.body["error"]["code"], 404, "{}", card.body);
    let later = rest_v1(
        &server,
        Method::GET,
        &format!("/v1/tasks/{id}"),
        "2.0",
        None,
    )
    .await;
    assert_eq!(
        later.body["error"]["details"][0]["reason"], "VERSION_NOT_SUPPORTED",
        "{}",
        later.body
    );
    let cancel = rest_v1(
        &server,
        Method::POST,
        &format!("/v1/tasks/{id}:cancel"),
        "1.0",
        Some(json!({})),
    )
    .await;
    assert_eq!(
        cancel.body["error"]["details"][0]["reason"], "TASK_NOT_CANCELABLE",
        "{}",
        cancel.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_task_for_03_and_1_0_clients() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    // 0.3 starts it, 1.0 reads it, follows it up, and 0.3 reads the result.
    let held = rpc03(&server, "message/send", send03("hold")).await;
    let id = result(&held)["id"].as_str().unwrap().to_owned();
    let task = ok(server.get_task(Binding::JsonRpc, &id, None).await);
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    let mut subscribed = server
        .subscribe(Binding::Rest, &id, None)
        .await
        .unwrap_or_else(|e| panic!("{}", e.body));
    let first = subscribed
        .next_within(EVENT_TIMEOUT)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.payload()["task"]["id"], json!(id));
    let done = ok(server.send(Binding::Rest, follow_up(&id, "finish")).await);
    assert_eq!(state(task_of(&done)), "TASK_STATE_COMPLETED");
    let got = rpc03(&server, "tasks/get", json!({"id": id})).await;
    let got = result(&got);
    assert_eq!(got["status"]["state"], "completed");
    assert_eq!(got["artifacts"][0]["parts"][0]["text"], "finish");
    let users = got["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(
        users, 2,
        "both versions' messages are in one history: {got}"
    );

    // 1.0 starts one, 0.3 (JSON-RPC and REST) reads it.
    let sent = server.send_text(Binding::JsonRpc, "hello").await;
    let id = id_of(&sent);
    let got = rpc03(&server, "tasks/get", json!({"id": id})).await;
    assert_eq!(result(&got)["kind"], "task");
    let got = rest03(&server, Method::GET, &format!("/v1/tasks/{id}"), None).await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_eq!(got.body["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(got.body["history"][0]["content"][0]["text"], "hello");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_03_rest_routes_speak_the_03_proto() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let sent = rest03(
        &server,
        Method::POST,
        "/v1/message:send",
        Some(proto_send("hello")),
    )
    .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    let task = &sent.body["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["artifacts"][0]["parts"][0], json!({"text": "hello"}));
    assert_eq!(task["history"][0]["role"], "ROLE_USER");
    assert!(task.get("kind").is_none());
    let id = task["id"].as_str().unwrap();
    let got = rest03(
        &server,
        Method::GET,
        &format!("/v1/tasks/{id}?historyLength=1"),
        None,
    )
    .await;
    assert_eq!(got.body["id"], json!(id), "{}", got.body);

    // Cancel: the British spelling of the 0.3 proto.
    let held = rest03(
        &server,
        Method::POST,
        "/v1/message:send",
        Some(proto_send("hold")),
    )
    .await;
    let held_id = held.body["task"]["id"].as_str().unwrap().to_owned();
    let hook = Webhook::start().await;
    let created = rest03(
        &server,
        Method::POST,
        &format!("/v1/tasks/{held_id}/pushNotificationConfigs"),
        Some(
            // An empty `authentication` is proto3's unset message (the 0.3 TCK sends it).
            json!({"parent": format!("tasks/{held_id}"), "configId": "cfg-1",
                    "config": {"pushNotificationConfig": {"url": hook.url, "authentication": {}}}}),
        ),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(
        created.body,
        json!({"name": format!("tasks/{held_id}/pushNotificationConfigs/cfg-1"),
               "pushNotificationConfig": {"id": "cfg-1", "url": hook.url}})
    );
    let path = format!("/v1/tasks/{held_id}/pushNotificationConfigs");
    let listed = rest03(&server, Method::GET, &path, None).await;
    assert_eq!(
        listed.body["configs"],
        json!([created.body]),
        "{}",
        listed.body
    );
    let got = rest03(&server, Method::GET, &format!("{path}/cfg-1"), None).await;
    assert_eq!(got.body, created.body);
    let deleted = rest03(&server, Method::DELETE, &format!("{path}/cfg-1"), None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);

    let canceled = rest03(
        &server,
        Method::POST,
        &format!("/v1/tasks/{held_id}:cancel"),
        Some(json!({"name": format!("tasks/{held_id}")})),
    )
    .await;
    assert_eq!(
        canceled.body["status"]["state"], "TASK_STATE_CANCELLED",
        "{}",
        canceled.body
    );

    // Streams: wrapped events, `final` on the last status event.
    let mut stream = open_sse(
        Binding::Rest,
        server
            .http()
            .post(server.url("/v1/message:stream"))
            .header(CONTENT_TYPE, "application/json")
            .body(proto_send("slow 2 20").to_string()),
    )
    .await
    .unwrap_or_else(|e| panic!("{}", e.body));
    let events: Vec<Value> = stream
        .collect_to_end(EVENT_TIMEOUT)
        .await
        .iter()
        .map(SseEvent::payload)
        .collect();
    assert!(events[0].get("task").is_some(), "{events:?}");
    let last = &events.last().unwrap()["statusUpdate"];
    assert_eq!(last["final"], true, "{events:?}");
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED");

    // The 0.3 card route.
    let card = rest03(&server, Method::GET, "/v1/card", None).await;
    assert_eq!(card.status, 200);
    assert_eq!(card.body["protocolVersion"], "0.3.0", "{}", card.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_declares_the_03_interfaces_and_fields() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let card = rest03(&server, Method::GET, "/.well-known/agent-card.json", None)
        .await
        .body;
    // Still a valid 1.0 card.
    let _: a2a_protocol::AgentCard =
        serde_json::from_value(card.clone()).expect("the card parses as an AgentCard");
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    let versions: Vec<&str> = interfaces
        .iter()
        .map(|i| i["protocolVersion"].as_str().unwrap())
        .collect();
    // 1.0, the A2A 1.1 draft on the same URLs, then 0.3.
    assert_eq!(
        versions,
        ["1.0", "1.0", "1.1", "1.1", "0.3", "0.3"],
        "{card}"
    );
    assert_eq!(card["url"], json!(server.jsonrpc_url()), "{card}");
    assert_eq!(card["preferredTransport"], "JSONRPC");
    assert_eq!(card["protocolVersion"], "0.3.0");
    assert_eq!(
        card["additionalInterfaces"][1],
        json!({"url": server.base(), "transport": "HTTP+JSON"})
    );
    assert_eq!(card["supportsAuthenticatedExtendedCard"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_03_off_its_requests_get_what_a_1_0_server_answers() {
    if !store_ready() {
        return;
    }
    let server = Server::start_with_env(&[("A2A_PROTOCOL_0_3", "off")]).await;
    let r = rpc03(&server, "message/send", send03("hello")).await;
    assert_eq!(r["error"]["code"], -32009, "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("0.3"),
        "{r}"
    );
    let r = rest03(
        &server,
        Method::POST,
        "/v1/message:send",
        Some(proto_send("x")),
    )
    .await;
    assert!(
        r.status == 400 || r.status == 404,
        "{} {}",
        r.status,
        r.body
    );
    let r = rest03(&server, Method::GET, "/v1/card", None).await;
    assert_ne!(r.status, 200, "{}", r.body);
    let card = rest03(&server, Method::GET, "/.well-known/agent-card.json", None)
        .await
        .body;
    assert!(
        card["supportedInterfaces"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["protocolVersion"] == "1.0" || i["protocolVersion"] == "1.1"),
        "{card}"
    );
    assert!(
        card.get("url").is_none() && card.get("additionalInterfaces").is_none(),
        "{card}"
    );
    // The early protocol stays on.
    let r = rpc03(
        &server,
        "tasks/send",
        json!({"id": new_id(), "message": {"role": "user", "parts": [{"type": "text", "text": "hello"}]}}),
    )
    .await;
    assert_eq!(result(&r)["status"]["state"], "completed", "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_to_a_03_config_carry_the_03_task() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let mut hook03 = Webhook::start().await;
    let mut hook10 = Webhook::start().await;
    let held = rpc03(&server, "message/send", send03("hold")).await;
    let id = result(&held)["id"].as_str().unwrap().to_owned();
    let set = rpc03(
        &server,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": id, "pushNotificationConfig": {"url": hook03.url, "token": "t03"}}),
    )
    .await;
    result(&set);
    // A 1.0 client's config on the same task keeps 1.0 bodies, and does not see the
    // version the other config was set with (stored as `x-a2a-lambda-generation`).
    let created = ok(server
        .create_push(Binding::JsonRpc, &id, json!({"url": hook10.url}))
        .await);
    let listed = ok(server.list_push(Binding::Rest, &id).await);
    assert!(
        !listed.to_string().contains("generation") && !created.to_string().contains("generation"),
        "{listed}"
    );

    let mut params = send03("finish");
    params["message"]["taskId"] = json!(id);
    let done = rpc03(&server, "message/send", params).await;
    assert_eq!(result(&done)["status"]["state"], "completed", "{done}");

    let pushes = hook03
        .until(EVENT_TIMEOUT, |p| {
            p.json()["status"]["state"] == "completed"
        })
        .await;
    for push in &pushes {
        let body = push.json();
        assert_eq!(body["kind"], "task", "{body}");
        assert_eq!(body["id"], json!(id), "{body}");
        assert_eq!(push.header("x-a2a-notification-token"), Some("t03"));
    }
    let last = pushes.last().unwrap().json();
    assert_eq!(
        last["artifacts"][0]["parts"][0],
        json!({"kind": "text", "text": "finish"})
    );

    let pushes = hook10
        .until(EVENT_TIMEOUT, |p| {
            p.json()["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        })
        .await;
    for push in &pushes {
        let _: a2a_protocol::StreamResponse =
            serde_json::from_value(push.json()).expect("1.0 configs get StreamResponses");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_03_rest_routes_answer_as_the_03_sdks_expect() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    // Errors: the flat JSON-RPC-style body the 0.3 JS client types by `code`.
    let missing = rest03(
        &server,
        Method::GET,
        &format!("/v1/tasks/{}", new_id()),
        None,
    )
    .await;
    assert_eq!(missing.status, 404, "{}", missing.body);
    assert_eq!(missing.body["code"], -32001, "{}", missing.body);
    assert!(missing.body["message"].is_string());
    let held = rest03(
        &server,
        Method::POST,
        "/v1/message:send",
        Some(proto_send("hold")),
    )
    .await;
    let id = held.body["task"]["id"].as_str().unwrap().to_owned();
    let cancel = format!("/v1/tasks/{id}:cancel");
    assert_eq!(
        rest03(&server, Method::POST, &cancel, None).await.status,
        200
    );
    let again = rest03(&server, Method::POST, &cancel, None).await;
    assert_eq!(
        (again.status, &again.body["code"]),
        (409, &json!(-32002)),
        "{}",
        again.body
    );

    // A configuration without `blocking` is the proto3 default, false: the send returns at once.
    let mut body = proto_send("slow 3 200");
    body["configuration"] = json!({});
    let quick = rest03(&server, Method::POST, "/v1/message:send", Some(body)).await;
    let state = quick.body["task"]["status"]["state"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        state == "TASK_STATE_SUBMITTED" || state == "TASK_STATE_WORKING",
        "{}",
        quick.body
    );

    // The proto's own (snake_case) field names are accepted, as ProtoJSON parsers do.
    let snake = json!({"message": {"message_id": new_id(), "role": "ROLE_USER",
        "content": [{"text": "hello"}]}, "configuration": {"history_length": 0, "blocking": true}});
    let sent = rest03(&server, Method::POST, "/v1/message:send", Some(snake)).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    assert_eq!(
        sent.body["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{}",
        sent.body
    );
    assert!(sent.body["task"].get("history").is_none(), "{}", sent.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_is_negotiated_by_a2a_version() {
    if !store_ready() {
        return;
    }
    let issuer = a2a_e2e::issuer::TestIssuer::start().await;
    let server = Server::start_with_env(&[
        ("A2A_AUTH", "jwt"),
        ("A2A_JWT_ISSUER", &issuer.issuer),
        ("A2A_JWT_AUDIENCE", a2a_e2e::issuer::AUDIENCE),
    ])
    .await;
    let fetch = |version: Option<&'static str>| {
        let mut builder = server
            .http()
            .get(server.url("/.well-known/agent-card.json"));
        if let Some(v) = version {
            builder = builder.header("A2A-Version", v);
        }
        server.send_raw(builder)
    };
    // No header means 0.3: the 0.3 fields, and each scheme spelt for 0.3 parsers too.
    let v03 = fetch(None).await;
    assert_eq!(v03.header("vary"), Some("A2A-Version"));
    assert_eq!(v03.body["protocolVersion"], "0.3.0", "{}", v03.body);
    let bearer = &v03.body["securitySchemes"]["bearer"];
    assert_eq!(
        (&bearer["type"], &bearer["scheme"]),
        (&json!("http"), &json!("Bearer"))
    );
    assert!(bearer.get("httpAuthSecurityScheme").is_some(), "{bearer}");
    // A 1.0 client gets the plain 1.0 card: no scheme carries a 0.3 `type` (the JS 1.x
    // resolver reads such a card as 0.3-era), and no 0.3 top-level fields.
    let v1 = fetch(Some("1.0")).await;
    assert_eq!(v1.header("vary"), Some("A2A-Version"));
    let schemes = v1.body["securitySchemes"].as_object().unwrap();
    assert!(
        schemes.values().all(|s| s.get("type").is_none()),
        "{}",
        v1.body
    );
    for legacy in [
        "url",
        "protocolVersion",
        "preferredTransport",
        "additionalInterfaces",
        "security",
    ] {
        assert!(v1.body.get(legacy).is_none(), "{legacy}: {}", v1.body);
    }
    let _: a2a_protocol::AgentCard = serde_json::from_value(v1.body.clone()).expect("a 1.0 card");
    assert_ne!(v1.header("etag"), v03.header("etag"));
}

/// Issue 46, defect 7: a 0.3 field of the wrong type is -32602 and creates nothing, `parts` as
/// an object included (it was read as python-a2a's one `content` object and made a task).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_types_in_03_fields_are_invalid_params_and_create_nothing() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let text = json!({"kind": "text", "text": "hello"});
    let with = |key: &str, value: Value| {
        let mut params = send03("hello");
        params["message"][key] = value;
        params
    };
    let mut blocking = send03("hello");
    blocking["configuration"] = json!({"blocking": "false"});
    let mut schemes = send03("hello");
    schemes["configuration"] = json!({"pushNotificationConfig": {"url": "http://127.0.0.1:9/x",
        "authentication": {"schemes": "Bearer", "credentials": "c"}}});
    for params in [
        with("parts", text.clone()),
        with("parts", json!("hello")),
        with("parts", json!([{"kind": 7, "text": "hello"}])),
        with("kind", json!("task")),
        blocking,
        schemes,
    ] {
        let answer = rpc03(&server, "message/send", params.clone()).await;
        assert_eq!(answer["error"]["code"], -32602, "{params}: {answer}");
    }
    let list = ok(server.list_tasks(Binding::JsonRpc, json!({})).await);
    assert_eq!(list["tasks"], json!([]), "no task was created: {list}");

    // The push-config references too: a config id that is not a string is not "none".
    let held = rpc03(&server, "message/send", send03("hold")).await;
    let id = result(&held)["id"].as_str().unwrap().to_owned();
    for method in [
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/delete",
    ] {
        let answer = rpc03(
            &server,
            method,
            json!({"id": id, "pushNotificationConfigId": 5}),
        )
        .await;
        assert_eq!(answer["error"]["code"], -32602, "{method}: {answer}");
    }
}

/// Issue 46, defect 9: a config set without an id is read back as the 0.3 SDKs' servers answer:
/// named by the task's id, and returned to the A2A TCK 0.3's get, which names it `default`
/// (a2a-python's 0.3 server reads no config id and answers the task's config).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_set_without_an_id_is_read_back_as_the_03_tck_reads_it() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let hook = Webhook::start().await;
    let held = rpc03(&server, "message/send", send03("hold")).await;
    let id = result(&held)["id"].as_str().unwrap().to_owned();
    let set = rpc03(
        &server,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": id, "pushNotificationConfig": {"url": hook.url}}),
    )
    .await;
    let set = result(&set).clone();
    assert_eq!(set["pushNotificationConfig"]["id"], json!(id), "{set}");
    for params in [
        json!({"id": id, "pushNotificationConfigId": "default"}),
        json!({"id": id, "pushNotificationConfigId": id}),
        json!({"id": id}),
    ] {
        let got = rpc03(&server, "tasks/pushNotificationConfig/get", params.clone()).await;
        assert_eq!(result(&got), &set, "{params}");
    }
    // Set again without an id: the same config, replaced (the SDKs' servers do the same).
    let again = rpc03(
        &server,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": id, "pushNotificationConfig": {"url": format!("{}/2", hook.url)}}),
    )
    .await;
    assert!(again.get("error").is_none(), "{again}");
    let listed = rpc03(
        &server,
        "tasks/pushNotificationConfig/list",
        json!({"id": id}),
    )
    .await;
    assert_eq!(
        result(&listed).as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    // Another task's config is never the answer.
    let other = rpc03(&server, "message/send", send03("hold")).await;
    let other = result(&other)["id"].as_str().unwrap().to_owned();
    let missing = rpc03(
        &server,
        "tasks/pushNotificationConfig/get",
        json!({"id": other, "pushNotificationConfigId": "default"}),
    )
    .await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
}
