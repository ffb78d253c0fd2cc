//! The reference agent: the demo that shows how to write an agent, and the agent that
//! conformance (A2A TCK) and interoperability tests talk to. Its behaviour is fixed by
//! `shared/reference-agent.md`: the message's `messageId` prefix picks a conformance scenario,
//! otherwise the first text part picks a skill; anything else is `echo`.

use std::time::Duration;

use a2a_core::{
    Agent, AgentCall, AgentDescription, AgentError, AgentRequest, CallOutcome, Emitter, Placement,
};
use a2a_protocol::{AgentSkill, Artifact, Message, Part, Task, TaskState};
use async_trait::async_trait;
use serde_json::json;

/// The demo agent.
#[derive(Debug, Clone, Default)]
pub struct ReferenceAgent;

/// What one message asks for.
#[derive(Debug, Clone, PartialEq)]
enum Behaviour {
    Echo,
    Slow {
        chunks: u32,
        interval: Duration,
    },
    Hold,
    Job {
        steps: u32,
        step: Duration,
    },
    Fail,
    /// Send `text` to the agent at `agent` and make its answer ours.
    Delegate {
        agent: String,
        text: String,
    },
    Scenario(&'static str),
    /// The A2A TCK 0.3 contract: every message parks its task in INPUT_REQUIRED, so that the
    /// suite can continue and cancel it (what a2a-python's own TCK agent does).
    ParkForTck03,
}

/// The conformance scenarios, matched on the `messageId` prefix, longest first.
const SCENARIOS: &[&str] = &[
    "tck-stream-artifact-chunked",
    "test-resubscribe-message-id",
    "tck-stream-artifact-file",
    "tck-stream-artifact-text",
    "tck-stream-ordering-001",
    "tck-artifact-file-url",
    "tck-message-response",
    "tck-input-required",
    "tck-complete-task",
    "tck-artifact-file",
    "tck-artifact-text",
    "tck-artifact-data",
    "tck-reject-task",
    "tck-stream-001",
    "tck-stream-002",
    "tck-stream-003",
];

fn numbers<const N: usize>(text: &str, defaults: [u64; N]) -> [u64; N] {
    let mut out = defaults;
    for (slot, word) in out.iter_mut().zip(text.split_whitespace().skip(1)) {
        if let Ok(n) = word.parse::<u64>() {
            *slot = n;
        }
    }
    out
}

/// Whether `message_id` has the shape the A2A TCK 0.3 gives its messages: `test-…`, or
/// `<what>-message-id-<uuid>` from its `generate_test_message_id`. The TCK 1.0's own ids
/// (`tck-…`, and `test-resubscribe-message-id`, a scenario above) never reach this check.
fn is_tck_v03_message_id(message_id: &str) -> bool {
    !message_id.starts_with("tck-")
        && (message_id.starts_with("test-") || message_id.contains("-message-id-"))
}

fn choose(request: &AgentRequest) -> Behaviour {
    let id = request.message.message_id.as_str();
    let mut by_length: Vec<&&str> = SCENARIOS.iter().collect();
    by_length.sort_by_key(|s| std::cmp::Reverse(s.len()));
    if let Some(s) = by_length.into_iter().find(|s| id.starts_with(**s)) {
        return Behaviour::Scenario(s);
    }
    if is_tck_v03_message_id(id) {
        return Behaviour::ParkForTck03;
    }
    // A follow-up to a delegated task goes to the same agent's task.
    if let Some(agent) = request.task.as_ref().and_then(delegated_to) {
        return Behaviour::Delegate {
            agent,
            text: request.text().to_owned(),
        };
    }
    // A follow-up to a parked task completes it as an echo of the follow-up.
    if request
        .task
        .as_ref()
        .is_some_and(|t| t.status.state == TaskState::InputRequired)
    {
        return Behaviour::Echo;
    }
    let text = request.text().trim();
    let word = text.split_whitespace().next().unwrap_or_default();
    match word {
        "slow" => {
            let [chunks, ms] = numbers(text, [5, 200]);
            Behaviour::Slow {
                chunks: chunks.clamp(1, 1000) as u32,
                interval: Duration::from_millis(ms.min(60_000)),
            }
        }
        "hold" => Behaviour::Hold,
        "job" => {
            let [steps, ms] = numbers(text, [3, 1000]);
            Behaviour::Job {
                steps: steps.clamp(1, 1000) as u32,
                step: Duration::from_millis(ms.min(600_000)),
            }
        }
        "fail" => Behaviour::Fail,
        "delegate" => {
            let (agent, text) = delegation(text).unwrap_or_default();
            Behaviour::Delegate { agent, text }
        }
        _ => Behaviour::Echo,
    }
}

/// `delegate <AGENT_URL> <TEXT…>`: the agent's URL and the text (the rest of the line, as
/// written).
fn delegation(text: &str) -> Option<(String, String)> {
    let rest = text.trim().strip_prefix("delegate")?;
    let rest = rest.trim_start();
    let (agent, text) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    Some((agent.to_owned(), text.trim_start().to_owned()))
}

/// The agent a task delegates to: the one its first message named with `delegate`.
fn delegated_to(task: &Task) -> Option<String> {
    let first = task.history.first()?;
    let text = first.first_text()?;
    if text.split_whitespace().next() != Some("delegate") {
        return None;
    }
    delegation(text)
        .map(|(agent, _)| agent)
        .filter(|a| !a.is_empty())
}

/// The environment variable that bounds a `delegate`, in seconds.
pub const ENV_DELEGATE_TIMEOUT: &str = "A2A_DELEGATE_TIMEOUT_SECS";
/// How long a `delegate` waits for the other agent by default.
pub const DEFAULT_DELEGATE_TIMEOUT: Duration = Duration::from_secs(600);

/// How long a delegated task may take: `A2A_DELEGATE_TIMEOUT_SECS`, 10 minutes by default.
fn delegate_timeout() -> Duration {
    std::env::var(ENV_DELEGATE_TIMEOUT)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_DELEGATE_TIMEOUT)
}

/// `delegate`: sends the text to the other agent (a durable call: nothing runs while it
/// works, and its progress is relayed into our task as it comes) and ends our task as its
/// task stopped. A follow-up on our task runs this again: the same call continues the same
/// remote task, which is how our caller's answer reaches a remote that asked for input.
async fn delegate(e: &Emitter, agent: &str, text: &str) -> Result<(), AgentError> {
    if agent.is_empty() {
        return e
            .fail("Say which agent to delegate to: delegate <AGENT_URL> <TEXT…>")
            .await;
    }
    // The task exists (and says what it does) before the other agent's progress comes in.
    e.working(Some(&format!("Delegating to the agent at {agent}")))
        .await?;
    let call = AgentCall::text(agent, text, delegate_timeout());
    let relayed = |m: Option<Message>| m.map(|m| e.agent_message(m.parts));
    match e.call_agent("delegate", call).await?.outcome {
        CallOutcome::Completed { message, .. } => {
            e.status(TaskState::Completed, relayed(message)).await
        }
        CallOutcome::NeedsInput { state, message } => e.status(state, relayed(message)).await,
        CallOutcome::Failed { reason } => {
            let reason = reason.as_deref().unwrap_or("it gave no reason");
            e.fail(&format!("The agent at {agent} failed: {reason}"))
                .await
        }
        CallOutcome::Canceled { reason } => {
            let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
            e.fail(&format!(
                "The agent at {agent} ended its task as Canceled{reason}"
            ))
            .await
        }
        CallOutcome::TimedOut { reason } => e.fail(&reason).await,
    }
}

fn skill(id: &str, name: &str, description: &str, examples: &[&str]) -> AgentSkill {
    AgentSkill {
        id: id.into(),
        name: name.into(),
        description: description.into(),
        tags: vec!["demo".into()],
        examples: examples.iter().map(|s| s.to_string()).collect(),
        ..AgentSkill::default()
    }
}

/// The id of the task's artifact playing `role`. Deterministic, so that a re-run of the same
/// job (a queued job is delivered at least once: a worker may crash mid-run) replaces the
/// output of the run before instead of adding a second artifact.
fn artifact_id(task_id: &str, role: &str) -> String {
    format!("{task_id}-{role}")
}

fn text_artifact(task_id: &str, name: &str, text: &str) -> Artifact {
    Artifact {
        artifact_id: artifact_id(task_id, name),
        name: name.into(),
        parts: vec![Part::text(text)],
        ..Artifact::default()
    }
}

fn file_artifact(task_id: &str) -> Artifact {
    Artifact {
        artifact_id: artifact_id(task_id, "file"),
        name: "output.txt".into(),
        parts: vec![Part {
            filename: "output.txt".into(),
            media_type: "text/plain".into(),
            ..Part::raw(b"tck".to_vec())
        }],
        ..Artifact::default()
    }
}

async fn working_artifact_complete(e: &Emitter, artifact: Artifact) -> Result<(), AgentError> {
    e.working(None).await?;
    e.artifact(artifact, false, true).await?;
    e.complete(None).await
}

async fn scenario(name: &str, e: &Emitter) -> Result<(), AgentError> {
    let task_id = e.task_id();
    match name {
        "tck-complete-task" => e.complete(Some("Hello from TCK")).await,
        "tck-input-required" => e.input_required("Please provide more input.").await,
        "tck-message-response" => {
            e.reply(Message::agent_text("Direct message response"))
                .await
        }
        "tck-artifact-text" => {
            e.artifact(
                text_artifact(task_id, "text", "Generated text content"),
                false,
                true,
            )
            .await?;
            e.complete(None).await
        }
        "tck-artifact-file" => {
            e.artifact(file_artifact(task_id), false, true).await?;
            e.complete(None).await
        }
        "tck-artifact-file-url" => {
            let artifact = Artifact {
                artifact_id: artifact_id(task_id, "file-url"),
                name: "output.txt".into(),
                parts: vec![Part {
                    filename: "output.txt".into(),
                    media_type: "text/plain".into(),
                    ..Part::url("https://example.com/output.txt")
                }],
                ..Artifact::default()
            };
            e.artifact(artifact, false, true).await?;
            e.complete(None).await
        }
        "tck-artifact-data" => {
            let artifact = Artifact {
                artifact_id: artifact_id(task_id, "data"),
                name: "data".into(),
                parts: vec![Part::data(json!({"key": "value", "count": 42}))],
                ..Artifact::default()
            };
            e.artifact(artifact, false, true).await?;
            e.complete(None).await
        }
        "tck-stream-001" => {
            working_artifact_complete(e, text_artifact(task_id, "text", "Stream hello from TCK"))
                .await
        }
        "tck-stream-002" => e.complete(None).await,
        "tck-stream-003" => {
            working_artifact_complete(e, text_artifact(task_id, "text", "Stream task lifecycle"))
                .await
        }
        "tck-stream-ordering-001" => {
            working_artifact_complete(e, text_artifact(task_id, "text", "Ordered output")).await
        }
        "tck-stream-artifact-text" => {
            working_artifact_complete(e, text_artifact(task_id, "text", "Streamed text content"))
                .await
        }
        "tck-stream-artifact-file" => working_artifact_complete(e, file_artifact(task_id)).await,
        "tck-stream-artifact-chunked" => {
            let id = artifact_id(task_id, "chunked");
            let chunk = |text: &str| Artifact {
                artifact_id: id.clone(),
                name: "chunked".into(),
                parts: vec![Part::text(text)],
                ..Artifact::default()
            };
            e.working(None).await?;
            e.artifact(chunk("chunk-1 "), false, false).await?;
            e.artifact(chunk("chunk-2"), true, true).await?;
            e.complete(None).await
        }
        "test-resubscribe-message-id" => {
            e.working(Some("working, first pause")).await?;
            tokio::time::sleep(Duration::from_secs(2)).await;
            e.working(Some("working, second pause")).await?;
            tokio::time::sleep(Duration::from_secs(2)).await;
            e.complete(Some("done")).await
        }
        "tck-reject-task" => Err(AgentError::Failed(
            "The agent rejected this request (tck-reject-task).".into(),
        )),
        other => Err(AgentError::Failed(format!("unknown scenario {other}"))),
    }
}

#[async_trait]
impl Agent for ReferenceAgent {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "a2a-lambda reference agent".into(),
            description: "The demo agent of a2a-lambda: echo, slow streaming, input-required, \
                          queued jobs, failure and delegation to another agent, plus the A2A TCK \
                          scenarios."
                .into(),
            version: env!("CARGO_PKG_VERSION").into(),
            skills: vec![
                skill("echo", "Echo", "Completes with an artifact holding the text it received.", &["hello"]),
                skill("slow", "Slow stream", "Streams CHUNKS artifact chunks, INTERVAL_MS apart: `slow [CHUNKS=5] [INTERVAL_MS=200]`.", &["slow 5 200"]),
                skill("hold", "Hold", "Parks the task in INPUT_REQUIRED; any follow-up completes it.", &["hold"]),
                skill("job", "Queued job", "Runs on the worker: a progress update per step, then a report: `job [STEPS=3] [STEP_MS=1000]`.", &["job 3 1000"]),
                skill("fail", "Fail", "Ends the task FAILED with an explanation.", &["fail"]),
                skill("delegate", "Delegate", "Sends TEXT to the A2A agent at AGENT_URL, or to the A2A-Lite agent of a chat room (AGENT_URL `lite:webhook:<channel>` or `lite:matrix:<room id>`), and makes its answer ours (artifacts, input-required, failure, cancel): `delegate <AGENT_URL> <TEXT…>`.", &["delegate http://127.0.0.1:9001 slow 5 200", "delegate lite:webhook:general summarise the thread"]),
            ],
            // Shown only on the extended card, to authenticated callers: the test scenarios
            // are for the people running the agent, not for every visitor of the public card.
            extended_skills: vec![skill(
                "tck-scenarios",
                "TCK scenarios",
                "Scripted behaviours for the A2A TCK, chosen by messageId prefix (see reference-agent.md).",
                &["messageId: tck-complete-task-1"],
            )],
            default_input_modes: vec!["text/plain".into(), "application/json".into()],
            default_output_modes: vec!["text/plain".into(), "application/json".into()],
            provider: None,
            extensions: Vec::new(),
        }
    }

    fn placement(&self, request: &AgentRequest) -> Placement {
        match choose(request) {
            Behaviour::Job { .. } => Placement::Queued,
            Behaviour::Slow { .. } if !request.streaming => Placement::Queued,
            _ => Placement::Inline,
        }
    }

    async fn execute(&self, request: AgentRequest, e: Emitter) -> Result<(), AgentError> {
        match choose(&request) {
            Behaviour::Scenario(name) => scenario(name, &e).await,
            Behaviour::Echo => {
                let artifact = match request.message.first_text() {
                    Some(text) => text_artifact(&request.task_id, "echo", text),
                    None => Artifact {
                        artifact_id: artifact_id(&request.task_id, "echo"),
                        name: "echo".into(),
                        parts: request.message.parts.clone(),
                        ..Artifact::default()
                    },
                };
                e.artifact(artifact, false, true).await?;
                e.complete(Some(request.text())).await
            }
            Behaviour::Slow { chunks, interval } => {
                e.working(None).await?;
                // The first chunk is written with append=false, so a re-run starts the
                // artifact afresh.
                let artifact_id = artifact_id(&request.task_id, "slow");
                for i in 1..=chunks {
                    // Tokio's timer rounds up to the next millisecond, so even a zero sleep
                    // would cap `slow N 0` (the streaming benchmark) at 1,000 chunks a second.
                    if !interval.is_zero() {
                        tokio::time::sleep(interval).await;
                    }
                    let chunk = Artifact {
                        artifact_id: artifact_id.clone(),
                        name: "slow".into(),
                        parts: vec![Part::text(format!("chunk-{i} "))],
                        ..Artifact::default()
                    };
                    e.artifact(chunk, i > 1, i == chunks).await?;
                }
                e.complete(None).await
            }
            Behaviour::Hold => {
                e.input_required("This task is on hold: send any message to complete it.")
                    .await
            }
            Behaviour::Job { steps, step } => {
                for i in 1..=steps {
                    e.working(Some(&format!("step {i}/{steps}"))).await?;
                    tokio::time::sleep(step).await;
                }
                e.artifact(
                    text_artifact(
                        &request.task_id,
                        "report",
                        &format!("job finished: {steps} steps"),
                    ),
                    false,
                    true,
                )
                .await?;
                e.complete(None).await
            }
            Behaviour::Fail => {
                e.fail("The fail skill always fails: this is the failure you asked for.")
                    .await
            }
            Behaviour::Delegate { agent, text } => delegate(&e, &agent, &text).await,
            Behaviour::ParkForTck03 => {
                e.working(Some("Processing your question")).await?;
                e.input_required(&format!("Hello world! You said: {}", request.text()))
                    .await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol::Task;

    fn request(message_id: &str, text: &str, task: Option<Task>) -> AgentRequest {
        AgentRequest {
            message: Message::user_text(message_id, text),
            task,
            task_id: "t".into(),
            context_id: "c".into(),
            streaming: false,
            metadata: None,
        }
    }

    #[test]
    fn skills_are_chosen_by_text_and_scenarios_by_longest_prefix() {
        assert_eq!(choose(&request("m", "hello", None)), Behaviour::Echo);
        assert_eq!(
            choose(&request("m", "slow 3 50", None)),
            Behaviour::Slow {
                chunks: 3,
                interval: Duration::from_millis(50)
            }
        );
        assert_eq!(
            choose(&request("m", "slow", None)),
            Behaviour::Slow {
                chunks: 5,
                interval: Duration::from_millis(200)
            }
        );
        assert_eq!(
            choose(&request("m", "job 2", None)),
            Behaviour::Job {
                steps: 2,
                step: Duration::from_millis(1000)
            }
        );
        assert_eq!(choose(&request("m", "hold", None)), Behaviour::Hold);
        assert_eq!(choose(&request("m", "fail", None)), Behaviour::Fail);
        assert_eq!(
            choose(&request("tck-artifact-file-url-1", "x", None)),
            Behaviour::Scenario("tck-artifact-file-url")
        );
        assert_eq!(
            choose(&request("tck-artifact-file-1", "x", None)),
            Behaviour::Scenario("tck-artifact-file")
        );
    }

    #[test]
    fn delegate_names_the_agent_and_its_follow_ups_go_to_it() {
        let delegate = |agent: &str, text: &str| Behaviour::Delegate {
            agent: agent.into(),
            text: text.into(),
        };
        assert_eq!(
            choose(&request("m", "delegate http://a:1 slow 5 200", None)),
            delegate("http://a:1", "slow 5 200")
        );
        assert_eq!(
            choose(&request("m", "delegate http://a:1", None)),
            delegate("http://a:1", "")
        );
        assert_eq!(choose(&request("m", "delegate", None)), delegate("", ""));
        let mut parked = Task::default();
        parked.status.state = TaskState::InputRequired;
        parked
            .history
            .push(Message::user_text("m0", "delegate http://a:1 hold"));
        assert_eq!(
            choose(&request("m1", "here you are", Some(parked))),
            delegate("http://a:1", "here you are")
        );
    }

    #[test]
    fn a_follow_up_to_a_parked_task_is_an_echo() {
        let mut parked = Task::default();
        parked.status.state = TaskState::InputRequired;
        assert_eq!(
            choose(&request("m", "slow", Some(parked.clone()))),
            Behaviour::Echo
        );
        assert_eq!(
            choose(&request("tck-complete-task-2", "x", Some(parked))),
            Behaviour::Scenario("tck-complete-task")
        );
    }

    #[test]
    fn tck_0_3_messages_park_their_task_every_time() {
        let mut parked = Task::default();
        parked.status.state = TaskState::InputRequired;
        for id in [
            "test-state-message-id-6f1c",
            "cancel-test-message-id-6f1c",
            "continuation-message-id-6f1c",
        ] {
            assert_eq!(
                choose(&request(id, "x", None)),
                Behaviour::ParkForTck03,
                "{id}"
            );
            assert_eq!(
                choose(&request(id, "x", Some(parked.clone()))),
                Behaviour::ParkForTck03,
                "a follow-up parks again: {id}"
            );
        }
        // The TCK 1.0's ids keep their scenarios, and ordinary ids their skills.
        assert_eq!(
            choose(&request("test-resubscribe-message-id-1", "x", None)),
            Behaviour::Scenario("test-resubscribe-message-id")
        );
        assert_eq!(
            choose(&request("tck-send-message-id-1", "hello", None)),
            Behaviour::Echo
        );
        assert_eq!(choose(&request("msg-1", "hello", None)), Behaviour::Echo);
        assert_eq!(choose(&request("6f1c2d", "hold", None)), Behaviour::Hold);
    }

    #[test]
    fn artifact_ids_are_the_same_on_every_run_of_a_task() {
        // A re-run (at-least-once delivery) writes the same ids, so it replaces its output.
        let first = text_artifact("t", "echo", "a");
        let again = text_artifact("t", "echo", "a");
        assert_eq!(first.artifact_id, again.artifact_id);
        assert_eq!(first.artifact_id, "t-echo");
        assert_ne!(
            first.artifact_id,
            text_artifact("u", "echo", "a").artifact_id,
            "tasks do not share artifact ids"
        );
        assert_eq!(
            file_artifact("t").artifact_id,
            file_artifact("t").artifact_id
        );
    }

    #[test]
    fn slow_and_job_are_queued_unless_slow_is_streamed() {
        let agent = ReferenceAgent;
        assert_eq!(
            agent.placement(&request("m", "job", None)),
            Placement::Queued
        );
        assert_eq!(
            agent.placement(&request("m", "slow", None)),
            Placement::Queued
        );
        let mut streamed = request("m", "slow", None);
        streamed.streaming = true;
        assert_eq!(agent.placement(&streamed), Placement::Inline);
        assert_eq!(
            agent.placement(&request("m", "hi", None)),
            Placement::Inline
        );
    }
}
