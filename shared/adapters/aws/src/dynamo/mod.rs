//! [`TaskStore`] on one DynamoDB table (layout in [`crate::items`] and `docs/aws-adapters.md`).
//!
//! Correctness rests on conditional writes only: a create is conditional on the head not
//! existing (or having expired), an append is one `UpdateItem` of the head conditional on its
//! version, owner and expiry. No locks; in-process state is a cache of the heads this process
//! last saw ([`log`]), which saves reads, never decides anything.
//!
//! One file per part of the store: [`table`] (what they share: expressions, metering, the one
//! paged query), [`log`] (heads and events), [`list`] (ListTasks on the by-owner index),
//! [`push_configs`] (push configs and delivery records) and [`leases`]. The [`TaskStore`]
//! implementation below only routes each call to its part.

mod leases;
mod list;
mod log;
mod push_configs;
mod table;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{
    ExpiredLease, LoggedEvent, Owner, PushAttempt, PushDeliveryState, SendRecord, StoreError,
    StoredReply, StoredTask, TaskPage, TaskQuery, TaskStore,
};
use a2a_protocol::{TaskPushNotificationConfig, Timestamp};
use async_trait::async_trait;

use crate::meter::Meter;
use log::HeadCache;

/// The condition of a conditional write that creates an item (a task's head or event, a
/// reply, a push delivery record): none at its key, or an expired one. An expired item is gone
/// as far as readers are concerned, even before DynamoDB's TTL deletes it, so its key is free
/// again. Uses `#pk`, `#exp` and `:now`.
const ABSENT_OR_EXPIRED: &str = "attribute_not_exists(#pk) OR #exp <= :now";

/// First pause of [`TaskStore::wait_for_append`]'s polling (and of a batch read's retry); it
/// doubles up to [`MAX_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(50);
/// Longest pause between two polls: the worst added latency of a stream that waits for
/// another instance's events, traded against one small query per pause while idle.
const MAX_POLL: Duration = Duration::from_millis(500);

/// The task store on DynamoDB.
///
/// Cloning is cheap and shares the client. Build it once per process with a client built once
/// ([`crate::AwsClients`]).
#[derive(Clone)]
pub struct DynamoTaskStore {
    client: aws_sdk_dynamodb::Client,
    table: Arc<str>,
    meter: Option<Meter>,
    heads: HeadCache,
}

impl fmt::Debug for DynamoTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamoTaskStore")
            .field("table", &self.table)
            .field("metered", &self.meter.is_some())
            .finish_non_exhaustive()
    }
}

impl DynamoTaskStore {
    /// A store on `table`, through `client`.
    pub fn new(client: aws_sdk_dynamodb::Client, table: &str) -> Self {
        Self {
            client,
            table: Arc::from(table),
            meter: None,
            heads: HeadCache::default(),
        }
    }

    /// Records every request of this store (and asks DynamoDB to report consumed capacity).
    pub fn with_meter(mut self, meter: Meter) -> Self {
        self.meter = Some(meter);
        self
    }

    /// The table this store writes to.
    pub fn table(&self) -> &str {
        &self.table
    }
}

// Each method calls the inherent method of the same name in its part's module (inherent
// methods take precedence over trait methods).
#[async_trait]
impl TaskStore for DynamoTaskStore {
    async fn create_task(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        Self::create_task(self, head, events, &[]).await
    }

    async fn create_task_with_push_configs(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
        configs: &[TaskPushNotificationConfig],
    ) -> Result<(), StoreError> {
        Self::create_task_with_push_configs(self, head, events, configs).await
    }

    async fn append_events(
        &self,
        head: &StoredTask,
        expected_version: u64,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        Self::append_events(self, head, expected_version, events).await
    }

    async fn load_task(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<StoredTask>, StoreError> {
        Self::load_task(self, owner, task_id).await
    }

    async fn load_send(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<SendRecord>, StoreError> {
        Self::load_send(self, owner, task_id).await
    }

    async fn put_reply(&self, task_id: &str, reply: &StoredReply) -> Result<bool, StoreError> {
        Self::put_reply(self, task_id, reply).await
    }

    async fn read_events(
        &self,
        owner: &Owner,
        task_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        Self::read_events(self, owner, task_id, after_seq, limit).await
    }

    async fn list_tasks(&self, owner: &Owner, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        Self::list_tasks(self, owner, query).await
    }

    async fn wait_for_append(&self, task_id: &str, after_version: u64, max_wait: Duration) {
        Self::wait_for_append(self, task_id, after_version, max_wait).await;
    }

    async fn put_push_config(
        &self,
        owner: &Owner,
        config: &TaskPushNotificationConfig,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        Self::put_push_config(self, owner, config, expires_at).await
    }

    async fn get_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        Self::get_push_config(self, owner, task_id, config_id).await
    }

    async fn list_push_configs(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        Self::list_push_configs(self, owner, task_id).await
    }

    async fn delete_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<bool, StoreError> {
        Self::delete_push_config(self, owner, task_id, config_id).await
    }

    async fn record_push_attempt(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
        attempt: &PushAttempt,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        Self::record_push_attempt(self, owner, task_id, config_id, attempt, expires_at).await
    }

    async fn get_push_delivery(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<PushDeliveryState>, StoreError> {
        Self::get_push_delivery(self, owner, task_id, config_id).await
    }

    async fn acquire_lease(
        &self,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError> {
        Self::acquire_lease(self, task_id, holder, until, None).await
    }

    async fn begin_job_attempt(
        &self,
        task_id: &str,
        trigger_seq: u64,
        holder: &str,
        until: Timestamp,
    ) -> Result<Option<u32>, StoreError> {
        Self::begin_job_attempt(self, task_id, trigger_seq, holder, until).await
    }

    async fn release_lease(&self, task_id: &str, holder: &str) -> Result<(), StoreError> {
        Self::release_lease(self, task_id, holder).await
    }

    async fn acquire_inline_lease(
        &self,
        owner: &Owner,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError> {
        Self::acquire_lease(self, task_id, holder, until, Some(owner)).await
    }

    async fn list_expired_inline_leases(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<ExpiredLease>, StoreError> {
        Self::list_expired_inline_leases(self, now, limit).await
    }

    async fn remove_expired_lease(&self, lease: &ExpiredLease) -> Result<bool, StoreError> {
        Self::remove_expired_lease(self, lease).await
    }
}
