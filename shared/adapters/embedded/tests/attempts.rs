//! Push attempts are counted on the config's delivery record, not taken from the queue's
//! receive count: a receive that never reached the handler (on Lambda, a throttled
//! invocation) costs no attempt, and the handler dead-letters the last failed one itself.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use a2a_core::{
    A2aService, Agent, AgentDescription, AgentError, AgentRequest, Emitter, HostResolver,
    JobOutcome, Owner, Placement, PushAttempt, PushAttemptResult, PushConfigStore,
    PushDeliveryState, PushJob, ServiceConfig, TaskLogStore, WebhookOutcome, WebhookRequest,
    WebhookSender, JOB_FORMAT_VERSION,
};
use a2a_embedded::SqliteStore;
use a2a_protocol::{TaskPushNotificationConfig, TaskState, Timestamp};

/// Never runs: these tests only deliver pushes.
struct NoAgent;

#[async_trait::async_trait]
impl Agent for NoAgent {
    fn describe(&self) -> AgentDescription {
        AgentDescription::default()
    }

    fn placement(&self, _request: &AgentRequest) -> Placement {
        Placement::Queued
    }

    async fn execute(&self, _request: AgentRequest, _emitter: Emitter) -> Result<(), AgentError> {
        Ok(())
    }
}

/// A receiver that is never reachable, counting the POSTs it was sent.
#[derive(Debug, Default)]
struct Down(AtomicU32);

#[async_trait::async_trait]
impl HostResolver for Down {
    async fn resolve(&self, _host: &str, _port: u16) -> std::io::Result<Vec<std::net::SocketAddr>> {
        Ok(vec![([203, 0, 113, 7], 443).into()])
    }
}

#[async_trait::async_trait]
impl WebhookSender for Down {
    async fn send(&self, _request: WebhookRequest) -> WebhookOutcome {
        self.0.fetch_add(1, Ordering::SeqCst);
        WebhookOutcome::Failed("connection refused".into())
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<SqliteStore>,
    service: A2aService,
    down: Arc<Down>,
    job: PushJob,
}

impl Fixture {
    /// The delivery record of the job's push config.
    async fn delivery(&self) -> PushDeliveryState {
        self.store
            .get_push_delivery(&self.job.owner, &self.job.task_id, "c1")
            .await
            .unwrap()
            .expect("a record")
    }
}

/// A finished task with one push config whose receiver is down, and the push job of its
/// first event.
async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(SqliteStore::open(dir.path()).expect("open"));
    let down = Arc::new(Down::default());
    let service = A2aService::new(
        ServiceConfig {
            push_sender: down.clone(),
            ..ServiceConfig::default()
        },
        Arc::new(NoAgent),
        store.clone(),
        store.clone(),
        store.clone(),
    );
    let owner = Owner::anonymous("");
    let task_id = uuid::Uuid::new_v4().to_string();
    let expires = Timestamp::from_millis(Timestamp::now().millis() + 3_600_000);
    let (head, events) = a2a_store_contract::new_task(
        &owner,
        &task_id,
        "ctx",
        TaskState::Completed,
        Timestamp::now(),
        expires,
    );
    store.create_task(&head, &events).await.expect("create");
    let config = TaskPushNotificationConfig {
        id: "c1".into(),
        task_id: task_id.clone(),
        url: "https://receiver.example/hook".into(),
        ..Default::default()
    };
    store
        .put_push_config(&owner, &config, expires)
        .await
        .expect("config");
    let job = PushJob {
        v: JOB_FORMAT_VERSION,
        owner,
        task_id,
        seq: 1,
        config_id: "c1".into(),
    };
    Fixture {
        _dir: dir,
        store,
        service,
        down,
        job,
    }
}

#[tokio::test]
async fn a_push_received_many_times_but_never_attempted_is_attempted_and_retried() {
    let f = fixture().await;
    let max = f.service.config().max_push_attempts;
    // Throttled receives raised the count past the limit; none reached the handler.
    let outcome = f.service.deliver_push(&f.job, 3 * max).await;
    assert!(matches!(outcome, JobOutcome::Retry { .. }), "{outcome:?}");
    assert_eq!(f.down.0.load(Ordering::SeqCst), 1, "one POST");
    let record = f.delivery().await;
    assert_eq!((record.last_seq_attempts, record.dead_lettered), (1, 0));
}

#[tokio::test]
async fn a_push_whose_own_attempts_are_exhausted_is_dead_lettered_with_its_reason() {
    let f = fixture().await;
    let max = f.service.config().max_push_attempts;
    // All but the last attempt were made and failed.
    let made = PushAttempt {
        seq: 1,
        at: Timestamp::now(),
        result: PushAttemptResult::Failed,
        http_status: None,
        error: Some("connection refused".into()),
        final_attempt: false,
        number: max - 1,
    };
    let expires = Timestamp::from_millis(Timestamp::now().millis() + 3_600_000);
    f.store
        .record_push_attempt(&f.job.owner, &f.job.task_id, "c1", &made, expires)
        .await
        .unwrap();
    // A low receive count: what decides is our own count.
    let outcome = f.service.deliver_push(&f.job, 2).await;
    let JobOutcome::DeadLetter { reason } = outcome else {
        panic!("the last attempt failed: {outcome:?}");
    };
    assert!(reason.contains("connection refused"), "{reason}");
    assert_eq!(
        f.down.0.load(Ordering::SeqCst),
        1,
        "the last attempt was made"
    );
    let record = f.delivery().await;
    assert_eq!((record.last_seq_attempts, record.dead_lettered), (max, 1));
    // Handed out again (its dead-lettering did not happen): given up on without a POST.
    let again = f.service.deliver_push(&f.job, 3).await;
    assert!(matches!(again, JobOutcome::DeadLetter { .. }), "{again:?}");
    assert_eq!(f.down.0.load(Ordering::SeqCst), 1, "no further POST");
}
