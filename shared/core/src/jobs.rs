//! The one job runner for queued work and push delivery, whatever the queue.
//!
//! A consumer (the Lambda worker and push functions, the local server's loops) receives jobs
//! its own way, hands them to [`run_jobs`] with the per-job handler
//! ([`A2aService::run_work_job`](crate::A2aService::run_work_job) or
//! [`A2aService::deliver_push`](crate::A2aService::deliver_push)), and the runner decides what
//! becomes of each one: parse it or dead-letter it, keep it invisible while it runs, delete it,
//! retry it after the handler's backoff, dead-letter it after the last attempt, and within a
//! message group go in order and hand back untried whatever follows a job that stays queued.
//!
//! The runner does no I/O itself: it drives a [`JobQueue`], which the SQS Lambda batch, the SQS
//! poller and the embedded queue implement as thin adapters.

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use serde::de::DeserializeOwned;

use crate::ports::{JobOutcome, StoreError};

/// A job as a queue handed it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedJob<R> {
    /// The body: JSON of the job.
    pub body: String,
    /// How many times the queue has handed the job out, this time included (1 on the first).
    /// Not the attempt number: on Lambda a throttled delivery raises it without any handler
    /// running, so handlers count their attempts in the store and use this only for logs and
    /// as a hint (1 means no attempt can have been made yet).
    pub receive_count: u32,
    /// The FIFO message group (a push job's task); jobs of one group are run in order. `None`
    /// on a standard queue: the job is a group of its own.
    pub group: Option<String>,
    /// What the queue needs to settle this receipt (a receipt handle, a row id).
    pub receipt: R,
}

/// What becomes of a received job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settlement {
    /// Handled (or nothing left to do): remove it.
    Delete,
    /// Hand it out again this long from now: a retry after a backoff, or with
    /// `Duration::ZERO` a job handed back untried.
    RetryAfter(Duration),
    /// Give up on it: move it to the dead-letter queue with this reason.
    DeadLetter(String),
}

/// The consumer side of a queue, as the runner needs it: settle a received job, or keep it
/// invisible while it runs.
#[async_trait]
pub trait JobQueue: Send + Sync {
    /// What identifies a receipt to the queue.
    type Receipt: Send + Sync;

    /// Applies `settlement` to `job`.
    async fn settle(
        &self,
        job: &ReceivedJob<Self::Receipt>,
        settlement: &Settlement,
    ) -> Result<(), StoreError>;

    /// Keeps `job` invisible to other consumers for `visibility` from now, while it runs. On
    /// SQS and the embedded queue this is the same call as a retry after `visibility`.
    async fn extend_visibility(
        &self,
        job: &ReceivedJob<Self::Receipt>,
        visibility: Duration,
    ) -> Result<(), StoreError> {
        self.settle(job, &Settlement::RetryAfter(visibility)).await
    }
}

/// How the runner treats the jobs of one queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobPolicy {
    /// Dead-letter a job whose handler asks for a retry on this receive or a later one: a
    /// limit by the queue's receive count, for handlers that do not count their own attempts.
    /// `None`: only when the handler says so ([`JobOutcome::DeadLetter`]), which is what the
    /// A2A work and push handlers do (they count attempts in the store, so a receive that
    /// never reached them is not an attempt).
    pub max_attempts: Option<u32>,
    /// Keep a running job invisible for this long, extended every third of it.
    pub visibility: Option<Duration>,
}

/// What the runner did with one received job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// Whether the job was handed to its handler (not when unreadable or handed back untried).
    pub attempted: bool,
    /// What the runner asked of the queue.
    pub settlement: Settlement,
    /// Whether the queue did it.
    pub applied: bool,
}

impl Settled {
    /// Whether the job is still on the queue, to be handed out again: retried, handed back, or
    /// not settled at all. On Lambda these are the batch item failures.
    pub fn stays_queued(&self) -> bool {
        !self.applied || matches!(self.settlement, Settlement::RetryAfter(_))
    }
}

/// Runs received jobs through `handler` and settles each on `queue`; returns what became of
/// them, in the order given.
///
/// Groups run concurrently; a group's jobs run one after another. Once a job of a group stays
/// queued, the group's later jobs are handed back untried: the queue gives them out again only
/// after that one, so a receiver never sees a task's events out of order. An unreadable body is
/// dead-lettered with the parse error as the reason (it would never get better), and so is a
/// job whose handler gives up ([`JobOutcome::DeadLetter`]).
pub async fn run_jobs<Q, T, F, Fut>(
    queue: &Q,
    jobs: Vec<ReceivedJob<Q::Receipt>>,
    policy: JobPolicy,
    handler: F,
) -> Vec<Settled>
where
    Q: JobQueue + ?Sized,
    T: DeserializeOwned,
    F: Fn(T, u32) -> Fut,
    Fut: Future<Output = JobOutcome>,
{
    let mut groups: Vec<(Option<&str>, Vec<usize>)> = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let group = job.group.as_deref();
        match groups
            .iter_mut()
            .find(|(g, _)| group.is_some() && *g == group)
        {
            Some((_, members)) => members.push(i),
            None => groups.push((group, vec![i])),
        }
    }
    let runs = groups
        .iter()
        .map(|(_, members)| run_group(queue, &jobs, members, policy, &handler));
    let mut settled: Vec<(usize, Settled)> = futures::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
        .collect();
    settled.sort_by_key(|(i, _)| *i);
    settled.into_iter().map(|(_, s)| s).collect()
}

async fn run_group<Q, T, F, Fut>(
    queue: &Q,
    jobs: &[ReceivedJob<Q::Receipt>],
    members: &[usize],
    policy: JobPolicy,
    handler: &F,
) -> Vec<(usize, Settled)>
where
    Q: JobQueue + ?Sized,
    T: DeserializeOwned,
    F: Fn(T, u32) -> Fut,
    Fut: Future<Output = JobOutcome>,
{
    let mut out = Vec::with_capacity(members.len());
    let mut held_up = false;
    for &i in members {
        let job = &jobs[i];
        let settled = if held_up {
            settle(queue, job, Settlement::RetryAfter(Duration::ZERO), false).await
        } else {
            run_one(queue, job, policy, handler).await
        };
        held_up |= settled.stays_queued();
        out.push((i, settled));
    }
    out
}

async fn run_one<Q, T, F, Fut>(
    queue: &Q,
    job: &ReceivedJob<Q::Receipt>,
    policy: JobPolicy,
    handler: &F,
) -> Settled
where
    Q: JobQueue + ?Sized,
    T: DeserializeOwned,
    F: Fn(T, u32) -> Fut,
    Fut: Future<Output = JobOutcome>,
{
    let receive_count = job.receive_count;
    let parsed: T = match serde_json::from_str(&job.body) {
        Ok(parsed) => parsed,
        Err(err) => {
            let reason = format!("unreadable job body: {err}");
            tracing::error!(group = ?job.group, %reason, "dead-lettering an unreadable job");
            return settle(queue, job, Settlement::DeadLetter(reason), false).await;
        }
    };
    let run = handler(parsed, receive_count);
    let outcome = match policy.visibility {
        Some(visibility) => {
            while_running(run, visibility / 3, || async move {
                if let Err(err) = queue.extend_visibility(job, visibility).await {
                    tracing::warn!(error = %err, "extending a running job's visibility failed");
                }
            })
            .await
        }
        None => run.await,
    };
    let settlement = match outcome {
        JobOutcome::Done => Settlement::Delete,
        JobOutcome::Retry { reason, .. }
            if policy.max_attempts.is_some_and(|max| receive_count >= max) =>
        {
            tracing::error!(group = ?job.group, receive_count, %reason, "giving up on a job after its last attempt");
            Settlement::DeadLetter(reason)
        }
        JobOutcome::Retry { reason, after } => {
            tracing::warn!(group = ?job.group, receive_count, ?after, %reason, "will retry a job");
            Settlement::RetryAfter(after)
        }
        JobOutcome::DeadLetter { reason } => {
            tracing::error!(group = ?job.group, receive_count, %reason, "giving up on a job: its attempts are exhausted");
            Settlement::DeadLetter(reason)
        }
    };
    settle(queue, job, settlement, true).await
}

async fn settle<Q: JobQueue + ?Sized>(
    queue: &Q,
    job: &ReceivedJob<Q::Receipt>,
    settlement: Settlement,
    attempted: bool,
) -> Settled {
    let applied = match queue.settle(job, &settlement).await {
        Ok(()) => true,
        Err(err) => {
            tracing::error!(group = ?job.group, ?settlement, error = %err, "settling a job failed");
            false
        }
    };
    Settled {
        attempted,
        settlement,
        applied,
    }
}

/// Runs `work` to its end, calling `beat` every `period` meanwhile (first after one period):
/// the heartbeat that keeps a running job invisible, or a task's lease renewed. A beat still
/// under way when `work` ends is dropped.
pub async fn while_running<T, B, BF>(
    work: impl Future<Output = T>,
    period: Duration,
    mut beat: B,
) -> T
where
    B: FnMut() -> BF,
    BF: Future<Output = ()>,
{
    let heartbeat = async {
        loop {
            tokio::time::sleep(period).await;
            beat().await;
        }
    };
    tokio::select! {
        out = work => out,
        _ = heartbeat => unreachable!("the heartbeat never ends"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn the_heartbeat_beats_while_the_work_runs_and_stops_with_it() {
        let beats = AtomicU32::new(0);
        let third = tokio::sync::Notify::new();
        // The timeout only turns a broken heartbeat (no beats, or a beat awaited past the work's
        // end) into a failure instead of a hang.
        let running = while_running(
            async {
                // The work ends once the heartbeat has beaten three times.
                third.notified().await;
                7
            },
            Duration::from_millis(1),
            || async {
                if beats.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                    third.notify_one();
                    // Never ends: the beat under way when the work ends must be dropped.
                    std::future::pending::<()>().await;
                }
            },
        );
        let out = tokio::time::timeout(Duration::from_secs(60), running)
            .await
            .expect("the work ends and the beat under way is dropped");
        assert_eq!(out, 7);
        assert_eq!(beats.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn only_applied_deletes_and_dead_letters_leave_the_queue() {
        let settled = |settlement, applied| Settled {
            attempted: true,
            settlement,
            applied,
        };
        assert!(!settled(Settlement::Delete, true).stays_queued());
        assert!(!settled(Settlement::DeadLetter("x".into()), true).stays_queued());
        assert!(settled(Settlement::DeadLetter("x".into()), false).stays_queued());
        assert!(settled(Settlement::RetryAfter(Duration::ZERO), true).stays_queued());
    }
}
