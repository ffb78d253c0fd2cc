//! The reference agent: the demo that shows how to write an agent, and the agent that
//! conformance (A2A TCK) and interoperability tests talk to. Its behaviour is fixed by
//! `shared/reference-agent.md`: the message's `messageId` prefix picks a conformance scenario,
//! otherwise the first text part picks a skill; anything else is `echo`.

use std::time::Duration;

use a2a_core::{Agent, AgentDescription, AgentError, AgentRequest, Emitter, Placement};
use a2a_protocol::{AgentSkill, Artifact, Message, Part, TaskState};
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
        _ => Behaviour::Echo,
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
                          queued jobs and failure, plus the A2A TCK scenarios."
                .into(),
            version: env!("CARGO_PKG_VERSION").into(),
            skills: vec![
                skill("echo", "Echo", "Completes with an artifact holding the text it received.", &["hello"]),
                skill("slow", "Slow stream", "Streams CHUNKS artifact chunks, INTERVAL_MS apart: `slow [CHUNKS=5] [INTERVAL_MS=200]`.", &["slow 5 200"]),
                skill("hold", "Hold", "Parks the task in INPUT_REQUIRED; any follow-up completes it.", &["hold"]),
                skill("job", "Queued job", "Runs on the worker: a progress update per step, then a report: `job [STEPS=3] [STEP_MS=1000]`.", &["job 3 1000"]),
                skill("fail", "Fail", "Ends the task FAILED with an explanation.", &["fail"]),
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
