//! The fan-out function's handler against moto (`eval "$(infra/moto.sh env-start)"` first;
//! `infra/test-all.sh` does it): a batch whose push jobs cannot be enqueued is reported from
//! its first record and counted as `FanoutFailures` (Lambda sees a successful invocation), and
//! a batch the event source mapping gave up on is replayed from the record its on-failure
//! destination holds, read again from the table's stream.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_aws::fanout::{passes_filter, Checkpoints, StreamPoller};
use a2a_aws::replay::StreamReader;
use a2a_aws::resources::{self, Resources};
use a2a_aws::{AwsAdapters, AwsClients, AwsConfig, SqsQueue};
use a2a_core::{
    A2aService, Agent, AgentDescription, AgentError, AgentRequest, Emitter, Owner, ServiceConfig,
    TaskLogStore,
};
use a2a_lambda_glue::{EmfObserver, FanoutBatch};
use a2a_protocol::{TaskPushNotificationConfig, TaskState, Timestamp};
use serde_json::{json, Value};

/// The fan-out runs no agent; the service needs one.
struct Idle;

#[async_trait::async_trait]
impl Agent for Idle {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "idle".into(),
            ..Default::default()
        }
    }

    async fn execute(&self, _request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        emitter.complete(None).await
    }
}

struct Stack {
    sdk: aws_config::SdkConfig,
    clients: AwsClients,
    resources: Resources,
    config: AwsConfig,
}

impl Stack {
    async fn new() -> Option<Self> {
        let sdk = a2a_test_support::emulator("a2a-lambda-glue fanout").await?;
        let clients = AwsClients::from_sdk_config(&sdk);
        let prefix = format!("f{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let resources = Resources::named(&prefix);
        let config = resources::create_all(&clients, &resources)
            .await
            .expect("create the test resources on the emulator");
        Some(Self {
            sdk,
            clients,
            resources,
            config,
        })
    }

    /// The fan-out's service, enqueueing on the push queue at `push_queue_url`.
    fn service(&self, push_queue_url: &str) -> A2aService {
        let config = AwsConfig {
            push_queue_url: push_queue_url.to_owned(),
            ..self.config.clone()
        };
        let adapters = AwsAdapters::new(&self.clients, &config);
        A2aService::new(
            ServiceConfig {
                background_inline: false,
                ..ServiceConfig::default()
            },
            Arc::new(Idle),
            Arc::new(adapters.store.clone()),
            Arc::new(adapters.work.clone()),
            Arc::new(adapters.push.clone()),
        )
    }

    /// A finished task with one push config: its write is one record that passes the filter.
    async fn task_with_push_config(&self) -> String {
        let store = AwsAdapters::new(&self.clients, &self.config).store;
        let owner = Owner::anonymous("");
        let (head, events) = a2a_store_contract::new_task(
            &owner,
            &a2a_core::new_id(),
            &a2a_core::new_id(),
            TaskState::Completed,
            Timestamp::now(),
            Timestamp::from_millis(Timestamp::now().millis() + 3_600_000),
        );
        let config = TaskPushNotificationConfig {
            id: "hook".into(),
            task_id: head.task.id.clone(),
            url: "https://receiver.example/ok".into(),
            ..Default::default()
        };
        store
            .create_task_with_push_configs(&head, &events, &[config])
            .await
            .unwrap();
        head.task.id
    }

    /// Every record of the table's stream that passes the fan-out's filter, in order.
    async fn filtered_records(&self) -> Vec<Value> {
        let mut poller = StreamPoller::new(&self.sdk, &self.config.table, Checkpoints::Memory)
            .await
            .expect("the table's stream");
        let mut records = Vec::new();
        while let Some(batch) = poller.next_batch().await.expect("the stream") {
            records.extend(batch.records.iter().cloned());
            poller.commit(&batch).await.unwrap();
        }
        records.into_iter().filter(passes_filter).collect()
    }

    async fn push_jobs(&self) -> Vec<String> {
        SqsQueue::new(self.clients.sqs.clone(), &self.config.push_queue_url)
            .receive(10, Duration::from_secs(1), None)
            .await
            .expect("receive")
            .into_iter()
            .map(|m| m.body)
            .collect()
    }
}

/// EMF lines, captured.
fn captured() -> (EmfObserver, Arc<Mutex<Vec<Value>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let observer = EmfObserver::with_sink(
        "ns",
        "fanout-fn",
        Arc::new(move |line: &str| {
            sink.lock()
                .unwrap()
                .push(serde_json::from_str(line).expect("a JSON line"));
        }),
    );
    (observer, lines)
}

#[tokio::test]
async fn a_batch_that_cannot_be_enqueued_is_retried_and_counted() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    stack.task_with_push_config().await;
    let records = stack.filtered_records().await;
    assert_eq!(records.len(), 1);
    // A push queue that does not exist: SendMessageBatch fails, as it would without the
    // permission or during an outage.
    let gone = format!("{}-gone.fifo", stack.config.push_queue_url);
    let (metrics, lines) = captured();
    let batch = FanoutBatch::new(stack.service(&gone)).with_metrics(metrics);
    let out = batch
        .handle_invocation(&json!({ "Records": records }))
        .await
        .expect("a partial batch response, not an invocation error");
    let first = records[0]["dynamodb"]["SequenceNumber"].clone();
    assert_eq!(
        out,
        json!({ "batchItemFailures": [{ "itemIdentifier": first }] })
    );
    let lines = lines.lock().unwrap().clone();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0][a2a_lambda_glue::metrics::FANOUT_FAILURES], 1.0);
    assert_eq!(lines[0]["FunctionName"], "fanout-fn");
    assert_eq!(lines[0]["records"], 1);
    assert_eq!(
        lines[0]["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Name"],
        a2a_lambda_glue::metrics::FANOUT_FAILURES
    );
    resources::delete_all(&stack.clients, &stack.resources).await;
}

#[tokio::test]
async fn a_batch_the_mapping_gave_up_on_is_replayed_from_its_failure_record() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    let first = stack.task_with_push_config().await;
    let second = stack.task_with_push_config().await;
    let records = stack.filtered_records().await;
    assert_eq!(records.len(), 2);
    let seq = |r: &Value| r["dynamodb"]["SequenceNumber"].as_str().unwrap().to_owned();
    let stream_arn = StreamPoller::new(&stack.sdk, &stack.config.table, Checkpoints::Memory)
        .await
        .unwrap()
        .stream_arn()
        .to_owned();
    let shard_id = aws_sdk_dynamodbstreams::Client::new(&stack.sdk)
        .describe_stream()
        .stream_arn(&stream_arn)
        .send()
        .await
        .unwrap()
        .stream_description()
        .unwrap()
        .shards()[0]
        .shard_id()
        .unwrap()
        .to_owned();
    // What Lambda puts on the on-failure destination for the second write alone.
    let failure = json!({
        "requestContext": {
            "requestId": "c9b8fa9f-5a7f-4e8a-9c2c-1b2f3a4d5e6f",
            "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:fanout",
            "condition": "RetryAttemptsExhausted",
            "approximateInvokeCount": 101
        },
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": null},
        "version": "1.0",
        "timestamp": "2026-11-26T10:00:05.000Z",
        "DDBStreamBatchInfo": {
            "shardId": shard_id,
            "startSequenceNumber": seq(&records[1]),
            "endSequenceNumber": seq(&records[1]),
            "approximateArrivalOfFirstRecord": "2026-11-26T10:00:00Z",
            "approximateArrivalOfLastRecord": "2026-11-26T10:00:00Z",
            "batchSize": 1,
            "streamArn": stream_arn
        }
    });
    let batch = FanoutBatch::new(stack.service(&stack.config.push_queue_url))
        .with_streams(StreamReader::new(&stack.sdk));
    let out = batch.handle_invocation(&failure).await.expect("replayed");
    assert_eq!(out, json!({"replayedRecords": 1, "writes": 1}));
    let jobs = stack.push_jobs().await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert!(jobs[0].contains(&second), "{jobs:?}");
    assert!(!jobs[0].contains(&first));

    // A handler without a streams client cannot replay: an invocation error, not a silent
    // success.
    let blind = FanoutBatch::new(stack.service(&stack.config.push_queue_url));
    assert!(blind.handle_invocation(&failure).await.is_err());
    resources::delete_all(&stack.clients, &stack.resources).await;
}
