//! What the adapter takes from AWS (the `aws` feature): Amazon Bedrock's models, through rig's
//! own Bedrock provider (its Converse wire, the AWS SDK as its transport), and an
//! OpenAI-compatible endpoint's key from a Secrets Manager secret.

use std::time::Duration;

use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_bedrockruntime::config::retry::RetryConfig;
use aws_sdk_bedrockruntime::config::StalledStreamProtectionConfig;
use aws_sdk_bedrockruntime::error::ProvideErrorMetadata;
use rig_bedrock::client::BedrockRuntime;
use rig_core::operation::Completion;
use rig_core::DynModel;

/// How long a model's stream may send nothing before the SDK ends it as stalled: a model may
/// take a while before its first token on a long conversation (the SDK's default is 5 s).
const STALL_GRACE: Duration = Duration::from_secs(60);

/// The Bedrock model `model`, with the AWS configuration `config` or the environment's.
pub(crate) async fn bedrock(model: &str, config: Option<&SdkConfig>) -> DynModel<Completion> {
    let loaded;
    let config = match config {
        Some(config) => config,
        None => {
            loaded = aws_config::defaults(BehaviorVersion::latest()).load().await;
            &loaded
        }
    };
    let config = aws_sdk_bedrockruntime::config::Builder::from(config)
        // The adapter retries a throttled call itself, inside the model call's step, as for
        // every provider: the SDK's own retries would multiply its attempts.
        .retry_config(RetryConfig::disabled())
        .stalled_stream_protection(
            StalledStreamProtectionConfig::enabled()
                .grace_period(STALL_GRACE)
                .build(),
        )
        .build();
    let client = aws_sdk_bedrockruntime::Client::from_conf(config);
    BedrockRuntime::from(client).completion(model).erase()
}

/// The OpenAI-compatible endpoint's key: the text of the Secrets Manager secret `arn` (read
/// with the environment's AWS configuration). The error says why, never what the secret holds.
pub(crate) async fn read_key(arn: &str) -> Result<String, String> {
    let config = aws_config::defaults(BehaviorVersion::latest()).load().await;
    let client = aws_sdk_secretsmanager::Client::new(&config);
    let failed = |why: String| {
        format!(
            "The model's API key cannot be read from its secret (OPENAI_API_KEY_SECRET_ARN): {why}"
        )
    };
    let out = client
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|e| {
            failed(match (e.code(), e.message()) {
                (Some(code), Some(message)) => format!("{code}: {message}"),
                (Some(code), None) => code.to_owned(),
                _ => "Secrets Manager could not be reached.".to_owned(),
            })
        })?;
    out.secret_string()
        .map(|key| key.trim().to_owned())
        .filter(|key| !key.is_empty())
        .ok_or_else(|| failed("the secret holds no text.".to_owned()))
}
