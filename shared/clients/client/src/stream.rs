//! A task's events as a [`futures::Stream`] that survives dropped connections.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use a2a_protocol::Operation;
use a2a_protocol::{StreamResponse, Task, TaskState};
use futures::Stream;
use serde_json::json;

use crate::error::Error;
use crate::sse::{self, EventReader};
use crate::transport::{StreamBounds, StreamOptions, Transport};

/// How a [`TaskStream`] resumes after its connection dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct ReconnectPolicy {
    /// Reconnects in a row without an event in between, before the stream gives up.
    pub max_attempts: u32,
    /// The wait before the first reconnect; doubled for each further one.
    pub initial_backoff: Duration,
    /// The longest wait.
    pub max_backoff: Duration,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
        }
    }
}

/// The events of one task, in order: the stream of SendStreamingMessage or SubscribeToTask.
///
/// It ends after a direct `Message` reply, or after the task reached a terminal state
/// (COMPLETED, FAILED, CANCELED, REJECTED) or an interrupted one (INPUT_REQUIRED,
/// AUTH_REQUIRED). If the connection drops, stays silent longer than the client's idle
/// timeout, or the server closes the stream before that, it resubscribes (SubscribeToTask) with
/// `Last-Event-ID` set to the last event's SSE `id`, so a server that numbers its events
/// (a2a-lambda's do) resumes exactly after it. A server that does not starts again with a Task
/// snapshot; if the task finished meanwhile and the server refuses the subscription, the stream
/// ends with the task as GetTask returns it.
///
/// What the agent sends is checked: an event of another task than the stream's, or a stream
/// that ends before its first event, is an [`Error::InvalidResponse`]; an event or a stream
/// larger than the client's [`crate::Limits`] is an [`Error::TooLarge`]; a stream that lasts
/// longer than the client's stream timeout is an [`Error::Timeout`]. Each ends the stream.
pub struct TaskStream {
    inner: Pin<Box<dyn Stream<Item = Result<StreamResponse, Error>> + Send>>,
}

impl std::fmt::Debug for TaskStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskStream").finish_non_exhaustive()
    }
}

impl Stream for TaskStream {
    type Item = Result<StreamResponse, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

struct State {
    transport: Transport,
    policy: ReconnectPolicy,
    reader: Option<EventReader>,
    last_event_id: Option<String>,
    task_id: Option<String>,
    failures: u32,
    done: bool,
    /// The stream's deadline and what it may still read (less what dropped readers read).
    bounds: StreamBounds,
    /// Whether any event arrived.
    seen: bool,
    /// Why the last connection broke, when it fell silent: the idle timeout.
    silent: Option<Duration>,
}

/// Whether the stream ends after this item.
fn is_last(response: &StreamResponse) -> bool {
    let stops = |s: TaskState| s.is_terminal() || s.is_interrupted();
    match response {
        StreamResponse::Message(_) => true,
        StreamResponse::Task(t) => stops(t.status.state),
        StreamResponse::StatusUpdate(u) => stops(u.status.state),
        StreamResponse::ArtifactUpdate(_) => false,
    }
}

fn task_id_of(response: &StreamResponse) -> Option<&str> {
    let id = match response {
        StreamResponse::Message(m) => m.task_id.as_str(),
        StreamResponse::Task(t) => t.id.as_str(),
        StreamResponse::StatusUpdate(u) => u.task_id.as_str(),
        StreamResponse::ArtifactUpdate(a) => a.task_id.as_str(),
    };
    (!id.is_empty()).then_some(id)
}

impl TaskStream {
    /// Follows `reader`; `task_id` is known for a subscription, learnt from the first event
    /// of a send.
    pub(crate) fn new(
        transport: Transport,
        policy: ReconnectPolicy,
        opened: (EventReader, StreamBounds),
        task_id: Option<String>,
        last_event_id: Option<String>,
    ) -> Self {
        let (reader, bounds) = opened;
        let state = State {
            transport,
            policy,
            reader: Some(reader),
            last_event_id,
            task_id,
            failures: 0,
            done: false,
            bounds,
            seen: false,
            silent: None,
        };
        let inner = futures::stream::unfold(state, |mut state| async move {
            let item = state.next().await?;
            Some((item, state))
        });
        Self {
            inner: Box::pin(inner),
        }
    }
}

impl State {
    async fn next(&mut self) -> Option<Result<StreamResponse, Error>> {
        loop {
            if self.done {
                return None;
            }
            let Some(reader) = self.reader.as_mut() else {
                if let Some(item) = self.reconnect().await {
                    return Some(item);
                }
                continue;
            };
            let binding = reader.binding;
            let read = reader.next_event().await;
            let bytes_read = reader.bytes_read();
            let broken = match read {
                Ok(Some(event)) => {
                    let item = sse::payload(binding, &event)
                        .and_then(|value| {
                            serde_json::from_value::<StreamResponse>(value).map_err(|e| {
                                Error::InvalidResponse(format!("not a StreamResponse: {e}"))
                            })
                        })
                        .and_then(|response| self.check_task(response));
                    match &item {
                        Ok(response) => {
                            self.failures = 0;
                            self.seen = true;
                            self.silent = None;
                            if event.id.is_some() {
                                self.last_event_id = event.id;
                            }
                            if self.task_id.is_none() {
                                self.task_id = task_id_of(response).map(str::to_string);
                            }
                            self.done = is_last(response);
                        }
                        Err(_) => self.done = true,
                    }
                    return Some(item);
                }
                // The server closed the stream before the task stopped (its own deadline).
                Ok(None) => None,
                // Limits and the stream's own deadline end it; a resubscription would pass
                // them again.
                Err(e) if self.ends_here(&e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Err(e) => Some(e),
            };
            self.bounds.budget = self.bounds.budget.saturating_sub(bytes_read);
            self.reader = None;
            if let Some(Error::Timeout { after, .. }) = &broken {
                self.silent = Some(*after);
            }
            if self.task_id.is_none() {
                self.done = true;
                return match broken {
                    Some(e) => Some(Err(e)),
                    None if !self.seen => Some(Err(Error::InvalidResponse(
                        "the agent ended the stream without sending any event".into(),
                    ))),
                    None => None,
                };
            }
        }
    }

    /// Whether `e`, from reading the stream, ends it rather than calling for a resubscription.
    fn ends_here(&self, e: &Error) -> bool {
        let past_deadline = self
            .bounds
            .deadline
            .is_some_and(|(at, _)| Instant::now() >= at);
        matches!(e, Error::TooLarge { .. }) || past_deadline
    }

    /// `response`, if it is about the stream's task (or names none, as a direct Message may).
    fn check_task(&self, response: StreamResponse) -> Result<StreamResponse, Error> {
        match (self.task_id.as_deref(), task_id_of(&response)) {
            (Some(ours), Some(theirs)) if ours != theirs => Err(Error::InvalidResponse(format!(
                "the stream of task {ours} sent an event of task {theirs}"
            ))),
            _ => Ok(response),
        }
    }

    /// The error that ends the stream after the last reconnect failed.
    fn gave_up(&self, task_id: &str) -> Error {
        let tries = self.failures;
        match self.silent {
            Some(after) => Error::Timeout {
                what: format!(
                    "the stream of task {task_id} sent nothing, not even a keep-alive, and \
                     {tries} resubscription(s) did not help"
                ),
                after,
            },
            None => Error::InvalidResponse(format!(
                "the stream of task {task_id} broke and {tries} reconnects failed"
            )),
        }
    }

    /// Opens SubscribeToTask after the last event. Returns an item when the stream ends here.
    async fn reconnect(&mut self) -> Option<Result<StreamResponse, Error>> {
        let Some(task_id) = self.task_id.clone() else {
            self.done = true;
            return None;
        };
        if self.failures >= self.policy.max_attempts {
            self.done = true;
            return Some(Err(self.gave_up(&task_id)));
        }
        let wait = self
            .policy
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(self.failures))
            .min(self.policy.max_backoff);
        if let Some((at, total)) = self.bounds.deadline {
            if Instant::now() + wait >= at {
                self.done = true;
                return Some(Err(Error::Timeout {
                    what: format!("the stream of task {task_id} did not end in time"),
                    after: total,
                }));
            }
        }
        self.failures += 1;
        tokio::time::sleep(wait).await;
        let options = StreamOptions {
            last_event_id: self.last_event_id.clone(),
            rest_verb: None,
        };
        match self
            .transport
            .open_stream_within(
                Operation::SubscribeToTask,
                &json!({"id": task_id}),
                &options,
                self.bounds,
            )
            .await
        {
            Ok(reader) => {
                self.reader = Some(reader);
                None
            }
            Err(e) if self.ends_here(&e) => {
                self.done = true;
                Some(Err(e))
            }
            Err(Error::Timeout { after, .. }) => {
                self.silent = Some(after);
                None
            }
            Err(e) if e.is_transient() => None,
            // A server that cannot resume refuses to subscribe to a finished task: its final
            // state is what GetTask says.
            Err(Error::Agent(a))
                if matches!(a.error, a2a_protocol::A2AError::UnsupportedOperation(_)) =>
            {
                self.done = true;
                let task = self
                    .transport
                    .call(Operation::GetTask, json!({"id": task_id}))
                    .await
                    .and_then(|v| {
                        serde_json::from_value::<Task>(v)
                            .map_err(|e| Error::InvalidResponse(format!("not a Task: {e}")))
                    });
                Some(task.map(StreamResponse::Task))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
