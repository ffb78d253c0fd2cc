//! The model: an OpenAI-compatible Chat Completions endpoint through rig, called streamed, with
//! rate limits retried inside the call and failures told in words that carry no secret.

use std::time::Duration;

use a2a_core::{AgentError, Emitter};
use futures::StreamExt as _;
use rig_core::completion::{AssistantContent, CompletionRequest, Usage};
use rig_core::message::{AssistantMessage, Message, ToolCall};
use rig_core::providers::openai::wire::Chat;
use rig_core::providers::openai::OpenAIConfig;
use rig_core::streaming::{Item, StreamEvent};
use rig_core::{Model, ProviderError};
use serde::{Deserialize, Serialize};

use crate::chunks::{Answer, HOLD};

/// How many times a rate-limited call (HTTP 429) is made in all before the task fails.
const ATTEMPTS: u32 = 4;
/// The longest pause between attempts, whatever the provider's `Retry-After` asks.
const MAX_PAUSE: Duration = Duration::from_secs(30);

/// A Chat Completions model (`POST {base}/chat/completions`, streamed).
#[derive(Clone)]
pub struct ChatModel {
    model: Model<Chat>,
    /// Removed from every failure reason, in case a provider echoes it.
    api_key: String,
}

impl ChatModel {
    /// The model `model` at `base_url` (with its `/v1`, as the OpenAI SDKs take it), sending
    /// `api_key` as a bearer token (any text for a server that wants none).
    pub fn new(base_url: &str, api_key: &str, model: &str) -> Self {
        let mut config = OpenAIConfig::new(api_key.to_owned());
        config.base_url = base_url.trim_end_matches('/').to_owned();
        Self {
            model: config.client().chat(model),
            api_key: api_key.to_owned(),
        }
    }

    /// From the environment, as the OpenAI SDKs read it: `OPENAI_BASE_URL` (default
    /// `https://api.openai.com/v1`), `OPENAI_API_KEY` (optional: local servers take none) and
    /// `A2A_LLM_MODEL` (required).
    pub fn from_env() -> Result<Self, String> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let model = var("A2A_LLM_MODEL").ok_or(
            "No model is configured: set A2A_LLM_MODEL (and OPENAI_BASE_URL for a server other \
             than OpenAI's).",
        )?;
        let base = var("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into());
        let key = var("OPENAI_API_KEY").unwrap_or_else(|| "none".into());
        Ok(Self::new(&base, &key, &model))
    }

    /// One model call, its tokens streamed into `answer` as chunks of `emitter`'s task.
    pub(crate) async fn reply(
        &self,
        request: CompletionRequest,
        emitter: &Emitter,
        answer: &Answer,
    ) -> Result<Reply, AgentError> {
        answer.begin_call();
        let mut attempt = 1;
        loop {
            let mut chunks = Vec::new();
            match self
                .attempt(request.clone(), emitter, answer, &mut chunks)
                .await
            {
                Ok(reply) => return Ok(Reply { chunks, ..reply }),
                Err(Failure::Ended(err)) => return Err(err),
                // Only a call that streamed nothing is made again: its tokens would be twice in
                // the answer otherwise (a rate limit refuses before the first token).
                Err(Failure::Provider(err))
                    if rate_limited(&err)
                        && attempt < ATTEMPTS
                        && chunks.is_empty()
                        && !answer.holds() =>
                {
                    let pause = retry_after(&err).unwrap_or(Duration::from_secs(1 << attempt));
                    tracing::info!(
                        attempt,
                        pause_ms = pause.as_millis() as u64,
                        "the model provider is rate limiting; trying again"
                    );
                    tokio::time::sleep(pause.min(MAX_PAUSE)).await;
                    attempt += 1;
                }
                Err(Failure::Provider(err)) => return Err(AgentError::Failed(self.reason(&err))),
            }
        }
    }

    async fn attempt(
        &self,
        request: CompletionRequest,
        emitter: &Emitter,
        answer: &Answer,
        chunks: &mut Vec<String>,
    ) -> Result<Reply, Failure> {
        let mut stream = self.model.stream(request)?;
        let mut due: Option<tokio::time::Instant> = None;
        loop {
            let next = tokio::select! {
                item = stream.next() => Some(item),
                () = tokio::time::sleep_until(due.unwrap_or_else(tokio::time::Instant::now)), if due.is_some() => None,
            };
            match next {
                // The oldest pending token has waited its time: written now, not held longer.
                None => {
                    due = None;
                    chunks.extend(answer.emit_chunk(emitter).await?);
                }
                Some(Some(Ok(Item::Event(StreamEvent::Text { text, .. })))) => {
                    answer.push(&text);
                    due.get_or_insert_with(|| tokio::time::Instant::now() + HOLD);
                }
                Some(Some(Ok(_))) => {}
                Some(Some(Err(err))) => return Err(err.into()),
                Some(None) => break,
            }
        }
        chunks.extend(answer.emit_chunk(emitter).await?);
        let response = stream.finish().await?;
        if let Some(error) = &response.error {
            return Err(ProviderError::Provider(error.clone()).into());
        }
        Ok(Reply {
            chunks: Vec::new(),
            calls: response.tool_calls().cloned().collect(),
            usage: response.usage,
        })
    }

    /// Why the call failed, for the task's FAILED status: the provider's status and its own
    /// message, never the key.
    fn reason(&self, err: &ProviderError) -> String {
        let said = match (err.provider_response_status(), err.provider_response_json()) {
            (Some(status), Ok(Some(body))) => {
                let message = body["error"]["message"]
                    .as_str()
                    .or(body["message"].as_str())
                    .unwrap_or("no message");
                format!("the provider answered HTTP {status}: {message}")
            }
            (Some(status), _) => format!("the provider answered HTTP {status}"),
            _ => err.to_string(),
        };
        let mut said: String = said.chars().take(500).collect();
        if self.api_key.len() >= 8 {
            said = said.replace(&self.api_key, "[redacted]");
        }
        format!("The model call failed: {said}")
    }
}

/// A failed attempt: the provider's error, or the task ended (canceled) under it.
enum Failure {
    Provider(ProviderError),
    Ended(AgentError),
}

impl From<ProviderError> for Failure {
    fn from(err: ProviderError) -> Self {
        Self::Provider(err)
    }
}

impl From<AgentError> for Failure {
    fn from(err: AgentError) -> Self {
        Self::Ended(err)
    }
}

fn rate_limited(err: &ProviderError) -> bool {
    err.provider_response_status().map(|s| s.as_u16()) == Some(429)
}

/// The provider's `Retry-After`, in seconds.
fn retry_after(err: &ProviderError) -> Option<Duration> {
    let value = err.provider_response_headers()?.get("retry-after")?;
    let seconds: f64 = value.to_str().ok()?.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// A model call as its step records it: the chunks its text streamed in, its tool calls and
/// the tokens it used.
#[derive(Serialize, Deserialize)]
pub(crate) struct Reply {
    pub(crate) chunks: Vec<String>,
    pub(crate) calls: Vec<ToolCall>,
    pub(crate) usage: Usage,
}

impl Reply {
    /// The tool calls the model asked for.
    pub(crate) fn tool_calls(&self) -> Vec<ToolCall> {
        self.calls.clone()
    }

    /// The model's turn, for the next call's conversation.
    pub(crate) fn message(&self) -> Message {
        let text = self.chunks.concat();
        let mut content = Vec::new();
        if !text.is_empty() {
            content.push(AssistantContent::text(text));
        }
        content.extend(self.calls.iter().cloned().map(AssistantContent::ToolCall));
        Message::Assistant(AssistantMessage::new(content))
    }
}
