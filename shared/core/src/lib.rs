//! The A2A core: every operation of the protocol on the task event log, the [`Agent`] trait
//! users implement, and the ports (store, queues, webhook sender, JWKS source, API key source)
//! the adapters implement. The core itself does no network or disk I/O.
//!
//! The same core runs in the local server, in each Lambda function and in tests. It keeps no
//! state between requests that correctness depends on: tasks, events, push configs and leases
//! live in the store; in-process state is a cache or a wake-up hint at most.

mod agent;
mod agent_call;
mod auth;
mod card_signing;
mod config;
mod config_error;
mod context;
mod conversation;
mod durable;
pub mod emf;
mod emitter;
mod event;
mod execution;
mod idempotency;
mod jobs;
mod journal;
mod kernel;
mod observe;
mod ports;
mod push;
mod push_policy;
mod recorded;
mod relay;
mod remote;
mod remote_call;
mod request;
mod reread;
mod retry;
mod service;
mod signing;
mod task_log;
mod timeline;
mod trace;
mod webhook;
mod worker;

// Every public item is reached one way: from the crate root. The modules are the crate's
// rooms, not its interface.
pub use agent::{Agent, AgentDescription, Placement};
pub use agent_call::{AgentCall, AgentReply, CallOutcome};
pub use auth::{
    ApiKeyConfig, ApiKeyDocument, ApiKeyLocation, ApiKeyRecord, ApiKeySource, Auth, AuthFailure,
    AuthMode, AuthSettings, Credentials, IssuedKey, JwksSource, JwksUnavailable, JwtConfig,
    Permission, Permissions, Principal, ScopeNames, API_KEY_PREFIX, DEFAULT_JWT_ALGORITHMS,
    ENV_API_KEY_LOCATION, ENV_API_KEY_NAME, ENV_AUTH, ENV_JWT_ALGORITHMS, ENV_JWT_AUDIENCE,
    ENV_JWT_ISSUER, ENV_JWT_JWKS_TTL_SECS, ENV_JWT_JWKS_URL, ENV_JWT_LEEWAY_SECS,
    ENV_JWT_SCOPE_CANCEL, ENV_JWT_SCOPE_PUSH, ENV_JWT_SCOPE_READ, ENV_JWT_SCOPE_SEND,
};
pub use card_signing::SignedCards;
pub use config::{
    parse_switch, OlderVersions, ServiceConfig, DEFAULT_LONG_POLL_MAX_WAIT, ENV_PROTOCOL_0_3,
    ENV_PROTOCOL_EARLY,
};
pub use config_error::{seconds_setting, ConfigError};
pub use context::{checked_traceparent, CallContext};
pub use emitter::Emitter;
pub use event::{LoggedEvent, TaskEvent};
pub use idempotency::{context_id_for, context_origin, starts_own_context, MessageIdReuse};
pub use jobs::{run_jobs, while_running, JobPolicy, JobQueue, ReceivedJob, Settled, Settlement};
pub use journal::RELAY_PATH;
pub use observe::{NoObserver, Observer};
pub use ports::{
    push_jobs, push_jobs_at, relay_token_digest, visible_seqs, AppendedEvents, DueExecution,
    DurableExecution, ExecutionStore, ExpiredLease, JobOutcome, LeaseStore, Owner, PushAttempt,
    PushAttemptResult, PushConfigStore, PushDeliveryState, PushJob, PushQueue, RelayGate,
    RemoteTaskRef, SendRecord, StepRecord, StoreError, StoredReply, StoredTask, TaskLogStore,
    TaskPage, TaskQuery, TaskStore, Wait, WaitFor, WaitOutcome, WorkJob, WorkQueue,
    JOB_FORMAT_VERSION,
};
pub use push::backoff;
pub use push_policy::{is_non_public, GuardRefusal, HostResolver, PushPolicy};
pub use relay::RelayLimits;
pub use remote::{CallKey, NamedCall, NoRemoteAgents, RemoteAgents, RemoteError, RemoteSent};
pub use request::{AgentError, AgentRequest};
pub use reread::{ReadClock, RETRY_FAILED_READ};
pub use retry::after_pauses;
pub use service::{
    A2aService, OperationRequest, OperationResponse, RelayAnswer, RelayCheck, RelayPush, Reply,
};
pub use signing::{
    body_sha256, KeyDocumentText, KeyError, KeySet, PushSigner, SecretPem, SigningAlgorithm,
    SigningKey, SigningKeySource, SigningKeys, DEFAULT_PUSH_TOKEN_LIFETIME,
};
pub use task_log::{EventStream, StreamItem, TaskLog};
pub use trace::{install_trace_context, set_span_parent, traceparent_of, TraceContext};
pub use webhook::{NoWebhookSender, WebhookOutcome, WebhookRequest, WebhookSender};

/// A new random id (UUID v4) for tasks, contexts, messages, artifacts and push configs.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
