//! The queue ports: where work jobs and push jobs go.

use async_trait::async_trait;

use super::model::{PushJob, StoreError, WorkJob};

/// The work queue (SQS standard with a dead-letter queue in the cloud).
#[async_trait]
pub trait WorkQueue: Send + Sync + 'static {
    /// Enqueues a job; once this returns `Ok` the job is durable.
    async fn enqueue_work(&self, job: &WorkJob) -> Result<(), StoreError>;
}

/// The push queue (SQS FIFO grouped by task in the cloud).
#[async_trait]
pub trait PushQueue: Send + Sync + 'static {
    /// Enqueues delivery jobs, in order; once this returns `Ok` they are durable.
    async fn enqueue_push(&self, jobs: &[PushJob]) -> Result<(), StoreError>;
}
