//! The worker function's handler against moto (`eval "$(infra/moto.sh env-start)"` first;
//! `infra/test-all.sh` does it): invoked by its schedule it ends the tasks whose inline
//! execution died; invoked with an SQS batch it runs the batch as before.

use std::sync::Arc;
use std::time::Duration;

use a2a_aws::resources::{self, Resources};
use a2a_aws::{AwsAdapters, AwsClients, SqsQueue};
use a2a_core::{
    A2aService, Agent, AgentDescription, AgentError, AgentRequest, Emitter, Owner, Placement,
    ServiceConfig, StoredTask, TaskStore,
};
use a2a_lambda_glue::WorkBatch;
use a2a_protocol::{TaskState, Timestamp};
use serde_json::json;

/// The sweep runs no agent; the service needs one.
struct Idle;

#[async_trait::async_trait]
impl Agent for Idle {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "idle".into(),
            ..Default::default()
        }
    }

    fn placement(&self, _request: &AgentRequest) -> Placement {
        Placement::Inline
    }

    async fn execute(&self, _request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        emitter.complete(None).await
    }
}

/// What EventBridge Scheduler (a SAM `Schedule` event) hands the function.
fn scheduled_event() -> serde_json::Value {
    json!({
        "version": "0",
        "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": "2026-11-23T01:00:00Z",
        "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/sweep"],
        "detail": {}
    })
}

/// A task left WORKING by an inline execution whose instance was lost: its lease is over.
async fn orphan(store: &dyn TaskStore, owner: &Owner) -> StoredTask {
    let task_id = uuid::Uuid::new_v4().to_string();
    let (head, events) = a2a_store_contract::new_task(
        owner,
        &task_id,
        &uuid::Uuid::new_v4().to_string(),
        TaskState::Working,
        Timestamp::now(),
        Timestamp::from_millis(Timestamp::now().millis() + 3_600_000),
    );
    store.create_task(&head, &events).await.expect("create");
    let ended = Timestamp::from_millis(Timestamp::now().millis() - 1_000);
    assert!(store
        .acquire_inline_lease(owner, &task_id, "a-lost-instance", ended)
        .await
        .expect("lease"));
    head
}

#[tokio::test]
async fn the_scheduled_invocation_ends_orphaned_tasks_and_batches_still_run() {
    let Some(sdk) = a2a_test_support::emulator("a2a-lambda-glue worker").await else {
        return;
    };
    let clients = AwsClients::from_sdk_config(&sdk);
    let prefix = format!("w{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let resources = Resources::named(&prefix);
    let config = resources::create_all(&clients, &resources)
        .await
        .expect("create the test resources on the emulator");
    let adapters = AwsAdapters::new(&clients, &config);
    let store: Arc<dyn TaskStore> = Arc::new(adapters.store.clone());
    let batch = WorkBatch {
        service: A2aService::new(
            ServiceConfig {
                background_inline: false,
                ..ServiceConfig::default()
            },
            Arc::new(Idle),
            store.clone(),
            Arc::new(adapters.work.clone()),
            Arc::new(adapters.push.clone()),
        ),
        queue: SqsQueue::new(clients.sqs.clone(), &config.work_queue_url),
        visibility: Duration::from_secs(30),
    };
    let owner = Owner::anonymous("");
    let head = orphan(&*store, &owner).await;

    let out = batch
        .handle_invocation(scheduled_event())
        .await
        .expect("the sweep runs");
    assert_eq!(out, json!({"endedTasks": 1}));
    let after = store
        .load_task(&owner, &head.task.id)
        .await
        .expect("load")
        .expect("the task");
    assert_eq!(after.task.status.state, TaskState::Failed);
    assert_eq!(after.version, 2);
    // Nothing left for the next run.
    assert_eq!(
        batch
            .handle_invocation(scheduled_event())
            .await
            .expect("sweep"),
        json!({"endedTasks": 0})
    );

    // An SQS batch is still a batch (an empty one reports no failures).
    let out = batch
        .handle_invocation(json!({"Records": []}))
        .await
        .expect("a batch");
    assert_eq!(out, json!({"batchItemFailures": []}));
    // Anything else is refused.
    assert!(batch.handle_invocation(json!({"hello": 1})).await.is_err());

    resources::delete_all(&clients, &resources).await;
}

#[tokio::test]
async fn a_job_whose_dead_lettering_fails_stays_on_the_queue() {
    let Some(sdk) = a2a_test_support::emulator("a2a-lambda-glue worker").await else {
        return;
    };
    let clients = AwsClients::from_sdk_config(&sdk);
    let prefix = format!("w{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let resources = Resources::named(&prefix);
    let config = resources::create_all(&clients, &resources)
        .await
        .expect("create the test resources on the emulator");
    let adapters = AwsAdapters::new(&clients, &config);
    // A dead-letter queue that refuses (it does not exist): dead-lettering fails.
    let missing = format!("{}-missing", config.work_queue_url);
    let batch = WorkBatch {
        service: A2aService::new(
            ServiceConfig {
                background_inline: false,
                ..ServiceConfig::default()
            },
            Arc::new(Idle),
            Arc::new(adapters.store.clone()),
            Arc::new(adapters.work.clone()),
            Arc::new(adapters.push.clone()),
        ),
        queue: SqsQueue::new(clients.sqs.clone(), &config.work_queue_url)
            .with_dead_letter_url(&missing),
        visibility: Duration::from_secs(30),
    };
    let record = json!({
        "messageId": "m-unreadable", "receiptHandle": "r-1", "body": "not a job",
        "attributes": {"ApproximateReceiveCount": "1"}, "messageAttributes": {},
        "eventSource": "aws:sqs"
    });
    let out = batch
        .handle_invocation(json!({ "Records": [record] }))
        .await
        .expect("a batch");
    // Reported, so the event source mapping does not delete it: it stays for a redrive.
    assert_eq!(
        out,
        json!({"batchItemFailures": [{"itemIdentifier": "m-unreadable"}]})
    );
    resources::delete_all(&clients, &resources).await;
}
