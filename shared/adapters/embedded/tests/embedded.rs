//! Behaviour specific to the SQLite adapter: durability, several stores on one file, the
//! queues, wake-ups and the purge; and the core's job runner over those queues (`runner`).

mod runner;

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{
    LeaseStore, LoggedEvent, Owner, PushConfigStore, PushJob, PushQueue, StoreError, StoredTask,
    TaskEvent, TaskLogStore, TaskStore, WorkJob, WorkQueue, JOB_FORMAT_VERSION,
};
use a2a_embedded::{QueueName, SqliteStore, DB_FILE_NAME};
use a2a_protocol::{
    Artifact, Part, Task, TaskArtifactUpdateEvent, TaskPushNotificationConfig, TaskState,
    TaskStatus, Timestamp,
};

/// Long enough never to fire in a healthy run; only bounds a broken one.
const PATIENCE: Duration = Duration::from_secs(10);
const LONG: Duration = Duration::from_secs(60);

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4())
}

fn owner() -> Owner {
    Owner::new("t", &unique("p"))
}

fn in_hours(h: i64) -> Timestamp {
    Timestamp::from_millis(Timestamp::now().millis() + h * 3_600_000)
}

fn new_task(owner: &Owner, expires_at: Timestamp) -> (StoredTask, Vec<LoggedEvent>) {
    let task = Task {
        id: unique("task"),
        context_id: "ctx".into(),
        status: TaskStatus {
            state: TaskState::Working,
            message: None,
            timestamp: Some(Timestamp::now()),
        },
        ..Default::default()
    };
    let head = StoredTask {
        owner: owner.clone(),
        task: task.clone(),
        version: 1,
        expires_at,
    };
    let events = vec![LoggedEvent {
        seq: 1,
        at: Timestamp::now(),
        event: TaskEvent::Created { task },
    }];
    (head, events)
}

/// The head and event of appending one artifact to `head`.
fn next(head: &StoredTask, artifact_id: &str) -> (StoredTask, Vec<LoggedEvent>) {
    let event = TaskEvent::Artifact {
        update: TaskArtifactUpdateEvent {
            task_id: head.task.id.clone(),
            context_id: head.task.context_id.clone(),
            artifact: Artifact {
                artifact_id: artifact_id.into(),
                parts: vec![Part::text(artifact_id)],
                ..Default::default()
            },
            ..Default::default()
        },
    };
    let mut new_head = head.clone();
    event.apply(&mut new_head.task).expect("applies");
    new_head.version += 1;
    let logged = LoggedEvent {
        seq: new_head.version,
        at: Timestamp::now(),
        event,
    };
    (new_head, vec![logged])
}

async fn append(store: &SqliteStore, head: &StoredTask, artifact_id: &str) -> StoredTask {
    let (new_head, events) = next(head, artifact_id);
    store
        .append_events(&new_head, head.version, &events)
        .await
        .expect("append");
    new_head
}

fn work_job(task_id: &str) -> WorkJob {
    WorkJob::run(&Owner::anonymous("t"), task_id, 1)
}

fn push_job(task_id: &str, seq: u64) -> PushJob {
    PushJob {
        v: JOB_FORMAT_VERSION,
        owner: Owner::anonymous("t"),
        task_id: task_id.into(),
        seq,
        config_id: "cfg".into(),
    }
}

fn as_push(body: &str) -> PushJob {
    serde_json::from_str(body).expect("push job body")
}

fn open() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path()).expect("open");
    (dir, store)
}

#[tokio::test]
async fn data_survives_reopening() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().join("nested").join("data");
    let owner = owner();
    let (head, events) = new_task(&owner, in_hours(1));
    let config = TaskPushNotificationConfig {
        id: "cfg".into(),
        task_id: head.task.id.clone(),
        url: "https://example.com/hook".into(),
        ..Default::default()
    };
    let head = {
        let store = SqliteStore::open(&data_dir).expect("open");
        store.create_task(&head, &events).await.expect("create");
        let head = append(&store, &head, "a").await;
        store
            .put_push_config(&owner, &config, in_hours(1))
            .await
            .expect("put");
        store
            .enqueue_work(&work_job(&head.task.id))
            .await
            .expect("enqueue");
        store
            .acquire_lease(&head.task.id, "w1", in_hours(1))
            .await
            .expect("lease");
        head
    };
    assert!(data_dir.join(DB_FILE_NAME).is_file());

    let store = SqliteStore::open(&data_dir).expect("reopen");
    assert_eq!(
        store.load_task(&owner, &head.task.id).await.expect("load"),
        Some(head.clone())
    );
    let events = store
        .read_events(&owner, &head.task.id, 0, 10)
        .await
        .expect("read");
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(
        store
            .get_push_config(&owner, &head.task.id, "cfg")
            .await
            .expect("get"),
        Some(config)
    );
    let jobs = store
        .receive(QueueName::Work, 10, LONG)
        .await
        .expect("receive");
    assert_eq!(jobs.len(), 1);
    let job: WorkJob = serde_json::from_str(&jobs[0].body).expect("work job body");
    assert_eq!(job, work_job(&head.task.id));
    assert!(!store
        .acquire_lease(&head.task.id, "w2", in_hours(1))
        .await
        .expect("lease"));
}

#[tokio::test]
async fn open_fails_cleanly_when_the_data_dir_is_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").expect("write");
    assert!(matches!(
        SqliteStore::open(&file),
        Err(StoreError::Backend(_))
    ));
}

#[test]
fn concurrent_opens_of_a_new_file_agree_on_the_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let path = dir.path().to_owned();
            std::thread::spawn(move || SqliteStore::open(&path).map(|_| ()))
        })
        .collect();
    for t in threads {
        t.join().expect("thread").expect("open");
    }
}

/// Two stores on one file stand in for two processes: writers on both, each retrying after a
/// `Conflict`, never lose or duplicate an event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_file_never_lose_an_event() {
    const PER_WRITER: usize = 10;
    let dir = tempfile::tempdir().expect("tempdir");
    let a = SqliteStore::open(dir.path()).expect("open a");
    let b = SqliteStore::open(dir.path()).expect("open b");
    let owner = owner();
    let (head, events) = new_task(&owner, in_hours(1));
    a.create_task(&head, &events).await.expect("create");
    let task_id = head.task.id.clone();

    let mut writers = Vec::new();
    for (w, store) in [a.clone(), b.clone(), a.clone(), b.clone()]
        .into_iter()
        .enumerate()
    {
        let owner = owner.clone();
        let task_id = task_id.clone();
        writers.push(tokio::spawn(async move {
            for n in 0..PER_WRITER {
                loop {
                    let current = store
                        .load_task(&owner, &task_id)
                        .await
                        .expect("load")
                        .expect("exists");
                    let (new_head, events) = next(&current, &format!("w{w}-{n}"));
                    match store
                        .append_events(&new_head, current.version, &events)
                        .await
                    {
                        Ok(()) => break,
                        Err(StoreError::Conflict) => tokio::task::yield_now().await,
                        Err(e) => panic!("append: {e}"),
                    }
                }
            }
        }));
    }
    for w in writers {
        w.await.expect("writer");
    }
    let total = 1 + 4 * PER_WRITER as u64;
    for store in [&a, &b] {
        let events = store
            .read_events(&owner, &task_id, 0, 1_000)
            .await
            .expect("read");
        assert_eq!(
            events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            (1..=total).collect::<Vec<_>>()
        );
        let loaded = store
            .load_task(&owner, &task_id)
            .await
            .expect("load")
            .expect("exists");
        assert_eq!(loaded.version, total);
        assert_eq!(loaded.task.artifacts.len(), 4 * PER_WRITER);
    }
}

#[tokio::test]
async fn create_and_append_refuse_a_broken_sequence() {
    let (_dir, store) = open();
    let owner = owner();
    let (mut head, events) = new_task(&owner, in_hours(1));
    head.version = 2;
    assert!(matches!(
        store.create_task(&head, &events).await,
        Err(StoreError::Backend(_))
    ));
    head.version = 1;
    store.create_task(&head, &events).await.expect("create");
    let (new_head, mut events) = next(&head, "a");
    events[0].seq = 5;
    assert!(matches!(
        store.append_events(&new_head, 1, &events).await,
        Err(StoreError::Backend(_))
    ));
    assert_eq!(
        store
            .read_events(&owner, &head.task.id, 0, 10)
            .await
            .expect("read")
            .len(),
        1
    );
}

#[tokio::test]
async fn work_queue_receive_visibility_retry_delete_and_dead_letter() {
    let (_dir, store) = open();
    for id in ["j1", "j2", "j3"] {
        store.enqueue_work(&work_job(id)).await.expect("enqueue");
    }
    let body_task = |body: &str| serde_json::from_str::<WorkJob>(body).expect("body").task_id;

    // Oldest first, at most `max`, each claimed once.
    let first = store
        .receive(QueueName::Work, 2, LONG)
        .await
        .expect("receive");
    assert_eq!(
        first.iter().map(|j| body_task(&j.body)).collect::<Vec<_>>(),
        ["j1", "j2"]
    );
    assert!(first.iter().all(|j| j.receive_count == 1));
    let second = store
        .receive(QueueName::Work, 10, LONG)
        .await
        .expect("receive");
    assert_eq!(second.len(), 1);
    assert_eq!(body_task(&second[0].body), "j3");
    assert!(store
        .receive(QueueName::Work, 10, LONG)
        .await
        .expect("receive")
        .is_empty());
    // The push queue is separate.
    assert!(store
        .receive(QueueName::Push, 10, LONG)
        .await
        .expect("receive")
        .is_empty());

    // A retry makes the job visible again after its delay (zero here), counting receives.
    store
        .retry_job(first[0].id, Duration::ZERO)
        .await
        .expect("retry");
    let again = store
        .receive(QueueName::Work, 10, LONG)
        .await
        .expect("receive");
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, first[0].id);
    assert_eq!(again[0].receive_count, 2);
    // A retry with a delay keeps it hidden.
    store.retry_job(first[0].id, LONG).await.expect("retry");
    assert!(store
        .receive(QueueName::Work, 10, LONG)
        .await
        .expect("receive")
        .is_empty());

    // A visibility timeout that has passed hands the job out again (at least once delivery).
    store.delete_job(first[1].id).await.expect("delete");
    store
        .retry_job(second[0].id, Duration::ZERO)
        .await
        .expect("retry");
    let lapsed = store
        .receive(QueueName::Work, 10, Duration::ZERO)
        .await
        .expect("receive");
    assert_eq!(lapsed.len(), 1);
    let redelivered = store
        .receive(QueueName::Work, 10, LONG)
        .await
        .expect("receive");
    assert_eq!(redelivered.len(), 1);
    assert_eq!(redelivered[0].id, second[0].id);
    assert_eq!(redelivered[0].receive_count, 3);

    // Dead letters leave the queue with their reason.
    store
        .dead_letter(second[0].id, "failed 3 times")
        .await
        .expect("dead letter");
    store
        .retry_job(first[0].id, Duration::ZERO)
        .await
        .expect("retry");
    let left = store
        .receive(QueueName::Work, 10, LONG)
        .await
        .expect("receive");
    assert_eq!(left.len(), 1);
    assert_eq!(body_task(&left[0].body), "j1");
    let dead = store
        .dead_letters(QueueName::Work)
        .await
        .expect("dead letters");
    assert_eq!(dead.len(), 1);
    assert_eq!(body_task(&dead[0].0), "j3");
    assert_eq!(dead[0].1, "failed 3 times");
    assert!(store
        .dead_letters(QueueName::Push)
        .await
        .expect("dead letters")
        .is_empty());

    // Settling a job that is gone is not an error.
    store.delete_job(first[1].id).await.expect("delete again");
    store
        .retry_job(first[1].id, Duration::ZERO)
        .await
        .expect("retry gone");
    store
        .dead_letter(first[1].id, "gone")
        .await
        .expect("dead letter gone");
    assert_eq!(
        store.dead_letters(QueueName::Work).await.expect("dl").len(),
        1
    );
    assert!(store
        .receive(QueueName::Work, 0, LONG)
        .await
        .expect("receive none")
        .is_empty());
}

#[tokio::test]
async fn push_queue_deduplicates_and_keeps_each_task_in_order() {
    let (_dir, store) = open();
    store
        .enqueue_push(&[
            push_job("t1", 1),
            push_job("t1", 2),
            push_job("t2", 1),
            push_job("t1", 1),
        ])
        .await
        .expect("enqueue");
    // A repeated job in a later call is dropped too.
    store
        .enqueue_push(&[push_job("t1", 2)])
        .await
        .expect("enqueue");
    store.enqueue_push(&[]).await.expect("enqueue nothing");

    // Only the oldest job of each task is handed out.
    let first = store
        .receive(QueueName::Push, 10, LONG)
        .await
        .expect("receive");
    let got: Vec<(String, u64)> = first
        .iter()
        .map(|j| as_push(&j.body))
        .map(|j| (j.task_id, j.seq))
        .collect();
    assert_eq!(got, [("t1".to_owned(), 1), ("t2".to_owned(), 1)]);
    // While t1/1 is in flight, t1/2 waits.
    assert!(store
        .receive(QueueName::Push, 10, LONG)
        .await
        .expect("receive")
        .is_empty());
    // A retry keeps the order: t1/1 comes back before t1/2.
    store
        .retry_job(first[0].id, Duration::ZERO)
        .await
        .expect("retry");
    let again = store
        .receive(QueueName::Push, 10, LONG)
        .await
        .expect("receive");
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, first[0].id);
    assert_eq!(again[0].receive_count, 2);

    // Once t1/1 is done, t1/2 follows.
    store.delete_job(first[0].id).await.expect("delete");
    let next = store
        .receive(QueueName::Push, 10, LONG)
        .await
        .expect("receive");
    assert_eq!(next.len(), 1);
    assert_eq!(as_push(&next[0].body), push_job("t1", 2));

    // De-duplication outlives delivery, as in SQS FIFO's window.
    store
        .enqueue_push(&[push_job("t1", 1)])
        .await
        .expect("enqueue");
    store.delete_job(next[0].id).await.expect("delete");
    store.delete_job(first[1].id).await.expect("delete");
    assert!(store
        .receive(QueueName::Push, 10, LONG)
        .await
        .expect("receive")
        .is_empty());

    // A dead-lettered job unblocks the jobs behind it.
    store
        .enqueue_push(&[push_job("t3", 1), push_job("t3", 2)])
        .await
        .expect("enqueue");
    let head = store
        .receive(QueueName::Push, 10, LONG)
        .await
        .expect("receive");
    assert_eq!(head.len(), 1);
    store
        .dead_letter(head[0].id, "webhook said 500")
        .await
        .expect("dead letter");
    let behind = store
        .receive(QueueName::Push, 10, LONG)
        .await
        .expect("receive");
    assert_eq!(behind.len(), 1);
    assert_eq!(as_push(&behind[0].body), push_job("t3", 2));
    let dead = store
        .dead_letters(QueueName::Push)
        .await
        .expect("dead letters");
    assert_eq!(
        dead,
        [(
            serde_json::to_string(&push_job("t3", 1)).expect("json"),
            "webhook said 500".to_owned()
        )]
    );
}

#[tokio::test]
async fn wait_for_job_wakes_on_enqueue_and_times_out_when_idle() {
    let (_dir, store) = open();
    let waiter = tokio::spawn({
        let store = store.clone();
        async move { store.wait_for_job(QueueName::Work, LONG).await }
    });
    store.enqueue_work(&work_job("t")).await.expect("enqueue");
    tokio::time::timeout(PATIENCE, waiter)
        .await
        .expect("woken by the enqueue")
        .expect("waiter");

    // A job already waiting: no wait at all.
    tokio::time::timeout(PATIENCE, store.wait_for_job(QueueName::Work, LONG))
        .await
        .expect("returns at once");

    // Nothing eligible on the push queue: returns after max_wait.
    let started = std::time::Instant::now();
    store
        .wait_for_job(QueueName::Push, Duration::from_millis(300))
        .await;
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn wait_for_append_wakes_on_an_append() {
    let (_dir, store) = open();
    let owner = owner();
    let (head, events) = new_task(&owner, in_hours(1));
    store.create_task(&head, &events).await.expect("create");

    let waiter = tokio::spawn({
        let store = store.clone();
        let task_id = head.task.id.clone();
        async move { store.wait_for_append(&task_id, 1, LONG).await }
    });
    let head = append(&store, &head, "a").await;
    tokio::time::timeout(PATIENCE, waiter)
        .await
        .expect("woken by the append")
        .expect("waiter");

    // Already past the version: returns at once.
    tokio::time::timeout(PATIENCE, store.wait_for_append(&head.task.id, 1, LONG))
        .await
        .expect("returns at once");

    // Nothing new: returns after max_wait.
    let started = std::time::Instant::now();
    store
        .wait_for_append(&head.task.id, head.version, Duration::from_millis(300))
        .await;
    assert!(started.elapsed() >= Duration::from_millis(300));
}

/// Another store on the file (another process) cannot signal this one: the poll notices.
#[tokio::test]
async fn wait_for_append_notices_appends_from_another_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = SqliteStore::open(dir.path()).expect("open a");
    let b = SqliteStore::open(dir.path()).expect("open b");
    let owner = owner();
    let (head, events) = new_task(&owner, in_hours(1));
    a.create_task(&head, &events).await.expect("create");

    let waiter = tokio::spawn({
        let a = a.clone();
        let task_id = head.task.id.clone();
        async move { a.wait_for_append(&task_id, 1, LONG).await }
    });
    append(&b, &head, "from b").await;
    tokio::time::timeout(PATIENCE, waiter)
        .await
        .expect("noticed by polling")
        .expect("waiter");
}

#[tokio::test]
async fn purge_removes_only_expired_items_and_frees_the_id() {
    let (_dir, store) = open();
    let owner = owner();
    let past = Timestamp::from_millis(Timestamp::now().millis() - 1_000);
    let (expired, events) = new_task(&owner, past);
    store
        .create_task(&expired, &events)
        .await
        .expect("create expired");
    let (live, events) = new_task(&owner, in_hours(1));
    store
        .create_task(&live, &events)
        .await
        .expect("create live");
    let config = |task_id: &str| TaskPushNotificationConfig {
        id: "cfg".into(),
        task_id: task_id.into(),
        url: "https://example.com/hook".into(),
        ..Default::default()
    };
    store
        .put_push_config(&owner, &config(&expired.task.id), past)
        .await
        .expect("put");
    store
        .put_push_config(&owner, &config(&live.task.id), in_hours(1))
        .await
        .expect("put");

    assert_eq!(store.purge_expired().await.expect("purge"), 1);
    assert_eq!(store.purge_expired().await.expect("purge again"), 0);
    assert!(store
        .load_task(&owner, &live.task.id)
        .await
        .expect("load")
        .is_some());
    assert!(store
        .get_push_config(&owner, &live.task.id, "cfg")
        .await
        .expect("get")
        .is_some());

    // An expired task's id is free again, purged or not.
    let (mut reused, events) = new_task(&owner, in_hours(1));
    reused.task.id = expired.task.id.clone();
    let events = vec![LoggedEvent {
        event: TaskEvent::Created {
            task: reused.task.clone(),
        },
        ..events[0].clone()
    }];
    store.create_task(&reused, &events).await.expect("reuse id");
    let (stale, events) = new_task(&owner, past);
    store
        .create_task(&stale, &events)
        .await
        .expect("create stale");
    let (mut again, events) = new_task(&owner, in_hours(1));
    again.task.id = stale.task.id.clone();
    store
        .create_task(&again, &events)
        .await
        .expect("reuse unpurged id");
    assert_eq!(
        store
            .read_events(&owner, &stale.task.id, 0, 10)
            .await
            .expect("read")
            .len(),
        1
    );
}

#[tokio::test]
async fn clones_share_one_store() {
    let (_dir, store) = open();
    let clone = store.clone();
    let owner = owner();
    let (head, events) = new_task(&owner, in_hours(1));
    clone.create_task(&head, &events).await.expect("create");
    assert!(store
        .load_task(&owner, &head.task.id)
        .await
        .expect("load")
        .is_some());
    let shared: Arc<dyn TaskStore> = Arc::new(store);
    assert!(shared
        .load_task(&owner, &head.task.id)
        .await
        .expect("load")
        .is_some());
}

/// A file written by schema version 1 (before push delivery records) is upgraded in place when
/// it is opened, and keeps its data.
#[tokio::test]
async fn a_version_1_file_is_upgraded_to_hold_push_delivery_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let owner = owner();
    let (head, events) = new_task(&owner, in_hours(1));
    {
        let store = SqliteStore::open(dir.path()).expect("open");
        store.create_task(&head, &events).await.expect("create");
    }
    {
        // Roll the file back to what version 1 wrote.
        let conn = rusqlite::Connection::open(dir.path().join(DB_FILE_NAME)).expect("sqlite");
        conn.execute_batch("DROP TABLE push_deliveries; PRAGMA user_version = 1;")
            .expect("downgrade");
    }
    let store = SqliteStore::open(dir.path()).expect("reopen");
    assert!(store
        .load_task(&owner, &head.task.id)
        .await
        .expect("load")
        .is_some());
    let attempt = a2a_core::PushAttempt {
        seq: 1,
        at: Timestamp::now(),
        result: a2a_core::PushAttemptResult::Delivered,
        http_status: Some(200),
        error: None,
        final_attempt: false,
        number: 1,
    };
    store
        .record_push_attempt(&owner, &head.task.id, "c1", &attempt, in_hours(1))
        .await
        .expect("record");
    let record = store
        .get_push_delivery(&owner, &head.task.id, "c1")
        .await
        .expect("read")
        .expect("a record");
    assert_eq!(record.delivered, 1);
}

/// The purge leaves an expired inline lease to the sweep (it is how the sweep finds a task
/// whose execution died), and deletes an expired queued lease as before.
#[tokio::test]
async fn purge_keeps_expired_inline_leases_for_the_sweep() {
    let (_dir, store) = open();
    let owner = owner();
    let past = Timestamp::from_millis(Timestamp::now().millis() - 1_000);
    let (inline, queued) = (unique("task"), unique("task"));
    assert!(store
        .acquire_inline_lease(&owner, &inline, "gone", past)
        .await
        .expect("lease"));
    assert!(store
        .acquire_lease(&queued, "gone", past)
        .await
        .expect("lease"));
    store.purge_expired().await.expect("purge");
    let listed = store
        .list_expired_inline_leases(Timestamp::now(), 10)
        .await
        .expect("list");
    assert_eq!(
        listed
            .iter()
            .map(|l| l.task_id.as_str())
            .collect::<Vec<_>>(),
        [inline.as_str()]
    );
    // The queued one was purged: another holder takes it at once, as before.
    assert!(store
        .acquire_lease(&queued, "next", in_hours(1))
        .await
        .expect("lease"));
}

/// ListTasks' `totalSize` of an owner, unfiltered and of one state.
async fn totals(store: &SqliteStore, owner: &Owner) -> (usize, usize) {
    let all = a2a_core::TaskQuery {
        page_size: 1,
        ..Default::default()
    };
    let working = a2a_core::TaskQuery {
        state: Some(TaskState::Working),
        ..all.clone()
    };
    (
        store
            .list_tasks(owner, &all)
            .await
            .expect("list")
            .total_size,
        store
            .list_tasks(owner, &working)
            .await
            .expect("list")
            .total_size,
    )
}

/// The purge deletes expired rows, which the kept counts still held: `totalSize` is the same
/// before and after it.
#[tokio::test]
async fn total_size_is_the_same_before_and_after_the_purge() {
    let (_dir, store) = open();
    let owner = owner();
    let past = Timestamp::from_millis(Timestamp::now().millis() - 1_000);
    for expires_at in [past, past, in_hours(1), in_hours(1), in_hours(1)] {
        let (head, events) = new_task(&owner, expires_at);
        store.create_task(&head, &events).await.expect("create");
    }
    assert_eq!(totals(&store, &owner).await, (3, 3));
    assert_eq!(store.purge_expired().await.expect("purge"), 2);
    assert_eq!(totals(&store, &owner).await, (3, 3));
}

/// A file written before the kept counts (schema version 6) gets them when it is opened,
/// taken from the tasks it holds, and keeps them from then on.
#[tokio::test]
async fn a_version_6_file_is_upgraded_with_the_counts_of_its_tasks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let owner = owner();
    {
        let store = SqliteStore::open(dir.path()).expect("open");
        for _ in 0..3 {
            let (head, events) = new_task(&owner, in_hours(1));
            store.create_task(&head, &events).await.expect("create");
        }
    }
    {
        // Roll the file back to what version 6 wrote: no counts, no triggers (its expiry
        // index is version 10's again).
        let conn = rusqlite::Connection::open(dir.path().join(DB_FILE_NAME)).expect("sqlite");
        conn.execute_batch(
            "DROP TRIGGER task_counts_delete; DROP TRIGGER task_counts_update;
             DROP TABLE task_counts; DROP TABLE task_counts_mark;
             PRAGMA user_version = 6;",
        )
        .expect("downgrade");
    }
    let store = SqliteStore::open(dir.path()).expect("reopen");
    assert_eq!(totals(&store, &owner).await, (3, 3));
    let (head, events) = new_task(&owner, in_hours(1));
    store.create_task(&head, &events).await.expect("create");
    assert_eq!(totals(&store, &owner).await, (4, 4));
}

/// `create_tasks` writes every task of a batch as `create_task` would, or none of them when
/// one id is taken.
#[tokio::test]
async fn create_tasks_writes_all_of_a_batch_or_none() {
    let (_dir, store) = open();
    let owner = owner();
    let batch: Vec<_> = (0..3).map(|_| new_task(&owner, in_hours(1))).collect();
    store.create_tasks(&batch).await.expect("create_tasks");
    for (head, events) in &batch {
        assert_eq!(
            store.load_task(&owner, &head.task.id).await.expect("load"),
            Some(head.clone())
        );
        assert_eq!(
            &store
                .read_events(&owner, &head.task.id, 0, 10)
                .await
                .expect("read"),
            events
        );
    }
    let fresh = new_task(&owner, in_hours(1));
    let taken = batch[1].clone();
    assert_eq!(
        store.create_tasks(&[fresh.clone(), taken]).await,
        Err(StoreError::Conflict)
    );
    assert_eq!(
        store
            .load_task(&owner, &fresh.0.task.id)
            .await
            .expect("load"),
        None
    );
    assert_eq!(totals(&store, &owner).await, (3, 3));
}
