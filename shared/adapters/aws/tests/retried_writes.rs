//! An append the SDK sent twice: an attempt that got no answer in time is tried again, though the
//! first may have landed (DynamoDB, or moto under load, answered after the attempt's timeout).
//! The retry then fails its own condition. The store must take it for the write it is, not for
//! another writer's: the core would otherwise write the same events again on top of themselves
//! (a streamed chunk twice in the artifact, seen on a loaded emulator).

mod common;

use a2a_core::{LoggedEvent, Owner, StoreError, StoredTask, TaskEvent, TaskLogStore};
use a2a_protocol::{
    Artifact, Part, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus, Timestamp,
};
use common::Env;

fn new_task(owner: &Owner) -> (StoredTask, Vec<LoggedEvent>) {
    let now = Timestamp::now();
    let task = Task {
        id: a2a_core::new_id(),
        context_id: a2a_core::new_id(),
        status: TaskStatus {
            state: TaskState::Working,
            message: None,
            timestamp: Some(now),
        },
        ..Default::default()
    };
    let head = StoredTask {
        owner: owner.clone(),
        task: task.clone(),
        version: 1,
        expires_at: Timestamp::from_millis(now.millis() + 3_600_000),
    };
    let events = vec![LoggedEvent {
        seq: 1,
        at: now,
        event: TaskEvent::Created { task },
    }];
    (head, events)
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
