//! The A2A-Lite card (`a2a-lite/1.0`, JSON Schema draft-07 in the public description) and its
//! mapping to and from the A2A [`AgentCard`].
//!
//! | A2A card | A2A-Lite card |
//! |---|---|
//! | `name`, `version`, `description` | `agent.name`, `agent.version`, `description` |
//! | (the deployment's choice) | `agent.id`, `agent.framework` (`other`), `channels` |
//! | `skills[]` `id`, `name`, `description` | `skills[]` `id`, `name`, `description` |
//! | skill (or default) input/output media types | `inputModes`/`outputModes`: `text/*` and JSON are `text`, `image/*` `image`, `audio/*` `audio`, `video/*` `video`, anything else `file` |
//! | `capabilities.streaming`, `.pushNotifications` | `capabilities.streaming`, `.pushNotifications` (see [`LiteCard::from_a2a`]) |
//! | none | `capabilities.fileTransfer`, `.asyncTasks`, `limits`, `contact` |

use serde::{Deserialize, Serialize};

use super::marker::LiteError;
use super::LITE_PROTOCOL;
use crate::{AgentCapabilities, AgentCard, AgentSkill};

/// The modes a skill's `inputModes`/`outputModes` may list.
pub const LITE_MODES: [&str; 5] = ["text", "file", "image", "audio", "video"];

/// The frameworks `agent.framework` may name.
pub const LITE_FRAMEWORKS: [&str; 3] = ["clawdbot", "openclaw", "other"];

/// An agent's A2A-Lite card. Fields a receiver does not know are ignored when read.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiteCard {
    /// `a2a-lite/<major>.<minor>`.
    pub protocol: String,
    /// Who the agent is.
    pub agent: LiteAgent,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What it can do.
    pub skills: Vec<LiteSkill>,
    /// Optional features.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<LiteCapabilities>,
    /// Resource limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<LiteLimits>,
    /// Where the agent can be reached (`discord:<id>`, `matrix:<room>`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<String>,
    /// The human behind the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact: Option<LiteContact>,
    /// Not in `a2a-lite/1.0` (receivers ignore it): the URL of the agent's A2A card, for
    /// peers that can speak A2A itself (streaming, push notifications).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a2a_agent_card: Option<String>,
}

/// The card's `agent` object.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiteAgent {
    /// A unique identifier.
    pub id: String,
    /// The name shown to people.
    pub name: String,
    /// `clawdbot`, `openclaw` or `other`.
    pub framework: String,
    /// The agent's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// One skill of the card.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiteSkill {
    /// What `[A2A:task skill=…]` names.
    pub id: String,
    /// The name shown to people.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Modes it accepts (see [`LITE_MODES`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    /// Modes it produces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
}

/// The card's `capabilities`: each absent flag means "not said".
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiteCapabilities {
    /// Partial output as it is produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Files sent and received in the room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_transfer: Option<bool>,
    /// Tasks that answer later, with status updates meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub async_tasks: Option<bool>,
    /// Notifications outside the room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
}

/// The card's `limits`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiteLimits {
    /// The largest file accepted (`10MB`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_file_size: Option<String>,
    /// Tasks worked on at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_tasks: Option<i64>,
}

/// The card's `contact`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiteContact {
    /// Who to ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human: Option<String>,
    /// Their time zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
}

/// What an A2A card does not say and an A2A-Lite card needs: the deployment supplies it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LiteCardOptions {
    /// `agent.id`; empty: derived from the card's name.
    pub agent_id: String,
    /// Where the agent is reachable (`matrix:!room:server`, `slack:#general`).
    pub channels: Vec<String>,
    /// The URL of the A2A card.
    pub a2a_agent_card: Option<String>,
    /// `limits`, if the deployment states any.
    pub limits: Option<LiteLimits>,
    /// `contact`, if any.
    pub contact: Option<LiteContact>,
}

impl LiteCard {
    /// The A2A-Lite card of an A2A agent reached through a chat room. It describes the agent
    /// as a member of the room: a room shows whole messages (`streaming` false), work answers
    /// later with status messages (`asyncTasks` true), files are named in attachment lines but
    /// not carried (`fileTransfer` false), and the room has no push notifications. What the
    /// A2A interface offers besides is behind `a2aAgentCard`.
    pub fn from_a2a(card: &AgentCard, options: &LiteCardOptions) -> Self {
        let modes = |skill: &[String], default: &[String]| {
            let listed = if skill.is_empty() { default } else { skill };
            lite_modes(listed)
        };
        let agent_id = if options.agent_id.is_empty() {
            slug(&card.name)
        } else {
            options.agent_id.clone()
        };
        Self {
            protocol: LITE_PROTOCOL.to_owned(),
            agent: LiteAgent {
                id: agent_id,
                name: card.name.clone(),
                framework: "other".to_owned(),
                version: Some(card.version.clone()).filter(|v| !v.is_empty()),
            },
            description: Some(card.description.clone()).filter(|d| !d.is_empty()),
            skills: card
                .skills
                .iter()
                .map(|s| LiteSkill {
                    id: s.id.clone(),
                    name: s.name.clone(),
                    description: s.description.clone(),
                    input_modes: modes(&s.input_modes, &card.default_input_modes),
                    output_modes: modes(&s.output_modes, &card.default_output_modes),
                })
                .collect(),
            capabilities: Some(LiteCapabilities {
                streaming: Some(false),
                file_transfer: Some(false),
                async_tasks: Some(true),
                push_notifications: Some(false),
            }),
            limits: options.limits.clone(),
            channels: options.channels.clone(),
            contact: options.contact.clone(),
            a2a_agent_card: options.a2a_agent_card.clone(),
        }
    }

    /// The A2A card of an agent known by its A2A-Lite card (an agent in a room, called like
    /// any remote agent). It lists no interface (the agent is reached in its room); `limits`,
    /// `contact`, `channels`, `fileTransfer` and `asyncTasks` have no A2A field and are left out.
    pub fn to_a2a(&self) -> AgentCard {
        let skills: Vec<AgentSkill> = self
            .skills
            .iter()
            .map(|s| AgentSkill {
                id: s.id.clone(),
                name: s.name.clone(),
                description: s.description.clone(),
                tags: vec![self.agent.framework.clone()],
                input_modes: media_types(&s.input_modes),
                output_modes: media_types(&s.output_modes),
                ..AgentSkill::default()
            })
            .collect();
        let union = |pick: fn(&AgentSkill) -> &Vec<String>| {
            let mut all: Vec<String> = Vec::new();
            for mode in skills.iter().flat_map(pick) {
                if !all.contains(mode) {
                    all.push(mode.clone());
                }
            }
            if all.is_empty() {
                all.push("text/plain".to_owned());
            }
            all
        };
        let capabilities = self.capabilities.clone().unwrap_or_default();
        AgentCard {
            name: self.agent.name.clone(),
            description: self.description.clone().unwrap_or_default(),
            version: self.agent.version.clone().unwrap_or_default(),
            default_input_modes: union(|s| &s.input_modes),
            default_output_modes: union(|s| &s.output_modes),
            capabilities: AgentCapabilities {
                streaming: Some(capabilities.streaming.unwrap_or(false)),
                push_notifications: Some(capabilities.push_notifications.unwrap_or(false)),
                ..AgentCapabilities::default()
            },
            skills,
            ..AgentCard::default()
        }
    }

    /// Reads a card from JSON and checks it against the schema: the required fields, the
    /// protocol's form, the framework and the modes. Unknown fields are ignored.
    pub fn from_json(text: &str) -> Result<Self, LiteError> {
        let card: Self = serde_json::from_str(text).map_err(|e| LiteError {
            message: format!("The card is not a valid a2a-lite card: {e}."),
            task: None,
        })?;
        card.validate()?;
        Ok(card)
    }

    /// Checks what the schema requires beyond the field types.
    pub fn validate(&self) -> Result<(), LiteError> {
        let fail = |message: String| {
            Err(LiteError {
                message,
                task: None,
            })
        };
        if !is_protocol(&self.protocol) {
            return fail(format!(
                "The card's protocol {:?} is not of the form a2a-lite/<major>.<minor>.",
                self.protocol
            ));
        }
        if !LITE_FRAMEWORKS.contains(&self.agent.framework.as_str()) {
            return fail(format!(
                "The card's agent.framework {:?} is not one of clawdbot, openclaw, other.",
                self.agent.framework
            ));
        }
        for skill in &self.skills {
            for mode in skill.input_modes.iter().chain(&skill.output_modes) {
                if !LITE_MODES.contains(&mode.as_str()) {
                    return fail(format!(
                        "Skill {} lists the mode {mode:?}; modes are text, file, image, audio \
                         and video.",
                        skill.id
                    ));
                }
            }
        }
        Ok(())
    }

    /// What a `card` message says to people: who the agent is, its skills, and how to give
    /// it work.
    pub fn prose(&self) -> String {
        let mut text = format!("I am {}", self.agent.name);
        if let Some(version) = &self.agent.version {
            text.push_str(&format!(" (version {version})"));
        }
        text.push('.');
        if let Some(description) = &self.description {
            text.push(' ');
            text.push_str(description);
        }
        if !self.skills.is_empty() {
            text.push_str("\nMy skills:");
            for skill in &self.skills {
                text.push_str(&format!(
                    "\n- {} (skill={}): {}",
                    skill.name, skill.id, skill.description
                ));
            }
        }
        text.push_str(
            "\nTo give me work, start a message with [A2A:task id=<your id> skill=<skill>] and \
             say what to do below it; I answer with ack, status and result messages. \
             [A2A:cancel task=<your id>] stops it.",
        );
        let caps = self.capabilities.clone().unwrap_or_default();
        let yes_no = |flag: Option<bool>| if flag == Some(true) { "yes" } else { "no" };
        text.push_str(&format!(
            "\nStreaming: {}. File transfer: {}.",
            yes_no(caps.streaming),
            yes_no(caps.file_transfer)
        ));
        text
    }

    /// The body of a `card` message: [`Self::prose`], then the card as JSON in a fenced block.
    pub fn message_body(&self) -> String {
        let json = serde_json::to_string_pretty(self).unwrap_or_default();
        format!("{}\n```json\n{json}\n```", self.prose())
    }

    /// The JSON card in the body of a `card` message, if it carries one: a fenced block
    /// (```` ```json ````), else the text from its first `{` to its last `}`. `None` when the
    /// body is prose only (a card message need not carry JSON).
    pub fn from_message_body(body: &str) -> Option<Result<Self, LiteError>> {
        let fenced = body.split("```").skip(1).step_by(2).find_map(|block| {
            let block = block.trim_start();
            let block = block
                .strip_prefix("json")
                .or_else(|| block.strip_prefix("JSON"))
                .unwrap_or(block);
            block.trim().starts_with('{').then_some(block.trim())
        });
        let json = match fenced {
            Some(json) => json,
            None => {
                let start = body.find('{')?;
                let end = body.rfind('}')?;
                body.get(start..=end)?
            }
        };
        Some(Self::from_json(json))
    }
}

/// `^a2a-lite/[0-9]+\.[0-9]+$`.
fn is_protocol(text: &str) -> bool {
    let Some(version) = text.strip_prefix("a2a-lite/") else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    matches!(version.split_once('.'), Some((major, minor)) if digits(major) && digits(minor))
}

/// The A2A-Lite mode of a media type.
pub fn lite_mode(media_type: &str) -> &'static str {
    let lower = media_type.to_ascii_lowercase();
    let (top, sub) = lower.split_once('/').unwrap_or((lower.as_str(), ""));
    match top {
        "text" => "text",
        "image" => "image",
        "audio" => "audio",
        "video" => "video",
        "application" if sub == "json" || sub.ends_with("+json") => "text",
        _ => "file",
    }
}

/// The A2A-Lite modes of media types, each once, in order.
pub fn lite_modes(media_types: &[String]) -> Vec<String> {
    let mut modes: Vec<String> = Vec::new();
    for mode in media_types.iter().map(|m| lite_mode(m)) {
        if !modes.iter().any(|m| m == mode) {
            modes.push(mode.to_owned());
        }
    }
    modes
}

/// The media type an A2A card gives an A2A-Lite mode.
pub fn media_type(mode: &str) -> &'static str {
    match mode {
        "text" => "text/plain",
        "image" => "image/*",
        "audio" => "audio/*",
        "video" => "video/*",
        _ => "application/octet-stream",
    }
}

fn media_types(modes: &[String]) -> Vec<String> {
    modes.iter().map(|m| media_type(m).to_owned()).collect()
}

/// An id from a name: lowercase letters and digits, runs of anything else as one `-`.
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_owned();
    if out.is_empty() {
        "agent".to_owned()
    } else {
        out
    }
}
