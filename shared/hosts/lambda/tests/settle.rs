//! On Lambda an instance is frozen as soon as its response is complete: a blocking send must
//! answer only once nothing of its request is left running. The functions' routers serve the
//! core as on Lambda (`background_inline: false`, DynamoDB on moto, where the push fan-out is the
//! table's stream, not the request's); the agent keeps working after its last emit, and the
//! test checks, the moment each response body is complete, that the agent's run has ended.
//! The REST answer (`send`), the JSON-RPC answer and a streamed one (`rpc`'s SSE) are checked.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2a_aws::resources::{self, Resources};
use a2a_aws::{AwsAdapters, AwsClients};
use a2a_core::{
    A2aService, Agent, AgentDescription, AgentError, AgentRequest, Emitter, Placement,
    ServiceConfig, TaskLogStore,
};
use a2a_http::HttpOptions;
use a2a_lambda_glue::HttpFunction;
use axum::body::Body;
use axum::http::Request;
use serde_json::json;
use tower::ServiceExt as _;

/// Completes, then keeps working a while: the work that must not outlive the response.
struct Lingering {
    ended: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl Agent for Lingering {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "lingering".into(),
            ..Default::default()
        }
    }

    fn placement(&self, _request: &AgentRequest) -> Placement {
        Placement::Inline
    }

    async fn execute(&self, request: AgentRequest, e: Emitter) -> Result<(), AgentError> {
        if request.text() == "working" {
            e.working(None).await?;
        }
        e.complete(Some(request.text())).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.ended.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn rpc(method: &str, id: &str, text: &str) -> serde_json::Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": method,
        "params": {"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]}}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_is_complete_only_after_its_execution_ended() {
    let Some(sdk) = a2a_test_support::emulator("a2a-lambda-glue settle").await else {
        return;
    };
    let clients = AwsClients::from_sdk_config(&sdk);
    let prefix = format!("s{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let names = Resources::named(&prefix);
    let config = resources::create_all(&clients, &names)
        .await
        .expect("the test resources");
    let adapters = AwsAdapters::new(&clients, &config);
    let ended = Arc::new(AtomicUsize::new(0));
    let service = A2aService::new(
        ServiceConfig {
            background_inline: false,
            ..ServiceConfig::default()
        },
        Arc::new(Lingering {
            ended: ended.clone(),
        }),
        Arc::new(adapters.store.clone()),
        Arc::new(adapters.work.clone()),
        Arc::new(adapters.push.clone()),
    );
    let mut done = 0;
    for (function, method) in [
        (HttpFunction::Send, "REST"),
        (HttpFunction::Rpc, "SendMessage"),
        (HttpFunction::Rpc, "SendStreamingMessage"),
    ] {
        let router =
            a2a_http::router_with(service.clone(), HttpOptions::default(), &function.surface());
        for text in ["at once", "working"] {
            let (path, body) = match method {
                "REST" => (
                    "/message:send",
                    rpc(method, &a2a_core::new_id(), text)["params"].clone(),
                ),
                _ => ("/jsonrpc", rpc(method, &a2a_core::new_id(), text)),
            };
            let request = Request::post(path)
                .header("content-type", "application/json")
                .header("a2a-version", "1.0")
                .body(Body::from(body.to_string()))
                .unwrap();
            let response = router.clone().oneshot(request).await.expect("a response");
            assert!(
                response.status().is_success(),
                "{function:?} {method} {text}: {}",
                response.status()
            );
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
                .await
                .expect("the whole body");
            let answer = String::from_utf8_lossy(&bytes);
            assert!(answer.contains("TASK_STATE_COMPLETED"), "{answer}");
            done += 1;
            assert_eq!(
                ended.load(Ordering::SeqCst),
                done,
                "{function:?}, {text}: the response ended before the execution"
            );
        }
    }
    resources::delete_all(&clients, &names).await;
}

/// Works past any deadline: WORKING, a first artifact, then plain work it cannot be
/// interrupted in, a second artifact and COMPLETED. Counts its runs that were dropped before
/// their end (a run is a future: stopping it drops it).
struct Long {
    started: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
    ended: Arc<AtomicUsize>,
}

/// Counts a drop unless disarmed: a run that ends disarms it.
struct DropGuard(Option<Arc<AtomicUsize>>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        if let Some(dropped) = self.0.take() {
            dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[async_trait::async_trait]
impl Agent for Long {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "long".into(),
            ..Default::default()
        }
    }

    fn placement(&self, _request: &AgentRequest) -> Placement {
        Placement::Inline
    }

    async fn execute(&self, _request: AgentRequest, e: Emitter) -> Result<(), AgentError> {
        self.started.fetch_add(1, Ordering::SeqCst);
        let mut guard = DropGuard(Some(self.dropped.clone()));
        e.working(Some("on it")).await?;
        let part = |text: &str| a2a_protocol::Artifact {
            artifact_id: format!("{}-out", e.task_id()),
            parts: vec![a2a_protocol::Part::text(text)],
            ..Default::default()
        };
        e.artifact(part("first "), false, false).await?;
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        e.artifact(part("second"), true, true).await?;
        e.complete(Some("done")).await?;
        guard.0 = None;
        self.ended.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// On Lambda nothing may run once a response is complete, and an agent may need longer than the
/// blocking deadline or the stream's: such an execution is stopped and handed over to the worker
/// before the answer goes out (the answer says WORKING); the worker's replay finishes the task,
/// without writing again what the first run wrote. Checked through the API Gateway functions
/// (`send`, `rpc` blocking and streaming) and the Function URL's one function (`front`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execution_past_its_deadline_is_handed_over_before_the_response_completes() {
    let Some(sdk) = a2a_test_support::emulator("a2a-lambda-glue hand-over").await else {
        return;
    };
    let clients = AwsClients::from_sdk_config(&sdk);
    let prefix = format!("h{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let names = Resources::named(&prefix);
    let config = resources::create_all(&clients, &names)
        .await
        .expect("the test resources");
    let adapters = AwsAdapters::new(&clients, &config);
    let (started, dropped, ended) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let service = A2aService::new(
        ServiceConfig {
            background_inline: false,
            blocking_timeout: Duration::from_millis(500),
            max_stream_duration: Duration::from_millis(500),
            ..ServiceConfig::default()
        },
        Arc::new(Long {
            started: started.clone(),
            dropped: dropped.clone(),
            ended: ended.clone(),
        }),
        Arc::new(adapters.store.clone()),
        Arc::new(adapters.work.clone()),
        Arc::new(adapters.push.clone()),
    );
    let worker = a2a_lambda_glue::WorkBatch {
        service: service.clone(),
        queue: a2a_aws::SqsQueue::new(clients.sqs.clone(), &config.work_queue_url),
        visibility: Duration::from_secs(30),
    };
    let store = adapters.store.clone();
    let mut runs = 0;
    for (function, method) in [
        (HttpFunction::Send, "REST"),
        (HttpFunction::Rpc, "SendMessage"),
        (HttpFunction::Rpc, "SendStreamingMessage"),
        (HttpFunction::Front, "REST"),
        (HttpFunction::Front, "SendStreamingMessage"),
    ] {
        let router =
            a2a_http::router_with(service.clone(), HttpOptions::default(), &function.surface());
        let (path, body) = match method {
            "REST" => (
                "/message:send",
                rpc(method, &a2a_core::new_id(), "long")["params"].clone(),
            ),
            _ => ("/jsonrpc", rpc(method, &a2a_core::new_id(), "long")),
        };
        let request = Request::post(path)
            .header("content-type", "application/json")
            .header("a2a-version", "1.0")
            .body(Body::from(body.to_string()))
            .unwrap();
        let response = router.oneshot(request).await.expect("a response");
        assert!(response.status().is_success(), "{function:?} {method}");
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("the whole body");
        runs += 1;
        // The moment the response is complete, the run is gone: stopped, not left to a frozen
        // instance, and it never got to its end.
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            runs,
            "{function:?} {method}: the execution outlived the response"
        );
        assert_eq!(
            ended.load(Ordering::SeqCst),
            runs - 1,
            "only the workers' runs ended"
        );
        let answer = String::from_utf8_lossy(&bytes);
        assert!(answer.contains("TASK_STATE_WORKING"), "{answer}");
        let task_id = task_id_in(&answer);

        // The worker gets the hand-over from the queue and finishes the task.
        let mut received = Vec::new();
        for _ in 0..20 {
            received = worker
                .queue
                .receive(1, Duration::from_secs(1), Some(Duration::from_secs(60)))
                .await
                .expect("receive");
            if !received.is_empty() {
                break;
            }
        }
        let message = received
            .pop()
            .expect("the hand-over job is on the work queue");
        let record = message.to_lambda_record("arn:aws:sqs:us-east-1:123456789012:work");
        let event = serde_json::from_value(json!({ "Records": [record] })).expect("an event");
        let out = worker.handle(event).await;
        assert!(out.batch_item_failures.is_empty(), "{out:?}");
        let owner = a2a_core::Owner::anonymous("");
        let head = store
            .load_task(&owner, &task_id)
            .await
            .expect("load")
            .expect("the task");
        assert_eq!(head.task.status.state, a2a_protocol::TaskState::Completed);
        let events = store
            .read_events(&owner, &task_id, 0, 100)
            .await
            .expect("the log");
        let working = events
            .iter()
            .filter(|e| e.event.state() == Some(a2a_protocol::TaskState::Working))
            .count();
        let artifacts = events
            .iter()
            .filter(|e| matches!(e.event, a2a_core::TaskEvent::Artifact { .. }))
            .count();
        assert_eq!(
            (working, artifacts),
            (1, 2),
            "{function:?} {method}: {events:?}"
        );
        assert_eq!(ended.load(Ordering::SeqCst), runs, "the worker's run ended");
    }
    assert_eq!(started.load(Ordering::SeqCst), 2 * runs);
    resources::delete_all(&clients, &names).await;
}

/// The task id in an answer: a REST or JSON-RPC Task, or the first event of a stream.
fn task_id_in(answer: &str) -> String {
    let key = "\"id\":\"";
    let start = answer.find(key).expect("a task id") + key.len();
    answer[start..].split('"').next().expect("an id").to_owned()
}
