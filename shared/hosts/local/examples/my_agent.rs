//! The smallest useful agent: it answers every message with the message's text, upper-cased.
//! Run it with `cargo run -p a2a-local --example my_agent`, then talk to it on 127.0.0.1:9000.
//! Its tasks live in `./.a2a-my-agent`, apart from the reference agent's (`./.a2a`).

use std::sync::Arc;

use a2a_core::{Agent, AgentDescription, AgentError, AgentRequest, Emitter};
use a2a_protocol::{AgentSkill, Artifact, Part};
use async_trait::async_trait;

struct Shouter;

#[async_trait]
impl Agent for Shouter {
    fn describe(&self) -> AgentDescription {
        AgentDescription {
            name: "Shouter".into(),
            description: "Repeats what you say, louder.".into(),
            version: "1.0.0".into(),
            skills: vec![AgentSkill {
                id: "shout".into(),
                name: "Shout".into(),
                description: "Upper-cases the text it receives.".into(),
                tags: vec!["text".into()],
                ..AgentSkill::default()
            }],
            default_input_modes: vec!["text/plain".into()],
            default_output_modes: vec!["text/plain".into()],
            ..AgentDescription::default()
        }
    }

    async fn execute(&self, request: AgentRequest, emitter: Emitter) -> Result<(), AgentError> {
        let loud = request.text().to_uppercase();
        emitter.working(None).await?;
        let artifact = Artifact {
            // Derived from the task: a re-run after a crash replaces this artifact.
            artifact_id: format!("{}-shout", request.task_id),
            name: "shout".into(),
            parts: vec![Part::text(&loud)],
            ..Artifact::default()
        };
        emitter.artifact(artifact, false, true).await?;
        emitter.complete(Some(&loud)).await
    }
}

#[tokio::main]
async fn main() -> Result<(), String> {
    a2a_local::init_logging();
    let options = a2a_local::Options::parse_with_data_dir("./.a2a-my-agent");
    a2a_local::serve(options, Arc::new(Shouter), a2a_local::shutdown_signal()).await
}
