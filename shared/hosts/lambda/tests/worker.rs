//! The worker function's handler against moto (`eval "$(infra/moto.sh env-start)"` first;
//! `infra/test-all.sh` does it): invoked by its schedule it ends the tasks whose inline
//! execution died; invoked with an SQS batch it runs the batch as before.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

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
    assert_eq!(out, json!({"endedTasks": 1, "resumedExecutions": 0}));
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
        json!({"endedTasks": 0, "resumedExecutions": 0})
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

/// The worker's batch handler on fresh emulator resources, with the work queue's and its
/// dead-letter queue's URLs.
async fn work_batch(
    sdk: &aws_config::SdkConfig,
) -> (AwsClients, Resources, Arc<dyn TaskStore>, WorkBatch, String) {
    let clients = AwsClients::from_sdk_config(sdk);
    let prefix = format!("w{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let resources = Resources::named(&prefix);
    let config = resources::create_all(&clients, &resources)
        .await
        .expect("create the test resources on the emulator");
    let dlq = clients
        .sqs
        .get_queue_url()
        .queue_name(resources.work_dead_letter_queue.name.clone())
        .send()
        .await
        .expect("the dead-letter queue's URL")
        .queue_url
        .unwrap();
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
        queue: SqsQueue::new(clients.sqs.clone(), &config.work_queue_url)
            .with_dead_letter_url(&dlq),
        visibility: Duration::from_secs(30),
    };
    (clients, resources, store, batch, dlq)
}

/// A SUBMITTED task with its work job on the queue, received: the SQS event Lambda would hand
/// the worker, with `receive_count` as SQS's `ApproximateReceiveCount`.
async fn queued_task(
    clients: &AwsClients,
    store: &dyn TaskStore,
    batch: &WorkBatch,
    owner: &Owner,
    receive_count: u32,
) -> (String, aws_lambda_events::event::sqs::SqsEvent) {
    let task_id = uuid::Uuid::new_v4().to_string();
    let (head, events) = a2a_store_contract::new_task(
        owner,
        &task_id,
        &uuid::Uuid::new_v4().to_string(),
        TaskState::Submitted,
        Timestamp::now(),
        Timestamp::from_millis(Timestamp::now().millis() + 3_600_000),
    );
    store.create_task(&head, &events).await.expect("create");
    let job = a2a_core::WorkJob::run(owner, &task_id, 1);
    clients
        .sqs
        .send_message()
        .queue_url(batch.queue.url())
        .message_body(serde_json::to_string(&job).unwrap())
        .send()
        .await
        .expect("enqueue");
    let mut received = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while received.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the job did not arrive"
        );
        received = batch
            .queue
            .receive(1, Duration::from_secs(1), Some(Duration::from_secs(60)))
            .await
            .expect("receive");
    }
    let mut message = received.remove(0);
    message.receive_count = receive_count;
    let record = message.to_lambda_record("arn:aws:sqs:us-east-1:123456789012:work");
    let event = serde_json::from_value(json!({ "Records": [record] })).expect("an SQS event");
    (task_id, event)
}

/// What is in the dead-letter queue: each message's body and reason.
async fn dead_letters(clients: &AwsClients, dlq: &str) -> Vec<(String, String)> {
    let out = clients
        .sqs
        .receive_message()
        .queue_url(dlq)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .message_attribute_names("reason")
        .send()
        .await
        .expect("receive the dead letters");
    out.messages()
        .iter()
        .map(|m| {
            let reason = m
                .message_attributes()
                .and_then(|a| a.get("reason"))
                .and_then(|v| v.string_value())
                .unwrap_or_default();
            (m.body().unwrap_or_default().to_owned(), reason.to_owned())
        })
        .collect()
}

#[tokio::test]
async fn a_job_received_many_times_but_never_attempted_still_runs() {
    let Some(sdk) = a2a_test_support::emulator("a2a-lambda-glue worker").await else {
        return;
    };
    let (clients, resources, store, batch, dlq) = work_batch(&sdk).await;
    let owner = Owner::anonymous("");
    // Throttled invocations raised SQS's receive count far past max_job_attempts without our
    // code ever running: no attempt is recorded, so this is the first.
    let receives = 4 * ServiceConfig::default().max_job_attempts;
    let (task_id, event) = queued_task(&clients, &*store, &batch, &owner, receives).await;
    let out = batch.handle(event).await;
    assert!(out.batch_item_failures.is_empty(), "{out:?}");
    let task = store.load_task(&owner, &task_id).await.unwrap().unwrap();
    assert_eq!(task.task.status.state, TaskState::Completed);
    assert!(dead_letters(&clients, &dlq).await.is_empty());
    resources::delete_all(&clients, &resources).await;
}

#[tokio::test]
async fn a_job_whose_own_attempts_are_exhausted_is_dead_lettered_with_its_reason() {
    let Some(sdk) = a2a_test_support::emulator("a2a-lambda-glue worker").await else {
        return;
    };
    let (clients, resources, store, batch, dlq) = work_batch(&sdk).await;
    let owner = Owner::anonymous("");
    let max = ServiceConfig::default().max_job_attempts;
    // A low receive count: what decides is our own count of attempts that started and died.
    let (task_id, event) = queued_task(&clients, &*store, &batch, &owner, 2).await;
    let over = Timestamp::from_millis(Timestamp::now().millis() - 1_000);
    for attempt in 1..=max {
        let begun = store
            .begin_job_attempt(&task_id, 1, "a-lost-instance", over)
            .await
            .unwrap();
        assert_eq!(begun, Some(attempt));
    }
    let out = batch.handle(event).await;
    assert!(out.batch_item_failures.is_empty(), "{out:?}");
    let task = store.load_task(&owner, &task_id).await.unwrap().unwrap();
    assert_eq!(task.task.status.state, TaskState::Failed);
    let reason = format!("The work could not be completed: it was attempted {max} times.");
    let letters = dead_letters(&clients, &dlq).await;
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert!(letters[0].0.contains(&task_id));
    assert_eq!(letters[0].1, reason);
    resources::delete_all(&clients, &resources).await;
}
