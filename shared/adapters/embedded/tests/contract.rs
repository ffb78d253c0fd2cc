//! The store contract suite against `SqliteStore`: once on one store, and once with every call
//! alternating between two stores on the same file (as two processes would).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{
    ExpiredLease, LeaseStore, LoggedEvent, Owner, PushAttempt, PushConfigStore, PushDeliveryState,
    SendRecord, StoreError, StoredReply, StoredTask, TaskLogStore, TaskPage, TaskQuery,
};
use a2a_embedded::SqliteStore;
use a2a_protocol::{TaskPushNotificationConfig, Timestamp};
use a2a_store_contract as store_contract;
use async_trait::async_trait;

fn open() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path()).expect("open");
    (dir, store)
}

/// One test per contract check, each on its own file, so a failure names the check.
macro_rules! contract_tests {
    ($($check:ident),+ $(,)?) => {
        $(
            #[tokio::test]
            async fn $check() {
                let (_dir, store) = open();
                store_contract::$check(&store).await;
            }
        )+
    };
}

contract_tests!(
    create_then_load,
    a_task_created_terminal_keeps_its_log,
    create_twice_conflicts,
    append_with_expected_version,
    stale_append_conflicts_and_changes_nothing,
    read_events_after_seq_and_limit,
    a_long_log_reads_back_whole_from_any_point,
    owner_scoping,
    expired_task_is_gone,
    list_orders_newest_status_first,
    list_paging,
    list_empty,
    list_cursor_survives_expiry_of_previous_page,
    list_filters,
    list_total_size_follows_every_change,
    list_invalid_page_token,
    push_config_crud,
    push_delivery_records,
    leases,
    job_attempts_are_counted_on_the_lease,
    push_attempts_are_counted_per_event,
    inline_leases,
    large_items_are_kept_whole_or_refused,
    reply_records,
    create_with_an_id_another_owner_holds_conflicts,
    push_config_keeps_its_protocol_version,
);

#[tokio::test]
async fn execution_records() {
    let (_dir, store) = open();
    store_contract::durable::execution_records(&store).await;
}

/// The durable execution checks, each on its own file: they run the service on the store.
macro_rules! durable_tests {
    ($($check:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                let (_dir, store) = open();
                store_contract::durable::$check(Arc::new(store)).await;
            }
        )+
    };
}

durable_tests!(
    durable_steps_park_and_resume,
    signals_resume_and_deadlines_end_waits,
    typed_signals_and_calls_inside_steps_fail_clearly,
    a_handed_over_execution_finishes_on_the_worker,
    a_large_remote_answer_is_kept_or_fails_the_call_clearly,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_record_does_not_hold_up_the_sweep() {
    let (dir, store) = open();
    let file = dir.path().join(a2a_embedded::DB_FILE_NAME);
    // What an older layout would have left: JSON this code does not read as a record.
    let poison: store_contract::durable::Poison = Box::new(move |_owner, task_id| {
        let file = file.clone();
        Box::pin(async move {
            let db = rusqlite::Connection::open(&file).expect("the store's file");
            db.busy_timeout(Duration::from_secs(5)).unwrap();
            let changed = db
                .execute(
                    "UPDATE executions SET body = '{\"owner\": 5}' WHERE task_id = ?1",
                    [&task_id],
                )
                .expect("damage the record");
            assert_eq!(changed, 1);
        })
    });
    store_contract::durable::a_broken_record_does_not_hold_up_the_sweep(Arc::new(store), poison)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_pushes_are_checked_before_anything_else() {
    let (dir, store) = open();
    let file = dir.path().join(a2a_embedded::DB_FILE_NAME);
    // What the previous version left: a parked wait without a gate.
    let forget: store_contract::relay::ForgetGate = Box::new(move |_owner, task_id| {
        let file = file.clone();
        Box::pin(async move {
            let db = rusqlite::Connection::open(&file).expect("the store's file");
            db.busy_timeout(Duration::from_secs(5)).unwrap();
            let removed = db
                .execute("DELETE FROM relay_gates WHERE task_id = ?1", [&task_id])
                .expect("forget the gate");
            assert_eq!(removed, 1);
        })
    });
    store_contract::relay::relay_pushes_are_checked_before_anything_else(Arc::new(store), forget)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_remote_does_not_hold_up_the_sweep() {
    let (_dir, store) = open();
    store_contract::relay::a_slow_remote_does_not_hold_up_the_sweep(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_are_gapless() {
    let (_dir, store) = open();
    store_contract::concurrent_appends_are_gapless(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_ends_orphaned_inline_executions() {
    let (_dir, store) = open();
    store_contract::sweep_ends_orphaned_inline_executions(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_suite_on_one_shared_store() {
    let (_dir, store) = open();
    store_contract::run_all_shared(Arc::new(store)).await;
}

/// Sends each call to the next of several stores in turn: a read on one connection, the
/// conditional write on another, as separate processes sharing the file would.
struct RoundRobin {
    stores: Vec<SqliteStore>,
    next: AtomicUsize,
}

impl RoundRobin {
    fn pick(&self) -> &SqliteStore {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        &self.stores[i % self.stores.len()]
    }
}

#[async_trait]
impl TaskLogStore for RoundRobin {
    async fn create_task(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        self.pick().create_task(head, events).await
    }

    async fn create_task_with_push_configs(
        &self,
        head: &StoredTask,
        events: &[LoggedEvent],
        configs: &[TaskPushNotificationConfig],
    ) -> Result<(), StoreError> {
        self.pick()
            .create_task_with_push_configs(head, events, configs)
            .await
    }

    async fn append_events(
        &self,
        head: &StoredTask,
        expected_version: u64,
        events: &[LoggedEvent],
    ) -> Result<(), StoreError> {
        self.pick()
            .append_events(head, expected_version, events)
            .await
    }

    async fn load_task(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<StoredTask>, StoreError> {
        self.pick().load_task(owner, task_id).await
    }

    async fn load_send(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<SendRecord>, StoreError> {
        self.pick().load_send(owner, task_id).await
    }

    async fn put_reply(&self, task_id: &str, reply: &StoredReply) -> Result<bool, StoreError> {
        self.pick().put_reply(task_id, reply).await
    }

    async fn read_events(
        &self,
        owner: &Owner,
        task_id: &str,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        self.pick()
            .read_events(owner, task_id, after_seq, limit)
            .await
    }

    async fn list_tasks(&self, owner: &Owner, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.pick().list_tasks(owner, query).await
    }

    async fn wait_for_append(&self, task_id: &str, after_version: u64, max_wait: Duration) {
        self.pick()
            .wait_for_append(task_id, after_version, max_wait)
            .await
    }
}

#[async_trait]
impl PushConfigStore for RoundRobin {
    async fn put_push_config(
        &self,
        owner: &Owner,
        config: &TaskPushNotificationConfig,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        self.pick().put_push_config(owner, config, expires_at).await
    }

    async fn get_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        self.pick().get_push_config(owner, task_id, config_id).await
    }

    async fn list_push_configs(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        self.pick().list_push_configs(owner, task_id).await
    }

    async fn delete_push_config(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<bool, StoreError> {
        self.pick()
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
        self.pick()
            .record_push_attempt(owner, task_id, config_id, attempt, expires_at)
            .await
    }

    async fn get_push_delivery(
        &self,
        owner: &Owner,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<PushDeliveryState>, StoreError> {
        self.pick()
            .get_push_delivery(owner, task_id, config_id)
            .await
    }
}

#[async_trait]
impl a2a_core::ExecutionStore for RoundRobin {
    async fn load_execution(
        &self,
        owner: &Owner,
        task_id: &str,
    ) -> Result<Option<a2a_core::DurableExecution>, StoreError> {
        self.pick().load_execution(owner, task_id).await
    }

    async fn save_execution(
        &self,
        execution: &a2a_core::DurableExecution,
        expected: Option<u64>,
    ) -> Result<(), StoreError> {
        self.pick().save_execution(execution, expected).await
    }

    async fn delete_execution(&self, owner: &Owner, task_id: &str) -> Result<(), StoreError> {
        self.pick().delete_execution(owner, task_id).await
    }

    async fn load_relay_gate(
        &self,
        task_id: &str,
    ) -> Result<Option<a2a_core::RelayGate>, StoreError> {
        self.pick().load_relay_gate(task_id).await
    }

    async fn list_due_executions(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<a2a_core::DueExecution>, StoreError> {
        self.pick().list_due_executions(now, limit).await
    }

    async fn forget_due_entry(&self, entry: &a2a_core::DueExecution) -> Result<(), StoreError> {
        self.pick().forget_due_entry(entry).await
    }
}

#[async_trait]
impl LeaseStore for RoundRobin {
    async fn acquire_lease(
        &self,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError> {
        self.pick().acquire_lease(task_id, holder, until).await
    }

    async fn begin_job_attempt(
        &self,
        task_id: &str,
        trigger_seq: u64,
        holder: &str,
        until: Timestamp,
    ) -> Result<Option<u32>, StoreError> {
        self.pick()
            .begin_job_attempt(task_id, trigger_seq, holder, until)
            .await
    }

    async fn release_lease(&self, task_id: &str, holder: &str) -> Result<(), StoreError> {
        self.pick().release_lease(task_id, holder).await
    }

    async fn acquire_inline_lease(
        &self,
        owner: &Owner,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError> {
        self.pick()
            .acquire_inline_lease(owner, task_id, holder, until)
            .await
    }

    async fn list_expired_inline_leases(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<ExpiredLease>, StoreError> {
        self.pick().list_expired_inline_leases(now, limit).await
    }

    async fn remove_expired_lease(&self, lease: &ExpiredLease) -> Result<bool, StoreError> {
        self.pick().remove_expired_lease(lease).await
    }
}

/// Two stores on one file (two "processes"): the whole suite, including eight writers racing
/// on one task through both connections, holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_suite_across_two_stores_on_one_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stores = vec![
        SqliteStore::open(dir.path()).expect("open first"),
        SqliteStore::open(dir.path()).expect("open second"),
    ];
    let store = RoundRobin {
        stores,
        next: AtomicUsize::new(0),
    };
    store_contract::run_all_shared(Arc::new(store)).await;
}
