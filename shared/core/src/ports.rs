//! The ports: what the core needs from the world, implemented by the adapters (embedded SQLite,
//! DynamoDB/SQS). Every fact that matters lives behind these traits; nothing in process memory
//! is needed for correctness.

use std::time::Duration;

use a2a_protocol::{Message, Task, TaskPushNotificationConfig, TaskState, Timestamp};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::event::LoggedEvent;

/// Who a task belongs to: the authenticated principal within a tenant. Every store read and
/// write is scoped by it, so another owner's task is simply not there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Owner(pub String);

impl Owner {
    /// The owner key for `principal` in `tenant`.
    pub fn new(tenant: &str, principal: &str) -> Self {
        // The tenant is length-prefixed so no pair of (tenant, principal) can collide.
        Self(format!("{}:{tenant}/{principal}", tenant.len()))
    }

    /// The owner of unauthenticated callers (auth mode `none`).
    pub fn anonymous(tenant: &str) -> Self {
        Self::new(tenant, "anonymous")
    }

    /// The key as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A task's current snapshot (its head) and the version it was built from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredTask {
    /// Owner of the task.
    pub owner: Owner,
    /// The full task: status, artifacts and history.
    pub task: Task,
    /// The sequence number of the last event applied (the log's length).
    pub version: u64,
    /// When the task and its events expire and are no longer returned.
    pub expires_at: Timestamp,
}

/// A direct message reply, recorded so that a repeat of the message it answered gets the same
/// reply (idempotent SendMessage). It lives under the id a task for that message would have
/// had, so the one read that looks for the task finds it too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredReply {
    /// Owner of the message.
    pub owner: Owner,
    /// The client's message as recorded (`taskId` and `contextId` filled in), which a repeat
    /// is compared with.
    pub request: Message,
    /// The agent's reply.
    pub reply: Message,
    /// When the record expires and is no longer returned.
    pub expires_at: Timestamp,
}

/// What the id of a send holds: the task the message started, or the direct reply it got.
#[derive(Debug, Clone, PartialEq)]
pub enum SendRecord {
    /// A task.
    Task(StoredTask),
    /// A direct message reply.
    Reply(StoredReply),
}

/// Filters and cursor of a ListTasks query. The store orders by status timestamp, newest first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskQuery {
    /// Only tasks in this context.
    pub context_id: Option<String>,
    /// Only tasks in this state.
    pub state: Option<TaskState>,
    /// Only tasks whose status timestamp is at or after this.
    pub status_timestamp_after: Option<Timestamp>,
    /// Page size (1..=100, already validated).
    pub page_size: usize,
    /// An opaque cursor the store produced for the previous page; empty for the first page.
    pub page_token: String,
}

/// One page of a ListTasks query.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskPage {
    /// The tasks of this page, newest status timestamp first.
    pub tasks: Vec<Task>,
    /// Cursor of the next page; empty on the last page.
    pub next_page_token: String,
    /// How many tasks match the filters in all.
    pub total_size: usize,
}

/// Failures of a store or queue adapter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// A conditional write lost: another writer got there first. Re-read and decide again.
    #[error("version conflict")]
    Conflict,
    /// The page token was not produced by this store (or is corrupt).
    #[error("invalid page token")]
    InvalidPageToken,
    /// The item would be larger than the store accepts.
    #[error("too large: {0}")]
    TooLarge(String),
    /// The backend failed. The text is for logs, never for clients.
    #[error("store backend: {0}")]
    Backend(String),
}

/// The task store: heads, the event log, push configs and leases.
///
/// **Push fan-out is the store's.** Every event a create or an append writes becomes one
/// [`PushJob`] per push config the task has at that moment ([`push_jobs`] says which), and
/// the store makes that happen *atomically with the write*: a store beside its push queue (the
/// embedded one) enqueues the jobs in the same transaction; DynamoDB lets the table's stream
/// carry the write to [`crate::A2aService::fan_out`]. Either way a process that dies right
/// after the write loses no push, and a task without push configs costs nothing for push.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// Creates a task: writes `head` (with `head.version == events.last().seq`) and the first
    /// events (seq 1..=n) atomically. `Conflict` if the task id exists.
    async fn create_task(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError>;

    /// Creates a task as [`Self::create_task`] does, with push configs that must see its first
    /// events (SendMessage's inline config): they are stored, and the create's events fan out
    /// to them. The default stores the configs, then creates the task: right for a store whose
    /// create reads the task's configs in its own transaction; a store that cannot read during
    /// its create (DynamoDB) writes the configs' ids with the task instead.
    async fn create_task_with_push_configs(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
        configs: &[TaskPushNotificationConfig],
    ) -> Result<(), StoreError> {
        for config in configs {
            self.put_push_config(&head.owner, config, head.expires_at)
                .await?;
        }
        self.create_task(head, events).await
    }

    /// Appends `events` (seq `expected_version + 1 ..`) and replaces the head with `head`, atomically,
    /// only if the stored version is still `expected_version`; otherwise `Conflict`.
    async fn append_events(
        &self,
        head: &StoredTask,
        expected_version: u64,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError>;

    /// The head of a task, if it exists, belongs to `owner` and has not expired.
    async fn load_task(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<StoredTask>, StoreError>;

    /// What `task_id` holds for `owner`, with one read: the task's head or a reply record (see
    /// [`StoredReply`]), if it exists, belongs to `owner` and has not expired.
    /// [`Self::load_task`] never returns a reply record.
    async fn load_send(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<SendRecord>, StoreError>;

    /// Records a direct reply under `task_id` if no live task or reply record holds that id;
    /// `false` (and nothing written) if one does. A live reply record makes
    /// [`Self::create_task`] of the same id a `Conflict`.
    async fn put_reply(&self, task_id: &str, reply: &StoredReply) -> Result<bool, StoreError>;

    /// Up to `limit` events with seq > `after_seq`, in order. Empty if the task is not the owner's.
    async fn read_events(
        &self,
        owner: &Owner,
        task_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError>;

    /// A page of the owner's tasks.
    async fn list_tasks(&self, owner: &Owner, query: &TaskQuery) -> Result<TaskPage, StoreError>;

    /// Returns once the task may have a version above `after_version`, or after `max_wait`.
    /// Only a hint to avoid busy polling: callers re-read the log either way.
    async fn wait_for_append(&self, task_id: &str, after_version: u64, max_wait: Duration);

    /// Creates or replaces a push config (its `task_id` and `id` are set).
    async fn put_push_config(
        &self,
        owner: &Owner,
        config: &TaskPushNotificationConfig,
        expires_at: Timestamp,
    ) -> Result<(), StoreError>;

    /// One push config of the owner's task.
    async fn get_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError>;

    /// All push configs of the owner's task, ordered by id.
    async fn list_push_configs(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError>;

    /// Deletes a push config; `false` if there was none.
    async fn delete_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<bool, StoreError>;

    /// Records the outcome of one delivery attempt to a push config: applies
    /// [`PushDeliveryState::record`] to the config's delivery record (an empty one if there is
    /// none yet) and keeps the record until `expires_at`. The record outlives the config: after
    /// a 410 Gone the config is deleted and its record says why.
    async fn record_push_attempt(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
        attempt: &PushAttempt,
        expires_at: Timestamp,
    ) -> Result<(), StoreError>;

    /// The delivery record of a push config of the owner's task, if any attempt was recorded
    /// and it has not expired.
    async fn get_push_delivery(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<PushDeliveryState>, StoreError>;

    /// Takes the execution lease of a task for `holder` until `until`, if it is free, expired, or
    /// already held by `holder`. `false` if someone else holds it.
    async fn acquire_lease(
        &self,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError>;

    /// Starts an attempt at the queued job that runs a task's message `trigger_seq`: takes the
    /// task's execution lease for `holder` until `until` (as [`TaskStore::acquire_lease`]) and,
    /// in the same write, counts one more attempt of that job on the lease. Returns the attempt
    /// number (1 on the first), or `None` if someone else holds the lease (nothing counted).
    ///
    /// The count is ours, not the queue's: a delivery that never reached the handler (a
    /// throttled Lambda invocation) counts nothing. It lives as long as the lease record: a
    /// release (the job ended) forgets it, an attempt that died keeps it for the next one.
    async fn begin_job_attempt(
        &self,
        task_id: &str,
        trigger_seq: u64,
        holder: &str,
        until: Timestamp,
    ) -> Result<Option<u32>, StoreError>;

    /// Gives the lease back, if `holder` still holds it.
    async fn release_lease(&self, task_id: &str, holder: &str) -> Result<(), StoreError>;

    /// Like [`TaskStore::acquire_lease`], for an inline execution: the lease also records the
    /// task's owner and that nothing would redeliver its work, so that once it expires
    /// [`TaskStore::list_expired_inline_leases`] lists it and a sweep can end the task. The
    /// same lease as the queued one: whichever kind holds it, the other waits.
    async fn acquire_inline_lease(
        &self,
        owner: &Owner,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError>;

    /// Up to `limit` inline leases that ended at or before `now` and were not released: their
    /// execution stopped without giving its task back (a crashed process). Queued leases are
    /// never listed: the queue redelivers their work.
    async fn list_expired_inline_leases(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<ExpiredLease>, StoreError>;

    /// Removes `lease` if it is still exactly this expired lease (same holder, same end):
    /// `false` if it was renewed, taken over or removed meanwhile.
    async fn remove_expired_lease(&self, lease: &ExpiredLease) -> Result<bool, StoreError>;
}

/// An inline execution lease that ended without being released, as listed for the sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiredLease {
    /// Owner of the task.
    pub owner: Owner,
    /// The task.
    pub task_id: String,
    /// Who held it (a process's `worker_id`).
    pub holder: String,
    /// When it ended.
    pub until: Timestamp,
}

/// Current format version of queue message bodies.
pub const JOB_FORMAT_VERSION: u32 = 1;

/// Run the agent for the message appended at `trigger_seq` of a task. The body of a work-queue
/// message, consumed by the worker loop (local) or the worker function (Lambda).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkJob {
    /// Body format version ([`JOB_FORMAT_VERSION`]).
    pub v: u32,
    /// Owner of the task.
    pub owner: Owner,
    /// The task to work on.
    pub task_id: String,
    /// Sequence number of the event that carries the triggering message.
    pub trigger_seq: u64,
}

/// Deliver the event `seq` of a task to one push config. The body of a push-queue message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushJob {
    /// Body format version ([`JOB_FORMAT_VERSION`]).
    pub v: u32,
    /// Owner of the task.
    pub owner: Owner,
    /// The task whose event is delivered.
    pub task_id: String,
    /// The event's sequence number.
    pub seq: u64,
    /// The push config to deliver to.
    pub config_id: String,
}

impl PushJob {
    /// The de-duplication key: one delivery per task, event and config.
    pub fn dedup_id(&self) -> String {
        format!("{}/{}/{}", self.task_id, self.seq, self.config_id)
    }
}

/// Events a store wrote to a task, as its push fan-out sees them: who owns the task, the events
/// of that one write, and the task's push configs at that moment. A DynamoDB stream record of a
/// task head decodes to one of these ([`crate::A2aService::fan_out`] takes them).
#[derive(Debug, Clone, PartialEq)]
pub struct AppendedEvents {
    /// Owner of the task.
    pub owner: Owner,
    /// The task.
    pub task_id: String,
    /// The events of the write, in log order.
    pub events: Vec<LoggedEvent>,
    /// The ids of the task's push configs when the events were written.
    pub config_ids: Vec<String>,
}

/// The push jobs of one write: one per event a client can see (every status and artifact
/// update, the created task; not the user's own messages) and push config, in log order, each
/// event's jobs in config order. Empty without configs. The one definition of the fan-out that
/// every store uses, whether inside its transaction or from its stream.
pub fn push_jobs(
    owner: &Owner,
    task_id: &str,
    events: &[LoggedEvent],
    config_ids: &[String],
) -> Vec<PushJob> {
    push_jobs_at(owner, task_id, &visible_seqs(events), config_ids)
}

/// The sequence numbers of the events in `events` that streams and push receivers see: the
/// ones [`push_jobs`] makes jobs of.
pub fn visible_seqs(events: &[LoggedEvent]) -> Vec<u64> {
    events
        .iter()
        .filter(|e| e.event.is_visible())
        .map(|e| e.seq)
        .collect()
}

/// [`push_jobs`] for the visible events at `seqs` (see [`visible_seqs`]), for a store that
/// keeps only their numbers until it knows the task has push configs.
pub fn push_jobs_at(
    owner: &Owner,
    task_id: &str,
    seqs: &[u64],
    config_ids: &[String],
) -> Vec<PushJob> {
    seqs.iter()
        .flat_map(|&seq| {
            config_ids.iter().map(move |config_id| PushJob {
                v: JOB_FORMAT_VERSION,
                owner: owner.clone(),
                task_id: task_id.to_owned(),
                seq,
                config_id: config_id.clone(),
            })
        })
        .collect()
}

/// The work queue (SQS standard with a dead-letter queue in the cloud).
#[async_trait]
pub trait WorkQueue: Send + Sync + 'static {
    /// Enqueues a job; once this returns `Ok` the job is durable.
    async fn enqueue_work(&self, job: &WorkJob) -> Result<(), StoreError>;
}

/// The push queue (SQS FIFO grouped by task in the cloud).
#[async_trait]
pub trait PushQueue: Send + Sync + 'static {
    /// Enqueues delivery jobs, in order; once this returns `Ok` they are durable.
    async fn enqueue_push(&self, jobs: &[PushJob]) -> Result<(), StoreError>;
}

/// What a job handler tells its queue to do with the message it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// Done (or nothing left to do): delete the message.
    Done,
    /// Try again later: leave the message to become visible after `after`.
    Retry {
        /// Why, for the log.
        reason: String,
        /// How long to wait before the next attempt.
        after: Duration,
    },
    /// Give up: the job has had all its attempts (by the handler's own count). Move the
    /// message to the dead-letter queue with this reason.
    DeadLetter {
        /// Why, kept with the dead letter.
        reason: String,
    },
}

/// How one webhook delivery attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PushAttemptResult {
    /// The receiver answered 2xx.
    Delivered,
    /// It failed (no answer, or a status other than 2xx and 410); the job is retried, or
    /// dead-lettered if this was its last attempt.
    Failed,
    /// The receiver answered 410 Gone: the config is deleted and nothing more is sent to it.
    Gone,
    /// The URL was refused before any connection (non-public address, bad scheme or URL).
    Refused,
}

/// One delivery attempt of one event to one push config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushAttempt {
    /// The event's sequence number.
    pub seq: u64,
    /// When the attempt ended.
    pub at: Timestamp,
    /// How it ended.
    pub result: PushAttemptResult,
    /// The receiver's HTTP status, if it answered.
    pub http_status: Option<u16>,
    /// Why it did not succeed. Never holds credentials, tokens or the URL's path or query.
    pub error: Option<String>,
    /// Whether this was the event's last attempt (the job goes to the dead-letter queue).
    pub final_attempt: bool,
    /// Which attempt at this event it was (1 on the first), counted by the core from the
    /// delivery record, not from the queue's receive count.
    #[serde(default)]
    pub number: u32,
}

/// What happened to the pushes of one config so far: its delivery record.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushDeliveryState {
    /// Attempts made, of every event.
    pub attempts: u64,
    /// Attempts that were delivered.
    pub delivered: u64,
    /// Failed or refused attempts since the last delivered one.
    pub consecutive_failures: u64,
    /// Events given up on after their last attempt (sent to the dead-letter queue).
    pub dead_lettered: u64,
    /// The sequence number of the event of the last attempt.
    pub last_seq: u64,
    /// How many attempts the event `last_seq` has had: the number of the last attempt.
    #[serde(default)]
    pub last_seq_attempts: u32,
    /// When the last attempt ended.
    pub last_attempt_at: Option<Timestamp>,
    /// How the last attempt ended.
    pub last_result: Option<PushAttemptResult>,
    /// The HTTP status of the last attempt, if the receiver answered.
    pub last_status: Option<u16>,
    /// The error of the last unsuccessful attempt (kept after a later success).
    pub last_error: Option<String>,
    /// When an event was last delivered.
    pub last_success_at: Option<Timestamp>,
    /// Why deliveries to this config stopped for good (410 Gone), if they did.
    pub disabled_reason: Option<String>,
}

impl PushDeliveryState {
    /// Folds one attempt into the record. Adapters apply exactly this (a DynamoDB adapter may
    /// express it as one `UpdateItem`: `ADD attempts :1, …`, `SET last_… = :…`).
    pub fn record(&mut self, attempt: &PushAttempt) {
        self.attempts += 1;
        self.last_seq = attempt.seq;
        self.last_seq_attempts = attempt.number;
        self.last_attempt_at = Some(attempt.at);
        self.last_result = Some(attempt.result);
        self.last_status = attempt.http_status;
        match attempt.result {
            PushAttemptResult::Delivered => {
                self.delivered += 1;
                self.consecutive_failures = 0;
                self.last_success_at = Some(attempt.at);
            }
            PushAttemptResult::Failed | PushAttemptResult::Refused => {
                self.consecutive_failures += 1;
                self.last_error.clone_from(&attempt.error);
            }
            PushAttemptResult::Gone => {
                self.last_error.clone_from(&attempt.error);
                self.disabled_reason = Some(
                    attempt
                        .error
                        .clone()
                        .unwrap_or_else(|| "the webhook answered 410 Gone".into()),
                );
            }
        }
        if attempt.final_attempt {
            self.dead_lettered += 1;
        }
    }
}
