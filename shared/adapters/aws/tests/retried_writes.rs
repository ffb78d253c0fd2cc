//! An append the SDK sent twice: an attempt that got no answer in time is tried again, though the
//! first may have landed (DynamoDB, or moto under load, answered after the attempt's timeout).
//! The retry then fails its own condition. The store must take it for the write it is, not for
//! another writer's: the core would otherwise write the same events again on top of themselves
//! (a streamed chunk twice in the artifact, seen on a loaded emulator).

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2a_aws::DynamoTaskStore;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use a2a_core::{
    DurableExecution, ExecutionStore, LoggedEvent, Owner, StoreError, StoredTask, TaskEvent,
    TaskLogStore, TaskQuery,
};
use a2a_protocol::{Artifact, Part, TaskArtifactUpdateEvent, TaskState, Timestamp};
use common::Env;

/// A working task of `owner`, an hour from expiry (the store contract's, as the core makes it).
fn new_task(owner: &Owner) -> (StoredTask, Vec<LoggedEvent>) {
    let now = Timestamp::now();
    a2a_store_contract::new_task(
        owner,
        &a2a_core::new_id(),
        &a2a_core::new_id(),
        TaskState::Working,
        now,
        Timestamp::from_millis(now.millis() + 3_600_000),
    )
}

fn chunk(head: &StoredTask, text: &str) -> (StoredTask, Vec<LoggedEvent>) {
    let update = TaskArtifactUpdateEvent {
        task_id: head.task.id.clone(),
        context_id: head.task.context_id.clone(),
        artifact: Artifact {
            artifact_id: "out".into(),
            parts: vec![Part::text(text)],
            ..Default::default()
        },
        append: true,
        ..Default::default()
    };
    let event = TaskEvent::Artifact { update };
    let mut next = head.clone();
    event.apply(&mut next.task).expect("applies");
    next.version += 1;
    let logged = vec![LoggedEvent {
        seq: next.version,
        at: Timestamp::now(),
        event,
    }];
    (next, logged)
}

#[tokio::test]
async fn an_append_sent_twice_is_one_append_and_another_writer_still_conflicts() {
    let Some(env) = Env::new().await else {
        return;
    };
    let store = env.store();
    let owner = Owner::new("", &a2a_core::new_id());

    let (head, events) = new_task(&owner);
    store.create_task(&head, &events).await.expect("create");

    // An append, then the same append again: its chunk once in the log.
    let (next, logged) = chunk(&head, "one ");
    store
        .append_events(&next, head.version, &logged)
        .await
        .expect("append");
    assert_eq!(
        store.append_events(&next, head.version, &logged).await,
        Ok(())
    );
    // Another writer's append at that version is still a conflict, and changes nothing.
    let (theirs, their_events) = chunk(&head, "two ");
    assert_eq!(
        store
            .append_events(&theirs, head.version, &their_events)
            .await,
        Err(StoreError::Conflict)
    );
    let loaded = store
        .load_task(&owner, &head.task.id)
        .await
        .expect("load")
        .expect("the task");
    assert_eq!(loaded.version, next.version);
    assert_eq!(loaded.task.artifacts, next.task.artifacts, "the chunk once");
    let log = store
        .read_events(&owner, &head.task.id, 0, 100)
        .await
        .expect("read");
    assert_eq!(log.len(), 2, "created and one chunk: {log:?}");
    env.cleanup().await;
}

/// A proxy in front of the emulator that lets the first call of `operation` (`updateitem`,
/// `putitem`) after `hold` is set through to it and then keeps the answer back until the
/// client's attempt has timed out: the write lands, and the SDK tries it again on a new
/// connection, as on a connection that went stale.
async fn answer_losing_proxy(emulator: &str, operation: &'static str) -> (String, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let hold = Arc::new(AtomicBool::new(false));
    let upstream = emulator
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let held = hold.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let (upstream, held) = (upstream.clone(), held.clone());
            tokio::spawn(async move {
                let Some(request) = read_request(&mut client).await else {
                    return;
                };
                let text = String::from_utf8_lossy(&request).to_ascii_lowercase();
                let keep_back = text
                    .contains(&format!("x-amz-target: dynamodb_20120810.{operation}\r\n"))
                    && held.swap(false, Ordering::SeqCst);
                let Ok(mut server) = TcpStream::connect(&upstream).await else {
                    return;
                };
                let mut answer = Vec::new();
                if server.write_all(&request).await.is_err()
                    || server.read_to_end(&mut answer).await.is_err()
                {
                    return;
                }
                if keep_back {
                    // Past the client's attempt timeout, then nothing.
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                    return;
                }
                let _ = client.write_all(&answer).await;
            });
        }
    });
    (format!("http://{address}"), hold)
}

/// One HTTP request: its head and its `content-length` body.
async fn read_request(client: &mut TcpStream) -> Option<Vec<u8>> {
    let mut request = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = client.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        request.extend_from_slice(&buf[..n]);
        if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if request.len() >= end + 4 + length {
                return Some(request);
            }
        }
    }
}

/// A store on `env`'s table whose client reaches the emulator through an
/// [`answer_losing_proxy`] for `operation`, with attempts short enough to time out on it.
async fn answer_losing_store(
    env: &Env,
    operation: &'static str,
) -> (DynamoTaskStore, Arc<AtomicBool>) {
    let emulator = std::env::var("AWS_ENDPOINT_URL").expect("the emulator's address");
    let (proxy, hold) = answer_losing_proxy(&emulator, operation).await;
    let sdk = a2a_test_support::emulator("a2a-aws")
        .await
        .expect("emulator");
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .endpoint_url(proxy)
        .timeout_config(
            TimeoutConfig::builder()
                .operation_attempt_timeout(Duration::from_millis(700))
                .operation_timeout(Duration::from_secs(10))
                .build(),
        )
        .retry_config(RetryConfig::standard().with_max_attempts(3))
        .build();
    let store = DynamoTaskStore::new(
        aws_sdk_dynamodb::Client::from_conf(config),
        &env.config.table,
    );
    (store, hold)
}

/// The owner's task count as ListTasks gives it.
async fn total_size(store: &DynamoTaskStore, owner: &Owner) -> usize {
    let query = TaskQuery {
        page_size: 10,
        ..TaskQuery::default()
    };
    store
        .list_tasks(owner, &query)
        .await
        .expect("list")
        .total_size
}

/// A create the SDK sent twice (issue 52: under faults, a queued task stayed SUBMITTED and a
/// stream's task WORKING for good): its retry finds the task it created, which is the
/// caller's, and counted once.
#[tokio::test]
async fn a_create_whose_answer_was_lost_is_the_callers_task() {
    let Some(env) = Env::new().await else {
        return;
    };
    let (store, hold) = answer_losing_store(&env, "putitem").await;
    let owner = Owner::new("", &a2a_core::new_id());
    let (first, events) = new_task(&owner);
    store.create_task(&first, &events).await.expect("create");
    // The counts are taken as whole once they agree with the index, from this read on.
    assert_eq!(total_size(&store, &owner).await, 1);

    let (head, events) = new_task(&owner);
    hold.store(true, Ordering::SeqCst);
    assert_eq!(
        store.create_task(&head, &events).await,
        Ok(()),
        "the retry finds its own create"
    );
    assert!(!hold.load(Ordering::SeqCst), "the answer was kept back");
    let loaded = env
        .store()
        .load_task(&owner, &head.task.id)
        .await
        .expect("load")
        .expect("the task");
    assert_eq!(loaded.version, head.version);
    assert_eq!(total_size(&store, &owner).await, 2, "counted once, kept");

    // Another writer's create of the same id is still refused, and counts nothing.
    let mut theirs = head.clone();
    theirs.task.status.timestamp = Some(Timestamp::from_millis(1));
    assert_eq!(
        store.create_task(&theirs, &events).await,
        Err(StoreError::Conflict)
    );
    assert_eq!(total_size(&store, &owner).await, 2);
    env.cleanup().await;
}

/// A count write the SDK sent twice: ListTasks' totalSize drifted up under faults (412 for
/// 410 tasks), the `ADD` landing on each attempt.
#[tokio::test]
async fn a_count_whose_answer_was_lost_counts_once() {
    let Some(env) = Env::new().await else {
        return;
    };
    let (store, hold) = answer_losing_store(&env, "updateitem").await;
    let owner = Owner::new("", &a2a_core::new_id());
    let (first, events) = new_task(&owner);
    store.create_task(&first, &events).await.expect("create");
    assert_eq!(total_size(&store, &owner).await, 1);

    // A create is a `PutItem` of the head and an `UpdateItem` of its count.
    let (head, events) = new_task(&owner);
    hold.store(true, Ordering::SeqCst);
    store.create_task(&head, &events).await.expect("create");
    assert!(!hold.load(Ordering::SeqCst), "the answer was kept back");
    assert_eq!(total_size(&store, &owner).await, 2);
    env.cleanup().await;
}

#[tokio::test]
async fn an_append_whose_answer_was_lost_is_written_once() {
    let Some(env) = Env::new().await else {
        return;
    };
    let (store, hold) = answer_losing_store(&env, "updateitem").await;
    let owner = Owner::new("", &a2a_core::new_id());
    let (head, events) = new_task(&owner);
    store.create_task(&head, &events).await.expect("create");

    let (next, logged) = chunk(&head, "one ");
    hold.store(true, Ordering::SeqCst);
    assert_eq!(
        store.append_events(&next, head.version, &logged).await,
        Ok(()),
        "the retry finds its own write"
    );
    assert!(!hold.load(Ordering::SeqCst), "the answer was kept back");
    let log = env
        .store()
        .read_events(&owner, &head.task.id, 0, 100)
        .await
        .expect("read");
    assert_eq!(log.len(), 2, "created and one chunk: {log:?}");
    env.cleanup().await;
}

/// An execution record whose save the SDK sent twice (issue 52: under faults, a delegating
/// task stayed WORKING for good): the retry meets the record it wrote, which is the caller's,
/// not another run's. Taken for another run's, the run stopped, leaving a wait for a message
/// it never sent.
#[tokio::test]
async fn an_execution_record_whose_answer_was_lost_is_saved() {
    let Some(env) = Env::new().await else {
        return;
    };
    let (store, hold) = answer_losing_store(&env, "putitem").await;
    let owner = Owner::new("", &a2a_core::new_id());
    let task_id = a2a_core::new_id();
    let record = |version: u64| DurableExecution {
        owner: owner.clone(),
        task_id: task_id.clone(),
        trigger_seq: 1,
        steps: Vec::new(),
        emitted: version,
        wait: None,
        remotes: Default::default(),
        traceparent: None,
        version,
        expires_at: Timestamp::from_millis(Timestamp::now().millis() + 3_600_000),
    };
    let first = record(1);
    hold.store(true, Ordering::SeqCst);
    assert_eq!(
        store.save_execution(&first, None).await,
        Ok(()),
        "a new record: the retry finds its own write"
    );
    assert!(!hold.load(Ordering::SeqCst), "the answer was kept back");
    let second = record(2);
    hold.store(true, Ordering::SeqCst);
    assert_eq!(
        store.save_execution(&second, Some(1)).await,
        Ok(()),
        "an update: the retry finds its own write"
    );
    assert!(!hold.load(Ordering::SeqCst), "the answer was kept back");
    // Another run's write at a version that passed is still a conflict, and changes nothing.
    assert_eq!(
        store.save_execution(&record(2), Some(1)).await,
        Err(StoreError::Conflict)
    );
    assert_eq!(
        store.save_execution(&first, None).await,
        Err(StoreError::Conflict)
    );
    let loaded = env
        .store()
        .load_execution(&owner, &first.task_id)
        .await
        .expect("load")
        .expect("the record");
    assert_eq!(loaded, second);
    env.cleanup().await;
}
