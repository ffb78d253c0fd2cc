//! The [`Agent`] trait, the one thing a user implements, and what it is given and may answer.
//! The [`Emitter`] it reports through is in [`crate::emitter`].

use a2a_protocol::{AgentExtension, AgentProvider, AgentSkill};
use async_trait::async_trait;

use crate::emitter::Emitter;
use crate::request::{AgentError, AgentRequest};

/// Where an agent's work on a message runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Inside the process that received the request: quick answers, and streams the function
    /// itself produces.
    Inline,
    /// On the work queue, run by the worker: anything that may outlive the caller's request.
    Queued,
}

/// What the agent says about itself in the agent card.
#[derive(Debug, Clone, Default)]
pub struct AgentDescription {
    /// Agent name.
    pub name: String,
    /// What the agent does.
    pub description: String,
    /// The agent's own version.
    pub version: String,
    /// Skills shown on the public card.
    pub skills: Vec<AgentSkill>,
    /// Extra skills shown only on the extended card (to authenticated callers).
    pub extended_skills: Vec<AgentSkill>,
    /// Media types the agent accepts.
    pub default_input_modes: Vec<String>,
    /// Media types the agent produces.
    pub default_output_modes: Vec<String>,
    /// Who provides the agent.
    pub provider: Option<AgentProvider>,
    /// Extensions the agent supports.
    pub extensions: Vec<AgentExtension>,
}

/// The user's agent. The core calls [`Agent::execute`] once per client message.
#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// Name, description, skills and modes for the agent card.
    fn describe(&self) -> AgentDescription;

    /// Where the work for this message runs. Inline by default.
    fn placement(&self, _request: &AgentRequest) -> Placement {
        Placement::Inline
    }

    /// Acts on a message, reporting through `emitter`: status changes, artifacts, or a direct
    /// message reply. Return `Err` to fail the task; propagate emitter errors (with `?`) so a
    /// cancellation stops the work.
    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError>;
}
