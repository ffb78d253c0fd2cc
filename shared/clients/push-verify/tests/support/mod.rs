//! What the push tests share: a tiny agent served by the real router on 127.0.0.1 (so its
//! JWKS is live), on either backend (the embedded store, or DynamoDB and SQS on moto), and a
//! push consumer that runs deliveries without sleeping. The webhook receiver and the raw
//! listener are `a2a_test_support`'s, as is the in-process server under the agent.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use a2a_aws::fanout::{Checkpoints, StreamPoller};
use a2a_aws::resources::{self, Resources};
use a2a_aws::{AwsAdapters, AwsClients, ReceivedMessage};
use a2a_core::{run_jobs, JobPolicy, Settlement};
use a2a_core::{
    A2aService, Agent, AgentDescription, AgentError, AgentRequest, CallContext, Emitter, KeySet,
    PushJob, PushPolicy, PushSigner, ServiceConfig, TaskStore,
};
use a2a_embedded::{QueueName, SqliteStore};
use a2a_http::{router, HttpOptions};
use a2a_lambda_glue::{FanoutBatch, PushBatch};
use a2a_protocol::{
    Artifact, Message, Part, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
    Task, TaskPushNotificationConfig,
};
use a2a_test_support::server::{interface, EmbeddedStore, InProcessServer};
use async_trait::async_trait;
use aws_lambda_events::event::sqs::SqsEvent;
use aws_sdk_sqs::types::QueueAttributeName;

/// The test agent. By the message text: `hold` parks in INPUT_REQUIRED; `steps N` goes
/// WORKING, streams N chunks of one artifact and completes.
pub(crate) struct StepAgent;

#[async_trait]
impl Agent for StepAgent {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "push test agent".into(),
            description: "Emits a known sequence of events, for the push tests.".into(),
            version: "0.0.1".into(),
            default_input_modes: vec!["text/plain".into()],
            default_output_modes: vec!["text/plain".into()],
            ..AgentDescription::default()
        }
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        let text = request.text().to_string();
        if text == "hold" {
            return emitter.input_required("Anything else?").await;
        }
        let steps: usize = text
            .strip_prefix("steps ")
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        emitter.working(None).await?;
        for n in 0..steps {
            let chunk = Artifact {
                artifact_id: "out".into(),
                parts: vec![Part::text(format!("chunk-{n} "))],
                ..Artifact::default()
            };
            emitter.artifact(chunk, n > 0, n + 1 == steps).await?;
        }
        emitter.complete(Some("done")).await
    }
}

/// Where the agent keeps its tasks and push jobs, and who drains its push queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// `a2a-local`'s: the embedded SQLite store with its durable push queue, drained the way
    /// `a2a-local`'s push loop does.
    Embedded,
    /// The cloud's: the task store on DynamoDB and the push queue on SQS FIFO (with its real
    /// dead-letter queue and redrive policy), on the moto server named by `AWS_ENDPOINT_URL`,
    /// drained by the push function's own batch handler (`a2a_lambda_glue::PushBatch`).
    DynamoDbAndSqs,
}

/// Writes one test per backend for each named scenario, an `async fn(Backend)` in scope:
/// `<scenario>::on_embedded` and `<scenario>::on_dynamodb_and_sqs`. Attributes written before
/// a scenario's name go on its DynamoDB-and-SQS test only (`#[ignore = "why"]`).
#[allow(unused_macros)] // Not every test binary has scenarios on both backends.
macro_rules! on_every_backend {
    ($($(#[$on_aws:meta])* $scenario:ident),+ $(,)?) => {$(
        mod $scenario {
            #[tokio::test]
            async fn on_embedded() {
                super::$scenario(crate::support::Backend::Embedded).await
            }

            #[tokio::test]
            $(#[$on_aws])*
            async fn on_dynamodb_and_sqs() {
                if !crate::support::emulator_available().await {
                    return;
                }
                super::$scenario(crate::support::Backend::DynamoDbAndSqs).await
            }
        }
    )+};
}
#[allow(unused_imports)]
pub(crate) use on_every_backend;

/// What a [`AgentServer::drain`] did, counted the same way on every backend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Drained {
    /// Delivery attempts: jobs handed to `deliver_push` (retries included).
    pub attempts: usize,
    /// Attempts that failed and were put back on the queue for another try.
    pub retries: usize,
    /// Attempts that failed for the last time: the job went to the dead-letter queue.
    pub dead_lettered: usize,
}

/// A push job in the dead-letter queue, with the reason it was given up on.
#[derive(Debug, Clone)]
pub(crate) struct DeadLetter {
    /// The job.
    pub job: PushJob,
    /// Why (the last attempt's error).
    pub reason: String,
}

/// The adapters behind an [`AgentServer`].
enum Adapters {
    Embedded(EmbeddedStore),
    Aws(Box<AwsBackend>),
}

/// A fresh, uniquely named table and queues on moto for one test.
struct AwsBackend {
    clients: AwsClients,
    resources: Resources,
    adapters: AwsAdapters,
    /// The push queue's ARN, as the event source mapping names it in each record.
    push_queue_arn: String,
    /// The push queue's dead-letter queue, found through its redrive policy.
    dead_letter_url: String,
    /// Messages per invocation of the push function: its event source's `BatchSize` in
    /// `template.yaml`.
    batch_size: usize,
    /// The table's stream, read as the fan-out function's event source mapping reads it.
    stream: tokio::sync::Mutex<StreamPoller>,
}

/// The agent as a receiver sees it: the service on the chosen backend, served by
/// `a2a_http::router` on 127.0.0.1, with its JWKS live at `{base}/.well-known/jwks.json`.
pub(crate) struct AgentServer {
    /// `http://127.0.0.1:PORT`: the issuer of its pushes.
    pub base: String,
    /// The service in force (replaced by [`Self::rotate`]).
    pub service: A2aService,
    /// The task store, shared by every service this server runs.
    pub store: Arc<dyn TaskStore>,
    server: InProcessServer,
    adapters: Adapters,
    policy: PushPolicy,
    max_push_attempts: u32,
}

impl AgentServer {
    /// Starts an agent on the embedded store signing with `keys`, delivering under `policy`,
    /// giving up on an event after `max_push_attempts`.
    pub(crate) async fn start(keys: KeySet, policy: PushPolicy, max_push_attempts: u32) -> Self {
        Self::start_on(Backend::Embedded, keys, policy, max_push_attempts).await
    }

    /// As [`Self::start`], on `backend`. On DynamoDB and SQS the push queue's redrive policy
    /// moves a message to its dead-letter queue after `max_push_attempts` receives, as the
    /// deployment's does after the default 8.
    pub(crate) async fn start_on(
        backend: Backend,
        keys: KeySet,
        policy: PushPolicy,
        max_push_attempts: u32,
    ) -> Self {
        let adapters = match backend {
            Backend::Embedded => Adapters::Embedded(EmbeddedStore::open()),
            Backend::DynamoDbAndSqs => {
                Adapters::Aws(Box::new(AwsBackend::create(max_push_attempts).await))
            }
        };
        // The service needs the server's URL (its card, the issuer of its pushes).
        let mut service = None;
        let server = InProcessServer::start(|base| {
            let built = build_service(base, keys, &policy, max_push_attempts, &adapters);
            service = Some(built.clone());
            router(built, HttpOptions::default())
        })
        .await;
        let service = service.expect("the router was built");
        let store: Arc<dyn TaskStore> = match &adapters {
            Adapters::Embedded(embedded) => embedded.store.clone(),
            Adapters::Aws(aws) => Arc::new(aws.adapters.store.clone()),
        };
        Self {
            base: server.base.clone(),
            service,
            store,
            server,
            adapters,
            policy,
            max_push_attempts,
        }
    }

    /// Where this server's state lives, as environment variables another process can open
    /// it from with [`open_store`]: the embedded store's directory, or the table and queues.
    pub(crate) fn location(&self) -> Vec<(String, String)> {
        match &self.adapters {
            Adapters::Embedded(embedded) => vec![(
                "A2A_TEST_DATA_DIR".to_owned(),
                embedded.dir().display().to_string(),
            )],
            Adapters::Aws(aws) => {
                let c = aws.adapters.store.table().to_owned();
                vec![
                    (a2a_aws::ENV_TABLE.to_owned(), c),
                    (
                        a2a_aws::ENV_WORK_QUEUE_URL.to_owned(),
                        aws.adapters.work.queue().url().to_owned(),
                    ),
                    (
                        a2a_aws::ENV_PUSH_QUEUE_URL.to_owned(),
                        aws.adapters.push.queue().url().to_owned(),
                    ),
                ]
            }
        }
    }

    /// How many times the JWKS was fetched.
    pub(crate) fn jwks_fetches(&self) -> usize {
        self.server.hits("/.well-known/jwks.json")
    }

    /// Redeploys with another key set: same store and queues, same URL (as a redeploy keeps
    /// it), new signer and JWKS.
    pub(crate) fn rotate(&mut self, keys: KeySet) {
        self.service = build_service(
            &self.base,
            keys,
            &self.policy,
            self.max_push_attempts,
            &self.adapters,
        );
        self.server
            .replace(router(self.service.clone(), HttpOptions::default()));
    }

    /// Deletes what the test created on moto (nothing to do for the embedded store, whose
    /// directory goes with the server). Call it at the end of a scenario.
    pub(crate) async fn finish(self) {
        if let Adapters::Aws(aws) = self.adapters {
            resources::delete_all(&aws.clients, &aws.resources).await;
        }
    }

    /// Sends `text` in a new task with an inline push config for `webhook`, and waits until
    /// the task stops. Every event is then in the log, and its push jobs are queued.
    pub(crate) async fn run_task(&self, text: &str, webhook: &str) -> Task {
        self.send(text, Some(webhook)).await
    }

    /// Sends `text` in a new task without a push config, and waits until the task stops.
    pub(crate) async fn run_task_without_push(&self, text: &str) -> Task {
        self.send(text, None).await
    }

    async fn send(&self, text: &str, webhook: Option<&str>) -> Task {
        let push = webhook.map(|url| TaskPushNotificationConfig {
            url: url.to_string(),
            token: "the-config-token".into(),
            ..TaskPushNotificationConfig::default()
        });
        let request = SendMessageRequest {
            message: Some(Message::user_text(a2a_core::new_id(), text)),
            configuration: Some(SendMessageConfiguration {
                task_push_notification_config: push,
                ..SendMessageConfiguration::default()
            }),
            ..SendMessageRequest::default()
        };
        match self
            .service
            .send_message(&CallContext::anonymous(""), request)
            .await
            .expect("send")
        {
            SendMessageResponse::Task(task) => task,
            other => panic!("expected a task, got {other:?}"),
        }
    }

    /// Delivers every queued push job, as the backend's consumer does, but retrying a failed
    /// job at once instead of after its backoff; returns when the push queue is empty.
    ///
    /// - Embedded: `a2a-local`'s push loop without its sleeps: the core's job runner delivers,
    ///   then deletes, retries, or dead-letters after the last attempt; a retry is made visible
    ///   again at once.
    /// - DynamoDB and SQS: the push function's event source mapping, played by the test:
    ///   receive a batch from the FIFO queue, hand it to the function's batch handler as an
    ///   SQS event, delete what it did not report as failed, and make each reported failure
    ///   visible again at once (the function set its visibility to the backoff).
    pub(crate) async fn drain(&self) -> Drained {
        match &self.adapters {
            Adapters::Embedded(embedded) => self.drain_embedded(&embedded.store).await,
            Adapters::Aws(aws) => self.drain_sqs(aws).await,
        }
    }

    async fn drain_embedded(&self, store: &SqliteStore) -> Drained {
        let queue = store.queue(QueueName::Push);
        let policy = JobPolicy {
            max_attempts: None,
            visibility: None,
        };
        let service = &self.service;
        let mut drained = Drained::default();
        for _round in 0..1000 {
            let jobs = queue
                .receive(16, Duration::from_secs(60))
                .await
                .expect("receive");
            if jobs.is_empty() {
                return drained;
            }
            let ids: Vec<i64> = jobs.iter().map(|job| job.receipt).collect();
            let settled = run_jobs(
                &queue,
                jobs,
                policy,
                |job: PushJob, receive_count| async move {
                    service.deliver_push(&job, receive_count).await
                },
            )
            .await;
            for (id, settled) in ids.into_iter().zip(settled) {
                assert!(settled.attempted, "a push job, handed to deliver_push");
                assert!(settled.applied, "settle the job");
                drained.attempts += 1;
                match settled.settlement {
                    Settlement::Delete => {}
                    Settlement::DeadLetter(_) => drained.dead_lettered += 1,
                    Settlement::RetryAfter(_) => {
                        drained.retries += 1;
                        // At once instead of after the backoff.
                        store
                            .retry_job(id, Duration::ZERO)
                            .await
                            .expect("retry at once");
                    }
                }
            }
        }
        panic!("the push queue did not drain");
    }

    /// The fan-out function's event source mapping, played by the test: every new record of
    /// the table's stream, filtered as the template filters them, handed to the function's
    /// batch handler (which puts the push jobs on the queue).
    async fn fan_out_stream(&self, aws: &AwsBackend) {
        let function = FanoutBatch::new(self.service.clone());
        let mut stream = aws.stream.lock().await;
        while let Some(batch) = stream.next_batch().await.expect("the table's stream") {
            let records: Vec<serde_json::Value> = batch
                .records
                .iter()
                .filter(|r| a2a_aws::fanout::passes_filter(r))
                .cloned()
                .collect();
            if !records.is_empty() {
                let out = function
                    .handle(&serde_json::json!({ "Records": records }))
                    .await;
                assert_eq!(out, serde_json::json!({ "batchItemFailures": [] }));
            }
            stream.commit(&batch).await.expect("commit");
        }
    }

    async fn drain_sqs(&self, aws: &AwsBackend) -> Drained {
        self.fan_out_stream(aws).await;
        let queue = aws.adapters.push.queue();
        let function = PushBatch {
            service: self.service.clone(),
            queue: queue.clone(),
        };
        let dead_before = aws.count(&aws.dead_letter_url).await;
        let mut drained = Drained::default();
        for _round in 0..1000 {
            let mut messages = queue
                .receive(aws.batch_size, Duration::ZERO, None)
                .await
                .expect("receive");
            if messages.is_empty() {
                let left = aws.count(queue.url()).await;
                if left == 0 {
                    drained.dead_lettered = aws.count(&aws.dead_letter_url).await - dead_before;
                    return drained;
                }
                // Queued but not handed out yet (made visible again this very moment): a long
                // poll returns as soon as it is.
                messages = queue
                    .receive(aws.batch_size, Duration::from_secs(1), None)
                    .await
                    .expect("receive");
                if messages.is_empty() {
                    continue;
                }
            }
            let response = function.handle(aws.event(&messages)).await;
            let failed: HashSet<&str> = response
                .batch_item_failures
                .iter()
                .map(|f| f.item_identifier.as_str())
                .collect();
            // Within a group the function stops at the first failure and hands the rest back
            // untried; every record before it was delivered, or dead-lettered on its last
            // attempt.
            let mut stopped: HashSet<&str> = HashSet::new();
            for m in &messages {
                let group = m.group_id.as_deref().unwrap_or(&m.message_id);
                let reported = failed.contains(m.message_id.as_str());
                if stopped.contains(group) {
                    assert!(reported, "a record after a failure of its group was kept");
                    continue;
                }
                drained.attempts += 1;
                if reported {
                    stopped.insert(group);
                    drained.retries += 1;
                    queue
                        .change_visibility(&m.receipt_handle, Duration::ZERO)
                        .await
                        .expect("retry at once");
                } else {
                    // What the event source mapping does with every record not reported.
                    queue.delete(&m.receipt_handle).await.expect("delete");
                }
            }
        }
        panic!("the push queue did not drain");
    }

    /// The push queue's dead letters, oldest first (per task, on SQS FIFO).
    pub(crate) async fn dead_letters(&self) -> Vec<DeadLetter> {
        match &self.adapters {
            Adapters::Embedded(embedded) => embedded
                .store
                .dead_letters(QueueName::Push)
                .await
                .expect("dead letters")
                .into_iter()
                .map(|(body, reason)| DeadLetter {
                    job: serde_json::from_str(&body).expect("a push job"),
                    reason,
                })
                .collect(),
            Adapters::Aws(aws) => aws.dead_letters().await,
        }
    }
}

fn build_service(
    base: &str,
    keys: KeySet,
    policy: &PushPolicy,
    max_push_attempts: u32,
    adapters: &Adapters,
) -> A2aService {
    let config = ServiceConfig {
        interfaces: vec![interface(base, "HTTP+JSON")],
        push_policy: policy.clone(),
        push_sender: Arc::new(a2a_net::WebhookClient::new()),
        push_signer: Some(PushSigner::new(keys, base)),
        max_push_attempts,
        push_timeout: Duration::from_secs(5),
        ..ServiceConfig::default()
    };
    let agent = Arc::new(StepAgent);
    match adapters {
        Adapters::Embedded(embedded) => embedded.service(config, agent),
        Adapters::Aws(aws) => A2aService::new(
            config,
            agent,
            Arc::new(aws.adapters.store.clone()),
            Arc::new(aws.adapters.work.clone()),
            Arc::new(aws.adapters.push.clone()),
        ),
    }
}

/// Clients for the moto server named by `AWS_ENDPOINT_URL` (the DynamoDB-and-SQS tests skip
/// without one, see [`emulator_available`]).
async fn aws_clients() -> AwsClients {
    let sdk = a2a_test_support::emulator("push-verify DynamoDB and SQS")
        .await
        .expect("the emulator (checked by the test before it started)");
    AwsClients::from_sdk_config(&sdk)
}

/// Whether the DynamoDB-and-SQS tests can run: `false` (and a skip note, or a panic under
/// `A2A_REQUIRE_EMULATOR=1`) without an emulator.
pub(crate) async fn emulator_available() -> bool {
    a2a_test_support::emulator("push-verify DynamoDB and SQS")
        .await
        .is_some()
}

/// The push function's `BatchSize` (its SQS event in `template.yaml`): how many messages the
/// event source mapping hands it at once.
fn push_function_batch_size() -> usize {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../template.yaml");
    let text = std::fs::read_to_string(&path).expect("template.yaml");
    let template: serde_norway::Value =
        serde_norway::from_str(&text).expect("template.yaml parses");
    let events = template["Resources"]["PushFunction"]["Properties"]["Events"]
        .as_mapping()
        .expect("the push function's events");
    let sizes: Vec<u64> = events
        .values()
        .filter(|e| e["Type"].as_str() == Some("SQS"))
        .map(|e| e["Properties"]["BatchSize"].as_u64().unwrap_or(10))
        .collect();
    assert_eq!(sizes.len(), 1, "one SQS event source: {sizes:?}");
    usize::try_from(sizes[0]).expect("a batch size")
}

impl AwsBackend {
    /// Creates the resources (prefix `pv` + 12 random hex digits), with the push queue's
    /// redrive after `max_push_attempts` receives.
    async fn create(max_push_attempts: u32) -> Self {
        let clients = aws_clients().await;
        let prefix = format!("pv{}", &a2a_core::new_id().replace('-', "")[..12]);
        let mut resources = Resources::named(&prefix);
        resources
            .push_queue
            .redrive
            .as_mut()
            .expect("the push queue has a dead-letter queue")
            .max_receive_count = max_push_attempts;
        let config = resources::create_all(&clients, &resources)
            .await
            .unwrap_or_else(|e| panic!("cannot create the test resources on the emulator: {e}"));
        let adapters = AwsAdapters::new(&clients, &config);
        let push_queue_arn = resources::queue_arn(&clients.sqs, &config.push_queue_url)
            .await
            .expect("the push queue's ARN");
        let dead_letter_url = adapters
            .push
            .queue()
            .dead_letter_queue_url()
            .await
            .expect("the push queue's dead-letter queue")
            .to_owned();
        // The queue as created: FIFO, and given up on by SQS after the service's last attempt.
        let attributes = clients
            .sqs
            .get_queue_attributes()
            .queue_url(&config.push_queue_url)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await
            .expect("the push queue's attributes");
        let attribute = |name| {
            attributes
                .attributes()
                .and_then(|a| a.get(&name))
                .cloned()
                .unwrap_or_default()
        };
        assert_eq!(attribute(QueueAttributeName::FifoQueue), "true");
        let redrive: serde_json::Value =
            serde_json::from_str(&attribute(QueueAttributeName::RedrivePolicy))
                .expect("a redrive policy");
        assert_eq!(
            redrive["maxReceiveCount"].to_string().trim_matches('"'),
            max_push_attempts.to_string()
        );
        assert!(dead_letter_url.ends_with(&resources.push_dead_letter_queue.name));
        Self {
            clients,
            resources,
            adapters,
            push_queue_arn,
            dead_letter_url,
            batch_size: push_function_batch_size(),
            stream: tokio::sync::Mutex::new(
                StreamPoller::from_env(&config.table, Checkpoints::Memory)
                    .await
                    .expect("the table's stream"),
            ),
        }
    }

    /// The SQS event the event source mapping would invoke the push function with.
    fn event(&self, messages: &[ReceivedMessage]) -> SqsEvent {
        let records: Vec<serde_json::Value> = messages
            .iter()
            .map(|m| m.to_lambda_record(&self.push_queue_arn))
            .collect();
        serde_json::from_value(serde_json::json!({ "Records": records })).expect("an SQS event")
    }

    /// Messages in the queue at `url`: visible, in flight or delayed (exact on moto).
    async fn count(&self, url: &str) -> usize {
        let out = self
            .clients
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
            .send()
            .await
            .expect("queue attributes");
        out.attributes()
            .map(|a| {
                a.values()
                    .map(|v| v.parse::<usize>().expect("a count"))
                    .sum()
            })
            .unwrap_or(0)
    }

    /// Reads every message of the dead-letter queue with its `reason` attribute, then makes
    /// them visible again (so they can be read again).
    async fn dead_letters(&self) -> Vec<DeadLetter> {
        let sqs = &self.clients.sqs;
        let mut letters = Vec::new();
        let mut handles = Vec::new();
        for _round in 0..100 {
            let out = sqs
                .receive_message()
                .queue_url(&self.dead_letter_url)
                .max_number_of_messages(10)
                .wait_time_seconds(0)
                .visibility_timeout(60)
                .message_attribute_names("reason")
                .send()
                .await
                .expect("receive from the dead-letter queue");
            let messages = out.messages.unwrap_or_default();
            if messages.is_empty() {
                break;
            }
            for m in messages {
                let reason = m
                    .message_attributes()
                    .and_then(|a| a.get("reason"))
                    .and_then(|v| v.string_value())
                    .unwrap_or_default()
                    .to_owned();
                letters.push(DeadLetter {
                    job: serde_json::from_str(m.body().unwrap_or_default()).expect("a push job"),
                    reason,
                });
                handles.push(m.receipt_handle.unwrap_or_default());
            }
        }
        for handle in handles {
            sqs.change_message_visibility()
                .queue_url(&self.dead_letter_url)
                .receipt_handle(handle)
                .visibility_timeout(0)
                .send()
                .await
                .expect("hand a dead letter back");
        }
        // Nothing left unread (FIFO hands out at most one batch per message group at a time).
        assert_eq!(
            self.count(&self.dead_letter_url).await,
            letters.len(),
            "every dead letter was read"
        );
        letters
    }
}

/// The task store of an [`AgentServer`] whose [`AgentServer::location`] this process was given
/// in its environment: for a second process on the same state.
pub(crate) async fn open_store() -> Arc<dyn TaskStore> {
    if let Ok(dir) = std::env::var("A2A_TEST_DATA_DIR") {
        return Arc::new(SqliteStore::open(std::path::Path::new(&dir)).expect("open the store"));
    }
    let adapters = AwsAdapters::new(
        &aws_clients().await,
        &a2a_aws::AwsConfig::from_env().expect("the table and queues"),
    );
    Arc::new(adapters.store)
}
