//! What an agent's durable calls take and answer: the call to another agent ([`AgentCall`]) and
//! how it ended ([`AgentReply`], [`CallOutcome`]), and the rule that a durable call is not made
//! inside a step.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_protocol::{Artifact, Message, Task, TaskState};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::recorded::{decode, recorded_failure};
use crate::request::AgentError;

/// A call to another A2A agent ([`crate::Emitter::call_agent`]).
#[derive(Debug, Clone)]
pub struct AgentCall {
    /// The agent's base URL: its card is at `/.well-known/agent-card.json` under it. Or a chat
    /// room's address, `lite:<channel>:<room>`: the A2A-Lite agent there is given the task
    /// (see `a2a_channels::lite::RoomAddress`).
    pub agent: String,
    /// What to send (its ids are set by the call).
    pub message: Message,
    /// How long to wait for the remote task to stop before giving up (and canceling it).
    pub timeout: Duration,
}

impl AgentCall {
    /// Sends `text` to the agent at `agent`, waiting at most `timeout`.
    pub fn text(agent: &str, text: &str, timeout: Duration) -> Self {
        Self {
            agent: agent.to_owned(),
            message: Message::user_text("", text),
            timeout,
        }
    }
}

/// How another agent's task stopped, for an agent to `match` on.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// It completed.
    Completed {
        /// Its artifacts (relayed into this task as they came).
        artifacts: Vec<Artifact>,
        /// Its status message, if it had one.
        message: Option<Message>,
    },
    /// It asks for something. A later call under the same name, in a follow-up's run of this
    /// task, gives it the answer.
    NeedsInput {
        /// INPUT_REQUIRED or AUTH_REQUIRED.
        state: TaskState,
        /// Its question, if it asked one.
        message: Option<Message>,
    },
    /// It failed or was rejected.
    Failed {
        /// Its status message's text, if it gave one.
        reason: Option<String>,
    },
    /// It was canceled (not by this call).
    Canceled {
        /// Its status message's text, if it gave one.
        reason: Option<String>,
    },
    /// It did not stop within the call's timeout, and was canceled.
    TimedOut {
        /// Says so, naming the agent and the timeout.
        reason: String,
    },
}

/// What [`crate::Emitter::call_agent`] answers: how the other agent's task stopped, and that
/// task as it stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentReply {
    /// What an agent usually needs of the answer.
    pub outcome: CallOutcome,
    /// The remote task as it stopped (a direct message answer stands as a completed task with
    /// that message); `None` when the call timed out.
    pub task: Option<Task>,
}

impl From<Task> for AgentReply {
    fn from(task: Task) -> Self {
        let message = task.status.message.clone().filter(|m| !m.parts.is_empty());
        let reason = || {
            let text: String = message
                .iter()
                .flat_map(|m| &m.parts)
                .filter_map(|p| p.text.as_deref())
                .collect();
            Some(text).filter(|t| !t.is_empty())
        };
        let outcome = match task.status.state {
            TaskState::Completed => CallOutcome::Completed {
                artifacts: task.artifacts.clone(),
                message: message.clone(),
            },
            state @ (TaskState::InputRequired | TaskState::AuthRequired) => {
                CallOutcome::NeedsInput {
                    state,
                    message: message.clone(),
                }
            }
            TaskState::Canceled => CallOutcome::Canceled { reason: reason() },
            // A call ends only on a stopped task; anything else read back is no success.
            _ => CallOutcome::Failed { reason: reason() },
        };
        Self {
            outcome,
            task: Some(task),
        }
    }
}

/// A call's timeout as its step records it (a replay answers the same).
pub(crate) fn timed_out_value(reason: &str) -> Value {
    serde_json::json!({ "a2aLambdaTimedOut": reason })
}

/// The recorded value of call `name` as the call answers it.
pub(crate) fn decode_reply(name: &str, value: Value) -> Result<AgentReply, AgentError> {
    if let Some(reason) = value.get("a2aLambdaTimedOut").and_then(Value::as_str) {
        return Ok(AgentReply {
            outcome: CallOutcome::TimedOut {
                reason: reason.to_owned(),
            },
            task: None,
        });
    }
    decode::<Task>(name, value).map(AgentReply::from)
}

/// A signal's payload as the agent reads it: a payload that is not what the agent takes is a
/// failure saying so (recorded as it came, so a replay fails the same way).
pub(crate) fn signal_payload<T: DeserializeOwned>(
    name: &str,
    value: Value,
) -> Result<T, AgentError> {
    if let Some(failure) = recorded_failure(&value) {
        return Err(failure);
    }
    serde_json::from_value(value).map_err(|err| {
        AgentError::Failed(format!(
            "The payload of signal {name:?} is not what the agent takes ({}): {err}",
            std::any::type_name::<T>()
        ))
    })
}

/// The step an emitter's agent is running, if any: a durable call made inside it is refused.
/// A replay returns a step's recorded result without running it, so a call inside would not be
/// made again, and the steps after it would be read at the wrong places.
#[derive(Debug, Clone, Default)]
pub(crate) struct InStep(Arc<Mutex<Option<String>>>);

impl InStep {
    /// Marks step `name` as running until the guard is dropped (also when its future is).
    pub(crate) fn enter(&self, name: &str) -> StepGuard<'_> {
        *self.lock() = Some(name.to_owned());
        StepGuard(self)
    }

    /// `Failed` if `call` (`name`) is made inside a step.
    pub(crate) fn refuse(&self, call: &str, name: &str) -> Result<(), AgentError> {
        match self.lock().as_deref() {
            None => Ok(()),
            Some(step) => Err(AgentError::Failed(format!(
                "{call}({name:?}) was called inside step {step:?}: a durable call cannot run \
                 inside a step (a replay returns the step's result without running it); make \
                 it before or after the step"
            ))),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        // Poisoned only by a panic elsewhere while it was held; the name is still valid.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Ends the step [`InStep::enter`] began.
pub(crate) struct StepGuard<'a>(&'a InStep);

impl Drop for StepGuard<'_> {
    fn drop(&mut self) {
        *self.0.lock() = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol::{Part, TaskStatus};

    fn stopped(state: TaskState, text: &str) -> Task {
        Task {
            status: TaskStatus {
                state,
                message: Some(Message::user_text("m", text)),
                timestamp: None,
            },
            artifacts: vec![Artifact {
                artifact_id: "a".into(),
                parts: vec![Part::text("out")],
                ..Artifact::default()
            }],
            ..Task::default()
        }
    }

    #[test]
    fn a_stopped_task_reads_as_its_outcome() {
        let outcome = |state, text| AgentReply::from(stopped(state, text)).outcome;
        assert!(matches!(
            outcome(TaskState::Completed, "done"),
            CallOutcome::Completed { artifacts, message: Some(_) } if artifacts.len() == 1
        ));
        assert!(matches!(
            outcome(TaskState::AuthRequired, "sign in"),
            CallOutcome::NeedsInput {
                state: TaskState::AuthRequired,
                ..
            }
        ));
        for state in [TaskState::Failed, TaskState::Rejected] {
            assert_eq!(
                outcome(state, "broke"),
                CallOutcome::Failed {
                    reason: Some("broke".into())
                }
            );
        }
        assert_eq!(
            outcome(TaskState::Canceled, ""),
            CallOutcome::Canceled { reason: None }
        );
        let timed_out = decode_reply("call", timed_out_value("too slow")).unwrap();
        assert_eq!(
            (timed_out.outcome, timed_out.task),
            (
                CallOutcome::TimedOut {
                    reason: "too slow".into()
                },
                None
            )
        );
    }

    #[test]
    fn a_durable_call_inside_a_step_is_refused_until_the_step_ends() {
        let in_step = InStep::default();
        assert!(in_step.refuse("sleep", "nap").is_ok());
        {
            let _step = in_step.enter("outer");
            let err = in_step.refuse("call_agent", "ask").unwrap_err();
            assert!(
                err.to_string()
                    .contains("call_agent(\"ask\") was called inside step \"outer\""),
                "{err}"
            );
        }
        assert!(in_step.refuse("sleep", "nap").is_ok());
    }
}
