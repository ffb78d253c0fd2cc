//! What each protocol operation costs on DynamoDB and SQS, measured: the real core
//! (`A2aService`, configured as on Lambda) on the AWS adapters against moto's server, with a
//! [`Meter`] counting every request. Prints the table `docs/cost.md` reproduces (run with
//! `--nocapture` to see it) and writes it to `$CARGO_TARGET_TMPDIR/cost-table.md`.
//!
//! Asserts the targets the design sets where the core meets them, and the current figure where
//! it does not (so a change shows up here and in the doc).

mod common;
mod prices;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use a2a_aws::fanout::{self, Checkpoints, StreamPoller};
use a2a_aws::{Meter, Summary};
use a2a_core::{
    A2aService, Agent, AgentCall, AgentDescription, AgentError, AgentRequest, CallContext, CallKey,
    Emitter, OperationRequest, OperationResponse, Placement, RemoteAgents, RemoteError, RemoteSent,
    ServiceConfig, WorkJob,
};
use a2a_protocol::{
    Artifact, CancelTaskRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTasksRequest, ListTasksResponse, Message, Part, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, Task, TaskPushNotificationConfig,
    TaskPushNotificationConfigRef, TaskState,
};
use async_trait::async_trait;
use common::Env;
use futures::StreamExt;

/// `echo …` answers inline with one artifact and completes; `stream N` streams N chunks;
/// `queued …` runs on the work queue.
struct CostAgent;

#[async_trait]
impl Agent for CostAgent {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "cost".into(),
            description: "measures the store".into(),
            version: "1".into(),
            ..Default::default()
        }
    }

    fn placement(&self, request: &AgentRequest) -> Placement {
        if request.text().starts_with("queued") || request.text() == "delegate" {
            Placement::Queued
        } else {
            Placement::Inline
        }
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        let text = request.text().to_owned();
        if text == "delegate" {
            // Hands the work to another agent and waits for it without running (issue 28).
            emitter.working(None).await?;
            let call = AgentCall::text(OTHER_AGENT, "do the work", Duration::from_secs(600));
            let theirs = emitter.call_agent("delegate", call).await?.task;
            return emitter
                .status(theirs.unwrap_or_default().status.state, None)
                .await;
        }
        if let Some(args) = text.strip_prefix("grow ") {
            // `grow KB N`: an artifact of KB kilobytes that does not compress, then N small
            // chunks of another, each written before the next: a long stream into a large task.
            let (kb, n) = args.split_once(' ').unwrap_or((args, "0"));
            let (kb, n): (usize, usize) = (kb.parse().unwrap_or(1), n.parse().unwrap_or(0));
            emitter.working(None).await?;
            let big = Artifact {
                artifact_id: "big".into(),
                parts: vec![Part::text(noise(kb * 1024))],
                ..Default::default()
            };
            emitter.artifact(big, false, true).await?;
            emitter.flush().await?;
            for i in 0..n {
                let chunk = Artifact {
                    artifact_id: "tail".into(),
                    parts: vec![Part::text(format!("chunk {i} of a long stream, "))],
                    ..Default::default()
                };
                emitter.artifact(chunk, i > 0, i + 1 == n).await?;
                emitter.flush().await?;
            }
        } else if let Some(n) = text.strip_prefix("stream ") {
            // `stream N`: each chunk written before the next is made, as when a model's tokens
            // come slower than the store writes (the cost of one chunk); `stream N together`:
            // back to back, so the chunks made during a write share the next one.
            let (n, together) = match n.split_once(' ') {
                Some((n, _)) => (n, true),
                None => (n, false),
            };
            let n: usize = n.parse().unwrap_or(1);
            emitter.working(None).await?;
            for i in 0..n {
                let chunk = Artifact {
                    artifact_id: "stream".into(),
                    parts: vec![Part::text(format!("chunk {i} "))],
                    ..Default::default()
                };
                emitter.artifact(chunk, i > 0, i + 1 == n).await?;
                if !together {
                    emitter.flush().await?;
                }
            }
        } else {
            let echo = Artifact {
                artifact_id: "echo".into(),
                parts: vec![Part::text(text)],
                ..Default::default()
            };
            emitter.artifact(echo, false, true).await?;
        }
        emitter.complete(None).await
    }
}

/// The agent `delegate` calls. The cost measured is ours (the store and the queues); the other
/// agent stands behind the `RemoteAgents` port: its task works, then has two chunks and ends,
/// and the test pushes those to the relay entry point as the relay route would.
const OTHER_AGENT: &str = "https://other-agent.example";

/// The other agent of `delegate`: keeps the push config our call sends it, and answers GetTask
/// with its task as it ended.
#[derive(Debug, Default)]
struct OtherAgent {
    push: std::sync::Mutex<Option<TaskPushNotificationConfig>>,
}

impl OtherAgent {
    fn task(state: TaskState, chunks: &[&str]) -> Task {
        Task {
            id: "their-task".into(),
            context_id: "their-context".into(),
            status: a2a_protocol::TaskStatus {
                state,
                ..Default::default()
            },
            artifacts: if chunks.is_empty() {
                Vec::new()
            } else {
                vec![Artifact {
                    artifact_id: "answer".into(),
                    parts: chunks.iter().map(|c| Part::text(*c)).collect(),
                    ..Default::default()
                }]
            },
            ..Default::default()
        }
    }
}

#[async_trait]
impl RemoteAgents for OtherAgent {
    async fn send(
        &self,
        _agent: &str,
        _key: &CallKey,
        _message: Message,
        push: Option<TaskPushNotificationConfig>,
        _traceparent: Option<&str>,
    ) -> Result<RemoteSent, RemoteError> {
        *self.push.lock().expect("lock") = push;
        Ok(RemoteSent {
            answer: SendMessageResponse::Task(Self::task(TaskState::Working, &[])),
            pushes: true,
        })
    }

    async fn get_task(
        &self,
        _remote: &a2a_core::RemoteTaskRef,
        _traceparent: Option<&str>,
    ) -> Result<Task, RemoteError> {
        Ok(Self::task(TaskState::Completed, &["chunk-1 ", "chunk-2 "]))
    }

    async fn cancel_task(
        &self,
        _remote: &a2a_core::RemoteTaskRef,
        _traceparent: Option<&str>,
    ) -> Result<(), RemoteError> {
        Ok(())
    }

    async fn verify_push(
        &self,
        _agent: &str,
        _audiences: &[String],
        _signature: &str,
        _body: &[u8],
    ) -> Result<(), RemoteError> {
        Ok(())
    }
}

struct Bench {
    env: Env,
    /// The service's store (the same head cache): for a follower's poll.
    store: a2a_aws::DynamoTaskStore,
    /// The table's stream, read as the fan-out function's event source mapping reads it.
    stream: StreamPoller,
    meter: Meter,
    service: A2aService,
    ctx: CallContext,
    rows: Vec<(String, Summary)>,
    other: Arc<OtherAgent>,
}

impl Bench {
    /// `None` without an emulator: the test skips.
    async fn new() -> Option<Self> {
        let env = Env::new().await?;
        let meter = Meter::new();
        let adapters = env.adapters().with_meter(&meter);
        let other = Arc::new(OtherAgent::default());
        let config = ServiceConfig {
            // As on Lambda: inline work that would outlive the response is queued instead.
            background_inline: false,
            // The REST interface names the relay route's base.
            interfaces: vec![a2a_protocol::AgentInterface {
                url: "https://agent.example".into(),
                protocol_binding: a2a_protocol::BINDING_HTTP_JSON.into(),
                protocol_version: "1.0".into(),
                tenant: String::new(),
            }],
            remote_agents: other.clone(),
            ..ServiceConfig::default()
        };
        let store = adapters.store.clone();
        let service = A2aService::new(
            config,
            Arc::new(CostAgent),
            Arc::new(adapters.store),
            Arc::new(adapters.work),
            Arc::new(adapters.push),
        );
        let stream = StreamPoller::from_env(&env.config.table, Checkpoints::Memory)
            .await
            .expect("the table's stream");
        Some(Self {
            env,
            store,
            stream,
            meter,
            service,
            ctx: CallContext::anonymous(""),
            rows: Vec::new(),
            other,
        })
    }

    /// Records what happened since the last row under `operation`. Work the operation started
    /// in the background (a lease given back after the last write) may land just after it
    /// returns: wait until no call came for a moment, so it is counted here and not in the
    /// next row.
    async fn row(&mut self, operation: &str) -> Summary {
        let mut calls = self.meter.take();
        loop {
            tokio::time::sleep(Duration::from_millis(150)).await;
            let more = self.meter.take();
            if more.is_empty() {
                break;
            }
            calls.extend(more);
        }
        let summary = Summary::of(&calls);
        self.rows.push((operation.to_owned(), summary.clone()));
        summary
    }

    /// The first page of `page_size` of the owner's tasks.
    async fn list_page(&self, page_size: i32) -> ListTasksResponse {
        self.list(ListTasksRequest {
            page_size: Some(page_size),
            ..Default::default()
        })
        .await
    }

    /// The owner's tasks as `request` asks for them.
    async fn list(&self, request: ListTasksRequest) -> ListTasksResponse {
        match self
            .service
            .call(&self.ctx, OperationRequest::ListTasks(request))
            .await
        {
            Ok(OperationResponse::Tasks(listed)) => listed,
            other => panic!("ListTasks failed: {other:?}"),
        }
    }

    async fn send(&self, text: &str, configuration: Option<SendMessageConfiguration>) -> Task {
        self.send_message(Message::user_text(a2a_core::new_id(), text), configuration)
            .await
    }

    /// Sends `text` as a new task in the context `context_id`, which the client names.
    async fn send_in(&self, context_id: &str, text: &str) -> Task {
        let message = Message {
            context_id: context_id.into(),
            ..Message::user_text(a2a_core::new_id(), text)
        };
        self.send_message(message, None).await
    }

    async fn send_message(
        &self,
        message: Message,
        configuration: Option<SendMessageConfiguration>,
    ) -> Task {
        let request = SendMessageRequest {
            message: Some(message),
            configuration,
            ..Default::default()
        };
        match self
            .service
            .call(&self.ctx, OperationRequest::SendMessage(request))
            .await
        {
            Ok(OperationResponse::Sent(SendMessageResponse::Task(task))) => task,
            other => panic!("send_message: {other:?}"),
        }
    }

    /// Streams `text`; the task's id and its last version (the stream's last event).
    async fn stream_task(&self, text: &str) -> (String, u64) {
        let request = SendMessageRequest {
            message: Some(Message::user_text(a2a_core::new_id(), text)),
            ..Default::default()
        };
        let Ok(OperationResponse::Stream(mut stream)) = self
            .service
            .call(&self.ctx, OperationRequest::SendStreamingMessage(request))
            .await
        else {
            panic!("SendStreamingMessage did not answer with a stream");
        };
        let mut id = String::new();
        while let Some(item) = stream.next().await {
            if let a2a_protocol::StreamResponse::Task(task) = item.expect("stream item").response {
                id = task.id;
            }
        }
        let owner = a2a_core::Owner::anonymous("");
        let head = a2a_core::TaskLogStore::load_task(&self.store, &owner, &id)
            .await
            .expect("load")
            .expect("the task");
        (id, head.version)
    }

    /// Streams `text` (`stream N`, `stream N together`); how many items the stream had.
    async fn stream(&self, text: &str) -> usize {
        let request = SendMessageRequest {
            message: Some(Message::user_text(a2a_core::new_id(), text)),
            ..Default::default()
        };
        let Ok(OperationResponse::Stream(mut stream)) = self
            .service
            .call(&self.ctx, OperationRequest::SendStreamingMessage(request))
            .await
        else {
            panic!("SendStreamingMessage did not answer with a stream");
        };
        let mut items = 0;
        while let Some(item) = stream.next().await {
            item.expect("stream item");
            items += 1;
        }
        items
    }

    /// Plays the fan-out function's event source mapping: the stream's new records, filtered
    /// as the template filters them, handed to what the function runs. Returns how many
    /// records passed the filter (each batch of them is one invocation on AWS; stream reads
    /// are free).
    async fn fan_out(&mut self) -> usize {
        let mut passed = 0;
        while let Some(batch) = self.stream.next_batch().await.expect("the stream") {
            let records: Vec<serde_json::Value> = batch
                .records
                .iter()
                .filter(|r| fanout::passes_filter(r))
                .cloned()
                .collect();
            passed += records.len();
            self.service
                .fan_out(&fanout::appended_in_records(&records))
                .await
                .expect("fan out");
            self.stream.commit(&batch).await.expect("commit");
        }
        passed
    }

    /// Plays the worker function: receives one job from the work queue, runs it, deletes it.
    async fn work(&self) -> WorkJob {
        let queue = self
            .env
            .adapters()
            .work
            .queue()
            .clone()
            .with_meter(self.meter.clone());
        let received = queue
            .receive(1, Duration::from_secs(2), None)
            .await
            .expect("receive");
        let job: WorkJob = serde_json::from_str(&received[0].body).expect("a WorkJob");
        let outcome = self
            .service
            .run_work_job(&job, received[0].receive_count)
            .await;
        assert_eq!(outcome, a2a_core::JobOutcome::Done, "{job:?}");
        queue
            .delete(&received[0].receipt_handle)
            .await
            .expect("delete");
        job
    }

    /// Plays the relay route: the other agent pushes `update` to the URL our call gave it.
    async fn pushed(&self, update: serde_json::Value) {
        let config = self
            .other
            .push
            .lock()
            .expect("lock")
            .clone()
            .expect("the call sent a push config");
        let task_id = config.url.rsplit('/').next().expect("task segment");
        let body = serde_json::to_vec(&update).expect("json");
        let answer = self
            .service
            .relay_push(task_id, None, &config.token, None, &body)
            .await
            .expect("relayed");
        assert_eq!(answer, a2a_core::RelayAnswer::Taken, "the task still waits");
    }

    fn table(&self) -> String {
        let mut out = String::from(
            "| operation | DynamoDB requests | SQS requests | moto-reported CU | est. WRU | est. RRU |\n\
             |---|---|---|---|---|---|\n",
        );
        for (operation, summary) in &self.rows {
            let _ = writeln!(out, "| {operation} | {summary} |");
        }
        out
    }
}

/// `len` characters that deflate cannot shrink much (a fixed pseudo-random sequence).
fn noise(len: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ALPHABET[(state % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

/// Asserts a blocking send cost at most `wru` est. WRU and 1 est. RRU, and no queue request.
fn assert_floor(s: &Summary, wru: f64, what: &str) {
    assert!(s.estimated_wru <= wru, "{what}: {s}");
    assert!(s.estimated_rru <= 1.0, "{what}: {s}");
    assert_eq!(s.sqs_requests(), 0, "{what}: {s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cost_per_operation() {
    let Some(mut bench) = Bench::new().await else {
        return;
    };

    // A blocking echo that completes inline.
    let echo = bench.send("echo hello", None).await;
    assert_eq!(echo.status.state, TaskState::Completed);
    let s = bench
        .row("SendMessage, blocking echo completed inline")
        .await;
    // The emitter holds the artifact until the first status, so the task, its artifact and
    // COMPLETED are created in one write; the second adds the task to its owner's count
    // (ListTasks' totalSize without reading the owner's tasks: docs/cost.md, "ListTasks at
    // scale", says why that write is worth its unit).
    assert_eq!(s.dynamodb_writes(), 2, "echo writes: {s}");
    assert_eq!(s.dynamodb.get("UpdateItem"), Some(&1), "the count: {s}");
    assert_eq!(s.sqs_requests(), 0);
    // ≤ 3 WRU (the item, its index entry, the count) and ≤ 1 RRU (the idempotency read).
    assert_floor(&s, 3.0, "echo");
    // Target: a task without push configs pays nothing for push: no lookup, no queue message,
    // and its write does not pass the fan-out function's filter (no invocation).
    assert_eq!(
        bench.fan_out().await,
        0,
        "the echo's write invokes no fan-out"
    );
    prices::print_and_write(&s);
    prices::bill::print_and_write(&s);
    // The same for a 100-character text, and each further KB of text ≤ 2 WRU (text that does
    // not compress, so the compression of the stored body cannot hide it).
    let hundred = noise(100);
    bench.send(&format!("echo {hundred}"), None).await;
    let s = bench
        .row("SendMessage, blocking echo of 100 characters")
        .await;
    assert_floor(&s, 3.0, "echo of 100 characters");
    bench
        .send(&format!("echo {hundred}{}", noise(1024)), None)
        .await;
    let s = bench
        .row("SendMessage, blocking echo of 100 characters + 1 KB")
        .await;
    assert_floor(&s, 5.0, "echo of 100 characters + 1 KB");

    // GetTask: one read.
    let get = GetTaskRequest {
        id: echo.id.clone(),
        ..Default::default()
    };
    bench
        .service
        .call(&bench.ctx, OperationRequest::GetTask(get))
        .await
        .expect("GetTask");
    let s = bench.row("GetTask").await;
    assert_eq!(s.dynamodb_requests(), 1, "GetTask: {s}");
    assert_eq!(s.dynamodb.get("GetItem"), Some(&1));

    // ListTasks: the owner's first marks its counts complete (they agree with the page, which
    // holds every task), once.
    bench.list_page(10).await;
    let s = bench
        .row("ListTasks, the owner's first (3 tasks: marks its counts complete)")
        .await;
    assert_eq!(s.dynamodb.get("PutItem"), Some(&1), "the mark: {s}");
    // Then a page holding everything, then a page of a longer list.
    bench.list_page(10).await;
    let s = bench.row("ListTasks, one page holds all (3 tasks)").await;
    assert_eq!(s.dynamodb_writes(), 0);
    // Three echoes so far: two more make five.
    for _ in 0..2 {
        bench.send("echo more", None).await;
    }
    bench.meter.take();
    let listed = bench.list_page(2).await;
    assert_eq!(listed.tasks.len(), 2);
    assert_eq!(listed.total_size, 5);
    let s = bench
        .row("ListTasks, page of 2 of 5 (+ counts query)")
        .await;
    assert_eq!(
        s.dynamodb.get("Query"),
        Some(&10),
        "the owner's partitions (eight states and the bare owner's) and the counts: {s}"
    );

    // A context the client names holds every task sent in it: each pays for its entry in the
    // by-context index (a context the server made for one task costs none: the echoes above).
    let conversation = format!("conversation-{}", a2a_core::new_id());
    bench.send_in(&conversation, "echo first turn").await;
    let s = bench
        .row("SendMessage, blocking echo in a context the client names")
        .await;
    assert_floor(&s, 4.0, "echo in a named context");
    for turn in ["echo second turn", "echo third turn"] {
        bench.send_in(&conversation, turn).await;
    }
    // A state's first filtered page counts that state on the index once, and marks its count
    // complete when they agree.
    let completed = |page_size| ListTasksRequest {
        status: Some(TaskState::Completed),
        page_size: Some(page_size),
        ..Default::default()
    };
    bench.meter.take();
    let listed = bench.list(completed(2)).await;
    assert_eq!(listed.total_size, 8);
    let s = bench
        .row("ListTasks, status COMPLETED, the owner's first (marks its count complete)")
        .await;
    assert_eq!(s.dynamodb.get("PutItem"), Some(&1), "the mark: {s}");

    // At scale: a page costs the same whether the owner has 100 or 400 tasks, filtered or
    // not (the totals come from the counts or from the context's own entries, the entries from
    // the partitions that can hold them).
    let first_context = ListTasksRequest {
        context_id: echo.context_id.clone(),
        page_size: Some(50),
        ..Default::default()
    };
    let named_context = ListTasksRequest {
        context_id: conversation.clone(),
        page_size: Some(2),
        ..Default::default()
    };
    let working = ListTasksRequest {
        status: Some(TaskState::Working),
        page_size: Some(50),
        ..Default::default()
    };
    let mut at_scale: Vec<Vec<Summary>> = Vec::new();
    let mut owned_now = 8;
    for owned in [100, 400] {
        for _ in owned_now..owned {
            bench.send("echo more", None).await;
        }
        owned_now = owned;
        bench.meter.take();
        let mut rows = Vec::new();
        let listed = bench.list_page(50).await;
        assert_eq!(listed.tasks.len(), 50);
        assert_eq!(listed.total_size, owned);
        rows.push(
            bench
                .row(&format!("ListTasks, page of 50 of {owned}"))
                .await,
        );
        let listed = bench.list(completed(50)).await;
        assert_eq!((listed.tasks.len(), listed.total_size), (50, owned));
        rows.push(
            bench
                .row(&format!(
                    "ListTasks, status COMPLETED, page of 50 of {owned}"
                ))
                .await,
        );
        let listed = bench.list(working.clone()).await;
        assert_eq!((listed.tasks.len(), listed.total_size), (0, 0));
        rows.push(
            bench
                .row(&format!("ListTasks, status WORKING (none) among {owned}"))
                .await,
        );
        // The context the server made for the first echo: its one task, read by id.
        let listed = bench.list(first_context.clone()).await;
        assert_eq!(listed.tasks.len(), 1);
        assert_eq!(listed.tasks[0].id, echo.id);
        assert_eq!(listed.total_size, 1);
        rows.push(
            bench
                .row(&format!(
                    "ListTasks, contextId made for 1 task, among {owned}"
                ))
                .await,
        );
        let listed = bench.list(named_context.clone()).await;
        assert_eq!((listed.tasks.len(), listed.total_size), (2, 3));
        rows.push(
            bench
                .row(&format!(
                    "ListTasks, contextId of 3 tasks, page of 2 (+ count), among {owned}"
                ))
                .await,
        );
        at_scale.push(rows);
    }
    for (small, large) in at_scale[0].iter().zip(&at_scale[1]) {
        assert_eq!(
            small.dynamodb, large.dynamodb,
            "requests: {small} / {large}"
        );
        assert_eq!(
            small.estimated_rru, large.estimated_rru,
            "read units do not grow with the owner's tasks: {small} / {large}"
        );
        assert_eq!(large.dynamodb_writes(), 0, "{large}");
    }

    // Push config CRUD.
    let config = TaskPushNotificationConfig {
        task_id: echo.id.clone(),
        id: "cfg-1".into(),
        url: "https://example.com/hook".into(),
        token: "t".into(),
        ..Default::default()
    };
    bench
        .service
        .call(
            &bench.ctx,
            OperationRequest::CreateTaskPushNotificationConfig(config),
        )
        .await
        .expect("CreateTaskPushNotificationConfig");
    bench.row("CreateTaskPushNotificationConfig").await;
    let reference = TaskPushNotificationConfigRef {
        task_id: echo.id.clone(),
        id: "cfg-1".into(),
        ..Default::default()
    };
    bench
        .service
        .call(
            &bench.ctx,
            OperationRequest::GetTaskPushNotificationConfig(reference.clone()),
        )
        .await
        .expect("GetTaskPushNotificationConfig");
    bench.row("GetTaskPushNotificationConfig").await;
    let list = ListTaskPushNotificationConfigsRequest {
        task_id: echo.id.clone(),
        ..Default::default()
    };
    bench
        .service
        .call(
            &bench.ctx,
            OperationRequest::ListTaskPushNotificationConfigs(list),
        )
        .await
        .expect("ListTaskPushNotificationConfigs");
    bench.row("ListTaskPushNotificationConfigs").await;
    bench
        .service
        .call(
            &bench.ctx,
            OperationRequest::DeleteTaskPushNotificationConfig(reference),
        )
        .await
        .expect("DeleteTaskPushNotificationConfig");
    bench.row("DeleteTaskPushNotificationConfig").await;

    // A blocking echo with an inline push config: the config, and one push job per event.
    let with_push = SendMessageConfiguration {
        task_push_notification_config: Some(TaskPushNotificationConfig {
            url: "https://example.com/hook".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    // Everything before it fans out to nothing (the config made above was deleted).
    bench.fan_out().await;
    bench.meter.take();
    bench.send("echo pushed", Some(with_push)).await;
    let s = bench
        .row("SendMessage, blocking echo + inline push config")
        .await;
    let invoked = bench.fan_out().await;
    assert_eq!(invoked, 1, "one record: the task's one write");
    let f = bench
        .row("fan-out function: that write's stream record → its push jobs")
        .await;
    assert_eq!(f.sqs.get("SendMessageBatch"), Some(&1), "{f}");
    assert_eq!(f.dynamodb_requests(), 0, "{f}");
    // The push jobs are the table stream's to enqueue (the fan-out function), not the
    // request's: the request writes the config and the task, nothing else.
    assert_eq!(s.sqs_requests(), 0, "push jobs: {s}");

    // Streaming: the marginal cost of one more streamed event, from 5 and 15 chunks.
    let items = bench.stream("stream 5").await;
    assert!(items >= 7, "task, working, 5 chunks, completed: {items}");
    let five = bench.row("SendStreamingMessage, 5 chunks").await;
    bench.stream("stream 15").await;
    let fifteen = bench.row("SendStreamingMessage, 15 chunks").await;
    let per_event_writes = f64::from(fifteen.dynamodb_writes() - five.dynamodb_writes()) / 10.0;
    let per_event_wru = (fifteen.estimated_wru - five.estimated_wru) / 10.0;
    // Targets: each streamed event ≤ 1 write request, ≤ 2 WRU.
    assert_eq!(per_event_writes, 1.0, "write requests per streamed event");
    assert!(
        per_event_wru <= 2.0,
        "WRU per streamed event: {per_event_wru}"
    );
    // Chunks made faster than the store writes share writes: fewer than one per chunk.
    let items = bench.stream("stream 15 together").await;
    assert_eq!(items, 18, "task, working, 15 chunks, completed");
    let together = bench
        .row("SendStreamingMessage, 15 chunks back to back")
        .await;
    assert!(
        together.dynamodb_writes() < fifteen.dynamodb_writes(),
        "chunks back to back share writes: {together} against {fifteen}"
    );

    // Large tasks: an append rewrites the whole head, and a follower's poll reads it whole
    // (DynamoDB bills an item by its size, whatever the projection). Per append: the marginal
    // cost of 10 more chunks into a task that holds KB kilobytes already.
    let mut large = Vec::new();
    for kb in [10, 100] {
        bench.stream_task(&format!("grow {kb} 1")).await;
        let one = bench
            .row(&format!("SendStreamingMessage, a {kb} KB task, 1 chunk"))
            .await;
        let (id, version) = bench.stream_task(&format!("grow {kb} 11")).await;
        let eleven = bench
            .row(&format!("SendStreamingMessage, a {kb} KB task, 11 chunks"))
            .await;
        let per_append = (eleven.estimated_wru - one.estimated_wru) / 10.0;
        a2a_core::TaskLogStore::wait_for_append(&bench.store, &id, version, Duration::ZERO).await;
        let poll = bench
            .row(&format!("a follower's poll of a {kb} KB task"))
            .await;
        assert_eq!(poll.dynamodb.get("GetItem"), Some(&1), "{poll}");
        large.push((kb, per_append, poll.estimated_rru));
    }

    // Queued work: the request enqueues, the worker runs the job from SQS.
    let queued = SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    };
    let task = bench.send("queued job", Some(queued.clone())).await;
    let sent = bench.row("SendMessage, queued (returnImmediately)").await;
    let job = bench.work().await;
    assert_eq!(job.task_id, task.id);
    let worked = bench
        .row("worker: receive + run queued echo + delete")
        .await;
    // Target: a queued echo end to end (send, claim, run, complete) ≤ 9 WRU: 6, its count, and
    // its move from SUBMITTED to COMPLETED in its owner's counts per state (what keeps
    // ListTasks by status flat: docs/cost.md, "ListTasks at scale"), and the lease given back
    // (left to expire, every sweep of expired leases would read it for days).
    let queued_wru = sent.estimated_wru + worked.estimated_wru;
    assert!(queued_wru <= 9.0, "queued echo: {queued_wru} WRU");

    // A delegated task: queued, the worker calls the other agent and parks; the other agent's
    // pushes come to the relay route (two chunks, then its end, which reads its task once and
    // queues the resume); the resume completes ours. Nothing runs, and nothing is billed, in
    // between.
    let delegated = bench.send("delegate", Some(queued.clone())).await;
    let d_sent = bench.row("delegate: SendMessage (returnImmediately)").await;
    let job = bench.work().await;
    assert_eq!(job.task_id, delegated.id);
    let d_parked = bench
        .row("delegate: worker calls the other agent and parks")
        .await;
    let chunk = |text: &str, append: bool| {
        serde_json::json!({"artifactUpdate": {"taskId": "their-task", "contextId": "their-context",
            "artifact": {"artifactId": "answer", "parts": [{"text": text}]}, "append": append}})
    };
    bench.pushed(chunk("chunk-1 ", false)).await;
    let d_chunk = bench.row("delegate: relay route, one pushed chunk").await;
    bench.pushed(chunk("chunk-2 ", true)).await;
    let d_chunk2 = bench.row("delegate: relay route, another chunk").await;
    bench
        .pushed(serde_json::json!({"statusUpdate": {"taskId": "their-task",
            "contextId": "their-context", "status": {"state": "TASK_STATE_COMPLETED"}}}))
        .await;
    let d_ended = bench
        .row("delegate: relay route, the other task ended → resume job")
        .await;
    let job = bench.work().await;
    assert!(job.resume, "{job:?}");
    let d_resumed = bench
        .row("delegate: worker resumes and completes our task")
        .await;
    let owner = a2a_core::Owner::anonymous("");
    let done = a2a_core::TaskLogStore::load_task(&bench.store, &owner, &delegated.id)
        .await
        .expect("load")
        .expect("the task");
    assert_eq!(done.task.status.state, TaskState::Completed);
    assert_eq!(done.task.artifacts.len(), 1, "{:?}", done.task.artifacts);
    let delegation = [
        &d_sent, &d_parked, &d_chunk, &d_chunk2, &d_ended, &d_resumed,
    ];
    let d_wru: f64 = delegation.iter().map(|s| s.estimated_wru).sum();
    let d_rru: f64 = delegation.iter().map(|s| s.estimated_rru).sum();
    let d_dynamodb: u32 = delegation.iter().map(|s| s.dynamodb_requests()).sum();
    let d_sqs: u32 = delegation.iter().map(|s| s.sqs_requests()).sum();
    // Each relayed chunk is one write, as if our agent had streamed it.
    assert_eq!(d_chunk.dynamodb_writes(), 1, "{d_chunk}");
    assert_eq!(d_chunk.sqs_requests(), 0, "{d_chunk}");
    // Two work jobs (the start and the resume), each received and deleted, and the safety-net
    // poll queued when it parks (delayed by ten polls: the remote pushes; it comes back after
    // the task ended and finds nothing to do, two more requests not counted here).
    assert_eq!(d_sqs, 7, "queue requests of a delegated task");

    // CancelTask of a queued task that has not run yet.
    let waiting = bench.send("queued later", Some(queued)).await;
    bench.meter.take();
    let cancel = CancelTaskRequest {
        id: waiting.id.clone(),
        ..Default::default()
    };
    let Ok(OperationResponse::Task(canceled)) = bench
        .service
        .call(&bench.ctx, OperationRequest::CancelTask(cancel))
        .await
    else {
        panic!("CancelTask failed");
    };
    assert_eq!(canceled.status.state, TaskState::Canceled);
    bench.row("CancelTask (queued task)").await;

    let mut table = bench.table();
    let _ = writeln!(
        table,
        "\nPer streamed event (15 − 5 chunks, /10): {per_event_writes:.1} write request, \
         {per_event_wru:.1} est. WRU\n\
         Queued echo end to end (send + worker): {queued_wru:.1} est. WRU\n\
         A delegated task end to end (two relayed chunks): {d_dynamodb} DynamoDB requests, \
         {d_sqs} SQS requests, {d_wru:.1} est. WRU, {d_rru:.1} est. RRU"
    );
    for (kb, per_append, poll) in &large {
        let _ = writeln!(
            table,
            "A {kb} KB task: {per_append:.1} est. WRU per streamed chunk, {poll:.1} est. RRU per \
             follower poll"
        );
    }
    println!("\n{table}");
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cost-table.md");
    std::fs::write(&path, &table).expect("write the table");
    println!("(written to {})", path.display());
    bench.env.cleanup().await;
}
