//! The [`RemoteAgents`] port: how an agent of ours calls another A2A agent. The network adapter
//! implements it with the A2A client, behind the SSRF guard and with the credentials the host
//! configured for each agent; the core only says what to send and what to follow.

use std::fmt;
use std::time::Duration;

use a2a_protocol::{Message, SendMessageResponse, Task, TaskPushNotificationConfig};
use async_trait::async_trait;
use tracing::Instrument as _;

use crate::ports::{Owner, RemoteTaskRef, Wait, WaitFor};

/// Why a call to another agent did not work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteError {
    /// The agent's URL is not one this host may call (the SSRF guard, or the allow-list), or
    /// calling agents is not configured: nothing was sent.
    #[error("{0}")]
    Refused(String),
    /// The agent could not be reached, or did not answer in time: worth trying again.
    #[error("{0}")]
    Unavailable(String),
    /// The agent answered with an A2A error or with something that is not A2A.
    #[error("{0}")]
    Answered(String),
}

/// What a remote agent answered a message: its task as it stands (or a direct message), and
/// whether it will push the task's updates (its card offers pushes and the push config was
/// sent); a remote that does not is polled more often.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteSent {
    /// The answer.
    pub answer: SendMessageResponse,
    /// Whether the remote pushes the task's updates back.
    pub pushes: bool,
}

/// Which call of a durable run a message is: our task, and `{trigger_seq}-{index}` (the
/// message that started the run, and the call's step). A send repeated after a crash has the
/// same key; an agent that cannot name its own tasks (a chat room) has its task named from it,
/// by the adapter that calls it, so that its answers lead back to the wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallKey {
    /// Our task, the one that waits for the call.
    pub task_id: String,
    /// `{trigger_seq}-{index}`: digits and one `-`.
    pub call: String,
}

impl CallKey {
    /// The key of call `index` of the run of our task `task_id` that the message at
    /// `trigger_seq` started.
    pub(crate) fn new(task_id: &str, trigger_seq: u64, index: usize) -> Self {
        Self {
            task_id: task_id.to_owned(),
            call: format!("{trigger_seq}-{index}"),
        }
    }
}

/// A remote task the adapter that called it named from the call's [`CallKey`] (a chat room's
/// task), as an answer about it names it: what `A2aService::relay_named` relays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedCall {
    /// Our task's owner, when the answer names it (ids of an earlier form did); else our
    /// store's relay gate of the task says.
    pub owner: Option<Owner>,
    /// The call.
    pub key: CallKey,
    /// The agent called (its address).
    pub agent: String,
    /// The remote task's id.
    pub task_id: String,
}

impl NamedCall {
    /// Whether `wait` follows this task: it calls this agent for this task.
    pub(crate) fn is_waited_by(&self, wait: &Wait) -> bool {
        matches!(&wait.what, WaitFor::RemoteTask { remote, .. }
            if remote.agent == self.agent && remote.task_id == self.task_id)
    }
}

/// Sends to and follows the tasks of other A2A agents. Every call carries the W3C
/// `traceparent` of the work it belongs to, if any.
#[async_trait]
pub trait RemoteAgents: Send + Sync + fmt::Debug {
    /// Sends `message` to the agent at `agent` (its base URL; its card is at
    /// `/.well-known/agent-card.json` under it) without waiting for the task to stop
    /// (`returnImmediately`), asking it to push the task's updates to `push` when its card
    /// says it pushes. `key` says which call of ours it is (the message's `task_id` is empty
    /// for a new task). Returns the agent's answer: its task as it stands, or a direct message.
    async fn send(
        &self,
        agent: &str,
        key: &CallKey,
        message: Message,
        push: Option<TaskPushNotificationConfig>,
        traceparent: Option<&str>,
    ) -> Result<RemoteSent, RemoteError>;

    /// The remote task as it stands (GetTask).
    async fn get_task(
        &self,
        remote: &RemoteTaskRef,
        traceparent: Option<&str>,
    ) -> Result<Task, RemoteError>;

    /// The id the task of call `key` to `agent` will have, when this port names it itself
    /// (a chat room cannot answer a send with an id: its adapter names the task from the call);
    /// `None` for an agent that names its own tasks. Asked before the wait is written, so that
    /// an answer or a cancel that comes while the message is on its way finds the task.
    fn names_task(&self, _agent: &str, _key: &CallKey) -> Option<String> {
        None
    }

    /// Asks the remote agent to cancel its task (CancelTask). A task that already ended is
    /// not an error.
    async fn cancel_task(
        &self,
        remote: &RemoteTaskRef,
        traceparent: Option<&str>,
    ) -> Result<(), RemoteError>;

    /// Verifies the signature an agent like us puts on its pushes (`A2A-Push-Signature`: a JWT
    /// signed with a key published at `{issuer}/.well-known/jwks.json`) for a push that came to
    /// one of `audiences` (our relay URLs for the task, at least one: where relay URLs point
    /// now, and where they pointed when the remote may have been given its URL) with `body`,
    /// from the agent at `agent`: the issuer must be that agent's origin, and the token's
    /// audience one of them. Called only for pushes that carry a signature (their token was
    /// checked already); `Err` refuses the push, except `Unavailable` (its keys could not be
    /// read now), which asks the sender to try again.
    async fn verify_push(
        &self,
        agent: &str,
        audiences: &[String],
        signature: &str,
        body: &[u8],
    ) -> Result<(), RemoteError>;
}

/// Calls no agent: the default, until the host configures the network adapter.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRemoteAgents;

#[async_trait]
impl RemoteAgents for NoRemoteAgents {
    async fn send(
        &self,
        agent: &str,
        _key: &CallKey,
        _message: Message,
        _push: Option<TaskPushNotificationConfig>,
        _traceparent: Option<&str>,
    ) -> Result<RemoteSent, RemoteError> {
        Err(not_configured(agent))
    }

    async fn get_task(
        &self,
        remote: &RemoteTaskRef,
        _traceparent: Option<&str>,
    ) -> Result<Task, RemoteError> {
        Err(not_configured(&remote.agent))
    }

    async fn cancel_task(
        &self,
        remote: &RemoteTaskRef,
        _traceparent: Option<&str>,
    ) -> Result<(), RemoteError> {
        Err(not_configured(&remote.agent))
    }

    async fn verify_push(
        &self,
        agent: &str,
        _audiences: &[String],
        _signature: &str,
        _body: &[u8],
    ) -> Result<(), RemoteError> {
        Err(not_configured(agent))
    }
}

fn not_configured(agent: &str) -> RemoteError {
    RemoteError::Refused(format!(
        "this server is not configured to call other agents (asked to call {agent})"
    ))
}

/// How long a send to another agent may take, its retries included ([`send_retried`]: three
/// attempts of at most 30 s each, the network adapter's limit, and their pauses), with room to
/// spare. The wait written before the message goes out is not due before then.
pub(crate) const SEND_WINDOW: Duration = Duration::from_secs(120);

/// The pauses before a message the other agent could not take ([`RemoteError::Unavailable`]:
/// unreachable, overloaded, its own trouble of the moment such as its store) is sent again.
const REMOTE_RETRY_PAUSES: [Duration; 2] = [Duration::from_secs(1), Duration::from_secs(3)];

/// `remote.send`, made again after each of [`REMOTE_RETRY_PAUSES`] while the other agent is
/// unavailable: the same message with the same id (derived from the task and the step), which
/// an agent that deduplicates by message id (as this kit's does) takes once. Every other
/// outcome, an answer or a refusal, is returned as it is.
pub(crate) async fn send_retried(
    remote: &dyn RemoteAgents,
    agent: &str,
    key: &CallKey,
    message: &Message,
    push: Option<&TaskPushNotificationConfig>,
    traceparent: Option<&str>,
) -> Result<RemoteSent, RemoteError> {
    crate::retry::after_pauses(
        &REMOTE_RETRY_PAUSES,
        |err| matches!(err, RemoteError::Unavailable(_)),
        || remote.send(agent, key, message.clone(), push.cloned(), traceparent),
        |err| tracing::warn!(%agent, reason = %err, "the other agent could not take the message; it is sent again"),
    )
    .await
}

/// The client span of a call of ours to the agent at `agent` (`method`: `SendMessage`,
/// `GetTask`, `CancelTask`), named after the method as the draft conventions say, with the
/// remote task `task_id` (if named yet) and the agent's URL without its credentials; and the
/// `traceparent` the call carries: the span's own when spans are exported, else `inherited`
/// (the work's). Its parent is the span the call is made in (an execution, the relay of a
/// push, an operation) when that one is exported, else the span `inherited` names (a poll's
/// or a sweep's call, made in no span of ours).
pub(crate) fn client_span(
    method: &'static str,
    agent: &str,
    task_id: &str,
    inherited: Option<&str>,
) -> (tracing::Span, Option<String>) {
    let url = url::Url::parse(agent).ok();
    let span = tracing::trace_span!(
        "call_agent",
        otel.name = method,
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        a2a.method.name = method,
        a2a.message.id = tracing::field::Empty,
        a2a.task.id = tracing::field::Empty,
        a2a.context.id = tracing::field::Empty,
        a2a.task.state = tracing::field::Empty,
        url.full = crate::trace::shown_url(agent),
        server.address = url.as_ref().and_then(|u| u.host_str()).unwrap_or_default(),
        server.port = url
            .as_ref()
            .and_then(|u| u.port_or_known_default())
            .unwrap_or_default(),
    );
    if !task_id.is_empty() {
        span.record("a2a.task.id", task_id);
    }
    crate::trace::continue_trace(&span, inherited);
    let traceparent = crate::trace::traceparent_of(&span).or_else(|| inherited.map(str::to_owned));
    (span, traceparent)
}

/// GetTask of `remote`'s task, in a client span of ours ([`client_span`]); with the answer,
/// the `traceparent` the call carried (what a poll that ends a wait names as its waker).
pub(crate) async fn read_remote_task(
    agents: &dyn RemoteAgents,
    remote: &RemoteTaskRef,
    inherited: Option<&str>,
) -> (Result<Task, RemoteError>, Option<String>) {
    let (span, traceparent) = client_span("GetTask", &remote.agent, &remote.task_id, inherited);
    let read = agents
        .get_task(remote, traceparent.as_deref())
        .instrument(span.clone())
        .await;
    match &read {
        Ok(task) => crate::trace::record_task(&span, task),
        Err(_) => {
            span.record("otel.status_code", "ERROR");
        }
    }
    (read, traceparent)
}

/// CancelTask of `remote`'s task, in a client span of ours ([`client_span`]).
pub(crate) async fn cancel_remote_task(
    agents: &dyn RemoteAgents,
    remote: &RemoteTaskRef,
    inherited: Option<&str>,
) -> Result<(), RemoteError> {
    let (span, traceparent) = client_span("CancelTask", &remote.agent, &remote.task_id, inherited);
    agents
        .cancel_task(remote, traceparent.as_deref())
        .instrument(span.clone())
        .await
        .inspect_err(|_| {
            span.record("otel.status_code", "ERROR");
        })
}
