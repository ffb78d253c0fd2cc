//! What a deployment's chat channels are: read from the environment (and, on Lambda, from a
//! Secrets Manager secret), the same names for `a2a-local` and the functions.

use std::fmt;

use a2a_core::ConfigError;
use serde::Deserialize;

/// The chat's token in its outgoing webhooks (`token=` in the form or JSON body).
pub const ENV_WEBHOOK_TOKEN: &str = "A2A_LITE_WEBHOOK_TOKEN";
/// The chat's incoming-webhook URL, where the bridge posts its messages.
pub const ENV_WEBHOOK_REPLY_URL: &str = "A2A_LITE_WEBHOOK_REPLY_URL";
/// The Matrix homeserver's client-server API base URL (`https://matrix.example.org`).
pub const ENV_MATRIX_HOMESERVER: &str = "A2A_LITE_MATRIX_HOMESERVER";
/// The application service registration file (the YAML the homeserver is given).
pub const ENV_MATRIX_REGISTRATION: &str = "A2A_LITE_MATRIX_REGISTRATION";
/// The principal the channels act as when auth is on (default [`DEFAULT_PRINCIPAL`]).
pub const ENV_PRINCIPAL: &str = "A2A_LITE_PRINCIPAL";
/// `agent.id` on the agent's A2A-Lite card.
pub const ENV_AGENT_ID: &str = "A2A_LITE_AGENT_ID";

/// The owner of the channels' tasks when auth is on and no principal is configured: the owner
/// of API keys issued with `--principal a2a-lite`, so such a key lists them.
pub const DEFAULT_PRINCIPAL: &str = "key:a2a-lite";

/// A Slack-compatible webhook channel (Slack, Mattermost, Rocket.Chat, Zulip's Slack-compatible
/// interface).
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookSettings {
    /// The token the chat puts in every outgoing webhook.
    pub token: String,
    /// The incoming-webhook URL the bridge posts to.
    pub reply_url: String,
}

impl fmt::Debug for WebhookSettings {
    // The token, and the URL (incoming-webhook URLs carry their secret in the path), never.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookSettings").finish_non_exhaustive()
    }
}

/// A Matrix application service: the homeserver pushes room events to the bridge, which
/// sends as the service's user.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MatrixSettings {
    /// The homeserver's client-server API base URL.
    pub homeserver_url: String,
    /// The token the bridge sends with (`as_token` of the registration).
    pub as_token: String,
    /// The token the homeserver sends with (`hs_token` of the registration).
    pub hs_token: String,
    /// The local part of the service's user (`sender_localpart`): `@<it>:<server>` speaks.
    pub sender_localpart: String,
}

impl fmt::Debug for MatrixSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MatrixSettings")
            .field("homeserver_url", &self.homeserver_url)
            .field("sender_localpart", &self.sender_localpart)
            .finish_non_exhaustive()
    }
}

/// The registration file's fields the bridge needs (the homeserver reads the others).
#[derive(Deserialize)]
struct Registration {
    as_token: String,
    hs_token: String,
    sender_localpart: String,
}

/// The secret a Lambda function reads its channels from (JSON):
/// `{"webhook": {"token", "replyUrl"}, "matrix": {"homeserverUrl", "asToken", "hsToken",
/// "senderLocalpart"}}`, either part optional.
#[derive(Deserialize)]
struct Secret {
    #[serde(default)]
    webhook: Option<WebhookSettings>,
    #[serde(default)]
    matrix: Option<MatrixSettings>,
}

/// The chat channels of a deployment, and who they act as.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiteSettings {
    /// The webhook channel, if configured.
    pub webhook: Option<WebhookSettings>,
    /// The Matrix channel, if configured.
    pub matrix: Option<MatrixSettings>,
    /// The principal id the channels act as when auth is on.
    pub principal: Option<String>,
    /// `agent.id` on the A2A-Lite card.
    pub agent_id: Option<String>,
}

impl LiteSettings {
    /// Whether no channel is configured (then nothing is mounted).
    pub fn is_empty(&self) -> bool {
        self.webhook.is_none() && self.matrix.is_none()
    }

    /// Reads the settings through `lookup` (the environment, or `a2a-local`'s options);
    /// `read_file` reads the registration file. A half-configured channel is an error naming
    /// what is missing.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
        read_file: impl Fn(&str) -> Result<String, ConfigError>,
    ) -> Result<Self, ConfigError> {
        let get = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let webhook = match (get(ENV_WEBHOOK_TOKEN), get(ENV_WEBHOOK_REPLY_URL)) {
            (Some(token), Some(reply_url)) => Some(WebhookSettings { token, reply_url }),
            (None, None) => None,
            (Some(_), None) => {
                return Err(ConfigError::missing(
                    ENV_WEBHOOK_REPLY_URL,
                    format!("the webhook channel ({ENV_WEBHOOK_TOKEN} is set)"),
                ))
            }
            (None, Some(_)) => {
                return Err(ConfigError::missing(
                    ENV_WEBHOOK_TOKEN,
                    format!("the webhook channel ({ENV_WEBHOOK_REPLY_URL} is set)"),
                ))
            }
        };
        let matrix = match (get(ENV_MATRIX_HOMESERVER), get(ENV_MATRIX_REGISTRATION)) {
            (Some(homeserver_url), Some(path)) => {
                let text = read_file(&path)?;
                Some(matrix_from_registration(homeserver_url, &text)?)
            }
            (None, None) => None,
            _ => {
                return Err(ConfigError::missing(
                    format!("both {ENV_MATRIX_HOMESERVER} and {ENV_MATRIX_REGISTRATION}"),
                    "the Matrix channel",
                ))
            }
        };
        Ok(Self {
            webhook,
            matrix,
            principal: get(ENV_PRINCIPAL),
            agent_id: get(ENV_AGENT_ID),
        })
    }

    /// Adds the channels of a secret's JSON (what a Lambda function reads from Secrets
    /// Manager); a channel in the secret replaces one from the environment.
    pub fn with_secret(mut self, json: &str) -> Result<Self, ConfigError> {
        // Not serde's message: it can quote a value, and this one is a secret.
        let secret: Secret = serde_json::from_str(json).map_err(|e| {
            ConfigError::unreadable(
                "the A2A-Lite channel secret",
                format!(
                    "not of the form docs/a2a-lite.md gives (at line {}, column {})",
                    e.line(),
                    e.column()
                ),
            )
        })?;
        if secret.webhook.is_some() {
            self.webhook = secret.webhook;
        }
        if secret.matrix.is_some() {
            self.matrix = secret.matrix;
        }
        Ok(self)
    }
}

/// Reads the Matrix registration file at `path` (what [`LiteSettings::from_lookup`] is given
/// to read files with, outside tests).
pub fn read_registration(path: &str) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|e| {
        ConfigError::unreadable(format!("the Matrix registration {path}"), e.to_string())
    })
}

/// The Matrix settings of a registration file for the homeserver at `homeserver_url`.
pub fn matrix_from_registration(
    homeserver_url: String,
    registration_yaml: &str,
) -> Result<MatrixSettings, ConfigError> {
    let what = "the Matrix application service registration";
    let r: Registration = serde_norway::from_str(registration_yaml)
        .map_err(|e| ConfigError::unreadable(what, format!("not valid: {e}")))?;
    if r.as_token.is_empty() || r.hs_token.is_empty() || r.sender_localpart.is_empty() {
        return Err(ConfigError::unreadable(
            what,
            "needs as_token, hs_token and sender_localpart",
        ));
    }
    Ok(MatrixSettings {
        homeserver_url,
        as_token: r.as_token,
        hs_token: r.hs_token,
        sender_localpart: r.sender_localpart,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    const REGISTRATION: &str = "id: a2a\nurl: http://127.0.0.1:9000/a2a-lite/matrix\nas_token: AS\nhs_token: HS\nsender_localpart: a2a\nnamespaces:\n  users: []\n";

    #[test]
    fn channels_are_read_whole_or_refused() {
        let none = |_: &str| Err(ConfigError::unreadable("the file", "not there"));
        assert!(LiteSettings::from_lookup(env(&[]), none)
            .unwrap()
            .is_empty());
        let s = LiteSettings::from_lookup(
            env(&[
                (ENV_WEBHOOK_TOKEN, "tok"),
                (ENV_WEBHOOK_REPLY_URL, "https://hooks.example/x"),
                (ENV_PRINCIPAL, "key:bot"),
            ]),
            none,
        )
        .unwrap();
        assert_eq!(s.webhook.as_ref().unwrap().token, "tok");
        assert_eq!(s.principal.as_deref(), Some("key:bot"));
        let err = LiteSettings::from_lookup(env(&[(ENV_WEBHOOK_TOKEN, "tok")]), none).unwrap_err();
        assert!(
            matches!(&err, ConfigError::Missing { setting, .. } if setting == ENV_WEBHOOK_REPLY_URL),
            "{err}"
        );
        let err = LiteSettings::from_lookup(env(&[(ENV_MATRIX_HOMESERVER, "http://hs")]), none)
            .unwrap_err();
        assert!(
            matches!(&err, ConfigError::Missing { setting, .. } if setting.contains(ENV_MATRIX_REGISTRATION)),
            "{err}"
        );
        let s = LiteSettings::from_lookup(
            env(&[
                (ENV_MATRIX_HOMESERVER, "http://hs"),
                (ENV_MATRIX_REGISTRATION, "reg.yaml"),
            ]),
            |path| {
                assert_eq!(path, "reg.yaml");
                Ok(REGISTRATION.to_owned())
            },
        )
        .unwrap();
        let m = s.matrix.unwrap();
        assert_eq!((m.as_token.as_str(), m.hs_token.as_str()), ("AS", "HS"));
        assert_eq!(m.sender_localpart, "a2a");
        assert!(matrix_from_registration("h".into(), "as_token: x\n").is_err());
    }

    #[test]
    fn a_secret_adds_channels_and_debug_shows_no_token() {
        let s = LiteSettings::default()
            .with_secret(
                r#"{"webhook": {"token": "sekret-1", "replyUrl": "https://hooks.example/T/sekret-2"},
                    "matrix": {"homeserverUrl": "https://hs.example", "asToken": "sekret-3",
                               "hsToken": "sekret-4", "senderLocalpart": "a2a"}}"#,
            )
            .unwrap();
        assert_eq!(s.webhook.as_ref().unwrap().token, "sekret-1");
        assert_eq!(s.matrix.as_ref().unwrap().hs_token, "sekret-4");
        let printed = format!("{s:?}");
        assert!(!printed.contains("sekret"), "{printed}");
        assert!(LiteSettings::default().with_secret("{").is_err());
        let err = LiteSettings::default()
            .with_secret(r#"{"webhook": {"token": 12345678, "replyUrl": "x"}}"#)
            .unwrap_err();
        assert!(!err.to_string().contains("12345678"), "{err}");
        assert!(LiteSettings::default()
            .with_secret("{}")
            .unwrap()
            .is_empty());
    }
}
