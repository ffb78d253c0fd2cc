//! The agent's tools: local functions, other A2A agents, and asking the user. Each call the
//! model makes is durable: a local tool runs in a step, an agent is called through
//! `call_agent`, so a replay runs neither again.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{AgentCall, AgentError, AgentReply, CallOutcome, Emitter};
use a2a_protocol::{Task, TaskState};
use futures::future::BoxFuture;
use rig_core::completion::ToolDefinition;
use rig_core::message::{ToolCall, ToolName, ToolResult, ToolResultContent};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// How long a call to another agent may take unless the tool says otherwise.
const AGENT_TIMEOUT: Duration = Duration::from_secs(300);

type LocalFn = dyn Fn(Value) -> BoxFuture<'static, Result<String, String>> + Send + Sync;

/// A tool the model may call.
#[derive(Clone)]
pub struct Tool {
    name: String,
    description: String,
    parameters: Value,
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Local(Arc<LocalFn>),
    Agent { url: String, timeout: Duration },
    AskUser,
}

/// What a tool call came to.
pub(crate) enum Outcome {
    /// The result, for the model's next call.
    Result(ToolResult),
    /// The model asks the user this: the task waits for the answer (INPUT_REQUIRED).
    AskUser(String),
}

/// A local tool's result as its step records it.
#[derive(Serialize, Deserialize)]
struct Ran {
    ok: bool,
    text: String,
}

impl Tool {
    /// A function the model may call with arguments matching the JSON Schema `parameters`; its
    /// text (or its error, which the model is told) answers the call. It runs once per call,
    /// however often the execution is replayed.
    pub fn local<F, Fut>(name: &str, description: &str, parameters: Value, run: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, String>> + Send + 'static,
    {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
            kind: Kind::Local(Arc::new(move |args| Box::pin(run(args)))),
        }
    }

    /// Another A2A agent (its base URL, or a chat room's `lite:` address): the model sends it
    /// a message and gets its answer. A durable wait: nothing runs while the agent works.
    pub fn agent(name: &str, description: &str, url: &str) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters: json!({
                "type": "object",
                "properties": {"message": {"type": "string", "description": "What to ask the agent."}},
                "required": ["message"],
            }),
            kind: Kind::Agent {
                url: url.into(),
                timeout: AGENT_TIMEOUT,
            },
        }
    }

    /// For an agent tool: how long its answer may take before the call fails.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        if let Kind::Agent { timeout: t, .. } = &mut self.kind {
            *t = timeout;
        }
        self
    }

    /// Asking the user: every agent has it.
    pub(crate) fn ask_user() -> Self {
        Self {
            name: "ask_user".into(),
            description: "Ask the user a question when you need their answer to go on.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"question": {"type": "string"}},
                "required": ["question"],
            }),
            kind: Kind::AskUser,
        }
    }

    /// The tool's name, as the model calls it.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn definition(&self) -> ToolDefinition {
        let name = ToolName::new(self.name.clone()).unwrap_or_else(|_| {
            ToolName::new("unnamed").expect("a literal tool name is not empty")
        });
        ToolDefinition::new(name, self.description.clone(), self.parameters.clone())
    }

    /// Answers `call` under the durable step `step`.
    pub(crate) async fn run(
        &self,
        emitter: &Emitter,
        step: &str,
        call: &ToolCall,
    ) -> Result<Outcome, AgentError> {
        let args = call.function.arguments_value();
        let argument = |key: &str| args[key].as_str().unwrap_or_default().to_owned();
        let (ok, text) = match &self.kind {
            Kind::AskUser => return Ok(Outcome::AskUser(argument("question"))),
            Kind::Local(run) => {
                let ran: Ran = emitter
                    .step(step, || async {
                        Ok(match run(args.clone()).await {
                            Ok(text) => Ran { ok: true, text },
                            Err(text) => Ran { ok: false, text },
                        })
                    })
                    .await?;
                (ran.ok, ran.text)
            }
            Kind::Agent { url, timeout } => {
                let sent = AgentCall::text(url, &argument("message"), *timeout);
                match emitter.call_agent(step, sent).await {
                    Ok(AgentReply {
                        outcome: CallOutcome::TimedOut { reason },
                        ..
                    }) => (false, reason),
                    Ok(reply) => (true, reply.task.as_ref().map(answer_of).unwrap_or_default()),
                    // Recorded as the call's outcome: a replay tells the model the same.
                    Err(AgentError::Failed(reason)) => (false, reason),
                    Err(other) => return Err(other),
                }
            }
        };
        let content = vec![text_content(&text)];
        Ok(Outcome::Result(if ok {
            call.result(content)
        } else {
            call.error_result(content)
        }))
    }
}

/// A tool result's text content.
pub(crate) fn text_content(text: &str) -> ToolResultContent {
    ToolResultContent::text(text)
}

/// What another agent's task says: its artifacts' text, or its status message (a question
/// when it asks for input, the reason when it failed).
fn answer_of(task: &Task) -> String {
    let artifacts: Vec<&str> = task
        .artifacts
        .iter()
        .flat_map(|a| &a.parts)
        .filter_map(|p| p.text.as_deref())
        .collect();
    let status = task
        .status
        .message
        .as_ref()
        .and_then(|m| m.first_text())
        .unwrap_or_default();
    match task.status.state {
        TaskState::Completed if !artifacts.is_empty() => artifacts.concat(),
        TaskState::InputRequired => format!("The agent asks: {status}"),
        state => format!("The agent's task is {state}: {status}"),
    }
}
