//! Execution leases on SQLite (`leases`): queued jobs' leases with their attempt counts, and
//! inline executions' leases for the sweep.

use a2a_core::{ExpiredLease, LeaseStore, Owner, StoreError};
use a2a_protocol::Timestamp;
use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use crate::{now_ms, to_i64, CachedStatements, SqliteStore};

impl SqliteStore {
    /// Takes a task's lease: queued (`owner` is `None`) or inline (with the task's owner).
    async fn take_lease(
        &self,
        task_id: &str,
        holder: &str,
        until: Timestamp,
        owner: Option<String>,
    ) -> Result<bool, StoreError> {
        let task_id = task_id.to_owned();
        let holder = holder.to_owned();
        let until_ms = until.millis();
        self.write(move |tx| {
            let inline = owner.is_some();
            // The upsert's WHERE decides in one statement: take a free or expired lease, renew
            // our own, leave anyone else's alone (then no row changes).
            let changed = tx.execute_cached(
                "INSERT INTO leases (task_id, holder, until_ms, owner, inline)
                 VALUES (?1, ?2, ?3, ?5, ?6)
                 ON CONFLICT (task_id) DO UPDATE
                 SET holder = excluded.holder, until_ms = excluded.until_ms,
                     owner = excluded.owner, inline = excluded.inline
                 WHERE leases.holder = excluded.holder OR leases.until_ms <= ?4",
                params![task_id, holder, until_ms, now_ms(), owner, inline],
            )?;
            Ok(changed == 1)
        })
        .await
    }

    /// [`a2a_core::LeaseStore::begin_job_attempt`]: takes the lease as a queued one and counts the
    /// attempt in the same upsert.
    async fn take_job_lease(
        &self,
        task_id: &str,
        trigger_seq: u64,
        holder: &str,
        until: Timestamp,
    ) -> Result<Option<u32>, StoreError> {
        let task_id = task_id.to_owned();
        let holder = holder.to_owned();
        let until_ms = until.millis();
        let seq = i64::try_from(trigger_seq).unwrap_or(i64::MAX);
        self.write(move |tx| {
            // Same WHERE as `take_lease`; the SET sees the old row, so the count goes on for
            // the same job and starts again for another one.
            let attempts: Option<i64> = tx
                .query_row_cached(
                    "INSERT INTO leases (task_id, holder, until_ms, owner, inline, job_seq, job_attempts)
                     VALUES (?1, ?2, ?3, NULL, 0, ?5, 1)
                     ON CONFLICT (task_id) DO UPDATE
                     SET holder = excluded.holder, until_ms = excluded.until_ms,
                         owner = NULL, inline = 0,
                         job_attempts = CASE WHEN leases.job_seq = excluded.job_seq
                                             THEN leases.job_attempts + 1 ELSE 1 END,
                         job_seq = excluded.job_seq
                     WHERE leases.holder = excluded.holder OR leases.until_ms <= ?4
                     RETURNING job_attempts",
                    params![task_id, holder, until_ms, now_ms(), seq],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(attempts.map(|n| u32::try_from(n).unwrap_or(u32::MAX)))
        })
        .await
    }
}

#[async_trait]
impl LeaseStore for SqliteStore {
    async fn acquire_lease(
        &self,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError> {
        self.take_lease(task_id, holder, until, None).await
    }

    async fn begin_job_attempt(
        &self,
        task_id: &str,
        trigger_seq: u64,
        holder: &str,
        until: Timestamp,
    ) -> Result<Option<u32>, StoreError> {
        self.take_job_lease(task_id, trigger_seq, holder, until)
            .await
    }

    async fn acquire_inline_lease(
        &self,
        owner: &Owner,
        task_id: &str,
        holder: &str,
        until: Timestamp,
    ) -> Result<bool, StoreError> {
        self.take_lease(task_id, holder, until, Some(owner.as_str().to_owned()))
            .await
    }

    async fn release_lease(&self, task_id: &str, holder: &str) -> Result<(), StoreError> {
        let task_id = task_id.to_owned();
        let holder = holder.to_owned();
        self.write(move |tx| {
            tx.execute_cached(
                "DELETE FROM leases WHERE task_id = ?1 AND holder = ?2",
                params![task_id, holder],
            )?;
            Ok(())
        })
        .await
    }

    async fn list_expired_inline_leases(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<ExpiredLease>, StoreError> {
        let limit = to_i64(limit as u64);
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT task_id, owner, holder, until_ms FROM leases
                 WHERE inline = 1 AND until_ms <= ?1 ORDER BY until_ms LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![now.millis(), limit], |r| {
                Ok(ExpiredLease {
                    task_id: r.get(0)?,
                    owner: Owner(r.get::<_, Option<String>>(1)?.unwrap_or_default()),
                    holder: r.get(2)?,
                    until: Timestamp::from_millis(r.get(3)?),
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }

    async fn remove_expired_lease(&self, lease: &ExpiredLease) -> Result<bool, StoreError> {
        let lease = lease.clone();
        self.write(move |tx| {
            let removed = tx.execute_cached(
                "DELETE FROM leases
                 WHERE task_id = ?1 AND holder = ?2 AND until_ms = ?3 AND inline = 1",
                params![lease.task_id, lease.holder, lease.until.millis()],
            )?;
            Ok(removed == 1)
        })
        .await
    }
}
