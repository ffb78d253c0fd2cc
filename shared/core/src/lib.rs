//! The A2A core: every operation of the protocol on the task event log, the [`Agent`] trait
//! users implement, and the ports (store, queues) the adapters implement.
//!
//! The same core runs in the local server, in each Lambda function and in tests. It keeps no
//! state between requests that correctness depends on: tasks, events, push configs and leases
//! live in the store; in-process state is a cache or a wake-up hint at most.

pub mod agent;
pub mod auth;
pub mod event;
pub mod jobs;
pub mod ports;
pub mod push;
pub mod service;
pub mod signing;
#[cfg(feature = "contract")]
pub mod store_contract;
mod worker;

pub use agent::{Agent, AgentDescription, AgentError, AgentRequest, Emitter, Placement};
pub use auth::{Auth, AuthMode, AuthSettings, Credentials, Permission, Permissions, Principal};
pub use event::{LoggedEvent, TaskEvent};
pub use jobs::{JobPolicy, JobQueue, ReceivedJob, Settled, Settlement};
pub use ports::*;
pub use push::PushPolicy;
pub use service::{A2aService, CallContext, EventStream, ServiceConfig, StreamItem};
pub use signing::{KeyFile, KeySet, KeySource, PushSigner, SigningAlgorithm, SigningKey};

/// A new random id (UUID v4) for tasks, contexts, messages, artifacts and push configs.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
