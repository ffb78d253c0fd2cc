//! The local stream poller with its position kept in the table (what `a2a-local` on DynamoDB
//! runs) goes idle: a position write is itself a record of the stream, so a poller that wrote
//! its position after every batch would read its own write, write again, and never stop
//! (about 16 `UpdateItem`s and 16 `GetRecords` a second against moto, issue 29). Counted here
//! on the stream itself: every write of a position item is a record of it.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use a2a_aws::fanout::{is_checkpoint, poll_once, Checkpoints, Polled, StreamPoller};
use a2a_core::{AppendedEvents, Owner, StoreError, TaskLogStore};
use a2a_protocol::{TaskPushNotificationConfig, TaskState, Timestamp};
use common::Env;

/// Every record the table's stream holds, read from its start by a poller of its own.
async fn all_records(table: &str) -> Vec<serde_json::Value> {
    let mut reader = StreamPoller::from_env(table, Checkpoints::Memory)
        .await
        .expect("the table's stream");
    let mut records = Vec::new();
    while let Some(batch) = reader.next_batch().await.expect("the stream") {
        records.extend(batch.records.iter().cloned());
        reader.commit(&batch).await.expect("a position in memory");
    }
    records
}

#[tokio::test]
async fn a_poller_keeping_its_position_in_the_table_goes_idle() {
    let Some(env) = Env::new().await else {
        return;
    };
    let store = env.store();
    let owner = Owner::anonymous("");
    // A task with a push config: its write is one the poller hands over and then commits.
    let (head, events) = a2a_store_contract::new_task(
        &owner,
        &a2a_core::new_id(),
        &a2a_core::new_id(),
        TaskState::Completed,
        Timestamp::now(),
        Timestamp::from_millis(Timestamp::now().millis() + 3_600_000),
    );
    let config = TaskPushNotificationConfig {
        id: "hook".into(),
        task_id: head.task.id.clone(),
        url: "https://receiver.example/ok".into(),
        ..Default::default()
    };
    store
        .create_task_with_push_configs(&head, &events, &[config])
        .await
        .unwrap();

    let handed = Arc::new(AtomicUsize::new(0));
    let fan_out = {
        let handed = handed.clone();
        move |appended: Vec<AppendedEvents>| {
            let handed = handed.clone();
            async move {
                handed.fetch_add(appended.len(), Ordering::SeqCst);
                Ok::<(), StoreError>(())
            }
        }
    };
    let mut poller = StreamPoller::from_env(&env.config.table, Checkpoints::Table("idle".into()))
        .await
        .expect("the table's stream");
    // The loop of run_stream_fan_out, step by step: the task's write, then at most the one
    // position write it caused, then nothing, however often it polls.
    let steps: Vec<Polled> = {
        let mut steps = Vec::new();
        for _ in 0..12 {
            steps.push(poll_once(&mut poller, &fan_out).await);
        }
        steps
    };
    assert_eq!(handed.load(Ordering::SeqCst), 1, "the task's write, once");
    let busy = steps.iter().take_while(|s| **s == Polled::Handed).count();
    assert!(
        (1..=2).contains(&busy),
        "the task's batch and at most its own position write: {steps:?}"
    );
    assert!(
        steps[busy..].iter().all(|s| *s == Polled::Idle),
        "then idle: {steps:?}"
    );
    let positions = all_records(&env.config.table)
        .await
        .iter()
        .filter(|r| is_checkpoint(r))
        .count();
    assert_eq!(positions, 1, "one position write in 12 polls");

    // A restarted poller goes on after the handed-over write: it hands nothing over again,
    // and writes no position for a batch of position writes.
    let mut restarted =
        StreamPoller::from_env(&env.config.table, Checkpoints::Table("idle".into()))
            .await
            .expect("the table's stream");
    for _ in 0..4 {
        poll_once(&mut restarted, &fan_out).await;
    }
    assert_eq!(
        handed.load(Ordering::SeqCst),
        1,
        "nothing handed over twice"
    );
    assert_eq!(
        poll_once(&mut restarted, &fan_out).await,
        Polled::Idle,
        "the restarted poller is idle"
    );
    let positions = all_records(&env.config.table)
        .await
        .iter()
        .filter(|r| is_checkpoint(r))
        .count();
    assert_eq!(positions, 1, "the restart wrote no position");
    env.cleanup().await;
}
