//! Durable executions on a store: the execution records themselves ([`execution_records`]), and
//! the core's parking, resuming, signalling, timing out and handing over through the real
//! service on that store, with a work queue that keeps what it is given so each check can play
//! the worker.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::{
    A2aService, Agent, AgentCall, AgentDescription, AgentError, AgentRequest, CallContext, CallKey,
    CallOutcome, DurableExecution, Emitter, JobOutcome, Observer, Owner, Placement, PushJob,
    PushQueue, RemoteAgents, RemoteError, RemoteSent, RemoteTaskRef, ServiceConfig, StoreError,
    TaskEvent, TaskStore, Wait, WaitFor, WorkJob, WorkQueue,
};
use a2a_protocol::{
    Artifact, Message, Part, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
    Task, TaskPushNotificationConfig, TaskState, Timestamp,
};
use futures::future::BoxFuture;

use crate::{fresh_owner, hours_from_now, unique};

/// An execution record of the owner's task at `version`, waiting on a timer due at `due` (no
/// wait without), expiring in an hour.
pub fn record(
    owner: &Owner,
    task_id: &str,
    version: u64,
    due: Option<Timestamp>,
) -> DurableExecution {
    DurableExecution {
        owner: owner.clone(),
        task_id: task_id.to_owned(),
        trigger_seq: 1,
        steps: Vec::new(),
        emitted: 2,
        wait: due.map(|due| Wait {
            step: 0,
            name: "nap".into(),
            what: WaitFor::Timer,
            due_at: due,
            deadline: due,
            outcome: None,
            woken_by: None,
        }),
        remotes: Default::default(),
        traceparent: None,
        version,
        expires_at: hours_from_now(1),
    }
}

/// Execution records: written conditionally on the version read (none: absent or expired),
/// scoped to their owner, listed while their wait is due, removed with their task.
pub async fn execution_records<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let task = unique("exec");
    let first = record(&owner, &task, 1, None);
    store
        .save_execution(&first, None)
        .await
        .expect("a new record");
    let mut other = first.clone();
    other.steps.push(a2a_core::StepRecord {
        name: "another writer's".into(),
        value: serde_json::json!(1),
    });
    assert_eq!(
        store.save_execution(&other, None).await,
        Err(StoreError::Conflict),
        "a record exists: another create conflicts"
    );
    assert_eq!(
        store.save_execution(&first, None).await,
        Ok(()),
        "a repeat of the save that landed (its answer lost) is that save, not a conflict"
    );
    let loaded = store.load_execution(&owner, &task).await.unwrap();
    assert_eq!(loaded.as_ref(), Some(&first));
    assert_eq!(
        store.load_execution(&fresh_owner(), &task).await.unwrap(),
        None,
        "another owner's record is not there"
    );

    // Due one second ago: listed; the stale write loses and changes nothing.
    let past = Timestamp::from_millis(Timestamp::now().millis() - 1_000);
    let second = record(&owner, &task, 2, Some(past));
    store
        .save_execution(&second, Some(1))
        .await
        .expect("update");
    let stale = record(&owner, &task, 3, None);
    assert_eq!(
        store.save_execution(&stale, Some(1)).await,
        Err(StoreError::Conflict)
    );
    assert_eq!(
        store
            .load_execution(&owner, &task)
            .await
            .unwrap()
            .unwrap()
            .version,
        2
    );
    let due = store
        .list_due_executions(Timestamp::now(), 1000)
        .await
        .unwrap();
    assert!(
        due.iter().any(|d| d.task_id == task && d.owner == owner),
        "a due wait is listed: {due:?}"
    );

    // Due in an hour: not yet. Its wait over (no wait): not listed either.
    let later = record(&owner, &task, 3, Some(hours_from_now(1)));
    store.save_execution(&later, Some(2)).await.unwrap();
    let listed = |due: Vec<a2a_core::DueExecution>| due.iter().any(|d| d.task_id == task);
    assert!(!listed(
        store
            .list_due_executions(Timestamp::now(), 1000)
            .await
            .unwrap()
    ));
    let done = record(&owner, &task, 4, None);
    store.save_execution(&done, Some(3)).await.unwrap();
    assert!(!listed(
        store
            .list_due_executions(hours_from_now(2), 1000)
            .await
            .unwrap()
    ));

    // Another owner cannot delete it; its owner can.
    store.delete_execution(&fresh_owner(), &task).await.unwrap();
    assert!(store.load_execution(&owner, &task).await.unwrap().is_some());
    store.delete_execution(&owner, &task).await.unwrap();
    assert_eq!(store.load_execution(&owner, &task).await.unwrap(), None);
    store
        .delete_execution(&owner, &task)
        .await
        .expect("deleting what is gone is fine");

    // An expired record is gone: it reads as none and a create takes its place.
    let mut old = record(&owner, &task, 1, Some(past));
    old.expires_at = Timestamp::from_millis(Timestamp::now().millis() - 60_000);
    store.save_execution(&old, None).await.unwrap();
    assert_eq!(store.load_execution(&owner, &task).await.unwrap(), None);
    assert!(!listed(
        store
            .list_due_executions(Timestamp::now(), 1000)
            .await
            .unwrap()
    ));
    store
        .save_execution(&record(&owner, &task, 1, None), None)
        .await
        .expect("an expired record is no obstacle");
}

/// A work queue that keeps what it is given, with each job's delay, for the check to run.
#[derive(Default)]
struct Kept(Mutex<Vec<(WorkJob, Duration)>>);

#[async_trait::async_trait]
impl WorkQueue for Kept {
    async fn enqueue_work(&self, job: &WorkJob) -> Result<(), StoreError> {
        self.enqueue_work_after(job, Duration::ZERO).await
    }

    async fn enqueue_work_after(&self, job: &WorkJob, delay: Duration) -> Result<(), StoreError> {
        self.0.lock().unwrap().push((job.clone(), delay));
        Ok(())
    }
}

impl Kept {
    /// The resume jobs queued for `task` so far, taken off the queue.
    fn take(&self, task: &str) -> Vec<(WorkJob, Duration)> {
        let mut jobs = self.0.lock().unwrap();
        let (mine, rest) = jobs.drain(..).partition(|(j, _)| j.task_id == task);
        *jobs = rest;
        mine
    }
}

/// A push queue that takes every job and delivers none (the contract's services push nothing).
pub(crate) struct NoPush;

#[async_trait::async_trait]
impl PushQueue for NoPush {
    async fn enqueue_push(&self, _jobs: &[PushJob]) -> Result<(), StoreError> {
        Ok(())
    }
}

/// How long `linger` works between its two artifacts.
const LINGER: Duration = Duration::from_millis(1000);

/// The agent `delegate` calls: its task works, and answers GetTask completed with `answer`
/// as its one artifact (the remote is polled: it does not push). Counts the cancels it gets.
#[derive(Debug)]
struct Remote {
    answer: Part,
    cancels: AtomicUsize,
}

const REMOTE: &str = "https://remote-agent.example";

impl Remote {
    fn task(&self, state: TaskState) -> Task {
        Task {
            id: "their-task".into(),
            context_id: "their-context".into(),
            status: a2a_protocol::TaskStatus {
                state,
                ..Default::default()
            },
            artifacts: if state == TaskState::Completed {
                vec![Artifact {
                    artifact_id: "answer".into(),
                    parts: vec![self.answer.clone()],
                    ..Artifact::default()
                }]
            } else {
                Vec::new()
            },
            ..Task::default()
        }
    }
}

#[async_trait::async_trait]
impl RemoteAgents for Remote {
    async fn send(
        &self,
        _agent: &str,
        _key: &CallKey,
        _message: Message,
        _push: Option<TaskPushNotificationConfig>,
        _traceparent: Option<&str>,
    ) -> Result<RemoteSent, RemoteError> {
        Ok(RemoteSent {
            answer: SendMessageResponse::Task(self.task(TaskState::Working)),
            pushes: false,
        })
    }

    async fn get_task(
        &self,
        _remote: &RemoteTaskRef,
        _traceparent: Option<&str>,
    ) -> Result<Task, RemoteError> {
        Ok(self.task(TaskState::Completed))
    }

    async fn cancel_task(
        &self,
        _remote: &RemoteTaskRef,
        _traceparent: Option<&str>,
    ) -> Result<(), RemoteError> {
        self.cancels.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    async fn verify_push(
        &self,
        _agent: &str,
        _audiences: &[String],
        _signature: &str,
        _body: &[u8],
    ) -> Result<(), RemoteError> {
        Err(RemoteError::Refused("this remote does not push".into()))
    }
}

/// Counts what the service reports of broken executions.
#[derive(Debug, Default)]
struct Broken(AtomicUsize);

impl Observer for Broken {
    fn broken_execution(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// `n` bytes that do not compress (xorshift), as a file would be.
pub(crate) fn noise(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect()
}

/// An agent with durable steps, chosen by the message text:
/// - `steps`: WORKING, a step, a 30 ms durable sleep, another step, COMPLETED with both;
/// - `signal`: WORKING, then the payload of the signal `go` (timeout from the text's second
///   word, in ms), COMPLETED with it;
/// - `typed`: WORKING, then the signal `go` read as a number, COMPLETED with one more;
/// - `nested`: WORKING, then a durable sleep inside a step (which is refused);
/// - `linger`: WORKING, an artifact, 1 s of plain work, a second artifact, COMPLETED.
#[derive(Default)]
struct Durable {
    starts: AtomicUsize,
    first_step: AtomicUsize,
}

#[async_trait::async_trait]
impl Agent for Durable {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "durable".into(),
            ..AgentDescription::default()
        }
    }

    fn placement(&self, _request: &AgentRequest) -> Placement {
        Placement::Inline
    }

    async fn execute(&self, request: AgentRequest, e: Emitter) -> Result<(), AgentError> {
        self.starts.fetch_add(1, Ordering::SeqCst);
        let mut words = request.text().split_whitespace();
        match words.next() {
            Some("steps") => {
                e.working(Some("started")).await?;
                let a: usize = e
                    .step("a", || async {
                        Ok(self.first_step.fetch_add(1, Ordering::SeqCst) + 1)
                    })
                    .await?;
                e.sleep("nap", Duration::from_millis(30)).await?;
                let b: String = e.step("b", || async { Ok("bee".to_owned()) }).await?;
                e.complete(Some(&format!("{a} {b}"))).await
            }
            Some("signal") => {
                let timeout = words.next().and_then(|t| t.parse().ok()).unwrap_or(60_000);
                e.working(None).await?;
                let got: serde_json::Value = e
                    .wait_for_signal("go", Duration::from_millis(timeout))
                    .await?;
                e.complete(Some(&got.to_string())).await
            }
            Some("typed") => {
                e.working(None).await?;
                let n: u64 = e.wait_for_signal("go", Duration::from_secs(60)).await?;
                e.complete(Some(&(n + 1).to_string())).await
            }
            Some("nested") => {
                e.working(None).await?;
                let one: u8 = e
                    .step("outer", || async {
                        e.sleep("inner", Duration::from_millis(1)).await?;
                        Ok(1)
                    })
                    .await?;
                e.complete(Some(&one.to_string())).await
            }
            Some("linger") => {
                e.working(Some("lingering")).await?;
                let part = |text: &str| Artifact {
                    artifact_id: format!("{}-out", e.task_id()),
                    parts: vec![Part::text(text)],
                    ..Artifact::default()
                };
                e.artifact(part("one "), false, false).await?;
                tokio::time::sleep(LINGER).await;
                e.artifact(part("two"), true, true).await?;
                e.complete(Some("lingered")).await
            }
            Some("delegate") => {
                e.working(None).await?;
                let call = AgentCall::text(REMOTE, "do the work", Duration::from_secs(3600));
                let theirs = e.call_agent("delegate", call).await?;
                let CallOutcome::Completed { artifacts, .. } = theirs.outcome else {
                    return e.fail(&format!("{:?}", theirs.outcome)).await;
                };
                let got: usize = artifacts
                    .iter()
                    .flat_map(|a| &a.parts)
                    .map(|p| {
                        p.raw.as_ref().map_or(0, |r| r.0.len())
                            + p.text.as_ref().map_or(0, String::len)
                    })
                    .sum();
                e.complete(Some(&format!("{got} bytes"))).await
            }
            _ => e.complete(Some("plain")).await,
        }
    }
}

fn service(
    store: Arc<dyn TaskStore>,
    agent: Arc<Durable>,
    queue: Arc<Kept>,
    config: ServiceConfig,
) -> A2aService {
    A2aService::new(config, agent, store, queue, Arc::new(NoPush))
}

/// A service running a [`Durable`] agent on `store` with the default config, its queue, and a
/// caller in a fresh tenant.
fn durable_service(store: &Arc<dyn TaskStore>) -> (A2aService, Arc<Kept>, CallContext) {
    let queue = Arc::new(Kept::default());
    let agent = Arc::new(Durable::default());
    let service = service(
        store.clone(),
        agent,
        queue.clone(),
        ServiceConfig::default(),
    );
    (service, queue, CallContext::anonymous(&unique("tenant")))
}

async fn send(service: &A2aService, ctx: &CallContext, text: &str) -> Task {
    let request = SendMessageRequest {
        message: Some(Message::user_text(unique("m"), text)),
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        ..SendMessageRequest::default()
    };
    match service.send_message(ctx, request).await.expect("sent") {
        SendMessageResponse::Task(task) => task,
        other => panic!("a task, not {other:?}"),
    }
}

/// Waits (polling the store, a few ms at a time) until the task stops moving: its inline run
/// ended, parked or handed over.
async fn settled(
    service: &A2aService,
    ctx: &CallContext,
    task: &str,
    queue: &Kept,
) -> Vec<WorkJob> {
    for _ in 0..400 {
        let jobs = queue.take(task);
        if !jobs.is_empty() {
            return jobs.into_iter().map(|(j, _)| j).collect();
        }
        let now = service
            .get_task(
                ctx,
                a2a_protocol::GetTaskRequest {
                    id: task.to_owned(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        if now.status.state.is_terminal() {
            return Vec::new();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {task} neither stopped nor queued a resumption");
}

async fn events<S: TaskStore + ?Sized>(store: &S, owner: &Owner, task: &str) -> Vec<TaskEvent> {
    store
        .read_events(owner, task, 0, 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.event)
        .collect()
}

fn count(events: &[TaskEvent], what: impl Fn(&TaskEvent) -> bool) -> usize {
    events.iter().filter(|e| what(e)).count()
}

fn working(e: &TaskEvent) -> bool {
    e.state() == Some(TaskState::Working)
}

/// A durable sleep parks the execution (the task stays WORKING, a resume job is queued for when
/// it is due, nothing runs); the resumed run gets its first step's result back without running
/// it again, does not write again what it wrote, and completes the task; its record goes with
/// it.
pub async fn durable_steps_park_and_resume(store: Arc<dyn TaskStore>) {
    let agent = Arc::new(Durable::default());
    let queue = Arc::new(Kept::default());
    let service = service(
        store.clone(),
        agent.clone(),
        queue.clone(),
        ServiceConfig::default(),
    );
    let ctx = CallContext::anonymous(&unique("tenant"));
    let task = send(&service, &ctx, "steps").await;
    let jobs = settled(&service, &ctx, &task.id, &queue).await;
    assert_eq!(jobs.len(), 1, "one resumption queued");
    assert!(jobs[0].resume);
    let parked = store
        .load_execution(&ctx.owner, &task.id)
        .await
        .unwrap()
        .expect("the parked execution's record");
    assert!(matches!(
        parked.wait.as_ref().map(|w| &w.what),
        Some(WaitFor::Timer)
    ));
    assert_eq!(parked.steps.len(), 1);

    tokio::time::sleep(Duration::from_millis(40)).await;
    assert_eq!(service.run_work_job(&jobs[0], 1).await, JobOutcome::Done);
    let done = store
        .load_task(&ctx.owner, &task.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.task.status.state, TaskState::Completed);
    let text = done
        .task
        .status
        .message
        .as_ref()
        .and_then(|m| m.first_text());
    assert_eq!(text, Some("1 bee"), "the first step's result came back");
    assert_eq!(
        agent.first_step.load(Ordering::SeqCst),
        1,
        "step a ran once"
    );
    assert_eq!(agent.starts.load(Ordering::SeqCst), 2, "run, then resumed");
    let log = events(&*store, &ctx.owner, &task.id).await;
    assert_eq!(count(&log, working), 1, "WORKING written once: {log:?}");
    assert_eq!(
        store.load_execution(&ctx.owner, &task.id).await.unwrap(),
        None,
        "the record goes with the task's end"
    );
}

/// A wait for a signal resumes with the signal's payload; a signal nobody waits for changes
/// nothing; a wait whose deadline passes is ended by the sweep of due executions and fails its
/// task saying why; a cancel removes the record of a waiting execution.
pub async fn signals_resume_and_deadlines_end_waits(store: Arc<dyn TaskStore>) {
    let (service, queue, ctx) = durable_service(&store);

    let task = send(&service, &ctx, "signal").await;
    let _ = settled(&service, &ctx, &task.id, &queue).await;
    assert!(!service
        .signal(&ctx.owner, &task.id, "stop", serde_json::json!(1))
        .await
        .unwrap());
    assert!(!service
        .signal(&fresh_owner(), &task.id, "go", serde_json::json!(1))
        .await
        .unwrap());
    assert!(service
        .signal(&ctx.owner, &task.id, "go", serde_json::json!({"ok": true}))
        .await
        .unwrap());
    let jobs = queue.take(&task.id);
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].1, Duration::ZERO, "a signal resumes at once");
    assert_eq!(service.run_work_job(&jobs[0].0, 1).await, JobOutcome::Done);
    let done = store
        .load_task(&ctx.owner, &task.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.task.status.state, TaskState::Completed);
    assert_eq!(
        done.task
            .status
            .message
            .as_ref()
            .and_then(|m| m.first_text()),
        Some(r#"{"ok":true}"#)
    );

    let late = send(&service, &ctx, "signal 20").await;
    let _ = settled(&service, &ctx, &late.id, &queue).await;
    tokio::time::sleep(Duration::from_millis(40)).await;
    let resumed = service.sweep_due_executions(1000).await.unwrap();
    assert!(resumed >= 1, "the sweep ended the wait");
    let jobs = queue.take(&late.id);
    assert!(!jobs.is_empty());
    assert_eq!(service.run_work_job(&jobs[0].0, 1).await, JobOutcome::Done);
    let failed = store
        .load_task(&ctx.owner, &late.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(failed.task.status.state, TaskState::Failed);
    let reason = failed
        .task
        .status
        .message
        .as_ref()
        .and_then(|m| m.first_text());
    assert!(
        reason.is_some_and(|r| r.contains("No signal \"go\"")),
        "{reason:?}"
    );

    let canceled = send(&service, &ctx, "signal").await;
    let _ = settled(&service, &ctx, &canceled.id, &queue).await;
    service
        .cancel_task(
            &ctx,
            a2a_protocol::CancelTaskRequest {
                id: canceled.id.clone(),
                ..Default::default()
            },
        )
        .await
        .expect("canceled");
    assert_eq!(
        store
            .load_execution(&ctx.owner, &canceled.id)
            .await
            .unwrap(),
        None
    );
    assert!(!service
        .signal(&ctx.owner, &canceled.id, "go", serde_json::json!(1))
        .await
        .unwrap());
}

/// The author API's mistakes end the task FAILED saying what went wrong: a signal whose payload
/// is not the type the agent waits for, and a durable call inside a step (refused: a replay
/// returns the step's result without running it, so the call would not be made again).
pub async fn typed_signals_and_calls_inside_steps_fail_clearly(store: Arc<dyn TaskStore>) {
    let (service, queue, ctx) = durable_service(&store);
    let ended = |id: String| {
        let store = store.clone();
        let owner = ctx.owner.clone();
        async move {
            let head = store.load_task(&owner, &id).await.unwrap().unwrap();
            let text = head
                .task
                .status
                .message
                .as_ref()
                .and_then(|m| m.first_text());
            (head.task.status.state, text.unwrap_or_default().to_owned())
        }
    };

    for (payload, state, said) in [
        (serde_json::json!(41), TaskState::Completed, "42"),
        (
            serde_json::json!("forty-one"),
            TaskState::Failed,
            "The payload of signal \"go\" is not what the agent takes (u64)",
        ),
    ] {
        let task = send(&service, &ctx, "typed").await;
        let _ = settled(&service, &ctx, &task.id, &queue).await;
        assert!(service
            .signal(&ctx.owner, &task.id, "go", payload)
            .await
            .unwrap());
        let jobs = queue.take(&task.id);
        assert_eq!(service.run_work_job(&jobs[0].0, 1).await, JobOutcome::Done);
        let (got, text) = ended(task.id).await;
        assert_eq!(got, state, "{text}");
        assert!(text.contains(said), "{text}");
    }

    let nested = send(&service, &ctx, "nested").await;
    let jobs = settled(&service, &ctx, &nested.id, &queue).await;
    assert!(jobs.is_empty(), "the call inside the step parked: {jobs:?}");
    let (got, text) = ended(nested.id).await;
    assert_eq!(got, TaskState::Failed, "{text}");
    assert!(
        text.contains("sleep(\"inner\") was called inside step \"outer\""),
        "{text}"
    );
}

/// Where nothing may run after a response (Lambda), an inline execution still running at the
/// blocking deadline is stopped and handed over: the answer says WORKING, a resume job is
/// queued, and the worker's replay finishes the task without writing again what the first run
/// wrote.
pub async fn a_handed_over_execution_finishes_on_the_worker(store: Arc<dyn TaskStore>) {
    let agent = Arc::new(Durable::default());
    let queue = Arc::new(Kept::default());
    let config = ServiceConfig {
        background_inline: false,
        // Long enough for the task's first writes on a loaded emulator, well short of LINGER.
        blocking_timeout: Duration::from_millis(400),
        ..ServiceConfig::default()
    };
    let service = service(store.clone(), agent.clone(), queue.clone(), config);
    let ctx = CallContext::anonymous(&unique("tenant"));
    let request = SendMessageRequest {
        message: Some(Message::user_text(unique("m"), "linger")),
        ..SendMessageRequest::default()
    };
    let SendMessageResponse::Task(answer) = service.send_message(&ctx, request).await.unwrap()
    else {
        panic!("a task");
    };
    assert_eq!(answer.status.state, TaskState::Working);
    let jobs = queue.take(&answer.id);
    assert_eq!(jobs.len(), 1, "handed over before the answer: {jobs:?}");
    assert!(jobs[0].0.resume);
    // Nothing of the request runs any more: the first run never gets to its second artifact
    // (it would have by now).
    tokio::time::sleep(LINGER + Duration::from_millis(200)).await;
    let midway = events(&*store, &ctx.owner, &answer.id).await;
    assert_eq!(
        count(&midway, |e| matches!(e, TaskEvent::Artifact { .. })),
        1,
        "{midway:?}"
    );

    assert_eq!(service.run_work_job(&jobs[0].0, 1).await, JobOutcome::Done);
    let log = events(&*store, &ctx.owner, &answer.id).await;
    assert_eq!(count(&log, working), 1, "{log:?}");
    assert_eq!(
        count(&log, |e| matches!(e, TaskEvent::Artifact { .. })),
        2,
        "the first chunk is not written again: {log:?}"
    );
    let done = store
        .load_task(&ctx.owner, &answer.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.task.status.state, TaskState::Completed);
    let text = done.task.artifacts[0]
        .parts
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect::<String>();
    assert_eq!(text, "one two");
    assert_eq!(agent.starts.load(Ordering::SeqCst), 2);
}

/// The final state and status text of a task.
async fn outcome<S: TaskStore + ?Sized>(
    store: &S,
    owner: &Owner,
    task: &str,
) -> (TaskState, String) {
    let head = store
        .load_task(owner, task)
        .await
        .unwrap()
        .expect("the task");
    let text = head
        .task
        .status
        .message
        .as_ref()
        .and_then(|m| m.first_text())
        .unwrap_or_default()
        .to_owned();
    (head.task.status.state, text)
}

/// A remote agent's answer of 500 KB (DynamoDB items hold 400 KB), which the call's wait must
/// keep until the resumed run hands it to the agent: an answer that compresses is kept and
/// handed over whole; a file that does not compress is kept whole by a store that can, and
/// otherwise ends the call at once saying it is too large to keep. Either way the sweep that
/// polls the remote goes on, the task does not wait for the call's deadline, and the remote's
/// completed task is not canceled.
pub async fn a_large_remote_answer_is_kept_or_fails_the_call_clearly(store: Arc<dyn TaskStore>) {
    const SIZE: usize = 500_000;
    let report: String = (0..)
        .map(|i| format!("line {i}: the remote agent's findings, as text.\n"))
        .flat_map(|l| l.chars().collect::<Vec<_>>())
        .take(SIZE)
        .collect();
    let mut file = Part::raw(noise(SIZE));
    file.filename = "report.bin".into();
    for (answer, compresses) in [(Part::text(report), true), (file, false)] {
        let remote = Arc::new(Remote {
            answer,
            cancels: AtomicUsize::new(0),
        });
        let broken = Arc::new(Broken::default());
        let queue = Arc::new(Kept::default());
        let config = ServiceConfig {
            remote_agents: remote.clone(),
            remote_poll: Duration::from_millis(1),
            observer: broken.clone(),
            ..ServiceConfig::default()
        };
        let service = service(store.clone(), Arc::default(), queue.clone(), config);
        let ctx = CallContext::anonymous(&unique("tenant"));
        let task = send(&service, &ctx, "delegate").await;
        let _ = settled(&service, &ctx, &task.id, &queue).await;
        // The poll is due a millisecond after the wait began.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let resumed = service
            .sweep_due_executions(1000)
            .await
            .expect("the sweep goes on");
        assert!(resumed >= 1, "the poll saw the remote task completed");
        let jobs = queue.take(&task.id);
        let (job, _) = jobs.last().expect("a resume job");
        assert_eq!(service.run_work_job(job, 1).await, JobOutcome::Done);
        let (state, text) = outcome(&*store, &ctx.owner, &task.id).await;
        match state {
            TaskState::Completed => {
                assert_eq!(text, format!("{SIZE} bytes"), "the whole answer came back");
                assert_eq!(broken.0.load(Ordering::SeqCst), 0);
            }
            TaskState::Failed if !compresses => {
                assert!(
                    text.contains("answer is too large to keep") && text.contains(REMOTE),
                    "{text}"
                );
                assert!(text.len() < 500, "the reason does not carry the answer");
                assert_eq!(broken.0.load(Ordering::SeqCst), 1, "counted");
            }
            other => panic!("a 500 KB answer (compresses: {compresses}) ended {other:?}: {text}"),
        }
        assert_eq!(
            remote.cancels.load(Ordering::SeqCst),
            0,
            "the remote's completed task is not canceled"
        );
        assert_eq!(
            store.load_execution(&ctx.owner, &task.id).await.unwrap(),
            None,
            "the record goes with the task's end"
        );
    }
}

/// Damages a stored execution record so that it no longer reads (as a record of an older
/// layout would not), by the store's own means.
pub type Poison = Box<dyn Fn(Owner, String) -> BoxFuture<'static, ()> + Send + Sync>;

/// A parked execution whose record does not read (`poison` damages it) holds up no other: the
/// sweep of due waits goes on past it and ends the good ones' waits, ends its task FAILED
/// saying why, counts it, and takes it off the due list, so the next sweep does not meet it.
pub async fn a_broken_record_does_not_hold_up_the_sweep(store: Arc<dyn TaskStore>, poison: Poison) {
    let broken = Arc::new(Broken::default());
    let queue = Arc::new(Kept::default());
    let config = ServiceConfig {
        observer: broken.clone(),
        ..ServiceConfig::default()
    };
    let service = service(store.clone(), Arc::default(), queue.clone(), config);
    let ctx = CallContext::anonymous(&unique("tenant"));
    // The damaged one first: due soonest, it is first in the due list.
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let task = send(&service, &ctx, "signal 10").await;
        let _ = settled(&service, &ctx, &task.id, &queue).await;
        tasks.push(task.id);
    }
    let bad = tasks[0].clone();
    poison(ctx.owner.clone(), bad.clone()).await;
    assert!(matches!(
        store.load_execution(&ctx.owner, &bad).await,
        Err(StoreError::Unreadable(_))
    ));
    tokio::time::sleep(Duration::from_millis(30)).await;

    let resumed = service
        .sweep_due_executions(1000)
        .await
        .expect("the sweep goes on past a broken record");
    assert_eq!(resumed, 2, "the two good waits ended");
    for good in &tasks[1..] {
        let jobs = queue.take(good);
        let (job, _) = jobs.last().expect("a resume job");
        assert_eq!(service.run_work_job(job, 1).await, JobOutcome::Done);
        let (state, text) = outcome(&*store, &ctx.owner, good).await;
        assert_eq!(state, TaskState::Failed);
        assert!(text.contains("No signal \"go\""), "{text}");
    }
    let (state, text) = outcome(&*store, &ctx.owner, &bad).await;
    assert_eq!(state, TaskState::Failed, "{text}");
    assert!(text.contains("can no longer be read"), "{text}");
    assert_eq!(broken.0.load(Ordering::SeqCst), 1, "counted");
    let due = store
        .list_due_executions(Timestamp::now(), 1000)
        .await
        .unwrap();
    assert!(
        !due.iter().any(|d| d.task_id == bad),
        "off the due list: {due:?}"
    );
    assert_eq!(service.sweep_due_executions(1000).await, Ok(0));
}
