//! Many writers on one task against DynamoDB (moto's server), each with its own client as
//! separate Lambda instances would have: a worker appending progress then completing, a client
//! cancelling, and a duplicate delivery of the same job doing what the worker does. They
//! follow the core's rules: build on the head they read, re-read after a `Conflict`, stop once
//! the head is terminal.
//!
//! Whatever the interleaving: exactly one terminal status, a gapless log, nothing after the
//! terminal event, and a head equal to the fold of the log.

mod common;

use std::sync::Arc;
use std::time::Duration;

use a2a_aws::DynamoTaskStore;
use a2a_core::{LoggedEvent, Owner, StoreError, StoredTask, TaskEvent, TaskLogStore};
use a2a_protocol::{
    Artifact, Message, Part, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent, Timestamp,
};
use common::Env;

const CHUNKS: usize = 6;

fn status(task: &Task, state: TaskState) -> TaskEvent {
    TaskEvent::Status {
        update: TaskStatusUpdateEvent {
            generation: 0,
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            status: TaskStatus {
                state,
                message: Some(Message::agent_text(format!("now {state}"))),
                timestamp: Some(Timestamp::now()),
            },
            metadata: None,
        },
    }
}

fn chunk(task: &Task, who: &str, n: usize) -> TaskEvent {
    TaskEvent::Artifact {
        update: TaskArtifactUpdateEvent {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            artifact: Artifact {
                artifact_id: "out".into(),
                parts: vec![Part::text(format!("{who}-{n} "))],
                ..Default::default()
            },
            append: n > 0,
            ..Default::default()
        },
    }
}

/// The outcome of one writer's conditional append.
enum Appended {
    Done,
    /// The task was terminal when this writer looked: it stopped.
    Ended,
}

/// Appends the events `make` builds from the current head, re-reading after each `Conflict`
/// and giving up once the head is terminal, as the core's writer does.
async fn append(
    store: &DynamoTaskStore,
    owner: &Owner,
    task_id: &str,
    make: impl Fn(&Task) -> Vec<TaskEvent>,
) -> Appended {
    for _ in 0..1_000 {
        let head = store
            .load_task(owner, task_id)
            .await
            .expect("load")
            .expect("the task exists");
        if head.task.status.state.is_terminal() {
            return Appended::Ended;
        }
        let mut next = head.clone();
        let mut logged = Vec::new();
        for event in make(&head.task) {
            event.apply(&mut next.task).expect("a valid change");
            next.version += 1;
            logged.push(LoggedEvent {
                seq: next.version,
                at: Timestamp::now(),
                event,
            });
        }
        match store.append_events(&next, head.version, &logged).await {
            Ok(()) => return Appended::Done,
            Err(StoreError::Conflict) => tokio::task::yield_now().await,
            Err(other) => panic!("append: {other}"),
        }
    }
    panic!("a writer never got through");
}

/// A worker (or its redelivered duplicate): WORKING, chunks, then COMPLETED; stops as soon as
/// it finds the task ended.
async fn worker(store: DynamoTaskStore, owner: Owner, task_id: String, name: &'static str) {
    if let Appended::Ended = append(&store, &owner, &task_id, |t| {
        vec![status(t, TaskState::Working)]
    })
    .await
    {
        return;
    }
    for n in 0..CHUNKS {
        if let Appended::Ended = append(&store, &owner, &task_id, |t| vec![chunk(t, name, n)]).await
        {
            return;
        }
    }
    append(&store, &owner, &task_id, |t| {
        vec![status(t, TaskState::Completed)]
    })
    .await;
}

/// When the client cancels.
#[derive(Debug, Clone, Copy)]
enum Cancel {
    /// Before the workers start: they find the task CANCELED and append nothing.
    First,
    /// While the workers run, after this delay: any interleaving.
    After(Duration),
    /// Once both workers are done: the task is COMPLETED and the cancel appends nothing.
    Last,
}

async fn race(env: &Env, cancel: Cancel) -> Vec<LoggedEvent> {
    // Each writer has its own client: separate connections, like separate instances.
    let store = || {
        let env_store = env.store();
        async move {
            let clients = common::clients().await.expect("the emulator");
            DynamoTaskStore::new(clients.dynamodb, env_store.table())
        }
    };
    let owner = Owner::new("races", &uuid::Uuid::new_v4().to_string());
    let (head, events) = a2a_store_contract::new_task(
        &owner,
        &uuid::Uuid::new_v4().to_string(),
        "ctx",
        TaskState::Submitted,
        Timestamp::now(),
        Timestamp::from_millis(Timestamp::now().millis() + 3_600_000),
    );
    let task = head.task.clone();
    let creator = store().await;
    creator.create_task(&head, &events).await.expect("create");

    let cancel_task = {
        let store = store().await;
        let owner = owner.clone();
        let task_id = task.id.clone();
        move || async move {
            append(&store, &owner, &task_id, |t| {
                vec![status(t, TaskState::Canceled)]
            })
            .await;
        }
    };
    let workers = [
        worker(store().await, owner.clone(), task.id.clone(), "w1"),
        worker(store().await, owner.clone(), task.id.clone(), "w2"),
    ];
    match cancel {
        Cancel::First => {
            cancel_task().await;
            for handle in futures::future::join_all(workers.map(tokio::spawn)).await {
                handle.expect("worker");
            }
        }
        Cancel::After(delay) => {
            let handles = workers.map(tokio::spawn);
            tokio::time::sleep(delay).await;
            cancel_task().await;
            for handle in futures::future::join_all(handles).await {
                handle.expect("worker");
            }
        }
        Cancel::Last => {
            for handle in futures::future::join_all(workers.map(tokio::spawn)).await {
                handle.expect("worker");
            }
            cancel_task().await;
        }
    }

    let events = creator
        .read_events(&owner, &task.id, 0, 10_000)
        .await
        .expect("read");
    let final_head = creator
        .load_task(&owner, &task.id)
        .await
        .expect("load")
        .expect("exists");

    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "gapless log"
    );
    let terminal: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            matches!(e.event, TaskEvent::Status { .. })
                && e.event.state().is_some_and(TaskState::is_terminal)
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(terminal.len(), 1, "exactly one terminal status: {seqs:?}");
    assert_eq!(
        terminal[0],
        events.len() - 1,
        "nothing after the terminal event"
    );
    // The head is the fold of the log (its generation, A2A 1.1, the last event's).
    let mut folded = Task::default();
    for event in &events {
        event.event.apply(&mut folded).expect("the log replays");
        folded.generation = event.seq as i64;
    }
    assert_eq!(final_head.task, folded);
    assert_eq!(final_head.version, events.len() as u64);
    // Every refused append took its count move back: the owner's counts hold the task once,
    // in its final state.
    let final_state = final_head.task.status.state.number();
    assert_eq!(
        owner_counts(env, &owner).await,
        std::collections::BTreeMap::from([("n".to_owned(), 1), (format!("n{final_state}"), 1)]),
        "the owner's counts (in all, per state) after {seqs:?}"
    );
    events
}

/// The owner's ListTasks counts as stored, summed over expiries and shards, without the zeros.
async fn owner_counts(env: &Env, owner: &Owner) -> std::collections::BTreeMap<String, i64> {
    let items = env.partition(format!("C#{}", owner.as_str())).await;
    let mut sums = std::collections::BTreeMap::new();
    for item in &items {
        for (name, value) in item {
            let counts = name.starts_with('n') && name[1..].bytes().all(|b| b.is_ascii_digit());
            if let (true, Ok(number)) = (counts, value.as_n()) {
                *sums.entry(name.clone()).or_default() += number.parse::<i64>().expect("a count");
            }
        }
    }
    sums.retain(|_, sum| *sum != 0);
    sums
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_canceller_and_duplicate_delivery_race_on_one_task() {
    let Some(env) = Env::new().await else {
        return;
    };
    let mut outcomes = Vec::new();
    // From "cancel first" to "cancel last", with cancels landing among the workers' appends
    // in between: every interleaving must keep the invariants `race` checks.
    let mut cases = vec![Cancel::First];
    cases.extend([0, 5, 15, 30, 60, 120].map(|ms| Cancel::After(Duration::from_millis(ms))));
    cases.push(Cancel::Last);
    for cancel in cases {
        let events = race(&env, cancel).await;
        let last = events.last().and_then(|e| e.event.state());
        outcomes.push((cancel, last, events.len()));
        match cancel {
            // The workers found the task CANCELED and wrote nothing: Created, Canceled.
            Cancel::First => assert_eq!((last, events.len()), (Some(TaskState::Canceled), 2)),
            // Both workers ran to the end; the late cancel found the task COMPLETED.
            Cancel::Last => assert_eq!(last, Some(TaskState::Completed)),
            Cancel::After(_) => {}
        }
    }
    println!("cancel -> (final state, events): {outcomes:?}");
    env.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simultaneous_cancels_end_the_task_once() {
    let Some(env) = Env::new().await else {
        return;
    };
    let store = Arc::new(env.store());
    let owner = Owner::new("races", "cancels");
    let task = Task {
        id: uuid::Uuid::new_v4().to_string(),
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
        expires_at: Timestamp::from_millis(Timestamp::now().millis() + 3_600_000),
    };
    store
        .create_task(
            &head,
            &[LoggedEvent {
                seq: 1,
                at: Timestamp::now(),
                event: TaskEvent::Created { task: task.clone() },
            }],
        )
        .await
        .expect("create");
    // Eight clients cancel at once (or fail the task): exactly one wins.
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let store = Arc::clone(&store);
            let owner = owner.clone();
            let id = task.id.clone();
            tokio::spawn(async move {
                let state = if i % 2 == 0 {
                    TaskState::Canceled
                } else {
                    TaskState::Failed
                };
                matches!(
                    append(&store, &owner, &id, |t| vec![status(t, state)]).await,
                    Appended::Done
                )
            })
        })
        .collect();
    let mut winners = 0;
    for handle in handles {
        winners += usize::from(handle.await.expect("canceller"));
    }
    assert_eq!(winners, 1, "exactly one terminal append succeeded");
    let events = store
        .read_events(&owner, &task.id, 0, 100)
        .await
        .expect("read");
    assert_eq!(events.len(), 2);
    env.cleanup().await;
}
