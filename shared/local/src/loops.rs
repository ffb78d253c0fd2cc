//! The in-process stand-ins for the Lambda worker and push functions: each loop takes jobs from
//! a durable queue (the embedded one in the store file, or SQS) and hands them to the same core
//! handlers the Lambda functions call.

use std::sync::Arc;
use std::time::Duration;

use a2a_aws::{ReceivedMessage, SqsQueue};
use a2a_core::{A2aService, JobOutcome, PushJob, StoreError, WorkJob};
use a2a_embedded::{QueueName, SqliteStore};
use serde::de::DeserializeOwned;
use tokio::sync::{watch, Semaphore};

/// How long a received push job stays invisible before the queue hands it out again.
const PUSH_VISIBILITY: Duration = Duration::from_secs(30);
/// At most this many agent executions from the queue at once.
const WORK_CONCURRENCY: usize = 8;
/// How long one receive waits for a job when the queue is empty.
const IDLE_WAIT: Duration = Duration::from_secs(1);

/// A queue the loops consume.
#[derive(Clone)]
pub enum JobQueue {
    /// The durable queue in the embedded store's file.
    Embedded {
        /// The store holding the queue.
        store: Arc<SqliteStore>,
        /// Which of its queues.
        queue: QueueName,
    },
    /// An SQS queue (on AWS, or an emulator through `AWS_ENDPOINT_URL`).
    Sqs(SqsQueue),
}

/// A job handed out by a [`JobQueue`], to settle with it.
pub struct Received {
    body: String,
    receive_count: u32,
    receipt: Receipt,
}

enum Receipt {
    Embedded(i64),
    Sqs(Box<ReceivedMessage>),
}

impl JobQueue {
    /// Up to `max` jobs, each invisible to other consumers for `visibility`; waits a little
    /// when there are none, so an idle loop does not spin.
    async fn receive(&self, max: usize, visibility: Duration) -> Result<Vec<Received>, StoreError> {
        match self {
            Self::Embedded { store, queue } => {
                let jobs = store.receive(*queue, max, visibility).await?;
                if jobs.is_empty() {
                    store.wait_for_job(*queue, IDLE_WAIT).await;
                }
                Ok(jobs
                    .into_iter()
                    .map(|j| Received {
                        body: j.body,
                        receive_count: j.receive_count,
                        receipt: Receipt::Embedded(j.id),
                    })
                    .collect())
            }
            Self::Sqs(queue) => Ok(queue
                .receive(max, IDLE_WAIT, Some(visibility))
                .await?
                .into_iter()
                .map(|m| Received {
                    body: m.body.clone(),
                    receive_count: m.receive_count,
                    receipt: Receipt::Sqs(Box::new(m)),
                })
                .collect()),
        }
    }

    /// The job was handled: remove it.
    async fn delete(&self, job: &Received) -> Result<(), StoreError> {
        match (self, &job.receipt) {
            (Self::Embedded { store, .. }, Receipt::Embedded(id)) => store.delete_job(*id).await,
            (Self::Sqs(queue), Receipt::Sqs(m)) => queue.delete(&m.receipt_handle).await,
            _ => Err(mismatch()),
        }
    }

    /// Hands the job out again `after` from now (a retry, or a heartbeat while it runs).
    async fn retry(&self, job: &Received, after: Duration) -> Result<(), StoreError> {
        match (self, &job.receipt) {
            (Self::Embedded { store, .. }, Receipt::Embedded(id)) => {
                store.retry_job(*id, after).await
            }
            (Self::Sqs(queue), Receipt::Sqs(m)) => {
                queue.change_visibility(&m.receipt_handle, after).await
            }
            _ => Err(mismatch()),
        }
    }

    /// Gives up on the job: moves it to the dead-letter queue with `reason`.
    async fn dead_letter(&self, job: &Received, reason: &str) -> Result<(), StoreError> {
        match (self, &job.receipt) {
            (Self::Embedded { store, .. }, Receipt::Embedded(id)) => {
                store.dead_letter(*id, reason).await
            }
            (Self::Sqs(queue), Receipt::Sqs(m)) => queue.dead_letter(m, reason).await,
            _ => Err(mismatch()),
        }
    }

    /// Parses a job's body; an unreadable one is dead-lettered (it would never get better).
    async fn parse<T: DeserializeOwned>(&self, job: &Received) -> Option<T> {
        match serde_json::from_str(&job.body) {
            Ok(parsed) => Some(parsed),
            Err(err) => {
                let reason = format!("unreadable job body: {err}");
                tracing::error!("{reason}");
                if let Err(err) = self.dead_letter(job, &reason).await {
                    tracing::error!("dead-lettering an unreadable job failed: {err}");
                }
                None
            }
        }
    }

    /// Applies a handler's outcome: delete, retry later, or dead-letter after the last attempt.
    async fn settle(&self, job: &Received, outcome: JobOutcome, max_attempts: Option<u32>) {
        let result = match outcome {
            JobOutcome::Done => self.delete(job).await,
            JobOutcome::Retry { reason, .. }
                if max_attempts.is_some_and(|max| job.receive_count >= max) =>
            {
                tracing::error!("giving up on a job after its last attempt: {reason}");
                self.dead_letter(job, &reason).await
            }
            JobOutcome::Retry { reason, after } => {
                tracing::warn!("will retry a job in {after:?}: {reason}");
                self.retry(job, after).await
            }
        };
        if let Err(err) = result {
            tracing::error!("queue update failed: {err}");
        }
    }
}

fn mismatch() -> StoreError {
    StoreError::Backend("a job was settled on a queue of another kind".into())
}

async fn stopped(stop: &mut watch::Receiver<bool>) -> bool {
    *stop.borrow_and_update()
}

/// Runs queued agent work until `stop` flips.
pub async fn worker_loop(
    service: A2aService,
    queue: JobQueue,
    visibility: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(WORK_CONCURRENCY));
    while !stopped(&mut stop).await {
        let free = permits.available_permits().max(1);
        let jobs = tokio::select! {
            jobs = queue.receive(free, visibility) => jobs,
            _ = stop.changed() => continue,
        };
        let jobs = match jobs {
            Ok(jobs) => jobs,
            Err(err) => {
                tracing::error!("work queue receive failed: {err}");
                wait(&mut stop, Duration::from_secs(1)).await;
                continue;
            }
        };
        for job in jobs {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                return;
            };
            let service = service.clone();
            let queue = queue.clone();
            tokio::spawn(async move {
                run_one_work_job(&service, &queue, job, visibility).await;
                drop(permit);
            });
        }
    }
}

async fn run_one_work_job(
    service: &A2aService,
    queue: &JobQueue,
    job: Received,
    visibility: Duration,
) {
    let Some(parsed) = queue.parse::<WorkJob>(&job).await else {
        return;
    };
    // Keep the job invisible while the agent runs (the twin of the Lambda worker's visibility
    // extension).
    let job = Arc::new(job);
    let heartbeat = {
        let queue = queue.clone();
        let job = job.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(visibility / 3).await;
                if let Err(err) = queue.retry(&job, visibility).await {
                    tracing::warn!("extending a running job's visibility failed: {err}");
                }
            }
        })
    };
    let outcome = service.run_work_job(&parsed, job.receive_count).await;
    heartbeat.abort();
    // The core ends a task FAILED itself when its job exhausted its attempts, so work jobs are
    // never dead-lettered here; the queue's own redrive policy is the backstop.
    queue.settle(&job, outcome, None).await;
}

/// Delivers push jobs until `stop` flips.
///
/// On SQS, each receive takes one job: SQS counts every receive, the attempt number is the
/// receive count, and a task's later jobs received beside a failing one would be handed back
/// untried but counted (docs/push.md). Several pollers keep different tasks going out at once.
/// The embedded queue hands out only the oldest job of each task, so one poller takes many.
pub async fn push_loop(service: A2aService, queue: JobQueue, stop: watch::Receiver<bool>) {
    let (pollers, batch) = match &queue {
        JobQueue::Sqs(_) => (8, 1),
        JobQueue::Embedded { .. } => (1, 16),
    };
    let mut polls = tokio::task::JoinSet::new();
    for _ in 0..pollers {
        polls.spawn(poll_pushes(
            service.clone(),
            queue.clone(),
            stop.clone(),
            batch,
        ));
    }
    while polls.join_next().await.is_some() {}
}

async fn poll_pushes(
    service: A2aService,
    queue: JobQueue,
    mut stop: watch::Receiver<bool>,
    batch: usize,
) {
    let max_attempts = service.config().max_push_attempts;
    while !stopped(&mut stop).await {
        let jobs = tokio::select! {
            jobs = queue.receive(batch, PUSH_VISIBILITY) => jobs,
            _ = stop.changed() => continue,
        };
        let jobs = match jobs {
            Ok(jobs) => jobs,
            Err(err) => {
                tracing::error!("push queue receive failed: {err}");
                wait(&mut stop, Duration::from_secs(1)).await;
                continue;
            }
        };
        // One task's jobs go out one after another, in the order received (an SQS FIFO receive
        // may return several of a group at once); different tasks go out concurrently.
        let mut by_task: Vec<(String, Vec<(Received, PushJob)>)> = Vec::new();
        for job in jobs {
            let Some(parsed) = queue.parse::<PushJob>(&job).await else {
                continue;
            };
            match by_task.iter_mut().find(|(task, _)| *task == parsed.task_id) {
                Some((_, group)) => group.push((job, parsed)),
                None => by_task.push((parsed.task_id.clone(), vec![(job, parsed)])),
            }
        }
        let mut deliveries = Vec::with_capacity(by_task.len());
        for (_, group) in by_task {
            let service = service.clone();
            let queue = queue.clone();
            deliveries.push(tokio::spawn(async move {
                deliver_in_order(&service, &queue, group, max_attempts).await;
            }));
        }
        for delivery in deliveries {
            let _ = delivery.await;
        }
    }
}

/// Delivers one task's jobs in order. After a job that was not delivered, the later ones are
/// handed back at once: the queue gives them out again only after the earlier one, so a
/// receiver never sees a task's events out of order.
async fn deliver_in_order(
    service: &A2aService,
    queue: &JobQueue,
    group: Vec<(Received, PushJob)>,
    max_attempts: u32,
) {
    let mut jobs = group.into_iter();
    for (job, parsed) in jobs.by_ref() {
        let outcome = service.deliver_push(&parsed, job.receive_count).await;
        let delivered = outcome == JobOutcome::Done;
        queue.settle(&job, outcome, Some(max_attempts)).await;
        if !delivered {
            break;
        }
    }
    for (job, _) in jobs {
        if let Err(err) = queue.retry(&job, Duration::ZERO).await {
            tracing::warn!("handing back a push job failed: {err}");
        }
    }
}

/// Deletes expired tasks of the embedded store every ten minutes (DynamoDB's TTL does this on
/// AWS).
pub async fn purge_loop(store: Arc<SqliteStore>, mut stop: watch::Receiver<bool>) {
    while !stopped(&mut stop).await {
        match store.purge_expired().await {
            Ok(0) => {}
            Ok(n) => tracing::info!("purged {n} expired tasks"),
            Err(err) => tracing::warn!("purging expired tasks failed: {err}"),
        }
        wait(&mut stop, Duration::from_secs(600)).await;
    }
}

async fn wait(stop: &mut watch::Receiver<bool>, d: Duration) {
    tokio::select! {
        _ = tokio::time::sleep(d) => {}
        _ = stop.changed() => {}
    }
}
