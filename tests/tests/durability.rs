//! Durability: everything lives in the store file, so a server killed with SIGKILL and started
//! again on the same data directory has every task, and finishes queued work.

use std::time::Duration;

use a2a_e2e::*;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_survive_a_sigkill_and_restart() {
    if !store_ready() {
        return;
    }
    let mut server = Server::start().await;
    let mut before: Vec<Value> = Vec::new();
    for (b, text) in [
        (Binding::JsonRpc, "first echo"),
        (Binding::Rest, "second echo"),
        (Binding::JsonRpc, "fail"),
        (Binding::Rest, "hold"),
    ] {
        before.push(server.send_text(b, text).await);
    }
    let canceled = server.send_text(Binding::JsonRpc, "hold").await;
    ok(server.cancel(Binding::JsonRpc, &id_of(&canceled)).await);
    before.push(ok(server
        .get_task(Binding::JsonRpc, &id_of(&canceled), None)
        .await));
    let states: Vec<&str> = before.iter().map(state).collect();
    assert_eq!(
        states,
        [
            "TASK_STATE_COMPLETED",
            "TASK_STATE_COMPLETED",
            "TASK_STATE_FAILED",
            "TASK_STATE_INPUT_REQUIRED",
            "TASK_STATE_CANCELED"
        ]
    );
    let held = id_of(&before[3]);
    let hook_config = ok(server
        .create_push(
            Binding::Rest,
            &held,
            json!({"url": "http://127.0.0.1:9/after-restart"}),
        )
        .await);
    let list_before = ok(server
        .list_tasks(Binding::JsonRpc, json!({"includeArtifacts": true}))
        .await);
    let old_base = server.base().to_string();

    server.kill_abruptly();
    server.restart().await;
    assert_ne!(server.base(), old_base, "a new process on a new port");

    for task in &before {
        for b in Binding::ALL {
            let after = ok(server.get_task(b, &id_of(task), None).await);
            assert_eq!(&after, task, "the task is unchanged after the restart");
        }
    }
    let list_after = ok(server
        .list_tasks(Binding::JsonRpc, json!({"includeArtifacts": true}))
        .await);
    assert_eq!(list_after, list_before, "ListTasks is unchanged");
    let config = ok(server
        .get_push(Binding::JsonRpc, &held, hook_config["id"].as_str().unwrap())
        .await);
    assert_eq!(config["url"], "http://127.0.0.1:9/after-restart");

    // The held task still takes its follow-up.
    let response = ok(server
        .send(Binding::Rest, follow_up(&held, "after restart"))
        .await);
    let done = task_of(&response);
    assert_eq!(state(done), "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(artifact_text(&artifacts(done)[0]), "after restart");
    assert_eq!(done["contextId"], before[3]["contextId"]);
    // Terminal tasks stay terminal.
    err(server
        .send(Binding::JsonRpc, follow_up(&id_of(&before[0]), "more"))
        .await)
    .assert_is(-32004, 400, "UNSUPPORTED_OPERATION");
    // And new work runs.
    assert_eq!(
        state(&server.send_text(Binding::JsonRpc, "new").await),
        "TASK_STATE_COMPLETED"
    );
}

/// The work queue redelivers a job whose worker died once its visibility timeout has passed
/// (shortened to 3 s here; 60 s by default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_job_in_flight_is_finished_after_a_restart() {
    if !store_ready() {
        return;
    }
    let mut server = Server::start_with_env(&[("A2A_WORK_VISIBILITY_SECS", "3")]).await;
    let response = ok(server
        .send(
            Binding::JsonRpc,
            // Long enough on the emulator that a loaded run still kills it mid-job.
            send_request_with(
                if on_dynamodb() {
                    "job 2 6000"
                } else {
                    "job 2 2000"
                },
                json!({"returnImmediately": true}),
            ),
        )
        .await);
    let id = id_of(task_of(&response));
    // Wait until the worker has really started it.
    let mut stream = server
        .subscribe(Binding::JsonRpc, &id, None)
        .await
        .expect("subscribe");
    loop {
        let event = stream
            .next_event()
            .await
            .expect("the job starts before the stream ends");
        let payload = event.payload();
        if event_state(&payload) == Some("TASK_STATE_WORKING") {
            break;
        }
    }
    drop(stream);
    let working = ok(server.get_task(Binding::JsonRpc, &id, None).await);
    assert_eq!(
        state(&working),
        "TASK_STATE_WORKING",
        "killed mid-job: {working}"
    );

    server.kill_abruptly();
    server.restart().await;
    let still = ok(server.get_task(Binding::Rest, &id, None).await);
    assert_eq!(state(&still), "TASK_STATE_WORKING", "{still}");

    let done = server.await_terminal(&id, Duration::from_secs(60)).await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    let arts = artifacts(&done);
    assert_eq!(arts.len(), 1, "one report, not two: {done}");
    assert_eq!(arts[0]["name"], "report");
    assert_eq!(artifact_text(&arts[0]), "job finished: 2 steps");
}
