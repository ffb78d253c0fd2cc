//! The A2A-Lite channels of the channel function (and of the front function), whose rooms every
//! function that runs the agent may call: their settings,
//! from a Secrets Manager secret (or, for local runs, the environment), and their routes.

use a2a_channels::{LiteChannels, LiteSettings};
use a2a_core::{A2aService, ConfigError};
use axum::Router;

use crate::secret::read_secret;

/// ARN of the Secrets Manager secret holding the channels (JSON: `{"webhook": {"token",
/// "replyUrl"}, "matrix": {"homeserverUrl", "asToken", "hsToken", "senderLocalpart"}}`;
/// template parameter `LiteChannelSecretArn`, or the stack's own `LiteChannelSecret`).
/// Without it, the channels come from the environment as `a2a-local` reads them
/// (`A2A_LITE_WEBHOOK_TOKEN`, …): local runs only.
pub const ENV_LITE_SECRET_ARN: &str = "A2A_LITE_SECRET_ARN";

/// The channels the environment `lookup` describes, read once in a function's init phase (a
/// channel's token changed in the secret reaches new instances: a redeploy, or the instances
/// Lambda starts anew): the secret named by
/// [`ENV_LITE_SECRET_ARN`] (read through `sdk`) over the `A2A_LITE_*` variables. An unreadable
/// or invalid secret is an error naming the secret, never what it holds.
pub async fn lite_settings_from(
    lookup: impl Fn(&str) -> Option<String>,
    sdk: Option<&aws_config::SdkConfig>,
) -> Result<LiteSettings, ConfigError> {
    let arn = lookup(ENV_LITE_SECRET_ARN).filter(|v| !v.trim().is_empty());
    let from_env = LiteSettings::from_lookup(lookup, a2a_channels::settings::read_registration)?;
    let (Some(arn), Some(sdk)) = (arn, sdk) else {
        return Ok(from_env);
    };
    let client = aws_sdk_secretsmanager::Client::new(sdk);
    let text = read_secret(&client, arn.trim(), "A2A-Lite channel").await?;
    let lite = from_env.with_secret(&text)?;
    if lite.is_empty() {
        tracing::warn!(
            "the A2A-Lite channel secret configures no channel yet: the channel routes answer \
             404 until it does (docs/a2a-lite.md)"
        );
    }
    Ok(lite)
}

/// `router` with the routes of the channels of `lite` merged in, bridged to `service`, whose
/// pushes come back under `base`. Without a base URL (or a channel) it is `router` as it is;
/// a channel that cannot be set up is logged and left out, so the function still answers.
pub(crate) fn with_channels(
    router: Router,
    lite: &LiteSettings,
    service: A2aService,
    base: Option<&str>,
) -> Router {
    if lite.is_empty() {
        return router;
    }
    let Some(base) = base else {
        tracing::error!(
            "the A2A-Lite channels need the deployment's public base URL (A2A_PUBLIC_BASE_URL, \
             or a request through the front door)"
        );
        return router;
    };
    match LiteChannels::new(lite, service, base) {
        Ok(Some(channels)) => router.merge(channels.router()),
        Ok(None) => router,
        Err(err) => {
            tracing::error!(error = %err, "the A2A-Lite channels cannot be set up");
            router
        }
    }
}
