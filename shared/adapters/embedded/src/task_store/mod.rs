//! The task store on SQLite: heads, the event log, push configs, their delivery records and
//! leases. Each part implements its store port in its own file: [`log`] the
//! [`a2a_core::TaskLogStore`], [`push_configs`] the [`a2a_core::PushConfigStore`], [`leases`]
//! the [`a2a_core::LeaseStore`], [`executions`] the [`a2a_core::ExecutionStore`]; [`counts`]
//! keeps ListTasks' counts.

mod counts;
mod executions;
mod leases;
mod log;
mod push_configs;

use a2a_core::StoreError;

pub(crate) use counts::fold_counts;

use crate::{now_ms, CachedStatements, SqliteStore};

/// How long an expired inline lease is kept for the sweep before the purge deletes it anyway.
const LEASE_PURGE_GRACE_MS: i64 = 24 * 3600 * 1000;

impl SqliteStore {
    /// Deletes expired tasks (with their events), push configs, leases and de-duplication
    /// keys. Returns how many tasks were removed.
    ///
    /// Reads already hide expired items, so this only reclaims space; the local server calls
    /// it periodically.
    pub async fn purge_expired(&self) -> Result<usize, StoreError> {
        self.write(|tx| {
            let now = now_ms();
            // Events are deleted explicitly rather than through the foreign key's cascade, so
            // that the purge does not depend on the connection's `foreign_keys` setting.
            tx.execute_cached(
                "DELETE FROM events WHERE task_id IN
                     (SELECT task_id FROM tasks WHERE expires_at_ms <= ?1)",
                [now],
            )?;
            let tasks = tx.execute_cached("DELETE FROM tasks WHERE expires_at_ms <= ?1", [now])?;
            tx.execute_cached("DELETE FROM push_configs WHERE expires_at_ms <= ?1", [now])?;
            tx.execute_cached(
                "DELETE FROM push_deliveries WHERE expires_at_ms <= ?1",
                [now],
            )?;
            tx.execute_cached(
                "DELETE FROM message_replies WHERE expires_at_ms <= ?1",
                [now],
            )?;
            // Expired inline leases are the sweep's to find (it ends their tasks), and a queued
            // job's lease carries its attempt count for the job's redelivery: both are purged
            // only after a day, like DynamoDB's TTL does.
            tx.execute_cached(
                "DELETE FROM leases WHERE until_ms <= ?1
                 AND ((inline = 0 AND job_attempts = 0) OR until_ms <= ?2)",
                [now, now - LEASE_PURGE_GRACE_MS],
            )?;
            tx.execute_cached("DELETE FROM dedup_keys WHERE expires_at_ms <= ?1", [now])?;
            tx.execute_cached("DELETE FROM executions WHERE expires_at_ms <= ?1", [now])?;
            tx.execute_cached("DELETE FROM relay_gates WHERE expires_at_ms <= ?1", [now])?;
            Ok(tasks)
        })
        .await
    }
}
