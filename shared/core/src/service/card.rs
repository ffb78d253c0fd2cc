//! The agent card this service publishes, built once from the configuration and the agent's
//! description, and GetExtendedAgentCard.

use a2a_protocol::{
    A2AError, AgentCapabilities, AgentCard, AgentInterface, GetExtendedAgentCardRequest,
    PROTOCOL_VERSION, PROTOCOL_VERSION_1_1,
};

use super::A2aService;
use crate::agent::AgentDescription;
use crate::config::ServiceConfig;
use crate::context::CallContext;

/// The version 0.3 interfaces declare on the card.
const V03_PROTOCOL_VERSION: &str = "0.3";

/// The cards of one service: the public one and the extended one (the public card plus the
/// agent's extended skills).
pub(super) struct Cards {
    pub(super) card: AgentCard,
    pub(super) extended_card: AgentCard,
    /// `capabilities.extendedAgentCard` as published.
    pub(super) offers_extended_card: bool,
}

/// The cards `config` and `description` make.
pub(super) fn build(config: &ServiceConfig, description: &AgentDescription) -> Cards {
    // The extended card must require authentication (spec §3.1.11): without auth, there
    // is no such thing.
    let offers_extended_card = config.extended_card && config.auth.is_enabled();
    let (security_schemes, security_requirements) = config.auth.card_security();
    let mut card = AgentCard {
        name: description.name.clone(),
        description: description.description.clone(),
        supported_interfaces: config.interfaces.clone(),
        provider: description.provider.clone(),
        version: description.version.clone(),
        documentation_url: None,
        capabilities: AgentCapabilities {
            streaming: Some(config.streaming),
            push_notifications: Some(config.push_notifications),
            extensions: description.extensions.clone(),
            extended_agent_card: Some(offers_extended_card),
        },
        security_schemes,
        security_requirements,
        default_input_modes: description.default_input_modes.clone(),
        default_output_modes: description.default_output_modes.clone(),
        skills: description.skills.clone(),
        signatures: Vec::new(),
        icon_url: None,
    };
    for iface in &mut card.supported_interfaces {
        if iface.protocol_version.is_empty() {
            iface.protocol_version = PROTOCOL_VERSION.to_string();
        }
    }
    // The same URLs speak the A2A 1.1 draft to clients that ask for it (`A2A-Version: 1.1`),
    // listed after 1.0: a 1.0 client picks the first entry it speaks, as before.
    let v1_1: Vec<AgentInterface> = card
        .supported_interfaces
        .iter()
        .filter(|i| i.protocol_version == PROTOCOL_VERSION)
        .map(|i| AgentInterface {
            protocol_version: PROTOCOL_VERSION_1_1.to_string(),
            ..i.clone()
        })
        .collect();
    card.supported_interfaces.extend(v1_1);
    if config.older_versions.v0_3 {
        // The same URLs speak 0.3 too (told apart by `A2A-Version` and the method names),
        // listed after 1.0 so that clients of both pick their own.
        let v03: Vec<AgentInterface> = card
            .supported_interfaces
            .iter()
            .filter(|i| i.protocol_version == PROTOCOL_VERSION)
            .map(|i| AgentInterface {
                protocol_version: V03_PROTOCOL_VERSION.to_string(),
                ..i.clone()
            })
            .collect();
        card.supported_interfaces.extend(v03);
    }
    let mut extended_card = card.clone();
    extended_card
        .skills
        .extend(description.extended_skills.iter().cloned());
    Cards {
        card,
        extended_card,
        offers_extended_card,
    }
}

impl A2aService {
    /// GetExtendedAgentCard: the public card plus the agent's extended skills, for
    /// authenticated callers only.
    pub(super) async fn run_get_extended_card(
        &self,
        ctx: &CallContext,
        _request: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2AError> {
        if !self.core.offers_extended_card {
            return Err(A2AError::unsupported(
                "This agent does not offer an extended agent card",
            ));
        }
        if !ctx.authenticated {
            return Err(A2AError::Unauthenticated(
                "Unauthenticated: the extended agent card requires authentication".into(),
            ));
        }
        Ok(self.signed_cards().await.extended_card.clone())
    }
}
