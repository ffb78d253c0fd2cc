//! {{name}}: an LLM agent. Its model (`A2A_LLM_MODEL`) is on an OpenAI-compatible endpoint
//! (`OPENAI_BASE_URL`, `OPENAI_API_KEY`) or, with `A2A_LLM_PROVIDER=bedrock`, Amazon Bedrock.

use std::sync::Arc;

use a2a_core::Agent;
use a2a_llm::{LlmAgent, Tool};
use serde_json::{json, Value};

/// The agent the local server (`src/main.rs`) and every Lambda function (`src/bin/lambda.rs`)
/// serve: a system prompt, one local tool, and another A2A agent as a tool.
pub fn agent() -> Arc<dyn Agent> {
    let url = std::env::var("HELPER_AGENT_URL").unwrap_or("http://127.0.0.1:9001".into());
    let text = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let words = Tool::local("word_count", "Counts words.", text, word_count);
    let helper = Tool::agent("helper", "Asks another A2A agent.", &url);
    LlmAgent::new("{{name}}")
        .system_prompt("You are a helpful assistant. Answer briefly.")
        .tool(words)
        .tool(helper)
        .build()
}

/// The local tool: how many words `text` has.
async fn word_count(args: Value) -> Result<String, String> {
    let text = args["text"].as_str().unwrap_or_default();
    Ok(text.split_whitespace().count().to_string())
}
