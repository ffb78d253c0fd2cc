//! Streams: event order, incremental delivery, resubscription with `Last-Event-ID`, and
//! several subscribers on one task.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use a2a_e2e::*;
use serde_json::{json, Value};

both_bindings!(
    streamed_slow_task_events_in_order,
    resubscribe_with_last_event_id_loses_nothing,
    concurrent_subscribers_see_the_same_events,
    streamed_direct_message_reply,
);

async fn streamed_slow_task_events_in_order(b: Binding) {
    let server = Server::start().await;
    let request = send_request("slow 3 50");
    let mut stream = server
        .stream(b, request)
        .await
        .unwrap_or_else(|e| panic!("stream: {}", e.body));
    assert!(stream
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/event-stream")));
    let mut events = Vec::new();
    let mut arrivals = Vec::new();
    while let Some(event) = stream.next_event().await {
        arrivals.push(Instant::now());
        events.push(event);
    }
    let payloads: Vec<Value> = events.iter().map(|e| e.payload()).collect();
    let kinds: Vec<&str> = payloads.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            "task",
            "statusUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate"
        ],
        "{payloads:#?}"
    );
    let task = &payloads[0]["task"];
    let id = id_of(task);
    let context = task["contextId"].clone();
    assert!(
        matches!(state(task), "TASK_STATE_SUBMITTED" | "TASK_STATE_WORKING"),
        "{task}"
    );
    assert_eq!(event_state(&payloads[1]), Some("TASK_STATE_WORKING"));
    let chunks: Vec<&Value> = payloads[2..5]
        .iter()
        .map(|p| &p["artifactUpdate"])
        .collect();
    let artifact_id = chunks[0]["artifact"]["artifactId"].clone();
    for (i, chunk) in chunks.iter().enumerate() {
        assert_eq!(chunk["taskId"], json!(id));
        assert_eq!(chunk["contextId"], context);
        assert_eq!(chunk["artifact"]["artifactId"], artifact_id, "one artifact");
        assert_eq!(
            artifact_text(&chunk["artifact"]),
            format!("chunk-{} ", i + 1)
        );
        assert_eq!(
            chunk["append"].as_bool().unwrap_or(false),
            i > 0,
            "append: {chunk}"
        );
        assert_eq!(
            chunk["lastChunk"].as_bool().unwrap_or(false),
            i == 2,
            "lastChunk: {chunk}"
        );
    }
    assert_eq!(event_state(&payloads[5]), Some("TASK_STATE_COMPLETED"));
    for p in &payloads[1..] {
        let inner = p.as_object().unwrap().values().next().unwrap();
        assert_eq!(inner["taskId"], json!(id), "{p}");
        assert_eq!(inner["contextId"], context, "{p}");
    }
    let seqs: Vec<u64> = events.iter().map(|e| e.seq()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "ids increase: {seqs:?}"
    );
    if b == Binding::JsonRpc {
        let first = events[0].json();
        assert!(
            first["id"].is_number(),
            "the envelope echoes the request id: {first}"
        );
        assert!(events.iter().all(|e| e.json()["id"] == first["id"]));
    }
    // Delivered as produced, not buffered until the end: the chunks are 50 ms apart.
    let spread = *arrivals.last().unwrap() - arrivals[0];
    assert!(
        spread >= Duration::from_millis(100),
        "events arrived incrementally (first to last: {spread:?})"
    );
    // The stream's events add up to the stored task.
    let stored = ok(server.get_task(b, &id, None).await);
    assert_eq!(
        artifact_text(&artifacts(&stored)[0]),
        "chunk-1 chunk-2 chunk-3 "
    );
}

/// Reads a subscription's events into (seq, payload) pairs.
fn pairs(events: &[SseEvent]) -> Vec<(u64, Value)> {
    events.iter().map(|e| (e.seq(), e.payload())).collect()
}

async fn resubscribe_with_last_event_id_loses_nothing(b: Binding) {
    let server = Server::start().await;
    // Not streamed, so `slow` is queued on the worker loop.
    let response = ok(server
        .send(
            Binding::JsonRpc,
            send_request_with("slow 10 100", json!({"returnImmediately": true})),
        )
        .await);
    let id = id_of(task_of(&response));

    let mut first = server
        .subscribe(b, &id, None)
        .await
        .unwrap_or_else(|e| panic!("subscribe: {}", e.body));
    let seen = first.take(3).await;
    drop(first);
    let seen = pairs(&seen);
    assert_eq!(kind(&seen[0].1), "task", "a snapshot first: {:?}", seen[0]);
    assert!(seen.iter().skip(1).all(|(_, p)| kind(p) != "task"));
    let snapshot_seq = seen[0].0;
    let snapshot = seen[0].1["task"].clone();
    let last_seen = seen.last().unwrap().0;

    // Without Last-Event-ID: a fresh snapshot first, as of now.
    let mut fresh = server.subscribe(b, &id, None).await.expect("resubscribe");
    let fresh_first = fresh.next_event().await.expect("snapshot");
    assert_eq!(kind(&fresh_first.payload()), "task", "{:?}", fresh_first);
    assert!(fresh_first.seq() >= last_seen, "the snapshot is current");
    drop(fresh);

    // With Last-Event-ID: exactly what followed, no snapshot.
    let mut resumed = server
        .subscribe(b, &id, Some(last_seen))
        .await
        .unwrap_or_else(|e| panic!("resume: {}", e.body));
    let rest = pairs(&resumed.collect_to_end(EVENT_TIMEOUT).await);
    assert!(!rest.is_empty());
    assert_ne!(
        kind(&rest[0].1),
        "task",
        "no snapshot on resume: {:?}",
        rest[0]
    );
    assert_eq!(rest[0].0, last_seen + 1, "resumes right after {last_seen}");

    let union: Vec<(u64, Value)> = seen.iter().cloned().chain(rest.iter().cloned()).collect();
    let seqs: Vec<u64> = union.iter().map(|(s, _)| *s).collect();
    let expected: Vec<u64> = (snapshot_seq..snapshot_seq + seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "gapless, no duplicates");
    let (_, last) = union.last().unwrap();
    assert_eq!(event_state(last), Some("TASK_STATE_COMPLETED"), "{last}");

    // The snapshot plus the chunks after it make exactly the ten chunks, in order.
    let mut text = artifacts(&snapshot)
        .first()
        .map(artifact_text)
        .unwrap_or_default();
    for (_, p) in &union[1..] {
        if let Some(update) = p.get("artifactUpdate") {
            text.push_str(&artifact_text(&update["artifact"]));
        }
    }
    let expected_text: String = (1..=10).map(|i| format!("chunk-{i} ")).collect();
    assert_eq!(text, expected_text);
    let stored = ok(server.get_task(b, &id, None).await);
    assert_eq!(artifact_text(&artifacts(&stored)[0]), expected_text);

    // After the end, a resume still replays exactly what followed the given event.
    let mut replay = server
        .subscribe(b, &id, Some(snapshot_seq))
        .await
        .unwrap_or_else(|e| panic!("resume after the end: {}", e.body));
    let replayed = pairs(&replay.collect_to_end(EVENT_TIMEOUT).await);
    assert_eq!(replayed, union[1..].to_vec(), "the log replays identically");
    // And without Last-Event-ID the terminal task cannot be subscribed to.
    err(server.subscribe(b, &id, None).await).assert_is(-32004, 400, "UNSUPPORTED_OPERATION");
}

async fn concurrent_subscribers_see_the_same_events(b: Binding) {
    let server = Server::start().await;
    let response = ok(server
        .send(
            b,
            send_request_with("slow 8 100", json!({"returnImmediately": true})),
        )
        .await);
    let id = id_of(task_of(&response));
    let other = match b {
        Binding::JsonRpc => Binding::Rest,
        Binding::Rest => Binding::JsonRpc,
    };
    let (a, c, d) = tokio::join!(
        server.subscribe(b, &id, None),
        server.subscribe(b, &id, None),
        server.subscribe(other, &id, None),
    );
    let (mut a, mut c, mut d) = (a.expect("a"), c.expect("c"), d.expect("d"));
    let (ea, ec, ed) = tokio::join!(
        a.collect_to_end(EVENT_TIMEOUT),
        c.collect_to_end(EVENT_TIMEOUT),
        d.collect_to_end(EVENT_TIMEOUT),
    );
    let all = [pairs(&ea), pairs(&ec), pairs(&ed)];
    for events in &all {
        assert_eq!(kind(&events[0].1), "task", "snapshot first");
        let seqs: Vec<u64> = events.iter().map(|(s, _)| *s).collect();
        assert!(
            seqs.windows(2).all(|w| w[1] == w[0] + 1),
            "gapless: {seqs:?}"
        );
        assert_eq!(
            event_state(&events.last().unwrap().1),
            Some("TASK_STATE_COMPLETED")
        );
    }
    // After the later snapshot, every subscriber got the very same (id, event) sequence.
    let start = all.iter().map(|e| e[0].0).max().unwrap();
    let tails: Vec<Vec<(u64, Value)>> = all
        .iter()
        .map(|e| e.iter().filter(|(s, _)| *s > start).cloned().collect())
        .collect();
    assert!(!tails[0].is_empty());
    assert_eq!(tails[0], tails[1], "two subscribers on {b:?}");
    assert_eq!(tails[0], tails[2], "a subscriber on the other binding");
    // Raw SSE data is identical on the same binding (REST carries no per-request envelope).
    if b == Binding::Rest {
        let raw = |events: &[SseEvent]| -> BTreeSet<(Option<String>, String)> {
            events
                .iter()
                .filter(|e| e.seq() > start)
                .map(|e| (e.id.clone(), e.data.clone()))
                .collect()
        };
        assert_eq!(raw(&ea), raw(&ec));
    }
}

async fn streamed_direct_message_reply(b: Binding) {
    // A Message-only stream: exactly one message, then the end.
    let server = Server::start().await;
    let mut request = send_request("anything");
    request["message"]["messageId"] = json!(format!("tck-message-response-{}", new_id()));
    let mut stream = server.stream(b, request.clone()).await.expect("stream");
    let events = stream.collect_to_end(EVENT_TIMEOUT).await;
    assert_eq!(events.len(), 1, "{events:#?}");
    let payload = events[0].payload();
    assert_eq!(kind(&payload), "message");
    assert_eq!(message_text(&payload["message"]), "Direct message response");
    assert_eq!(payload["message"]["role"], "ROLE_AGENT");
    // And on SendMessage the result is the message.
    request["message"]["messageId"] = json!(format!("tck-message-response-{}", new_id()));
    let response = ok(server.send(b, request).await);
    assert_eq!(
        message_text(&response["message"]),
        "Direct message response",
        "{response}"
    );
    assert!(response.get("task").is_none());
}

/// Status timestamps never go backwards along a task's events: ListTasks orders by them and
/// `statusTimestampAfter` filters on them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_timestamps_never_decrease_along_a_task() {
    if !store_ready() {
        return;
    }
    let server = Server::start().await;
    // The window for a backwards step is a millisecond boundary, so try many tasks.
    for i in 0..250 {
        let text = if i % 5 == 4 { "echo" } else { "hold" };
        let mut stream = server
            .stream(Binding::Rest, send_request(text))
            .await
            .expect("stream");
        let events = stream.collect_to_end(EVENT_TIMEOUT).await;
        let stamps: Vec<(String, String)> = events
            .iter()
            .map(|e| e.payload())
            .filter_map(|p| {
                let status = &p.get("task").or_else(|| p.get("statusUpdate"))?["status"];
                Some((
                    status["state"].as_str()?.to_string(),
                    status["timestamp"].as_str()?.to_string(),
                ))
            })
            .collect();
        assert!(stamps.len() >= 2, "{events:#?}");
        assert!(
            stamps.windows(2).all(|w| w[0].1 <= w[1].1),
            "task {i} ({text}): a later status has an earlier timestamp: {stamps:?}"
        );
    }
}

/// A stream is held at most `max_stream_duration` (docs/bounds.md; 14 minutes on Lambda, an
/// hour locally, 1 s here): then it ends, without a final event, while the task goes on; the
/// client resubscribes for the rest.
#[tokio::test]
async fn a_stream_ends_at_its_longest_and_the_task_goes_on() {
    let server = Server::start_with_env(&[("A2A_MAX_STREAM_SECS", "1")]).await;
    let mut stream = server
        .stream(Binding::JsonRpc, send_request("slow 8 400"))
        .await
        .unwrap_or_else(|e| panic!("stream: {}", e.body));
    let mut payloads = Vec::new();
    while let Some(event) = stream.next_event().await {
        payloads.push(event.payload());
    }
    let id = id_of(&payloads[0]["task"]);
    let chunks = payloads
        .iter()
        .filter(|p| kind(p) == "artifactUpdate")
        .count();
    assert!(chunks < 8, "the stream outlived its bound: {payloads:#?}");
    assert!(
        payloads
            .iter()
            .filter_map(event_state)
            .all(|s| !is_terminal(s)),
        "the task ended within the bound: {payloads:#?}"
    );
    let task = server.await_terminal(&id, Duration::from_secs(30)).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    let text: String = task["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(artifact_text)
        .collect();
    let whole: String = (1..=8).map(|i| format!("chunk-{i} ")).collect();
    assert_eq!(text, whole, "{task}");
}
