//! A client for A2A 1.0 agents.
//!
//! - [`Client::connect`] resolves the agent's card (`/.well-known/agent-card.json`, then the
//!   legacy `/.well-known/agent.json`) and picks an interface: JSON-RPC or HTTP+JSON, in the
//!   order you prefer, protocol version 1.0, with the interface's `tenant` on every request.
//! - Every A2A 1.0 operation, typed with the [`a2a_protocol`] wire types, on both bindings;
//!   [`Client::call`] and [`Client::open_events`] take and give raw JSON for anything else.
//! - Streams ([`Client::send_streaming_message`], [`Client::subscribe_to_task`]) are a
//!   [`futures::Stream`] of [`StreamResponse`] that resubscribes with `Last-Event-ID` when the
//!   connection drops ([`TaskStream`]).
//! - Credentials ([`Auth`]): API key in a header or the query, bearer, basic, OAuth2 client
//!   credentials with token refresh. They go to the origin they were given for and to no
//!   other a redirect or a card names ([`ClientBuilder::share_credentials`]). A timeout per
//!   request, and retries with backoff for idempotent calls only ([`RetryPolicy`] says which
//!   and why).
//! - What an agent sends is untrusted: every read is bounded ([`Limits`]), every exchange
//!   timed (a call as a whole, a stream's silence and its whole length), and a stream's events
//!   must be about its task.
//! - Errors are typed: [`Error::Agent`] carries the agent's [`A2AError`], the others say what
//!   went wrong around it.
//! - [`webhook::WebhookReceiver`] receives push notifications and verifies a2a-lambda's
//!   signed pushes with `a2a-push-verify`.
//!
//! ```no_run
//! # async fn example() -> Result<(), a2a_client::Error> {
//! use a2a_client::{Client, StreamResponse};
//! use futures::StreamExt;
//!
//! let client = Client::connect("http://127.0.0.1:9000").await?;
//! let mut events = client.send_streaming_message(client.text("slow 5 200")).await?;
//! while let Some(event) = events.next().await {
//!     if let StreamResponse::ArtifactUpdate(update) = event? {
//!         for part in &update.artifact.parts {
//!             print!("{}", part.text.as_deref().unwrap_or_default());
//!         }
//!     }
//! }
//! # Ok(())
//! # }
//! ```

pub mod auth;
mod binding;
pub mod card;
pub mod error;
mod limits;
mod scope;
pub mod sse;
pub mod stream;
pub mod transport;
pub mod webhook;

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

pub use a2a_protocol::{
    A2AError, AgentCard, AgentInterface, CancelTaskRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, Message, Part, Role, SecurityScheme,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig, TaskPushNotificationConfigRef,
    TaskState,
};
pub use a2a_protocol::{HttpVerb, Operation, TRACE_ID_METADATA};
pub use auth::{ApiKeyLocation, Auth, OAuth2ClientCredentials};
pub use card::{card_urls, CardFetch, CardResolver, CardSignature, FetchedCard, MAX_CARD_MAX_AGE};
pub use error::{AgentError, Error, Limit};
pub use limits::Limits;
pub use sse::{EventReader, SseEvent};
pub use stream::{ReconnectPolicy, TaskStream};
pub use transport::{Binding, RetryPolicy, StreamOptions};

use transport::Transport;

/// How to build a [`Client`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    http: Option<reqwest::Client>,
    auth: Auth,
    timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    stream_timeout: Option<Duration>,
    limits: Limits,
    share_credentials: bool,
    /// The origin the credentials were given for: the URL passed to [`Self::connect`].
    credential_origin: Option<url::Origin>,
    retry: RetryPolicy,
    reconnect: ReconnectPolicy,
    preference: Vec<Binding>,
    headers: HeaderMap,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self {
            http: None,
            auth: Auth::None,
            timeout: Some(Duration::from_secs(60)),
            idle_timeout: Some(Duration::from_secs(60)),
            stream_timeout: None,
            limits: Limits::default(),
            share_credentials: false,
            credential_origin: None,
            retry: RetryPolicy::default(),
            reconnect: ReconnectPolicy::default(),
            preference: vec![Binding::JsonRpc, Binding::HttpJson],
            headers: HeaderMap::new(),
        }
    }
}

impl ClientBuilder {
    /// The credentials to send.
    pub fn auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// The longest a unary call may take as a whole (its answer's last byte included), a card
    /// fetch, and the wait for the head of a stream; `None` waits forever. Default 60 s: a
    /// blocking SendMessage lasts as long as the task.
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// The longest a stream may send nothing at all (keep-alive comments count); after that
    /// its connection counts as dropped and the stream resubscribes. Default 60 s; `None`
    /// waits forever.
    pub fn idle_timeout(mut self, idle: Option<Duration>) -> Self {
        self.idle_timeout = idle;
        self
    }

    /// The longest a whole stream may last, resubscriptions included; after that it ends with
    /// [`Error::Timeout`]. Default `None`: as long as the task.
    pub fn stream_timeout(mut self, total: Option<Duration>) -> Self {
        self.stream_timeout = total;
        self
    }

    /// How much of what the agent sends is read (see [`Limits`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Whether the credentials may go to another origin (scheme, host, port) than the one
    /// they were given for: the one of the URL passed to [`Self::connect`], or of the interface
    /// of [`Self::for_card`] and [`Self::for_interface`]. Default `false`: with credentials
    /// set, a redirect to another origin is not followed, and a card whose interface is on
    /// another origin than the card itself is refused ([`Error::OtherOrigin`]). Without
    /// credentials both are followed. (An HTTP client of your own, [`Self::http_client`],
    /// redirects as you built it.)
    pub fn share_credentials(mut self, share: bool) -> Self {
        self.share_credentials = share;
        self
    }

    /// Which calls are retried, and how.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// How streams resume after a dropped connection.
    pub fn reconnect(mut self, reconnect: ReconnectPolicy) -> Self {
        self.reconnect = reconnect;
        self
    }

    /// The bindings to use, most preferred first (default: JSON-RPC, then HTTP+JSON).
    pub fn prefer(mut self, bindings: &[Binding]) -> Self {
        self.preference = bindings.to_vec();
        self
    }

    /// A header to send on every request (an extension's `A2A-Extensions`, a trace id).
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// The HTTP client to use (its own timeouts, proxies, TLS roots).
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.http = Some(http);
        self
    }

    fn http(&self) -> Result<reqwest::Client, Error> {
        match &self.http {
            Some(http) => Ok(http.clone()),
            None => {
                let guard = !self.share_credentials && !self.auth.is_none();
                reqwest::Client::builder()
                    .redirect(scope::redirect_policy(guard))
                    .build()
                    .map_err(|e| Error::Usage(format!("building the HTTP client: {e}")))
            }
        }
    }

    /// A resolver of cards with this builder's HTTP client, credentials, headers, timeout and
    /// body limit.
    pub fn card_resolver(&self) -> Result<CardResolver, Error> {
        Ok(
            CardResolver::new(self.http()?, self.auth.clone(), self.timeout)
                .max_body_bytes(self.limits.max_body_bytes)
                .headers(self.headers.clone()),
        )
    }

    /// Resolves the card of the agent at `url` and connects to its preferred interface.
    pub async fn connect(self, url: &str) -> Result<Client, Error> {
        let fetched = self.card_resolver()?.resolve(url).await?;
        self.for_fetched_card(fetched)
    }

    /// Connects to the preferred interface of a card fetched from `fetched.url`: the
    /// credentials are for that URL's origin, so an interface on another one is refused
    /// unless [`Self::share_credentials`] is set (or no credentials are).
    pub fn for_fetched_card(mut self, fetched: FetchedCard) -> Result<Client, Error> {
        self.credential_origin = scope::origin_of(&fetched.url);
        self.for_card(fetched.card)
    }

    /// Connects to the preferred interface of a card you already have. When the card also
    /// offers that interface (same URL and binding) in the A2A 1.1 draft, the client speaks
    /// 1.1 there (`A2A-Version: 1.1`): task generations, long-polling GetTask
    /// ([`Client::wait_for_change`]) and `ifGenerationMatch`.
    pub fn for_card(self, card: AgentCard) -> Result<Client, Error> {
        let (interface, binding) = card::choose_interface(&card, &self.preference)?;
        let mut interface = interface.clone();
        if card::offers_1_1(&card, &interface) {
            interface.protocol_version = a2a_protocol::PROTOCOL_VERSION_1_1.to_string();
        }
        let mut client = self.build(interface, binding)?;
        client.card = Some(card);
        Ok(client)
    }

    /// Connects to one interface, without a card.
    pub fn for_interface(self, interface: AgentInterface) -> Result<Client, Error> {
        let binding = Binding::parse(&interface.protocol_binding).ok_or_else(|| {
            Error::Usage(format!(
                "unsupported protocol binding {:?} (JSONRPC or HTTP+JSON)",
                interface.protocol_binding
            ))
        })?;
        self.build(interface, binding)
    }

    fn build(self, interface: AgentInterface, binding: Binding) -> Result<Client, Error> {
        transport::parse_url(&interface.url)?;
        if let Some(given) = &self.credential_origin {
            let named = scope::origin_of(&interface.url);
            if !self.share_credentials && !self.auth.is_none() && named.as_ref() != Some(given) {
                return Err(Error::OtherOrigin(format!(
                    "the agent card of {} names its {} interface at {}, another origin: not \
                     used, because the credentials given for {} would go there",
                    given.ascii_serialization(),
                    binding.as_str(),
                    interface.url,
                    given.ascii_serialization(),
                )));
            }
        }
        let http = self.http()?;
        let settings = transport::Settings {
            auth: self.auth,
            timeout: self.timeout,
            idle_timeout: self.idle_timeout,
            stream_timeout: self.stream_timeout,
            retry: self.retry,
            headers: self.headers,
            limits: self.limits,
        };
        Ok(Client {
            transport: Transport::new(interface, binding, http, settings),
            reconnect: self.reconnect,
            card: None,
        })
    }
}

/// A client of one agent interface. Cheap to clone; clones share connections.
#[derive(Debug, Clone)]
pub struct Client {
    transport: Transport,
    reconnect: ReconnectPolicy,
    card: Option<AgentCard>,
}

fn to_params(request: &impl Serialize) -> Result<Value, Error> {
    serde_json::to_value(request).map_err(|e| Error::Usage(format!("encoding the request: {e}")))
}

fn decode<T: DeserializeOwned>(op: Operation, value: Value) -> Result<T, Error> {
    serde_json::from_value(value.clone())
        .map_err(|e| Error::InvalidResponse(format!("{op}: unexpected result ({e}): {value}")))
}

impl Client {
    /// A builder with the defaults.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Resolves the card at `url` and connects with the defaults.
    pub async fn connect(url: &str) -> Result<Self, Error> {
        Self::builder().connect(url).await
    }

    /// The card this client was made from, if any.
    pub fn card(&self) -> Option<&AgentCard> {
        self.card.as_ref()
    }

    /// The interface in use.
    pub fn interface(&self) -> &AgentInterface {
        &self.transport.interface
    }

    /// The binding in use.
    pub fn binding(&self) -> Binding {
        self.transport.binding
    }

    /// A SendMessageRequest of one user text message with a new `messageId`.
    pub fn text(&self, text: &str) -> SendMessageRequest {
        SendMessageRequest {
            message: Some(Message::user_text(new_message_id(), text)),
            ..SendMessageRequest::default()
        }
    }

    /// Calls a unary operation with raw JSON (the request's fields) and returns the raw result.
    pub async fn call(&self, op: Operation, params: Value) -> Result<Value, Error> {
        self.transport.call(op, params).await
    }

    /// Opens a streaming operation with raw JSON and returns its SSE events as they come.
    pub async fn open_events(
        &self,
        op: Operation,
        params: &Value,
        options: &StreamOptions,
    ) -> Result<EventReader, Error> {
        self.transport.open_stream(op, params, options).await
    }

    /// SendMessage.
    pub async fn send_message(
        &self,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse, Error> {
        let op = Operation::SendMessage;
        decode(op, self.call(op, to_params(&request)?).await?)
    }

    /// SendStreamingMessage: the task's events until it stops.
    pub async fn send_streaming_message(
        &self,
        request: SendMessageRequest,
    ) -> Result<TaskStream, Error> {
        let params = to_params(&request)?;
        let task_id = request
            .message
            .as_ref()
            .map(|m| m.task_id.clone())
            .filter(|id| !id.is_empty());
        let bounds = self.transport.new_stream_bounds();
        let reader = self
            .transport
            .open_stream_within(
                Operation::SendStreamingMessage,
                &params,
                &StreamOptions::default(),
                bounds,
            )
            .await?;
        Ok(TaskStream::new(
            self.transport.clone(),
            self.reconnect.clone(),
            (reader, bounds),
            task_id,
            None,
        ))
    }

    /// Whether this client speaks the A2A 1.1 draft with the agent (its card offers it).
    pub fn speaks_1_1(&self) -> bool {
        self.transport.version() == a2a_protocol::PROTOCOL_VERSION_1_1
    }

    /// Long-polling GetTask (A2A 1.1): the task once its generation is above `generation`,
    /// or as it stands when the agent stops holding the request (its bound, a terminal
    /// task). `Usage` error unless the client speaks 1.1 ([`Self::speaks_1_1`]).
    pub async fn wait_for_change(&self, id: &str, generation: i64) -> Result<Task, Error> {
        if !self.speaks_1_1() {
            return Err(Error::Usage(
                "the agent does not offer A2A 1.1, which long-polling needs".into(),
            ));
        }
        self.get_task(GetTaskRequest {
            id: id.to_string(),
            current_generation: Some(generation),
            ..GetTaskRequest::default()
        })
        .await
    }

    /// GetTask.
    pub async fn get_task(&self, request: GetTaskRequest) -> Result<Task, Error> {
        let op = Operation::GetTask;
        decode(op, self.call(op, to_params(&request)?).await?)
    }

    /// ListTasks (one page; follow `next_page_token`).
    pub async fn list_tasks(&self, request: ListTasksRequest) -> Result<ListTasksResponse, Error> {
        let op = Operation::ListTasks;
        decode(op, self.call(op, to_params(&request)?).await?)
    }

    /// CancelTask.
    pub async fn cancel_task(&self, request: CancelTaskRequest) -> Result<Task, Error> {
        let op = Operation::CancelTask;
        decode(op, self.call(op, to_params(&request)?).await?)
    }

    /// SubscribeToTask, optionally resuming after the SSE event `last_event_id`.
    pub async fn subscribe_to_task(
        &self,
        request: SubscribeToTaskRequest,
        last_event_id: Option<String>,
    ) -> Result<TaskStream, Error> {
        let options = StreamOptions {
            last_event_id: last_event_id.clone(),
            rest_verb: None,
        };
        let bounds = self.transport.new_stream_bounds();
        let reader = self
            .transport
            .open_stream_within(
                Operation::SubscribeToTask,
                &to_params(&request)?,
                &options,
                bounds,
            )
            .await?;
        Ok(TaskStream::new(
            self.transport.clone(),
            self.reconnect.clone(),
            (reader, bounds),
            Some(request.id),
            last_event_id,
        ))
    }

    /// CreateTaskPushNotificationConfig.
    pub async fn create_push_config(
        &self,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, Error> {
        let op = Operation::CreateTaskPushNotificationConfig;
        decode(op, self.call(op, to_params(&config)?).await?)
    }

    /// Asks the agent to push `task_id`'s updates to `url`, with `token` echoed in each push.
    pub async fn set_push(
        &self,
        task_id: &str,
        url: &str,
        token: Option<&str>,
    ) -> Result<TaskPushNotificationConfig, Error> {
        self.create_push_config(TaskPushNotificationConfig {
            task_id: task_id.into(),
            url: url.into(),
            token: token.unwrap_or_default().into(),
            ..TaskPushNotificationConfig::default()
        })
        .await
    }

    /// GetTaskPushNotificationConfig.
    pub async fn get_push_config(
        &self,
        request: TaskPushNotificationConfigRef,
    ) -> Result<TaskPushNotificationConfig, Error> {
        let op = Operation::GetTaskPushNotificationConfig;
        decode(op, self.call(op, to_params(&request)?).await?)
    }

    /// ListTaskPushNotificationConfigs.
    pub async fn list_push_configs(
        &self,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, Error> {
        let op = Operation::ListTaskPushNotificationConfigs;
        let mut params = to_params(&request)?;
        // pageSize 0 means "the server's default": leave it out rather than send 0.
        if let Some(fields) = params.as_object_mut() {
            if fields.get("pageSize") == Some(&json!(0)) {
                fields.remove("pageSize");
            }
        }
        decode(op, self.call(op, params).await?)
    }

    /// DeleteTaskPushNotificationConfig.
    pub async fn delete_push_config(
        &self,
        request: TaskPushNotificationConfigRef,
    ) -> Result<(), Error> {
        self.call(
            Operation::DeleteTaskPushNotificationConfig,
            to_params(&request)?,
        )
        .await
        .map(drop)
    }

    /// GetExtendedAgentCard.
    pub async fn get_extended_agent_card(&self) -> Result<AgentCard, Error> {
        let op = Operation::GetExtendedAgentCard;
        decode(op, self.call(op, json!({})).await?)
    }
}

/// A new random `messageId`.
pub fn new_message_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The text of a message's or artifact's parts, joined.
pub fn text_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect::<Vec<_>>()
        .join("")
}
