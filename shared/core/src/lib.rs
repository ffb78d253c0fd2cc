//! The A2A core: every operation of the protocol on the task event log, the [`Agent`] trait
//! users implement, and the ports (store, queues, webhook sender, JWKS source, API key source)
//! the adapters implement. The core itself does no network or disk I/O.
//!
//! The same core runs in the local server, in each Lambda function and in tests. It keeps no
//! state between requests that correctness depends on: tasks, events, push configs and leases
//! live in the store; in-process state is a cache or a wake-up hint at most.

pub mod agent;
pub mod auth;
pub mod config;
pub mod context;
pub mod emitter;
pub mod event;
mod execution;
mod idempotency;
pub mod jobs;
mod kernel;
pub mod lite;
pub mod observe;
pub mod operation;
pub mod ports;
pub mod push;
pub mod push_policy;
pub mod request;
pub mod service;
pub mod signing;
pub mod task_log;
pub mod webhook;
mod worker;

pub use agent::{Agent, AgentDescription, Placement};
pub use auth::{Auth, AuthMode, AuthSettings, Credentials, Permission, Permissions, Principal};
pub use config::{Generations, MessageIdReuse, ServiceConfig};
pub use context::CallContext;
pub use emitter::Emitter;
pub use event::{LoggedEvent, TaskEvent};
pub use jobs::{JobPolicy, JobQueue, ReceivedJob, Settled, Settlement};
pub use observe::{NoObserver, Observer};
pub use operation::{HttpVerb, Operation, OperationSpec, QueryKind, RestRoute, OPERATIONS};
pub use ports::*;
pub use push_policy::{HostResolver, PushPolicy};
pub use request::{AgentError, AgentRequest};
pub use service::{A2aService, OperationRequest, OperationResponse, Reply};
pub use signing::{
    KeySet, PushSigner, SigningAlgorithm, SigningKey, SigningKeySource, SigningKeys,
};
pub use task_log::{EventStream, StreamItem};
pub use webhook::{NoWebhookSender, WebhookOutcome, WebhookRequest, WebhookSender};

/// A new random id (UUID v4) for tasks, contexts, messages, artifacts and push configs.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
