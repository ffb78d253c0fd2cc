//! The LLM adapter through a2a-local's server (the embedded store, real sockets), its model a
//! scripted OpenAI-compatible server of the tests' own on 127.0.0.1.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use a2a_client::{text_of, StreamResponse};
use a2a_core::{Agent, AgentDescription, AgentError, AgentRequest, Emitter};
use a2a_llm::{LlmAgent, Tool};
use a2a_protocol::TaskState;
use async_trait::async_trait;
use futures::StreamExt as _;
use serde_json::json;
use support::{
    answer, first_chunk, send, stream_through_gate, token_usage, within, A2aServer, ModelServer,
    Script, API_KEY,
};
use tokio::sync::Notify;

fn agent(model: &ModelServer) -> LlmAgent {
    LlmAgent::new("helper")
        .model(model.model())
        .system_prompt("You are terse.")
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_reach_a_streaming_client_before_the_model_finishes() {
    let gate = Arc::new(Notify::new());
    let model = ModelServer::start(vec![Script::Gated {
        before: vec!["Hel", "lo"],
        gate: gate.clone(),
        after: vec![" world"],
    }])
    .await;
    // The model holds the rest of its answer until the first chunk reached the client.
    let (first, last, end) = stream_through_gate(agent(&model).build(), &gate).await;
    // The tokens so far, in one chunk or the first of them (how they split is timing).
    let text = text_of(&first.artifact.parts);
    assert!(!text.is_empty() && "Hello".starts_with(&text), "{text}");
    assert!(!first.last_chunk);
    // The stream's client sees the task's usage with its end.
    let metadata = end.expect("the final status's metadata");
    assert_eq!(metadata["tokenUsage"]["totalTokens"], 10);
    // The final artifact is whole, with the model's token usage.
    assert!(last.last_chunk && !last.append);
    assert_eq!(text_of(&last.artifact.parts), "Hello world");
    let usage = &last.artifact.metadata.as_ref().expect("metadata")["usage"];
    assert_eq!(usage["inputTokens"], 7);
    assert_eq!(usage["outputTokens"], 3);
}

/// The LLM agent, counting its executions: a second one is a replay of the first.
struct Counted {
    inner: Arc<dyn Agent>,
    runs: AtomicUsize,
}

#[async_trait]
impl Agent for Counted {
    fn describe(&self) -> AgentDescription {
        self.inner.describe()
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.inner.execute(request, emitter).await
    }
}

/// Another agent: it says it is at work, then answers once the test lets it (when its WORKING
/// has been relayed into the caller's task: the caller's send returned a task still working, so
/// the caller parks and is resumed by the answer, replaying its run from the top).
struct Remote {
    gate: Arc<Notify>,
}

/// What the remote says while it works.
const AT_WORK: &str = "remote at work";

#[async_trait]
impl Agent for Remote {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "remote".into(),
            ..AgentDescription::default()
        }
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        emitter.working(Some(AT_WORK)).await?;
        self.gate.notified().await;
        let artifact = a2a_protocol::Artifact {
            artifact_id: format!("{}-echo", request.task_id),
            name: "echo".into(),
            parts: vec![a2a_protocol::Part::text(format!(
                "echo: {}",
                request.text()
            ))],
            ..a2a_protocol::Artifact::default()
        };
        emitter.artifact(artifact, false, true).await?;
        emitter.complete(None).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_runs_once_and_the_model_is_not_called_again_across_a_replay() {
    let gate = Arc::new(Notify::new());
    let remote = A2aServer::start(Arc::new(Remote { gate: gate.clone() })).await;
    let model = ModelServer::start(vec![
        Script::ToolCall {
            name: "count",
            arguments: r#"{"word":"apples"}"#,
        },
        Script::ToolCall {
            name: "ask_remote",
            arguments: r#"{"message":"how many apples?"}"#,
        },
        Script::Text(vec!["Three ", "apples."]),
    ])
    .await;
    let counted = Arc::new(AtomicUsize::new(0));
    let tool_runs = counted.clone();
    let llm = agent(&model)
        .tool(Tool::local(
            "count",
            "Counts a word.",
            json!({"type": "object", "properties": {"word": {"type": "string"}}}),
            move |args| {
                let runs = tool_runs.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(format!("{} counted", args["word"].as_str().unwrap_or("?")))
                }
            },
        ))
        .tool(Tool::agent(
            "ask_remote",
            "Asks the remote agent.",
            &remote.base,
        ))
        .build();
    let agent = Arc::new(Counted {
        inner: llm,
        runs: AtomicUsize::new(0),
    });
    let server = A2aServer::start(agent.clone()).await;
    let client = server.client().await;
    let mut events = client
        .send_streaming_message(client.text("count the apples"))
        .await
        .unwrap();
    let (state, task_id) = within(async {
        while let Some(event) = events.next().await {
            let StreamResponse::StatusUpdate(update) = event.unwrap() else {
                continue;
            };
            let said = update.status.message.as_ref().map(|m| text_of(&m.parts));
            if said.as_deref() == Some(AT_WORK) {
                gate.notify_one();
            }
            if update.status.state.is_terminal() {
                return (update.status.state, update.task_id);
            }
        }
        (TaskState::Unspecified, String::new())
    })
    .await;
    assert_eq!(state, TaskState::Completed);
    // The answer streamed after the resume is whole, once.
    let task = client
        .get_task(a2a_protocol::GetTaskRequest {
            id: task_id,
            ..a2a_protocol::GetTaskRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(answer(&task), "Three apples.");
    // The usage of the three model calls (7 in, 3 out each), from their steps' records: the
    // replays of the first two add nothing.
    assert_eq!(token_usage(&task), [21, 9, 30, 3]);
    // The run parked on the remote and was replayed: the model's first two answers and the
    // local tool's came from the record, not from calling them again.
    assert!(
        agent.runs.load(Ordering::SeqCst) >= 2,
        "the execution was resumed"
    );
    assert_eq!(counted.load(Ordering::SeqCst), 1, "the tool ran once");
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "the model was called once per turn");
    let last = requests[2]["messages"].to_string();
    assert!(last.contains("apples counted"), "{last}");
    assert!(last.contains("echo: how many apples?"), "{last}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follow_up_in_the_same_context_continues_the_conversation() {
    let model = ModelServer::start(vec![
        Script::Text(vec!["Par", "is."]),
        Script::Text(vec!["About 2 million."]),
    ])
    .await;
    let server = A2aServer::start(agent(&model).build()).await;
    let client = server.client().await;
    let first = send(&client, client.text("What is the capital of France?")).await;
    assert_eq!(first.status.state, TaskState::Completed, "{first:?}");
    assert_eq!(answer(&first), "Paris.");
    let mut follow_up = client.text("How many people live there?");
    follow_up.message.as_mut().unwrap().context_id = first.context_id.clone();
    let second = send(&client, follow_up).await;
    assert_eq!(second.status.state, TaskState::Completed, "{second:?}");
    let messages = &model.requests()[1]["messages"];
    let said: Vec<(String, String)> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].to_string(),
            )
        })
        .collect();
    assert_eq!(said.len(), 4, "{said:?}");
    assert_eq!(said[0].0, "system");
    assert_eq!(said[1].0, "user");
    assert!(said[1].1.contains("capital of France"));
    assert_eq!(said[2].0, "assistant");
    assert!(said[2].1.contains("Paris."));
    assert_eq!(said[3].0, "user");
    assert!(said[3].1.contains("How many people"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_error_fails_the_task_with_its_reason_and_no_key() {
    let model = ModelServer::start(vec![Script::Error {
        status: 500,
        retry_after: None,
        body: json!({"error": {"message": format!("model overloaded (key {API_KEY})")}}),
    }])
    .await;
    let server = A2aServer::start(agent(&model).build()).await;
    let client = server.client().await;
    let task = send(&client, client.text("hello")).await;
    assert_eq!(task.status.state, TaskState::Failed);
    let reason = text_of(&task.status.message.as_ref().expect("a reason").parts);
    assert!(reason.contains("HTTP 500"), "{reason}");
    assert!(reason.contains("model overloaded"), "{reason}");
    assert!(!reason.contains(API_KEY), "{reason}");
    assert_eq!(model.requests().len(), 1, "a server error is not retried");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failure_after_a_model_call_keeps_the_calls_usage() {
    let model = ModelServer::start(vec![
        Script::ToolCall {
            name: "nowhere",
            arguments: "{}",
        },
        Script::Error {
            status: 500,
            retry_after: None,
            body: json!({"error": {"message": "model overloaded"}}),
        },
    ])
    .await;
    let server = A2aServer::start(agent(&model).build()).await;
    let client = server.client().await;
    let task = send(&client, client.text("hello")).await;
    assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
    let reason = text_of(&task.status.message.as_ref().expect("a reason").parts);
    assert!(reason.contains("model overloaded"), "{reason}");
    assert_eq!(token_usage(&task), [7, 3, 10, 1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_is_retried_inside_the_step() {
    let model = ModelServer::start(vec![
        Script::Error {
            status: 429,
            retry_after: Some("0"),
            body: json!({"error": {"message": "slow down"}}),
        },
        Script::Text(vec!["fine"]),
    ])
    .await;
    let server = A2aServer::start(agent(&model).build()).await;
    let client = server.client().await;
    let task = send(&client, client.text("hello")).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(answer(&task), "fine");
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn asking_the_user_waits_for_input_and_the_answer_continues() {
    let model = ModelServer::start(vec![
        Script::ToolCall {
            name: "ask_user",
            arguments: r#"{"question":"Which city?"}"#,
        },
        Script::Text(vec!["Lyon is nice."]),
    ])
    .await;
    let server = A2aServer::start(agent(&model).build()).await;
    let client = server.client().await;
    let task = send(&client, client.text("Recommend a city")).await;
    assert_eq!(task.status.state, TaskState::InputRequired, "{task:?}");
    let question = text_of(&task.status.message.as_ref().unwrap().parts);
    assert_eq!(question, "Which city?");
    assert_eq!(token_usage(&task), [7, 3, 10, 1]);
    let mut reply = client.text("Somewhere in France");
    let message = reply.message.as_mut().unwrap();
    message.task_id = task.id.clone();
    message.context_id = task.context_id.clone();
    let done = send(&client, reply).await;
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert_eq!(answer(&done), "Lyon is nice.");
    // The task's usage: both messages' model calls.
    assert_eq!(token_usage(&done), [14, 6, 20, 2]);
    let second = model.requests()[1]["messages"].to_string();
    assert!(second.contains("Recommend a city"), "{second}");
    assert!(second.contains("Which city?"), "{second}");
    assert!(second.contains("Somewhere in France"), "{second}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_closes_the_provider_stream() {
    let closed = Arc::new(Notify::new());
    let model = ModelServer::start(vec![Script::Endless {
        closed: closed.clone(),
    }])
    .await;
    let server = A2aServer::start(agent(&model).build()).await;
    let client = server.client().await;
    let mut events = client
        .send_streaming_message(client.text("sing forever"))
        .await
        .unwrap();
    let task_id = first_chunk(&mut events).await.task_id;
    let canceled = client
        .cancel_task(a2a_protocol::CancelTaskRequest {
            id: task_id,
            ..a2a_protocol::CancelTaskRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    // The adapter's next chunk write finds the task ended and drops the model's stream: the
    // model's server sees its client go (else it streams for minutes, past the safety net).
    within(closed.notified()).await;
}
