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
    ServiceConfig,
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
