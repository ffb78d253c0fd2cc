//! A2A-Lite (`a2a-lite/1.0`): the protocol of agents that live in chat rooms (Clawdbot,
//! OpenClaw assistants) and talk to each other in messages a person can read.
//!
//! A protocol message is chat text whose first line is a marker, `[A2A:<type> key=value …]`,
//! followed by a natural-language body and optional attachment lines (`[附件: report.md]`).
//! A message without a marker is ordinary chat and never protocol.
//!
//! This module is the translation between that dialect and A2A 1.0, pure like the rest of the
//! crate:
//! - [`marker`]: parsing and formatting messages ([`LiteMessage`], [`parse`]);
//! - [`state`]: task states both ways ([`LiteState`]);
//! - [`card`]: the A2A-Lite card ([`LiteCard`]) ↔ the A2A [`AgentCard`](crate::AgentCard);
//! - [`render`]: A2A statuses, tasks and artifacts as the messages a room reads.
//!
//! Where the public description is loose, the parser is tolerant where its examples are (the
//! case of `A2A` and of the type, spacing between parameters, `canceled` for `cancelled`) and
//! strict where a guess could start work by mistake (a marker must open the message, every
//! parameter is `key=value`, no key twice, required keys present).

pub mod card;
mod error;
pub mod marker;
pub mod quote;
pub mod render;
pub mod state;

pub use card::{
    LiteAgent, LiteCapabilities, LiteCard, LiteCardOptions, LiteContact, LiteLimits, LiteSkill,
};
pub use marker::{parse, Attachment, LiteError, LiteKind, LiteMessage};
pub use state::LiteState;

/// The protocol name and version this crate speaks, as a card's `protocol` states it.
pub const LITE_PROTOCOL: &str = "a2a-lite/1.0";

/// The longest task id accepted in a marker (`id=`, `task=`), in characters.
pub const MAX_LITE_TASK_ID_LEN: usize = 128;

#[cfg(test)]
mod tests;
