//! The ports: what the core needs from the world, implemented by the adapters (embedded SQLite,
//! DynamoDB/SQS). Every fact that matters lives behind these traits; nothing in process memory
//! is needed for correctness. The store's data model ([`model`]) is apart from the traits that
//! keep it ([`store`], [`queues`]).

mod model;
mod queues;
mod store;

pub(crate) use model::constant_time_eq;
pub use model::{
    push_jobs, push_jobs_at, relay_token_digest, visible_seqs, AppendedEvents, DueExecution,
    DurableExecution, ExpiredLease, JobOutcome, Owner, PushAttempt, PushAttemptResult,
    PushDeliveryState, PushJob, RelayGate, RemoteTaskRef, SendRecord, StepRecord, StoreError,
    StoredReply, StoredTask, TaskPage, TaskQuery, Wait, WaitFor, WaitOutcome, WorkJob,
    JOB_FORMAT_VERSION,
};
pub use queues::{PushQueue, WorkQueue};
pub use store::{ExecutionStore, LeaseStore, PushConfigStore, TaskLogStore, TaskStore};
