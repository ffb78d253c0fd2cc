//! The agent this deployment hosts, named once: the local server (`a2a-local`) and every
//! Lambda function serve what [`agent`] returns.

use std::sync::Arc;

/// The agent the local server and every Lambda function serve: the reference agent.
///
/// To host your own agent, return it here (and put its crate in this crate's
/// `[dependencies]`); nothing else in the hosts names the agent.
pub fn agent() -> Arc<dyn a2a_core::Agent> {
    Arc::new(a2a_reference_agent::ReferenceAgent)
}
