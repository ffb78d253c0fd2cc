//! What a durable run records as a step's or a wait's value when it is a failure, and how a
//! recorded value is read back: shared by the run (`durable`), the worker and the waits, below
//! all three.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::request::AgentError;

/// A step's failure as recorded: a replay fails the same way.
pub(crate) fn failure_value(reason: &str) -> Value {
    serde_json::json!({ "a2aLambdaFailure": reason })
}

/// What a call to another agent records instead of that agent's answer when the answer is too
/// large for the store to keep in the execution's record: the call fails saying so. The remote
/// task is left as it is (it finished; canceling it would change nothing).
pub(crate) fn too_large_answer(agent: &str) -> Value {
    failure_value(&format!(
        "The remote agent's answer is too large to keep: the agent at {agent} finished its \
         task, but its answer is more than this server can store for the task that called it."
    ))
}

pub(crate) fn recorded_failure(value: &Value) -> Option<AgentError> {
    value
        .get("a2aLambdaFailure")
        .and_then(Value::as_str)
        .map(|reason| AgentError::Failed(reason.to_owned()))
}

pub(crate) fn decode<T: DeserializeOwned>(name: &str, value: Value) -> Result<T, AgentError> {
    if let Some(failure) = recorded_failure(&value) {
        return Err(failure);
    }
    serde_json::from_value(value).map_err(|err| {
        AgentError::Failed(format!(
            "The recorded result of step {name:?} does not read back: {err}"
        ))
    })
}
