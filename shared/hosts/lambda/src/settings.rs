//! The environment of a function, and what it builds from it once per instance.

use std::sync::Arc;
use std::time::Duration;

use a2a_aws::{AwsAdapters, AwsClients, AwsConfig};
use a2a_core::{
    A2aService, Agent, AgentDescription, AgentError, AgentRequest, Auth, AuthMode, AuthSettings,
    Emitter, KeySet, MessageIdReuse, OlderVersions, Placement, PushPolicy, PushSigner,
    RemoteAgents, ServiceConfig, SigningAlgorithm, SigningKeySource, SigningKeys,
};
use a2a_core::{ApiKeyDocument, ApiKeySource};
use a2a_core::{ConfigError, KeyError};
use a2a_files::{ApiKeyFile, KeyFile};
use a2a_http::CorsOrigins;
use a2a_net::{OpenIdJwks, WebhookClient};
use a2a_protocol::{AgentInterface, BINDING_HTTP_JSON, BINDING_JSONRPC, PROTOCOL_VERSION};

use crate::remote::RemoteSettings;
use crate::role::KeyUse;
use crate::secret::read_secret;
use crate::Error;

/// Turn A2A 0.3 (`on`/`off`) and the early protocol on or off; both on by default. The same
/// variables as `a2a-local` reads.
pub(crate) use a2a_core::{ENV_PROTOCOL_0_3, ENV_PROTOCOL_EARLY};

/// Overrides the agent's name on the card (template parameter `AgentName`).
pub(crate) const ENV_AGENT_NAME: &str = "A2A_AGENT_NAME";
/// Overrides the agent's description on the card (template parameter `AgentDescription`).
pub(crate) const ENV_AGENT_DESCRIPTION: &str = "A2A_AGENT_DESCRIPTION";
/// Days tasks are kept (template parameter `RetentionDays`).
pub(crate) const ENV_RETENTION_DAYS: &str = "A2A_RETENTION_DAYS";
/// `reject` (default) or `new-message`: see [`a2a_core::MessageIdReuse`].
pub(crate) const ENV_MESSAGE_ID_REUSE: &str = "A2A_MESSAGE_ID_REUSE";
/// Seconds an SSE stream may last before it ends gracefully (`MaxStreamSeconds`).
pub(crate) const ENV_MAX_STREAM_SECS: &str = "A2A_MAX_STREAM_SECS";
/// The public base URL of the REST binding (the JSON-RPC URL is this plus the JSON-RPC path).
/// When unset, an HTTP function derives it from its first request (API Gateway's domain and
/// stage), which is how the card lists the deployment's real URLs without a template cycle.
pub(crate) const ENV_PUBLIC_BASE_URL: &str = "A2A_PUBLIC_BASE_URL";
/// Where the relay URLs a function hands out point, when not at the public base URL: the
/// relay function's Function URL (template: behind the front door `FunctionUrl`), whose
/// reserved concurrency streams and long polls cannot take (docs/lambda.md, "Concurrency").
pub(crate) const ENV_RELAY_BASE_URL: &str = "A2A_RELAY_BASE_URL";
/// The JSON-RPC path under the base URL (default `/jsonrpc`).
pub(crate) const ENV_JSONRPC_PATH: &str = "A2A_JSONRPC_PATH";
/// The path prefix every request carries and every URL of the card includes (`/a2a`): the
/// router serves the whole surface under it. Behind a Function URL only; behind API Gateway
/// the stage is the base path, and API Gateway takes it off before the function sees a path.
pub(crate) const ENV_BASE_PATH: &str = "A2A_BASE_PATH";
/// Seconds a long-polling GetTask (A2A 1.1) is held at most: under API Gateway's 29 s.
pub(crate) const ENV_LONG_POLL_SECS: &str = "A2A_LONG_POLL_SECS";
/// How many long polls the deployment holds at once, across its instances (0: none held).
pub(crate) const ENV_LONG_POLL_MAX_HELD: &str = "A2A_LONG_POLL_MAX_HELD";
/// The bound on held long polls when [`ENV_LONG_POLL_MAX_HELD`] does not say: each is an
/// instance billed for its hold, so a Lambda deployment always has one.
const DEFAULT_LONG_POLL_MAX_HELD: u32 = 100;
/// ARN of the Secrets Manager secret holding the push signing keys (`KeySet::from_json`).
pub(crate) const ENV_PUSH_SIGNING_SECRET_ARN: &str = "A2A_PUSH_SIGNING_SECRET_ARN";
/// A local key file instead of the secret (created on first use; local runs only).
pub(crate) const ENV_PUSH_SIGNING_KEYS_FILE: &str = "A2A_PUSH_SIGNING_KEYS_FILE";
/// Seconds loaded push signing keys are used before they are read again (default 300): a
/// rotated key set reaches running instances within this time, with no redeploy.
pub(crate) const ENV_PUSH_KEYS_REFRESH_SECS: &str = "A2A_PUSH_KEYS_REFRESH_SECS";
/// The CloudWatch namespace of the EMF metrics (default `a2a-lambda`).
pub(crate) use crate::metrics::ENV_METRICS_NAMESPACE;
/// Webhook hosts exempt from the public-address rule (comma-separated; local runs only).
pub(crate) const ENV_PUSH_ALLOW_HOSTS: &str = "A2A_PUSH_ALLOW_HOSTS";
/// `true` allows `http` webhooks (local runs only; the cloud requires `https`).
pub(crate) const ENV_PUSH_ALLOW_HTTP: &str = "A2A_PUSH_ALLOW_HTTP";
/// Seconds a blocking SendMessage waits before it returns the task as it stands (default:
/// what the function's front door allows, [`crate::role::HttpFunction::default_blocking_timeout`]).
pub(crate) const ENV_BLOCKING_TIMEOUT_SECS: &str = "A2A_BLOCKING_TIMEOUT_SECS";
/// Seconds a running work job stays invisible between heartbeats; the task lease never
/// outlasts it.
pub(crate) const ENV_WORK_VISIBILITY_SECS: &str = "A2A_WORK_VISIBILITY_SECS";
/// Seconds an execution lease lasts between renewals: a task whose inline execution was lost
/// with its instance is ended by the worker's scheduled sweep within this plus the schedule.
pub(crate) const ENV_EXECUTION_LEASE_SECS: &str = "A2A_EXECUTION_LEASE_SECS";
/// ARN of the Secrets Manager secret holding the API key document (auth mode `api-key`).
pub(crate) const ENV_API_KEY_SECRET_ARN: &str = "A2A_API_KEY_SECRET_ARN";
/// A local API key document instead of the secret (local runs only).
pub(crate) const ENV_API_KEY_FILE: &str = "A2A_API_KEY_FILE";
/// Seconds a fetched API key document is used before it is fetched again (a revocation takes
/// effect within this time).
pub(crate) const ENV_API_KEY_REFRESH_SECS: &str = "A2A_API_KEY_REFRESH_SECS";
/// Browser origins allowed to call (CORS): comma-separated, or `*`; empty or unset is off.
pub(crate) const ENV_CORS_ORIGINS: &str = "A2A_CORS_ORIGINS";

/// What a function reads from its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The table and queues.
    pub aws: AwsConfig,
    /// The work queue's dead-letter queue (`A2A_WORK_DLQ_URL`; the worker function needs it).
    pub work_dead_letter_queue_url: Option<String>,
    /// The push queue's dead-letter queue (`A2A_PUSH_DLQ_URL`; the push function needs it).
    pub push_dead_letter_queue_url: Option<String>,
    /// Card name override.
    pub agent_name: Option<String>,
    /// Card description override.
    pub agent_description: Option<String>,
    /// How long tasks are kept.
    pub retention: Duration,
    /// What a messageId sent again with a different body means.
    pub message_id_reuse: MessageIdReuse,
    /// Longest SSE stream.
    pub max_stream_duration: Duration,
    /// Public base URL, if configured.
    pub public_base_url: Option<String>,
    /// Base URL of the relay URLs handed out (`A2A_RELAY_BASE_URL`), if configured.
    pub relay_base_url: Option<String>,
    /// JSON-RPC path.
    pub jsonrpc_path: String,
    /// The base path (`A2A_BASE_PATH`, normalised: `/a2a`, or empty).
    pub base_path: String,
    /// How long a long-polling GetTask is held at most (`A2A_LONG_POLL_SECS`, default 25).
    pub long_poll_max_wait: Duration,
    /// How many long polls are held at once at most (`A2A_LONG_POLL_MAX_HELD`, default 100).
    pub long_poll_max_held: u32,
    /// Secrets Manager secret of the push signing keys.
    pub push_signing_secret_arn: Option<String>,
    /// Local key file of the push signing keys.
    pub push_signing_keys_file: Option<String>,
    /// How long loaded push signing keys are used before they are read again.
    pub push_keys_refresh: Duration,
    /// The CloudWatch namespace of the metrics.
    pub metrics_namespace: String,
    /// What the metrics are broken down by (`A2A_METRICS_DETAIL`).
    pub metrics_detail: crate::metrics::MetricsDetail,
    /// The function's name, the `FunctionName` of its metrics (`AWS_LAMBDA_FUNCTION_NAME`).
    pub function_name: String,
    /// Lambda's filter of the function's log lines (`AWS_LAMBDA_LOG_LEVEL`, set from the
    /// template's `LogLevel`), which the metric lines must pass.
    pub log_level: Option<String>,
    /// Webhook allow-list (local runs).
    pub push_allow_hosts: Vec<String>,
    /// Allow `http` webhooks (local runs).
    pub push_allow_http: bool,
    /// Work job visibility (and the longest lease).
    pub work_visibility: Duration,
    /// Execution lease (see `ENV_EXECUTION_LEASE_SECS`).
    pub execution_lease: Duration,
    /// How long a blocking SendMessage waits: by default what the function's front door allows
    /// (API Gateway ends buffered responses at 29 s; streaming routes and the Function URL
    /// allow minutes), the function being the one `A2A_FUNCTION` (or
    /// `AWS_LAMBDA_FUNCTION_NAME`) names.
    pub blocking_timeout: Duration,
    /// Who may call (`A2A_AUTH`, `A2A_JWT_*`, `A2A_API_KEY_*`, as `a2a-local` reads them).
    pub auth: AuthSettings,
    /// Secrets Manager secret of the API key document.
    pub api_key_secret_arn: Option<String>,
    /// Local API key document.
    pub api_key_file: Option<String>,
    /// How long a fetched API key document is used.
    pub api_key_refresh: Duration,
    /// Browser origins allowed to call the HTTP functions (CORS); off by default.
    pub cors_origins: CorsOrigins,
    /// Which older protocol versions are served (`A2A_PROTOCOL_0_3`, `A2A_PROTOCOL_EARLY`:
    /// `on` or `off`, both on by default).
    pub older_versions: OlderVersions,
    /// Calls to other agents (`A2A_AGENT_*`, `A2A_REMOTE_POLL_SECS`).
    pub remote: RemoteSettings,
}

impl Settings {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the settings through `lookup` (tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let secs = |name: &str, default: u64| {
            a2a_core::seconds_setting(name, get(name).as_deref(), Duration::from_secs(default))
                .map(|d| d.max(Duration::from_secs(1)))
        };
        let switch = |name: &str| -> Result<bool, ConfigError> {
            get(name).map_or(Ok(true), |v| {
                a2a_core::parse_switch(&v).map_err(|e| ConfigError::invalid(name, e))
            })
        };
        // A value parsed by its own type, whose error is the reason.
        fn parsed<T: std::str::FromStr<Err = String> + Default>(
            name: &str,
            value: Option<String>,
        ) -> Result<T, ConfigError> {
            value
                .map(|v| v.parse().map_err(|e| ConfigError::invalid(name, e)))
                .transpose()
                .map(Option::unwrap_or_default)
        }
        let days = match get(ENV_RETENTION_DAYS) {
            None => 30,
            Some(v) => v
                .parse::<u64>()
                .map_err(|_| {
                    ConfigError::invalid(
                        ENV_RETENTION_DAYS,
                        format!("must be a whole number of days, not {v:?}"),
                    )
                })?
                .max(1),
        };
        let aws = AwsConfig::from_lookup(&lookup)?;
        Ok(Self {
            aws,
            work_dead_letter_queue_url: get(a2a_aws::ENV_WORK_DLQ_URL),
            push_dead_letter_queue_url: get(a2a_aws::ENV_PUSH_DLQ_URL),
            agent_name: get(ENV_AGENT_NAME),
            agent_description: get(ENV_AGENT_DESCRIPTION),
            retention: Duration::from_secs(days * 24 * 3600),
            message_id_reuse: parsed(ENV_MESSAGE_ID_REUSE, get(ENV_MESSAGE_ID_REUSE))?,
            max_stream_duration: secs(ENV_MAX_STREAM_SECS, 840)?,
            public_base_url: get(ENV_PUBLIC_BASE_URL).map(|u| u.trim_end_matches('/').to_owned()),
            relay_base_url: get(ENV_RELAY_BASE_URL).map(|u| u.trim_end_matches('/').to_owned()),
            jsonrpc_path: get(ENV_JSONRPC_PATH).unwrap_or_else(|| "/jsonrpc".into()),
            base_path: a2a_http::base_path(&get(ENV_BASE_PATH).unwrap_or_default())
                .map_err(|e| ConfigError::invalid(ENV_BASE_PATH, e))?,
            long_poll_max_wait: secs(ENV_LONG_POLL_SECS, 25)?,
            long_poll_max_held: match get(ENV_LONG_POLL_MAX_HELD) {
                None => DEFAULT_LONG_POLL_MAX_HELD,
                Some(v) => v.parse().map_err(|_| {
                    ConfigError::invalid(
                        ENV_LONG_POLL_MAX_HELD,
                        format!("must be a whole number of polls, not {v:?}"),
                    )
                })?,
            },
            push_signing_secret_arn: get(ENV_PUSH_SIGNING_SECRET_ARN),
            push_signing_keys_file: get(ENV_PUSH_SIGNING_KEYS_FILE),
            push_keys_refresh: secs(ENV_PUSH_KEYS_REFRESH_SECS, 300)?,
            metrics_namespace: get(ENV_METRICS_NAMESPACE)
                .unwrap_or_else(|| crate::metrics::DEFAULT_NAMESPACE.into()),
            metrics_detail: parsed(
                crate::metrics::ENV_METRICS_DETAIL,
                get(crate::metrics::ENV_METRICS_DETAIL),
            )?,
            function_name: get("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|| "local".into()),
            log_level: get("AWS_LAMBDA_LOG_LEVEL"),
            push_allow_hosts: get(ENV_PUSH_ALLOW_HOSTS)
                .map(|v| {
                    v.split(',')
                        .map(|h| h.trim().to_owned())
                        .filter(|h| !h.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            push_allow_http: get(ENV_PUSH_ALLOW_HTTP).is_some_and(|v| v == "true" || v == "1"),
            work_visibility: secs(ENV_WORK_VISIBILITY_SECS, 900)?,
            execution_lease: secs(ENV_EXECUTION_LEASE_SECS, 60)?,
            blocking_timeout: secs(
                ENV_BLOCKING_TIMEOUT_SECS,
                default_blocking_timeout(&lookup).as_secs(),
            )?,
            auth: AuthSettings::from_lookup(&lookup)?,
            api_key_secret_arn: get(ENV_API_KEY_SECRET_ARN),
            api_key_file: get(ENV_API_KEY_FILE),
            api_key_refresh: secs(ENV_API_KEY_REFRESH_SECS, 60)?,
            cors_origins: parsed::<CorsOrigins>(ENV_CORS_ORIGINS, get(ENV_CORS_ORIGINS))?,
            older_versions: OlderVersions {
                v0_3: switch(ENV_PROTOCOL_0_3)?,
                early: switch(ENV_PROTOCOL_EARLY)?,
            },
            remote: RemoteSettings::from_lookup(get)?,
        })
    }

    /// The consumer side of a queue function's queue at `url`, dead-lettering into the queue
    /// whose URL `dead_letter_env` holds (`dead_letter`). The URL is passed in rather than
    /// looked up, so the function's role needs no `GetQueueUrl`; a missing one stops the
    /// function at init, naming the variable.
    pub fn consumer_queue(
        &self,
        clients: &AwsClients,
        url: &str,
        dead_letter: Option<&str>,
        dead_letter_env: &str,
    ) -> Result<a2a_aws::SqsQueue, ConfigError> {
        let dlq = dead_letter.ok_or_else(|| {
            ConfigError::missing(
                format!("{dead_letter_env} (the dead-letter queue's URL)"),
                "a queue function",
            )
        })?;
        Ok(a2a_aws::SqsQueue::new(clients.sqs.clone(), url).with_dead_letter_url(dlq))
    }

    /// Where the relay URLs `function` hands out (and the A2A-Lite bridge's events URL) point,
    /// before the base path: `A2A_RELAY_BASE_URL` when set; else, for the relay function, the
    /// URL it was `reached_at` (its own Function URL, which the template cannot put in the
    /// function's own environment: a cycle); else `None`, the public base URL. A relay URL
    /// under the public base URL, handed out before, is still taken (by the front function).
    pub fn relay_base<'a>(
        &'a self,
        function: crate::role::HttpFunction,
        reached_at: Option<&'a str>,
    ) -> Option<&'a str> {
        self.relay_base_url.as_deref().or(match function {
            crate::role::HttpFunction::Relay => reached_at,
            _ => None,
        })
    }

    /// The interfaces served under `base` (the REST base URL): JSON-RPC and HTTP+JSON.
    pub fn interfaces(&self, base: &str) -> Vec<AgentInterface> {
        let base = base.trim_end_matches('/');
        vec![
            AgentInterface {
                url: format!("{base}{}", self.jsonrpc_path),
                protocol_binding: BINDING_JSONRPC.into(),
                protocol_version: PROTOCOL_VERSION.into(),
                tenant: String::new(),
            },
            AgentInterface {
                url: base.to_owned(),
                protocol_binding: BINDING_HTTP_JSON.into(),
                protocol_version: PROTOCOL_VERSION.into(),
                tenant: String::new(),
            },
        ]
    }

    /// The function's metrics: EMF lines on stdout, in the configured namespace, at a level
    /// Lambda's log filter keeps.
    pub fn metrics(&self) -> crate::EmfObserver {
        self.metrics_to(crate::metrics::stdout_sink())
    }

    /// The function's metrics, written to `sink` (tests).
    pub fn metrics_to(&self, sink: crate::metrics::Sink) -> crate::EmfObserver {
        crate::EmfObserver::with_sink(&self.metrics_namespace, &self.function_name, sink)
            .for_log_level(self.log_level.as_deref())
            .with_detail(self.metrics_detail)
            .with_trace(crate::metrics::invocation_trace())
    }

    /// The service configuration of a Lambda function: no background work after a response
    /// (a frozen instance would stall it), the cloud's strict push policy unless the local env
    /// file relaxes it, and a lease that never outlasts the work job's visibility.
    pub fn service_config(
        &self,
        base: Option<&str>,
        signer: Option<PushSigner>,
        auth: Auth,
    ) -> ServiceConfig {
        ServiceConfig {
            auth,
            interfaces: base.map(|b| self.interfaces(b)).unwrap_or_default(),
            retention: self.retention,
            message_id_reuse: self.message_id_reuse,
            max_stream_duration: self.max_stream_duration,
            background_inline: false,
            push_policy: PushPolicy {
                allowed_hosts: self.push_allow_hosts.clone(),
                require_https: !self.push_allow_http,
            },
            push_sender: Arc::new(WebhookClient::new()),
            push_signer: signer,
            lease_duration: self.execution_lease.min(self.work_visibility),
            blocking_timeout: self.blocking_timeout,
            long_poll_max_wait: self.long_poll_max_wait,
            long_poll_max_held: Some(self.long_poll_max_held),
            older_versions: self.older_versions,
            observer: Arc::new(self.metrics()),
            remote_poll: self.remote.poll,
            relay_limits: self.remote.relay_limits,
            ..ServiceConfig::default()
        }
    }
}

/// The blocking wait of the function `lookup` names ([`crate::role::Function::choose`]): its front
/// door's ([`crate::role::HttpFunction::default_blocking_timeout`]); a function that serves no
/// blocking send, or none named, gets the buffered route's.
fn default_blocking_timeout(lookup: &impl Fn(&str) -> Option<String>) -> Duration {
    let function = crate::role::Function::choose(
        lookup(crate::role::ENV_FUNCTION).as_deref(),
        lookup(crate::role::ENV_LAMBDA_FUNCTION_NAME).as_deref(),
    );
    match function {
        Ok(crate::role::Function::Http(http)) => http.default_blocking_timeout(),
        _ => crate::role::HttpFunction::Send.default_blocking_timeout(),
    }
}

/// What a function builds once per instance, in the init phase.
pub struct Init {
    /// The settings read.
    pub settings: Settings,
    /// The SDK configuration every client of the instance is built from.
    pub sdk: aws_config::SdkConfig,
    /// The SDK clients (pooled connections, cached credentials).
    pub clients: AwsClients,
    /// The adapters on those clients.
    pub adapters: AwsAdapters,
    /// The push signing keys, when the function needs them: read on first use and refreshed,
    /// never during init.
    pub keys: Option<Arc<SigningKeys>>,
    /// The auth layer (one JWKS or API key cache per instance).
    pub auth: Auth,
    /// The agent (with the card overrides applied).
    pub agent: Arc<dyn Agent>,
    /// The network adapter of the agent's calls to other agents (and rooms).
    pub remote_agents: Arc<dyn RemoteAgents>,
    /// The A2A-Lite channels of the deployment (none without `A2A_LITE_SECRET_ARN` or the
    /// local `A2A_LITE_*` variables), read when first needed: the rooms the agent calls, and
    /// the channel routes of the functions that serve them.
    pub lite: Arc<crate::channel::LiteSource>,
}

impl Init {
    /// Reads the environment and builds the clients and adapters, and the signing keys' cache
    /// for `keys` (read on first use, not here). Callers are not authenticated here (the queue
    /// functions): the auth layer is `none`.
    pub async fn from_env(agent: Arc<dyn Agent>, keys: KeyUse) -> Result<Self, Error> {
        Self::load(agent, keys, false).await
    }

    /// As [`Self::from_env`], for a function behind the front door: also builds the auth layer
    /// the settings describe.
    pub async fn for_callers(agent: Arc<dyn Agent>, keys: KeyUse) -> Result<Self, Error> {
        Self::load(agent, keys, true).await
    }

    async fn load(agent: Arc<dyn Agent>, key_use: KeyUse, with_auth: bool) -> Result<Self, Error> {
        crate::init_logging();
        crate::warm_up();
        let settings = Settings::from_env()?;
        // One SDK configuration (credentials, region, endpoint, and the bounds of every call:
        // a connection gone stale while the instance was frozen costs one attempt, not the
        // function's timeout) for every client of the instance.
        let sdk = a2a_aws::with_call_limits(
            &aws_config::defaults(aws_config::BehaviorVersion::latest())
                .load()
                .await,
        );
        let clients = AwsClients::from_sdk_config(&sdk);
        let adapters = AwsAdapters::new(&clients, &settings.aws);
        let keys = key_source(&settings, &sdk, key_use)
            .map(|source| Arc::new(SigningKeys::from_source(source)));
        let auth = if with_auth {
            build_auth(&settings, &sdk)?
        } else {
            Auth::none()
        };
        let agent = match (&settings.agent_name, &settings.agent_description) {
            (None, None) => agent,
            (name, description) => Arc::new(Described {
                inner: agent,
                name: name.clone(),
                description: description.clone(),
            }),
        };
        let agent_credentials = agent_credentials_source(&settings, &sdk);
        // The rooms the agent may call (`lite:<channel>:<room>`): the A2A-Lite channels of the
        // deployment, when it has them (the secret `A2A_LITE_SECRET_ARN` names, read at the
        // first call or channel request and again every `api_key_refresh`; locally the
        // `A2A_LITE_*` variables).
        let lite = Arc::new(crate::channel::LiteSource::new(
            |name| std::env::var(name).ok(),
            Some(&sdk),
            settings.api_key_refresh,
        )?);
        let room_policy = PushPolicy {
            allowed_hosts: settings.push_allow_hosts.clone(),
            require_https: !settings.push_allow_http,
        };
        let remote_agents = settings
            .remote
            .client(agent_credentials, lite.clone(), &room_policy);
        Ok(Self {
            settings,
            sdk,
            clients,
            adapters,
            keys,
            auth,
            agent,
            remote_agents,
            lite,
        })
    }

    /// The service for this function, listing the interfaces under `base` (the front door's
    /// URL; the base path is added to it) on its card.
    pub fn service(&self, base: Option<&str>) -> A2aService {
        self.service_relayed_at(base, self.settings.relay_base_url.as_deref())
    }

    /// As [`Self::service`], handing out relay URLs under `relay_base` (the base path is added
    /// to it; `None`: under `base`).
    pub(crate) fn service_relayed_at(
        &self,
        base: Option<&str>,
        relay_base: Option<&str>,
    ) -> A2aService {
        let with_path = |b: &str| format!("{}{}", b.trim_end_matches('/'), self.settings.base_path);
        let base = base.map(with_path);
        let base = base.as_deref();
        let signer = self
            .keys
            .clone()
            .map(|keys| PushSigner::with_keys(keys, base.map(str::to_owned).unwrap_or_default()));
        let config = ServiceConfig {
            remote_agents: self.remote_agents.clone(),
            relay_base: relay_base.map(with_path),
            ..self
                .settings
                .service_config(base, signer, self.auth.clone())
        };
        A2aService::new(
            config,
            self.agent.clone(),
            Arc::new(self.adapters.store.clone()),
            Arc::new(self.adapters.work.clone()),
            Arc::new(self.adapters.push.clone()),
        )
    }
}

/// Where the credentials for other agents come from: the secret `settings` name
/// (`A2A_AGENT_CREDENTIALS_SECRET_ARN`), read at the first call to another agent and again
/// every `api_key_refresh`, or none. Nothing is read here: a secret that does not read fails
/// the calls to other agents, saying why, not the function's init.
pub fn agent_credentials_source(
    settings: &Settings,
    sdk: &aws_config::SdkConfig,
) -> Arc<dyn a2a_net::CredentialSource> {
    match &settings.remote.credentials_secret_arn {
        Some(arn) => Arc::new(crate::remote::SecretAgentCredentials {
            client: aws_sdk_secretsmanager::Client::new(sdk),
            arn: arn.clone(),
            refresh: settings.api_key_refresh,
        }),
        None => Arc::new(a2a_net::AgentCredentials::none()),
    }
}

/// The auth layer of `settings`. In mode `api-key`, the key document is the Secrets Manager
/// secret (fetched again every `api_key_refresh`, so a revocation needs no redeploy), or a local
/// file. A function that cannot authenticate anyone refuses to start, with the reason.
pub fn build_auth(settings: &Settings, sdk: &aws_config::SdkConfig) -> Result<Auth, ConfigError> {
    if settings.auth.mode == AuthMode::None {
        tracing::warn!(
            "auth mode none: anyone who can reach this function may call it, and every caller \
             shares one owner (AuthMode api-key or jwt for a public deployment)"
        );
    }
    settings.auth.build(
        || {
            if let Some(arn) = &settings.api_key_secret_arn {
                return Ok(Arc::new(SecretApiKeys {
                    client: aws_sdk_secretsmanager::Client::new(sdk),
                    arn: arn.clone(),
                    refresh: settings.api_key_refresh,
                }));
            }
            if let Some(path) = &settings.api_key_file {
                return Ok(Arc::new(ApiKeyFile::new(path)));
            }
            Err(ConfigError::missing(
                format!(
                    "{ENV_API_KEY_SECRET_ARN} (the template's ApiKeySecretArn) or \
                     {ENV_API_KEY_FILE}"
                ),
                format!("auth mode {}", AuthMode::ApiKey),
            ))
        },
        |jwt| Arc::new(OpenIdJwks::new(jwt)),
    )
}

/// The API key document in a Secrets Manager secret, fetched again every `refresh` (a
/// revocation takes effect within that time, with no redeploy).
#[derive(Debug)]
struct SecretApiKeys {
    client: aws_sdk_secretsmanager::Client,
    arn: String,
    refresh: Duration,
}

#[async_trait::async_trait]
impl ApiKeySource for SecretApiKeys {
    async fn load(&self) -> Result<Option<ApiKeyDocument>, String> {
        let text = read_secret(&self.client, &self.arn, "API key").await?;
        Ok(Some(ApiKeyDocument::from_json(&text)?))
    }

    fn refresh(&self) -> Duration {
        self.refresh
    }
}

/// Where a function's push signing keys come from, for `key_use`: the Secrets Manager secret
/// in the cloud, a key file locally, or nowhere (with a warning: pushes go out unsigned).
/// Nothing is read here; the keys are read on first use and every `push_keys_refresh`.
pub fn key_source(
    settings: &Settings,
    sdk: &aws_config::SdkConfig,
    key_use: KeyUse,
) -> Option<Arc<dyn SigningKeySource>> {
    if key_use == KeyUse::None {
        return None;
    }
    if let Some(arn) = &settings.push_signing_secret_arn {
        return Some(Arc::new(SecretKeys {
            client: aws_sdk_secretsmanager::Client::new(sdk),
            arn: arn.clone(),
            refresh: settings.push_keys_refresh,
        }));
    }
    if let Some(path) = &settings.push_signing_keys_file {
        return Some(Arc::new(FileKeys {
            path: path.clone(),
            refresh: settings.push_keys_refresh,
        }));
    }
    tracing::warn!(
        "neither {ENV_PUSH_SIGNING_SECRET_ARN} nor {ENV_PUSH_SIGNING_KEYS_FILE} is set: pushes \
         are not signed and no JWKS is served"
    );
    None
}

/// Loads the push signing keys once, as the push function does (generating the first key
/// when the secret holds the empty placeholder).
pub async fn load_keys(
    settings: &Settings,
    sdk: &aws_config::SdkConfig,
) -> Result<Option<KeySet>, String> {
    match key_source(settings, sdk, KeyUse::Sign) {
        Some(source) => source.load().await.map(Some).map_err(|e| e.to_string()),
        None => Ok(None),
    }
}

/// The push signing keys in a Secrets Manager secret; an empty placeholder is filled with a
/// generated key on first use.
#[derive(Debug)]
struct SecretKeys {
    client: aws_sdk_secretsmanager::Client,
    arn: String,
    refresh: Duration,
}

#[async_trait::async_trait]
impl SigningKeySource for SecretKeys {
    async fn load(&self) -> Result<KeySet, KeyError> {
        let read = || async {
            read_secret(&self.client, &self.arn, "push signing")
                .await
                .map_err(|e| KeyError::Io(e.to_string()))
        };
        let mut text = read().await?;
        // The placeholder: every function that needs a key may make the first (the template
        // grants the write on the stack's own secret only), so the card is signed from the
        // first request, not from the first push.
        if KeySet::is_empty_document(&text) {
            generate_first_key(&self.client, &self.arn)
                .await
                .map_err(KeyError::Io)?;
            text = read().await?;
        }
        KeySet::from_json(&text).map_err(|e| {
            KeyError::Invalid(format!("the push signing secret is not a key set: {e}"))
        })
    }

    fn refresh(&self) -> Duration {
        self.refresh
    }
}

/// The push signing keys in a local key file (created on first use; local runs only).
#[derive(Debug)]
struct FileKeys {
    path: String,
    refresh: Duration,
}

#[async_trait::async_trait]
impl SigningKeySource for FileKeys {
    async fn load(&self) -> Result<KeySet, KeyError> {
        KeyFile::new(&self.path, SigningAlgorithm::Es256)
            .load_or_create()
            .map_err(|e| {
                KeyError::Io(format!(
                    "cannot load the push signing keys from {}: {e}",
                    self.path
                ))
            })
    }

    fn refresh(&self) -> Duration {
        self.refresh
    }
}

/// The version token of the first key a deployment generates. Secrets Manager refuses a second
/// value under one token, so when several instances start at once and each generates a key,
/// exactly one key set is stored; the others read it back.
const FIRST_KEY_VERSION: &str = "a2a-push-signing-first-key-000000001";

/// Stores a newly generated key set in a secret that holds the empty placeholder (the
/// template creates it so; nobody has to make a key by hand for pushes to be signed).
async fn generate_first_key(
    client: &aws_sdk_secretsmanager::Client,
    arn: &str,
) -> Result<(), String> {
    let (keys, text) = KeySet::generate(SigningAlgorithm::Es256)
        .map_err(|e| format!("cannot generate a push signing key: {e}"))?;
    let put = client
        .put_secret_value()
        .secret_id(arn)
        .client_request_token(FIRST_KEY_VERSION)
        .secret_string(text.expose())
        .send()
        .await;
    match put {
        Ok(_) => {
            tracing::info!(kid = %keys.active().kid(), "generated the first push signing key");
            Ok(())
        }
        // Another instance stored its key first under the same token: use that one.
        Err(e)
            if e.as_service_error()
                .is_some_and(|e| e.is_resource_exists_exception()) =>
        {
            Ok(())
        }
        Err(e) => Err(format!(
            "cannot store the generated push signing key: {}",
            aws_sdk_secretsmanager::error::DisplayErrorContext(e)
        )),
    }
}

/// An agent whose card name and description come from the deployment's parameters.
struct Described {
    inner: Arc<dyn Agent>,
    name: Option<String>,
    description: Option<String>,
}

#[async_trait::async_trait]
impl Agent for Described {
    fn describe(&self) -> AgentDescription {
        let mut d = self.inner.describe();
        if let Some(name) = &self.name {
            d.name = name.clone();
        }
        if let Some(description) = &self.description {
            d.description = description.clone();
        }
        d
    }

    fn placement(&self, request: &AgentRequest) -> Placement {
        self.inner.placement(request)
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        self.inner.execute(request, emitter).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relay URLs point at `A2A_RELAY_BASE_URL` when it is set (the worker function
    /// behind the Function URL: the relay function's URL), at the URL the relay function was
    /// reached at when it is not (the template cannot name a function's own URL in its
    /// environment), and otherwise at the public base URL (`None`).
    #[test]
    fn relay_urls_point_at_the_relay_base_url_else_where_the_relay_function_is_reached() {
        use crate::role::HttpFunction::{Front, Relay, Send};
        let with = |relay: Option<&'static str>| {
            Settings::from_lookup(move |name| match name {
                "A2A_TABLE" => Some("t".into()),
                "A2A_WORK_QUEUE_URL" | "A2A_PUSH_QUEUE_URL" => Some("http://q".into()),
                "A2A_PUBLIC_BASE_URL" => Some("https://agent.example".into()),
                "A2A_RELAY_BASE_URL" => relay.map(str::to_owned),
                _ => None,
            })
            .unwrap()
        };
        let reached = Some("https://relay.lambda-url.example");
        let set = with(Some("https://relay.lambda-url.example/"));
        for function in [Front, Relay, Send] {
            assert_eq!(
                set.relay_base(function, None),
                Some("https://relay.lambda-url.example"),
                "{function:?}"
            );
            assert_eq!(
                set.relay_base(function, Some("https://other.example")),
                Some("https://relay.lambda-url.example"),
                "{function:?}"
            );
        }
        let unset = with(None);
        assert_eq!(unset.relay_base(Relay, reached), reached);
        assert_eq!(unset.relay_base(Front, reached), None);
        assert_eq!(unset.relay_base(Send, reached), None);
        assert_eq!(unset.relay_base(Relay, None), None);
        assert_eq!(with(Some("  ")).relay_base_url, None);
    }

    #[test]
    fn settings_default_to_the_cloud_and_name_what_is_missing() {
        let err = Settings::from_lookup(|_| None).unwrap_err();
        assert!(
            matches!(&err, ConfigError::Missing { setting, .. }
                if setting.contains("A2A_TABLE") && setting.contains("A2A_PUSH_QUEUE_URL")),
            "{err}"
        );
        let s = Settings::from_lookup(|name| match name {
            "A2A_TABLE" => Some("t".into()),
            "A2A_WORK_QUEUE_URL" | "A2A_PUSH_QUEUE_URL" => Some("http://q".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(s.max_stream_duration, Duration::from_secs(840));
        assert_eq!(s.cors_origins, CorsOrigins::Off);
        let config = s.service_config(Some("https://x.example/prod/"), None, Auth::none());
        assert!(!config.background_inline);
        assert_eq!(config.push_policy, PushPolicy::default());
        assert_eq!(config.interfaces[0].url, "https://x.example/prod/jsonrpc");
        assert_eq!(config.interfaces[1].url, "https://x.example/prod");
    }

    #[test]
    fn the_base_path_and_the_long_poll_bound_are_read_and_checked() {
        let with = |pairs: &'static [(&'static str, &'static str)]| {
            Settings::from_lookup(|name| match name {
                "A2A_TABLE" => Some("t".into()),
                "A2A_WORK_QUEUE_URL" | "A2A_PUSH_QUEUE_URL" => Some("http://q".into()),
                other => pairs
                    .iter()
                    .find(|(k, _)| *k == other)
                    .map(|(_, v)| (*v).to_string()),
            })
        };
        let defaults = with(&[]).unwrap();
        assert_eq!(defaults.base_path, "");
        assert_eq!(defaults.long_poll_max_wait, Duration::from_secs(25));
        assert_eq!(defaults.long_poll_max_held, 100);
        let set = with(&[
            ("A2A_BASE_PATH", "/agents/a2a/"),
            ("A2A_LONG_POLL_SECS", "10"),
            ("A2A_LONG_POLL_MAX_HELD", "0"),
        ])
        .unwrap();
        assert_eq!(set.base_path, "/agents/a2a");
        assert_eq!(set.long_poll_max_wait, Duration::from_secs(10));
        assert_eq!(set.long_poll_max_held, 0);
        let err = with(&[("A2A_LONG_POLL_MAX_HELD", "many")]).unwrap_err();
        assert!(err.to_string().contains("A2A_LONG_POLL_MAX_HELD"), "{err}");
        for bad in ["a2a", "/a2a?x=1", "/a/../b", "/a b"] {
            let pairs: &'static [(&'static str, &'static str)] =
                Box::leak(Box::new([("A2A_BASE_PATH", bad)]));
            let err = with(pairs).unwrap_err();
            assert!(
                matches!(&err, ConfigError::Invalid { setting, .. } if setting == ENV_BASE_PATH),
                "{bad}: {err}"
            );
        }
    }

    /// Each front door's blocking wait by default (issue 45, item 3): a buffered route is
    /// ended by API Gateway at 29 s, the streaming ones are not, so `rpc` and `front` must not
    /// hand a blocking send over at the buffered route's 20 s.
    #[test]
    fn the_blocking_wait_defaults_to_what_the_function_s_front_door_allows() {
        let of = |function: &'static str, by_name: bool, set: Option<&'static str>| {
            Settings::from_lookup(move |name| match name {
                "A2A_TABLE" => Some("t".into()),
                "A2A_WORK_QUEUE_URL" | "A2A_PUSH_QUEUE_URL" => Some("http://q".into()),
                "A2A_FUNCTION" if !by_name => Some(function.into()),
                "AWS_LAMBDA_FUNCTION_NAME" if by_name => Some(function.into()),
                ENV_BLOCKING_TIMEOUT_SECS => set.map(str::to_owned),
                _ => None,
            })
            .unwrap()
            .blocking_timeout
        };
        let secs = Duration::from_secs;
        assert_eq!(of("send", false, None), secs(20));
        assert_eq!(of("rpc", false, None), secs(240));
        assert_eq!(of("front", false, None), secs(840));
        // Under `cargo lambda watch` the role comes from the function's name.
        assert_eq!(of("front", true, None), secs(840));
        assert_eq!(of("worker", false, None), secs(20));
        assert_eq!(
            Settings::from_lookup(|name| match name {
                "A2A_TABLE" => Some("t".into()),
                "A2A_WORK_QUEUE_URL" | "A2A_PUSH_QUEUE_URL" => Some("http://q".into()),
                _ => None,
            })
            .unwrap()
            .blocking_timeout,
            secs(20)
        );
        // The variable wins.
        assert_eq!(of("front", false, Some("30")), secs(30));
        assert_eq!(of("send", false, Some("24")), secs(24));
    }

    #[test]
    fn older_versions_are_on_unless_switched_off() {
        let with = |extra: &'static [(&'static str, &'static str)]| {
            Settings::from_lookup(move |name| match name {
                "A2A_TABLE" => Some("t".into()),
                "A2A_WORK_QUEUE_URL" | "A2A_PUSH_QUEUE_URL" => Some("http://q".into()),
                other => extra
                    .iter()
                    .find(|(k, _)| *k == other)
                    .map(|(_, v)| (*v).to_owned()),
            })
        };
        let s = with(&[]).unwrap();
        assert_eq!(s.older_versions, OlderVersions::default());
        assert!(s.older_versions.v0_3 && s.older_versions.early);
        let s = with(&[(ENV_PROTOCOL_0_3, "off"), (ENV_PROTOCOL_EARLY, "on")]).unwrap();
        assert_eq!(
            s.service_config(None, None, Auth::none()).older_versions,
            OlderVersions {
                v0_3: false,
                early: true
            }
        );
        let err = with(&[(ENV_PROTOCOL_EARLY, "maybe")]).unwrap_err();
        assert!(
            matches!(&err, ConfigError::Invalid { setting, .. } if setting == ENV_PROTOCOL_EARLY),
            "{err}"
        );
    }

    #[test]
    fn queue_functions_are_given_their_dead_letter_queue_or_do_not_start() {
        let s = Settings::from_lookup(|name| match name {
            "A2A_TABLE" => Some("t".into()),
            "A2A_WORK_QUEUE_URL" | "A2A_PUSH_QUEUE_URL" => Some("http://q".into()),
            "A2A_WORK_DLQ_URL" => Some("http://q/work-dlq".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            s.work_dead_letter_queue_url.as_deref(),
            Some("http://q/work-dlq")
        );
        assert_eq!(s.push_dead_letter_queue_url, None);
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let clients = AwsClients::from_sdk_config(&sdk);
        let err = s
            .consumer_queue(
                &clients,
                "http://q/push.fifo",
                None,
                a2a_aws::ENV_PUSH_DLQ_URL,
            )
            .unwrap_err();
        assert!(
            matches!(&err, ConfigError::Missing { setting, .. } if setting.contains("A2A_PUSH_DLQ_URL")),
            "{err}"
        );
        assert!(s
            .consumer_queue(
                &clients,
                "http://q",
                s.work_dead_letter_queue_url.as_deref(),
                a2a_aws::ENV_WORK_DLQ_URL
            )
            .is_ok());
    }
}
