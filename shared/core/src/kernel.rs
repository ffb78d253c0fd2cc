//! The kernel: what the operations (the service), the worker and push delivery share —
//! configuration, the agent, the task log, the queues, the cards and the executions of this
//! process. It imports none of them.

use std::sync::Arc;

use a2a_protocol::AgentCard;

use crate::agent::Agent;
use crate::config::ServiceConfig;
use crate::execution::Executions;
use crate::journal::DurableEnv;
use crate::ports::{PushQueue, TaskStore, WorkQueue};
use crate::task_log::TaskLog;

/// The kernel's state. Holds no request state: every fact that matters is in the store.
pub(crate) struct Core {
    pub(crate) config: ServiceConfig,
    pub(crate) agent: Arc<dyn Agent>,
    pub(crate) store: Arc<dyn TaskStore>,
    /// Writes and follows task logs.
    pub(crate) log: Arc<TaskLog>,
    pub(crate) work: Arc<dyn WorkQueue>,
    /// Where [`crate::A2aService::fan_out`] puts push jobs (the store's stream feeds it).
    pub(crate) push: Arc<dyn PushQueue>,
    pub(crate) card: AgentCard,
    /// `capabilities.extendedAgentCard` as published.
    pub(crate) offers_extended_card: bool,
    /// The cards as served, signed with the current keys.
    pub(crate) signed_cards: crate::card_signing::CardSigner,
    /// Inline executions running in this process.
    pub(crate) executions: std::sync::Arc<Executions>,
    /// What durable executions need.
    pub(crate) durable: Arc<DurableEnv>,
}
