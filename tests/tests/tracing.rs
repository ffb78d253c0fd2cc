//! One trace across two agents (issue 49): our a2a-local delegates to a second one, both
//! export their spans over OTLP to a receiver of the test's own on 127.0.0.1, and the spans
//! they export make one tree under the caller's `traceparent`: the caller → our operation →
//! our agent's execution → the outbound call → the remote's operation → the remote's push
//! back → the relay that takes it → our resumption → the resumed execution. No span carries a
//! credential. Both tasks keep the trace id, which `a2a get --trace` prints. Spans are flushed when a server stops (SIGINT, as Ctrl-C): the test stops both
//! before it reads what they exported, so no wait on a timer is needed.

use std::time::Duration;

use a2a_e2e::otlp::{OtlpReceiver, ReceivedSpan};
use a2a_e2e::*;
use serde_json::json;

const WITHIN: Duration = Duration::from_secs(120);

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

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

fn tree(spans: &[ReceivedSpan]) -> String {
    spans
        .iter()
        .map(|s| {
            format!(
                "{} {} {} {} <- {} {:?}",
                s.service, s.kind, s.name, s.span_id, s.parent_span_id, s.attributes
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
    let mut remote = start(&exporting(&receiver, "remote")).await;
    // Polled every 30 s: what wakes our wait is the remote's push.
    let mut ours_env = exporting(&receiver, "ours");
    ours_env.push(("A2A_REMOTE_POLL_SECS".into(), "30".into()));
    let mut ours = start(&ours_env).await;

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

    // Stopping flushes what each exported.
    for server in [&mut ours, &mut remote] {
        server.interrupt();
        assert!(server.wait_for_exit(WITHIN).await.success());
    }
    let spans = receiver.spans();
    let in_trace: Vec<ReceivedSpan> = spans
        .iter()
        .filter(|s| s.trace_id == TRACE_ID)
        .cloned()
        .collect();

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
    let call = child(
        &in_trace,
        "ours",
        "SendMessage",
        "SPAN_KIND_CLIENT",
        &execution.span_id,
    );
    assert_eq!(call.attr("a2a.task.id"), remote_id);
    assert_eq!(call.attr("server.address"), "127.0.0.1");
    assert_eq!(call.attr("url.full"), format!("{}/", remote.base()));
    let theirs = child(
        &in_trace,
        "remote",
        "SendMessage",
        "SPAN_KIND_SERVER",
        &call.span_id,
    );
    assert_eq!(theirs.attr("a2a.task.id"), remote_id);
    child(
        &in_trace,
        "remote",
        "invoke_agent",
        "SPAN_KIND_INTERNAL",
        &theirs.span_id,
    );
    // Each of the remote's pushes is a client span of its operation, taken by our relay; the
    // one that ended the wait (the last) is the parent of our resumption.
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
    let resume = in_trace
        .iter()
        .find(|s| s.service == "ours" && s.name == "resume")
        .unwrap_or_else(|| panic!("no resumption in the trace:\n{}", tree(&in_trace)));
    let waker = in_trace
        .iter()
        .find(|s| s.span_id == resume.parent_span_id)
        .unwrap_or_else(|| {
            panic!(
                "the resumption's parent is not in the trace:\n{}",
                tree(&in_trace)
            )
        });
    assert_eq!(waker.name, "relay_push", "{}", tree(&in_trace));
    assert!(pushes.iter().any(|p| p.span_id == waker.parent_span_id));
    let resumed = child(
        &in_trace,
        "ours",
        "invoke_agent",
        "SPAN_KIND_INTERNAL",
        &resume.span_id,
    );
    assert_eq!(resumed.attr("a2a.task.id"), id);

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
    for span in &spans {
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
