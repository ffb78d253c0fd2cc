//! The tokens a task's model calls used, summed over its messages, in the task's metadata.
//!
//! Each model call's usage is part of what its step records, so a replay adds the recorded
//! figures again to a sum that starts from zero in every run: it does not count them twice.
//! A follow-up message (the answer to a question) starts from what the task's metadata said
//! before it, which the run writes only with the status that ends it.

use a2a_protocol::{Metadata, Task};
use rig_core::completion::Usage;
use serde::{Deserialize, Serialize};

/// The task's metadata key of its token usage (GetTask's `task.metadata.tokenUsage`).
pub(crate) const KEY: &str = "tokenUsage";

/// Tokens used, and by how many model calls.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct TokenUsage {
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) total_tokens: u64,
    pub(crate) model_calls: u64,
}

impl TokenUsage {
    /// What the task's earlier messages used, as its metadata says (nothing for a new task).
    pub(crate) fn of_task(task: Option<&Task>) -> Self {
        task.and_then(|t| t.metadata.as_ref())
            .and_then(|m| m.get(KEY))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// One more model call, which used `usage` (a provider that reports no total gets the sum
    /// of what it reports).
    pub(crate) fn add(&mut self, usage: &Usage) {
        let input = usage.input_tokens.unwrap_or(0);
        let output = usage.output_tokens.unwrap_or(0);
        self.input_tokens += input;
        self.output_tokens += output;
        self.total_tokens += usage.total_tokens.unwrap_or(input + output);
        self.model_calls += 1;
    }

    /// The sum of two usages.
    pub(crate) fn plus(self, other: Self) -> Self {
        Self {
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            total_tokens: self.total_tokens + other.total_tokens,
            model_calls: self.model_calls + other.model_calls,
        }
    }

    /// As a JSON value (`inputTokens`, `outputTokens`, `totalTokens`, `modelCalls`).
    pub(crate) fn to_value(self) -> serde_json::Value {
        serde_json::json!({
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "totalTokens": self.total_tokens,
            "modelCalls": self.model_calls,
        })
    }

    /// The metadata of a status event that sets the task's usage to this.
    pub(crate) fn task_metadata(self) -> Metadata {
        let mut metadata = Metadata::new();
        metadata.insert(KEY.into(), self.to_value());
        metadata
    }
}
