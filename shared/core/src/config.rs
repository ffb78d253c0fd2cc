//! The service's configuration, filled in by the host (the local server or a Lambda function).

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol::AgentInterface;

use crate::auth::Auth;
use crate::idempotency::MessageIdReuse;
use crate::observe::{NoObserver, Observer};
use crate::push_policy::PushPolicy;
use crate::relay::RelayLimits;
use crate::remote::{NoRemoteAgents, RemoteAgents};
use crate::signing::PushSigner;
use crate::webhook::{NoWebhookSender, WebhookSender};

/// How the service behaves; the host (local server or Lambda function) fills it in.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// The interfaces this deployment really serves, in order of preference.
    pub interfaces: Vec<AgentInterface>,
    /// Whether the streaming operations are offered.
    pub streaming: bool,
    /// Whether push notifications are offered.
    pub push_notifications: bool,
    /// Whether the extended card is offered. It requires authentication, so it is offered
    /// only when `auth` is on, whatever this says.
    pub extended_card: bool,
    /// Who may call: turns credentials into a principal, and says so on the card.
    pub auth: Auth,
    /// How long tasks, events and push configs are kept (and so how long a `messageId` is
    /// remembered).
    pub retention: Duration,
    /// What a `messageId` sent again means: idempotent sends, or none.
    pub message_id_reuse: MessageIdReuse,
    /// How long a blocking SendMessage waits before it returns the task as it stands.
    pub blocking_timeout: Duration,
    /// How long a long-polling GetTask (A2A 1.1 `currentGeneration`) is held at most before it
    /// answers with the task as it stands. It must fit the front door: API Gateway ends a
    /// buffered request after 29 s, so the default stays below that.
    pub long_poll_max_wait: Duration,
    /// How many long polls the deployment holds at once, across all its processes (`None`:
    /// no bound). Beyond it a long poll answers at once with the task as it stands, as a
    /// plain GetTask. Each held poll takes one of this many slots, leases in the store (a
    /// write to take and one to give back): on Lambda a held poll is an instance billed for
    /// its hold, and the bound keeps them from taking the concurrency the worker and the
    /// pushes need (docs/lambda.md, "Concurrency").
    pub long_poll_max_held: Option<u32>,
    /// How long one SSE stream may last before it ends gracefully (the client resubscribes).
    pub max_stream_duration: Duration,
    /// Whether inline work may go on after the response ends. True for a long-lived process;
    /// false on Lambda, where a frozen instance would stall it: such work is queued instead.
    pub background_inline: bool,
    /// Which webhook URLs may be contacted.
    pub push_policy: PushPolicy,
    /// Sends the webhook POSTs through the SSRF guard (the host's network adapter). The
    /// default refuses every send.
    pub push_sender: Arc<dyn WebhookSender>,
    /// Signs every push (a JWT verifiable against the JWKS this service publishes). Without
    /// one, pushes go out unsigned and no JWKS is served: hosts should always set it.
    pub push_signer: Option<PushSigner>,
    /// Lease holder name of this process (worker identity).
    pub worker_id: String,
    /// How long an execution lease lasts before another worker may take over.
    pub lease_duration: Duration,
    /// Attempts at a work job (counted on the task's lease by the worker, not by the queue)
    /// before its task is ended FAILED and the job dead-lettered instead of running again.
    pub max_job_attempts: u32,
    /// Push delivery attempts per event and config before the job is dead-lettered.
    pub max_push_attempts: u32,
    /// Timeout of one webhook POST.
    pub push_timeout: Duration,
    /// Which older protocol versions are served beside A2A 1.0 (both by default).
    pub older_versions: OlderVersions,
    /// Receives the countable events (operations, final task states, push and job attempts)
    /// for the host's metrics.
    pub observer: Arc<dyn Observer>,
    /// Calls other A2A agents for the agent (`Emitter::call_agent`): the host's network
    /// adapter. The default calls none.
    pub remote_agents: Arc<dyn RemoteAgents>,
    /// How often a remote task an execution waits for is polled, as a fallback for its pushes.
    pub remote_poll: Duration,
    /// How large a remote agent's answer may make the task that called it.
    pub relay_limits: RelayLimits,
    /// Where remote agents push the updates of the tasks our waits follow
    /// (`{relay_base}/a2a-relay/{taskId}`), when that is not the REST base URL: a deployment
    /// serving the relay route from a door of its own, which the rest of its traffic cannot
    /// crowd out (on Lambda, the relay function's Function URL). `None`: the REST base URL.
    /// Relay URLs under the REST base URL, handed out before, are still taken.
    pub relay_base: Option<String>,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            interfaces: Vec::new(),
            streaming: true,
            push_notifications: true,
            extended_card: true,
            auth: Auth::none(),
            retention: Duration::from_secs(30 * 24 * 3600),
            message_id_reuse: MessageIdReuse::default(),
            blocking_timeout: Duration::from_secs(120),
            long_poll_max_wait: DEFAULT_LONG_POLL_MAX_WAIT,
            long_poll_max_held: None,
            max_stream_duration: Duration::from_secs(14 * 60),
            background_inline: true,
            push_policy: PushPolicy::default(),
            push_sender: Arc::new(NoWebhookSender),
            push_signer: None,
            worker_id: crate::new_id(),
            lease_duration: Duration::from_secs(60),
            max_job_attempts: 5,
            max_push_attempts: 8,
            push_timeout: Duration::from_secs(10),
            older_versions: OlderVersions::default(),
            observer: Arc::new(NoObserver),
            remote_agents: Arc::new(NoRemoteAgents),
            remote_poll: Duration::from_secs(30),
            relay_limits: RelayLimits::DEFAULT,
            relay_base: None,
        }
    }
}

/// The default bound on holding a long-polling GetTask: under API Gateway's 29 s limit on a
/// buffered request, with room for the read after the wait.
pub const DEFAULT_LONG_POLL_MAX_WAIT: Duration = Duration::from_secs(25);

/// Environment variable (local server and Lambda functions) that turns A2A 0.3 on or off.
pub const ENV_PROTOCOL_0_3: &str = "A2A_PROTOCOL_0_3";
/// Environment variable (local server and Lambda functions) that turns the early protocol
/// (before 0.2: `tasks/send`, `sessionId`) on or off.
pub const ENV_PROTOCOL_EARLY: &str = "A2A_PROTOCOL_EARLY";

/// The older protocol versions served beside A2A 1.0. Each is a translation at the HTTP edge onto
/// the same operations; turning one off makes its requests get what a 1.0-only server answers
/// (-32009 on JSON-RPC, 404 or 400 on its paths) and takes its interfaces off the card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OlderVersions {
    /// A2A 0.3: `message/send`, `kind` discriminators, the `/v1` REST routes.
    pub v0_3: bool,
    /// The early protocol: `tasks/send`, `tasks/sendSubscribe`, `sessionId`, Hexagon's
    /// `POST /tasks` paths.
    pub early: bool,
}

impl Default for OlderVersions {
    fn default() -> Self {
        Self {
            v0_3: true,
            early: true,
        }
    }
}

impl OlderVersions {
    /// Only A2A 1.0.
    pub const NONE: Self = Self {
        v0_3: false,
        early: false,
    };
}

/// Parses a version switch: `on`/`off` (also `true`/`false`, `1`/`0`).
pub fn parse_switch(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        other => Err(format!("expected on or off, got {other:?}")),
    }
}
