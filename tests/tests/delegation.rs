//! Agents calling agents: the reference agent's `delegate <AGENT_URL> <TEXT…>` on one
//! a2a-local, another a2a-local (or a test server of ours) as the agent it calls, both over
//! real sockets. The remote's answer becomes ours (blocking and streaming, its chunks as they
//! come), its INPUT_REQUIRED is relayed both ways, its failure fails ours, cancelling ours
//! cancels its task, a delegating server killed mid-wait finishes the task after a restart,
//! and a remote that never finishes ends ours FAILED at the timeout. With
//! `A2A_E2E_STORE=dynamodb` every server runs on DynamoDB + SQS (moto).

use std::time::Duration;

use a2a_e2e::*;
use serde_json::{json, Value};

/// How long a delegated task may take in these tests.
const WITHIN: Duration = Duration::from_secs(120);

const TRACE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The delegating server: polls remote tasks every second (ten with pushes), sweeps every
/// second, holds a task's lease for 3 s, and gives up on a remote after `timeout_secs`. On
/// DynamoDB (moto) it sweeps every three seconds: a sweep queries the eight due partitions,
/// and moto, one Python process on the test machine's two cores, answers a few dozen queries
/// a second before its requests start timing out.
async fn delegating(timeout_secs: u64) -> Server {
    let timeout = timeout_secs.to_string();
    let sweep = if on_dynamodb() { "3" } else { "1" };
    Server::start_with_env(&[
        ("A2A_REMOTE_POLL_SECS", "1"),
        ("A2A_SWEEP_INTERVAL_SECS", sweep),
        // A killed server's lease on its task runs out soon (the restart test).
        ("A2A_EXECUTION_LEASE_SECS", "3"),
        ("A2A_DELEGATE_TIMEOUT_SECS", &timeout),
    ])
    .await
}

/// The remote agent's one task (the delegated one).
async fn remote_task(remote: &Server) -> Value {
    let listed = ok(remote.list_tasks(Binding::JsonRpc, json!({})).await);
    let tasks = listed["tasks"].as_array().cloned().unwrap_or_default();
    assert_eq!(tasks.len(), 1, "the remote got one task: {listed}");
    tasks[0].clone()
}

fn artifact_texts(task: &Value) -> Vec<String> {
    artifacts(task).iter().map(artifact_text).collect()
}

/// What a client streaming our task saw of it so far.
#[derive(Default)]
struct Streamed {
    /// The text of each artifact update.
    chunks: Vec<String>,
    /// Our artifact's text after each (a chunk appends; an update that does not, a snapshot of
    /// the remote's task, replaces the artifact with all of it).
    shown: Vec<String>,
    last_state: Option<String>,
    /// Our task's id, from the stream's first event.
    id: Option<String>,
}

impl Streamed {
    /// Reads `stream` (each event within `per_event`) up to its next artifact update, and
    /// returns its text; `None` once the stream ended.
    async fn next_chunk(&mut self, stream: &mut SseStream, per_event: Duration) -> Option<String> {
        loop {
            let event = match stream.next_within(per_event).await {
                Ok(Some(event)) => event,
                Ok(None) => return None,
                Err(err) => panic!("waiting for an SSE event: {err:?}"),
            };
            let payload = event.payload();
            if let Some(task) = payload.get("task") {
                self.id = Some(id_of(task));
            }
            if let Some(s) = event_state(&payload) {
                self.last_state = Some(s.to_owned());
            }
            if let Some(update) = payload.get("artifactUpdate") {
                let chunk = artifact_text(&update["artifact"]);
                let mut text = match update["append"].as_bool() {
                    Some(true) => self.shown.last().cloned().unwrap_or_default(),
                    _ => String::new(),
                };
                text.push_str(&chunk);
                self.shown.push(text);
                self.chunks.push(chunk.clone());
                return Some(chunk);
            }
        }
    }

    /// Our artifact's text as the client has it now.
    fn text(&self) -> &str {
        self.shown.last().map_or("", String::as_str)
    }
}

async fn a_blocking_delegation_completes_with_the_remote_s_answer(b: Binding) {
    let remote = Server::start().await;
    let ours = delegating(60).await;
    let answer = ok(ours
        .send(
            b,
            send_request(&format!("delegate {} hello there", remote.base())),
        )
        .await);
    let task = task_of(&answer);
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(message_text(&task["status"]["message"]), "hello there");
    assert_eq!(artifact_texts(task), ["hello there"]);
    let theirs = remote_task(&remote).await;
    assert_eq!(state(&theirs), "TASK_STATE_COMPLETED");
    assert_eq!(message_text(&history(&theirs)[0]), "hello there");
}

both_bindings!(a_blocking_delegation_completes_with_the_remote_s_answer);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_chunks_arrive_while_the_remote_still_works() {
    // On DynamoDB the remote's pushes go through its push queue and may come out of order
    // (a chunk after a later one): a chunk that does not continue our artifact is placed by
    // the remote's task as it stands (a snapshot, which replaces), and the remote's task as it
    // stopped settles ours, so the artifact ends whole either way. Two appends swapped in
    // flight cannot be told apart (a 1.0 push carries no sequence) until that end.
    if !store_ready() {
        return;
    }
    let remote = Server::start().await;
    let ours = delegating(60).await;
    // On the emulator every push takes about a second to deliver: the remote works longer
    // there, so that its first chunk can reach us before its last is made.
    let step_ms = if on_dynamodb() { 2000 } else { 500 };
    let mut stream = ours
        .stream(
            Binding::Rest,
            send_request(&format!("delegate {} slow 5 {step_ms}", remote.base())),
        )
        .await
        .expect("stream");
    let mut remote_state_at_first_chunk = None;
    // Each chunk crosses two servers and a push on the emulator, which a loaded test run can
    // hold up past the usual wait for one event.
    let per_event = if on_dynamodb() { WITHIN } else { EVENT_TIMEOUT };
    let mut seen = Streamed::default();
    while seen.next_chunk(&mut stream, per_event).await.is_some() {
        if remote_state_at_first_chunk.is_none() {
            let theirs = remote_task(&remote).await;
            remote_state_at_first_chunk = Some(state(&theirs).to_owned());
        }
    }
    let chunks = &seen.chunks;
    assert_eq!(seen.last_state.as_deref(), Some("TASK_STATE_COMPLETED"));
    assert_eq!(
        seen.text(),
        "chunk-1 chunk-2 chunk-3 chunk-4 chunk-5 ",
        "{chunks:?}"
    );
    // Our artifact starts where the remote's does, on both stores: a chunk pushed before the
    // artifact's start is placed by the remote's task as it stands, never shown alone.
    assert!(
        chunks.first().is_some_and(|c| c.starts_with("chunk-1 ")),
        "{chunks:?}"
    );
    // Chunk by chunk, as the remote sent them, not one snapshot at the end (in order where
    // the remote's pushes are: SQLite's push loop delivers one task's pushes in turn).
    if !on_dynamodb() {
        assert_eq!(
            chunks.first().map(String::as_str),
            Some("chunk-1 "),
            "{chunks:?}"
        );
    }
    assert!(chunks.len() > 1, "{chunks:?}");
    // While the remote still works: on SQLite, where a push takes milliseconds. On the
    // emulator each push crosses the remote's queue and ours, which a loaded run can hold up
    // past the remote's whole run; there the order and the end are what is checked.
    if !on_dynamodb() {
        assert_eq!(
            remote_state_at_first_chunk.as_deref(),
            Some("TASK_STATE_WORKING"),
            "the first chunk reached our client while the remote was still working"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_is_relayed_both_ways() {
    if !store_ready() {
        return;
    }
    let remote = Server::start().await;
    let ours = delegating(60).await;
    let answer = ok(ours
        .send(
            Binding::JsonRpc,
            send_request(&format!("delegate {} hold", remote.base())),
        )
        .await);
    let task = task_of(&answer);
    assert_eq!(state(task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    assert!(message_text(&task["status"]["message"]).contains("on hold"));
    let theirs = remote_task(&remote).await;
    assert_eq!(state(&theirs), "TASK_STATE_INPUT_REQUIRED");

    let answer = ok(ours
        .send(Binding::Rest, follow_up(&id_of(task), "here you are"))
        .await);
    let task = task_of(&answer);
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(message_text(&task["status"]["message"]), "here you are");
    let theirs = remote_task(&remote).await;
    assert_eq!(
        state(&theirs),
        "TASK_STATE_COMPLETED",
        "the same remote task"
    );
    let said: Vec<String> = history(&theirs).iter().map(message_text).collect();
    assert!(said.contains(&"here you are".to_owned()), "{said:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_failure_fails_ours_with_the_reason() {
    if !store_ready() {
        return;
    }
    let remote = Server::start().await;
    let ours = delegating(60).await;
    let answer = ok(ours
        .send(
            Binding::JsonRpc,
            send_request(&format!("delegate {} fail", remote.base())),
        )
        .await);
    let task = task_of(&answer);
    assert_eq!(state(task), "TASK_STATE_FAILED", "{task}");
    let reason = message_text(&task["status"]["message"]);
    assert!(reason.contains(remote.base()), "{reason}");
    assert!(reason.contains("The fail skill always fails"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_ours_cancels_theirs() {
    if !store_ready() {
        return;
    }
    let remote = Server::start().await;
    let ours = delegating(60).await;
    // Working on the remote for a minute; ours waits for it.
    let answer = ok(ours
        .send(
            Binding::Rest,
            send_request_with(
                &format!("delegate {} job 60 1000", remote.base()),
                json!({"returnImmediately": true}),
            ),
        )
        .await);
    let id = id_of(task_of(&answer));
    // Ours is queued: the remote's task exists once our worker sent it the message (on the
    // emulator under a loaded run that can take a while, with nothing of ours to wait on).
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let listed = ok(remote.list_tasks(Binding::JsonRpc, json!({})).await);
        if listed["tasks"].as_array().is_some_and(|t| !t.is_empty()) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the remote never got our message"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let theirs = remote_task(&remote).await;
    let canceled = ok(ours.cancel(Binding::JsonRpc, &id).await);
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");
    let theirs = remote.await_terminal(&id_of(&theirs), WITHIN).await;
    assert_eq!(state(&theirs), "TASK_STATE_CANCELED", "{theirs}");

    // A delegated task parked in INPUT_REQUIRED: cancelling ours cancels theirs too.
    let answer = ok(ours
        .send(
            Binding::JsonRpc,
            send_request(&format!("delegate {} hold", remote.base())),
        )
        .await);
    let held = id_of(task_of(&answer));
    let listed = ok(remote.list_tasks(Binding::JsonRpc, json!({})).await);
    let parked = listed["tasks"]
        .as_array()
        .and_then(|tasks| {
            tasks
                .iter()
                .find(|t| state(t) == "TASK_STATE_INPUT_REQUIRED")
                .cloned()
        })
        .expect("the remote's task asks for input");
    ok(ours.cancel(Binding::Rest, &held).await);
    let theirs = ok(remote
        .get_task(Binding::JsonRpc, &id_of(&parked), None)
        .await);
    assert_eq!(state(&theirs), "TASK_STATE_CANCELED", "{theirs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegating_server_killed_mid_wait_finishes_the_task_after_a_restart() {
    if !store_ready() {
        return;
    }
    let remote = Server::start().await;
    let mut ours = delegating(120).await;
    let answer = ok(ours
        .send(
            Binding::JsonRpc,
            send_request_with(
                &format!("delegate {} job 3 1000", remote.base()),
                json!({"returnImmediately": true}),
            ),
        )
        .await);
    let id = id_of(task_of(&answer));
    // Wait until the remote has the task, then kill ours while it waits.
    let theirs = loop {
        let listed = ok(remote.list_tasks(Binding::JsonRpc, json!({})).await);
        if let Some(task) = listed["tasks"].as_array().and_then(|t| t.first()).cloned() {
            break task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Killed while it waits (parked), not while it still sends: that one is the ordinary
    // crash of a running execution, which the expired-lease sweep ends FAILED.
    let deadline = tokio::time::Instant::now() + WITHIN;
    while !ours.logs().contains("parked on a durable wait") {
        assert!(tokio::time::Instant::now() < deadline, "ours never parked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ours.kill_abruptly();
    // The remote finishes meanwhile; its pushes to us fail.
    let theirs = remote.await_terminal(&id_of(&theirs), WITHIN).await;
    assert_eq!(state(&theirs), "TASK_STATE_COMPLETED");

    ours.restart().await;
    let task = ours.await_terminal(&id, WITHIN).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(artifact_texts(&task), ["job finished: 3 steps"]);
}

/// Our task delegating `anything` to the test server `other` (queued), once it ended.
async fn delegated_to(ours: &Server, other: &HostileAgent) -> Value {
    let answer = ok(ours
        .send(
            Binding::JsonRpc,
            send_request_with(
                &format!("delegate {} anything", other.base),
                json!({"returnImmediately": true}),
            ),
        )
        .await);
    ours.await_terminal(&id_of(task_of(&answer)), WITHIN).await
}

/// The JSON-RPC methods the test server `other` was called with, in order.
fn methods_called(other: &HostileAgent) -> Vec<String> {
    other
        .requests()
        .iter()
        .filter(|r| r.path == "/rpc")
        .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
        .filter_map(|call| call["method"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_that_never_finishes_ends_ours_failed_at_the_timeout() {
    if !store_ready() {
        return;
    }
    let stuck = HostileAgent::start(Hostility::NeverFinishes).await;
    let ours = delegating(3).await;
    let task = delegated_to(&ours, &stuck).await;
    assert_eq!(state(&task), "TASK_STATE_FAILED", "{task}");
    let reason = message_text(&task["status"]["message"]);
    assert!(
        reason.contains("did not finish within 3 s") && reason.contains("canceled"),
        "{reason}"
    );
    let methods = methods_called(&stuck);
    assert_eq!(methods.first().map(String::as_str), Some("SendMessage"));
    assert_eq!(
        methods.last().map(String::as_str),
        Some("CancelTask"),
        "its task is canceled at the timeout: {methods:?}"
    );
}

/// An agent that answers InternalError for a moment (the 20 % fault run of issue 52 ended three
/// delegations FAILED on a remote a2a-local whose store was being throttled) is sent the same
/// message again, with the same id, and the call goes on; one that stays in trouble past the
/// retries fails the call, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_in_trouble_for_a_moment_gets_the_message_again() {
    if !store_ready() {
        return;
    }
    let busy = HostileAgent::start(Hostility::BusySends(2)).await;
    let ours = delegating(60).await;
    let task = delegated_to(&ours, &busy).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    let sends: Vec<Value> = busy
        .requests()
        .iter()
        .filter(|r| r.path == "/rpc")
        .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
        .filter(|call| call["method"] == "SendMessage")
        .collect();
    assert_eq!(sends.len(), 3, "two refusals, then the message taken");
    let ids: Vec<&Value> = sends
        .iter()
        .map(|call| &call["params"]["message"]["messageId"])
        .collect();
    assert!(
        ids.iter().all(|id| *id == ids[0]),
        "the same message each time: {ids:?}"
    );

    let troubled = HostileAgent::start(Hostility::BusySends(usize::MAX)).await;
    let task = delegated_to(&ours, &troubled).await;
    assert_eq!(state(&task), "TASK_STATE_FAILED", "{task}");
    assert!(
        message_text(&task["status"]["message"]).contains("Internal error"),
        "{task}"
    );
    assert_eq!(methods_called(&troubled), ["SendMessage"; 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_out_of_order_leave_our_answer_whole() {
    if !store_ready() {
        return;
    }
    // A push service may deliver out of order (the kit's own does, on SQS): a chunk after a
    // later one, the end before a chunk. The remote's task as it ended settles ours.
    let other = HostileAgent::start(Hostility::OutOfOrderPushes).await;
    let ours = delegating(60).await;
    let task = delegated_to(&ours, &other).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(artifact_texts(&task), ["chunk-1 chunk-2 "], "{task}");
    let asked = methods_called(&other);
    assert!(
        asked.iter().any(|m| m == "GetTask"),
        "the end was read back: {asked:?}"
    );
    // Every push was taken (the late chunk too, or it was told our task moved on), and the
    // late chunk changed nothing.
    let deadline = tokio::time::Instant::now() + WITHIN;
    while other.push_results().len() < 4 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let results = other.push_results();
    assert_eq!(results[..3], [200, 200, 200], "{results:?}");
    assert!(matches!(results[3], 200 | 410), "{results:?}");
    let after = ok(ours.get_task(Binding::JsonRpc, &id_of(&task), None).await);
    assert_eq!(artifact_texts(&after), ["chunk-1 chunk-2 "], "{after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunk_pushed_twice_is_put_right_even_when_the_end_cannot_be_read_at_once() {
    if !store_ready() {
        return;
    }
    // The remote's second chunk comes twice, and its task cannot be read when its end is
    // pushed (503): the wait stays open, the pusher is told to try again, and the next sweep
    // polls the remote at once (not at the next poll of a remote that pushes, five minutes
    // on): its task as it ended settles ours.
    let other = HostileAgent::start(Hostility::DoubledChunkThenBusy).await;
    let sweep = if on_dynamodb() { "3" } else { "1" };
    let ours = Server::start_with_env(&[
        ("A2A_REMOTE_POLL_SECS", "30"),
        ("A2A_SWEEP_INTERVAL_SECS", sweep),
        ("A2A_DELEGATE_TIMEOUT_SECS", "600"),
    ])
    .await;
    let task = delegated_to(&ours, &other).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(artifact_texts(&task), ["chunk-1 chunk-2 "], "{task}");
    let asked = methods_called(&other);
    assert_eq!(
        asked.iter().filter(|m| *m == "GetTask").count(),
        BUSY_READS + 1,
        "read at the pushed end (503 to the call and its retries), then by the sweep: {asked:?}"
    );
    assert_eq!(other.push_results(), [200, 200, 200, 500]);
}

/// Pushes out of order and twice (a chunk before the start of its artifact, the start again
/// after later chunks, chunks delivered twice): our client, streaming our task, never sees a
/// chunk doubled or out of its place. Each relayed update is applied knowing what it
/// replaces: a chunk that does not continue our artifact is placed by the remote's task as it
/// stands, an old start is dropped, and at the end the remote's task as it ended settles ours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_out_of_order_and_twice_never_show_a_chunk_doubled_or_misplaced() {
    if !store_ready() {
        return;
    }
    let other = HostileAgent::start(Hostility::ScrambledTwice).await;
    let ours = delegating(60).await;
    let mut stream = ours
        .stream(
            Binding::Rest,
            send_request(&format!("delegate {} anything", other.base)),
        )
        .await
        .expect("stream");
    let whole = "chunk-1 chunk-2 chunk-3 ";
    let per_event = if on_dynamodb() { WITHIN } else { EVENT_TIMEOUT };
    let mut seen = Streamed::default();
    while seen.next_chunk(&mut stream, per_event).await.is_some() {}
    assert_eq!(seen.last_state.as_deref(), Some("TASK_STATE_COMPLETED"));
    let shown = &seen.shown;
    assert!(
        shown.iter().all(|t| whole.starts_with(t.as_str())),
        "our artifact as our client saw it: {shown:?}"
    );
    assert_eq!(seen.text(), whole, "{shown:?}");
    assert_eq!(other.push_results(), [200; 7]);
    let id = seen.id.expect("the stream's first event is our task");
    let task = ok(ours.get_task(Binding::JsonRpc, &id, None).await);
    assert_eq!(artifact_texts(&task), [whole], "{task}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_follows_the_call_to_the_other_agent() {
    if !store_ready() {
        return;
    }
    let other = HostileAgent::start(Hostility::Benign).await;
    let ours = delegating(60).await;
    let traced = ours.client_with_headers(&[("traceparent", TRACE)]);
    let answer = ok(traced
        .send(
            Binding::Rest,
            send_request(&format!("delegate {} hi", other.base)),
        )
        .await);
    assert_eq!(state(task_of(&answer)), "TASK_STATE_COMPLETED");
    let calls = other.requests_with("traceparent");
    assert!(
        calls.iter().any(|r| r.path == "/rpc"),
        "the send carried the trace: {calls:?}"
    );
    for call in &calls {
        assert_eq!(call.headers["traceparent"], TRACE);
    }

    // A malformed trace is ignored: nothing is passed on.
    let before = other.requests_with("traceparent").len();
    let garbled = ours.client_with_headers(&[("traceparent", "00-not-a-trace-01")]);
    ok(garbled
        .send(
            Binding::Rest,
            send_request(&format!("delegate {} hi again", other.base)),
        )
        .await);
    assert_eq!(other.requests_with("traceparent").len(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_off_the_allow_list_are_refused() {
    if !store_ready() {
        return;
    }
    let ours = delegating(60).await;
    let answer = ok(ours
        .send(
            Binding::JsonRpc,
            send_request("delegate http://169.254.169.254/latest hi"),
        )
        .await);
    let task = task_of(&answer);
    assert_eq!(state(task), "TASK_STATE_FAILED", "{task}");
    let reason = message_text(&task["status"]["message"]);
    assert!(reason.contains("non-public address"), "{reason}");
}

/// The official Python SDK's server (a2a-sdk, `tests/interop/sdk_server.py`) as the other
/// agent: its pushes are unsigned (the token alone is checked), its task ids and events are
/// the SDK's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_server_as_the_other_agent() {
    if !store_ready() {
        return;
    }
    let Some(sdk) = SdkServer::start().await else {
        return;
    };
    let ours = delegating(60).await;

    // Blocking: its echo becomes ours.
    let answer = ok(ours
        .send(
            Binding::JsonRpc,
            send_request(&format!("delegate {} hello sdk", sdk.base)),
        )
        .await);
    let task = task_of(&answer);
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(artifact_texts(task), ["hello sdk"]);

    // Streaming: its chunks reach our stream and add up to its artifact.
    let mut stream = ours
        .stream(
            Binding::Rest,
            send_request(&format!("delegate {} slow 3 300", sdk.base)),
        )
        .await
        .expect("stream");
    let mut text = String::new();
    let mut last_state = None;
    // Each chunk crosses two servers and a push on the emulator, which a loaded test run can
    // hold up past the usual wait for one event.
    let per_event = if on_dynamodb() { WITHIN } else { EVENT_TIMEOUT };
    loop {
        let event = match stream.next_within(per_event).await {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(err) => panic!("waiting for an SSE event: {err:?}"),
        };
        let payload = event.payload();
        if let Some(update) = payload.get("artifactUpdate") {
            if update["append"].as_bool() != Some(true) {
                text.clear();
            }
            text.push_str(&artifact_text(&update["artifact"]));
        }
        if let Some(s) = event_state(&payload) {
            last_state = Some(s.to_owned());
        }
    }
    assert_eq!(last_state.as_deref(), Some("TASK_STATE_COMPLETED"));
    assert_eq!(text, "chunk-1 chunk-2 chunk-3 ");

    // Input required, relayed both ways: the follow-up reaches the SDK's task.
    let answer = ok(ours
        .send(
            Binding::JsonRpc,
            send_request(&format!("delegate {} hold", sdk.base)),
        )
        .await);
    let held = task_of(&answer);
    assert_eq!(state(held), "TASK_STATE_INPUT_REQUIRED", "{held}");
    assert!(message_text(&held["status"]["message"]).contains("on hold"));
    let answer = ok(ours
        .send(Binding::Rest, follow_up(&id_of(held), "the answer"))
        .await);
    let task = task_of(&answer);
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(message_text(&task["status"]["message"]), "the answer");

    // Failure, with its reason.
    let answer = ok(ours
        .send(
            Binding::JsonRpc,
            send_request(&format!("delegate {} fail", sdk.base)),
        )
        .await);
    let task = task_of(&answer);
    assert_eq!(state(task), "TASK_STATE_FAILED", "{task}");
    let reason = message_text(&task["status"]["message"]);
    assert!(reason.contains("The fail skill always fails"), "{reason}");

    // Cancel: ours, then theirs, read from the SDK server.
    let answer = ok(ours
        .send(
            Binding::JsonRpc,
            send_request(&format!("delegate {} hold", sdk.base)),
        )
        .await);
    let held = task_of(&answer);
    assert_eq!(state(held), "TASK_STATE_INPUT_REQUIRED", "{held}");
    ok(ours.cancel(Binding::JsonRpc, &id_of(held)).await);
    let sdk_client = a2a_client::Client::connect(&sdk.base)
        .await
        .expect("the SDK server's card");
    let listed = sdk_client
        .list_tasks(a2a_client::ListTasksRequest::default())
        .await
        .expect("the SDK server lists its tasks");
    let states: Vec<_> = listed.tasks.iter().map(|t| t.status.state).collect();
    assert!(
        states.contains(&a2a_client::TaskState::Canceled),
        "the SDK's held task was canceled: {states:?}"
    );
}

/// The push config our task's call sent to the test server `other` (its URL and token),
/// once the send has reached it.
async fn push_config_sent_to(other: &HostileAgent) -> (String, String) {
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let sent = other
            .requests()
            .iter()
            .filter(|r| r.path == "/rpc")
            .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
            .find(|call| call["method"] == "SendMessage");
        if let Some(call) = sent {
            let config = &call["params"]["configuration"]["taskPushNotificationConfig"];
            let url = config["url"]
                .as_str()
                .expect("a push config URL")
                .to_owned();
            let token = config["token"].as_str().expect("a push token").to_owned();
            return (url, token);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no SendMessage came"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the remote's answer to the send (its task, with the artifact "working") is
/// relayed into our task `id`: pushes after that find the call parked.
async fn answer_relayed(ours: &Server, id: &str) {
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let task = ok(ours.get_task(Binding::JsonRpc, id, None).await);
        if !artifacts(&task).is_empty() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not relayed: {task}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One push to the relay route: its status and body.
async fn relay(url: &str, token: Option<&str>, body: &str) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(token) = token {
        request = request.header("X-A2A-Notification-Token", token);
    }
    let response = request.send().await.expect("the push");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// A delegating server that polls a remote that pushes every five minutes: what our task
/// shows in these tests came from the test's pushes.
async fn delegating_on_pushes() -> Server {
    Server::start_with_env(&[("A2A_REMOTE_POLL_SECS", "30")]).await
}

const WORKING_PUSH: &str = r#"{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"w1","role":"ROLE_AGENT","parts":[{"text":"on it"}]}}}}"#;

/// Whoever does not hold a wait's token learns nothing from the relay route: no token, a
/// wrong one, a task that waits, one that does not exist — one answer (401, `{}`), and a body
/// is not even read (a broken one gets the same answer). The URL names our task and nobody
/// else; its previous form (`/a2a-relay/{task}/{owner}`, which waits parked before an upgrade
/// gave out) is still taken. Once our task ended, the token holder is told so (410 Gone), a
/// stranger still gets 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_route_answers_every_stranger_alike() {
    if !store_ready() {
        return;
    }
    let stuck = HostileAgent::start(Hostility::NeverFinishes).await;
    let ours = delegating_on_pushes().await;
    let answer = ok(ours
        .send(
            Binding::JsonRpc,
            send_request_with(
                &format!("delegate {} anything", stuck.base),
                json!({"returnImmediately": true}),
            ),
        )
        .await);
    let id = id_of(task_of(&answer));
    let (url, token) = push_config_sent_to(&stuck).await;
    assert!(url.ends_with(&format!("/a2a-relay/{id}")), "{url}");
    answer_relayed(&ours, &id).await;
    let unknown = url.replacen(&format!("/a2a-relay/{id}"), "/a2a-relay/no-such-task", 1);
    assert_ne!(unknown, url, "{url}");
    let legacy = format!("{url}/YW5vbnltb3Vz");
    let refusals = [
        relay(&url, None, WORKING_PUSH).await,
        relay(&url, Some("wrong"), WORKING_PUSH).await,
        relay(&url, Some("wrong"), "not json").await,
        relay(&unknown, Some("wrong"), WORKING_PUSH).await,
        relay(&unknown, Some(&token), WORKING_PUSH).await,
        relay(&unknown, None, "not json").await,
        relay(&legacy, Some("wrong"), WORKING_PUSH).await,
    ];
    assert_eq!(refusals[0], (401, "{}".to_owned()));
    for refusal in &refusals {
        assert_eq!(refusal, &refusals[0], "{refusals:?}");
    }
    // The token holder is heard: its push is relayed, and a broken body is its own error.
    assert_eq!(relay(&url, Some(&token), WORKING_PUSH).await.0, 200);
    assert_eq!(relay(&legacy, Some(&token), WORKING_PUSH).await.0, 200);
    assert_eq!(relay(&url, Some(&token), "not json").await.0, 400);
    let task = ok(ours.get_task(Binding::JsonRpc, &id, None).await);
    assert_eq!(message_text(&task["status"]["message"]), "on it", "{task}");

    // Once our task ended, the token holder is told to stop; strangers learn nothing more.
    ok(ours.cancel(Binding::JsonRpc, &id).await);
    ours.await_terminal(&id, WITHIN).await;
    assert_eq!(
        relay(&url, Some(&token), WORKING_PUSH).await,
        (410, "{}".to_owned())
    );
    assert_eq!(relay(&url, Some("wrong"), WORKING_PUSH).await, refusals[0]);
    assert_eq!(relay(&url, None, WORKING_PUSH).await, refusals[0]);
}

/// A push delivered twice (a push service's retry after a timeout, or a replay by someone
/// who saw it) changes our task once: the same status, the same artifact as it stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_delivered_twice_changes_nothing_twice() {
    if !store_ready() {
        return;
    }
    let stuck = HostileAgent::start(Hostility::NeverFinishes).await;
    let ours = delegating_on_pushes().await;
    let answer = ok(ours
        .send(
            Binding::JsonRpc,
            send_request_with(
                &format!("delegate {} anything", stuck.base),
                json!({"returnImmediately": true}),
            ),
        )
        .await);
    let id = id_of(task_of(&answer));
    let (url, token) = push_config_sent_to(&stuck).await;
    answer_relayed(&ours, &id).await;
    let artifact = r#"{"artifactUpdate":{"taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"text":"whole"}]}}}"#;
    let mut after_first = None;
    for _ in 0..2 {
        for push in [WORKING_PUSH, artifact] {
            assert_eq!(relay(&url, Some(&token), push).await.0, 200);
        }
        let task = ok(ours.get_task(Binding::JsonRpc, &id, Some(100)).await);
        match &after_first {
            None => after_first = Some(task),
            Some(first) => assert_eq!(&task, first, "the second delivery changed our task"),
        }
    }
    let task = after_first.expect("read");
    assert_eq!(artifact_texts(&task), ["working", "whole"], "{task}");
}

/// A peer that pushes the same status twice, then an old one after a newer one, then the old
/// one again after its end (a push service's retries, a replay by someone who kept a push and
/// its token): each status shows in our task once, in the order it first came, and nothing
/// after the end changes our task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayed_and_doubled_pushes_do_not_move_our_task_back() {
    if !store_ready() {
        return;
    }
    let other = HostileAgent::start(Hostility::ReplayedPushes).await;
    let ours = delegating_on_pushes().await;
    let task = delegated_to(&ours, &other).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    let deadline = tokio::time::Instant::now() + WITHIN;
    while other.push_results().len() < 6 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let results = other.push_results();
    assert_eq!(results[..5], [200; 5], "{results:?}");
    assert!(matches!(results[5], 200 | 410), "{results:?}");
    let task = ok(ours
        .get_task(Binding::JsonRpc, &id_of(&task), Some(100))
        .await);
    let steps: Vec<String> = task["history"]
        .as_array()
        .into_iter()
        .flatten()
        .map(message_text)
        .filter(|text| text.starts_with("step "))
        .collect();
    assert_eq!(steps, ["step 1", "step 2"], "{task}");
    assert_eq!(artifact_texts(&task), ["done"], "{task}");
    assert_eq!(state(&task), "TASK_STATE_COMPLETED");
}

/// A remote that answers far more than anyone should take (eight appends of a million
/// characters to one artifact): our task stops growing at the per-artifact limit (4 MiB by
/// default), the call fails saying why, the remote's task is canceled, and what it pushes
/// after that changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_answering_too_much_fails_the_call_and_leaves_our_task_bounded() {
    if !store_ready() {
        return;
    }
    let chunks = 8;
    let flood = HostileAgent::start(Hostility::BigAppends(chunks)).await;
    let ours = delegating(120).await;
    let task = delegated_to(&ours, &flood).await;
    assert_eq!(state(&task), "TASK_STATE_FAILED", "{}", state(&task));
    let reason = message_text(&task["status"]["message"]);
    assert!(
        reason.contains("answered more than") && reason.contains("over the limit of 4194304"),
        "{reason}"
    );
    let size: usize = artifact_texts(&task).iter().map(String::len).sum();
    assert!(size <= 4 << 20, "our task holds {size} characters");
    assert!(
        methods_called(&flood).iter().any(|m| m == "CancelTask"),
        "{:?}",
        methods_called(&flood)
    );
    // Every push finished; none after the refusal grew our task.
    let deadline = tokio::time::Instant::now() + WITHIN;
    while flood.push_results().len() < chunks && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let results = flood.push_results();
    // Taken (200) until the refusal (410 Gone), and none taken after it: each later push is
    // refused again, or its connection is gone (0), since the relay answers 410 on the token
    // without reading the body and the server then closes the connection.
    let taken = results.iter().take_while(|s| **s == 200).count();
    assert!(
        results[taken..].iter().all(|s| matches!(s, 410 | 0)),
        "{results:?}"
    );
    let after = ok(ours
        .get_task(Binding::JsonRpc, &id_of(&task), Some(0))
        .await);
    let size_after: usize = artifact_texts(&after).iter().map(String::len).sum();
    assert_eq!(size_after, size);
}
