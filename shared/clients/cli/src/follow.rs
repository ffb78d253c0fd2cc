//! Following a task: its events as they come, until it stops, the agent ends the stream, or
//! Ctrl-C. Ctrl-C stops the command, never the task: what is printed then says so and how to
//! find the task again.

use std::time::Duration;

use a2a_client::{Client, Error, GetTaskRequest, StreamResponse, TaskState};
use futures::StreamExt;

use crate::{render, sanitize, Failure, Outcome};

/// Whether a task stopped: a final state, or one that waits for the client.
pub(crate) fn stopped(state: TaskState) -> bool {
    state.is_terminal() || state.is_interrupted()
}

/// Exit code 5 for a task that did not succeed.
pub(crate) fn finished(state: TaskState) -> Outcome {
    match state {
        TaskState::Failed | TaskState::Rejected | TaskState::Canceled => {
            Err(Failure::TaskUnsuccessful)
        }
        _ => Ok(()),
    }
}

/// `work`, unless Ctrl-C comes first: then the failure `interrupted` describes.
pub(crate) async fn until_interrupted<T>(
    work: impl std::future::Future<Output = T>,
    interrupted: impl FnOnce() -> String,
) -> Result<T, Failure> {
    // Biased, the signal first: its handler is installed before the work's first poll sends
    // anything, so a Ctrl-C from then on is ours to report, not the default exit.
    tokio::select! {
        biased;
        _ = tokio::signal::ctrl_c() => Err(Failure::Interrupted(interrupted())),
        done = work => Ok(done),
    }
}

/// Ctrl-C before the agent answered a send: the message may have arrived all the same.
pub(crate) fn unanswered(url: &str) -> String {
    format!(
        "interrupted before the agent answered; it may have the message and work on it: `a2a \
         list {url}` shows its tasks"
    )
}

/// Ctrl-C while following a task, which does not stop it: how to find it again.
fn left_running(url: &str, task_id: &str) -> String {
    let id = sanitize::line(task_id);
    format!(
        "stopped following task {id}, which runs on at the agent: `a2a subscribe {url} {id}` \
         follows it again, `a2a get {url} {id}` prints it, `a2a cancel {url} {id}` stops it"
    )
}

/// Prints a task's events as they come, until it stops or Ctrl-C; `url` is the agent's, for
/// the commands that find the task again.
pub(crate) async fn follow(
    out: &render::Printer,
    events: a2a_client::TaskStream,
    url: &str,
) -> Outcome {
    let mut live = out.live();
    let mut events = std::pin::pin!(events);
    // One listener for the whole stream: a Ctrl-C between two events is not missed.
    let mut interrupt = std::pin::pin!(tokio::signal::ctrl_c());
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut state = TaskState::Unspecified;
    let mut replied = false;
    let mut task_id = String::new();
    loop {
        // Biased, the signal first: its handler is installed before the first event is shown.
        tokio::select! {
            biased;
            _ = &mut interrupt => {
                live.finish();
                return Err(Failure::Interrupted(match task_id.as_str() {
                    "" => unanswered(url),
                    id => left_running(url, id),
                }));
            }
            event = events.next() => match event {
                None => break,
                Some(Err(e)) => {
                    live.finish();
                    return Err(e.into());
                }
                Some(Ok(event)) => {
                    if let Some(s) = state_of(&event) {
                        state = s;
                    }
                    if task_id.is_empty() {
                        task_id = task_id_of(&event).to_string();
                    }
                    replied |= matches!(event, StreamResponse::Message(_));
                    live.event(&event);
                }
            },
            _ = tick.tick() => live.tick(),
        }
    }
    live.finish();
    // The client library ends a stream only once it stopped, or with an error; a stream that
    // got neither a reply nor a stopping state is not a success all the same.
    if !(replied || state.is_terminal() || state.is_interrupted()) {
        return Err(Failure::Client(Error::InvalidResponse(format!(
            "the stream ended while the task was {}",
            state.as_str()
        ))));
    }
    finished(state)
}

/// A subscription refused with UnsupportedOperationError: A2A 1.0's answer for a task that has
/// ended. If that is why, says so and prints the task's final state, as the stream's last
/// event would have; else (an agent that does not stream) the refusal stands.
pub(crate) async fn ended(
    client: &Client,
    out: &render::Printer,
    url: &str,
    task_id: &str,
    refusal: Error,
) -> Outcome {
    let task = client
        .get_task(GetTaskRequest {
            id: task_id.to_string(),
            ..GetTaskRequest::default()
        })
        .await;
    let task = match task {
        Ok(task) if task.status.state.is_terminal() => task,
        _ => return Err(refusal.into()),
    };
    let id = sanitize::line(task_id);
    eprintln!(
        "a2a: task {id} has already ended ({}): there is nothing left to follow (`a2a get {url} \
         {id}` prints the task)",
        task.status.state.as_str()
    );
    let state = task.status.state;
    let mut live = out.live();
    live.event(&StreamResponse::Task(task));
    live.finish();
    finished(state)
}

fn task_id_of(event: &StreamResponse) -> &str {
    match event {
        StreamResponse::Task(t) => &t.id,
        StreamResponse::StatusUpdate(u) => &u.task_id,
        StreamResponse::ArtifactUpdate(a) => &a.task_id,
        StreamResponse::Message(m) => &m.task_id,
    }
}

fn state_of(event: &StreamResponse) -> Option<TaskState> {
    match event {
        StreamResponse::Task(t) => Some(t.status.state),
        StreamResponse::StatusUpdate(u) => Some(u.status.state),
        _ => None,
    }
}
