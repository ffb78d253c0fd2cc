//! The store contract suite: what every [`TaskStore`] adapter must do, as plain async
//! functions that panic on a violation (call them from the adapter's tests).
//!
//! Each check uses fresh task ids and a fresh owner, so all of them can share one store, even
//! one that already holds data. [`run_all`] runs every check that needs only a reference;
//! [`run_all_shared`] adds the ones that spawn tasks on a shared store.
//!
//! ```ignore
//! #[tokio::test]
//! async fn contract() {
//!     let store: Arc<dyn TaskStore> = Arc::new(MyStore::new());
//!     a2a_store_contract::run_all_shared(store).await;
//! }
//! ```

// A test library: it may unwrap, as tests do.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt as _;

pub mod durable;
pub mod relay;

use a2a_protocol::{
    Artifact, AuthenticationInfo, Message, Part, SendMessageRequest, SendMessageResponse,
    StreamResponse, Task, TaskArtifactUpdateEvent, TaskPushNotificationConfig, TaskState,
    TaskStatus, TaskStatusUpdateEvent, Timestamp,
};

use a2a_core::{
    A2aService, Agent, AgentDescription, AgentError, AgentRequest, CallContext, Emitter,
    OperationRequest, OperationResponse, Placement, PushJob, PushQueue, ServiceConfig, WorkJob,
    WorkQueue,
};
use a2a_core::{
    ExpiredLease, LoggedEvent, Owner, PushAttempt, PushAttemptResult, PushDeliveryState,
    SendRecord, StoreError, StoredReply, StoredTask, TaskEvent, TaskQuery, TaskStore,
};

/// A fresh id, unique across calls and processes.
fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4())
}

/// A fresh owner, so list queries see only the tasks of one check.
fn fresh_owner() -> Owner {
    Owner::new("contract", &unique("principal"))
}

fn hours_from_now(hours: i64) -> Timestamp {
    Timestamp::from_millis(Timestamp::now().millis() + hours * 3_600_000)
}

/// An expiry that has passed: the item must be treated as gone.
fn expired() -> Timestamp {
    Timestamp::from_millis(Timestamp::now().millis() - 60_000)
}

/// A new task and its first event, as the core creates them: for tests that need a task in the
/// store in a given state.
pub fn new_task(
    owner: &Owner,
    task_id: &str,
    context_id: &str,
    state: TaskState,
    status_ts: Timestamp,
    expires_at: Timestamp,
) -> (StoredTask, Vec<LoggedEvent>) {
    let task = Task {
        id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: Some(status_ts),
        },
        history: vec![Message::user_text(unique("msg"), "hello")],
        ..Default::default()
    };
    // The head as the log writes it: its generation (A2A 1.1) is its version.
    let head = StoredTask {
        owner: owner.clone(),
        task: Task {
            generation: 1,
            ..task.clone()
        },
        version: 1,
        expires_at,
    };
    let created = LoggedEvent {
        seq: 1,
        at: Timestamp::now(),
        event: TaskEvent::Created { task },
    };
    (head, vec![created])
}

/// A task created with the defaults most checks need.
async fn create<S: TaskStore + ?Sized>(store: &S, owner: &Owner) -> StoredTask {
    let (head, events) = new_task(
        owner,
        &unique("task"),
        &unique("ctx"),
        TaskState::Submitted,
        Timestamp::now(),
        hours_from_now(24),
    );
    store
        .create_task(&head, &events)
        .await
        .expect("create_task");
    head
}

fn status_event(task: &Task, state: TaskState, at: Timestamp) -> TaskEvent {
    TaskEvent::Status {
        update: TaskStatusUpdateEvent {
            generation: 0,
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            status: TaskStatus {
                state,
                message: Some(Message::agent_text(format!("now {state}"))),
                timestamp: Some(at),
            },
            metadata: None,
        },
    }
}

fn artifact_event(task: &Task, artifact_id: &str) -> TaskEvent {
    TaskEvent::Artifact {
        update: TaskArtifactUpdateEvent {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            artifact: Artifact {
                artifact_id: artifact_id.to_owned(),
                parts: vec![Part::text(artifact_id)],
                ..Default::default()
            },
            ..Default::default()
        },
    }
}

/// The new head and the logged events after applying `changes` to `head`, as a writer builds
/// them before a conditional append.
fn advance(head: &StoredTask, changes: Vec<TaskEvent>) -> (StoredTask, Vec<LoggedEvent>) {
    let mut next = head.clone();
    let mut logged = Vec::new();
    for event in changes {
        event
            .apply(&mut next.task)
            .expect("event applies to the head");
        next.version += 1;
        logged.push(LoggedEvent {
            seq: next.version,
            at: Timestamp::now(),
            event,
        });
    }
    next.task.generation = next.version as i64;
    (next, logged)
}

async fn append<S: TaskStore + ?Sized>(
    store: &S,
    head: &StoredTask,
    changes: Vec<TaskEvent>,
) -> StoredTask {
    let (next, events) = advance(head, changes);
    store
        .append_events(&next, head.version, &events)
        .await
        .expect("append_events");
    next
}

async fn all_events<S: TaskStore + ?Sized>(
    store: &S,
    owner: &Owner,
    task_id: &str,
) -> Vec<LoggedEvent> {
    store
        .read_events(owner, task_id, 0, 10_000)
        .await
        .expect("read_events")
}

fn query(page_size: usize) -> TaskQuery {
    TaskQuery {
        page_size,
        ..Default::default()
    }
}

fn ids(tasks: &[Task]) -> Vec<String> {
    tasks.iter().map(|t| t.id.clone()).collect()
}

/// Every page of a query, following the tokens.
async fn all_pages<S: TaskStore + ?Sized>(
    store: &S,
    owner: &Owner,
    q: &TaskQuery,
) -> Vec<Vec<String>> {
    let mut q = q.clone();
    let mut pages = Vec::new();
    loop {
        let page = store.list_tasks(owner, &q).await.expect("list_tasks");
        assert!(
            page.tasks.len() <= q.page_size,
            "page larger than page_size"
        );
        pages.push(ids(&page.tasks));
        if page.next_page_token.is_empty() {
            return pages;
        }
        assert!(
            !page.tasks.is_empty(),
            "a non-empty token after an empty page"
        );
        assert!(pages.len() < 1_000, "paging does not end");
        q.page_token = page.next_page_token;
    }
}

/// `count` tasks of a fresh owner with status timestamps one second apart, oldest first.
async fn create_series<S: TaskStore + ?Sized>(
    store: &S,
    owner: &Owner,
    count: i64,
) -> Vec<StoredTask> {
    let base = Timestamp::now().millis() - 3_600_000;
    let mut heads = Vec::new();
    for i in 0..count {
        let (head, events) = new_task(
            owner,
            &unique("task"),
            "ctx",
            TaskState::Submitted,
            Timestamp::from_millis(base + i * 1_000),
            hours_from_now(24),
        );
        store
            .create_task(&head, &events)
            .await
            .expect("create_task");
        heads.push(head);
    }
    heads
}

fn newest_first(heads: &[StoredTask]) -> Vec<String> {
    heads.iter().rev().map(|h| h.task.id.clone()).collect()
}

fn push_config(task_id: &str, id: &str) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        id: id.to_owned(),
        task_id: task_id.to_owned(),
        url: format!("https://example.com/hook/{id}"),
        token: "secret-token".into(),
        authentication: Some(AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: "creds".into(),
        }),
        ..Default::default()
    }
}

/// Push delivery records: attempts fold into the record as [`PushDeliveryState::record`] says,
/// per owner, task and config; the record outlives its config and expires.
pub async fn push_delivery_records<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let task_id = unique("task");
    let attempt = |seq, result, status: Option<u16>, error: Option<&str>, last| PushAttempt {
        seq,
        at: Timestamp::now(),
        result,
        http_status: status,
        error: error.map(str::to_string),
        final_attempt: last,
        number: 1,
    };
    assert_eq!(
        store
            .get_push_delivery(&owner, &task_id, "c1")
            .await
            .unwrap(),
        None,
        "no record before the first attempt"
    );
    let attempts = [
        attempt(
            1,
            PushAttemptResult::Failed,
            Some(503),
            Some("webhook h answered 503"),
            false,
        ),
        attempt(1, PushAttemptResult::Delivered, Some(200), None, false),
        attempt(
            2,
            PushAttemptResult::Failed,
            None,
            Some("unreachable"),
            true,
        ),
        attempt(3, PushAttemptResult::Gone, Some(410), Some("gone"), false),
    ];
    let mut expected = PushDeliveryState::default();
    for a in &attempts {
        store
            .record_push_attempt(&owner, &task_id, "c1", a, hours_from_now(1))
            .await
            .unwrap();
        expected.record(a);
        let got = store
            .get_push_delivery(&owner, &task_id, "c1")
            .await
            .unwrap()
            .expect("a record after an attempt");
        assert_eq!(got, expected);
    }
    assert_eq!(expected.attempts, 4);
    assert_eq!(expected.delivered, 1);
    assert_eq!(expected.dead_lettered, 1);
    assert_eq!(expected.disabled_reason.as_deref(), Some("gone"));
    // Scoped by owner and config.
    assert_eq!(
        store
            .get_push_delivery(&fresh_owner(), &task_id, "c1")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .get_push_delivery(&owner, &task_id, "c2")
            .await
            .unwrap(),
        None
    );
    // An expired record is gone, and a new attempt starts a fresh one.
    store
        .record_push_attempt(&owner, &task_id, "c3", &attempts[0], expired())
        .await
        .unwrap();
    assert_eq!(
        store
            .get_push_delivery(&owner, &task_id, "c3")
            .await
            .unwrap(),
        None
    );
    store
        .record_push_attempt(&owner, &task_id, "c3", &attempts[1], hours_from_now(1))
        .await
        .unwrap();
    let fresh = store
        .get_push_delivery(&owner, &task_id, "c3")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((fresh.attempts, fresh.delivered), (1, 1));
}

/// A queued job's attempts are counted on its task's lease: each start counts one, whoever
/// takes the lease over after an attempt died; a renewal keeps the count; another job (or a
/// released lease) starts again at 1; while someone else holds the lease nothing is counted.
pub async fn job_attempts_are_counted_on_the_lease<S: TaskStore + ?Sized>(store: &S) {
    let task_id = unique("task");
    let later = hours_from_now(1);
    let begin = |seq, holder, until| store.begin_job_attempt(&task_id, seq, holder, until);
    // An attempt that died: its lease is over, its count stays.
    assert_eq!(begin(3, "w1", expired()).await.unwrap(), Some(1));
    assert_eq!(begin(3, "w2", later).await.unwrap(), Some(2));
    // w2 runs it now: nobody else starts an attempt, and none is counted.
    assert_eq!(begin(3, "w3", later).await.unwrap(), None);
    assert!(!store.acquire_lease(&task_id, "w3", later).await.unwrap());
    // w2 renews its lease while it runs: the count survives the renewal.
    assert!(store
        .acquire_lease(&task_id, "w2", hours_from_now(2))
        .await
        .unwrap());
    assert_eq!(begin(3, "w2", later).await.unwrap(), Some(3));
    // The next message of the task is another job: counted from 1.
    assert_eq!(begin(4, "w2", later).await.unwrap(), Some(1));
    // A released lease forgets the settled job's count.
    store.release_lease(&task_id, "w2").await.unwrap();
    assert_eq!(begin(4, "w1", later).await.unwrap(), Some(1));
    store.release_lease(&task_id, "w1").await.unwrap();
    // An inline execution's lease blocks a queued attempt like any other.
    assert!(store
        .acquire_inline_lease(&fresh_owner(), &task_id, "inline", later)
        .await
        .unwrap());
    assert_eq!(begin(4, "w1", later).await.unwrap(), None);
    // Counts are per task.
    let other = unique("task");
    assert_eq!(
        store
            .begin_job_attempt(&other, 4, "w1", later)
            .await
            .unwrap(),
        Some(1)
    );
}

/// The delivery record keeps how many attempts the event of its last attempt has had (the
/// number the core gave that attempt), so the core can count a push job's attempts without
/// the queue's receive count.
pub async fn push_attempts_are_counted_per_event<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let task_id = unique("task");
    let failed = |seq, number| PushAttempt {
        seq,
        at: Timestamp::now(),
        result: PushAttemptResult::Failed,
        http_status: Some(503),
        error: Some("webhook h answered 503".into()),
        final_attempt: false,
        number,
    };
    let record = || store.get_push_delivery(&owner, &task_id, "c1");
    for (seq, number) in [(5, 1), (5, 2), (5, 3)] {
        store
            .record_push_attempt(
                &owner,
                &task_id,
                "c1",
                &failed(seq, number),
                hours_from_now(1),
            )
            .await
            .unwrap();
        let got = record().await.unwrap().expect("a record");
        assert_eq!((got.last_seq, got.last_seq_attempts), (seq, number));
    }
    store
        .record_push_attempt(&owner, &task_id, "c1", &failed(6, 1), hours_from_now(1))
        .await
        .unwrap();
    let got = record().await.unwrap().expect("a record");
    assert_eq!(
        (got.last_seq, got.last_seq_attempts, got.attempts),
        (6, 1, 4)
    );
}

/// Runs every check that needs only a reference to the store.
pub async fn run_all<S: TaskStore + ?Sized>(store: &S) {
    create_then_load(store).await;
    a_task_created_terminal_keeps_its_log(store).await;
    create_twice_conflicts(store).await;
    append_with_expected_version(store).await;
    stale_append_conflicts_and_changes_nothing(store).await;
    read_events_after_seq_and_limit(store).await;
    a_long_log_reads_back_whole_from_any_point(store).await;
    owner_scoping(store).await;
    expired_task_is_gone(store).await;
    list_orders_newest_status_first(store).await;
    list_paging(store).await;
    list_empty(store).await;
    list_cursor_survives_expiry_of_previous_page(store).await;
    list_filters(store).await;
    list_total_size_follows_every_change(store).await;
    list_invalid_page_token(store).await;
    push_config_crud(store).await;
    push_delivery_records(store).await;
    leases(store).await;
    job_attempts_are_counted_on_the_lease(store).await;
    push_attempts_are_counted_per_event(store).await;
    inline_leases(store).await;
    large_items_are_kept_whole_or_refused(store).await;
    reply_records(store).await;
    create_with_an_id_another_owner_holds_conflicts(store).await;
    push_config_keeps_its_protocol_version(store).await;
    durable::execution_records(store).await;
}

/// Runs [`run_all`] and the checks that share the store between spawned tasks.
pub async fn run_all_shared(store: Arc<dyn TaskStore>) {
    run_all(&*store).await;
    sweep_ends_orphaned_inline_executions(store.clone()).await;
    durable::durable_steps_park_and_resume(store.clone()).await;
    durable::signals_resume_and_deadlines_end_waits(store.clone()).await;
    durable::typed_signals_and_calls_inside_steps_fail_clearly(store.clone()).await;
    durable::a_handed_over_execution_finishes_on_the_worker(store.clone()).await;
    concurrent_appends_are_gapless(store).await;
}

/// A task whose first write already ends it (created, an artifact, COMPLETED in one create,
/// as a blocking echo is) keeps every event of that write: replay from any point, with a
/// limit, for its owner only; its id stays taken.
pub async fn a_task_created_terminal_keeps_its_log<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let (submitted, mut events) = new_task(
        &owner,
        &unique("task"),
        &unique("ctx"),
        TaskState::Submitted,
        Timestamp::now(),
        hours_from_now(24),
    );
    let (head, more) = advance(
        &submitted,
        vec![
            artifact_event(&submitted.task, "answer"),
            status_event(&submitted.task, TaskState::Completed, Timestamp::now()),
        ],
    );
    events.extend(more);
    store
        .create_task(&head, &events)
        .await
        .expect("create_task");
    let id = &head.task.id;
    let loaded = store.load_task(&owner, id).await.expect("load_task");
    assert_eq!(loaded.as_ref(), Some(&head));
    assert_eq!(
        store.load_send(&owner, id).await.expect("load_send"),
        Some(SendRecord::Task(head.clone()))
    );
    let seqs = |events: Vec<LoggedEvent>| events.iter().map(|e| e.seq).collect::<Vec<_>>();
    let read = |after, limit| store.read_events(&owner, id, after, limit);
    assert_eq!(read(0, 100).await.expect("read"), events);
    assert_eq!(seqs(read(1, 1).await.expect("read")), vec![2]);
    assert_eq!(seqs(read(1, 100).await.expect("read")), vec![2, 3]);
    assert!(read(3, 100).await.expect("read").is_empty());
    let other = fresh_owner();
    assert!(store
        .read_events(&other, id, 0, 100)
        .await
        .expect("read")
        .is_empty());
    assert_eq!(store.load_task(&other, id).await.expect("load"), None);
    assert_eq!(
        store.create_task(&head, &events).await,
        Err(StoreError::Conflict)
    );
}

/// A created task loads back as written; its log holds the first event.
pub async fn create_then_load<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let head = create(store, &owner).await;
    let loaded = store
        .load_task(&owner, &head.task.id)
        .await
        .expect("load_task")
        .expect("the task exists");
    assert_eq!(loaded, head);
    let events = all_events(store, &owner, &head.task.id).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].seq, 1);
    assert!(matches!(events[0].event, TaskEvent::Created { .. }));
    assert_eq!(
        store
            .load_task(&owner, &unique("missing"))
            .await
            .expect("load_task"),
        None
    );
}

/// Creating a task id that exists is a `Conflict`, and leaves the first task alone.
pub async fn create_twice_conflicts<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let head = create(store, &owner).await;
    let mut other = head.clone();
    other.task.context_id = unique("other-ctx");
    let events = vec![LoggedEvent {
        seq: 1,
        at: Timestamp::now(),
        event: TaskEvent::Created {
            task: other.task.clone(),
        },
    }];
    assert_eq!(
        store.create_task(&other, &events).await,
        Err(StoreError::Conflict)
    );
    let loaded = store
        .load_task(&owner, &head.task.id)
        .await
        .expect("load_task");
    assert_eq!(loaded, Some(head));
}

/// An append at the stored version writes the events and the new head.
pub async fn append_with_expected_version<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let head = create(store, &owner).await;
    let later = Timestamp::from_millis(head.task.status.timestamp.expect("ts").millis() + 5);
    let v3 = append(
        store,
        &head,
        vec![
            status_event(&head.task, TaskState::Working, later),
            artifact_event(&head.task, "a1"),
        ],
    )
    .await;
    assert_eq!(v3.version, 3);
    let v4 = append(
        store,
        &v3,
        vec![status_event(&v3.task, TaskState::Completed, later)],
    )
    .await;
    let loaded = store
        .load_task(&owner, &head.task.id)
        .await
        .expect("load_task")
        .expect("the task exists");
    assert_eq!(loaded, v4);
    assert_eq!(loaded.task.status.state, TaskState::Completed);
    let seqs: Vec<u64> = all_events(store, &owner, &head.task.id)
        .await
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs, vec![1, 2, 3, 4]);
}

/// An append at an old version is a `Conflict` and changes neither the log nor the head.
pub async fn stale_append_conflicts_and_changes_nothing<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let head = create(store, &owner).await;
    let now = Timestamp::now();
    let current = append(
        store,
        &head,
        vec![status_event(&head.task, TaskState::Working, now)],
    )
    .await;
    let before = all_events(store, &owner, &head.task.id).await;

    // A writer that still holds version 1.
    let (stale, events) = advance(
        &head,
        vec![status_event(&head.task, TaskState::Canceled, now)],
    );
    assert_eq!(
        store.append_events(&stale, head.version, &events).await,
        Err(StoreError::Conflict)
    );
    // A writer ahead of the store.
    let mut imagined = current.clone();
    imagined.version += 5;
    let (ahead, events) = advance(&imagined, vec![artifact_event(&imagined.task, "x")]);
    assert_eq!(
        store.append_events(&ahead, imagined.version, &events).await,
        Err(StoreError::Conflict)
    );
    // Appending to a task that does not exist.
    let (mut ghost, events) = advance(&head, vec![artifact_event(&head.task, "y")]);
    ghost.task.id = unique("ghost");
    assert_eq!(
        store.append_events(&ghost, 1, &events).await,
        Err(StoreError::Conflict)
    );

    assert_eq!(all_events(store, &owner, &head.task.id).await, before);
    let loaded = store
        .load_task(&owner, &head.task.id)
        .await
        .expect("load_task");
    assert_eq!(loaded, Some(current));
}

/// `read_events` returns events after a sequence number, in order, up to a limit.
pub async fn read_events_after_seq_and_limit<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let mut head = create(store, &owner).await;
    for i in 0..5 {
        head = append(
            store,
            &head,
            vec![artifact_event(&head.task, &format!("a{i}"))],
        )
        .await;
    }
    let id = &head.task.id;
    let seqs = |events: Vec<LoggedEvent>| events.iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(
        seqs(store.read_events(&owner, id, 0, 100).await.expect("read")),
        vec![1, 2, 3, 4, 5, 6]
    );
    assert_eq!(
        seqs(store.read_events(&owner, id, 2, 100).await.expect("read")),
        vec![3, 4, 5, 6]
    );
    assert_eq!(
        seqs(store.read_events(&owner, id, 2, 2).await.expect("read")),
        vec![3, 4]
    );
    assert!(store
        .read_events(&owner, id, 6, 100)
        .await
        .expect("read")
        .is_empty());
    assert!(store
        .read_events(&owner, id, 60, 100)
        .await
        .expect("read")
        .is_empty());
    assert!(store
        .read_events(&owner, &unique("missing"), 0, 100)
        .await
        .expect("read")
        .is_empty());
    // The events come back as written.
    let events = store.read_events(&owner, id, 3, 1).await.expect("read");
    assert!(
        matches!(&events[0].event, TaskEvent::Artifact { update } if update.artifact.artifact_id == "a2")
    );
}

/// A log far longer than one write (150 appends, small and large events: on DynamoDB the head
/// moves its earlier events into archive items on the way) reads back whole and in order, from
/// any point and with any limit, and the head is the last one written.
pub async fn a_long_log_reads_back_whole_from_any_point<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let mut head = create(store, &owner).await;
    let first = all_events(store, &owner, &head.task.id).await;
    let mut written = first.clone();
    for i in 0..150u64 {
        // Every seventh event is large (~800 bytes that do not compress).
        let text = if i % 7 == 3 {
            (0..22)
                .map(|_| uuid::Uuid::new_v4().simple().to_string())
                .collect::<String>()
        } else {
            format!("chunk {i}")
        };
        let event = TaskEvent::Artifact {
            update: TaskArtifactUpdateEvent {
                task_id: head.task.id.clone(),
                context_id: head.task.context_id.clone(),
                artifact: Artifact {
                    artifact_id: "long".into(),
                    parts: vec![Part::text(text)],
                    ..Default::default()
                },
                append: i > 0,
                ..Default::default()
            },
        };
        let (next, events) = advance(&head, vec![event]);
        store
            .append_events(&next, head.version, &events)
            .await
            .expect("append_events");
        written.extend(events);
        head = next;
    }
    let id = &head.task.id;
    assert_eq!(
        all_events(store, &owner, id).await,
        written,
        "the whole log"
    );
    for after in [0u64, 1, 2, 40, 63, 64, 65, 66, 100, 128, 149, 150, 151, 200] {
        for limit in [1usize, 7, 1_000] {
            let got = store
                .read_events(&owner, id, after, limit)
                .await
                .expect("read_events");
            let want: Vec<LoggedEvent> = written
                .iter()
                .filter(|e| e.seq > after)
                .take(limit)
                .cloned()
                .collect();
            assert_eq!(got, want, "after {after}, limit {limit}");
        }
    }
    let loaded = store.load_task(&owner, id).await.expect("load_task");
    assert_eq!(loaded, Some(head));
}

/// Another owner sees nothing of a task: not its head, events, listing or push configs.
pub async fn owner_scoping<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let stranger = fresh_owner();
    let head = create(store, &owner).await;
    let id = &head.task.id;
    store
        .put_push_config(&owner, &push_config(id, "cfg"), hours_from_now(24))
        .await
        .expect("put_push_config");

    assert_eq!(store.load_task(&stranger, id).await.expect("load"), None);
    assert!(store
        .read_events(&stranger, id, 0, 100)
        .await
        .expect("read")
        .is_empty());
    let page = store.list_tasks(&stranger, &query(10)).await.expect("list");
    assert!(page.tasks.is_empty());
    assert_eq!(page.total_size, 0);
    assert_eq!(
        store
            .get_push_config(&stranger, id, "cfg")
            .await
            .expect("get"),
        None
    );
    assert!(store
        .list_push_configs(&stranger, id)
        .await
        .expect("list")
        .is_empty());
    assert!(!store
        .delete_push_config(&stranger, id, "cfg")
        .await
        .expect("delete"));
    // The owner still sees everything, including the config the stranger tried to delete.
    assert!(store.load_task(&owner, id).await.expect("load").is_some());
    assert_eq!(
        store
            .list_tasks(&owner, &query(10))
            .await
            .expect("list")
            .total_size,
        1
    );
    assert!(store
        .get_push_config(&owner, id, "cfg")
        .await
        .expect("get")
        .is_some());
}

/// A task past its expiry is gone: not loaded, no events, not listed, and not appendable.
pub async fn expired_task_is_gone<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let (head, events) = new_task(
        &owner,
        &unique("task"),
        "ctx",
        TaskState::Submitted,
        Timestamp::now(),
        expired(),
    );
    store
        .create_task(&head, &events)
        .await
        .expect("create_task");
    let id = &head.task.id;
    assert_eq!(store.load_task(&owner, id).await.expect("load"), None);
    assert!(store
        .read_events(&owner, id, 0, 100)
        .await
        .expect("read")
        .is_empty());
    let page = store.list_tasks(&owner, &query(10)).await.expect("list");
    assert!(page.tasks.is_empty());
    assert_eq!(page.total_size, 0);
    let (next, events) = advance(&head, vec![artifact_event(&head.task, "late")]);
    assert_eq!(
        store.append_events(&next, 1, &events).await,
        Err(StoreError::Conflict)
    );

    // A live task that expires through an append disappears the same way.
    let live = create(store, &owner).await;
    let (mut next, events) = advance(&live, vec![artifact_event(&live.task, "a")]);
    next.expires_at = expired();
    store
        .append_events(&next, live.version, &events)
        .await
        .expect("append_events");
    assert_eq!(
        store.load_task(&owner, &live.task.id).await.expect("load"),
        None
    );

    // An expired task's id is free: a new task takes it, with nothing of the old one.
    let (again, again_events) = new_task(
        &owner,
        id,
        "ctx-2",
        TaskState::Working,
        Timestamp::now(),
        hours_from_now(1),
    );
    store
        .create_task(&again, &again_events)
        .await
        .expect("create_task over an expired task");
    assert_eq!(
        store.load_task(&owner, id).await.expect("load"),
        Some(again.clone())
    );
    assert_eq!(
        store.read_events(&owner, id, 0, 100).await.expect("read"),
        again_events
    );
    let page = store.list_tasks(&owner, &query(10)).await.expect("list");
    assert_eq!(page.total_size, 1);
    assert_eq!(
        store.create_task(&again, &again_events).await,
        Err(StoreError::Conflict)
    );
}

/// Tasks are listed newest status timestamp first; a status change moves a task up.
pub async fn list_orders_newest_status_first<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let heads = create_series(store, &owner, 4).await;
    let page = store.list_tasks(&owner, &query(10)).await.expect("list");
    assert_eq!(ids(&page.tasks), newest_first(&heads));
    assert_eq!(page.total_size, 4);
    assert!(page.next_page_token.is_empty());
    // The listed tasks are the heads.
    assert_eq!(page.tasks[3], heads[0].task);

    // The oldest task gets a new status: it is now the newest.
    let moved = append(
        store,
        &heads[0],
        vec![status_event(
            &heads[0].task,
            TaskState::Working,
            Timestamp::now(),
        )],
    )
    .await;
    let page = store.list_tasks(&owner, &query(10)).await.expect("list");
    assert_eq!(page.tasks[0], moved.task);
    assert_eq!(page.tasks.len(), 4);
}

/// Pages follow each other without gaps or repeats, tokens end on the last page (also when the
/// last page is exactly full), and ties on the status timestamp page correctly.
pub async fn list_paging<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let heads = create_series(store, &owner, 5).await;
    let expected = newest_first(&heads);

    let pages = all_pages(store, &owner, &query(2)).await;
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![2, 2, 1]
    );
    assert_eq!(pages.concat(), expected);

    // Exactly full last page: no token pointing at an empty page.
    let pages = all_pages(store, &owner, &query(5)).await;
    assert_eq!(pages, vec![expected.clone()]);
    let pages = all_pages(store, &owner, &query(1)).await;
    assert_eq!(pages.len(), 5);
    assert_eq!(pages.concat(), expected);
    let page = store.list_tasks(&owner, &query(2)).await.expect("list");
    assert_eq!(page.total_size, 5);
    assert!(!page.next_page_token.is_empty());

    // Several tasks with one status timestamp: each is listed exactly once across pages.
    let tied_owner = fresh_owner();
    let ts = Timestamp::now();
    let mut tied = HashSet::new();
    for _ in 0..5 {
        let (head, events) = new_task(
            &tied_owner,
            &unique("task"),
            "ctx",
            TaskState::Submitted,
            ts,
            hours_from_now(24),
        );
        store
            .create_task(&head, &events)
            .await
            .expect("create_task");
        tied.insert(head.task.id);
    }
    let listed = all_pages(store, &tied_owner, &query(2)).await.concat();
    assert_eq!(listed.len(), 5);
    assert_eq!(listed.into_iter().collect::<HashSet<_>>(), tied);
}

/// An owner without tasks gets an empty page and no token.
pub async fn list_empty<S: TaskStore + ?Sized>(store: &S) {
    let page = store
        .list_tasks(&fresh_owner(), &query(10))
        .await
        .expect("list");
    assert!(page.tasks.is_empty());
    assert!(page.next_page_token.is_empty());
    assert_eq!(page.total_size, 0);
}

/// The cursor of a page still works when the task it ends on has expired since.
pub async fn list_cursor_survives_expiry_of_previous_page<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let heads = create_series(store, &owner, 6).await;
    let expected = newest_first(&heads);
    let first = store.list_tasks(&owner, &query(2)).await.expect("list");
    assert_eq!(ids(&first.tasks), expected[..2]);

    // The last task of the first page, and one the first page showed, expire.
    for id in &expected[..2] {
        let head = heads.iter().find(|h| &h.task.id == id).expect("head");
        let (mut next, events) = advance(head, vec![artifact_event(&head.task, "bye")]);
        next.expires_at = expired();
        store
            .append_events(&next, head.version, &events)
            .await
            .expect("append_events");
    }
    let mut q = query(2);
    q.page_token = first.next_page_token;
    let mut rest = Vec::new();
    loop {
        let page = store.list_tasks(&owner, &q).await.expect("list");
        assert_eq!(page.total_size, 4);
        rest.extend(ids(&page.tasks));
        if page.next_page_token.is_empty() {
            break;
        }
        q.page_token = page.next_page_token;
    }
    assert_eq!(rest, expected[2..]);
}

/// The context, state and timestamp filters, alone and together, with `total_size` counting
/// every match rather than the page.
pub async fn list_filters<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let base = Timestamp::now().millis() - 3_600_000;
    let specs = [
        ("ctx-a", TaskState::Submitted, 0),
        ("ctx-a", TaskState::Working, 1),
        ("ctx-b", TaskState::Working, 2),
        ("ctx-b", TaskState::Completed, 3),
        ("ctx-a", TaskState::Completed, 4),
    ];
    let mut ids_by_index = Vec::new();
    for (ctx, state, i) in specs {
        let (head, events) = new_task(
            &owner,
            &unique("task"),
            ctx,
            state,
            Timestamp::from_millis(base + i * 1_000),
            hours_from_now(24),
        );
        store
            .create_task(&head, &events)
            .await
            .expect("create_task");
        ids_by_index.push(head.task.id);
    }
    let pick = |is: &[usize]| {
        is.iter()
            .map(|&i| ids_by_index[i].clone())
            .collect::<Vec<_>>()
    };

    check_query(
        store,
        &owner,
        TaskQuery {
            context_id: Some("ctx-a".into()),
            ..query(1)
        },
        pick(&[4, 1, 0]),
    )
    .await;
    check_query(
        store,
        &owner,
        TaskQuery {
            state: Some(TaskState::Working),
            ..query(10)
        },
        pick(&[2, 1]),
    )
    .await;
    // "After" includes the boundary.
    check_query(
        store,
        &owner,
        TaskQuery {
            status_timestamp_after: Some(Timestamp::from_millis(base + 2_000)),
            ..query(2)
        },
        pick(&[4, 3, 2]),
    )
    .await;
    check_query(
        store,
        &owner,
        TaskQuery {
            context_id: Some("ctx-b".into()),
            state: Some(TaskState::Completed),
            status_timestamp_after: Some(Timestamp::from_millis(base + 1_000)),
            ..query(10)
        },
        pick(&[3]),
    )
    .await;
    check_query(
        store,
        &owner,
        TaskQuery {
            context_id: Some("ctx-none".into()),
            ..query(10)
        },
        Vec::new(),
    )
    .await;
    // A context the server made for a task (which a store may find from the context id
    // rather than index), continued by a later task that names it, between the others.
    let started = a2a_core::new_id();
    let made = a2a_core::context_id_for(&started);
    let mut in_made = Vec::new();
    for (id, state, at) in [
        (started, TaskState::Completed, 500),
        (unique("task"), TaskState::Working, 3_500),
    ] {
        let (head, events) = new_task(
            &owner,
            &id,
            &made,
            state,
            Timestamp::from_millis(base + at),
            hours_from_now(24),
        );
        store
            .create_task(&head, &events)
            .await
            .expect("create_task");
        in_made.push(id);
    }
    check_query(
        store,
        &owner,
        TaskQuery {
            context_id: Some(made.clone()),
            ..query(1)
        },
        vec![in_made[1].clone(), in_made[0].clone()],
    )
    .await;
    for (state, want) in [
        (TaskState::Completed, &in_made[0]),
        (TaskState::Working, &in_made[1]),
    ] {
        check_query(
            store,
            &owner,
            TaskQuery {
                context_id: Some(made.clone()),
                state: Some(state),
                ..query(1)
            },
            vec![want.clone()],
        )
        .await;
    }
    check_query(
        store,
        &owner,
        TaskQuery {
            context_id: Some(made.clone()),
            status_timestamp_after: Some(Timestamp::from_millis(base + 1_000)),
            ..query(1)
        },
        vec![in_made[1].clone()],
    )
    .await;
    // Another owner's list by that context finds neither.
    check_query(
        store,
        &fresh_owner(),
        TaskQuery {
            context_id: Some(made),
            ..query(10)
        },
        Vec::new(),
    )
    .await;
    check_query(
        store,
        &owner,
        TaskQuery {
            status_timestamp_after: Some(hours_from_now(1)),
            ..query(10)
        },
        Vec::new(),
    )
    .await;
}

/// `total_size` of an unfiltered and of a state-filtered ListTasks stays exact through every
/// change a task goes through: creates (born terminal too), a status change, a task that
/// expires through an append, one created already expired, and an expired task's id taken
/// again. Stores that keep counts instead of counting on every call keep them here.
pub async fn list_total_size_follows_every_change<S: TaskStore + ?Sized>(store: &S) {
    use TaskState::{Completed, Submitted, Working};
    let owner = fresh_owner();
    let totals = |state: Option<TaskState>| {
        let q = TaskQuery { state, ..query(1) };
        let owner = owner.clone();
        async move {
            store
                .list_tasks(&owner, &q)
                .await
                .expect("list_tasks")
                .total_size
        }
    };
    let check = |all: usize, submitted: usize, working: usize, completed: usize| async move {
        assert_eq!(
            (
                totals(None).await,
                totals(Some(Submitted)).await,
                totals(Some(Working)).await,
                totals(Some(Completed)).await
            ),
            (all, submitted, working, completed),
            "total_size: all, submitted, working, completed"
        );
    };
    check(0, 0, 0, 0).await;

    let first = create(store, &owner).await;
    let second = create(store, &owner).await;
    let (submitted, mut events) = new_task(
        &owner,
        &unique("task"),
        &unique("ctx"),
        Submitted,
        Timestamp::now(),
        hours_from_now(24),
    );
    let (born_done, more) = advance(
        &submitted,
        vec![status_event(&submitted.task, Completed, Timestamp::now())],
    );
    events.extend(more);
    store
        .create_task(&born_done, &events)
        .await
        .expect("create_task");
    check(3, 2, 0, 1).await;

    // A status change moves a task from one state's count to another's.
    let working = append(
        store,
        &first,
        vec![status_event(&first.task, Working, Timestamp::now())],
    )
    .await;
    check(3, 1, 1, 1).await;
    // An append that changes no state changes no count.
    let working = append(store, &working, vec![artifact_event(&working.task, "a")]).await;
    check(3, 1, 1, 1).await;

    // A task that expires through an append leaves every count.
    let (mut gone, events) = advance(&working, vec![artifact_event(&working.task, "b")]);
    gone.expires_at = expired();
    store
        .append_events(&gone, working.version, &events)
        .await
        .expect("append_events");
    check(2, 1, 0, 1).await;

    // A task created already expired is never counted.
    let (dead, events) = new_task(
        &owner,
        &unique("task"),
        "ctx",
        Working,
        Timestamp::now(),
        expired(),
    );
    store
        .create_task(&dead, &events)
        .await
        .expect("create_task");
    check(2, 1, 0, 1).await;

    // The id of an expired task is free: taken again, it counts once, in its new state.
    let (again, events) = new_task(
        &owner,
        &dead.task.id,
        "ctx",
        Completed,
        Timestamp::now(),
        hours_from_now(24),
    );
    store
        .create_task(&again, &events)
        .await
        .expect("create_task");
    check(3, 1, 0, 2).await;

    // Another owner's tasks are not counted, and a finished task moves to its end state.
    create(store, &fresh_owner()).await;
    append(
        store,
        &second,
        vec![status_event(&second.task, Completed, Timestamp::now())],
    )
    .await;
    check(3, 0, 0, 3).await;
}

/// Lists every page of `q` and compares with `want`; `total_size` must count all matches.
async fn check_query<S: TaskStore + ?Sized>(
    store: &S,
    owner: &Owner,
    q: TaskQuery,
    want: Vec<String>,
) {
    let listed = all_pages(store, owner, &q).await.concat();
    assert_eq!(listed, want, "query {q:?}");
    let page = store.list_tasks(owner, &q).await.expect("list");
    assert_eq!(page.total_size, want.len(), "total_size of {q:?}");
}

/// A page token the store did not produce is `InvalidPageToken`.
pub async fn list_invalid_page_token<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    create_series(store, &owner, 3).await;
    for token in ["not a token!", "%%%", "e30", "AAAA", "eyJ0cyI6IngifQ"] {
        let q = TaskQuery {
            page_token: token.into(),
            ..query(2)
        };
        assert_eq!(
            store.list_tasks(&owner, &q).await,
            Err(StoreError::InvalidPageToken),
            "token {token:?}"
        );
    }
}

/// Push configs: put, get, list (ordered by id), replace, delete (twice), and expiry.
pub async fn push_config_crud<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let head = create(store, &owner).await;
    let id = &head.task.id;
    let until = hours_from_now(24);

    assert_eq!(
        store.get_push_config(&owner, id, "b").await.expect("get"),
        None
    );
    assert!(store
        .list_push_configs(&owner, id)
        .await
        .expect("list")
        .is_empty());
    for config_id in ["b", "a", "c"] {
        store
            .put_push_config(&owner, &push_config(id, config_id), until)
            .await
            .expect("put");
    }
    let got = store.get_push_config(&owner, id, "b").await.expect("get");
    assert_eq!(got, Some(push_config(id, "b")));
    let listed = store.list_push_configs(&owner, id).await.expect("list");
    assert_eq!(
        listed.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["a", "b", "c"]
    );

    // Put replaces.
    let mut replaced = push_config(id, "b");
    replaced.url = "https://example.com/other".into();
    replaced.token = String::new();
    replaced.authentication = None;
    store
        .put_push_config(&owner, &replaced, until)
        .await
        .expect("put");
    assert_eq!(
        store.get_push_config(&owner, id, "b").await.expect("get"),
        Some(replaced)
    );
    assert_eq!(
        store
            .list_push_configs(&owner, id)
            .await
            .expect("list")
            .len(),
        3
    );

    assert!(store
        .delete_push_config(&owner, id, "b")
        .await
        .expect("delete"));
    assert!(!store
        .delete_push_config(&owner, id, "b")
        .await
        .expect("delete"));
    assert_eq!(
        store.get_push_config(&owner, id, "b").await.expect("get"),
        None
    );
    assert_eq!(
        store
            .list_push_configs(&owner, id)
            .await
            .expect("list")
            .len(),
        2
    );
    assert!(!store
        .delete_push_config(&owner, id, "never")
        .await
        .expect("delete"));
    // Configs of another task are separate.
    assert!(store
        .list_push_configs(&owner, &unique("other"))
        .await
        .expect("list")
        .is_empty());

    // An expired config is gone.
    store
        .put_push_config(&owner, &push_config(id, "old"), expired())
        .await
        .expect("put");
    assert_eq!(
        store.get_push_config(&owner, id, "old").await.expect("get"),
        None
    );
    assert_eq!(
        store
            .list_push_configs(&owner, id)
            .await
            .expect("list")
            .len(),
        2
    );
    assert!(!store
        .delete_push_config(&owner, id, "old")
        .await
        .expect("delete"));
}

/// Leases: one holder at a time, renewal by the holder, takeover after expiry, release.
pub async fn leases<S: TaskStore + ?Sized>(store: &S) {
    let task_id = unique("task");
    let later = hours_from_now(1);
    assert!(store
        .acquire_lease(&task_id, "w1", later)
        .await
        .expect("acquire"));
    assert!(!store
        .acquire_lease(&task_id, "w2", later)
        .await
        .expect("acquire"));
    // The holder renews.
    assert!(store
        .acquire_lease(&task_id, "w1", hours_from_now(2))
        .await
        .expect("acquire"));
    // Releasing someone else's lease does nothing.
    store.release_lease(&task_id, "w2").await.expect("release");
    assert!(!store
        .acquire_lease(&task_id, "w2", later)
        .await
        .expect("acquire"));
    store.release_lease(&task_id, "w1").await.expect("release");
    assert!(store
        .acquire_lease(&task_id, "w2", later)
        .await
        .expect("acquire"));

    // An expired lease can be taken over.
    let other = unique("task");
    let past = Timestamp::from_millis(Timestamp::now().millis() - 1_000);
    assert!(store
        .acquire_lease(&other, "w1", past)
        .await
        .expect("acquire"));
    assert!(store
        .acquire_lease(&other, "w2", later)
        .await
        .expect("acquire"));
    assert!(!store
        .acquire_lease(&other, "w1", later)
        .await
        .expect("acquire"));
    // Releasing a lease nobody holds is fine.
    store
        .release_lease(&unique("task"), "w1")
        .await
        .expect("release");
}

/// The inline leases of `task_ids` that `list_expired_inline_leases` returns at `now` (the
/// store is shared: other checks' leases are listed too).
async fn expired_among<S: TaskStore + ?Sized>(
    store: &S,
    now: Timestamp,
    task_ids: &[&str],
) -> Vec<ExpiredLease> {
    let mut leases = store
        .list_expired_inline_leases(now, 10_000)
        .await
        .expect("list expired inline leases");
    leases.retain(|l| task_ids.contains(&l.task_id.as_str()));
    leases.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    leases
}

/// Inline leases: once expired (and not released, renewed or taken over by a queued
/// execution) they are listed with their owner, holder and end; queued leases never are; a
/// listed lease is removed only while it is still the one listed.
pub async fn inline_leases<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let past = Timestamp::from_millis(Timestamp::now().millis() - 1_000);
    let later = hours_from_now(1);
    let expired_id = unique("task");
    let live = unique("task");
    let queued = unique("task");
    let released = unique("task");
    let taken_over = unique("task");
    let ids = [expired_id.as_str(), &live, &queued, &released, &taken_over];
    assert!(store
        .acquire_inline_lease(&owner, &expired_id, "w1", past)
        .await
        .expect("acquire"));
    assert!(store
        .acquire_inline_lease(&owner, &live, "w1", later)
        .await
        .expect("acquire"));
    assert!(store
        .acquire_lease(&queued, "w1", past)
        .await
        .expect("acquire"));
    assert!(store
        .acquire_inline_lease(&owner, &released, "w1", past)
        .await
        .expect("acquire"));
    store.release_lease(&released, "w1").await.expect("release");
    // A queued execution takes over an expired inline lease: its queue redelivers the work.
    assert!(store
        .acquire_inline_lease(&owner, &taken_over, "w1", past)
        .await
        .expect("acquire"));
    assert!(store
        .acquire_lease(&taken_over, "w2", later)
        .await
        .expect("acquire"));
    // An inline lease is the task's one lease: someone else's live one keeps it.
    assert!(!store
        .acquire_inline_lease(&owner, &live, "w2", later)
        .await
        .expect("acquire"));

    let listed = expired_among(store, Timestamp::now(), &ids).await;
    assert_eq!(
        listed,
        vec![ExpiredLease {
            owner: owner.clone(),
            task_id: expired_id.clone(),
            holder: "w1".into(),
            until: past,
        }]
    );
    // Later, the live one is over too; the queued ones still are not listed.
    let mut ids_then: Vec<String> = expired_among(store, hours_from_now(2), &ids)
        .await
        .into_iter()
        .map(|l| l.task_id)
        .collect();
    ids_then.sort();
    let mut expected = vec![expired_id.clone(), live.clone()];
    expected.sort();
    assert_eq!(ids_then, expected);
    // The limit holds.
    assert!(
        store
            .list_expired_inline_leases(hours_from_now(2), 1)
            .await
            .expect("list")
            .len()
            <= 1
    );

    // Removal is conditional on the lease still being the one listed.
    let stale = listed[0].clone();
    assert!(store
        .acquire_inline_lease(&owner, &expired_id, "w1", later)
        .await
        .expect("renew"));
    assert!(!store
        .remove_expired_lease(&stale)
        .await
        .expect("remove a renewed lease"));
    assert!(!store
        .acquire_inline_lease(&owner, &expired_id, "w2", later)
        .await
        .expect("the renewed lease is still held"));
    let listed = expired_among(store, hours_from_now(2), &[&expired_id]).await;
    assert_eq!(listed.len(), 1);
    assert!(store
        .remove_expired_lease(&listed[0])
        .await
        .expect("remove"));
    assert!(!store
        .remove_expired_lease(&listed[0])
        .await
        .expect("remove again"));
    assert!(expired_among(store, hours_from_now(2), &[&expired_id])
        .await
        .is_empty());
    // Removed means free.
    assert!(store
        .acquire_inline_lease(&owner, &expired_id, "w2", later)
        .await
        .expect("acquire"));
    for id in ids {
        for holder in ["w1", "w2"] {
            store.release_lease(id, holder).await.expect("release");
        }
    }
}

/// Eight writers race to append to one task, each re-reading after a `Conflict`. The log ends
/// gapless (1..=N) with every writer's events exactly once, and the head matches the log.
pub async fn concurrent_appends_are_gapless(store: Arc<dyn TaskStore>) {
    const WRITERS: usize = 8;
    // 81 events: more than a DynamoDB head carries (64), so writers racing also race to move
    // the earlier events into archive items.
    const PER_WRITER: usize = 10;
    let owner = fresh_owner();
    let head = create(&*store, &owner).await;
    let task_id = head.task.id.clone();

    let mut handles = Vec::new();
    for writer in 0..WRITERS {
        let store = Arc::clone(&store);
        let owner = owner.clone();
        let task_id = task_id.clone();
        handles.push(tokio::spawn(async move {
            let mut conflicts = 0u32;
            for n in 0..PER_WRITER {
                let marker = format!("w{writer}-{n}");
                loop {
                    let current = store
                        .load_task(&owner, &task_id)
                        .await
                        .expect("load_task")
                        .expect("the task exists");
                    let (next, events) =
                        advance(&current, vec![artifact_event(&current.task, &marker)]);
                    match store.append_events(&next, current.version, &events).await {
                        Ok(()) => break,
                        Err(StoreError::Conflict) => {
                            conflicts += 1;
                            assert!(conflicts < 10_000, "writer {writer} never wins");
                            tokio::task::yield_now().await;
                        }
                        Err(e) => panic!("append_events: {e}"),
                    }
                }
            }
        }));
    }
    for handle in handles {
        handle.await.expect("writer task");
    }

    let events = all_events(&*store, &owner, &task_id).await;
    let total = 1 + WRITERS * PER_WRITER;
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=total as u64).collect::<Vec<_>>(), "gapless log");
    let mut markers = HashSet::new();
    for event in &events[1..] {
        match &event.event {
            TaskEvent::Artifact { update } => {
                assert!(
                    markers.insert(update.artifact.artifact_id.clone()),
                    "event {} written twice",
                    update.artifact.artifact_id
                );
            }
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert_eq!(markers.len(), WRITERS * PER_WRITER);
    let loaded = store
        .load_task(&owner, &task_id)
        .await
        .expect("load_task")
        .expect("the task exists");
    assert_eq!(loaded.version, total as u64);
    assert_eq!(loaded.task.artifacts.len(), WRITERS * PER_WRITER);
    // Writers build on what they read, so every writer's own events are in its order.
    for writer in 0..WRITERS {
        let own: Vec<&str> = events
            .iter()
            .filter_map(|e| match &e.event {
                TaskEvent::Artifact { update } => Some(update.artifact.artifact_id.as_str()),
                _ => None,
            })
            .filter(|id| id.starts_with(&format!("w{writer}-")))
            .collect();
        let want: Vec<String> = (0..PER_WRITER).map(|n| format!("w{writer}-{n}")).collect();
        assert_eq!(own, want);
    }
}

/// Large tasks and events are either kept whole or refused with `TooLarge`, leaving the task
/// and its log as they were: never truncated, never half-written. A task of 300 KB (DynamoDB
/// items hold 400 KB) must be accepted by every store.
pub async fn large_items_are_kept_whole_or_refused<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let with_history = |text: String| {
        let (mut head, _) = new_task(
            &owner,
            &unique("task"),
            "ctx",
            TaskState::Submitted,
            Timestamp::now(),
            hours_from_now(24),
        );
        head.task.history = vec![Message::user_text(unique("msg"), text)];
        let created = vec![LoggedEvent {
            seq: 1,
            at: Timestamp::now(),
            event: TaskEvent::Created {
                task: head.task.clone(),
            },
        }];
        (head, created)
    };

    let (big, big_events) = with_history("b".repeat(300_000));
    store
        .create_task(&big, &big_events)
        .await
        .expect("a 300 KB task is stored");
    let loaded = store.load_task(&owner, &big.task.id).await.expect("load");
    assert_eq!(
        loaded.as_ref(),
        Some(&big),
        "the 300 KB task comes back whole"
    );
    assert_eq!(all_events(store, &owner, &big.task.id).await, big_events);

    // 1 MB: kept whole, or refused with nothing left behind.
    let (huge, events) = with_history("h".repeat(1_000_000));
    match store.create_task(&huge, &events).await {
        Ok(()) => {
            let loaded = store.load_task(&owner, &huge.task.id).await.expect("load");
            assert_eq!(loaded, Some(huge.clone()));
            assert_eq!(all_events(store, &owner, &huge.task.id).await, events);
        }
        Err(StoreError::TooLarge(why)) => {
            assert!(!why.is_empty() && why.len() < 500, "a short reason: {why}");
            assert!(
                !why.contains("hhhh"),
                "the reason does not echo the content"
            );
            let loaded = store.load_task(&owner, &huge.task.id).await.expect("load");
            assert_eq!(loaded, None, "a refused task is not half-created");
            assert!(all_events(store, &owner, &huge.task.id).await.is_empty());
        }
        Err(other) => panic!("a 1 MB task must be stored or refused as TooLarge: {other:?}"),
    }

    // An artifact of 200 KB onto the 300 KB task: the head would pass 400 KB.
    let mut artifact = artifact_event(&big.task, "large");
    if let TaskEvent::Artifact { update } = &mut artifact {
        update.artifact.parts = vec![Part::text("a".repeat(200_000))];
    }
    let (next, appended) = advance(&big, vec![artifact]);
    match store.append_events(&next, big.version, &appended).await {
        Ok(()) => {
            let loaded = store.load_task(&owner, &big.task.id).await.expect("load");
            assert_eq!(loaded, Some(next));
            let log = all_events(store, &owner, &big.task.id).await;
            assert_eq!(log[..1], big_events[..]);
            assert_eq!(log[1..], appended[..]);
        }
        Err(StoreError::TooLarge(why)) => {
            assert!(
                !why.contains("aaaa"),
                "the reason does not echo the content"
            );
            let loaded = store.load_task(&owner, &big.task.id).await.expect("load");
            assert_eq!(loaded, Some(big.clone()), "the head is unchanged");
            assert_eq!(all_events(store, &owner, &big.task.id).await, big_events);
        }
        Err(other) => panic!("a large append must be stored or refused as TooLarge: {other:?}"),
    }
}

/// The sweep's agent: `echo` completes at once (born terminal); `hang` reports WORKING and
/// never finishes, like an execution whose process is gone.
struct SweepAgent;

#[async_trait::async_trait]
impl Agent for SweepAgent {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "sweep".into(),
            description: "checks the sweep".into(),
            version: "1".into(),
            ..Default::default()
        }
    }

    fn placement(&self, _request: &AgentRequest) -> Placement {
        Placement::Inline
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        if request.text() == "hang" {
            emitter.working(None).await?;
            std::future::pending::<()>().await;
        }
        emitter.complete(Some("done")).await
    }
}

/// Queues that accept and forget (the sweep checks run nothing queued).
struct NoQueue;

#[async_trait::async_trait]
impl WorkQueue for NoQueue {
    async fn enqueue_work(&self, _job: &WorkJob) -> Result<(), StoreError> {
        Ok(())
    }

    async fn enqueue_work_after(
        &self,
        _job: &WorkJob,
        _delay: std::time::Duration,
    ) -> Result<(), StoreError> {
        Ok(())
    }
}

#[async_trait::async_trait]
impl PushQueue for NoQueue {
    async fn enqueue_push(&self, _jobs: &[PushJob]) -> Result<(), StoreError> {
        Ok(())
    }
}

/// The core's sweep on this store, through the real service: a task born terminal never
/// writes a lease; a live inline execution holds one; an active task whose inline lease
/// expired ends FAILED with the reason, a terminal or interrupted one is left as it is, and
/// the expired leases are removed.
pub async fn sweep_ends_orphaned_inline_executions(store: Arc<dyn TaskStore>) {
    let service = A2aService::new(
        ServiceConfig::default(),
        Arc::new(SweepAgent),
        store.clone(),
        Arc::new(NoQueue),
        Arc::new(NoQueue),
    );
    let ctx = CallContext::anonymous(&unique("tenant"));
    let send = |text: &str| SendMessageRequest {
        message: Some(Message::user_text(unique("msg"), text)),
        ..Default::default()
    };

    // Born terminal: no lease, not even a released one (the listing sees every inline lease
    // whose end is before "in two hours").
    let echo = match service
        .call(&ctx, OperationRequest::SendMessage(send("echo")))
        .await
    {
        Ok(OperationResponse::Sent(SendMessageResponse::Task(task))) => task,
        other => panic!("SendMessage: {other:?}"),
    };
    assert_eq!(echo.status.state, TaskState::Completed);

    // A live execution holds its lease: listed only once it would be over.
    let Ok(OperationResponse::Stream(mut stream)) = service
        .call(&ctx, OperationRequest::SendStreamingMessage(send("hang")))
        .await
    else {
        panic!("SendStreamingMessage did not answer with a stream");
    };
    let live = loop {
        let item = stream.next().await.expect("an event").expect("no error");
        if let StreamResponse::StatusUpdate(update) = item.response {
            assert_eq!(update.status.state, TaskState::Working);
            break update.task_id;
        }
    };
    drop(stream);
    assert!(expired_among(&*store, Timestamp::now(), &[&live])
        .await
        .is_empty());
    let held = expired_among(&*store, hours_from_now(2), &[&live, &echo.id]).await;
    assert_eq!(held.len(), 1, "only the live execution holds a lease");
    assert_eq!(
        (held[0].task_id.as_str(), &held[0].owner),
        (live.as_str(), &ctx.owner)
    );

    // Orphans: tasks whose execution died, as a crash leaves them.
    let past = Timestamp::from_millis(Timestamp::now().millis() - 1_000);
    let orphan = |state| {
        let store = store.clone();
        let owner = ctx.owner.clone();
        async move {
            let (head, events) = new_task(
                &owner,
                &unique("task"),
                &unique("ctx"),
                state,
                Timestamp::now(),
                hours_from_now(24),
            );
            store.create_task(&head, &events).await.expect("create");
            assert!(store
                .acquire_inline_lease(&owner, &head.task.id, "gone", past)
                .await
                .expect("lease"));
            head
        }
    };
    let working = orphan(TaskState::Working).await;
    let submitted = orphan(TaskState::Submitted).await;
    let completed = orphan(TaskState::Completed).await;
    let waiting = orphan(TaskState::InputRequired).await;
    let ids = [
        working.task.id.as_str(),
        &submitted.task.id,
        &completed.task.id,
        &waiting.task.id,
    ];

    let ended = service
        .sweep_expired_executions(10_000)
        .await
        .expect("sweep");
    assert!(ended >= 2, "ended {ended}");
    for head in [&working, &submitted] {
        let now = store
            .load_task(&ctx.owner, &head.task.id)
            .await
            .expect("load")
            .expect("task");
        assert_eq!(now.task.status.state, TaskState::Failed);
        assert_eq!(now.version, head.version + 1, "one FAILED event");
        let reason = now.task.status.message.expect("a reason");
        let text = reason.parts[0].text.as_deref().unwrap_or_default();
        assert!(text.contains("stopped before it finished"), "{text}");
        let events = store
            .read_events(&ctx.owner, &head.task.id, head.version, 10)
            .await
            .expect("events");
        assert!(
            matches!(&events[..], [LoggedEvent { event: TaskEvent::Status { update }, .. }] if update.status.state == TaskState::Failed)
        );
    }
    for head in [&completed, &waiting] {
        let now = store
            .load_task(&ctx.owner, &head.task.id)
            .await
            .expect("load")
            .expect("task");
        assert_eq!(now, *head, "a stopped task is left alone");
    }
    assert!(expired_among(&*store, hours_from_now(2), &ids)
        .await
        .is_empty());
    // The live execution was not touched: its lease is not over.
    let head = store
        .load_task(&ctx.owner, &live)
        .await
        .expect("load")
        .expect("task");
    assert_eq!(head.task.status.state, TaskState::Working);

    // A second sweep finds nothing of these.
    service
        .sweep_expired_executions(10_000)
        .await
        .expect("sweep");
    let again = store
        .load_task(&ctx.owner, &working.task.id)
        .await
        .expect("load")
        .expect("task");
    assert_eq!(again.version, working.version + 1);
    service.shutdown().await;
}

/// A reply record for `task_id` of `owner`, expiring at `expires_at`.
fn reply_record(owner: &Owner, task_id: &str, expires_at: Timestamp) -> StoredReply {
    StoredReply {
        owner: owner.clone(),
        request: Message {
            task_id: task_id.to_owned(),
            context_id: unique("ctx"),
            ..Message::user_text(unique("msg"), "hello")
        },
        reply: Message::agent_text("hi"),
        expires_at,
    }
}

/// A direct reply record holds its id as a live task would: one read finds it (and only for
/// its owner), `load_task` never returns it, it is not listed, a create of that id conflicts,
/// and a second record is refused; a reply cannot take a live task's id; once expired, the id
/// is free again.
pub async fn reply_records<S: TaskStore + ?Sized>(store: &S) {
    let owner = fresh_owner();
    let task_id = unique("reply");
    let record = reply_record(&owner, &task_id, hours_from_now(24));
    assert!(store.put_reply(&task_id, &record).await.expect("put_reply"));
    assert_eq!(
        store.load_send(&owner, &task_id).await.expect("load_send"),
        Some(SendRecord::Reply(record.clone()))
    );
    assert_eq!(
        store
            .load_send(&fresh_owner(), &task_id)
            .await
            .expect("load_send"),
        None,
        "another owner sees no record"
    );
    assert_eq!(
        store.load_task(&owner, &task_id).await.expect("load_task"),
        None
    );
    let listed = store
        .list_tasks(&owner, &query(10))
        .await
        .expect("list_tasks");
    assert!(
        listed.tasks.is_empty(),
        "a reply record is not a task: {listed:?}"
    );

    let second = reply_record(&owner, &task_id, hours_from_now(24));
    assert!(!store.put_reply(&task_id, &second).await.expect("put_reply"));
    let (head, events) = new_task(
        &owner,
        &task_id,
        &unique("ctx"),
        TaskState::Submitted,
        Timestamp::now(),
        hours_from_now(24),
    );
    assert_eq!(
        store.create_task(&head, &events).await,
        Err(StoreError::Conflict)
    );
    assert_eq!(
        store.load_send(&owner, &task_id).await.expect("load_send"),
        Some(SendRecord::Reply(record)),
        "the refused writes changed nothing"
    );

    // A live task's id takes no reply record; `load_send` finds the task.
    let task = create(store, &owner).await;
    let on_task = reply_record(&owner, &task.task.id, hours_from_now(24));
    assert!(!store
        .put_reply(&task.task.id, &on_task)
        .await
        .expect("put_reply"));
    assert_eq!(
        store
            .load_send(&owner, &task.task.id)
            .await
            .expect("load_send"),
        Some(SendRecord::Task(task))
    );

    // An expired record is gone, and its id is free for a task.
    let stale_id = unique("reply");
    let stale = reply_record(&owner, &stale_id, expired());
    assert!(store.put_reply(&stale_id, &stale).await.expect("put_reply"));
    assert_eq!(
        store.load_send(&owner, &stale_id).await.expect("load_send"),
        None
    );
    let (head, events) = new_task(
        &owner,
        &stale_id,
        &unique("ctx"),
        TaskState::Submitted,
        Timestamp::now(),
        hours_from_now(24),
    );
    store
        .create_task(&head, &events)
        .await
        .expect("an expired reply frees its id");
    assert_eq!(
        store.load_send(&owner, &stale_id).await.expect("load_send"),
        Some(SendRecord::Task(head))
    );
}

/// A task id is one namespace across owners: creating an id that another owner's task holds is
/// a `Conflict` that leaves that task alone and shows the creator nothing of it. The early
/// protocol's client-chosen ids rely on it (issue #16).
pub async fn create_with_an_id_another_owner_holds_conflicts<S: TaskStore + ?Sized>(store: &S) {
    let alice = fresh_owner();
    let bob = fresh_owner();
    let head = create(store, &alice).await;
    let (theirs, events) = new_task(
        &bob,
        &head.task.id,
        &unique("ctx"),
        TaskState::Working,
        Timestamp::now(),
        hours_from_now(24),
    );
    assert_eq!(
        store.create_task(&theirs, &events).await,
        Err(StoreError::Conflict)
    );
    assert_eq!(
        store
            .load_task(&bob, &head.task.id)
            .await
            .expect("load_task"),
        None
    );
    assert_eq!(
        store
            .load_send(&bob, &head.task.id)
            .await
            .expect("load_send"),
        None
    );
    assert_eq!(
        store
            .load_task(&alice, &head.task.id)
            .await
            .expect("load_task"),
        Some(head)
    );
}

/// A push config keeps the protocol version of the client that set it in the store (its
/// pushes carry the body that version reads).
pub async fn push_config_keeps_its_protocol_version<S: TaskStore + ?Sized>(store: &S) {
    use a2a_protocol::ProtocolVersion;
    let owner = fresh_owner();
    let head = create(store, &owner).await;
    let id = &head.task.id;
    let until = hours_from_now(24);
    // Ordered by id, as the list answers.
    let versions = [
        ("early", ProtocolVersion::Early),
        ("v03", ProtocolVersion::V0_3),
        ("v10", ProtocolVersion::V1_0),
        ("v11", ProtocolVersion::V1_1),
    ];
    for (config_id, version) in versions {
        let mut config = push_config(id, config_id);
        config.set_protocol(version);
        store
            .put_push_config(&owner, &config, until)
            .await
            .expect("put");
        let got = store
            .get_push_config(&owner, id, config_id)
            .await
            .expect("get");
        assert_eq!(
            got.as_ref().map(|c| c.protocol()),
            Some(version),
            "{config_id}"
        );
        assert_eq!(got, Some(config), "{config_id}");
    }
    let listed = store.list_push_configs(&owner, id).await.expect("list");
    let listed: Vec<_> = listed.iter().map(|c| c.protocol()).collect();
    assert_eq!(listed, versions.map(|(_, version)| version));
}
