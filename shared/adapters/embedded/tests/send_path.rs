//! The send path of the service on the embedded store: what a blocking SendMessage reads back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{
    A2aService, Agent, AgentDescription, AgentError, AgentRequest, CallContext, Emitter,
    ExpiredLease, LeaseStore, LoggedEvent, Owner, Placement, PushAttempt, PushConfigStore,
    PushDeliveryState, SendRecord, ServiceConfig, StoreError, StoredReply, StoredTask,
    TaskLogStore, TaskPage, TaskQuery,
};
use a2a_embedded::SqliteStore;
use a2a_protocol::{
    Message, Part, Role, SendMessageRequest, SendMessageResponse, TaskPushNotificationConfig,
    TaskState, Timestamp,
};
use async_trait::async_trait;

/// The embedded store, counting the reads of a task's head or log (`load_task`,
/// `read_events`): what a caller reads back of what it (or its agent) wrote; and the appends.
struct Counting {
    store: SqliteStore,
    reads_back: AtomicUsize,
    appends: AtomicUsize,
    /// Appends of more events than this are refused as too large (as DynamoDB refuses a
    /// transaction of more than 100 items).
    max_events: usize,
}

#[async_trait]
impl TaskLogStore for Counting {
    async fn create_task(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        self.store.create_task(head, events).await
    }

    async fn create_task_with_push_configs(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
        configs: &[a2a_protocol::TaskPushNotificationConfig],
    ) -> Result<(), StoreError> {
        // As the store does it, through this wrapper's counted calls.
        for config in configs {
            self.put_push_config(&head.owner, config, head.expires_at)
                .await?;
        }
        self.create_task(head, events).await
    }

    async fn append_events(
        &self,
        head: &StoredTask,
        expected_version: u64,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        if events.len() > self.max_events {
            return Err(StoreError::TooLarge(format!("{} events", events.len())));
        }
        self.appends.fetch_add(1, Ordering::SeqCst);
        self.store
            .append_events(head, expected_version, events)
            .await
    }

    async fn load_task(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.reads_back.fetch_add(1, Ordering::SeqCst);
        self.store.load_task(owner, task_id).await
    }

    async fn load_send(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<SendRecord>, StoreError> {
        self.store.load_send(owner, task_id).await
    }

    async fn put_reply(&self, task_id: &str, reply: &StoredReply) -> Result<bool, StoreError> {
        self.store.put_reply(task_id, reply).await
    }

    async fn read_events(
        &self,
        owner: &Owner,
        task_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        self.reads_back.fetch_add(1, Ordering::SeqCst);
        self.store
            .read_events(owner, task_id, after_seq, limit)
            .await
    }

    async fn list_tasks(&self, owner: &Owner, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.store.list_tasks(owner, query).await
    }

    async fn wait_for_append(&self, task_id: &str, after_version: u64, max_wait: Duration) {
        self.store
            .wait_for_append(task_id, after_version, max_wait)
            .await
    }
}

#[async_trait]
impl PushConfigStore for Counting {
    async fn put_push_config(
        &self,
        owner: &Owner,
        config: &TaskPushNotificationConfig,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        self.store.put_push_config(owner, config, expires_at).await
    }

    async fn get_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        self.store.get_push_config(owner, task_id, config_id).await
    }

    async fn list_push_configs(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        self.store.list_push_configs(owner, task_id).await
    }

    async fn delete_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<bool, StoreError> {
        self.store
            .delete_push_config(owner, task_id, config_id)
            .await
    }

    async fn record_push_attempt(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
        attempt: &PushAttempt,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        self.store
            .record_push_attempt(owner, task_id, config_id, attempt, expires_at)
            .await
    }

    async fn get_push_delivery(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<PushDeliveryState>, StoreError> {
        self.store
            .get_push_delivery(owner, task_id, config_id)
            .await
    }
}

#[async_trait]
impl a2a_core::ExecutionStore for Counting {
    async fn load_execution(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<a2a_core::DurableExecution>, StoreError> {
        self.store.load_execution(owner, task_id).await
    }

    async fn save_execution(
        &self,
        execution: &a2a_core::DurableExecution,
        expected: Option<u64>,
    ) -> Result<(), StoreError> {
        self.store.save_execution(execution, expected).await
    }

    async fn delete_execution(&self, owner: &Owner, task_id: &str) -> Result<(), StoreError> {
        self.store.delete_execution(owner, task_id).await
    }

    async fn load_relay_gate(
        &self,
        task_id: &str,
    ) -> Result<Option<a2a_core::RelayGate>, StoreError> {
        self.store.load_relay_gate(task_id).await
    }

    async fn list_due_executions(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<a2a_core::DueExecution>, StoreError> {
        self.store.list_due_executions(now, limit).await
    }

    async fn forget_due_entry(&self, entry: &a2a_core::DueExecution) -> Result<(), StoreError> {
        self.store.forget_due_entry(entry).await
    }
}

#[async_trait]
impl LeaseStore for Counting {
    async fn acquire_lease(
        &self,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError> {
        self.store.acquire_lease(task_id, holder, until).await
    }

    async fn begin_job_attempt(
        &self,
        task_id: &str,
        trigger_seq: u64,
        holder: &str,
        until: Timestamp,
    ) -> Result<Option<u32>, StoreError> {
        self.store
            .begin_job_attempt(task_id, trigger_seq, holder, until)
            .await
    }

    async fn release_lease(&self, task_id: &str, holder: &str) -> Result<(), StoreError> {
        self.store.release_lease(task_id, holder).await
    }

    async fn acquire_inline_lease(
        &self,
        owner: &Owner,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError> {
        self.store
            .acquire_inline_lease(owner, task_id, holder, until)
            .await
    }

    async fn list_expired_inline_leases(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<ExpiredLease>, StoreError> {
        self.store.list_expired_inline_leases(now, limit).await
    }

    async fn remove_expired_lease(&self, lease: &ExpiredLease) -> Result<bool, StoreError> {
        self.store.remove_expired_lease(lease).await
    }
}

/// A blocking send of the user's text message `text`, with id `message_id`.
fn text_message(message_id: &str, text: &str) -> SendMessageRequest {
    SendMessageRequest {
        message: Some(Message {
            message_id: message_id.into(),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Message::default()
        }),
        ..SendMessageRequest::default()
    }
}

/// Completes every task at once with an artifact, as the reference agent's echo does.
struct Echo;

#[async_trait]
impl Agent for Echo {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "echo".into(),
            ..AgentDescription::default()
        }
    }

    fn placement(&self, _request: &AgentRequest) -> Placement {
        Placement::Inline
    }

    async fn execute(&self, request: AgentRequest, e: Emitter) -> Result<(), AgentError> {
        e.complete(Some(request.text())).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_send_whose_task_stops_at_once_reads_nothing_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = SqliteStore::open(dir.path()).expect("open the store");
    let store = Arc::new(Counting {
        store: sqlite.clone(),
        reads_back: AtomicUsize::new(0),
        appends: AtomicUsize::new(0),
        max_events: usize::MAX,
    });
    let queues = Arc::new(sqlite);
    let config = ServiceConfig {
        blocking_timeout: Duration::from_secs(10),
        ..ServiceConfig::default()
    };
    let service = A2aService::new(
        config,
        Arc::new(Echo),
        store.clone(),
        queues.clone(),
        queues,
    );
    let request = text_message("send-path-1", "hello");
    let response = service
        .send_message(&CallContext::anonymous(""), request)
        .await
        .expect("send");
    let SendMessageResponse::Task(task) = response else {
        panic!("expected a task, got {response:?}");
    };
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(
        task.history.len(),
        1,
        "the client's message is in the history"
    );
    assert_eq!(
        store.reads_back.load(Ordering::SeqCst),
        0,
        "the answer is the head the agent's create wrote, not a read of it"
    );
}

/// Finishes its task, then goes on working a moment (as an agent that cleans up after its
/// last emit does) and records that it ended.
struct Lingering {
    ended: Arc<AtomicUsize>,
}

#[async_trait]
impl Agent for Lingering {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "lingering".into(),
            ..AgentDescription::default()
        }
    }

    fn placement(&self, _request: &AgentRequest) -> Placement {
        Placement::Inline
    }

    async fn execute(&self, request: AgentRequest, e: Emitter) -> Result<(), AgentError> {
        if request.text() == "working" {
            e.working(None).await?;
        }
        e.complete(Some(request.text())).await?;
        // The work after the last emit is what must not outlive the response.
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.ended.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// On Lambda the instance freezes once the response is sent: a blocking send answers only
/// after the execution it started has ended, whether its task was born terminal (the answer
/// is the head the agent wrote) or the send followed the log to the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_send_answers_after_its_execution_ended() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = Arc::new(SqliteStore::open(dir.path()).expect("open the store"));
    let ended = Arc::new(AtomicUsize::new(0));
    let config = ServiceConfig {
        blocking_timeout: Duration::from_secs(10),
        ..ServiceConfig::default()
    };
    let service = A2aService::new(
        config,
        Arc::new(Lingering {
            ended: ended.clone(),
        }),
        sqlite.clone(),
        sqlite.clone(),
        sqlite,
    );
    for (n, text) in ["at once", "working"].into_iter().enumerate() {
        let request = text_message(&format!("settle-{n}"), text);
        let response = service
            .send_message(&CallContext::anonymous(""), request)
            .await
            .expect("send");
        let SendMessageResponse::Task(task) = response else {
            panic!("expected a task, got {response:?}");
        };
        assert_eq!(task.status.state, TaskState::Completed, "{text}");
        assert_eq!(
            ended.load(Ordering::SeqCst),
            n + 1,
            "{text}: the execution ended before the response"
        );
    }
}

/// Streams `chunks N` artifact chunks as fast as it can, then completes.
struct Chunks;

#[async_trait]
impl Agent for Chunks {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "chunks".into(),
            ..AgentDescription::default()
        }
    }

    fn placement(&self, _request: &AgentRequest) -> Placement {
        Placement::Inline
    }

    async fn execute(&self, request: AgentRequest, e: Emitter) -> Result<(), AgentError> {
        let n: usize = request.text().parse().unwrap_or(1);
        e.working(None).await?;
        for i in 0..n {
            let chunk = a2a_protocol::Artifact {
                artifact_id: "out".into(),
                parts: vec![Part::text(format!("{i} "))],
                ..a2a_protocol::Artifact::default()
            };
            e.artifact(chunk, i > 0, i + 1 == n).await?;
        }
        e.complete(None).await
    }
}

/// An agent that emits faster than the store writes is not held up by each write: what it
/// emits while one write is in flight goes into the next, as one append. Every event still
/// reaches the stream, in order, each with a sequence number of its own.
/// Streams `chunks` through a service on `store`: every event, in order.
async fn stream_chunks(store: Arc<Counting>, chunks: usize) -> Vec<a2a_core::StreamItem> {
    use futures::StreamExt;
    let queues = Arc::new(store.store.clone());
    let service = A2aService::new(
        ServiceConfig::default(),
        Arc::new(Chunks),
        store,
        queues.clone(),
        queues,
    );
    let stream = service
        .send_streaming_message(
            &CallContext::anonymous(""),
            text_message(&format!("chunks-{chunks}"), &chunks.to_string()),
        )
        .await
        .expect("stream");
    let items: Vec<_> = stream.map(|item| item.expect("an event")).collect().await;
    let seqs: Vec<u64> = items.iter().map(|item| item.seq).collect();
    assert_eq!(
        seqs,
        (1..=chunks as u64 + 3).collect::<Vec<_>>(),
        "the task, WORKING, every chunk and COMPLETED, each its own event"
    );
    let texts: Vec<String> = items
        .iter()
        .filter_map(|item| match &item.response {
            a2a_protocol::StreamResponse::ArtifactUpdate(update) => {
                update.artifact.parts[0].text.clone()
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        texts,
        (0..chunks).map(|i| format!("{i} ")).collect::<Vec<_>>()
    );
    items
}

/// An agent that emits faster than the store writes is not held up by each write: what it
/// emits while one write is in flight goes into the next, as one append. Every event still
/// reaches the stream, in order, each with a sequence number of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_emitted_during_a_write_share_the_next_write() {
    const CHUNKS: usize = 200;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Counting {
        store: SqliteStore::open(dir.path()).expect("open the store"),
        reads_back: AtomicUsize::new(0),
        appends: AtomicUsize::new(0),
        max_events: usize::MAX,
    });
    stream_chunks(store.clone(), CHUNKS).await;
    let appends = store.appends.load(Ordering::SeqCst);
    // The agent never waits for a chunk's write, so nearly all of them queue behind the first.
    assert!(
        appends <= CHUNKS / 10,
        "{appends} appends for {CHUNKS} chunks: the chunks were not written together"
    );
}

/// A store that cannot take as many events in one write as are queued (DynamoDB: 100 items
/// per transaction) gets them in smaller writes; none is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_events_too_many_for_one_write_are_written_in_smaller_ones() {
    const CHUNKS: usize = 60;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Counting {
        store: SqliteStore::open(dir.path()).expect("open the store"),
        reads_back: AtomicUsize::new(0),
        appends: AtomicUsize::new(0),
        max_events: 5,
    });
    stream_chunks(store.clone(), CHUNKS).await;
    let appends = store.appends.load(Ordering::SeqCst);
    assert!(
        appends >= CHUNKS / 5,
        "{appends} appends of at most 5 events for {CHUNKS} chunks"
    );
}
