//! Reading a Secrets Manager secret at init: the API keys, the push signing keys, the agents'
//! credentials and the A2A-Lite channels all come this way.

use a2a_core::ConfigError;

/// The text of a Secrets Manager secret. The error says which secret failed and why, never
/// what it holds.
pub(crate) async fn read_secret(
    client: &aws_sdk_secretsmanager::Client,
    arn: &str,
    what: &str,
) -> Result<String, ConfigError> {
    let secret = || format!("the {what} secret");
    let out = client
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|e| {
            ConfigError::unreadable(
                secret(),
                format!(
                    "cannot be read: {}",
                    aws_sdk_secretsmanager::error::DisplayErrorContext(e)
                ),
            )
        })?;
    out.secret_string()
        .map(str::to_owned)
        .ok_or_else(|| ConfigError::unreadable(secret(), "has no SecretString"))
}
