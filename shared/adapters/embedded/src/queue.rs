//! The work and push queues: the in-process stand-in for SQS, durable in the same file.
//!
//! Producers use the core's [`WorkQueue`] and [`PushQueue`] ports; consumers receive with
//! [`SqliteStore::receive`], then settle each job with [`SqliteStore::delete_job`],
//! [`SqliteStore::retry_job`] or [`SqliteStore::dead_letter`]. [`EmbeddedQueue`] is one queue
//! as the core's job runner consumes it (its [`JobQueue`] port).
//!
//! Like SQS, delivery is at least once: a job whose visibility timeout passes before it is
//! settled is handed out again, with a higher `receive_count`. Jobs are settled by id (there
//! are no receipt handles), so a consumer should settle a job within its visibility timeout, or
//! extend it with [`SqliteStore::retry_job`], as the worker does while it runs.

use std::time::Duration;

use a2a_core::{JobQueue, Settlement};
use a2a_core::{PushJob, PushQueue, StoreError, WorkJob, WorkQueue};
use async_trait::async_trait;
use rusqlite::{params, Connection};
use tokio::sync::watch;

use crate::{duration_ms, now_ms, wait_tick, CachedStatements, DbError, SqliteStore};

/// How long a push job's de-duplication key is remembered, as in SQS FIFO queues.
const DEDUP_WINDOW: Duration = Duration::from_secs(5 * 60);

/// One of the two queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueName {
    /// Agent runs ([`WorkJob`] bodies); a standard queue.
    Work,
    /// Push deliveries ([`PushJob`] bodies); FIFO per task, de-duplicated.
    Push,
}

impl QueueName {
    /// The queue's name as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Work => "work",
            Self::Push => "push",
        }
    }

    /// The statement selecting the jobs that may be handed out now (`?1` = now, `?2` = limit),
    /// oldest first.
    fn eligible_sql(self) -> &'static str {
        match self {
            Self::Work => {
                "SELECT id, body, receive_count, group_key FROM jobs
                 WHERE queue = 'work' AND visible_at_ms <= ?1
                 ORDER BY id LIMIT ?2"
            }
            // FIFO message groups: only the oldest job of each task may be handed out, and only
            // when it is visible. While it is in flight (or waiting for a retry) the jobs behind
            // it wait too, so a receiver sees a task's events in order.
            Self::Push => {
                "SELECT j.id, j.body, j.receive_count, j.group_key FROM jobs j
                 WHERE j.queue = 'push' AND j.visible_at_ms <= ?1
                   AND j.id = (SELECT MIN(k.id) FROM jobs k
                               WHERE k.queue = 'push' AND k.group_key = j.group_key)
                 ORDER BY j.id LIMIT ?2"
            }
        }
    }
}

/// A job handed out by [`SqliteStore::receive`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedJob {
    /// The job's id, to settle it with.
    pub id: i64,
    /// The JSON body ([`WorkJob`] or [`PushJob`]).
    pub body: String,
    /// How many times the job has been handed out, this time included (1 on the first).
    pub receive_count: u32,
    /// The push job's task (its FIFO group); `None` on the work queue.
    pub group: Option<String>,
}

impl From<ReceivedJob> for a2a_core::ReceivedJob<i64> {
    fn from(job: ReceivedJob) -> Self {
        Self {
            body: job.body,
            receive_count: job.receive_count,
            group: job.group,
            receipt: job.id,
        }
    }
}

fn eligible(
    conn: &Connection,
    queue: QueueName,
    now: i64,
    max: usize,
) -> Result<Vec<ReceivedJob>, DbError> {
    let mut stmt = conn.prepare_cached(queue.eligible_sql())?;
    let jobs = stmt
        .query_map(params![now, i64::try_from(max).unwrap_or(i64::MAX)], |r| {
            Ok(ReceivedJob {
                id: r.get(0)?,
                body: r.get(1)?,
                receive_count: u32::try_from(r.get::<_, i64>(2)?).unwrap_or(u32::MAX),
                group: r.get(3)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(jobs)
}

impl SqliteStore {
    fn enqueued(&self, queue: QueueName) -> &watch::Sender<u64> {
        match queue {
            QueueName::Work => &self.inner.work_enqueued,
            QueueName::Push => &self.inner.push_enqueued,
        }
    }

    /// Claims up to `max` jobs that are visible now, oldest first: each becomes invisible for
    /// `visibility` and its `receive_count` goes up by one.
    ///
    /// On the push queue only the oldest job of each task is eligible, and not while it is in
    /// flight, as with SQS FIFO message groups. Empty if nothing is eligible.
    pub async fn receive(
        &self,
        queue: QueueName,
        max: usize,
        visibility: Duration,
    ) -> Result<Vec<ReceivedJob>, StoreError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        self.write(move |tx| {
            let now = now_ms();
            // Immediate: the select and the claim form one step, so two consumers (or two
            // processes) never claim the same job.
            let mut jobs = eligible(tx, queue, now, max)?;
            {
                let mut claim = tx.prepare_cached(
                    "UPDATE jobs SET visible_at_ms = ?2, receive_count = receive_count + 1
                     WHERE id = ?1",
                )?;
                let invisible_until = now.saturating_add(duration_ms(visibility));
                for job in &mut jobs {
                    claim.execute(params![job.id, invisible_until])?;
                    job.receive_count = job.receive_count.saturating_add(1);
                }
            }
            Ok(jobs)
        })
        .await
    }

    /// Deletes a job: it was handled (or there is nothing left to do). Deleting a job that is
    /// already gone is not an error.
    pub async fn delete_job(&self, id: i64) -> Result<(), StoreError> {
        self.write(move |tx| {
            tx.execute_cached("DELETE FROM jobs WHERE id = ?1", [id])?;
            Ok(())
        })
        .await
    }

    /// Makes a job visible again `after` from now, for another attempt. On the push queue the
    /// task's later jobs keep waiting behind it.
    pub async fn retry_job(&self, id: i64, after: Duration) -> Result<(), StoreError> {
        self.write(move |tx| {
            tx.execute_cached(
                "UPDATE jobs SET visible_at_ms = ?2 WHERE id = ?1",
                params![id, now_ms().saturating_add(duration_ms(after))],
            )?;
            Ok(())
        })
        .await
    }

    /// Moves a job to its queue's dead letters, with the reason of the last failure. On the
    /// push queue this unblocks the task's later jobs.
    pub async fn dead_letter(&self, id: i64, reason: &str) -> Result<(), StoreError> {
        let reason = reason.to_owned();
        self.write(move |tx| {
            tx.execute_cached(
                "INSERT INTO dead_letters (queue, body, receive_count, reason, moved_at_ms)
                 SELECT queue, body, receive_count, ?2, ?3 FROM jobs WHERE id = ?1",
                params![id, reason, now_ms()],
            )?;
            tx.execute_cached("DELETE FROM jobs WHERE id = ?1", [id])?;
            Ok(())
        })
        .await
    }

    /// The dead letters of a queue as `(body, reason)`, oldest first.
    pub async fn dead_letters(
        &self,
        queue: QueueName,
    ) -> Result<Vec<(String, String)>, StoreError> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT body, reason FROM dead_letters WHERE queue = ?1 ORDER BY id",
            )?;
            let letters = stmt
                .query_map([queue.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(letters)
        })
        .await
    }

    /// Returns once a job of `queue` may be eligible, or after `max_wait`.
    ///
    /// Enqueues by this process wake it at once; jobs enqueued by other processes, or becoming
    /// visible again after a timeout or retry delay, are noticed within a short poll interval.
    /// Only a hint: call [`receive`](Self::receive) either way.
    pub async fn wait_for_job(&self, queue: QueueName, max_wait: Duration) {
        let deadline = tokio::time::Instant::now() + max_wait;
        let mut rx = self.enqueued(queue).subscribe();
        loop {
            // Seen before the check, so an enqueue after it still ends the wait.
            rx.borrow_and_update();
            let ready = self
                .read(move |conn| Ok(!eligible(conn, queue, now_ms(), 1)?.is_empty()))
                .await;
            match ready {
                Ok(true) => return,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(error = %e, queue = queue.as_str(), "wait_for_job could not read the queue");
                    return;
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return;
            }
            wait_tick(&mut rx, deadline).await;
        }
    }
}

/// One queue of the embedded store, as the core's job runner consumes it. Cloning is cheap.
#[derive(Clone)]
pub struct EmbeddedQueue {
    store: SqliteStore,
    name: QueueName,
}

impl SqliteStore {
    /// The consumer side of one of the store's queues.
    pub fn queue(&self, name: QueueName) -> EmbeddedQueue {
        EmbeddedQueue {
            store: self.clone(),
            name,
        }
    }
}

impl EmbeddedQueue {
    /// Which queue this is.
    pub fn name(&self) -> QueueName {
        self.name
    }

    /// Claims up to `max` jobs, each invisible for `visibility`, as [`SqliteStore::receive`].
    pub async fn receive(
        &self,
        max: usize,
        visibility: Duration,
    ) -> Result<Vec<a2a_core::ReceivedJob<i64>>, StoreError> {
        let received = self.store.receive(self.name, max, visibility).await?;
        Ok(received.into_iter().map(Into::into).collect())
    }

    /// Returns once a job may be eligible, or after `max_wait`, as
    /// [`SqliteStore::wait_for_job`].
    pub async fn wait_for_job(&self, max_wait: Duration) {
        self.store.wait_for_job(self.name, max_wait).await;
    }
}

#[async_trait]
impl JobQueue for EmbeddedQueue {
    /// The job's row id.
    type Receipt = i64;

    async fn settle(
        &self,
        job: &a2a_core::ReceivedJob<i64>,
        settlement: &Settlement,
    ) -> Result<(), StoreError> {
        match settlement {
            Settlement::Delete => self.store.delete_job(job.receipt).await,
            Settlement::RetryAfter(after) => self.store.retry_job(job.receipt, *after).await,
            Settlement::DeadLetter(reason) => self.store.dead_letter(job.receipt, reason).await,
        }
    }
}

#[async_trait]
impl WorkQueue for SqliteStore {
    async fn enqueue_work(&self, job: &WorkJob) -> Result<(), StoreError> {
        self.enqueue_work_after(job, Duration::ZERO).await
    }

    async fn enqueue_work_after(&self, job: &WorkJob, delay: Duration) -> Result<(), StoreError> {
        let body = serde_json::to_string(job).map_err(DbError::from)?;
        let delay_ms = i64::try_from(delay.as_millis()).unwrap_or(i64::MAX);
        self.write(move |tx| {
            let now = now_ms();
            tx.execute_cached(
                "INSERT INTO jobs (queue, body, group_key, visible_at_ms, receive_count, created_ms)
                 VALUES ('work', ?1, NULL, ?2, 0, ?3)",
                params![body, now.saturating_add(delay_ms), now],
            )?;
            Ok(())
        })
        .await?;
        self.enqueued(QueueName::Work)
            .send_modify(|n| *n = n.wrapping_add(1));
        Ok(())
    }
}

#[async_trait]
impl PushQueue for SqliteStore {
    async fn enqueue_push(&self, jobs: &[PushJob]) -> Result<(), StoreError> {
        if jobs.is_empty() {
            return Ok(());
        }
        let rows = push_rows(jobs)?;
        let inserted = self.write(move |tx| insert_push_rows(tx, &rows)).await?;
        self.push_enqueued(inserted);
        Ok(())
    }
}

/// Push jobs as rows: de-duplication key, FIFO group (the task), JSON body.
pub(crate) type PushRow = (String, String, String);

/// `jobs` as [`PushRow`]s, serialised before entering a write.
pub(crate) fn push_rows(jobs: &[PushJob]) -> Result<Vec<PushRow>, DbError> {
    jobs.iter()
        .map(|job| {
            Ok((
                job.dedup_id(),
                job.task_id.clone(),
                serde_json::to_string(job)?,
            ))
        })
        .collect()
}

/// Inserts push jobs in the transaction `tx`, in order, skipping those whose de-duplication key
/// was seen within the window. Returns how many were inserted. The one insert of the push
/// queue: [`PushQueue::enqueue_push`] and the task store's own fan-out (inside the transaction
/// that writes the events) both use it.
pub(crate) fn insert_push_rows(tx: &Connection, rows: &[PushRow]) -> Result<usize, DbError> {
    let now = now_ms();
    let dedup_until = now.saturating_add(duration_ms(DEDUP_WINDOW));
    let mut inserted = 0;
    // A key seen within the window (even if its job is long delivered) is a duplicate and
    // silently dropped, like SQS FIFO de-duplication. The upsert only refreshes a key whose
    // window is over.
    let mut remember = tx.prepare_cached(
        "INSERT INTO dedup_keys (queue, dedup_key, expires_at_ms)
         VALUES ('push', ?1, ?2)
         ON CONFLICT (queue, dedup_key) DO UPDATE
         SET expires_at_ms = excluded.expires_at_ms
         WHERE dedup_keys.expires_at_ms <= ?3",
    )?;
    // Ids grow in insertion order, which is the delivery order within a task.
    let mut insert = tx.prepare_cached(
        "INSERT INTO jobs
             (queue, body, group_key, visible_at_ms, receive_count, created_ms)
         VALUES ('push', ?1, ?2, ?3, 0, ?3)",
    )?;
    for (dedup_key, group_key, body) in rows {
        if remember.execute(params![dedup_key, dedup_until, now])? == 1 {
            insert.execute(params![body, group_key, now])?;
            inserted += 1;
        }
    }
    Ok(inserted)
}

impl SqliteStore {
    /// Wakes the push consumers of this process after `inserted` jobs were committed.
    pub(crate) fn push_enqueued(&self, inserted: usize) {
        if inserted > 0 {
            self.enqueued(QueueName::Push)
                .send_modify(|n| *n = n.wrapping_add(1));
        }
    }
}
