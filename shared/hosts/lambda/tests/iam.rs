//! Least privilege, proven for every function: each function's real work runs against moto
//! (`eval "$(infra/moto.sh env-start)"` first; `infra/test-all.sh` does it) through metered
//! adapters, the IAM actions are derived from the requests the meter saw, and the function's
//! role in SAM's translation of `template.yaml` (`tests/sam`, the SAM CLI venv) must grant
//! exactly those, on exactly those resources (the table, its index, the right queue), with no
//! managed policy beyond writing logs and traces.
//!
//! Secrets are not metered; `template.rs` checks which function may read which secret.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use a2a_aws::fanout::{passes_filter, Checkpoints, StreamPoller};
use a2a_aws::resources::{self, Resources};
use a2a_aws::{AwsAdapters, AwsClients, AwsConfig, Call, Meter, Service, SqsQueue};
use a2a_channels::lite::{
    Channel, ChannelError, ChannelPort, ChatMessage, EventTarget, Handled, LiteBridge,
    LiteBridgeConfig,
};
use a2a_core::{
    A2aService, Agent, AgentDescription, AgentError, AgentRequest, CallContext, Emitter,
    HostResolver, LeaseStore, OperationRequest, OperationResponse, Owner, Placement,
    PushConfigStore, PushJob, PushPolicy, ServiceConfig, TaskLogStore, TaskStore, WebhookOutcome,
    WebhookRequest, WebhookSender, JOB_FORMAT_VERSION,
};
use a2a_lambda_glue::{FanoutBatch, PushBatch, WorkBatch};
use a2a_protocol::{
    Message, Operation, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, Task,
    TaskPushNotificationConfig, TaskState, Timestamp,
};
use aws_lambda_events::event::sqs::SqsEvent;
use serde_json::json;

mod sam;

/// An IAM grant: `(action, resource)`, the resource as the template's logical id
/// (`TasksTable`, `TasksTable/index/by_owner`, `WorkQueue`, …).
type Grant = (String, String);

/// What Lambda's event source mapping itself calls on a function's queue, with the
/// function's role (AWS's `AWSLambdaSQSQueueExecutionRole`); no adapter makes these.
const EVENT_SOURCE_ACTIONS: [&str; 3] = [
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
];

/// Completes every task it is given: the work the worker runs.
struct Completes;

#[async_trait::async_trait]
impl Agent for Completes {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "iam".into(),
            ..Default::default()
        }
    }

    fn placement(&self, _request: &AgentRequest) -> Placement {
        Placement::Queued
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        // "run" writes more events than a head carries, so the head moves the earlier ones
        // into an archive item (a PutItem the worker must be allowed).
        if request.text() == "run" {
            for i in 0..66 {
                let artifact = a2a_protocol::Artifact {
                    artifact_id: format!("a{i}"),
                    parts: vec![a2a_protocol::Part::text("x")],
                    ..Default::default()
                };
                emitter.artifact(artifact, false, true).await?;
            }
        }
        emitter.complete(None).await
    }
}

/// A webhook receiver without a network: the URL's path says how it answers.
#[derive(Debug)]
struct Receiver;

#[async_trait::async_trait]
impl HostResolver for Receiver {
    async fn resolve(&self, _host: &str, _port: u16) -> std::io::Result<Vec<std::net::SocketAddr>> {
        Ok(vec![([203, 0, 113, 7], 443).into()])
    }
}

#[async_trait::async_trait]
impl WebhookSender for Receiver {
    async fn send(&self, request: WebhookRequest) -> WebhookOutcome {
        let status = match request.url.path() {
            "/ok" => 200,
            "/gone" => 410,
            _ => 503,
        };
        WebhookOutcome::Answered(lambda_http::http::StatusCode::from_u16(status).unwrap())
    }
}

struct Stack {
    clients: AwsClients,
    resources: Resources,
    config: AwsConfig,
    work_dlq: String,
    push_dlq: String,
}

impl Stack {
    async fn new() -> Option<Self> {
        let sdk = a2a_test_support::emulator("a2a-lambda-glue iam").await?;
        let clients = AwsClients::from_sdk_config(&sdk);
        let prefix = format!("i{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let resources = Resources::named(&prefix);
        let config = resources::create_all(&clients, &resources)
            .await
            .expect("create the test resources on the emulator");
        let url = |name: String| {
            let sqs = clients.sqs.clone();
            async move {
                sqs.get_queue_url()
                    .queue_name(name)
                    .send()
                    .await
                    .expect("a dead-letter queue's URL")
                    .queue_url
                    .unwrap()
            }
        };
        let work_dlq = url(resources.work_dead_letter_queue.name.clone()).await;
        let push_dlq = url(resources.push_dead_letter_queue.name.clone()).await;
        Some(Self {
            clients,
            resources,
            config,
            work_dlq,
            push_dlq,
        })
    }

    fn service(&self, adapters: &AwsAdapters, config: ServiceConfig) -> A2aService {
        A2aService::new(
            ServiceConfig {
                background_inline: false,
                ..config
            },
            Arc::new(Completes),
            Arc::new(adapters.store.clone()),
            Arc::new(adapters.work.clone()),
            Arc::new(adapters.push.clone()),
        )
    }

    /// The template's logical id of what a metered call went to.
    fn logical(&self, call: &Call) -> String {
        let r = call.resource.as_str();
        let table = &self.config.table;
        match call.service {
            Service::DynamoDb if r == table => "TasksTable".into(),
            Service::DynamoDb => match r.strip_prefix(&format!("{table}/index/")) {
                Some(index) => format!("TasksTable/index/{index}"),
                None => panic!("a DynamoDB call to {r}"),
            },
            Service::Sqs if r == self.config.work_queue_url => "WorkQueue".into(),
            Service::Sqs if r == self.config.push_queue_url => "PushQueue".into(),
            Service::Sqs if r == self.work_dlq => "WorkDeadLetterQueue".into(),
            Service::Sqs if r == self.push_dlq => "PushDeadLetterQueue".into(),
            Service::Sqs => panic!("an SQS call to {r}"),
        }
    }

    /// The IAM grants the metered calls need.
    fn grants(&self, calls: &[Call]) -> BTreeSet<Grant> {
        calls
            .iter()
            .map(|call| {
                let action = match (call.service, call.api) {
                    // The store's transactions hold only conditional Puts (no Update, Delete
                    // or ConditionCheck items): IAM checks each item's own action.
                    (Service::DynamoDb, "TransactWriteItems") => "dynamodb:PutItem".to_owned(),
                    (Service::DynamoDb, api) => format!("dynamodb:{api}"),
                    // A batch send is authorised as SendMessage.
                    (Service::Sqs, "SendMessageBatch") => "sqs:SendMessage".to_owned(),
                    (Service::Sqs, api) => format!("sqs:{api}"),
                };
                (action, self.logical(call))
            })
            .collect()
    }

    /// Received messages of `queue` as the SQS event Lambda would hand the function, each with
    /// the receive count `count` gives it.
    async fn event(&self, queue: &SqsQueue, n: usize, count: impl Fn(&str) -> u32) -> SqsEvent {
        let arn = format!(
            "arn:aws:sqs:us-east-1:123456789012:{}",
            queue.url().rsplit('/').next().unwrap()
        );
        let mut records = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while records.len() < n {
            assert!(
                std::time::Instant::now() < deadline,
                "the messages did not arrive"
            );
            for mut m in queue
                .receive(
                    n - records.len(),
                    Duration::from_secs(1),
                    Some(Duration::from_secs(60)),
                )
                .await
                .expect("receive")
            {
                m.receive_count = count(&m.body);
                records.push(m.to_lambda_record(&arn));
            }
        }
        serde_json::from_value(json!({ "Records": records })).expect("an SQS event")
    }
}

/// The AWS managed policies a function's role may have: writing its log lines and its X-Ray
/// segments (what SAM gives every function). Nothing that reads or writes data.
const LOGS_AND_TRACES: [&str; 2] = [
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
];

/// The stack as SAM's translation creates it, behind each front door.
struct Translated {
    api_gateway: serde_json::Value,
    function_url: serde_json::Value,
}

impl Translated {
    /// `None` (the test skips) without the SAM CLI venv.
    fn load() -> Option<Self> {
        Some(Self {
            api_gateway: sam::created(&[])?,
            function_url: sam::created(&[("FrontDoor", "FunctionUrl")])?,
        })
    }

    /// The grants to the function whose role (`A2A_FUNCTION`) is `function`, on tables and
    /// queues: every statement of its role's inline policies as (action, logical id) pairs,
    /// secrets left out (`template.rs` checks which function reads which secret). Its role's
    /// managed policies may only write logs and traces: SAM's event-source policies
    /// (AWSLambdaSQSQueueExecutionRole, AWSLambdaDynamoDBExecutionRole) would widen it to
    /// every queue or stream of the account.
    fn grants(&self, function: &str) -> BTreeSet<Grant> {
        let stack = if function == "front" || function == "relay" {
            &self.function_url
        } else {
            &self.api_gateway
        };
        let logical = sam::function_logical_id(stack, function);
        let role_ref = &stack["Resources"][logical.as_str()]["Properties"]["Role"];
        let role_name = sam::target(role_ref)
            .and_then(|t| t.strip_suffix(".Arn").map(str::to_owned))
            .unwrap_or_else(|| panic!("{logical}'s role: {role_ref}"));
        let role = &stack["Resources"][role_name.as_str()]["Properties"];
        for arn in role["ManagedPolicyArns"].as_array().into_iter().flatten() {
            let arn = match arn {
                serde_json::Value::String(a) => a.clone(),
                other => other["Fn::Sub"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{role_name}: managed policy {other}"))
                    .replace("${AWS::Partition}", "aws"),
            };
            assert!(
                LOGS_AND_TRACES.contains(&arn.as_str()),
                "{role_name} ({function}) has the managed policy {arn}"
            );
        }
        let mut grants = BTreeSet::new();
        for policy in role["Policies"].as_array().into_iter().flatten() {
            for s in policy["PolicyDocument"]["Statement"].as_array().unwrap() {
                assert_eq!(s["Effect"], "Allow");
                let resources: Vec<String> = match &s["Resource"] {
                    serde_json::Value::Array(list) => list.iter().map(json_logical).collect(),
                    one => vec![json_logical(one)],
                };
                let actions: Vec<&str> = match &s["Action"] {
                    serde_json::Value::Array(actions) => {
                        actions.iter().map(|a| a.as_str().unwrap()).collect()
                    }
                    serde_json::Value::String(action) => vec![action.as_str()],
                    other => panic!("actions: {other:?}"),
                };
                for action in actions {
                    if !action.starts_with("secretsmanager:") && !action.starts_with("kms:") {
                        for resource in &resources {
                            grants.insert((action.to_owned(), resource.clone()));
                        }
                    }
                }
            }
        }
        grants
    }
}

/// A statement's resource in SAM's translation as a logical id (`TasksTable`,
/// `TasksTable/index/by_owner`, `TasksTable.StreamArn`, `WorkQueue`, …).
fn json_logical(resource: &serde_json::Value) -> String {
    if let Some(target) = sam::target(resource) {
        return target.trim_end_matches(".Arn").to_owned();
    }
    match &resource["Fn::Sub"] {
        serde_json::Value::String(template) => template
            .replace("${", "")
            .replace(".Arn}", "")
            .replace('}', ""),
        serde_json::Value::Array(parts) => {
            let mut text = parts[0].as_str().expect("a Sub template").to_owned();
            for (name, value) in parts[1].as_object().expect("Sub variables") {
                text = text.replace(&format!("${{{name}}}"), &json_logical(value));
            }
            text
        }
        _ => panic!("an unscoped resource: {resource}"),
    }
}

fn table(grants: &BTreeSet<Grant>) -> BTreeMap<String, Vec<String>> {
    let mut by_resource: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (action, resource) in grants {
        by_resource
            .entry(resource.clone())
            .or_default()
            .push(action.clone());
    }
    by_resource
}

#[tokio::test]
async fn the_worker_is_granted_exactly_what_it_calls() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    let Some(granted) = Translated::load() else {
        return;
    };
    let plain = AwsAdapters::new(&stack.clients, &stack.config);
    let meter = Meter::new();
    let metered = plain.clone().with_meter(&meter);
    let front = stack.service(&plain, ServiceConfig::default());
    let ctx = CallContext::anonymous("");
    let owner = Owner::anonymous("");

    // A task queued by the HTTP side, with a push config: the worker runs it and fans out.
    let send = |text: &str, push: bool| {
        let request = SendMessageRequest {
            message: Some(Message::user_text(a2a_core::new_id(), text)),
            configuration: Some(SendMessageConfiguration {
                task_push_notification_config: push.then(|| TaskPushNotificationConfig {
                    url: "https://receiver.example/ok".into(),
                    ..Default::default()
                }),
                return_immediately: true,
                ..Default::default()
            }),
            ..Default::default()
        };
        let front = &front;
        let ctx = &ctx;
        async move {
            match front
                .call(ctx, OperationRequest::SendMessage(request))
                .await
            {
                Ok(OperationResponse::Sent(SendMessageResponse::Task(task))) => task,
                other => panic!("send: {other:?}"),
            }
        }
    };
    let runs: Task = send("run", true).await;
    // A task another worker holds: its job is retried later (a visibility change).
    let held: Task = send("held", false).await;
    let until = Timestamp::from_millis(Timestamp::now().millis() + 60_000);
    assert!(plain
        .store
        .acquire_lease(&held.id, "someone-else", until)
        .await
        .unwrap());
    // An unreadable job: dead-lettered, with its reason.
    let work = SqsQueue::new(stack.clients.sqs.clone(), &stack.config.work_queue_url);
    stack
        .clients
        .sqs
        .send_message()
        .queue_url(work.url())
        .message_body("not a job")
        .send()
        .await
        .unwrap();
    // A job whose attempts are exhausted (five started and died; our own count, on the
    // task's lease): its task ends FAILED and the job is dead-lettered.
    let worn: Task = send("worn", false).await;
    let worn_id = worn.id.clone();
    let over = Timestamp::from_millis(Timestamp::now().millis() - 1_000);
    for _ in 0..ServiceConfig::default().max_job_attempts {
        plain
            .store
            .begin_job_attempt(&worn_id, 1, "a-lost-instance", over)
            .await
            .unwrap();
    }

    let batch = WorkBatch {
        service: stack.service(&metered, ServiceConfig::default()),
        queue: SqsQueue::new(stack.clients.sqs.clone(), &stack.config.work_queue_url)
            .with_meter(meter.clone())
            .with_dead_letter_url(&stack.work_dlq),
        visibility: Duration::from_secs(30),
    };
    let event = stack
        .event(
            &work,
            4,
            |body| if body.contains(&worn_id) { 99 } else { 1 },
        )
        .await;
    let out = batch.handle(event).await;
    let retried: Vec<&str> = out
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    assert_eq!(retried.len(), 1, "the held job is retried: {retried:?}");

    // The scheduled sweep ends a task whose inline execution was lost.
    let (head, events) = a2a_store_contract::new_task(
        &owner,
        &a2a_core::new_id(),
        &a2a_core::new_id(),
        TaskState::Working,
        Timestamp::now(),
        Timestamp::from_millis(Timestamp::now().millis() + 3_600_000),
    );
    plain.store.create_task(&head, &events).await.unwrap();
    let ended = Timestamp::from_millis(Timestamp::now().millis() - 1_000);
    assert!(plain
        .store
        .acquire_inline_lease(&owner, &head.task.id, "lost", ended)
        .await
        .unwrap());
    let swept = batch
        .handle_invocation(json!({"source": "aws.events", "detail-type": "Scheduled Event"}))
        .await
        .expect("the sweep");
    assert_eq!(swept, json!({"endedTasks": 1, "resumedExecutions": 0}));

    for (id, state) in [
        (&runs.id, TaskState::Completed),
        (&worn.id, TaskState::Failed),
    ] {
        let task = plain.store.load_task(&owner, id).await.unwrap().unwrap();
        assert_eq!(task.task.status.state, state);
    }

    let mut needed = stack.grants(&meter.take());
    for action in EVENT_SOURCE_ACTIONS {
        needed.insert((action.to_owned(), "WorkQueue".to_owned()));
    }
    assert_eq!(table(&granted.grants("worker")), table(&needed));
    resources::delete_all(&stack.clients, &stack.resources).await;
}

/// What the fan-out function's event source mapping does with the function's role: read the
/// table's stream.
const STREAM_SOURCE_ACTIONS: [&str; 4] = [
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:ListStreams",
];

#[tokio::test]
async fn the_fanout_function_is_granted_exactly_what_it_calls() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    let Some(granted) = Translated::load() else {
        return;
    };
    let plain = AwsAdapters::new(&stack.clients, &stack.config);
    let meter = Meter::new();
    let metered = plain.clone().with_meter(&meter);
    let owner = Owner::anonymous("");
    let expires = Timestamp::from_millis(Timestamp::now().millis() + 3_600_000);
    // A task with a push config, and one without.
    let mut ids = Vec::new();
    for configs in [1, 0] {
        let (head, events) = a2a_store_contract::new_task(
            &owner,
            &a2a_core::new_id(),
            &a2a_core::new_id(),
            TaskState::Completed,
            Timestamp::now(),
            expires,
        );
        let config = TaskPushNotificationConfig {
            id: "hook".into(),
            task_id: head.task.id.clone(),
            url: "https://receiver.example/ok".into(),
            ..Default::default()
        };
        let configs = &[config][..configs];
        plain
            .store
            .create_task_with_push_configs(&head, &events, configs)
            .await
            .unwrap();
        ids.push(head.task.id.clone());
    }
    // What the event source mapping hands the function: the stream's records, filtered.
    let mut poller = StreamPoller::from_env(&stack.config.table, Checkpoints::Memory)
        .await
        .expect("the table's stream");
    let mut records = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while records.len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the records did not arrive"
        );
        if let Some(batch) = poller.next_batch().await.expect("the stream") {
            records.extend(batch.records.iter().cloned());
            poller.commit(&batch).await.unwrap();
        }
    }
    let passed: Vec<serde_json::Value> = records.into_iter().filter(passes_filter).collect();
    assert_eq!(
        passed.len(),
        1,
        "only the task with a push config passes the filter"
    );
    let batch = FanoutBatch::new(stack.service(&metered, ServiceConfig::default()));
    let out = batch.handle(&json!({ "Records": passed })).await;
    assert_eq!(out, json!({ "batchItemFailures": [] }));
    let push = SqsQueue::new(stack.clients.sqs.clone(), &stack.config.push_queue_url);
    let received = push
        .receive(10, Duration::from_secs(1), None)
        .await
        .expect("receive");
    assert_eq!(received.len(), 1, "one job: one visible event, one config");
    assert!(received[0].body.contains(&ids[0]));

    let mut needed = stack.grants(&meter.take());
    for action in STREAM_SOURCE_ACTIONS {
        needed.insert((action.to_owned(), "TasksTable.StreamArn".to_owned()));
    }
    // The mapping records a batch it gave up on in its on-failure destination.
    needed.insert((
        "sqs:SendMessage".to_owned(),
        "FanoutFailureQueue".to_owned(),
    ));
    assert_eq!(table(&granted.grants("fanout")), table(&needed));
    resources::delete_all(&stack.clients, &stack.resources).await;
}

#[tokio::test]
async fn the_push_function_is_granted_exactly_what_it_calls() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    let Some(granted) = Translated::load() else {
        return;
    };
    let plain = AwsAdapters::new(&stack.clients, &stack.config);
    let meter = Meter::new();
    // Adapters of their own, as the push function's process has: a clone would share the
    // heads `plain` writes below, and the store answers a finished task's log from a head it
    // holds, so the function's read of the event (a Query) would not show.
    let metered = AwsAdapters::new(&stack.clients, &stack.config).with_meter(&meter);
    let owner = Owner::anonymous("");
    let config = || ServiceConfig {
        push_sender: Arc::new(Receiver),
        push_policy: PushPolicy::default(),
        ..ServiceConfig::default()
    };

    // A finished task with four webhooks: one answers, one is gone, one keeps failing (on its
    // first and on its last attempt).
    let (head, events) = a2a_store_contract::new_task(
        &owner,
        &a2a_core::new_id(),
        &a2a_core::new_id(),
        TaskState::Completed,
        Timestamp::now(),
        Timestamp::from_millis(Timestamp::now().millis() + 3_600_000),
    );
    plain.store.create_task(&head, &events).await.unwrap();
    let task_id = head.task.id.clone();
    let expires = head.expires_at;
    for (id, path) in [
        ("ok", "/ok"),
        ("gone", "/gone"),
        ("first", "/fail"),
        ("last", "/fail"),
    ] {
        let config = TaskPushNotificationConfig {
            id: id.into(),
            task_id: task_id.clone(),
            url: format!("https://receiver.example{path}"),
            ..Default::default()
        };
        plain
            .store
            .put_push_config(&owner, &config, expires)
            .await
            .unwrap();
    }
    // The failing one's event has had all but its last attempt (a live record).
    let max = ServiceConfig::default().max_push_attempts;
    let made = a2a_core::PushAttempt {
        seq: 1,
        at: Timestamp::now(),
        result: a2a_core::PushAttemptResult::Failed,
        http_status: Some(503),
        error: Some("webhook answered 503".into()),
        final_attempt: false,
        number: max - 1,
    };
    plain
        .store
        .record_push_attempt(&owner, &task_id, "last", &made, expires)
        .await
        .unwrap();
    // An expired delivery record under one of them: the function writes a fresh one (a Put)
    // where it would otherwise update the live one.
    let attempt = a2a_core::PushAttempt {
        seq: 1,
        at: Timestamp::now(),
        result: a2a_core::PushAttemptResult::Failed,
        http_status: Some(503),
        error: None,
        final_attempt: false,
        number: 1,
    };
    let past = Timestamp::from_millis(Timestamp::now().millis() - 60_000);
    plain
        .store
        .record_push_attempt(&owner, &task_id, "ok", &attempt, past)
        .await
        .unwrap();
    let jobs: Vec<PushJob> = ["ok", "gone", "first", "last"]
        .into_iter()
        .map(|config_id| PushJob {
            v: JOB_FORMAT_VERSION,
            owner: owner.clone(),
            task_id: task_id.clone(),
            seq: 1,
            config_id: config_id.into(),
        })
        .collect();
    a2a_core::PushQueue::enqueue_push(&plain.push, &jobs)
        .await
        .unwrap();
    // Its group's messages come one at a time (FIFO); the function takes them one by one.
    let push = SqsQueue::new(stack.clients.sqs.clone(), &stack.config.push_queue_url);
    let batch = PushBatch {
        service: stack.service(&metered, config()),
        queue: SqsQueue::new(stack.clients.sqs.clone(), &stack.config.push_queue_url)
            .with_meter(meter.clone())
            .with_dead_letter_url(&stack.push_dlq),
    };
    for _ in 0..jobs.len() {
        let event = stack
            .event(
                &push,
                1,
                |body| if body.contains("\"last\"") { max } else { 1 },
            )
            .await;
        let failing_first = event.records[0]
            .body
            .as_deref()
            .unwrap_or("")
            .contains("\"first\"");
        let receipt = event.records[0].receipt_handle.clone().unwrap();
        let out = batch.handle(event).await;
        assert_eq!(out.batch_item_failures.len(), usize::from(failing_first));
        if !failing_first {
            // What the event source mapping does with a record not reported (its own grant).
            push.delete(&receipt).await.unwrap();
        } else {
            // Retried after a backoff: take it out of the way of the group's next job.
            let m = stack.event(&push, 1, |_| 1).await;
            let receipt = m.records[0].receipt_handle.clone().unwrap();
            push.delete(&receipt).await.unwrap();
        }
    }
    let gone = plain
        .store
        .get_push_config(&owner, &task_id, "gone")
        .await
        .unwrap();
    assert!(gone.is_none(), "410 Gone deletes the config");

    let mut needed = stack.grants(&meter.take());
    for action in EVENT_SOURCE_ACTIONS {
        needed.insert((action.to_owned(), "PushQueue".to_owned()));
    }
    assert_eq!(table(&granted.grants("push")), table(&needed));
    resources::delete_all(&stack.clients, &stack.resources).await;
}

/// Runs inline what a message says to ("inline …"), queues the rest; answers "… reply" with a
/// direct message, and otherwise works (the task is active: the execution takes its lease)
/// and completes.
struct Mixed;

#[async_trait::async_trait]
impl Agent for Mixed {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "iam".into(),
            ..Default::default()
        }
    }

    fn placement(&self, request: &AgentRequest) -> Placement {
        let text = serde_json::to_string(&request.message).unwrap_or_default();
        if text.contains("inline") {
            Placement::Inline
        } else {
            Placement::Queued
        }
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        if serde_json::to_string(&request.message)
            .unwrap_or_default()
            .contains("reply")
        {
            return emitter.reply(Message::agent_text("hi")).await;
        }
        emitter.working(None).await?;
        emitter.complete(None).await
    }
}

/// A send's JSON: a new message (on `task_id` when given), queued and answered at once
/// unless `blocking`, with a push config when `push`.
fn send_json(
    message_id: &str,
    text: &str,
    task_id: Option<&str>,
    push: bool,
    blocking: bool,
) -> serde_json::Value {
    let mut message = json!({
        "messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]
    });
    if let Some(task_id) = task_id {
        message["taskId"] = json!(task_id);
    }
    let mut configuration = json!({ "returnImmediately": !blocking });
    if push {
        configuration["taskPushNotificationConfig"] = json!({"url": "https://receiver.example/ok"});
    }
    json!({ "message": message, "configuration": configuration })
}

/// Runs `operation` with `params` on `service`, draining a stream to its end; the outcome
/// does not matter here (failure paths are driven on purpose), only the calls it makes.
async fn drive(service: &A2aService, operation: Operation, params: serde_json::Value) {
    use futures::StreamExt;
    let ctx = CallContext::anonymous("");
    let request = OperationRequest::from_json(operation, params, None).expect("a request");
    if let Ok(OperationResponse::Stream(mut events)) = service.call(&ctx, request).await {
        while events.next().await.is_some() {}
    }
}

/// Every path of `operation` that makes its own kind of AWS call, on tasks `fixture` made:
/// new, repeated and follow-up sends, inline and queued, with and without push configs;
/// reads of present and missing tasks; cancels of live and finished tasks; streams that end
/// at their deadline or are refused; push config CRUD.
async fn drive_all(service: &A2aService, operation: Operation, fixture: &Fixture) {
    use Operation as O;
    let missing = a2a_core::new_id();
    let (live, done) = (fixture.live.as_str(), fixture.done.as_str());
    let paths: Vec<serde_json::Value> = match operation {
        O::SendMessage => {
            let repeated = a2a_core::new_id();
            vec![
                send_json(&repeated, "queued", None, true, false),
                send_json(&repeated, "queued", None, true, false),
                send_json(&a2a_core::new_id(), "queued", Some(live), false, false),
                send_json(&a2a_core::new_id(), "inline", None, false, true),
                send_json(&repeated, "inline reply", None, false, true),
                send_json(&a2a_core::new_id(), "inline reply", None, false, true),
            ]
        }
        O::SendStreamingMessage => vec![
            send_json(&a2a_core::new_id(), "inline", None, true, true),
            send_json(&a2a_core::new_id(), "queued", Some(live), false, true),
        ],
        O::GetTask => vec![json!({"id": live}), json!({"id": missing})],
        O::ListTasks => vec![
            json!({}),
            json!({"pageSize": 1}),
            json!({"status": "TASK_STATE_COMPLETED", "pageSize": 1}),
            json!({"contextId": "a-conversation", "pageSize": 1}),
        ],
        O::CancelTask => vec![
            json!({"id": fixture.cancel}),
            json!({"id": done}),
            json!({"id": missing}),
        ],
        O::SubscribeToTask => vec![
            json!({"id": live}),
            json!({"id": done}),
            json!({"id": missing}),
        ],
        O::CreateTaskPushNotificationConfig => vec![
            json!({"taskId": live, "id": "c2", "url": "https://receiver.example/ok"}),
            json!({"taskId": missing, "id": "c2", "url": "https://receiver.example/ok"}),
        ],
        O::GetTaskPushNotificationConfig => {
            vec![
                json!({"taskId": live, "id": "c1"}),
                json!({"taskId": live, "id": "none"}),
            ]
        }
        O::ListTaskPushNotificationConfigs => {
            vec![json!({"taskId": live}), json!({"taskId": missing})]
        }
        O::DeleteTaskPushNotificationConfig => {
            vec![
                json!({"taskId": live, "id": "c1"}),
                json!({"taskId": live, "id": "none"}),
            ]
        }
        O::GetExtendedAgentCard => vec![json!({})],
    };
    for params in paths {
        drive(service, operation, params).await;
    }
}

/// Tasks made beforehand, unmetered: a live one with a push config `c1`, one to cancel (with
/// more events than a head carries, so the cancel archives them), and a finished one.
struct Fixture {
    live: String,
    cancel: String,
    done: String,
}

impl Fixture {
    async fn new(service: &A2aService, store: &dyn TaskStore) -> Self {
        let ctx = &CallContext::anonymous("");
        let send = |text: &'static str, blocking: bool| async move {
            let params = send_json(&a2a_core::new_id(), text, None, true, blocking);
            let request =
                OperationRequest::from_json(Operation::SendMessage, params, None).unwrap();
            match service.call(ctx, request).await {
                Ok(OperationResponse::Sent(SendMessageResponse::Task(task))) => task.id,
                other => panic!("send: {other:?}"),
            }
        };
        let live = send("queued", false).await;
        let cancel = send("queued", false).await;
        let done = send("inline", true).await;
        let config = json!({"taskId": live, "id": "c1", "url": "https://receiver.example/ok"});
        let request =
            OperationRequest::from_json(Operation::CreateTaskPushNotificationConfig, config, None)
                .unwrap();
        service.call(ctx, request).await.expect("a push config");
        let owner = Owner::anonymous("");
        let head = store.load_task(&owner, &cancel).await.unwrap().unwrap();
        let mut next = head.clone();
        let mut events = Vec::new();
        for i in 0..64 {
            let event = a2a_core::TaskEvent::Artifact {
                update: a2a_protocol::TaskArtifactUpdateEvent {
                    task_id: cancel.clone(),
                    context_id: head.task.context_id.clone(),
                    artifact: a2a_protocol::Artifact {
                        artifact_id: format!("a{i}"),
                        parts: vec![a2a_protocol::Part::text("x")],
                        ..Default::default()
                    },
                    ..Default::default()
                },
            };
            event.apply(&mut next.task).unwrap();
            next.version += 1;
            events.push(a2a_core::LoggedEvent {
                seq: next.version,
                at: Timestamp::now(),
                event,
            });
        }
        store
            .append_events(&next, head.version, &events)
            .await
            .expect("the events of the task to cancel");
        Self { live, cancel, done }
    }
}

#[tokio::test]
async fn every_http_function_is_granted_exactly_what_its_operations_call() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    let Some(granted) = Translated::load() else {
        return;
    };
    let plain = AwsAdapters::new(&stack.clients, &stack.config);
    let config = || ServiceConfig {
        // Streams of live tasks end at this deadline.
        max_stream_duration: Duration::from_secs(1),
        ..ServiceConfig::default()
    };
    let service = |adapters: &AwsAdapters| {
        A2aService::new(
            ServiceConfig {
                background_inline: false,
                ..config()
            },
            Arc::new(Mixed),
            Arc::new(adapters.store.clone()),
            Arc::new(adapters.work.clone()),
            Arc::new(adapters.push.clone()),
        )
    };
    let setup = service(&plain);
    // The table of role → operations is the functions' own surface (from shared/hosts/lambda/routes.json),
    // so a new role (one function serving everything) is checked by adding nothing here.
    // The channel function runs no operation of a route: its own test drives the bridge.
    for function in a2a_lambda_glue::HttpFunction::ALL
        .into_iter()
        .filter(|f| !f.serves_channels())
    {
        let fixture = Fixture::new(&setup, &plain.store).await;
        let meter = Meter::new();
        let metered = service(&plain.clone().with_meter(&meter));
        for operation in function.surface().operations {
            drive_all(&metered, operation, &fixture).await;
        }
        let needed = stack.grants(&meter.take());
        assert_eq!(
            table(&granted.grants(function.name())),
            table(&needed),
            "the grants of the {} function",
            function.name()
        );
    }
    resources::delete_all(&stack.clients, &stack.resources).await;
}

/// A chat room that takes every message (no network: only the store and queue calls count).
struct Room;

#[async_trait::async_trait]
impl ChannelPort for Room {
    fn name(&self) -> &str {
        "webhook"
    }

    async fn post(&self, _room: &str, _text: &str, _key: &str) -> Result<(), ChannelError> {
        Ok(())
    }
}

/// What a user of the room writes: one new chat message each time, unless `event` repeats one.
fn chat(text: &str, event: &str) -> ChatMessage {
    ChatMessage {
        room: "general".into(),
        sender: "U1".into(),
        event_id: Some(event.into()),
        text: text.into(),
    }
}

/// The A2A task the bridge makes of the sender U1's task `lite_id` in #general: the `ack`
/// names it, and so does the outcome.
fn started(handled: &Handled) -> String {
    match handled {
        Handled::Started(id) | Handled::Continued(id) | Handled::Cancelled(id) => id.clone(),
        other => panic!("the bridge did not start a task: {other:?}"),
    }
}

/// The channel function behind API Gateway calls what the bridge calls; the relay function
/// behind the Function URL serves the same channels and the relay route (a remote agent's
/// pushes: refused, taken, and the one that ends the wait, which
/// queues our task's resumption and deletes the wait's due entry), and calls exactly that: no
/// index, no query, no push queue.
#[tokio::test]
async fn the_channel_and_relay_functions_are_granted_exactly_what_the_bridge_and_relay_call() {
    let Some(stack) = Stack::new().await else {
        return;
    };
    // The channel function exists with LiteChannels on only, the relay one behind the
    // Function URL only.
    let Some(lite) = sam::created(&[("LiteChannels", "on")]) else {
        return;
    };
    let Some(relay) = sam::created(&[("LiteChannels", "on"), ("FrontDoor", "FunctionUrl")]) else {
        return;
    };
    let granted = Translated {
        api_gateway: lite,
        function_url: relay,
    };
    let plain = AwsAdapters::new(&stack.clients, &stack.config);
    let meter = Meter::new();
    let metered = plain.clone().with_meter(&meter);
    let service = A2aService::new(
        ServiceConfig {
            background_inline: false,
            ..ServiceConfig::default()
        },
        Arc::new(Mixed),
        Arc::new(metered.store.clone()),
        Arc::new(metered.work.clone()),
        Arc::new(metered.push.clone()),
    );
    let secret = b"channel-secret".to_vec();
    let bridge = LiteBridge::new(
        service.clone(),
        CallContext::anonymous(""),
        LiteBridgeConfig {
            events_url: "https://receiver.example/a2a-lite/events".into(),
            channels: vec![Channel {
                port: Arc::new(Room),
                secret,
            }],
            agent_id: String::new(),
        },
    );
    let receive = |text: &'static str, event: &'static str| {
        let bridge = bridge.clone();
        async move {
            bridge
                .receive("webhook", chat(text, event))
                .await
                .expect("the bridge handles it")
        }
    };
    // Every path of the bridge that makes its own kind of call: discover; a new task (queued,
    // with its push config), the same chat message again, a task that is still running, an
    // unknown skill, the answer to a task waiting for input; cancels of a live, a finished and
    // a missing task; and the pushes of a task coming back (a status, an end).
    receive("[A2A:discover]", "e0").await;
    let live = started(&receive("[A2A:task id=t1]\nqueued work", "e1").await);
    receive("[A2A:task id=t1]\nqueued work", "e1").await;
    receive("[A2A:task id=t1]\nagain", "e2").await;
    receive("[A2A:task id=t9 skill=none]\nx", "e3").await;
    let parked = started(&receive("[A2A:task id=t2]\nqueued work", "e4").await);
    let owner = Owner::anonymous("");
    let head = plain
        .store
        .load_task(&owner, &parked)
        .await
        .unwrap()
        .unwrap();
    let mut next = head.clone();
    let event = a2a_core::TaskEvent::Status {
        update: a2a_protocol::TaskStatusUpdateEvent {
            task_id: parked.clone(),
            context_id: head.task.context_id.clone(),
            status: a2a_protocol::TaskStatus {
                state: TaskState::InputRequired,
                ..Default::default()
            },
            ..Default::default()
        },
    };
    event.apply(&mut next.task).unwrap();
    next.version += 1;
    let logged = a2a_core::LoggedEvent {
        seq: next.version,
        at: Timestamp::now(),
        event,
    };
    plain
        .store
        .append_events(&next, head.version, &[logged])
        .await
        .expect("park the task");
    receive("[A2A:task id=t2]\nmy answer", "e5").await;
    receive("[A2A:cancel task=t1]", "e6").await;
    receive("[A2A:cancel task=t1]", "e7").await;
    receive("[A2A:cancel task=nothing]", "e8").await;
    // A room agent's answer naming a task of ours (rooms are not called from Lambda yet: no
    // task waits for it, and reading its execution record is all it costs).
    receive(
        "[A2A:result task=a2a.1-0.sZm9yZ2Vk.YW5vbnltb3Vz state=completed]\nforged",
        "e9",
    )
    .await;
    // Another deployment's call, with such an id: a task for us like any other.
    receive("[A2A:task id=a2a.1-0.sdGhlaXJz.YW5vbnltb3Vz]\nwork", "e10").await;
    let config = plain
        .store
        .list_push_configs(&owner, &live)
        .await
        .unwrap()
        .pop()
        .expect("the task's push config");
    let query = config.url.split_once('?').unwrap().1;
    let target = EventTarget::from_query(query).expect("the target in the URL");
    let task = plain
        .store
        .load_task(&owner, &live)
        .await
        .unwrap()
        .unwrap()
        .task;
    for event in [
        a2a_protocol::StreamResponse::Task(task.clone()),
        a2a_protocol::StreamResponse::StatusUpdate(a2a_protocol::TaskStatusUpdateEvent {
            task_id: live.clone(),
            context_id: task.context_id.clone(),
            status: task.status.clone(),
            ..Default::default()
        }),
    ] {
        bridge
            .deliver(&target, &config.token, &event)
            .await
            .expect("delivered");
    }
    let bridge_calls = stack.grants(&meter.take());
    assert_eq!(table(&granted.grants("channel")), table(&bridge_calls));

    // The relay route, on a task of ours parked on a call to an agent that pushes.
    let parked =
        a2a_store_contract::relay::park_a_delegation(Arc::new(plain.store.clone()), 10).await;
    let push = |token: String, state: &'static str| {
        let relaying = service.clone();
        let task = parked.task_id.clone();
        async move {
            let body = format!(
                r#"{{"statusUpdate":{{"taskId":"their-task","contextId":"their-context","status":{{"state":"{state}"}}}}}}"#
            );
            relaying
                .relay_push(&task, None, &token, None, body.as_bytes())
                .await
                .expect("answered")
        }
    };
    use a2a_core::RelayAnswer::{Refused, Taken};
    assert_eq!(push("wrong".into(), "TASK_STATE_WORKING").await, Refused);
    let token = parked.token.clone();
    assert_eq!(push(token.clone(), "TASK_STATE_WORKING").await, Taken);
    assert_eq!(push(token, "TASK_STATE_COMPLETED").await, Taken);
    let relay_calls = stack.grants(&meter.take());
    assert!(
        relay_calls.contains(&("sqs:SendMessage".into(), "WorkQueue".into())),
        "the wait's end queues the resumption: {relay_calls:?}"
    );
    let needed: BTreeSet<Grant> = bridge_calls.union(&relay_calls).cloned().collect();
    assert_eq!(table(&granted.grants("relay")), table(&needed));
    resources::delete_all(&stack.clients, &stack.resources).await;
}
