//! Calls to other agents from a function (`Emitter::call_agent`, the reference agent's
//! `delegate`): the allow-list, the poll interval and the credentials, read from the
//! environment, and the network adapter built from them.

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{ConfigError, PushPolicy, RelayLimits, RemoteAgents};
use a2a_net::{AgentCredentials, CredentialSource, RemoteAgentSettings, RemoteAgentsClient};

use crate::channel::{LiteSource, RoomsAndAgents};
use crate::secret::read_secret;

/// Agent hosts exempt from the public-address rule (comma-separated; local runs only).
pub(crate) const ENV_AGENT_ALLOW_HOSTS: &str = "A2A_AGENT_ALLOW_HOSTS";
/// `true` allows calling agents over `http` (local runs only; the cloud requires `https`).
pub(crate) const ENV_AGENT_ALLOW_HTTP: &str = "A2A_AGENT_ALLOW_HTTP";
/// ARN of the Secrets Manager secret holding the credentials for other agents, by agent URL
/// prefix (the document [`AgentCredentials::from_json`] reads).
pub(crate) const ENV_AGENT_CREDENTIALS_SECRET_ARN: &str = "A2A_AGENT_CREDENTIALS_SECRET_ARN";
/// Seconds between two polls of a remote task waited for when its pushes do not come.
pub(crate) const ENV_REMOTE_POLL_SECS: &str = "A2A_REMOTE_POLL_SECS";
/// The largest one artifact a remote agent's answer may make in our task, in bytes.
pub(crate) const ENV_MAX_RELAYED_ARTIFACT_BYTES: &str = "A2A_MAX_RELAYED_ARTIFACT_BYTES";
/// The largest a remote agent's answer may make our task's artifacts together, in bytes.
pub(crate) const ENV_MAX_RELAYED_TASK_BYTES: &str = "A2A_MAX_RELAYED_TASK_BYTES";

/// What a function reads about calling other agents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSettings {
    /// Agent hosts exempt from the public-address rule.
    pub allow_hosts: Vec<String>,
    /// Allow `http` agent URLs.
    pub allow_http: bool,
    /// The secret of the credentials for other agents, if any.
    pub credentials_secret_arn: Option<String>,
    /// How often a remote task that does not push is polled.
    pub poll: Duration,
    /// How large a remote's answer may make our task.
    pub relay_limits: RelayLimits,
}

impl RemoteSettings {
    /// Reads the settings through `get` (trimmed, empty as unset).
    pub(crate) fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, a2a_core::ConfigError> {
        let poll = a2a_core::seconds_setting(
            ENV_REMOTE_POLL_SECS,
            get(ENV_REMOTE_POLL_SECS).as_deref(),
            Duration::from_secs(30),
        )?;
        Ok(Self {
            allow_hosts: get(ENV_AGENT_ALLOW_HOSTS)
                .map(|v| {
                    v.split(',')
                        .map(|h| h.trim().to_owned())
                        .filter(|h| !h.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            allow_http: get(ENV_AGENT_ALLOW_HTTP).is_some_and(|v| v == "true" || v == "1"),
            credentials_secret_arn: get(ENV_AGENT_CREDENTIALS_SECRET_ARN),
            poll: poll.max(Duration::from_secs(1)),
            relay_limits: RelayLimits {
                max_artifact_bytes: bytes_setting(
                    ENV_MAX_RELAYED_ARTIFACT_BYTES,
                    get(ENV_MAX_RELAYED_ARTIFACT_BYTES).as_deref(),
                    RelayLimits::DEFAULT.max_artifact_bytes,
                )?,
                max_task_bytes: bytes_setting(
                    ENV_MAX_RELAYED_TASK_BYTES,
                    get(ENV_MAX_RELAYED_TASK_BYTES).as_deref(),
                    RelayLimits::DEFAULT.max_task_bytes,
                )?,
            },
        })
    }

    /// The network adapter: the cloud's rules (`https`, public addresses) unless the local env
    /// file relaxes them, with the credentials of `credentials` (the secret
    /// [`Self::credentials_secret_arn`] names: read at the first call to another agent and
    /// again every `api_key_refresh`, so a rotation needs no redeploy; a document that does
    /// not read fails those calls, saying why, never the function).
    /// Rooms (`lite:<channel>:<room>`) are called through the channels of `lite` as they are
    /// at each call (posting through `room_policy`, the push policy: the chat's URLs are
    /// checked as webhooks are); without channels a call to a room is refused, saying so.
    pub(crate) fn client(
        &self,
        credentials: Arc<dyn CredentialSource>,
        lite: Arc<LiteSource>,
        room_policy: &PushPolicy,
    ) -> Arc<dyn RemoteAgents> {
        let client = RemoteAgentsClient::new(RemoteAgentSettings {
            policy: PushPolicy {
                allowed_hosts: self.allow_hosts.clone(),
                require_https: !self.allow_http,
            },
            credentials,
            ..RemoteAgentSettings::cloud()
        });
        Arc::new(RoomsAndAgents::new(
            lite,
            room_policy.clone(),
            Arc::new(client),
        ))
    }
}

/// The credentials for other agents in a Secrets Manager secret, read again every `refresh`.
#[derive(Debug)]
pub(crate) struct SecretAgentCredentials {
    pub(crate) client: aws_sdk_secretsmanager::Client,
    pub(crate) arn: String,
    pub(crate) refresh: Duration,
}

#[async_trait::async_trait]
impl CredentialSource for SecretAgentCredentials {
    async fn load(&self) -> Result<AgentCredentials, String> {
        let read = async {
            let text = read_secret(&self.client, &self.arn, "agent credentials")
                .await
                .map_err(|e| e.to_string())?;
            AgentCredentials::from_json(&text)
                .map_err(|e| format!("the agent credentials secret does not read: {e}"))
        };
        let credentials = read.await.inspect_err(|err| {
            tracing::error!(%err, "cannot read the credentials for other agents; calls to other agents use those read before, if any, or fail until it reads");
        })?;
        Ok(credentials)
    }

    fn refresh(&self) -> Duration {
        self.refresh
    }
}

/// The number of bytes `setting` holds (`value`, as read), or `default` when it is not set.
fn bytes_setting(setting: &str, value: Option<&str>, default: usize) -> Result<usize, ConfigError> {
    match value {
        None => Ok(default),
        Some(v) => v.parse::<usize>().map_err(|_| {
            ConfigError::invalid(
                setting,
                format!("must be a whole number of bytes, not {v:?}"),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cloud_calls_public_https_agents_and_polls_every_30_s_by_default() {
        let settings = RemoteSettings::from_lookup(|_| None).expect("defaults");
        assert!(settings.allow_hosts.is_empty());
        assert!(!settings.allow_http);
        assert_eq!(settings.credentials_secret_arn, None);
        assert_eq!(settings.poll, Duration::from_secs(30));
    }

    #[test]
    fn the_local_env_file_relaxes_the_rules_and_a_bad_poll_is_named() {
        let env = |name: &str| match name {
            ENV_AGENT_ALLOW_HOSTS => Some("127.0.0.1, localhost".to_owned()),
            ENV_AGENT_ALLOW_HTTP => Some("true".to_owned()),
            ENV_REMOTE_POLL_SECS => Some("2".to_owned()),
            _ => None,
        };
        let settings = RemoteSettings::from_lookup(env).expect("settings");
        assert_eq!(settings.allow_hosts, ["127.0.0.1", "localhost"]);
        assert!(settings.allow_http);
        assert_eq!(settings.poll, Duration::from_secs(2));
        let err = RemoteSettings::from_lookup(|name| {
            (name == ENV_REMOTE_POLL_SECS).then(|| "soon".to_owned())
        })
        .expect_err("a poll that is no number");
        assert!(
            matches!(&err, a2a_core::ConfigError::Invalid { setting, .. } if setting == ENV_REMOTE_POLL_SECS),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_room_of_no_channel_is_refused_clearly() {
        let settings = RemoteSettings::from_lookup(|_| None).expect("defaults");
        let lite = LiteSource::new(|_| None, None, Duration::MAX).expect("no channels");
        let agents = settings.client(
            Arc::new(AgentCredentials::none()),
            Arc::new(lite),
            &PushPolicy::default(),
        );
        let message = a2a_protocol::Message::user_text("m1", "hello");
        let key = a2a_core::CallKey {
            task_id: "t1".into(),
            call: "1-0".into(),
        };
        let err = agents
            .send("lite:webhook:general", &key, message, None, None)
            .await
            .expect_err("no channel, no room");
        assert!(
            matches!(&err, a2a_core::RemoteError::Refused(why)
                if why.contains("rooms are not reachable from this deployment")),
            "{err}"
        );
    }
}
