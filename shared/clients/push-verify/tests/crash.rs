//! A process killed right after the append that writes a task's events loses none of their
//! pushes, on both backends: the push fan-out is the store's, atomic with the write (the
//! embedded store enqueues the jobs in the write's own transaction; DynamoDB's stream carries
//! the write to the fan-out function). A child process writes a task with a push config to a
//! real webhook listener on 127.0.0.1, appends its events and aborts on the spot; the parent
//! then runs only the consumers (the fan-out and the push delivery), and every event arrives.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

mod support;

use std::process::Command;

use a2a_core::{KeySet, LoggedEvent, PushPolicy, SigningAlgorithm, SigningKey, TaskEvent};
use a2a_protocol::{
    Artifact, Part, TaskArtifactUpdateEvent, TaskPushNotificationConfig, TaskState, TaskStatus,
    TaskStatusUpdateEvent, Timestamp,
};
use a2a_push_verify::Verifier;
use a2a_test_support::webhook::Webhook;
use support::{on_every_backend, AgentServer, Backend};

on_every_backend!(a_process_killed_right_after_the_append_loses_no_push);

/// Set for the child: the webhook's URL (the store's location is in the environment too).
const CHILD: &str = "A2A_TEST_CRASH_CHILD_WEBHOOK";

async fn a_process_killed_right_after_the_append_loses_no_push(backend: Backend) {
    let keys = KeySet::single(
        SigningKey::generate(SigningAlgorithm::Es256)
            .expect("generate")
            .0,
    );
    let agent = AgentServer::start_on(backend, keys, PushPolicy::local(), 8).await;
    let hook = Webhook::start().await;
    let status = Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", "the_child_writes_then_dies", "--nocapture"])
        .env(CHILD, &hook.url)
        .envs(agent.location())
        .status()
        .expect("run the child");
    // It died: it did not exit, it was killed (abort raises SIGABRT).
    assert!(!status.success(), "{status:?}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(6), "{status:?}");
    }
    // Only the consumers run now, in this process: nothing of the writer is left.
    let drained = agent.drain().await;
    assert_eq!(drained.attempts, 3, "{drained:?}");
    let verifier = Verifier::for_agent(&agent.base, &hook.url);
    let mut seqs = Vec::new();
    for push in hook.received() {
        let verified = verifier.verify(&push.headers, &push.body).await.unwrap();
        seqs.push(verified.claims.seq);
    }
    // The task as created, its artifact, COMPLETED: every event, once, in order.
    assert_eq!(seqs, [1, 2, 3]);
    agent.finish().await;
}

/// The child's part (does nothing unless run as the child): create a task with a push config,
/// append its events, and die before anything else can run.
#[tokio::test]
async fn the_child_writes_then_dies() {
    let Ok(webhook) = std::env::var(CHILD) else {
        return;
    };
    let store = support::open_store().await;
    let owner = a2a_core::Owner::anonymous("");
    let (head, events) = a2a_store_contract::new_task(
        &owner,
        &a2a_core::new_id(),
        &a2a_core::new_id(),
        TaskState::Submitted,
        Timestamp::now(),
        Timestamp::from_millis(Timestamp::now().millis() + 3_600_000),
    );
    let config = TaskPushNotificationConfig {
        id: "hook".into(),
        task_id: head.task.id.clone(),
        url: webhook,
        ..Default::default()
    };
    store
        .create_task_with_push_configs(&head, &events, &[config])
        .await
        .expect("create");
    let (task_id, context_id) = (head.task.id.clone(), head.task.context_id.clone());
    let changes = [
        TaskEvent::Artifact {
            update: TaskArtifactUpdateEvent {
                task_id: task_id.clone(),
                context_id: context_id.clone(),
                artifact: Artifact {
                    artifact_id: "answer".into(),
                    parts: vec![Part::text("42")],
                    ..Default::default()
                },
                ..Default::default()
            },
        },
        TaskEvent::Status {
            update: TaskStatusUpdateEvent {
                generation: 0,
                task_id,
                context_id,
                status: TaskStatus {
                    state: TaskState::Completed,
                    message: None,
                    timestamp: Some(Timestamp::now()),
                },
                metadata: None,
            },
        },
    ];
    let mut next = head.clone();
    let mut logged = Vec::new();
    for event in changes {
        event.apply(&mut next.task).expect("applies");
        next.version += 1;
        logged.push(LoggedEvent {
            seq: next.version,
            at: Timestamp::now(),
            event,
        });
    }
    store
        .append_events(&next, head.version, &logged)
        .await
        .expect("append");
    // Killed right after the append: no destructor, no task, nothing else runs.
    std::process::abort();
}
