//! The in-process stand-ins for the Lambda worker and push functions: each loop takes jobs from
//! a durable queue (the embedded one in the store file, or SQS) and hands them to the core's job
//! runner with the same handlers the Lambda functions use.

use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "dynamodb")]
use a2a_aws::{ReceivedMessage, SqsQueue, SqsReceipt};
use a2a_core::{run_jobs, JobPolicy, JobQueue, ReceivedJob};
use a2a_core::{A2aService, JobOutcome, PushJob, StoreError, WorkJob, WorkQueue};
use a2a_embedded::{EmbeddedQueue, QueueName, SqliteStore};
use async_trait::async_trait;
use tokio::sync::{watch, Semaphore};

/// How long a received push job stays invisible before the queue hands it out again.
const PUSH_VISIBILITY: Duration = Duration::from_secs(30);
/// At most this many agent executions from the queue at once.
const WORK_CONCURRENCY: usize = 8;
/// How long one receive of the embedded queue waits for a job when the queue is empty (an
/// enqueue in this process wakes it at once).
const IDLE_WAIT: Duration = Duration::from_secs(1);

/// A queue the loops consume.
#[derive(Clone)]
pub(crate) enum LoopQueue {
    /// The durable queue in the embedded store's file.
    Embedded {
        /// The store holding the queue.
        store: Arc<SqliteStore>,
        /// Which of its queues.
        queue: QueueName,
    },
    /// An SQS queue (on AWS, or an emulator through `AWS_ENDPOINT_URL`), long-polled for
    /// `wait` at a time.
    #[cfg(feature = "dynamodb")]
    Sqs {
        /// The queue.
        queue: SqsQueue,
        /// How long one receive waits when the queue is empty.
        wait: Duration,
    },
}

/// A queue the loops poll: the receive side, beside the runner's settle side.
#[async_trait]
trait Poll: JobQueue + Clone + 'static {
    /// Up to `max` jobs, each invisible to other consumers for `visibility`; waits a little
    /// when there are none, so an idle loop does not spin.
    async fn receive(
        &self,
        max: usize,
        visibility: Duration,
    ) -> Result<Vec<ReceivedJob<Self::Receipt>>, StoreError>;
}

#[async_trait]
impl Poll for EmbeddedQueue {
    async fn receive(
        &self,
        max: usize,
        visibility: Duration,
    ) -> Result<Vec<ReceivedJob<i64>>, StoreError> {
        let jobs = EmbeddedQueue::receive(self, max, visibility).await?;
        if jobs.is_empty() {
            self.wait_for_job(IDLE_WAIT).await;
        }
        Ok(jobs)
    }
}

/// An SQS queue with the long poll its receives make.
#[cfg(feature = "dynamodb")]
#[derive(Clone)]
struct LongPolled {
    queue: SqsQueue,
    wait: Duration,
}

#[cfg(feature = "dynamodb")]
#[async_trait]
impl JobQueue for LongPolled {
    type Receipt = SqsReceipt;

    async fn settle(
        &self,
        job: &ReceivedJob<SqsReceipt>,
        settlement: &a2a_core::Settlement,
    ) -> Result<(), StoreError> {
        self.queue.settle(job, settlement).await
    }
}

#[cfg(feature = "dynamodb")]
#[async_trait]
impl Poll for LongPolled {
    async fn receive(
        &self,
        max: usize,
        visibility: Duration,
    ) -> Result<Vec<ReceivedJob<SqsReceipt>>, StoreError> {
        let messages = self.queue.receive(max, self.wait, Some(visibility)).await?;
        Ok(messages
            .into_iter()
            .map(ReceivedMessage::into_job)
            .collect())
    }
}

/// The work queue, saying in the log what it queued (the task id only), so that queued work
/// can be followed in the server's log: queued, started, finished.
pub(crate) struct LoggedWorkQueue(pub Arc<dyn WorkQueue>);

#[async_trait]
impl WorkQueue for LoggedWorkQueue {
    async fn enqueue_work(&self, job: &WorkJob) -> Result<(), StoreError> {
        self.0.enqueue_work(job).await?;
        tracing::info!(task_id = %job.task_id, resume = job.resume, "work queued");
        Ok(())
    }

    async fn enqueue_work_after(&self, job: &WorkJob, delay: Duration) -> Result<(), StoreError> {
        self.0.enqueue_work_after(job, delay).await?;
        tracing::info!(task_id = %job.task_id, resume = job.resume, delay_ms = delay.as_millis() as u64, "work queued");
        Ok(())
    }
}

async fn stopped(stop: &mut watch::Receiver<bool>) -> bool {
    *stop.borrow_and_update()
}

/// Runs queued agent work until `stop` flips.
pub(crate) async fn worker_loop(
    service: A2aService,
    queue: LoopQueue,
    visibility: Duration,
    stop: watch::Receiver<bool>,
) {
    match queue {
        LoopQueue::Embedded { store, queue } => {
            run_work(service, store.queue(queue), visibility, stop).await;
        }
        #[cfg(feature = "dynamodb")]
        LoopQueue::Sqs { queue, wait } => {
            run_work(service, LongPolled { queue, wait }, visibility, stop).await;
        }
    }
}

async fn run_work<Q: Poll>(
    service: A2aService,
    queue: Q,
    visibility: Duration,
    mut stop: watch::Receiver<bool>,
) {
    // The core counts a job's attempts on the task's lease; when they are exhausted it ends the
    // task FAILED and asks for the job to be dead-lettered with the reason.
    let policy = JobPolicy {
        max_attempts: None,
        visibility: Some(visibility),
    };
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
                tracing::error!(error = %err, "work queue receive failed");
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
                let service = &service;
                run_jobs(
                    &queue,
                    vec![job],
                    policy,
                    |job: WorkJob, receive_count| async move {
                        // Ids and counts only: never the message or anything of the caller's.
                        tracing::info!(
                            task_id = %job.task_id,
                            receive_count,
                            "work started"
                        );
                        let outcome = service.run_work_job(&job, receive_count).await;
                        match &outcome {
                            JobOutcome::Done => {
                                tracing::info!(task_id = %job.task_id, "work finished");
                            }
                            JobOutcome::Retry { reason, after } => tracing::info!(
                                task_id = %job.task_id,
                                retry_in_secs = after.as_secs(),
                                "work stopped, to be retried: {reason}"
                            ),
                            JobOutcome::DeadLetter { reason } => tracing::error!(
                                task_id = %job.task_id,
                                "work given up and dead-lettered: {reason}"
                            ),
                        }
                        outcome
                    },
                )
                .await;
                drop(permit);
            });
        }
    }
}

/// Delivers push jobs until `stop` flips.
///
/// On SQS, each receive takes one job: a task's later jobs received beside a failing one would
/// be handed back untried, a receive for nothing (attempts are counted on the delivery record,
/// so they cost no attempt; docs/push.md). Several pollers keep different tasks going out at once.
/// The embedded queue hands out only the oldest job of each task, so one poller takes many.
pub(crate) async fn push_loop(service: A2aService, queue: LoopQueue, stop: watch::Receiver<bool>) {
    match queue {
        #[cfg(feature = "dynamodb")]
        LoopQueue::Sqs { queue, wait } => {
            run_pushes(service, LongPolled { queue, wait }, stop, 8, 1).await;
        }
        LoopQueue::Embedded { store, queue } => {
            run_pushes(service, store.queue(queue), stop, 1, 16).await;
        }
    }
}

async fn run_pushes<Q: Poll>(
    service: A2aService,
    queue: Q,
    stop: watch::Receiver<bool>,
    pollers: usize,
    batch: usize,
) {
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

async fn poll_pushes<Q: Poll>(
    service: A2aService,
    queue: Q,
    mut stop: watch::Receiver<bool>,
    batch: usize,
) {
    // The core counts attempts on the delivery record and dead-letters the last failed one.
    let policy = JobPolicy {
        max_attempts: None,
        visibility: None,
    };
    let service = &service;
    while !stopped(&mut stop).await {
        let jobs = tokio::select! {
            jobs = queue.receive(batch, PUSH_VISIBILITY) => jobs,
            _ = stop.changed() => continue,
        };
        let jobs = match jobs {
            Ok(jobs) => jobs,
            Err(err) => {
                tracing::error!(error = %err, "push queue receive failed");
                wait(&mut stop, Duration::from_secs(1)).await;
                continue;
            }
        };
        // One task's jobs go out one after another, in the order received (an SQS FIFO receive
        // may return several of a group at once); different tasks go out concurrently.
        run_jobs(&queue, jobs, policy, |job: PushJob, receive_count| async move {
            service.deliver_push(&job, receive_count).await
        })
        .await;
    }
}

/// Deletes expired tasks of the embedded store every ten minutes (DynamoDB's TTL does this on
/// AWS).
pub(crate) async fn purge_loop(store: Arc<SqliteStore>, mut stop: watch::Receiver<bool>) {
    while !stopped(&mut stop).await {
        match store.purge_expired().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(tasks = n, "purged expired tasks"),
            Err(err) => tracing::warn!(error = %err, "purging expired tasks failed"),
        }
        wait(&mut stop, Duration::from_secs(600)).await;
    }
}

/// How many expired leases one sweep handles; the next sweep takes the rest.
const SWEEP_BATCH: usize = 100;

/// Ends the tasks whose inline execution died (its lease expired): at start-up, then every
/// `interval`. Any number of servers may sweep one store at once.
pub(crate) async fn sweep_loop(
    service: A2aService,
    interval: Duration,
    mut stop: watch::Receiver<bool>,
) {
    while !stopped(&mut stop).await {
        match service.sweep_expired_executions(SWEEP_BATCH).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(tasks = n, "ended tasks whose execution stopped"),
            Err(err) => tracing::warn!(error = %err, "sweeping expired executions failed"),
        }
        // Durable waits that are due: deadlines, timers, polls of remote tasks, resumptions
        // a lost queue message would otherwise leave waiting.
        match service.sweep_due_executions(SWEEP_BATCH).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(executions = n, "resumed executions whose wait is over"),
            Err(err) => tracing::warn!(error = %err, "sweeping due executions failed"),
        }
        wait(&mut stop, interval).await;
    }
}

async fn wait(stop: &mut watch::Receiver<bool>, d: Duration) {
    tokio::select! {
        _ = tokio::time::sleep(d) => {}
        _ = stop.changed() => {}
    }
}
