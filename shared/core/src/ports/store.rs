//! The store ports: three narrow traits, one per part of what a task store keeps, and
//! [`TaskStore`], every store, which the service is built on. An adapter implements each part
//! in the module that keeps it; code that needs one part asks for that one.

use std::time::Duration;

use a2a_protocol::{TaskPushNotificationConfig, Timestamp};
use async_trait::async_trait;

use super::model::{
    DueExecution, DurableExecution, ExpiredLease, Owner, PushAttempt, PushDeliveryState, RelayGate,
    SendRecord, StoreError, StoredReply, StoredTask, TaskPage, TaskQuery,
};
use crate::event::LoggedEvent;

/// A whole task store: its event log, its push configs, its leases and its durable
/// executions.
///
/// **Push fan-out is the store's.** Every event a create or an append writes becomes one
/// [`PushJob`](super::PushJob) per push config the task has at that moment
/// ([`push_jobs`](super::push_jobs) says which), and the store makes that happen *atomically
/// with the write*: a store beside its push queue (the embedded one) enqueues the jobs in the
/// same transaction; DynamoDB lets the table's stream carry the write to
/// `A2aService::fan_out`. Either way a process that dies right after the write loses no push,
/// and a task without push configs costs nothing for push.
pub trait TaskStore: TaskLogStore + PushConfigStore + LeaseStore + ExecutionStore {}

impl<T: TaskLogStore + PushConfigStore + LeaseStore + ExecutionStore + ?Sized> TaskStore for T {}

/// Tasks and their event logs: heads, events, reply records and the by-owner listing.
#[async_trait]
pub trait TaskLogStore: Send + Sync + 'static {
    /// Creates a task: writes `head` (with `head.version == events.last().seq`) and the first
    /// events (seq 1..=n) atomically. `Conflict` if the task id exists.
    async fn create_task(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError>;

    /// Creates a task as [`Self::create_task`] does, with push configs that must see its first
    /// events (SendMessage's inline config): they are stored, and the create's events fan out
    /// to them. A store whose create reads the task's configs in its own transaction stores the
    /// configs, then creates the task; a store that cannot read during its create (DynamoDB)
    /// writes the configs' ids with the task instead.
    async fn create_task_with_push_configs(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
        configs: &[TaskPushNotificationConfig],
    ) -> Result<(), StoreError>;

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
}

/// Push configs and the record of their deliveries.
#[async_trait]
pub trait PushConfigStore: Send + Sync + 'static {
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
}

/// Execution leases: who runs a task now, and the attempts of its queued job.
#[async_trait]
pub trait LeaseStore: Send + Sync + 'static {
    /// Takes the execution lease of a task for `holder` until `until`, if it is free, expired, or
    /// already held by `holder`. `false` if someone else holds it.
    async fn acquire_lease(
        &self,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError>;

    /// Starts an attempt at the queued job that runs a task's message `trigger_seq`: takes the
    /// task's execution lease for `holder` until `until` (as [`Self::acquire_lease`]) and,
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

    /// Like [`Self::acquire_lease`], for an inline execution: the lease also records the
    /// task's owner and that nothing would redeliver its work, so that once it expires
    /// [`Self::list_expired_inline_leases`] lists it and a sweep can end the task. The
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

/// Durable executions: what a task's execution recorded, and what it waits for while parked
/// (see [`DurableExecution`]). One record per task; a task without durable work has none.
#[async_trait]
pub trait ExecutionStore: Send + Sync + 'static {
    /// The execution record of the owner's task, if it has one that has not expired.
    async fn load_execution(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<DurableExecution>, StoreError>;

    /// Writes `execution` if the stored record's version is `expected` (`None`: no record, or an
    /// expired one); `Conflict` otherwise, unless the stored record is `execution` itself (the
    /// same version and content: a repeat of a save that landed, its answer lost, is saved,
    /// not a conflict). `execution.version` is what the store keeps. The
    /// record is due again at [`DurableExecution::due_at`], when it has a wait:
    /// [`Self::list_due_executions`] lists it from then on. When the record has relay tokens
    /// ([`DurableExecution::relay_tokens`]) that differ from the task's [`RelayGate`], the
    /// gate becomes them (owner, tokens, the record's expiry) by the time the save returns.
    async fn save_execution(
        &self,
        execution: &DurableExecution,
        expected: Option<u64>,
    ) -> Result<(), StoreError>;

    /// The [`RelayGate`] of task `task_id`, if a record with relay tokens was saved for it and
    /// the gate has not expired: one small read, never the record's (the relay route checks a
    /// push's token with it before it reads anything else). Kept after
    /// [`Self::delete_execution`], until its expiry.
    async fn load_relay_gate(&self, task_id: &str) -> Result<Option<RelayGate>, StoreError>;

    /// Removes the record of the owner's task (its execution ended), if there is one.
    async fn delete_execution(&self, owner: &Owner, task_id: &str) -> Result<(), StoreError>;

    /// Up to `limit` records whose wait is due at or before `now`, soonest first.
    async fn list_due_executions(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<DueExecution>, StoreError>;

    /// Forgets `entry`, one [`Self::list_due_executions`] listed, whose record turned out not
    /// to wait for that time (or to be gone): a store that keeps what is due apart from its
    /// records (DynamoDB's due entries) may be left one by a save whose answer was lost.
    /// A store whose list reads the records themselves has nothing to forget.
    async fn forget_due_entry(&self, entry: &DueExecution) -> Result<(), StoreError>;
}
