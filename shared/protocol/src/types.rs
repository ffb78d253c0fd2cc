//! Core A2A objects: Task, Message, Part, Artifact, events and the stream wrapper.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

pub use crate::bytes::Bytes;
use crate::error::A2AError;

/// A free-form JSON object (`google.protobuf.Struct`).
pub type Metadata = Map<String, Value>;

macro_rules! proto_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $num:literal => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub enum $name {
            #[default]
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in proto number order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The proto name, as written on the wire.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }

            /// The proto number.
            pub fn number(self) -> i32 {
                match self { $(Self::$variant => $num),+ }
            }

            /// Parses the proto name or number (ProtoJSON accepts both).
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some(Self::$variant),)+
                    other => other.parse::<i32>().ok().and_then(Self::from_number),
                }
            }

            /// Looks up a value by proto number.
            pub fn from_number(n: i32) -> Option<Self> {
                match n { $($num => Some(Self::$variant),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                match Value::deserialize(d)? {
                    Value::String(s) => Self::parse(&s).ok_or_else(|| {
                        de::Error::custom(format!("unknown {} value {s:?}", stringify!($name)))
                    }),
                    Value::Number(n) => n
                        .as_i64()
                        .and_then(|n| i32::try_from(n).ok())
                        .and_then(Self::from_number)
                        .ok_or_else(|| de::Error::custom(format!("unknown {} number {n}", stringify!($name)))),
                    Value::Null => Ok(Self::default()),
                    other => Err(de::Error::custom(format!(
                        "{} must be a string, got {other}", stringify!($name)
                    ))),
                }
            }
        }
    };
}

proto_enum!(
    /// Who sent a message.
    Role {
        /// Not set.
        Unspecified = 0 => "ROLE_UNSPECIFIED",
        /// The client.
        User = 1 => "ROLE_USER",
        /// The agent.
        Agent = 2 => "ROLE_AGENT",
    }
);

proto_enum!(
    /// The lifecycle state of a task.
    TaskState {
        /// Not set.
        Unspecified = 0 => "TASK_STATE_UNSPECIFIED",
        /// Accepted, not started.
        Submitted = 1 => "TASK_STATE_SUBMITTED",
        /// Being worked on.
        Working = 2 => "TASK_STATE_WORKING",
        /// Done (terminal).
        Completed = 3 => "TASK_STATE_COMPLETED",
        /// Ended in failure (terminal).
        Failed = 4 => "TASK_STATE_FAILED",
        /// Canceled (terminal).
        Canceled = 5 => "TASK_STATE_CANCELED",
        /// Waits for the client's next message.
        InputRequired = 6 => "TASK_STATE_INPUT_REQUIRED",
        /// The agent declined it (terminal).
        Rejected = 7 => "TASK_STATE_REJECTED",
        /// Waits for the client to authenticate.
        AuthRequired = 8 => "TASK_STATE_AUTH_REQUIRED",
    }
);

impl TaskState {
    /// COMPLETED, FAILED, CANCELED and REJECTED: nothing may follow them.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Canceled | Self::Rejected
        )
    }

    /// INPUT_REQUIRED and AUTH_REQUIRED: the task waits for the client.
    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }

    /// Whether a status update may move a task from `self` to `next` (digest §6).
    pub fn can_move_to(self, next: TaskState) -> bool {
        if self.is_terminal() || next == Self::Unspecified {
            return false;
        }
        match self {
            Self::Unspecified => true,
            Self::Submitted | Self::Working => next != Self::Submitted,
            Self::InputRequired | Self::AuthRequired => {
                next == Self::Working || next == self || next.is_terminal()
            }
            _ => false,
        }
    }
}

/// A `google.protobuf.Timestamp`: RFC 3339 in UTC, written with milliseconds and `Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub DateTime<Utc>);

impl Timestamp {
    /// The current time, truncated to milliseconds so it survives a round trip unchanged.
    pub fn now() -> Self {
        Self::from_millis(Utc::now().timestamp_millis())
    }

    /// Milliseconds since the Unix epoch.
    pub fn millis(self) -> i64 {
        self.0.timestamp_millis()
    }

    /// Builds a timestamp from milliseconds since the Unix epoch.
    pub fn from_millis(ms: i64) -> Self {
        Self(DateTime::from_timestamp_millis(ms).unwrap_or_default())
    }

    /// Parses RFC 3339 (any offset is converted to UTC).
    pub fn parse(text: &str) -> Result<Self, A2AError> {
        DateTime::parse_from_rfc3339(text)
            .map(|t| Self(t.with_timezone(&Utc)))
            .map_err(|e| A2AError::invalid_params(format!("invalid timestamp {text:?}: {e}")))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Millis, true))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Timestamp::parse(&text).map_err(|e| de::Error::custom(e.message()))
    }
}

/// Reads a `null` member as the field's default, exactly like an absent one: ProtoJSON says so,
/// and the official JS client sends `null` for unset fields. Put on every defaulted field that is
/// not an `Option` (serde already reads `null` as `None` there).
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// One piece of content: exactly one of `text`, `raw`, `url` or `data`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Bytes, inline (base64 in JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Bytes>,
    /// A URL where the content is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Structured JSON content.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_value"
    )]
    pub data: Option<Value>,
    /// Metadata of this part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// The file name of a `raw` or `url` part.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub filename: String,
    /// The media type of the content (`text/plain`, …).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    #[serde(alias = "media_type")]
    pub media_type: String,
}

/// `data` is any JSON value, `null` included: a present member is `Some`, even when null.
fn present_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// A part holding raw bytes.
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            raw: Some(Bytes(bytes.into())),
            ..Self::default()
        }
    }

    /// A part pointing at a URL.
    pub fn url(url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::default()
        }
    }

    /// A part holding structured data.
    pub fn data(value: Value) -> Self {
        Self {
            data: Some(value),
            ..Self::default()
        }
    }

    /// Checks the oneof: exactly one content member.
    pub fn validate(&self, field: &str) -> Result<(), A2AError> {
        let present = [
            self.text.is_some(),
            self.raw.is_some(),
            self.url.is_some(),
            self.data.is_some(),
        ]
        .iter()
        .filter(|p| **p)
        .count();
        match present {
            1 => Ok(()),
            0 => Err(A2AError::invalid_params(format!(
                "{field} has no content: set one of text, raw, url or data"
            ))),
            _ => Err(A2AError::invalid_params(format!(
                "{field} has more than one of text, raw, url and data"
            ))),
        }
    }
}

/// One message between a client and the agent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The message's id, chosen by its sender.
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "message_id")]
    pub message_id: String,
    /// The conversation it belongs to.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// The task it is about, if any.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// Who sent it: the user (client) or the agent.
    #[serde(default, deserialize_with = "null_as_default")]
    pub role: Role,
    /// The content.
    #[serde(default, deserialize_with = "null_as_default")]
    pub parts: Vec<Part>,
    /// Metadata of the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// URIs of the extensions that contributed to it.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
    /// Other tasks it refers to.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(alias = "reference_task_ids")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// An agent message with one text part.
    pub fn agent_text(text: impl Into<String>) -> Self {
        Self {
            message_id: String::new(),
            role: Role::Agent,
            parts: vec![Part::text(text)],
            ..Self::default()
        }
    }

    /// A user message with one text part.
    pub fn user_text(message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            message_id: message_id.into(),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Self::default()
        }
    }

    /// The first text part, if any.
    pub fn first_text(&self) -> Option<&str> {
        self.parts.iter().find_map(|p| p.text.as_deref())
    }

    /// Checks the REQUIRED fields.
    pub fn validate(&self, field: &str) -> Result<(), A2AError> {
        if self.message_id.is_empty() {
            return Err(A2AError::invalid_params(format!(
                "{field}.messageId is required"
            )));
        }
        if self.role == Role::Unspecified {
            return Err(A2AError::invalid_params(format!(
                "{field}.role is required (ROLE_USER or ROLE_AGENT)"
            )));
        }
        if self.parts.is_empty() {
            return Err(A2AError::invalid_params(format!(
                "{field}.parts must hold at least one part"
            )));
        }
        for (i, part) in self.parts.iter().enumerate() {
            part.validate(&format!("{field}.parts[{i}]"))?;
        }
        Ok(())
    }
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// The artifact's id, unique in its task.
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "artifact_id")]
    pub artifact_id: String,
    /// A name for people.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    /// What it is.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// The content.
    #[serde(default, deserialize_with = "null_as_default")]
    pub parts: Vec<Part>,
    /// Metadata of the artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// URIs of the extensions that contributed to it.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
    /// A2A 1.1 (draft): the task's generation when the artifact first appeared (0, not sent,
    /// for 1.0 clients).
    #[serde(default, with = "crate::int64", skip_serializing_if = "is_zero")]
    pub start_generation: i64,
    /// A2A 1.1 (draft): the task's generation when it was completed; 0 (not sent) while it
    /// is still streaming, and for 1.0 clients.
    #[serde(default, with = "crate::int64", skip_serializing_if = "is_zero")]
    pub end_generation: i64,
}

/// The state of a task, with the message that explains it and when it was set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The lifecycle state.
    #[serde(default, deserialize_with = "null_as_default")]
    pub state: TaskState,
    /// The agent's message with this status (a question, a reason, progress).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When the status was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
}

/// A unit of work the agent does for a client.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task's id.
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    /// The conversation it belongs to.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// Where it stands.
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: TaskStatus,
    /// What it produced.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub artifacts: Vec<Artifact>,
    /// The messages of the task, oldest first.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub history: Vec<Message>,
    /// Metadata of the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// A2A 1.1 (draft): the task's generation, 1 on creation and one more per change (our log's
    /// sequence number). 0 (not sent) for 1.0 clients and for tasks read before it was kept.
    #[serde(default, with = "crate::int64", skip_serializing_if = "is_zero")]
    pub generation: i64,
    /// A2A 1.1 (draft): the task's client messages and statuses in generation order, a
    /// projection of its log made for 1.1 answers (never stored; none for 1.0 clients).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub timeline: Vec<TimelineEntry>,
}

impl Task {
    /// Keeps only the `n` most recent history messages (`historyLength`). `None` keeps all.
    pub fn truncate_history(&mut self, history_length: Option<i32>) {
        if let Some(n) = history_length {
            let n = usize::try_from(n).unwrap_or(0);
            let len = self.history.len();
            if len > n {
                self.history.drain(..len - n);
            }
        }
    }
}

/// One entry of a task's timeline: a client message or an agent status (the proto's `oneof
/// entry`, so exactly one is set), and the task's generation once it was appended. An entry
/// with neither is of a kind this crate does not know (a later draft's): readers skip it, as
/// the draft requires, since unknown members are ignored on input.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    /// A client message (`ROLE_USER`) recorded in the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// An agent status: the state, with the agent's message at that point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    /// The task's generation after this entry was appended: entries increase by it, with
    /// gaps (artifact updates advance it too).
    #[serde(default, with = "crate::int64")]
    pub generation: i64,
}

/// A change of a task's status.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task's id.
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The task's context.
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// The new status.
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: TaskStatus,
    /// Metadata of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// A2A 1.1 (draft): the task's generation after this event (0, not sent, for 1.0 clients).
    #[serde(default, with = "crate::int64", skip_serializing_if = "is_zero")]
    pub generation: i64,
}

/// A new artifact, a replacement, or a chunk appended to one.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task's id.
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The task's context.
    #[serde(default, deserialize_with = "null_as_default")]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// The artifact, or the chunk of it.
    #[serde(default, deserialize_with = "null_as_default")]
    pub artifact: Artifact,
    /// Whether the parts add to the artifact of the same id (otherwise they replace it).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_false"
    )]
    pub append: bool,
    /// Whether this is the artifact's last chunk.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_false"
    )]
    #[serde(alias = "last_chunk")]
    pub last_chunk: bool,
    /// Metadata of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// A2A 1.1 (draft): the task's generation after this event (0, not sent, for 1.0 clients).
    #[serde(default, with = "crate::int64", skip_serializing_if = "is_zero")]
    pub generation: i64,
}

/// One item of a stream, and the body of a push notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// The task (the first event of a stream about one).
    Task(Task),
    /// A direct message reply.
    Message(Message),
    /// A status change.
    StatusUpdate(TaskStatusUpdateEvent),
    /// A new artifact, a replacement or a chunk.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// The result of SendMessage: the task, or a direct reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    /// The task the message started or continued.
    Task(Task),
    /// A direct reply, without a task.
    Message(Message),
}

/// How the push sender authenticates to the webhook (`Authorization: <scheme> <credentials>`).
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// The HTTP authentication scheme (`Bearer`, …).
    #[serde(default, deserialize_with = "null_as_default")]
    pub scheme: String,
    /// The credentials that follow the scheme.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub credentials: String,
}

impl fmt::Debug for AuthenticationInfo {
    // Credentials are secrets: never let them reach a log through Debug.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthenticationInfo")
            .field("scheme", &self.scheme)
            .field("credentials", &"<redacted>")
            .finish()
    }
}

/// Where and how to push a task's updates.
#[derive(Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// The tenant (an opaque routing key), or empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// The config's id (the server picks one when it is empty).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub id: String,
    /// The task whose updates are pushed.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// The webhook to POST each update to.
    #[serde(default, deserialize_with = "null_as_default")]
    pub url: String,
    /// A token the webhook can check, sent with each push.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub token: String,
    /// How the push authenticates to the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
    /// Not an A2A field: the older protocol version of the client that set this config, kept
    /// with it in the store so that its pushes carry the body that version reads. The
    /// service sets it from the request (whatever the request says, through
    /// [`set_protocol`](Self::set_protocol)) and clears it from every answer; 1.0 configs never
    /// have it. The stored name is the one configs were written with before the rename.
    #[serde(
        default,
        rename = "x-a2a-lambda-generation",
        skip_serializing_if = "Option::is_none"
    )]
    pub older_version: Option<crate::compat::OlderVersion>,
    /// Not an A2A field either: set when an A2A 1.1 client set this config, so that its pushes
    /// carry the task's generation. Set and cleared like `older_version`.
    #[serde(default, rename = "x-a2a-lambda-1.1", skip_serializing_if = "is_false")]
    pub v1_1: bool,
    /// Not an A2A field: the W3C `traceparent` of the request that set this config, kept with
    /// it in the store so that its pushes carry the trace of the work they report (read where
    /// the push is made, at no write of its own). Set and cleared like `older_version`.
    #[serde(
        default,
        rename = "x-a2a-lambda-traceparent",
        skip_serializing_if = "Option::is_none"
    )]
    pub traceparent: Option<String>,
}

impl fmt::Debug for TaskPushNotificationConfig {
    // The token is a secret: never let it reach a log through Debug.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskPushNotificationConfig")
            .field("id", &self.id)
            .field("task_id", &self.task_id)
            .field("url", &self.url)
            .field(
                "token",
                &if self.token.is_empty() {
                    ""
                } else {
                    "<redacted>"
                },
            )
            .field("authentication", &self.authentication)
            .finish()
    }
}

impl TaskPushNotificationConfig {
    /// Checks the REQUIRED fields and the URL's form.
    pub fn validate(&self) -> Result<(), A2AError> {
        if self.url.is_empty() {
            return Err(A2AError::invalid_params(
                "push notification config url is required",
            ));
        }
        let lower = self.url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(A2AError::invalid_params(format!(
                "push notification url must be http or https, got {:?}",
                self.url
            )));
        }
        if let Some(auth) = &self.authentication {
            if auth.scheme.trim().is_empty() {
                return Err(A2AError::invalid_params(
                    "push notification authentication.scheme is required",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + fmt::Debug>(value: &T) {
        let json = serde_json::to_value(value).unwrap();
        let back: T = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(&back, value, "round trip of {json}");
    }

    #[test]
    fn generations_are_protojson_int64() {
        // Written as strings, read from strings or numbers, absent when 0 (1.0 clients).
        let mut task = Task {
            id: "t".into(),
            ..Task::default()
        };
        assert!(serde_json::to_value(&task)
            .unwrap()
            .get("generation")
            .is_none());
        task.generation = 7;
        let json = serde_json::to_value(&task).unwrap();
        assert_eq!(json["generation"], "7");
        round_trip(&task);
        let read: Task = serde_json::from_value(json!({"id": "t", "generation": 7})).unwrap();
        assert_eq!(read.generation, 7);
        let bad = serde_json::from_value::<Task>(json!({"id": "t", "generation": "seven"}));
        assert!(bad.unwrap_err().to_string().contains("int64"));
        let get: crate::GetTaskRequest =
            serde_json::from_value(json!({"id": "t", "currentGeneration": "3"})).unwrap();
        assert_eq!(get.current_generation, Some(3));
        let get: crate::GetTaskRequest =
            serde_json::from_value(json!({"id": "t", "currentGeneration": null})).unwrap();
        assert_eq!(get.current_generation, None);
    }

    fn sample_task() -> Task {
        Task {
            generation: 0,
            timeline: Vec::new(),
            id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: Some(Message::agent_text("done")),
                timestamp: Some(Timestamp::from_millis(1_767_225_600_000)),
            },
            artifacts: vec![Artifact {
                artifact_id: "a1".into(),
                name: "echo".into(),
                parts: vec![
                    Part::text("hello"),
                    Part::raw(b"\x00\xffbytes".to_vec()),
                    Part::url("https://example.com/x"),
                    Part::data(json!({"k": [1, 2]})),
                ],
                ..Artifact::default()
            }],
            history: vec![Message::user_text("m1", "hi")],
            metadata: Some(json!({"x": 1}).as_object().unwrap().clone()),
        }
    }

    #[test]
    fn task_serializes_as_protojson() {
        let json = serde_json::to_value(sample_task()).unwrap();
        assert_eq!(json["contextId"], "c1");
        assert_eq!(json["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(json["status"]["timestamp"], "2026-01-01T00:00:00.000Z");
        assert_eq!(json["status"]["message"]["role"], "ROLE_AGENT");
        assert_eq!(json["artifacts"][0]["artifactId"], "a1");
        assert_eq!(json["artifacts"][0]["parts"][1]["raw"], "AP9ieXRlcw==");
        assert_eq!(json["artifacts"][0]["parts"][3]["data"]["k"][1], 2);
        assert!(json["artifacts"][0]["parts"][0].get("raw").is_none());
        assert_eq!(json["history"][0]["messageId"], "m1");
    }

    #[test]
    fn every_core_type_round_trips() {
        let task = sample_task();
        round_trip(&task);
        round_trip(&task.status);
        round_trip(&task.artifacts[0]);
        round_trip(&task.history[0]);
        round_trip(&StreamResponse::Task(task.clone()));
        round_trip(&StreamResponse::Message(task.history[0].clone()));
        round_trip(&StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            generation: 0,
            task_id: "t1".into(),
            context_id: "c1".into(),
            status: task.status.clone(),
            metadata: None,
        }));
        round_trip(&StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            generation: 0,
            task_id: "t1".into(),
            context_id: "c1".into(),
            artifact: task.artifacts[0].clone(),
            append: true,
            last_chunk: true,
            metadata: None,
        }));
        round_trip(&SendMessageResponse::Task(task));
        round_trip(&TaskPushNotificationConfig {
            v1_1: false,
            tenant: String::new(),
            id: "p1".into(),
            task_id: "t1".into(),
            url: "https://example.com/hook".into(),
            token: "tok".into(),
            authentication: Some(AuthenticationInfo {
                scheme: "Bearer".into(),
                credentials: "secret".into(),
            }),
            older_version: None,
            traceparent: None,
        });
    }

    #[test]
    fn stream_response_is_a_wrapper_oneof() {
        let json =
            serde_json::to_value(StreamResponse::Message(Message::user_text("m", "x"))).unwrap();
        assert!(json.get("message").is_some());
        assert_eq!(json.as_object().unwrap().len(), 1);
    }

    #[test]
    fn input_is_lenient_where_protojson_allows() {
        let msg: Message = serde_json::from_value(json!({
            "message_id": "m", "role": 1, "parts": [{"text": "a"}],
            "unknownField": true, "context_id": "c"
        }))
        .unwrap();
        assert_eq!(msg.message_id, "m");
        assert_eq!(msg.role, Role::User);
        assert_eq!(msg.context_id, "c");
        let part: Part = serde_json::from_value(json!({"raw": "AP9i"})).unwrap();
        assert_eq!(part.raw.unwrap().0, vec![0, 255, 98]);
        let part: Part = serde_json::from_value(json!({"raw": "_-8"})).unwrap();
        assert_eq!(part.raw.unwrap().0, vec![0xff, 0xef]);
        let part: Part = serde_json::from_value(json!({"data": null})).unwrap();
        assert_eq!(part.data, Some(Value::Null));
        let ts: Timestamp = serde_json::from_value(json!("2026-01-01T01:00:00+01:00")).unwrap();
        assert_eq!(ts.to_string(), "2026-01-01T00:00:00.000Z");
    }

    #[test]
    fn enums_reject_unknown_names() {
        assert!(serde_json::from_value::<TaskState>(json!("TASK_STATE_NOPE")).is_err());
        assert!(serde_json::from_value::<TaskState>(json!(42)).is_err());
        assert_eq!(TaskState::parse("6"), Some(TaskState::InputRequired));
    }

    #[test]
    fn required_fields_are_validated_with_clear_messages() {
        let mut msg = Message::user_text("", "x");
        assert!(msg
            .validate("message")
            .unwrap_err()
            .message()
            .contains("messageId"));
        msg.message_id = "m".into();
        msg.parts.clear();
        assert!(msg
            .validate("message")
            .unwrap_err()
            .message()
            .contains("parts"));
        msg.parts.push(Part::default());
        assert!(msg
            .validate("message")
            .unwrap_err()
            .message()
            .contains("no content"));
        msg.parts[0] = Part {
            text: Some("a".into()),
            url: Some("u".into()),
            ..Part::default()
        };
        assert!(msg
            .validate("message")
            .unwrap_err()
            .message()
            .contains("more than one"));
        msg.parts[0] = Part::text("ok");
        msg.role = Role::Unspecified;
        assert!(msg
            .validate("message")
            .unwrap_err()
            .message()
            .contains("role"));
    }

    #[test]
    fn secrets_do_not_reach_debug_output() {
        let cfg = TaskPushNotificationConfig {
            token: "tok-secret".into(),
            authentication: Some(AuthenticationInfo {
                scheme: "Bearer".into(),
                credentials: "cred-secret".into(),
            }),
            ..Default::default()
        };
        let debug = format!("{cfg:?}");
        assert!(
            !debug.contains("tok-secret") && !debug.contains("cred-secret"),
            "{debug}"
        );
    }

    #[test]
    fn history_truncation_keeps_the_most_recent() {
        let mut task = sample_task();
        task.history = (0..5)
            .map(|i| Message::user_text(format!("m{i}"), "x"))
            .collect();
        task.truncate_history(Some(2));
        assert_eq!(
            task.history
                .iter()
                .map(|m| m.message_id.as_str())
                .collect::<Vec<_>>(),
            ["m3", "m4"]
        );
        task.truncate_history(Some(0));
        assert!(task.history.is_empty());
        assert!(serde_json::to_value(&task)
            .unwrap()
            .get("history")
            .is_none());
    }
}
