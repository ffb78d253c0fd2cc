//! Older protocol versions as translations of the 1.0 wire objects: A2A 0.3 (its JSON-RPC
//! dialect and its HTTP+JSON dialect, the ProtoJSON of the 0.3 proto) and the early protocol
//! (before 0.2: `tasks/send`, `sessionId`, `type`-tagged parts).
//!
//! Pure functions on JSON values. Inbound, an old request becomes the 1.0 request object of the
//! same operation ([`inbound`]); outbound, a 1.0 result or stream event becomes what the old
//! client reads ([`Dialect`]). The early dialect is built on the 0.3 one: both use lower-case
//! states, `user`/`agent` roles and `{bytes|uri, mimeType, name}` files; the early one tags parts
//! with `type` and names the conversation `sessionId`.

use serde_json::Value;

mod card;
pub mod inbound;
mod outbound;

pub use card::{early_card, v03_card};
pub use outbound::{is_final_state, DATA_PART_COMPAT};

/// An older protocol version, as a request speaks it and a push config remembers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum OlderVersion {
    /// A2A 0.3 (either binding).
    #[serde(rename = "0.3")]
    V03,
    /// The early protocol (before 0.2).
    #[serde(rename = "early")]
    Early,
}

impl OlderVersion {
    /// The dialect of the body a push to a config of this version carries: the Task as its
    /// clients read it (0.3 JSON-RPC objects for 0.3, whichever binding set the config, as the
    /// 0.3 SDKs push).
    pub fn push_dialect(self) -> Dialect {
        match self {
            Self::V03 => Dialect::V03,
            Self::Early => Dialect::Early,
        }
    }
}

/// An older wire dialect a result or event is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// A2A 0.3 JSON-RPC: `kind` discriminators, `input-required` states, `user` roles, bare
    /// results and events, `final` on status events.
    V03,
    /// A2A 0.3 HTTP+JSON: ProtoJSON of the 0.3 proto (`content[]`, `fileWithUri`,
    /// `TASK_STATE_CANCELLED`, `ROLE_USER`), results and events in `{task|message|…}` wrappers.
    V03Rest,
    /// The early protocol: parts tagged `type`, `sessionId`, status events `{id, status,
    /// final}`, artifact events `{id, artifact}` with `index`/`append`/`lastChunk` on the
    /// artifact.
    Early,
    /// 0.3 JSON-RPC carrying the early fields too (`sessionId`, part `type`, `id` on events), for
    /// the methods both versions share (`tasks/get`, `tasks/cancel`, `tasks/resubscribe`) on
    /// the generic JSON-RPC endpoint: readers of either version ignore the other's fields.
    V03AndEarly,
}

impl Dialect {
    /// Whether objects carry 0.3's `kind` discriminators.
    fn kinds(self) -> bool {
        matches!(self, Self::V03 | Self::V03AndEarly)
    }

    /// Whether objects carry the early protocol's fields.
    fn early(self) -> bool {
        matches!(self, Self::Early | Self::V03AndEarly)
    }

    /// The version of clients reading this dialect (0.3 for the dialect both read).
    pub fn version(self) -> OlderVersion {
        match self {
            Self::Early => OlderVersion::Early,
            Self::V03 | Self::V03Rest | Self::V03AndEarly => OlderVersion::V03,
        }
    }

    /// Whether this is the 0.3 proto's ProtoJSON.
    fn proto(self) -> bool {
        self == Self::V03Rest
    }
}

/// Takes member `key` out of `object`, if it is an object.
fn take(object: &mut Value, key: &str) -> Option<Value> {
    object.as_object_mut().and_then(|o| o.remove(key))
}

/// `TASK_STATE_INPUT_REQUIRED` → `input-required`; `TASK_STATE_UNSPECIFIED` → `unknown`.
pub fn state_to_kebab(state: &str) -> String {
    match state.strip_prefix("TASK_STATE_") {
        Some("UNSPECIFIED") | None => "unknown".to_owned(),
        Some(rest) => rest.to_ascii_lowercase().replace('_', "-"),
    }
}

/// `input-required` (or the 0.3 proto's `TASK_STATE_CANCELLED`) → `TASK_STATE_INPUT_REQUIRED`.
/// `None` for a word no version spells.
pub fn state_from_old(state: &str) -> Option<&'static str> {
    Some(match state {
        "submitted" | "TASK_STATE_SUBMITTED" => "TASK_STATE_SUBMITTED",
        "working" | "TASK_STATE_WORKING" => "TASK_STATE_WORKING",
        "input-required" | "TASK_STATE_INPUT_REQUIRED" => "TASK_STATE_INPUT_REQUIRED",
        "auth-required" | "TASK_STATE_AUTH_REQUIRED" => "TASK_STATE_AUTH_REQUIRED",
        "completed" | "TASK_STATE_COMPLETED" => "TASK_STATE_COMPLETED",
        "canceled" | "cancelled" | "TASK_STATE_CANCELED" | "TASK_STATE_CANCELLED" => {
            "TASK_STATE_CANCELED"
        }
        "failed" | "TASK_STATE_FAILED" => "TASK_STATE_FAILED",
        "rejected" | "TASK_STATE_REJECTED" => "TASK_STATE_REJECTED",
        "unknown" | "TASK_STATE_UNSPECIFIED" => "TASK_STATE_UNSPECIFIED",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_translate_both_ways() {
        for (v1, old) in [
            ("TASK_STATE_INPUT_REQUIRED", "input-required"),
            ("TASK_STATE_AUTH_REQUIRED", "auth-required"),
            ("TASK_STATE_CANCELED", "canceled"),
            ("TASK_STATE_COMPLETED", "completed"),
            ("TASK_STATE_UNSPECIFIED", "unknown"),
        ] {
            assert_eq!(state_to_kebab(v1), old);
            assert_eq!(state_from_old(old), Some(v1));
        }
        assert_eq!(
            state_from_old("TASK_STATE_CANCELLED"),
            Some("TASK_STATE_CANCELED")
        );
        assert_eq!(state_from_old("done"), None);
    }
}
