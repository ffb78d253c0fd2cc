//! The queue ports: where work jobs and push jobs go.

use std::time::Duration;

use async_trait::async_trait;

use super::model::{PushJob, StoreError, WorkJob};

/// The work queue (SQS standard with a dead-letter queue in the cloud).
#[async_trait]
pub trait WorkQueue: Send + Sync + 'static {
    /// Enqueues a job; once this returns `Ok` the job is durable.
    async fn enqueue_work(&self, job: &WorkJob) -> Result<(), StoreError>;

    /// Enqueues a job that no worker receives before `delay` has passed (a durable timer's
    /// resumption). A queue may cap the delay (SQS: 15 minutes); the store's due list covers
    /// what comes later.
    async fn enqueue_work_after(&self, job: &WorkJob, delay: Duration) -> Result<(), StoreError>;
}

/// The push queue (SQS FIFO grouped by task in the cloud).
#[async_trait]
pub trait PushQueue: Send + Sync + 'static {
    /// Enqueues delivery jobs, in order; once this returns `Ok` they are durable.
    async fn enqueue_push(&self, jobs: &[PushJob]) -> Result<(), StoreError>;
}
