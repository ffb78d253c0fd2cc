//! The LLM adapter on Amazon Bedrock: the AWS SDK (through rig's Bedrock provider) pointed at a
//! scripted ConverseStream endpoint of the tests' own on 127.0.0.1, the agent served by
//! a2a-local's server (the embedded store, real sockets).
#![cfg(feature = "aws")]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use a2a_client::text_of;
use a2a_llm::{LlmAgent, Tool};
use a2a_protocol::TaskState;
use serde_json::json;
use support::bedrock::{BedrockServer, Reply, MODEL};
use support::{answer, send, stream_through_gate, A2aServer};
use tokio::sync::Notify;

fn agent(bedrock: &BedrockServer) -> LlmAgent {
    LlmAgent::new("helper")
        .model(bedrock.model())
        .system_prompt("You are terse.")
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_reach_a_streaming_client_before_bedrock_finishes() {
    let gate = Arc::new(Notify::new());
    let bedrock = BedrockServer::start(vec![Reply::Gated {
        before: vec!["Hel", "lo"],
        gate: gate.clone(),
        after: vec![" world"],
    }])
    .await;
    // The endpoint holds the rest of the message (and its last event, the usage) until the
    // first chunk reached the client.
    let (first, last, _) = stream_through_gate(agent(&bedrock).build(), &gate).await;
    let text = text_of(&first.artifact.parts);
    assert!(!text.is_empty() && "Hello".starts_with(&text), "{text}");
    assert!(!first.last_chunk);
    assert!(last.last_chunk && !last.append);
    assert_eq!(text_of(&last.artifact.parts), "Hello world");
    // Bedrock's usage, from its metadata event.
    let usage = &last.artifact.metadata.as_ref().expect("metadata")["usage"];
    assert_eq!(usage["inputTokens"], 7);
    assert_eq!(usage["outputTokens"], 3);
    // One ConverseStream call, to the model, with the system prompt and the user's message.
    let requests = bedrock.requests();
    assert_eq!(requests.len(), 1);
    let (model, body) = &requests[0];
    assert_eq!(model, MODEL);
    assert_eq!(body["system"][0]["text"], "You are terse.", "{body}");
    assert_eq!(body["messages"][0]["role"], "user", "{body}");
    assert!(body["messages"].to_string().contains("greet me"), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_use_turn_runs_the_tool_once_and_gives_bedrock_its_result() {
    let bedrock = BedrockServer::start(vec![
        Reply::ToolUse {
            name: "count",
            input: r#"{"word":"apples"}"#,
        },
        Reply::Text(vec!["Three ", "apples."]),
    ])
    .await;
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let llm = agent(&bedrock).tool(Tool::local(
        "count",
        "Counts a word.",
        json!({"type": "object", "properties": {"word": {"type": "string"}}}),
        move |args| {
            let runs = counted.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(format!("{} counted", args["word"].as_str().unwrap_or("?")))
            }
        },
    ));
    let server = A2aServer::start(llm.build()).await;
    let client = server.client().await;
    let task = send(&client, client.text("count the apples")).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(answer(&task), "Three apples.");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the tool ran once");
    let requests = bedrock.requests();
    assert_eq!(requests.len(), 2, "one call per turn");
    // The tools were declared, and the second call carries the model's tool use and its result.
    let first = &requests[0].1;
    let declared = first["toolConfig"]["tools"].to_string();
    assert!(declared.contains("\"count\""), "{first}");
    let second = requests[1].1["messages"].to_string();
    assert!(second.contains("\"toolUse\""), "{second}");
    assert!(second.contains("tooluse_1"), "{second}");
    assert!(second.contains("\"toolResult\""), "{second}");
    assert!(second.contains("apples counted"), "{second}");
    // Usage of both calls.
    let usage = &task.artifacts[0].metadata.as_ref().expect("metadata")["usage"];
    assert_eq!(usage["inputTokens"], 14);
}

#[tokio::test(flavor = "multi_thread")]
async fn throttling_is_retried_inside_the_step_before_and_in_the_stream() {
    let bedrock = BedrockServer::start(vec![
        Reply::Refused {
            status: 429,
            kind: "ThrottlingException",
            message: "Too many requests, please wait before trying again.",
        },
        Reply::ExceptionEvent {
            kind: "throttlingException",
            message: "Too many tokens, please wait before trying again.",
        },
        Reply::Text(vec!["fine"]),
    ])
    .await;
    let server = A2aServer::start(agent(&bedrock).build()).await;
    let client = server.client().await;
    let task = send(&client, client.text("hello")).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(answer(&task), "fine");
    // The adapter's attempts, not the SDK's (its own retries are off): three calls in all.
    assert_eq!(bedrock.requests().len(), 3);
}

/// The reason of the task a refusal of Bedrock's ends, and how many calls it took.
async fn failed_by(status: u16, kind: &'static str, message: &'static str) -> (String, usize) {
    let bedrock = BedrockServer::start(vec![Reply::Refused {
        status,
        kind,
        message,
    }])
    .await;
    let server = A2aServer::start(agent(&bedrock).build()).await;
    let client = server.client().await;
    let task = send(&client, client.text("hello")).await;
    assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
    let reason = text_of(&task.status.message.as_ref().expect("a reason").parts);
    (reason, bedrock.requests().len())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hard_error_fails_the_task_with_bedrock_s_reason() {
    let (reason, calls) = failed_by(
        403,
        "AccessDeniedException",
        "You don't have access to the model with the specified model ID.",
    )
    .await;
    assert_eq!(
        reason,
        "The model call failed: the provider answered HTTP 403 (AccessDeniedException): You \
         don't have access to the model with the specified model ID."
    );
    assert_eq!(calls, 1, "a refusal is not retried");
    // A server error is not retried either: by the adapter (only throttling is) or by the SDK
    // (its own retries are off, or a 500 would be called three times).
    let (reason, calls) = failed_by(
        500,
        "InternalServerException",
        "An internal server error occurred.",
    )
    .await;
    assert!(
        reason.contains("HTTP 500 (InternalServerException)"),
        "{reason}"
    );
    assert_eq!(calls, 1, "a server error is not retried");
}
