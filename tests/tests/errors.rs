//! Error answers on both bindings: codes, HTTP statuses and `ErrorInfo` reasons.

use a2a_e2e::*;
use reqwest::header::CONTENT_TYPE;
use reqwest::Method;
use serde_json::{json, Value};

both_bindings!(
    unknown_task_is_not_found,
    message_to_a_terminal_task_is_unsupported,
    context_mismatch_on_a_follow_up_is_invalid_params,
    missing_or_unsupported_version_is_rejected,
    invalid_message_is_invalid_params,
    streaming_calls_report_errors_before_the_stream,
);

async fn streaming_calls_report_errors_before_the_stream(b: Binding) {
    let server = Server::start().await;
    err(server.stream(b, follow_up(&new_id(), "x")).await).assert_is(-32001, 404, "TASK_NOT_FOUND");
    let done = server.send_text(b, "done").await;
    err(server.stream(b, follow_up(&id_of(&done), "more")).await).assert_is(
        -32004,
        400,
        "UNSUPPORTED_OPERATION",
    );
    let e = err(server
        .stream(b, json!({"message": {"role": "ROLE_USER"}}))
        .await);
    match b {
        Binding::JsonRpc => assert_eq!(e.code, Some(-32602), "{}", e.body),
        Binding::Rest => assert_eq!(e.http_status, 400, "{}", e.body),
    }
}

async fn unknown_task_is_not_found(b: Binding) {
    let server = Server::start().await;
    let missing = new_id();
    let e = err(server.get_task(b, &missing, None).await);
    e.assert_is(-32001, 404, "TASK_NOT_FOUND");
    let info = match b {
        Binding::JsonRpc => &e.body["data"][0],
        Binding::Rest => &e.body["error"]["details"][0],
    };
    assert_eq!(
        info["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
        "{}",
        e.body
    );
    assert_eq!(info["metadata"]["taskId"], json!(missing), "{}", e.body);
    if b == Binding::Rest {
        assert_eq!(e.body["error"]["status"], "NOT_FOUND");
    }
    // A message naming an unknown task: clients cannot create tasks with their own ids.
    err(server.send(b, follow_up(&missing, "hello")).await).assert_is(
        -32001,
        404,
        "TASK_NOT_FOUND",
    );
    let list = ok(server.list_tasks(b, json!({})).await);
    assert_eq!(list["tasks"], json!([]), "no task was created: {list}");
}

async fn message_to_a_terminal_task_is_unsupported(b: Binding) {
    let server = Server::start().await;
    for text in ["done", "fail"] {
        let task = server.send_text(b, text).await;
        assert!(is_terminal(state(&task)), "{task}");
        let id = id_of(&task);
        err(server.send(b, follow_up(&id, "more")).await).assert_is(
            -32004,
            400,
            "UNSUPPORTED_OPERATION",
        );
        let after = ok(server.get_task(b, &id, None).await);
        assert_eq!(after, task, "the terminal task did not change");
    }
}

async fn context_mismatch_on_a_follow_up_is_invalid_params(b: Binding) {
    let server = Server::start().await;
    let held = server.send_text(b, "hold").await;
    let id = id_of(&held);
    let mut request = follow_up(&id, "wrong context");
    request["message"]["contextId"] = json!(new_id());
    err(server.send(b, request).await).assert_is(-32602, 400, "INVALID_PARAMS");
    let after = ok(server.get_task(b, &id, None).await);
    assert_eq!(
        state(&after),
        "TASK_STATE_INPUT_REQUIRED",
        "the task is untouched: {after}"
    );
    assert_eq!(
        history(&after).len(),
        history(&held).len(),
        "nothing was recorded"
    );
    // The right contextId is accepted.
    let mut request = follow_up(&id, "right context");
    request["message"]["contextId"] = held["contextId"].clone();
    let response = ok(server.send(b, request).await);
    assert_eq!(state(task_of(&response)), "TASK_STATE_COMPLETED");
}

async fn missing_or_unsupported_version_is_rejected(b: Binding) {
    let server = Server::start().await;
    let body = send_request("no version");
    for version in [None, Some(""), Some("9.0"), Some("0.3")] {
        let builder = match b {
            Binding::JsonRpc => server
                .http()
                .post(server.jsonrpc_url())
                .header(CONTENT_TYPE, "application/json")
                .body(
                    json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": body})
                        .to_string(),
                ),
            Binding::Rest => server
                .http()
                .post(server.url("/message:send"))
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_string()),
        };
        let builder = match version {
            Some(v) => builder.header("A2A-Version", v),
            None => builder,
        };
        let response = server.send_raw(builder).await;
        match b {
            Binding::JsonRpc => {
                assert_eq!(response.status, 200, "{}", response.body);
                assert_eq!(response.body["id"], 7);
                assert_eq!(
                    response.body["error"]["code"], -32009,
                    "{version:?}: {}",
                    response.body
                );
                assert_eq!(
                    response.body["error"]["data"][0]["reason"],
                    "VERSION_NOT_SUPPORTED"
                );
            }
            Binding::Rest => {
                assert_eq!(response.status, 400, "{version:?}: {}", response.body);
                assert_eq!(
                    response.body["error"]["details"][0]["reason"], "VERSION_NOT_SUPPORTED",
                    "{}",
                    response.body
                );
            }
        }
    }
    let list = ok(server.list_tasks(b, json!({})).await);
    assert_eq!(list["tasks"], json!([]), "nothing ran: {list}");

    // The version may also come as a query parameter, and a patch number is tolerated.
    let with_query = match b {
        Binding::JsonRpc => server
            .http()
            .post(format!("{}?A2A-Version=1.0", server.jsonrpc_url()))
            .body(
                json!({"jsonrpc": "2.0", "id": 8, "method": "GetTask", "params": {"id": new_id()}})
                    .to_string(),
            ),
        Binding::Rest => server
            .http()
            .get(server.url(&format!("/tasks/{}?A2A-Version=1.0", new_id()))),
    }
    .header(CONTENT_TYPE, "application/json");
    let response = server.send_raw(with_query).await;
    match b {
        Binding::JsonRpc => assert_eq!(response.body["error"]["code"], -32001, "{}", response.body),
        Binding::Rest => assert_eq!(response.status, 404, "{}", response.body),
    }
}

async fn invalid_message_is_invalid_params(b: Binding) {
    let server = Server::start().await;
    let bad_requests = [
        json!({}),
        json!({"message": {"role": "ROLE_USER", "parts": [{"text": "no id"}]}}),
        json!({"message": {"messageId": new_id(), "role": "ROLE_USER", "parts": []}}),
        json!({"message": {"messageId": new_id(), "role": "ROLE_USER", "parts": [{"text": "a", "url": "http://x"}]}}),
        json!({"message": {"messageId": new_id(), "parts": [{"text": "no role"}]}}),
        json!({"message": user_message("x"), "configuration": {"historyLength": -1}}),
    ];
    for request in bad_requests {
        let e = err(server.send(b, request.clone()).await);
        assert_eq!(
            (e.code, e.http_status),
            match b {
                Binding::JsonRpc => (Some(-32602), 200),
                Binding::Rest => (None, 400),
            },
            "{request}: {}",
            e.body
        );
    }
    let task = server.send_text(b, "x").await;
    err(server.get_task(b, &id_of(&task), Some(-1)).await).assert_is(-32602, 400, "INVALID_PARAMS");
    err(server.list_tasks(b, json!({"historyLength": -1})).await).assert_is(
        -32602,
        400,
        "INVALID_PARAMS",
    );
    err(server
        .list_tasks(b, json!({"status": "TASK_STATE_UNSPECIFIED"}))
        .await)
    .assert_is(-32602, 400, "INVALID_PARAMS");
}

// ------------------------------------------------------------------ JSON-RPC envelope errors

async fn post_jsonrpc(server: &Server, content_type: &str, body: &str) -> RestResponse {
    server
        .send_raw(
            server
                .http()
                .post(server.jsonrpc_url())
                .header("A2A-Version", A2A_VERSION)
                .header(CONTENT_TYPE, content_type)
                .body(body.to_string()),
        )
        .await
}

#[tokio::test]
async fn jsonrpc_bad_json_is_a_parse_error() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let response = post_jsonrpc(
        &server,
        "application/json",
        "{\"jsonrpc\": \"2.0\", \"id\": 1, ",
    )
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.body["jsonrpc"], "2.0");
    assert_eq!(response.body["error"]["code"], -32700, "{}", response.body);
    assert!(
        response.body["id"].is_null(),
        "the id is unknown: {}",
        response.body
    );
}

#[tokio::test]
async fn jsonrpc_wrong_content_type_is_rejected() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": new_id()}})
        .to_string();
    let response = post_jsonrpc(&server, "text/plain", &body).await;
    assert_eq!(response.body["error"]["code"], -32005, "{}", response.body);
    assert_eq!(
        response.body["error"]["data"][0]["reason"], "CONTENT_TYPE_NOT_SUPPORTED",
        "{}",
        response.body
    );
    // Both JSON media types are accepted.
    for ct in [
        "application/json",
        "application/a2a+json",
        "application/json; charset=utf-8",
    ] {
        let response = post_jsonrpc(&server, ct, &body).await;
        assert_eq!(
            response.body["error"]["code"], -32001,
            "{ct}: {}",
            response.body
        );
    }
}

#[tokio::test]
async fn jsonrpc_unknown_method_and_bad_envelopes() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let response = server.rpc("NoSuchMethod", json!({})).await;
    assert_eq!(response["error"]["code"], -32601, "{response}");
    // 0.3 names are not served under 1.0.
    let response = server.rpc("message/send", send_request("x")).await;
    assert!(
        matches!(
            response["error"]["code"].as_i64(),
            Some(-32601) | Some(-32009)
        ),
        "{response}"
    );
    let response = post_jsonrpc(
        &server,
        "application/json",
        &json!({"jsonrpc": "1.0", "id": 4, "method": "GetTask", "params": {"id": "x"}}).to_string(),
    )
    .await;
    assert_eq!(response.body["error"]["code"], -32600, "{}", response.body);
    let response = post_jsonrpc(&server, "application/json", "[]").await;
    assert_eq!(
        response.body["error"]["code"], -32600,
        "batches are not served: {}",
        response.body
    );
    // Params of the wrong shape.
    let response = server.rpc("GetTask", json!({"id": 5})).await;
    assert_eq!(response["error"]["code"], -32602, "{response}");
}

#[tokio::test]
async fn jsonrpc_is_served_with_a_trailing_slash() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "id": "s", "method": "SendMessage", "params": send_request("slash")});
    let response = server
        .send_raw(
            server
                .http()
                .post(server.url("/jsonrpc/"))
                .header("A2A-Version", A2A_VERSION)
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_string()),
        )
        .await;
    assert_eq!(response.status, 200);
    assert_eq!(response.body["id"], "s");
    assert_eq!(
        state(task_of(&response.body["result"])),
        "TASK_STATE_COMPLETED"
    );
}

// ------------------------------------------------------------------------------ REST errors

#[tokio::test]
async fn rest_bad_json_and_wrong_content_type() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let response = server
        .send_raw(
            server
                .http()
                .post(server.url("/message:send"))
                .header("A2A-Version", A2A_VERSION)
                .header(CONTENT_TYPE, "application/json")
                .body("{not json"),
        )
        .await;
    assert_eq!(response.status, 400, "{}", response.body);
    assert_eq!(response.body["error"]["code"], 400);
    assert_eq!(
        response.body["error"]["status"], "INVALID_ARGUMENT",
        "{}",
        response.body
    );
    assert!(
        response
            .header("content-type")
            .is_some_and(|c| c.starts_with("application/json")),
        "REST errors are application/json"
    );

    let response = server
        .send_raw(
            server
                .http()
                .post(server.url("/message:send"))
                .header("A2A-Version", A2A_VERSION)
                .header(CONTENT_TYPE, "text/plain")
                .body(send_request("x").to_string()),
        )
        .await;
    assert_eq!(response.status, 415, "{}", response.body);
    assert!(
        response.body["error"].is_object(),
        "a Status body: {}",
        response.body
    );

    let response = server
        .send_raw(
            server
                .http()
                .post(server.url("/message:send"))
                .header("A2A-Version", A2A_VERSION)
                .header(CONTENT_TYPE, "application/a2a+json")
                .body(send_request("a2a json").to_string()),
        )
        .await;
    assert_eq!(
        response.status, 200,
        "application/a2a+json is accepted: {}",
        response.body
    );
    assert_eq!(state(task_of(&response.body)), "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn rest_unknown_route_is_not_found() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    let response = server.rest(Method::GET, "/no/such/route", None).await;
    assert_eq!(response.status, 404);
    let response = server
        .rest(
            Method::POST,
            &format!("/tasks/{}:frobnicate", new_id()),
            None,
        )
        .await;
    assert!(
        matches!(response.status, 400 | 404 | 405),
        "an unknown action is refused: {} {}",
        response.status,
        response.body
    );
    let _: Value = response.body;
}
