//! The Agent Card and its parts.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The JSON-RPC binding name in `AgentInterface.protocolBinding`.
pub const BINDING_JSONRPC: &str = "JSONRPC";
/// The HTTP+JSON (REST) binding name in `AgentInterface.protocolBinding`.
pub const BINDING_HTTP_JSON: &str = "HTTP+JSON";

/// A URL where the agent serves one binding of one protocol version.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// The URL of the interface.
    pub url: String,
    /// The binding served there: `JSONRPC`, `HTTP+JSON` (or `GRPC`, which this kit never declares).
    pub protocol_binding: String,
    /// The A2A version served there (`1.0`, `0.3`).
    pub protocol_version: String,
    /// The tenant requests to this interface are for, if the agent serves several.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
}

/// Who provides the agent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    /// The provider's website.
    pub url: String,
    /// The provider's name.
    pub organization: String,
}

/// A protocol extension the agent supports.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    /// The URI that identifies the extension.
    pub uri: String,
    /// What the agent does with the extension.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Whether clients must activate it (`A2A-Extensions`) to be served.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// The extension's own configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

/// Optional features of the agent. Each flag is `optional bool`: absent means false.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// Whether SendStreamingMessage and SubscribeToTask are served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Whether push notification configs are accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// The protocol extensions the agent supports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
    /// Whether GetExtendedAgentCard serves a card for authenticated clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

/// `map<string, StringList>` in ProtoJSON: `{"name": {"list": ["scope"]}}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StringList {
    /// The strings.
    #[serde(default)]
    pub list: Vec<String>,
}

/// One way of satisfying the agent's security: all named schemes together.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SecurityRequirement {
    /// Scheme name (a key of the card's `securitySchemes`) to the scopes it needs.
    #[serde(default)]
    pub schemes: BTreeMap<String, StringList>,
}

/// A security scheme, as a ProtoJSON oneof wrapper (`{"httpAuthSecurityScheme": {…}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SecurityScheme {
    /// An API key in a header, query parameter or cookie.
    ApiKeySecurityScheme(Value),
    /// HTTP authentication (`Bearer`, `Basic`, …).
    HttpAuthSecurityScheme(Value),
    /// OAuth 2.0 flows.
    Oauth2SecurityScheme(Value),
    /// OpenID Connect discovery.
    OpenIdConnectSecurityScheme(Value),
    /// Mutual TLS.
    MtlsSecurityScheme(Value),
}

/// A capability of the agent that clients can ask for.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// The skill's id, unique on the card.
    pub id: String,
    /// A name for people.
    pub name: String,
    /// What the skill does.
    pub description: String,
    /// Keywords that describe the skill.
    pub tags: Vec<String>,
    /// Example prompts or requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Media types the skill accepts, when they differ from the card's defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    /// Media types the skill produces, when they differ from the card's defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    /// What a caller needs to use this skill, when it differs from the card's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
}

/// A JWS over the card.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCardSignature {
    /// The JWS protected header, base64url.
    pub protected: String,
    /// The JWS signature, base64url.
    pub signature: String,
    /// The JWS unprotected header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Value>,
}

/// The self-description an agent publishes at `/.well-known/agent-card.json`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// The agent's name.
    pub name: String,
    /// What the agent does.
    pub description: String,
    /// Where the agent is served, by binding and protocol version, in order of preference.
    pub supported_interfaces: Vec<AgentInterface>,
    /// Who provides the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// The agent's own version.
    pub version: String,
    /// Where the agent is documented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// The optional features the agent offers.
    pub capabilities: AgentCapabilities,
    /// The authentication schemes, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Which schemes (and scopes) a caller needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Media types the agent accepts.
    pub default_input_modes: Vec<String>,
    /// Media types the agent produces.
    pub default_output_modes: Vec<String>,
    /// What the agent can do.
    pub skills: Vec<AgentSkill>,
    /// JWS signatures over the card.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<AgentCardSignature>,
    /// An icon for the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

/// The JOSE `typ` of an agent card signature's protected header (spec §8.4: SHOULD be `JOSE`).
pub const CARD_SIGNATURE_TYPE: &str = "JOSE";

/// The payload an agent card signature covers (spec §8.4), as text (sign its UTF-8 bytes): the
/// card without `signatures`, in RFC 8785 canonical form ([`crate::jcs`]), after removing
/// every empty string, array and object, at any depth. The spec asks for the presence rules of
/// the proto (defaults omitted, which the card's serialisation already does); the official
/// Python SDK's verifier also drops empty values, even required ones, so a card is signed over
/// what that verifier rebuilds.
pub fn signing_payload(card: &AgentCard) -> Result<String, crate::jcs::JcsError> {
    let mut value = serde_json::to_value(card).unwrap_or_default();
    if let Some(members) = value.as_object_mut() {
        members.remove("signatures");
    }
    let cleaned = without_empty(value).unwrap_or_else(|| Value::Object(Default::default()));
    crate::jcs::canonicalize(&cleaned)
}

/// `value` without its empty strings, arrays and objects (an object or array that only held
/// such values is empty in turn); `None` if nothing is left.
fn without_empty(value: Value) -> Option<Value> {
    match value {
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) => {
            let items: Vec<Value> = items.into_iter().filter_map(without_empty).collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        Value::Object(members) => {
            let members: serde_json::Map<String, Value> = members
                .into_iter()
                .filter_map(|(k, v)| without_empty(v).map(|v| (k, v)))
                .collect();
            (!members.is_empty()).then_some(Value::Object(members))
        }
        other => Some(other),
    }
}
