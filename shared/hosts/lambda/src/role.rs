//! Which of the fourteen functions a process is, and what each serves: the roles themselves,
//! with no I/O, so that the settings, the runners and the tests all read them from here.

use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

use a2a_http::{Surface, EARLY_CARD_ALT_PATH, EARLY_JSONRPC_PATHS, V03_CARD_PATH, V03_PREFIX};
use a2a_protocol::Operation;

/// The environment variable that names a function's role (set per function by `template.yaml`).
pub const ENV_FUNCTION: &str = "A2A_FUNCTION";

/// What Lambda (and `cargo lambda watch`) sets to the function's name: the role's fallback
/// when [`ENV_FUNCTION`] is not set and it is one of the roles' names.
pub const ENV_LAMBDA_FUNCTION_NAME: &str = "AWS_LAMBDA_FUNCTION_NAME";

/// One of the fourteen Lambda functions: an HTTP slice of the surface, an SQS consumer, or the
/// table stream's consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// An HTTP function (API Gateway or a Function URL).
    Http(HttpFunction),
    /// The worker: SQS batches of queued work.
    Worker,
    /// The push fan-out: batches of the task table's stream (heads of tasks with push
    /// configs) → push jobs.
    Fanout,
    /// The push function: SQS batches of push deliveries.
    Push,
}

impl Function {
    /// Every function, in the order the template declares them.
    pub const ALL: [Function; 14] = [
        Self::Http(HttpFunction::Send),
        Self::Http(HttpFunction::Get),
        Self::Http(HttpFunction::List),
        Self::Http(HttpFunction::Cancel),
        Self::Http(HttpFunction::PushConfig),
        Self::Http(HttpFunction::Card),
        Self::Http(HttpFunction::Stream),
        Self::Http(HttpFunction::Rpc),
        Self::Http(HttpFunction::Channel),
        Self::Http(HttpFunction::Front),
        Self::Http(HttpFunction::Relay),
        Self::Worker,
        Self::Fanout,
        Self::Push,
    ];

    /// The function's name: the value of [`ENV_FUNCTION`] that selects it, and its name
    /// under `cargo lambda watch`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Http(function) => function.name(),
            Self::Worker => "worker",
            Self::Fanout => "fanout",
            Self::Push => "push",
        }
    }

    /// The function called `name`, if any.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The role from the environment: [`ENV_FUNCTION`], else [`ENV_LAMBDA_FUNCTION_NAME`] when
    /// it is one of the names.
    pub fn from_env() -> Result<Self, UnknownFunction> {
        Self::choose(
            std::env::var(ENV_FUNCTION).ok().as_deref(),
            std::env::var(ENV_LAMBDA_FUNCTION_NAME).ok().as_deref(),
        )
    }

    /// The role given the values of [`ENV_FUNCTION`] and [`ENV_LAMBDA_FUNCTION_NAME`]. A set
    /// but unknown [`ENV_FUNCTION`] is an error, never a silent fallback: a typo in the
    /// template must not make a function serve another's role.
    pub fn choose(
        a2a_function: Option<&str>,
        lambda_function_name: Option<&str>,
    ) -> Result<Self, UnknownFunction> {
        match a2a_function {
            Some(name) => Self::named(name).ok_or_else(|| UnknownFunction {
                found: Some(name.to_owned()),
            }),
            None => lambda_function_name
                .and_then(Self::named)
                .ok_or(UnknownFunction { found: None }),
        }
    }
}

/// The environment names no function: the one line a function prints when it fails at init.
#[derive(Clone, PartialEq, Eq)]
pub struct UnknownFunction {
    found: Option<String>,
}

impl fmt::Display for UnknownFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = Function::ALL.map(Function::name).join(", ");
        match &self.found {
            Some(found) => write!(
                f,
                "{ENV_FUNCTION}={found:?} names no function; valid values: {names}"
            ),
            None => write!(
                f,
                "set {ENV_FUNCTION} to the function's role (or name the function after it in \
                 {ENV_LAMBDA_FUNCTION_NAME}); valid values: {names}"
            ),
        }
    }
}

// `main` returning an error prints its `Debug`: keep that the same one line.
impl fmt::Debug for UnknownFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for UnknownFunction {}

/// The HTTP functions, each serving a slice of the surface. Behind API Gateway, the front
/// door's routes (`shared/hosts/lambda/routes.json`) send each REST route, and its `/{tenant}/…` form, to one
/// of them; behind a Lambda Function URL, [`Self::Front`] serves every route, and
/// [`Self::Relay`] the machine-to-machine ones again on a URL of its own. The request
/// reaches `a2a_http` with its path as sent, so the tenant scopes the call there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpFunction {
    /// `POST /message:send`.
    Send,
    /// `GET /tasks/{id}`, and `GET /tasks/{id}:subscribe` (API Gateway cannot route on a
    /// suffix inside a path segment, so the function behind `GET /tasks/{id}` serves both).
    Get,
    /// `GET /tasks`.
    List,
    /// `POST /tasks/{id}:cancel`, and `POST /tasks/{id}:subscribe` (same reason as [`Self::Get`]).
    Cancel,
    /// The four push config operations.
    PushConfig,
    /// The public card, the extended card and the JWKS.
    Card,
    /// `POST /message:stream` (and subscribe).
    Stream,
    /// Every JSON-RPC method on one URL.
    Rpc,
    /// The A2A-Lite chat channels (`/a2a-lite/…`: the chats' webhooks and transactions, and
    /// the bridge's push receiver); no A2A operation of its own.
    Channel,
    /// Everything the others serve, in one streaming function: the front door `FunctionUrl`
    /// (template parameter `FrontDoor`), a Lambda Function URL in `RESPONSE_STREAM` mode
    /// that has no routes of its own.
    Front,
    /// The machine-to-machine routes behind the front door `FunctionUrl`, on a Function URL
    /// and a reserved concurrency of their own: the relay route (`/a2a-relay/…`, the remote
    /// agents our waits follow) and the A2A-Lite channels (`/a2a-lite/…`, chat servers and
    /// our own pushes back to the bridge). Every other path is 404. Streams and long polls on
    /// [`Self::Front`] cannot take its instances: a chat webhook that is never retried, or a
    /// push retried a few times, is never turned away because SSE subscribers hold them all.
    Relay,
}

impl HttpFunction {
    /// Every HTTP function behind API Gateway: the functions of `shared/hosts/lambda/routes.json`'s routes
    /// ([`Self::Front`] is the other front door, so not one of them).
    pub const ALL: [HttpFunction; 9] = [
        Self::Send,
        Self::Get,
        Self::List,
        Self::Cancel,
        Self::PushConfig,
        Self::Card,
        Self::Stream,
        Self::Rpc,
        Self::Channel,
    ];

    /// The function's name: its `A2A_FUNCTION` value and its name in `shared/hosts/lambda/routes.json`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Send => "send",
            Self::Get => "get",
            Self::List => "list",
            Self::Cancel => "cancel",
            Self::PushConfig => "push-config",
            Self::Card => "card",
            Self::Stream => "stream",
            Self::Rpc => "rpc",
            Self::Channel => "channel",
            Self::Front => "front",
            Self::Relay => "relay",
        }
    }

    /// Whether the function answers in response-streaming mode: it serves an SSE operation.
    /// The template's front door must use `RESPONSE_STREAM` for exactly these (a test checks
    /// `template.yaml` and `shared/hosts/lambda/routes.json` against this).
    pub fn streaming(self) -> bool {
        self.surface().operations.iter().any(|op| op.is_streaming())
    }

    /// The slice of the surface the function serves, derived from the front door's route table
    /// (`shared/hosts/lambda/routes.json`, compiled in) and the core's operation table: the operations whose
    /// REST route the table sends to this function, all of them on JSON-RPC for the function
    /// behind the JSON-RPC path (or an early-protocol JSON-RPC path), and the card for the one
    /// behind `/.well-known/…` (and `/agent.json`). A 0.3 REST route (`/v1/…`) counts as the
    /// 1.0 route it mirrors. [`Self::Front`] serves all of it.
    pub fn surface(self) -> Surface {
        if self == Self::Front {
            return Surface::all();
        }
        let mut surface = Surface {
            operations: Vec::new(),
            jsonrpc: false,
            rest: false,
            card: false,
            relay: self == Self::Relay,
        };
        // OPTIONS routes only bring CORS preflights, which every router answers alike.
        for route in route_table()
            .iter()
            .filter(|r| r.function == self.name() && r.method != "OPTIONS")
        {
            // A 0.3 REST route (a2a_http mounts them beside the 1.0 routes of the same
            // operations) counts as the 1.0 route it mirrors: `/v1` + the 1.0 path, and
            // `/v1/card` for the extended card.
            let path = if route.path == V03_CARD_PATH {
                Operation::GetExtendedAgentCard.rest_routes()[0].path
            } else {
                route.path.strip_prefix(V03_PREFIX).unwrap_or(&route.path)
            };
            let early_jsonrpc =
                route.method == "POST" && EARLY_JSONRPC_PATHS.contains(&route.path.as_str());
            if route.path.starts_with(a2a_core::RELAY_PATH) {
                surface.relay = true;
            } else if route.path == "/jsonrpc" || early_jsonrpc {
                surface.jsonrpc = true;
                surface.operations = Operation::ALL.to_vec();
            } else if route.path.starts_with("/.well-known/") || route.path == EARLY_CARD_ALT_PATH {
                surface.card = true;
            } else if !route.path.starts_with("/{tenant}/") {
                for op in Operation::ALL {
                    let routed = op.rest_routes().iter().any(|r| {
                        r.verb.as_str() == route.method && path_shape(r.path) == path_shape(path)
                    });
                    if routed && !surface.operations.contains(&op) {
                        surface.rest = true;
                        surface.operations.push(op);
                    }
                }
            }
        }
        surface
    }

    /// Whether the function serves the A2A-Lite channels' routes (when a channel is
    /// configured): the channel function, the front function that serves everything, and the
    /// relay function beside it.
    pub fn serves_channels(self) -> bool {
        matches!(self, Self::Channel | Self::Front | Self::Relay)
    }

    /// How long a blocking SendMessage waits on this function before it answers with the task
    /// as it stands, when `A2A_BLOCKING_TIMEOUT_SECS` does not say: what its front door
    /// allows. A buffered route behind API Gateway is ended at 29 s (20 s leaves time for a
    /// cold start and the answer); a streaming one there has no such limit but an idle timeout
    /// of 5 minutes (240 s); the Function URL's front function streams for up to its 900 s
    /// timeout (840 s). `template.yaml` sets the same values (a test checks it).
    pub fn default_blocking_timeout(self) -> Duration {
        if self == Self::Front {
            Duration::from_secs(840)
        } else if self.streaming() {
            Duration::from_secs(240)
        } else {
            Duration::from_secs(20)
        }
    }

    /// What the function does with the push signing keys: the functions serving a card (the
    /// public one, or the extended one over JSON-RPC) publish and sign with them (read-only),
    /// the others do not read them.
    pub fn key_use(self) -> KeyUse {
        let surface = self.surface();
        if surface.card
            || surface
                .operations
                .contains(&a2a_protocol::Operation::GetExtendedAgentCard)
        {
            KeyUse::Publish
        } else {
            KeyUse::None
        }
    }
}

/// One route of `shared/hosts/lambda/routes.json`: which function serves `method path`.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Route {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) function: String,
}

/// The front door's routes (`shared/hosts/lambda/routes.json`, compiled in).
pub(crate) fn route_table() -> &'static [Route] {
    #[derive(serde::Deserialize)]
    struct Table {
        routes: Vec<Route>,
    }
    static TABLE: OnceLock<Vec<Route>> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str::<Table>(include_str!("../routes.json"))
            .expect("shared/hosts/lambda/routes.json is valid (a test parses it)")
            .routes
    })
}

/// A path as API Gateway routes it: parameters unnamed, and the `:action` after a parameter
/// dropped (API Gateway cannot route on a suffix inside a segment, so `/tasks/{id}:cancel`
/// reaches the function behind `/tasks/{id}`).
fn path_shape(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "{}"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// What a function does with the push signing keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyUse {
    /// Nothing: no keys are read.
    None,
    /// Publishes them in the JWKS and signs the card with them (the functions serving a
    /// card). A secret with no keys yet gets its first key from whichever function needs one
    /// first, this one or the push function (see [`KeyUse::Sign`]).
    Publish,
    /// Signs pushes with them (the push function). The stack's secret starts as a placeholder
    /// with no keys; the first function to read it so generates the first key into it, under
    /// a fixed version token, so that functions doing it at once end up with one key.
    Sign,
}
