//! Why a marker is refused: the error every part of the codec returns, below them all.

/// Why a message that starts with a marker is not a valid one: a sentence a person reading the
/// room understands, and the task it was about when the marker named one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LiteError {
    /// What is wrong and how to write it instead.
    pub message: String,
    /// The task id the marker named, if it got that far.
    pub task: Option<String>,
}

impl LiteError {
    pub(super) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            task: None,
        }
    }

    pub(super) fn about(mut self, task: Option<&str>) -> Self {
        self.task = task.map(str::to_owned);
        self
    }
}
