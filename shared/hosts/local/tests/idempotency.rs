//! Idempotent SendMessage on the service with the embedded store, and re-executions of a
//! queued job: what a retried or duplicated message does, and what a crashed-then-redelivered
//! job leaves behind.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{
    A2aService, Agent, AgentDescription, AgentError, AgentRequest, CallContext, Emitter,
    MessageIdReuse, Placement, Principal, ServiceConfig, WorkJob,
};
use a2a_embedded::{QueueName, SqliteStore};
use a2a_protocol::{
    A2AError, GetTaskRequest, ListTasksRequest, Message, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskState,
};
use a2a_reference_agent::ReferenceAgent;
use async_trait::async_trait;
use tokio::time::Instant;

/// A message the fixture's agent runs as the reference agent's `hold`, on the worker.
const QUEUED_HOLD: &str = "queued hold";

/// The reference agent, counting its executions (and running [`QUEUED_HOLD`] queued).
#[derive(Default)]
struct Counting {
    runs: AtomicUsize,
}

#[async_trait]
impl Agent for Counting {
    fn describe(&self) -> AgentDescription {
        ReferenceAgent.describe()
    }

    fn placement(&self, request: &AgentRequest) -> Placement {
        if request.text().starts_with("queued hold") {
            return Placement::Queued;
        }
        ReferenceAgent.placement(request)
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let mut request = request;
        if request.text().starts_with("queued hold") {
            request.message.parts = vec![a2a_protocol::Part::text("hold")];
        }
        ReferenceAgent.execute(request, emitter).await
    }
}

struct Fixture {
    service: A2aService,
    store: SqliteStore,
    agent: Arc<Counting>,
    ctx: CallContext,
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        Self::with_reuse(MessageIdReuse::Reject)
    }

    fn with_reuse(message_id_reuse: MessageIdReuse) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(dir.path()).expect("open the store");
        let agent = Arc::new(Counting::default());
        let shared = Arc::new(store.clone());
        let config = ServiceConfig {
            blocking_timeout: Duration::from_secs(10),
            max_stream_duration: Duration::from_secs(10),
            message_id_reuse,
            ..ServiceConfig::default()
        };
        let service = A2aService::new(
            config,
            agent.clone(),
            shared.clone(),
            shared.clone(),
            shared,
        );
        Self {
            service,
            store,
            agent,
            ctx: CallContext::anonymous(""),
            _dir: dir,
        }
    }

    /// Sends `text` with `returnImmediately` (queued: the fixture runs no worker) and takes
    /// its job off the work queue: the task as answered, and the job.
    async fn queued(&self, text: &str) -> (Task, WorkJob) {
        let task = match self
            .send_as(&self.ctx, message(&unique("m"), text), true)
            .await
        {
            Ok(SendMessageResponse::Task(task)) => task,
            other => panic!("expected a task: {other:?}"),
        };
        let received = self
            .store
            .receive(QueueName::Work, 1, Duration::from_secs(60))
            .await
            .expect("receive");
        let job: WorkJob = serde_json::from_str(&received[0].body).expect("a work job");
        assert_eq!(job.task_id, task.id);
        (task, job)
    }

    fn runs(&self) -> usize {
        self.agent.runs.load(Ordering::SeqCst)
    }

    async fn send_as(
        &self,
        ctx: &CallContext,
        message: Message,
        return_immediately: bool,
    ) -> Result<SendMessageResponse, A2AError> {
        let request = SendMessageRequest {
            message: Some(message),
            configuration: Some(SendMessageConfiguration {
                return_immediately,
                ..Default::default()
            }),
            ..Default::default()
        };
        self.service.send_message(ctx, request).await
    }

    async fn send(&self, message: Message) -> Result<SendMessageResponse, A2AError> {
        self.send_as(&self.ctx, message, false).await
    }

    async fn send_task(&self, message: Message) -> Task {
        match self.send(message).await.expect("send") {
            SendMessageResponse::Task(task) => task,
            other => panic!("expected a task: {other:?}"),
        }
    }

    async fn stream(&self, message: Message) -> Vec<StreamResponse> {
        use futures::StreamExt;
        let request = SendMessageRequest {
            message: Some(message),
            ..Default::default()
        };
        let events = self
            .service
            .send_streaming_message(&self.ctx, request)
            .await
            .expect("stream");
        events
            .map(|item| item.expect("stream item").response)
            .collect()
            .await
    }

    async fn task(&self, id: &str) -> Task {
        let request = GetTaskRequest {
            id: id.to_string(),
            ..Default::default()
        };
        self.service
            .get_task(&self.ctx, request)
            .await
            .expect("get task")
    }

    async fn task_count(&self, ctx: &CallContext) -> i32 {
        self.service
            .list_tasks(ctx, ListTasksRequest::default())
            .await
            .expect("list tasks")
            .total_size
    }

    /// Polls until the task satisfies `done` (a condition with a deadline, not a sleep).
    async fn wait_for(&self, id: &str, done: impl Fn(&Task) -> bool) -> Task {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let task = self.task(id).await;
            if done(&task) {
                return task;
            }
            assert!(Instant::now() < deadline, "task never got there: {task:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

fn message(id: &str, text: &str) -> Message {
    Message::user_text(id, text)
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", a2a_core::new_id())
}

#[tokio::test]
async fn a_blocking_repeat_returns_the_same_task_without_running_again() {
    let f = Fixture::new();
    let id = unique("m");
    let first = f.send_task(message(&id, "hello")).await;
    assert_eq!(first.status.state, TaskState::Completed);
    let again = f.send_task(message(&id, "hello")).await;
    assert_eq!(again.id, first.id);
    assert_eq!(again.status.state, TaskState::Completed);
    assert_eq!(again.artifacts, first.artifacts);
    assert_eq!(f.runs(), 1, "the agent ran once");
    assert_eq!(f.task_count(&f.ctx).await, 1);
}

#[tokio::test]
async fn with_new_message_reuse_every_send_is_a_new_task() {
    let f = Fixture::with_reuse(MessageIdReuse::NewMessage);
    let id = unique("m");
    let first = f.send_task(message(&id, "hello")).await;
    let again = f.send_task(message(&id, "hello")).await;
    let other = f.send_task(message(&id, "hello!")).await;
    assert_ne!(again.id, first.id);
    assert_ne!(other.id, first.id);
    assert_ne!(other.id, again.id);
    assert_eq!(f.runs(), 3, "the agent ran for every send");
    assert_eq!(f.task_count(&f.ctx).await, 3);
}

#[tokio::test]
async fn with_new_message_reuse_a_follow_up_may_reuse_a_messageid() {
    // The TCK's documented flags: a follow-up carrying the messageId of the message that
    // started the task (or of an earlier follow-up) is a new message, not a conflicting repeat.
    for reuse in [MessageIdReuse::NewMessage, MessageIdReuse::Reject] {
        let f = Fixture::with_reuse(reuse);
        let id = unique("m");
        let held = f.send_task(message(&id, "hold")).await;
        assert_eq!(held.status.state, TaskState::InputRequired);
        let follow_up = Message {
            task_id: held.id.clone(),
            ..message(&id, "more")
        };
        let answer = f.send(follow_up).await;
        match reuse {
            MessageIdReuse::NewMessage => {
                let Ok(SendMessageResponse::Task(done)) = answer else {
                    panic!("the follow-up is a new message: {answer:?}");
                };
                assert_eq!(done.id, held.id);
                assert_eq!(done.status.state, TaskState::Completed);
                let turns = done
                    .history
                    .iter()
                    .filter(|m| m.role == a2a_protocol::Role::User && m.message_id == id)
                    .count();
                assert_eq!(turns, 2, "both turns are in the history: {done:?}");
                assert_eq!(f.runs(), 2);
            }
            MessageIdReuse::Reject => {
                let err = answer.expect_err("the same messageId with another body");
                assert_eq!(err.json_rpc_code(), -32602, "{err}");
                assert_eq!(f.runs(), 1);
            }
        }
    }
}

#[tokio::test]
async fn a_non_blocking_repeat_returns_the_same_task() {
    let f = Fixture::new();
    let id = unique("m");
    let first = match f.send_as(&f.ctx, message(&id, "hold"), true).await {
        Ok(SendMessageResponse::Task(task)) => task,
        other => panic!("expected a task: {other:?}"),
    };
    f.wait_for(&first.id, |t| t.status.state == TaskState::InputRequired)
        .await;
    let again = match f.send_as(&f.ctx, message(&id, "hold"), true).await {
        Ok(SendMessageResponse::Task(task)) => task,
        other => panic!("expected a task: {other:?}"),
    };
    assert_eq!(again.id, first.id);
    assert_eq!(again.status.state, TaskState::InputRequired);
    // A blocking repeat of a task that waits for the client returns at once, as the
    // original would have.
    let blocking = f.send_task(message(&id, "hold")).await;
    assert_eq!(blocking.id, first.id);
    assert_eq!(f.runs(), 1);
    assert_eq!(f.task_count(&f.ctx).await, 1);
}

#[tokio::test]
async fn a_streaming_repeat_resubscribes_to_the_same_task() {
    let f = Fixture::new();
    let id = unique("m");
    // A repeat while the task runs: the Task as it stands first, then its events to the end.
    let original = {
        let f = &f;
        let id = id.clone();
        async move { f.stream(message(&id, "slow 3 100")).await }
    };
    let (first, second) = tokio::join!(original, async {
        // The repeat must find the task, so it waits until the original created it.
        let deadline = Instant::now() + Duration::from_secs(10);
        while f.task_count(&f.ctx).await == 0 {
            assert!(
                Instant::now() < deadline,
                "the original never created its task"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        f.stream(message(&id, "slow 3 100")).await
    });
    let StreamResponse::Task(created) = &first[0] else {
        panic!("the original stream starts with its Task: {first:?}");
    };
    let StreamResponse::Task(snapshot) = &second[0] else {
        panic!("the repeat starts with the Task: {second:?}");
    };
    assert_eq!(snapshot.id, created.id);
    let last_state = |events: &[StreamResponse]| match events.last() {
        Some(StreamResponse::StatusUpdate(u)) => u.status.state,
        Some(StreamResponse::Task(t)) => t.status.state,
        other => panic!("unexpected last event {other:?}"),
    };
    assert_eq!(last_state(&first), TaskState::Completed);
    assert_eq!(last_state(&second), TaskState::Completed);

    // A repeat after the end: just the Task as it stands.
    let after = f.stream(message(&id, "slow 3 100")).await;
    assert_eq!(after.len(), 1, "{after:?}");
    let StreamResponse::Task(done) = &after[0] else {
        panic!("expected the Task: {after:?}");
    };
    assert_eq!(done.id, created.id);
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(f.runs(), 1);
    assert_eq!(f.task_count(&f.ctx).await, 1);
}

#[tokio::test]
async fn a_repeat_with_a_different_body_is_refused_and_changes_nothing() {
    let f = Fixture::new();
    let id = unique("m");
    let first = f.send_task(message(&id, "hello")).await;
    let different = [
        message(&id, "hello, again"),
        Message {
            context_id: "another-context".into(),
            ..message(&id, "hello")
        },
        Message {
            reference_task_ids: vec!["t-1".into()],
            ..message(&id, "hello")
        },
        Message {
            metadata: Some(serde_json::from_value(serde_json::json!({"k": 1})).unwrap()),
            ..message(&id, "hello")
        },
    ];
    for repeat in different {
        let err = f.send(repeat.clone()).await.expect_err("a different body");
        assert_eq!(err.json_rpc_code(), -32602, "{err:?}");
        assert!(
            err.message().contains(&format!(
                "messageId {id} was already used for a different message"
            )),
            "{err:?}"
        );
    }
    assert_eq!(f.task(&first.id).await, first, "the task is unchanged");
    assert_eq!(f.task_count(&f.ctx).await, 1);
    assert_eq!(f.runs(), 1);
}

#[tokio::test]
async fn a_direct_reply_is_returned_again_for_a_repeat() {
    let f = Fixture::new();
    let id = unique("tck-message-response");
    let SendMessageResponse::Message(reply) = f.send(message(&id, "hi")).await.expect("send")
    else {
        panic!("expected a direct reply");
    };
    let SendMessageResponse::Message(again) = f.send(message(&id, "hi")).await.expect("send")
    else {
        panic!("expected the same direct reply");
    };
    assert_eq!(again, reply);
    let streamed = f.stream(message(&id, "hi")).await;
    assert_eq!(streamed, vec![StreamResponse::Message(reply)]);
    let err = f.send(message(&id, "something else")).await.unwrap_err();
    assert_eq!(err.json_rpc_code(), -32602, "{err:?}");
    assert_eq!(f.runs(), 1);
    assert_eq!(f.task_count(&f.ctx).await, 0);
}

#[tokio::test]
async fn owners_use_the_same_message_id_independently() {
    let f = Fixture::new();
    let bob = CallContext::new(
        &Principal {
            id: "key:bob".into(),
            ..Principal::anonymous()
        },
        "",
    );
    let id = unique("m");
    let alice_task = f.send_task(message(&id, "hello")).await;
    let bob_task = match f.send_as(&bob, message(&id, "hello bob"), false).await {
        Ok(SendMessageResponse::Task(task)) => task,
        other => panic!("expected bob's own task: {other:?}"),
    };
    assert_ne!(bob_task.id, alice_task.id);
    assert_eq!(f.runs(), 2);
    assert_eq!(f.task_count(&f.ctx).await, 1);
    assert_eq!(f.task_count(&bob).await, 1);
}

#[tokio::test]
async fn a_repeated_follow_up_is_not_a_second_turn() {
    let f = Fixture::new();
    let held = f.send_task(message(&unique("m"), "hold")).await;
    assert_eq!(held.status.state, TaskState::InputRequired);
    let follow_up = Message {
        task_id: held.id.clone(),
        ..message(&unique("f"), "go on")
    };
    let done = f.send_task(follow_up.clone()).await;
    assert_eq!(done.status.state, TaskState::Completed);
    // The task is terminal now, yet the repeat is answered with it, not refused.
    let again = f.send_task(follow_up.clone()).await;
    assert_eq!(again, done);
    assert_eq!(f.runs(), 2, "the hold and one turn");
    let err = f
        .send(Message {
            task_id: held.id.clone(),
            ..message(&follow_up.message_id, "go on, differently")
        })
        .await
        .unwrap_err();
    assert_eq!(err.json_rpc_code(), -32602, "{err:?}");
    assert_eq!(f.task(&held.id).await, done);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_copies_make_one_task() {
    let f = Fixture::new();
    let id = unique("m");
    let sends = (0..10).map(|_| f.send(message(&id, "hello")));
    let answers = futures::future::join_all(sends).await;
    let ids: Vec<String> = answers
        .into_iter()
        .map(|a| match a {
            Ok(SendMessageResponse::Task(task)) => task.id,
            other => panic!("expected the task: {other:?}"),
        })
        .collect();
    assert!(ids.iter().all(|t| t == &ids[0]), "{ids:?}");
    assert_eq!(f.task_count(&f.ctx).await, 1);
    let task = f.task(&ids[0]).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(
        task.artifacts.len(),
        1,
        "only the winner's report is kept: {task:?}"
    );
    assert_eq!(task.history.len(), 1, "{task:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_copies_of_a_follow_up_make_one_turn() {
    let f = Fixture::new();
    let held = f.send_task(message(&unique("m"), "hold")).await;
    let follow_up = Message {
        task_id: held.id.clone(),
        ..message(&unique("f"), "go on")
    };
    let sends = (0..10).map(|_| f.send(follow_up.clone()));
    for answer in futures::future::join_all(sends).await {
        match answer {
            Ok(SendMessageResponse::Task(task)) => assert_eq!(task.id, held.id),
            other => panic!("expected the task: {other:?}"),
        }
    }
    let task = f.wait_for(&held.id, |t| t.status.state.is_terminal()).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    let copies = task
        .history
        .iter()
        .filter(|m| m.message_id == follow_up.message_id)
        .count();
    assert_eq!(copies, 1, "one turn: {:?}", task.history);
    assert_eq!(f.runs(), 2, "the hold and one turn");
}

#[tokio::test]
async fn a_queued_repeat_enqueues_no_second_job() {
    let f = Fixture::new();
    let id = unique("m");
    let mut tasks = Vec::new();
    for _ in 0..2 {
        match f.send_as(&f.ctx, message(&id, "job 1 10"), true).await {
            Ok(SendMessageResponse::Task(task)) => tasks.push(task.id),
            other => panic!("expected a task: {other:?}"),
        }
    }
    assert_eq!(tasks[0], tasks[1]);
    let jobs = f
        .store
        .receive(QueueName::Work, 10, Duration::from_secs(60))
        .await
        .expect("receive");
    assert_eq!(jobs.len(), 1, "one job for one message: {jobs:?}");
}

/// At-least-once: a queued job whose first run is cut off after some output is durable (as a
/// crash would) is handed out again; the second run replaces the partial output, so the task
/// ends with one artifact holding the whole output, not a partial one beside a full one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_executed_job_replaces_its_partial_output() {
    let f = Fixture::new();
    let (task, job) = f.queued("slow 3 200").await;

    // The first run, in a runtime of its own (a process), killed once its first chunk is in
    // the log: shutting the runtime down drops the agent wherever it is, as a crash would.
    let (crash, crashed) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::spawn({
        let service = f.service.clone();
        let job = job.clone();
        move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.spawn(async move { service.run_work_job(&job, 1).await });
            crashed.recv().expect("the crash signal");
            runtime.shutdown_background();
        }
    });
    let partial = f.wait_for(&task.id, |t| !t.artifacts.is_empty()).await;
    crash.send(()).expect("crash the first run");
    worker.join().expect("the first run's thread");
    assert_eq!(partial.artifacts[0].parts.len(), 1, "{partial:?}");
    let cut_off = f.task(&task.id).await;
    assert_eq!(cut_off.artifacts.len(), 1, "{cut_off:?}");
    assert!(
        cut_off.artifacts[0].parts.len() < 3,
        "the first run was cut off: {cut_off:?}"
    );
    assert_eq!(partial.status.state, TaskState::Working);

    // The same job, handed out again, runs to its end.
    let outcome = f.service.run_work_job(&job, 2).await;
    assert_eq!(outcome, a2a_core::JobOutcome::Done);
    let done = f.task(&task.id).await;
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert_eq!(
        done.artifacts.len(),
        1,
        "one artifact per role: {:?}",
        done.artifacts
    );
    let texts: Vec<&str> = done.artifacts[0]
        .parts
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect();
    assert_eq!(texts, ["chunk-1 ", "chunk-2 ", "chunk-3 "]);
}

/// At-least-once, the other way: a work job handed out again after its run ended with the task
/// waiting for input (SQS delivers a message twice now and then; a delete can fail after it
/// took effect) finds that its run wrote, and runs nothing: the agent saw its message once.
#[tokio::test]
async fn a_job_delivered_again_after_its_run_runs_nothing() {
    let f = Fixture::new();
    let (task, job) = f.queued(QUEUED_HOLD).await;
    let done = a2a_core::JobOutcome::Done;
    assert_eq!(f.service.run_work_job(&job, 1).await, done);
    let waiting = f.task(&task.id).await;
    assert_eq!(
        waiting.status.state,
        TaskState::InputRequired,
        "{waiting:?}"
    );
    assert_eq!(f.runs(), 1);

    assert_eq!(f.service.run_work_job(&job, 2).await, done);
    assert_eq!(f.runs(), 1, "the agent ran twice on one message");
    assert_eq!(f.task(&task.id).await, waiting, "the task changed");

    // The lease was given back: the client's answer runs at once.
    let answer = Message {
        task_id: task.id.clone(),
        ..message(&unique("f"), "here it is")
    };
    f.send(answer).await.expect("the answer");
    let answered = f.wait_for(&task.id, |t| t.status.state.is_terminal()).await;
    assert_eq!(answered.status.state, TaskState::Completed, "{answered:?}");
    assert_eq!(f.runs(), 2);
}
