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
    work_batch_of(sdk, Arc::new(Idle)).await
}

/// [`work_batch`] running `agent`.
async fn work_batch_of(
    sdk: &aws_config::SdkConfig,
    agent: Arc<dyn Agent>,
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
            agent,
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

/// Works for an hour on its first run (after WORKING and a first artifact), straight through
/// on any run after it.
#[derive(Default)]
struct Long {
    runs: std::sync::atomic::AtomicUsize,
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
        Placement::Queued
    }

    async fn execute(&self, _request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        let run = self.runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let part = |text: &str| a2a_protocol::Artifact {
            artifact_id: "out".into(),
            parts: vec![a2a_protocol::Part::text(text)],
            ..Default::default()
        };
        emitter.working(None).await?;
        emitter.artifact(part("one "), false, false).await?;
        emitter.flush().await?;
        if run == 0 {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        emitter.artifact(part("two"), true, true).await?;
        emitter.complete(None).await
    }
}

/// A job still running when its invocation is about to end is handed over before the end
/// (Lambda's timeout would kill it with the rest of its batch): the batch answers in time with
/// the job done, a resume job is on the queue, and the next invocation finishes the task from
/// where the first stopped, writing nothing twice.
#[tokio::test]
async fn a_job_running_past_its_invocation_is_handed_over_before_the_end() {
    let Some(sdk) = a2a_test_support::emulator("a2a-lambda-glue worker").await else {
        return;
    };
    let agent = Arc::new(Long::default());
    let (clients, resources, store, batch, _dlq) = work_batch_of(&sdk, agent.clone()).await;
    let owner = Owner::anonymous("");
    let (task_id, event) = queued_task(&clients, &*store, &batch, &owner, 1).await;

    // An invocation that must hand over in a second (a deadline 30 s and 1 s away).
    let deadline_ms = u64::try_from(Timestamp::now().millis()).unwrap()
        + u64::try_from((a2a_lambda_glue::HANDOVER_MARGIN + Duration::from_secs(1)).as_millis())
            .unwrap();
    let answer = tokio::time::timeout(
        Duration::from_secs(60),
        batch.handle_invocation_until(
            serde_json::to_value(&event).unwrap(),
            a2a_lambda_glue::hand_over_at(deadline_ms, None),
        ),
    )
    .await
    .expect("the invocation answers before its deadline")
    .unwrap();
    assert_eq!(answer, json!({"batchItemFailures": []}), "the job is done");
    let midway = store.load_task(&owner, &task_id).await.unwrap().unwrap();
    assert_eq!(midway.task.status.state, TaskState::Working);

    // The resume job: the next invocation replays the run to its end.
    let mut received = Vec::new();
    while received.is_empty() {
        received = batch
            .queue
            .receive(1, Duration::from_secs(1), Some(Duration::from_secs(60)))
            .await
            .expect("receive");
    }
    let job: a2a_core::WorkJob = serde_json::from_str(&received[0].body).unwrap();
    assert!(job.resume && job.task_id == task_id, "{job:?}");
    let record = received
        .remove(0)
        .to_lambda_record("arn:aws:sqs:us-east-1:123456789012:work");
    let event = serde_json::from_value(json!({ "Records": [record] })).unwrap();
    let out = batch.handle(event).await;
    assert!(out.batch_item_failures.is_empty(), "{out:?}");
    let done = store.load_task(&owner, &task_id).await.unwrap().unwrap();
    assert_eq!(done.task.status.state, TaskState::Completed);
    let text: String = done.task.artifacts[0]
        .parts
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect();
    assert_eq!(text, "one two", "the first chunk is not written twice");
    assert_eq!(agent.runs.load(std::sync::atomic::Ordering::SeqCst), 2);
    resources::delete_all(&clients, &resources).await;
}

/// The deadline a worker invocation hands its jobs over by: the Lambda context's, less the
/// margin; where the context's had passed before the invocation began (cargo lambda watch
/// gives every invocation 600,000 ms after the epoch), the local cloud's stand-in for the
/// function's timeout, or none (under watch without it, every job was handed over at once,
/// again and again, until it failed after five attempts).
#[test]
fn the_hand_over_time_comes_from_a_deadline_lambda_could_give() {
    let now = tokio::time::Instant::now();
    let epoch_ms = |d: Duration| {
        u64::try_from(Timestamp::now().millis()).unwrap() + u64::try_from(d.as_millis()).unwrap()
    };
    let margin = a2a_lambda_glue::HANDOVER_MARGIN;
    // AWS: fifteen minutes from now, handed over thirty seconds before.
    let aws = a2a_lambda_glue::hand_over_at(epoch_ms(Duration::from_secs(900)), None).unwrap();
    let left = aws - now;
    // (Give or take the moments between the clocks' readings.)
    assert!(
        left > Duration::from_secs(860) && left < Duration::from_secs(901) - margin,
        "{left:?}"
    );
    // A deadline that passes within the margin: now.
    let soon = a2a_lambda_glue::hand_over_at(epoch_ms(Duration::from_secs(5)), None).unwrap();
    assert!(soon - now < Duration::from_secs(1));
    // cargo lambda watch's fixed deadline: the local timeout, or no hand-over at all.
    let local = Some(Duration::from_secs(900));
    let watch = a2a_lambda_glue::hand_over_at(600_000, local).unwrap();
    assert!(watch - now > Duration::from_secs(860));
    assert_eq!(a2a_lambda_glue::hand_over_at(600_000, None), None);
}
