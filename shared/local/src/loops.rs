//! The in-process stand-ins for the Lambda worker and push functions: each loop takes jobs from
//! the durable queue in the store file and hands them to the same core handlers.

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{A2aService, JobOutcome, PushJob, WorkJob};
use a2a_embedded::{QueueName, ReceivedJob, SqliteStore};
use tokio::sync::{watch, Semaphore};

/// How long a received push job stays invisible before the queue hands it out again.
const PUSH_VISIBILITY: Duration = Duration::from_secs(30);
/// At most this many agent executions from the queue at once.
const WORK_CONCURRENCY: usize = 8;

async fn stopped(stop: &mut watch::Receiver<bool>) -> bool {
    *stop.borrow_and_update()
}

/// Runs queued agent work until `stop` flips.
pub async fn worker_loop(
    service: A2aService,
    store: Arc<SqliteStore>,
    visibility: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(WORK_CONCURRENCY));
    while !stopped(&mut stop).await {
        let free = permits.available_permits().max(1);
        let jobs = match store.receive(QueueName::Work, free, visibility).await {
            Ok(jobs) => jobs,
            Err(err) => {
                tracing::error!("work queue receive failed: {err}");
                wait(&mut stop, Duration::from_secs(1)).await;
                continue;
            }
        };
        if jobs.is_empty() {
            tokio::select! {
                _ = store.wait_for_job(QueueName::Work, Duration::from_secs(1)) => {}
                _ = stop.changed() => {}
            }
            continue;
        }
        for job in jobs {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                return;
            };
            let service = service.clone();
            let store = store.clone();
            tokio::spawn(async move {
                run_one_work_job(&service, &store, job, visibility).await;
                drop(permit);
            });
        }
    }
}

async fn run_one_work_job(
    service: &A2aService,
    store: &SqliteStore,
    job: ReceivedJob,
    visibility: Duration,
) {
    let parsed: WorkJob = match serde_json::from_str(&job.body) {
        Ok(parsed) => parsed,
        Err(err) => {
            let _ = store
                .dead_letter(job.id, &format!("unreadable work job: {err}"))
                .await;
            return;
        }
    };
    // Keep the job invisible while the agent runs (the SQS visibility extension's twin).
    let heartbeat = {
        let store = store.clone();
        let id = job.id;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(visibility / 3).await;
                let _ = store.retry_job(id, visibility).await;
            }
        })
    };
    let outcome = service.run_work_job(&parsed, job.receive_count).await;
    heartbeat.abort();
    settle(store, job.id, outcome, None).await;
}

/// Delivers push jobs until `stop` flips.
pub async fn push_loop(
    service: A2aService,
    store: Arc<SqliteStore>,
    mut stop: watch::Receiver<bool>,
) {
    let max_attempts = service.config().max_push_attempts;
    while !stopped(&mut stop).await {
        let jobs = match store.receive(QueueName::Push, 16, PUSH_VISIBILITY).await {
            Ok(jobs) => jobs,
            Err(err) => {
                tracing::error!("push queue receive failed: {err}");
                wait(&mut stop, Duration::from_secs(1)).await;
                continue;
            }
        };
        if jobs.is_empty() {
            tokio::select! {
                _ = store.wait_for_job(QueueName::Push, Duration::from_secs(1)) => {}
                _ = stop.changed() => {}
            }
            continue;
        }
        // Jobs handed out together belong to different tasks (the queue keeps one in flight per
        // task), so they can be delivered concurrently without reordering a task's events.
        let mut deliveries = Vec::with_capacity(jobs.len());
        for job in jobs {
            let service = service.clone();
            let store = store.clone();
            deliveries.push(tokio::spawn(async move {
                let parsed: PushJob = match serde_json::from_str(&job.body) {
                    Ok(parsed) => parsed,
                    Err(err) => {
                        let _ = store
                            .dead_letter(job.id, &format!("unreadable push job: {err}"))
                            .await;
                        return;
                    }
                };
                let outcome = service.deliver_push(&parsed, job.receive_count).await;
                settle(
                    &store,
                    job.id,
                    outcome,
                    Some((job.receive_count, max_attempts)),
                )
                .await;
            }));
        }
        for d in deliveries {
            let _ = d.await;
        }
    }
}

/// Applies a handler's outcome to the queue: delete, retry later, or dead-letter.
async fn settle(store: &SqliteStore, id: i64, outcome: JobOutcome, attempts: Option<(u32, u32)>) {
    let result = match outcome {
        JobOutcome::Done => store.delete_job(id).await,
        JobOutcome::Retry { reason, .. } if attempts.is_some_and(|(n, max)| n >= max) => {
            tracing::error!(job = id, "giving up after the last attempt: {reason}");
            store.dead_letter(id, &reason).await
        }
        JobOutcome::Retry { reason, after } => {
            tracing::warn!(job = id, "will retry in {after:?}: {reason}");
            store.retry_job(id, after).await
        }
    };
    if let Err(err) = result {
        tracing::error!(job = id, "queue update failed: {err}");
    }
}

/// Deletes expired tasks every ten minutes.
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
