//! The model: an OpenAI-compatible Chat Completions endpoint or Amazon Bedrock's ConverseStream,
//! through rig, called streamed, with rate limits retried inside the call and failures told in
//! words that carry no secret.

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{AgentError, Emitter};
use futures::StreamExt as _;
use rig_core::completion::{AssistantContent, CompletionRequest, Usage};
use rig_core::message::{AssistantMessage, Message, ToolCall};
use rig_core::operation::Completion;
use rig_core::providers::openai::OpenAIConfig;
use rig_core::streaming::{Item, StreamEvent};
use rig_core::{DynModel, ProviderError};
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use crate::chunks::{Answer, HOLD};

/// How many times a rate-limited call (HTTP 429, Bedrock's ThrottlingException) is made in
/// all before the task fails.
const ATTEMPTS: u32 = 4;
/// The longest pause between attempts, whatever the provider's `Retry-After` asks.
const MAX_PAUSE: Duration = Duration::from_secs(30);

/// The environment variable that chooses the provider: `openai` (the default) or `bedrock`.
pub(crate) const ENV_PROVIDER: &str = "A2A_LLM_PROVIDER";

/// A chat model, called streamed: an OpenAI-compatible Chat Completions endpoint
/// (`POST {base}/chat/completions`) or Amazon Bedrock (ConverseStream).
#[derive(Clone)]
pub struct ChatModel {
    /// The model and its key, once connected (at once for a key given; at the first call for
    /// a key in a secret or Bedrock, whose AWS configuration loads then).
    connected: Arc<OnceCell<Connected>>,
    source: Source,
}

/// A model ready to call.
struct Connected {
    model: DynModel<Completion>,
    /// Removed from every failure reason, in case a provider echoes it.
    api_key: String,
}

/// Where a model not yet connected comes from.
#[derive(Clone)]
enum Source {
    /// Connected when made.
    Given,
    /// An OpenAI-compatible endpoint whose key is in a Secrets Manager secret (its ARN).
    #[cfg(feature = "aws")]
    KeyInSecret {
        base_url: String,
        model: String,
        arn: String,
    },
    /// Amazon Bedrock, with the AWS configuration given or (`None`) the environment's.
    #[cfg(feature = "aws")]
    Bedrock {
        model: String,
        config: Option<Box<aws_config::SdkConfig>>,
    },
}

impl ChatModel {
    /// The model `model` at `base_url` (with its `/v1`, as the OpenAI SDKs take it), sending
    /// `api_key` as a bearer token (any text for a server that wants none).
    pub fn new(base_url: &str, api_key: &str, model: &str) -> Self {
        Self {
            connected: Arc::new(OnceCell::new_with(Some(openai(base_url, api_key, model)))),
            source: Source::Given,
        }
    }

    /// From the environment. `A2A_LLM_MODEL` (required) names the model for either provider;
    /// `A2A_LLM_PROVIDER` chooses it: `openai` (the default), an OpenAI-compatible endpoint as
    /// the OpenAI SDKs read it (`OPENAI_BASE_URL`, default `https://api.openai.com/v1`;
    /// `OPENAI_API_KEY`, optional: local servers take none; or, with the `aws` feature,
    /// `OPENAI_API_KEY_SECRET_ARN`, a Secrets Manager secret holding the key, read once at the
    /// first call), or `bedrock` (the `aws` feature), Amazon Bedrock's ConverseStream with the
    /// AWS SDK's configuration from the environment (the Lambda function's role and region).
    pub fn from_env() -> Result<Self, String> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`Self::from_env`], the variables read through `var`.
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let model = var("A2A_LLM_MODEL").ok_or(
            "No model is configured: set A2A_LLM_MODEL (and OPENAI_BASE_URL for a server other \
             than OpenAI's, or A2A_LLM_PROVIDER=bedrock for Amazon Bedrock).",
        )?;
        let provider = var(ENV_PROVIDER).map(|p| p.trim().to_ascii_lowercase());
        match provider.as_deref().unwrap_or("openai") {
            "openai" => {
                let base =
                    var("OPENAI_BASE_URL").unwrap_or_else(|| "https://api.openai.com/v1".into());
                if let Some(arn) = var("OPENAI_API_KEY_SECRET_ARN") {
                    return Self::key_in_secret(&base, &arn, &model);
                }
                let key = var("OPENAI_API_KEY").unwrap_or_else(|| "none".into());
                Ok(Self::new(&base, &key, &model))
            }
            "bedrock" => Self::bedrock_from_env(&model),
            other => Err(format!(
                "{ENV_PROVIDER} is {other:?}: it takes openai (an OpenAI-compatible Chat \
                 Completions endpoint) or bedrock (Amazon Bedrock)."
            )),
        }
    }

    #[cfg(feature = "aws")]
    fn key_in_secret(base_url: &str, arn: &str, model: &str) -> Result<Self, String> {
        Ok(Self {
            connected: Arc::default(),
            source: Source::KeyInSecret {
                base_url: base_url.into(),
                model: model.into(),
                arn: arn.into(),
            },
        })
    }

    #[cfg(not(feature = "aws"))]
    fn key_in_secret(_: &str, _: &str, _: &str) -> Result<Self, String> {
        Err(crate::NO_AWS.replace("{what}", "OPENAI_API_KEY_SECRET_ARN"))
    }

    #[cfg(feature = "aws")]
    fn bedrock_from_env(model: &str) -> Result<Self, String> {
        Ok(Self::bedrock(model, None))
    }

    #[cfg(not(feature = "aws"))]
    fn bedrock_from_env(_: &str) -> Result<Self, String> {
        Err(crate::NO_AWS.replace("{what}", "A2A_LLM_PROVIDER=bedrock"))
    }

    /// Amazon Bedrock's model `model` (a model id such as `amazon.nova-lite-v1:0`, an
    /// inference profile id such as `us.anthropic.claude-haiku-4-5-20251001-v1:0`, or an
    /// ARN), called through ConverseStream with the AWS configuration `config`, or (`None`)
    /// the environment's, loaded at the first call.
    #[cfg(feature = "aws")]
    pub fn bedrock(model: &str, config: Option<aws_config::SdkConfig>) -> Self {
        Self {
            connected: Arc::default(),
            source: Source::Bedrock {
                model: model.into(),
                config: config.map(Box::new),
            },
        }
    }

    /// The model, connected at the first call; a failure (a secret that does not read) is
    /// not kept: the next call tries again.
    async fn connected(&self) -> Result<&Connected, String> {
        self.connected
            .get_or_try_init(|| async {
                match &self.source {
                    Source::Given => Err("The model is not configured.".to_owned()),
                    #[cfg(feature = "aws")]
                    Source::KeyInSecret {
                        base_url,
                        model,
                        arn,
                    } => {
                        let key = crate::aws::read_key(arn).await?;
                        Ok(openai(base_url, &key, model))
                    }
                    #[cfg(feature = "aws")]
                    Source::Bedrock { model, config } => Ok(Connected {
                        model: crate::aws::bedrock(model, config.as_deref()).await,
                        api_key: String::new(),
                    }),
                }
            })
            .await
    }

    /// One model call, its tokens streamed into `answer` as chunks of `emitter`'s task.
    pub(crate) async fn reply(
        &self,
        request: CompletionRequest,
        emitter: &Emitter,
        answer: &Answer,
    ) -> Result<Reply, AgentError> {
        answer.begin_call();
        let connected = self.connected().await.map_err(AgentError::Failed)?;
        let mut attempt = 1;
        loop {
            let mut chunks = Vec::new();
            match self
                .attempt(connected, request.clone(), emitter, answer, &mut chunks)
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
                Err(Failure::Provider(err)) => {
                    return Err(AgentError::Failed(reason(&err, &connected.api_key)))
                }
            }
        }
    }

    async fn attempt(
        &self,
        connected: &Connected,
        request: CompletionRequest,
        emitter: &Emitter,
        answer: &Answer,
        chunks: &mut Vec<String>,
    ) -> Result<Reply, Failure> {
        let mut stream = connected.model.stream(request)?;
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
}

/// An OpenAI-compatible endpoint's model, its key given.
fn openai(base_url: &str, api_key: &str, model: &str) -> Connected {
    let mut config = OpenAIConfig::new(api_key.to_owned());
    config.base_url = base_url.trim_end_matches('/').to_owned();
    Connected {
        model: config.client().chat(model).erase(),
        api_key: api_key.to_owned(),
    }
}

/// Why the call failed, for the task's FAILED status: the provider's status, its error code
/// and its own message, never the key (nor the SDK's internals: only what the provider said).
fn reason(err: &ProviderError, api_key: &str) -> String {
    let status = err.provider_response_status();
    let code = err.report().code;
    let message = match err.provider_response_json() {
        Ok(Some(body)) => body["error"]["message"]
            .as_str()
            .or(body["message"].as_str())
            .or(body["Message"].as_str())
            .map(str::to_owned),
        _ => err
            .provider_response_body()
            .map(str::trim)
            .filter(|body| !body.is_empty())
            .map(str::to_owned),
    };
    let answered = match (status, &code) {
        (Some(status), Some(code)) => Some(format!("HTTP {} ({code})", status.as_u16())),
        (Some(status), None) => Some(format!("HTTP {}", status.as_u16())),
        (None, Some(code)) => Some(code.clone()),
        (None, None) => None,
    };
    let said = match (answered, message) {
        (Some(answered), Some(message)) => format!("the provider answered {answered}: {message}"),
        (Some(answered), None) => format!("the provider answered {answered}"),
        (None, Some(message)) => format!("the provider answered: {message}"),
        (None, None) => match err {
            ProviderError::Provider(message) => message.clone(),
            other => other.to_string(),
        },
    };
    let mut said: String = said.chars().take(500).collect();
    if api_key.len() >= 8 {
        said = said.replace(api_key, "[redacted]");
    }
    format!("The model call failed: {said}")
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

/// A rate limit: HTTP 429, or Bedrock's ThrottlingException (also sent as the stream's first
/// event, with no status).
fn rate_limited(err: &ProviderError) -> bool {
    err.provider_response_status().map(|s| s.as_u16()) == Some(429)
        || err.report().code.as_deref() == Some("ThrottlingException")
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

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<ChatModel, String> {
        ChatModel::from_vars(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn the_provider_is_chosen_by_the_environment() {
        let model = ("A2A_LLM_MODEL", "m");
        // OpenAI-compatible by default, and by name (in any case).
        for provider in [None, Some("openai"), Some(" OpenAI ")] {
            let mut vars = vec![model];
            vars.extend(provider.map(|p| (ENV_PROVIDER, p)));
            let chosen = from(&vars).expect("a provider");
            assert!(matches!(chosen.source, Source::Given), "{provider:?}");
            assert!(chosen.connected.initialized(), "{provider:?}");
        }
        let err = from(&[model, (ENV_PROVIDER, "anthropic")])
            .err()
            .expect("refused");
        assert!(
            err.contains("A2A_LLM_PROVIDER is \"anthropic\"")
                && err.contains("openai")
                && err.contains("bedrock"),
            "{err}"
        );
        let err = from(&[(ENV_PROVIDER, "bedrock")]).err().expect("no model");
        assert!(err.contains("A2A_LLM_MODEL"), "{err}");
    }

    #[cfg(feature = "aws")]
    #[test]
    fn bedrock_and_a_key_in_a_secret_connect_at_the_first_call() {
        let model = ("A2A_LLM_MODEL", "amazon.nova-lite-v1:0");
        let bedrock = from(&[model, (ENV_PROVIDER, "bedrock")]).expect("bedrock");
        assert!(
            matches!(&bedrock.source, Source::Bedrock { model, config: None } if model == "amazon.nova-lite-v1:0")
        );
        assert!(!bedrock.connected.initialized());
        let arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:llm-key-AbCdEf";
        let keyed = from(&[
            model,
            ("OPENAI_BASE_URL", "https://llm.example/v1"),
            ("OPENAI_API_KEY", "ignored"),
            ("OPENAI_API_KEY_SECRET_ARN", arn),
        ])
        .expect("openai");
        assert!(
            matches!(&keyed.source, Source::KeyInSecret { arn: a, base_url, .. } if a == arn && base_url == "https://llm.example/v1")
        );
        assert!(!keyed.connected.initialized());
    }

    #[cfg(not(feature = "aws"))]
    #[test]
    fn without_the_aws_feature_bedrock_is_a_clear_error() {
        let err = from(&[("A2A_LLM_MODEL", "m"), (ENV_PROVIDER, "bedrock")])
            .err()
            .expect("refused");
        assert!(err.contains("feature `aws`"), "{err}");
    }
}
