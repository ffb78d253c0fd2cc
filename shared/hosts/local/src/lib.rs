//! The local server: the full A2A router on one address, the embedded store in one file under
//! a data directory, and the worker and push-delivery loops running in-process on the same job
//! types the Lambda worker and push functions consume.

mod backend;
mod commands;
mod host_check;
mod listener;
mod loops;
mod metrics;
pub mod new_project;

pub use backend::StoreKind;
pub use commands::{
    exit_code, run_command, run_project, serve_until_signal, Cli, Command, KeysArgs, KeysCommand,
    ProjectCli, ProjectCommand,
};
pub use host_check::AllowedHosts;
/// The allocator the local server is measured with (docs/performance.md): declare it in the
/// binary that serves, as `a2a-local`'s own `main.rs` and a generated project's do:
/// `#[global_allocator] static ALLOCATOR: a2a_local::Allocator = a2a_local::Allocator;`.
/// The server frees on one thread what it allocated on another all the time (the store's
/// writer thread, the runtime's workers), which the system allocator pays for in locking and
/// consolidation: about a fifth less CPU per request and half again the throughput.
pub use mimalloc::MiMalloc as Allocator;

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{
    A2aService, Agent, Auth, AuthMode, AuthSettings, MessageIdReuse, PushPolicy, PushSigner,
    ServiceConfig, SigningAlgorithm,
};
use a2a_core::{ApiKeyLocation, ConfigError, ScopeNames};
use a2a_files::{ApiKeyFile, KeyFile};
use a2a_http::{router, CorsOrigins, HttpOptions};
use a2a_net::{
    AgentCredentials, OpenIdJwks, RemoteAgentSettings, RemoteAgentsClient, WebhookClient,
};
use a2a_protocol::{AgentInterface, BINDING_HTTP_JSON, BINDING_JSONRPC, PROTOCOL_VERSION};
use clap::{Args, Parser};
use listener::{serve_http, ConnectionLimits};
use tokio::sync::watch;
use tower_http::timeout::RequestBodyTimeoutLayer;

/// Command-line options (each with an environment variable).
#[derive(Debug, Clone, Parser)]
#[command(
    name = "a2a-local",
    version,
    about = "Run an A2A 1.0 agent locally on an embedded store"
)]
pub struct Options {
    /// Address to listen on.
    #[arg(long, env = "A2A_ADDR", default_value = "127.0.0.1:9000")]
    pub addr: SocketAddr,
    /// Directory holding the store file (created if missing).
    #[arg(long, env = "A2A_DATA_DIR", default_value = "./.a2a")]
    pub data_dir: PathBuf,
    /// Webhook hosts push notifications may be sent to (comma-separated). Loopback by default.
    #[arg(
        long,
        env = "A2A_PUSH_ALLOW_HOSTS",
        value_delimiter = ',',
        default_value = "127.0.0.1,localhost,::1"
    )]
    pub push_allow_hosts: Vec<String>,
    /// Algorithm of the push signing key generated on first start (ES256 or RS256). The key
    /// lives in `<data-dir>/push-signing-keys.json`; an existing file is used as it is.
    #[arg(long, env = "A2A_PUSH_SIGNING_ALG", default_value = "ES256")]
    pub push_signing_alg: SigningAlgorithm,
    /// Where tasks and queues live: `embedded` (one SQLite file under --data-dir) or
    /// `dynamodb` (DynamoDB + SQS, named by A2A_TABLE, A2A_WORK_QUEUE_URL and
    /// A2A_PUSH_QUEUE_URL, or created with --create-resources).
    #[arg(long, env = "A2A_STORE", value_enum, default_value = "embedded")]
    pub store: StoreKind,
    /// With `--store dynamodb`: create a table and queues whose names start with this prefix
    /// (for emulators such as moto) instead of reading their names from the environment.
    #[arg(long, env = "A2A_CREATE_RESOURCES")]
    pub create_resources: Option<String>,
    /// With `--store dynamodb`: seconds one receive from an SQS queue waits for a message (a
    /// long poll, 1 to 20). It returns as soon as one arrives, so a long wait delays nothing
    /// and saves idle requests.
    #[arg(long, env = "A2A_QUEUE_WAIT_SECS", default_value_t = 20)]
    pub queue_wait_secs: u64,
    /// Days tasks are kept (and sends are remembered by their messageId).
    #[arg(long, env = "A2A_RETENTION_DAYS", default_value_t = 30)]
    pub retention_days: u64,
    /// What a messageId sent again means: `reject` (sends are idempotent: a repeat returns the
    /// original result, the same messageId with another body is InvalidParams) or `new-message`
    /// (every send is new, no deduplication; the A2A TCK needs it: it reuses messageIds).
    #[arg(long, env = "A2A_MESSAGE_ID_REUSE", default_value = "reject")]
    pub message_id_reuse: MessageIdReuse,
    /// Seconds a queued job stays invisible to other workers while it runs; a job whose worker
    /// died is redelivered after this.
    #[arg(long, env = "A2A_WORK_VISIBILITY_SECS", default_value_t = 60)]
    pub work_visibility_secs: u64,
    /// Seconds an execution lease lasts between renewals (every third of it). A task whose
    /// execution died with its process (kill -9, a crash) is ended FAILED by a sweep within
    /// this plus --sweep-interval-secs, by this server or another one on the same store.
    #[arg(long, env = "A2A_EXECUTION_LEASE_SECS", default_value_t = 30)]
    pub execution_lease_secs: u64,
    /// Runs the work of a send the client does not wait for (`returnImmediately`) from the
    /// work queue, as the Lambda stack does (nothing may run there after a response), instead
    /// of in this process's background. Off by default.
    #[arg(long, env = "A2A_QUEUE_BACKGROUND_WORK", default_value = "off", value_parser = a2a_core::parse_switch, action = clap::ArgAction::Set)]
    pub queue_background_work: bool,
    /// Seconds between sweeps for tasks whose execution lease expired (one runs at start-up).
    #[arg(long, env = "A2A_SWEEP_INTERVAL_SECS", default_value_t = 10)]
    pub sweep_interval_secs: u64,
    /// Hosts of other agents the agent may call although they are not on a public address
    /// (comma-separated; the `delegate` skill, `Emitter::call_agent`). Loopback by default;
    /// every other agent must be on a public address.
    #[arg(
        long,
        env = "A2A_AGENT_ALLOW_HOSTS",
        value_delimiter = ',',
        default_value = "127.0.0.1,localhost,::1"
    )]
    pub agent_allow_hosts: Vec<String>,
    /// A JSON file of credentials for the agents the agent calls, by URL prefix:
    /// `{"agents": [{"url": "https://…", "bearer": "…"} | {"url": …, "apiKey": …, "header":
    /// …}]}`. The same document may be given inline in A2A_AGENT_CREDENTIALS instead.
    #[arg(long, env = "A2A_AGENT_CREDENTIALS_FILE")]
    pub agent_credentials_file: Option<PathBuf>,
    /// Seconds between two polls of a remote agent's task the agent waits for, when its pushes
    /// do not come (ten times that for an agent that pushes: the poll is only a safety net).
    #[arg(long, env = "A2A_REMOTE_POLL_SECS", default_value_t = 30)]
    pub remote_poll_secs: u64,
    /// The largest one artifact a remote agent's answer may make in the task that called it,
    /// in bytes (its chunks together); past it the call fails and the remote task is canceled.
    #[arg(long, env = "A2A_MAX_RELAYED_ARTIFACT_BYTES", default_value_t = a2a_core::RelayLimits::DEFAULT.max_artifact_bytes)]
    pub max_relayed_artifact_bytes: usize,
    /// The largest a remote agent's answer may make the artifacts of the task that called it,
    /// together, in bytes.
    #[arg(long, env = "A2A_MAX_RELAYED_TASK_BYTES", default_value_t = a2a_core::RelayLimits::DEFAULT.max_task_bytes)]
    pub max_relayed_task_bytes: usize,
    /// Seconds one SSE stream may last before it ends (the client resubscribes).
    #[arg(long, env = "A2A_MAX_STREAM_SECS", default_value_t = 3600)]
    pub max_stream_secs: u64,
    /// Seconds a long-polling GetTask (A2A 1.1 `currentGeneration`) is held at most before it
    /// answers with the task as it stands.
    #[arg(long, env = "A2A_LONG_POLL_SECS", default_value_t = 25)]
    pub long_poll_secs: u64,
    /// How many long polls are held at once across every server on this store (0: none;
    /// unset: no bound, as a held poll costs this process nothing but a parked future). Set it
    /// to try what a Lambda deployment does (A2A_LONG_POLL_MAX_HELD, 100 there).
    #[arg(long, env = "A2A_LONG_POLL_MAX_HELD")]
    pub long_poll_max_held: Option<u32>,
    /// Append the metrics a Lambda function writes (CloudWatch EMF lines: requests, errors,
    /// tasks finished by state, push and job attempts, dead letters) to this file.
    #[arg(long, env = "A2A_METRICS_FILE", value_name = "PATH")]
    pub metrics_file: Option<PathBuf>,
    /// Serve the whole surface (both bindings, SSE, the card, the JWKS) under this path
    /// prefix, e.g. `/a2a`; the card's URLs include it.
    #[arg(long, env = "A2A_BASE_PATH", default_value = "", value_parser = a2a_http::base_path)]
    pub base_path: String,
    /// Seconds a client has to send a request's line and headers; a connection that stays
    /// silent or half-sent longer is closed.
    #[arg(long, env = "A2A_HEADER_TIMEOUT_SECS", default_value_t = 10)]
    pub header_timeout_secs: u64,
    /// Seconds a client has to send a request's whole body.
    #[arg(long, env = "A2A_BODY_TIMEOUT_SECS", default_value_t = 60)]
    pub body_timeout_secs: u64,
    /// Connections served at once; further ones wait in the listen backlog until one closes.
    #[arg(long, env = "A2A_MAX_CONNECTIONS", default_value_t = 1024)]
    pub max_connections: usize,
    /// Browser origins allowed to call (CORS), comma-separated `scheme://host[:port]`, or `*`
    /// for any. Unset: no CORS headers, and preflight requests are not answered.
    #[arg(long, env = "A2A_CORS_ORIGINS", value_name = "ORIGINS")]
    pub cors_origins: Option<CorsOrigins>,
    /// Host names requests may name this server by (comma-separated), beside IP addresses and
    /// localhost, which are always served; `*` for any host and any browser origin. Unset,
    /// requests for other names (a web page's own name re-pointed here: DNS rebinding) and
    /// requests from web pages of other origins than --cors-origins allows are refused (403).
    /// Behind a proxy, give the name clients use, or `*` if the proxy checks.
    #[arg(long, env = "A2A_ALLOWED_HOSTS", value_name = "HOSTS")]
    pub allowed_hosts: Option<AllowedHosts>,
    /// Serve A2A 0.3 clients (`message/send`, the `/v1` REST routes, 0.3 card fields): `on`
    /// (the default) or `off`.
    #[arg(long = "protocol-0-3", env = "A2A_PROTOCOL_0_3", default_value = "on", value_parser = a2a_core::parse_switch, action = clap::ArgAction::Set)]
    pub protocol_0_3: bool,
    /// Serve early-protocol clients (`tasks/send`, `sessionId`, `POST /tasks`, the early card
    /// at `/.well-known/agent.json`): `on` (the default) or `off`.
    #[arg(long = "protocol-early", env = "A2A_PROTOCOL_EARLY", default_value = "on", value_parser = a2a_core::parse_switch, action = clap::ArgAction::Set)]
    pub protocol_early: bool,
    /// Who may call, and how they are authenticated.
    #[command(flatten)]
    pub auth: AuthOptions,
    /// The A2A-Lite chat channels (off unless configured).
    #[command(flatten)]
    pub lite: LiteOptions,
}

/// The A2A-Lite chat channels: the agent as a member of chat rooms (see `docs/a2a-lite.md`).
/// Tokens are better given in the environment than on the command line (which `ps` shows).
#[derive(Debug, Clone, Default, Args)]
pub struct LiteOptions {
    /// The token of the chat's outgoing webhook (Slack, Mattermost, Rocket.Chat): turns on
    /// `POST /a2a-lite/webhook`, which refuses any other token with 401.
    #[arg(long, env = a2a_channels::settings::ENV_WEBHOOK_TOKEN, hide_env_values = true)]
    pub lite_webhook_token: Option<String>,
    /// The chat's incoming-webhook URL, where the agent posts (`{"text": …, "channel": …}`).
    #[arg(long, env = a2a_channels::settings::ENV_WEBHOOK_REPLY_URL, hide_env_values = true)]
    pub lite_webhook_reply_url: Option<String>,
    /// The Matrix homeserver's URL: with --lite-matrix-registration, the agent is an
    /// application service there (its routes under `/a2a-lite/matrix`).
    #[arg(long, env = a2a_channels::settings::ENV_MATRIX_HOMESERVER)]
    pub lite_matrix_homeserver: Option<String>,
    /// The application service registration file given to the homeserver (YAML; its
    /// `as_token`, `hs_token` and `sender_localpart` are read).
    #[arg(long, env = a2a_channels::settings::ENV_MATRIX_REGISTRATION)]
    pub lite_matrix_registration: Option<PathBuf>,
    /// With auth on, the principal the channels act as: their tasks belong to it (default
    /// `key:a2a-lite`, the owner of API keys issued with `--principal a2a-lite`).
    #[arg(long, env = a2a_channels::settings::ENV_PRINCIPAL)]
    pub lite_principal: Option<String>,
    /// `agent.id` on the agent's A2A-Lite card (default: from the agent's name).
    #[arg(long, env = a2a_channels::settings::ENV_AGENT_ID)]
    pub lite_agent_id: Option<String>,
}

impl LiteOptions {
    /// The channels these options configure; a half-configured one is an error.
    pub fn settings(&self) -> Result<a2a_channels::LiteSettings, ConfigError> {
        use a2a_channels::settings as s;
        let registration = self
            .lite_matrix_registration
            .as_ref()
            .map(|p| p.display().to_string());
        let lookup = |name: &str| match name {
            s::ENV_WEBHOOK_TOKEN => self.lite_webhook_token.clone(),
            s::ENV_WEBHOOK_REPLY_URL => self.lite_webhook_reply_url.clone(),
            s::ENV_MATRIX_HOMESERVER => self.lite_matrix_homeserver.clone(),
            s::ENV_MATRIX_REGISTRATION => registration.clone(),
            s::ENV_PRINCIPAL => self.lite_principal.clone(),
            s::ENV_AGENT_ID => self.lite_agent_id.clone(),
            _ => None,
        };
        a2a_channels::LiteSettings::from_lookup(lookup, s::read_registration)
    }
}

/// How callers authenticate (see `docs/auth.md`).
#[derive(Debug, Clone, Args)]
pub struct AuthOptions {
    /// Authentication mode: `none` (everyone is the anonymous caller; for your own machine
    /// only), `api-key` (keys issued with `a2a-local keys issue`) or `jwt` (bearer tokens from
    /// an OpenID issuer).
    #[arg(long = "auth", env = "A2A_AUTH", default_value = "none")]
    pub mode: AuthMode,
    /// The API key document (hashes only). Default: `<data-dir>/api-keys.json`.
    #[arg(long, env = "A2A_API_KEY_FILE")]
    pub api_key_file: Option<PathBuf>,
    /// Where clients send the API key: `header` or `query`.
    #[arg(long, env = "A2A_API_KEY_LOCATION", default_value = "header")]
    pub api_key_location: ApiKeyLocation,
    /// The header or query parameter holding the API key.
    #[arg(long, env = "A2A_API_KEY_NAME", default_value = "X-API-Key")]
    pub api_key_name: String,
    /// The token issuer (`iss`), e.g. `https://cognito-idp.<region>.amazonaws.com/<pool>`.
    #[arg(long, env = "A2A_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Accepted token audiences (`aud`), comma-separated.
    #[arg(long, env = "A2A_JWT_AUDIENCE", value_delimiter = ',')]
    pub jwt_audience: Vec<String>,
    /// The issuer's JWKS URL. Default: `jwks_uri` of `{issuer}/.well-known/openid-configuration`.
    #[arg(long, env = "A2A_JWT_JWKS_URL")]
    pub jwt_jwks_url: Option<String>,
    /// Accepted token algorithms, comma-separated (asymmetric only; HMAC is always refused).
    #[arg(
        long,
        env = "A2A_JWT_ALGORITHMS",
        value_delimiter = ',',
        default_value = "RS256,RS384,RS512,PS256,PS384,PS512,ES256,ES384,EdDSA"
    )]
    pub jwt_algorithms: Vec<jsonwebtoken::Algorithm>,
    /// The scope that grants reading tasks and the extended card (empty: every valid token).
    #[arg(long, env = "A2A_JWT_SCOPE_READ", default_value = "a2a:read")]
    pub jwt_scope_read: String,
    /// The scope that grants sending messages (empty: every valid token).
    #[arg(long, env = "A2A_JWT_SCOPE_SEND", default_value = "a2a:send")]
    pub jwt_scope_send: String,
    /// The scope that grants cancelling tasks (empty: every valid token).
    #[arg(long, env = "A2A_JWT_SCOPE_CANCEL", default_value = "a2a:cancel")]
    pub jwt_scope_cancel: String,
    /// The scope that grants managing push configs (empty: every valid token).
    #[arg(long, env = "A2A_JWT_SCOPE_PUSH", default_value = "a2a:push")]
    pub jwt_scope_push: String,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    #[arg(long, env = "A2A_JWT_LEEWAY_SECS", default_value_t = 60)]
    pub jwt_leeway_secs: u64,
    /// How long the issuer's keys are cached, in seconds (an unknown `kid` refetches sooner).
    #[arg(long, env = "A2A_JWT_JWKS_TTL_SECS", default_value_t = 600)]
    pub jwt_jwks_ttl_secs: u64,
}

impl Options {
    /// Parses the command line as `a2a-local` does, with `data_dir` as the default data
    /// directory: a server of your own agent keeps its tasks apart from the reference agent's
    /// (`./.a2a`). `--data-dir` and `A2A_DATA_DIR` still choose another. Exits with clap's
    /// message on bad arguments.
    pub fn parse_with_data_dir(data_dir: &'static str) -> Options {
        Self::try_parse_from_with_data_dir(data_dir, std::env::args_os())
            .unwrap_or_else(|err| err.exit())
    }

    /// Like [`Options::parse_with_data_dir`], from `args` (the first is the program's name).
    pub fn try_parse_from_with_data_dir<I, T>(
        data_dir: &'static str,
        args: I,
    ) -> Result<Options, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let mut matches = <Options as clap::CommandFactory>::command()
            .mut_arg("data_dir", |arg| arg.default_value(data_dir))
            .try_get_matches_from(args)?;
        <Options as clap::FromArgMatches>::from_arg_matches_mut(&mut matches)
    }

    /// How long one SQS receive waits: `--queue-wait-secs`, within what SQS allows.
    pub fn queue_wait(&self) -> Duration {
        Duration::from_secs(self.queue_wait_secs.clamp(1, 20))
    }
}

impl AuthOptions {
    /// The API key document's path.
    pub fn api_key_path(&self, data_dir: &Path) -> PathBuf {
        self.api_key_file
            .clone()
            .unwrap_or_else(|| data_dir.join(API_KEY_FILE))
    }

    /// The settings these options give (the same the Lambda functions read from their
    /// environment; checked by the core).
    pub fn settings(&self) -> AuthSettings {
        AuthSettings {
            mode: self.mode,
            api_key_location: self.api_key_location,
            api_key_name: self.api_key_name.clone(),
            jwt_issuer: self.jwt_issuer.clone(),
            jwt_audience: self.jwt_audience.clone(),
            jwt_jwks_url: self.jwt_jwks_url.clone(),
            jwt_algorithms: self.jwt_algorithms.clone(),
            jwt_scopes: ScopeNames {
                read: self.jwt_scope_read.clone(),
                send: self.jwt_scope_send.clone(),
                cancel: self.jwt_scope_cancel.clone(),
                push: self.jwt_scope_push.clone(),
            },
            jwt_leeway: Duration::from_secs(self.jwt_leeway_secs),
            jwt_jwks_ttl: Duration::from_secs(self.jwt_jwks_ttl_secs),
        }
    }

    /// The auth layer these options describe; an error names what is missing.
    pub fn build(&self, data_dir: &Path) -> Result<Auth, ConfigError> {
        self.settings().build(
            || {
                let file = ApiKeyFile::new(self.api_key_path(data_dir));
                let doc = file.read()?;
                if doc.keys.iter().all(|k| k.revoked) {
                    tracing::warn!(
                        path = %file.path().display(),
                        "no API keys in the key file: every request will be refused until you \
                         issue one with `a2a-local keys issue`"
                    );
                }
                Ok(Arc::new(file))
            },
            |jwt| Arc::new(OpenIdJwks::new(jwt)),
        )
    }
}

/// The API key document's file name in the data directory.
pub const API_KEY_FILE: &str = "api-keys.json";

/// Logs to stderr; `RUST_LOG` sets the level (default `info`). Exports spans over OTLP when
/// the standard variables ask for it (`OTEL_EXPORTER_OTLP_ENDPOINT`, docs/tracing.md); a
/// server run by [`serve`] flushes them when it stops.
pub fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let failed = match a2a_telemetry::layer("a2a-local", |exporter| exporter) {
        // The level filters the log lines only: the exported spans are at TRACE.
        Ok(Some(spans)) => {
            tracing_subscriber::registry()
                .with(log_lines().with_filter(filter))
                .with(spans)
                .init();
            None
        }
        // No spans: one global filter, so that what it turns off (the kit's TRACE spans,
        // hyper's and the SQLite store's debug lines) is never built at all. Behind a
        // per-layer filter every callsite stays live for the layers without one.
        other => {
            tracing_subscriber::registry()
                .with(filter)
                .with(log_lines())
                .init();
            other.err()
        }
    };
    if let Some(err) = failed {
        tracing::warn!(error = %err, "spans are not exported");
    }
}

/// The log lines' layer: text on stderr, coloured on a terminal.
fn log_lines<S>() -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

/// Serves `agent` until `shutdown` resolves, then stops accepting requests and the loops.
pub async fn serve(
    options: Options,
    agent: Arc<dyn Agent>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let mut backend = backend::Backend::open(&options).await?;
    // Before the listener: a bad key file stops the start with a clear error.
    let key_file = KeyFile::in_dir(&options.data_dir, options.push_signing_alg);
    let keys = key_file
        .load_or_create()
        .map_err(|e| format!("cannot load the push signing keys: {e}"))?;
    let auth = options.auth.build(&options.data_dir)?;
    let lite = options.lite.settings()?;
    let push_policy = PushPolicy {
        allowed_hosts: options.push_allow_hosts.clone(),
        require_https: false,
    };
    // Rooms of the channels (`lite:<channel>:<room>`) are agents too.
    let remote_agents = Arc::new(a2a_channels::remote_agents(
        &lite,
        &push_policy,
        Arc::new(remote_agents(&options)?),
    )?);
    let listener = listener::bind(options.addr).await?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let base = format!("http://{addr}{}", options.base_path);
    let http_options = HttpOptions {
        cors_origins: options.cors_origins.clone().unwrap_or_default(),
        base_path: options.base_path.clone(),
        ..HttpOptions::default()
    };
    let config = ServiceConfig {
        interfaces: vec![
            AgentInterface {
                url: format!("{base}{}", http_options.jsonrpc_path),
                protocol_binding: BINDING_JSONRPC.into(),
                protocol_version: PROTOCOL_VERSION.into(),
                tenant: String::new(),
            },
            AgentInterface {
                url: base.clone(),
                protocol_binding: BINDING_HTTP_JSON.into(),
                protocol_version: PROTOCOL_VERSION.into(),
                tenant: String::new(),
            },
        ],
        retention: Duration::from_secs(options.retention_days.max(1) * 24 * 3600),
        message_id_reuse: options.message_id_reuse,
        max_stream_duration: Duration::from_secs(options.max_stream_secs.max(1)),
        long_poll_max_wait: Duration::from_secs(options.long_poll_secs),
        long_poll_max_held: options.long_poll_max_held,
        background_inline: !options.queue_background_work,
        push_policy,
        push_sender: Arc::new(WebhookClient::new()),
        // The issuer is the base URL: receivers find the JWKS at `{iss}/.well-known/jwks.json`.
        push_signer: Some(PushSigner::new(keys, base.clone())),
        // The lease on a task must not outlive the job's visibility, or a redelivered job
        // would wait for a lease that nobody renews.
        lease_duration: Duration::from_secs(
            options
                .execution_lease_secs
                .min(options.work_visibility_secs)
                .max(1),
        ),
        auth,
        older_versions: a2a_core::OlderVersions {
            v0_3: options.protocol_0_3,
            early: options.protocol_early,
        },
        remote_agents,
        remote_poll: Duration::from_secs(options.remote_poll_secs.max(1)),
        relay_limits: a2a_core::RelayLimits {
            max_artifact_bytes: options.max_relayed_artifact_bytes,
            max_task_bytes: options.max_relayed_task_bytes,
        },
        ..ServiceConfig::default()
    };
    let config = match &options.metrics_file {
        Some(path) => ServiceConfig {
            observer: Arc::new(metrics::file_observer(path)?),
            ..config
        },
        None => config,
    };
    let service = A2aService::new(
        config,
        agent,
        backend.store.clone(),
        Arc::new(loops::LoggedWorkQueue(backend.work.clone())),
        backend.push.clone(),
    );
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut loops = vec![
        tokio::spawn(loops::worker_loop(
            service.clone(),
            backend.work_queue.clone(),
            Duration::from_secs(options.work_visibility_secs.max(1)),
            stop_rx.clone(),
        )),
        tokio::spawn(loops::push_loop(
            service.clone(),
            backend.push_queue.clone(),
            stop_rx.clone(),
        )),
    ];
    // Once now (tasks a crash left behind), then periodically.
    loops.push(tokio::spawn(loops::sweep_loop(
        service.clone(),
        Duration::from_secs(options.sweep_interval_secs.max(1)),
        stop_rx.clone(),
    )));
    if let Some(start) = backend.fan_out.take() {
        loops.push(start(service.clone(), stop_rx.clone()));
    }
    if let Some(store) = &backend.embedded {
        loops.push(tokio::spawn(loops::purge_loop(
            store.clone(),
            stop_rx.clone(),
        )));
    }
    tracing::info!(auth = ?options.auth.mode, "authentication mode");
    // The address stays in the text: the e2e harness and infra/test-all.sh read it from here.
    tracing::info!(
        backend = %backend.description,
        "a2a-local serving on {base}; agent card at {base}/.well-known/agent-card.json, push \
         signing keys at {base}/.well-known/jwks.json"
    );
    let mut app = router(service.clone(), http_options.clone());
    // The channels' pushes come back over loopback (the address a client would use).
    let local_base = match addr.ip().is_unspecified() {
        true => format!("http://127.0.0.1:{}", addr.port()),
        false => base.clone(),
    };
    if let Some(channels) = a2a_channels::LiteChannels::new(&lite, service.clone(), &local_base)? {
        let on: Vec<&str> = [
            ("webhook", lite.webhook.is_some()),
            ("matrix", lite.matrix.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, on)| on.then_some(name))
        .collect();
        tracing::info!(channels = %on.join(","), "A2A-Lite channels on under {base}/a2a-lite/");
        // Under the base path, as every other route (the bridge's pushes come back to
        // `{base}/a2a-lite/events`).
        app = match options.base_path.as_str() {
            "" => app.merge(channels.router()),
            prefix => app.merge(axum::Router::new().nest(prefix, channels.router())),
        };
    }
    let hosts = Arc::new(host_check::HostPolicy {
        hosts: options.allowed_hosts.clone().unwrap_or_default(),
        cors: http_options.cors_origins.clone(),
    });
    let app = app
        .layer(RequestBodyTimeoutLayer::new(Duration::from_secs(
            options.body_timeout_secs.max(1),
        )))
        .layer(host_check::HostCheckLayer(hosts));
    let limits = ConnectionLimits {
        header_timeout: Duration::from_secs(options.header_timeout_secs.max(1)),
        max_connections: options.max_connections.max(1),
    };
    // Between the last accepted connection and the grace period: end this process's inline
    // executions and let the open streams deliver their final events and end.
    let stopping = {
        let service = service.clone();
        async move { service.shutdown().await }
    };
    serve_http(listener, app, limits, shutdown, stopping).await;
    let _ = stop_tx.send(true);
    for handle in loops {
        let _ = handle.await;
    }
    tracing::info!("a2a-local stopped");
    a2a_telemetry::shutdown().await;
    Ok(())
}

/// The environment variable holding the agent credentials document inline.
pub const ENV_AGENT_CREDENTIALS: &str = "A2A_AGENT_CREDENTIALS";

/// The network adapter for calls to other agents: loopback (or `--agent-allow-hosts`) allowed,
/// `http` allowed, the credentials of `--agent-credentials-file` or A2A_AGENT_CREDENTIALS.
fn remote_agents(options: &Options) -> Result<RemoteAgentsClient, String> {
    let document =
        match (
            &options.agent_credentials_file,
            std::env::var(ENV_AGENT_CREDENTIALS),
        ) {
            (Some(path), _) => Some(std::fs::read_to_string(path).map_err(|e| {
                format!("cannot read the agent credentials {}: {e}", path.display())
            })?),
            (None, Ok(inline)) if !inline.trim().is_empty() => Some(inline),
            _ => None,
        };
    let credentials = match document {
        Some(text) => AgentCredentials::from_json(&text)?,
        None => AgentCredentials::none(),
    };
    if !credentials.is_empty() {
        tracing::info!(
            agents = credentials.len(),
            "credentials for other agents loaded"
        );
    }
    Ok(RemoteAgentsClient::new(RemoteAgentSettings {
        policy: PushPolicy {
            allowed_hosts: options.agent_allow_hosts.clone(),
            require_https: false,
        },
        credentials: std::sync::Arc::new(credentials),
        ..RemoteAgentSettings::local()
    }))
}
