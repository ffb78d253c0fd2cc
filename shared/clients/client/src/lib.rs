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
//!   credentials with token refresh. A timeout per request, and retries with backoff for
//!   idempotent calls only ([`RetryPolicy`] says which and why).
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
pub mod card;
pub mod error;
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
pub use a2a_protocol::{HttpVerb, Operation};
pub use auth::{ApiKeyLocation, Auth, OAuth2ClientCredentials};
pub use card::{CardFetch, CardResolver, FetchedCard};
pub use error::{AgentError, Error};
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

    /// The longest a unary call (or the head of a stream) may take; `None` waits forever.
    /// Default 60 s: a blocking SendMessage lasts as long as the task.
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
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
            None => reqwest::Client::builder()
                .build()
                .map_err(|e| Error::Usage(format!("building the HTTP client: {e}"))),
        }
    }

    /// A resolver of cards with this builder's HTTP client, credentials and timeout.
    pub fn card_resolver(&self) -> Result<CardResolver, Error> {
        Ok(CardResolver::new(
            self.http()?,
            self.auth.clone(),
            self.timeout,
        ))
    }

    /// Resolves the card of the agent at `url` and connects to its preferred interface.
    pub async fn connect(self, url: &str) -> Result<Client, Error> {
        let fetched = self.card_resolver()?.resolve(url).await?;
        self.for_card(fetched.card)
    }

    /// Connects to the preferred interface of a card you already have.
    pub fn for_card(self, card: AgentCard) -> Result<Client, Error> {
        let (interface, binding) = card::choose_interface(&card, &self.preference)?;
        let interface = interface.clone();
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
        let http = self.http()?;
        Ok(Client {
            transport: Transport::new(
                interface,
                binding,
                http,
                self.auth,
                self.timeout,
                self.retry,
                self.headers,
            ),
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
        let reader = self
            .open_events(
                Operation::SendStreamingMessage,
                &params,
                &StreamOptions::default(),
            )
            .await?;
        Ok(TaskStream::new(
            self.transport.clone(),
            self.reconnect.clone(),
            reader,
            task_id,
            None,
        ))
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
        let reader = self
            .open_events(Operation::SubscribeToTask, &to_params(&request)?, &options)
            .await?;
        Ok(TaskStream::new(
            self.transport.clone(),
            self.reconnect.clone(),
            reader,
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
