//! Large tasks on DynamoDB (moto's server): once a task's body passes a few KB it moves into a
//! body item of its own, and an append rewrites a small head. Checked here: the task and its
//! log read back whole after a long stream into a large task, from a store that wrote it and
//! from one that did not (no cached head); ListTasks returns it whole; a writer that loses the
//! race for the head leaves the task as the winner wrote it; moving the expiry writes a body
//! that lives as long; the stream's fan-out sees every write's new events; and what each
//! append costs stays small (the cost test has the figures).

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

mod common;

use a2a_aws::fanout::{appended_in_records, passes_filter, Checkpoints, StreamPoller};
use a2a_aws::{DynamoTaskStore, Meter, Summary};
use a2a_core::{LoggedEvent, Owner, StoreError, StoredTask, TaskEvent, TaskLogStore, TaskQuery};
use a2a_protocol::{Artifact, Part, Task, TaskArtifactUpdateEvent, TaskState, Timestamp};
use common::Env;

/// `len` characters that deflate cannot shrink much.
fn noise(len: usize, seed: u64) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ALPHABET[(state % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

fn artifact_event(task: &Task, id: &str, text: String, append: bool) -> TaskEvent {
    TaskEvent::Artifact {
        update: TaskArtifactUpdateEvent {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            artifact: Artifact {
                artifact_id: id.into(),
                parts: vec![Part::text(text)],
                ..Default::default()
            },
            append,
            ..Default::default()
        },
    }
}

/// Appends `events` to `head` through `store`: the new head, and the events as logged.
async fn append(
    store: &DynamoTaskStore,
    head: &StoredTask,
    events: Vec<TaskEvent>,
) -> Result<(StoredTask, Vec<LoggedEvent>), StoreError> {
    let mut next = head.clone();
    let mut logged = Vec::new();
    for event in events {
        event.apply(&mut next.task).unwrap();
        next.version += 1;
        // As the log writes a head: its generation (A2A 1.1) is its version.
        next.task.generation = next.version as i64;
        logged.push(LoggedEvent {
            seq: next.version,
            at: Timestamp::now(),
            event,
        });
    }
    store.append_events(&next, head.version, &logged).await?;
    Ok((next, logged))
}

/// How many items of each kind the task's partition holds: bodies (`B#`), archives (`E#`).
async fn items_of(env: &Env, task_id: &str) -> (usize, usize) {
    let items = env.partition(format!("T#{task_id}")).await;
    let sks: Vec<String> = items
        .iter()
        .filter_map(|i| i.get("sk")?.as_s().ok().cloned())
        .collect();
    (
        sks.iter().filter(|k| k.starts_with("B#")).count(),
        sks.iter().filter(|k| k.starts_with("E#")).count(),
    )
}

#[tokio::test]
async fn a_long_stream_into_a_large_task_reads_back_whole_and_appends_stay_small() {
    let Some(env) = Env::new().await else {
        return;
    };
    let meter = Meter::new();
    let store = env.store().with_meter(meter.clone());
    let owner = Owner::anonymous("");
    let expires = Timestamp::from_millis(Timestamp::now().millis() + 3_600_000);
    let (head, events) = a2a_store_contract::new_task(
        &owner,
        &a2a_core::new_id(),
        &a2a_core::new_id(),
        TaskState::Working,
        Timestamp::now(),
        expires,
    );
    store.create_task(&head, &events).await.unwrap();
    let mut log = events;
    // 100 KB that does not compress: the task's body moves out of its head.
    let big = artifact_event(&head.task, "big", noise(100 * 1024, 7), false);
    let (mut head, logged) = append(&store, &head, vec![big]).await.unwrap();
    log.extend(logged);
    assert_eq!(items_of(&env, &head.task.id).await.0, 1, "one body item");
    // A long stream of small chunks into another artifact.
    meter.take();
    let mut per_append = Vec::new();
    for i in 0..150 {
        let chunk = artifact_event(&head.task, "tail", format!("chunk {i}, "), i > 0);
        let (next, logged) = append(&store, &head, vec![chunk]).await.unwrap();
        head = next;
        log.extend(logged);
        per_append.push(Summary::of(&meter.take()).estimated_wru);
    }
    // After the first (which drops the big event from the head, into its archive), each
    // append writes a small head: one write unit, or a new body now and then.
    let steady: Vec<f64> = per_append[1..].to_vec();
    let small = steady.iter().filter(|w| **w <= 2.0).count();
    assert!(small * 10 >= steady.len() * 9, "appends: {per_append:?}");
    let total: f64 = steady.iter().sum();
    assert!(
        total < 100.0 * steady.len() as f64 / 10.0,
        "149 appends to a 100 KB task cost {total} WRU"
    );

    // Read back, by this store and by one that never saw the task.
    for reader in [store.clone(), env.store()] {
        let loaded = reader
            .load_task(&owner, &head.task.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(loaded, head);
        let read = reader
            .read_events(&owner, &head.task.id, 0, 10_000)
            .await
            .unwrap();
        assert_eq!(read, log, "the whole log, in order, once");
        let from = reader
            .read_events(&owner, &head.task.id, 100, 5)
            .await
            .unwrap();
        assert_eq!(from, log[100..105]);
    }
    let page = store
        .list_tasks(
            &owner,
            &TaskQuery {
                page_size: 10,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(page.tasks, vec![head.task.clone()]);

    // A writer that did not see the last append (another instance) appends too: it reads the
    // head, and its append lands on the current version.
    let other = env.store();
    let (head2, logged) = append(
        &other,
        &head,
        vec![artifact_event(
            &head.task,
            "tail",
            "from elsewhere".into(),
            true,
        )],
    )
    .await
    .unwrap();
    log.extend(logged);
    assert_eq!(
        store
            .load_task(&owner, &head.task.id)
            .await
            .unwrap()
            .unwrap(),
        head2
    );
    assert_eq!(
        store
            .read_events(&owner, &head.task.id, 0, 10_000)
            .await
            .unwrap(),
        log
    );
    env.cleanup().await;
}

#[tokio::test]
async fn a_writer_that_loses_the_race_leaves_the_task_as_the_winner_wrote_it() {
    let Some(env) = Env::new().await else {
        return;
    };
    let owner = Owner::anonymous("");
    let (head, events) = a2a_store_contract::new_task(
        &owner,
        &a2a_core::new_id(),
        &a2a_core::new_id(),
        TaskState::Working,
        Timestamp::now(),
        Timestamp::from_millis(Timestamp::now().millis() + 3_600_000),
    );
    let (a, b) = (env.store(), env.store());
    a.create_task(&head, &events).await.unwrap();
    let big = artifact_event(&head.task, "big", noise(50 * 1024, 3), false);
    let (head, _) = append(&a, &head, vec![big]).await.unwrap();
    b.load_task(&owner, &head.task.id).await.unwrap();
    // Both append a large event at the same version: each writes a body first (its own), and
    // only one head write wins.
    let mine = artifact_event(&head.task, "a", noise(40 * 1024, 11), false);
    let theirs = artifact_event(&head.task, "b", noise(40 * 1024, 13), false);
    let (won, _) = append(&a, &head, vec![mine]).await.unwrap();
    let lost = append(&b, &head, vec![theirs]).await;
    assert!(matches!(lost, Err(StoreError::Conflict)), "{lost:?}");
    for reader in [a.clone(), b.clone(), env.store()] {
        let loaded = reader
            .load_task(&owner, &head.task.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(loaded, won, "the winner's task, not the loser's body");
    }
    env.cleanup().await;
}

#[tokio::test]
async fn a_moved_expiry_writes_a_body_that_lives_as_long_and_the_fan_out_sees_each_write() {
    let Some(env) = Env::new().await else {
        return;
    };
    let store = env.store();
    let owner = Owner::anonymous("");
    let (head, events) = a2a_store_contract::new_task(
        &owner,
        &a2a_core::new_id(),
        &a2a_core::new_id(),
        TaskState::Working,
        Timestamp::now(),
        Timestamp::from_millis(Timestamp::now().millis() + 3_600_000),
    );
    let config = a2a_protocol::TaskPushNotificationConfig {
        id: "hook".into(),
        task_id: head.task.id.clone(),
        url: "https://receiver.example/ok".into(),
        ..Default::default()
    };
    store
        .create_task_with_push_configs(&head, &events, &[config])
        .await
        .unwrap();
    let big = artifact_event(&head.task, "big", noise(30 * 1024, 5), false);
    let (head, _) = append(&store, &head, vec![big]).await.unwrap();
    let (head, _) = append(
        &store,
        &head,
        vec![artifact_event(&head.task, "tail", "one".into(), false)],
    )
    .await
    .unwrap();
    let bodies_before = items_of(&env, &head.task.id).await.0;
    // The core moves a task's expiry forward now and then: the body must live as long.
    let mut later = head.clone();
    later.expires_at = Timestamp::from_millis(head.expires_at.millis() + 86_400_000);
    let (mut moved, _) = append(
        &store,
        &later,
        vec![artifact_event(&head.task, "tail", " two".into(), true)],
    )
    .await
    .unwrap();
    moved.expires_at = later.expires_at;
    assert_eq!(
        items_of(&env, &head.task.id).await.0,
        bodies_before + 1,
        "a new body"
    );
    // The head now names a body that expires with it (TTL may remove the old one once its
    // own expiry passes).
    let get = |sk: String| {
        let env = &env;
        let pk = format!("T#{}", head.task.id);
        async move {
            env.clients
                .dynamodb
                .get_item()
                .table_name(&env.config.table)
                .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(pk))
                .key("sk", aws_sdk_dynamodb::types::AttributeValue::S(sk))
                .consistent_read(true)
                .send()
                .await
                .unwrap()
                .item
                .unwrap()
        }
    };
    let head_item = get("H".into()).await;
    let body_item = get(head_item["bsk"].as_s().unwrap().clone()).await;
    assert_eq!(body_item["exp"], head_item["exp"]);
    assert_eq!(
        head_item["exp"].as_n().unwrap(),
        &later.expires_at.millis().to_string()
    );
    let loaded = env
        .store()
        .load_task(&owner, &head.task.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(loaded.expires_at, later.expires_at);
    assert_eq!(loaded.task, moved.task);

    // Every write's new events reach the fan-out, from the head's stream records.
    let mut poller = StreamPoller::from_env(&env.config.table, Checkpoints::Memory)
        .await
        .unwrap();
    let mut records = Vec::new();
    while let Some(batch) = poller.next_batch().await.unwrap() {
        records.extend(batch.records.iter().cloned());
        poller.commit(&batch).await.unwrap();
    }
    let passed: Vec<_> = records.into_iter().filter(passes_filter).collect();
    let writes = appended_in_records(&passed);
    let seqs: Vec<u64> = writes
        .iter()
        .flat_map(|w| w.events.iter().map(|e| e.seq))
        .collect();
    assert_eq!(seqs, (1..=moved.version).collect::<Vec<_>>(), "{writes:?}");
    env.cleanup().await;
}
