//! Task states: A2A-Lite's seven and A2A's, both ways.

use std::fmt;

use super::error::LiteError;
use crate::TaskState;

/// A task state as A2A-Lite spells it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LiteState {
    /// `accepted`: the task was taken on.
    Accepted,
    /// `working`.
    Working,
    /// `input-required`: the agent waits for an answer.
    InputRequired,
    /// `completed` (terminal).
    Completed,
    /// `failed` (terminal).
    Failed,
    /// `cancelled` (terminal; this spelling).
    Cancelled,
    /// `rejected` (terminal).
    Rejected,
    /// A state a later version may add (lowercased): not terminal, and no A2A state.
    Other(String),
}

impl LiteState {
    /// The seven states of `a2a-lite/1.0`.
    pub const ALL: [LiteState; 7] = [
        Self::Accepted,
        Self::Working,
        Self::InputRequired,
        Self::Completed,
        Self::Failed,
        Self::Cancelled,
        Self::Rejected,
    ];

    /// The state as a marker writes it.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Accepted => "accepted",
            Self::Working => "working",
            Self::InputRequired => "input-required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Rejected => "rejected",
            Self::Other(name) => name,
        }
    }

    /// Reads a `state=` value. Case is ignored, and the spellings other agents are likely to
    /// use for the same state are accepted (`canceled`, `input_required`); a name in none of
    /// these forms is [`Self::Other`] (states may be added), unless it is not a name at all.
    pub fn parse(text: &str) -> Result<Self, LiteError> {
        let lower = text.to_ascii_lowercase();
        Ok(match lower.as_str() {
            "accepted" => Self::Accepted,
            "working" => Self::Working,
            "input-required" | "input_required" | "inputrequired" => Self::InputRequired,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" | "canceled" => Self::Cancelled,
            "rejected" => Self::Rejected,
            _ if lower
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
            {
                Self::Other(lower)
            }
            _ => {
                return Err(LiteError {
                    message: format!(
                        "{} is not a task state: use accepted, working, input-required, \
                         completed, failed, cancelled or rejected.",
                        super::quote::quote(text)
                    ),
                    task: None,
                })
            }
        })
    }

    /// Whether the task can change no more: completed, failed, cancelled, rejected.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Cancelled | Self::Rejected
        )
    }

    /// The A2A state: `accepted` is SUBMITTED (taken on, not started), the others are their
    /// namesakes; an unknown state has none.
    pub fn to_a2a(&self) -> Option<TaskState> {
        Some(match self {
            Self::Accepted => TaskState::Submitted,
            Self::Working => TaskState::Working,
            Self::InputRequired => TaskState::InputRequired,
            Self::Completed => TaskState::Completed,
            Self::Failed => TaskState::Failed,
            Self::Cancelled => TaskState::Canceled,
            Self::Rejected => TaskState::Rejected,
            Self::Other(_) => return None,
        })
    }

    /// The A2A-Lite state of an A2A state. AUTH_REQUIRED has no A2A-Lite name: it is
    /// `input-required` (the agent waits for the requester either way). UNSPECIFIED has none.
    pub fn from_a2a(state: TaskState) -> Option<Self> {
        Some(match state {
            TaskState::Submitted => Self::Accepted,
            TaskState::Working => Self::Working,
            TaskState::InputRequired | TaskState::AuthRequired => Self::InputRequired,
            TaskState::Completed => Self::Completed,
            TaskState::Failed => Self::Failed,
            TaskState::Canceled => Self::Cancelled,
            TaskState::Rejected => Self::Rejected,
            TaskState::Unspecified => return None,
        })
    }
}

impl fmt::Display for LiteState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
