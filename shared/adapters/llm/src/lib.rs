//! An LLM agent served as an A2A agent: a model (any OpenAI-compatible Chat Completions
//! endpoint, or Amazon Bedrock's ConverseStream, through rig), a system prompt and tools,
//! behind the kit's [`Agent`] trait.
//!
//! ```no_run
//! use a2a_llm::{LlmAgent, Tool};
//!
//! let agent = LlmAgent::new("helper")
//!     .system_prompt("You answer briefly.")
//!     .tool(Tool::agent("translate", "Translates text to French.", "http://127.0.0.1:9001"))
//!     .build();
//! # let _ = agent;
//! ```
//!
//! The adapter drives the model's turn loop itself, so the durable machinery covers it: every
//! model call and every tool call is an [`Emitter::step`] (a replay after a handover, a crash
//! or a resume calls neither again), another agent is called through [`Emitter::call_agent`]
//! (a durable wait), and "ask the user" ends the run INPUT_REQUIRED (the answer continues the
//! conversation). Tokens reach the task as artifact chunks while the model writes, the answer
//! is whole at the end, and the tokens the task's model calls used are in the task's metadata
//! (`tokenUsage`).

use std::sync::Arc;

use a2a_core::{Agent, AgentDescription, AgentError, AgentRequest, Emitter};
use a2a_protocol::{AgentSkill, Artifact, Metadata, Part, TaskState};
use async_trait::async_trait;
use rig_core::completion::CompletionRequest;
use rig_core::message::Message;
use usage::TokenUsage;

#[cfg(feature = "aws")]
mod aws;
mod chunks;
mod conversation;
mod model;
mod tools;
mod usage;

pub use model::ChatModel;
pub use tools::Tool;

/// What a setting that needs the AWS SDK says in a build without it (`{what}`: the setting).
#[cfg(not(feature = "aws"))]
const NO_AWS: &str = "{what} needs the AWS SDK, which this build leaves out: build with the \
    a2a-llm feature `aws` (a generated project: `cargo run --features aws`; its Lambda binary \
    has it).";

/// How many model calls one message may take (each tool round is one more): a model that keeps
/// calling tools ends FAILED instead of running forever.
const MAX_TURNS: usize = 16;

/// An LLM agent: build it, then serve what [`LlmAgent::build`] returns.
pub struct LlmAgent {
    description: AgentDescription,
    system_prompt: String,
    model: Result<ChatModel, String>,
    tools: Vec<Tool>,
}

impl LlmAgent {
    /// An agent named `name`, its model from the environment ([`ChatModel::from_env`]); a
    /// missing setting fails each task with a reason that names it.
    pub fn new(name: &str) -> Self {
        Self {
            description: AgentDescription {
                name: name.into(),
                description: "An LLM agent.".into(),
                version: "0.1.0".into(),
                skills: vec![AgentSkill {
                    id: "chat".into(),
                    name: "Chat".into(),
                    description: "Answers in conversation, using its tools.".into(),
                    tags: vec!["llm".into()],
                    ..AgentSkill::default()
                }],
                default_input_modes: vec!["text/plain".into()],
                default_output_modes: vec!["text/plain".into()],
                ..AgentDescription::default()
            },
            system_prompt: String::new(),
            model: ChatModel::from_env(),
            tools: vec![Tool::ask_user()],
        }
    }

    /// What the agent's card says it does.
    pub fn description(mut self, text: &str) -> Self {
        self.description.description = text.into();
        self
    }

    /// The system prompt every model call starts with.
    pub fn system_prompt(mut self, prompt: &str) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// The model, instead of the one the environment names.
    pub fn model(mut self, model: ChatModel) -> Self {
        self.model = Ok(model);
        self
    }

    /// A tool the model may call (a tool of the same name replaces it).
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
        self
    }

    /// The agent, to serve (`a2a_local::run_project`, the Lambda functions).
    pub fn build(self) -> Arc<dyn Agent> {
        Arc::new(self)
    }

    /// One model call as a durable step: streamed into the answer the first time, its recorded
    /// reply (and the same number of chunk emits, which the replay skips) after that.
    async fn model_turn(
        &self,
        model: &ChatModel,
        emitter: &Emitter,
        turn: usize,
        request: CompletionRequest,
        answer: &chunks::Answer,
    ) -> Result<model::Reply, AgentError> {
        let ran = std::sync::atomic::AtomicBool::new(false);
        let reply: model::Reply = emitter
            .step(&format!("model-{turn}"), || {
                ran.store(true, std::sync::atomic::Ordering::Relaxed);
                model.reply(request, emitter, answer)
            })
            .await?;
        if !ran.load(std::sync::atomic::Ordering::Relaxed) {
            answer.replay(emitter, &reply.chunks).await?;
        }
        Ok(reply)
    }
}

#[async_trait]
impl Agent for LlmAgent {
    fn describe(&self) -> AgentDescription {
        self.description.clone()
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        let before = TokenUsage::of_task(request.task.as_ref());
        let mut used = TokenUsage::default();
        match self.converse(&request, &emitter, before, &mut used).await {
            // The tokens of the calls made before the failure count too.
            Err(AgentError::Failed(reason)) if used.model_calls > 0 => {
                let message = emitter.agent_message(vec![Part::text(reason.clone())]);
                let metadata = before.plus(used).task_metadata();
                emitter
                    .status_with_metadata(TaskState::Failed, Some(message), Some(metadata))
                    .await
                    .map_err(|_| AgentError::Failed(reason))
            }
            other => other,
        }
    }
}

impl LlmAgent {
    /// The message's turns: model calls and the tools they ask for, until the model answers
    /// (COMPLETED) or asks the user (INPUT_REQUIRED), both with the task's token usage (the
    /// earlier messages' `before`, and this one's `used`, which it counts as it goes).
    async fn converse(
        &self,
        request: &AgentRequest,
        emitter: &Emitter,
        before: TokenUsage,
        used: &mut TokenUsage,
    ) -> Result<(), AgentError> {
        let model = self
            .model
            .as_ref()
            .map_err(|e| AgentError::Failed(e.clone()))?;
        emitter.working(None).await?;
        let earlier = emitter.context_tasks().await?;
        let mut history = conversation::messages(&earlier, request.task.as_ref(), &request.message);
        let definitions: Vec<_> = self.tools.iter().map(Tool::definition).collect();
        let answer = chunks::Answer::new(format!("{}-answer", request.task_id));
        for turn in 0..MAX_TURNS {
            let mut call = CompletionRequest::new(Message::user(""));
            call.chat_history = history.clone();
            call.tools = definitions.clone();
            if !self.system_prompt.is_empty() {
                call = call.preamble(self.system_prompt.clone());
            }
            let reply = self.model_turn(model, emitter, turn, call, &answer).await?;
            used.add(&reply.usage);
            let calls = reply.tool_calls();
            history.push(reply.message());
            if calls.is_empty() {
                return finish(emitter, &answer, *used, before.plus(*used)).await;
            }
            let mut results = Vec::with_capacity(calls.len());
            for (index, call) in calls.iter().enumerate() {
                let Some(tool) = self
                    .tools
                    .iter()
                    .find(|t| t.name() == call.function.name.as_str())
                else {
                    results.push(call.error_result(vec![tools::text_content(&format!(
                        "There is no tool named {:?}.",
                        call.function.name.as_str()
                    ))]));
                    continue;
                };
                match tool
                    .run(emitter, &format!("tool-{turn}-{index}"), call)
                    .await?
                {
                    tools::Outcome::Result(result) => results.push(result),
                    tools::Outcome::AskUser(question) => {
                        let question = emitter.agent_message(vec![Part::text(question)]);
                        let metadata = before.plus(*used).task_metadata();
                        return emitter
                            .status_with_metadata(
                                TaskState::InputRequired,
                                Some(question),
                                Some(metadata),
                            )
                            .await;
                    }
                }
            }
            history.push(Message::tool_results(results));
        }
        Err(AgentError::Failed(format!(
            "The model did not answer within {MAX_TURNS} calls (it kept calling tools)."
        )))
    }
}

/// The answer whole, with the token usage of this message's model calls (`used`), and
/// COMPLETED with the task's (`task`: its earlier messages' too).
async fn finish(
    emitter: &Emitter,
    answer: &chunks::Answer,
    used: TokenUsage,
    task: TokenUsage,
) -> Result<(), AgentError> {
    let mut metadata = Metadata::new();
    metadata.insert("usage".into(), used.to_value());
    let artifact = Artifact {
        artifact_id: answer.id().to_owned(),
        name: "answer".into(),
        parts: vec![Part::text(answer.text())],
        metadata: Some(metadata),
        ..Artifact::default()
    };
    emitter.artifact(artifact, false, true).await?;
    emitter
        .status_with_metadata(TaskState::Completed, None, Some(task.task_metadata()))
        .await
}
