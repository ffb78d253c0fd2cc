//! One trace across two agents (issue 49): our a2a-local delegates to a second one, both
//! export their spans over OTLP to a receiver of the test's own on 127.0.0.1, and the spans
//! they export make one tree under the caller's `traceparent`: the caller → our operation →
//! our agent's execution → the outbound call → the remote's operation → the remote's push
//! back → the relay that takes it (→ our GetTask of the remote's task → the remote's GetTask);
//! and our operation → our resumption (linked to that relay: what woke it) → the resumed
//! execution. Our polls and cancels of a remote task are client spans of ours, parents of the
//! remote's operations, and a poll that ends a wait is what the resumption links to. No span
//! carries a credential. Both tasks keep the trace id, which `a2a get --trace` prints. Spans
//! are flushed when a server stops (SIGINT, as Ctrl-C): the tests stop both before they read
//! what was exported, so no wait on a timer is needed.

use std::time::Duration;

use a2a_e2e::otlp::{OtlpReceiver, ReceivedSpan};
use a2a_e2e::*;
use serde_json::json;

const WITHIN: Duration = Duration::from_secs(120);

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
/// The traces of the second test's poll and cancel.
const POLL_TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const CANCEL_TRACE_ID: &str = "5bf92f3577b34da6a3ce929d0e0e4736";

fn exporting(receiver: &OtlpReceiver, service: &str) -> Vec<(String, String)> {
    vec![
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT".into(),
            receiver.endpoint().into(),
        ),
        ("OTEL_SERVICE_NAME".into(), service.into()),
    ]
}

async fn start(env: &[(String, String)]) -> Server {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Server::start_with_env(&env).await
}

/// The remote and ours, both exporting to `receiver`; ours polls a remote task every
/// `poll_secs` seconds (ten times that when it pushes).
async fn remote_and_ours(receiver: &OtlpReceiver, poll_secs: &str) -> (Server, Server) {
    let remote = start(&exporting(receiver, "remote")).await;
    let mut ours_env = exporting(receiver, "ours");
    ours_env.push(("A2A_REMOTE_POLL_SECS".into(), poll_secs.into()));
    (remote, start(&ours_env).await)
}

/// Every span `receiver` got once both servers stopped: stopping (SIGINT, as Ctrl-C) flushes
/// what each exported.
async fn spans_once_stopped(
    receiver: &OtlpReceiver,
    servers: [&mut Server; 2],
) -> Vec<ReceivedSpan> {
    for server in servers {
        server.interrupt();
        assert!(server.wait_for_exit(WITHIN).await.success());
    }
    receiver.spans()
}

/// The one span of `service` named `name` of `kind` whose parent is `parent`.
fn child<'a>(
    spans: &'a [ReceivedSpan],
    service: &str,
    name: &str,
    kind: &str,
    parent: &str,
) -> &'a ReceivedSpan {
    let found: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.service == service && s.name == name && s.kind == kind)
        .filter(|s| s.parent_span_id == parent)
        .collect();
    assert!(
        !found.is_empty(),
        "no {kind} span {name} of {service} under {parent}; the spans:\n{}",
        tree(spans)
    );
    found[0]
}

/// The one span `span` links to, found among `spans` (in its trace).
fn linked<'a>(spans: &'a [ReceivedSpan], span: &ReceivedSpan) -> &'a ReceivedSpan {
    assert_eq!(span.links.len(), 1, "{span:?}\n{}", tree(spans));
    let (trace_id, span_id) = &span.links[0];
    assert_eq!(trace_id, &span.trace_id, "{span:?}");
    spans
        .iter()
        .find(|s| &s.span_id == span_id)
        .unwrap_or_else(|| panic!("{span:?} links to no span of the trace:\n{}", tree(spans)))
}

/// `call` is our client span of `method` for the remote task `remote_id` of the agent at
/// `agent` (its URL as called, without credentials); returns the remote's server span of
/// it, its child.
fn answered<'a>(
    spans: &'a [ReceivedSpan],
    call: &ReceivedSpan,
    method: &str,
    remote_id: &str,
    agent: &str,
) -> &'a ReceivedSpan {
    assert_eq!(call.attr("a2a.method.name"), method, "{call:?}");
    assert_eq!(call.attr("a2a.task.id"), remote_id, "{call:?}");
    assert_eq!(call.attr("url.full"), format!("{agent}/"), "{call:?}");
    assert_eq!(call.attr("server.address"), "127.0.0.1", "{call:?}");
    let theirs = child(spans, "remote", method, "SPAN_KIND_SERVER", &call.span_id);
    assert_eq!(theirs.attr("a2a.task.id"), remote_id, "{theirs:?}");
    theirs
}

/// Our client span of `method` under `parent` ([`answered`]), and the remote's span of it.
fn remote_call<'a>(
    spans: &'a [ReceivedSpan],
    method: &str,
    parent: &str,
    remote_id: &str,
    agent: &str,
) -> (&'a ReceivedSpan, &'a ReceivedSpan) {
    let call = child(spans, "ours", method, "SPAN_KIND_CLIENT", parent);
    (call, answered(spans, call, method, remote_id, agent))
}

/// Every span of the remote whose parent is one of ours has a client span of ours as its
/// parent: no call of ours to it goes without its own span.
fn assert_calls_are_client_spans(spans: &[ReceivedSpan]) {
    for theirs in spans.iter().filter(|s| s.service == "remote") {
        if let Some(parent) = spans
            .iter()
            .find(|s| s.service == "ours" && s.span_id == theirs.parent_span_id)
        {
            assert_eq!(
                (parent.kind.as_str(), parent.name.as_str()),
                ("SPAN_KIND_CLIENT", theirs.name.as_str()),
                "{theirs:?}\n{}",
                tree(spans)
            );
        }
    }
}

fn tree(spans: &[ReceivedSpan]) -> String {
    spans
        .iter()
        .map(|s| {
            format!(
                "{} {} {} {} <- {} {:?} links {:?}",
                s.service, s.kind, s.name, s.span_id, s.parent_span_id, s.attributes, s.links
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The trace's spans as JSON, one object a line, for `infra/trace-picture.py` to draw
/// (docs/tracing.md: `A2A_TRACE_SPANS_FILE` makes the test write them).
fn write_spans(file: &str, spans: &[ReceivedSpan]) {
    let lines: Vec<String> = spans
        .iter()
        .map(|s| {
            json!({
                "service": s.service, "name": s.name, "kind": s.kind,
                "spanId": s.span_id, "parentSpanId": s.parent_span_id,
                "startUnixNano": s.start_unix_nano, "endUnixNano": s.end_unix_nano,
                "taskState": s.attr("a2a.task.state"),
                "links": s.links.iter().map(|(_, span)| span).collect::<Vec<_>>(),
            })
            .to_string()
        })
        .collect();
    std::fs::write(file, lines.join("\n") + "\n").expect("write the trace's spans");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_crosses_a_delegation_and_its_durable_wait() {
    if !store_ready() {
        return;
    }
    let receiver = OtlpReceiver::start().await;
    // Polled every 300 s: what wakes our wait is the remote's push.
    let (mut remote, mut ours) = remote_and_ours(&receiver, "30").await;

    // Our caller asks for pushes too, with credentials, a token and a URL whose query holds
    // a secret: none of them may show in a span.
    let mut hook = Webhook::start().await;
    let secrets = ["cred-inline", "tok-inline", "query-secret"];
    let traceparent = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    let traced = ours.client_with_headers(&[("traceparent", &traceparent)]);
    let request = send_request_with(
        &format!("delegate {} slow 2 100", remote.base()),
        json!({"taskPushNotificationConfig": {
            "url": format!("{}?key=query-secret", hook.url),
            "token": "tok-inline",
            "authentication": {"scheme": "Bearer", "credentials": "cred-inline"},
        }}),
    );
    let answer = ok(traced.send(Binding::Rest, request).await);
    let id = id_of(task_of(&answer));
    let task = ours.await_terminal(&id, WITHIN).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    hook.until(WITHIN, |p| {
        p.json()["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    })
    .await;
    let listed = ok(remote.list_tasks(Binding::JsonRpc, json!({})).await);
    let remote_id = id_of(&listed["tasks"][0]);
    // The task keeps the trace it was created in: `a2a get --trace` prints it, and the
    // remote's task names the same trace.
    let printed = a2a(&["get", "--trace", ours.base(), &id]).await;
    assert_eq!(
        (printed.code, printed.stdout.trim()),
        (0, TRACE_ID),
        "{printed:?}"
    );
    let printed = a2a(&["get", "--trace", remote.base(), &remote_id]).await;
    assert_eq!(
        (printed.code, printed.stdout.trim()),
        (0, TRACE_ID),
        "{printed:?}"
    );

    let spans = spans_once_stopped(&receiver, [&mut ours, &mut remote]).await;
    let in_trace = of_trace(&spans, TRACE_ID);

    let operation = child(
        &in_trace,
        "ours",
        "SendMessage",
        "SPAN_KIND_SERVER",
        CALLER_SPAN,
    );
    assert_eq!(operation.attr("a2a.method.name"), "SendMessage");
    assert_eq!(operation.attr("a2a.task.id"), id);
    assert_eq!(operation.attr("a2a.task.state"), "TASK_STATE_COMPLETED");
    let execution = child(
        &in_trace,
        "ours",
        "invoke_agent",
        "SPAN_KIND_INTERNAL",
        &operation.span_id,
    );
    assert_eq!(execution.attr("a2a.task.id"), id);
    let (_, theirs) = remote_call(
        &in_trace,
        "SendMessage",
        &execution.span_id,
        &remote_id,
        remote.base(),
    );
    child(
        &in_trace,
        "remote",
        "invoke_agent",
        "SPAN_KIND_INTERNAL",
        &theirs.span_id,
    );
    // Each of the remote's pushes is a client span of its operation, taken by our relay.
    let pushes: Vec<&ReceivedSpan> = in_trace
        .iter()
        .filter(|s| s.service == "remote" && s.name == "push_notification")
        .collect();
    assert!(!pushes.is_empty(), "{}", tree(&in_trace));
    for push in &pushes {
        assert_eq!(push.kind, "SPAN_KIND_CLIENT");
        assert_eq!(push.parent_span_id, theirs.span_id, "{}", tree(&in_trace));
        assert!(!push.attr("url.full").contains('?'), "{push:?}");
        child(
            &in_trace,
            "ours",
            "relay_push",
            "SPAN_KIND_SERVER",
            &push.span_id,
        );
    }
    // Our resumption is in the trace that parked the wait, a child of our operation, linked
    // to what ended the wait: the relay of the remote's last push (its stop), which read the
    // remote's task whole with a GetTask of its own, a client span of ours.
    let resume = child(
        &in_trace,
        "ours",
        "resume",
        "SPAN_KIND_INTERNAL",
        &operation.span_id,
    );
    let waker = linked(&in_trace, resume);
    assert_eq!(
        (waker.service.as_str(), waker.name.as_str()),
        ("ours", "relay_push"),
        "{}",
        tree(&in_trace)
    );
    assert!(pushes.iter().any(|p| p.span_id == waker.parent_span_id));
    remote_call(
        &in_trace,
        "GetTask",
        &waker.span_id,
        &remote_id,
        remote.base(),
    );
    let resumed = child(
        &in_trace,
        "ours",
        "invoke_agent",
        "SPAN_KIND_INTERNAL",
        &resume.span_id,
    );
    assert_eq!(resumed.attr("a2a.task.id"), id);
    assert_calls_are_client_spans(&in_trace);

    // Our pushes to our caller's webhook are spans of our operation, their URL shown
    // without its query.
    let ours_pushes: Vec<&ReceivedSpan> = in_trace
        .iter()
        .filter(|s| s.service == "ours" && s.name == "push_notification")
        .collect();
    assert!(!ours_pushes.is_empty(), "{}", tree(&in_trace));
    for push in &ours_pushes {
        assert_eq!(
            push.parent_span_id,
            operation.span_id,
            "{}",
            tree(&in_trace)
        );
        assert_eq!(push.attr("url.full"), hook.url, "{push:?}");
    }

    // Every span the two servers exported is in the caller's trace but those of the test's
    // own reads (sent without a trace: each its own), and none carries a credential: no
    // token, no Authorization, no query string of a URL.
    for span in spans.iter().filter(|s| s.trace_id != TRACE_ID) {
        assert!(
            span.parent_span_id.is_empty()
                && ["GetTask", "ListTasks"].contains(&span.name.as_str()),
            "{span:?}"
        );
    }
    if let Ok(file) = std::env::var("A2A_TRACE_SPANS_FILE") {
        write_spans(&file, &in_trace);
    }
    assert_no_credentials(&spans, &secrets);
}

/// No attribute of `spans` is a token or an Authorization, nor holds one of `secrets`.
fn assert_no_credentials(spans: &[ReceivedSpan], secrets: &[&str]) {
    for span in spans {
        for (key, value) in &span.attributes {
            let key = key.to_ascii_lowercase();
            assert!(
                !key.contains("authorization") && !key.contains("token"),
                "{span:?}"
            );
            for secret in secrets {
                assert!(!value.contains(secret), "{span:?}");
            }
        }
    }
}

/// The spans of trace `trace_id` among `spans`.
fn of_trace(spans: &[ReceivedSpan], trace_id: &str) -> Vec<ReceivedSpan> {
    spans
        .iter()
        .filter(|s| s.trace_id == trace_id)
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_polls_and_cancels_of_a_remote_task_are_client_spans_of_ours() {
    if !store_ready() {
        return;
    }
    let receiver = OtlpReceiver::start().await;
    let (mut remote, mut ours) = remote_and_ours(&receiver, "1").await;
    // The remote's card, saying it does not push, served by a front of the test's own: ours
    // calls the remote itself (the interfaces the card names) and polls its task, every
    // second, so that what ends a wait is a poll.
    let mut card: serde_json::Value = http_client()
        .get(format!("{}/.well-known/agent-card.json", remote.base()))
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .expect("the remote's card")
        .json()
        .await
        .expect("a JSON card");
    card["capabilities"]["pushNotifications"] = false.into();
    let front = HostileAgent::start(Hostility::Card(card)).await;

    // A task of ours waiting for a long one of the remote's, canceled by a caller in a trace
    // of its own: ours cancels the remote's task.
    let answer = ok(ours
        .send(
            Binding::Rest,
            send_request_with(
                &format!("delegate {} slow 60 1000", front.base),
                json!({"returnImmediately": true}),
            ),
        )
        .await);
    let canceled_id = id_of(task_of(&answer));
    ours.logs_once_containing(
        &format!("the execution parked on a durable wait task_id={canceled_id}"),
        WITHIN,
    )
    .await;
    let listed = ok(remote.list_tasks(Binding::JsonRpc, json!({})).await);
    let remote_canceled = id_of(&listed["tasks"][0]);
    let canceling = ours.client_with_headers(&[(
        "traceparent",
        &format!("00-{CANCEL_TRACE_ID}-{CALLER_SPAN}-01"),
    )]);
    let canceled = ok(canceling.cancel(Binding::JsonRpc, &canceled_id).await);
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");
    let theirs = remote.await_terminal(&remote_canceled, WITHIN).await;
    assert_eq!(state(&theirs), "TASK_STATE_CANCELED", "{theirs}");

    // A task of ours whose wait a poll ends.
    let polling = ours.client_with_headers(&[(
        "traceparent",
        &format!("00-{POLL_TRACE_ID}-{CALLER_SPAN}-01"),
    )]);
    let answer = ok(polling
        .send(
            Binding::Rest,
            send_request(&format!("delegate {} slow 2 100", front.base)),
        )
        .await);
    let polled_id = id_of(task_of(&answer));
    let task = ours.await_terminal(&polled_id, WITHIN).await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    let listed = ok(remote.list_tasks(Binding::JsonRpc, json!({})).await);
    let remote_polled = listed["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(id_of)
        .find(|id| *id != remote_canceled)
        .expect("the remote's second task");

    let spans = spans_once_stopped(&receiver, [&mut ours, &mut remote]).await;

    // The cancel: our operation → our CancelTask call → the remote's CancelTask.
    let in_trace = of_trace(&spans, CANCEL_TRACE_ID);
    let operation = child(
        &in_trace,
        "ours",
        "CancelTask",
        "SPAN_KIND_SERVER",
        CALLER_SPAN,
    );
    assert_eq!(operation.attr("a2a.task.id"), canceled_id);
    let (_, theirs) = remote_call(
        &in_trace,
        "CancelTask",
        &operation.span_id,
        &remote_canceled,
        &front.base,
    );
    assert_eq!(theirs.attr("a2a.task.state"), "TASK_STATE_CANCELED");
    assert_calls_are_client_spans(&in_trace);

    // The poll: our GetTask of the remote's task, in the trace of the operation that parked
    // the wait, is the parent of the remote's GetTask; the one that read it COMPLETED ended
    // the wait, and our resumption (our operation's child) links to it.
    let in_trace = of_trace(&spans, POLL_TRACE_ID);
    let operation = child(
        &in_trace,
        "ours",
        "SendMessage",
        "SPAN_KIND_SERVER",
        CALLER_SPAN,
    );
    let resume = child(
        &in_trace,
        "ours",
        "resume",
        "SPAN_KIND_INTERNAL",
        &operation.span_id,
    );
    let poll = linked(&in_trace, resume);
    assert_eq!(
        (
            poll.service.as_str(),
            poll.name.as_str(),
            poll.kind.as_str()
        ),
        ("ours", "GetTask", "SPAN_KIND_CLIENT"),
        "{}",
        tree(&in_trace)
    );
    assert_eq!(
        poll.parent_span_id,
        operation.span_id,
        "{}",
        tree(&in_trace)
    );
    assert_eq!(poll.attr("a2a.task.state"), "TASK_STATE_COMPLETED");
    answered(&in_trace, poll, "GetTask", &remote_polled, &front.base);
    child(
        &in_trace,
        "ours",
        "invoke_agent",
        "SPAN_KIND_INTERNAL",
        &resume.span_id,
    );
    assert_calls_are_client_spans(&in_trace);
    assert_no_credentials(&spans, &[]);
}
