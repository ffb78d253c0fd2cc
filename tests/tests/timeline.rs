//! The A2A 1.1 draft's task timeline (spec `dev-1.1` §3.2.8, ADR-002), for clients that say
//! `A2A-Version: 1.1`, on both bindings (and both stores, with `A2A_E2E_STORE=dynamodb`):
//! `timeline` entries (client messages and agent statuses at their generations),
//! artifacts' `startGeneration`/`endGeneration`, `timelineLength` on GetTask, SendMessage and
//! ListTasks. A 1.0 client sees none of it.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use a2a_e2e::versioned::{call, generation};
use a2a_e2e::*;
use reqwest::header::CONTENT_TYPE;
use serde_json::{json, Value};

both_bindings!(
    the_timeline_records_the_interaction_for_1_1_clients_only,
    artifacts_are_placed_between_entries_by_their_generations,
    an_artifact_still_streaming_has_no_end_generation,
    timeline_length_keeps_the_latest_entries,
    an_invalid_timeline_length_is_invalid_params_and_changes_nothing,
    a_stream_opens_with_the_task_and_its_timeline,
    a_1_1_config_is_pushed_the_task_with_its_timeline,
);

/// GetTask as a client of `version`.
async fn get_task(
    server: &Client,
    b: Binding,
    version: &str,
    params: Value,
) -> Result<Value, ApiError> {
    call(server, b, version, "GetTask", params).await
}

/// ListTasks as a client of `version`.
async fn list_tasks(
    server: &Client,
    b: Binding,
    version: &str,
    params: Value,
) -> Result<Value, ApiError> {
    call(server, b, version, "ListTasks", params).await
}

/// The task once it is past generation `current` (a 1.1 long poll).
async fn past(server: &Client, b: Binding, id: &str, current: i64) -> Value {
    ok(get_task(
        server,
        b,
        "1.1",
        json!({"id": id, "currentGeneration": current.to_string()}),
    )
    .await)
}

/// `timeline` of a task (empty when absent).
fn timeline(task: &Value) -> Vec<Value> {
    task.get("timeline")
        .map(|t| t.as_array().unwrap().clone())
        .unwrap_or_default()
}

/// (kind, generation) of each entry: "message" or the status's state.
fn shape(task: &Value) -> Vec<(String, i64)> {
    timeline(task)
        .iter()
        .map(|entry| {
            let kind = match (entry.get("message"), entry.get("status")) {
                (Some(_), None) => "message".to_owned(),
                (None, Some(status)) => status["state"].as_str().unwrap().to_owned(),
                _ => panic!("an entry is a message or a status: {entry}"),
            };
            (kind, generation(entry))
        })
        .collect()
}

/// A task parked in INPUT_REQUIRED, then completed by a follow-up (both sent as 1.1): its id,
/// and the two messages' ids.
async fn held_then_done(server: &Client, b: Binding) -> (String, String, String) {
    let first = send_request("hold");
    let first_id = first["message"]["messageId"].as_str().unwrap().to_owned();
    let sent = ok(call(server, b, "1.1", "SendMessage", first).await);
    let task = task_of(&sent);
    assert_eq!(state(task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    let id = id_of(task);
    let reply = follow_up(&id, "done");
    let reply_id = reply["message"]["messageId"].as_str().unwrap().to_owned();
    let done = ok(call(server, b, "1.1", "SendMessage", reply).await);
    assert_eq!(state(task_of(&done)), "TASK_STATE_COMPLETED", "{done}");
    (id, first_id, reply_id)
}

async fn the_timeline_records_the_interaction_for_1_1_clients_only(b: Binding) {
    let server = Server::start().await;
    let (id, first_id, reply_id) = held_then_done(&server, b).await;
    let got = ok(get_task(&server, b, "1.1", json!({"id": id})).await);
    let entries = timeline(&got);
    let shape = shape(&got);
    // The creation (1): the client's message, then SUBMITTED; the agent's question (2); the
    // client's reply (3), which advances the generation too; then the agent's statuses.
    assert_eq!(
        shape[..4],
        [
            ("message".to_owned(), 1),
            ("TASK_STATE_SUBMITTED".to_owned(), 1),
            ("TASK_STATE_INPUT_REQUIRED".to_owned(), 2),
            ("message".to_owned(), 3),
        ],
        "{got}"
    );
    assert_eq!(entries[0]["message"]["messageId"], first_id.as_str());
    assert_eq!(entries[0]["message"]["role"], "ROLE_USER");
    let question = &entries[2]["status"]["message"];
    assert_eq!(question["role"], "ROLE_AGENT", "{got}");
    assert!(question["parts"][0]["text"]
        .as_str()
        .unwrap()
        .contains("on hold"));
    assert_eq!(entries[3]["message"]["messageId"], reply_id.as_str());
    // Ordered by generation, ending with the status the task stands at.
    assert!(shape.windows(2).all(|w| w[0].1 <= w[1].1), "{shape:?}");
    let (last_state, last_generation) = shape.last().unwrap();
    assert_eq!(last_state, "TASK_STATE_COMPLETED");
    assert_eq!(*last_generation, generation(&got), "{got}");
    // History is still there for 1.1 clients (deprecated, not gone).
    assert!(!got["history"].as_array().unwrap().is_empty(), "{got}");

    // SendMessage's and ListTasks' tasks carry the same projection.
    let listed = ok(list_tasks(&server, b, "1.1", json!({"timelineLength": 100})).await);
    let in_list = task_in(&listed, &id);
    assert_eq!(in_list["timeline"], got["timeline"], "{listed}");

    // A 1.0 client: the same task, the same requests, nothing of the timeline.
    let got = ok(get_task(&server, b, "1.0", json!({"id": id, "timelineLength": 5})).await);
    assert!(got.get("timeline").is_none(), "{got}");
    let listed = ok(list_tasks(
        &server,
        b,
        "1.0",
        json!({"timelineLength": 5, "includeArtifacts": true}),
    )
    .await);
    let sent = ok(call(&server, b, "1.0", "SendMessage", send_request("hello")).await);
    for answer in [&got, &listed, &sent] {
        let text = answer.to_string();
        for field in ["timeline", "startGeneration", "endGeneration", "generation"] {
            assert!(!text.contains(field), "{field} in a 1.0 answer: {text}");
        }
    }
}

async fn artifacts_are_placed_between_entries_by_their_generations(b: Binding) {
    let server = Server::start().await;
    // Three chunks, the last marked lastChunk, then COMPLETED.
    let sent = ok(call(&server, b, "1.1", "SendMessage", send_request("slow 3 0")).await);
    let task = task_of(&sent);
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{task}");
    let artifact = &task["artifacts"][0];
    let start = generation_of(artifact, "startGeneration");
    let end = generation_of(artifact, "endGeneration");
    assert_eq!(
        end - start,
        2,
        "three chunks, one generation each: {artifact}"
    );
    // No entry at an artifact's generations: the gaps are the artifact's updates.
    let shape = shape(task);
    assert!(
        shape.iter().all(|(_, g)| !(start..=end).contains(g)),
        "{shape:?} around {start}..={end}"
    );
    assert!(shape.iter().any(|(_, g)| *g < start), "{shape:?}");
    assert!(shape.iter().any(|(_, g)| *g > end), "{shape:?}");
    // GetTask's task agrees.
    let got = ok(get_task(&server, b, "1.1", json!({"id": id_of(task)})).await);
    assert_eq!(got["artifacts"], task["artifacts"], "{got}");
}

/// An int64 member of `object` as a number (ProtoJSON writes it as a string).
#[track_caller]
fn generation_of(object: &Value, member: &str) -> i64 {
    object[member]
        .as_str()
        .unwrap_or_else(|| panic!("{member} (int64 as a string): {object}"))
        .parse()
        .unwrap()
}

async fn an_artifact_still_streaming_has_no_end_generation(b: Binding) {
    let server = Server::start().await;
    // Two chunks 3 s apart: the first is read while the second is awaited.
    let sent = ok(call(
        &server,
        b,
        "1.1",
        "SendMessage",
        send_request_with("slow 2 3000", json!({"returnImmediately": true})),
    )
    .await);
    let id = id_of(task_of(&sent));
    let mut current = generation(task_of(&sent));
    let streaming = loop {
        // Long polls: each answers once the task moves on.
        let got = past(&server, b, &id, current).await;
        assert!(!is_terminal(state(&got)), "the first chunk was seen: {got}");
        current = generation(&got);
        if got.get("artifacts").is_some() {
            break got;
        }
    };
    let artifact = &streaming["artifacts"][0];
    assert_eq!(artifact["parts"].as_array().unwrap().len(), 1, "{artifact}");
    assert_eq!(generation_of(artifact, "startGeneration"), current);
    assert!(artifact.get("endGeneration").is_none(), "{artifact}");

    let done = loop {
        let got = past(&server, b, &id, current).await;
        current = generation(&got);
        if is_terminal(state(&got)) {
            break got;
        }
    };
    let artifact = &done["artifacts"][0];
    assert_eq!(
        generation_of(artifact, "endGeneration"),
        current - 1,
        "{done}"
    );
}

async fn timeline_length_keeps_the_latest_entries(b: Binding) {
    let server = Server::start().await;
    let (id, _, _) = held_then_done(&server, b).await;
    let full = ok(get_task(&server, b, "1.1", json!({"id": id})).await);
    let all = timeline(&full);
    assert!(all.len() >= 5, "{full}");

    let two = ok(get_task(&server, b, "1.1", json!({"id": id, "timelineLength": 2})).await);
    assert_eq!(timeline(&two), all[all.len() - 2..], "{two}");
    let none = ok(get_task(&server, b, "1.1", json!({"id": id, "timelineLength": 0})).await);
    assert!(none.get("timeline").is_none(), "{none}");
    // historyLength and timelineLength are independent.
    let no_history = ok(get_task(&server, b, "1.1", json!({"id": id, "historyLength": 0})).await);
    assert!(no_history.get("history").is_none(), "{no_history}");
    assert_eq!(timeline(&no_history), all, "{no_history}");

    // ListTasks carries none unless asked.
    let listed = ok(list_tasks(&server, b, "1.1", json!({})).await);
    assert!(!listed.to_string().contains("timeline"), "{listed}");
    let listed = ok(list_tasks(&server, b, "1.1", json!({"timelineLength": 1})).await);
    let in_list = task_in(&listed, &id);
    assert_eq!(timeline(in_list), all[all.len() - 1..], "{listed}");

    // SendMessage's answer.
    let sent = ok(call(
        &server,
        b,
        "1.1",
        "SendMessage",
        send_request_with("hello", json!({"timelineLength": 1})),
    )
    .await);
    let entries = timeline(task_of(&sent));
    assert_eq!(entries.len(), 1, "{sent}");
    assert_eq!(entries[0]["status"]["state"], "TASK_STATE_COMPLETED");
}

async fn an_invalid_timeline_length_is_invalid_params_and_changes_nothing(b: Binding) {
    let server = Server::start().await;
    let sent = ok(call(&server, b, "1.1", "SendMessage", send_request("hold")).await);
    let held = task_of(&sent).clone();
    let id = id_of(&held);
    for bad in [json!(-1), json!("lots")] {
        let refused =
            err(get_task(&server, b, "1.1", json!({"id": id, "timelineLength": bad})).await);
        refused.assert_is(-32602, 400, "INVALID_PARAMS");
        let refused = err(list_tasks(&server, b, "1.1", json!({"timelineLength": bad})).await);
        refused.assert_is(-32602, 400, "INVALID_PARAMS");
        let mut reply = follow_up(&id, "done");
        reply["configuration"] = json!({"timelineLength": bad});
        let refused = err(call(&server, b, "1.1", "SendMessage", reply).await);
        refused.assert_is(-32602, 400, "INVALID_PARAMS");
    }
    // The follow-ups were not recorded: the task stands as it was.
    let got = ok(get_task(&server, b, "1.1", json!({"id": id})).await);
    assert_eq!(state(&got), "TASK_STATE_INPUT_REQUIRED", "{got}");
    assert_eq!(generation(&got), generation(&held), "{got}");
    assert_eq!(got["timeline"], held["timeline"], "{got}");
}

async fn a_stream_opens_with_the_task_and_its_timeline(b: Binding) {
    let server = Server::start().await;
    for version in ["1.1", "1.0"] {
        let request = send_request_with("slow 2 0", json!({"timelineLength": 5}));
        let message_id = request["message"]["messageId"].clone();
        let builder = match b {
            Binding::JsonRpc => server.http().post(server.jsonrpc_url()).body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": request})
                    .to_string(),
            ),
            Binding::Rest => server
                .http()
                .post(server.url("/message:stream"))
                .body(request.to_string()),
        }
        .header(CONTENT_TYPE, "application/json")
        .header("A2A-Version", version);
        let mut stream = open_sse(b, builder).await.expect("a stream");
        let events = stream.collect_to_end(EVENT_TIMEOUT).await;
        let first = events.first().expect("events").payload();
        let task = &first["task"];
        assert_eq!(state(task), "TASK_STATE_SUBMITTED", "{first}");
        if version == "1.0" {
            let text = format!("{events:?}");
            assert!(!text.contains("timeline"), "{text}");
            assert!(!text.contains("Generation"), "{text}");
            continue;
        }
        // The task as the stream opens: the client's message and SUBMITTED, at its generation.
        assert_eq!(
            shape(task),
            [
                ("message".to_owned(), 1),
                ("TASK_STATE_SUBMITTED".to_owned(), 1)
            ],
            "{first}"
        );
        assert_eq!(task["timeline"][0]["message"]["messageId"], message_id);
        // The events after it carry no timeline: status entries are the status updates.
        for event in &events[1..] {
            let payload = event.payload();
            assert!(payload.get("task").is_none(), "{payload}");
            assert!(!payload.to_string().contains("Generation"), "{payload}");
        }
    }
}

async fn a_1_1_config_is_pushed_the_task_with_its_timeline(b: Binding) {
    let server = Server::start().await;
    for version in ["1.1", "1.0"] {
        let mut hook = Webhook::start().await;
        let request = send_request_with(
            "hold",
            json!({"taskPushNotificationConfig": {"url": hook.url}}),
        );
        let sent = ok(call(&server, b, version, "SendMessage", request).await);
        assert_eq!(state(task_of(&sent)), "TASK_STATE_INPUT_REQUIRED", "{sent}");
        let pushes = hook
            .until(EVENT_TIMEOUT, |p| {
                p.json()["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            })
            .await;
        let task = pushes
            .iter()
            .map(|p| p.json())
            .find_map(|body| body.get("task").cloned())
            .expect("the task is pushed first");
        if version == "1.0" {
            let bodies: Vec<Value> = pushes.iter().map(|p| p.json()).collect();
            let text = format!("{bodies:?}");
            assert!(
                !text.contains("timeline") && !text.contains("generation"),
                "{text}"
            );
            continue;
        }
        // The task as created: the client's message and SUBMITTED, both at 1.
        assert_eq!(
            shape(&task),
            [
                ("message".to_owned(), 1),
                ("TASK_STATE_SUBMITTED".to_owned(), 1)
            ],
            "{task}"
        );
    }
}
